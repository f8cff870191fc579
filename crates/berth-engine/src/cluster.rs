//! The cluster state the engine schedules against.
//!
//! Invariants:
//! - Per-node aggregates (requested resources, pod lists, used host ports, pod-IP use) always
//!   equal the sum over the pods assigned to that node; they are updated on every assign and
//!   remove, never recomputed by a scheduling cycle.
//! - Indexes over assigned pods (by label, by affinity terms, pods with volumes) are updated
//!   in the same places.
//! - A scheduling cycle reads the cluster through `&Cluster` only; nothing is cloned per pod.
//! - Every table is private: each kind (nodes, pods, namespaces, selector objects,
//!   PersistentVolumes, claims, StorageClasses, CSINodes) changes only through its
//!   `upsert_*` / `remove_*` (and `assign` / `unassign` for pods), so no caller can change
//!   an object without the aggregates and indexes that depend on it.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::health::state::ProtectionState;
use crate::labels::{Interner, LabelSelector, Labels, Selector, Sym};
use crate::model::{
    self, CsiNode, PersistentVolume, PersistentVolumeClaim, SelectorKind, StorageClass,
};
use crate::podinfo::{AffinityTerm, PodInfo};
pub use crate::types::{HostPort, NamespaceFilter, NodeId, PodId, TermKind};

mod changes;
mod compaction;
mod error;
mod indexes;
mod node_fit;
mod node_info;
mod selector_objects;

pub use changes::{ChangeLog, Cursor};
pub use compaction::Compaction;
pub use error::ClusterError;
pub use indexes::{TermIndex, TermRef};
use indexes::{
    count_claims, index_terms, remove_from_index, remove_item, uncount_image, uses_volumes,
};
pub use node_fit::{FitRequest, NodeFit};
pub(crate) use node_info::fresh_stamp;
pub use node_info::{NodeInfo, WellKnown, normalize_image_name};

/// A namespace as the rules see it.
#[derive(Debug, Clone, Default)]
pub struct NamespaceInfo {
    /// Interned labels (namespace selectors of affinity terms).
    pub labels: Labels,
    /// The namespace's node selector, if its annotation is set.
    pub node_selector: Option<model::NamespaceNodeSelector>,
    /// The namespace's tolerations whitelist, if its annotation is set.
    pub toleration_whitelist: Option<model::TolerationWhitelist>,
}

/// A Service, RC, ReplicaSet or StatefulSet, compiled.
#[derive(Debug, Clone)]
pub struct SelectorObject {
    /// Kind.
    pub kind: SelectorKind,
    /// Namespace.
    pub namespace: Sym,
    /// Name.
    pub name: Box<str>,
    /// Compiled selector; None selects nothing.
    pub selector: Option<Selector>,
}

