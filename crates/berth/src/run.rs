//! `berth run`: the scheduler daemon on a real cluster (see crates/berth-daemon).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use berth_daemon::client::ClientSettings;
use berth_daemon::leader::LeaseSettings;
use berth_daemon::policy_configmap::PolicyConfigMap;
use berth_daemon::queue::QueueConfig;
use berth_daemon::reload::{PolicyCheck, PolicyInput, ReloadOptions, Reloader};
use berth_daemon::secure::{Certificate, MinTls, SecureServing};
use berth_daemon::{DaemonConfig, ProfileRun, termination_signal};
use berth_engine::CycleConfig;
use berth_schedconfig::{Settings, goduration};
use berth_wasm::{PluginHost, Runtime};
use clap::ValueEnum;

use crate::plugins;
use crate::source::PolicySource;

/// Log output format.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `berth run`: Berth's own and kube-scheduler v1.22's (README, "kube-scheduler's
/// flags"); a v1.22 flag Berth does not take is refused by [`crate::legacy`] with why.
#[derive(clap::Args)]
pub struct Args {
    /// Policy file (JSON or YAML), run for the pods of --scheduler-name (default berth).
    #[arg(long, env = "BERTH_POLICY")]
    policy: Option<PathBuf>,
    /// kube-scheduler v1.22's Policy file flag: as --policy, but the pods served are
    /// default-scheduler's unless --scheduler-name says otherwise, as v1.22 ran a Policy.
    #[arg(long)]
    policy_config_file: Option<PathBuf>,
    /// v1.22's: take the Policy from --policy-config-file even when --policy-configmap is
    /// given (`--use-legacy-policy-config` alone means true).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    use_legacy_policy_config: Option<bool>,
    /// A ConfigMap holding the Policy under the key `policy.cfg` (v1.22's flag), read from the
    /// API and watched: a changed Policy that validates replaces the running one.
    #[arg(long)]
    policy_configmap: Option<String>,
    /// The namespace of --policy-configmap.
    #[arg(long, default_value = "kube-system")]
    policy_configmap_namespace: String,
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io v1beta1, v1beta2, v1beta3 or
    /// v1): its client, leader election, backoff and percentage settings, and, without a
    /// Policy flag, the profile whose schedulerName is --scheduler-name (v1beta3 and v1).
    /// Reloaded on change like a Policy file.
    #[arg(long, env = "BERTH_CONFIG")]
    config: Option<PathBuf>,
    /// An OpenShift 3.x master-config.yaml: its schedulerConfigFile (the Policy),
    /// schedulerArguments (flags) and loopback client; flags given here come after them.
    #[arg(long)]
    master_config: Option<PathBuf>,
    /// Another scheduler name to serve from the same cache and queue, with its own Policy
    /// file: `NAME=FILE` (repeatable). Profiles never race each other for a node's room, as
    /// two schedulers would; e.g. take over default-scheduler's pods beside berth's.
    #[arg(long = "profile", value_name = "NAME=FILE", value_parser = parse_profile)]
    profiles: Vec<(String, PathBuf)>,
    /// Directory of the WASM plugin modules the policy names (default: the policy file's
    /// directory).
    #[arg(long, env = "BERTH_PLUGINS")]
    plugins: Option<PathBuf>,
    /// Schedule the pending pods whose spec.schedulerName is this (default: berth with
    /// --policy or --config, default-scheduler with v1.22's Policy flags or --master-config).
    #[arg(long)]
    scheduler_name: Option<String>,
    /// Kubeconfig file (default: in-cluster configuration, else the usual kubeconfig).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The API server's URL, over the kubeconfig's.
    #[arg(long)]
    master: Option<String>,
    /// Elect a leader among replicas through a Lease (default: on in a cluster, off outside);
    /// `--leader-elect` alone means true, as kube-scheduler's boolean flag.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    leader_elect: Option<bool>,
    /// Name of the Lease (default berth).
    #[arg(long, alias = "lease-name", alias = "lock-object-name")]
    leader_elect_resource_name: Option<String>,
    /// Namespace of the Lease (default: the pod's namespace in a cluster, else kube-system).
    #[arg(long, alias = "lease-namespace", alias = "lock-object-namespace")]
    leader_elect_resource_namespace: Option<String>,
    /// The kind of lock: leases (v1.22's default; the only one Berth holds).
    #[arg(long)]
    leader_elect_resource_lock: Option<String>,
    /// How long a lease holds without renewal: a standby takes over within about this long
    /// (a Go duration in whole seconds, as the Lease stores them; default 15s).
    #[arg(long, alias = "lease-duration", value_parser = goduration::parse)]
    leader_elect_lease_duration: Option<Duration>,
    /// How long after its last renewal the leader renews; if that renewal fails it stops
    /// scheduling at once (whole seconds, below the lease duration; default 10s).
    #[arg(long, value_parser = goduration::parse)]
    leader_elect_renew_deadline: Option<Duration>,
    /// Wait before trying again after a failed acquisition or renewal (default 2s).
    #[arg(long, value_parser = goduration::parse)]
    leader_elect_retry_period: Option<Duration>,
    /// Identity of this replica in the Lease and in events (default: hostname and a random
    /// suffix).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz, /readyz and /configz over plain HTTP
    /// (unauthenticated; kube-scheduler's old insecure port). Same as --address and --port.
    #[arg(long, conflicts_with_all = ["port", "address"])]
    metrics_addr: Option<SocketAddr>,
    /// v1.22's insecure port: plain, unauthenticated HTTP on this port (0 or absent: none;
    /// unlike v1.22, plain HTTP is only served when asked for).
    #[arg(long)]
    port: Option<u16>,
    /// v1.22's insecure address for --port (default 0.0.0.0).
    #[arg(long)]
    address: Option<IpAddr>,
    /// HTTPS port of /metrics, /healthz, /livez, /readyz and /configz, with delegated
    /// authentication and authorization (0: none).
    #[arg(long, default_value_t = 10259)]
    secure_port: u16,
    /// Address of --secure-port.
    #[arg(long, default_value = "0.0.0.0")]
    bind_address: IpAddr,
    /// Where a self-signed serving certificate is kept (kube-scheduler.crt and .key; reused
    /// when present). Without it and without --tls-cert-file the certificate lives in memory.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// PEM serving certificate (with its chain) for --secure-port.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// PEM private key of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Lowest TLS version offered: VersionTLS12 (default) or VersionTLS13.
    #[arg(long, value_parser = parse_tls_version)]
    tls_min_version: Option<MinTls>,
    /// Kubeconfig whose API server reviews bearer tokens (TokenReview; default: the
    /// scheduler's own client).
    #[arg(long)]
    authentication_kubeconfig: Option<PathBuf>,
    /// Kubeconfig whose API server authorizes requests (SubjectAccessReview; default: the
    /// scheduler's own client).
    #[arg(long)]
    authorization_kubeconfig: Option<PathBuf>,
    /// Paths served without authorization: exact, or a prefix when ending in `*`.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    authorization_always_allow_paths: Vec<String>,
    /// How long a token review is kept.
    #[arg(long, default_value = "10s", value_parser = goduration::parse)]
    authentication_token_webhook_cache_ttl: Duration,
    /// How long an allowed authorization is kept.
    #[arg(long, default_value = "10s", value_parser = goduration::parse)]
    authorization_webhook_cache_authorized_ttl: Duration,
    /// How long a denied authorization is kept.
    #[arg(long, default_value = "10s", value_parser = goduration::parse)]
    authorization_webhook_cache_unauthorized_ttl: Duration,
    /// v1.22's: skip looking up the client CA in the cluster. Berth authenticates bearer
    /// tokens only and looks nothing up, whatever is given.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    authentication_skip_lookup: Option<bool>,
    /// v1.22's: tolerate a failed client CA lookup; see --authentication-skip-lookup.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    authentication_tolerate_lookup_failure: Option<bool>,
    /// API requests per second, sustained (bindings, events, status updates, watches;
    /// default 50).
    #[arg(long, alias = "qps")]
    kube_api_qps: Option<f64>,
    /// API requests allowed at once above the sustained rate (default 100).
    #[arg(long, alias = "burst")]
    kube_api_burst: Option<u32>,
    /// v1.22's request content type; Berth sends JSON whatever is given (a value other than
    /// JSON is named in a warning).
    #[arg(long)]
    kube_api_content_type: Option<String>,
    /// v1.22's /debug/pprof switch; Berth serves no profiling endpoint (true is named in a
    /// warning).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    profiling: Option<bool>,
    /// v1.22's lock contention profiling; see --profiling.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    contention_profiling: Option<bool>,
    /// klog's: Berth always logs to standard error (false is refused).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    logtostderr: Option<bool>,
    /// Percentage of nodes to find feasible before scoring (0 = adaptive, as upstream;
    /// default 0).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    percentage_of_nodes_to_score: Option<u32>,
    /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
    /// (default: v1.22's, DefaultPodTopologySpread=true).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    feature_gates: berth_engine::FeatureGates,
    /// Log format.
    #[arg(long, alias = "log-format", value_enum, default_value_t = LogFormat::Text)]
    logging_format: LogFormat,
    /// klog verbosity: 0-3 log at info, 4 at debug, 5 and above at trace (RUST_LOG, when
    /// set, takes precedence).
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    verbosity: u32,
    /// Memory all WASM plugin instances together may hold, in MiB (default: half the
    /// container's memory limit when there is one, else unbounded). Each plugin gets one
    /// instance per worker thread, fewer if the budget is short, and each instance may hold
    /// its memoryLimitMiB.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    plugin_memory_mib: Option<u64>,
    /// Threads that serve the API client (watches, bindings, events) and the metrics
    /// endpoint (default: the CPUs available less the one the scheduling thread keeps busy,
    /// at least one).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    io_threads: Option<u16>,
}

