//! The effective configuration a Policy file resolves to.

use std::time::Duration;

use serde::{Serialize, Serializer};

/// The configuration the scheduler runs with, after defaults, aliases and validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePolicy {
    /// Predicates in evaluation order, mandatory ones included.
    pub predicates: Vec<PredicateConfig>,
    /// Priorities in file order.
    pub priorities: Vec<PriorityConfig>,
    /// Extenders in call order: ignorable extenders after the others, as kube-scheduler does.
    pub extenders: Vec<Extender>,
    /// Weight of the implicit preferred affinity term behind every required one (0..=100).
    pub hard_pod_affinity_symmetric_weight: i32,
    /// Whether a node keeps being filtered after its first failing predicate.
    pub always_check_all_predicates: bool,
    /// Things the file does that work but deserve attention, each naming where.
    pub warnings: Vec<String>,
    /// Which parts came from defaults rather than from the file.
    pub defaulted: Defaulted,
}

/// Flags telling which parts of an [`EffectivePolicy`] the file did not set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Defaulted {
    /// `predicates` was absent or null: the default provider's set is used.
    pub predicates: bool,
    /// `priorities` was absent or null: the default provider's set is used.
    pub priorities: bool,
    /// `hardPodAffinitySymmetricWeight` was absent or 0: the default 1 is used.
    pub hard_pod_affinity_symmetric_weight: bool,
    /// `alwaysCheckAllPredicates` was absent.
    pub always_check_all_predicates: bool,
}

/// One predicate (filter) as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PredicateConfig {
    /// The name in the file (custom names are kept, aliases are not resolved here).
    pub name: String,
    /// What the predicate checks.
    pub kind: PredicateKind,
}

/// What a predicate checks; the variant fixes its slot in the evaluation order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum PredicateKind {
    /// Node ready, not out of disk, network available, schedulable (v1.12 meaning).
    CheckNodeCondition,
    /// Node not unschedulable unless the pod tolerates it.
    CheckNodeUnschedulable,
    /// PodFitsResources, HostName, PodFitsHostPorts and MatchNodeSelector together.
    GeneralPredicates,
    /// The pod's `spec.nodeName`, if set, is this node.
    HostName,
    /// The pod's host ports are free on the node.
    PodFitsHostPorts,
    /// The pod's node selector and required node affinity match.
    MatchNodeSelector,
    /// The node matches the namespace's node selector (Berth extension).
    MatchNamespaceNodeSelector {
        /// Selector (`k=v,k2=v2`) used for namespaces without their own; empty for none.
        default_node_selector: String,
    },
    /// The node has room for the pod's requests.
    PodFitsResources,
    /// The node has a pod IP address left (Berth extension).
    CheckPodCIDRCapacity {
        /// Where a node's pod IP capacity is read.
        source: PodIpSource,
        /// What a node without that source gets (unused for [`PodIpSource::PodCidr`]).
        when_missing: WhenCapacityMissing,
    },
    /// No conflicting disk volume is mounted on the node.
    NoDiskConflict,
    /// The pod tolerates the node's NoSchedule and NoExecute taints.
    PodToleratesNodeTaints,
    /// The pod tolerates the node's NoExecute taints (v1.12 meaning).
    PodToleratesNodeNoExecuteTaints,
    /// Guarded taints may be tolerated only by the namespaces allowed to (Berth extension).
    CheckTolerationRestriction {
        /// The guarded taints, in file order.
        guards: Vec<TaintGuard>,
    },
    /// Nodes whose circuit breaker is open are skipped (Berth extension).
    CheckNodeCircuitBreaker(CircuitBreakerArgs),
    /// Quarantined workloads' pods are kept off nodes (Berth extension).
    CheckWorkloadQuarantine(WorkloadQuarantineArgs),
    /// The listed label keys are all present (or all absent) on the node.
    CheckNodeLabelPresence {
        /// Label keys to look for.
        labels: Vec<String>,
        /// True: all must exist; false: none may exist.
        presence: bool,
    },
    /// The node carries the same values for these labels as the pod's service peers.
    CheckServiceAffinity {
        /// Label keys that identify node groups.
        labels: Vec<String>,
    },
    /// AWS EBS attach limit.
    MaxEBSVolumeCount,
    /// GCE PD attach limit.
    MaxGCEPDVolumeCount,
    /// CSI attach limits per driver.
    MaxCSIVolumeCountPred,
    /// Azure Disk attach limit.
    MaxAzureDiskVolumeCount,
    /// Cinder attach limit.
    MaxCinderVolumeCount,
    /// The pod's persistent volume claims can be bound on the node.
    CheckVolumeBinding,
    /// The pod's bound volumes are in the node's zone.
    NoVolumeZoneConflict,
    /// BestEffort pods avoid nodes under memory pressure (v1.12 meaning).
    CheckNodeMemoryPressure,
    /// The node is not under PID pressure (v1.12 meaning).
    CheckNodePIDPressure,
    /// The node is not under disk pressure (v1.12 meaning).
    CheckNodeDiskPressure,
    /// The pod's DoNotSchedule topology spread constraints hold.
    EvenPodsSpread,
    /// Required inter-pod affinity and anti-affinity hold.
    MatchInterPodAffinity,
    /// A WASM plugin's filter (Berth extension); runs after the built-in predicates.
    Wasm(WasmPlugin),
}

