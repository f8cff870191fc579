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

use crate::classes::{Answers, Raw};
use crate::cluster::NodeId;
use crate::framework::{Grouped, MAX_NODE_SCORE, NodeScore, ScorePrep};

/// The weighted total of every feasible node in visiting order from `start` (the class's
/// view, [`Answers::view_nodes`]), when the class's answers and the rules allow summing
/// them (see the module's comment); `weights` are the score rules' weights, in the order of
/// `preps`.
pub(super) fn summed(
    preps: &[ScorePrep<'_>],
    weights: &[i64],
    answers: &Answers,
    start: usize,
) -> Option<Vec<i64>> {
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
        .map(|w| (*w, KEPT_MAX))
        .chain(grouped.iter().map(|(_, w)| (*w, MAX_NODE_SCORE)))
        .try_fold(constant.unsigned_abs(), |sum, (w, top)| {
            sum.checked_add(w.unsigned_abs().checked_mul(top.unsigned_abs())?)
        })?;
    if bound > i64::MAX.unsigned_abs() {
        return None;
    }
    let sum = Sum {
        nodes,
        width: answers.width(),
        weights: &kept_weights,
        base: constant,
        tables: grouped.iter().map(|(g, w)| Table::of(g, *w)).collect(),
    };
    // The class that ran the cycle before keeps its columns in the nodes' order: summed
    // column by column, without reading rows by slot.
    let mut totals = match (answers.view_columns(start), answers.rows()) {
        (Some(columns), _) => sum.totals_of_columns(columns),
        (None, Raw::Tiny(raw)) => sum.totals(raw),
        (None, Raw::Narrow(raw)) => sum.totals(raw),
        (None, Raw::Wide(raw)) => sum.totals(raw),
    }?;
    add_apart(&mut totals, nodes, &grouped);
    Some(totals)
}

/// The largest kept raw score summed: an all-ones mask, so that OR-ing every score together
/// checks them all (a negative one sets the high bits). Rules that normalise to themselves
/// score within 0..=MAX_NODE_SCORE.
const KEPT_MAX: i64 = 127;

/// One grouped rule's scores by group, weighted.
struct Table<'g> {
    grouped: &'g Grouped,
    weighted: Vec<i64>,
}

impl<'g> Table<'g> {
    fn of(grouped: &'g Grouped, weight: i64) -> Self {
        Table {
            grouped,
            weighted: grouped.table.iter().map(|v| v * weight).collect(),
        }
    }

    /// The weighted score of the group of node `i`.
    #[inline]
    fn at(&self, i: usize) -> i64 {
        self.weighted[self.grouped.entry(i)]
    }
}

/// What every node's total is summed from.
struct Sum<'a> {
    nodes: &'a [NodeId],
    width: usize,
    /// The kept scorers' weights, in row order.
    weights: &'a [i64],
    base: i64,
    tables: Vec<Table<'a>>,
}

impl Sum<'_> {
    /// [`Sum::totals`] from the kept scores as columns in the nodes' order: each column
    /// weighed into the totals in one pass (which the compiler vectorises), then each
    /// rule's table.
    fn totals_of_columns(&self, columns: &[Vec<i64>]) -> Option<Vec<i64>> {
        if columns.len() != self.weights.len() {
            return None;
        }
        let mut totals = vec![self.base; self.nodes.len()];
        let mut seen = 0u64;
        for (column, w) in columns.iter().zip(self.weights) {
            if column.len() != totals.len() {
                return None;
            }
            for (t, v) in totals.iter_mut().zip(column) {
                seen |= *v as u64;
                *t = t.wrapping_add(v.wrapping_mul(*w));
            }
        }
        for table in &self.tables {
            for (i, t) in totals.iter_mut().enumerate() {
                *t = t.wrapping_add(table.at(i));
            }
        }
        (seen <= KEPT_MAX as u64).then_some(totals)
    }

    /// Every node's total but for the nodes set apart (see [`add_apart`]), in one pass; None
    /// when a kept score lies outside `0..=KEPT_MAX`.
    fn totals<T: Copy + Into<i64>>(&self, raw: &[T]) -> Option<Vec<i64>> {
        let mut seen = 0u64;
        let totals = match (self.weights, self.tables.as_slice()) {
            // The usual policy's shape (LeastRequested and BalancedAllocation kept, two
            // spreading rules grouped): a loop the compiler keeps in registers.
            (&[wa, wb], [ta, tb]) => self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let at = id.0 as usize * self.width;
                    let (a, b): (i64, i64) = (raw[at].into(), raw[at + 1].into());
                    seen |= (a | b) as u64;
                    self.base
                        .wrapping_add(a.wrapping_mul(wa))
                        .wrapping_add(b.wrapping_mul(wb))
                        .wrapping_add(ta.at(i))
                        .wrapping_add(tb.at(i))
                })
                .collect(),
            _ => self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let at = id.0 as usize * self.width;
                    let kept = raw[at..at + self.width].iter().zip(self.weights).fold(
                        self.base,
                        |total, (r, w)| {
                            let r: i64 = (*r).into();
                            seen |= r as u64;
                            total.wrapping_add(r.wrapping_mul(*w))
                        },
                    );
                    self.tables
                        .iter()
                        .fold(kept, |total, t| total.wrapping_add(t.at(i)))
                })
                .collect(),
        };
        // Wrapping above: sums of scores past KEPT_MAX are thrown away here.
        (seen <= KEPT_MAX as u64).then_some(totals)
    }
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

/// Corrects the totals of the nodes each rule sets apart (in the order of `nodes`): their
/// own score in place of their group's.
fn add_apart(totals: &mut [i64], nodes: &[NodeId], grouped: &[(Grouped, i64)]) {
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
