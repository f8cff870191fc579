//! Builders for the unit tests: Kubernetes objects as the API server would return them.

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

/// A Ready node with `cpu` cores and room for 110 pods.
pub fn node(name: &str, cpu: u32) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": cpu.to_string(), "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
    .expect("valid node")
}

/// A pending pod for scheduler `scheduler` requesting `milli_cpu`.
pub fn pod(name: &str, scheduler: &str, milli_cpu: u32) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z"
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [{
                "name": "c", "image": "pause",
                "resources": {"requests": {"cpu": format!("{milli_cpu}m")}}
            }]
        },
        "status": {"phase": "Pending"}
    }))
    .expect("valid pod")
}

/// The same pod bound to `node`.
pub fn bound(mut pod: Pod, node: &str) -> Pod {
    pod.spec.as_mut().expect("pods have specs").node_name = Some(node.into());
    pod
}

/// The same pod in phase `phase`.
pub fn phase(mut pod: Pod, phase: &str) -> Pod {
    pod.status.get_or_insert_default().phase = Some(phase.into());
    pod
}
