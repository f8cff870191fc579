//! BalancedResourceAllocation (v1.22 NodeResourcesBalancedAllocation): prefer nodes whose CPU
//! and memory use stay balanced after placing the pod. v1.22 scores (1 - std) x 100 where std
//! is the standard deviation of the used fractions: |cpu - memory| / 2 for two resources, 0
//! for one. Each fraction is clamped at 1; a resource with zero capacity is left out.
//!
//! Unlike Least/MostRequested, v1.22 reads the requests as written (`useRequested: true`):
//! the node's summed requests and the pod's own, with no 100m / 200 MiB default for a
//! container that requests nothing.

use crate::cluster::{Cluster, NodeFit, NodeId, NodeInfo};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::rules::resource_allocation::PodRequest;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeResourcesBalancedAllocation";

/// The rule.
pub struct BalancedResourceAllocation;

struct Score<'a> {
    request: PodRequest,
    rows: &'a [NodeFit],
}

/// (1 - std) x 100 for the node's CPU and memory usage (`PodRequest::on`).
#[inline]
fn balance(usage: [Option<(i64, i64)>; 2]) -> i64 {
    let fraction = |(req, alloc): (i64, i64)| (req as f64 / alloc as f64).min(1.0);
    let std = match usage {
        [Some(cpu), Some(memory)] => (fraction(cpu) - fraction(memory)).abs() / 2.0,
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl NodeScore for Score<'_> {
    /// The score is already in 0..=MAX_NODE_SCORE; upstream's plugin has no NormalizeScore.
    fn normalizes_to_itself(&self) -> bool {
        true
    }

    /// Reusable across a class while the node is unchanged: The node's requests and allocatable, and the pod's.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        balance(self.request.on(node))
    }

    #[inline]
    fn score_at(&self, slot: usize, node: &NodeInfo) -> i64 {
        match self.rows.get(slot) {
            Some(row) => balance(self.request.on_row(row)),
            None => self.score(node),
        }
    }

    fn score_batch(&self, cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = match self.rows.get(id.0 as usize) {
                Some(row) => balance(self.request.on_row(row)),
                None => self.score(cluster.node(*id)),
            };
        }
    }
}

impl ScoreRule for BalancedResourceAllocation {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        ScorePrep::PerNode(Box::new(Score {
            request: PodRequest::requested(ctx.pod),
            rows: ctx.cluster.fit_rows(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let cases = vec![
            (
                "perfectly balanced",
                node("n").cpu(4000).mem(4000).build(),
                pod("p").req(2000, 2000).build(),
                100,
            ),
            (
                "cpu 3/4, memory 1/4: std 1/4",
                node("n").cpu(4000).mem(4000).build(),
                pod("p").req(3000, 1000).build(),
                75,
            ),
            (
                "cpu 0.6, memory 0.5",
                node("n").cpu(10000).mem(20000).build(),
                pod("p").req(6000, 10000).build(),
                95,
            ),
            (
                "truncates toward zero",
                node("n").cpu(3000).mem(3000).build(),
                pod("p").req(1000, 2000).build(),
                83,
            ),
            (
                "fractions over 1 clamp",
                node("n").cpu(1000).mem(1000).build(),
                pod("p").req(3000, 1000).build(),
                100,
            ),
            (
                "cpu 1, memory 0",
                node("n").cpu(1000).mem(1000).build(),
                pod("p").req(1000, 0).build(),
                50,
            ),
            (
                "no memory request counts 0, not 200 MiB: cpu 1/4, memory 0",
                node("n").cpu(4000).mem(256 * MI).build(),
                pod("p").res("cpu", 1000).build(),
                87,
            ),
            (
                "a zero-capacity resource is left out",
                node("n").cpu(0).mem(1000).build(),
                pod("p").req(0, 700).build(),
                100,
            ),
        ];
        for (name, n, p, want) in cases {
            let mut cl = cluster(vec![n], vec![]);
            assert_eq!(
                run_score(&BalancedResourceAllocation, &mut cl, p)[0].1,
                want,
                "{name}"
            );
        }
    }

    /// The differential run's reproduction: a running pod requesting cpu only counts no
    /// memory on node a, so a is half used in cpu and empty in memory (75), while the empty
    /// small node b is a quarter used in cpu (87). With non-zero defaults a would win.
    #[test]
    fn requests_as_written_decide() {
        let mut cl = cluster(
            vec![
                node("a").cpu(4000).mem(4096 * MI).build(),
                node("b").cpu(4000).mem(256 * MI).build(),
            ],
            vec![pod("running").res("cpu", 1000).on("a").build()],
        );
        let mut got = run_score(
            &BalancedResourceAllocation,
            &mut cl,
            pod("p").res("cpu", 1000).build(),
        );
        got.sort();
        assert_eq!(got, vec![("a".to_string(), 75), ("b".to_string(), 87)]);
    }
}
