#!/usr/bin/env bash
# Re-measures docs/performance.md's figures in one sitting, on one machine: builds
# `berth` in release once, prints the machine and the commit, runs every `berth bench`
# figure of docs/performance.md in interleaved rounds (equivalence classes on
# and off, alternating which goes first), and prints markdown tables of medians and ranges.
# With WITH_TESTS=1 it also runs the ignored measurement tests whose figures docs/performance.md
# gives (idle cost, end-to-end throughput, the binding ceiling, the report's render time).
#
# Environment:
#   ROUNDS=3          interleaved rounds of every bench run
#   QUICK=1           tiny clusters (200 nodes, a few hundred pods) and one short round of
#                     each test: checks the script, measures nothing worth quoting
#   WITH_TESTS=1      also run the measurement tests (control plane, plugins, Chromium)
#   TESTS="idle throughput throughput-qps50 ceiling render"   which of them (default all;
#                     TESTS="" runs none: only the WASM comparisons)
#   ONLY="basic mixed ..."   run only these bench labels (default all; see RUNS below)
#   LOG=path          the log (default $CARGO_TARGET_DIR/readme-figures/<UTC time>.log);
#                     the raw JSON results go beside it (<log>.jsonl)
#   BERTH_BIN=path    a berth binary to bench instead of building one (must be a release
#                     build for figures worth quoting; the e2e and idle tests run it too)
# Not run: the 10-minute RSS soak; its command is
#   cargo test -p berth --test e2e -- --ignored --nocapture soak   # BERTH_SOAK_MINUTES=10
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth/target}"
export GOTOOLCHAIN=local

for tool in python3 awk git; do
  if ! command -v "$tool" >/dev/null; then
    echo "error: $tool is needed (python3 aggregates the JSON results)" >&2
    exit 2
  fi
done
ROUNDS="${ROUNDS:-3}"
QUICK="${QUICK:-0}"
WITH_TESTS="${WITH_TESTS:-0}"
TESTS="${TESTS-idle throughput throughput-qps50 ceiling render}"
ONLY="${ONLY:-}"
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: ROUNDS must be a positive integer, got '$ROUNDS'" >&2
  exit 2
fi
for flag in QUICK WITH_TESTS; do
  if [[ "${!flag}" != 0 && "${!flag}" != 1 ]]; then
    echo "error: $flag must be 0 or 1, got '${!flag}'" >&2
    exit 2
  fi
done
for t in $TESTS; do
  case "$t" in
    idle | throughput | throughput-qps50 | ceiling | render) ;;
    *)
      echo "error: TESTS names '$t'; known: idle throughput throughput-qps50 ceiling render" >&2
      exit 2
      ;;
  esac
done

LOG="${LOG:-$CARGO_TARGET_DIR/readme-figures/$(date -u +%Y%m%dT%H%M%SZ).log}"
mkdir -p "$(dirname "$LOG")"
RESULTS="$LOG.jsonl"
: >"$RESULTS"
# Everything from here on goes to the terminal and to the log.
exec > >(tee -a "$LOG") 2>&1

# The bench runs: label | arguments (full size, docs/performance.md's commands) | arguments (QUICK).
# Every workload `berth bench --help` lists must appear here or in NOT_BENCHED.
RUNS=(
  "basic|--workload basic|--workload basic --nodes 200 --running 200 --pods 500"
  "anti-affinity|--workload anti-affinity|--workload anti-affinity --nodes 200 --running 200 --pods 500"
  "basic-5000n-50000p|--nodes 5000 --running 0 --pods 50000|--nodes 200 --running 0 --pods 2000"
  "basic-5000n-50000running|--nodes 5000 --running 50000 --pods 1000|--nodes 200 --running 2000 --pods 100"
  "basic-20000n|--nodes 20000 --pods 3000|--nodes 400 --pods 300"
  "basic-selector-spread|--workload basic --feature-gates DefaultPodTopologySpread=false|--workload basic --feature-gates DefaultPodTopologySpread=false --nodes 200 --running 200 --pods 500"
  "scheduling-basic|--workload scheduling-basic|--workload scheduling-basic --nodes 200 --running 200 --pods 500"
  "node-affinity|--workload node-affinity|--workload node-affinity --nodes 200 --running 200 --pods 500"
  "pod-affinity|--workload pod-affinity|--workload pod-affinity --nodes 200 --running 200 --pods 300"
  "pod-anti-affinity|--workload pod-anti-affinity|--workload pod-anti-affinity --nodes 200 --running 50 --pods 100"
  "preferred-pod-affinity|--workload preferred-pod-affinity|--workload preferred-pod-affinity --nodes 200 --running 200 --pods 300"
  "topology-spreading|--workload topology-spreading|--workload topology-spreading --nodes 200 --running 200 --pods 300"
  "preferred-topology-spreading|--workload preferred-topology-spreading|--workload preferred-topology-spreading --nodes 200 --running 200 --pods 300"
  "mixed|--workload mixed|--workload mixed --nodes 200 --running 40 --pods 300"
  "volumes|--workload volumes|--workload volumes --nodes 200 --running 100 --pods 200"
  "scheduling-basic-20000n|--workload scheduling-basic --nodes 20000|--workload scheduling-basic --nodes 400 --pods 500"
  "scheduling-basic-50000p|--workload scheduling-basic --pods 50000|--workload scheduling-basic --nodes 200 --pods 2000"
  "preemption|--workload preemption|--workload preemption --nodes 200 --pods 50"
  "extender-1000n|--workload extender --nodes 1000|--workload extender --nodes 100 --running 100 --pods 200"
  "deployments-grouped|--workload deployments --arrival grouped|--workload deployments --arrival grouped --nodes 200 --running 100 --pods 500"
  "deployments-interleaved|--workload deployments --arrival interleaved|--workload deployments --arrival interleaved --nodes 200 --running 100 --pods 500"
)
# Workloads the Performance section does not measure with a plain run: node-label is the
# WASM section's (`--compare-wasm`, run below with WITH_TESTS=1, which builds the plugins).
NOT_BENCHED=(node-label)

