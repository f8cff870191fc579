//! CheckVolumeBinding (v1.22 VolumeBinding): the pod's claims can be bound on the node.
//!
//! Per pod (upstream's PreFilter, `podHasPVCs` then `GetPodVolumes`), claims in volume order:
//! - a missing claim rejects every node with `persistentvolumeclaim "<name>" not found`, a
//!   claim being deleted with `persistentvolumeclaim "<name>" is being deleted`;
//! - a claim is bound when it names its volume *and* carries `pv.kubernetes.io/bind-completed`;
//!   an unbound claim whose class exists and is WaitForFirstConsumer is left to this rule;
//!   any other unbound claim (no class, missing class, Immediate class, or pre-bound: a volume
//!   name without the annotation) rejects every node with "pod has unbound immediate
//!   PersistentVolumeClaims".
//!
//! Per node (upstream's `FindPodVolumes`), reasons in this order:
//! - "node(s) had volume node affinity conflict": the volume of a bound claim has node
//!   affinity the node's labels do not satisfy (bound claims are checked in order, stopping at
//!   the first failure or missing volume);
//! - "node(s) didn't find available persistent volumes to bind": for the WaitForFirstConsumer
//!   claims, either one was already given to another node (`volume.kubernetes.io/selected-node`)
//!   or, smallest request first, some claim finds no volume and not every claim left over can
//!   be provisioned here (the class has a provisioner other than `kubernetes.io/no-provisioner`
//!   and its allowed topologies match the node);
//! - "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)".
//!
//! A volume matches a claim (upstream's `FindMatchingVolume`) when it has the claim's class,
//! is not taken by another claim of the pod, has at least the requested capacity, the claim's
//! volume mode (Filesystem when unset on either side) and the claim's volume attributes class
//! ("" when unset on either side, so a claim without one takes only volumes without one), and
//! is not being deleted, and either points at the claim already (then it is the only
//! candidate, for better or worse) or is Available, matches the claim's selector, offers every
//! requested access mode and has node affinity the node satisfies. The smallest such volume
//! wins; ties go to the first by name (upstream's order is that of its cache). Node affinity
//! is matched against node labels only, as upstream does. Not modelled: CSI storage capacity
//! (no CSIStorageCapacity objects), and the translation of migrated in-tree volumes' topology.
//!
//! Volume modes and attributes classes follow v1.36 (component-helpers
//! `storage/volume/pv_helpers.go`, `FindMatchingVolume` with the VolumeAttributesClass gate on,
//! its default since v1.34, and `CheckVolumeModeMismatches`); v1.22 compared volume modes the
//! same way and knew no attributes classes, so claims and volumes without them match as
//! before.
//!
//! Reserve records the binding upstream assumes once a node is chosen (its
//! `AssumePodVolumes`); Unreserve restores the volumes and claims as they were.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{
    ApiWrite, CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, ReserveState,
};
use crate::labels::{Interner, LabelSelector, Operator, Sym};
use crate::model::{PersistentVolume, PersistentVolumeClaim};
use crate::podinfo::PodInfo;
use crate::rules::volume_util::{
    BIND_COMPLETED_ANNOTATION, NodeMatcher, SELECTED_NODE_ANNOTATION, can_provision, claim_class,
    claim_names, claim_not_found, find_claim, fully_bound, volume_class, waits_for_first_consumer,
};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "VolumeBinding";

/// No volume can be bound or provisioned for some claim on the node.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// A bound volume's node affinity excludes the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// A bound claim names a volume that does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// A claim that should have been bound by the PV controller is not.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The rule.
pub struct CheckVolumeBinding;

impl FilterRule for CheckVolumeBinding {
    /// Upstream's VolumeBinding fails as UnschedulableAndUnresolvable, in PreFilter and Filter.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        match Plan::new(ctx.cluster, ctx.pod) {
            Err(reason) => FilterPrep::RejectAll(vec![reason]),
            Ok(None) => FilterPrep::Skip,
            Ok(Some(plan)) if plan.is_trivial() => FilterPrep::Skip,
            Ok(Some(plan)) => FilterPrep::Check(Box::new(plan)),
        }
    }

    fn reserve(
        &self,
        cluster: &mut Cluster,
        pod: &PodInfo,
        node: NodeId,
        writes: &mut Vec<ApiWrite>,
    ) -> Option<ReserveState> {
        let mut previous = Previous::default();
        assume_pod_volumes(cluster, pod, node, &mut previous, writes);
        let changed = !previous.volumes.is_empty() || !previous.claims.is_empty();
        changed.then(|| Arc::new(previous) as ReserveState)
    }

    fn unreserve(&self, cluster: &mut Cluster, state: &ReserveState) {
        let Some(previous) = state.downcast_ref::<Previous>() else {
            return;
        };
        for pv in &previous.volumes {
            cluster.upsert_persistent_volume(pv.clone());
        }
        for claim in &previous.claims {
            cluster.upsert_persistent_volume_claim(claim.clone());
        }
    }
}

/// The pod's claims, analysed once: everything that does not depend on the node.
struct Plan<'a> {
    /// Node affinity of the volumes of bound claims, in volume order, up to (not including)
    /// the first claim whose volume is missing. None: no affinity.
    bound: Vec<Option<NodeMatcher>>,
    /// Whether a bound claim's volume is missing.
    bound_volume_missing: bool,
    /// Where the WaitForFirstConsumer claims that already name a node allow the pod.
    selected: Selected,
    /// Those claims, to provision on that node.
    selected_claims: Vec<Unbound<'a>>,
    /// The other WaitForFirstConsumer claims, smallest request first.
    to_match: Vec<Unbound<'a>>,
    /// Names of the candidate volumes, indexed by the ids in [`Candidate`].
    volume_names: Vec<&'a str>,
    interner: &'a Interner,
    hostname: Sym,
}

/// Where claims with a selected node allow the pod.
enum Selected {
    /// No claim names a node.
    Anywhere,
    /// Only on this node.
    Node(NodeId),
    /// Nowhere: the named node is gone, or claims name different nodes.
    Nowhere,
}

