//! CheckPodCIDRCapacity (Berth): a node holds no more pods that need a pod IP than it has
//! pod IP addresses. hostNetwork pods need no address.
//!
//! Where the capacity comes from is the policy's choice (`argument.podIPCapacity`):
//! - By default, the usable addresses of the node's pod CIDRs (2^(bits-prefix) - 3 per CIDR:
//!   network, broadcast, gateway), which is what kubenet and host-local IPAM hand out. A node
//!   without a pod CIDR is not limited: its pods get addresses some other way.
//! - Or a node label, a node annotation, or a resource of the node's allocatable naming the
//!   count, for CNIs that keep their own per-node pools (cloud ENI limits, IPAM daemons that
//!   publish their pool size). Such a node without the source is rejected (its IPAM has not
//!   published a capacity, so the scheduler cannot know it has an address), unless the
//!   policy says to count its pod CIDRs instead (`whenMissing: PodCIDR`). A value that is not
//!   a non-negative integer is always rejected: a typo must not become "unlimited".

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::labels::{Interner, Sym};
use crate::resources::PODS;

/// The node has no pod IP address left.
pub const REASON: &str = "node(s) had no free pod IP addresses";

/// Where a node's pod IP capacity is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The usable addresses of the node's pod CIDRs.
    PodCidr,
    /// A node label holding the count.
    Label(String),
    /// A node annotation holding the count.
    Annotation(String),
    /// A resource of the node's allocatable.
    Resource(String),
}

impl Source {
    /// How reasons name the source.
    fn describe(&self) -> String {
        match self {
            Source::PodCidr => "pod CIDRs".to_owned(),
            Source::Label(name) => format!("label {name}"),
            Source::Annotation(name) => format!("annotation {name}"),
            Source::Resource(name) => format!("allocatable {name}"),
        }
    }
}

/// How the reason for a node that lacks the configured source starts.
pub const MISSING_PREFIX: &str = "node(s) didn't publish their pod IP capacity (";
/// How the reason for a node whose source is not a count starts.
pub const INVALID_PREFIX: &str = "node(s) had an invalid pod IP capacity (";

/// The reason for a node that lacks the configured source.
pub fn missing_reason(source: &Source) -> String {
    format!("{MISSING_PREFIX}{})", source.describe())
}

/// The reason for a node whose source is not a non-negative integer.
pub fn invalid_reason(source: &Source) -> String {
    format!(
        "{INVALID_PREFIX}{}: not a non-negative integer)",
        source.describe()
    )
}

/// The rule.
pub struct CheckPodCidrCapacity {
    source: Source,
    /// A node without the source counts its pod CIDRs instead of being rejected.
    fallback_to_cidr: bool,
    /// Built once: a rejected node shares them.
    missing: Reason,
    invalid: Reason,
}

impl CheckPodCidrCapacity {
    /// The rule reading capacities from `source`.
    pub fn new(source: Source, fallback_to_cidr: bool) -> Self {
        CheckPodCidrCapacity {
            missing: missing_reason(&source).into(),
            invalid: invalid_reason(&source).into(),
            source,
            fallback_to_cidr,
        }
    }

    /// The classic rule: pod CIDRs only.
    pub fn pod_cidr() -> Self {
        Self::new(Source::PodCidr, false)
    }
}

/// A node's capacity as its source gives it.
enum Capacity {
    /// This many addresses; None is unlimited.
    Known(Option<u64>),
    /// The node lacks the source.
    Missing,
    /// The source holds something else.
    Invalid,
}

/// A count written in a label or annotation: decimal digits only.
fn parse_count(text: &str) -> Capacity {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Capacity::Invalid;
    }
    text.parse::<u64>()
        .map_or(Capacity::Invalid, |n| Capacity::Known(Some(n)))
}

impl CheckPodCidrCapacity {
    /// A node's capacity from the source. Reads what the cycle keeps hot in [`NodeInfo`]
    /// (interned labels, allocatable resources) rather than the node object, which a cycle
    /// over thousands of nodes would otherwise fetch from cold memory once per node.
    fn capacity(&self, node: &NodeInfo, label: LabelKey<'_>) -> Capacity {
        let read = match &self.source {
            Source::PodCidr => return Capacity::Known(node.pod_ip_capacity),
            Source::Label(_) => match label {
                LabelKey::Interned(key, interner) => node
                    .labels
                    .get(key)
                    .map(|value| parse_count(interner.resolve(value))),
                LabelKey::OnNoNode => None,
            },
            Source::Annotation(key) => node.node.meta.annotations.get(key).map(|v| parse_count(v)),
            // `pods` is not among the allocatable resources kept hot, and a node without it
            // must read as lacking the source, not as allowing none.
            Source::Resource(name) if name == PODS => node
                .node
                .allocatable
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| {
                    u64::try_from(*v).map_or(Capacity::Invalid, |n| Capacity::Known(Some(n)))
                }),
            Source::Resource(name) => {
                let scalars = &node.allocatable.scalars;
                scalars
                    .binary_search_by(|(n, _)| (**n).cmp(name.as_str()))
                    .ok()
                    .map(|i| {
                        u64::try_from(scalars[i].1)
                            .map_or(Capacity::Invalid, |n| Capacity::Known(Some(n)))
                    })
            }
        };
        match read {
            Some(capacity) => capacity,
            None if self.fallback_to_cidr => Capacity::Known(node.pod_ip_capacity),
            None => Capacity::Missing,
        }
    }
}

/// The label key of a [`Source::Label`], looked up once per pod.
#[derive(Clone, Copy)]
enum LabelKey<'a> {
    /// Interned: nodes carrying the label hold it under this symbol.
    Interned(Sym, &'a Interner),
    /// Never interned, so no node carries the label.
    OnNoNode,
}

struct Check<'a> {
    rule: &'a CheckPodCidrCapacity,
    label: LabelKey<'a>,
}

impl NodeCheck for Check<'_> {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let rule = self.rule;
        let failure = match rule.capacity(node, self.label) {
            Capacity::Known(cap) => cap
                .is_some_and(|cap| node.pods_needing_ip + 1 > cap)
                .then(|| REASON.into()),
            Capacity::Missing => Some(rule.missing.clone()),
            Capacity::Invalid => Some(rule.invalid.clone()),
        };
        match failure {
            Some(reason) => {
                reasons.push(reason);
                false
            }
            None => true,
        }
    }
}

impl FilterRule for CheckPodCidrCapacity {
    /// Removing pods frees addresses; nothing about the pods fixes a missing or bad capacity.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        if reason.as_str() == REASON {
            FailureKind::Unschedulable
        } else {
            FailureKind::UnschedulableAndUnresolvable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if !ctx.pod.needs_ip {
            return FilterPrep::Skip;
        }
        let interner = ctx.cluster.interner();
        let label = match &self.source {
            Source::Label(key) => match interner.get(key) {
                Some(sym) => LabelKey::Interned(sym, interner),
                None => LabelKey::OnNoNode,
            },
            _ => LabelKey::OnNoNode,
        };
        FilterPrep::Check(Box::new(Check { rule: self, label }))
    }
}

#[cfg(test)]
mod tests;
