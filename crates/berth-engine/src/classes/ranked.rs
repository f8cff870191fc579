//! A class's feasible nodes counted by kept sum, so that a cycle picks the best without
//! adding up every node's total.
//!
//! When the class keeps the raw scores of every per-node rule that is not grouped, and those
//! rules normalise to themselves (LeastRequested, BalancedAllocation), and the spreading
//! rules give their scores by label value (one score per zone, the few nodes running
//! matching pods apart: [`crate::framework::Grouped`]), a node's total is its kept scores'
//! weighted sum plus its values' scores. The highest total is then the best over the
//! combinations of values of each one's highest kept sum (and over the nodes set apart),
//! and how many nodes reach it follows from how many of each combination have each sum.
//! The ranking keeps those counts, moved as the class keeps each answer (while the node's
//! row is at hand), so a cycle reads a few counts instead of every node; only the tied node
//! the draw picks is looked for, in visiting order among its combinations' nodes. The tie
//! is drawn as selectHost draws it (one uniform draw over every tied node, in visiting
//! order), so the choice is the one a pass over every node's total makes.

use super::Raw;
use crate::cluster::Cluster;
use crate::framework::FeasibleNodes;
use crate::labels::Sym;
use crate::types::NodeId;

/// The largest kept raw score a ranking takes (rules that normalise to themselves score
/// within 0..=100); a class with a score past it, or below 0, is left to the usual path.
pub(crate) const KEPT_MAX: i64 = 127;

/// A slot that holds no node, in [`Ranked::place`].
const NO_NODE: u16 = u16::MAX;

/// The kept sum of a node that fails the filters, in [`Member::sum`].
const INFEASIBLE: i64 = i64::MIN;

/// Where a node slot sits: its combination of label values and its index in the
/// combination's members.
#[derive(Debug, Clone, Copy)]
struct Place {
    combo: u16,
    index: u32,
}

/// A node of a combination: its rank in visiting order, its slot and its kept sum
/// ([`INFEASIBLE`] when it fails the filters), so that looking for the tied node the draw
/// picks reads one list in order.
#[derive(Debug, Clone, Copy)]
struct Member {
    rank: u32,
    slot: u32,
    sum: i64,
}

/// One grouped rule's scores for a cycle, weighted: by value of its label (the nodes
/// without it: `unlabelled`), and the nodes set apart with their own.
pub(crate) struct GroupScores {
    pub table: Vec<(Sym, i64)>,
    pub unlabelled: i64,
    pub apart: Vec<(NodeId, i64)>,
}

impl GroupScores {
    /// The score of a node with label value `value`; None for a value the table lacks.
    pub(super) fn at(&self, value: Option<Sym>) -> Option<i64> {
        match value {
            None => Some(self.unlabelled),
            Some(v) => self.table.iter().find(|(t, _)| *t == v).map(|(_, s)| *s),
        }
    }
}

/// What a ranking is built for: where visiting starts, the cluster's epoch and size (node
/// labels and the visiting order change only with the epoch), the kept scorers' weights (in
/// row order) and each grouped rule's label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RankedFor {
    pub start: usize,
    pub epoch: u64,
    pub nodes: usize,
    pub weights: Vec<i64>,
    pub keys: Vec<Sym>,
}

/// See the module's comment.
#[derive(Debug)]
pub(crate) struct Ranked {
    built_for: RankedFor,
    /// By node slot, where it sits.
    place: Vec<Place>,
    /// Each combination's value of each grouped rule's label.
    combos: Vec<Vec<Option<Sym>>>,
    /// Per combination, its nodes in visiting order.
    members: Vec<Vec<Member>>,
    /// Per combination, how many of its feasible nodes, set apart or not.
    feasible_in: Vec<u32>,
    feasible: usize,
    /// Per combination, how many of its feasible nodes not set apart have each kept sum,
    /// ascending by sum.
    by_sum: Vec<Vec<(i64, u32)>>,
    /// The slots some rule sets apart, ascending.
    apart: Vec<u32>,
}

/// A class's ranking with the verdicts it counts, by slot.
pub(crate) struct RankedAnswers<'a> {
    pub(super) ranked: &'a mut Ranked,
    pub(super) feasible: &'a [bool],
}

