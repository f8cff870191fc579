//! The choice of a cycle over every node whose class knows every answer, made from the
//! class's kept answers and the spreading rules' grouped scores: the node a cycle that
//! normalises and weighs every column (`prioritise.rs`) and selects among every total
//! (`select.rs`) would choose, drawn from the same generator the same way, at a fraction of
//! the work.
//!
//! The kept raw scores of rules that normalise to themselves (LeastRequested,
//! BalancedAllocation) are weighed and summed; each rule whose raw scores the class does not
//! keep gives its normalised scores by label value ([`NodeScore::grouped`]: one score per
//! zone, the few nodes running matching pods apart). The class of the last cycle too (pods
//! of one controller arriving together) chooses from its ranking
//! ([`crate::classes::RankedAnswers`]), which reads a few counts; any other class from its
//! tally ([`crate::classes::TalliedAnswers`]: counts, then a walk to the drawn node), or,
//! where no tally fits, sums every feasible node's total in one pass over its view and
//! selects as `select.rs` does. Any other rule, or a score outside the range whose sums are
//! known not to overflow, leaves the cycle to the usual path.

use std::sync::Arc;

use rand_chacha::ChaCha8Rng;

use crate::classes::{Answers, ComboCache, GroupScores, KEPT_MAX, RankedFor, Raw, TallyFor};
use crate::cluster::{Cluster, NodeId};
use crate::framework::{FeasibleNodes, Grouped, MAX_NODE_SCORE, NodeScore, ScorePrep};
use crate::labels::Sym;
use crate::rules::domain_rows::{DomainRows, Domains};

use super::select::{draw, select_best};

/// What a cycle that wants only its choice sums with: the score rules' weights (in the order
/// of the preparations), the tie-breaking generator, and the domains of the views' nodes
/// kept across cycles.
pub(super) struct Summing<'a> {
    pub weights: &'a [i64],
    pub rng: &'a mut ChaCha8Rng,
    pub domains: &'a DomainRows,
    pub combos: &'a mut ComboCache,
}

/// How a summed cycle found its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// From the class's ranking.
    Ranked,
    /// From the class's tally.
    Tallied,
    /// From every feasible node's total.
    Summed,
}

/// The node with the highest weighted total among the feasible nodes the class's answers
/// give (every one known), ties drawn as [`select_best`] draws them over the nodes in
/// visiting order from `start`, when the class's answers and the rules allow summing (see
/// the module's comment).
pub(super) fn summed(
    cluster: &Cluster,
    preps: &[ScorePrep<'_>],
    summing: &mut Summing<'_>,
    answers: &mut Answers,
    start: usize,
) -> Option<(NodeId, Way)> {
    let mut constant = 0i64;
    let mut weights = Vec::new();
    let mut grouped: Vec<(&dyn NodeScore, i64)> = Vec::new();
    let mut keys = Vec::new();
    for (prep, weight) in preps.iter().zip(summing.weights) {
        match prep {
            ScorePrep::Constant(v) | ScorePrep::Uniform { normalized: v, .. } => {
                constant = constant.saturating_add(v.saturating_mul(*weight));
            }
            ScorePrep::PerNode(s) if s.keeps_raw() => {
                if !s.normalizes_to_itself() {
                    return None;
                }
                weights.push(*weight);
            }
            ScorePrep::PerNode(s) => {
                keys.push(s.group_key()?);
                grouped.push((s.as_ref(), *weight));
            }
        }
    }
    // The largest sum's magnitude, every score at the top of its range: within i64, the
    // sums below are exact, as the usual path's are.
    let bound = weights
        .iter()
        .map(|w| (*w, KEPT_MAX))
        .chain(grouped.iter().map(|(_, w)| (*w, MAX_NODE_SCORE)))
        .try_fold(constant.unsigned_abs(), |sum, (w, top)| {
            sum.checked_add(w.unsigned_abs().checked_mul(top.unsigned_abs())?)
        })?;
    if bound > i64::MAX.unsigned_abs() {
        return None;
    }
    let order = cluster.node_order();
    let built_for = RankedFor {
        start: start % order.len().max(1),
        epoch: cluster.changes().epoch(),
        nodes: order.len(),
        weights,
        keys,
    };
    let weigh = |g: Grouped, w: i64| GroupScores {
        table: g.table.iter().map(|(v, s)| (*v, s * w)).collect(),
        unlabelled: g.unlabelled * w,
        apart: g.apart.iter().map(|(id, s)| (*id, s * w)).collect(),
    };
    // Each grouped rule's weighted scores over the feasible nodes a choice counts.
    let weighed = |feasible: &dyn FeasibleNodes| -> Option<Vec<GroupScores>> {
        grouped
            .iter()
            .map(|(s, w)| Some(weigh(grouped_in_range(*s, feasible)?, *w)))
            .collect()
    };
    if let Some(mut ranked) = answers.ranking(cluster, built_for.clone()) {
        let rules = weighed(&ranked)?;
        let rng = &mut *summing.rng;
        let rank = ranked.choose(constant, &rules, |ties| draw(rng, ties))?;
        let node = order.get((start + rank) % order.len())?;
        return Some((*node, Way::Ranked));
    }
    let tally_for = TallyFor {
        epoch: built_for.epoch,
        weights: built_for.weights.clone(),
        keys: built_for.keys.clone(),
    };
    let combos = &mut *summing.combos;
    let keys = &built_for.keys;
    if let Some(mut tallied) = answers.tally(start, tally_for, || combos.of(cluster, keys)) {
        let rules = weighed(&tallied)?;
        let rng = &mut *summing.rng;
        let node = tallied.choose(constant, &rules, |ties| draw(rng, ties))?;
        return Some((node, Way::Tallied));
    }
    let nodes = answers.view_nodes(start).filter(|n| !n.is_empty())?;
    let view = ViewNodes {
        nodes,
        keys: &built_for.keys,
        domains: built_for
            .keys
            .iter()
            .map(|key| summing.domains.of(cluster, *key, nodes))
            .collect(),
        answers,
    };
    let rules: Vec<(GroupScores, Arc<Domains>)> = grouped
        .iter()
        .zip(&view.domains)
        .map(|((s, w), domains)| {
            let scores = weigh(grouped_in_range(*s, &view)?, *w);
            Some((scores, Arc::clone(domains)))
        })
        .collect::<Option<_>>()?;
    let tables = rules
        .iter()
        .map(|(scores, domains)| Table::of(scores, domains))
        .collect::<Option<Vec<_>>>()?;
    let sum = Sum {
        nodes,
        width: answers.width(),
        weights: &built_for.weights,
        base: constant,
        tables,
    };
    let mut totals = match answers.rows() {
        Raw::Tiny(raw) => sum.totals(raw),
        Raw::Narrow(raw) => sum.totals(raw),
        Raw::Wide(raw) => sum.totals(raw),
    }?;
    add_apart(&mut totals, nodes, &sum.tables, &rules);
    let best = select_best(summing.rng, &totals);
    Some((*nodes.get(best)?, Way::Summed))
}

/// The rule's grouped scores when it gives them and every one lies in
/// `0..=MAX_NODE_SCORE`.
fn grouped_in_range(s: &dyn NodeScore, feasible: &dyn FeasibleNodes) -> Option<Grouped> {
    let grouped = s.grouped(feasible)?;
    let in_range = |v: &i64| (0..=MAX_NODE_SCORE).contains(v);
    (grouped.table.iter().all(|(_, v)| in_range(v))
        && in_range(&grouped.unlabelled)
        && grouped.apart.iter().all(|(_, v)| in_range(v)))
    .then_some(grouped)
}

/// A class's view (its feasible nodes in visiting order) as the grouped scores read it,
/// with its domains under each grouped rule's label (`keys`), looked up once a cycle.
struct ViewNodes<'a> {
    nodes: &'a [NodeId],
    keys: &'a [Sym],
    domains: Vec<Arc<Domains>>,
    answers: &'a Answers,
}

