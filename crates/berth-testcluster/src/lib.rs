//! A real Kubernetes control plane for Berth's end-to-end tests: etcd and kube-apiserver,
//! plus kwok when pods must run, built from their Go modules by `scripts/control-plane.sh`
//! and run on 127.0.0.1 only. Every server is killed with its process group when the
//! [`TestCluster`] is dropped (also on panic), within a second of the test process dying,
//! and in any case after [`ClusterOptions::max_lifetime`].
//!
//! There is no controller-manager and no kubelet, which tests must allow for: a deleted
//! Namespace stays Terminating, a bound pod deleted with a grace period stays Terminating
//! unless kwok manages its node (delete with grace period 0), and Deployments or
//! ReplicaSets create no pods. kwok manages only nodes made by [`TestCluster::create_nodes`]
//! (or carrying the `kwok.x-k8s.io/node: fake` annotation).

mod apply;
pub mod extender;
pub mod faults;
mod nodes;
mod process;
mod secrets;
mod wait;

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Api, DynamicObject, PostParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use secrecy::SecretString;
use tempfile::TempDir;

pub use nodes::node_template;
pub use process::bounded_command;
pub use wait::{wait_for, wait_until};

use process::Server;

/// Environment variable naming a directory that already holds `etcd`, `kube-apiserver`,
/// `kwok` and `kwok-stages.yaml`; when set, the harness uses it instead of the build script.
pub const BIN_DIR_ENV: &str = "BERTH_CONTROL_PLANE_BIN";

/// The build script, run (fast once cached) to find or build the binaries.
const BUILD_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/control-plane.sh"
);

/// Admission plugins that wait for a controller-manager this harness does not run: the
/// ServiceAccount plugin rejects pods until a default ServiceAccount exists, and
/// TaintNodesByCondition taints every new node not-ready until the node lifecycle
/// controller clears it. Priority stays on: the apiserver itself creates the system
/// priority classes.
const DISABLED_ADMISSION: &str = "ServiceAccount,TaintNodesByCondition";

/// How a [`TestCluster`] is started.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Also run kwok, which marks created nodes Ready and runs pods bound to them.
    pub kwok: bool,
    /// Hard bound on every server's lifetime, however the test behaves.
    pub max_lifetime: Duration,
    /// How long starting (or restarting) the apiserver may take before it is an error.
    pub ready_timeout: Duration,
    /// Extra kube-apiserver flags, after the harness's own (the last of a repeated flag wins).
    pub apiserver_args: Vec<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            kwok: false,
            max_lifetime: Duration::from_secs(10 * 60),
            ready_timeout: Duration::from_secs(90),
            apiserver_args: Vec::new(),
        }
    }
}

impl ClusterOptions {
    /// Runs kwok too, for tests that need nodes Ready and pods Running.
    pub fn with_kwok(mut self) -> Self {
        self.kwok = true;
        self
    }

    /// Sets the hard bound on every server's lifetime.
    pub fn max_lifetime(mut self, lifetime: Duration) -> Self {
        self.max_lifetime = lifetime;
        self
    }

    /// Lifts the apiserver's request limits, as upstream's scheduler benchmark does, so
    /// throughput runs measure the scheduler rather than the apiserver's throttling.
    pub fn for_throughput(mut self) -> Self {
        self.apiserver_args.extend(
            [
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
                "--enable-priority-and-fairness=false",
            ]
            .map(String::from),
        );
        self
    }
}

/// A running etcd + kube-apiserver (+ kwok) on 127.0.0.1, torn down on drop.
pub struct TestCluster {
    // Declared in teardown order: kwok and the apiserver go before the etcd they use.
    kwok: Option<Server>,
    apiserver: Option<Server>,
    etcd: Server,
    apiserver_args: Vec<String>,
    apiserver_port: u16,
    etcd_ports: [u16; 2],
    admin_config: Config,
    kubeconfig: PathBuf,
    bin: PathBuf,
    opts: ClusterOptions,
    kubeconfigs_written: AtomicUsize,
    // Last, so the directory is removed only after every server is dead.
    dir: TempDir,
}