impl Ranked {
    /// The ranking of every node of `cluster` from the class's kept verdicts (`feasible`,
    /// by slot; every one known) and raw score rows (`rows`: the rows and their width);
    /// None when a kept score lies outside `0..=KEPT_MAX`, or the labels combine in more
    /// ways than a slot can name.
    pub(super) fn build(
        cluster: &Cluster,
        built_for: RankedFor,
        feasible: &[bool],
        rows: (&Raw, usize),
    ) -> Option<Ranked> {
        let (raw, width) = rows;
        let order = cluster.node_order();
        if built_for.weights.len() != width || order.is_empty() {
            return None;
        }
        let columns: Vec<Option<&[Option<Sym>]>> = built_for
            .keys
            .iter()
            .map(|k| cluster.label_column(*k))
            .collect();
        let mut ranked = Ranked {
            place: vec![
                Place {
                    combo: NO_NODE,
                    index: 0
                };
                cluster.node_slots()
            ],
            combos: Vec::new(),
            members: Vec::new(),
            feasible_in: Vec::new(),
            feasible: 0,
            by_sum: Vec::new(),
            apart: Vec::new(),
            built_for,
        };
        let mut values: Vec<Option<Sym>> = vec![None; columns.len()];
        let start = ranked.built_for.start % order.len();
        let visiting = order[start..].iter().chain(&order[..start]);
        for (r, id) in visiting.enumerate() {
            let slot = id.0 as usize;
            for (v, column) in values.iter_mut().zip(&columns) {
                *v = column.and_then(|c| c.get(slot).copied().flatten());
            }
            let c = match ranked.combos.iter().position(|c| *c == values) {
                Some(c) => c,
                None => {
                    ranked.combos.push(values.clone());
                    ranked.members.push(Vec::new());
                    ranked.feasible_in.push(0);
                    ranked.by_sum.push(Vec::new());
                    ranked.combos.len() - 1
                }
            };
            let combo = u16::try_from(c).ok().filter(|c| *c != NO_NODE)?;
            let index = u32::try_from(ranked.members[c].len()).ok()?;
            *ranked.place.get_mut(slot)? = Place { combo, index };
            let sum = if *feasible.get(slot)? {
                let sum = raw.weighted(slot, width, &ranked.built_for.weights)?;
                ranked.feasible += 1;
                ranked.feasible_in[c] += 1;
                ranked.count(c, sum, true);
                sum
            } else {
                INFEASIBLE
            };
            ranked.members[c].push(Member {
                rank: r as u32,
                slot: slot as u32,
                sum,
            });
        }
        Some(ranked)
    }

    /// What the ranking was built for.
    pub(super) fn built_for(&self) -> &RankedFor {
        &self.built_for
    }

    /// The kept scorers' weights, in row order.
    pub(super) fn weights(&self) -> &[i64] {
        &self.built_for.weights
    }

    /// Moves node slot `slot` from its old kept sum to its new one (None: not feasible), as
    /// the class keeps a new answer for it.
    pub(super) fn moved(&mut self, slot: usize, new: Option<i64>) {
        let Some(place) = self.place.get(slot).copied().filter(|p| p.combo != NO_NODE) else {
            return;
        };
        let c = usize::from(place.combo);
        let member = &mut self.members[c][place.index as usize];
        let old = std::mem::replace(&mut member.sum, new.unwrap_or(INFEASIBLE));
        let old = (old != INFEASIBLE).then_some(old);
        match (old.is_some(), new.is_some()) {
            (false, true) => {
                self.feasible += 1;
                self.feasible_in[c] += 1;
            }
            (true, false) => {
                self.feasible -= 1;
                self.feasible_in[c] -= 1;
            }
            _ => {}
        }
        if let Ok(at) = self.apart.binary_search(&(slot as u32)) {
            // Only feasible nodes are set apart (and counted by no sum); the next choice
            // sets them apart anew.
            if new.is_none() {
                self.apart.remove(at);
            }
            return;
        }
        if old == new {
            return;
        }
        if let Some(old) = old {
            self.count(c, old, false);
        }
        if let Some(new) = new {
            self.count(c, new, true);
        }
    }

    /// The member of a node slot.
    fn member(&self, slot: u32) -> Option<&Member> {
        let place = self
            .place
            .get(slot as usize)
            .filter(|p| p.combo != NO_NODE)?;
        self.members[usize::from(place.combo)].get(place.index as usize)
    }

