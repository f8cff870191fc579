//! A pod's prepared filters, asked about real or hypothetical nodes.
//!
//! Besides the fused pass of the cycle (in `scheduler/feasible.rs`), filters are run on copies of one
//! node with pods added or removed: with the node's nominated pods (upstream's
//! `RunFilterPluginsWithNominatedPods`) and, in preemption, without the victims. Such a copy
//! ([`NodeCopy`]) is one `NodeInfo` clone, which carries the node's own aggregates
//! (resources, ports, pod IPs), plus each check's changes to the pod counts it prepared over
//! the whole cluster (upstream's copy of the cycle state after the PreFilter extensions'
//! AddPod/RemovePod: inter-pod affinity and topology spread counts). The cluster itself is
//! never changed or cloned.

use std::time::{Duration, Instant};

use crate::cluster::{NodeInfo, PodId};
use crate::framework::{CountChanges, CycleContext, FailureKind, FilterPrep, NodeCheck, Reason};
use crate::nominator::NominatedPod;
use crate::podinfo::PodInfo;
use crate::profile::NamedFilter;

/// The checks of one pod, each with the index of the filter that produced it.
pub(crate) struct PreparedFilters<'a> {
    pub checks: Vec<Box<dyn NodeCheck + 'a>>,
    pub owners: Vec<usize>,
    pub filters: &'a [NamedFilter],
    pub check_all: bool,
}

/// A filter that rejected the pod everywhere while it was prepared.
#[derive(Debug)]
pub(crate) struct RejectedAll {
    /// Its index into the profile's filters.
    pub filter: usize,
    /// Its reasons, given to every node.
    pub reasons: Vec<Reason>,
    /// Their kind (the most severe).
    pub kind: FailureKind,
}

/// A node's verdict with its reasons, as upstream's merged filter status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Status {
    /// Reasons in policy order; empty when the node passes.
    pub reasons: Vec<Reason>,
    /// For each reason, the index (into the policy's filters) of the filter that gave it.
    /// Filled only by the attributing method; empty otherwise, so the paths that need no
    /// attribution (or, as FitErrors, only where several filters failed) pay nothing for it.
    pub rules: Vec<usize>,
    /// The kind of the failure (None when the node passes).
    pub kind: Option<FailureKind>,
    /// The filters that failed (indices into the scheduler's filters), in policy order.
    pub rejected_by: Vec<usize>,
}

impl Status {
    pub fn passes(&self) -> bool {
        self.kind.is_none()
    }
}

/// A copy of one cluster node with pods added or removed, and what that changed in each
/// prepared check's pod counts (indexed like the checks).
#[derive(Clone)]
pub(crate) struct NodeCopy {
    pub node: NodeInfo,
    changes: Vec<CountChanges>,
}

/// A node as the filters see it: the cluster's node, or a copy with count changes.
#[derive(Clone, Copy)]
enum View<'n> {
    Real(&'n NodeInfo),
    Copy(&'n NodeCopy),
}

impl View<'_> {
    /// Check `i` on this node.
    #[inline]
    fn check(&self, i: usize, c: &dyn NodeCheck, reasons: &mut Vec<Reason>) -> bool {
        match self {
            View::Real(n) => c.check(n, reasons),
            View::Copy(copy) => c.check_changed(&copy.node, &copy.changes[i], reasons),
        }
    }
}

