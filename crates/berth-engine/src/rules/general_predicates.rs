//! GeneralPredicates: PodFitsResources, HostName, PodFitsHostPorts and MatchNodeSelector, in
//! that order. v1.22 runs them as four filter plugins, so with `alwaysCheckAllPredicates`
//! off only the first failing one reports (v1.12 reported all four); with it on, all do.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::rules::host_ports::{self, PodFitsHostPorts};
use crate::rules::node_name::{self, HostName};
use crate::rules::node_selector::{self, MatchNodeSelector};
use crate::rules::resources_fit::{self, PodFitsResources};

/// The kube-scheduler framework plugins v1.22's legacy registry enables for
/// GeneralPredicates, in its order.
pub const UPSTREAM_PLUGINS: [&str; 4] = [
    resources_fit::UPSTREAM_PLUGIN,
    node_name::UPSTREAM_PLUGIN,
    host_ports::UPSTREAM_PLUGIN,
    node_selector::UPSTREAM_PLUGIN,
];

/// The rule.
pub struct GeneralPredicates {
    resources: PodFitsResources,
    check_all: bool,
}

impl GeneralPredicates {
    /// The rule; `ignored` extended resources are not checked; `check_all` is the policy's
    /// `alwaysCheckAllPredicates`.
    pub fn new(ignored: Vec<String>, check_all: bool) -> Self {
        GeneralPredicates {
            resources: PodFitsResources::new(ignored),
            check_all,
        }
    }
}

struct Check<'a> {
    parts: Vec<Box<dyn NodeCheck + 'a>>,
    check_all: bool,
}

impl NodeCheck for Check<'_> {
    fn node_local(&self) -> bool {
        self.parts.iter().all(|c| c.node_local())
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let mut ok = true;
        for c in &self.parts {
            ok &= c.check(node, reasons);
            if !ok && !self.check_all {
                break;
            }
        }
        ok
    }
}

impl FilterRule for GeneralPredicates {
    /// As the four plugins upstream runs: NodeName and NodeAffinity fail as
    /// UnschedulableAndUnresolvable, NodeResourcesFit and NodePorts as Unschedulable.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        let r = reason.as_str();
        if r == crate::rules::node_name::REASON || r == crate::rules::node_selector::REASON {
            FailureKind::UnschedulableAndUnresolvable
        } else {
            FailureKind::Unschedulable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let mut parts: Vec<Box<dyn NodeCheck + 'a>> = vec![Box::new(self.resources.checker(&ctx))];
        if let Some(c) = HostName::checker(&ctx) {
            parts.push(Box::new(c));
        }
        if let Some(c) = PodFitsHostPorts::checker(&ctx) {
            parts.push(Box::new(c));
        }
        if let Some(c) = MatchNodeSelector::checker(&ctx) {
            parts.push(Box::new(c));
        }
        if parts.len() == 1 {
            // Usually only the resource fit applies: skip the composite's extra indirection.
            return FilterPrep::Check(parts.remove(0));
        }
        FilterPrep::Check(Box::new(Check {
            parts,
            check_all: self.check_all,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{host_ports, node_name, node_selector, resources_fit};
    use crate::testkit::*;

    #[test]
    fn table() {
        let everything_wrong = || {
            pod("p")
                .req(8000, 0)
                .node_selector("zone", "z9")
                .host_port("", "TCP", 80)
                .with(|p| p.node_name = Some("other".into()))
                .build()
        };
        let cases = vec![
            ("fits", false, pod("p").req(100, 0).build(), vec![]),
            (
                "v1.22: only the first failing part reports",
                false,
                everything_wrong(),
                vec![resources_fit::REASON_CPU],
            ),
            (
                "alwaysCheckAllPredicates: every failing part reports",
                true,
                everything_wrong(),
                vec![
                    resources_fit::REASON_CPU,
                    node_name::REASON,
                    host_ports::REASON,
                    node_selector::REASON,
                ],
            ),
            (
                "ports before selector",
                false,
                pod("p")
                    .host_port("", "TCP", 80)
                    .node_selector("zone", "z9")
                    .build(),
                vec![host_ports::REASON],
            ),
            (
                "only the selector fails",
                false,
                pod("p").node_selector("zone", "z9").build(),
                vec![node_selector::REASON],
            ),
        ];
        for (name, check_all, p, want) in cases {
            let mut cl = cluster(
                vec![node("n").build()],
                vec![pod("r").host_port("", "TCP", 80).on("n").build()],
            );
            let rule = GeneralPredicates::new(vec![], check_all);
            assert_eq!(run_filter(&rule, &mut cl, p)[0].1, want, "{name}");
        }
    }
}
