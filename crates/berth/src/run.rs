//! `berth run`: the scheduler daemon on a real cluster (see crates/berth-daemon).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use berth_daemon::client::ClientSettings;
use berth_daemon::leader::LeaseSettings;
use berth_daemon::metrics::ReloadCounts;
use berth_daemon::{DaemonConfig, Reloading, termination_signal};
use berth_engine::CycleConfig;
use berth_wasm::{PluginHost, Reloader, Runtime};
use clap::ValueEnum;

use crate::plugins;

/// Log output format.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `berth run`.
#[derive(clap::Args)]
pub struct Args {
    /// Policy file (JSON).
    #[arg(long, env = "BERTH_POLICY")]
    policy: PathBuf,
    /// Directory of the WASM plugin modules the policy names (default: the policy file's
    /// directory).
    #[arg(long, env = "BERTH_PLUGINS")]
    plugins: Option<PathBuf>,
    /// Schedule the pending pods whose spec.schedulerName is this.
    #[arg(long, default_value = "berth")]
    scheduler_name: String,
    /// Kubeconfig file (default: in-cluster configuration, else the usual kubeconfig).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Elect a leader among replicas through a Lease (default: on in a cluster, off outside).
    #[arg(long, action = clap::ArgAction::Set)]
    leader_elect: Option<bool>,
    /// Name of the Lease.
    #[arg(long, default_value = "berth")]
    lease_name: String,
    /// Namespace of the Lease (default: the pod's namespace in a cluster, else kube-system).
    #[arg(long)]
    lease_namespace: Option<String>,
    /// Seconds a lease holds without renewal: a new leader takes over within about this long.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_duration: u64,
    /// Identity of this replica in the Lease and in events (default: hostname and a random
    /// suffix).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "127.0.0.1:10259")]
    metrics_addr: SocketAddr,
    /// API requests per second, sustained (bindings, events, status updates, watches).
    #[arg(long, default_value_t = 50.0)]
    qps: f64,
    /// API requests allowed at once above the sustained rate.
    #[arg(long, default_value_t = 100)]
    burst: u32,
    /// Percentage of nodes to find feasible before scoring (0 = adaptive, as upstream).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    percentage_of_nodes_to_score: u32,
    /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
    /// (default: v1.22's, DefaultPodTopologySpread=true).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    feature_gates: berth_engine::FeatureGates,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Memory all WASM plugin instances together may hold, in MiB (default: half the
    /// container's memory limit when there is one, else unbounded). Each plugin gets one
    /// instance per worker thread, fewer if the budget is short, and each instance may hold
    /// its memoryLimitMiB.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    plugin_memory_mib: Option<u64>,
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
    init_logging(args.log_format);
    let policy = berth_policy::load(&args.policy)?;
    for w in &policy.warnings {
        tracing::warn!("{w}");
    }
    let (warnings, _) = crate::extenders::check(&policy);
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let config = CycleConfig {
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        feature_gates: args.feature_gates,
        ..CycleConfig::default()
    };
    let dir = plugins::plugins_dir(Some(&args.policy), args.plugins.as_deref());
    // The reloader watches the policy file and the plugins directory; a changed file that
    // validates becomes a new scheduler, swapped in between cycles, while a broken one
    // leaves the last good one running (and is logged). It lives as long as the daemon.
    let budget = plugin_memory_budget(args.plugin_memory_mib);
    if let Some(bytes) = budget {
        tracing::info!("plugin memory budget: {} MiB", bytes >> 20);
    }
    let host = Arc::new(PluginHost::new(Runtime::new()?, &dir).with_memory_budget(budget));
    let (reloader, scheduler) = Reloader::start(host, &args.policy, config, RELOAD_DEBOUNCE)
        .with_context(|| format!("policy {}", args.policy.display()))?;
    let reloader = Arc::new(reloader);
    let reloading = Reloading {
        updates: {
            let reloader = reloader.clone();
            let extenders = policy.extenders.clone();
            Box::new(move || {
                let next = reloader.take_scheduler()?;
                if reloader.policy().extenders != extenders {
                    tracing::warn!(
                        "the reloaded policy changes its extenders; berth run keeps calling the \
                         ones it started with until it is restarted"
                    );
                }
                Some(next)
            })
        },
        status: {
            let reloader = reloader.clone();
            Arc::new(move || {
                let s = reloader.status();
                ReloadCounts {
                    policy_applied: s.policy_reloads,
                    policy_rejected: s.policy_failures,
                    module_applied: s.module_reloads,
                    module_rejected: s.module_failures,
                }
            })
        },
    };

    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let mut daemon = DaemonConfig::new(&args.scheduler_name, &identity);
    daemon.client = ClientSettings {
        kubeconfig: args.kubeconfig.clone(),
        qps: args.qps,
        burst: args.burst,
    };
    daemon.metrics_addr = Some(args.metrics_addr);
    daemon.extenders = policy.extenders.clone();
    if args.leader_elect.unwrap_or(in_cluster) {
        let namespace = args.lease_namespace.clone().unwrap_or_else(|| {
            std::fs::read_to_string(POD_NAMESPACE_FILE)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "kube-system".into())
        });
        let duration = Duration::from_secs(args.lease_duration);
        daemon.leader_election = Some(LeaseSettings {
            name: args.lease_name.clone(),
            namespace,
            identity,
            duration,
            // Renew with a third of the lease left, as upstream's 15 s / 10 s defaults.
            renew_before: duration / 3,
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(berth_daemon::run(
        daemon,
        scheduler,
        Some(reloading),
        termination_signal(),
    ))?;
    drop(reloader);
    Ok(())
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
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
