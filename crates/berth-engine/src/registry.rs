//! The one place that maps policy entries to rules.

use std::sync::Arc;

use berth_policy::upstream::{self, EntryGroup, filter_groups, score_groups};
use berth_policy::{
    EffectivePolicy, FeatureGates, GuardedEffect, PodIpSource, PredicateKind, PriorityKind,
    WasmPlugin, WhenCapacityMissing,
};

use crate::framework::{FilterRule, ScoreRule};
use crate::profile::{NamedFilter, WeightedScore};
use crate::rules::*;
use crate::scheduler::{CycleConfig, Scheduler};

/// A policy entry the engine cannot turn into a rule.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// An argument the policy crate accepted but the rule cannot use.
    #[error("predicate {name}: {message}")]
    BadPredicate {
        /// The entry's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A plugin entry that the plugin factory could not load.
    #[error("{kind} {name}: {message}")]
    Plugin {
        /// "predicate" or "priority".
        kind: &'static str,
        /// The entry's name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// Turns the policy's plugin entries (`argument.wasm`) into rules. The engine does no IO, so
/// loading modules is the caller's business (berth-wasm implements this).
pub trait PluginFactory {
    /// The filter of predicate `name`.
    fn filter(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn FilterRule>, String>;
    /// The score rule of priority `name`.
    fn score(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn ScoreRule>, String>;
}

/// The factory of [`scheduler_for`]: it loads no plugin.
struct NoPlugins;

const NO_PLUGINS: &str = "this entry names a WASM plugin, but plugins are not enabled here";

impl PluginFactory for NoPlugins {
    fn filter(&self, _: &str, _: &WasmPlugin) -> Result<Arc<dyn FilterRule>, String> {
        Err(NO_PLUGINS.to_string())
    }
    fn score(&self, _: &str, _: &WasmPlugin) -> Result<Arc<dyn ScoreRule>, String> {
        Err(NO_PLUGINS.to_string())
    }
}

/// Builds a scheduler for a policy without plugins; an entry naming one is an error.
pub fn scheduler_for(
    policy: &EffectivePolicy,
    config: CycleConfig,
) -> Result<Scheduler, RegistryError> {
    scheduler_with_plugins(policy, config, &NoPlugins)
}

/// Builds a scheduler for a policy, loading its plugin entries through `plugins`.
///
/// Entries become rules as v1.22's legacy registry turns them into framework plugins: one
/// plugin instance per upstream plugin, so entries naming the same plugin run once
/// ([`filter_groups`], [`score_groups`]).
pub fn scheduler_with_plugins(
    policy: &EffectivePolicy,
    config: CycleConfig,
    plugins: &dyn PluginFactory,
) -> Result<Scheduler, RegistryError> {
    let ignored: Vec<String> = policy
        .extenders
        .iter()
        .flat_map(|e| &e.managed_resources)
        .filter(|m| m.ignored_by_scheduler)
        .map(|m| m.name.clone())
        .collect();
    // Checks of fields v1.22 never knew come first, whatever the policy: they follow v1.36,
    // whose default profile always runs them, and they skip every pod without those fields.
    let mandatory = [
        NamedFilter {
            name: dynamic_resources::NAME.to_owned(),
            upstream: Some(dynamic_resources::UPSTREAM_PLUGIN),
            protection: None,
            rule: Arc::new(dynamic_resources::DynamicResources),
        },
        NamedFilter {
            name: unmodelled_fields::NAME.to_owned(),
            upstream: None,
            protection: None,
            rule: Arc::new(unmodelled_fields::UnmodelledFields),
        },
    ]
    .into_iter()
    .map(Ok);
    let groups = filter_groups(policy);
    // ReadWriteOncePod, v1.36's VolumeRestrictions check, goes where v1.36 runs that plugin.
    let rwop_at = mandatory.len()
        + read_write_once_pod::position(groups.iter().map(|g| upstream::filter_plugins(g.first())));
    let mut filters = mandatory
        .chain(groups.into_iter().map(|group| {
            Ok(NamedFilter {
                name: group.name(),
                upstream: match upstream::filter_plugins(group.first()) {
                    [one] => Some(*one),
                    _ => None,
                },
                protection: protection(group.first()),
                rule: filter_for(
                    &group,
                    &ignored,
                    policy.always_check_all_predicates,
                    plugins,
                )?,
            })
        }))
        .collect::<Result<Vec<_>, RegistryError>>()?;
    filters.insert(
        rwop_at,
        NamedFilter {
            name: read_write_once_pod::NAME.to_owned(),
            upstream: Some(read_write_once_pod::UPSTREAM_PLUGIN),
            protection: None,
            rule: Arc::new(read_write_once_pod::ReadWriteOncePod),
        },
    );
    let mut scores = Vec::new();
    for group in score_groups(policy, config.feature_gates) {
        let rule = score_for(
            &group,
            policy.hard_pod_affinity_symmetric_weight,
            config.feature_gates,
            plugins,
        )?;
        if let Some(rule) = rule {
            scores.push(WeightedScore {
                name: group.name(),
                upstream: upstream::score_plugin(group.first(), config.feature_gates),
                weight: group.weight,
                rule,
            });
        }
    }
    let config = CycleConfig {
        always_check_all_predicates: policy.always_check_all_predicates,
        ..config
    };
    Ok(Scheduler::new(filters, scores, config).with_trackers(crate::health::trackers_of(policy)))
}

/// The Berth protection a predicate is, by its name (the `predicate` label of `berth run`'s
/// metric of nodes the protections rejected); None for every other predicate.
fn protection(kind: &PredicateKind) -> Option<&'static str> {
    use PredicateKind as P;
    match kind {
        P::CheckTolerationRestriction { .. } => Some("CheckTolerationRestriction"),
        P::CheckPodCIDRCapacity { .. } => Some("CheckPodCIDRCapacity"),
        P::CheckNodeCircuitBreaker(_) => Some("CheckNodeCircuitBreaker"),
        P::CheckWorkloadQuarantine(_) => Some("CheckWorkloadQuarantine"),
        _ => None,
    }
}

/// The label keys of grouped label entries: (preferred present, preferred absent).
fn split_by_presence<'k>(
    entries: impl Iterator<Item = (&'k [String], bool)>,
) -> (Vec<String>, Vec<String>) {
    let (mut present, mut absent) = (Vec::new(), Vec::new());
    for (labels, presence) in entries {
        let side = if presence { &mut present } else { &mut absent };
        side.extend(labels.iter().cloned());
    }
    (present, absent)
}

fn filter_for(
    group: &EntryGroup<'_, PredicateKind>,
    ignored_resources: &[String],
    check_all: bool,
    plugins: &dyn PluginFactory,
) -> Result<Arc<dyn FilterRule>, RegistryError> {
    use PredicateKind as P;
    let name = group.names[0];
    Ok(match group.first() {
        P::CheckNodeCondition => Arc::new(node_condition::CheckNodeCondition),
        P::CheckNodeUnschedulable => Arc::new(node_unschedulable::NodeUnschedulable),
        P::GeneralPredicates => Arc::new(general_predicates::GeneralPredicates::new(
            ignored_resources.to_vec(),
            check_all,
        )),
        P::HostName => Arc::new(node_name::HostName),
        P::PodFitsHostPorts => Arc::new(host_ports::PodFitsHostPorts),
        P::MatchNodeSelector => Arc::new(node_selector::MatchNodeSelector),
        P::MatchNamespaceNodeSelector {
            default_node_selector,
        } => Arc::new(
            namespace_node_selector::MatchNamespaceNodeSelector::new(default_node_selector)
                .map_err(|message| RegistryError::BadPredicate {
                    name: name.to_string(),
                    message,
                })?,
        ),
        P::PodFitsResources => Arc::new(resources_fit::PodFitsResources::new(
            ignored_resources.to_vec(),
        )),
        P::CheckPodCIDRCapacity {
            source,
            when_missing,
        } => {
            let source = match source {
                PodIpSource::PodCidr => pod_cidr::Source::PodCidr,
                PodIpSource::NodeLabel(name) => pod_cidr::Source::Label(name.clone()),
                PodIpSource::NodeAnnotation(name) => pod_cidr::Source::Annotation(name.clone()),
                PodIpSource::Resource(name) => pod_cidr::Source::Resource(name.clone()),
            };
            let fallback = *when_missing == WhenCapacityMissing::PodCIDR;
            Arc::new(pod_cidr::CheckPodCidrCapacity::new(source, fallback))
        }
        P::NoDiskConflict => Arc::new(disk_conflict::NoDiskConflict),
        P::PodToleratesNodeTaints => Arc::new(taints::PodToleratesNodeTaints::all()),
        P::PodToleratesNodeNoExecuteTaints => {
            Arc::new(taints::PodToleratesNodeTaints::no_execute_only())
        }
        P::CheckTolerationRestriction { guards } => {
            let guards = guards
                .iter()
                .map(|g| toleration_restriction::Guard {
                    key: g.key.clone(),
                    value: g.value.clone(),
                    effect: g.effect.map(|e| match e {
                        GuardedEffect::NoSchedule => crate::model::TaintEffect::NoSchedule,
                        GuardedEffect::NoExecute => crate::model::TaintEffect::NoExecute,
                    }),
                    namespaces: g.namespaces.clone(),
                })
                .collect();
            Arc::new(toleration_restriction::CheckTolerationRestriction::new(
                guards,
            ))
        }
        P::CheckNodeCircuitBreaker(_) => Arc::new(circuit_breaker::CheckNodeCircuitBreaker),
        P::CheckWorkloadQuarantine(args) => {
            let label = args.quarantine_node_label.as_ref().map(|(key, value)| {
                workload_quarantine::NodeLabel {
                    key: key.clone(),
                    value: value.clone(),
                }
            });
            Arc::new(workload_quarantine::CheckWorkloadQuarantine::new(label))
        }
        P::CheckNodeLabelPresence { .. } => {
            let (present, absent) = split_by_presence(group.kinds.iter().filter_map(|k| match k {
                P::CheckNodeLabelPresence { labels, presence } => Some((&labels[..], *presence)),
                _ => None,
            }));
            Arc::new(label_presence::CheckNodeLabelPresence::new(present, absent))
        }
        P::CheckServiceAffinity { .. } => {
            let labels = group
                .kinds
                .iter()
                .filter_map(|k| match k {
                    P::CheckServiceAffinity { labels } => Some(labels.iter().cloned()),
                    _ => None,
                })
                .flatten()
                .collect();
            Arc::new(service_affinity::CheckServiceAffinity::new(labels))
        }
        P::MaxEBSVolumeCount => Arc::new(volume_limits::MaxVolumeCount::ebs()),
        P::MaxGCEPDVolumeCount => Arc::new(volume_limits::MaxVolumeCount::gce_pd()),
        P::MaxAzureDiskVolumeCount => Arc::new(volume_limits::MaxVolumeCount::azure_disk()),
        P::MaxCinderVolumeCount => Arc::new(volume_limits::MaxVolumeCount::cinder()),
        P::MaxCSIVolumeCountPred => Arc::new(volume_limits::MaxCsiVolumeCount),
        P::CheckVolumeBinding => Arc::new(volume_binding::CheckVolumeBinding),
        P::NoVolumeZoneConflict => Arc::new(volume_zone::NoVolumeZoneConflict),
        P::CheckNodeMemoryPressure => Arc::new(node_pressure::NodePressure::memory()),
        P::CheckNodePIDPressure => Arc::new(node_pressure::NodePressure::pid()),
        P::CheckNodeDiskPressure => Arc::new(node_pressure::NodePressure::disk()),
        P::EvenPodsSpread => Arc::new(pod_topology_spread::EvenPodsSpread),
        P::MatchInterPodAffinity => Arc::new(inter_pod_affinity::MatchInterPodAffinity),
        P::Wasm(spec) => plugins
            .filter(name, spec)
            .map_err(|message| RegistryError::Plugin {
                kind: "predicate",
                name: name.to_string(),
                message,
            })?,
    })
}

fn score_for(
    group: &EntryGroup<'_, PriorityKind>,
    hard_pod_affinity_weight: i32,
    gates: FeatureGates,
    plugins: &dyn PluginFactory,
) -> Result<Option<Arc<dyn ScoreRule>>, RegistryError> {
    use PriorityKind as P;
    let name = group.names[0];
    let system_defaulted_spread = gates.default_pod_topology_spread
        && group.kinds.iter().any(|k| matches!(k, P::SelectorSpread));
    if system_defaulted_spread {
        return Ok(Some(Arc::new(
            default_pod_topology_spread::DefaultPodTopologySpread,
        )));
    }
    Ok(Some(match group.first() {
        P::LeastRequested => Arc::new(least_requested::LeastRequested),
        P::MostRequested => Arc::new(most_requested::MostRequested),
        P::BalancedResourceAllocation => Arc::new(balanced_allocation::BalancedResourceAllocation),
        P::SelectorSpread => Arc::new(selector_spread::SelectorSpread),
        P::InterPodAffinity => Arc::new(
            inter_pod_affinity_priority::InterPodAffinityPriority::new(hard_pod_affinity_weight),
        ),
        P::NodeAffinity => Arc::new(node_affinity_priority::NodeAffinityPriority),
        P::TaintToleration => Arc::new(taint_toleration_priority::TaintTolerationPriority),
        P::ImageLocality => Arc::new(image_locality::ImageLocality),
        P::NodePreferAvoidPods => Arc::new(prefer_avoid_pods::NodePreferAvoidPods),
        // v1.22 skips it: a constant changes no ranking.
        P::EqualPriority => return Ok(None),
        P::RequestedToCapacityRatio { shape, resources } => Arc::new(
            requested_to_capacity_ratio::RequestedToCapacityRatio::new(shape, resources),
        ),
        P::ServiceAntiAffinity { .. } => {
            let labels = group
                .kinds
                .iter()
                .filter_map(|k| match k {
                    P::ServiceAntiAffinity { label } => Some(label.clone()),
                    _ => None,
                })
                .collect();
            Arc::new(service_anti_affinity::ServiceAntiAffinity::new(labels))
        }
        P::NodeLabel { .. } => {
            let (present, absent) = split_by_presence(group.kinds.iter().filter_map(|k| match k {
                P::NodeLabel { label, presence } => Some((std::slice::from_ref(label), *presence)),
                _ => None,
            }));
            Arc::new(node_label_priority::NodeLabelPriority::new(present, absent))
        }
        P::EvenPodsSpread => Arc::new(pod_topology_spread::EvenPodsSpreadPriority),
        P::Wasm(spec) => plugins
            .score(name, spec)
            .map_err(|message| RegistryError::Plugin {
                kind: "priority",
                name: name.to_string(),
                message,
            })?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn build(text: &str, gates: FeatureGates) -> Scheduler {
        let policy = berth_policy::parse(text, "p.json").expect("valid policy");
        let config = CycleConfig {
            feature_gates: gates,
            ..CycleConfig::default()
        };
        scheduler_for(&policy, config).expect("scheduler")
    }

    const GATE_OFF: FeatureGates = FeatureGates {
        default_pod_topology_spread: false,
    };
    const GATE_ON: FeatureGates = FeatureGates {
        default_pod_topology_spread: true,
    };

    /// Entries become rules as v1.22's legacy registry turns them into plugins: (policy,
    /// gates, filters in order, scores with weights).
    #[test]
    fn entries_become_plugins_as_v122() {
        type Case = (
            &'static str,
            &'static str,
            FeatureGates,
            &'static [&'static str],
            &'static [(&'static str, i64)],
        );
        let cases: &[Case] = &[
            (
                "GeneralPredicates covers its four checks named again",
                r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "GeneralPredicates"},
                    {"name": "HostName"}, {"name": "PodFitsResources"}, {"name": "MatchNodeSelector"},
                    {"name": "NoDiskConflict"}], "priorities": []}"#,
                GATE_ON,
                &[
                    "CheckNodeUnschedulable",
                    "GeneralPredicates",
                    "NoDiskConflict",
                    "PodToleratesNodeTaints",
                ],
                &[],
            ),
            (
                "without GeneralPredicates each check is its own plugin",
                r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "HostName"}], "priorities": []}"#,
                GATE_ON,
                &[
                    "CheckNodeUnschedulable",
                    "HostName",
                    "PodFitsHostPorts",
                    "PodToleratesNodeTaints",
                ],
                &[],
            ),
            (
                "labelsPresence and serviceAffinity entries fold into one plugin each",
                r#"{"predicates": [
                    {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
                    {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}},
                    {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
                    {"name": "Rack", "argument": {"serviceAffinity": {"labels": ["rack"]}}}], "priorities": []}"#,
                GATE_ON,
                &[
                    "CheckNodeUnschedulable",
                    "PodToleratesNodeTaints",
                    "Zoned+NotRetiring",
                    "Region+Rack",
                ],
                &[],
            ),
            (
                "EqualPriority is skipped; serviceAntiAffinity and labelPreference fold, weight n x w",
                r#"{"predicates": [], "priorities": [
                    {"name": "EqualPriority", "weight": 7},
                    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
                    {"name": "Gpu", "weight": 3, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
                    {"name": "Rack", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
                    {"name": "NoSpot", "weight": 3, "argument": {"labelPreference": {"label": "spot", "presence": false}}},
                    {"name": "Ssd", "weight": 3, "argument": {"labelPreference": {"label": "ssd", "presence": true}}}]}"#,
                GATE_ON,
                &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
                &[("Zone+Rack", 4), ("Gpu+NoSpot+Ssd", 9)],
            ),
            (
                "gate on: SelectorSpread and EvenPodsSpread are one PodTopologySpread",
                r#"{"predicates": [], "priorities": [{"name": "SelectorSpreadPriority", "weight": 2},
                    {"name": "LeastRequestedPriority", "weight": 1}, {"name": "EvenPodsSpreadPriority", "weight": 5}]}"#,
                GATE_ON,
                &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
                &[
                    ("SelectorSpreadPriority+EvenPodsSpreadPriority", 5),
                    ("LeastRequestedPriority", 1),
                ],
            ),
            (
                "gate on: EvenPodsSpread's weight counts even when smaller (differential seed 9)",
                r#"{"predicates": [], "priorities": [{"name": "EvenPodsSpreadPriority", "weight": 1},
                    {"name": "ServiceSpreadingPriority", "weight": 2}]}"#,
                GATE_ON,
                &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
                &[("EvenPodsSpreadPriority+ServiceSpreadingPriority", 1)],
            ),
            (
                "gate off: SelectorSpread and EvenPodsSpread stay apart",
                r#"{"predicates": [], "priorities": [{"name": "SelectorSpreadPriority", "weight": 2},
                    {"name": "EvenPodsSpreadPriority", "weight": 5}]}"#,
                GATE_OFF,
                &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
                &[("SelectorSpreadPriority", 2), ("EvenPodsSpreadPriority", 5)],
            ),
        ];
        for (name, text, gates, filters, scores) in cases {
            let s = build(text, *gates);
            let mut got: Vec<&str> = s.filters().iter().map(|f| f.name.as_str()).collect();
            // Placed among the policy's filters; its own test pins where.
            got.retain(|f| *f != read_write_once_pod::NAME);
            // Every scheduler starts with the checks of fields v1.22 never knew.
            assert_eq!(
                got[..2],
                [dynamic_resources::NAME, unmodelled_fields::NAME],
                "{name}: mandatory filters"
            );
            assert_eq!(&got[2..], *filters, "{name}: filters");
            let got: Vec<(&str, i64)> = s
                .scores()
                .iter()
                .map(|w| (w.name.as_str(), w.weight))
                .collect();
            assert_eq!(&got, scores, "{name}: scores");
        }
    }

    /// ReadWriteOncePod runs whatever the policy, where v1.36 runs VolumeRestrictions: after
    /// the filters of the plugins v1.36 runs first (a cordoned node reports that, as there),
    /// before the rest.
    #[test]
    fn read_write_once_pod_runs_where_v136_runs_volume_restrictions() {
        let s = &mut build(
            r#"{"predicates": [{"name": "CheckNodeUnschedulable"}, {"name": "GeneralPredicates"},
                {"name": "NoDiskConflict"}, {"name": "PodToleratesNodeTaints"},
                {"name": "CheckVolumeBinding"}, {"name": "MatchInterPodAffinity"}],
                "priorities": []}"#,
            GATE_ON,
        );
        let got: Vec<&str> = s.filters().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            got[2..],
            [
                "CheckNodeUnschedulable",
                "GeneralPredicates",
                "NoDiskConflict",
                "PodToleratesNodeTaints",
                read_write_once_pod::NAME,
                "CheckVolumeBinding",
                "MatchInterPodAffinity"
            ]
        );
        let empty = build(r#"{"predicates": [], "priorities": []}"#, GATE_ON);
        assert!(
            empty
                .filters()
                .iter()
                .any(|f| f.name == read_write_once_pod::NAME),
            "a policy without predicates still checks the access mode"
        );
        let mut cl = cluster(
            vec![node("n1").build(), node("cordoned").unschedulable().build()],
            vec![pod("user").claim("data").on("n1").build()],
        );
        add_storage(
            &mut cl,
            vec![pv("pv", 1).claimed_by("data").build()],
            vec![
                pvc("data", 1)
                    .access_modes(&[read_write_once_pod::ACCESS_MODE])
                    .bound("pv")
                    .build(),
            ],
            vec![],
        );
        let pending = cl.compile_pod(pod("p").claim("data").build());
        let decision = s.schedule(&cl, &pending, false);
        assert_eq!(
            decision.fit_error.map(|e| e.to_string()).as_deref(),
            Some(
                "0/2 nodes are available: 1 node(s) unavailable due to PersistentVolumeClaim \
                 with ReadWriteOncePod access mode already in-use by another pod, 1 node(s) \
                 were unschedulable."
            )
        );
    }

    /// The differential run's reproduction: with alwaysCheckAllPredicates, a port conflict
    /// named by GeneralPredicates and PodFitsHostPorts counts once per node, as in v1.22.
    #[test]
    fn a_check_named_twice_reports_once() {
        let s = &mut build(
            r#"{"alwaysCheckAllPredicates": true, "predicates": [{"name": "GeneralPredicates"},
                {"name": "PodFitsHostPorts"}], "priorities": []}"#,
            GATE_ON,
        );
        let mut cl = cluster(
            vec![node("n").build()],
            vec![pod("web").host_port("", "TCP", 80).on("n").build()],
        );
        let pending = cl.compile_pod(pod("p").host_port("", "TCP", 80).build());
        let decision = s.schedule(&cl, &pending, false);
        assert_eq!(
            decision.fit_error.map(|e| e.to_string()).as_deref(),
            Some(
                "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
            )
        );
    }

    /// Several labelsPresence entries failing on one node give the reason once.
    #[test]
    fn folded_label_presence_reports_once() {
        let s = &mut build(
            r#"{"alwaysCheckAllPredicates": true, "predicates": [
                {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
                {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}}],
                "priorities": []}"#,
            GATE_ON,
        );
        let mut cl = cluster(vec![node("n").label("retiring", "").build()], vec![]);
        let pending = cl.compile_pod(pod("p").build());
        let decision = s.schedule(&cl, &pending, false);
        assert_eq!(
            decision.fit_error.map(|e| e.to_string()).as_deref(),
            Some("0/1 nodes are available: 1 node(s) didn't have the requested labels.")
        );
    }

    #[test]
    fn plugins_need_a_factory() {
        let policy = berth_policy::parse(
            r#"{"priorities": [{"name": "Cost", "weight": 1, "argument": {"wasm": {"module": "c.wasm"}}}]}"#,
            "p.json",
        )
        .expect("valid policy");
        let error = scheduler_for(&policy, CycleConfig::default()).err();
        assert_eq!(
            error.map(|e| e.to_string()).as_deref(),
            Some("priority Cost: this entry names a WASM plugin, but plugins are not enabled here")
        );
    }

    /// The rules' own plugin names are berth-policy's table
    /// ([`berth_policy::upstream`]), for every built-in entry under both gate settings.
    #[test]
    fn upstream_plugins_are_the_rules() {
        let text = r#"{"predicates": [{"name": "CheckNodeCondition"},
            {"name": "CheckNodeUnschedulable"}, {"name": "GeneralPredicates"},
            {"name": "HostName"}, {"name": "PodFitsHostPorts"}, {"name": "MatchNodeSelector"},
            {"name": "PodFitsResources"}, {"name": "MatchNamespaceNodeSelector"},
            {"name": "NoDiskConflict"}, {"name": "PodToleratesNodeNoExecuteTaints"},
            {"name": "CheckNodeCircuitBreaker"}, {"name": "CheckWorkloadQuarantine"},
            {"name": "Tr", "argument": {"tolerationRestriction": {"taints": [
                {"taint": "k", "namespaces": ["n"]}]}}},
            {"name": "Lp", "argument": {"labelsPresence": {"labels": ["a"], "presence": true}}},
            {"name": "Sa", "argument": {"serviceAffinity": {"labels": ["a"]}}},
            {"name": "MaxEBSVolumeCount"}, {"name": "MaxGCEPDVolumeCount"},
            {"name": "MaxCSIVolumeCountPred"}, {"name": "MaxAzureDiskVolumeCount"},
            {"name": "MaxCinderVolumeCount"}, {"name": "CheckVolumeBinding"},
            {"name": "NoVolumeZoneConflict"}, {"name": "CheckNodeMemoryPressure"},
            {"name": "CheckNodePIDPressure"}, {"name": "CheckNodeDiskPressure"},
            {"name": "EvenPodsSpread"}, {"name": "MatchInterPodAffinity"},
            {"name": "CheckPodCIDRCapacity"}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
            {"name": "MostRequestedPriority", "weight": 1},
            {"name": "BalancedResourceAllocation", "weight": 1},
            {"name": "SelectorSpreadPriority", "weight": 1},
            {"name": "InterPodAffinityPriority", "weight": 1},
            {"name": "NodeAffinityPriority", "weight": 1},
            {"name": "TaintTolerationPriority", "weight": 1},
            {"name": "ImageLocalityPriority", "weight": 1},
            {"name": "NodePreferAvoidPodsPriority", "weight": 1},
            {"name": "EqualPriority", "weight": 1},
            {"name": "EvenPodsSpreadPriority", "weight": 1},
            {"name": "Za", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "z"}}},
            {"name": "Pr", "weight": 1, "argument": {"labelPreference": {"label": "p", "presence": true}}},
            {"name": "Rc", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                "resources": [{"name": "cpu", "weight": 1}]}}}]}"#;
        let policy = berth_policy::parse(text, "p.json").expect("valid policy");
        for p in &policy.predicates {
            assert_eq!(
                upstream::filter_plugins(&p.kind),
                rule_filter_plugins(&p.kind),
                "{}",
                p.name
            );
        }
        for gates in [GATE_ON, GATE_OFF] {
            for p in &policy.priorities {
                assert_eq!(
                    upstream::score_plugin(&p.kind, gates),
                    rule_score_plugin(&p.kind, gates),
                    "{} under {gates}",
                    p.name
                );
            }
        }
    }

    /// The plugins of the rules a predicate builds, by the rules' own constants.
    fn rule_filter_plugins(kind: &PredicateKind) -> &'static [&'static str] {
        use PredicateKind as P;
        match kind {
            P::CheckNodeUnschedulable => &[node_unschedulable::UPSTREAM_PLUGIN],
            P::GeneralPredicates => &general_predicates::UPSTREAM_PLUGINS,
            P::HostName => &[node_name::UPSTREAM_PLUGIN],
            P::PodFitsHostPorts => &[host_ports::UPSTREAM_PLUGIN],
            P::MatchNodeSelector => &[node_selector::UPSTREAM_PLUGIN],
            P::PodFitsResources => &[resources_fit::UPSTREAM_PLUGIN],
            P::NoDiskConflict => &[disk_conflict::UPSTREAM_PLUGIN],
            P::PodToleratesNodeTaints => &[taints::UPSTREAM_PLUGIN],
            P::CheckNodeLabelPresence { .. } => &[label_presence::UPSTREAM_PLUGIN],
            P::CheckServiceAffinity { .. } => &[service_affinity::UPSTREAM_PLUGIN],
            P::MaxEBSVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_EBS],
            P::MaxGCEPDVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_GCE_PD],
            P::MaxAzureDiskVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_AZURE_DISK],
            P::MaxCinderVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_CINDER],
            P::MaxCSIVolumeCountPred => &[volume_limits::UPSTREAM_PLUGIN_CSI],
            P::CheckVolumeBinding => &[volume_binding::UPSTREAM_PLUGIN],
            P::NoVolumeZoneConflict => &[volume_zone::UPSTREAM_PLUGIN],
            P::EvenPodsSpread => &[pod_topology_spread::UPSTREAM_PLUGIN],
            P::MatchInterPodAffinity => &[inter_pod_affinity::UPSTREAM_PLUGIN],
            P::CheckNodeCondition
            | P::MatchNamespaceNodeSelector { .. }
            | P::CheckPodCIDRCapacity { .. }
            | P::CheckTolerationRestriction { .. }
            | P::CheckNodeCircuitBreaker(_)
            | P::CheckWorkloadQuarantine(_)
            | P::PodToleratesNodeNoExecuteTaints
            | P::CheckNodeMemoryPressure
            | P::CheckNodePIDPressure
            | P::CheckNodeDiskPressure
            | P::Wasm(_) => &[],
        }
    }

    /// The plugin of the rule a priority builds under `gates`, by the rule's own constant.
    fn rule_score_plugin(kind: &PriorityKind, gates: FeatureGates) -> Option<&'static str> {
        use PriorityKind as P;
        Some(match kind {
            P::LeastRequested => least_requested::UPSTREAM_PLUGIN,
            P::MostRequested => most_requested::UPSTREAM_PLUGIN,
            P::BalancedResourceAllocation => balanced_allocation::UPSTREAM_PLUGIN,
            P::SelectorSpread if gates.default_pod_topology_spread => {
                default_pod_topology_spread::UPSTREAM_PLUGIN
            }
            P::SelectorSpread => selector_spread::UPSTREAM_PLUGIN,
            P::InterPodAffinity => inter_pod_affinity_priority::UPSTREAM_PLUGIN,
            P::NodeAffinity => node_affinity_priority::UPSTREAM_PLUGIN,
            P::TaintToleration => taint_toleration_priority::UPSTREAM_PLUGIN,
            P::ImageLocality => image_locality::UPSTREAM_PLUGIN,
            P::NodePreferAvoidPods => prefer_avoid_pods::UPSTREAM_PLUGIN,
            P::RequestedToCapacityRatio { .. } => requested_to_capacity_ratio::UPSTREAM_PLUGIN,
            P::ServiceAntiAffinity { .. } => service_anti_affinity::UPSTREAM_PLUGIN,
            P::NodeLabel { .. } => node_label_priority::UPSTREAM_PLUGIN,
            P::EvenPodsSpread => pod_topology_spread::UPSTREAM_PLUGIN,
            P::EqualPriority | P::Wasm(_) => return None,
        })
    }
}
