//! Namespaces, the objects that select pods (Services, ReplicationControllers,
//! ReplicaSets, StatefulSets) and PodDisruptionBudgets.

use std::collections::BTreeMap;

use berth_model::labels::LabelSelector;
use berth_model::model::{self, SelectorKind};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::field::{Field, Problem};
use super::selectors::optional_selector;

use super::{ConvertError, annotations, convert};

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
            disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
            meta,
        })
    })
}
