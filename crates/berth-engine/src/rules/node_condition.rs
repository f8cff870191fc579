//! CheckNodeCondition (v1.12 meaning; v1.22 dropped it for taints): the node is Ready, not
//! out of disk, has its network, and is not cordoned.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};

/// Ready is not True.
pub const REASON_NOT_READY: &str = "node(s) were not ready";
/// OutOfDisk is True.
pub const REASON_OUT_OF_DISK: &str = "node(s) were out of disk space";
/// NetworkUnavailable is True.
pub const REASON_NETWORK_UNAVAILABLE: &str = "node(s) had unavailable network";
/// The node is cordoned.
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The rule.
pub struct CheckNodeCondition;

impl NodeCheck for CheckNodeCondition {
    fn node_local(&self) -> bool {
        true
    }

    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let before = reasons.len();
        let c = node.conditions();
        if c.ready != Some(true) {
            reasons.push(REASON_NOT_READY.into());
        }
        if c.out_of_disk {
            reasons.push(REASON_OUT_OF_DISK.into());
        }
        if c.network_unavailable {
            reasons.push(REASON_NETWORK_UNAVAILABLE.into());
        }
        if node.unschedulable {
            reasons.push(REASON_UNSCHEDULABLE.into());
        }
        reasons.len() == before
    }
}

impl FilterRule for CheckNodeCondition {
    /// V1.12 listed these reasons among those preemption cannot resolve.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, _ctx: CycleContext<'a>) -> FilterPrep<'a> {
        FilterPrep::Check(Box::new(CheckNodeCondition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let cases = vec![
            ("ready", node("n").build(), vec![]),
            (
                "not ready",
                node("n").conditions(|c| c.ready = Some(false)).build(),
                vec![REASON_NOT_READY],
            ),
            (
                "no Ready condition",
                node("n").conditions(|c| c.ready = None).build(),
                vec![REASON_NOT_READY],
            ),
            (
                "out of disk",
                node("n").conditions(|c| c.out_of_disk = true).build(),
                vec![REASON_OUT_OF_DISK],
            ),
            (
                "network unavailable and cordoned: every reason",
                node("n")
                    .conditions(|c| c.network_unavailable = true)
                    .unschedulable()
                    .build(),
                vec![REASON_NETWORK_UNAVAILABLE, REASON_UNSCHEDULABLE],
            ),
        ];
        for (name, n, want) in cases {
            let mut cl = cluster(vec![n], vec![]);
            assert_eq!(
                run_filter(&CheckNodeCondition, &mut cl, pod("p").build())[0].1,
                want,
                "{name}"
            );
        }
    }
}
