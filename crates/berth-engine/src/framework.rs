//! The rule framework: how filters and scores plug into a scheduling cycle.
//!
//! A rule is prepared once per pod (upstream's PreFilter / PreScore) and then asked about
//! each node. Preparing returns the cheapest form that answers correctly: `Skip` when the
//! rule cannot reject this pod anywhere, `Constant` when a score is the same for every node.
//! Built-in rules and WASM plugins implement the same traits.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::cluster::{Cluster, FitRequest, NodeFit, NodeId, NodeInfo};
use crate::labels::Sym;
use crate::podinfo::PodInfo;

/// The largest score a rule gives a node.
pub const MAX_NODE_SCORE: i64 = 100;

/// Why a node cannot take the pod. Most reasons are constants; a few carry details.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// A fixed reason string.
    Static(&'static str),
    /// A reason built at run time (taint details, extended resource names, plugin reasons).
    Owned(Arc<str>),
}

impl Reason {
    /// The reason text.
    pub fn as_str(&self) -> &str {
        match self {
            Reason::Static(s) => s,
            Reason::Owned(s) => s,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Reason::Static(s)
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Self {
        Reason::Owned(s.into())
    }
}

/// What a rule sees of the cycle: the cluster snapshot and the pod being placed.
#[derive(Clone, Copy)]
pub struct CycleContext<'a> {
    /// The cluster, read-only for the whole cycle.
    pub cluster: &'a Cluster,
    /// The pod being scheduled.
    pub pod: &'a PodInfo,
    /// Whether some pod is nominated to a node. Filters are then also asked about nodes with
    /// those pods added (upstream's `addNominatedPods`), so a rule whose check counts pods
    /// (see [`NodeCheck::count_pod`]) must not skip a pod only because no pod in the cluster
    /// can reject it: a nominated one might.
    pub nominated: bool,
}

/// Changes to the pod counts a check prepared, on one node copy with pods added or removed
/// (upstream's copy of the cycle state after PreFilter extensions' AddPod/RemovePod). Keyed
/// by (a slot the check chooses, topology key, value); all changes concern the copied node's
/// own topology domains, so there are few entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountChanges {
    entries: Vec<((u32, Sym, Sym), i64)>,
}

impl CountChanges {
    /// Adds `delta` to the count of (`slot`, `key`, `value`).
    pub fn add(&mut self, slot: u32, key: Sym, value: Sym, delta: i64) {
        let at = (slot, key, value);
        match self.entries.iter_mut().find(|(k, _)| *k == at) {
            Some((_, d)) => *d += delta,
            None => self.entries.push((at, delta)),
        }
    }

    /// The change to the count of (`slot`, `key`, `value`).
    pub fn get(&self, slot: u32, key: Sym, value: Sym) -> i64 {
        let at = (slot, key, value);
        self.entries
            .iter()
            .find(|(k, _)| *k == at)
            .map_or(0, |(_, d)| *d)
    }

    /// Every non-zero change: ((slot, key, value), delta).
    pub fn iter(&self) -> impl Iterator<Item = ((u32, Sym, Sym), i64)> + '_ {
        self.entries.iter().copied().filter(|(_, d)| *d != 0)
    }
}

/// How long a prepared rule's answer about a node stays right for later pods of the same
/// class (pods equal in everything but their identity, see [`crate::classes`]), so that the
/// cycle of the next such pod can reuse it instead of asking again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reuse {
    /// Ask again for every pod: nothing is known (the default).
    Never,
    /// The answer follows from the node (its object and its pods), the pod's class, the
    /// cluster's objects other than pods, the pods in the node's topology domains of `keys`
    /// (and, for any pod placed or removed, the domains of its own affinity terms' keys), and
    /// `summary`: a digest the rule makes of whatever cluster-wide state it read, such as a
    /// minimum count across domains. A change to any of these makes the cycle ask again.
    While {
        /// Topology keys whose domains the answer counts pods in.
        keys: Vec<Sym>,
        /// Digest of the cluster-wide state the answer depends on.
        summary: u64,
    },
}

