//! The scheduling cycle, in upstream's phases (schedule_one.go): prepare the filters, try
//! the nominated node, find feasible nodes (`feasible.rs`: in parallel, with feasible-node
//! sampling and the answers kept for equal pods), let the extenders filter
//! (`extenders.rs`), prioritise (`prioritise.rs`: normalise, weigh, add the extenders'
//! scores) and select (`select.rs`: a seeded uniform tie-break); a pod that fits nowhere
//! gets its FitError (`diagnose.rs`), and preemption ([`crate::preemption`]) is the
//! post-filter step its caller runs.

mod diagnose;
mod extenders;
mod feasible;
mod prioritise;
mod select;
mod summed;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::classes::{Classes, ComboCache, SummedCycles};
use crate::cluster::{Cluster, NodeId};
use crate::diagnosis::FitError;
use crate::explain::{Explanation, explain_nodes};
use crate::extender::{self, Extender, ExtenderError};
use crate::filters::{PreparedFilters, RejectedAll};
use crate::framework::{CycleContext, Reservation, ScorePrep};
use crate::health::Trackers;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::preemption::{DisruptionBudgets, Preemption, PreemptionExplanation, PreemptionOutcome};
use crate::profile::{NamedFilter, Profile, WeightedScore};
use crate::rules::domain_rows::DomainRows;
use berth_policy::FeatureGates;

use diagnose::{Visited, rejected_everywhere, unscored};
use feasible::{NodeCost, Walk};

/// Upstream's floor on the number of feasible nodes to look for.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's floor on the adaptive percentage of nodes to score.
const MIN_FEASIBLE_NODES_PERCENTAGE: usize = 5;

/// How much a cycle gives back besides its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The decision alone.
    Decision,
    /// The decision and its explanation.
    Explained,
}

/// Settings of the cycle that do not come from the Policy file.
#[derive(Debug, Clone, Copy)]
pub struct CycleConfig {
    /// kube-scheduler's feature gates (v1.22's defaults unless set).
    pub feature_gates: FeatureGates,
    /// Evaluate every filter on a node even after one failed.
    pub always_check_all_predicates: bool,
    /// Percentage of nodes to find feasible before scoring: 0 = upstream's adaptive default,
    /// 100 = every node.
    pub percentage_of_nodes_to_score: u32,
    /// Seed of the tie-breaking generator.
    pub seed: u64,
    /// Keep each node's answers for classes of equal pods (see [`crate::classes`]; on by
    /// default). Decisions are the same either way; off, every cycle asks every node it
    /// visits, as upstream does.
    pub equivalence_classes: bool,
}

impl Default for CycleConfig {
    fn default() -> Self {
        CycleConfig {
            feature_gates: FeatureGates::default(),
            always_check_all_predicates: false,
            percentage_of_nodes_to_score: 0,
            seed: 0,
            equivalence_classes: true,
        }
    }
}

/// The outcome of one scheduling cycle. An explanation is there only when the cycle was
/// run to explain ([`Scheduler::explain_with`]); a failed cycle decided nothing to explain.
#[derive(Debug, Clone)]
pub enum Decision {
    /// The pod goes to `node`.
    Placed {
        /// The chosen node.
        node: NodeId,
        /// What the choice was based on, when asked for.
        explanation: Option<Explanation>,
        /// Extender failures that did not fail the cycle.
        warnings: Vec<ExtenderError>,
    },
    /// The pod fits nowhere.
    Unschedulable {
        /// Why: what rejected each node.
        fit: FitError,
        /// The nodes' rejections in detail, when asked for.
        explanation: Option<Explanation>,
        /// Extender failures that did not fail the cycle.
        warnings: Vec<ExtenderError>,
    },
    /// A non-ignorable extender failed, which fails the cycle (no node, no FitError).
    Failed {
        /// The failing extender's error.
        error: ExtenderError,
        /// The failures of ignorable extenders before it.
        warnings: Vec<ExtenderError>,
    },
}

impl Decision {
    fn unplaced(fit: FitError, explanation: Option<Explanation>) -> Self {
        Decision::Unschedulable {
            fit,
            explanation,
            warnings: Vec::new(),
        }
    }

    fn placed(node: NodeId, explanation: Option<Explanation>) -> Self {
        Decision::Placed {
            node,
            explanation,
            warnings: Vec::new(),
        }
    }

