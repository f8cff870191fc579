//! The JSON views of docs/plugin-abi.md ("JSON views"), built from the fakes with the shapes
//! and defaults the wasm host gives.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Container, FakeNode, FakePod};
use crate::{Conditions, Taint};

/// The first-class resources, always present in `allocatable` and `requested`.
const BASE_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

fn quantities(list: &BTreeMap<String, i64>) -> Value {
    Value::Object(list.iter().map(|(n, v)| (n.clone(), json!(v))).collect())
}

fn container(c: &Container) -> Value {
    json!({"name": c.name, "image": c.image, "resources": {"requests": quantities(&c.requests)}})
}

fn meta(name: &str, namespace: &str, uid: &str, labels: &Value, annotations: &Value) -> Value {
    json!({"name": name, "namespace": namespace, "uid": uid, "labels": labels, "annotations": annotations})
}

/// The pod being scheduled.
pub(super) fn pod_json(pod: &FakePod) -> Vec<u8> {
    let tolerations: Vec<Value> = pod
        .tolerations
        .iter()
        .map(
            |t| json!({"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}),
        )
        .collect();
    let mut scalars = Map::new();
    for name in pod.resource_names() {
        if !BASE_RESOURCES.contains(&name) {
            scalars.insert(name.to_owned(), json!(pod.request_of(name)));
        }
    }
    json!({
        "metadata": meta(&pod.name, &pod.namespace, &pod.uid, &json!(pod.labels), &json!(pod.annotations)),
        "spec": {
            "nodeName": pod.node_name,
            "schedulerName": pod.scheduler_name,
            "priority": pod.priority,
            "priorityClassName": pod.priority_class_name,
            "containers": pod.containers.iter().map(container).collect::<Vec<_>>(),
            "initContainers": pod.init_containers.iter().map(container).collect::<Vec<_>>(),
            "overhead": quantities(&pod.overhead),
            "nodeSelector": pod.node_selector,
            "tolerations": tolerations,
            "hostNetwork": pod.host_network,
        },
        "request": {
            "cpu": pod.request_of("cpu"),
            "memory": pod.request_of("memory"),
            "ephemeral-storage": pod.request_of("ephemeral-storage"),
            "scalars": scalars,
        },
    })
    .to_string()
    .into_bytes()
}

fn taints(list: &[Taint]) -> Value {
    Value::Array(
        list.iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
            .collect(),
    )
}

/// A node's taints.
pub(super) fn taints_json(list: &[Taint]) -> Vec<u8> {
    taints(list).to_string().into_bytes()
}

/// The pods on a node: namespace, name and labels of each.
pub(super) fn node_pods_json(node: &FakeNode) -> Vec<u8> {
    let pods: Vec<Value> = node
        .pods
        .iter()
        .map(|p| json!({"namespace": p.namespace, "name": p.name, "labels": p.labels}))
        .collect();
    Value::Array(pods).to_string().into_bytes()
}

/// `cpu`, `memory`, `ephemeral-storage` (0 when unset), `pods`, then the other resources.
fn resources(names: impl Iterator<Item = String>, of: impl Fn(&str) -> i64) -> Value {
    let mut map = Map::new();
    for name in BASE_RESOURCES
        .iter()
        .map(|n| n.to_string())
        .chain(["pods".into()])
        .chain(names)
    {
        let value = of(&name);
        map.insert(name, json!(value));
    }
    Value::Object(map)
}

/// The whole node.
pub(super) fn node_json(node: &FakeNode) -> Vec<u8> {
    let c = node.conditions;
    let images: Vec<Value> = node
        .images
        .iter()
        .map(|(name, size)| json!({"names": [name], "sizeBytes": size}))
        .collect();
    let requested_names = node
        .pods
        .iter()
        .flat_map(|p| p.resource_names().map(str::to_owned).collect::<Vec<_>>());
    json!({
        "metadata": meta(&node.name, "", "", &json!(node.labels), &json!(node.annotations)),
        "spec": {
            "unschedulable": c.unschedulable(),
            "taints": taints(&node.taints),
            "podCIDRs": node.pod_cidrs,
        },
        "status": {
            "allocatable": resources(node.allocatable.keys().cloned(), |n| node.allocatable.get(n).copied().unwrap_or(0)),
            "conditions": {
                "ready": c.contains(Conditions::READY),
                "memoryPressure": c.memory_pressure(),
                "diskPressure": c.disk_pressure(),
                "pidPressure": c.pid_pressure(),
                "networkUnavailable": c.network_unavailable(),
            },
            "images": images,
        },
        "requested": resources(requested_names, |n| node.requested(n)),
        "podCount": node.pods.len(),
    })
    .to_string()
    .into_bytes()
}
