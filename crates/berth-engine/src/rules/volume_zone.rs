//! NoVolumeZoneConflict (v1.22 VolumeZone): the zone and region labels of the volumes bound
//! to the pod's claims must be matched by the node's labels.
//!
//! v1.22 semantics:
//! - A node carrying none of the four zone/region labels (GA `topology.kubernetes.io/*`,
//!   beta `failure-domain.beta.kubernetes.io/*`) passes, whatever the claims look like.
//! - Otherwise, claim by claim in volume order: each of those four labels on the bound volume
//!   must be present on the node under the same key (no GA/beta translation in v1.22) with
//!   one of the volume's values; a value may list several zones separated by `__`. A value
//!   with an empty element is ignored, as upstream logs and skips it.
//! - An unbound claim of a WaitForFirstConsumer class is skipped. A missing claim, volume or
//!   class, an unbound claim without class, and an unbound claim of an Immediate class fail
//!   the (zone-labelled) node with upstream's message.

use std::sync::Arc;

use crate::cluster::{Cluster, NodeInfo, WellKnown};
use crate::framework::{
    CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::labels::Sym;
use crate::model::VolumeBindingMode;
use crate::rules::volume_util::{
    REASON_NO_CLAIM_NAME, claim_class, claim_names, claim_not_found, class_not_found, find_claim,
    volume_not_found,
};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "VolumeZone";

/// The node is not in a zone (or region) of one of the pod's volumes.
pub const REASON: &str = "node(s) had no available volume zone";
/// An unbound claim has no class to tell whether it may wait.
pub const REASON_NO_CLASS: &str = "PersistentVolumeClaim had no pv name and storageClass name";
/// An unbound claim of an Immediate class.
pub const REASON_UNBOUND: &str = "PersistentVolume had no name";

/// The zone and region label keys, in upstream's order.
const ZONE_KEYS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// The same keys as the cluster interned them (it interns these four up front).
fn zone_key_syms(keys: &WellKnown) -> [Sym; 4] {
    [keys.zone_beta, keys.region_beta, keys.zone, keys.region]
}

/// The rule.
pub struct NoVolumeZoneConflict;

/// One step of the per-node check, in the pod's volume order.
enum Step {
    /// The node must carry `key` with one of `values` (values no node has are left out).
    Zone { key: Sym, values: Vec<Sym> },
    /// A lookup failed: every zone-labelled node fails with this reason.
    Fail(Reason),
}

impl FilterRule for NoVolumeZoneConflict {
    /// Upstream's VolumeZone fails as UnschedulableAndUnresolvable.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let cluster = ctx.cluster;
        let namespace = ctx.pod.pod.meta.namespace.as_str();
        let mut steps = Vec::new();
        for name in claim_names(ctx.pod) {
            match volume_zones(cluster, namespace, name, &mut steps) {
                Ok(()) => {}
                Err(reason) => {
                    // Upstream returns at the first failed lookup.
                    steps.push(Step::Fail(reason));
                    break;
                }
            }
        }
        if steps.is_empty() {
            return FilterPrep::Skip;
        }
        FilterPrep::Check(Box::new(ZoneCheck {
            steps,
            node_keys: zone_key_syms(&cluster.keys()),
        }))
    }
}

/// Appends the zone steps of one claim's volume, or fails with upstream's message.
fn volume_zones(
    cluster: &Cluster,
    namespace: &str,
    claim_name: &str,
    steps: &mut Vec<Step>,
) -> Result<(), Reason> {
    let owned = |s: String| Reason::Owned(Arc::from(s));
    if claim_name.is_empty() {
        return Err(REASON_NO_CLAIM_NAME.into());
    }
    let claim = find_claim(cluster, namespace, claim_name)
        .ok_or_else(|| owned(claim_not_found(claim_name)))?;
    if claim.volume_name.is_empty() {
        let class_name = claim_class(claim);
        if class_name.is_empty() {
            return Err(REASON_NO_CLASS.into());
        }
        let class = cluster
            .storage_class(class_name)
            .ok_or_else(|| owned(class_not_found(class_name)))?;
        return match class.volume_binding_mode {
            VolumeBindingMode::WaitForFirstConsumer => Ok(()),
            VolumeBindingMode::Immediate => Err(REASON_UNBOUND.into()),
        };
    }
    let pv = cluster
        .persistent_volume(&claim.volume_name)
        .ok_or_else(|| owned(volume_not_found(&claim.volume_name)))?;
    for (key, sym) in ZONE_KEYS.into_iter().zip(zone_key_syms(&cluster.keys())) {
        let Some(zones) = pv.meta.labels.get(key).and_then(|v| zone_set(v)) else {
            continue;
        };
        // A zone no label ever named is on no node: leaving it out keeps the test exact.
        let values = zones.filter_map(|z| cluster.interner().get(z)).collect();
        steps.push(Step::Zone { key: sym, values });
    }
    Ok(())
}

