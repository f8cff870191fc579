//! The scheduling cycle: filter the nodes (in parallel, with feasible-node sampling), score
//! the feasible ones (in parallel), pick the best with a seeded uniform tie-break.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::classes::{Answers, Classes, Shape, stale_cap};
use crate::cluster::{Cluster, NodeId, NodeInfo};
pub use crate::explain::{Explanation, NodeExplanation};
use crate::explain::{RejectedBy, Rejection, ScoreValue, explain_nodes};
use crate::extender::{self, Extender, ExtenderError};
use crate::features::FeatureGates;
use crate::filters::PreparedFilters;
use crate::framework::{
    CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, NodeScore, Reason, Reservation,
    ScorePrep, ScoreRule, highest,
};
use crate::health::Trackers;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::victim_cache::VictimCache;

/// Below this many nodes a pass runs on the calling thread: a pass over fewer nodes takes
/// well under 100 µs, and waking the other workers costs more than it saves. Measured with
/// `berth bench --workload basic` on a 2-core machine, one thread against two: 5,000 nodes
/// 12,500 vs 10,500 pods/s, 7,000 nodes 8,300 vs 7,300, 10,000 nodes 5,800 vs 6,700,
/// 40,000 nodes 1,400 vs 1,800.
const PARALLEL_THRESHOLD: usize = 8192;
/// Fewest nodes per parallel task.
const MIN_NODES_PER_TASK: usize = 128;
/// Parallel tasks per worker thread in one pass, for load balance.
const TASKS_PER_THREAD: usize = 4;
/// Upstream's floor on the number of feasible nodes to look for.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's floor on the adaptive percentage of nodes to score.
const MIN_FEASIBLE_NODES_PERCENTAGE: usize = 5;

/// Mixed into the seed of preemption's generator, so it differs from the tie-break one.
const PREEMPTION_SEED: u64 = 0x7072_6565_6d70_7421;

/// The message when the cluster has no node at all (upstream's ErrNoNodesAvailable).
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

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

/// Why a pod fits no node: each node's reasons, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// Number of nodes in the cluster.
    pub num_all_nodes: usize,
    /// Reason -> number of nodes that gave it.
    pub reasons: BTreeMap<String, usize>,
    /// The nodes whose failure is UnschedulableAndUnresolvable (removing pods cannot help),
    /// in id order. Preemption considers only the others.
    pub unresolvable: Vec<NodeId>,
    /// The filters that rejected at least one node (indices into [`Scheduler::filters`]),
    /// ascending: upstream's unschedulable plugins of the pod.
    pub filters: Vec<usize>,
}

impl FitError {
    /// Whether preemption cannot help on `node`.
    pub fn is_unresolvable(&self, node: NodeId) -> bool {
        self.unresolvable.binary_search(&node).is_ok()
    }
}

impl fmt::Display for FitError {
    /// Upstream's text: `0/N nodes are available: <count> <reason>, ....`, the "count reason"
    /// strings sorted as strings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num_all_nodes == 0 {
            return f.write_str(NO_NODES_AVAILABLE);
        }
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

/// The outcome of one scheduling cycle.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The chosen node, or None when the pod fits nowhere.
    pub node: Option<NodeId>,
    /// Why it fits nowhere.
    pub fit_error: Option<FitError>,
    /// The details, when asked for.
    pub explanation: Option<Explanation>,
    /// A non-ignorable extender failed, which fails the cycle (no node, no FitError).
    pub extender_error: Option<ExtenderError>,
    /// Extender failures that did not fail the cycle: ignorable filters skipped, and
    /// prioritize calls (whose errors upstream always ignores).
    pub extender_warnings: Vec<ExtenderError>,
}

impl Decision {
    fn unplaced(fit_error: FitError, explanation: Option<Explanation>) -> Self {
        Decision {
            node: None,
            fit_error: Some(fit_error),
            explanation,
            extender_error: None,
            extender_warnings: Vec::new(),
        }
    }

    fn placed(node: NodeId, explanation: Option<Explanation>) -> Self {
        Decision {
            node: Some(node),
            fit_error: None,
            explanation,
            extender_error: None,
            extender_warnings: Vec::new(),
        }
    }

    fn extender_failed(error: ExtenderError, warnings: Vec<ExtenderError>) -> Self {
        Decision {
            node: None,
            fit_error: None,
            explanation: None,
            extender_error: Some(error),
            extender_warnings: warnings,
        }
    }

    fn with_warnings(mut self, warnings: Vec<ExtenderError>) -> Self {
        self.extender_warnings = warnings;
        self
    }

    /// Why the pod was not placed (the FitError or the extender's error), as upstream's
    /// Event and PodScheduled condition say it; None when it was placed.
    pub fn failure_message(&self) -> Option<String> {
        if self.node.is_some() {
            return None;
        }
        match (&self.extender_error, &self.fit_error) {
            (Some(e), _) => Some(e.to_string()),
            (None, Some(e)) => Some(e.to_string()),
            (None, None) => Some(NO_NODES_AVAILABLE.to_string()),
        }
    }
}

/// A filter with the name of its policy entry.
#[derive(Clone)]
pub struct NamedFilter {
    /// The policy entry's name.
    pub name: String,
    /// The kube-scheduler plugin the rule is, when it is exactly one (GeneralPredicates is
    /// four, Berth's own and WASM entries none).
    pub upstream: Option<&'static str>,
    /// The rule.
    pub rule: Arc<dyn FilterRule>,
}

impl NamedFilter {
    /// The `plugin` label of upstream's per-plugin metrics: the upstream plugin, else the
    /// policy entry's name.
    pub fn plugin(&self) -> &str {
        self.upstream.unwrap_or(&self.name)
    }
}

/// A score rule with the name and weight of its policy entry.
#[derive(Clone)]
pub struct WeightedScore {
    /// The policy entry's name.
    pub name: String,
    /// The kube-scheduler plugin the rule is (None for WASM plugins).
    pub upstream: Option<&'static str>,
    /// The rule.
    pub rule: Arc<dyn ScoreRule>,
    /// The weight.
    pub weight: i64,
}

impl WeightedScore {
    /// The `plugin` label of upstream's per-plugin metrics: the upstream plugin, else the
    /// policy entry's name.
    pub fn plugin(&self) -> &str {
        self.upstream.unwrap_or(&self.name)
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

/// A configured scheduler: the rules of a policy and the cycle's state between pods.
pub struct Scheduler {
    filters: Vec<NamedFilter>,
    scores: Vec<WeightedScore>,
    config: CycleConfig,
    next_start: usize,
    rng: ChaCha8Rng,
    /// Preemption's own generator (the dry run's random offset), seeded from the same seed
    /// but separate, so a preemption attempt does not shift later tie-breaks.
    preemption_rng: ChaCha8Rng,
    timings: Vec<RuleTiming>,
    extenders: Vec<Arc<dyn Extender>>,
    /// Preemption's dry-run answers, reused across equal pods (see [`crate::victim_cache`]).
    victim_cache: VictimCache,
    /// The history trackers the policy's protections read (see [`crate::health`]).
    trackers: Trackers,
    /// Answers kept for classes of equal pods (see [`crate::classes`]).
    classes: Classes,
}

/// What a preemption attempt uses of its scheduler, borrowed at once.
pub(crate) struct PreemptionParts<'s> {
    pub filters: &'s [NamedFilter],
    pub check_all: bool,
    pub extenders: &'s [Arc<dyn Extender>],
    pub victim_cache: &'s mut VictimCache,
}

impl Scheduler {
    /// A scheduler over these rules (filters in evaluation order, scores with weights).
    pub fn new(filters: Vec<NamedFilter>, scores: Vec<WeightedScore>, config: CycleConfig) -> Self {
        Scheduler {
            filters,
            scores,
            config,
            next_start: 0,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            preemption_rng: ChaCha8Rng::seed_from_u64(config.seed ^ PREEMPTION_SEED),
            timings: Vec::new(),
            extenders: Vec::new(),
            victim_cache: VictimCache::default(),
            trackers: Trackers::default(),
            classes: Classes::new(config.equivalence_classes),
        }
    }

