//! The second reference: kube-scheduler v1.36.3 with its default profile, on clusters that
//! use what v1.22 never knew ([`generate::scenario_v136`]) beside the v1.22-era fields.
//!
//! Berth runs v1.22's default provider policy, so where v1.36 scores differently (other
//! plugins and weights) the two may choose different nodes by design. What must agree, for
//! every pod:
//!
//! - feasibility: the set of nodes v1.36 found feasible (the nodes it logged a total for,
//!   or the one it bound the pod to when it scored none because only that one was) equals
//!   Berth's;
//! - the FitError text, once what v1.36's PostFilter plugins append (a pure addition,
//!   [`without_post_filter`]) is cut off: identical, or, where v1.36 orders its filters or
//!   words its reasons differently by design, equal to Berth's per-node reasons put in
//!   v1.36's order and words ([`v136_fit_error`]); pods with resource claims are refused by both with different
//!   texts by design, and only their feasibility is compared (both texts are kept);
//! - scheduling gates: a gated pod is held by both (v1.36 leaves it unbound with the
//!   apiserver's SchedulingGated condition while the later pods are decided); once its gate
//!   is removed it is compared as any other pod;
//! - the decision where it is comparable ([`decision_comparable`]): exactly one node
//!   feasible on both sides;
//! - the scores of the plugins v1.36 computes as the policy's priorities do
//!   ([`SAME_SCORES`]), per node, divided by v1.36's weight, for pods both score with the
//!   same request ([`same_scoring_request`]).
//!
//! One v1.22 rule Berth keeps shows here: v1.22's PodFitsResources refuses a node already
//! overcommitted on cpu, memory or ephemeral storage even for a pod that requests none of
//! it; v1.36 checks only what the pod requests. Such nodes count as feasible for v1.36
//! (and their reasons are left out of the rebuilt text); the report counts how often.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use berth_kube::ClusterObjects;
use berth_policy::EffectivePolicy;
use berth_testcluster::{ClusterOptions, TestCluster};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::berth::{self, BerthOutcome};
use crate::generate::{self, Scenario};
use crate::replay::{self, Verdict};
use crate::upstream::{DefaultPodTopologySpread, Reference, ReferenceScheduler, ScoreLog};

/// Berth's side runs the v1.22 default provider's gate setting (only scoring reads it).
const GATE: DefaultPodTopologySpread = DefaultPodTopologySpread::On;

/// v1.36's plugins whose score is computed as the default policy's priority of the same
/// meaning computes it (read in both releases' sources): (v1.36 plugin, its weight in the
/// default profile, Berth's plugin name in [`BerthOutcome::plugins`], whose policy weight
/// is 1). NodeResourcesFit scores LeastAllocated over cpu and memory, weight 1 each, as
/// LeastRequestedPriority; TaintToleration counts untolerated PreferNoSchedule taints and
/// NodeAffinity the weights of matching preferred terms, both normalised as in v1.22.
/// Left out: BalancedAllocation (v1.36 scores the change in balance the pod makes, not
/// the balance with it), ImageLocality (v1.36 also counts init containers' images), InterPodAffinity and
/// PodTopologySpread (v1.36's defaults and system constraints differ), and v1.22's
/// SelectorSpread and NodePreferAvoidPods, which v1.36 no longer has.
pub const SAME_SCORES: [(&str, i64, &str); 3] = [
    ("NodeResourcesFit", 1, "NodeResourcesLeastAllocated"),
    ("TaintToleration", 3, "TaintToleration"),
    ("NodeAffinity", 2, "NodeAffinity"),
];

