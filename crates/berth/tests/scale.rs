//! Scale end to end, and the same cluster under chaos.
//!
//! The scale run: kwok nodes (`BERTH_SCALE_NODES`, 10,000) of four shapes (2 cpu/8Gi to 16
//! cpu/64Gi, ten zones) on the local control plane (the throughput run's apiserver, with
//! kwok), then `berth run` (the OpenShift policy, as Berth's ServiceAccount) and
//! kube-scheduler v1.36 (its default profile, as the admin) in turn, round after round
//! (`BERTH_SCALE_ROUNDS`, 2; `BERTH_SCALE_RUN` picks the contenders, `berth,kube-scheduler`),
//! each on a fresh batch of `BERTH_SCALE_PODS` (30,000) pending pods created before it
//! starts, under a scheduler name of its own. The pods ask for 100m to 2 cpu and 128Mi to 4Gi,
//! so nodes fill unevenly; every fifth pod belongs to one of 120 Deployment-like groups
//! spread over nodes by a preferred pod anti-affinity, the others prefer a node pool by
//! node affinity. Per run: pods/s (from the first binding seen to the last), the
//! scheduler's CPU ms per pod (/proc utime+stime, from its first binding to its last, and
//! from its start), its peak RSS (VmHWM), the time from its start to its first binding
//! (startup, the list and the cache build), the CPU of the apiserver, etcd and kwok per pod,
//! and the checks: every pod bound, none seen on a second node, no node overcommitted
//! (cpu, memory, pods). Both schedulers get client QPS `BERTH_SCALE_QPS` (5000), burst twice
//! that.
//!
//! The chaos run (on the same cluster, before the scale run, its pods deleted after it;
//! `BERTH_SCALE_PHASES`, `scale,chaos`, picks the phases): two `berth run` replicas with
//! leader election for `BERTH_CHAOS_MINUTES` (30): every `BERTH_CHAOS_FAULT_SECONDS` (180)
//! the leader is in turn SIGKILLed (and a new replica started in its place) or SIGSTOPped
//! past its lease (then SIGCONTed); the apiserver is SIGKILLed and restarted twice; pods
//! churn (created and deleted: `BERTH_CHAOS_PODS`, 5,000, live at a time), Deployment-like
//! groups scale up and down and roll to a new `pod-template-hash` (there is no
//! controller-manager: this process makes and deletes their pods), and nodes' pool labels
//! flip. Checked throughout and at the end: no pod lost (every pod that exists ends bound,
//! every pod created and not deleted exists), none bound twice (its node never changes; at
//! most one `Scheduled` event per UID), no node overcommitted, and Berth's RSS (both
//! replicas' VmRSS, every 20 s) in the last third within 10% of the middle third.
//!
//! Measurements, run explicitly, in release mode:
//! `cargo test --release -p berth --test scale -- --ignored --nocapture`
//! A bounded chaos run (200 nodes, about 1,000 pods, 150 s: one SIGKILL, one SIGSTOP, one
//! apiserver restart) is part of the test command.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use berth_testcluster::{ClusterOptions, node_template};
use common::{
    Berth, Env, Placement, Process, SERIAL, bounded, cpu_seconds, kube_scheduler_measured, median,
    mix, node_name, peak_rss_mib, pod, rss_kib, server_pid, setting, tail, ticks_per_second,
};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

/// Node shapes (cpu, memory), in turn.
const SHAPES: [(&str, &str); 4] = [("2", "8Gi"), ("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi")];
const ZONES: usize = 10;
/// The node label the chaos flips and the pods' node affinity prefers one value of.
const POOL: &str = "berth.example/pool";
/// Pod requests, picked per pod.
const CPUS: [&str; 6] = ["100m", "250m", "500m", "1", "1500m", "2"];
const MEMORY: [&str; 6] = ["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"];
/// The label naming a scale batch, for deleting it.
const BATCH: &str = "berth-scale-batch";
/// The label of the chaos run's pods.
const CHAOS: (&str, &str) = ("berth-chaos", "1");
/// Longest a scale run may take from its contender's start to its last binding.
const RUN_LIMIT: Duration = Duration::from_secs(1200);
/// Deleting events and pods in bulk.
const NOW: DeleteParams = DeleteParams {
    dry_run: false,
    grace_period_seconds: Some(0),
    propagation_policy: None,
    preconditions: None,
};

fn scale_node(i: usize) -> Node {
    let (cpu, memory) = SHAPES[i % SHAPES.len()];
    let mut node = node_template("node", cpu, memory, 110);
    node.metadata.name = Some(format!("node-{i}"));
    let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(
        "topology.kubernetes.io/zone".into(),
        format!("zone-{}", i % ZONES),
    );
    labels.insert(POOL.into(), pool(0, i).into());
    node
}

/// Node `i`'s pool in label generation `generation`.
fn pool(generation: usize, i: usize) -> &'static str {
    if mix(generation, i).is_multiple_of(2) {
        "pool-a"
    } else {
        "pool-b"
    }
}

