//! Find feasible: walk the nodes from where the last cycle stopped until enough pass the
//! filters, scoring each feasible node as it goes (upstream's findNodesThatPassFilters),
//! with the answers kept for the pod's class (see [`crate::classes`]).

use std::ops::Range;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::classes::{Answers, Classes, Shape, stale_cap};
use crate::cluster::{Cluster, FitRequest, NodeFit, NodeId, NodeInfo};
use crate::filters::PreparedFilters;
use crate::framework::{
    Dense, NodeCheck, NodeScore, Reason, RowTest, ScorePrep, labels_hold, mask_holds,
};
use crate::labels::Sym;
use crate::nominator::Nominator;
use crate::podinfo::PodInfo;

use super::summed::{Summing, Way, summed};

/// A batch expected to take less than this on one thread runs on the calling thread:
/// waking the other workers and gathering their chunks costs about as much as they save.
/// Measured with `berth bench --workload basic` (the OpenShift policy, some 40 ns a node)
/// on a 2-core machine, one thread against two: 500 nodes (20 µs a batch) 28,400 vs 27,800
/// pods/s, 1,000 nodes (40 µs) within noise, 2,000 nodes 12,300 vs 14,800, 5,000 nodes
/// 5,800 vs 8,100.
const PARALLEL_WORK: Duration = Duration::from_micros(50);
/// Fewest nodes per parallel task.
const MIN_NODES_PER_TASK: usize = 128;
/// Parallel tasks per worker thread in one pass, for load balance (1, 2, 8 and 16 measured
/// 3-13% slower on `basic` and at 20,000 nodes).
const TASKS_PER_THREAD: usize = 4;
/// What a node is taken to cost before any pass was timed: about what one costs under the
/// OpenShift policy on the project's machine.
const FIRST_GUESS_NS_PER_NODE: f64 = 40.0;
/// Fewest nodes a timed pass must visit to update the estimate: shorter ones are mostly the
/// clock and the pass's set-up.
const MIN_TIMED_NODES: usize = 64;

/// What evaluating one node has cost lately on one thread, so that a pass goes parallel by
/// the work it holds rather than by its node count alone: a node's cost depends on the
/// policy's rules (a few built-in checks, or WASM plugins) and on whether the cluster's
/// rows fit the caches. Only speed depends on it; chunks are consumed in visiting order
/// whichever way a pass runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeCost {
    ns_per_node: f64,
}

impl Default for NodeCost {
    fn default() -> Self {
        NodeCost {
            ns_per_node: FIRST_GUESS_NS_PER_NODE,
        }
    }
}

impl NodeCost {
    /// Takes in one timed pass (its nodes' filtering and scoring, summed over threads), an
    /// eighth of the way (a moving average that one slow, preempted pass does not swing).
    fn record(&mut self, nodes: usize, took: Duration) {
        if nodes >= MIN_TIMED_NODES {
            let sample = took.as_nanos() as f64 / nodes as f64;
            self.ns_per_node += (sample - self.ns_per_node) / 8.0;
        }
    }

    /// Whether `nodes` are expected to take long enough on one thread to split them.
    fn worth_splitting(&self, nodes: usize) -> bool {
        nodes as f64 * self.ns_per_node >= PARALLEL_WORK.as_nanos() as f64
    }
}

/// What the find-feasible phase found.
pub(super) struct Found {
    /// Feasible nodes in visiting order.
    pub feasible: Vec<NodeId>,
    /// Their raw scores, one column per per-node score rule.
    pub columns: Vec<Vec<i64>>,
    /// How many nodes were consumed (from the start position, in visiting order).
    pub visited: usize,
    /// The chosen node, when the cycle chose it from the class's ranked answers (see
    /// [`super::summed`]); `feasible` and `columns` are then empty.
    pub chosen: Option<NodeId>,
}

impl Found {
    /// A cycle that chose `node` from the class's answers after visiting `visited` nodes.
    fn chosen(node: NodeId, visited: usize) -> Self {
        Found {
            feasible: Vec::new(),
            columns: Vec::new(),
            visited,
            chosen: Some(node),
        }
    }
}

