//! Timing the scheduling of the synthetic cluster's pending pods.

use std::time::{Duration, Instant};

use anyhow::Result;
use berth_engine::model::Pod;
use berth_engine::{Cluster, Scheduler};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::args::Args;
use super::workload::{apps, build_cluster, synthetic_pod};
use crate::Format;

/// Prints one result object, with the machine it was measured on.
pub(super) fn print_result(result: &serde_json::Value, format: Format) {
    let mut result = result.clone();
    if let Some(fields) = result.as_object_mut() {
        for (k, v) in machine() {
            fields.insert(k.into(), v);
        }
    }
    match format {
        Format::Json => println!("{result}"),
        Format::Table => {
            for (k, v) in result.as_object().into_iter().flatten() {
                println!("{k:>22}: {v}");
            }
        }
    }
}

/// The machine a result comes from: the CPU model and the logical CPUs /proc/cpuinfo lists,
/// and the parallelism this process may use (less under a CPU quota or affinity mask).
fn machine() -> [(&'static str, serde_json::Value); 3] {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "model name")
        .map_or_else(|| "unknown".to_string(), |(_, v)| v.trim().to_string());
    let listed = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "processor")
        .count();
    let available = std::thread::available_parallelism().map_or(0, usize::from);
    [
        ("cpu_model", json!(model)),
        ("cpus_listed", json!(listed)),
        ("available_parallelism", json!(available)),
    ]
}

/// Builds the seeded cluster and pending pods and times scheduling them with `scheduler`.
pub(super) fn measure(args: &Args, scheduler: &mut Scheduler) -> Result<serde_json::Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let apps = apps(args);
    let mut cluster = build_cluster(&mut rng, args, apps)?;
    // Made as they are scheduled, as a watch hands them over: a batch made beforehand would
    // keep every consumed pod's slot until the end (some 37 MiB at 50,000 pods), memory no
    // scheduler's queue holds once the pods are bound.
    let pending = (0..args.pods())
        .map(|i| synthetic_pod(&mut rng, args.workload, &format!("pending-{i}"), apps, None));
    let timed = schedule_timed(&mut cluster, scheduler, pending)?;
    Ok(throughput(args, args.running(), &cluster, timed))
}

/// What scheduling a batch of pending pods took.
pub(super) struct Timed {
    /// Per pod, in ns.
    pub(super) latencies: Vec<u64>,
    /// Pods that got a node.
    pub(super) scheduled: usize,
    /// Wall time of the batch, in seconds.
    pub(super) elapsed: f64,
}

/// Schedules `pending` one by one, each placed pod assigned before the next, and times them
/// (not the time `pending` takes to make a pod).
pub(super) fn schedule_timed(
    cluster: &mut Cluster,
    scheduler: &mut Scheduler,
    pending: impl IntoIterator<Item = Pod, IntoIter: Send>,
) -> Result<Timed> {
    let mut pending = pending.into_iter();
    // The loop runs on a worker of rayon's pool, as a long-running scheduler thread would:
    // called from outside the pool, every parallel pass would be handed to the pool while
    // the calling thread sleeps, paying two thread wake-ups per pod.
    rayon::scope(|_| -> Result<_> {
        let mut latencies = Vec::with_capacity(pending.size_hint().0);
        let mut scheduled = 0usize;
        let mut making = Duration::ZERO;
        let start = Instant::now();
        loop {
            let made = Instant::now();
            let Some(pod) = pending.next() else { break };
            let t = Instant::now();
            making += t - made;
            let info = cluster.compile_pod(pod);
            let decision = scheduler.schedule(cluster, &info);
            if let Some(node) = decision.node() {
                cluster.insert_pod(info, Some(node))?;
                scheduled += 1;
            }
            latencies.push(t.elapsed().as_nanos() as u64);
        }
        Ok(Timed {
            latencies,
            scheduled,
            elapsed: start.elapsed().saturating_sub(making).as_secs_f64(),
        })
    })
}

/// The result object of a timed batch: pods/s, per-pod percentiles, a digest of every
/// placement and peak memory.
pub(super) fn throughput(
    args: &Args,
    running: usize,
    cluster: &Cluster,
    timed: Timed,
) -> serde_json::Value {
    // A digest of every placement, so runs of different policies can be compared for equal
    // decisions, not just equal counts.
    let placements = cluster.pods().fold(0xcbf2_9ce4_8422_2325u64, |h, (id, p)| {
        let node = p.node.map_or(u64::MAX, |n| u64::from(n.0));
        (h ^ (u64::from(id.0) << 32 | node)).wrapping_mul(0x0100_0000_01b3)
    });
    let pods = args.pods();
    let pct = percentiles(timed.latencies);
    json!({
        "workload": args.workload.name(),
        "nodes": args.nodes,
        "running": running,
        "pods": pods,
        "scheduled": timed.scheduled,
        "placement_digest": format!("{placements:016x}"),
        "pods_per_sec": (pods as f64 / timed.elapsed).round(),
        "mean_us": (timed.elapsed * 1e6 / pods.max(1) as f64 * 10.0).round() / 10.0,
        "p50_us": (pct(0.50) * 10.0).round() / 10.0,
        "p99_us": (pct(0.99) * 10.0).round() / 10.0,
        "peak_rss_mib": peak_rss_mib(),
    })
}

/// Per-pod latencies (ns) as a percentile function in µs.
pub(super) fn percentiles(mut latencies: Vec<u64>) -> impl Fn(f64) -> f64 {
    latencies.sort_unstable();
    move |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |ns| *ns as f64 / 1000.0)
    }
}

/// Peak resident memory of this process (VmHWM), in MiB; 0 where /proc is unavailable.
pub(super) fn peak_rss_mib() -> f64 {
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
