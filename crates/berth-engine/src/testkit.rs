//! Builders and runners for tests of rules and cycles, here and in other crates. Defaults are
//! chosen so a test states only what it is about: a node has 4 CPUs, 8 GiB and room for 110
//! pods; a pod has one container requesting nothing, in namespace `default`.

use crate::cluster::{Cluster, NodeId};
use crate::framework::{CycleContext, FilterPrep, FilterRule, ScorePrep, ScoreRule};
use crate::labels::{LabelSelector, Operator, Requirement};
use crate::model::VolumeMode;
use crate::model::{
    Container, ContainerPort, CsiNode, Meta, Node, NodeSelectorTerm, OwnerRef, PersistentVolume,
    PersistentVolumeClaim, Pod, PodAffinityTerm, PvSource, StorageClass, StringMap, Taint,
    TaintEffect, Toleration, TolerationOperator, Volume, VolumeBindingMode, VolumeSource,
    WeightedPodAffinityTerm,
};

/// One mebibyte.
pub const MI: i64 = 1 << 20;
/// One gibibyte.
pub const GI: i64 = 1 << 30;
/// 2^60 bytes: two pods of 7Ei each pass `i64::MAX` together.
pub const EI: i64 = 1 << 60;

fn meta(name: &str, namespace: &str) -> Meta {
    Meta {
        name: name.to_string(),
        namespace: namespace.to_string(),
        uid: format!("uid-{namespace}-{name}"),
        ..Meta::default()
    }
}

fn set(list: &mut Vec<(String, i64)>, name: &str, v: i64) {
    list.retain(|(n, _)| n != name);
    list.push((name.to_string(), v));
}

/// A selector requiring `key=value`.
pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        requirements: pairs
            .iter()
            .map(|(k, v)| Requirement {
                key: k.to_string(),
                operator: Operator::In,
                values: vec![v.to_string()],
            })
            .collect(),
    }
}

/// A requirement.
pub fn req(key: &str, operator: Operator, values: &[&str]) -> Requirement {
    Requirement {
        key: key.to_string(),
        operator,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// Starts a node.
pub fn node(name: &str) -> NodeBuilder {
    let mut n = Node {
        meta: meta(name, ""),
        ..Node::default()
    };
    n.meta
        .labels
        .insert("kubernetes.io/hostname".into(), name.into());
    n.allocatable = vec![
        ("cpu".into(), 4000),
        ("memory".into(), 8 * GI),
        ("pods".into(), 110),
    ];
    n.conditions.ready = Some(true);
    NodeBuilder(n)
}

/// Builds a [`Node`].
pub struct NodeBuilder(Node);

impl NodeBuilder {
    /// Allocatable milli-CPU.
    pub fn cpu(self, milli: i64) -> Self {
        self.alloc("cpu", milli)
    }
    /// Allocatable memory bytes.
    pub fn mem(self, bytes: i64) -> Self {
        self.alloc("memory", bytes)
    }
    /// Allocatable pod count.
    pub fn pods(self, n: i64) -> Self {
        self.alloc("pods", n)
    }
    /// Any allocatable resource.
    pub fn alloc(mut self, name: &str, v: i64) -> Self {
        set(&mut self.0.allocatable, name, v);
        self
    }
    /// A label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.meta.labels.insert(k.into(), v.into());
        self
    }
    /// An annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0.meta.annotations.insert(k.into(), v.into());
        self
    }
    /// Removes a label (e.g. the default `kubernetes.io/hostname`).
    pub fn unlabel(mut self, k: &str) -> Self {
        self.0.meta.labels.remove(k);
        self
    }
    /// Lists a controller (kind, uid) whose pods should avoid the node (preferAvoidPods).
    pub fn avoid_pods_of(mut self, kind: &str, uid: &str) -> Self {
        self.0.prefer_avoid_pods.push((kind.into(), uid.into()));
        self
    }
    /// A taint.
    pub fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.0.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
        });
        self
    }
    /// `spec.unschedulable: true`.
    pub fn unschedulable(mut self) -> Self {
        self.0.unschedulable = true;
        self
    }
    /// Edits the conditions.
    pub fn conditions(mut self, f: impl FnOnce(&mut crate::model::NodeConditions)) -> Self {
        f(&mut self.0.conditions);
        self
    }
    /// A pod CIDR.
    pub fn cidr(mut self, cidr: &str) -> Self {
        self.0.pod_cidrs.push(cidr.into());
        self
    }
    /// An image present on the node.
    pub fn image(mut self, name: &str, size: i64) -> Self {
        self.0.images.push(crate::model::NodeImage {
            names: vec![name.into()],
            size_bytes: size,
        });
        self
    }
    /// The node.
    pub fn build(self) -> Node {
        self.0
    }
}

