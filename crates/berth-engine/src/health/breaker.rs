//! The node circuit breaker's tracker. A node whose runtime or network is broken while it
//! still reports Ready fails every pod placed on it; this tracker notices and opens the node's
//! breaker, so `CheckNodeCircuitBreaker` keeps pods off it.
//!
//! - A start failure is a candidate against the node when kubelet's reason is the node's
//!   ([`super::is_node_reason`]) or the pod's sandbox is still not created `start_timeout`
//!   after placement. Image pulls, configuration errors and crash loops are the workload's.
//! - A candidate counts (is node-attributed) only when its workload has a started pod on some
//!   other node: the same spec starts elsewhere, so the node is what differs. Pods without a
//!   controller never count, as nothing shows their spec can start.
//! - The breaker opens when at least `failure_threshold` node-attributed failures from at
//!   least `min_workloads` workloads fall within `window` seconds.
//! - After `cool_down` it is half-open: the next pod placed there is the probe and other pods
//!   wait. A probe that starts closes the breaker and forgets the failures; a probe that fails
//!   for the node's reasons reopens it; one that fails for its own reasons, or is deleted,
//!   gives no verdict and the next placed pod probes.
//!
//! Every fact carries its own time, so feeding a snapshot's pods at once in time order
//! ([`CircuitBreakers::rebuild`]) reaches the state a tracker that watched it all reached.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::state::Circuit;
use super::{PodStart, StartState, Workload, is_node_reason, sandbox_timeout_reason};

/// The breaker's thresholds, from the policy argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Node-attributed failures within `window` that open the breaker.
    pub failure_threshold: usize,
    /// Distinct workloads those failures must come from.
    pub min_workloads: usize,
    /// Seconds over which failures are counted.
    pub window: i64,
    /// Seconds an open breaker waits before letting a probe pod through.
    pub cool_down: i64,
    /// Seconds a pod may wait for its sandbox before that counts as a failure.
    pub start_timeout: i64,
}

/// A change of one node's breaker, to report as an Event and in metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The node.
    pub node: String,
    /// What happened.
    pub kind: TransitionKind,
    /// When (seconds since the epoch).
    pub at: i64,
    /// A sentence for the node's Event.
    pub message: String,
}

/// What a [`Transition`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransitionKind {
    /// Closed to open: enough node-attributed failures.
    Opened,
    /// Open to half-open: the cool-down ended.
    HalfOpened,
    /// Half-open to closed: the probe started.
    Closed,
    /// Half-open to open: the probe failed.
    Reopened,
}

impl TransitionKind {
    /// The state the breaker is in afterwards, as a metric label.
    pub fn state(self) -> &'static str {
        match self {
            TransitionKind::Opened | TransitionKind::Reopened => "open",
            TransitionKind::HalfOpened => "half-open",
            TransitionKind::Closed => "closed",
        }
    }

    /// The Event reason.
    pub fn event_reason(self) -> &'static str {
        match self {
            TransitionKind::Opened => "CircuitBreakerOpened",
            TransitionKind::HalfOpened => "CircuitBreakerHalfOpen",
            TransitionKind::Closed => "CircuitBreakerClosed",
            TransitionKind::Reopened => "CircuitBreakerReopened",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Waiting { sandbox_ready: bool },
    Started,
    Failed,
}

impl Verdict {
    fn of(state: &StartState) -> Self {
        match state {
            StartState::Waiting { sandbox_ready } => Verdict::Waiting {
                sandbox_ready: *sandbox_ready,
            },
            StartState::Started { .. } => Verdict::Started,
            StartState::Failed { .. } => Verdict::Failed,
        }
    }
}

#[derive(Debug, Clone)]
struct Failure {
    key: String,
    owner: Option<Workload>,
    at: i64,
    reason: String,
}

#[derive(Debug, Clone, Default)]
enum Phase {
    #[default]
    Closed,
    Open {
        since: i64,
        until: i64,
        failures: Vec<(String, String, String)>,
    },
    HalfOpen {
        since: i64,
        /// (uid, key) of the probe.
        probe: Option<(String, String)>,
    },
}

#[derive(Debug, Clone, Default)]
struct NodeTrack {
    phase: Phase,
    /// Candidate failures while closed, oldest first, none older than `window` before the
    /// newest.
    failures: VecDeque<Failure>,
}

/// The tracker: every assigned pod's start, and each node's breaker.
#[derive(Debug, Clone)]
pub struct CircuitBreakers {
    config: BreakerConfig,
    /// Every assigned pod's latest start, by uid (what [`Self::replay`] starts from).
    pods: HashMap<String, PodStart>,
    /// Started pods per workload per node, to tell whether a workload starts elsewhere.
    started: HashMap<Workload, HashMap<String, u32>>,
    /// (deadline, uid) of pods waiting for their sandbox.
    deadlines: BTreeSet<(i64, String)>,
    nodes: HashMap<String, NodeTrack>,
    transitions: Vec<Transition>,
}

