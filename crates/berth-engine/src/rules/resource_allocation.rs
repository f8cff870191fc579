//! What the resource scorers (LeastRequested, MostRequested, BalancedResourceAllocation) see
//! of a node: per resource, the requested amount including the pod, and the allocatable.

use crate::cluster::NodeInfo;
use crate::framework::NodeScore;
use crate::podinfo::PodInfo;

/// The pod's CPU and memory scoring requests, as the pod being scheduled.
#[derive(Debug, Clone, Copy)]
pub struct PodRequest {
    cpu: i64,
    memory: i64,
}

impl PodRequest {
    /// The request of the pod being scheduled.
    pub fn of(pod: &PodInfo) -> Self {
        PodRequest {
            cpu: pod.incoming_milli_cpu,
            memory: pod.nonzero_memory,
        }
    }

    /// (requested including the pod, allocatable) for CPU and memory on `node`. Upstream
    /// drops a resource whose allocatable is 0 from the scorers' weighted means, so such an
    /// entry is None.
    #[inline]
    pub fn on(&self, node: &NodeInfo) -> [Option<(i64, i64)>; 2] {
        let usage = |requested: i64, allocatable: i64| {
            (allocatable != 0).then_some((requested, allocatable))
        };
        [
            usage(
                node.nonzero_milli_cpu + self.cpu,
                node.allocatable.milli_cpu,
            ),
            usage(node.nonzero_memory + self.memory, node.allocatable.memory),
        ]
    }
}

/// The mean of `score(requested, allocatable)` over the resources present (equal weights,
/// integer division); 0 when no resource has allocatable capacity.
#[inline]
pub fn mean_score(usage: [Option<(i64, i64)>; 2], score: impl Fn(i64, i64) -> i64) -> i64 {
    match usage {
        [Some((r1, a1)), Some((r2, a2))] => (score(r1, a1) + score(r2, a2)) / 2,
        [Some((r, a)), None] | [None, Some((r, a))] => score(r, a),
        [None, None] => 0,
    }
}

/// A scorer averaging a per-resource score over CPU and memory (LeastRequested,
/// MostRequested).
pub struct MeanScore {
    request: PodRequest,
    per_resource: fn(i64, i64) -> i64,
}

impl MeanScore {
    /// The scorer for the pod being scheduled.
    pub fn new(pod: &PodInfo, per_resource: fn(i64, i64) -> i64) -> Self {
        MeanScore {
            request: PodRequest::of(pod),
            per_resource,
        }
    }
}

impl NodeScore for MeanScore {
    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        mean_score(self.request.on(node), self.per_resource)
    }
}
