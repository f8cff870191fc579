//! A class's feasible nodes counted by kept sum in a small table, so that a cycle of a
//! class whose pods take turns with other classes' picks the best without adding up every
//! node's total.
//!
//! The same arithmetic as [`super::Ranked`] (a node's total is its kept scores' weighted sum
//! plus its label values' grouped scores, so the best total is the best over each
//! combination of values of its highest kept sum, and over the nodes set apart), kept
//! lighter: per combination, one count per possible kept sum (the sums of rules that
//! normalise to themselves lie in a short range), moved as the class keeps each answer. The
//! ranking also lists each combination's nodes in visiting order; with many classes taking
//! turns those lists fall out of the caches and each answer kept costs misses, while these
//! counts stay a few lines per class. So the tied node the draw picks is found by walking
//! the class's view in visiting order instead, reading only the nodes' combinations (one
//! array shared by every class, [`Combos`]) until a tied combination's node comes up.

use std::sync::Arc;

use super::{KEPT_MAX, Raw};
use crate::classes::ranked::{GroupScores, combo_totals, counts_by_value};
use crate::cluster::Cluster;
use crate::framework::FeasibleNodes;
use crate::labels::Sym;
use crate::types::NodeId;

/// The combination of a node slot that holds no node, in [`Combos::of`].
const NO_NODE: u16 = u16::MAX;

/// Fewest counts a tally may keep, whatever the cluster's size (see [`most_counts`]).
const MIN_COUNTS: usize = 16_384;

/// Most counts a tally keeps (combinations times possible sums) on a cluster of `slots`
/// node slots: one per node slot, 16,384 at least, which the classes' memory budget counts
/// for every class (see `capacity` in `classes.rs`). Past it (a label with a value per
/// node, large weights) the class sums every total instead.
pub(super) fn most_counts(slots: usize) -> usize {
    slots.max(MIN_COUNTS)
}

/// Every node slot's combination of values of some labels, shared by the classes whose
/// grouped rules read those labels.
#[derive(Debug)]
pub(crate) struct Combos {
    epoch: u64,
    keys: Vec<Sym>,
    /// By node slot, its combination ([`NO_NODE`] for a slot without a node).
    of: Vec<u16>,
    /// Each combination's value of each label.
    values: Vec<Vec<Option<Sym>>>,
}

impl Combos {
    /// The combinations of `keys`' values over the nodes of `cluster`; None when they
    /// combine in more ways than a `u16` names.
    fn build(cluster: &Cluster, keys: &[Sym]) -> Option<Combos> {
        let columns: Vec<Option<&[Option<Sym>]>> =
            keys.iter().map(|k| cluster.label_column(*k)).collect();
        let mut combos = Combos {
            epoch: cluster.changes().epoch(),
            keys: keys.to_vec(),
            of: vec![NO_NODE; cluster.node_slots()],
            values: Vec::new(),
        };
        let mut values: Vec<Option<Sym>> = vec![None; keys.len()];
        for id in cluster.node_order() {
            let slot = id.0 as usize;
            for (v, column) in values.iter_mut().zip(&columns) {
                *v = column.and_then(|c| c.get(slot).copied().flatten());
            }
            let c = match combos.values.iter().position(|c| *c == values) {
                Some(c) => c,
                None => {
                    combos.values.push(values.clone());
                    combos.values.len() - 1
                }
            };
            *combos.of.get_mut(slot)? = u16::try_from(c).ok().filter(|c| *c != NO_NODE)?;
        }
        Some(combos)
    }
}

/// The [`Combos`] of the labels classes' grouped rules read, kept while the cluster's epoch
/// holds (node labels change only with it).
#[derive(Debug, Default)]
pub(crate) struct ComboCache {
    kept: Vec<Arc<Combos>>,
}

/// How many label sets [`ComboCache`] keeps: policies group by one or two.
const COMBO_SETS: usize = 4;