/// `--profile NAME=FILE`.
fn parse_profile(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "{s:?}: expected NAME=FILE, a scheduler name and its Policy file (e.g. \
             default-scheduler=/etc/berth/default.json)"
        )),
    }
}

/// `--tls-min-version` as Go's crypto/tls names them.
fn parse_tls_version(s: &str) -> Result<MinTls, String> {
    match s {
        "VersionTLS12" => Ok(MinTls::V12),
        "VersionTLS13" => Ok(MinTls::V13),
        "VersionTLS10" | "VersionTLS11" => Err(format!(
            "{s}: Berth speaks TLS 1.2 and 1.3 only; give VersionTLS12 or VersionTLS13"
        )),
        other => Err(format!("{other:?}: expected VersionTLS12 or VersionTLS13")),
    }
}

/// Where the policy comes from and which pods it serves, after v1.22's precedence.
#[derive(Debug, Clone, PartialEq)]
struct Chosen {
    /// Where the policy is read from (and watched).
    source: Origin,
    /// The scheduler name served.
    scheduler_name: String,
    /// More scheduler names served beside `scheduler_name`, each with its policy.
    more: Vec<(String, Origin)>,
    /// Settings from --config, when it is given.
    settings: Option<Settings>,
    /// Notes to log once at start.
    notes: Vec<String>,
}

/// Where `berth run` reads its policy.
#[derive(Debug, Clone, PartialEq)]
enum Origin {
    /// A file (a Policy or a KubeSchedulerConfiguration).
    File(PolicySource),
    /// A ConfigMap's `policy.cfg`, read from the API.
    ConfigMap(PolicyConfigMap),
}

/// Everything `berth run` resolves from its flags and --config before it starts.
#[derive(Debug, Clone)]
struct Plan {
    chosen: Chosen,
    client: ClientSettings,
    leader_elect: Option<bool>,
    lease: LeaseFlags,
    plain_http: Option<SocketAddr>,
    secure: Option<SecureServing>,
    percentage_of_nodes_to_score: u32,
    queue: QueueConfig,
}

/// Leader election settings before the namespace default is applied.
#[derive(Debug, Clone, PartialEq)]
struct LeaseFlags {
    name: String,
    namespace: Option<String>,
    duration: Duration,
    renew_deadline: Duration,
    retry: Duration,
}

