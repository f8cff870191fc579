//! MatchNodeSelector (v1.22 NodeAffinity filter): the pod's `nodeSelector` matches the node's
//! labels and, if the pod has required node affinity, at least one of its terms matches.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::labels::{Interner, Selector};
use crate::podinfo::{NodeTerm, any_term_matches};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeAffinity";

/// The node does not match.
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

/// The rule.
pub struct MatchNodeSelector;

/// The prepared check.
pub struct SelectorCheck<'a> {
    selector: &'a Selector,
    required: Option<&'a [NodeTerm]>,
    interner: &'a Interner,
}

impl NodeCheck for SelectorCheck<'_> {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let ok = self.selector.matches(&node.labels)
            && self.required.is_none_or(|terms| {
                any_term_matches(terms, &node.labels, node.name(), self.interner)
            });
        if !ok {
            reasons.push(REASON.into());
        }
        ok
    }
}

impl MatchNodeSelector {
    /// The check for a pod, or None when it has neither a node selector nor required affinity.
    pub fn checker<'a>(ctx: &CycleContext<'a>) -> Option<SelectorCheck<'a>> {
        let pod = ctx.pod;
        if pod.node_selector.is_empty() && pod.node_required.is_none() {
            return None;
        }
        Some(SelectorCheck {
            selector: &pod.node_selector,
            required: pod.node_required.as_deref(),
            interner: ctx.cluster.interner(),
        })
    }
}

impl FilterRule for MatchNodeSelector {
    /// Upstream's NodeAffinity fails as UnschedulableAndUnresolvable.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        FilterPrep::check_if(Self::checker(&ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::*;
    use crate::model::NodeSelectorTerm;
    use crate::testkit::*;

    fn nodes() -> Vec<crate::model::Node> {
        vec![
            node("a")
                .label("zone", "z1")
                .label("disk", "ssd")
                .label("cores", "8")
                .build(),
            node("b").label("zone", "z2").build(),
            node("c").build(),
        ]
    }

    #[test]
    fn table() {
        let by_name = NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: vec![req("metadata.name", In, &["b"])],
        };
        let cases: Vec<(&str, crate::model::Pod, Vec<&str>)> = vec![
            ("nothing asked", pod("p").build(), vec!["a", "b", "c"]),
            (
                "node selector",
                pod("p").node_selector("zone", "z1").build(),
                vec!["a"],
            ),
            (
                "node selector on a missing label",
                pod("p").node_selector("gpu", "yes").build(),
                vec![],
            ),
            (
                "selector and affinity both apply",
                pod("p")
                    .node_selector("zone", "z1")
                    .node_affinity(vec![node_term(vec![req("disk", In, &["hdd"])])])
                    .build(),
                vec![],
            ),
            (
                "terms are ORed",
                pod("p")
                    .node_affinity(vec![
                        node_term(vec![req("zone", In, &["z1"])]),
                        node_term(vec![req("zone", In, &["z2"])]),
                    ])
                    .build(),
                vec!["a", "b"],
            ),
            (
                "expressions within a term are ANDed",
                pod("p")
                    .node_affinity(vec![node_term(vec![
                        req("zone", In, &["z1", "z2"]),
                        req("disk", Exists, &[]),
                    ])])
                    .build(),
                vec!["a"],
            ),
            (
                "NotIn matches nodes without the label",
                pod("p")
                    .node_affinity(vec![node_term(vec![req("zone", NotIn, &["z1"])])])
                    .build(),
                vec!["b", "c"],
            ),
            (
                "DoesNotExist",
                pod("p")
                    .node_affinity(vec![node_term(vec![req("zone", DoesNotExist, &[])])])
                    .build(),
                vec!["c"],
            ),
            (
                "Gt compares integers",
                pod("p")
                    .node_affinity(vec![node_term(vec![req("cores", Gt, &["4"])])])
                    .build(),
                vec!["a"],
            ),
            (
                "Lt compares integers",
                pod("p")
                    .node_affinity(vec![node_term(vec![req("cores", Lt, &["4"])])])
                    .build(),
                vec![],
            ),
            (
                "Gt with a non-integer bound matches nothing",
                pod("p")
                    .node_affinity(vec![node_term(vec![req("cores", Gt, &["x"])])])
                    .build(),
                vec![],
            ),
            (
                "matchFields on metadata.name",
                pod("p").node_affinity(vec![by_name]).build(),
                vec!["b"],
            ),
            (
                "an empty term matches nothing",
                pod("p").node_affinity(vec![node_term(vec![])]).build(),
                vec![],
            ),
            (
                "no terms at all match nothing",
                pod("p").node_affinity(vec![]).build(),
                vec![],
            ),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(nodes(), vec![]);
            let got = run_filter(&MatchNodeSelector, &mut cl, p);
            assert_eq!(passing(&got), want, "{name}");
            assert!(
                got.iter()
                    .all(|(_, r)| r.is_empty() || r == &vec![REASON.to_string()])
            );
        }
    }
}
