//! The extension point for scheduler extenders, with in-memory extenders: where in the cycle
//! they run, which nodes they see, how their failures and scores count (kube-scheduler
//! v1.22's findNodesThatPassExtenders and prioritizeNodes), and how preempt extenders
//! change preemption's candidates (DefaultPreemption's CallExtenders).

use std::sync::{Arc, Mutex};

use berth_engine::extender::{
    Extender, ExtenderCall, FilterVerdict, MAX_EXTENDER_PRIORITY, PendingScores, PreemptionCall,
    PreemptionVerdict,
};
use berth_engine::scheduler_for;
use berth_engine::testkit::*;
use berth_engine::{Cluster, CycleConfig, Decision, Scheduler};
use berth_engine::{DisruptionBudgets, PreemptionOutcome};
use berth_engine::{RejectedBy, Rejection, ScoreValue};

type FilterFn = dyn Fn(&[String]) -> Result<FilterVerdict, String> + Send + Sync;
type ScoreFn = dyn Fn(&[String]) -> Result<Vec<(String, i64)>, String> + Send + Sync;
/// Sent: (node, victim UIDs, budget violations) per candidate.
type Sent = Vec<(String, Vec<String>, usize)>;
type PreemptFn = dyn Fn(&Sent) -> Result<PreemptionVerdict, String> + Send + Sync;