impl Args {
    /// The policy source and the scheduler name, with v1.22's precedence among its Policy
    /// flags (deprecated.go's ApplyTo: --use-legacy-policy-config, else a ConfigMap, else the
    /// file).
    fn choose(&self) -> Result<Chosen> {
        let mut notes = Vec::new();
        if self.use_legacy_policy_config == Some(true) && self.policy_config_file.is_none() {
            anyhow::bail!(
                "--use-legacy-policy-config=true needs --policy-config-file (the Policy file it \
                 says to use), as kube-scheduler v1.22 requires"
            );
        }
        if self.policy.is_some() && self.policy_config_file.is_some() {
            anyhow::bail!(
                "--policy and --policy-config-file both name a Policy file; give one (--policy \
                 serves berth's pods, --policy-config-file default-scheduler's, as v1.22)"
            );
        }
        let configmap = self
            .policy_configmap
            .as_ref()
            .filter(|_| self.use_legacy_policy_config != Some(true))
            .map(|name| PolicyConfigMap {
                namespace: self.policy_configmap_namespace.clone(),
                name: name.clone(),
            });
        if self.policy_configmap.is_some() && configmap.is_none() {
            notes.push(
                "--policy-configmap is not read: --use-legacy-policy-config=true takes the Policy \
                 from --policy-config-file, as v1.22"
                    .to_string(),
            );
        }
        let legacy_file = self.policy_config_file.as_deref();
        let policy_file = self.policy.as_deref().or(legacy_file);
        let settings = match &self.config {
            Some(path) => Some(read_settings(path)?),
            None => None,
        };
        let default_name =
            if legacy_file.is_some() || configmap.is_some() || self.master_config.is_some() {
                DEFAULT_SCHEDULER
            } else {
                BERTH
            };
        let mut scheduler_name = self
            .scheduler_name
            .clone()
            .unwrap_or_else(|| default_name.to_string());
        let mut more = Vec::new();
        if self.scheduler_name.is_none() && default_name == DEFAULT_SCHEDULER {
            notes.push(format!(
                "serving the pods of {DEFAULT_SCHEDULER}, as kube-scheduler v1.22 ran a Policy; \
                 --scheduler-name serves another name"
            ));
        }
        if let (Some(map), Some(file)) = (&configmap, policy_file) {
            notes.push(format!(
                "{} is not read: {map} holds the Policy (v1.22 reads the ConfigMap unless \
                 --use-legacy-policy-config=true)",
                file.display()
            ));
        }
        let source = match (policy_file, &self.config) {
            _ if configmap.is_some() => {
                let map = configmap.expect("checked");
                if let Some(config) = &self.config
                    && has_profiles(config)?
                {
                    notes.push(format!(
                        "{}: its profiles are not used: the Policy in {map} decides, as \
                         kube-scheduler v1.22 with a Policy flag (its other settings apply)",
                        config.display()
                    ));
                }
                Origin::ConfigMap(map)
            }
            (Some(file), config) => {
                if let Some(config) = config
                    && has_profiles(config)?
                {
                    notes.push(format!(
                        "{}: its profiles are not used: the Policy {} decides, as kube-scheduler \
                         v1.22 with a Policy flag (its other settings apply)",
                        config.display(),
                        file.display()
                    ));
                }
                Origin::File(PolicySource::Policy(file.to_path_buf()))
            }
            (None, Some(config)) if self.scheduler_name.is_none() => {
                // As kube-scheduler: every profile of the file, from one cache and queue.
                let names = profile_names(config)?;
                let of = |name: &str| {
                    Origin::File(PolicySource::Config {
                        path: config.clone(),
                        scheduler_name: Some(name.to_string()),
                        gates: self.feature_gates,
                    })
                };
                let (first, rest) = names.split_first().expect("at least the default profile");
                scheduler_name = first.clone();
                more.extend(rest.iter().map(|n| (n.clone(), of(n))));
                of(first)
            }
            (None, Some(config)) => Origin::File(PolicySource::Config {
                path: config.clone(),
                scheduler_name: Some(scheduler_name.clone()),
                gates: self.feature_gates,
            }),
            (None, None) => anyhow::bail!(
                "no policy: give --policy FILE (or v1.22's --policy-config-file), --config FILE \
                 (a KubeSchedulerConfiguration) or --master-config FILE (OpenShift 3.x)"
            ),
        };
        for (name, file) in &self.profiles {
            more.push((
                name.clone(),
                Origin::File(PolicySource::Policy(file.clone())),
            ));
        }
        let mut seen = vec![&scheduler_name];
        for (name, _) in &more {
            if seen.contains(&name) {
                anyhow::bail!(
                    "scheduler name {name} is served twice (--scheduler-name, --profile or \
                     --config's profiles); each profile needs a name of its own"
                );
            }
            seen.push(name);
        }
        Ok(Chosen {
            source,
            scheduler_name,
            more,
            settings,
            notes,
        })
    }

    /// Resolves every setting: a flag given on the command line, else --config's value, else
    /// the default; leader election flags win over --config as in v1.22, and where the file
    /// and a client flag disagree the file wins (v1.22 ignores those flags with --config),
    /// which is said.
    fn plan(&self) -> Result<Plan> {
        let mut chosen = self.choose()?;
        let settings = chosen.settings.clone().unwrap_or_default();
        let notes = &mut chosen.notes;
        notes.extend(
            settings
                .unused
                .iter()
                .map(|u| format!("--config: {u}; Berth does not act on it")),
        );
        let file_wins = |flag: &str, given: bool, file: bool, notes: &mut Vec<String>| {
            if given && file {
                notes.push(format!(
                    "{flag} is overridden by --config's clientConnection, as kube-scheduler v1.22 \
                     ignores it when --config is given"
                ));
            }
        };
        file_wins(
            "--kubeconfig",
            self.kubeconfig.is_some(),
            settings.kubeconfig.is_some(),
            notes,
        );
        file_wins(
            "--kube-api-qps",
            self.kube_api_qps.is_some(),
            settings.qps.is_some(),
            notes,
        );
        file_wins(
            "--kube-api-burst",
            self.kube_api_burst.is_some(),
            settings.burst.is_some(),
            notes,
        );
        let client = ClientSettings {
            kubeconfig: settings
                .kubeconfig
                .clone()
                .or_else(|| self.kubeconfig.clone()),
            master: self.master.clone(),
            qps: settings.qps.or(self.kube_api_qps).unwrap_or(50.0),
            burst: settings.burst.or(self.kube_api_burst).unwrap_or(100),
        };
        if let Some(lock) = &self.leader_elect_resource_lock {
            berth_schedconfig::component::resource_lock(lock)
                .map_err(|m| anyhow::anyhow!("--leader-elect-resource-lock {m}"))?;
        }
        if let Some(content) = self
            .kube_api_content_type
            .as_deref()
            .filter(|c| *c != "application/json" && *c != "application/vnd.kubernetes.protobuf")
        {
            anyhow::bail!(
                "--kube-api-content-type {content:?}: expected application/json or \
                 application/vnd.kubernetes.protobuf"
            );
        }
        if self.kube_api_content_type.as_deref() == Some("application/vnd.kubernetes.protobuf") {
            notes.push(
                "--kube-api-content-type=application/vnd.kubernetes.protobuf: Berth sends JSON"
                    .to_string(),
            );
        }
        for (flag, on) in [
            ("--profiling", self.profiling),
            ("--contention-profiling", self.contention_profiling),
        ] {
            if on == Some(true) {
                notes.push(format!("{flag}: Berth serves no /debug/pprof"));
            }
        }
        if self.logtostderr == Some(false) {
            anyhow::bail!(
                "--logtostderr=false: Berth logs to standard error only; the container runtime \
                 keeps the log"
            );
        }
        let lease = LeaseFlags {
            name: self
                .leader_elect_resource_name
                .clone()
                .or(settings.lease_name.clone())
                .unwrap_or_else(|| BERTH.to_string()),
            namespace: self
                .leader_elect_resource_namespace
                .clone()
                .or(settings.lease_namespace.clone()),
            duration: self
                .leader_elect_lease_duration
                .or(settings.lease_duration)
                .unwrap_or(Duration::from_secs(15)),
            renew_deadline: self
                .leader_elect_renew_deadline
                .or(settings.renew_deadline)
                .unwrap_or(Duration::from_secs(10)),
            retry: self
                .leader_elect_retry_period
                .or(settings.retry_period)
                .unwrap_or(Duration::from_secs(2)),
        };
        let plain_http = self.plain_http(&settings, notes)?;
        let defaults = QueueConfig::default();
        let queue = QueueConfig {
            initial_backoff: settings
                .pod_initial_backoff
                .unwrap_or(defaults.initial_backoff),
            max_backoff: settings.pod_max_backoff.unwrap_or(defaults.max_backoff),
            ..defaults
        };
        if queue.max_backoff < queue.initial_backoff {
            anyhow::bail!(
                "--config: podMaxBackoffSeconds ({:?}) is below podInitialBackoffSeconds ({:?})",
                queue.max_backoff,
                queue.initial_backoff
            );
        }
        let percentage_of_nodes_to_score = match (
            self.percentage_of_nodes_to_score,
            settings.percentage_of_nodes_to_score,
        ) {
            (Some(flag), Some(file)) if flag != file => {
                notes.push(format!(
                    "--percentage-of-nodes-to-score {flag} is overridden by --config's \
                     percentageOfNodesToScore ({file})"
                ));
                file
            }
            (flag, file) => file.or(flag).unwrap_or(0),
        };
        Ok(Plan {
            secure: self.secure(),
            leader_elect: self.leader_elect.or(settings.leader_elect),
            chosen,
            client,
            lease,
            plain_http,
            percentage_of_nodes_to_score,
            queue,
        })
    }

