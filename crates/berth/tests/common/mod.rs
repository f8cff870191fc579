//! What the end-to-end test files share: a control plane with deploy/'s manifests, `berth
//! run` processes, waiting, and the accounting every test ends with (each pod's node, and
//! each node's cpu, memory and pod count against its allocatable).
//!
//! Each test binary uses a part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use berth_testcluster::{ClusterOptions, TestCluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::json;
use tokio::sync::Mutex;

pub const NAMESPACE: &str = "berth-system";
pub const ACCOUNT: &str = "berth";
pub const LEASE: &str = "berth";
pub const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json");
pub const PLUGINS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins");
pub const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy");

/// One test at a time: each runs a control plane and schedulers on a two-core machine.
pub static SERIAL: Mutex<()> = Mutex::const_new(());

/// A cluster with deploy/'s manifests (but the example pod) applied, and a kubeconfig for
/// deploy/'s ServiceAccount.
pub struct Env {
    pub cluster: TestCluster,
    pub admin: Client,
    pub kubeconfig: PathBuf,
}

impl Env {
    pub async fn start(opts: ClusterOptions) -> Result<Env> {
        let cluster = TestCluster::start(opts).await?;
        let deploy = Path::new(DEPLOY);
        cluster
            .apply_files(&[deploy.join("namespace.yaml")])
            .await?;
        // Berth runs as the Helm chart's ServiceAccount with the chart's RBAC, the
        // permissions users install (chart.rs shows deploy/rbac.yaml grants the same).
        match helm() {
            Some(helm) => {
                let out = std::process::Command::new(helm)
                    .args(["template", "berth", &format!("{DEPLOY}/helm/berth")])
                    .args(["--namespace", NAMESPACE])
                    .args(["--show-only", "templates/serviceaccount.yaml"])
                    .args(["--show-only", "templates/rbac.yaml"])
                    .output()?;
                anyhow::ensure!(
                    out.status.success(),
                    "helm template: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                cluster.apply_yaml(&String::from_utf8(out.stdout)?).await?;
            }
            None => {
                cluster
                    .apply_files(&[deploy.join("serviceaccount.yaml"), deploy.join("rbac.yaml")])
                    .await?;
            }
        }
        cluster
            .apply_files(&[
                // Stored but inert (no controller-manager runs it): the API server checks
                // the manifests.
                deploy.join("policy.yaml"),
                deploy.join("deployment.yaml"),
            ])
            .await?;
        let token = cluster.service_account_token(NAMESPACE, ACCOUNT).await?;
        let kubeconfig = cluster.kubeconfig_for_token(&token)?;
        let admin = cluster.admin_client()?;
        Ok(Env {
            cluster,
            admin,
            kubeconfig,
        })
    }

    /// Starts a Berth replica with leader election on, as deploy/ runs it.
    pub fn berth(&self, identity: &str, extra: &[&str]) -> Result<Berth> {
        Berth::spawn(
            self,
            &self.kubeconfig,
            identity,
            TESTED,
            extra,
            BERTH_LIFETIME,
        )
    }

    /// Like [`Env::berth`], for a process that must outlive [`BERTH_LIFETIME`] (a soak).
    pub fn berth_for(&self, lifetime: Duration, identity: &str, extra: &[&str]) -> Result<Berth> {
        Berth::spawn(self, &self.kubeconfig, identity, TESTED, extra, lifetime)
    }

    /// Like [`Env::berth`], reaching the apiserver through `kubeconfig` (a proxy's).
    pub fn berth_via(&self, kubeconfig: &Path, identity: &str, extra: &[&str]) -> Result<Berth> {
        Berth::spawn(self, kubeconfig, identity, TESTED, extra, BERTH_LIFETIME)
    }

    /// Like [`Env::berth`], for measurements: it schedules the pods of `scheduler` and logs
    /// at Berth's default level (info: nothing per pod, as kube-scheduler's default
    /// verbosity), not the tests' per-pod debug lines.
    pub fn berth_measured(&self, identity: &str, scheduler: &str, extra: &[&str]) -> Result<Berth> {
        let launch = Launch {
            scheduler,
            log_filter: "info",
        };
        Berth::spawn(
            self,
            &self.kubeconfig,
            identity,
            launch,
            extra,
            BERTH_LIFETIME,
        )
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), "default")
    }

    pub async fn create_pods(&self, pods: Vec<Pod>) -> Result<()> {
        let api = self.pods();
        futures::stream::iter(pods)
            .map(|pod| {
                let api = api.clone();
                async move { api.create(&PostParams::default(), &pod).await }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(())
    }

    /// Waits until `count` pods whose names start with `prefix` are bound; returns them.
    pub async fn wait_bound(
        &self,
        prefix: &str,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<Pod>> {
        let api = self.pods();
        eventually(
            &format!("{count} {prefix}* pods bound"),
            timeout,
            || async {
                let bound: Vec<Pod> = api
                    .list(&ListParams::default())
                    .await?
                    .items
                    .into_iter()
                    .filter(|p| p.metadata.name.as_deref().unwrap_or("").starts_with(prefix))
                    .filter(|p| node_name(p).is_some())
                    .collect();
                Ok((bound.len() >= count).then_some(bound))
            },
        )
        .await
    }

    /// Events of reason `reason` about pods, by pod name.
    pub async fn events(&self, reason: &str) -> Result<HashMap<String, Vec<Event>>> {
        let api: Api<Event> = Api::namespaced(self.admin.clone(), "default");
        let mut by_pod: HashMap<String, Vec<Event>> = HashMap::new();
        for e in api.list(&ListParams::default()).await?.items {
            if e.reason.as_deref() == Some(reason) {
                let pod = e
                    .regarding
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_default();
                by_pod.entry(pod).or_default().push(e);
            }
        }
        Ok(by_pod)
    }

    /// The message of pod `name`'s PodScheduled=False condition (what FailedScheduling says),
    /// once the scheduler has set it.
    pub async fn unschedulable_message(&self, name: &str, timeout: Duration) -> Result<String> {
        let api = self.pods();
        eventually(
            &format!("{name}'s PodScheduled condition"),
            timeout,
            || async {
                let p = api.get(name).await?;
                Ok(p.status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .into_iter()
                    .find(|c| c.type_ == "PodScheduled" && c.status == "False")
                    .and_then(|c| c.message))
            },
        )
        .await
    }

    pub async fn leader(&self) -> Result<Option<String>> {
        let api: Api<Lease> = Api::namespaced(self.admin.clone(), NAMESPACE);
        Ok(api
            .get_opt(LEASE)
            .await?
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity))
    }
}

/// A `berth run` process in its own process group, killed with the group when dropped; a
/// watchdog kills it too if the test process dies or it outlives its bound.
pub struct Berth {
    child: Child,
    pub log: PathBuf,
    metrics: u16,
}

/// Which pods a `berth run` schedules and what it logs.
#[derive(Clone, Copy)]
struct Launch<'a> {
    /// Its --scheduler-name.
    scheduler: &'a str,
    /// Its RUST_LOG.
    log_filter: &'a str,
}