/// v1.36's default profile's filters in the order it runs them (the first that fails
/// gives a node's reasons), each with the reasons Berth gives for it. A reason given as a
/// prefix stands for every reason starting with it.
const V136_FILTERS: [(&str, &[&str]); 13] = [
    ("NodeUnschedulable", &["node(s) were unschedulable"]),
    (
        "NodeName",
        &["node(s) didn't match the requested node name"],
    ),
    ("TaintToleration", &["node(s) had taint {"]),
    (
        "NodeAffinity",
        &["node(s) didn't match Pod's node affinity/selector"],
    ),
    (
        "NodePorts",
        &["node(s) didn't have free ports for the requested pod ports"],
    ),
    ("NodeResourcesFit", &["Insufficient ", "Too many pods"]),
    ("VolumeRestrictions", &["node(s) had no available disk"]),
    ("NodeVolumeLimits", &["node(s) exceed max volume count"]),
    (
        "VolumeBinding",
        &[
            "node(s) didn't find available persistent volumes to bind",
            "node(s) had volume node affinity conflict",
            "node(s) did not have enough free storage",
            "pvc(s) bound to non-existent pv(s)",
        ],
    ),
    ("VolumeZone", &["node(s) had no available volume zone"]),
    (
        "PodTopologySpread",
        &["node(s) didn't match pod topology spread constraints"],
    ),
    (
        "InterPodAffinity",
        &[
            "node(s) didn't match pod affinity rules",
            "node(s) didn't match pod anti-affinity rules",
            "node(s) didn't satisfy existing pods anti-affinity rules",
        ],
    ),
    (
        "DynamicResources",
        &[berth_engine::rules::dynamic_resources::REASON],
    ),
];

/// Reasons v1.36 words differently from v1.22 (and Berth): (a prefix of v1.22's reason,
/// v1.36's). v1.36's TaintToleration no longer names the taint.
pub const REWORDED: [(&str, &str); 3] = [
    ("node(s) had taint {", "node(s) had untolerated taint(s)"),
    (
        "node(s) had volume node affinity conflict",
        "node(s) didn't match PersistentVolume's node affinity",
    ),
    (
        "pvc(s) bound to non-existent pv(s)",
        "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
    ),
];

/// What v1.36's PostFilter plugins may add after the FitError text (FitError.Error in
/// pkg/scheduler/framework/types.go appends their reasons, joined with ", ", after a
/// space): DynamicResources' words, then DefaultPreemption's, which start with this.
const PREEMPTION_PREFIX: &str = "preemption: ";
/// DynamicResources' PostFilter reasons (pkg/scheduler/framework/plugins/dynamicresources).
const DRA_POST_FILTER: [&str; 5] = [
    "plugin disabled",
    "no new claims to deallocate",
    "deallocation of ResourceClaim completed",
    "deletion of ResourceClaim completed",
    "still not schedulable",
];

/// What to run.
#[derive(Debug, Clone)]
pub struct V136Options {
    /// Scenario seeds ([`generate::scenario_v136`]).
    pub seeds: Vec<u64>,
    /// Bound on the whole run (the control plane is killed after it).
    pub max_lifetime: Duration,
}

/// The kinds of field a pod is counted under (a pod may count under several).
pub const KINDS: [&str; 11] = [
    "v1.22-era fields only",
    "native sidecar",
    "sidecar host port",
    "pod-level requests",
    "resize on a node",
    "pod-level resize",
    "scheduling gate",
    "resource claims",
    "spread v1.36 fields",
    "affinity label keys",
    "volume mode or class",
];

/// Agreement on the pods of one kind of field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Pods v1.36 decided on. The resize kinds count a pod scheduled while some running
    /// pod reports a resize (at container or pod level).
    pub pods: usize,
    /// ... whose feasible set Berth agreed on.
    pub feasibility_agree: usize,
    /// ... that v1.36 found unschedulable.
    pub fit_errors: usize,
    /// ... whose FitError Berth agreed on (identical, or identical in v1.36's order and
    /// words), or, for resource claims, that Berth refused too.
    pub fit_errors_agree: usize,
    /// Pods whose decision is comparable ([`decision_comparable`]).
    pub decisions: usize,
    /// ... on which Berth chose v1.36's node.
    pub decisions_agree: usize,
}

