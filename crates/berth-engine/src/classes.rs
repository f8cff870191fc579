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
//! Normalising, the extenders and the choice among the best nodes still run for every pod,
//! over every feasible node, so decisions are those of a cycle that asked every node: a
//! property test schedules random clusters both ways and compares them. Rules that cannot
//! say how long their answers hold ([`Reuse::Never`]: WASM plugins unless they declare
//! otherwise, history-based protections) keep the class from reusing anything, and nothing
//! is reused while a pod is nominated somewhere.

use crate::cluster::{Cluster, Cursor};
use crate::framework::Reuse;
use crate::labels::Sym;
use crate::model;
use crate::types::NodeId;

/// How many classes keep their answers; the least recently used one goes when another
/// arrives. Memory stays bounded by classes x node slots x (score rules + 2) words.
const MAX_CLASSES: usize = 8;
/// How many classes seen once are remembered: a class keeps answers from its second pod on,
/// so a stream of pods that are all different pays for no answers it never reuses.
const MAX_SEEN: usize = 32;
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

/// The rules that answered for a class: which filters check it and which score rules score
/// it per node (indices into the scheduler's lists), with how long each answer holds (the
/// checks' in order, then the scorers').
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub checks: Vec<usize>,
    pub scorers: Vec<usize>,
    pub reuses: Vec<Reuse>,
}

impl Shape {
    /// Whether every rule can say how long its answers hold.
    pub fn reusable(&self) -> bool {
        !self.reuses.contains(&Reuse::Never)
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
    /// Raw scores, one column per per-node score rule, indexed by node slot: a cycle
    /// gathers each column for its feasible nodes in one tight loop.
    raw: Vec<Vec<i64>>,
    /// What the last cycle over every node gathered, while it still holds.
    view: Option<View>,
}

/// A class's feasible nodes in visiting order from one start, with their raw scores in that
/// order: what a cycle over every node gathers from the kept answers. A placement moves the
/// answers of a few nodes and rarely a verdict, and a cycle over every node ends where it
/// started, so the next such cycle copies these arrays instead of walking every verdict and
/// gathering every score. Kept in step with [`Answers::keep`]; dropped when a verdict flips.
#[derive(Debug)]
struct View {
    start: usize,
    feasible: Vec<NodeId>,
    columns: Vec<Vec<i64>>,
    /// The row in `feasible` of each node slot (`u32::MAX` for a node not in it).
    rows: Vec<u32>,
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
        stale.retain(|id| !known[id.0 as usize]);
        stale.sort_unstable();
        stale.dedup();
        Some(stale)
    }

    /// Keeps the answer for node slot `slot` (`raw` is empty for a node that fails).
    pub fn keep(&mut self, slot: usize, feasible: bool, raw: &[i64]) {
        if slot >= self.known.len() {
            return;
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
        } else if let Some(view) = self.view.as_mut().filter(|_| feasible) {
            let row = view.rows[slot] as usize;
            for (column, r) in view.columns.iter_mut().zip(raw) {
                column[row] = *r;
            }
        }
        self.feasible[slot] = feasible;
        for (column, r) in self.raw.iter_mut().zip(raw) {
            column[slot] = *r;
        }
    }

    /// The kept raw scores of `nodes` (each known and feasible), one column per per-node
    /// score rule. `whole`: `nodes` are every feasible node, in visiting order from this
    /// start, which [`Answers::view`] then gives while they hold.
    pub fn columns(&mut self, nodes: &[NodeId], whole: Option<usize>) -> Vec<Vec<i64>> {
        let columns: Vec<Vec<i64>> = self
            .raw
            .iter()
            .map(|column| nodes.iter().map(|id| column[id.0 as usize]).collect())
            .collect();
        self.view = whole.filter(|_| self.all_known()).map(|start| {
            let mut rows = vec![u32::MAX; self.known.len()];
            for (row, id) in nodes.iter().enumerate() {
                rows[id.0 as usize] = row as u32;
            }
            View {
                start,
                feasible: nodes.to_vec(),
                columns: columns.clone(),
                rows,
            }
        });
        columns
    }

