//! Typed Kubernetes objects to the engine's model, one object at a time, plus [`snapshot`]
//! for a whole cluster file.
//!
//! Conversion applies the defaults the API server would have applied (a namespace of
//! "default", requests equal to limits, the `rbd` pool, ...) and rejects what API
//! validation would have rejected where the scheduler depends on it (selector operators,
//! taint effects), naming the object and the field path.

mod annotations;
mod field;
mod selectors;
mod snapshot;

use std::collections::{BTreeMap, HashMap};

use berth_engine::labels::LabelSelector;
use berth_engine::model::{self, PvSource, SelectorKind, VolumeSource};
use berth_engine::resources::{CPU, ResourceList};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    self as core, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, Metadata, NamespaceResourceScope, Resource};

use crate::error::ObjectRef;
use crate::quantity;
use field::{Field, Problem};
use selectors::{label_selector, node_selector, node_selector_term};

pub use annotations::{
    KUBERNETES_NODE_SELECTOR_ANNOTATION, OPENSHIFT_NODE_SELECTOR_ANNOTATION,
    PREFER_AVOID_PODS_ANNOTATION, TOLERATIONS_WHITELIST_ANNOTATION,
};
pub(crate) use field::is_plain_key;
pub use snapshot::{Snapshot, snapshot};

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
        labels: meta.labels.clone().unwrap_or_default(),
        annotations: meta.annotations.clone().unwrap_or_default(),
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

// ---- Node ----

/// Converts a Node; allocatable falls back to capacity when the status has none.
pub fn node(node: &Node) -> Result<model::Node, ConvertError> {
    convert(node, |meta| {
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        let spec_at = Field::root("spec");
        let taints_at = spec_at.name("taints");
        let taints = spec
            .and_then(|spec| spec.taints.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, taint)| {
                Ok(model::Taint {
                    key: taint.key.clone(),
                    value: taint.value.clone().unwrap_or_default(),
                    effect: taint_effect(&taint.effect, taints_at.index(index).name("effect"))?,
                })
            })
            .collect::<Result<_, Problem>>()?;
        let pod_cidrs = spec.map_or_else(Vec::new, |spec| match spec.pod_cidrs.as_deref() {
            Some(cidrs) if !cidrs.is_empty() => cidrs.to_vec(),
            _ => spec
                .pod_cidr
                .iter()
                .filter(|c| !c.is_empty())
                .cloned()
                .collect(),
        });
        let status_at = Field::root("status");
        // The kubelet reports allocatable; objects written by hand often carry capacity only.
        let allocatable = match status {
            Some(status) if status.allocatable.as_ref().is_some_and(|a| !a.is_empty()) => {
                resource_list(status.allocatable.as_ref(), status_at.name("allocatable"))?
            }
            Some(status) => resource_list(status.capacity.as_ref(), status_at.name("capacity"))?,
            None => Vec::new(),
        };
        let mut conditions = model::NodeConditions::default();
        for condition in status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
        {
            let is_true = condition.status == "True";
            match condition.type_.as_str() {
                "Ready" => conditions.ready = Some(is_true),
                "MemoryPressure" => conditions.memory_pressure = is_true,
                "DiskPressure" => conditions.disk_pressure = is_true,
                "PIDPressure" => conditions.pid_pressure = is_true,
                "NetworkUnavailable" => conditions.network_unavailable = is_true,
                "OutOfDisk" => conditions.out_of_disk = is_true,
                _ => {}
            }
        }
        let images = status
            .and_then(|s| s.images.as_ref())
            .into_iter()
            .flatten()
            .map(|image| model::NodeImage {
                names: image.names.clone().unwrap_or_default(),
                size_bytes: image.size_bytes.unwrap_or(0),
            })
            .collect();
        let prefer_avoid_pods = annotations::prefer_avoid_pods(&meta.annotations);
        Ok(model::Node {
            meta,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            taints,
            pod_cidrs,
            allocatable,
            conditions,
            images,
            prefer_avoid_pods,
        })
    })
}

// ---- Pod ----

/// Whether the pod has finished (phase Succeeded or Failed): the scheduler ignores it.
pub fn is_terminal(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .is_some_and(|phase| phase == "Succeeded" || phase == "Failed")
}

/// Pod priorities as the Priority admission plugin assigns them: `spec.priority` when set,
/// else the named class's value, else the global default class's, else 0.
#[derive(Debug, Clone)]
pub struct PriorityResolver {
    values: HashMap<String, i32>,
    global_default: Option<(String, i32)>,
}

