use super::*;
use crate::cluster::PodId;
use crate::model;
use crate::model::TaintEffect;
use crate::scheduler::Scheduler;
use crate::testkit::*;

const RESOURCES: &str = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;

fn scheduler() -> Scheduler {
    let policy = berth_policy::parse(RESOURCES, "test.json").expect("policy");
    crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler")
}

fn pdb(
    name: &str,
    labels: &[(&str, &str)],
    allowed: i32,
    disrupted: &[&str],
) -> model::PodDisruptionBudget {
    model::PodDisruptionBudget {
        meta: model::Meta {
            name: name.into(),
            namespace: "default".into(),
            ..Default::default()
        },
        selector: Some(selector(labels)),
        disruptions_allowed: allowed,
        disrupted_pods: disrupted.iter().map(|s| s.to_string()).collect(),
    }
}

/// What a preemption attempt decided, by name: Ok((node, victims)) or Err(outcome text).
fn run(
    nodes: Vec<model::Node>,
    pods: Vec<model::Pod>,
    budgets: &[model::PodDisruptionBudget],
    preemptor: model::Pod,
) -> Result<(String, Vec<String>), String> {
    run_with(RESOURCES, nodes, pods, budgets, preemptor).0
}

/// Every candidate a preemption found: (node, victims, chosen or tied with the choice).
type Found = Vec<(String, Vec<String>, bool)>;

/// [`run`] under `policy`, with every candidate found.
fn run_with(
    policy: &str,
    nodes: Vec<model::Node>,
    pods: Vec<model::Pod>,
    budgets: &[model::PodDisruptionBudget],
    preemptor: model::Pod,
) -> (Result<(String, Vec<String>), String>, Found) {
    let mut c = cluster(nodes, pods);
    let mut b = DisruptionBudgets::new();
    for p in budgets {
        b.upsert(&mut c, p);
    }
    let info = c.compile_pod(preemptor);
    let policy = berth_policy::parse(policy, "test.json").expect("policy");
    let mut s = crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
    let nominator = Nominator::new();
    let d = s.schedule_with(&c, &nominator, &info);
    let Some(fit) = d.fit_error().cloned() else {
        return (Err("fits without preemption".into()), Vec::new());
    };
    let names = |victims: &[PodId]| -> Vec<String> {
        victims
            .iter()
            .map(|v| c.pod(*v).pod.meta.name.clone())
            .collect()
    };
    let (outcome, explained) = s.preempt(&c, &nominator, &b, &info, &fit);
    let candidates = explained
        .candidates
        .iter()
        .map(|(cand, lost)| {
            (
                c.node(cand.node).name().to_string(),
                names(&cand.victims),
                matches!(lost, None | Some(LostOn::Order)),
            )
        })
        .collect();
    let outcome = match outcome {
        PreemptionOutcome::Preempt { candidate, .. } => Ok((
            c.node(candidate.node).name().to_string(),
            names(&candidate.victims),
        )),
        other => Err(format!("{other:?}")),
    };
    (outcome, candidates)
}

/// A disk clash is one preemption can clear, as upstream's VolumeRestrictions filter reads
/// the node copy's pods: the lower-priority pod mounting the same EBS volume is the
/// victim; the node whose clashing pod outranks the preemptor is no candidate.
#[test]
fn a_clashing_disk_of_a_lower_priority_pod_is_preempted() {
    const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"},
        {"name":"NoDiskConflict"}],"priorities":[]}"#;
    let ebs = || model::VolumeSource::AwsElasticBlockStore {
        volume_id: "vol-1".into(),
    };
    let (outcome, found) = run_with(
        POLICY,
        vec![node("n1").build(), node("n2").build()],
        vec![
            pod("low").on("n1").priority(0).volume("d", ebs()).build(),
            pod("other").on("n1").priority(0).build(),
            pod("high")
                .on("n2")
                .priority(200)
                .volume("d", ebs())
                .build(),
        ],
        &[],
        pod("p").priority(100).volume("d", ebs()).build(),
    );
    assert_eq!(outcome, Ok(("n1".into(), vec!["low".into()])));
    assert_eq!(found, vec![("n1".into(), vec!["low".into()], true)]);
}

