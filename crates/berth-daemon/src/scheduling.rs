//! The scheduling thread: it owns the store and the queue, applies pending inputs between
//! cycles, and schedules one pod per cycle while it leads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use berth_engine::{
    Candidate, Cluster, Decision, Detail, Effects, Eviction, NodeId, PodInfo,
    PreemptionExplanation, PreemptionOutcome, Reservation, Scheduler, model, schedule_one,
};
use k8s_openapi::api::core::v1::ObjectReference;
use tracing::{debug, error, info, warn};

use crate::Input;
use crate::binder::{Backend, BindError, BindOutcome};
use crate::handlers::Handlers;
use crate::leader::Leadership;
use crate::metrics::{AttemptResult, Metrics, Phase};
use crate::protections::{self, Notice};
use crate::queue::{Queue, QueueConfig, QueuedPod, event};
use crate::store::{Assumptions, Store};

/// State shared with the health endpoints.
#[derive(Debug, Default)]
pub struct Health {
    /// The scheduling thread is running.
    pub alive: AtomicBool,
    /// Every watched kind has been listed once.
    pub synced: AtomicBool,
}

/// A source of newer schedulers (a reloaded policy or plugin), asked between cycles.
pub type SchedulerUpdates = Box<dyn FnMut() -> Option<Scheduler> + Send>;

/// One scheduler name the loop serves (a profile): its scheduler, where newer versions of it
/// come from, and its metrics (labelled with its name).
struct Profile {
    name: String,
    scheduler: Scheduler,
    updates: Option<SchedulerUpdates>,
    metrics: Metrics,
}

/// The scheduling loop and everything it owns. Every profile schedules against the one
/// cache and takes its pods from the one queue, so profiles never race for a node's room.
pub struct SchedulingLoop<B> {
    handlers: Handlers,
    store: Store,
    queue: Queue,
    /// The profiles; the first is the primary one.
    profiles: Vec<Profile>,
    backend: B,
    metrics: Metrics,
    health: Arc<Health>,
    leading: bool,
    /// Until when the lease allows acting; checked with `leading` before every cycle.
    leadership: Leadership,
    stopping: bool,
}

impl<B: Backend> SchedulingLoop<B> {
    /// A loop for the scheduler called `scheduler_name`, not leading until told so.
    pub fn new(
        scheduler_name: &str,
        scheduler: Scheduler,
        backend: B,
        queue: QueueConfig,
        metrics: Metrics,
        health: Arc<Health>,
    ) -> Self {
        Self::with_profiles(
            vec![(scheduler_name.to_string(), scheduler)],
            backend,
            queue,
            metrics,
            health,
        )
    }

    /// A loop serving several scheduler names (profiles), each with its scheduler; the first
    /// is the primary one. Not leading until told so.
    pub fn with_profiles(
        profiles: Vec<(String, Scheduler)>,
        backend: B,
        queue: QueueConfig,
        metrics: Metrics,
        health: Arc<Health>,
    ) -> Self {
        let names: Vec<String> = profiles.iter().map(|(n, _)| n.clone()).collect();
        let profiles: Vec<Profile> = profiles
            .into_iter()
            .map(|(name, scheduler)| Profile {
                metrics: metrics.for_profile(&name),
                name,
                scheduler,
                updates: None,
            })
            .collect();
        let mut store = Store::new();
        store.set_trackers(union_of_trackers(&profiles));
        SchedulingLoop {
            handlers: Handlers::serving(&names),
            store,
            queue: Queue::new(queue).with_metrics(metrics.clone()),
            profiles,
            backend,
            metrics,
            health,
            leading: false,
            leadership: Leadership::sole(),
            stopping: false,
        }
    }

    /// Schedules only while `leadership` holds (besides being told it leads): a replica
    /// resumed after a pause past its lease does not act on its stale cache.
    pub fn with_leadership(mut self, leadership: Leadership) -> Self {
        self.leadership = leadership;
        self
    }

    /// Takes newer schedulers for the primary profile from `updates` between cycles: a cycle
    /// already running finishes on the scheduler it started with.
    pub fn with_updates(mut self, updates: SchedulerUpdates) -> Self {
        self.profiles[0].updates = Some(updates);
        self
    }

    /// [`Self::with_updates`] for the profile called `name` (ignored if none is).
    pub fn with_profile_updates(mut self, name: &str, updates: SchedulerUpdates) -> Self {
        if let Some(p) = self.profiles.iter_mut().find(|p| p.name == name) {
            p.updates = Some(updates);
        }
        self
    }

    /// Swaps in newer schedulers if there are any. Pods the old policy found unschedulable
    /// may fit under the new one, so they go back to the active queue.
    fn refresh_scheduler(&mut self, now: Instant) {
        let mut swapped = Vec::new();
        for p in &mut self.profiles {
            if let Some(next) = p.updates.as_mut().and_then(|updates| updates()) {
                p.scheduler = next;
                swapped.push(p.name.clone());
            }
        }
        if !swapped.is_empty() {
            self.store.set_trackers(union_of_trackers(&self.profiles));
            let moved = self.queue.move_all_unschedulable(now, event::POLICY_RELOAD);
            tracing::info!(
                requeued = moved,
                profiles = ?swapped,
                "a reloaded policy or plugin is now in use"
            );
        }
    }

    /// The profile that schedules `pod` (its scheduler name; the store only queues pods of
    /// the names served).
    fn profile_of(&self, pod: &model::Pod) -> usize {
        self.profiles
            .iter()
            .position(|p| p.name == pod.scheduler_name)
            .unwrap_or(0)
    }

    /// Keeps the node and pod JSON the extenders are sent in `documents`.
    pub fn with_documents(mut self, documents: berth_extender::Documents) -> Self {
        self.store.set_documents(documents);
        self
    }

