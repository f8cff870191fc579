use super::super::test_support::*;
use super::*;
use crate::model::Pod;
use crate::model::VolumeBindingMode::*;
use crate::rules::volume_limits::MIGRATED_PLUGINS_ANNOTATION;
use crate::testkit::*;

/// Upstream's TestEBSLimits fixtures (getFakePVCLister / getFakePVLister for "EBS").
fn ebs_storage(cl: &mut Cluster) {
    add_storage(
        cl,
        vec![
            pv("someEBSVol", GI)
                .source(PvSource::AwsElasticBlockStore {
                    volume_id: "ebsVol".into(),
                })
                .build(),
            pv("someNonEBSVol", GI).build(),
        ],
        vec![
            pvc("someEBSVol", GI)
                .class("EBS")
                .bound("someEBSVol")
                .build(),
            pvc("someNonEBSVol", GI)
                .class("EBS")
                .bound("someNonEBSVol")
                .build(),
            pvc("pvcWithDeletedPV", GI)
                .class("EBS")
                .bound("pvcWithDeletedPV")
                .build(),
            pvc("anotherPVCWithDeletedPV", GI)
                .class("EBS")
                .bound("anotherPVCWithDeletedPV")
                .build(),
            pvc("unboundPVC", GI).class("EBS").build(),
            pvc("anotherUnboundPVC", GI).class("EBS").build(),
            pvc("unboundPVCWithDefaultSCPod", GI)
                .class("standard-sc")
                .build(),
            pvc("unboundPVCWithInvalidSCPod", GI)
                .class("invalid-sc")
                .build(),
        ],
        vec![
            storage_class("EBS", "kubernetes.io/aws-ebs", Immediate),
            storage_class("standard-sc", "standard-provisioner", Immediate),
        ],
    );
}

