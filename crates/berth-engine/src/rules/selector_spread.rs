//! SelectorSpreadPriority (v1.22 SelectorSpread, classic behaviour with the
//! DefaultPodTopologySpread gate off): spread the pods of a service or controller over nodes
//! and zones.
//!
//! The selector (v1.22, PR #102236) is the selectors of every Service in the pod's namespace
//! that selects the pod, plus the selector of the pod's controller owner when that is a
//! ReplicationController, ReplicaSet or StatefulSet of the pod's namespace (looked up by name,
//! as upstream; other owners add nothing). All of them must match. A node's raw score is the
//! number of non-terminating pods of the pod's namespace on it that match. Normalisation over
//! the feasible nodes, in float arithmetic as upstream:
//! `f = 100 * (maxNode - count) / maxNode` (100 when maxNode is 0); when any feasible node has
//! a zone key and this one does, `f = f/3 + 2/3 * zoneScore` with the zone score computed the
//! same way from per-zone sums; the result is truncated.
//!
//! Pods with topology spread constraints are left to EvenPodsSpread: every node scores 0.
//! A pod without any selector, or whose selector matches no placed pod, scores 100 everywhere.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::{Selector, Sym};
use crate::model::SelectorKind;
use crate::podinfo::PodInfo;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "SelectorSpread";

/// The share of the score given to spreading across zones when nodes carry zone labels.
const ZONE_WEIGHTING: f64 = 2.0 / 3.0;

/// The rule.
pub struct SelectorSpread;

/// The owner kinds whose selector joins the spreading selector.
fn owner_kind(kind: &str) -> Option<SelectorKind> {
    match kind {
        "ReplicationController" => Some(SelectorKind::ReplicationController),
        "ReplicaSet" => Some(SelectorKind::ReplicaSet),
        "StatefulSet" => Some(SelectorKind::StatefulSet),
        _ => None,
    }
}

/// The non-empty selectors that together define the pods the pod spreads against: the
/// Services selecting it and its controller owner's selector (all must match, so their order
/// does not matter). Empty when nothing applies.
pub(crate) fn spread_selectors<'c>(cluster: &'c Cluster, pod: &PodInfo) -> Vec<&'c Selector> {
    let owner = pod
        .pod
        .controller()
        .and_then(|o| owner_kind(&o.kind).map(|k| (k, o.name.as_str())))
        .and_then(|(kind, name)| cluster.selector_object(kind, pod.namespace, name));
    cluster
        .selecting(pod, Some(SelectorKind::Service))
        .into_iter()
        .chain(owner)
        .filter_map(|o| o.selector.as_ref())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Per node (indexed by `NodeId.0`), the number of assigned, non-terminating pods of
/// namespace `ns` matching every selector, found through the label index; and their total.
pub(crate) fn count_per_node(
    cluster: &Cluster,
    ns: Sym,
    selectors: &[&Selector],
) -> (Vec<u32>, u64) {
    let occupied = count_occupied(cluster, ns, selectors);
    (
        dense_counts(cluster, &occupied),
        occupied.iter().map(|(_, c)| u64::from(*c)).sum(),
    )
}

/// The nodes running assigned, non-terminating pods of namespace `ns` matching every
/// selector, in the order their first such pod is found, each with how many it runs: few
/// nodes, so callers need not scan (or clear) a count for every node.
pub(crate) fn count_occupied(
    cluster: &Cluster,
    ns: Sym,
    selectors: &[&Selector],
) -> Vec<(NodeId, u32)> {
    let mut occupied: Vec<(NodeId, u32)> = Vec::new();
    let mut at: FxHashMap<NodeId, usize> = FxHashMap::default();
    let Some(first) = selectors.first() else {
        return occupied;
    };
    let narrowest = selectors
        .iter()
        .find(|s| s.index_keys().is_some())
        .unwrap_or(first);
    // The selectors a candidate must still be tested against: a Service and a ReplicaSet
    // over one workload often select alike, and the index answers some exactly (each test
    // reads the pod's labels from memory).
    let mut tests: Vec<&Selector> = Vec::with_capacity(selectors.len());
    for s in selectors {
        let answered = *s == *narrowest && s.indexed_exactly();
        if !answered && !tests.contains(s) {
            tests.push(s);
        }
    }
    for id in cluster.candidates_for(narrowest) {
        let p = cluster.pod(id);
        let Some(node) = p.node else { continue };
        if p.namespace != ns || p.terminating() || !tests.iter().all(|s| s.matches(&p.labels)) {
            continue;
        }
        match at.entry(node) {
            Entry::Occupied(e) => occupied[*e.get()].1 += 1,
            Entry::Vacant(e) => {
                e.insert(occupied.len());
                occupied.push((node, 1));
            }
        }
    }
    occupied
}

/// The counts of [`count_occupied`] by node slot (0 for every other node).
pub(crate) fn dense_counts(cluster: &Cluster, occupied: &[(NodeId, u32)]) -> Vec<u32> {
    let mut counts = vec![0u32; cluster.node_slots()];
    for (id, c) in occupied {
        if let Some(slot) = counts.get_mut(id.0 as usize) {
            *slot = *c;
        }
    }
    counts
}

struct Score<'a> {
    cluster: &'a Cluster,
    counts: Vec<u32>,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The matching pods on the node itself (zones are summed while normalising).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.counts
            .get(node.id.0 as usize)
            .copied()
            .map_or(0, i64::from)
    }

    fn score_batch(&self, _cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = self.counts.get(id.0 as usize).copied().map_or(0, i64::from);
        }
    }

    /// The raw score is the prepared count by node slot.
    fn keeps_raw(&self) -> bool {
        false
    }

    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let max_node = scores.iter().copied().max().unwrap_or(0).max(0);
        let zone_of = self.cluster.zone_slots();
        let zone = |id: &NodeId| zone_of[id.0 as usize];
        // Per zone: the summed count and whether any feasible node is in it.
        let mut by_zone: Vec<(i64, bool)> = vec![(0, false); self.cluster.zone_count()];
        for (id, s) in nodes.iter().zip(scores.iter()) {
            if let Some(z) = by_zone.get_mut(zone(id) as usize) {
                z.0 += *s;
                z.1 = true;
            }
        }
        let max_zone = by_zone
            .iter()
            .filter(|(_, seen)| *seen)
            .map(|(count, _)| *count)
            .max()
            .unwrap_or(0)
            .max(0);
        let max = MAX_NODE_SCORE as f64;
        let scaled = |highest: i64, v: i64| {
            if highest > 0 {
                max * ((highest - v) as f64 / highest as f64)
            } else {
                max
            }
        };
        for (id, s) in nodes.iter().zip(scores.iter_mut()) {
            let mut f = scaled(max_node, *s);
            if let Some((count, _)) = by_zone.get(zone(id) as usize) {
                let zone_score = scaled(max_zone, *count);
                f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score;
            }
            *s = f as i64;
        }
    }
}

impl ScoreRule for SelectorSpread {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        if !ctx.pod.pod.topology_spread_constraints.is_empty() {
            return ScorePrep::Constant(0);
        }
        let selectors = spread_selectors(ctx.cluster, ctx.pod);
        if selectors.is_empty() {
            return ScorePrep::Constant(MAX_NODE_SCORE);
        }
        let (counts, total) = count_per_node(ctx.cluster, ctx.pod.namespace, &selectors);
        if total == 0 {
            return ScorePrep::Constant(MAX_NODE_SCORE);
        }
        ScorePrep::PerNode(Box::new(Score {
            cluster: ctx.cluster,
            counts,
        }))
    }
}

#[cfg(test)]
mod tests;
