//! End to end against the ceiling: on one control plane, the local API server's binding
//! ceiling (placements decided in advance, so scheduling costs nothing), `berth run` and
//! kube-scheduler v1.36 each place a fresh batch of pending pods, in turn, round after round.
//! Ignored because it times the machine: a measurement, not a test.
//!
//! `bash scripts/control-plane.sh --with-reference-scheduler` (builds kube-scheduler), then
//! `cargo test --release -p berth --test ceiling -- --ignored --nocapture`
//!
//! The control plane is the throughput run's (`for_throughput`: the apiserver's request
//! limits lifted; no kwok, so bound pods cause no status writes; `BERTH_CEILING_KWOK=1` adds
//! kwok, as a cluster with kubelets would), with `BERTH_CEILING_NODES` nodes (1,000). Each
//! run creates `BERTH_CEILING_PODS` (5,000) pending pods for a scheduler name of its own,
//! lets the apiserver settle, opens this process's watches (bound pods, events) and then
//! starts its contender:
//! - the ceiling: this process binds the pods to pre-decided nodes (round-robin) with exactly
//!   the requests Berth's binder makes per pod (the pods/binding POST with the pod's UID,
//!   then the `Scheduled` event), through `berth_daemon`'s own functions, its two clients
//!   (bindings, events) built by `berth_daemon::client::connect` as Berth's ServiceAccount,
//!   and the binder's 32 requests in flight; `ceiling` sends them in JSON, `ceiling-pb` in
//!   protobuf (as Berth's binder does);
//! - Berth: `berth run` (this build's binary: a release one under `--release`) with the
//!   OpenShift policy, as Berth's ServiceAccount, logging at its default level;
//! - kube-scheduler: the control plane's v1.36 with its default profile, as the admin.
//!
//! Both schedulers get client QPS `BERTH_CEILING_QPS` (5000) and burst twice that (Berth's
//! --qps/--burst, kube-scheduler's clientConnection qps/burst), as do the ceiling's clients,
//! and leader election on a lease of their own. Per run: pods/s is (pods - 1) over the time
//! from the first to the last pod this process's watch saw bound; CPU per pod (utime+stime
//! from /proc) of the scheduler, kube-apiserver, etcd and this process (its watches, and in
//! the ceiling's run also the binding client: there the scheduler is this process) from the
//! first pod seen bound to the later of the last pod seen bound and the last `Scheduled`
//! event seen; the scheduler's peak RSS (VmHWM). Every pod must land (on its pre-decided node
//! for the ceiling), no node may be overcommitted, and every pod must get its `Scheduled`
//! event. Each batch and the events are deleted after its run, so every run starts from the
//! same cluster (the nodes, nothing bound). The order of the contenders rotates each round.
//! `BERTH_CEILING_ROUNDS` (3) sets the rounds, `BERTH_CEILING_RUN` (`ceiling,ceiling-pb,
//! berth,kube-scheduler`) which contenders run. Medians and fractions of the ceiling are printed
//! last. `BERTH_CEILING_PROFILE=DIR` turns the apiserver's profiling on and writes a CPU
//! profile of it, over `PROFILE_SECONDS` from a second after each contender starts, to
//! `DIR/<contender>-<round>.pprof` (read it with `go tool pprof -top`).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use berth_daemon::binder::{OneOffEvents, bind, record_scheduled};
use berth_daemon::client::{ClientSettings, connect};
use berth_daemon::protobuf::CreateClient;
use berth_testcluster::{ClusterOptions, node_template};
use common::{
    Berth, Env, Placement, Process, SERIAL, bounded, cpu_seconds, kube_scheduler_measured, median,
    number, peak_rss_mib, pod, server_pid, setting, ticks_per_second,
};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::runtime::events::Reporter;
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Berth's binder keeps at most this many bindings (and, separately, events) in flight.
const IN_FLIGHT: usize = 32;
/// The ceiling's scheduler name: nothing serves it, so its pods stay pending until this
/// process binds them.
const NOBODY: &str = "nobody";
/// Longest a run may take from its contender's start to its last pod bound and event seen.
const RUN_LIMIT: Duration = Duration::from_secs(300);
/// How long the apiserver's CPU profile of a run samples (from a second after the start).
const PROFILE_SECONDS: u64 = 5;
/// The label that names a run's batch, for deleting it.
const BATCH: &str = "berth-ceiling-batch";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    /// The binder's requests in JSON.
    Ceiling,
    /// The same in protobuf.
    CeilingProtobuf,
    Berth,
    KubeScheduler,
}

