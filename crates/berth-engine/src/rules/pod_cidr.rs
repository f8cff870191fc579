//! CheckPodCIDRCapacity (Berth): a node holds no more pods that need a pod IP than its pod
//! CIDRs have usable addresses (2^(bits-prefix) - 3 per CIDR: network, broadcast, gateway).
//! hostNetwork pods need no address. A node without a pod CIDR is not limited by this rule:
//! its pods get addresses some other way (cloud CNI, overlay IPAM).

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FilterPrep, FilterRule, NodeCheck, Reason};

/// The node's pod CIDR is exhausted.
pub const REASON: &str = "node(s) had no free pod IP addresses";

/// The rule.
pub struct CheckPodCidrCapacity;

struct Check;

impl NodeCheck for Check {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let full = node
            .pod_ip_capacity
            .is_some_and(|cap| node.pods_needing_ip + 1 > cap);
        if full {
            reasons.push(REASON.into());
        }
        !full
    }
}

impl FilterRule for CheckPodCidrCapacity {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if ctx.pod.needs_ip {
            FilterPrep::Check(Box::new(Check))
        } else {
            FilterPrep::Skip
        }
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
                run_filter(&CheckPodCidrCapacity, &mut cl, p)[0].1,
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
        let got = run_filter(&CheckPodCidrCapacity, &mut cl, pod("p").build());
        assert_eq!(passing(&got), vec!["n", "m"]);
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