impl ComboCache {
    /// The combinations of `keys` over `cluster`'s nodes.
    pub fn of(&mut self, cluster: &Cluster, keys: &[Sym]) -> Option<Arc<Combos>> {
        let epoch = cluster.changes().epoch();
        self.kept.retain(|c| c.epoch == epoch);
        if let Some(c) = self.kept.iter().find(|c| c.keys == keys) {
            return Some(Arc::clone(c));
        }
        let combos = Arc::new(Combos::build(cluster, keys)?);
        if self.kept.len() == COMBO_SETS {
            self.kept.remove(0);
        }
        self.kept.push(Arc::clone(&combos));
        Some(combos)
    }
}

/// What a tally counts for: the cluster's epoch, the kept scorers' weights (in row order)
/// and each grouped rule's label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TallyFor {
    pub epoch: u64,
    pub weights: Vec<i64>,
    pub keys: Vec<Sym>,
}

/// See the module's comment. It counts the nodes whose answer is known and feasible: a
/// node's count leaves when its answer is forgotten (catching up walks many nodes in a
/// tight loop, so reading their rows overlaps), and comes back when it is kept anew.
#[derive(Debug)]
pub(crate) struct Tally {
    built_for: TallyFor,
    combos: Arc<Combos>,
    /// Kept sums lie in `0..span`.
    span: usize,
    /// Per combination, per kept sum, how many feasible nodes: `counts[c * span + sum]`.
    counts: Vec<u32>,
    /// Per combination, a sum no count lies above.
    top: Vec<u32>,
    /// Per combination, how many feasible nodes.
    feasible_in: Vec<u32>,
    feasible: usize,
}

impl Tally {
    /// The tally of every node from the class's kept verdicts (`feasible`, by slot; every
    /// one known) and raw score rows (`rows`: the rows and their width); None when a
    /// weight is negative, the counts would take more than [`most_counts`] or a kept score
    /// lies outside `0..=KEPT_MAX`.
    pub(super) fn build(
        built_for: TallyFor,
        combos: Arc<Combos>,
        feasible: &[bool],
        rows: (&Raw, usize),
    ) -> Option<Tally> {
        let (raw, width) = rows;
        if built_for.weights.len() != width
            || built_for.keys != combos.keys
            || built_for.epoch != combos.epoch
        {
            return None;
        }
        let span = built_for.weights.iter().try_fold(1usize, |span, w| {
            let w = usize::try_from(*w).ok()?;
            span.checked_add(w.checked_mul(KEPT_MAX as usize)?)
        })?;
        let cells = span.checked_mul(combos.values.len())?;
        if cells > most_counts(combos.of.len()) {
            return None;
        }
        let mut tally = Tally {
            span,
            counts: vec![0; cells],
            top: vec![0; combos.values.len()],
            feasible_in: vec![0; combos.values.len()],
            feasible: 0,
            built_for,
            combos,
        };
        let combos = Arc::clone(&tally.combos);
        for (slot, c) in combos.of.iter().enumerate() {
            if *c == NO_NODE || !*feasible.get(slot)? {
                continue;
            }
            let sum = raw.weighted(slot, width, &tally.built_for.weights)?;
            tally.count(usize::from(*c), sum, true);
        }
        Some(tally)
    }

    /// What the tally counts for.
    pub(super) fn built_for(&self) -> &TallyFor {
        &self.built_for
    }

    /// The kept scorers' weights, in row order.
    pub(super) fn weights(&self) -> &[i64] {
        &self.built_for.weights
    }

    /// Counts node slot `slot` with kept sum `sum` (`add`), or no longer (its answer was
    /// forgotten or is about to be replaced).
    #[inline]
    pub(super) fn counted(&mut self, slot: usize, sum: i64, add: bool) {
        if let Some(c) = self.combos.of.get(slot).copied().filter(|c| *c != NO_NODE) {
            self.count(usize::from(c), sum, add);
        }
    }

