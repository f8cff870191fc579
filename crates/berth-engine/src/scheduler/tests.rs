use super::prioritise::{Column, weighted_totals};
use super::*;
use crate::diagnosis::NO_NODES_AVAILABLE;
use crate::explain::{RejectedBy, ScoreValue};
use crate::nominator::Nominator;
use crate::rules::{
    inter_pod_affinity, least_requested::LeastRequested, node_selector, pod_topology_spread,
    resources_fit,
};
use crate::testkit::*;

fn policy(text: &str) -> berth_policy::EffectivePolicy {
    berth_policy::parse(text, "test.json").expect("test policy")
}

fn scheduler(text: &str, config: CycleConfig) -> Scheduler {
    crate::registry::scheduler_for(&policy(text), config).expect("scheduler")
}

/// `n` nodes spread over zones a, b, c in round-robin creation order.
fn zoned(n: usize) -> Cluster {
    let zones = ["a", "b", "c"];
    cluster(
        (0..n)
            .map(|i| {
                node(&format!("n{i}"))
                    .label("topology.kubernetes.io/zone", zones[i % 3])
                    .build()
            })
            .collect(),
        vec![],
    )
}

#[test]
fn feasible_nodes_to_find_follows_upstream() {
    // (nodes, percentageOfNodesToScore, expected)
    let cases = [
        (50, 0, 50),      // fewer than 100 nodes: all
        (100, 0, 100),    // 50 - 0 = 50% of 100 = 50, but at least 100
        (1000, 0, 420),   // 50 - 1000/125 = 42%
        (5000, 0, 500),   // 50 - 40 = 10%
        (6000, 0, 300),   // 50 - 48 = 2% -> floor 5% = 300
        (5000, 30, 1500), // explicit percentage
        (5000, 1, 100),   // 1% = 50, at least 100
        (5000, 100, 5000),
    ];
    for (all, pct, want) in cases {
        let s = scheduler(
            r#"{"predicates":[],"priorities":[]}"#,
            CycleConfig {
                percentage_of_nodes_to_score: pct,
                ..CycleConfig::default()
            },
        );
        assert_eq!(s.feasible_nodes_to_find(all), want, "{all} nodes at {pct}%");
    }
}

#[test]
fn nodes_are_visited_round_robin_across_zones() {
    let c = cluster(
        vec![
            node("a1").label("topology.kubernetes.io/zone", "a").build(),
            node("a2").label("topology.kubernetes.io/zone", "a").build(),
            node("a3").label("topology.kubernetes.io/zone", "a").build(),
            node("b1").label("topology.kubernetes.io/zone", "b").build(),
            node("none").build(),
        ],
        vec![],
    );
    let names: Vec<&str> = c.node_order().iter().map(|id| c.node(*id).name()).collect();
    assert_eq!(names, ["a1", "b1", "none", "a2", "a3"]);
}

#[test]
fn sampling_stops_early_and_the_next_cycle_resumes_where_it_stopped() {
    let mut c = zoned(300);
    let p = c.compile_pod(pod("p").build());
    let mut s = scheduler(
        r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
        CycleConfig {
            percentage_of_nodes_to_score: 10,
            ..CycleConfig::default()
        },
    );
    let d = s.explain(&c, &p);
    let e = d.explanation().cloned().expect("explained");
    // 10% of 300 is below the floor of 100 feasible nodes.
    assert_eq!(e.nodes.len(), 100);
    assert_eq!(e.not_evaluated, 200);
    let first_of_next = c.node_order()[100];
    let d = s.explain(&c, &p);
    let e = d.explanation().cloned().expect("explained");
    assert_eq!(e.nodes[0].node, c.node(first_of_next).name());
    // Wrapping around: the third cycle covers 200..300.
    s.schedule(&c, &p);
    assert_eq!(s.next_start, 0);
}