/// Upstream's TestEBSLimits, case by case (v1.22: missing claims are simply not counted).
#[test]
fn ebs_table() {
    let one_vol = || with("ovp", &[ebs("ovp")]);
    let two_vol = || with("tvp", &[ebs("tvp1"), ebs("tvp2")]);
    let split_vols = || with("svp", &[VolumeSource::Other, ebs("svp")]);
    let non_applicable = || with("na", &[VolumeSource::Other]);
    let empty = || pod("empty");
    let one_pvc = || claims("one-pvc", &["someEBSVol"]);
    let split_pvc = || claims("split-pvc", &["someNonEBSVol", "someEBSVol"]);
    let deleted_pvc = || claims("deleted-pvc", &["deletedPVC"]);
    let two_deleted_pvc = || claims("two-deleted-pvc", &["deletedPVC", "anotherDeletedPVC"]);
    let deleted_pv = || claims("deleted-pv", &["pvcWithDeletedPV"]);
    let another_deleted_pv = || claims("another-deleted-pv", &["anotherPVCWithDeletedPV"]);
    let unbound = || claims("unbound", &["unboundPVC"]);
    let another_unbound = || claims("another-unbound", &["anotherUnboundPVC"]);
    type Case = (&'static str, PodBuilder, Vec<PodBuilder>, i64, bool);
    let cases: Vec<Case> = vec![
        (
            "fits when node capacity >= new pod's EBS volumes",
            one_vol(),
            vec![two_vol(), one_vol()],
            4,
            true,
        ),
        (
            "doesn't fit when node capacity < new pod's EBS volumes",
            two_vol(),
            vec![one_vol()],
            2,
            false,
        ),
        (
            "new pod's count ignores non-EBS volumes",
            split_vols(),
            vec![two_vol()],
            3,
            true,
        ),
        (
            "existing pods' counts ignore non-EBS volumes",
            two_vol(),
            vec![split_vols(), non_applicable(), empty()],
            3,
            true,
        ),
        (
            "new pod's count considers PVCs backed by EBS volumes",
            one_pvc(),
            vec![split_vols(), non_applicable(), empty()],
            3,
            true,
        ),
        (
            "new pod's count ignores PVCs not backed by EBS volumes",
            split_pvc(),
            vec![split_vols(), one_vol()],
            3,
            true,
        ),
        (
            "existing pods' counts considers PVCs backed by EBS volumes",
            two_vol(),
            vec![one_vol(), one_pvc()],
            3,
            false,
        ),
        (
            "already-mounted EBS volumes are always ok to allow",
            two_vol(),
            vec![one_vol(), two_vol(), one_pvc()],
            4,
            true,
        ),
        (
            "the same EBS volumes are not counted multiple times",
            split_vols(),
            vec![one_vol(), one_vol(), one_pvc()],
            3,
            true,
        ),
        (
            "missing PVC is not counted towards the PV limit (1)",
            one_pvc(),
            vec![one_vol(), deleted_pvc()],
            1,
            false,
        ),
        (
            "missing PVC is not counted towards the PV limit (2)",
            one_pvc(),
            vec![one_vol(), deleted_pvc()],
            2,
            true,
        ),
        (
            "two missing PVCs are not counted towards the PV limit twice",
            one_pvc(),
            vec![one_vol(), two_deleted_pvc()],
            2,
            true,
        ),
        (
            "unbound PVC with invalid SC is not counted towards the PV limit",
            claims("p", &["unboundPVCWithInvalidSCPod"]),
            vec![one_vol()],
            1,
            true,
        ),
        (
            "unbound PVC from different provisioner is not counted towards the PV limit",
            claims("p", &["unboundPVCWithDefaultSCPod"]),
            vec![one_vol()],
            1,
            true,
        ),
        (
            "pod with missing PV is counted towards the PV limit (1)",
            one_pvc(),
            vec![one_vol(), deleted_pv()],
            2,
            false,
        ),
        (
            "pod with missing PV is counted towards the PV limit (2)",
            one_pvc(),
            vec![one_vol(), deleted_pv()],
            3,
            true,
        ),
        (
            "two pods missing the same PV are counted towards the PV limit only once",
            deleted_pv(),
            vec![one_vol(), deleted_pv()],
            2,
            true,
        ),
        (
            "two pods missing different PVs are counted towards the PV limit twice",
            another_deleted_pv(),
            vec![one_vol(), deleted_pv()],
            2,
            false,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit (1)",
            one_pvc(),
            vec![one_vol(), unbound()],
            2,
            false,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit (2)",
            one_pvc(),
            vec![one_vol(), unbound()],
            3,
            true,
        ),
        (
            "the same unbound PVC in multiple pods is counted towards the PV limit only once",
            unbound(),
            vec![one_vol(), unbound()],
            2,
            true,
        ),
        (
            "two different unbound PVCs are counted towards the PV limit as two volumes",
            another_unbound(),
            vec![one_vol(), unbound()],
            2,
            false,
        ),
        (
            "the new pod's missing claim is not counted either (v1.22)",
            claims("p", &["deletedPVC", "someEBSVol"]),
            vec![one_vol()],
            2,
            true,
        ),
    ];
    for (name, new, existing, max, fits) in cases {
        let existing: Vec<Pod> = existing
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                p.with(|p| p.meta.name = format!("existing-{i}"))
                    .on("node")
                    .build()
            })
            .collect();
        let mut cl = cluster(
            vec![
                node("node")
                    .alloc("attachable-volumes-aws-ebs", max)
                    .build(),
                node("idle").build(),
            ],
            existing,
        );
        ebs_storage(&mut cl);
        let got = run_filter(&MaxVolumeCount::ebs(), &mut cl, new.build());
        let want: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
        assert_eq!(got[0].1, want, "{name}");
        assert!(
            got[1].1.is_empty(),
            "{name}: an empty node with the default limit fits"
        );
    }
}

fn many(prefix: &str, n: usize, source: impl Fn(String) -> VolumeSource) -> PodBuilder {
    let sources: Vec<VolumeSource> = (0..n).map(|i| source(format!("{prefix}{i}"))).collect();
    with(prefix, &sources)
}

