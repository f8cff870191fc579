//! MatchNamespaceNodeSelector (Berth): a pod lands only on nodes matching its namespace's node
//! selector, from the namespace annotation `openshift.io/node-selector` or
//! `scheduler.alpha.kubernetes.io/node-selector` (read by the converter into
//! [`crate::model::Namespace::node_selector`]), else the policy's cluster-wide default.

use crate::cluster::NodeInfo;
use crate::framework::{
    CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::labels::{Sym, parse_node_selector};
use crate::model::NamespaceNodeSelector;

/// The node does not match the namespace's node selector.
pub const REASON: &str = "node(s) didn't match namespace node selector";

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
    /// Reusable across a class while the node is unchanged: The node's labels and the namespace's selector (an object: any change to it is seen).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

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
            .namespace(ctx.pod.namespace)
            .and_then(|ns| ns.node_selector.as_ref());
        let pairs = match own {
            Some(NamespaceNodeSelector::Pairs(pairs)) => pairs,
            Some(NamespaceNodeSelector::Invalid(e)) => {
                return FilterPrep::RejectAll(vec![
                    format!("namespace {}: {e}", ctx.pod.pod.meta.namespace).into(),
                ]);
            }
            None => &self.default,
        };
        if pairs.is_empty() {
            return FilterPrep::Skip;
        }
        let compiled = pairs
            .iter()
            .map(|(k, v)| cluster.interner().get(k).zip(cluster.interner().get(v)))
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

    fn with_ns(selector: Option<&str>) -> crate::Cluster {
        let mut c = cluster(nodes(), vec![]);
        let mut ns = Namespace::default();
        ns.meta.name = "team".into();
        ns.node_selector = selector.map(NamespaceNodeSelector::parse);
        c.upsert_namespace(&ns);
        c
    }

    /// (name, namespace node selector, policy default, nodes that pass)
    type Case = (
        &'static str,
        Option<&'static str>,
        &'static str,
        Vec<&'static str>,
    );

    #[test]
    fn table() {
        let cases: Vec<Case> = vec![
            (
                "no annotation, no default",
                None,
                "",
                vec!["infra", "app", "bare"],
            ),
            (
                "no annotation: default applies",
                None,
                "region=infra",
                vec!["infra"],
            ),
            (
                "the namespace's selector wins over the default",
                Some("region=primary"),
                "region=infra",
                vec!["app"],
            ),
            (
                "empty annotation lifts the default",
                Some(""),
                "region=infra",
                vec!["infra", "app", "bare"],
            ),
            (
                "several pairs are ANDed",
                Some("region=primary, env=prod"),
                "",
                vec!["app"],
            ),
            ("a value no node has", Some("region=nowhere"), "", vec![]),
            ("a key no node has", Some("unknown-key=x"), "", vec![]),
        ];
        for (name, selector, default, want) in cases {
            let mut c = with_ns(selector);
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
        let mut c = with_ns(Some("oops"));
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
