use super::*;
use crate::labels::Operator::In;
use crate::model::{StorageClass, VolumeBindingMode::*};
use crate::rules::volume_util::{BETA_STORAGE_CLASS_ANNOTATION, NO_PROVISIONER};
use crate::testkit::*;

const G: i64 = 1_000_000_000;

/// A volume pinned to `node` by the `nodeKey` label, as upstream's `makeTestPV` makes it.
fn pv_on(name: &str, node: &str, capacity: i64, class: &str) -> PvBuilder {
    pv(name, capacity)
        .class(class)
        .node_affinity(vec![node_term(vec![req("nodeKey", In, &[node])])])
}

/// Upstream's binder_test.go fixtures (claims, volumes and classes).
fn fixtures() -> (
    Vec<PersistentVolume>,
    Vec<crate::model::PersistentVolumeClaim>,
    Vec<StorageClass>,
) {
    let volumes = vec![
        pv_on("pv-node1a", "node1", 5 * G, "waitClass").build(),
        pv_on("pv-node1b", "node1", 10 * G, "waitClass").build(),
        pv_on("pv-node2", "node2", G, "waitClass").build(),
        pv_on("pv-bound", "node1", G, "waitClass")
            .claimed_by("bound-pvc")
            .build(),
        pv_on("pv-bound-immediate", "node1", G, "immediateClass")
            .claimed_by("immediate-bound-pvc")
            .build(),
        pv_on("pv-bound-immediate-node2", "node2", G, "immediateClass")
            .claimed_by("immediate-bound-pvc-node2")
            .build(),
    ];
    let claims = vec![
        pvc("unbound-pvc", G).class("waitClass").build(),
        pvc("unbound-pvc2", 5 * G).class("waitClass").build(),
        pvc("prebound-pvc", G)
            .class("waitClass")
            .prebound("pv-node1a")
            .build(),
        pvc("bound-pvc", G)
            .class("waitClass")
            .bound("pv-bound")
            .build(),
        pvc("bound-pvc-pv-missing", G)
            .class("waitClass")
            .bound("pv-missing")
            .build(),
        pvc("immediate-unbound-pvc", G)
            .class("immediateClass")
            .build(),
        pvc("immediate-bound-pvc", G)
            .class("immediateClass")
            .bound("pv-bound-immediate")
            .build(),
        pvc("immediate-bound-pvc-node2", G)
            .class("immediateClass")
            .bound("pv-bound-immediate-node2")
            .build(),
        pvc("provisioned-pvc", GI)
            .class("waitClassWithProvisioner")
            .build(),
        pvc("no-provisioner-pvc", GI).class("waitClass").build(),
        pvc("topo-mismatch-pvc", GI)
            .class("topoMismatchClass")
            .build(),
        pvc("selected-node-pvc", GI)
            .class("waitClassWithProvisioner")
            .annotation(SELECTED_NODE_ANNOTATION, "node1")
            .build(),
        pvc("no-class-pvc", G).build(),
        pvc("missing-class-pvc", G).class("nonexistent").build(),
        pvc("deleting-pvc", G).class("waitClass").deleting().build(),
    ];
    let topology = |values: &[&str]| vec![node_term(vec![req("nodeKey", In, values)])];
    let mut with_provisioner = storage_class(
        "waitClassWithProvisioner",
        "test-provisioner",
        WaitForFirstConsumer,
    );
    with_provisioner.allowed_topologies = topology(&["node1", "reference-value"]);
    let mut topo_mismatch = storage_class(
        "topoMismatchClass",
        "test-provisioner",
        WaitForFirstConsumer,
    );
    topo_mismatch.allowed_topologies = topology(&["reference-value"]);
    let classes = vec![
        with_provisioner,
        storage_class("immediateClass", "", Immediate),
        storage_class("waitClass", NO_PROVISIONER, WaitForFirstConsumer),
        topo_mismatch,
    ];
    (volumes, claims, classes)
}

/// A cluster with node1 and node2 and only the named volumes (all claims and classes).
fn setup(volumes: &[&str]) -> Cluster {
    let mut cl = cluster(
        vec![
            node("node1").label("nodeKey", "node1").build(),
            node("node2").label("nodeKey", "node2").build(),
        ],
        vec![],
    );
    let (all_volumes, claims, classes) = fixtures();
    let chosen = all_volumes
        .into_iter()
        .filter(|v| volumes.contains(&v.meta.name.as_str()))
        .collect();
    add_storage(&mut cl, chosen, claims, classes);
    cl
}

