//! Totals summed from a class's kept answers and the spreading rules' grouped scores, for a
//! cycle over every node whose class knows every answer: the same totals as normalising
//! and weighing every column (`prioritise.rs`), at a fraction of the work.
//!
//! The kept raw scores of rules that normalise to themselves (LeastRequested,
//! BalancedAllocation) are weighed and summed straight from the class's rows; each rule
//! whose raw scores the class does not keep gives its normalised scores by group
//! ([`NodeScore::grouped`]: one score per zone, the few nodes running matching pods apart).
//! Any other rule, or a score outside the range whose sums are known not to overflow,
//! leaves the cycle to the usual path.

use crate::classes::{Answers, SUMMED_MAX};
use crate::cluster::NodeId;
use crate::framework::{Grouped, MAX_NODE_SCORE, NodeScore, ScorePrep};

/// Every feasible node in visiting order from `start` and its weighted total, when the
/// class's answers and the rules allow summing them (see the module's comment); `weights`
/// are the score rules' weights, in the order of `preps`.
pub(super) fn summed(
    preps: &[ScorePrep<'_>],
    weights: &[i64],
    answers: &Answers,
    start: usize,
) -> Option<(Vec<NodeId>, Vec<i64>)> {
    let nodes = answers.view_nodes(start).filter(|n| !n.is_empty())?;
    let feasible = |id: NodeId| answers.feasible(id.0 as usize) == Some(true);
    let mut constant = 0i64;
    let mut kept_weights = Vec::new();
    let mut grouped: Vec<(Grouped, i64)> = Vec::new();
    for (prep, weight) in preps.iter().zip(weights) {
        match prep {
            ScorePrep::Constant(v) | ScorePrep::Uniform { normalized: v, .. } => {
                constant = constant.saturating_add(v.saturating_mul(*weight));
            }
            ScorePrep::PerNode(s) if s.keeps_raw() => {
                if !s.normalizes_to_itself() {
                    return None;
                }
                kept_weights.push(*weight);
            }
            ScorePrep::PerNode(s) => {
                grouped.push((grouped_in_range(s.as_ref(), nodes, &feasible)?, *weight))
            }
        }
    }
    // The largest sum's magnitude, every score at the top of its range: within i64, the
    // sums below are exact, as the usual path's are.
    let bound = kept_weights
        .iter()
        .map(|w| (*w, SUMMED_MAX))
        .chain(grouped.iter().map(|(_, w)| (*w, MAX_NODE_SCORE)))
        .try_fold(constant.unsigned_abs(), |sum, (w, top)| {
            sum.checked_add(w.unsigned_abs().checked_mul(top.unsigned_abs())?)
        })?;
    if bound > i64::MAX.unsigned_abs() {
        return None;
    }
    let mut totals = answers.weighted_sums(nodes, &kept_weights, constant)?;
    add_grouped(&mut totals, nodes, &grouped);
    Some((nodes.to_vec(), totals))
}

/// The rule's grouped scores when it gives them and every one lies in
/// `0..=MAX_NODE_SCORE`.
fn grouped_in_range(
    s: &dyn NodeScore,
    nodes: &[NodeId],
    feasible: &dyn Fn(NodeId) -> bool,
) -> Option<Grouped> {
    let grouped = s.grouped(nodes, feasible)?;
    let in_range = |v: &i64| (0..=MAX_NODE_SCORE).contains(v);
    let whole = grouped.groups.len() == nodes.len() && !grouped.table.is_empty();
    (whole && grouped.table.iter().all(in_range) && grouped.apart.iter().all(|(_, v)| in_range(v)))
        .then_some(grouped)
}

/// Adds each rule's weighted grouped score to `totals` (in the order of `nodes`): the
/// group's score, or the node's own for a node set apart.
fn add_grouped(totals: &mut [i64], nodes: &[NodeId], grouped: &[(Grouped, i64)]) {
    for (g, weight) in grouped {
        for (i, t) in totals.iter_mut().enumerate() {
            *t += weight * g.group_score(i);
        }
    }
    // The nodes set apart are few (those running matching pods): their rows are found in
    // one pass over the list, by slot.
    let apart: Vec<NodeId> = grouped
        .iter()
        .flat_map(|(g, _)| g.apart.iter().map(|(id, _)| *id))
        .collect();
    if apart.is_empty() {
        return;
    }
    let most = nodes.iter().map(|id| id.0).max().unwrap_or(0) as usize;
    let mut marked = vec![false; most + 1];
    for id in &apart {
        if let Some(m) = marked.get_mut(id.0 as usize) {
            *m = true;
        }
    }
    for (i, id) in nodes.iter().enumerate() {
        if !marked[id.0 as usize] {
            continue;
        }
        for (g, weight) in grouped {
            if let Some((_, own)) = g.apart.iter().find(|(a, _)| a == id) {
                totals[i] += weight * (own - g.group_score(i));
            }
        }
    }
}
