//! Each scored node's topology domain as a dense index, kept across cycles.
//!
//! The spreading priorities that normalise over domains (SelectorSpread's system-default zone
//! constraint, ServiceAntiAffinity) group the feasible nodes by one label's value for every
//! pod. Equal pods of a class ask that about the same feasible nodes cycle after cycle, and
//! the answer depends only on those nodes and their labels, so a rule keeps its last answers
//! and reuses one while the label key, the node list and the cluster's epoch (which every
//! change other than a pod's placement advances, node labels included) are the same. Pods of
//! several classes taking turns ask about a few different node lists (each class's feasible
//! nodes, such as one region's), so several answers per key are kept.

use std::sync::{Arc, Mutex};

use crate::cluster::{Cluster, NodeId};
use crate::labels::Sym;

/// A node without the label, in [`Domains::of`].
pub(crate) const NO_DOMAIN: u32 = u32::MAX;

/// How many answers one rule keeps, over its label keys (ServiceAntiAffinity takes one label
/// per policy entry, SelectorSpread one key) and node lists. Each holds two `u32` per node;
/// `berth bench --workload deployments --arrival interleaved`, whose classes' feasible nodes
/// are one of three regions or every node, computed the domains for most pods with one
/// answer per key.
const KEPT: usize = 16;

/// The domains of a list of nodes under one label key.
#[derive(Debug)]
pub(crate) struct Domains {
    key: Sym,
    epoch: u64,
    nodes: Vec<NodeId>,
    /// Per node of the list, the index of its value in `values`, or [`NO_DOMAIN`].
    pub of: Vec<u32>,
    /// The distinct values, in order of first appearance in the list.
    pub values: Vec<Sym>,
    /// How many nodes of the list carry each value of `values`.
    pub counts: Vec<u32>,
    /// Whether some node of the list lacks the label.
    pub unlabelled: bool,
    /// How many nodes of the list lack the label.
    pub unlabelled_count: u32,
}

impl Domains {
    fn compute(cluster: &Cluster, key: Sym, nodes: &[NodeId]) -> Self {
        let column = cluster.label_column(key).unwrap_or_default();
        // A topology label has few distinct values (zones, racks): a small table searched
        // linearly beats hashing once per node.
        let mut values: Vec<Sym> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        let mut unlabelled_count = 0;
        let of = nodes
            .iter()
            .map(|id| match column.get(id.0 as usize).copied().flatten() {
                Some(v) => match values.iter().position(|seen| *seen == v) {
                    Some(row) => {
                        counts[row] += 1;
                        row as u32
                    }
                    None => {
                        values.push(v);
                        counts.push(1);
                        values.len() as u32 - 1
                    }
                },
                None => {
                    unlabelled_count += 1;
                    NO_DOMAIN
                }
            })
            .collect();
        Domains {
            key,
            epoch: cluster.changes().epoch(),
            nodes: nodes.to_vec(),
            of,
            values,
            counts,
            unlabelled: unlabelled_count > 0,
            unlabelled_count,
        }
    }

    fn holds(&self, cluster: &Cluster, key: Sym, nodes: &[NodeId]) -> bool {
        self.key == key && self.epoch == cluster.changes().epoch() && same_nodes(&self.nodes, nodes)
    }
}

/// Whether two node lists are equal. The lists run to every feasible node and are compared
/// for every pod; comparing a block at a time without stopping inside it lets the compiler
/// use vector compares, where a slice of `NodeId`s (not a primitive) compares one by one.
fn same_nodes(a: &[NodeId], b: &[NodeId]) -> bool {
    const BLOCK: usize = 64;
    a.len() == b.len()
        && a.chunks(BLOCK).zip(b.chunks(BLOCK)).all(|(x, y)| {
            x.iter()
                .zip(y)
                .fold(true, |same, (p, q)| same & (p.0 == q.0))
        })
}

/// A rule's kept [`Domains`], newest first.
#[derive(Debug, Default)]
pub(crate) struct DomainRows {
    kept: Mutex<Vec<Arc<Domains>>>,
}

impl DomainRows {
    /// The domains of `nodes` under `key`: the kept answer when it holds, else a fresh one
    /// (kept in place of the oldest).
    pub fn of(&self, cluster: &Cluster, key: Sym, nodes: &[NodeId]) -> Arc<Domains> {
        // A poisoned lock only means another cycle panicked; the kept answers are whole.
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = kept.iter().position(|d| d.holds(cluster, key, nodes)) {
            let found = kept.remove(at);
            kept.insert(0, Arc::clone(&found));
            return found;
        }
        let fresh = Arc::new(Domains::compute(cluster, key, nodes));
        kept.truncate(KEPT - 1);
        kept.insert(0, Arc::clone(&fresh));
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    /// Lists are equal only when every node is, past a block's end too.
    #[test]
    fn same_nodes_compares_every_node() {
        let a: Vec<NodeId> = (0..130).map(NodeId).collect();
        assert!(same_nodes(&a, &a.clone()));
        assert!(!same_nodes(&a, &a[..129]));
        for at in [0, 63, 64, 129] {
            let mut b = a.clone();
            b[at] = NodeId(1000);
            assert!(!same_nodes(&a, &b), "differs at {at}");
        }
        assert!(same_nodes(&[], &[]));
    }

    #[test]
    fn domains_are_kept_while_nodes_and_labels_hold() {
        let mut cluster = cluster(
            vec![
                node("a").label("zone", "z1").build(),
                node("b").label("zone", "z2").build(),
                node("c").build(),
                node("d").label("zone", "z1").build(),
            ],
            vec![],
        );
        let key = cluster.intern("zone");
        let nodes: Vec<NodeId> = cluster.node_order().to_vec();
        let rows = DomainRows::default();
        let first = rows.of(&cluster, key, &nodes);
        let ids: Vec<(String, NodeId)> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| (n.to_string(), cluster.node_by_name(n).unwrap()))
            .collect();
        let by_name = |d: &Domains, name: &str| {
            let id = ids.iter().find(|(n, _)| n == name).unwrap().1;
            d.of[nodes.iter().position(|n| *n == id).unwrap()]
        };
        assert_eq!(first.values.len(), 2);
        assert!(first.unlabelled);
        assert_eq!(first.unlabelled_count, 1);
        assert_eq!(by_name(&first, "a"), by_name(&first, "d"));
        assert_ne!(by_name(&first, "a"), by_name(&first, "b"));
        assert_eq!(by_name(&first, "c"), NO_DOMAIN);
        let row_a = by_name(&first, "a") as usize;
        assert_eq!(first.counts[row_a], 2);
        assert_eq!(first.counts[by_name(&first, "b") as usize], 1);
        assert!(Arc::ptr_eq(&first, &rows.of(&cluster, key, &nodes)));
        // Fewer nodes: asked again.
        let fewer = rows.of(&cluster, key, &nodes[..2]);
        assert!(!Arc::ptr_eq(&first, &fewer));
        assert_eq!(fewer.of.len(), 2);
        // Both lists are kept: asking about the first again reuses its answer.
        assert!(Arc::ptr_eq(&first, &rows.of(&cluster, key, &nodes)));
        // A relabelled node moves the epoch: asked again, and the answer follows.
        cluster
            .upsert_node(node("c").label("zone", "z2").build())
            .unwrap();
        let after = rows.of(&cluster, key, &nodes);
        assert!(!after.unlabelled);
        assert_eq!(by_name(&after, "c"), by_name(&after, "b"));
    }
}