impl PredicateKind {
    /// The slot in the fixed evaluation order (0 runs first).
    pub fn order(&self) -> u32 {
        match self {
            Self::CheckNodeCondition => 0,
            Self::CheckNodeUnschedulable => 1,
            Self::GeneralPredicates => 2,
            Self::HostName => 3,
            Self::PodFitsHostPorts => 4,
            Self::MatchNodeSelector => 5,
            Self::MatchNamespaceNodeSelector { .. } => 6,
            Self::PodFitsResources => 7,
            Self::CheckPodCIDRCapacity { .. } => 8,
            Self::NoDiskConflict => 9,
            Self::PodToleratesNodeTaints => 10,
            Self::PodToleratesNodeNoExecuteTaints => 11,
            Self::CheckTolerationRestriction { .. } => 12,
            Self::CheckNodeCircuitBreaker(_) => 13,
            Self::CheckWorkloadQuarantine(_) => 14,
            Self::CheckNodeLabelPresence { .. } => 15,
            Self::CheckServiceAffinity { .. } => 16,
            Self::MaxEBSVolumeCount => 17,
            Self::MaxGCEPDVolumeCount => 18,
            Self::MaxCSIVolumeCountPred => 19,
            Self::MaxAzureDiskVolumeCount => 20,
            Self::MaxCinderVolumeCount => 21,
            Self::CheckVolumeBinding => 22,
            Self::NoVolumeZoneConflict => 23,
            Self::CheckNodeMemoryPressure => 24,
            Self::CheckNodePIDPressure => 25,
            Self::CheckNodeDiskPressure => 26,
            Self::EvenPodsSpread => 27,
            Self::MatchInterPodAffinity => 28,
            Self::Wasm(_) => 29,
        }
    }

