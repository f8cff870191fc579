//! The scheduling thread's view of the cluster: watch events applied incrementally to the
//! engine's [`Cluster`], plus the pods this scheduler has assumed but not yet seen bound.
//!
//! Invariants:
//! - Only assigned pods (spec.nodeName set, not finished) are in the cluster, plus the pods
//!   assumed by this scheduler; pending pods of this scheduler are in the [`Queue`]; pending
//!   pods of other schedulers are nowhere.
//! - A pod is in at most one of: the cluster (assigned or assumed), `unplaced`, the queue.
//! - Nothing is rebuilt: each event updates one object.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use berth_engine::DisruptionBudgets;
use berth_engine::health::Trackers;
use berth_engine::resources::Resources;
use berth_engine::{ApiWrite, Nominator, Reservation, Scheduler};
use berth_engine::{Cluster, ClusterError, NodeId, PodInfo, model};
use berth_extender::Documents;
use berth_kube::PriorityResolver;
use berth_kube::convert::{self, ConvertError};
use berth_kube::unmodelled;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use tracing::{debug, warn};

use crate::protections::{Notice, Protections, wall_clock};
use crate::queue::{Queue, QueuedPod, event};
use crate::unreadable::{self, Unreadable};

/// The namespace (for namespaced kinds) and name of an object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// Namespace; None for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a namespaced object.
    pub fn namespaced(namespace: &str, name: &str) -> Self {
        ObjectKey {
            namespace: Some(namespace.to_string()),
            name: name.to_string(),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster(name: &str) -> Self {
        ObjectKey {
            namespace: None,
            name: name.to_string(),
        }
    }

    fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }
}

/// One change from a watch.
#[derive(Debug, Clone)]
pub enum Change<K> {
    /// The object was added or modified (or listed again after a relist).
    Apply(K),
    /// The object was deleted (or was missing from a relist).
    Delete(ObjectKey),
    /// The first complete list has been delivered: the cache holds every object of the kind.
    Synced,
}

/// A change to one of the kinds the scheduler watches.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // boxed whole in `Input`; boxing each object buys nothing
pub enum WatchEvent {
    /// A Node.
    Node(Change<Node>),
    /// A Pod.
    Pod(Change<Pod>),
    /// A Namespace.
    Namespace(Change<Namespace>),
    /// A Service.
    Service(Change<Service>),
    /// A ReplicationController.
    ReplicationController(Change<ReplicationController>),
    /// A ReplicaSet.
    ReplicaSet(Change<ReplicaSet>),
    /// A StatefulSet.
    StatefulSet(Change<StatefulSet>),
    /// A PersistentVolume.
    PersistentVolume(Change<PersistentVolume>),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(Change<PersistentVolumeClaim>),
    /// A StorageClass.
    StorageClass(Change<StorageClass>),
    /// A CSINode.
    CsiNode(Change<CSINode>),
    /// A PriorityClass.
    PriorityClass(Change<PriorityClass>),
    /// A PodDisruptionBudget.
    PodDisruptionBudget(Change<PodDisruptionBudget>),
}

/// The watched kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Nodes.
    Node,
    /// Pods.
    Pod,
    /// Namespaces.
    Namespace,
    /// Services.
    Service,
    /// ReplicationControllers.
    ReplicationController,
    /// ReplicaSets.
    ReplicaSet,
    /// StatefulSets.
    StatefulSet,
    /// PersistentVolumes.
    PersistentVolume,
    /// PersistentVolumeClaims.
    PersistentVolumeClaim,
    /// StorageClasses.
    StorageClass,
    /// CSINodes.
    CsiNode,
    /// PriorityClasses.
    PriorityClass,
    /// PodDisruptionBudgets.
    PodDisruptionBudget,
}

impl Kind {
    /// Every watched kind.
    pub const ALL: [Kind; 13] = [
        Kind::Node,
        Kind::Pod,
        Kind::Namespace,
        Kind::Service,
        Kind::ReplicationController,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::PersistentVolume,
        Kind::PersistentVolumeClaim,
        Kind::StorageClass,
        Kind::CsiNode,
        Kind::PriorityClass,
        Kind::PodDisruptionBudget,
    ];
}

impl WatchEvent {
    /// The kind of object the event is about.
    pub fn kind(&self) -> Kind {
        match self {
            WatchEvent::Node(_) => Kind::Node,
            WatchEvent::Pod(_) => Kind::Pod,
            WatchEvent::Namespace(_) => Kind::Namespace,
            WatchEvent::Service(_) => Kind::Service,
            WatchEvent::ReplicationController(_) => Kind::ReplicationController,
            WatchEvent::ReplicaSet(_) => Kind::ReplicaSet,
            WatchEvent::StatefulSet(_) => Kind::StatefulSet,
            WatchEvent::PersistentVolume(_) => Kind::PersistentVolume,
            WatchEvent::PersistentVolumeClaim(_) => Kind::PersistentVolumeClaim,
            WatchEvent::StorageClass(_) => Kind::StorageClass,
            WatchEvent::CsiNode(_) => Kind::CsiNode,
            WatchEvent::PriorityClass(_) => Kind::PriorityClass,
            WatchEvent::PodDisruptionBudget(_) => Kind::PodDisruptionBudget,
        }
    }
}

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

