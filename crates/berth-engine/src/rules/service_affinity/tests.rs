use super::*;
use crate::model::{Pod, PodSelector};
use crate::testkit::*;

fn service(ns: &str, name: &str, sel: &[(&str, &str)]) -> PodSelector {
    selector_object(SelectorKind::Service, ns, name, sel)
}

fn nodes() -> Vec<crate::model::Node> {
    vec![
        node("machine1")
            .label("region", "r1")
            .label("zone", "z11")
            .build(),
        node("machine2")
            .label("region", "r1")
            .label("zone", "z12")
            .build(),
        node("machine3")
            .label("region", "r2")
            .label("zone", "z21")
            .build(),
        node("machine4")
            .label("region", "r2")
            .label("zone", "z22")
            .build(),
        node("machine5")
            .label("region", "r2")
            .label("zone", "z22")
            .build(),
    ]
}

struct Case {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    services: Vec<PodSelector>,
    labels: &'static [&'static str],
    node: &'static str,
    pass: bool,
}

/// Upstream's TestServiceAffinity, restated: a pod labelled foo=bar, one existing pod,
/// and the verdict on one node.
#[test]
fn upstream_table() {
    let sel = [("foo", "bar")];
    let labelled = |name: &str| pod(name).label("foo", "bar");
    let cases = vec![
        Case {
            name: "nothing scheduled",
            pod: pod("p").build(),
            pods: vec![],
            services: vec![],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "pod with region label match",
            pod: pod("p").node_selector("region", "r1").build(),
            pods: vec![],
            services: vec![],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "pod with region label mismatch",
            pod: pod("p").node_selector("region", "r2").build(),
            pods: vec![],
            services: vec![],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "service pod on same node",
            pod: labelled("p").build(),
            pods: vec![labelled("e").on("machine1").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "service pod on different node, region match",
            pod: labelled("p").build(),
            pods: vec![labelled("e").on("machine2").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "service pod on different node, region mismatch",
            pod: labelled("p").build(),
            pods: vec![labelled("e").on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "service in different namespace, region mismatch",
            pod: labelled("p").ns("ns1").build(),
            pods: vec![labelled("e").ns("ns1").on("machine3").build()],
            services: vec![service("ns2", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "pod in different namespace, region mismatch",
            pod: labelled("p").ns("ns1").build(),
            pods: vec![labelled("e").ns("ns2").on("machine3").build()],
            services: vec![service("ns1", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "service and pod in same namespace, region mismatch",
            pod: labelled("p").ns("ns1").build(),
            pods: vec![labelled("e").ns("ns1").on("machine3").build()],
            services: vec![service("ns1", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "service pod on different node, multiple labels, not all match",
            pod: labelled("p").build(),
            pods: vec![labelled("e").on("machine2").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region", "zone"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "service pod on different node, multiple labels, all match",
            pod: labelled("p").build(),
            pods: vec![labelled("e").on("machine5").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region", "zone"],
            node: "machine4",
            pass: true,
        },
    ];
    run_cases(cases);
}

#[test]
fn edge_cases() {
    let sel = [("app", "web")];
    let web = |name: &str| pod(name).label("app", "web");
    let cases = vec![
        Case {
            name: "a peer must carry all of the pod's labels, not just the service's",
            pod: web("p").label("tier", "front").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a peer with extra labels still pins",
            pod: web("p").build(),
            pods: vec![web("e").label("tier", "front").on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "without a service, peers do not pin",
            pod: web("p").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a service without selector selects nothing",
            pod: web("p").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![PodSelector {
                selector: None,
                ..service("default", "s", &[])
            }],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a service with an empty selector selects every pod",
            pod: web("p").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![service("default", "s", &[])],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "a terminating peer still pins",
            pod: web("p").build(),
            pods: vec![web("e").terminating().on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "the node selector wins over the peer",
            pod: web("p").node_selector("region", "r1").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a peer's node without the label leaves it free",
            pod: web("p").build(),
            pods: vec![web("e").on("bare").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["region"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a node-selector value no node has fails every node",
            pod: web("p").node_selector("region", "r9").build(),
            pods: vec![],
            services: vec![],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
        Case {
            name: "an affinity label nobody uses is free",
            pod: web("p").build(),
            pods: vec![web("e").on("machine3").build()],
            services: vec![service("default", "s", &sel)],
            labels: &["rack"],
            node: "machine1",
            pass: true,
        },
        Case {
            name: "a pod without labels is pinned by any placed pod of its namespace",
            pod: pod("p").build(),
            pods: vec![pod("e").on("machine3").build()],
            services: vec![service("default", "s", &[])],
            labels: &["region"],
            node: "machine1",
            pass: false,
        },
    ];
    run_cases(cases);
}

fn run_cases(cases: Vec<Case>) {
    for c in cases {
        let mut all_nodes = nodes();
        all_nodes.push(node("bare").build());
        let mut cl = cluster(all_nodes, c.pods);
        for s in &c.services {
            cl.upsert_selector_object(s);
        }
        let rule = CheckServiceAffinity::new(c.labels.iter().map(|s| s.to_string()).collect());
        let got = run_filter(&rule, &mut cl, c.pod);
        let (_, reasons) = got
            .iter()
            .find(|(n, _)| n == c.node)
            .expect("node in cluster");
        assert_eq!(reasons.is_empty(), c.pass, "{}", c.name);
        assert!(
            reasons.is_empty() || reasons == &vec![REASON.to_string()],
            "{}",
            c.name
        );
    }
}

/// With peers on nodes that disagree, the first node in the cluster's node order decides.
#[test]
fn first_peer_follows_node_order() {
    let mut cl = cluster(
        nodes(),
        vec![
            pod("e1").label("app", "web").on("machine3").build(),
            pod("e2").label("app", "web").on("machine1").build(),
        ],
    );
    cl.upsert_selector_object(&service("default", "s", &[("app", "web")]));
    let first = cl
        .node_order()
        .iter()
        .map(|id| cl.node(*id).name().to_string())
        .find(|n| n == "machine1" || n == "machine3")
        .expect("both nodes listed");
    let rule = CheckServiceAffinity::new(vec!["region".into()]);
    let got = run_filter(&rule, &mut cl, pod("p").label("app", "web").build());
    let region_of = |n: &str| {
        if n == "machine1" || n == "machine2" {
            "r1"
        } else {
            "r2"
        }
    };
    for (n, reasons) in &got {
        assert_eq!(reasons.is_empty(), region_of(n) == region_of(&first), "{n}");
    }
}

/// Whatever order the peers come in, the first of their nodes in the cluster's node order
/// decides when they disagree: peers that agree with the first one found count too. The
/// regions take turns in node order (a, b, a), so skipping a peer would move the answer.
#[test]
fn first_peer_follows_node_order_in_every_arrival_order() {
    let machines = [("n1", "a", "z1"), ("n2", "b", "z2"), ("n3", "a", "z3")];
    let region_of = |n: &str| machines.iter().find(|m| m.0 == n).map(|m| m.1);
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for order in orders {
        let nodes = machines
            .iter()
            .map(|(n, region, zone)| {
                node(n)
                    .label("region", region)
                    .label("topology.kubernetes.io/zone", zone)
                    .build()
            })
            .collect();
        let peers = order
            .iter()
            .enumerate()
            .map(|(i, m)| {
                pod(&format!("e{i}"))
                    .label("app", "web")
                    .on(machines[*m].0)
                    .build()
            })
            .collect();
        let mut cl = cluster(nodes, peers);
        cl.upsert_selector_object(&service("default", "s", &[("app", "web")]));
        let first = cl.node(cl.node_order()[0]).name().to_string();
        let rule = CheckServiceAffinity::new(vec!["region".into()]);
        let got = run_filter(&rule, &mut cl, pod("p").label("app", "web").build());
        for (n, reasons) in &got {
            assert_eq!(
                reasons.is_empty(),
                region_of(n) == region_of(&first),
                "{order:?}: {n}"
            );
        }
    }
}