impl CircuitBreakers {
    /// A tracker with nothing seen yet.
    pub fn new(config: BreakerConfig) -> Self {
        CircuitBreakers {
            config,
            pods: HashMap::new(),
            started: HashMap::new(),
            deadlines: BTreeSet::new(),
            nodes: HashMap::new(),
            transitions: Vec::new(),
        }
    }

    /// The thresholds in use.
    pub fn config(&self) -> BreakerConfig {
        self.config
    }

    /// A tracker that has seen `starts` happen, in the order of their own times, up to `now`.
    pub fn rebuild(config: BreakerConfig, starts: &[PodStart], now: i64) -> Self {
        let mut tracker = CircuitBreakers::new(config);
        // Each pod is placed first, then reaches its verdict; both at their own times.
        let mut facts: Vec<(i64, bool, usize)> = Vec::with_capacity(starts.len() * 2);
        for (index, start) in starts.iter().enumerate() {
            facts.push((start.placed_at, false, index));
            match start.state {
                StartState::Started { at } | StartState::Failed { at, .. } => {
                    facts.push((at.max(start.placed_at), true, index))
                }
                StartState::Waiting { .. } => {}
            }
        }
        facts.sort();
        for (at, verdict, index) in facts {
            tracker.advance(at);
            let start = &starts[index];
            if verdict {
                tracker.observe(start);
            } else {
                let placed = match start.state {
                    StartState::Waiting { .. } => start.clone(),
                    _ => PodStart {
                        state: StartState::Waiting {
                            sandbox_ready: true,
                        },
                        ..start.clone()
                    },
                };
                tracker.observe(&placed);
            }
        }
        tracker.advance(now);
        tracker.transitions.clear();
        tracker
    }

    /// The same tracker rebuilt from the pods it holds, under `config`: for a watch that has
    /// just listed every pod in no particular order, or new thresholds. Failures of pods
    /// deleted before are not in it.
    pub fn replay(&self, config: BreakerConfig, now: i64) -> Self {
        let starts: Vec<PodStart> = self.pods.values().cloned().collect();
        CircuitBreakers::rebuild(config, &starts, now)
    }

    /// Takes in what kubelet reported about one pod (new, or changed since last seen).
    pub fn observe(&mut self, start: &PodStart) {
        let verdict = Verdict::of(&start.state);
        let before = match self.pods.get(&start.uid) {
            Some(old) if old.node == start.node => Some(Verdict::of(&old.state)),
            Some(_) => {
                self.forget(&start.uid);
                None
            }
            None => None,
        };
        if before.is_none() {
            self.placed(start);
        }
        // A failure stands until the pod starts: kubelet goes back to waiting between retries.
        if before == Some(verdict)
            || (before == Some(Verdict::Failed) && matches!(verdict, Verdict::Waiting { .. }))
        {
            return;
        }
        if let Some(Verdict::Waiting {
            sandbox_ready: false,
        }) = before
        {
            self.deadlines.remove(&(
                self.pods[&start.uid].placed_at + self.config.start_timeout,
                start.uid.clone(),
            ));
        }
        self.pods.insert(start.uid.clone(), start.clone());
        match &start.state {
            StartState::Waiting {
                sandbox_ready: false,
            } => {
                self.deadlines.insert((
                    start.placed_at + self.config.start_timeout,
                    start.uid.clone(),
                ));
            }
            StartState::Waiting { .. } => {}
            StartState::Started { at } if before != Some(Verdict::Started) => {
                self.started_pod(&start.uid, *at)
            }
            StartState::Started { .. } => {}
            StartState::Failed { at, reason } => self.failed(&start.uid, *at, reason.clone()),
        }
    }

    /// Forgets a pod that was deleted (or finished). Failures it had stay counted for their
    /// window: the evidence against a node outlives the pods users delete.
    pub fn forget(&mut self, uid: &str) {
        let Some(track) = self.pods.remove(uid) else {
            return;
        };
        match Verdict::of(&track.state) {
            Verdict::Started => {
                if let Some(owner) = &track.owner
                    && let Some(nodes) = self.started.get_mut(owner)
                {
                    if let Some(count) = nodes.get_mut(&track.node) {
                        *count -= 1;
                        if *count == 0 {
                            nodes.remove(&track.node);
                        }
                    }
                    if nodes.is_empty() {
                        self.started.remove(owner);
                    }
                }
            }
            Verdict::Waiting {
                sandbox_ready: false,
            } => {
                self.deadlines
                    .remove(&(track.placed_at + self.config.start_timeout, uid.to_owned()));
            }
            _ => {}
        }
        if let Some(node) = self.nodes.get_mut(&track.node)
            && let Phase::HalfOpen { probe, .. } = &mut node.phase
            && probe.as_ref().is_some_and(|(p, _)| p == uid)
        {
            *probe = None;
        }
    }

