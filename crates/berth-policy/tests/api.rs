//! The public API beyond `parse`'s table: `load`, `default_policy`, `describe`, typed extenders
//! and the JSON form.

use std::io::Write as _;
use std::time::Duration;

use berth_policy::{
    Defaulted, Extender, ExtenderTlsConfig, ManagedResource, PolicyError, PredicateKind,
    PriorityKind, default_policy, load, parse,
};

const OPENSHIFT_3_11: &str = r#"{"kind": "Policy", "apiVersion": "v1",
  "predicates": [
    {"name": "NoVolumeZoneConflict"}, {"name": "MaxEBSVolumeCount"}, {"name": "MaxGCEPDVolumeCount"},
    {"name": "MatchInterPodAffinity"}, {"name": "NoDiskConflict"}, {"name": "GeneralPredicates"},
    {"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeMemoryPressure"}, {"name": "CheckNodeDiskPressure"},
    {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}}],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1}, {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "SelectorSpreadPriority", "weight": 1}, {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
    {"name": "NodeAffinityPriority", "weight": 1}, {"name": "TaintTolerationPriority", "weight": 1},
    {"name": "InterPodAffinityPriority", "weight": 1},
    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}}]}"#;

fn parsed(json: &str) -> berth_policy::EffectivePolicy {
    match parse(json, "test.json") {
        Ok(policy) => policy,
        Err(error) => panic!("unexpected error: {error}"),
    }
}

#[test]
fn describe_lists_predicates_in_evaluation_order() {
    let policy = parsed(OPENSHIFT_3_11);
    let text = policy.describe();
    let expected = [
        " 1. CheckNodeUnschedulable (mandatory)",
        " 2. GeneralPredicates",
        " 3. NoDiskConflict",
        " 4. PodToleratesNodeTaints (mandatory)",
        " 5. Region: CheckServiceAffinity (labels [region])",
        " 6. MaxEBSVolumeCount",
        " 7. MaxGCEPDVolumeCount",
        " 8. NoVolumeZoneConflict",
        " 9. CheckNodeMemoryPressure",
        "10. CheckNodeDiskPressure",
        "11. MatchInterPodAffinity",
    ];
    let mut last = 0;
    for line in expected {
        let Some(at) = text.find(line) else {
            panic!("describe lacks {line:?}:\n{text}")
        };
        assert!(at > last, "{line:?} is out of order:\n{text}");
        last = at;
    }
    for line in [
        "Predicates (11, in evaluation order; from the file):",
        "Priorities (8; from the file):",
        "weight 10000  NodePreferAvoidPodsPriority\n",
        "weight     2  Zone: ServiceAntiAffinity (label \"zone\")",
        "Extenders: none",
        "hardPodAffinitySymmetricWeight: 1 (default)",
        "alwaysCheckAllPredicates: false (default)",
        "Warnings (2):",
        "  - predicates[7]: \"CheckNodeMemoryPressure\" is no longer registered by kube-scheduler v1.22",
    ] {
        assert!(text.contains(line), "describe lacks {line:?}:\n{text}");
    }
    let orders: Vec<u32> = policy.predicates.iter().map(|p| p.kind.order()).collect();
    assert!(orders.windows(2).all(|w| w[0] < w[1]), "{orders:?}");
}

#[test]
fn describe_marks_defaults_and_shows_extenders() {
    let text = default_policy().describe();
    for line in [
        "Predicates (12, in evaluation order; default provider):",
        "Priorities (9; default provider):",
        "Warnings: none",
    ] {
        assert!(text.contains(line), "describe lacks {line:?}:\n{text}");
    }
    let text = parsed(
        r#"{"hardPodAffinitySymmetricWeight": 10, "alwaysCheckAllPredicates": true, "priorities": [
            {"name": "Binpack", "weight": 3, "argument": {"requestedToCapacityRatioArguments":
                {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}],
            "extenders": [{"urlPrefix": "https://ext:8443/s", "filterVerb": "filter", "prioritizeVerb": "prio",
            "weight": 5, "httpTimeout": 30000000000, "tlsConfig": {"insecure": true, "caData": "QUJD"},
            "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": true}]}]}"#,
    )
    .describe();
    for line in [
        "weight     3  Binpack: RequestedToCapacityRatio (shape [0%->0, 100%->10], resources [])",
        "priorities[0].argument.requestedToCapacityRatioArguments.resources: has no effect",
        "Extenders (1, in call order):",
        "   1. https://ext:8443/s",
        "filter: filter, prioritize: prio (weight 5), bind: -, preempt: -",
        "https: no, httpTimeout: 30s, nodeCacheCapable: no, ignorable: no",
        "tls: insecure: yes, caData: 3 bytes",
        "managedResources: example.com/foo (ignored by scheduler)",
        "hardPodAffinitySymmetricWeight: 10\n",
        "alwaysCheckAllPredicates: true\n",
    ] {
        assert!(text.contains(line), "describe lacks {line:?}:\n{text}");
    }
}

#[test]
fn an_empty_policy_is_the_default_provider() {
    let policy = parsed("{}");
    assert_eq!(policy, default_policy());
    assert_eq!(
        policy.defaulted,
        Defaulted {
            predicates: true,
            priorities: true,
            hard_pod_affinity_symmetric_weight: true,
            always_check_all_predicates: true,
        }
    );
    assert_eq!(policy.hard_pod_affinity_symmetric_weight, 1);
    let explicit = parsed(
        r#"{"predicates": [], "hardPodAffinitySymmetricWeight": 3, "alwaysCheckAllPredicates": false}"#,
    );
    assert_eq!(
        explicit.defaulted,
        Defaulted {
            predicates: false,
            priorities: true,
            hard_pod_affinity_symmetric_weight: false,
            always_check_all_predicates: false,
        }
    );
}