if [[ -n "$ONLY" ]]; then
  for o in $ONLY; do
    found=0
    for run in "${RUNS[@]}"; do [[ "${run%%|*}" == "$o" ]] && found=1; done
    if [[ $found == 0 ]]; then
      echo "error: ONLY names '$o', not a run label; labels: ${RUNS[*]%%|*}" >&2
      exit 2
    fi
  done
fi

run_step() {
  echo
  echo "== $*"
}

machine() {
  echo "cpu model:  $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
  echo "nproc:      $(nproc) (logical CPUs listed in /proc/cpuinfo: $(grep -c '^processor' /proc/cpuinfo))"
  echo "memory:     $(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "kernel:     $(uname -sr)"
  echo "rustc:      $(rustc --version 2>/dev/null || echo unknown)"
}

load() {
  echo "load average ($1): $(cut -d' ' -f1-3 /proc/loadavg)   [$(uptime)]"
}

started=$(date -u +%s)
run_step "machine and code ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
machine
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  echo "commit:     $commit, DIRTY tree (uncommitted changes to tracked files):"
  git status --short --untracked-files=no | sed 's/^/              /'
else
  echo "commit:     $commit, clean tree"
fi
echo "rounds:     $ROUNDS$([[ $QUICK == 1 ]] && echo ', QUICK mode (tiny sizes: not figures to quote)')"
echo "log:        $LOG (raw results: $RESULTS)"
load before

if [[ -n "${BERTH_BIN:-}" ]]; then
  run_step "using BERTH_BIN=$BERTH_BIN (not built here)"
  berth="$BERTH_BIN"
else
  run_step "cargo build --release -p berth --locked"
  cargo build --release -p berth --locked
  berth="$CARGO_TARGET_DIR/release/berth"
fi
if [[ ! -x "$berth" ]]; then
  echo "error: $berth is not an executable berth binary" >&2
  exit 1
fi

