use super::*;
use crate::model::{Pod, PodSelector, TopologySpreadConstraint, WhenUnsatisfiable};
use crate::testkit::*;

fn object(kind: SelectorKind, ns: &str, name: &str, sel: &[(&str, &str)]) -> PodSelector {
    selector_object(kind, ns, name, sel)
}

const LABELS1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
const LABELS2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];

struct Case {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    objects: Vec<PodSelector>,
    want: Vec<(&'static str, i64)>,
}

fn run(nodes: impl Fn() -> Vec<crate::model::Node>, cases: Vec<Case>) {
    for c in cases {
        let mut cl = cluster(nodes(), c.pods);
        for o in &c.objects {
            cl.upsert_selector_object(o);
        }
        let mut got = run_score(&SelectorSpread, &mut cl, c.pod);
        got.sort();
        let mut want: Vec<(String, i64)> =
            c.want.iter().map(|(n, s)| (n.to_string(), *s)).collect();
        want.sort();
        assert_eq!(got, want, "{}", c.name);
    }
}

/// Upstream's TestSelectorSpreadScore, restated. Upstream's "no namespace" pods are in
/// `other` here.
#[test]
fn upstream_table() {
    use SelectorKind::*;
    let svc = |sel: &[(&str, &str)]| object(Service, "default", "s1", sel);
    let on =
        |name: &str, labels: &[(&str, &str)], node: &str| labelled(name, labels).on(node).build();
    let both_full = vec![("node1", 100), ("node2", 100)];
    let cases = vec![
        Case {
            name: "nothing scheduled",
            pod: pod("p").build(),
            pods: vec![],
            objects: vec![],
            want: both_full.clone(),
        },
        Case {
            name: "no services",
            pod: labelled("p", LABELS1).build(),
            pods: vec![pod("e").on("node1").build()],
            objects: vec![],
            want: both_full.clone(),
        },
        Case {
            name: "different services",
            pod: labelled("p", LABELS1).build(),
            pods: vec![on("e", LABELS2, "node1")],
            objects: vec![svc(&[("key", "value")])],
            want: both_full.clone(),
        },
        Case {
            name: "two pods, one service pod",
            pod: labelled("p", LABELS1).build(),
            pods: vec![on("e1", LABELS2, "node1"), on("e2", LABELS1, "node2")],
            objects: vec![svc(LABELS1)],
            want: vec![("node1", 100), ("node2", 0)],
        },
        Case {
            name: "five pods, one service pod in no namespace",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "node1"),
                labelled("e2", LABELS1).ns("other").on("node1").build(),
                labelled("e3", LABELS1).ns("ns1").on("node1").build(),
                on("e4", LABELS1, "node2"),
                on("e5", LABELS2, "node2"),
            ],
            objects: vec![svc(LABELS1)],
            want: vec![("node1", 100), ("node2", 0)],
        },
        Case {
            name: "five pods, one service pod in specific namespace",
            pod: labelled("p", LABELS1).ns("ns1").build(),
            pods: vec![
                on("e1", LABELS2, "node1"),
                on("e2", LABELS1, "node1"),
                labelled("e3", LABELS1).ns("ns2").on("node1").build(),
                labelled("e4", LABELS1).ns("ns1").on("node2").build(),
                on("e5", LABELS2, "node2"),
            ],
            objects: vec![object(Service, "ns1", "s1", LABELS1)],
            want: vec![("node1", 100), ("node2", 0)],
        },
        Case {
            name: "three pods, two service pods on different nodes",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "node1"),
                on("e2", LABELS1, "node1"),
                on("e3", LABELS1, "node2"),
            ],
            objects: vec![svc(LABELS1)],
            want: vec![("node1", 0), ("node2", 0)],
        },
        Case {
            name: "four pods, three service pods",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "node1"),
                on("e2", LABELS1, "node1"),
                on("e3", LABELS1, "node2"),
                on("e4", LABELS1, "node2"),
            ],
            objects: vec![svc(LABELS1)],
            want: vec![("node1", 50), ("node2", 0)],
        },
        Case {
            name: "service with partial pod label matches",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "node1"),
                on("e2", LABELS1, "node1"),
                on("e3", LABELS1, "node2"),
            ],
            objects: vec![svc(&[("baz", "blah")])],
            want: vec![("node1", 0), ("node2", 50)],
        },
    ];
    run(|| vec![node("node1").build(), node("node2").build()], cases);
}

