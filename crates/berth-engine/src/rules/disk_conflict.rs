//! NoDiskConflict (v1.22 VolumeRestrictions): a node fails when a pod already on it mounts
//! one of the pod's GCE PD, AWS EBS, Ceph RBD or iSCSI disks in a way that cannot be shared.
//!
//! Two volumes clash when:
//! - GCE PD: same disk name, unless both mounts are read-only;
//! - AWS EBS: same volume ID (read-only does not help);
//! - RBD: a monitor in common, same pool and same image, unless both are read-only;
//! - iSCSI: same IQN (portal and LUN are not compared), unless both are read-only.
//!
//! Only volumes written in the pod spec count; disks reached through claims do not. The
//! ReadWriteOncePod check of the same upstream plugin (behind an alpha gate in v1.22) is
//! `read_write_once_pod.rs`, which runs whatever the policy, as v1.36 does.

use crate::cluster::{NodeId, NodeInfo};
use crate::framework::{
    CountChanges, CycleContext, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::labels::Sym;
use crate::model::VolumeSource;
use crate::podinfo::PodInfo;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "VolumeRestrictions";

/// The pod would share a disk it cannot share.
pub const REASON: &str = "node(s) had no available disk";

/// The rule.
pub struct NoDiskConflict;

impl FilterRule for NoDiskConflict {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let disks: Vec<&VolumeSource> = ctx
            .pod
            .pod
            .volumes
            .iter()
            .map(|v| &v.source)
            .filter(|s| is_disk(s))
            .collect();
        if disks.is_empty() {
            return FilterPrep::Skip;
        }
        // Few pods mount disks: counting the clashing pods per node is cheaper once per pod
        // than per node.
        let cluster = ctx.cluster;
        let check = DiskCheck {
            disks,
            clashing: Vec::new(),
            key: cluster.keys().hostname,
        };
        let mut clashing: Vec<NodeId> = cluster
            .pods_with_volumes()
            .iter()
            .map(|id| cluster.pod(*id))
            .filter(|p| check.clashes(p))
            .filter_map(|p| p.node)
            .collect();
        // Nominated pods added to a node are counted through `count_pod`, so the check stays
        // when some pod is nominated even if nothing placed clashes.
        if clashing.is_empty() && !ctx.nominated {
            return FilterPrep::Skip;
        }
        clashing.sort_unstable();
        let mut counted: Vec<(NodeId, i64)> = Vec::new();
        for id in clashing {
            match counted.last_mut() {
                Some((last, n)) if *last == id => *n += 1,
                _ => counted.push((id, 1)),
            }
        }
        FilterPrep::Check(Box::new(DiskCheck {
            clashing: counted,
            ..check
        }))
    }
}

/// The prepared check: per node holding a clashing disk, how many pods there clash (sorted
/// by node). A copy of a node with pods removed or added (preemption's victims, nominated
/// pods) adjusts that count, as upstream's filter reads the copy's pods.
struct DiskCheck<'a> {
    disks: Vec<&'a VolumeSource>,
    clashing: Vec<(NodeId, i64)>,
    /// The key the copy's count change is recorded under (any fixed symbol does).
    key: Sym,
}

impl DiskCheck<'_> {
    /// Whether `other` mounts a disk the pod cannot share with it.
    fn clashes(&self, other: &PodInfo) -> bool {
        other
            .pod
            .volumes
            .iter()
            .any(|existing| self.disks.iter().any(|d| conflicts(d, &existing.source)))
    }

    /// Clashing pods on the cluster's `node`.
    fn count(&self, node: NodeId) -> i64 {
        self.clashing
            .binary_search_by_key(&node, |(id, _)| *id)
            .map_or(0, |i| self.clashing[i].1)
    }

    fn verdict(count: i64, reasons: &mut Vec<Reason>) -> bool {
        if count > 0 {
            reasons.push(REASON.into());
            return false;
        }
        true
    }
}

impl NodeCheck for DiskCheck<'_> {
    /// Reusable across a class while the node is unchanged: The pods on the node itself.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        Self::verdict(self.count(node.id), reasons)
    }

    fn count_pod(&self, changes: &mut CountChanges, other: &PodInfo, _node: &NodeInfo, delta: i64) {
        if self.clashes(other) {
            changes.add(0, self.key, self.key, delta);
        }
    }

    fn check_changed(
        &self,
        node: &NodeInfo,
        changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        let count = self.count(node.id) + changes.get(0, self.key, self.key);
        Self::verdict(count, reasons)
    }
}