    /// The store, for tests (to set its clock) and diagnostics.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The store, for tests and diagnostics.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The queue, for tests and diagnostics.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Runs until [`Input::Shutdown`] or until every sender is gone.
    pub fn run(mut self, inputs: Receiver<Input>) {
        loop {
            let first = match self.wait_time(Instant::now()) {
                None => match inputs.recv() {
                    Ok(input) => Some(input),
                    Err(_) => return,
                },
                Some(timeout) => match inputs.recv_timeout(timeout) {
                    Ok(input) => Some(input),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
            };
            let now = Instant::now();
            if let Some(input) = first {
                self.handle(input, now);
            }
            while let Ok(input) = inputs.try_recv() {
                self.handle(input, now);
            }
            if self.stopping {
                info!("scheduling stopped");
                return;
            }
            self.step(Instant::now());
        }
    }

    /// How long to wait for input before the next step: not at all when a pod is ready,
    /// until the queue's next timer otherwise, indefinitely when not scheduling.
    fn wait_time(&self, now: Instant) -> Option<Duration> {
        if !self.can_schedule(now) {
            return None;
        }
        if self.queue.has_active() {
            return Some(Duration::ZERO);
        }
        let queue = self
            .queue
            .next_wakeup()
            .map(|at| at.saturating_duration_since(now));
        // The protections' next cool-down end or start time-out, on the wall clock; no
        // wake-up at all while they have nothing pending.
        let protections = self.store.protections_deadline().map(|at| {
            let seconds = at.saturating_sub(protections::wall_clock()).max(0);
            Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
        });
        queue.into_iter().chain(protections).min()
    }

    fn can_schedule(&self, now: Instant) -> bool {
        self.leading && self.leadership.holds(now) && !self.stopping && self.store.synced()
    }

    /// Applies one input.
    pub fn handle(&mut self, input: Input, now: Instant) {
        match input {
            Input::Watch(event) => {
                self.handlers
                    .apply(&mut self.store, *event, &mut self.queue, now);
                if self.store.synced() && !self.health.synced.swap(true, Ordering::Relaxed) {
                    info!("caches synced");
                }
            }
            Input::Bound(outcome) => self.bound(outcome, now),
            Input::Leader(leading) => {
                if leading != self.leading {
                    info!(leading, "leadership changed");
                }
                self.leading = leading;
                self.metrics.leader(leading);
            }
            Input::Shutdown => self.stopping = true,
        }
    }

    /// Schedules the next ready pod, if this replica may schedule.
    pub fn step(&mut self, now: Instant) {
        self.refresh_scheduler(now);
        let started = Instant::now();
        if let Some(c) = self.store.compact() {
            debug!(before = c.before, after = c.after, elapsed = ?started.elapsed(),
                "interned strings no object uses any more dropped");
        }
        if self.store.advance_protections() {
            let moved = self
                .queue
                .move_all_unschedulable(now, event::PROTECTION_LIFTED);
            debug!(
                moved,
                "a protection lifted a verdict: retrying unschedulable pods"
            );
        }
        self.report_protections(now);
        if self.can_schedule(now) {
            for (pod, message) in self.handlers.take_unreported() {
                self.backend.unschedulable(&pod, &message, true);
            }
        }
        if self.can_schedule(now)
            && let Some(queued) = self.queue.pop(now)
        {
            self.cycle(queued, now);
        }
        let (active, backoff, unschedulable) = self.queue.lengths();
        self.metrics.pending(active, backoff, unschedulable);
        self.metrics.cache_entries(&self.store.sizes());
        let (nodes, pods, assumed) = self.store.upstream_sizes();
        self.metrics.cache_size(nodes, pods, assumed);
        self.metrics
            .unmodelled_fields(&self.handlers.unmodelled_field_counts());
    }

    /// Logs, counts and (when leading, so one replica writes them) records as Events what the
    /// protections did.
    fn report_protections(&mut self, now: Instant) {
        let notices = self.store.take_protection_notices();
        if notices.is_empty() {
            return;
        }
        let leading = self.can_schedule(now);
        for notice in &notices {
            match notice {
                Notice::Breaker(t) => {
                    warn!(node = %t.node, state = t.kind.state(), message = %t.message,
                        "node circuit breaker");
                    if leading {
                        let cluster = self.store.cluster();
                        let uid = cluster
                            .node_by_name(&t.node)
                            .map(|id| cluster.node(id).node.meta.uid.clone())
                            .filter(|u| !u.is_empty());
                        let regarding = ObjectReference {
                            api_version: Some("v1".into()),
                            kind: Some("Node".into()),
                            name: Some(t.node.clone()),
                            uid,
                            ..ObjectReference::default()
                        };
                        let warning = t.kind.state() == "open";
                        self.backend.protection_event(
                            regarding,
                            t.kind.event_reason(),
                            &t.message,
                            warning,
                        );
                    }
                }
                Notice::Quarantine(q) => {
                    warn!(workload = %q.workload, quarantined = q.quarantined,
                        message = %q.message, "crash-loop containment");
                }
            }
        }
        self.metrics
            .protections()
            .update(&notices, self.store.cluster().protections());
    }

    /// One scheduling attempt, in upstream's order (the engine's `schedule_one`): decide;
    /// where the pod fits nowhere, preempt and report why; where it fits, Reserve, assume it
    /// in the store and hand its binding to the backend ([`Attempt`]).
    fn cycle(&mut self, mut queued: QueuedPod, now: Instant) {
        let start = Instant::now();
        let info = self.store.compile(queued.pod.clone());
        let compiled = Instant::now();
        self.metrics
            .phase(Phase::Compile, (compiled - start).as_secs_f64());
        let p = self.profile_of(&queued.pod);
        let key = queued.key();
        let profile = &mut self.profiles[p];
        let (placement, assumptions) = self.store.attempt_parts();
        let mut attempt = Attempt {
            queued: &queued,
            backend: &self.backend,
            metrics: &self.metrics,
            profile: &profile.metrics,
            assumptions,
            compiled,
            decided: compiled,
        };
        let result = schedule_one(
            &mut profile.scheduler,
            placement,
            info,
            Detail::Decision,
            &mut attempt,
        );
        let decision = match result {
            Ok(Decision::Placed { .. }) => {
                profile
                    .metrics
                    .attempt(AttemptResult::Scheduled, start.elapsed().as_secs_f64());
                return;
            }
            Ok(decision) => decision,
            Err(e) => {
                error!(pod = %key, error = %e, "could not assume the pod");
                self.queue.backoff(queued, now);
                profile
                    .metrics
                    .attempt(AttemptResult::Error, start.elapsed().as_secs_f64());
                return;
            }
        };
        // Upstream's unschedulable plugins of this attempt.
        let filters = profile.scheduler.filters();
        queued.unschedulable_plugins = decision
            .fit_error()
            .into_iter()
            .flat_map(|fit| &fit.diagnosis.filters)
            .map(|&i| filters[i].plugin().to_string())
            .collect();
        queued.unschedulable_plugins.sort_unstable();
        queued.unschedulable_plugins.dedup();
        if let Some(fit) = decision.fit_error() {
            let by_protection = fit.diagnosis.nodes_by_filter();
            self.metrics.protection_rejections(
                by_protection.filter_map(|(f, nodes)| Some((filters[f].protection?, nodes))),
            );
        }
        let message = decision.failure_message().unwrap_or_default();
        debug!(pod = %key, %message, "unschedulable");
        let changed = queued.reported.as_deref() != Some(message.as_str());
        self.backend.unschedulable(&queued.pod, &message, changed);
        queued.reported = Some(message);
        self.queue.unschedulable(queued, now);
        profile
            .metrics
            .attempt(AttemptResult::Unschedulable, start.elapsed().as_secs_f64());
    }

    /// A binding came back. On success the assumption stays until the watch shows the pod
    /// bound; on failure it is forgotten and the pod retried, unless the pod is gone.
    fn bound(&mut self, outcome: BindOutcome, now: Instant) {
        let BindOutcome {
            key, uid, result, ..
        } = outcome;
        let error = match result {
            Ok(()) => return,
            Err(e) => e,
        };
        let Some((queued, reservation)) = self.store.forget(&key, &uid) else {
            return;
        };
        let p = self.profile_of(&queued.pod);
        self.profiles[p]
            .scheduler
            .unreserve(self.store.cluster_mut(), &reservation);
        match error {
            BindError::PodGone(_) => debug!(pod = %key, "pod deleted before its binding"),
            e => {
                warn!(pod = %key, error = %e, "binding failed; retrying after backoff");
                self.queue.backoff(queued, now);
            }
        }
    }
}

/// What one attempt of the loop does beyond the engine: its metrics and logs, the API work
/// of a preemption (the victims' deletion asked for, the pod waiting), and for a placed pod,
/// the assumption in the store, then the binding handed to the backend.
struct Attempt<'a, B> {
    queued: &'a QueuedPod,
    backend: &'a B,
    metrics: &'a Metrics,
    profile: &'a Metrics,
    assumptions: Assumptions<'a>,
    compiled: Instant,
    decided: Instant,
}

