//! CheckNodeMemoryPressure, CheckNodeDiskPressure, CheckNodePIDPressure (v1.12 meaning):
//! avoid nodes reporting resource pressure. Memory pressure only turns away BestEffort pods.

use crate::cluster::{NodeFit, NodeInfo};
use crate::framework::{
    CycleContext, Dense, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, RowTest,
};

/// MemoryPressure is True.
pub const REASON_MEMORY: &str = "node(s) had memory pressure";
/// DiskPressure is True.
pub const REASON_DISK: &str = "node(s) had disk pressure";
/// PIDPressure is True.
pub const REASON_PID: &str = "node(s) had pid pressure";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    Disk,
    Pid,
}

/// The rule, for one kind of pressure.
pub struct NodePressure(Kind);

impl NodePressure {
    /// CheckNodeMemoryPressure.
    pub fn memory() -> Self {
        NodePressure(Kind::Memory)
    }
    /// CheckNodeDiskPressure.
    pub fn disk() -> Self {
        NodePressure(Kind::Disk)
    }
    /// CheckNodePIDPressure.
    pub fn pid() -> Self {
        NodePressure(Kind::Pid)
    }
}

/// The prepared check.
struct Check<'a> {
    kind: Kind,
    rows: &'a [NodeFit],
}

impl NodeCheck for Check<'_> {
    fn node_local(&self) -> bool {
        true
    }

    fn dense(&self) -> Dense<'_> {
        let flag = match self.kind {
            Kind::Memory => NodeFit::MEMORY_PRESSURE,
            Kind::Disk => NodeFit::DISK_PRESSURE,
            Kind::Pid => NodeFit::PID_PRESSURE,
        };
        Dense::Rows(self.rows, RowTest::Clear(flag))
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let c = node.conditions();
        let (under, reason) = match self.kind {
            Kind::Memory => (c.memory_pressure, REASON_MEMORY),
            Kind::Disk => (c.disk_pressure, REASON_DISK),
            Kind::Pid => (c.pid_pressure, REASON_PID),
        };
        if under {
            reasons.push(reason.into());
        }
        !under
    }
}

impl FilterRule for NodePressure {
    /// V1.12 listed node pressure among the reasons preemption cannot resolve.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if self.0 == Kind::Memory && !ctx.pod.is_best_effort() {
            return FilterPrep::Skip;
        }
        FilterPrep::Check(Box::new(Check {
            kind: self.0,
            rows: ctx.cluster.fit_rows(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let mem = || node("n").conditions(|c| c.memory_pressure = true).build();
        let cases = vec![
            (
                "memory: best-effort pod refused",
                NodePressure::memory(),
                mem(),
                pod("p").build(),
                vec![REASON_MEMORY],
            ),
            (
                "memory: burstable pod admitted",
                NodePressure::memory(),
                mem(),
                pod("p").req(100, 0).build(),
                vec![],
            ),
            (
                "memory: no pressure",
                NodePressure::memory(),
                node("n").build(),
                pod("p").build(),
                vec![],
            ),
            (
                "disk: any pod refused",
                NodePressure::disk(),
                node("n").conditions(|c| c.disk_pressure = true).build(),
                pod("p").req(100, 100).build(),
                vec![REASON_DISK],
            ),
            (
                "pid",
                NodePressure::pid(),
                node("n").conditions(|c| c.pid_pressure = true).build(),
                pod("p").build(),
                vec![REASON_PID],
            ),
            (
                "disk rule ignores memory pressure",
                NodePressure::disk(),
                mem(),
                pod("p").build(),
                vec![],
            ),
        ];
        for (name, rule, n, p, want) in cases {
            let mut cl = cluster(vec![n], vec![]);
            assert_eq!(run_filter(&rule, &mut cl, p)[0].1, want, "{name}");
        }
    }
}
