//! Prioritise: normalise the raw scores of the feasible nodes, add the extenders' scores,
//! and weigh them into one total per node (upstream's prioritizeNodes).

use rayon::prelude::*;

use crate::cluster::{Cluster, NodeId};
use crate::explain::ScoreValue;
use crate::extender::{self, ExtenderError};
use crate::framework::{NodeScore, ScorePrep};
use crate::podinfo::PodInfo;
use crate::profile::{Profile, WeightedScore};

/// Below this many feasible nodes the normalisers run one after another: each costs a few
/// nanoseconds a node, so handing columns to other threads pays only in large clusters (at
/// 5,000 nodes on a 2-core machine, splitting them made `basic` 5% and interleaved
/// `deployments` 8% slower).
const NORMALIZE_IN_PARALLEL: usize = 8192;

/// What prioritising found: every column with its weight, the totals, and for explaining
/// the raw scores and the extenders' names.
pub(super) struct Prioritised {
    columns: Vec<Column>,
    weights: Vec<i64>,
    /// Each chosen node's weighted total, in the chosen nodes' order.
    pub totals: Vec<i64>,
    /// The raw scores of every column (explaining only).
    raw: Vec<Column>,
    /// The extenders' columns' names (explaining only).
    names: Vec<String>,
}

/// The per-node score rules among a pod's prepared ones, in order.
pub(super) fn per_node<'p>(preps: &'p [ScorePrep<'_>]) -> Vec<&'p dyn NodeScore> {
    preps
        .iter()
        .filter_map(|p| match p {
            ScorePrep::PerNode(s) => Some(s.as_ref()),
            ScorePrep::Constant(_) | ScorePrep::Uniform { .. } => None,
        })
        .collect()
}

/// What the cycle scored so far: the prepared score rules, their per-node ones, and the
/// raw scores those gave the chosen nodes.
pub(super) struct Scored<'s, 'a> {
    pub preps: &'s [ScorePrep<'a>],
    pub scorers: &'s [&'s dyn NodeScore],
    /// One column per per-node rule, in the chosen nodes' order.
    pub raw_columns: Vec<Vec<i64>>,
}

/// Scores `chosen` (at least two nodes): the extenders score while the engine normalises
/// its own raw scores.
pub(super) fn prioritise(
    profile: &Profile,
    cluster: &Cluster,
    pod: &PodInfo,
    scored: Scored<'_, '_>,
    chosen: &[NodeId],
    explain: bool,
    warnings: &mut Vec<ExtenderError>,
) -> Prioritised {
    let (scores, extenders) = (&profile.scores, &profile.extenders);
    let Scored {
        preps,
        scorers,
        raw_columns,
    } = scored;
    // Extenders score while the engine normalises its own scores.
    let scoring =
        (!extenders.is_empty()).then(|| extender::start_scoring(extenders, cluster, pod, chosen));
    // The raw scores, kept only when explaining: normalising overwrites them.
    let raw_kept = explain.then(|| raw_scores(scorers, chosen, raw_columns.clone()));
    let mut columns = normalized_columns(preps, chosen, raw_columns);
    let mut weights: Vec<i64> = scores.iter().map(|s| s.weight).collect();
    let mut names: Vec<String> = Vec::new();
    let mut extender_raw: Vec<Vec<i64>> = Vec::new();
    if let Some(scoring) = scoring {
        let asked: Vec<usize> = scoring.extenders().collect();
        let scored = scoring.collect(extenders, cluster, chosen, warnings);
        for (index, column) in asked.into_iter().zip(scored) {
            let e = &extenders[index];
            weights.push(e.weight());
            if explain {
                names.push(format!("extender {}", e.name()));
                extender_raw.push(column.clone());
            }
            columns.push(Column::Values(
                column.into_iter().map(extender::scale).collect(),
            ));
        }
    }
    let constant: i64 = columns
        .iter()
        .zip(&weights)
        .filter_map(|(col, weight)| match col {
            Column::Constant(v) => Some(v.saturating_mul(*weight)),
            Column::Values(_) => None,
        })
        .fold(0i64, i64::saturating_add);
    let totals = weighted_totals(constant, &columns, &weights, chosen.len());
    let raw = if explain {
        raw_columns_of(preps, raw_kept.unwrap_or_default(), extender_raw)
    } else {
        Vec::new()
    };
    Prioritised {
        columns,
        weights,
        totals,
        raw,
        names,
    }
}