/// Starts a pod in namespace `default` with one container requesting nothing.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder(Pod {
        meta: meta(name, "default"),
        scheduler_name: "berth".into(),
        containers: vec![Container {
            name: "c".into(),
            image: "app:1".into(),
            ..Container::default()
        }],
        ..Pod::default()
    })
}

/// Builds a [`Pod`].
pub struct PodBuilder(Pod);

impl PodBuilder {
    /// The namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0.meta.namespace = ns.into();
        self.0.meta.uid = format!("uid-{ns}-{}", self.0.meta.name);
        self
    }
    /// CPU (milli) and memory requests of the first container.
    pub fn req(self, milli_cpu: i64, memory: i64) -> Self {
        self.res("cpu", milli_cpu).res("memory", memory)
    }
    /// Any request of the first container.
    pub fn res(mut self, name: &str, v: i64) -> Self {
        set(&mut self.0.containers[0].requests, name, v);
        self
    }
    /// Adds a container.
    pub fn container(mut self, c: Container) -> Self {
        self.0.containers.push(c);
        self
    }
    /// Adds an init container with these CPU and memory requests.
    pub fn init(mut self, milli_cpu: i64, memory: i64) -> Self {
        self.0.init_containers.push(Container {
            name: format!("init{}", self.0.init_containers.len()),
            requests: vec![("cpu".into(), milli_cpu), ("memory".into(), memory)],
            ..Container::default()
        });
        self
    }
    /// Adds a sidecar: an init container with `restartPolicy: Always` and these CPU and
    /// memory requests.
    pub fn sidecar(mut self, milli_cpu: i64, memory: i64) -> Self {
        self.0.init_containers.push(Container {
            name: format!("init{}", self.0.init_containers.len()),
            requests: vec![("cpu".into(), milli_cpu), ("memory".into(), memory)],
            restartable: true,
            ..Container::default()
        });
        self
    }
    /// A pod-level request (`spec.resources.requests`).
    pub fn pod_level(mut self, name: &str, v: i64) -> Self {
        set(&mut self.0.resources, name, v);
        self
    }
    /// Pod overhead.
    pub fn overhead(mut self, name: &str, v: i64) -> Self {
        set(&mut self.0.overhead, name, v);
        self
    }
    /// A label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.meta.labels.insert(k.into(), v.into());
        self
    }
    /// An annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0.meta.annotations.insert(k.into(), v.into());
        self
    }
    /// Binds it to a node (a running pod).
    pub fn on(mut self, node: &str) -> Self {
        self.0.node_name = Some(node.into());
        self
    }
    /// A nodeSelector entry.
    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.0.node_selector.insert(k.into(), v.into());
        self
    }
    /// Required node affinity terms (ORed).
    pub fn node_affinity(mut self, terms: Vec<NodeSelectorTerm>) -> Self {
        self.0.affinity.node_required = Some(terms);
        self
    }
    /// A preferred node affinity term.
    pub fn prefer_node(mut self, weight: i32, term: NodeSelectorTerm) -> Self {
        self.0
            .affinity
            .node_preferred
            .push(crate::model::PreferredNodeTerm { weight, term });
        self
    }
    /// A toleration.
    pub fn tolerate(
        mut self,
        key: &str,
        operator: TolerationOperator,
        value: &str,
        effect: Option<TaintEffect>,
    ) -> Self {
        self.0.tolerations.push(Toleration {
            key: key.into(),
            operator,
            value: value.into(),
            effect,
        });
        self
    }
    /// A host port on the first container.
    pub fn host_port(mut self, ip: &str, protocol: &str, port: i32) -> Self {
        self.0.containers[0].ports.push(ContainerPort {
            host_port: port,
            host_ip: ip.into(),
            protocol: protocol.into(),
        });
        self
    }
    /// A volume.
    pub fn volume(mut self, name: &str, source: VolumeSource) -> Self {
        self.0.volumes.push(Volume {
            name: name.into(),
            source,
        });
        self
    }
    /// A volume using the claim `claim` (the volume is named after it).
    pub fn claim(self, claim: &str) -> Self {
        self.volume(
            claim,
            VolumeSource::Pvc {
                claim_name: claim.into(),
            },
        )
    }
    /// `hostNetwork: true`.
    pub fn host_network(mut self) -> Self {
        self.0.host_network = true;
        self
    }
    /// Priority.
    pub fn priority(mut self, p: i32) -> Self {
        self.0.priority = p;
        self
    }
    /// Creation time (seconds).
    pub fn created(mut self, t: i64) -> Self {
        self.0.meta.creation_timestamp = t;
        self
    }
    /// A controller owner.
    pub fn owner(mut self, kind: &str, name: &str, uid: &str) -> Self {
        self.0.meta.owners.push(OwnerRef {
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: true,
        });
        self
    }
    /// `status.startTime` (seconds).
    pub fn started(mut self, t: i64) -> Self {
        self.0.start_time = Some(t);
        self
    }
    /// `preemptionPolicy: Never`.
    pub fn preempt_never(mut self) -> Self {
        self.0.preempt_never = true;
        self
    }
    /// `status.nominatedNodeName`.
    pub fn nominated(mut self, node: &str) -> Self {
        self.0.nominated_node_name = Some(node.into());
        self
    }
    /// Marks it terminating.
    pub fn terminating(mut self) -> Self {
        self.0.meta.deleting = true;
        self
    }
    /// A required pod affinity term over `labels` in the pod's namespace.
    pub fn affinity(mut self, topology_key: &str, labels: &[(&str, &str)]) -> Self {
        self.0
            .affinity
            .pod_required
            .push(term(topology_key, labels));
        self
    }
    /// A required pod anti-affinity term over `labels` in the pod's namespace.
    pub fn anti_affinity(mut self, topology_key: &str, labels: &[(&str, &str)]) -> Self {
        self.0
            .affinity
            .anti_required
            .push(term(topology_key, labels));
        self
    }
    /// A preferred pod affinity term.
    pub fn prefer_affinity(mut self, weight: i32, key: &str, labels: &[(&str, &str)]) -> Self {
        self.0.affinity.pod_preferred.push(WeightedPodAffinityTerm {
            weight,
            term: term(key, labels),
        });
        self
    }
    /// A preferred pod anti-affinity term.
    pub fn prefer_anti(mut self, weight: i32, key: &str, labels: &[(&str, &str)]) -> Self {
        self.0
            .affinity
            .anti_preferred
            .push(WeightedPodAffinityTerm {
                weight,
                term: term(key, labels),
            });
        self
    }
    /// A topology spread constraint.
    pub fn spread(
        mut self,
        max_skew: i32,
        topology_key: &str,
        when_unsatisfiable: crate::model::WhenUnsatisfiable,
        label_selector: Option<LabelSelector>,
    ) -> Self {
        self.0
            .topology_spread_constraints
            .push(crate::model::TopologySpreadConstraint {
                max_skew,
                topology_key: topology_key.into(),
                when_unsatisfiable,
                label_selector,
                min_domains: None,
                node_affinity_policy: None,
                node_taints_policy: None,
            });
        self
    }
    /// Sets `minDomains` on the last topology spread constraint.
    pub fn min_domains(mut self, min_domains: i32) -> Self {
        if let Some(c) = self.0.topology_spread_constraints.last_mut() {
            c.min_domains = Some(min_domains);
        }
        self
    }
    /// Sets `nodeAffinityPolicy` and `nodeTaintsPolicy` on the last topology spread
    /// constraint (None leaves a policy unset).
    pub fn inclusion(
        mut self,
        node_affinity_policy: Option<crate::model::NodeInclusionPolicy>,
        node_taints_policy: Option<crate::model::NodeInclusionPolicy>,
    ) -> Self {
        if let Some(c) = self.0.topology_spread_constraints.last_mut() {
            c.node_affinity_policy = node_affinity_policy;
            c.node_taints_policy = node_taints_policy;
        }
        self
    }
    /// Edits anything else.
    pub fn with(mut self, f: impl FnOnce(&mut Pod)) -> Self {
        f(&mut self.0);
        self
    }
    /// The pod.
    pub fn build(self) -> Pod {
        self.0
    }
}

