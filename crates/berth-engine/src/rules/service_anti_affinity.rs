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

use std::sync::OnceLock;

use crate::cluster::{Cluster, NodeId, NodeInfo};

use crate::framework::{
    CycleContext, FeasibleNodes, Grouped, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule,
};
use crate::labels::Sym;
use crate::model::SelectorKind;
use crate::rules::domain_rows::{DomainRows, Domains};
use crate::rules::selector_spread::{count_occupied, dense_counts};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::service_affinity::UPSTREAM_PLUGIN;

/// The rule.
pub struct ServiceAntiAffinity {
    labels: Vec<String>,
    /// The feasible nodes' values of each label, kept for the next pod's cycle over the
    /// same nodes.
    rows: DomainRows,
}

impl ServiceAntiAffinity {
    /// A rule spreading service pods across the values of each of `labels` (one per policy
    /// entry, in file order).
    pub fn new(labels: Vec<String>) -> Self {
        ServiceAntiAffinity {
            labels,
            rows: DomainRows::default(),
        }
    }
}

struct Score<'a> {
    cluster: &'a Cluster,
    rows: &'a DomainRows,
    /// The labels that some object uses; a label no object uses is on no node and adds
    /// nothing, but still counts in `labels`.
    keys: Vec<Sym>,
    /// The number of labels, the divisor of each label's share.
    labels: usize,
    /// Matching pods per node (indexed by `NodeId.0`), built from `occupied` by the first
    /// cycle that scores node by node (a cycle that takes the grouped scores reads only the
    /// few nodes running some).
    counts: OnceLock<Vec<u32>>,
    /// The nodes running matching pods, with how many each.
    occupied: Vec<(NodeId, u32)>,
}

impl Score<'_> {
    /// Matching pods by node slot.
    fn counts(&self) -> &[u32] {
        self.counts
            .get_or_init(|| dense_counts(self.cluster, &self.occupied))
    }
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The matching pods on the node itself (label values are summed while normalising).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    /// The raw score is the prepared count by node slot.
    fn keeps_raw(&self) -> bool {
        false
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.score_at(node.id.0 as usize, node)
    }

    /// The count by slot alone: the walk need not touch the node.
    #[inline]
    fn score_at(&self, slot: usize, _node: &NodeInfo) -> i64 {
        if self.occupied.is_empty() {
            return 0;
        }
        self.counts().get(slot).copied().map_or(0, i64::from)
    }

    fn score_batch(&self, _cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        if self.occupied.is_empty() {
            out.fill(0);
            return;
        }
        let counts = self.counts();
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = counts.get(id.0 as usize).copied().map_or(0, i64::from);
        }
    }

    /// The label, when the entries name one.
    fn group_key(&self) -> Option<Sym> {
        match self.keys.as_slice() {
            [key] => Some(*key),
            _ => None,
        }
    }

    /// By the label's value, with one label: a node's score is its value's share.
    fn grouped(&self, feasible: &dyn FeasibleNodes) -> Option<Grouped> {
        let key = self.group_key()?;
        let (values, _) = feasible.by_value(key)?;
        let mut by_value: Vec<i64> = vec![0; values.len()];
        let mut total = 0;
        let column = self.cluster.label_column(key);
        for (id, count) in self
            .occupied
            .iter()
            .filter(|(id, _)| feasible.contains(*id))
        {
            let count = i64::from(*count);
            total += count;
            let value = column.and_then(|c| c.get(id.0 as usize).copied().flatten());
            if let Some(here) = value
                .and_then(|v| values.iter().position(|(seen, _)| *seen == v))
                .and_then(|at| by_value.get_mut(at))
            {
                *here += count;
            }
        }
        let shares = self
            .shares_of(&by_value, total)
            .map(|share| (0f64 + share) as i64);
        Some(Grouped {
            table: values.iter().map(|(v, _)| *v).zip(shares).collect(),
            unlabelled: 0,
            apart: Vec::new(),
        })
    }

    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let total: i64 = scores.iter().sum();
        if let [key] = self.keys.as_slice() {
            // One label (the usual policy entry): a node's score is its value's share, so
            // each value's is converted once and the nodes read it.
            let domains = self.rows.of(self.cluster, *key, nodes);
            let finals: Vec<i64> = self
                .shares(&domains, scores, total)
                .into_iter()
                .map(|share| (0f64 + share) as i64)
                .collect();
            for (row, s) in domains.of.iter().zip(scores.iter_mut()) {
                *s = finals.get(*row as usize).copied().unwrap_or(0);
            }
            return;
        }
        let mut result = vec![0f64; nodes.len()];
        for key in &self.keys {
            // Each node's row in the table of the key's values: kept across a class's
            // cycles over the same nodes (see [`DomainRows`]).
            let domains = self.rows.of(self.cluster, *key, nodes);
            let shares = self.shares(&domains, scores, total);
            for (row, r) in domains.of.iter().zip(result.iter_mut()) {
                if let Some(share) = shares.get(*row as usize) {
                    *r += *share;
                }
            }
        }
        for (s, r) in scores.iter_mut().zip(result) {
            *s = r as i64;
        }
    }
}

impl Score<'_> {
    /// Each value's share of the score: 100 times the fraction of the service's pods on
    /// nodes with another value (100 when none runs), over the number of labels.
    fn shares(&self, domains: &Domains, scores: &[i64], total: i64) -> Vec<f64> {
        let mut by_value: Vec<i64> = vec![0; domains.values.len()];
        for (row, s) in domains.of.iter().zip(scores) {
            if let Some(here) = by_value.get_mut(*row as usize) {
                *here += *s;
            }
        }
        self.shares_of(&by_value, total).collect()
    }

    /// Each value's share from its matching pods (`by_value`) and theirs over every value
    /// (`total`).
    fn shares_of<'s>(&'s self, by_value: &'s [i64], total: i64) -> impl Iterator<Item = f64> + 's {
        let max = MAX_NODE_SCORE as f64;
        by_value.iter().map(move |here| {
            let share = if total <= 0 {
                max
            } else {
                max * ((total - here) as f64 / total as f64)
            };
            share / self.labels as f64
        })
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
            .first()
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty());
        let occupied = selector
            .map(|s| count_occupied(cluster, ctx.pod.namespace, &[s]))
            .unwrap_or_default();
        ScorePrep::PerNode(Box::new(Score {
            cluster,
            rows: &self.rows,
            keys,
            labels: self.labels.len(),
            counts: OnceLock::new(),
            occupied,
        }))
    }
}

#[cfg(test)]
mod tests;
