//! PodToleratesNodeTaints (v1.22 TaintToleration filter) and PodToleratesNodeNoExecuteTaints
//! (v1.12): every NoSchedule/NoExecute taint (or only NoExecute ones) must be tolerated.

use crate::cluster::{NodeFit, NodeInfo};
use crate::framework::{
    CycleContext, Dense, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, RowTest,
};
use crate::model::{TaintEffect, Toleration};

/// The kube-scheduler framework plugin that serves PodToleratesNodeTaints (v1.22's legacy
/// registry); PodToleratesNodeNoExecuteTaints has none (v1.22 dropped it).
pub const UPSTREAM_PLUGIN: &str = "TaintToleration";

/// Builds the reason for an untolerated taint, in upstream's words.
pub fn reason(key: &str, value: &str) -> String {
    format!("node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate")
}

/// The rule.
pub struct PodToleratesNodeTaints {
    no_execute_only: bool,
}

impl PodToleratesNodeTaints {
    /// NoSchedule and NoExecute taints (PodToleratesNodeTaints).
    pub fn all() -> Self {
        PodToleratesNodeTaints {
            no_execute_only: false,
        }
    }
    /// Only NoExecute taints (PodToleratesNodeNoExecuteTaints).
    pub fn no_execute_only() -> Self {
        PodToleratesNodeTaints {
            no_execute_only: true,
        }
    }
}

struct Check<'a> {
    tolerations: &'a [Toleration],
    no_execute_only: bool,
    rows: &'a [NodeFit],
}

impl NodeCheck for Check<'_> {
    fn node_local(&self) -> bool {
        true
    }

    /// A node without NoSchedule or NoExecute taints passes.
    fn dense(&self) -> Dense<'_> {
        Dense::Rows(self.rows, RowTest::Clear(NodeFit::HARD_TAINTS))
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let untolerated = node.taints().iter().find(|t| {
            let applies = match t.effect {
                TaintEffect::NoExecute => true,
                TaintEffect::NoSchedule => !self.no_execute_only,
                TaintEffect::PreferNoSchedule => false,
            };
            applies && !self.tolerations.iter().any(|tol| tol.tolerates(t))
        });
        match untolerated {
            Some(t) => {
                reasons.push(reason(&t.key, &t.value).into());
                false
            }
            None => true,
        }
    }
}

impl FilterRule for PodToleratesNodeTaints {
    /// Upstream's TaintToleration fails as UnschedulableAndUnresolvable: evicting pods does not remove a taint.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        FilterPrep::Check(Box::new(Check {
            tolerations: &ctx.pod.pod.tolerations,
            no_execute_only: self.no_execute_only,
            rows: ctx.cluster.fit_rows(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TolerationOperator::{Equal, Exists};
    use crate::testkit::*;
    use TaintEffect::*;

    #[test]
    fn table() {
        let cases = vec![
            (
                "no taints",
                PodToleratesNodeTaints::all(),
                node("n").build(),
                pod("p").build(),
                vec![],
            ),
            (
                "untolerated NoSchedule",
                PodToleratesNodeTaints::all(),
                node("n").taint("dedicated", "infra", NoSchedule).build(),
                pod("p").build(),
                vec![reason("dedicated", "infra")],
            ),
            (
                "empty value renders as {key: }",
                PodToleratesNodeTaints::all(),
                node("n").taint("gpu", "", NoExecute).build(),
                pod("p").build(),
                vec!["node(s) had taint {gpu: }, that the pod didn't tolerate".to_string()],
            ),
            (
                "PreferNoSchedule never filters",
                PodToleratesNodeTaints::all(),
                node("n").taint("soft", "x", PreferNoSchedule).build(),
                pod("p").build(),
                vec![],
            ),
            (
                "tolerated by key and value",
                PodToleratesNodeTaints::all(),
                node("n").taint("dedicated", "infra", NoSchedule).build(),
                pod("p")
                    .tolerate("dedicated", Equal, "infra", Some(NoSchedule))
                    .build(),
                vec![],
            ),
            (
                "value mismatch",
                PodToleratesNodeTaints::all(),
                node("n").taint("dedicated", "infra", NoSchedule).build(),
                pod("p").tolerate("dedicated", Equal, "web", None).build(),
                vec![reason("dedicated", "infra")],
            ),
            (
                "exists with no effect tolerates both effects",
                PodToleratesNodeTaints::all(),
                node("n")
                    .taint("a", "1", NoSchedule)
                    .taint("a", "2", NoExecute)
                    .build(),
                pod("p").tolerate("a", Exists, "", None).build(),
                vec![],
            ),
            (
                "first untolerated taint is reported",
                PodToleratesNodeTaints::all(),
                node("n")
                    .taint("a", "1", NoSchedule)
                    .taint("b", "2", NoSchedule)
                    .build(),
                pod("p").tolerate("a", Exists, "", None).build(),
                vec![reason("b", "2")],
            ),
            (
                "no-execute variant ignores NoSchedule",
                PodToleratesNodeTaints::no_execute_only(),
                node("n").taint("a", "1", NoSchedule).build(),
                pod("p").build(),
                vec![],
            ),
            (
                "no-execute variant checks NoExecute",
                PodToleratesNodeTaints::no_execute_only(),
                node("n").taint("a", "1", NoExecute).build(),
                pod("p").build(),
                vec![reason("a", "1")],
            ),
        ];
        for (name, rule, n, p, want) in cases {
            let mut cl = cluster(vec![n], vec![]);
            assert_eq!(run_filter(&rule, &mut cl, p)[0].1, want, "{name}");
        }
    }
}