# Every workload the binary knows must be measured or deliberately left out.
mapfile -t known < <("$berth" bench --help | python3 scripts/readme-figures.py workloads)
if [[ ${#known[@]} == 0 ]]; then
  echo "error: found no workloads in 'berth bench --help'" >&2
  exit 1
fi
for w in "${known[@]}"; do
  covered=0
  for n in "${NOT_BENCHED[@]}"; do [[ "$w" == "$n" ]] && covered=1; done
  for run in "${RUNS[@]}"; do
    IFS='|' read -r _ full _ <<<"$run"
    [[ " $full " == *" --workload $w "* ]] && covered=1
    [[ "$w" == basic && " $full " != *" --workload "* ]] && covered=1
  done
  if [[ $covered == 0 ]]; then
    echo "error: 'berth bench --help' lists workload '$w', which this script neither runs nor lists in NOT_BENCHED" >&2
    exit 1
  fi
done
failures=()
# Runs one bench and appends its JSON lines, tagged with label, classes and round, to RESULTS;
# a failed run is reported at the end (and fails the script) without stopping the others.
bench_one() {
  local label="$1" classes="$2" round="$3" args="$4" out t0 took
  local -a argv
  read -r -a argv <<<"$args"
  [[ "$classes" == off ]] && argv+=(--no-equivalence-classes)
  t0=$EPOCHREALTIME
  if ! out="$("$berth" bench "${argv[@]}" --output json)"; then
    echo "FAILED: berth bench ${argv[*]} --output json" >&2
    failures+=("round $round: berth bench ${argv[*]}")
    return 0
  fi
  took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  printf '%-30s classes %-3s %6s s  ' "$label" "$classes" "$took"
  python3 scripts/readme-figures.py tag "$RESULTS" "$label" "$classes" "$round" \
    "berth bench ${argv[*]}" "$took" <<<"$out" || failures+=("round $round: berth bench ${argv[*]} (its output)")
}

for ((round = 1; round <= ROUNDS; round++)); do
  run_step "bench round $round of $ROUNDS ($(date -u +%H:%M:%S) UTC; load $(cut -d' ' -f1-3 /proc/loadavg))"
  i=0
  for run in "${RUNS[@]}"; do
    IFS='|' read -r label full quick <<<"$run"
    if [[ -n "$ONLY" && " $ONLY " != *" $label "* ]]; then continue; fi
    args="$full"
    [[ $QUICK == 1 ]] && args="$quick"
    # Alternate which of on/off goes first, per round and per run, so neither always
    # follows the other's warm-up or the other's heat.
    if (((round + i) % 2)); then order=(on off); else order=(off on); fi
    for classes in "${order[@]}"; do
      bench_one "$label" "$classes" "$round" "$args"
    done
    i=$((i + 1))
  done
done

if [[ $WITH_TESTS == 1 ]]; then
  run_step "measurement tests: WASM plugins, control plane, Chromium"
  bash scripts/build-plugins.sh
  BERTH_CONTROL_PLANE_BIN="$(bash scripts/control-plane.sh --with-reference-scheduler)"
  export BERTH_CONTROL_PLANE_BIN
  if [[ $QUICK == 1 ]]; then
    export BERTH_IDLE_ROUNDS=1 BERTH_IDLE_SECONDS=5
    export BERTH_CEILING_NODES=100 BERTH_CEILING_PODS=300 BERTH_CEILING_ROUNDS=1
  fi
  run_step "WASM plugins vs built-ins (docs/performance.md, WASM plugins): $ROUNDS rounds"
  for ((round = 1; round <= ROUNDS; round++)); do
    if [[ $QUICK == 1 ]]; then
      "$berth" bench --workload node-label --compare-wasm --plugins plugins/dist --nodes 200 --pods 300 || failures+=("node-label --compare-wasm")
    else
      "$berth" bench --workload node-label --compare-wasm --plugins plugins/dist || failures+=("node-label --compare-wasm")
      "$berth" bench --workload node-label --compare-wasm --plugins plugins/dist --pods 2000 || failures+=("node-label --compare-wasm --pods 2000")
    fi
  done
  "$berth" bench --reload-latency "$([[ $QUICK == 1 ]] && echo 3 || echo 20)" --plugins plugins/dist || failures+=("--reload-latency")
  for t in $TESTS; do
    case "$t" in
      idle) cmd=(cargo test --release -p berth --test idle -- --ignored --nocapture) ;;
      throughput) cmd=(cargo test --release -p berth --test e2e -- --ignored --nocapture throughput) ;;
      throughput-qps50) cmd=(env BERTH_BENCH_QPS=50 cargo test --release -p berth --test e2e -- --ignored --nocapture throughput) ;;
      ceiling) cmd=(cargo test --release -p berth --test ceiling -- --ignored --nocapture) ;;
      # A debug build, as the documented command (the page's time is the browser's).
      render) cmd=(cargo test -p berth --test report -- --ignored --nocapture render_time) ;;
    esac
    if [[ $QUICK == 1 && ($t == throughput || $t == throughput-qps50 || $t == render) ]]; then
      echo "QUICK: skipping $t (fixed size, minutes long): ${cmd[*]}"
      continue
    fi
    if [[ $t == render && -z "${BERTH_CHROMIUM:-}" ]]; then
      BERTH_CHROMIUM="$(bash scripts/chromium.sh)"
      export BERTH_CHROMIUM
    fi
    run_step "$t: ${cmd[*]} ($(date -u +%H:%M:%S) UTC; load $(cut -d' ' -f1-3 /proc/loadavg))"
    "${cmd[@]}" || failures+=("${cmd[*]}")
  done
fi

run_step "summary"
load after
echo "wall time:  $(($(date -u +%s) - started)) s"
echo
summary_ok=0
python3 scripts/readme-figures.py table "$RESULTS" || summary_ok=$?
if ((${#failures[@]})); then
  echo
  echo "!!! FAILED runs (their figures are missing above):"
  printf '!!!   %s\n' "${failures[@]}"
  exit 1
fi
exit "$summary_ok"