impl Reuse {
    /// An answer that follows from the node and the pod alone.
    pub fn node_local() -> Self {
        Reuse::While {
            keys: Vec::new(),
            summary: 0,
        }
    }

    /// A digest of `state` for [`Reuse::While::summary`].
    pub fn digest(state: &impl std::hash::Hash) -> u64 {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        state.hash(&mut h);
        h.finish()
    }
}

/// A check's verdict by node slot, read from dense tables (see [`NodeCheck::dense`]).
#[derive(Clone, Copy)]
pub enum Dense<'a> {
    /// None: the cycle asks [`NodeCheck::check`].
    No,
    /// Every node's verdict, indexed by slot; a slot past the end fails.
    Mask(&'a [bool]),
    /// A node passes when, for every pair, its value in the label column (indexed by slot)
    /// is the pair's value.
    Labels(&'a [(&'a [Option<Sym>], Sym)]),
    /// The node's row in the cluster's [`NodeFit`] table (indexed by slot) answers.
    Rows(&'a [NodeFit], RowTest),
}

/// What a check reads of a node's [`NodeFit`] row.
#[derive(Clone, Copy)]
pub enum RowTest {
    /// The node passes when none of these flags is set; with one set, only `check` can tell.
    Clear(u32),
    /// The node has room for these requests ([`NodeFit::fits`]).
    Fits(FitRequest),
}

impl Dense<'_> {
    /// The verdict on the node in `slot`, or None when only `check` can tell.
    #[inline]
    pub fn passes(&self, slot: usize) -> Option<bool> {
        match self {
            Dense::No => None,
            Dense::Mask(mask) => Some(mask_holds(mask, slot)),
            Dense::Labels(pairs) => Some(labels_hold(pairs, slot)),
            Dense::Rows(rows, test) => {
                let row = rows.get(slot)?;
                match test {
                    RowTest::Clear(flags) => (!row.any(*flags)).then_some(true),
                    RowTest::Fits(request) => row.fits(request),
                }
            }
        }
    }
}

/// A `Dense::Mask`'s verdict on the node in `slot` (a slot past the end fails).
#[inline]
pub fn mask_holds(mask: &[bool], slot: usize) -> bool {
    mask.get(slot).copied().unwrap_or(false)
}

/// A `Dense::Labels` verdict on the node in `slot`: every column holds its pair's value.
#[inline]
pub fn labels_hold(pairs: &[(&[Option<Sym>], Sym)], slot: usize) -> bool {
    pairs
        .iter()
        .all(|(column, value)| column.get(slot).copied().flatten() == Some(*value))
}

/// The per-node check of a filter, after preparation.
pub trait NodeCheck: Send + Sync {
    /// Whether the node passes; on failure, pushes one or more reasons to `reasons`.
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool;

    /// How the cycle can test a node from dense cluster tables by its slot (`NodeId.0`),
    /// without touching the node, when the check has such tables; `check` still gives the
    /// reasons. Must agree with `check`.
    fn dense(&self) -> Dense<'_> {
        Dense::No
    }

    /// [`NodeCheck::dense`] when handing it out costs nothing (a table the cluster keeps, a
    /// mask already built), else [`Dense::No`]: a cycle asking a few nodes again uses this,
    /// where building an every-node table would cost more than the few. The default gives
    /// `dense`, for checks whose tables are kept by the cluster.
    fn dense_at_hand(&self) -> Dense<'_> {
        self.dense()
    }

    /// Whether the verdict on a node follows from that node (its object, its pods and their
    /// aggregates) and the pod alone: not from other nodes, where other pods run, or
    /// cluster-wide objects (volumes, namespaces, Services). Preemption reuses dry runs on
    /// an unchanged node across equal pods only when every check says so. False unless a
    /// check knows better.
    fn node_local(&self) -> bool {
        false
    }

    /// How long this check's verdicts hold for later pods of the class. A node-local check
    /// holds while its node is unchanged; others say for themselves.
    fn reuse(&self) -> Reuse {
        if self.node_local() {
            Reuse::node_local()
        } else {
            Reuse::Never
        }
    }

    /// Upstream's PreFilter extensions AddPod (`delta` 1) and RemovePod (-1), for a check
    /// whose prepared state counts pods across nodes (inter-pod affinity, topology spread):
    /// records in `changes` what adding or removing `pod` on (a copy of) `node` changes in
    /// those counts. What the node aggregates itself (resources, ports) is already in the
    /// copy; checks reading only that keep the default, which records nothing.
    fn count_pod(
        &self,
        _changes: &mut CountChanges,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _delta: i64,
    ) {
    }

    /// [`NodeCheck::check`] on a copy of a cluster node whose pods changed, with the count
    /// changes [`NodeCheck::count_pod`] recorded for it.
    fn check_changed(
        &self,
        node: &NodeInfo,
        _changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        self.check(node, reasons)
    }
}

