//! DaemonSets: one pod per eligible node, as v1.22's DaemonSet controller decides
//! eligibility (`nodeShouldRunDaemonPod`): the template's nodeSelector and required node
//! affinity match the node, and every NoSchedule and NoExecute taint is tolerated, counting
//! the tolerations the controller adds to every daemon pod. Each pod is pinned to its node
//! by a required node affinity on `metadata.name` (replacing the template's required terms,
//! as upstream's `ReplaceDaemonSetPodNodeNameNodeAffinity` does), so the scheduler still
//! checks resources, ports and the rest.

use std::collections::BTreeMap;

use berth_engine::{PodInfo, any_term_matches};
use berth_model::labels::{Interner, Labels};
use berth_model::model::TaintEffect;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    Toleration,
};

use super::{
    Context, Planned, Problem, check_no_node_name, check_selector, controller_ref, missing,
    namespace_of, naming, pod_from_template,
};
use crate::convert::{self, PriorityResolver};

/// The tolerations the DaemonSet controller adds to its pods (`AddOrUpdateDaemonPodTolerations`):
/// (key, effect); network-unavailable only for hostNetwork pods.
const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
const NETWORK_UNAVAILABLE: (&str, &str) = ("node.kubernetes.io/network-unavailable", "NoSchedule");

/// Why a node runs no daemon pod.
const NOT_SELECTED: &str = "node(s) didn't match the DaemonSet's node selector/affinity";
const TAINTED: &str = "node(s) had taints the daemon pod does not tolerate";

pub(super) fn plan(set: &DaemonSet, context: &Context<'_>) -> Result<Planned, Problem> {
    let spec = set
        .spec
        .as_ref()
        .ok_or_else(|| missing("spec", "a DaemonSet needs spec.selector and spec.template"))?;
    check_selector(Some(&spec.selector), &spec.template)?;
    check_no_node_name(spec.template.spec.as_ref(), "spec.template.spec")?;
    let namespace = namespace_of(&set.metadata);
    let name = set.metadata.name.clone().unwrap_or_default();
    let revision = naming::template_hash(&spec.template);
    let owner = controller_ref("DaemonSet", "apps/v1", &set.metadata);
    let mut template = spec.template.clone();
    let pod_spec = template.spec.get_or_insert_with(Default::default);
    let host_network = pod_spec.host_network == Some(true);
    let tolerations = pod_spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in DAEMON_TOLERATIONS
        .into_iter()
        .chain(host_network.then_some(NETWORK_UNAVAILABLE))
    {
        // Upstream replaces any toleration of the same key and effect.
        tolerations
            .retain(|t| !(t.key.as_deref() == Some(key) && t.effect.as_deref() == Some(effect)));
        tolerations.push(Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some(effect.to_owned()),
            ..Default::default()
        });
    }
    // The controller's view of the template, converted once for matching.
    let probe = Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    let mut ignored = Vec::new();
    let converted =
        convert::pod(&probe, &PriorityResolver::default(), &mut ignored).map_err(|e| {
            Problem::Message {
                field: e.field.replacen("spec", "spec.template.spec", 1),
                message: e.message,
            }
        })?;
    let tolerations = converted.tolerations.clone();
    let mut interner = Interner::default();
    let info = PodInfo::compile(converted, &mut interner);
    let mut eligible = Vec::new();
    let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
    for node in &context.objects.nodes {
        // The snapshot converts every node too, and fails first on a bad one.
        let Ok(node) = convert::node(node) else {
            continue;
        };
        let labels = Labels::intern(
            &mut interner,
            node.meta
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let selected = info.node_selector.matches(&labels)
            && info
                .node_required
                .as_ref()
                .is_none_or(|terms| any_term_matches(terms, &labels, &node.meta.name, &interner));
        if !selected {
            *refused.entry(NOT_SELECTED).or_default() += 1;
            continue;
        }
        let untolerated = node.taints.iter().any(|taint| {
            matches!(
                taint.effect,
                TaintEffect::NoSchedule | TaintEffect::NoExecute
            ) && !tolerations.iter().any(|t| t.tolerates(taint))
        });
        if untolerated {
            *refused.entry(TAINTED).or_default() += 1;
            continue;
        }
        eligible.push(node.meta.name);
    }
    let generation = "1".to_owned();
    let labels = [
        ("controller-revision-hash", revision.as_str()),
        ("pod-template-generation", generation.as_str()),
    ];
    let pods = eligible
        .iter()
        .map(|node| {
            let pod_name = format!(
                "{name}-{}",
                naming::suffix(&[name.as_bytes(), node.as_bytes()])
            );
            let mut pod =
                pod_from_template(&template, &namespace, pod_name, owner.clone(), &labels);
            pin(&mut pod, node);
            pod
        })
        .collect();
    let total = context.objects.nodes.len();
    let mut note = format!("{} of {total} node(s) eligible", eligible.len());
    for (why, count) in &refused {
        note.push_str(&format!("; {count} {why}"));
    }
    Ok(Planned {
        wanted: eligible.len(),
        pods,
        note: Some(note),
        spec_at: "spec.template.spec",
        ..Planned::default()
    })
}

/// Requires the pod's node by name, replacing the template's required node terms.
fn pin(pod: &mut Pod, node: &str) {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![node.to_owned()]),
        }]),
        match_expressions: None,
    };
    let spec = pod.spec.get_or_insert_with(Default::default);
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
}