impl TestCluster {
    /// Starts a cluster, building the binaries first if they are not cached yet.
    pub async fn start(opts: ClusterOptions) -> Result<Self> {
        // kube's rustls needs a process-wide provider when more than one is compiled in
        // (another crate of the test binary may enable aws-lc-rs); an Err only means one
        // is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let bin = control_plane_bin()?;
        // Free ports are picked by binding port 0 and releasing it, so another process can
        // take one before a server binds it: try again with new ports then.
        let mut attempt = 1;
        loop {
            match Self::start_once(&bin, &opts).await {
                Err(e) if attempt < 3 && format!("{e:#}").contains("address already in use") => {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(bin: &Path, opts: &ClusterOptions) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("berth-testcluster-")
            .tempdir()
            .context("creating the cluster's temp dir")?;
        let root = dir.path();
        let [etcd_client, etcd_peer, apiserver_port] = free_ports()?;

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd_args = [
            "--name=berth".to_owned(),
            format!("--data-dir={}", root.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=berth={peer_url}"),
            // Test data need not survive a crash; fsync dominates etcd's latency here.
            "--unsafe-no-fsync".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let mut etcd = Server::spawn(
            "etcd",
            &bin.join("etcd"),
            &etcd_args,
            root,
            opts.max_lifetime,
        )?;
        wait_for_port(&mut etcd, etcd_client, opts.ready_timeout).await?;

        let (sa_key_pem, sa_pub_pem) = secrets::service_account_key_pair()?;
        let sa_key = root.join("sa.key");
        let sa_pub = root.join("sa.pub");
        std::fs::write(&sa_key, sa_key_pem)?;
        std::fs::write(&sa_pub, sa_pub_pem)?;
        let admin_token = secrets::random_token()?;
        let tokens = root.join("tokens.csv");
        std::fs::write(
            &tokens,
            format!("{admin_token},admin,admin,\"system:masters\"\n"),
        )?;
        let cert_dir = root.join("certs");
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={apiserver_port}"),
            format!("--cert-dir={}", cert_dir.display()),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            // No endpoints for the `kubernetes` Service: nothing in-cluster needs them.
            "--endpoint-reconciler-type=none".to_owned(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
            format!("--service-account-key-file={}", sa_pub.display()),
            format!("--service-account-signing-key-file={}", sa_key.display()),
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=RBAC".to_owned(),
            format!("--disable-admission-plugins={DISABLED_ADMISSION}"),
            "--profiling=false".to_owned(),
        ];
        apiserver_args.extend(opts.apiserver_args.iter().cloned());

        let server_url = format!("https://127.0.0.1:{apiserver_port}");
        let kubeconfig = root.join("admin.kubeconfig");
        // The apiserver's self-signed serving certificate file also holds the CA it made.
        let ca = cert_dir.join("apiserver.crt");
        write_kubeconfig(&kubeconfig, &server_url, &ca, &admin_token)?;
        let mut apiserver = spawn_apiserver(bin, root, &apiserver_args, opts)?;
        let admin_config = wait_for_apiserver(&mut apiserver, &kubeconfig, opts).await?;

        let kwok = if opts.kwok {
            Some(spawn_kwok(bin, root, &kubeconfig, opts)?)
        } else {
            None
        };
        Ok(Self {
            kwok,
            apiserver: Some(apiserver),
            etcd,
            apiserver_args,
            apiserver_port,
            etcd_ports: [etcd_client, etcd_peer],
            admin_config,
            kubeconfig,
            bin: bin.to_owned(),
            opts: opts.clone(),
            kubeconfigs_written: AtomicUsize::new(0),
            dir,
        })
    }

    /// The kubeconfig of the cluster's admin (group `system:masters`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The apiserver's URL, `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.apiserver_port)
    }

    /// The directory holding the control-plane binaries (also `kube-scheduler`).
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// The cluster's temp dir: data, certificates, kubeconfigs and server logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A client with full rights (group `system:masters`).
    pub fn admin_client(&self) -> Result<Client> {
        Client::try_from(self.admin_config.clone()).context("creating the admin client")
    }

    /// A client that authenticates with the bearer token `token`.
    pub fn client_for_token(&self, token: &str) -> Result<Client> {
        let mut config = self.admin_config.clone();
        config.auth_info = AuthInfo {
            token: Some(SecretString::from(token.to_owned())),
            ..AuthInfo::default()
        };
        Client::try_from(config).context("creating a client for a token")
    }

    /// Writes a kubeconfig that authenticates with `token` (for a scheduler process under
    /// test) into the cluster's temp dir and returns its path.
    pub fn kubeconfig_for_token(&self, token: &str) -> Result<PathBuf> {
        self.kubeconfig_at(&self.server_url(), token)
    }

    /// Like [`Self::kubeconfig_for_token`] for a client that reaches the apiserver at
    /// `server` (a proxy in front of it).
    pub(crate) fn kubeconfig_at(&self, server: &str, token: &str) -> Result<PathBuf> {
        let n = self.kubeconfigs_written.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("token-{n}.kubeconfig"));
        write_kubeconfig(&path, server, &self.ca_path(), token)?;
        Ok(path)
    }

    /// A token for the ServiceAccount `namespace/name` from the TokenRequest API (no
    /// controller-manager needed), valid for the cluster's lifetime. Creates the
    /// ServiceAccount if it does not exist; its namespace must exist.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.admin_client()?, namespace);
        if accounts.get_opt(name).await?.is_none() {
            let mut account = ServiceAccount::default();
            account.metadata.name = Some(name.to_owned());
            accounts.create(&PostParams::default(), &account).await?;
        }
        // The API's minimum lifetime is ten minutes.
        let seconds = self.opts.max_lifetime.as_secs().max(600);
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(i64::try_from(seconds)?),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let answer = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .with_context(|| format!("requesting a token for {namespace}/{name}"))?;
        answer
            .status
            .and_then(|s| s.token)
            .ok_or_else(|| anyhow!("TokenRequest for {namespace}/{name} came back without a token"))
    }

    /// Applies every object of a (multi-document) YAML text with server-side apply,
    /// Namespaces first; returns the objects as stored.
    pub async fn apply_yaml(&self, yaml: &str) -> Result<Vec<DynamicObject>> {
        let objects = apply::parse_documents(yaml)?;
        apply::apply_objects(&self.admin_client()?, objects, false).await
    }

    /// Applies every object of a (multi-document) YAML text with server-side apply as a dry
    /// run (`dryRun=All`): the apiserver validates, defaults and admits each one, stores
    /// none, and returns each as it would be stored. Fails at the first object it rejects,
    /// naming it. The namespaces of namespaced objects must exist.
    pub async fn dry_run_yaml(&self, yaml: &str) -> Result<Vec<DynamicObject>> {
        let objects = apply::parse_documents(yaml)?;
        apply::apply_objects(&self.admin_client()?, objects, true).await
    }

    /// Applies manifest files; a directory stands for its `*.yaml`/`*.yml` files except
    /// `kustomization.yaml` (no kustomize processing: patches and generators are ignored).
    pub async fn apply_files<P: AsRef<Path>>(&self, paths: &[P]) -> Result<Vec<DynamicObject>> {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_owned()).collect();
        let mut objects = Vec::new();
        for file in apply::manifest_files(&paths)? {
            let yaml = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            objects.extend(
                apply::parse_documents(&yaml).with_context(|| format!("in {}", file.display()))?,
            );
        }
        apply::apply_objects(&self.admin_client()?, objects, false).await
    }

    /// Creates `n` nodes named `<template name>-0` .. `<template name>-<n-1>` (template name
    /// defaulting to `node`), each a copy of `template`.
    pub async fn create_nodes(&self, n: usize, template: &Node) -> Result<Vec<Node>> {
        let prefix = template.metadata.name.as_deref().unwrap_or("node");
        self.create_nodes_with(n, |i| {
            let mut node = template.clone();
            node.metadata.name = Some(format!("{prefix}-{i}"));
            node
        })
        .await
    }

    /// Creates the nodes `make(0)` .. `make(n-1)`, several requests at a time. Each gets the
    /// `kubernetes.io/hostname` label if missing and, when kwok runs, kwok's annotation.
    pub async fn create_nodes_with(
        &self,
        n: usize,
        mut make: impl FnMut(usize) -> Node,
    ) -> Result<Vec<Node>> {
        let api: Api<Node> = Api::all(self.admin_client()?);
        let kwok = self.kwok.is_some();
        let nodes: Vec<Node> = (0..n)
            .map(|i| {
                let mut node = make(i);
                nodes::prepare_node(&mut node, kwok);
                node
            })
            .collect();
        futures::stream::iter(nodes)
            .map(|node| {
                let api = api.clone();
                async move {
                    let name = node.metadata.name.clone().unwrap_or_default();
                    api.create(&PostParams::default(), &node)
                        .await
                        .with_context(|| format!("creating node {name}"))
                }
            })
            .buffered(16)
            .try_collect()
            .await
    }

    /// Kills the apiserver (SIGKILL, like a crash) and starts it again on the same port
    /// and data; returns once it is ready.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        self.stop_apiserver();
        self.start_apiserver().await
    }

