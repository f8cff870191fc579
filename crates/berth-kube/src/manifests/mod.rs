//! What-if on manifests: workloads that are not yet in the cluster (Deployments,
//! ReplicaSets, StatefulSets, Jobs, DaemonSets, bare Pods), read from manifest files and
//! expanded into the pending pods their controllers would create, each admitted as the API
//! server would admit it (`admission.rs`, `limit_range.rs`), ready to schedule.
//!
//! One file per kind says how its controller names, labels and counts its pods; `naming.rs`
//! makes the generated names deterministic. Every problem is a [`ClusterFileError`] naming
//! the manifest file, the document, the object and the field.

mod admission;
mod daemon_set;
mod deployment;
mod job;
mod limit_range;
mod naming;
mod pod;
mod replica_set;
mod stateful_set;

use std::collections::{BTreeMap, HashMap, HashSet};

use berth_engine::effective_requests;
use berth_model::labels::{Interner, Labels, Selector};
use berth_model::model;
use berth_model::resources::{ResourceList, Resources};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};

pub use admission::DEFAULT_TOLERATIONS_ANNOTATION;

use crate::ClusterObjects;
use crate::cluster_file::{Item, Problem, Scope, Seen, validate_pod_spec, walk_objects};
use crate::convert::{self, Field, PriorityResolver, optional_selector};
use crate::error::{ClusterFileError, Site};

/// The most pods one manifest may create: far above any real workload, low enough that a
/// typo in `replicas` cannot exhaust memory.
pub const MAX_PODS_PER_MANIFEST: usize = 100_000;

/// The kinds `--apply` takes, for messages.
const ACCEPTED_KINDS: &str = "apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, \
                              batch/v1 Job, v1 Pod (or a List of them)";

/// One workload read from a manifest file, with where it was.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file, document and object.
    pub site: Site,
    /// The object.
    pub workload: Workload,
}

/// A workload object of a kind `--apply` expands.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `apps/v1 Deployment`.
    Deployment(Box<Deployment>),
    /// `apps/v1 ReplicaSet`.
    ReplicaSet(Box<ReplicaSet>),
    /// `apps/v1 StatefulSet`.
    StatefulSet(Box<StatefulSet>),
    /// `batch/v1 Job`.
    Job(Box<Job>),
    /// `apps/v1 DaemonSet`.
    DaemonSet(Box<DaemonSet>),
    /// `v1 Pod`.
    Pod(Box<Pod>),
}

impl Workload {
    fn kind(&self) -> &'static str {
        match self {
            Workload::Deployment(_) => "Deployment",
            Workload::ReplicaSet(_) => "ReplicaSet",
            Workload::StatefulSet(_) => "StatefulSet",
            Workload::Job(_) => "Job",
            Workload::DaemonSet(_) => "DaemonSet",
            Workload::Pod(_) => "Pod",
        }
    }

    fn metadata(&self) -> &ObjectMeta {
        match self {
            Workload::Deployment(o) => &o.metadata,
            Workload::ReplicaSet(o) => &o.metadata,
            Workload::StatefulSet(o) => &o.metadata,
            Workload::Job(o) => &o.metadata,
            Workload::DaemonSet(o) => &o.metadata,
            Workload::Pod(o) => &o.metadata,
        }
    }
}