/// How the tests run Berth: scheduling `berth`'s pods, with the daemon's per-pod lines.
const TESTED: Launch<'static> = Launch {
    scheduler: "berth",
    log_filter: "info,berth_daemon=debug",
};

/// Hard bound on a scheduler process's life.
pub const BERTH_LIFETIME: Duration = Duration::from_secs(15 * 60);

impl Berth {
    fn spawn(
        env: &Env,
        kubeconfig: &Path,
        identity: &str,
        launch: Launch,
        extra: &[&str],
        lifetime: Duration,
    ) -> Result<Berth> {
        let metrics = free_port()?;
        let log = env.cluster.dir().join(format!("berth-{identity}.log"));
        let out = std::fs::File::create(&log)?;
        let policy = if extra.contains(&"--policy") {
            &[][..]
        } else {
            &["--policy", POLICY][..]
        };
        let mut args: Vec<String> = ["run"]
            .iter()
            .chain(policy)
            .chain(&[
                "--scheduler-name",
                launch.scheduler,
                "--leader-elect",
                "--leader-elect-resource-name",
                LEASE,
                "--leader-elect-resource-namespace",
                NAMESPACE,
                "--leader-elect-lease-duration",
                "4s",
                "--leader-elect-renew-deadline",
                "3s",
                "--identity",
                identity,
            ])
            .map(|s| s.to_string())
            .collect();
        args.push("--kubeconfig".into());
        args.push(kubeconfig.display().to_string());
        args.push("--metrics-addr".into());
        args.push(format!("127.0.0.1:{metrics}"));
        if !extra.iter().any(|a| a.starts_with("--secure-port")) {
            // Tests run many schedulers at once: the HTTPS port only where a test asks for it.
            args.push("--secure-port=0".into());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = berth_testcluster::bounded_command(
            Path::new(env!("CARGO_BIN_EXE_berth")),
            lifetime,
            None,
        )
        .args(&args)
        .env("RUST_LOG", launch.log_filter)
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("starting berth run")?;
        Ok(Berth {
            child,
            log,
            metrics,
        })
    }

    /// The process's id (for reading /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has ended.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }

    pub fn kill(&mut self) {
        // Already gone is fine: the point is that it is gone.
        let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        let _ = self.child.wait();
    }

    /// Stops the process (SIGSTOP) as a long pause would: it keeps its state and sockets.
    pub fn freeze(&self) -> Result<()> {
        kill_process(Pid::from_child(&self.child), Signal::STOP)?;
        Ok(())
    }

    /// Resumes a frozen process (SIGCONT).
    pub fn thaw(&self) -> Result<()> {
        kill_process(Pid::from_child(&self.child), Signal::CONT)?;
        Ok(())
    }

    pub fn terminate(&mut self) -> Result<std::process::ExitStatus> {
        kill_process_group(Pid::from_child(&self.child), Signal::TERM)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("berth did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET on the operations port: (status code, body).
    pub fn get(&self, path: &str) -> Result<(u16, String)> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.metrics))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut text = String::new();
        stream.read_to_string(&mut text)?;
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .context("no HTTP status")?;
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        Ok((code, body))
    }

