//! A pod's requests as v1.36 computes them (component-helpers' `resource/helpers.go`:
//! `PodRequests`, `AggregateContainerRequests`; scheduler framework `calculateResource` and
//! `getNonMissingContainerRequests`), and v1.22's where none of the newer fields is set.

use crate::labels::Interner;
use crate::model::{Container, ContainerPort, Pod};
use crate::podinfo::PodInfo;
use crate::resources::{DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST};
use crate::testkit::pod;

const MI: i64 = 1024 * 1024;

fn compiled(pod: Pod) -> PodInfo {
    PodInfo::compile(pod, &mut Interner::default())
}

fn container(name: &str, cpu: i64) -> Container {
    Container {
        name: name.into(),
        requests: vec![("cpu".into(), cpu)],
        ..Container::default()
    }
}

/// A bound pod whose only container asks for `spec` CPU and, by its status, was admitted
/// with `allocated` and runs with `actual`.
fn resizing(spec: i64, allocated: Option<i64>, actual: Option<Vec<i64>>, infeasible: bool) -> Pod {
    let mut p = pod("p").on("n1").build();
    p.containers = vec![Container {
        allocated: allocated.map(|v| vec![("cpu".into(), v)]),
        actual: actual.map(|v| v.into_iter().map(|v| ("cpu".into(), v)).collect()),
        ..container("c", spec)
    }];
    p.resize_infeasible = infeasible;
    p
}

#[test]
fn filter_requests() {
    let cases: Vec<(&str, Pod, i64, i64)> = vec![
        (
            "no sidecar: v1.22's max(sum of containers, largest init container)",
            pod("p").req(800, 100 * MI).init(1000, 50 * MI).build(),
            1000,
            100 * MI,
        ),
        (
            "a sidecar runs beside the app: 1.5 + 1 CPU, not max(1.5, 1)",
            pod("p").req(1500, 0).sidecar(1000, 0).build(),
            2500,
            0,
        ),
        (
            // KEP 753's example: sidecar 1, init 2 beside it (3), sidecar 0.5; the app 1
            // runs beside both sidecars (2.5); the larger is 3.
            "a regular init container counts the sidecars started before it",
            pod("p")
                .req(1000, 0)
                .sidecar(1000, 0)
                .init(2000, 0)
                .sidecar(500, 0)
                .build(),
            3000,
            0,
        ),
        (
            "a sidecar started after a regular init container does not run beside it",
            pod("p").req(100, 0).init(2000, 0).sidecar(1500, 0).build(),
            2000,
            0,
        ),
        (
            "pod-level cpu replaces the containers' sum; memory stays the containers'",
            pod("p").req(500, 64 * MI).pod_level("cpu", 3000).build(),
            3000,
            64 * MI,
        ),
        (
            "pod-level requests, then the overhead on top",
            pod("p")
                .req(0, 0)
                .pod_level("memory", 512 * MI)
                .overhead("memory", 16 * MI)
                .build(),
            0,
            528 * MI,
        ),
        (
            "a resize down not yet applied: the larger running requests count",
            resizing(500, Some(1000), Some(vec![1000]), false),
            1000,
            0,
        ),
        (
            "a resize up admitted but not yet running: the admitted requests count",
            resizing(2000, Some(2000), Some(vec![1000]), false),
            2000,
            0,
        ),
        (
            "a resize up deferred (not admitted yet): the spec counts",
            resizing(2000, Some(1000), Some(vec![1000]), false),
            2000,
            0,
        ),
        (
            "an infeasible resize: the spec is ignored, the running requests count",
            resizing(4000, Some(1000), Some(vec![1000]), true),
            1000,
            0,
        ),
        (
            "an infeasible resize with no resources reported: the spec (no status is read)",
            resizing(4000, None, None, true),
            4000,
            0,
        ),
        (
            "an infeasible resize with resources reported but nothing in them counts nothing",
            resizing(4000, None, Some(vec![]), true),
            0,
            0,
        ),
        (
            "admitted requests alone are not read without running resources",
            resizing(500, Some(1000), None, false),
            500,
            0,
        ),
        (
            // Per container, then summed: 1000 + 2000, not max(500 + 2000, 1000 + 1500).
            "containers resized in opposite directions count each one's largest",
            {
                let mut p = resizing(500, Some(1000), Some(vec![1000]), false);
                p.containers.push(Container {
                    allocated: Some(vec![("cpu".into(), 1500)]),
                    actual: Some(vec![("cpu".into(), 1500)]),
                    ..container("d", 2000)
                });
                p
            },
            3000,
            0,
        ),
        (
            "an infeasible resize leaves other containers' and init containers' specs counted",
            {
                let mut p = resizing(4000, Some(1000), Some(vec![1000]), true);
                p.containers.push(container("plain", 300));
                p.init_containers.push(container("setup", 2500));
                p
            },
            2500,
            0,
        ),
        (
            "a resized sidecar counts its largest beside the app container",
            {
                let mut p = resizing(500, None, Some(vec![500]), false);
                p.init_containers.push(Container {
                    restartable: true,
                    allocated: Some(vec![("cpu".into(), 800)]),
                    actual: Some(vec![("cpu".into(), 800)]),
                    ..container("proxy", 200)
                });
                p
            },
            1300,
            0,
        ),
        (
            "a pod-level resize up admitted: the admitted pod-level cpu counts",
            {
                let mut p = pod("p").on("n1").req(500, 0).pod_level("cpu", 2000).build();
                p.allocated_pod_level = Some(vec![("cpu".into(), 2000)]);
                p.actual_pod_level = Some(vec![("cpu".into(), 1000)]);
                p
            },
            2000,
            0,
        ),
        (
            "an infeasible pod-level resize: the running pod-level cpu counts",
            {
                let mut p = pod("p").on("n1").req(500, 0).pod_level("cpu", 4000).build();
                p.allocated_pod_level = Some(vec![("cpu".into(), 1000)]);
                p.actual_pod_level = Some(vec![("cpu".into(), 1000)]);
                p.resize_infeasible = true;
                p
            },
            1000,
            0,
        ),
        (
            "pod-level status without resources reported: the pod-level spec",
            {
                let mut p = pod("p").on("n1").req(500, 0).pod_level("cpu", 4000).build();
                p.allocated_pod_level = Some(vec![("cpu".into(), 1000)]);
                p.resize_infeasible = true;
                p
            },
            4000,
            0,
        ),
    ];
    for (name, p, cpu, memory) in cases {
        let info = compiled(p);
        assert_eq!(
            (info.request.milli_cpu, info.request.memory),
            (cpu, memory),
            "{name}"
        );
    }
}

