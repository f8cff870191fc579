//! A KubeSchedulerConfiguration's component settings (client, leader election, queue backoff,
//! percentage of nodes to score, plain-HTTP addresses) in all four versions kube-scheduler
//! has read: v1beta1 (v1.19-v1.22), v1beta2 (v1.22-v1.25), v1beta3 (v1.23-v1.25) and v1
//! (v1.25 and later). `berth run --config` takes them as kube-scheduler does; a field that
//! Berth reads but does not act on is named in [`Settings::unused`], never dropped in silence.

use std::path::PathBuf;
use std::time::Duration;

use berth_policy::PolicyError;

use crate::goduration;
use crate::types::{ClientConnection, KubeSchedulerConfiguration, LeaderElection};

/// The versions of `kubescheduler.config.k8s.io` Berth reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigVersion {
    /// kube-scheduler v1.19-v1.22.
    V1beta1,
    /// kube-scheduler v1.22-v1.25.
    V1beta2,
    /// kube-scheduler v1.23-v1.25.
    V1beta3,
    /// kube-scheduler v1.25 and later.
    V1,
}

impl ConfigVersion {
    /// Every version, oldest first.
    pub const ALL: [ConfigVersion; 4] = [
        ConfigVersion::V1beta1,
        ConfigVersion::V1beta2,
        ConfigVersion::V1beta3,
        ConfigVersion::V1,
    ];

    /// The `apiVersion` string.
    pub fn api_version(self) -> &'static str {
        match self {
            ConfigVersion::V1beta1 => "kubescheduler.config.k8s.io/v1beta1",
            ConfigVersion::V1beta2 => "kubescheduler.config.k8s.io/v1beta2",
            ConfigVersion::V1beta3 => "kubescheduler.config.k8s.io/v1beta3",
            ConfigVersion::V1 => "kubescheduler.config.k8s.io/v1",
        }
    }

    /// The version an `apiVersion` names.
    pub fn from_api_version(api_version: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.api_version() == api_version)
    }

    /// Whether profiles name kube-scheduler v1.22's plugins at each extension point (v1beta1
    /// and v1beta2), rather than v1.25's with `multiPoint` (v1beta3 and v1).
    pub fn has_v122_plugins(self) -> bool {
        self <= ConfigVersion::V1beta2
    }

    /// The accepted `apiVersion`s, for messages.
    pub fn accepted() -> String {
        Self::ALL
            .iter()
            .map(|v| v.api_version())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What `berth run` takes from a KubeSchedulerConfiguration besides its profiles and
/// extenders. `None` means the file leaves it to the flag or the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// `clientConnection.kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `clientConnection.qps`.
    pub qps: Option<f64>,
    /// `clientConnection.burst`.
    pub burst: Option<u32>,
    /// `leaderElection.leaderElect`.
    pub leader_elect: Option<bool>,
    /// `leaderElection.leaseDuration`.
    pub lease_duration: Option<Duration>,
    /// `leaderElection.renewDeadline`.
    pub renew_deadline: Option<Duration>,
    /// `leaderElection.retryPeriod`.
    pub retry_period: Option<Duration>,
    /// `leaderElection.resourceName`.
    pub lease_name: Option<String>,
    /// `leaderElection.resourceNamespace`.
    pub lease_namespace: Option<String>,
    /// `percentageOfNodesToScore`.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// `podInitialBackoffSeconds`.
    pub pod_initial_backoff: Option<Duration>,
    /// `podMaxBackoffSeconds`.
    pub pod_max_backoff: Option<Duration>,
    /// v1beta1/v1beta2 `healthzBindAddress` and `metricsBindAddress` (plain HTTP), each once.
    pub plain_http: Vec<String>,
    /// Fields the file sets that Berth does not act on, each with why.
    pub unused: Vec<String>,
}

/// The resource lock Berth holds.
pub const LEASES: &str = "leases";

