//! Prometheus metrics, with upstream kube-scheduler's names where the meaning matches.

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::protections::ProtectionMetrics;

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

/// The reload source and the lock that makes each scrape's catch-up of the counters to the
/// source's totals one step (two scrapes at once would otherwise both add the difference).
struct Reloads {
    source: ReloadSource,
    catch_up: Mutex<()>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaderLabels {
    name: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptsLabels {
    attempts: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IncomingLabels {
    queue: &'static str,
    event: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
    profile: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheTypeLabels {
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FieldLabels {
    kind: &'static str,
    field: &'static str,
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
    protections: ProtectionMetrics,
    leader: Family<LeaderLabels, Gauge>,
    lease: Option<String>,
    reloads: Family<ReloadLabels, Counter>,
    reload_source: Option<Arc<Reloads>>,
    algorithm_duration: Histogram,
    sli_duration: HistogramFamily<AttemptsLabels>,
    pod_attempts: Histogram,
    preemption_attempts: Counter,
    preemption_victims: Histogram,
    incoming: Family<IncomingLabels, Counter>,
    cache_size: Family<CacheTypeLabels, Gauge>,
    unschedulable: Family<PluginLabels, Gauge>,
    unmodelled: Family<FieldLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

fn latency_histogram() -> Histogram {
    // 100 us .. ~3.3 s, doubling: cycles are sub-millisecond to tens of milliseconds,
    // API calls milliseconds to seconds.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

// Upstream's bucket layouts (pkg/scheduler/metrics/metrics.go), so dashboards and alerts
// written for kube-scheduler read the same buckets.

/// 1 ms .. ~16 s, doubling: scheduling_attempt_duration_seconds and
/// scheduling_algorithm_duration_seconds.
fn attempt_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// 0.1 ms .. ~200 ms, doubling: framework_extension_point_duration_seconds.
fn extension_point_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}

/// 10 us .. ~22 ms, by 1.5: plugin_execution_duration_seconds.
fn plugin_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

/// 10 ms .. ~88 min, doubling: pod_scheduling_sli_duration_seconds.
fn sli_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 20))
}

/// Upstream's `attempts` label: the count, with 15 and more as one value.
fn attempts_label(attempts: u32) -> &'static str {
    const LABELS: [&str; 15] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
    ];
    LABELS.get(attempts as usize).copied().unwrap_or("15+")
}

impl Metrics {
    /// Metrics for the scheduler (profile) called `profile`.
    pub fn new(profile: &str) -> Self {
        let mut registry = Registry::default();
        let attempts = Family::<ResultLabels, Counter>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result",
            attempts.clone(),
        );
        let attempt_duration = HistogramFamily::<ResultLabels>::new_with_constructor(
            attempt_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + assume)",
            attempt_duration.clone(),
        );
        let algorithm_duration = attempt_histogram();
        registry.register(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds (filtering and scoring one pod)",
            algorithm_duration.clone(),
        );
        let sli_duration = HistogramFamily::<AttemptsLabels>::new_with_constructor(
            sli_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the \
             scheduling queue to its binding, which may involve multiple scheduling attempts",
            sli_duration.clone(),
        );
        // 1, 2, 4, 8, 16 attempts.
        let pod_attempts = Histogram::new(exponential_buckets(1.0, 2.0, 5));
        registry.register(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod",
            pod_attempts.clone(),
        );
        let preemption_attempts = Counter::default();
        registry.register(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            preemption_attempts.clone(),
        );
        // 1, 2, 4 .. 64 victims: upstream thinks more than 64 is rare enough for one bucket.
        let preemption_victims = Histogram::new(exponential_buckets(1.0, 2.0, 7));
        registry.register(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            preemption_victims.clone(),
        );
        let incoming = Family::<IncomingLabels, Counter>::default();
        registry.register(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type",
            incoming.clone(),
        );
        let unschedulable = Family::<PluginLabels, Gauge>::default();
        registry.register(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment \
             the gauge for all plugins that caused it to not schedule and so this metric have \
             meaning only when broken down by plugin",
            unschedulable.clone(),
        );
        let unmodelled = Family::<FieldLabels, Gauge>::default();
        registry.register(
            "berth_unmodelled_field_objects",
            "Objects in the cache that set a field Berth does not model, by kind and field \
             (pending pods among them are refused, see the log)",
            unmodelled.clone(),
        );
        let cache_size = Family::<CacheTypeLabels, Gauge>::default();
        registry.register(
            "scheduler_scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache",
            cache_size.clone(),
        );
        let pending = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type",
            pending.clone(),
        );
        let cache_entries = Family::<TableLabels, Gauge>::default();
        registry.register(
            "berth_cache_entries",
            "Entries in the scheduler's cache tables that grow with the cluster (interned \
             strings, pods, nodes, label indexes...), by table: they follow the live objects",
            cache_entries.clone(),
        );
        let phase_duration = HistogramFamily::<PhaseLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "berth_scheduling_phase_duration_seconds",
            "Duration of each phase of a scheduling cycle",
            phase_duration.clone(),
        );
        let bind_duration = HistogramFamily::<BindLabels>::new_with_constructor(
            extension_point_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running an extension point (Bind: the pods/binding request)",
            bind_duration.clone(),
        );
        let rule_duration = HistogramFamily::<RuleLabels>::new_with_constructor(
            plugin_histogram as fn() -> Histogram,
        );
        registry.register(
            "scheduler_plugin_execution_duration_seconds",
            "Duration of each rule's (and WASM plugin's) per-pod preparation, by upstream plugin \
             (the policy entry's name where a rule is not one upstream plugin)",
            rule_duration.clone(),
        );
        let extender_duration = HistogramFamily::<ExtenderLabels>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "berth_extender_call_duration_seconds",
            "Duration of each call to a Policy extender, by extender (URL prefix), verb and \
             result (success or error; the _count series count the calls)",
            extender_duration.clone(),
        );
        let protection_rejections = Family::<ProtectionLabels, Counter>::default();
        registry.register(
            "berth_protection_rejected_nodes",
            "Nodes a Berth protection (CheckTolerationRestriction, CheckPodCIDRCapacity, \
             CheckNodeCircuitBreaker, CheckWorkloadQuarantine) \
             rejected in scheduling attempts that placed no pod, by predicate",
            protection_rejections.clone(),
        );
        let protections = ProtectionMetrics::register(&mut registry);
        let reloads = Family::<ReloadLabels, Counter>::default();
        registry.register(
            "berth_reloads",
            "Hot reloads of the policy file and plugin modules so far, applied or rejected \
             (a rejected one leaves the last good version running; the log says why)",
            reloads.clone(),
        );
        let leader = Family::<LeaderLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Whether this replica holds the lease (1) or not (0), by lease name",
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
            protections,
            reloads,
            reload_source: None,
            leader,
            lease: None,
            algorithm_duration,
            sli_duration,
            pod_attempts,
            preemption_attempts,
            preemption_victims,
            incoming,
            cache_size,
            unschedulable,
            unmodelled,
        }
    }

    /// The same metrics, labelled as the profile called `profile` (for a loop serving
    /// several).
    pub fn for_profile(&self, profile: &str) -> Self {
        Metrics {
            profile: profile.to_string(),
            ..self.clone()
        }
    }

    /// The circuit breaker's and containment's metrics.
    pub fn protections(&self) -> &ProtectionMetrics {
        &self.protections
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

    /// Counts the nodes Berth's protections rejected in an attempt that placed no pod:
    /// (protection, nodes), as its FitError attributes them.
    pub fn protection_rejections(
        &self,
        rejections: impl IntoIterator<Item = (&'static str, usize)>,
    ) {
        for (predicate, nodes) in rejections {
            self.protection_rejections
                .get_or_create(&ProtectionLabels { predicate })
                .inc_by(nodes as u64);
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
        self.reload_source = Some(Arc::new(Reloads {
            source,
            catch_up: Mutex::new(()),
        }));
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

    /// Reports leadership under the Lease called `name` (client-go's `name` label); without
    /// one (leader election off) `leader_election_master_status` has no series, as upstream.
    pub fn with_lease(mut self, name: &str) -> Self {
        self.lease = Some(name.to_string());
        self
    }

    /// Sets whether this replica holds the lease.
    pub fn leader(&self, leading: bool) {
        if let Some(name) = &self.lease {
            self.leader
                .get_or_create(&LeaderLabels { name: name.clone() })
                .set(i64::from(leading));
        }
    }

    /// Records the scheduling algorithm's time (filtering and scoring) for one pod.
    pub fn algorithm(&self, seconds: f64) {
        self.algorithm_duration.observe(seconds);
    }

    /// Records a pod bound after `attempts` scheduling attempts (the successful one
    /// included), `seconds` after it entered the queue.
    pub fn pod_scheduled(&self, attempts: u32, seconds: f64) {
        self.pod_attempts.observe(f64::from(attempts));
        self.sli_duration
            .get_or_create(&AttemptsLabels {
                attempts: attempts_label(attempts),
            })
            .observe(seconds);
    }

    /// Counts one preemption attempt. Upstream's DefaultPreemption PostFilter counts every
    /// call, whether or not the pod may preempt and a node is found
    /// (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go).
    pub fn preemption_attempt(&self) {
        self.preemption_attempts.inc();
    }

    /// Records the victims of a preemption carried out, as upstream's `prepareCandidate`
    /// does (pkg/scheduler/framework/preemption/executor.go).
    pub fn preemption_victims(&self, victims: usize) {
        self.preemption_victims.observe(victims as f64);
    }

    /// Counts a pod entering sub-queue `queue` (active, backoff, unschedulable) on `event`.
    pub fn queue_incoming(&self, queue: &'static str, event: &'static str) {
        self.incoming
            .get_or_create(&IncomingLabels { queue, event })
            .inc();
    }

    /// Adds `delta` (a pod entering, +1, or leaving, -1, the unschedulable sub-queue) to the
    /// unschedulable pods of each of `plugins`, the filters that rejected it.
    pub fn unschedulable_pods(&self, plugins: &[String], delta: i64) {
        for plugin in plugins {
            self.unschedulable
                .get_or_create(&PluginLabels {
                    plugin: plugin.clone(),
                    profile: self.profile.clone(),
                })
                .inc_by(delta);
        }
    }

    /// Sets upstream's cache sizes: nodes, pods (assumed ones included) and assumed pods.
    pub fn cache_size(&self, nodes: usize, pods: usize, assumed_pods: usize) {
        for (r#type, n) in [
            ("nodes", nodes),
            ("pods", pods),
            ("assumed_pods", assumed_pods),
        ] {
            self.cache_size
                .get_or_create(&CacheTypeLabels { r#type })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Sets how many cached objects set each field Berth does not model.
    pub fn unmodelled_fields(&self, counts: &[(&'static str, &'static str, usize)]) {
        for &(kind, field, n) in counts {
            self.unmodelled
                .get_or_create(&FieldLabels { kind, field })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        if let Some(reloads) = &self.reload_source {
            let _one_at_a_time = reloads
                .catch_up
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let counts = (reloads.source)();
            for (object, result, value) in [
                ("policy", "applied", counts.policy_applied),
                ("policy", "rejected", counts.policy_rejected),
                ("module", "applied", counts.module_applied),
                ("module", "rejected", counts.module_rejected),
            ] {
                // The source keeps totals; the counter moves by what is new since the
                // last scrape (totals never go down).
                let counter = self.reloads.get_or_create(&ReloadLabels { object, result });
                counter.inc_by(value.saturating_sub(counter.get()));
            }
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The `# TYPE` of family `name` in `text`.
    pub(crate) fn family_type<'a>(text: &'a str, name: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("# TYPE {name} ")))
    }

    /// The value of the sample `series` (name and labels exactly as printed).
    pub(crate) fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// The bucket bounds of the histogram series `name{labels}` (labels as printed, without
    /// braces; empty for none), +Inf left out.
    fn buckets(text: &str, name: &str, labels: &str) -> Vec<f64> {
        // The encoder puts `le` first: `name_bucket{le="0.001",a="b"} n`.
        let prefix = format!("{name}_bucket{{le=\"");
        let rest = if labels.is_empty() {
            "}".to_string()
        } else {
            format!(",{labels}}}")
        };
        text.lines()
            .filter_map(|l| {
                let (le, after) = l.strip_prefix(&prefix)?.split_once('"')?;
                after.starts_with(&rest).then_some(le)
            })
            .filter(|le| *le != "+Inf")
            .map(|le| le.parse().expect("numeric bound"))
            .collect()
    }

    /// Upstream's ExponentialBuckets(start, factor, count).
    fn exponential(start: f64, factor: f64, count: i32) -> Vec<f64> {
        (0..count).map(|i| start * factor.powi(i)).collect()
    }

    fn assert_buckets(text: &str, name: &str, labels: &str, want: Vec<f64>) {
        let got = buckets(text, name, labels);
        assert_eq!(got.len(), want.len(), "{name}: {got:?} vs {want:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= w * 1e-9, "{name}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn upstream_names_appear_in_the_text_format() {
        let m = Metrics::new("berth").with_lease("berth-lease");
        m.attempt(AttemptResult::Scheduled, 0.002);
        m.attempt(AttemptResult::Unschedulable, 0.001);
        m.pending(3, 1, 2);
        m.cache_entries(&[("interned_strings", 42)]);
        m.leader(true);
        m.rule("GpuModel", "PreFilter", 0.0003);
        m.extender_call("http://127.0.0.1:8888/x", "filter", false, 0.004);
        m.protection_rejections([
            ("CheckTolerationRestriction", 3),
            ("CheckPodCIDRCapacity", 2),
        ]);
        m.protection_rejections([("CheckTolerationRestriction", 1)]);
        let text = m.encode();
        for line in [
            r#"scheduler_schedule_attempts_total{result="scheduled",profile="berth"} 1"#,
            r#"scheduler_schedule_attempts_total{result="unschedulable",profile="berth"} 1"#,
            r#"scheduler_pending_pods{queue="active"} 3"#,
            r#"scheduler_pending_pods{queue="unschedulable"} 2"#,
            r#"leader_election_master_status{name="berth-lease"} 1"#,
            r#"berth_cache_entries{table="interned_strings"} 42"#,
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
        // Help texts end with one period (the encoder adds it).
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("# HELP") && l.ends_with("..")),
            "{text}"
        );
    }

    /// Each family upstream has: its name, type, labels and bucket layout as in
    /// pkg/scheduler/metrics/metrics.go, and the values it records.
    #[test]
    fn upstream_families_have_upstream_types_labels_and_buckets() {
        let m = Metrics::new("berth").with_lease("berth");
        m.attempt(AttemptResult::Scheduled, 0.003);
        m.algorithm(0.0025);
        m.algorithm(0.5);
        m.pod_scheduled(1, 0.2);
        m.pod_scheduled(3, 12.0);
        m.pod_scheduled(20, 100.0);
        m.queue_incoming("active", "UnschedulablePodAdd");
        m.queue_incoming("active", "UnschedulablePodAdd");
        m.queue_incoming("backoff", "NodeAdd");
        m.cache_size(3, 7, 2);
        m.bind(true, 0.01);
        m.rule("PodFitsResources", "PreFilter", 0.00002);
        m.leader(false);
        m.pending(1, 0, 0);
        let plugins = ["NodeResourcesFit".to_string(), "NodeAffinity".to_string()];
        m.unschedulable_pods(&plugins, 1);
        m.unschedulable_pods(&plugins, 1);
        m.unschedulable_pods(&plugins[1..], -1);
        for _ in 0..3 {
            m.preemption_attempt();
        }
        m.preemption_victims(1);
        m.preemption_victims(5);
        m.preemption_victims(100);
        let text = m.encode();

        for (name, kind) in [
            ("scheduler_schedule_attempts", "counter"),
            ("scheduler_scheduling_attempt_duration_seconds", "histogram"),
            (
                "scheduler_scheduling_algorithm_duration_seconds",
                "histogram",
            ),
            ("scheduler_pod_scheduling_sli_duration_seconds", "histogram"),
            ("scheduler_pod_scheduling_attempts", "histogram"),
            ("scheduler_queue_incoming_pods", "counter"),
            ("scheduler_scheduler_cache_size", "gauge"),
            ("scheduler_pending_pods", "gauge"),
            (
                "scheduler_framework_extension_point_duration_seconds",
                "histogram",
            ),
            ("scheduler_plugin_execution_duration_seconds", "histogram"),
            ("leader_election_master_status", "gauge"),
            ("scheduler_unschedulable_pods", "gauge"),
            ("scheduler_preemption_attempts", "counter"),
            ("scheduler_preemption_victims", "histogram"),
        ] {
            assert_eq!(family_type(&text, name), Some(kind), "{name} in\n{text}");
        }

        assert_buckets(
            &text,
            "scheduler_scheduling_algorithm_duration_seconds",
            "",
            exponential(0.001, 2.0, 15),
        );
        assert_eq!(
            value(
                &text,
                "scheduler_scheduling_algorithm_duration_seconds_count"
            ),
            Some(2.0)
        );
        assert_eq!(
            value(
                &text,
                r#"scheduler_scheduling_algorithm_duration_seconds_bucket{le="0.004"}"#
            ),
            Some(1.0)
        );
        assert_buckets(
            &text,
            "scheduler_scheduling_attempt_duration_seconds",
            r#"result="scheduled",profile="berth""#,
            exponential(0.001, 2.0, 15),
        );
        assert_buckets(
            &text,
            "scheduler_pod_scheduling_sli_duration_seconds",
            r#"attempts="1""#,
            exponential(0.01, 2.0, 20),
        );
        // The attempts label: the count, 15 and more as one value.
        for (attempts, sum) in [("1", 0.2), ("3", 12.0), ("15+", 100.0)] {
            assert_eq!(
                value(
                    &text,
                    &format!(
                        r#"scheduler_pod_scheduling_sli_duration_seconds_sum{{attempts="{attempts}"}}"#
                    )
                ),
                Some(sum),
                "{text}"
            );
        }
        assert_buckets(
            &text,
            "scheduler_pod_scheduling_attempts",
            "",
            exponential(1.0, 2.0, 5),
        );
        assert_eq!(
            value(&text, "scheduler_pod_scheduling_attempts_sum"),
            Some(24.0)
        );
        assert_eq!(
            value(
                &text,
                r#"scheduler_pod_scheduling_attempts_bucket{le="4.0"}"#
            ),
            Some(2.0),
            "{text}"
        );
        // Neither preemption family has labels (upstream's are a Counter and a Histogram,
        // not vectors).
        assert_buckets(
            &text,
            "scheduler_preemption_victims",
            "",
            exponential(1.0, 2.0, 7),
        );
        assert_eq!(
            value(&text, "scheduler_preemption_attempts_total"),
            Some(3.0)
        );
        for (series, want) in [
            ("scheduler_preemption_victims_count", 3.0),
            ("scheduler_preemption_victims_sum", 106.0),
            (r#"scheduler_preemption_victims_bucket{le="1.0"}"#, 1.0),
            (r#"scheduler_preemption_victims_bucket{le="8.0"}"#, 2.0),
            (r#"scheduler_preemption_victims_bucket{le="64.0"}"#, 2.0),
            (r#"scheduler_preemption_victims_bucket{le="+Inf"}"#, 3.0),
        ] {
            assert_eq!(value(&text, series), Some(want), "{series} in\n{text}");
        }
        assert_buckets(
            &text,
            "scheduler_framework_extension_point_duration_seconds",
            r#"extension_point="Bind",status="Success",profile="berth""#,
            exponential(0.0001, 2.0, 12),
        );
        assert_buckets(
            &text,
            "scheduler_plugin_execution_duration_seconds",
            r#"plugin="PodFitsResources",extension_point="PreFilter",status="Success""#,
            exponential(0.00001, 1.5, 20),
        );
        for (series, want) in [
            (
                r#"scheduler_queue_incoming_pods_total{queue="active",event="UnschedulablePodAdd"}"#,
                2.0,
            ),
            (
                r#"scheduler_queue_incoming_pods_total{queue="backoff",event="NodeAdd"}"#,
                1.0,
            ),
            (r#"scheduler_scheduler_cache_size{type="nodes"}"#, 3.0),
            (r#"scheduler_scheduler_cache_size{type="pods"}"#, 7.0),
            (
                r#"scheduler_scheduler_cache_size{type="assumed_pods"}"#,
                2.0,
            ),
            (r#"leader_election_master_status{name="berth"}"#, 0.0),
            (
                r#"scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="berth"}"#,
                2.0,
            ),
            (
                r#"scheduler_unschedulable_pods{plugin="NodeAffinity",profile="berth"}"#,
                1.0,
            ),
        ] {
            assert_eq!(value(&text, series), Some(want), "{series} in\n{text}");
        }
    }

    #[test]
    fn without_a_lease_there_is_no_leader_series() {
        let m = Metrics::new("berth");
        m.leader(true);
        let text = m.encode();
        assert!(!text.contains("leader_election_master_status{"), "{text}");
    }

    /// The reload source keeps totals; the counters follow them from scrape to scrape.
    #[test]
    fn reloads_are_a_counter_that_follows_the_source_totals() {
        let totals = Arc::new(Mutex::new(ReloadCounts::default()));
        let source = totals.clone();
        let m = Metrics::new("berth").with_reload_source(Arc::new(move || *source.lock().unwrap()));
        let applied = r#"berth_reloads_total{object="policy",result="applied"}"#;
        let rejected = r#"berth_reloads_total{object="module",result="rejected"}"#;
        let text = m.encode();
        assert_eq!(family_type(&text, "berth_reloads"), Some("counter"));
        assert_eq!(value(&text, applied), Some(0.0));
        totals.lock().unwrap().policy_applied = 2;
        totals.lock().unwrap().module_rejected = 1;
        let text = m.encode();
        assert_eq!(
            (value(&text, applied), value(&text, rejected)),
            (Some(2.0), Some(1.0))
        );
        // Scraped again with nothing new: unchanged (not added twice).
        let text = m.encode();
        assert_eq!(
            (value(&text, applied), value(&text, rejected)),
            (Some(2.0), Some(1.0))
        );
        totals.lock().unwrap().policy_applied = 5;
        assert_eq!(value(&m.encode(), applied), Some(5.0));
    }
}
