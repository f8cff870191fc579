//! NodeAffinityPriority (v1.22 NodeAffinity score): the sum of the weights of the pod's
//! preferred node-affinity terms a node matches, scaled so the best node gets 100.

use crate::cluster::{NodeId, NodeInfo};
use crate::framework::{
    CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule, normalize_reduce,
};
use crate::labels::Interner;
use crate::podinfo::NodeTerm;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::node_selector::UPSTREAM_PLUGIN;

/// The rule.
pub struct NodeAffinityPriority;

struct Score<'a> {
    terms: &'a [(i32, NodeTerm)],
    interner: &'a Interner,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The node's labels and the pod's preferred terms.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    fn score(&self, node: &NodeInfo) -> i64 {
        self.terms
            .iter()
            .filter(|(_, t)| t.matches(&node.labels, node.name(), self.interner))
            .map(|(w, _)| i64::from(*w))
            .sum()
    }

    fn normalize(&self, _nodes: &[NodeId], scores: &mut [i64]) {
        normalize_reduce(scores, MAX_NODE_SCORE, false);
    }
}

impl ScoreRule for NodeAffinityPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        if ctx.pod.node_preferred.is_empty() {
            return ScorePrep::Constant(0);
        }
        ScorePrep::PerNode(Box::new(Score {
            terms: &ctx.pod.node_preferred,
            interner: ctx.cluster.interner(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let nodes = || {
            vec![
                node("a").label("zone", "z1").label("disk", "ssd").build(),
                node("b").label("zone", "z1").build(),
                node("c").build(),
            ]
        };
        let cases = vec![
            ("no preference", pod("p").build(), vec![0, 0, 0]),
            (
                "weights add up, best gets 100",
                pod("p")
                    .prefer_node(2, node_term(vec![req("zone", In, &["z1"])]))
                    .prefer_node(6, node_term(vec![req("disk", In, &["ssd"])]))
                    .build(),
                vec![100, 25, 0],
            ),
            (
                "matches nothing",
                pod("p")
                    .prefer_node(5, node_term(vec![req("zone", In, &["z9"])]))
                    .build(),
                vec![0, 0, 0],
            ),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(nodes(), vec![]);
            let got: Vec<i64> = run_score(&NodeAffinityPriority, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
