//! ABI round trips through the Rust SDK: the abi-probe plugin (plugins/abi-probe) reads every
//! node and pod fact through every accessor, checks that per-node and column forms agree,
//! and reports what it read as rejection reasons, compared here with the cluster. The guests
//! are built by scripts/build-plugins.sh (incremental; the test command runs it first).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use berth_engine::RejectedBy;
use berth_engine::model::TaintEffect;
use berth_engine::scheduler_with_plugins;
use berth_engine::testkit::{cluster, node, pod};
use berth_engine::{CycleConfig, Scheduler};
use berth_wasm::{PluginHost, Runtime};

fn dist() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let out = Command::new("bash")
                .arg(repo.join("scripts/build-plugins.sh"))
                .output()
                .expect("run scripts/build-plugins.sh");
            assert!(
                out.status.success(),
                "scripts/build-plugins.sh failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            repo.join("plugins/dist")
        })
        .clone()
}

fn scheduler(policy: &str) -> Scheduler {
    let host = PluginHost::new(Runtime::new().expect("runtime"), dist());
    let policy = berth_policy::parse(policy, "policy.json").expect("policy");
    let config = CycleConfig {
        percentage_of_nodes_to_score: 100,
        ..CycleConfig::default()
    };
    scheduler_with_plugins(&policy, config, &host).expect("scheduler")
}

#[test]
fn every_accessor_round_trips() {
    let mut sched = scheduler(
        r#"{"predicates": [{"name": "Probe", "argument": {"wasm": {"module": "abi-probe.wasm",
            "config": {"label": "zone", "annotation": "note", "image": "img:1"}}}}], "priorities": [],
            "alwaysCheckAllPredicates": true}"#,
    );
    let mut cl = cluster(
        vec![
            node("n1")
                .cpu(4000)
                .mem(8 << 30)
                .pods(10)
                .label("zone", "z1")
                .annotation("note", "hello")
                .taint("dedicated", "gpu", TaintEffect::NoSchedule)
                .image("img:1", 1234)
                .conditions(|c| c.ready = Some(true))
                .build(),
            node("n2")
                .cpu(2000)
                .mem(4 << 30)
                .pods(20)
                .unschedulable()
                .build(),
        ],
        vec![pod("running").req(500, 1 << 30).on("n1").build()],
    );
    let info = cl.compile_pod(
        pod("new")
            .req(250, 0)
            .annotation("note", "from the pod")
            .build(),
    );
    let decision = sched.explain(&cl, &info);
    let reasons: Vec<String> = decision
        .explanation()
        .cloned()
        .expect("explanation")
        .nodes
        .into_iter()
        .flat_map(|n| n.rejections)
        // The mandatory built-in predicates reject both nodes too.
        .filter(|r| r.reason.starts_with("n1 ") || r.reason.starts_with("n2 "))
        .map(|r| {
            // Named after the plugin's policy entry.
            assert_eq!(r.by, RejectedBy::Filter("Probe".into()), "{}", r.reason);
            r.reason
        })
        .collect();
    let pod_part = "pod=new pod-annotation=from the pod pod-cpu=250";
    assert_eq!(
        reasons,
        [
            format!(
                "n1 label=z1 annotation=hello cpu=4000 memory={} pods=1/10 conditions=1 image=1234 \
                 taints=[dedicated=gpu:NoSchedule] {pod_part}",
                1 << 30
            ),
            format!(
                "n2 label=- annotation=- cpu=2000 memory=0 pods=0/20 conditions=33 image=- taints=[] {pod_part}"
            ),
        ]
    );
}

#[test]
fn go_guest_runs_in_the_sandbox() {
    let mut sched = scheduler(
        r#"{"predicates": [{"name": "Maintenance", "argument": {"wasm": {"module": "maintenance-window.wasm",
            "config": {"leadMinutes": 0, "now": "2026-11-22T03:00:00Z"}}}}], "priorities": []}"#,
    );
    let window = "berth.dev/maintenance-window";
    let mut cl = cluster(
        (0..700)
            .map(|i| {
                let b = node(&format!("node-{i}"));
                match i % 2 {
                    0 => b.annotation(window, "2026-11-22T02:00:00Z/2026-11-22T04:00:00Z"),
                    _ => b.annotation(window, "2026-11-23T02:00:00Z/2026-11-23T04:00:00Z"),
                }
                .build()
            })
            .collect(),
        vec![],
    );
    // Over 512 nodes: two chunks on two instances, in parallel.
    for k in 0..5 {
        let info = cl.compile_pod(pod(&format!("p{k}")).build());
        let decision = sched.schedule(&cl, &info);
        let chosen = decision.node().map(|n| cl.node(n).name().to_string());
        let i: usize = chosen
            .as_deref()
            .and_then(|n| n.strip_prefix("node-"))
            .and_then(|n| n.parse().ok())
            .expect("placed");
        assert_eq!(i % 2, 1, "placed in a maintenance window");
        cl.insert_pod(info, decision.node()).expect("assign");
    }
}
