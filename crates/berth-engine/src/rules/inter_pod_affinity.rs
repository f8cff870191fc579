//! MatchInterPodAffinity (v1.22 InterPodAffinity filter): the pod's required pod affinity and
//! anti-affinity terms, and the required anti-affinity terms of running pods that select it.
//!
//! Upstream counts, per topology domain (key, value), the existing pods matching each kind of
//! term, then checks each node's domains. Here the domains are found through the cluster's
//! indexes (pods by label, running pods' anti-affinity terms by the labels they select), so
//! preparing costs O(matching pods + matching terms) and a node check costs a label lookup and
//! a hash probe per topology key.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeInfo};
use crate::framework::{
    CountChanges, CycleContext, Dense, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason,
    Reuse,
};
use crate::labels::{Labels, Sym};
use crate::podinfo::{AffinityTerm, PodInfo};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "InterPodAffinity";

/// The node lacks a topology key of the pod's affinity, or no pod it asks for runs in the
/// node's domain.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// A pod the pod's anti-affinity rejects runs in the node's domain.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// A running pod's anti-affinity rejects the pod in the node's domain.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The rule.
pub struct MatchInterPodAffinity;

/// Slots of the three kinds of count in [`CountChanges`].
const AFFINITY: u32 = 0;
const ANTI: u32 = 1;
const EXISTING_ANTI: u32 = 2;

/// Counts of pods per topology domain (key, value), as upstream's `topologyToMatchedTermCount`
/// (a domain with no pod is absent), with the distinct keys among them so that testing a
/// node costs one label lookup and one probe per key.
#[derive(Debug, Default)]
struct Domains {
    keys: Vec<Sym>,
    counts: FxHashMap<(Sym, Sym), i64>,
}

impl Domains {
    /// Counts one more pod in the domain `key=value`.
    fn insert(&mut self, key: Sym, value: Sym) {
        *self.counts.entry((key, value)).or_insert(0) += 1;
        if !self.keys.contains(&key) {
            self.keys.push(key);
        }
    }

    /// Counts a pod on `node` (the node running a matching pod) for `key`, if it has the key.
    fn insert_node_domain(&mut self, cluster: &Cluster, pod: &PodInfo, key: Sym) {
        if let Some(value) = pod.node.and_then(|n| cluster.node(n).labels.get(key)) {
            self.insert(key, value);
        }
    }

    /// How many pods are counted in `key=value`.
    #[inline]
    fn count(&self, key: Sym, value: Sym) -> i64 {
        self.counts.get(&(key, value)).copied().unwrap_or(0)
    }

    /// Whether `key=value` holds a pod.
    #[inline]
    fn contains(&self, key: Sym, value: Sym) -> bool {
        self.count(key, value) > 0
    }

    /// Whether a node with these labels lies in any of the domains.
    #[inline]
    fn hold(&self, labels: &Labels) -> bool {
        self.keys
            .iter()
            .any(|k| labels.get(*k).is_some_and(|v| self.contains(*k, v)))
    }

    /// The count of `key=value` after `changes` to `slot`.
    #[inline]
    fn changed(&self, changes: &CountChanges, slot: u32, key: Sym, value: Sym) -> i64 {
        self.count(key, value) + changes.get(slot, key, value)
    }

    /// Whether a node with these labels lies in a domain holding a pod after `changes`.
    fn hold_changed(&self, labels: &Labels, changes: &CountChanges, slot: u32) -> bool {
        let changed_keys = changes
            .iter()
            .filter(|((s, _, _), _)| *s == slot)
            .map(|((_, k, _), _)| k);
        self.keys.iter().copied().chain(changed_keys).any(|k| {
            labels
                .get(k)
                .is_some_and(|v| self.changed(changes, slot, k, v) > 0)
        })
    }

    /// Whether no domain holds a pod after `changes` to `slot` (upstream's empty map: it
    /// deletes a domain whose count drops to zero).
    fn is_empty_changed(&self, changes: &CountChanges, slot: u32) -> bool {
        let mut held = self.counts.len();
        for ((s, k, v), delta) in changes.iter() {
            if s != slot {
                continue;
            }
            let before = self.count(k, v);
            match (before != 0, before + delta != 0) {
                (true, false) => held -= 1,
                (false, true) => held += 1,
                _ => {}
            }
        }
        held == 0
    }

    /// Whether there is no domain.
    fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// The prepared check.
struct Check<'a> {
    cluster: &'a Cluster,
    pod: &'a PodInfo,
    /// The pod's required affinity terms.
    affinity_terms: &'a [AffinityTerm],
    /// Domains, per affinity term key, of nodes running a pod that matches all the pod's
    /// affinity terms (upstream's `affinityCounts`).
    affinity_domains: Domains,
    /// Whether the pod matches all its own affinity terms (half of upstream's "first pod
    /// of a group" exception; the other half is that no other pod does).
    matches_own_terms: bool,
    /// Domains of pods the pod's anti-affinity terms select.
    anti_domains: Domains,
    /// Domains of running pods whose anti-affinity terms select the pod.
    existing_anti_domains: Domains,
    /// The verdict per node slot, from the same data (see [`Check::mask_for`]), built when
    /// a cycle first walks the nodes.
    mask: OnceLock<Vec<bool>>,
}