/// Classes the API server creates in every cluster, so pods may name them even when a
/// cluster file lists no PriorityClass.
const SYSTEM_PRIORITY_CLASSES: [(&str, i32); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

impl Default for PriorityResolver {
    fn default() -> Self {
        Self::new(&[])
    }
}

impl PriorityResolver {
    /// A resolver over `classes` plus the built-in `system-*-critical` classes.
    pub fn new(classes: &[PriorityClass]) -> Self {
        let mut values: HashMap<String, i32> = SYSTEM_PRIORITY_CLASSES
            .iter()
            .map(|&(name, value)| (name.to_owned(), value))
            .collect();
        let mut global_default: Option<(String, i32)> = None;
        for class in classes {
            let Some(name) = class.metadata.name.as_deref() else {
                continue;
            };
            values.insert(name.to_owned(), class.value);
            // Upstream takes the lowest value when several classes claim to be the default.
            if class.global_default == Some(true)
                && global_default
                    .as_ref()
                    .is_none_or(|(_, value)| class.value < *value)
            {
                global_default = Some((name.to_owned(), class.value));
            }
        }
        PriorityResolver {
            values,
            global_default,
        }
    }

    /// The pod's priority and class name; `Err` carries the class name when it is unknown.
    fn resolve<'a>(&'a self, spec: &'a core::PodSpec) -> Result<(i32, &'a str), &'a str> {
        match spec
            .priority_class_name
            .as_deref()
            .filter(|n| !n.is_empty())
        {
            Some(class) => match (spec.priority, self.values.get(class)) {
                (Some(priority), _) | (None, Some(&priority)) => Ok((priority, class)),
                (None, None) => Err(class),
            },
            // Admission also records the default class's name in the pod.
            None => Ok(match (spec.priority, &self.global_default) {
                (Some(priority), _) => (priority, ""),
                (None, Some((class, priority))) => (*priority, class),
                (None, None) => (0, ""),
            }),
        }
    }
}

/// Converts a Pod, resolving its priority with `priorities`. A priority class that does not
/// exist (admission would have rejected the pod) gives priority 0 and a warning in `warnings`.
pub fn pod(
    pod: &Pod,
    priorities: &PriorityResolver,
    warnings: &mut Vec<String>,
) -> Result<model::Pod, ConvertError> {
    convert(pod, |meta| {
        let at = Field::root("spec");
        let Some(spec) = pod.spec.as_ref() else {
            return Err(at.problem("missing (a Pod needs spec.containers)"));
        };
        let (priority, priority_class_name) = match priorities.resolve(spec) {
            Ok((priority, class)) => (priority, class.to_owned()),
            Err(class) => {
                warnings.push(format!(
                    "{}: spec.priorityClassName: PriorityClass {class:?} not found, using priority 0",
                    object_ref(pod)
                ));
                (0, class.to_owned())
            }
        };
        let app_containers = containers(&spec.containers, at.name("containers"))?;
        let init_containers = containers(
            spec.init_containers.as_deref().unwrap_or_default(),
            at.name("initContainers"),
        )?;
        let affinity = spec
            .affinity
            .as_ref()
            .map(|affinity| convert_affinity(affinity, at.name("affinity")))
            .transpose()?
            .unwrap_or_default();
        let tolerations_at = at.name("tolerations");
        let tolerations = spec
            .tolerations
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, t)| toleration(t, tolerations_at.index(index)))
            .collect::<Result<_, _>>()?;
        let spread_at = at.name("topologySpreadConstraints");
        let topology_spread_constraints = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, c)| spread_constraint(c, spread_at.index(index)))
            .collect::<Result<_, _>>()?;
        let volumes = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| model::Volume {
                name: v.name.clone(),
                source: volume_source(v, &meta.name),
            })
            .collect();
        let preempt_never = match spec.preemption_policy.as_deref() {
            None | Some("PreemptLowerPriority") => false,
            Some("Never") => true,
            Some(other) => {
                return Err(at.name("preemptionPolicy").problem(format!(
                    "unknown policy {other:?} (expected PreemptLowerPriority, Never)"
                )));
            }
        };
        let status = pod.status.as_ref();
        Ok(model::Pod {
            preempt_never,
            nominated_node_name: status
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty()),
            start_time: status
                .and_then(|s| s.start_time.as_ref())
                .map(|t| t.0.as_second()),
            node_name: spec.node_name.clone().filter(|n| !n.is_empty()),
            scheduler_name: spec
                .scheduler_name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_owned()),
            priority,
            priority_class_name,
            containers: app_containers,
            init_containers,
            overhead: resource_list(spec.overhead.as_ref(), at.name("overhead"))?,
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            affinity,
            tolerations,
            volumes,
            host_network: spec.host_network.unwrap_or(false),
            topology_spread_constraints,
            meta,
        })
    })
}