/// Upstream's `LabelZonesToSet`: `__`-separated, trimmed; an empty element makes the whole
/// value invalid (None).
fn zone_set(value: &str) -> Option<impl Iterator<Item = &str>> {
    let zones = value.split("__").map(str::trim);
    if zones.clone().any(str::is_empty) {
        return None;
    }
    Some(zones)
}

/// The prepared check.
struct ZoneCheck {
    steps: Vec<Step>,
    /// The four zone/region keys: a node with none of them passes.
    node_keys: [Sym; 4],
}

impl NodeCheck for ZoneCheck {
    /// Reusable across a class while the node is unchanged: The node's labels and the pod's volumes' zones (objects: any change to them is seen).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        if !self.node_keys.iter().any(|k| node.labels.has(*k)) {
            return true;
        }
        for step in &self.steps {
            match step {
                Step::Zone { key, values } => {
                    if !node.labels.get(*key).is_some_and(|v| values.contains(&v)) {
                        reasons.push(REASON.into());
                        return false;
                    }
                }
                Step::Fail(reason) => {
                    reasons.push(reason.clone());
                    return false;
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PersistentVolume, VolumeBindingMode::*};
    use crate::testkit::*;

    const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
    const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
    const ZONE: &str = "topology.kubernetes.io/zone";
    const REGION: &str = "topology.kubernetes.io/region";

    fn volumes() -> Vec<PersistentVolume> {
        vec![
            pv("Vol_1", GI).label(BETA_ZONE, "us-west1-a").build(),
            pv("Vol_2", GI)
                .label(BETA_REGION, "us-west1")
                .label("uselessLabel", "none")
                .build(),
            pv("Vol_3", GI)
                .label(BETA_ZONE, "us-west1-c__us-west1-a")
                .build(),
            pv("Vol_Stable_1", GI).label(ZONE, "us-west1-a").build(),
            pv("Vol_Stable_2", GI)
                .label(REGION, "us-west1")
                .label("uselessLabel", "none")
                .build(),
            pv("Vol_Stable_3", GI)
                .label(ZONE, "us-west1-a")
                .label(REGION, "us-west1-a")
                .build(),
            pv("Vol_Multi", GI)
                .label(ZONE, " us-west1-c __ us-west1-b")
                .build(),
            pv("Vol_Bad", GI).label(ZONE, "us-west1-a____").build(),
        ]
    }

    fn cluster_with(node_labels: &[(&str, &str)]) -> crate::Cluster {
        let n = node_labels
            .iter()
            .fold(node("host1"), |n, (k, v)| n.label(k, v))
            .build();
        let mut cl = cluster(vec![n], vec![]);
        let claims = [
            ("PVC_1", "Vol_1"),
            ("PVC_2", "Vol_2"),
            ("PVC_3", "Vol_3"),
            ("PVC_4", "Vol_not_exist"),
            ("PVC_Stable_1", "Vol_Stable_1"),
            ("PVC_Stable_2", "Vol_Stable_2"),
            ("PVC_Stable_3", "Vol_Stable_3"),
            ("PVC_Multi", "Vol_Multi"),
            ("PVC_Bad", "Vol_Bad"),
        ]
        .iter()
        .map(|(c, v)| pvc(c, GI).bound(v).build())
        .chain([
            pvc("PVC_NoSC", GI).class("Class_0").build(),
            pvc("PVC_EmptySC", GI).build(),
            pvc("PVC_WaitSC", GI).class("Class_Wait").build(),
            pvc("PVC_ImmediateSC", GI).class("Class_Immediate").build(),
        ])
        .collect();
        add_storage(
            &mut cl,
            volumes(),
            claims,
            vec![
                storage_class("Class_Immediate", "p", Immediate),
                storage_class("Class_Wait", "p", WaitForFirstConsumer),
            ],
        );
        cl
    }

    /// Upstream's TestSingleZone, TestMultiZone and TestWithBinding, restated for v1.22: the
    /// cross GA/beta matching of later releases does not exist, and lookup failures surface
    /// in Filter (there is no VolumeZone PreFilter in v1.22).
    #[test]
    fn table() {
        let us_west1_a = [(BETA_ZONE, "us-west1-a"), ("uselessLabel", "none")];
        type Case<'a> = (
            &'a str,
            Vec<&'a str>,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                "pod without volume",
                vec![],
                &[(BETA_ZONE, "us-west1-a")],
                None,
            ),
            ("node without labels", vec!["PVC_1"], &[], None),
            ("beta zone label matched", vec!["PVC_1"], &us_west1_a, None),
            (
                "beta region label matched",
                vec!["PVC_2"],
                &[(BETA_REGION, "us-west1"), ("uselessLabel", "none")],
                None,
            ),
            (
                "beta region label doesn't match",
                vec!["PVC_2"],
                &[(BETA_REGION, "no_us-west1")],
                Some(REASON),
            ),
            (
                "beta zone label doesn't match",
                vec!["PVC_1"],
                &[(BETA_ZONE, "no_us-west1-a")],
                Some(REASON),
            ),
            (
                "zone label matched",
                vec!["PVC_Stable_1"],
                &[(ZONE, "us-west1-a")],
                None,
            ),
            (
                "region label matched",
                vec!["PVC_Stable_2"],
                &[(REGION, "us-west1")],
                None,
            ),
            (
                "region label doesn't match",
                vec!["PVC_Stable_2"],
                &[(REGION, "no_us-west1")],
                Some(REASON),
            ),
            (
                "zone label doesn't match",
                vec!["PVC_Stable_1"],
                &[(ZONE, "no_us-west1-a")],
                Some(REASON),
            ),
            (
                "pv with zone and region, node with only zone",
                vec!["PVC_Stable_3"],
                &[(ZONE, "us-west1-a")],
                Some(REASON),
            ),
            (
                "pv with zone, node with beta zone",
                vec!["PVC_Stable_1"],
                &[(BETA_ZONE, "us-west1-a")],
                Some(REASON),
            ),
            (
                "v1.22: pv with beta label, node with ga label only",
                vec!["PVC_1"],
                &[(ZONE, "us-west1-a")],
                Some(REASON),
            ),
            (
                "multi zone: one of the zones",
                vec!["PVC_3"],
                &us_west1_a,
                None,
            ),
            (
                "multi zone: none of the zones",
                vec!["PVC_1"],
                &[(BETA_ZONE, "us-west1-b")],
                Some(REASON),
            ),
            (
                "zone values are trimmed",
                vec!["PVC_Multi"],
                &[(ZONE, "us-west1-b")],
                None,
            ),
            (
                "a value with an empty element is ignored",
                vec!["PVC_Bad"],
                &[(ZONE, "elsewhere")],
                None,
            ),
            (
                "missing volume",
                vec!["PVC_4"],
                &us_west1_a,
                Some("persistentvolume \"Vol_not_exist\" not found"),
            ),
            (
                "missing claim",
                vec!["PVC_missing"],
                &us_west1_a,
                Some("persistentvolumeclaim \"PVC_missing\" not found"),
            ),
            (
                "missing claim on a node without zone labels",
                vec!["PVC_missing"],
                &[],
                None,
            ),
            (
                "unbound volume empty storage class",
                vec!["PVC_EmptySC"],
                &us_west1_a,
                Some(REASON_NO_CLASS),
            ),
            (
                "unbound volume no storage class",
                vec!["PVC_NoSC"],
                &us_west1_a,
                Some("storageclass.storage.k8s.io \"Class_0\" not found"),
            ),
            (
                "unbound volume immediate binding mode",
                vec!["PVC_ImmediateSC"],
                &us_west1_a,
                Some(REASON_UNBOUND),
            ),
            (
                "unbound volume wait binding mode",
                vec!["PVC_WaitSC"],
                &us_west1_a,
                None,
            ),
            (
                "the first failing volume decides",
                vec!["PVC_Stable_1", "PVC_4"],
                &us_west1_a,
                Some(REASON),
            ),
            (
                "an error after a matching volume",
                vec!["PVC_1", "PVC_4"],
                &us_west1_a,
                Some("persistentvolume \"Vol_not_exist\" not found"),
            ),
            (
                "a claim with no name",
                vec![""],
                &us_west1_a,
                Some(REASON_NO_CLAIM_NAME),
            ),
        ];
        for (name, claims, node_labels, want) in cases {
            let mut cl = cluster_with(node_labels);
            let p = claims.iter().fold(pod("pod_1"), |p, c| p.claim(c)).build();
            let got = run_filter(&NoVolumeZoneConflict, &mut cl, p);
            let want: Vec<String> = want.into_iter().map(String::from).collect();
            assert_eq!(got[0].1, want, "{name}");
        }
    }

    #[test]
    fn claims_are_looked_up_in_the_pod_namespace() {
        let mut cl = cluster_with(&[(ZONE, "us-west1-b")]);
        add_storage(
            &mut cl,
            vec![],
            vec![
                pvc("PVC_Stable_1", GI)
                    .ns("other")
                    .bound("Vol_Multi")
                    .build(),
            ],
            vec![],
        );
        let in_default = pod("p").claim("PVC_Stable_1").build();
        let in_other = pod("p").ns("other").claim("PVC_Stable_1").build();
        assert_eq!(
            run_filter(&NoVolumeZoneConflict, &mut cl, in_default)[0].1,
            vec![REASON]
        );
        assert!(
            run_filter(&NoVolumeZoneConflict, &mut cl, in_other)[0]
                .1
                .is_empty()
        );
    }
}
