//! Pods the converter rejects. Berth's converter is stricter than the API server (it refuses
//! quantities beyond `i64`, which Go clamps or wraps), so a pod the API server accepted can
//! still fail conversion. Neither kind may vanish silently:
//! - a bound pod is still counted on its node: its out-of-range quantities are clamped (to
//!   [`CLAMPED`], beyond any node's capacity, as the API server clamps to the largest int64),
//!   and if it still cannot be read, its scheduling constraints are dropped so that at least
//!   its resources, ports and node are counted;
//! - a pending pod of this scheduler gets a `FailedScheduling` event and the `PodScheduled`
//!   condition naming the field, once per distinct problem.

use std::collections::BTreeMap;

use berth_engine::model;
use berth_kube::quantity::{self, QuantityErrorReason};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// What an out-of-range quantity of a bound pod counts as: 2^55, more than any node has of
/// anything (32 PiB of memory, 36 billion cores), yet small enough that the sums of a node's
/// pods cannot overflow `i64` (the API server clamps to 2^63 - 1, where a second such pod
/// would overflow the node's total).
pub const CLAMPED: i64 = 1 << 55;

/// A copy of a bound pod with every quantity that overflows `i64` clamped, or None if it
/// has none.
pub fn clamp_quantities(pod: &Pod) -> Option<Pod> {
    let mut pod = pod.clone();
    let spec = pod.spec.as_mut()?;
    let mut changed = false;
    let mut clamp = |list: &mut Option<BTreeMap<String, Quantity>>| {
        for (name, q) in list.iter_mut().flatten() {
            let cpu = name == "cpu";
            let parsed = if cpu {
                quantity::cpu_millis(q)
            } else {
                quantity::value(q)
            };
            if let Err(e) = parsed
                && matches!(e.reason, QuantityErrorReason::Overflow { .. })
            {
                let sign = if q.0.starts_with('-') { "-" } else { "" };
                let unit = if cpu { "m" } else { "" };
                *q = Quantity(format!("{sign}{CLAMPED}{unit}"));
                changed = true;
            }
        }
    };
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        if let Some(r) = c.resources.as_mut() {
            clamp(&mut r.requests);
            clamp(&mut r.limits);
        }
    }
    clamp(&mut spec.overhead);
    if let Some(r) = spec.resources.as_mut() {
        clamp(&mut r.requests);
        clamp(&mut r.limits);
    }
    changed.then_some(pod)
}

/// A copy of a bound pod without the constraints that only matter when placing it
/// (affinity, node selector, tolerations, spread constraints): what is left is what it holds
/// on its node.
pub fn without_constraints(pod: &Pod) -> Pod {
    let mut pod = pod.clone();
    if let Some(spec) = pod.spec.as_mut() {
        spec.affinity = None;
        spec.node_selector = None;
        spec.tolerations = None;
        spec.topology_spread_constraints = None;
    }
    pod
}

/// Enough of a pod to address an event to it.
pub fn reference_pod(object: &Pod) -> model::Pod {
    let meta = &object.metadata;
    model::Pod {
        meta: model::Meta {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".into()),
            uid: meta.uid.clone().unwrap_or_default(),
            ..model::Meta::default()
        },
        ..model::Pod::default()
    }
}

/// The scheduler a raw pod names (upstream's default when none).
pub fn scheduler_name(object: &Pod) -> &str {
    object
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or(berth_kube::convert::DEFAULT_SCHEDULER_NAME)
}

/// A pending pod that cannot be read, waiting to be (or already) reported.
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// For the event's reference.
    pub pod: model::Pod,
    /// The problem, naming the field.
    pub message: String,
    /// Whether the event has been sent.
    pub reported: bool,
}

/// The message of a `FailedScheduling` event for a pod Berth cannot read.
pub fn message(error: &berth_kube::ConvertError) -> String {
    format!(
        "berth cannot read this pod: {}: {} (the pod stays pending until it is fixed)",
        error.field, error.message
    )
}