/// Finds up to `walk.want` feasible nodes from `walk.start`, reusing and keeping the
/// answers of `pod`'s class when its rules' answers can be kept. With `summing` (given when
/// nothing but the choice is wanted: no extenders, nothing explained), a class that knows
/// every answer may choose the node instead of giving the columns.
#[allow(clippy::too_many_arguments)]
pub(super) fn find(
    cluster: &Cluster,
    classes: &mut Classes,
    walk: Walk,
    prepared: &PreparedFilters<'_>,
    preps: &[ScorePrep<'_>],
    scorers: &[&dyn NodeScore],
    nominated: Option<&Nominator>,
    pod: &PodInfo,
    cost: &mut NodeCost,
    mut summing: Option<Summing<'_>>,
) -> Found {
    let all = cluster.node_count();
    let mut kept = classes
        .enabled()
        .then(|| Shape {
            checks: prepared.owners.clone(),
            scorers: preps
                .iter()
                .enumerate()
                .filter(|(_, p)| matches!(p, ScorePrep::PerNode(_)))
                .map(|(i, _)| i)
                .collect(),
            reuses: prepared
                .checks
                .iter()
                .map(|c| c.reuse())
                .chain(scorers.iter().map(|s| s.reuse()))
                .collect(),
            kept: scorers.iter().map(|s| s.keeps_raw()).collect(),
        })
        // A nominated pod changes what a node's filters see; nothing is kept then.
        .filter(|shape| nominated.is_none() && shape.reusable())
        .and_then(|shape| classes.answers(cluster, &pod.pod, shape));
    let mut asked_first = 0;
    if let Some(answers) = kept.as_deref_mut()
        && let Some(nodes) = answers.few_unknown(stale_cap(all))
    {
        asked_first = ask_few(cluster, prepared, &keeping(scorers), &nodes, answers);
    }
    if let Some(summing) = summing.as_mut().filter(|_| walk.want >= all)
        && let Some(answers) = kept.as_deref_mut()
        && let Some((chosen, way)) = summed(cluster, preps, summing, answers, walk.start)
    {
        let reused = (all - asked_first.min(all)) as u64;
        answers.judge(reused, asked_first as u64);
        classes.count(reused, asked_first as u64);
        classes.count_summed(way == Way::Ranked, way == Way::Tallied);
        return Found::chosen(chosen, all);
    }
    let viewed = kept
        .as_deref_mut()
        .filter(|_| walk.want >= all)
        .and_then(|answers| answers.view(walk.start));
    let mut pass = match viewed {
        Some((feasible, columns)) => Pass {
            columns: with_unkept(cluster, scorers, columns, &feasible),
            feasible,
            gathered: true,
            visited: all,
            asked: Asked::new(0),
            reused: all,
        },
        None => evaluate(
            cluster,
            walk,
            prepared,
            scorers,
            nominated.map(|n| (n, pod)),
            kept.as_deref(),
            cost,
        ),
    };
    if let Some(answers) = kept {
        for (slot, feasible, raw) in pass.asked.iter() {
            answers.keep(slot, feasible, raw);
        }
        let mut chosen = None;
        if !pass.gathered {
            let whole = (pass.visited == all).then_some(walk.start);
            // A pass over every node that leaves every answer known gives the class its
            // view, from which the choice may be made as in the class's later cycles.
            if let (Some(summing), Some(start)) = (summing.as_mut(), whole) {
                answers.set_view(start, &pass.feasible);
                chosen = summed(cluster, preps, summing, answers, start);
            }
            if chosen.is_none() {
                let columns = answers.columns(&pass.feasible, whole);
                pass.columns = with_unkept(cluster, scorers, columns, &pass.feasible);
            }
        }
        let asked = (pass.asked.len() + asked_first) as u64;
        let reused = (pass.reused - asked_first.min(pass.reused)) as u64;
        answers.judge(reused, asked);
        classes.count(reused, asked);
        if let Some((node, way)) = chosen {
            classes.count_summed(way == Way::Ranked, way == Way::Tallied);
            return Found::chosen(node, pass.visited);
        }
    }
    Found {
        feasible: pass.feasible,
        columns: pass.columns,
        visited: pass.visited,
        chosen: None,
    }
}

/// The scorers whose raw scores a class keeps ([`NodeScore::keeps_raw`]), in order: the
/// ones a pass with a class asks about the nodes it has no answer for.
fn keeping<'s>(scorers: &[&'s dyn NodeScore]) -> Vec<&'s dyn NodeScore> {
    scorers.iter().copied().filter(|s| s.keeps_raw()).collect()
}

