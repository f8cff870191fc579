//! `berth bench`: scheduling throughput on a seeded synthetic cluster, in process.
//!
//! The cluster mirrors upstream's scheduler_perf shapes: nodes spread over regions and zones,
//! running pods from ReplicaSets behind Services, then pending pods from the same apps.
//! Timings cover only the scheduling cycles and assignments, not building the cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use berth_engine::model::{Container, Meta, Node, OwnerRef, Pod, PodSelector, SelectorKind};
use berth_engine::testkit::{GI, MI, selector, term};
use berth_engine::{Cluster, CycleConfig, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::{Format, bench_extender, bench_preemption, bench_wasm, bundled, plugins};

/// A benchmark workload.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Pods with requests, Services and ReplicaSets, scheduled by the OpenShift policy.
    Basic,
    /// As basic, and every pod has required anti-affinity against its app on the hostname.
    AntiAffinity,
    /// Nodes labelled disk-ssd (half) and net-fast (a third), scheduled by a labelsPresence
    /// predicate and a labelPreference priority; `--compare-wasm` runs the same logic as
    /// WASM plugins beside it.
    NodeLabel,
    /// Every node full of priority-0 pods; each pending pod has priority 1000 and must
    /// preempt. Reports preemptions per second (`--running` is ignored: the nodes are
    /// filled to capacity).
    Preemption,
    /// As basic, plus a filter and prioritize HTTP extender on 127.0.0.1 served in process;
    /// runs with `nodeCacheCapable` off then on and reports the share of time in its calls.
    Extender,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Basic => "basic",
            Workload::AntiAffinity => "anti-affinity",
            Workload::NodeLabel => "node-label",
            Workload::Preemption => "preemption",
            Workload::Extender => "extender",
        }
    }
}

/// Arguments of `berth bench`.
#[derive(clap::Args)]
pub struct Args {
    /// The workload.
    #[arg(long, value_enum, default_value_t = Workload::Basic)]
    pub(crate) workload: Workload,
    /// Number of nodes.
    #[arg(long, default_value_t = 5000)]
    pub(crate) nodes: usize,
    /// Number of pods running before the benchmark starts.
    #[arg(long, default_value_t = 1000)]
    running: usize,
    /// Number of pending pods to schedule (default 10,000; 1,000 for `--workload
    /// preemption`).
    #[arg(long)]
    pods: Option<usize>,
    /// Policy file (default: the bundled OpenShift policy).
    #[arg(long)]
    pub(crate) policy: Option<PathBuf>,
    /// Seed of the synthetic cluster and of tie-breaking.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Percentage of nodes to find feasible before scoring (100 = score every feasible node).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=100))]
    percentage_of_nodes_to_score: u32,
    /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
    /// (default: v1.22's, DefaultPodTopologySpread=true).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    pub(crate) feature_gates: berth_engine::FeatureGates,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(crate) output: Format,
    /// With `--workload node-label`: also run the same rules as WASM plugins
    /// (node-label-filter.wasm, node-label-score.wasm) and print both with the ratio.
    #[arg(long)]
    compare_wasm: bool,
    /// Directory of WASM plugin modules (default: the policy file's directory, or
    /// plugins/dist for `--compare-wasm`).
    #[arg(long)]
    pub(crate) plugins: Option<PathBuf>,
    /// Instead of scheduling, measure hot reload: write a new version of a plugin module this
    /// many times and time each until it is live.
    #[arg(long)]
    reload_latency: Option<usize>,
}

const REGIONS: usize = 3;
const ZONES_PER_REGION: usize = 3;
const PODS_PER_APP: usize = 20;

/// Runs the benchmark and prints one result.
pub fn run(args: &Args) -> Result<()> {
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    if let Some(rounds) = args.reload_latency {
        return bench_wasm::reload_latency(args.plugins.as_deref(), rounds, args.output);
    }
    if args.compare_wasm {
        return bench_wasm::compare(args);
    }
    if args.workload == Workload::Extender {
        for result in bench_extender::measure(args)? {
            print_result(&result, args.output);
        }
        return Ok(());
    }
    let policy = match (&args.policy, args.workload) {
        (Some(p), _) => berth_policy::load(p)?,
        (None, Workload::NodeLabel) => bench_wasm::node_label_policy(false)?,
        (None, _) => berth_policy::parse(bundled::POLICY, bundled::POLICY_NAME)?,
    };
    let dir = plugins::plugins_dir(args.policy.as_deref(), args.plugins.as_deref());
    let (mut scheduler, _plugins) = plugins::scheduler(&policy, &dir, config(args))?;
    let result = if args.workload == Workload::Preemption {
        bench_preemption::measure(args, &mut scheduler)?
    } else {
        measure(args, &mut scheduler)?
    };
    print_result(&result, args.output);
    Ok(())
}

impl Args {
    /// The number of pending pods.
    pub(crate) fn pods(&self) -> usize {
        self.pods.unwrap_or(match self.workload {
            Workload::Preemption => 1000,
            _ => 10000,
        })
    }
}

/// The cycle settings of a run.
pub fn config(args: &Args) -> CycleConfig {
    CycleConfig {
        seed: args.seed,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        feature_gates: args.feature_gates,
        ..CycleConfig::default()
    }
}