    /// Counts one more (`add`) or one fewer feasible node of combination `c` with kept sum
    /// `sum` (within the span: the sums of scores within `0..=KEPT_MAX`).
    #[inline]
    fn count(&mut self, c: usize, sum: i64, add: bool) {
        let Some(s) = usize::try_from(sum).ok().filter(|s| *s < self.span) else {
            return;
        };
        let cell = &mut self.counts[c * self.span + s];
        if add {
            *cell += 1;
            self.feasible_in[c] += 1;
            self.feasible += 1;
            self.top[c] = self.top[c].max(s as u32);
        } else if *cell > 0 {
            *cell -= 1;
            self.feasible_in[c] -= 1;
            self.feasible -= 1;
        }
    }

    /// The highest kept sum of combination `c` with a count, lowering its bound to it.
    fn highest(&mut self, c: usize) -> Option<usize> {
        let row = &self.counts[c * self.span..(c + 1) * self.span];
        let top = (0..=self.top[c] as usize).rev().find(|s| row[*s] > 0)?;
        self.top[c] = top as u32;
        Some(top)
    }
}

/// A class's tally with what choosing from it reads: the verdicts and kept rows it counts
/// (by slot) and the class's view (its feasible nodes in visiting order).
pub(crate) struct TalliedAnswers<'a> {
    pub(super) tally: &'a mut Tally,
    pub(super) feasible: &'a [bool],
    pub(super) rows: (&'a Raw, usize),
    pub(super) view: &'a [NodeId],
}

