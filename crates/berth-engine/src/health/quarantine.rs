//! Crash-loop containment's tracker. A workload whose pods exhaust a node (fork bombs, file
//! handles) makes it NotReady; its pods are evicted, land on a healthy node and break that
//! too. This tracker notices the pattern and quarantines the workload, so
//! `CheckWorkloadQuarantine` keeps its pods off every node but those labelled for quarantine.
//!
//! - A node going NotReady at `t` makes a suspect of every workload with a pod placed on it
//!   within `within` seconds before `t`: a strike (node, placed at, `t`).
//! - A workload is quarantined when its strikes within `window` form a cascade over
//!   `node_threshold` distinct nodes: each node received the workload's pod after the
//!   previous one went NotReady. Nodes that fail together (a rack losing power) are one
//!   event, not a cascade, so an outage quarantines nothing that merely ran there.
//! - DaemonSets (one pod per node by design) and static pods are never suspects.
//! - A quarantine ends after `cool_down`, or at once when the owner carries the release
//!   annotation (which also keeps it from being quarantined while present).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::Workload;
use super::state::Quarantine;

/// The owner annotation that releases a quarantined workload.
pub const RELEASE_ANNOTATION: &str = "berth.dev/quarantine-release";

/// Owner kinds that are never suspects: they place a pod on every node by design.
const NEVER_SUSPECT: &[&str] = &["DaemonSet", "Node"];

/// Containment's thresholds, from the policy argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuarantineConfig {
    /// Distinct nodes in a cascade that quarantine a workload.
    pub node_threshold: usize,
    /// Seconds over which strikes are counted.
    pub window: i64,
    /// Seconds before a NotReady transition in which a placed pod makes its workload suspect.
    pub within: i64,
    /// Seconds a quarantine lasts unless released.
    pub cool_down: i64,
}

/// A quarantine beginning or ending, to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineChange {
    /// The workload.
    pub workload: Workload,
    /// True when it began, false when it ended.
    pub quarantined: bool,
    /// When (seconds since the epoch).
    pub at: i64,
    /// A sentence for the log and the Event.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Strike {
    node: String,
    placed_at: i64,
    at: i64,
}

#[derive(Debug, Clone, Default)]
struct NodeTrack {
    /// When the node last went NotReady, while it is.
    not_ready_since: Option<i64>,
    /// Pods placed recently, oldest first: (workload, when).
    recent: VecDeque<(Workload, i64)>,
}

/// One fact of a snapshot, for [`Quarantines::rebuild`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// A pod of `owner` was placed on `node` at `at`.
    Placed {
        /// The node.
        node: String,
        /// The pod's controller.
        owner: Workload,
        /// When.
        at: i64,
    },
    /// `node`'s Ready condition became `ready` at `at`.
    Readiness {
        /// The node.
        node: String,
        /// Ready or not.
        ready: bool,
        /// The condition's last transition.
        at: i64,
    },
}

impl Fact {
    fn at(&self) -> i64 {
        match self {
            Fact::Placed { at, .. } | Fact::Readiness { at, .. } => *at,
        }
    }
}

/// The tracker.
#[derive(Debug, Clone)]
pub struct Quarantines {
    config: QuarantineConfig,
    nodes: HashMap<String, NodeTrack>,
    strikes: HashMap<Workload, Vec<Strike>>,
    active: BTreeMap<Workload, Quarantine>,
    released: BTreeSet<Workload>,
    changes: Vec<QuarantineChange>,
}

impl Quarantines {
    /// A tracker with nothing seen yet.
    pub fn new(config: QuarantineConfig) -> Self {
        Quarantines {
            config,
            nodes: HashMap::new(),
            strikes: HashMap::new(),
            active: BTreeMap::new(),
            released: BTreeSet::new(),
            changes: Vec::new(),
        }
    }

    /// The thresholds in use.
    pub fn config(&self) -> QuarantineConfig {
        self.config
    }

