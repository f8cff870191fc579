//! Deployments: one ReplicaSet `<deployment>-<pod-template-hash>` owned by the Deployment,
//! with the `pod-template-hash` label added to its selector and template, whose
//! `replicas` pods (default 1) are `<replicaset>-<5 characters>`.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    Planned, Problem, check_no_node_name, check_selector, controller_ref, count, generated_names,
    missing, namespace_of, naming, pod_from_template,
};

/// The label a Deployment adds to tell its ReplicaSets' pods apart.
pub(crate) const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

pub(super) fn plan(deployment: &Deployment) -> Result<Planned, Problem> {
    let spec = deployment
        .spec
        .as_ref()
        .ok_or_else(|| missing("spec", "a Deployment needs spec.selector and spec.template"))?;
    check_selector(Some(&spec.selector), &spec.template)?;
    check_no_node_name(spec.template.spec.as_ref(), "spec.template.spec")?;
    let replicas = count(spec.replicas, 1, "spec.replicas")?;
    // A paused Deployment's controller creates no ReplicaSet until it is resumed.
    if spec.paused == Some(true) {
        return Ok(Planned {
            wanted: replicas,
            note: Some("paused: no ReplicaSet or pods until spec.paused is false".to_owned()),
            spec_at: "spec.template.spec",
            ..Planned::default()
        });
    }
    let namespace = namespace_of(&deployment.metadata);
    let hash = naming::template_hash(&spec.template);
    let set_name = format!(
        "{}-{hash}",
        deployment.metadata.name.as_deref().unwrap_or_default()
    );
    let mut template = spec.template.clone();
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
    let mut selector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
    let set_meta = ObjectMeta {
        name: Some(set_name.clone()),
        namespace: Some(namespace.clone()),
        uid: Some(naming::uid("ReplicaSet", &namespace, &set_name)),
        labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
        owner_references: Some(vec![controller_ref(
            "Deployment",
            "apps/v1",
            &deployment.metadata,
        )]),
        ..Default::default()
    };
    let owner = controller_ref("ReplicaSet", "apps/v1", &set_meta);
    let pods = generated_names(&set_name, replicas)
        .into_iter()
        .map(|pod| pod_from_template(&template, &namespace, pod, owner.clone(), &[]))
        .collect();
    let set = ReplicaSet {
        metadata: set_meta,
        spec: Some(ReplicaSetSpec {
            replicas: spec.replicas,
            selector,
            template: Some(template),
            min_ready_seconds: None,
        }),
        status: None,
    };
    Ok(Planned {
        pods,
        wanted: replicas,
        note: Some(format!("through ReplicaSet {set_name}")),
        spec_at: "spec.template.spec",
        replica_sets: vec![set],
        ..Planned::default()
    })
}