/// A pod with these labels.
pub fn labelled(name: &str, labels: &[(&str, &str)]) -> PodBuilder {
    labels.iter().fold(pod(name), |p, (k, v)| p.label(k, v))
}

/// A Service, RC, ReplicaSet or StatefulSet selecting `key=value` pairs.
pub fn selector_object(
    kind: crate::model::SelectorKind,
    ns: &str,
    name: &str,
    pairs: &[(&str, &str)],
) -> crate::model::PodSelector {
    crate::model::PodSelector {
        kind,
        meta: Meta {
            name: name.into(),
            namespace: ns.into(),
            ..Meta::default()
        },
        selector: Some(selector(pairs)),
    }
}

/// A pod affinity term over `labels` with this topology key, in the pod's namespace.
pub fn term(topology_key: &str, labels: &[(&str, &str)]) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(labels)),
        topology_key: topology_key.into(),
        ..PodAffinityTerm::default()
    }
}

/// A selector requiring each key to be present (any value).
pub fn exists(keys: &[&str]) -> LabelSelector {
    LabelSelector {
        requirements: keys.iter().map(|k| req(k, Operator::Exists, &[])).collect(),
    }
}

/// A namespace with labels.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> crate::model::Namespace {
    crate::model::Namespace {
        meta: Meta {
            labels: self::labels(labels),
            ..meta(name, "")
        },
        node_selector: None,
        toleration_whitelist: None,
    }
}

