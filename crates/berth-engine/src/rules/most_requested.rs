//! MostRequestedPriority (v1.22 NodeResourcesMostAllocated): prefer nodes whose CPU and
//! memory are most used after placing the pod (bin packing), using scoring requests (a
//! container without a request counts 100m CPU / 200 MiB).
//!
//! Per resource `requested * 100 / allocatable`; since v1.22 a request above allocatable
//! scores 100 (before it scored 0). A resource with allocatable 0 is left out of the mean
//! rather than scored 0; the mean of CPU and memory (weight 1 each) is integer division.

use crate::framework::{CycleContext, MAX_NODE_SCORE, ScorePrep, ScoreRule};
use crate::resources::clamp_i64;
use crate::rules::resource_allocation::MeanScore;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeResourcesMostAllocated";

/// The rule.
pub struct MostRequested;

/// `requested * 100 / capacity`, with requested capped at capacity. Callers leave out
/// resources whose capacity is 0.
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    // Every real capacity fits `* 100` in an i64, and an i64 division costs a fraction of
    // an i128 one. Above i64::MAX / 100 (about 92Pi) it is taken in i128, with the same
    // truncation.
    let used = requested.min(capacity);
    if used >= 0 && capacity > 0 && capacity <= i64::MAX / MAX_NODE_SCORE {
        return used * MAX_NODE_SCORE / capacity;
    }
    clamp_i64(i128::from(used) * i128::from(MAX_NODE_SCORE) / i128::from(capacity))
}

impl ScoreRule for MostRequested {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        ScorePrep::PerNode(Box::new(MeanScore::new(
            ctx.pod,
            ctx.cluster.fit_rows(),
            most_requested_score,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, Pod};
    use crate::testkit::*;

    /// A pod without containers: requests nothing at all, not even the non-zero defaults
    /// (upstream's `st.MakePod().Obj()`).
    fn empty(name: &str) -> PodBuilder {
        pod(name).with(|p: &mut Pod| p.containers.clear())
    }

    fn two_containers(name: &str, first: (i64, i64), second: (i64, i64)) -> PodBuilder {
        let c = Container {
            name: "c2".into(),
            requests: vec![("cpu".into(), second.0), ("memory".into(), second.1)],
            ..Container::default()
        };
        pod(name).req(first.0, first.1).container(c)
    }

    type Case = (
        &'static str,
        Vec<crate::model::Node>,
        Vec<Pod>,
        Pod,
        Vec<i64>,
    );

    /// Upstream's TestMostAllocatedScoringStrategy cases with the default cpu/memory weights.
    #[test]
    fn upstream_table() {
        let sized = |n: &str, cpu: i64, mem: i64| node(n).cpu(cpu).mem(mem).build();
        let cases: Vec<Case> = vec![
            (
                "nothing scheduled, nothing requested",
                vec![sized("node1", 4000, 10000), sized("node2", 4000, 10000)],
                vec![],
                empty("p").build(),
                vec![0, 0],
            ),
            (
                "nothing scheduled, resources requested, differently sized nodes",
                vec![sized("node1", 4000, 10000), sized("node2", 6000, 10000)],
                vec![],
                two_containers("p", (1000, 2000), (2000, 3000)).build(),
                vec![62, 50],
            ),
            (
                "no resources requested, pods scheduled with resources",
                vec![sized("node1", 10000, 20000), sized("node2", 10000, 20000)],
                vec![
                    pod("e1").req(3000, 0).on("node1").build(),
                    pod("e2").req(3000, 0).on("node1").build(),
                    pod("e3").req(3000, 0).on("node2").build(),
                    pod("e4").req(3000, 5000).on("node2").build(),
                ],
                empty("p").build(),
                vec![30, 42],
            ),
            (
                "resources requested, pods scheduled with resources",
                vec![sized("node1", 10000, 20000), sized("node2", 10000, 20000)],
                vec![
                    pod("e1").req(3000, 0).on("node1").build(),
                    pod("e2").req(3000, 5000).on("node2").build(),
                ],
                two_containers("p", (1000, 2000), (2000, 3000)).build(),
                vec![42, 55],
            ),
            (
                "resources requested equal node capacity",
                vec![sized("node1", 5000, 10000), sized("node2", 10000, 9000)],
                vec![],
                two_containers("p", (2000, 4000), (3000, 5000)).build(),
                vec![95, 75],
            ),
            (
                "no resources requested, pods scheduled, nonzero request for resource",
                vec![
                    sized("node1", 250, 1000 * MI),
                    sized("node2", 250, 1000 * MI),
                ],
                vec![pod("e1").on("node1").build(), pod("e2").on("node1").build()],
                pod("p").build(),
                vec![80, 30],
            ),
        ];
        run(cases);
    }

    #[test]
    fn edge_cases() {
        let cases: Vec<Case> = vec![
            (
                "zero memory capacity drops memory from the mean",
                vec![node("n").cpu(1000).mem(0).build()],
                vec![],
                pod("p").req(500, 100).build(),
                vec![50],
            ),
            (
                "zero capacity everywhere scores 0",
                vec![node("n").cpu(0).mem(0).build()],
                vec![],
                pod("p").req(500, 100).build(),
                vec![0],
            ),
            (
                "capacities near i64::MAX: two 7Ei pods and the arithmetic do not overflow",
                vec![node("n").cpu(i64::MAX).mem(i64::MAX).build()],
                vec![
                    pod("a").req(0, 7 * EI).on("n").build(),
                    pod("b").req(0, 7 * EI).on("n").build(),
                ],
                pod("p").req(i64::MAX / 2, 0).build(),
                vec![(49 + 100) / 2],
            ),
            (
                "over capacity scores 100 (v1.22)",
                vec![node("n").cpu(1000).mem(1000).build()],
                vec![],
                pod("p").req(3000, 2000).build(),
                vec![100],
            ),
            (
                "terminating pods still use their node's resources",
                vec![node("n").cpu(1000).mem(1000).build()],
                vec![pod("e").req(500, 500).terminating().on("n").build()],
                pod("p").req(0, 0).build(),
                vec![50],
            ),
            (
                "init containers count by their maximum",
                vec![node("n").cpu(1000).mem(1000).build()],
                vec![],
                pod("p").req(100, 100).init(600, 200).build(),
                vec![(60 + 20) / 2],
            ),
        ];
        run(cases);
    }

    fn run(cases: Vec<Case>) {
        for (name, nodes, running, p, want) in cases {
            let mut cl = cluster(nodes, running);
            let got: Vec<i64> = run_score(&MostRequested, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
