//! CSI (v1.22 `csi.go`): only claims count (inline CSI and in-tree volumes do not). A bound
//! claim counts under its volume's CSI driver and handle; an unbound claim, or one whose
//! volume is missing, counts under its class's provisioner as a volume of its own; a claim
//! without class, with a missing class or a missing claim is not counted. In-tree volumes and
//! provisioners count only when migrated on the node, which with v1.22's gates means Cinder
//! (as driver `cinder.csi.openstack.org`). Per driver of the pod's new volumes, the limit is
//! the CSINode driver's allocatable count, else the node's allocatable
//! `attachable-volumes-csi-<driver>`; a driver with neither is unlimited. Upstream hashes
//! that allocatable key for driver names of 40 characters or more; Berth does not, so such
//! names only take their limit from the CSINode.

use std::collections::HashMap;

use super::{Attached, CINDER_CSI_DRIVER, CINDER_PLUGIN, REASON, VolKey, allocatable, migrated};
use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{CycleContext, FilterPrep, FilterRule, NodeCheck, Reason, Reuse};
use crate::model::{PersistentVolumeClaim, PvSource};
use crate::rules::volume_util::{REASON_NO_CLAIM_NAME, claim_class, claim_names, find_claim};

/// The framework plugin serving MaxCSIVolumeCountPred.
pub const UPSTREAM_PLUGIN_CSI: &str = "NodeVolumeLimits";

/// In-tree provisioners with a CSI translation whose migration gate is off in v1.22: their
/// claims are not counted by the CSI rule.
const GATED_MIGRATABLE_PROVISIONERS: [&str; 5] = [
    "kubernetes.io/aws-ebs",
    "kubernetes.io/gce-pd",
    "kubernetes.io/azure-disk",
    "kubernetes.io/azure-file",
    "kubernetes.io/vsphere-volume",
];
/// Prefix of the node allocatable key holding a CSI driver's limit.
const CSI_LIMIT_PREFIX: &str = "attachable-volumes-csi-";
/// Upstream hashes CSI limit keys this long or longer.
const RESOURCE_NAME_LENGTH_LIMIT: usize = 63;

/// MaxCSIVolumeCountPred.
pub struct MaxCsiVolumeCount;

/// A claim's volume as the CSI rule counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct CsiVolume<'a> {
    driver: &'a str,
    key: VolKey<'a>,
    /// A translated in-tree (Cinder) volume: counted only where Cinder is migrated.
    migrated_only: bool,
}

/// The CSI view of a pod's claim, or None when the rule does not count it.
fn csi_volume<'a>(
    cluster: &'a Cluster,
    namespace: &'a str,
    claim_name: &'a str,
) -> Option<CsiVolume<'a>> {
    let claim = find_claim(cluster, namespace, claim_name)?;
    let volume = (!claim.volume_name.is_empty())
        .then(|| cluster.persistent_volume(&claim.volume_name))
        .flatten();
    let Some(pv) = volume else {
        return csi_volume_from_class(cluster, claim, VolKey::Claim(namespace, claim_name));
    };
    match &pv.source {
        PvSource::Csi {
            driver,
            volume_handle,
        } => Some(CsiVolume {
            driver,
            key: VolKey::Id(volume_handle),
            migrated_only: false,
        }),
        PvSource::Cinder { volume_id } => Some(CsiVolume {
            driver: CINDER_CSI_DRIVER,
            key: VolKey::Id(volume_id),
            migrated_only: true,
        }),
        // EBS, GCE PD and Azure disk migrate only with gates v1.22 leaves off.
        _ => None,
    }
}

/// Upstream's `getCSIDriverInfoFromSC`: an unbound claim counts under its class's provisioner.
fn csi_volume_from_class<'a>(
    cluster: &'a Cluster,
    claim: &'a PersistentVolumeClaim,
    key: VolKey<'a>,
) -> Option<CsiVolume<'a>> {
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return None;
    }
    let provisioner = cluster.storage_class(class_name)?.provisioner.as_str();
    if provisioner == CINDER_PLUGIN {
        return Some(CsiVolume {
            driver: CINDER_CSI_DRIVER,
            key,
            migrated_only: true,
        });
    }
    if GATED_MIGRATABLE_PROVISIONERS.contains(&provisioner) {
        return None;
    }
    Some(CsiVolume {
        driver: provisioner,
        key,
        migrated_only: false,
    })
}

