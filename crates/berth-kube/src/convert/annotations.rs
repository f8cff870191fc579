//! The annotations whose contents the scheduler reads, parsed here so the engine model gets
//! typed values: a node's preferAvoidPods list (JSON), a namespace's node selector and its
//! tolerations whitelist (JSON).

use berth_model::model::{NamespaceNodeSelector, StringMap, TolerationWhitelist};
use k8s_openapi::api::core::v1 as core;
use serde::Deserialize;

use super::field::Field;

/// The node annotation listing controllers whose pods should avoid the node.
pub const PREFER_AVOID_PODS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";
/// OpenShift's project node selector annotation (takes precedence).
pub const OPENSHIFT_NODE_SELECTOR_ANNOTATION: &str = "openshift.io/node-selector";
/// The PodNodeSelector admission plugin's annotation.
pub const KUBERNETES_NODE_SELECTOR_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";
/// The PodTolerationRestriction admission plugin's whitelist annotation: a JSON list of
/// tolerations.
pub const TOLERATIONS_WHITELIST_ANNOTATION: &str =
    "scheduler.alpha.kubernetes.io/tolerationsWhitelist";

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
pub fn prefer_avoid_pods(annotations: &StringMap) -> Vec<(String, String)> {
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
pub fn namespace_node_selector(annotations: &StringMap) -> Option<NamespaceNodeSelector> {
    annotations
        .get(OPENSHIFT_NODE_SELECTOR_ANNOTATION)
        .or_else(|| annotations.get(KUBERNETES_NODE_SELECTOR_ANNOTATION))
        .map(|text| NamespaceNodeSelector::parse(text))
}

/// A namespace's tolerations whitelist; None when the annotation is not set. As upstream's
/// admission plugin reads it, an empty value (or `null`) is an empty list. One that does not
/// parse, or lists a toleration with an unknown operator or effect, is kept as
/// [`TolerationWhitelist::Invalid`] with the reason, so the scheduler can say why it grants
/// nothing rather than the namespace vanishing.
pub fn toleration_whitelist(annotations: &StringMap) -> Option<TolerationWhitelist> {
    let text = annotations.get(TOLERATIONS_WHITELIST_ANNOTATION)?;
    if text.trim().is_empty() {
        return Some(TolerationWhitelist::Tolerations(Vec::new()));
    }
    let list = match serde_json::from_str::<Option<Vec<core::Toleration>>>(text) {
        Ok(list) => list.unwrap_or_default(),
        Err(e) => {
            return Some(TolerationWhitelist::Invalid(format!(
                "expected a JSON list of tolerations such as [{{\"key\": \"dedicated\", \
                 \"operator\": \"Equal\", \"value\": \"tenant-a\"}}]: {e}"
            )));
        }
    };
    let at = Field::root("");
    let converted = list
        .iter()
        .enumerate()
        .map(|(index, t)| super::pod::toleration(t, at.index(index)))
        .collect::<Result<Vec<_>, _>>();
    Some(match converted {
        Ok(tolerations) => TolerationWhitelist::Tolerations(tolerations),
        Err(problem) => {
            TolerationWhitelist::Invalid(format!("item {}: {}", problem.field, problem.message))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> StringMap {
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

    #[test]
    fn toleration_whitelist_table() {
        use TolerationWhitelist::*;
        use berth_model::model::{TaintEffect, Toleration, TolerationOperator};
        let exists = |key: &str, effect| Toleration {
            key: key.into(),
            operator: TolerationOperator::Exists,
            value: String::new(),
            effect,
        };
        let cases: Vec<(&str, Option<&str>, Option<TolerationWhitelist>)> = vec![
            ("no annotation", None, None),
            (
                "empty value: an empty list",
                Some(""),
                Some(Tolerations(vec![])),
            ),
            (
                "null: an empty list",
                Some("null"),
                Some(Tolerations(vec![])),
            ),
            ("[]", Some("[]"), Some(Tolerations(vec![]))),
            (
                "the format users already write",
                Some(
                    r#"[{"key": "dedicated", "operator": "Equal", "value": "tenant-a"},
                        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule",
                         "tolerationSeconds": 30}]"#,
                ),
                Some(Tolerations(vec![
                    Toleration {
                        key: "dedicated".into(),
                        operator: TolerationOperator::Equal,
                        value: "tenant-a".into(),
                        effect: None,
                    },
                    exists("gpu", Some(TaintEffect::NoSchedule)),
                ])),
            ),
            (
                "an operator left out is Equal",
                Some(r#"[{"key": "a", "value": "b"}]"#),
                Some(Tolerations(vec![Toleration {
                    key: "a".into(),
                    operator: TolerationOperator::Equal,
                    value: "b".into(),
                    effect: None,
                }])),
            ),
            (
                "everything",
                Some(r#"[{"operator": "Exists"}]"#),
                Some(Tolerations(vec![exists("", None)])),
            ),
        ];
        for (name, text, want) in cases {
            let annotations = match text {
                Some(text) => map(&[(TOLERATIONS_WHITELIST_ANNOTATION, text)]),
                None => StringMap::new(),
            };
            assert_eq!(toleration_whitelist(&annotations), want, "{name}");
        }
        for (text, want) in [
            ("dedicated=tenant-a", "expected a JSON list of tolerations"),
            (r#"{"key": "a"}"#, "expected a JSON list of tolerations"),
            (r#"[{"key": 5}]"#, "invalid type: integer `5`"),
            (
                r#"[{"key": "a"}, {"key": "b", "operator": "In"}]"#,
                "item [1].operator: unknown operator \"In\"",
            ),
            (
                r#"[{"key": "a", "effect": "Evict"}]"#,
                "item [0].effect: unknown taint effect \"Evict\"",
            ),
        ] {
            let got = toleration_whitelist(&map(&[(TOLERATIONS_WHITELIST_ANNOTATION, text)]));
            let Some(Invalid(why)) = got else {
                panic!("{text}: want invalid, got {got:?}");
            };
            assert!(why.contains(want), "{text}: {why}");
        }
    }
}