    /// The kept sum of a feasible slot.
    fn sum(&self, slot: u32) -> Option<i64> {
        self.member(slot)
            .map(|m| m.sum)
            .filter(|s| *s != INFEASIBLE)
    }

    /// Counts one more (`add`) or one fewer node of combination `c` with kept sum `sum`.
    fn count(&mut self, c: usize, sum: i64, add: bool) {
        let by_sum = &mut self.by_sum[c];
        match by_sum.binary_search_by_key(&sum, |(s, _)| *s) {
            Ok(at) if add => by_sum[at].1 += 1,
            Ok(at) => {
                by_sum[at].1 -= 1;
                if by_sum[at].1 == 0 {
                    by_sum.remove(at);
                }
            }
            Err(at) if add => by_sum.insert(at, (sum, 1)),
            Err(_) => {}
        }
    }
}

impl RankedAnswers<'_> {
    /// Sets apart `apart` (feasible slots), counting again the slots no longer set apart.
    fn set_apart(&mut self, mut apart: Vec<u32>) {
        apart.sort_unstable();
        apart.dedup();
        let old = std::mem::take(&mut self.ranked.apart);
        for (slot, add) in old
            .iter()
            .filter(|s| apart.binary_search(s).is_err())
            .map(|s| (*s, true))
            .chain(
                apart
                    .iter()
                    .filter(|s| old.binary_search(s).is_err())
                    .map(|s| (*s, false)),
            )
        {
            if let (Some(sum), Some(place)) =
                (self.ranked.sum(slot), self.ranked.place.get(slot as usize))
            {
                self.ranked.count(usize::from(place.combo), sum, add);
            }
        }
        self.ranked.apart = apart;
    }

    /// The rank (in visiting order from the start built for) of the node with the highest
    /// total, `base` plus its kept sum plus each rule's score of it (`rules`, in the order
    /// of the labels built for), ties drawn by `draw` (given how many nodes tie, it returns
    /// which of them, in visiting order, to take); None when no node is feasible or a rule
    /// scores no value some feasible node carries.
    pub fn choose(
        &mut self,
        base: i64,
        rules: &[GroupScores],
        draw: impl FnOnce(usize) -> usize,
    ) -> Option<usize> {
        if rules.len() != self.ranked.built_for.keys.len() {
            return None;
        }
        let feasible_slot = |id: &NodeId| {
            let slot = id.0 as usize;
            (self.feasible.get(slot) == Some(&true) && self.ranked.member(slot as u32).is_some())
                .then_some(slot as u32)
        };
        // Each rule's feasible nodes set apart, by slot and ascending, for lookups below.
        let own: Vec<Vec<(u32, i64)>> = rules
            .iter()
            .map(|rule| {
                let mut own: Vec<(u32, i64)> = rule
                    .apart
                    .iter()
                    .filter_map(|(id, s)| Some((feasible_slot(id)?, *s)))
                    .collect();
                own.sort_unstable_by_key(|(slot, _)| *slot);
                own
            })
            .collect();
        self.set_apart(own.iter().flatten().map(|(slot, _)| *slot).collect());
        let ranked = &*self.ranked;
        let combo_totals = combo_totals(&ranked.combos, &ranked.feasible_in, rules, base)?;
        let apart_totals: Vec<(u32, i64)> = ranked
            .apart
            .iter()
            .map(|&slot| {
                let values = &ranked.combos[usize::from(ranked.place[slot as usize].combo)];
                let scores = values.iter().zip(rules).zip(&own).map(|((v, rule), own)| {
                    match own.binary_search_by_key(&slot, |(s, _)| *s) {
                        Ok(at) => Some(own[at].1),
                        Err(_) => rule.at(*v),
                    }
                });
                let total = scores.sum::<Option<i64>>()?;
                Some((slot, base + ranked.sum(slot)? + total))
            })
            .collect::<Option<_>>()?;
        let best = ranked
            .by_sum
            .iter()
            .zip(&combo_totals)
            .filter_map(|(by_sum, t)| Some((*t)? + by_sum.last()?.0))
            .chain(apart_totals.iter().map(|(_, t)| *t))
            .max()?;
        // The combinations with nodes at the best total, and the kept sum those have.
        let tied: Vec<(usize, i64, u32)> = ranked
            .by_sum
            .iter()
            .zip(&combo_totals)
            .enumerate()
            .filter_map(|(c, (by_sum, t))| {
                let want = best - (*t)?;
                let at = by_sum.binary_search_by_key(&want, |(s, _)| *s).ok()?;
                Some((c, want, by_sum[at].1))
            })
            .collect();
        let apart_best: Vec<u32> = apart_totals
            .iter()
            .filter(|(_, t)| *t == best)
            .map(|(slot, _)| *slot)
            .collect();
        let ties = tied.iter().map(|(_, _, n)| *n as usize).sum::<usize>() + apart_best.len();
        let pick = draw(ties);
        self.nth_tied(&tied, &apart_best, pick)
    }

    /// The rank of the `pick`-th node (from 0, in visiting order) among the nodes of the
    /// tied combinations with their kept sum and the tied slots set apart.
    fn nth_tied(&self, tied: &[(usize, i64, u32)], apart: &[u32], pick: usize) -> Option<usize> {
        let ranked = &*self.ranked;
        let set_apart = |slot: u32| ranked.apart.binary_search(&slot).is_ok();
        // Each tied combination's nodes at its sum, and the tied nodes set apart, each in
        // visiting order: the pick-th of them merged.
        let mut apart_ranks: Vec<u32> = apart
            .iter()
            .filter_map(|slot| ranked.member(*slot).map(|m| m.rank))
            .collect();
        apart_ranks.sort_unstable();
        let at_sum = |c: usize, want: i64| {
            ranked.members[c]
                .iter()
                .filter(move |m| m.sum == want && !set_apart(m.slot))
                .map(|m| m.rank)
        };
        if let ([(c, want, _)], []) = (tied, apart_ranks.as_slice()) {
            return at_sum(*c, *want).nth(pick).map(|r| r as usize);
        }
        let mut lists: Vec<(Box<dyn Iterator<Item = u32> + '_>, Option<u32>)> =
            Vec::with_capacity(tied.len() + 1);
        for &(c, want, _) in tied {
            let mut ranks = at_sum(c, want);
            let head = ranks.next();
            lists.push((Box::new(ranks), head));
        }
        let mut apart_iter = apart_ranks.into_iter();
        let head = apart_iter.next();
        lists.push((Box::new(apart_iter), head));
        let mut left = pick;
        loop {
            let (i, rank) = lists
                .iter()
                .enumerate()
                .filter_map(|(i, (_, head))| Some((i, (*head)?)))
                .min_by_key(|(_, rank)| *rank)?;
            if left == 0 {
                return Some(rank as usize);
            }
            left -= 1;
            let (rest, head) = &mut lists[i];
            *head = rest.next();
        }
    }
}

