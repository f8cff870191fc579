// berth simulate --report: draws the run's data (the JSON in #berth-data). Every string from
// the cluster is written with textContent, never parsed as markup. The pod list and the
// cluster overview are drawn at load; a pod's heatmap when the pod is selected.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("berth-data").textContent);
  // Marks for the render-time measurement (performance.getEntriesByType("mark")).
  performance.mark("berth-parsed");
  const nodes = data.nodes;
  const filters = data.filters;
  const tooltip = document.getElementById("tooltip");

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function nodeName(index) {
    return index === null || nodes[index] === undefined ? "(unknown node)" : nodes[index];
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // Header: policy, cluster and counts.
  const total = data.scheduled + data.unschedulable;
  let summary = "policy " + data.policy + " \u00b7 cluster " + data.cluster + " \u00b7 seed " + data.seed +
    " \u00b7 " + plural(total, "pod") + ": " + data.scheduled + " scheduled, " + data.unschedulable + " unschedulable";
  if (data.pods.length !== total) summary += " (" + data.pods.length + " shown, --pod)";
  document.getElementById("summary").textContent = summary;

  // Score colour: light to dark blue over 0..100.
  function scoreColour(v) {
    const t = Math.max(0, Math.min(100, v)) / 100;
    return "hsl(210 70% " + (97 - 57 * t).toFixed(1) + "%)";
  }

  // Tied nodes named in a pod's words before "and N more".
  const TIE_NAMES = 8;
  // Heatmaps of more rows than this draw only the rows in view; a row's height in pixels
  // (the stylesheet's .hr), and the rows drawn beyond the view on each side.
  const WINDOW_ROWS = 400;
  const ROW_HEIGHT = 18;
  const WINDOW_MARGIN = 20;

  // One pod's heatmap and its words.
  let current = -1;
  let view = null; // what the tooltip needs about the drawn heatmap
  const podPane = document.getElementById("pod");
  const podButtons = [];

  function select(i) {
    if (i === current) return;
    if (current >= 0) podButtons[current].classList.remove("sel");
    current = i;
    podButtons[i].classList.add("sel");
    drawPod(data.pods[i]);
  }

  // A link to one pod: the URL fragment #pod=<namespace>/<name>.
  function podHash(key) {
    return "#pod=" + encodeURIComponent(key);
  }

  // A definition list of facts: [label, text or list of texts], empty ones left out.
  function factList(rows) {
    const dl = el("dl", "facts");
    rows.forEach(function (r) {
      const v = r[1];
      if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) return;
      dl.appendChild(el("dt", null, r[0]));
      dl.appendChild(el("dd", null, Array.isArray(v) ? v.join(", ") : v));
    });
    return dl;
  }

  function resourceText(map) {
    const names = Object.keys(map || {});
    return names.length === 0 ? "none" : names.map(function (k) { return k + " " + map[k]; }).join(", ");
  }

  function table(head, rows) {
    const t = el("table", "list");
    const tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      const row = el("tr", r.cls || null);
      r.cells.forEach(function (c, i) { row.appendChild(el("td", r.num && r.num[i] ? "n" : null, c)); });
      t.appendChild(row);
    });
    return t;
  }

  // Rejected nodes grouped by the rule and reason, as the terminal's --explain shows them.
  const NAMES_PER_GROUP = 4;
  function rejectedGroups(x) {
    const groups = new Map();
    for (let k = 0; k < x.rejections.length; k += 3) {
      const key = x.rejections[k + 1] + "\u0000" + x.rejections[k + 2];
      if (!groups.has(key)) groups.set(key, { column: x.rejections[k + 1], reason: x.rejections[k + 2], rows: [] });
      groups.get(key).rows.push(x.rejections[k]);
    }
    const list = Array.from(groups.values()).sort(function (a, b) { return b.rows.length - a.rows.length || a.column - b.column; });
    if (list.length === 0) return null;
    const evaluated = x.rows.length;
    const rejected = new Set(list.flatMap(function (g) { return g.rows; })).size;
    const box = el("div", "rejected");
    box.appendChild(el("h4", null, "rejected " + rejected + " of " + evaluated + " evaluated node(s)"));
    box.appendChild(table(["nodes", "rule", "reason", "which"], list.map(function (g) {
      const f = filters[g.column];
      const names = g.rows.slice(0, NAMES_PER_GROUP).map(function (r) { return nodeName(x.rows[r]); });
      if (g.rows.length > NAMES_PER_GROUP) names.push("and " + (g.rows.length - NAMES_PER_GROUP) + " more");
      return { cells: [g.rows.length, (f[1] === "predicate" ? "" : f[1] + " ") + f[0], data.strings[g.reason], names.join(", ")], num: [true] };
    })));
    return box;
  }

  // A preemption attempt in full: victims with why, candidates with why they lost, nodes
  // that could not be freed with why, and why nothing was tried.
  function preemptionBox(pr) {
    const box = el("div", "preemption");
    box.appendChild(el("h4", null, "preemption"));
    if (pr.notEligible) box.appendChild(el("p", null, "not tried: " + pr.notEligible));
    if (pr.victims.length > 0) {
      box.appendChild(table(["victim", "why"], pr.victims.map(function (v) { return { cells: [v.pod, v.why] }; })));
    }
    if (pr.candidates.length > 0) {
      box.appendChild(table(["candidate", "victims", "PDB violations", "outcome"], pr.candidates.map(function (c) {
        return { cells: [c.node, c.victims.join(", "), c.pdbViolations, c.chosen ? "chosen" : "lost: " + c.lostOn],
                 cls: c.chosen ? "chosen" : "lost", num: [false, false, true] };
      })));
    }
    if (pr.rejected.length > 0) {
      box.appendChild(table(["not a candidate", "why"], pr.rejected.map(function (r) { return { cells: [r.node, r.why] }; })));
    }
    if (pr.unresolvableNodes > 0) {
      box.appendChild(el("p", "note", plural(pr.unresolvableNodes, "node") + " not tried: removing pods cannot help there"));
    }
    if (pr.candidates.length === 0 && !pr.notEligible) {
      box.appendChild(el("p", "note", "no node can be freed for the pod"));
    }
    if (pr.extenders.length > 0) box.appendChild(el("p", "note", "candidates decided with extenders: " + pr.extenders.join(", ")));
    return box;
  }

  function drawPod(p) {
    podPane.textContent = "";
    view = null;
    podPane.appendChild(el("h3", null, p.pod));
    const outcome = el("p", "outcome", p.node === null ? "unschedulable" : "\u2192 " + p.node);
    const link = el("a", "link", "link to this pod");
    link.href = podHash(p.pod);
    outcome.appendChild(link);
    podPane.appendChild(outcome);
    if (p.message) podPane.appendChild(el("p", "fiterror", p.message));
    if (p.nominated !== undefined) {
      podPane.appendChild(el("p", null, "preempted " + p.victims.join(", ") + " on " + p.nominated));
    }
    // The heatmap on the left; the pod's facts, its rejections grouped and its preemption
    // beside it.
    const body = el("div", "pod-body");
    const main = el("div", "pod-main");
    const side = el("div", "pod-side");
    body.appendChild(main);
    body.appendChild(side);
    podPane.appendChild(body);
    const f = p.facts;
    if (f) {
      side.appendChild(factList([
        ["requests (as admitted)", resourceText(f.requests)],
        ["priority", f.priority + (f.priorityClass ? " (PriorityClass " + f.priorityClass + ")" : "") +
          (f.preemptionPolicy === "Never" ? ", preemptionPolicy Never" : "")],
        ["labels", f.labels],
        ["node selector", f.nodeSelector],
        ["tolerations", f.tolerations],
        ["affinity", f.affinity],
        ["topology spread", f.spread],
        ["scheduling gates", p.gates],
      ]));
    }
    const x = p.explain;
    if (x) {
      const groups = rejectedGroups(x);
      if (groups) side.appendChild(groups);
    }
    if (p.preemption) side.appendChild(preemptionBox(p.preemption));
    if (!x) return;
    if (x.tie.length > 1) {
      // The first few names; every tied row is marked in the heatmap.
      const names = x.tie.slice(0, TIE_NAMES).map(function (r) { return nodeName(x.rows[r]); });
      if (x.tie.length > TIE_NAMES) names.push("and " + (x.tie.length - TIE_NAMES) + " more, marked =");
      main.appendChild(el("p", "tie", plural(x.tie.length, "node") + " share the best total (" +
        names.join(", ") + "): one was chosen at random, seeded (--seed " + data.seed + ")"));
    }
    if (x.notEvaluated > 0) {
      main.appendChild(el("p", "note", plural(x.notEvaluated, "node") + " not evaluated: " +
        (x.notEvaluatedBecause === "nominatedNode"
          ? "the pod's nominated node was tried first and fits, so no other node was asked (as kube-scheduler does)"
          : "enough feasible nodes were found first (--percentage-of-nodes-to-score)")));
    }
    const legend = el("p", "legend");
    [["p", "passed"], ["f", "rejected the node (hover for the reason)"],
     ["n", "no verdict recorded (filtering stops at a node's first failure)"], ["s", "score 0..100"]]
      .forEach(function (l) {
        const s = el("span");
        s.appendChild(el("i", l[0]));
        s.appendChild(document.createTextNode(l[1]));
        legend.appendChild(s);
      });
    main.appendChild(legend);
    const tools = el("div", "heat-tools");
    const filter = el("input");
    filter.type = "search";
    filter.id = "node-filter";
    filter.placeholder = "filter nodes by name";
    filter.setAttribute("aria-label", "filter the heatmap's nodes by name");
    tools.appendChild(filter);
    main.appendChild(tools);
    const map = heatmap(x);
    main.appendChild(map);
    filter.addEventListener("input", function () { map.filterRows(filter.value.toLowerCase()); });
  }

  function heatmap(x) {
    const rows = x.rows.length;
    const fails = new Array(rows).fill(null); // row -> [[column, reason], ...]
    for (let k = 0; k < x.rejections.length; k += 3) {
      const r = x.rejections[k];
      (fails[r] || (fails[r] = [])).push([x.rejections[k + 1], x.rejections[k + 2]]);
    }
    const scoredAt = new Int32Array(rows).fill(-1);
    x.scored.forEach(function (r, k) { scoredAt[r] = k; });
    const winnerTotal = x.winner === null || scoredAt[x.winner] < 0 ? null : x.totals[scoredAt[x.winner]];
    const tie = new Set(x.tie);
    // Scored nodes best first, then feasible unscored ones, then the rejected, grouped by
    // their first rejecting filter; each group in visiting order.
    const order = Array.from({ length: rows }, function (_, r) { return r; });
    function rank(r) {
      if (scoredAt[r] >= 0) return [0, -x.totals[scoredAt[r]]];
      if (fails[r] === null) return [1, 0];
      return [2, fails[r][0][0]];
    }
    const ranks = order.map(rank);
    order.sort(function (a, b) {
      return ranks[a][0] - ranks[b][0] || ranks[a][1] - ranks[b][1] || a - b;
    });

    // Rows are flex boxes of fixed-width cells, each row skipped by layout and paint while
    // off screen (content-visibility), so a thousand rows cost what the visible ones do.
    const heat = el("div", "heat");
    heat.id = "heatmap";
    const head = el("div", "hhead");
    head.appendChild(el("span", "name", "node"));
    filters.forEach(function (f) {
      const h = el("span", "h filter", f[0]);
      h.title = f[1] + " " + f[0];
      head.appendChild(h);
    });
    x.scores.forEach(function (s) {
      const h = el("span", "h score", s.name + " \u00d7" + s.weight);
      h.title = "priority " + s.name + ", weight " + s.weight;
      head.appendChild(h);
    });
    head.appendChild(el("span", "num", "total"));
    head.appendChild(el("span", "num", "gap"));
    heat.appendChild(head);

    const failClass = new Array(filters.length);
    function makeRow(r) {
      const row = el("div", "hr");
      row.dataset.r = r;
      if (r === x.winner) row.classList.add("win");
      else if (tie.has(r)) row.classList.add("tie");
      const name = el("span", "name", nodeName(x.rows[r]));
      name.title = nodeName(x.rows[r]);
      name.dataset.node = x.rows[r];
      row.appendChild(name);
      const f = fails[r];
      if (f === null) {
        for (let c = 0; c < filters.length; c++) row.appendChild(el("span", "c p"));
      } else {
        failClass.fill(false);
        f.forEach(function (fr) { failClass[fr[0]] = true; });
        for (let c = 0; c < filters.length; c++) {
          row.appendChild(failClass[c] ? el("span", "c f", "\u00d7") : el("span", "c n"));
        }
      }
      const k = scoredAt[r];
      for (const s of x.scores) {
        if (k < 0) {
          row.appendChild(el("span", "c x"));
        } else {
          const v = s.normalized[k];
          const cell = el("span", v > 60 ? "c s hi" : "c s", v);
          cell.style.background = scoreColour(v);
          row.appendChild(cell);
        }
      }
      row.appendChild(el("span", "c t", k < 0 ? "" : x.totals[k]));
      row.appendChild(el("span", "c t", k < 0 || winnerTotal === null ? "" : x.totals[k] - winnerTotal));
      return row;
    }
    view = { x: x, fails: fails, scoredAt: scoredAt, winnerTotal: winnerTotal };
    const wrap = el("div", "heat-wrap");
    wrap.appendChild(heat);
    const body = el("div", "hbody");
    heat.appendChild(body);
    // Up to WINDOW_ROWS rows are all drawn; past that only those in view (and a margin),
    // absolutely placed in a body as tall as every row, redrawn as the box scrolls.
    let shown = order;
    let first = -1;
    function drawWindow() {
      const top = Math.max(0, wrap.scrollTop - body.offsetTop);
      const from = Math.max(0, Math.floor(top / ROW_HEIGHT) - WINDOW_MARGIN);
      if (from === first) return;
      first = from;
      const to = Math.min(shown.length, from + Math.ceil(wrap.clientHeight / ROW_HEIGHT) + 2 * WINDOW_MARGIN);
      body.textContent = "";
      for (let i = from; i < to; i++) {
        const row = makeRow(shown[i]);
        row.style.top = i * ROW_HEIGHT + "px";
        body.appendChild(row);
      }
    }
    function draw(rows) {
      shown = rows;
      body.textContent = "";
      first = -1;
      if (order.length <= WINDOW_ROWS) {
        body.classList.remove("windowed");
        body.style.height = "";
        for (const r of rows) body.appendChild(makeRow(r));
      } else {
        body.classList.add("windowed");
        body.style.height = rows.length * ROW_HEIGHT + "px";
        drawWindow();
      }
    }
    if (order.length > WINDOW_ROWS) wrap.addEventListener("scroll", drawWindow);
    draw(order);
    // The node filter: rows whose node name contains the text.
    wrap.filterRows = function (q) {
      draw(q === "" ? order : order.filter(function (r) {
        return nodeName(x.rows[r]).toLowerCase().indexOf(q) >= 0;
      }));
    };
    return wrap;
  }

  // The tooltip of a heatmap cell: the filter's verdict with its reasons, or a score's raw,
  // normalised and weighted values.
  function cellText(r, column) {
    const x = view.x;
    const lines = [nodeName(x.rows[r])];
    if (column < filters.length) {
      const f = filters[column];
      lines.push(f[1] + " " + f[0]);
      const fails = view.fails[r];
      if (fails === null) {
        lines.push("passed");
      } else {
        const mine = fails.filter(function (fr) { return fr[0] === column; });
        if (mine.length === 0) {
          lines.push("no verdict recorded: rejected by " + filters[fails[0][0]][0]);
        } else {
          mine.forEach(function (fr) { lines.push("rejected: " + data.strings[fr[1]]); });
        }
      }
      return lines.join("\n");
    }
    const s = x.scores[column - filters.length];
    const k = view.scoredAt[r];
    if (s === undefined) {
      if (k >= 0 && view.winnerTotal !== null) lines.push("total " + x.totals[k] + ", gap " + (x.totals[k] - view.winnerTotal));
      return lines.join("\n");
    }
    lines.push("priority " + s.name + " \u00d7" + s.weight);
    if (k < 0) {
      lines.push(view.fails[r] === null ? "not scored" : "not scored: the node was rejected");
    } else {
      const n = s.normalized[k];
      lines.push("raw " + (s.raw ? s.raw[k] : n) + ", normalized " + n + ", weighted " +
        (s.weighted ? s.weighted[k] : n * s.weight));
    }
    return lines.join("\n");
  }

  podPane.addEventListener("mouseover", function (e) {
    const td = e.target.closest("#heatmap .hr .c");
    if (!td || !view) {
      tooltip.hidden = true;
      return;
    }
    const row = td.parentElement;
    tooltip.textContent = cellText(Number(row.dataset.r), Array.prototype.indexOf.call(row.children, td) - 1);
    tooltip.hidden = false;
    const box = td.getBoundingClientRect();
    tooltip.style.left = Math.min(box.right + 6, window.innerWidth - 430) + "px";
    tooltip.style.top = box.bottom + 4 + "px";
  });
  podPane.addEventListener("mouseleave", function () { tooltip.hidden = true; });

  // A node's facts, in a panel: allocatable, requested before and after, labels, taints,
  // conditions.
  const nodePanel = document.getElementById("node-panel");
  function showNode(i) {
    const facts = data.nodeFacts[i];
    if (!facts) return;
    nodePanel.textContent = "";
    const close = el("button", null, "close");
    close.type = "button";
    close.addEventListener("click", function () { nodePanel.hidden = true; });
    nodePanel.appendChild(close);
    nodePanel.appendChild(el("h3", null, "node " + nodes[i]));
    const used = RESOURCES.map(function (r) {
      const res = data.resources[r[0]];
      const change = res.before[i] === res.after[i] ? r[2](res.after[i]) : r[2](res.before[i]) + " \u2192 " + r[2](res.after[i]);
      return r[1] + " " + change + (res.capacity[i] === null ? " (no limit)" : " of " + r[2](res.capacity[i]));
    });
    nodePanel.appendChild(factList([
      ["zone", data.zones[i]],
      ["allocatable", resourceText(facts.allocatable)],
      ["requested (before \u2192 after)", used],
      ["conditions", facts.conditions],
      ["taints", facts.taints.length === 0 ? "none" : facts.taints],
      ["labels", facts.labels],
    ]));
    nodePanel.hidden = false;
  }
  document.body.addEventListener("click", function (e) {
    const t = e.target.closest("[data-node]");
    if (t && t.dataset.node !== "") showNode(Number(t.dataset.node));
  });

  // The pod list, its search and its filter; each pod has a link (#pod=namespace/name).
  const list = document.getElementById("pods");
  const byKey = new Map();
  const haystacks = [];
  data.pods.forEach(function (p, i) {
    const b = el("button", p.node === null ? "unplaced" : "placed",
      p.pod + " \u2192 " + (p.node === null ? "unschedulable" : p.node));
    b.type = "button";
    if (p.nominated !== undefined) b.classList.add("preempted");
    b.addEventListener("click", function () {
      select(i);
      history.replaceState(null, "", podHash(p.pod));
    });
    podButtons.push(b);
    byKey.set(p.pod, i);
    haystacks.push([p.pod, p.node || "", p.message || ""].join("\n").toLowerCase());
    list.appendChild(b);
  });
  if (data.pods.length === 0) podPane.appendChild(el("p", "note", "no pending pods"));
  const search = document.getElementById("search");
  const status = document.getElementById("status");
  const shownNote = document.getElementById("shown");
  function filterPods() {
    const q = search.value.toLowerCase();
    const want = status.value;
    let shown = 0;
    podButtons.forEach(function (b, i) {
      const show = (q === "" || haystacks[i].indexOf(q) >= 0) &&
        (want === "all" || b.classList.contains(want));
      b.hidden = !show;
      if (show) shown++;
    });
    shownNote.textContent = shown === podButtons.length ? "" : shown + " of " + podButtons.length + " pods shown";
  }
  search.addEventListener("input", filterPods);
  status.addEventListener("change", filterPods);
  function fromHash() {
    const m = /^#pod=(.*)$/.exec(location.hash);
    if (!m) return false;
    const i = byKey.get(decodeURIComponent(m[1]));
    if (i === undefined) return false;
    select(i);
    podButtons[i].scrollIntoView({ block: "nearest" });
    return true;
  }
  window.addEventListener("hashchange", fromHash);

  // The --apply summary: per manifest, the verdict and what it rests on.
  function drawApplied(manifests) {
    const box = document.getElementById("applied");
    manifests.forEach(function (m) {
      const div = el("div", "manifest");
      div.appendChild(el("p", "verdict", m.kind.toLowerCase() + " " + m.namespace + "/" + m.name + ": " + m.summary));
      const lines = el("ul");
      const add = function (text, cls) { lines.appendChild(el("li", cls || null, text)); };
      const placed = new Map();
      m.pods.forEach(function (p) { if (p.node !== null) placed.set(p.node, (placed.get(p.node) || 0) + 1); });
      if (placed.size > 0) {
        add("placed: " + Array.from(placed.entries()).map(function (e) { return e[0] + " x" + e[1]; }).join(", "));
      }
      if (m.unschedulableReasons.length > 1) {
        m.unschedulableReasons.forEach(function (r) { add(r.pods + " x " + r.message); });
      }
      m.preemptions.forEach(function (pr) {
        add(pr.pod + " preempts on " + pr.node + ": " + pr.victims.map(function (v) {
          return v.pod + " (priority " + v.priority + (v.owner ? ", " + v.owner : "") + ")";
        }).join(", "));
      });
      if (m.shortfall) add("short: " + m.shortfall);
      if (m.suggestion) add("fits with: " + m.suggestion);
      m.hints.forEach(function (h) { add("hint: " + h, "hint"); });
      if (m.note) add(m.note);
      add("requests per pod: " + resourceText(m.requests.effective));
      m.admission.forEach(function (a) { add("admission: " + a); });
      if (m.claims.length > 0) add("claims created: " + m.claims.join(", "));
      div.appendChild(lines);
      const pods = el("p", "note");
      m.pods.forEach(function (p, k) {
        if (k > 0) pods.appendChild(document.createTextNode(", "));
        if (byKey.has(p.pod)) {
          const a = el("a", null, p.pod);
          a.href = podHash(p.pod);
          pods.appendChild(a);
        } else {
          pods.appendChild(document.createTextNode(p.pod));
        }
      });
      div.appendChild(pods);
      box.appendChild(div);
    });
    document.getElementById("applied-section").hidden = false;
  }
  if (data.applied) drawApplied(data.applied);

  // The cluster overview: nodes by zone, each with a bar per resource before and after.
  // Zones of more nodes than this list them when opened.
  const ZONE_NODES_DRAWN = 200;
  const RESOURCES = [
    ["cpu", "cpu", function (v) { return (v / 1000).toFixed(v % 1000 === 0 ? 0 : 2); }],
    ["memory", "memory", bytes],
    ["pods", "pods", String],
    ["podIPs", "pod IPs", String],
  ];

  function bytes(v) {
    const units = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (Number.isInteger(v) ? v : v.toFixed(1)) + units[u];
  }

  function bar(capacity, before, after, format) {
    const cell = el("span", "ocell");
    const b = el("span", capacity === null ? "bar none" : "bar");
    if (capacity !== null) {
      [["b", before], ["a", after]].forEach(function (part) {
        const fill = el("span", part[0]);
        const share = capacity > 0 ? part[1] / capacity : (part[1] > 0 ? 2 : 0);
        if (share > 1) fill.classList.add("over");
        fill.style.width = (Math.min(1, share) * 100).toFixed(1) + "%";
        b.appendChild(fill);
      });
    }
    cell.appendChild(b);
    const change = before === after ? format(after) : format(before) + " \u2192 " + format(after);
    cell.appendChild(el("span", "amount", capacity === null ? change + " (no limit)" : change + " / " + format(capacity)));
    return cell;
  }

  const byZone = new Map();
  data.zones.forEach(function (z, i) {
    const key = z === null ? "" : z;
    if (!byZone.has(key)) byZone.set(key, []);
    byZone.get(key).push(i);
  });
  const zoneNames = Array.from(byZone.keys()).sort(function (a, b) {
    return (a === "") - (b === "") || (a < b ? -1 : a > b ? 1 : 0);
  });
  performance.mark("berth-list");
  const overview = document.getElementById("overview");
  for (const z of zoneNames) {
    const members = byZone.get(z);
    const section = el("section", "zone");
    section.appendChild(el("h3", null, (z === "" ? "no zone label" : "zone " + z) + " \u00b7 " + plural(members.length, "node")));
    const head = el("div", "orow head");
    head.appendChild(el("span", "oname", "node"));
    RESOURCES.forEach(function (r) { head.appendChild(el("span", "ocell", r[1])); });
    section.appendChild(head);
    const sums = el("div", "orow total");
    sums.appendChild(el("span", "oname", "zone total"));
    RESOURCES.forEach(function (r) {
      const res = data.resources[r[0]];
      let cap = 0, before = 0, after = 0, limited = false;
      for (const i of members) {
        if (res.capacity[i] !== null) { cap += res.capacity[i]; limited = true; }
        before += res.before[i];
        after += res.after[i];
      }
      sums.appendChild(bar(limited ? cap : null, before, after, r[2]));
    });
    section.appendChild(sums);
    const drawNodes = function (into) {
      for (const i of members) {
        const row = el("div", "orow node");
        const name = el("span", "oname", nodes[i]);
        name.title = nodes[i];
        name.dataset.node = i;
        row.appendChild(name);
        RESOURCES.forEach(function (r) {
          const res = data.resources[r[0]];
          row.appendChild(bar(res.capacity[i], res.before[i], res.after[i], r[2]));
        });
        into.appendChild(row);
      }
    };
    if (members.length <= ZONE_NODES_DRAWN) {
      drawNodes(section);
    } else {
      // A large zone lists its nodes when opened.
      const more = el("details", "zone-nodes");
      more.appendChild(el("summary", null, "the zone's " + plural(members.length, "node")));
      more.addEventListener("toggle", function () {
        if (more.open && more.children.length === 1) drawNodes(more);
      });
      section.appendChild(more);
    }
    overview.appendChild(section);
  }

  performance.mark("berth-overview");
  if (!fromHash() && data.pods.length > 0) select(0);
  performance.mark("berth-pod");
  // Rendered once the first frame (style, layout, paint) is done.
  requestAnimationFrame(function () {
    setTimeout(function () {
      performance.mark("berth-rendered");
      document.body.dataset.rendered = "true";
    }, 0);
  });
})();
