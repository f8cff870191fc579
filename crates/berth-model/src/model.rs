//! The engine's input model: the parts of Kubernetes objects the scheduler reads, as plain
//! Rust values. `berth-kube` converts API objects into these; tests build them directly.
//! Quantities are already integers (see [`crate::resources::ResourceList`]).

pub use crate::string_map::{Iter as StringMapIter, StringMap};

use crate::labels::{LabelSelector, Requirement};
use crate::resources::ResourceList;

/// Object metadata the scheduler uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta {
    /// Name.
    pub name: String,
    /// Namespace ("" for cluster-scoped objects).
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// Labels.
    pub labels: StringMap,
    /// Annotations.
    pub annotations: StringMap,
    /// Creation time, seconds since the epoch (queue order among equal priorities).
    pub creation_timestamp: i64,
    /// Whether the object is being deleted (`deletionTimestamp` set).
    pub deleting: bool,
    /// Owner references.
    pub owners: Vec<OwnerRef>,
}

/// An owner reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnerRef {
    /// Kind of the owner (ReplicaSet, ReplicationController, ...).
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// UID of the owner.
    pub uid: String,
    /// Whether this owner is the managing controller.
    pub controller: bool,
}

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// Pods that do not tolerate the taint are not scheduled onto the node.
    NoSchedule,
    /// The scheduler tries to avoid the node.
    PreferNoSchedule,
    /// Pods are not scheduled and running ones are evicted.
    NoExecute,
}

impl TaintEffect {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

/// A toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TolerationOperator {
    /// Key and value must match (the default).
    #[default]
    Equal,
    /// Key must match (any value); an empty key matches every taint.
    Exists,
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Toleration {
    /// Key (empty with Exists tolerates everything).
    pub key: String,
    /// Operator.
    pub operator: TolerationOperator,
    /// Value (for Equal).
    pub value: String,
    /// Effect (None matches all effects).
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint` (Kubernetes `ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// Node conditions the scheduler reads. `None` means the condition is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeConditions {
    /// Ready condition status (Some(true) = "True").
    pub ready: Option<bool>,
    /// MemoryPressure is True.
    pub memory_pressure: bool,
    /// DiskPressure is True.
    pub disk_pressure: bool,
    /// PIDPressure is True.
    pub pid_pressure: bool,
    /// NetworkUnavailable is True.
    pub network_unavailable: bool,
    /// OutOfDisk is True (old releases).
    pub out_of_disk: bool,
}

/// A container image present on a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeImage {
    /// All names of the image (tags and digests).
    pub names: Vec<String>,
    /// Size in bytes.
    pub size_bytes: i64,
}