/// Sorts and removes duplicates by (driver, key).
fn distinct(mut v: Vec<CsiVolume<'_>>) -> Vec<CsiVolume<'_>> {
    v.sort_unstable();
    v.dedup_by(|a, b| a.driver == b.driver && a.key == b.key);
    v
}

impl FilterRule for MaxCsiVolumeCount {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        if pod.pod.volumes.is_empty() {
            return FilterPrep::Skip;
        }
        if claim_names(pod).any(str::is_empty) {
            return FilterPrep::RejectAll(vec![REASON_NO_CLAIM_NAME.into()]);
        }
        let namespace = pod.pod.meta.namespace.as_str();
        let new: Vec<CsiVolume<'a>> = claim_names(pod)
            .filter_map(|c| csi_volume(cluster, namespace, c))
            .collect();
        if new.is_empty() {
            return FilterPrep::Skip;
        }
        // The pod's new volumes on a node where Cinder is migrated, and elsewhere.
        let everywhere = distinct(new.iter().filter(|v| !v.migrated_only).copied().collect());
        let migrated_nodes = distinct(new);
        let mut drivers: Vec<&'a str> = migrated_nodes.iter().map(|v| v.driver).collect();
        drivers.dedup();
        let count = |set: &[CsiVolume<'_>]| -> Vec<i64> {
            drivers
                .iter()
                .map(|d| set.iter().filter(|v| v.driver == *d).count() as i64)
                .collect()
        };
        let new_plain = count(&everywhere);
        let new_migrated = count(&migrated_nodes);
        let cinder_matters = new_plain != new_migrated;

        // Volumes of the pod's drivers already attached, per node.
        let mut cinder_migrated: HashMap<NodeId, bool> = HashMap::new();
        let mut is_migrated = |node: NodeId| {
            *cinder_migrated
                .entry(node)
                .or_insert_with(|| migrated(cluster, cluster.node(node), CINDER_PLUGIN))
        };
        let mut attached: Vec<(NodeId, usize, VolKey<'a>)> = Vec::new();
        for id in cluster.pods_with_volumes() {
            let p = cluster.pod(*id);
            let Some(node) = p.node else { continue };
            for claim in claim_names(p) {
                let Some(v) = csi_volume(cluster, &p.pod.meta.namespace, claim) else {
                    continue;
                };
                let Ok(d) = drivers.binary_search(&v.driver) else {
                    continue;
                };
                if v.migrated_only && !is_migrated(node) {
                    continue;
                }
                attached.push((node, d, v.key));
            }
        }
        attached.sort_unstable();
        attached.dedup();
        let mut per_node: HashMap<NodeId, Vec<Attached>> = HashMap::new();
        for (node, d, key) in attached {
            let set = if is_migrated(node) {
                &migrated_nodes
            } else {
                &everywhere
            };
            let already_new = set.iter().any(|v| v.driver == drivers[d] && v.key == key);
            let slots = per_node
                .entry(node)
                .or_insert_with(|| vec![Attached::default(); drivers.len()]);
            slots[d].volumes += 1;
            if already_new {
                slots[d].of_new += 1;
            }
        }
        let limit_keys = drivers
            .iter()
            .map(|d| {
                (CSI_LIMIT_PREFIX.len() + d.len() < RESOURCE_NAME_LENGTH_LIMIT)
                    .then(|| format!("{CSI_LIMIT_PREFIX}{d}"))
            })
            .collect();
        FilterPrep::Check(Box::new(CsiCheck {
            drivers,
            limit_keys,
            new_plain,
            new_migrated,
            cinder_matters,
            per_node,
            cluster,
        }))
    }
}

/// The prepared CSI check. Per-driver vectors are indexed like `drivers`.
struct CsiCheck<'a> {
    /// The drivers of the pod's new volumes, sorted.
    drivers: Vec<&'a str>,
    /// The node allocatable key of each driver's limit (None when upstream would hash it).
    limit_keys: Vec<Option<String>>,
    /// New volumes per driver on a node where Cinder is not migrated.
    new_plain: Vec<i64>,
    /// New volumes per driver on a node where Cinder is migrated.
    new_migrated: Vec<i64>,
    /// Whether the two differ, so that a node's Cinder migration must be looked up.
    cinder_matters: bool,
    per_node: HashMap<NodeId, Vec<Attached>>,
    cluster: &'a Cluster,
}

impl CsiCheck<'_> {
    /// The node's limit for driver `d`, if it has one.
    fn limit(
        &self,
        node: &NodeInfo,
        csi_limits: Option<&[(String, Option<i64>)]>,
        d: usize,
    ) -> Option<i64> {
        let from_csi_node = csi_limits.and_then(|drivers| {
            drivers
                .iter()
                .find(|(name, _)| name == self.drivers[d])
                .and_then(|(_, n)| *n)
        });
        from_csi_node.or_else(|| {
            self.limit_keys[d]
                .as_deref()
                .and_then(|k| allocatable(node, k))
        })
    }
}

