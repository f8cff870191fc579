//! Policy -> KubeSchedulerConfiguration -> Policy on every policy in policies/ and on a table of
//! policies covering each convertible entry; the mapping pinned per entry; one golden file.

use std::path::{Path, PathBuf};

use berth_engine::CycleConfig;
use berth_engine::scheduler_for;
use berth_policy::{EffectivePolicy, FeatureGates};
use berth_schedconfig::plugins::Point;
use berth_schedconfig::{Conversion, KubeSchedulerConfiguration, Options, ReadOptions, convert};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every Policy file under policies/ (and policies/examples/).
fn policy_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["policies", "policies/examples"] {
        for entry in std::fs::read_dir(repo().join(dir)).expect("policies dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 5, "policy files: {files:?}");
    files
}

fn options() -> Options {
    Options {
        scheduler_name: "default-scheduler".to_string(),
        feature_gates: FeatureGates::default(),
    }
}

fn to_yaml(c: &Conversion) -> String {
    c.to_yaml("test").expect("serializes")
}

fn read_back(yaml: &str) -> EffectivePolicy {
    berth_schedconfig::parse(yaml, "converted.yaml", ReadOptions::default())
        .unwrap_or_else(|e| panic!("reading back failed: {e}\n{yaml}"))
}

/// The configuration with each extension point's plugins sorted: filter order decides only
/// which failure a node reports first, and GeneralPredicates reads back as its four plugins.
fn canonical(mut config: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration {
    for profile in &mut config.profiles {
        let plugins = profile.plugins.as_mut().expect("plugins");
        for point in Point::ALL {
            plugins
                .at_mut(point)
                .enabled
                .sort_by(|a, b| a.name.cmp(&b.name));
        }
        profile.plugin_config.sort_by(|a, b| a.name.cmp(&b.name));
    }
    config
}

/// What the built scheduler runs, by upstream plugin: the converted configuration (plugins,
/// weights, args, extenders) and the scores' weights.
fn assert_same_effective_policy(original: &EffectivePolicy, back: &EffectivePolicy, what: &str) {
    let a = convert(original, &options());
    let b = convert(back, &options());
    assert_eq!(
        canonical(a.config),
        canonical(b.config),
        "{what}: configuration differs after a round trip"
    );
    assert_eq!(original.extenders, back.extenders, "{what}: extenders");
    let weights = |p: &EffectivePolicy| {
        let s = scheduler_for(p, CycleConfig::default()).expect("builds");
        let mut w: Vec<i64> = s.scores().iter().map(|s| s.weight).collect();
        w.sort();
        w
    };
    assert_eq!(weights(original), weights(back), "{what}: score weights");
    let uses_interpod = original
        .priorities
        .iter()
        .any(|p| matches!(p.kind, berth_policy::PriorityKind::InterPodAffinity));
    if uses_interpod {
        assert_eq!(
            original.hard_pod_affinity_symmetric_weight, back.hard_pod_affinity_symmetric_weight,
            "{what}: hardPodAffinitySymmetricWeight"
        );
    }
}

#[test]
fn every_policy_file_converts_and_reads_back() {
    for path in policy_files() {
        let what = path.display().to_string();
        let policy = berth_policy::load(&path).expect("valid policy");
        let conversion = convert(&policy, &options());
        let yaml = to_yaml(&conversion);
        let config: KubeSchedulerConfiguration =
            serde_yaml_ng::from_str(&yaml).expect("the output is a KubeSchedulerConfiguration");
        assert_eq!(config, conversion.config, "{what}: YAML round trip");
        // What was converted reads back to a policy that converts to the same thing.
        let back = read_back(&yaml);
        let again = convert(&back, &options());
        assert!(
            again.unconverted.is_empty(),
            "{what}: {:?}",
            again.unconverted
        );
        assert_eq!(
            canonical(again.config.clone()),
            canonical(conversion.config.clone()),
            "{what}: converting the read-back policy"
        );
        // A second round is exact, order included.
        let back2 = read_back(&to_yaml(&again));
        assert_eq!(convert(&back2, &options()).config, again.config, "{what}");
        if conversion.unconverted.is_empty() {
            assert_same_effective_policy(&policy, &back, &what);
        }
    }
}

/// Unconverted entries as "section names".
fn skipped(c: &Conversion) -> Vec<String> {
    c.unconverted
        .iter()
        .map(|u| format!("{} {}", u.section, u.names.join(",")))
        .collect()
}

fn enabled(c: &Conversion, point: Point) -> Vec<(String, Option<i32>)> {
    c.config.profiles[0]
        .plugins
        .as_ref()
        .expect("plugins")
        .at(point)
        .enabled
        .iter()
        .map(|p| (p.name.clone(), p.weight))
        .collect()
}

fn names(c: &Conversion, point: Point) -> Vec<String> {
    enabled(c, point).into_iter().map(|(n, _)| n).collect()
}

fn args(c: &Conversion, plugin: &str) -> Option<serde_json::Value> {
    c.config.profiles[0]
        .plugin_config
        .iter()
        .find(|p| p.name == plugin)
        .map(|p| p.args.clone())
}

fn load(file: &str) -> EffectivePolicy {
    berth_policy::load(&repo().join(file)).expect("valid policy")
}

#[test]
fn the_default_provider_maps_as_v1_22_did() {
    let c = convert(&load("policies/default.json"), &options());
    assert_eq!(
        skipped(&c),
        [
            "predicates MaxEBSVolumeCount",
            "predicates MaxGCEPDVolumeCount",
            "predicates MaxAzureDiskVolumeCount",
            "priorities NodePreferAvoidPodsPriority",
        ]
    );
    assert_eq!(
        names(&c, Point::Filter),
        [
            "NodeUnschedulable",
            "NodeResourcesFit",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "VolumeRestrictions",
            "TaintToleration",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
        ]
    );
    // SelectorSpreadPriority (1) and EvenPodsSpreadPriority (2) are one PodTopologySpread
    // with EvenPodsSpreadPriority's weight and system defaulting, as v1.22 built it.
    let scores = enabled(&c, Point::Score);
    assert!(scores.contains(&("PodTopologySpread".to_string(), Some(2))));
    assert!(scores.contains(&("NodeResourcesFit".to_string(), Some(1))));
    assert_eq!(
        args(&c, "PodTopologySpread"),
        Some(serde_json::json!({"defaultingType": "System"}))
    );
    assert_eq!(
        args(&c, "NodeResourcesFit"),
        Some(
            serde_json::json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}})
        )
    );
    assert_eq!(names(&c, Point::Reserve), ["VolumeBinding"]);
    assert_eq!(names(&c, Point::PreBind), ["VolumeBinding"]);
    assert_eq!(names(&c, Point::PostFilter), ["DefaultPreemption"]);
    assert_eq!(names(&c, Point::Bind), ["DefaultBinder"]);
    assert_eq!(names(&c, Point::QueueSort), ["PrioritySort"]);
    let multi = &c.config.profiles[0].plugins.as_ref().unwrap().multi_point;
    assert_eq!(multi.disabled[0].name, "*", "none of v1's defaults");
}