#[test]
fn weighted_totals_saturate_only_where_plain_sums_would_overflow() {
    let values = |v: &[i64]| Column::Values(v.to_vec());
    type Case = (&'static str, i64, Vec<Column>, Vec<i64>, Vec<i64>);
    let cases: Vec<Case> = vec![
        (
            "plain sums",
            5,
            vec![values(&[0, 100]), Column::Constant(7), values(&[3, 1])],
            vec![2, 9, 10],
            vec![35, 215],
        ),
        (
            "four columns in one pass",
            1,
            vec![
                values(&[1, 2]),
                values(&[10, 20]),
                Column::Constant(50),
                values(&[100, 0]),
                values(&[3, 4]),
            ],
            vec![1, 2, 7, 3, 5],
            vec![1 + 1 + 20 + 300 + 15, 1 + 2 + 40 + 20],
        ),
        (
            "six columns: four in one pass, then two",
            0,
            (1..=6).map(|c| values(&[c, 10 * c])).collect(),
            vec![1, 2, 3, 4, 5, 6],
            vec![1 + 4 + 9 + 16 + 25 + 36, 10 + 40 + 90 + 160 + 250 + 360],
        ),
        (
            "three columns, the last one far too large, saturate",
            0,
            vec![values(&[1]), values(&[1]), values(&[i64::MAX])],
            vec![1, 1, 1],
            vec![i64::MAX],
        ),
        (
            "a negative score takes the checked path and sums the same",
            0,
            vec![values(&[-4, 2])],
            vec![3],
            vec![-12, 6],
        ),
        (
            "a huge weight saturates at the top",
            0,
            vec![values(&[2, 0]), values(&[1, 1])],
            vec![i64::MAX / 2 + 1, 1],
            vec![i64::MAX, 1],
        ),
        (
            "a huge negative score saturates at the bottom",
            -10,
            vec![values(&[i64::MIN / 2, 1])],
            vec![4],
            vec![i64::MIN, -6],
        ),
        (
            "scores at the limit still sum plainly",
            i64::MAX - 200,
            vec![values(&[100]), values(&[100])],
            vec![1, 1],
            vec![i64::MAX],
        ),
        (
            "one past the limit saturates",
            i64::MAX - 200,
            vec![values(&[100]), values(&[101])],
            vec![1, 1],
            vec![i64::MAX],
        ),
    ];
    for (name, constant, columns, weights, want) in cases {
        assert_eq!(
            weighted_totals(constant, &columns, &weights, want.len()),
            want,
            "{name}"
        );
    }
}

#[test]
fn ties_are_broken_by_the_seed_and_reproducibly() {
    let mut c = zoned(12);
    let info = c.compile_pod(pod("p").build());
    let text = r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;
    let picks = |seed| {
        let mut s = scheduler(
            text,
            CycleConfig {
                seed,
                ..CycleConfig::default()
            },
        );
        (0..20)
            .map(|_| s.schedule(&c, &info).node().expect("placed"))
            .collect::<Vec<_>>()
    };
    assert_eq!(picks(1), picks(1));
    assert_ne!(picks(1), picks(2));
    let distinct: std::collections::BTreeSet<_> = picks(3).into_iter().collect();
    assert!(
        distinct.len() > 3,
        "uniform tie-break should spread over equal nodes"
    );
}

#[test]
fn one_feasible_node_is_chosen_without_scoring() {
    let mut c = cluster(
        vec![
            node("big").cpu(8000).build(),
            node("small").cpu(100).build(),
        ],
        vec![],
    );
    let mut s = Scheduler::new(
        vec![NamedFilter {
            name: "PodFitsResources".into(),
            upstream: Some(resources_fit::UPSTREAM_PLUGIN),
            protection: None,
            rule: Arc::new(resources_fit::PodFitsResources::new(vec![])),
        }],
        vec![WeightedScore {
            name: "LeastRequestedPriority".into(),
            upstream: Some(crate::rules::least_requested::UPSTREAM_PLUGIN),
            rule: Arc::new(LeastRequested),
            weight: 1,
        }],
        CycleConfig::default(),
    );
    let p = c.compile_pod(pod("p").req(1000, 0).build());
    let d = s.explain(&c, &p);
    assert_eq!(c.node(d.node().expect("placed")).name(), "big");
    let e = d.explanation().cloned().expect("explained");
    assert!(e.score_rules.is_empty() && e.nodes.iter().all(|n| n.total.is_none()));
}

/// Each rejection names the policy entry that made it; each score keeps its raw value
/// beside the normalised and weighted ones.
#[test]
fn explanations_attribute_rejections_and_keep_raw_scores() {
    use crate::model::TaintEffect;
    let text = r#"{"predicates":[{"name":"GeneralPredicates"},{"name":"PodToleratesNodeTaints"}],
        "priorities":[{"name":"TaintTolerationPriority","weight":2}]}"#;
    let mut c = cluster(
        vec![
            node("small").cpu(100).build(),
            node("tainted")
                .taint("k", "v", TaintEffect::NoSchedule)
                .build(),
            node("avoided")
                .taint("k", "v", TaintEffect::PreferNoSchedule)
                .build(),
            node("clean").build(),
        ],
        vec![],
    );
    let p = c.compile_pod(pod("p").req(1000, 0).build());
    let d = scheduler(text, CycleConfig::default()).explain(&c, &p);
    assert_eq!(c.node(d.node().expect("placed")).name(), "clean");
    let e = d.explanation().cloned().expect("explained");
    assert_eq!(e.score_rules, [("TaintTolerationPriority".to_string(), 2)]);
    let by_name = |name: &str| e.nodes.iter().find(|n| n.node == name).expect(name);
    let rejected_by = |name: &str| -> Vec<(RejectedBy, String)> {
        by_name(name)
            .rejections
            .iter()
            .map(|r| (r.by.clone(), r.reason.clone()))
            .collect()
    };
    assert_eq!(
        rejected_by("small"),
        [(
            RejectedBy::Filter("GeneralPredicates".into()),
            resources_fit::REASON_CPU.to_string()
        )]
    );
    let tainted = rejected_by("tainted");
    assert_eq!(tainted.len(), 1);
    assert_eq!(
        tainted[0].0,
        RejectedBy::Filter("PodToleratesNodeTaints".into())
    );
    // One PreferNoSchedule taint not tolerated: raw 1, reversed to 0 by normalising.
    let avoided = by_name("avoided");
    assert_eq!(
        avoided.scores,
        [ScoreValue {
            raw: 1,
            normalized: 0,
            weighted: 0
        }]
    );
    assert_eq!(avoided.total, Some(0));
    let clean = by_name("clean");
    assert_eq!(
        clean.scores,
        [ScoreValue {
            raw: 0,
            normalized: 100,
            weighted: 200
        }]
    );
    assert_eq!(clean.total, Some(200));
    assert!(clean.feasible() && !by_name("small").feasible());
}