/// Prints one result object.
pub fn print_result(result: &serde_json::Value, format: Format) {
    match format {
        Format::Json => println!("{result}"),
        Format::Table => {
            for (k, v) in result.as_object().into_iter().flatten() {
                println!("{k:>14}: {v}");
            }
        }
    }
}

/// Builds the seeded cluster and pending pods and times scheduling them with `scheduler`.
pub fn measure(args: &Args, scheduler: &mut Scheduler) -> Result<serde_json::Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let apps = ((args.running + args.pods()) / PODS_PER_APP).max(1);
    let mut cluster = build_cluster(&mut rng, args, apps)?;
    let pending: Vec<Pod> = (0..args.pods())
        .map(|i| synthetic_pod(&mut rng, args.workload, &format!("pending-{i}"), apps, None))
        .collect();

    // The loop runs on a worker of rayon's pool, as a long-running scheduler thread would:
    // called from outside the pool, every parallel pass would be handed to the pool while
    // the calling thread sleeps, paying two thread wake-ups per pod.
    let (latencies, scheduled, elapsed) = rayon::scope(|_| -> Result<_> {
        let mut latencies = Vec::with_capacity(pending.len());
        let mut scheduled = 0usize;
        let start = Instant::now();
        for pod in pending {
            let t = Instant::now();
            let info = cluster.compile_pod(pod);
            let decision = scheduler.schedule(&cluster, &info, false);
            if let Some(node) = decision.node {
                cluster.insert_pod(info, Some(node))?;
                scheduled += 1;
            }
            latencies.push(t.elapsed().as_nanos() as u64);
        }
        Ok((latencies, scheduled, start.elapsed().as_secs_f64()))
    })?;
    // A digest of every placement, so runs of different policies can be compared for equal
    // decisions, not just equal counts.
    let placements = cluster.pods().fold(0xcbf2_9ce4_8422_2325u64, |h, (id, p)| {
        let node = p.node.map_or(u64::MAX, |n| u64::from(n.0));
        (h ^ (u64::from(id.0) << 32 | node)).wrapping_mul(0x0100_0000_01b3)
    });
    let pct = percentiles(latencies);
    Ok(json!({
        "workload": args.workload.name(),
        "nodes": args.nodes,
        "running": args.running,
        "pods": args.pods(),
        "scheduled": scheduled,
        "placement_digest": format!("{placements:016x}"),
        "pods_per_sec": (args.pods() as f64 / elapsed).round(),
        "mean_us": (elapsed * 1e6 / args.pods().max(1) as f64 * 10.0).round() / 10.0,
        "p50_us": (pct(0.50) * 10.0).round() / 10.0,
        "p99_us": (pct(0.99) * 10.0).round() / 10.0,
        "peak_rss_mib": peak_rss_mib(),
    }))
}

fn build_cluster(rng: &mut ChaCha8Rng, args: &Args, apps: usize) -> Result<Cluster> {
    let mut cluster = Cluster::new();
    for i in 0..args.nodes {
        let mut node = synthetic_node(rng, i);
        if args.workload == Workload::NodeLabel {
            bench_wasm::label_node(&mut node, i);
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
                selector: Some(selector(&[("app", &app)])),
            });
        }
    }
    for i in 0..args.running {
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
    let labels: BTreeMap<String, String> = [
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
    let mut node = Node {
        meta: Meta {
            name,
            labels,
            ..Meta::default()
        },
        allocatable: vec![
            ("cpu".into(), cores as i64 * 1000),
            ("memory".into(), mem_gi * GI),
            ("pods".into(), 110),
        ],
        ..Node::default()
    };
    node.conditions.ready = Some(true);
    node
}

fn synthetic_pod(
    rng: &mut ChaCha8Rng,
    workload: Workload,
    name: &str,
    apps: usize,
    node: Option<String>,
) -> Pod {
    let app = app_name(rng.random_range(0..apps));
    let mut pod = Pod {
        meta: Meta {
            name: name.into(),
            namespace: "bench".into(),
            uid: name.into(),
            labels: [("app".to_string(), app.clone())].into(),
            owners: vec![OwnerRef {
                kind: "ReplicaSet".into(),
                name: app.clone(),
                uid: format!("{app}-ReplicaSet"),
                controller: true,
            }],
            ..Meta::default()
        },
        node_name: node,
        scheduler_name: "berth".into(),
        containers: vec![Container {
            name: "main".into(),
            image: format!("registry.example/{app}:1"),
            requests: vec![
                ("cpu".into(), rng.random_range(1..=10) * 100),
                ("memory".into(), rng.random_range(1..=8) * 128 * MI),
            ],
            ports: Vec::new(),
        }],
        ..Pod::default()
    };
    if workload == Workload::AntiAffinity {
        pod.affinity
            .anti_required
            .push(term("kubernetes.io/hostname", &[("app", &app)]));
    }
    pod
}

/// Per-pod latencies (ns) as a percentile function in µs.
pub(crate) fn percentiles(mut latencies: Vec<u64>) -> impl Fn(f64) -> f64 {
    latencies.sort_unstable();
    move |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |ns| *ns as f64 / 1000.0)
    }
}

/// Peak resident memory of this process (VmHWM), in MiB; 0 where /proc is unavailable.
pub(crate) fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| (kb / 1024.0 * 10.0).round() / 10.0)
}
