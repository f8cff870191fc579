//! The dry run on one node: which lower-priority pods must go for the pod to fit.

use crate::cluster::{Cluster, NodeId, PodId};
use crate::diagnosis::Candidate;
use crate::filters::PreparedFilters;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;

use super::budgets::DisruptionBudgets;
use super::importance;

/// Why a dry run found no candidate on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No pod of lower priority runs there.
    NoVictims,
    /// The pod does not fit even with every lower-priority pod gone, for these reasons.
    FailsWithoutThem(String),
    /// Every lower-priority pod fits back beside the pod.
    NoVictimNeeded,
}

impl Rejection {
    /// As upstream words it (the first two) for `--explain`.
    pub(super) fn describe(&self, node: &str, pod: &str) -> String {
        match self {
            Rejection::NoVictims => {
                format!(
                    "No victims found on node {node} for preemptor pod {pod}: no pod there has \
                     a lower priority than it"
                )
            }
            Rejection::FailsWithoutThem(reasons) => {
                format!("does not fit even without its lower-priority pods: {reasons}")
            }
            Rejection::NoVictimNeeded => {
                format!("expected at least one victim pod on node {node}")
            }
        }
    }
}

/// What a dry run reads.
pub(super) struct DryRun<'a> {
    pub cluster: &'a Cluster,
    pub nominator: &'a Nominator,
    pub budgets: &'a DisruptionBudgets,
    pub pod: &'a PodInfo,
    pub prepared: &'a PreparedFilters<'a>,
}

impl DryRun<'_> {
    /// Upstream's selectVictimsOnNode, on a copy of the node.
    pub(super) fn select_victims(&self, id: NodeId) -> Result<Candidate, Rejection> {
        let cluster = self.cluster;
        let node = cluster.node(id);
        let priority = self.pod.pod.priority;
        let mut potential: Vec<PodId> = node
            .pods
            .iter()
            .copied()
            .filter(|p| cluster.pod(*p).pod.priority < priority)
            .collect();
        if potential.is_empty() {
            return Err(Rejection::NoVictims);
        }
        let prepared = self.prepared;
        let mut copy = prepared.copy_of(node);
        for p in &potential {
            prepared.remove_pod(&mut copy, cluster.pod(*p), *p);
        }
        let nominated = self.nominator.for_node(id);
        let status = prepared.copy_status_with_nominated(&copy, nominated, self.pod);
        if !status.passes() {
            let reasons: Vec<&str> = status.reasons.iter().map(|r| r.as_str()).collect();
            return Err(Rejection::FailsWithoutThem(reasons.join(", ")));
        }
        potential.sort_by(|a, b| importance(cluster.pod(*a), cluster.pod(*b)));
        let (violating, others) = self.budgets.split_violating(cluster, &potential);
        let mut victims = Vec::new();
        let mut pdb_violations = 0;
        for (group, counts) in [(violating, true), (others, false)] {
            for p in group {
                let info = cluster.pod(p);
                prepared.add_pod(&mut copy, info, Some(p));
                if !prepared.copy_passes_with_nominated(&copy, nominated, self.pod) {
                    prepared.remove_pod(&mut copy, info, p);
                    victims.push(p);
                    pdb_violations += usize::from(counts);
                }
            }
        }
        if victims.is_empty() {
            // The cycle found the node failing with these very pods on it.
            return Err(Rejection::NoVictimNeeded);
        }
        Ok(Candidate {
            node: id,
            victims,
            pdb_violations,
        })
    }
}
