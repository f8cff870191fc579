//! RequestedToCapacityRatioPriority (policy argument `requestedToCapacityRatioArguments`,
//! v1.22 RequestedToCapacityRatio): score each resource's utilization after placing the pod
//! through a piecewise-linear shape, then take a weighted mean.
//!
//! v1.22 details:
//! - shape scores are given 0..10 and scaled by 10; utilizations are kept;
//! - utilization is `requested * 100 / allocatable` (floor; v1.20 and earlier rounded up);
//!   a request above allocatable uses the shape's value at 100;
//! - the shape: at or below the first point its score, beyond the last point the last score,
//!   in between linear interpolation with integer division;
//! - CPU and memory use scoring requests (100m / 200 MiB for containers without one),
//!   ephemeral storage and extended resources plain requests; an extended resource the pod
//!   does not request, and any resource with allocatable 0, is left out;
//! - only resources scoring above 0 enter the mean, `round(sum(score * weight) / sum(weight))`;
//!   0 when none does.

use berth_policy::{ResourceWeight, ShapePoint};

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, clamp_i64};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "RequestedToCapacityRatio";

/// The largest score of a shape point as written in a policy.
const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
/// Utilization in percent at full use.
const MAX_UTILIZATION: i64 = 100;

/// The rule.
pub struct RequestedToCapacityRatio {
    /// (utilization, score scaled to 0..=100), in increasing utilization.
    shape: Vec<(i64, i64)>,
    /// (resource name, weight); each name once, the last weight given winning.
    resources: Vec<(String, i64)>,
}

impl RequestedToCapacityRatio {
    /// A rule with this shape and these resource weights, as the policy gives them.
    pub fn new(shape: &[ShapePoint], resources: &[ResourceWeight]) -> Self {
        let scale = MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE;
        let mut weights: Vec<(String, i64)> = Vec::with_capacity(resources.len());
        for r in resources {
            match weights.iter_mut().find(|(n, _)| *n == r.name) {
                Some(entry) => entry.1 = r.weight,
                None => weights.push((r.name.clone(), r.weight)),
            }
        }
        RequestedToCapacityRatio {
            shape: shape
                .iter()
                .map(|p| (p.utilization, p.score * scale))
                .collect(),
            resources: weights,
        }
    }

    /// The shape's value at utilization `p`.
    fn shape_score(&self, p: i64) -> i64 {
        let s = &self.shape;
        for i in 0..s.len() {
            if p <= s[i].0 {
                if i == 0 {
                    return s[0].1;
                }
                let (u0, v0) = s[i - 1];
                let (u1, v1) = s[i];
                if u1 == u0 {
                    return v1;
                }
                return v0 + (v1 - v0) * (p - u0) / (u1 - u0);
            }
        }
        s.last().map_or(0, |last| last.1)
    }

    /// The shape's value for `requested` of `capacity`; full use when over capacity.
    fn resource_score(&self, requested: i64, capacity: i64) -> i64 {
        if capacity == 0 || requested > capacity {
            return self.shape_score(MAX_UTILIZATION);
        }
        // In i128: the product overflows an i64 capacity above i64::MAX / 100.
        let utilization =
            i128::from(requested) * i128::from(MAX_UTILIZATION) / i128::from(capacity);
        self.shape_score(clamp_i64(utilization))
    }
}

/// Whether upstream counts `name` as a scalar resource: a prefixed name (extended or
/// `kubernetes.io/`), hugepages or attachable volumes. Other unprefixed names (`pods`,
/// typos) are never scored.
fn is_scalar_resource(name: &str) -> bool {
    name.contains('/') || name.starts_with("hugepages-") || name.starts_with("attachable-volumes-")
}

/// Which node quantities a resource reads.
enum Kind<'a> {
    Cpu,
    Memory,
    EphemeralStorage,
    Scalar(&'a str),
}

struct Term<'a> {
    kind: Kind<'a>,
    weight: i64,
    /// The pod's request of the resource.
    pod: i64,
}

struct Score<'a> {
    rule: &'a RequestedToCapacityRatio,
    terms: Vec<Term<'a>>,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The node's requests and allocatable, and the pod's.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    fn score(&self, node: &NodeInfo) -> i64 {
        let (mut sum, mut weights) = (0i64, 0i64);
        for t in &self.terms {
            let (alloc, used) = match t.kind {
                Kind::Cpu => (node.allocatable.milli_cpu, node.nonzero_milli_cpu),
                Kind::Memory => (node.allocatable.memory, node.nonzero_memory),
                Kind::EphemeralStorage => (
                    node.allocatable.ephemeral_storage,
                    node.requested.ephemeral_storage,
                ),
                Kind::Scalar(name) => (node.allocatable.scalar(name), node.requested.scalar(name)),
            };
            if alloc == 0 {
                continue;
            }
            let s = self.rule.resource_score(used.saturating_add(t.pod), alloc);
            if s > 0 {
                sum += s * t.weight;
                weights += t.weight;
            }
        }
        if weights == 0 {
            return 0;
        }
        (sum as f64 / weights as f64).round() as i64
    }
}

impl ScoreRule for RequestedToCapacityRatio {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let pod = ctx.pod;
        let terms: Vec<Term<'a>> = self
            .resources
            .iter()
            .filter_map(|(name, weight)| {
                let (kind, request) = match name.as_str() {
                    CPU => (Kind::Cpu, pod.incoming_milli_cpu),
                    MEMORY => (Kind::Memory, pod.nonzero_memory),
                    EPHEMERAL_STORAGE => (Kind::EphemeralStorage, pod.request.ephemeral_storage),
                    other if is_scalar_resource(other) => {
                        let request = pod.request.scalar(other);
                        if request == 0 {
                            return None;
                        }
                        (Kind::Scalar(other), request)
                    }
                    _ => return None,
                };
                Some(Term {
                    kind,
                    weight: *weight,
                    pod: request,
                })
            })
            .collect();
        if terms.is_empty() {
            return ScorePrep::Constant(0);
        }
        ScorePrep::PerNode(Box::new(Score { rule: self, terms }))
    }
}

#[cfg(test)]
mod tests;