/// The cluster: nodes, assigned pods, and the objects the rules consult.
#[derive(Debug)]
pub struct Cluster {
    /// The string interner shared by every label in the cluster.
    interner: Interner,
    /// Well-known label keys.
    keys: WellKnown,
    /// Boxed so that telling a live slot from a removed one reads this dense array of
    /// pointers, not a field somewhere inside each node.
    nodes: Vec<Option<Box<NodeInfo>>>,
    /// Per node slot, the dense index of its zone key (`NO_ZONE` without one), so spreading
    /// can aggregate per zone in arrays.
    zone_slots: Vec<u32>,
    /// Each node slot's [`NodeFit`] row, rewritten whenever the node or its pods change.
    fit: Vec<NodeFit>,
    /// Zone keys by dense index.
    zones: Vec<Sym>,
    node_by_name: FxHashMap<Box<str>, NodeId>,
    /// Visiting order, computed on first use after a node change.
    node_order: OnceLock<Vec<NodeId>>,
    pods: Vec<Option<PodInfo>>,
    free_pod_slots: Vec<u32>,
    pod_by_key: FxHashMap<(Sym, Box<str>), PodId>,
    /// Namespaces by interned name.
    namespaces: FxHashMap<Sym, NamespaceInfo>,
    /// Services, RCs, ReplicaSets, StatefulSets, at most one per (kind, namespace, name), in
    /// the order they were first added: rules that take the first selecting Service see the
    /// same one however often it is updated.
    selector_objects: selector_objects::SelectorObjects,
    /// PersistentVolumes by name.
    persistent_volumes: FxHashMap<String, PersistentVolume>,
    /// PersistentVolumeClaims by (namespace, name).
    persistent_volume_claims: FxHashMap<(String, String), PersistentVolumeClaim>,
    /// StorageClasses by name.
    storage_classes: FxHashMap<String, StorageClass>,
    /// CSINodes by node name.
    csi_nodes: FxHashMap<String, CsiNode>,
    label_index: FxHashMap<(Sym, Sym), Vec<PodId>>,
    label_columns: FxHashMap<Sym, Vec<Option<Sym>>>,
    label_nodes: FxHashMap<(Sym, Sym), Vec<NodeId>>,
    pods_with_affinity: Vec<PodId>,
    pods_with_volumes: Vec<PodId>,
    /// Namespace -> claim name -> how many volumes of assigned pods name the claim
    /// (upstream's per-node `PVCRefCounts` summed over the nodes), so ReadWriteOncePod asks
    /// whether a claim is in use without scanning pods.
    claim_users: FxHashMap<Box<str>, FxHashMap<Box<str>, u32>>,
    anti_affinity_terms: TermIndex,
    scoring_terms: TermIndex,
    image_node_counts: FxHashMap<Box<str>, u32>,
    /// How many nodes' preferAvoidPods annotations list any controller: with none, every
    /// node scores the same in NodePreferAvoidPods.
    avoiding_nodes: u32,
    /// How many nodes carry a PreferNoSchedule taint: with none, every node scores the same
    /// in TaintTolerationPriority.
    soft_tainted_nodes: u32,
    /// Interned strings after the last compaction: the next one waits until the interner
    /// has grown past twice that (plus a floor), so compacting costs O(1) per string.
    interned_after_compaction: usize,
    /// The history-based protections' verdicts (open circuit breakers, quarantined
    /// workloads), set by whoever runs their trackers; not derived from the objects.
    protections: ProtectionState,
    /// Changes for answers kept across cycles (see [`ChangeLog`]).
    changes: ChangeLog,
}

impl Default for Cluster {
    fn default() -> Self {
        Self::new()
    }
}

/// How many entries the cluster's growing tables hold, for a long-running scheduler to show
/// that its memory follows the live objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterSizes {
    /// Strings in the interner.
    pub interned: usize,
    /// Pods in the cluster.
    pub pods: usize,
    /// Pod slots, live or free.
    pub pod_slots: usize,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Node slots, live or removed.
    pub node_slots: usize,
    /// Label pairs in the pod label index.
    pub pod_label_pairs: usize,
    /// Label pairs in the node label-to-nodes index.
    pub node_label_pairs: usize,
    /// Label keys with a node label column.
    pub label_columns: usize,
    /// Image names counted across nodes.
    pub image_names: usize,
    /// Label pairs in the two affinity term indexes.
    pub term_label_pairs: usize,
}

