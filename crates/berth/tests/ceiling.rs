//! The local API server's binding ceiling: how many pods a second this machine's control
//! plane binds when the scheduler costs nothing. Placements are decided in advance
//! (round-robin over the nodes); each pod gets exactly the requests Berth's binder sends (the
//! pods/binding POST with the pod's UID, then the `Scheduled` event), through
//! `berth_daemon`'s own functions and client (its rate limit lifted as the throughput run
//! lifts it, the ServiceAccount Berth runs as), with the binder's bound on requests in
//! flight. The control plane is the throughput run's (`for_throughput`, no kwok, so bound
//! pods cause no status writes; `BERTH_CEILING_KWOK=1` adds kwok, as a cluster with kubelets
//! would). Ignored because it times the machine: a measurement, not a test.
//!
//! `cargo test --release -p berth --test ceiling -- --ignored --nocapture`
//!
//! Per round (fresh pending pods, for a scheduler that does not run): pods/s from the first
//! binding sent to the last one answered; CPU seconds per pod of kube-apiserver, etcd and
//! this process (the client) from /proc, from the first binding to the last event; the
//! apiserver's peak RSS (VmHWM). Medians of the rounds are printed last.
//! `BERTH_CEILING_NODES` (1000), `BERTH_CEILING_PODS` (2000), `BERTH_CEILING_ROUNDS` (3) and
//! `BERTH_CEILING_QPS` (5000; burst twice that) change it.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use berth_daemon::binder::{OneOffEvents, bind, record_scheduled};
use berth_daemon::client::{ClientSettings, connect};
use berth_testcluster::{ClusterOptions, node_template};
use common::{Env, SERIAL, bounded, cpu_seconds, median, pod, ticks_per_second};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::ListParams;
use kube::runtime::events::Reporter;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Berth's binder keeps at most this many bindings (and, separately, events) in flight.
const IN_FLIGHT: usize = 32;
/// A scheduler name nothing serves, so the pods stay pending until this test binds them.
const NOBODY: &str = "nobody";

fn number(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("{name}={v:?}: expected a positive whole number")),
    }
}

/// The pid of the cluster's server whose command name is `comm`.
fn server_pid(env: &Env, comm: &str) -> Result<u32> {
    env.cluster
        .pids()
        .into_iter()
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
        })
        .with_context(|| format!("no {comm} among the cluster's processes"))
}

/// The peak resident set of `pid` so far, in MiB.
fn peak_rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .context("no VmHWM in status")?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kib / 1024.0)
}

/// One round's figures.
struct Round {
    pods_per_second: f64,
    /// Seconds from the first binding sent to the last event answered.
    with_events: f64,
    apiserver_ms: f64,
    etcd_ms: f64,
    client_ms: f64,
    apiserver_peak_mib: f64,
}

/// Binds every `(name, uid)` to `node-{i % nodes}` as Berth's binder would; returns the
/// seconds to the last binding and to the last event.
async fn bind_all(
    client: &kube::Client,
    events: &OneOffEvents,
    pods: Vec<(String, String)>,
    nodes: usize,
) -> Result<(f64, f64)> {
    let binds = Arc::new(Semaphore::new(IN_FLIGHT));
    let reports = Arc::new(Semaphore::new(IN_FLIGHT));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (i, (name, uid)) in pods.into_iter().enumerate() {
        let (client, events) = (client.clone(), events.clone());
        let (binds, reports) = (binds.clone(), reports.clone());
        let node = format!("node-{}", i % nodes);
        tasks.spawn(async move {
            let permit = binds.acquire().await?;
            bind(&client, "default", &name, &uid, &node)
                .await
                .map_err(|e| anyhow!("binding {name} to {node}: {e}"))?;
            let bound = started.elapsed();
            drop(permit);
            let _permit = reports.acquire().await?;
            let reference = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some("default".into()),
                name: Some(name.clone()),
                uid: Some(uid),
                ..ObjectReference::default()
            };
            record_scheduled(&events, &reference, &node)
                .await
                .with_context(|| format!("the Scheduled event of {name}"))?;
            anyhow::Ok(bound)
        });
    }
    let mut last_bound = Duration::ZERO;
    while let Some(done) = tasks.join_next().await {
        last_bound = last_bound.max(done??);
    }
    Ok((last_bound.as_secs_f64(), started.elapsed().as_secs_f64()))
}

