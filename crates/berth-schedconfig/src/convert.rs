//! Policy -> KubeSchedulerConfiguration: one `kubescheduler.config.k8s.io/v1` profile that
//! reproduces the policy with upstream's plugins, as v1.22's legacy registry (which built a
//! profile from a Policy) mapped them, adapted to what v1 still has. Everything without an
//! equivalent is named in the [`Conversion`], never silently dropped.

use std::fmt;

use base64::Engine as _;
use berth_policy::upstream::{self, EntryGroup, filter_groups, score_groups};
use berth_policy::{EffectivePolicy, FeatureGates, PredicateKind, PriorityKind};
use serde::Serialize;

use crate::args::{
    self, InterPodAffinityArgs, NodeAffinity, NodeAffinityArgs, NodeResourcesFitArgs, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, PodTopologySpreadArgs,
    RequestedToCapacityRatioParam, ResourceSpec, ScoringStrategy, UtilizationShapePoint,
};
use crate::plugins::{self, Point};
use crate::types::{
    API_VERSION, Extender, ExtenderTlsConfig, KIND, KubeSchedulerConfiguration, ManagedResource,
    Plugin, PluginConfig, PluginSet, Plugins, Profile,
};

/// What to convert with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The profile's `schedulerName`.
    pub scheduler_name: String,
    /// The v1.22 feature gates the policy is read under (they decide SelectorSpreadPriority).
    pub feature_gates: FeatureGates,
}

/// The result: the configuration, and what it leaves out.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// The configuration, ready to serialize.
    pub config: KubeSchedulerConfiguration,
    /// Policy entries and settings with no equivalent in v1, each with why.
    pub unconverted: Vec<Unconverted>,
    /// Converted, but worth knowing.
    pub notes: Vec<String>,
}

impl Conversion {
    /// The configuration as YAML, after a comment block listing what was not converted and
    /// the notes.
    pub fn to_yaml(&self, source: &str) -> Result<String, serde_yaml_ng::Error> {
        let mut out = format!(
            "# Converted by `berth convert` from {source}: kube-scheduler v1.22's legacy \
             registry mapping,\n# for kubescheduler.config.k8s.io/v1.\n"
        );
        if self.unconverted.is_empty() {
            out.push_str("# Everything converted.\n");
        } else {
            out.push_str("# NOT CONVERTED (no equivalent in kubescheduler.config.k8s.io/v1):\n");
            for u in &self.unconverted {
                out.push_str(&format!("#   - {u}\n"));
            }
        }
        if !self.notes.is_empty() {
            out.push_str("# Notes:\n");
            for n in &self.notes {
                out.push_str(&format!("#   - {n}\n"));
            }
        }
        out.push_str(&serde_yaml_ng::to_string(&self.config)?);
        Ok(out)
    }
}

/// A policy entry (or setting) left out of the conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unconverted {
    /// Where in the Policy: `predicates`, `priorities` or `alwaysCheckAllPredicates`.
    pub section: &'static str,
    /// The entries' names (several when v1.22 served them with one plugin).
    pub names: Vec<String>,
    /// Why v1 has no equivalent.
    pub reason: String,
}

impl fmt::Display for Unconverted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.names.is_empty() {
            write!(f, "{}: {}", self.section, self.reason)
        } else {
            write!(
                f,
                "{} {}: {}",
                self.section,
                self.names.join(", "),
                self.reason
            )
        }
    }
}

