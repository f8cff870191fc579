//! One pod's attempt in upstream's order (schedule_one.go): decide; where the pod fits
//! nowhere, the PostFilter (preemption); where it fits, Reserve, then assume it onto its
//! node. `berth simulate` and `berth run` both go through [`schedule_one`]; what evicting
//! victims and assigning a pod mean beyond the cluster is theirs ([`Effects`]): `simulate`
//! removes the victims at once and tries the pod again, the daemon asks the API server for
//! their deletion and waits, and hands an assumed pod to its binder.

use crate::cluster::{Cluster, ClusterError, NodeId};
use crate::diagnosis::Candidate;
use crate::framework::Reservation;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::preemption::{DisruptionBudgets, PreemptionExplanation, PreemptionOutcome};
use crate::scheduler::{Decision, Detail, Scheduler};

/// What became of a preemption's victims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// They are gone from the cluster: the pod is tried again at once.
    Done,
    /// Their deletion was asked for: the pod waits, nominated to their node, for a later
    /// attempt.
    Requested,
}

/// What an attempt's steps do beyond the engine's cluster and nominator.
pub trait Effects {
    /// A cycle decided; the scheduler's `last_cycle_timings` are that cycle's.
    fn decided(&mut self, _scheduler: &Scheduler, _decision: &Decision) {}

    /// Preemption ran for a pod that fit nowhere; `outcome`'s victims are still in the
    /// cluster.
    fn preempted(
        &mut self,
        _cluster: &Cluster,
        _pod: &PodInfo,
        _outcome: &PreemptionOutcome,
        _explained: PreemptionExplanation,
    ) {
    }

    /// Evicts `candidate`'s victims for `pod`; `cleared` are the pods whose nominations to
    /// the candidate's node preemption dropped (already gone from the nominator).
    fn evict(
        &mut self,
        cluster: &mut Cluster,
        pod: &PodInfo,
        candidate: &Candidate,
        cleared: &[String],
    ) -> Eviction;

    /// The pod's nomination was dropped: no node can be freed for it.
    fn nomination_dropped(&mut self, _pod: &PodInfo) {}

    /// The pod (`namespace/name`) is reserved and counted on `node`.
    fn assigned(
        &mut self,
        cluster: &mut Cluster,
        pod: &str,
        node: NodeId,
        reservation: Reservation,
    );
}

/// What an attempt reads and changes: the cluster, the nominated pods and, for preemption,
/// the PodDisruptionBudgets.
#[derive(Debug)]
pub struct Placement<'a> {
    /// The cluster the pod is placed into.
    pub cluster: &'a mut Cluster,
    /// The pods nominated to nodes.
    pub nominator: &'a mut Nominator,
    /// The PodDisruptionBudgets preemption respects.
    pub budgets: &'a DisruptionBudgets,
}

/// Schedules `pod` once: decide; on a FitError preempt (nominating the pod to the freed
/// node, and deciding again when `effects` evicted the victims at once); on a node, drop the
/// pod's nomination, Reserve, count the pod on the node (Unreserve if that fails) and hand it
/// to `effects`. Returns the last decision; fails only when the pod cannot be counted on its
/// node (a pod of the same name is already in the cluster).
pub fn schedule_one(
    scheduler: &mut Scheduler,
    placement: Placement<'_>,
    mut pod: PodInfo,
    detail: Detail,
    effects: &mut impl Effects,
) -> Result<Decision, ClusterError> {
    let Placement {
        cluster,
        nominator,
        budgets,
    } = placement;
    let key = pod.key();
    let mut decision = scheduler.decide(cluster, nominator, &pod, detail);
    effects.decided(scheduler, &decision);
    if let Some(fit) = decision.fit_error() {
        let (outcome, explained) = scheduler.preempt(cluster, nominator, budgets, &pod, fit);
        effects.preempted(cluster, &pod, &outcome, explained);
        match outcome {
            PreemptionOutcome::Preempt {
                candidate,
                clear_nominations,
            } => {
                for k in &clear_nominations {
                    nominator.remove(k);
                }
                let eviction = effects.evict(cluster, &pod, &candidate, &clear_nominations);
                pod.pod.nominated_node_name = Some(cluster.node(candidate.node).name().to_owned());
                if eviction == Eviction::Done {
                    decision = scheduler.decide(cluster, nominator, &pod, detail);
                    effects.decided(scheduler, &decision);
                }
                if decision.node().is_none() {
                    nominator.add(pod, candidate.node);
                    return Ok(decision);
                }
            }
            PreemptionOutcome::NoCandidate => {
                if pod.pod.nominated_node_name.is_some() || nominator.node_of(&key).is_some() {
                    nominator.remove(&key);
                    effects.nomination_dropped(&pod);
                }
            }
            PreemptionOutcome::NotEligible(_) | PreemptionOutcome::ExtenderFailed(_) => {}
        }
    }
    if let Some(node) = decision.node() {
        nominator.remove(&key);
        let reservation = scheduler.reserve(cluster, &pod, node);
        if let Err(e) = cluster.insert_pod(pod, Some(node)) {
            scheduler.unreserve(cluster, &reservation);
            return Err(e);
        }
        effects.assigned(cluster, &key, node, reservation);
    }
    Ok(decision)
}
