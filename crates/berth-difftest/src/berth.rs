//! Berth's side: the same state as the reference saw, scheduled in process through
//! berth-kube's conversion and berth-engine, with scores grouped the way v1.22 groups them
//! into framework plugins.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, anyhow};
use berth_engine::scheduler_for;
use berth_engine::simulation::gated_message;
use berth_engine::{Cluster, CycleConfig, FeatureGates, Nominator};
use berth_engine::{LostOn, PreemptionExplanation, PreemptionOutcome};
use berth_kube::ClusterObjects;
use berth_policy::{EffectivePolicy, PriorityKind};
use k8s_openapi::api::core::v1::Pod;

use crate::upstream::DefaultPodTopologySpread;

/// Berth's decision for one pod, in the reference's terms.
#[derive(Debug, Clone, Default)]
pub struct BerthOutcome {
    /// The node chosen (one of `top`), or None.
    pub node: Option<String>,
    /// The FitError text when the pod fits nowhere.
    pub message: Option<String>,
    /// Every node with the highest total (any of them is a valid choice).
    pub top: BTreeSet<String>,
    /// (framework plugin, node) -> weighted score, summed over the policy entries v1.22
    /// serves with that plugin.
    pub plugins: BTreeMap<(String, String), i64>,
    /// node -> total.
    pub totals: BTreeMap<String, i64>,
    /// Nodes that passed every filter.
    pub feasible: usize,
    /// Their names.
    pub feasible_nodes: BTreeSet<String>,
    /// node -> the reasons it was rejected for, in policy order (every failing filter's
    /// when the policy checks them all).
    pub rejections: BTreeMap<String, Vec<String>>,
    /// The pod's scheduling gates: while any is left Berth holds it (no cycle runs).
    pub gates: Vec<String>,
    /// The "Insufficient ..." reasons of the resources among cpu, memory and ephemeral
    /// storage the pod does not request: v1.22 still gives them on a node already
    /// overcommitted on that resource (v1.36 checks only what the pod requests).
    pub unrequested: Vec<&'static str>,
    /// What preemption decided, when the pod fit nowhere.
    pub preemption: Option<BerthPreemption>,
}

/// Berth's preemption for a pod that fit nowhere, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BerthPreemption {
    /// Why the pod may not preempt, if it may not.
    pub not_eligible: Option<String>,
    /// The chosen node and every candidate tied with it on all of upstream's criteria:
    /// v1.22 dry-runs candidates in parallel and takes the first of a tie in the order its
    /// goroutines finished (then in map order), so any of them is its valid choice.
    pub nominated: BTreeSet<String>,
    /// Every candidate node with its victims (`namespace/name`).
    pub victims: BTreeMap<String, BTreeSet<String>>,
}

/// The framework plugin v1.22's legacy registry (pkg/scheduler/framework/plugins/
/// legacy_registry.go) serves a priority with, or None when v1.22 drops it. Berth has no
/// such table yet (issue 7 asks helper `arch` for one), so the suite keeps its own.
pub fn score_plugin(kind: &PriorityKind, gate: DefaultPodTopologySpread) -> Option<&'static str> {
    Some(match kind {
        PriorityKind::LeastRequested => "NodeResourcesLeastAllocated",
        PriorityKind::MostRequested => "NodeResourcesMostAllocated",
        PriorityKind::BalancedResourceAllocation => "NodeResourcesBalancedAllocation",
        PriorityKind::SelectorSpread => match gate {
            DefaultPodTopologySpread::Off => "SelectorSpread",
            DefaultPodTopologySpread::On => "PodTopologySpread",
        },
        PriorityKind::InterPodAffinity => "InterPodAffinity",
        PriorityKind::NodeAffinity => "NodeAffinity",
        PriorityKind::TaintToleration => "TaintToleration",
        PriorityKind::ImageLocality => "ImageLocality",
        PriorityKind::NodePreferAvoidPods => "NodePreferAvoidPods",
        PriorityKind::EqualPriority => return None,
        PriorityKind::RequestedToCapacityRatio { .. } => "RequestedToCapacityRatio",
        PriorityKind::ServiceAntiAffinity { .. } => "ServiceAffinity",
        PriorityKind::NodeLabel { .. } => "NodeLabel",
        PriorityKind::EvenPodsSpread => "PodTopologySpread",
        PriorityKind::Wasm(_) => return None,
    })
}

/// Parses the scenario's policy as Berth does.
pub fn policy(policy: &serde_json::Value) -> Result<EffectivePolicy> {
    berth_policy::parse(&policy.to_string(), "policy.json")
        .map_err(|e| anyhow!("Berth rejects the policy: {e}"))
}