/// An extender answering from closures and recording the nodes of each call.
struct Fake {
    name: String,
    ignorable: bool,
    managed: Vec<String>,
    weight: i64,
    filter: Option<Box<FilterFn>>,
    score: Option<Box<ScoreFn>>,
    preempt: Option<Box<PreemptFn>>,
    calls: Mutex<Vec<(&'static str, Vec<String>)>>,
    preempt_calls: Mutex<Vec<Sent>>,
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
            preempt: None,
            calls: Mutex::new(Vec::new()),
            preempt_calls: Mutex::new(Vec::new()),
        }
    }

    fn preempting(
        mut self,
        answer: impl Fn(&Sent) -> Result<PreemptionVerdict, String> + Send + Sync + 'static,
    ) -> Self {
        self.preempt = Some(Box::new(answer));
        self
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
    fn supports_preemption(&self) -> bool {
        self.preempt.is_some()
    }
    fn process_preemption(&self, call: PreemptionCall<'_>) -> Result<PreemptionVerdict, String> {
        let sent: Sent = call
            .candidates
            .iter()
            .map(|c| {
                let uids = c
                    .victims
                    .iter()
                    .map(|v| call.cluster.pod(*v).pod.meta.uid.clone())
                    .collect();
                (
                    call.cluster.node(c.node).name().to_string(),
                    uids,
                    c.pdb_violations,
                )
            })
            .collect();
        self.preempt_calls.lock().unwrap().push(sent.clone());
        (self.preempt.as_ref().expect("preempts"))(&sent)
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
    let d = s.explain(c, &info);
    (d.node().map(|n| c.node(n).name().to_string()), d)
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
    let e = d.explanation().cloned().unwrap();
    let n1 = e.nodes.iter().find(|n| n.node == "n1").unwrap();
    assert_eq!(
        n1.rejections,
        [Rejection {
            by: RejectedBy::Extender("gpu".into()),
            reason: "GPU broken".into()
        }]
    );
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
    assert_eq!(d.fit_error().cloned(), None);
    assert_eq!(
        d.failure_message().unwrap(),
        "Post \"http://down/filter\": refused"
    );
    let Decision::Failed { error, .. } = &d else {
        panic!("the extender failed the cycle");
    };
    assert_eq!(error.extender, "http://down");

    let down = Arc::new(Fake {
        ignorable: true,
        ..Fake::new("http://down").failing("refused")
    });
    let after = Arc::new(Fake::new("after").refusing(&[("n1", "full")]));
    let mut s = scheduler(vec![down, after.clone()]);
    let (node, d) = place(&mut s, &mut c, pod("p").build());
    assert!(node.is_some_and(|n| n != "n1"));
    assert_eq!(d.warnings().len(), 1);
    assert_eq!(d.warnings()[0].message, "refused");
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
    let e = d.explanation().cloned().unwrap();
    assert_eq!(
        e.score_rules.last().unwrap(),
        &("extender steer".to_string(), 3)
    );
    let score = |name: &str| {
        let n = e.nodes.iter().find(|n| n.node == name).unwrap();
        (n.scores.last().copied(), n.total)
    };
    let base = score("n1").1.unwrap();
    // Raw is the extender's answer, normalised its scaling to 0..100, weighted times 3.
    let value = |raw, normalized, weighted| ScoreValue {
        raw,
        normalized,
        weighted,
    };
    assert_eq!(score("n2"), (Some(value(10, 100, 300)), Some(base + 300)));
    assert_eq!(score("n3"), (Some(value(4, 40, 120)), Some(base + 120)));
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
    assert_eq!(d.warnings()[0].message, "garbage");
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

fn uid(name: &str) -> String {
    format!("uid-default-{name}")
}

/// n1 and n2 with 4 CPUs, full of low-priority pods: n1 has `a` (priority 1) and `b`
/// (priority 2), n2 has `c` and `d` (priority 1), 2 CPUs each; `e` (priority 1) on n3 with
/// 1 CPU leaves room for nothing big. A 4-CPU pod of priority 100 must evict both pods of
/// n1 or of n2; unaided, preemption picks n2 (its highest victim has the lower priority).
fn full_cluster() -> Cluster {
    cluster(
        vec![
            node("n1").cpu(4000).build(),
            node("n2").cpu(4000).build(),
            node("n3").cpu(1000).build(),
        ],
        vec![
            pod("a").on("n1").req(2000, 0).priority(1).build(),
            pod("b").on("n1").req(2000, 0).priority(2).build(),
            pod("c").on("n2").req(2000, 0).priority(1).build(),
            pod("d").on("n2").req(2000, 0).priority(1).build(),
            pod("e").on("n3").req(1000, 0).priority(1).build(),
        ],
    )
}

/// Preempts for a 4-CPU pod of priority 100: Ok((node, victims by name)) or the outcome.
fn preempt_big(
    s: &mut Scheduler,
    c: &mut Cluster,
) -> Result<(String, Vec<String>), PreemptionOutcome> {
    let info = c.compile_pod(pod("big").req(4000, 0).priority(100).build());
    let nominator = berth_engine::Nominator::new();
    let c = &*c;
    let d = s.schedule(c, &info);
    let fit = d
        .fit_error()
        .cloned()
        .expect("does not fit without preemption");
    match s
        .preempt(c, &nominator, &DisruptionBudgets::new(), &info, &fit)
        .0
    {
        PreemptionOutcome::Preempt { candidate, .. } => Ok((
            c.node(candidate.node).name().to_string(),
            candidate
                .victims
                .iter()
                .map(|v| c.pod(*v).pod.meta.name.clone())
                .collect(),
        )),
        other => Err(other),
    }
}

fn keep(sent: &Sent, drop: &[&str]) -> PreemptionVerdict {
    sent.iter()
        .filter(|(n, _, _)| !drop.contains(&n.as_str()))
        .map(|(n, uids, _)| (n.clone(), uids.clone()))
        .collect()
}

#[test]
fn without_a_preempt_extender_preemption_picks_its_own_candidate() {
    let filter_only = Arc::new(Fake::new("filter-only").refusing(&[]));
    let mut s = scheduler(vec![filter_only]);
    let mut c = full_cluster();
    assert_eq!(
        preempt_big(&mut s, &mut c),
        Ok(("n2".to_string(), vec!["c".to_string(), "d".to_string()]))
    );
}

#[test]
fn a_preempt_extender_sees_every_candidate_once_and_may_drop_nodes() {
    let drop_n2 = Arc::new(Fake::new("drop").preempting(|sent| Ok(keep(sent, &["n2"]))));
    let mut s = scheduler(vec![drop_n2.clone()]);
    let mut c = full_cluster();
    assert_eq!(
        preempt_big(&mut s, &mut c),
        Ok(("n1".to_string(), vec!["b".to_string(), "a".to_string()]))
    );
    // One call for the pod, with every candidate and its victims (most important first);
    // n3 cannot be freed enough and is no candidate.
    let calls = drop_n2.preempt_calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    let mut sent = calls[0].clone();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("n1".to_string(), vec![uid("b"), uid("a")], 0),
            ("n2".to_string(), vec![uid("c"), uid("d")], 0),
        ]
    );
}

