use super::*;
use crate::testkit::*;

fn running(n: usize, host_network: bool) -> Vec<crate::model::Pod> {
    (0..n)
        .map(|i| {
            let p = pod(&format!("r{i}")).on("n");
            if host_network { p.host_network() } else { p }.build()
        })
        .collect()
}

#[test]
fn table() {
    let cases = vec![
        (
            "/30 has 1 usable address, free",
            "10.0.0.0/30",
            running(0, false),
            pod("p").build(),
            true,
        ),
        (
            "/30 full after one pod",
            "10.0.0.0/30",
            running(1, false),
            pod("p").build(),
            false,
        ),
        (
            "/29 has 5",
            "10.0.0.0/29",
            running(4, false),
            pod("p").build(),
            true,
        ),
        (
            "/29 full at 5",
            "10.0.0.0/29",
            running(5, false),
            pod("p").build(),
            false,
        ),
        (
            "hostNetwork pods use no address",
            "10.0.0.0/30",
            running(3, true),
            pod("p").build(),
            true,
        ),
        (
            "a hostNetwork pod fits a full node",
            "10.0.0.0/30",
            running(1, false),
            pod("p").host_network().build(),
            true,
        ),
        (
            "/32 has no usable address",
            "10.0.0.1/32",
            running(0, false),
            pod("p").build(),
            false,
        ),
        (
            "IPv6 /64 is effectively unlimited",
            "fd00::/64",
            running(5, false),
            pod("p").build(),
            true,
        ),
        (
            "IPv6 /126 has 1",
            "fd00::/126",
            running(1, false),
            pod("p").build(),
            false,
        ),
    ];
    for (name, cidr, r, p, fits) in cases {
        let mut cl = cluster(vec![node("n").cidr(cidr).build()], r);
        let want: Vec<String> = if fits { vec![] } else { vec![REASON.into()] };
        assert_eq!(
            run_filter(&CheckPodCidrCapacity::pod_cidr(), &mut cl, p)[0].1,
            want,
            "{name}"
        );
    }
}

#[test]
fn dual_stack_adds_up_and_no_cidr_is_unlimited() {
    let mut cl = cluster(
        vec![
            node("n").cidr("10.0.0.0/30").cidr("fd00::/126").build(),
            node("m").build(),
        ],
        running(1, false),
    );
    let got = run_filter(&CheckPodCidrCapacity::pod_cidr(), &mut cl, pod("p").build());
    assert_eq!(passing(&got), vec!["n", "m"]);
}

/// (name, source, fall back to pod CIDRs, node, running pods needing an IP, reasons)
type SourceCase = (
    &'static str,
    Source,
    bool,
    crate::model::Node,
    usize,
    Vec<String>,
);

#[test]
fn capacity_sources() {
    let label = || Source::Label("example.com/pod-ips".into());
    let annotation = || Source::Annotation("example.com/pod-ips".into());
    let resource = || Source::Resource("example.com/pod-ips".into());
    let full = || vec![REASON.to_string()];
    let cases: Vec<SourceCase> = vec![
        (
            "label: room left",
            label(),
            false,
            node("n").label("example.com/pod-ips", "3").build(),
            2,
            vec![],
        ),
        (
            "label: full",
            label(),
            false,
            node("n").label("example.com/pod-ips", "3").build(),
            3,
            full(),
        ),
        (
            "label: 0 takes no pod",
            label(),
            false,
            node("n").label("example.com/pod-ips", "0").build(),
            0,
            full(),
        ),
        (
            "label wins over a roomy pod CIDR",
            label(),
            false,
            node("n")
                .cidr("10.0.0.0/24")
                .label("example.com/pod-ips", "1")
                .build(),
            1,
            full(),
        ),
        (
            "label missing: rejected, naming the label",
            label(),
            false,
            node("n").cidr("10.0.0.0/24").build(),
            0,
            vec![missing_reason(&label())],
        ),
        (
            "label missing, falling back to the pod CIDR",
            label(),
            true,
            node("n").cidr("10.0.0.0/30").build(),
            1,
            full(),
        ),
        (
            "label missing, no pod CIDR to fall back on: unlimited",
            label(),
            true,
            node("n").build(),
            50,
            vec![],
        ),
        (
            "label not a number: rejected, even with the fallback",
            label(),
            true,
            node("n").label("example.com/pod-ips", "lots").build(),
            0,
            vec![invalid_reason(&label())],
        ),
        (
            "annotation: room left",
            annotation(),
            false,
            node("n").annotation("example.com/pod-ips", "17").build(),
            16,
            vec![],
        ),
        (
            "annotation: signs and spaces are not counts",
            annotation(),
            false,
            node("n").annotation("example.com/pod-ips", " +17").build(),
            0,
            vec![invalid_reason(&annotation())],
        ),
        (
            "annotation: beyond u64 is invalid, not unlimited",
            annotation(),
            false,
            node("n")
                .annotation("example.com/pod-ips", "18446744073709551616")
                .build(),
            0,
            vec![invalid_reason(&annotation())],
        ),
        (
            "resource: full",
            resource(),
            false,
            node("n").alloc("example.com/pod-ips", 2).build(),
            2,
            full(),
        ),
        (
            "resource: room left",
            resource(),
            false,
            node("n").alloc("example.com/pod-ips", 2).build(),
            1,
            vec![],
        ),
        (
            "resource missing",
            resource(),
            false,
            node("n").build(),
            0,
            vec![missing_reason(&resource())],
        ),
        (
            "allocatable pods as the count",
            Source::Resource("pods".into()),
            false,
            node("n").pods(4).build(),
            4,
            full(),
        ),
    ];
    for (name, source, fallback, n, running_pods, want) in cases {
        let rule = CheckPodCidrCapacity::new(source, fallback);
        let mut cl = cluster(vec![n], running(running_pods, false));
        assert_eq!(
            run_filter(&rule, &mut cl, pod("p").build())[0].1,
            want,
            "{name}"
        );
        assert_eq!(
            run_filter(&rule, &mut cl, pod("h").host_network().build())[0].1,
            Vec::<String>::new(),
            "{name}: a hostNetwork pod needs no address"
        );
    }
}

#[test]
fn reasons_and_their_kinds() {
    let rule = CheckPodCidrCapacity::new(Source::Annotation("a.io/ips".into()), false);
    assert_eq!(
        missing_reason(&Source::Annotation("a.io/ips".into())),
        "node(s) didn't publish their pod IP capacity (annotation a.io/ips)"
    );
    assert_eq!(
        invalid_reason(&Source::Resource("a.io/ips".into())),
        "node(s) had an invalid pod IP capacity (allocatable a.io/ips: not a non-negative \
             integer)"
    );
    assert_eq!(
        rule.failure_kind(&REASON.into()),
        FailureKind::Unschedulable
    );
    assert_eq!(
        rule.failure_kind(&rule.missing),
        FailureKind::UnschedulableAndUnresolvable
    );
    assert_eq!(
        rule.failure_kind(&rule.invalid),
        FailureKind::UnschedulableAndUnresolvable
    );
}

#[test]
fn bad_cidr_is_an_error() {
    let mut cl = crate::Cluster::new();
    let err = cl
        .add_node(node("n").cidr("10.0.0.0/33").build())
        .unwrap_err();
    assert!(
        err.to_string().contains("invalid CIDR \"10.0.0.0/33\""),
        "{err}"
    );
}
