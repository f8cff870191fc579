//! Property tests: whatever the cluster and the pods, a simulation never overcommits a node
//! and never breaks a required rule. Each property is checked by an oracle written here, not
//! by the rules under test.

use std::collections::HashMap;

use berth_engine::model::{Node, Pod, TaintEffect, TolerationOperator};
use berth_engine::simulation::{queue_order, schedule_all};
use berth_engine::testkit::{GI, MI, cluster, node, pod};
use berth_engine::{Cluster, CycleConfig, Detail};
use proptest::prelude::*;

const POLICIES: [(&str, &str); 2] = [
    ("default", include_str!("../../../policies/default.json")),
    (
        "openshift",
        include_str!("../../../policies/openshift.json"),
    ),
];

fn arb_node(i: usize) -> impl Strategy<Value = Node> {
    (
        1..=8i64,
        1..=16i64,
        1..=6i64,
        0..3usize,
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(move |(cpu, mem, pods, zone, tainted, cordoned)| {
            let zone = ["a", "b", "c"][zone];
            let mut b = node(&format!("n{i}"))
                .cpu(cpu * 1000)
                .mem(mem * GI)
                .pods(pods)
                .label("zone", zone)
                .label("region", "r1");
            if tainted {
                b = b.taint("dedicated", "batch", TaintEffect::NoSchedule);
            }
            if cordoned {
                b = b.unschedulable();
            }
            b.build()
        })
}

fn arb_pod(i: usize) -> impl Strategy<Value = Pod> {
    (
        0..=3000i64,
        0..=4096i64,
        prop::option::of(0..3usize),
        prop::option::of(80..82i32),
        prop::option::of(0..2usize),
        any::<bool>(),
        0..3i32,
    )
        .prop_map(move |(cpu, mem, zone, port, app, tolerate, priority)| {
            let mut b = pod(&format!("p{i}"))
                .req(cpu, mem * MI)
                .priority(priority)
                .created(i as i64);
            if let Some(z) = zone {
                b = b.node_selector("zone", ["a", "b", "c"][z]);
            }
            if let Some(p) = port {
                b = b.host_port("", "TCP", p);
            }
            if let Some(a) = app {
                let app = ["x", "y"][a];
                b = b
                    .label("app", app)
                    .anti_affinity("kubernetes.io/hostname", &[("app", app)]);
            }
            if tolerate {
                b = b.tolerate("dedicated", TolerationOperator::Exists, "", None);
            }
            b.build()
        })
}

fn arb_case() -> impl Strategy<Value = (Vec<Node>, Vec<Pod>, usize, u64)> {
    (1..8usize, 1..25usize, 0..POLICIES.len(), any::<u64>()).prop_flat_map(
        |(n, p, policy, seed)| {
            let nodes: Vec<_> = (0..n).map(arb_node).collect();
            let pods: Vec<_> = (0..p).map(arb_pod).collect();
            (nodes, pods, Just(policy), Just(seed))
        },
    )
}

/// Checks every invariant on the final cluster; returns a description of the first violation.
fn violations(c: &Cluster) -> Option<String> {
    for &id in c.node_order() {
        let n = c.node(id);
        let pods: Vec<&Pod> = n.pods.iter().map(|p| &c.pod(*p).pod).collect();
        let sum = |name: &str| -> i64 {
            pods.iter()
                .flat_map(|p| &p.containers)
                .flat_map(|ct| &ct.requests)
                .filter(|(r, _)| r == name)
                .map(|(_, v)| v)
                .sum()
        };
        let alloc = |name: &str| {
            n.node
                .allocatable
                .iter()
                .find(|(r, _)| r == name)
                .map_or(0, |(_, v)| *v)
        };
        for r in ["cpu", "memory"] {
            if sum(r) > alloc(r) {
                return Some(format!(
                    "{}: {r} overcommitted ({} > {})",
                    n.name(),
                    sum(r),
                    alloc(r)
                ));
            }
        }
        if pods.len() as i64 > alloc("pods") {
            return Some(format!("{}: too many pods", n.name()));
        }
        if !pods.is_empty() && n.node.unschedulable {
            return Some(format!("{}: pod on a cordoned node", n.name()));
        }
        let mut ports: HashMap<i32, usize> = HashMap::new();
        let mut apps: HashMap<&str, usize> = HashMap::new();
        for p in &pods {
            let selector_ok = p
                .node_selector
                .iter()
                .all(|(k, v)| n.node.meta.labels.get(k) == Some(v));
            if !selector_ok {
                return Some(format!(
                    "{}: {} ignores its node selector",
                    n.name(),
                    p.meta.name
                ));
            }
            let tolerated = n
                .node
                .taints
                .iter()
                .all(|t| p.tolerations.iter().any(|tol| tol.tolerates(t)));
            if !tolerated {
                return Some(format!(
                    "{}: {} does not tolerate the taint",
                    n.name(),
                    p.meta.name
                ));
            }
            for hp in p.containers.iter().flat_map(|ct| &ct.ports) {
                *ports.entry(hp.host_port).or_default() += 1;
            }
            if let Some(app) = p.meta.labels.get("app") {
                *apps.entry(app).or_default() += 1;
            }
        }
        if let Some((port, _)) = ports.iter().find(|(_, n)| **n > 1) {
            return Some(format!("{}: host port {port} used twice", n.name()));
        }
        if let Some((app, _)) = apps.iter().find(|(_, n)| **n > 1) {
            return Some(format!(
                "{}: two {app} pods despite anti-affinity",
                n.name()
            ));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn simulation_keeps_every_required_rule((nodes, mut pods, policy, seed) in arb_case()) {
        let node_count = nodes.len();
        let mut c = cluster(nodes, vec![]);
        let policy = berth_policy::parse(POLICIES[policy].1, POLICIES[policy].0).unwrap();
        let config = CycleConfig { seed, ..CycleConfig::default() };
        let mut s = berth_engine::scheduler_for(&policy, config).unwrap();
        queue_order(&mut pods);
        let mut messages = Vec::new();
        schedule_all(&mut c, &mut s, pods, Detail::Decision, |o| {
            if o.node.is_none() {
                messages.push(o.message().unwrap_or_default());
            }
        }).unwrap();
        prop_assert_eq!(violations(&c), None);
        for m in messages {
            let prefix = format!("0/{node_count} nodes are available: ");
            prop_assert!(m.starts_with(&prefix) && m.ends_with('.'), "{}", m);
        }
    }
}