    pub async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("berth exited ({status}):\n{}", self.log());
            }
            if matches!(self.get("/readyz"), Ok((200, _))) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("berth not ready after 60 s:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Berth {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `check` every 100 ms until it returns a value, failing after `timeout`; an error
/// counts as "not yet" (the apiserver may be restarting) and is reported if time runs out.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let outcome = check().await;
        if let Ok(Some(value)) = outcome {
            return Ok(value);
        }
        if Instant::now() > deadline {
            let why = outcome
                .err()
                .map(|e| format!(": {e:#}"))
                .unwrap_or_default();
            bail!("timed out after {timeout:?} waiting for {what}{why}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// A pending pod for `scheduler` requesting `cpu` and 64Mi, with optional spec fields.
pub fn pod(name: &str, scheduler: &str, cpu: &str, spec: serde_json::Value) -> Pod {
    let mut value = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{
                "name": "c", "image": "pause",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}
            }]
        }
    });
    if let (Some(base), Some(more)) = (value["spec"].as_object_mut(), spec.as_object()) {
        base.extend(more.clone());
    }
    serde_json::from_value(value).expect("valid pod")
}

/// Runs `test` within `limit`, printing the schedulers' logs' tails if it fails.
pub async fn bounded<F: std::future::Future<Output = Result<()>>>(limit: Duration, test: F) {
    match tokio::time::timeout(limit, test).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e:#}"),
        Err(_) => panic!("test did not finish within {limit:?}"),
    }
}

/// What pods ask of a node, as kube-scheduler v1.36 and the kubelet count it (written here
/// from the sidecar KEP's formula, not taken from the engine): per pod the larger of its
/// containers' and sidecars' sum and its busiest init step (a regular init container with
/// the sidecars started before it), pod-level requests instead where set, plus its
/// overhead; and one pod each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Millicores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
    /// Pods.
    pub pods: i64,
}

impl Totals {
    /// What one pod asks for.
    pub fn of(pod: &Pod) -> Totals {
        let spec = pod.spec.as_ref().expect("pods have a spec");
        let listed = |list: Option<&BTreeMap<String, Quantity>>, name: &str| {
            list.and_then(|r| r.get(name)).map(|q| quantity(name, &q.0))
        };
        let request = |resources: Option<&k8s_openapi::api::core::v1::ResourceRequirements>,
                       name: &str| {
            listed(resources.and_then(|r| r.requests.as_ref()), name).unwrap_or(0)
        };
        let mut totals = Totals {
            cpu: 0,
            memory: 0,
            pods: 1,
        };
        for (name, slot) in [("cpu", &mut totals.cpu), ("memory", &mut totals.memory)] {
            let mut running: i64 = spec
                .containers
                .iter()
                .map(|c| request(c.resources.as_ref(), name))
                .sum();
            let (mut sidecars, mut init) = (0, 0);
            for c in spec.init_containers.iter().flatten() {
                let r = request(c.resources.as_ref(), name);
                if c.restart_policy.as_deref() == Some("Always") {
                    sidecars += r;
                    running += r;
                    init = init.max(sidecars);
                } else {
                    init = init.max(r + sidecars);
                }
            }
            let pod_level = listed(
                spec.resources.as_ref().and_then(|r| r.requests.as_ref()),
                name,
            );
            let overhead = listed(spec.overhead.as_ref(), name).unwrap_or(0);
            *slot = pod_level.unwrap_or(running.max(init)) + overhead;
        }
        totals
    }

