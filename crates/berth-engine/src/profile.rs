//! A profile: the rules and extenders of one policy, in the order the cycle runs them.
//! The cycle and preemption read it; neither owns the other's view of it.

use std::sync::Arc;

use crate::extender::Extender;
use crate::framework::{FilterRule, ScoreRule};

/// A filter with the name of its policy entry.
#[derive(Clone)]
pub struct NamedFilter {
    /// The policy entry's name.
    pub name: String,
    /// The kube-scheduler plugin the rule is, when it is exactly one (GeneralPredicates is
    /// four, Berth's own and WASM entries none).
    pub upstream: Option<&'static str>,
    /// The Berth protection the entry is, by its predicate's name (`berth run` counts the
    /// nodes each protection rejects); None for every other entry.
    pub protection: Option<&'static str>,
    /// The rule.
    pub rule: Arc<dyn FilterRule>,
}

impl NamedFilter {
    /// The `plugin` label of upstream's per-plugin metrics: the upstream plugin, else the
    /// policy entry's name.
    pub fn plugin(&self) -> &str {
        self.upstream.unwrap_or(&self.name)
    }
}

/// A score rule with the name and weight of its policy entry.
#[derive(Clone)]
pub struct WeightedScore {
    /// The policy entry's name.
    pub name: String,
    /// The kube-scheduler plugin the rule is (None for WASM plugins).
    pub upstream: Option<&'static str>,
    /// The rule.
    pub rule: Arc<dyn ScoreRule>,
    /// The weight.
    pub weight: i64,
}

impl WeightedScore {
    /// The `plugin` label of upstream's per-plugin metrics: the upstream plugin, else the
    /// policy entry's name.
    pub fn plugin(&self) -> &str {
        self.upstream.unwrap_or(&self.name)
    }
}

/// The rules and extenders a cycle runs for every pod.
#[derive(Clone, Default)]
pub struct Profile {
    /// Filters, in evaluation order.
    pub filters: Vec<NamedFilter>,
    /// Score rules with their weights.
    pub scores: Vec<WeightedScore>,
    /// Extenders, in call order: after the filters, and for scores beside the rules'.
    pub extenders: Vec<Arc<dyn Extender>>,
    /// Evaluate every filter on a node even after one failed (`alwaysCheckAllPredicates`).
    pub check_all: bool,
}