/// Parses manifest text (YAML documents or JSON values, Lists flattened) into workloads;
/// any other kind, a missing field, a bad quantity or a duplicate is an error.
pub fn parse_manifests(text: &str, source: &str) -> Result<Vec<Manifest>, ClusterFileError> {
    use Scope::Namespaced;
    let mut manifests = Vec::new();
    let mut seen = Seen::default();
    let found = walk_objects(text, source, &mut |kind, item: Item| {
        let site = (*item.site).clone();
        let workload = match kind.as_str() {
            "Deployment" => Workload::Deployment(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |d: &Deployment| template_checks(d.spec.as_ref().map(|s| &s.template)),
            )?)),
            "ReplicaSet" => Workload::ReplicaSet(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |r: &ReplicaSet| template_checks(r.spec.as_ref().and_then(|s| s.template.as_ref())),
            )?)),
            "StatefulSet" => Workload::StatefulSet(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |s: &StatefulSet| template_checks(s.spec.as_ref().map(|s| &s.template)),
            )?)),
            "Job" => Workload::Job(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |j: &Job| template_checks(j.spec.as_ref().map(|s| &s.template)),
            )?)),
            "DaemonSet" => Workload::DaemonSet(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |d: &DaemonSet| template_checks(d.spec.as_ref().map(|s| &s.template)),
            )?)),
            "Pod" => Workload::Pod(Box::new(item.decode(
                &mut seen,
                Namespaced,
                |p: &Pod| match &p.spec {
                    Some(spec) => validate_pod_spec("spec", spec),
                    None => Err(missing("spec", "a Pod needs spec.containers")),
                },
            )?)),
            other => {
                return Err(ClusterFileError::Malformed {
                    message: format!(
                        "kind {other} cannot be applied (--apply takes {ACCEPTED_KINDS}; \
                         put other objects in the cluster file)"
                    ),
                    site: item.site,
                });
            }
        };
        manifests.push(Manifest { site, workload });
        Ok(())
    })?;
    if !found {
        return Err(ClusterFileError::Malformed {
            site: Box::new(Site {
                file: source.to_owned(),
                location: Default::default(),
                object: None,
            }),
            message: format!("no objects found (--apply takes {ACCEPTED_KINDS})"),
        });
    }
    // As kubectl's strict field validation (its default since v1.27) refuses them.
    if let Some(((kind, field), (_, site))) = seen.unknown.into_iter().next() {
        return Err(ClusterFileError::Schema {
            site,
            field: Some(field),
            message: format!(
                "unknown field of {kind} in Kubernetes v1.36's API (kubectl apply refuses it \
                 too; check its spelling and indentation)"
            ),
        });
    }
    Ok(manifests)
}

fn missing(field: &str, why: &str) -> Problem {
    Problem::Message {
        field: field.to_owned(),
        message: format!("missing ({why})"),
    }
}

/// A workload's pod template must have a spec the scheduler can read.
fn template_checks(template: Option<&PodTemplateSpec>) -> Result<(), Problem> {
    let Some(template) = template else {
        return Err(missing("spec.template", "a workload needs a pod template"));
    };
    match &template.spec {
        Some(spec) => validate_pod_spec("spec.template.spec", spec),
        None => Err(missing(
            "spec.template.spec",
            "a pod template needs spec.containers",
        )),
    }
}

/// The manifests' pods, admitted and converted, plus what else the controllers create.
#[derive(Debug, Default)]
pub struct Expansion {
    /// The pods to schedule, manifest by manifest.
    pub pods: Vec<model::Pod>,
    /// One entry per manifest, in the order given.
    pub workloads: Vec<Applied>,
    /// The ReplicaSets and StatefulSets that will select the pods (for spreading).
    pub selector_objects: Vec<model::PodSelector>,
    /// The claims a StatefulSet's volumeClaimTemplates create (unbound).
    pub claims: Vec<model::PersistentVolumeClaim>,
}

/// What one manifest became.
#[derive(Debug, Clone)]
pub struct Applied {
    /// `Deployment`, `Job`, ...
    pub kind: &'static str,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
    /// Where it was: file and document.
    pub source: String,
    /// How many pods the controller wants now (replicas; a Job's pods running at once; a
    /// DaemonSet's eligible nodes).
    pub wanted: usize,
    /// The pods created (`namespace/name`), in order.
    pub pods: Vec<String>,
    /// What the count follows from when it is not plain replicas.
    pub note: Option<String>,
    /// What admission changed, e.g. LimitRange defaults and the priority.
    pub admission: Vec<String>,
    /// One pod's requests after admission (all pods of a manifest share them).
    pub requests: PodRequests,
    /// The PersistentVolumeClaims created for the pods (`namespace/name`).
    pub claims: Vec<String>,
}

