//! A dense row per node of what the common filters and scores read (pod room, CPU, memory
//! and ephemeral storage, conditions, whether the node has taints), one cache line each,
//! indexed by node slot. A cycle walking thousands of nodes reads these rows in place of
//! the nodes' own structures, which lie wherever they were allocated and cost a cache miss
//! or more each; on 100,000 nodes those misses were most of a cycle.
//!
//! The cluster rewrites a node's row whenever the node or its set of pods changes, so a row
//! always equals [`NodeFit::of`] its node. Rules read rows only for nodes of the cluster;
//! the copies of nodes that preemption and nominated pods build are asked through the
//! rules' node checks.

use crate::model::TaintEffect;
use crate::resources::clamp_i64;

use super::NodeInfo;

/// What the common rules read of a node, in one cache line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct NodeFit {
    /// Allowed pods less assigned pods (clamped to `i32`; `INEXACT` when clamped).
    pub pod_room: i32,
    /// The `NodeFit::*` flags.
    pub flags: u32,
    /// Allocatable milli-CPU.
    pub allocatable_milli_cpu: i64,
    /// Allocatable memory bytes.
    pub allocatable_memory: i64,
    /// Summed filter requests of the assigned pods (clamped as [`NodeInfo::requested`]).
    pub requested_milli_cpu: i64,
    /// Same for memory.
    pub requested_memory: i64,
    /// [`NodeInfo::nonzero_milli_cpu`].
    pub nonzero_milli_cpu: i64,
    /// [`NodeInfo::nonzero_memory`].
    pub nonzero_memory: i64,
    /// Allocatable ephemeral storage less requested (clamped to `i64`; `INEXACT` when
    /// clamped).
    pub ephemeral_room: i64,
}

impl NodeFit {
    /// `spec.unschedulable`.
    pub const UNSCHEDULABLE: u32 = 1;
    /// The MemoryPressure condition is True.
    pub const MEMORY_PRESSURE: u32 = 1 << 1;
    /// The DiskPressure condition is True.
    pub const DISK_PRESSURE: u32 = 1 << 2;
    /// The PIDPressure condition is True.
    pub const PID_PRESSURE: u32 = 1 << 3;
    /// A NoSchedule or NoExecute taint.
    pub const HARD_TAINTS: u32 = 1 << 4;
    /// A PreferNoSchedule taint.
    pub const SOFT_TAINTS: u32 = 1 << 5;
    /// A room did not fit its field: read the node.
    pub const INEXACT: u32 = 1 << 6;

    /// The row of `node`.
    pub fn of(node: &NodeInfo) -> NodeFit {
        let c = node.conditions();
        let mut flags = 0;
        for (set, flag) in [
            (node.unschedulable, Self::UNSCHEDULABLE),
            (c.memory_pressure, Self::MEMORY_PRESSURE),
            (c.disk_pressure, Self::DISK_PRESSURE),
            (c.pid_pressure, Self::PID_PRESSURE),
            (
                node.taints()
                    .iter()
                    .any(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)),
                Self::HARD_TAINTS,
            ),
            (node.soft_tainted(), Self::SOFT_TAINTS),
        ] {
            if set {
                flags |= flag;
            }
        }
        let pod_room = i128::from(node.allowed_pods) - node.pods.len() as i128;
        let ephemeral_room = i128::from(node.allocatable.ephemeral_storage)
            - i128::from(node.requested.ephemeral_storage);
        let clamped_room = pod_room.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
        if i128::from(clamped_room) != pod_room || i64::try_from(ephemeral_room).is_err() {
            flags |= Self::INEXACT;
        }
        NodeFit {
            pod_room: clamped_room,
            flags,
            allocatable_milli_cpu: node.allocatable.milli_cpu,
            allocatable_memory: node.allocatable.memory,
            requested_milli_cpu: node.requested.milli_cpu,
            requested_memory: node.requested.memory,
            nonzero_milli_cpu: node.nonzero_milli_cpu,
            nonzero_memory: node.nonzero_memory,
            ephemeral_room: clamp_i64(ephemeral_room),
        }
    }

    /// Whether the node has room for `request`, as PodFitsResources decides without extended
    /// resources; None when a room was clamped (ask the node).
    #[inline]
    pub fn fits(&self, request: &FitRequest) -> Option<bool> {
        if self.any(Self::INEXACT) {
            return None;
        }
        if self.pod_room < 1 {
            return Some(false);
        }
        if request.requests_nothing {
            return Some(true);
        }
        // As the node check: the sums are exact in i128.
        let over = |allocatable: i64, want: i64, used: i64| {
            i128::from(want) + i128::from(used) > i128::from(allocatable)
        };
        Some(
            !(over(
                self.allocatable_milli_cpu,
                request.milli_cpu,
                self.requested_milli_cpu,
            ) || over(
                self.allocatable_memory,
                request.memory,
                self.requested_memory,
            ) || request.ephemeral_storage > self.ephemeral_room),
        )
    }

    /// Whether any of `flags` is set.
    #[inline]
    pub fn any(&self, flags: u32) -> bool {
        self.flags & flags != 0
    }
}

