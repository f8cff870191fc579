//! What the resource scorers (LeastRequested, MostRequested, BalancedResourceAllocation) see
//! of a node: per resource, the requested amount including the pod, and the allocatable.

use crate::cluster::{Cluster, NodeFit, NodeId, NodeInfo};
use crate::framework::{NodeScore, Reuse};
use crate::podinfo::PodInfo;

/// The pod's CPU and memory requests, as the pod being scheduled, and which node aggregate
/// they join.
#[derive(Debug, Clone, Copy)]
pub struct PodRequest {
    cpu: i64,
    memory: i64,
    /// Upstream's `useRequested`: the requests as written (node `requested`), not the
    /// scoring requests with non-zero defaults (node `nonzero_*`).
    use_requested: bool,
}

impl PodRequest {
    /// The scoring request (non-zero defaults) of the pod being scheduled: LeastRequested,
    /// MostRequested.
    pub fn of(pod: &PodInfo) -> Self {
        PodRequest {
            cpu: pod.incoming_milli_cpu,
            memory: pod.nonzero_memory,
            use_requested: false,
        }
    }

    /// The request as written (no defaults for containers without one) of the pod being
    /// scheduled, against the nodes' summed requests: v1.22's BalancedAllocation
    /// (`useRequested: true`).
    pub fn requested(pod: &PodInfo) -> Self {
        PodRequest {
            cpu: pod.incoming_requested_milli_cpu,
            memory: pod.request.memory,
            use_requested: true,
        }
    }

    /// (requested including the pod, allocatable) for CPU and memory on `node`. Upstream
    /// drops a resource whose allocatable is 0 from the scorers' weighted means, so such an
    /// entry is None.
    #[inline]
    pub fn on(&self, node: &NodeInfo) -> [Option<(i64, i64)>; 2] {
        let used = if self.use_requested {
            (node.requested.milli_cpu, node.requested.memory)
        } else {
            (node.nonzero_milli_cpu, node.nonzero_memory)
        };
        self.usage(used, (node.allocatable.milli_cpu, node.allocatable.memory))
    }

    /// [`PodRequest::on`] the node whose row is `row`.
    #[inline]
    pub fn on_row(&self, row: &NodeFit) -> [Option<(i64, i64)>; 2] {
        let used = if self.use_requested {
            (row.requested_milli_cpu, row.requested_memory)
        } else {
            (row.nonzero_milli_cpu, row.nonzero_memory)
        };
        self.usage(used, (row.allocatable_milli_cpu, row.allocatable_memory))
    }

    #[inline]
    fn usage(
        &self,
        (cpu, memory): (i64, i64),
        (allocatable_cpu, allocatable_memory): (i64, i64),
    ) -> [Option<(i64, i64)>; 2] {
        let usage = |requested: i64, allocatable: i64| {
            (allocatable != 0).then_some((requested, allocatable))
        };
        [
            usage(cpu.saturating_add(self.cpu), allocatable_cpu),
            usage(memory.saturating_add(self.memory), allocatable_memory),
        ]
    }
}

/// The mean of `score(requested, allocatable)` over the resources present (equal weights,
/// integer division); 0 when no resource has allocatable capacity.
// Always: the walk calls it for every feasible node in LeastRequested's and
// MostRequested's batch loops; left to the compiler it stayed out of line, and inlining it
// made `basic` 5% faster.
#[inline(always)]
pub fn mean_score(usage: [Option<(i64, i64)>; 2], score: impl Fn(i64, i64) -> i64) -> i64 {
    match usage {
        [Some((r1, a1)), Some((r2, a2))] => (score(r1, a1) + score(r2, a2)) / 2,
        [Some((r, a)), None] | [None, Some((r, a))] => score(r, a),
        [None, None] => 0,
    }
}

/// A scorer averaging a per-resource score over CPU and memory (LeastRequested,
/// MostRequested).
pub struct MeanScore<'a, F> {
    request: PodRequest,
    rows: &'a [NodeFit],
    per_resource: F,
}

impl<'a, F: Fn(i64, i64) -> i64 + Copy> MeanScore<'a, F> {
    /// The scorer for the pod being scheduled, on the nodes whose rows are `rows`.
    pub fn new(pod: &PodInfo, rows: &'a [NodeFit], per_resource: F) -> Self {
        MeanScore {
            request: PodRequest::of(pod),
            rows,
            per_resource,
        }
    }
}

impl<F: Fn(i64, i64) -> i64 + Copy + Send + Sync> NodeScore for MeanScore<'_, F> {
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
        mean_score(self.request.on(node), self.per_resource)
    }

    #[inline]
    fn score_at(&self, slot: usize, node: &NodeInfo) -> i64 {
        match self.rows.get(slot) {
            Some(row) => mean_score(self.request.on_row(row), self.per_resource),
            None => self.score(node),
        }
    }

    fn score_batch(&self, cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = match self.rows.get(id.0 as usize) {
                Some(row) => mean_score(self.request.on_row(row), self.per_resource),
                None => self.score(cluster.node(*id)),
            };
        }
    }
}
