//! Equivalence classes decide exactly as the cycle that asks every node: random clusters
//! scheduled both ways, with the same seed, must give the same placement, message, victims
//! and nomination for every pod.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::classes::SummedCycles;
use crate::cluster::Cluster;
use crate::model::{Pod, SelectorKind, TaintEffect, TolerationOperator, WhenUnsatisfiable};
use crate::preemption::DisruptionBudgets;
use crate::scheduler::{CycleConfig, Scheduler};
use crate::simulation::{Outcome, schedule_all_with};
use crate::testkit::*;

/// Every built-in predicate and priority that answers per node, with service (anti-)affinity
/// on the zone and region labels.
const POLICY: &str = r#"{
  "kind": "Policy", "apiVersion": "v1",
  "predicates": [
    {"name": "NoVolumeZoneConflict"}, {"name": "MaxEBSVolumeCount"},
    {"name": "MaxCSIVolumeCountPred"}, {"name": "MatchInterPodAffinity"},
    {"name": "NoDiskConflict"}, {"name": "GeneralPredicates"},
    {"name": "PodToleratesNodeTaints"}, {"name": "CheckVolumeBinding"},
    {"name": "CheckNodeUnschedulable"}, {"name": "EvenPodsSpread"},
    {"name": "CheckNodeMemoryPressure"},
    {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
    {"name": "Disk", "argument": {"labelsPresence": {"labels": ["disk"], "presence": true}}}
  ],
  "priorities": [
    {"name": "SelectorSpreadPriority", "weight": 1},
    {"name": "InterPodAffinityPriority", "weight": 1},
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "MostRequestedPriority", "weight": 1},
    {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
    {"name": "NodeAffinityPriority", "weight": 1},
    {"name": "TaintTolerationPriority", "weight": 1},
    {"name": "ImageLocalityPriority", "weight": 1},
    {"name": "EvenPodsSpreadPriority", "weight": 2},
    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
    {"name": "Fast", "weight": 1, "argument": {"labelPreference": {"label": "fast", "presence": true}}}
  ]
}"#;

/// The bundled OpenShift policy: the rules whose totals a class may sum from its answers
/// (LeastRequested and BalancedAllocation kept, the spreading rules grouped by zone) beside
/// rules that are constant for most pods and per node for some.
const OPENSHIFT_POLICY: &str = include_str!("../../../policies/openshift.json");

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";
const APPS: usize = 4;

fn scheduler(policy: &str, classes: bool, percentage: u32, seed: u64) -> Scheduler {
    let policy = berth_policy::parse(policy, "classes.json").expect("test policy");
    let mut config = CycleConfig {
        percentage_of_nodes_to_score: percentage,
        seed,
        equivalence_classes: classes,
        ..CycleConfig::default()
    };
    // Odd seeds run SelectorSpreadPriority as v1.22 does without the DefaultPodTopologySpread
    // gate (the legacy rule, which counts per node while scoring).
    config.feature_gates.default_pod_topology_spread = seed.is_multiple_of(2);
    crate::registry::scheduler_for(&policy, config).expect("scheduler")
}

fn app(rng: &mut ChaCha8Rng) -> String {
    format!("app{}", rng.random_range(0..APPS))
}

fn random_node(rng: &mut ChaCha8Rng, i: usize) -> crate::model::Node {
    let name = format!("n{i}");
    let mut b = node(&name)
        .label(HOST, &name)
        .cpu(rng.random_range(2..=8) * 1000)
        .mem(rng.random_range(4..=16) * GI)
        .pods(if rng.random_bool(0.1) { 3 } else { 110 })
        .image("app:1", rng.random_range(0..600) * MI);
    if rng.random_bool(0.9) {
        // The well-known key, and the one the OpenShift policy's ServiceAntiAffinity reads.
        let zone = format!("z{}", rng.random_range(0..3));
        b = b.label(ZONE, &zone).label("zone", &zone);
    }
    if rng.random_bool(0.9) {
        b = b.label("region", &format!("r{}", rng.random_range(0..2)));
    }
    if rng.random_bool(0.85) {
        b = b.label("disk", if rng.random_bool(0.5) { "ssd" } else { "hdd" });
    }
    if rng.random_bool(0.3) {
        b = b.label("fast", "true");
    }
    if rng.random_bool(0.1) {
        b = b.taint("dedicated", "batch", TaintEffect::NoSchedule);
    }
    if rng.random_bool(0.05) {
        b = b.unschedulable();
    }
    b.build()
}