/// A filter that rejects the pod everywhere in its preparation is named on every node.
#[test]
fn a_filter_rejecting_everywhere_is_named_on_every_node() {
    let text = r#"{"predicates":[{"name":"CheckVolumeBinding"}],"priorities":[]}"#;
    let mut c = zoned(3);
    let p = c.compile_pod(pod("p").claim("missing").build());
    let d = scheduler(text, CycleConfig::default()).explain(&c, &p);
    assert_eq!(d.node(), None);
    let e = d.explanation().cloned().expect("explained");
    assert_eq!(e.nodes.len(), 3);
    for n in &e.nodes {
        assert_eq!(n.rejections.len(), 1, "{}", n.node);
        assert_eq!(
            n.rejections[0].by,
            RejectedBy::Filter("CheckVolumeBinding".into())
        );
        assert!(
            d.fit_error()
                .expect("unschedulable")
                .reasons
                .contains_key(&n.rejections[0].reason)
        );
    }
}

#[test]
fn fit_error_counts_reasons_per_node_and_sorts_them_as_strings() {
    let text = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[]}"#;
    let mut c = cluster(
        vec![
            node("a").cpu(100).label("disk", "ssd").build(),
            node("b").cpu(100).build(),
            node("c").cpu(8000).build(),
        ],
        vec![],
    );
    let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
    let d = scheduler(text, CycleConfig::default()).schedule(&c, &p);
    assert_eq!(
        d.fit_error().cloned().expect("unschedulable").to_string(),
        format!(
            "0/3 nodes are available: 1 {}, 2 {}.",
            node_selector::REASON,
            resources_fit::REASON_CPU
        )
    );
    // With alwaysCheckAllPredicates every failing part of every node counts.
    let all = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[],"alwaysCheckAllPredicates":true}"#;
    let d = scheduler(all, CycleConfig::default()).schedule(&c, &p);
    assert_eq!(
        d.fit_error().cloned().expect("unschedulable").to_string(),
        format!(
            "0/3 nodes are available: 2 {}, 2 {}.",
            resources_fit::REASON_CPU,
            node_selector::REASON
        )
    );
}

