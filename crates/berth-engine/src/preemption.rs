//! Preemption: v1.22's DefaultPreemption PostFilter.
//!
//! When a pod fits no node, [`Scheduler::preempt`] looks for a node where removing pods of
//! lower priority lets it in:
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
//! the node and the pod alone (see [`crate::victim_cache`]): a burst of equal preemptors
//! dry-runs each node once, not once per pod.
//!
//! The caller carries the choice out (deletes the victims, nominates the pod, clears
//! lower-priority nominations on the node).
//!
//! Removing and adding pods on the node's copy runs upstream's PreFilter extensions
//! RemovePod/AddPod as well (see [`crate::filters::NodeCopy`]): inter-pod affinity and
//! topology spread counts follow the victims, so a victim's anti-affinity toward the
//! preemptor, or its place in a spread domain, counts as upstream counts it. Not modelled:
//! ServiceAffinity's extension (its pinned peer pod stays the cluster's) and WASM plugins,
//! whose per-node tables describe the cluster's nodes.

use std::fmt;

use rand::Rng;

use crate::cluster::{Cluster, NodeId, PodId, fresh_stamp};
use crate::extender::{self, ExtenderError};
use crate::filters::PreparedFilters;
use crate::framework::CycleContext;
use crate::labels::{HoldsSymbols, Selector, Sym};
use crate::model;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;
use crate::scheduler::{FitError, Scheduler};

/// Upstream's DefaultPreemptionArgs default `minCandidateNodesPercentage`.
pub const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
/// Upstream's DefaultPreemptionArgs default `minCandidateNodesAbsolute`.
pub const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;

/// Why a pod does not preempt: `preemptionPolicy: Never`.
pub const NOT_ELIGIBLE_NEVER: &str = "the pod's preemptionPolicy is Never";
/// Why a pod does not preempt: its earlier victims are still going.
pub const NOT_ELIGIBLE_TERMINATING: &str =
    "pods of lower priority on the nominated node are still terminating";
/// Upstream's status for a node that failed for a reason preemption cannot fix.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// A PodDisruptionBudget compiled for matching.
#[derive(Debug, Clone)]
struct Budget {
    namespace: Sym,
    name: String,
    /// None: selects nothing (a missing or empty selector).
    selector: Option<Selector>,
    allowed: i32,
    disrupted: Vec<String>,
}

/// The cluster's PodDisruptionBudgets, as preemption reads them.
#[derive(Debug, Clone, Default)]
pub struct DisruptionBudgets {
    list: Vec<Budget>,
    /// Changes with every upsert and removal (0: never changed, so empty).
    stamp: u64,
}

impl HoldsSymbols for DisruptionBudgets {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for b in &mut self.list {
            f(&mut b.namespace);
            if let Some(s) = &mut b.selector {
                s.visit_symbols(f);
            }
        }
    }
}

impl DisruptionBudgets {
    /// No budgets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a budget (by namespace and name). Selectors are compiled against the
    /// cluster's interner.
    pub fn upsert(&mut self, cluster: &mut Cluster, pdb: &model::PodDisruptionBudget) {
        let namespace = cluster.intern(&pdb.meta.namespace);
        let selector = pdb
            .selector
            .as_ref()
            .map(|s| cluster.compile_selector(s))
            .filter(|s| !s.is_empty());
        let budget = Budget {
            namespace,
            name: pdb.meta.name.clone(),
            selector,
            allowed: pdb.disruptions_allowed,
            disrupted: pdb.disrupted_pods.clone(),
        };
        match self
            .list
            .iter_mut()
            .find(|b| b.namespace == namespace && b.name == budget.name)
        {
            Some(b) => *b = budget,
            None => self.list.push(budget),
        }
        self.stamp = fresh_stamp();
    }

    /// Removes a budget; false if there was none of that name.
    pub fn remove(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> bool {
        let Some(ns) = cluster.interner().get(namespace) else {
            return false;
        };
        let before = self.list.len();
        self.list.retain(|b| !(b.namespace == ns && b.name == name));
        self.stamp = fresh_stamp();
        self.list.len() != before
    }

    /// Equal stamps mean equal budgets (see [`crate::cluster::fresh_stamp`]).
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// How many budgets there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Splits `pods` (kept in order) into those whose eviction would violate a budget and the
    /// others (upstream's filterPodsWithPDBViolation): each matching budget's allowance is
    /// spent pod by pod; a pod already listed in a budget's disrupted pods spends nothing.
    fn split_violating(&self, cluster: &Cluster, pods: &[PodId]) -> (Vec<PodId>, Vec<PodId>) {
        let mut allowed: Vec<i32> = self.list.iter().map(|b| b.allowed).collect();
        let mut violating = Vec::new();
        let mut others = Vec::new();
        for &id in pods {
            let pod = cluster.pod(id);
            let mut violated = false;
            if !pod.labels.is_empty() {
                for (b, left) in self.list.iter().zip(allowed.iter_mut()) {
                    let Some(selector) = &b.selector else {
                        continue;
                    };
                    if b.namespace != pod.namespace || !selector.matches(&pod.labels) {
                        continue;
                    }
                    if b.disrupted.contains(&pod.pod.meta.name) {
                        continue;
                    }
                    *left -= 1;
                    if *left < 0 {
                        violated = true;
                    }
                }
            }
            if violated {
                violating.push(id);
            } else {
                others.push(id);
            }
        }
        (violating, others)
    }
}

/// One node where preemption would let the pod in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// The pods to evict: budget-violating ones first, each group most important first.
    pub victims: Vec<PodId>,
    /// How many victims' eviction violates a PodDisruptionBudget.
    pub pdb_violations: usize,
}

