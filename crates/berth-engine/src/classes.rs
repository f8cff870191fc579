//! Equivalence classes: answers shared by equal pods.
//!
//! Most pending pods come in runs from one controller, equal in everything the rules read
//! (requests, selectors, affinity, tolerations, spread constraints, volumes, labels, owner).
//! For such a class the scheduler keeps, per node, the filters' verdict and the raw score of
//! each per-node score rule. The next pod of the class prepares its rules as usual (so every
//! cluster-wide input is read fresh) and then asks a node again only if its kept answer may
//! have moved since:
//! - the node itself gained or lost a pod;
//! - a pod was placed or removed in one of the node's topology domains that a rule counts in
//!   (the keys of [`Reuse::While`]), or in a domain of that pod's own affinity terms' keys;
//! - any other object changed (the cluster's [`crate::cluster::ChangeLog`] epoch), or a rule's
//!   summary of cluster-wide state (a minimum across domains, whether any pod matches) moved,
//!   or the set of rules that check or score the pod changed: then every node is asked again.
//!
//! Normalising (or summing the same totals from the kept scores and the spreading rules'
//! scores by zone, `scheduler/summed.rs`), the extenders and the choice among the best
//! nodes still run for every pod, over every feasible node, so decisions are those of a
//! cycle that asked every node: property tests schedule random clusters both ways and
//! compare them. Rules that cannot
//! say how long their answers hold ([`Reuse::Never`]: WASM plugins unless they declare
//! otherwise, history-based protections) keep the class from reusing anything, and nothing
//! is reused while a pod is nominated somewhere.
//!
//! The classes kept share a memory budget ([`ANSWER_BUDGET`]), so how many are kept follows
//! the cluster's size. When pods of many controllers take turns in the queue, a full set
//! keeps its classes rather than evicting one just before its next pod; a class idle for
//! long gives its room to a new one.

mod ranked;
mod tally;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::cluster::{Cluster, Cursor};
use crate::framework::Reuse;
use crate::labels::Sym;
use crate::model;
use crate::types::NodeId;

pub(crate) use ranked::{GroupScores, KEPT_MAX, Ranked, RankedAnswers, RankedFor};
pub(crate) use tally::{ComboCache, TalliedAnswers, Tally, TallyFor};

/// Bytes the classes' kept answers may take together. A class keeps a few bytes per node
/// slot and score rule and a tally (see [`capacity`]), so the number of classes kept follows the
/// cluster's size: with six per-node score rules, some 310 at 5,000 nodes, 19 at 100,000.
const ANSWER_BUDGET: usize = 64 << 20;
/// Fewest classes kept whatever the budget says.
const MIN_CLASSES: usize = 2;
/// Most classes kept, whatever the budget allows: looking a class up costs a scan of them.
const MAX_CLASSES: usize = 1024;
/// A class idle for more cycles than this many times the classes kept gives its room to a
/// new one (see [`Classes::admit`]).
const IDLE_BEFORE_EVICTION: u64 = 8;
/// How many classes seen once are remembered: a class keeps answers from its second pod on,
/// so a stream of pods that are all different pays for no answers it never reuses. Enough
/// for pods of 256 controllers taking turns; `berth bench --workload basic` (random
/// requests, repeats far apart) ran 4% slower with 1,024, admitting classes that seldom
/// came back.
const MAX_SEEN: usize = 256;
/// A class whose cycle reused less than 1/this of its answers (every placement moved most of
/// them, as with affinity over a domain holding every node) sits out some cycles.
const POOR_REUSE: u64 = 4;
/// The longest a class sits out, in its own cycles.
const MAX_BACKOFF: u32 = 64;

/// What makes two pending pods ask the rules the same questions: everything but their
/// identity, the timestamps, annotations (no rule reads a pod's) and the fields a binding or
/// nomination sets.
pub(crate) fn class_of(pod: &model::Pod) -> model::Pod {
    let mut p = pod.clone();
    p.meta.name.clear();
    p.meta.uid.clear();
    p.meta.annotations.clear();
    p.meta.creation_timestamp = 0;
    p.node_name = None;
    p.nominated_node_name = None;
    p.start_time = None;
    p
}

