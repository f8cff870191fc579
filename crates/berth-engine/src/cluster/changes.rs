//! What changed in the cluster, for answers kept across scheduling cycles.
//!
//! The equivalence classes ([`crate::classes`]) keep each node's verdict and raw scores for a
//! class of equal pods and must learn which nodes' answers a change may have moved. Placing
//! or removing a pod moves answers on its node and in that node's topology domains, so those
//! changes are journalled one by one; everything else (nodes, namespaces, Services and other
//! selector objects, volumes, storage classes, interned symbols) is rarer and moves answers
//! anywhere, so it only advances an epoch that makes every kept answer stale.

use std::collections::VecDeque;

use super::fresh_stamp;
use crate::labels::Sym;
use crate::podinfo::PodInfo;
use crate::types::NodeId;

/// How many pod changes the journal keeps. A reader further behind than this (a class not
/// seen for that many placements) starts over, which costs one full pass and nothing else.
const JOURNAL_LEN: usize = 4096;

/// A pod placed on or removed from a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodChange {
    /// The node.
    pub node: NodeId,
    /// The topology keys of the pod's own affinity and anti-affinity terms: running pods'
    /// terms reach the answers of nodes in those domains of the pod's node.
    pub keys: Vec<Sym>,
}

impl Default for ChangeLog {
    /// Epochs come from the process-wide stamp counter, so that a reader's cursor from one
    /// cluster never matches another cluster's log (a cache rebuilt from a relist, with
    /// the same scheduler reading it, must not look unchanged).
    fn default() -> Self {
        ChangeLog {
            epoch: fresh_stamp(),
            first: 0,
            changes: VecDeque::new(),
        }
    }
}

/// Where a reader stands in the journal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    epoch: u64,
    seq: u64,
}

/// The journal of pod changes and the epoch of every other change.
#[derive(Debug)]
pub struct ChangeLog {
    epoch: u64,
    /// Sequence number of the first kept change.
    first: u64,
    changes: VecDeque<PodChange>,
}

impl ChangeLog {
    /// Makes every kept answer stale: a change that may move answers anywhere.
    pub(crate) fn bump(&mut self) {
        self.epoch = fresh_stamp();
        self.first += self.changes.len() as u64;
        self.changes.clear();
    }

    /// Records that `pod` was placed on or removed from `node`.
    pub(crate) fn record(&mut self, node: NodeId, pod: &PodInfo) {
        let mut keys: Vec<Sym> = Vec::new();
        let a = &pod.affinity;
        for t in a
            .required
            .iter()
            .chain(&a.preferred)
            .chain(&a.anti_required)
            .chain(&a.anti_preferred)
        {
            if !keys.contains(&t.topology_key) {
                keys.push(t.topology_key);
            }
        }
        if self.changes.len() == JOURNAL_LEN {
            self.changes.pop_front();
            self.first += 1;
        }
        self.changes.push_back(PodChange { node, keys });
    }

    /// The epoch: it moves on every change that is not a pod's placement or removal.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The position after the newest change.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            epoch: self.epoch,
            seq: self.first + self.changes.len() as u64,
        }
    }

    /// The pod changes since `cursor`, or None when answers kept at `cursor` may be stale
    /// anywhere (the epoch moved, or the journal no longer reaches back that far).
    pub fn since(&self, cursor: Cursor) -> Option<impl Iterator<Item = &PodChange>> {
        if cursor.epoch != self.epoch || cursor.seq < self.first {
            return None;
        }
        let skip = usize::try_from(cursor.seq - self.first).ok()?;
        Some(self.changes.iter().skip(skip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> PodInfo {
        PodInfo::compile(Default::default(), &mut Default::default())
    }

    #[test]
    fn readers_see_the_changes_after_their_cursor() {
        let mut log = ChangeLog::default();
        let start = log.cursor();
        log.record(NodeId(1), &pod());
        let middle = log.cursor();
        log.record(NodeId(2), &pod());
        let nodes = |c| -> Vec<u32> { log.since(c).unwrap().map(|c| c.node.0).collect() };
        assert_eq!(nodes(start), vec![1, 2]);
        assert_eq!(nodes(middle), vec![2]);
        assert_eq!(nodes(log.cursor()), Vec::<u32>::new());
    }

    #[test]
    fn a_cursor_from_another_cluster_means_nothing_here() {
        let mut a = ChangeLog::default();
        let mut b = ChangeLog::default();
        a.bump();
        b.bump();
        let cursor = a.cursor();
        b.record(NodeId(1), &pod());
        assert!(b.since(cursor).is_none());
    }

    #[test]
    fn an_epoch_change_or_a_truncated_journal_makes_a_reader_start_over() {
        let mut log = ChangeLog::default();
        let start = log.cursor();
        log.record(NodeId(1), &pod());
        log.bump();
        assert!(log.since(start).is_none());
        let after_bump = log.cursor();
        assert_eq!(log.since(after_bump).unwrap().count(), 0);
        for _ in 0..JOURNAL_LEN {
            log.record(NodeId(3), &pod());
        }
        assert_eq!(log.since(after_bump).unwrap().count(), JOURNAL_LEN);
        log.record(NodeId(4), &pod());
        assert!(log.since(after_bump).is_none());
        assert_eq!(log.since(log.cursor()).unwrap().count(), 0);
    }
}