/// A node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    /// Metadata.
    pub meta: Meta,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.podCIDRs` (or `spec.podCIDR`), as written.
    pub pod_cidrs: Vec<String>,
    /// `status.allocatable` (falls back to capacity when absent, as the kubelet reports).
    pub allocatable: ResourceList,
    /// Conditions.
    pub conditions: NodeConditions,
    /// `status.images`.
    pub images: Vec<NodeImage>,
    /// Controllers whose pods should avoid the node, from its
    /// `scheduler.alpha.kubernetes.io/preferAvoidPods` annotation, parsed by the converter
    /// (a malformed annotation lists none, as upstream ignores it): (kind, uid).
    pub prefer_avoid_pods: Vec<(String, String)>,
}

/// A host port a container asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerPort {
    /// `hostPort` (0 = none).
    pub host_port: i32,
    /// `hostIP` ("" means 0.0.0.0).
    pub host_ip: String,
    /// Protocol (TCP when empty).
    pub protocol: String,
}

/// A container.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Container {
    /// Name.
    pub name: String,
    /// Image reference.
    pub image: String,
    /// `resources.requests`.
    pub requests: ResourceList,
    /// Ports.
    pub ports: Vec<ContainerPort>,
    /// An init container with `restartPolicy: Always` (a native sidecar, GA in v1.33): it
    /// keeps running beside the app containers, so its requests and host ports count for the
    /// pod's whole life. Always false for app containers.
    pub restartable: bool,
    /// `status.containerStatuses[].allocatedResources`: what the kubelet has admitted for
    /// the container (in-place resize, GA in v1.35). None when not reported.
    pub allocated: Option<ResourceList>,
    /// `status.containerStatuses[].resources.requests`: what the container runs with now;
    /// empty when `resources` is reported without requests. None when the status reports
    /// no `resources`: v1.36 then reads neither this nor `allocated`, only the spec.
    pub actual: Option<ResourceList>,
}

/// A pod volume source, reduced to what the volume rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeSource {
    /// A PersistentVolumeClaim in the pod's namespace.
    Pvc {
        /// Claim name.
        claim_name: String,
    },
    /// A GCE persistent disk.
    GcePersistentDisk {
        /// Disk name.
        pd_name: String,
        /// Read-only mount.
        read_only: bool,
    },
    /// An AWS EBS volume.
    AwsElasticBlockStore {
        /// Volume ID.
        volume_id: String,
    },
    /// A Ceph RBD image.
    Rbd {
        /// Monitors.
        monitors: Vec<String>,
        /// Pool (default "rbd").
        pool: String,
        /// Image.
        image: String,
        /// Read-only mount.
        read_only: bool,
    },
    /// An iSCSI disk.
    Iscsi {
        /// Target portal.
        target_portal: String,
        /// IQN.
        iqn: String,
        /// LUN.
        lun: i32,
        /// Read-only mount.
        read_only: bool,
    },
    /// An Azure disk.
    AzureDisk {
        /// Disk name.
        disk_name: String,
    },
    /// A Cinder volume.
    Cinder {
        /// Volume ID.
        volume_id: String,
    },
    /// An inline CSI volume.
    Csi {
        /// Driver name.
        driver: String,
    },
    /// Anything else (emptyDir, configMap, ...): no scheduling constraint.
    Other,
}

/// A pod volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    /// Name.
    pub name: String,
    /// Source.
    pub source: VolumeSource,
}

/// A node selector term: requirements on labels, ANDed (`matchExpressions`), plus
/// requirements on fields (`matchFields`, only `metadata.name` is supported upstream).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeSelectorTerm {
    /// Label requirements.
    pub match_expressions: Vec<Requirement>,
    /// Field requirements (key `metadata.name`).
    pub match_fields: Vec<Requirement>,
}

/// A preferred node-affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreferredNodeTerm {
    /// Weight 1..100.
    pub weight: i32,
    /// The term.
    pub term: NodeSelectorTerm,
}

/// A pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodAffinityTerm {
    /// Selects the pods this term is about (None selects nothing). `matchLabelKeys` and
    /// `mismatchLabelKeys` (v1.29+) arrive already merged into it by conversion, as the API
    /// server merges them at creation.
    pub label_selector: Option<LabelSelector>,
    /// Namespaces to look in; empty (with no namespace selector) means the pod's own.
    pub namespaces: Vec<String>,
    /// Selects namespaces by their labels, added to `namespaces`.
    pub namespace_selector: Option<LabelSelector>,
    /// The topology key.
    pub topology_key: String,
}

/// A weighted pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedPodAffinityTerm {
    /// Weight 1..100.
    pub weight: i32,
    /// The term.
    pub term: PodAffinityTerm,
}

/// A pod's affinity section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Affinity {
    /// Required node affinity (terms ORed); None = no requirement.
    pub node_required: Option<Vec<NodeSelectorTerm>>,
    /// Preferred node affinity.
    pub node_preferred: Vec<PreferredNodeTerm>,
    /// Required pod affinity.
    pub pod_required: Vec<PodAffinityTerm>,
    /// Preferred pod affinity.
    pub pod_preferred: Vec<WeightedPodAffinityTerm>,
    /// Required pod anti-affinity.
    pub anti_required: Vec<PodAffinityTerm>,
    /// Preferred pod anti-affinity.
    pub anti_preferred: Vec<WeightedPodAffinityTerm>,
}

/// What to do with a pod when a topology spread constraint cannot be met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnsatisfiable {
    /// A filter.
    DoNotSchedule,
    /// A score.
    ScheduleAnyway,
}

/// A topology spread constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologySpreadConstraint {
    /// Maximum skew.
    pub max_skew: i32,
    /// Topology key.
    pub topology_key: String,
    /// Filter or score.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// The pods counted. `matchLabelKeys` (v1.25+) arrive already merged into it by
    /// conversion, as `key In [the pod's value]`.
    pub label_selector: Option<LabelSelector>,
    /// `minDomains` (v1.24+; None means upstream's 1): a DoNotSchedule constraint with fewer
    /// eligible domains than this takes the global minimum as 0.
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy` (v1.25+; None means Honor): whether only nodes matching the pod's
    /// node selector and required node affinity count.
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// `nodeTaintsPolicy` (v1.25+; None means Ignore): whether nodes with a NoSchedule or
    /// NoExecute taint the pod does not tolerate are left out of the count.
    pub node_taints_policy: Option<NodeInclusionPolicy>,
}

/// How a topology spread constraint treats a node property when choosing the nodes whose pods
/// count (upstream's `NodeInclusionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeInclusionPolicy {
    /// Only nodes that satisfy the property count.
    Honor,
    /// Every node counts, whatever the property.
    Ignore,
}

/// A pod.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pod {
    /// Metadata.
    pub meta: Meta,
    /// `spec.nodeName`: set for running (bound) pods.
    pub node_name: Option<String>,
    /// `spec.schedulerName`.
    pub scheduler_name: String,
    /// `spec.priority` after resolving `priorityClassName`.
    pub priority: i32,
    /// `spec.priorityClassName`.
    pub priority_class_name: String,
    /// App containers.
    pub containers: Vec<Container>,
    /// Init containers.
    pub init_containers: Vec<Container>,
    /// `spec.overhead`.
    pub overhead: ResourceList,
    /// `spec.resources.requests` (pod-level resources, on by default since v1.34), with the
    /// API server's defaulting of requests from limits already applied: where set for cpu,
    /// memory or `hugepages-*` it replaces the containers' sum.
    pub resources: ResourceList,
    /// `status.allocatedResources`: the pod-level requests the kubelet admitted (pod-level
    /// in-place resize, InPlacePodLevelResourcesVerticalScaling, beta and on in v1.36). None
    /// when not reported.
    pub allocated_pod_level: Option<ResourceList>,
    /// `status.resources.requests`: the pod-level requests the pod runs with; empty when
    /// `resources` is reported without requests. None when the status reports no
    /// `resources`: v1.36 then reads neither this nor `allocated_pod_level`.
    pub actual_pod_level: Option<ResourceList>,
    /// The pod's `PodResizePending` condition says `Infeasible`: the kubelet will not apply
    /// the resize, so the spec's requests are not counted for this bound pod.
    pub resize_infeasible: bool,
    /// `spec.schedulingGates` names: while any is left the pod is not tried (v1.30's
    /// SchedulingGates).
    pub scheduling_gates: Vec<String>,
    /// `spec.resourceClaims` names (Dynamic Resource Allocation, GA in v1.34): devices Berth
    /// does not allocate, so such a pod is refused everywhere.
    pub resource_claims: Vec<String>,
    /// Why Berth will not place the pod: each names a field it sets that Berth does not
    /// model and whose being ignored could overcommit a node or break a constraint the user
    /// wrote (filled in by the converter). Such a pod fits nowhere.
    pub refused: Vec<String>,
    /// `spec.nodeSelector`.
    pub node_selector: StringMap,
    /// `spec.affinity`.
    pub affinity: Affinity,
    /// `spec.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// `spec.volumes`.
    pub volumes: Vec<Volume>,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// `spec.topologySpreadConstraints`.
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// `spec.preemptionPolicy` is `Never`: the pod waits instead of preempting.
    pub preempt_never: bool,
    /// `status.nominatedNodeName`: the node a preemption cleared for this pending pod.
    pub nominated_node_name: Option<String>,
    /// `status.startTime`, seconds since the epoch (None: not started yet). Preemption
    /// spares pods that started earlier.
    pub start_time: Option<i64>,
}

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.meta.namespace, self.meta.name)
    }

    /// The managing controller's owner reference, if any.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.meta.owners.iter().find(|o| o.controller)
    }
}

