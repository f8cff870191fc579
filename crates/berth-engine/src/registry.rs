//! The one place that maps policy entries to rules.

use std::sync::Arc;

use berth_policy::{EffectivePolicy, PredicateKind, PriorityKind, WasmPlugin};

use crate::rules::*;
use crate::scheduler::{CycleConfig, NamedFilter, Scheduler, WeightedScore};

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
    fn filter(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn crate::FilterRule>, String>;
    /// The score rule of priority `name`.
    fn score(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn crate::ScoreRule>, String>;
}

/// The factory of [`scheduler_for`]: it loads no plugin.
struct NoPlugins;

const NO_PLUGINS: &str = "this entry names a WASM plugin, but plugins are not enabled here";

impl PluginFactory for NoPlugins {
    fn filter(&self, _: &str, _: &WasmPlugin) -> Result<Arc<dyn crate::FilterRule>, String> {
        Err(NO_PLUGINS.to_string())
    }
    fn score(&self, _: &str, _: &WasmPlugin) -> Result<Arc<dyn crate::ScoreRule>, String> {
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
    let filters = policy
        .predicates
        .iter()
        .map(|p| {
            Ok(NamedFilter {
                name: p.name.clone(),
                rule: filter_for(
                    &p.name,
                    &p.kind,
                    &ignored,
                    policy.always_check_all_predicates,
                    plugins,
                )?,
            })
        })
        .collect::<Result<Vec<_>, RegistryError>>()?;
    let scores = policy
        .priorities
        .iter()
        .map(|p| {
            Ok(WeightedScore {
                name: p.name.clone(),
                rule: score_for(
                    &p.name,
                    &p.kind,
                    policy.hard_pod_affinity_symmetric_weight,
                    plugins,
                )?,
                weight: p.weight,
            })
        })
        .collect::<Result<Vec<_>, RegistryError>>()?;
    let config = CycleConfig {
        always_check_all_predicates: policy.always_check_all_predicates,
        ..config
    };
    Ok(Scheduler::new(filters, scores, config))
}

fn filter_for(
    name: &str,
    kind: &PredicateKind,
    ignored_resources: &[String],
    check_all: bool,
    plugins: &dyn PluginFactory,
) -> Result<Arc<dyn crate::FilterRule>, RegistryError> {
    use PredicateKind as P;
    Ok(match kind {
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
        P::CheckPodCIDRCapacity => Arc::new(pod_cidr::CheckPodCidrCapacity),
        P::NoDiskConflict => Arc::new(disk_conflict::NoDiskConflict),
        P::PodToleratesNodeTaints => Arc::new(taints::PodToleratesNodeTaints::all()),
        P::PodToleratesNodeNoExecuteTaints => {
            Arc::new(taints::PodToleratesNodeTaints::no_execute_only())
        }
        P::CheckNodeLabelPresence { labels, presence } => Arc::new(
            label_presence::CheckNodeLabelPresence::new(labels.clone(), *presence),
        ),
        P::CheckServiceAffinity { labels } => {
            Arc::new(service_affinity::CheckServiceAffinity::new(labels.clone()))
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
    name: &str,
    kind: &PriorityKind,
    hard_pod_affinity_weight: i32,
    plugins: &dyn PluginFactory,
) -> Result<Arc<dyn crate::ScoreRule>, RegistryError> {
    use PriorityKind as P;
    Ok(match kind {
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
        P::EqualPriority => Arc::new(equal_priority::EqualPriority),
        P::RequestedToCapacityRatio { shape, resources } => Arc::new(
            requested_to_capacity_ratio::RequestedToCapacityRatio::new(shape, resources),
        ),
        P::ServiceAntiAffinity { label } => Arc::new(
            service_anti_affinity::ServiceAntiAffinity::new(label.clone()),
        ),
        P::NodeLabel { label, presence } => Arc::new(node_label_priority::NodeLabelPriority::new(
            label.clone(),
            *presence,
        )),
        P::EvenPodsSpread => Arc::new(pod_topology_spread::EvenPodsSpreadPriority),
        P::Wasm(spec) => plugins
            .score(name, spec)
            .map_err(|message| RegistryError::Plugin {
                kind: "priority",
                name: name.to_string(),
                message,
            })?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