impl<B: Backend> Effects for Attempt<'_, B> {
    fn decided(&mut self, scheduler: &Scheduler, decision: &Decision) {
        self.decided = Instant::now();
        for (rule, point, elapsed) in scheduler.last_cycle_timings() {
            self.profile
                .rule(rule, point.as_str(), elapsed.as_secs_f64());
        }
        let algorithm = (self.decided - self.compiled).as_secs_f64();
        self.profile.phase(Phase::Algorithm, algorithm);
        self.profile.algorithm(algorithm);
        for w in decision.warnings() {
            warn!(pod = %self.queued.key(), extender = %w.extender, error = %w.message,
                "extender failed and was skipped");
        }
    }

    fn preempted(
        &mut self,
        _cluster: &Cluster,
        _pod: &PodInfo,
        outcome: &PreemptionOutcome,
        explained: PreemptionExplanation,
    ) {
        let key = self.queued.key();
        self.metrics.preemption_attempt();
        for w in &explained.extender_warnings {
            warn!(pod = %key, extender = %w.extender, error = %w.message,
                "extender failed preempting and was skipped");
        }
        match outcome {
            PreemptionOutcome::NotEligible(why) => debug!(pod = %key, why, "not preempting"),
            // Upstream's PostFilter error: logged; the pod stays unschedulable with its
            // FitError and keeps any nomination.
            PreemptionOutcome::ExtenderFailed(e) => {
                error!(pod = %key, extender = %e.extender, error = %e.message,
                    "preemption failed: a non-ignorable extender failed");
            }
            PreemptionOutcome::NoCandidate | PreemptionOutcome::Preempt { .. } => {}
        }
    }

    /// The API work (nomination, victims, events) goes to the backend; the pod stays
    /// nominated in the store, so the next cycles keep its node for it.
    fn evict(
        &mut self,
        cluster: &mut Cluster,
        _pod: &PodInfo,
        candidate: &Candidate,
        cleared: &[String],
    ) -> Eviction {
        let node = cluster.node(candidate.node).name().to_string();
        let victims: Vec<model::Pod> = candidate
            .victims
            .iter()
            .map(|v| cluster.pod(*v).pod.clone())
            .collect();
        debug!(pod = %self.queued.key(), %node, victims = victims.len(), "preempting");
        self.metrics.preemption_victims(victims.len());
        self.backend
            .preempt(&self.queued.pod, &node, victims, cleared.to_vec());
        Eviction::Requested
    }

    fn nomination_dropped(&mut self, _pod: &PodInfo) {
        self.backend.clear_nomination(&self.queued.pod);
    }

    fn assigned(
        &mut self,
        cluster: &mut Cluster,
        pod: &str,
        node: NodeId,
        reservation: Reservation,
    ) {
        let writes = reservation.writes.clone();
        let node_name = self
            .assumptions
            .assume(cluster, self.queued.clone(), node, reservation);
        self.profile
            .phase(Phase::Assume, self.decided.elapsed().as_secs_f64());
        debug!(%pod, node = %node_name, "assumed");
        self.backend.bind(self.queued, &node_name, writes);
    }
}