/// Dry-run answers reused across equal pods change nothing: a scheduler that keeps them
/// and one that forgets them before every attempt decide and explain alike, through
/// random pod arrivals and removals, node updates, budgets and nominations, with and
/// without checks that read beyond the node (anti-affinity).
/// A ReadWriteOncePod claim in use fails every node as `Unschedulable` (v1.36's
/// VolumeRestrictions), and a dry run that removes the claim's user clears it through
/// RemovePod (`updateWithPod`): only the user's node is a candidate, and the pod beside
/// it that does not use the claim is reprieved. A user of higher priority is no victim.
#[test]
fn the_user_of_a_read_write_once_pod_claim_is_preempted() {
    use crate::rules::read_write_once_pod::ACCESS_MODE;
    const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;
    let policy = berth_policy::parse(POLICY, "test.json").expect("policy");
    let cases = vec![
        (
            "lower-priority user",
            0,
            Ok(("n1".to_string(), vec!["low".to_string()])),
        ),
        ("higher-priority user", 500, Err("NoCandidate".to_string())),
    ];
    for (name, user_priority, want) in cases {
        let mut c = cluster(
            vec![node("n1").build(), node("n2").build()],
            vec![
                pod("low")
                    .on("n1")
                    .priority(user_priority)
                    .claim("data")
                    .build(),
                pod("other").on("n1").priority(0).build(),
                pod("high").on("n2").priority(200).build(),
            ],
        );
        add_storage(
            &mut c,
            vec![],
            vec![pvc("data", 1).access_modes(&[ACCESS_MODE]).build()],
            vec![],
        );
        let info = c.compile_pod(pod("p").priority(100).claim("data").build());
        let mut s = crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
        let nominator = Nominator::new();
        let fit = s
            .schedule_with(&c, &nominator, &info)
            .fit_error()
            .cloned()
            .expect("the claim is in use");
        let (outcome, _) = s.preempt(&c, &nominator, &DisruptionBudgets::new(), &info, &fit);
        let got = match outcome {
            PreemptionOutcome::Preempt { candidate, .. } => Ok((
                c.node(candidate.node).name().to_string(),
                candidate
                    .victims
                    .iter()
                    .map(|v| c.pod(*v).pod.meta.name.clone())
                    .collect::<Vec<_>>(),
            )),
            other => Err(format!("{other:?}")),
        };
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn reused_dry_runs_decide_as_fresh_ones() {
    use rand::SeedableRng;
    const POLICY: &str = r#"{"predicates":[{"name":"GeneralPredicates"},
        {"name":"PodToleratesNodeTaints"},{"name":"CheckNodeUnschedulable"},
        {"name":"MatchInterPodAffinity"}],"priorities":[]}"#;
    let policy = berth_policy::parse(POLICY, "test.json").expect("policy");
    let mut attempts = 0;
    let mut reused_total = 0;
    for seed in 0..40u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut cached =
            crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
        let mut fresh =
            crate::registry::scheduler_for(&policy, Default::default()).expect("scheduler");
        let names: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
        let mut c = cluster(
            names
                .iter()
                .map(|n| node(n).cpu(4000).pods(20).build())
                .collect(),
            Vec::new(),
        );
        let mut budgets = DisruptionBudgets::new();
        let mut nominator = Nominator::new();
        let mut next = 0;
        let mut low_pod = |rng: &mut rand_chacha::ChaCha8Rng, on: &str| {
            next += 1;
            let mut b = pod(&format!("low-{next}"))
                .on(on)
                .req(500 * rng.random_range(1..4), 0)
                .priority(rng.random_range(0..3))
                .started(rng.random_range(0..100))
                .label("app", ["a", "b"][rng.random_range(0..2)]);
            // Every fourth seed has pods whose anti-affinity reaches across nodes.
            if seed % 4 == 0 && rng.random_ratio(1, 10) {
                b = b.anti_affinity("kubernetes.io/hostname", &[("app", "x")]);
            }
            b.build()
        };
        for n in &names {
            for _ in 0..rng.random_range(2..6) {
                let p = low_pod(&mut rng, n);
                c.add_pod(p).expect("pod");
            }
        }
        for step in 0..30 {
            let n = &names[rng.random_range(0..names.len())];
            match rng.random_range(0..12u32) {
                // Half the steps change nothing: equal pods then ask unchanged nodes.
                6.. => {}
                0 => {
                    let p = low_pod(&mut rng, n);
                    c.add_pod(p).expect("pod");
                }
                1 => {
                    let on = c.node(c.node_by_name(n).expect("node")).pods.clone();
                    if let Some(id) = on.first() {
                        let name = c.pod(*id).pod.meta.name.clone();
                        c.remove_pod("default", &name);
                    }
                }
                2 => {
                    let mut b = node(n).cpu(4000 + 500 * rng.random_range(0..3)).pods(20);
                    if rng.random_ratio(1, 3) {
                        b = b.taint("dedicated", "x", TaintEffect::NoSchedule);
                    }
                    c.upsert_node(b.build()).expect("node");
                }
                3 => {
                    if rng.random_ratio(1, 2) {
                        let allowed = rng.random_range(0..2);
                        budgets.upsert(&mut c, &pdb("budget", &[("app", "a")], allowed, &[]));
                    } else {
                        budgets.remove(&c, "default", "budget");
                    }
                }
                4 => {
                    let id = c.node_by_name(n).expect("node");
                    let p = pod(&format!("nominated-{step}"))
                        .req(500, 0)
                        .priority(rng.random_range(0..6))
                        .build();
                    let info = c.compile_pod(p);
                    nominator.add(info, id);
                }
                5 => {
                    nominator.remove(&format!("default/nominated-{}", step - 1));
                }
            }
            // Two classes of equal pods, named anew each time.
            let class = rng.random_range(0..2);
            let mut b = pod(&format!("high-{step}"))
                .req(2000 + 1000 * class, 0)
                .priority(5);
            if class == 1 {
                b = b.label("app", "x");
            }
            let info = c.compile_pod(b.build());
            let fit_cached = cached
                .schedule_with(&c, &nominator, &info)
                .fit_error()
                .cloned();
            let fit_fresh = fresh
                .schedule_with(&c, &nominator, &info)
                .fit_error()
                .cloned();
            assert_eq!(fit_cached, fit_fresh);
            let Some(fit) = fit_cached else { continue };
            fresh.forget_dry_runs();
            let with_cache = cached.preempt(&c, &nominator, &budgets, &info, &fit);
            let without = fresh.preempt(&c, &nominator, &budgets, &info, &fit);
            assert_eq!(with_cache, without, "seed {seed} step {step}");
            attempts += 1;
            if let (PreemptionOutcome::Preempt { candidate, .. }, _) = with_cache
                && rng.random_ratio(1, 2)
            {
                for v in candidate.victims {
                    let name = c.pod(v).pod.meta.name.clone();
                    c.remove_pod("default", &name);
                }
                c.insert_pod(info, Some(candidate.node)).expect("preemptor");
            }
        }
        reused_total += cached.dry_run_counts().0;
    }
    eprintln!("{attempts} attempts, {reused_total} dry runs reused");
    assert!(attempts > 200, "only {attempts} preemption attempts");
    assert!(reused_total > 500, "only {reused_total} dry runs reused");
}