/// The FitError's diagnosis says which filter gave which reason on how many nodes, also
/// where one node fails several filters (alwaysCheckAllPredicates) and where a filter
/// rejects the pod everywhere while it is prepared; its reasons count the same text.
#[test]
fn fit_error_attributes_each_reason_to_its_filter() {
    let policy = |check_all: bool| {
        format!(
            r#"{{"predicates":[{{"name":"PodFitsResources"}},{{"name":"MatchNodeSelector"}}],
                "priorities":[],"alwaysCheckAllPredicates":{check_all}}}"#
        )
    };
    let mut c = cluster(
        vec![
            node("a").cpu(100).label("disk", "ssd").build(),
            node("b").cpu(100).build(),
            node("c").cpu(8000).build(),
        ],
        vec![],
    );
    let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
    let attributed = |s: &Scheduler, fit: &FitError| -> Vec<(String, String, usize)> {
        fit.diagnosis
            .by_filter
            .iter()
            .map(|((f, r), n)| (s.filters()[*f].name.clone(), r.clone(), *n))
            .collect()
    };
    let row = |f: &str, r: &str, n: usize| (f.to_string(), r.to_string(), n);
    let selector = "node(s) didn't match Pod's node affinity/selector";
    for (check_all, want) in [
        // Up to the first failing filter (MatchNodeSelector runs first): b and c fail the
        // selector, a the resources.
        (
            false,
            vec![
                row("MatchNodeSelector", selector, 2),
                row("PodFitsResources", "Insufficient cpu", 1),
            ],
        ),
        // Every filter: b fails both.
        (
            true,
            vec![
                row("MatchNodeSelector", selector, 2),
                row("PodFitsResources", "Insufficient cpu", 2),
            ],
        ),
    ] {
        let mut s = scheduler(&policy(check_all), CycleConfig::default());
        let fit = s
            .schedule(&c, &p)
            .fit_error()
            .cloned()
            .expect("unschedulable");
        // In evaluation order: the diagnosis is keyed by the filters' positions.
        assert_eq!(
            attributed(&s, &fit),
            want,
            "alwaysCheckAllPredicates {check_all}"
        );
        for (_, reason, n) in &want {
            assert_eq!(fit.reasons.get(reason), Some(n), "{reason}");
        }
    }
    // A missing claim rejects the pod everywhere while CheckVolumeBinding is prepared.
    let volumes = scheduler(
        r#"{"predicates":[{"name":"CheckVolumeBinding"}],"priorities":[]}"#,
        CycleConfig::default(),
    );
    let mut s = volumes;
    let claim = c.compile_pod(pod("v").claim("gone").build());
    let fit = s
        .schedule(&c, &claim)
        .fit_error()
        .cloned()
        .expect("unschedulable");
    assert_eq!(
        attributed(&s, &fit),
        [row(
            "CheckVolumeBinding",
            "persistentvolumeclaim \"gone\" not found",
            3
        )]
    );
}

/// The FitError names the filters that rejected some node (upstream's unschedulable
/// plugins), each with its upstream plugin when it is exactly one.
#[test]
fn fit_error_names_the_filters_that_rejected_nodes() {
    let text = r#"{"predicates":[{"name":"PodFitsResources"},{"name":"MatchNodeSelector"},
        {"name":"NoDiskConflict"}],"priorities":[]}"#;
    let mut c = cluster(
        vec![
            node("a").cpu(100).label("disk", "ssd").build(),
            node("b").cpu(8000).build(),
        ],
        vec![],
    );
    let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
    let s = scheduler(text, CycleConfig::default());
    let names = |indices: &[usize]| -> Vec<(String, Option<&'static str>)> {
        indices
            .iter()
            .map(|&i| (s.filters()[i].name.clone(), s.filters()[i].upstream))
            .collect()
    };
    let mut s2 = scheduler(text, CycleConfig::default());
    let fit = s2
        .schedule(&c, &p)
        .fit_error()
        .cloned()
        .expect("unschedulable");
    assert_eq!(
        names(&fit.diagnosis.filters),
        // In evaluation order (fixed, whatever the file's order).
        [
            (
                "MatchNodeSelector".to_string(),
                Some(node_selector::UPSTREAM_PLUGIN)
            ),
            (
                "PodFitsResources".to_string(),
                Some(resources_fit::UPSTREAM_PLUGIN)
            ),
        ]
    );
    // A pod only the node selector stops: that filter alone.
    let empty = c.compile_pod(pod("q").node_selector("disk", "nvme").build());
    let fit = s2
        .schedule(&c, &empty)
        .fit_error()
        .cloned()
        .expect("unschedulable");
    assert_eq!(
        names(&fit.diagnosis.filters),
        [(
            "MatchNodeSelector".to_string(),
            Some(node_selector::UPSTREAM_PLUGIN)
        )]
    );
    // GeneralPredicates is four upstream plugins: no single one.
    let general = scheduler(
        r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[]}"#,
        CycleConfig::default(),
    );
    assert!(
        general
            .filters()
            .iter()
            .any(|f| f.name == "GeneralPredicates" && f.upstream.is_none())
    );
}