/// Converts a policy.
pub fn convert(policy: &EffectivePolicy, options: &Options) -> Conversion {
    let mut b = Builder::default();
    // v1.22 added these to every Policy profile; v1.36 pairs DefaultPreemption with a
    // PreEnqueue hook and holds gated pods with SchedulingGates, which Berth does too.
    b.enable(Point::PreEnqueue, plugins::SCHEDULING_GATES, None);
    b.enable(Point::PreEnqueue, plugins::DEFAULT_PREEMPTION, None);
    b.enable(Point::QueueSort, plugins::PRIORITY_SORT, None);
    b.enable(Point::PostFilter, plugins::DEFAULT_PREEMPTION, None);
    b.enable(Point::Bind, plugins::DEFAULT_BINDER, None);
    for group in filter_groups(policy) {
        b.filter(&group);
    }
    for group in score_groups(policy, options.feature_gates) {
        b.score(&group, policy, options.feature_gates);
    }
    if policy.always_check_all_predicates {
        b.unconverted.push(Unconverted {
            section: "alwaysCheckAllPredicates",
            names: Vec::new(),
            reason: "v1 has no such setting: kube-scheduler stops at a node's first failing \
                     filter, so it reports one failure reason per node (which nodes fit is the \
                     same)"
                .to_string(),
        });
    }
    b.plugins.multi_point = PluginSet {
        enabled: Vec::new(),
        // Exactly the plugins listed: none of v1's defaults.
        disabled: vec![Plugin {
            name: "*".to_string(),
            weight: None,
        }],
    };
    let profile = Profile {
        scheduler_name: Some(options.scheduler_name.clone()),
        plugins: Some(b.plugins),
        plugin_config: b.plugin_config,
        ..Profile::default()
    };
    Conversion {
        config: KubeSchedulerConfiguration {
            api_version: API_VERSION.to_string(),
            kind: KIND.to_string(),
            profiles: vec![profile],
            extenders: policy.extenders.iter().map(extender).collect(),
            ..KubeSchedulerConfiguration::default()
        },
        unconverted: b.unconverted,
        notes: b.notes,
    }
}

#[derive(Default)]
struct Builder {
    plugins: Plugins,
    plugin_config: Vec<PluginConfig>,
    unconverted: Vec<Unconverted>,
    notes: Vec<String>,
}

impl Builder {
    /// Enables `name` at `point` once, as upstream's appendToPluginSet.
    fn enable(&mut self, point: Point, name: &str, weight: Option<i32>) {
        let set = self.plugins.at_mut(point);
        if !set.enabled.iter().any(|p| p.name == name) {
            set.enabled.push(Plugin {
                name: name.to_string(),
                weight,
            });
        }
    }

    fn enabled(&self, point: Point, name: &str) -> bool {
        self.plugins
            .at(point)
            .enabled
            .iter()
            .any(|p| p.name == name)
    }

    /// A filter plugin with the points v1.36 pairs with its Filter (its PreFilter, whose
    /// state the Filter reads; VolumeBinding's Reserve and PreBind, as v1.22 enabled them).
    fn enable_filter(&mut self, name: &str) {
        for point in [
            Point::PreFilter,
            Point::Filter,
            Point::Reserve,
            Point::PreBind,
        ] {
            if plugins::implements(name, point)
                && (point != Point::Reserve && point != Point::PreBind || name == "VolumeBinding")
            {
                self.enable(point, name, None);
            }
        }
    }

    /// A score plugin with its PreScore, whose state its Score reads.
    fn enable_score(&mut self, name: &str, weight: i32) {
        if plugins::implements(name, Point::PreScore) {
            self.enable(Point::PreScore, name, None);
        }
        self.enable(Point::Score, name, Some(weight));
    }

    fn args(&mut self, name: &str, args: impl Serialize) {
        let value = sorted(serde_json::to_value(args).expect("plugin args serialize to JSON"));
        match self.plugin_config.iter_mut().find(|c| c.name == name) {
            Some(config) => config.args = value,
            None => self.plugin_config.push(PluginConfig {
                name: name.to_string(),
                args: value,
            }),
        }
    }

    fn skip<K>(&mut self, section: &'static str, group: &EntryGroup<'_, K>, reason: String) {
        self.unconverted.push(Unconverted {
            section,
            names: group.names.iter().map(|n| n.to_string()).collect(),
            reason,
        });
    }

    fn filter(&mut self, group: &EntryGroup<'_, PredicateKind>) {
        let kind = group.first();
        let upstream = upstream::filter_plugins(kind);
        if upstream.is_empty() {
            self.skip("predicates", group, no_upstream_filter(kind));
            return;
        }
        if let PredicateKind::CheckNodeLabelPresence { .. } = kind {
            self.label_presence(group);
            return;
        }
        if let Some(gone) = upstream.iter().find(|p| plugins::points(p).is_none()) {
            self.skip("predicates", group, removed(gone));
            return;
        }
        for plugin in upstream {
            self.enable_filter(plugin);
        }
    }

