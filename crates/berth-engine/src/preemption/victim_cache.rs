//! Dry-run results shared across equal preemptors.
//!
//! A burst of pods that must all preempt usually comes from one controller (a Deployment
//! scaled up, a Job's parallel pods): each asks every sampled node the same question, which
//! pods must go for this pod to fit. When every prepared filter's verdict follows from the
//! node and the pod alone ([`crate::framework::NodeCheck::node_local`]), the answer for a
//! node holds until the node changes (its object or its set of pods:
//! [`crate::cluster::NodeInfo`]'s stamp), the PodDisruptionBudgets change, or the node has
//! nominated pods (never cached). Answers are kept per class of equal pods (the same spec
//! under any name), for a few classes: memory stays bounded by classes x nodes.

use rustc_hash::FxHashMap;

use crate::classes::class_of;
use crate::cluster::NodeId;
use crate::diagnosis::Candidate;
use crate::model;

use super::dry_run::Rejection;

/// How many classes of equal pods keep their answers; the least recently used one goes
/// when another arrives.
const MAX_CLASSES: usize = 8;

/// One node's dry-run answer.
pub(crate) type DryRunAnswer = Result<Candidate, Rejection>;

/// Answers per pod class, owned by the scheduler (whose filters they come from).
#[derive(Debug, Default)]
pub(crate) struct VictimCache {
    classes: Vec<Class>,
    clock: u64,
    reused: u64,
    computed: u64,
}

#[derive(Debug)]
struct Class {
    /// A member of the class with its identity cleared (see [`class_of`]).
    pod: model::Pod,
    /// The budgets' stamp the answers were computed under.
    budgets: u64,
    last_used: u64,
    /// Node -> (its stamp when answered, the answer).
    answers: FxHashMap<NodeId, (u64, DryRunAnswer)>,
}

/// The answers of one class, for one preemption attempt.
pub(crate) struct ClassAnswers<'c> {
    answers: &'c mut FxHashMap<NodeId, (u64, DryRunAnswer)>,
    reused: &'c mut u64,
    computed: &'c mut u64,
}

impl ClassAnswers<'_> {
    /// The answer for `node` in state `stamp`, computed by `dry_run` unless known.
    pub(crate) fn answer(
        &mut self,
        node: NodeId,
        stamp: u64,
        dry_run: impl FnOnce() -> DryRunAnswer,
    ) -> DryRunAnswer {
        if let Some((s, answer)) = self.answers.get(&node)
            && *s == stamp
        {
            *self.reused += 1;
            return answer.clone();
        }
        *self.computed += 1;
        let answer = dry_run();
        self.answers.insert(node, (stamp, answer.clone()));
        answer
    }
}

impl VictimCache {
    /// The answers for pods equal to `pod` under budgets stamped `budgets`, in a cluster of
    /// `nodes` nodes.
    pub(crate) fn class(
        &mut self,
        pod: &model::Pod,
        budgets: u64,
        nodes: usize,
    ) -> ClassAnswers<'_> {
        self.clock += 1;
        let key = class_of(pod);
        let index = match self.classes.iter().position(|c| c.pod == key) {
            Some(i) => i,
            None => {
                if self.classes.len() == MAX_CLASSES
                    && let Some(oldest) =
                        (0..self.classes.len()).min_by_key(|i| self.classes[*i].last_used)
                {
                    self.classes.swap_remove(oldest);
                }
                self.classes.push(Class {
                    pod: key,
                    budgets,
                    last_used: 0,
                    answers: FxHashMap::default(),
                });
                self.classes.len() - 1
            }
        };
        let class = &mut self.classes[index];
        class.last_used = self.clock;
        // Answers of removed nodes are never asked for again; past twice the live nodes
        // the table starts over rather than grow with node churn.
        if class.budgets != budgets || class.answers.len() > 2 * nodes + 64 {
            class.answers.clear();
            class.budgets = budgets;
        }
        ClassAnswers {
            answers: &mut class.answers,
            reused: &mut self.reused,
            computed: &mut self.computed,
        }
    }

    /// Dry runs answered from the cache and dry runs computed, since the scheduler began.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.reused, self.computed)
    }
}