/// A pod of `app`, with a random mix of the constraints the per-node answers depend on.
fn random_template(rng: &mut ChaCha8Rng) -> Pod {
    let a = app(rng);
    let other = app(rng);
    let mut p = pod("template")
        .label("app", &a)
        .label(
            "tier",
            if rng.random_bool(0.5) {
                "front"
            } else {
                "back"
            },
        )
        .owner("ReplicaSet", &format!("rs-{a}"), &format!("uid-rs-{a}"))
        .req(
            rng.random_range(1..=12) * 100,
            rng.random_range(1..=8) * 256 * MI,
        )
        .priority(if rng.random_bool(0.2) { 100 } else { 0 });
    if rng.random_bool(0.25) {
        p = p.node_selector("disk", "ssd");
    }
    if rng.random_bool(0.25) {
        p = p.anti_affinity(
            if rng.random_bool(0.5) { HOST } else { ZONE },
            &[("app", &a)],
        );
    }
    if rng.random_bool(0.15) {
        p = p.affinity(ZONE, &[("app", &other)]);
    }
    if rng.random_bool(0.25) {
        p = p.prefer_anti(rng.random_range(1..=100), ZONE, &[("app", &a)]);
    }
    if rng.random_bool(0.2) {
        p = p.prefer_affinity(rng.random_range(1..=100), HOST, &[("app", &other)]);
    }
    if rng.random_bool(0.25) {
        let (key, when) = if rng.random_bool(0.5) {
            (ZONE, WhenUnsatisfiable::DoNotSchedule)
        } else {
            (HOST, WhenUnsatisfiable::ScheduleAnyway)
        };
        p = p.spread(
            rng.random_range(1..=2),
            key,
            when,
            Some(selector(&[("app", &a)])),
        );
        if when == WhenUnsatisfiable::DoNotSchedule && rng.random_bool(0.3) {
            p = p.min_domains(rng.random_range(1..=4));
        }
        if rng.random_bool(0.3) {
            use crate::model::NodeInclusionPolicy::{Honor, Ignore};
            let policy = |honor: bool| Some(if honor { Honor } else { Ignore });
            p = p.inclusion(policy(rng.random_bool(0.5)), policy(rng.random_bool(0.5)));
        }
    }
    if rng.random_bool(0.2) {
        p = p.tolerate(
            "dedicated",
            TolerationOperator::Equal,
            "batch",
            Some(TaintEffect::NoSchedule),
        );
    }
    if rng.random_bool(0.1) {
        p = p.host_port("", "TCP", 8080);
    }
    if rng.random_bool(0.2) {
        p = p.node_selector("region", &format!("r{}", rng.random_range(0..2)));
    }
    // A ReadWriteOncePod claim: once one pod uses it, the others of the class fit nowhere.
    if rng.random_bool(0.15) {
        p = p.claim(RWOP_CLAIM);
    }
    p.build()
}

/// The ReadWriteOncePod claim some templates use, bound to a volume any node can mount.
const RWOP_CLAIM: &str = "rwop";

fn named(template: &Pod, name: &str, created: i64) -> Pod {
    let mut p = template.clone();
    p.meta.name = name.into();
    p.meta.uid = format!("uid-{name}");
    p.meta.creation_timestamp = created;
    p
}

