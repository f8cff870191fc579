use super::*;
use crate::labels::Operator::{self, *};
use crate::labels::{LabelSelector, Requirement};
use crate::model::{Node, Pod, PodAffinityTerm};
use crate::testkit::*;

/// Name, nodes, running pods, the pod, each node's reason ("" passes).
type NodesCase = (&'static str, Vec<Node>, Vec<Pod>, Pod, Vec<&'static str>);

const AFF: &str = REASON_AFFINITY;
const ANTI: &str = REASON_ANTI_AFFINITY;
const EXISTING: &str = REASON_EXISTING_ANTI_AFFINITY;

/// A term over arbitrary requirements.
fn t(topology_key: &str, reqs: &[(&str, Operator, &[&str])]) -> PodAffinityTerm {
    let requirements: Vec<Requirement> = reqs.iter().map(|(k, op, v)| req(k, *op, v)).collect();
    PodAffinityTerm {
        label_selector: Some(LabelSelector { requirements }),
        topology_key: topology_key.into(),
        ..PodAffinityTerm::default()
    }
}

/// Sets a pod's required affinity and anti-affinity terms.
fn terms(p: PodBuilder, affinity: Vec<PodAffinityTerm>, anti: Vec<PodAffinityTerm>) -> PodBuilder {
    p.with(|p| {
        p.affinity.pod_required = affinity;
        p.affinity.anti_required = anti;
    })
}

/// One expected outcome per node, in node order: "" passes.
fn run(nodes: Vec<Node>, pods: Vec<Pod>, incoming: Pod) -> Vec<String> {
    let mut cl = cluster(nodes, pods);
    run_filter(&MatchInterPodAffinity, &mut cl, incoming)
        .into_iter()
        .map(|(_, r)| {
            assert!(r.len() <= 1, "one reason at most: {r:?}");
            r.into_iter().next().unwrap_or_default()
        })
        .collect()
}