    fn add(&mut self, other: Totals) {
        self.cpu += other.cpu;
        self.memory += other.memory;
        self.pods += other.pods;
    }

    fn fits(&self, capacity: &Totals) -> bool {
        self.cpu <= capacity.cpu && self.memory <= capacity.memory && self.pods <= capacity.pods
    }
}

/// A quantity of `resource` in the units [`Totals`] keeps (cpu in millicores, the rest as
/// plain numbers); only the forms these tests write and the apiserver returns for them.
pub fn quantity(resource: &str, q: &str) -> i64 {
    let scale = if resource == "cpu" { 1000 } else { 1 };
    if let Some(m) = q.strip_suffix('m') {
        return m.parse::<i64>().expect("a quantity") * scale / 1000;
    }
    for (suffix, factor) in [("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)] {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<i64>().expect("a quantity") * factor * scale;
        }
    }
    q.parse::<i64>().expect("a quantity") * scale
}

/// The cluster as it ends: every pod that is bound, by node (the pods bound to a node that
/// does not exist are under its name too), and every node's allocatable.
#[derive(Debug)]
pub struct Placement {
    /// Pod name -> node, for the bound pods (all namespaces, `namespace/name`).
    pub nodes: BTreeMap<String, String>,
    /// Pod name -> what it asks for.
    pub pods: BTreeMap<String, Totals>,
    /// Node -> what its bound pods ask for.
    pub used: BTreeMap<String, Totals>,
    /// Node -> allocatable.
    pub allocatable: BTreeMap<String, Totals>,
    /// Pods not bound (namespace/name).
    pub pending: Vec<String>,
}

impl Placement {
    /// Reads every pod and node from the apiserver.
    pub async fn read(env: &Env) -> Result<Placement> {
        let pods: Api<Pod> = Api::all(env.admin.clone());
        let nodes: Api<Node> = Api::all(env.admin.clone());
        let mut placement = Placement {
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            used: BTreeMap::new(),
            allocatable: BTreeMap::new(),
            pending: Vec::new(),
        };
        for n in nodes.list(&ListParams::default()).await?.items {
            let name = n.metadata.name.clone().unwrap_or_default();
            let alloc = n.status.and_then(|s| s.allocatable).unwrap_or_default();
            let get = |r: &str| alloc.get(r).map_or(0, |q| quantity(r, &q.0));
            placement.allocatable.insert(
                name,
                Totals {
                    cpu: get("cpu"),
                    memory: get("memory"),
                    pods: get("pods"),
                },
            );
        }
        for p in pods.list(&ListParams::default()).await?.items {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            if matches!(phase, Some("Succeeded" | "Failed")) {
                continue;
            }
            let key = format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or_default(),
                p.metadata.name.as_deref().unwrap_or_default()
            );
            let totals = Totals::of(&p);
            placement.pods.insert(key.clone(), totals);
            match node_name(&p) {
                Some(node) => {
                    placement
                        .used
                        .entry(node.to_string())
                        .or_default()
                        .add(totals);
                    placement.nodes.insert(key, node.to_string());
                }
                None => placement.pending.push(key),
            }
        }
        Ok(placement)
    }

    /// Every existing node whose pods ask for more cpu, memory or pods than it has, with
    /// what they ask and what it has.
    pub fn overcommitted(&self) -> Vec<String> {
        self.allocatable
            .iter()
            .filter_map(|(node, cap)| {
                let used = self.used.get(node).copied().unwrap_or_default();
                (!used.fits(cap)).then(|| format!("{node}: {used:?} of {cap:?}"))
            })
            .collect()
    }

    /// Fails naming every existing node whose pods ask for more cpu, memory or pods than it
    /// has.
    pub fn check_no_overcommit(&self) -> Result<()> {
        let over = self.overcommitted();
        if !over.is_empty() {
            bail!("overcommitted nodes:\n{}", over.join("\n"));
        }
        Ok(())
    }

    /// The node of `default/<name>`.
    pub fn node_of(&self, name: &str) -> Option<&str> {
        self.nodes
            .get(&format!("default/{name}"))
            .map(String::as_str)
    }

    /// The pods (default namespace names) whose name starts with `prefix`, with their nodes.
    pub fn with_prefix(&self, prefix: &str) -> Vec<(&str, Option<&str>)> {
        self.pods
            .keys()
            .filter_map(|k| k.strip_prefix("default/"))
            .filter(|n| n.starts_with(prefix))
            .map(|n| (n, self.node_of(n)))
            .collect()
    }
}