    /// Node answers reused from an earlier pod of the same class, and node answers asked of
    /// the rules (while a class kept answers), since this scheduler began.
    pub fn class_counts(&self) -> (u64, u64) {
        self.classes.counts()
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
        self.extenders = extenders;
        self
    }

    /// The extenders, in call order.
    pub fn extenders(&self) -> &[Arc<dyn Extender>] {
        &self.extenders
    }

    /// The filters, in evaluation order.
    pub fn filters(&self) -> &[NamedFilter] {
        &self.filters
    }

    /// The filters, extenders and shared dry-run answers of a preemption attempt.
    pub(crate) fn preemption_parts(&mut self) -> PreemptionParts<'_> {
        PreemptionParts {
            filters: &self.filters,
            check_all: self.config.always_check_all_predicates,
            extenders: &self.extenders,
            victim_cache: &mut self.victim_cache,
        }
    }

    /// Drops every kept dry-run answer, so the next preemption dry-runs every node.
    #[cfg(test)]
    pub(crate) fn forget_dry_runs(&mut self) {
        self.victim_cache = VictimCache::default();
    }

    /// Preemption dry runs answered from earlier equal pods' answers, and dry runs run,
    /// since this scheduler began.
    pub fn dry_run_counts(&self) -> (u64, u64) {
        self.victim_cache.counts()
    }