/// Whether `pod` is of the class whose signature ([`class_of`]) is `signature`, compared
/// field by field without cloning the pod (every cycle looks its class up). Every field is
/// named, so a field added to pods must be placed here too.
fn same_class(signature: &model::Pod, pod: &model::Pod) -> bool {
    let model::Pod {
        meta,
        node_name: _,
        scheduler_name,
        priority,
        priority_class_name,
        containers,
        init_containers,
        overhead,
        resources,
        allocated_pod_level,
        actual_pod_level,
        resize_infeasible,
        scheduling_gates,
        resource_claims,
        refused,
        node_selector,
        affinity,
        tolerations,
        volumes,
        host_network,
        topology_spread_constraints,
        preempt_never,
        nominated_node_name: _,
        start_time: _,
    } = pod;
    let model::Meta {
        name: _,
        namespace,
        uid: _,
        labels,
        annotations: _,
        creation_timestamp: _,
        deleting,
        owners,
    } = meta;
    let s = signature;
    s.meta.namespace == *namespace
        && s.meta.labels == *labels
        && s.meta.deleting == *deleting
        && s.meta.owners == *owners
        && s.scheduler_name == *scheduler_name
        && s.priority == *priority
        && s.priority_class_name == *priority_class_name
        && s.containers == *containers
        && s.init_containers == *init_containers
        && s.overhead == *overhead
        && s.resources == *resources
        && s.allocated_pod_level == *allocated_pod_level
        && s.actual_pod_level == *actual_pod_level
        && s.resize_infeasible == *resize_infeasible
        && s.scheduling_gates == *scheduling_gates
        && s.resource_claims == *resource_claims
        && s.refused == *refused
        && s.node_selector == *node_selector
        && s.affinity == *affinity
        && s.tolerations == *tolerations
        && s.volumes == *volumes
        && s.host_network == *host_network
        && s.topology_spread_constraints == *topology_spread_constraints
        && s.preempt_never == *preempt_never
}

/// A digest of the fields that tell most classes apart (namespace, labels, owners), so a
/// lookup compares whole signatures only with classes whose digest matches.
fn signature_key(signature: &model::Pod) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    signature.meta.namespace.hash(&mut h);
    signature.meta.labels.hash(&mut h);
    for owner in &signature.meta.owners {
        owner.uid.hash(&mut h);
    }
    h.finish()
}

/// The rules that answered for a class: which filters check it and which score rules score
/// it per node (indices into the scheduler's lists), with how long each answer holds (the
/// checks' in order, then the scorers'), and which scorers' raw scores are kept
/// ([`crate::framework::NodeScore::keeps_raw`]; the kept columns are those, in order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    pub checks: Vec<usize>,
    pub scorers: Vec<usize>,
    pub reuses: Vec<Reuse>,
    pub kept: Vec<bool>,
}

impl Shape {
    /// Whether every rule can say how long its answers hold.
    pub fn reusable(&self) -> bool {
        !self.reuses.contains(&Reuse::Never)
    }

    /// How many scorers' raw scores are kept.
    fn width(&self) -> usize {
        self.kept.iter().filter(|k| **k).count()
    }

    /// The topology keys any rule counts pods in.
    fn keys(&self) -> Vec<Sym> {
        let mut keys: Vec<Sym> = Vec::new();
        for r in &self.reuses {
            if let Reuse::While { keys: k, .. } = r {
                for key in k {
                    if !keys.contains(key) {
                        keys.push(*key);
                    }
                }
            }
        }
        keys
    }
}

/// Kept answers of one class, per node slot.
#[derive(Debug)]
pub(crate) struct Answers {
    signature: model::Pod,
    shape: Shape,
    keys: Vec<Sym>,
    cursor: Cursor,
    last_used: u64,
    /// Whether this class also ran the cycle before this one.
    consecutive: bool,
    known: Vec<bool>,
    /// How many of the cluster's nodes have no kept answer.
    unknown: usize,
    /// Nodes whose answers were forgotten since all were known (some may be known again),
    /// unless more than `stale_cap` were: then `stale_overflow`, and only a pass finds them.
    stale: Vec<NodeId>,
    stale_cap: usize,
    stale_overflow: bool,
    /// Whether no cycle has used the answers since they were last reset.
    fresh: bool,
    /// Cycles of its own the class still sits out, and how long it sat out last.
    dormant: u32,
    backoff: u32,
    feasible: Vec<bool>,
    /// Raw scores, one row per node slot of one score per per-node score rule (`width`):
    /// a cycle visits nodes in an order unrelated to their slots, and a row is one or two
    /// cache lines where a column per rule would cost a miss per rule.
    raw: Raw,
    width: usize,
    /// What the last cycle over every node gathered, while it still holds.
    view: Option<View>,
    /// The nodes ranked for cycles that sum their totals (see [`Ranked`]): built by the
    /// first such cycle of a run of the class's pods, dropped when another class's pod
    /// runs.
    ranked: Option<Ranked>,
    /// The feasible nodes counted by kept sum for cycles that sum their totals (see
    /// [`Tally`]): built by the first such cycle after the answers were reset or the
    /// cluster's epoch moved, kept up to date as answers are kept.
    tally: Option<Tally>,
    /// What the last tally that could not be built was for, so that cycles do not try
    /// again until that changes.
    untallied: Option<TallyFor>,
}