/// The outcome of a v1.36 run.
#[derive(Debug, Clone, Default)]
pub struct V136Report {
    /// Scenarios run.
    pub scenarios: usize,
    /// All pods, and per kind of field ([`KINDS`]).
    pub all: KindStats,
    /// Per kind.
    pub kinds: BTreeMap<&'static str, KindStats>,
    /// FitErrors identical character for character (after the preemption suffix).
    pub fit_identical: usize,
    /// FitErrors equal once Berth's reasons are put in v1.36's filter order and words.
    pub fit_reordered: usize,
    /// Gated pods with a later pod decided while they waited.
    pub gated: usize,
    /// ... held by both.
    pub gated_agree: usize,
    /// Gated pods created after the scenario's last decided pod: Berth's hold is checked,
    /// v1.36's cannot be told from not having reached the pod yet.
    pub gated_unwitnessed: usize,
    /// Pods whose feasible set agreed only once the nodes Berth refuses for v1.22's check
    /// of unrequested resources on an overcommitted node are counted feasible.
    pub feasible_overcommitted: usize,
    /// Pods with more than one feasible node on both sides (the same set) and the same
    /// scoring request ([`same_scoring_request`]), whose [`SAME_SCORES`] plugins were
    /// compared.
    pub scored: usize,
    /// ... on which every such plugin's score agreed on every node.
    pub scores_agree: usize,
    /// Texts that differ by design (resource claims): (seed, pod, v1.36's, Berth's).
    pub by_design: Vec<(u64, String, String, String)>,
    /// Every disagreement: (seed, pod, what, detail).
    pub disagreements: Vec<(u64, String, &'static str, String)>,
    /// Wall time.
    pub elapsed: Duration,
}

impl V136Report {
    /// Whether Berth agreed on everything that must agree.
    pub fn all_agree(&self) -> bool {
        self.disagreements.is_empty()
    }

    fn disagree(&mut self, seed: u64, pod: &str, what: &'static str, detail: String) {
        self.disagreements
            .push((seed, pod.to_owned(), what, detail));
    }
}

/// Whether the decision is comparable: v1.36 and Berth found the same feasible nodes and
/// there is exactly one. With more, v1.36's scoring (its plugins and weights, not the
/// policy's) picks among them, and a different choice is by design.
pub fn decision_comparable(theirs: &BTreeSet<String>, ours: &BTreeSet<String>) -> bool {
    theirs == ours && theirs.len() == 1
}

/// Runs every seed on one test cluster and returns the report.
pub async fn run(options: &V136Options) -> Result<V136Report> {
    let cluster = TestCluster::start(
        ClusterOptions::default()
            .max_lifetime(options.max_lifetime)
            .for_throughput(),
    )
    .await?;
    let client = cluster.admin_client()?;
    let out_dir = std::env::var_os(crate::OUT_DIR_ENV).map(PathBuf::from);
    let mut report = V136Report::default();
    let started = Instant::now();
    for &seed in &options.seeds {
        let prefix = format!("v{seed}");
        let scenario = generate::scenario_v136(seed, &prefix);
        let dir = cluster.dir().join(&prefix);
        let mut run = ScenarioRun {
            cluster: &cluster,
            client: &client,
            scenario: &scenario,
            out_dir: out_dir.as_deref(),
            report: &mut report,
        };
        run.run(&dir)
            .await
            .with_context(|| format!("v1.36 scenario seed {seed}"))?;
        replay::delete_scenario(&client, &scenario).await?;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

struct ScenarioRun<'a> {
    cluster: &'a TestCluster,
    client: &'a kube::Client,
    scenario: &'a Scenario,
    out_dir: Option<&'a std::path::Path>,
    report: &'a mut V136Report,
}

/// Berth's two policies: the default provider, and the same checking every predicate (for
/// each node's every reason, to put in v1.36's order).
struct Policies {
    default: EffectivePolicy,
    check_all: EffectivePolicy,
}

impl ScenarioRun<'_> {
    async fn run(&mut self, dir: &std::path::Path) -> Result<()> {
        let seed = self.scenario.seed;
        self.report.scenarios += 1;
        let mut all = self.scenario.policy.clone();
        all["alwaysCheckAllPredicates"] = json!(true);
        let policies = Policies {
            default: berth::policy(&self.scenario.policy)?,
            check_all: berth::policy(&all)?,
        };
        replay::create_cluster(self.client, self.scenario).await?;
        let mut reference =
            ReferenceScheduler::start(self.cluster, Reference::V136, dir, Duration::from_secs(300))
                .await?;
        let mut held = Vec::new();
        for index in 0..self.scenario.pending.len() {
            let state = replay::list_state(self.client).await?;
            let pod = replay::create_pod(self.client, self.scenario, index).await?;
            let key = pod_key(&pod);
            if gates(&pod) {
                let ours = berth::decide(&policies.default, &state, &pod, GATE)?;
                if ours.gates.is_empty() {
                    let detail = format!("Berth does not hold it: {:?}", ours.message);
                    self.report.disagree(seed, &key, "gate", detail);
                }
                held.push((pod, false));
                continue;
            }
            let verdict =
                replay::await_verdict(self.client, &mut reference, &pod, &state.pods).await?;
            for (_, witnessed) in &mut held {
                *witnessed = true;
            }
            self.compare(&mut reference, &policies, &state, &pod, &verdict, false)?;
        }
        // A pod decided after a gated one was created was seen by v1.36 after it, so a
        // gated pod still unbound then was held by its gate, not merely not reached yet
        // (`witnessed`). A gated pod after the last decided one proves nothing: it is only
        // compared once released.
        for (pod, witnessed) in held {
            let key = pod_key(&pod);
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace(&pod));
            let current = pods.get(name(&pod)).await?;
            if !witnessed {
                self.report.gated_unwitnessed += 1;
            } else if scheduling_gated(&current) {
                self.report.gated += 1;
                self.report.gated_agree += 1;
            } else {
                self.report.gated += 1;
                let detail = format!("v1.36 did not hold it: {:?}", current.status);
                self.report.disagree(seed, &key, "gate", detail);
            }
            let mut state = replay::list_state(self.client).await?;
            state.pods.retain(|p| pod_key(p) != key);
            let patch = json!({"spec": {"schedulingGates": null}});
            let released = pods
                .patch(name(&pod), &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("removing the gate of {key}"))?;
            let verdict =
                replay::await_verdict(self.client, &mut reference, &released, &state.pods).await?;
            self.compare(&mut reference, &policies, &state, &released, &verdict, true)?;
        }
        Ok(())
    }