    /// Forgets a deleted node's breaker.
    pub fn forget_node(&mut self, node: &str) {
        self.nodes.remove(node);
    }

    /// Moves the clock to `now`: sandbox waits past their timeout become failures and
    /// cool-downs that ended make breakers half-open, in the order they happened.
    pub fn advance(&mut self, now: i64) {
        loop {
            let (deadline, cool_down_end) = self.next_events();
            let Some(next) = deadline.into_iter().chain(cool_down_end).min() else {
                return;
            };
            if next > now {
                return;
            }
            if deadline == Some(next) {
                let (at, uid) = self.deadlines.pop_first().expect("the first deadline");
                let reason = sandbox_timeout_reason(self.config.start_timeout);
                if let Some(track) = self.pods.get_mut(&uid) {
                    track.state = StartState::Failed {
                        at,
                        reason: reason.clone(),
                    };
                }
                self.failed(&uid, at, reason);
            } else {
                self.half_open(next);
            }
        }
    }

    /// When [`Self::advance`] next has something to do, if ever.
    pub fn next_deadline(&self) -> Option<i64> {
        let (deadline, cool_down_end) = self.next_events();
        deadline.into_iter().chain(cool_down_end).min()
    }

    /// The first sandbox time-out and the first cool-down end, if any.
    fn next_events(&self) -> (Option<i64>, Option<i64>) {
        let deadline = self.deadlines.first().map(|(at, _)| *at);
        let cool_down_end = self
            .nodes
            .values()
            .filter_map(|n| match n.phase {
                Phase::Open { until, .. } => Some(until),
                _ => None,
            })
            .min();
        (deadline, cool_down_end)
    }

    /// Whether some node's breaker is open or half-open.
    pub fn any_not_closed(&self) -> bool {
        self.nodes
            .values()
            .any(|n| !matches!(n.phase, Phase::Closed))
    }

    /// The nodes whose breakers are not closed, for the filter.
    pub fn view(&self) -> HashMap<String, Circuit> {
        self.nodes
            .iter()
            .filter_map(|(node, track)| {
                let circuit = match &track.phase {
                    Phase::Closed => return None,
                    Phase::Open {
                        since,
                        until,
                        failures,
                    } => Circuit::Open {
                        since: *since,
                        until: *until,
                        failures: failures.clone(),
                    },
                    Phase::HalfOpen { probe, .. } => Circuit::HalfOpen {
                        probe: probe.as_ref().map(|(_, key)| key.clone()),
                    },
                };
                Some((node.clone(), circuit))
            })
            .collect()
    }

