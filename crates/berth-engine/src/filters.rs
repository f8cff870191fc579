//! A pod's prepared filters, asked about real or hypothetical nodes.
//!
//! Besides the fused pass of the cycle (in `scheduler.rs`), filters are run on copies of one
//! node with pods added or removed: with the node's nominated pods (upstream's
//! `RunFilterPluginsWithNominatedPods`) and, in preemption, without the victims. Such a copy
//! is one `NodeInfo` clone; the cluster itself is never changed or cloned.

use crate::cluster::NodeInfo;
use crate::framework::{FailureKind, NodeCheck, Reason};
use crate::nominator::NominatedPod;
use crate::podinfo::PodInfo;
use crate::scheduler::NamedFilter;

/// The checks of one pod, each with the index of the filter that produced it.
pub(crate) struct PreparedFilters<'a> {
    pub checks: Vec<Box<dyn NodeCheck + 'a>>,
    pub owners: Vec<usize>,
    pub filters: &'a [NamedFilter],
    pub check_all: bool,
}

/// A node's verdict with its reasons, as upstream's merged filter status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Status {
    /// Reasons in policy order; empty when the node passes.
    pub reasons: Vec<Reason>,
    /// The kind of the failure (None when the node passes).
    pub kind: Option<FailureKind>,
}

impl Status {
    pub fn passes(&self) -> bool {
        self.kind.is_none()
    }
}

impl PreparedFilters<'_> {
    /// Whether `node` passes every check (without masks: they describe the cluster's nodes
    /// as they are, not hypothetical copies).
    pub fn passes(&self, node: &NodeInfo) -> bool {
        passes_all(&self.checks, node)
    }

    /// The node's status, evaluated as the policy says: every filter when
    /// `alwaysCheckAllPredicates`, else up to the first failing one. A failure is
    /// UnschedulableAndUnresolvable when any failing filter says so (upstream's status merge).
    pub fn status(&self, node: &NodeInfo) -> Status {
        let mut reasons = Vec::new();
        let mut kind = None;
        for (c, owner) in self.checks.iter().zip(&self.owners) {
            let from = reasons.len();
            if c.check(node, &mut reasons) {
                continue;
            }
            let rule = &self.filters[*owner].rule;
            let k = reasons[from..]
                .iter()
                .map(|r| rule.failure_kind(r))
                .max()
                .unwrap_or(FailureKind::Unschedulable);
            kind = kind.max(Some(k));
            if !self.check_all {
                break;
            }
        }
        Status { reasons, kind }
    }

    /// Upstream's `RunFilterPluginsWithNominatedPods` for `pod` on `node` (the cluster's node
    /// or a hypothetical copy): when `nominated` holds pods of equal or higher priority (other
    /// than `pod`), the filters run with them added to a copy of the node, and, if that
    /// passes, once more on the node as given; the node must pass both. The status is the
    /// failing pass's (the first pass's when both fail).
    pub fn status_with_nominated(
        &self,
        node: &NodeInfo,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> Status {
        if let Some(with) = with_nominated(node, nominated, pod) {
            let first = self.status(&with);
            if !first.passes() {
                return first;
            }
        }
        self.status(node)
    }

    /// [`PreparedFilters::status_with_nominated`] without reasons.
    pub fn passes_with_nominated(
        &self,
        node: &NodeInfo,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> bool {
        passes_nominated(&self.checks, node, nominated, pod) && self.passes(node)
    }
}

/// Whether `node` passes every check.
fn passes_all(checks: &[Box<dyn NodeCheck + '_>], node: &NodeInfo) -> bool {
    let mut scratch = Vec::new();
    checks.iter().all(|c| {
        scratch.clear();
        c.check(node, &mut scratch)
    })
}

/// The first pass of [`PreparedFilters::status_with_nominated`], without reasons: whether
/// the node passes with its nominated pods of at least `pod`'s priority (true when there
/// are none). The cycle asks it of nodes that pass on their own.
pub(crate) fn passes_nominated(
    checks: &[Box<dyn NodeCheck + '_>],
    node: &NodeInfo,
    nominated: &[NominatedPod],
    pod: &PodInfo,
) -> bool {
    match with_nominated(node, nominated, pod) {
        Some(with) => passes_all(checks, &with),
        None => true,
    }
}

/// A copy of `node` with the nominated pods of at least `pod`'s priority added, or None
/// when there are none (upstream's `addNominatedPods`).
pub(crate) fn with_nominated(
    node: &NodeInfo,
    nominated: &[NominatedPod],
    pod: &PodInfo,
) -> Option<NodeInfo> {
    let mut added = nominated
        .iter()
        .filter(|n| counts_against(n, pod))
        .peekable();
    added.peek()?;
    let mut copy = node.clone();
    for n in added {
        copy.add_pod(&n.info, None);
    }
    Some(copy)
}

/// Whether a nominated pod counts against `pod`: equal or higher priority, and not `pod`
/// itself (upstream compares UIDs; pods here are keyed by namespace and name).
fn counts_against(n: &NominatedPod, pod: &PodInfo) -> bool {
    n.priority() >= pod.pod.priority
        && !(n.info.namespace == pod.namespace && n.info.pod.meta.name == pod.pod.meta.name)
}
