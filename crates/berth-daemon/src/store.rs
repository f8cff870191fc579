//! The scheduling thread's state of the cluster: the engine's [`Cluster`] kept current from
//! [`ClusterEvent`]s, the pods this scheduler has assumed but not yet seen bound, the
//! nominated pods, the PodDisruptionBudgets, the protections' trackers and the extenders'
//! documents. It knows no API object (the handlers convert them), leaves the queue to the
//! handlers (each change says what it means for it: [`Routing`]) and never calls the
//! scheduler: a scheduling attempt borrows its parts ([`Store::attempt_parts`]).
//!
//! Invariants:
//! - Only assigned pods (spec.nodeName set, not finished) are in the cluster, plus the pods
//!   assumed by this scheduler; pending pods of this scheduler are in the queue; pending
//!   pods of other schedulers are nowhere.
//! - A pod is in at most one of: the cluster (assigned or assumed), `unplaced`, the queue.
//! - Nothing is rebuilt: each event updates one object.

use std::collections::{HashMap, HashSet};

use berth_engine::DisruptionBudgets;
use berth_engine::Placement;
use berth_engine::health::Trackers;
use berth_engine::resources::Resources;
use berth_engine::{Cluster, NodeId, Nominator, PodInfo, Reservation, model};
use berth_extender::Documents;
use tracing::{debug, warn};

use crate::events::{ClusterEvent, Kind, ObjectKey, VolumeObject, cluster_event, kind_of_selector};
use crate::protections::{Notice, Protections, wall_clock};
use crate::queue::{QueuedPod, event};

/// A pod this scheduler placed whose binding the watch has not confirmed yet.
#[derive(Debug, Clone)]
pub struct Assumed {
    /// The node it was assumed onto.
    pub node: String,
    /// The pod as it was queued, to requeue it if the binding fails.
    pub queued: QueuedPod,
    /// What Reserve recorded, for Unreserve if the binding fails.
    pub reservation: Reservation,
}

/// The pods a scheduling attempt assumes, while the cluster is lent to it.
#[derive(Debug)]
pub struct Assumptions<'a> {
    assumed: &'a mut HashMap<String, Assumed>,
    protections: &'a mut Protections,
    clock: fn() -> i64,
}

impl Assumptions<'_> {
    /// Records `queued`, already reserved and counted on `node` in `cluster`, as assumed
    /// until the watch shows it bound (or its binding fails), and tells the protections it
    /// was placed there. Returns the node's name.
    pub fn assume(
        &mut self,
        cluster: &mut Cluster,
        queued: QueuedPod,
        node: NodeId,
        reservation: Reservation,
    ) -> String {
        let name = cluster.node(node).name().to_string();
        self.protections.assumed(&queued.pod, &name, (self.clock)());
        self.protections.publish(cluster);
        self.assumed.insert(
            queued.key(),
            Assumed {
                node: name.clone(),
                queued,
                reservation,
            },
        );
        name
    }
}

/// The cluster as the scheduling thread knows it, plus assumptions.
#[derive(Debug)]
pub struct Store {
    cluster: Cluster,
    /// Assigned pods whose node the store does not have (yet, or any more), by pod key.
    unplaced: HashMap<String, model::Pod>,
    assumed: HashMap<String, Assumed>,
    synced: HashSet<Kind>,
    /// The JSON of nodes and pending pods, for the Policy's extenders (None without any).
    documents: Option<Documents>,
    /// Pending pods of this scheduler nominated to a node (`status.nominatedNodeName`, or a
    /// preemption of this replica the watch has not shown yet).
    nominator: Nominator,
    /// PodDisruptionBudgets, for preemption.
    budgets: DisruptionBudgets,
    /// The circuit breaker's and containment's trackers, when the policy has them.
    protections: Protections,
    /// Seconds since the epoch: the protections judge kubelets' timestamps by it.
    clock: fn() -> i64,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    /// An empty store: one cluster for every profile, every profile's assumed pods in it,
    /// so no two profiles place onto the same room.
    pub fn new() -> Self {
        Store {
            cluster: Cluster::new(),
            nominator: Nominator::new(),
            budgets: DisruptionBudgets::new(),
            unplaced: HashMap::new(),
            assumed: HashMap::new(),
            synced: HashSet::new(),
            documents: None,
            protections: Protections::new(Trackers::default()),
            clock: wall_clock,
        }
    }

