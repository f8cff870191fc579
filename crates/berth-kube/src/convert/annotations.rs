//! The annotations whose contents the scheduler reads, parsed here so the engine model gets
//! typed values: a node's preferAvoidPods list (JSON) and a namespace's node selector.

use std::collections::BTreeMap;

use berth_engine::model::NamespaceNodeSelector;
use serde::Deserialize;

/// The node annotation listing controllers whose pods should avoid the node.
pub const PREFER_AVOID_PODS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";
/// OpenShift's project node selector annotation (takes precedence).
pub const OPENSHIFT_NODE_SELECTOR_ANNOTATION: &str = "openshift.io/node-selector";
/// The PodNodeSelector admission plugin's annotation.
pub const KUBERNETES_NODE_SELECTOR_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvoidPods {
    #[serde(default)]
    prefer_avoid_pods: Vec<AvoidEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvoidEntry {
    pod_signature: Signature,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Signature {
    pod_controller: Option<Controller>,
}

#[derive(Deserialize)]
struct Controller {
    kind: String,
    #[serde(default)]
    uid: String,
}

/// The (controller kind, controller uid) pairs of a node's preferAvoidPods annotation. A
/// malformed annotation yields nothing, as upstream ignores it.
pub fn prefer_avoid_pods(annotations: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let Some(text) = annotations.get(PREFER_AVOID_PODS_ANNOTATION) else {
        return Vec::new();
    };
    serde_json::from_str::<AvoidPods>(text)
        .map(|a| {
            a.prefer_avoid_pods
                .into_iter()
                .filter_map(|e| e.pod_signature.pod_controller)
                .map(|c| (c.kind, c.uid))
                .collect()
        })
        .unwrap_or_default()
}

/// A namespace's node selector, OpenShift's annotation first; None when neither is set. One
/// that does not parse is kept as [`NamespaceNodeSelector::Invalid`]: the scheduler reports it
/// on each of the namespace's pods rather than rejecting the namespace.
pub fn namespace_node_selector(
    annotations: &BTreeMap<String, String>,
) -> Option<NamespaceNodeSelector> {
    annotations
        .get(OPENSHIFT_NODE_SELECTOR_ANNOTATION)
        .or_else(|| annotations.get(KUBERNETES_NODE_SELECTOR_ANNOTATION))
        .map(|text| NamespaceNodeSelector::parse(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// (name, annotations, the (kind, uid) pairs wanted)
    type AvoidCase = (
        &'static str,
        Vec<(&'static str, &'static str)>,
        Vec<(&'static str, &'static str)>,
    );

    #[test]
    fn prefer_avoid_pods_table() {
        let rs = r#"{"preferAvoidPods":[{"podSignature":{"podController":{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-1","controller":true}},"reason":"maintenance"},{"podSignature":{}}]}"#;
        let cases: Vec<AvoidCase> = vec![
            ("no annotation", vec![], vec![]),
            (
                "a ReplicaSet; an entry without controller is skipped",
                vec![(PREFER_AVOID_PODS_ANNOTATION, rs)],
                vec![("ReplicaSet", "rs-1")],
            ),
            (
                "malformed JSON is ignored",
                vec![(PREFER_AVOID_PODS_ANNOTATION, "{not json")],
                vec![],
            ),
            (
                "no list",
                vec![(PREFER_AVOID_PODS_ANNOTATION, "{}")],
                vec![],
            ),
        ];
        for (name, annotations, want) in cases {
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(k, u)| (k.into(), u.into()))
                .collect();
            assert_eq!(prefer_avoid_pods(&map(&annotations)), want, "{name}");
        }
    }

    #[test]
    fn namespace_node_selector_table() {
        use NamespaceNodeSelector::*;
        let pairs = |p: &[(&str, &str)]| {
            Pairs(
                p.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let cases = vec![
            ("no annotation", vec![], None),
            (
                "openshift annotation",
                vec![(OPENSHIFT_NODE_SELECTOR_ANNOTATION, "region=primary")],
                Some(pairs(&[("region", "primary")])),
            ),
            (
                "kubernetes annotation",
                vec![(KUBERNETES_NODE_SELECTOR_ANNOTATION, "env=prod")],
                Some(pairs(&[("env", "prod")])),
            ),
            (
                "openshift annotation wins over kubernetes one",
                vec![
                    (OPENSHIFT_NODE_SELECTOR_ANNOTATION, "region=infra"),
                    (KUBERNETES_NODE_SELECTOR_ANNOTATION, "env=prod"),
                ],
                Some(pairs(&[("region", "infra")])),
            ),
            (
                "empty annotation: no restriction",
                vec![(OPENSHIFT_NODE_SELECTOR_ANNOTATION, "")],
                Some(pairs(&[])),
            ),
            (
                "spaces around items",
                vec![(OPENSHIFT_NODE_SELECTOR_ANNOTATION, " a=b , c=d ")],
                Some(pairs(&[("a", "b"), ("c", "d")])),
            ),
        ];
        for (name, annotations, want) in cases {
            assert_eq!(namespace_node_selector(&map(&annotations)), want, "{name}");
        }
        let Some(Invalid(why)) =
            namespace_node_selector(&map(&[(OPENSHIFT_NODE_SELECTOR_ANNOTATION, "oops")]))
        else {
            panic!("a bad selector is kept as invalid");
        };
        assert!(why.contains("invalid node selector item \"oops\""), "{why}");
    }
}