impl<'a> PreparedFilters<'a> {
    /// Prepares every filter for `pod` (upstream's PreFilter), passing each one's time to
    /// `timed`; a filter that rejects the pod everywhere ends preparation.
    pub fn prepare(
        filters: &'a [NamedFilter],
        check_all: bool,
        ctx: CycleContext<'a>,
        mut timed: impl FnMut(usize, Duration),
    ) -> Result<Self, RejectedAll> {
        let mut prepared = PreparedFilters {
            checks: Vec::new(),
            owners: Vec::new(),
            filters,
            check_all,
        };
        // One clock read per rule: each rule's time ends where the next one's starts (the
        // reads were a few percent of a cycle of equal pods).
        let mut started = Instant::now();
        for (index, f) in filters.iter().enumerate() {
            let prep = f.rule.prepare(ctx);
            let now = Instant::now();
            timed(index, now - started);
            started = now;
            match prep {
                FilterPrep::Skip => {}
                FilterPrep::Check(c) => {
                    prepared.checks.push(c);
                    prepared.owners.push(index);
                }
                FilterPrep::RejectAll(reasons) => {
                    let kind = reasons
                        .iter()
                        .map(|r| f.rule.failure_kind(r))
                        .max()
                        .unwrap_or(FailureKind::Unschedulable);
                    return Err(RejectedAll {
                        filter: index,
                        reasons,
                        kind,
                    });
                }
            }
        }
        Ok(prepared)
    }

    /// A copy of `node` with no pods changed yet.
    pub fn copy_of(&self, node: &NodeInfo) -> NodeCopy {
        NodeCopy {
            node: node.clone(),
            changes: vec![CountChanges::default(); self.checks.len()],
        }
    }

    /// Adds `pod` to the copy: its aggregates, and each check's counts (upstream's
    /// `NodeInfo.AddPodInfo` and `RunPreFilterExtensionAddPod`). `id` is None for a pod
    /// not in the cluster (a nominated pod).
    pub fn add_pod(&self, copy: &mut NodeCopy, pod: &PodInfo, id: Option<PodId>) {
        copy.node.add_pod(pod, id);
        for (c, changes) in self.checks.iter().zip(&mut copy.changes) {
            c.count_pod(changes, pod, &copy.node, 1);
        }
    }

    /// Removes cluster pod `id` from the copy (upstream's `NodeInfo.RemovePod` and
    /// `RunPreFilterExtensionRemovePod`).
    pub fn remove_pod(&self, copy: &mut NodeCopy, pod: &PodInfo, id: PodId) {
        copy.node.remove_pod(pod, id);
        for (c, changes) in self.checks.iter().zip(&mut copy.changes) {
            c.count_pod(changes, pod, &copy.node, -1);
        }
    }

    /// Whether every check's verdict follows from the node and the pod alone.
    pub fn node_local(&self) -> bool {
        self.checks.iter().all(|c| c.node_local())
    }

    /// Whether `node` passes every check (without masks: callers ask about nodes one at a
    /// time).
    pub fn passes(&self, node: &NodeInfo) -> bool {
        self.passes_view(View::Real(node))
    }

    fn passes_view(&self, node: View<'_>) -> bool {
        let mut scratch = Vec::new();
        self.checks.iter().enumerate().all(|(i, c)| {
            scratch.clear();
            node.check(i, c.as_ref(), &mut scratch)
        })
    }

    /// The node's status, evaluated as the policy says: every filter when
    /// `alwaysCheckAllPredicates`, else up to the first failing one. A failure is
    /// UnschedulableAndUnresolvable when any failing filter says so (upstream's status merge).
    pub fn status(&self, node: &NodeInfo) -> Status {
        self.status_view(View::Real(node), false)
    }

    /// [`PreparedFilters::status`] (or, with `nominated`,
    /// [`PreparedFilters::status_with_nominated`]) with each reason's filter in
    /// [`Status::rules`].
    pub fn attributed_status(
        &self,
        node: &NodeInfo,
        nominated: Option<&[NominatedPod]>,
        pod: &PodInfo,
    ) -> Status {
        match nominated {
            Some(n) => self.nominated_status(View::Real(node), n, pod, true),
            None => self.status_view(View::Real(node), true),
        }
    }