#[test]
fn each_rule_preparation_is_timed_under_its_upstream_plugin() {
    let mut c = zoned(3);
    let p = c.compile_pod(pod("p").build());
    let mut s = scheduler(
        r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
        CycleConfig::default(),
    );
    s.schedule(&c, &p);
    // GeneralPredicates is four upstream plugins: timed under its policy name.
    let seen: Vec<(String, &str)> = s
        .last_cycle_timings()
        .map(|(name, point, _)| (name.to_string(), point.as_str()))
        .collect();
    let expect = |name: &str, point: &'static str| (name.to_string(), point);
    assert_eq!(
        seen,
        [
            expect("DynamicResources", "PreFilter"),
            expect("UnmodelledFields", "PreFilter"),
            expect("NodeUnschedulable", "PreFilter"),
            expect("GeneralPredicates", "PreFilter"),
            expect("TaintToleration", "PreFilter"),
            expect("VolumeRestrictions", "PreFilter"),
            expect("NodeResourcesLeastAllocated", "PreScore"),
        ]
    );
}

/// Upstream's RunFilterPluginsWithNominatedPods: nominated pods of equal or higher
/// priority hold their room; lower ones do not; a pod is not held back by itself.
#[test]
fn nominated_pods_of_equal_or_higher_priority_hold_their_node() {
    let text = r#"{"predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#;
    let mut c = cluster(vec![node("n1").cpu(1000).build()], vec![]);
    let n1 = c.node_by_name("n1").expect("n1");
    let cases = [
        ("higher priority nominated", 100, "other", false),
        ("equal priority nominated", 10, "other", false),
        ("lower priority nominated", 5, "other", true),
        ("the pod's own nomination", 100, "p", true),
    ];
    for (name, nominated_priority, nominated_name, fits) in cases {
        let mut nominator = Nominator::new();
        nominator.add(
            c.compile_pod(
                pod(nominated_name)
                    .req(800, 0)
                    .priority(nominated_priority)
                    .build(),
            ),
            n1,
        );
        let p = c.compile_pod(pod("p").req(500, 0).priority(10).build());
        let d = scheduler(text, CycleConfig::default()).schedule_with(&c, &nominator, &p);
        assert_eq!(d.node().is_some(), fits, "{name}");
        if !fits {
            assert_eq!(
                d.fit_error().cloned().expect("unschedulable").to_string(),
                format!("0/1 nodes are available: 1 {}.", resources_fit::REASON_CPU),
                "{name}: reasons come from the pass with the nominated pods"
            );
        }
    }
}