/// A class's kept raw score columns with those of the scorers whose raw scores it does not
/// keep ([`NodeScore::keeps_raw`]) scored afresh over `feasible`: one column per scorer, in
/// order.
fn with_unkept(
    cluster: &Cluster,
    scorers: &[&dyn NodeScore],
    kept: Vec<Vec<i64>>,
    feasible: &[NodeId],
) -> Vec<Vec<i64>> {
    if scorers.iter().all(|s| s.keeps_raw()) {
        return kept;
    }
    let mut kept = kept.into_iter();
    scorers
        .iter()
        .map(|s| {
            if s.keeps_raw() {
                kept.next()
                    .expect("a class keeps one column per scorer that keeps raw scores")
            } else {
                let mut column = vec![0; feasible.len()];
                s.score_batch(cluster, feasible, &mut column);
                column
            }
        })
        .collect()
}

/// Where a pass starts in visiting order, and how many feasible nodes it looks for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk {
    pub start: usize,
    pub want: usize,
}

/// Visits nodes from `walk.start` in visiting order until `walk.want` feasible ones are
/// found, scoring each feasible node as it goes (raw scores do not depend on which other
/// nodes are feasible; normalisation, done later, does). Batches are evaluated in parallel
/// but consumed in visiting order, so the result does not depend on thread timing. With
/// `kept` (the pod's class answers, see [`crate::classes`]), a node with a kept answer is
/// not asked again, and the answers asked are returned for keeping.
fn evaluate(
    cluster: &Cluster,
    walk: Walk,
    prepared: &PreparedFilters<'_>,
    scorers: &[&dyn NodeScore],
    nominated: Option<(&Nominator, &PodInfo)>,
    kept: Option<&Answers>,
    cost: &mut NodeCost,
) -> Pass {
    let Walk { start, want } = walk;
    let checks = &prepared.checks;
    let order = cluster.node_order();
    let all = order.len();
    if let Some(k) = kept.filter(|k| k.all_known()) {
        return walk_kept(order, walk, k);
    }
    // With a class, the scorers whose raw scores it keeps, for the nodes asked.
    let asking = if kept.is_some() {
        keeping(scorers)
    } else {
        Vec::new()
    };
    let run = |range: Range<usize>| {
        let began = Instant::now();
        let mut chunk = Chunk {
            len: range.len(),
            feasible: Vec::with_capacity(range.len()),
            asked: Asked::new(asking.len()),
            reused: 0,
            took: Duration::ZERO,
        };
        let mut scratch = Vec::new();
        // Feasibility does not depend on the order filters run in (only reported reasons
        // do, and those are recomputed in policy order), so each task moves a filter that
        // rejects a node one place forward: the most selective filters drift to the front.
        // (Moving straight to the front thrashes when two filters take turns rejecting.)
        let mut check_order: Vec<usize> = (0..checks.len()).collect();
        let dense: Vec<Dense<'_>> = checks.iter().map(|c| c.dense()).collect();
        let fused = Fused::new(&dense);
        // With a class, the nodes asked of the rules that pass: only they are scored here
        // (the kept ones have their raw scores in the class's answers).
        let mut asked_feasible = Vec::new();
        for i in range {
            let id = visited(order, start + i);
            let slot = id.0 as usize;
            if let Some(feasible) = kept.and_then(|k| k.feasible(slot)) {
                chunk.reused += 1;
                if feasible {
                    chunk.feasible.push(id);
                }
                continue;
            }
            let node = cluster.node(id);
            let passes = match fused.verdict(slot) {
                Some(true) => fused.rest.iter().all(|&c| {
                    scratch.clear();
                    checks[c].check(node, &mut scratch)
                }),
                Some(false) => false,
                None => {
                    let rejected_by =
                        first_rejecting(slot, node, checks, &dense, &check_order, &mut scratch);
                    if let Some(p) = rejected_by.filter(|p| *p > 0) {
                        check_order.swap(p - 1, p);
                    }
                    rejected_by.is_none()
                }
            };
            let feasible = passes
                && nominated
                    .is_none_or(|(n, pod)| prepared.passes_nominated(node, n.for_node(id), pod));
            if feasible {
                chunk.feasible.push(id);
            }
            if kept.is_some() {
                chunk.asked.verdict(slot, feasible);
                if feasible {
                    asked_feasible.push(id);
                }
            }
        }
        if kept.is_some() {
            // The raw scores of the nodes asked go to the class's answers, and the cycle
            // gathers every feasible node's from there. (Without a class, the pass scores
            // the feasible nodes it keeps once they are gathered: see `score_columns`.)
            let mut columns = vec![vec![0; asked_feasible.len()]; asking.len()];
            for (column, s) in columns.iter_mut().zip(&asking) {
                s.score_batch(cluster, &asked_feasible, column);
            }
            chunk.asked.raw_rows(&columns);
        }
        chunk.took = began.elapsed();
        chunk
    };
    let mut pass = Pass {
        feasible: Vec::with_capacity(want.min(all)),
        columns: Vec::new(),
        gathered: false,
        visited: 0,
        asked: Asked::new(asking.len()),
        reused: 0,
    };
    // What the pass cost, for the estimate that decides the next passes' split.
    let (mut timed_nodes, mut took) = (0, Duration::ZERO);
    let mut went_parallel = false;
    while pass.visited < all && pass.feasible.len() < want {
        let remaining = all - pass.visited;
        let batch = if want >= all {
            remaining
        } else {
            // As many nodes as should hold the feasible ones still wanted, at the rate seen
            // so far in this pass (every node before the first batch), and an eighth more:
            // most cycles end in one batch, and few nodes are evaluated only to be dropped.
            let need = want - pass.feasible.len();
            let expected = if pass.visited == 0 {
                need
            } else {
                need.saturating_mul(pass.visited) / pass.feasible.len().max(1)
            };
            remaining.min((expected + expected / 8).max(MIN_NODES_PER_TASK * 4))
        };
        let first = pass.visited;
        // A batch of a cluster too large for the caches costs more a node (its rows are read
        // cold), which the timed cost shows.
        let split = rayon::current_num_threads() > 1
            && batch >= MIN_NODES_PER_TASK * 2
            && cost.worth_splitting(batch);
        went_parallel |= split;
        let chunks: Vec<Chunk> = if !split {
            vec![run(first..first + batch)]
        } else {
            let tasks = (rayon::current_num_threads() * TASKS_PER_THREAD)
                .min(batch / MIN_NODES_PER_TASK)
                .max(1);
            let size = batch.div_ceil(tasks);
            (0..tasks)
                .into_par_iter()
                .map(|t| run(first + t * size..(first + (t + 1) * size).min(first + batch)))
                .collect()
        };
        for chunk in chunks {
            timed_nodes += chunk.len;
            took += chunk.took;
            // Every asked answer is right for this cluster, whether or not the pass uses it.
            pass.asked.append(&chunk.asked);
            pass.reused += chunk.reused;
            let room = want - pass.feasible.len();
            if room == 0 {
                continue;
            }
            let take = chunk.feasible.len().min(room);
            // Stop right after the node that fills the quota; later nodes of the chunk
            // count as not visited, so the next cycle starts there. That node's offset is
            // looked up in visiting order, once a pass, rather than kept for every node.
            let base = pass.visited;
            pass.visited += if take == room {
                let last = chunk.feasible[take - 1];
                (0..chunk.len)
                    .position(|i| visited(order, start + base + i) == last)
                    .map_or(chunk.len, |offset| offset + 1)
            } else {
                chunk.len
            };
            if pass.feasible.is_empty() && take == chunk.feasible.len() {
                // The usual single whole chunk: moved, not copied.
                pass.feasible = chunk.feasible;
                continue;
            }
            pass.feasible.extend_from_slice(&chunk.feasible[..take]);
        }
    }
    if kept.is_none() {
        let scored;
        (pass.columns, scored) = score_columns(cluster, scorers, &pass.feasible, went_parallel);
        took += scored;
    }
    cost.record(timed_nodes, took);
    pass
}