/// Upstream's owner cases: the controller owner's selector is ANDed with the services'.
#[test]
fn upstream_owner_table() {
    use SelectorKind::*;
    let on =
        |name: &str, labels: &[(&str, &str)], node: &str| labelled(name, labels).on(node).build();
    let three = || {
        vec![
            on("e1", LABELS2, "node1"),
            on("e2", LABELS1, "node1"),
            on("e3", LABELS1, "node2"),
        ]
    };
    let mut cases = Vec::new();
    for (kind, kind_name) in [
        (ReplicationController, "ReplicationController"),
        (ReplicaSet, "ReplicaSet"),
        (StatefulSet, "StatefulSet"),
    ] {
        cases.push(Case {
            name: "service with partial pod label matches with service and controller",
            pod: labelled("p", LABELS1)
                .owner(kind_name, "c1", "uid-c1")
                .build(),
            pods: three(),
            objects: vec![
                object(kind, "default", "c1", &[("foo", "bar")]),
                object(kind, "default", "c2", &[("bar", "foo")]),
                object(Service, "default", "s1", &[("baz", "blah")]),
            ],
            want: vec![("node1", 0), ("node2", 0)],
        });
        cases.push(Case {
            name: "disjoined service and controller matches no pods",
            pod: labelled("p", &[("foo", "bar"), ("bar", "foo")])
                .owner(kind_name, "c3", "uid-c3")
                .build(),
            pods: three(),
            objects: vec![
                object(kind, "default", "c3", &[("foo", "bar")]),
                object(Service, "default", "s1", &[("bar", "foo")]),
            ],
            want: vec![("node1", 100), ("node2", 100)],
        });
        cases.push(Case {
            name: "controller with partial pod label matches",
            pod: labelled("p", LABELS1)
                .owner(kind_name, "c1", "uid-c1")
                .build(),
            pods: three(),
            objects: vec![object(kind, "default", "c1", &[("foo", "bar")])],
            want: vec![("node1", 0), ("node2", 0)],
        });
        cases.push(Case {
            name: "another controller with partial pod label matches",
            pod: labelled("p", LABELS1)
                .owner(kind_name, "c3", "uid-c3")
                .build(),
            pods: three(),
            objects: vec![object(kind, "default", "c3", &[("baz", "blah")])],
            want: vec![("node1", 0), ("node2", 50)],
        });
    }
    cases.push(Case {
        name: "topology spread constraints set in pod",
        pod: labelled("p", LABELS1)
            .owner("StatefulSet", "ss1", "uid-ss1")
            .with(|p| {
                p.topology_spread_constraints
                    .push(TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "foo".into(),
                        when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
                        label_selector: None,
                        min_domains: None,
                        node_affinity_policy: None,
                        node_taints_policy: None,
                    })
            })
            .build(),
        pods: three(),
        objects: vec![object(StatefulSet, "default", "ss1", &[("baz", "blah")])],
        want: vec![("node1", 0), ("node2", 0)],
    });
    run(|| vec![node("node1").build(), node("node2").build()], cases);
}