    /// The transitions since the last call.
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.transitions)
    }

    /// A pod newly on its node: the probe of a half-open breaker waiting for one.
    fn placed(&mut self, start: &PodStart) {
        if let Some(node) = self.nodes.get_mut(&start.node)
            && let Phase::HalfOpen { since, probe } = &mut node.phase
            && probe.is_none()
            && start.placed_at >= *since
            && matches!(start.state, StartState::Waiting { .. })
        {
            *probe = Some((start.uid.clone(), start.key.clone()));
        }
    }

    fn started_pod(&mut self, uid: &str, at: i64) {
        let track = &self.pods[uid];
        let node = track.node.clone();
        let owner = track.owner.clone();
        if let Some(owner) = &owner {
            *self
                .started
                .entry(owner.clone())
                .or_default()
                .entry(node.clone())
                .or_default() += 1;
        }
        if let Some(n) = self.nodes.get_mut(&node)
            && let Phase::HalfOpen {
                probe: Some((probe, key)),
                ..
            } = &n.phase
            && probe == uid
        {
            let message = format!("probe pod {key} started on the node; the breaker is closed");
            n.phase = Phase::Closed;
            n.failures.clear();
            self.transition(&node, TransitionKind::Closed, at, message);
        }
        // The workload now starts here, so its failures on other nodes may count.
        if let Some(owner) = owner {
            let others: Vec<String> = self
                .nodes
                .iter()
                .filter(|(name, n)| {
                    **name != node
                        && matches!(n.phase, Phase::Closed)
                        && n.failures.iter().any(|f| f.owner.as_ref() == Some(&owner))
                })
                .map(|(name, _)| name.clone())
                .collect();
            for other in others {
                self.check(&other);
            }
        }
    }

    fn failed(&mut self, uid: &str, at: i64, reason: String) {
        let Some(track) = self.pods.get(uid) else {
            return;
        };
        let node_fault = is_node_reason(&reason) || reason.starts_with("sandbox not created");
        let failure = Failure {
            key: track.key.clone(),
            owner: track.owner.clone(),
            at,
            reason,
        };
        let node = track.node.clone();
        let n = self.nodes.entry(node.clone()).or_default();
        match &mut n.phase {
            Phase::Closed if node_fault => {
                let position = n.failures.partition_point(|f| f.at <= at);
                n.failures.insert(position, failure);
                let newest = n.failures.back().map_or(at, |f| f.at);
                while n
                    .failures
                    .front()
                    .is_some_and(|f| f.at < newest - self.config.window)
                {
                    n.failures.pop_front();
                }
                self.check(&node);
            }
            Phase::HalfOpen { probe, .. } if probe.as_ref().is_some_and(|(p, _)| p == uid) => {
                if node_fault {
                    let message = format!(
                        "probe pod {} failed to start ({}); the breaker is open again for {}s",
                        failure.key, failure.reason, self.config.cool_down
                    );
                    n.phase = Phase::Open {
                        since: at,
                        until: at + self.config.cool_down,
                        failures: vec![(
                            failure.key,
                            failure.owner.map(|o| o.to_string()).unwrap_or_default(),
                            failure.reason,
                        )],
                    };
                    self.transition(&node, TransitionKind::Reopened, at, message);
                } else {
                    // The probe's own spec failed it: no verdict on the node.
                    *probe = None;
                }
            }
            _ => {}
        }
    }

    /// Opens `node`'s breaker if its node-attributed failures reach the thresholds.
    fn check(&mut self, node: &str) {
        let Some(n) = self.nodes.get(node) else {
            return;
        };
        let Some(newest) = n.failures.back().map(|f| f.at) else {
            return;
        };
        let window_start = newest - self.config.window;
        let counted: Vec<&Failure> = n
            .failures
            .iter()
            .filter(|f| f.at >= window_start)
            .filter(|f| {
                f.owner.as_ref().is_some_and(|owner| {
                    self.started
                        .get(owner)
                        .is_some_and(|nodes| nodes.keys().any(|other| other != node))
                })
            })
            .collect();
        let mut workloads: Vec<&Workload> =
            counted.iter().filter_map(|f| f.owner.as_ref()).collect();
        workloads.sort();
        workloads.dedup();
        if counted.len() < self.config.failure_threshold
            || workloads.len() < self.config.min_workloads
        {
            return;
        }
        let failures: Vec<(String, String, String)> = counted
            .iter()
            .map(|f| {
                (
                    f.key.clone(),
                    f.owner.as_ref().map(|o| o.to_string()).unwrap_or_default(),
                    f.reason.clone(),
                )
            })
            .collect();
        let message = format!(
            "{} pods of {} workloads failed to start on the node within {}s while the same \
             workloads started elsewhere ({}); pods are kept off it for {}s",
            counted.len(),
            workloads.len(),
            self.config.window,
            failures
                .iter()
                .map(|(pod, _, reason)| format!("{pod}: {reason}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.config.cool_down
        );
        let n = self.nodes.get_mut(node).expect("checked above");
        n.phase = Phase::Open {
            since: newest,
            until: newest + self.config.cool_down,
            failures,
        };
        n.failures.clear();
        self.transition(node, TransitionKind::Opened, newest, message);
    }

    /// The open breaker whose cool-down ends first, at `at`, becomes half-open; a pod already
    /// placed there since then (in a snapshot) is its probe.
    fn half_open(&mut self, at: i64) {
        let Some(node) = self
            .nodes
            .iter()
            .find(|(_, n)| matches!(n.phase, Phase::Open { until, .. } if until == at))
            .map(|(name, _)| name.clone())
        else {
            return;
        };
        let probe = self
            .pods
            .iter()
            .filter(|(_, p)| p.node == node && p.placed_at >= at)
            .filter(|(_, p)| matches!(p.state, StartState::Waiting { .. }))
            .min_by(|a, b| (a.1.placed_at, a.0).cmp(&(b.1.placed_at, b.0)))
            .map(|(uid, p)| (uid.clone(), p.key.clone()));
        self.nodes.get_mut(&node).expect("found above").phase =
            Phase::HalfOpen { since: at, probe };
        let message = "the cool-down ended; the next pod placed on the node is a probe".to_owned();
        self.transition(&node, TransitionKind::HalfOpened, at, message);
    }

    fn transition(&mut self, node: &str, kind: TransitionKind, at: i64, message: String) {
        self.transitions.push(Transition {
            node: node.to_owned(),
            kind,
            at,
            message,
        });
    }
}

#[cfg(test)]
mod tests;