/// Every node's pods fit its allocatable cpu, memory and pod count (counting init
/// containers and overhead as the scheduler must).
pub async fn assert_not_overcommitted(env: &Env) -> Result<Placement> {
    let placement = Placement::read(env).await?;
    placement.check_no_overcommit()?;
    Ok(placement)
}

/// Runs `berth run` with a manifest's container arguments (`--policy=` replaced by the
/// repository's policies/openshift.json, the file its ConfigMap holds, and `--plugins=` by
/// the repository's plugins/, as the pod's mounted directories are not here): every
/// argument parses, so the run stops at the missing kubeconfig.
pub fn assert_berth_run_accepts(container: &serde_yaml_ng::Value) {
    let args: Vec<String> = container["args"]
        .as_sequence()
        .expect("container args")
        .iter()
        .map(|a| a.as_str().expect("string arguments").to_string())
        .map(|a| match a.strip_prefix("--policy=") {
            Some(_) => format!("--policy={POLICY}"),
            None if a.starts_with("--plugins=") => format!("--plugins={PLUGINS}"),
            None => a,
        })
        .collect();
    assert_eq!(args[0], "run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(&args)
        .arg("--kubeconfig=/nonexistent/kubeconfig")
        .output()
        .expect("running berth");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("kubeconfig /nonexistent/kubeconfig"),
        "expected a kubeconfig error for {args:?}, got:\n{stderr}"
    );
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The helm binary, or None when BERTH_SKIP_HELM is set (chart tests then skip, and the e2e
/// tests fall back to deploy/'s RBAC): `BERTH_HELM`, else built by `scripts/helm.sh`.
pub fn helm() -> Option<&'static Path> {
    static HELM: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HELM.get_or_init(|| {
        if std::env::var_os("BERTH_SKIP_HELM").is_some() {
            eprintln!("BERTH_SKIP_HELM is set: no Helm chart");
            return None;
        }
        if let Some(path) = std::env::var_os("BERTH_HELM") {
            return Some(PathBuf::from(path));
        }
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let out = std::process::Command::new("bash")
            .arg(format!("{root}/scripts/helm.sh"))
            .output()
            .expect("running scripts/helm.sh");
        assert!(
            out.status.success(),
            "helm is missing and scripts/helm.sh could not build it (set BERTH_SKIP_HELM=1 to \
             skip the chart):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(PathBuf::from(
            String::from_utf8(out.stdout)
                .expect("UTF-8")
                .trim()
                .to_string(),
        ))
    })
    .as_deref()
}

/// A server process a test started (under `bounded_command`, so it leads its own process
/// group), killed with its group when dropped.
pub struct Process {
    pub child: Child,
    pub log: PathBuf,
}

impl Process {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // An error means the group is gone already.
        let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        let _ = self.child.wait();
    }
}

/// The clock ticks per second that /proc's CPU times count in.
pub fn ticks_per_second() -> Result<f64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// CPU seconds (user + system, every thread) `pid` has used so far, from /proc/PID/stat.
pub fn cpu_seconds(pid: u32, ticks_per_second: f64) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The fields after the command name, which may hold spaces, start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("no ')' in stat")?
        .1
        .split_whitespace()
        .collect();
    let field = |i: usize| -> Result<u64> {
        Ok(fields
            .get(i)
            .with_context(|| format!("/proc/{pid}/stat has no field {}", i + 3))?
            .parse()?)
    };
    Ok((field(11)? + field(12)?) as f64 / ticks_per_second)
}