/// A class's feasible nodes in visiting order from one start: what a cycle over every node
/// finds from the kept answers. A placement moves the answers of a few nodes and rarely a
/// verdict, and a cycle over every node ends where it started, so the next such cycle copies
/// this list instead of walking every verdict. Dropped when a verdict flips.
#[derive(Debug)]
struct View {
    start: usize,
    feasible: Vec<NodeId>,
    /// The raw scores of `feasible` in its order, kept only by the class that ran the last
    /// cycle too (pods of one controller arriving together): copying them is cheaper than
    /// gathering them from the per-slot rows, but a copy per class would halve the classes
    /// the budget keeps.
    copy: Option<CopiedScores>,
}

/// See [`View::copy`].
#[derive(Debug)]
struct CopiedScores {
    columns: Vec<Vec<i64>>,
    /// The row in `feasible` of each node slot (`u32::MAX` for a node not in it).
    rows: Vec<u32>,
}

impl CopiedScores {
    fn of(feasible: &[NodeId], columns: Vec<Vec<i64>>, slots: usize) -> CopiedScores {
        let mut rows = vec![u32::MAX; slots];
        for (row, id) in feasible.iter().enumerate() {
            rows[id.0 as usize] = row as u32;
        }
        CopiedScores { columns, rows }
    }
}

impl Answers {
    /// The kept verdict for node slot `slot`: whether it passes every filter.
    #[inline]
    pub fn feasible(&self, slot: usize) -> Option<bool> {
        if self.known.get(slot).copied().unwrap_or(false) {
            Some(self.feasible[slot])
        } else {
            None
        }
    }

    /// Whether every node of the cluster has a kept answer.
    #[inline]
    pub fn all_known(&self) -> bool {
        self.unknown == 0
    }

    /// The nodes without a kept answer, when they are few (up to `most`) and the rest are
    /// known: asking them at once costs less than a pass that looks for them.
    pub fn few_unknown(&mut self, most: usize) -> Option<Vec<NodeId>> {
        if self.unknown > most || self.stale_overflow {
            return None;
        }
        let known = &self.known;
        let mut stale = std::mem::take(&mut self.stale);
        // A node forgotten, asked and forgotten again may be listed twice: the caller
        // skips the nodes known by the time it reaches them, which sorting to deduplicate
        // would cost more than.
        stale.retain(|id| !known[id.0 as usize]);
        Some(stale)
    }

    /// Keeps the answer for node slot `slot`: `raw` holds the raw scores of the scorers
    /// whose scores the class keeps, in order (empty for a node that fails).
    pub fn keep(&mut self, slot: usize, feasible: bool, raw: &[i64]) {
        if slot >= self.known.len() {
            return;
        }
        if self.known[slot] {
            self.untally(slot);
        }
        if let Some(tally) = self.tally.as_mut()
            && feasible
        {
            match ranked::weighted_row(raw, tally.weights()) {
                Some(new) => tally.counted(slot, new, true),
                // A score the tally cannot count: the usual path from now on.
                None => self.tally = None,
            }
        }
        if !self.known[slot] {
            self.unknown -= 1;
            if self.unknown == 0 {
                self.stale.clear();
                self.stale_overflow = false;
            }
        }
        self.known[slot] = true;
        if self.feasible[slot] != feasible {
            self.view = None;
        } else if let Some(copy) = self.view.as_mut().and_then(|v| v.copy.as_mut())
            && feasible
        {
            let row = copy.rows[slot] as usize;
            for (column, r) in copy.columns.iter_mut().zip(raw) {
                column[row] = *r;
            }
        }
        if let Some(ranked) = self.ranked.as_mut() {
            let new = if feasible {
                ranked::weighted_row(raw, ranked.weights())
            } else {
                None
            };
            if feasible && new.is_none() {
                // A score the ranking cannot count: the usual path from now on.
                self.ranked = None;
            } else {
                ranked.moved(slot, new);
            }
        }
        self.feasible[slot] = feasible;
        self.raw.set(slot * self.width, raw);
    }