fn pod_with(claims: &[&str]) -> crate::model::Pod {
    claims.iter().fold(pod("p"), |p, c| p.claim(c)).build()
}

/// Upstream's TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning
/// and the VolumeBinding plugin tests, judged on node1 (where the volumes are). Failing
/// PreFilter cases ("shouldFail") reject every node with the PreFilter reason.
#[test]
fn table() {
    let unbound_immediate = vec![REASON_UNBOUND_IMMEDIATE];
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        ("no-pvcs", vec![], vec![], vec![]),
        (
            "pvc-not-found",
            vec!["unknown-pvc"],
            vec![],
            vec!["persistentvolumeclaim \"unknown-pvc\" not found"],
        ),
        (
            "part of pvcs not found",
            vec!["bound-pvc", "pvc-b"],
            vec!["pv-bound"],
            vec!["persistentvolumeclaim \"pvc-b\" not found"],
        ),
        (
            "pvc being deleted",
            vec!["deleting-pvc"],
            vec![],
            vec!["persistentvolumeclaim \"deleting-pvc\" is being deleted"],
        ),
        ("bound-pvc", vec!["bound-pvc"], vec!["pv-bound"], vec![]),
        (
            "bound-pvc,pv-not-exists",
            vec!["bound-pvc-pv-missing"],
            vec![],
            vec![REASON_PV_NOT_EXIST],
        ),
        (
            "prebound-pvc",
            vec!["prebound-pvc"],
            vec!["pv-node1a"],
            unbound_immediate.clone(),
        ),
        (
            "unbound-pvc,pv-same-node",
            vec!["unbound-pvc"],
            vec!["pv-node2", "pv-node1a", "pv-node1b"],
            vec![],
        ),
        (
            "unbound-pvc,pv-different-node",
            vec!["unbound-pvc"],
            vec!["pv-node2"],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "two-unbound-pvcs",
            vec!["unbound-pvc", "unbound-pvc2"],
            vec!["pv-node1a", "pv-node1b"],
            vec![],
        ),
        (
            "two-unbound-pvcs,order-by-size",
            vec!["unbound-pvc2", "unbound-pvc"],
            vec!["pv-node1a", "pv-node1b"],
            vec![],
        ),
        (
            "two-unbound-pvcs,partial-match",
            vec!["unbound-pvc", "unbound-pvc2"],
            vec!["pv-node1a"],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "one-bound,one-unbound",
            vec!["unbound-pvc", "bound-pvc"],
            vec!["pv-bound", "pv-node1a"],
            vec![],
        ),
        (
            "one-bound,one-unbound,no-match",
            vec!["unbound-pvc", "bound-pvc"],
            vec!["pv-bound", "pv-node2"],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "one-prebound,one-unbound",
            vec!["unbound-pvc", "prebound-pvc"],
            vec!["pv-node1a", "pv-node1b"],
            unbound_immediate.clone(),
        ),
        (
            "immediate-bound-pvc",
            vec!["immediate-bound-pvc"],
            vec!["pv-bound-immediate"],
            vec![],
        ),
        (
            "immediate-bound-pvc-wrong-node",
            vec!["immediate-bound-pvc-node2"],
            vec!["pv-bound-immediate-node2"],
            vec![REASON_NODE_CONFLICT],
        ),
        (
            "immediate-unbound-pvc",
            vec!["immediate-unbound-pvc"],
            vec![],
            unbound_immediate.clone(),
        ),
        (
            "immediate-unbound-pvc,delayed-mode-bound",
            vec!["immediate-unbound-pvc", "bound-pvc"],
            vec!["pv-bound"],
            unbound_immediate.clone(),
        ),
        (
            "immediate-unbound-pvc,delayed-mode-unbound",
            vec!["immediate-unbound-pvc", "unbound-pvc"],
            vec![],
            unbound_immediate.clone(),
        ),
        (
            "unbound claim without class is immediate",
            vec!["no-class-pvc"],
            vec![],
            unbound_immediate.clone(),
        ),
        (
            "unbound claim of a missing class is immediate",
            vec!["missing-class-pvc"],
            vec![],
            unbound_immediate.clone(),
        ),
        ("one-provisioned", vec!["provisioned-pvc"], vec![], vec![]),
        (
            "two-unbound-pvcs,one-matched,one-provisioned",
            vec!["unbound-pvc", "provisioned-pvc"],
            vec!["pv-node1a"],
            vec![],
        ),
        (
            "one-bound,one-provisioned",
            vec!["bound-pvc", "provisioned-pvc"],
            vec!["pv-bound"],
            vec![],
        ),
        (
            "one-binding,one-selected-node",
            vec!["bound-pvc", "selected-node-pvc"],
            vec!["pv-bound"],
            vec![],
        ),
        (
            "one-immediate-bound,one-provisioned",
            vec!["immediate-bound-pvc", "provisioned-pvc"],
            vec!["pv-bound-immediate"],
            vec![],
        ),
        (
            "invalid-provisioner",
            vec!["no-provisioner-pvc"],
            vec![],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "volume-topology-unsatisfied",
            vec!["topo-mismatch-pvc"],
            vec![],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "bound and unbound unsatisfied",
            vec!["immediate-bound-pvc-node2", "no-provisioner-pvc"],
            vec!["pv-bound-immediate-node2"],
            vec![REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
        ),
        (
            "a node conflict hides a later missing volume",
            vec!["immediate-bound-pvc-node2", "bound-pvc-pv-missing"],
            vec!["pv-bound-immediate-node2"],
            vec![REASON_NODE_CONFLICT],
        ),
        (
            "a missing volume with an unbound claim",
            vec!["bound-pvc-pv-missing", "no-provisioner-pvc"],
            vec![],
            vec![REASON_BIND_CONFLICT, REASON_PV_NOT_EXIST],
        ),
    ];
    for (name, claims, volumes, want) in cases {
        let mut cl = setup(&volumes);
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&claims));
        assert_eq!(got[0].0, "node1");
        assert_eq!(got[0].1, want, "{name}");
    }
}