    /// The built-in predicate name of this kind's slot.
    pub fn slot_name(&self) -> &'static str {
        match self {
            Self::CheckNodeCondition => "CheckNodeCondition",
            Self::CheckNodeUnschedulable => "CheckNodeUnschedulable",
            Self::GeneralPredicates => "GeneralPredicates",
            Self::HostName => "HostName",
            Self::PodFitsHostPorts => "PodFitsHostPorts",
            Self::MatchNodeSelector => "MatchNodeSelector",
            Self::MatchNamespaceNodeSelector { .. } => "MatchNamespaceNodeSelector",
            Self::PodFitsResources => "PodFitsResources",
            Self::CheckPodCIDRCapacity { .. } => "CheckPodCIDRCapacity",
            Self::NoDiskConflict => "NoDiskConflict",
            Self::PodToleratesNodeTaints => "PodToleratesNodeTaints",
            Self::PodToleratesNodeNoExecuteTaints => "PodToleratesNodeNoExecuteTaints",
            Self::CheckTolerationRestriction { .. } => "CheckTolerationRestriction",
            Self::CheckNodeCircuitBreaker(_) => "CheckNodeCircuitBreaker",
            Self::CheckWorkloadQuarantine(_) => "CheckWorkloadQuarantine",
            Self::CheckNodeLabelPresence { .. } => "CheckNodeLabelPresence",
            Self::CheckServiceAffinity { .. } => "CheckServiceAffinity",
            Self::MaxEBSVolumeCount => "MaxEBSVolumeCount",
            Self::MaxGCEPDVolumeCount => "MaxGCEPDVolumeCount",
            Self::MaxCSIVolumeCountPred => "MaxCSIVolumeCountPred",
            Self::MaxAzureDiskVolumeCount => "MaxAzureDiskVolumeCount",
            Self::MaxCinderVolumeCount => "MaxCinderVolumeCount",
            Self::CheckVolumeBinding => "CheckVolumeBinding",
            Self::NoVolumeZoneConflict => "NoVolumeZoneConflict",
            Self::CheckNodeMemoryPressure => "CheckNodeMemoryPressure",
            Self::CheckNodePIDPressure => "CheckNodePIDPressure",
            Self::CheckNodeDiskPressure => "CheckNodeDiskPressure",
            Self::EvenPodsSpread => "EvenPodsSpread",
            Self::MatchInterPodAffinity => "MatchInterPodAffinity",
            Self::Wasm(_) => "WasmPlugin",
        }
    }
}

/// Where `CheckPodCIDRCapacity` reads a node's pod IP capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "from", content = "name", rename_all = "camelCase")]
pub enum PodIpSource {
    /// The usable addresses of `spec.podCIDRs` (kubenet, host-local IPAM); a node without a
    /// pod CIDR is not limited.
    PodCidr,
    /// A node label whose value is the count, e.g. `example.com/pod-ips`.
    NodeLabel(String),
    /// A node annotation whose value is the count.
    NodeAnnotation(String),
    /// A resource of the node's `status.allocatable`, e.g. an IPAM's extended resource.
    Resource(String),
}

/// What `CheckPodCIDRCapacity` does with a node that lacks the configured capacity source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WhenCapacityMissing {
    /// The node is rejected with a reason naming the source (the default: a node whose IPAM
    /// has not published its capacity yet is not trusted with pods).
    Reject,
    /// The node's pod CIDRs count instead, as without an argument.
    PodCIDR,
}

impl WhenCapacityMissing {
    /// The spelling in the Policy file.
    pub fn as_str(self) -> &'static str {
        match self {
            WhenCapacityMissing::Reject => "Reject",
            WhenCapacityMissing::PodCIDR => "PodCIDR",
        }
    }
}

/// `CheckNodeCircuitBreaker`'s thresholds (every field has a default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CircuitBreakerArgs {
    /// Node-attributed start failures within the window that open a node's breaker.
    pub failure_threshold: u32,
    /// Distinct workloads those failures must come from.
    pub min_workloads: u32,
    /// Seconds over which failures are counted.
    pub window_seconds: u32,
    /// Seconds an open breaker keeps pods off before letting a probe through.
    pub cool_down_seconds: u32,
    /// Seconds a placed pod may wait for its sandbox before that counts as a failure.
    pub start_timeout_seconds: u32,
}

impl CircuitBreakerArgs {
    /// The thresholds of an entry without an argument.
    pub const DEFAULT: CircuitBreakerArgs = CircuitBreakerArgs {
        failure_threshold: 3,
        min_workloads: 2,
        window_seconds: 600,
        cool_down_seconds: 300,
        start_timeout_seconds: 120,
    };
}

/// `CheckWorkloadQuarantine`'s thresholds (every field but the label has a default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadQuarantineArgs {
    /// Distinct nodes, each failing after the last, that quarantine a workload.
    pub node_threshold: u32,
    /// Seconds over which those nodes are counted.
    pub window_seconds: u32,
    /// Seconds before a node goes NotReady in which a pod placed there makes its workload
    /// a suspect.
    pub not_ready_within_seconds: u32,
    /// Seconds a quarantine lasts unless released.
    pub cool_down_seconds: u32,
    /// Nodes labelled `key` (or `key=value`) still take quarantined pods; None: no node does.
    pub quarantine_node_label: Option<(String, Option<String>)>,
}