/// The protections' trackers of every profile together: they watch the whole cluster, so
/// one setting each. Where two profiles configure one differently the primary profile's wins,
/// which is said.
fn union_of_trackers(profiles: &[Profile]) -> berth_engine::health::Trackers {
    let mut union = berth_engine::health::Trackers::default();
    for p in profiles {
        let t = p.scheduler.trackers();
        match (&union.breaker, t.breaker) {
            (None, b) => union.breaker = b,
            (Some(a), Some(b)) if *a != b => warn!(profile = %p.name,
                "its CheckNodeCircuitBreaker settings differ from an earlier profile's; the \
                 node circuit breaker is one for the cluster and keeps the earlier settings"),
            _ => {}
        }
        match (&union.quarantine, t.quarantine) {
            (None, q) => union.quarantine = q,
            (Some(a), Some(b)) if *a != b => warn!(profile = %p.name,
                "its CheckWorkloadQuarantine settings differ from an earlier profile's; \
                 containment is one for the cluster and keeps the earlier settings"),
            _ => {}
        }
    }
    union
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use berth_engine::{ApiWrite, CycleConfig};
    use k8s_openapi::api::core::v1::{Node, Pod};

    use super::*;
    use crate::events::{Change, Kind, WatchEvent};
    use crate::queue::Place;
    use crate::testing::{bound, node, pod};

    const POLICY: &str = r#"{"kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": "GeneralPredicates"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}"#;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Call {
        Bind(String, String),
        Writes(String, Vec<ApiWrite>),
        Unschedulable(String, String, bool),
        Preempt(String, String, Vec<String>),
        ClearNomination(String),
        Event(String, String, String),
    }

    #[derive(Clone, Default)]
    struct Recorder(Rc<RefCell<Vec<Call>>>);

    impl Recorder {
        fn take(&self) -> Vec<Call> {
            std::mem::take(&mut self.0.borrow_mut())
        }
    }

    impl Backend for Recorder {
        fn bind(&self, queued: &QueuedPod, node: &str, writes: Vec<ApiWrite>) {
            let pod = &queued.pod;
            let mut calls = self.0.borrow_mut();
            if !writes.is_empty() {
                calls.push(Call::Writes(pod.meta.name.clone(), writes));
            }
            calls.push(Call::Bind(pod.meta.name.clone(), node.into()));
        }
        fn preempt(
            &self,
            pod: &berth_engine::model::Pod,
            node: &str,
            victims: Vec<berth_engine::model::Pod>,
            _demoted: Vec<String>,
        ) {
            self.0.borrow_mut().push(Call::Preempt(
                pod.meta.name.clone(),
                node.into(),
                victims.iter().map(|v| v.meta.name.clone()).collect(),
            ));
        }
        fn clear_nomination(&self, pod: &berth_engine::model::Pod) {
            self.0
                .borrow_mut()
                .push(Call::ClearNomination(pod.meta.name.clone()));
        }
        fn protection_event(
            &self,
            regarding: ObjectReference,
            reason: &str,
            note: &str,
            _warning: bool,
        ) {
            self.0.borrow_mut().push(Call::Event(
                regarding.name.unwrap_or_default(),
                reason.to_owned(),
                note.to_owned(),
            ));
        }

        fn unschedulable(&self, pod: &berth_engine::model::Pod, message: &str, set: bool) {
            self.0.borrow_mut().push(Call::Unschedulable(
                pod.meta.name.clone(),
                message.into(),
                set,
            ));
        }
    }

    struct Fixture {
        lp: SchedulingLoop<Recorder>,
        calls: Recorder,
        now: Instant,
    }

    impl Fixture {
        /// A synced, leading loop.
        fn new() -> Self {
            let mut f = Self::idle();
            f.lp.handle(Input::Leader(true), f.now);
            f
        }

        /// A loop that has synced nothing and does not lead.
        fn idle() -> Self {
            Self::idle_with(POLICY)
        }

        /// A loop under `policy` that has synced nothing and does not lead.
        fn idle_with(policy: &str) -> Self {
            Self::profiles(&[("berth", policy)])
        }

        /// A synced loop, not leading, serving each (scheduler name, policy) as a profile.
        fn profiles(profiles: &[(&str, &str)]) -> Self {
            let profiles = profiles
                .iter()
                .map(|(name, text)| {
                    let policy = berth_policy::parse(text, "test.json").unwrap();
                    let scheduler =
                        berth_engine::scheduler_for(&policy, CycleConfig::default()).unwrap();
                    (name.to_string(), scheduler)
                })
                .collect();
            let calls = Recorder::default();
            let lp = SchedulingLoop::with_profiles(
                profiles,
                calls.clone(),
                QueueConfig::default(),
                Metrics::new("berth").with_lease("berth-lease"),
                Arc::new(Health::default()),
            );
            let mut f = Fixture {
                lp,
                calls,
                now: Instant::now(),
            };
            f.sync();
            f
        }

        fn sync(&mut self) {
            for kind in Kind::ALL {
                let event = match kind {
                    Kind::Node => WatchEvent::Node(Change::Synced),
                    Kind::Pod => WatchEvent::Pod(Change::Synced),
                    Kind::Namespace => WatchEvent::Namespace(Change::Synced),
                    Kind::Service => WatchEvent::Service(Change::Synced),
                    Kind::ReplicationController => {
                        WatchEvent::ReplicationController(Change::Synced)
                    }
                    Kind::ReplicaSet => WatchEvent::ReplicaSet(Change::Synced),
                    Kind::StatefulSet => WatchEvent::StatefulSet(Change::Synced),
                    Kind::PersistentVolume => WatchEvent::PersistentVolume(Change::Synced),
                    Kind::PersistentVolumeClaim => {
                        WatchEvent::PersistentVolumeClaim(Change::Synced)
                    }
                    Kind::StorageClass => WatchEvent::StorageClass(Change::Synced),
                    Kind::CsiNode => WatchEvent::CsiNode(Change::Synced),
                    Kind::PriorityClass => WatchEvent::PriorityClass(Change::Synced),
                    Kind::PodDisruptionBudget => WatchEvent::PodDisruptionBudget(Change::Synced),
                };
                self.lp.handle(Input::Watch(Box::new(event)), self.now);
            }
        }

        fn node(&mut self, n: Node) {
            self.lp.handle(
                Input::Watch(Box::new(WatchEvent::Node(Change::Apply(n)))),
                self.now,
            );
        }

        fn pod(&mut self, p: Pod) {
            self.lp.handle(
                Input::Watch(Box::new(WatchEvent::Pod(Change::Apply(p)))),
                self.now,
            );
        }

        fn run(&mut self) {
            while self.lp.queue().has_active() {
                self.lp.step(self.now);
            }
        }

        fn bound(&mut self, pod: &str, result: Result<(), BindError>) {
            self.lp.handle(
                Input::Bound(BindOutcome {
                    key: format!("default/{pod}"),
                    uid: format!("uid-{pod}"),
                    node: String::new(),
                    result,
                }),
                self.now,
            );
        }
    }

    fn bind(pod: &str, node: &str) -> Call {
        Call::Bind(pod.into(), node.into())
    }

    #[test]
    fn assumed_pods_count_at_once_so_no_node_is_overcommitted() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.node(node("n2", 1));
        for name in ["a", "b", "c"] {
            f.pod(pod(name, "berth", 600));
        }
        f.run();
        let calls = f.calls.take();
        assert_eq!(calls.len(), 3);
        let nodes: Vec<&str> = calls
            .iter()
            .filter_map(|c| match c {
                Call::Bind(_, n) => Some(n.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(nodes.len(), 2, "{calls:?}");
        assert_ne!(nodes[0], nodes[1]);
        assert_eq!(
            calls[2],
            Call::Unschedulable(
                "c".into(),
                "0/2 nodes are available: 2 Insufficient cpu.".into(),
                true
            )
        );
    }

    /// Two profiles from one loop share its cache: a pod of one counts against the other's at
    /// once (assumed, not yet bound), so no node is overcommitted as two schedulers would
    /// overcommit it; each profile decides with its own policy, and other names are not
    /// touched.
    #[test]
    fn profiles_share_one_cache_and_queue_and_each_runs_its_policy() {
        let most = r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}],
            "priorities": [{"name": "MostRequestedPriority", "weight": 1}]}"#;
        let mut f = Fixture::profiles(&[("berth", POLICY), ("default-scheduler", most)]);
        f.lp.handle(Input::Leader(true), f.now);
        f.node(node("n1", 1));
        f.node(node("n2", 2));
        // Least-requested spreads to the emptier node, most-requested packs onto the fuller.
        f.pod(pod("spread", "berth", 600));
        f.run();
        f.pod(pod("pack", "default-scheduler", 300));
        f.run();
        f.pod(pod("big", "default-scheduler", 1200));
        f.pod(pod("other", "someone-else", 100));
        f.run();
        let calls = f.calls.take();
        assert_eq!(
            calls[..2],
            [bind("spread", "n2"), bind("pack", "n2")],
            "{calls:?}"
        );
        // n2 holds 900m of 2000m, assumed and not bound yet: 1200m fits nowhere, as it would
        // on n2 for a scheduler that did not count berth's pod; the other name's pod is
        // never taken.
        assert_eq!(
            calls[2..],
            [Call::Unschedulable(
                "big".into(),
                "0/2 nodes are available: 2 Insufficient cpu.".into(),
                true
            )],
            "{calls:?}"
        );
        let text = f.lp.metrics.encode();
        for profile in ["berth", "default-scheduler"] {
            let line = format!(
                r#"scheduler_schedule_attempts_total{{result="scheduled",profile="{profile}"}}"#
            );
            assert!(text.contains(&line), "{line} in\n{text}");
        }
    }

    /// `pod` with its first container's `resource` request set to `quantity`.
    fn requesting(mut pod: Pod, resource: &str, quantity: &str) -> Pod {
        let spec = pod.spec.as_mut().expect("spec");
        let requests = spec.containers[0]
            .resources
            .get_or_insert_default()
            .requests
            .get_or_insert_default();
        requests.insert(
            resource.into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(quantity.into()),
        );
        pod
    }

    /// The API server accepts quantities beyond i64 that Berth's converter refuses: a bound
    /// pod is still counted (clamped), a pending one is told why, once per problem.
    #[test]
    fn pods_berth_cannot_read_are_counted_or_reported() {
        let mut f = Fixture::new();
        f.node(node("n1", 4));
        f.pod(bound(
            requesting(pod("huge", "other", 100), "cpu", "1e30"),
            "n1",
        ));
        f.pod(requesting(pod("bad", "berth", 100), "memory", "1e30"));
        f.pod(pod("small", "berth", 100));
        f.run();
        let want_bad = Call::Unschedulable(
            "bad".into(),
            "berth cannot read this pod: spec.containers[0].resources.requests.memory: invalid \
             quantity \"1e30\": the value does not fit in a signed 64-bit integer (the pod stays \
             pending until it is fixed)"
                .into(),
            true,
        );
        let want_small = Call::Unschedulable(
            "small".into(),
            "0/1 nodes are available: 1 Insufficient cpu.".into(),
            true,
        );
        assert_eq!(f.calls.take(), [want_bad, want_small]);
        let id = f.lp.store().cluster().node_by_name("n1").expect("n1");
        let n1 = f.lp.store().cluster().node(id);
        assert_eq!(
            (n1.pods.len(), n1.requested.get("cpu")),
            (1, crate::unreadable::CLAMPED)
        );

        // The same problem again (a relist) is not reported again; a fix schedules the pod.
        f.pod(requesting(pod("bad", "berth", 100), "memory", "1e30"));
        f.lp.step(f.now);
        assert!(f.calls.take().is_empty());
        f.pod(requesting(pod("bad", "berth", 100), "memory", "1Gi"));
        f.run();
        assert!(
            matches!(&f.calls.take()[..], [Call::Unschedulable(name, m, _)] if name == "bad" && m.contains("Insufficient cpu")),
        );
    }

    #[test]
    fn an_unchanged_failure_reports_the_event_again_but_not_the_condition() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(pod("big", "berth", 2000));
        f.run();
        f.now += Duration::from_secs(60);
        f.lp.step(f.now);
        let message = "0/1 nodes are available: 1 Insufficient cpu.".to_string();
        assert_eq!(
            f.calls.take(),
            [
                Call::Unschedulable("big".into(), message.clone(), true),
                Call::Unschedulable("big".into(), message, false),
            ]
        );
    }

    #[test]
    fn a_reloaded_policy_applies_from_the_next_step_and_retries_unschedulable_pods() {
        let mut f = Fixture::new();
        let strict = r#"{"predicates":[{"name":"RequireSsd","argument":{"labelsPresence":{"labels":["ssd"],"presence":true}}}],"priorities":[]}"#;
        let build = |text: &str| {
            let policy = berth_policy::parse(text, "test.json").unwrap();
            berth_engine::scheduler_for(&policy, CycleConfig::default()).unwrap()
        };
        f.lp.profiles[0].scheduler = build(strict);
        f.node(node("n1", 4));
        f.pod(pod("web", "berth", 100));
        f.run();
        assert!(matches!(f.calls.take()[..], [Call::Unschedulable(..)]));
        let mut reloaded = Some(build(POLICY));
        f.lp.profiles[0].updates = Some(Box::new(move || reloaded.take()));
        f.now += Duration::from_secs(1);
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), [bind("web", "n1")]);
        // Each rule of the policy now running reports its preparation time.
        let text = f.lp.metrics.encode();
        assert!(
            text.contains(r#"plugin="TaintToleration",extension_point="PreFilter""#),
            "{text}"
        );
    }

    /// Upstream's families move as the loop works: pods entering each sub-queue by event,
    /// the algorithm's time per cycle, the cache's sizes, the lease.
    #[test]
    fn the_metrics_follow_the_queue_the_cycles_and_the_cache() {
        use crate::metrics::tests::value;
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(pod("a", "berth", 600));
        f.pod(pod("big", "berth", 2000));
        f.run();
        assert!(matches!(
            &f.calls.take()[..],
            [Call::Bind(..), Call::Unschedulable(..)]
        ));
        let incoming = |text: &str, queue: &str, event: &str| {
            value(
                text,
                &format!(
                    r#"scheduler_queue_incoming_pods_total{{queue="{queue}",event="{event}"}}"#
                ),
            )
        };
        let size = |text: &str, kind: &str| {
            value(
                text,
                &format!(r#"scheduler_scheduler_cache_size{{type="{kind}"}}"#),
            )
        };
        let text = f.lp.metrics.encode();
        assert_eq!(incoming(&text, "active", "UnschedulablePodAdd"), Some(2.0));
        assert_eq!(
            incoming(&text, "unschedulable", "ScheduleAttemptFailure"),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "scheduler_scheduling_algorithm_duration_seconds_count"
            ),
            Some(2.0)
        );
        assert_eq!(
            (
                size(&text, "nodes"),
                size(&text, "pods"),
                size(&text, "assumed_pods")
            ),
            (Some(1.0), Some(1.0), Some(1.0))
        );
        assert_eq!(
            value(
                &text,
                r#"leader_election_master_status{name="berth-lease"}"#
            ),
            Some(1.0)
        );
        // GeneralPredicates is four upstream plugins: it counts under its own name.
        assert_eq!(
            value(
                &text,
                r#"scheduler_unschedulable_pods{plugin="GeneralPredicates",profile="berth"}"#
            ),
            Some(1.0)
        );

        // A new node: big backs off (its one failure was just now), then becomes active.
        f.node(node("n2", 4));
        let text = f.lp.metrics.encode();
        assert_eq!(incoming(&text, "backoff", "NodeAdd"), Some(1.0));
        f.now += Duration::from_secs(1);
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), [bind("big", "n2")]);
        // The watch confirms a: no longer assumed, still a pod in the cache.
        f.pod(bound(pod("a", "berth", 600), "n1"));
        f.lp.step(f.now);
        let text = f.lp.metrics.encode();
        assert_eq!(incoming(&text, "active", "BackoffComplete"), Some(1.0));
        assert_eq!(
            (
                size(&text, "nodes"),
                size(&text, "pods"),
                size(&text, "assumed_pods")
            ),
            (Some(2.0), Some(2.0), Some(1.0))
        );

        // A reloaded policy retries the unschedulable pods; an updated pod is retried too.
        f.pod(pod("huge", "berth", 100_000));
        f.pod(pod("vast", "berth", 100_000));
        f.run();
        f.now += Duration::from_secs(5);
        let mut vast = pod("vast", "berth", 100_000);
        vast.metadata
            .labels
            .get_or_insert_default()
            .insert("tier".into(), "batch".into());
        f.pod(vast);
        let policy = berth_policy::parse(POLICY, "test.json").unwrap();
        let mut reloaded =
            Some(berth_engine::scheduler_for(&policy, CycleConfig::default()).unwrap());
        f.lp.profiles[0].updates = Some(Box::new(move || reloaded.take()));
        f.lp.step(f.now);
        let text = f.lp.metrics.encode();
        assert_eq!(
            incoming(&text, "active", "UnschedulablePodUpdate"),
            Some(1.0)
        );
        assert_eq!(incoming(&text, "active", "PolicyReload"), Some(1.0));
        assert_eq!(
            incoming(&text, "unschedulable", "ScheduleAttemptFailure"),
            Some(4.0),
            "{text}"
        );
        f.lp.handle(Input::Leader(false), f.now);
        let text = f.lp.metrics.encode();
        assert_eq!(
            value(
                &text,
                r#"leader_election_master_status{name="berth-lease"}"#
            ),
            Some(0.0)
        );
    }

    /// scheduler_unschedulable_pods counts the pods waiting in the unschedulable sub-queue
    /// under each filter that rejected them: upstream's plugin name where the rule is one
    /// plugin, the policy entry's name otherwise.
    #[test]
    fn unschedulable_pods_count_under_the_filters_that_rejected_them() {
        use crate::metrics::tests::value;
        let mut f = Fixture::new();
        let policy = berth_policy::parse(
            r#"{"predicates": [{"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}],
                "priorities": []}"#,
            "test.json",
        )
        .unwrap();
        f.lp.profiles[0].scheduler =
            berth_engine::scheduler_for(&policy, CycleConfig::default()).unwrap();
        let mut ssd = node("ssd", 1);
        ssd.metadata
            .labels
            .get_or_insert_default()
            .insert("disk".into(), "ssd".into());
        f.node(ssd);
        f.node(node("plain", 8));
        let mut picky = pod("picky", "berth", 2000);
        picky.spec.as_mut().unwrap().node_selector =
            Some([("disk".to_string(), "ssd".to_string())].into());
        f.pod(picky);
        f.pod(pod("huge", "berth", 100_000));
        f.run();
        let gauge = |f: &Fixture, plugin: &str| {
            value(
                &f.lp.metrics.encode(),
                &format!(r#"scheduler_unschedulable_pods{{plugin="{plugin}",profile="berth"}}"#),
            )
        };
        // picky: too little CPU on ssd, the wrong labels on plain; huge: CPU everywhere.
        assert_eq!(gauge(&f, "NodeResourcesFit"), Some(2.0));
        assert_eq!(gauge(&f, "NodeAffinity"), Some(1.0));
        // huge is deleted; a bigger ssd node retries picky, which then leaves the queue.
        f.lp.handle(
            Input::Watch(Box::new(WatchEvent::Pod(Change::Delete(
                crate::events::ObjectKey::namespaced("default", "huge"),
            )))),
            f.now,
        );
        assert_eq!(gauge(&f, "NodeResourcesFit"), Some(1.0));
        let mut bigger = node("ssd", 4);
        bigger
            .metadata
            .labels
            .get_or_insert_default()
            .insert("disk".into(), "ssd".into());
        f.node(bigger);
        assert_eq!(
            (gauge(&f, "NodeResourcesFit"), gauge(&f, "NodeAffinity")),
            (Some(0.0), Some(0.0))
        );
        f.now += Duration::from_secs(1);
        f.lp.step(f.now);
        assert!(f.calls.take().contains(&bind("picky", "ssd")));
    }

    #[test]
    fn a_new_node_lets_an_unschedulable_pod_in_after_its_backoff() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(pod("big", "berth", 2000));
        f.run();
        f.calls.take();
        f.node(node("n2", 4));
        assert_eq!(f.lp.queue().place("default/big"), Some(Place::Backoff));
        f.now += Duration::from_secs(1);
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), [bind("big", "n2")]);
    }

    fn with_priority(mut p: Pod, priority: i32) -> Pod {
        p.spec.as_mut().expect("spec").priority = Some(priority);
        p
    }

    #[test]
    fn a_high_priority_pod_preempts_waits_for_its_victim_and_lands_there() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(bound(pod("low", "other", 1000), "n1"));
        f.pod(with_priority(pod("high", "berth", 1000), 100));
        f.run();
        let calls = f.calls.take();
        assert!(
            calls.contains(&Call::Preempt(
                "high".into(),
                "n1".into(),
                vec!["low".into()]
            )),
            "{calls:?}"
        );
        // One attempt, one preemption of one victim.
        let text = f.lp.metrics.encode();
        for (series, want) in [
            ("scheduler_preemption_attempts_total", 1.0),
            ("scheduler_preemption_victims_count", 1.0),
            ("scheduler_preemption_victims_sum", 1.0),
        ] {
            assert_eq!(
                crate::metrics::tests::value(&text, series),
                Some(want),
                "{series} in\n{text}"
            );
        }
        // A pod of lower priority does not take the node while high is nominated there.
        f.pod(with_priority(pod("small", "berth", 100), 1));
        f.pod(with_priority(pod("other-high", "berth", 1000), 50));
        f.run();
        assert!(!f.calls.take().iter().any(|c| matches!(c, Call::Bind(..))));
        // The victim goes; high is retried and bound to n1.
        f.lp.handle(
            Input::Watch(Box::new(WatchEvent::Pod(Change::Delete(
                crate::events::ObjectKey::namespaced("default", "low"),
            )))),
            f.now,
        );
        f.now += Duration::from_secs(11);
        for _ in 0..10 {
            f.lp.step(f.now);
        }
        assert!(f.calls.take().contains(&bind("high", "n1")));
    }

    #[test]
    fn preemption_policy_never_waits() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(bound(pod("low", "other", 1000), "n1"));
        let mut p = with_priority(pod("high", "berth", 1000), 100);
        p.spec.as_mut().expect("spec").preemption_policy = Some("Never".into());
        f.pod(p);
        f.run();
        assert!(
            !f.calls
                .take()
                .iter()
                .any(|c| matches!(c, Call::Preempt(..)))
        );
        // Upstream's PostFilter counts the attempt of a pod that may not preempt too.
        let text = f.lp.metrics.encode();
        for (series, want) in [
            ("scheduler_preemption_attempts_total", 1.0),
            ("scheduler_preemption_victims_count", 0.0),
        ] {
            assert_eq!(
                crate::metrics::tests::value(&text, series),
                Some(want),
                "{series} in\n{text}"
            );
        }
    }

    #[test]
    fn a_rejected_binding_is_forgotten_and_retried_a_vanished_pod_is_not() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(pod("a", "berth", 600));
        f.pod(pod("b", "berth", 300));
        f.run();
        assert_eq!(f.calls.take(), [bind("a", "n1"), bind("b", "n1")]);
        f.bound("a", Err(BindError::Conflict("already assigned".into())));
        f.bound("b", Err(BindError::PodGone("not found".into())));
        assert_eq!(f.lp.queue().place("default/a"), Some(Place::Backoff));
        assert!(!f.lp.queue().contains("default/b"));
        assert_eq!(f.lp.store().assumed_count(), 0);
        let c = f.lp.store().cluster();
        assert_eq!(c.node(c.node_by_name("n1").unwrap()).requested.milli_cpu, 0);
        // The conflict was another scheduler's binding: the watch shows it, and the pod
        // leaves the queue instead of being bound twice.
        f.pod(bound(pod("a", "berth", 600), "n1"));
        assert!(!f.lp.queue().contains("default/a"));
        f.now += Duration::from_secs(10);
        f.run();
        assert_eq!(f.calls.take(), []);
    }

    /// A relist after 410 Gone shows a pod deleted and re-created under its name while the
    /// watch was away only as the new, pending pod: the old one must stop counting.
    #[test]
    fn a_pod_recreated_while_the_watch_was_away_replaces_the_bound_one() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(bound(pod("a", "berth", 800), "n1"));
        let mut again = pod("a", "berth", 600);
        again.metadata.uid = Some("uid-a-2".into());
        f.pod(again);
        let c = f.lp.store().cluster();
        assert_eq!(c.node(c.node_by_name("n1").unwrap()).requested.milli_cpu, 0);
        f.run();
        assert_eq!(f.calls.take(), [bind("a", "n1")]);
    }

    #[test]
    fn a_successful_binding_keeps_the_assumption_until_the_watch_confirms() {
        let mut f = Fixture::new();
        f.node(node("n1", 1));
        f.pod(pod("a", "berth", 600));
        f.run();
        f.bound("a", Ok(()));
        assert_eq!(f.lp.store().assumed_count(), 1);
        f.pod(bound(pod("a", "berth", 600), "n1"));
        assert_eq!(f.lp.store().assumed_count(), 0);
        f.pod(pod("b", "berth", 600));
        f.run();
        assert!(matches!(&f.calls.take()[..], [_, Call::Unschedulable(..)]));
    }

    #[test]
    fn only_a_synced_leader_schedules() {
        let mut f = Fixture::idle();
        f.node(node("n1", 1));
        f.pod(pod("a", "berth", 100));
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), []);
        f.lp.handle(Input::Leader(true), f.now);
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), [bind("a", "n1")]);
        f.lp.handle(Input::Leader(false), f.now);
        f.pod(pod("b", "berth", 100));
        f.lp.step(f.now);
        assert_eq!(f.calls.take(), []);
    }

    #[test]
    fn the_loop_returns_on_shutdown() {
        let f = Fixture::new();
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(Input::Shutdown).unwrap();
        f.lp.run(rx);
    }

    /// The protections' clock in the test below, seconds since the epoch.
    static CLOCK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    /// 2026-11-23T10:00:00Z.
    const T0: i64 = 1_795_428_000;

    fn clock() -> i64 {
        CLOCK.load(Ordering::Relaxed)
    }

    fn at(seconds: i64) -> String {
        berth_engine::health::format_utc(T0 + seconds)
    }

    /// A pod of ReplicaSet `owner` on `node`, placed at T0 + `placed`, with `containers` as
    /// its container statuses.
    fn on_node(
        name: &str,
        owner: &str,
        node: &str,
        placed: i64,
        containers: serde_json::Value,
    ) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                    "uid": format!("rs-{owner}"), "controller": true}]},
            "spec": {"nodeName": node, "schedulerName": "berth",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(placed)},
                {"type": "ContainersReady", "status": "False", "lastTransitionTime": at(placed + 5)}],
                "containerStatuses": containers}
        }))
        .expect("valid pod")
    }

    fn container(state: serde_json::Value) -> serde_json::Value {
        serde_json::json!([{"name": "c", "image": "x", "imageID": "", "ready": false,
            "restartCount": 0, "state": state}])
    }

    #[test]
    fn a_broken_node_is_cut_off_probed_after_its_cool_down_and_closed_by_a_started_probe() {
        const BREAKER: &str = r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "CheckNodeCircuitBreaker",
                "argument": {"circuitBreaker": {"failureThreshold": 2, "minWorkloads": 2,
                    "windowSeconds": 600, "coolDownSeconds": 300, "startTimeoutSeconds": 60}}}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}"#;
        CLOCK.store(T0 + 20, Ordering::Relaxed);
        let mut f = Fixture::idle_with(BREAKER);
        f.lp.store_mut().set_clock(clock);
        f.lp.handle(Input::Leader(true), f.now);
        // bad-node is the emptier node, so LeastRequested would pick it.
        f.node(node("good", 4));
        f.node(node("bad-node", 64));
        let running = |t: i64| container(serde_json::json!({"running": {"startedAt": at(t)}}));
        let waiting = |reason: &str| container(serde_json::json!({"waiting": {"reason": reason}}));
        f.pod(on_node("web-a", "web", "good", 0, running(2)));
        f.pod(on_node("api-a", "api", "good", 0, running(2)));
        f.pod(on_node(
            "web-b",
            "web",
            "bad-node",
            5,
            waiting("CreateContainerError"),
        ));
        assert!(f.calls.take().is_empty(), "one failure opens nothing");
        f.pod(on_node(
            "api-b",
            "api",
            "bad-node",
            6,
            waiting("RunContainerError"),
        ));
        f.lp.step(f.now);
        let calls = f.calls.take();
        assert!(
            matches!(&calls[..], [Call::Event(n, r, _)] if n == "bad-node" && r == "CircuitBreakerOpened"),
            "{calls:?}"
        );
        let text = f.lp.metrics.encode();
        assert!(
            text.contains(r#"berth_circuit_breaker_state{node="bad-node",state="open"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"berth_circuit_breaker_transitions_total{state="open"} 1"#),
            "{text}"
        );

        f.pod(pod("p1", "berth", 100));
        f.run();
        assert_eq!(f.calls.take(), [bind("p1", "good")]);

        // The cool-down (300 s from the failure at T0 + 11) ends: the loop wakes for it.
        assert_eq!(f.lp.store().protections_deadline(), Some(T0 + 311));
        CLOCK.store(T0 + 311, Ordering::Relaxed);
        f.lp.step(f.now);
        let calls = f.calls.take();
        assert!(
            matches!(&calls[..], [Call::Event(_, r, _)] if r == "CircuitBreakerHalfOpen"),
            "{calls:?}"
        );
        f.pod(pod("p2", "berth", 100));
        f.run();
        f.pod(pod("p3", "berth", 100));
        f.run();
        assert_eq!(f.calls.take(), [bind("p2", "bad-node"), bind("p3", "good")]);

        // The probe starts: the breaker closes and the node takes pods again.
        let mut probe = on_node("p2", "probe", "bad-node", 311, running(320));
        probe.metadata.owner_references = None;
        f.pod(probe);
        f.lp.step(f.now);
        let calls = f.calls.take();
        assert!(
            matches!(&calls[..], [Call::Event(_, r, _)] if r == "CircuitBreakerClosed"),
            "{calls:?}"
        );
        f.pod(pod("p4", "berth", 100));
        f.run();
        assert_eq!(f.calls.take(), [bind("p4", "bad-node")]);
        assert!(
            !f.lp
                .metrics
                .encode()
                .contains("berth_circuit_breaker_state{")
        );
    }
}