impl Prioritised {
    /// Row `r`'s scores (raw, normalised, weighted per column) and total, for explaining.
    pub fn row(&self, r: usize) -> (Vec<ScoreValue>, i64) {
        let scores = self
            .raw
            .iter()
            .zip(&self.columns)
            .zip(&self.weights)
            .map(|((raw, normalized), weight)| {
                let normalized = normalized.get(r);
                ScoreValue {
                    raw: raw.get(r),
                    normalized,
                    weighted: normalized.saturating_mul(*weight),
                }
            })
            .collect();
        (scores, self.totals[r])
    }

    /// Each column's name and weight: the score rules', then the extenders'.
    pub fn score_rules(self, scores: &[WeightedScore]) -> Vec<(String, i64)> {
        scores
            .iter()
            .map(|s| s.name.clone())
            .chain(self.names)
            .zip(self.weights)
            .collect()
    }
}

/// One score rule's normalised scores of the feasible nodes.
pub(super) enum Column {
    /// The same score for every node.
    Constant(i64),
    /// One score per feasible node, in feasible order.
    Values(Vec<i64>),
}

impl Column {
    fn get(&self, row: usize) -> i64 {
        match self {
            Column::Constant(v) => *v,
            Column::Values(values) => values[row],
        }
    }
}

/// Normalised scores, one column per score rule. Normalisers are independent of each other,
/// so they run in parallel.
fn normalized_columns(
    preps: &[ScorePrep<'_>],
    feasible: &[NodeId],
    raw: Vec<Vec<i64>>,
) -> Vec<Column> {
    enum Job<'a> {
        Constant(i64),
        Normalize(&'a dyn NodeScore, Vec<i64>),
    }
    let mut raw = raw.into_iter();
    let jobs: Vec<Job<'_>> = preps
        .iter()
        .map(|p| match p {
            ScorePrep::Constant(v) | ScorePrep::Uniform { normalized: v, .. } => Job::Constant(*v),
            ScorePrep::PerNode(s) => Job::Normalize(
                s.as_ref(),
                raw.next()
                    .expect("the pass keeps one raw column per per-node score rule"),
            ),
        })
        .collect();
    let normalize = |job: Job<'_>| match job {
        Job::Constant(v) => Column::Constant(v),
        Job::Normalize(s, mut col) => {
            s.normalize(feasible, &mut col);
            Column::Values(col)
        }
    };
    if feasible.len() < NORMALIZE_IN_PARALLEL || rayon::current_num_threads() == 1 {
        jobs.into_iter().map(normalize).collect()
    } else {
        jobs.into_par_iter().map(normalize).collect()
    }
}

/// The pass's raw score columns with the raw scores of rules that compute them only while
/// normalising filled in ([`NodeScore::raw_scores`]).
fn raw_scores(
    scorers: &[&dyn NodeScore],
    feasible: &[NodeId],
    mut raw: Vec<Vec<i64>>,
) -> Vec<Vec<i64>> {
    for (s, column) in scorers.iter().zip(&mut raw) {
        s.raw_scores(feasible, column);
    }
    raw
}

