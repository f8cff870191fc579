use super::*;

const CONFIG: BreakerConfig = BreakerConfig {
    failure_threshold: 3,
    min_workloads: 2,
    window: 600,
    cool_down: 300,
    start_timeout: 120,
};

fn start(
    uid: &str,
    node: &str,
    owner: Option<&str>,
    placed_at: i64,
    state: StartState,
) -> PodStart {
    PodStart {
        uid: uid.into(),
        key: format!("default/{uid}"),
        node: node.into(),
        owner: owner.map(|name| Workload {
            kind: "ReplicaSet".into(),
            namespace: "default".into(),
            name: name.into(),
        }),
        placed_at,
        state,
    }
}

fn started(at: i64) -> StartState {
    StartState::Started { at }
}

fn failed(at: i64, reason: &str) -> StartState {
    StartState::Failed {
        at,
        reason: reason.into(),
    }
}

fn waiting(sandbox_ready: bool) -> StartState {
    StartState::Waiting { sandbox_ready }
}

/// Workloads web and api run on node good; their pods on bad fail with `reason`.
fn history(reason: &str) -> Vec<PodStart> {
    vec![
        start("web-good", "good", Some("web"), 0, started(5)),
        start("api-good", "good", Some("api"), 0, started(5)),
        start("web-1", "bad", Some("web"), 10, failed(20, reason)),
        start("api-1", "bad", Some("api"), 30, failed(40, reason)),
        start("web-2", "bad", Some("web"), 50, failed(60, reason)),
    ]
}

fn state(tracker: &CircuitBreakers, node: &str) -> &'static str {
    match tracker.view().get(node) {
        None => "closed",
        Some(Circuit::Open { .. }) => "open",
        Some(Circuit::HalfOpen { probe: None }) => "half-open",
        Some(Circuit::HalfOpen { probe: Some(_) }) => "probing",
    }
}

#[test]
fn who_is_to_blame() {
    let cases: &[(&str, Vec<PodStart>, &str)] = &[
        (
            "runtime errors of two workloads that start elsewhere",
            history("CreateContainerError"),
            "open",
        ),
        ("admission refusals", history("OutOfcpu"), "open"),
        (
            "image pulls are the workload's",
            history("ErrImagePull"),
            "closed",
        ),
        (
            "configuration errors are the workload's",
            history("CreateContainerConfigError"),
            "closed",
        ),
        (
            "one workload only",
            vec![
                start("web-good", "good", Some("web"), 0, started(5)),
                start(
                    "web-1",
                    "bad",
                    Some("web"),
                    10,
                    failed(20, "RunContainerError"),
                ),
                start(
                    "web-2",
                    "bad",
                    Some("web"),
                    30,
                    failed(40, "RunContainerError"),
                ),
                start(
                    "web-3",
                    "bad",
                    Some("web"),
                    50,
                    failed(60, "RunContainerError"),
                ),
            ],
            "closed",
        ),
        (
            "workloads that start nowhere",
            history("CreateContainerError")
                .into_iter()
                .skip(2)
                .collect(),
            "closed",
        ),
        (
            "bare pods",
            vec![
                start("a", "bad", None, 10, failed(20, "RunContainerError")),
                start("b", "bad", None, 30, failed(40, "RunContainerError")),
                start("c", "bad", None, 50, failed(60, "RunContainerError")),
            ],
            "closed",
        ),
        (
            "failures further apart than the window",
            vec![
                start("web-good", "good", Some("web"), 0, started(5)),
                start("api-good", "good", Some("api"), 0, started(5)),
                start(
                    "web-1",
                    "bad",
                    Some("web"),
                    10,
                    failed(20, "RunContainerError"),
                ),
                start(
                    "api-1",
                    "bad",
                    Some("api"),
                    30,
                    failed(40, "RunContainerError"),
                ),
                start(
                    "web-2",
                    "bad",
                    Some("web"),
                    700,
                    failed(700, "RunContainerError"),
                ),
            ],
            "closed",
        ),
    ];
    for (name, starts, want) in cases {
        let tracker = CircuitBreakers::rebuild(CONFIG, starts, 100);
        assert_eq!(state(&tracker, "bad"), *want, "{name}");
        assert_eq!(state(&tracker, "good"), "closed", "{name}");
    }
}

