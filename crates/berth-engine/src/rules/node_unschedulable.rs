//! CheckNodeUnschedulable (v1.22 NodeUnschedulable): no pods on a cordoned node, unless the
//! pod tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::cluster::{NodeFit, NodeInfo};
use crate::framework::{
    CycleContext, Dense, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, RowTest,
};
use crate::model::{Taint, TaintEffect};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeUnschedulable";

/// The node is cordoned.
pub const REASON: &str = "node(s) were unschedulable";
/// The taint a cordoned node implicitly carries.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// The rule.
pub struct NodeUnschedulable;

struct Check<'a>(&'a [NodeFit]);

impl NodeCheck for Check<'_> {
    fn node_local(&self) -> bool {
        true
    }

    fn dense(&self) -> Dense<'_> {
        Dense::Rows(self.0, RowTest::Clear(NodeFit::UNSCHEDULABLE))
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        if node.unschedulable {
            reasons.push(REASON.into());
            return false;
        }
        true
    }
}

impl FilterRule for NodeUnschedulable {
    /// Upstream's NodeUnschedulable fails as UnschedulableAndUnresolvable.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let taint = Taint {
            key: UNSCHEDULABLE_TAINT_KEY.into(),
            value: String::new(),
            effect: TaintEffect::NoSchedule,
        };
        if ctx.pod.pod.tolerations.iter().any(|t| t.tolerates(&taint)) {
            FilterPrep::Skip
        } else {
            FilterPrep::Check(Box::new(Check(ctx.cluster.fit_rows())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TolerationOperator::{Equal, Exists};
    use crate::testkit::*;

    #[test]
    fn table() {
        let cases = vec![
            (
                "schedulable node",
                node("n").build(),
                pod("p").build(),
                vec![],
            ),
            (
                "cordoned node",
                node("n").unschedulable().build(),
                pod("p").build(),
                vec![REASON],
            ),
            (
                "pod tolerates the unschedulable taint",
                node("n").unschedulable().build(),
                pod("p")
                    .tolerate(
                        UNSCHEDULABLE_TAINT_KEY,
                        Exists,
                        "",
                        Some(TaintEffect::NoSchedule),
                    )
                    .build(),
                vec![],
            ),
            (
                "toleration of another effect does not help",
                node("n").unschedulable().build(),
                pod("p")
                    .tolerate(
                        UNSCHEDULABLE_TAINT_KEY,
                        Exists,
                        "",
                        Some(TaintEffect::NoExecute),
                    )
                    .build(),
                vec![REASON],
            ),
            (
                "toleration of everything",
                node("n").unschedulable().build(),
                pod("p").tolerate("", Exists, "", None).build(),
                vec![],
            ),
            (
                "equal toleration with a value does not match the empty taint value",
                node("n").unschedulable().build(),
                pod("p")
                    .tolerate(UNSCHEDULABLE_TAINT_KEY, Equal, "x", None)
                    .build(),
                vec![REASON],
            ),
        ];
        for (name, n, p, want) in cases {
            let mut cl = cluster(vec![n], vec![]);
            assert_eq!(
                run_filter(&NodeUnschedulable, &mut cl, p)[0].1,
                want,
                "{name}"
            );
        }
    }
}
