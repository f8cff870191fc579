//! Extenders: the Policy's extenders filter the nodes the rules left (upstream's
//! findNodesThatPassExtenders); their scores are asked for while prioritising.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId};
use crate::explain::{RejectedBy, Rejection};
use crate::extender::{self, Extender, ExtenderError, Filtered};
use crate::podinfo::PodInfo;

/// The extenders' filter over the nodes the rules found feasible; None when there is
/// nothing to ask: upstream calls extenders only when its own filters left some nodes.
pub(super) fn filter(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    pod: &PodInfo,
    feasible: &[NodeId],
    warnings: &mut Vec<ExtenderError>,
) -> Result<Option<Filtered>, ExtenderError> {
    if extenders.is_empty() || feasible.is_empty() {
        return Ok(None);
    }
    extender::filter(extenders, cluster, pod, feasible.to_vec(), warnings).map(Some)
}

/// The nodes the extenders kept (all of `feasible` without extenders), with their raw
/// score rows.
pub(super) fn kept(
    feasible: Vec<NodeId>,
    columns: Vec<Vec<i64>>,
    filtered: Option<&Filtered>,
) -> (Vec<NodeId>, Vec<Vec<i64>>) {
    match filtered {
        None => (feasible, columns),
        Some(f) => (
            f.feasible.clone(),
            select_rows(&feasible, columns, &f.feasible),
        ),
    }
}

/// The raw score rows of `kept` (a subset of `feasible`, in any order), in `kept`'s order.
fn select_rows(feasible: &[NodeId], columns: Vec<Vec<i64>>, kept: &[NodeId]) -> Vec<Vec<i64>> {
    let rows: FxHashMap<NodeId, usize> = feasible
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i))
        .collect();
    let picks: Vec<usize> = kept.iter().map(|id| rows[id]).collect();
    columns
        .into_iter()
        .map(|column| picks.iter().map(|row| column[*row]).collect())
        .collect()
}

/// Each node's extender failure messages, and for a node an extender dropped without a
/// message, a note naming the extender (explanations only).
pub(super) fn rejections(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    filtered: &Filtered,
) -> FxHashMap<NodeId, Vec<Rejection>> {
    let by = |index: usize| RejectedBy::Extender(extenders[index].name().to_string());
    let mut map: FxHashMap<NodeId, Vec<Rejection>> = FxHashMap::default();
    for (index, node, message) in &filtered.reasons {
        if let Some(id) = cluster.node_by_name(node) {
            map.entry(id).or_default().push(Rejection {
                by: by(*index),
                reason: message.clone(),
            });
        }
    }
    for (id, index) in &filtered.removed_by {
        map.entry(*id).or_insert_with(|| {
            vec![Rejection {
                by: by(*index),
                reason: format!("filtered out by extender {}", extenders[*index].name()),
            }]
        });
    }
    map
}