impl FeasibleNodes for RankedAnswers<'_> {
    fn count(&self) -> usize {
        self.ranked.feasible
    }

    fn contains(&self, id: NodeId) -> bool {
        self.feasible.get(id.0 as usize) == Some(&true)
    }

    fn by_value(&self, key: Sym) -> Option<(Vec<(Sym, u32)>, u32)> {
        let ranked = &*self.ranked;
        let k = ranked.built_for.keys.iter().position(|b| *b == key)?;
        Some(counts_by_value(&ranked.combos, &ranked.feasible_in, k))
    }
}

/// Each combination's scores from the rules (one per label of the combinations), summed
/// with `base` (None: unscored, and carried by no feasible node: `feasible_in` counts them
/// per combination); None when a rule scores no value some feasible node carries.
pub(super) fn combo_totals(
    combos: &[Vec<Option<Sym>>],
    feasible_in: &[u32],
    rules: &[GroupScores],
    base: i64,
) -> Option<Vec<Option<i64>>> {
    let mut totals: Vec<Option<i64>> = Vec::with_capacity(combos.len());
    for (values, n) in combos.iter().zip(feasible_in) {
        let scores = values.iter().zip(rules).map(|(v, rule)| rule.at(*v));
        match scores.sum::<Option<i64>>() {
            Some(s) => totals.push(Some(base + s)),
            None if *n == 0 => totals.push(None),
            None => return None,
        }
    }
    Some(totals)
}