impl WorkloadQuarantineArgs {
    /// The thresholds of an entry without an argument.
    pub const DEFAULT: WorkloadQuarantineArgs = WorkloadQuarantineArgs {
        node_threshold: 3,
        window_seconds: 3_600,
        not_ready_within_seconds: 600,
        cool_down_seconds: 3_600,
        quarantine_node_label: None,
    };
}

/// A taint `CheckTolerationRestriction` guards, with the namespaces the policy allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintGuard {
    /// The taint as written, `key[=value][:effect]`.
    pub taint: String,
    /// Taint key.
    pub key: String,
    /// Taint value; None guards every value of the key.
    pub value: Option<String>,
    /// Taint effect; None guards both NoSchedule and NoExecute.
    pub effect: Option<GuardedEffect>,
    /// Namespaces that may tolerate the taint (others need the namespace annotation).
    pub namespaces: Vec<String>,
}

/// A taint effect that keeps pods off a node, the only ones worth guarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GuardedEffect {
    /// `NoSchedule`.
    NoSchedule,
    /// `NoExecute`.
    NoExecute,
}

/// One priority (scoring function) with its weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityConfig {
    /// The name in the file (custom names are kept, aliases are not resolved here).
    pub name: String,
    /// Multiplier for the 0..=100 node score; always > 0.
    pub weight: i64,
    /// What the priority scores.
    pub kind: PriorityKind,
}

/// What a priority scores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum PriorityKind {
    /// Favors nodes with more free cpu and memory.
    LeastRequested,
    /// Favors nodes with less free cpu and memory.
    MostRequested,
    /// Favors nodes whose cpu and memory use are balanced.
    BalancedResourceAllocation,
    /// Spreads pods of the same Service / controller across nodes and zones.
    SelectorSpread,
    /// Preferred inter-pod affinity and anti-affinity.
    InterPodAffinity,
    /// Preferred node affinity.
    NodeAffinity,
    /// Fewer untolerated PreferNoSchedule taints score higher.
    TaintToleration,
    /// Nodes that already have the pod's images score higher.
    ImageLocality,
    /// Honors the node annotation `scheduler.alpha.kubernetes.io/preferAvoidPods`.
    NodePreferAvoidPods,
    /// Every node scores the same.
    EqualPriority,
    /// Piecewise-linear score of the requested-to-capacity ratio.
    RequestedToCapacityRatio {
        /// Points of the score function, utilization strictly increasing.
        shape: Vec<ShapePoint>,
        /// Resources and their weights in the mean.
        resources: Vec<ResourceWeight>,
    },
    /// Spreads a Service's pods across the values of a node label.
    ServiceAntiAffinity {
        /// The node label whose values form the groups.
        label: String,
    },
    /// Favors nodes that have (or lack) a label.
    NodeLabel {
        /// The node label key.
        label: String,
        /// True: having the label scores; false: lacking it scores.
        presence: bool,
    },
    /// The pod's ScheduleAnyway topology spread constraints.
    EvenPodsSpread,
    /// A WASM plugin's score (Berth extension).
    Wasm(WasmPlugin),
}

impl PriorityKind {
    /// A short name of the kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::LeastRequested => "LeastRequested",
            Self::MostRequested => "MostRequested",
            Self::BalancedResourceAllocation => "BalancedResourceAllocation",
            Self::SelectorSpread => "SelectorSpread",
            Self::InterPodAffinity => "InterPodAffinity",
            Self::NodeAffinity => "NodeAffinity",
            Self::TaintToleration => "TaintToleration",
            Self::ImageLocality => "ImageLocality",
            Self::NodePreferAvoidPods => "NodePreferAvoidPods",
            Self::EqualPriority => "EqualPriority",
            Self::RequestedToCapacityRatio { .. } => "RequestedToCapacityRatio",
            Self::ServiceAntiAffinity { .. } => "ServiceAntiAffinity",
            Self::NodeLabel { .. } => "NodeLabel",
            Self::EvenPodsSpread => "EvenPodsSpread",
            Self::Wasm(_) => "WasmPlugin",
        }
    }
}