/// Restated from upstream's TestDryRunPreemption ("pod with anti-affinity is
/// preempted", "preemption to resolve pod topology spread filter failure") and
/// TestPreempt ("preemption for topology spread constraints"): the dry run removes
/// victims from the inter-pod affinity and topology spread counts too (the PreFilter
/// extensions' RemovePod), and adds reprieved pods back (AddPod). Each case lists every
/// candidate with its victims and whether it is the choice or tied with it.
#[test]
fn dry_runs_update_affinity_and_spread_counts() {
    const POLICY: &str = r#"{"predicates":[{"name":"PodFitsResources"},
        {"name":"MatchInterPodAffinity"},{"name":"EvenPodsSpread"}],"priorities":[]}"#;
    let (low, mid, high) = (0, 100, 1000);
    let zone = "zone";
    let hostname = "kubernetes.io/hostname";
    let foo = || Some(exists(&["foo"]));
    let zoned = |name: &str, z: &str| node(name).label(zone, z).build();
    let three_nodes = || {
        vec![
            zoned("node-a", "zone1"),
            zoned("node-b", "zone1"),
            zoned("node-x", "zone2"),
        ]
    };
    let foo_on =
        |name: &str, on: &str, prio: i32| pod(name).on(on).label("foo", "").priority(prio).build();
    let spreading = || {
        pod("p")
            .label("foo", "")
            .priority(high)
            .spread(1, zone, model::WhenUnsatisfiable::DoNotSchedule, foo())
            .spread(1, hostname, model::WhenUnsatisfiable::DoNotSchedule, foo())
            .build()
    };
    type Want = Vec<(&'static str, Vec<&'static str>, bool)>;
    type Case = (
        &'static str,
        Vec<model::Node>,
        Vec<model::Pod>,
        model::Pod,
        Want,
    );
    let cases: Vec<Case> = vec![
        (
            // node2 is full (upstream's test dry-runs it without a cycle first).
            "pod with anti-affinity is preempted",
            vec![node("node1").build(), node("node2").cpu(100).build()],
            vec![
                pod("p1.1")
                    .on("node1")
                    .label("foo", "")
                    .priority(low)
                    .req(100, 0)
                    .anti_affinity(hostname, &[("foo", "")])
                    .build(),
                pod("p1.2").on("node1").priority(mid).req(100, 0).build(),
                pod("p1.3").on("node1").priority(high).req(100, 0).build(),
                pod("p2").on("node2").priority(high).req(100, 0).build(),
            ],
            pod("p").label("foo", "").priority(high).req(100, 0).build(),
            vec![("node1", vec!["p1.1"], true)],
        ),
        (
            "preemption to resolve pod topology spread filter failure",
            three_nodes(),
            vec![
                foo_on("pod-a1", "node-a", mid),
                foo_on("pod-a2", "node-a", low),
                foo_on("pod-b1", "node-b", low),
                foo_on("pod-x1", "node-x", high),
                foo_on("pod-x2", "node-x", high),
            ],
            spreading(),
            vec![
                ("node-a", vec!["pod-a2"], true),
                ("node-b", vec!["pod-b1"], true),
            ],
        ),
        (
            "preemption for topology spread constraints",
            three_nodes(),
            vec![
                foo_on("p-a1", "node-a", high),
                foo_on("p-a2", "node-a", high),
                foo_on("p-b1", "node-b", low),
                foo_on("p-x1", "node-x", high),
                foo_on("p-x2", "node-x", high),
            ],
            spreading(),
            vec![("node-b", vec!["p-b1"], true)],
        ),
        (
            // The victim's own anti-affinity keeps the pod off until it is gone; the
            // reprieve adds it back and the check fails again, so it stays a victim.
            "a victim whose anti-affinity selects the preemptor",
            vec![node("n1").cpu(1000).build()],
            vec![
                pod("guard")
                    .on("n1")
                    .priority(low)
                    .req(100, 0)
                    .anti_affinity(hostname, &[("app", "web")])
                    .build(),
                pod("other").on("n1").priority(low).req(100, 0).build(),
            ],
            pod("p")
                .label("app", "web")
                .priority(high)
                .req(100, 0)
                .build(),
            vec![("n1", vec!["guard"], true)],
        ),
    ];
    for (name, nodes, pods, preemptor, want) in cases {
        let (_, got) = run_with(POLICY, nodes, pods, &[], preemptor);
        let want: Found = want
            .into_iter()
            .map(|(n, v, t)| (n.to_string(), v.iter().map(|s| s.to_string()).collect(), t))
            .collect();
        let mut got = got;
        got.sort();
        assert_eq!(got, want, "{name}");
    }
}