/// A pod's requests as [`NodeFit::fits`] reads them.
#[derive(Debug, Clone, Copy)]
pub struct FitRequest {
    /// Milli-CPU.
    pub milli_cpu: i64,
    /// Memory bytes.
    pub memory: i64,
    /// Ephemeral storage bytes.
    pub ephemeral_storage: i64,
    /// The pod requests nothing at all: only the pod count is checked.
    pub requests_nothing: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::*;

    fn row(node: crate::model::Node) -> NodeFit {
        let cl = cluster(vec![node], vec![]);
        cl.fit_rows()[0]
    }

    const SMALL: FitRequest = FitRequest {
        milli_cpu: 100,
        memory: 100,
        ephemeral_storage: 0,
        requests_nothing: false,
    };

    #[test]
    fn fits_as_the_node_check() {
        assert_eq!(
            row(node("n").cpu(1000).mem(1000).build()).fits(&SMALL),
            Some(true)
        );
        assert_eq!(
            row(node("n").cpu(50).mem(1000).build()).fits(&SMALL),
            Some(false)
        );
        assert_eq!(
            row(node("n").cpu(1000).mem(50).build()).fits(&SMALL),
            Some(false)
        );
        let no_pods = row(node("n").cpu(1000).mem(1000).alloc("pods", 0).build());
        assert_eq!(no_pods.fits(&SMALL), Some(false));
        let nothing = FitRequest {
            milli_cpu: 0,
            memory: 0,
            ephemeral_storage: 0,
            requests_nothing: true,
        };
        assert_eq!(
            row(node("n").cpu(0).mem(0).build()).fits(&nothing),
            Some(true)
        );
        let storage = FitRequest {
            ephemeral_storage: 10,
            ..SMALL
        };
        let small_disk = node("n").cpu(1000).mem(1000).alloc("ephemeral-storage", 5);
        assert_eq!(row(small_disk.build()).fits(&storage), Some(false));
    }

    /// A room that does not fit its field is not guessed at: the node answers.
    #[test]
    fn a_clamped_room_asks_the_node() {
        let many_pods = row(node("n")
            .cpu(1000)
            .mem(1000)
            .alloc("pods", i64::MAX)
            .build());
        assert!(many_pods.any(NodeFit::INEXACT));
        assert_eq!(many_pods.fits(&SMALL), None);
        // At the ends of i64 but exact: compared as the node check does.
        let negative_disk = node("n")
            .cpu(1000)
            .mem(1000)
            .alloc("ephemeral-storage", i64::MIN);
        assert_eq!(row(negative_disk.build()).fits(&SMALL), Some(false));
    }

    #[test]
    fn flags() {
        let tainted = node("n")
            .taint("k", "v", TaintEffect::PreferNoSchedule)
            .unschedulable()
            .conditions(|c| c.disk_pressure = true)
            .build();
        let r = row(tainted);
        assert!(r.any(NodeFit::SOFT_TAINTS));
        assert!(r.any(NodeFit::UNSCHEDULABLE));
        assert!(r.any(NodeFit::DISK_PRESSURE));
        assert!(!r.any(NodeFit::HARD_TAINTS | NodeFit::MEMORY_PRESSURE | NodeFit::INEXACT));
    }

    #[test]
    fn one_cache_line() {
        assert_eq!(std::mem::size_of::<NodeFit>(), 64);
        assert_eq!(std::mem::align_of::<NodeFit>(), 64);
    }
}