/// Why a dry run found no candidate on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No pod of lower priority runs there.
    NoVictims,
    /// The pod does not fit even with every lower-priority pod gone, for these reasons.
    FailsWithoutThem(String),
    /// Every lower-priority pod fits back beside the pod.
    NoVictimNeeded,
}

impl Rejection {
    /// As upstream words it (the first two) for `--explain`.
    fn describe(&self, node: &str, pod: &str) -> String {
        match self {
            Rejection::NoVictims => {
                format!(
                    "No victims found on node {node} for preemptor pod {pod}: no pod there has \
                     a lower priority than it"
                )
            }
            Rejection::FailsWithoutThem(reasons) => {
                format!("does not fit even without its lower-priority pods: {reasons}")
            }
            Rejection::NoVictimNeeded => {
                format!("expected at least one victim pod on node {node}")
            }
        }
    }
}

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

/// The outcome of [`Scheduler::preempt`].
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

impl Scheduler {
    /// The PostFilter for a pod that fit nowhere (`fit` is that cycle's error): finds the
    /// node to free and its victims, reading the cluster only.
    pub fn preempt(
        &mut self,
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
        let offset = self.preemption_rng().random_range(0..potential.len());
        let parts = self.preemption_parts();
        let (filters, check_all) = (parts.filters, parts.check_all);
        let ctx = CycleContext {
            cluster,
            pod,
            nominated: !nominator.is_empty(),
        };
        let prepared = match Scheduler::prepare_filters(filters, check_all, ctx, |_, _| {}) {
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
            parts
                .victim_cache
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
            parts.extenders,
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

/// What a dry run reads.
struct DryRun<'a> {
    cluster: &'a Cluster,
    nominator: &'a Nominator,
    budgets: &'a DisruptionBudgets,
    pod: &'a PodInfo,
    prepared: &'a PreparedFilters<'a>,
}

impl DryRun<'_> {
    /// Upstream's selectVictimsOnNode, on a copy of the node.
    fn select_victims(&self, id: NodeId) -> Result<Candidate, Rejection> {
        let cluster = self.cluster;
        let node = cluster.node(id);
        let priority = self.pod.pod.priority;
        let mut potential: Vec<PodId> = node
            .pods
            .iter()
            .copied()
            .filter(|p| cluster.pod(*p).pod.priority < priority)
            .collect();
        if potential.is_empty() {
            return Err(Rejection::NoVictims);
        }
        let prepared = self.prepared;
        let mut copy = prepared.copy_of(node);
        for p in &potential {
            prepared.remove_pod(&mut copy, cluster.pod(*p), *p);
        }
        let nominated = self.nominator.for_node(id);
        let status = prepared.copy_status_with_nominated(&copy, nominated, self.pod);
        if !status.passes() {
            let reasons: Vec<&str> = status.reasons.iter().map(|r| r.as_str()).collect();
            return Err(Rejection::FailsWithoutThem(reasons.join(", ")));
        }
        potential.sort_by(|a, b| importance(cluster.pod(*a), cluster.pod(*b)));
        let (violating, others) = self.budgets.split_violating(cluster, &potential);
        let mut victims = Vec::new();
        let mut pdb_violations = 0;
        for (group, counts) in [(violating, true), (others, false)] {
            for p in group {
                let info = cluster.pod(p);
                prepared.add_pod(&mut copy, info, Some(p));
                if !prepared.copy_passes_with_nominated(&copy, nominated, self.pod) {
                    prepared.remove_pod(&mut copy, info, p);
                    victims.push(p);
                    pdb_violations += usize::from(counts);
                }
            }
        }
        if victims.is_empty() {
            // The cycle found the node failing with these very pods on it.
            return Err(Rejection::NoVictimNeeded);
        }
        Ok(Candidate {
            node: id,
            victims,
            pdb_violations,
        })
    }
}

/// Upstream's pickOneNodeForPreemption over `candidates` (in the order found): for each, why
/// it lost, None for the chosen one. Each step keeps the candidates with the best value;
/// ties go to the next step.
fn choose(cluster: &Cluster, candidates: &[Candidate]) -> Vec<Option<LostOn>> {
    let mut lost: Vec<Option<LostOn>> = vec![None; candidates.len()];
    let priority = |p: &PodId| cluster.pod(*p).pod.priority;
    // Lower is better at every step; the start-time step negates to prefer the latest.
    type Key<'k> = &'k dyn Fn(&Candidate) -> i64;
    let steps: [(LostOn, Key<'_>); 5] = [
        (LostOn::PdbViolations, &|c| c.pdb_violations as i64),
        // Upstream takes the first victim's priority (the list is sorted by importance
        // within its two groups).
        (LostOn::HighestPriority, &|c| {
            i64::from(priority(&c.victims[0]))
        }),
        // Shifted by 2^31 so that more victims of negative priority never sum lower.
        (LostOn::SumOfPriorities, &|c| {
            c.victims
                .iter()
                .map(|p| i64::from(priority(p)) + (1 << 31))
                .sum()
        }),
        (LostOn::NumberOfVictims, &|c| c.victims.len() as i64),
        (LostOn::StartTime, &|c| {
            -earliest_start_of_highest(cluster, &c.victims)
        }),
    ];
    for (step, key) in steps {
        let alive: Vec<usize> = (0..candidates.len())
            .filter(|i| lost[*i].is_none())
            .collect();
        if alive.len() == 1 {
            break;
        }
        let best = alive
            .iter()
            .map(|i| key(&candidates[*i]))
            .min()
            .expect("some candidate is alive");
        for i in alive {
            if key(&candidates[i]) != best {
                lost[i] = Some(step);
            }
        }
    }
    let mut first = true;
    for l in lost.iter_mut().filter(|l| l.is_none()) {
        if !first {
            *l = Some(LostOn::Order);
        }
        first = false;
    }
    lost
}

/// Upstream's GetEarliestPodStartTime: the earliest start among the highest-priority victims.
fn earliest_start_of_highest(cluster: &Cluster, victims: &[PodId]) -> i64 {
    let top = victims
        .iter()
        .map(|p| cluster.pod(*p).pod.priority)
        .max()
        .unwrap_or(0);
    victims
        .iter()
        .map(|p| cluster.pod(*p))
        .filter(|p| p.pod.priority == top)
        .map(start_time)
        .min()
        .unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaintEffect;
    use crate::testkit::*;

    const RESOURCES: &str = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;

    fn scheduler() -> Scheduler {
        let policy = berth_policy::parse(RESOURCES, "test.json").expect("policy");
        crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler")
    }

    fn pdb(
        name: &str,
        labels: &[(&str, &str)],
        allowed: i32,
        disrupted: &[&str],
    ) -> model::PodDisruptionBudget {
        model::PodDisruptionBudget {
            meta: model::Meta {
                name: name.into(),
                namespace: "default".into(),
                ..Default::default()
            },
            selector: Some(selector(labels)),
            disruptions_allowed: allowed,
            disrupted_pods: disrupted.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// What a preemption attempt decided, by name: Ok((node, victims)) or Err(outcome text).
    fn run(
        nodes: Vec<model::Node>,
        pods: Vec<model::Pod>,
        budgets: &[model::PodDisruptionBudget],
        preemptor: model::Pod,
    ) -> Result<(String, Vec<String>), String> {
        run_with(RESOURCES, nodes, pods, budgets, preemptor).0
    }

    /// Every candidate a preemption found: (node, victims, chosen or tied with the choice).
    type Found = Vec<(String, Vec<String>, bool)>;

    /// [`run`] under `policy`, with every candidate found.
    fn run_with(
        policy: &str,
        nodes: Vec<model::Node>,
        pods: Vec<model::Pod>,
        budgets: &[model::PodDisruptionBudget],
        preemptor: model::Pod,
    ) -> (Result<(String, Vec<String>), String>, Found) {
        let mut c = cluster(nodes, pods);
        let mut b = DisruptionBudgets::new();
        for p in budgets {
            b.upsert(&mut c, p);
        }
        let info = c.compile_pod(preemptor);
        let policy = berth_policy::parse(policy, "test.json").expect("policy");
        let mut s = crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
        let nominator = Nominator::new();
        let d = s.schedule_with(&c, &nominator, &info, false);
        let Some(fit) = d.fit_error else {
            return (Err("fits without preemption".into()), Vec::new());
        };
        let names = |victims: &[PodId]| -> Vec<String> {
            victims
                .iter()
                .map(|v| c.pod(*v).pod.meta.name.clone())
                .collect()
        };
        let (outcome, explained) = s.preempt(&c, &nominator, &b, &info, &fit);
        let candidates = explained
            .candidates
            .iter()
            .map(|(cand, lost)| {
                (
                    c.node(cand.node).name().to_string(),
                    names(&cand.victims),
                    matches!(lost, None | Some(LostOn::Order)),
                )
            })
            .collect();
        let outcome = match outcome {
            PreemptionOutcome::Preempt { candidate, .. } => Ok((
                c.node(candidate.node).name().to_string(),
                names(&candidate.victims),
            )),
            other => Err(format!("{other:?}")),
        };
        (outcome, candidates)
    }

    /// A disk clash is one preemption can clear, as upstream's VolumeRestrictions filter reads
    /// the node copy's pods: the lower-priority pod mounting the same EBS volume is the
    /// victim; the node whose clashing pod outranks the preemptor is no candidate.
    #[test]
    fn a_clashing_disk_of_a_lower_priority_pod_is_preempted() {
        const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"},
            {"name":"NoDiskConflict"}],"priorities":[]}"#;
        let ebs = || model::VolumeSource::AwsElasticBlockStore {
            volume_id: "vol-1".into(),
        };
        let (outcome, found) = run_with(
            POLICY,
            vec![node("n1").build(), node("n2").build()],
            vec![
                pod("low").on("n1").priority(0).volume("d", ebs()).build(),
                pod("other").on("n1").priority(0).build(),
                pod("high")
                    .on("n2")
                    .priority(200)
                    .volume("d", ebs())
                    .build(),
            ],
            &[],
            pod("p").priority(100).volume("d", ebs()).build(),
        );
        assert_eq!(outcome, Ok(("n1".into(), vec!["low".into()])));
        assert_eq!(found, vec![("n1".into(), vec!["low".into()], true)]);
    }

    /// Dry-run answers reused across equal pods change nothing: a scheduler that keeps them
    /// and one that forgets them before every attempt decide and explain alike, through
    /// random pod arrivals and removals, node updates, budgets and nominations, with and
    /// without checks that read beyond the node (anti-affinity).
    /// A ReadWriteOncePod claim in use fails every node as `Unschedulable` (v1.36's
    /// VolumeRestrictions), and a dry run that removes the claim's user clears it through
    /// RemovePod (`updateWithPod`): only the user's node is a candidate, and the pod beside
    /// it that does not use the claim is reprieved. A user of higher priority is no victim.
    #[test]
    fn the_user_of_a_read_write_once_pod_claim_is_preempted() {
        use crate::rules::read_write_once_pod::ACCESS_MODE;
        const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;
        let policy = berth_policy::parse(POLICY, "test.json").expect("policy");
        let cases = vec![
            (
                "lower-priority user",
                0,
                Ok(("n1".to_string(), vec!["low".to_string()])),
            ),
            ("higher-priority user", 500, Err("NoCandidate".to_string())),
        ];
        for (name, user_priority, want) in cases {
            let mut c = cluster(
                vec![node("n1").build(), node("n2").build()],
                vec![
                    pod("low")
                        .on("n1")
                        .priority(user_priority)
                        .claim("data")
                        .build(),
                    pod("other").on("n1").priority(0).build(),
                    pod("high").on("n2").priority(200).build(),
                ],
            );
            add_storage(
                &mut c,
                vec![],
                vec![pvc("data", 1).access_modes(&[ACCESS_MODE]).build()],
                vec![],
            );
            let info = c.compile_pod(pod("p").priority(100).claim("data").build());
            let mut s =
                crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
            let nominator = Nominator::new();
            let fit = s
                .schedule_with(&c, &nominator, &info, false)
                .fit_error
                .expect("the claim is in use");
            let (outcome, _) = s.preempt(&c, &nominator, &DisruptionBudgets::new(), &info, &fit);
            let got = match outcome {
                PreemptionOutcome::Preempt { candidate, .. } => Ok((
                    c.node(candidate.node).name().to_string(),
                    candidate
                        .victims
                        .iter()
                        .map(|v| c.pod(*v).pod.meta.name.clone())
                        .collect::<Vec<_>>(),
                )),
                other => Err(format!("{other:?}")),
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn reused_dry_runs_decide_as_fresh_ones() {
        use rand::SeedableRng;
        const POLICY: &str = r#"{"predicates":[{"name":"GeneralPredicates"},
            {"name":"PodToleratesNodeTaints"},{"name":"CheckNodeUnschedulable"},
            {"name":"MatchInterPodAffinity"}],"priorities":[]}"#;
        let policy = berth_policy::parse(POLICY, "test.json").expect("policy");
        let mut attempts = 0;
        let mut reused_total = 0;
        for seed in 0..40u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut cached =
                crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
            let mut fresh =
                crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
            let names: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
            let mut c = cluster(
                names
                    .iter()
                    .map(|n| node(n).cpu(4000).pods(20).build())
                    .collect(),
                Vec::new(),
            );
            let mut budgets = DisruptionBudgets::new();
            let mut nominator = Nominator::new();
            let mut next = 0;
            let mut low_pod = |rng: &mut rand_chacha::ChaCha8Rng, on: &str| {
                next += 1;
                let mut b = pod(&format!("low-{next}"))
                    .on(on)
                    .req(500 * rng.random_range(1..4), 0)
                    .priority(rng.random_range(0..3))
                    .started(rng.random_range(0..100))
                    .label("app", ["a", "b"][rng.random_range(0..2)]);
                // Every fourth seed has pods whose anti-affinity reaches across nodes.
                if seed % 4 == 0 && rng.random_ratio(1, 10) {
                    b = b.anti_affinity("kubernetes.io/hostname", &[("app", "x")]);
                }
                b.build()
            };
            for n in &names {
                for _ in 0..rng.random_range(2..6) {
                    let p = low_pod(&mut rng, n);
                    c.add_pod(p).expect("pod");
                }
            }
            for step in 0..30 {
                let n = &names[rng.random_range(0..names.len())];
                match rng.random_range(0..12u32) {
                    // Half the steps change nothing: equal pods then ask unchanged nodes.
                    6.. => {}
                    0 => {
                        let p = low_pod(&mut rng, n);
                        c.add_pod(p).expect("pod");
                    }
                    1 => {
                        let on = c.node(c.node_by_name(n).expect("node")).pods.clone();
                        if let Some(id) = on.first() {
                            let name = c.pod(*id).pod.meta.name.clone();
                            c.remove_pod("default", &name);
                        }
                    }
                    2 => {
                        let mut b = node(n).cpu(4000 + 500 * rng.random_range(0..3)).pods(20);
                        if rng.random_ratio(1, 3) {
                            b = b.taint("dedicated", "x", TaintEffect::NoSchedule);
                        }
                        c.upsert_node(b.build()).expect("node");
                    }
                    3 => {
                        if rng.random_ratio(1, 2) {
                            let allowed = rng.random_range(0..2);
                            budgets.upsert(&mut c, &pdb("budget", &[("app", "a")], allowed, &[]));
                        } else {
                            budgets.remove(&c, "default", "budget");
                        }
                    }
                    4 => {
                        let id = c.node_by_name(n).expect("node");
                        let p = pod(&format!("nominated-{step}"))
                            .req(500, 0)
                            .priority(rng.random_range(0..6))
                            .build();
                        let info = c.compile_pod(p);
                        nominator.add(info, id);
                    }
                    5 => {
                        nominator.remove(&format!("default/nominated-{}", step - 1));
                    }
                }
                // Two classes of equal pods, named anew each time.
                let class = rng.random_range(0..2);
                let mut b = pod(&format!("high-{step}"))
                    .req(2000 + 1000 * class, 0)
                    .priority(5);
                if class == 1 {
                    b = b.label("app", "x");
                }
                let info = c.compile_pod(b.build());
                let fit_cached = cached.schedule_with(&c, &nominator, &info, false).fit_error;
                let fit_fresh = fresh.schedule_with(&c, &nominator, &info, false).fit_error;
                assert_eq!(fit_cached, fit_fresh);
                let Some(fit) = fit_cached else { continue };
                fresh.forget_dry_runs();
                let with_cache = cached.preempt(&c, &nominator, &budgets, &info, &fit);
                let without = fresh.preempt(&c, &nominator, &budgets, &info, &fit);
                assert_eq!(with_cache, without, "seed {seed} step {step}");
                attempts += 1;
                if let (PreemptionOutcome::Preempt { candidate, .. }, _) = with_cache
                    && rng.random_ratio(1, 2)
                {
                    for v in candidate.victims {
                        let name = c.pod(v).pod.meta.name.clone();
                        c.remove_pod("default", &name);
                    }
                    c.insert_pod(info, Some(candidate.node)).expect("preemptor");
                }
            }
            reused_total += cached.dry_run_counts().0;
        }
        eprintln!("{attempts} attempts, {reused_total} dry runs reused");
        assert!(attempts > 200, "only {attempts} preemption attempts");
        assert!(reused_total > 500, "only {reused_total} dry runs reused");
    }

    /// Restated from upstream's TestDryRunPreemption ("pod with anti-affinity is
    /// preempted", "preemption to resolve pod topology spread filter failure") and
    /// TestPreempt ("preemption for topology spread constraints"): the dry run removes
    /// victims from the inter-pod affinity and topology spread counts too (the PreFilter
    /// extensions' RemovePod), and adds reprieved pods back (AddPod). Each case lists every
    /// candidate with its victims and whether it is the choice or tied with it.
    #[test]
    fn dry_runs_update_affinity_and_spread_counts() {
        const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"},
            {"name":"MatchInterPodAffinity"},{"name":"EvenPodsSpread"}],"priorities":[]}"#;
        let (low, mid, high) = (0, 100, 1000);
        let zone = "zone";
        let hostname = "kubernetes.io/hostname";
        let foo = || Some(exists(&["foo"]));
        let zoned = |name: &str, z: &str| node(name).label(zone, z).build();
        let three_nodes = || {
            vec![
                zoned("node-a", "zone1"),
                zoned("node-b", "zone1"),
                zoned("node-x", "zone2"),
            ]
        };
        let foo_on = |name: &str, on: &str, prio: i32| {
            pod(name).on(on).label("foo", "").priority(prio).build()
        };
        let spreading = || {
            pod("p")
                .label("foo", "")
                .priority(high)
                .spread(1, zone, model::WhenUnsatisfiable::DoNotSchedule, foo())
                .spread(1, hostname, model::WhenUnsatisfiable::DoNotSchedule, foo())
                .build()
        };
        type Want = Vec<(&'static str, Vec<&'static str>, bool)>;
        type Case = (
            &'static str,
            Vec<model::Node>,
            Vec<model::Pod>,
            model::Pod,
            Want,
        );
        let cases: Vec<Case> = vec![
            (
                // node2 is full (upstream's test dry-runs it without a cycle first).
                "pod with anti-affinity is preempted",
                vec![node("node1").build(), node("node2").cpu(100).build()],
                vec![
                    pod("p1.1")
                        .on("node1")
                        .label("foo", "")
                        .priority(low)
                        .req(100, 0)
                        .anti_affinity(hostname, &[("foo", "")])
                        .build(),
                    pod("p1.2").on("node1").priority(mid).req(100, 0).build(),
                    pod("p1.3").on("node1").priority(high).req(100, 0).build(),
                    pod("p2").on("node2").priority(high).req(100, 0).build(),
                ],
                pod("p").label("foo", "").priority(high).req(100, 0).build(),
                vec![("node1", vec!["p1.1"], true)],
            ),
            (
                "preemption to resolve pod topology spread filter failure",
                three_nodes(),
                vec![
                    foo_on("pod-a1", "node-a", mid),
                    foo_on("pod-a2", "node-a", low),
                    foo_on("pod-b1", "node-b", low),
                    foo_on("pod-x1", "node-x", high),
                    foo_on("pod-x2", "node-x", high),
                ],
                spreading(),
                vec![
                    ("node-a", vec!["pod-a2"], true),
                    ("node-b", vec!["pod-b1"], true),
                ],
            ),
            (
                "preemption for topology spread constraints",
                three_nodes(),
                vec![
                    foo_on("p-a1", "node-a", high),
                    foo_on("p-a2", "node-a", high),
                    foo_on("p-b1", "node-b", low),
                    foo_on("p-x1", "node-x", high),
                    foo_on("p-x2", "node-x", high),
                ],
                spreading(),
                vec![("node-b", vec!["p-b1"], true)],
            ),
            (
                // The victim's own anti-affinity keeps the pod off until it is gone; the
                // reprieve adds it back and the check fails again, so it stays a victim.
                "a victim whose anti-affinity selects the preemptor",
                vec![node("n1").cpu(1000).build()],
                vec![
                    pod("guard")
                        .on("n1")
                        .priority(low)
                        .req(100, 0)
                        .anti_affinity(hostname, &[("app", "web")])
                        .build(),
                    pod("other").on("n1").priority(low).req(100, 0).build(),
                ],
                pod("p")
                    .label("app", "web")
                    .priority(high)
                    .req(100, 0)
                    .build(),
                vec![("n1", vec!["guard"], true)],
            ),
        ];
        for (name, nodes, pods, preemptor, want) in cases {
            let (_, got) = run_with(POLICY, nodes, pods, &[], preemptor);
            let want: Found = want
                .into_iter()
                .map(|(n, v, t)| (n.to_string(), v.iter().map(|s| s.to_string()).collect(), t))
                .collect();
            let mut got = got;
            got.sort();
            assert_eq!(got, want, "{name}");
        }
    }