fn containers(list: &[core::Container], at: Field<'_>) -> Result<Vec<model::Container>, Problem> {
    list.iter()
        .enumerate()
        .map(|(index, c)| container(c, at.index(index)))
        .collect()
}

fn container(container: &core::Container, at: Field<'_>) -> Result<model::Container, Problem> {
    let resources = container.resources.as_ref();
    let resources_at = at.name("resources");
    let requests = resources.and_then(|r| r.requests.as_ref());
    let mut converted = resource_list(requests, resources_at.name("requests"))?;
    // The API server's defaulting: a limit without a request is the request too.
    let limits_at = resources_at.name("limits");
    for (name, limit) in resources
        .and_then(|r| r.limits.as_ref())
        .into_iter()
        .flatten()
    {
        if !requests.is_some_and(|requests| requests.contains_key(name)) {
            converted.push((name.clone(), amount(name, limit, limits_at.key(name))?));
        }
    }
    Ok(model::Container {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        requests: converted,
        ports: container
            .ports
            .iter()
            .flatten()
            .map(|port| model::ContainerPort {
                host_port: port.host_port.unwrap_or(0),
                host_ip: port.host_ip.clone().unwrap_or_default(),
                protocol: port.protocol.clone().unwrap_or_default(),
            })
            .collect(),
    })
}

fn convert_affinity(affinity: &core::Affinity, at: Field<'_>) -> Result<model::Affinity, Problem> {
    let mut converted = model::Affinity::default();
    if let Some(node) = &affinity.node_affinity {
        let at = at.name("nodeAffinity");
        converted.node_required = node
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|required| node_selector(required, at.name(REQUIRED)))
            .transpose()?;
        let preferred_at = at.name(PREFERRED);
        converted.node_preferred = node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, preferred)| {
                let at = preferred_at.index(index);
                Ok(model::PreferredNodeTerm {
                    weight: preferred.weight,
                    term: node_selector_term(&preferred.preference, at.name("preference"))?,
                })
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(pod) = &affinity.pod_affinity {
        let at = at.name("podAffinity");
        converted.pod_required = pod_affinity_terms(
            pod.required_during_scheduling_ignored_during_execution
                .as_deref(),
            at.name(REQUIRED),
        )?;
        converted.pod_preferred = weighted_pod_affinity_terms(
            pod.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            at.name(PREFERRED),
        )?;
    }
    if let Some(anti) = &affinity.pod_anti_affinity {
        let at = at.name("podAntiAffinity");
        converted.anti_required = pod_affinity_terms(
            anti.required_during_scheduling_ignored_during_execution
                .as_deref(),
            at.name(REQUIRED),
        )?;
        converted.anti_preferred = weighted_pod_affinity_terms(
            anti.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            at.name(PREFERRED),
        )?;
    }
    Ok(converted)
}

fn pod_affinity_terms(
    terms: Option<&[core::PodAffinityTerm]>,
    at: Field<'_>,
) -> Result<Vec<model::PodAffinityTerm>, Problem> {
    terms
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, term)| pod_affinity_term(term, at.index(index)))
        .collect()
}

fn weighted_pod_affinity_terms(
    terms: Option<&[core::WeightedPodAffinityTerm]>,
    at: Field<'_>,
) -> Result<Vec<model::WeightedPodAffinityTerm>, Problem> {
    terms
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, weighted)| {
            let at = at.index(index);
            Ok(model::WeightedPodAffinityTerm {
                weight: weighted.weight,
                term: pod_affinity_term(&weighted.pod_affinity_term, at.name("podAffinityTerm"))?,
            })
        })
        .collect()
}

fn pod_affinity_term(
    term: &core::PodAffinityTerm,
    at: Field<'_>,
) -> Result<model::PodAffinityTerm, Problem> {
    Ok(model::PodAffinityTerm {
        label_selector: optional_selector(term.label_selector.as_ref(), at.name("labelSelector"))?,
        namespaces: term.namespaces.clone().unwrap_or_default(),
        namespace_selector: optional_selector(
            term.namespace_selector.as_ref(),
            at.name("namespaceSelector"),
        )?,
        topology_key: term.topology_key.clone(),
    })
}