/// The engine cluster kept current from watch events, plus assumptions.
#[derive(Debug)]
pub struct Cache {
    cluster: Cluster,
    /// The scheduler names (profiles) whose pending pods are ours.
    scheduler_names: Vec<String>,
    priority_classes: BTreeMap<String, PriorityClass>,
    priorities: PriorityResolver,
    /// Assigned pods whose node the cache does not have (yet, or any more), by pod key.
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
    /// Pending pods of this scheduler that cannot be read, by pod key.
    unreadable: HashMap<String, Unreadable>,
    /// The circuit breaker's and containment's trackers, when the policy has them.
    protections: Protections,
    /// Seconds since the epoch: the protections judge kubelets' timestamps by it.
    clock: fn() -> i64,
    /// Pods (by key) that set each field Berth does not model; a field is logged when its
    /// first pod appears.
    unmodelled: BTreeMap<(&'static str, &'static str), HashSet<String>>,
}

impl Cache {
    /// An empty cache for the scheduler called `scheduler_name`.
    pub fn new(scheduler_name: &str) -> Self {
        Self::serving(&[scheduler_name.to_string()])
    }

    /// An empty cache for the schedulers (profiles) called `names`: one cluster, every
    /// profile's assumed pods in it, so no two profiles place onto the same room.
    pub fn serving(names: &[String]) -> Self {
        Cache {
            cluster: Cluster::new(),
            scheduler_names: names.to_vec(),
            priority_classes: BTreeMap::new(),
            priorities: PriorityResolver::default(),
            nominator: Nominator::new(),
            budgets: DisruptionBudgets::new(),
            unplaced: HashMap::new(),
            assumed: HashMap::new(),
            synced: HashSet::new(),
            documents: None,
            unreadable: HashMap::new(),
            protections: Protections::new(Trackers::default()),
            clock: wall_clock,
            unmodelled: BTreeMap::new(),
        }
    }

    /// How many cached pods set each field Berth does not model (every field seen since
    /// start, so a gauge falls back to 0).
    pub fn unmodelled_field_counts(&self) -> Vec<(&'static str, &'static str, usize)> {
        self.unmodelled
            .iter()
            .map(|(&(kind, field), pods)| (kind, field, pods.len()))
            .collect()
    }

    /// Records which unmodelled fields a pod sets (none once deleted), logging each field the
    /// first time any pod sets it.
    fn track_unmodelled(&mut self, key: &str, object: Option<&Pod>) {
        let found = object.map(unmodelled::in_pod).unwrap_or_default();
        for u in &found {
            if !self.unmodelled.contains_key(&(u.kind, u.field)) {
                warn!(
                    kind = u.kind,
                    field = u.field,
                    refused = u.refuses,
                    "{}",
                    u.why
                );
            }
            self.unmodelled
                .entry((u.kind, u.field))
                .or_default()
                .insert(key.to_owned());
        }
        for ((kind, field), pods) in &mut self.unmodelled {
            if !found.iter().any(|u| u.kind == *kind && u.field == *field) {
                pods.remove(key);
            }
        }
    }

    /// Runs the trackers a (re)loaded policy's protections need.
    pub fn set_trackers(&mut self, trackers: Trackers) {
        let now = (self.clock)();
        self.protections.reconfigure(trackers, now);
        self.publish_protections();
    }