    /// Secure serving from the flags; None with --secure-port=0.
    fn secure(&self) -> Option<SecureServing> {
        if self.secure_port == 0 {
            return None;
        }
        let certificate = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(cert), Some(key)) => Certificate::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => Certificate::SelfSigned {
                dir: self.cert_dir.clone(),
            },
        };
        Some(SecureServing {
            certificate,
            min_tls: self.tls_min_version.unwrap_or(MinTls::V12),
            always_allow_paths: self.authorization_always_allow_paths.clone(),
            authentication_ttl: self.authentication_token_webhook_cache_ttl,
            authorized_ttl: self.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl: self.authorization_webhook_cache_unauthorized_ttl,
            ..SecureServing::new(SocketAddr::new(self.bind_address, self.secure_port))
        })
    }

    /// The plain HTTP address: --metrics-addr, else v1.22's --address and --port (port 0: none),
    /// else --config's v1beta1/v1beta2 bind addresses, else v1.22's default.
    fn plain_http(
        &self,
        settings: &Settings,
        notes: &mut Vec<String>,
    ) -> Result<Option<SocketAddr>> {
        if let Some(addr) = self.metrics_addr {
            return Ok(Some(addr));
        }
        if self.port.is_some() || self.address.is_some() {
            let port = self.port.unwrap_or(10251);
            if port == 0 {
                return Ok(None);
            }
            let ip = self.address.unwrap_or(IpAddr::from([0, 0, 0, 0]));
            return Ok(Some(SocketAddr::new(ip, port)));
        }
        match settings.plain_http.as_slice() {
            [] => Ok(None),
            [one, rest @ ..] => {
                if !rest.is_empty() {
                    notes.push(format!(
                        "--config: healthzBindAddress and metricsBindAddress differ; Berth serves \
                         every endpoint on {one}"
                    ));
                }
                let addr = one.parse::<SocketAddr>().with_context(|| {
                    format!("--config: {one:?} is not an address such as 0.0.0.0:10251")
                })?;
                Ok((addr.port() != 0).then_some(addr))
            }
        }
    }
}

/// Berth's own scheduler name and Lease name.
const BERTH: &str = "berth";
/// The scheduler name kube-scheduler v1.22 gave a Policy.
const DEFAULT_SCHEDULER: &str = "default-scheduler";

fn read_settings(path: &std::path::Path) -> Result<Settings> {
    let text = berth_policy::file::read_regular_text(path, berth_policy::file::MAX_POLICY_BYTES)
        .with_context(|| format!("--config {}", path.display()))?;
    Ok(berth_schedconfig::settings(
        &text,
        &path.display().to_string(),
    )?)
}

/// The scheduler names of a KubeSchedulerConfiguration's profiles, in order (upstream's one
/// default-scheduler profile when it has none).
fn profile_names(path: &std::path::Path) -> Result<Vec<String>> {
    let text = berth_policy::file::read_regular_text(path, berth_policy::file::MAX_POLICY_BYTES)
        .with_context(|| format!("--config {}", path.display()))?;
    let value: serde_json::Value =
        serde_yaml_ng::from_str(&text).with_context(|| format!("--config {}", path.display()))?;
    let names: Vec<String> = value
        .get("profiles")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .map(|p| {
            p.get("schedulerName")
                .and_then(|n| n.as_str())
                .unwrap_or(DEFAULT_SCHEDULER)
                .to_string()
        })
        .collect();
    Ok(if names.is_empty() {
        vec![DEFAULT_SCHEDULER.to_string()]
    } else {
        names
    })
}

fn has_profiles(path: &std::path::Path) -> Result<bool> {
    let text = berth_policy::file::read_regular_text(path, berth_policy::file::MAX_POLICY_BYTES)
        .with_context(|| format!("--config {}", path.display()))?;
    let value: serde_json::Value =
        serde_yaml_ng::from_str(&text).with_context(|| format!("--config {}", path.display()))?;
    Ok(value
        .get("profiles")
        .and_then(|p| p.as_array())
        .is_some_and(|p| !p.is_empty()))
}

/// How long the policy file and plugins must be quiet before a reload (editors and
/// ConfigMap updates write in several steps).
const RELOAD_DEBOUNCE: Duration = Duration::from_millis(300);

/// The plugin memory budget: the flag, else half the cgroup (container) memory limit, so the
/// cluster cache, the engine and the API client keep the other half.
fn plugin_memory_budget(flag_mib: Option<u64>) -> Option<u64> {
    if let Some(mib) = flag_mib {
        return Some(mib.saturating_mul(1024 * 1024));
    }
    cgroup_memory_limit().map(|limit| limit / 2)
}

/// The memory limit of this process's cgroup (v2 `memory.max`, else v1), if any.
fn cgroup_memory_limit() -> Option<u64> {
    [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|f| std::fs::read_to_string(f).ok())
    .and_then(|text| text.trim().parse::<u64>().ok())
    // cgroup v1 says "no limit" with a number near i64::MAX.
    .filter(|limit| *limit < 1 << 60)
}