impl Contender {
    const ALL: [Contender; 4] = [
        Contender::Ceiling,
        Contender::CeilingProtobuf,
        Contender::Berth,
        Contender::KubeScheduler,
    ];

    fn name(self) -> &'static str {
        match self {
            Contender::Ceiling => "ceiling",
            Contender::CeilingProtobuf => "ceiling-pb",
            Contender::Berth => "berth",
            Contender::KubeScheduler => "kube-scheduler",
        }
    }

    /// `BERTH_CEILING_RUN`: a comma-separated list of contender names (all by default).
    fn chosen() -> Result<Vec<Contender>> {
        let Ok(list) = std::env::var("BERTH_CEILING_RUN") else {
            return Ok(Contender::ALL.to_vec());
        };
        let chosen = list
            .split(',')
            .map(|name| {
                Contender::ALL
                    .into_iter()
                    .find(|c| c.name() == name.trim())
                    .with_context(|| {
                        format!(
                            "BERTH_CEILING_RUN={list:?}: no contender {name:?} (expected a \
                             comma-separated list of ceiling, ceiling-pb, berth, kube-scheduler)"
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        ensure!(!chosen.is_empty(), "BERTH_CEILING_RUN is empty");
        Ok(chosen)
    }
}

/// What every run shares.
struct Bench {
    env: Env,
    nodes: usize,
    count: usize,
    qps: u64,
    hz: f64,
    apiserver: u32,
    etcd: u32,
    /// The ceiling's clients: bindings, events, in JSON.
    json: (CreateClient, OneOffEvents),
    /// The same in protobuf.
    protobuf: (CreateClient, OneOffEvents),
    /// The protobuf events' client, to check it kept to protobuf.
    protobuf_events: CreateClient,
    /// Where the apiserver's CPU profiles go, if anywhere.
    profiles: Option<PathBuf>,
}

/// One run's figures.
struct Run {
    pods_per_second: f64,
    /// Seconds from the first pod seen bound to the last.
    binding: f64,
    /// Seconds from the first pod seen bound to the last `Scheduled` event seen.
    to_last_event: f64,
    /// CPU ms per pod.
    scheduler_ms: f64,
    apiserver_ms: f64,
    etcd_ms: f64,
    this_process_ms: f64,
    /// None for the ceiling, whose scheduler is this process.
    scheduler_peak_mib: Option<f64>,
    /// The 1-minute load average when the run started.
    load: f64,
    /// Requests the apiserver served during the run (from its contender's start to the end),
    /// per pod, by verb and resource, the most frequent first.
    requests: Vec<(String, f64)>,
}

/// Binds every `(name, uid)` to `node-{i % nodes}` as Berth's binder would.
async fn bind_all(
    (client, events): (CreateClient, OneOffEvents),
    pods: Vec<(String, String)>,
    nodes: usize,
) -> Result<()> {
    let binds = Arc::new(Semaphore::new(IN_FLIGHT));
    let reports = Arc::new(Semaphore::new(IN_FLIGHT));
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
                .with_context(|| format!("the Scheduled event of {name}"))
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// Creates `count` pending pods `{prefix}{i}` for `scheduler`, labelled as batch `batch`;
/// returns their names and UIDs in index order.
async fn create_batch(
    env: &Env,
    (prefix, batch): (&str, &str),
    scheduler: &str,
    count: usize,
) -> Result<Vec<(String, String)>> {
    env.create_pods(
        (0..count)
            .map(|i| {
                let mut p = pod(&format!("{prefix}{i}"), scheduler, "100m", json!({}));
                p.metadata.labels = Some(BTreeMap::from([(BATCH.into(), batch.into())]));
                p
            })
            .collect(),
    )
    .await?;
    let listed = env
        .pods()
        .list(&ListParams::default().labels(&format!("{BATCH}={batch}")))
        .await?;
    listed
        .items
        .iter()
        .filter_map(|p| {
            let name = p.metadata.name.clone()?;
            let uid = p.metadata.uid.clone()?;
            let i: usize = name.strip_prefix(prefix)?.parse().ok()?;
            Some((i, name, uid))
        })
        .fold(vec![None; count], |mut by_index, (i, name, uid)| {
            if let Some(slot) = by_index.get_mut(i) {
                *slot = Some((name, uid));
            }
            by_index
        })
        .into_iter()
        .collect::<Option<_>>()
        .with_context(|| format!("not all {count} pods {prefix}* were listed"))
}

/// Deletes batch `batch` and every event in the namespace, and waits until the pods are
/// gone.
async fn delete_batch(env: &Env, batch: &str) -> Result<()> {
    common::delete_pods_and_events(env, &format!("{BATCH}={batch}"), Duration::from_secs(120)).await
}

/// This process's watches of bound pods and of events, opened (their initial lists read)
/// before a run's contender starts, so every binding and event of the run is seen live.
struct Watches {
    pods: BoxStream<'static, Result<watcher::Event<Pod>, watcher::Error>>,
    events: BoxStream<'static, Result<watcher::Event<Event>, watcher::Error>>,
}

/// When the watches saw a batch bound, and the CPU of the measured processes over it.
struct Seen {
    binding: Duration,
    to_last_event: Duration,
    /// CPU seconds of each measured process, from the first pod seen bound to the end.
    cpu: Vec<f64>,
}

impl Watches {
    async fn open(env: &Env) -> Result<Watches> {
        let bound = watcher::Config::default().fields("spec.nodeName!=");
        let mut watches = Watches {
            pods: watcher(env.pods(), bound).boxed(),
            events: watcher(
                Api::namespaced(env.admin.clone(), "default"),
                watcher::Config::default(),
            )
            .boxed(),
        };
        while !matches!(
            watches.pods.next().await.context("pod watch ended")??,
            watcher::Event::InitDone
        ) {}
        while !matches!(
            watches.events.next().await.context("event watch ended")??,
            watcher::Event::InitDone
        ) {}
        Ok(watches)
    }

    /// Follows the watches until all `count` pods `{prefix}*` are bound and have their
    /// `Scheduled` event, sampling the CPU of `pids` at the first pod seen bound and at the
    /// end; `alive` is asked every second whether the contender is still running.
    async fn follow(
        &mut self,
        (prefix, count): (&str, usize),
        (pids, hz): (&[u32], f64),
        alive: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Seen> {
        let cpu = || -> Result<Vec<f64>> { pids.iter().map(|&p| cpu_seconds(p, hz)).collect() };
        let deadline = tokio::time::Instant::now() + RUN_LIMIT;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let (mut bound, mut scheduled) = (HashSet::new(), HashSet::new());
        let mut first: Option<(Instant, Vec<f64>)> = None;
        let (mut last_bound, mut last_event) = (None, None);
        let ours = |name: Option<&String>| name.filter(|n| n.starts_with(prefix)).cloned();
        while bound.len() < count || scheduled.len() < count {
            tokio::select! {
                event = self.pods.next() => {
                    if let watcher::Event::Apply(p) | watcher::Event::InitApply(p) =
                        event.context("pod watch ended")??
                        && let Some(name) = ours(p.metadata.name.as_ref())
                        && bound.insert(name)
                    {
                        let now = Instant::now();
                        if first.is_none() {
                            first = Some((now, cpu()?));
                        }
                        last_bound = Some(now);
                    }
                }
                event = self.events.next() => {
                    if let watcher::Event::Apply(e) | watcher::Event::InitApply(e) =
                        event.context("event watch ended")??
                        && e.reason.as_deref() == Some("Scheduled")
                        && let Some(name) = ours(e.regarding.as_ref().and_then(|r| r.name.as_ref()))
                        && scheduled.insert(name)
                    {
                        last_event = Some(Instant::now());
                    }
                }
                _ = tick.tick() => alive()?,
                () = tokio::time::sleep_until(deadline) => bail!(
                    "after {RUN_LIMIT:?}: {} of {count} pods {prefix}* seen bound, {} with \
                     their Scheduled event",
                    bound.len(),
                    scheduled.len()
                ),
            }
        }
        let end = cpu()?;
        let (first, start) = first.context("no pod seen bound")?;
        let (last_bound, last_event) = (
            last_bound.context("no pod seen bound")?,
            last_event.context("no event seen")?,
        );
        Ok(Seen {
            binding: last_bound - first,
            to_last_event: last_event.saturating_duration_since(first),
            cpu: end.iter().zip(&start).map(|(e, s)| e - s).collect(),
        })
    }
}

/// A running contender.
enum Running {
    /// The binding task, None once it has finished well.
    Ceiling(Option<tokio::task::JoinHandle<Result<()>>>),
    Berth(Berth),
    KubeScheduler(Process),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Ceiling(_) => std::process::id(),
            Running::Berth(b) => b.pid(),
            Running::KubeScheduler(p) => p.child.id(),
        }
    }

    fn log(&self) -> String {
        match self {
            Running::Ceiling(_) => String::new(),
            Running::Berth(b) => b.log(),
            Running::KubeScheduler(p) => p.log(),
        }
    }

    /// Fails if the contender has ended (the ceiling's binder: if it failed).
    fn alive(&mut self) -> Result<()> {
        let status = match self {
            Running::Ceiling(task) => {
                if let Some(handle) = task.take_if(|h| h.is_finished()) {
                    handle
                        .now_or_never()
                        .context("a finished task's outcome")??
                        .context("binding the batch")?;
                }
                None
            }
            Running::Berth(b) => b.try_wait()?,
            Running::KubeScheduler(p) => p.child.try_wait()?,
        };
        match status {
            Some(status) => bail!("the scheduler exited ({status})"),
            None => Ok(()),
        }
    }
}

/// Writes a CPU profile of the apiserver, sampled over [`PROFILE_SECONDS`] from a second
/// from now, to `path`.
async fn profile_apiserver(admin: kube::Client, path: PathBuf) -> Result<()> {
    use futures::AsyncReadExt;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let request = http::Request::get(format!("/debug/pprof/profile?seconds={PROFILE_SECONDS}"))
        .body(Vec::new())?;
    let mut profile = Vec::new();
    admin
        .request_stream(request)
        .await
        .context("the apiserver's CPU profile")?
        .read_to_end(&mut profile)
        .await?;
    std::fs::write(&path, profile).with_context(|| format!("writing {}", path.display()))
}

/// The apiserver's count of requests served so far (`apiserver_request_total` summed over
/// response codes and the rest), by `VERB resource[/subresource]`.
async fn request_counts(admin: &kube::Client) -> Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = admin
        .request_text(request)
        .await
        .context("the apiserver's metrics")?;
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let (labels, value) = rest
            .rsplit_once("} ")
            .with_context(|| format!("a metric line without a value: {line}"))?;
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix("=\""))
                .map_or("", |v| v.trim_end_matches('"'))
        };
        let subresource = match label("subresource") {
            "" => String::new(),
            sub => format!("/{sub}"),
        };
        let kind = format!("{} {}{subresource}", label("verb"), label("resource"));
        let value: f64 = value
            .parse()
            .with_context(|| format!("a metric value that is not a number: {line}"))?;
        *counts.entry(kind).or_default() += value;
    }
    ensure!(
        !counts.is_empty(),
        "no apiserver_request_total in the apiserver's metrics"
    );
    Ok(counts)
}