/// (name, nodes, running pods, budgets, preemptor, outcome).
type Case = (
    &'static str,
    Vec<model::Node>,
    Vec<model::Pod>,
    Vec<model::PodDisruptionBudget>,
    model::Pod,
    Result<(String, Vec<String>), String>,
);

fn ok(node: &str, victims: &[&str]) -> Result<(String, Vec<String>), String> {
    Ok((node.into(), victims.iter().map(|v| v.to_string()).collect()))
}

/// Restated from upstream's TestDryRunPreemption and TestSelectCandidate (v1.22): nodes of
/// 5 cpus unless stated, pods by (cpu, priority, start time).
#[test]
fn victims_and_node_choice() {
    let n = |name: &str| node(name).cpu(5000).mem(1 << 40).build();
    let p = |name: &str, on: &str, cpu: i64, prio: i32, start: i64| {
        pod(name)
            .on(on)
            .req(cpu, 0)
            .priority(prio)
            .started(start)
            .build()
    };
    let high = |cpu: i64| pod("preemptor").req(cpu, 0).priority(100).build();
    let cases: Vec<Case> = vec![
        (
            "a pod that does not fit on any node even without victims",
            vec![n("n1"), n("n2")],
            vec![p("a", "n1", 1000, 1, 0), p("b", "n2", 1000, 1, 0)],
            vec![],
            high(6000),
            Err("NoCandidate".into()),
        ),
        (
            "pods running at higher priority are no victims",
            vec![n("n1"), n("n2")],
            vec![p("a", "n1", 3000, 200, 0), p("b", "n2", 3000, 200, 0)],
            vec![],
            high(3000),
            Err("NoCandidate".into()),
        ),
        (
            "the medium-priority pod goes, the small low-priority one stays",
            vec![n("n1")],
            vec![p("low", "n1", 1000, 1, 0), p("medium", "n1", 3000, 50, 0)],
            vec![],
            high(3000),
            ok("n1", &["medium"]),
        ),
        (
            "mixed priorities: reprieved most important first",
            vec![n("n1")],
            vec![
                p("p1", "n1", 2000, 10, 0),
                p("p2", "n1", 1000, 20, 0),
                p("p3", "n1", 1000, 30, 0),
                p("p4", "n1", 1000, 40, 0),
            ],
            vec![],
            high(3000),
            ok("n1", &["p2", "p1"]),
        ),
        (
            "equal priorities: the later-started pod is the victim",
            vec![n("n1")],
            vec![
                p("early", "n1", 2500, 10, 100),
                p("late", "n1", 2500, 10, 200),
            ],
            vec![],
            high(2500),
            ok("n1", &["late"]),
        ),
        (
            "the node whose highest victim has the lowest priority wins",
            vec![n("n1"), n("n2")],
            vec![p("a", "n1", 5000, 20, 0), p("b", "n2", 5000, 10, 0)],
            vec![],
            high(3000),
            ok("n2", &["b"]),
        ),
        (
            "same highest priority: the smallest sum of priorities wins",
            vec![n("n1"), n("n2")],
            vec![
                p("a1", "n1", 2500, 10, 0),
                p("a2", "n1", 2500, 10, 0),
                p("b1", "n2", 2500, 10, 0),
                p("b2", "n2", 2500, 5, 0),
            ],
            vec![],
            high(5000),
            ok("n2", &["b1", "b2"]),
        ),
        (
            "same highest priority: one victim sums lower than two",
            vec![n("n1"), n("n2")],
            vec![
                p("a1", "n1", 2000, 10, 0),
                p("a2", "n1", 1000, 10, 0),
                p("a3", "n1", 2000, 10, 0),
                p("b1", "n2", 4000, 10, 0),
                p("b2", "n2", 1000, 10, 0),
            ],
            vec![],
            high(4000),
            ok("n2", &["b1"]),
        ),
        (
            "sums of negative priorities are shifted, so more victims never sum lower",
            vec![n("n1"), n("n2")],
            vec![
                p("a1", "n1", 2500, -10, 0),
                p("a2", "n1", 2500, -10, 0),
                p("b1", "n2", 5000, -10, 0),
            ],
            vec![],
            high(5000),
            ok("n2", &["b1"]),
        ),
        (
            "all else equal: the node whose highest victims started last wins",
            vec![n("n1"), n("n2")],
            vec![p("a", "n1", 5000, 10, 100), p("b", "n2", 5000, 10, 200)],
            vec![],
            high(3000),
            ok("n2", &["b"]),
        ),
        (
            "a node without a PDB violation beats one with fewer or lower victims",
            vec![n("n1"), n("n2")],
            vec![
                pod("a")
                    .on("n1")
                    .req(5000, 0)
                    .priority(1)
                    .label("app", "db")
                    .build(),
                p("b1", "n2", 2500, 50, 0),
                p("b2", "n2", 2500, 50, 0),
            ],
            vec![pdb("db", &[("app", "db")], 0, &[])],
            high(5000),
            ok("n2", &["b1", "b2"]),
        ),
        (
            "PDB-violating pods are reprieved first: the non-violating one goes",
            vec![n("n1")],
            vec![
                pod("guarded")
                    .on("n1")
                    .req(2500, 0)
                    .priority(1)
                    .label("app", "db")
                    .build(),
                pod("free").on("n1").req(2500, 0).priority(2).build(),
            ],
            vec![pdb("db", &[("app", "db")], 0, &[])],
            high(2500),
            ok("n1", &["free"]),
        ),
        (
            "two pods of one budget allowing one disruption: one violates",
            vec![n("n1")],
            vec![
                pod("a")
                    .on("n1")
                    .req(2500, 0)
                    .priority(1)
                    .label("app", "db")
                    .build(),
                pod("b")
                    .on("n1")
                    .req(2500, 0)
                    .priority(1)
                    .label("app", "db")
                    .build(),
            ],
            vec![pdb("db", &[("app", "db")], 1, &[])],
            high(5000),
            // The violating victim is listed first, as upstream returns them.
            ok("n1", &["b", "a"]),
        ),
    ];
    for (name, nodes, pods, budgets, preemptor, want) in cases {
        assert_eq!(run(nodes, pods, &budgets, preemptor), want, "{name}");
    }
}

