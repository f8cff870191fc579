//! kube-scheduler v1.22's command line and OpenShift 3.11's master-config.yaml, as `berth run`
//! takes them: the v1.22 flags Berth deliberately does not have are refused here with what to
//! use instead (clap would only say "unexpected argument"), and a master-config.yaml's
//! scheduler settings become `berth run` arguments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// kube-scheduler v1.22 flags Berth does not take, and what to do instead.
const REFUSED: &[(&str, &str)] = &[
    (
        "write-config-to",
        "Berth writes no configuration file; `berth check --output json` prints the effective \
         policy and `berth convert` a KubeSchedulerConfiguration",
    ),
    (
        "client-ca-file",
        "Berth authenticates bearer tokens (TokenReview through --authentication-kubeconfig); \
         client certificates are not accepted: give scrapers a ServiceAccount token",
    ),
    (
        "requestheader-client-ca-file",
        "Berth authenticates bearer tokens only; front-proxy request headers are not accepted",
    ),
    (
        "requestheader-allowed-names",
        "Berth authenticates bearer tokens only; front-proxy request headers are not accepted",
    ),
    (
        "requestheader-extra-headers-prefix",
        "Berth authenticates bearer tokens only; front-proxy request headers are not accepted",
    ),
    (
        "requestheader-group-headers",
        "Berth authenticates bearer tokens only; front-proxy request headers are not accepted",
    ),
    (
        "requestheader-username-headers",
        "Berth authenticates bearer tokens only; front-proxy request headers are not accepted",
    ),
    (
        "tls-sni-cert-key",
        "Berth serves one certificate: --tls-cert-file and --tls-private-key-file",
    ),
    (
        "tls-cipher-suites",
        "Berth offers rustls' TLS 1.2 and 1.3 suites, all with forward secrecy; the list is \
         not configurable",
    ),
    (
        "http2-max-streams-per-connection",
        "Berth serves its endpoints over HTTP/1.1",
    ),
    (
        "permit-port-sharing",
        "Berth binds its ports alone (SO_REUSEPORT is not offered)",
    ),
    (
        "permit-address-sharing",
        "Berth binds its ports alone (SO_REUSEADDR is not offered)",
    ),
    (
        "allow-metric-labels",
        "Berth's metrics and their labels are fixed (README, \"Metrics\")",
    ),
    (
        "disabled-metrics",
        "Berth's metrics are fixed (README, \"Metrics\"); drop series in the scraper instead",
    ),
    (
        "show-hidden-metrics-for-version",
        "Berth hides no deprecated metrics",
    ),
    (
        "experimental-logging-sanitization",
        "Berth logs no secrets to sanitise",
    ),
    (
        "alsologtostderr",
        "Berth logs to standard error only; the container runtime keeps the log",
    ),
    (
        "log-dir",
        "Berth logs to standard error only; the container runtime keeps the log",
    ),
    (
        "log-file",
        "Berth logs to standard error only; the container runtime keeps the log",
    ),
    (
        "log-file-max-size",
        "Berth logs to standard error only; the container runtime keeps the log",
    ),
    (
        "log-flush-frequency",
        "Berth writes each log line as it happens",
    ),
    (
        "log-backtrace-at",
        "Berth has no klog backtraces; RUST_BACKTRACE=1 prints one on a crash",
    ),
    (
        "add-dir-header",
        "Berth's log lines carry their module, not a file path (--logging-format json for \
         structured fields)",
    ),
    (
        "skip-headers",
        "Berth's log line header is fixed (--logging-format json for structured fields)",
    ),
    (
        "skip-log-headers",
        "Berth's log line header is fixed (--logging-format json for structured fields)",
    ),
    ("one-output", "Berth logs to standard error only"),
    (
        "stderrthreshold",
        "Berth logs every level to standard error; -v and RUST_LOG choose the levels",
    ),
    (
        "vmodule",
        "use RUST_LOG (e.g. RUST_LOG=info,berth_daemon=debug) for per-module levels",
    ),
];

/// The command line `berth run` parses: a v1.22 flag Berth does not take is refused here, and
/// `--master-config FILE` brings its scheduler arguments in right after `run`, so the flags
/// given on the command line come later and win. Other commands pass through unchanged.
pub fn command_line(argv: Vec<String>) -> Result<Vec<String>> {
    if argv.get(1).map(String::as_str) != Some("run") {
        return Ok(argv);
    }
    let rest = &argv[2..];
    check_refused(rest)?;
    let master_config = rest.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--master-config=")
            .map(str::to_string)
            .or_else(|| {
                (a == "--master-config")
                    .then(|| rest.get(i + 1).cloned())
                    .flatten()
            })
    });
    let Some(path) = master_config else {
        return Ok(argv);
    };
    let master = read_master_config(Path::new(&path))?;
    check_refused(&master.args)
        .with_context(|| format!("{path}: kubernetesMasterConfig.schedulerArguments"))?;
    if !master.not_for_a_scheduler.is_empty() {
        eprintln!(
            "note: {path}: read kubernetesMasterConfig's schedulerConfigFile and \
             schedulerArguments and masterClients' loopback client; {} configure the master, \
             not a scheduler",
            master.not_for_a_scheduler.join(", ")
        );
    }
    Ok(argv[..2]
        .iter()
        .cloned()
        .chain(master.args)
        .chain(rest.iter().cloned())
        .collect())
}