    /// The seeded generator of preemption's candidate offset.
    pub(crate) fn preemption_rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.preemption_rng
    }

    /// The score rules with their weights.
    pub fn scores(&self) -> &[WeightedScore] {
        &self.scores
    }

    /// Each rule's preparation time in the last cycle: (its plugin, as
    /// [`NamedFilter::plugin`] and [`WeightedScore::plugin`] name it, extension point,
    /// duration). A cycle that ended early (a filter rejecting the pod everywhere) times only
    /// the rules it prepared.
    pub fn last_cycle_timings(&self) -> impl Iterator<Item = (&str, ExtensionPoint, Duration)> {
        self.timings.iter().map(|t| {
            let plugin = match t.point {
                ExtensionPoint::PreFilter => self.filters[t.index].plugin(),
                ExtensionPoint::PreScore => self.scores[t.index].plugin(),
            };
            (plugin, t.point, t.elapsed)
        })
    }

    /// Reserve: each filter records the side effects of placing `pod` on `node` (volume
    /// bindings for CheckVolumeBinding), before the caller assigns the pod. Only the policy's
    /// filters run, so a policy without CheckVolumeBinding binds no volumes, as upstream.
    pub fn reserve(&self, cluster: &mut Cluster, pod: &PodInfo, node: NodeId) -> Reservation {
        let mut reservation = Reservation::default();
        for f in &self.filters {
            f.rule.reserve(cluster, pod, node, &mut reservation);
        }
        reservation
    }

    /// Unreserve: undoes [`Scheduler::reserve`] (the binding failed), filters in reverse.
    pub fn unreserve(&self, cluster: &mut Cluster, reservation: &Reservation) {
        for f in self.filters.iter().rev() {
            f.rule.unreserve(cluster, reservation);
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
    pub fn schedule(&mut self, cluster: &Cluster, pod: &PodInfo, explain: bool) -> Decision {
        self.schedule_with(cluster, &Nominator::new(), pod, explain)
    }

    /// Prepares every filter for `pod` (upstream's PreFilter), timing each; a filter that
    /// rejects the pod everywhere ends preparation with its index, reasons and their kind.
    pub(crate) fn prepare_filters<'a>(
        filters: &'a [NamedFilter],
        check_all: bool,
        ctx: CycleContext<'a>,
        mut timed: impl FnMut(usize, Duration),
    ) -> Result<PreparedFilters<'a>, (usize, Vec<Reason>, FailureKind)> {
        let mut prepared = PreparedFilters {
            checks: Vec::new(),
            owners: Vec::new(),
            filters,
            check_all,
        };
        for (index, f) in filters.iter().enumerate() {
            let started = Instant::now();
            let prep = f.rule.prepare(ctx);
            timed(index, started.elapsed());
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
                    return Err((index, reasons, kind));
                }
            }
        }
        Ok(prepared)
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
        explain: bool,
    ) -> Decision {
        let all = cluster.node_count();
        if all == 0 {
            return Decision::unplaced(
                FitError {
                    num_all_nodes: 0,
                    reasons: BTreeMap::new(),
                    unresolvable: Vec::new(),
                    filters: Vec::new(),
                },
                explain.then(Explanation::default),
            );
        }
        let ctx = CycleContext {
            cluster,
            pod,
            nominated: !nominator.is_empty(),
        };
        self.timings.clear();
        let timings = &mut self.timings;
        let prepared = Self::prepare_filters(
            &self.filters,
            self.config.always_check_all_predicates,
            ctx,
            |index, elapsed| {
                timings.push(RuleTiming {
                    index,
                    point: ExtensionPoint::PreFilter,
                    elapsed,
                })
            },
        );
        let prepared = match prepared {
            Ok(p) => p,
            Err((filter, reasons, kind)) => {
                let name = &self.filters[filter].name;
                return reject_all(cluster, filter, name, &reasons, kind, explain);
            }
        };
        let nominated = (!nominator.is_empty()).then_some(nominator);
        if let Some(id) = pod
            .pod
            .nominated_node_name
            .as_deref()
            .and_then(|n| cluster.node_by_name(n))
        {
            let node = cluster.node(id);
            let fits = match nominated {
                Some(n) => prepared
                    .status_with_nominated(node, n.for_node(id), pod)
                    .passes(),
                None => prepared.passes(node),
            };
            // Upstream evaluates the nominated node as a list of one node, which leaves its
            // next start index at 0; the extenders filter that list too.
            self.next_start = 0;
            let mut warnings = Vec::new();
            let fits = fits
                && match extender::filter(&self.extenders, cluster, pod, vec![id], &mut warnings) {
                    Ok(filtered) => !filtered.feasible.is_empty(),
                    Err(error) => return Decision::extender_failed(error, warnings),
                };
            if fits {
                let explanation = explain
                    .then(|| explain_nodes(cluster, &[id], |_| Vec::new(), &[], unscored, all - 1));
                return Decision::placed(id, explanation).with_warnings(warnings);
            }
        }
        let timings = &mut self.timings;
        let preps: Vec<ScorePrep<'_>> = self
            .scores
            .iter()
            .enumerate()
            .map(|(index, s)| {
                let started = Instant::now();
                let prep = s.rule.prepare(ctx);
                timings.push(RuleTiming {
                    index,
                    point: ExtensionPoint::PreScore,
                    elapsed: started.elapsed(),
                });
                prep
            })
            .collect();
        let scorers: Vec<&dyn NodeScore> = preps
            .iter()
            .filter_map(|p| match p {
                ScorePrep::PerNode(s) => Some(s.as_ref()),
                ScorePrep::Constant(_) => None,
            })
            .collect();
        let start = self.next_start % all;
        let want = self.feasible_nodes_to_find(all);
        let mut kept = self
            .classes
            .enabled()
            .then(|| Shape {
                checks: prepared.owners.clone(),
                scorers: preps
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| matches!(p, ScorePrep::PerNode(_)))
                    .map(|(i, _)| i)
                    .collect(),
                reuses: prepared
                    .checks
                    .iter()
                    .map(|c| c.reuse())
                    .chain(scorers.iter().map(|s| s.reuse()))
                    .collect(),
            })
            // A nominated pod changes what a node's filters see; nothing is kept then.
            .filter(|shape| nominated.is_none() && shape.reusable())
            .and_then(|shape| self.classes.answers(cluster, &pod.pod, shape));
        let mut asked_first = 0;
        if let Some(answers) = kept.as_deref_mut()
            && let Some(nodes) = answers.few_unknown(stale_cap(all))
        {
            ask_few(cluster, &prepared, &scorers, &nodes, answers);
            asked_first = nodes.len();
        }
        let mut pass = evaluate(
            cluster,
            Walk { start, want },
            &prepared,
            &scorers,
            nominated.map(|n| (n, pod)),
            kept.as_deref(),
        );
        if let Some(answers) = kept {
            for (slot, feasible, raw) in pass.asked.iter() {
                answers.keep(slot, feasible, raw);
            }
            if !pass.gathered {
                let whole = (pass.visited == all).then_some(start);
                pass.columns = answers.columns(&pass.feasible, whole);
            }
            let asked = (pass.asked.len() + asked_first) as u64;
            let reused = (pass.reused - asked_first.min(pass.reused)) as u64;
            answers.judge(reused, asked);
            self.classes.count(reused, asked);
        }
        let Pass {
            feasible,
            columns: raw_columns,
            visited: visited_count,
            ..
        } = pass;
        self.next_start = (start + visited_count) % all;
        let visited = || -> Vec<NodeId> {
            (0..visited_count)
                .map(|i| cluster.node_order()[(start + i) % all])
                .collect()
        };
        let status = |id: NodeId| {
            let node = cluster.node(id);
            match nominated {
                Some(n) => prepared.status_with_nominated(node, n.for_node(id), pod),
                None => prepared.status(node),
            }
        };
        let filters = &self.filters;
        let mut warnings = Vec::new();
        // Upstream calls extenders only when its own filters left some nodes.
        let filtered = if self.extenders.is_empty() || feasible.is_empty() {
            None
        } else {
            match extender::filter(
                &self.extenders,
                cluster,
                pod,
                feasible.clone(),
                &mut warnings,
            ) {
                Ok(filtered) => Some(filtered),
                Err(error) => return Decision::extender_failed(error, warnings),
            }
        };
        let extender_rejections: FxHashMap<NodeId, Vec<Rejection>> = filtered
            .as_ref()
            .filter(|_| explain)
            .map(|f| self.extender_rejections(cluster, f))
            .unwrap_or_default();
        let rejections = |id: NodeId| {
            let s = prepared.attributed_status(
                cluster.node(id),
                nominated.map(|n| n.for_node(id)),
                pod,
            );
            let mut r: Vec<Rejection> = s
                .reasons
                .iter()
                .zip(&s.rules)
                .map(|(reason, rule)| Rejection {
                    by: RejectedBy::Filter(filters[*rule].name.clone()),
                    reason: reason.as_str().to_string(),
                })
                .collect();
            if let Some(more) = extender_rejections.get(&id) {
                r.extend(more.iter().cloned());
            }
            r
        };
        let (chosen, raw_columns) = match &filtered {
            None => (feasible, raw_columns),
            Some(f) => (
                f.feasible.clone(),
                select_rows(&feasible, raw_columns, &f.feasible),
            ),
        };
        if chosen.is_empty() {
            let mut counts = BTreeMap::new();
            let mut unresolvable = Vec::new();
            let mut filters = Vec::new();
            for id in visited() {
                let s = status(id);
                filters.extend(s.rejected_by);
                for r in s.reasons {
                    *counts.entry(r.as_str().to_string()).or_insert(0) += 1;
                }
                if s.kind == Some(FailureKind::UnschedulableAndUnresolvable) {
                    unresolvable.push(id);
                }
            }
            // Upstream counts every message an extender gave, under the node it named; its
            // FailedAndUnresolvableNodes are left out of preemption.
            if let Some(f) = &filtered {
                for (_, _, message) in &f.reasons {
                    *counts.entry(message.clone()).or_insert(0) += 1;
                }
                unresolvable.extend(&f.unresolvable);
            }
            unresolvable.sort_unstable();
            unresolvable.dedup();
            filters.sort_unstable();
            filters.dedup();
            let explanation =
                explain.then(|| explain_nodes(cluster, &visited(), rejections, &[], unscored, 0));
            return Decision::unplaced(
                FitError {
                    num_all_nodes: all,
                    reasons: counts,
                    unresolvable,
                    filters,
                },
                explanation,
            )
            .with_warnings(warnings);
        }
        let not_evaluated = all - visited_count;
        if chosen.len() == 1 {
            let explanation = explain.then(|| {
                explain_nodes(
                    cluster,
                    &visited(),
                    rejections,
                    &[],
                    unscored,
                    not_evaluated,
                )
            });
            return Decision::placed(chosen[0], explanation).with_warnings(warnings);
        }
        // Extenders score while the engine normalises its own scores.
        let scoring = (!self.extenders.is_empty())
            .then(|| extender::start_scoring(&self.extenders, cluster, pod, &chosen));
        // The raw scores, kept only when explaining: normalising overwrites them.
        let raw_kept = explain.then(|| raw_scores(&scorers, &chosen, raw_columns.clone()));
        let mut columns = normalized_columns(&preps, &chosen, raw_columns);
        let mut weights: Vec<i64> = self.scores.iter().map(|s| s.weight).collect();
        let mut names: Vec<String> = Vec::new();
        let mut extender_raw: Vec<Vec<i64>> = Vec::new();
        if let Some(scoring) = scoring {
            let asked: Vec<usize> = scoring.extenders().collect();
            let scored = scoring.collect(&self.extenders, cluster, &chosen, &mut warnings);
            for (index, column) in asked.into_iter().zip(scored) {
                let e = &self.extenders[index];
                weights.push(e.weight());
                if explain {
                    names.push(format!("extender {}", e.name()));
                    extender_raw.push(column.clone());
                }
                columns.push(Column::Values(
                    column.into_iter().map(extender::scale).collect(),
                ));
            }
        }
        let constant: i64 = columns
            .iter()
            .zip(&weights)
            .filter_map(|(col, weight)| match col {
                Column::Constant(v) => Some(v.saturating_mul(*weight)),
                Column::Values(_) => None,
            })
            .fold(0i64, i64::saturating_add);
        let totals = weighted_totals(constant, &columns, &weights, chosen.len());
        let best = select_best(&mut self.rng, &totals);
        let explanation = explain.then(|| {
            let raw = raw_columns_of(&preps, raw_kept.unwrap_or_default(), extender_raw);
            let row = |r: usize| {
                let scores = raw
                    .iter()
                    .zip(&columns)
                    .zip(&weights)
                    .map(|((raw, normalized), weight)| {
                        let normalized = normalized.get(r);
                        ScoreValue {
                            raw: raw.get(r),
                            normalized,
                            weighted: normalized.saturating_mul(*weight),
                        }
                    })
                    .collect();
                (scores, totals[r])
            };
            let mut e = explain_nodes(cluster, &visited(), rejections, &chosen, row, not_evaluated);
            e.score_rules = self
                .scores
                .iter()
                .map(|s| s.name.clone())
                .chain(names)
                .zip(weights.iter().copied())
                .collect();
            e
        });
        Decision::placed(chosen[best], explanation).with_warnings(warnings)
    }

    /// Each node's extender failure messages, and for a node an extender dropped without a
    /// message, a note naming the extender (explanations only).
    fn extender_rejections(
        &self,
        cluster: &Cluster,
        filtered: &extender::Filtered,
    ) -> FxHashMap<NodeId, Vec<Rejection>> {
        let by = |index: usize| RejectedBy::Extender(self.extenders[index].name().to_string());
        let mut map: FxHashMap<NodeId, Vec<Rejection>> = FxHashMap::default();
        for (index, node, message) in &filtered.reasons {
            if let Some(id) = cluster.node_by_name(node) {
                map.entry(id).or_default().push(Rejection {
                    by: by(*index),
                    reason: message.clone(),
                });
            }
        }
        for (id, index) in &filtered.removed_by {
            map.entry(*id).or_insert_with(|| {
                vec![Rejection {
                    by: by(*index),
                    reason: format!("filtered out by extender {}", self.extenders[*index].name()),
                }]
            });
        }
        map
    }
}

/// Where a pass starts in visiting order, and how many feasible nodes it looks for.
#[derive(Debug, Clone, Copy)]
struct Walk {
    start: usize,
    want: usize,
}

