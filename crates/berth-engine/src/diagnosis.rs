//! What a cycle concluded about a pod that fits nowhere, and what preemption proposes:
//! the vocabulary the cycle, preemption and the extenders share, below all of them.

use std::collections::BTreeMap;
use std::fmt;

use crate::cluster::{NodeId, PodId};

/// The message when the cluster has no node at all (upstream's ErrNoNodesAvailable).
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// Why a pod fits no node: each node's reasons, counted, and which filter gave which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// Number of nodes in the cluster.
    pub num_all_nodes: usize,
    /// Reason -> number of nodes that gave it (the filters' and the extenders').
    pub reasons: BTreeMap<String, usize>,
    /// What the filters said, attributed.
    pub diagnosis: Diagnosis,
}

/// What the filters said of the nodes a cycle visited, each reason with the filter that gave
/// it (upstream's Diagnosis: its node statuses, summarised, and its unschedulable plugins).
/// Filters are indices into the profile's filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnosis {
    /// (filter, reason) -> number of nodes it gave that reason for. A reason given by two
    /// filters counts under each.
    pub by_filter: BTreeMap<(usize, String), usize>,
    /// The filters that rejected at least one node, ascending: upstream's unschedulable
    /// plugins of the pod.
    pub filters: Vec<usize>,
    /// The nodes whose failure is UnschedulableAndUnresolvable (removing pods cannot help),
    /// in id order, the extenders' FailedAndUnresolvable nodes among them. Preemption
    /// considers only the others.
    pub unresolvable: Vec<NodeId>,
}

impl Diagnosis {
    /// How many nodes each filter rejected, by filter (a node counts once per reason the
    /// filter gave it).
    pub fn nodes_by_filter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.by_filter.iter().map(|((f, _), n)| (*f, *n))
    }
}

impl FitError {
    /// The error of a cluster without nodes.
    pub fn no_nodes() -> Self {
        FitError {
            num_all_nodes: 0,
            reasons: BTreeMap::new(),
            diagnosis: Diagnosis::default(),
        }
    }

    /// Whether preemption cannot help on `node`.
    pub fn is_unresolvable(&self, node: NodeId) -> bool {
        self.diagnosis.unresolvable.binary_search(&node).is_ok()
    }
}

impl fmt::Display for FitError {
    /// Upstream's text: `0/N nodes are available: <count> <reason>, ....`, the "count reason"
    /// strings sorted as strings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num_all_nodes == 0 {
            return f.write_str(NO_NODES_AVAILABLE);
        }
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

/// One node where preemption would let the pod in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// The pods to evict: budget-violating ones first, each group most important first.
    pub victims: Vec<PodId>,
    /// How many victims' eviction violates a PodDisruptionBudget.
    pub pdb_violations: usize,
}