/// The other node of the same table: volumes pinned to node1 and the selected node do
/// not fit node2; the provisioner's topology does not include it.
#[test]
fn the_other_node() {
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "bound volume on node1",
            vec!["bound-pvc"],
            vec!["pv-bound"],
            vec![REASON_NODE_CONFLICT],
        ),
        (
            "unbound, volume on node2",
            vec!["unbound-pvc"],
            vec!["pv-node2", "pv-node1a"],
            vec![],
        ),
        (
            "selected node is node1",
            vec!["selected-node-pvc"],
            vec![],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "provisioning topology excludes node2",
            vec!["provisioned-pvc"],
            vec![],
            vec![REASON_BIND_CONFLICT],
        ),
        (
            "both",
            vec!["bound-pvc", "selected-node-pvc"],
            vec!["pv-bound"],
            vec![REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
        ),
    ];
    for (name, claims, volumes, want) in cases {
        let mut cl = setup(&volumes);
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&claims));
        assert_eq!(got[1].0, "node2");
        assert_eq!(got[1].1, want, "{name}");
    }
}

/// Which volume a claim gets, through [`bind_pod_volumes`].
fn chosen(cl: &mut Cluster, claims: &[&str], node: &str) -> Chosen {
    let info = cl.compile_pod(pod_with(claims));
    let id = cl.node_by_name(node).expect("test node");
    let mut writes = Vec::new();
    CheckVolumeBinding.reserve(cl, &info, id, &mut writes);
    let mut got = Chosen::default();
    for w in writes {
        match w {
            ApiWrite::ClaimVolume {
                volume,
                namespace,
                claim,
            } => got.bound.push((format!("{namespace}/{claim}"), volume)),
            ApiWrite::AnnotateClaim {
                namespace,
                claim,
                key,
                value,
            } => {
                assert_eq!(
                    (key.as_str(), value.as_str()),
                    (SELECTED_NODE_ANNOTATION, node)
                );
                got.provisioning.push(format!("{namespace}/{claim}"));
            }
        }
    }
    got
}

/// The writes Reserve asks for: (claim, volume) bindings, then the claims left to
/// provisioning on the node.
#[derive(Debug, Default, PartialEq, Eq)]
struct Chosen {
    bound: Vec<(String, String)>,
    provisioning: Vec<String>,
}

fn bound(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(c, v)| (format!("default/{c}"), v.to_string()))
        .collect()
}

