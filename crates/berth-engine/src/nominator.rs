//! Nominated pods: pending pods that preempted on a node (or whose `status.nominatedNodeName`
//! names one) and wait there for their victims to go. Upstream's PodNominator.
//!
//! While a pod is nominated, the filters treat the node as if it already ran every nominated
//! pod of equal or higher priority than the pod being scheduled (and also as if it did not:
//! see [`crate::filters`]), so lower-priority pods do not take the room freed for it. A
//! nomination lives until the pod is bound (anywhere), deleted, or nominated elsewhere; a
//! higher-priority preemptor on the same node clears lower-priority nominations there.

use rustc_hash::FxHashMap;

use crate::cluster::NodeId;
use crate::labels::{HoldsSymbols, Sym};
use crate::podinfo::PodInfo;

/// A pod nominated to a node.
#[derive(Debug, Clone)]
pub struct NominatedPod {
    /// `namespace/name`.
    pub key: String,
    /// The pod, compiled against the cluster's interner.
    pub info: PodInfo,
}

impl NominatedPod {
    /// The pod's priority.
    pub fn priority(&self) -> i32 {
        self.info.pod.priority
    }
}

/// The nominated pods, by node.
#[derive(Debug, Default, Clone)]
pub struct Nominator {
    by_node: FxHashMap<NodeId, Vec<NominatedPod>>,
    node_of: FxHashMap<String, NodeId>,
}

impl HoldsSymbols for Nominator {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for pod in self.by_node.values_mut().flatten() {
            pod.info.visit_symbols(f);
        }
    }
}

impl Nominator {
    /// No nominations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no pod is nominated anywhere (the cycle then skips every nomination check).
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// How many pods are nominated.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// Nominates `info` to `node`, replacing an earlier nomination of the same pod.
    pub fn add(&mut self, info: PodInfo, node: NodeId) {
        let key = info.key();
        self.remove(&key);
        self.node_of.insert(key.clone(), node);
        self.by_node
            .entry(node)
            .or_default()
            .push(NominatedPod { key, info });
    }

    /// Drops the nomination of the pod `namespace/name`; returns the node it named.
    pub fn remove(&mut self, key: &str) -> Option<NodeId> {
        let node = self.node_of.remove(key)?;
        if let Some(list) = self.by_node.get_mut(&node) {
            list.retain(|p| p.key != key);
            if list.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// The node a pod is nominated to.
    pub fn node_of(&self, key: &str) -> Option<NodeId> {
        self.node_of.get(key).copied()
    }

    /// The pods nominated to `node`, in nomination order.
    pub fn for_node(&self, node: NodeId) -> &[NominatedPod] {
        self.by_node.get(&node).map_or(&[], Vec::as_slice)
    }

    /// Keys of the pods nominated to `node` with a priority below `priority` (upstream's
    /// getLowerPriorityNominatedPods): a preemptor clears their nominations there.
    pub fn lower_priority_on(&self, node: NodeId, priority: i32) -> Vec<String> {
        self.for_node(node)
            .iter()
            .filter(|p| p.priority() < priority)
            .map(|p| p.key.clone())
            .collect()
    }

    /// Drops every nomination to `node` (the node is gone); returns the pods' keys.
    pub fn remove_node(&mut self, node: NodeId) -> Vec<String> {
        let pods = self.by_node.remove(&node).unwrap_or_default();
        pods.into_iter()
            .map(|p| {
                self.node_of.remove(&p.key);
                p.key
            })
            .collect()
    }

    /// Every nomination: (pod key, node).
    pub fn iter(&self) -> impl Iterator<Item = (&str, NodeId)> {
        self.node_of.iter().map(|(k, n)| (k.as_str(), *n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn nominations_move_and_clear() {
        let mut c = cluster(vec![node("a").build(), node("b").build()], vec![]);
        let a = c.node_by_name("a").expect("a");
        let b = c.node_by_name("b").expect("b");
        let mut n = Nominator::new();
        assert!(n.is_empty());
        n.add(c.compile_pod(pod("high").priority(100).build()), a);
        n.add(c.compile_pod(pod("low").priority(1).build()), a);
        assert_eq!(n.for_node(a).len(), 2);
        assert_eq!(n.lower_priority_on(a, 50), ["default/low"]);
        // Nominating again elsewhere replaces the first nomination.
        n.add(c.compile_pod(pod("low").priority(1).build()), b);
        assert_eq!(n.for_node(a).len(), 1);
        assert_eq!(n.node_of("default/low"), Some(b));
        assert_eq!(n.remove("default/high"), Some(a));
        assert!(n.for_node(a).is_empty());
        assert_eq!(n.remove_node(b), ["default/low"]);
        assert!(n.is_empty());
        assert_eq!(n.remove("default/low"), None);
    }
}