    /// The labelsPresence entries: v1.22's NodeLabel filter, which v1 no longer has; its
    /// equivalent is a required term added to every pod's node affinity.
    fn label_presence(&mut self, group: &EntryGroup<'_, PredicateKind>) {
        if !self.enabled(Point::Filter, upstream::NODE_AFFINITY) {
            self.skip(
                "predicates",
                group,
                format!(
                    "{}; its v1 equivalent, NodeAffinity's addedAffinity, runs in the NodeAffinity \
                     filter, which would also enforce pods' own node selectors and affinity, which \
                     this policy does not check (add MatchNodeSelector or GeneralPredicates to \
                     convert it)",
                    removed(upstream::NODE_LABEL)
                ),
            );
            return;
        }
        let mut expressions = Vec::new();
        for kind in &group.kinds {
            if let PredicateKind::CheckNodeLabelPresence { labels, presence } = kind {
                let operator = if *presence {
                    args::EXISTS
                } else {
                    args::DOES_NOT_EXIST
                };
                expressions.extend(labels.iter().map(|key| NodeSelectorRequirement {
                    key: key.clone(),
                    operator: operator.to_string(),
                    values: Vec::new(),
                }));
            }
        }
        if expressions.is_empty() {
            self.notes.push(format!(
                "predicates {}: lists no labels, so it checks nothing; nothing to convert",
                group.name()
            ));
            return;
        }
        self.notes.push(format!(
            "predicates {}: converted to NodeAffinity's addedAffinity (Exists/DoesNotExist); \
             nodes it rejects are reported as \"node(s) didn't match scheduler-enforced node \
             affinity\" instead of \"node(s) didn't have the requested labels\"",
            group.name()
        ));
        self.args(
            upstream::NODE_AFFINITY,
            NodeAffinityArgs {
                added_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: expressions,
                            match_fields: Vec::new(),
                        }],
                    }),
                    preferred_during_scheduling_ignored_during_execution: Vec::new(),
                }),
                ..NodeAffinityArgs::default()
            },
        );
    }

    fn score(
        &mut self,
        group: &EntryGroup<'_, PriorityKind>,
        policy: &EffectivePolicy,
        gates: FeatureGates,
    ) {
        let kind = group.first();
        let Some(upstream) = upstream::score_plugin(kind, gates) else {
            match kind {
                PriorityKind::Wasm(spec) => self.skip(
                    "priorities",
                    group,
                    format!(
                        "a Berth WASM plugin (module {}); kube-scheduler runs compiled-in plugins \
                         only",
                        spec.module
                    ),
                ),
                _ => self.notes.push(format!(
                    "priorities {}: EqualPriority gives every node the same score; v1.22 skipped \
                     it too, nothing to convert",
                    group.name()
                )),
            }
            return;
        };
        let Ok(weight) = i32::try_from(group.weight) else {
            self.skip(
                "priorities",
                group,
                format!(
                    "weight {} does not fit v1's 32-bit score weights",
                    group.weight
                ),
            );
            return;
        };
        if let Some(strategy) = scoring_strategy(kind) {
            self.resource_score(group, strategy, weight);
            return;
        }
        if plugins::points(upstream).is_none() {
            let reason = match kind {
                PriorityKind::NodeLabel { .. } => format!(
                    "{}; NodeAffinity's addedAffinity preferred terms are scored together with \
                     pods' own preferred terms and normalized, so they cannot reproduce its \
                     scores",
                    removed(upstream)
                ),
                _ => removed(upstream),
            };
            self.skip("priorities", group, reason);
            return;
        }
        self.enable_score(upstream, weight);
        if upstream == upstream::POD_TOPOLOGY_SPREAD {
            // v1.22's producers: SelectorSpreadPriority (gate on) sets System defaulting,
            // EvenPodsSpreadPriority alone List; System wins when both are there.
            let system = group
                .kinds
                .iter()
                .any(|k| matches!(k, PriorityKind::SelectorSpread));
            let defaulting = if system {
                args::SYSTEM_DEFAULTING
            } else {
                args::LIST_DEFAULTING
            };
            self.args(
                upstream,
                PodTopologySpreadArgs {
                    defaulting_type: Some(defaulting.to_string()),
                    ..PodTopologySpreadArgs::default()
                },
            );
        }
        if matches!(kind, PriorityKind::InterPodAffinity)
            && !policy.defaulted.hard_pod_affinity_symmetric_weight
        {
            self.args(
                upstream,
                InterPodAffinityArgs {
                    hard_pod_affinity_weight: Some(policy.hard_pod_affinity_symmetric_weight),
                    ..InterPodAffinityArgs::default()
                },
            );
        }
    }

    /// Least/MostRequested and RequestedToCapacityRatio: separate plugins in v1.22, one
    /// NodeResourcesFit scoring strategy in v1.
    fn resource_score(
        &mut self,
        group: &EntryGroup<'_, PriorityKind>,
        strategy: ScoringStrategy,
        weight: i32,
    ) {
        let fit = upstream::NODE_RESOURCES_FIT;
        if self.enabled(Point::Score, fit) {
            self.skip(
                "priorities",
                group,
                "v1 scores resources with NodeResourcesFit's one scoringStrategy, which an \
                 earlier priority already sets (v1.22 ran NodeResourcesLeastAllocated, \
                 NodeResourcesMostAllocated and RequestedToCapacityRatio as separate plugins)"
                    .to_string(),
            );
            return;
        }
        if let Some(reason) = strategy_problem(&strategy) {
            self.skip("priorities", group, reason);
            return;
        }
        self.enable_score(fit, weight);
        self.args(
            fit,
            NodeResourcesFitArgs {
                scoring_strategy: Some(strategy),
                ..NodeResourcesFitArgs::default()
            },
        );
    }
}