    fn compare(
        &mut self,
        reference: &mut ReferenceScheduler,
        policies: &Policies,
        state: &ClusterObjects,
        pod: &Pod,
        verdict: &Verdict,
        gated: bool,
    ) -> Result<()> {
        let seed = self.scenario.seed;
        let key = pod_key(pod);
        let scores = reference.take_scores(&key)?;
        let kinds = kinds(pod, state, gated);
        let (ours, all) = match (
            berth::decide(&policies.default, state, pod, GATE),
            berth::decide(&policies.check_all, state, pod, GATE),
        ) {
            (Ok(ours), Ok(all)) => (ours, all),
            (Err(e), _) | (_, Err(e)) => {
                self.report
                    .disagree(seed, &key, "error", format!("Berth failed: {e:#}"));
                return Ok(());
            }
        };
        let theirs = feasible(verdict, &scores);
        let mut tally = KindStats {
            pods: 1,
            ..KindStats::default()
        };
        let mut found = false;
        // Nodes Berth refuses only for v1.22's check of resources the pod does not request
        // (on a node its bound pods already overcommit), which v1.36 no longer makes.
        let overcommitted: BTreeSet<String> = all
            .rejections
            .iter()
            .filter(|(_, reasons)| {
                reasons
                    .iter()
                    .all(|r| all.unrequested.contains(&r.as_str()))
            })
            .map(|(node, _)| node.clone())
            .collect();
        let with_overcommitted: BTreeSet<String> =
            ours.feasible_nodes.union(&overcommitted).cloned().collect();
        if theirs == ours.feasible_nodes {
            tally.feasibility_agree = 1;
        } else if theirs == with_overcommitted {
            tally.feasibility_agree = 1;
            self.report.feasible_overcommitted += 1;
        } else {
            found = true;
            self.report.disagree(
                seed,
                &key,
                "feasibility",
                format!(
                    "v1.36 {theirs:?}, Berth {:?}; Berth's rejections {:?}",
                    ours.feasible_nodes, all.rejections
                ),
            );
        }
        if let Some(message) = verdict.fit_error() {
            tally.fit_errors = 1;
            let text = match without_post_filter(message) {
                Ok(text) => text,
                Err(text) => {
                    found = true;
                    let detail = format!("v1.36's text ends in unknown words: {text:?}");
                    self.report.disagree(seed, &key, "fit-error", detail);
                    text
                }
            };
            let berth = ours.message.clone().unwrap_or_else(|| "<placed>".into());
            if has_claims(pod) {
                if ours.node.is_none() {
                    tally.fit_errors_agree = 1;
                }
                self.report
                    .by_design
                    .push((seed, key.clone(), text.to_owned(), berth));
            } else if berth == text {
                tally.fit_errors_agree = 1;
                self.report.fit_identical += 1;
            } else {
                let nodes = state.nodes.len();
                match v136_fit_error(nodes, &all.rejections, &all.unrequested) {
                    Ok(reordered) if reordered == text => {
                        tally.fit_errors_agree = 1;
                        self.report.fit_reordered += 1;
                    }
                    rebuilt => {
                        found = true;
                        let detail = format!(
                            "v1.36: {text:?}\n    Berth: {berth:?}\n    Berth in v1.36's \
                             order and words: {rebuilt:?}"
                        );
                        self.report.disagree(seed, &key, "fit-error", detail);
                    }
                }
            }
        }
        if decision_comparable(&theirs, &ours.feasible_nodes) {
            tally.decisions = 1;
            if let Verdict::Bound(node) = verdict
                && ours.node.as_ref() == Some(node)
            {
                tally.decisions_agree = 1;
            } else {
                found = true;
                let detail = format!("v1.36 {verdict:?}, Berth {:?}", ours.node);
                self.report.disagree(seed, &key, "decision", detail);
            }
        }
        if theirs == ours.feasible_nodes && theirs.len() > 1 && same_scoring_request(pod) {
            self.report.scored += 1;
            match score_differences(&scores, &ours, &theirs) {
                None => self.report.scores_agree += 1,
                Some(detail) => {
                    found = true;
                    self.report.disagree(seed, &key, "scores", detail);
                }
            }
        }
        add(&mut self.report.all, &tally);
        for kind in kinds {
            add(self.report.kinds.entry(kind).or_default(), &tally);
        }
        if let (true, Some(out)) = (found, self.out_dir) {
            crate::report::write_reproduction(out, self.scenario, GATE, &key, state, pod)?;
        }
        Ok(())
    }
}

