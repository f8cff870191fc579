use super::*;
use crate::model::{Container, Pod};
use crate::testkit::*;

fn rule(shape: &[(i64, i64)], resources: &[(&str, i64)]) -> RequestedToCapacityRatio {
    let shape: Vec<ShapePoint> = shape
        .iter()
        .map(|(u, s)| ShapePoint {
            utilization: *u,
            score: *s,
        })
        .collect();
    let resources: Vec<ResourceWeight> = resources
        .iter()
        .map(|(n, w)| ResourceWeight {
            name: n.to_string(),
            weight: *w,
        })
        .collect();
    RequestedToCapacityRatio::new(&shape, &resources)
}

/// A pod without containers: no requests, not even the non-zero defaults.
fn empty(name: &str) -> PodBuilder {
    pod(name).with(|p: &mut Pod| p.containers.clear())
}

/// Upstream's TestBrokenLinearFunction. Its points are used as the rule's (already
/// scaled) shape directly, since the policy form would multiply the scores by 10.
#[test]
fn broken_linear_function() {
    type Points = &'static [(i64, i64)];
    let cases: &[(Points, Points)] = &[
        (
            &[(10, 1), (90, 9)],
            &[
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            &[(0, 2), (40, 10), (100, 0)],
            &[
                (-10, 2),
                (0, 2),
                (20, 6),
                (30, 8),
                (40, 10),
                (70, 5),
                (100, 0),
                (110, 0),
            ],
        ),
        (
            &[(0, 2), (40, 2), (100, 2)],
            &[
                (-10, 2),
                (0, 2),
                (20, 2),
                (30, 2),
                (40, 2),
                (70, 2),
                (100, 2),
                (110, 2),
            ],
        ),
    ];
    for (points, assertions) in cases {
        let r = RequestedToCapacityRatio {
            shape: points.to_vec(),
            resources: vec![],
        };
        for (p, want) in *assertions {
            assert_eq!(r.shape_score(*p), *want, "points={points:?} p={p}");
        }
    }
    let none = RequestedToCapacityRatio {
        shape: vec![],
        resources: vec![],
    };
    assert_eq!(none.shape_score(50), 0, "an empty shape scores 0");
}

type Case = (
    &'static str,
    Vec<crate::model::Node>,
    Vec<Pod>,
    Pod,
    Vec<i64>,
);

fn run(r: &RequestedToCapacityRatio, cases: Vec<Case>) {
    for (name, nodes, running, p, want) in cases {
        let mut cl = cluster(nodes, running);
        let got: Vec<i64> = run_score(r, &mut cl, p)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// Upstream's TestRequestedToCapacityRatioScoringStrategy (shape 0->10, 100->0; cpu and
/// memory weight 1).
#[test]
fn upstream_default_shape() {
    let r = rule(&[(0, 10), (100, 0)], &[("cpu", 1), ("memory", 1)]);
    let sized = |n: &str, cpu: i64, mem: i64| node(n).cpu(cpu).mem(mem).build();
    let second = Container {
        name: "c2".into(),
        requests: vec![("cpu".into(), 2000), ("memory".into(), 3000)],
        ..Container::default()
    };
    run(
        &r,
        vec![
            (
                "nothing scheduled, nothing requested",
                vec![sized("node1", 4000, 10000), sized("node2", 4000, 10000)],
                vec![
                    empty("e1").on("node1").build(),
                    empty("e2").on("node1").build(),
                ],
                empty("p").build(),
                vec![100, 100],
            ),
            (
                "nothing scheduled, resources requested, differently sized nodes",
                vec![sized("node1", 4000, 10000), sized("node2", 6000, 10000)],
                vec![
                    empty("e1").on("node1").build(),
                    empty("e2").on("node1").build(),
                ],
                pod("p").req(1000, 2000).container(second).build(),
                vec![38, 50],
            ),
            (
                "no resources requested, pods scheduled with resources",
                vec![sized("node1", 4000, 10000), sized("node2", 6000, 10000)],
                vec![
                    pod("e1").req(3000, 5000).on("node1").build(),
                    pod("e2").req(3000, 5000).on("node2").build(),
                ],
                empty("p").build(),
                vec![38, 50],
            ),
        ],
    );
}

fn gpu_node(n: &str, foo: i64, bar: i64) -> crate::model::Node {
    node(n)
        .cpu(4000)
        .mem(10000 * MI)
        .alloc("intel.com/foo", foo)
        .alloc("intel.com/bar", bar)
        .build()
}

/// Upstream's TestResourceBinPackingSingleExtended (shape 0->0, 100->1; intel.com/foo).
#[test]
fn upstream_single_extended() {
    let r = rule(&[(0, 0), (100, 1)], &[("intel.com/foo", 1)]);
    let nodes = || vec![gpu_node("node1", 8, 0), gpu_node("node2", 4, 0)];
    run(
        &r,
        vec![
            (
                "nothing scheduled, nothing requested",
                nodes(),
                vec![],
                empty("p").build(),
                vec![0, 0],
            ),
            (
                "resources requested, pods scheduled with less resources",
                nodes(),
                vec![empty("e").on("node1").build()],
                pod("p").res("intel.com/foo", 2).build(),
                vec![2, 5],
            ),
            (
                "resources requested, pods scheduled with resources, on node with existing pod running",
                nodes(),
                vec![pod("e").res("intel.com/foo", 2).on("node2").build()],
                pod("p").res("intel.com/foo", 2).build(),
                vec![2, 10],
            ),
            (
                "resources requested, pods scheduled with more resources",
                nodes(),
                vec![empty("e").on("node1").build()],
                pod("p").res("intel.com/foo", 4).build(),
                vec![5, 10],
            ),
        ],
    );
}

/// Upstream's TestResourceBinPackingMultipleExtended (foo weight 3, bar weight 5).
#[test]
fn upstream_multiple_extended() {
    let r = rule(
        &[(0, 0), (100, 1)],
        &[("intel.com/foo", 3), ("intel.com/bar", 5)],
    );
    let nodes = || vec![gpu_node("node1", 8, 4), gpu_node("node2", 4, 8)];
    let req = |name: &str, foo: i64, bar: i64| {
        pod(name)
            .res("intel.com/foo", foo)
            .res("intel.com/bar", bar)
    };
    run(
        &r,
        vec![
            (
                "nothing scheduled, nothing requested",
                nodes(),
                vec![],
                empty("p").build(),
                vec![0, 0],
            ),
            (
                "resources requested, pods scheduled with less resources",
                nodes(),
                vec![empty("e").build()],
                req("p", 2, 2).build(),
                vec![4, 3],
            ),
            (
                "resources requested, pods scheduled with resources, on node with existing pod running",
                nodes(),
                vec![req("e", 4, 2).on("node2").build()],
                req("p", 2, 2).build(),
                vec![4, 7],
            ),
            (
                "resources requested, pods scheduled with more resources",
                nodes(),
                vec![empty("e").build()],
                req("p", 4, 2).build(),
                vec![5, 5],
            ),
        ],
    );
}

#[test]
fn edge_cases() {
    let least = rule(&[(0, 10), (100, 0)], &[("cpu", 1), ("memory", 1)]);
    run(
        &least,
        vec![
            // Memory is fully used (score 0) and drops out of the mean: cpu 50% -> 50.
            (
                "resources scoring 0 are left out",
                vec![node("n").cpu(1000).mem(1000).build()],
                vec![],
                pod("p").req(500, 1000).build(),
                vec![50],
            ),
            (
                "allocatable 0 is left out",
                vec![node("n").cpu(1000).mem(0).build()],
                vec![],
                pod("p").req(250, 10).build(),
                vec![75],
            ),
            (
                "over capacity uses the value at 100",
                vec![node("n").cpu(1000).mem(1000).build()],
                vec![],
                pod("p").req(5000, 5000).build(),
                vec![0],
            ),
            // 1/3 used: floor(33.3) = 33 -> 100 - 33 = 67 (v1.20 rounded utilization up: 66).
            (
                "utilization is floored",
                vec![node("n").cpu(3000).mem(3000).build()],
                vec![],
                pod("p").req(1000, 1000).build(),
                vec![67],
            ),
            (
                "containers without requests count the defaults",
                vec![node("n").cpu(1000).mem(1000 * MI).build()],
                vec![],
                pod("p").build(),
                // cpu 10% -> 90, memory 20% -> 80.
                vec![85],
            ),
        ],
    );
    let weighted = rule(
        &[(0, 10), (100, 0)],
        &[("cpu", 1), ("memory", 1), ("cpu", 3)],
    );
    run(
        &weighted,
        vec![(
            "a repeated resource keeps its last weight",
            vec![node("n").cpu(1000).mem(1000).build()],
            vec![],
            // cpu 50% -> 50 (weight 3), memory 10% -> 90 (weight 1): 240 / 4 = 60.
            pod("p").req(500, 100).build(),
            vec![60],
        )],
    );
    run(
        &least,
        vec![(
            "the mean is rounded half away from zero",
            vec![node("n").cpu(1000).mem(1000).build()],
            vec![],
            // cpu 45% -> 55, memory 50% -> 50: 105 / 2 = 52.5 -> 53.
            pod("p").req(450, 500).build(),
            vec![53],
        )],
    );
    let odd = rule(
        &[(0, 10), (100, 0)],
        &[("pods", 1), ("foo", 1), ("ephemeral-storage", 1)],
    );
    run(
        &odd,
        vec![(
            "pods and unprefixed names never score; ephemeral storage uses plain requests",
            vec![
                node("n")
                    .alloc("foo", 10)
                    .alloc("ephemeral-storage", 1000)
                    .build(),
            ],
            vec![],
            pod("p").res("foo", 5).res("ephemeral-storage", 250).build(),
            vec![75],
        )],
    );
    let none = rule(&[(0, 10), (100, 0)], &[]);
    run(
        &none,
        vec![(
            "no resources score 0",
            vec![node("n").build()],
            vec![],
            pod("p").req(1, 1).build(),
            vec![0],
        )],
    );
}
