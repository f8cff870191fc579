//! ReplicaSets: `replicas` pods (default 1) named `<set>-<5 characters>`, labelled as the
//! template, owned by the set.

use k8s_openapi::api::apps::v1::ReplicaSet;

use super::{
    Planned, Problem, check_no_node_name, check_selector, controller_ref, count, generated_names,
    missing, namespace_of, pod_from_template,
};

pub(super) fn plan(set: &ReplicaSet) -> Result<Planned, Problem> {
    let spec = set
        .spec
        .as_ref()
        .ok_or_else(|| missing("spec", "a ReplicaSet needs spec.template"))?;
    let template = spec
        .template
        .as_ref()
        .ok_or_else(|| missing("spec.template", "a ReplicaSet needs a pod template"))?;
    check_selector(Some(&spec.selector), template)?;
    check_no_node_name(template.spec.as_ref(), "spec.template.spec")?;
    let replicas = count(spec.replicas, 1, "spec.replicas")?;
    let namespace = namespace_of(&set.metadata);
    let name = set.metadata.name.clone().unwrap_or_default();
    let owner = controller_ref("ReplicaSet", "apps/v1", &set.metadata);
    let pods = generated_names(&name, replicas)
        .into_iter()
        .map(|pod| pod_from_template(template, &namespace, pod, owner.clone(), &[]))
        .collect();
    Ok(Planned {
        pods,
        wanted: replicas,
        spec_at: "spec.template.spec",
        replica_sets: vec![set.clone()],
        ..Planned::default()
    })
}
