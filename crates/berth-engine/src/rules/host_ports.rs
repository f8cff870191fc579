//! PodFitsHostPorts (v1.22 NodePorts): the pod's host ports are free on the node. The same
//! port and protocol clash when the IPs are equal or either is 0.0.0.0.

use crate::cluster::{HostPort, NodeInfo};
use crate::framework::{CycleContext, FilterPrep, FilterRule, NodeCheck, Reason};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodePorts";

/// A requested host port is taken.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The rule.
pub struct PodFitsHostPorts;

/// The prepared check: the ports the pod wants.
pub struct PortsCheck<'a>(pub &'a [HostPort]);

impl NodeCheck for PortsCheck<'_> {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let clash = self
            .0
            .iter()
            .any(|want| node.used_ports.iter().any(|used| used.conflicts(want)));
        if clash {
            reasons.push(REASON.into());
        }
        !clash
    }
}

impl PodFitsHostPorts {
    /// The check for a pod, or None when it asks for no host port.
    pub fn checker<'a>(ctx: &CycleContext<'a>) -> Option<PortsCheck<'a>> {
        (!ctx.pod.host_ports.is_empty()).then_some(PortsCheck(&ctx.pod.host_ports))
    }
}

impl FilterRule for PodFitsHostPorts {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        FilterPrep::check_if(Self::checker(&ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let running =
            |ip: &str, proto: &str, port| pod("r").host_port(ip, proto, port).on("n").build();
        let cases = vec![
            (
                "no ports wanted",
                running("", "", 80),
                pod("p").build(),
                true,
            ),
            (
                "same port, both wildcard",
                running("", "TCP", 80),
                pod("p").host_port("", "TCP", 80).build(),
                false,
            ),
            (
                "different port",
                running("", "TCP", 80),
                pod("p").host_port("", "TCP", 81).build(),
                true,
            ),
            (
                "different protocol",
                running("", "TCP", 53),
                pod("p").host_port("", "UDP", 53).build(),
                true,
            ),
            (
                "empty protocol means TCP",
                running("", "", 80),
                pod("p").host_port("", "TCP", 80).build(),
                false,
            ),
            (
                "existing 0.0.0.0 clashes with a specific IP",
                running("0.0.0.0", "TCP", 80),
                pod("p").host_port("10.0.0.1", "TCP", 80).build(),
                false,
            ),
            (
                "wanted 0.0.0.0 clashes with a specific IP",
                running("10.0.0.1", "TCP", 80),
                pod("p").host_port("0.0.0.0", "TCP", 80).build(),
                false,
            ),
            (
                "different specific IPs coexist",
                running("10.0.0.1", "TCP", 80),
                pod("p").host_port("10.0.0.2", "TCP", 80).build(),
                true,
            ),
            (
                "same specific IP clashes",
                running("10.0.0.1", "TCP", 80),
                pod("p").host_port("10.0.0.1", "TCP", 80).build(),
                false,
            ),
        ];
        for (name, r, p, fits) in cases {
            let mut cl = cluster(vec![node("n").build()], vec![r]);
            let got = run_filter(&PodFitsHostPorts, &mut cl, p);
            let want: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
            assert_eq!(got[0].1, want, "{name}");
        }
    }

    #[test]
    fn ports_are_released_when_the_pod_goes() {
        let mut cl = cluster(
            vec![node("n").build()],
            vec![pod("r").host_port("", "TCP", 80).on("n").build()],
        );
        cl.remove_pod("default", "r");
        let got = run_filter(
            &PodFitsHostPorts,
            &mut cl,
            pod("p").host_port("", "TCP", 80).build(),
        );
        assert!(got[0].1.is_empty());
    }
}
