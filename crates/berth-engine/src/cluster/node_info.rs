//! A node as the rules see it: the node's fields they read on the hot path, laid out first,
//! and the aggregates over the pods assigned to it, which the cluster updates on every
//! assign and unassign (upstream's `framework.NodeInfo`).
//!
//! Depends on the compiled pod and the leaf types only, never on the cluster.

use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use super::error::ClusterError;
use super::indexes::remove_item;
use crate::labels::{HoldsSymbols, Interner, Labels, Sym};
use crate::model::{self, NodeConditions, Taint, TaintEffect};
use crate::podinfo::PodInfo;
use crate::resources::{PODS, RequestSum, Resources, clamp_i64};
use crate::types::{HostPort, NodeId, PodId};

/// Well-known label keys, interned once.
#[derive(Debug, Clone, Copy)]
pub struct WellKnown {
    /// `kubernetes.io/hostname`.
    pub hostname: Sym,
    /// `topology.kubernetes.io/zone`.
    pub zone: Sym,
    /// `failure-domain.beta.kubernetes.io/zone`.
    pub zone_beta: Sym,
    /// `topology.kubernetes.io/region`.
    pub region: Sym,
    /// `failure-domain.beta.kubernetes.io/region`.
    pub region_beta: Sym,
}

/// Where every [`NodeInfo::stamp`] comes from: one counter for all clusters, so a stamp is
/// never given twice, even to a node of a cloned cluster.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

/// A stamp no node (and no [`crate::preemption::DisruptionBudgets`]) has had before.
pub(crate) fn fresh_stamp() -> u64 {
    NEXT_STAMP.fetch_add(1, Ordering::Relaxed)
}

/// A node with its aggregates.
///
/// Laid out hot fields first (`repr(C)` keeps the order, `align(64)` starts it on a cache
/// line): what the common filters and scores read for every node (the pod count and
/// allowed pods, taints, conditions, the requested and allocatable CPU, memory and
/// ephemeral storage) sits in the first three cache lines; the node as given is boxed,
/// since only reports and rare rules read it. Cloned only one node at a time, for the
/// hypothetical checks of preemption and nominated pods.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct NodeInfo {
    /// The node's id in the cluster, so per-node tables built in `prepare` can be indexed
    /// from a `NodeInfo`.
    pub id: NodeId,
    /// The zone key (region and zone) used for spreading; None without zone/region labels.
    pub zone_key: Option<Sym>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// Conditions.
    pub conditions: NodeConditions,
    /// Allocatable pod count.
    pub allowed_pods: i64,
    /// Pods assigned to the node.
    pub pods: Vec<PodId>,
    /// `spec.taints`.
    pub taints: Box<[Taint]>,
    /// Sum of the scoring requests (with non-zero defaults) of assigned pods: milli-CPU
    /// (clamped to `i64`; see `nonzero_exact`).
    pub nonzero_milli_cpu: i64,
    /// Same for memory bytes.
    pub nonzero_memory: i64,
    /// Allocatable resources (without pods).
    pub allocatable: Resources,
    /// Sum of the filter requests of assigned pods.
    pub requested: RequestSum,
    /// Controllers whose pods should avoid the node (from its preferAvoidPods annotation): (kind, uid).
    pub prefer_avoid: Vec<(Box<str>, Box<str>)>,
    /// Interned labels.
    pub labels: Labels,
    /// Assigned pods that need a pod IP (not hostNetwork).
    pub pods_needing_ip: u64,
    /// Usable pod IP addresses from the pod CIDRs; None when the node has no pod CIDR.
    pub pod_ip_capacity: Option<u64>,
    /// The exact sums behind `nonzero_milli_cpu` and `nonzero_memory`, so removing a pod
    /// restores the true remainder after a sum passed `i64::MAX`.
    pub(super) nonzero_exact: (i128, i128),
    /// Host ports used by assigned pods.
    pub used_ports: Vec<HostPort>,
    /// Assigned pods with any pod affinity or anti-affinity term.
    pub pods_with_affinity: Vec<PodId>,
    /// The node as given.
    pub node: Box<model::Node>,
    /// Image name, as the kubelet reports it -> size in bytes.
    pub images: FxHashMap<Box<str>, i64>,
    /// The same images keyed by interned name, sorted by symbol, so a scorer can look an
    /// image up per node without hashing a string.
    pub image_syms: Box<[(Sym, i64)]>,
    /// Changes whenever the node's object or its set of pods does (not in copies): an
    /// answer computed from this node alone holds while its stamp is the same.
    pub(crate) stamp: u64,
}