/// A random cluster with running pods (built the same way from the same seed).
fn random_cluster(rng: &mut ChaCha8Rng, templates: &[Pod]) -> Cluster {
    let nodes: Vec<_> = (0..rng.random_range(8..60))
        .map(|i| random_node(rng, i))
        .collect();
    let mut running = Vec::new();
    for i in 0..rng.random_range(0..nodes.len() * 2) {
        let t = &templates[rng.random_range(0..templates.len())];
        let mut p = named(t, &format!("run{i}"), 0);
        p.node_name = Some(nodes[rng.random_range(0..nodes.len())].meta.name.clone());
        running.push(p);
    }
    let mut c = cluster(nodes, running);
    for a in 0..APPS {
        let app = format!("app{a}");
        c.upsert_selector_object(&selector_object(
            SelectorKind::Service,
            "default",
            &format!("svc-{app}"),
            &[("app", &app)],
        ));
        c.upsert_selector_object(&selector_object(
            SelectorKind::ReplicaSet,
            "default",
            &format!("rs-{app}"),
            &[("app", &app)],
        ));
    }
    let rwop = ["ReadWriteOncePod"];
    add_storage(
        &mut c,
        vec![
            pv("rwop-pv", GI)
                .access_modes(&rwop)
                .claimed_by(RWOP_CLAIM)
                .build(),
        ],
        vec![
            pvc(RWOP_CLAIM, GI)
                .access_modes(&rwop)
                .bound("rwop-pv")
                .build(),
        ],
        vec![],
    );
    c
}

/// Pending pods in runs of equal pods, so classes repeat, interleaved across templates.
fn pending(rng: &mut ChaCha8Rng, templates: &[Pod], round: usize) -> Vec<Pod> {
    let mut pods = Vec::new();
    while pods.len() < 40 {
        let t = &templates[rng.random_range(0..templates.len())];
        for _ in 0..rng.random_range(1..=12) {
            let i = pods.len();
            pods.push(named(t, &format!("p{round}-{i}"), i as i64));
        }
    }
    crate::simulation::queue_order(&mut pods);
    pods
}

/// Between rounds: pods deleted, a node relabelled or added, a Service changed.
fn churn(rng: &mut ChaCha8Rng, c: &mut Cluster, round: usize) {
    let keys: Vec<(String, String)> = c
        .pods()
        .filter(|_| rng.random_bool(0.15))
        .map(|(_, p)| (p.pod.meta.namespace.clone(), p.pod.meta.name.clone()))
        .collect();
    for (ns, name) in keys {
        c.remove_pod(&ns, &name);
    }
    match rng.random_range(0..4) {
        0 => {
            let i = rng.random_range(0..c.node_count());
            let id = c.node_order()[i];
            let mut n = c.node(id).node.as_ref().clone();
            n.meta.labels.insert("fast".into(), "true".into());
            c.upsert_node(n).expect("relabel");
        }
        1 => {
            c.add_node(random_node(rng, 1000 + round))
                .expect("new node");
        }
        2 => {
            c.upsert_selector_object(&selector_object(
                SelectorKind::Service,
                "default",
                "svc-app0",
                &[(
                    "tier",
                    if rng.random_bool(0.5) {
                        "front"
                    } else {
                        "back"
                    },
                )],
            ));
        }
        _ => {}
    }
}

