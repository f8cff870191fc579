//! What a decision was based on, for `berth simulate --explain`: each evaluated node's
//! rejections with the rule that made them, and each scored node's raw, normalised and
//! weighted score per priority. Built only when asked for, after the cycle has decided, so
//! the fused filter-and-score pass carries none of it.

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId};

/// What rejected a node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RejectedBy {
    /// A filter of the policy (a built-in predicate or a WASM plugin), by the name of its
    /// policy entry (entries served by one rule joined with `+`).
    Filter(String),
    /// An extender's filter, by its name (the urlPrefix).
    Extender(String),
}

impl RejectedBy {
    /// The name of the filter or extender.
    pub fn name(&self) -> &str {
        match self {
            RejectedBy::Filter(name) | RejectedBy::Extender(name) => name,
        }
    }
}

/// One reason a node was rejected, with what gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The filter or extender.
    pub by: RejectedBy,
    /// The reason text, as the FitError counts it.
    pub reason: String,
}

/// One priority's score of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreValue {
    /// The rule's score before normalisation (an extender's: as it answered, 0..=10). Equal
    /// to `normalized` for rules that need no normalisation.
    pub raw: i64,
    /// The score in 0..=100 (MAX_NODE_SCORE) the weight applies to.
    pub normalized: i64,
    /// `normalized` times the priority's weight (saturating), as added to the total.
    pub weighted: i64,
}

/// One node's part in a decision, for `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeExplanation {
    /// Node name.
    pub node: String,
    /// Why it was rejected (empty if feasible), in policy order, extenders last.
    pub rejections: Vec<Rejection>,
    /// Per score rule, in the order of [`Explanation::score_rules`] (empty if not scored).
    pub scores: Vec<ScoreValue>,
    /// Weighted total (None if not scored).
    pub total: Option<i64>,
}

impl NodeExplanation {
    /// Whether the node passed every filter and extender.
    pub fn feasible(&self) -> bool {
        self.rejections.is_empty()
    }
}

/// Everything a decision was based on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Explanation {
    /// Score rule names and weights, in column order of [`NodeExplanation::scores`];
    /// extenders that scored come last, named `extender <name>`.
    pub score_rules: Vec<(String, i64)>,
    /// Evaluated nodes in visiting order.
    pub nodes: Vec<NodeExplanation>,
    /// Nodes not evaluated because enough feasible nodes were found (sampling).
    pub not_evaluated: usize,
}

/// The explanation of a cycle: `visited` in visiting order with their rejections; `scored`
/// (the feasible nodes that were scored, in row order) get `row(i)`'s scores and total.
pub(crate) fn explain_nodes(
    cluster: &Cluster,
    visited: &[NodeId],
    rejections: impl Fn(NodeId) -> Vec<Rejection>,
    scored: &[NodeId],
    row: impl Fn(usize) -> (Vec<ScoreValue>, i64),
    not_evaluated: usize,
) -> Explanation {
    let rows: FxHashMap<NodeId, usize> =
        scored.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let nodes = visited
        .iter()
        .map(|id| {
            let (scores, total) = match rows.get(id) {
                Some(r) => {
                    let (scores, total) = row(*r);
                    (scores, Some(total))
                }
                None => (Vec::new(), None),
            };
            NodeExplanation {
                node: cluster.node(*id).name().to_string(),
                rejections: rejections(*id),
                scores,
                total,
            }
        })
        .collect();
    Explanation {
        score_rules: Vec::new(),
        nodes,
        not_evaluated,
    }
}