#[test]
fn extender_fields_are_typed_and_keys_case_insensitive() {
    let policy = parsed(
        r#"{"extenders": [{"URLPrefix": "https://a/sched", "filterverb": "filter", "PreemptVerb": "",
        "PRIORITIZEVERB": "prioritize", "Weight": 2, "BindVerb": "bind", "EnableHTTPS": true,
        "HTTPTimeout": 1500000000, "NodeCacheCapable": true, "Ignorable": true,
        "TLSConfig": {"Insecure": true, "ServerName": "ext", "CertFile": "/c", "KeyFile": "/k", "CAFile": "/ca",
                      "CertData": "QQ==", "KeyData": "QUI=", "CAData": "QUJD"},
        "ManagedResources": [{"Name": "example.com/foo", "IgnoredByScheduler": true}, {"name": "example.com/bar"}]}]}"#,
    );
    assert_eq!(
        policy.extenders,
        vec![Extender {
            url_prefix: "https://a/sched".into(),
            filter_verb: Some("filter".into()),
            preempt_verb: None,
            prioritize_verb: Some("prioritize".into()),
            bind_verb: Some("bind".into()),
            weight: 2,
            enable_https: true,
            tls_config: Some(ExtenderTlsConfig {
                insecure: true,
                server_name: "ext".into(),
                cert_file: "/c".into(),
                key_file: "/k".into(),
                ca_file: "/ca".into(),
                cert_data: b"A".to_vec(),
                key_data: b"AB".to_vec(),
                ca_data: b"ABC".to_vec(),
            }),
            http_timeout: Duration::from_millis(1500),
            node_cache_capable: true,
            managed_resources: vec![
                ManagedResource {
                    name: "example.com/foo".into(),
                    ignored_by_scheduler: true
                },
                ManagedResource {
                    name: "example.com/bar".into(),
                    ignored_by_scheduler: false
                },
            ],
            ignorable: true,
        }]
    );
}

#[test]
fn argument_kinds_carry_their_values() {
    let policy = parsed(
        r#"{"predicates": [{"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}}],
        "priorities": [{"name": "NoSpot", "weight": 2, "argument": {"labelPreference": {"label": "spot", "presence": false}}}]}"#,
    );
    let zoned = policy
        .predicates
        .iter()
        .find(|p| p.name == "Zoned")
        .map(|p| &p.kind);
    assert_eq!(
        zoned,
        Some(&PredicateKind::CheckNodeLabelPresence {
            labels: vec!["zone".into()],
            presence: true
        })
    );
    assert_eq!(
        policy.priorities[0].kind,
        PriorityKind::NodeLabel {
            label: "spot".into(),
            presence: false
        }
    );
    assert_eq!(policy.priorities[0].weight, 2);
}

#[test]
fn load_names_the_file() {
    let missing = std::path::Path::new("/nonexistent/berth/policy.json");
    let error = load(missing)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        error.starts_with("/nonexistent/berth/policy.json: cannot read the policy file: "),
        "{error}"
    );

    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(br#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 0}]}"#)
        .expect("write");
    let error = load(file.path()).err();
    let shown = file.path().display().to_string();
    match error {
        Some(PolicyError::Invalid {
            file,
            path,
            message,
        }) => {
            assert_eq!(file, shown);
            assert_eq!(path, "priorities[0].weight");
            assert_eq!(message, "weight must be a positive integer, got 0");
        }
        other => panic!("expected an Invalid error, got {other:?}"),
    }

    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(OPENSHIFT_3_11.as_bytes()).expect("write");
    let policy = load(file.path()).expect("OpenShift policy loads");
    assert_eq!(policy.predicates.len(), 11);
}

#[test]
fn malformed_json_reports_line_and_column() {
    let error = parse(
        "{\n  \"predicates\": [\n    {\"name\": \"HostName\"}\n    {\"name\": \"x\"}\n  ]\n}",
        "p.json",
    )
    .err();
    match error {
        Some(PolicyError::Syntax {
            file,
            line,
            column,
            message,
        }) => {
            assert_eq!((file.as_str(), line, column), ("p.json", 4, 5));
            assert_eq!(message, "expected `,` or `]`");
        }
        other => panic!("expected a Syntax error, got {other:?}"),
    }
}

#[test]
fn json_output_uses_file_style_names() {
    let policy = parsed(
        r#"{"predicates": [{"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}}],
        "extenders": [{"urlPrefix": "http://a", "httpTimeout": 2000000000, "tlsConfig": {"keyData": "QUJD"}}]}"#,
    );
    let json = serde_json::to_value(&policy).expect("serializes");
    assert_eq!(json["predicates"][0]["name"], "CheckNodeUnschedulable");
    assert_eq!(
        json["predicates"][2]["kind"],
        serde_json::json!({"type": "CheckServiceAffinity", "labels": ["region"]})
    );
    assert_eq!(json["priorities"][4]["kind"]["type"], "NodePreferAvoidPods");
    assert_eq!(json["extenders"][0]["urlPrefix"], "http://a");
    assert_eq!(json["extenders"][0]["httpTimeout"], 2_000_000_000_u64);
    assert_eq!(json["extenders"][0]["tlsConfig"]["keyData"], "<3 bytes>");
    assert_eq!(json["hardPodAffinitySymmetricWeight"], 1);
    assert_eq!(json["defaulted"]["priorities"], true);
}
