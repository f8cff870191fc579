//! The extension point for scheduler extenders, with in-memory extenders: where in the cycle
//! they run, which nodes they see, how their failures and scores count (kube-scheduler
//! v1.22's findNodesThatPassExtenders and prioritizeNodes).

use std::sync::{Arc, Mutex};

use berth_engine::extender::{
    Extender, ExtenderCall, FilterVerdict, MAX_EXTENDER_PRIORITY, PendingScores,
};
use berth_engine::registry::scheduler_for;
use berth_engine::testkit::*;
use berth_engine::{Cluster, CycleConfig, Decision, Scheduler};

type FilterFn = dyn Fn(&[String]) -> Result<FilterVerdict, String> + Send + Sync;
type ScoreFn = dyn Fn(&[String]) -> Result<Vec<(String, i64)>, String> + Send + Sync;

/// An extender answering from closures and recording the nodes of each call.
struct Fake {
    name: String,
    ignorable: bool,
    managed: Vec<String>,
    weight: i64,
    filter: Option<Box<FilterFn>>,
    score: Option<Box<ScoreFn>>,
    calls: Mutex<Vec<(&'static str, Vec<String>)>>,
}

impl Fake {
    fn new(name: &str) -> Self {
        Fake {
            name: name.into(),
            ignorable: false,
            managed: Vec::new(),
            weight: 0,
            filter: None,
            score: None,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Filters out the named nodes with a message each.
    fn refusing(mut self, refused: &'static [(&'static str, &'static str)]) -> Self {
        self.filter = Some(Box::new(move |nodes| {
            Ok(FilterVerdict {
                passed: nodes
                    .iter()
                    .filter(|n| !refused.iter().any(|(r, _)| r == n))
                    .cloned()
                    .collect(),
                failed: refused
                    .iter()
                    .filter(|(r, _)| nodes.iter().any(|n| n == r))
                    .map(|(n, m)| (n.to_string(), m.to_string()))
                    .collect(),
                failed_and_unresolvable: Vec::new(),
            })
        }));
        self
    }

    fn failing(mut self, message: &'static str) -> Self {
        self.filter = Some(Box::new(move |_| Err(message.to_string())));
        self
    }

    fn scoring(mut self, weight: i64, scores: &'static [(&'static str, i64)]) -> Self {
        self.weight = weight;
        self.score = Some(Box::new(move |_| {
            Ok(scores.iter().map(|(n, s)| (n.to_string(), *s)).collect())
        }));
        self
    }

    fn calls(&self, verb: &str) -> Vec<Vec<String>> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(v, _)| *v == verb)
            .map(|(_, nodes)| nodes.clone())
            .collect()
    }
}

struct Ready(Result<Vec<(String, i64)>, String>);

impl PendingScores for Ready {
    fn wait(self: Box<Self>) -> Result<Vec<(String, i64)>, String> {
        self.0
    }
}

fn names(call: &ExtenderCall<'_>) -> Vec<String> {
    call.nodes
        .iter()
        .map(|id| call.cluster.node(*id).name().to_string())
        .collect()
}

impl Extender for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn ignorable(&self) -> bool {
        self.ignorable
    }
    fn managed_resources(&self) -> &[String] {
        &self.managed
    }
    fn filters(&self) -> bool {
        self.filter.is_some()
    }
    fn weight(&self) -> i64 {
        self.weight
    }
    fn filter(&self, call: ExtenderCall<'_>) -> Result<FilterVerdict, String> {
        let nodes = names(&call);
        self.calls.lock().unwrap().push(("filter", nodes.clone()));
        (self.filter.as_ref().expect("filters"))(&nodes)
    }
    fn prioritize(&self, call: ExtenderCall<'_>) -> Box<dyn PendingScores> {
        let nodes = names(&call);
        self.calls
            .lock()
            .unwrap()
            .push(("prioritize", nodes.clone()));
        Box::new(Ready((self.score.as_ref().expect("scores"))(&nodes)))
    }
}

const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"}],
    "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;