    /// Whether pending pods of `scheduler_name` are this cache's.
    pub fn serves(&self, scheduler_name: &str) -> bool {
        self.scheduler_names.iter().any(|n| n == scheduler_name)
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

    /// When the protections next need [`Cache::advance_protections`], in seconds since the
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

    /// Entries in the cache's tables that grow with the cluster, by table name (the
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
    /// assumed, and bound to a node the cache does not have) and assumed pods.
    pub fn upstream_sizes(&self) -> (usize, usize, usize) {
        let c = self.cluster.sizes();
        (c.nodes, c.pods + self.unplaced.len(), self.assumed.len())
    }

    /// Compiles a pending pod against the cluster's interner.
    pub fn compile(&mut self, pod: model::Pod) -> PodInfo {
        self.cluster.compile_pod(pod)
    }

    /// Counts a pod on `node` at once, before its binding is sent, so the next cycle sees
    /// it, after the scheduler's Reserve stage (with CheckVolumeBinding, delayed-binding
    /// claims are assumed bound to the volumes chosen for them, or to provisioning on the
    /// node, so no later pod takes the same volume). Returns the node's name and the API
    /// writes Reserve asked for, which must reach the API before the pod's binding.
    pub fn assume(
        &mut self,
        scheduler: &Scheduler,
        queued: QueuedPod,
        info: PodInfo,
        node: NodeId,
    ) -> Result<(String, Vec<ApiWrite>), ClusterError> {
        let name = self.cluster.node(node).name().to_string();
        let key = queued.key();
        let reservation = scheduler.reserve(&mut self.cluster, &info, node);
        if let Err(e) = self.cluster.insert_pod(info, Some(node)) {
            scheduler.unreserve(&mut self.cluster, &reservation);
            return Err(e);
        }
        let writes = reservation.writes.clone();
        self.protections.assumed(&queued.pod, &name, (self.clock)());
        self.publish_protections();
        self.assumed.insert(
            key,
            Assumed {
                node: name.clone(),
                queued,
                reservation,
            },
        );
        Ok((name, writes))
    }

    /// Unreserve for a placement whose binding failed.
    pub fn unreserve(&mut self, scheduler: &Scheduler, reservation: &Reservation) {
        scheduler.unreserve(&mut self.cluster, reservation);
    }

    /// Drops the assumption for the pod with this key and UID (its binding failed) and
    /// returns the queued pod for a retry with its reservation (for [`Cache::unreserve`]).
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

    /// Applies one watch event. Pending pods of this scheduler go to (or leave) `queue`;
    /// events that could make an unschedulable pod fit move the queue's unschedulable pods.
    pub fn apply(&mut self, event: WatchEvent, queue: &mut Queue, now: Instant) {
        use model::SelectorKind::*;
        let kind = event.kind();
        let could_help = match event {
            WatchEvent::Node(c) => self.node(c),
            WatchEvent::Pod(c) => self.pod(c, queue, now),
            WatchEvent::Namespace(c) => self.namespace(c),
            WatchEvent::Service(c) => self.selector_object(c, Service, convert::service),
            WatchEvent::ReplicationController(c) => {
                self.selector_object(c, ReplicationController, convert::replication_controller)
            }
            WatchEvent::ReplicaSet(c) => self.selector_object(c, ReplicaSet, convert::replica_set),
            WatchEvent::StatefulSet(c) => {
                self.selector_object(c, StatefulSet, convert::stateful_set)
            }
            WatchEvent::PersistentVolume(c) => self.persistent_volume(c),
            WatchEvent::PersistentVolumeClaim(c) => self.persistent_volume_claim(c),
            WatchEvent::StorageClass(c) => self.storage_class(c),
            WatchEvent::CsiNode(c) => self.csi_node(c),
            WatchEvent::PriorityClass(c) => self.priority_class(c),
            WatchEvent::PodDisruptionBudget(c) => self.pod_disruption_budget(c),
        };
        let protections_lifted = self.publish_protections();
        let could_help = match could_help {
            Effect::None if protections_lifted => Effect::CouldHelp(event::PROTECTION_LIFTED),
            other => other,
        };
        match could_help {
            Effect::Synced => {
                let was_synced = self.synced();
                self.synced.insert(kind);
                if !was_synced && self.synced() && self.protections.enabled() {
                    // The lists came in no particular order: replay them in time order.
                    self.protections.synced((self.clock)());
                    self.publish_protections();
                }
            }
            Effect::CouldHelp(event) => {
                let moved = queue.move_all_unschedulable(now, event);
                if moved > 0 {
                    debug!(
                        ?kind,
                        event, moved, "cluster event: retrying unschedulable pods"
                    );
                }
            }
            Effect::None => {}
        }
    }

    fn node(&mut self, change: Change<Node>) -> Effect {
        match change {
            Change::Synced => Effect::Synced,
            Change::Apply(object) => {
                self.protections.node(&object);
                let Some(node) = converted(convert::node(&object)) else {
                    return Effect::None;
                };
                let name = node.meta.name.clone();
                // Kept up to date even when the model is unchanged: extenders get the node
                // as the API server has it.
                let newly_held = match &self.documents {
                    Some(documents) => documents.set_node(&name, &object).unwrap_or_else(|e| {
                        warn!(node = %name, error = %e, "node JSON not kept for the extenders");
                        false
                    }),
                    None => false,
                };
                let existing = self.cluster.node_by_name(&name);
                if existing.is_some_and(|id| *self.cluster.node(id).node == node) {
                    // A relist after the extenders came to need node JSON fills it in: a pod
                    // refused because its node had none may fit now.
                    return if newly_held {
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
            Change::Delete(key) => {
                self.protections.node_deleted(&key.name);
                if let Some(documents) = &self.documents {
                    documents.remove_node(&key.name);
                }
                let Some(id) = self.cluster.node_by_name(&key.name) else {
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
                self.cluster.remove_node(&key.name);
                Effect::None
            }
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

    fn pod(&mut self, change: Change<Pod>, queue: &mut Queue, now: Instant) -> Effect {
        match change {
            Change::Synced => Effect::Synced,
            Change::Delete(key) => {
                let pod_key = format!("{}/{}", key.namespace(), key.name);
                self.track_unmodelled(&pod_key, None);
                self.protections.pod_deleted(&pod_key);
                if let Some(documents) = &self.documents {
                    documents.remove_pod(&pod_key);
                }
                queue.remove(&pod_key);
                self.nominator.remove(&pod_key);
                self.assumed.remove(&pod_key);
                self.unreadable.remove(&pod_key);
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
            Change::Apply(object) => {
                // Before a finished pod is dropped: kubelet refusing a pod finishes it.
                self.protections.pod(&object);
                if convert::is_terminal(&object) {
                    let key = object_key(&object.metadata);
                    return self.pod(Change::Delete(key), queue, now);
                }
                let key = object_key(&object.metadata);
                let pod_key = format!("{}/{}", key.namespace(), key.name);
                self.track_unmodelled(&pod_key, Some(&object));
                let Some(pod) = self.convert_pod(&object, queue) else {
                    return Effect::None;
                };
                if let Some(documents) = &self.documents {
                    // Only pods this scheduler may place are ever sent, and bound pods
                    // as preemption victims when an extender gets them whole.
                    let key = pod.key();
                    let ours = pod.node_name.is_none() && self.serves(&pod.scheduler_name);
                    if ours || (pod.node_name.is_some() && documents.keeps_bound_pods()) {
                        if let Err(e) = documents.set_pod(&key, &object) {
                            warn!(pod = %key, error = %e, "pod JSON not kept for the extenders");
                        }
                    } else {
                        documents.remove_pod(&key);
                    }
                }
                if pod.node_name.is_some() {
                    self.assigned_pod(pod, queue)
                } else if gated(&object) {
                    // Upstream holds pods with scheduling gates until the gates are removed.
                    queue.remove(&pod.key());
                    Effect::None
                } else {
                    self.pending_pod(pod, queue, now)
                }
            }
        }
    }

    /// Converts a pod. A bound pod that fails is read leniently so it is still counted; a
    /// pending pod of this scheduler that fails is recorded for a `FailedScheduling` event.
    fn convert_pod(&mut self, object: &Pod, queue: &mut Queue) -> Option<model::Pod> {
        let meta = &object.metadata;
        let key = format!(
            "{}/{}",
            meta.namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("default"),
            meta.name.as_deref().unwrap_or_default()
        );
        let mut warnings = Vec::new();
        let result = convert::pod(object, &self.priorities, &mut warnings);
        for w in warnings {
            warn!("{w}");
        }
        let error = match result {
            Ok(pod) => {
                self.unreadable.remove(&key);
                return Some(pod);
            }
            Err(e) => e,
        };
        let bound = object
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if bound {
            let clamped = unreadable::clamp_quantities(object);
            let bare = unreadable::without_constraints(clamped.as_ref().unwrap_or(object));
            for candidate in clamped.iter().chain(std::iter::once(&bare)) {
                if let Ok(pod) = convert::pod(candidate, &self.priorities, &mut Vec::new()) {
                    warn!(pod = %key, error = %error,
                        "bound pod read leniently: counted on its node with out-of-range \
                         quantities clamped and, if that was not enough, without its constraints");
                    return Some(pod);
                }
            }
            warn!(pod = %key, error = %error, "bound pod left out of the cache: it cannot be read");
            return None;
        }
        queue.remove(&key);
        let ours = self.serves(unreadable::scheduler_name(object))
            && meta.deletion_timestamp.is_none()
            && !gated(object);
        if !ours {
            self.unreadable.remove(&key);
            return None;
        }
        warn!(pod = %key, error = %error, "pending pod cannot be read; reporting it on the pod");
        let message = unreadable::message(&error);
        let pod = unreadable::reference_pod(object);
        match self.unreadable.get_mut(&key) {
            Some(u) if u.message == message && u.pod.meta.uid == pod.meta.uid => {}
            _ => {
                self.unreadable.insert(
                    key,
                    Unreadable {
                        pod,
                        message,
                        reported: false,
                    },
                );
            }
        }
        None
    }

    /// Pending pods that cannot be read and have not been reported yet; marks them reported.
    pub fn take_unreported(&mut self) -> Vec<(model::Pod, String)> {
        self.unreadable
            .values_mut()
            .filter(|u| !u.reported)
            .map(|u| {
                u.reported = true;
                (u.pod.clone(), u.message.clone())
            })
            .collect()
    }

    /// A pod the API server shows bound: it replaces any assumption (confirming it when
    /// the node is the assumed one) and any older version of itself.
    fn assigned_pod(&mut self, pod: model::Pod, queue: &mut Queue) -> Effect {
        let key = pod.key();
        queue.remove(&key);
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

    /// A pod without a node: queued if it is this scheduler's, unless an assumption for it
    /// is in flight (the watch lags the assumption).
    fn pending_pod(&mut self, pod: model::Pod, queue: &mut Queue, now: Instant) -> Effect {
        let key = pod.key();
        if let Some(assumed) = self.assumed.get(&key) {
            if assumed.queued.pod.meta.uid == pod.meta.uid {
                return Effect::None;
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
        if self.serves(&pod.scheduler_name) && !pod.meta.deleting {
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
            queue.upsert(pod, now);
        } else {
            self.nominator.remove(&key);
            queue.remove(&key);
        }
        effect
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

    fn namespace(&mut self, change: Change<Namespace>) -> Effect {
        match change {
            Change::Synced => Effect::Synced,
            Change::Apply(object) => {
                let name = object.metadata.name.as_deref().unwrap_or_default();
                let known = self
                    .cluster
                    .interner()
                    .get(name)
                    .is_some_and(|sym| self.cluster.namespace(sym).is_some());
                if let Some(ns) = converted(convert::namespace(&object)) {
                    if let Some(model::TolerationWhitelist::Invalid(why)) = &ns.toleration_whitelist
                    {
                        warn!(
                            namespace = %ns.meta.name,
                            error = %why,
                            "the namespace's {} annotation does not parse: it grants no taint \
                             that CheckTolerationRestriction guards",
                            convert::TOLERATIONS_WHITELIST_ANNOTATION
                        );
                    }
                    self.cluster.upsert_namespace(&ns);
                }
                Effect::CouldHelp(cluster_event(Kind::Namespace, !known))
            }
            Change::Delete(key) => {
                self.cluster.remove_namespace(&key.name);
                Effect::None
            }
        }
    }

    fn selector_object<K>(
        &mut self,
        change: Change<K>,
        kind: model::SelectorKind,
        convert: fn(&K) -> Result<model::PodSelector, ConvertError>,
    ) -> Effect {
        match change {
            Change::Synced => Effect::Synced,
            Change::Apply(object) => {
                let Some(selector) = converted(convert(&object)) else {
                    return Effect::None;
                };
                let released = Protections::releases(&selector.meta);
                let meta = &selector.meta;
                let now = (self.clock)();
                self.protections
                    .owner(kind, &meta.namespace, &meta.name, released, now);
                // An upsert replaces in place or appends: a longer list means a new object.
                let before = self.cluster.selector_objects().len();
                self.cluster.upsert_selector_object(&selector);
                let added = self.cluster.selector_objects().len() > before;
                Effect::CouldHelp(cluster_event(kind_of_selector(kind), added))
            }
            Change::Delete(key) => {
                let now = (self.clock)();
                self.protections
                    .owner(kind, key.namespace(), &key.name, false, now);
                self.cluster
                    .remove_selector_object(kind, key.namespace(), &key.name);
                Effect::None
            }
        }
    }

    fn persistent_volume(&mut self, change: Change<PersistentVolume>) -> Effect {
        apply_keyed(
            change,
            &mut self.cluster,
            convert::persistent_volume,
            Kind::PersistentVolume,
            |c, pv| c.upsert_persistent_volume(pv).is_some(),
            |c, key| {
                c.remove_persistent_volume(&key.name);
            },
        )
    }

    fn persistent_volume_claim(&mut self, change: Change<PersistentVolumeClaim>) -> Effect {
        apply_keyed(
            change,
            &mut self.cluster,
            convert::persistent_volume_claim,
            Kind::PersistentVolumeClaim,
            |c, claim| c.upsert_persistent_volume_claim(claim).is_some(),
            |c, key| {
                c.remove_persistent_volume_claim(key.namespace(), &key.name);
            },
        )
    }

    fn storage_class(&mut self, change: Change<StorageClass>) -> Effect {
        apply_keyed(
            change,
            &mut self.cluster,
            convert::storage_class,
            Kind::StorageClass,
            |c, class| c.upsert_storage_class(class).is_some(),
            |c, key| {
                c.remove_storage_class(&key.name);
            },
        )
    }

    fn csi_node(&mut self, change: Change<CSINode>) -> Effect {
        apply_keyed(
            change,
            &mut self.cluster,
            convert::csi_node,
            Kind::CsiNode,
            |c, csi| c.upsert_csi_node(csi).is_some(),
            |c, key| {
                c.remove_csi_node(&key.name);
            },
        )
    }

    /// A budget change may change preemption's choice for a waiting pod.
    fn pod_disruption_budget(&mut self, change: Change<PodDisruptionBudget>) -> Effect {
        match change {
            Change::Synced => Effect::Synced,
            Change::Apply(object) => {
                let before = self.budgets.len();
                if let Some(pdb) = converted(convert::pod_disruption_budget(&object)) {
                    self.budgets.upsert(&mut self.cluster, &pdb);
                }
                let added = self.budgets.len() > before;
                Effect::CouldHelp(cluster_event(Kind::PodDisruptionBudget, added))
            }
            Change::Delete(key) => {
                self.budgets
                    .remove(&self.cluster, key.namespace(), &key.name);
                Effect::None
            }
        }
    }

    /// Priority classes only affect pods converted later; admission has normally written
    /// `spec.priority` into every pod already.
    fn priority_class(&mut self, change: Change<PriorityClass>) -> Effect {
        match change {
            Change::Synced => return Effect::Synced,
            Change::Apply(object) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                self.priority_classes.insert(name, object);
            }
            Change::Delete(key) => {
                self.priority_classes.remove(&key.name);
            }
        }
        let classes: Vec<PriorityClass> = self.priority_classes.values().cloned().collect();
        self.priorities = PriorityResolver::new(&classes);
        Effect::None
    }
}

/// What applying an event means for the queue.
enum Effect {
    /// Nothing.
    None,
    /// The event (its metric label) could make an unschedulable pod fit.
    CouldHelp(&'static str),
    /// The kind's first list is complete.
    Synced,
}

/// Upstream's label of a cluster event (`scheduler_queue_incoming_pods_total`'s `event`):
/// the resource, then Add or Update.
fn cluster_event(kind: Kind, added: bool) -> &'static str {
    match (kind, added) {
        (Kind::Node, true) => event::NODE_ADD,
        (Kind::Node, false) => event::NODE_UPDATE,
        (Kind::Pod, true) => "AssignedPodAdd",
        (Kind::Pod, false) => "AssignedPodUpdate",
        (Kind::Namespace, true) => "NamespaceAdd",
        (Kind::Namespace, false) => "NamespaceUpdate",
        (Kind::Service, true) => "ServiceAdd",
        (Kind::Service, false) => "ServiceUpdate",
        (Kind::ReplicationController, true) => "ReplicationControllerAdd",
        (Kind::ReplicationController, false) => "ReplicationControllerUpdate",
        (Kind::ReplicaSet, true) => "ReplicaSetAdd",
        (Kind::ReplicaSet, false) => "ReplicaSetUpdate",
        (Kind::StatefulSet, true) => "StatefulSetAdd",
        (Kind::StatefulSet, false) => "StatefulSetUpdate",
        (Kind::PersistentVolume, true) => "PersistentVolumeAdd",
        (Kind::PersistentVolume, false) => "PersistentVolumeUpdate",
        (Kind::PersistentVolumeClaim, true) => "PersistentVolumeClaimAdd",
        (Kind::PersistentVolumeClaim, false) => "PersistentVolumeClaimUpdate",
        (Kind::StorageClass, true) => "StorageClassAdd",
        (Kind::StorageClass, false) => "StorageClassUpdate",
        (Kind::CsiNode, true) => "CSINodeAdd",
        (Kind::CsiNode, false) => "CSINodeUpdate",
        (Kind::PriorityClass, true) => "PriorityClassAdd",
        (Kind::PriorityClass, false) => "PriorityClassUpdate",
        (Kind::PodDisruptionBudget, true) => "PodDisruptionBudgetAdd",
        (Kind::PodDisruptionBudget, false) => "PodDisruptionBudgetUpdate",
    }
}

/// The watched kind of a selector object.
fn kind_of_selector(kind: model::SelectorKind) -> Kind {
    match kind {
        model::SelectorKind::Service => Kind::Service,
        model::SelectorKind::ReplicationController => Kind::ReplicationController,
        model::SelectorKind::ReplicaSet => Kind::ReplicaSet,
        model::SelectorKind::StatefulSet => Kind::StatefulSet,
    }
}

/// The key of an object from its metadata.
pub fn object_key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> ObjectKey {
    ObjectKey {
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// Whether `after` asks for less of some resource than `before`.
fn asks_less(after: &Resources, before: &Resources) -> bool {
    after.milli_cpu < before.milli_cpu
        || after.memory < before.memory
        || after.ephemeral_storage < before.ephemeral_storage
        || before.scalars.iter().any(|(n, v)| after.scalar(n) < *v)
}

/// Whether a pod has scheduling gates (`spec.schedulingGates`) left.
fn gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// The converted object, or None after logging why it cannot be used.
/// Applies a change to one of the cluster's maps of objects the volume rules read, keyed by
/// name (or namespace and name). A new or changed object could let a waiting pod fit.
fn apply_keyed<K, T>(
    change: Change<K>,
    cluster: &mut Cluster,
    convert: fn(&K) -> Result<T, ConvertError>,
    kind: Kind,
    upsert: fn(&mut Cluster, T) -> bool,
    remove: fn(&mut Cluster, &ObjectKey),
) -> Effect {
    match change {
        Change::Synced => Effect::Synced,
        Change::Apply(object) => {
            let replaced = converted(convert(&object)).is_some_and(|value| upsert(cluster, value));
            Effect::CouldHelp(cluster_event(kind, !replaced))
        }
        Change::Delete(key) => {
            remove(cluster, &key);
            Effect::None
        }
    }
}

fn converted<T>(result: Result<T, ConvertError>) -> Option<T> {
    result
        .inspect_err(|e| warn!(error = %e, "object left out of the cache"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Place, QueueConfig};
    use crate::testing::{bound, node, phase, pod};

    struct Fixture {
        cache: Cache,
        queue: Queue,
        now: Instant,
        scheduler: Scheduler,
    }

    impl Fixture {
        fn new() -> Self {
            let policy = berth_policy::parse(
                r#"{"predicates":[{"name":"CheckVolumeBinding"}],"priorities":[]}"#,
                "test.json",
            )
            .expect("policy");
            Fixture {
                scheduler: berth_engine::scheduler_for(&policy, Default::default())
                    .expect("scheduler"),
                cache: Cache::new("berth"),
                queue: Queue::new(QueueConfig::default()),
                now: Instant::now(),
            }
        }

        fn node(&mut self, change: Change<Node>) {
            self.cache
                .apply(WatchEvent::Node(change), &mut self.queue, self.now);
        }

        fn pod(&mut self, change: Change<Pod>) {
            self.cache
                .apply(WatchEvent::Pod(change), &mut self.queue, self.now);
        }

        /// Milli-CPU requested on a node and its pods' names.
        fn on(&self, node: &str) -> (i64, Vec<String>) {
            let c = self.cache.cluster();
            let n = c.node(c.node_by_name(node).expect("node in cache"));
            let mut pods: Vec<String> = n
                .pods
                .iter()
                .map(|p| c.pod(*p).pod.meta.name.clone())
                .collect();
            pods.sort();
            (n.requested.milli_cpu, pods)
        }
    }

    fn delete(name: &str) -> ObjectKey {
        ObjectKey::namespaced("default", name)
    }

    #[test]
    fn assigned_pods_count_pending_pods_of_ours_queue_others_are_left_alone() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(bound(
            pod("running", "default-scheduler", 500),
            "n1",
        )));
        f.pod(Change::Apply(pod("mine", "berth", 100)));
        f.pod(Change::Apply(pod("theirs", "default-scheduler", 100)));
        assert_eq!(f.on("n1"), (500, vec!["running".into()]));
        assert_eq!(f.queue.place("default/mine"), Some(Place::Active));
        assert!(!f.queue.contains("default/theirs"));
        assert!(f.cache.cluster().pod_by_key("default", "theirs").is_none());
    }

    #[test]
    fn extender_documents_hold_nodes_and_only_our_pending_pods() {
        let mut f = Fixture::new();
        let documents = Documents::new();
        f.cache.set_documents(documents.clone());
        f.node(Change::Apply(node("n1", 4)));
        f.node(Change::Apply(node("n2", 4)));
        f.pod(Change::Apply(pod("mine", "berth", 100)));
        f.pod(Change::Apply(pod("theirs", "default-scheduler", 100)));
        assert_eq!(documents.counts(), (2, 1));
        let json = documents.pod("default/mine").expect("pending pod kept");
        assert!(json.get().contains("\"name\":\"mine\""), "{}", json.get());
        assert!(documents.nodes(&["n2"]).is_ok());
        // Bound: no longer sent to extenders; a deleted node goes too.
        f.pod(Change::Apply(bound(pod("mine", "berth", 100), "n1")));
        f.node(Change::Delete(ObjectKey::cluster("n2")));
        assert_eq!(documents.counts(), (1, 0));
    }

    #[test]
    fn gated_pods_wait_until_their_gates_are_removed() {
        let mut f = Fixture::new();
        let mut gated = pod("gated", "berth", 100);
        gated.spec.as_mut().unwrap().scheduling_gates = Some(vec![
            serde_json::from_value(serde_json::json!({"name": "example.com/quota"})).unwrap(),
        ]);
        f.pod(Change::Apply(gated));
        assert!(!f.queue.contains("default/gated"));
        f.pod(Change::Apply(pod("gated", "berth", 100)));
        assert_eq!(f.queue.place("default/gated"), Some(Place::Active));
    }

    #[test]
    fn pods_setting_unmodelled_fields_are_counted_until_they_go() {
        let mut f = Fixture::new();
        let mut gang = pod("gang-0", "berth", 100);
        gang.spec.as_mut().unwrap().scheduling_group =
            Some(serde_json::from_value(serde_json::json!({"podGroupName": "trainers"})).unwrap());
        let field = ("Pod", "spec.schedulingGroup");
        f.pod(Change::Apply(gang.clone()));
        f.pod(Change::Apply(pod("plain", "berth", 100)));
        assert_eq!(f.cache.unmodelled_field_counts(), [(field.0, field.1, 1)]);
        // The field dropped from the pod, then the pod back and deleted: the gauge stays.
        f.pod(Change::Apply(pod("gang-0", "berth", 100)));
        assert_eq!(f.cache.unmodelled_field_counts(), [(field.0, field.1, 0)]);
        f.pod(Change::Apply(gang));
        f.pod(Change::Delete(delete("gang-0")));
        assert_eq!(f.cache.unmodelled_field_counts(), [(field.0, field.1, 0)]);
    }

    #[test]
    fn finished_and_deleted_pods_free_their_node() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        f.pod(Change::Apply(bound(pod("b", "berth", 300), "n1")));
        f.pod(Change::Apply(phase(
            bound(pod("a", "berth", 500), "n1"),
            "Succeeded",
        )));
        assert_eq!(f.on("n1"), (300, vec!["b".into()]));
        f.pod(Change::Delete(delete("b")));
        assert_eq!(f.on("n1"), (0, vec![]));
    }

    #[test]
    fn a_changed_pod_replaces_its_old_version_an_unchanged_one_is_a_no_op() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.node(Change::Apply(node("n2", 4)));
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        let before = f.cache.cluster().pod_by_key("default", "a");
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        assert_eq!(f.cache.cluster().pod_by_key("default", "a"), before);
        // Deleted and re-created under the same name on another node, delete unseen.
        f.pod(Change::Apply(bound(pod("a", "berth", 700), "n2")));
        assert_eq!(f.on("n1"), (0, vec![]));
        assert_eq!(f.on("n2"), (700, vec!["a".into()]));
    }

    /// Each event that retries the unschedulable pods is counted under upstream's label for
    /// it: the resource and whether it was added or changed.
    #[test]
    fn retrying_events_are_labelled_by_resource_and_action() {
        use crate::metrics::tests::value;
        let metrics = crate::metrics::Metrics::new("berth");
        let mut f = Fixture::new();
        f.queue = Queue::new(QueueConfig::default()).with_metrics(metrics.clone());
        f.node(Change::Apply(node("n1", 1)));
        f.pod(Change::Apply(bound(pod("a", "other", 500), "n1")));
        f.pod(Change::Apply(pod("big", "berth", 4000)));
        let service = |selector: &str| {
            serde_json::from_value::<Service>(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": selector}}
            }))
            .expect("service")
        };
        let mut changed = node("n1", 1);
        changed
            .metadata
            .labels
            .get_or_insert_default()
            .insert("disk".into(), "ssd".into());
        type Event = Box<dyn Fn(&mut Fixture)>;
        let events: [(&str, Event); 5] = [
            (
                "NodeAdd",
                Box::new(|f| f.node(Change::Apply(node("n2", 1)))),
            ),
            (
                "NodeUpdate",
                Box::new(move |f| f.node(Change::Apply(changed.clone()))),
            ),
            (
                "AssignedPodDelete",
                Box::new(|f| f.pod(Change::Delete(delete("a")))),
            ),
            (
                "ServiceAdd",
                Box::new(move |f| {
                    f.cache.apply(
                        WatchEvent::Service(Change::Apply(service("web"))),
                        &mut f.queue,
                        f.now,
                    )
                }),
            ),
            (
                "ServiceUpdate",
                Box::new(move |f| {
                    f.cache.apply(
                        WatchEvent::Service(Change::Apply(service("api"))),
                        &mut f.queue,
                        f.now,
                    )
                }),
            ),
        ];
        for (label, event) in events {
            let queued = f.queue.pop(f.now).expect("big is active");
            f.queue.unschedulable(queued, f.now);
            f.now += std::time::Duration::from_secs(10);
            event(&mut f);
            assert_eq!(f.queue.place("default/big"), Some(Place::Active), "{label}");
            let text = metrics.encode();
            assert_eq!(
                value(
                    &text,
                    &format!(
                        r#"scheduler_queue_incoming_pods_total{{queue="active",event="{label}"}}"#
                    )
                ),
                Some(1.0),
                "{label} in\n{text}"
            );
        }
    }

    #[test]
    fn pods_of_a_deleted_node_wait_for_it_to_come_back() {
        let mut f = Fixture::new();
        f.pod(Change::Apply(bound(pod("early", "berth", 200), "n1")));
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.on("n1"), (200, vec!["early".into()]));
        f.node(Change::Delete(ObjectKey::cluster("n1")));
        assert!(f.cache.cluster().node_by_name("n1").is_none());
        assert!(f.cache.cluster().pod_by_key("default", "early").is_none());
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.on("n1"), (200, vec!["early".into()]));
    }

    #[test]
    fn node_events_retry_unschedulable_pods_unchanged_nodes_do_not() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 1)));
        f.pod(Change::Apply(pod("big", "berth", 2000)));
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.now += std::time::Duration::from_secs(5);
        f.node(Change::Apply(node("n1", 1)));
        assert_eq!(f.queue.place("default/big"), Some(Place::Unschedulable));
        f.node(Change::Apply(node("n2", 4)));
        assert_eq!(f.queue.place("default/big"), Some(Place::Active));
    }

    /// A reloaded policy's extender needs node JSON the store did not keep: a pod refused
    /// for want of it is retried when the relist fills it in, though the node is unchanged.
    #[test]
    fn node_json_filled_in_by_a_relist_retries_unschedulable_pods() {
        let mut f = Fixture::new();
        let documents = Documents::pods_only();
        f.cache.set_documents(documents.clone());
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("p", "berth", 100)));
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.now += std::time::Duration::from_secs(5);
        documents.widen_to(&Documents::new());
        f.node(Change::Apply(node("n1", 4)));
        assert!(documents.nodes(&["n1"]).is_ok());
        assert_eq!(f.queue.place("default/p"), Some(Place::Active));
        // Once held, an unchanged node retries nothing.
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.queue.place("default/p"), Some(Place::Unschedulable));
    }

    #[test]
    fn an_assumption_holds_until_the_watch_confirms_or_the_binding_fails() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("a", "berth", 500)));
        let queued = f.queue.pop(f.now).unwrap();
        let info = f.cache.compile(queued.pod.clone());
        let n1 = f.cache.cluster().node_by_name("n1").unwrap();
        assert_eq!(
            f.cache.assume(&f.scheduler, queued, info, n1).unwrap().0,
            "n1"
        );
        assert_eq!(f.on("n1"), (500, vec!["a".into()]));
        // The watch still shows it pending (an update from before the binding): ignored.
        f.pod(Change::Apply(pod("a", "berth", 500)));
        assert!(!f.queue.contains("default/a"));
        assert_eq!(f.on("n1").0, 500);
        // A failed binding for another UID changes nothing; for this one it undoes it.
        assert!(f.cache.forget("default/a", "uid-other").is_none());
        let (back, _) = f.cache.forget("default/a", "uid-a").expect("assumed");
        assert_eq!(back.pod.meta.name, "a");
        assert_eq!(f.on("n1"), (0, vec![]));
    }

    #[test]
    fn the_watch_showing_the_pod_bound_confirms_the_assumption() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("a", "berth", 500)));
        let queued = f.queue.pop(f.now).unwrap();
        let info = f.cache.compile(queued.pod.clone());
        let n1 = f.cache.cluster().node_by_name("n1").unwrap();
        f.cache.assume(&f.scheduler, queued, info, n1).unwrap();
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        assert_eq!(f.cache.assumed_count(), 0);
        assert_eq!(f.on("n1"), (500, vec!["a".into()]));
        // A late failure report (it was bound after all) must not undo the confirmed pod.
        assert!(f.cache.forget("default/a", "uid-a").is_none());
        assert_eq!(f.on("n1").0, 500);
    }

    #[test]
    fn namespaces_and_selector_objects_are_replaced_and_removed() {
        use k8s_openapi::api::core::v1::Service;
        let mut f = Fixture::new();
        let service = |selector: serde_json::Value| -> Service {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": selector}
            }))
            .unwrap()
        };
        let apply = |f: &mut Fixture, s: Service| {
            f.cache
                .apply(WatchEvent::Service(Change::Apply(s)), &mut f.queue, f.now)
        };
        apply(&mut f, service(serde_json::json!({"app": "web"})));
        apply(&mut f, service(serde_json::json!({"app": "web2"})));
        assert_eq!(f.cache.cluster().selector_objects().len(), 1);
        f.cache.apply(
            WatchEvent::Service(Change::Delete(delete("web"))),
            &mut f.queue,
            f.now,
        );
        assert!(f.cache.cluster().selector_objects().is_empty());
    }
}