#[test]
fn a_preempt_extender_may_trim_victims_and_its_order_counts() {
    // Upstream takes the extender's victims as they come: sparing `d` leaves n2 with one
    // victim, which wins on the number of victims.
    let spare_d = Arc::new(Fake::new("spare").preempting(|sent| {
        Ok(sent
            .iter()
            .map(|(n, uids, _)| {
                let kept = uids.iter().filter(|u| **u != uid("d")).cloned().collect();
                (n.clone(), kept)
            })
            .collect())
    }));
    let mut s = scheduler(vec![spare_d]);
    let mut c = full_cluster();
    assert_eq!(
        preempt_big(&mut s, &mut c),
        Ok(("n2".to_string(), vec!["c".to_string()]))
    );
}

#[test]
fn preempt_extenders_run_in_order_on_what_the_previous_one_left() {
    let first = Arc::new(Fake::new("first").preempting(|sent| Ok(keep(sent, &["n2"]))));
    let uninterested = Arc::new(Fake {
        managed: vec!["example.com/gpu".into()],
        ..Fake::new("gpu").preempting(|_| Ok(Vec::new()))
    });
    let second = Arc::new(Fake::new("second").preempting(|sent| Ok(keep(sent, &[]))));
    let mut s = scheduler(vec![first, uninterested.clone(), second.clone()]);
    let mut c = full_cluster();
    assert_eq!(preempt_big(&mut s, &mut c).unwrap().0, "n1");
    assert!(uninterested.preempt_calls.lock().unwrap().is_empty());
    assert_eq!(
        second.preempt_calls.lock().unwrap()[0],
        [("n1".to_string(), vec![uid("b"), uid("a")], 0)]
    );
}

#[test]
fn an_empty_preempt_answer_leaves_no_candidate_and_later_extenders_are_not_asked() {
    let none = Arc::new(Fake::new("none").preempting(|_| Ok(Vec::new())));
    let after = Arc::new(Fake::new("after").preempting(|sent| Ok(keep(sent, &[]))));
    let mut s = scheduler(vec![none, after.clone()]);
    let mut c = full_cluster();
    assert_eq!(
        preempt_big(&mut s, &mut c),
        Err(PreemptionOutcome::NoCandidate)
    );
    assert!(after.preempt_calls.lock().unwrap().is_empty());
}

#[test]
fn a_failing_preempt_extender_fails_preemption_unless_ignorable() {
    let down = Arc::new(Fake::new("http://down").preempting(|_| Err("refused".into())));
    let mut s = scheduler(vec![down]);
    let mut c = full_cluster();
    let Err(PreemptionOutcome::ExtenderFailed(e)) = preempt_big(&mut s, &mut c) else {
        panic!("expected the extender's failure");
    };
    assert_eq!(
        (e.extender.as_str(), e.message.as_str()),
        ("http://down", "refused")
    );

    let down = Arc::new(Fake {
        ignorable: true,
        ..Fake::new("http://down").preempting(|_| Err("refused".into()))
    });
    let mut s = scheduler(vec![down]);
    assert_eq!(preempt_big(&mut s, &mut c).unwrap().0, "n2");
}