/// Scores `feasible` with every per-node rule into one column a rule, a rule and a share of
/// the nodes at a time (raw scores do not depend on which other nodes are feasible), the
/// shares in parallel when the walk went parallel. Each share writes its own slices of the
/// columns, so nothing is gathered afterwards, and only the nodes the pass keeps are scored.
/// Returns the columns and the time the shares took on their threads.
fn score_columns(
    cluster: &Cluster,
    scorers: &[&dyn NodeScore],
    feasible: &[NodeId],
    parallel: bool,
) -> (Vec<Vec<i64>>, Duration) {
    let n = feasible.len();
    let mut columns = vec![vec![0; n]; scorers.len()];
    let tasks = if parallel {
        (rayon::current_num_threads() * TASKS_PER_THREAD)
            .min(n / MIN_NODES_PER_TASK)
            .max(1)
    } else {
        1
    };
    let size = n.div_ceil(tasks).max(1);
    // Each share's slice of every column.
    let mut shares: Vec<Vec<&mut [i64]>> = (0..tasks).map(|_| Vec::new()).collect();
    for column in &mut columns {
        for (share, slice) in shares.iter_mut().zip(column.chunks_mut(size)) {
            share.push(slice);
        }
    }
    let score = |(nodes, share): (&[NodeId], Vec<&mut [i64]>)| {
        let began = Instant::now();
        for (s, out) in scorers.iter().zip(share) {
            s.score_batch(cluster, nodes, out);
        }
        began.elapsed()
    };
    let took = if tasks == 1 {
        feasible.chunks(size).zip(shares).map(score).sum()
    } else {
        feasible
            .par_chunks(size)
            .zip(shares.into_par_iter())
            .map(score)
            .sum()
    };
    (columns, took)
}