/// Upstream's TestRequiredAffinitySingleNode, restated (machine1: region=r1, zone=z11).
#[test]
fn single_node_table() {
    let node1 = || {
        vec![
            node("machine1")
                .label("region", "r1")
                .label("zone", "z11")
                .build(),
        ]
    };
    let scan = || pod("e").label("service", "securityscan").on("machine1");
    let s1 = || pod("p").label("security", "S1");
    let in_scan = || t("region", &[("service", In, &["securityscan", "value2"])]);
    let anti_virus_node = || t("node", &[("service", In, &["antivirusscan", "value2"])]);
    let cases: Vec<(&str, Vec<Pod>, Pod, &str)> = vec![
        ("no required terms, no pods", vec![], pod("p").build(), ""),
        (
            "affinity In matches the existing pod",
            vec![scan().build()],
            terms(s1(), vec![in_scan()], vec![]).build(),
            "",
        ),
        (
            "affinity NotIn matches the existing pod",
            vec![scan().build()],
            terms(
                s1(),
                vec![t(
                    "region",
                    &[("service", NotIn, &["securityscan3", "value3"])],
                )],
                vec![],
            )
            .build(),
            "",
        ),
        (
            "affinity looks in another namespace",
            vec![scan().ns("ns").build()],
            terms(
                s1(),
                vec![PodAffinityTerm {
                    namespaces: vec!["DiffNameSpace".into()],
                    ..in_scan()
                }],
                vec![],
            )
            .build(),
            AFF,
        ),
        (
            "affinity selector matches nothing and the node lacks the empty topology key",
            vec![scan().build()],
            terms(
                pod("p").label("service", "securityscan"),
                vec![t("", &[("service", In, &["antivirusscan", "value2"])])],
                vec![],
            )
            .build(),
            AFF,
        ),
        (
            "several affinity terms with different operators, all matched",
            vec![scan().build()],
            terms(
                s1(),
                vec![
                    t(
                        "region",
                        &[("service", Exists, &[]), ("wrongkey", DoesNotExist, &[])],
                    ),
                    t(
                        "region",
                        &[
                            ("service", In, &["securityscan"]),
                            ("service", NotIn, &["WrongValue"]),
                        ],
                    ),
                ],
                vec![],
            )
            .build(),
            "",
        ),
        (
            "requirements of a term are ANDed: one fails",
            vec![scan().build()],
            terms(
                s1(),
                vec![
                    t(
                        "region",
                        &[("service", Exists, &[]), ("wrongkey", DoesNotExist, &[])],
                    ),
                    t(
                        "region",
                        &[
                            ("service", In, &["securityscan2"]),
                            ("service", NotIn, &["WrongValue"]),
                        ],
                    ),
                ],
                vec![],
            )
            .build(),
            AFF,
        ),
        (
            "affinity and anti-affinity both satisfied",
            vec![scan().build()],
            terms(s1(), vec![in_scan()], vec![anti_virus_node()]).build(),
            "",
        ),
        (
            "affinity, anti-affinity and the existing pod's anti-affinity all satisfied",
            vec![terms(scan(), vec![], vec![anti_virus_node()]).build()],
            terms(s1(), vec![in_scan()], vec![anti_virus_node()]).build(),
            "",
        ),
        (
            "affinity satisfied, anti-affinity not",
            vec![scan().build()],
            terms(
                s1(),
                vec![in_scan()],
                vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
            )
            .build(),
            ANTI,
        ),
        (
            "the existing pod's anti-affinity rejects the pod",
            vec![
                terms(
                    scan(),
                    vec![],
                    vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
                )
                .build(),
            ],
            terms(
                pod("p").label("service", "securityscan"),
                vec![in_scan()],
                vec![anti_virus_node()],
            )
            .build(),
            EXISTING,
        ),
        (
            "the only matching pod runs nowhere and the pod does not match its own term",
            vec![pod("e").label("service", "securityscan").build()],
            terms(
                pod("p").label("service", "securityscan"),
                vec![t(
                    "region",
                    &[("service", NotIn, &["securityscan", "value2"])],
                )],
                vec![],
            )
            .build(),
            AFF,
        ),
        (
            "existing anti-affinity applies to a pod without terms",
            vec![
                terms(
                    scan(),
                    vec![],
                    vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
                )
                .build(),
            ],
            pod("p").label("service", "securityscan").build(),
            EXISTING,
        ),
        (
            "existing anti-affinity with NotIn does not select the pod",
            vec![
                terms(
                    scan(),
                    vec![],
                    vec![t(
                        "zone",
                        &[("service", NotIn, &["securityscan", "value2"])],
                    )],
                )
                .build(),
            ],
            pod("p").label("service", "securityscan").build(),
            "",
        ),
        (
            "symmetry a1: the pod's own anti-affinity is reported first",
            vec![
                terms(
                    pod("e").label("security", "S1").on("machine1"),
                    vec![],
                    vec![t("zone", &[("security", Exists, &[])])],
                )
                .build(),
            ],
            terms(
                pod("p").label("service", "securityscan"),
                vec![],
                vec![
                    t("zone", &[("service", Exists, &[])]),
                    t("zone", &[("security", Exists, &[])]),
                ],
            )
            .build(),
            ANTI,
        ),
        (
            "symmetry a2: only the existing pod's anti-affinity matches",
            vec![
                terms(
                    scan(),
                    vec![],
                    vec![
                        t("zone", &[("service", Exists, &[])]),
                        t("zone", &[("security", Exists, &[])]),
                    ],
                )
                .build(),
            ],
            terms(s1(), vec![], vec![t("zone", &[("security", Exists, &[])])]).build(),
            EXISTING,
        ),
        (
            // Releases before the framework checked running pods' terms first and
            // reported "existing pods" here; v1.22 checks the pod's own terms first.
            "symmetry b1: both match each other, the pod's own anti-affinity comes first",
            vec![
                terms(
                    pod("e").label("def", "").label("xyz", "").on("machine1"),
                    vec![],
                    vec![
                        t("zone", &[("abc", Exists, &[])]),
                        t("zone", &[("def", Exists, &[])]),
                    ],
                )
                .build(),
            ],
            terms(
                pod("p").label("abc", "").label("xyz", ""),
                vec![],
                vec![
                    t("zone", &[("abc", Exists, &[])]),
                    t("zone", &[("def", Exists, &[])]),
                ],
            )
            .build(),
            ANTI,
        ),
    ];
    for (name, pods, incoming, want) in cases {
        assert_eq!(run(node1(), pods, incoming), vec![want], "{name}");
    }
}