/// A node selector term of label requirements.
pub fn node_term(reqs: Vec<Requirement>) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: reqs,
        match_fields: Vec::new(),
    }
}

/// A cluster of these nodes and running pods. Panics on bad input: tests only.
pub fn cluster(nodes: Vec<Node>, pods: Vec<Pod>) -> Cluster {
    let mut c = Cluster::new();
    for n in nodes {
        c.add_node(n).expect("test node");
    }
    for p in pods {
        c.add_pod(p).expect("test pod");
    }
    c
}

/// Runs one filter for `pod` on every node: (node name, reasons), reasons empty if it passes.
pub fn run_filter(
    rule: &dyn FilterRule,
    cluster: &mut Cluster,
    pod: Pod,
) -> Vec<(String, Vec<String>)> {
    let info = cluster.compile_pod(pod);
    let ctx = CycleContext {
        cluster,
        pod: &info,
        nominated: false,
    };
    let prep = rule.prepare(ctx);
    cluster
        .node_order()
        .iter()
        .map(|id| {
            let node = cluster.node(*id);
            let reasons: Vec<String> = match &prep {
                FilterPrep::Skip => Vec::new(),
                FilterPrep::RejectAll(r) => r.iter().map(|r| r.to_string()).collect(),
                FilterPrep::Check(c) => {
                    let mut out = Vec::new();
                    let passed = c.check(node, &mut out);
                    assert_eq!(
                        passed,
                        out.is_empty(),
                        "{}: verdict and reasons disagree",
                        node.name()
                    );
                    if let Some(dense) = c.dense().passes(id.0 as usize) {
                        assert_eq!(
                            dense,
                            passed,
                            "{}: dense verdict and check disagree",
                            node.name()
                        );
                    }
                    out.iter().map(|r| r.to_string()).collect()
                }
            };
            (node.name().to_string(), reasons)
        })
        .collect()
}

/// Names of the nodes a filter passes.
pub fn passing(results: &[(String, Vec<String>)]) -> Vec<&str> {
    results
        .iter()
        .filter(|(_, r)| r.is_empty())
        .map(|(n, _)| n.as_str())
        .collect()
}