/// What a run decided, pod by pod, with its class counts (reused, asked) and how many
/// cycles summed their totals, and how.
fn decisions(
    policy: &str,
    seed: u64,
    classes: bool,
    percentage: u32,
) -> (Vec<String>, (u64, u64), SummedCycles) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let templates: Vec<Pod> = (0..rng.random_range(2..7))
        .map(|_| random_template(&mut rng))
        .collect();
    let mut c = random_cluster(&mut rng, &templates);
    let mut s = scheduler(policy, classes, percentage, seed);
    if seed % 3 == 1 {
        // Room for the fewest classes: classes evict one another, or wait for room.
        s.set_class_budget(1);
    }
    let mut out = Vec::new();
    for round in 0..3 {
        let pods = pending(&mut rng, &templates, round);
        schedule_all_with(
            &mut c,
            &mut s,
            &DisruptionBudgets::new(),
            pods,
            crate::Detail::Decision,
            |o: &Outcome| {
                out.push(format!(
                    "{} -> {:?} {:?} victims {:?} nominated {:?}",
                    o.pod,
                    o.node,
                    o.message(),
                    o.victims,
                    o.nominated_node
                ))
            },
        )
        .expect("schedule");
        churn(&mut rng, &mut c, round);
    }
    (out, s.class_counts(), s.summed_cycles())
}

#[test]
fn equivalence_classes_decide_as_asking_every_node() {
    let mut reused = 0;
    let mut claim_refusals = 0;
    for seed in 0..40 {
        for percentage in [100, 0] {
            let (plain, _, _) = decisions(POLICY, seed, false, percentage);
            let (kept, (r, _), _) = decisions(POLICY, seed, true, percentage);
            reused += r;
            claim_refusals += plain
                .iter()
                .filter(|d| d.contains(crate::rules::read_write_once_pod::REASON))
                .count();
            for (i, (a, b)) in plain.iter().zip(&kept).enumerate() {
                assert_eq!(a, b, "seed {seed}, {percentage}% scored, pod #{i}");
            }
            assert_eq!(plain.len(), kept.len());
        }
    }
    // The comparison means something only if answers were in fact reused.
    assert!(reused > 10_000, "only {reused} node answers reused");
    assert!(
        claim_refusals > 0,
        "no pod found its ReadWriteOncePod claim in use"
    );
}

/// Under the OpenShift policy, cycles that sum their totals from kept answers and
/// the spreading rules' grouped scores decide as cycles that normalise every column: those
/// that choose from their class's ranking (pods of one class in a row), from its tally
/// (classes taking turns), and, with a weight too large for a tally's counts, those that
/// sum every node's total.
#[test]
fn summed_totals_decide_as_normalising_every_column() {
    // LeastRequested at weight 600: kept sums span 0..=76,327, past a tally's counts.
    let heavy = OPENSHIFT_POLICY.replace(
        r#"{"name": "LeastRequestedPriority", "weight": 1}"#,
        r#"{"name": "LeastRequestedPriority", "weight": 600}"#,
    );
    assert_ne!(heavy, OPENSHIFT_POLICY);
    for (policy, untallied) in [(OPENSHIFT_POLICY, false), (heavy.as_str(), true)] {
        let mut all = SummedCycles::default();
        for seed in 0..60 {
            for percentage in [100, 0] {
                let (plain, _, none) = decisions(policy, seed, false, percentage);
                let (kept, _, s) = decisions(policy, seed, true, percentage);
                assert_eq!(none, SummedCycles::default(), "no class, nothing summed");
                all.summed += s.summed;
                all.ranked += s.ranked;
                all.tallied += s.tallied;
                for (i, (a, b)) in plain.iter().zip(&kept).enumerate() {
                    assert_eq!(a, b, "seed {seed}, {percentage}% scored, pod #{i}");
                }
                assert_eq!(plain.len(), kept.len());
            }
        }
        // The comparison means something only if totals were in fact summed, each way.
        // (Many random pods prefer affinity or spread on their own constraints, which the
        // cycle normalises column by column; under the bundled policy 1,310 cycles are
        // summed, 1,150 of them chosen from a ranking and 160 from a tally.)
        let SummedCycles {
            summed,
            ranked,
            tallied,
        } = all;
        assert!(summed > 1_000, "only {summed} cycles summed their totals");
        assert!(ranked > 100, "only {ranked} cycles chose from a ranking");
        let (tallied_least, streamed_least) = if untallied { (0, 100) } else { (100, 0) };
        assert!(
            tallied >= tallied_least && (tallied == 0) == untallied,
            "{tallied} cycles chose from a tally"
        );
        let streamed = summed - ranked - tallied;
        assert!(
            streamed >= streamed_least,
            "only {streamed} cycles summed every total"
        );
    }
}