    /// The kept raw scores of `nodes` (each known and feasible), one column per kept scorer.
    /// `whole`: `nodes` are every feasible node, in visiting order from this start, which
    /// [`Answers::view`] then gives while they hold.
    pub fn columns(&mut self, nodes: &[NodeId], whole: Option<usize>) -> Vec<Vec<i64>> {
        let columns = self.gather(nodes);
        let slots = self.known.len();
        self.view = whole.filter(|_| self.all_known()).map(|start| View {
            start,
            feasible: nodes.to_vec(),
            copy: self
                .consecutive
                .then(|| CopiedScores::of(nodes, columns.clone(), slots)),
        });
        columns
    }

    /// Keeps `nodes`, every feasible node in visiting order from `start`, as the view, when
    /// every answer is known (without scores: a cycle that sums its totals reads none).
    pub fn set_view(&mut self, start: usize, nodes: &[NodeId]) {
        if self.all_known() {
            self.view = Some(View {
                start,
                feasible: nodes.to_vec(),
                copy: None,
            });
        }
    }

    fn gather(&self, nodes: &[NodeId]) -> Vec<Vec<i64>> {
        self.raw.gather(self.width, nodes)
    }

    /// Every feasible node in visiting order from `start`, with their kept raw score columns,
    /// when every answer is known and the last cycle over every node found them from there.
    pub fn view(&mut self, start: usize) -> Option<(Vec<NodeId>, Vec<Vec<i64>>)> {
        if !self.all_known() {
            return None;
        }
        let slots = self.known.len();
        let consecutive = self.consecutive;
        let (raw, width) = (&self.raw, self.width);
        let view = self.view.as_mut().filter(|v| v.start == start)?;
        let columns = match &view.copy {
            Some(copy) => copy.columns.clone(),
            None => {
                let columns = raw.gather(width, &view.feasible);
                if consecutive {
                    view.copy = Some(CopiedScores::of(&view.feasible, columns.clone(), slots));
                }
                columns
            }
        };
        Some((view.feasible.clone(), columns))
    }

    /// Every feasible node in visiting order from `start`, when every answer is known and
    /// the last cycle over every node found them from there (as [`Answers::view`], without
    /// the scores).
    pub fn view_nodes(&self, start: usize) -> Option<&[NodeId]> {
        self.view
            .as_ref()
            .filter(|v| v.start == start && self.all_known())
            .map(|v| v.feasible.as_slice())
    }

    /// The kept raw scores, one row of [`Answers::width`] by node slot.
    pub fn rows(&self) -> &Raw {
        &self.raw
    }

