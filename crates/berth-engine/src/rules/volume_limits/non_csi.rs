//! In-tree kinds (v1.22 `non_csi.go`): count the distinct volumes of the kind used by the
//! node's pods, inline or through a claim's bound volume, add the pod's volumes not already
//! there, and fail if the total exceeds the limit:
//! - the node's allocatable `attachable-volumes-{aws-ebs,gce-pd,azure-disk,cinder}` if present;
//! - else EBS 39, or 25 when the instance type label (GA or beta key) matches upstream's Nitro
//!   pattern `^[cmr]5.*|t3|z1d`; GCE PD 16; Azure disk 16; Cinder 256. The scheduler's
//!   `KUBE_MAX_PD_VOLS` environment override is not modelled.
//! - A claim that is missing is not counted (v1.22 does not fail the new pod for it). An unbound
//!   claim, or one whose volume is missing, counts as one volume of its own when its class
//!   (`spec.storageClassName` only) has the kind's in-tree provisioner.
//! - A node whose CSINode lists the plugin in `storage.alpha.kubernetes.io/migrated-plugins`
//!   defers to the CSI rule, if the plugin's migration gate is on: of the four, only Cinder's
//!   (`CSIMigrationOpenStack`) is on by default in v1.22.

use std::collections::HashMap;

use super::{Attached, CINDER_PLUGIN, REASON, VolKey, allocatable, migrated};
use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{CycleContext, FilterPrep, FilterRule, NodeCheck, Reason, Reuse};
use crate::labels::Sym;
use crate::model::{PersistentVolumeClaim, PvSource, Volume, VolumeSource};
use crate::rules::volume_util::{REASON_NO_CLAIM_NAME, claim_names, find_claim};

/// The kube-scheduler v1.22 framework plugins serving MaxEBSVolumeCount, MaxGCEPDVolumeCount,
/// MaxAzureDiskVolumeCount and MaxCinderVolumeCount (v1.22's legacy registry).
pub const UPSTREAM_PLUGIN_EBS: &str = "EBSLimits";
/// See [`UPSTREAM_PLUGIN_EBS`].
pub const UPSTREAM_PLUGIN_GCE_PD: &str = "GCEPDLimits";
/// See [`UPSTREAM_PLUGIN_EBS`].
pub const UPSTREAM_PLUGIN_AZURE_DISK: &str = "AzureDiskLimits";
/// See [`UPSTREAM_PLUGIN_EBS`].
pub const UPSTREAM_PLUGIN_CINDER: &str = "CinderLimits";

/// EBS volumes a node attaches by default.
pub const DEFAULT_MAX_EBS_VOLUMES: i64 = 39;
/// EBS volumes a Nitro instance attaches by default.
pub const DEFAULT_MAX_EBS_NITRO_VOLUMES: i64 = 25;
/// GCE persistent disks a node attaches by default.
pub const DEFAULT_MAX_GCE_PD_VOLUMES: i64 = 16;
/// Azure disks a node attaches by default.
pub const DEFAULT_MAX_AZURE_DISK_VOLUMES: i64 = 16;
/// Cinder volumes a node attaches by default.
pub const DEFAULT_MAX_CINDER_VOLUMES: i64 = 256;

/// An in-tree volume kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ebs,
    GcePd,
    AzureDisk,
    Cinder,
}

impl Kind {
    fn inline_id(self, source: &VolumeSource) -> Option<&str> {
        match (self, source) {
            (Kind::Ebs, VolumeSource::AwsElasticBlockStore { volume_id }) => Some(volume_id),
            (Kind::GcePd, VolumeSource::GcePersistentDisk { pd_name, .. }) => Some(pd_name),
            (Kind::AzureDisk, VolumeSource::AzureDisk { disk_name }) => Some(disk_name),
            (Kind::Cinder, VolumeSource::Cinder { volume_id }) => Some(volume_id),
            _ => None,
        }
    }