/// The outcome of preparing a filter for one pod.
pub enum FilterPrep<'a> {
    /// The rule has nothing to check for this pod: every node passes it.
    Skip,
    /// Check each node.
    Check(Box<dyn NodeCheck + 'a>),
    /// The pod cannot be placed anywhere, for these reasons (given to every node).
    RejectAll(Vec<Reason>),
}

impl<'a> FilterPrep<'a> {
    /// `Check` when the rule has something to check for this pod, else `Skip`.
    pub fn check_if(check: Option<impl NodeCheck + 'a>) -> Self {
        match check {
            Some(c) => FilterPrep::Check(Box::new(c)),
            None => FilterPrep::Skip,
        }
    }
}

/// How a node that failed a filter might still take the pod: upstream's status codes
/// `Unschedulable` and `UnschedulableAndUnresolvable`. Preemption looks only at nodes whose
/// failures are all `Unschedulable`: removing pods cannot fix the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// Removing pods from the node could make it fit (resources, ports, anti-affinity).
    Unschedulable,
    /// Nothing about the node's pods can change the outcome (selectors, taints, node name,
    /// volume topology).
    UnschedulableAndUnresolvable,
}

/// An API write to make before the pod is bound (upstream's PreBind), in the API's own
/// terms, so whoever carries it out needs to know no rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiWrite {
    /// Point the PersistentVolume `volume` at the claim (its `claimRef`); nothing to do if it
    /// names that claim already, a conflict if it names another.
    ClaimVolume {
        /// The volume's name.
        volume: String,
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
    },
    /// Set an annotation on a PersistentVolumeClaim; nothing to do if it has that value.
    AnnotateClaim {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
        /// The annotation's key.
        key: String,
        /// Its value.
        value: String,
    },
}

/// What one filter's Reserve recorded for its own Unreserve: opaque to everyone else, as
/// upstream's CycleState entries are.
pub type ReserveState = Arc<dyn Any + Send + Sync>;

