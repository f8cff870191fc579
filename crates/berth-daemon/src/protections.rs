//! The history-based protections in the daemon: the node circuit breaker's and crash-loop
//! containment's trackers ([`berth_engine::health`]), owned by the store, fed from the
//! watches by the handlers and the store, moved on by the scheduling loop's clock, and
//! published into the cluster the filters read.
//!
//! Nothing is kept only here that the API does not hold too: at each sync (a new leader, a
//! restart, a relist) the breakers are replayed from the pods' statuses in time order, and
//! containment's facts (placements, NotReady transitions) arrive with their own times, so a
//! replica that takes over reaches the verdicts its predecessor held. What a replica cannot
//! rebuild is evidence the API no longer has: failures of pods deleted since.

use std::collections::{BTreeSet, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use berth_engine::Cluster;
use berth_engine::health::breaker::{CircuitBreakers, Transition};
use berth_engine::health::quarantine::{QuarantineChange, Quarantines, RELEASE_ANNOTATION};
use berth_engine::health::state::{Circuit, ProtectionState};
use berth_engine::health::{PodStart, StartState, Trackers, Workload, workload_of};
use berth_engine::model::{self, SelectorKind};
use berth_kube::convert::{node_readiness, pod_start};
use k8s_openapi::api::core::v1::{Node, Pod};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Something a protection did, to report as an Event, a log line and a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A node's breaker changed state.
    Breaker(Transition),
    /// A workload's quarantine began or ended.
    Quarantine(QuarantineChange),
}

/// The seconds since the epoch on this machine's clock.
pub fn wall_clock() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The trackers the policy needs, and what they have to report.
#[derive(Debug)]
pub struct Protections {
    trackers: Trackers,
    breakers: Option<CircuitBreakers>,
    quarantines: Option<Quarantines>,
    /// Tracked pods' uids by key: a deletion names only the key.
    uids: HashMap<String, String>,
    /// Owners carrying the release annotation.
    released: BTreeSet<Workload>,
    notices: Vec<Notice>,
    /// Whether the published verdicts may be stale.
    dirty: bool,
}

impl Protections {
    /// The trackers `trackers` names, with nothing seen yet.
    pub fn new(trackers: Trackers) -> Self {
        Protections {
            trackers,
            breakers: trackers.breaker.map(CircuitBreakers::new),
            quarantines: trackers.quarantine.map(Quarantines::new),
            uids: HashMap::new(),
            released: BTreeSet::new(),
            notices: Vec::new(),
            dirty: false,
        }
    }

    /// Whether any protection runs (otherwise every call is a no-op).
    pub fn enabled(&self) -> bool {
        self.trackers.any()
    }

    /// Switches to a reloaded policy's trackers: kept when unchanged, replayed from the pods
    /// held with new thresholds, started or dropped. Containment's history restarts when its
    /// thresholds change (it holds no pods to replay; the next NotReady transitions count).
    pub fn reconfigure(&mut self, trackers: Trackers, now: i64) {
        if trackers == self.trackers {
            return;
        }
        self.breakers = match (trackers.breaker, &self.breakers) {
            (None, _) => None,
            (Some(config), Some(old)) => Some(old.replay(config, now)),
            (Some(config), None) => Some(CircuitBreakers::new(config)),
        };
        if trackers.quarantine != self.trackers.quarantine {
            self.quarantines = trackers.quarantine.map(Quarantines::new);
        }
        self.trackers = trackers;
        self.dirty = true;
    }

    /// A pod as the watch shows it (assigned or not, finished or not).
    pub fn pod(&mut self, object: &Pod) {
        if !self.enabled() {
            return;
        }
        let Some(start) = pod_start(object) else {
            return;
        };
        self.start(start);
    }

    /// A pod this scheduler has just assumed onto `node`, before any kubelet has seen it.
    pub fn assumed(&mut self, pod: &model::Pod, node: &str, now: i64) {
        if !self.enabled() || pod.meta.uid.is_empty() {
            return;
        }
        self.start(PodStart {
            uid: pod.meta.uid.clone(),
            key: pod.key(),
            node: node.to_owned(),
            owner: workload_of(pod),
            placed_at: now,
            state: StartState::Waiting {
                sandbox_ready: true,
            },
        });
    }

    fn start(&mut self, start: PodStart) {
        if let Some(quarantines) = &mut self.quarantines
            && let Some(owner) = &start.owner
        {
            quarantines.placed(&start.node, owner, start.placed_at);
        }
        if let Some(breakers) = &mut self.breakers {
            self.uids.insert(start.key.clone(), start.uid.clone());
            breakers.observe(&start);
        }
        self.collect();
    }

    /// A pod deleted (the key is all a deletion names).
    pub fn pod_deleted(&mut self, key: &str) {
        if let (Some(breakers), Some(uid)) = (&mut self.breakers, self.uids.remove(key)) {
            breakers.forget(&uid);
            self.collect();
        }
    }

    /// A node as the watch shows it.
    pub fn node(&mut self, object: &Node) {
        let (Some(quarantines), Some(name)) = (&mut self.quarantines, &object.metadata.name) else {
            return;
        };
        if let Some((ready, at)) = node_readiness(object) {
            quarantines.readiness(name, ready, at);
            self.collect();
        }
    }

    /// A node deleted.
    pub fn node_deleted(&mut self, name: &str) {
        if let Some(breakers) = &mut self.breakers {
            breakers.forget_node(name);
        }
        if let Some(quarantines) = &mut self.quarantines {
            quarantines.forget_node(name);
        }
        self.dirty = true;
    }