    fn volume_id(self, source: &PvSource) -> Option<&str> {
        match (self, source) {
            (Kind::Ebs, PvSource::AwsElasticBlockStore { volume_id }) => Some(volume_id),
            (Kind::GcePd, PvSource::GcePersistentDisk { pd_name }) => Some(pd_name),
            (Kind::AzureDisk, PvSource::AzureDisk { disk_name }) => Some(disk_name),
            (Kind::Cinder, PvSource::Cinder { volume_id }) => Some(volume_id),
            _ => None,
        }
    }

    /// The in-tree plugin (and provisioner) name.
    fn plugin(self) -> &'static str {
        match self {
            Kind::Ebs => "kubernetes.io/aws-ebs",
            Kind::GcePd => "kubernetes.io/gce-pd",
            Kind::AzureDisk => "kubernetes.io/azure-disk",
            Kind::Cinder => CINDER_PLUGIN,
        }
    }

    /// The node allocatable key overriding the default limit.
    fn limit_key(self) -> &'static str {
        match self {
            Kind::Ebs => "attachable-volumes-aws-ebs",
            Kind::GcePd => "attachable-volumes-gce-pd",
            Kind::AzureDisk => "attachable-volumes-azure-disk",
            Kind::Cinder => "attachable-volumes-cinder",
        }
    }

    /// Whether v1.22's default feature gates let this plugin migrate to CSI.
    fn migration_gate_on(self) -> bool {
        self == Kind::Cinder
    }

    /// Appends the identities of the volumes of this kind among `volumes` of a pod in
    /// `namespace`.
    fn collect<'a>(
        self,
        cluster: &'a Cluster,
        namespace: &'a str,
        volumes: &'a [Volume],
        out: &mut Vec<VolKey<'a>>,
    ) {
        for v in volumes {
            if let Some(id) = self.inline_id(&v.source) {
                out.push(VolKey::Id(id));
                continue;
            }
            let VolumeSource::Pvc { claim_name } = &v.source else {
                continue;
            };
            // A missing claim may belong to any kind: not counted.
            let Some(claim) = find_claim(cluster, namespace, claim_name) else {
                continue;
            };
            let stand_in = VolKey::Claim(namespace, claim_name);
            let volume = (!claim.volume_name.is_empty())
                .then(|| cluster.persistent_volume(&claim.volume_name))
                .flatten();
            match volume {
                Some(pv) => {
                    if let Some(id) = self.volume_id(&pv.source) {
                        out.push(VolKey::Id(id));
                    }
                }
                // The pod may still use the volume the claim was bound to: count it if the
                // claim's class provisions this kind.
                None if self.provisions(cluster, claim) => out.push(stand_in),
                None => {}
            }
        }
    }

    /// Upstream's `matchProvisioner`: the class named in `spec.storageClassName` exists and
    /// has this kind's in-tree provisioner.
    fn provisions(self, cluster: &Cluster, claim: &PersistentVolumeClaim) -> bool {
        claim
            .storage_class_name
            .as_deref()
            .and_then(|c| cluster.storage_class(c))
            .is_some_and(|sc| sc.provisioner == self.plugin())
    }
}

/// MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount.
pub struct MaxVolumeCount {
    kind: Kind,
}

impl MaxVolumeCount {
    /// MaxEBSVolumeCount.
    pub fn ebs() -> Self {
        MaxVolumeCount { kind: Kind::Ebs }
    }
    /// MaxGCEPDVolumeCount.
    pub fn gce_pd() -> Self {
        MaxVolumeCount { kind: Kind::GcePd }
    }
    /// MaxAzureDiskVolumeCount.
    pub fn azure_disk() -> Self {
        MaxVolumeCount {
            kind: Kind::AzureDisk,
        }
    }
    /// MaxCinderVolumeCount.
    pub fn cinder() -> Self {
        MaxVolumeCount { kind: Kind::Cinder }
    }
}