/// Runs one score rule for `pod` with every node feasible: (node name, normalised score).
pub fn run_score(rule: &dyn ScoreRule, cluster: &mut Cluster, pod: Pod) -> Vec<(String, i64)> {
    let nodes: Vec<NodeId> = cluster.node_order().to_vec();
    run_score_on(rule, cluster, pod, &nodes)
}

/// Runs one score rule with only `feasible` nodes feasible.
pub fn run_score_on(
    rule: &dyn ScoreRule,
    cluster: &mut Cluster,
    pod: Pod,
    feasible: &[NodeId],
) -> Vec<(String, i64)> {
    let info = cluster.compile_pod(pod);
    let ctx = CycleContext {
        cluster,
        pod: &info,
        nominated: false,
    };
    let scores = match rule.prepare(ctx) {
        ScorePrep::Constant(v) | ScorePrep::Uniform { normalized: v, .. } => {
            vec![v; feasible.len()]
        }
        ScorePrep::PerNode(s) => {
            let mut raw: Vec<i64> = feasible
                .iter()
                .map(|id| {
                    let node = cluster.node(*id);
                    let score = s.score(node);
                    assert_eq!(
                        s.score_at(id.0 as usize, node),
                        score,
                        "{}: score_at and score disagree",
                        node.name()
                    );
                    score
                })
                .collect();
            let mut batch = vec![0; feasible.len()];
            s.score_batch(cluster, feasible, &mut batch);
            assert_eq!(batch, raw, "score_batch and score disagree");
            s.normalize(feasible, &mut raw);
            raw
        }
    };
    feasible
        .iter()
        .zip(scores)
        .map(|(id, s)| (cluster.node(*id).name().to_string(), s))
        .collect()
}

/// Labels as a map, for building objects.
pub fn labels(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

// ---- storage ----

/// Starts an Available PersistentVolume of `capacity` bytes, ReadWriteOnce, with no class,
/// no node affinity and a source no limit counts.
pub fn pv(name: &str, capacity: i64) -> PvBuilder {
    PvBuilder(PersistentVolume {
        meta: meta(name, ""),
        capacity,
        storage_class_name: String::new(),
        access_modes: vec!["ReadWriteOnce".into()],
        volume_mode: VolumeMode::Filesystem,
        volume_attributes_class_name: String::new(),
        node_affinity: None,
        claim_ref: None,
        source: PvSource::Other,
        phase: "Available".into(),
    })
}

/// Builds a [`PersistentVolume`].
pub struct PvBuilder(PersistentVolume);

impl PvBuilder {
    /// `storageClassName`.
    pub fn class(mut self, class: &str) -> Self {
        self.0.storage_class_name = class.into();
        self
    }
    /// A label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.meta.labels.insert(k.into(), v.into());
        self
    }
    /// Access modes.
    pub fn access_modes(mut self, modes: &[&str]) -> Self {
        self.0.access_modes = modes.iter().map(|m| m.to_string()).collect();
        self
    }
    /// Required node affinity terms (ORed).
    pub fn node_affinity(mut self, terms: Vec<NodeSelectorTerm>) -> Self {
        self.0.node_affinity = Some(terms);
        self
    }
    /// Pins the volume to the node whose hostname label is `host` (a local volume).
    pub fn on_host(self, host: &str) -> Self {
        self.node_affinity(vec![node_term(vec![req(
            "kubernetes.io/hostname",
            Operator::In,
            &[host],
        )])])
    }
    /// Points the volume at a claim in `default` and marks it Bound.
    pub fn claimed_by(mut self, claim: &str) -> Self {
        self.0.claim_ref = Some(("default".into(), claim.into()));
        self.0.phase = "Bound".into();
        self
    }
    /// `status.phase`.
    pub fn phase(mut self, phase: &str) -> Self {
        self.0.phase = phase.into();
        self
    }
    /// The volume source.
    pub fn source(mut self, source: PvSource) -> Self {
        self.0.source = source;
        self
    }
    /// Marks it being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.meta.deleting = true;
        self
    }
    /// `volumeMode`.
    pub fn mode(mut self, mode: VolumeMode) -> Self {
        self.0.volume_mode = mode;
        self
    }
    /// `volumeAttributesClassName`.
    pub fn attributes_class(mut self, class: &str) -> Self {
        self.0.volume_attributes_class_name = class.into();
        self
    }
    /// The volume.
    pub fn build(self) -> PersistentVolume {
        self.0
    }
}