/// Upstream's addNominatedPods adds nominated pods as whole pods: the PreFilter
/// extensions of InterPodAffinity and PodTopologySpread count them too, not only their
/// resources. Each case: the nominated pod on n1 (priority 100, no resources), the pod
/// (priority 10), and the FitError on n1 if it should fail there (n2 stays free).
#[test]
fn nominated_pods_count_for_affinity_and_spreading() {
    let text = r#"{"predicates":[{"name":"MatchInterPodAffinity"},
        {"name":"EvenPodsSpread"}],"priorities":[]}"#;
    let zone = "topology.kubernetes.io/zone";
    let spread = |p: PodBuilder| {
        p.spread(
            1,
            zone,
            crate::model::WhenUnsatisfiable::DoNotSchedule,
            Some(selector(&[("app", "web")])),
        )
    };
    let hostname = "kubernetes.io/hostname";
    let cases: Vec<(&str, PodBuilder, PodBuilder, Option<&str>)> = vec![
        (
            "the nominated pod's anti-affinity rejects the pod",
            pod("nom").anti_affinity(hostname, &[("app", "web")]),
            pod("p").label("app", "web"),
            Some(inter_pod_affinity::REASON_EXISTING_ANTI_AFFINITY),
        ),
        (
            "the pod's anti-affinity rejects the nominated pod",
            pod("nom").label("app", "db"),
            pod("p").anti_affinity(hostname, &[("app", "db")]),
            Some(inter_pod_affinity::REASON_ANTI_AFFINITY),
        ),
        (
            "a nominated pod of another app changes nothing",
            pod("nom").label("app", "db"),
            pod("p")
                .label("app", "web")
                .anti_affinity(hostname, &[("app", "web")]),
            None,
        ),
        (
            "the nominated pod counts in its zone's spread",
            pod("nom").label("app", "web"),
            spread(pod("p").label("app", "web")),
            Some(pod_topology_spread::REASON),
        ),
        (
            // The pass with the nominated pod finds it in n1's zone, the pass without
            // it finds no pod (and the pod does not match its own term).
            "affinity met only by the nominated pod fails: the second pass lacks it",
            pod("nom").label("app", "db"),
            pod("p").affinity(zone, &[("app", "db")]),
            Some(inter_pod_affinity::REASON_AFFINITY),
        ),
    ];
    for (name, nominated, incoming, n1_fails) in cases {
        let mut c = cluster(
            vec![
                node("n1").label(zone, "z1").build(),
                node("n2").label(zone, "z2").build(),
            ],
            vec![],
        );
        let n1 = c.node_by_name("n1").expect("n1");
        let mut nominator = Nominator::new();
        nominator.add(c.compile_pod(nominated.priority(100).build()), n1);
        let p = c.compile_pod(incoming.priority(10).build());
        let d = scheduler(text, CycleConfig::default()).explain_with(&c, &nominator, &p);
        let explanation = d.explanation().cloned().expect("explained");
        let n1_reasons: Vec<&str> = explanation
            .nodes
            .iter()
            .find(|n| n.node == "n1")
            .expect("n1")
            .rejections
            .iter()
            .map(|r| r.reason.as_str())
            .collect();
        match n1_fails {
            Some(reason) => assert_eq!(n1_reasons, [reason], "{name}"),
            None => assert!(n1_reasons.is_empty(), "{name}: {n1_reasons:?}"),
        }
    }
}

#[test]
fn a_nominated_pod_goes_to_its_node_when_it_fits_there() {
    let mut c = zoned(5);
    let p = c.compile_pod(pod("p").nominated("n3").build());
    let mut s = scheduler(
        r#"{"predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
        CycleConfig::default(),
    );
    s.next_start = 2;
    let d = s.schedule(&c, &p);
    assert_eq!(c.node(d.node().expect("placed")).name(), "n3");
    assert_eq!(
        s.next_start, 0,
        "upstream's one-node evaluation resets the start"
    );
}

/// Upstream's status codes: NodeResourcesFit fails as Unschedulable, TaintToleration
/// and NodeAffinity as UnschedulableAndUnresolvable; merged, unresolvable wins.
#[test]
fn failures_carry_upstream_kinds() {
    let text = r#"{"predicates":[{"name":"GeneralPredicates"}],"priorities":[],"alwaysCheckAllPredicates":true}"#;
    let mut c = cluster(
        vec![
            node("small").cpu(100).label("disk", "ssd").build(),
            node("tainted")
                .cpu(8000)
                .label("disk", "ssd")
                .taint("k", "v", crate::model::TaintEffect::NoSchedule)
                .build(),
            node("hdd").cpu(8000).build(),
            node("both").cpu(100).build(),
        ],
        vec![],
    );
    let p = c.compile_pod(pod("p").req(1000, 0).node_selector("disk", "ssd").build());
    let d = scheduler(text, CycleConfig::default()).schedule(&c, &p);
    let fit = d.fit_error().cloned().expect("unschedulable");
    let unresolvable: Vec<&str> = fit
        .diagnosis
        .unresolvable
        .iter()
        .map(|id| c.node(*id).name())
        .collect();
    assert_eq!(unresolvable, ["tainted", "hdd", "both"]);
}

#[test]
fn an_empty_cluster_says_so() {
    let c = Cluster::new();
    let mut p_cluster = Cluster::new();
    let p = p_cluster.compile_pod(pod("p").build());
    let d = scheduler(r#"{}"#, CycleConfig::default()).schedule(&c, &p);
    assert_eq!(
        d.fit_error().cloned().expect("unschedulable").to_string(),
        NO_NODES_AVAILABLE
    );
}