/// A WaitForFirstConsumer claim to bind or provision.
struct Unbound<'a> {
    claim: &'a PersistentVolumeClaim,
    /// Volumes whose claim reference already names this claim, by name.
    prebound: Vec<Candidate>,
    /// Available volumes matching the claim on every count but node affinity.
    available: Candidates,
    /// Whether (and where) the claim's class can provision a volume.
    provision: Provision,
}

/// A volume that may be bound, pending its node affinity.
struct Candidate {
    volume: u32,
    affinity: Option<NodeMatcher>,
}

/// Available volumes, smallest first; those pinned to hosts by hostname are also indexed by
/// hostname (local volumes), so a node finds its own without testing every volume.
#[derive(Default)]
struct Candidates {
    list: Vec<Candidate>,
    /// Positions in `list` of the volumes not pinned by hostname, in order.
    general: Vec<u32>,
    /// Hostname label value -> positions in `list` of the volumes pinned to it, in order.
    by_host: HashMap<Sym, Vec<u32>>,
}

/// Whether a claim's class can provision a volume, and for which nodes.
enum Provision {
    /// The class cannot provision.
    Never,
    /// On nodes matching the class's allowed topologies (None: any node).
    Within(Option<NodeMatcher>),
}

/// One node's outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    node_conflict: bool,
    bind_conflict: bool,
    volume_missing: bool,
}

impl Verdict {
    fn fits(self) -> bool {
        !(self.node_conflict || self.bind_conflict || self.volume_missing)
    }
}

impl<'a> Plan<'a> {
    /// Upstream's PreFilter and the node-independent part of `FindPodVolumes`. `Ok(None)`: the
    /// pod uses no claim.
    fn new(cluster: &'a Cluster, pod: &'a PodInfo) -> Result<Option<Self>, Reason> {
        let owned = |s: String| Reason::Owned(Arc::from(s));
        let namespace = pod.pod.meta.namespace.as_str();
        let mut claims = Vec::new();
        for name in claim_names(pod) {
            let claim =
                find_claim(cluster, namespace, name).ok_or_else(|| owned(claim_not_found(name)))?;
            if claim.meta.deleting {
                return Err(owned(format!(
                    "persistentvolumeclaim \"{name}\" is being deleted"
                )));
            }
            claims.push(claim);
        }
        if claims.is_empty() {
            return Ok(None);
        }
        let mut bound = Vec::new();
        let mut delayed = Vec::new();
        for claim in claims {
            if fully_bound(claim) {
                bound.push(claim);
            } else if claim.volume_name.is_empty() && waits_for_first_consumer(cluster, claim) {
                delayed.push(claim);
            } else {
                return Err(REASON_UNBOUND_IMMEDIATE.into());
            }
        }
        let interner = cluster.interner();
        let mut plan = Plan {
            bound: Vec::new(),
            bound_volume_missing: false,
            selected: Selected::Anywhere,
            selected_claims: Vec::new(),
            to_match: Vec::new(),
            volume_names: Vec::new(),
            interner,
            hostname: cluster.keys().hostname,
        };
        for claim in bound {
            let Some(pv) = cluster.persistent_volume(&claim.volume_name) else {
                plan.bound_volume_missing = true;
                break;
            };
            plan.bound.push(
                pv.node_affinity
                    .as_ref()
                    .map(|t| NodeMatcher::compile(interner, t)),
            );
        }
        let (selected, mut to_match): (Vec<_>, Vec<_>) = delayed
            .into_iter()
            .partition(|c| c.meta.annotations.contains_key(SELECTED_NODE_ANNOTATION));
        let mut selected_names: Vec<&str> = selected
            .iter()
            .filter_map(|c| c.meta.annotations.get(SELECTED_NODE_ANNOTATION))
            .map(String::as_str)
            .collect();
        selected_names.sort_unstable();
        selected_names.dedup();
        plan.selected = match selected_names.as_slice() {
            [] => Selected::Anywhere,
            [name] => cluster
                .node_by_name(name)
                .map_or(Selected::Nowhere, Selected::Node),
            _ => Selected::Nowhere,
        };
        plan.selected_claims = selected
            .into_iter()
            .map(|claim| Unbound {
                claim,
                prebound: Vec::new(),
                available: Candidates::default(),
                provision: provision(cluster, claim),
            })
            .collect();
        if !to_match.is_empty() {
            // Upstream sorts by request; a stable sort keeps volume order among equals.
            to_match.sort_by_key(|c| c.request);
            let mut volumes: Vec<_> = cluster.persistent_volumes().collect();
            volumes.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
            plan.volume_names = volumes.iter().map(|v| v.meta.name.as_str()).collect();
            plan.to_match = to_match
                .into_iter()
                .map(|claim| {
                    let (prebound, available) = candidates(cluster, claim, &volumes);
                    Unbound {
                        claim,
                        prebound,
                        available,
                        provision: provision(cluster, claim),
                    }
                })
                .collect();
        }
        Ok(Some(plan))
    }

    /// Whether every node passes: all claims bound, to volumes without node affinity.
    fn is_trivial(&self) -> bool {
        self.bound.iter().all(Option::is_none)
            && !self.bound_volume_missing
            && self.selected_claims.is_empty()
            && self.to_match.is_empty()
    }

    /// The node's verdict; `picks[i]` receives the volume chosen for `to_match[i]`.
    fn evaluate(&self, node: &NodeInfo, picks: &mut [Option<u32>]) -> Verdict {
        let labels = &node.labels;
        let mut v = Verdict::default();
        v.node_conflict = self
            .bound
            .iter()
            .flatten()
            .any(|m| !m.matches(labels, self.interner));
        v.volume_missing = !v.node_conflict && self.bound_volume_missing;
        if self.selected_claims.is_empty() && self.to_match.is_empty() {
            return v;
        }
        match self.selected {
            Selected::Anywhere => {}
            Selected::Node(id) if id == node.id => {}
            Selected::Node(_) | Selected::Nowhere => {
                v.bind_conflict = true;
                return v;
            }
        }
        let mut all_matched = true;
        let mut provisionable = true;
        for (i, unbound) in self.to_match.iter().enumerate() {
            picks[i] = self.find_volume(unbound, node, &picks[..i]);
            if picks[i].is_none() {
                all_matched = false;
                provisionable &= unbound.can_provision_on(node, self.interner);
            }
        }
        for unbound in &self.selected_claims {
            provisionable &= unbound.can_provision_on(node, self.interner);
        }
        // Upstream lets provisioning overrule a failed match: what counts is whether every
        // claim left over can be provisioned here.
        let must_provision = !all_matched || !self.selected_claims.is_empty();
        v.bind_conflict = must_provision && !provisionable;
        v
    }