fn optional_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    at: Field<'_>,
) -> Result<Option<LabelSelector>, Problem> {
    selector.map(|s| label_selector(s, at)).transpose()
}

fn toleration(toleration: &core::Toleration, at: Field<'_>) -> Result<model::Toleration, Problem> {
    let operator = match toleration.operator.as_deref() {
        None | Some("" | "Equal") => model::TolerationOperator::Equal,
        Some("Exists") => model::TolerationOperator::Exists,
        Some(other) => {
            return Err(at.name("operator").problem(format!(
                "unknown operator {other:?} (expected Equal, Exists)"
            )));
        }
    };
    let effect = match toleration.effect.as_deref() {
        None | Some("") => None,
        Some(effect) => Some(taint_effect(effect, at.name("effect"))?),
    };
    Ok(model::Toleration {
        key: toleration.key.clone().unwrap_or_default(),
        operator,
        value: toleration.value.clone().unwrap_or_default(),
        effect,
    })
}

fn spread_constraint(
    constraint: &core::TopologySpreadConstraint,
    at: Field<'_>,
) -> Result<model::TopologySpreadConstraint, Problem> {
    let when_unsatisfiable = match constraint.when_unsatisfiable.as_str() {
        "DoNotSchedule" => model::WhenUnsatisfiable::DoNotSchedule,
        "ScheduleAnyway" => model::WhenUnsatisfiable::ScheduleAnyway,
        other => {
            return Err(at.name("whenUnsatisfiable").problem(format!(
                "unknown value {other:?} (expected DoNotSchedule, ScheduleAnyway)"
            )));
        }
    };
    Ok(model::TopologySpreadConstraint {
        max_skew: constraint.max_skew,
        topology_key: constraint.topology_key.clone(),
        when_unsatisfiable,
        label_selector: optional_selector(
            constraint.label_selector.as_ref(),
            at.name("labelSelector"),
        )?,
    })
}

/// The volume's source as the volume rules see it. A generic ephemeral volume is the PVC
/// `<pod>-<volume>` its controller creates, which is how upstream's rules treat it.
fn volume_source(volume: &core::Volume, pod_name: &str) -> VolumeSource {
    if let Some(claim) = &volume.persistent_volume_claim {
        VolumeSource::Pvc {
            claim_name: claim.claim_name.clone(),
        }
    } else if volume.ephemeral.is_some() {
        VolumeSource::Pvc {
            claim_name: format!("{pod_name}-{}", volume.name),
        }
    } else if let Some(gce) = &volume.gce_persistent_disk {
        VolumeSource::GcePersistentDisk {
            pd_name: gce.pd_name.clone(),
            read_only: gce.read_only.unwrap_or(false),
        }
    } else if let Some(ebs) = &volume.aws_elastic_block_store {
        VolumeSource::AwsElasticBlockStore {
            volume_id: ebs.volume_id.clone(),
        }
    } else if let Some(rbd) = &volume.rbd {
        VolumeSource::Rbd {
            monitors: rbd.monitors.clone(),
            pool: rbd
                .pool
                .clone()
                .filter(|pool| !pool.is_empty())
                .unwrap_or_else(|| "rbd".to_owned()),
            image: rbd.image.clone(),
            read_only: rbd.read_only.unwrap_or(false),
        }
    } else if let Some(iscsi) = &volume.iscsi {
        VolumeSource::Iscsi {
            target_portal: iscsi.target_portal.clone(),
            iqn: iscsi.iqn.clone(),
            lun: iscsi.lun,
            read_only: iscsi.read_only.unwrap_or(false),
        }
    } else if let Some(azure) = &volume.azure_disk {
        VolumeSource::AzureDisk {
            disk_name: azure.disk_name.clone(),
        }
    } else if let Some(cinder) = &volume.cinder {
        VolumeSource::Cinder {
            volume_id: cinder.volume_id.clone(),
        }
    } else if let Some(csi) = &volume.csi {
        VolumeSource::Csi {
            driver: csi.driver.clone(),
        }
    } else {
        VolumeSource::Other
    }
}

// ---- Namespaces and pod-selecting objects ----

/// Converts a Namespace.
pub fn namespace(namespace: &Namespace) -> Result<model::Namespace, ConvertError> {
    convert(namespace, |meta| {
        let node_selector = annotations::namespace_node_selector(&meta.annotations);
        let toleration_whitelist = annotations::toleration_whitelist(&meta.annotations);
        Ok(model::Namespace {
            meta,
            node_selector,
            toleration_whitelist,
        })
    })
}

