//! The plugin runtime with WAT fixtures (no guest toolchain needed): loading and the ABI
//! check, reasons and scores through the engine, the sandbox, and every failure mode.

mod common;

use berth_engine::testkit::{cluster, node, pod};
use common::{Plugins, fixture, nodes, schedule};

const GPU_FILTER: &str = r#"{"predicates": [{"name": "GpuFit", "argument": {"wasm": {"module": "modes.wasm"}}}],
    "priorities": []}"#;

fn policy_with(module: &str, extra: &str) -> String {
    format!(
        r#"{{"predicates": [{{"name": "P1", "argument": {{"wasm": {{"module": "{module}.wasm"{extra}}}}}}}],
            "priorities": []}}"#
    )
}

#[test]
fn load_errors_name_the_file_and_the_problem() {
    let plugins = Plugins::new(&[
        ("bad-version", fixture("bad-version")),
        ("no-filter", fixture("no-filter")),
        ("unknown-import", fixture("unknown-import")),
        ("init-fails", fixture("init-fails")),
        (
            "garbage",
            b"\0asm\x01\0\0\0\x01\xff\xff\xff\xffnot a module".to_vec(),
        ),
        ("text", b"this is not wasm at all".to_vec()),
    ]);
    let cases = [
        (
            "bad-version",
            "declares ABI version 2, but this host speaks version 1",
        ),
        (
            "no-filter",
            "not a predicate plugin of ABI version 1: no `berth_filter(i32) -> i32` export",
        ),
        (
            "unknown-import",
            "imports `berth.node_gpu_model`, which ABI version 1 does not have",
        ),
        (
            "init-fails",
            "the plugin failed to start: berth_init returned 1: config needs a label",
        ),
        ("garbage", "not a valid WebAssembly module"),
        ("text", "not a valid WebAssembly module"),
        ("missing", "missing.wasm: cannot read the module"),
    ];
    for (module, want) in cases {
        let error = plugins
            .scheduler(&policy_with(module, ""))
            .err()
            .unwrap_or_default();
        assert!(
            error.starts_with("predicate P1: ") && error.contains(want),
            "{module}: {error}"
        );
    }
    let as_priority = r#"{"priorities": [{"name": "S1", "weight": 1, "argument": {"wasm": {"module": "bad-version.wasm"}}},
        {"name": "S2", "weight": 1, "argument": {"wasm": {"module": "no-filter.wasm"}}}]}"#;
    let error = plugins.scheduler(as_priority).err().unwrap_or_default();
    assert!(
        error.contains("priority S1: ") && error.contains("no `berth_score(i32) -> i32` export"),
        "{error}"
    );
}

#[test]
fn filter_reasons_reach_the_fit_error() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let mut sched = plugins.scheduler(GPU_FILTER).expect("scheduler");
    let mut cl = cluster(
        vec![
            node("a").cpu(1000).pods(10).build(),
            node("b").cpu(1000).pods(10).label("gpu", "t4").build(),
            node("c").cpu(1000).pods(10).build(),
        ],
        vec![],
    );
    let got = schedule(&mut cl, &mut sched, vec![pod("p1").build()]);
    assert_eq!(got, ["b"]);

    let mut no_gpu = cluster(vec![node("a").build(), node("c").build()], vec![]);
    let got = schedule(&mut no_gpu, &mut sched, vec![pod("p2").build()]);
    assert_eq!(
        got,
        ["0/2 nodes are available: 2 node(s) had no gpu label."]
    );
}

#[test]
fn host_strings_round_trip() {
    let plugins = Plugins::new(&[("echo", fixture("echo"))]);
    let policy = policy_with("echo", r#", "config": {"k": "v"}"#);
    let mut sched = plugins.scheduler(&policy).expect("scheduler");
    let mut cl = cluster(vec![node("alpha").build(), node("beta").build()], vec![]);
    let got = schedule(&mut cl, &mut sched, vec![pod("p").build()]);
    assert_eq!(
        got,
        [r#"0/2 nodes are available: 1 alpha {"k":"v"}, 1 beta {"k":"v"}."#]
    );
}

#[test]
fn score_plugin_normalised_by_the_host() {
    let plugins = Plugins::new(&[("cores", fixture("cores"))]);
    let policy = r#"{"predicates": [], "priorities": [{"name": "Cores", "weight": 2,
        "argument": {"wasm": {"module": "cores.wasm"}}}]}"#;
    let mut sched = plugins.scheduler(policy).expect("scheduler");
    let mut cl = cluster(
        vec![
            node("small").cpu(2000).pods(10).build(),
            node("big").cpu(8000).pods(10).build(),
            node("mid").cpu(4000).pods(10).build(),
        ],
        vec![],
    );
    let info = cl.compile_pod(pod("p").build());
    let decision = sched.explain(&cl, &info);
    let explanation = decision.explanation().cloned().expect("explanation");
    assert_eq!(explanation.score_rules, [("Cores".to_string(), 2)]);
    let scores: Vec<(String, Vec<i64>)> = explanation
        .nodes
        .iter()
        .map(|n| {
            let normalized = n.scores.iter().map(|s| s.normalized).collect();
            (n.node.clone(), normalized)
        })
        .collect();
    let want = [("small", 25), ("big", 100), ("mid", 50)];
    for (name, score) in want {
        assert!(
            scores.contains(&(name.to_string(), vec![score])),
            "{name}: {scores:?}"
        );
    }
    assert_eq!(
        decision
            .node()
            .map(|n| cl.node(n).name().to_string())
            .as_deref(),
        Some("big")
    );
}

