//! Pods: their spec as the scheduler reads it, and their priority.

use std::collections::HashMap;

use berth_model::model::{self, VolumeSource};
use k8s_openapi::api::core::v1::{self as core, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::field::{Field, Problem};
use super::selectors::{node_selector, node_selector_term, optional_selector};

use berth_model::resources::ResourceList;

use super::{
    ConvertError, DEFAULT_SCHEDULER_NAME, PREFERRED, REQUIRED, amount, convert, object_ref,
    resource_list, taint_effect,
};

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
pub(crate) const SYSTEM_PRIORITY_CLASSES: [(&str, i32); 2] = [
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
            // Go decodes a missing `value` as 0 (a plain int32 there; optional only in the
            // generated Rust types).
            let value = class.value.unwrap_or(0);
            values.insert(name.to_owned(), value);
            // Upstream takes the lowest value when several classes claim to be the default.
            if class.global_default == Some(true)
                && global_default
                    .as_ref()
                    .is_none_or(|(_, lowest)| value < *lowest)
            {
                global_default = Some((name.to_owned(), value));
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
        let status = pod.status.as_ref();
        let app_containers = containers(
            &spec.containers,
            status.and_then(|s| s.container_statuses.as_deref()),
            at.name("containers"),
            Field::root("status").name("containerStatuses"),
        )?;
        let init_containers = containers(
            spec.init_containers.as_deref().unwrap_or_default(),
            status.and_then(|s| s.init_container_statuses.as_deref()),
            at.name("initContainers"),
            Field::root("status").name("initContainerStatuses"),
        )?;
        let affinity = spec
            .affinity
            .as_ref()
            .map(|affinity| convert_affinity(affinity, &meta.labels, at.name("affinity")))
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
            .map(|(index, c)| spread_constraint(c, &meta.labels, spread_at.index(index)))
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
            resources: spec
                .resources
                .as_ref()
                .map(|r| requests_with_limits(r, at.name("resources")))
                .transpose()?
                .unwrap_or_default(),
            allocated_pod_level: status
                .and_then(|s| s.allocated_resources.as_ref())
                .map(|list| {
                    resource_list(Some(list), Field::root("status").name("allocatedResources"))
                })
                .transpose()?,
            // Some whenever `resources` is reported, requests or not, as for containers.
            actual_pod_level: status
                .and_then(|s| s.resources.as_ref())
                .map(|r| {
                    let status_at = Field::root("status");
                    let resources_at = status_at.name("resources");
                    resource_list(r.requests.as_ref(), resources_at.name("requests"))
                })
                .transpose()?,
            resize_infeasible: status
                .and_then(|s| s.conditions.as_deref())
                .into_iter()
                .flatten()
                .find(|c| c.type_ == "PodResizePending")
                .is_some_and(|c| c.reason.as_deref() == Some("Infeasible")),
            scheduling_gates: spec
                .scheduling_gates
                .iter()
                .flatten()
                .map(|g| g.name.clone())
                .collect(),
            refused: crate::unmodelled::in_pod(pod)
                .into_iter()
                .filter(|u| u.refuses)
                .map(|u| u.why.to_owned())
                .collect(),
            resource_claims: spec
                .resource_claims
                .iter()
                .flatten()
                .map(|c| c.name.clone())
                .collect(),
            node_selector: spec.node_selector.iter().flatten().collect(),
            affinity,
            tolerations,
            volumes,
            host_network: spec.host_network.unwrap_or(false),
            topology_spread_constraints,
            meta,
        })
    })
}

/// Containers with their statuses (matched by name, as upstream's `findContainerStatus`).
fn containers(
    list: &[core::Container],
    statuses: Option<&[core::ContainerStatus]>,
    at: Field<'_>,
    statuses_at: Field<'_>,
) -> Result<Vec<model::Container>, Problem> {
    let statuses = statuses.unwrap_or_default();
    list.iter()
        .enumerate()
        .map(|(index, c)| {
            let status = statuses
                .iter()
                .position(|status| status.name == c.name)
                .map(|i| (&statuses[i], statuses_at.index(i)));
            container(c, status, at.index(index))
        })
        .collect()
}

/// Requests with the API server's defaulting: a limit without a request is the request too.
fn requests_with_limits(
    resources: &core::ResourceRequirements,
    at: Field<'_>,
) -> Result<ResourceList, Problem> {
    let requests = resources.requests.as_ref();
    let mut converted = resource_list(requests, at.name("requests"))?;
    let limits_at = at.name("limits");
    for (name, limit) in resources.limits.iter().flatten() {
        if !requests.is_some_and(|requests| requests.contains_key(name)) {
            converted.push((name.clone(), amount(name, limit, limits_at.key(name))?));
        }
    }
    Ok(converted)
}