/// Schedules `pod` on `objects` (everything the reference's cache held before the pod was
/// created, with earlier pods bound where the reference put them).
/// Berth runs with the same `DefaultPodTopologySpread` setting as the reference.
pub fn decide(
    policy: &EffectivePolicy,
    objects: &ClusterObjects,
    pod: &Pod,
    gate: DefaultPodTopologySpread,
) -> Result<BerthOutcome> {
    let mut objects = objects.clone();
    objects.pods.push(pod.clone());
    let snapshot = berth_kube::snapshot(&objects).context("Berth's conversion failed")?;
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut cluster = snapshot.cluster;
    let budgets = snapshot.budgets;
    let mut pending = None;
    // Pending pods the reference nominated somewhere (none unless a preemptor was left
    // unbound) hold room on their nodes, as in v1.22's two-pass filters.
    let mut nominator = Nominator::new();
    for other in snapshot.pending {
        if other.meta.name == name && other.meta.namespace == namespace {
            pending = Some(other);
            continue;
        }
        let on = other
            .nominated_node_name
            .as_deref()
            .and_then(|n| cluster.node_by_name(n));
        if let Some(node) = on {
            let info = cluster.compile_pod(other);
            nominator.add(info, node);
        }
    }
    let pending = pending
        .ok_or_else(|| anyhow!("Berth's snapshot lost the pending pod {namespace}/{name}"))?;
    if !pending.scheduling_gates.is_empty() {
        return Ok(BerthOutcome {
            message: Some(gated_message(&pending.scheduling_gates)),
            gates: pending.scheduling_gates,
            ..BerthOutcome::default()
        });
    }
    let config = CycleConfig {
        feature_gates: FeatureGates {
            default_pod_topology_spread: gate == DefaultPodTopologySpread::On,
        },
        ..CycleConfig::default()
    };
    let mut scheduler = scheduler_for(policy, config).context("Berth's registry failed")?;
    let info = cluster.compile_pod(pending);
    let unrequested = [
        (info.request.milli_cpu, "Insufficient cpu"),
        (info.request.memory, "Insufficient memory"),
        (
            info.request.ephemeral_storage,
            "Insufficient ephemeral-storage",
        ),
    ]
    .into_iter()
    .filter(|(amount, _)| *amount == 0)
    .map(|(_, reason)| reason)
    .collect();
    let decision = scheduler.explain_with(&cluster, &nominator, &info);
    let preemption = decision.fit_error().map(|fit| {
        let (result, explained) = scheduler.preempt(&cluster, &nominator, &budgets, &info, fit);
        preemption(&cluster, result, &explained)
    });
    let mut outcome = BerthOutcome {
        node: decision.node().map(|n| cluster.node(n).name().to_owned()),
        message: decision.failure_message(),
        preemption,
        unrequested,
        ..BerthOutcome::default()
    };
    let Some(explanation) = decision.explanation() else {
        return Ok(outcome);
    };
    let kinds: BTreeMap<&str, &PriorityKind> = policy
        .priorities
        .iter()
        .map(|p| (p.name.as_str(), &p.kind))
        .collect();
    let plugins: Vec<Option<&str>> = explanation
        .score_rules
        .iter()
        // A rule serving several entries (as v1.22 folds them into one plugin) is named
        // after them joined with '+', which entry names cannot contain.
        .map(|(name, _)| {
            let first = name.split('+').next().unwrap_or_default();
            kinds.get(first).and_then(|k| score_plugin(k, gate))
        })
        .collect();
    for node in &explanation.nodes {
        if node.feasible() {
            outcome.feasible += 1;
            outcome.feasible_nodes.insert(node.node.clone());
        } else {
            let reasons = node.rejections.iter().map(|r| r.reason.clone()).collect();
            outcome.rejections.insert(node.node.clone(), reasons);
        }
        let Some(total) = node.total else { continue };
        outcome.totals.insert(node.node.clone(), total);
        for (score, plugin) in node.scores.iter().zip(&plugins) {
            if let Some(plugin) = plugin {
                *outcome
                    .plugins
                    .entry(((*plugin).to_owned(), node.node.clone()))
                    .or_default() += score.weighted;
            }
        }
    }
    if let Some(best) = outcome.totals.values().max().copied() {
        outcome.top = outcome
            .totals
            .iter()
            .filter(|(_, t)| **t == best)
            .map(|(n, _)| n.clone())
            .collect();
    } else if let Some(node) = &outcome.node {
        outcome.top.insert(node.clone());
    }
    Ok(outcome)
}

/// A preemption attempt by name: the chosen node with its ties, and each candidate's victims.
fn preemption(
    cluster: &Cluster,
    result: PreemptionOutcome,
    explained: &PreemptionExplanation,
) -> BerthPreemption {
    let mut out = BerthPreemption::default();
    if let PreemptionOutcome::NotEligible(why) = result {
        out.not_eligible = Some(why.to_owned());
        return out;
    }
    for (candidate, lost) in &explained.candidates {
        let node = cluster.node(candidate.node).name().to_owned();
        if matches!(lost, None | Some(LostOn::Order)) {
            out.nominated.insert(node.clone());
        }
        let victims = candidate
            .victims
            .iter()
            .map(|v| cluster.pod(*v).key())
            .collect();
        out.victims.insert(node, victims);
    }
    out
}