#[test]
fn the_example_policies_name_what_they_lose() {
    let c = convert(&load("policies/openshift.json"), &options());
    assert_eq!(
        skipped(&c),
        [
            "predicates Region",
            "predicates MaxEBSVolumeCount",
            "predicates MaxGCEPDVolumeCount",
            "predicates CheckNodeMemoryPressure",
            "predicates CheckNodeDiskPressure",
            "priorities NodePreferAvoidPodsPriority",
            "priorities Zone",
        ]
    );
    let c = convert(&load("policies/examples/bin-packing.json"), &options());
    assert_eq!(skipped(&c), ["priorities RequestedToCapacityRatioPriority"]);
    assert!(c.unconverted[0].reason.contains("one scoringStrategy"));
    let c = convert(&load("policies/examples/projects-and-ips.json"), &options());
    assert_eq!(
        skipped(&c),
        [
            "predicates MatchNamespaceNodeSelector",
            "predicates CheckPodCIDRCapacity",
            "priorities PreferSSD",
            "priorities SpreadRacks",
            "alwaysCheckAllPredicates ",
        ]
    );
    // labelsPresence with GeneralPredicates: NodeAffinity's addedAffinity.
    assert_eq!(
        args(&c, "NodeAffinity"),
        Some(
            serde_json::json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "Exists"}]}]}}})
        )
    );
    let c = convert(&load("policies/examples/with-extender.json"), &options());
    assert!(c.unconverted.is_empty());
    let e = &c.config.extenders[0];
    assert_eq!(e.http_timeout.as_deref(), Some("5s"));
    assert_eq!(e.weight, 5);
    assert!(e.managed_resources[0].ignored_by_scheduler);
}

