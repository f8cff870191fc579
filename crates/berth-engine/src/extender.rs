//! Scheduler extenders as the cycle sees them (upstream's framework.Extender): after the
//! engine's own filters, each interested extender filters the feasible nodes in turn, in
//! Policy order; prioritize calls for the final feasible nodes all start at once and are
//! collected after the engine's own scores are normalised; when the pod preempts, each
//! interested extender with a preemptVerb may drop candidate nodes and trim their victims
//! (upstream's DefaultPreemption CallExtenders). The engine does no IO: callers implement
//! [`Extender`] (berth-extender does it over HTTP).

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::cluster::{Cluster, NodeId, PodId};
use crate::diagnosis::Candidate;
use crate::framework::MAX_NODE_SCORE;
use crate::model;
use crate::podinfo::PodInfo;

/// The highest score an extender gives (upstream's MaxExtenderPriority); its scores are
/// scaled by `MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY` into the engine's range.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// What an extender is asked about: a pod and candidate nodes of a cluster.
#[derive(Clone, Copy)]
pub struct ExtenderCall<'a> {
    /// The cluster of the cycle.
    pub cluster: &'a Cluster,
    /// The pod being scheduled.
    pub pod: &'a PodInfo,
    /// The candidate nodes, in the order to send them.
    pub nodes: &'a [NodeId],
}

/// An extender's filter answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterVerdict {
    /// Names of the nodes that passed, in the extender's order.
    pub passed: Vec<String>,
    /// Failed nodes (name, message).
    pub failed: Vec<(String, String)>,
    /// Failed nodes preemption cannot help (name, message); these take precedence.
    pub failed_and_unresolvable: Vec<(String, String)>,
}

/// What an extender is asked when the pod preempts: the candidate nodes and their victims.
#[derive(Clone, Copy)]
pub struct PreemptionCall<'a> {
    /// The cluster of the cycle.
    pub cluster: &'a Cluster,
    /// The preemptor.
    pub pod: &'a PodInfo,
    /// The candidates so far (the dry run's, or the previous extender's answer), each with
    /// its victims and budget violations as upstream sends them.
    pub candidates: &'a [Candidate],
}

/// An extender's preemption answer (upstream's `NodeNameToMetaVictims`): each node it keeps
/// as a candidate, with the UIDs of the victims it accepts there, in its order.
pub type PreemptionVerdict = Vec<(String, Vec<String>)>;

/// A prioritize call under way.
pub trait PendingScores: Send {
    /// Waits for the (node name, 0..=10 score) answer.
    fn wait(self: Box<Self>) -> Result<Vec<(String, i64)>, String>;
}

