#!/usr/bin/env python3
"""The JSON side of scripts/readme-figures.sh.

  workloads                 stdin: `berth bench --help`; prints the workload names, one a line
  tag RESULTS LABEL CLASSES ROUND COMMAND SECONDS
                            stdin: one run's JSON lines; appends them to RESULTS with those
                            fields added and prints a one-line summary of them
  table RESULTS             prints the markdown tables of a results file (JSON lines);
                            exits 1 if any workload's placements differ between runs
"""

import json
import re
import statistics
import sys

# Fields every result carries or that the tables show in their own columns; anything else
# numeric is shown as a workload-specific extra.
COMMON = {
    "workload", "nodes", "running", "pods", "scheduled", "placement_digest", "pods_per_sec",
    "preemptions_per_sec", "mean_us", "p50_us", "p99_us", "peak_rss_mib", "cpu_model",
    "cpus_listed", "available_parallelism", "node_cache_capable", "filter_calls",
    "prioritize_calls", "label", "classes", "round", "command", "seconds", "preempted",
}


def fail(message):
    print(f"readme-figures.py: {message}", file=sys.stderr)
    sys.exit(2)


def results(text):
    """The JSON objects of a run's output, one a line."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"line {n} is not JSON ({e}): {line[:200]}")
        if not isinstance(value, dict):
            fail(f"line {n} is not a JSON object: {line[:200]}")
        out.append(value)
    return out


def rate(r):
    """Pods/s, or preemptions/s for the preemption workload."""
    return r.get("pods_per_sec", r.get("preemptions_per_sec"))


def variant(r):
    """The extender workload prints one result per nodeCacheCapable setting."""
    if "node_cache_capable" in r:
        return "nodeCacheCapable " + ("on" if r["node_cache_capable"] else "off")
    return ""


def workloads(help_text):
    lines = help_text.splitlines()
    names, inside = [], False
    for line in lines:
        if "--workload <WORKLOAD>" in line:
            inside = True
            continue
        if inside:
            if line.strip().startswith("[default") or line.strip().startswith("--"):
                break
            m = re.match(r"^\s*- ([a-z0-9-]+):", line)
            if m:
                names.append(m.group(1))
            m = re.search(r"\[possible values: ([^\]]+)\]", line)
            if m:
                names.extend(v.strip() for v in m.group(1).split(","))
    for name in names:
        print(name)


def tag(path, label, classes, round_, command, seconds, text):
    parts = []
    rs = results(text)
    if not rs:
        fail(f"{command} printed no result")
    with open(path, "a", encoding="utf-8") as f:
        for r in rs:
            r.update(label=label, classes=classes, round=int(round_), command=command,
                     seconds=float(seconds))
            f.write(json.dumps(r, sort_keys=True) + "\n")
    for r in rs:
        what = variant(r)
        unit = "preemptions/s" if "preemptions_per_sec" in r else "pods/s"
        digest = r.get("placement_digest", "-")
        parts.append(
            f"{(what + ': ') if what else ''}{rate(r):,.0f} {unit}, p50 {r.get('p50_us')} µs, "
            f"p99 {r.get('p99_us')} µs, peak {r.get('peak_rss_mib')} MiB, digest {digest}"
        )
    print(" | ".join(parts))


def num(x, unit=""):
    if x is None:
        return "—"
    if abs(x) >= 100 or x == int(x):
        s = f"{x:,.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}".rstrip("0").rstrip(".")
    return s + unit


def us(x):
    """A latency in µs, in ms from 1 ms up, as docs/performance.md writes them."""
    if x is None:
        return "—"
    return f"{x / 1000:.1f} ms" if x >= 1000 else f"{x:.0f} µs"


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    m = med(values)
    if len(values) == 1:
        return num(m)
    return f"{num(m)} ({num(min(values))}-{num(max(values))})"


def latencies(rs):
    """Median p50 / p99 of a set of runs."""
    return f"{us(med(r.get('p50_us') for r in rs))} / {us(med(r.get('p99_us') for r in rs))}"


def peak(rs):
    """The highest peak RSS of a set of runs."""
    return num(max((r.get("peak_rss_mib") or 0) for r in rs)) if rs else "—"


def table(path):
    with open(path, encoding="utf-8") as f:
        rows = results(f.read())
    if not rows:
        print("no results (every run failed, or ONLY matched none)")
        return 1
    # Group by run label and variant, keeping the scripts' order.
    groups = {}
    for r in rows:
        groups.setdefault((r["label"], variant(r)), []).append(r)

    models = sorted({r.get("cpu_model", "?") for r in rows})
    cpus = sorted({str(r.get("cpus_listed", "?")) for r in rows})
    par = sorted({str(r.get("available_parallelism", "?")) for r in rows})
    rounds = max(r["round"] for r in rows)
    print(f"Machine (as `berth bench` reports it): {', '.join(models)}; {', '.join(cpus)} "
          f"logical CPUs listed, available parallelism {', '.join(par)}. {rounds} interleaved "
          "round(s), equivalence classes on and off in alternating order; medians (range).")
    print()
    print("| run | command | classes on: pods/s | off: pods/s | on / off | "
          "p50 / p99 on | p50 / p99 off | peak RSS on / off (max) | placements |")
    print("|---|---|---|---|---|---|---|---|---|")
    problems = []
    extras_lines = []
    for (label, what), group in groups.items():
        on = [r for r in group if r["classes"] == "on"]
        off = [r for r in group if r["classes"] == "off"]
        name = f"{label} ({what})" if what else label
        command = group[0]["command"].replace(" --no-equivalence-classes", "")
        unit = " (preemptions/s)" if "preemptions_per_sec" in group[0] else ""
        r_on, r_off = med(rate(r) for r in on), med(rate(r) for r in off)
        ratio = f"{r_on / r_off:.2f}x" if r_on and r_off else "—"
        digests = {r.get("placement_digest") for r in group}
        if None in digests:
            # The preemption workload has no digest: compare what it can, the counts.
            counts = {(r.get("preempted"), r.get("victims")) for r in group}
            placements = "no digest; counts equal" if len(counts) == 1 else "COUNTS DIFFER"
            if len(counts) != 1:
                problems.append(f"{name}: preempted/victims differ between runs: {sorted(counts)}")
        elif len(digests) == 1:
            placements = f"identical ({len(group)} runs)"
        else:
            placements = f"**MISMATCH: {len(digests)} digests**"
            problems.append(f"{name}: placement digests differ: " + ", ".join(
                f"round {r['round']} classes {r['classes']}: {r.get('placement_digest')}"
                for r in group))
        short = [r for r in group if "scheduled" in r and r["scheduled"] != r["pods"]]
        if short:
            placements += f"; {len(short)} run(s) placed fewer than all pods"
        print(f"| {name}{unit} | `{command}` | {spread([rate(r) for r in on])} | "
              f"{spread([rate(r) for r in off])} | {ratio} | {latencies(on)} | {latencies(off)} | "
              f"{peak(on)} / {peak(off)} MiB | {placements} |")
        keys = sorted({k for r in group for k, v in r.items()
                       if k not in COMMON and isinstance(v, (int, float))
                       and not isinstance(v, bool)})
        if keys:
            parts = [f"{k} {num(med(r.get(k) for r in on))} / {num(med(r.get(k) for r in off))}"
                     for k in keys]
            extras_lines.append(f"- {name}, medians on / off: " + "; ".join(parts))
    if extras_lines:
        print()
        print("Workload-specific fields:")
        print()
        print("\n".join(extras_lines))
    print()
    print("Wall time per run (s, median of on and off together): " + "; ".join(
        f"{label}{(' ' + what) if what else ''} {med(r['seconds'] for r in g):.1f}"
        for (label, what), g in groups.items()))
    if problems:
        print()
        print("!!! CORRECTNESS: the same run gave different decisions (a bug: equivalence "
              "classes must not change any placement, and the runs are seeded):")
        for p in problems:
            print(f"!!!   {p}")
        return 1
    return 0


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    mode = argv[1]
    if mode == "workloads" and len(argv) == 2:
        workloads(sys.stdin.read())
    elif mode == "tag" and len(argv) == 8:
        tag(*argv[2:], sys.stdin.read())
    elif mode == "table" and len(argv) == 3:
        sys.exit(table(argv[2]))
    else:
        fail(f"unknown arguments {argv[1:]}; usage:\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv)
