//! The synthetic cluster of `berth bench`, seeded: nodes spread over regions and zones, and
//! pods from ReplicaSets behind Services, as upstream's scheduler_perf shapes them.
//!
//! It builds its objects itself rather than with the engine's test kit, which only tests
//! compile in.

use anyhow::Result;
use berth_engine::Cluster;
use berth_engine::labels::{LabelSelector, Operator, Requirement};
use berth_engine::model::{
    Container, Meta, Node, OwnerRef, Pod, PodAffinityTerm, PodSelector, SelectorKind, StringMap,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::args::{Args, Workload};

const REGIONS: usize = 3;
const ZONES_PER_REGION: usize = 3;
const PODS_PER_APP: usize = 20;
pub(super) const MI: i64 = 1 << 20;
pub(super) const GI: i64 = 1 << 30;

/// The number of apps (a Service and a ReplicaSet each) the pods of a run are spread over.
pub(super) fn apps(args: &Args) -> usize {
    ((args.running() + args.pods()) / PODS_PER_APP).max(1)
}

pub(super) fn build_cluster(rng: &mut ChaCha8Rng, args: &Args, apps: usize) -> Result<Cluster> {
    let mut cluster = Cluster::new();
    for i in 0..args.nodes {
        let mut node = synthetic_node(rng, i);
        if args.workload == Workload::NodeLabel {
            label_node(&mut node, i);
        }
        cluster.add_node(node)?;
    }
    for a in 0..apps {
        let app = app_name(a);
        for kind in [SelectorKind::Service, SelectorKind::ReplicaSet] {
            cluster.upsert_selector_object(&PodSelector {
                kind,
                meta: Meta {
                    name: app.clone(),
                    namespace: "bench".into(),
                    uid: format!("{app}-{kind:?}"),
                    ..Meta::default()
                },
                selector: Some(app_selector(&app)),
            });
        }
    }
    for i in 0..args.running() {
        let node = format!("node-{}", rng.random_range(0..args.nodes));
        let pod = synthetic_pod(
            rng,
            args.workload,
            &format!("running-{i}"),
            apps,
            Some(node),
        );
        cluster.add_pod(pod)?;
    }
    Ok(cluster)
}

fn app_name(a: usize) -> String {
    format!("app-{a}")
}

pub(crate) fn synthetic_node(rng: &mut ChaCha8Rng, i: usize) -> Node {
    let region = i % REGIONS;
    let zone = (i / REGIONS) % ZONES_PER_REGION;
    let (cores, mem_gi) = [(16, 64), (32, 128), (64, 256)][rng.random_range(0..3)];
    let name = format!("node-{i}");
    let zone_name = format!("region-{region}-zone-{zone}");
    let region_name = format!("region-{region}");
    let labels: StringMap = [
        ("kubernetes.io/hostname", name.as_str()),
        ("topology.kubernetes.io/region", &region_name),
        ("topology.kubernetes.io/zone", &zone_name),
        ("region", &region_name),
        ("zone", &zone_name),
        (
            "node.kubernetes.io/instance-type",
            ["small", "medium", "large"][cores / 32],
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    ready_node(name, labels, cores as i64 * 1000, mem_gi * GI, 110)
}

/// A Ready node with these labels and allocatable CPU (millicores), memory and pods.
pub(super) fn ready_node(
    name: String,
    labels: StringMap,
    milli_cpu: i64,
    memory: i64,
    pods: i64,
) -> Node {
    let mut node = Node {
        meta: Meta {
            name,
            labels,
            ..Meta::default()
        },
        allocatable: vec![
            ("cpu".into(), milli_cpu),
            ("memory".into(), memory),
            ("pods".into(), pods),
        ],
        ..Node::default()
    };
    node.conditions.ready = Some(true);
    node
}

pub(super) fn synthetic_pod(
    rng: &mut ChaCha8Rng,
    workload: Workload,
    name: &str,
    apps: usize,
    node: Option<String>,
) -> Pod {
    let app = app_name(rng.random_range(0..apps));
    let milli_cpu = rng.random_range(1..=10) * 100;
    let memory = rng.random_range(1..=8) * 128 * MI;
    let mut pod = app_pod(name, &app, "ReplicaSet", (milli_cpu, memory), node);
    if workload == Workload::AntiAffinity {
        pod.affinity.anti_required.push(apart_on_hostname(&app));
    }
    pod
}

/// A pod of app `app` (labelled `app=<app>`, image `registry.example/<app>:1`) owned by its
/// controller, a ReplicaSet or StatefulSet named after the app, with one container
/// requesting `milli_cpu` and `memory`.
pub(super) fn app_pod(
    name: &str,
    app: &str,
    owner: &str,
    (milli_cpu, memory): (i64, i64),
    node: Option<String>,
) -> Pod {
    Pod {
        meta: Meta {
            name: name.into(),
            namespace: "bench".into(),
            uid: name.into(),
            labels: [("app".to_string(), app.to_string())].into(),
            owners: vec![OwnerRef {
                kind: owner.into(),
                name: app.into(),
                uid: format!("{app}-{owner}"),
                controller: true,
            }],
            ..Meta::default()
        },
        node_name: node,
        scheduler_name: "berth".into(),
        containers: vec![Container {
            name: "main".into(),
            image: format!("registry.example/{app}:1"),
            requests: vec![("cpu".into(), milli_cpu), ("memory".into(), memory)],
            ..Container::default()
        }],
        ..Pod::default()
    }
}

/// Required anti-affinity against the pods of `app` on the hostname: one per node.
pub(super) fn apart_on_hostname(app: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(app_selector(app)),
        topology_key: "kubernetes.io/hostname".into(),
        ..PodAffinityTerm::default()
    }
}

/// A selector of the pods of one app.
fn app_selector(app: &str) -> LabelSelector {
    label_selector("app", app)
}

/// A selector of the pods labelled `key=value` (a `matchLabels` of one pair).
pub(super) fn label_selector(key: &str, value: &str) -> LabelSelector {
    LabelSelector {
        requirements: vec![Requirement {
            key: key.into(),
            operator: Operator::In,
            values: vec![value.into()],
        }],
    }
}

/// The node-label workload's labels: disk-ssd on even nodes, net-fast on every third.
fn label_node(node: &mut Node, i: usize) {
    if i.is_multiple_of(2) {
        node.meta.labels.insert("disk-ssd".into(), "true".into());
    }
    if i.is_multiple_of(3) {
        node.meta.labels.insert("net-fast".into(), "true".into());
    }
}
