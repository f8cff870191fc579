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
            default_pod_topology_spread::DefaultPodTopologySpread::default(),
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
mod tests;