impl NodeCheck for CsiCheck<'_> {
    /// Reusable across a class while the node is unchanged: The volumes of the pods on the node itself, resolved through objects whose changes are all seen.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let new = if self.cinder_matters && migrated(self.cluster, node, CINDER_PLUGIN) {
            &self.new_migrated
        } else {
            &self.new_plain
        };
        let attached = self.per_node.get(&node.id);
        let csi_limits = self
            .cluster
            .csi_node(node.name())
            .map(|c| c.drivers.as_slice());
        for (d, &count) in new.iter().enumerate() {
            let a = attached.map_or_else(Attached::default, |slots| slots[d]);
            let added = count - a.of_new;
            if added <= 0 {
                continue;
            }
            if self
                .limit(node, csi_limits, d)
                .is_some_and(|limit| a.volumes + added > limit)
            {
                reasons.push(REASON.into());
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::Pod;
    use crate::model::VolumeBindingMode::*;
    use crate::rules::volume_limits::MIGRATED_PLUGINS_ANNOTATION;
    use crate::testkit::*;

    const EBS_CSI: &str = "ebs.csi.aws.com";
    const GCE_CSI: &str = "pd.csi.storage.gke.io";

    /// Upstream's TestCSILimits fixtures: claims `csi-<driver>-<n>` bound to CSI volumes of
    /// that driver; `csi-4` unbound of class `csi-sc` (EBS CSI provisioner); `csi-5` unbound
    /// without class; `csi-6` bound to a missing volume, class `csi-sc`.
    fn csi_storage(cl: &mut Cluster) {
        let mut volumes = Vec::new();
        let mut claims = Vec::new();
        for driver in [EBS_CSI, GCE_CSI] {
            for i in 0..4 {
                let name = format!("csi-{driver}-{i}");
                volumes.push(
                    pv(&name, GI)
                        .source(PvSource::Csi {
                            driver: driver.into(),
                            volume_handle: format!("{driver}-vol-{i}"),
                        })
                        .build(),
                );
                claims.push(pvc(&name, GI).bound(&name).build());
            }
        }
        volumes.push(
            pv("csi-cinder", GI)
                .source(PvSource::Cinder {
                    volume_id: "cinder-1".into(),
                })
                .build(),
        );
        volumes.push(
            pv("csi-in-tree-ebs", GI)
                .source(PvSource::AwsElasticBlockStore {
                    volume_id: "e".into(),
                })
                .build(),
        );
        claims.extend([
            pvc("csi-4", GI).class("csi-sc").build(),
            pvc("csi-5", GI).build(),
            pvc("csi-6", GI)
                .class("csi-sc")
                .bound("missing-in-action")
                .build(),
            pvc("csi-cinder", GI).bound("csi-cinder").build(),
            pvc("csi-cinder-unbound", GI).class("cinder").build(),
            pvc("csi-in-tree-ebs", GI).bound("csi-in-tree-ebs").build(),
            pvc("csi-in-tree-ebs-unbound", GI)
                .class("in-tree-ebs")
                .build(),
        ]);
        add_storage(
            cl,
            volumes,
            claims,
            vec![
                storage_class("csi-sc", EBS_CSI, WaitForFirstConsumer),
                storage_class("cinder", "kubernetes.io/cinder", WaitForFirstConsumer),
                storage_class("in-tree-ebs", "kubernetes.io/aws-ebs", WaitForFirstConsumer),
            ],
        );
    }

    /// Upstream's TestCSILimits cases that hold in v1.22, plus the v1.22 migration gates.
    #[test]
    fn csi_table() {
        let ebs_one = || claims("ebs-one", &["csi-ebs.csi.aws.com-0"]);
        let ebs_two = || {
            claims(
                "ebs-two",
                &["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"],
            )
        };
        let running = || claims("running", &["csi-ebs.csi.aws.com-3"]);
        let pending = || claims("pending", &["csi-4"]);
        let no_sc = || claims("no-sc", &["csi-5"]);
        let missing_pv = || claims("missing-pv", &["csi-6"]);
        let gce_two = || {
            claims(
                "gce-two",
                &["csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2"],
            )
        };
        let limits = |n: i64| vec![(EBS_CSI, Some(n)), (GCE_CSI, Some(n))];
        type Case = (
            &'static str,
            PodBuilder,
            Vec<PodBuilder>,
            Vec<(&'static str, Option<i64>)>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "fits when node volume limit >= new pods CSI volume",
                ebs_one(),
                vec![running(), ebs_two()],
                limits(4),
                true,
            ),
            (
                "doesn't when node volume limit <= pods CSI volume",
                ebs_one(),
                vec![running(), ebs_two()],
                limits(2),
                false,
            ),
            (
                "should when driver does not support volume limits",
                ebs_one(),
                vec![running(), ebs_two()],
                vec![(EBS_CSI, None)],
                true,
            ),
            (
                "count pending PVCs towards volume limit <= pods CSI volume",
                ebs_one(),
                vec![pending(), ebs_two()],
                limits(2),
                false,
            ),
            (
                "count multiple pending pvcs towards volume limit >= pods CSI volume",
                ebs_one(),
                vec![pending(), claims("pending-2", &["csi-4"]), ebs_two()],
                limits(4),
                true,
            ),
            (
                "should count PVCs with invalid PV name but valid SC",
                ebs_one(),
                vec![missing_pv(), ebs_two()],
                limits(2),
                false,
            ),
            (
                "don't count pvcs with missing SC towards volume limit",
                ebs_one(),
                vec![running(), no_sc()],
                limits(2),
                true,
            ),
            (
                "count pvcs with the same type towards volume limit",
                ebs_one(),
                vec![gce_two(), ebs_two()],
                limits(2),
                false,
            ),
            (
                "don't count pvcs with different type towards volume limit",
                gce_two(),
                vec![ebs_two(), running()],
                limits(2),
                true,
            ),
            (
                "the same volume in another pod is counted once",
                ebs_one(),
                vec![ebs_one(), running()],
                limits(2),
                true,
            ),
            (
                "no CSINode entry: no limit",
                ebs_one(),
                vec![running(), ebs_two()],
                vec![],
                true,
            ),
            (
                "v1.22: in-tree EBS claims are not counted (gate off)",
                claims("p", &["csi-in-tree-ebs", "csi-in-tree-ebs-unbound"]),
                vec![],
                vec![("ebs.csi.aws.com", Some(0))],
                true,
            ),
        ];
        for (name, new, existing, drivers, fits) in cases {
            let existing: Vec<Pod> = existing
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    p.with(|p| p.meta.name = format!("existing-{i}"))
                        .on("node")
                        .build()
                })
                .collect();
            let mut cl = cluster(vec![node("node").build()], existing);
            csi_storage(&mut cl);
            add_csi_nodes(&mut cl, vec![csi_node("node", &drivers)]);
            let got = run_filter(&MaxCsiVolumeCount, &mut cl, new.build());
            let want: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
            assert_eq!(got[0].1, want, "{name}");
        }
    }

    /// The node allocatable `attachable-volumes-csi-<driver>` applies when the CSINode gives
    /// the driver no count; a CSINode count wins over it.
    #[test]
    fn csi_limit_sources() {
        let key = "attachable-volumes-csi-ebs.csi.aws.com";
        let new = || claims("p", &["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]);
        type Case = (
            &'static str,
            crate::model::Node,
            Vec<(&'static str, Option<i64>)>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "allocatable only",
                node("node").alloc(key, 1).build(),
                vec![],
                false,
            ),
            (
                "allocatable, CSINode without count",
                node("node").alloc(key, 1).build(),
                vec![(EBS_CSI, None)],
                false,
            ),
            (
                "CSINode count wins",
                node("node").alloc(key, 1).build(),
                vec![(EBS_CSI, Some(2))],
                true,
            ),
            (
                "another driver's limit does not apply",
                node("node").build(),
                vec![(GCE_CSI, Some(0))],
                true,
            ),
        ];
        for (name, n, drivers, fits) in cases {
            let mut cl = cluster(vec![n], vec![]);
            csi_storage(&mut cl);
            add_csi_nodes(&mut cl, vec![csi_node("node", &drivers)]);
            assert_eq!(
                run_filter(&MaxCsiVolumeCount, &mut cl, new().build())[0]
                    .1
                    .is_empty(),
                fits,
                "{name}"
            );
        }
    }

    /// Cinder volumes (bound, or unbound of a Cinder class) count as `cinder.csi.openstack.org`
    /// volumes only on nodes whose CSINode lists Cinder as migrated.
    #[test]
    fn csi_counts_migrated_cinder() {
        let mut cl = cluster(
            vec![node("migrated").build(), node("plain").build()],
            vec![claims("running", &["csi-cinder"]).on("migrated").build()],
        );
        csi_storage(&mut cl);
        let mut migrated = csi_node("migrated", &[(CINDER_CSI_DRIVER, Some(1))]);
        migrated.meta.annotations.insert(
            MIGRATED_PLUGINS_ANNOTATION.into(),
            "kubernetes.io/cinder".into(),
        );
        add_csi_nodes(
            &mut cl,
            vec![migrated, csi_node("plain", &[(CINDER_CSI_DRIVER, Some(0))])],
        );
        // The running pod's Cinder volume already fills the migrated node's single slot.
        let got = run_filter(
            &MaxCsiVolumeCount,
            &mut cl,
            claims("p", &["csi-cinder-unbound"]).build(),
        );
        assert_eq!(passing(&got), vec!["plain"]);
        // Sharing the attached volume adds nothing.
        let got = run_filter(
            &MaxCsiVolumeCount,
            &mut cl,
            claims("p", &["csi-cinder"]).build(),
        );
        assert_eq!(passing(&got), vec!["migrated", "plain"]);
    }
}
