//! What the resource scorers (LeastRequested, MostRequested, BalancedResourceAllocation) see
//! of a node: per resource, the requested amount including the pod, and the allocatable.

use crate::cluster::NodeInfo;
use crate::podinfo::PodInfo;

/// (requested including the pod, allocatable) for CPU and memory, using scoring requests.
/// Upstream drops a resource whose allocatable is 0 from the scorers' weighted means, so such
/// an entry is None.
#[inline]
pub fn cpu_memory(node: &NodeInfo, pod_cpu: i64, pod_memory: i64) -> [Option<(i64, i64)>; 2] {
    let usage =
        |requested: i64, allocatable: i64| (allocatable != 0).then_some((requested, allocatable));
    [
        usage(node.nonzero_milli_cpu + pod_cpu, node.allocatable.milli_cpu),
        usage(node.nonzero_memory + pod_memory, node.allocatable.memory),
    ]
}

/// The pod's CPU and memory scoring requests, as the pod being scheduled.
pub fn pod_request(pod: &PodInfo) -> (i64, i64) {
    (pod.incoming_milli_cpu, pod.nonzero_memory)
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