#[test]
fn pdb_violations_are_counted_as_upstream() {
    // (budget allowance, disrupted pods, expected violations) for two matching victims.
    let cases: [(i32, &[&str], usize); 4] = [
        (1, &[], 1),
        (2, &[], 0),
        // A pod already being disrupted spends nothing of the budget.
        (1, &["a"], 0),
        // A negative allowance: every matching pod not yet disrupted violates.
        (-1, &["a"], 1),
    ];
    for (allowed, disrupted, want) in cases {
        let mut c = cluster(
            vec![node("n1").cpu(5000).build()],
            vec![
                pod("a").on("n1").req(2500, 0).label("app", "db").build(),
                pod("b").on("n1").req(2500, 0).label("app", "db").build(),
            ],
        );
        let mut b = DisruptionBudgets::new();
        b.upsert(&mut c, &pdb("db", &[("app", "db")], allowed, disrupted));
        let info = c.compile_pod(pod("p").req(5000, 0).priority(10).build());
        let mut s = scheduler();
        let d = s.schedule(&c, &info);
        let fit = d.fit_error().cloned().expect("does not fit");
        let PreemptionOutcome::Preempt { candidate, .. } =
            s.preempt(&c, &Nominator::new(), &b, &info, &fit).0
        else {
            panic!("expected a preemption");
        };
        assert_eq!(candidate.victims.len(), 2);
        assert_eq!(
            candidate.pdb_violations, want,
            "allowed {allowed} disrupted {disrupted:?}"
        );
    }
}

