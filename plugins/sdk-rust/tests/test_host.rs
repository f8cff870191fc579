//! The in-memory host itself: the ABI's rules (symbols, when accessors work, traps), the
//! quantities and views it derives from the fakes, and the SDK's typed accessors over it.

use berth_plugin::testing::{CallError, FakeNode, FakePod, TestHost};
use berth_plugin::{
    Conditions, Filter, Level, NoConfig, Nodes, Pod, Quantity, Score, Symbol, Taint, Toleration,
    Verdicts, log, reason,
};

/// A filter whose behaviour is picked by its config, to reach every path of the host.
struct Probe {
    mode: String,
}

impl Filter for Probe {
    type Config = serde_json::Value;

    fn new(config: serde_json::Value) -> Result<Self, String> {
        let mode = config["mode"].as_str().unwrap_or("").to_owned();
        log(Level::Info, &format!("mode {mode}"));
        if mode == "symbol-in-new" {
            Symbol::of("zone");
        }
        if mode == "fail-new" {
            return Err("config.mode: fail-new asked to fail".into());
        }
        Ok(Probe { mode })
    }

    fn filter(&mut self, pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        match self.mode.as_str() {
            "bad-index" => {
                nodes.name(nodes.len());
            }
            "panic" => panic!("boom"),
            "error" => return Err("no luck".into()),
            "log" => log(Level::Warn, &format!("{} nodes", nodes.len())),
            _ => {
                let fits = reason("fits not");
                let taints = reason("untolerated taint");
                let tolerations = pod.tolerations();
                for i in 0..nodes.len() {
                    let untolerated = nodes
                        .taints(i)
                        .iter()
                        .any(|t| !tolerations.iter().any(|tol| tol.tolerates(t)));
                    if untolerated {
                        out.reject(i, taints);
                    } else if nodes.allocatable(i, "cpu") - nodes.requested(i, "cpu")
                        < pod.request("cpu")
                    {
                        out.reject(i, fits);
                    }
                }
            }
        }
        Ok(())
    }
}

