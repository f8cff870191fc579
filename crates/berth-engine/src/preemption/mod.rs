//! Preemption: v1.22's DefaultPreemption PostFilter.
//!
//! When a pod fits no node, [`Preemption::run`] (the scheduler's post-filter step,
//! `Scheduler::preempt`) looks for a node where removing pods of lower priority lets it in:
//! 1. Eligibility: not `preemptionPolicy: Never`; a pod already nominated somewhere waits
//!    while lower-priority pods on that node are still terminating (unless that node now
//!    fails for a reason removing pods cannot fix).
//! 2. Potential nodes: those whose failure was only `Unschedulable`.
//! 3. Dry run from a random offset (a generator seeded from the scheduler's seed) over the potential
//!    nodes, stopping once `max(10% of them, 100)` candidates are found and at least one of
//!    them violates no PodDisruptionBudget. On each node, on a copy of that node only: remove
//!    every lower-priority pod; if the pod then fits (with the node's nominated pods, as the
//!    cycle checks), add the removed pods back one by one, most important first (higher
//!    priority, then earlier start), those whose eviction would violate a budget before the
//!    others; a pod that does not fit back is a victim.
//! 4. Extenders: each interested one with a preemptVerb may drop candidates and trim their
//!    victims, in Policy order (`extender::process_preemption`); a non-ignorable one that
//!    fails fails the attempt.
//! 5. Choice, in upstream's order: fewest budget violations, lowest highest-victim
//!    priority, smallest sum of victim priorities, fewest victims, latest start among the
//!    highest-priority victims, then the first candidate.
//!
//! A node's dry-run answer is reused for later pods equal to this one while the node,
//! its nominations and the budgets stay unchanged, when every filter's verdict follows from
//! the node and the pod alone (see [`victim_cache`]): a burst of equal preemptors
//! dry-runs each node once, not once per pod.
//!
//! The caller carries the choice out (deletes the victims, nominates the pod, clears
//! lower-priority nominations on the node).
//!
//! Removing and adding pods on the node's copy runs upstream's PreFilter extensions
//! RemovePod/AddPod as well (see `filters::NodeCopy`): inter-pod affinity and
//! topology spread counts follow the victims, so a victim's anti-affinity toward the
//! preemptor, or its place in a spread domain, counts as upstream counts it. Not modelled:
//! ServiceAffinity's extension (its pinned peer pod stays the cluster's) and WASM plugins,
//! whose per-node tables describe the cluster's nodes.

mod budgets;
mod choose;
mod dry_run;
#[cfg(test)]
mod tests;
mod victim_cache;

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cluster::{Cluster, NodeId};
use crate::diagnosis::FitError;
use crate::extender::{self, ExtenderError};
use crate::filters::PreparedFilters;
use crate::framework::CycleContext;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::profile::Profile;

pub use crate::diagnosis::Candidate;
pub use budgets::DisruptionBudgets;
use choose::choose;
use dry_run::DryRun;
use victim_cache::VictimCache;

/// Mixed into the seed of preemption's generator, so it differs from the tie-break one.
const PREEMPTION_SEED: u64 = 0x7072_6565_6d70_7421;

/// Upstream's DefaultPreemptionArgs default `minCandidateNodesPercentage`.
pub const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
/// Upstream's DefaultPreemptionArgs default `minCandidateNodesAbsolute`.
pub const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;

/// Why a pod does not preempt: `preemptionPolicy: Never`.
pub const NOT_ELIGIBLE_NEVER: &str = "the pod's preemptionPolicy is Never";
/// Why a pod does not preempt: its earlier victims are still going.
pub const NOT_ELIGIBLE_TERMINATING: &str =
    "pods of lower priority on the nominated node are still terminating";

/// The step of upstream's node choice at which a candidate lost to the chosen one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostOn {
    /// More PodDisruptionBudget violations.
    PdbViolations,
    /// A higher-priority highest victim.
    HighestPriority,
    /// A larger sum of victim priorities.
    SumOfPriorities,
    /// More victims.
    NumberOfVictims,
    /// Its highest-priority victims started earlier (they have run longer).
    StartTime,
    /// A tie on every count: the first candidate wins.
    Order,
}