    /// Upstream's `FindMatchingVolume` for one claim on one node, skipping volumes already
    /// chosen for the pod's other claims.
    fn find_volume(
        &self,
        unbound: &Unbound<'_>,
        node: &NodeInfo,
        chosen: &[Option<u32>],
    ) -> Option<u32> {
        let free = |c: &Candidate| !chosen.contains(&Some(c.volume));
        let fits = |c: &Candidate| {
            c.affinity
                .as_ref()
                .is_none_or(|m| m.matches(&node.labels, self.interner))
        };
        // A volume already pointing at the claim decides alone.
        if let Some(pre) = unbound.prebound.iter().find(|c| free(c)) {
            return fits(pre).then_some(pre.volume);
        }
        let list = &unbound.available.list;
        let general = unbound
            .available
            .general
            .iter()
            .copied()
            .find(|&i| free(&list[i as usize]) && fits(&list[i as usize]));
        let pinned = node
            .labels
            .get(self.hostname)
            .and_then(|h| unbound.available.by_host.get(&h))
            .and_then(|l| l.iter().copied().find(|&i| free(&list[i as usize])));
        let best = match (general, pinned) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(list[best as usize].volume)
    }
}

impl Unbound<'_> {
    fn can_provision_on(&self, node: &NodeInfo, interner: &Interner) -> bool {
        match &self.provision {
            Provision::Never => false,
            Provision::Within(topology) => topology
                .as_ref()
                .is_none_or(|m| m.matches(&node.labels, interner)),
        }
    }
}

/// Whether (and where) a WaitForFirstConsumer claim's class can provision.
fn provision(cluster: &Cluster, claim: &PersistentVolumeClaim) -> Provision {
    match cluster.storage_class(claim_class(claim)) {
        Some(class) if can_provision(class) => Provision::Within(
            (!class.allowed_topologies.is_empty())
                .then(|| NodeMatcher::compile(cluster.interner(), &class.allowed_topologies)),
        ),
        _ => Provision::Never,
    }
}

/// The volumes pre-bound to the claim, and the available ones that match it apart from node
/// affinity (smallest first). `volumes` is sorted by name; a candidate's id is its position.
fn candidates(
    cluster: &Cluster,
    claim: &PersistentVolumeClaim,
    volumes: &[&crate::model::PersistentVolume],
) -> (Vec<Candidate>, Candidates) {
    let class = claim_class(claim);
    let (namespace, name) = (&claim.meta.namespace, &claim.meta.name);
    let mut prebound = Vec::new();
    let mut available: Vec<(i64, Candidate)> = Vec::new();
    for (i, pv) in volumes.iter().enumerate() {
        if volume_class(pv) != class {
            continue;
        }
        let points_here = match &pv.claim_ref {
            Some((ns, n)) if ns == namespace && n == name => true,
            Some(_) => continue,
            None => false,
        };
        // Upstream checks these before asking whether the volume points at the claim, so a
        // pre-bound volume of another mode or attributes class is no candidate either.
        if pv.capacity < claim.request
            || pv.volume_mode != claim.volume_mode
            || pv.volume_attributes_class_name != claim.volume_attributes_class_name
            || pv.meta.deleting
        {
            continue;
        }
        if !points_here
            && (pv.phase != "Available"
                || !claim
                    .selector
                    .as_ref()
                    .is_none_or(|s| selects(s, &pv.meta.labels))
                || !claim
                    .access_modes
                    .iter()
                    .all(|m| pv.access_modes.contains(m)))
        {
            continue;
        }
        let candidate = Candidate {
            volume: i as u32,
            affinity: pv
                .node_affinity
                .as_ref()
                .map(|t| NodeMatcher::compile(cluster.interner(), t)),
        };
        if points_here {
            prebound.push(candidate);
        } else {
            available.push((pv.capacity, candidate));
        }
    }
    available.sort_by_key(|(capacity, _)| *capacity);
    let mut set = Candidates::default();
    for (pos, (_, c)) in available.into_iter().enumerate() {
        let pos = pos as u32;
        match c
            .affinity
            .as_ref()
            .and_then(|m| m.single_in(cluster.keys().hostname))
        {
            Some(hosts) => {
                for h in hosts {
                    set.by_host.entry(*h).or_default().push(pos);
                }
            }
            None => set.general.push(pos),
        }
        set.list.push(c);
    }
    (prebound, set)
}

/// Whether a claim's label selector selects a volume with these labels.
fn selects(selector: &LabelSelector, labels: &std::collections::BTreeMap<String, String>) -> bool {
    selector.requirements.iter().all(|r| {
        let value = labels.get(&r.key);
        match r.operator {
            Operator::In => value.is_some_and(|v| r.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            // Not valid in a label selector: upstream rejects the selector.
            Operator::Gt | Operator::Lt => false,
        }
    })
}

/// How many claims get their choice buffer on the stack.
const INLINE_CLAIMS: usize = 8;

impl NodeCheck for Plan<'_> {
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let n = self.to_match.len();
        let mut inline = [None; INLINE_CLAIMS];
        let mut spilled = Vec::new();
        let picks = if n <= INLINE_CLAIMS {
            &mut inline[..n]
        } else {
            spilled.resize(n, None);
            &mut spilled[..]
        };
        let v = self.evaluate(node, picks);
        if v.node_conflict {
            reasons.push(REASON_NODE_CONFLICT.into());
        }
        if v.bind_conflict {
            reasons.push(REASON_BIND_CONFLICT.into());
        }
        if v.volume_missing {
            reasons.push(REASON_PV_NOT_EXIST.into());
        }
        v.fits()
    }
}

/// The volumes and claims as they were before Reserve changed them, restored by Unreserve.
#[derive(Debug, Default)]
struct Previous {
    volumes: Vec<PersistentVolume>,
    claims: Vec<PersistentVolumeClaim>,
}