fn host(mode: &str) -> TestHost {
    TestHost::new()
        .config(&format!(r#"{{"mode": "{mode}"}}"#))
        .nodes([
            FakeNode::new("small").allocatable("cpu", 1000),
            FakeNode::new("busy")
                .allocatable("cpu", 4000)
                .pod(FakePod::new("a").request("cpu", 3500)),
            FakeNode::new("tainted")
                .allocatable("cpu", 4000)
                .taint("gpu", "true", "NoSchedule"),
            FakeNode::new("free").allocatable("cpu", 4000),
        ])
}

#[test]
fn requests_taints_and_tolerations() {
    let cases: &[(&str, FakePod, &[&str])] = &[
        (
            "small pod",
            FakePod::new("p").request("cpu", 500),
            &["small", "busy", "free"],
        ),
        (
            "large pod",
            FakePod::new("p").request("cpu", 2000),
            &["free"],
        ),
        (
            "init container larger than the app containers",
            FakePod::new("p")
                .container("a", "", &[("cpu", 100)])
                .init_container("init", "", &[("cpu", 1500)]),
            &["free"],
        ),
        (
            "overhead counts",
            FakePod::new("p").request("cpu", 400).overhead("cpu", 200),
            &["small", "free"],
        ),
        (
            "tolerates the taint",
            FakePod::new("p").toleration(Toleration::equal("gpu", "true").effect("NoSchedule")),
            &["small", "busy", "tainted", "free"],
        ),
        (
            "wrong effect",
            FakePod::new("p").toleration(Toleration::exists("gpu").effect("NoExecute")),
            &["small", "busy", "free"],
        ),
        (
            "tolerates everything",
            FakePod::new("p").toleration(Toleration::exists("")),
            &["small", "busy", "tainted", "free"],
        ),
    ];
    for (name, pod, want) in cases {
        let result = host("fit").filter::<Probe>(pod).expect(name);
        assert_eq!(&result.passed(), want, "{name}");
    }
    let result = host("fit")
        .filter::<Probe>(&FakePod::new("p").request("cpu", 2000))
        .expect("filter");
    assert_eq!(result.reason("tainted"), Some("untolerated taint"));
    assert_eq!(result.reason("small"), Some("fits not"));
    assert_eq!(result.reason("free"), None);
}

#[test]
fn failures_and_traps() {
    let cases = [
        (
            "bad-index",
            CallError::Trap("node index 4 is outside this call's 4 nodes".into()),
        ),
        ("panic", CallError::Trap("the plugin panicked: boom".into())),
        ("error", CallError::Failed("no luck".into())),
        (
            "fail-new",
            CallError::Failed("config.mode: fail-new asked to fail".into()),
        ),
        (
            "symbol-in-new",
            CallError::Trap(
                "node and pod accessors are only available during berth_filter / berth_score"
                    .into(),
            ),
        ),
    ];
    for (mode, want) in cases {
        let got = host(mode).filter::<Probe>(&FakePod::new("p"));
        assert_eq!(got, Err(want), "{mode}");
    }
}

#[test]
fn logs_are_kept_per_call() {
    let instance = host("log")
        .chunk_size(3)
        .filter_instance::<Probe>()
        .expect("start");
    let first = instance.filter(&FakePod::new("p")).expect("first");
    let line = |level, text: &str| berth_plugin::testing::LogLine {
        level,
        text: text.into(),
    };
    assert_eq!(
        first.logs,
        [
            line(Level::Info, "mode log"),
            line(Level::Warn, "3 nodes"),
            line(Level::Warn, "1 nodes")
        ]
    );
    let second = instance.filter(&FakePod::new("q")).expect("second");
    assert_eq!(
        second.logs,
        [line(Level::Warn, "3 nodes"), line(Level::Warn, "1 nodes")]
    );
}

/// Reads every view and column into its raw scores, for checking what the host derives.
struct Views;

impl Score for Views {
    type Config = NoConfig;

    fn new(_: NoConfig) -> Result<Self, String> {
        Ok(Views)
    }

    fn score(&mut self, pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String> {
        let json = pod.json();
        let mut requested = Vec::new();
        nodes.resources(Quantity::Requested, "example.com/gpu", &mut requested);
        let names = nodes.names();
        let annotations = nodes.annotations("note");
        for (i, score) in scores.iter_mut().enumerate() {
            let node = nodes.json(i);
            let checks = [
                names[i] == nodes.name(i),
                annotations[i] == nodes.annotation(i, "note"),
                json["request"]["cpu"] == pod.request("cpu"),
                json["request"]["scalars"]["example.com/gpu"] == pod.request("example.com/gpu"),
                // Extended resources appear in the view only where some pod requests them.
                node["requested"]["example.com/gpu"].as_i64().unwrap_or(0) == requested[i],
                node["requested"]["pods"] == nodes.pod_count(i),
                node["status"]["allocatable"]["memory"] == nodes.allocatable(i, "memory"),
                node["spec"]["unschedulable"] == nodes.conditions(i).unschedulable(),
                nodes.pods(i).as_array().map_or(0, Vec::len) == nodes.pod_count(i) as usize,
            ];
            if let Some(k) = checks.iter().position(|ok| !ok) {
                return Err(format!("{}: check {k} failed: {node}", names[i]));
            }
            *score = requested[i] * 1000
                + nodes.image_size(i, "img:1").unwrap_or(-1)
                + i64::from(nodes.conditions(i).0) * 100;
        }
        Ok(())
    }
}

#[test]
fn views_and_columns_agree() {
    let host = TestHost::new().chunk_size(2).nodes([
        FakeNode::new("a")
            .annotation("note", "x")
            .image("img:1", 7)
            .pod(FakePod::new("g1").request("example.com/gpu", 2))
            .pod(FakePod::new("g2").container("c", "img:1", &[("example.com/gpu", 1)])),
        FakeNode::new("b")
            .allocatable("memory", 1 << 30)
            .conditions(Conditions::READY | Conditions::DISK_PRESSURE)
            .unschedulable(),
        FakeNode::new("c").conditions(Conditions::NONE),
    ]);
    let pod = FakePod::new("p")
        .request("cpu", 100)
        .request("example.com/gpu", 1);
    let result = host.score::<Views>(&pod).expect("score");
    assert_eq!(
        result.scores,
        [
            ("a".to_string(), 3000 + 7 + 100),
            ("b".to_string(), -1 + 3700),
            ("c".to_string(), -1)
        ]
    );
}

#[test]
fn symbols_exist_only_for_strings_the_cluster_uses() {
    struct Symbols;
    impl Filter for Symbols {
        type Config = NoConfig;
        fn new(_: NoConfig) -> Result<Self, String> {
            Ok(Symbols)
        }
        fn filter(&mut self, _: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
            let used = ["zone", "z1", "app", "web", "img:1", "kube-system"];
            let unused = ["nowhere", "z2"];
            let ok = used
                .iter()
                .all(|t| Symbol::of(t).is_some_and(|s| s.text() == *t))
                && unused.iter().all(|t| Symbol::of(t).is_none());
            let zone = Symbol::of("zone");
            let labels = nodes.labels(zone);
            let same = (0..nodes.len()).all(|i| zone.and_then(|z| nodes.label(i, z)) == labels[i]);
            if !(ok && same) {
                out.reject(0, reason("symbols disagree"));
            }
            Ok(())
        }
    }
    let host = TestHost::new().nodes([
        FakeNode::new("n")
            .label("zone", "z1")
            .image("img:1", 1)
            .pod(
                FakePod::new("w")
                    .namespace("kube-system")
                    .label("app", "web"),
            ),
        FakeNode::new("m"),
    ]);
    let result = host.filter::<Symbols>(&FakePod::new("p")).expect("filter");
    assert_eq!(result.passed(), ["n", "m"]);
}

#[test]
fn toleration_matches_as_kubernetes() {
    let taint = |key: &str, value: &str, effect: &str| Taint {
        key: key.into(),
        value: value.into(),
        effect: effect.into(),
    };
    let cases = [
        (
            Toleration::equal("k", "v"),
            taint("k", "v", "NoSchedule"),
            true,
        ),
        (
            Toleration::equal("k", "v"),
            taint("k", "w", "NoSchedule"),
            false,
        ),
        (
            Toleration::equal("k", "v").effect("NoExecute"),
            taint("k", "v", "NoSchedule"),
            false,
        ),
        (
            Toleration::exists("k"),
            taint("k", "any", "PreferNoSchedule"),
            true,
        ),
        (Toleration::exists("j"), taint("k", "", "NoSchedule"), false),
        (Toleration::exists(""), taint("k", "v", "NoExecute"), true),
        (
            Toleration {
                operator: "Bogus".into(),
                ..Toleration::equal("k", "v")
            },
            taint("k", "v", "NoSchedule"),
            false,
        ),
    ];
    for (toleration, taint, want) in cases {
        assert_eq!(
            toleration.tolerates(&taint),
            want,
            "{toleration:?} {taint:?}"
        );
    }
}