/// Visits nodes from `walk.start` in visiting order until `walk.want` feasible ones are
/// found, scoring each feasible node as it goes (raw scores do not depend on which other
/// nodes are feasible; normalisation, done later, does). Batches are evaluated in parallel
/// but consumed in visiting order, so the result does not depend on thread timing. With
/// `kept` (the pod's class answers, see [`crate::classes`]), a node with a kept answer is
/// not asked again, and the answers asked are returned for keeping.
fn evaluate(
    cluster: &Cluster,
    walk: Walk,
    prepared: &PreparedFilters<'_>,
    scorers: &[&dyn NodeScore],
    nominated: Option<(&Nominator, &PodInfo)>,
    kept: Option<&Answers>,
) -> Pass {
    let Walk { start, want } = walk;
    let checks = &prepared.checks;
    let order = cluster.node_order();
    let all = order.len();
    if let Some(k) = kept.filter(|k| k.all_known()) {
        if want >= all
            && let Some((feasible, columns)) = k.view(start)
        {
            return Pass {
                feasible,
                columns,
                gathered: true,
                visited: all,
                asked: Asked::new(0),
                reused: all,
            };
        }
        return walk_kept(order, walk, k);
    }
    // Columns the pass builds itself: none when the class's answers hold the raw scores.
    let width = if kept.is_some() { 0 } else { scorers.len() };
    let run = |range: Range<usize>| {
        let mut chunk = Chunk {
            len: range.len(),
            positions: Vec::with_capacity(range.len()),
            feasible: Vec::with_capacity(range.len()),
            columns: vec![Vec::with_capacity(range.len()); width],
            asked: Asked::new(scorers.len()),
            reused: 0,
        };
        let first = range.start;
        let mut scratch = Vec::new();
        // Feasibility does not depend on the order filters run in (only reported reasons
        // do, and those are recomputed in policy order), so each task moves a filter that
        // rejects a node one place forward: the most selective filters drift to the front.
        // (Moving straight to the front thrashes when two filters take turns rejecting.)
        let mut check_order: Vec<usize> = (0..checks.len()).collect();
        let masks: Vec<Option<&[bool]>> = checks.iter().map(|c| c.mask()).collect();
        for i in range {
            // `start + i < 2 * all`: one subtraction instead of a division per node.
            let at = start + i;
            let id = order[if at >= all { at - all } else { at }];
            let slot = id.0 as usize;
            if let Some(feasible) = kept.and_then(|k| k.feasible(slot)) {
                chunk.reused += 1;
                if feasible {
                    chunk.positions.push(i - first);
                    chunk.feasible.push(id);
                }
                continue;
            }
            let node = cluster.node(id);
            let rejected_by = first_rejecting(node, checks, &masks, &check_order, &mut scratch);
            if let Some(p) = rejected_by.filter(|p| *p > 0) {
                check_order.swap(p - 1, p);
            }
            let feasible = rejected_by.is_none()
                && nominated
                    .is_none_or(|(n, pod)| prepared.passes_nominated(node, n.for_node(id), pod));
            if feasible {
                chunk.positions.push(i - first);
                chunk.feasible.push(id);
            }
            if kept.is_some() {
                // The raw scores go to the class's answers, and the cycle gathers every
                // feasible node's from there.
                chunk
                    .asked
                    .push(slot, feasible, scorers.iter().map(|s| s.score(node)));
            } else if feasible {
                for (column, s) in chunk.columns.iter_mut().zip(scorers) {
                    column.push(s.score(node));
                }
            }
        }
        chunk
    };
    let mut pass = Pass {
        feasible: Vec::with_capacity(want.min(all)),
        columns: vec![Vec::with_capacity(want.min(all)); width],
        gathered: false,
        visited: 0,
        asked: Asked::new(scorers.len()),
        reused: 0,
    };
    while pass.visited < all && pass.feasible.len() < want {
        let remaining = all - pass.visited;
        let batch = if want >= all {
            remaining
        } else {
            remaining.min(((want - pass.feasible.len()) * 2).max(MIN_NODES_PER_TASK * 4))
        };
        let first = pass.visited;
        let chunks: Vec<Chunk> = if batch < PARALLEL_THRESHOLD || rayon::current_num_threads() == 1
        {
            vec![run(first..first + batch)]
        } else {
            let tasks = (rayon::current_num_threads() * TASKS_PER_THREAD)
                .min(batch / MIN_NODES_PER_TASK)
                .max(1);
            let size = batch.div_ceil(tasks);
            (0..tasks)
                .into_par_iter()
                .map(|t| run(first + t * size..(first + (t + 1) * size).min(first + batch)))
                .collect()
        };
        for chunk in chunks {
            // Every asked answer is right for this cluster, whether or not the pass uses it.
            pass.asked.append(&chunk.asked);
            pass.reused += chunk.reused;
            let room = want - pass.feasible.len();
            if room == 0 {
                continue;
            }
            let take = chunk.feasible.len().min(room);
            // Stop right after the node that fills the quota; later nodes of the chunk
            // count as not visited, so the next cycle starts there.
            pass.visited += if take == room {
                chunk.positions[take - 1] + 1
            } else {
                chunk.len
            };
            if pass.feasible.is_empty() && take == chunk.feasible.len() {
                // The usual single whole chunk: moved, not copied.
                pass.feasible = chunk.feasible;
                if kept.is_none() {
                    pass.columns = chunk.columns;
                }
                continue;
            }
            pass.feasible.extend_from_slice(&chunk.feasible[..take]);
            if kept.is_none() {
                for (into, from) in pass.columns.iter_mut().zip(&chunk.columns) {
                    into.extend_from_slice(&from[..take]);
                }
            }
        }
    }
    pass
}