    /// Kills the apiserver (SIGKILL); [`Self::start_apiserver`] brings it back.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut apiserver) = self.apiserver.take() {
            apiserver.kill();
        }
    }

    /// Starts the stopped apiserver again on the same port and data; returns once ready.
    pub async fn start_apiserver(&mut self) -> Result<()> {
        if self.apiserver.is_some() {
            bail!("the apiserver is already running");
        }
        let mut apiserver =
            spawn_apiserver(&self.bin, self.dir.path(), &self.apiserver_args, &self.opts)?;
        wait_for_apiserver(&mut apiserver, &self.kubeconfig, &self.opts).await?;
        self.apiserver = Some(apiserver);
        Ok(())
    }

    /// Process ids of the running servers; each is also its process group's id.
    pub fn pids(&self) -> Vec<u32> {
        self.servers().map(Server::pid).collect()
    }

    /// The loopback ports the cluster listens on: apiserver, etcd client, etcd peer.
    pub fn ports(&self) -> Vec<u16> {
        let [client, peer] = self.etcd_ports;
        vec![self.apiserver_port, client, peer]
    }

    fn servers(&self) -> impl Iterator<Item = &Server> {
        self.kwok
            .iter()
            .chain(self.apiserver.iter())
            .chain(std::iter::once(&self.etcd))
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        // A failing test's output is the only place the servers' logs survive: the temp
        // dir goes with the cluster.
        if std::thread::panicking() {
            for server in self.servers() {
                eprintln!(
                    "---- berth-testcluster: last lines of {} log ----\n{}",
                    server.name(),
                    server.log_tail(30)
                );
            }
        }
        // The fields' own drops kill each server's process group, in declaration order,
        // then remove the temp dir.
    }
}

