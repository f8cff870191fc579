//! The scheduling queue, as upstream's: an active queue (priority, then age), a backoff queue
//! (exponential per pod, 1 s to 10 s), and an unschedulable set retried on cluster events
//! that could help and at least every 60 s.
//!
//! Time is passed in (`now`), never read here, so tests drive it with a fake clock.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use berth_engine::model;

use crate::metrics::Metrics;

/// Why a pod entered a sub-queue: upstream's `event` label of
/// `scheduler_queue_incoming_pods_total` (a cluster event's resource and action, or the
/// queue's own reasons).
pub mod event {
    /// A new pending pod of this scheduler.
    pub const POD_ADD: &str = "UnschedulablePodAdd";
    /// An unschedulable pod changed.
    pub const POD_UPDATE: &str = "UnschedulablePodUpdate";
    /// An attempt failed (no node fits, or the assumption or binding failed).
    pub const SCHEDULE_ATTEMPT_FAILURE: &str = "ScheduleAttemptFailure";
    /// A pod's backoff expired.
    pub const BACKOFF_COMPLETE: &str = "BackoffComplete";
    /// A pod stayed unschedulable for the whole timeout (60 s).
    pub const UNSCHEDULABLE_TIMEOUT: &str = "UnschedulableTimeout";
    /// A node appeared.
    pub const NODE_ADD: &str = "NodeAdd";
    /// A node changed (or its JSON, which an extender needs, was filled in).
    pub const NODE_UPDATE: &str = "NodeUpdate";
    /// A bound pod went away (deleted, finished, or replaced by a re-created pending one).
    pub const ASSIGNED_POD_DELETE: &str = "AssignedPodDelete";
    /// A bound pod now asks for less (an in-place resize down, or its resize found
    /// infeasible), freeing room on its node.
    pub const ASSIGNED_POD_UPDATE: &str = "AssignedPodUpdate";
    /// Berth's own: a reloaded policy or plugin was swapped in.
    pub const POLICY_RELOAD: &str = "PolicyReload";
    /// Berth's own: a protection lifted a verdict (a circuit breaker half-open or closed,
    /// a quarantine ended).
    pub const PROTECTION_LIFTED: &str = "ProtectionLifted";
}

/// Queue timing, upstream's defaults.
#[derive(Debug, Clone, Copy)]
pub struct QueueConfig {
    /// Backoff after the first failed attempt; doubled per further attempt.
    pub initial_backoff: Duration,
    /// Longest backoff.
    pub max_backoff: Duration,
    /// Longest time a pod stays unschedulable without a retry.
    pub unschedulable_timeout: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            unschedulable_timeout: Duration::from_secs(60),
        }
    }
}

/// A pending pod with its scheduling history.
#[derive(Debug, Clone)]
pub struct QueuedPod {
    /// The pod as last seen by the watch.
    pub pod: model::Pod,
    /// Failed scheduling attempts so far.
    pub attempts: u32,
    /// When the last attempt ended; backoff counts from here.
    pub last_attempt: Option<Instant>,
    /// When the pod entered the queue (pod_scheduling_sli_duration_seconds counts from
    /// here to its binding).
    pub queued_at: Instant,
    /// The filters (upstream plugin names, or policy entry names where a rule is not one
    /// upstream plugin) that rejected some node in the last attempt: the
    /// `scheduler_unschedulable_pods` this pod counts under while unschedulable.
    pub unschedulable_plugins: Vec<String>,
    /// The last FitError message reported on the pod, so an unchanged condition is not
    /// patched again.
    pub reported: Option<String>,
}

impl QueuedPod {
    /// A pod never tried before, entering the queue at `now`.
    pub fn new(pod: model::Pod, now: Instant) -> Self {
        QueuedPod {
            pod,
            attempts: 0,
            last_attempt: None,
            queued_at: now,
            unschedulable_plugins: Vec::new(),
            reported: None,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        self.pod.key()
    }
}

/// Which sub-queue a pod is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Ready to be scheduled.
    Active,
    /// Waiting for its backoff to expire.
    Backoff,
    /// Failed to fit; waiting for a cluster event or the periodic flush.
    Unschedulable,
}

/// Active-queue order: higher priority first, then older, then first queued.
type ActiveKey = (Reverse<i32>, i64, u64);

#[derive(Debug)]
enum Slot {
    Active(ActiveKey),
    Backoff(Instant, u64),
    Unschedulable(Instant),
}

#[derive(Debug)]
struct Entry {
    pod: QueuedPod,
    slot: Slot,
}