impl fmt::Display for LostOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LostOn::PdbViolations => "more PodDisruptionBudget violations",
            LostOn::HighestPriority => "a higher-priority highest victim",
            LostOn::SumOfPriorities => "a larger sum of victim priorities",
            LostOn::NumberOfVictims => "more victims",
            LostOn::StartTime => "its highest-priority victims started earlier",
            LostOn::Order => "an equal candidate came first",
        })
    }
}

/// What a preemption attempt found, for `--explain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreemptionExplanation {
    /// Every candidate dry-run found, in the order found, with why it lost (None: chosen).
    pub candidates: Vec<(Candidate, Option<LostOn>)>,
    /// Nodes dry-run that are no candidate, with why.
    pub rejected: Vec<(NodeId, String)>,
    /// Nodes skipped because their failure was UnschedulableAndUnresolvable.
    pub unresolvable: usize,
    /// Extenders whose preempt answer replaced the candidates, in call order.
    pub extenders: Vec<String>,
    /// Ignorable extenders whose preempt call failed and were skipped.
    pub extender_warnings: Vec<ExtenderError>,
}

/// The outcome of [`Preemption::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreemptionOutcome {
    /// The pod may not preempt now (a `NOT_ELIGIBLE_*` reason); any nomination stays.
    NotEligible(&'static str),
    /// No node can be freed for the pod (none was found, or the extenders kept none): its
    /// nomination, if any, should be cleared.
    NoCandidate,
    /// A non-ignorable extender's preempt call failed, which fails the attempt (upstream's
    /// PostFilter error status: logged, no nomination made, none cleared).
    ExtenderFailed(ExtenderError),
    /// Evict `victims` from `node` and nominate the pod there.
    Preempt {
        /// The chosen candidate.
        candidate: Candidate,
        /// Pods nominated to the node with a lower priority than the preemptor, whose
        /// nominations must be cleared (`namespace/name`).
        clear_nominations: Vec<String>,
    },
}

/// Upstream's `GetPodStartTime`: the pod's start time, or "now" when it has none, which is
/// later than every start time.
fn start_time(pod: &PodInfo) -> i64 {
    pod.pod.start_time.unwrap_or(i64::MAX)
}

/// Upstream's `MoreImportantPod` as an ordering: higher priority first, then earlier start.
fn importance(a: &PodInfo, b: &PodInfo) -> std::cmp::Ordering {
    b.pod
        .priority
        .cmp(&a.pod.priority)
        .then(start_time(a).cmp(&start_time(b)))
}

/// Preemption's state between attempts, owned by the scheduler: its own seeded generator
/// (the dry run's random offset, separate from the tie-break one, so an attempt does not
/// shift later tie-breaks) and the dry-run answers kept for equal pods.
#[derive(Debug)]
pub(crate) struct Preemption {
    rng: ChaCha8Rng,
    victim_cache: VictimCache,
}