#[test]
fn unresolvable_nodes_are_no_candidates() {
    let nodes = vec![
        node("tainted")
            .cpu(5000)
            .taint("k", "v", TaintEffect::NoSchedule)
            .build(),
        node("free").cpu(5000).build(),
    ];
    let pods = vec![
        pod("a").on("tainted").req(5000, 0).priority(1).build(),
        pod("b").on("free").req(5000, 0).priority(50).build(),
    ];
    let got = run(
        nodes.clone(),
        pods,
        &[],
        pod("p").req(5000, 0).priority(100).build(),
    );
    assert_eq!(got, ok("free", &["b"]));
    let only_tainted = vec![pod("a").on("tainted").req(5000, 0).priority(1).build()];
    let got = run(
        nodes[..1].to_vec(),
        only_tainted,
        &[],
        pod("p").req(5000, 0).priority(100).build(),
    );
    assert_eq!(got, Err("NoCandidate".into()));
}

/// Restated from upstream's TestPodEligibleToPreemptOthers.
#[test]
fn eligibility() {
    let nodes = vec![node("n1").cpu(5000).build(), node("n2").cpu(5000).build()];
    let full =
        |victim: model::Pod| vec![victim, pod("x").on("n2").req(5000, 0).priority(1).build()];
    let low = || pod("v").on("n1").req(5000, 0).priority(1);
    let cases: Vec<(&str, Vec<model::Pod>, model::Pod, Option<&str>)> = vec![
        (
            "preemptionPolicy Never",
            full(low().build()),
            pod("p").req(5000, 0).priority(100).preempt_never().build(),
            Some(NOT_ELIGIBLE_NEVER),
        ),
        (
            "nominated, nothing terminating",
            full(low().build()),
            pod("p").req(5000, 0).priority(100).nominated("n1").build(),
            None,
        ),
        (
            "nominated, a lower-priority pod terminating there",
            full(low().terminating().build()),
            pod("p").req(5000, 0).priority(100).nominated("n1").build(),
            Some(NOT_ELIGIBLE_TERMINATING),
        ),
        (
            "nominated, the terminating pod has higher priority",
            full(low().priority(200).terminating().build()),
            pod("p").req(5000, 0).priority(100).nominated("n1").build(),
            None,
        ),
    ];
    for (name, pods, preemptor, want) in cases {
        let mut c = cluster(nodes.clone(), pods);
        let info = c.compile_pod(preemptor);
        let mut s = scheduler();
        let fit = s
            .schedule(&c, &info)
            .fit_error()
            .cloned()
            .expect("does not fit");
        let got = match s
            .preempt(
                &c,
                &Nominator::new(),
                &DisruptionBudgets::new(),
                &info,
                &fit,
            )
            .0
        {
            PreemptionOutcome::NotEligible(why) => Some(why),
            _ => None,
        };
        assert_eq!(got, want, "{name}");
    }
    // A nominated node that now fails unresolvably makes the pod eligible again.
    let mut c = cluster(
        vec![
            node("n1").cpu(5000).unschedulable().build(),
            node("n2").cpu(5000).build(),
        ],
        full(low().terminating().build()),
    );
    let info = c.compile_pod(pod("p").req(5000, 0).priority(100).nominated("n1").build());
    let mut s = scheduler();
    let fit = s
        .schedule(&c, &info)
        .fit_error()
        .cloned()
        .expect("does not fit");
    assert!(fit.is_unresolvable(c.node_by_name("n1").expect("n1")));
    let (outcome, _) = s.preempt(
        &c,
        &Nominator::new(),
        &DisruptionBudgets::new(),
        &info,
        &fit,
    );
    assert!(
        matches!(outcome, PreemptionOutcome::Preempt { .. }),
        "{outcome:?}"
    );
}