    /// (name, nodes, running pods, budgets, preemptor, outcome).
    type Case = (
        &'static str,
        Vec<model::Node>,
        Vec<model::Pod>,
        Vec<model::PodDisruptionBudget>,
        model::Pod,
        Result<(String, Vec<String>), String>,
    );

    fn ok(node: &str, victims: &[&str]) -> Result<(String, Vec<String>), String> {
        Ok((node.into(), victims.iter().map(|v| v.to_string()).collect()))
    }

    /// Restated from upstream's TestDryRunPreemption and TestSelectCandidate (v1.22): nodes of
    /// 5 cpus unless stated, pods by (cpu, priority, start time).
    #[test]
    fn victims_and_node_choice() {
        let n = |name: &str| node(name).cpu(5000).mem(1 << 40).build();
        let p = |name: &str, on: &str, cpu: i64, prio: i32, start: i64| {
            pod(name)
                .on(on)
                .req(cpu, 0)
                .priority(prio)
                .started(start)
                .build()
        };
        let high = |cpu: i64| pod("preemptor").req(cpu, 0).priority(100).build();
        let cases: Vec<Case> = vec![
            (
                "a pod that does not fit on any node even without victims",
                vec![n("n1"), n("n2")],
                vec![p("a", "n1", 1000, 1, 0), p("b", "n2", 1000, 1, 0)],
                vec![],
                high(6000),
                Err("NoCandidate".into()),
            ),
            (
                "pods running at higher priority are no victims",
                vec![n("n1"), n("n2")],
                vec![p("a", "n1", 3000, 200, 0), p("b", "n2", 3000, 200, 0)],
                vec![],
                high(3000),
                Err("NoCandidate".into()),
            ),
            (
                "the medium-priority pod goes, the small low-priority one stays",
                vec![n("n1")],
                vec![p("low", "n1", 1000, 1, 0), p("medium", "n1", 3000, 50, 0)],
                vec![],
                high(3000),
                ok("n1", &["medium"]),
            ),
            (
                "mixed priorities: reprieved most important first",
                vec![n("n1")],
                vec![
                    p("p1", "n1", 2000, 10, 0),
                    p("p2", "n1", 1000, 20, 0),
                    p("p3", "n1", 1000, 30, 0),
                    p("p4", "n1", 1000, 40, 0),
                ],
                vec![],
                high(3000),
                ok("n1", &["p2", "p1"]),
            ),
            (
                "equal priorities: the later-started pod is the victim",
                vec![n("n1")],
                vec![
                    p("early", "n1", 2500, 10, 100),
                    p("late", "n1", 2500, 10, 200),
                ],
                vec![],
                high(2500),
                ok("n1", &["late"]),
            ),
            (
                "the node whose highest victim has the lowest priority wins",
                vec![n("n1"), n("n2")],
                vec![p("a", "n1", 5000, 20, 0), p("b", "n2", 5000, 10, 0)],
                vec![],
                high(3000),
                ok("n2", &["b"]),
            ),
            (
                "same highest priority: the smallest sum of priorities wins",
                vec![n("n1"), n("n2")],
                vec![
                    p("a1", "n1", 2500, 10, 0),
                    p("a2", "n1", 2500, 10, 0),
                    p("b1", "n2", 2500, 10, 0),
                    p("b2", "n2", 2500, 5, 0),
                ],
                vec![],
                high(5000),
                ok("n2", &["b1", "b2"]),
            ),
            (
                "same highest priority: one victim sums lower than two",
                vec![n("n1"), n("n2")],
                vec![
                    p("a1", "n1", 2000, 10, 0),
                    p("a2", "n1", 1000, 10, 0),
                    p("a3", "n1", 2000, 10, 0),
                    p("b1", "n2", 4000, 10, 0),
                    p("b2", "n2", 1000, 10, 0),
                ],
                vec![],
                high(4000),
                ok("n2", &["b1"]),
            ),
            (
                "sums of negative priorities are shifted, so more victims never sum lower",
                vec![n("n1"), n("n2")],
                vec![
                    p("a1", "n1", 2500, -10, 0),
                    p("a2", "n1", 2500, -10, 0),
                    p("b1", "n2", 5000, -10, 0),
                ],
                vec![],
                high(5000),
                ok("n2", &["b1"]),
            ),
            (
                "all else equal: the node whose highest victims started last wins",
                vec![n("n1"), n("n2")],
                vec![p("a", "n1", 5000, 10, 100), p("b", "n2", 5000, 10, 200)],
                vec![],
                high(3000),
                ok("n2", &["b"]),
            ),
            (
                "a node without a PDB violation beats one with fewer or lower victims",
                vec![n("n1"), n("n2")],
                vec![
                    pod("a")
                        .on("n1")
                        .req(5000, 0)
                        .priority(1)
                        .label("app", "db")
                        .build(),
                    p("b1", "n2", 2500, 50, 0),
                    p("b2", "n2", 2500, 50, 0),
                ],
                vec![pdb("db", &[("app", "db")], 0, &[])],
                high(5000),
                ok("n2", &["b1", "b2"]),
            ),
            (
                "PDB-violating pods are reprieved first: the non-violating one goes",
                vec![n("n1")],
                vec![
                    pod("guarded")
                        .on("n1")
                        .req(2500, 0)
                        .priority(1)
                        .label("app", "db")
                        .build(),
                    pod("free").on("n1").req(2500, 0).priority(2).build(),
                ],
                vec![pdb("db", &[("app", "db")], 0, &[])],
                high(2500),
                ok("n1", &["free"]),
            ),
            (
                "two pods of one budget allowing one disruption: one violates",
                vec![n("n1")],
                vec![
                    pod("a")
                        .on("n1")
                        .req(2500, 0)
                        .priority(1)
                        .label("app", "db")
                        .build(),
                    pod("b")
                        .on("n1")
                        .req(2500, 0)
                        .priority(1)
                        .label("app", "db")
                        .build(),
                ],
                vec![pdb("db", &[("app", "db")], 1, &[])],
                high(5000),
                // The violating victim is listed first, as upstream returns them.
                ok("n1", &["b", "a"]),
            ),
        ];
        for (name, nodes, pods, budgets, preemptor, want) in cases {
            assert_eq!(run(nodes, pods, &budgets, preemptor), want, "{name}");
        }
    }

