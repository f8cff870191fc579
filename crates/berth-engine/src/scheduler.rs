//! The scheduling cycle: filter the nodes (in parallel, with feasible-node sampling), score
//! the feasible ones (in parallel), pick the best with a seeded uniform tie-break.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::cluster::{Cluster, NodeId};
use crate::framework::{
    CycleContext, FilterPrep, FilterRule, NodeCheck, NodeScore, Reason, ScorePrep, ScoreRule,
};
use crate::podinfo::PodInfo;

/// Below this many nodes a cycle runs on the calling thread: fanning out costs more.
const PARALLEL_THRESHOLD: usize = 256;
/// Nodes per parallel task.
const MIN_NODES_PER_TASK: usize = 128;
/// Upstream's floor on the number of feasible nodes to look for.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's floor on the adaptive percentage of nodes to score.
const MIN_FEASIBLE_NODES_PERCENTAGE: usize = 5;

/// The message when the cluster has no node at all (upstream's ErrNoNodesAvailable).
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// Settings of the cycle that do not come from the Policy file.
#[derive(Debug, Clone, Copy, Default)]
pub struct CycleConfig {
    /// Evaluate every filter on a node even after one failed.
    pub always_check_all_predicates: bool,
    /// Percentage of nodes to find feasible before scoring: 0 = upstream's adaptive default,
    /// 100 = every node.
    pub percentage_of_nodes_to_score: u32,
    /// Seed of the tie-breaking generator.
    pub seed: u64,
}

/// Why a pod fits no node: each node's reasons, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// Number of nodes in the cluster.
    pub num_all_nodes: usize,
    /// Reason -> number of nodes that gave it.
    pub reasons: BTreeMap<String, usize>,
}

impl fmt::Display for FitError {
    /// Upstream's text: `0/N nodes are available: <count> <reason>, ....`, the "count reason"
    /// strings sorted as strings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num_all_nodes == 0 {
            return f.write_str(NO_NODES_AVAILABLE);
        }
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

/// One node's part in a decision, for `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeExplanation {
    /// Node name.
    pub node: String,
    /// Reasons it was rejected (empty if feasible).
    pub reasons: Vec<String>,
    /// Per score rule, the normalised score (empty if not scored).
    pub scores: Vec<i64>,
    /// Weighted total (None if not scored).
    pub total: Option<i64>,
}

/// Everything a decision was based on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Explanation {
    /// Score rule names and weights, in column order of [`NodeExplanation::scores`].
    pub score_rules: Vec<(String, i64)>,
    /// Evaluated nodes in visiting order.
    pub nodes: Vec<NodeExplanation>,
    /// Nodes not evaluated because enough feasible nodes were found (sampling).
    pub not_evaluated: usize,
}

/// The outcome of one scheduling cycle.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The chosen node, or None when the pod fits nowhere.
    pub node: Option<NodeId>,
    /// Why it fits nowhere.
    pub fit_error: Option<FitError>,
    /// The details, when asked for.
    pub explanation: Option<Explanation>,
}

/// A filter with the name of its policy entry.
#[derive(Clone)]
pub struct NamedFilter {
    /// The policy entry's name.
    pub name: String,
    /// The rule.
    pub rule: Arc<dyn FilterRule>,
}

/// A score rule with the name and weight of its policy entry.
#[derive(Clone)]
pub struct WeightedScore {
    /// The policy entry's name.
    pub name: String,
    /// The rule.
    pub rule: Arc<dyn ScoreRule>,
    /// The weight.
    pub weight: i64,
}

/// A configured scheduler: the rules of a policy and the cycle's state between pods.
pub struct Scheduler {
    filters: Vec<NamedFilter>,
    scores: Vec<WeightedScore>,
    config: CycleConfig,
    next_start: usize,
    rng: ChaCha8Rng,
}

/// A node's filter verdict: None when feasible, else its reasons.
type Verdict = (NodeId, Option<Vec<Reason>>);

impl Scheduler {
    /// A scheduler over these rules (filters in evaluation order, scores with weights).
    pub fn new(filters: Vec<NamedFilter>, scores: Vec<WeightedScore>, config: CycleConfig) -> Self {
        Scheduler {
            filters,
            scores,
            config,
            next_start: 0,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
        }
    }

    /// The filters, in evaluation order.
    pub fn filters(&self) -> &[NamedFilter] {
        &self.filters
    }

