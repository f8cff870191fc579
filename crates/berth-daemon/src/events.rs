//! What changes reach the scheduling thread. The watchers deliver [`WatchEvent`]s, objects
//! as the API server has them; the handlers (`handlers.rs`) convert each into a
//! [`ClusterEvent`], the change in the engine's terms that the store (`store.rs`) applies.

use berth_engine::model;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::queue::event;

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

    /// The namespace, `default` when none is given.
    pub fn namespace(&self) -> &str {
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
    /// The first complete list has been delivered: the store holds every object of the kind.
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

/// A change to the cluster in the engine's terms, as the store applies it.
#[derive(Debug, Clone)]
pub enum ClusterEvent {
    /// A node was added or changed; `json_newly_held` when the extenders' documents took
    /// its JSON for the first time (a pod refused for want of it may fit now).
    NodeApplied {
        /// The node.
        node: model::Node,
        /// Its JSON is newly kept for the extenders.
        json_newly_held: bool,
    },
    /// A node was deleted.
    NodeDeleted(String),
    /// A pod the API server shows bound to a node.
    PodBound(model::Pod),
    /// A pod without a node; `ours` when this scheduler (one of its profiles) places it.
    PodPending {
        /// The pod.
        pod: model::Pod,
        /// This scheduler places it.
        ours: bool,
    },
    /// A pod was deleted or finished.
    PodDeleted(ObjectKey),
    /// A namespace was added or changed.
    NamespaceApplied(model::Namespace),
    /// A namespace was deleted.
    NamespaceDeleted(String),
    /// A Service, ReplicationController, ReplicaSet or StatefulSet was added or changed.
    SelectorObjectApplied(model::PodSelector),
    /// One was deleted.
    SelectorObjectDeleted(model::SelectorKind, ObjectKey),
    /// A volume-related object (PV, PVC, StorageClass, CSINode) was added or changed.
    VolumeObjectApplied(VolumeObject),
    /// One was deleted.
    VolumeObjectDeleted(Kind, ObjectKey),
    /// A PodDisruptionBudget was added or changed.
    BudgetApplied(model::PodDisruptionBudget),
    /// One was deleted.
    BudgetDeleted(ObjectKey),
    /// A kind's first complete list has been delivered.
    Listed(Kind),
    /// An object of a kind the store holds changed but cannot be read: the store keeps what
    /// it had.
    Unreadable(Kind, ObjectKey),
    /// An object of the kind changed that the store does not hold (a PriorityClass, an
    /// object that could not be read): nothing to apply, but the protections may have moved.
    Nothing(Kind),
}

/// The objects the volume rules read, converted.
#[derive(Debug, Clone)]
pub enum VolumeObject {
    /// A PersistentVolume.
    PersistentVolume(model::PersistentVolume),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(model::PersistentVolumeClaim),
    /// A StorageClass.
    StorageClass(model::StorageClass),
    /// A CSINode.
    CsiNode(model::CsiNode),
}

/// Upstream's label of a cluster event (`scheduler_queue_incoming_pods_total`'s `event`):
/// the resource, then Add or Update.
pub fn cluster_event(kind: Kind, added: bool) -> &'static str {
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
pub fn kind_of_selector(kind: model::SelectorKind) -> Kind {
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
