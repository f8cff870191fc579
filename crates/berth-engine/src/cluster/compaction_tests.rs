//! The interner's compaction keeps every aggregate and index exactly right: seeded sequences
//! of node, pod, namespace and selector-object changes with churning label values (each
//! generation's `pod-template-hash`, per-pod UIDs, node pools, images, namespaces), compacted
//! along the way, must leave a cluster equal, string for string, to one built from scratch
//! from the final objects, schedule probe pods the same way, and keep the interner bounded by
//! the live label set.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::canonical::{canonical, with_nodes_in_slot_order};
use super::compaction::COMPACTION_FLOOR;
use super::*;
use crate::labels::HoldsSymbols;
use crate::model::{Node, Pod, SelectorKind, WhenUnsatisfiable};
use crate::registry::scheduler_for;
use crate::testkit::{labelled, namespace, node, selector, selector_object};
use crate::{CycleConfig, Scheduler};

/// The objects a churn run ends with, to build the reference cluster from.
#[derive(Default)]
struct Live {
    nodes: BTreeMap<usize, Node>,
    pods: BTreeMap<usize, Pod>,
    namespaces: BTreeMap<usize, model::Namespace>,
    objects: Vec<model::PodSelector>,
}

/// Seeded churn: nodes join, change pools and images, and leave; generations of pods with
/// fresh hashes and UIDs replace each other, with affinity terms and spread constraints
/// selecting their generation; namespaces and services come and go. `compact` decides after
/// each change whether to compact.
struct Churn {
    rng: ChaCha8Rng,
    cluster: Cluster,
    live: Live,
    generation: usize,
}

const NODES: usize = 12;
const PODS: usize = 60;

impl Churn {
    fn new(seed: u64) -> Self {
        Churn {
            rng: ChaCha8Rng::seed_from_u64(seed),
            cluster: Cluster::new(),
            live: Live::default(),
            generation: 0,
        }
    }

    fn node(&mut self, i: usize) -> Node {
        let g = self.generation;
        let zone = ["a", "b", "c"][self.rng.random_range(0..3)];
        let mut b = node(&format!("n{i}"))
            .label("topology.kubernetes.io/zone", zone)
            .label("pool", &format!("pool-{}", g % 7))
            .label("boot-id", &format!("boot-{i}-{g}"))
            .image(&format!("registry/app:{}", g % 5), 1 << 20)
            .image(&format!("registry/job:{g}"), 2 << 20);
        if self.rng.random_bool(0.3) {
            b = b.label("spot", "true");
        }
        b.build()
    }

    fn pod(&mut self, i: usize) -> Pod {
        let g = self.generation;
        let hash = format!("h{g:x}");
        let ns = format!("ns{}", self.rng.random_range(0..3));
        let mut b = labelled(
            &format!("p{i}-{g}"),
            &[
                ("app", ["web", "db", "batch"][i % 3]),
                ("pod-template-hash", &hash),
                ("controller-uid", &format!("uid-{i}-{g}")),
            ],
        )
        .ns(&ns)
        .req(100, 64 << 20);
        match self.rng.random_range(0..5) {
            0 => {
                b = b.prefer_anti(
                    10,
                    "kubernetes.io/hostname",
                    &[("pod-template-hash", &hash)],
                )
            }
            1 => b = b.anti_affinity("topology.kubernetes.io/zone", &[("controller-uid", "x")]),
            2 => {
                b = b.spread(
                    1,
                    "topology.kubernetes.io/zone",
                    WhenUnsatisfiable::ScheduleAnyway,
                    Some(selector(&[("pod-template-hash", &hash)])),
                )
            }
            3 => b = b.prefer_affinity(5, "pool", &[("app", "db")]),
            _ => b = b.node_selector("pool", &format!("pool-{}", g % 7)),
        }
        b.build()
    }