/// What Reserve did for one placement: the API writes the caller must make before the pod
/// is bound, and each filter's own state for Unreserve.
#[derive(Clone, Default)]
pub struct Reservation {
    /// The writes, in order.
    pub writes: Vec<ApiWrite>,
    /// (the filter's policy entry name, its state), in Reserve's order. Keyed by name, not
    /// position, so a scheduler reloaded between Reserve and Unreserve hands each state to
    /// the filter of the same entry, if it still has one.
    pub(crate) states: Vec<(String, ReserveState)>,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("writes", &self.writes)
            .field(
                "states",
                &self.states.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A filter (a policy predicate).
pub trait FilterRule: Send + Sync {
    /// Prepares the rule for one pod.
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a>;

    /// The kind of one of this rule's failure reasons (from `check` or `RejectAll`), as
    /// upstream's plugin for the predicate returns it. Most failures are `Unschedulable`.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::Unschedulable
    }

    /// Reserve: records in the cluster the side effects of placing `pod` on `node` that
    /// later cycles must see before the pod is bound (upstream's Reserve extension point),
    /// pushes to `writes` what the API must be told before the binding (upstream's PreBind),
    /// and returns what its Unreserve needs. Runs before the pod is assigned; the default
    /// does nothing.
    fn reserve(
        &self,
        _cluster: &mut Cluster,
        _pod: &PodInfo,
        _node: NodeId,
        _writes: &mut Vec<ApiWrite>,
    ) -> Option<ReserveState> {
        None
    }

    /// Unreserve: undoes what `reserve` recorded (`state` is what it returned), when the
    /// placement fails later (a rejected binding). The default does nothing.
    fn unreserve(&self, _cluster: &mut Cluster, _state: &ReserveState) {}
}

/// The per-node scoring of a score rule, after preparation.
pub trait NodeScore: Send + Sync {
    /// The node's raw score.
    fn score(&self, node: &NodeInfo) -> i64;
    /// The raw score of the cluster's node in `slot` (which is `node`), read from dense
    /// cluster tables without touching the node when the rule has them: the cycle's walk
    /// over the nodes asks this. The default asks `score`. Must agree with `score`.
    #[inline]
    fn score_at(&self, _slot: usize, node: &NodeInfo) -> i64 {
        self.score(node)
    }
    /// Writes the raw scores of the cluster's `nodes` into `out` (as long as `nodes`), in
    /// order: the walk asks this once for each share of the feasible nodes, so a rule reading
    /// dense tables runs one tight loop instead of a call a node. The default asks `score_at`
    /// of each. Must agree with `score`.
    fn score_batch(&self, cluster: &Cluster, nodes: &[NodeId], out: &mut [i64]) {
        for (score, id) in out.iter_mut().zip(nodes) {
            *score = self.score_at(id.0 as usize, cluster.node(*id));
        }
    }
    /// Turns raw scores of the feasible nodes into 0..=MAX_NODE_SCORE, in place. The default
    /// keeps them: rules whose raw score is already in range need nothing.
    fn normalize(&self, _nodes: &[NodeId], _scores: &mut [i64]) {}
    /// Overwrites `scores` with the raw scores of the feasible nodes `nodes`, for
    /// explanations, in a rule whose raw scores depend on which nodes are feasible: it
    /// computes them in `normalize`, and `score` gives a placeholder. The default keeps
    /// what `score` gave.
    fn raw_scores(&self, _nodes: &[NodeId], _scores: &mut [i64]) {}
    /// How long this rule's raw scores ([`NodeScore::score`]) hold for later pods of the
    /// class. Normalising runs for every pod, so only `score` need say.
    fn reuse(&self) -> Reuse {
        Reuse::Never
    }
    /// Whether a class keeps this rule's raw scores per node (see [`crate::classes`]). A rule
    /// whose [`NodeScore::score_batch`] only reads what `prepare` computed (a count by node
    /// slot, a placeholder) says no: scoring every feasible node again costs less than
    /// keeping a copy and reading it back, and the copies kept are smaller.
    fn keeps_raw(&self) -> bool {
        true
    }
    /// Whether [`NodeScore::normalize`] leaves every raw score as it is (a rule whose raw
    /// score is already in range): a cycle that sums kept raw scores into totals may then
    /// skip normalising. The default says no.
    fn normalizes_to_itself(&self) -> bool {
        false
    }
    /// The label whose values group the nodes in [`NodeScore::grouped`], when the rule can
    /// give its scores so. The default gives None: the cycle normalises as usual.
    fn group_key(&self) -> Option<Sym> {
        None
    }
    /// The normalised scores of the cycle's feasible nodes (`feasible`), grouped by their
    /// value of [`NodeScore::group_key`], when the rule can give them so: most spreading
    /// scores depend only on a node's topology domain once the few nodes running matching
    /// pods are set apart, so a cycle reads a table instead of normalising a column. The
    /// default gives None.
    fn grouped(&self, _feasible: &dyn FeasibleNodes) -> Option<Grouped> {
        None
    }
}

/// A cycle's feasible nodes as [`NodeScore::grouped`] reads them.
pub trait FeasibleNodes {
    /// How many nodes are feasible.
    fn count(&self) -> usize;
    /// Whether node `id` is feasible.
    fn contains(&self, id: NodeId) -> bool;
    /// How many feasible nodes carry each value of label `key` (only values some node
    /// carries, in no set order), and how many lack the label; None for a key not counted.
    fn by_value(&self, key: Sym) -> Option<(Vec<(Sym, u32)>, u32)>;
}

/// A rule's normalised scores of a cycle's feasible nodes, by their value of the rule's
/// label (see [`NodeScore::grouped`]): a node scores its value's entry of `table` (the
/// nodes without the label: `unlabelled`) unless it is listed in `apart` with a score of
/// its own. Must agree with `normalize`.
#[derive(Debug, Clone)]
pub struct Grouped {
    /// Each value's normalised score: every value a feasible node carries.
    pub table: Vec<(Sym, i64)>,
    /// The normalised score of the nodes without the label.
    pub unlabelled: i64,
    /// The nodes scored apart, each at most once, with their normalised scores.
    pub apart: Vec<(NodeId, i64)>,
}

/// The outcome of preparing a score rule for one pod.
pub enum ScorePrep<'a> {
    /// Every node gets this (already normalised) score.
    Constant(i64),
    /// Every node has the raw score `raw`, which normalises to `normalized` (explanations
    /// show both, as for a per-node rule).
    Uniform {
        /// The raw score of every node.
        raw: i64,
        /// Its normalised score.
        normalized: i64,
    },
    /// Score each node, then normalise.
    PerNode(Box<dyn NodeScore + 'a>),
}

/// A score rule (a policy priority).
pub trait ScoreRule: Send + Sync {
    /// Prepares the rule for one pod.
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a>;
}

/// The largest of `values`, None when empty. Cycles take this over every feasible node's
/// scores for every pod; the target's baseline SIMD has no 64-bit compare, so four
/// independent running maxima let the CPU overlap what one chain of compares would
/// serialise.
pub fn highest(values: &[i64]) -> Option<i64> {
    let first = *values.first()?;
    let mut lanes = [first; 4];
    let mut quads = values.chunks_exact(4);
    for quad in &mut quads {
        for (lane, v) in lanes.iter_mut().zip(quad) {
            *lane = (*lane).max(*v);
        }
    }
    for v in quads.remainder() {
        lanes[0] = lanes[0].max(*v);
    }
    lanes.into_iter().max()
}

/// The smallest and the largest of `values`, None when empty: one pass with four running
/// pairs, as [`highest`], where separate passes for each would read the scores twice.
pub fn bounds(values: &[i64]) -> Option<(i64, i64)> {
    let first = *values.first()?;
    let (mut low, mut high) = ([first; 4], [first; 4]);
    let mut quads = values.chunks_exact(4);
    for quad in &mut quads {
        for ((l, h), v) in low.iter_mut().zip(high.iter_mut()).zip(quad) {
            *l = (*l).min(*v);
            *h = (*h).max(*v);
        }
    }
    for v in quads.remainder() {
        low[0] = low[0].min(*v);
        high[0] = high[0].max(*v);
    }
    Some((low.into_iter().min()?, high.into_iter().max()?))
}

/// Upstream's `reduce(max, reverse)` normalisation: scale to 0..=max by the largest raw
/// score (integer division); all zero gives 0 (or `max` if reversed).
pub fn normalize_reduce(scores: &mut [i64], max: i64, reverse: bool) {
    // The largest alone first: rules with nothing to prefer (no preferred affinity, no
    // tolerated soft taint) score every node 0, and one pass settles those.
    let highest = highest(scores).unwrap_or(0);
    if highest == 0 {
        if reverse {
            scores.fill(max);
        }
        return;
    }
    map_scores(scores, |s| {
        let v = max * s / highest;
        if reverse { max - v } else { v }
    });
}

/// Replaces each score `s` with `f(s)`. Normalisers divide, and a division per node is most
/// of their cost; when the scores span fewer distinct values than half the nodes (counts,
/// small percentages), `f` runs once per value of the span and each node reads a table.
pub fn map_scores(scores: &mut [i64], f: impl Fn(i64) -> i64) {
    if let Some((min, max)) = bounds(scores) {
        map_scores_within(scores, min, max, f);
    }
}

/// [`map_scores`] for a caller that found the scores' bounds already: `min <= s <= max` for
/// every score `s`.
pub fn map_scores_within(scores: &mut [i64], min: i64, max: i64, f: impl Fn(i64) -> i64) {
    let span = max
        .checked_sub(min)
        .and_then(|d| usize::try_from(d).ok())
        .filter(|d| *d < scores.len() / 2);
    match span {
        Some(span) => {
            let table: Vec<i64> = (0..=span as i64).map(|d| f(min + d)).collect();
            for s in scores.iter_mut() {
                *s = table[(*s - min) as usize];
            }
        }
        None => {
            for s in scores.iter_mut() {
                *s = f(*s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table path (few distinct values) and the direct one give `f` of every score.
    #[test]
    fn map_scores_applies_f_to_every_score() {
        let f = |s: i64| MAX_NODE_SCORE * (90 + 3 - s) / 90;
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![7],
            vec![3, 90, 3, 3, 45, 90, 3, 3, 4, 5],
            vec![3, 90, 45],
            vec![i64::MIN, 0, i64::MAX, 0, 0, 0],
            (0..1000).map(|i| i % 7 * 13).collect(),
        ];
        for scores in cases {
            let mut got = scores.clone();
            map_scores(&mut got, |s| f(s.clamp(-1000, 1000)));
            let want: Vec<i64> = scores.iter().map(|s| f((*s).clamp(-1000, 1000))).collect();
            assert_eq!(got, want, "{scores:?}");
        }
    }

    #[test]
    fn bounds_table() {
        type Case<'a> = (&'a [i64], Option<(i64, i64)>);
        let cases: &[Case<'_>] = &[
            (&[], None),
            (&[7], Some((7, 7))),
            (&[3, -1, 9, 4, 2], Some((-1, 9))),
            (&[5, 6, 7, 8, 1], Some((1, 8))),
            (
                &[1, 2, 3, 4, 5, 6, 7, i64::MAX, i64::MIN],
                Some((i64::MIN, i64::MAX)),
            ),
            (&[4, 4, 4, 4, 4, 4, 4, 4], Some((4, 4))),
        ];
        for (values, want) in cases {
            assert_eq!(bounds(values), *want, "{values:?}");
        }
    }

    #[test]
    fn highest_table() {
        let cases: &[(&[i64], Option<i64>)] = &[
            (&[], None),
            (&[7], Some(7)),
            (&[3, -1, 9, 4, 2], Some(9)),
            (&[-5, -5, -5, -5, -5, -5, -5, -5, -9], Some(-5)),
            (&[1, 2, 3, 4, 5, 6, 7, i64::MAX], Some(i64::MAX)),
            (&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], Some(11)),
        ];
        for (values, want) in cases {
            assert_eq!(highest(values), *want, "{values:?}");
        }
    }

    #[test]
    fn reduce_table() {
        let cases: &[(&[i64], i64, bool, &[i64])] = &[
            (&[0, 0], 100, false, &[0, 0]),
            (&[0, 0], 100, true, &[100, 100]),
            (&[1, 2, 4], 100, false, &[25, 50, 100]),
            (&[1, 2, 4], 100, true, &[75, 50, 0]),
            (&[1, 3], 100, false, &[33, 100]),
        ];
        for (input, max, reverse, want) in cases {
            let mut s = input.to_vec();
            normalize_reduce(&mut s, *max, *reverse);
            assert_eq!(&s, want, "{input:?} reverse={reverse}");
        }
    }
}