/// The position in `check_order` of the first check that rejects `node`, if any.
#[inline]
fn first_rejecting(
    node: &NodeInfo,
    checks: &[Box<dyn NodeCheck + '_>],
    masks: &[Option<&[bool]>],
    check_order: &[usize],
    scratch: &mut Vec<Reason>,
) -> Option<usize> {
    scratch.clear();
    let slot = node.id.0 as usize;
    check_order.iter().position(|&c| match masks[c] {
        Some(mask) => !mask.get(slot).copied().unwrap_or(false),
        None => !checks[c].check(node, scratch),
    })
}

/// Asks the rules about `nodes` (a class's few nodes without a kept answer) and keeps the
/// answers, so that the pass can walk kept verdicts alone.
fn ask_few(
    cluster: &Cluster,
    prepared: &PreparedFilters<'_>,
    scorers: &[&dyn NodeScore],
    nodes: &[NodeId],
    kept: &mut Answers,
) {
    let checks = &prepared.checks;
    let masks: Vec<Option<&[bool]>> = checks.iter().map(|c| c.mask()).collect();
    let check_order: Vec<usize> = (0..checks.len()).collect();
    let mut scratch = Vec::new();
    let mut raw = Vec::with_capacity(scorers.len());
    for id in nodes {
        let node = cluster.node(*id);
        let feasible = first_rejecting(node, checks, &masks, &check_order, &mut scratch).is_none();
        raw.clear();
        if feasible {
            raw.extend(scorers.iter().map(|s| s.score(node)));
        }
        kept.keep(id.0 as usize, feasible, &raw);
    }
}

/// [`evaluate`] when the class's answers cover every node: a walk over kept verdicts, in
/// visiting order, stopping right after the node that fills the quota.
fn walk_kept(order: &[NodeId], walk: Walk, kept: &Answers) -> Pass {
    let all = order.len();
    let mut feasible = Vec::with_capacity(walk.want.min(all));
    let mut visited = 0;
    let (tail, head) = order.split_at(walk.start);
    for id in head.iter().chain(tail) {
        if feasible.len() == walk.want {
            break;
        }
        visited += 1;
        if kept.feasible(id.0 as usize) == Some(true) {
            feasible.push(*id);
        }
    }
    Pass {
        feasible,
        columns: Vec::new(),
        gathered: false,
        visited,
        asked: Asked::new(0),
        reused: visited,
    }
}

/// Node answers a pass asked of the rules: (node slot, feasible), and the raw scores of
/// the feasible ones, `width` each.
struct Asked {
    width: usize,
    nodes: Vec<(u32, bool)>,
    raw: Vec<i64>,
}

impl Asked {
    fn new(width: usize) -> Self {
        Asked {
            width,
            nodes: Vec::new(),
            raw: Vec::new(),
        }
    }

    fn push(&mut self, slot: usize, feasible: bool, raw: impl Iterator<Item = i64>) {
        self.nodes.push((slot as u32, feasible));
        if feasible {
            self.raw.extend(raw);
        }
    }

    fn append(&mut self, other: &Asked) {
        self.nodes.extend_from_slice(&other.nodes);
        self.raw.extend_from_slice(&other.raw);
    }

    fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Each answer: (node slot, feasible, raw scores; empty for a node that fails).
    fn iter(&self) -> impl Iterator<Item = (usize, bool, &[i64])> {
        let mut at = 0;
        self.nodes.iter().map(move |(slot, feasible)| {
            let raw = if *feasible {
                let r = &self.raw[at..at + self.width];
                at += self.width;
                r
            } else {
                &[][..]
            };
            (*slot as usize, *feasible, raw)
        })
    }
}

/// What one evaluation pass found.
struct Pass {
    /// Feasible nodes in visiting order.
    feasible: Vec<NodeId>,
    /// Raw scores of the feasible nodes, one column per per-node score rule.
    columns: Vec<Vec<i64>>,
    /// Whether `columns` came from the class's answers already (else, with a class, the
    /// cycle gathers them after keeping what the pass asked).
    gathered: bool,
    /// How many nodes were consumed (from the start position, in visiting order).
    visited: usize,
    /// The node answers asked of the rules, for a class to keep (only when it keeps any).
    asked: Asked,
    /// How many nodes were answered from kept answers.
    reused: usize,
}

/// One parallel task's share of a pass.
struct Chunk {
    /// Nodes evaluated.
    len: usize,
    /// Offsets (within the chunk) of the feasible nodes.
    positions: Vec<usize>,
    /// The feasible nodes.
    feasible: Vec<NodeId>,
    /// Their raw scores, one column per per-node score rule.
    columns: Vec<Vec<i64>>,
    /// The node answers asked of the rules (only when a class keeps them).
    asked: Asked,
    /// How many nodes were answered from kept answers.
    reused: usize,
}

/// One score rule's normalised scores of the feasible nodes.
enum Column {
    /// The same score for every node.
    Constant(i64),
    /// One score per feasible node, in feasible order.
    Values(Vec<i64>),
}

impl Column {
    fn get(&self, row: usize) -> i64 {
        match self {
            Column::Constant(v) => *v,
            Column::Values(values) => values[row],
        }
    }
}

/// Normalised scores, one column per score rule. Normalisers are independent of each other,
/// so they run in parallel.
fn normalized_columns(
    preps: &[ScorePrep<'_>],
    feasible: &[NodeId],
    raw: Vec<Vec<i64>>,
) -> Vec<Column> {
    enum Job<'a> {
        Constant(i64),
        Normalize(&'a dyn NodeScore, Vec<i64>),
    }
    let mut raw = raw.into_iter();
    let jobs: Vec<Job<'_>> = preps
        .iter()
        .map(|p| match p {
            ScorePrep::Constant(v) => Job::Constant(*v),
            ScorePrep::PerNode(s) => Job::Normalize(
                s.as_ref(),
                raw.next()
                    .expect("the pass keeps one raw column per per-node score rule"),
            ),
        })
        .collect();
    let normalize = |job: Job<'_>| match job {
        Job::Constant(v) => Column::Constant(v),
        Job::Normalize(s, mut col) => {
            s.normalize(feasible, &mut col);
            Column::Values(col)
        }
    };
    if feasible.len() < PARALLEL_THRESHOLD || rayon::current_num_threads() == 1 {
        jobs.into_iter().map(normalize).collect()
    } else {
        jobs.into_par_iter().map(normalize).collect()
    }
}

fn reject_all(
    cluster: &Cluster,
    filter: usize,
    name: &str,
    reasons: &[Reason],
    kind: FailureKind,
    explain: bool,
) -> Decision {
    let all = cluster.node_count();
    let counts = reasons
        .iter()
        .map(|r| (r.as_str().to_string(), all))
        .collect();
    let mut unresolvable = Vec::new();
    if kind == FailureKind::UnschedulableAndUnresolvable {
        unresolvable = cluster.node_order().to_vec();
        unresolvable.sort_unstable();
    }
    let rejections = || -> Vec<Rejection> {
        reasons
            .iter()
            .map(|r| Rejection {
                by: RejectedBy::Filter(name.to_string()),
                reason: r.as_str().to_string(),
            })
            .collect()
    };
    Decision::unplaced(
        FitError {
            num_all_nodes: all,
            reasons: counts,
            unresolvable,
            filters: vec![filter],
        },
        explain.then(|| {
            explain_nodes(
                cluster,
                cluster.node_order(),
                |_| rejections(),
                &[],
                unscored,
                0,
            )
        }),
    )
}

/// The row function of a cycle that scored nothing.
fn unscored(_: usize) -> (Vec<ScoreValue>, i64) {
    (Vec::new(), 0)
}

/// The pass's raw score columns with the raw scores of rules that compute them only while
/// normalising filled in ([`NodeScore::raw_scores`]).
fn raw_scores(
    scorers: &[&dyn NodeScore],
    feasible: &[NodeId],
    mut raw: Vec<Vec<i64>>,
) -> Vec<Vec<i64>> {
    for (s, column) in scorers.iter().zip(&mut raw) {
        s.raw_scores(feasible, column);
    }
    raw
}

/// The raw scores of every score rule, in column order: a constant rule's value, a per-node
/// rule's column as the pass gave it (`per_node`, in order), then the extenders' answers.
fn raw_columns_of(
    preps: &[ScorePrep<'_>],
    per_node: Vec<Vec<i64>>,
    extenders: Vec<Vec<i64>>,
) -> Vec<Column> {
    let mut per_node = per_node.into_iter();
    preps
        .iter()
        .map(|p| match p {
            ScorePrep::Constant(v) => Column::Constant(*v),
            ScorePrep::PerNode(_) => Column::Values(
                per_node
                    .next()
                    .expect("the pass keeps one raw column per per-node score rule"),
            ),
        })
        .chain(extenders.into_iter().map(Column::Values))
        .collect()
}

/// The raw score rows of `kept` (a subset of `feasible`, in any order), in `kept`'s order.
fn select_rows(feasible: &[NodeId], columns: Vec<Vec<i64>>, kept: &[NodeId]) -> Vec<Vec<i64>> {
    let rows: FxHashMap<NodeId, usize> = feasible
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i))
        .collect();
    let picks: Vec<usize> = kept.iter().map(|id| rows[id]).collect();
    columns
        .into_iter()
        .map(|column| picks.iter().map(|row| column[*row]).collect())
        .collect()
}