    /// Every feasible node in visiting order from `start`, with their raw score columns, when
    /// every answer is known and the last cycle over every node gathered them from there.
    pub fn view(&self, start: usize) -> Option<(Vec<NodeId>, Vec<Vec<i64>>)> {
        self.view
            .as_ref()
            .filter(|v| v.start == start && self.all_known())
            .map(|v| (v.feasible.clone(), v.columns.clone()))
    }

    /// Forgets everything, sized for the cluster's node slots and the shape's scorers.
    fn reset(&mut self, cluster: &Cluster) {
        let slots = cluster.node_slots();
        self.view = None;
        self.known.clear();
        self.known.resize(slots, false);
        self.unknown = cluster.node_count();
        self.stale.clear();
        self.stale_cap = stale_cap(cluster.node_count());
        self.stale_overflow = true;
        self.fresh = true;
        self.feasible.clear();
        self.feasible.resize(slots, false);
        self.raw.resize_with(self.shape.scorers.len(), Vec::new);
        for column in &mut self.raw {
            column.clear();
            column.resize(slots, 0);
        }
    }

    /// Forgets the kept answer of `node`.
    fn forget(&mut self, node: NodeId) {
        if let Some(k) = self.known.get_mut(node.0 as usize)
            && *k
        {
            *k = false;
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
        for change in changes {
            self.forget(change.node);
            for key in keys.iter().chain(&change.keys) {
                let value = cluster
                    .label_column(*key)
                    .and_then(|column| column.get(change.node.0 as usize).copied().flatten());
                if let Some(value) = value {
                    for id in cluster.nodes_with_label(*key, value) {
                        self.forget(*id);
                    }
                }
            }
        }
        self.keys = keys;
    }
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
    /// Signatures seen once, newest last.
    seen: Vec<model::Pod>,
    clock: u64,
    reused: u64,
    asked: u64,
}

impl Classes {
    /// Keeping answers (`enabled`) or not (every cycle asks every node, as upstream).
    pub fn new(enabled: bool) -> Self {
        Classes {
            enabled,
            classes: Vec::new(),
            seen: Vec::new(),
            clock: 0,
            reused: 0,
            asked: 0,
        }
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
        let signature = class_of(pod);
        let (at, new) = match self.classes.iter().position(|c| c.signature == signature) {
            Some(i) => (i, false),
            None => {
                let Some(seen) = self.seen.iter().position(|s| *s == signature) else {
                    if self.seen.len() == MAX_SEEN {
                        self.seen.remove(0);
                    }
                    self.seen.push(signature);
                    return None;
                };
                self.seen.remove(seen);
                (self.admit(signature, &shape), true)
            }
        };
        let class = &mut self.classes[at];
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

    /// Room for a class that keeps answers: a new entry, or the least recently used one's
    /// (whose buffers then serve the new class).
    fn admit(&mut self, signature: model::Pod, shape: &Shape) -> usize {
        if self.classes.len() < MAX_CLASSES {
            self.classes.push(Answers {
                signature,
                shape: shape.clone(),
                keys: Vec::new(),
                cursor: Cursor::default(),
                last_used: 0,
                known: Vec::new(),
                unknown: 0,
                stale: Vec::new(),
                stale_cap: 0,
                stale_overflow: true,
                fresh: true,
                dormant: 0,
                backoff: 0,
                feasible: Vec::new(),
                raw: Vec::new(),
                view: None,
            });
            return self.classes.len() - 1;
        }
        let oldest = (0..self.classes.len())
            .min_by_key(|i| self.classes[*i].last_used)
            .expect("MAX_CLASSES > 0");
        let class = &mut self.classes[oldest];
        class.signature = signature;
        class.dormant = 0;
        class.backoff = 0;
        oldest
    }
}
