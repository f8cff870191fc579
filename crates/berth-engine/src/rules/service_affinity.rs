//! CheckServiceAffinity (v1.22 ServiceAffinity filter, policy argument `serviceAffinity`):
//! pods of a service stay on nodes with the same values of the affinity labels.
//!
//! The values come first from the pod's `nodeSelector`. When some are missing and a Service
//! in the pod's namespace selects the pod, the rest are copied from the node of the first
//! already-placed pod of that namespace whose labels include all of the pod's labels (that is
//! upstream's test: it matches on the pod's own labels, not on the Service's selector). If no
//! such pod exists the missing labels are left free. A node passes when it carries every
//! collected label with the collected value.
//!
//! "First" follows upstream's snapshot listing: pods are listed node by node in the cluster's
//! node order (zones interleaved), so the node used is the first node in that order running a
//! matching pod. Terminating pods count, as upstream.

use crate::cluster::{Cluster, NamespaceFilter, NodeId, NodeInfo};
use crate::framework::{CycleContext, Dense, FilterPrep, FilterRule, NodeCheck, Reason, Reuse};
use crate::labels::{Selector, Sym};
use crate::model::SelectorKind;
use crate::podinfo::PodInfo;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "ServiceAffinity";

/// The node's labels differ from the values the service's pods are pinned to.
pub const REASON: &str = "node(s) didn't match service affinity";

/// The rule.
pub struct CheckServiceAffinity {
    labels: Vec<String>,
}

impl CheckServiceAffinity {
    /// A rule keeping a service's pods on nodes that agree on these label keys.
    pub fn new(labels: Vec<String>) -> Self {
        CheckServiceAffinity { labels }
    }
}

/// The label values a node must carry, read from the cluster's dense label columns by node
/// slot.
struct Check<'a> {
    /// (label column, required value) per collected label; not read when `always_fails`.
    columns: Vec<(&'a [Option<Sym>], Sym)>,
    always_fails: bool,
    required: u64,
}

impl NodeCheck for Check<'_> {
    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        // `dense` always answers for this check.
        let ok = self.dense().passes(node.id.0 as usize) == Some(true);
        if !ok {
            reasons.push(REASON.into());
        }
        ok
    }

    /// The label columns, read per node slot: an every-node mask would cost a pass over all
    /// nodes per pod, more than the walk itself when it stops early.
    fn dense(&self) -> Dense<'_> {
        if self.always_fails {
            Dense::Mask(&[])
        } else {
            Dense::Labels(&self.columns)
        }
    }

    fn reuse(&self) -> Reuse {
        Reuse::While {
            keys: Vec::new(),
            summary: self.required,
        }
    }
}

/// The node whose labels fill the affinity labels the pod's node selector leaves open: the
/// first node, in the cluster's node order, running an assigned pod of the pod's namespace
/// whose labels include all of the pod's labels. `missing` are the keys still open; when every
/// candidate node agrees on them the node order need not be walked.
fn first_peer_node(cluster: &Cluster, pod: &PodInfo, missing: &[Sym]) -> Option<NodeId> {
    let selector = Selector::from_pairs(pod.labels.iter());
    let namespaces = NamespaceFilter::only(pod.namespace);
    // One walk over the peers (each a pod read from memory), their nodes kept.
    let peers: Vec<NodeId> = cluster
        .matching_pods(&namespaces, &selector)
        .filter_map(|id| cluster.pod(id).node)
        .collect();
    let first = *peers.first()?;
    // Read from the dense label columns: every peer is compared with the first.
    let columns: Vec<Option<&[Option<Sym>]>> =
        missing.iter().map(|k| cluster.label_column(*k)).collect();
    let values = |id: NodeId| {
        columns
            .iter()
            .map(move |c| c.and_then(|c| c.get(id.0 as usize).copied().flatten()))
    };
    // The usual case (the predicate keeps a service's pods on one value): no node differs,
    // and any peer's node gives the values.
    if peers.iter().all(|id| values(*id).eq(values(first))) {
        return Some(first);
    }
    let mut peer = vec![false; cluster.node_slots()];
    for id in &peers {
        if let Some(p) = peer.get_mut(id.0 as usize) {
            *p = true;
        }
    }
    cluster
        .node_order()
        .iter()
        .copied()
        .find(|id| peer.get(id.0 as usize) == Some(&true))
}

impl FilterRule for CheckServiceAffinity {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if self.labels.is_empty() {
            return FilterPrep::Skip;
        }
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let interner = cluster.interner();
        let mut pairs: Vec<(Sym, Sym)> = Vec::new();
        let mut missing: Vec<Sym> = Vec::new();
        let mut always_fails = false;
        for label in &self.labels {
            let key = interner.get(label);
            match (pod.pod.node_selector.get(label), key) {
                (Some(value), Some(key)) => match interner.get(value) {
                    Some(value) => pairs.push((key, value)),
                    None => always_fails = true,
                },
                (Some(_), None) => always_fails = true,
                // A key no object uses is on no node, so no peer's node can supply it.
                (None, None) => {}
                (None, Some(key)) => missing.push(key),
            }
        }
        let has_service = || {
            !cluster
                .selecting(pod, Some(SelectorKind::Service))
                .is_empty()
        };
        if !missing.is_empty()
            && has_service()
            && let Some(peer) = first_peer_node(cluster, pod, &missing)
        {
            let labels = &cluster.node(peer).labels;
            pairs.extend(
                missing
                    .iter()
                    .filter_map(|k| labels.get(*k).map(|v| (*k, v))),
            );
        }
        if pairs.is_empty() && !always_fails {
            return FilterPrep::Skip;
        }
        let columns: Vec<(&[Option<Sym>], Sym)> = pairs
            .iter()
            .filter_map(|(k, v)| {
                let column = cluster.label_column(*k);
                always_fails |= column.is_none();
                column.map(|c| (c, *v))
            })
            .collect();
        FilterPrep::Check(Box::new(Check {
            columns,
            always_fails,
            required: Reuse::digest(&(pairs, always_fails)),
        }))
    }
}

#[cfg(test)]
mod tests;