/// Whether the rule looks at this kind of volume at all.
fn is_disk(source: &VolumeSource) -> bool {
    matches!(
        source,
        VolumeSource::GcePersistentDisk { .. }
            | VolumeSource::AwsElasticBlockStore { .. }
            | VolumeSource::Rbd { .. }
            | VolumeSource::Iscsi { .. }
    )
}

/// Whether mounting `new` clashes with `existing` on the same node.
fn conflicts(new: &VolumeSource, existing: &VolumeSource) -> bool {
    use VolumeSource::*;
    match (new, existing) {
        (
            GcePersistentDisk { pd_name, read_only },
            GcePersistentDisk {
                pd_name: other,
                read_only: other_ro,
            },
        ) => pd_name == other && !(*read_only && *other_ro),
        (AwsElasticBlockStore { volume_id }, AwsElasticBlockStore { volume_id: other }) => {
            volume_id == other
        }
        (
            Iscsi { iqn, read_only, .. },
            Iscsi {
                iqn: other,
                read_only: other_ro,
                ..
            },
        ) => iqn == other && !(*read_only && *other_ro),
        (
            Rbd {
                monitors,
                pool,
                image,
                read_only,
            },
            Rbd {
                monitors: other_monitors,
                pool: other_pool,
                image: other_image,
                read_only: other_ro,
            },
        ) => {
            monitors.iter().any(|m| other_monitors.contains(m))
                && pool == other_pool
                && image == other_image
                && !(*read_only && *other_ro)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Interner;
    use crate::model::Pod;
    use crate::podinfo::PodInfo;
    use crate::testkit::*;

    fn gce(name: &str, read_only: bool) -> VolumeSource {
        VolumeSource::GcePersistentDisk {
            pd_name: name.into(),
            read_only,
        }
    }
    fn ebs(id: &str) -> VolumeSource {
        VolumeSource::AwsElasticBlockStore {
            volume_id: id.into(),
        }
    }
    fn rbd(monitors: &[&str], pool: &str, image: &str, read_only: bool) -> VolumeSource {
        VolumeSource::Rbd {
            monitors: monitors.iter().map(|m| m.to_string()).collect(),
            pool: pool.into(),
            image: image.into(),
            read_only,
        }
    }
    fn iscsi(iqn: &str, lun: i32, read_only: bool) -> VolumeSource {
        VolumeSource::Iscsi {
            target_portal: "127.0.0.1:3260".into(),
            iqn: iqn.into(),
            lun,
            read_only,
        }
    }
    fn with(name: &str, sources: &[VolumeSource]) -> crate::testkit::PodBuilder {
        sources
            .iter()
            .enumerate()
            .fold(pod(name), |p, (i, s)| p.volume(&format!("v{i}"), s.clone()))
    }

    /// Upstream's TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts and
    /// TestISCSIDiskConflicts ("nothing", "one state", "same state", "different state"), plus
    /// the read-only sharing rules and edge cases.
    #[test]
    fn table() {
        let iqn1 = "iqn.2016-12.server:storage.target01";
        let iqn2 = "iqn.2017-12.server:storage.target01";
        let cases: Vec<(&str, Vec<VolumeSource>, Vec<VolumeSource>, bool)> = vec![
            ("nothing", vec![], vec![], true),
            ("gce: one state", vec![], vec![gce("foo", false)], true),
            (
                "gce: same state",
                vec![gce("foo", false)],
                vec![gce("foo", false)],
                false,
            ),
            (
                "gce: different state",
                vec![gce("bar", false)],
                vec![gce("foo", false)],
                true,
            ),
            (
                "gce: both read-only share",
                vec![gce("foo", true)],
                vec![gce("foo", true)],
                true,
            ),
            (
                "gce: one read-write does not",
                vec![gce("foo", true)],
                vec![gce("foo", false)],
                false,
            ),
            ("aws: one state", vec![], vec![ebs("foo")], true),
            ("aws: same state", vec![ebs("foo")], vec![ebs("foo")], false),
            (
                "aws: different state",
                vec![ebs("bar")],
                vec![ebs("foo")],
                true,
            ),
            (
                "rbd: one state",
                vec![],
                vec![rbd(&["a", "b"], "foo", "bar", false)],
                true,
            ),
            (
                "rbd: same state",
                vec![rbd(&["a", "b"], "foo", "bar", false)],
                vec![rbd(&["a", "b"], "foo", "bar", false)],
                false,
            ),
            (
                "rbd: different state",
                vec![rbd(&["c", "d"], "foo", "bar", false)],
                vec![rbd(&["a", "b"], "foo", "bar", false)],
                true,
            ),
            (
                "rbd: one monitor in common",
                vec![rbd(&["b", "c"], "foo", "bar", false)],
                vec![rbd(&["a", "b"], "foo", "bar", false)],
                false,
            ),
            (
                "rbd: other pool",
                vec![rbd(&["a"], "other", "bar", false)],
                vec![rbd(&["a"], "foo", "bar", false)],
                true,
            ),
            (
                "rbd: other image",
                vec![rbd(&["a"], "foo", "baz", false)],
                vec![rbd(&["a"], "foo", "bar", false)],
                true,
            ),
            (
                "rbd: both read-only share",
                vec![rbd(&["a"], "foo", "bar", true)],
                vec![rbd(&["a"], "foo", "bar", true)],
                true,
            ),
            (
                "rbd: no monitors never overlap",
                vec![rbd(&[], "foo", "bar", false)],
                vec![rbd(&[], "foo", "bar", false)],
                true,
            ),
            (
                "iscsi: one state",
                vec![],
                vec![iscsi(iqn1, 0, false)],
                true,
            ),
            (
                "iscsi: same state",
                vec![iscsi(iqn1, 0, false)],
                vec![iscsi(iqn1, 0, false)],
                false,
            ),
            (
                "iscsi: different state",
                vec![iscsi(iqn2, 0, false)],
                vec![iscsi(iqn1, 0, false)],
                true,
            ),
            (
                "iscsi: the LUN is not compared",
                vec![iscsi(iqn1, 1, false)],
                vec![iscsi(iqn1, 0, false)],
                false,
            ),
            (
                "iscsi: both read-only share",
                vec![iscsi(iqn1, 0, true)],
                vec![iscsi(iqn1, 0, true)],
                true,
            ),
            (
                "different kinds never clash",
                vec![ebs("foo")],
                vec![gce("foo", false)],
                true,
            ),
            (
                "any of several volumes",
                vec![ebs("x"), gce("foo", false)],
                vec![ebs("y"), gce("foo", false)],
                false,
            ),
        ];
        for (name, mine, theirs, fits) in cases {
            let mut cl = cluster(
                vec![node("n").build(), node("other").build()],
                vec![with("running", &theirs).on("n").build()],
            );
            let got = run_filter(&NoDiskConflict, &mut cl, with("p", &mine).build());
            let want_n: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
            assert_eq!(got[0], ("n".to_string(), want_n), "{name}");
            assert!(
                got[1].1.is_empty(),
                "{name}: a node without the disk always fits"
            );
        }
    }

    #[test]
    fn existing_pods_only() {
        let disk = ebs("vol");
        let on_other_node = with("a", std::slice::from_ref(&disk)).on("m").build();
        let pending: Pod = with("pending", std::slice::from_ref(&disk)).build();
        let terminating = with("t", std::slice::from_ref(&disk))
            .on("n")
            .terminating()
            .build();
        let mut cl = cluster(
            vec![node("n").build(), node("m").build(), node("free").build()],
            vec![on_other_node, pending, terminating],
        );
        let got = run_filter(&NoDiskConflict, &mut cl, with("p", &[disk]).build());
        // A terminating pod still holds its disk; a pod on no node holds none.
        assert_eq!(passing(&got), vec!["free"]);
        cl.remove_pod("default", "t");
        let got = run_filter(&NoDiskConflict, &mut cl, with("p", &[ebs("vol")]).build());
        assert_eq!(passing(&got), vec!["n", "free"]);
    }

    #[test]
    fn skips_pods_without_disks() {
        let cl = cluster(vec![node("n").build()], vec![]);
        let info = PodInfo::compile(pod("p").claim("c").build(), &mut Interner::default());
        let prep = NoDiskConflict.prepare(CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: false,
        });
        assert!(matches!(prep, FilterPrep::Skip));
    }
}
