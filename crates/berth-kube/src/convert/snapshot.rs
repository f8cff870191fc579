//! A whole cluster file as a ready-to-schedule engine cluster plus the pods to schedule.

use berth_engine::DisruptionBudgets;
use berth_engine::{Cluster, ClusterError};
use berth_model::model;

use super::{
    ConvertError, Object, PriorityResolver, csi_node, is_terminal, namespace, node, object_ref,
    persistent_volume, persistent_volume_claim, pod, pod_disruption_budget, replica_set,
    replication_controller, service, stateful_set, storage_class,
};
use crate::ClusterObjects;
use crate::unmodelled::Tally;

/// A converted cluster file.
#[derive(Debug)]
pub struct Snapshot {
    /// Nodes, namespaces, pod-selecting objects, storage objects and the running pods.
    pub cluster: Cluster,
    /// Pods without a node that have not finished, in file order.
    pub pending: Vec<model::Pod>,
    /// The PodDisruptionBudgets, for preemption.
    pub budgets: DisruptionBudgets,
    /// The loader's warnings, then those of the conversion.
    pub warnings: Vec<String>,
}

/// Converts every object and builds the cluster: nodes first, then namespaces, selector
/// objects, storage objects, and the running pods (bound, not finished). A running pod
/// bound to a node the file lacks is skipped with a warning; finished pods are ignored.
pub fn snapshot(objects: &ClusterObjects) -> Result<Snapshot, ConvertError> {
    let mut cluster = Cluster::new();
    let mut warnings = objects.warnings.clone();
    for object in &objects.nodes {
        cluster
            .add_node(node(object)?)
            .map_err(|error| cluster_error(object, error))?;
    }
    for object in &objects.namespaces {
        cluster.upsert_namespace(&namespace(object)?);
    }
    for object in &objects.services {
        cluster.upsert_selector_object(&service(object)?);
    }
    for object in &objects.replication_controllers {
        cluster.upsert_selector_object(&replication_controller(object)?);
    }
    for object in &objects.replica_sets {
        cluster.upsert_selector_object(&replica_set(object)?);
    }
    for object in &objects.stateful_sets {
        cluster.upsert_selector_object(&stateful_set(object)?);
    }
    // The loader rejects two objects of a kind with the same name, so nothing is replaced.
    for object in &objects.persistent_volumes {
        cluster.upsert_persistent_volume(persistent_volume(object)?);
    }
    for object in &objects.persistent_volume_claims {
        cluster.upsert_persistent_volume_claim(persistent_volume_claim(object)?);
    }
    for object in &objects.storage_classes {
        cluster.upsert_storage_class(storage_class(object)?);
    }
    for object in &objects.csi_nodes {
        cluster.upsert_csi_node(csi_node(object)?);
    }
    let mut budgets = DisruptionBudgets::new();
    for object in &objects.pod_disruption_budgets {
        budgets.upsert(&mut cluster, &pod_disruption_budget(object)?);
    }
    let priorities = PriorityResolver::new(&objects.priority_classes);
    let mut pending = Vec::new();
    let mut unmodelled = Tally::default();
    for object in objects.pods.iter().filter(|p| !is_terminal(p)) {
        unmodelled.add(&crate::unmodelled::in_pod(object));
        let converted = pod(object, &priorities, &mut warnings)?;
        if converted.node_name.is_none() {
            pending.push(converted);
            continue;
        }
        match cluster.add_pod(converted) {
            Ok(_) => {}
            Err(ClusterError::UnknownNode { node, .. }) => warnings.push(format!(
                "{}: spec.nodeName: node {node:?} is not in the cluster file; pod ignored",
                object_ref(object)
            )),
            Err(error) => return Err(cluster_error(object, error)),
        }
    }
    warnings.extend(unmodelled.warnings());
    Ok(Snapshot {
        cluster,
        pending,
        budgets,
        warnings,
    })
}

/// A cluster update that failed, reported against the object that caused it.
fn cluster_error<K: Object>(object: &K, error: ClusterError) -> ConvertError {
    let (field, message) = match error {
        ClusterError::DuplicateNode(_) | ClusterError::DuplicatePod(_) => (
            "metadata.name",
            format!("another {} has the same name", K::KIND),
        ),
        ClusterError::UnknownNode { node, .. } => (
            "spec.nodeName",
            format!("node {node:?} is not in the cluster"),
        ),
        ClusterError::BadCidr { cidr, .. } => (
            "spec.podCIDRs",
            format!("invalid CIDR {cidr:?} (expected e.g. 10.244.1.0/24 or fd00::/64)"),
        ),
    };
    ConvertError {
        object: object_ref(object),
        field: field.to_owned(),
        message,
    }
}