fn add(total: &mut KindStats, one: &KindStats) {
    total.pods += one.pods;
    total.feasibility_agree += one.feasibility_agree;
    total.fit_errors += one.fit_errors;
    total.fit_errors_agree += one.fit_errors_agree;
    total.decisions += one.decisions;
    total.decisions_agree += one.decisions_agree;
}

/// The nodes v1.36 found feasible: those it logged a total for, or, when it scored none
/// (it skips scoring when one node is feasible), the node it bound the pod to.
fn feasible(verdict: &Verdict, scores: &ScoreLog) -> BTreeSet<String> {
    match verdict {
        Verdict::Bound(node) if scores.totals.is_empty() => BTreeSet::from([node.clone()]),
        Verdict::Bound(_) => scores.totals.keys().cloned().collect(),
        Verdict::Unschedulable(_) | Verdict::Preempted { .. } => BTreeSet::new(),
    }
}

/// v1.36's FitError text without what its PostFilter plugins appended, or Err with the
/// whole text when what follows the FitError's first ". " is not made only of their words
/// (then nothing is cut: the addition is not known to be pure). No filter reason contains
/// ". ", so the FitError's own text ends at the first one.
pub fn without_post_filter(message: &str) -> Result<&str, &str> {
    let Some(at) = message.find(". ") else {
        return Ok(message);
    };
    let (text, mut rest) = (&message[..=at], &message[at + 2..]);
    loop {
        if rest.is_empty() || rest.starts_with(PREEMPTION_PREFIX) {
            return Ok(text);
        }
        let known = DRA_POST_FILTER
            .iter()
            .find_map(|m| rest.strip_prefix(m))
            .and_then(|after| after.strip_prefix(',').map(str::trim_start));
        match known {
            Some(after) => rest = after,
            None => return Err(message),
        }
    }
}

