//! `simulate --report FILE.html`: one self-contained HTML page per run.
//!
//! The page is static markup, inline CSS and JavaScript (`report/report.css`,
//! `report/report.js`), and the run's data as one JSON blob in a `<script
//! type="application/json">` element, which the script renders lazily: the pod list and the
//! cluster overview at load, one pod's node x rule heatmap at a time. Every string from the
//! cluster (names, labels, reasons) travels inside that blob only, escaped so no `<` survives
//! in it, and the script writes it with `textContent`, never as markup. A Content Security
//! Policy with the hashes of the one script and the one style forbids every fetch and every
//! other script, so even a slip in that escaping could run nothing.
//!
//! The data is what `--output json` prints, from the same [`Outcome`]s and
//! [`Explanation`]s, made compact for 1,000 nodes x 100 pods: node names, rule names and
//! reasons are tables referred to by index, scores are columns per priority.

use std::collections::HashMap;

use base64::Engine as _;
use berth_engine::RejectedBy;
use berth_engine::model;
use berth_engine::simulation::Outcome;
use berth_engine::{Cluster, Decision, Explanation, Scheduler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{RuleKinds, facts};

/// The page's script, style and markup around the data.
const SCRIPT: &str = include_str!("report/report.js");
const STYLE: &str = include_str!("report/report.css");
const PAGE: &str = include_str!("report/page.html");

/// The zone label nodes are grouped by, and the beta label read where it is missing.
const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// What the report says about the run as a whole.
pub(super) struct RunInfo {
    /// The policy's name (its file, or the bundled one).
    pub policy: String,
    /// Where the cluster came from.
    pub cluster: String,
    /// The tie-breaking seed.
    pub seed: u64,
}

/// Every node's use of one resource: capacity (None: not limited, e.g. no pod CIDR) and
/// what is requested, indexed like [`Report::nodes`].
#[derive(Default)]
struct Allocation {
    capacity: Vec<Option<i64>>,
    used: Vec<i64>,
}

/// The four resources the overview shows, read from a cluster.
struct Allocations {
    cpu: Allocation,
    memory: Allocation,
    pods: Allocation,
    pod_ips: Allocation,
}

impl Allocations {
    /// Each node's allocatable and requested cpu (milli) and memory (bytes), its pod count
    /// and allowed pods, and its pods that need an IP and the pod CIDRs' usable addresses.
    fn of(cluster: &Cluster, nodes: &[String]) -> Self {
        let mut a = Allocations {
            cpu: Allocation::default(),
            memory: Allocation::default(),
            pods: Allocation::default(),
            pod_ips: Allocation::default(),
        };
        for name in nodes {
            let Some(n) = cluster.node_by_name(name).map(|id| cluster.node(id)) else {
                for r in [&mut a.cpu, &mut a.memory, &mut a.pods, &mut a.pod_ips] {
                    r.capacity.push(None);
                    r.used.push(0);
                }
                continue;
            };
            a.cpu.capacity.push(Some(n.allocatable.milli_cpu));
            a.cpu.used.push(n.requested.milli_cpu);
            a.memory.capacity.push(Some(n.allocatable.memory));
            a.memory.used.push(n.requested.memory);
            a.pods.capacity.push(Some(n.allowed_pods));
            a.pods
                .used
                .push(i64::try_from(n.pods.len()).unwrap_or(i64::MAX));
            a.pod_ips.capacity.push(
                n.pod_ip_capacity
                    .map(|c| i64::try_from(c).unwrap_or(i64::MAX)),
            );
            a.pod_ips
                .used
                .push(i64::try_from(n.pods_needing_ip).unwrap_or(i64::MAX));
        }
        a
    }
}

/// The report being gathered while the pods are scheduled.
pub(super) struct Report {
    info: RunInfo,
    /// Every node of the cluster, in the cluster's order; rows refer to them by index.
    nodes: Vec<String>,
    node_index: HashMap<String, usize>,
    zones: Vec<Option<String>>,
    before: Allocations,
    /// Filter columns: the scheduler's filters in evaluation order, then each extender that
    /// rejected a node, as (name, kind: `predicate`, `plugin` or `extender`).
    filters: Vec<(String, &'static str)>,
    /// Reasons, referred to by index.
    strings: Vec<String>,
    string_index: HashMap<String, usize>,
    pods: Vec<Value>,
    scheduled: usize,
    unschedulable: usize,
    /// Each node's facts (allocatable, labels, taints, conditions), indexed like `nodes`.
    node_facts: Vec<Value>,
    /// The pending pods' facts, by key, until their outcome takes them.
    pod_facts: HashMap<String, Value>,
}

impl Report {
    /// Starts a report on the cluster as it is before any pending pod is placed.
    pub(super) fn new(
        info: RunInfo,
        cluster: &Cluster,
        scheduler: &Scheduler,
        rules: &RuleKinds,
    ) -> Self {
        let nodes: Vec<String> = cluster
            .node_order()
            .iter()
            .map(|id| cluster.node(*id).name().to_string())
            .collect();
        let zones = cluster
            .node_order()
            .iter()
            .map(|id| {
                let labels = &cluster.node(*id).node.meta.labels;
                ZONE_LABELS.iter().find_map(|k| labels.get(k).cloned())
            })
            .collect();
        let node_index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let before = Allocations::of(cluster, &nodes);
        let node_facts = cluster
            .node_order()
            .iter()
            .map(|id| facts::node(cluster.node(*id)))
            .collect();
        Report {
            info,
            nodes,
            node_index,
            zones,
            before,
            filters: scheduler
                .filters()
                .iter()
                .map(|f| {
                    let kind = rules.kind(&RejectedBy::Filter(f.name.clone()));
                    (f.name.clone(), kind)
                })
                .collect(),
            strings: Vec::new(),
            string_index: HashMap::new(),
            pods: Vec::new(),
            scheduled: 0,
            unschedulable: 0,
            node_facts,
            pod_facts: HashMap::new(),
        }
    }

    /// Notes the pending pods' facts (requests as admitted, priority, labels, tolerations,
    /// affinity, spread) before they are scheduled.
    pub(super) fn know_pods(&mut self, pods: &[model::Pod]) {
        for pod in pods {
            self.pod_facts.insert(pod.key(), facts::pod(pod));
        }
    }

    /// Counts a pod's outcome; `shown` says whether the report details it (`--pod`).
    pub(super) fn add(&mut self, o: &Outcome, rules: &RuleKinds, shown: bool) {
        if o.node.is_some() {
            self.scheduled += 1;
        } else {
            self.unschedulable += 1;
        }
        if !shown {
            return;
        }
        let mut v = json!({"pod": o.pod, "node": o.node, "message": o.message()});
        if let Some(nominated) = &o.nominated_node {
            v["nominated"] = json!(nominated);
            v["victims"] = json!(o.victims);
        }
        if let Some(f) = self.pod_facts.remove(&o.pod) {
            v["facts"] = f;
        }
        if !o.gates.is_empty() {
            v["gates"] = json!(o.gates);
        }
        if let Some(p) = &o.preemption {
            v["preemption"] = super::json::preemption(p);
        }
        if let Some(e) = o.decision.as_ref().and_then(Decision::explanation) {
            v["explain"] = self.explain(e, o.node.as_deref(), rules);
        }
        self.pods.push(v);
    }

    /// One pod's explanation: `rows` (node indexes in visiting order), `rejections` as
    /// `[row, filter column, reason]` triples, the `scored` rows with their `totals` and a
    /// column per priority (`normalized`, and `raw` / `weighted` only where they differ from
    /// `normalized` / `normalized x weight`), the `winner` row and the `tie` rows (scored rows
    /// with the winner's total).
    fn explain(&mut self, e: &Explanation, chosen: Option<&str>, rules: &RuleKinds) -> Value {
        let mut rows = Vec::with_capacity(e.nodes.len());
        let mut rejections = Vec::new();
        let mut scored = Vec::new();
        let mut totals = Vec::new();
        let mut winner = None;
        for (row, n) in e.nodes.iter().enumerate() {
            rows.push(self.node_index.get(&n.node).copied());
            if Some(n.node.as_str()) == chosen {
                winner = Some(row);
            }
            for r in &n.rejections {
                let column = self.filter_column(&r.by, rules);
                let reason = self.string(&r.reason);
                rejections.extend([row, column, reason]);
            }
            if let Some(total) = n.total {
                scored.push(row);
                totals.push(total);
            }
        }
        let winner_total = winner.and_then(|w| e.nodes[w].total);
        let tie: Vec<usize> = match winner_total {
            Some(best) => scored
                .iter()
                .zip(&totals)
                .filter(|(_, t)| **t == best)
                .map(|(r, _)| *r)
                .collect(),
            None => winner.into_iter().collect(),
        };
        let scores: Vec<Value> = e
            .score_rules
            .iter()
            .enumerate()
            .map(|(i, (name, weight))| {
                let values = || e.nodes.iter().filter(|n| n.total.is_some());
                let normalized: Vec<i64> = values().map(|n| n.scores[i].normalized).collect();
                let mut column = json!({"name": name, "weight": weight, "normalized": normalized});
                if values().any(|n| n.scores[i].raw != n.scores[i].normalized) {
                    column["raw"] = json!(values().map(|n| n.scores[i].raw).collect::<Vec<_>>());
                }
                if values()
                    .any(|n| n.scores[i].weighted != n.scores[i].normalized.saturating_mul(*weight))
                {
                    column["weighted"] =
                        json!(values().map(|n| n.scores[i].weighted).collect::<Vec<_>>());
                }
                column
            })
            .collect();
        json!({"rows": rows, "rejections": rejections, "scored": scored, "totals": totals,
               "scores": scores, "winner": winner, "tie": tie, "notEvaluated": e.not_evaluated,
               "notEvaluatedBecause": super::table::NotEvaluated::of(e).key()})
    }

    /// The column of the filter or extender that rejected a node, added on first sight.
    fn filter_column(&mut self, by: &RejectedBy, rules: &RuleKinds) -> usize {
        let kind = rules.kind(by);
        let name = by.name();
        match self
            .filters
            .iter()
            .position(|(n, k)| n == name && *k == kind)
        {
            Some(i) => i,
            None => {
                self.filters.push((name.to_string(), kind));
                self.filters.len() - 1
            }
        }
    }

    fn string(&mut self, s: &str) -> usize {
        if let Some(i) = self.string_index.get(s) {
            return *i;
        }
        self.strings.push(s.to_string());
        self.string_index
            .insert(s.to_string(), self.strings.len() - 1);
        self.strings.len() - 1
    }

    /// The page, with the cluster as it is after the run for the overview's "after" bars,
    /// and the `--apply` summary per manifest (as `--output json` prints it), if any.
    pub(super) fn finish(self, cluster: &Cluster, applied: Option<Value>) -> String {
        let after = Allocations::of(cluster, &self.nodes);
        let resource = |b: &Allocation, a: &Allocation| json!({"capacity": b.capacity, "before": b.used, "after": a.used});
        let data = json!({
            "policy": self.info.policy,
            "cluster": self.info.cluster,
            "seed": self.info.seed,
            "scheduled": self.scheduled,
            "unschedulable": self.unschedulable,
            "nodes": self.nodes,
            "zones": self.zones,
            "resources": {
                "cpu": resource(&self.before.cpu, &after.cpu),
                "memory": resource(&self.before.memory, &after.memory),
                "pods": resource(&self.before.pods, &after.pods),
                "podIPs": resource(&self.before.pod_ips, &after.pod_ips),
            },
            "filters": self.filters.iter().map(|(n, k)| json!([n, k])).collect::<Vec<_>>(),
            "strings": self.strings,
            "pods": self.pods,
            "nodeFacts": self.node_facts,
            "applied": applied.map(|a| a["apply"].clone()),
        });
        page(&data.to_string())
    }
}

/// The HTML page around `data` (JSON text).
fn page(data: &str) -> String {
    PAGE.replace("{{csp}}", &csp())
        .replace("{{style}}", STYLE)
        .replace("{{script}}", SCRIPT)
        .replacen("{{data}}", &script_data(data), 1)
}

/// The Content Security Policy: nothing may be fetched, and only the page's own script and
/// style (by their hashes) may run or apply.
fn csp() -> String {
    let hash = |text: &str| {
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
    };
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src data:; \
         base-uri 'none'; form-action 'none'",
        hash(SCRIPT),
        hash(STYLE)
    )
}

/// JSON text made safe inside a `<script type="application/json">` element: `<`, `>` and `&`
/// become `\u003c`, `\u003e` and `\u0026` (outside strings JSON has none of them), so neither
/// `</script>` nor `<!--` can appear; `JSON.parse` reads the same value back.
fn script_data(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_data_leaves_no_markup_and_parses_back() {
        let value = json!({"name": "</script><script>alert(1)</script><!-- & \u{2028}"});
        let text = script_data(&value.to_string());
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!text.contains(bad), "{text}");
        }
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn page_holds_the_data_once_and_its_hashes() {
        let html = page(r#"{"x":1}"#);
        assert_eq!(html.matches(r#"{"x":1}"#).count(), 1);
        assert!(!html.contains("{{"), "a placeholder is left");
        assert!(html.contains(&csp()));
        assert_eq!(html.matches("</script>").count(), 2);
    }
}