impl Settings {
    /// The settings of a decoded configuration; `source` names the file in errors.
    pub fn of(config: &KubeSchedulerConfiguration, source: &str) -> Result<Self, PolicyError> {
        let invalid = |path: &str, message: String| PolicyError::Invalid {
            file: source.to_string(),
            path: path.to_string(),
            message,
        };
        let version = ConfigVersion::from_api_version(&config.api_version).ok_or_else(|| {
            invalid(
                "apiVersion",
                format!(
                    "is {:?}; expected one of {}",
                    config.api_version,
                    ConfigVersion::accepted()
                ),
            )
        })?;
        check_fields_of_version(config, version)
            .map_err(|(path, message)| invalid(&path, message))?;
        let mut s = Settings::default();
        if let Some(client) = &config.client_connection {
            s.client(client, &invalid)?;
        }
        if let Some(election) = &config.leader_election {
            s.election(election, &invalid)?;
        }
        if let Some(p) = config.percentage_of_nodes_to_score {
            s.percentage_of_nodes_to_score =
                Some(percentage(p).map_err(|m| invalid("percentageOfNodesToScore", m))?);
        }
        let initial = config.pod_initial_backoff_seconds;
        let max = config.pod_max_backoff_seconds;
        if let Some(i) = initial
            && i <= 0
        {
            return Err(invalid(
                "podInitialBackoffSeconds",
                format!("is {i}; must be greater than 0"),
            ));
        }
        if let Some(m) = max {
            let floor = initial.unwrap_or(1);
            if m < floor {
                return Err(invalid(
                    "podMaxBackoffSeconds",
                    format!("is {m}; must be at least podInitialBackoffSeconds ({floor})"),
                ));
            }
        }
        s.pod_initial_backoff = initial.map(|i| Duration::from_secs(i as u64));
        s.pod_max_backoff = max.map(|m| Duration::from_secs(m as u64));
        for address in [&config.healthz_bind_address, &config.metrics_bind_address]
            .into_iter()
            .flatten()
        {
            if !address.is_empty() && !s.plain_http.contains(address) {
                s.plain_http.push(address.clone());
            }
        }
        if let Some(p) = config.parallelism {
            s.unused.push(format!(
                "parallelism ({p}): Berth sizes its own worker threads to the CPUs it has"
            ));
        }
        if config.enable_profiling == Some(true) {
            s.unused
                .push("enableProfiling: Berth serves no /debug/pprof".to_string());
        }
        if config.enable_contention_profiling == Some(true) {
            s.unused
                .push("enableContentionProfiling: Berth serves no /debug/pprof".to_string());
        }
        if config.delay_cache_until_active == Some(true) {
            s.unused.push(
                "delayCacheUntilActive: Berth fills its cache at start, leader or not, so a \
                 standby takes over at once"
                    .to_string(),
            );
        }
        Ok(s)
    }

    fn client(
        &mut self,
        client: &ClientConnection,
        invalid: &impl Fn(&str, String) -> PolicyError,
    ) -> Result<(), PolicyError> {
        if !client.kubeconfig.is_empty() {
            self.kubeconfig = Some(PathBuf::from(&client.kubeconfig));
        }
        if let Some(qps) = client.qps {
            // Upstream: zero or less means no client-side rate limit.
            self.qps = Some(if qps > 0.0 { qps } else { f64::MAX });
        }
        if let Some(burst) = client.burst {
            self.burst = Some(
                u32::try_from(burst)
                    .ok()
                    .filter(|b| *b >= 1)
                    .ok_or_else(|| {
                        invalid(
                            "clientConnection.burst",
                            format!("is {burst}; expected a whole number from 1 to {}", u32::MAX),
                        )
                    })?,
            );
        }
        if !client.content_type.is_empty() && client.content_type != "application/json" {
            self.unused.push(format!(
                "clientConnection.contentType ({}): Berth sends JSON",
                client.content_type
            ));
        }
        if !client.accept_content_types.is_empty() {
            self.unused.push(format!(
                "clientConnection.acceptContentTypes ({}): Berth asks for JSON",
                client.accept_content_types
            ));
        }
        Ok(())
    }

    fn election(
        &mut self,
        election: &LeaderElection,
        invalid: &impl Fn(&str, String) -> PolicyError,
    ) -> Result<(), PolicyError> {
        self.leader_elect = election.leader_elect;
        let duration = |field: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| {
                    goduration::parse(v).map_err(|m| invalid(&format!("leaderElection.{field}"), m))
                })
                .transpose()
        };
        self.lease_duration = duration("leaseDuration", &election.lease_duration)?;
        self.renew_deadline = duration("renewDeadline", &election.renew_deadline)?;
        self.retry_period = duration("retryPeriod", &election.retry_period)?;
        resource_lock(&election.resource_lock)
            .map_err(|m| invalid("leaderElection.resourceLock", m))?;
        if !election.resource_name.is_empty() {
            self.lease_name = Some(election.resource_name.clone());
        }
        if !election.resource_namespace.is_empty() {
            self.lease_namespace = Some(election.resource_namespace.clone());
        }
        Ok(())
    }
}