    /// A tracker that has seen `facts` happen in the order of their times, with `released`
    /// owners carrying the release annotation, up to `now`.
    pub fn rebuild(
        config: QuarantineConfig,
        facts: &[Fact],
        released: BTreeSet<Workload>,
        now: i64,
    ) -> Self {
        let mut tracker = Quarantines::new(config);
        tracker.released = released;
        let mut order: Vec<&Fact> = facts.iter().collect();
        // Placements before a transition at the same second: the pod was there first.
        order.sort_by_key(|f| (f.at(), matches!(f, Fact::Readiness { .. })));
        for fact in order {
            tracker.advance(fact.at());
            match fact {
                Fact::Placed { node, owner, at } => tracker.placed(node, owner, *at),
                Fact::Readiness { node, ready, at } => tracker.readiness(node, *ready, *at),
            }
        }
        tracker.advance(now);
        tracker.changes.clear();
        tracker
    }

    /// A pod of `owner` placed on `node` at `at`.
    pub fn placed(&mut self, node: &str, owner: &Workload, at: i64) {
        if NEVER_SUSPECT.contains(&owner.kind.as_str()) {
            return;
        }
        let track = self.nodes.entry(node.to_owned()).or_default();
        // A watch shows the same pod again on every status change.
        if track.recent.iter().any(|(o, t)| *t == at && o == owner) {
            return;
        }
        let position = track.recent.partition_point(|(_, t)| *t <= at);
        track.recent.insert(position, (owner.clone(), at));
        if let Some(since) = track.not_ready_since
            && at <= since
            && at >= since - self.config.within
        {
            self.strike(owner, node, at, since);
        }
    }

    /// `node`'s Ready condition as last reported: `ready`, since `at` (its last transition).
    pub fn readiness(&mut self, node: &str, ready: bool, at: i64) {
        let track = self.nodes.entry(node.to_owned()).or_default();
        if ready {
            track.not_ready_since = None;
            return;
        }
        if track.not_ready_since == Some(at) {
            return;
        }
        track.not_ready_since = Some(at);
        let suspects: Vec<(Workload, i64)> = track
            .recent
            .iter()
            .filter(|(_, placed)| *placed <= at && *placed >= at - self.config.within)
            .cloned()
            .collect();
        for (owner, placed) in suspects {
            self.strike(&owner, node, placed, at);
        }
    }

    /// Forgets a deleted node (its strikes stay).
    pub fn forget_node(&mut self, node: &str) {
        self.nodes.remove(node);
    }

    /// Replaces the owners that carry the release annotation; quarantines of those end now.
    pub fn set_released(&mut self, released: BTreeSet<Workload>, now: i64) {
        for workload in &released {
            if self.active.remove(workload).is_some() {
                self.changes.push(QuarantineChange {
                    workload: workload.clone(),
                    quarantined: false,
                    at: now,
                    message: format!("{workload} released by its {RELEASE_ANNOTATION} annotation"),
                });
            }
        }
        self.released = released;
    }

    /// Moves the clock to `now`: quarantines whose cool-down ended are lifted, and history
    /// too old to matter is dropped.
    pub fn advance(&mut self, now: i64) {
        let ended: Vec<Workload> = self
            .active
            .iter()
            .filter(|(_, q)| q.until <= now)
            .map(|(w, _)| w.clone())
            .collect();
        for workload in ended {
            let q = self.active.remove(&workload).expect("listed above");
            self.changes.push(QuarantineChange {
                message: format!(
                    "{workload}'s quarantine ended after {}s",
                    self.config.cool_down
                ),
                workload,
                quarantined: false,
                at: q.until,
            });
        }
        let oldest_placement = now - self.config.within;
        for track in self.nodes.values_mut() {
            while track
                .recent
                .front()
                .is_some_and(|(_, t)| *t < oldest_placement)
            {
                track.recent.pop_front();
            }
        }
        let oldest_strike = now - self.config.window;
        self.strikes.retain(|_, strikes| {
            strikes.retain(|s| s.at >= oldest_strike);
            !strikes.is_empty()
        });
    }

    /// When [`Self::advance`] next lifts a quarantine, if ever.
    pub fn next_deadline(&self) -> Option<i64> {
        self.active.values().map(|q| q.until).min()
    }