/// Each way a call can fail, under both failure policies, on a cluster big enough to be split
/// into parallel chunks: Fail rejects with the cause, Ignore lets the pod through, and the
/// next ordinary pod is placed correctly on a fresh instance.
#[test]
fn failure_modes() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let limits = r#", "timeoutMillis": 30, "memoryLimitMiB": 8"#;
    let cases = [
        ("trap", "wasm trap: wasm `unreachable` instruction executed"),
        ("loop", "timed out after 30 ms"),
        ("grow", "memory limit of 8 MiB exceeded"),
        ("deep", "wasm stack overflow"),
        ("fail", "berth_filter returned 7: asked to fail"),
    ];
    for policy in ["Fail", "Ignore"] {
        let text = policy_with(
            "modes",
            &format!(r#", "failurePolicy": "{policy}"{limits}"#),
        );
        let mut sched = plugins.scheduler(&text).expect("scheduler");
        let mut cl = cluster(nodes(1200, 3), vec![]);
        for (mode, cause) in cases {
            let bad = pod(&format!("{mode}-{policy}"))
                .annotation("mode", mode)
                .build();
            let good = pod(&format!("after-{mode}-{policy}")).build();
            let got = schedule(&mut cl, &mut sched, vec![bad, good]);
            match policy {
                "Fail" => assert_eq!(
                    got[0],
                    format!("0/1200 nodes are available: 1200 plugin P1 failed: {cause}."),
                    "{mode}"
                ),
                _ => assert!(got[0].starts_with("node-"), "{mode}: {}", got[0]),
            }
            let placed: usize = got[1]
                .strip_prefix("node-")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{mode}/{policy}: {}", got[1]));
            assert_eq!(
                placed % 3,
                0,
                "{mode}/{policy}: placed on a node without gpu"
            );
        }
        let stats = plugins.host.plugins()[0]
            .stats()
            .failures
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(stats >= 5, "{policy}: failures counted: {stats}");
    }
}

#[test]
fn sandbox_has_no_files_environment_or_arguments() {
    let plugins = Plugins::new(&[("wasi-escape", fixture("wasi-escape"))]);
    let mut sched = plugins
        .scheduler(&policy_with("wasi-escape", ""))
        .expect("scheduler");
    let mut cl = cluster(vec![node("a").build()], vec![]);
    let got = schedule(&mut cl, &mut sched, vec![pod("p").build()]);
    assert_eq!(
        got,
        [
            "0/1 nodes are available: 1 plugin P1 failed: unknown import: `wasi_snapshot_preview1::path_open` has not been defined."
        ]
    );
}

/// The epoch ticker only runs while guest calls are in flight (plus a short linger): an idle
/// runtime, or one without plugins, never wakes up. Deadlines still hold (`failure_modes`
/// times out a looping guest).
#[test]
fn the_epoch_ticker_sleeps_while_no_guest_runs() {
    let runtime = berth_wasm::Runtime::new().expect("runtime");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(runtime.epoch_ticks(), 0, "ticks with no plugin loaded");

    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("modes.wasm"), fixture("modes")).expect("write");
    let host = berth_wasm::PluginHost::new(runtime.clone(), dir.path());
    let policy = berth_policy::parse(GPU_FILTER, "policy.json").expect("policy");
    let mut sched =
        berth_engine::scheduler_with_plugins(&policy, berth_engine::CycleConfig::default(), &host)
            .expect("scheduler");
    let mut cl = cluster(vec![node("a").label("gpu", "t4").build()], vec![]);
    assert_eq!(schedule(&mut cl, &mut sched, vec![pod("p").build()]), ["a"]);
    // The ticker lingers 100 ticks after the last call, then sleeps: within 10 s (a loaded
    // machine stretches the 1 ms sleeps) a 300 ms window must pass without a tick.
    let start = std::time::Instant::now();
    loop {
        let before = runtime.epoch_ticks();
        std::thread::sleep(std::time::Duration::from_millis(300));
        if runtime.epoch_ticks() == before && before > 0 {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "the ticker did not run, or still ticks {:?} after the last call",
            start.elapsed()
        );
    }
}

/// `modes.wat` with a `berth_node_local` export returning `declared`.
fn modes_declaring(declared: i32) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/modes.wat");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let export = format!(
        "(func (export \"berth_node_local\") (result i32) (i32.const {declared}))\n  (func (export \"berth_abi_version\")"
    );
    wat::parse_str(text.replacen("(func (export \"berth_abi_version\")", &export, 1))
        .expect("fixture with berth_node_local")
}

#[test]
fn a_plugin_declaring_node_local_answers_lets_equal_pods_share_them() {
    let plugins = Plugins::new(&[
        ("modes", fixture("modes")),
        ("local", modes_declaring(1)),
        ("not-local", modes_declaring(0)),
    ]);
    let pods = || {
        (0..8)
            .map(|i| pod(&format!("p{i}")).req(500, 0).build())
            .collect()
    };
    let mut runs = Vec::new();
    for module in ["modes", "local", "not-local"] {
        let mut sched = plugins
            .scheduler(&policy_with(module, ""))
            .expect("scheduler");
        let mut cl = cluster(nodes(12, 3), vec![]);
        let placed = schedule(&mut cl, &mut sched, pods());
        let (reused, _) = sched.class_counts();
        runs.push((module, placed, reused));
    }
    for (module, placed, reused) in &runs {
        assert_eq!(placed, &runs[0].1, "{module} decides as the others");
        assert_eq!(*reused > 0, *module == "local", "{module}: {reused} reused");
    }
}