    /// The score rules with their weights.
    pub fn scores(&self) -> &[WeightedScore] {
        &self.scores
    }

    /// How many feasible nodes to find before scoring (upstream's numFeasibleNodesToFind).
    pub fn feasible_nodes_to_find(&self, all: usize) -> usize {
        let pct = self.config.percentage_of_nodes_to_score as usize;
        if all < MIN_FEASIBLE_NODES_TO_FIND || pct >= 100 {
            return all;
        }
        let adaptive = if pct == 0 {
            (50usize.saturating_sub(all / 125)).max(MIN_FEASIBLE_NODES_PERCENTAGE)
        } else {
            pct
        };
        (all * adaptive / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
    }

    /// Runs one scheduling cycle for `pod`. The cluster is only read; the caller assigns the
    /// pod to the chosen node.
    pub fn schedule(&mut self, cluster: &Cluster, pod: &PodInfo, explain: bool) -> Decision {
        let all = cluster.node_count();
        if all == 0 {
            return Decision {
                node: None,
                fit_error: Some(FitError {
                    num_all_nodes: 0,
                    reasons: BTreeMap::new(),
                }),
                explanation: explain.then(Explanation::default),
            };
        }
        let ctx = CycleContext { cluster, pod };
        let mut checks: Vec<Box<dyn NodeCheck + '_>> = Vec::new();
        for f in &self.filters {
            match f.rule.prepare(ctx) {
                FilterPrep::Skip => {}
                FilterPrep::Check(c) => checks.push(c),
                FilterPrep::RejectAll(reasons) => {
                    return self.reject_all(cluster, &reasons, explain);
                }
            }
        }
        let (feasible, visited) = self.find_feasible(cluster, &checks);
        let processed = visited.len();
        let start = self.next_start;
        self.next_start = (start + processed) % all;
        if feasible.is_empty() {
            let mut counts = BTreeMap::new();
            for (_, reasons) in &visited {
                for r in reasons.iter().flatten() {
                    *counts.entry(r.as_str().to_string()).or_insert(0) += 1;
                }
            }
            return Decision {
                node: None,
                fit_error: Some(FitError {
                    num_all_nodes: all,
                    reasons: counts,
                }),
                explanation: explain.then(|| explain_nodes(cluster, &visited, &[], &[], 0)),
            };
        }
        if feasible.len() == 1 {
            return Decision {
                node: Some(feasible[0]),
                fit_error: None,
                explanation: explain
                    .then(|| explain_nodes(cluster, &visited, &[], &[], all - processed)),
            };
        }
        let columns = self.score_columns(ctx, &feasible);
        let mut totals = vec![0i64; feasible.len()];
        for (col, score) in columns.iter().zip(&self.scores) {
            for (t, s) in totals.iter_mut().zip(col) {
                *t += s * score.weight;
            }
        }
        let best = select_best(&mut self.rng, &totals);
        let explanation = explain.then(|| {
            let mut e = explain_nodes(cluster, &visited, &columns, &totals, all - processed);
            e.score_rules = self
                .scores
                .iter()
                .map(|s| (s.name.clone(), s.weight))
                .collect();
            e
        });
        Decision {
            node: Some(feasible[best]),
            fit_error: None,
            explanation,
        }
    }

    fn reject_all(&self, cluster: &Cluster, reasons: &[Reason], explain: bool) -> Decision {
        let all = cluster.node_count();
        let counts = reasons
            .iter()
            .map(|r| (r.as_str().to_string(), all))
            .collect();
        let failed: Vec<Verdict> = cluster
            .node_order()
            .iter()
            .map(|id| (*id, Some(reasons.to_vec())))
            .collect();
        Decision {
            node: None,
            fit_error: Some(FitError {
                num_all_nodes: all,
                reasons: counts,
            }),
            explanation: explain.then(|| explain_nodes(cluster, &failed, &[], &[], 0)),
        }
    }

    /// Visits nodes from where the last cycle stopped until enough feasible ones are found.
    /// Batches are filtered in parallel but consumed in visiting order, so the result does not
    /// depend on thread timing. Returns the feasible nodes and every visited node's verdict,
    /// in visiting order.
    fn find_feasible(
        &self,
        cluster: &Cluster,
        checks: &[Box<dyn NodeCheck + '_>],
    ) -> (Vec<NodeId>, Vec<Verdict>) {
        let order = cluster.node_order();
        let all = order.len();
        let want = self.feasible_nodes_to_find(all);
        let start = self.next_start % all;
        let all_checks = self.config.always_check_all_predicates;
        let verdict = |i: usize| -> Verdict {
            let id = order[(start + i) % all];
            let node = cluster.node(id);
            let mut reasons = Vec::new();
            for c in checks {
                if !c.check(node, &mut reasons) && !all_checks {
                    break;
                }
            }
            (id, (!reasons.is_empty()).then_some(reasons))
        };
        let mut feasible = Vec::with_capacity(want.min(all));
        let mut visited: Vec<Verdict> = Vec::with_capacity(want.min(all));
        while visited.len() < all && feasible.len() < want {
            let processed = visited.len();
            let remaining = all - processed;
            let batch = if want >= all {
                remaining
            } else {
                remaining.min(((want - feasible.len()) * 2).max(MIN_NODES_PER_TASK * 4))
            };
            let range = processed..processed + batch;
            let verdicts: Vec<Verdict> = if batch < PARALLEL_THRESHOLD {
                range.map(verdict).collect()
            } else {
                range
                    .into_par_iter()
                    .with_min_len(MIN_NODES_PER_TASK)
                    .map(verdict)
                    .collect()
            };
            for v in verdicts {
                if feasible.len() == want {
                    break;
                }
                if v.1.is_none() {
                    feasible.push(v.0);
                }
                visited.push(v);
            }
        }
        (feasible, visited)
    }

    /// Normalised scores, one column per score rule, rows in `feasible` order.
    fn score_columns(&self, ctx: CycleContext<'_>, feasible: &[NodeId]) -> Vec<Vec<i64>> {
        let preps: Vec<ScorePrep<'_>> = self.scores.iter().map(|s| s.rule.prepare(ctx)).collect();
        let per_node: Vec<&dyn NodeScore> = preps
            .iter()
            .filter_map(|p| match p {
                ScorePrep::PerNode(s) => Some(s.as_ref()),
                ScorePrep::Constant(_) => None,
            })
            .collect();
        let width = per_node.len();
        let row = |id: &NodeId| {
            let node = ctx.cluster.node(*id);
            per_node.iter().map(move |s| s.score(node))
        };
        let raw: Vec<i64> = if width == 0 {
            Vec::new()
        } else if feasible.len() < PARALLEL_THRESHOLD {
            feasible.iter().flat_map(row).collect()
        } else {
            feasible
                .par_iter()
                .with_min_len(MIN_NODES_PER_TASK)
                .flat_map_iter(row)
                .collect()
        };
        let mut k = 0;
        preps
            .iter()
            .map(|p| match p {
                ScorePrep::Constant(v) => vec![*v; feasible.len()],
                ScorePrep::PerNode(s) => {
                    let mut col: Vec<i64> = raw.iter().skip(k).step_by(width).copied().collect();
                    k += 1;
                    s.normalize(feasible, &mut col);
                    col
                }
            })
            .collect()
    }
}

/// The explanation of a cycle: `visited` in visiting order; `columns` and `totals` hold the
/// scores of the feasible ones among them, in the same order (empty when nothing was scored).
fn explain_nodes(
    cluster: &Cluster,
    visited: &[Verdict],
    columns: &[Vec<i64>],
    totals: &[i64],
    not_evaluated: usize,
) -> Explanation {
    let mut feasible_row = 0;
    let nodes = visited
        .iter()
        .map(|(id, reasons)| {
            let mut e = NodeExplanation {
                node: cluster.node(*id).name().to_string(),
                reasons: reasons
                    .iter()
                    .flatten()
                    .map(|r| r.as_str().to_string())
                    .collect(),
                scores: Vec::new(),
                total: None,
            };
            if reasons.is_none() && !totals.is_empty() {
                e.scores = columns.iter().map(|c| c[feasible_row]).collect();
                e.total = Some(totals[feasible_row]);
                feasible_row += 1;
            }
            e
        })
        .collect();
    Explanation {
        score_rules: Vec::new(),
        nodes,
        not_evaluated,
    }
}

/// Index of the highest total; ties broken uniformly at random (reservoir sampling, as
/// upstream's selectHost).
fn select_best(rng: &mut ChaCha8Rng, totals: &[i64]) -> usize {
    let mut best = 0;
    let mut ties = 1u32;
    for (i, t) in totals.iter().enumerate().skip(1) {
        if *t > totals[best] {
            best = i;
            ties = 1;
        } else if *t == totals[best] {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    best
}