fn load_average() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/loadavg")?;
    Ok(text
        .split_whitespace()
        .next()
        .context("empty /proc/loadavg")?
        .parse()?)
}

async fn run(bench: &Bench, contender: Contender, round: usize, dir: &Path) -> Result<Run> {
    let env = &bench.env;
    let (tag, scheduler) = match contender {
        Contender::Ceiling => ("c", NOBODY.to_string()),
        Contender::CeilingProtobuf => ("p", NOBODY.to_string()),
        Contender::Berth => ("b", format!("berth-r{round}")),
        Contender::KubeScheduler => ("k", format!("kube-scheduler-r{round}")),
    };
    let batch = format!("{tag}{round}");
    let prefix = format!("{batch}-");
    let count = bench.count;
    let pods = create_batch(env, (&prefix, &batch), &scheduler, count).await?;
    // Let the creations' after-effects (etcd's writes, watch fan-out) settle first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut watches = Watches::open(env).await?;
    let load = load_average()?;
    let requests_before = request_counts(&env.admin).await?;
    let (q, b) = (bench.qps.to_string(), (bench.qps * 2).to_string());
    let mut running = match contender {
        Contender::Ceiling | Contender::CeilingProtobuf => {
            let clients = if contender == Contender::Ceiling {
                &bench.json
            } else {
                &bench.protobuf
            };
            Running::Ceiling(Some(tokio::spawn(bind_all(
                clients.clone(),
                pods,
                bench.nodes,
            ))))
        }
        Contender::Berth => Running::Berth(env.berth_measured(
            &format!("measure-r{round}"),
            &scheduler,
            &["--qps", &q, "--burst", &b],
        )?),
        Contender::KubeScheduler => Running::KubeScheduler(kube_scheduler_measured(
            env,
            dir,
            &scheduler,
            bench.qps,
            RUN_LIMIT * 2,
        )?),
    };
    let profile = bench.profiles.as_ref().map(|dir| {
        let path = dir.join(format!("{}-{round}.pprof", contender.name()));
        tokio::spawn(profile_apiserver(env.admin.clone(), path))
    });
    let me = std::process::id();
    let pids = [bench.apiserver, bench.etcd, me, running.pid()];
    let seen = watches
        .follow((&prefix, count), (&pids, bench.hz), &mut || running.alive())
        .await;
    let seen = match seen {
        Ok(seen) => seen,
        Err(e) => {
            let log = running.log();
            return Err(e.context(format!(
                "{} run {round}; its log ends:\n{}",
                contender.name(),
                common::tail(&log, 30)
            )));
        }
    };
    let requests_after = request_counts(&env.admin).await?;
    let mut requests: Vec<(String, f64)> = requests_after
        .into_iter()
        .map(|(kind, n)| {
            let per_pod = (n - requests_before.get(&kind).copied().unwrap_or(0.0)) / count as f64;
            (kind, per_pod)
        })
        .filter(|&(_, per_pod)| per_pod >= 0.01)
        .collect();
    requests.sort_by(|a, b| b.1.total_cmp(&a.1));
    let scheduler_peak_mib = match &mut running {
        Running::Ceiling(task) => {
            if let Some(handle) = task.take() {
                handle.await?.context("binding the batch")?;
            }
            None
        }
        other => Some(peak_rss_mib(other.pid())?),
    };
    drop(running);
    if let Some(profile) = profile {
        profile.await??;
    }
    check_batch(bench, contender, &prefix).await?;
    ensure!(
        !bench.protobuf.0.sends_json() && !bench.protobuf_events.sends_json(),
        "the apiserver refused protobuf: ceiling-pb's clients turned to JSON"
    );
    delete_batch(env, &batch).await?;
    let per_pod = |i: usize| seen.cpu[i] * 1000.0 / count as f64;
    Ok(Run {
        pods_per_second: (count - 1) as f64 / seen.binding.as_secs_f64(),
        binding: seen.binding.as_secs_f64(),
        to_last_event: seen.to_last_event.as_secs_f64(),
        scheduler_ms: per_pod(3),
        apiserver_ms: per_pod(0),
        etcd_ms: per_pod(1),
        this_process_ms: per_pod(2),
        scheduler_peak_mib,
        load,
        requests,
    })
}