    /// The quarantined workloads, for the filter.
    pub fn view(&self) -> BTreeMap<Workload, Quarantine> {
        self.active.clone()
    }

    /// The quarantines begun or ended since the last call.
    pub fn take_changes(&mut self) -> Vec<QuarantineChange> {
        std::mem::take(&mut self.changes)
    }

    fn strike(&mut self, owner: &Workload, node: &str, placed_at: i64, at: i64) {
        let strike = Strike {
            node: node.to_owned(),
            placed_at,
            at,
        };
        let strikes = self.strikes.entry(owner.clone()).or_default();
        if strikes.iter().any(|s| s.node == strike.node && s.at == at) {
            // One strike per node and transition, however many pods the workload had there.
            if let Some(s) = strikes
                .iter_mut()
                .find(|s| s.node == strike.node && s.at == at)
            {
                s.placed_at = s.placed_at.max(placed_at);
            }
            return;
        }
        strikes.push(strike);
        strikes.retain(|s| s.at >= at - self.config.window);
        if self.active.contains_key(owner) || self.released.contains(owner) {
            return;
        }
        let (cascade, completed) = cascade(strikes);
        if cascade.len() < self.config.node_threshold {
            return;
        }
        let message = format!(
            "{owner} quarantined: nodes {} went NotReady within {}s of receiving its pods, one \
             after another; its pods are not placed for {}s unless released with the \
             {RELEASE_ANNOTATION} annotation",
            cascade.join(", "),
            self.config.within,
            self.config.cool_down
        );
        self.active.insert(
            owner.clone(),
            Quarantine {
                since: completed,
                until: completed + self.config.cool_down,
                nodes: cascade,
            },
        );
        self.changes.push(QuarantineChange {
            workload: owner.clone(),
            quarantined: true,
            at: completed,
            message,
        });
    }
}

