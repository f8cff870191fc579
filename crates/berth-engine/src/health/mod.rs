//! Berth's protections that learn from history: the node circuit breaker and crash-loop
//! containment. Each is a tracker fed with what kubelets reported (pod starts, node readiness,
//! summarised by the caller from the API objects) and a clock in seconds since the epoch; each
//! publishes a small view ([`state`]) that the [`crate::Cluster`] holds and a filter rule reads.
//!
//! The trackers are pure: the daemon feeds them from its watches as events arrive, and
//! `simulate` (or a new leader) feeds them every object of a snapshot at once, sorted by time,
//! which reaches the same state as having watched it happen (see [`breaker::CircuitBreakers::rebuild`]).

pub mod breaker;
pub mod quarantine;
pub mod state;

/// One assigned pod's start as its kubelet reported it, summarised from the pod status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodStart {
    /// The pod's uid.
    pub uid: String,
    /// `namespace/name`, for messages.
    pub key: String,
    /// The node the pod is bound (or assumed) to.
    pub node: String,
    /// The workload the pod belongs to: its controller owner, when it has one.
    pub owner: Option<Workload>,
    /// When the pod was placed on the node (seconds since the epoch).
    pub placed_at: i64,
    /// How far its start got.
    pub state: StartState,
}

/// A controller that owns pods: what a failure or a quarantine is charged to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Workload {
    /// Owner kind, e.g. `ReplicaSet`.
    pub kind: String,
    /// Owner (and pod) namespace.
    pub namespace: String,
    /// Owner name.
    pub name: String,
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// How far a pod's start got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartState {
    /// Not started yet. `sandbox_ready` is false while kubelet reports the pod sandbox (its
    /// network namespace and IP) not created: the `PodReadyToStartContainers` condition False,
    /// or, from kubelets without that condition, every container still `ContainerCreating`.
    Waiting {
        /// Whether the sandbox is up.
        sandbox_ready: bool,
    },
    /// A container has run (running now, or terminated after starting) at `at`.
    Started {
        /// When the first container started.
        at: i64,
    },
    /// Kubelet reported a start failure.
    Failed {
        /// When it was reported (the transition time of the condition that shows it).
        at: i64,
        /// Kubelet's reason, e.g. `CreateContainerError`, `ErrImagePull`, `OutOfcpu`.
        reason: String,
    },
}

/// Kubelet reasons that say the node could not start the pod, whatever its spec: the
/// container runtime failing to create or run containers, or admission refusing a pod the
/// scheduler thought fitted. Every other reason (image pulls, configuration errors, crash
/// loops) is the workload's own and never counts against a node.
pub const NODE_REASONS: &[&str] = &[
    "CreateContainerError",
    "RunContainerError",
    "CreatePodSandboxError",
    "ContainerCannotRun",
    "KillPodSandboxError",
    "UnexpectedAdmissionError",
    "OutOfcpu",
    "OutOfmemory",
    "OutOfpods",
    "OutOfephemeral-storage",
];

/// Whether kubelet's `reason` puts the blame on the node rather than on the workload.
pub fn is_node_reason(reason: &str) -> bool {
    NODE_REASONS.contains(&reason)
}

/// The reason given to a pod whose sandbox was not created in time.
pub fn sandbox_timeout_reason(seconds: i64) -> String {
    format!("sandbox not created after {seconds}s")
}

/// The trackers a policy needs, by their thresholds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trackers {
    /// The circuit breaker's, when the policy has `CheckNodeCircuitBreaker`.
    pub breaker: Option<breaker::BreakerConfig>,
    /// Containment's, when the policy has `CheckWorkloadQuarantine`.
    pub quarantine: Option<quarantine::QuarantineConfig>,
}

impl Trackers {
    /// Whether the policy needs any tracker.
    pub fn any(&self) -> bool {
        self.breaker.is_some() || self.quarantine.is_some()
    }
}

/// The trackers `policy` needs (the policy crate allows one entry of each protection).
pub fn trackers_of(policy: &berth_policy::EffectivePolicy) -> Trackers {
    use berth_policy::PredicateKind as P;
    let mut found = Trackers::default();
    for predicate in &policy.predicates {
        match &predicate.kind {
            P::CheckNodeCircuitBreaker(a) => {
                found.breaker = Some(breaker::BreakerConfig {
                    failure_threshold: a.failure_threshold as usize,
                    min_workloads: a.min_workloads as usize,
                    window: a.window_seconds.into(),
                    cool_down: a.cool_down_seconds.into(),
                    start_timeout: a.start_timeout_seconds.into(),
                })
            }
            P::CheckWorkloadQuarantine(a) => {
                found.quarantine = Some(quarantine::QuarantineConfig {
                    node_threshold: a.node_threshold as usize,
                    window: a.window_seconds.into(),
                    within: a.not_ready_within_seconds.into(),
                    cool_down: a.cool_down_seconds.into(),
                })
            }
            _ => {}
        }
    }
    found
}

/// The workload a pod is charged to: its controller owner.
pub fn workload_of(pod: &crate::model::Pod) -> Option<Workload> {
    pod.meta
        .owners
        .iter()
        .find(|o| o.controller)
        .map(|o| Workload {
            kind: o.kind.clone(),
            namespace: pod.meta.namespace.clone(),
            name: o.name.clone(),
        })
}

/// `seconds` since the epoch as an RFC 3339 UTC time, for messages.
pub fn format_utc(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        for (seconds, want) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_795_000_000, "2026-11-18T11:06:40Z"),
            (-1, "1969-12-31T23:59:59Z"),
        ] {
            assert_eq!(format_utc(seconds), want, "{seconds}");
        }
    }
}