/// How many feasible nodes carry each value of the `k`-th label of the combinations, and
/// how many lack it, from the counts per combination (`feasible_in`).
pub(super) fn counts_by_value(
    combos: &[Vec<Option<Sym>>],
    feasible_in: &[u32],
    k: usize,
) -> (Vec<(Sym, u32)>, u32) {
    let mut values: Vec<(Sym, u32)> = Vec::new();
    let mut unlabelled = 0;
    for (combo, n) in combos.iter().zip(feasible_in) {
        match combo.get(k).copied().flatten() {
            _ if *n == 0 => {}
            None => unlabelled += n,
            Some(v) => match values.iter_mut().find(|(seen, _)| *seen == v) {
                Some((_, count)) => *count += n,
                None => values.push((v, *n)),
            },
        }
    }
    (values, unlabelled)
}

impl Raw {
    /// The weighted sum of slot `slot`'s kept scores (rows of `width`); None when one lies
    /// outside `0..=KEPT_MAX` or the sum overflows.
    #[inline]
    pub(super) fn weighted(&self, slot: usize, width: usize, weights: &[i64]) -> Option<i64> {
        let at = slot.checked_mul(width)?;
        match self {
            Raw::Tiny(raw) => weighted_row(raw.get(at..at + width)?, weights),
            Raw::Narrow(raw) => weighted_row(raw.get(at..at + width)?, weights),
            Raw::Wide(raw) => weighted_row(raw.get(at..at + width)?, weights),
        }
    }
}