/// A PodDisruptionBudget (`policy/v1`): what preemption reads of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodDisruptionBudget {
    /// Metadata (namespace and name).
    pub meta: Meta,
    /// `spec.selector`; None or empty selects no pod (upstream's preemption skips such a
    /// budget).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`: names of pods already being evicted, not counted again.
    pub disrupted_pods: Vec<String>,
}

/// A namespace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Namespace {
    /// Metadata (labels feed namespace selectors).
    pub meta: Meta,
    /// The node selector from the namespace's `openshift.io/node-selector` or
    /// `scheduler.alpha.kubernetes.io/node-selector` annotation, parsed by the converter;
    /// None when neither is set.
    pub node_selector: Option<NamespaceNodeSelector>,
    /// The tolerations the namespace's `scheduler.alpha.kubernetes.io/tolerationsWhitelist`
    /// annotation lists, parsed by the converter; None when it is not set. Read by
    /// CheckTolerationRestriction as the guarded taints the namespace may tolerate.
    pub toleration_whitelist: Option<TolerationWhitelist>,
}

/// A namespace's tolerations whitelist annotation, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TolerationWhitelist {
    /// The listed tolerations (empty for an empty annotation).
    Tolerations(Vec<Toleration>),
    /// The annotation does not parse: why. It grants nothing, and the reasons say so.
    Invalid(String),
}

/// A namespace's node selector annotation, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceNodeSelector {
    /// The (key, value) pairs every node must carry; empty restricts nothing.
    Pairs(Vec<(String, String)>),
    /// The annotation does not parse: why. The namespace's pods fit no node.
    Invalid(String),
}