fn scheduler(extenders: Vec<Arc<Fake>>) -> Scheduler {
    let policy = berth_policy::parse(POLICY, "p.json").unwrap();
    scheduler_for(&policy, CycleConfig::default())
        .unwrap()
        .with_extenders(
            extenders
                .into_iter()
                .map(|e| e as Arc<dyn Extender>)
                .collect(),
        )
}

/// n1..n4 with 4 CPUs, n5 with 0.5 CPU.
fn nodes() -> Cluster {
    let mut all: Vec<_> = (1..=4)
        .map(|i| node(&format!("n{i}")).cpu(4000).build())
        .collect();
    all.push(node("n5").cpu(500).build());
    cluster(all, vec![])
}

fn place(
    s: &mut Scheduler,
    c: &mut Cluster,
    pod: berth_engine::model::Pod,
) -> (Option<String>, Decision) {
    let info = c.compile_pod(pod);
    let d = s.schedule(c, &info, true);
    (d.node.map(|n| c.node(n).name().to_string()), d)
}

#[test]
fn extenders_filter_only_the_feasible_nodes_in_turn() {
    let first = Arc::new(Fake::new("first").refusing(&[("n1", "no GPU"), ("n2", "no GPU")]));
    let second = Arc::new(Fake::new("second").refusing(&[("n3", "wrong rack")]));
    let mut s = scheduler(vec![first.clone(), second.clone()]);
    let mut c = nodes();
    let (node, _) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert_eq!(node.as_deref(), Some("n4"));
    // n5 fails the engine's own resource fit and is never sent; the second extender sees
    // only what the first left.
    let mut sent = first.calls("filter")[0].clone();
    sent.sort();
    assert_eq!(sent, ["n1", "n2", "n3", "n4"]);
    let mut sent = second.calls("filter")[0].clone();
    sent.sort();
    assert_eq!(sent, ["n3", "n4"]);
}