/// Whether v1.36's NodeResourcesFit scores the pod with the request Berth's
/// LeastRequestedPriority uses: not when it has pod-level requests (v1.36.3 builds that
/// plugin's scorer without the PodLevelResources flag, so the incoming pod's
/// `spec.resources` are ignored there, though counted in the node's totals and by
/// BalancedAllocation), nor when it has a cpu overhead (v1.22 adds it in whole cores,
/// `Value()`, where v1.36 adds millicores; Berth keeps v1.22's).
pub fn same_scoring_request(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let pod_level = spec.is_some_and(|s| s.resources.is_some());
    let cpu_overhead = spec
        .and_then(|s| s.overhead.as_ref())
        .is_some_and(|o| o.contains_key("cpu"));
    !pod_level && !cpu_overhead
}

/// The FitError v1.36 would write for Berth's per-node reasons (every failing predicate's,
/// in any order): each node's reasons from the first filter in v1.36's order that has any,
/// in v1.36's words, counted and sorted as FitError.Error does. Reasons in `unrequested`
/// (v1.22's check of a resource the pod does not request, see
/// [`BerthOutcome::unrequested`]) are left out, as v1.36 never gives them. Err names a
/// reason no v1.36 filter gives.
pub fn v136_fit_error(
    num_nodes: usize,
    rejections: &BTreeMap<String, Vec<String>>,
    unrequested: &[&str],
) -> Result<String, String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for reasons in rejections.values() {
        let mut first: Option<(usize, BTreeSet<String>)> = None;
        for reason in reasons
            .iter()
            .filter(|r| !unrequested.contains(&r.as_str()))
        {
            let rank = V136_FILTERS
                .iter()
                .position(|(_, known)| known.iter().any(|k| reason.starts_with(k)))
                .ok_or_else(|| reason.clone())?;
            let worded = REWORDED
                .iter()
                .find(|(old, _)| reason.starts_with(old))
                .map_or(reason.as_str(), |(_, new)| new)
                .to_owned();
            match &mut first {
                Some((r, set)) if *r == rank => {
                    set.insert(worded);
                }
                Some((r, _)) if *r < rank => {}
                _ => first = Some((rank, BTreeSet::from([worded]))),
            }
        }
        for reason in first.into_iter().flat_map(|(_, set)| set) {
            *counts.entry(reason).or_default() += 1;
        }
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    Ok(format!(
        "0/{num_nodes} nodes are available: {}.",
        parts.join(", ")
    ))
}

/// The [`SAME_SCORES`] plugins' differences on the feasible nodes, or None.
fn score_differences(
    scores: &ScoreLog,
    ours: &BerthOutcome,
    nodes: &BTreeSet<String>,
) -> Option<String> {
    // A plugin with nothing to score skips the pod (v1.36's PreScore returns Skip; Berth
    // leaves out a priority that scores every node 0): no line for any node is 0 for all.
    let score = |map: &BTreeMap<(String, String), i64>, plugin: &str, node: &String| {
        let skipped = !map.keys().any(|(p, _)| p == plugin);
        let found = map.get(&(plugin.to_owned(), node.clone())).copied();
        if skipped { Some(0) } else { found }
    };
    let mut out = Vec::new();
    for (plugin, weight, berth_plugin) in SAME_SCORES {
        for node in nodes {
            let theirs = score(&scores.plugins, plugin, node).map(|s| s / weight);
            let mine = score(&ours.plugins, berth_plugin, node);
            if theirs != mine {
                out.push(format!("{plugin} {node}: v1.36 {theirs:?} Berth {mine:?}"));
            }
        }
    }
    (!out.is_empty()).then(|| out.join("\n    "))
}