/// `value` with every object's keys in sorted order, so the output does not depend on
/// whether serde_json keeps insertion order (a feature another crate of the build may turn
/// on).
fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The NodeResourcesFit strategy of a resource priority; `None` for other priorities.
fn scoring_strategy(kind: &PriorityKind) -> Option<ScoringStrategy> {
    let (name, resources, shape) = match kind {
        PriorityKind::LeastRequested => (args::LEAST_ALLOCATED, args::cpu_and_memory(), None),
        PriorityKind::MostRequested => (args::MOST_ALLOCATED, args::cpu_and_memory(), None),
        PriorityKind::RequestedToCapacityRatio { shape, resources } => (
            args::REQUESTED_TO_CAPACITY_RATIO,
            resources
                .iter()
                .map(|r| ResourceSpec {
                    name: r.name.clone(),
                    weight: r.weight,
                })
                .collect(),
            Some(RequestedToCapacityRatioParam {
                shape: shape
                    .iter()
                    .map(|p| UtilizationShapePoint {
                        // In range: the policy crate checks 0..=100 and 0..=10.
                        utilization: p.utilization as i32,
                        score: p.score as i32,
                    })
                    .collect(),
            }),
        ),
        _ => return None,
    };
    Some(ScoringStrategy {
        kind: Some(name.to_string()),
        resources,
        requested_to_capacity_ratio: shape,
    })
}

/// Why v1 would not take a strategy as v1.22 ran it, if it would not.
fn strategy_problem(strategy: &ScoringStrategy) -> Option<String> {
    if strategy.resources.is_empty() {
        return Some(
            "lists no resources, so v1.22 (and Berth) score 0 on every node; v1 would default \
             the list to cpu and memory"
                .to_string(),
        );
    }
    strategy
        .resources
        .iter()
        .find(|r| !(1..=100).contains(&r.weight))
        .map(|r| {
            format!(
                "resource {:?} has weight {}; v1 accepts resource weights 1..=100",
                r.name, r.weight
            )
        })
}