/// A pod for `scheduler` whose requests come from `seed` (up to `CPUS[sizes - 1]`): in
/// Deployment-like group `app` (labelled with it and its `pod-template-hash`, spread over
/// nodes by a preferred anti-affinity) or, without one, preferring pool-a nodes.
fn workload_pod(
    name: &str,
    scheduler: &str,
    (seed, sizes): (u64, usize),
    group: Option<(&str, &str)>,
) -> Pod {
    let cpu = CPUS[(seed % sizes as u64) as usize];
    let memory = MEMORY[((seed >> 16) % sizes as u64) as usize];
    let affinity = match group {
        Some((app, _)) => json!({"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": app}}
                }
            }]
        }}),
        None => json!({"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 10,
                "preference": {"matchExpressions": [
                    {"key": POOL, "operator": "In", "values": ["pool-a"]}
                ]}
            }]
        }}),
    };
    let mut p = pod(name, scheduler, cpu, json!({ "affinity": affinity }));
    if let Some(requests) = p
        .spec
        .as_mut()
        .and_then(|s| s.containers[0].resources.as_mut())
        .and_then(|r| r.requests.as_mut())
    {
        requests.insert("memory".into(), Quantity(memory.into()));
    }
    if let Some((app, hash)) = group {
        p.metadata.labels = Some(BTreeMap::from([
            ("app".into(), app.into()),
            ("pod-template-hash".into(), hash.into()),
        ]));
    }
    p
}

/// Every binding a pod watch saw, by pod UID.
#[derive(Default)]
struct Ledger {
    /// UID -> (name, the node it was first seen on).
    bound: HashMap<String, (String, String)>,
    /// Pods seen on a second node: `name: first then second`.
    rebound: Vec<String>,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Ledger {
    /// Records `pod`'s node; true if this is its first binding seen.
    fn see(&mut self, pod: &Pod) -> bool {
        let (Some(uid), Some(node)) = (pod.metadata.uid.as_ref(), node_name(pod)) else {
            return false;
        };
        let name = pod.metadata.name.clone().unwrap_or_default();
        match self.bound.get(uid) {
            Some((_, first)) if first != node => {
                self.rebound.push(format!("{name}: {first} then {node}"));
                false
            }
            Some(_) => false,
            None => {
                let now = Instant::now();
                self.first.get_or_insert(now);
                self.last = Some(now);
                self.bound.insert(uid.clone(), (name, node.to_string()));
                true
            }
        }
    }
}

type PodEvents = BoxStream<'static, Result<watcher::Event<Pod>, watcher::Error>>;

/// A watch of the pods `selector` picks, its initial list read.
async fn pod_watch(env: &Env, selector: &str) -> Result<PodEvents> {
    let mut stream = watcher(env.pods(), watcher::Config::default().labels(selector)).boxed();
    while !matches!(
        stream.next().await.context("pod watch ended")??,
        watcher::Event::InitDone
    ) {}
    Ok(stream)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    Berth,
    KubeScheduler,
}

impl Contender {
    const ALL: [Contender; 2] = [Contender::Berth, Contender::KubeScheduler];

    fn name(self) -> &'static str {
        match self {
            Contender::Berth => "berth",
            Contender::KubeScheduler => "kube-scheduler",
        }
    }

    /// `BERTH_SCALE_RUN`: a comma-separated list of contender names (both by default).
    fn chosen() -> Result<Vec<Contender>> {
        let Ok(list) = std::env::var("BERTH_SCALE_RUN") else {
            return Ok(Contender::ALL.to_vec());
        };
        list.split(',')
            .map(|name| {
                Contender::ALL
                    .into_iter()
                    .find(|c| c.name() == name.trim())
                    .with_context(|| {
                        format!(
                            "BERTH_SCALE_RUN={list:?}: no contender {name:?} (expected berth, \
                             kube-scheduler)"
                        )
                    })
            })
            .collect()
    }
}

/// A contender's process.
enum Running {
    Berth(Berth),
    KubeScheduler(Process),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Berth(b) => b.pid(),
            Running::KubeScheduler(p) => p.child.id(),
        }
    }

    fn log(&self) -> String {
        match self {
            Running::Berth(b) => b.log(),
            Running::KubeScheduler(p) => p.log(),
        }
    }

    fn alive(&mut self) -> Result<()> {
        let status = match self {
            Running::Berth(b) => b.try_wait()?,
            Running::KubeScheduler(p) => p.child.try_wait()?,
        };
        match status {
            Some(status) => bail!("the scheduler exited ({status})"),
            None => Ok(()),
        }
    }
}

/// The cluster's servers, for their CPU.
struct Servers {
    apiserver: u32,
    etcd: u32,
    kwok: u32,
    hz: f64,
}

impl Servers {
    fn of(env: &Env) -> Result<Servers> {
        Ok(Servers {
            apiserver: server_pid(env, "kube-apiserver")?,
            etcd: server_pid(env, "etcd")?,
            kwok: server_pid(env, "kwok")?,
            hz: ticks_per_second()?,
        })
    }