impl Check<'_> {
    /// Upstream's "first pod of a group" exception: no pod matching all the terms runs on a
    /// node with any of their keys, and the pod matches its own terms.
    fn first_of_group(&self) -> bool {
        self.matches_own_terms && self.affinity_domains.is_empty()
    }

    /// Every node's verdict at once, computed from the cluster's dense label tables: the
    /// affinity part walks the term keys' label columns (pods with required affinity only);
    /// the anti-affinity parts clear just the nodes of each forbidden domain.
    fn mask_for(&self, cluster: &Cluster) -> Vec<bool> {
        let slots = cluster.node_slots();
        let mut mask = vec![true; slots];
        let first_of_group = self.first_of_group();
        for t in self.affinity_terms {
            let column = cluster.label_column(t.topology_key).unwrap_or_default();
            for (slot, ok) in mask.iter_mut().enumerate() {
                *ok &= column.get(slot).copied().flatten().is_some_and(|v| {
                    first_of_group || self.affinity_domains.contains(t.topology_key, v)
                });
            }
        }
        for (key, value) in self
            .anti_domains
            .counts
            .keys()
            .chain(self.existing_anti_domains.counts.keys())
        {
            for id in cluster.nodes_with_label(*key, *value) {
                mask[id.0 as usize] = false;
            }
        }
        mask
    }

    /// Upstream's `satisfyPodAffinity`: the node must carry every term's key; then either each
    /// term has a matching pod in the node's domain, or the first-pod exception applies.
    #[inline]
    fn affinity_holds(&self, labels: &Labels) -> bool {
        let mut all_found = true;
        for t in self.affinity_terms {
            match labels.get(t.topology_key) {
                None => return false,
                Some(v) => all_found &= self.affinity_domains.contains(t.topology_key, v),
            }
        }
        all_found || self.first_of_group()
    }

    /// [`Check::affinity_holds`] after `changes`.
    fn affinity_holds_changed(&self, labels: &Labels, changes: &CountChanges) -> bool {
        let mut all_found = true;
        for t in self.affinity_terms {
            match labels.get(t.topology_key) {
                None => return false,
                Some(v) => {
                    all_found &= self
                        .affinity_domains
                        .changed(changes, AFFINITY, t.topology_key, v)
                        > 0
                }
            }
        }
        all_found
            || (self.matches_own_terms && self.affinity_domains.is_empty_changed(changes, AFFINITY))
    }
}

/// The reason for a node failing the three parts, checked in upstream's order.
fn verdict(affinity: bool, anti: bool, existing_anti: bool, reasons: &mut Vec<Reason>) -> bool {
    // v1.22 reports only the specific reason: PR #102518 (merged before the 1.22 freeze)
    // dropped the generic "node(s) didn't match pod affinity/anti-affinity rules" that
    // earlier releases added to each failure.
    let failed = if !affinity {
        REASON_AFFINITY
    } else if anti {
        REASON_ANTI_AFFINITY
    } else if existing_anti {
        REASON_EXISTING_ANTI_AFFINITY
    } else {
        return true;
    };
    reasons.push(failed.into());
    false
}