    fn status_view(&self, node: View<'_>, attribute: bool) -> Status {
        let mut reasons = Vec::new();
        let mut rules = Vec::new();
        let mut kind = None;
        let mut rejected_by = Vec::new();
        for (i, (c, owner)) in self.checks.iter().zip(&self.owners).enumerate() {
            let from = reasons.len();
            if node.check(i, c.as_ref(), &mut reasons) {
                continue;
            }
            if attribute {
                rules.resize(reasons.len(), *owner);
            }
            let rule = &self.filters[*owner].rule;
            let k = reasons[from..]
                .iter()
                .map(|r| rule.failure_kind(r))
                .max()
                .unwrap_or(FailureKind::Unschedulable);
            kind = kind.max(Some(k));
            rejected_by.push(*owner);
            if !self.check_all {
                break;
            }
        }
        Status {
            reasons,
            rules,
            kind,
            rejected_by,
        }
    }

    /// Upstream's `RunFilterPluginsWithNominatedPods` for `pod` on the cluster's `node`:
    /// when `nominated` holds pods of equal or higher priority (other than `pod`), the
    /// filters run with them added to a copy of the node, and, if that passes, once more on
    /// the node as it is; the node must pass both. The status is the failing pass's (the
    /// first pass's when both fail).
    pub fn status_with_nominated(
        &self,
        node: &NodeInfo,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> Status {
        self.nominated_status(View::Real(node), nominated, pod, false)
    }

    /// [`PreparedFilters::status_with_nominated`] on a copy of a node.
    pub fn copy_status_with_nominated(
        &self,
        copy: &NodeCopy,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> Status {
        self.nominated_status(View::Copy(copy), nominated, pod, false)
    }

    fn nominated_status(
        &self,
        node: View<'_>,
        nominated: &[NominatedPod],
        pod: &PodInfo,
        attribute: bool,
    ) -> Status {
        if let Some(with) = self.with_nominated(node, nominated, pod) {
            let first = self.status_view(View::Copy(&with), attribute);
            if !first.passes() {
                return first;
            }
        }
        self.status_view(node, attribute)
    }

    /// [`PreparedFilters::copy_status_with_nominated`] without reasons.
    pub fn copy_passes_with_nominated(
        &self,
        copy: &NodeCopy,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> bool {
        let node = View::Copy(copy);
        self.with_nominated(node, nominated, pod)
            .is_none_or(|with| self.passes_view(View::Copy(&with)))
            && self.passes_view(node)
    }

    /// The first pass of [`PreparedFilters::status_with_nominated`], without reasons:
    /// whether the cluster's `node` passes with its nominated pods of at least `pod`'s
    /// priority (true when there are none). The cycle asks it of nodes that pass on their
    /// own.
    pub fn passes_nominated(
        &self,
        node: &NodeInfo,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> bool {
        self.with_nominated(View::Real(node), nominated, pod)
            .is_none_or(|with| self.passes_view(View::Copy(&with)))
    }

    /// A copy of `node` with the nominated pods of at least `pod`'s priority added as whole
    /// pods (aggregates and counts), or None when there are none (upstream's
    /// `addNominatedPods`).
    fn with_nominated(
        &self,
        node: View<'_>,
        nominated: &[NominatedPod],
        pod: &PodInfo,
    ) -> Option<NodeCopy> {
        let mut added = nominated
            .iter()
            .filter(|n| counts_against(n, pod))
            .peekable();
        added.peek()?;
        let mut copy = match node {
            View::Real(n) => self.copy_of(n),
            View::Copy(c) => c.clone(),
        };
        for n in added {
            self.add_pod(&mut copy, &n.info, None);
        }
        Some(copy)
    }
}

/// Whether a nominated pod counts against `pod`: equal or higher priority, and not `pod`
/// itself (upstream compares UIDs; pods here are keyed by namespace and name).
fn counts_against(n: &NominatedPod, pod: &PodInfo) -> bool {
    n.priority() >= pod.pod.priority
        && !(n.info.namespace == pod.namespace && n.info.pod.meta.name == pod.pod.meta.name)
}