/// Each node's weighted sum of its normalised scores, saturating at the ends of i64. While
/// every score lies in `0..=limit`, where `limit` times the summed weights fits beside the
/// constant part, no sum can come near the ends, so plain arithmetic gives the same sums;
/// the loops check that as they add, in the same passes (the cycle runs this over every
/// feasible node for every pod). A score outside it sums again, saturating.
fn weighted_totals(constant: i64, columns: &[Column], weights: &[i64], len: usize) -> Vec<i64> {
    let values = || {
        columns
            .iter()
            .zip(weights)
            .filter_map(|(col, weight)| match col {
                Column::Values(values) => Some((values, *weight)),
                Column::Constant(_) => None,
            })
    };
    let weight_sum = values().fold(0u64, |sum, (_, w)| sum.saturating_add(w.unsigned_abs()));
    let limit = (i64::MAX
        .unsigned_abs()
        .saturating_sub(constant.unsigned_abs()))
        / weight_sum.max(1);
    let mut totals = vec![constant; len];
    let mut within = true;
    // Up to three columns per pass over the nodes: each total is read and written once per
    // pass rather than once per column, which at tens of thousands of nodes is most of the
    // memory traffic.
    let weighted: Vec<(&Vec<i64>, i64)> = values().collect();
    let ok = |s: i64| (s as u64) <= limit;
    for group in weighted.chunks(3) {
        match group {
            [(a, wa), (b, wb), (c, wc)] => {
                for (((t, x), y), z) in totals.iter_mut().zip(*a).zip(*b).zip(*c) {
                    within &= ok(*x) & ok(*y) & ok(*z);
                    *t = t
                        .wrapping_add(x.wrapping_mul(*wa))
                        .wrapping_add(y.wrapping_mul(*wb))
                        .wrapping_add(z.wrapping_mul(*wc));
                }
            }
            [(a, wa), (b, wb)] => {
                for ((t, x), y) in totals.iter_mut().zip(*a).zip(*b) {
                    within &= ok(*x) & ok(*y);
                    *t = t
                        .wrapping_add(x.wrapping_mul(*wa))
                        .wrapping_add(y.wrapping_mul(*wb));
                }
            }
            _ => {
                for (values, weight) in group {
                    for (t, x) in totals.iter_mut().zip(*values) {
                        within &= ok(*x);
                        *t = t.wrapping_add(x.wrapping_mul(*weight));
                    }
                }
            }
        }
    }
    if !within {
        totals.fill(constant);
        for (values, weight) in values() {
            for (t, s) in totals.iter_mut().zip(values) {
                *t = t.saturating_add(s.saturating_mul(weight));
            }
        }
    }
    totals
}

