//! LeastRequestedPriority (v1.22 NodeResourcesLeastAllocated): prefer nodes with more free
//! CPU and memory after placing the pod, using scoring requests (non-zero defaults).

use crate::framework::{CycleContext, MAX_NODE_SCORE, ScorePrep, ScoreRule};
use crate::resources::clamp_i64;
use crate::rules::resource_allocation::MeanScore;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeResourcesLeastAllocated";

/// The rule.
pub struct LeastRequested;

/// `(capacity - requested) * 100 / capacity`; 0 when capacity is 0 or overcommitted.
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    // Every real capacity fits `* 100` in an i64, and an i64 division costs a fraction of
    // an i128 one (this runs for every node a pod is scored on). Above i64::MAX / 100
    // (about 92Pi) it is taken in i128, with the same truncation.
    if requested >= 0 && capacity <= i64::MAX / MAX_NODE_SCORE {
        return (capacity - requested) * MAX_NODE_SCORE / capacity;
    }
    clamp_i64(
        (i128::from(capacity) - i128::from(requested)) * i128::from(MAX_NODE_SCORE)
            / i128::from(capacity),
    )
}

impl ScoreRule for LeastRequested {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        ScorePrep::PerNode(Box::new(MeanScore::new(
            ctx.pod,
            ctx.cluster.fit_rows(),
            least_requested_score,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    /// Both sides of the i64 shortcut's bound agree with the formula taken in i128.
    #[test]
    fn the_i64_shortcut_agrees_with_i128_at_its_bound() {
        let bound = i64::MAX / MAX_NODE_SCORE;
        for capacity in [1, 3, 1000, bound - 1, bound, bound + 1, i64::MAX] {
            for requested in [0, 1, capacity / 3, capacity - 1, capacity] {
                let wide = (i128::from(capacity) - i128::from(requested))
                    * i128::from(MAX_NODE_SCORE)
                    / i128::from(capacity);
                assert_eq!(
                    i128::from(least_requested_score(requested, capacity)),
                    wide,
                    "least: {requested} of {capacity}"
                );
                let wide =
                    i128::from(requested) * i128::from(MAX_NODE_SCORE) / i128::from(capacity);
                assert_eq!(
                    i128::from(crate::rules::most_requested::most_requested_score(
                        requested, capacity
                    )),
                    wide,
                    "most: {requested} of {capacity}"
                );
            }
        }
    }

    #[test]
    fn table() {
        // Upstream's own example: node 4000m/10000 and 6000m/10000 with a pod of 3000m/5000.
        let cases = vec![
            (
                "empty node, best-effort pod counts 100m/200Mi",
                node("n").cpu(1000).mem(1000 * MI).build(),
                vec![],
                pod("p").build(),
                (90 + 80) / 2,
            ),
            (
                "half used",
                node("n").cpu(4000).mem(10000).build(),
                vec![],
                pod("p").req(2000, 5000).build(),
                50,
            ),
            (
                "running pods count",
                node("n").cpu(4000).mem(10000).build(),
                vec![pod("r").req(1000, 2500).on("n").build()],
                pod("p").req(1000, 2500).build(),
                50,
            ),
            (
                "capacities near i64::MAX: two 7Ei pods and the arithmetic do not overflow",
                node("n").cpu(i64::MAX).mem(i64::MAX).build(),
                vec![
                    pod("a").req(0, 7 * EI).on("n").build(),
                    pod("b").req(0, 7 * EI).on("n").build(),
                ],
                pod("p").req(i64::MAX / 2, 0).build(),
                50 / 2,
            ),
            (
                "zero capacity everywhere scores 0",
                node("n").cpu(0).mem(0).build(),
                vec![],
                pod("p").req(0, 0).build(),
                0,
            ),
            (
                "a zero-capacity resource is left out of the mean",
                node("n").cpu(0).mem(1000).build(),
                vec![],
                pod("p").req(0, 500).build(),
                50,
            ),
            (
                "cpu overhead counts in whole cores for the incoming pod (v1.22 quirk)",
                node("n").cpu(1000).mem(1000).build(),
                vec![],
                pod("p").req(0, 0).overhead("cpu", 250).build(),
                (99 + 100) / 2,
            ),
            (
                "overcommitted scores 0",
                node("n").cpu(1000).mem(1000).build(),
                vec![],
                pod("p").req(2000, 2000).build(),
                0,
            ),
            (
                "explicit zero request stays zero",
                node("n").cpu(1000).mem(1000).build(),
                vec![],
                pod("p").req(0, 0).build(),
                100,
            ),
        ];
        for (name, n, running, p, want) in cases {
            let mut cl = cluster(vec![n], running);
            assert_eq!(run_score(&LeastRequested, &mut cl, p)[0].1, want, "{name}");
        }
    }
}
