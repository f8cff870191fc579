//! The cluster's incremental bookkeeping equals a cluster built from scratch: seeded random
//! sequences of adds, updates and removes of every kind the cluster holds (nodes changing
//! labels, zones, images, capacity, CIDRs and taints; pods assigned and pending, with
//! labels, host ports, affinity terms of every kind, volumes, huge requests; assignments and
//! unassignments; namespaces with changing labels; Services, RCs, ReplicaSets and
//! StatefulSets; PVs, claims, StorageClasses and CSINodes), with failing updates and
//! compactions among them, must leave every aggregate and index (see `canonical`) as a
//! cluster built from the final objects has them.

use std::collections::BTreeMap;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::canonical::{canonical, with_nodes_in_slot_order};
use super::*;
use crate::labels::{LabelSelector, Operator};
use crate::model::{
    Namespace, NamespaceNodeSelector, Node, Pod, PodAffinityTerm, PodSelector, PvSource,
    SelectorKind, TaintEffect, VolumeBindingMode, VolumeSource, WeightedPodAffinityTerm,
};
use crate::testkit::{EI, GI, csi_node, node, pod, pv, pvc, req, storage_class};

const NODES: usize = 6;
const PODS: usize = 30;
const NAMESPACES: [&str; 3] = ["ns0", "ns1", "ns2"];
const APPS: [&str; 3] = ["web", "db", "batch"];
const KINDS: [SelectorKind; 4] = [
    SelectorKind::Service,
    SelectorKind::ReplicationController,
    SelectorKind::ReplicaSet,
    SelectorKind::StatefulSet,
];

/// The objects the cluster should hold, changed alongside it.
#[derive(Default)]
struct Live {
    nodes: BTreeMap<String, Node>,
    pods: BTreeMap<String, Pod>,
    namespaces: BTreeMap<String, Namespace>,
    /// In the cluster's order, which is semantic (the first selecting Service wins).
    objects: Vec<PodSelector>,
    volumes: BTreeMap<String, model::PersistentVolume>,
    claims: BTreeMap<String, model::PersistentVolumeClaim>,
    classes: BTreeMap<String, model::StorageClass>,
    csi_nodes: BTreeMap<String, model::CsiNode>,
}

struct Run {
    rng: ChaCha8Rng,
    /// The draws for the volume fields added with ReadWriteOncePod, volume modes and
    /// attributes classes: a stream of their own leaves the older fields' draws, to which
    /// each seed's coverage (assigned and pending pods, affinity terms) is tuned, unchanged.
    storage_rng: ChaCha8Rng,
    cluster: Cluster,
    live: Live,
}