#[test]
fn matching_picks_the_smallest_fitting_volume() {
    let mut cl = setup(&["pv-node2", "pv-node1a", "pv-node1b"]);
    assert_eq!(
        chosen(&mut cl, &["unbound-pvc"], "node1").bound,
        bound(&[("unbound-pvc", "pv-node1a")])
    );
    let mut cl = setup(&["pv-node1a", "pv-node1b"]);
    let got = chosen(&mut cl, &["unbound-pvc2", "unbound-pvc"], "node1");
    // Smallest request first: the 1G claim takes the 5G volume, the 5G claim the 10G one.
    assert_eq!(
        got.bound,
        bound(&[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")])
    );
}

#[test]
fn candidate_filters() {
    let base = || pv_on("a", "node1", 5 * G, "waitClass");
    let cases: Vec<(&str, PersistentVolume, bool)> = vec![
        ("fits", base().build(), true),
        (
            "too small",
            pv_on("a", "node1", G / 2, "waitClass").build(),
            false,
        ),
        (
            "other class",
            pv_on("a", "node1", 5 * G, "other").build(),
            false,
        ),
        ("not Available", base().phase("Released").build(), false),
        ("being deleted", base().deleting().build(), false),
        (
            "claimed by another claim",
            base().claimed_by("someone-else").build(),
            false,
        ),
        (
            "access mode missing",
            base().access_modes(&["ReadOnlyMany"]).build(),
            false,
        ),
        (
            "access modes are a superset",
            base()
                .access_modes(&["ReadOnlyMany", "ReadWriteOnce"])
                .build(),
            true,
        ),
        (
            "pre-bound to the claim even if Bound",
            base().claimed_by("unbound-pvc").build(),
            true,
        ),
        (
            "no node affinity fits anywhere",
            pv("a", 5 * G).class("waitClass").build(),
            true,
        ),
        (
            "other volume mode",
            base().mode(crate::model::VolumeMode::Block).build(),
            false,
        ),
        (
            "an attributes class the claim does not name",
            base().attributes_class("gold").build(),
            false,
        ),
    ];
    for (name, volume, fits) in cases {
        let mut cl = setup(&[]);
        add_storage(&mut cl, vec![volume], vec![], vec![]);
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
        assert_eq!(got[0].1.is_empty(), fits, "{name}");
    }
}

/// Volume modes and attributes classes, as v1.36's `FindMatchingVolume` (component-helpers
/// `storage/volume/pv_helpers.go`) compares them: `CheckVolumeModeMismatches` defaults
/// both sides to Filesystem, and with the VolumeAttributesClass gate on (v1.34+) the
/// claim's class must equal the volume's, "" when unset. Both are checked before the
/// pre-bound test, so they also rule out a volume pointing at the claim. The attributes
/// class cases are upstream's `TestFindMatchVolumeWithNode` ("success-match-with-vac",
/// "fail-vac", "fail-prebound-vac"); judged on node1, with no provisioner to fall back on.
#[test]
fn modes_and_attributes_classes() {
    use crate::model::VolumeMode::{Block, Filesystem};
    let claim = || pvc("unbound-pvc", G).class("waitClass");
    let vol = |name: &str, capacity: i64| pv_on(name, "node1", capacity, "waitClass");
    type Case = (
        &'static str,
        PvcBuilder,
        Vec<PvBuilder>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "unset modes are both Filesystem",
            claim(),
            vec![vol("fs", 5 * G)],
            Some("fs"),
        ),
        (
            "a Filesystem claim never takes a Block volume",
            claim(),
            vec![vol("block", 5 * G).mode(Block)],
            None,
        ),
        (
            "a Block claim never takes a Filesystem volume",
            claim().mode(Block),
            vec![vol("fs", 5 * G).mode(Filesystem)],
            None,
        ),
        (
            "a Block claim takes the Block volume, not the smaller Filesystem one",
            claim().mode(Block),
            vec![vol("fs", 2 * G), vol("block", 5 * G).mode(Block)],
            Some("block"),
        ),
        (
            "a pre-bound volume of another mode is passed over",
            claim(),
            vec![
                vol("prebound-block", 2 * G)
                    .mode(Block)
                    .claimed_by("unbound-pvc"),
                vol("fs", 5 * G),
            ],
            Some("fs"),
        ),
        (
            "success-match-with-vac",
            claim().attributes_class("gold"),
            vec![vol("gold", 5 * G).attributes_class("gold")],
            Some("gold"),
        ),
        (
            "fail-vac: volumes without the claim's class",
            claim().attributes_class("silver"),
            vec![vol("plain", 5 * G)],
            None,
        ),
        (
            "fail-prebound-vac",
            claim().attributes_class("silver"),
            vec![
                vol("prebound-gold", 5 * G)
                    .attributes_class("gold")
                    .claimed_by("unbound-pvc"),
                vol("gold", 5 * G).attributes_class("gold"),
            ],
            None,
        ),
        (
            "a claim without a class takes only volumes without one",
            claim(),
            vec![
                vol("gold", 2 * G).attributes_class("gold"),
                vol("plain", 5 * G),
            ],
            Some("plain"),
        ),
    ];
    for (name, claim, volumes, want) in cases {
        let mut cl = setup(&[]);
        add_storage(
            &mut cl,
            volumes.into_iter().map(PvBuilder::build).collect(),
            vec![claim.build()],
            vec![],
        );
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
        let reasons: Vec<&str> = match want {
            Some(_) => vec![],
            None => vec![REASON_BIND_CONFLICT],
        };
        assert_eq!(got[0].1, reasons, "{name}");
        let want_bound = want.map_or_else(Vec::new, |v| bound(&[("unbound-pvc", v)]));
        assert_eq!(
            chosen(&mut cl, &["unbound-pvc"], "node1").bound,
            want_bound,
            "{name}"
        );
    }
}

#[test]
fn claim_selector_and_beta_class_annotation() {
    let mut cl = setup(&[]);
    add_storage(
        &mut cl,
        vec![
            pv_on("fast", "node1", 5 * G, "waitClass")
                .label("tier", "fast")
                .build(),
            pv_on("slow", "node1", 2 * G, "waitClass")
                .label("tier", "slow")
                .build(),
        ],
        vec![
            pvc("picky", G)
                .class("waitClass")
                .selector(selector(&[("tier", "fast")]))
                .build(),
            pvc("beta", G)
                .annotation(BETA_STORAGE_CLASS_ANNOTATION, "waitClass")
                .build(),
        ],
        vec![],
    );
    assert_eq!(
        chosen(&mut cl, &["picky"], "node1").bound,
        bound(&[("picky", "fast")])
    );
    assert_eq!(
        chosen(&mut cl, &["beta"], "node1").bound,
        bound(&[("beta", "slow")])
    );
}

/// A volume pointing at the claim decides alone, even when a smaller one would match,
/// and even when its node affinity fails (then nothing matches on that node).
#[test]
fn prebound_volume_decides() {
    let mut cl = setup(&["pv-node2"]);
    add_storage(
        &mut cl,
        vec![
            pv_on("big-prebound", "node1", 50 * G, "waitClass")
                .claimed_by("unbound-pvc")
                .build(),
            pv_on("small", "node1", 2 * G, "waitClass").build(),
        ],
        vec![],
        vec![],
    );
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
    assert_eq!(passing(&got), vec!["node1"]);
    assert_eq!(
        chosen(&mut cl, &["unbound-pvc"], "node1").bound,
        bound(&[("unbound-pvc", "big-prebound")])
    );
}

/// Local volumes (pinned by hostname) are found through the hostname index, mixed with
/// volumes of other affinities by size.
#[test]
fn local_volumes() {
    let mut cl = cluster(
        (0..4).map(|i| node(&format!("n{i}")).build()).collect(),
        vec![],
    );
    add_storage(
        &mut cl,
        vec![
            pv("local-n1", 10 * G).class("local").on_host("n1").build(),
            pv("local-n1-small", 3 * G)
                .class("local")
                .on_host("n1")
                .build(),
            pv("local-n2", 10 * G).class("local").on_host("n2").build(),
            pv("local-n2-too-small", G / 2)
                .class("local")
                .on_host("n2")
                .build(),
            pv("zonal", 5 * G)
                .class("local")
                .node_affinity(vec![node_term(vec![
                    req("kubernetes.io/hostname", In, &["n2", "n3"]),
                    req(
                        "kubernetes.io/hostname",
                        crate::labels::Operator::Exists,
                        &[],
                    ),
                ])])
                .build(),
        ],
        vec![
            pvc("data", G).class("local").build(),
            pvc("data2", G).class("local").build(),
        ],
        vec![storage_class("local", NO_PROVISIONER, WaitForFirstConsumer)],
    );
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data"]));
    assert_eq!(passing(&got), vec!["n1", "n2", "n3"]);
    assert_eq!(
        chosen(&mut cl, &["data"], "n1").bound,
        bound(&[("data", "local-n1-small")])
    );
    // n2: the 5G zonal volume is smaller than the 10G local one.
    assert_eq!(
        chosen(&mut cl, &["data2"], "n2").bound,
        bound(&[("data2", "zonal")])
    );
    // The bound volumes are taken: another claim finds what is left.
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data3"]));
    assert_eq!(got[0].1, vec!["persistentvolumeclaim \"data3\" not found"]);
    add_storage(
        &mut cl,
        vec![],
        vec![pvc("data3", G).class("local").build()],
        vec![],
    );
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data3"]));
    assert_eq!(passing(&got), vec!["n1", "n2"]);
}

#[test]
fn bind_pod_volumes_records_bindings_and_selected_nodes() {
    let mut cl = setup(&["pv-node1a", "pv-bound"]);
    let got = chosen(
        &mut cl,
        &["bound-pvc", "unbound-pvc", "provisioned-pvc"],
        "node1",
    );
    assert_eq!(got.bound, bound(&[("unbound-pvc", "pv-node1a")]));
    assert_eq!(
        got.provisioning,
        vec!["default/provisioned-pvc".to_string()]
    );
    let claim = cl
        .persistent_volume_claim("default", "unbound-pvc")
        .unwrap();
    assert_eq!(claim.volume_name, "pv-node1a");
    assert!(fully_bound(claim));
    let volume = cl.persistent_volume("pv-node1a").unwrap();
    assert_eq!(
        volume.claim_ref,
        Some(("default".to_string(), "unbound-pvc".to_string()))
    );
    assert_eq!(volume.phase, "Bound");
    let provisioned = cl
        .persistent_volume_claim("default", "provisioned-pvc")
        .unwrap();
    assert_eq!(
        provisioned
            .meta
            .annotations
            .get(SELECTED_NODE_ANNOTATION)
            .map(String::as_str),
        Some("node1")
    );
    // The next pod with both claims: bound now, and the provisioned claim keeps it on node1.
    let got = run_filter(
        &CheckVolumeBinding,
        &mut cl,
        pod_with(&["unbound-pvc", "provisioned-pvc"]),
    );
    assert_eq!(passing(&got), vec!["node1"]);
    // Another claim no longer finds pv-node1a.
    add_storage(
        &mut cl,
        vec![],
        vec![pvc("late", G).class("waitClass").build()],
        vec![],
    );
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["late"]));
    assert!(passing(&got).is_empty());
}