/// Why a v1.22 plugin has no v1 equivalent.
fn removed(plugin: &str) -> String {
    let why = match plugin {
        "ServiceAffinity" => {
            "no v1 plugin keeps a Service's pods on nodes with the same label values or spreads \
             them over a label's values"
        }
        "SelectorSpread" => {
            "with DefaultPodTopologySpread on (v1.22's default) SelectorSpreadPriority converts \
             to PodTopologySpread with the system default constraints"
        }
        "NodePreferAvoidPods" => {
            "the scheduler.alpha.kubernetes.io/preferAvoidPods annotation is no longer read"
        }
        "EBSLimits" | "GCEPDLimits" | "AzureDiskLimits" | "CinderLimits" => {
            "with CSI migration, NodeVolumeLimits (MaxCSIVolumeCountPred) counts these volumes \
             against their CSI driver's limit instead"
        }
        _ => "",
    };
    let mut text =
        format!("v1.22 ran it as the {plugin} plugin, which kube-scheduler v1.36 no longer has");
    if !why.is_empty() {
        text.push_str("; ");
        text.push_str(why);
    }
    text
}

/// Why a predicate v1.22 had no plugin for has no equivalent.
fn no_upstream_filter(kind: &PredicateKind) -> String {
    use PredicateKind as P;
    match kind {
        P::CheckNodeCondition => "a v1.12 predicate (v1.22 dropped it): kube-scheduler keeps \
                                  pods off not-ready, unreachable and network-unavailable nodes \
                                  through the node lifecycle controller's taints, which \
                                  TaintToleration checks"
            .to_string(),
        P::CheckNodeMemoryPressure | P::CheckNodeDiskPressure | P::CheckNodePIDPressure => {
            "a v1.12 predicate (v1.22 dropped it): node pressure reaches kube-scheduler as the \
             node.kubernetes.io/*-pressure taints, which TaintToleration checks"
                .to_string()
        }
        P::PodToleratesNodeNoExecuteTaints => "a v1.12 predicate (v1.22 dropped it): \
                                               TaintToleration (PodToleratesNodeTaints) checks \
                                               NoExecute taints with the NoSchedule ones"
            .to_string(),
        P::MatchNamespaceNodeSelector { .. } => "a Berth predicate: upstream enforces namespace \
                                                 node selectors at admission (the PodNodeSelector \
                                                 admission plugin), not in the scheduler"
            .to_string(),
        P::CheckPodCIDRCapacity { .. } => {
            "a Berth predicate: kube-scheduler does not count pod IPs".to_string()
        }
        P::CheckTolerationRestriction { .. } => "a Berth predicate: upstream restricts \
                                                 tolerations at admission (the \
                                                 PodTolerationRestriction admission plugin), not \
                                                 in the scheduler"
            .to_string(),
        P::Wasm(spec) => format!(
            "a Berth WASM plugin (module {}); kube-scheduler runs compiled-in plugins only",
            spec.module
        ),
        other => format!("{} has no upstream plugin", other.slot_name()),
    }
}

/// An extender as v1 spells it (the fields are the Policy's).
fn extender(e: &berth_policy::Extender) -> Extender {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    Extender {
        url_prefix: e.url_prefix.clone(),
        filter_verb: e.filter_verb.clone().unwrap_or_default(),
        preempt_verb: e.preempt_verb.clone().unwrap_or_default(),
        prioritize_verb: e.prioritize_verb.clone().unwrap_or_default(),
        weight: e.weight,
        bind_verb: e.bind_verb.clone().unwrap_or_default(),
        enable_https: e.enable_https,
        tls_config: e.tls_config.as_ref().map(|t| ExtenderTlsConfig {
            insecure: t.insecure,
            server_name: t.server_name.clone(),
            cert_file: t.cert_file.clone(),
            key_file: t.key_file.clone(),
            ca_file: t.ca_file.clone(),
            cert_data: b64(&t.cert_data),
            key_data: b64(&t.key_data),
            ca_data: b64(&t.ca_data),
        }),
        http_timeout: Some(crate::goduration::format(e.http_timeout)),
        node_cache_capable: e.node_cache_capable,
        managed_resources: e
            .managed_resources
            .iter()
            .map(|m| ManagedResource {
                name: m.name.clone(),
                ignored_by_scheduler: m.ignored_by_scheduler,
            })
            .collect(),
        ignorable: e.ignorable,
    }
}