impl Run {
    fn pick<'a>(&mut self, from: &'a [&'a str]) -> &'a str {
        from.choose(&mut self.rng).expect("non-empty")
    }

    fn pick_storage<'a>(&mut self, from: &'a [&'a str]) -> &'a str {
        from.choose(&mut self.storage_rng).expect("non-empty")
    }

    /// A label selector of one of the shapes the indexes treat differently: an `In`
    /// requirement (indexed by its values, here sometimes listing one twice), only other
    /// operators (unindexed), or empty (selects everything, unindexed).
    fn label_selector(&mut self) -> LabelSelector {
        let app = self.pick(&APPS);
        let other = self.pick(&APPS);
        let requirements = match self.rng.random_range(0..6) {
            0 => vec![req("app", Operator::In, &[app])],
            1 => vec![req("app", Operator::In, &[app, other, app])],
            2 => vec![
                req("tier", Operator::Exists, &[]),
                req("app", Operator::In, &[app]),
            ],
            3 => vec![req("app", Operator::NotIn, &[app])],
            4 => vec![req("tier", Operator::Exists, &[])],
            _ => vec![],
        };
        LabelSelector { requirements }
    }

    fn affinity_term(&mut self) -> PodAffinityTerm {
        let topology_key = self
            .pick(&[
                "kubernetes.io/hostname",
                "topology.kubernetes.io/zone",
                "pool",
            ])
            .to_string();
        let label_selector = (!self.rng.random_bool(0.15)).then(|| self.label_selector());
        let (namespaces, namespace_selector) = match self.rng.random_range(0..4) {
            0 => (vec![self.pick(&NAMESPACES).to_string()], None),
            1 => (
                Vec::new(),
                Some(crate::testkit::selector(&[(
                    "team",
                    self.pick(&["a", "b"]),
                )])),
            ),
            _ => (Vec::new(), None),
        };
        PodAffinityTerm {
            label_selector,
            namespaces,
            namespace_selector,
            topology_key,
        }
    }

    fn node(&mut self, i: usize) -> Node {
        let name = format!("n{i}");
        let mut b = node(&name)
            .cpu(self.rng.random_range(1..8) * 1000)
            .mem(self.rng.random_range(1..16) * GI)
            .label("pool", self.pick(&["p0", "p1"]));
        match self.rng.random_range(0..4) {
            0 => {}
            1 => b = b.label("topology.kubernetes.io/zone", self.pick(&["a", "b", "c"])),
            2 => {
                b = b
                    .label("topology.kubernetes.io/region", self.pick(&["r1", "r2"]))
                    .label("failure-domain.beta.kubernetes.io/zone", "b")
            }
            _ => b = b.label("topology.kubernetes.io/region", "r1"),
        }
        for _ in 0..self.rng.random_range(0..3) {
            let image = self.pick(&["app:1", "app:2", "docker.io/library/db:latest", "job"]);
            b = b.image(image, self.rng.random_range(1..100) * 1_000_000);
        }
        match self.rng.random_range(0..5) {
            0 => b = b.cidr("10.244.1.0/24"),
            1 => b = b.cidr("10.244.2.0/28").cidr("fd00::/64"),
            // A bad CIDR: the update fails and must change nothing.
            2 if self.rng.random_bool(0.3) => b = b.cidr("10.0.0.0/99"),
            _ => {}
        }
        if self.rng.random_bool(0.2) {
            b = b.taint("dedicated", "x", TaintEffect::NoSchedule);
        }
        if self.rng.random_bool(0.1) {
            b = b.unschedulable();
        }
        if self.rng.random_bool(0.1) {
            b = b.avoid_pods_of("ReplicaSet", "rs-uid");
        }
        let mut n = b.build();
        if self.rng.random_bool(0.1) {
            n.allocatable.retain(|(name, _)| name != "pods");
        }
        n
    }

    fn pod(&mut self, i: usize, on: Option<String>) -> Pod {
        let mut b = pod(&format!("p{i}")).ns(self.pick(&NAMESPACES));
        b = b.label("app", self.pick(&APPS));
        if self.rng.random_bool(0.5) {
            b = b.label("tier", self.pick(&["front", "back"]));
        }
        match self.rng.random_range(0..6) {
            0 => {}
            1 => b = b.req(0, 0),
            // Requests that pass i64::MAX on a node together: the exact sums must still
            // come back to the true remainder when one leaves.
            2 => b = b.req(i64::MAX / 2 + 7, 7 * EI),
            3 => b = b.req(250, GI).init(1000, 2 * GI).overhead("cpu", 100),
            4 => b = b.req(100, GI).res("example.com/gpu", 1),
            _ => {
                b = b.req(
                    self.rng.random_range(1..2000),
                    self.rng.random_range(1..4) * GI,
                )
            }
        }
        for _ in 0..self.rng.random_range(0..3) {
            let ip = self.pick(&["", "10.0.0.1"]);
            let protocol = self.pick(&["", "UDP"]);
            let port = *[80, 443, 8080].choose(&mut self.rng).expect("ports");
            b = b.host_port(ip, protocol, port);
        }
        if self.rng.random_bool(0.2) {
            b = b.host_network();
        }
        match self.rng.random_range(0..5) {
            0 => {
                b = b.claim(self.pick(&["c0", "c1", "c2"]));
                // A second volume naming a claim, perhaps the same one: the claim-users
                // index counts volumes, not pods.
                if self.storage_rng.random_bool(0.3) {
                    b = b.claim(self.pick_storage(&["c0", "c1"]));
                }
            }
            1 => {
                b = b.volume(
                    "disk",
                    VolumeSource::GcePersistentDisk {
                        pd_name: "pd".into(),
                        read_only: false,
                    },
                )
            }
            2 => b = b.volume("scratch", VolumeSource::Other),
            _ => {}
        }
        let mut p = b.build();
        if self.rng.random_bool(0.5) {
            let a = &mut p.affinity;
            for _ in 0..self.rng.random_range(0..3) {
                match self.rng.random_range(0..4) {
                    0 => a.pod_required.push(self.affinity_term()),
                    1 => a.anti_required.push(self.affinity_term()),
                    2 => a.pod_preferred.push(WeightedPodAffinityTerm {
                        weight: self.rng.random_range(1..100),
                        term: self.affinity_term(),
                    }),
                    _ => a.anti_preferred.push(WeightedPodAffinityTerm {
                        weight: self.rng.random_range(1..100),
                        term: self.affinity_term(),
                    }),
                }
            }
        }
        p.node_name = on;
        p
    }

    fn live_node_name(&mut self) -> Option<String> {
        let names: Vec<&String> = self.live.nodes.keys().collect();
        names.choose(&mut self.rng).map(|n| (*n).clone())
    }

    /// One random change, mirrored in `live`.
    fn step(&mut self) {
        match self.rng.random_range(0..22) {
            0..=2 => {
                let i = self.rng.random_range(0..NODES);
                let n = self.node(i);
                let name = n.meta.name.clone();
                if self.cluster.upsert_node(n.clone()).is_ok() {
                    self.live.nodes.insert(name, n);
                }
            }
            3 => {
                let name = format!("n{}", self.rng.random_range(0..NODES));
                let removed = self.cluster.remove_node(&name);
                assert_eq!(removed.as_ref(), self.live.nodes.remove(&name).as_ref());
                // Its pods stay, on no node.
                for p in self.live.pods.values_mut() {
                    if p.node_name.as_ref() == Some(&name) {
                        p.node_name = None;
                    }
                }
            }
            4..=8 => {
                // Added or replaced; now and then naming a node that is not there, which
                // must fail and change nothing.
                let on = match self.rng.random_range(0..6) {
                    0 | 1 => None,
                    2 if self.rng.random_bool(0.2) => Some("gone".to_string()),
                    _ => self.live_node_name(),
                };
                let i = self.rng.random_range(0..PODS);
                let p = self.pod(i, on);
                // A pod of that name in another namespace is another pod.
                if self.cluster.upsert_pod(p.clone()).is_ok() {
                    self.live.pods.insert(p.key(), p);
                }
            }
            9 | 10 => {
                let name = format!("p{}", self.rng.random_range(0..PODS));
                let ns = self.pick(&NAMESPACES);
                let removed = self.cluster.remove_pod(ns, &name);
                assert_eq!(
                    removed.is_some(),
                    self.live.pods.remove(&format!("{ns}/{name}")).is_some()
                );
            }
            11 | 12 => {
                // The scheduler's path: assign a pending pod, or unassign (forget) one.
                let keys: Vec<String> = self.live.pods.keys().cloned().collect();
                let Some(key) = keys.choose(&mut self.rng) else {
                    return;
                };
                let (ns, name) = key.split_once('/').expect("key");
                let id = self.cluster.pod_by_key(ns, name).expect("live pod");
                if self.live.pods[key].node_name.is_some() {
                    self.cluster.unassign(id);
                    self.live.pods.get_mut(key).expect("live pod").node_name = None;
                } else if let Some(node) = self.live_node_name() {
                    let node_id = self.cluster.node_by_name(&node).expect("live node");
                    self.cluster.assign(id, node_id);
                    self.live.pods.get_mut(key).expect("live pod").node_name = Some(node);
                }
            }
            13 | 14 => {
                let name = self.pick(&NAMESPACES);
                if self.rng.random_bool(0.25) {
                    let removed = self.cluster.remove_namespace(name);
                    assert_eq!(removed, self.live.namespaces.remove(name).is_some());
                    return;
                }
                let mut ns = crate::testkit::namespace(name, &[("team", self.pick(&["a", "b"]))]);
                if self.rng.random_bool(0.3) {
                    ns.meta.labels.insert("env".into(), "prod".into());
                }
                if self.rng.random_bool(0.3) {
                    ns.node_selector = Some(NamespaceNodeSelector::Pairs(vec![(
                        "pool".into(),
                        "p0".into(),
                    )]));
                }
                if self.rng.random_bool(0.3) {
                    ns.toleration_whitelist =
                        Some(crate::model::TolerationWhitelist::Tolerations(vec![
                            crate::model::Toleration {
                                key: "dedicated".into(),
                                value: "a".into(),
                                ..Default::default()
                            },
                        ]));
                }
                self.cluster.upsert_namespace(&ns);
                self.live.namespaces.insert(name.to_string(), ns);
            }
            15 | 16 => {
                let kind = *KINDS.choose(&mut self.rng).expect("kinds");
                let namespace = self.pick(&NAMESPACES[..2]);
                let name = self.pick(&["s0", "s1"]);
                let same = |o: &PodSelector| {
                    o.kind == kind && o.meta.namespace == namespace && o.meta.name == name
                };
                if self.rng.random_bool(0.3) {
                    let removed = self.cluster.remove_selector_object(kind, namespace, name);
                    let at = self.live.objects.iter().position(same);
                    assert_eq!(removed, at.is_some());
                    if let Some(at) = at {
                        self.live.objects.remove(at);
                    }
                    return;
                }
                let o = PodSelector {
                    kind,
                    meta: model::Meta {
                        name: name.into(),
                        namespace: namespace.into(),
                        ..model::Meta::default()
                    },
                    selector: (!self.rng.random_bool(0.2)).then(|| self.label_selector()),
                };
                self.cluster.upsert_selector_object(&o);
                match self.live.objects.iter().position(same) {
                    Some(at) => self.live.objects[at] = o,
                    None => self.live.objects.push(o),
                }
            }
            17 => {
                let name = self.pick(&["v0", "v1", "v2"]);
                if self.rng.random_bool(0.3) {
                    let removed = self.cluster.remove_persistent_volume(name);
                    assert_eq!(removed, self.live.volumes.remove(name));
                    return;
                }
                let mut v = pv(name, self.rng.random_range(1..10) * GI).class("fast");
                if self.rng.random_bool(0.5) {
                    v = v.claimed_by(self.pick(&["c0", "c1"]));
                }
                if self.storage_rng.random_bool(0.3) {
                    v = v.mode(model::VolumeMode::Block);
                }
                if self.storage_rng.random_bool(0.3) {
                    v = v.attributes_class(self.pick_storage(&["gold", "silver"]));
                }
                if self.rng.random_bool(0.3) {
                    v = v.source(PvSource::Csi {
                        driver: "csi.example.com".into(),
                        volume_handle: name.into(),
                    });
                }
                let v = v.build();
                let replaced = self.cluster.upsert_persistent_volume(v.clone());
                assert_eq!(replaced, self.live.volumes.insert(name.into(), v));
            }
            18 => {
                let name = self.pick(&["c0", "c1", "c2"]);
                let ns = self.pick(&NAMESPACES);
                let key = format!("{ns}/{name}");
                if self.rng.random_bool(0.3) {
                    let removed = self.cluster.remove_persistent_volume_claim(ns, name);
                    assert_eq!(removed, self.live.claims.remove(&key));
                    return;
                }
                let mut c = pvc(name, GI).ns(ns).class("fast");
                if self.rng.random_bool(0.5) {
                    c = c.bound(self.pick(&["v0", "v1"]));
                }
                if self.storage_rng.random_bool(0.3) {
                    c = c.access_modes(&["ReadWriteOncePod"]);
                }
                if self.storage_rng.random_bool(0.3) {
                    c = c.mode(model::VolumeMode::Block);
                }
                if self.storage_rng.random_bool(0.3) {
                    c = c.attributes_class(self.pick_storage(&["gold", "silver"]));
                }
                let c = c.build();
                let replaced = self.cluster.upsert_persistent_volume_claim(c.clone());
                assert_eq!(replaced, self.live.claims.insert(key, c));
            }
            19 => {
                let name = self.pick(&["fast", "slow"]);
                if self.rng.random_bool(0.3) {
                    let removed = self.cluster.remove_storage_class(name);
                    assert_eq!(removed, self.live.classes.remove(name));
                    return;
                }
                let mode = *[
                    VolumeBindingMode::Immediate,
                    VolumeBindingMode::WaitForFirstConsumer,
                ]
                .choose(&mut self.rng)
                .expect("modes");
                let class = storage_class(name, "csi.example.com", mode);
                let replaced = self.cluster.upsert_storage_class(class.clone());
                assert_eq!(replaced, self.live.classes.insert(name.into(), class));
            }
            20 => {
                let name = format!("n{}", self.rng.random_range(0..NODES));
                if self.rng.random_bool(0.3) {
                    let removed = self.cluster.remove_csi_node(&name);
                    assert_eq!(removed, self.live.csi_nodes.remove(&name));
                    return;
                }
                let limit = self.rng.random_range(1..40);
                let csi = csi_node(&name, &[("csi.example.com", Some(limit))]);
                let replaced = self.cluster.upsert_csi_node(csi.clone());
                assert_eq!(replaced, self.live.csi_nodes.insert(name, csi));
            }
            _ => {
                // Compaction renumbers every symbol; the bookkeeping must survive it.
                if self.rng.random_bool(0.3) {
                    self.cluster.compact_interner(&mut []);
                }
            }
        }
    }

    /// A cluster built from the live objects only: nodes in this cluster's slot order (so
    /// both visit nodes alike), then everything else, then the pods.
    fn rebuilt(&self) -> Cluster {
        let mut fresh = with_nodes_in_slot_order(&self.cluster, self.live.nodes.values());
        for ns in self.live.namespaces.values() {
            fresh.upsert_namespace(ns);
        }
        for o in &self.live.objects {
            fresh.upsert_selector_object(o);
        }
        for v in self.live.volumes.values() {
            fresh.upsert_persistent_volume(v.clone());
        }
        for c in self.live.claims.values() {
            fresh.upsert_persistent_volume_claim(c.clone());
        }
        for c in self.live.classes.values() {
            fresh.upsert_storage_class(c.clone());
        }
        for c in self.live.csi_nodes.values() {
            fresh.upsert_csi_node(c.clone());
        }
        for p in self.live.pods.values() {
            fresh.add_pod(p.clone()).expect("pod");
        }
        fresh
    }

    fn check(&self, seed: u64, step: usize) {
        let fresh = self.rebuilt();
        let (got, want) = (canonical(&self.cluster), canonical(&fresh));
        if got != want {
            // Name the first entries that differ rather than dumping both states.
            let differing: Vec<_> = got
                .keys()
                .chain(want.keys())
                .filter(|k| got.get(*k) != want.get(*k))
                .take(3)
                .map(|k| {
                    format!(
                        "{k}:\n  changed: {:?}\n  rebuilt: {:?}",
                        got.get(k),
                        want.get(k)
                    )
                })
                .collect();
            panic!(
                "seed {seed} step {step}: the changed cluster differs from a rebuilt one\n{}",
                differing.join("\n")
            );
        }
    }
}

#[test]
fn random_changes_keep_every_aggregate_and_index_equal_to_a_rebuilt_cluster() {
    for seed in 0..16 {
        let mut run = Run {
            rng: ChaCha8Rng::seed_from_u64(seed),
            storage_rng: ChaCha8Rng::seed_from_u64(!seed),
            cluster: Cluster::new(),
            live: Live::default(),
        };
        for step in 0..400 {
            run.step();
            if step % 40 == 39 {
                run.check(seed, step);
            }
        }
        // The runs must reach the states worth checking, or the test proves little.
        let c = &run.cluster;
        assert!(
            c.pods().any(|(_, p)| p.node.is_some()) && c.pods().any(|(_, p)| p.node.is_none()),
            "seed {seed}: assigned and pending pods"
        );
        assert!(
            !c.required_anti_affinity_terms().is_empty() || !c.scoring_affinity_terms().is_empty(),
            "seed {seed}: affinity terms"
        );
    }
}