/// The kinds of field `pod` (or the cluster it is scheduled on) uses; `gated`: it was
/// created with scheduling gates (removed since).
fn kinds(pod: &Pod, state: &ClusterObjects, gated: bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    let spec = pod.spec.as_ref();
    let sidecars: Vec<_> = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .collect();
    if !sidecars.is_empty() {
        out.push("native sidecar");
    }
    let sidecar_port = sidecars
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .any(|p| p.host_port.is_some_and(|h| h > 0));
    if sidecar_port {
        out.push("sidecar host port");
    }
    if spec.is_some_and(|s| s.resources.is_some()) {
        out.push("pod-level requests");
    }
    let resizing = state.pods.iter().any(|p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.allocated_resources.is_some())
    });
    if resizing {
        out.push("resize on a node");
    }
    let pod_level_resizing = state.pods.iter().any(|p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.allocated_resources.is_some())
    });
    if pod_level_resizing {
        out.push("pod-level resize");
    }
    if gated {
        out.push("scheduling gate");
    }
    if has_claims(pod) {
        out.push("resource claims");
    }
    let spread_v136 = spec
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            c.min_domains.is_some()
                || c.node_affinity_policy.is_some()
                || c.node_taints_policy.is_some()
                || c.match_label_keys.is_some()
        });
    if spread_v136 {
        out.push("spread v1.36 fields");
    }
    let affinity = spec.and_then(|s| s.affinity.as_ref());
    let terms = affinity
        .and_then(|a| a.pod_affinity.as_ref())
        .map(|a| {
            (
                a.required_during_scheduling_ignored_during_execution
                    .as_ref(),
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref(),
            )
        })
        .into_iter()
        .chain(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .map(|a| {
                    (
                        a.required_during_scheduling_ignored_during_execution
                            .as_ref(),
                        a.preferred_during_scheduling_ignored_during_execution
                            .as_ref(),
                    )
                }),
        )
        .flat_map(|(required, preferred)| {
            required.into_iter().flatten().chain(
                preferred
                    .into_iter()
                    .flatten()
                    .map(|p| &p.pod_affinity_term),
            )
        });
    let label_keys = terms
        .into_iter()
        .any(|t| t.match_label_keys.is_some() || t.mismatch_label_keys.is_some());
    if label_keys {
        out.push("affinity label keys");
    }
    let v136_claim = spec
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .any(|c| matches!(c.claim_name.as_str(), "block-0" | "vac-0"));
    if v136_claim {
        out.push("volume mode or class");
    }
    if out.is_empty() {
        out.push("v1.22-era fields only");
    }
    out
}

fn gates(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

fn has_claims(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// Whether the apiserver's SchedulingGated condition is still there and nothing bound it.
fn scheduling_gated(pod: &Pod) -> bool {
    let unbound = pod.spec.as_ref().is_none_or(|s| s.node_name.is_none());
    let gated = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated"));
    unbound && gated
}

fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", namespace(pod), name(pod))
}

fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or_default()
}

fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "n/a".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

impl fmt::Display for KindStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} pods: feasibility {}/{}, FitErrors {}/{}, decisions {}/{} comparable",
            self.pods,
            self.feasibility_agree,
            self.pods,
            self.fit_errors_agree,
            self.fit_errors,
            self.decisions_agree,
            self.decisions
        )
    }
}