/// A pod's requests as the scheduler reserves them (v1.36's `PodRequests`): per resource, the
/// app containers and sidecars together or the busiest init step, whichever is larger;
/// pod-level requests replace that for the resources they set; plus the overhead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// Sum over the app containers.
    pub containers: ResourceList,
    /// Sum over the sidecars (init containers with `restartPolicy: Always`), which run
    /// beside the app containers.
    pub sidecars: ResourceList,
    /// The busiest init step, per resource: a regular init container with the sidecars
    /// started before it, or the sidecars started so far.
    pub init_containers: ResourceList,
    /// `spec.resources.requests` (pod-level).
    pub pod_level: ResourceList,
    /// `spec.overhead`.
    pub overhead: ResourceList,
    /// What the pod reserves on its node.
    pub effective: ResourceList,
}

impl PodRequests {
    /// The requests of a converted pod.
    pub fn of(pod: &model::Pod) -> Self {
        let mut containers = Resources::default();
        for c in &pod.containers {
            containers.add(&Resources::from_list(&c.requests));
        }
        let mut sidecars = Resources::default();
        let mut init = Resources::default();
        for c in &pod.init_containers {
            let mut step = Resources::from_list(&c.requests);
            if c.restartable {
                sidecars.add(&step);
                step = sidecars.clone();
            } else {
                step.add(&sidecars);
            }
            init.max_with(&step);
        }
        PodRequests {
            containers: list(&containers),
            sidecars: list(&sidecars),
            init_containers: list(&init),
            pod_level: list(&Resources::from_list(&pod.resources)),
            overhead: list(&Resources::from_list(&pod.overhead)),
            effective: list(&effective_requests(pod)),
        }
    }
}

/// The non-zero resources, cpu, memory and ephemeral-storage first, then the rest by name.
fn list(r: &Resources) -> ResourceList {
    let mut scalars: ResourceList = r.scalars.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    scalars.sort();
    [
        ("cpu", r.milli_cpu),
        ("memory", r.memory),
        ("ephemeral-storage", r.ephemeral_storage),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .chain(scalars)
    .filter(|(_, v)| *v != 0)
    .collect()
}

/// What one kind's controller would create, before admission.
#[derive(Default)]
struct Planned {
    /// The pods, named and labelled, with owner references.
    pods: Vec<Pod>,
    /// How many pods the controller wants (may exceed `pods` for OrderedReady sets).
    wanted: usize,
    note: Option<String>,
    /// Where the pod spec is, for errors (`spec.template.spec` or `spec`).
    spec_at: &'static str,
    replica_sets: Vec<ReplicaSet>,
    stateful_sets: Vec<StatefulSet>,
    claims: Vec<PersistentVolumeClaim>,
}

/// The cluster as the controllers and admission see it.
pub(crate) struct Context<'a> {
    objects: &'a ClusterObjects,
    admission: admission::Admission<'a>,
    /// Pods already in the cluster or created by an earlier manifest (`namespace/name`).
    pod_names: HashSet<String>,
}