    fn with_warnings(mut self, kept: Vec<ExtenderError>) -> Self {
        match &mut self {
            Decision::Placed { warnings, .. }
            | Decision::Unschedulable { warnings, .. }
            | Decision::Failed { warnings, .. } => *warnings = kept,
        }
        self
    }

    /// The chosen node, if the pod was placed.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Decision::Placed { node, .. } => Some(*node),
            _ => None,
        }
    }

    /// Why the pod fits nowhere, if it does.
    pub fn fit_error(&self) -> Option<&FitError> {
        match self {
            Decision::Unschedulable { fit, .. } => Some(fit),
            _ => None,
        }
    }

    /// What the decision was based on, when the cycle explained.
    pub fn explanation(&self) -> Option<&Explanation> {
        match self {
            Decision::Placed { explanation, .. } | Decision::Unschedulable { explanation, .. } => {
                explanation.as_ref()
            }
            Decision::Failed { .. } => None,
        }
    }

    /// Extender failures that did not fail the cycle: ignorable filters skipped, and
    /// prioritize calls (whose errors upstream always ignores).
    pub fn warnings(&self) -> &[ExtenderError] {
        match self {
            Decision::Placed { warnings, .. }
            | Decision::Unschedulable { warnings, .. }
            | Decision::Failed { warnings, .. } => warnings,
        }
    }

    /// Why the pod was not placed (the FitError or the extender's error), as upstream's
    /// Event and PodScheduled condition say it; None when it was placed.
    pub fn failure_message(&self) -> Option<String> {
        match self {
            Decision::Placed { .. } => None,
            Decision::Unschedulable { fit, .. } => Some(fit.to_string()),
            Decision::Failed { error, .. } => Some(error.to_string()),
        }
    }
}

/// Where in a cycle a rule's time was spent (upstream's extension point names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionPoint {
    /// A filter's per-pod preparation.
    PreFilter,
    /// A score rule's per-pod preparation.
    PreScore,
}

impl ExtensionPoint {
    /// Upstream's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionPoint::PreFilter => "PreFilter",
            ExtensionPoint::PreScore => "PreScore",
        }
    }
}

/// How long one rule's preparation took in the last cycle. Per-node work is not timed: a
/// clock read per node and rule would cost more than most rules; preparation is where rules
/// (and WASM plugins, which run all nodes in batches there) do their per-pod work.
#[derive(Debug, Clone, Copy)]
struct RuleTiming {
    /// Index into the filters or the scores.
    index: usize,
    point: ExtensionPoint,
    elapsed: Duration,
}

/// A configured scheduler: the profile of a policy and the cycle's state between pods.
pub struct Scheduler {
    profile: Profile,
    config: CycleConfig,
    next_start: usize,
    rng: ChaCha8Rng,
    timings: Vec<RuleTiming>,
    /// Preemption's generator and its dry-run answers, reused across equal pods.
    preemption: Preemption,
    /// The history trackers the policy's protections read (see [`crate::health`]).
    trackers: Trackers,
    /// Answers kept for classes of equal pods (see [`crate::classes`]).
    classes: Classes,
    /// What a node has cost the filter walk lately (whether a pass is worth splitting).
    node_cost: NodeCost,
    /// The topology domains of classes' views, kept for the cycles that sum their totals
    /// over them (see `summed.rs`).
    domains: DomainRows,
    /// The nodes' combinations of label values the classes' tallies count by.
    combos: ComboCache,
}

impl Scheduler {
    /// A scheduler over these rules (filters in evaluation order, scores with weights).
    pub fn new(filters: Vec<NamedFilter>, scores: Vec<WeightedScore>, config: CycleConfig) -> Self {
        Scheduler {
            profile: Profile {
                filters,
                scores,
                extenders: Vec::new(),
                check_all: config.always_check_all_predicates,
            },
            config,
            next_start: 0,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            timings: Vec::new(),
            preemption: Preemption::new(config.seed),
            trackers: Trackers::default(),
            classes: Classes::new(config.equivalence_classes),
            node_cost: NodeCost::default(),
            domains: DomainRows::default(),
            combos: ComboCache::default(),
        }
    }

    /// Node answers reused from an earlier pod of the same class, and node answers asked of
    /// the rules (while a class kept answers), since this scheduler began.
    pub fn class_counts(&self) -> (u64, u64) {
        self.classes.counts()
    }