#[test]
fn default_policy_matches_its_golden_file() {
    let c = convert(&load("policies/default.json"), &options());
    let got = c.to_yaml("policies/default.json").expect("yaml");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/default.yaml");
    if std::env::var_os("BERTH_BLESS").is_some() {
        std::fs::write(&golden, &got).expect("write golden");
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (BERTH_BLESS=1 writes it)");
    assert_eq!(
        got, want,
        "BERTH_BLESS=1 cargo test -p berth-schedconfig rewrites it"
    );
}

/// Policies that convert fully, together covering every entry v1 has an equivalent for.
const CONVERTIBLE: &[(&str, &str)] = &[
    (
        "each predicate alone",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"HostName"},
        {"name":"PodFitsHostPorts"},{"name":"MatchNodeSelector"},{"name":"PodFitsResources"},
        {"name":"NoDiskConflict"},{"name":"MaxCSIVolumeCountPred"},{"name":"CheckVolumeBinding"},
        {"name":"NoVolumeZoneConflict"},{"name":"EvenPodsSpread"},{"name":"MatchInterPodAffinity"},
        {"name":"Rack","argument":{"labelsPresence":{"labels":["rack","row"],"presence":true}}},
        {"name":"NoGpu","argument":{"labelsPresence":{"labels":["gpu"],"presence":false}}}],
        "priorities":[]}"#,
    ),
    (
        "most requested, spreading on the pods' own constraints, hard weight",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"GeneralPredicates"}],
        "priorities":[{"name":"MostRequestedPriority","weight":3},
        {"name":"EvenPodsSpreadPriority","weight":4},{"name":"InterPodAffinityPriority","weight":2},
        {"name":"NodeAffinityPriority","weight":5},{"name":"TaintTolerationPriority","weight":6},
        {"name":"ImageLocalityPriority","weight":7},{"name":"BalancedResourceAllocation","weight":8}],
        "hardPodAffinitySymmetricWeight":10}"#,
    ),
    (
        "requested to capacity ratio, selector spread",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[
        {"name":"RequestedToCapacityRatioPriority","weight":2,"argument":{
        "requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":10},
        {"utilization":80,"score":3},{"utilization":100,"score":0}],
        "resources":[{"name":"cpu","weight":3},{"name":"example.com/gpu","weight":1}]}}},
        {"name":"SelectorSpreadPriority","weight":1},{"name":"EqualPriority","weight":1}]}"#,
    ),
    (
        "extenders with TLS",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"GeneralPredicates"}],
        "priorities":[],"extenders":[{"urlPrefix":"https://127.0.0.1:9443/x","filterVerb":"f",
        "preemptVerb":"p","bindVerb":"b","enableHttps":true,"httpTimeout":1500000000,
        "tlsConfig":{"serverName":"x","caData":"LS0tLQ==","certFile":"/c","keyFile":"/k"}},
        {"urlPrefix":"http://127.0.0.1:9444/y","prioritizeVerb":"s","weight":3,"ignorable":true,
        "managedResources":[{"name":"example.com/a","ignoredByScheduler":true}]}]}"#,
    ),
];

#[test]
fn convertible_policies_round_trip_to_the_same_effective_policy() {
    for (what, text) in CONVERTIBLE {
        let policy = berth_policy::parse(text, what).expect("valid policy");
        let c = convert(&policy, &options());
        assert!(c.unconverted.is_empty(), "{what}: {:?}", c.unconverted);
        let back = read_back(&to_yaml(&c));
        assert_same_effective_policy(&policy, &back, what);
        assert!(back.warnings.is_empty(), "{what}: {:?}", back.warnings);
    }
}

#[test]
fn label_presence_without_the_node_affinity_filter_is_not_converted() {
    let policy = berth_policy::parse(
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[
        {"name":"Rack","argument":{"labelsPresence":{"labels":["rack"],"presence":true}}}],
        "priorities":[]}"#,
        "p",
    )
    .unwrap();
    let c = convert(&policy, &options());
    assert_eq!(skipped(&c), ["predicates Rack"]);
    assert!(c.unconverted[0].reason.contains("MatchNodeSelector"));
    assert_eq!(args(&c, "NodeAffinity"), None);
}

#[test]
fn gates_and_weights_decide_what_converts() {
    let text = r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[
        {"name":"SelectorSpreadPriority","weight":1},
        {"name":"TaintTolerationPriority","weight":3000000000},
        {"name":"Wasm-score","weight":1,"argument":{"wasm":{"module":"m.wasm"}}}]}"#;
    let policy = berth_policy::parse(text, "p").unwrap();
    let off = Options {
        feature_gates: FeatureGates::parse("DefaultPodTopologySpread=false").unwrap(),
        ..options()
    };
    let c = convert(&policy, &off);
    let reasons: Vec<&str> = c.unconverted.iter().map(|u| u.reason.as_str()).collect();
    assert_eq!(skipped(&c).len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("SelectorSpread plugin"), "{reasons:?}");
    assert!(reasons[1].contains("32-bit"), "{reasons:?}");
    assert!(
        reasons[2].contains("WASM plugin (module m.wasm)"),
        "{reasons:?}"
    );
}