impl fmt::Display for V136Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "differential run against kube-scheduler v1.36.3, default profile; Berth on \
             v1.22's default provider ({} scenarios, {:.0} s)",
            self.scenarios,
            self.elapsed.as_secs_f64()
        )?;
        let a = &self.all;
        writeln!(
            f,
            "  feasibility  {}/{} ({})",
            a.feasibility_agree,
            a.pods,
            percent(a.feasibility_agree, a.pods)
        )?;
        writeln!(
            f,
            "               ({} of them once nodes refused only by v1.22's check of \
             unrequested resources count as feasible)",
            self.feasible_overcommitted
        )?;
        writeln!(
            f,
            "  FitErrors    {}/{} ({}): {} identical, {} in v1.36's filter order and words, \
             {} with resource claims refused by both (texts differ by design)",
            a.fit_errors_agree,
            a.fit_errors,
            percent(a.fit_errors_agree, a.fit_errors),
            self.fit_identical,
            self.fit_reordered,
            self.by_design.len()
        )?;
        writeln!(
            f,
            "  decisions    {}/{} comparable (one feasible node on both sides)",
            a.decisions_agree, a.decisions
        )?;
        writeln!(
            f,
            "  gates        {}/{} held by both while a later pod was decided ({} more \
             after the last decided pod: Berth's hold checked, then compared once released)",
            self.gated_agree, self.gated, self.gated_unwitnessed
        )?;
        writeln!(
            f,
            "  scores       {}/{} pods with several feasible nodes (and the same scoring \
             request): NodeResourcesFit, TaintToleration, NodeAffinity identical",
            self.scores_agree, self.scored
        )?;
        writeln!(f, "  per kind of field:")?;
        for kind in KINDS {
            if let Some(stats) = self.kinds.get(kind) {
                writeln!(f, "    {kind:<22} {stats}")?;
            }
        }
        if !self.by_design.is_empty() {
            writeln!(f, "texts that differ by design ({}):", self.by_design.len())?;
        }
        for (seed, pod, theirs, ours) in &self.by_design {
            writeln!(
                f,
                "  seed {seed} {pod}:\n    v1.36: {theirs:?}\n    Berth: {ours:?}"
            )?;
        }
        if !self.disagreements.is_empty() {
            writeln!(f, "disagreements ({}):", self.disagreements.len())?;
        }
        for (seed, pod, what, detail) in &self.disagreements {
            writeln!(f, "  seed {seed} {pod} {what}:\n    {detail}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_post_filter_words_are_cut_off() {
        let fit = "0/3 nodes are available: 3 Insufficient cpu.";
        for (message, want) in [
            (fit.to_owned(), Ok(fit)),
            (
                format!(
                    "{fit} preemption: 0/3 nodes are available: 3 No preemption victims \
                     found for incoming pod."
                ),
                Ok(fit),
            ),
            (format!("{fit} no new claims to deallocate,"), Ok(fit)),
            (
                format!("{fit} no new claims to deallocate, preemption: not eligible"),
                Ok(fit),
            ),
        ] {
            assert_eq!(without_post_filter(&message), want, "{message}");
        }
        let unknown = format!("{fit} something else");
        assert_eq!(without_post_filter(&unknown), Err(unknown.as_str()));
    }

    #[test]
    fn reasons_are_put_in_v136_order_and_words() {
        let rejections = BTreeMap::from([
            (
                "n1".to_owned(),
                vec![
                    "Insufficient cpu".to_owned(),
                    "Insufficient memory".to_owned(),
                    "node(s) had taint {dedicated: infra}, that the pod didn't tolerate".to_owned(),
                ],
            ),
            (
                "n2".to_owned(),
                vec![
                    "node(s) didn't match pod affinity rules".to_owned(),
                    "Insufficient memory".to_owned(),
                ],
            ),
            (
                "n3".to_owned(),
                vec!["node(s) had taint {spot: true}, that the pod didn't tolerate".to_owned()],
            ),
        ]);
        assert_eq!(
            v136_fit_error(3, &rejections, &[]),
            Ok("0/3 nodes are available: 1 Insufficient memory, \
                2 node(s) had untolerated taint(s)."
                .to_owned())
        );
        let unknown = BTreeMap::from([("n1".to_owned(), vec!["something new".to_owned()])]);
        assert_eq!(
            v136_fit_error(1, &unknown, &[]),
            Err("something new".to_owned())
        );
        let overcommitted = BTreeMap::from([(
            "n1".to_owned(),
            vec![
                "Insufficient cpu".to_owned(),
                "Insufficient memory".to_owned(),
            ],
        )]);
        assert_eq!(
            v136_fit_error(1, &overcommitted, &["Insufficient cpu"]),
            Ok("0/1 nodes are available: 1 Insufficient memory.".to_owned())
        );
    }
}
