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
/// namespace `ns` matching every selector, found through the label index; their total; and
/// the nodes running any, so callers need not scan every node for them.
pub(crate) fn count_per_node(
    cluster: &Cluster,
    ns: Sym,
    selectors: &[&Selector],
) -> (Vec<u32>, u64, Vec<NodeId>) {
    let mut counts = vec![0u32; cluster.node_slots()];
    let mut total = 0u64;
    let mut occupied = Vec::new();
    let Some(first) = selectors.first() else {
        return (counts, total, occupied);
    };
    let narrowest = selectors
        .iter()
        .find(|s| s.index_keys().is_some())
        .unwrap_or(first);
    for id in cluster.candidates_for(narrowest) {
        let p = cluster.pod(id);
        let Some(node) = p.node else { continue };
        if p.namespace != ns || p.terminating() || !selectors.iter().all(|s| s.matches(&p.labels)) {
            continue;
        }
        if let Some(c) = counts.get_mut(node.0 as usize) {
            if *c == 0 {
                occupied.push(node);
            }
            *c += 1;
            total += 1;
        }
    }
    (counts, total, occupied)
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
        let (counts, total, _) = count_per_node(ctx.cluster, ctx.pod.namespace, &selectors);
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