/// The raw scores of every score rule, in column order: a constant rule's value, a per-node
/// rule's column as the pass gave it (`per_node`, in order), then the extenders' answers.
fn raw_columns_of(
    preps: &[ScorePrep<'_>],
    per_node: Vec<Vec<i64>>,
    extenders: Vec<Vec<i64>>,
) -> Vec<Column> {
    let mut per_node = per_node.into_iter();
    preps
        .iter()
        .map(|p| match p {
            ScorePrep::Constant(v) | ScorePrep::Uniform { raw: v, .. } => Column::Constant(*v),
            ScorePrep::PerNode(_) => Column::Values(
                per_node
                    .next()
                    .expect("the pass keeps one raw column per per-node score rule"),
            ),
        })
        .chain(extenders.into_iter().map(Column::Values))
        .collect()
}

/// Each node's weighted sum of its normalised scores, saturating at the ends of i64. While
/// every score lies in `0..=limit`, where `limit` times the summed weights fits beside the
/// constant part, no sum can come near the ends, so plain arithmetic gives the same sums;
/// the loops check that (a little more strictly) as they add, in the same passes (the cycle
/// runs this over every feasible node for every pod). A score outside it sums again,
/// saturating.
pub(super) fn weighted_totals(
    constant: i64,
    columns: &[Column],
    weights: &[i64],
    len: usize,
) -> Vec<i64> {
    let values = || {
        columns
            .iter()
            .zip(weights)
            .filter_map(|(col, weight)| match col {
                Column::Values(values) => Some((values, *weight)),
                Column::Constant(_) => None,
            })
    };
    let weight_sum = values().fold(0u64, |sum, (_, w)| sum.saturating_add(w.unsigned_abs()));
    let limit = (i64::MAX
        .unsigned_abs()
        .saturating_sub(constant.unsigned_abs()))
        / weight_sum.max(1);
    let mut totals = vec![constant; len];
    // Every score is checked against the largest all-ones mask within `limit` by OR-ing them
    // together: a stricter test than `<= limit` (a score past the mask sums again, exactly),
    // but one that, unlike a 64-bit compare, the baseline SIMD has, so the loops vectorise.
    // (`limit` is at most i64::MAX, so `limit + 1` does not overflow.)
    let bits = u64::BITS - (limit + 1).leading_zeros();
    let mask = (1u64 << (bits - 1)) - 1;
    let mut seen = 0u64;
    // Up to four columns per pass over the nodes: each total is read and written once per
    // pass rather than once per column, which at tens of thousands of nodes is most of the
    // memory traffic.
    let weighted: Vec<(&Vec<i64>, i64)> = values().collect();
    for group in weighted.chunks(4) {
        match group {
            [(a, wa), (b, wb), (c, wc), (d, wd)] => {
                let rows = totals.iter_mut().zip(*a).zip(*b).zip(*c).zip(*d);
                for ((((t, x), y), z), v) in rows {
                    seen |= (*x | *y | *z | *v) as u64;
                    *t = t
                        .wrapping_add(x.wrapping_mul(*wa))
                        .wrapping_add(y.wrapping_mul(*wb))
                        .wrapping_add(z.wrapping_mul(*wc))
                        .wrapping_add(v.wrapping_mul(*wd));
                }
            }
            [(a, wa), (b, wb), (c, wc)] => {
                for (((t, x), y), z) in totals.iter_mut().zip(*a).zip(*b).zip(*c) {
                    seen |= (*x | *y | *z) as u64;
                    *t = t
                        .wrapping_add(x.wrapping_mul(*wa))
                        .wrapping_add(y.wrapping_mul(*wb))
                        .wrapping_add(z.wrapping_mul(*wc));
                }
            }
            [(a, wa), (b, wb)] => {
                for ((t, x), y) in totals.iter_mut().zip(*a).zip(*b) {
                    seen |= (*x | *y) as u64;
                    *t = t
                        .wrapping_add(x.wrapping_mul(*wa))
                        .wrapping_add(y.wrapping_mul(*wb));
                }
            }
            _ => {
                for (values, weight) in group {
                    for (t, x) in totals.iter_mut().zip(*values) {
                        seen |= *x as u64;
                        *t = t.wrapping_add(x.wrapping_mul(*weight));
                    }
                }
            }
        }
    }
    if seen > mask {
        totals.fill(constant);
        for (values, weight) in values() {
            for (t, s) in totals.iter_mut().zip(values) {
                *t = t.saturating_add(s.saturating_mul(weight));
            }
        }
    }
    totals
}
