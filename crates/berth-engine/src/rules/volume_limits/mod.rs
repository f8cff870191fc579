//! MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount
//! (v1.22 EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits) and MaxCSIVolumeCountPred
//! (v1.22 NodeVolumeLimits): a node may attach only so many volumes.
//!
//! Split as upstream's nodevolumelimits package is: `non_csi` counts the in-tree kinds,
//! `csi` counts claims per CSI driver; this module holds what both share.

mod csi;
mod non_csi;

pub use csi::{MaxCsiVolumeCount, UPSTREAM_PLUGIN_CSI};
pub use non_csi::{
    DEFAULT_MAX_AZURE_DISK_VOLUMES, DEFAULT_MAX_CINDER_VOLUMES, DEFAULT_MAX_EBS_NITRO_VOLUMES,
    DEFAULT_MAX_EBS_VOLUMES, DEFAULT_MAX_GCE_PD_VOLUMES, MaxVolumeCount,
    UPSTREAM_PLUGIN_AZURE_DISK, UPSTREAM_PLUGIN_CINDER, UPSTREAM_PLUGIN_EBS,
    UPSTREAM_PLUGIN_GCE_PD,
};

use crate::cluster::{Cluster, NodeInfo};

/// Too many volumes on the node.
pub const REASON: &str = "node(s) exceed max volume count";

/// The CSINode annotation listing in-tree plugins migrated to CSI on the node.
pub const MIGRATED_PLUGINS_ANNOTATION: &str = "storage.alpha.kubernetes.io/migrated-plugins";
/// The Cinder in-tree plugin, the only one whose migration gate v1.22 turns on by default.
const CINDER_PLUGIN: &str = "kubernetes.io/cinder";
/// The CSI driver Cinder volumes migrate to.
const CINDER_CSI_DRIVER: &str = "cinder.csi.openstack.org";

/// A volume's identity when counting: a real ID, or a stand-in for a claim whose volume is
/// not known (unbound, or bound to a missing volume). Upstream gives stand-ins a random
/// prefix, so they never equal a real ID but equal each other for the same claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum VolKey<'a> {
    Id(&'a str),
    Claim(&'a str, &'a str),
}

/// What a node already attaches, for one pod's check.
#[derive(Debug, Clone, Copy, Default)]
struct Attached {
    /// Distinct volumes of the kind (or driver) on the node.
    volumes: i64,
    /// How many of them are among the pod's new volumes.
    of_new: i64,
}

/// A node allocatable quantity, if the node lists it.
fn allocatable(node: &NodeInfo, key: &str) -> Option<i64> {
    let scalars = &node.allocatable.scalars;
    scalars
        .binary_search_by(|(n, _)| (**n).cmp(key))
        .ok()
        .map(|i| scalars[i].1)
}

/// Whether the node's CSINode says `plugin` was migrated to CSI there.
fn migrated(cluster: &Cluster, node: &NodeInfo, plugin: &str) -> bool {
    cluster
        .csi_node(node.name())
        .and_then(|c| c.meta.annotations.get(MIGRATED_PLUGINS_ANNOTATION))
        .is_some_and(|list| list.split(',').any(|p| p == plugin))
}

#[cfg(test)]
mod test_support {
    use crate::model::VolumeSource;
    use crate::testkit::*;

    pub(super) fn ebs(id: &str) -> VolumeSource {
        VolumeSource::AwsElasticBlockStore {
            volume_id: id.into(),
        }
    }
    pub(super) fn with(name: &str, sources: &[VolumeSource]) -> PodBuilder {
        sources
            .iter()
            .enumerate()
            .fold(pod(name), |p, (i, s)| p.volume(&format!("v{i}"), s.clone()))
    }
    pub(super) fn claims(name: &str, claims: &[&str]) -> PodBuilder {
        claims.iter().fold(pod(name), |p, c| p.claim(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::volume_util::REASON_NO_CLAIM_NAME;
    use crate::testkit::*;

    #[test]
    fn a_claim_without_name_fails_everywhere() {
        let mut cl = cluster(vec![node("n").build()], vec![]);
        let p = pod("p").claim("").build();
        assert_eq!(
            run_filter(&MaxVolumeCount::ebs(), &mut cl, p.clone())[0].1,
            vec![REASON_NO_CLAIM_NAME]
        );
        assert_eq!(
            run_filter(&MaxCsiVolumeCount, &mut cl, p)[0].1,
            vec![REASON_NO_CLAIM_NAME]
        );
    }
}