/// A WASM plugin named by a predicate or priority (`argument.wasm`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmPlugin {
    /// The module file, relative to the plugins directory (no absolute path, no `..`).
    pub module: String,
    /// The plugin's configuration as compact JSON text, handed to the plugin when it loads.
    pub config: String,
    /// What a failing call (trap, timeout, memory limit, guest error) means for a node.
    pub failure_policy: FailurePolicy,
    /// Wall-clock bound of one guest call, in milliseconds.
    pub timeout_millis: u64,
    /// Cap on one instance's linear memory, in MiB.
    pub memory_limit_mib: u64,
}

/// What a failing plugin call means for the nodes it was asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FailurePolicy {
    /// The nodes are rejected (filters) or the cycle keeps the failure visible (scores get 0).
    Fail,
    /// The plugin counts as passing (filters) or scoring 0 (scores); the failure is counted.
    Ignore,
}

impl FailurePolicy {
    /// The spelling in the Policy file.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// A point of the requested-to-capacity-ratio score function, as in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ShapePoint {
    /// Utilization in percent, 0..=100.
    pub utilization: i64,
    /// Score at that utilization, 0..=10.
    pub score: i64,
}

/// A resource and its weight in the requested-to-capacity-ratio mean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceWeight {
    /// Resource name, e.g. `cpu` or `example.com/gpu`.
    pub name: String,
    /// Weight, >= 1.
    pub weight: i64,
}

/// A scheduler extender reached over HTTP(S).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extender {
    /// URL prefix the verbs are appended to.
    pub url_prefix: String,
    /// Verb of the filter call; `None` when the extender does not filter.
    pub filter_verb: Option<String>,
    /// Verb of the preempt call; `None` when not supported.
    pub preempt_verb: Option<String>,
    /// Verb of the prioritize call; `None` when the extender does not score.
    pub prioritize_verb: Option<String>,
    /// Verb of the bind call; `None` when the extender does not bind.
    pub bind_verb: Option<String>,
    /// Multiplier for the extender's 0..=10 scores (> 0 when it prioritizes).
    pub weight: i64,
    /// Whether to use https.
    pub enable_https: bool,
    /// TLS settings, when given.
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Timeout of one call; 0 in the file means the default of 5 s.
    #[serde(serialize_with = "serialize_nanos")]
    pub http_timeout: Duration,
    /// Whether the extender caches node information itself.
    pub node_cache_capable: bool,
    /// Extended resources the extender manages.
    pub managed_resources: Vec<ManagedResource>,
    /// Whether scheduling goes on when the extender fails or is unreachable.
    pub ignorable: bool,
}

/// TLS settings of an extender.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderTlsConfig {
    /// Skip server certificate verification (testing only).
    pub insecure: bool,
    /// Server name for SNI and certificate checks; empty for the URL's host.
    pub server_name: String,
    /// Client certificate file.
    pub cert_file: String,
    /// Client key file.
    pub key_file: String,
    /// Trusted root certificates file.
    pub ca_file: String,
    /// PEM client certificate; takes precedence over `cert_file`.
    #[serde(serialize_with = "serialize_byte_count")]
    pub cert_data: Vec<u8>,
    /// PEM client key; takes precedence over `key_file`.
    #[serde(serialize_with = "serialize_byte_count")]
    pub key_data: Vec<u8>,
    /// PEM root certificates; take precedence over `ca_file`.
    #[serde(serialize_with = "serialize_byte_count")]
    pub ca_data: Vec<u8>,
}

/// An extended resource managed by an extender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResource {
    /// Extended resource name, e.g. `example.com/foo`.
    pub name: String,
    /// Whether the scheduler's own resource fit check skips this resource.
    pub ignored_by_scheduler: bool,
}

/// Durations go out as integer nanoseconds, the unit of the Policy file.
fn serialize_nanos<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_nanos())
}

/// Key material is never echoed back; its size is enough to see that it was read.
fn serialize_byte_count<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("<{} bytes>", bytes.len()))
}