    /// One random change, mirrored in `live`.
    fn step(&mut self) {
        self.generation += self.rng.random_range(0..2);
        match self.rng.random_range(0..10) {
            0..=1 => {
                let i = self.rng.random_range(0..NODES);
                let n = self.node(i);
                self.cluster.upsert_node(n.clone()).expect("node");
                // Pods parked off a removed node come back with it, as in the daemon.
                self.live.nodes.insert(i, n);
            }
            2 => {
                let i = self.rng.random_range(0..NODES);
                if let Some(n) = self.live.nodes.remove(&i) {
                    let id = self.cluster.node_by_name(&n.meta.name).expect("live node");
                    let on: Vec<String> = self
                        .cluster
                        .node(id)
                        .pods
                        .iter()
                        .map(|p| self.cluster.pod(*p).key())
                        .collect();
                    self.live.pods.retain(|_, p| !on.contains(&p.key()));
                    for key in on {
                        let (ns, name) = key.split_once('/').expect("key");
                        self.cluster.remove_pod(ns, name);
                    }
                    self.cluster.remove_node(&n.meta.name);
                }
            }
            3..=6 => {
                let i = self.rng.random_range(0..PODS);
                if let Some(old) = self.live.pods.remove(&i) {
                    self.cluster.remove_pod(&old.meta.namespace, &old.meta.name);
                }
                let nodes: Vec<&Node> = self.live.nodes.values().collect();
                if nodes.is_empty() {
                    return;
                }
                let on = nodes[self.rng.random_range(0..nodes.len())]
                    .meta
                    .name
                    .clone();
                let mut p = self.pod(i);
                p.node_name = Some(on);
                self.cluster.add_pod(p.clone()).expect("pod");
                self.live.pods.insert(i, p);
            }
            7 => {
                let i = self.rng.random_range(0..PODS);
                if let Some(old) = self.live.pods.remove(&i) {
                    self.cluster.remove_pod(&old.meta.namespace, &old.meta.name);
                }
            }
            8 => {
                let i = self.rng.random_range(0..3);
                let ns = namespace(
                    &format!("ns{i}"),
                    &[("team", &format!("t{}", self.generation))],
                );
                self.cluster.upsert_namespace(&ns);
                self.live.namespaces.insert(i, ns);
            }
            _ => {
                let name = format!("svc{}", self.rng.random_range(0..4));
                let ns = "ns0";
                // Remove, then maybe add again: the service goes to the end of the list.
                self.cluster
                    .remove_selector_object(SelectorKind::Service, ns, &name);
                self.live.objects.retain(|o| o.meta.name != name);
                if self.rng.random_bool(0.7) {
                    let hash = format!("h{:x}", self.generation);
                    let o = selector_object(
                        SelectorKind::Service,
                        ns,
                        &name,
                        &[("pod-template-hash", &hash)],
                    );
                    self.cluster.upsert_selector_object(&o);
                    self.live.objects.push(o);
                }
            }
        }
    }

    /// A cluster built from the live objects only, nodes added in this cluster's slot order
    /// so both visit nodes alike.
    fn rebuilt(&self) -> Cluster {
        let mut fresh = with_nodes_in_slot_order(&self.cluster, self.live.nodes.values());
        for ns in self.live.namespaces.values() {
            fresh.upsert_namespace(ns);
        }
        for o in &self.live.objects {
            fresh.upsert_selector_object(o);
        }
        for p in self.live.pods.values() {
            fresh.add_pod(p.clone()).expect("pod");
        }
        fresh
    }
}

/// Pods to schedule on both clusters: every rule that reads labels, indexes or terms has
/// something to look at.
fn probes(generation: usize) -> Vec<Pod> {
    let hash = format!("h{generation:x}");
    (0..6)
        .map(|i| {
            let b = labelled(
                &format!("probe{i}"),
                &[("app", "web"), ("pod-template-hash", &hash)],
            )
            .ns(&format!("ns{}", i % 3))
            .req(200, 128 << 20);
            match i {
                0 => b.prefer_anti(
                    10,
                    "kubernetes.io/hostname",
                    &[("pod-template-hash", &hash)],
                ),
                1 => b.anti_affinity("kubernetes.io/hostname", &[("app", "db")]),
                2 => b.affinity("topology.kubernetes.io/zone", &[("app", "batch")]),
                3 => b.spread(
                    1,
                    "topology.kubernetes.io/zone",
                    WhenUnsatisfiable::DoNotSchedule,
                    Some(selector(&[("app", "web")])),
                ),
                4 => b.node_selector("spot", "true"),
                _ => b,
            }
            .build()
        })
        .collect()
}

fn schedulers() -> Vec<Scheduler> {
    [
        include_str!("../../../../policies/default.json"),
        include_str!("../../../../policies/openshift.json"),
    ]
    .iter()
    .map(|text| {
        let policy = berth_policy::parse(text, "policy.json").expect("policy");
        scheduler_for(&policy, CycleConfig::default()).expect("scheduler")
    })
    .collect()
}

/// Each probe's placement (node name) or failure message, from fresh schedulers (their
/// tie-breaking generators advance with every decision).
fn decisions(c: &mut Cluster, generation: usize) -> Vec<String> {
    let mut schedulers = schedulers();
    let mut out = Vec::new();
    for p in probes(generation) {
        let info = c.compile_pod(p);
        for s in schedulers.iter_mut() {
            let d = s.schedule(c, &info);
            out.push(match d.node() {
                Some(n) => c.node(n).name().to_string(),
                None => d.failure_message().unwrap_or_default(),
            });
        }
    }
    out
}