/// Upstream's TestRequiredAffinityMultipleNodes, restated.
#[test]
fn multiple_nodes_table() {
    let china = |n: &str| node(n).label("region", "China").build();
    let china_az1 = |n: &str| node(n).label("region", "China").label("az", "az1").build();
    let india = |n: &str| node(n).label("region", "India").build();
    let rz = |n: &str, r: &str, z: &str| node(n).label("region", r).label("zone", z).build();
    let foo_exists = |key: &str| t(key, &[("foo", Exists, &[])]);
    let bar_exists = |key: &str| t(key, &[("bar", Exists, &[])]);
    let cases: Vec<NodesCase> = vec![
        (
            "nodes sharing the matching pod's region pass",
            vec![china("m1"), china_az1("m2"), india("m3")],
            vec![pod("p1").label("foo", "bar").on("m1").build()],
            pod("p").affinity("region", &[("foo", "bar")]).build(),
            vec!["", "", AFF],
        ),
        (
            "first pod of a group: nothing matches all terms anywhere, the pod matches its own",
            vec![rz("a", "r1", "az1"), rz("b", "r1", "az2")],
            vec![pod("p1").label("foo", "bar").on("a").build()],
            pod("p")
                .label("foo", "bar")
                .label("service", "securityscan")
                .affinity("zone", &[("foo", "bar")])
                .affinity("zone", &[("service", "securityscan")])
                .build(),
            vec!["", ""],
        ),
        (
            "anti-affinity rejects every node of the matching pod's region",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
            vec![pod("e").label("foo", "abc").on("a").build()],
            pod("p").anti_affinity("region", &[("foo", "abc")]).build(),
            vec![ANTI, ANTI],
        ),
        (
            "anti-affinity rejects when any one term matches",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
            vec![
                pod("e")
                    .label("foo", "abc")
                    .label("service", "securityscan")
                    .on("a")
                    .build(),
            ],
            pod("p")
                .anti_affinity("region", &[("foo", "abc")])
                .anti_affinity("zone", &[("service", "securityscan")])
                .build(),
            vec![ANTI, ANTI],
        ),
        (
            "anti-affinity leaves other regions free",
            vec![china("a"), china_az1("b"), india("c")],
            vec![pod("e").label("foo", "abc").on("a").build()],
            pod("p").anti_affinity("region", &[("foo", "abc")]).build(),
            vec![ANTI, ANTI, ""],
        ),
        (
            "pods of other namespaces are not selected, nor is the pod by their terms",
            vec![china("a"), china_az1("b"), india("c")],
            vec![
                pod("e1").ns("NS1").label("foo", "bar").on("a").build(),
                terms(
                    pod("e2").ns("NS2").on("c"),
                    vec![],
                    vec![t("region", &[("foo", In, &["123"])])],
                )
                .build(),
            ],
            pod("p")
                .ns("NS1")
                .label("foo", "123")
                .anti_affinity("region", &[("foo", "bar")])
                .build(),
            vec![ANTI, ANTI, ""],
        ),
        (
            "an existing term whose key no node has rejects nothing",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
            vec![
                terms(
                    pod("e").on("a"),
                    vec![],
                    vec![foo_exists("invalid-node-label")],
                )
                .build(),
            ],
            pod("p").label("foo", "").build(),
            vec!["", ""],
        ),
        (
            "the pod's term whose key no node has rejects nothing",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
            vec![pod("e").label("foo", "").on("a").build()],
            terms(pod("p"), vec![], vec![foo_exists("invalid-node-label")]).build(),
            vec!["", ""],
        ),
        (
            "each existing pod's term rejects its own domain",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
            vec![
                terms(pod("e1").on("a"), vec![], vec![foo_exists("zone")]).build(),
                terms(pod("e2").on("a"), vec![], vec![bar_exists("region")]).build(),
            ],
            pod("p").label("foo", "").label("bar", "").build(),
            vec![EXISTING, EXISTING],
        ),
        (
            "existing pods on two zones reject both, a third zone stays free",
            vec![
                rz("a", "r1", "z1"),
                rz("b", "r1", "z2"),
                rz("c", "r1", "z3"),
            ],
            vec![
                terms(
                    pod("e1").on("a"),
                    vec![],
                    vec![foo_exists("zone"), t("zone", &[("labelA", Exists, &[])])],
                )
                .build(),
                terms(
                    pod("e2").on("b"),
                    vec![],
                    vec![bar_exists("zone"), t("zone", &[("labelB", Exists, &[])])],
                )
                .build(),
            ],
            pod("p").label("foo", "").label("bar", "").build(),
            vec![EXISTING, EXISTING, ""],
        ),
        (
            "affinity terms: all must match one pod, then every key must be on the node",
            vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
            vec![pod("e").label("foo", "").label("bar", "").on("a").build()],
            terms(
                pod("p"),
                vec![foo_exists("region"), bar_exists("zone")],
                vec![],
            )
            .build(),
            vec!["", ""],
        ),
        (
            "a node without an affinity term's key fails even with the first-pod exception",
            vec![rz("a", "r1", "z1"), node("b").label("region", "r1").build()],
            vec![],
            pod("p")
                .label("foo", "")
                .label("bar", "")
                .with(|p| {
                    p.affinity.pod_required = vec![foo_exists("region"), bar_exists("zone")];
                })
                .build(),
            vec!["", AFF],
        ),
        (
            "a pod matching all terms on a node with only one key still disables the exception",
            vec![node("a").label("region", "r1").build(), rz("b", "r2", "z1")],
            vec![pod("e").label("foo", "").label("bar", "").on("a").build()],
            pod("p")
                .label("foo", "")
                .label("bar", "")
                .with(|p| {
                    p.affinity.pod_required = vec![foo_exists("region"), bar_exists("zone")];
                })
                .build(),
            vec![AFF, AFF],
        ),
    ];
    for (name, nodes, pods, incoming, want) in cases {
        assert_eq!(run(nodes, pods, incoming), want, "{name}");
    }
}

