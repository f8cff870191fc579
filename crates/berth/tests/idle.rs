//! Idle cost: the CPU a scheduler burns with nothing to schedule, on one idle control plane
//! (kwok nodes, no pending pods). Berth without plugins, Berth with WASM plugins, and
//! kube-scheduler v1.36 run in turn, each leader-elected at upstream's cadence (renewal every
//! 2 s) with default logging; after a warm-up, each one's utime+stime and its threads'
//! context switches (wake-ups) are read from /proc over a window. Alternating rounds, medians
//! printed. A measurement, not a timed test:
//!
//! `bash scripts/build-plugins.sh && cargo test --release -p berth --test idle -- --ignored --nocapture`
//!
//! `BERTH_IDLE_ROUNDS` (default 3) and `BERTH_IDLE_SECONDS` (default 60, the window) change
//! its length; `BERTH_BIN` runs another berth binary (a release build) from a debug test.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use berth_testcluster::{ClusterOptions, bounded_command, node_template};
use common::{
    Env, NAMESPACE, PLUGINS, POLICY, Process, SERIAL, bounded, cpu_seconds, free_port,
    kube_scheduler, median, ticks_per_second,
};

const NODES: usize = 100;
/// Time after start before the window: caches synced, lease taken, start-up work done.
const WARM_UP: Duration = Duration::from_secs(20);

/// The plugin policy: a WASM filter and a WASM score (plugins/node-label-*), loaded and
/// instantiated, never called while nothing is pending.
const WASM_POLICY: &str = r#"{"kind": "Policy", "apiVersion": "v1",
  "predicates": [{"name": "NeedsSsd", "argument": {"wasm": {"module": "node-label-filter.wasm",
    "config": {"labels": ["disk-ssd"], "presence": true}}}}],
  "priorities": [{"name": "PreferFastNet", "weight": 1, "argument": {"wasm": {"module": "node-label-score.wasm",
    "config": {"label": "net-fast", "presence": true}}}}]}"#;

#[derive(Clone, Copy, Debug)]
enum Variant {
    Berth,
    BerthWasm,
    KubeScheduler,
}

/// CPU seconds (user + system) and context switches of every thread of `pid` so far.
fn usage(pid: u32, ticks_per_second: f64) -> Result<(f64, u64)> {
    let cpu = cpu_seconds(pid, ticks_per_second)?;
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let status = std::fs::read_to_string(task?.path().join("status")).unwrap_or_default();
        switches += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok((cpu, switches))
}

fn start(env: &Env, variant: Variant, dir: &Path, round: usize) -> Result<Process> {
    let name = format!("{variant:?}-{round}");
    let lifetime = Duration::from_secs(600);
    let policy = match variant {
        Variant::KubeScheduler => {
            let kubeconfig = env.cluster.kubeconfig_path().display();
            let config = format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\n\
                 kind: KubeSchedulerConfiguration\n\
                 clientConnection:\n  kubeconfig: {kubeconfig}\n\
                 leaderElection:\n  leaderElect: true\n"
            );
            return kube_scheduler(env, dir, &name, &config, lifetime);
        }
        Variant::BerthWasm => {
            // In a directory of its own: Berth watches the policy's directory, and the logs
            // written beside it would be file events.
            let policy_dir = dir.join("policy");
            std::fs::create_dir_all(&policy_dir)?;
            let path = policy_dir.join("wasm-policy.json");
            std::fs::write(&path, WASM_POLICY)?;
            path
        }
        Variant::Berth => PathBuf::from(POLICY),
    };
    let log = dir.join(format!("{name}.log"));
    let out = File::create(&log)?;
    let binary = std::env::var("BERTH_BIN").map_or_else(
        |_| PathBuf::from(env!("CARGO_BIN_EXE_berth")),
        PathBuf::from,
    );
    let mut command = bounded_command(&binary, lifetime, None);
    command
        .args(["run", "--policy", &policy.display().to_string()])
        .args(["--scheduler-name", "berth", "--leader-elect"])
        .args(["--leader-elect-resource-namespace", NAMESPACE])
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .args(["--metrics-addr", &format!("127.0.0.1:{}", free_port()?)])
        .arg("--secure-port=0");
    if matches!(variant, Variant::BerthWasm) {
        command
            .arg("--plugins")
            .arg(Path::new(PLUGINS).join("dist"));
    }
    let child = command
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {variant:?}"))?;
    Ok(Process { child, log })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run explicitly, in release mode"]
async fn idle_cpu_of_berth_and_kube_scheduler() {
    let _one = SERIAL.lock().await;
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let rounds = number("BERTH_IDLE_ROUNDS", 3) as usize;
    let window = Duration::from_secs(number("BERTH_IDLE_SECONDS", 60));
    let per_run = WARM_UP + window + Duration::from_secs(10);
    let limit = per_run * 3 * rounds as u32 + Duration::from_secs(300);
    bounded(limit, async {
        if !Path::new(PLUGINS)
            .join("dist/node-label-filter.wasm")
            .exists()
        {
            bail!("plugins/dist has no node-label-filter.wasm: run scripts/build-plugins.sh");
        }
        let env = Env::start(ClusterOptions::default().with_kwok().max_lifetime(limit)).await?;
        env.cluster
            .create_nodes(NODES, &node_template("node", "8", "32Gi", 110))
            .await?;
        let dir = tempfile::tempdir()?;
        let hz = ticks_per_second()?;
        let variants = [Variant::Berth, Variant::BerthWasm, Variant::KubeScheduler];
        let mut results: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); 3];
        for round in 0..rounds {
            for (i, variant) in variants.into_iter().enumerate() {
                let mut scheduler = start(&env, variant, dir.path(), round)?;
                tokio::time::sleep(WARM_UP).await;
                let pid = scheduler.child.id();
                let (cpu0, woke0) = usage(pid, hz)?;
                tokio::time::sleep(window).await;
                let (cpu1, woke1) = usage(pid, hz)?;
                if let Some(status) = scheduler.child.try_wait()? {
                    bail!(
                        "{variant:?} exited ({status}) during the window:\n{}",
                        scheduler.log()
                    );
                }
                let seconds = window.as_secs_f64();
                let (cpu, woke) = ((cpu1 - cpu0) / seconds, (woke1 - woke0) as f64 / seconds);
                eprintln!(
                    "round {round} {variant:?}: {:.3}% of a core, {woke:.1} wake-ups/s",
                    cpu * 100.0
                );
                results[i].0.push(cpu);
                results[i].1.push(woke);
                drop(scheduler);
                // The next one takes the lease over once this one's expired (15 s); the
                // warm-up covers most of that, and an unheld lease costs nothing here.
            }
        }
        let kube = median(results[2].0.clone());
        for (variant, (cpu, woke)) in variants.iter().zip(results) {
            let cpu = median(cpu);
            eprintln!(
                "idle, median of {rounds} windows of {window:?}: {variant:?} {:.3}% of a core \
                 ({:.2}x kube-scheduler), {:.1} wake-ups/s",
                cpu * 100.0,
                cpu / kube,
                median(woke)
            );
        }
        Ok(())
    })
    .await;
}