impl NodeInfo {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.node.meta.name
    }

    /// The node's taints.
    pub fn taints(&self) -> &[Taint] {
        &self.taints
    }

    /// Whether the node carries a PreferNoSchedule taint (TaintTolerationPriority counts
    /// only those).
    pub fn soft_tainted(&self) -> bool {
        self.taints
            .iter()
            .any(|t| t.effect == TaintEffect::PreferNoSchedule)
    }

    /// The node's conditions.
    pub fn conditions(&self) -> &NodeConditions {
        &self.conditions
    }

    /// Counts `pod` in this node's aggregates. `id` is None for a pod that is not in the
    /// cluster (a nominated pod added to a hypothetical copy of the node): it then takes one
    /// of the node's pod slots instead of appearing in `pods`, since rules look listed pods
    /// up in the cluster.
    pub fn add_pod(&mut self, pod: &PodInfo, id: Option<PodId>) {
        self.requested.add(&pod.request);
        self.count_nonzero(pod, 1);
        match id {
            Some(id) => {
                self.pods.push(id);
                if pod.affinity.has_pod_terms() {
                    self.pods_with_affinity.push(id);
                }
            }
            None => self.allowed_pods -= 1,
        }
        if pod.needs_ip {
            self.pods_needing_ip += 1;
        }
        self.used_ports.extend(pod.host_ports.iter().cloned());
    }

    fn count_nonzero(&mut self, pod: &PodInfo, sign: i128) {
        let (cpu, memory) = &mut self.nonzero_exact;
        *cpu += sign * i128::from(pod.nonzero_milli_cpu);
        *memory += sign * i128::from(pod.nonzero_memory);
        self.nonzero_milli_cpu = clamp_i64(*cpu);
        self.nonzero_memory = clamp_i64(*memory);
    }

    /// Undoes [`NodeInfo::add_pod`] for a pod of the cluster.
    pub fn remove_pod(&mut self, pod: &PodInfo, id: PodId) {
        self.requested.sub(&pod.request);
        self.count_nonzero(pod, -1);
        remove_item(&mut self.pods, id);
        if pod.needs_ip {
            self.pods_needing_ip -= 1;
        }
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        remove_item(&mut self.pods_with_affinity, id);
    }
}

impl HoldsSymbols for NodeInfo {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        if let Some(zone) = &mut self.zone_key {
            f(zone);
        }
        self.labels.visit_symbols(f);
        for (image, _) in self.image_syms.iter_mut() {
            f(image);
        }
    }
}