/// Expands every manifest in order. Pod names may not collide with the cluster's pods or
/// with each other; workloads of the same kind and name may not repeat across files, nor
/// exist in the cluster already.
pub fn expand(
    manifests: &[Manifest],
    objects: &ClusterObjects,
) -> Result<Expansion, ClusterFileError> {
    let mut context = Context {
        objects,
        admission: admission::Admission::new(objects),
        pod_names: objects.pods.iter().map(pod_key).collect(),
    };
    let existing: HashSet<(&str, String, String)> = objects
        .replica_sets
        .iter()
        .map(|o| ("ReplicaSet", &o.metadata))
        .chain(
            objects
                .stateful_sets
                .iter()
                .map(|o| ("StatefulSet", &o.metadata)),
        )
        .map(|(kind, meta)| (kind, namespace_of(meta), name_of(meta)))
        .collect();
    let mut applied: HashMap<(&str, String, String), &Site> = HashMap::new();
    let mut expansion = Expansion::default();
    // Created after everything in the cluster file, so equal priorities queue after its pods.
    let created = objects
        .pods
        .iter()
        .filter_map(|p| p.metadata.creation_timestamp.as_ref())
        .map(|t| t.0.as_second())
        .max()
        .unwrap_or(0);
    for manifest in manifests {
        let invalid = |problem: Problem| match problem {
            Problem::Message { field, message } => ClusterFileError::Invalid {
                site: Box::new(manifest.site.clone()),
                field,
                message,
            },
            Problem::Quantity { field, error } => ClusterFileError::Quantity {
                site: Box::new(manifest.site.clone()),
                field,
                error,
            },
        };
        let meta = manifest.workload.metadata();
        let kind = manifest.workload.kind();
        let key = (kind, namespace_of(meta), name_of(meta));
        if existing.contains(&key) {
            return Err(invalid(Problem::Message {
                field: "metadata.name".to_owned(),
                message: format!(
                    "a {kind} of this name is already in the cluster file (--apply takes \
                     workloads that are not yet in the cluster)"
                ),
            }));
        }
        if let Some(first) = applied.get(&key) {
            return Err(invalid(Problem::Message {
                field: "metadata.name".to_owned(),
                message: format!(
                    "the same {kind} is already applied from {}: {}",
                    first.file, first.location
                ),
            }));
        }
        applied.insert(key.clone(), &manifest.site);
        let planned = match &manifest.workload {
            Workload::Deployment(d) => deployment::plan(d),
            Workload::ReplicaSet(r) => replica_set::plan(r),
            Workload::StatefulSet(s) => stateful_set::plan(s, &context),
            Workload::Job(j) => job::plan(j),
            Workload::DaemonSet(d) => daemon_set::plan(d, &context),
            Workload::Pod(p) => pod::plan(p),
        }
        .map_err(invalid)?;
        let (_, namespace, name) = key;
        let mut entry = Applied {
            kind,
            namespace,
            name,
            source: format!("{}: {}", manifest.site.file, manifest.site.location),
            wanted: planned.wanted,
            pods: Vec::with_capacity(planned.pods.len()),
            note: planned.note,
            admission: Vec::new(),
            requests: PodRequests::default(),
            claims: Vec::new(),
        };
        for set in &planned.replica_sets {
            expansion
                .selector_objects
                .push(convert::replica_set(set).map_err(convert_error(manifest))?);
        }
        for set in &planned.stateful_sets {
            expansion
                .selector_objects
                .push(convert::stateful_set(set).map_err(convert_error(manifest))?);
        }
        for claim in &planned.claims {
            let converted =
                convert::persistent_volume_claim(claim).map_err(convert_error(manifest))?;
            entry.claims.push(format!(
                "{}/{}",
                converted.meta.namespace, converted.meta.name
            ));
            expansion.claims.push(converted);
        }
        for (index, mut pod) in planned.pods.into_iter().enumerate() {
            let key = pod_key(&pod);
            if !context.pod_names.insert(key.clone()) {
                return Err(invalid(Problem::Message {
                    field: "metadata.name".to_owned(),
                    message: format!(
                        "pod {key} would collide with a pod of that name already in the \
                         cluster or created by an earlier manifest"
                    ),
                }));
            }
            let notes = context
                .admission
                .admit(&entry.namespace, &mut pod, planned.spec_at)
                .map_err(invalid)?;
            let mut warnings = Vec::new();
            let mut converted = convert::pod(&pod, &PriorityResolver::default(), &mut warnings)
                .map_err(convert_error(manifest))?;
            converted.meta.creation_timestamp = created;
            if index == 0 {
                entry.admission = notes;
                entry.requests = PodRequests::of(&converted);
            }
            entry.pods.push(key);
            expansion.pods.push(converted);
        }
        expansion.workloads.push(entry);
    }
    Ok(expansion)
}

fn convert_error(manifest: &Manifest) -> impl Fn(convert::ConvertError) -> ClusterFileError {
    move |e| ClusterFileError::Invalid {
        site: Box::new(manifest.site.clone()),
        field: e.field,
        message: format!("{} (in the {} it creates)", e.message, e.object),
    }
}

fn namespace_of(meta: &ObjectMeta) -> String {
    meta.namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", namespace_of(&pod.metadata), name_of(&pod.metadata))
}