impl NodeCheck for Check<'_> {
    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let labels = &node.labels;
        verdict(
            self.affinity_holds(labels),
            self.anti_domains.hold(labels),
            self.existing_anti_domains.hold(labels),
            reasons,
        )
    }

    fn dense(&self) -> Dense<'_> {
        Dense::Mask(self.mask.get_or_init(|| self.mask_for(self.cluster)))
    }

    /// The mask only once some pass built it.
    fn dense_at_hand(&self) -> Dense<'_> {
        self.mask.get().map_or(Dense::No, |m| Dense::Mask(m))
    }

    /// Reusable across a class while the pods in the node's domains of the pod's own term
    /// keys stay (a running pod's anti-affinity term reaches the domains of its own key, which
    /// the cluster's change log names when that pod comes or goes), and while the "first pod
    /// of a group" exception holds or not.
    fn reuse(&self) -> Reuse {
        let mut keys: Vec<Sym> = self
            .affinity_terms
            .iter()
            .chain(&self.pod.affinity.anti_required)
            .map(|t| t.topology_key)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Reuse::While {
            keys,
            summary: u64::from(self.first_of_group()),
        }
    }

    /// Upstream's `preFilterState.updateWithPod`: the added or removed pod counts in the
    /// node's domains for each of its anti-affinity terms selecting the pod being scheduled,
    /// for each affinity term of that pod when it matches them all, and for each of that
    /// pod's anti-affinity terms selecting it.
    fn count_pod(&self, changes: &mut CountChanges, other: &PodInfo, node: &NodeInfo, delta: i64) {
        let cluster = self.cluster;
        let mut count = |slot: u32, key: Sym| {
            if let Some(value) = node.labels.get(key) {
                changes.add(slot, key, value, delta);
            }
        };
        let no_labels = Labels::default();
        let own_namespace_labels = cluster
            .namespace_labels(self.pod.namespace)
            .unwrap_or(&no_labels);
        for t in &other.affinity.anti_required {
            if t.matches_in(self.pod, own_namespace_labels) {
                count(EXISTING_ANTI, t.topology_key);
            }
        }
        let other_namespace_labels = cluster.namespace_labels(other.namespace);
        if !self.affinity_terms.is_empty()
            && self
                .affinity_terms
                .iter()
                .all(|t| t.matches(other, other_namespace_labels))
        {
            for t in self.affinity_terms {
                count(AFFINITY, t.topology_key);
            }
        }
        for t in &self.pod.affinity.anti_required {
            if t.matches(other, other_namespace_labels) {
                count(ANTI, t.topology_key);
            }
        }
    }

    fn check_changed(
        &self,
        node: &NodeInfo,
        changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        let labels = &node.labels;
        verdict(
            self.affinity_holds_changed(labels, changes),
            self.anti_domains.hold_changed(labels, changes, ANTI),
            self.existing_anti_domains
                .hold_changed(labels, changes, EXISTING_ANTI),
            reasons,
        )
    }
}

/// Domains holding a pod that matches every one of `terms`, for each term's key.
fn affinity_domains(cluster: &Cluster, terms: &[AffinityTerm]) -> Domains {
    let mut domains = Domains::default();
    let Some((first, rest)) = terms.split_first() else {
        return domains;
    };
    let Some(selector) = &first.selector else {
        return domains;
    };
    for id in cluster.matching_pods(&first.namespaces, selector) {
        let p = cluster.pod(id);
        if rest
            .iter()
            .all(|t| t.matches(p, cluster.namespace_labels(p.namespace)))
        {
            for t in terms {
                domains.insert_node_domain(cluster, p, t.topology_key);
            }
        }
    }
    domains
}

/// Domains holding a pod that matches any one of `terms` (each term on its own key).
fn anti_affinity_domains(cluster: &Cluster, terms: &[AffinityTerm]) -> Domains {
    let mut domains = Domains::default();
    for t in terms {
        let Some(selector) = &t.selector else {
            continue;
        };
        for id in cluster.matching_pods(&t.namespaces, selector) {
            domains.insert_node_domain(cluster, cluster.pod(id), t.topology_key);
        }
    }
    domains
}

/// Domains of running pods with a required anti-affinity term selecting `pod`.
fn existing_anti_affinity_domains(cluster: &Cluster, pod: &PodInfo) -> Domains {
    let mut domains = Domains::default();
    let index = cluster.required_anti_affinity_terms();
    if index.is_empty() {
        return domains;
    }
    let no_labels = Labels::default();
    // Without a Namespace object upstream matches running pods' namespace selectors against
    // no labels.
    let namespace_labels = cluster
        .namespace_labels(pod.namespace)
        .unwrap_or(&no_labels);
    for r in index.candidates(&pod.labels) {
        let Some(term) = cluster.term(r) else {
            continue;
        };
        if term.matches_in(pod, namespace_labels) {
            domains.insert_node_domain(cluster, cluster.pod(r.pod), term.topology_key);
        }
    }
    domains
}

impl FilterRule for MatchInterPodAffinity {
    /// Upstream's InterPodAffinity: an unmet affinity is UnschedulableAndUnresolvable (preemption
    /// does not add pods), unmet anti-affinity only Unschedulable.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        if reason.as_str() == REASON_AFFINITY {
            FailureKind::UnschedulableAndUnresolvable
        } else {
            FailureKind::Unschedulable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let affinity = &pod.affinity;
        let existing_anti_domains = existing_anti_affinity_domains(cluster, pod);
        // With a pod nominated somewhere, its anti-affinity may reject this pod on the node
        // it is added to, which only the check can tell.
        if affinity.required.is_empty()
            && affinity.anti_required.is_empty()
            && existing_anti_domains.is_empty()
            && !ctx.nominated
        {
            return FilterPrep::Skip;
        }
        let matches_own_terms = affinity
            .required
            .iter()
            .all(|t| t.matches(pod, cluster.namespace_labels(pod.namespace)));
        let check = Check {
            cluster,
            pod,
            affinity_terms: &affinity.required,
            affinity_domains: affinity_domains(cluster, &affinity.required),
            matches_own_terms,
            anti_domains: anti_affinity_domains(cluster, &affinity.anti_required),
            existing_anti_domains,
            mask: OnceLock::new(),
        };
        FilterPrep::Check(Box::new(check))
    }
}

#[cfg(test)]
mod tests;