#[test]
fn a_pending_pod_counts_its_spec_whatever_its_status_says() {
    let mut p = resizing(500, Some(1000), Some(vec![1000]), false);
    p.node_name = None;
    assert_eq!(compiled(p).request.milli_cpu, 500);
}

#[test]
fn scoring_requests() {
    let two_empty = {
        let mut p = pod("p").pod_level("cpu", 3000).build();
        p.containers.push(Container {
            name: "c2".into(),
            ..Container::default()
        });
        p
    };
    let cases: Vec<(&str, Pod, i64, i64)> = vec![
        (
            "no request: the defaults",
            pod("p").build(),
            DEFAULT_MILLI_CPU_REQUEST,
            DEFAULT_MEMORY_REQUEST,
        ),
        (
            "an explicit zero stays zero",
            pod("p").req(0, 0).build(),
            0,
            0,
        ),
        (
            "a sidecar without requests counts the defaults beside the app container's",
            pod("p").sidecar(0, 0).build(),
            DEFAULT_MILLI_CPU_REQUEST,
            DEFAULT_MEMORY_REQUEST,
        ),
        (
            "pod-level cpu: no cpu default; memory defaulted per container lacking it",
            two_empty,
            3000,
            2 * DEFAULT_MEMORY_REQUEST,
        ),
    ];
    for (name, p, cpu, memory) in cases {
        let info = compiled(p);
        assert_eq!(
            (info.nonzero_milli_cpu, info.nonzero_memory),
            (cpu, memory),
            "{name}"
        );
    }
}

#[test]
fn sidecar_requests_without_defaults_are_counted_per_container() {
    // The app container lacks both requests (defaults), the sidecar asks for zero cpu and
    // nothing for memory: 100m + 0, 200 MiB + 200 MiB.
    let mut p = pod("p").build();
    p.init_containers.push(Container {
        name: "proxy".into(),
        requests: vec![("cpu".into(), 0)],
        restartable: true,
        ..Container::default()
    });
    let info = compiled(p);
    assert_eq!(
        (info.nonzero_milli_cpu, info.nonzero_memory),
        (DEFAULT_MILLI_CPU_REQUEST, 2 * DEFAULT_MEMORY_REQUEST)
    );
}

#[test]
fn sidecar_host_ports_count_and_regular_init_ports_do_not() {
    let port = |host_port| ContainerPort {
        host_port,
        ..ContainerPort::default()
    };
    let mut p = pod("p").build();
    p.containers[0].ports = vec![port(8080)];
    p.init_containers = vec![
        Container {
            name: "setup".into(),
            ports: vec![port(7070)],
            ..Container::default()
        },
        Container {
            name: "proxy".into(),
            ports: vec![port(9090)],
            restartable: true,
            ..Container::default()
        },
    ];
    let ports: Vec<i32> = compiled(p).host_ports.iter().map(|h| h.port).collect();
    assert_eq!(ports, [9090, 8080]);
}

#[test]
fn pod_level_requests_make_a_pod_burstable() {
    assert!(compiled(pod("p").build()).is_best_effort());
    assert!(!compiled(pod("p").pod_level("memory", MI).build()).is_best_effort());
}