/// A scheduler extender.
pub trait Extender: Send + Sync {
    /// Its name in messages (upstream: the URL prefix).
    fn name(&self) -> &str;
    /// Whether a failure skips it instead of failing the cycle.
    fn ignorable(&self) -> bool;
    /// Extended resources it manages; empty means it is interested in every pod.
    fn managed_resources(&self) -> &[String];
    /// Whether it filters.
    fn filters(&self) -> bool;
    /// Its prioritize weight; 0 when it does not prioritize.
    fn weight(&self) -> i64;
    /// Filters `call.nodes`. Blocks until answered (or the extender's own timeout).
    fn filter(&self, call: ExtenderCall<'_>) -> Result<FilterVerdict, String>;
    /// Starts scoring `call.nodes`; the engine collects the answer later.
    fn prioritize(&self, call: ExtenderCall<'_>) -> Box<dyn PendingScores>;
    /// Whether it takes part in preemption (upstream's SupportsPreemption: it has a
    /// preemptVerb).
    fn supports_preemption(&self) -> bool;
    /// Upstream's ProcessPreemption: which candidates and victims it accepts. Blocks until
    /// answered (or the extender's own timeout). Called only if it supports preemption.
    fn process_preemption(&self, call: PreemptionCall<'_>) -> Result<PreemptionVerdict, String>;
}

/// An extender failure. Its text is the extender's error, as upstream reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExtenderError {
    /// The extender's name.
    pub extender: String,
    /// What went wrong.
    pub message: String,
}

/// Upstream's IsInterested: an extender without managed resources wants every pod; else a
/// pod requesting (or limiting; limits become requests in the model) one of them.
pub fn is_interested(extender: &dyn Extender, pod: &model::Pod) -> bool {
    let managed = extender.managed_resources();
    managed.is_empty()
        || pod
            .containers
            .iter()
            .chain(&pod.init_containers)
            .flat_map(|c| &c.requests)
            .any(|(name, _)| managed.iter().any(|m| m == name))
}

/// What the extenders' filters made of the feasible nodes.
pub(crate) struct Filtered {
    /// The nodes left, in the order the last extender gave them.
    pub feasible: Vec<NodeId>,
    /// Each failure message an extender gave (extender index, node name, message), for the
    /// FitError.
    pub reasons: Vec<(usize, String, String)>,
    /// Which extender removed each node that is gone, for explanations.
    pub removed_by: FxHashMap<NodeId, usize>,
    /// Nodes an extender named in FailedAndUnresolvableNodes (preemption leaves them out).
    pub unresolvable: Vec<NodeId>,
}

/// Upstream's findNodesThatPassExtenders: extenders in order, each seeing what the previous
/// one left; a failing extender fails the cycle unless it is ignorable, then it is skipped
/// (and reported in `skipped`).
pub(crate) fn filter(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    pod: &PodInfo,
    feasible: Vec<NodeId>,
    skipped: &mut Vec<ExtenderError>,
) -> Result<Filtered, ExtenderError> {
    let mut result = Filtered {
        feasible,
        reasons: Vec::new(),
        removed_by: FxHashMap::default(),
        unresolvable: Vec::new(),
    };
    for (index, extender) in extenders.iter().enumerate() {
        if result.feasible.is_empty() {
            break;
        }
        if !extender.filters() || !is_interested(extender.as_ref(), &pod.pod) {
            continue;
        }
        let call = ExtenderCall {
            cluster,
            pod,
            nodes: &result.feasible,
        };
        let error = |message: String| ExtenderError {
            extender: extender.name().to_string(),
            message,
        };
        let verdict = match extender.filter(call).and_then(|v| {
            passed_nodes(extender.name(), cluster, &result.feasible, &v).map(|p| (v, p))
        }) {
            Ok(answer) => answer,
            Err(message) if extender.ignorable() => {
                skipped.push(error(message));
                continue;
            }
            Err(message) => return Err(error(message)),
        };
        let (verdict, passed) = verdict;
        let unresolvable: FxHashSet<&str> = verdict
            .failed_and_unresolvable
            .iter()
            .map(|(node, _)| node.as_str())
            .collect();
        result.reasons.extend(
            verdict
                .failed_and_unresolvable
                .iter()
                .map(|(node, message)| (index, node.clone(), message.clone())),
        );
        result.reasons.extend(
            verdict
                .failed
                .into_iter()
                .filter(|(node, _)| !unresolvable.contains(node.as_str()))
                .map(|(node, message)| (index, node, message)),
        );
        let kept: FxHashSet<NodeId> = passed.iter().copied().collect();
        for id in &result.feasible {
            if !kept.contains(id) {
                result.removed_by.insert(*id, index);
            }
        }
        result.feasible = passed;
    }
    Ok(result)
}

/// The passed nodes as ids; each must be one that was sent (upstream's wording otherwise).
fn passed_nodes(
    name: &str,
    cluster: &Cluster,
    sent: &[NodeId],
    verdict: &FilterVerdict,
) -> Result<Vec<NodeId>, String> {
    let sent: FxHashSet<NodeId> = sent.iter().copied().collect();
    verdict
        .passed
        .iter()
        .map(|node| {
            cluster
                .node_by_name(node)
                .filter(|id| sent.contains(id))
                .ok_or_else(|| {
                    format!(
                        "extender {name:?} claims a filtered node {node:?} which is not found in \
                         the input node list"
                    )
                })
        })
        .collect()
}

/// Upstream's CallExtenders: each interested extender that supports preemption, in Policy
/// order, answers on the candidates the previous one left. A failing extender (a call
/// error, or an answer naming a node or pod Berth does not know there) fails preemption
/// unless it is ignorable, then it is skipped (and reported in `skipped`); `asked` gets the
/// name of each extender whose answer was used. An empty answer leaves no candidate.
///
/// As upstream rebuilds the candidates from the answer's UIDs, victims come in the
/// extender's order and every budget-violation count becomes 0 (upstream carries no count
/// through an extender), which the node choice then sees. Candidates keep the order they
/// were found in; a node the extender added (upstream accepts any node of the cluster, with
/// pods that are on it) comes after them, in name order.
pub(crate) fn process_preemption(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    pod: &PodInfo,
    mut candidates: Vec<Candidate>,
    skipped: &mut Vec<ExtenderError>,
    asked: &mut Vec<String>,
) -> Result<Vec<Candidate>, ExtenderError> {
    for extender in extenders {
        if candidates.is_empty() {
            break;
        }
        if !extender.supports_preemption() || !is_interested(extender.as_ref(), &pod.pod) {
            continue;
        }
        let call = PreemptionCall {
            cluster,
            pod,
            candidates: &candidates,
        };
        let answer = extender
            .process_preemption(call)
            .and_then(|verdict| victims_of(extender.as_ref(), cluster, &candidates, verdict));
        match answer {
            Ok(next) => {
                asked.push(extender.name().to_string());
                candidates = next;
            }
            Err(message) if extender.ignorable() => skipped.push(ExtenderError {
                extender: extender.name().to_string(),
                message,
            }),
            Err(message) => {
                return Err(ExtenderError {
                    extender: extender.name().to_string(),
                    message,
                });
            }
        }
    }
    Ok(candidates)
}

/// An answer as candidates, checked as upstream's convertToNodeNameToVictims and
/// CallExtenders check it: every node must be in the cluster, every UID a pod on that node,
/// and every node must keep a victim (an ignorable extender's empty node is just dropped).
fn victims_of(
    extender: &dyn Extender,
    cluster: &Cluster,
    before: &[Candidate],
    verdict: PreemptionVerdict,
) -> Result<Vec<Candidate>, String> {
    let name = extender.name();
    let mut kept: FxHashMap<NodeId, Vec<PodId>> = FxHashMap::default();
    for (node, uids) in verdict {
        let id = cluster
            .node_by_name(&node)
            .ok_or_else(|| format!("nodeinfo not found for node name {node:?}"))?;
        let on_node = &cluster.node(id).pods;
        let victims = uids
            .iter()
            .map(|uid| {
                on_node
                    .iter()
                    .copied()
                    .find(|p| cluster.pod(*p).pod.meta.uid == *uid)
                    .ok_or_else(|| {
                        format!(
                            "extender: {name} claims to preempt pod (UID: {uid}) on node: {node}, \
                             but the pod is not found on that node"
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        kept.insert(id, victims);
    }
    let mut added: Vec<NodeId> = kept
        .keys()
        .copied()
        .filter(|id| !before.iter().any(|c| c.node == *id))
        .collect();
    added.sort_by(|a, b| cluster.node(*a).name().cmp(cluster.node(*b).name()));
    let order = before.iter().map(|c| c.node).chain(added);
    let mut candidates = Vec::with_capacity(kept.len());
    for node in order {
        let Some(victims) = kept.remove(&node) else {
            continue;
        };
        if victims.is_empty() {
            if extender.ignorable() {
                continue;
            }
            return Err(format!(
                "expected at least one victim pod on node {:?}",
                cluster.node(node).name()
            ));
        }
        candidates.push(Candidate {
            node,
            victims,
            pdb_violations: 0,
        });
    }
    Ok(candidates)
}

/// Prioritize calls under way, one per interested prioritizing extender.
pub(crate) struct Scoring {
    pending: Vec<(usize, Box<dyn PendingScores>)>,
}

/// Starts every interested extender's prioritize call on the final feasible nodes.
pub(crate) fn start_scoring(
    extenders: &[Arc<dyn Extender>],
    cluster: &Cluster,
    pod: &PodInfo,
    feasible: &[NodeId],
) -> Scoring {
    let pending = extenders
        .iter()
        .enumerate()
        .filter(|(_, e)| e.weight() > 0 && is_interested(e.as_ref(), &pod.pod))
        .map(|(index, e)| {
            let call = ExtenderCall {
                cluster,
                pod,
                nodes: feasible,
            };
            (index, e.prioritize(call))
        })
        .collect();
    Scoring { pending }
}

/// An extender's score in the engine's range (before the weight), as upstream's
/// prioritizeNodes scales it: times MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY, saturating on
/// absurd scores.
pub(crate) fn scale(score: i64) -> i64 {
    score.saturating_mul(MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY)
}

impl Scoring {
    /// Extenders being asked, in Policy order.
    pub fn extenders(&self) -> impl Iterator<Item = usize> + '_ {
        self.pending.iter().map(|(index, _)| *index)
    }

    /// Waits for every answer; returns one column per extender asked (in Policy order) of
    /// each feasible node's score as the extender gave it (0..=MAX_EXTENDER_PRIORITY; see
    /// [`scale`] for the engine's range). A failed call gives no scores (upstream
    /// ignores prioritize errors, ignorable or not) and is reported in `skipped`.
    pub fn collect(
        self,
        extenders: &[Arc<dyn Extender>],
        cluster: &Cluster,
        feasible: &[NodeId],
        skipped: &mut Vec<ExtenderError>,
    ) -> Vec<Vec<i64>> {
        let rows: FxHashMap<&str, usize> = feasible
            .iter()
            .enumerate()
            .map(|(row, id)| (cluster.node(*id).name(), row))
            .collect();
        self.pending
            .into_iter()
            .map(|(index, pending)| {
                let mut column = vec![0i64; feasible.len()];
                match pending.wait() {
                    // Repeated hosts add up and unknown hosts are dropped, as upstream's
                    // map of combined scores does; arithmetic saturates on absurd scores.
                    Ok(scores) => {
                        for (host, score) in scores {
                            if let Some(row) = rows.get(host.as_str()) {
                                column[*row] = column[*row].saturating_add(score);
                            }
                        }
                    }
                    Err(message) => skipped.push(ExtenderError {
                        extender: extenders[index].name().to_string(),
                        message,
                    }),
                }
                column
            })
            .collect()
    }
}