#[test]
fn namespaces_and_selectors() {
    let nodes = || {
        vec![
            node("a").label("zone", "z1").build(),
            node("b").label("zone", "z2").build(),
        ]
    };
    let web_on_a = |ns: &str| pod("e").ns(ns).label("app", "web").on("a").build();
    let ns_selected = |sel: Option<LabelSelector>| PodAffinityTerm {
        namespace_selector: sel,
        ..term("zone", &[("app", "web")])
    };
    let with_ns = |nss: Vec<crate::model::Namespace>, pods: Vec<Pod>, incoming: Pod| {
        let mut cl = cluster(nodes(), vec![]);
        for n in &nss {
            cl.upsert_namespace(n);
        }
        for p in pods {
            cl.add_pod(p).expect("test pod");
        }
        run_filter(&MatchInterPodAffinity, &mut cl, incoming)
            .into_iter()
            .map(|(_, r)| r.join(","))
            .collect::<Vec<_>>()
    };
    let teams = || {
        vec![
            namespace("t1", &[("team", "a")]),
            namespace("t2", &[("team", "b")]),
        ]
    };
    let team_a = || Some(selector(&[("team", "a")]));
    let anti = |term: PodAffinityTerm| {
        pod("p")
            .with(move |p| p.affinity.anti_required = vec![term])
            .build()
    };
    let cases: Vec<(&str, Vec<Pod>, Pod, Vec<&str>)> = vec![
        (
            "default: the pod's own namespace only",
            vec![web_on_a("other")],
            pod("p").anti_affinity("zone", &[("app", "web")]).build(),
            vec!["", ""],
        ),
        (
            "same namespace",
            vec![web_on_a("default")],
            pod("p").anti_affinity("zone", &[("app", "web")]).build(),
            vec![ANTI, ""],
        ),
        (
            "an empty namespace selector selects every namespace",
            vec![web_on_a("other")],
            anti(ns_selected(Some(LabelSelector::default()))),
            vec![ANTI, ""],
        ),
        (
            "a namespace selector selects by namespace labels",
            vec![web_on_a("t1")],
            anti(ns_selected(team_a())),
            vec![ANTI, ""],
        ),
        (
            "a namespace selector skips other namespaces",
            vec![web_on_a("t2")],
            anti(ns_selected(team_a())),
            vec!["", ""],
        ),
        (
            "listed namespaces and the selector add up",
            vec![web_on_a("x")],
            anti(PodAffinityTerm {
                namespaces: vec!["x".into()],
                ..ns_selected(team_a())
            }),
            vec![ANTI, ""],
        ),
        (
            "a nil label selector selects nothing",
            vec![web_on_a("default")],
            anti(PodAffinityTerm {
                label_selector: None,
                ..term("zone", &[])
            }),
            vec!["", ""],
        ),
        (
            "an empty label selector selects every pod of the namespace",
            vec![web_on_a("default")],
            anti(term("zone", &[])),
            vec![ANTI, ""],
        ),
        (
            "an existing pod's namespace selector is matched against the pod's namespace labels",
            vec![
                pod("e")
                    .ns("t2")
                    .on("a")
                    .with(|p| {
                        p.affinity.anti_required = vec![PodAffinityTerm {
                            namespace_selector: Some(selector(&[("team", "a")])),
                            ..term("zone", &[("app", "web")])
                        }]
                    })
                    .build(),
            ],
            pod("p").ns("t1").label("app", "web").build(),
            vec![EXISTING, ""],
        ),
        (
            "an existing pod's term ignores pods of unselected namespaces",
            vec![
                pod("e")
                    .ns("t1")
                    .on("a")
                    .with(|p| {
                        p.affinity.anti_required = vec![PodAffinityTerm {
                            namespace_selector: Some(selector(&[("team", "a")])),
                            ..term("zone", &[("app", "web")])
                        }]
                    })
                    .build(),
            ],
            pod("p").ns("t2").label("app", "web").build(),
            vec!["", ""],
        ),
        (
            "a namespace without a Namespace object has no labels for existing pods' selectors",
            vec![
                pod("e")
                    .ns("t1")
                    .on("a")
                    .with(|p| {
                        p.affinity.anti_required = vec![PodAffinityTerm {
                            namespace_selector: Some(LabelSelector {
                                requirements: vec![req("team", DoesNotExist, &[])],
                            }),
                            ..term("zone", &[("app", "web")])
                        }]
                    })
                    .build(),
            ],
            pod("p").ns("ghost").label("app", "web").build(),
            vec![EXISTING, ""],
        ),
        (
            "the incoming pod's affinity with a namespace selector",
            vec![web_on_a("t1")],
            pod("p")
                .with(|p| {
                    p.affinity.pod_required = vec![PodAffinityTerm {
                        namespace_selector: Some(selector(&[("team", "a")])),
                        ..term("zone", &[("app", "web")])
                    }]
                })
                .build(),
            vec!["", AFF],
        ),
        (
            "terminating pods still count for inter-pod affinity",
            vec![pod("e").label("app", "web").on("a").terminating().build()],
            pod("p").anti_affinity("zone", &[("app", "web")]).build(),
            vec![ANTI, ""],
        ),
    ];
    for (name, pods, incoming, want) in cases {
        assert_eq!(with_ns(teams(), pods, incoming), want, "{name}");
    }
}