    /// How many raw scores a node's row holds: one per scorer whose scores are kept.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The class's ranking (see [`Ranked`]) for `built_for`, kept up to date as answers
    /// are kept, or built afresh; None while some answer is not known, when the kept
    /// scores cannot be ranked, or when the class did not run the cycle before too: only
    /// the class of the last cycle keeps a ranking (pods of one controller arriving
    /// together), since keeping one up to date costs a cache miss or two per answer kept,
    /// which pods of many classes taking turns would pay for every class.
    pub fn ranking(
        &mut self,
        cluster: &Cluster,
        built_for: RankedFor,
    ) -> Option<RankedAnswers<'_>> {
        if !self.all_known() || !self.consecutive {
            return None;
        }
        let rows = (&self.raw, self.width);
        let kept = self.ranked.take().filter(|r| *r.built_for() == built_for);
        let ranked = match kept {
            Some(r) => r,
            None => Ranked::build(cluster, built_for, &self.feasible, rows)?,
        };
        Some(RankedAnswers {
            ranked: self.ranked.insert(ranked),
            feasible: &self.feasible,
        })
    }

    /// The class's tally (see [`Tally`]) for `built_for` with its view from `start`, kept
    /// up to date as answers are kept, or built afresh over `combos`; None while some
    /// answer is not known, without a view from `start` or with an empty one, and when
    /// the kept scores cannot be tallied.
    pub fn tally(
        &mut self,
        start: usize,
        built_for: TallyFor,
        combos: impl FnOnce() -> Option<Arc<tally::Combos>>,
    ) -> Option<TalliedAnswers<'_>> {
        if !self.all_known() || self.untallied.as_ref() == Some(&built_for) {
            return None;
        }
        let view = self
            .view
            .as_ref()
            .filter(|v| v.start == start && !v.feasible.is_empty())?;
        let rows = (&self.raw, self.width);
        let kept = self.tally.take().filter(|t| *t.built_for() == built_for);
        let tally = match kept {
            Some(t) => t,
            None => {
                match combos()
                    .and_then(|c| Tally::build(built_for.clone(), c, &self.feasible, rows))
                {
                    Some(t) => t,
                    None => {
                        self.untallied = Some(built_for);
                        return None;
                    }
                }
            }
        };
        Some(TalliedAnswers {
            tally: self.tally.insert(tally),
            feasible: &self.feasible,
            rows,
            view: &view.feasible,
        })
    }

    /// Forgets everything, sized for the cluster's node slots and the shape's scorers.
    fn reset(&mut self, cluster: &Cluster) {
        let slots = cluster.node_slots();
        self.view = None;
        self.ranked = None;
        self.tally = None;
        self.known.clear();
        self.known.resize(slots, false);
        self.unknown = cluster.node_count();
        self.stale.clear();
        self.stale_cap = stale_cap(cluster.node_count());
        self.stale_overflow = true;
        self.fresh = true;
        self.feasible.clear();
        self.feasible.resize(slots, false);
        self.width = self.shape.width();
        self.raw = Raw::Tiny(vec![0; slots * self.width]);
    }

    /// Takes node slot `slot`'s kept answer (known) out of the tally, if it counts it.
    fn untally(&mut self, slot: usize) {
        if let Some(tally) = self.tally.as_mut()
            && self.feasible[slot]
            && let Some(sum) = self.raw.weighted(slot, self.width, tally.weights())
        {
            tally.counted(slot, sum, false);
        }
    }

    /// Forgets the kept answer of `node`.
    fn forget(&mut self, node: NodeId) {
        let slot = node.0 as usize;
        if let Some(k) = self.known.get_mut(slot)
            && *k
        {
            *k = false;
            self.untally(slot);
            self.unknown += 1;
            if self.stale.len() < self.stale_cap {
                self.stale.push(node);
            } else {
                self.stale.clear();
                self.stale_overflow = true;
            }
        }
    }

    /// Judges one cycle's reuse: a class that reused little sits out a while (doubling
    /// each time, up to [`MAX_BACKOFF`] cycles), since keeping answers that every placement
    /// moves costs more than it saves.
    pub fn judge(&mut self, reused: u64, asked: u64) {
        if std::mem::take(&mut self.fresh) {
            return;
        }
        if reused * POOR_REUSE < reused + asked {
            self.backoff = (self.backoff * 2).clamp(4, MAX_BACKOFF);
            self.dormant = self.backoff;
        } else {
            self.backoff = 0;
        }
    }

    /// Forgets the answers that the cluster's changes since the last cycle may have moved.
    fn catch_up(&mut self, cluster: &Cluster) {
        let Some(changes) = cluster.changes().since(self.cursor) else {
            self.reset(cluster);
            return;
        };
        let keys = std::mem::take(&mut self.keys);
        // The domains of more than one node already forgotten by this catch-up: placements
        // between two pods of a class land in the same few zones again and again, and
        // forgetting a zone's nodes once for each costs a walk over them each time.
        let mut forgotten: Vec<(Sym, Sym)> = Vec::new();
        for change in changes {
            self.forget(change.node);
            for key in keys.iter().chain(&change.keys) {
                let value = cluster
                    .label_column(*key)
                    .and_then(|column| column.get(change.node.0 as usize).copied().flatten());
                let Some(value) = value else { continue };
                if forgotten.contains(&(*key, value)) {
                    continue;
                }
                let nodes = cluster.nodes_with_label(*key, value);
                if nodes.len() > 1 {
                    forgotten.push((*key, value));
                }
                for id in nodes {
                    self.forget(*id);
                }
            }
        }
        self.keys = keys;
    }
}

/// A class's raw scores by node slot. Most built-in rules score within 0..=100 and all
/// within `i32`, and the classes kept are read from memory on every cycle of theirs (pods of
/// many controllers taking turns find them out of the caches), so they are kept in a byte
/// until a score does not fit, then in 32 bits, then in 64: each time every score is
/// widened.
#[derive(Debug)]
pub(crate) enum Raw {
    Tiny(Vec<u8>),
    Narrow(Vec<i32>),
    Wide(Vec<i64>),
}