    #[test]
    fn pdb_violations_are_counted_as_upstream() {
        // (budget allowance, disrupted pods, expected violations) for two matching victims.
        let cases: [(i32, &[&str], usize); 4] = [
            (1, &[], 1),
            (2, &[], 0),
            // A pod already being disrupted spends nothing of the budget.
            (1, &["a"], 0),
            // A negative allowance: every matching pod not yet disrupted violates.
            (-1, &["a"], 1),
        ];
        for (allowed, disrupted, want) in cases {
            let mut c = cluster(
                vec![node("n1").cpu(5000).build()],
                vec![
                    pod("a").on("n1").req(2500, 0).label("app", "db").build(),
                    pod("b").on("n1").req(2500, 0).label("app", "db").build(),
                ],
            );
            let mut b = DisruptionBudgets::new();
            b.upsert(&mut c, &pdb("db", &[("app", "db")], allowed, disrupted));
            let info = c.compile_pod(pod("p").req(5000, 0).priority(10).build());
            let mut s = scheduler();
            let d = s.schedule(&c, &info, false);
            let fit = d.fit_error.expect("does not fit");
            let PreemptionOutcome::Preempt { candidate, .. } =
                s.preempt(&c, &Nominator::new(), &b, &info, &fit).0
            else {
                panic!("expected a preemption");
            };
            assert_eq!(candidate.victims.len(), 2);
            assert_eq!(
                candidate.pdb_violations, want,
                "allowed {allowed} disrupted {disrupted:?}"
            );
        }
    }