/// The service account namespace file of a pod.
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Runs the daemon until SIGTERM or SIGINT.
pub fn run(args: &Args) -> Result<()> {
    init_logging(args.logging_format, args.verbosity);
    let plan = args.plan()?;
    for note in &plan.chosen.notes {
        tracing::warn!("{note}");
    }
    let config = CycleConfig {
        percentage_of_nodes_to_score: plan.percentage_of_nodes_to_score,
        feature_gates: args.feature_gates,
        ..CycleConfig::default()
    };
    let file = match &plan.chosen.source {
        Origin::File(source) => Some(source.path()),
        Origin::ConfigMap(_) => None,
    };
    let dir = plugins::plugins_dir(file, args.plugins.as_deref());
    let budget = plugin_memory_budget(args.plugin_memory_mib);
    if let Some(bytes) = budget {
        tracing::info!("plugin memory budget: {} MiB", bytes >> 20);
    }
    let host = Arc::new(PluginHost::new(Runtime::new()?, &dir).with_memory_budget(budget));
    let shared_host = host.clone();
    // A reloaded policy whose extenders cannot be set up (a bad URL, unreadable or invalid
    // TLS material) is refused whole, like one that does not parse: the running policy and
    // its extenders stay.
    let check: PolicyCheck = Box::new(|policy| {
        berth_extender::check_extenders(&policy.extenders)
            .map_err(|e| format!("its extenders cannot be set up: {e}"))
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads(args.io_threads))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // The reloader watches the policy (its file, or the ConfigMap through `follow`) and the
    // plugins directory; a changed policy that validates becomes a new scheduler, swapped in
    // between cycles, while a broken one leaves the last good one running (and is logged).
    // It reads the policy once at start, and lives as long as the daemon.
    let (reloader, scheduler, follow) = match &plan.chosen.source {
        Origin::File(source) => {
            let options = ReloadOptions {
                debounce: RELOAD_DEBOUNCE,
                check: Some(check),
                parse: source.parser(),
            };
            let input = PolicyInput::File(source.path().to_path_buf());
            let (reloader, scheduler) = Reloader::start(host, input, config, options)
                .with_context(|| format!("policy {}", source.path().display()))?;
            (reloader, scheduler, None)
        }
        Origin::ConfigMap(map) => {
            let client = runtime.block_on(berth_daemon::client::connect(&plan.client))?;
            let (text, version) = runtime.block_on(map.fetch(&client))?;
            let options = ReloadOptions {
                debounce: RELOAD_DEBOUNCE,
                check: Some(check),
                ..ReloadOptions::default()
            };
            let input = PolicyInput::Offered {
                name: map.to_string(),
                text,
            };
            let (reloader, scheduler) = Reloader::start(host, input, config, options)
                .with_context(|| format!("policy in {map}"))?;
            (reloader, scheduler, Some((map.clone(), client, version)))
        }
    };
    let policy = reloader.policy();
    for w in &policy.warnings {
        tracing::warn!("{w}");
    }
    let (warnings, _) = crate::extenders::check(&policy);
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let reloader = Arc::new(reloader);
    let (stop_following, stopped) = tokio::sync::watch::channel(false);
    if let Some((map, client, version)) = follow {
        tracing::info!("following {map} for Policy changes");
        // Rebuilding a scheduler is CPU work: versions are applied in order on a thread of
        // their own, not on the API threads.
        let (versions, apply) = std::sync::mpsc::channel::<Result<String, String>>();
        let applier = reloader.clone();
        std::thread::Builder::new()
            .name("berth-policy-configmap".into())
            .spawn(move || {
                while let Ok(text) = apply.recv() {
                    applier.offer(text);
                }
            })
            .context("starting the policy ConfigMap thread")?;
        runtime.spawn(async move {
            let offer = move |text| {
                let _ = versions.send(text);
            };
            map.follow(client, version, offer, stopped).await;
        });
    }
    // The other profiles: each its own policy file and reloader; plugins from the primary
    // profile's host when they share its directory.
    let mut more = Vec::new();
    for (name, origin) in &plan.chosen.more {
        let Origin::File(source) = origin else {
            anyhow::bail!("profile {name}: only the primary profile may read a ConfigMap");
        };
        let dir = plugins::plugins_dir(Some(source.path()), args.plugins.as_deref());
        let host = if dir == shared_host.dir() {
            shared_host.clone()
        } else {
            Arc::new(PluginHost::new(Runtime::new()?, &dir).with_memory_budget(budget))
        };
        let options = ReloadOptions {
            debounce: RELOAD_DEBOUNCE,
            check: None,
            parse: source.parser(),
        };
        let input = PolicyInput::File(source.path().to_path_buf());
        let (extra, scheduler) = Reloader::start(host, input, config, options)
            .with_context(|| format!("profile {name}: policy {}", source.path().display()))?;
        let extra = Arc::new(extra);
        let policy = extra.policy();
        for w in &policy.warnings {
            tracing::warn!(profile = %name, "{w}");
        }
        tracing::info!(profile = %name, policy = %source.path().display(), "serving a profile");
        more.push(ProfileRun {
            name: name.clone(),
            scheduler,
            policy,
            reloader: Some(extra),
        });
    }

    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let mut daemon = DaemonConfig::new(&plan.chosen.scheduler_name, &identity, policy);
    daemon.client = plan.client.clone();
    daemon.metrics_addr = plan.plain_http;
    daemon.secure = plan.secure.clone();
    let client_of = |kubeconfig: &Option<PathBuf>| {
        kubeconfig.as_ref().map(|k| ClientSettings {
            kubeconfig: Some(k.clone()),
            master: None,
            ..plan.client.clone()
        })
    };
    daemon.authentication_client = client_of(&args.authentication_kubeconfig);
    daemon.authorization_client = client_of(&args.authorization_kubeconfig);
    daemon.queue = plan.queue;
    daemon.feature_gates = args.feature_gates;
    if plan.leader_elect.unwrap_or(in_cluster) {
        let namespace = plan.lease.namespace.clone().unwrap_or_else(|| {
            std::fs::read_to_string(POD_NAMESPACE_FILE)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "kube-system".into())
        });
        daemon.leader_election = Some(lease_settings(&plan.lease, namespace, identity)?);
    }
    runtime.block_on(berth_daemon::run_profiles(
        daemon,
        scheduler,
        Some(reloader.clone()),
        more,
        termination_signal(),
    ))?;
    let _ = stop_following.send(true);
    drop(reloader);
    Ok(())
}