    /// How many cycles summed their totals from a class's kept answers and the spreading
    /// rules' grouped scores instead of normalising every column, since this scheduler
    /// began.
    pub fn summed_cycles(&self) -> SummedCycles {
        self.classes.summed()
    }

    /// Keeps class answers within `bytes` (see [`crate::classes`]), so tests can make
    /// classes compete for room.
    #[cfg(test)]
    pub(crate) fn set_class_budget(&mut self, bytes: usize) {
        self.classes.set_budget(bytes);
    }

    /// Records the trackers the policy's protections need; whoever feeds the cluster runs them.
    pub fn with_trackers(mut self, trackers: Trackers) -> Self {
        self.trackers = trackers;
        self
    }

    /// The trackers the policy's protections need.
    pub fn trackers(&self) -> Trackers {
        self.trackers
    }

    /// Calls these extenders (in call order) after the scheduler's own filters, and for
    /// scores beside its own.
    pub fn with_extenders(mut self, extenders: Vec<Arc<dyn Extender>>) -> Self {
        self.profile.extenders = extenders;
        self
    }

    /// The extenders, in call order.
    pub fn extenders(&self) -> &[Arc<dyn Extender>] {
        &self.profile.extenders
    }

    /// The filters, in evaluation order.
    pub fn filters(&self) -> &[NamedFilter] {
        &self.profile.filters
    }

    /// The score rules with their weights.
    pub fn scores(&self) -> &[WeightedScore] {
        &self.profile.scores
    }

    /// Drops every kept dry-run answer, so the next preemption dry-runs every node.
    #[cfg(test)]
    pub(crate) fn forget_dry_runs(&mut self) {
        self.preemption.forget_dry_runs();
    }

    /// Preemption dry runs answered from earlier equal pods' answers, and dry runs run,
    /// since this scheduler began.
    pub fn dry_run_counts(&self) -> (u64, u64) {
        self.preemption.dry_run_counts()
    }

    /// Each rule's preparation time in the last cycle: (its plugin, as
    /// [`NamedFilter::plugin`] and [`WeightedScore::plugin`] name it, extension point,
    /// duration). A cycle that ended early (a filter rejecting the pod everywhere) times only
    /// the rules it prepared.
    pub fn last_cycle_timings(&self) -> impl Iterator<Item = (&str, ExtensionPoint, Duration)> {
        self.timings.iter().map(|t| {
            let plugin = match t.point {
                ExtensionPoint::PreFilter => self.profile.filters[t.index].plugin(),
                ExtensionPoint::PreScore => self.profile.scores[t.index].plugin(),
            };
            (plugin, t.point, t.elapsed)
        })
    }

    /// Reserve: each filter records the side effects of placing `pod` on `node` and the API
    /// writes to make before binding it, before the caller assigns the pod. Only the
    /// policy's filters run, so a policy without CheckVolumeBinding binds no volumes, as
    /// upstream.
    pub fn reserve(&self, cluster: &mut Cluster, pod: &PodInfo, node: NodeId) -> Reservation {
        let mut reservation = Reservation::default();
        for f in &self.profile.filters {
            if let Some(state) = f.rule.reserve(cluster, pod, node, &mut reservation.writes) {
                reservation.states.push((f.name.clone(), state));
            }
        }
        reservation
    }

    /// Unreserve: undoes [`Scheduler::reserve`] (the binding failed), in reverse: each state
    /// goes back to the filter of the entry that kept it.
    pub fn unreserve(&self, cluster: &mut Cluster, reservation: &Reservation) {
        for (name, state) in reservation.states.iter().rev() {
            if let Some(f) = self.profile.filters.iter().find(|f| f.name == *name) {
                f.rule.unreserve(cluster, state);
            }
        }
    }