impl FeasibleNodes for ViewNodes<'_> {
    fn count(&self) -> usize {
        self.nodes.len()
    }

    fn contains(&self, id: NodeId) -> bool {
        self.answers.feasible(id.0 as usize) == Some(true)
    }

    fn by_value(&self, key: Sym) -> Option<(Vec<(Sym, u32)>, u32)> {
        let domains = &self.domains[self.keys.iter().position(|k| *k == key)?];
        let values = domains
            .values
            .iter()
            .copied()
            .zip(domains.counts.iter().copied());
        Some((values.collect(), domains.unlabelled_count))
    }
}

/// The largest kept raw score summed, as an all-ones mask: OR-ing every score together
/// checks them all (a negative one sets the high bits).
const KEPT_MASK: u64 = KEPT_MAX as u64;

/// One grouped rule's weighted scores by the view's domains: node `i` of the view reads
/// `weighted[domains.of[i]]`, the nodes without the label the last entry.
struct Table<'g> {
    domains: &'g Domains,
    weighted: Vec<i64>,
}

impl<'g> Table<'g> {
    /// None when the rule scores no value some node of the view carries.
    fn of(scores: &GroupScores, domains: &'g Domains) -> Option<Self> {
        let mut weighted = domains
            .values
            .iter()
            .map(|v| scores.table.iter().find(|(t, _)| t == v).map(|(_, s)| *s))
            .collect::<Option<Vec<i64>>>()?;
        weighted.push(scores.unlabelled);
        Some(Table { domains, weighted })
    }

    /// The weighted score of the domain of node `i` of the view.
    #[inline]
    fn at(&self, i: usize) -> i64 {
        self.weighted[(self.domains.of[i] as usize).min(self.weighted.len() - 1)]
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
        (seen <= KEPT_MASK).then_some(totals)
    }
}

/// Corrects the totals of the nodes each rule sets apart (in the order of `nodes`): their
/// own score in place of their domain's.
fn add_apart(
    totals: &mut [i64],
    nodes: &[NodeId],
    tables: &[Table<'_>],
    rules: &[(GroupScores, Arc<Domains>)],
) {
    // The nodes set apart are few (those running matching pods): their rows are found in
    // one pass over the list, by slot.
    let apart: Vec<NodeId> = rules
        .iter()
        .flat_map(|(r, _)| r.apart.iter().map(|(id, _)| *id))
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
        for ((rule, _), table) in rules.iter().zip(tables) {
            if let Some((_, own)) = rule.apart.iter().find(|(a, _)| a == id) {
                totals[i] += own - table.at(i);
            }
        }
    }
}