/// The API threads: the flag, else every CPU but the scheduling thread's. A worker more
/// than the CPUs left only contends with the scheduling thread (and, on a small machine,
/// with the apiserver): on 2 CPUs two workers spend more CPU per bound pod than one
/// (README, "The binding ceiling", under "Shipping WASM plugins").
fn io_threads(flag: Option<u16>) -> usize {
    flag.map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(1, usize::from)
                .saturating_sub(1)
                .max(1)
        },
        usize::from,
    )
}

/// The Lease timing from the flags: the Lease counts whole seconds, and the leader must stop
/// acting (renew deadline) before a standby may take over (lease duration).
fn lease_settings(
    flags: &LeaseFlags,
    namespace: String,
    identity: String,
) -> Result<LeaseSettings> {
    let duration = flags.duration;
    let deadline = flags.renew_deadline;
    let retry = flags.retry;
    for (flag, value) in [
        ("--leader-elect-lease-duration", duration),
        ("--leader-elect-renew-deadline", deadline),
    ] {
        if value.subsec_nanos() != 0 || value.is_zero() {
            anyhow::bail!(
                "{flag}: {value:?} is not a positive whole number of seconds (e.g. 15s, 1m); \
                 the Lease counts whole seconds"
            );
        }
    }
    if deadline >= duration {
        anyhow::bail!(
            "--leader-elect-renew-deadline ({deadline:?}) must be shorter than \
             --leader-elect-lease-duration ({duration:?})"
        );
    }
    if retry.is_zero() {
        anyhow::bail!("--leader-elect-retry-period must be positive (e.g. 2s)");
    }
    Ok(LeaseSettings {
        name: flags.name.clone(),
        namespace,
        identity,
        duration,
        renew_deadline: deadline,
        retry,
    })
}

/// klog's verbosity as a tracing level: klog logs warnings and errors always, V(0)-V(3)
/// are informational, V(4) is debug and V(5) and above trace.
fn verbosity_level(v: u32) -> &'static str {
    match v {
        // kube's client logs every failed request as an error of its own; Berth names the
        // server and the cause once and summarises repeats, so those lines only come back
        // at -v=4 and above.
        0..=3 => "info,kube_client::client::builder=off",
        4 => "debug",
        _ => "trace",
    }
}

