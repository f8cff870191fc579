//! Plugins as engine rules: prepare runs the guest over all nodes; the per-node check or
//! score reads the table it filled.

use std::sync::Arc;

use berth_engine::framework::{
    CycleContext, Dense, FilterPrep, FilterRule, MAX_NODE_SCORE, NodeCheck, NodeScore, Reason,
    Reuse, ScorePrep, ScoreRule, normalize_reduce,
};
use berth_engine::{NodeId, NodeInfo};

use crate::abi::Normalize;
use crate::plugin::{Evaluation, Plugin, Table};

/// How long an evaluation's answers hold for later pods of the class.
fn reuse(e: &Evaluation) -> Reuse {
    if e.declared.node_local && !e.failed {
        Reuse::node_local()
    } else {
        Reuse::Never
    }
}

/// A predicate served by a plugin.
pub struct WasmFilter(pub Arc<Plugin>);

/// A priority served by a plugin.
pub struct WasmScore(pub Arc<Plugin>);

struct Verdicts {
    table: Table,
    reuse: Reuse,
}

impl NodeCheck for Verdicts {
    /// Kept for the class only when the guest declared its answers node-local and every
    /// call of this pod succeeded.
    fn reuse(&self) -> Reuse {
        self.reuse.clone()
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        match self.table.reason(node.id) {
            None => true,
            Some(r) => {
                reasons.push(r.clone());
                false
            }
        }
    }

    fn dense(&self) -> Dense<'_> {
        match &self.table {
            Table::Verdicts { mask, .. } => Dense::Mask(mask),
            Table::Scores(_) => Dense::No,
        }
    }
}

impl FilterRule for WasmFilter {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let e = self.0.evaluate(ctx);
        let reuse = reuse(&e);
        match &e.table {
            Table::Verdicts {
                any_rejected: false,
                ..
            } => FilterPrep::Skip,
            _ => FilterPrep::Check(Box::new(Verdicts {
                table: e.table,
                reuse,
            })),
        }
    }
}

struct Scores {
    table: Table,
    normalize: Normalize,
    reuse: Reuse,
}

impl NodeScore for Scores {
    /// As [`Verdicts::reuse`].
    fn reuse(&self) -> Reuse {
        self.reuse.clone()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.table.score(node.id)
    }

    fn normalize(&self, _nodes: &[NodeId], scores: &mut [i64]) {
        match self.normalize {
            Normalize::None => {
                for s in scores.iter_mut() {
                    *s = (*s).clamp(0, MAX_NODE_SCORE);
                }
            }
            Normalize::Reduce | Normalize::ReduceReverse => {
                // Bounded so that upstream's `max * s / highest` cannot overflow.
                for s in scores.iter_mut() {
                    *s = (*s).clamp(0, i64::MAX / MAX_NODE_SCORE);
                }
                normalize_reduce(
                    scores,
                    MAX_NODE_SCORE,
                    self.normalize == Normalize::ReduceReverse,
                );
            }
        }
    }
}

impl ScoreRule for WasmScore {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let e = self.0.evaluate(ctx);
        ScorePrep::PerNode(Box::new(Scores {
            reuse: reuse(&e),
            table: e.table,
            normalize: e.declared.normalize,
        }))
    }
}