/// Index of the highest total; ties broken uniformly at random, as upstream's selectHost
/// (which samples a reservoir as it goes). One draw among the ties, counted first, picks
/// the same distribution at a fraction of the cost: nodes of a fresh cluster often all tie.
fn select_best(rng: &mut ChaCha8Rng, totals: &[i64]) -> usize {
    let Some(best) = highest(totals) else {
        return 0;
    };
    let ties = totals.iter().filter(|t| **t == best).count();
    let pick = if ties > 1 {
        rng.random_range(0..ties)
    } else {
        0
    };
    totals
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == best)
        .nth(pick)
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nominator::Nominator;
    use crate::rules::{
        inter_pod_affinity, least_requested::LeastRequested, node_selector, pod_topology_spread,
        resources_fit,
    };
    use crate::testkit::*;

    fn policy(text: &str) -> berth_policy::EffectivePolicy {
        berth_policy::parse(text, "test.json").expect("test policy")
    }

    fn scheduler(text: &str, config: CycleConfig) -> Scheduler {
        crate::registry::scheduler_for(&policy(text), config).expect("scheduler")
    }

    /// `n` nodes spread over zones a, b, c in round-robin creation order.
    fn zoned(n: usize) -> Cluster {
        let zones = ["a", "b", "c"];
        cluster(
            (0..n)
                .map(|i| {
                    node(&format!("n{i}"))
                        .label("topology.kubernetes.io/zone", zones[i % 3])
                        .build()
                })
                .collect(),
            vec![],
        )
    }

    #[test]
    fn feasible_nodes_to_find_follows_upstream() {
        // (nodes, percentageOfNodesToScore, expected)
        let cases = [
            (50, 0, 50),      // fewer than 100 nodes: all
            (100, 0, 100),    // 50 - 0 = 50% of 100 = 50, but at least 100
            (1000, 0, 420),   // 50 - 1000/125 = 42%
            (5000, 0, 500),   // 50 - 40 = 10%
            (6000, 0, 300),   // 50 - 48 = 2% -> floor 5% = 300
            (5000, 30, 1500), // explicit percentage
            (5000, 1, 100),   // 1% = 50, at least 100
            (5000, 100, 5000),
        ];
        for (all, pct, want) in cases {
            let s = scheduler(
                r#"{"predicates":[],"priorities":[]}"#,
                CycleConfig {
                    percentage_of_nodes_to_score: pct,
                    ..CycleConfig::default()
                },
            );
            assert_eq!(s.feasible_nodes_to_find(all), want, "{all} nodes at {pct}%");
        }
    }

    #[test]
    fn nodes_are_visited_round_robin_across_zones() {
        let c = cluster(
            vec![
                node("a1").label("topology.kubernetes.io/zone", "a").build(),
                node("a2").label("topology.kubernetes.io/zone", "a").build(),
                node("a3").label("topology.kubernetes.io/zone", "a").build(),
                node("b1").label("topology.kubernetes.io/zone", "b").build(),
                node("none").build(),
            ],
            vec![],
        );
        let names: Vec<&str> = c.node_order().iter().map(|id| c.node(*id).name()).collect();
        assert_eq!(names, ["a1", "b1", "none", "a2", "a3"]);
    }

    #[test]
    fn sampling_stops_early_and_the_next_cycle_resumes_where_it_stopped() {
        let mut c = zoned(300);
        let p = c.compile_pod(pod("p").build());
        let mut s = scheduler(
            r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
            CycleConfig {
                percentage_of_nodes_to_score: 10,
                ..CycleConfig::default()
            },
        );
        let d = s.schedule(&c, &p, true);
        let e = d.explanation.expect("explained");
        // 10% of 300 is below the floor of 100 feasible nodes.
        assert_eq!(e.nodes.len(), 100);
        assert_eq!(e.not_evaluated, 200);
        let first_of_next = c.node_order()[100];
        let d = s.schedule(&c, &p, true);
        let e = d.explanation.expect("explained");
        assert_eq!(e.nodes[0].node, c.node(first_of_next).name());
        // Wrapping around: the third cycle covers 200..300.
        s.schedule(&c, &p, false);
        assert_eq!(s.next_start, 0);
    }

    #[test]
    fn weighted_totals_saturate_only_where_plain_sums_would_overflow() {
        let values = |v: &[i64]| Column::Values(v.to_vec());
        type Case = (&'static str, i64, Vec<Column>, Vec<i64>, Vec<i64>);
        let cases: Vec<Case> = vec![
            (
                "plain sums",
                5,
                vec![values(&[0, 100]), Column::Constant(7), values(&[3, 1])],
                vec![2, 9, 10],
                vec![35, 215],
            ),
            (
                "four columns: three in one pass, then one",
                1,
                vec![
                    values(&[1, 2]),
                    values(&[10, 20]),
                    Column::Constant(50),
                    values(&[100, 0]),
                    values(&[3, 4]),
                ],
                vec![1, 2, 7, 3, 5],
                vec![1 + 1 + 20 + 300 + 15, 1 + 2 + 40 + 20],
            ),
            (
                "three columns, the last one far too large, saturate",
                0,
                vec![values(&[1]), values(&[1]), values(&[i64::MAX])],
                vec![1, 1, 1],
                vec![i64::MAX],
            ),
            (
                "a negative score takes the checked path and sums the same",
                0,
                vec![values(&[-4, 2])],
                vec![3],
                vec![-12, 6],
            ),
            (
                "a huge weight saturates at the top",
                0,
                vec![values(&[2, 0]), values(&[1, 1])],
                vec![i64::MAX / 2 + 1, 1],
                vec![i64::MAX, 1],
            ),
            (
                "a huge negative score saturates at the bottom",
                -10,
                vec![values(&[i64::MIN / 2, 1])],
                vec![4],
                vec![i64::MIN, -6],
            ),
            (
                "scores at the limit still sum plainly",
                i64::MAX - 200,
                vec![values(&[100]), values(&[100])],
                vec![1, 1],
                vec![i64::MAX],
            ),
            (
                "one past the limit saturates",
                i64::MAX - 200,
                vec![values(&[100]), values(&[101])],
                vec![1, 1],
                vec![i64::MAX],
            ),
        ];
        for (name, constant, columns, weights, want) in cases {
            assert_eq!(
                weighted_totals(constant, &columns, &weights, want.len()),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn ties_are_broken_by_the_seed_and_reproducibly() {
        let mut c = zoned(12);
        let info = c.compile_pod(pod("p").build());
        let text =
            r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;
        let picks = |seed| {
            let mut s = scheduler(
                text,
                CycleConfig {
                    seed,
                    ..CycleConfig::default()
                },
            );
            (0..20)
                .map(|_| s.schedule(&c, &info, false).node.expect("placed"))
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(1), picks(1));
        assert_ne!(picks(1), picks(2));
        let distinct: std::collections::BTreeSet<_> = picks(3).into_iter().collect();
        assert!(
            distinct.len() > 3,
            "uniform tie-break should spread over equal nodes"
        );
    }

    #[test]
    fn one_feasible_node_is_chosen_without_scoring() {
        let mut c = cluster(
            vec![
                node("big").cpu(8000).build(),
                node("small").cpu(100).build(),
            ],
            vec![],
        );
        let mut s = Scheduler::new(
            vec![NamedFilter {
                name: "PodFitsResources".into(),
                upstream: Some(resources_fit::UPSTREAM_PLUGIN),
                rule: Arc::new(resources_fit::PodFitsResources::new(vec![])),
            }],
            vec![WeightedScore {
                name: "LeastRequestedPriority".into(),
                upstream: Some(crate::rules::least_requested::UPSTREAM_PLUGIN),
                rule: Arc::new(LeastRequested),
                weight: 1,
            }],
            CycleConfig::default(),
        );
        let p = c.compile_pod(pod("p").req(1000, 0).build());
        let d = s.schedule(&c, &p, true);
        assert_eq!(c.node(d.node.expect("placed")).name(), "big");
        let e = d.explanation.expect("explained");
        assert!(e.score_rules.is_empty() && e.nodes.iter().all(|n| n.total.is_none()));
    }

    /// Each rejection names the policy entry that made it; each score keeps its raw value
    /// beside the normalised and weighted ones.
    #[test]
    fn explanations_attribute_rejections_and_keep_raw_scores() {
        use crate::model::TaintEffect;
        let text = r#"{"predicates":[{"name":"GeneralPredicates"},{"name":"PodToleratesNodeTaints"}],
            "priorities":[{"name":"TaintTolerationPriority","weight":2}]}"#;
        let mut c = cluster(
            vec![
                node("small").cpu(100).build(),
                node("tainted")
                    .taint("k", "v", TaintEffect::NoSchedule)
                    .build(),
                node("avoided")
                    .taint("k", "v", TaintEffect::PreferNoSchedule)
                    .build(),
                node("clean").build(),
            ],
            vec![],
        );
        let p = c.compile_pod(pod("p").req(1000, 0).build());
        let d = scheduler(text, CycleConfig::default()).schedule(&c, &p, true);
        assert_eq!(c.node(d.node.expect("placed")).name(), "clean");
        let e = d.explanation.expect("explained");
        assert_eq!(e.score_rules, [("TaintTolerationPriority".to_string(), 2)]);
        let by_name = |name: &str| e.nodes.iter().find(|n| n.node == name).expect(name);
        let rejected_by = |name: &str| -> Vec<(RejectedBy, String)> {
            by_name(name)
                .rejections
                .iter()
                .map(|r| (r.by.clone(), r.reason.clone()))
                .collect()
        };
        assert_eq!(
            rejected_by("small"),
            [(
                RejectedBy::Filter("GeneralPredicates".into()),
                resources_fit::REASON_CPU.to_string()
            )]
        );
        let tainted = rejected_by("tainted");
        assert_eq!(tainted.len(), 1);
        assert_eq!(
            tainted[0].0,
            RejectedBy::Filter("PodToleratesNodeTaints".into())
        );
        // One PreferNoSchedule taint not tolerated: raw 1, reversed to 0 by normalising.
        let avoided = by_name("avoided");
        assert_eq!(
            avoided.scores,
            [ScoreValue {
                raw: 1,
                normalized: 0,
                weighted: 0
            }]
        );
        assert_eq!(avoided.total, Some(0));
        let clean = by_name("clean");
        assert_eq!(
            clean.scores,
            [ScoreValue {
                raw: 0,
                normalized: 100,
                weighted: 200
            }]
        );
        assert_eq!(clean.total, Some(200));
        assert!(clean.feasible() && !by_name("small").feasible());
    }

    /// A filter that rejects the pod everywhere in its preparation is named on every node.
    #[test]
    fn a_filter_rejecting_everywhere_is_named_on_every_node() {
        let text = r#"{"predicates":[{"name":"CheckVolumeBinding"}],"priorities":[]}"#;
        let mut c = zoned(3);
        let p = c.compile_pod(pod("p").claim("missing").build());
        let d = scheduler(text, CycleConfig::default()).schedule(&c, &p, true);
        assert_eq!(d.node, None);
        let e = d.explanation.expect("explained");
        assert_eq!(e.nodes.len(), 3);
        for n in &e.nodes {
            assert_eq!(n.rejections.len(), 1, "{}", n.node);
            assert_eq!(
                n.rejections[0].by,
                RejectedBy::Filter("CheckVolumeBinding".into())
            );
            assert!(
                d.fit_error
                    .as_ref()
                    .expect("unschedulable")
                    .reasons
                    .contains_key(&n.rejections[0].reason)
            );
        }
    }

    #[test]
    fn fit_error_counts_reasons_per_node_and_sorts_them_as_strings() {
        let text = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[]}"#;
        let mut c = cluster(
            vec![
                node("a").cpu(100).label("disk", "ssd").build(),
                node("b").cpu(100).build(),
                node("c").cpu(8000).build(),
            ],
            vec![],
        );
        let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
        let d = scheduler(text, CycleConfig::default()).schedule(&c, &p, false);
        assert_eq!(
            d.fit_error.expect("unschedulable").to_string(),
            format!(
                "0/3 nodes are available: 1 {}, 2 {}.",
                node_selector::REASON,
                resources_fit::REASON_CPU
            )
        );
        // With alwaysCheckAllPredicates every failing part of every node counts.
        let all = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[],"alwaysCheckAllPredicates":true}"#;
        let d = scheduler(all, CycleConfig::default()).schedule(&c, &p, false);
        assert_eq!(
            d.fit_error.expect("unschedulable").to_string(),
            format!(
                "0/3 nodes are available: 2 {}, 2 {}.",
                resources_fit::REASON_CPU,
                node_selector::REASON
            )
        );
    }

    /// The FitError names the filters that rejected some node (upstream's unschedulable
    /// plugins), each with its upstream plugin when it is exactly one.
    #[test]
    fn fit_error_names_the_filters_that_rejected_nodes() {
        let text = r#"{"predicates":[{"name":"PodFitsResources"},{"name":"MatchNodeSelector"},
            {"name":"NoDiskConflict"}],"priorities":[]}"#;
        let mut c = cluster(
            vec![
                node("a").cpu(100).label("disk", "ssd").build(),
                node("b").cpu(8000).build(),
            ],
            vec![],
        );
        let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
        let s = scheduler(text, CycleConfig::default());
        let names = |indices: &[usize]| -> Vec<(String, Option<&'static str>)> {
            indices
                .iter()
                .map(|&i| (s.filters()[i].name.clone(), s.filters()[i].upstream))
                .collect()
        };
        let mut s2 = scheduler(text, CycleConfig::default());
        let fit = s2.schedule(&c, &p, false).fit_error.expect("unschedulable");
        assert_eq!(
            names(&fit.filters),
            // In evaluation order (fixed, whatever the file's order).
            [
                (
                    "MatchNodeSelector".to_string(),
                    Some(node_selector::UPSTREAM_PLUGIN)
                ),
                (
                    "PodFitsResources".to_string(),
                    Some(resources_fit::UPSTREAM_PLUGIN)
                ),
            ]
        );
        // A pod only the node selector stops: that filter alone.
        let empty = c.compile_pod(pod("q").node_selector("disk", "nvme").build());
        let fit = s2
            .schedule(&c, &empty, false)
            .fit_error
            .expect("unschedulable");
        assert_eq!(
            names(&fit.filters),
            [(
                "MatchNodeSelector".to_string(),
                Some(node_selector::UPSTREAM_PLUGIN)
            )]
        );
        // GeneralPredicates is four upstream plugins: no single one.
        let general = scheduler(
            r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[]}"#,
            CycleConfig::default(),
        );
        assert!(
            general
                .filters()
                .iter()
                .any(|f| f.name == "GeneralPredicates" && f.upstream.is_none())
        );
    }

    #[test]
    fn each_rule_preparation_is_timed_under_its_upstream_plugin() {
        let mut c = zoned(3);
        let p = c.compile_pod(pod("p").build());
        let mut s = scheduler(
            r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
            CycleConfig::default(),
        );
        s.schedule(&c, &p, false);
        // GeneralPredicates is four upstream plugins: timed under its policy name.
        let seen: Vec<(String, &str)> = s
            .last_cycle_timings()
            .map(|(name, point, _)| (name.to_string(), point.as_str()))
            .collect();
        let expect = |name: &str, point: &'static str| (name.to_string(), point);
        assert_eq!(
            seen,
            [
                expect("DynamicResources", "PreFilter"),
                expect("UnmodelledFields", "PreFilter"),
                expect("NodeUnschedulable", "PreFilter"),
                expect("GeneralPredicates", "PreFilter"),
                expect("TaintToleration", "PreFilter"),
                expect("VolumeRestrictions", "PreFilter"),
                expect("NodeResourcesLeastAllocated", "PreScore"),
            ]
        );
    }

    /// Upstream's RunFilterPluginsWithNominatedPods: nominated pods of equal or higher
    /// priority hold their room; lower ones do not; a pod is not held back by itself.
    #[test]
    fn nominated_pods_of_equal_or_higher_priority_hold_their_node() {
        let text = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;
        let mut c = cluster(vec![node("n1").cpu(1000).build()], vec![]);
        let n1 = c.node_by_name("n1").expect("n1");
        let cases = [
            ("higher priority nominated", 100, "other", false),
            ("equal priority nominated", 10, "other", false),
            ("lower priority nominated", 5, "other", true),
            ("the pod's own nomination", 100, "p", true),
        ];
        for (name, nominated_priority, nominated_name, fits) in cases {
            let mut nominator = Nominator::new();
            nominator.add(
                c.compile_pod(
                    pod(nominated_name)
                        .req(800, 0)
                        .priority(nominated_priority)
                        .build(),
                ),
                n1,
            );
            let p = c.compile_pod(pod("p").req(500, 0).priority(10).build());
            let d =
                scheduler(text, CycleConfig::default()).schedule_with(&c, &nominator, &p, false);
            assert_eq!(d.node.is_some(), fits, "{name}");
            if !fits {
                assert_eq!(
                    d.fit_error.expect("unschedulable").to_string(),
                    format!("0/1 nodes are available: 1 {}.", resources_fit::REASON_CPU),
                    "{name}: reasons come from the pass with the nominated pods"
                );
            }
        }
    }

    /// Upstream's addNominatedPods adds nominated pods as whole pods: the PreFilter
    /// extensions of InterPodAffinity and PodTopologySpread count them too, not only their
    /// resources. Each case: the nominated pod on n1 (priority 100, no resources), the pod
    /// (priority 10), and the FitError on n1 if it should fail there (n2 stays free).
    #[test]
    fn nominated_pods_count_for_affinity_and_spreading() {
        let text = r#"{"predicates":[{"name":"MatchInterPodAffinity"},
            {"name":"EvenPodsSpread"}],"priorities":[]}"#;
        let zone = "topology.kubernetes.io/zone";
        let spread = |p: PodBuilder| {
            p.spread(
                1,
                zone,
                crate::model::WhenUnsatisfiable::DoNotSchedule,
                Some(selector(&[("app", "web")])),
            )
        };
        let hostname = "kubernetes.io/hostname";
        let cases: Vec<(&str, PodBuilder, PodBuilder, Option<&str>)> = vec![
            (
                "the nominated pod's anti-affinity rejects the pod",
                pod("nom").anti_affinity(hostname, &[("app", "web")]),
                pod("p").label("app", "web"),
                Some(inter_pod_affinity::REASON_EXISTING_ANTI_AFFINITY),
            ),
            (
                "the pod's anti-affinity rejects the nominated pod",
                pod("nom").label("app", "db"),
                pod("p").anti_affinity(hostname, &[("app", "db")]),
                Some(inter_pod_affinity::REASON_ANTI_AFFINITY),
            ),
            (
                "a nominated pod of another app changes nothing",
                pod("nom").label("app", "db"),
                pod("p")
                    .label("app", "web")
                    .anti_affinity(hostname, &[("app", "web")]),
                None,
            ),
            (
                "the nominated pod counts in its zone's spread",
                pod("nom").label("app", "web"),
                spread(pod("p").label("app", "web")),
                Some(pod_topology_spread::REASON),
            ),
            (
                // The pass with the nominated pod finds it in n1's zone, the pass without
                // it finds no pod (and the pod does not match its own term).
                "affinity met only by the nominated pod fails: the second pass lacks it",
                pod("nom").label("app", "db"),
                pod("p").affinity(zone, &[("app", "db")]),
                Some(inter_pod_affinity::REASON_AFFINITY),
            ),
        ];
        for (name, nominated, incoming, n1_fails) in cases {
            let mut c = cluster(
                vec![
                    node("n1").label(zone, "z1").build(),
                    node("n2").label(zone, "z2").build(),
                ],
                vec![],
            );
            let n1 = c.node_by_name("n1").expect("n1");
            let mut nominator = Nominator::new();
            nominator.add(c.compile_pod(nominated.priority(100).build()), n1);
            let p = c.compile_pod(incoming.priority(10).build());
            let d = scheduler(text, CycleConfig::default()).schedule_with(&c, &nominator, &p, true);
            let explanation = d.explanation.expect("explained");
            let n1_reasons: Vec<&str> = explanation
                .nodes
                .iter()
                .find(|n| n.node == "n1")
                .expect("n1")
                .rejections
                .iter()
                .map(|r| r.reason.as_str())
                .collect();
            match n1_fails {
                Some(reason) => assert_eq!(n1_reasons, [reason], "{name}"),
                None => assert!(n1_reasons.is_empty(), "{name}: {n1_reasons:?}"),
            }
        }
    }

    #[test]
    fn a_nominated_pod_goes_to_its_node_when_it_fits_there() {
        let mut c = zoned(5);
        let p = c.compile_pod(pod("p").nominated("n3").build());
        let mut s = scheduler(
            r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
            CycleConfig::default(),
        );
        s.next_start = 2;
        let d = s.schedule(&c, &p, false);
        assert_eq!(c.node(d.node.expect("placed")).name(), "n3");
        assert_eq!(
            s.next_start, 0,
            "upstream's one-node evaluation resets the start"
        );
    }

    /// Upstream's status codes: NodeResourcesFit fails as Unschedulable, TaintToleration
    /// and NodeAffinity as UnschedulableAndUnresolvable; merged, unresolvable wins.
    #[test]
    fn failures_carry_upstream_kinds() {
        let text = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[],"alwaysCheckAllPredicates":true}"#;
        let mut c = cluster(
            vec![
                node("small").cpu(100).label("disk", "ssd").build(),
                node("tainted")
                    .cpu(8000)
                    .label("disk", "ssd")
                    .taint("k", "v", crate::model::TaintEffect::NoSchedule)
                    .build(),
                node("hdd").cpu(8000).build(),
                node("both").cpu(100).build(),
            ],
            vec![],
        );
        let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
        let d = scheduler(text, CycleConfig::default()).schedule(&c, &p, false);
        let fit = d.fit_error.expect("unschedulable");
        let unresolvable: Vec<&str> = fit
            .unresolvable
            .iter()
            .map(|id| c.node(*id).name())
            .collect();
        assert_eq!(unresolvable, ["tainted", "hdd", "both"]);
    }

    #[test]
    fn an_empty_cluster_says_so() {
        let c = Cluster::new();
        let mut p_cluster = Cluster::new();
        let p = p_cluster.compile_pod(pod("p").build());
        let d = scheduler(r#"{}"#, CycleConfig::default()).schedule(&c, &p, false);
        assert_eq!(
            d.fit_error.expect("unschedulable").to_string(),
            NO_NODES_AVAILABLE
        );
    }
}
