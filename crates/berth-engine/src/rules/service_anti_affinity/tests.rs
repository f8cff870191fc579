use super::*;
use crate::model::{Pod, PodSelector};
use crate::testkit::*;

fn service(ns: &str, name: &str, sel: &[(&str, &str)]) -> PodSelector {
    selector_object(SelectorKind::Service, ns, name, sel)
}

const LABELS1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
const LABELS2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];
const NAMES: [&str; 6] = [
    "machine11",
    "machine12",
    "machine21",
    "machine22",
    "machine01",
    "machine02",
];

/// Upstream's labeledNodes: zone1 and zone2 with two machines each, two unzoned machines.
/// With `racks`, the nodesWithZoneAndRackLabels variant.
fn nodes(racks: bool) -> Vec<crate::model::Node> {
    let rack = |n: &str| match n {
        "machine12" => Some("rack2"),
        "machine11" | "machine21" | "machine22" => Some("rack1"),
        _ => None,
    };
    NAMES
        .iter()
        .map(|n| {
            let b = node(n);
            let b = match &n[7..8] {
                "1" => b.label("zone", "zone1"),
                "2" => b.label("zone", "zone2"),
                _ => b.label("name", "value"),
            };
            match rack(n).filter(|_| racks) {
                Some(r) => b.label("rack", r).build(),
                None => b.build(),
            }
        })
        .collect()
}

struct Case {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    services: Vec<PodSelector>,
    want: [i64; 6],
}

fn run(label: &str, racks: bool, cases: Vec<Case>) {
    for c in cases {
        let mut cl = cluster(nodes(racks), c.pods);
        for s in &c.services {
            cl.upsert_selector_object(s);
        }
        let labels = label.split(',').map(str::to_string).collect();
        let got = run_score(&ServiceAntiAffinity::new(labels), &mut cl, c.pod);
        let want: Vec<(String, i64)> = NAMES.iter().map(|n| n.to_string()).zip(c.want).collect();
        let mut got_sorted = got.clone();
        got_sorted.sort_by_key(|(n, _)| NAMES.iter().position(|m| m == n));
        assert_eq!(got_sorted, want, "{}", c.name);
    }
}

/// Upstream's TestServiceAffinityScore (single-label cases), restated. Scores are in the
/// order machine11, machine12, machine21, machine22, machine01, machine02.
#[test]
fn upstream_table() {
    let on =
        |name: &str, labels: &[(&str, &str)], node: &str| labelled(name, labels).on(node).build();
    let svc = |sel: &[(&str, &str)]| vec![service("default", "s", sel)];
    let cases = vec![
        Case {
            name: "nothing scheduled",
            pod: pod("p").build(),
            pods: vec![],
            services: vec![],
            want: [100, 100, 100, 100, 0, 0],
        },
        Case {
            name: "no services",
            pod: labelled("p", LABELS1).build(),
            pods: vec![pod("e").on("machine11").build()],
            services: vec![],
            want: [100, 100, 100, 100, 0, 0],
        },
        Case {
            name: "different services",
            pod: labelled("p", LABELS1).build(),
            pods: vec![on("e", LABELS2, "machine11")],
            services: svc(&[("key", "value")]),
            want: [100, 100, 100, 100, 0, 0],
        },
        Case {
            name: "three pods, one service pod",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "machine01"),
                on("e2", LABELS2, "machine11"),
                on("e3", LABELS1, "machine21"),
            ],
            services: svc(LABELS1),
            want: [100, 100, 0, 0, 0, 0],
        },
        Case {
            name: "three pods, two service pods on different machines",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "machine11"),
                on("e2", LABELS1, "machine11"),
                on("e3", LABELS1, "machine21"),
            ],
            services: svc(LABELS1),
            want: [50, 50, 50, 50, 0, 0],
        },
        Case {
            name: "three service label match pods in different namespaces",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                labelled("e1", LABELS1).ns("other").on("machine11").build(),
                on("e2", LABELS1, "machine11"),
                labelled("e3", LABELS1).ns("other").on("machine21").build(),
                labelled("e4", LABELS1).ns("ns1").on("machine21").build(),
            ],
            services: svc(LABELS1),
            want: [0, 0, 100, 100, 0, 0],
        },
        Case {
            name: "four pods, three service pods",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "machine11"),
                on("e2", LABELS1, "machine11"),
                on("e3", LABELS1, "machine21"),
                on("e4", LABELS1, "machine21"),
            ],
            services: svc(LABELS1),
            want: [66, 66, 33, 33, 0, 0],
        },
        Case {
            name: "service with partial pod label matches",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "machine11"),
                on("e2", LABELS1, "machine11"),
                on("e3", LABELS1, "machine21"),
            ],
            services: svc(&[("baz", "blah")]),
            want: [33, 33, 66, 66, 0, 0],
        },
        Case {
            name: "service pod on non-zoned node",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS1, "machine01"),
                on("e2", LABELS1, "machine11"),
                on("e3", LABELS1, "machine21"),
                on("e4", LABELS1, "machine21"),
            ],
            services: svc(LABELS1),
            want: [75, 75, 50, 50, 0, 0],
        },
    ];
    run("zone", false, cases);
}

