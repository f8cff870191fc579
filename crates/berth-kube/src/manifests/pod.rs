//! Bare Pods: created as written.

use k8s_openapi::api::core::v1::Pod;

use super::{Planned, Problem, check_no_node_name, namespace_of, naming};

pub(super) fn plan(pod: &Pod) -> Result<Planned, Problem> {
    check_no_node_name(pod.spec.as_ref(), "spec")?;
    let mut pod = pod.clone();
    pod.status = None;
    if pod.metadata.uid.is_none() {
        let namespace = namespace_of(&pod.metadata);
        let name = pod.metadata.name.clone().unwrap_or_default();
        pod.metadata.uid = Some(naming::uid("Pod", &namespace, &name));
    }
    Ok(Planned {
        pods: vec![pod],
        wanted: 1,
        spec_at: "spec",
        ..Planned::default()
    })
}