/// The longest cascade in `strikes`: strikes on distinct nodes where each node received the
/// pod after the previous node went NotReady, and when its last node did. Taking the strike
/// that ends first, as in interval scheduling, gives the longest chain.
fn cascade(strikes: &[Strike]) -> (Vec<String>, i64) {
    let mut order: Vec<&Strike> = strikes.iter().collect();
    order.sort_by_key(|s| (s.at, s.placed_at));
    let mut chain: Vec<String> = Vec::new();
    let mut last = i64::MIN;
    for s in order {
        if s.placed_at > last && !chain.contains(&s.node) {
            chain.push(s.node.clone());
            last = s.at;
        }
    }
    (chain, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: QuarantineConfig = QuarantineConfig {
        node_threshold: 3,
        window: 3_600,
        within: 300,
        cool_down: 1_800,
    };

    fn owner(kind: &str, name: &str) -> Workload {
        Workload {
            kind: kind.into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    fn placed(node: &str, name: &str, at: i64) -> Fact {
        Fact::Placed {
            node: node.into(),
            owner: owner("ReplicaSet", name),
            at,
        }
    }

    fn down(node: &str, at: i64) -> Fact {
        Fact::Readiness {
            node: node.into(),
            ready: false,
            at,
        }
    }

    /// The bomb lands on n1, n1 dies; its replacement lands on n2, n2 dies; then n3.
    fn cascade_of(name: &str) -> Vec<Fact> {
        vec![
            placed("n1", name, 100),
            down("n1", 200),
            placed("n2", name, 500),
            down("n2", 600),
            placed("n3", name, 900),
            down("n3", 1_000),
        ]
    }

    fn quarantined(facts: &[Fact], now: i64) -> Vec<String> {
        Quarantines::rebuild(CONFIG, facts, BTreeSet::new(), now)
            .view()
            .keys()
            .map(|w| w.name.clone())
            .collect()
    }

    #[test]
    fn cascades_are_quarantined_outages_and_bystanders_are_not() {
        let mut bystander = cascade_of("bomb");
        bystander.push(placed("n1", "web", 150));
        let mut outage = vec![];
        for node in ["n1", "n2", "n3", "n4"] {
            outage.push(placed(node, "web", 100));
            outage.push(down(node, 200));
        }
        let mut slow = cascade_of("bomb");
        slow[4] = placed("n3", "bomb", 600);
        let ds = vec![
            Fact::Placed {
                node: "n1".into(),
                owner: owner("DaemonSet", "agent"),
                at: 100,
            },
            down("n1", 200),
            Fact::Placed {
                node: "n2".into(),
                owner: owner("DaemonSet", "agent"),
                at: 500,
            },
            down("n2", 600),
            Fact::Placed {
                node: "n3".into(),
                owner: owner("DaemonSet", "agent"),
                at: 900,
            },
            down("n3", 1_000),
        ];
        let cases: &[(&str, Vec<Fact>, &[&str])] = &[
            ("a cascade over three nodes", cascade_of("bomb"), &["bomb"]),
            (
                "two nodes are not enough",
                cascade_of("bomb")[..4].to_vec(),
                &[],
            ),
            ("a bystander on one node is not", bystander, &["bomb"]),
            ("nodes failing together are an outage", outage, &[]),
            (
                "a pod placed long before is not a suspect",
                vec![
                    placed("n1", "bomb", 100),
                    down("n1", 200),
                    placed("n2", "bomb", 210),
                    down("n2", 600),
                    placed("n3", "bomb", 900),
                    down("n3", 1_000),
                ],
                &[],
            ),
            (
                "a pod placed after the node died is not a suspect",
                slow,
                &[],
            ),
            ("DaemonSets never are", ds, &[]),
        ];
        for (name, facts, want) in cases {
            assert_eq!(quarantined(facts, 1_000), *want, "{name}");
        }
    }

    #[test]
    fn the_order_facts_arrive_in_does_not_matter() {
        let facts = cascade_of("bomb");
        let mut live = Quarantines::new(CONFIG);
        // A new leader lists nodes before pods.
        for f in facts.iter().rev() {
            match f {
                Fact::Placed { node, owner, at } => live.placed(node, owner, *at),
                Fact::Readiness { node, ready, at } => live.readiness(node, *ready, *at),
            }
        }
        assert_eq!(
            live.view(),
            Quarantines::rebuild(CONFIG, &facts, BTreeSet::new(), 1_000).view()
        );
        let q = &live.view()[&owner("ReplicaSet", "bomb")];
        assert_eq!((q.since, q.until), (1_000, 2_800));
        assert_eq!(q.nodes, ["n1", "n2", "n3"]);
    }

    #[test]
    fn a_quarantine_ends_by_cool_down_or_release() {
        let mut tracker = Quarantines::rebuild(CONFIG, &cascade_of("bomb"), BTreeSet::new(), 1_000);
        assert_eq!(tracker.next_deadline(), Some(2_800));
        tracker.advance(2_799);
        assert_eq!(tracker.view().len(), 1);
        tracker.advance(2_800);
        assert!(tracker.view().is_empty());
        let change = tracker.take_changes();
        assert!(!change[0].quarantined, "{change:?}");

        let mut tracker = Quarantines::rebuild(CONFIG, &cascade_of("bomb"), BTreeSet::new(), 1_000);
        tracker.set_released(BTreeSet::from([owner("ReplicaSet", "bomb")]), 1_100);
        assert!(tracker.view().is_empty());
        assert!(
            tracker.take_changes()[0]
                .message
                .contains(RELEASE_ANNOTATION)
        );
        // While the annotation is there, the workload is not quarantined again.
        let released = BTreeSet::from([owner("ReplicaSet", "bomb")]);
        assert!(
            Quarantines::rebuild(CONFIG, &cascade_of("bomb"), released, 1_000)
                .view()
                .is_empty()
        );
    }

    #[test]
    fn strikes_older_than_the_window_do_not_count() {
        let mut facts = cascade_of("bomb");
        facts[4] = placed("n3", "bomb", 3_900);
        facts[5] = down("n3", 4_000);
        assert_eq!(quarantined(&facts, 4_000), Vec::<String>::new());
    }
}
