//! HostName (v1.22 NodeName): a pod that names a node in `spec.nodeName` fits only there.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeName";

/// The pod asks for another node.
pub const REASON: &str = "node(s) didn't match the requested node name";

/// The rule.
pub struct HostName;

/// The prepared check: the requested node name.
pub struct NameCheck<'a>(pub &'a str);

impl NodeCheck for NameCheck<'_> {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        if node.name() != self.0 {
            reasons.push(REASON.into());
            return false;
        }
        true
    }
}

impl HostName {
    /// The check for a pod, or None when the pod names no node.
    pub fn checker<'a>(ctx: &CycleContext<'a>) -> Option<NameCheck<'a>> {
        match &ctx.pod.pod.node_name {
            Some(n) if !n.is_empty() => Some(NameCheck(n)),
            _ => None,
        }
    }
}

impl FilterRule for HostName {
    /// Upstream's NodeName fails as UnschedulableAndUnresolvable.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

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
        let cases = vec![
            ("no node name", pod("p").build(), vec!["a", "b"]),
            (
                "names node b",
                pod("p").with(|p| p.node_name = Some("b".into())).build(),
                vec!["b"],
            ),
            (
                "names a missing node",
                pod("p").with(|p| p.node_name = Some("z".into())).build(),
                vec![],
            ),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(vec![node("a").build(), node("b").build()], vec![]);
            let got = run_filter(&HostName, &mut cl, p);
            assert_eq!(passing(&got), want, "{name}");
            for (_, r) in got.iter().filter(|(_, r)| !r.is_empty()) {
                assert_eq!(r, &vec![REASON.to_string()]);
            }
        }
    }
}