fn init_logging(format: LogFormat, verbosity: u32) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(verbosity_level(verbosity)));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Hostname plus a random suffix, as upstream's leader election identities.
fn default_identity() -> String {
    use std::hash::{BuildHasher, RandomState};
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "berth".into());
    let suffix = RandomState::new().hash_one(std::process::id());
    format!("{host}_{suffix:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    #[command(args_override_self = true)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(flags: &[&str]) -> Result<Args, String> {
        let argv = ["berth", "--policy", "p.json"].iter().chain(flags);
        Cli::try_parse_from(argv)
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn kube_scheduler_flags_and_their_aliases() {
        type Check = fn(&Args) -> bool;
        let cases: [(&[&str], Check); 16] = [
            (&[], |a| a.leader_elect.is_none() && a.verbosity == 0),
            (&["--leader-elect"], |a| a.leader_elect == Some(true)),
            (&["--leader-elect=false"], |a| a.leader_elect == Some(false)),
            (&["--leader-elect=true"], |a| a.leader_elect == Some(true)),
            (&["--leader-elect-lease-duration", "1m30s"], |a| {
                a.leader_elect_lease_duration == Some(Duration::from_secs(90))
            }),
            (&["--lease-duration=20s"], |a| {
                a.leader_elect_lease_duration == Some(Duration::from_secs(20))
            }),
            (
                &[
                    "--leader-elect-renew-deadline=7s",
                    "--leader-elect-retry-period=500ms",
                ],
                |a| {
                    a.leader_elect_renew_deadline == Some(Duration::from_secs(7))
                        && a.leader_elect_retry_period == Some(Duration::from_millis(500))
                },
            ),
            (&["--lease-name", "x", "--lease-namespace", "ns"], |a| {
                a.leader_elect_resource_name.as_deref() == Some("x")
                    && a.leader_elect_resource_namespace.as_deref() == Some("ns")
            }),
            (&["--leader-elect-resource-name=y"], |a| {
                a.leader_elect_resource_name.as_deref() == Some("y")
            }),
            (&["--kube-api-qps", "20", "--kube-api-burst", "30"], |a| {
                a.kube_api_qps == Some(20.0) && a.kube_api_burst == Some(30)
            }),
            (&["--qps", "5", "--burst", "6"], |a| {
                a.kube_api_qps == Some(5.0) && a.kube_api_burst == Some(6)
            }),
            (&["-v", "4"], |a| a.verbosity == 4),
            (&["--io-threads", "3"], |a| a.io_threads == Some(3)),
            (&[], |a| a.io_threads.is_none()),
            (&["--v=5", "--logging-format", "json"], |a| {
                a.verbosity == 5 && a.logging_format == LogFormat::Json
            }),
            (&["--log-format=json"], |a| {
                a.logging_format == LogFormat::Json
            }),
        ];
        for (flags, check) in cases {
            let args = parse(flags).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
            assert!(check(&args), "{flags:?}");
        }
    }

    #[test]
    fn bad_flags_are_rejected_naming_the_flag() {
        let cases: [(&[&str], &str); 7] = [
            (
                &["--leader-elect-lease-duration", "15"],
                "--leader-elect-lease-duration",
            ),
            (&["--lease-duration", "15"], "without a unit"),
            (&["--leader-elect-renew-deadline", "10sec"], "unknown unit"),
            // With a space, clap takes "-2s" for a flag; the `=` form reaches the parser.
            (
                &["--leader-elect-retry-period=-2s"],
                "e.g. 15s, 1m30s, 500ms",
            ),
            (&["--leader-elect", "false"], "unexpected argument"),
            (&["--logging-format", "xml"], "--logging-format"),
            (&["--io-threads", "0"], "--io-threads"),
        ];
        for (flags, want) in cases {
            let err = parse(flags)
                .err()
                .unwrap_or_else(|| panic!("{flags:?} accepted"));
            assert!(err.contains(want), "{flags:?}: {err}");
        }
    }

    #[test]
    fn lease_timing_is_checked_and_mapped() {
        /// Lease duration and renew deadline in seconds, retry in milliseconds, or an error.
        type Want = Result<(u64, u64, u64), &'static str>;
        let cases: [(&[&str], Want); 6] = [
            (&[], Ok((15, 10, 2000))),
            (
                &[
                    "--leader-elect-lease-duration=1m",
                    "--leader-elect-renew-deadline=40s",
                ],
                Ok((60, 40, 2000)),
            ),
            (&["--leader-elect-retry-period=500ms"], Ok((15, 10, 500))),
            (
                &["--leader-elect-lease-duration=15.5s"],
                Err("whole number of seconds"),
            ),
            (
                &["--leader-elect-renew-deadline=15s"],
                Err("must be shorter than"),
            ),
            (
                &["--leader-elect-retry-period=0"],
                Err("--leader-elect-retry-period"),
            ),
        ];
        for (flags, want) in cases {
            let plan = parse(flags).unwrap().plan().unwrap();
            let got = lease_settings(&plan.lease, "ns".into(), "me".into())
                .map(|s| {
                    let ms = s.retry.as_millis() as u64;
                    (s.duration.as_secs(), s.renew_deadline.as_secs(), ms)
                })
                .map_err(|e| e.to_string());
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{flags:?}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "{flags:?}: {e}"),
                (got, want) => panic!("{flags:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn klog_verbosity_maps_to_tracing_levels() {
        for (v, level) in [
            (0, "info,kube_client::client::builder=off"),
            (2, "info,kube_client::client::builder=off"),
            (3, "info,kube_client::client::builder=off"),
            (4, "debug"),
            (5, "trace"),
            (9, "trace"),
        ] {
            assert_eq!(verbosity_level(v), level, "-v {v}");
        }
    }
}

/// kube-scheduler v1.22's real command lines through `berth run`'s parser: every flag of
/// v1.22.17's `--help`, kubeadm v1.22's manifest and OpenShift 3.11's master-config.yaml.
#[cfg(test)]
mod legacy_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    #[command(args_override_self = true)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// `berth run ARGS` as main parses it (the legacy step first).
    fn parse(args: &[String]) -> Result<Args, String> {
        let argv: Vec<String> = ["berth", "run"]
            .iter()
            .map(|s| s.to_string())
            .chain(args.iter().cloned())
            .collect();
        let argv = crate::legacy::command_line(argv).map_err(|e| format!("{e:#}"))?;
        Cli::try_parse_from(argv.into_iter().skip(1))
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    const HELP: &str = include_str!("../tests/legacy/kube-scheduler-v1.22.17-help.txt");

    /// A value for a v1.22 flag that v1.22 itself would take.
    fn sample(flag: &str, kind: &str) -> Option<String> {
        let value = match flag {
            "leader-elect-resource-lock" => "leases",
            "kube-api-content-type" => "application/json",
            "feature-gates" => "DefaultPodTopologySpread=true",
            "logging-format" => "text",
            "address" | "bind-address" => "127.0.0.1",
            "master" => "https://127.0.0.1:6443",
            "tls-min-version" => "VersionTLS12",
            "tls-cert-file" | "tls-private-key-file" => return None,
            "authorization-always-allow-paths" => "/healthz",
            "use-legacy-policy-config" => "false",
            "policy-configmap" => "scheduler-policy",
            "policy-configmap-namespace" => "kube-system",
            "v" => "2",
            "logtostderr" => "true",
            _ => match kind {
                "duration" => "15s",
                "int" | "int32" | "float32" | "uint" => "5",
                "strings" | "string" | "ip" => "x",
                _ => "true",
            },
        };
        Some(value.to_string())
    }

    #[test]
    fn every_v122_flag_is_taken_or_refused_with_why() {
        let mut taken = 0;
        let mut refused = 0;
        for line in HELP.lines().filter(|l| l.trim_start().starts_with("--")) {
            let mut words = line.split_whitespace();
            let flag = words.next().unwrap().trim_start_matches("--");
            let kind = words.next().unwrap_or_default();
            if ["help", "version"].contains(&flag) {
                // Answered by clap.
                continue;
            }
            let Some(value) = sample(flag, kind) else {
                continue;
            };
            let args = vec!["--policy=p.json".to_string(), format!("--{flag}={value}")];
            match parse(&args) {
                Ok(_) => taken += 1,
                Err(e) => {
                    assert!(
                        e.contains("is not taken by berth run: ")
                            && e.contains(&format!("--{flag}")),
                        "--{flag}: neither taken nor refused with why: {e}"
                    );
                    refused += 1;
                }
            }
        }
        // Both sides are exercised: the table is not empty and most flags carry over.
        assert!(
            taken > 35 && refused > 20,
            "taken {taken}, refused {refused}"
        );
        let pair = [
            "--policy=p.json".to_string(),
            "--tls-cert-file=c.pem".to_string(),
            "--tls-private-key-file=k.pem".to_string(),
        ];
        assert!(parse(&pair).is_ok());
    }

    /// The command of kubeadm v1.22's manifest (deploy/legacy), with the Policy as kubeadm's
    /// scheduler.extraArgs adds it.
    fn kubeadm_command() -> Vec<String> {
        let text = include_str!("../../../deploy/legacy/kubeadm-v1.22-kube-scheduler.yaml");
        let pod: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap();
        let command = pod["spec"]["containers"][0]["command"]
            .as_sequence()
            .unwrap();
        assert_eq!(command[0].as_str(), Some("kube-scheduler"));
        command[1..]
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .chain(["--policy-config-file=/etc/kubernetes/scheduler-policy.json".to_string()])
            .collect()
    }

    #[test]
    fn kubeadms_v122_manifest_runs_with_v122s_meaning() {
        let plan = parse(&kubeadm_command()).unwrap().plan().unwrap();
        assert_eq!(plan.chosen.scheduler_name, "default-scheduler");
        assert_eq!(
            plan.chosen.source,
            Origin::File(PolicySource::Policy(
                "/etc/kubernetes/scheduler-policy.json".into()
            ))
        );
        assert_eq!(
            plan.client.kubeconfig,
            Some("/etc/kubernetes/scheduler.conf".into())
        );
        assert_eq!(plan.leader_elect, Some(true));
        assert_eq!(plan.plain_http, None, "--port=0");
        let secure = plan
            .secure
            .expect("HTTPS, where the manifest's probes look");
        assert_eq!(secure.addr, "127.0.0.1:10259".parse().unwrap());
        assert_eq!(secure.always_allow_paths, ["/healthz", "/readyz", "/livez"]);
    }

    #[test]
    fn openshift_311_master_config_runs_its_policy_and_loopback_client() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/legacy");
        let file = format!("{dir}/openshift-3.11-master-config.yaml");
        let args = parse(&[format!("--master-config={file}")]).unwrap();
        let plan = args.plan().unwrap();
        assert_eq!(plan.chosen.scheduler_name, "default-scheduler");
        assert_eq!(
            plan.chosen.source,
            Origin::File(PolicySource::Policy(
                "/etc/origin/master/scheduler.json".into()
            ))
        );
        assert_eq!(
            plan.client.kubeconfig,
            Some(PathBuf::from(dir).join("openshift-master.kubeconfig"))
        );
        assert_eq!((plan.client.qps, plan.client.burst), (300.0, 600));
        // Its schedulerArguments are flags; the command line comes after them and wins.
        let tmp = tempfile::tempdir().unwrap();
        let with_args = tmp.path().join("master-config.yaml");
        std::fs::write(
            &with_args,
            std::fs::read_to_string(&file).unwrap().replace(
                "  schedulerArguments: null",
                concat!(
                    "  schedulerArguments:\n",
                    "    kube-api-qps: [\"100\"]\n",
                    "    leader-elect-resource-lock: [leases]\n",
                    "    lock-object-name: [ose-scheduler]",
                ),
            ),
        )
        .unwrap();
        let flag = format!("--master-config={}", with_args.display());
        let plan = parse(std::slice::from_ref(&flag)).unwrap().plan().unwrap();
        assert_eq!(plan.client.qps, 100.0);
        assert_eq!(plan.lease.name, "ose-scheduler");
        let plan = parse(&[flag, "--kube-api-qps=7".into()])
            .unwrap()
            .plan()
            .unwrap();
        assert_eq!(plan.client.qps, 7.0);
        let bad = tmp.path().join("bad.yaml");
        std::fs::write(&bad, "kind: MasterConfig\nkubernetesMasterConfig:\n  schedulerArguments:\n    log-dir: [/var/log]\n  schedulerConfigFile: s.json\n").unwrap();
        let err = parse(&[format!("--master-config={}", bad.display())])
            .err()
            .unwrap();
        assert!(
            err.contains("schedulerArguments") && err.contains("--log-dir"),
            "{err}"
        );
    }

    #[test]
    fn v122_precedence_among_policy_flags_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("c.yaml");
        std::fs::write(
            &config,
            "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n\
             clientConnection: {kubeconfig: /from/file, qps: 9}\n\
             leaderElection: {leaderElect: true, resourceName: file-lease}\n\
             percentageOfNodesToScore: 30\npodInitialBackoffSeconds: 3\npodMaxBackoffSeconds: 30\n\
             healthzBindAddress: 127.0.0.1:10251\nparallelism: 8\nprofiles: [{schedulerName: x}]\n",
        )
        .unwrap();
        let c = format!("--config={}", config.display());
        let args = |extra: &[&str]| {
            let mut v = vec!["--policy-config-file=p.json".to_string(), c.clone()];
            v.extend(extra.iter().map(|s| s.to_string()));
            parse(&v).unwrap().plan()
        };
        let plan = args(&[
            "--kubeconfig=/from/flag",
            "--leader-elect-resource-name=flag-lease",
        ])
        .unwrap();
        assert_eq!(
            plan.client.kubeconfig,
            Some("/from/file".into()),
            "v1.22: the file's client"
        );
        assert_eq!(plan.client.qps, 9.0);
        assert_eq!(
            plan.lease.name, "flag-lease",
            "v1.22: leader election flags win"
        );
        assert_eq!(plan.percentage_of_nodes_to_score, 30);
        assert_eq!(plan.queue.initial_backoff, Duration::from_secs(3));
        assert_eq!(plan.queue.max_backoff, Duration::from_secs(30));
        assert_eq!(plan.plain_http, Some("127.0.0.1:10251".parse().unwrap()));
        let notes = plan.chosen.notes.join("\n");
        for said in [
            "its profiles are not used",
            "parallelism (8)",
            "--kubeconfig is overridden",
        ] {
            assert!(notes.contains(said), "{said} not in {notes}");
        }
        let errors: [(&[&str], &str); 4] = [
            (&["--leader-elect-resource-lock=endpoints"], "Lease only"),
            (&["--logtostderr=false"], "standard error only"),
            (
                &["--kube-api-content-type=text/plain"],
                "expected application/json",
            ),
            (&["--policy=q.json"], "give one"),
        ];
        for (extra, want) in errors {
            let err = args(extra).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(want), "{extra:?}: {err}");
        }
        // v1.22's ApplyTo: the ConfigMap unless --use-legacy-policy-config=true.
        let chosen = |extra: &[&str]| {
            let v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            parse(&v).unwrap().choose().unwrap()
        };
        let map = PolicyConfigMap {
            namespace: "kube-system".into(),
            name: "sched".into(),
        };
        let both = ["--policy-configmap=sched", "--policy-config-file=p.json"];
        let c = chosen(&both);
        assert_eq!(c.source, Origin::ConfigMap(map.clone()));
        assert_eq!(c.scheduler_name, "default-scheduler");
        assert!(
            c.notes.iter().any(|n| n.contains("p.json is not read")),
            "{:?}",
            c.notes
        );
        let legacy = chosen(&[both[0], both[1], "--use-legacy-policy-config"]);
        assert_eq!(
            legacy.source,
            Origin::File(PolicySource::Policy("p.json".into()))
        );
        let other_ns = chosen(&[
            "--policy-configmap=sched",
            "--policy-configmap-namespace=ops",
        ]);
        assert_eq!(
            other_ns.source,
            Origin::ConfigMap(PolicyConfigMap {
                namespace: "ops".into(),
                ..map
            })
        );
        let err = parse(&["--use-legacy-policy-config".to_string()])
            .unwrap()
            .plan()
            .unwrap_err();
        assert!(
            err.to_string().contains("needs --policy-config-file"),
            "{err}"
        );
    }

    #[test]
    fn several_profiles_from_flags_or_a_configuration() {
        let args = |v: &[&str]| parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let c = args(&["--policy=p.json", "--profile=default-scheduler=d.json"])
            .unwrap()
            .choose()
            .unwrap();
        assert_eq!(c.scheduler_name, "berth");
        assert_eq!(
            c.more,
            [(
                "default-scheduler".to_string(),
                Origin::File(PolicySource::Policy("d.json".into()))
            )]
        );
        let err = args(&["--policy=p.json", "--profile=nameless"])
            .err()
            .unwrap();
        assert!(err.contains("expected NAME=FILE"), "{err}");
        let twice = args(&["--policy=p.json", "--profile=berth=q.json"])
            .unwrap()
            .choose()
            .unwrap_err();
        assert!(twice.to_string().contains("served twice"), "{twice}");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("c.yaml");
        std::fs::write(
            &config,
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
             profiles: [{schedulerName: berth}, {}]\n",
        )
        .unwrap();
        let c = args(&[&format!("--config={}", config.display())])
            .unwrap()
            .choose()
            .unwrap();
        assert_eq!(c.scheduler_name, "berth");
        let names: Vec<&str> = c.more.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["default-scheduler"],
            "every profile of the file, as upstream"
        );
        let one = args(&[
            &format!("--config={}", config.display()),
            "--scheduler-name=default-scheduler",
        ])
        .unwrap()
        .choose()
        .unwrap();
        assert_eq!(one.scheduler_name, "default-scheduler");
        assert!(one.more.is_empty(), "--scheduler-name picks one profile");
    }
}