async fn round(
    env: &Env,
    client: &kube::Client,
    events: &OneOffEvents,
    (nodes, count, index): (usize, usize, usize),
    hz: f64,
) -> Result<Round> {
    let prefix = format!("r{index}-");
    env.create_pods(
        (0..count)
            .map(|i| pod(&format!("{prefix}{i}"), NOBODY, "100m", json!({})))
            .collect(),
    )
    .await?;
    let listed = env.pods().list(&ListParams::default()).await?;
    let pods: Vec<(String, String)> = listed
        .items
        .iter()
        .filter_map(|p| {
            let name = p.metadata.name.clone()?;
            let uid = p.metadata.uid.clone()?;
            let i: usize = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((i, name, uid))
        })
        .fold(vec![None; count], |mut by_index, (i, name, uid)| {
            by_index[i] = Some((name, uid));
            by_index
        })
        .into_iter()
        .collect::<Option<_>>()
        .with_context(|| format!("not all {count} pods {prefix}* were listed"))?;
    // Let the creations' after-effects (etcd's writes, watch fan-out) settle first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (apiserver, etcd) = (server_pid(env, "kube-apiserver")?, server_pid(env, "etcd")?);
    let me = std::process::id();
    let before = [
        cpu_seconds(apiserver, hz)?,
        cpu_seconds(etcd, hz)?,
        cpu_seconds(me, hz)?,
    ];
    let (to_last_binding, to_last_event) = bind_all(client, events, pods, nodes).await?;
    let after = [
        cpu_seconds(apiserver, hz)?,
        cpu_seconds(etcd, hz)?,
        cpu_seconds(me, hz)?,
    ];
    let per_pod = |i: usize| (after[i] - before[i]) * 1000.0 / count as f64;
    // Every pod is on the node it was given.
    let listed = env.pods().list(&ListParams::default()).await?;
    let misplaced: Vec<String> = listed
        .items
        .iter()
        .filter_map(|p: &Pod| {
            let name = p.metadata.name.as_deref()?;
            let i: usize = name.strip_prefix(&prefix)?.parse().ok()?;
            let want = format!("node-{}", i % nodes);
            let on = p.spec.as_ref()?.node_name.as_deref();
            (on != Some(want.as_str())).then(|| format!("{name} on {on:?}, not {want}"))
        })
        .collect();
    ensure!(
        misplaced.is_empty(),
        "{} pods not where bound: {:?}",
        misplaced.len(),
        &misplaced[..misplaced.len().min(5)]
    );
    Ok(Round {
        pods_per_second: count as f64 / to_last_binding,
        with_events: to_last_event,
        apiserver_ms: per_pod(0),
        etcd_ms: per_pod(1),
        client_ms: per_pod(2),
        apiserver_peak_mib: peak_rss_mib(apiserver)?,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement of this machine: run explicitly, in release mode"]
async fn binding_ceiling_of_the_local_apiserver() {
    let _one = SERIAL.lock().await;
    let limit = Duration::from_secs(1200);
    bounded(limit, async {
        let nodes = number("BERTH_CEILING_NODES", 1000)? as usize;
        let count = number("BERTH_CEILING_PODS", 2000)? as usize;
        let rounds = number("BERTH_CEILING_ROUNDS", 3)? as usize;
        let qps = number("BERTH_CEILING_QPS", 5000)?;
        let kwok = std::env::var("BERTH_CEILING_KWOK").is_ok_and(|v| v == "1");
        let mut options = ClusterOptions::default()
            .for_throughput()
            .max_lifetime(limit);
        if kwok {
            options = options.with_kwok();
        }
        let env = Env::start(options).await?;
        env.cluster
            .create_nodes(nodes, &node_template("node", "32", "128Gi", 110))
            .await?;
        // Two clients, as the daemon makes: one for bindings, one for events.
        let settings = ClientSettings {
            kubeconfig: Some(env.kubeconfig.clone()),
            qps: qps as f64,
            burst: u32::try_from(qps * 2).context("BERTH_CEILING_QPS too large")?,
        };
        let client = connect(&settings).await?;
        let events = OneOffEvents::new(
            connect(&settings).await?,
            Reporter {
                controller: "berth".into(),
                instance: Some("ceiling".into()),
            },
        );
        let hz = ticks_per_second()?;
        let mut results = Vec::new();
        for index in 0..rounds {
            let r = round(&env, &client, &events, (nodes, count, index), hz).await?;
            eprintln!(
                "round {index}: {count} pods on {nodes} nodes: {:.0} pods/s to the last \
                 binding ({:.2} s with events); CPU ms per pod: apiserver {:.2}, etcd {:.2}, \
                 client {:.2}; apiserver peak RSS {:.0} MiB",
                r.pods_per_second,
                r.with_events,
                r.apiserver_ms,
                r.etcd_ms,
                r.client_ms,
                r.apiserver_peak_mib
            );
            results.push(r);
        }
        let m = |f: fn(&Round) -> f64| median(results.iter().map(f).collect());
        eprintln!(
            "binding ceiling, median of {rounds} rounds ({count} pods on {nodes} nodes, \
             kwok {kwok}, client qps {qps} burst {}, {IN_FLIGHT} bindings in flight): \
             {:.0} pods/s; CPU ms per pod: apiserver {:.2}, etcd {:.2}, apiserver+etcd {:.2}, \
             client {:.2}; apiserver peak RSS {:.0} MiB",
            qps * 2,
            m(|r| r.pods_per_second),
            m(|r| r.apiserver_ms),
            m(|r| r.etcd_ms),
            m(|r| r.apiserver_ms + r.etcd_ms),
            m(|r| r.client_ms),
            m(|r| r.apiserver_peak_mib)
        );
        Ok(())
    })
    .await;
}