/// Upstream's two-label case ("three pods, two service pods, with rack label"): the
/// per-label scores (zone [50, 50, 50, 50, 0, 0], rack [0, 100, 0, 0, 0, 0]) averaged.
#[test]
fn upstream_two_label_case() {
    let on =
        |name: &str, labels: &[(&str, &str)], node: &str| labelled(name, labels).on(node).build();
    let case = |want| Case {
        name: "three pods, two service pods, with rack label",
        pod: labelled("p", LABELS1).build(),
        pods: vec![
            on("e1", LABELS2, "machine01"),
            on("e2", LABELS1, "machine11"),
            on("e3", LABELS1, "machine21"),
        ],
        services: vec![service("default", "s", LABELS1)],
        want,
    };
    run("zone", true, vec![case([50, 50, 50, 50, 0, 0])]);
    run("rack", true, vec![case([0, 100, 0, 0, 0, 0])]);
    run("zone,rack", true, vec![case([25, 75, 25, 25, 0, 0])]);
}

/// Shares add up in float and truncate once: each node gets 50 from labels x and y and
/// nothing from z, which no node has; 50/3 + 50/3 = 33.3 gives 33 (truncating each
/// share first would give 32).
#[test]
fn shares_truncate_once() {
    let web: &[(&str, &str)] = &[("app", "web")];
    let mut cl = cluster(
        vec![
            node("a").label("x", "1").label("y", "1").build(),
            node("b").label("x", "2").label("y", "2").build(),
        ],
        vec![
            labelled("e1", web).on("a").build(),
            labelled("e2", web).on("b").build(),
        ],
    );
    cl.upsert_selector_object(&service("default", "s", web));
    let rule = ServiceAntiAffinity::new(vec!["x".into(), "y".into(), "z".into()]);
    let mut got = run_score(&rule, &mut cl, labelled("p", web).build());
    got.sort();
    assert_eq!(got, vec![("a".to_string(), 33), ("b".to_string(), 33)]);
}

#[test]
fn edge_cases() {
    let web: &[(&str, &str)] = &[("app", "web")];
    let on = |name: &str, node: &str| labelled(name, web).on(node).build();
    let cases = vec![
        Case {
            name: "terminating pods do not count",
            pod: labelled("p", web).build(),
            pods: vec![
                labelled("e1", web).terminating().on("machine11").build(),
                on("e2", "machine21"),
            ],
            services: vec![service("default", "s", web)],
            want: [100, 100, 0, 0, 0, 0],
        },
        Case {
            name: "the first service decides",
            pod: labelled("p", web).label("tier", "front").build(),
            pods: vec![
                on("e1", "machine11"),
                labelled("e2", &[("tier", "front")]).on("machine21").build(),
            ],
            services: vec![
                service("default", "s1", &[("tier", "front")]),
                service("default", "s2", web),
            ],
            want: [100, 100, 0, 0, 0, 0],
        },
        Case {
            name: "a service in another namespace does not apply",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "machine11")],
            services: vec![service("other", "s", web)],
            want: [100, 100, 100, 100, 0, 0],
        },
        Case {
            name: "a service with an empty selector counts nothing",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "machine11")],
            services: vec![service("default", "s", &[])],
            want: [100, 100, 100, 100, 0, 0],
        },
    ];
    run("zone", false, cases);
}

#[test]
fn unknown_label_scores_zero() {
    let mut cl = cluster(nodes(false), vec![]);
    let got = run_score(
        &ServiceAntiAffinity::new(vec!["never-seen".into()]),
        &mut cl,
        pod("p").build(),
    );
    assert!(got.iter().all(|(_, s)| *s == 0));
}

/// Only the feasible nodes count towards N and the per-value sums.
#[test]
fn normalises_over_feasible_nodes() {
    let web: &[(&str, &str)] = &[("app", "web")];
    let mut cl = cluster(
        nodes(false),
        vec![
            labelled("e1", web).on("machine11").build(),
            labelled("e2", web).on("machine22").build(),
        ],
    );
    cl.upsert_selector_object(&service("default", "s", web));
    let feasible: Vec<NodeId> = ["machine12", "machine22"]
        .iter()
        .filter_map(|n| cl.node_by_name(n))
        .collect();
    let got = run_score_on(
        &ServiceAntiAffinity::new(vec!["zone".into()]),
        &mut cl,
        labelled("p", web).build(),
        &feasible,
    );
    assert_eq!(
        got,
        vec![("machine12".to_string(), 100), ("machine22".to_string(), 0)]
    );
}