    /// How many feasible nodes to find before scoring (upstream's numFeasibleNodesToFind).
    pub fn feasible_nodes_to_find(&self, all: usize) -> usize {
        let pct = self.config.percentage_of_nodes_to_score as usize;
        if all < MIN_FEASIBLE_NODES_TO_FIND || pct >= 100 {
            return all;
        }
        let adaptive = if pct == 0 {
            (50usize.saturating_sub(all / 125)).max(MIN_FEASIBLE_NODES_PERCENTAGE)
        } else {
            pct
        };
        (all * adaptive / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
    }

    /// Runs one scheduling cycle for `pod` with no pod nominated anywhere. The cluster is
    /// only read; the caller assigns the pod to the chosen node.
    pub fn schedule(&mut self, cluster: &Cluster, pod: &PodInfo) -> Decision {
        self.schedule_with(cluster, &Nominator::new(), pod)
    }

    /// Runs one scheduling cycle for `pod`, with the nominated pods of `nominator` counted on
    /// their nodes as upstream does (see [`crate::filters`]). A pod whose
    /// `status.nominatedNodeName` names a node that passes the filters goes there without
    /// scoring (v1.22's PreferNominatedNode).
    pub fn schedule_with(
        &mut self,
        cluster: &Cluster,
        nominator: &Nominator,
        pod: &PodInfo,
    ) -> Decision {
        self.decide(cluster, nominator, pod, Detail::Decision)
    }

    /// [`Scheduler::schedule`], keeping what the decision was based on.
    pub fn explain(&mut self, cluster: &Cluster, pod: &PodInfo) -> Decision {
        self.explain_with(cluster, &Nominator::new(), pod)
    }

    /// [`Scheduler::schedule_with`], keeping what the decision was based on (each visited
    /// node's rejections, each scored node's scores): the same decision, with its
    /// explanation.
    pub fn explain_with(
        &mut self,
        cluster: &Cluster,
        nominator: &Nominator,
        pod: &PodInfo,
    ) -> Decision {
        self.decide(cluster, nominator, pod, Detail::Explained)
    }

    /// [`Scheduler::schedule_with`] or [`Scheduler::explain_with`], as `detail` says.
    pub fn decide(
        &mut self,
        cluster: &Cluster,
        nominator: &Nominator,
        pod: &PodInfo,
        detail: Detail,
    ) -> Decision {
        let explain = detail == Detail::Explained;
        let all = cluster.node_count();
        if all == 0 {
            return Decision::unplaced(FitError::no_nodes(), explain.then(Explanation::default));
        }
        let ctx = CycleContext {
            cluster,
            pod,
            nominated: !nominator.is_empty(),
        };
        let prepared = match Self::prepare_filters(&self.profile, &mut self.timings, ctx) {
            Ok(p) => p,
            Err(rejected) => {
                let (fit, explanation) =
                    rejected_everywhere(cluster, &self.profile.filters, &rejected, explain);
                return Decision::unplaced(fit, explanation);
            }
        };
        let nominated = (!nominator.is_empty()).then_some(nominator);
        let next_start = &mut self.next_start;
        let extenders = &self.profile.extenders;
        if let Some(d) = nominated_node(
            extenders, cluster, &prepared, nominated, pod, explain, next_start,
        ) {
            return d;
        }
        let preps = Self::prepare_scores(&self.profile.scores, &mut self.timings, ctx);
        let scorers = prioritise::per_node(&preps);
        let walk = Walk {
            start: self.next_start % all,
            want: self.feasible_nodes_to_find(all),
        };
        // Only the choice matters when no extender sees the nodes and nothing is explained.
        let weights: Option<Vec<i64>> = (self.profile.extenders.is_empty() && !explain)
            .then(|| self.profile.scores.iter().map(|s| s.weight).collect());
        let summing = weights.as_deref().map(|weights| summed::Summing {
            weights,
            rng: &mut self.rng,
            domains: &self.domains,
            combos: &mut self.combos,
        });
        let found = feasible::find(
            cluster,
            &mut self.classes,
            walk,
            &prepared,
            &preps,
            &scorers,
            nominated,
            pod,
            &mut self.node_cost,
            summing,
        );
        self.next_start = (walk.start + found.visited) % all;
        if let Some(node) = found.chosen {
            return Decision::placed(node, None);
        }
        let extenders = &self.profile.extenders;
        let mut warnings = Vec::new();
        let filtered =
            match extenders::filter(extenders, cluster, pod, &found.feasible, &mut warnings) {
                Ok(filtered) => filtered,
                Err(error) => return Decision::Failed { error, warnings },
            };
        let visited = Visited {
            cluster,
            filters: &self.profile.filters,
            prepared: &prepared,
            nominated,
            pod,
            start: walk.start,
            count: found.visited,
            extender_rejections: filtered
                .as_ref()
                .filter(|_| explain)
                .map(|f| extenders::rejections(extenders, cluster, f))
                .unwrap_or_default(),
        };
        let (chosen, raw_columns) =
            extenders::kept(found.feasible, found.columns, filtered.as_ref());
        if chosen.is_empty() {
            let fit = visited.fit_error(filtered.as_ref());
            let explanation = explain.then(|| visited.explanation(&[], unscored, 0));
            return Decision::unplaced(fit, explanation).with_warnings(warnings);
        }
        let not_evaluated = all - found.visited;
        if chosen.len() == 1 {
            let explanation = explain.then(|| visited.explanation(&[], unscored, not_evaluated));
            return Decision::placed(chosen[0], explanation).with_warnings(warnings);
        }
        let scored = prioritise::Scored {
            preps: &preps,
            scorers: &scorers,
            raw_columns,
        };
        let prioritised = prioritise::prioritise(
            &self.profile,
            cluster,
            pod,
            scored,
            &chosen,
            explain,
            &mut warnings,
        );
        let best = select::select_best(&mut self.rng, &prioritised.totals);
        let explanation = explain.then(|| {
            let mut e = visited.explanation(&chosen, |r| prioritised.row(r), not_evaluated);
            e.score_rules = prioritised.score_rules(&self.profile.scores);
            e
        });
        Decision::placed(chosen[best], explanation).with_warnings(warnings)
    }

    /// The PostFilter for a pod that fit nowhere (`fit` is that cycle's error): preemption
    /// finds the node to free and its victims, reading the cluster only.
    pub fn preempt(
        &mut self,
        cluster: &Cluster,
        nominator: &Nominator,
        budgets: &DisruptionBudgets,
        pod: &PodInfo,
        fit: &FitError,
    ) -> (PreemptionOutcome, PreemptionExplanation) {
        self.preemption
            .run(&self.profile, cluster, nominator, budgets, pod, fit)
    }

    /// PreFilter: prepares every filter for the pod, timing each (the cycle's timings start
    /// over here).
    fn prepare_filters<'a>(
        profile: &'a Profile,
        timings: &mut Vec<RuleTiming>,
        ctx: CycleContext<'a>,
    ) -> Result<PreparedFilters<'a>, RejectedAll> {
        timings.clear();
        PreparedFilters::prepare(
            &profile.filters,
            profile.check_all,
            ctx,
            |index, elapsed| {
                timings.push(RuleTiming {
                    index,
                    point: ExtensionPoint::PreFilter,
                    elapsed,
                })
            },
        )
    }

    /// PreScore: prepares every score rule for the pod, timing each.
    fn prepare_scores<'a>(
        scores: &'a [WeightedScore],
        timings: &mut Vec<RuleTiming>,
        ctx: CycleContext<'a>,
    ) -> Vec<ScorePrep<'a>> {
        // One clock read per rule, as for the filters.
        let mut started = Instant::now();
        scores
            .iter()
            .enumerate()
            .map(|(index, s)| {
                let prep = s.rule.prepare(ctx);
                let now = Instant::now();
                timings.push(RuleTiming {
                    index,
                    point: ExtensionPoint::PreScore,
                    elapsed: now - started,
                });
                started = now;
                prep
            })
            .collect()
    }
}