/// Refuses a v1.22 flag Berth does not take, naming it and what to use instead.
fn check_refused(args: &[String]) -> Result<()> {
    for arg in args {
        let Some(name) = arg.strip_prefix("--") else {
            continue;
        };
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        if let Some((flag, why)) = REFUSED.iter().find(|(flag, _)| *flag == name) {
            bail!("--{flag} (a kube-scheduler v1.22 flag) is not taken by berth run: {why}");
        }
    }
    Ok(())
}

/// The scheduler settings of an OpenShift 3.11 master-config.yaml.
#[derive(Debug, Clone, PartialEq)]
pub struct MasterConfig {
    /// `berth run` arguments: the Policy file, the kubeconfig and client limits, then
    /// `kubernetesMasterConfig.schedulerArguments` in their order.
    pub args: Vec<String>,
    /// The top-level sections the file has that configure the master rather than a
    /// scheduler (named once, so nothing is left out in silence).
    pub not_for_a_scheduler: Vec<String>,
}

/// Reads the scheduler settings of an OpenShift 3.11 master-config.yaml: its
/// `kubernetesMasterConfig.schedulerConfigFile` (the Policy), `schedulerArguments` (kube-
/// scheduler flags, each a list of values), and the loopback client the master's scheduler
/// used (`masterClients.openshiftLoopbackKubeConfig` with its QPS and burst overrides).
/// Relative paths are taken from the file's directory, as OpenShift does.
pub fn read_master_config(path: &Path) -> Result<MasterConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the master config {}", path.display()))?;
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text)
        .with_context(|| format!("{} is not YAML", path.display()))?;
    let at = |keys: &[&str]| -> Option<&serde_yaml_ng::Value> {
        keys.iter()
            .try_fold(&doc, |v, k| v.get(*k))
            .filter(|v| !v.is_null())
    };
    let kind = at(&["kind"]).and_then(|k| k.as_str()).unwrap_or_default();
    if kind != "MasterConfig" {
        bail!(
            "{}: kind is {kind:?}; --master-config takes an OpenShift 3.x master-config.yaml \
             (kind: MasterConfig)",
            path.display()
        );
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let relative = |p: &str| -> String {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { dir.join(p) }
            .display()
            .to_string()
    };
    let string = |keys: &[&str]| -> Result<Option<String>> {
        match at(keys) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|s| Some(s.to_string()))
                .with_context(|| format!("{}: {} is not a string", path.display(), keys.join("."))),
        }
    };
    let mut args = Vec::new();
    let policy = string(&["kubernetesMasterConfig", "schedulerConfigFile"])?
        .filter(|p| !p.is_empty())
        .with_context(|| {
            format!(
                "{}: kubernetesMasterConfig.schedulerConfigFile is not set; it names the Policy \
                 the master's scheduler runs",
                path.display()
            )
        })?;
    args.push(format!("--policy-config-file={}", relative(&policy)));
    if let Some(kubeconfig) =
        string(&["masterClients", "openshiftLoopbackKubeConfig"])?.filter(|k| !k.is_empty())
    {
        args.push(format!("--kubeconfig={}", relative(&kubeconfig)));
    }
    let overrides = [
        "masterClients",
        "openshiftLoopbackClientConnectionOverrides",
    ];
    for (field, flag) in [("qps", "kube-api-qps"), ("burst", "kube-api-burst")] {
        let keys = [overrides[0], overrides[1], field];
        if let Some(v) = at(&keys) {
            let number = v.as_f64().with_context(|| {
                format!("{}: {} is not a number", path.display(), keys.join("."))
            })?;
            args.push(format!("--{flag}={number}"));
        }
    }
    if let Some(arguments) = at(&["kubernetesMasterConfig", "schedulerArguments"]) {
        let map: BTreeMap<String, Vec<String>> = serde_yaml_ng::from_value(arguments.clone())
            .with_context(|| {
                format!(
                    "{}: kubernetesMasterConfig.schedulerArguments must map flag names to lists \
                     of values (e.g. kube-api-qps: [\"100\"])",
                    path.display()
                )
            })?;
        for (flag, values) in map {
            for value in values {
                args.push(format!("--{flag}={value}"));
            }
        }
    }
    let mut not_for_a_scheduler: Vec<String> = doc
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str())
                .filter(|k| {
                    ![
                        "kind",
                        "apiVersion",
                        "kubernetesMasterConfig",
                        "masterClients",
                    ]
                    .contains(k)
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    not_for_a_scheduler.sort();
    Ok(MasterConfig {
        args,
        not_for_a_scheduler,
    })
}