/// The directory holding the binaries: from [`BIN_DIR_ENV`], or what the build script
/// prints (building them on first use). Computed once per test process.
fn control_plane_bin() -> Result<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(find_control_plane_bin)
        .clone()
        .map_err(anyhow::Error::msg)
}

fn find_control_plane_bin() -> Result<PathBuf, String> {
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => run_build_script()?,
    };
    for binary in ["etcd", "kube-apiserver", "kwok", "kwok-stages.yaml"] {
        if !dir.join(binary).is_file() {
            return Err(format!(
                "{} has no {binary}: run scripts/control-plane.sh, or point {BIN_DIR_ENV} at \
                 the directory it prints",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

fn run_build_script() -> Result<PathBuf, String> {
    let failed = |why: String| {
        format!(
            "the control-plane binaries are missing and {BUILD_SCRIPT} failed ({why}); run \
             it by hand to see why (it needs Go >= 1.26 and the Go module proxy), or set \
             {BIN_DIR_ENV} to the directory it prints"
        )
    };
    // Progress goes to the test's stderr: a cold build takes many minutes.
    let output = Command::new("bash")
        .arg(BUILD_SCRIPT)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        return Err(failed(output.status.to_string()));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().last() {
        Some(line) if !line.is_empty() => Ok(PathBuf::from(line)),
        _ => Err(failed("it printed no directory".to_owned())),
    }
}

/// Three distinct free loopback ports.
fn free_ports() -> Result<[u16; 3]> {
    // All listeners stay open until every port is read, so the three differ.
    let listeners = (0..3)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<std::io::Result<Vec<_>>>()
        .context("finding free ports")?;
    let mut ports = [0; 3];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// Waits until `server` accepts connections on `port`.
async fn wait_for_port(server: &mut Server, port: u16, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        server.check_running()?;
        if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(());
        }
        if start.elapsed() > timeout {
            bail!(
                "{} did not listen on port {port} within {timeout:?}; last log lines:\n{}",
                server.name(),
                server.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn spawn_apiserver(
    bin: &Path,
    root: &Path,
    args: &[String],
    opts: &ClusterOptions,
) -> Result<Server> {
    Server::spawn(
        "kube-apiserver",
        &bin.join("kube-apiserver"),
        args,
        root,
        opts.max_lifetime,
    )
}

/// Waits until the apiserver answers /readyz with 200 and returns the admin client config.
async fn wait_for_apiserver(
    apiserver: &mut Server,
    kubeconfig: &Path,
    opts: &ClusterOptions,
) -> Result<Config> {
    let start = Instant::now();
    let mut config = None;
    let mut last_error = anyhow!("not started");
    loop {
        apiserver.check_running()?;
        // The kubeconfig names the CA the apiserver writes when it starts, so it can be
        // loaded only after that (and a half-written file fails to parse: try again).
        if config.is_none() {
            match load_config(kubeconfig).await {
                Ok(loaded) => config = Some(loaded),
                Err(e) => last_error = e,
            }
        }
        if let Some(loaded) = &config {
            match readyz(loaded).await {
                Ok(()) => return Ok(loaded.clone()),
                Err(e) => {
                    last_error = e;
                    // The CA may have been read while the apiserver was still writing it
                    // (seen under load: "invalid peer certificate: UnknownIssuer" forever):
                    // load it again next time.
                    config = None;
                }
            }
        }
        if start.elapsed() > opts.ready_timeout {
            bail!(
                "kube-apiserver was not ready within {:?} ({last_error:#}); last log lines:\n{}",
                opts.ready_timeout,
                apiserver.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn load_config(kubeconfig: &Path) -> Result<Config> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

async fn readyz(config: &Config) -> Result<()> {
    let client = Client::try_from(config.clone())?;
    let request = http::Request::get("/readyz").body(Vec::new())?;
    client.request_text(request).await?;
    Ok(())
}

fn spawn_kwok(bin: &Path, root: &Path, kubeconfig: &Path, opts: &ClusterOptions) -> Result<Server> {
    let args = [
        format!("--kubeconfig={}", kubeconfig.display()),
        // Written by the build script from the same kwok release; also keeps kwok from
        // reading a developer's ~/.kwok/kwok.yaml.
        format!("--config={}", bin.join("kwok-stages.yaml").display()),
        "--manage-all-nodes=false".to_owned(),
        format!(
            "--manage-nodes-with-annotation-selector={}={}",
            nodes::KWOK_ANNOTATION.0,
            nodes::KWOK_ANNOTATION.1
        ),
    ];
    Server::spawn("kwok", &bin.join("kwok"), &args, root, opts.max_lifetime)
}

/// Writes a kubeconfig for `server` that trusts `ca` and authenticates with `token`.
fn write_kubeconfig(path: &Path, server: &str, ca: &Path, token: &str) -> Result<()> {
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: berth-test
  user:
    token: {token}
contexts:
- name: berth-test
  context:
    cluster: berth-test
    user: berth-test
current-context: berth-test
",
        ca = ca.display()
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
