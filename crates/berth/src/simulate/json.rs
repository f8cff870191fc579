//! `simulate --output json`: one JSON object per pod.

use berth_engine::simulation::{Outcome, PreemptionReport};
use berth_engine::{Decision, Explanation};
use serde_json::{Value, json};

use super::RuleKinds;

/// The pod's line: where it went (or why nowhere), its preemption, and with `details`
/// (`--explain`) every evaluated node's rejections and scores.
pub(super) fn line(o: &Outcome, rules: &RuleKinds, details: bool) -> Value {
    let mut v = json!({"pod": o.pod, "node": o.node, "message": o.message()});
    if !o.gates.is_empty() {
        v["schedulingGates"] = json!(o.gates);
    }
    if o.nominated_node.is_some() {
        v["nominatedNode"] = json!(o.nominated_node);
        v["victims"] = json!(o.victims);
    }
    if !details {
        return v;
    }
    if let Some(e) = o.decision.as_ref().and_then(Decision::explanation) {
        v["explain"] = explain(e, o.node.as_deref(), rules);
    }
    if let Some(p) = &o.preemption {
        v["explain"]["preemption"] = preemption(p);
    }
    v
}

/// What a preemption attempt found: its victims with why, every candidate with its victims
/// and why it lost, the nodes that could not be freed with why.
pub(super) fn preemption(p: &PreemptionReport) -> Value {
    let victims: Vec<Value> = p
        .victims
        .iter()
        .map(|(pod, why)| json!({"pod": pod, "why": why}))
        .collect();
    let candidates: Vec<Value> = p
        .candidates
        .iter()
        .map(|c| {
            json!({"node": c.node, "victims": c.victims, "pdbViolations": c.pdb_violations,
                   "chosen": c.lost_on.is_none(), "lostOn": c.lost_on})
        })
        .collect();
    let rejected: Vec<Value> = p
        .rejected
        .iter()
        .map(|(node, why)| json!({"node": node, "why": why}))
        .collect();
    json!({"notEligible": p.not_eligible, "victims": victims, "candidates": candidates,
           "rejected": rejected, "unresolvableNodes": p.unresolvable,
           "extenders": p.extenders})
}

/// Each node in visiting order: `rejections` (what rejected it: `rule`, its `kind` and the
/// `reason`), or its `scores` per priority (`raw` before normalisation, `normalized` to
/// 0..100, `weighted` by the priority's weight), `total` and `gap` to the chosen node's total.
fn explain(e: &Explanation, chosen: Option<&str>, rules: &RuleKinds) -> Value {
    let chosen_total = e
        .nodes
        .iter()
        .find(|n| Some(n.node.as_str()) == chosen)
        .and_then(|n| n.total);
    let nodes: Vec<Value> = e
        .nodes
        .iter()
        .map(|n| {
            let mut v = json!({"node": n.node, "feasible": n.feasible()});
            if !n.feasible() {
                let rejections: Vec<Value> = n
                    .rejections
                    .iter()
                    .map(|r| json!({"rule": r.by.name(), "kind": rules.kind(&r.by), "reason": r.reason}))
                    .collect();
                v["rejections"] = json!(rejections);
            }
            if let Some(total) = n.total {
                let scores: Vec<Value> = e
                    .score_rules
                    .iter()
                    .zip(&n.scores)
                    .map(|((name, weight), s)| {
                        json!({"priority": name, "weight": weight, "raw": s.raw,
                               "normalized": s.normalized, "weighted": s.weighted})
                    })
                    .collect();
                v["scores"] = json!(scores);
                v["total"] = json!(total);
                if let Some(best) = chosen_total {
                    v["gap"] = json!(total.saturating_sub(best));
                }
            }
            v
        })
        .collect();
    let mut explain = json!({"nodes": nodes, "notEvaluated": e.not_evaluated});
    if e.not_evaluated > 0 {
        explain["notEvaluatedBecause"] = json!(super::table::NotEvaluated::of(e).key());
    }
    explain
}