impl Raw {
    /// Keeps `scores` from index `at` on.
    fn set(&mut self, at: usize, scores: &[i64]) {
        // Checked first, then copied: this runs for every node a cycle asks, and
        // collecting the narrowed scores would allocate each time.
        if let Raw::Tiny(tiny) = self {
            if scores.iter().all(|s| u8::try_from(*s).is_ok()) {
                for (kept, s) in tiny[at..at + scores.len()].iter_mut().zip(scores) {
                    *kept = u8::try_from(*s).unwrap_or_default();
                }
                return;
            }
            *self = Raw::Narrow(tiny.iter().map(|s| i32::from(*s)).collect());
        }
        if let Raw::Narrow(narrow) = self {
            if scores.iter().all(|s| i32::try_from(*s).is_ok()) {
                for (kept, s) in narrow[at..at + scores.len()].iter_mut().zip(scores) {
                    *kept = i32::try_from(*s).unwrap_or_default();
                }
                return;
            }
            *self = Raw::Wide(narrow.iter().map(|s| i64::from(*s)).collect());
        }
        if let Raw::Wide(wide) = self {
            wide[at..at + scores.len()].copy_from_slice(scores);
        }
    }

    /// The raw scores of `nodes` from rows of `width` scores by node slot, one column per
    /// score rule.
    fn gather(&self, width: usize, nodes: &[NodeId]) -> Vec<Vec<i64>> {
        match self {
            Raw::Tiny(raw) => gather(raw, width, nodes),
            Raw::Narrow(raw) => gather(raw, width, nodes),
            Raw::Wide(raw) => gather(raw, width, nodes),
        }
    }
}

fn gather<T: Copy + Into<i64>>(raw: &[T], width: usize, nodes: &[NodeId]) -> Vec<Vec<i64>> {
    let mut columns: Vec<Vec<i64>> = vec![vec![0; nodes.len()]; width];
    for (row, id) in nodes.iter().enumerate() {
        let at = id.0 as usize * width;
        for (column, r) in columns.iter_mut().zip(&raw[at..at + width]) {
            column[row] = (*r).into();
        }
    }
    columns
}

/// How many forgotten nodes a class lists for asking at once: the few-unknown threshold of
/// the cycle, so that the list stays as small as the work it saves.
pub(crate) fn stale_cap(nodes: usize) -> usize {
    (nodes / FEW_UNKNOWN_SHARE).max(MIN_FEW_UNKNOWN)
}

/// A class with at most [`stale_cap`] nodes lacking an answer asks them at once, before
/// the pass, which then walks kept verdicts alone.
const FEW_UNKNOWN_SHARE: usize = 16;
/// See [`FEW_UNKNOWN_SHARE`].
const MIN_FEW_UNKNOWN: usize = 128;

/// The classes' kept answers, owned by the scheduler (whose rules gave them).
#[derive(Debug)]
pub(crate) struct Classes {
    enabled: bool,
    classes: Vec<Answers>,
    /// Each class's [`signature_key`], in the order of `classes`: a lookup scans these
    /// instead of reading a line of every class's answers.
    digests: Vec<u64>,
    /// Signatures seen once with their keys, newest last (boxed: the oldest leaves for
    /// every new one while pods all differ, and the queue moves pointers, not pods).
    seen: VecDeque<(u64, Box<model::Pod>)>,
    clock: u64,
    /// Bytes the kept answers may take ([`ANSWER_BUDGET`] but in tests).
    budget: usize,
    /// The class of the last cycle that kept answers, which alone may keep a [`View::copy`]
    /// and a [`Ranked`].
    last: Option<usize>,
    reused: u64,
    asked: u64,
    /// Cycles whose totals were summed from kept answers (see `scheduler/summed.rs`).
    summed: SummedCycles,
}

/// How many cycles summed their totals from a class's kept answers and the spreading
/// rules' grouped scores instead of normalising every column, and how they chose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummedCycles {
    /// Every such cycle.
    pub summed: u64,
    /// Those that chose from their class's ranking (pods of one class in a row).
    pub ranked: u64,
    /// Those that chose from their class's tally (pods of classes taking turns).
    pub tallied: u64,
}

impl Classes {
    /// Keeping answers (`enabled`) or not (every cycle asks every node, as upstream).
    pub fn new(enabled: bool) -> Self {
        Classes {
            enabled,
            classes: Vec::new(),
            digests: Vec::new(),
            seen: VecDeque::new(),
            clock: 0,
            budget: ANSWER_BUDGET,
            last: None,
            reused: 0,
            asked: 0,
            summed: SummedCycles::default(),
        }
    }

    /// Keeps answers within `bytes` instead of [`ANSWER_BUDGET`], so tests can make classes
    /// compete for room.
    #[cfg(test)]
    pub fn set_budget(&mut self, bytes: usize) {
        self.budget = bytes;
    }

    /// Whether answers are kept at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Node answers reused and asked, since the scheduler began.
    pub fn counts(&self) -> (u64, u64) {
        (self.reused, self.asked)
    }

