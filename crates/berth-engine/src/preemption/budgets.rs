//! PodDisruptionBudgets as preemption reads them.

use crate::cluster::{Cluster, PodId, fresh_stamp};
use crate::labels::{HoldsSymbols, Selector, Sym};
use crate::model;

/// A PodDisruptionBudget compiled for matching.
#[derive(Debug, Clone)]
struct Budget {
    namespace: Sym,
    name: String,
    /// None: selects nothing (a missing or empty selector).
    selector: Option<Selector>,
    allowed: i32,
    disrupted: Vec<String>,
}

/// The cluster's PodDisruptionBudgets, as preemption reads them.
#[derive(Debug, Clone, Default)]
pub struct DisruptionBudgets {
    list: Vec<Budget>,
    /// Changes with every upsert and removal (0: never changed, so empty).
    stamp: u64,
}

impl HoldsSymbols for DisruptionBudgets {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for b in &mut self.list {
            f(&mut b.namespace);
            if let Some(s) = &mut b.selector {
                s.visit_symbols(f);
            }
        }
    }
}

impl DisruptionBudgets {
    /// No budgets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a budget (by namespace and name). Selectors are compiled against the
    /// cluster's interner.
    pub fn upsert(&mut self, cluster: &mut Cluster, pdb: &model::PodDisruptionBudget) {
        let namespace = cluster.intern(&pdb.meta.namespace);
        let selector = pdb
            .selector
            .as_ref()
            .map(|s| cluster.compile_selector(s))
            .filter(|s| !s.is_empty());
        let budget = Budget {
            namespace,
            name: pdb.meta.name.clone(),
            selector,
            allowed: pdb.disruptions_allowed,
            disrupted: pdb.disrupted_pods.clone(),
        };
        match self
            .list
            .iter_mut()
            .find(|b| b.namespace == namespace && b.name == budget.name)
        {
            Some(b) => *b = budget,
            None => self.list.push(budget),
        }
        self.stamp = fresh_stamp();
    }

    /// Removes a budget; false if there was none of that name.
    pub fn remove(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> bool {
        let Some(ns) = cluster.interner().get(namespace) else {
            return false;
        };
        let before = self.list.len();
        self.list.retain(|b| !(b.namespace == ns && b.name == name));
        self.stamp = fresh_stamp();
        self.list.len() != before
    }

    /// Equal stamps mean equal budgets (see [`crate::cluster::fresh_stamp`]).
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// How many budgets there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Splits `pods` (kept in order) into those whose eviction would violate a budget and the
    /// others (upstream's filterPodsWithPDBViolation): each matching budget's allowance is
    /// spent pod by pod; a pod already listed in a budget's disrupted pods spends nothing.
    pub(super) fn split_violating(
        &self,
        cluster: &Cluster,
        pods: &[PodId],
    ) -> (Vec<PodId>, Vec<PodId>) {
        let mut allowed: Vec<i32> = self.list.iter().map(|b| b.allowed).collect();
        let mut violating = Vec::new();
        let mut others = Vec::new();
        for &id in pods {
            let pod = cluster.pod(id);
            let mut violated = false;
            if !pod.labels.is_empty() {
                for (b, left) in self.list.iter().zip(allowed.iter_mut()) {
                    let Some(selector) = &b.selector else {
                        continue;
                    };
                    if b.namespace != pod.namespace || !selector.matches(&pod.labels) {
                        continue;
                    }
                    if b.disrupted.contains(&pod.pod.meta.name) {
                        continue;
                    }
                    *left -= 1;
                    if *left < 0 {
                        violated = true;
                    }
                }
            }
            if violated {
                violating.push(id);
            } else {
                others.push(id);
            }
        }
        (violating, others)
    }
}