/// Checks a leader election resource lock (the file's `resourceLock` or the flag): Berth
/// holds a Lease, as kube-scheduler v1.22 does by default.
pub fn resource_lock(lock: &str) -> Result<(), String> {
    match lock {
        "" | LEASES => Ok(()),
        "endpoints" | "configmaps" | "endpointsleases" | "configmapsleases" => Err(format!(
            "is {lock:?}; Berth holds its leader lock in a coordination.k8s.io Lease only \
             (\"leases\", kube-scheduler v1.22's default; v1.24 removed the others): use leases, \
             after moving the kube-scheduler it replaces to leases first if they are to share a \
             lock"
        )),
        other => Err(format!("is {other:?}; expected \"leases\"")),
    }
}

/// A percentage of nodes to score, 0 (adaptive) to 100.
fn percentage(p: i32) -> Result<u32, String> {
    u32::try_from(p)
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| format!("is {p}; expected 0 (adaptive) to 100"))
}

/// Fields a version's strict decoding would refuse (the decoded type has every version's).
fn check_fields_of_version(
    config: &KubeSchedulerConfiguration,
    version: ConfigVersion,
) -> Result<(), (String, String)> {
    let unknown = |field: &str, versions: &str| {
        Err((
            field.to_string(),
            format!(
                "unknown field in {}: {field} is in {versions} only",
                version.api_version()
            ),
        ))
    };
    if version >= ConfigVersion::V1beta3 {
        if config.healthz_bind_address.is_some() {
            return unknown(
                "healthzBindAddress",
                "v1beta1 and v1beta2 (later, plain HTTP is the --port and --address flags)",
            );
        }
        if config.metrics_bind_address.is_some() {
            return unknown(
                "metricsBindAddress",
                "v1beta1 and v1beta2 (later, plain HTTP is the --port and --address flags)",
            );
        }
    }
    if version != ConfigVersion::V1 && config.delay_cache_until_active.is_some() {
        return unknown("delayCacheUntilActive", "v1");
    }
    for (i, profile) in config.profiles.iter().enumerate() {
        if version.has_v122_plugins() && profile.percentage_of_nodes_to_score.is_some() {
            return unknown(
                &format!("profiles[{i}].percentageOfNodesToScore"),
                "v1beta3 and v1",
            );
        }
        if let Some(p) = profile.percentage_of_nodes_to_score {
            percentage(p).map_err(|m| (format!("profiles[{i}].percentageOfNodesToScore"), m))?;
        }
        let multi_point = profile
            .plugins
            .as_ref()
            .is_some_and(|p| !p.multi_point.is_empty() || !p.pre_enqueue.is_empty());
        if version.has_v122_plugins() && multi_point {
            return unknown(
                &format!("profiles[{i}].plugins.multiPoint"),
                "v1beta3 and v1 (preEnqueue: v1)",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(yaml: &str) -> Result<Settings, String> {
        let config: KubeSchedulerConfiguration =
            serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
        Settings::of(&config, "c.yaml").map_err(|e| e.to_string())
    }

    #[test]
    fn component_settings_of_every_version() {
        let v1beta2 = "apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 20
  burst: 30
leaderElection:
  leaderElect: true
  leaseDuration: 20s
  renewDeadline: 15s
  retryPeriod: 3s
  resourceLock: leases
  resourceName: sched
  resourceNamespace: ops
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
healthzBindAddress: 0.0.0.0:10251
metricsBindAddress: 0.0.0.0:10251
";
        let s = settings(v1beta2).unwrap();
        assert_eq!(
            s.kubeconfig,
            Some(PathBuf::from("/etc/kubernetes/scheduler.conf"))
        );
        assert_eq!((s.qps, s.burst), (Some(20.0), Some(30)));
        assert_eq!(s.leader_elect, Some(true));
        assert_eq!(s.lease_duration, Some(Duration::from_secs(20)));
        assert_eq!(s.renew_deadline, Some(Duration::from_secs(15)));
        assert_eq!(s.retry_period, Some(Duration::from_secs(3)));
        assert_eq!(s.lease_name.as_deref(), Some("sched"));
        assert_eq!(s.lease_namespace.as_deref(), Some("ops"));
        assert_eq!(s.percentage_of_nodes_to_score, Some(40));
        assert_eq!(s.pod_initial_backoff, Some(Duration::from_secs(2)));
        assert_eq!(s.pod_max_backoff, Some(Duration::from_secs(20)));
        assert_eq!(s.plain_http, ["0.0.0.0:10251"]);
        assert!(s.unused.is_empty(), "{:?}", s.unused);
        for version in ["v1beta1", "v1beta3", "v1"] {
            let yaml = format!(
                "apiVersion: kubescheduler.config.k8s.io/{version}\nkind: KubeSchedulerConfiguration\n\
                 clientConnection: {{qps: 5}}\npercentageOfNodesToScore: 0\n"
            );
            let s = settings(&yaml).unwrap();
            assert_eq!(s.qps, Some(5.0), "{version}");
            assert_eq!(s.percentage_of_nodes_to_score, Some(0), "{version}");
        }
    }

    #[test]
    fn fields_berth_does_not_act_on_are_named() {
        let s = settings(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 32
enableProfiling: true
enableContentionProfiling: false
delayCacheUntilActive: true
clientConnection:
  contentType: application/vnd.kubernetes.protobuf
  acceptContentTypes: application/vnd.kubernetes.protobuf,application/json
",
        )
        .unwrap();
        let text = s.unused.join("\n");
        for field in [
            "parallelism (32)",
            "enableProfiling",
            "delayCacheUntilActive",
            "clientConnection.contentType",
            "clientConnection.acceptContentTypes",
        ] {
            assert!(text.contains(field), "{field} not named in {text}");
        }
        assert!(!text.contains("enableContentionProfiling"), "{text}");
    }

    #[test]
    fn bad_settings_name_the_field_and_what_is_accepted() {
        let head = "kind: KubeSchedulerConfiguration\napiVersion: kubescheduler.config.k8s.io/";
        let cases = [
            (
                "v1beta2\nleaderElection: {resourceLock: endpointsleases}",
                "leaderElection.resourceLock: is \"endpointsleases\"",
            ),
            (
                "v1\nleaderElection: {resourceLock: leases, leaseDuration: 15}",
                "leaderElection.leaseDuration",
            ),
            (
                "v1\npercentageOfNodesToScore: 101",
                "percentageOfNodesToScore: is 101; expected 0 (adaptive) to 100",
            ),
            (
                "v1\npodInitialBackoffSeconds: 0",
                "podInitialBackoffSeconds: is 0",
            ),
            (
                "v1\npodInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4",
                "at least podInitialBackoffSeconds (5)",
            ),
            (
                "v1\nclientConnection: {burst: 0}",
                "clientConnection.burst: is 0",
            ),
            (
                "v1\nhealthzBindAddress: 0.0.0.0:10251",
                "healthzBindAddress is in v1beta1 and v1beta2 (later",
            ),
            (
                "v1beta3\nmetricsBindAddress: 0.0.0.0:10251",
                "metricsBindAddress is in v1beta1 and v1beta2 (later",
            ),
            (
                "v1beta3\ndelayCacheUntilActive: true",
                "delayCacheUntilActive is in v1 only",
            ),
            (
                "v1beta2\nprofiles: [{percentageOfNodesToScore: 5}]",
                "profiles[0].percentageOfNodesToScore is in v1beta3 and v1 only",
            ),
            (
                "v1beta1\nprofiles: [{plugins: {multiPoint: {enabled: [{name: NodeName}]}}}]",
                "profiles[0].plugins.multiPoint",
            ),
            (
                "v2\n",
                "expected one of kubescheduler.config.k8s.io/v1beta1",
            ),
        ];
        for (rest, want) in cases {
            let err = settings(&format!("{head}{rest}")).expect_err(rest);
            assert!(err.contains(want), "{rest}: {err}");
        }
    }
}