    /// Counts one cycle's reused and asked node answers.
    pub fn count(&mut self, reused: u64, asked: u64) {
        self.reused += reused;
        self.asked += asked;
    }

    /// Counts a cycle whose totals were summed from kept answers, `ranked` when it chose from
    /// its class's ranking, `tallied` when from its tally.
    pub fn count_summed(&mut self, ranked: bool, tallied: bool) {
        self.summed.summed += 1;
        self.summed.ranked += u64::from(ranked);
        self.summed.tallied += u64::from(tallied);
    }

    /// Cycles whose totals were summed from kept answers since the scheduler began.
    pub fn summed(&self) -> SummedCycles {
        self.summed
    }

    /// The answers kept for `pod`'s class under `shape`, brought up to date with the
    /// cluster's changes since the class's last cycle (a class new to keeping, or one whose
    /// rules now answer differently, starts empty). None for the first pod of a class, and
    /// while a class sits out (see [`Answers::judge`]).
    pub fn answers(
        &mut self,
        cluster: &Cluster,
        pod: &model::Pod,
        shape: Shape,
    ) -> Option<&mut Answers> {
        self.clock += 1;
        let capacity = capacity(cluster, &shape, self.budget);
        while self.classes.len() > capacity {
            // The cluster grew past what the budget keeps for this many classes.
            if let Some(oldest) = self.least_recently_used() {
                self.classes.swap_remove(oldest);
                self.digests.swap_remove(oldest);
                self.last = None;
            }
        }
        // The digest reads only fields a signature keeps as they are.
        let key = signature_key(pod);
        let resident = self
            .digests
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == key)
            .map(|(i, _)| i)
            .find(|i| same_class(&self.classes[*i].signature, pod));
        let (at, new) = match resident {
            Some(i) => (i, false),
            None => {
                let seen = self
                    .seen
                    .iter()
                    .position(|(k, s)| *k == key && same_class(s, pod));
                let Some(seen) = seen else {
                    if self.seen.len() == MAX_SEEN {
                        self.seen.pop_front();
                    }
                    self.seen.push_back((key, Box::new(class_of(pod))));
                    return None;
                };
                let Some(at) = self.admit(capacity) else {
                    // Full, and every kept class ran lately: keeping this one would evict
                    // answers about to be reused. It stays seen, and is admitted once an
                    // older class ages out.
                    return None;
                };
                let signature = self.seen.remove(seen).map(|(_, s)| *s);
                self.classes[at].signature = signature.unwrap_or_else(|| class_of(pod));
                self.digests[at] = key;
                (at, true)
            }
        };
        let previous = self.last.replace(at);
        if let Some(class) = previous
            .filter(|p| *p != at)
            .and_then(|p| self.classes.get_mut(p))
        {
            class.ranked = None;
            if let Some(view) = class.view.as_mut() {
                view.copy = None;
            }
        }
        let class = &mut self.classes[at];
        class.consecutive = previous == Some(at);
        if !class.consecutive {
            class.ranked = None;
        }
        class.last_used = self.clock;
        if class.dormant > 0 {
            class.dormant -= 1;
            // Its answers go stale meanwhile; it starts over when it is back.
            class.known.clear();
            return None;
        }
        if new || class.shape != shape || class.known.len() != cluster.node_slots() {
            class.keys = shape.keys();
            class.shape = shape;
            class.reset(cluster);
        } else {
            class.catch_up(cluster);
        }
        class.cursor = cluster.changes().cursor();
        Some(class)
    }

    /// Room for a class that keeps answers: the least recently used class's, if it sat idle
    /// long (its buffers, warm in memory, then serve the new class), else a new entry while
    /// the budget allows. A full set evicts no class that ran lately: pods of more classes
    /// than fit taking turns would evict each class just before its next pod, and none would
    /// reuse anything; keeping the ones in place lets those reuse.
    fn admit(&mut self, capacity: usize) -> Option<usize> {
        let oldest = self.least_recently_used().filter(|i| {
            let idle = self.clock - self.classes[*i].last_used;
            idle > IDLE_BEFORE_EVICTION * self.classes.len() as u64
        });
        if let Some(oldest) = oldest {
            if self.last == Some(oldest) {
                self.last = None;
            }
            let class = &mut self.classes[oldest];
            class.dormant = 0;
            class.backoff = 0;
            return Some(oldest);
        }
        if self.classes.len() >= capacity {
            return None;
        }
        self.digests.push(0);
        self.classes.push(Answers {
            signature: model::Pod::default(),
            // The caller sets the shape, and sizes the buffers, when it resets a new class.
            shape: Shape::default(),
            keys: Vec::new(),
            cursor: Cursor::default(),
            last_used: 0,
            consecutive: false,
            known: Vec::new(),
            unknown: 0,
            stale: Vec::new(),
            stale_cap: 0,
            stale_overflow: true,
            fresh: true,
            dormant: 0,
            backoff: 0,
            feasible: Vec::new(),
            raw: Raw::Tiny(Vec::new()),
            width: 0,
            view: None,
            ranked: None,
            tally: None,
            untallied: None,
        });
        Some(self.classes.len() - 1)
    }

    fn least_recently_used(&self) -> Option<usize> {
        (0..self.classes.len()).min_by_key(|i| self.classes[*i].last_used)
    }
}

