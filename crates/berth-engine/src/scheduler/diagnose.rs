//! Diagnose: why the nodes a cycle visited do not take the pod (the FitError), and what
//! an explanation says of each of them.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId};
use crate::diagnosis::{Diagnosis, FitError};
use crate::explain::{Explanation, RejectedBy, Rejection, ScoreValue, explain_nodes};
use crate::extender::Filtered;
use crate::filters::{PreparedFilters, RejectedAll, Status};
use crate::framework::{FailureKind, Reason};
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::profile::NamedFilter;

/// The nodes a cycle visited, and what it needs to say why each failed.
pub(super) struct Visited<'a> {
    pub cluster: &'a Cluster,
    pub filters: &'a [NamedFilter],
    pub prepared: &'a PreparedFilters<'a>,
    pub nominated: Option<&'a Nominator>,
    pub pod: &'a PodInfo,
    /// The first node visited, in visiting order.
    pub start: usize,
    /// How many nodes were visited.
    pub count: usize,
    /// The extenders' rejections of each node (explaining only).
    pub extender_rejections: FxHashMap<NodeId, Vec<Rejection>>,
}

impl Visited<'_> {
    /// The visited nodes, in visiting order.
    fn nodes(&self) -> Vec<NodeId> {
        let order = self.cluster.node_order();
        (0..self.count)
            .map(|i| order[(self.start + i) % order.len()])
            .collect()
    }

    /// The node's filter status, with its nominated pods as the cycle saw them.
    fn status(&self, id: NodeId) -> Status {
        let node = self.cluster.node(id);
        match self.nominated {
            Some(n) => self
                .prepared
                .status_with_nominated(node, n.for_node(id), self.pod),
            None => self.prepared.status(node),
        }
    }

    /// [`Visited::status`] with each reason's filter.
    fn attributed_status(&self, id: NodeId) -> Status {
        self.prepared.attributed_status(
            self.cluster.node(id),
            self.nominated.map(|n| n.for_node(id)),
            self.pod,
        )
    }

    /// Every reason the node failed, with the filter or extender that gave it.
    fn rejections(&self, id: NodeId) -> Vec<Rejection> {
        let s = self.attributed_status(id);
        let mut r: Vec<Rejection> = s
            .reasons
            .iter()
            .zip(&s.rules)
            .map(|(reason, rule)| Rejection {
                by: RejectedBy::Filter(self.filters[*rule].name.clone()),
                reason: reason.as_str().to_string(),
            })
            .collect();
        if let Some(more) = self.extender_rejections.get(&id) {
            r.extend(more.iter().cloned());
        }
        r
    }

    /// The FitError of a cycle that found no node: every visited node's reasons, counted,
    /// and the extenders' (`filtered`).
    pub fn fit_error(&self, filtered: Option<&Filtered>) -> FitError {
        // Counted under the reasons themselves (a copy or a reference count each) and
        // turned into text once per distinct reason: every pod that fits nowhere comes here
        // with every visited node.
        let mut by_filter: FxHashMap<(usize, Reason), usize> = FxHashMap::default();
        let mut diagnosis = Diagnosis::default();
        for id in self.nodes() {
            let s = self.status(id);
            if let [filter] = s.rejected_by[..] {
                // One failing filter (always, unless alwaysCheckAllPredicates) gave them all.
                for r in s.reasons {
                    *by_filter.entry((filter, r)).or_insert(0) += 1;
                }
            } else {
                let attributed = self.attributed_status(id);
                for (r, filter) in attributed.reasons.into_iter().zip(attributed.rules) {
                    *by_filter.entry((filter, r)).or_insert(0) += 1;
                }
            }
            diagnosis.filters.extend(s.rejected_by);
            if s.kind == Some(FailureKind::UnschedulableAndUnresolvable) {
                diagnosis.unresolvable.push(id);
            }
        }
        let mut reasons = BTreeMap::new();
        for ((filter, r), n) in by_filter {
            let text = r.as_str().to_string();
            *reasons.entry(text.clone()).or_insert(0) += n;
            *diagnosis.by_filter.entry((filter, text)).or_insert(0) += n;
        }
        // Upstream counts every message an extender gave, under the node it named; its
        // FailedAndUnresolvableNodes are left out of preemption.
        if let Some(f) = filtered {
            for (_, _, message) in &f.reasons {
                *reasons.entry(message.clone()).or_insert(0) += 1;
            }
            diagnosis.unresolvable.extend(&f.unresolvable);
        }
        diagnosis.unresolvable.sort_unstable();
        diagnosis.unresolvable.dedup();
        diagnosis.filters.sort_unstable();
        diagnosis.filters.dedup();
        FitError {
            num_all_nodes: self.cluster.node_count(),
            reasons,
            diagnosis,
        }
    }

    /// The explanation: each visited node's rejections, and the scores of `scored` (row
    /// `i` is `scored[i]`'s).
    pub fn explanation(
        &self,
        scored: &[NodeId],
        row: impl Fn(usize) -> (Vec<ScoreValue>, i64),
        not_evaluated: usize,
    ) -> Explanation {
        explain_nodes(
            self.cluster,
            &self.nodes(),
            |id| self.rejections(id),
            scored,
            row,
            not_evaluated,
        )
    }
}

/// The FitError (and explanation, if asked) of a pod a filter rejected everywhere while
/// being prepared.
pub(super) fn rejected_everywhere(
    cluster: &Cluster,
    filters: &[NamedFilter],
    rejected: &RejectedAll,
    explain: bool,
) -> (FitError, Option<Explanation>) {
    let all = cluster.node_count();
    let counts = rejected
        .reasons
        .iter()
        .map(|r| (r.as_str().to_string(), all))
        .collect();
    let mut unresolvable = Vec::new();
    if rejected.kind == FailureKind::UnschedulableAndUnresolvable {
        unresolvable = cluster.node_order().to_vec();
        unresolvable.sort_unstable();
    }
    let name = &filters[rejected.filter].name;
    let rejections = || -> Vec<Rejection> {
        rejected
            .reasons
            .iter()
            .map(|r| Rejection {
                by: RejectedBy::Filter(name.to_string()),
                reason: r.as_str().to_string(),
            })
            .collect()
    };
    let by_filter = rejected
        .reasons
        .iter()
        .map(|r| ((rejected.filter, r.as_str().to_string()), all))
        .collect();
    let fit = FitError {
        num_all_nodes: all,
        reasons: counts,
        diagnosis: Diagnosis {
            by_filter,
            filters: vec![rejected.filter],
            unresolvable,
        },
    };
    let explanation = explain.then(|| {
        explain_nodes(
            cluster,
            cluster.node_order(),
            |_| rejections(),
            &[],
            unscored,
            0,
        )
    });
    (fit, explanation)
}

/// The row function of a cycle that scored nothing.
pub(super) fn unscored(_: usize) -> (Vec<ScoreValue>, i64) {
    (Vec::new(), 0)
}