#[test]
fn extender_failures_join_the_fit_error_as_upstream_counts_them() {
    let refusing = Arc::new(Fake {
        filter: Some(Box::new(|nodes: &[String]| {
            Ok(FilterVerdict {
                passed: Vec::new(),
                failed: nodes
                    .iter()
                    .map(|n| (n.clone(), "no GPU".to_string()))
                    .collect(),
                // Listed in both: the unresolvable message wins.
                failed_and_unresolvable: vec![("n1".into(), "GPU broken".into())],
            })
        })),
        ..Fake::new("gpu")
    });
    let mut s = scheduler(vec![refusing]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert_eq!(node, None);
    assert_eq!(
        d.failure_message().unwrap(),
        "0/5 nodes are available: 1 GPU broken, 1 Insufficient cpu, 3 no GPU."
    );
    let e = d.explanation.unwrap();
    let n1 = e.nodes.iter().find(|n| n.node == "n1").unwrap();
    assert_eq!(n1.reasons, ["GPU broken"]);
}

#[test]
fn extenders_are_not_called_when_the_engine_leaves_no_node() {
    let gpu = Arc::new(Fake::new("gpu").refusing(&[]).scoring(1, &[]));
    let mut s = scheduler(vec![gpu.clone()]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").req(9000, 0).build());
    assert_eq!(node, None);
    assert_eq!(
        d.failure_message().unwrap(),
        "0/5 nodes are available: 5 Insufficient cpu."
    );
    assert!(gpu.calls.lock().unwrap().is_empty());
}

#[test]
fn a_failing_extender_fails_the_cycle_unless_ignorable() {
    let down = Arc::new(Fake::new("http://down").failing("Post \"http://down/filter\": refused"));
    let mut s = scheduler(vec![down]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").build());
    assert_eq!(node, None);
    assert_eq!(d.fit_error, None);
    assert_eq!(
        d.failure_message().unwrap(),
        "Post \"http://down/filter\": refused"
    );
    assert_eq!(d.extender_error.unwrap().extender, "http://down");

    let down = Arc::new(Fake {
        ignorable: true,
        ..Fake::new("http://down").failing("refused")
    });
    let after = Arc::new(Fake::new("after").refusing(&[("n1", "full")]));
    let mut s = scheduler(vec![down, after.clone()]);
    let (node, d) = place(&mut s, &mut c, pod("p").build());
    assert!(node.is_some_and(|n| n != "n1"));
    assert_eq!(d.extender_warnings.len(), 1);
    assert_eq!(d.extender_warnings[0].message, "refused");
    assert_eq!(after.calls("filter").len(), 1);
}

#[test]
fn a_filter_answer_naming_a_node_not_sent_is_an_error() {
    let liar = Arc::new(Fake {
        filter: Some(Box::new(|_: &[String]| {
            Ok(FilterVerdict {
                passed: vec!["n5".into()],
                ..FilterVerdict::default()
            })
        })),
        ..Fake::new("liar")
    });
    let mut s = scheduler(vec![liar]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert_eq!(node, None);
    assert_eq!(
        d.failure_message().unwrap(),
        "extender \"liar\" claims a filtered node \"n5\" which is not found in the input node list"
    );
}

#[test]
fn extender_scores_are_scaled_and_weighted_once_per_pod() {
    // LeastRequested gives every empty 4-CPU node the same score; the extender's 0..10 times
    // its weight, scaled by 100/10, decides.
    let steer =
        Arc::new(Fake::new("steer").scoring(3, &[("n2", MAX_EXTENDER_PRIORITY), ("n3", 4)]));
    let mut s = scheduler(vec![steer.clone()]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert_eq!(node.as_deref(), Some("n2"));
    assert_eq!(steer.calls("prioritize").len(), 1);
    let e = d.explanation.unwrap();
    assert_eq!(
        e.score_rules.last().unwrap(),
        &("extender steer".to_string(), 3)
    );
    let score = |name: &str| {
        let n = e.nodes.iter().find(|n| n.node == name).unwrap();
        (n.scores.last().copied(), n.total)
    };
    let base = score("n1").1.unwrap();
    assert_eq!(score("n2"), (Some(100), Some(base + 300)));
    assert_eq!(score("n3"), (Some(40), Some(base + 120)));
}

#[test]
fn prioritize_errors_are_ignored_even_for_non_ignorable_extenders() {
    let broken = Arc::new(Fake {
        weight: 5,
        score: Some(Box::new(|_: &[String]| Err("garbage".to_string()))),
        ..Fake::new("broken")
    });
    let mut s = scheduler(vec![broken]);
    let mut c = nodes();
    let (node, d) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert!(node.is_some());
    assert_eq!(d.extender_warnings[0].message, "garbage");
}

#[test]
fn one_node_left_by_the_filter_is_chosen_without_prioritize() {
    let both = Arc::new(
        Fake::new("both")
            .refusing(&[("n1", "x"), ("n2", "x"), ("n3", "x")])
            .scoring(1, &[]),
    );
    let mut s = scheduler(vec![both.clone()]);
    let mut c = nodes();
    let (node, _) = place(&mut s, &mut c, pod("p").req(1000, 0).build());
    assert_eq!(node.as_deref(), Some("n4"));
    assert!(both.calls("prioritize").is_empty());
}

#[test]
fn extenders_with_managed_resources_see_only_pods_requesting_them() {
    let gpu = Arc::new(Fake {
        managed: vec!["example.com/gpu".into()],
        ..Fake::new("gpu").refusing(&[("n1", "no GPU")])
    });
    let mut s = scheduler(vec![gpu.clone()]);
    let mut c = cluster(
        (1..=2)
            .map(|i| {
                node(&format!("n{i}"))
                    .cpu(4000)
                    .alloc("example.com/gpu", 2)
                    .build()
            })
            .collect(),
        vec![],
    );
    place(&mut s, &mut c, pod("plain").req(100, 0).build());
    assert!(gpu.calls("filter").is_empty());
    let (node, _) = place(
        &mut s,
        &mut c,
        pod("wants").res("example.com/gpu", 1).build(),
    );
    assert_eq!(node.as_deref(), Some("n2"));
    assert_eq!(gpu.calls("filter").len(), 1);
}
