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
use berth_schedconfig::goduration;
use berth_wasm::{PluginHost, PolicyCheck, Reloader, Runtime};
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

/// Arguments of `berth run`.
#[derive(clap::Args)]
pub struct Args {
    /// Policy file (JSON).
    #[arg(
        long,
        env = "BERTH_POLICY",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    policy: Option<PathBuf>,
    /// A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration instead of a Policy (the
    /// subset `berth convert` writes): the profile whose schedulerName is --scheduler-name.
    /// Reloaded on change like a Policy file.
    #[arg(long, env = "BERTH_CONFIG")]
    config: Option<PathBuf>,
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
    /// Elect a leader among replicas through a Lease (default: on in a cluster, off outside);
    /// `--leader-elect` alone means true, as kube-scheduler's boolean flag.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    leader_elect: Option<bool>,
    /// Name of the Lease.
    #[arg(long, alias = "lease-name", default_value = "berth")]
    leader_elect_resource_name: String,
    /// Namespace of the Lease (default: the pod's namespace in a cluster, else kube-system).
    #[arg(long, alias = "lease-namespace")]
    leader_elect_resource_namespace: Option<String>,
    /// How long a lease holds without renewal: a standby takes over within about this long
    /// (a Go duration in whole seconds, as the Lease stores them).
    #[arg(long, alias = "lease-duration", default_value = "15s", value_parser = goduration::parse)]
    leader_elect_lease_duration: Duration,
    /// How long after its last renewal the leader renews; if that renewal fails it stops
    /// scheduling at once (whole seconds, below the lease duration).
    #[arg(long, default_value = "10s", value_parser = goduration::parse)]
    leader_elect_renew_deadline: Duration,
    /// Wait before trying again after a failed acquisition or renewal (a standby otherwise
    /// tries when the held lease expires).
    #[arg(long, default_value = "2s", value_parser = goduration::parse)]
    leader_elect_retry_period: Duration,
    /// Identity of this replica in the Lease and in events (default: hostname and a random
    /// suffix).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz, /readyz and /configz (plain HTTP; kube-scheduler's old
    /// insecure port 10251, not its HTTPS port 10259).
    #[arg(long, default_value = "127.0.0.1:10251")]
    metrics_addr: SocketAddr,
    /// API requests per second, sustained (bindings, events, status updates, watches).
    #[arg(long, alias = "qps", default_value_t = 50.0)]
    kube_api_qps: f64,
    /// API requests allowed at once above the sustained rate.
    #[arg(long, alias = "burst", default_value_t = 100)]
    kube_api_burst: u32,
    /// Percentage of nodes to find feasible before scoring (0 = adaptive, as upstream).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    percentage_of_nodes_to_score: u32,
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
    let source = PolicySource::from_flags(
        args.policy.as_deref(),
        args.config.as_deref(),
        Some(&args.scheduler_name),
        args.feature_gates,
    )
    .context("give --policy or --config")?;
    let policy = source.load()?;
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
    let dir = plugins::plugins_dir(Some(source.path()), args.plugins.as_deref());
    // The reloader watches the policy file and the plugins directory; a changed file that
    // validates becomes a new scheduler, swapped in between cycles, while a broken one
    // leaves the last good one running (and is logged). It lives as long as the daemon.
    let budget = plugin_memory_budget(args.plugin_memory_mib);
    if let Some(bytes) = budget {
        tracing::info!("plugin memory budget: {} MiB", bytes >> 20);
    }
    let host = Arc::new(PluginHost::new(Runtime::new()?, &dir).with_memory_budget(budget));
    // A reloaded policy whose extenders cannot be set up (a bad URL, unreadable or invalid
    // TLS material) is refused whole, like one that does not parse: the running policy and
    // its extenders stay.
    let check: PolicyCheck = Box::new(|policy| {
        berth_extender::check_extenders(&policy.extenders)
            .map_err(|e| format!("its extenders cannot be set up: {e}"))
    });
    let (reloader, scheduler) = Reloader::start_parsed(
        host,
        source.path(),
        config,
        RELOAD_DEBOUNCE,
        Some(check),
        source.parser(),
    )
    .with_context(|| format!("policy {}", source.path().display()))?;
    let reloader = Arc::new(reloader);
    let reloading = Reloading {
        updates: {
            let reloader = reloader.clone();
            Box::new(move || reloader.take_update())
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
    let mut daemon = DaemonConfig::new(&args.scheduler_name, &identity, policy);
    daemon.client = ClientSettings {
        kubeconfig: args.kubeconfig.clone(),
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
    };
    daemon.metrics_addr = Some(args.metrics_addr);
    daemon.feature_gates = args.feature_gates;
    if args.leader_elect.unwrap_or(in_cluster) {
        let namespace = args
            .leader_elect_resource_namespace
            .clone()
            .unwrap_or_else(|| {
                std::fs::read_to_string(POD_NAMESPACE_FILE)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "kube-system".into())
            });
        daemon.leader_election = Some(lease_settings(args, namespace, identity)?);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads(args.io_threads))
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
fn lease_settings(args: &Args, namespace: String, identity: String) -> Result<LeaseSettings> {
    let duration = args.leader_elect_lease_duration;
    let deadline = args.leader_elect_renew_deadline;
    let retry = args.leader_elect_retry_period;
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
        name: args.leader_elect_resource_name.clone(),
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
                a.leader_elect_lease_duration == Duration::from_secs(90)
            }),
            (&["--lease-duration=20s"], |a| {
                a.leader_elect_lease_duration == Duration::from_secs(20)
            }),
            (
                &[
                    "--leader-elect-renew-deadline=7s",
                    "--leader-elect-retry-period=500ms",
                ],
                |a| {
                    a.leader_elect_renew_deadline == Duration::from_secs(7)
                        && a.leader_elect_retry_period == Duration::from_millis(500)
                },
            ),
            (&["--lease-name", "x", "--lease-namespace", "ns"], |a| {
                a.leader_elect_resource_name == "x"
                    && a.leader_elect_resource_namespace.as_deref() == Some("ns")
            }),
            (&["--leader-elect-resource-name=y"], |a| {
                a.leader_elect_resource_name == "y"
            }),
            (&["--kube-api-qps", "20", "--kube-api-burst", "30"], |a| {
                a.kube_api_qps == 20.0 && a.kube_api_burst == 30
            }),
            (&["--qps", "5", "--burst", "6"], |a| {
                a.kube_api_qps == 5.0 && a.kube_api_burst == 6
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
            let args = parse(flags).unwrap();
            let got = lease_settings(&args, "ns".into(), "me".into())
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