    /// The extenders' documents, when the Policy has extenders.
    pub fn documents(&self) -> Option<&Documents> {
        self.documents.as_ref()
    }

    /// The protections' trackers, for the handlers to feed what kubelets reported.
    pub fn protections_mut(&mut self) -> &mut Protections {
        &mut self.protections
    }

    /// Seconds since the epoch, by the store's clock.
    pub fn now(&self) -> i64 {
        (self.clock)()
    }

    /// Runs the trackers a (re)loaded policy's protections need.
    pub fn set_trackers(&mut self, trackers: Trackers) {
        let now = (self.clock)();
        self.protections.reconfigure(trackers, now);
        self.publish_protections();
    }

    /// Reads the time from `clock` instead of the machine's (tests).
    pub fn set_clock(&mut self, clock: fn() -> i64) {
        self.clock = clock;
    }

    /// Moves the protections to the current time; true when a verdict was lifted, so pods
    /// turned away may fit now.
    pub fn advance_protections(&mut self) -> bool {
        if !self.protections.enabled() {
            return false;
        }
        self.protections.advance((self.clock)());
        self.publish_protections()
    }

    /// When the protections next need [`Store::advance_protections`], in seconds since the
    /// epoch.
    pub fn protections_deadline(&self) -> Option<i64> {
        self.protections.next_deadline()
    }

    /// What the protections did since the last call.
    pub fn take_protection_notices(&mut self) -> Vec<Notice> {
        self.protections.take_notices()
    }

    fn publish_protections(&mut self) -> bool {
        self.protections.publish(&mut self.cluster)
    }

    /// Keeps the JSON of nodes and of this scheduler's pending pods in `documents`, for the
    /// extenders.
    pub fn set_documents(&mut self, documents: Documents) {
        self.documents = Some(documents);
    }

    /// The engine cluster, for a scheduling cycle.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The nominated pods.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    /// The PodDisruptionBudgets.
    pub fn budgets(&self) -> &DisruptionBudgets {
        &self.budgets
    }

    /// Nominates a pod (compiled, with `nominated_node_name` set) to `node` after its
    /// preemption, before the watch shows the new status.
    pub fn nominate(&mut self, info: PodInfo, node: NodeId) {
        self.nominator.add(info, node);
    }

    /// Drops a pod's nomination.
    pub fn clear_nomination(&mut self, key: &str) {
        self.nominator.remove(key);
    }

    /// Whether every watched kind has been listed completely once.
    pub fn synced(&self) -> bool {
        self.synced.len() == Kind::ALL.len()
    }

    /// Drops interned strings no object uses any more once enough have piled up (each
    /// rollout's `pod-template-hash`, each Job's UID...), renumbering the symbols of the
    /// cluster, the nominated pods and the budgets. Between cycles only: a pod compiled for
    /// a cycle holds symbols too.
    pub fn compact(&mut self) -> Option<berth_engine::Compaction> {
        self.cluster
            .compact_interner_if_needed(&mut [&mut self.nominator, &mut self.budgets])
    }