/// Converts a Service; without a selector (or with an empty one, which the API server
/// stores as none) it selects no pod.
pub fn service(service: &Service) -> Result<model::PodSelector, ConvertError> {
    convert(service, |meta| {
        let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
        Ok(pod_selector(
            SelectorKind::Service,
            meta,
            selector.and_then(map_selector),
        ))
    })
}

/// Converts a ReplicationController; an absent or empty selector is the template's labels,
/// as the API server defaults it.
pub fn replication_controller(
    controller: &ReplicationController,
) -> Result<model::PodSelector, ConvertError> {
    convert(controller, |meta| {
        let selector = controller.spec.as_ref().and_then(|spec| {
            spec.selector
                .as_ref()
                .filter(|selector| !selector.is_empty())
                .or_else(|| spec.template.as_ref()?.metadata.as_ref()?.labels.as_ref())
        });
        Ok(pod_selector(
            SelectorKind::ReplicationController,
            meta,
            selector.and_then(map_selector),
        ))
    })
}

/// Converts a ReplicaSet.
pub fn replica_set(set: &ReplicaSet) -> Result<model::PodSelector, ConvertError> {
    convert(set, |meta| {
        let selector = set.spec.as_ref().map(|spec| &spec.selector);
        Ok(pod_selector(
            SelectorKind::ReplicaSet,
            meta,
            workload_selector(selector)?,
        ))
    })
}

/// Converts a StatefulSet.
pub fn stateful_set(set: &StatefulSet) -> Result<model::PodSelector, ConvertError> {
    convert(set, |meta| {
        let selector = set.spec.as_ref().map(|spec| &spec.selector);
        Ok(pod_selector(
            SelectorKind::StatefulSet,
            meta,
            workload_selector(selector)?,
        ))
    })
}

fn pod_selector(
    kind: SelectorKind,
    meta: model::Meta,
    selector: Option<LabelSelector>,
) -> model::PodSelector {
    model::PodSelector {
        kind,
        meta,
        selector,
    }
}

/// A `key: value` selector, or None (selecting nothing) for an empty map: upstream skips
/// RCs with an empty selector, and the API server stores a Service's empty selector as none.
fn map_selector(map: &BTreeMap<String, String>) -> Option<LabelSelector> {
    (!map.is_empty()).then(|| LabelSelector::from_map(map))
}

/// A ReplicaSet or StatefulSet selector. Upstream's spreading skips controllers whose
/// selector is empty ("should match nothing, not everything"), so that is None here.
fn workload_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> Result<Option<LabelSelector>, Problem> {
    let at = Field::root("spec");
    let selector = optional_selector(selector, at.name("selector"))?;
    Ok(selector.filter(|s| !s.requirements.is_empty()))
}

// ---- Storage ----

/// The storage class: the beta annotation first, as upstream's helpers read it.
fn storage_class_of(meta: &model::Meta, spec_class: Option<&String>) -> Option<String> {
    meta.annotations
        .get(BETA_STORAGE_CLASS_ANNOTATION)
        .or(spec_class)
        .cloned()
}

/// The `storage` entry of a resource map in bytes (0 when absent).
fn storage(list: Option<&BTreeMap<String, Quantity>>, at: Field<'_>) -> Result<i64, Problem> {
    list.and_then(|list| list.get("storage"))
        .map_or(Ok(0), |q| amount("storage", q, at.key("storage")))
}

/// Converts a PersistentVolume.
pub fn persistent_volume(
    volume: &PersistentVolume,
) -> Result<model::PersistentVolume, ConvertError> {
    convert(volume, |meta| {
        let spec = volume.spec.as_ref();
        let at = Field::root("spec");
        let node_affinity = spec
            .and_then(|spec| spec.node_affinity.as_ref()?.required.as_ref())
            .map(|required| node_selector(required, at.name("nodeAffinity").name("required")))
            .transpose()?;
        Ok(model::PersistentVolume {
            capacity: storage(spec.and_then(|s| s.capacity.as_ref()), at.name("capacity"))?,
            storage_class_name: storage_class_of(
                &meta,
                spec.and_then(|s| s.storage_class_name.as_ref()),
            )
            .unwrap_or_default(),
            access_modes: spec
                .and_then(|s| s.access_modes.clone())
                .unwrap_or_default(),
            node_affinity,
            claim_ref: spec.and_then(|s| s.claim_ref.as_ref()).map(|claim| {
                (
                    claim.namespace.clone().unwrap_or_default(),
                    claim.name.clone().unwrap_or_default(),
                )
            }),
            source: spec.map_or(PvSource::Other, pv_source),
            phase: volume
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default(),
            meta,
        })
    })
}

