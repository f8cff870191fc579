//! Scheduling a batch of pending pods against a cluster, one at a time, in queue order: the
//! engine side of `berth simulate` and `berth bench`.

use crate::cluster::{Cluster, ClusterError, NodeId, PodId};
use crate::diagnosis::Candidate;
use crate::extender::ExtenderError;
use crate::framework::Reservation;
use crate::model::Pod;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::preemption::{DisruptionBudgets, PreemptionExplanation, PreemptionOutcome};
use crate::schedule_one::{Effects, Eviction, Placement, schedule_one};
use crate::scheduler::{Decision, Detail, Scheduler};

/// Sorts pending pods into scheduling-queue order: higher priority first, then older
/// creation time, then the order given (the sort is stable).
pub fn queue_order(pods: &mut [Pod]) {
    pods.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.meta.creation_timestamp.cmp(&b.meta.creation_timestamp))
    });
}

/// The result of scheduling one pod.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `namespace/name`.
    pub pod: String,
    /// The chosen node's name.
    pub node: Option<String>,
    /// The decision, with the fit error and explanation if any; None for a pod its
    /// scheduling gates hold. After a preemption, the decision of the cycle run once the
    /// victims were gone.
    pub decision: Option<Decision>,
    /// The node the pod preempted on, if it did.
    pub nominated_node: Option<String>,
    /// The pods it evicted there (`namespace/name`), in eviction order.
    pub victims: Vec<String>,
    /// What preemption considered, when the pod fit nowhere (and explaining was asked for).
    pub preemption: Option<PreemptionReport>,
    /// Ignorable extenders whose preempt call failed and were skipped.
    pub preemption_warnings: Vec<ExtenderError>,
    /// The non-ignorable extender whose preempt call failed, failing the preemption.
    pub preemption_error: Option<ExtenderError>,
    /// The pod's scheduling gates: while any is left it is not tried (SchedulingGates'
    /// PreEnqueue), so there is no decision to speak of.
    pub gates: Vec<String>,
}

impl Outcome {
    /// Why the pod was not placed (its scheduling gates, the FitError or a failing
    /// extender's error).
    pub fn message(&self) -> Option<String> {
        if !self.gates.is_empty() {
            return Some(gated_message(&self.gates));
        }
        self.decision.as_ref().and_then(Decision::failure_message)
    }
}

/// SchedulingGates' words for a held pod (`waiting for scheduling gates: %v`, Go's list
/// format).
pub fn gated_message(gates: &[String]) -> String {
    format!("waiting for scheduling gates: [{}]", gates.join(" "))
}

/// A preemption attempt in words, by node and pod name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreemptionReport {
    /// Why the pod did not try to preempt, if it did not.
    pub not_eligible: Option<String>,
    /// Each victim with why it was chosen.
    pub victims: Vec<(String, String)>,
    /// Every candidate node: its victims, budget violations, and why it lost (None: chosen).
    pub candidates: Vec<CandidateReport>,
    /// Nodes tried that could not be freed, with why.
    pub rejected: Vec<(String, String)>,
    /// Nodes not tried because removing pods cannot help there.
    pub unresolvable: usize,
    /// Extenders whose preempt answer decided the candidates, in call order.
    pub extenders: Vec<String>,
}

/// One candidate node of a preemption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateReport {
    /// The node.
    pub node: String,
    /// Its victims (`namespace/name`).
    pub victims: Vec<String>,
    /// How many of them violate a PodDisruptionBudget.
    pub pdb_violations: usize,
    /// Why it lost to the chosen node; None for the chosen node.
    pub lost_on: Option<String>,
}

/// Schedules `pending` (already in queue order) one by one, without PodDisruptionBudgets.
/// See [`schedule_all_with`].
pub fn schedule_all(
    cluster: &mut Cluster,
    scheduler: &mut Scheduler,
    pending: Vec<Pod>,
    detail: Detail,
    each: impl FnMut(&Outcome),
) -> Result<(), ClusterError> {
    schedule_all_with(
        cluster,
        scheduler,
        &DisruptionBudgets::new(),
        pending,
        detail,
        each,
    )
}

/// Schedules `pending` (already in queue order) one by one. A placed pod is reserved and
/// assigned at once, so the next pod sees it. A pod that fits nowhere preempts if it can:
/// its victims are removed from the cluster and it is scheduled again, as the cluster
/// settles once they are gone (usually onto the node it preempted on); if it still does not
/// fit, it stays nominated there for the pods after it. Fails if a pending pod has the name
/// of a pod already in the cluster.
pub fn schedule_all_with(
    cluster: &mut Cluster,
    scheduler: &mut Scheduler,
    budgets: &DisruptionBudgets,
    pending: Vec<Pod>,
    detail: Detail,
    mut each: impl FnMut(&Outcome),
) -> Result<(), ClusterError> {
    let mut nominator = Nominator::new();
    for pod in pending {
        if !pod.scheduling_gates.is_empty() {
            each(&gated(pod));
            continue;
        }
        let info = cluster.compile_pod(pod);
        let mut outcome = Outcome {
            pod: info.key(),
            node: None,
            decision: None,
            nominated_node: None,
            victims: Vec::new(),
            preemption: None,
            preemption_warnings: Vec::new(),
            preemption_error: None,
            gates: Vec::new(),
        };
        let placement = Placement {
            cluster: &mut *cluster,
            nominator: &mut nominator,
            budgets,
        };
        let mut batch = Batch {
            explain: detail == Detail::Explained,
            outcome: &mut outcome,
        };
        let decision = schedule_one(scheduler, placement, info, detail, &mut batch)?;
        outcome.decision = Some(decision);
        each(&outcome);
    }
    Ok(())
}

