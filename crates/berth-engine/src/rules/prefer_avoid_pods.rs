//! NodePreferAvoidPodsPriority (v1.22 NodePreferAvoidPods): 0 on a node whose
//! `scheduler.alpha.kubernetes.io/preferAvoidPods` annotation lists the pod's controlling
//! ReplicationController or ReplicaSet, else 100.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodePreferAvoidPods";

/// The rule.
pub struct NodePreferAvoidPods;

struct Score<'a> {
    kind: &'a str,
    uid: &'a str,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The node's annotation and the pod's controller.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        let avoided = node
            .prefer_avoid
            .iter()
            .any(|(k, u)| **k == *self.kind && **u == *self.uid);
        if avoided { 0 } else { MAX_NODE_SCORE }
    }
}

impl ScoreRule for NodePreferAvoidPods {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        match ctx.pod.pod.controller() {
            // With no node avoiding any controller, every node scores the maximum.
            Some(c)
                if (c.kind == "ReplicationController" || c.kind == "ReplicaSet")
                    && ctx.cluster.avoiding_nodes() > 0 =>
            {
                ScorePrep::PerNode(Box::new(Score {
                    kind: &c.kind,
                    uid: &c.uid,
                }))
            }
            _ => ScorePrep::Constant(MAX_NODE_SCORE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let nodes = || {
            vec![
                node("avoid").avoid_pods_of("ReplicaSet", "rs-1").build(),
                node("plain").build(),
                node("other")
                    .avoid_pods_of("ReplicationController", "rc-1")
                    .build(),
            ]
        };
        let cases = vec![
            (
                "owned by the listed ReplicaSet",
                pod("p").owner("ReplicaSet", "web", "rs-1").build(),
                vec![0, 100, 100],
            ),
            (
                "another ReplicaSet",
                pod("p").owner("ReplicaSet", "api", "rs-2").build(),
                vec![100, 100, 100],
            ),
            (
                "same uid but a StatefulSet is ignored",
                pod("p").owner("StatefulSet", "web", "rs-1").build(),
                vec![100, 100, 100],
            ),
            ("no controller", pod("p").build(), vec![100, 100, 100]),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(nodes(), vec![]);
            let got: Vec<i64> = run_score(&NodePreferAvoidPods, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// With no node avoiding any controller the rule is one constant; the count behind
    /// that follows nodes gaining, losing and taking the annotation away.
    #[test]
    fn constant_while_no_node_avoids() {
        let pod_of_rs = || pod("p").owner("ReplicaSet", "web", "rs-1").build();
        let is_constant = |cl: &mut crate::cluster::Cluster| {
            let info = cl.compile_pod(pod_of_rs());
            let ctx = CycleContext {
                cluster: cl,
                pod: &info,
                nominated: false,
            };
            matches!(NodePreferAvoidPods.prepare(ctx), ScorePrep::Constant(100))
        };
        let mut cl = cluster(vec![node("a").build(), node("b").build()], vec![]);
        assert!(is_constant(&mut cl));
        cl.upsert_node(node("a").avoid_pods_of("ReplicaSet", "rs-1").build())
            .unwrap();
        assert_eq!(cl.avoiding_nodes(), 1);
        assert!(!is_constant(&mut cl));
        let got: Vec<i64> = run_score(&NodePreferAvoidPods, &mut cl, pod_of_rs())
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(got, vec![0, 100]);
        cl.upsert_node(node("a").build()).unwrap();
        assert!(is_constant(&mut cl));
        cl.upsert_node(node("b").avoid_pods_of("ReplicaSet", "rs-1").build())
            .unwrap();
        cl.remove_node("b");
        assert_eq!(cl.avoiding_nodes(), 0);
        assert!(is_constant(&mut cl));
    }
}
