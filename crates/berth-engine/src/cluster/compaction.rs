//! Compaction of the cluster's interner: dropping the strings no object uses any more and
//! renumbering the rest in every holder, so a long-running scheduler's interner follows the
//! live labels rather than every label it has ever seen.

use super::indexes::rekey;
use super::{Cluster, WellKnown};
use crate::labels::{HoldsSymbols, Interner, Sym};

/// What a compaction of the interner did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Interned strings before.
    pub before: usize,
    /// Interned strings after: those some object still uses.
    pub after: usize,
}

/// Interned strings the interner may gain beyond twice its size after the last compaction
/// before the next one: small clusters are not compacted over and over for a few strings.
pub const COMPACTION_FLOOR: usize = 1024;

impl Cluster {
    /// Whether the interner has grown enough since the last compaction for another to pay:
    /// past twice its size then, plus [`COMPACTION_FLOOR`]. Between compactions it holds
    /// at most that many strings, whatever the churn.
    pub fn interner_needs_compaction(&self) -> bool {
        self.interner.len() > 2 * self.interned_after_compaction + COMPACTION_FLOOR
    }

    /// [`Cluster::compact_interner`] if [`Cluster::interner_needs_compaction`].
    pub fn compact_interner_if_needed(
        &mut self,
        others: &mut [&mut dyn HoldsSymbols],
    ) -> Option<Compaction> {
        self.interner_needs_compaction()
            .then(|| self.compact_interner(others))
    }

    /// Drops the interned strings that no node, pod, namespace, selector object or index of
    /// the cluster, nor any of `others`, uses any more, and renumbers the rest everywhere
    /// (in their old order, so symbol-sorted lists stay sorted). Any symbol kept elsewhere
    /// (a pod compiled for a cycle, a rule's prepared state) is invalid afterwards: call it
    /// between cycles and pass every other holder. Costs one pass over the cluster.
    pub fn compact_interner(&mut self, others: &mut [&mut dyn HoldsSymbols]) -> Compaction {
        let before = self.interner.len();
        // Kept answers hold symbols too.
        self.changes.bump();
        // A column no node fills any more reads like a missing one (every node lacks the
        // key); dropping it lets its key go.
        self.label_columns
            .retain(|_, column| column.iter().any(Option::is_some));
        let mut live = vec![false; before];
        let mut mark = |s: &mut Sym| live[Interner::index(*s)] = true;
        self.visit_symbols(&mut mark);
        for other in others.iter_mut() {
            other.visit_symbols(&mut mark);
        }
        let renumbered = self.interner.retain(&live);
        let mut renumber = |s: &mut Sym| {
            *s = renumbered[Interner::index(*s)].expect("every symbol held was marked live");
        };
        self.visit_symbols(&mut renumber);
        for other in others.iter_mut() {
            other.visit_symbols(&mut renumber);
        }
        self.interned_after_compaction = self.interner.len();
        Compaction {
            before,
            after: self.interner.len(),
        }
    }

    /// Visits every symbol the cluster holds: the well-known keys, nodes, pods, namespaces,
    /// selector objects, zones, and the keys and values of every index (rebuilt, since
    /// their keys change).
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        let WellKnown {
            hostname,
            zone,
            zone_beta,
            region,
            region_beta,
        } = &mut self.keys;
        for key in [hostname, zone, zone_beta, region, region_beta] {
            f(key);
        }
        self.zones.iter_mut().for_each(&mut *f);
        for node in self.nodes.iter_mut().flatten() {
            node.visit_symbols(f);
        }
        for pod in self.pods.iter_mut().flatten() {
            pod.visit_symbols(f);
        }
        rekey(&mut self.pod_by_key, |(ns, _)| f(ns));
        rekey(&mut self.namespaces, |ns| f(ns));
        for ns in self.namespaces.values_mut() {
            ns.labels.visit_symbols(f);
        }
        self.selector_objects.visit_symbols(f);
        rekey(&mut self.label_index, |(k, v)| {
            f(k);
            f(v);
        });
        rekey(&mut self.label_nodes, |(k, v)| {
            f(k);
            f(v);
        });
        rekey(&mut self.label_columns, |k| f(k));
        for column in self.label_columns.values_mut() {
            column.iter_mut().flatten().for_each(&mut *f);
        }
        self.anti_affinity_terms.visit_symbols(f);
        self.scoring_terms.visit_symbols(f);
    }
}