#[test]
fn a_sandbox_that_never_comes_up_is_a_failure_after_the_timeout() {
    let mut starts = history("CreateContainerError");
    starts[4] = start("web-2", "bad", Some("web"), 50, waiting(false));
    let before = CircuitBreakers::rebuild(CONFIG, &starts, 50 + 119);
    assert_eq!(state(&before, "bad"), "closed");
    let after = CircuitBreakers::rebuild(CONFIG, &starts, 50 + 120);
    assert_eq!(state(&after, "bad"), "open");
    match after.view().get("bad") {
        Some(Circuit::Open {
            since,
            until,
            failures,
        }) => {
            assert_eq!((*since, *until), (170, 470));
            assert_eq!(failures.len(), 3);
            assert_eq!(failures[2].2, "sandbox not created after 120s");
        }
        other => panic!("{other:?}"),
    }
    // A sandbox that is up is only slow (an image pull, say).
    starts[4] = start("web-2", "bad", Some("web"), 50, waiting(true));
    assert_eq!(
        state(&CircuitBreakers::rebuild(CONFIG, &starts, 1_000), "bad"),
        "closed"
    );
}

#[test]
fn open_then_half_open_then_a_probe_decides() {
    let mut tracker = CircuitBreakers::rebuild(CONFIG, &history("RunContainerError"), 60);
    assert_eq!(state(&tracker, "bad"), "open");
    assert_eq!(tracker.next_deadline(), Some(360));
    tracker.advance(359);
    assert_eq!(state(&tracker, "bad"), "open");
    tracker.advance(360);
    assert_eq!(state(&tracker, "bad"), "half-open");
    assert_eq!(
        tracker.take_transitions()[0].kind,
        TransitionKind::HalfOpened
    );
    // The probe is placed; others wait for it.
    tracker.observe(&start("probe", "bad", Some("web"), 370, waiting(true)));
    assert_eq!(state(&tracker, "bad"), "probing");
    // A probe failing for its own reasons gives no verdict.
    tracker.observe(&start(
        "probe",
        "bad",
        Some("web"),
        370,
        failed(375, "ErrImagePull"),
    ));
    assert_eq!(state(&tracker, "bad"), "half-open");
    // The next one fails for the node's: open again, for another cool-down.
    tracker.observe(&start("probe-2", "bad", Some("web"), 380, waiting(true)));
    tracker.observe(&start(
        "probe-2",
        "bad",
        Some("web"),
        380,
        failed(390, "RunContainerError"),
    ));
    assert_eq!(state(&tracker, "bad"), "open");
    assert_eq!(tracker.next_deadline(), Some(690));
    tracker.advance(690);
    // A deleted probe frees the slot; one that starts closes the breaker.
    tracker.observe(&start("probe-3", "bad", Some("web"), 700, waiting(true)));
    tracker.forget("probe-3");
    assert_eq!(state(&tracker, "bad"), "half-open");
    tracker.observe(&start("probe-4", "bad", Some("api"), 710, waiting(true)));
    tracker.observe(&start("probe-4", "bad", Some("api"), 710, started(720)));
    assert_eq!(state(&tracker, "bad"), "closed");
    let kinds: Vec<TransitionKind> = tracker.take_transitions().iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            TransitionKind::Reopened,
            TransitionKind::HalfOpened,
            TransitionKind::Closed
        ]
    );
    // The old failures were forgotten: one more does not reopen it.
    tracker.observe(&start(
        "late",
        "bad",
        Some("web"),
        730,
        failed(740, "RunContainerError"),
    ));
    assert_eq!(state(&tracker, "bad"), "closed");
}

#[test]
fn watching_and_rebuilding_agree() {
    let starts = history("CreateContainerError");
    let mut watched = CircuitBreakers::new(CONFIG);
    for s in &starts {
        watched.advance(s.placed_at);
        watched.observe(&PodStart {
            state: waiting(true),
            ..s.clone()
        });
        let at = match s.state {
            StartState::Started { at } | StartState::Failed { at, .. } => at,
            StartState::Waiting { .. } => s.placed_at,
        };
        watched.advance(at);
        watched.observe(s);
    }
    watched.advance(400);
    let rebuilt = CircuitBreakers::rebuild(CONFIG, &starts, 400);
    assert_eq!(watched.view(), rebuilt.view());
    assert_eq!(watched.replay(CONFIG, 400).view(), rebuilt.view());
    assert_eq!(state(&rebuilt, "bad"), "half-open");
}

#[test]
fn a_failure_stands_while_kubelet_retries_and_counts_once() {
    let mut tracker = CircuitBreakers::rebuild(CONFIG, &history("RunContainerError")[..4], 45);
    assert_eq!(state(&tracker, "bad"), "closed");
    // api-1 goes back to waiting between retries, then fails again: still one failure.
    tracker.observe(&start("api-1", "bad", Some("api"), 30, waiting(true)));
    tracker.observe(&start(
        "api-1",
        "bad",
        Some("api"),
        30,
        failed(50, "RunContainerError"),
    ));
    assert_eq!(state(&tracker, "bad"), "closed");
    // A deleted failed pod's failure still counts.
    tracker.forget("api-1");
    tracker.observe(&start(
        "web-2",
        "bad",
        Some("web"),
        50,
        failed(60, "RunContainerError"),
    ));
    assert_eq!(state(&tracker, "bad"), "open");
}