impl Preemption {
    /// Preemption for a scheduler seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Preemption {
            rng: ChaCha8Rng::seed_from_u64(seed ^ PREEMPTION_SEED),
            victim_cache: VictimCache::default(),
        }
    }

    /// Preemption dry runs answered from earlier equal pods' answers, and dry runs run.
    pub(crate) fn dry_run_counts(&self) -> (u64, u64) {
        self.victim_cache.counts()
    }

    /// Drops every kept dry-run answer, so the next attempt dry-runs every node.
    #[cfg(test)]
    pub(crate) fn forget_dry_runs(&mut self) {
        self.victim_cache = VictimCache::default();
    }
    /// The PostFilter for a pod that fit nowhere (`fit` is that cycle's error): finds the
    /// node to free and its victims, reading the cluster only.
    pub(crate) fn run(
        &mut self,
        profile: &Profile,
        cluster: &Cluster,
        nominator: &Nominator,
        budgets: &DisruptionBudgets,
        pod: &PodInfo,
        fit: &FitError,
    ) -> (PreemptionOutcome, PreemptionExplanation) {
        let mut explanation = PreemptionExplanation::default();
        if let Some(reason) = ineligible(cluster, pod, fit) {
            return (PreemptionOutcome::NotEligible(reason), explanation);
        }
        let potential: Vec<NodeId> = cluster
            .node_order()
            .iter()
            .copied()
            .filter(|id| !fit.is_unresolvable(*id))
            .collect();
        explanation.unresolvable = cluster.node_count() - potential.len();
        if potential.is_empty() {
            return (PreemptionOutcome::NoCandidate, explanation);
        }
        let offset = self.rng.random_range(0..potential.len());
        let ctx = CycleContext {
            cluster,
            pod,
            nominated: !nominator.is_empty(),
        };
        let prepared =
            match PreparedFilters::prepare(&profile.filters, profile.check_all, ctx, |_, _| {}) {
                Ok(p) => p,
                // A filter rejects the pod everywhere, as it did in the cycle.
                Err(_) => return (PreemptionOutcome::NoCandidate, explanation),
            };
        let wanted = candidates_to_find(potential.len());
        let dry = DryRun {
            cluster,
            nominator,
            budgets,
            pod,
            prepared: &prepared,
        };
        let mut cache = prepared.node_local().then(|| {
            self.victim_cache
                .class(&pod.pod, budgets.stamp(), cluster.node_count())
        });
        let mut clean = Vec::new();
        let mut violating = Vec::new();
        for i in 0..potential.len() {
            let node = potential[(offset + i) % potential.len()];
            let answer = match cache.as_mut() {
                // Nominations are not part of a node's stamp: such nodes are dry-run afresh.
                Some(cache) if nominator.for_node(node).is_empty() => {
                    cache.answer(node, cluster.node(node).stamp, || dry.select_victims(node))
                }
                _ => dry.select_victims(node),
            };
            match answer {
                Ok(c) if c.pdb_violations == 0 => clean.push(c),
                Ok(c) => violating.push(c),
                Err(why) => explanation.rejected.push((
                    node,
                    why.describe(cluster.node(node).name(), &pod.pod.meta.name),
                )),
            }
            if !clean.is_empty() && clean.len() + violating.len() >= wanted {
                break;
            }
        }
        clean.append(&mut violating);
        let candidates = clean;
        if candidates.is_empty() {
            return (PreemptionOutcome::NoCandidate, explanation);
        }
        let candidates = match extender::process_preemption(
            &profile.extenders,
            cluster,
            pod,
            candidates,
            &mut explanation.extender_warnings,
            &mut explanation.extenders,
        ) {
            Ok(candidates) => candidates,
            Err(error) => return (PreemptionOutcome::ExtenderFailed(error), explanation),
        };
        if candidates.is_empty() {
            return (PreemptionOutcome::NoCandidate, explanation);
        }
        let lost = choose(cluster, &candidates);
        let chosen = lost
            .iter()
            .position(Option::is_none)
            .expect("one candidate is chosen");
        let candidate = candidates[chosen].clone();
        explanation.candidates = candidates.into_iter().zip(lost).collect();
        let clear_nominations = nominator.lower_priority_on(candidate.node, pod.pod.priority);
        (
            PreemptionOutcome::Preempt {
                candidate,
                clear_nominations,
            },
            explanation,
        )
    }
}

/// Upstream's PodEligibleToPreemptOthers: None when the pod may preempt.
fn ineligible(cluster: &Cluster, pod: &PodInfo, fit: &FitError) -> Option<&'static str> {
    if pod.pod.preempt_never {
        return Some(NOT_ELIGIBLE_NEVER);
    }
    let node = pod
        .pod
        .nominated_node_name
        .as_deref()
        .and_then(|n| cluster.node_by_name(n))?;
    if fit.is_unresolvable(node) {
        return None;
    }
    let terminating = cluster.node(node).pods.iter().any(|id| {
        let p = cluster.pod(*id);
        p.pod.meta.deleting && p.pod.priority < pod.pod.priority
    });
    terminating.then_some(NOT_ELIGIBLE_TERMINATING)
}

/// Upstream's calculateNumCandidates.
pub fn candidates_to_find(potential: usize) -> usize {
    (potential * MIN_CANDIDATE_NODES_PERCENTAGE / 100)
        .max(MIN_CANDIDATE_NODES_ABSOLUTE)
        .min(potential)
}
