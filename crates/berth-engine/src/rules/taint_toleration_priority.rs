//! TaintTolerationPriority (v1.22 TaintToleration score): prefer nodes with fewer
//! PreferNoSchedule taints the pod does not tolerate. Only tolerations with effect
//! PreferNoSchedule or no effect count.

use crate::cluster::{Cluster, NodeFit, NodeId, NodeInfo};
use crate::framework::{
    CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule, normalize_reduce,
};
use crate::model::{TaintEffect, Toleration};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::taints::UPSTREAM_PLUGIN;

/// The rule.
pub struct TaintTolerationPriority;

struct Score<'a> {
    tolerations: Vec<&'a Toleration>,
    rows: &'a [NodeFit],
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The node's taints and the pod's tolerations.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        node.taints()
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
            .filter(|t| !self.tolerations.iter().any(|tol| tol.tolerates(t)))
            .count() as i64
    }

    /// A node without PreferNoSchedule taints counts none.
    #[inline]
    fn score_at(&self, slot: usize, node: &NodeInfo) -> i64 {
        match self.rows.get(slot) {
            Some(row) if !row.any(NodeFit::SOFT_TAINTS) => 0,
            _ => self.score(node),
        }
    }

    fn score_batch(&self, cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = match self.rows.get(id.0 as usize) {
                Some(row) if !row.any(NodeFit::SOFT_TAINTS) => 0,
                _ => self.score(cluster.node(*id)),
            };
        }
    }

    fn normalize(&self, _nodes: &[NodeId], scores: &mut [i64]) {
        normalize_reduce(scores, MAX_NODE_SCORE, true);
    }
}

impl ScoreRule for TaintTolerationPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        // With no PreferNoSchedule taint anywhere every node counts none, which upstream's
        // reversed normalisation turns into the maximum for every node.
        if ctx.cluster.soft_tainted_nodes() == 0 {
            return ScorePrep::Uniform {
                raw: 0,
                normalized: MAX_NODE_SCORE,
            };
        }
        let tolerations = ctx
            .pod
            .pod
            .tolerations
            .iter()
            .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
            .collect();
        ScorePrep::PerNode(Box::new(Score {
            tolerations,
            rows: ctx.cluster.fit_rows(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TolerationOperator::Exists;
    use crate::testkit::*;
    use TaintEffect::*;

    #[test]
    fn table() {
        let nodes = || {
            vec![
                node("clean").build(),
                node("one").taint("a", "1", PreferNoSchedule).build(),
                node("two")
                    .taint("a", "1", PreferNoSchedule)
                    .taint("b", "2", PreferNoSchedule)
                    .build(),
                node("hard").taint("c", "3", NoSchedule).build(),
            ]
        };
        let cases = vec![
            (
                "fewer untolerated taints score higher",
                pod("p").build(),
                vec![100, 50, 0, 100],
            ),
            (
                "tolerated taints do not count",
                pod("p")
                    .tolerate("a", Exists, "", Some(PreferNoSchedule))
                    .build(),
                vec![100, 100, 0, 100],
            ),
            (
                "a toleration with no effect counts",
                pod("p").tolerate("b", Exists, "", None).build(),
                vec![100, 0, 0, 100],
            ),
            (
                "a NoSchedule toleration does not count",
                pod("p").tolerate("a", Exists, "", Some(NoSchedule)).build(),
                vec![100, 50, 0, 100],
            ),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(nodes(), vec![]);
            let got: Vec<i64> = run_score(&TaintTolerationPriority, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// With no PreferNoSchedule taint on any node every node scores the maximum, without
    /// asking any node; a node tainted later makes the rule count again.
    #[test]
    fn no_soft_taint_anywhere_scores_every_node_the_maximum() {
        let mut cl = cluster(
            vec![
                node("clean").build(),
                node("hard").taint("c", "3", NoSchedule).build(),
            ],
            vec![],
        );
        let info = cl.compile_pod(pod("p").build());
        let ctx = CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: false,
        };
        assert!(matches!(
            TaintTolerationPriority.prepare(ctx),
            ScorePrep::Uniform {
                raw: 0,
                normalized: MAX_NODE_SCORE
            }
        ));
        cl.upsert_node(node("clean").taint("a", "1", PreferNoSchedule).build())
            .unwrap();
        assert_eq!(cl.soft_tainted_nodes(), 1);
        let got: Vec<i64> = run_score(&TaintTolerationPriority, &mut cl, pod("p").build())
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(got, vec![0, 100]);
        cl.remove_node("clean");
        assert_eq!(cl.soft_tainted_nodes(), 0);
    }
}