/// Pending pods of this scheduler, not yet assumed onto a node.
#[derive(Debug)]
pub struct Queue {
    config: QueueConfig,
    entries: HashMap<String, Entry>,
    active: BTreeSet<(ActiveKey, String)>,
    backoff: BTreeSet<(Instant, u64, String)>,
    unschedulable: usize,
    next_seq: u64,
    metrics: Option<Metrics>,
}

impl Queue {
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        Queue {
            config,
            entries: HashMap::new(),
            active: BTreeSet::new(),
            backoff: BTreeSet::new(),
            unschedulable: 0,
            next_seq: 0,
            metrics: None,
        }
    }

    /// Counts the pods entering each sub-queue in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn incoming(&self, queue: &'static str, event: Option<&'static str>) {
        if let (Some(m), Some(event)) = (&self.metrics, event) {
            m.queue_incoming(queue, event);
        }
    }

    /// Adds a new pending pod, or replaces the pod of a queued one. An update may make an
    /// unschedulable pod fit, so it is retried (after any remaining backoff).
    pub fn upsert(&mut self, pod: model::Pod, now: Instant) {
        let key = pod.key();
        match self.take(&key) {
            None => self.push_active(QueuedPod::new(pod, now), Some(event::POD_ADD)),
            Some((mut queued, slot)) => {
                let unchanged = queued.pod == pod;
                queued.pod = pod;
                // A pod updated where it is stays there: nothing enters a queue.
                match slot {
                    Slot::Active(_) => self.push_active(queued, None),
                    Slot::Backoff(at, _) => self.push_backoff(queued, at, None),
                    Slot::Unschedulable(since) if unchanged => {
                        self.push_unschedulable(queued, since, None)
                    }
                    Slot::Unschedulable(_) => {
                        self.activate_or_backoff(queued, now, event::POD_UPDATE)
                    }
                }
            }
        }
    }

    /// Removes a pod (deleted, bound, or no longer ours). Returns whether it was queued.
    pub fn remove(&mut self, key: &str) -> bool {
        self.take(key).is_some()
    }

    /// Whether the pod is queued anywhere.
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Where a pod is queued.
    pub fn place(&self, key: &str) -> Option<Place> {
        self.entries.get(key).map(|e| match e.slot {
            Slot::Active(_) => Place::Active,
            Slot::Backoff(..) => Place::Backoff,
            Slot::Unschedulable(_) => Place::Unschedulable,
        })
    }

    /// Moves expired backoffs to the active queue and unschedulable pods that waited too
    /// long back into scheduling; then takes the head of the active queue.
    pub fn pop(&mut self, now: Instant) -> Option<QueuedPod> {
        self.flush(now);
        let (_, key) = self.active.pop_first()?;
        let entry = self.entries.remove(&key).expect("active pods have entries");
        Some(entry.pod)
    }

    /// Moves pods whose time has come: backoff expired -> active; unschedulable for longer
    /// than the timeout -> active (or backoff).
    pub fn flush(&mut self, now: Instant) {
        while let Some((at, _, _)) = self.backoff.first() {
            if *at > now {
                break;
            }
            let (_, _, key) = self.backoff.pop_first().expect("checked non-empty");
            let entry = self
                .entries
                .remove(&key)
                .expect("backoff pods have entries");
            self.push_active(entry.pod, Some(event::BACKOFF_COMPLETE));
        }
        if self.unschedulable == 0 {
            return;
        }
        let timeout = self.config.unschedulable_timeout;
        let stale: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| {
                matches!(e.slot, Slot::Unschedulable(since) if now.duration_since(since) >= timeout)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            let (queued, _) = self.take(&key).expect("listed above");
            self.activate_or_backoff(queued, now, event::UNSCHEDULABLE_TIMEOUT);
        }
    }

    /// A pod that fits no node: counts the attempt and parks it until a cluster event.
    pub fn unschedulable(&mut self, mut queued: QueuedPod, now: Instant) {
        queued.attempts += 1;
        queued.last_attempt = Some(now);
        self.push_unschedulable(queued, now, Some(event::SCHEDULE_ATTEMPT_FAILURE));
    }

    /// A pod whose attempt failed for another reason (a rejected binding): counts the
    /// attempt and retries it after its backoff.
    pub fn backoff(&mut self, mut queued: QueuedPod, now: Instant) {
        queued.attempts += 1;
        queued.last_attempt = Some(now);
        let at = now + self.backoff_duration(queued.attempts);
        self.push_backoff(queued, at, Some(event::SCHEDULE_ATTEMPT_FAILURE));
    }

    /// A cluster event (`event`, its metric label) that could make unschedulable pods fit:
    /// retries them all (after any remaining backoff). Returns how many moved.
    pub fn move_all_unschedulable(&mut self, now: Instant, event: &'static str) -> usize {
        if self.unschedulable == 0 {
            return 0;
        }
        let keys: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.slot, Slot::Unschedulable(_)))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &keys {
            let (queued, _) = self.take(key).expect("listed above");
            self.activate_or_backoff(queued, now, event);
        }
        keys.len()
    }

    /// The next time something moves by itself (a backoff expires or an unschedulable pod
    /// times out), if anything is waiting.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let backoff = self.backoff.first().map(|(at, _, _)| *at);
        let timeout = self.config.unschedulable_timeout;
        let unschedulable = (self.unschedulable > 0)
            .then(|| {
                self.entries
                    .values()
                    .filter_map(|e| match e.slot {
                        Slot::Unschedulable(since) => Some(since + timeout),
                        _ => None,
                    })
                    .min()
            })
            .flatten();
        match (backoff, unschedulable) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a pod is ready to pop right now (without flushing).
    pub fn has_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Pods per sub-queue: (active, backoff, unschedulable).
    pub fn lengths(&self) -> (usize, usize, usize) {
        (self.active.len(), self.backoff.len(), self.unschedulable)
    }

    /// Upstream's per-pod backoff: initial x 2^(attempts-1), capped.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.config.initial_backoff;
        for _ in 1..attempts {
            d = d.saturating_mul(2);
            if d >= self.config.max_backoff {
                return self.config.max_backoff;
            }
        }
        d.min(self.config.max_backoff)
    }

    fn backoff_expiry(&self, queued: &QueuedPod) -> Option<Instant> {
        queued
            .last_attempt
            .map(|at| at + self.backoff_duration(queued.attempts))
    }

    fn activate_or_backoff(&mut self, queued: QueuedPod, now: Instant, event: &'static str) {
        match self.backoff_expiry(&queued) {
            Some(at) if at > now => self.push_backoff(queued, at, Some(event)),
            _ => self.push_active(queued, Some(event)),
        }
    }

    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn push_active(&mut self, queued: QueuedPod, event: Option<&'static str>) {
        self.incoming("active", event);
        let key = queued.key();
        let order = (
            Reverse(queued.pod.priority),
            queued.pod.meta.creation_timestamp,
            self.seq(),
        );
        self.active.insert((order, key.clone()));
        self.entries.insert(
            key,
            Entry {
                pod: queued,
                slot: Slot::Active(order),
            },
        );
    }

    fn push_backoff(&mut self, queued: QueuedPod, at: Instant, event: Option<&'static str>) {
        self.incoming("backoff", event);
        let key = queued.key();
        let seq = self.seq();
        self.backoff.insert((at, seq, key.clone()));
        self.entries.insert(
            key,
            Entry {
                pod: queued,
                slot: Slot::Backoff(at, seq),
            },
        );
    }

    fn push_unschedulable(
        &mut self,
        queued: QueuedPod,
        since: Instant,
        event: Option<&'static str>,
    ) {
        self.incoming("unschedulable", event);
        if let Some(m) = &self.metrics {
            m.unschedulable_pods(&queued.unschedulable_plugins, 1);
        }
        self.unschedulable += 1;
        self.entries.insert(
            queued.key(),
            Entry {
                pod: queued,
                slot: Slot::Unschedulable(since),
            },
        );
    }

    /// Removes a pod from whichever sub-queue holds it.
    fn take(&mut self, key: &str) -> Option<(QueuedPod, Slot)> {
        let entry = self.entries.remove(key)?;
        match entry.slot {
            Slot::Active(order) => {
                self.active.remove(&(order, key.to_string()));
            }
            Slot::Backoff(at, seq) => {
                self.backoff.remove(&(at, seq, key.to_string()));
            }
            Slot::Unschedulable(_) => {
                self.unschedulable -= 1;
                if let Some(m) = &self.metrics {
                    m.unschedulable_pods(&entry.pod.unschedulable_plugins, -1);
                }
            }
        }
        Some((entry.pod, entry.slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, priority: i32, created: i64) -> model::Pod {
        let mut p = model::Pod::default();
        p.meta.name = name.into();
        p.meta.namespace = "default".into();
        p.meta.creation_timestamp = created;
        p.priority = priority;
        p
    }

    fn names(q: &mut Queue, now: Instant) -> Vec<String> {
        std::iter::from_fn(|| q.pop(now))
            .map(|p| p.pod.meta.name)
            .collect()
    }

    #[test]
    fn active_order_is_priority_then_age_then_arrival() {
        let now = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("low-old", 0, 1), now);
        q.upsert(pod("high-new", 10, 9), now);
        q.upsert(pod("low-new", 0, 5), now);
        q.upsert(pod("high-old", 10, 2), now);
        q.upsert(pod("low-old-second", 0, 1), now);
        assert_eq!(
            names(&mut q, now),
            [
                "high-old",
                "high-new",
                "low-old",
                "low-old-second",
                "low-new"
            ]
        );
    }

    #[test]
    fn upsert_replaces_and_reorders() {
        let now = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("a", 0, 1), now);
        q.upsert(pod("b", 0, 2), now);
        q.upsert(pod("b", 5, 2), now);
        assert_eq!(q.lengths(), (2, 0, 0));
        assert_eq!(names(&mut q, now), ["b", "a"]);
    }

    #[test]
    fn backoff_doubles_from_one_second_to_ten() {
        let q = Queue::new(QueueConfig::default());
        let secs: Vec<u64> = (1..=6).map(|a| q.backoff_duration(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn backoff_queue_releases_pods_when_their_time_comes() {
        let t0 = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("a", 0, 1), t0);
        let mut a = q.pop(t0).unwrap();
        a.attempts = 2; // the third failure waits 4 s
        q.backoff(a, t0);
        assert_eq!(q.place("default/a"), Some(Place::Backoff));
        assert_eq!(q.next_wakeup(), Some(t0 + Duration::from_secs(4)));
        assert!(q.pop(t0 + Duration::from_millis(3999)).is_none());
        let again = q.pop(t0 + Duration::from_secs(4)).unwrap();
        assert_eq!(again.attempts, 3);
        assert!(q.next_wakeup().is_none());
    }

    #[test]
    fn unschedulable_pods_return_on_cluster_events_after_their_backoff() {
        let t0 = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("a", 0, 1), t0);
        q.upsert(pod("b", 0, 2), t0);
        let a = q.pop(t0).unwrap();
        q.unschedulable(a, t0);
        let b = q.pop(t0).unwrap();
        q.unschedulable(b, t0);
        assert_eq!(q.lengths(), (0, 0, 2));
        // Half a second later a node appears: both still back off (1 s after one failure).
        assert_eq!(
            q.move_all_unschedulable(t0 + Duration::from_millis(500), event::NODE_ADD),
            2
        );
        assert_eq!(q.lengths(), (0, 2, 0));
        assert!(q.pop(t0 + Duration::from_millis(900)).is_none());
        assert_eq!(
            names(&mut q, t0 + Duration::from_secs(1)),
            ["a", "b"],
            "expired backoffs are scheduled in queue order"
        );
    }

    #[test]
    fn unschedulable_pods_are_retried_every_minute_without_events() {
        let t0 = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("a", 0, 1), t0);
        let a = q.pop(t0).unwrap();
        q.unschedulable(a, t0);
        assert_eq!(q.next_wakeup(), Some(t0 + Duration::from_secs(60)));
        assert!(q.pop(t0 + Duration::from_secs(59)).is_none());
        assert_eq!(names(&mut q, t0 + Duration::from_secs(60)), ["a"]);
    }

    #[test]
    fn an_updated_unschedulable_pod_is_retried_an_unchanged_one_is_not() {
        let t0 = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        q.upsert(pod("a", 0, 1), t0);
        let a = q.pop(t0).unwrap();
        q.unschedulable(a, t0);
        let later = t0 + Duration::from_secs(5);
        q.upsert(pod("a", 0, 1), later);
        assert_eq!(q.place("default/a"), Some(Place::Unschedulable));
        let mut changed = pod("a", 0, 1);
        changed.node_selector.insert("disk".into(), "ssd".into());
        q.upsert(changed, later);
        assert_eq!(q.place("default/a"), Some(Place::Active));
    }

    #[test]
    fn remove_takes_a_pod_out_of_any_sub_queue() {
        let t0 = Instant::now();
        let mut q = Queue::new(QueueConfig::default());
        for name in ["a", "b", "c"] {
            q.upsert(pod(name, 0, 1), t0);
        }
        let a = q.pop(t0).unwrap();
        q.unschedulable(a, t0);
        let b = q.pop(t0).unwrap();
        q.backoff(b, t0);
        assert!(q.remove("default/a"));
        assert!(q.remove("default/b"));
        assert!(q.remove("default/c"));
        assert!(!q.remove("default/c"));
        assert_eq!(q.lengths(), (0, 0, 0));
        assert!(q.next_wakeup().is_none());
    }
}