/// The decision for a pod whose nominated node passes the filters and the extenders, made
/// without scoring (or the extenders' failure); None when it has no such node.
fn nominated_node(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    prepared: &PreparedFilters<'_>,
    nominated: Option<&Nominator>,
    pod: &PodInfo,
    explain: bool,
    next_start: &mut usize,
) -> Option<Decision> {
    let id = pod
        .pod
        .nominated_node_name
        .as_deref()
        .and_then(|n| cluster.node_by_name(n))?;
    // Upstream evaluates the nominated node as a list of one node, which leaves its next
    // start index at 0.
    *next_start = 0;
    let node = cluster.node(id);
    let fits = match nominated {
        Some(n) => prepared
            .status_with_nominated(node, n.for_node(id), pod)
            .passes(),
        None => prepared.passes(node),
    };
    // The extenders filter the one-node list too.
    let mut warnings = Vec::new();
    let fits = fits
        && match extender::filter(extenders, cluster, pod, vec![id], &mut warnings) {
            Ok(filtered) => !filtered.feasible.is_empty(),
            Err(error) => return Some(Decision::Failed { error, warnings }),
        };
    fits.then(|| {
        let all = cluster.node_count();
        let explanation =
            explain.then(|| explain_nodes(cluster, &[id], |_| Vec::new(), &[], unscored, all - 1));
        Decision::placed(id, explanation).with_warnings(warnings)
    })
}