/// Upstream's TestZoneSelectorSpreadPriority, restated.
#[test]
fn upstream_zone_table() {
    let l1: &[(&str, &str)] = &[("label1", "l1"), ("baz", "blah")];
    let l2: &[(&str, &str)] = &[("label2", "l2"), ("baz", "blah")];
    let names = [
        "node1.zone1",
        "node1.zone2",
        "node2.zone2",
        "node1.zone3",
        "node2.zone3",
        "node3.zone3",
    ];
    let nodes = || {
        names
            .iter()
            .map(|n| {
                node(n)
                    .label(
                        "topology.kubernetes.io/zone",
                        n.split('.').nth(1).unwrap_or(""),
                    )
                    .build()
            })
            .collect::<Vec<_>>()
    };
    let on =
        |name: &str, labels: &[(&str, &str)], node: &str| labelled(name, labels).on(node).build();
    let svc = || vec![object(SelectorKind::Service, "default", "s1", l1)];
    let want = |scores: [i64; 6]| names.iter().copied().zip(scores).collect::<Vec<_>>();
    let cases = vec![
        Case {
            name: "nothing scheduled",
            pod: pod("p").build(),
            pods: vec![],
            objects: vec![],
            want: want([100; 6]),
        },
        Case {
            name: "no services",
            pod: labelled("p", l1).build(),
            pods: vec![pod("e").on("node1.zone1").build()],
            objects: vec![],
            want: want([100; 6]),
        },
        Case {
            name: "different services",
            pod: labelled("p", l1).build(),
            pods: vec![on("e", l2, "node1.zone1")],
            objects: vec![object(
                SelectorKind::Service,
                "default",
                "s1",
                &[("key", "value")],
            )],
            want: want([100; 6]),
        },
        Case {
            name: "two pods, 0 matching",
            pod: labelled("p", l1).build(),
            pods: vec![on("e1", l2, "node1.zone1"), on("e2", l2, "node1.zone2")],
            objects: svc(),
            want: want([100; 6]),
        },
        Case {
            name: "two pods, 1 matching (in z2)",
            pod: labelled("p", l1).build(),
            pods: vec![on("e1", l2, "node1.zone1"), on("e2", l1, "node1.zone2")],
            objects: svc(),
            want: want([100, 0, 33, 100, 100, 100]),
        },
        Case {
            name: "five pods, 3 matching (z2=2, z3=1)",
            pod: labelled("p", l1).build(),
            pods: vec![
                on("e1", l2, "node1.zone1"),
                on("e2", l1, "node1.zone2"),
                on("e3", l1, "node2.zone2"),
                on("e4", l2, "node1.zone3"),
                on("e5", l1, "node2.zone3"),
            ],
            objects: svc(),
            want: want([100, 0, 0, 66, 33, 66]),
        },
        Case {
            name: "four pods, 3 matching (z1=1, z2=1, z3=1)",
            pod: labelled("p", l1).build(),
            pods: vec![
                on("e1", l1, "node1.zone1"),
                on("e2", l1, "node1.zone2"),
                on("e3", l2, "node2.zone2"),
                on("e4", l1, "node1.zone3"),
            ],
            objects: svc(),
            want: want([0, 0, 33, 0, 33, 33]),
        },
        Case {
            name: "five pods, 4 matching (z1=1, z2=2, z3=1)",
            pod: labelled("p", l1).build(),
            pods: vec![
                on("e1", l1, "node1.zone1"),
                on("e2", l1, "node1.zone2"),
                on("e3", l1, "node2.zone2"),
                on("e4", l2, "node2.zone2"),
                on("e5", l1, "node1.zone3"),
            ],
            objects: svc(),
            want: want([33, 0, 0, 33, 66, 66]),
        },
        Case {
            name: "Replication controller spreading (z1=0, z2=1, z3=2)",
            pod: labelled("p", l1)
                .owner("ReplicationController", "rc1", "uid-rc1")
                .build(),
            pods: vec![
                on("e1", l1, "node1.zone3"),
                on("e2", l1, "node1.zone2"),
                on("e3", l1, "node1.zone3"),
            ],
            objects: vec![object(
                SelectorKind::ReplicationController,
                "default",
                "rc1",
                l1,
            )],
            want: want([100, 50, 66, 0, 33, 33]),
        },
    ];
    run(nodes, cases);
}