/// Every change but a pod's placement or removal may move kept answers anywhere, so it must
/// end them all; a pod's is journalled with its node.
#[test]
fn every_change_but_a_pods_makes_kept_answers_stale() {
    use crate::model::{Namespace, VolumeBindingMode};
    type Change = (&'static str, fn(&mut Cluster));
    let changes: &[Change] = &[
        ("add node", |c| {
            c.add_node(node("n9").build()).unwrap();
        }),
        ("update node", |c| {
            c.upsert_node(node("n0").label("x", "y").build()).unwrap();
        }),
        ("remove node", |c| {
            c.remove_node("n1");
        }),
        ("namespace", |c| {
            c.upsert_namespace(&Namespace::default());
        }),
        ("remove namespace", |c| {
            c.remove_namespace("default");
        }),
        ("selector object", |c| {
            c.upsert_selector_object(&selector_object(
                SelectorKind::Service,
                "default",
                "s",
                &[("a", "b")],
            ));
        }),
        ("remove selector object", |c| {
            c.remove_selector_object(SelectorKind::Service, "default", "s");
        }),
        ("volume", |c| {
            c.upsert_persistent_volume(pv("v", GI).build());
        }),
        ("remove volume", |c| {
            c.remove_persistent_volume("v");
        }),
        ("claim", |c| {
            c.upsert_persistent_volume_claim(pvc("c", GI).build());
        }),
        ("remove claim", |c| {
            c.remove_persistent_volume_claim("default", "c");
        }),
        ("storage class", |c| {
            c.upsert_storage_class(storage_class("sc", "p", VolumeBindingMode::Immediate));
        }),
        ("remove storage class", |c| {
            c.remove_storage_class("sc");
        }),
        ("CSI node", |c| {
            c.upsert_csi_node(csi_node("n0", &[]));
        }),
        ("remove CSI node", |c| {
            c.remove_csi_node("n0");
        }),
        ("compaction", |c| {
            c.compact_interner(&mut []);
        }),
    ];
    for (what, change) in changes {
        let mut c = cluster(vec![node("n0").build(), node("n1").build()], vec![]);
        let before = c.changes().cursor();
        change(&mut c);
        assert!(c.changes().since(before).is_none(), "{what}");
    }
    let mut c = cluster(vec![node("n0").build()], vec![]);
    let before = c.changes().cursor();
    c.add_pod(pod("p").on("n0").build()).unwrap();
    c.remove_pod("default", "p");
    let nodes: Vec<u32> = c
        .changes()
        .since(before)
        .expect("pods are journalled")
        .map(|ch| ch.node.0)
        .collect();
    assert_eq!(nodes, vec![0, 0]);
}

/// The class signature is the whole pod but its identity, so pods differing only in a spread
/// constraint's v1.25+ fields (which change which nodes count and the global minimum) never
/// share kept answers.
#[test]
fn spread_fields_split_classes() {
    use crate::classes::class_of;
    use crate::model::NodeInclusionPolicy::{Honor, Ignore};
    let base = || {
        pod("p").label("app", "a").spread(
            1,
            "zone",
            WhenUnsatisfiable::DoNotSchedule,
            Some(selector(&[("app", "a")])),
        )
    };
    let variants = [
        base().build(),
        base().min_domains(3).build(),
        base().inclusion(Some(Ignore), None).build(),
        base().inclusion(None, Some(Honor)).build(),
    ];
    for (i, a) in variants.iter().enumerate() {
        for b in &variants[i + 1..] {
            assert_ne!(class_of(a), class_of(b));
        }
    }
    let mut renamed = base().build();
    renamed.meta.name = "q".into();
    assert_eq!(class_of(&base().build()), class_of(&renamed));
}
