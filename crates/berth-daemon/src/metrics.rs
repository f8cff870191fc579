//! Prometheus metrics, with upstream kube-scheduler's names where the meaning matches.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Outcome of a scheduling attempt, upstream's `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// The pod was assumed onto a node.
    Scheduled,
    /// The pod fits no node.
    Unschedulable,
    /// Something else went wrong.
    Error,
}

impl AttemptResult {
    fn label(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }
}

/// A phase of the scheduling cycle, timed as a whole (per-rule timing per node would cost
/// more than the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Compiling the pod (selectors, requests, affinity terms).
    Compile,
    /// Filtering and scoring the nodes.
    Algorithm,
    /// Counting the pod on its node in the cache.
    Assume,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
    profile: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabels {
    table: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BindLabels {
    extension_point: &'static str,
    status: &'static str,
    profile: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    plugin: String,
    extension_point: &'static str,
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProtectionLabels {
    predicate: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExtenderLabels {
    extender: String,
    verb: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    object: &'static str,
    result: &'static str,
}

/// Totals of hot reloads so far, from whatever watches the policy and plugins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReloadCounts {
    /// Policies swapped in after the first.
    pub policy_applied: u64,
    /// Policy changes rejected (the running policy stayed).
    pub policy_rejected: u64,
    /// Plugin module versions swapped in.
    pub module_applied: u64,
    /// Plugin module changes rejected (the running version stayed).
    pub module_rejected: u64,
}

/// Where the reload totals come from, read at each scrape.
pub type ReloadSource = Arc<dyn Fn() -> ReloadCounts + Send + Sync>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaderLabels {
    name: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// The daemon's metrics; cheap to clone, shared by the scheduling thread and the tasks.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    profile: String,
    attempts: Family<ResultLabels, Counter>,
    attempt_duration: HistogramFamily<ResultLabels>,
    pending: Family<QueueLabels, Gauge>,
    cache_entries: Family<TableLabels, Gauge>,
    phase_duration: HistogramFamily<PhaseLabels>,
    bind_duration: HistogramFamily<BindLabels>,
    rule_duration: HistogramFamily<RuleLabels>,
    extender_duration: HistogramFamily<ExtenderLabels>,
    protection_rejections: Family<ProtectionLabels, Counter>,
    leader: Family<LeaderLabels, Gauge>,
    reloads: Family<ReloadLabels, Gauge>,
    reload_source: Option<ReloadSource>,
}

fn latency_histogram() -> Histogram {
    // 100 us .. ~3.3 s, doubling: cycles are sub-millisecond to tens of milliseconds,
    // API calls milliseconds to seconds.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

impl Metrics {
    /// Metrics for the scheduler (profile) called `profile`.
    pub fn new(profile: &str) -> Self {
        let mut registry = Registry::default();
        let attempts = Family::<ResultLabels, Counter>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            attempts.clone(),
        );
        let attempt_duration = HistogramFamily::<ResultLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + assume).",
            attempt_duration.clone(),
        );
        let pending = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            pending.clone(),
        );
        let cache_entries = Family::<TableLabels, Gauge>::default();
        registry.register(
            "berth_cache_entries",
            "Entries in the scheduler's cache tables that grow with the cluster (interned \
             strings, pods, nodes, label indexes...), by table: they follow the live objects.",
            cache_entries.clone(),
        );
        let phase_duration = HistogramFamily::<PhaseLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "berth_scheduling_phase_duration_seconds",
            "Duration of each phase of a scheduling cycle.",
            phase_duration.clone(),
        );
        let bind_duration = HistogramFamily::<BindLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running an extension point (Bind: the pods/binding request).",
            bind_duration.clone(),
        );
        let rule_duration = HistogramFamily::<RuleLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_plugin_execution_duration_seconds",
            "Duration of each rule's (and WASM plugin's) per-pod preparation, by policy entry.",
            rule_duration.clone(),
        );
        let extender_duration = HistogramFamily::<ExtenderLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "berth_extender_call_duration_seconds",
            "Duration of each call to a Policy extender, by extender (URL prefix), verb and \
             result (success or error; the _count series count the calls).",
            extender_duration.clone(),
        );
        let protection_rejections = Family::<ProtectionLabels, Counter>::default();
        registry.register(
            "berth_protection_rejected_nodes",
            "Nodes a Berth protection (CheckTolerationRestriction, CheckPodCIDRCapacity) \
             rejected in scheduling attempts that placed no pod, by predicate.",
            protection_rejections.clone(),
        );
        let reloads = Family::<ReloadLabels, Gauge>::default();
        registry.register(
            "berth_reloads",
            "Hot reloads of the policy file and plugin modules so far, applied or rejected \
             (a rejected one leaves the last good version running; the log says why).",
            reloads.clone(),
        );
        let leader = Family::<LeaderLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Whether this replica holds the lease (1) or not (0).",
            leader.clone(),
        );
        Metrics {
            registry: Arc::new(registry),
            profile: profile.to_string(),
            attempts,
            attempt_duration,
            pending,
            cache_entries,
            phase_duration,
            bind_duration,
            rule_duration,
            extender_duration,
            protection_rejections,
            reloads,
            reload_source: None,
            leader,
        }
    }

    /// Records one scheduling attempt.
    pub fn attempt(&self, result: AttemptResult, seconds: f64) {
        let labels = ResultLabels {
            result: result.label(),
            profile: self.profile.clone(),
        };
        self.attempts.get_or_create(&labels).inc();
        self.attempt_duration
            .get_or_create(&labels)
            .observe(seconds);
    }

    /// Counts the nodes Berth's protections rejected in an attempt that placed no pod, from
    /// its FitError counts (reason -> nodes).
    pub fn protection_rejections<'a>(&self, reasons: impl IntoIterator<Item = (&'a str, usize)>) {
        for (reason, nodes) in reasons {
            if let Some(predicate) = berth_engine::rules::protection_of(reason) {
                self.protection_rejections
                    .get_or_create(&ProtectionLabels { predicate })
                    .inc_by(nodes as u64);
            }
        }
    }

    /// Records the duration of one phase of a cycle.
    pub fn phase(&self, phase: Phase, seconds: f64) {
        let phase = match phase {
            Phase::Compile => "compile",
            Phase::Algorithm => "algorithm",
            Phase::Assume => "assume",
        };
        self.phase_duration
            .get_or_create(&PhaseLabels { phase })
            .observe(seconds);
    }

    /// Reports reload totals from `source` at every scrape.
    pub fn with_reload_source(mut self, source: ReloadSource) -> Self {
        self.reload_source = Some(source);
        self
    }

    /// Records one rule's preparation time in a cycle (`plugin` is the policy entry's name).
    pub fn rule(&self, plugin: &str, extension_point: &'static str, seconds: f64) {
        let labels = RuleLabels {
            plugin: plugin.to_string(),
            extension_point,
            status: "Success",
        };
        self.rule_duration.get_or_create(&labels).observe(seconds);
    }

    /// Records one extender call.
    pub fn extender_call(&self, extender: &str, verb: &'static str, ok: bool, seconds: f64) {
        let labels = ExtenderLabels {
            extender: extender.to_string(),
            verb,
            result: if ok { "success" } else { "error" },
        };
        self.extender_duration
            .get_or_create(&labels)
            .observe(seconds);
    }

    /// An observer of extender calls that records them here.
    pub fn extender_observer(&self) -> berth_extender::Observer {
        let metrics = self.clone();
        Arc::new(move |extender, verb, elapsed, ok| {
            metrics.extender_call(extender, verb.as_str(), ok, elapsed.as_secs_f64());
        })
    }

    /// Records one binding request.
    pub fn bind(&self, success: bool, seconds: f64) {
        let labels = BindLabels {
            extension_point: "Bind",
            status: if success { "Success" } else { "Error" },
            profile: self.profile.clone(),
        };
        self.bind_duration.get_or_create(&labels).observe(seconds);
    }

    /// Sets the queue lengths.
    pub fn pending(&self, active: usize, backoff: usize, unschedulable: usize) {
        for (queue, n) in [
            ("active", active),
            ("backoff", backoff),
            ("unschedulable", unschedulable),
        ] {
            self.pending
                .get_or_create(&QueueLabels { queue })
                .set(n as i64);
        }
    }

    /// Sets the cache's table sizes.
    pub fn cache_entries(&self, tables: &[(&'static str, usize)]) {
        for &(table, n) in tables {
            self.cache_entries
                .get_or_create(&TableLabels { table })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Sets whether this replica leads.
    pub fn leader(&self, leading: bool) {
        self.leader
            .get_or_create(&LeaderLabels {
                name: self.profile.clone(),
            })
            .set(i64::from(leading));
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        if let Some(source) = &self.reload_source {
            let counts = source();
            for (object, result, value) in [
                ("policy", "applied", counts.policy_applied),
                ("policy", "rejected", counts.policy_rejected),
                ("module", "applied", counts.module_applied),
                ("module", "rejected", counts.module_rejected),
            ] {
                self.reloads
                    .get_or_create(&ReloadLabels { object, result })
                    .set(i64::try_from(value).unwrap_or(i64::MAX));
            }
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_names_appear_in_the_text_format() {
        let m = Metrics::new("berth");
        m.attempt(AttemptResult::Scheduled, 0.002);
        m.attempt(AttemptResult::Unschedulable, 0.001);
        m.pending(3, 1, 2);
        m.cache_entries(&[("interned_strings", 42)]);
        m.leader(true);
        m.rule("GpuModel", "PreFilter", 0.0003);
        m.extender_call("http://127.0.0.1:8888/x", "filter", false, 0.004);
        m.protection_rejections([
            (
                "node(s) had taint {dedicated: a}, that namespace b may not tolerate",
                3,
            ),
            (
                "node(s) had taint {dedicated: a}, that the pod didn't tolerate",
                4,
            ),
            ("node(s) had no free pod IP addresses", 2),
        ]);
        m.protection_rejections([(
            "node(s) had taint {gpu: }, that namespace c may not tolerate",
            1,
        )]);
        let m = m.with_reload_source(Arc::new(|| ReloadCounts {
            module_rejected: 2,
            ..ReloadCounts::default()
        }));
        let text = m.encode();
        for line in [
            r#"scheduler_schedule_attempts_total{result="scheduled",profile="berth"} 1"#,
            r#"scheduler_schedule_attempts_total{result="unschedulable",profile="berth"} 1"#,
            r#"scheduler_pending_pods{queue="active"} 3"#,
            r#"scheduler_pending_pods{queue="unschedulable"} 2"#,
            r#"leader_election_master_status{name="berth"} 1"#,
            r#"berth_cache_entries{table="interned_strings"} 42"#,
            r#"berth_reloads{object="module",result="rejected"} 2"#,
            r#"berth_reloads{object="policy",result="applied"} 0"#,
            r#"berth_protection_rejected_nodes_total{predicate="CheckTolerationRestriction"} 4"#,
            r#"berth_protection_rejected_nodes_total{predicate="CheckPodCIDRCapacity"} 2"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.contains("scheduler_scheduling_attempt_duration_seconds_bucket"));
        assert!(text.contains(
            r#"berth_extender_call_duration_seconds_count{extender="http://127.0.0.1:8888/x",verb="filter",result="error"} 1"#
        ), "{text}");
        assert!(text.contains(
            r#"scheduler_plugin_execution_duration_seconds_count{plugin="GpuModel",extension_point="PreFilter",status="Success"} 1"#
        ), "{text}");
    }
}