    /// A ReplicaSet, StatefulSet or ReplicationController as the watch shows it (`None`
    /// when deleted): whether it carries the release annotation.
    pub fn owner(
        &mut self,
        kind: SelectorKind,
        namespace: &str,
        name: &str,
        annotated: bool,
        now: i64,
    ) {
        let kind = match kind {
            SelectorKind::Service => return,
            SelectorKind::ReplicaSet => "ReplicaSet",
            SelectorKind::StatefulSet => "StatefulSet",
            SelectorKind::ReplicationController => "ReplicationController",
        };
        let workload = Workload {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let changed = if annotated {
            self.released.insert(workload)
        } else {
            self.released.remove(&workload)
        };
        if changed && let Some(quarantines) = &mut self.quarantines {
            quarantines.set_released(self.released.clone(), now);
            self.collect();
        }
    }

    /// Whether a selector object's metadata carries the release annotation.
    pub fn releases(meta: &model::Meta) -> bool {
        meta.annotations.contains_key(RELEASE_ANNOTATION)
    }

    /// Every watch has listed: the breakers are replayed from the pods in time order (the
    /// list came in no particular order).
    pub fn synced(&mut self, now: i64) {
        if let Some(breakers) = &mut self.breakers {
            *breakers = breakers.replay(breakers.config(), now);
            self.dirty = true;
        }
    }

    /// Moves the clock to `now`.
    pub fn advance(&mut self, now: i64) {
        if let Some(breakers) = &mut self.breakers {
            breakers.advance(now);
        }
        if let Some(quarantines) = &mut self.quarantines {
            quarantines.advance(now);
        }
        self.collect();
    }

    /// When [`Self::advance`] next has something to do.
    pub fn next_deadline(&self) -> Option<i64> {
        let breakers = self
            .breakers
            .as_ref()
            .and_then(CircuitBreakers::next_deadline);
        let quarantines = self
            .quarantines
            .as_ref()
            .and_then(Quarantines::next_deadline);
        breakers.into_iter().chain(quarantines).min()
    }

    /// Publishes the verdicts into `cluster` if they may have changed; true when a verdict
    /// was lifted or loosened (pods turned away may fit now).
    pub fn publish(&mut self, cluster: &mut Cluster) -> bool {
        if !self.dirty {
            return false;
        }
        self.dirty = false;
        let state = cluster.protections_mut();
        let mut loosened = false;
        if let Some(breakers) = &self.breakers {
            let view = breakers.view();
            loosened |= state
                .circuits()
                .iter()
                .any(|(node, old)| view.get(node) != Some(old));
            state.set_circuits(view);
        } else if state.any_circuit() {
            state.set_circuits(HashMap::new());
            loosened = true;
        }
        let view = self
            .quarantines
            .as_ref()
            .map(Quarantines::view)
            .unwrap_or_default();
        loosened |= state.quarantines().keys().any(|w| !view.contains_key(w));
        state.set_quarantines(view);
        loosened
    }

    /// What the protections did since the last call.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Gathers the trackers' transitions; any, or a probe taken, means the verdicts changed.
    fn collect(&mut self) {
        if let Some(breakers) = &mut self.breakers {
            let transitions = breakers.take_transitions();
            // A probe placed on a half-open node changes its verdict without a transition.
            self.dirty |= !transitions.is_empty() || breakers.any_not_closed();
            self.notices
                .extend(transitions.into_iter().map(Notice::Breaker));
        }
        if let Some(quarantines) = &mut self.quarantines {
            let changes = quarantines.take_changes();
            self.dirty |= !changes.is_empty();
            self.notices
                .extend(changes.into_iter().map(Notice::Quarantine));
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeStateLabels {
    node: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkloadLabels {
    kind: String,
    namespace: String,
    name: String,
}

/// The protections' metrics: breaker transitions, the nodes whose breaker is not closed and
/// the quarantined workloads (series exist only while a node or workload is affected).
#[derive(Debug, Clone, Default)]
pub struct ProtectionMetrics {
    transitions: Family<StateLabels, Counter>,
    breakers: Family<NodeStateLabels, Gauge>,
    quarantined: Family<WorkloadLabels, Gauge>,
}

impl ProtectionMetrics {
    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = ProtectionMetrics::default();
        registry.register(
            "berth_circuit_breaker_transitions",
            "Node circuit breaker transitions, by the state entered (open, half-open, closed).",
            m.transitions.clone(),
        );
        registry.register(
            "berth_circuit_breaker_state",
            "1 per node whose circuit breaker is open or half-open, by node and state.",
            m.breakers.clone(),
        );
        registry.register(
            "berth_quarantined_workloads",
            "1 per workload crash-loop containment keeps off the nodes, by owner.",
            m.quarantined.clone(),
        );
        m
    }

    /// Records what the protections did, and their verdicts now.
    pub fn update(&self, notices: &[Notice], state: &ProtectionState) {
        for notice in notices {
            if let Notice::Breaker(t) = notice {
                self.transitions
                    .get_or_create(&StateLabels {
                        state: t.kind.state(),
                    })
                    .inc();
            }
        }
        self.breakers.clear();
        for (node, circuit) in state.circuits() {
            let state = match circuit {
                Circuit::Open { .. } => "open",
                Circuit::HalfOpen { .. } => "half-open",
            };
            self.breakers
                .get_or_create(&NodeStateLabels {
                    node: node.clone(),
                    state,
                })
                .set(1);
        }
        self.quarantined.clear();
        for workload in state.quarantines().keys() {
            self.quarantined
                .get_or_create(&WorkloadLabels {
                    kind: workload.kind.clone(),
                    namespace: workload.namespace.clone(),
                    name: workload.name.clone(),
                })
                .set(1);
        }
    }
}
