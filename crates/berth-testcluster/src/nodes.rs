//! Plain Node objects for tests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;

/// Label kubelets set to the node's name; rules such as inter-pod affinity use it as a
/// topology key, so every created node gets it.
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Annotation kwok is started to manage nodes by.
pub(crate) const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// A Node template named `prefix` (nodes created from it are `prefix-0`, `prefix-1`, ...)
/// with the given cpu, memory and pod capacity, allocatable equal to capacity, and a Ready
/// condition so it looks healthy even without kwok.
pub fn node_template(prefix: &str, cpu: &str, memory: &str, pods: u32) -> Node {
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", cpu.to_owned()),
        ("memory", memory.to_owned()),
        ("pods", pods.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), Quantity(v)))
    .collect();
    Node {
        metadata: ObjectMeta {
            name: Some(prefix.to_owned()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/os".to_owned(), "linux".to_owned()),
                ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_owned(),
                status: "True".to_owned(),
                reason: Some("KubeletReady".to_owned()),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

/// Gives `node` its hostname label and, when kwok runs, kwok's annotation and no
/// conditions: kwok initializes only nodes that are not Ready yet, as a kubelet would.
pub(crate) fn prepare_node(node: &mut Node, kwok: bool) {
    let name = node.metadata.name.clone().unwrap_or_default();
    node.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .entry(HOSTNAME_LABEL.to_owned())
        .or_insert(name);
    if kwok {
        node.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(KWOK_ANNOTATION.0.to_owned(), KWOK_ANNOTATION.1.to_owned());
        if let Some(status) = &mut node.status {
            status.conditions = None;
        }
    }
}