fn container(
    container: &core::Container,
    status: Option<(&core::ContainerStatus, Field<'_>)>,
    at: Field<'_>,
) -> Result<model::Container, Problem> {
    let requests = match container.resources.as_ref() {
        Some(resources) => requests_with_limits(resources, at.name("resources"))?,
        None => Vec::new(),
    };
    let (allocated, actual) = match status {
        Some((status, status_at)) => (
            status
                .allocated_resources
                .as_ref()
                .map(|list| resource_list(Some(list), status_at.name("allocatedResources")))
                .transpose()?,
            // Some whenever `resources` is reported, requests or not: that is what makes
            // v1.36 read the container's status at all (`cs.Resources != nil`).
            status
                .resources
                .as_ref()
                .map(|r| {
                    let resources_at = status_at.name("resources");
                    resource_list(r.requests.as_ref(), resources_at.name("requests"))
                })
                .transpose()?,
        ),
        None => (None, None),
    };
    Ok(model::Container {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        requests,
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
        restartable: container.restart_policy.as_deref() == Some("Always"),
        allocated,
        actual,
    })
}

fn convert_affinity(
    affinity: &core::Affinity,
    labels: &Labels,
    at: Field<'_>,
) -> Result<model::Affinity, Problem> {
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
            labels,
            at.name(REQUIRED),
        )?;
        converted.pod_preferred = weighted_pod_affinity_terms(
            pod.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            labels,
            at.name(PREFERRED),
        )?;
    }
    if let Some(anti) = &affinity.pod_anti_affinity {
        let at = at.name("podAntiAffinity");
        converted.anti_required = pod_affinity_terms(
            anti.required_during_scheduling_ignored_during_execution
                .as_deref(),
            labels,
            at.name(REQUIRED),
        )?;
        converted.anti_preferred = weighted_pod_affinity_terms(
            anti.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            labels,
            at.name(PREFERRED),
        )?;
    }
    Ok(converted)
}

fn pod_affinity_terms(
    terms: Option<&[core::PodAffinityTerm]>,
    labels: &Labels,
    at: Field<'_>,
) -> Result<Vec<model::PodAffinityTerm>, Problem> {
    terms
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, term)| pod_affinity_term(term, labels, at.index(index)))
        .collect()
}

fn weighted_pod_affinity_terms(
    terms: Option<&[core::WeightedPodAffinityTerm]>,
    labels: &Labels,
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
                term: pod_affinity_term(
                    &weighted.pod_affinity_term,
                    labels,
                    at.name("podAffinityTerm"),
                )?,
            })
        })
        .collect()
}

/// A pod (anti-)affinity term, with its `matchLabelKeys` and `mismatchLabelKeys` merged into
/// its selector as the API server does at creation.
fn pod_affinity_term(
    term: &core::PodAffinityTerm,
    labels: &Labels,
    at: Field<'_>,
) -> Result<model::PodAffinityTerm, Problem> {
    let mut label_selector =
        optional_selector(term.label_selector.as_ref(), at.name("labelSelector"))?;
    super::selectors::add_label_keys(
        &mut label_selector,
        term.match_label_keys.as_deref(),
        berth_model::labels::Operator::In,
        labels,
    );
    super::selectors::add_label_keys(
        &mut label_selector,
        term.mismatch_label_keys.as_deref(),
        berth_model::labels::Operator::NotIn,
        labels,
    );
    Ok(model::PodAffinityTerm {
        label_selector,
        namespaces: term.namespaces.clone().unwrap_or_default(),
        namespace_selector: optional_selector(
            term.namespace_selector.as_ref(),
            at.name("namespaceSelector"),
        )?,
        topology_key: term.topology_key.clone(),
    })
}

pub(super) fn toleration(
    toleration: &core::Toleration,
    at: Field<'_>,
) -> Result<model::Toleration, Problem> {
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

/// A topology spread constraint, validated as v1.36's API server does its v1.25+ fields
/// (`validateMinDomains`, `validateNodeInclusionPolicy` in pkg/apis/core/validation), with its
/// `matchLabelKeys` merged into its selector.
fn spread_constraint(
    constraint: &core::TopologySpreadConstraint,
    labels: &Labels,
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
    if let Some(min_domains) = constraint.min_domains {
        let at = at.name("minDomains");
        if min_domains < 1 {
            return Err(at.problem(format!("must be at least 1, found {min_domains}")));
        }
        if when_unsatisfiable != model::WhenUnsatisfiable::DoNotSchedule {
            return Err(at.problem(format!(
                "only allowed with whenUnsatisfiable DoNotSchedule, not {}",
                constraint.when_unsatisfiable
            )));
        }
    }
    // The scheduler merges `matchLabelKeys` itself too (v1.36 `filterTopologySpreadConstraints`
    // in podtopologyspread/common.go), with the same rules as the API server: keys the pod
    // has no label for are skipped and a nil selector stays nil (`mergeLabelSetWithSelector`).
    let mut label_selector =
        optional_selector(constraint.label_selector.as_ref(), at.name("labelSelector"))?;
    super::selectors::add_label_keys(
        &mut label_selector,
        constraint.match_label_keys.as_deref(),
        berth_model::labels::Operator::In,
        labels,
    );
    Ok(model::TopologySpreadConstraint {
        max_skew: constraint.max_skew,
        topology_key: constraint.topology_key.clone(),
        when_unsatisfiable,
        label_selector,
        min_domains: constraint.min_domains,
        node_affinity_policy: inclusion_policy(
            constraint.node_affinity_policy.as_deref(),
            at.name("nodeAffinityPolicy"),
        )?,
        node_taints_policy: inclusion_policy(
            constraint.node_taints_policy.as_deref(),
            at.name("nodeTaintsPolicy"),
        )?,
    })
}

/// A `nodeAffinityPolicy` or `nodeTaintsPolicy`; unset stays unset (the engine applies
/// upstream's defaults).
fn inclusion_policy(
    policy: Option<&str>,
    at: Field<'_>,
) -> Result<Option<model::NodeInclusionPolicy>, Problem> {
    match policy {
        None => Ok(None),
        Some("Honor") => Ok(Some(model::NodeInclusionPolicy::Honor)),
        Some("Ignore") => Ok(Some(model::NodeInclusionPolicy::Ignore)),
        Some(other) => {
            Err(at.problem(format!("unknown policy {other:?} (expected Honor, Ignore)")))
        }
    }
}

/// A pod's labels, read by `matchLabelKeys` and `mismatchLabelKeys`.
type Labels = model::StringMap;

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