impl NodeInfo {
    /// A node's info with no pods yet: labels and image names interned, the zone key and
    /// pod-IP capacity worked out.
    pub(super) fn build(
        id: NodeId,
        node: model::Node,
        interner: &mut Interner,
        keys: WellKnown,
    ) -> Result<NodeInfo, ClusterError> {
        let labels = Labels::intern(
            interner,
            node.meta
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let allocatable = Resources::from_list(&node.allocatable);
        let allowed_pods = node
            .allocatable
            .iter()
            .find(|(n, _)| n == PODS)
            .map_or(0, |(_, v)| *v);
        let pod_ip_capacity = pod_ip_capacity(&node)?;
        let zone_key = Self::zone_key(&labels, interner, keys);
        let prefer_avoid = node
            .prefer_avoid_pods
            .iter()
            .map(|(kind, uid)| (kind.as_str().into(), uid.as_str().into()))
            .collect();
        // Node image names are used as the kubelet reports them (with tags or digests); only
        // the pod's image references are normalised, as upstream does.
        let mut images: FxHashMap<Box<str>, i64> = FxHashMap::default();
        for img in &node.images {
            for n in &img.names {
                images.insert(n.as_str().into(), img.size_bytes);
            }
        }
        let mut image_syms: Vec<(Sym, i64)> = images
            .iter()
            .map(|(name, size)| (interner.intern(name), *size))
            .collect();
        image_syms.sort_unstable_by_key(|(sym, _)| *sym);
        Ok(NodeInfo {
            id,
            unschedulable: node.unschedulable,
            conditions: node.conditions,
            taints: node.taints.clone().into_boxed_slice(),
            node: Box::new(node),
            labels,
            allocatable,
            allowed_pods,
            pod_ip_capacity,
            zone_key,
            prefer_avoid,
            images,
            image_syms: image_syms.into_boxed_slice(),
            requested: RequestSum::default(),
            nonzero_milli_cpu: 0,
            nonzero_memory: 0,
            nonzero_exact: (0, 0),
            pods: Vec::new(),
            pods_needing_ip: 0,
            used_ports: Vec::new(),
            pods_with_affinity: Vec::new(),
            stamp: fresh_stamp(),
        })
    }

    /// Upstream's zone key (`GetZoneKey`): region and zone joined, each taken from the beta
    /// label first, then the GA one; None when both are empty.
    fn zone_key(labels: &Labels, interner: &mut Interner, k: WellKnown) -> Option<Sym> {
        let value = |beta: Sym, ga: Sym| {
            labels
                .get(beta)
                .or_else(|| labels.get(ga))
                .map_or("", |v| interner.resolve(v))
        };
        let zone = value(k.zone_beta, k.zone);
        let region = value(k.region_beta, k.region);
        if zone.is_empty() && region.is_empty() {
            return None;
        }
        let text = format!("{region}:\u{0}:{zone}");
        Some(interner.intern(&text))
    }
}

/// Usable pod IPs of a node's CIDRs: 2^(bits-prefix) - 3 (network, broadcast, gateway),
/// summed over families, capped so IPv6 stays finite. None when the node has no pod CIDR.
fn pod_ip_capacity(node: &model::Node) -> Result<Option<u64>, ClusterError> {
    const CAP: u64 = 1 << 32;
    if node.pod_cidrs.is_empty() {
        return Ok(None);
    }
    let mut total: u64 = 0;
    for cidr in &node.pod_cidrs {
        let net: ipnet::IpNet = cidr.parse().map_err(|_| ClusterError::BadCidr {
            node: node.meta.name.clone(),
            cidr: cidr.clone(),
        })?;
        let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
        let size = if host_bits >= 63 {
            CAP
        } else {
            (1u64 << host_bits).min(CAP)
        };
        total = total.saturating_add(size.saturating_sub(3));
    }
    Ok(Some(total.min(CAP)))
}

/// Normalises an image name as upstream's image locality does: a name without a tag or
/// digest gets ":latest".
pub fn normalize_image_name(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if name.contains('@') || last.contains(':') {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    /// The fields the common filters and scores read lie in the node's first three cache
    /// lines (see [`NodeInfo`]).
    #[test]
    fn hot_fields_share_three_cache_lines() {
        assert_eq!(align_of::<NodeInfo>(), 64);
        let end = |offset: usize, size: usize| offset + size;
        for (field, last_byte) in [
            (
                "conditions",
                end(
                    offset_of!(NodeInfo, conditions),
                    size_of::<NodeConditions>(),
                ),
            ),
            (
                "pods",
                end(offset_of!(NodeInfo, pods), size_of::<Vec<PodId>>()),
            ),
            (
                "taints",
                end(offset_of!(NodeInfo, taints), size_of::<Box<[Taint]>>()),
            ),
            (
                "allocatable",
                end(offset_of!(NodeInfo, allocatable), 3 * size_of::<i64>()),
            ),
            (
                "requested",
                end(offset_of!(NodeInfo, requested), 3 * size_of::<i64>()),
            ),
        ] {
            assert!(last_byte <= 3 * 64, "{field} ends at byte {last_byte}");
        }
    }
}
