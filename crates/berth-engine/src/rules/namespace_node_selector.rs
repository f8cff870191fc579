//! MatchNamespaceNodeSelector (Berth): a pod lands only on nodes matching its namespace's node
//! selector, from the namespace annotation `openshift.io/node-selector` or
//! `scheduler.alpha.kubernetes.io/node-selector`, else the policy's cluster-wide default.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::labels::Sym;

/// The node does not match the namespace's node selector.
pub const REASON: &str = "node(s) didn't match namespace node selector";
/// OpenShift's project node selector annotation (takes precedence).
pub const OPENSHIFT_ANNOTATION: &str = "openshift.io/node-selector";
/// The PodNodeSelector admission plugin's annotation.
pub const KUBERNETES_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";

/// Parses `key=value,key2=value2` (spaces around items allowed). Empty means no restriction.
pub fn parse_node_selector(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.contains('=') => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(format!(
                "invalid node selector item {item:?} in {text:?} (expected comma-separated key=value pairs)"
            )),
        })
        .collect()
}

/// The node selector annotation of a namespace, if it has one (OpenShift's first).
pub fn namespace_annotation(
    annotations: &std::collections::BTreeMap<String, String>,
) -> Option<&str> {
    annotations
        .get(OPENSHIFT_ANNOTATION)
        .or_else(|| annotations.get(KUBERNETES_ANNOTATION))
        .map(String::as_str)
}

/// The rule, with the cluster-wide default selector.
pub struct MatchNamespaceNodeSelector {
    default: Vec<(String, String)>,
}

impl MatchNamespaceNodeSelector {
    /// The rule; fails if the default selector does not parse.
    pub fn new(default_node_selector: &str) -> Result<Self, String> {
        Ok(MatchNamespaceNodeSelector {
            default: parse_node_selector(default_node_selector)?,
        })
    }
}

/// The required (key, value) pairs; None stands for a key or value no node carries, which
/// no node can match.
struct Check(Vec<Option<(Sym, Sym)>>);

impl NodeCheck for Check {
    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let ok = self
            .0
            .iter()
            .all(|pair| pair.is_some_and(|(k, v)| node.labels.get(k) == Some(v)));
        if !ok {
            reasons.push(REASON.into());
        }
        ok
    }
}

impl FilterRule for MatchNamespaceNodeSelector {
    /// Like node selectors: removing pods cannot change a node's labels.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let cluster = ctx.cluster;
        let own = cluster
            .namespaces
            .get(&ctx.pod.namespace)
            .and_then(|ns| ns.node_selector.as_deref());
        let parsed;
        let pairs = match own {
            Some(text) => match parse_node_selector(text) {
                Ok(p) => {
                    parsed = p;
                    &parsed
                }
                Err(e) => {
                    return FilterPrep::RejectAll(vec![
                        format!("namespace {}: {e}", ctx.pod.pod.meta.namespace).into(),
                    ]);
                }
            },
            None => &self.default,
        };
        if pairs.is_empty() {
            return FilterPrep::Skip;
        }
        let compiled = pairs
            .iter()
            .map(|(k, v)| cluster.interner.get(k).zip(cluster.interner.get(v)))
            .collect();
        FilterPrep::Check(Box::new(Check(compiled)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Namespace;
    use crate::testkit::*;

    fn nodes() -> Vec<crate::model::Node> {
        vec![
            node("infra").label("region", "infra").build(),
            node("app")
                .label("region", "primary")
                .label("env", "prod")
                .build(),
            node("bare").build(),
        ]
    }

    fn with_ns(annotations: &[(&str, &str)]) -> crate::Cluster {
        let mut c = cluster(nodes(), vec![]);
        let mut ns = Namespace::default();
        ns.meta.name = "team".into();
        ns.meta.annotations = labels(annotations);
        c.upsert_namespace(&ns);
        c
    }

    /// (name, namespace annotations, policy default, nodes that pass)
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
        Vec<&'static str>,
    );

    #[test]
    fn table() {
        let cases: Vec<Case> = vec![
            (
                "no annotation, no default",
                &[],
                "",
                vec!["infra", "app", "bare"],
            ),
            (
                "no annotation: default applies",
                &[],
                "region=infra",
                vec!["infra"],
            ),
            (
                "openshift annotation",
                &[(OPENSHIFT_ANNOTATION, "region=primary")],
                "region=infra",
                vec!["app"],
            ),
            (
                "kubernetes annotation",
                &[(KUBERNETES_ANNOTATION, "env=prod")],
                "",
                vec!["app"],
            ),
            (
                "openshift annotation wins over kubernetes one",
                &[
                    (OPENSHIFT_ANNOTATION, "region=infra"),
                    (KUBERNETES_ANNOTATION, "env=prod"),
                ],
                "",
                vec!["infra"],
            ),
            (
                "empty annotation lifts the default",
                &[(OPENSHIFT_ANNOTATION, "")],
                "region=infra",
                vec!["infra", "app", "bare"],
            ),
            (
                "several pairs are ANDed",
                &[(OPENSHIFT_ANNOTATION, "region=primary, env=prod")],
                "",
                vec!["app"],
            ),
            (
                "a value no node has",
                &[(OPENSHIFT_ANNOTATION, "region=nowhere")],
                "",
                vec![],
            ),
            (
                "a key no node has",
                &[(OPENSHIFT_ANNOTATION, "unknown-key=x")],
                "",
                vec![],
            ),
        ];
        for (name, ann, default, want) in cases {
            let mut c = with_ns(ann);
            let rule = MatchNamespaceNodeSelector::new(default).unwrap();
            let got = run_filter(&rule, &mut c, pod("p").ns("team").build());
            assert_eq!(passing(&got), want, "{name}");
            assert!(
                got.iter()
                    .all(|(_, r)| r.is_empty() || r == &vec![REASON.to_string()]),
                "{name}"
            );
        }
    }

    #[test]
    fn bad_selectors() {
        assert!(MatchNamespaceNodeSelector::new("region").is_err());
        assert!(parse_node_selector("a=b=c").is_err());
        assert_eq!(parse_node_selector(" a=b , c=d ").unwrap().len(), 2);
        let mut c = with_ns(&[(OPENSHIFT_ANNOTATION, "oops")]);
        let got = run_filter(
            &MatchNamespaceNodeSelector::new("").unwrap(),
            &mut c,
            pod("p").ns("team").build(),
        );
        assert!(
            got[0].1[0].contains("namespace team: invalid node selector item"),
            "{:?}",
            got[0].1
        );
    }
}