/// Every pod of the batch is bound (the ceiling's on its pre-decided node) and no node is
/// overcommitted.
async fn check_batch(bench: &Bench, contender: Contender, prefix: &str) -> Result<()> {
    let placement = Placement::read(&bench.env).await?;
    placement.check_no_overcommit()?;
    let pods = placement.with_prefix(prefix);
    ensure!(
        pods.len() == bench.count,
        "{} pods {prefix}*, expected {}",
        pods.len(),
        bench.count
    );
    let wrong: Vec<String> = pods
        .iter()
        .filter_map(|&(name, node)| {
            let want = match contender {
                Contender::Ceiling | Contender::CeilingProtobuf => {
                    let i: usize = name.strip_prefix(prefix)?.parse().ok()?;
                    Some(format!("node-{}", i % bench.nodes))
                }
                _ => None,
            };
            match (node, want) {
                (None, _) => Some(format!("{name} not bound")),
                (Some(on), Some(want)) if on != want => Some(format!("{name} on {on}, not {want}")),
                _ => None,
            }
        })
        .collect();
    ensure!(
        wrong.is_empty(),
        "{} pods not placed: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    Ok(())
}

fn report(contender: Contender, round: usize, count: usize, nodes: usize, r: &Run) {
    let rss = r
        .scheduler_peak_mib
        .map_or_else(|| "-".into(), |m| format!("{m:.0} MiB"));
    eprintln!(
        "round {round} {:>14}: {count} pods on {nodes} nodes, {:.0} pods/s ({:.2} s first to \
         last bound, last event at {:.2} s); CPU ms per pod: scheduler {:.3}, apiserver {:.3}, \
         etcd {:.3}, this process {:.3}; scheduler peak RSS {rss}; load {:.2}; requests per \
         pod: {}",
        contender.name(),
        r.pods_per_second,
        r.binding,
        r.to_last_event,
        r.scheduler_ms,
        r.apiserver_ms,
        r.etcd_ms,
        r.this_process_ms,
        r.load,
        r.requests
            .iter()
            .map(|(kind, n)| format!("{kind} {n:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement of this machine: run explicitly, in release mode"]
async fn ceiling_berth_and_kube_scheduler_alternating() {
    let _one = SERIAL.lock().await;
    let nodes = setting("BERTH_CEILING_NODES", 1000);
    let count = setting("BERTH_CEILING_PODS", 5000);
    let rounds = setting("BERTH_CEILING_ROUNDS", 3);
    let contenders = Contender::chosen().unwrap_or_else(|e| panic!("{e:#}"));
    let runs = (rounds * contenders.len()) as u32;
    let limit = (RUN_LIMIT + Duration::from_secs(180)) * runs + Duration::from_secs(300);
    bounded(limit, async {
        let qps = number("BERTH_CEILING_QPS", 5000)?;
        let kwok = std::env::var("BERTH_CEILING_KWOK").is_ok_and(|v| v == "1");
        let profiles = std::env::var_os("BERTH_CEILING_PROFILE").map(PathBuf::from);
        let mut options = ClusterOptions::default()
            .for_throughput()
            .max_lifetime(limit);
        if kwok {
            options = options.with_kwok();
        }
        if let Some(dir) = &profiles {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            options.apiserver_args.push("--profiling=true".into());
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
            ..ClientSettings::default()
        };
        let protobuf_events = CreateClient::new(connect(&settings).await?);
        let bench = Bench {
            apiserver: server_pid(&env, "kube-apiserver")?,
            etcd: server_pid(&env, "etcd")?,
            json: (
                CreateClient::json(connect(&settings).await?),
                OneOffEvents::new(CreateClient::json(connect(&settings).await?), reporter()),
            ),
            protobuf: (
                CreateClient::new(connect(&settings).await?),
                OneOffEvents::new(protobuf_events.clone(), reporter()),
            ),
            protobuf_events,
            env,
            nodes,
            count,
            qps,
            hz: ticks_per_second()?,
            profiles,
        };
        let dir = tempfile::tempdir()?;
        let mut results: Vec<Vec<Run>> = contenders.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            // Rotate the order, so each contender goes first (after another's deletions) as
            // often as the others.
            for k in 0..contenders.len() {
                let i = (k + round) % contenders.len();
                let r = run(&bench, contenders[i], round, dir.path()).await?;
                report(contenders[i], round, count, nodes, &r);
                results[i].push(r);
            }
        }
        summarize(&contenders, &results, (count, nodes, qps, kwok));
        Ok(())
    })
    .await;
}

/// Medians per contender, and each scheduler's pods/s as a fraction of the ceiling's (the
/// median of the rounds' fractions).
fn summarize(
    contenders: &[Contender],
    results: &[Vec<Run>],
    (count, nodes, qps, kwok): (usize, usize, u64, bool),
) {
    let rounds = results[0].len();
    eprintln!(
        "medians of {rounds} rounds, {count} pods on {nodes} nodes, kwok {kwok}, client qps \
         {qps} burst {}:",
        qps * 2
    );
    let ceiling = contenders.iter().position(|&c| c == Contender::Ceiling);
    for (contender, runs) in contenders.iter().zip(results) {
        let m = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
        let rss = runs
            .iter()
            .map(|r| r.scheduler_peak_mib)
            .collect::<Option<Vec<_>>>()
            .map_or_else(|| "-".into(), |v| format!("{:.0} MiB", median(v)));
        let fraction = ceiling
            .filter(|_| *contender != Contender::Ceiling)
            .map_or_else(String::new, |c| {
                let of_ceiling = |f: &dyn Fn(&Run) -> f64| {
                    median(
                        runs.iter()
                            .zip(&results[c])
                            .map(|(r, c)| f(r) / f(c))
                            .collect(),
                    )
                };
                format!(
                    "; {:.2} of the ceiling's pods/s, {:.2} of its apiserver CPU per pod",
                    of_ceiling(&|r| r.pods_per_second),
                    of_ceiling(&|r| r.apiserver_ms)
                )
            });
        eprintln!(
            "  {:>14}: {:.0} pods/s; CPU ms per pod: scheduler {:.3}, apiserver {:.3}, etcd \
             {:.3}, apiserver+etcd {:.3}, this process {:.3}; scheduler peak RSS {rss}{fraction}",
            contender.name(),
            m(&|r| r.pods_per_second),
            m(&|r| r.scheduler_ms),
            m(&|r| r.apiserver_ms),
            m(&|r| r.etcd_ms),
            m(&|r| r.apiserver_ms + r.etcd_ms),
            m(&|r| r.this_process_ms),
        );
    }
}
/// The ceiling's events' reporter.
fn reporter() -> Reporter {
    Reporter {
        controller: "berth".into(),
        instance: Some("ceiling".into()),
    }
}
