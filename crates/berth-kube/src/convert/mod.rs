//! Typed Kubernetes objects to the engine's model, one object at a time, plus [`snapshot`]
//! for a whole cluster file.
//!
//! Conversion applies the defaults the API server would have applied (a namespace of
//! "default", requests equal to limits, the `rbd` pool, ...) and rejects what API
//! validation would have rejected where the scheduler depends on it (selector operators,
//! taint effects), naming the object and the field path.

mod annotations;
mod field;
mod node;
mod pod;
mod selectors;
mod snapshot;
mod status;
mod storage;
mod workloads;

use std::collections::BTreeMap;

use berth_model::model;
use berth_model::resources::{CPU, ResourceList};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, Metadata, NamespaceResourceScope, Resource};

use crate::error::ObjectRef;
use crate::quantity;
use field::Problem;

pub use annotations::{
    KUBERNETES_NODE_SELECTOR_ANNOTATION, OPENSHIFT_NODE_SELECTOR_ANNOTATION,
    PREFER_AVOID_PODS_ANNOTATION, TOLERATIONS_WHITELIST_ANNOTATION,
};
pub(crate) use field::{Field, is_plain_key};
pub use node::node;
pub(crate) use pod::SYSTEM_PRIORITY_CLASSES;
pub use pod::{PriorityResolver, is_terminal, pod};
pub(crate) use selectors::optional_selector;
pub use snapshot::{Snapshot, snapshot};
pub use status::{node_readiness, pod_start};
pub use storage::{csi_node, persistent_volume, persistent_volume_claim, storage_class};
pub use workloads::{
    namespace, pod_disruption_budget, replica_set, replication_controller, service, stateful_set,
};

/// An object the scheduler cannot use as it stands: the object, the field path, the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {field}: {message}")]
pub struct ConvertError {
    /// The object (kind, namespace, name).
    pub object: ObjectRef,
    /// The field path within the object, e.g. `spec.tolerations[0].effect`.
    pub field: String,
    /// What is wrong there.
    pub message: String,
}

/// The scheduler name pods get when they name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The annotation that predates `storageClassName` and still takes precedence over it.
const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

/// Whether objects of a kind live in a namespace.
trait Scope {
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// A top-level Kubernetes object of a namespaced or cluster-scoped kind.
trait Object: Resource<Scope: Scope> + Metadata<Ty = ObjectMeta> {}

impl<K: Resource<Scope: Scope> + Metadata<Ty = ObjectMeta>> Object for K {}

/// An unset or empty namespace means "default", as the API server defaults it.
fn namespace_of(meta: &ObjectMeta) -> &str {
    meta.namespace
        .as_deref()
        .filter(|namespace| !namespace.is_empty())
        .unwrap_or("default")
}

/// The object's kind, namespace (for namespaced kinds) and name, for messages.
fn object_ref<K: Object>(object: &K) -> ObjectRef {
    let meta = object.metadata();
    ObjectRef {
        kind: K::KIND.to_owned(),
        namespace: K::Scope::NAMESPACED.then(|| namespace_of(meta).to_owned()),
        name: meta.name.clone().filter(|name| !name.is_empty()),
    }
}

/// Converts the metadata, then the rest with `body`, naming the object in any error.
fn convert<K: Object, T>(
    object: &K,
    body: impl FnOnce(model::Meta) -> Result<T, Problem>,
) -> Result<T, ConvertError> {
    meta::<K>(object.metadata())
        .and_then(body)
        .map_err(|problem| ConvertError {
            object: object_ref(object),
            field: problem.field,
            message: problem.message,
        })
}

fn meta<K: Object>(meta: &ObjectMeta) -> Result<model::Meta, Problem> {
    let name = match meta.name.as_deref() {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => {
            return Err(Field::root("metadata")
                .name("name")
                .problem("missing or empty"));
        }
    };
    let namespace = if K::Scope::NAMESPACED {
        namespace_of(meta).to_owned()
    } else {
        String::new()
    };
    Ok(model::Meta {
        name,
        namespace,
        uid: meta.uid.clone().unwrap_or_default(),
        labels: meta.labels.iter().flatten().collect(),
        annotations: meta.annotations.iter().flatten().collect(),
        creation_timestamp: meta
            .creation_timestamp
            .as_ref()
            .map_or(0, |time| time.0.as_second()),
        deleting: meta.deletion_timestamp.is_some(),
        owners: meta
            .owner_references
            .iter()
            .flatten()
            .map(|owner| model::OwnerRef {
                kind: owner.kind.clone(),
                name: owner.name.clone(),
                uid: owner.uid.clone(),
                controller: owner.controller.unwrap_or(false),
            })
            .collect(),
    })
}

/// A resource list in engine units: `cpu` in millis, everything else as an integer.
fn resource_list(
    list: Option<&BTreeMap<String, Quantity>>,
    at: Field<'_>,
) -> Result<ResourceList, Problem> {
    list.into_iter()
        .flatten()
        .map(|(name, q)| Ok((name.clone(), amount(name, q, at.key(name))?)))
        .collect()
}

fn amount(resource: &str, q: &Quantity, at: Field<'_>) -> Result<i64, Problem> {
    let converted = if resource == CPU {
        quantity::cpu_millis(q)
    } else {
        quantity::value(q)
    };
    converted.map_err(|error| at.problem(error.to_string()))
}

fn taint_effect(effect: &str, at: Field<'_>) -> Result<model::TaintEffect, Problem> {
    Ok(match effect {
        "NoSchedule" => model::TaintEffect::NoSchedule,
        "PreferNoSchedule" => model::TaintEffect::PreferNoSchedule,
        "NoExecute" => model::TaintEffect::NoExecute,
        other => {
            return Err(at.problem(format!(
                "unknown taint effect {other:?} (expected NoSchedule, PreferNoSchedule, NoExecute)"
            )));
        }
    })
}