#[test]
fn churn_with_compactions_equals_a_cluster_built_from_the_final_objects() {
    for seed in 0..12 {
        let mut churn = Churn::new(seed);
        let mut compactions = 0;
        for step in 0..600 {
            churn.step();
            // Compact at random points too, not only when the interner asks for it.
            if churn.rng.random_bool(0.02) {
                churn.cluster.compact_interner(&mut []);
                compactions += 1;
            }
            if step % 150 == 149 {
                let fresh = churn.rebuilt();
                assert_eq!(
                    canonical(&churn.cluster),
                    canonical(&fresh),
                    "seed {seed} step {step}"
                );
            }
        }
        assert!(compactions > 3, "seed {seed}: {compactions} compactions");
        // Compacted, the churned cluster holds exactly the strings the fresh one interned,
        // and compacting the fresh one drops nothing it uses.
        let mut fresh = churn.rebuilt();
        churn.cluster.compact_interner(&mut []);
        let before = canonical(&fresh);
        let c = fresh.compact_interner(&mut []);
        assert_eq!(churn.cluster.interner().len(), c.before, "seed {seed}");
        assert_eq!(c.before, c.after, "seed {seed}");
        assert_eq!(canonical(&fresh), before, "seed {seed}");
        assert_eq!(canonical(&churn.cluster), before, "seed {seed}");
        let generation = churn.generation;
        assert_eq!(
            decisions(&mut churn.cluster, generation),
            decisions(&mut fresh, generation),
            "seed {seed}"
        );
    }
}

#[test]
fn the_interner_stays_bounded_by_the_live_labels() {
    let mut churn = Churn::new(7);
    let mut largest_live = 0;
    let mut largest = 0;
    let mut compactions = 0;
    for _ in 0..20_000 {
        churn.step();
        if let Some(c) = churn.cluster.compact_interner_if_needed(&mut []) {
            compactions += 1;
            largest_live = largest_live.max(c.after);
        }
        largest = largest.max(churn.cluster.interner().len());
    }
    // Thousands of generations went through; without compaction every one of their hashes
    // and UIDs would still be interned.
    let live = churn.rebuilt().interner.len();
    assert!(compactions >= 5, "{compactions} compactions");
    assert!(
        largest <= 2 * largest_live.max(live) + COMPACTION_FLOOR + 64,
        "interner reached {largest} strings; live at most {largest_live}"
    );
    assert!(
        churn.generation > 4 * largest,
        "too little churn to tell: {} generations",
        churn.generation
    );
    // The pod label index holds exactly the live pods' pairs.
    let pairs: BTreeSet<(Sym, Sym)> = churn
        .cluster
        .pods()
        .filter(|(_, p)| p.node.is_some())
        .flat_map(|(_, p)| p.labels.iter())
        .collect();
    assert_eq!(churn.cluster.label_index.len(), pairs.len());
}

#[test]
fn holders_outside_the_cluster_are_renumbered_with_it() {
    let mut c = Cluster::new();
    c.add_node(node("n1").label("zone", "a").build()).unwrap();
    for g in 0..50 {
        let p = labelled(&format!("old{g}"), &[("hash", &format!("h{g}"))])
            .on("n1")
            .build();
        c.add_pod(p).unwrap();
        c.remove_pod("default", &format!("old{g}"));
    }
    let pending = labelled("waiting", &[("app", "web"), ("hash", "keep")])
        .anti_affinity("zone", &[("app", "web")])
        .build();
    let mut nominator = crate::Nominator::new();
    let n1 = c.node_by_name("n1").unwrap();
    let info = c.compile_pod(pending);
    nominator.add(info, n1);
    let mut budgets = crate::preemption::DisruptionBudgets::new();
    let pdb = model::PodDisruptionBudget {
        meta: model::Meta {
            name: "pdb".into(),
            namespace: "default".into(),
            ..model::Meta::default()
        },
        selector: Some(selector(&[("hash", "keep")])),
        ..model::PodDisruptionBudget::default()
    };
    budgets.upsert(&mut c, &pdb);
    let before = c.interner().len();
    let done = c.compact_interner(&mut [&mut nominator, &mut budgets]);
    assert_eq!(done.before, before);
    assert!(done.after < before - 40, "{done:?}");
    let mut texts = Vec::new();
    let mut collect = |s: &mut Sym| texts.push(c.interner().resolve(*s).to_string());
    nominator.visit_symbols(&mut collect);
    budgets.visit_symbols(&mut collect);
    for wanted in ["default", "app", "web", "hash", "keep", "zone"] {
        assert!(texts.iter().any(|t| t == wanted), "{wanted} in {texts:?}");
    }
    assert!(c.interner().get("h3").is_none());
}