/// A replica count: unset is `default`; negative or above [`MAX_PODS_PER_MANIFEST`] is an
/// error at `field`.
fn count(value: Option<i32>, default: usize, field: &str) -> Result<usize, Problem> {
    let Some(value) = value else {
        return Ok(default);
    };
    match usize::try_from(value) {
        Ok(n) if n <= MAX_PODS_PER_MANIFEST => Ok(n),
        Ok(n) => Err(Problem::Message {
            field: field.to_owned(),
            message: format!(
                "{n} is more than the {MAX_PODS_PER_MANIFEST} pods one manifest may create here"
            ),
        }),
        Err(_) => Err(Problem::Message {
            field: field.to_owned(),
            message: format!("must be greater than or equal to 0, found {value}"),
        }),
    }
}

/// The owner reference a controller puts on what it creates.
fn controller_ref(kind: &str, api_version: &str, meta: &ObjectMeta) -> OwnerReference {
    let name = name_of(meta);
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        uid: meta
            .uid
            .clone()
            .unwrap_or_else(|| naming::uid(kind, &namespace_of(meta), &name)),
        name,
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A pod made from a template: the template's labels and annotations plus `labels`, the
/// owner, and its own name and UID.
fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    name: String,
    owner: OwnerReference,
    labels: &[(&str, &str)],
) -> Pod {
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut all_labels = template_meta.labels.unwrap_or_default();
    for (key, value) in labels {
        all_labels.insert((*key).to_owned(), (*value).to_owned());
    }
    Pod {
        metadata: ObjectMeta {
            uid: Some(naming::uid("Pod", namespace, &name)),
            name: Some(name),
            namespace: Some(namespace.to_owned()),
            labels: Some(all_labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// `<base>-<suffix>` names for `count` pods, deterministic and distinct from each other.
fn generated_names(base: &str, count: usize) -> Vec<String> {
    let mut taken = HashSet::with_capacity(count);
    (0..count)
        .map(|ordinal| {
            let mut attempt = ordinal;
            loop {
                let name = format!(
                    "{base}-{}",
                    naming::suffix(&[base.as_bytes(), &attempt.to_le_bytes()])
                );
                if taken.insert(name.clone()) {
                    return name;
                }
                attempt += count;
            }
        })
        .collect()
}

/// Checks that the workload's selector (required) selects its template's labels, as API
/// validation does (`selector does not match template labels`).
fn check_selector(
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
) -> Result<(), Problem> {
    let at = Field::root("spec");
    let Some(selector) = selector else {
        return Err(missing(
            "spec.selector",
            "apps/v1 workloads need a selector",
        ));
    };
    let converted = optional_selector(Some(selector), at.name("selector"))
        .map_err(|p| Problem::Message {
            field: p.field,
            message: p.message,
        })?
        .unwrap_or_default();
    if converted.requirements.is_empty() {
        return Err(Problem::Message {
            field: "spec.selector".to_owned(),
            message: "empty: the API server refuses a workload whose selector selects every pod"
                .to_owned(),
        });
    }
    let mut interner = Interner::default();
    let compiled = Selector::compile(&mut interner, &converted);
    let template_labels: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let labels = Labels::intern(
        &mut interner,
        template_labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    if compiled.needs_numbers() || !compiled.matches(&labels) {
        return Err(Problem::Message {
            field: "spec.template.metadata.labels".to_owned(),
            message: "`selector` does not match template `labels`".to_owned(),
        });
    }
    Ok(())
}

/// A pod spec may not name a node: `--apply` simulates the pods the scheduler
/// places.
fn check_no_node_name(spec: Option<&PodSpec>, at: &str) -> Result<(), Problem> {
    match spec.and_then(|s| s.node_name.as_deref()) {
        Some(node) if !node.is_empty() => Err(Problem::Message {
            field: format!("{at}.nodeName"),
            message: format!(
                "set to {node:?}: such a pod bypasses the scheduler; --apply simulates pods \
                 the scheduler places (leave nodeName out)"
            ),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