#[test]
fn candidate_count_follows_upstream() {
    for (potential, want) in [
        (1, 1),
        (10, 10),
        (100, 100),
        (150, 100),
        (1000, 100),
        (2000, 200),
        (5000, 500),
    ] {
        assert_eq!(candidates_to_find(potential), want, "{potential}");
    }
}

#[test]
fn the_dry_run_stops_at_enough_candidates_and_reports_the_losers() {
    let nodes: Vec<model::Node> = (0..300)
        .map(|i| node(&format!("n{i}")).cpu(1000).build())
        .collect();
    let pods: Vec<model::Pod> = (0..300)
        .map(|i| {
            pod(&format!("v{i}"))
                .on(&format!("n{i}"))
                .req(1000, 0)
                .priority(1)
                .build()
        })
        .collect();
    let mut c = cluster(nodes, pods);
    let info = c.compile_pod(pod("p").req(1000, 0).priority(10).build());
    let mut s = scheduler();
    let fit = s.schedule(&c, &info).fit_error().cloned().expect("full");
    let (outcome, e) = s.preempt(
        &c,
        &Nominator::new(),
        &DisruptionBudgets::new(),
        &info,
        &fit,
    );
    assert!(matches!(outcome, PreemptionOutcome::Preempt { .. }));
    // max(10% of 300, 100) = 100 candidates, all equal: the first found wins.
    assert_eq!(e.candidates.len(), 100);
    assert_eq!(e.candidates[0].1, None);
    assert!(
        e.candidates[1..]
            .iter()
            .all(|(_, l)| *l == Some(LostOn::Order))
    );
}

#[test]
fn lower_priority_nominations_on_the_node_are_cleared() {
    let mut c = cluster(
        vec![node("n1").cpu(5000).build()],
        vec![pod("v").on("n1").req(5000, 0).priority(1).build()],
    );
    let n1 = c.node_by_name("n1").expect("n1");
    let mut nominator = Nominator::new();
    nominator.add(
        c.compile_pod(pod("lower").req(100, 0).priority(5).build()),
        n1,
    );
    nominator.add(
        c.compile_pod(pod("higher").req(100, 0).priority(500).build()),
        n1,
    );
    let info = c.compile_pod(pod("p").req(4000, 0).priority(100).build());
    let mut s = scheduler();
    let fit = s
        .schedule_with(&c, &nominator, &info)
        .fit_error()
        .cloned()
        .expect("full");
    let (outcome, _) = s.preempt(&c, &nominator, &DisruptionBudgets::new(), &info, &fit);
    let PreemptionOutcome::Preempt {
        clear_nominations, ..
    } = outcome
    else {
        panic!("expected a preemption, got {outcome:?}");
    };
    assert_eq!(clear_nominations, ["default/lower"]);
}
