//! ServiceAntiAffinity (policy argument `serviceAntiAffinity{label}`, v1.22 ServiceAffinity
//! score): spread a service's pods across the values of node labels.
//!
//! v1.22 folds every `serviceAntiAffinity` entry of a policy into one plugin over all their
//! labels (weight: the entries' common weight times their number); the registry does the same
//! and gives this rule the labels.
//!
//! The raw score of a node is the number of non-terminating pods of the pod's namespace on it
//! that match the selector of the first Service selecting the pod (first in the order the
//! cluster received the Services; upstream takes the lister's order, which is unspecified).
//! Without such a Service, or with an empty selector, every raw score is 0. Normalisation over
//! the feasible nodes, per label: with `N` the sum of raw scores over all of them and `c` the
//! sum over those sharing this node's label value, a node gets `100 * (N - c) / N` (100 when
//! `N` is 0), nothing when it lacks the label; each label's share is divided by the number of
//! labels and summed in float arithmetic, then truncated once.

use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::Sym;
use crate::model::SelectorKind;
use crate::rules::selector_spread::count_per_node;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::service_affinity::UPSTREAM_PLUGIN;

/// The rule.
pub struct ServiceAntiAffinity {
    labels: Vec<String>,
}

impl ServiceAntiAffinity {
    /// A rule spreading service pods across the values of each of `labels` (one per policy
    /// entry, in file order).
    pub fn new(labels: Vec<String>) -> Self {
        ServiceAntiAffinity { labels }
    }
}

struct Score<'a> {
    cluster: &'a Cluster,
    /// The labels that some object uses; a label no object uses is on no node and adds
    /// nothing, but still counts in `labels`.
    keys: Vec<Sym>,
    /// The number of labels, the divisor of each label's share.
    labels: usize,
    /// Matching pods per node (indexed by `NodeId.0`); None when nothing can match.
    counts: Option<Vec<u32>>,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The matching pods on the node itself (label values are summed while normalising).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.counts
            .as_ref()
            .and_then(|c| c.get(node.id.0 as usize))
            .copied()
            .map_or(0, i64::from)
    }

    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let total: i64 = scores.iter().sum();
        let max = MAX_NODE_SCORE as f64;
        let mut result = vec![0f64; nodes.len()];
        for key in &self.keys {
            let column = self.cluster.label_column(*key).unwrap_or_default();
            let value = |id: &NodeId| column.get(id.0 as usize).copied().flatten();
            // A topology label has few distinct values (zones, racks): a small table searched
            // linearly beats hashing once per node.
            let mut by_value: Vec<(Sym, i64)> = Vec::new();
            for (id, s) in nodes.iter().zip(scores.iter()) {
                if let Some(v) = value(id) {
                    match by_value.iter_mut().find(|(seen, _)| *seen == v) {
                        Some((_, total)) => *total += *s,
                        None => by_value.push((v, *s)),
                    }
                }
            }
            for (id, r) in nodes.iter().zip(result.iter_mut()) {
                let Some(v) = value(id) else { continue };
                let share = if total <= 0 {
                    max
                } else {
                    let here = by_value
                        .iter()
                        .find(|(seen, _)| *seen == v)
                        .map_or(0, |(_, total)| *total);
                    max * ((total - here) as f64 / total as f64)
                };
                *r += share / self.labels as f64;
            }
        }
        for (s, r) in scores.iter_mut().zip(result) {
            *s = r as i64;
        }
    }
}

impl ScoreRule for ServiceAntiAffinity {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let cluster = ctx.cluster;
        let keys: Vec<Sym> = self
            .labels
            .iter()
            .filter_map(|l| cluster.interner().get(l))
            .collect();
        // Labels no object uses are on no node: every node scores 0.
        if keys.is_empty() {
            return ScorePrep::Constant(0);
        }
        let selector = cluster
            .selecting(ctx.pod, Some(SelectorKind::Service))
            .next()
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty());
        let counts = selector
            .map(|s| count_per_node(cluster, ctx.pod.namespace, &[s]))
            .filter(|(_, total)| *total > 0)
            .map(|(counts, _)| counts);
        ScorePrep::PerNode(Box::new(Score {
            cluster,
            keys,
            labels: self.labels.len(),
            counts,
        }))
    }
}

#[cfg(test)]
mod tests;