impl TalliedAnswers<'_> {
    /// The kept sum of slot `slot`.
    fn sum(&self, slot: usize) -> Option<i64> {
        let (raw, width) = self.rows;
        raw.weighted(slot, width, &self.tally.built_for.weights)
    }

    /// The node with the highest total, `base` plus its kept sum plus each rule's score of
    /// it (`rules`, in the order of the labels counted for), ties drawn by `draw` (given
    /// how many nodes tie, it returns which of them, in visiting order, to take); None when
    /// no node is feasible or a rule scores no value some feasible node carries.
    pub fn choose(
        &mut self,
        base: i64,
        rules: &[GroupScores],
        draw: impl FnOnce(usize) -> usize,
    ) -> Option<NodeId> {
        if rules.len() != self.tally.built_for.keys.len() {
            return None;
        }
        let combos = Arc::clone(&self.tally.combos);
        let combo_totals = combo_totals(&combos.values, &self.tally.feasible_in, rules, base)?;
        // Each rule's nodes set apart with their own scores, by slot and ascending (a
        // workload's pods run on up to a hundred nodes, each looked up once per rule).
        let own: Vec<Vec<(u32, i64)>> = rules
            .iter()
            .map(|rule| {
                let mut own: Vec<(u32, i64)> =
                    rule.apart.iter().map(|(id, s)| (id.0, *s)).collect();
                own.sort_unstable_by_key(|(slot, _)| *slot);
                own
            })
            .collect();
        // The feasible nodes set apart, by slot and ascending, with their totals.
        let mut apart: Vec<u32> = own
            .iter()
            .flatten()
            .map(|(slot, _)| *slot)
            .filter(|slot| self.feasible.get(*slot as usize) == Some(&true))
            .collect();
        apart.sort_unstable();
        apart.dedup();
        let apart: Vec<(u32, i64, usize, i64)> = apart
            .into_iter()
            .map(|slot| {
                let c = usize::from(*combos.of.get(slot as usize)?);
                let values = combos.values.get(c)?;
                let scores = values.iter().zip(rules).zip(&own).map(|((v, rule), own)| {
                    match own.binary_search_by_key(&slot, |(s, _)| *s) {
                        Ok(at) => Some(own[at].1),
                        Err(_) => rule.at(*v),
                    }
                });
                let sum = self.sum(slot as usize)?;
                Some((slot, sum, c, base + sum + scores.sum::<Option<i64>>()?))
            })
            .collect::<Option<_>>()?;
        // Each combination's highest kept sum over its nodes not set apart: the true
        // highest first (a bound kept across cycles), then without the nodes set apart.
        let tops: Vec<Option<usize>> = (0..combos.values.len())
            .map(|c| self.tally.highest(c))
            .collect();
        for (_, sum, c, _) in &apart {
            self.tally.count(*c, *sum, false);
        }
        let span = self.tally.span;
        let best_in = |tally: &Tally, c: usize| {
            let row = &tally.counts[c * span..(c + 1) * span];
            let top = tops[c]?;
            (0..=top).rev().find(|s| row[*s] > 0).map(|s| (s, row[s]))
        };
        let best_of: Vec<Option<(usize, u32)>> = (0..combos.values.len())
            .map(|c| best_in(self.tally, c))
            .collect();
        for (_, sum, c, _) in &apart {
            self.tally.count(*c, *sum, true);
        }
        let best = best_of
            .iter()
            .zip(&combo_totals)
            .filter_map(|(b, t)| Some((*t)? + (*b)?.0 as i64))
            .chain(apart.iter().map(|(.., t)| *t))
            .max()?;
        // Per combination, the kept sum its tied nodes have (none: no tied node).
        let tied: Vec<Option<i64>> = best_of
            .iter()
            .zip(&combo_totals)
            .map(|(b, t)| {
                let (s, _) = (*b)?;
                ((*t)? + s as i64 == best).then_some(s as i64)
            })
            .collect();
        let ties = best_of
            .iter()
            .zip(&tied)
            .filter_map(|(b, t)| t.and((*b).map(|(_, n)| n as usize)))
            .sum::<usize>()
            + apart.iter().filter(|(.., t)| *t == best).count();
        let pick = draw(ties);
        // The combinations holding a node set apart at the best total.
        let mut apart_tied = vec![false; combos.values.len()];
        for (_, _, c, t) in &apart {
            apart_tied[*c] |= *t == best;
        }
        // The nodes set apart by slot, one bit each: most tied nodes are not.
        let mut apart_bits = vec![0u64; combos.of.len() / 64 + 1];
        for (slot, ..) in &apart {
            apart_bits[*slot as usize / 64] |= 1 << (slot % 64);
        }
        let marked = |slot: usize| apart_bits[slot / 64] >> (slot % 64) & 1 == 1;
        // The pick-th tied node in visiting order: a combination's node at its tied sum and
        // not set apart, or a node set apart at the best total. Most nodes are passed over
        // on their combination alone.
        let mut left = pick;
        for id in self.view {
            let slot = id.0 as usize;
            let Some(c) = combos.of.get(slot).map(|c| usize::from(*c)) else {
                continue;
            };
            let best_apart = || {
                apart
                    .binary_search_by_key(&id.0, |(s, ..)| *s)
                    .is_ok_and(|at| apart[at].3 == best)
            };
            let hit = match tied.get(c).copied().flatten() {
                Some(want) if self.sum(slot) == Some(want) => !marked(slot) || best_apart(),
                _ if apart_tied.get(c) == Some(&true) => marked(slot) && best_apart(),
                _ => false,
            };
            if hit {
                if left == 0 {
                    return Some(*id);
                }
                left -= 1;
            }
        }
        None
    }
}

