//! `berth bench --workload preemption`: every node full of low-priority pods, pending pods of
//! higher priority that can only get in by preempting.
//!
//! Each pending pod goes through what `berth run` does for it, in process: a cycle that
//! fails, the preemption that picks a node and victims, the victims' removal, and the cycle
//! that places the pod on the freed node. A pod's time covers all of it.

use std::time::Instant;

use anyhow::{Result, bail};
use berth_engine::model::{Container, Meta, Pod};
use berth_engine::{Cluster, Decision, DisruptionBudgets, Nominator, PreemptionOutcome, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::args::Args;
use super::measure::{peak_rss_mib, percentiles};
use super::workload::{MI, synthetic_node};

/// CPU of each running (victim) pod and of each preemptor, in millicores: nodes have 16, 32
/// or 64 cores, so they fill exactly.
const POD_MILLI_CPU: i64 = 2000;
/// Priority of the running pods and of the preemptors.
const LOW: i32 = 0;
const HIGH: i32 = 1000;

fn pod(name: &str, node: Option<String>, priority: i32, start: Option<i64>) -> Pod {
    Pod {
        meta: Meta {
            name: name.into(),
            namespace: "bench".into(),
            uid: name.into(),
            ..Meta::default()
        },
        node_name: node,
        scheduler_name: "berth".into(),
        priority,
        start_time: start,
        containers: vec![Container {
            name: "main".into(),
            image: "registry.example/app:1".into(),
            requests: vec![("cpu".into(), POD_MILLI_CPU), ("memory".into(), 256 * MI)],
            ports: Vec::new(),
            ..Container::default()
        }],
        ..Pod::default()
    }
}

/// Builds the full cluster and times the preemptions.
pub(super) fn measure(args: &Args, scheduler: &mut Scheduler) -> Result<serde_json::Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut cluster = Cluster::new();
    let mut running = 0usize;
    for i in 0..args.nodes {
        let node = synthetic_node(&mut rng, i);
        let cores = node
            .allocatable
            .iter()
            .find(|(k, _)| k == "cpu")
            .map_or(0, |(_, v)| *v);
        let name = node.meta.name.clone();
        cluster.add_node(node)?;
        for _ in 0..cores / POD_MILLI_CPU {
            let start = rng.random_range(0..1_000_000);
            let p = pod(
                &format!("low-{running}"),
                Some(name.clone()),
                LOW,
                Some(start),
            );
            cluster.add_pod(p)?;
            running += 1;
        }
    }
    let pods = args.pods();
    let pending: Vec<Pod> = (0..pods)
        .map(|i| pod(&format!("high-{i}"), None, HIGH, None))
        .collect();
    let budgets = DisruptionBudgets::new();
    let nominator = Nominator::new();
    // On a pool worker, as in `berth bench`'s other workloads.
    let (latencies, preempted, victims, elapsed) = rayon::scope(|_| -> Result<_> {
        let mut latencies = Vec::with_capacity(pods);
        let (mut preempted, mut victims) = (0usize, 0usize);
        let start = Instant::now();
        for p in pending {
            let t = Instant::now();
            let mut info = cluster.compile_pod(p);
            let decision = scheduler.schedule_with(&cluster, &nominator, &info);
            let Decision::Unschedulable { fit, .. } = decision else {
                bail!(
                    "pod {} fit without preemption: the nodes are not full",
                    info.key()
                );
            };
            let (outcome, _) = scheduler.preempt(&cluster, &nominator, &budgets, &info, &fit);
            let PreemptionOutcome::Preempt { candidate, .. } = outcome else {
                bail!(
                    "pod {} found no node to preempt on: {outcome:?}",
                    info.key()
                );
            };
            for v in &candidate.victims {
                let key = (
                    cluster.pod(*v).pod.meta.namespace.clone(),
                    cluster.pod(*v).pod.meta.name.clone(),
                );
                cluster.remove_pod(&key.0, &key.1);
            }
            victims += candidate.victims.len();
            info.pod.nominated_node_name = Some(cluster.node(candidate.node).name().to_string());
            let decision = scheduler.schedule_with(&cluster, &nominator, &info);
            let Some(node) = decision.node() else {
                bail!("pod {} did not fit after its preemption", info.key());
            };
            scheduler.reserve(&mut cluster, &info, node);
            cluster.insert_pod(info, Some(node))?;
            preempted += 1;
            latencies.push(t.elapsed().as_nanos() as u64);
        }
        Ok((latencies, preempted, victims, start.elapsed().as_secs_f64()))
    })?;
    let (reused, computed) = scheduler.dry_run_counts();
    let pct = percentiles(latencies);
    Ok(json!({
        "workload": "preemption",
        "nodes": args.nodes,
        "running": running,
        "pods": pods,
        "preempted": preempted,
        "victims": victims,
        // Node dry runs answered from an equal earlier pod's (the pods here are all equal).
        "dry_runs_reused": reused,
        "dry_runs_computed": computed,
        "preemptions_per_sec": (preempted as f64 / elapsed).round(),
        "mean_us": (elapsed * 1e6 / pods.max(1) as f64 * 10.0).round() / 10.0,
        "p50_us": (pct(0.50) * 10.0).round() / 10.0,
        "p99_us": (pct(0.99) * 10.0).round() / 10.0,
        "peak_rss_mib": peak_rss_mib(),
    }))
}
