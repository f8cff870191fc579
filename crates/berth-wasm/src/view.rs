//! JSON views of the pod and of nodes, for guests that prefer one object to many accessors.
//! Shapes follow Kubernetes' field names; quantities are integers (CPU in millicores, the
//! rest in base units), as the engine holds them. docs/plugin-abi.md lists every field.

use berth_engine::PodInfo;
use berth_engine::model::{Container, Meta, StringMap, Taint};
use berth_engine::{Cluster, NodeInfo};
use serde_json::{Map, Value, json};

/// Labels, annotations or a node selector as a JSON object.
fn string_map(m: &StringMap) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn meta(m: &Meta) -> Value {
    json!({
        "name": m.name,
        "namespace": m.namespace,
        "uid": m.uid,
        "labels": string_map(&m.labels),
        "annotations": string_map(&m.annotations),
    })
}

fn quantities(list: &[(String, i64)]) -> Value {
    Value::Object(
        list.iter()
            .map(|(name, v)| (name.clone(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

fn container(c: &Container) -> Value {
    let mut v = json!({
        "name": c.name,
        "image": c.image,
        "resources": {"requests": quantities(&c.requests)},
    });
    if c.restartable {
        v["restartPolicy"] = json!("Always");
    }
    v
}

/// The pod being scheduled: `{metadata, spec}` with the fields a scheduling plugin reads.
pub(crate) fn pod_json(pod: &PodInfo) -> Vec<u8> {
    let p = &pod.pod;
    let tolerations: Vec<Value> = p
        .tolerations
        .iter()
        .map(|t| {
            json!({
                "key": t.key,
                "operator": format!("{:?}", t.operator),
                "value": t.value,
                "effect": t.effect.map(|e| e.as_str()),
            })
        })
        .collect();
    let request = &pod.request;
    let view = json!({
        "metadata": meta(&p.meta),
        "spec": {
            "nodeName": p.node_name,
            "schedulerName": p.scheduler_name,
            "priority": p.priority,
            "priorityClassName": p.priority_class_name,
            "containers": p.containers.iter().map(container).collect::<Vec<_>>(),
            "initContainers": p.init_containers.iter().map(container).collect::<Vec<_>>(),
            "overhead": quantities(&p.overhead),
            "resources": {"requests": quantities(&p.resources)},
            "nodeSelector": string_map(&p.node_selector),
            "tolerations": tolerations,
            "hostNetwork": p.host_network,
        },
        "request": {
            "cpu": request.milli_cpu,
            "memory": request.memory,
            "ephemeral-storage": request.ephemeral_storage,
            "scalars": request.scalars.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
        },
    });
    view.to_string().into_bytes()
}

fn taints(list: &[Taint]) -> Value {
    Value::Array(
        list.iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect.as_str()}))
            .collect(),
    )
}

/// A node's taints as a JSON array.
pub(crate) fn taints_json(list: &[Taint]) -> Vec<u8> {
    taints(list).to_string().into_bytes()
}

fn resources(r: &berth_engine::resources::Resources, pods: i64) -> Value {
    let mut map = Map::new();
    map.insert("cpu".into(), json!(r.milli_cpu));
    map.insert("memory".into(), json!(r.memory));
    map.insert("ephemeral-storage".into(), json!(r.ephemeral_storage));
    map.insert("pods".into(), json!(pods));
    for (name, v) in &r.scalars {
        map.insert(name.to_string(), json!(v));
    }
    Value::Object(map)
}

/// The pods on a node: namespace, name and labels of each.
pub(crate) fn node_pods_json(cluster: &Cluster, info: &NodeInfo) -> Vec<u8> {
    let pods: Vec<Value> = info
        .pods
        .iter()
        .map(|id| {
            let p = &cluster.pod(*id).pod;
            json!({"namespace": p.meta.namespace, "name": p.meta.name, "labels": string_map(&p.meta.labels)})
        })
        .collect();
    Value::Array(pods).to_string().into_bytes()
}

/// The whole node: metadata, spec, status and the engine's aggregates.
pub(crate) fn node_json(info: &NodeInfo) -> Vec<u8> {
    let n = &info.node;
    let c = info.conditions();
    let images: Vec<Value> = n
        .images
        .iter()
        .map(|i| json!({"names": i.names, "sizeBytes": i.size_bytes}))
        .collect();
    let view = json!({
        "metadata": meta(&n.meta),
        "spec": {
            "unschedulable": info.unschedulable,
            "taints": taints(info.taints()),
            "podCIDRs": n.pod_cidrs,
        },
        "status": {
            "allocatable": resources(&info.allocatable, info.allowed_pods),
            "conditions": {
                "ready": c.ready,
                "memoryPressure": c.memory_pressure,
                "diskPressure": c.disk_pressure,
                "pidPressure": c.pid_pressure,
                "networkUnavailable": c.network_unavailable,
            },
            "images": images,
        },
        "requested": resources(&info.requested, info.pods.len() as i64),
        "podCount": info.pods.len(),
    });
    view.to_string().into_bytes()
}