impl NamespaceNodeSelector {
    /// Parses an annotation's `key=value,key2=value2`.
    pub fn parse(text: &str) -> Self {
        match crate::labels::parse_node_selector(text) {
            Ok(pairs) => NamespaceNodeSelector::Pairs(pairs),
            Err(e) => NamespaceNodeSelector::Invalid(e),
        }
    }
}

/// The kind of a workload object that selects pods (for spreading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectorKind {
    /// A Service (`spec.selector`).
    Service,
    /// A ReplicationController.
    ReplicationController,
    /// A ReplicaSet.
    ReplicaSet,
    /// A StatefulSet.
    StatefulSet,
}

/// A Service, ReplicationController, ReplicaSet or StatefulSet: an object that selects pods.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSelector {
    /// Kind.
    pub kind: SelectorKind,
    /// Metadata.
    pub meta: Meta,
    /// The selector; None selects nothing (a Service without selector).
    pub selector: Option<LabelSelector>,
}

/// A volume binding mode of a StorageClass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VolumeBindingMode {
    /// Bind at claim creation.
    #[default]
    Immediate,
    /// Bind when a pod using the claim is scheduled.
    WaitForFirstConsumer,
}

/// A StorageClass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StorageClass {
    /// Metadata.
    pub meta: Meta,
    /// Provisioner (`kubernetes.io/no-provisioner` cannot provision).
    pub provisioner: String,
    /// Binding mode.
    pub volume_binding_mode: VolumeBindingMode,
    /// Allowed topologies (terms ORed) for dynamically provisioned volumes.
    pub allowed_topologies: Vec<NodeSelectorTerm>,
}

/// The attachable source of a PersistentVolume, for volume counting and zone checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PvSource {
    /// GCE PD.
    GcePersistentDisk {
        /// Disk name.
        pd_name: String,
    },
    /// AWS EBS.
    AwsElasticBlockStore {
        /// Volume ID.
        volume_id: String,
    },
    /// Azure disk.
    AzureDisk {
        /// Disk name.
        disk_name: String,
    },
    /// Cinder.
    Cinder {
        /// Volume ID.
        volume_id: String,
    },
    /// CSI.
    Csi {
        /// Driver.
        driver: String,
        /// Volume handle.
        volume_handle: String,
    },
    /// Anything else.
    Other,
}

/// How a volume is presented to the pod (`volumeMode` of PVs and claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VolumeMode {
    /// A mounted filesystem: the API's default.
    #[default]
    Filesystem,
    /// A raw block device.
    Block,
}

/// A PersistentVolume.
#[derive(Debug, Clone, PartialEq)]
pub struct PersistentVolume {
    /// Metadata (labels carry zone/region for NoVolumeZoneConflict).
    pub meta: Meta,
    /// Storage capacity in bytes.
    pub capacity: i64,
    /// Storage class name ("" = none).
    pub storage_class_name: String,
    /// Access modes.
    pub access_modes: Vec<String>,
    /// `spec.volumeMode` (Filesystem when unset): a claim of the other mode never binds it.
    pub volume_mode: VolumeMode,
    /// `spec.volumeAttributesClassName` (v1.34 GA; "" when unset): binds only claims naming
    /// the same class.
    pub volume_attributes_class_name: String,
    /// Required node affinity (terms ORed).
    pub node_affinity: Option<Vec<NodeSelectorTerm>>,
    /// The claim it is bound to (namespace, name), if any.
    pub claim_ref: Option<(String, String)>,
    /// Source.
    pub source: PvSource,
    /// `status.phase`.
    pub phase: String,
}

/// A PersistentVolumeClaim.
#[derive(Debug, Clone, PartialEq)]
pub struct PersistentVolumeClaim {
    /// Metadata.
    pub meta: Meta,
    /// `spec.volumeName`: the bound PV, if any.
    pub volume_name: String,
    /// Storage class name (None = default class; Some("") = no class).
    pub storage_class_name: Option<String>,
    /// Access modes (`ReadWriteOncePod`: one pod in the whole cluster at a time).
    pub access_modes: Vec<String>,
    /// `spec.volumeMode` (Filesystem when unset): binds only volumes of the same mode.
    pub volume_mode: VolumeMode,
    /// `spec.volumeAttributesClassName` (v1.34 GA; "" when unset): binds only volumes of the
    /// same class, so a claim without one binds only volumes without one.
    pub volume_attributes_class_name: String,
    /// Requested storage bytes.
    pub request: i64,
    /// Selector over PV labels.
    pub selector: Option<LabelSelector>,
}

/// A CSINode: per-driver volume limits of a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsiNode {
    /// Metadata (name = node name).
    pub meta: Meta,
    /// (driver name, allocatable volume count if set).
    pub drivers: Vec<(String, Option<i64>)>,
}