/// The node at position `at` of a walk round the visiting order `order`, where
/// `at < 2 * order.len()`: one subtraction instead of a division per node.
#[inline]
fn visited(order: &[NodeId], at: usize) -> NodeId {
    order[if at >= order.len() {
        at - order.len()
    } else {
        at
    }]
}

/// A pass's dense checks folded into one test a node: the label columns and masks, then one
/// read of the node's row for every row test. A node that passes it needs only the checks
/// without dense tables (`rest`); a node a table rejects is infeasible whatever the others
/// say; a node a table cannot decide takes the checks one by one ([`first_rejecting`]).
struct Fused<'a> {
    rows: Option<&'a [NodeFit]>,
    /// The row flags every `RowTest::Clear` wants clear.
    clear: u32,
    fits: Vec<FitRequest>,
    /// (label column by slot, the value it must hold), of every `Dense::Labels` check.
    labels: Vec<(&'a [Option<Sym>], Sym)>,
    masks: Vec<&'a [bool]>,
    /// The checks the test leaves out, in policy order.
    rest: Vec<usize>,
}

impl<'a> Fused<'a> {
    fn new(dense: &[Dense<'a>]) -> Self {
        let mut fused = Fused {
            rows: None,
            clear: 0,
            fits: Vec::new(),
            labels: Vec::new(),
            masks: Vec::new(),
            rest: Vec::new(),
        };
        for (c, d) in dense.iter().enumerate() {
            match *d {
                Dense::Rows(rows, test) if fused.rows.is_none_or(|r| std::ptr::eq(r, rows)) => {
                    fused.rows = Some(rows);
                    match test {
                        RowTest::Clear(flags) => fused.clear |= flags,
                        RowTest::Fits(request) => fused.fits.push(request),
                    }
                }
                Dense::Labels(pairs) => fused.labels.extend_from_slice(pairs),
                Dense::Mask(mask) => fused.masks.push(mask),
                Dense::Rows(..) | Dense::No => fused.rest.push(c),
            }
        }
        fused
    }

    /// Whether every folded check passes the node in `slot` (true), one rejects it (false),
    /// or a row cannot tell (None: a flag is set that only the check can judge, or a room
    /// did not fit its field).
    #[inline]
    fn verdict(&self, slot: usize) -> Option<bool> {
        let tables =
            labels_hold(&self.labels, slot) && self.masks.iter().all(|mask| mask_holds(mask, slot));
        if !tables {
            return Some(false);
        }
        if let Some(rows) = self.rows {
            let row = rows.get(slot)?;
            let mut undecided = row.any(self.clear);
            for request in &self.fits {
                match row.fits(request) {
                    Some(true) => {}
                    Some(false) => return Some(false),
                    None => undecided = true,
                }
            }
            if undecided {
                return None;
            }
        }
        Some(true)
    }
}

/// The position in `check_order` of the first check that rejects `node` (in `slot`), if
/// any.
#[inline]
fn first_rejecting(
    slot: usize,
    node: &NodeInfo,
    checks: &[Box<dyn NodeCheck + '_>],
    dense: &[Dense<'_>],
    check_order: &[usize],
    scratch: &mut Vec<Reason>,
) -> Option<usize> {
    scratch.clear();
    check_order
        .iter()
        .position(|&c| match dense[c].passes(slot) {
            Some(passes) => !passes,
            None => !checks[c].check(node, scratch),
        })
}

/// Asks the rules about `nodes` (a class's few nodes without a kept answer) and keeps the
/// answers (the raw scores of `scorers`, those the class keeps), so that the pass can walk
/// kept verdicts alone. The checks' dense tables at hand answer first, as in a pass.
/// Returns how many nodes it asked.
fn ask_few(
    cluster: &Cluster,
    prepared: &PreparedFilters<'_>,
    scorers: &[&dyn NodeScore],
    nodes: &[NodeId],
    kept: &mut Answers,
) -> usize {
    let checks = &prepared.checks;
    let dense: Vec<Dense<'_>> = checks.iter().map(|c| c.dense_at_hand()).collect();
    let fused = Fused::new(&dense);
    let check_order: Vec<usize> = (0..checks.len()).collect();
    let mut scratch = Vec::new();
    let mut raw = Vec::with_capacity(scorers.len());
    let mut asked = 0;
    for id in nodes {
        let slot = id.0 as usize;
        if kept.feasible(slot).is_some() {
            // Listed twice (see `Answers::few_unknown`), and asked already.
            continue;
        }
        asked += 1;
        let node = cluster.node(*id);
        let feasible = match fused.verdict(slot) {
            Some(true) => fused.rest.iter().all(|&c| {
                scratch.clear();
                checks[c].check(node, &mut scratch)
            }),
            Some(false) => false,
            None => {
                first_rejecting(slot, node, checks, &dense, &check_order, &mut scratch).is_none()
            }
        };
        raw.clear();
        if feasible {
            raw.extend(scorers.iter().map(|s| s.score_at(slot, node)));
        }
        kept.keep(slot, feasible, &raw);
    }
    asked
}

/// [`evaluate`] when the class's answers cover every node: a walk over kept verdicts, in
/// visiting order, stopping right after the node that fills the quota.
fn walk_kept(order: &[NodeId], walk: Walk, kept: &Answers) -> Pass {
    let all = order.len();
    let mut feasible = Vec::with_capacity(walk.want.min(all));
    let mut visited = 0;
    let (tail, head) = order.split_at(walk.start);
    for id in head.iter().chain(tail) {
        if feasible.len() == walk.want {
            break;
        }
        visited += 1;
        if kept.feasible(id.0 as usize) == Some(true) {
            feasible.push(*id);
        }
    }
    Pass {
        feasible,
        columns: Vec::new(),
        gathered: false,
        visited,
        asked: Asked::new(0),
        reused: visited,
    }
}

/// Node answers a pass asked of the rules: (node slot, feasible), and the raw scores of
/// the feasible ones, `width` each.
struct Asked {
    width: usize,
    nodes: Vec<(u32, bool)>,
    raw: Vec<i64>,
}

impl Asked {
    fn new(width: usize) -> Self {
        Asked {
            width,
            nodes: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// Records a node's verdict; a feasible node's raw scores follow with
    /// [`Asked::raw_rows`], in the same order.
    fn verdict(&mut self, slot: usize, feasible: bool) {
        self.nodes.push((slot as u32, feasible));
    }

    /// Appends the raw scores of feasible nodes given as one column per rule (`width` of
    /// them, equally long), a node's row at a time.
    fn raw_rows(&mut self, columns: &[Vec<i64>]) {
        let rows = columns.first().map_or(0, Vec::len);
        self.raw.reserve(rows * columns.len());
        for row in 0..rows {
            self.raw.extend(columns.iter().map(|c| c[row]));
        }
    }

    fn append(&mut self, other: &Asked) {
        self.nodes.extend_from_slice(&other.nodes);
        self.raw.extend_from_slice(&other.raw);
    }

    fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Each answer: (node slot, feasible, raw scores; empty for a node that fails).
    fn iter(&self) -> impl Iterator<Item = (usize, bool, &[i64])> {
        let mut at = 0;
        self.nodes.iter().map(move |(slot, feasible)| {
            let raw = if *feasible {
                let r = &self.raw[at..at + self.width];
                at += self.width;
                r
            } else {
                &[][..]
            };
            (*slot as usize, *feasible, raw)
        })
    }
}

/// What one evaluation pass found.
struct Pass {
    /// Feasible nodes in visiting order.
    feasible: Vec<NodeId>,
    /// Raw scores of the feasible nodes, one column per per-node score rule.
    columns: Vec<Vec<i64>>,
    /// Whether `columns` came from the class's answers already (else, with a class, the
    /// cycle gathers them after keeping what the pass asked).
    gathered: bool,
    /// How many nodes were consumed (from the start position, in visiting order).
    visited: usize,
    /// The node answers asked of the rules, for a class to keep (only when it keeps any).
    asked: Asked,
    /// How many nodes were answered from kept answers.
    reused: usize,
}

/// One parallel task's share of a pass.
struct Chunk {
    /// Nodes evaluated.
    len: usize,
    /// The feasible nodes.
    feasible: Vec<NodeId>,
    /// The node answers asked of the rules (only when a class keeps them).
    asked: Asked,
    /// How many nodes were answered from kept answers.
    reused: usize,
    /// How long the chunk took, on its thread.
    took: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Interner;

    /// A pass is split by the work the estimate expects, and the estimate follows what
    /// passes cost.
    #[test]
    fn node_cost_splits_by_the_work_seen() {
        let mut cost = NodeCost::default();
        // The first guess: 40 ns a node, so 1,000 nodes (40 µs) stay on one thread.
        assert!(!cost.worth_splitting(1_000));
        assert!(cost.worth_splitting(2_000));
        // Cheap passes (5 ns a node) bring it down until 2,000 nodes stay too.
        for _ in 0..64 {
            cost.record(1_000, Duration::from_micros(5));
        }
        assert!(!cost.worth_splitting(2_000));
        assert!(cost.worth_splitting(20_000));
        // One slow pass moves it an eighth of the way, not all of it.
        let before = cost.ns_per_node;
        cost.record(1_000, Duration::from_millis(1));
        assert!(cost.ns_per_node > before && cost.ns_per_node < 1_000.0 / 4.0);
        // Too short a pass is mostly the clock: not taken in.
        let before = cost.ns_per_node;
        cost.record(MIN_TIMED_NODES - 1, Duration::from_millis(10));
        assert_eq!(cost.ns_per_node, before);
    }

    /// The folded test against each dense table asked alone: true only when every table
    /// passes, false when any rejects, None when a row cannot tell and none rejects.
    #[test]
    fn fused_verdict_agrees_with_the_tables_one_by_one() {
        let mut interner = Interner::default();
        let (east, west) = (interner.intern("east"), interner.intern("west"));
        let roomy = NodeFit {
            pod_room: 10,
            allocatable_milli_cpu: 4000,
            allocatable_memory: 4000,
            ..NodeFit::default()
        };
        let rows = [
            roomy,
            NodeFit {
                pod_room: 0,
                ..roomy
            },
            NodeFit {
                flags: NodeFit::HARD_TAINTS,
                ..roomy
            },
            NodeFit {
                flags: NodeFit::INEXACT,
                ..roomy
            },
            NodeFit {
                flags: NodeFit::HARD_TAINTS,
                pod_room: 0,
                ..roomy
            },
        ];
        let zones = [Some(east), Some(east), Some(east), Some(east), Some(west)];
        let pairs = [(&zones[..], east)];
        let mask = [true, true, true, true, true];
        let request = FitRequest {
            milli_cpu: 100,
            memory: 100,
            ephemeral_storage: 0,
            requests_nothing: false,
        };
        let dense = [
            Dense::Rows(&rows, RowTest::Clear(NodeFit::HARD_TAINTS)),
            Dense::Rows(&rows, RowTest::Fits(request)),
            Dense::Labels(&pairs),
            Dense::Mask(&mask),
            Dense::No,
        ];
        let fused = Fused::new(&dense);
        assert_eq!(fused.rest, vec![4]);
        // (slot, want): room and no flag; no pod room; a taint only the check can judge; a
        // clamped room; a taint but another zone.
        let cases = [
            (0, Some(true)),
            (1, Some(false)),
            (2, None),
            (3, None),
            (4, Some(false)),
            (5, Some(false)),
        ];
        for (slot, want) in cases {
            assert_eq!(fused.verdict(slot), want, "slot {slot}");
            let alone: Vec<Option<bool>> = dense[..4].iter().map(|d| d.passes(slot)).collect();
            let expected = if alone.contains(&Some(false)) {
                Some(false)
            } else if alone.contains(&None) {
                None
            } else {
                Some(true)
            };
            assert_eq!(expected, want, "slot {slot}: {alone:?}");
        }
    }
}