/// Starts a claim in namespace `default` for `request` bytes, ReadWriteOnce, without class
/// and unbound.
pub fn pvc(name: &str, request: i64) -> PvcBuilder {
    PvcBuilder(PersistentVolumeClaim {
        meta: meta(name, "default"),
        volume_name: String::new(),
        storage_class_name: None,
        access_modes: vec!["ReadWriteOnce".into()],
        volume_mode: VolumeMode::Filesystem,
        volume_attributes_class_name: String::new(),
        request,
        selector: None,
    })
}

/// Builds a [`PersistentVolumeClaim`].
pub struct PvcBuilder(PersistentVolumeClaim);

impl PvcBuilder {
    /// The namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0.meta.namespace = ns.into();
        self
    }
    /// `storageClassName`.
    pub fn class(mut self, class: &str) -> Self {
        self.0.storage_class_name = Some(class.into());
        self
    }
    /// Access modes.
    pub fn access_modes(mut self, modes: &[&str]) -> Self {
        self.0.access_modes = modes.iter().map(|m| m.to_string()).collect();
        self
    }
    /// A selector over volume labels.
    pub fn selector(mut self, selector: LabelSelector) -> Self {
        self.0.selector = Some(selector);
        self
    }
    /// Names a volume without the PV controller having completed the binding (pre-bound).
    pub fn prebound(mut self, volume: &str) -> Self {
        self.0.volume_name = volume.into();
        self
    }
    /// Bound to `volume`, binding completed.
    pub fn bound(self, volume: &str) -> Self {
        self.prebound(volume)
            .annotation(crate::rules::volume_util::BIND_COMPLETED_ANNOTATION, "yes")
    }
    /// An annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0.meta.annotations.insert(k.into(), v.into());
        self
    }
    /// Marks it being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.meta.deleting = true;
        self
    }
    /// `volumeMode`.
    pub fn mode(mut self, mode: VolumeMode) -> Self {
        self.0.volume_mode = mode;
        self
    }
    /// `volumeAttributesClassName`.
    pub fn attributes_class(mut self, class: &str) -> Self {
        self.0.volume_attributes_class_name = class.into();
        self
    }
    /// The claim.
    pub fn build(self) -> PersistentVolumeClaim {
        self.0
    }
}

/// A StorageClass with no allowed-topology restriction.
pub fn storage_class(name: &str, provisioner: &str, mode: VolumeBindingMode) -> StorageClass {
    StorageClass {
        meta: meta(name, ""),
        provisioner: provisioner.into(),
        volume_binding_mode: mode,
        allowed_topologies: Vec::new(),
    }
}

/// A CSINode: (driver, allocatable volume count) pairs.
pub fn csi_node(name: &str, drivers: &[(&str, Option<i64>)]) -> CsiNode {
    CsiNode {
        meta: meta(name, ""),
        drivers: drivers.iter().map(|(d, n)| (d.to_string(), *n)).collect(),
    }
}

/// Adds volumes, claims and classes to a cluster.
pub fn add_storage(
    cluster: &mut Cluster,
    volumes: Vec<PersistentVolume>,
    claims: Vec<PersistentVolumeClaim>,
    classes: Vec<StorageClass>,
) {
    for v in volumes {
        cluster.upsert_persistent_volume(v);
    }
    for c in claims {
        cluster.upsert_persistent_volume_claim(c);
    }
    for c in classes {
        cluster.upsert_storage_class(c);
    }
}

/// Adds CSINodes to a cluster.
pub fn add_csi_nodes(cluster: &mut Cluster, csi_nodes: Vec<CsiNode>) {
    for n in csi_nodes {
        cluster.upsert_csi_node(n);
    }
}