/// The benchmark's shape: every pod keeps away from its own app on its host. The term
/// index must stay right while pods come and go.
#[test]
fn hostname_anti_affinity_follows_assign_and_unassign() {
    let mut cl = cluster(
        vec![node("a").build(), node("b").build(), node("c").build()],
        vec![],
    );
    let spread = |name: &str, app: &str| {
        pod(name)
            .label("app", app)
            .anti_affinity("kubernetes.io/hostname", &[("app", app)])
    };
    let p1 = cl
        .add_pod(spread("w1", "web").on("a").build())
        .expect("pod");
    cl.add_pod(spread("d1", "db").on("b").build()).expect("pod");
    let got = run_filter(&MatchInterPodAffinity, &mut cl, spread("w2", "web").build());
    assert_eq!(passing(&got), vec!["b", "c"]);
    assert_eq!(got[0].1, vec![ANTI.to_string()]);
    // A pod without terms is kept off only by the running pod's term.
    let got = run_filter(
        &MatchInterPodAffinity,
        &mut cl,
        pod("x").label("app", "web").build(),
    );
    assert_eq!(got[0].1, vec![EXISTING.to_string()]);
    cl.unassign(p1);
    let got = run_filter(
        &MatchInterPodAffinity,
        &mut cl,
        pod("x").label("app", "web").build(),
    );
    assert_eq!(passing(&got), vec!["a", "b", "c"]);
    let b = cl.node_by_name("b").expect("node");
    cl.assign(p1, b);
    let got = run_filter(
        &MatchInterPodAffinity,
        &mut cl,
        pod("x").label("app", "web").build(),
    );
    assert_eq!(passing(&got), vec!["a", "c"]);
    cl.remove_node("b");
    let got = run_filter(
        &MatchInterPodAffinity,
        &mut cl,
        pod("x").label("app", "web").build(),
    );
    assert_eq!(passing(&got), vec!["a", "c"]);
}

#[test]
fn skips_when_nothing_can_reject() {
    let mut cl = cluster(
        vec![node("a").build()],
        vec![
            pod("e")
                .label("app", "db")
                .on("a")
                .anti_affinity("kubernetes.io/hostname", &[("app", "db")])
                .build(),
        ],
    );
    let info = cl.compile_pod(pod("p").label("app", "web").build());
    let ctx = CycleContext {
        cluster: &cl,
        pod: &info,
        nominated: false,
    };
    assert!(matches!(
        MatchInterPodAffinity.prepare(ctx),
        FilterPrep::Skip
    ));
    let info = cl.compile_pod(pod("p").label("app", "db").build());
    let ctx = CycleContext {
        cluster: &cl,
        pod: &info,
        nominated: false,
    };
    assert!(matches!(
        MatchInterPodAffinity.prepare(ctx),
        FilterPrep::Check(_)
    ));
}