    #[test]
    fn unresolvable_nodes_are_no_candidates() {
        let nodes = vec![
            node("tainted")
                .cpu(5000)
                .taint("k", "v", TaintEffect::NoSchedule)
                .build(),
            node("free").cpu(5000).build(),
        ];
        let pods = vec![
            pod("a").on("tainted").req(5000, 0).priority(1).build(),
            pod("b").on("free").req(5000, 0).priority(50).build(),
        ];
        let got = run(
            nodes.clone(),
            pods,
            &[],
            pod("p").req(5000, 0).priority(100).build(),
        );
        assert_eq!(got, ok("free", &["b"]));
        let only_tainted = vec![pod("a").on("tainted").req(5000, 0).priority(1).build()];
        let got = run(
            nodes[..1].to_vec(),
            only_tainted,
            &[],
            pod("p").req(5000, 0).priority(100).build(),
        );
        assert_eq!(got, Err("NoCandidate".into()));
    }

    /// Restated from upstream's TestPodEligibleToPreemptOthers.
    #[test]
    fn eligibility() {
        let nodes = vec![node("n1").cpu(5000).build(), node("n2").cpu(5000).build()];
        let full =
            |victim: model::Pod| vec![victim, pod("x").on("n2").req(5000, 0).priority(1).build()];
        let low = || pod("v").on("n1").req(5000, 0).priority(1);
        let cases: Vec<(&str, Vec<model::Pod>, model::Pod, Option<&str>)> = vec![
            (
                "preemptionPolicy Never",
                full(low().build()),
                pod("p").req(5000, 0).priority(100).preempt_never().build(),
                Some(NOT_ELIGIBLE_NEVER),
            ),
            (
                "nominated, nothing terminating",
                full(low().build()),
                pod("p").req(5000, 0).priority(100).nominated("n1").build(),
                None,
            ),
            (
                "nominated, a lower-priority pod terminating there",
                full(low().terminating().build()),
                pod("p").req(5000, 0).priority(100).nominated("n1").build(),
                Some(NOT_ELIGIBLE_TERMINATING),
            ),
            (
                "nominated, the terminating pod has higher priority",
                full(low().priority(200).terminating().build()),
                pod("p").req(5000, 0).priority(100).nominated("n1").build(),
                None,
            ),
        ];
        for (name, pods, preemptor, want) in cases {
            let mut c = cluster(nodes.clone(), pods);
            let info = c.compile_pod(preemptor);
            let mut s = scheduler();
            let fit = s
                .schedule(&c, &info, false)
                .fit_error
                .expect("does not fit");
            let got = match s
                .preempt(
                    &c,
                    &Nominator::new(),
                    &DisruptionBudgets::new(),
                    &info,
                    &fit,
                )
                .0
            {
                PreemptionOutcome::NotEligible(why) => Some(why),
                _ => None,
            };
            assert_eq!(got, want, "{name}");
        }
        // A nominated node that now fails unresolvably makes the pod eligible again.
        let mut c = cluster(
            vec![
                node("n1").cpu(5000).unschedulable().build(),
                node("n2").cpu(5000).build(),
            ],
            full(low().terminating().build()),
        );
        let info = c.compile_pod(pod("p").req(5000, 0).priority(100).nominated("n1").build());
        let mut s = scheduler();
        let fit = s
            .schedule(&c, &info, false)
            .fit_error
            .expect("does not fit");
        assert!(fit.is_unresolvable(c.node_by_name("n1").expect("n1")));
        let (outcome, _) = s.preempt(
            &c,
            &Nominator::new(),
            &DisruptionBudgets::new(),
            &info,
            &fit,
        );
        assert!(
            matches!(outcome, PreemptionOutcome::Preempt { .. }),
            "{outcome:?}"
        );
    }