impl FilterRule for MaxVolumeCount {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        if pod.pod.volumes.is_empty() {
            return FilterPrep::Skip;
        }
        if claim_names(pod).any(str::is_empty) {
            return FilterPrep::RejectAll(vec![REASON_NO_CLAIM_NAME.into()]);
        }
        let mut new = Vec::new();
        self.kind
            .collect(cluster, &pod.pod.meta.namespace, &pod.pod.volumes, &mut new);
        new.sort_unstable();
        new.dedup();
        if new.is_empty() {
            return FilterPrep::Skip;
        }
        // Distinct volumes per node, from the few pods that have volumes at all.
        let mut attached: Vec<(NodeId, VolKey<'a>)> = Vec::new();
        let mut keys = Vec::new();
        for id in cluster.pods_with_volumes() {
            let p = cluster.pod(*id);
            let Some(node) = p.node else { continue };
            keys.clear();
            self.kind
                .collect(cluster, &p.pod.meta.namespace, &p.pod.volumes, &mut keys);
            attached.extend(keys.iter().map(|k| (node, *k)));
        }
        attached.sort_unstable();
        attached.dedup();
        let mut per_node: HashMap<NodeId, Attached> = HashMap::new();
        for (node, key) in attached {
            let a = per_node.entry(node).or_default();
            a.volumes += 1;
            if new.binary_search(&key).is_ok() {
                a.of_new += 1;
            }
        }
        FilterPrep::Check(Box::new(CountCheck {
            kind: self.kind,
            new: new.len() as i64,
            per_node,
            cluster,
            instance_type_keys: [
                cluster.interner().get("node.kubernetes.io/instance-type"),
                cluster.interner().get("beta.kubernetes.io/instance-type"),
            ],
        }))
    }
}

/// The prepared in-tree check.
struct CountCheck<'a> {
    kind: Kind,
    /// Distinct volumes of the kind the pod uses.
    new: i64,
    per_node: HashMap<NodeId, Attached>,
    cluster: &'a Cluster,
    /// The GA and beta instance-type label keys, if any node carries them.
    instance_type_keys: [Option<Sym>; 2],
}

impl CountCheck<'_> {
    /// The node's limit: its allocatable key, else the kind's default.
    fn limit(&self, node: &NodeInfo) -> i64 {
        if let Some(n) = allocatable(node, self.kind.limit_key()) {
            return n;
        }
        match self.kind {
            Kind::Ebs => {
                let instance_type = self
                    .instance_type_keys
                    .iter()
                    .flatten()
                    .find_map(|k| node.labels.get(*k))
                    .map(|v| self.cluster.interner().resolve(v));
                if instance_type.is_some_and(is_nitro) {
                    DEFAULT_MAX_EBS_NITRO_VOLUMES
                } else {
                    DEFAULT_MAX_EBS_VOLUMES
                }
            }
            Kind::GcePd => DEFAULT_MAX_GCE_PD_VOLUMES,
            Kind::AzureDisk => DEFAULT_MAX_AZURE_DISK_VOLUMES,
            Kind::Cinder => DEFAULT_MAX_CINDER_VOLUMES,
        }
    }
}

impl NodeCheck for CountCheck<'_> {
    /// Reusable across a class while the node is unchanged: The volumes of the pods on the node itself, resolved through objects whose changes are all seen.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        if self.kind.migration_gate_on() && migrated(self.cluster, node, self.kind.plugin()) {
            return true;
        }
        let a = self.per_node.get(&node.id).copied().unwrap_or_default();
        if a.volumes + self.new - a.of_new > self.limit(node) {
            reasons.push(REASON.into());
            return false;
        }
        true
    }
}

/// Upstream's `EBSNitroLimitRegex` `^[cmr]5.*|t3|z1d`: an unanchored alternation, so "t3"
/// and "z1d" match anywhere in the instance type.
fn is_nitro(instance_type: &str) -> bool {
    ["c5", "m5", "r5"]
        .iter()
        .any(|p| instance_type.starts_with(p))
        || instance_type.contains("t3")
        || instance_type.contains("z1d")
}

#[cfg(test)]
mod tests;