/// Records in the cluster what upstream assumes when the pod is placed on `node`: each
/// WaitForFirstConsumer claim matched to a volume is bound to it (the claim names the volume
/// with binding completed, the volume points at the claim and is Bound), and each claim left
/// to provisioning gets `volume.kubernetes.io/selected-node`, which keeps later pods sharing
/// the claim on that node. The objects as they were go to `previous` for Unreserve, and the
/// same changes, as the API must see them before the pod's binding, to `writes`. Does nothing
/// if the node does not pass this rule for the pod.
fn assume_pod_volumes(
    cluster: &mut Cluster,
    pod: &PodInfo,
    node: NodeId,
    previous: &mut Previous,
    writes: &mut Vec<ApiWrite>,
) {
    if !cluster.has_node(node) {
        return;
    }
    let mut to_bind: Vec<((String, String), String)> = Vec::new();
    let mut to_provision: Vec<(String, String)> = Vec::new();
    {
        let Ok(Some(plan)) = Plan::new(cluster, pod) else {
            return;
        };
        let mut picks = vec![None; plan.to_match.len()];
        if !plan.evaluate(cluster.node(node), &mut picks).fits() {
            return;
        }
        let key = |c: &PersistentVolumeClaim| (c.meta.namespace.clone(), c.meta.name.clone());
        for (unbound, pick) in plan.to_match.iter().zip(&picks) {
            match pick {
                Some(v) => to_bind.push((
                    key(unbound.claim),
                    plan.volume_names[*v as usize].to_string(),
                )),
                None => to_provision.push(key(unbound.claim)),
            }
        }
        to_provision.extend(plan.selected_claims.iter().map(|u| key(u.claim)));
    }
    let node_name = cluster.node(node).name().to_string();
    let mut done: HashSet<(String, String)> = HashSet::new();
    for (claim_key, volume) in to_bind {
        if !done.insert(claim_key.clone()) {
            continue;
        }
        if let Some(mut pv) = cluster.persistent_volume(&volume).cloned() {
            pv.claim_ref = Some(claim_key.clone());
            pv.phase = "Bound".into();
            previous
                .volumes
                .extend(cluster.upsert_persistent_volume(pv));
        }
        if let Some(mut claim) = cluster
            .persistent_volume_claim(&claim_key.0, &claim_key.1)
            .cloned()
        {
            claim.volume_name.clone_from(&volume);
            claim
                .meta
                .annotations
                .insert(BIND_COMPLETED_ANNOTATION.into(), "yes".into());
            previous
                .claims
                .extend(cluster.upsert_persistent_volume_claim(claim));
        }
        let (namespace, claim) = claim_key;
        writes.push(ApiWrite::ClaimVolume {
            volume,
            namespace,
            claim,
        });
    }
    for claim_key in to_provision {
        if !done.insert(claim_key.clone()) {
            continue;
        }
        if let Some(mut claim) = cluster
            .persistent_volume_claim(&claim_key.0, &claim_key.1)
            .cloned()
        {
            claim
                .meta
                .annotations
                .insert(SELECTED_NODE_ANNOTATION.into(), node_name.clone());
            previous
                .claims
                .extend(cluster.upsert_persistent_volume_claim(claim));
        }
        let (namespace, claim) = claim_key;
        writes.push(ApiWrite::AnnotateClaim {
            namespace,
            claim,
            key: SELECTED_NODE_ANNOTATION.into(),
            value: node_name.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::In;
    use crate::model::{StorageClass, VolumeBindingMode::*};
    use crate::rules::volume_util::{BETA_STORAGE_CLASS_ANNOTATION, NO_PROVISIONER};
    use crate::testkit::*;

    const G: i64 = 1_000_000_000;

    /// A volume pinned to `node` by the `nodeKey` label, as upstream's `makeTestPV` makes it.
    fn pv_on(name: &str, node: &str, capacity: i64, class: &str) -> PvBuilder {
        pv(name, capacity)
            .class(class)
            .node_affinity(vec![node_term(vec![req("nodeKey", In, &[node])])])
    }

    /// Upstream's binder_test.go fixtures (claims, volumes and classes).
    fn fixtures() -> (
        Vec<PersistentVolume>,
        Vec<crate::model::PersistentVolumeClaim>,
        Vec<StorageClass>,
    ) {
        let volumes = vec![
            pv_on("pv-node1a", "node1", 5 * G, "waitClass").build(),
            pv_on("pv-node1b", "node1", 10 * G, "waitClass").build(),
            pv_on("pv-node2", "node2", G, "waitClass").build(),
            pv_on("pv-bound", "node1", G, "waitClass")
                .claimed_by("bound-pvc")
                .build(),
            pv_on("pv-bound-immediate", "node1", G, "immediateClass")
                .claimed_by("immediate-bound-pvc")
                .build(),
            pv_on("pv-bound-immediate-node2", "node2", G, "immediateClass")
                .claimed_by("immediate-bound-pvc-node2")
                .build(),
        ];
        let claims = vec![
            pvc("unbound-pvc", G).class("waitClass").build(),
            pvc("unbound-pvc2", 5 * G).class("waitClass").build(),
            pvc("prebound-pvc", G)
                .class("waitClass")
                .prebound("pv-node1a")
                .build(),
            pvc("bound-pvc", G)
                .class("waitClass")
                .bound("pv-bound")
                .build(),
            pvc("bound-pvc-pv-missing", G)
                .class("waitClass")
                .bound("pv-missing")
                .build(),
            pvc("immediate-unbound-pvc", G)
                .class("immediateClass")
                .build(),
            pvc("immediate-bound-pvc", G)
                .class("immediateClass")
                .bound("pv-bound-immediate")
                .build(),
            pvc("immediate-bound-pvc-node2", G)
                .class("immediateClass")
                .bound("pv-bound-immediate-node2")
                .build(),
            pvc("provisioned-pvc", GI)
                .class("waitClassWithProvisioner")
                .build(),
            pvc("no-provisioner-pvc", GI).class("waitClass").build(),
            pvc("topo-mismatch-pvc", GI)
                .class("topoMismatchClass")
                .build(),
            pvc("selected-node-pvc", GI)
                .class("waitClassWithProvisioner")
                .annotation(SELECTED_NODE_ANNOTATION, "node1")
                .build(),
            pvc("no-class-pvc", G).build(),
            pvc("missing-class-pvc", G).class("nonexistent").build(),
            pvc("deleting-pvc", G).class("waitClass").deleting().build(),
        ];
        let topology = |values: &[&str]| vec![node_term(vec![req("nodeKey", In, values)])];
        let mut with_provisioner = storage_class(
            "waitClassWithProvisioner",
            "test-provisioner",
            WaitForFirstConsumer,
        );
        with_provisioner.allowed_topologies = topology(&["node1", "reference-value"]);
        let mut topo_mismatch = storage_class(
            "topoMismatchClass",
            "test-provisioner",
            WaitForFirstConsumer,
        );
        topo_mismatch.allowed_topologies = topology(&["reference-value"]);
        let classes = vec![
            with_provisioner,
            storage_class("immediateClass", "", Immediate),
            storage_class("waitClass", NO_PROVISIONER, WaitForFirstConsumer),
            topo_mismatch,
        ];
        (volumes, claims, classes)
    }

    /// A cluster with node1 and node2 and only the named volumes (all claims and classes).
    fn setup(volumes: &[&str]) -> Cluster {
        let mut cl = cluster(
            vec![
                node("node1").label("nodeKey", "node1").build(),
                node("node2").label("nodeKey", "node2").build(),
            ],
            vec![],
        );
        let (all_volumes, claims, classes) = fixtures();
        let chosen = all_volumes
            .into_iter()
            .filter(|v| volumes.contains(&v.meta.name.as_str()))
            .collect();
        add_storage(&mut cl, chosen, claims, classes);
        cl
    }

    fn pod_with(claims: &[&str]) -> crate::model::Pod {
        claims.iter().fold(pod("p"), |p, c| p.claim(c)).build()
    }

    /// Upstream's TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning
    /// and the VolumeBinding plugin tests, judged on node1 (where the volumes are). Failing
    /// PreFilter cases ("shouldFail") reject every node with the PreFilter reason.
    #[test]
    fn table() {
        let unbound_immediate = vec![REASON_UNBOUND_IMMEDIATE];
        type Case = (
            &'static str,
            Vec<&'static str>,
            Vec<&'static str>,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            ("no-pvcs", vec![], vec![], vec![]),
            (
                "pvc-not-found",
                vec!["unknown-pvc"],
                vec![],
                vec!["persistentvolumeclaim \"unknown-pvc\" not found"],
            ),
            (
                "part of pvcs not found",
                vec!["bound-pvc", "pvc-b"],
                vec!["pv-bound"],
                vec!["persistentvolumeclaim \"pvc-b\" not found"],
            ),
            (
                "pvc being deleted",
                vec!["deleting-pvc"],
                vec![],
                vec!["persistentvolumeclaim \"deleting-pvc\" is being deleted"],
            ),
            ("bound-pvc", vec!["bound-pvc"], vec!["pv-bound"], vec![]),
            (
                "bound-pvc,pv-not-exists",
                vec!["bound-pvc-pv-missing"],
                vec![],
                vec![REASON_PV_NOT_EXIST],
            ),
            (
                "prebound-pvc",
                vec!["prebound-pvc"],
                vec!["pv-node1a"],
                unbound_immediate.clone(),
            ),
            (
                "unbound-pvc,pv-same-node",
                vec!["unbound-pvc"],
                vec!["pv-node2", "pv-node1a", "pv-node1b"],
                vec![],
            ),
            (
                "unbound-pvc,pv-different-node",
                vec!["unbound-pvc"],
                vec!["pv-node2"],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "two-unbound-pvcs",
                vec!["unbound-pvc", "unbound-pvc2"],
                vec!["pv-node1a", "pv-node1b"],
                vec![],
            ),
            (
                "two-unbound-pvcs,order-by-size",
                vec!["unbound-pvc2", "unbound-pvc"],
                vec!["pv-node1a", "pv-node1b"],
                vec![],
            ),
            (
                "two-unbound-pvcs,partial-match",
                vec!["unbound-pvc", "unbound-pvc2"],
                vec!["pv-node1a"],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "one-bound,one-unbound",
                vec!["unbound-pvc", "bound-pvc"],
                vec!["pv-bound", "pv-node1a"],
                vec![],
            ),
            (
                "one-bound,one-unbound,no-match",
                vec!["unbound-pvc", "bound-pvc"],
                vec!["pv-bound", "pv-node2"],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "one-prebound,one-unbound",
                vec!["unbound-pvc", "prebound-pvc"],
                vec!["pv-node1a", "pv-node1b"],
                unbound_immediate.clone(),
            ),
            (
                "immediate-bound-pvc",
                vec!["immediate-bound-pvc"],
                vec!["pv-bound-immediate"],
                vec![],
            ),
            (
                "immediate-bound-pvc-wrong-node",
                vec!["immediate-bound-pvc-node2"],
                vec!["pv-bound-immediate-node2"],
                vec![REASON_NODE_CONFLICT],
            ),
            (
                "immediate-unbound-pvc",
                vec!["immediate-unbound-pvc"],
                vec![],
                unbound_immediate.clone(),
            ),
            (
                "immediate-unbound-pvc,delayed-mode-bound",
                vec!["immediate-unbound-pvc", "bound-pvc"],
                vec!["pv-bound"],
                unbound_immediate.clone(),
            ),
            (
                "immediate-unbound-pvc,delayed-mode-unbound",
                vec!["immediate-unbound-pvc", "unbound-pvc"],
                vec![],
                unbound_immediate.clone(),
            ),
            (
                "unbound claim without class is immediate",
                vec!["no-class-pvc"],
                vec![],
                unbound_immediate.clone(),
            ),
            (
                "unbound claim of a missing class is immediate",
                vec!["missing-class-pvc"],
                vec![],
                unbound_immediate.clone(),
            ),
            ("one-provisioned", vec!["provisioned-pvc"], vec![], vec![]),
            (
                "two-unbound-pvcs,one-matched,one-provisioned",
                vec!["unbound-pvc", "provisioned-pvc"],
                vec!["pv-node1a"],
                vec![],
            ),
            (
                "one-bound,one-provisioned",
                vec!["bound-pvc", "provisioned-pvc"],
                vec!["pv-bound"],
                vec![],
            ),
            (
                "one-binding,one-selected-node",
                vec!["bound-pvc", "selected-node-pvc"],
                vec!["pv-bound"],
                vec![],
            ),
            (
                "one-immediate-bound,one-provisioned",
                vec!["immediate-bound-pvc", "provisioned-pvc"],
                vec!["pv-bound-immediate"],
                vec![],
            ),
            (
                "invalid-provisioner",
                vec!["no-provisioner-pvc"],
                vec![],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "volume-topology-unsatisfied",
                vec!["topo-mismatch-pvc"],
                vec![],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "bound and unbound unsatisfied",
                vec!["immediate-bound-pvc-node2", "no-provisioner-pvc"],
                vec!["pv-bound-immediate-node2"],
                vec![REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
            ),
            (
                "a node conflict hides a later missing volume",
                vec!["immediate-bound-pvc-node2", "bound-pvc-pv-missing"],
                vec!["pv-bound-immediate-node2"],
                vec![REASON_NODE_CONFLICT],
            ),
            (
                "a missing volume with an unbound claim",
                vec!["bound-pvc-pv-missing", "no-provisioner-pvc"],
                vec![],
                vec![REASON_BIND_CONFLICT, REASON_PV_NOT_EXIST],
            ),
        ];
        for (name, claims, volumes, want) in cases {
            let mut cl = setup(&volumes);
            let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&claims));
            assert_eq!(got[0].0, "node1");
            assert_eq!(got[0].1, want, "{name}");
        }
    }

    /// The other node of the same table: volumes pinned to node1 and the selected node do
    /// not fit node2; the provisioner's topology does not include it.
    #[test]
    fn the_other_node() {
        type Case = (
            &'static str,
            Vec<&'static str>,
            Vec<&'static str>,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "bound volume on node1",
                vec!["bound-pvc"],
                vec!["pv-bound"],
                vec![REASON_NODE_CONFLICT],
            ),
            (
                "unbound, volume on node2",
                vec!["unbound-pvc"],
                vec!["pv-node2", "pv-node1a"],
                vec![],
            ),
            (
                "selected node is node1",
                vec!["selected-node-pvc"],
                vec![],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "provisioning topology excludes node2",
                vec!["provisioned-pvc"],
                vec![],
                vec![REASON_BIND_CONFLICT],
            ),
            (
                "both",
                vec!["bound-pvc", "selected-node-pvc"],
                vec!["pv-bound"],
                vec![REASON_NODE_CONFLICT, REASON_BIND_CONFLICT],
            ),
        ];
        for (name, claims, volumes, want) in cases {
            let mut cl = setup(&volumes);
            let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&claims));
            assert_eq!(got[1].0, "node2");
            assert_eq!(got[1].1, want, "{name}");
        }
    }

    /// Which volume a claim gets, through [`bind_pod_volumes`].
    fn chosen(cl: &mut Cluster, claims: &[&str], node: &str) -> Chosen {
        let info = cl.compile_pod(pod_with(claims));
        let id = cl.node_by_name(node).expect("test node");
        let mut writes = Vec::new();
        CheckVolumeBinding.reserve(cl, &info, id, &mut writes);
        let mut got = Chosen::default();
        for w in writes {
            match w {
                ApiWrite::ClaimVolume {
                    volume,
                    namespace,
                    claim,
                } => got.bound.push((format!("{namespace}/{claim}"), volume)),
                ApiWrite::AnnotateClaim {
                    namespace,
                    claim,
                    key,
                    value,
                } => {
                    assert_eq!(
                        (key.as_str(), value.as_str()),
                        (SELECTED_NODE_ANNOTATION, node)
                    );
                    got.provisioning.push(format!("{namespace}/{claim}"));
                }
            }
        }
        got
    }

    /// The writes Reserve asks for: (claim, volume) bindings, then the claims left to
    /// provisioning on the node.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Chosen {
        bound: Vec<(String, String)>,
        provisioning: Vec<String>,
    }

    fn bound(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(c, v)| (format!("default/{c}"), v.to_string()))
            .collect()
    }

    #[test]
    fn matching_picks_the_smallest_fitting_volume() {
        let mut cl = setup(&["pv-node2", "pv-node1a", "pv-node1b"]);
        assert_eq!(
            chosen(&mut cl, &["unbound-pvc"], "node1").bound,
            bound(&[("unbound-pvc", "pv-node1a")])
        );
        let mut cl = setup(&["pv-node1a", "pv-node1b"]);
        let got = chosen(&mut cl, &["unbound-pvc2", "unbound-pvc"], "node1");
        // Smallest request first: the 1G claim takes the 5G volume, the 5G claim the 10G one.
        assert_eq!(
            got.bound,
            bound(&[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")])
        );
    }

    #[test]
    fn candidate_filters() {
        let base = || pv_on("a", "node1", 5 * G, "waitClass");
        let cases: Vec<(&str, PersistentVolume, bool)> = vec![
            ("fits", base().build(), true),
            (
                "too small",
                pv_on("a", "node1", G / 2, "waitClass").build(),
                false,
            ),
            (
                "other class",
                pv_on("a", "node1", 5 * G, "other").build(),
                false,
            ),
            ("not Available", base().phase("Released").build(), false),
            ("being deleted", base().deleting().build(), false),
            (
                "claimed by another claim",
                base().claimed_by("someone-else").build(),
                false,
            ),
            (
                "access mode missing",
                base().access_modes(&["ReadOnlyMany"]).build(),
                false,
            ),
            (
                "access modes are a superset",
                base()
                    .access_modes(&["ReadOnlyMany", "ReadWriteOnce"])
                    .build(),
                true,
            ),
            (
                "pre-bound to the claim even if Bound",
                base().claimed_by("unbound-pvc").build(),
                true,
            ),
            (
                "no node affinity fits anywhere",
                pv("a", 5 * G).class("waitClass").build(),
                true,
            ),
            (
                "other volume mode",
                base().mode(crate::model::VolumeMode::Block).build(),
                false,
            ),
            (
                "an attributes class the claim does not name",
                base().attributes_class("gold").build(),
                false,
            ),
        ];
        for (name, volume, fits) in cases {
            let mut cl = setup(&[]);
            add_storage(&mut cl, vec![volume], vec![], vec![]);
            let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
            assert_eq!(got[0].1.is_empty(), fits, "{name}");
        }
    }

    /// Volume modes and attributes classes, as v1.36's `FindMatchingVolume` (component-helpers
    /// `storage/volume/pv_helpers.go`) compares them: `CheckVolumeModeMismatches` defaults
    /// both sides to Filesystem, and with the VolumeAttributesClass gate on (v1.34+) the
    /// claim's class must equal the volume's, "" when unset. Both are checked before the
    /// pre-bound test, so they also rule out a volume pointing at the claim. The attributes
    /// class cases are upstream's `TestFindMatchVolumeWithNode` ("success-match-with-vac",
    /// "fail-vac", "fail-prebound-vac"); judged on node1, with no provisioner to fall back on.
    #[test]
    fn modes_and_attributes_classes() {
        use crate::model::VolumeMode::{Block, Filesystem};
        let claim = || pvc("unbound-pvc", G).class("waitClass");
        let vol = |name: &str, capacity: i64| pv_on(name, "node1", capacity, "waitClass");
        type Case = (
            &'static str,
            PvcBuilder,
            Vec<PvBuilder>,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "unset modes are both Filesystem",
                claim(),
                vec![vol("fs", 5 * G)],
                Some("fs"),
            ),
            (
                "a Filesystem claim never takes a Block volume",
                claim(),
                vec![vol("block", 5 * G).mode(Block)],
                None,
            ),
            (
                "a Block claim never takes a Filesystem volume",
                claim().mode(Block),
                vec![vol("fs", 5 * G).mode(Filesystem)],
                None,
            ),
            (
                "a Block claim takes the Block volume, not the smaller Filesystem one",
                claim().mode(Block),
                vec![vol("fs", 2 * G), vol("block", 5 * G).mode(Block)],
                Some("block"),
            ),
            (
                "a pre-bound volume of another mode is passed over",
                claim(),
                vec![
                    vol("prebound-block", 2 * G)
                        .mode(Block)
                        .claimed_by("unbound-pvc"),
                    vol("fs", 5 * G),
                ],
                Some("fs"),
            ),
            (
                "success-match-with-vac",
                claim().attributes_class("gold"),
                vec![vol("gold", 5 * G).attributes_class("gold")],
                Some("gold"),
            ),
            (
                "fail-vac: volumes without the claim's class",
                claim().attributes_class("silver"),
                vec![vol("plain", 5 * G)],
                None,
            ),
            (
                "fail-prebound-vac",
                claim().attributes_class("silver"),
                vec![
                    vol("prebound-gold", 5 * G)
                        .attributes_class("gold")
                        .claimed_by("unbound-pvc"),
                    vol("gold", 5 * G).attributes_class("gold"),
                ],
                None,
            ),
            (
                "a claim without a class takes only volumes without one",
                claim(),
                vec![
                    vol("gold", 2 * G).attributes_class("gold"),
                    vol("plain", 5 * G),
                ],
                Some("plain"),
            ),
        ];
        for (name, claim, volumes, want) in cases {
            let mut cl = setup(&[]);
            add_storage(
                &mut cl,
                volumes.into_iter().map(PvBuilder::build).collect(),
                vec![claim.build()],
                vec![],
            );
            let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
            let reasons: Vec<&str> = match want {
                Some(_) => vec![],
                None => vec![REASON_BIND_CONFLICT],
            };
            assert_eq!(got[0].1, reasons, "{name}");
            let want_bound = want.map_or_else(Vec::new, |v| bound(&[("unbound-pvc", v)]));
            assert_eq!(
                chosen(&mut cl, &["unbound-pvc"], "node1").bound,
                want_bound,
                "{name}"
            );
        }
    }

    #[test]
    fn claim_selector_and_beta_class_annotation() {
        let mut cl = setup(&[]);
        add_storage(
            &mut cl,
            vec![
                pv_on("fast", "node1", 5 * G, "waitClass")
                    .label("tier", "fast")
                    .build(),
                pv_on("slow", "node1", 2 * G, "waitClass")
                    .label("tier", "slow")
                    .build(),
            ],
            vec![
                pvc("picky", G)
                    .class("waitClass")
                    .selector(selector(&[("tier", "fast")]))
                    .build(),
                pvc("beta", G)
                    .annotation(BETA_STORAGE_CLASS_ANNOTATION, "waitClass")
                    .build(),
            ],
            vec![],
        );
        assert_eq!(
            chosen(&mut cl, &["picky"], "node1").bound,
            bound(&[("picky", "fast")])
        );
        assert_eq!(
            chosen(&mut cl, &["beta"], "node1").bound,
            bound(&[("beta", "slow")])
        );
    }

    /// A volume pointing at the claim decides alone, even when a smaller one would match,
    /// and even when its node affinity fails (then nothing matches on that node).
    #[test]
    fn prebound_volume_decides() {
        let mut cl = setup(&["pv-node2"]);
        add_storage(
            &mut cl,
            vec![
                pv_on("big-prebound", "node1", 50 * G, "waitClass")
                    .claimed_by("unbound-pvc")
                    .build(),
                pv_on("small", "node1", 2 * G, "waitClass").build(),
            ],
            vec![],
            vec![],
        );
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["unbound-pvc"]));
        assert_eq!(passing(&got), vec!["node1"]);
        assert_eq!(
            chosen(&mut cl, &["unbound-pvc"], "node1").bound,
            bound(&[("unbound-pvc", "big-prebound")])
        );
    }

    /// Local volumes (pinned by hostname) are found through the hostname index, mixed with
    /// volumes of other affinities by size.
    #[test]
    fn local_volumes() {
        let mut cl = cluster(
            (0..4).map(|i| node(&format!("n{i}")).build()).collect(),
            vec![],
        );
        add_storage(
            &mut cl,
            vec![
                pv("local-n1", 10 * G).class("local").on_host("n1").build(),
                pv("local-n1-small", 3 * G)
                    .class("local")
                    .on_host("n1")
                    .build(),
                pv("local-n2", 10 * G).class("local").on_host("n2").build(),
                pv("local-n2-too-small", G / 2)
                    .class("local")
                    .on_host("n2")
                    .build(),
                pv("zonal", 5 * G)
                    .class("local")
                    .node_affinity(vec![node_term(vec![
                        req("kubernetes.io/hostname", In, &["n2", "n3"]),
                        req(
                            "kubernetes.io/hostname",
                            crate::labels::Operator::Exists,
                            &[],
                        ),
                    ])])
                    .build(),
            ],
            vec![
                pvc("data", G).class("local").build(),
                pvc("data2", G).class("local").build(),
            ],
            vec![storage_class("local", NO_PROVISIONER, WaitForFirstConsumer)],
        );
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data"]));
        assert_eq!(passing(&got), vec!["n1", "n2", "n3"]);
        assert_eq!(
            chosen(&mut cl, &["data"], "n1").bound,
            bound(&[("data", "local-n1-small")])
        );
        // n2: the 5G zonal volume is smaller than the 10G local one.
        assert_eq!(
            chosen(&mut cl, &["data2"], "n2").bound,
            bound(&[("data2", "zonal")])
        );
        // The bound volumes are taken: another claim finds what is left.
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data3"]));
        assert_eq!(got[0].1, vec!["persistentvolumeclaim \"data3\" not found"]);
        add_storage(
            &mut cl,
            vec![],
            vec![pvc("data3", G).class("local").build()],
            vec![],
        );
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["data3"]));
        assert_eq!(passing(&got), vec!["n1", "n2"]);
    }

    #[test]
    fn bind_pod_volumes_records_bindings_and_selected_nodes() {
        let mut cl = setup(&["pv-node1a", "pv-bound"]);
        let got = chosen(
            &mut cl,
            &["bound-pvc", "unbound-pvc", "provisioned-pvc"],
            "node1",
        );
        assert_eq!(got.bound, bound(&[("unbound-pvc", "pv-node1a")]));
        assert_eq!(
            got.provisioning,
            vec!["default/provisioned-pvc".to_string()]
        );
        let claim = cl
            .persistent_volume_claim("default", "unbound-pvc")
            .unwrap();
        assert_eq!(claim.volume_name, "pv-node1a");
        assert!(fully_bound(claim));
        let volume = cl.persistent_volume("pv-node1a").unwrap();
        assert_eq!(
            volume.claim_ref,
            Some(("default".to_string(), "unbound-pvc".to_string()))
        );
        assert_eq!(volume.phase, "Bound");
        let provisioned = cl
            .persistent_volume_claim("default", "provisioned-pvc")
            .unwrap();
        assert_eq!(
            provisioned
                .meta
                .annotations
                .get(SELECTED_NODE_ANNOTATION)
                .map(String::as_str),
            Some("node1")
        );
        // The next pod with both claims: bound now, and the provisioned claim keeps it on node1.
        let got = run_filter(
            &CheckVolumeBinding,
            &mut cl,
            pod_with(&["unbound-pvc", "provisioned-pvc"]),
        );
        assert_eq!(passing(&got), vec!["node1"]);
        // Another claim no longer finds pv-node1a.
        add_storage(
            &mut cl,
            vec![],
            vec![pvc("late", G).class("waitClass").build()],
            vec![],
        );
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&["late"]));
        assert!(passing(&got).is_empty());
    }

    #[test]
    fn unreserve_restores_the_volumes_and_claims() {
        let mut cl = setup(&["pv-node1a", "pv-bound"]);
        let info = cl.compile_pod(pod_with(&["unbound-pvc", "provisioned-pvc"]));
        let node1 = cl.node_by_name("node1").expect("node1");
        let volumes = |cl: &Cluster| {
            let mut all: Vec<PersistentVolume> = cl.persistent_volumes().cloned().collect();
            all.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
            all
        };
        let claims = |cl: &Cluster| {
            let mut all: Vec<PersistentVolumeClaim> =
                cl.persistent_volume_claims().cloned().collect();
            all.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
            all
        };
        let volumes_before = volumes(&cl);
        let claims_before = claims(&cl);
        let state = CheckVolumeBinding
            .reserve(&mut cl, &info, node1, &mut Vec::new())
            .expect("Reserve changed the claims");
        assert_ne!(claims(&cl), claims_before);
        CheckVolumeBinding.unreserve(&mut cl, &state);
        assert_eq!(volumes(&cl), volumes_before);
        assert_eq!(claims(&cl), claims_before);
    }

    #[test]
    fn bind_pod_volumes_does_nothing_where_the_pod_does_not_fit() {
        let mut cl = setup(&["pv-node1a"]);
        assert_eq!(
            chosen(&mut cl, &["unbound-pvc"], "node2"),
            Chosen::default()
        );
        assert_eq!(
            chosen(&mut cl, &["immediate-unbound-pvc"], "node1"),
            Chosen::default()
        );
        assert_eq!(chosen(&mut cl, &[], "node1"), Chosen::default());
        assert!(
            cl.persistent_volume("pv-node1a")
                .unwrap()
                .claim_ref
                .is_none()
        );
    }

    #[test]
    fn many_claims_spill_the_choice_buffer() {
        let mut cl = setup(&[]);
        let n = INLINE_CLAIMS + 3;
        let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
        let volumes = (0..n)
            .map(|i| pv_on(&format!("v{i}"), "node1", G, "waitClass").build())
            .collect();
        let claims = names
            .iter()
            .map(|c| pvc(c, G).class("waitClass").build())
            .collect();
        add_storage(&mut cl, volumes, claims, vec![]);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&refs));
        assert_eq!(passing(&got), vec!["node1"]);
        let one_too_many: Vec<&str> = refs.iter().copied().chain(["unbound-pvc"]).collect();
        let got = run_filter(&CheckVolumeBinding, &mut cl, pod_with(&one_too_many));
        assert!(passing(&got).is_empty());
    }
}
