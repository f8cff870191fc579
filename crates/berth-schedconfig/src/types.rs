//! The part of `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration that Berth writes
//! and reads, field names as upstream's JSON tags (k8s.io/kube-scheduler/config/v1). Unknown
//! fields are refused at every level, as kube-scheduler's strict decoding does.

use serde::{Deserialize, Serialize};

/// The `apiVersion` Berth writes (it reads [`crate::component::ConfigVersion`]'s four).
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The `kind`.
pub const KIND: &str = "KubeSchedulerConfiguration";
/// The scheduler name of a profile that gives none (upstream's `v1.DefaultSchedulerName`).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// A KubeSchedulerConfiguration: every field of v1beta1 to v1 (which fields a version may set
/// is checked after decoding, [`crate::component`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    /// `kubescheduler.config.k8s.io/v1` (or v1beta1, v1beta2, v1beta3 when read).
    pub api_version: String,
    /// `KubeSchedulerConfiguration`.
    pub kind: String,
    /// Upstream's parallelism of filtering and scoring (Berth sizes its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Leader election.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_election: Option<LeaderElection>,
    /// How to reach the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_connection: Option<ClientConnection>,
    /// v1beta1 and v1beta2: where /healthz is served over plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthz_bind_address: Option<String>,
    /// v1beta1 and v1beta2: where /metrics is served over plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_bind_address: Option<String>,
    /// Upstream's /debug/pprof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_profiling: Option<bool>,
    /// Upstream's lock contention profiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_contention_profiling: Option<bool>,
    /// Percentage of nodes to find feasible before scoring (0 = adaptive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Backoff after a pod's first failed attempt, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_initial_backoff_seconds: Option<i64>,
    /// Longest backoff, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_max_backoff_seconds: Option<i64>,
    /// v1 (kube-scheduler v1.33 and later): fill the cache only once leading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cache_until_active: Option<bool>,
    /// Scheduling profiles; upstream runs one `default-scheduler` profile when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
    /// Extenders, shared by every profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extenders: Vec<Extender>,
}

/// componentbaseconfig's LeaderElectionConfiguration; durations are Go durations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct LeaderElection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_elect: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_deadline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_period: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_lock: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_namespace: String,
}

/// componentbaseconfig's ClientConnectionConfiguration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ClientConnection {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubeconfig: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub accept_content_types: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
}

/// One scheduling profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    /// The `spec.schedulerName` this profile serves (default `default-scheduler`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// v1beta3 and v1: this profile's percentage of nodes to score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Plugins enabled and disabled per extension point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Plugins>,
    /// Plugin arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin_config: Vec<PluginConfig>,
}

/// Plugins per extension point; `multiPoint` enables a plugin at every point it implements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Plugins {
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub pre_enqueue: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub queue_sort: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub pre_filter: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub filter: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub post_filter: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub pre_score: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub score: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub reserve: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub permit: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub pre_bind: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub bind: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub post_bind: PluginSet,
    #[serde(default, skip_serializing_if = "PluginSet::is_empty")]
    pub multi_point: PluginSet,
}

impl Plugins {
    /// The set of one extension point.
    pub fn at(&self, point: crate::plugins::Point) -> &PluginSet {
        use crate::plugins::Point::*;
        match point {
            PreEnqueue => &self.pre_enqueue,
            QueueSort => &self.queue_sort,
            PreFilter => &self.pre_filter,
            Filter => &self.filter,
            PostFilter => &self.post_filter,
            PreScore => &self.pre_score,
            Score => &self.score,
            Reserve => &self.reserve,
            Permit => &self.permit,
            PreBind => &self.pre_bind,
            Bind => &self.bind,
            PostBind => &self.post_bind,
        }
    }

    /// The set of one extension point, to change.
    pub fn at_mut(&mut self, point: crate::plugins::Point) -> &mut PluginSet {
        use crate::plugins::Point::*;
        match point {
            PreEnqueue => &mut self.pre_enqueue,
            QueueSort => &mut self.queue_sort,
            PreFilter => &mut self.pre_filter,
            Filter => &mut self.filter,
            PostFilter => &mut self.post_filter,
            PreScore => &mut self.pre_score,
            Score => &mut self.score,
            Reserve => &mut self.reserve,
            Permit => &mut self.permit,
            PreBind => &mut self.pre_bind,
            Bind => &mut self.bind,
            PostBind => &mut self.post_bind,
        }
    }
}

/// Plugins enabled and disabled at one extension point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSet {
    /// Enabled after the defaults that stay (in this order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<Plugin>,
    /// Default plugins turned off; `*` turns them all off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<Plugin>,
}

impl PluginSet {
    /// Nothing enabled or disabled.
    pub fn is_empty(&self) -> bool {
        self.enabled.is_empty() && self.disabled.is_empty()
    }
}

/// A plugin named in a [`PluginSet`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plugin {
    /// The plugin's name.
    pub name: String,
    /// Score weight (score and multiPoint only; 0 or absent means 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// A plugin's arguments; `args` is decoded by the plugin's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin's name.
    pub name: String,
    /// Its `...Args` object (apiVersion and kind may be left out).
    #[serde(default)]
    pub args: serde_json::Value,
}

/// A scheduler extender (upstream's `Extender`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Extender {
    pub url_prefix: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filter_verb: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preempt_verb: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prioritize_verb: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bind_verb: String,
    #[serde(rename = "enableHTTPS", default, skip_serializing_if = "is_false")]
    pub enable_https: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// A Go duration (`5s`); absent or zero means 5s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub node_cache_capable: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ManagedResource>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignorable: bool,
}

/// An extender's TLS settings; the `*Data` fields are base64, as Go encodes `[]byte`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ExtenderTlsConfig {
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_file: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_data: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_data: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_data: String,
}

/// An extended resource an extender manages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedResource {
    /// The resource name.
    pub name: String,
    /// Whether NodeResourcesFit leaves it to the extender.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignored_by_scheduler: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}
