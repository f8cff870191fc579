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
mod tests {
    use super::*;
    use crate::testkit::*;

    fn running(n: usize, host_network: bool) -> Vec<crate::model::Pod> {
        (0..n)
            .map(|i| {
                let p = pod(&format!("r{i}")).on("n");
                if host_network { p.host_network() } else { p }.build()
            })
            .collect()
    }

    #[test]
    fn table() {
        let cases = vec![
            (
                "/30 has 1 usable address, free",
                "10.0.0.0/30",
                running(0, false),
                pod("p").build(),
                true,
            ),
            (
                "/30 full after one pod",
                "10.0.0.0/30",
                running(1, false),
                pod("p").build(),
                false,
            ),
            (
                "/29 has 5",
                "10.0.0.0/29",
                running(4, false),
                pod("p").build(),
                true,
            ),
            (
                "/29 full at 5",
                "10.0.0.0/29",
                running(5, false),
                pod("p").build(),
                false,
            ),
            (
                "hostNetwork pods use no address",
                "10.0.0.0/30",
                running(3, true),
                pod("p").build(),
                true,
            ),
            (
                "a hostNetwork pod fits a full node",
                "10.0.0.0/30",
                running(1, false),
                pod("p").host_network().build(),
                true,
            ),
            (
                "/32 has no usable address",
                "10.0.0.1/32",
                running(0, false),
                pod("p").build(),
                false,
            ),
            (
                "IPv6 /64 is effectively unlimited",
                "fd00::/64",
                running(5, false),
                pod("p").build(),
                true,
            ),
            (
                "IPv6 /126 has 1",
                "fd00::/126",
                running(1, false),
                pod("p").build(),
                false,
            ),
        ];
        for (name, cidr, r, p, fits) in cases {
            let mut cl = cluster(vec![node("n").cidr(cidr).build()], r);
            let want: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
            assert_eq!(
                run_filter(&CheckPodCidrCapacity::pod_cidr(), &mut cl, p)[0].1,
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn dual_stack_adds_up_and_no_cidr_is_unlimited() {
        let mut cl = cluster(
            vec![
                node("n").cidr("10.0.0.0/30").cidr("fd00::/126").build(),
                node("m").build(),
            ],
            running(1, false),
        );
        let got = run_filter(&CheckPodCidrCapacity::pod_cidr(), &mut cl, pod("p").build());
        assert_eq!(passing(&got), vec!["n", "m"]);
    }

    /// (name, source, fall back to pod CIDRs, node, running pods needing an IP, reasons)
    type SourceCase = (
        &'static str,
        Source,
        bool,
        crate::model::Node,
        usize,
        Vec<String>,
    );

    #[test]
    fn capacity_sources() {
        let label = || Source::Label("example.com/pod-ips".into());
        let annotation = || Source::Annotation("example.com/pod-ips".into());
        let resource = || Source::Resource("example.com/pod-ips".into());
        let full = || vec![REASON.to_string()];
        let cases: Vec<SourceCase> = vec![
            (
                "label: room left",
                label(),
                false,
                node("n").label("example.com/pod-ips", "3").build(),
                2,
                vec![],
            ),
            (
                "label: full",
                label(),
                false,
                node("n").label("example.com/pod-ips", "3").build(),
                3,
                full(),
            ),
            (
                "label: 0 takes no pod",
                label(),
                false,
                node("n").label("example.com/pod-ips", "0").build(),
                0,
                full(),
            ),
            (
                "label wins over a roomy pod CIDR",
                label(),
                false,
                node("n")
                    .cidr("10.0.0.0/24")
                    .label("example.com/pod-ips", "1")
                    .build(),
                1,
                full(),
            ),
            (
                "label missing: rejected, naming the label",
                label(),
                false,
                node("n").cidr("10.0.0.0/24").build(),
                0,
                vec![missing_reason(&label())],
            ),
            (
                "label missing, falling back to the pod CIDR",
                label(),
                true,
                node("n").cidr("10.0.0.0/30").build(),
                1,
                full(),
            ),
            (
                "label missing, no pod CIDR to fall back on: unlimited",
                label(),
                true,
                node("n").build(),
                50,
                vec![],
            ),
            (
                "label not a number: rejected, even with the fallback",
                label(),
                true,
                node("n").label("example.com/pod-ips", "lots").build(),
                0,
                vec![invalid_reason(&label())],
            ),
            (
                "annotation: room left",
                annotation(),
                false,
                node("n").annotation("example.com/pod-ips", "17").build(),
                16,
                vec![],
            ),
            (
                "annotation: signs and spaces are not counts",
                annotation(),
                false,
                node("n").annotation("example.com/pod-ips", " +17").build(),
                0,
                vec![invalid_reason(&annotation())],
            ),
            (
                "annotation: beyond u64 is invalid, not unlimited",
                annotation(),
                false,
                node("n")
                    .annotation("example.com/pod-ips", "18446744073709551616")
                    .build(),
                0,
                vec![invalid_reason(&annotation())],
            ),
            (
                "resource: full",
                resource(),
                false,
                node("n").alloc("example.com/pod-ips", 2).build(),
                2,
                full(),
            ),
            (
                "resource: room left",
                resource(),
                false,
                node("n").alloc("example.com/pod-ips", 2).build(),
                1,
                vec![],
            ),
            (
                "resource missing",
                resource(),
                false,
                node("n").build(),
                0,
                vec![missing_reason(&resource())],
            ),
            (
                "allocatable pods as the count",
                Source::Resource("pods".into()),
                false,
                node("n").pods(4).build(),
                4,
                full(),
            ),
        ];
        for (name, source, fallback, n, running_pods, want) in cases {
            let rule = CheckPodCidrCapacity::new(source, fallback);
            let mut cl = cluster(vec![n], running(running_pods, false));
            assert_eq!(
                run_filter(&rule, &mut cl, pod("p").build())[0].1,
                want,
                "{name}"
            );
            assert_eq!(
                run_filter(&rule, &mut cl, pod("h").host_network().build())[0].1,
                Vec::<String>::new(),
                "{name}: a hostNetwork pod needs no address"
            );
        }
    }

    #[test]
    fn reasons_and_their_kinds() {
        let rule = CheckPodCidrCapacity::new(Source::Annotation("a.io/ips".into()), false);
        assert_eq!(
            missing_reason(&Source::Annotation("a.io/ips".into())),
            "node(s) didn't publish their pod IP capacity (annotation a.io/ips)"
        );
        assert_eq!(
            invalid_reason(&Source::Resource("a.io/ips".into())),
            "node(s) had an invalid pod IP capacity (allocatable a.io/ips: not a non-negative \
             integer)"
        );
        assert_eq!(
            rule.failure_kind(&REASON.into()),
            FailureKind::Unschedulable
        );
        assert_eq!(
            rule.failure_kind(&rule.missing),
            FailureKind::UnschedulableAndUnresolvable
        );
        assert_eq!(
            rule.failure_kind(&rule.invalid),
            FailureKind::UnschedulableAndUnresolvable
        );
    }

    #[test]
    fn bad_cidr_is_an_error() {
        let mut cl = crate::Cluster::new();
        let err = cl
            .add_node(node("n").cidr("10.0.0.0/33").build())
            .unwrap_err();
        assert!(
            err.to_string().contains("invalid CIDR \"10.0.0.0/33\""),
            "{err}"
        );
    }
}