#[test]
fn a_preempt_answer_may_not_name_unknown_nodes_or_pods() {
    type Answer = fn(&Sent) -> Result<PreemptionVerdict, String>;
    let cases: [(Answer, &str); 4] = [
        (
            |_| Ok(vec![("gone".into(), vec![uid("a")])]),
            "nodeinfo not found for node name \"gone\"",
        ),
        (
            |_| Ok(vec![("n1".into(), vec![uid("c")])]),
            "extender: x claims to preempt pod (UID: uid-default-c) on node: n1, but the pod is \
             not found on that node",
        ),
        (
            |_| Ok(vec![("n1".into(), vec!["no-such-uid".into()])]),
            "extender: x claims to preempt pod (UID: no-such-uid) on node: n1, but the pod is \
             not found on that node",
        ),
        (
            |_| Ok(vec![("n1".into(), vec![])]),
            "expected at least one victim pod on node \"n1\"",
        ),
    ];
    let mut c = full_cluster();
    for (answer, want) in cases {
        let mut s = scheduler(vec![Arc::new(Fake::new("x").preempting(answer))]);
        let Err(PreemptionOutcome::ExtenderFailed(e)) = preempt_big(&mut s, &mut c) else {
            panic!("{want}: expected a failure");
        };
        assert_eq!(e.message, want);
        // Ignorable: the answer is skipped (or, for a node without victims, that node).
        let mut s = scheduler(vec![Arc::new(Fake {
            ignorable: true,
            ..Fake::new("x").preempting(answer)
        })]);
        let got = preempt_big(&mut s, &mut c);
        if want.starts_with("expected") {
            assert_eq!(got, Err(PreemptionOutcome::NoCandidate), "{want}");
        } else {
            assert_eq!(got.unwrap().0, "n2", "{want}");
        }
    }
}

#[test]
fn a_preempt_answer_resets_budget_violations_as_upstream_does() {
    // Budgets protect c and d: unaided, n1 (no violation) wins over n2 (two). Upstream
    // carries no NumPDBViolations through an extender's answer, so after one that keeps
    // everything, n2 wins on its lower-priority victims.
    let mut c = cluster(
        vec![node("n1").cpu(4000).build(), node("n2").cpu(4000).build()],
        vec![
            pod("a").on("n1").req(2000, 0).priority(1).build(),
            pod("b").on("n1").req(2000, 0).priority(2).build(),
            pod("c")
                .on("n2")
                .req(2000, 0)
                .priority(1)
                .label("app", "c")
                .build(),
            pod("d")
                .on("n2")
                .req(2000, 0)
                .priority(1)
                .label("app", "d")
                .build(),
        ],
    );
    let mut budgets = DisruptionBudgets::new();
    for name in ["c", "d"] {
        budgets.upsert(
            &mut c,
            &berth_engine::model::PodDisruptionBudget {
                meta: berth_engine::model::Meta {
                    name: format!("pdb-{name}"),
                    namespace: "default".into(),
                    ..Default::default()
                },
                selector: Some(selector(&[("app", name)])),
                disruptions_allowed: 0,
                disrupted_pods: Vec::new(),
            },
        );
    }
    let mut run = |s: &mut Scheduler| {
        let info = c.compile_pod(pod("big").req(4000, 0).priority(100).build());
        let nominator = berth_engine::Nominator::new();
        let fit = s.schedule(&c, &info).fit_error().cloned().expect("no fit");
        match s.preempt(&c, &nominator, &budgets, &info, &fit).0 {
            PreemptionOutcome::Preempt { candidate, .. } => {
                c.node(candidate.node).name().to_string()
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(run(&mut scheduler(vec![])), "n1");
    let all = Arc::new(Fake::new("all").preempting(|sent| Ok(keep(sent, &[]))));
    assert_eq!(run(&mut scheduler(vec![all.clone()])), "n2");
    // The extender was sent the dry run's counts.
    let mut sent = all.preempt_calls.lock().unwrap()[0].clone();
    sent.sort();
    assert_eq!(sent[1].2, 2);
}
