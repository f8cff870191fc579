//! What the resource scorers (LeastRequested, MostRequested, BalancedResourceAllocation) see
//! of a node: per resource, the requested amount including the pod, and the allocatable.

use crate::cluster::NodeInfo;
use crate::podinfo::PodInfo;

/// (requested including the pod, allocatable) for CPU and memory, using scoring requests.
/// Upstream drops a resource whose allocatable is 0 from the scorers' weighted means, so
/// such entries are left out.
#[inline]
pub fn cpu_memory(
    node: &NodeInfo,
    pod_cpu: i64,
    pod_memory: i64,
) -> impl Iterator<Item = (i64, i64)> {
    [
        (node.nonzero_milli_cpu + pod_cpu, node.allocatable.milli_cpu),
        (node.nonzero_memory + pod_memory, node.allocatable.memory),
    ]
    .into_iter()
    .filter(|(_, alloc)| *alloc != 0)
}

/// The pod's CPU and memory scoring requests, as the pod being scheduled.
pub fn pod_request(pod: &PodInfo) -> (i64, i64) {
    (pod.incoming_milli_cpu, pod.nonzero_memory)
}

/// The mean of `score(requested, allocatable)` over the resources (equal weights, integer
/// division); 0 when no resource has allocatable capacity.
#[inline]
pub fn mean_score(pairs: impl Iterator<Item = (i64, i64)>, score: impl Fn(i64, i64) -> i64) -> i64 {
    let (sum, n) = pairs.fold((0, 0), |(s, n), (req, alloc)| {
        (s + score(req, alloc), n + 1)
    });
    if n == 0 { 0 } else { sum / n }
}