/// The weighted sum of one row of kept scores; None when one lies outside `0..=KEPT_MAX`
/// or the sum overflows.
pub(super) fn weighted_row<T: Copy + Into<i64>>(row: &[T], weights: &[i64]) -> Option<i64> {
    row.iter().zip(weights).try_fold(0i64, |sum, (r, w)| {
        let r: i64 = (*r).into();
        if !(0..=KEPT_MAX).contains(&r) {
            return None;
        }
        sum.checked_add(r.checked_mul(*w)?)
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::testkit::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A random class's answers over a small cluster whose nodes carry a zone (or none) and
    /// a rack (or none).
    pub(in crate::classes) struct Case {
        pub cluster: Cluster,
        pub keys: Vec<Sym>,
        pub weights: Vec<i64>,
        pub feasible: Vec<bool>,
        pub raw: Vec<u8>,
    }

    pub(in crate::classes) fn case(rng: &mut ChaCha8Rng) -> Case {
        let nodes = (0..rng.random_range(1..40))
            .map(|i| {
                let mut n = node(&format!("n{i}"));
                if rng.random_bool(0.9) {
                    n = n.label("zone", &format!("z{}", rng.random_range(0..3)));
                }
                if rng.random_bool(0.8) {
                    n = n.label("rack", &format!("r{}", rng.random_range(0..2)));
                }
                n.build()
            })
            .collect();
        let mut cluster = cluster(nodes, vec![]);
        let keys = vec![cluster.intern("zone"), cluster.intern("rack")];
        let slots = cluster.node_slots();
        let weights: Vec<i64> = (0..2).map(|_| rng.random_range(1..4)).collect();
        // Few distinct scores, so that many nodes tie.
        let raw = (0..slots * 2)
            .map(|_| rng.random_range(0..4) * 30)
            .collect();
        let feasible = (0..slots).map(|_| rng.random_bool(0.7)).collect();
        Case {
            cluster,
            keys,
            weights,
            feasible,
            raw,
        }
    }

    pub(in crate::classes) fn scores(rng: &mut ChaCha8Rng, c: &Case, key: Sym) -> GroupScores {
        let mut values: Vec<Sym> = c
            .cluster
            .node_order()
            .iter()
            .filter_map(|id| c.cluster.label_column(key)?[id.0 as usize])
            .collect();
        values.sort_unstable();
        values.dedup();
        let mut apart = Vec::new();
        for id in c.cluster.node_order() {
            if rng.random_bool(0.15) {
                apart.push((*id, rng.random_range(0..3) * 50));
            }
        }
        GroupScores {
            table: values
                .into_iter()
                .map(|v| (v, rng.random_range(0..3) * 50))
                .collect(),
            unlabelled: rng.random_range(0..3) * 50,
            apart,
        }
    }

    /// Every node's total in visiting order from `start`, the way the cycle sums them, and
    /// the pick of `select_best`'s draw among the best.
    pub(in crate::classes) fn brute_force(
        c: &Case,
        start: usize,
        base: i64,
        rules: &[GroupScores],
        pick: usize,
    ) -> Option<usize> {
        let order = c.cluster.node_order();
        let totals: Vec<(usize, i64)> = (0..order.len())
            .filter_map(|r| {
                let id = order[(start + r) % order.len()];
                let slot = id.0 as usize;
                if !c.feasible[slot] {
                    return None;
                }
                let kept: i64 = (0..2)
                    .map(|k| i64::from(c.raw[slot * 2 + k]) * c.weights[k])
                    .sum();
                let grouped: i64 = rules
                    .iter()
                    .zip(&c.keys)
                    .map(
                        |(rule, key)| match rule.apart.iter().find(|(a, _)| *a == id) {
                            Some((_, own)) => *own,
                            None => {
                                let value = c.cluster.label_column(*key).and_then(|col| col[slot]);
                                rule.at(value).unwrap()
                            }
                        },
                    )
                    .sum();
                Some((r, base + kept + grouped))
            })
            .collect();
        let best = totals.iter().map(|(_, t)| *t).max()?;
        let tied: Vec<usize> = totals
            .iter()
            .filter(|(_, t)| *t == best)
            .map(|(r, _)| *r)
            .collect();
        tied.get(pick % tied.len()).copied()
    }

    /// Choosing from the ranking picks the node that summing every total and drawing among
    /// the best picks, as built and after answers move (feasible nodes turning infeasible
    /// and back, sums changing, nodes set apart and back).
    #[test]
    fn ranking_chooses_as_every_total_would() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut compared = 0;
        for _ in 0..300 {
            let mut c = case(&mut rng);
            let start = rng.random_range(0..c.cluster.node_count());
            let built_for = RankedFor {
                start,
                epoch: c.cluster.changes().epoch(),
                nodes: c.cluster.node_count(),
                weights: c.weights.clone(),
                keys: c.keys.clone(),
            };
            let raw = Raw::Tiny(c.raw.clone());
            let mut ranked =
                Ranked::build(&c.cluster, built_for, &c.feasible, (&raw, 2)).expect("ranked");
            for _ in 0..6 {
                let rules: Vec<GroupScores> =
                    c.keys.iter().map(|k| scores(&mut rng, &c, *k)).collect();
                let base = rng.random_range(0..10);
                let seed = rng.random::<u64>();
                let mut answers = RankedAnswers {
                    ranked: &mut ranked,
                    feasible: &c.feasible,
                };
                let mut ties = 0;
                let chosen = answers.choose(base, &rules, |n| {
                    ties = n;
                    (seed as usize) % n
                });
                let want = brute_force(&c, start, base, &rules, seed as usize);
                assert_eq!(chosen, want, "start {start}, {ties} tied");
                compared += usize::from(ties > 1);
                // Some answers move, as a class keeps new ones.
                for _ in 0..rng.random_range(0..8) {
                    let slot = rng.random_range(0..c.feasible.len());
                    let feasible = rng.random_bool(0.7);
                    let row = [rng.random_range(0..4) * 30, rng.random_range(0..4) * 30];
                    let new = feasible.then(|| weighted_row(&row, &c.weights)).flatten();
                    ranked.moved(slot, new);
                    c.feasible[slot] = feasible;
                    c.raw[slot * 2] = row[0] as u8;
                    c.raw[slot * 2 + 1] = row[1] as u8;
                }
            }
        }
        // (236 of the 1,800 choices draw among tied nodes.)
        assert!(compared > 150, "only {compared} choices among ties");
    }

    /// Scores outside what a ranking counts leave the class to the usual path.
    #[test]
    fn scores_out_of_range_are_not_ranked() {
        assert_eq!(weighted_row(&[1i64, 2], &[3, 4]), Some(11));
        assert_eq!(weighted_row(&[KEPT_MAX + 1, 0], &[1, 1]), None);
        assert_eq!(weighted_row(&[-1i64, 0], &[1, 1]), None);
        assert_eq!(weighted_row(&[KEPT_MAX, 0], &[i64::MAX, 1]), None);
    }
}