/// Default limits per kind, the Nitro instance types, and the allocatable override.
#[test]
fn limits() {
    let gce = |id: String| VolumeSource::GcePersistentDisk {
        pd_name: id,
        read_only: false,
    };
    let azure = |id: String| VolumeSource::AzureDisk { disk_name: id };
    let cinder = |id: String| VolumeSource::Cinder { volume_id: id };
    type Case = (
        &'static str,
        MaxVolumeCount,
        crate::model::Node,
        usize,
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            "EBS default 39",
            MaxVolumeCount::ebs(),
            node("n").build(),
            39,
            true,
        ),
        (
            "EBS default 39, exceeded",
            MaxVolumeCount::ebs(),
            node("n").build(),
            40,
            false,
        ),
        (
            "EBS m5 is Nitro: 25",
            MaxVolumeCount::ebs(),
            node("n")
                .label("node.kubernetes.io/instance-type", "m5.large")
                .build(),
            26,
            false,
        ),
        (
            "EBS c5 is Nitro: 25",
            MaxVolumeCount::ebs(),
            node("n")
                .label("beta.kubernetes.io/instance-type", "c5.xlarge")
                .build(),
            25,
            true,
        ),
        (
            "EBS t3 anywhere is Nitro",
            MaxVolumeCount::ebs(),
            node("n")
                .label("node.kubernetes.io/instance-type", "xt3y")
                .build(),
            26,
            false,
        ),
        (
            "EBS c4 is not Nitro",
            MaxVolumeCount::ebs(),
            node("n")
                .label("node.kubernetes.io/instance-type", "c4.large")
                .build(),
            39,
            true,
        ),
        (
            "EBS allocatable overrides the instance type",
            MaxVolumeCount::ebs(),
            node("n")
                .label("node.kubernetes.io/instance-type", "m5.large")
                .alloc("attachable-volumes-aws-ebs", 30)
                .build(),
            30,
            true,
        ),
        (
            "an allocatable limit of 0",
            MaxVolumeCount::ebs(),
            node("n").alloc("attachable-volumes-aws-ebs", 0).build(),
            1,
            false,
        ),
        (
            "GCE PD default 16",
            MaxVolumeCount::gce_pd(),
            node("n").build(),
            16,
            true,
        ),
        (
            "GCE PD default 16, exceeded",
            MaxVolumeCount::gce_pd(),
            node("n").build(),
            17,
            false,
        ),
        (
            "GCE PD allocatable",
            MaxVolumeCount::gce_pd(),
            node("n").alloc("attachable-volumes-gce-pd", 20).build(),
            17,
            true,
        ),
        (
            "Azure default 16",
            MaxVolumeCount::azure_disk(),
            node("n").build(),
            17,
            false,
        ),
        (
            "Azure allocatable",
            MaxVolumeCount::azure_disk(),
            node("n").alloc("attachable-volumes-azure-disk", 2).build(),
            3,
            false,
        ),
        (
            "Cinder default 256",
            MaxVolumeCount::cinder(),
            node("n").build(),
            256,
            true,
        ),
        (
            "Cinder default 256, exceeded",
            MaxVolumeCount::cinder(),
            node("n").build(),
            257,
            false,
        ),
    ];
    for (name, rule, n, count, fits) in cases {
        let source = match rule.kind {
            Kind::Ebs => many("v", count, ebs_owned),
            Kind::GcePd => many("v", count, gce),
            Kind::AzureDisk => many("v", count, azure),
            Kind::Cinder => many("v", count, cinder),
        };
        let mut cl = cluster(vec![n], vec![]);
        let got = run_filter(&rule, &mut cl, source.build());
        assert_eq!(got[0].1.is_empty(), fits, "{name}");
    }
}

fn ebs_owned(id: String) -> VolumeSource {
    VolumeSource::AwsElasticBlockStore { volume_id: id }
}

