//! Built-in rules: one file per policy predicate or priority, each with its reasons as
//! constants and its own table-driven tests.

pub mod balanced_allocation;
pub mod circuit_breaker;
pub mod default_pod_topology_spread;
pub mod disk_conflict;
pub mod dynamic_resources;
pub mod general_predicates;
pub mod host_ports;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod inter_pod_affinity_priority;
pub mod label_presence;
pub mod least_requested;
pub mod most_requested;
pub mod namespace_node_selector;
pub mod node_affinity_priority;
pub mod node_condition;
pub mod node_label_priority;
pub mod node_name;
pub mod node_pressure;
pub mod node_selector;
pub mod node_unschedulable;
pub mod pod_cidr;
pub mod pod_topology_spread;
pub mod prefer_avoid_pods;
pub mod read_write_once_pod;
pub mod requested_to_capacity_ratio;
pub mod resource_allocation;
pub mod resources_fit;
pub mod selector_spread;
pub mod service_affinity;
pub mod service_anti_affinity;
pub mod taint_toleration_priority;
pub mod taints;
pub mod toleration_restriction;
pub mod unmodelled_fields;
pub mod volume_binding;
pub mod volume_limits;
pub mod volume_util;
pub mod volume_zone;
pub mod workload_quarantine;

/// The Berth protection (by its predicate's name) that gave a failure reason, if one did:
/// `berth run` counts their rejections in a metric.
pub fn protection_of(reason: &str) -> Option<&'static str> {
    if toleration_restriction::is_own_reason(reason) {
        Some("CheckTolerationRestriction")
    } else if pod_cidr::is_own_reason(reason) {
        Some("CheckPodCIDRCapacity")
    } else if circuit_breaker::is_own_reason(reason) {
        Some("CheckNodeCircuitBreaker")
    } else if workload_quarantine::is_own_reason(reason) {
        Some("CheckWorkloadQuarantine")
    } else {
        None
    }
}