    /// CPU seconds so far of the apiserver, etcd, kwok and `scheduler`.
    fn cpu(&self, scheduler: u32) -> Result<[f64; 4]> {
        let cpu = |pid| cpu_seconds(pid, self.hz);
        Ok([
            cpu(self.apiserver)?,
            cpu(self.etcd)?,
            cpu(self.kwok)?,
            cpu(scheduler)?,
        ])
    }
}

/// The name of a scale run's batch (the value of its [`BATCH`] label, its pods' prefix).
fn batch(contender: Contender, round: usize) -> String {
    format!("{}{round}", &contender.name()[..1])
}

/// One scale run's figures.
struct ScaleRun {
    pods_per_second: f64,
    /// Seconds from the first binding seen to the last.
    binding: f64,
    /// Seconds from the scheduler's start to the first binding seen.
    to_first: f64,
    /// CPU ms per pod, first binding to last: apiserver, etcd, kwok, scheduler.
    per_pod: [f64; 4],
    /// The scheduler's CPU ms per pod from its start to its last binding.
    scheduler_from_start: f64,
    peak_mib: f64,
    /// Seconds to create the batch.
    create: f64,
}

async fn scale_run(
    env: &Env,
    servers: &Servers,
    (contender, round): (Contender, usize),
    (count, qps): (usize, u64),
    dir: &std::path::Path,
) -> Result<ScaleRun> {
    let scheduler = format!("{}-r{round}", contender.name());
    let batch = batch(contender, round);
    let selector = format!("{BATCH}={batch}");
    let created = Instant::now();
    env.create_pods(
        (0..count)
            .map(|i| {
                let group = (i % 5 == 0).then(|| format!("web-{}", (i / 5) % 120));
                let mut p = workload_pod(
                    &format!("{batch}-{i}"),
                    &scheduler,
                    (mix(round, i), CPUS.len()),
                    group.as_deref().map(|app| (app, "h0")),
                );
                p.metadata
                    .labels
                    .get_or_insert_with(BTreeMap::new)
                    .insert(BATCH.into(), batch.clone());
                p
            })
            .collect(),
    )
    .await?;
    let create = created.elapsed().as_secs_f64();
    // Let the creations' after-effects (etcd's writes, watch fan-out) settle first.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut watch = pod_watch(env, &selector).await?;
    if contender == Contender::Berth {
        // The previous round's Berth held the lease: its successor need not wait it out.
        let leases: Api<Lease> = Api::namespaced(env.admin.clone(), common::NAMESPACE);
        match leases.delete(common::LEASE, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).context("deleting Berth's lease"),
        }
    }
    let (q, b) = (qps.to_string(), (qps * 2).to_string());
    let started = Instant::now();
    let mut running = match contender {
        Contender::Berth => Running::Berth(env.berth_measured(
            &format!("scale-r{round}"),
            &scheduler,
            &["--qps", &q, "--burst", &b],
        )?),
        Contender::KubeScheduler => Running::KubeScheduler(kube_scheduler_measured(
            env,
            dir,
            &scheduler,
            qps,
            RUN_LIMIT * 2,
        )?),
    };
    let pid = running.pid();
    let mut ledger = Ledger::default();
    let mut at_first = None;
    let deadline = tokio::time::Instant::now() + RUN_LIMIT;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let followed: Result<()> = async {
        while ledger.bound.len() < count {
            tokio::select! {
                event = watch.next() => {
                    if let watcher::Event::Apply(p) | watcher::Event::InitApply(p) =
                        event.context("pod watch ended")??
                        && ledger.see(&p)
                        && at_first.is_none()
                    {
                        at_first = Some(servers.cpu(pid)?);
                    }
                }
                _ = tick.tick() => running.alive()?,
                () = tokio::time::sleep_until(deadline) => bail!(
                    "after {RUN_LIMIT:?}: {} of {count} pods bound",
                    ledger.bound.len()
                ),
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = followed {
        return Err(e.context(format!(
            "{scheduler}; its log ends:\n{}",
            tail(&running.log(), 30)
        )));
    }
    let at_last = servers.cpu(pid)?;
    let peak_mib = peak_rss_mib(pid)?;
    drop(running);
    let (first, last) = (
        ledger.first.context("no binding")?,
        ledger.last.context("no binding")?,
    );
    // A pod moved after the count was reached would show here.
    tokio::time::sleep(Duration::from_secs(2)).await;
    while let Some(Some(event)) = watch.next().now_or_never() {
        if let watcher::Event::Apply(p) = event? {
            ledger.see(&p);
        }
    }
    ensure!(
        ledger.rebound.is_empty(),
        "pods bound twice: {:?}",
        ledger.rebound
    );
    let placement = Placement::read(env).await?;
    placement.check_no_overcommit()?;
    let unbound = placement
        .with_prefix(&format!("{batch}-"))
        .iter()
        .filter(|(_, node)| node.is_none())
        .count();
    ensure!(unbound == 0, "{unbound} pods of {batch} not bound");
    let at_first = at_first.context("no CPU sample at the first binding")?;
    let per_pod: Vec<f64> = at_last
        .iter()
        .zip(at_first)
        .map(|(end, start)| (end - start) * 1000.0 / count as f64)
        .collect();
    Ok(ScaleRun {
        pods_per_second: (count - 1) as f64 / (last - first).as_secs_f64(),
        binding: (last - first).as_secs_f64(),
        to_first: (first - started).as_secs_f64(),
        per_pod: [per_pod[0], per_pod[1], per_pod[2], per_pod[3]],
        scheduler_from_start: at_last[3] * 1000.0 / count as f64,
        peak_mib,
        create,
    })
}

/// Creates `count` nodes and waits until kwok has made every one Ready; returns the seconds
/// each step took.
async fn create_nodes(env: &Env, count: usize) -> Result<(f64, f64)> {
    let started = Instant::now();
    env.cluster.create_nodes_with(count, scale_node).await?;
    let created = started.elapsed().as_secs_f64();
    let nodes: Api<Node> = Api::all(env.admin.clone());
    common::eventually(
        "kwok to make every node Ready",
        Duration::from_secs(900),
        || async {
            let ready = nodes
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|n| {
                    n.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                })
                .count();
            Ok((ready == count).then_some(()))
        },
    )
    .await?;
    Ok((created, started.elapsed().as_secs_f64()))
}

fn report_scale(contender: Contender, round: usize, (count, nodes): (usize, usize), r: &ScaleRun) {
    eprintln!(
        "scale round {round} {:>14}: {count} pods on {nodes} nodes: {:.0} pods/s ({:.1} s first \
         to last binding), {:.2} s from start to the first binding; scheduler CPU ms per pod \
         {:.3} (from its start {:.3}), peak RSS {:.0} MiB; CPU ms per pod apiserver {:.3}, etcd \
         {:.3}, kwok {:.3}; batch created in {:.1} s",
        contender.name(),
        r.pods_per_second,
        r.binding,
        r.to_first,
        r.per_pod[3],
        r.scheduler_from_start,
        r.peak_mib,
        r.per_pod[0],
        r.per_pod[1],
        r.per_pod[2],
        r.create,
    );
}

/// How a chaos run goes.
struct ChaosSpec {
    duration: Duration,
    /// Between leader faults (SIGKILL and SIGSTOP in turn).
    fault_every: Duration,
    /// How long a SIGSTOPped leader stays stopped (past its 4 s lease).
    stopped_for: Duration,
    apiserver_restarts: usize,
    /// Loose pods live at a time.
    loose: usize,
    /// Deployment-like groups and their largest size.
    groups: usize,
    max_replicas: usize,
    /// Loose pods created (and as many of the oldest deleted) per tick.
    churn: usize,
    /// Nodes whose pool label flips every fifth tick.
    relabel: usize,
    nodes: usize,
    tick: Duration,
    check_every: Duration,
    sample_every: Duration,
    /// Allowed growth of the RSS's last third over its middle third, if checked.
    rss_margin: Option<f64>,
}

/// The Berth replicas of a chaos run, each with its identity.
struct Replicas {
    running: Vec<(String, Berth)>,
    started: usize,
    lifetime: Duration,
    /// The replica stopped, and when it is to continue.
    stopped: Option<(String, Instant)>,
}

impl Replicas {
    fn start(&mut self, env: &Env) -> Result<()> {
        let identity = format!("replica-{}", self.started);
        self.started += 1;
        let berth = env.berth_for(
            self.lifetime,
            &identity,
            &["--qps", "1000", "--burst", "2000"],
        )?;
        self.running.push((identity, berth));
        Ok(())
    }

    fn by_identity(&self, identity: &str) -> Option<usize> {
        self.running.iter().position(|(id, _)| id == identity)
    }

    /// Continues the stopped replica.
    fn resume(&mut self) -> Result<()> {
        if let Some((identity, _)) = self.stopped.take()
            && let Some(i) = self.by_identity(&identity)
        {
            self.running[i].1.thaw()?;
        }
        Ok(())
    }

    fn alive(&mut self) -> Result<()> {
        for (identity, berth) in &mut self.running {
            if let Some(status) = berth.try_wait()? {
                bail!(
                    "{identity} exited ({status}); its log ends:\n{}",
                    tail(&berth.log(), 30)
                );
            }
        }
        Ok(())
    }

    /// Both replicas' resident sets, KiB.
    fn rss_kib(&self) -> Result<u64> {
        self.running.iter().map(|(_, b)| rss_kib(b.pid())).sum()
    }
}

/// The pods this process made and deleted.
#[derive(Default)]
struct Churn {
    next: usize,
    /// Loose pods live, oldest first.
    loose: VecDeque<String>,
    /// Per group: its generation and its pods.
    groups: Vec<(usize, Vec<String>)>,
    /// Created (the API said so) and not deleted.
    live: HashSet<String>,
    /// Created or deleted with an error: they may or may not exist.
    uncertain: HashSet<String>,
    created: usize,
    deleted: usize,
    label_generation: usize,
    relabelled: usize,
}

impl Churn {
    fn name(&mut self, kind: &str) -> String {
        self.next += 1;
        format!("chaos-{kind}-{}", self.next)
    }

    /// Creates `pods`, labelled as the chaos's; records which the API accepted.
    async fn create(&mut self, env: &Env, mut pods: Vec<Pod>) -> Vec<String> {
        for p in &mut pods {
            let labels = p.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(CHAOS.0.into(), CHAOS.1.into());
        }
        let api = env.pods();
        let outcomes: Vec<(String, bool)> = futures::stream::iter(pods)
            .map(|p| {
                let api = api.clone();
                async move {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    let ok = api.create(&Default::default(), &p).await.is_ok();
                    (name, ok)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        let mut made = Vec::new();
        for (name, ok) in outcomes {
            if ok {
                self.created += 1;
                self.live.insert(name.clone());
                made.push(name);
            } else {
                self.uncertain.insert(name);
            }
        }
        made
    }

    async fn delete(&mut self, env: &Env, names: Vec<String>) {
        let api = env.pods();
        let outcomes: Vec<(String, bool)> = futures::stream::iter(names)
            .map(|name| {
                let api = api.clone();
                async move {
                    let gone = match api.delete(&name, &NOW).await {
                        Ok(_) => true,
                        Err(kube::Error::Api(e)) => e.code == 404,
                        Err(_) => false,
                    };
                    (name, gone)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for (name, gone) in outcomes {
            self.live.remove(&name);
            if gone {
                self.deleted += 1;
            } else {
                self.uncertain.insert(name);
            }
        }
    }

    fn loose_pods(&mut self, n: usize) -> Vec<Pod> {
        (0..n)
            .map(|_| {
                let name = self.name("p");
                workload_pod(&name, "berth", (mix(7, self.next), 4), None)
            })
            .collect()
    }

    /// One tick: loose pods replaced, one group resized or rolled, and every fifth tick
    /// some nodes' pool label flipped.
    async fn tick(&mut self, env: &Env, spec: &ChaosSpec, tick: usize) {
        let fresh = self.loose_pods(spec.churn);
        let made = self.create(env, fresh).await;
        self.loose.extend(made);
        let excess = self.loose.len().saturating_sub(spec.loose);
        let old: Vec<String> = self.loose.drain(..excess).collect();
        self.delete(env, old).await;

        let g = tick % spec.groups;
        let want = 1 + (mix(tick, g) % spec.max_replicas as u64) as usize;
        // Every third change of a group is a rollout: a new generation replaces the pods.
        if (tick / spec.groups) % 3 == 2 {
            let old = std::mem::take(&mut self.groups[g].1);
            self.groups[g].0 += 1;
            self.delete(env, old).await;
        }
        let (generation, have) = (self.groups[g].0, self.groups[g].1.len());
        if want > have {
            let app = format!("grp-{g}");
            let hash = format!("g{generation}");
            let pods = (have..want)
                .map(|_| {
                    let name = self.name(&app);
                    workload_pod(&name, "berth", (mix(g, self.next), 4), Some((&app, &hash)))
                })
                .collect();
            let made = self.create(env, pods).await;
            self.groups[g].1.extend(made);
        } else {
            let extra = self.groups[g].1.split_off(want);
            self.delete(env, extra).await;
        }

        if tick.is_multiple_of(5) {
            self.label_generation += 1;
            let nodes: Api<Node> = Api::all(env.admin.clone());
            for k in 0..spec.relabel {
                let i = (mix(self.label_generation, k) % spec.nodes as u64) as usize;
                let patch = json!({"metadata": {"labels": {
                    POOL: pool(self.label_generation, i)
                }}});
                if nodes
                    .patch(
                        &format!("node-{i}"),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                    .is_ok()
                {
                    self.relabelled += 1;
                }
            }
        }
    }
}

/// What went wrong during a chaos run, and what it did.
#[derive(Default)]
struct ChaosOutcome {
    kills: usize,
    stops: usize,
    apiserver_restarts: usize,
    /// Seconds from each leader fault to another replica holding the lease.
    takeovers: Vec<f64>,
    overcommitted: Vec<String>,
    /// (seconds, KiB) of both replicas together.
    rss: Vec<(u64, u64)>,
}

/// Runs the chaos on `env`'s nodes (named `node-<i>`); fails on a broken invariant.
async fn chaos(env: &mut Env, spec: &ChaosSpec) -> Result<()> {
    let mut replicas = Replicas {
        running: Vec::new(),
        started: 0,
        lifetime: spec.duration + Duration::from_secs(1200),
        stopped: None,
    };
    replicas.start(env)?;
    replicas.start(env)?;
    for (_, berth) in &mut replicas.running {
        berth.wait_ready().await?;
    }
    // Every binding of the run, seen by a watch that survives the apiserver's restarts.
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let watch = {
        let ledger = ledger.clone();
        let stream = watcher(env.pods(), watcher::Config::default()).default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = event {
                    ledger.lock().expect("ledger").see(&p);
                }
            }
        })
    };
    let result = chaos_with(env, spec, &mut replicas, &ledger).await;
    watch.abort();
    let _ = replicas.resume();
    result
}

async fn chaos_with(
    env: &mut Env,
    spec: &ChaosSpec,
    replicas: &mut Replicas,
    ledger: &Mutex<Ledger>,
) -> Result<()> {
    let mut churn = Churn {
        groups: vec![(0, Vec::new()); spec.groups],
        ..Churn::default()
    };
    let setup = Instant::now();
    let pods = churn.loose_pods(spec.loose);
    let made = churn.create(env, pods).await;
    ensure!(churn.uncertain.is_empty(), "creating the loose pods failed");
    churn.loose.extend(made);
    let total = churn.live.len();
    common::eventually("the first pods bound", Duration::from_secs(900), || async {
        Ok((ledger.lock().expect("ledger").bound.len() >= total).then_some(()))
    })
    .await?;
    eprintln!(
        "chaos: {total} pods created and bound in {:.1} s",
        setup.elapsed().as_secs_f64()
    );

    let mut outcome = ChaosOutcome::default();
    let started = Instant::now();
    let restarts_at: Vec<Duration> = (1..=spec.apiserver_restarts)
        .map(|k| spec.duration * k as u32 / (spec.apiserver_restarts + 1) as u32)
        .collect();
    let (mut next_fault, mut next_check, mut next_sample) =
        (spec.fault_every, spec.check_every, Duration::ZERO);
    let mut faults = 0;
    // A leader fault waiting for another replica to take the lease: (from whom, when).
    let mut takeover: Option<(String, Instant)> = None;
    let mut tick = 0;
    while started.elapsed() < spec.duration {
        let at = started.elapsed();
        replicas.alive()?;
        if let Some((_, until)) = &replicas.stopped
            && Instant::now() >= *until
        {
            replicas.resume()?;
        }
        let leader = env.leader().await.ok().flatten();
        if let Some((from, when)) = &takeover
            && leader.as_ref().is_some_and(|l| l != from)
        {
            outcome.takeovers.push(when.elapsed().as_secs_f64());
            takeover = None;
        }
        if outcome.apiserver_restarts < restarts_at.len()
            && at >= restarts_at[outcome.apiserver_restarts]
        {
            let down = Instant::now();
            env.cluster.restart_apiserver().await?;
            outcome.apiserver_restarts += 1;
            eprintln!(
                "chaos t={}s: apiserver restarted ({:.1} s down)",
                at.as_secs(),
                down.elapsed().as_secs_f64()
            );
        } else if at >= next_fault
            && replicas.stopped.is_none()
            && takeover.is_none()
            && let Some(leader) = &leader
            && let Some(i) = replicas.by_identity(leader)
        {
            if faults % 2 == 0 {
                let (identity, mut berth) = replicas.running.remove(i);
                berth.kill();
                replicas.start(env)?;
                outcome.kills += 1;
                eprintln!("chaos t={}s: leader {identity} SIGKILLed", at.as_secs());
            } else {
                replicas.running[i].1.freeze()?;
                replicas.stopped = Some((leader.clone(), Instant::now() + spec.stopped_for));
                outcome.stops += 1;
                eprintln!("chaos t={}s: leader {leader} SIGSTOPped", at.as_secs());
            }
            takeover = Some((leader.clone(), Instant::now()));
            faults += 1;
            next_fault = at + spec.fault_every;
        }
        churn.tick(env, spec, tick).await;
        tick += 1;
        if at >= next_check {
            if let Ok(placement) = Placement::read(env).await {
                outcome.overcommitted.extend(placement.overcommitted());
            }
            next_check = at + spec.check_every;
        }
        if at >= next_sample {
            let kib = replicas.rss_kib()?;
            outcome.rss.push((at.as_secs(), kib));
            let bound = ledger.lock().expect("ledger").bound.len();
            eprintln!(
                "chaos t={:>4}s rss_kib={kib:>8} created={} deleted={} bound={bound} live={} \
                 relabelled={} leader={}",
                at.as_secs(),
                churn.created,
                churn.deleted,
                churn.live.len(),
                churn.relabelled,
                leader.as_deref().unwrap_or("-"),
            );
            next_sample = at + spec.sample_every;
        }
        tokio::time::sleep(spec.tick).await;
    }
    replicas.resume()?;
    settle(env, spec, replicas, ledger, &churn, outcome).await
}

/// After the chaos: every pod ends bound once, none lost, no node overcommitted, RSS flat.
async fn settle(
    env: &Env,
    spec: &ChaosSpec,
    replicas: &mut Replicas,
    ledger: &Mutex<Ledger>,
    churn: &Churn,
    mut outcome: ChaosOutcome,
) -> Result<()> {
    let settled = Instant::now();
    let pods = common::eventually(
        "every chaos pod bound",
        Duration::from_secs(600),
        || async {
            let pods = env.pods().list(&ListParams::default()).await?.items;
            let chaos: Vec<Pod> = pods
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .name
                        .as_deref()
                        .unwrap_or("")
                        .starts_with("chaos-")
                })
                .collect();
            Ok(chaos
                .iter()
                .all(|p| node_name(p).is_some())
                .then_some(chaos))
        },
    )
    .await;
    replicas.alive()?;
    let pods = pods.with_context(|| {
        format!(
            "pods lost; the replicas' logs end:\n{}",
            replicas
                .running
                .iter()
                .map(|(id, b)| format!("{id}:\n{}", tail(&b.log(), 20)))
                .collect::<Vec<_>>()
                .join("\n")
        )
    })?;
    let settle_s = settled.elapsed().as_secs_f64();
    let existing: HashSet<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let vanished: Vec<&String> = churn
        .live
        .iter()
        .filter(|n| !existing.contains(n.as_str()))
        .collect();
    ensure!(
        vanished.is_empty(),
        "{} pods created and never deleted are gone: {:?}",
        vanished.len(),
        &vanished[..vanished.len().min(5)]
    );
    // The ledger sees the last bindings too.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let placement = Placement::read(env).await?;
    outcome.overcommitted.extend(placement.overcommitted());
    let events: Api<Event> = Api::namespaced(env.admin.clone(), "default");
    let mut scheduled: HashMap<String, usize> = HashMap::new();
    for e in events.list(&ListParams::default()).await?.items {
        if e.reason.as_deref() == Some("Scheduled")
            && let Some(uid) = e.regarding.and_then(|r| r.uid)
        {
            *scheduled.entry(uid).or_default() += 1;
        }
    }
    let twice = scheduled.values().filter(|&&n| n > 1).count();
    let (rebound, seen) = {
        let ledger = ledger.lock().expect("ledger");
        (ledger.rebound.clone(), ledger.bound.len())
    };
    let takeovers = outcome.takeovers.clone();
    eprintln!(
        "chaos summary: {:.0} s, {} SIGKILLs, {} SIGSTOPs, {} apiserver restarts; pods created {} \
         (+{} uncertain), deleted {}, bindings seen {seen}, live at the end {} all bound (settled \
         in {settle_s:.1} s); node labels flipped {}; takeovers (s) {:?}; pods seen on a \
         second node {}; pods with two Scheduled events {twice}; overcommitted nodes seen {}",
        spec.duration.as_secs_f64(),
        outcome.kills,
        outcome.stops,
        outcome.apiserver_restarts,
        churn.created,
        churn.uncertain.len(),
        churn.deleted,
        pods.len(),
        churn.relabelled,
        takeovers
            .iter()
            .map(|t| format!("{t:.1}"))
            .collect::<Vec<_>>(),
        rebound.len(),
        outcome.overcommitted.len(),
    );
    eprintln!("chaos RSS series (seconds, KiB): {:?}", outcome.rss);
    ensure!(rebound.is_empty(), "pods bound twice: {rebound:?}");
    ensure!(
        twice == 0,
        "{twice} pods with more than one Scheduled event"
    );
    ensure!(
        outcome.overcommitted.is_empty(),
        "overcommitted nodes: {:?}",
        &outcome.overcommitted[..outcome.overcommitted.len().min(5)]
    );
    ensure!(
        outcome.kills >= 1
            && outcome.stops >= 1
            && outcome.apiserver_restarts == spec.apiserver_restarts,
        "not every fault happened"
    );
    let third = outcome.rss.len() / 3;
    if third >= 2 {
        let mean = |s: &[(u64, u64)]| s.iter().map(|s| s.1 as f64).sum::<f64>() / s.len() as f64;
        let middle = mean(&outcome.rss[third..2 * third]);
        let last = mean(&outcome.rss[outcome.rss.len() - third..]);
        eprintln!(
            "chaos RSS: middle third mean {middle:.0} KiB, last third mean {last:.0} KiB ({:+.1}%)",
            (last / middle - 1.0) * 100.0
        );
        if let Some(margin) = spec.rss_margin {
            ensure!(
                last <= middle * (1.0 + margin),
                "RSS grows: last third {last:.0} KiB > middle third {middle:.0} KiB + {:.0}%",
                margin * 100.0
            );
        }
    }
    Ok(())
}

/// The chaos in the test command: 150 s on 200 nodes and about 1,000 pods, one SIGKILL,
/// one SIGSTOP and one apiserver restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_two_replicas_keep_every_pod_bound_once() {
    let _one = SERIAL.lock().await;
    let nodes = 200;
    let spec = ChaosSpec {
        duration: Duration::from_secs(150),
        fault_every: Duration::from_secs(50),
        stopped_for: Duration::from_secs(12),
        apiserver_restarts: 1,
        loose: 800,
        groups: 5,
        max_replicas: 60,
        churn: 8,
        relabel: 5,
        nodes,
        tick: Duration::from_secs(1),
        check_every: Duration::from_secs(30),
        sample_every: Duration::from_secs(20),
        rss_margin: None,
    };
    bounded(Duration::from_secs(600), async {
        let mut env = Env::start(
            ClusterOptions::default()
                .with_kwok()
                .for_throughput()
                .max_lifetime(Duration::from_secs(900)),
        )
        .await?;
        create_nodes(&env, nodes).await?;
        chaos(&mut env, &spec).await
    })
    .await;
}

/// The chaos run, then the scale run on the same cluster (`BERTH_SCALE_PHASES`, `scale,chaos`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement of this machine: run explicitly, in release mode"]
async fn scale_and_chaos() {
    let _one = SERIAL.lock().await;
    let nodes = setting("BERTH_SCALE_NODES", 10_000);
    let count = setting("BERTH_SCALE_PODS", 30_000);
    let rounds = setting("BERTH_SCALE_ROUNDS", 2);
    let qps = setting("BERTH_SCALE_QPS", 5000) as u64;
    let minutes = setting("BERTH_CHAOS_MINUTES", 30) as u64;
    let phases = std::env::var("BERTH_SCALE_PHASES").unwrap_or_else(|_| "scale,chaos".into());
    let (scaling, chaotic) = (phases.contains("scale"), phases.contains("chaos"));
    let contenders = Contender::chosen().unwrap_or_else(|e| panic!("{e:#}"));
    let spec = ChaosSpec {
        duration: Duration::from_secs(minutes * 60),
        fault_every: Duration::from_secs(setting("BERTH_CHAOS_FAULT_SECONDS", 180) as u64),
        stopped_for: Duration::from_secs(12),
        apiserver_restarts: 2,
        loose: setting("BERTH_CHAOS_PODS", 5000),
        groups: 20,
        max_replicas: 100,
        churn: 20,
        relabel: 20,
        nodes,
        tick: Duration::from_secs(1),
        check_every: Duration::from_secs(60),
        sample_every: Duration::from_secs(20),
        rss_margin: Some(0.10),
    };
    let scale_limit = if scaling {
        (RUN_LIMIT + Duration::from_secs(900)) * (rounds * contenders.len()) as u32
    } else {
        Duration::ZERO
    };
    let chaos_limit = if chaotic {
        spec.duration + Duration::from_secs(1800)
    } else {
        Duration::ZERO
    };
    let limit = Duration::from_secs(1800) + scale_limit + chaos_limit;
    bounded(limit, async {
        let mut env = Env::start(
            ClusterOptions::default()
                .with_kwok()
                .for_throughput()
                .max_lifetime(limit),
        )
        .await?;
        let (created, ready) = create_nodes(&env, nodes).await?;
        eprintln!(
            "{nodes} nodes created in {created:.1} s, all Ready in {ready:.1} s; kwok CPU so far \
             {:.1} s",
            cpu_seconds(server_pid(&env, "kwok")?, ticks_per_second()?)?
        );
        if chaotic {
            chaos(&mut env, &spec).await?;
            common::delete_pods_and_events(
                &env,
                &format!("{}={}", CHAOS.0, CHAOS.1),
                Duration::from_secs(900),
            )
            .await?;
        }
        if scaling {
            // After the chaos: the apiserver restarted.
            let servers = Servers::of(&env)?;
            let dir = tempfile::tempdir()?;
            let mut results: Vec<Vec<ScaleRun>> = contenders.iter().map(|_| Vec::new()).collect();
            for round in 0..rounds {
                for k in 0..contenders.len() {
                    let i = (k + round) % contenders.len();
                    let r = scale_run(
                        &env,
                        &servers,
                        (contenders[i], round),
                        (count, qps),
                        dir.path(),
                    )
                    .await?;
                    report_scale(contenders[i], round, (count, nodes), &r);
                    common::delete_pods_and_events(
                        &env,
                        &format!("{BATCH}={}", batch(contenders[i], round)),
                        Duration::from_secs(900),
                    )
                    .await?;
                    results[i].push(r);
                }
            }
            eprintln!("medians of {rounds} rounds, {count} pods on {nodes} nodes, qps {qps}:");
            for (contender, runs) in contenders.iter().zip(&results) {
                let m = |f: &dyn Fn(&ScaleRun) -> f64| median(runs.iter().map(f).collect());
                eprintln!(
                    "  {:>14}: {:.0} pods/s; {:.2} s to the first binding; scheduler CPU ms per \
                     pod {:.3} (from its start {:.3}); peak RSS {:.0} MiB",
                    contender.name(),
                    m(&|r| r.pods_per_second),
                    m(&|r| r.to_first),
                    m(&|r| r.per_pod[3]),
                    m(&|r| r.scheduler_from_start),
                    m(&|r| r.peak_mib),
                );
            }
        }
        Ok(())
    })
    .await;
}