/// The zone index of a node without zone or region labels.
pub const NO_ZONE: u32 = u32::MAX;

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Self {
        let mut interner = Interner::default();
        let keys = WellKnown {
            hostname: interner.intern("kubernetes.io/hostname"),
            zone: interner.intern("topology.kubernetes.io/zone"),
            zone_beta: interner.intern("failure-domain.beta.kubernetes.io/zone"),
            region: interner.intern("topology.kubernetes.io/region"),
            region_beta: interner.intern("failure-domain.beta.kubernetes.io/region"),
        };
        Cluster {
            interner,
            keys,
            nodes: Vec::new(),
            zone_slots: Vec::new(),
            fit: Vec::new(),
            zones: Vec::new(),
            node_by_name: FxHashMap::default(),
            node_order: OnceLock::new(),
            pods: Vec::new(),
            free_pod_slots: Vec::new(),
            pod_by_key: FxHashMap::default(),
            namespaces: FxHashMap::default(),
            selector_objects: selector_objects::SelectorObjects::default(),
            persistent_volumes: FxHashMap::default(),
            persistent_volume_claims: FxHashMap::default(),
            storage_classes: FxHashMap::default(),
            csi_nodes: FxHashMap::default(),
            label_index: FxHashMap::default(),
            label_columns: FxHashMap::default(),
            label_nodes: FxHashMap::default(),
            pods_with_affinity: Vec::new(),
            pods_with_volumes: Vec::new(),
            claim_users: FxHashMap::default(),
            anti_affinity_terms: TermIndex::default(),
            scoring_terms: TermIndex::default(),
            image_node_counts: FxHashMap::default(),
            avoiding_nodes: 0,
            soft_tainted_nodes: 0,
            interned_after_compaction: 0,
            protections: ProtectionState::default(),
            changes: ChangeLog::default(),
        }
    }

    /// What changed, for answers kept across cycles: every pod placed or removed, and an
    /// epoch for all other changes.
    pub fn changes(&self) -> &ChangeLog {
        &self.changes
    }

    /// The protections' verdicts the circuit-breaker and quarantine rules read.
    pub fn protections(&self) -> &ProtectionState {
        &self.protections
    }

    /// The protections' verdicts, for the trackers' owner to replace.
    pub fn protections_mut(&mut self) -> &mut ProtectionState {
        &mut self.protections
    }

    // ---- nodes ----

    /// Adds a node.
    pub fn add_node(&mut self, node: model::Node) -> Result<NodeId, ClusterError> {
        if self.node_by_name.contains_key(node.meta.name.as_str()) {
            return Err(ClusterError::DuplicateNode(node.meta.name));
        }
        let id = NodeId(self.nodes.len() as u32);
        let info = NodeInfo::build(id, node, &mut self.interner, self.keys)?;
        self.changes.bump();
        for name in info.images.keys() {
            *self.image_node_counts.entry(name.clone()).or_default() += 1;
        }
        self.avoiding_nodes += u32::from(!info.prefer_avoid.is_empty());
        self.soft_tainted_nodes += u32::from(info.soft_tainted());
        self.node_by_name.insert(info.name().into(), id);
        let labels = info.labels.clone();
        let zone = self.zone_slot(info.zone_key);
        self.fit.push(NodeFit::of(&info));
        self.nodes.push(Some(Box::new(info)));
        self.zone_slots.push(zone);
        for column in self.label_columns.values_mut() {
            column.resize(self.nodes.len(), None);
        }
        self.set_label_columns(id, &labels, true);
        self.node_order = OnceLock::new();
        Ok(id)
    }

    /// Records (or clears) a node's labels in the per-key label columns and the
    /// label-to-nodes index.
    fn set_label_columns(&mut self, id: NodeId, labels: &Labels, present: bool) {
        let slots = self.nodes.len();
        for (k, v) in labels.iter() {
            let column = self
                .label_columns
                .entry(k)
                .or_insert_with(|| vec![None; slots]);
            column[id.0 as usize] = present.then_some(v);
            if present {
                self.label_nodes.entry((k, v)).or_default().push(id);
            } else {
                remove_from_index(&mut self.label_nodes, (k, v), id);
            }
        }
    }

    /// The nodes carrying label `key=value` (a topology domain), in no particular order.
    pub fn nodes_with_label(&self, key: Sym, value: Sym) -> &[NodeId] {
        self.label_nodes
            .get(&(key, value))
            .map_or(&[], Vec::as_slice)
    }

    /// A label key's value on every node, indexed by `NodeId.0` (None where the node lacks
    /// the label); None when no node ever carried the key. Rules read these dense columns on
    /// the hot path instead of searching each node's label set.
    pub fn label_column(&self, key: Sym) -> Option<&[Option<Sym>]> {
        self.label_columns.get(&key).map(Vec::as_slice)
    }

    /// Adds a node, or replaces the spec and status of the node of that name, keeping its
    /// assigned pods and aggregates.
    pub fn upsert_node(&mut self, node: model::Node) -> Result<NodeId, ClusterError> {
        let Some(&id) = self.node_by_name.get(node.meta.name.as_str()) else {
            return self.add_node(node);
        };
        let fresh = NodeInfo::build(id, node, &mut self.interner, self.keys)?;
        self.changes.bump();
        let old_labels = self.node(id).labels.clone();
        self.set_label_columns(id, &old_labels, false);
        self.set_label_columns(id, &fresh.labels, true);
        let old = self.nodes[id.0 as usize]
            .as_mut()
            .expect("indexed node exists");
        for name in old.images.keys() {
            uncount_image(&mut self.image_node_counts, name);
        }
        for name in fresh.images.keys() {
            *self.image_node_counts.entry(name.clone()).or_default() += 1;
        }
        self.avoiding_nodes -= u32::from(!old.prefer_avoid.is_empty());
        self.avoiding_nodes += u32::from(!fresh.prefer_avoid.is_empty());
        self.soft_tainted_nodes -= u32::from(old.soft_tainted());
        self.soft_tainted_nodes += u32::from(fresh.soft_tainted());
        let zone_changed = old.zone_key != fresh.zone_key;
        let fresh_zone = fresh.zone_key;
        old.node = fresh.node;
        old.unschedulable = fresh.unschedulable;
        old.conditions = fresh.conditions;
        old.taints = fresh.taints;
        old.labels = fresh.labels;
        old.allocatable = fresh.allocatable;
        old.allowed_pods = fresh.allowed_pods;
        old.pod_ip_capacity = fresh.pod_ip_capacity;
        old.zone_key = fresh.zone_key;
        old.prefer_avoid = fresh.prefer_avoid;
        old.images = fresh.images;
        old.image_syms = fresh.image_syms;
        old.stamp = fresh.stamp;
        self.fit[id.0 as usize] = NodeFit::of(old);
        if zone_changed {
            self.zone_slots[id.0 as usize] = self.zone_slot(fresh_zone);
            self.node_order = OnceLock::new();
        }
        Ok(id)
    }

    /// The dense index of a zone key, allocating one for a new zone.
    fn zone_slot(&mut self, zone: Option<Sym>) -> u32 {
        let Some(zone) = zone else {
            return NO_ZONE;
        };
        match self.zones.iter().position(|z| *z == zone) {
            Some(i) => i as u32,
            None => {
                self.zones.push(zone);
                self.zones.len() as u32 - 1
            }
        }
    }

    /// Per node slot (`NodeId.0`), the dense index of the node's zone, or [`NO_ZONE`].
    pub fn zone_slots(&self) -> &[u32] {
        &self.zone_slots
    }

    /// How many distinct zones the cluster has seen: the size of a per-zone table.
    pub fn zone_count(&self) -> usize {
        self.zones.len()
    }

    /// Removes a node. Its pods stay in the cluster, unassigned from any node info, as the
    /// API server keeps them until the pod GC deletes them.
    pub fn remove_node(&mut self, name: &str) -> Option<model::Node> {
        let id = self.node_by_name(name)?;
        self.changes.bump();
        // Unassign through the one path that keeps every aggregate and index consistent.
        for pid in self.node(id).pods.clone() {
            self.unassign(pid);
        }
        self.node_by_name.remove(name);
        let info = self.nodes[id.0 as usize].take()?;
        self.zone_slots[id.0 as usize] = NO_ZONE;
        self.fit[id.0 as usize] = NodeFit::default();
        self.set_label_columns(id, &info.labels, false);
        for img in info.images.keys() {
            uncount_image(&mut self.image_node_counts, img);
        }
        self.avoiding_nodes -= u32::from(!info.prefer_avoid.is_empty());
        self.soft_tainted_nodes -= u32::from(info.soft_tainted());
        self.node_order = OnceLock::new();
        Some(*info.node)
    }

    /// The visiting order: nodes interleaved round-robin across zones (in order of the zones'
    /// first appearance), as upstream's node tree lists them.
    fn compute_node_order(&self) -> Vec<NodeId> {
        let mut zones: Vec<(Option<Sym>, Vec<NodeId>)> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let Some(n) = n else { continue };
            let id = NodeId(i as u32);
            match zones.iter_mut().find(|(z, _)| *z == n.zone_key) {
                Some((_, list)) => list.push(id),
                None => zones.push((n.zone_key, vec![id])),
            }
        }
        let total: usize = zones.iter().map(|(_, l)| l.len()).sum();
        let mut order = Vec::with_capacity(total);
        let mut round = 0;
        while order.len() < total {
            for (_, list) in &zones {
                if let Some(id) = list.get(round) {
                    order.push(*id);
                }
            }
            round += 1;
        }
        order
    }

    /// The nodes in visiting order (zones interleaved).
    pub fn node_order(&self) -> &[NodeId] {
        self.node_order.get_or_init(|| self.compute_node_order())
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.node_by_name.len()
    }

    /// Whether `id` names a node still in the cluster.
    pub fn has_node(&self, id: NodeId) -> bool {
        self.nodes.get(id.0 as usize).is_some_and(Option::is_some)
    }

    /// A node by id. Panics if the id is stale, which is a bug in the caller.
    #[inline]
    pub fn node(&self, id: NodeId) -> &NodeInfo {
        self.nodes[id.0 as usize]
            .as_ref()
            .expect("node ids handed out by the cluster stay valid until removal")
    }

    /// A node by name.
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.node_by_name.get(name).copied()
    }

    /// One past the largest node id: the size of a dense per-node table.
    pub fn node_slots(&self) -> usize {
        self.nodes.len()
    }

    /// The sizes of the growing tables.
    pub fn sizes(&self) -> ClusterSizes {
        ClusterSizes {
            interned: self.interner.len(),
            pods: self.pod_by_key.len(),
            pod_slots: self.pods.len(),
            nodes: self.node_by_name.len(),
            node_slots: self.nodes.len(),
            pod_label_pairs: self.label_index.len(),
            node_label_pairs: self.label_nodes.len(),
            label_columns: self.label_columns.len(),
            image_names: self.image_node_counts.len(),
            term_label_pairs: self.anti_affinity_terms.by_label.len()
                + self.scoring_terms.by_label.len(),
        }
    }

    /// Every node slot's [`NodeFit`] row (a default row for a removed node's slot).
    pub fn fit_rows(&self) -> &[NodeFit] {
        &self.fit
    }

    /// How many nodes' preferAvoidPods annotations list any controller.
    pub fn avoiding_nodes(&self) -> u32 {
        self.avoiding_nodes
    }

    /// How many nodes carry a PreferNoSchedule taint.
    pub fn soft_tainted_nodes(&self) -> u32 {
        self.soft_tainted_nodes
    }

    /// How many nodes have an image (normalised name), for image-locality spread.
    pub fn image_node_count(&self, image: &str) -> u32 {
        self.image_node_counts.get(image).copied().unwrap_or(0)
    }

    // ---- pods ----

    /// Compiles a pod against the interner without adding it (a pending pod).
    pub fn compile_pod(&mut self, pod: model::Pod) -> PodInfo {
        PodInfo::compile(pod, &mut self.interner)
    }

    /// Adds a pod. A pod with `node_name` is assigned to that node at once.
    pub fn add_pod(&mut self, pod: model::Pod) -> Result<PodId, ClusterError> {
        let node = self.node_of(&pod)?;
        let info = self.compile_pod(pod);
        self.insert_pod(info, node)
    }

    /// Adds a pod, or replaces the pod of that namespace and name: the old version leaves
    /// every aggregate and index before the new one enters. A pod naming a node that is not
    /// in the cluster changes nothing.
    pub fn upsert_pod(&mut self, pod: model::Pod) -> Result<PodId, ClusterError> {
        let node = self.node_of(&pod)?;
        self.remove_pod(&pod.meta.namespace, &pod.meta.name);
        let info = self.compile_pod(pod);
        self.insert_pod(info, node)
    }

    /// The node a pod's `node_name` names, if any.
    fn node_of(&self, pod: &model::Pod) -> Result<Option<NodeId>, ClusterError> {
        pod.node_name
            .as_ref()
            .map(|n| {
                self.node_by_name(n)
                    .ok_or_else(|| ClusterError::UnknownNode {
                        pod: pod.key(),
                        node: n.clone(),
                    })
            })
            .transpose()
    }

    /// Inserts a compiled pod, assigning it to `node` if given (assume or bind).
    pub fn insert_pod(
        &mut self,
        mut info: PodInfo,
        node: Option<NodeId>,
    ) -> Result<PodId, ClusterError> {
        let key = (
            info.namespace,
            Box::<str>::from(info.pod.meta.name.as_str()),
        );
        if self.pod_by_key.contains_key(&key) {
            return Err(ClusterError::DuplicatePod(info.pod.key()));
        }
        if let Some(n) = node {
            info.pod.node_name = Some(self.node(n).name().to_string());
        }
        info.node = None;
        let id = match self.free_pod_slots.pop() {
            Some(slot) => {
                self.pods[slot as usize] = Some(info);
                PodId(slot)
            }
            None => {
                self.pods.push(Some(info));
                PodId(self.pods.len() as u32 - 1)
            }
        };
        self.pod_by_key.insert(key, id);
        if let Some(n) = node {
            self.assign(id, n);
        }
        Ok(id)
    }

    /// Assigns an unassigned pod to a node, updating every aggregate and index.
    pub fn assign(&mut self, id: PodId, node_id: NodeId) {
        let pod = self.pods[id.0 as usize].as_mut().expect("live pod id");
        debug_assert!(pod.node.is_none());
        pod.node = Some(node_id);
        let node = self.nodes[node_id.0 as usize]
            .as_mut()
            .expect("live node id");
        node.name()
            .clone_into(pod.pod.node_name.get_or_insert_default());
        node.add_pod(pod, Some(id));
        node.stamp = fresh_stamp();
        self.fit[node_id.0 as usize] = NodeFit::of(node);
        self.changes.record(node_id, pod);
        if pod.affinity.has_pod_terms() {
            self.pods_with_affinity.push(id);
            index_terms(
                &mut self.anti_affinity_terms,
                &mut self.scoring_terms,
                id,
                &pod.affinity,
                true,
            );
        }
        if uses_volumes(pod) {
            self.pods_with_volumes.push(id);
            count_claims(&mut self.claim_users, pod, true);
        }
        for (k, v) in pod.labels.iter() {
            self.label_index.entry((k, v)).or_default().push(id);
        }
    }

    /// Undoes [`Cluster::assign`]: the pod stays in the cluster, on no node.
    pub fn unassign(&mut self, id: PodId) {
        let pod = self.pods[id.0 as usize].as_mut().expect("live pod id");
        let Some(node_id) = pod.node.take() else {
            return;
        };
        pod.pod.node_name = None;
        let pod = self.pods[id.0 as usize].as_ref().expect("live pod id");
        if let Some(node) = self.nodes[node_id.0 as usize].as_mut() {
            node.remove_pod(pod, id);
            node.stamp = fresh_stamp();
            self.fit[node_id.0 as usize] = NodeFit::of(node);
            self.changes.record(node_id, pod);
        }
        if pod.affinity.has_pod_terms() {
            remove_item(&mut self.pods_with_affinity, id);
            index_terms(
                &mut self.anti_affinity_terms,
                &mut self.scoring_terms,
                id,
                &pod.affinity,
                false,
            );
        }
        if uses_volumes(pod) {
            remove_item(&mut self.pods_with_volumes, id);
            count_claims(&mut self.claim_users, pod, false);
        }
        for (k, v) in pod.labels.iter() {
            remove_from_index(&mut self.label_index, (k, v), id);
        }
    }

    /// Removes a pod entirely.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) -> Option<model::Pod> {
        let ns = self.interner.get(namespace)?;
        let id = self.pod_by_key.remove(&(ns, Box::from(name)))?;
        self.unassign(id);
        let info = self.pods[id.0 as usize].take()?;
        self.free_pod_slots.push(id.0);
        Some(info.pod)
    }

    /// A pod by id.
    #[inline]
    pub fn pod(&self, id: PodId) -> &PodInfo {
        self.pods[id.0 as usize].as_ref().expect("live pod id")
    }

    /// A pod by namespace and name.
    pub fn pod_by_key(&self, namespace: &str, name: &str) -> Option<PodId> {
        let ns = self.interner.get(namespace)?;
        self.pod_by_key.get(&(ns, Box::from(name))).copied()
    }

    /// Every pod in the cluster (assigned or not), in slot order.
    pub fn pods(&self) -> impl Iterator<Item = (PodId, &PodInfo)> {
        self.pods
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (PodId(i as u32), p)))
    }

    /// Assigned pods with a pod affinity or anti-affinity term.
    pub fn pods_with_affinity(&self) -> &[PodId] {
        &self.pods_with_affinity
    }

    /// Assigned pods with a volume other than `VolumeSource::Other` (disks, claims): the only
    /// pods the volume rules need to look at.
    pub fn pods_with_volumes(&self) -> &[PodId] {
        &self.pods_with_volumes
    }

    /// Whether a pod on a node has a volume naming the claim `namespace/name` (upstream's
    /// `StorageInfos().IsPVCUsedByPods`).
    pub fn claim_in_use(&self, namespace: &str, name: &str) -> bool {
        self.claim_users
            .get(namespace)
            .is_some_and(|claims| claims.contains_key(name))
    }

    /// Required anti-affinity terms of assigned pods, indexed by the labels they select.
    pub fn required_anti_affinity_terms(&self) -> &TermIndex {
        &self.anti_affinity_terms
    }

    /// Required affinity and preferred affinity / anti-affinity terms of assigned pods,
    /// indexed by the labels they select: the terms that score the pods they select.
    pub fn scoring_affinity_terms(&self) -> &TermIndex {
        &self.scoring_terms
    }

    /// The term a [`TermRef`] from one of the term indexes points to.
    pub fn term(&self, r: TermRef) -> Option<&AffinityTerm> {
        self.pods[r.pod.0 as usize]
            .as_ref()?
            .affinity
            .terms(r.kind)
            .get(r.index as usize)
    }

    /// Assigned pods that could match `selector`: a superset, narrowed by the label index
    /// when the selector has an `In` requirement, so callers must still test each pod.
    pub fn candidates_for(&self, selector: &Selector) -> Candidates<'_> {
        match selector.index_keys() {
            Some((key, values)) => Candidates::Indexed(
                values
                    .iter()
                    .filter_map(|v| self.label_index.get(&(key, *v)))
                    .flat_map(|l| l.iter().copied())
                    .collect(),
            ),
            None => Candidates::All(self),
        }
    }

    /// Assigned pods in `namespaces` whose labels match `selector`.
    pub fn matching_pods<'a>(
        &'a self,
        namespaces: &'a NamespaceFilter,
        selector: &'a Selector,
    ) -> impl Iterator<Item = PodId> + 'a {
        // Reading a pod's labels is a second load from memory per candidate, saved when the
        // index answers the selector exactly.
        let exact = selector.indexed_exactly();
        self.candidates_for(selector).into_iter().filter(move |id| {
            let p = self.pod(*id);
            p.node.is_some()
                && namespaces.contains(p.namespace, || self.namespace_labels(p.namespace))
                && (exact || selector.matches(&p.labels))
        })
    }

    // ---- namespaces ----

    /// Adds or replaces a namespace.
    pub fn upsert_namespace(&mut self, ns: &model::Namespace) {
        self.changes.bump();
        let name = self.interner.intern(&ns.meta.name);
        let labels = Labels::intern(
            &mut self.interner,
            ns.meta.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        self.namespaces.insert(
            name,
            NamespaceInfo {
                labels,
                node_selector: ns.node_selector.clone(),
                toleration_whitelist: ns.toleration_whitelist.clone(),
            },
        );
    }

    /// Removes a namespace; false when there was none of that name. Its pods stay, as the
    /// API server's namespace controller deletes them on its own.
    pub fn remove_namespace(&mut self, name: &str) -> bool {
        self.changes.bump();
        self.interner
            .get(name)
            .is_some_and(|sym| self.namespaces.remove(&sym).is_some())
    }

    /// The namespace `ns`; None when there is no Namespace object.
    #[inline]
    pub fn namespace(&self, ns: Sym) -> Option<&NamespaceInfo> {
        self.namespaces.get(&ns)
    }

    /// The labels of namespace `ns`; None when there is no Namespace object.
    #[inline]
    pub fn namespace_labels(&self, ns: Sym) -> Option<&Labels> {
        self.namespaces.get(&ns).map(|n| &n.labels)
    }

    /// Every namespace, by interned name, in no particular order.
    pub fn namespaces(&self) -> impl Iterator<Item = (Sym, &NamespaceInfo)> {
        self.namespaces.iter().map(|(name, info)| (*name, info))
    }

    // ---- selector objects ----

    /// Adds a Service, RC, ReplicaSet or StatefulSet, or replaces the one of the same kind,
    /// namespace and name in place (keeping its position among the others).
    pub fn upsert_selector_object(&mut self, obj: &model::PodSelector) {
        self.changes.bump();
        let namespace = self.interner.intern(&obj.meta.namespace);
        let selector = obj
            .selector
            .as_ref()
            .map(|s| Selector::compile(&mut self.interner, s));
        let compiled = SelectorObject {
            kind: obj.kind,
            namespace,
            name: obj.meta.name.as_str().into(),
            selector,
        };
        self.selector_objects.upsert(compiled);
    }

    /// Removes the selector object of that kind, namespace and name; false when there was
    /// none. The others keep their order.
    pub fn remove_selector_object(
        &mut self,
        kind: SelectorKind,
        namespace: &str,
        name: &str,
    ) -> bool {
        self.changes.bump();
        let Some(ns) = self.interner.get(namespace) else {
            return false;
        };
        self.selector_objects.remove(kind, ns, name)
    }

    /// The Services, RCs, ReplicaSets and StatefulSets, in the order they were first added.
    pub fn selector_objects(&self) -> &[SelectorObject] {
        self.selector_objects.all()
    }

    /// The selector object of that kind, namespace and name.
    pub fn selector_object(
        &self,
        kind: SelectorKind,
        namespace: Sym,
        name: &str,
    ) -> Option<&SelectorObject> {
        self.selector_objects.named(kind, namespace, name)
    }

    /// The selector objects of `kind` (any, if None) in the pod's namespace whose selector
    /// matches the pod, in the order they were first added; found through an index of the
    /// selectors' labels rather than by matching every selector.
    pub fn selecting(&self, pod: &PodInfo, kind: Option<SelectorKind>) -> Vec<&SelectorObject> {
        self.selector_objects
            .selecting(pod.namespace, &pod.labels, kind)
    }

    // ---- storage ----

    /// Adds or replaces a PersistentVolume; returns the one it replaced.
    pub fn upsert_persistent_volume(&mut self, pv: PersistentVolume) -> Option<PersistentVolume> {
        self.changes.bump();
        self.persistent_volumes.insert(pv.meta.name.clone(), pv)
    }

    /// Removes a PersistentVolume.
    pub fn remove_persistent_volume(&mut self, name: &str) -> Option<PersistentVolume> {
        self.changes.bump();
        self.persistent_volumes.remove(name)
    }

    /// A PersistentVolume by name.
    pub fn persistent_volume(&self, name: &str) -> Option<&PersistentVolume> {
        self.persistent_volumes.get(name)
    }

    /// Every PersistentVolume, in no particular order.
    pub fn persistent_volumes(&self) -> impl Iterator<Item = &PersistentVolume> {
        self.persistent_volumes.values()
    }

    /// Adds or replaces a PersistentVolumeClaim; returns the one it replaced.
    pub fn upsert_persistent_volume_claim(
        &mut self,
        claim: PersistentVolumeClaim,
    ) -> Option<PersistentVolumeClaim> {
        self.changes.bump();
        let key = (claim.meta.namespace.clone(), claim.meta.name.clone());
        self.persistent_volume_claims.insert(key, claim)
    }

    /// Removes a PersistentVolumeClaim.
    pub fn remove_persistent_volume_claim(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> Option<PersistentVolumeClaim> {
        self.changes.bump();
        self.persistent_volume_claims
            .remove(&(namespace.to_string(), name.to_string()))
    }

    /// A PersistentVolumeClaim by namespace and name.
    pub fn persistent_volume_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<&PersistentVolumeClaim> {
        self.persistent_volume_claims
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Every PersistentVolumeClaim, in no particular order.
    pub fn persistent_volume_claims(&self) -> impl Iterator<Item = &PersistentVolumeClaim> {
        self.persistent_volume_claims.values()
    }

    /// Adds or replaces a StorageClass; returns the one it replaced.
    pub fn upsert_storage_class(&mut self, class: StorageClass) -> Option<StorageClass> {
        self.changes.bump();
        self.storage_classes.insert(class.meta.name.clone(), class)
    }

    /// Removes a StorageClass.
    pub fn remove_storage_class(&mut self, name: &str) -> Option<StorageClass> {
        self.changes.bump();
        self.storage_classes.remove(name)
    }

    /// A StorageClass by name.
    pub fn storage_class(&self, name: &str) -> Option<&StorageClass> {
        self.storage_classes.get(name)
    }

    /// Adds or replaces a CSINode (named after its node); returns the one it replaced.
    pub fn upsert_csi_node(&mut self, csi: CsiNode) -> Option<CsiNode> {
        self.changes.bump();
        self.csi_nodes.insert(csi.meta.name.clone(), csi)
    }

    /// Removes a CSINode.
    pub fn remove_csi_node(&mut self, name: &str) -> Option<CsiNode> {
        self.changes.bump();
        self.csi_nodes.remove(name)
    }

    /// The CSINode of a node, by node name.
    pub fn csi_node(&self, name: &str) -> Option<&CsiNode> {
        self.csi_nodes.get(name)
    }

    // ---- the interner ----

    /// The string interner shared by every label in the cluster.
    #[inline]
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    /// Interns `s` in the cluster's interner, for a holder of symbols outside the cluster
    /// (which a compaction must then be given).
    pub fn intern(&mut self, s: &str) -> Sym {
        self.interner.intern(s)
    }

    /// The well-known label keys.
    #[inline]
    pub fn keys(&self) -> WellKnown {
        self.keys
    }

    /// Compiles a label selector against the cluster's interner.
    pub fn compile_selector(&mut self, sel: &LabelSelector) -> Selector {
        Selector::compile(&mut self.interner, sel)
    }
}

/// Candidate pods for a selector (see [`Cluster::candidates_for`]).
pub enum Candidates<'a> {
    /// From the label index.
    Indexed(Vec<PodId>),
    /// Every pod.
    All(&'a Cluster),
}

impl<'a> IntoIterator for Candidates<'a> {
    type Item = PodId;
    type IntoIter = Box<dyn Iterator<Item = PodId> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        match self {
            Candidates::Indexed(v) => Box::new(v.into_iter()),
            Candidates::All(c) => Box::new(c.pods().map(|(id, _)| id)),
        }
    }
}

#[cfg(test)]
mod bookkeeping_tests;
#[cfg(test)]
mod canonical;
#[cfg(test)]
mod compaction_tests;