/// The batch's effects: victims leave the cluster at once, and each step is written into
/// the pod's outcome.
struct Batch<'a> {
    explain: bool,
    outcome: &'a mut Outcome,
}

impl Effects for Batch<'_> {
    fn preempted(
        &mut self,
        cluster: &Cluster,
        _pod: &PodInfo,
        outcome: &PreemptionOutcome,
        explained: PreemptionExplanation,
    ) {
        let mut report = self.explain.then(|| report(cluster, &explained));
        self.outcome.preemption_warnings = explained.extender_warnings;
        if let (PreemptionOutcome::NotEligible(why), Some(r)) = (outcome, report.as_mut()) {
            r.not_eligible = Some((*why).to_string());
        }
        if let PreemptionOutcome::ExtenderFailed(error) = outcome {
            self.outcome.preemption_error = Some(error.clone());
        }
        self.outcome.preemption = report;
    }

    fn evict(
        &mut self,
        cluster: &mut Cluster,
        pod: &PodInfo,
        candidate: &Candidate,
        _cleared: &[String],
    ) -> Eviction {
        if let Some(r) = self.outcome.preemption.as_mut() {
            r.victims = candidate
                .victims
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let why = victim_reason(cluster.pod(*v), pod, i < candidate.pdb_violations);
                    (cluster.pod(*v).key(), why)
                })
                .collect();
        }
        self.outcome.victims = evict(cluster, &candidate.victims);
        self.outcome.nominated_node = Some(cluster.node(candidate.node).name().to_string());
        Eviction::Done
    }

    fn assigned(
        &mut self,
        cluster: &mut Cluster,
        pod: &str,
        node: NodeId,
        _reservation: Reservation,
    ) {
        let node_name = cluster.node(node).name().to_string();
        cluster.protections_mut().placed(&node_name, pod);
        self.outcome.node = Some(node_name);
    }
}

/// The outcome of a pod held by its scheduling gates: never tried, so never placed,
/// preempting or nominated.
fn gated(pod: Pod) -> Outcome {
    Outcome {
        pod: pod.key(),
        node: None,
        decision: None,
        nominated_node: None,
        victims: Vec::new(),
        preemption: None,
        preemption_warnings: Vec::new(),
        preemption_error: None,
        gates: pod.scheduling_gates,
    }
}

/// Removes the victims from the cluster; returns their keys.
fn evict(cluster: &mut Cluster, victims: &[PodId]) -> Vec<String> {
    let keys: Vec<(String, String)> = victims
        .iter()
        .map(|v| {
            let p = &cluster.pod(*v).pod;
            (p.meta.namespace.clone(), p.meta.name.clone())
        })
        .collect();
    keys.into_iter()
        .map(|(namespace, name)| {
            cluster.remove_pod(&namespace, &name);
            format!("{namespace}/{name}")
        })
        .collect()
}

/// Why a victim was chosen, in words.
fn victim_reason(victim: &PodInfo, preemptor: &PodInfo, violates_pdb: bool) -> String {
    let mut why = format!(
        "priority {} is below the preemptor's {}, and the preemptor does not fit with it back on the node",
        victim.pod.priority, preemptor.pod.priority
    );
    if violates_pdb {
        why.push_str("; evicting it violates a PodDisruptionBudget (tried first to keep)");
    }
    why
}

/// The explanation by name.
fn report(cluster: &Cluster, e: &PreemptionExplanation) -> PreemptionReport {
    let name = |id| cluster.node(id).name().to_string();
    PreemptionReport {
        not_eligible: None,
        victims: Vec::new(),
        candidates: e
            .candidates
            .iter()
            .map(|(c, lost)| CandidateReport {
                node: name(c.node),
                victims: c.victims.iter().map(|v| cluster.pod(*v).key()).collect(),
                pdb_violations: c.pdb_violations,
                lost_on: lost.map(|l| l.to_string()),
            })
            .collect(),
        rejected: e
            .rejected
            .iter()
            .map(|(id, why)| (name(*id), why.clone()))
            .collect(),
        unresolvable: e.unresolvable,
        extenders: e.extenders.clone(),
    }
}