impl FeasibleNodes for TalliedAnswers<'_> {
    fn count(&self) -> usize {
        self.tally.feasible
    }

    fn contains(&self, id: NodeId) -> bool {
        self.feasible.get(id.0 as usize) == Some(&true)
    }

    fn by_value(&self, key: Sym) -> Option<(Vec<(Sym, u32)>, u32)> {
        let tally = &*self.tally;
        let k = tally.built_for.keys.iter().position(|b| *b == key)?;
        Some(counts_by_value(&tally.combos.values, &tally.feasible_in, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ranked::tests::{Case, brute_force, case, scores};
    use crate::classes::ranked::weighted_row;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The class's view: its feasible nodes in visiting order from `start`.
    fn view(c: &Case, start: usize) -> Vec<NodeId> {
        let order = c.cluster.node_order();
        (0..order.len())
            .map(|r| order[(start + r) % order.len()])
            .filter(|id| c.feasible[id.0 as usize])
            .collect()
    }

    /// Choosing from the tally picks the node that summing every total and drawing among
    /// the best picks, as built and after answers move (feasible nodes turning infeasible
    /// and back, sums changing, nodes set apart and back).
    #[test]
    fn tally_chooses_as_every_total_would() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut compared = 0;
        for _ in 0..300 {
            let mut c = case(&mut rng);
            let start = rng.random_range(0..c.cluster.node_count());
            let built_for = TallyFor {
                epoch: c.cluster.changes().epoch(),
                weights: c.weights.clone(),
                keys: c.keys.clone(),
            };
            let combos = Arc::new(Combos::build(&c.cluster, &c.keys).expect("combos"));
            let raw = Raw::Tiny(c.raw.clone());
            let mut tally = Tally::build(built_for, combos, &c.feasible, (&raw, 2)).expect("tally");
            for _ in 0..6 {
                let rules: Vec<GroupScores> =
                    c.keys.iter().map(|k| scores(&mut rng, &c, *k)).collect();
                let base = rng.random_range(0..10);
                let seed = rng.random::<u64>();
                let raw = Raw::Tiny(c.raw.clone());
                let view = view(&c, start);
                let mut answers = TalliedAnswers {
                    tally: &mut tally,
                    feasible: &c.feasible,
                    rows: (&raw, 2),
                    view: &view,
                };
                let mut ties = 0;
                let chosen = answers.choose(base, &rules, |n| {
                    ties = n;
                    (seed as usize) % n
                });
                let order = c.cluster.node_order();
                let want = brute_force(&c, start, base, &rules, seed as usize)
                    .map(|r| order[(start + r) % order.len()]);
                assert_eq!(chosen, want, "start {start}, {ties} tied");
                compared += usize::from(ties > 1);
                // Some answers move, as a class forgets and keeps them.
                for _ in 0..rng.random_range(0..8) {
                    let slot = rng.random_range(0..c.feasible.len());
                    let feasible = rng.random_bool(0.7);
                    let row = [rng.random_range(0..4) * 30, rng.random_range(0..4) * 30];
                    if c.feasible[slot] {
                        let old = [c.raw[slot * 2], c.raw[slot * 2 + 1]];
                        let old = weighted_row(&old, &c.weights).expect("in range");
                        tally.counted(slot, old, false);
                    }
                    if feasible {
                        let new = weighted_row(&row, &c.weights).expect("in range");
                        tally.counted(slot, new, true);
                    }
                    c.feasible[slot] = feasible;
                    c.raw[slot * 2] = row[0] as u8;
                    c.raw[slot * 2 + 1] = row[1] as u8;
                }
            }
        }
        // (236 of the 1,800 choices draw among tied nodes.)
        assert!(compared > 150, "only {compared} choices among ties");
    }

    /// Weights whose sums would need more counts than a tally keeps, and negative ones,
    /// leave the class to summing every total.
    #[test]
    fn wide_or_negative_weights_are_not_tallied() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let c = case(&mut rng);
        let combos = Arc::new(Combos::build(&c.cluster, &c.keys).expect("combos"));
        let raw = Raw::Tiny(vec![0; c.feasible.len() * 2]);
        let build = |weights: Vec<i64>| {
            let built_for = TallyFor {
                epoch: c.cluster.changes().epoch(),
                weights,
                keys: c.keys.clone(),
            };
            Tally::build(built_for, Arc::clone(&combos), &c.feasible, (&raw, 2)).is_some()
        };
        assert!(build(vec![1, 1]));
        assert!(!build(vec![1, -1]));
        assert!(!build(vec![1, 600]));
    }
}