    /// Entries in the store's tables that grow with the cluster, by table name (the
    /// `berth_cache_entries` gauge): each must follow the live objects, not the history.
    pub fn sizes(&self) -> [(&'static str, usize); 13] {
        let c = self.cluster.sizes();
        [
            ("interned_strings", c.interned),
            ("pods", c.pods),
            ("pod_slots", c.pod_slots),
            ("nodes", c.nodes),
            ("node_slots", c.node_slots),
            ("pod_label_pairs", c.pod_label_pairs),
            ("node_label_pairs", c.node_label_pairs),
            ("label_columns", c.label_columns),
            ("image_names", c.image_names),
            ("term_label_pairs", c.term_label_pairs),
            ("unplaced_pods", self.unplaced.len()),
            ("assumed_pods", self.assumed.len()),
            ("nominated_pods", self.nominator.len()),
        ]
    }

    /// How many pods are assumed and not yet confirmed.
    pub fn assumed_count(&self) -> usize {
        self.assumed.len()
    }

    /// Upstream's cache sizes (`scheduler_scheduler_cache_size`): nodes, pods (assigned,
    /// assumed, and bound to a node the store does not have) and assumed pods.
    pub fn upstream_sizes(&self) -> (usize, usize, usize) {
        let c = self.cluster.sizes();
        (c.nodes, c.pods + self.unplaced.len(), self.assumed.len())
    }

    /// Compiles a pending pod against the cluster's interner.
    pub fn compile(&mut self, pod: model::Pod) -> PodInfo {
        self.cluster.compile_pod(pod)
    }

    /// What a scheduling attempt changes: the cluster, the nominator and the budgets for the
    /// engine's [`schedule_one`](berth_engine::schedule_one), and the
    /// assumptions for the pod it places.
    pub fn attempt_parts(&mut self) -> (Placement<'_>, Assumptions<'_>) {
        let placement = Placement {
            cluster: &mut self.cluster,
            nominator: &mut self.nominator,
            budgets: &self.budgets,
        };
        let assumptions = Assumptions {
            assumed: &mut self.assumed,
            protections: &mut self.protections,
            clock: self.clock,
        };
        (placement, assumptions)
    }

    /// The engine cluster, for the scheduler's Unreserve of a placement whose binding failed.
    pub fn cluster_mut(&mut self) -> &mut Cluster {
        &mut self.cluster
    }

    /// Drops the assumption for the pod with this key and UID (its binding failed) and
    /// returns the queued pod for a retry with its reservation (for the scheduler's
    /// Unreserve).
    /// None when the watch has meanwhile shown the pod bound, deleted or re-created: then
    /// there is nothing to undo.
    pub fn forget(&mut self, key: &str, uid: &str) -> Option<(QueuedPod, Reservation)> {
        if self.assumed.get(key)?.queued.pod.meta.uid != uid {
            return None;
        }
        let assumed = self.assumed.remove(key)?;
        let pod = &assumed.queued.pod;
        if self
            .cluster
            .remove_pod(&pod.meta.namespace, &pod.meta.name)
            .is_none()
        {
            self.unplaced.remove(key);
        }
        Some((assumed.queued, assumed.reservation))
    }

    /// Applies one change; returns what it means for the scheduling queue, which the
    /// handlers route.
    pub fn apply(&mut self, change: ClusterEvent) -> Routing {
        let mut queue = QueueChange::None;
        let (kind, could_help) = match change {
            ClusterEvent::NodeApplied {
                node,
                json_newly_held,
            } => (Kind::Node, self.node(node, json_newly_held)),
            ClusterEvent::NodeDeleted(name) => (Kind::Node, self.node_deleted(&name)),
            ClusterEvent::PodBound(pod) => {
                queue = QueueChange::Remove(pod.key());
                (Kind::Pod, self.assigned_pod(pod))
            }
            ClusterEvent::PodPending { pod, ours } => {
                let (effect, change) = self.pending_pod(pod, ours);
                queue = change;
                (Kind::Pod, effect)
            }
            ClusterEvent::PodDeleted(key) => {
                queue = QueueChange::Remove(format!("{}/{}", key.namespace(), key.name));
                (Kind::Pod, self.pod_deleted(&key))
            }
            ClusterEvent::NamespaceApplied(ns) => {
                let known = self
                    .cluster
                    .interner()
                    .get(&ns.meta.name)
                    .is_some_and(|sym| self.cluster.namespace(sym).is_some());
                self.cluster.upsert_namespace(&ns);
                let effect = Effect::CouldHelp(cluster_event(Kind::Namespace, !known));
                (Kind::Namespace, effect)
            }
            ClusterEvent::NamespaceDeleted(name) => {
                self.cluster.remove_namespace(&name);
                (Kind::Namespace, Effect::None)
            }
            ClusterEvent::SelectorObjectApplied(selector) => {
                let kind = kind_of_selector(selector.kind);
                (kind, self.selector_object(&selector))
            }
            ClusterEvent::SelectorObjectDeleted(kind, key) => {
                let now = (self.clock)();
                self.protections
                    .owner(kind, key.namespace(), &key.name, false, now);
                self.cluster
                    .remove_selector_object(kind, key.namespace(), &key.name);
                (kind_of_selector(kind), Effect::None)
            }
            ClusterEvent::VolumeObjectApplied(object) => self.volume_object(object),
            ClusterEvent::VolumeObjectDeleted(kind, key) => {
                let c = &mut self.cluster;
                match kind {
                    Kind::PersistentVolume => {
                        c.remove_persistent_volume(&key.name);
                    }
                    Kind::PersistentVolumeClaim => {
                        c.remove_persistent_volume_claim(key.namespace(), &key.name);
                    }
                    Kind::StorageClass => {
                        c.remove_storage_class(&key.name);
                    }
                    Kind::CsiNode => {
                        c.remove_csi_node(&key.name);
                    }
                    _ => {}
                }
                (kind, Effect::None)
            }
            ClusterEvent::BudgetApplied(pdb) => {
                let before = self.budgets.len();
                self.budgets.upsert(&mut self.cluster, &pdb);
                let added = self.budgets.len() > before;
                let effect = Effect::CouldHelp(cluster_event(Kind::PodDisruptionBudget, added));
                (Kind::PodDisruptionBudget, effect)
            }
            ClusterEvent::BudgetDeleted(key) => {
                self.budgets
                    .remove(&self.cluster, key.namespace(), &key.name);
                (Kind::PodDisruptionBudget, Effect::None)
            }
            ClusterEvent::Listed(kind) => (kind, Effect::Synced),
            ClusterEvent::Unreadable(kind, key) => (kind, self.unreadable(kind, &key)),
            ClusterEvent::Nothing(kind) => (kind, Effect::None),
        };
        let protections_lifted = self.publish_protections();
        let could_help = match could_help {
            Effect::None if protections_lifted => Effect::CouldHelp(event::PROTECTION_LIFTED),
            other => other,
        };
        let retry = match could_help {
            Effect::Synced => {
                let was_synced = self.synced();
                self.synced.insert(kind);
                if !was_synced && self.synced() && self.protections.enabled() {
                    // The lists came in no particular order: replay them in time order.
                    self.protections.synced((self.clock)());
                    self.publish_protections();
                }
                None
            }
            Effect::CouldHelp(event) => Some(event),
            Effect::None => None,
        };
        Routing { queue, retry }
    }

    fn node(&mut self, node: model::Node, json_newly_held: bool) -> Effect {
        let name = node.meta.name.clone();
        let existing = self.cluster.node_by_name(&name);
        if existing.is_some_and(|id| *self.cluster.node(id).node == node) {
            // A relist after the extenders came to need node JSON fills it in: a pod
            // refused because its node had none may fit now.
            return if json_newly_held {
                Effect::CouldHelp(event::NODE_UPDATE)
            } else {
                Effect::None
            };
        }
        if let Err(e) = self.cluster.upsert_node(node) {
            warn!(node = %name, error = %e, "node left out of the cache");
            return Effect::None;
        }
        if existing.is_none() {
            self.place_waiting_pods(&name);
            return Effect::CouldHelp(event::NODE_ADD);
        }
        Effect::CouldHelp(event::NODE_UPDATE)
    }

    fn node_deleted(&mut self, name: &str) -> Effect {
        let Some(id) = self.cluster.node_by_name(name) else {
            return Effect::None;
        };
        // The API server keeps pods bound to a deleted node until they are garbage
        // collected; park them so they count again if the node comes back.
        let pods: Vec<model::Pod> = self
            .cluster
            .node(id)
            .pods
            .iter()
            .map(|p| self.cluster.pod(*p).pod.clone())
            .collect();
        for pod in pods {
            self.cluster.remove_pod(&pod.meta.namespace, &pod.meta.name);
            self.unplaced.insert(pod.key(), pod);
        }
        self.nominator.remove_node(id);
        self.cluster.remove_node(name);
        Effect::None
    }

    fn pod_deleted(&mut self, key: &ObjectKey) -> Effect {
        let pod_key = format!("{}/{}", key.namespace(), key.name);
        self.protections.pod_deleted(&pod_key);
        self.nominator.remove(&pod_key);
        self.assumed.remove(&pod_key);
        let was_assigned = self
            .cluster
            .remove_pod(key.namespace(), &key.name)
            .is_some();
        self.unplaced.remove(&pod_key);
        if was_assigned {
            Effect::CouldHelp(event::ASSIGNED_POD_DELETE)
        } else {
            Effect::None
        }
    }

    fn place_waiting_pods(&mut self, node: &str) {
        let waiting: Vec<String> = self
            .unplaced
            .iter()
            .filter(|(_, p)| p.node_name.as_deref() == Some(node))
            .map(|(k, _)| k.clone())
            .collect();
        for key in waiting {
            let pod = self.unplaced.remove(&key).expect("listed above");
            self.place(pod);
        }
    }

    /// A pod the API server shows bound: it replaces any assumption (confirming it when
    /// the node is the assumed one) and any older version of itself.
    fn assigned_pod(&mut self, pod: model::Pod) -> Effect {
        let key = pod.key();
        self.nominator.remove(&key);
        if let Some(assumed) = self.assumed.remove(&key)
            && Some(&assumed.node) != pod.node_name.as_ref()
        {
            warn!(pod = %key, assumed = %assumed.node, bound = ?pod.node_name,
                "pod bound to another node than assumed");
        }
        let (ns, name) = (&pod.meta.namespace, &pod.meta.name);
        let before = match self.cluster.pod_by_key(ns, name) {
            Some(id) if self.cluster.pod(id).pod == pod => return Effect::None,
            Some(id) => {
                let request = self.cluster.pod(id).request.clone();
                self.cluster.remove_pod(ns, name);
                Some(request)
            }
            None => {
                self.unplaced.remove(&key);
                None
            }
        };
        let (ns, name) = (pod.meta.namespace.clone(), pod.meta.name.clone());
        self.place(pod);
        // Upstream requeues on AssignedPodUpdate when a pod's requests went down: the room a
        // resize frees may fit a pod that was refused.
        let after = self
            .cluster
            .pod_by_key(&ns, &name)
            .map(|id| &self.cluster.pod(id).request);
        match (before, after) {
            (Some(before), Some(after)) if asks_less(after, &before) => {
                Effect::CouldHelp(event::ASSIGNED_POD_UPDATE)
            }
            _ => Effect::None,
        }
    }

    /// A pod without a node: to be queued if it is this scheduler's (`ours`), unless an
    /// assumption for it is in flight (the watch lags the assumption).
    fn pending_pod(&mut self, pod: model::Pod, ours: bool) -> (Effect, QueueChange) {
        let key = pod.key();
        if let Some(assumed) = self.assumed.get(&key) {
            if assumed.queued.pod.meta.uid == pod.meta.uid {
                return (Effect::None, QueueChange::None);
            }
            // Re-created under the same name: the old assumption is void.
            let uid = assumed.queued.pod.meta.uid.clone();
            self.forget(&key, &uid);
        }
        // A pod is never unbound, so an assigned pod under this key is an older incarnation
        // whose deletion the watch missed (a relist after 410 Gone shows only the new one):
        // it no longer counts on its node.
        let (ns, name) = (&pod.meta.namespace, &pod.meta.name);
        let stale =
            self.cluster.remove_pod(ns, name).is_some() | self.unplaced.remove(&key).is_some();
        if stale {
            debug!(pod = %key, "re-created while the watch was away: the old pod no longer counts");
        }
        let effect = if stale {
            Effect::CouldHelp(event::ASSIGNED_POD_DELETE)
        } else {
            Effect::None
        };
        if ours && !pod.meta.deleting {
            // Upstream's nominator takes the node from the pod's status as the queue gets it.
            match pod
                .nominated_node_name
                .as_deref()
                .and_then(|n| self.cluster.node_by_name(n))
            {
                Some(node) => {
                    let info = self.cluster.compile_pod(pod.clone());
                    self.nominator.add(info, node);
                }
                None => {
                    self.nominator.remove(&key);
                }
            }
            (effect, QueueChange::Upsert(Box::new(pod)))
        } else {
            self.nominator.remove(&key);
            (effect, QueueChange::Remove(key))
        }
    }

    /// Puts an assigned pod into the cluster, or parks it while its node is unknown.
    fn place(&mut self, pod: model::Pod) {
        let node = pod.node_name.as_deref().expect("assigned pods have a node");
        match self.cluster.node_by_name(node) {
            Some(id) => {
                let key = pod.key();
                let info = self.cluster.compile_pod(pod);
                if let Err(e) = self.cluster.insert_pod(info, Some(id)) {
                    warn!(pod = %key, error = %e, "pod left out of the cache");
                }
            }
            None => {
                self.unplaced.insert(pod.key(), pod);
            }
        }
    }

    fn selector_object(&mut self, selector: &model::PodSelector) -> Effect {
        let released = Protections::releases(&selector.meta);
        let meta = &selector.meta;
        let now = (self.clock)();
        self.protections
            .owner(selector.kind, &meta.namespace, &meta.name, released, now);
        // An upsert replaces in place or appends: a longer list means a new object.
        let before = self.cluster.selector_objects().len();
        self.cluster.upsert_selector_object(selector);
        let added = self.cluster.selector_objects().len() > before;
        Effect::CouldHelp(cluster_event(kind_of_selector(selector.kind), added))
    }

    /// A change to an object that cannot be read retries the unschedulable pods as the
    /// change would if it could be read (as a new volume object, a namespace new to the
    /// store, a changed budget); of the other kinds, it retries nothing.
    fn unreadable(&self, kind: Kind, key: &ObjectKey) -> Effect {
        match kind {
            Kind::Namespace => {
                let known = self
                    .cluster
                    .interner()
                    .get(&key.name)
                    .is_some_and(|sym| self.cluster.namespace(sym).is_some());
                Effect::CouldHelp(cluster_event(kind, !known))
            }
            Kind::PersistentVolume
            | Kind::PersistentVolumeClaim
            | Kind::StorageClass
            | Kind::CsiNode => Effect::CouldHelp(cluster_event(kind, true)),
            Kind::PodDisruptionBudget => Effect::CouldHelp(cluster_event(kind, false)),
            _ => Effect::None,
        }
    }

    /// A new or changed object the volume rules read could let a waiting pod fit.
    fn volume_object(&mut self, object: VolumeObject) -> (Kind, Effect) {
        let c = &mut self.cluster;
        let (kind, replaced) = match object {
            VolumeObject::PersistentVolume(pv) => (
                Kind::PersistentVolume,
                c.upsert_persistent_volume(pv).is_some(),
            ),
            VolumeObject::PersistentVolumeClaim(claim) => (
                Kind::PersistentVolumeClaim,
                c.upsert_persistent_volume_claim(claim).is_some(),
            ),
            VolumeObject::StorageClass(class) => {
                (Kind::StorageClass, c.upsert_storage_class(class).is_some())
            }
            VolumeObject::CsiNode(csi) => (Kind::CsiNode, c.upsert_csi_node(csi).is_some()),
        };
        (kind, Effect::CouldHelp(cluster_event(kind, !replaced)))
    }
}

/// What applying a change means for the scheduling queue.
#[derive(Debug)]
pub struct Routing {
    /// A pending pod of this scheduler to queue, or a pod to take out of the queue.
    pub queue: QueueChange,
    /// The change (its metric label) could make an unschedulable pod fit: retry them.
    pub retry: Option<&'static str>,
}

/// One pod's way into or out of the queue.
#[derive(Debug)]
pub enum QueueChange {
    /// The queue stays as it is.
    None,
    /// Queue the pod, or update it where queued.
    Upsert(Box<model::Pod>),
    /// Take the pod (`namespace/name`) out of the queue.
    Remove(String),
}

/// What applying an event means for the store's caller.
enum Effect {
    /// Nothing.
    None,
    /// The event (its metric label) could make an unschedulable pod fit.
    CouldHelp(&'static str),
    /// The kind's first list is complete.
    Synced,
}

/// Whether `after` asks for less of some resource than `before`.
fn asks_less(after: &Resources, before: &Resources) -> bool {
    after.milli_cpu < before.milli_cpu
        || after.memory < before.memory
        || after.ephemeral_storage < before.ephemeral_storage
        || before.scalars.iter().any(|(n, v)| after.scalar(n) < *v)
}