/// Each kind counts its own inline and claimed volumes and nothing else.
#[test]
fn kinds_count_their_own_volumes() {
    let mut cl = cluster(
        vec![
            node("n")
                .alloc("attachable-volumes-gce-pd", 2)
                .alloc("attachable-volumes-azure-disk", 2)
                .alloc("attachable-volumes-cinder", 2)
                .alloc("attachable-volumes-aws-ebs", 2)
                .build(),
        ],
        vec![
            with(
                "gce-pod",
                &[VolumeSource::GcePersistentDisk {
                    pd_name: "g1".into(),
                    read_only: true,
                }],
            )
            .claim("azure-claim")
            .claim("cinder-claim")
            .on("n")
            .build(),
        ],
    );
    add_storage(
        &mut cl,
        vec![
            pv("azure-pv", GI)
                .source(PvSource::AzureDisk {
                    disk_name: "a1".into(),
                })
                .build(),
            pv("cinder-pv", GI)
                .source(PvSource::Cinder {
                    volume_id: "c1".into(),
                })
                .build(),
            pv("gce-pv", GI)
                .source(PvSource::GcePersistentDisk {
                    pd_name: "g2".into(),
                })
                .build(),
        ],
        vec![
            pvc("azure-claim", GI).bound("azure-pv").build(),
            pvc("cinder-claim", GI).bound("cinder-pv").build(),
            pvc("gce-claim", GI).bound("gce-pv").build(),
            pvc("cinder-unbound", GI).class("cinder").build(),
        ],
        vec![storage_class(
            "cinder",
            "kubernetes.io/cinder",
            WaitForFirstConsumer,
        )],
    );
    let new = || {
        with(
            "p",
            &[VolumeSource::GcePersistentDisk {
                pd_name: "g1".into(),
                read_only: false,
            }],
        )
        .claim("gce-claim")
        .volume(
            "a",
            VolumeSource::AzureDisk {
                disk_name: "a2".into(),
            },
        )
        .volume(
            "c",
            VolumeSource::Cinder {
                volume_id: "c1".into(),
            },
        )
        .claim("cinder-unbound")
    };
    // GCE: g1 (already attached) + g2 = 2 ≤ 2. Azure: a1 + a2 = 2. Cinder: c1 (attached)
    // + the unbound claim = 2. EBS: none.
    for rule in [
        MaxVolumeCount::gce_pd(),
        MaxVolumeCount::azure_disk(),
        MaxVolumeCount::cinder(),
    ] {
        assert!(
            run_filter(&rule, &mut cl, new().build())[0].1.is_empty(),
            "{:?}",
            rule.kind
        );
    }
    let one_more = new().volume(
        "g3",
        VolumeSource::GcePersistentDisk {
            pd_name: "g3".into(),
            read_only: false,
        },
    );
    assert_eq!(
        run_filter(&MaxVolumeCount::gce_pd(), &mut cl, one_more.build())[0].1,
        vec![REASON]
    );
    let prep_skips = |rule: &MaxVolumeCount, p: Pod, cl: &mut Cluster| {
        let info = cl.compile_pod(p);
        matches!(
            rule.prepare(CycleContext {
                cluster: cl,
                pod: &info,
                nominated: false,
            }),
            FilterPrep::Skip
        )
    };
    assert!(prep_skips(&MaxVolumeCount::ebs(), new().build(), &mut cl));
    assert!(prep_skips(
        &MaxVolumeCount::ebs(),
        pod("none").build(),
        &mut cl
    ));
}

/// A node whose CSINode lists Cinder as migrated leaves Cinder volumes to the CSI rule;
/// the EBS gate is off in v1.22, so the same annotation does not exempt EBS.
#[test]
fn migrated_cinder_defers_to_csi() {
    let mut cl = cluster(
        vec![
            node("migrated")
                .alloc("attachable-volumes-cinder", 0)
                .alloc("attachable-volumes-aws-ebs", 0)
                .build(),
            node("plain")
                .alloc("attachable-volumes-cinder", 0)
                .alloc("attachable-volumes-aws-ebs", 0)
                .build(),
        ],
        vec![],
    );
    let mut csi = csi_node("migrated", &[]);
    csi.meta.annotations.insert(
        MIGRATED_PLUGINS_ANNOTATION.into(),
        "kubernetes.io/aws-ebs,kubernetes.io/cinder".into(),
    );
    add_csi_nodes(&mut cl, vec![csi]);
    let p = with(
        "p",
        &[VolumeSource::Cinder {
            volume_id: "c".into(),
        }],
    )
    .build();
    assert_eq!(
        passing(&run_filter(&MaxVolumeCount::cinder(), &mut cl, p)),
        vec!["migrated"]
    );
    let p = with("p", &[ebs("e")]).build();
    assert!(passing(&run_filter(&MaxVolumeCount::ebs(), &mut cl, p)).is_empty());
}