#[test]
fn edge_cases() {
    use SelectorKind::*;
    let web: &[(&str, &str)] = &[("app", "web")];
    let on = |name: &str, node: &str| labelled(name, web).on(node).build();
    let nodes = || {
        vec![
            node("a").label("topology.kubernetes.io/zone", "z1").build(),
            node("b").label("topology.kubernetes.io/zone", "z1").build(),
            node("c").build(),
        ]
    };
    let cases = vec![
        Case {
            name: "terminating pods do not count",
            pod: labelled("p", web).build(),
            pods: vec![
                labelled("e1", web).terminating().on("a").build(),
                on("e2", "c"),
            ],
            objects: vec![object(Service, "default", "s", web)],
            // a: node 100, zone z1 has 0 of max 0 -> 100; c (unzoned): 0.
            want: vec![("a", 100), ("b", 100), ("c", 0)],
        },
        Case {
            name: "a node without a zone key ignores zones while others use them",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "a"), on("e2", "c"), on("e3", "c")],
            objects: vec![object(Service, "default", "s", web)],
            // max node 2: a -> 50, b -> 100, c -> 0; zone z1 holds 1 of max 1 -> 0.
            want: vec![("a", 16), ("b", 33), ("c", 0)],
        },
        Case {
            name: "a service with an empty selector gives no spreading",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "a")],
            objects: vec![object(Service, "default", "s", &[])],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
        Case {
            name: "a service without selector selects nothing",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "a")],
            objects: vec![PodSelector {
                selector: None,
                ..object(Service, "default", "s", &[])
            }],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
        Case {
            name: "a non-controller owner adds nothing",
            pod: labelled("p", web)
                .with(|p| {
                    p.meta.owners.push(crate::model::OwnerRef {
                        kind: "ReplicaSet".into(),
                        name: "rs".into(),
                        uid: "u".into(),
                        controller: false,
                    })
                })
                .build(),
            pods: vec![on("e1", "a")],
            objects: vec![object(ReplicaSet, "default", "rs", web)],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
        Case {
            name: "an owner kind other than RC/RS/SS adds nothing",
            pod: labelled("p", web).owner("Job", "rs", "u").build(),
            pods: vec![on("e1", "a")],
            objects: vec![object(ReplicaSet, "default", "rs", web)],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
        Case {
            name: "an RS that selects the pod but does not own it adds nothing",
            pod: labelled("p", web).build(),
            pods: vec![on("e1", "a")],
            objects: vec![object(ReplicaSet, "default", "rs", web)],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
        Case {
            name: "the owner is looked up in the pod's namespace",
            pod: labelled("p", web).owner("ReplicaSet", "rs", "u").build(),
            pods: vec![on("e1", "a")],
            objects: vec![object(ReplicaSet, "other", "rs", web)],
            want: vec![("a", 100), ("b", 100), ("c", 100)],
        },
    ];
    run(nodes, cases);
}

/// Only the feasible nodes take part in normalisation.
#[test]
fn normalises_over_feasible_nodes() {
    let web: &[(&str, &str)] = &[("app", "web")];
    let mut cl = cluster(
        vec![node("a").build(), node("b").build(), node("c").build()],
        vec![
            labelled("e1", web).on("a").build(),
            labelled("e2", web).on("a").build(),
            labelled("e3", web).on("b").build(),
        ],
    );
    cl.upsert_selector_object(&object(SelectorKind::Service, "default", "s", web));
    let feasible: Vec<NodeId> = ["b", "c"]
        .iter()
        .filter_map(|n| cl.node_by_name(n))
        .collect();
    let got = run_score_on(
        &SelectorSpread,
        &mut cl,
        labelled("p", web).build(),
        &feasible,
    );
    assert_eq!(got, vec![("b".to_string(), 0), ("c".to_string(), 100)]);
}