fn pv_source(spec: &core::PersistentVolumeSpec) -> PvSource {
    if let Some(gce) = &spec.gce_persistent_disk {
        PvSource::GcePersistentDisk {
            pd_name: gce.pd_name.clone(),
        }
    } else if let Some(ebs) = &spec.aws_elastic_block_store {
        PvSource::AwsElasticBlockStore {
            volume_id: ebs.volume_id.clone(),
        }
    } else if let Some(azure) = &spec.azure_disk {
        PvSource::AzureDisk {
            disk_name: azure.disk_name.clone(),
        }
    } else if let Some(cinder) = &spec.cinder {
        PvSource::Cinder {
            volume_id: cinder.volume_id.clone(),
        }
    } else if let Some(csi) = &spec.csi {
        PvSource::Csi {
            driver: csi.driver.clone(),
            volume_handle: csi.volume_handle.clone(),
        }
    } else {
        PvSource::Other
    }
}

/// Converts a PersistentVolumeClaim; `storage_class_name` stays None when unset (the
/// default class applies) and Some("") when explicitly empty (no class).
pub fn persistent_volume_claim(
    claim: &PersistentVolumeClaim,
) -> Result<model::PersistentVolumeClaim, ConvertError> {
    convert(claim, |meta| {
        let spec = claim.spec.as_ref();
        let at = Field::root("spec");
        let requests = spec
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref());
        Ok(model::PersistentVolumeClaim {
            volume_name: spec.and_then(|s| s.volume_name.clone()).unwrap_or_default(),
            storage_class_name: storage_class_of(
                &meta,
                spec.and_then(|s| s.storage_class_name.as_ref()),
            ),
            access_modes: spec
                .and_then(|s| s.access_modes.clone())
                .unwrap_or_default(),
            request: storage(requests, at.name("resources").name("requests"))?,
            selector: optional_selector(
                spec.and_then(|s| s.selector.as_ref()),
                at.name("selector"),
            )?,
            meta,
        })
    })
}

/// Converts a PodDisruptionBudget: its selector and the status fields preemption reads.
pub fn pod_disruption_budget(
    pdb: &PodDisruptionBudget,
) -> Result<model::PodDisruptionBudget, ConvertError> {
    convert(pdb, |meta| {
        let status = pdb.status.as_ref();
        Ok(model::PodDisruptionBudget {
            selector: optional_selector(
                pdb.spec.as_ref().and_then(|s| s.selector.as_ref()),
                Field::root("spec").name("selector"),
            )?,
            disruptions_allowed: status.map_or(0, |s| s.disruptions_allowed),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
            meta,
        })
    })
}

/// Converts a StorageClass; the binding mode defaults to Immediate.
pub fn storage_class(class: &StorageClass) -> Result<model::StorageClass, ConvertError> {
    convert(class, |meta| {
        let volume_binding_mode = match class.volume_binding_mode.as_deref() {
            None | Some("Immediate") => model::VolumeBindingMode::Immediate,
            Some("WaitForFirstConsumer") => model::VolumeBindingMode::WaitForFirstConsumer,
            Some(other) => {
                return Err(Field::root("volumeBindingMode").problem(format!(
                    "unknown mode {other:?} (expected Immediate, WaitForFirstConsumer)"
                )));
            }
        };
        let at = Field::root("allowedTopologies");
        let allowed_topologies = class
            .allowed_topologies
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, term)| selectors::topology_selector_term(term, at.index(index)))
            .collect::<Result<_, _>>()?;
        Ok(model::StorageClass {
            meta,
            provisioner: class.provisioner.clone(),
            volume_binding_mode,
            allowed_topologies,
        })
    })
}

/// Converts a CSINode: each driver with its volume limit, if it reports one.
pub fn csi_node(node: &CSINode) -> Result<model::CsiNode, ConvertError> {
    convert(node, |meta| {
        Ok(model::CsiNode {
            meta,
            drivers: node
                .spec
                .drivers
                .iter()
                .map(|driver| {
                    let count = driver.allocatable.as_ref().and_then(|a| a.count);
                    (driver.name.clone(), count.map(i64::from))
                })
                .collect(),
        })
    })
}
