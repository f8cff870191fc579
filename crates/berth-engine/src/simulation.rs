//! Scheduling a batch of pending pods against a cluster, one at a time, in queue order: the
//! engine side of `berth simulate` and `berth bench`.

use crate::cluster::{Cluster, ClusterError};
use crate::model::Pod;
use crate::scheduler::{Decision, Scheduler};

/// Sorts pending pods into scheduling-queue order: higher priority first, then older
/// creation time, then the order given (the sort is stable).
pub fn queue_order(pods: &mut [Pod]) {
    pods.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.meta.creation_timestamp.cmp(&b.meta.creation_timestamp))
    });
}

/// The result of scheduling one pod.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `namespace/name`.
    pub pod: String,
    /// The chosen node's name.
    pub node: Option<String>,
    /// The decision, with the fit error and explanation if any.
    pub decision: Decision,
}

impl Outcome {
    /// The FitError text when the pod fits nowhere.
    pub fn message(&self) -> Option<String> {
        self.decision.fit_error.as_ref().map(|e| e.to_string())
    }
}

/// Schedules `pending` (already in queue order) one by one. A placed pod is assigned at once,
/// so the next pod sees it; a pod that fits nowhere stays out of the cluster. Fails if a
/// pending pod has the name of a pod already in the cluster.
pub fn schedule_all(
    cluster: &mut Cluster,
    scheduler: &mut Scheduler,
    pending: Vec<Pod>,
    explain: bool,
    mut each: impl FnMut(&Outcome),
) -> Result<(), ClusterError> {
    for pod in pending {
        let info = cluster.compile_pod(pod);
        let decision = scheduler.schedule(cluster, &info, explain);
        let key = info.key();
        let node = decision.node.map(|n| cluster.node(n).name().to_string());
        if let Some(node_id) = decision.node {
            crate::rules::volume_binding::bind_pod_volumes(cluster, &info, node_id);
            cluster.insert_pod(info, Some(node_id))?;
        }
        each(&Outcome {
            pod: key,
            node,
            decision,
        });
    }
    Ok(())
}
