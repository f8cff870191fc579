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
use crate::model::{PersistentVolume, PersistentVolumeClaim, StringMap};
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
fn selects(selector: &LabelSelector, labels: &StringMap) -> bool {
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
mod tests;