    #[test]
    fn candidate_count_follows_upstream() {
        for (potential, want) in [
            (1, 1),
            (10, 10),
            (100, 100),
            (150, 100),
            (1000, 100),
            (2000, 200),
            (5000, 500),
        ] {
            assert_eq!(candidates_to_find(potential), want, "{potential}");
        }
    }

    #[test]
    fn the_dry_run_stops_at_enough_candidates_and_reports_the_losers() {
        let nodes: Vec<model::Node> = (0..300)
            .map(|i| node(&format!("n{i}")).cpu(1000).build())
            .collect();
        let pods: Vec<model::Pod> = (0..300)
            .map(|i| {
                pod(&format!("v{i}"))
                    .on(&format!("n{i}"))
                    .req(1000, 0)
                    .priority(1)
                    .build()
            })
            .collect();
        let mut c = cluster(nodes, pods);
        let info = c.compile_pod(pod("p").req(1000, 0).priority(10).build());
        let mut s = scheduler();
        let fit = s.schedule(&c, &info, false).fit_error.expect("full");
        let (outcome, e) = s.preempt(
            &c,
            &Nominator::new(),
            &DisruptionBudgets::new(),
            &info,
            &fit,
        );
        assert!(matches!(outcome, PreemptionOutcome::Preempt { .. }));
        // max(10% of 300, 100) = 100 candidates, all equal: the first found wins.
        assert_eq!(e.candidates.len(), 100);
        assert_eq!(e.candidates[0].1, None);
        assert!(
            e.candidates[1..]
                .iter()
                .all(|(_, l)| *l == Some(LostOn::Order))
        );
    }

    #[test]
    fn lower_priority_nominations_on_the_node_are_cleared() {
        let mut c = cluster(
            vec![node("n1").cpu(5000).build()],
            vec![pod("v").on("n1").req(5000, 0).priority(1).build()],
        );
        let n1 = c.node_by_name("n1").expect("n1");
        let mut nominator = Nominator::new();
        nominator.add(
            c.compile_pod(pod("lower").req(100, 0).priority(5).build()),
            n1,
        );
        nominator.add(
            c.compile_pod(pod("higher").req(100, 0).priority(500).build()),
            n1,
        );
        let info = c.compile_pod(pod("p").req(4000, 0).priority(100).build());
        let mut s = scheduler();
        let fit = s
            .schedule_with(&c, &nominator, &info, false)
            .fit_error
            .expect("full");
        let (outcome, _) = s.preempt(&c, &nominator, &DisruptionBudgets::new(), &info, &fit);
        let PreemptionOutcome::Preempt {
            clear_nominations, ..
        } = outcome
        else {
            panic!("expected a preemption, got {outcome:?}");
        };
        assert_eq!(clear_nominations, ["default/lower"]);
    }
}
