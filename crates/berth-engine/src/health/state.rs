//! What the protections publish for the filter rules: which nodes' circuit breakers are not
//! closed and which workloads are quarantined. Held by the [`crate::Cluster`], replaced
//! wholesale by whoever runs the trackers; both maps are empty unless a protection acts, so
//! the rules skip at once in a healthy cluster.

use std::collections::{BTreeMap, HashMap};

use super::Workload;

/// A node whose circuit breaker is not closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Circuit {
    /// Pods are kept off the node until `until` (seconds since the epoch).
    Open {
        /// When the breaker opened.
        since: i64,
        /// When it becomes half-open.
        until: i64,
        /// The node-attributed failures that opened it: (pod, workload, reason).
        failures: Vec<(String, String, String)>,
    },
    /// One probe pod may go to the node; `probe` names it once placed, and further pods wait
    /// for its verdict.
    HalfOpen {
        /// The probe pod (`namespace/name`), once placed.
        probe: Option<String>,
    },
}

/// A workload whose pods are kept off every node (but quarantine nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    /// When the quarantine began (the NotReady transition that completed the count).
    pub since: i64,
    /// When it ends by itself.
    pub until: i64,
    /// The nodes that went NotReady shortly after receiving the workload's pods, in order.
    pub nodes: Vec<String>,
}

/// The protections' current verdicts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectionState {
    circuits: HashMap<String, Circuit>,
    quarantines: BTreeMap<Workload, Quarantine>,
}

impl ProtectionState {
    /// Replaces the nodes whose breakers are not closed.
    pub fn set_circuits(&mut self, circuits: HashMap<String, Circuit>) {
        self.circuits = circuits;
    }

    /// Replaces the quarantined workloads.
    pub fn set_quarantines(&mut self, quarantines: BTreeMap<Workload, Quarantine>) {
        self.quarantines = quarantines;
    }

    /// Notes a pod (`namespace/name`) placed on `node`: a half-open breaker waiting for a
    /// probe takes it as its probe (the trackers do the same when they see the pod; this keeps
    /// a run of placements without a tracker, such as `simulate`'s, to one probe per node).
    pub fn placed(&mut self, node: &str, pod: &str) {
        if let Some(Circuit::HalfOpen {
            probe: probe @ None,
        }) = self.circuits.get_mut(node)
        {
            *probe = Some(pod.to_owned());
        }
    }

    /// Whether some node's breaker is open or half-open.
    pub fn any_circuit(&self) -> bool {
        !self.circuits.is_empty()
    }

    /// The breaker of `node`, when not closed.
    pub fn circuit(&self, node: &str) -> Option<&Circuit> {
        self.circuits.get(node)
    }

    /// Every node whose breaker is not closed.
    pub fn circuits(&self) -> &HashMap<String, Circuit> {
        &self.circuits
    }

    /// The quarantine of `workload`, if it is quarantined.
    pub fn quarantine(&self, workload: &Workload) -> Option<&Quarantine> {
        self.quarantines.get(workload)
    }

    /// Every quarantined workload.
    pub fn quarantines(&self) -> &BTreeMap<Workload, Quarantine> {
        &self.quarantines
    }
}