/// How many classes [`ANSWER_BUDGET`] keeps on this cluster, for a class scored by `shape`:
/// per node slot, a verdict, a known flag, a raw score per kept score rule and a place in the
/// view, and the largest tally's counts. (The one class that keeps a [`Ranked`] or a
/// [`View::copy`] takes more.)
fn capacity(cluster: &Cluster, shape: &Shape, budget: usize) -> usize {
    let slots = cluster.node_slots().max(1);
    let per_class = slots * (2 + 4 + 4 * shape.width()) + 4 * tally::most_counts(slots);
    (budget / per_class).clamp(MIN_CLASSES, MAX_CLASSES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod is of a class when it equals the class's signature but for the fields a
    /// signature clears, compared without cloning it.
    #[test]
    fn same_class_ignores_what_a_signature_clears() {
        let mut pod = crate::testkit::pod("web-1")
            .label("app", "web")
            .req(500, 1 << 30)
            .build();
        pod.meta.uid = "u1".into();
        let signature = class_of(&pod);
        assert!(same_class(&signature, &pod));
        let mut other = pod.clone();
        other.meta.name = "web-2".into();
        other.meta.uid = "u2".into();
        other.meta.annotations.insert("a".into(), "b".into());
        other.meta.creation_timestamp = 7;
        other.node_name = Some("n1".into());
        other.nominated_node_name = Some("n2".into());
        other.start_time = Some(3);
        assert!(same_class(&signature, &other));
        assert_eq!(class_of(&other), signature);
        let differ: [fn(&mut model::Pod); 4] = [
            |p| {
                p.meta.labels.insert("tier".into(), "db".into());
            },
            |p| p.priority = 10,
            |p| p.meta.namespace = "other".into(),
            |p| p.host_network = true,
        ];
        for change in differ {
            let mut p = pod.clone();
            change(&mut p);
            assert!(!same_class(&signature, &p));
            assert_ne!(class_of(&p), signature);
        }
    }

    /// Scores are kept in a byte until one does not fit, then in 32 bits until one does not
    /// fit; each time all are widened, and every score kept before or after reads back as
    /// it was given.
    #[test]
    fn raw_scores_widen_when_one_does_not_fit() {
        let ids = [NodeId(2), NodeId(0), NodeId(1)];
        let mut raw = Raw::Tiny(vec![0; 6]);
        raw.set(0, &[1, 255]);
        assert!(matches!(raw, Raw::Tiny(_)));
        raw.set(2, &[3, -2]);
        assert!(matches!(raw, Raw::Narrow(_)));
        assert_eq!(raw.gather(2, &ids), vec![vec![0, 1, 3], vec![0, 255, -2]]);
        raw.set(4, &[5, i64::from(i32::MAX)]);
        assert!(matches!(raw, Raw::Narrow(_)));
        assert_eq!(
            raw.gather(2, &ids),
            vec![vec![5, 1, 3], vec![i64::from(i32::MAX), 255, -2]]
        );
        raw.set(4, &[i64::from(i32::MIN) - 1, i64::MAX]);
        assert!(matches!(raw, Raw::Wide(_)));
        assert_eq!(
            raw.gather(2, &ids),
            vec![vec![i64::from(i32::MIN) - 1, 1, 3], vec![i64::MAX, 255, -2]]
        );
        raw.set(0, &[7, 8]);
        assert_eq!(raw.gather(2, &ids[1..2]), vec![vec![7], vec![8]]);
        // Straight from a byte to 64 bits.
        let mut raw = Raw::Tiny(vec![9; 2]);
        raw.set(0, &[i64::MAX, 0]);
        assert!(matches!(raw, Raw::Wide(_)));
        assert_eq!(raw.gather(2, &[NodeId(0)]), vec![vec![i64::MAX], vec![0]]);
    }
}