/// The middle value (the upper middle of an even count); `values` must not be empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Starts the control plane's kube-scheduler (v1.36) with `config`, a
/// KubeSchedulerConfiguration whose clientConnection names the cluster's admin kubeconfig
/// ([`TestCluster::kubeconfig_path`]); it serves its health and metrics on a free loopback
/// port, writes `config` and its log to `dir` as `<name>.yaml` and `<name>.log`, and is
/// killed with its group when dropped or once `lifetime` has passed.
pub fn kube_scheduler(
    env: &Env,
    dir: &Path,
    name: &str,
    config: &str,
    lifetime: Duration,
) -> Result<Process> {
    let binary = env.cluster.bin_dir().join("kube-scheduler");
    let kubeconfig = env.cluster.kubeconfig_path().display().to_string();
    let config_path = dir.join(format!("{name}.yaml"));
    std::fs::write(&config_path, config)?;
    let log = dir.join(format!("{name}.log"));
    let out = std::fs::File::create(&log)?;
    let child = berth_testcluster::bounded_command(&binary, lifetime, None)
        .arg(format!("--config={}", config_path.display()))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={}", free_port()?))
        .arg(format!("--authentication-kubeconfig={kubeconfig}"))
        .arg(format!("--authorization-kubeconfig={kubeconfig}"))
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    Ok(Process { child, log })
}

/// The resident set of a process, from /proc/PID/status.
pub fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS line")
}

/// A well-mixed 64-bit value for (round, index): stands in for the random hashes and UIDs
/// controllers put in labels, reproducibly.
pub fn mix(round: usize, index: usize) -> u64 {
    let mut x = (round as u64) << 32 ^ index as u64 ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The setting `name` from the environment: a positive whole number, `default` if unset.
pub fn number(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("{name}={v:?}: expected a positive whole number")),
    }
}

/// [`number`] for a test's size: panics, naming the setting, on a bad value.
pub fn setting(name: &str, default: usize) -> usize {
    number(name, default as u64).unwrap_or_else(|e| panic!("{e:#}")) as usize
}

/// The pid of the cluster's server whose command name is `comm`.
pub fn server_pid(env: &Env, comm: &str) -> Result<u32> {
    env.cluster
        .pids()
        .into_iter()
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
        })
        .with_context(|| format!("no {comm} among the cluster's processes"))
}

/// Deletes the default namespace's pods that `selector` picks (at once: no kubelet need
/// confirm) and every event there, and waits up to `timeout` until the pods are gone.
pub async fn delete_pods_and_events(env: &Env, selector: &str, timeout: Duration) -> Result<()> {
    let now = kube::api::DeleteParams {
        grace_period_seconds: Some(0),
        ..kube::api::DeleteParams::default()
    };
    let list = ListParams::default().labels(selector);
    let events: Api<Event> = Api::namespaced(env.admin.clone(), "default");
    eventually(&format!("pods {selector} deleted"), timeout, || async {
        // The apiserver ends a request after a minute, a deletion of tens of thousands of
        // pods included, having deleted some: ask again until none is left.
        env.pods().delete_collection(&now, &list).await?;
        events
            .delete_collection(&kube::api::DeleteParams::default(), &ListParams::default())
            .await?;
        let left = env.pods().list(&list.clone().limit(1)).await?;
        Ok(left.items.is_empty().then_some(()))
    })
    .await
}

/// Starts kube-scheduler (v1.36) as [`kube_scheduler`] does, with its default profile
/// for pods of `scheduler`, client QPS `qps` and burst twice that, and leader election on
/// a lease of its own (named `scheduler`), as the measurements run it.
pub fn kube_scheduler_measured(
    env: &Env,
    dir: &Path,
    scheduler: &str,
    qps: u64,
    lifetime: Duration,
) -> Result<Process> {
    let config = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\n\
         kind: KubeSchedulerConfiguration\n\
         clientConnection:\n  kubeconfig: {}\n  qps: {qps}\n  burst: {}\n\
         leaderElection:\n  leaderElect: true\n  resourceName: {scheduler}\n  \
         resourceNamespace: kube-system\n\
         profiles:\n- schedulerName: {scheduler}\n",
        env.cluster.kubeconfig_path().display(),
        qps * 2
    );
    kube_scheduler(env, dir, scheduler, &config, lifetime)
}

/// The peak resident set of `pid` so far (VmHWM), in MiB.
pub fn peak_rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
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

/// Accepts any server certificate: the secure-port tests talk to self-signed loopback
/// servers and check what is served, not who serves it.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// GET `path` over HTTPS on loopback `port`, with `token` as a bearer token if given: the
/// status code.
pub async fn https_get(port: u16, token: Option<&str>, path: &str) -> Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await?;
    let name = rustls_pki_types::ServerName::try_from("localhost")?;
    let mut tls = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .context("TLS handshake timed out")??;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await?;
    let mut text = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut text)).await;
    String::from_utf8_lossy(&text)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no HTTP status in the answer")
}