#[test]
fn unreserve_restores_the_volumes_and_claims() {
    let mut cl = setup(&["pv-node1a", "pv-bound"]);
    let info = cl.compile_pod(pod_with(&["unbound-pvc", "provisioned-pvc"]));
    let node1 = cl.node_by_name("node1").expect("node1");
    let volumes = |cl: &Cluster| {
        let mut all: Vec<PersistentVolume> = cl.persistent_volumes().cloned().collect();
        all.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        all
    };
    let claims = |cl: &Cluster| {
        let mut all: Vec<PersistentVolumeClaim> = cl.persistent_volume_claims().cloned().collect();
        all.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        all
    };
    let volumes_before = volumes(&cl);
    let claims_before = claims(&cl);
    let state = CheckVolumeBinding
        .reserve(&mut cl, &info, node1, &mut Vec::new())
        .expect("Reserve changed the claims");
    assert_ne!(claims(&cl), claims_before);
    CheckVolumeBinding.unreserve(&mut cl, &state);
    assert_eq!(volumes(&cl), volumes_before);
    assert_eq!(claims(&cl), claims_before);
}

#[test]
fn bind_pod_volumes_does_nothing_where_the_pod_does_not_fit() {
    let mut cl = setup(&["pv-node1a"]);
    assert_eq!(
        chosen(&mut cl, &["unbound-pvc"], "node2"),
        Chosen::default()
    );
    assert_eq!(
        chosen(&mut cl, &["immediate-unbound-pvc"], "node1"),
        Chosen::default()
    );
    assert_eq!(chosen(&mut cl, &[], "node1"), Chosen::default());
    assert!(
        cl.persistent_volume("pv-node1a")
            .unwrap()
            .claim_ref
            .is_none()
    );
}

#[test]
fn many_claims_spill_the_choice_buffer() {
    let mut cl = setup(&[]);
    let n = INLINE_CLAIMS + 3;
    let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let volumes = (0..n)
        .map(|i| pv_on(&format!("v{i}"), "node1", G, "waitClass").build())
        .collect();
    let claims = names
        .iter()
        .map(|c| pvc(c, G).class("waitClass").build())
        .collect();
    add_storage(&mut cl, volumes, claims, vec![]);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&refs));
    assert_eq!(passing(&got), vec!["node1"]);
    let one_too_many: Vec<&str> = refs.iter().copied().chain(["unbound-pvc"]).collect();
    let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&one_too_many));
    assert!(passing(&got).is_empty());
}
