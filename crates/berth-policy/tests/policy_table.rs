//! Table-driven tests of `parse`: each case is a Policy file and either substrings of the
//! effective configuration's summary or substrings of the error message.

use berth_policy::{EffectivePolicy, parse};

const SOURCE: &str = "policies/x.json";

/// What a case expects.
enum Expect {
    /// Every string occurs in `summary(policy)`.
    Ok(&'static [&'static str]),
    /// Every string occurs in the error's `Display`.
    Err(&'static [&'static str]),
}
use Expect::{Err, Ok};

/// One line per part; a line can be matched exactly by including its `\n`.
fn summary(policy: &EffectivePolicy) -> String {
    let predicates: Vec<String> = policy
        .predicates
        .iter()
        .map(|p| {
            let kind = format!("{:?}", p.kind);
            if kind == p.name {
                kind
            } else {
                format!("{}={kind}", p.name)
            }
        })
        .collect();
    let priorities: Vec<String> = policy
        .priorities
        .iter()
        .map(|p| {
            let kind = format!("{:?}", p.kind);
            if kind.contains('{') {
                format!("{}:{}={kind}", p.name, p.weight)
            } else {
                format!("{}:{}", p.name, p.weight)
            }
        })
        .collect();
    let extenders: Vec<String> = policy
        .extenders
        .iter()
        .map(|e| {
            let ignorable = if e.ignorable { ",ignorable" } else { "" };
            format!("{}[{:?}{ignorable}]", e.url_prefix, e.http_timeout)
        })
        .collect();
    format!(
        "predicates: {}\npriorities: {}\nextenders: {}\nhardPodAffinitySymmetricWeight: {}\n\
         alwaysCheckAllPredicates: {}\nwarnings: {}\n",
        predicates.join(", "),
        priorities.join(", "),
        extenders.join(", "),
        policy.hard_pod_affinity_symmetric_weight,
        policy.always_check_all_predicates,
        policy.warnings.join(" | ")
    )
}

const OPENSHIFT_3_11: &str = r#"{
  "kind": "Policy",
  "apiVersion": "v1",
  "predicates": [
    {"name": "NoVolumeZoneConflict"},
    {"name": "MaxEBSVolumeCount"},
    {"name": "MaxGCEPDVolumeCount"},
    {"name": "MatchInterPodAffinity"},
    {"name": "NoDiskConflict"},
    {"name": "GeneralPredicates"},
    {"name": "PodToleratesNodeTaints"},
    {"name": "CheckNodeMemoryPressure"},
    {"name": "CheckNodeDiskPressure"},
    {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "SelectorSpreadPriority", "weight": 1},
    {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
    {"name": "NodeAffinityPriority", "weight": 1},
    {"name": "TaintTolerationPriority", "weight": 1},
    {"name": "InterPodAffinityPriority", "weight": 1},
    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}}
  ]
}"#;

const DEFAULT_PREDICATES: &str = "predicates: CheckNodeUnschedulable, GeneralPredicates, \
    NoDiskConflict, PodToleratesNodeTaints, MaxEBSVolumeCount, MaxGCEPDVolumeCount, \
    MaxCSIVolumeCountPred, MaxAzureDiskVolumeCount, CheckVolumeBinding, NoVolumeZoneConflict, \
    EvenPodsSpread, MatchInterPodAffinity\n";

const DEFAULT_PRIORITIES: &str = "priorities: SelectorSpreadPriority:1, \
    InterPodAffinityPriority:1, LeastRequestedPriority:1, BalancedResourceAllocation:1, \
    NodePreferAvoidPodsPriority:10000, NodeAffinityPriority:1, TaintTolerationPriority:1, \
    ImageLocalityPriority:1, EvenPodsSpreadPriority:2\n";

const NO_WARNINGS: &str = "\nwarnings: \n";

#[rustfmt::skip]
const CASES: &[(&str, &str, Expect)] = &[
    // ---- Accepted files -------------------------------------------------------------------
    ("openshift 3.11 policy: evaluation order and priorities", OPENSHIFT_3_11, Ok(&[
        "predicates: CheckNodeUnschedulable, GeneralPredicates, NoDiskConflict, \
         PodToleratesNodeTaints, Region=CheckServiceAffinity { labels: [\"region\"] }, \
         MaxEBSVolumeCount, MaxGCEPDVolumeCount, NoVolumeZoneConflict, CheckNodeMemoryPressure, \
         CheckNodeDiskPressure, MatchInterPodAffinity\n",
        "priorities: LeastRequestedPriority:1, BalancedResourceAllocation:1, \
         SelectorSpreadPriority:1, NodePreferAvoidPodsPriority:10000, NodeAffinityPriority:1, \
         TaintTolerationPriority:1, InterPodAffinityPriority:1, \
         Zone:2=ServiceAntiAffinity { label: \"zone\" }\n",
        "hardPodAffinitySymmetricWeight: 1\n",
        "predicates[7]: \"CheckNodeMemoryPressure\" is no longer registered by kube-scheduler v1.22",
        "predicates[8]: \"CheckNodeDiskPressure\" is no longer registered by kube-scheduler v1.22",
    ])),
    ("empty object gives the default provider", "{}", Ok(&[DEFAULT_PREDICATES, DEFAULT_PRIORITIES, NO_WARNINGS])),
    ("kind and apiVersion are optional but accepted", r#"{"kind": "Policy", "apiVersion": "v1"}"#,
        Ok(&[DEFAULT_PREDICATES, DEFAULT_PRIORITIES])),
    ("the scheduler config group's v1 is accepted", r#"{"kind": "Policy", "apiVersion": "kubescheduler.config.k8s.io/v1"}"#,
        Ok(&[DEFAULT_PREDICATES])),
    ("null lists give the default provider", r#"{"predicates": null, "priorities": null, "extenders": null}"#,
        Ok(&[DEFAULT_PREDICATES, DEFAULT_PRIORITIES, "extenders: \n"])),
    ("empty lists give nothing but the mandatory predicates", r#"{"predicates": [], "priorities": []}"#,
        Ok(&["predicates: CheckNodeUnschedulable, PodToleratesNodeTaints\n", "priorities: \n", NO_WARNINGS])),
    ("absent predicates with explicit priorities", r#"{"priorities": [{"name": "MostRequestedPriority", "weight": 3}]}"#,
        Ok(&[DEFAULT_PREDICATES, "priorities: MostRequestedPriority:3\n"])),
    ("mandatory predicates are added", r#"{"predicates": [{"name": "GeneralPredicates"}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, GeneralPredicates, PodToleratesNodeTaints\n", NO_WARNINGS])),
    ("mandatory predicates listed explicitly appear once",
        r#"{"predicates": [{"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeUnschedulable"}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, PodToleratesNodeTaints\n", NO_WARNINGS])),
    ("every built-in predicate, listed backwards, runs in the fixed order", r#"{"predicates": [
        {"name": "MatchInterPodAffinity"}, {"name": "EvenPodsSpread"}, {"name": "CheckNodeDiskPressure"},
        {"name": "CheckNodePIDPressure"}, {"name": "CheckNodeMemoryPressure"}, {"name": "NoVolumeZoneConflict"},
        {"name": "CheckVolumeBinding"}, {"name": "MaxCinderVolumeCount"}, {"name": "MaxAzureDiskVolumeCount"},
        {"name": "MaxCSIVolumeCountPred"}, {"name": "MaxGCEPDVolumeCount"}, {"name": "MaxEBSVolumeCount"},
        {"name": "CheckServiceAffinity"}, {"name": "CheckNodeLabelPresence"},
        {"name": "PodToleratesNodeNoExecuteTaints"}, {"name": "PodToleratesNodeTaints"},
        {"name": "NoDiskConflict"}, {"name": "CheckPodCIDRCapacity"}, {"name": "PodFitsResources"},
        {"name": "MatchNamespaceNodeSelector"}, {"name": "MatchNodeSelector"}, {"name": "PodFitsHostPorts"},
        {"name": "HostName"}, {"name": "GeneralPredicates"}, {"name": "CheckNodeUnschedulable"},
        {"name": "CheckNodeCondition"}]}"#,
        Ok(&["predicates: CheckNodeCondition, CheckNodeUnschedulable, GeneralPredicates, HostName, \
              PodFitsHostPorts, MatchNodeSelector, \
              MatchNamespaceNodeSelector=MatchNamespaceNodeSelector { default_node_selector: \"\" }, \
              PodFitsResources, \
              CheckPodCIDRCapacity=CheckPodCIDRCapacity { source: PodCidr, when_missing: Reject }, \
              NoDiskConflict, PodToleratesNodeTaints, \
              PodToleratesNodeNoExecuteTaints, \
              CheckNodeLabelPresence=CheckNodeLabelPresence { labels: [], presence: true }, \
              CheckServiceAffinity=CheckServiceAffinity { labels: [] }, MaxEBSVolumeCount, \
              MaxGCEPDVolumeCount, MaxCSIVolumeCountPred, MaxAzureDiskVolumeCount, MaxCinderVolumeCount, \
              CheckVolumeBinding, NoVolumeZoneConflict, CheckNodeMemoryPressure, CheckNodePIDPressure, \
              CheckNodeDiskPressure, EvenPodsSpread, MatchInterPodAffinity\n",
            "\"CheckNodeCondition\" is no longer registered by kube-scheduler v1.22",
            "\"PodToleratesNodeNoExecuteTaints\" is no longer registered by kube-scheduler v1.22",
            "\"CheckNodePIDPressure\" is no longer registered by kube-scheduler v1.22",
            "\"CheckNodeLabelPresence\" has no effect without a labelsPresence argument",
            "\"CheckServiceAffinity\" has no effect without a serviceAffinity argument",
            "\"CheckPodCIDRCapacity\" is a Berth extension: kube-scheduler rejects",
            "\"MatchNamespaceNodeSelector\" is a Berth extension"])),
    ("PodFitsPorts is an alias of PodFitsHostPorts", r#"{"predicates": [{"name": "PodFitsPorts"}]}"#,
        Ok(&["PodFitsPorts=PodFitsHostPorts,", "predicates[0]: \"PodFitsPorts\" is a deprecated alias of PodFitsHostPorts"])),
    ("an alias and its target are a duplicate",
        r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"}]}"#,
        Err(&["policies/x.json: predicates[1].name: \"PodFitsPorts\" duplicates predicates[0] (same PodFitsHostPorts); \
               name each predicate and priority once"])),
    ("an exact duplicate predicate is rejected",
        r#"{"predicates": [{"name": "NoDiskConflict"}, {"name": "HostName"}, {"name": "NoDiskConflict"}]}"#,
        Err(&["predicates[2].name: \"NoDiskConflict\" duplicates predicates[0]"])),
    ("an exact duplicate custom predicate is rejected", r#"{"predicates": [
        {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
        {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}}]}"#,
        Err(&["predicates[1].name: \"Region\" duplicates predicates[0]"])),
    ("ServiceSpreadingPriority behaves as SelectorSpreadPriority",
        r#"{"priorities": [{"name": "ServiceSpreadingPriority", "weight": 1}]}"#,
        Ok(&["priorities: ServiceSpreadingPriority:1\n", "priorities[0]: \"ServiceSpreadingPriority\" is a deprecated alias"])),
    ("a priority repeated under its alias is rejected", r#"{"priorities": [
        {"name": "SelectorSpreadPriority", "weight": 1}, {"name": "ImageLocalityPriority", "weight": 1},
        {"name": "ServiceSpreadingPriority", "weight": 3}]}"#,
        Err(&["priorities[2].name: \"ServiceSpreadingPriority\" duplicates priorities[0] (same SelectorSpreadPriority)"])),
    ("a priority repeated with the same weight is rejected",
        r#"{"priorities": [{"name": "NodeAffinityPriority", "weight": 2}, {"name": "NodeAffinityPriority", "weight": 2}]}"#,
        Err(&["priorities[1].name: \"NodeAffinityPriority\" duplicates priorities[0]"])),
    ("EqualPriority is accepted with a warning", r#"{"priorities": [{"name": "EqualPriority", "weight": 1}]}"#,
        Ok(&["priorities: EqualPriority:1\n", "never changes the ranking; kube-scheduler v1.22 skips it"])),
    ("RequestedToCapacityRatioPriority without argument uses the default shape",
        r#"{"priorities": [{"name": "RequestedToCapacityRatioPriority", "weight": 2}]}"#,
        Ok(&["RequestedToCapacityRatioPriority:2=RequestedToCapacityRatio { shape: [ShapePoint { utilization: 0, score: 10 }, \
              ShapePoint { utilization: 100, score: 0 }], resources: [ResourceWeight { name: \"cpu\", weight: 1 }, \
              ResourceWeight { name: \"memory\", weight: 1 }] }\n", "kube-scheduler v1.22 rejects it"])),
    ("requestedToCapacityRatioArguments without resources scores nothing, as v1.22's Policy path", r#"{"priorities": [
        {"name": "BinPack", "weight": 5, "argument": {"requestedToCapacityRatioArguments":
            {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}]}"#,
        Ok(&["BinPack:5=RequestedToCapacityRatio { shape: [ShapePoint { utilization: 0, score: 0 }, \
              ShapePoint { utilization: 100, score: 10 }], resources: [] }\n",
             "priorities[0].argument.requestedToCapacityRatioArguments.resources: has no effect: with no resources \
              listed, kube-scheduler v1.22 (and Berth) scores 0 on every node"])),
    ("requestedToCapacityRatioArguments with resources", r#"{"priorities": [
        {"name": "RequestedToCapacityRatioPriority", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
            {"shape": [{"utilization": 50, "score": 7}], "resources": [{"name": "example.com/gpu", "weight": 4}]}}}]}"#,
        Ok(&["shape: [ShapePoint { utilization: 50, score: 7 }], resources: [ResourceWeight { name: \"example.com/gpu\", weight: 4 }]",
             NO_WARNINGS])),
    ("several labelsPresence predicates share a slot in file order", r#"{"predicates": [
        {"name": "NoDiskConflict"},
        {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
        {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring", "draining"], "presence": false}}},
        {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region", "rack"]}}}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, NoDiskConflict, PodToleratesNodeTaints, \
              Zoned=CheckNodeLabelPresence { labels: [\"zone\"], presence: true }, \
              NotRetiring=CheckNodeLabelPresence { labels: [\"retiring\", \"draining\"], presence: false }, \
              Region=CheckServiceAffinity { labels: [\"region\", \"rack\"] }\n", NO_WARNINGS])),
    ("a predicate with a null argument has no argument", r#"{"predicates": [{"name": "HostName", "argument": null}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, HostName, PodToleratesNodeTaints\n"])),
    ("labelPreference priorities of one weight", r#"{"priorities": [
        {"name": "Gpu", "weight": 2, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
        {"name": "NoSpot", "weight": 2, "argument": {"labelPreference": {"label": "spot", "presence": false}}},
        {"name": "Rack", "weight": 5, "argument": {"serviceAntiAffinity": {"label": "rack"}}}]}"#,
        Ok(&["priorities: Gpu:2=NodeLabel { label: \"gpu\", presence: true }, \
              NoSpot:2=NodeLabel { label: \"spot\", presence: false }, \
              Rack:5=ServiceAntiAffinity { label: \"rack\" }\n", NO_WARNINGS])),
    ("presence not set defaults to false with a warning", r#"{"predicates": [
        {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"]}}}]}"#,
        Ok(&["presence: false", "predicates[0].argument.labelsPresence: presence is not set and defaults to false"])),
    ("namespaceNodeSelector argument", r#"{"predicates": [{"name": "MatchNamespaceNodeSelector",
        "argument": {"namespaceNodeSelector": {"defaultNodeSelector": "region=east, tier=web"}}}]}"#,
        Ok(&["MatchNamespaceNodeSelector=MatchNamespaceNodeSelector { default_node_selector: \"region=east, tier=web\" }",
             "predicates[0].argument.namespaceNodeSelector: a Berth extension"])),
    ("namespaceNodeSelector under a custom name runs in its slot", r#"{"predicates": [{"name": "PodFitsResources"},
        {"name": "NsSelector", "argument": {"namespaceNodeSelector": {"defaultNodeSelector": ""}}}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, \
              NsSelector=MatchNamespaceNodeSelector { default_node_selector: \"\" }, PodFitsResources, PodToleratesNodeTaints\n"])),
    ("tolerationRestriction guards taints by key, value and effect, after the taint predicates", r#"{"predicates": [
        {"name": "CheckTolerationRestriction", "argument": {"tolerationRestriction": {"taints": [
            {"taint": "example.com/dedicated=tenant-a:NoSchedule", "namespaces": ["tenant-a", "tenant-a-ci"]},
            {"taint": "gpu", "namespaces": []},
            {"taint": "gpu=a100:NoExecute", "namespaces": ["ml"]}]}}},
        {"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeLabelPresence"}]}"#,
        Ok(&["predicates: CheckNodeUnschedulable, PodToleratesNodeTaints, CheckTolerationRestriction=CheckTolerationRestriction \
              { guards: [TaintGuard { taint: \"example.com/dedicated=tenant-a:NoSchedule\", key: \"example.com/dedicated\", \
              value: Some(\"tenant-a\"), effect: Some(NoSchedule), namespaces: [\"tenant-a\", \"tenant-a-ci\"] }, \
              TaintGuard { taint: \"gpu\", key: \"gpu\", value: None, effect: None, namespaces: [] }, \
              TaintGuard { taint: \"gpu=a100:NoExecute\", key: \"gpu\", value: Some(\"a100\"), effect: Some(NoExecute), \
              namespaces: [\"ml\"] }] }, CheckNodeLabelPresence=",
             "predicates[0].argument.tolerationRestriction: a Berth extension"])),
    ("CheckTolerationRestriction without an argument says which", r#"{"predicates": [{"name": "CheckTolerationRestriction"}]}"#,
        Err(&["predicates[0]: \"CheckTolerationRestriction\" needs an argument: {\"tolerationRestriction\": {\"taints\": \
               [{\"taint\": \"key[=value][:effect]\", \"namespaces\": [...]}]}}"])),
    ("CheckTolerationRestriction with another kind's argument", r#"{"predicates": [{"name": "CheckTolerationRestriction",
        "argument": {"labelsPresence": {"labels": ["a"], "presence": true}}}]}"#,
        Err(&["predicates[0].name: \"CheckTolerationRestriction\" is Berth's CheckTolerationRestriction, but its argument \
               makes it a CheckNodeLabelPresence"])),
    ("tolerationRestriction under a custom name", r#"{"predicates": [{"name": "TenantGuard",
        "argument": {"tolerationRestriction": {"taints": [{"taint": "dedicated:NoExecute", "namespaces": ["a"]}]}}}]}"#,
        Ok(&["TenantGuard=CheckTolerationRestriction { guards: [TaintGuard { taint: \"dedicated:NoExecute\""])),
    ("tolerationRestriction without taints", r#"{"predicates": [{"name": "G1", "argument": {"tolerationRestriction": {}}}]}"#,
        Err(&["predicates[0].argument.tolerationRestriction.taints: missing (or null); expected a list of guarded taints"])),
    ("tolerationRestriction with an empty list", r#"{"predicates": [{"name": "G1", "argument": {"tolerationRestriction": {"taints": []}}}]}"#,
        Err(&["tolerationRestriction.taints: empty: list at least one taint to guard"])),
    ("a guarded PreferNoSchedule taint protects nothing", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a=b:PreferNoSchedule", "namespaces": []}]}}}]}"#,
        Err(&["tolerationRestriction.taints[0].taint: \"a=b:PreferNoSchedule\": a PreferNoSchedule taint does not keep \
               pods off a node"])),
    ("a guarded taint with an unknown effect", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a:Never", "namespaces": []}]}}}]}"#,
        Err(&["taints[0].taint: \"a:Never\": unknown effect \"Never\"; expected NoSchedule or NoExecute"])),
    ("a guarded taint with a bad key", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "-a=b", "namespaces": []}]}}}]}"#,
        Err(&["taints[0].taint: invalid taint \"-a=b\": expected key[=value][:effect]"])),
    ("a guarded taint without namespaces", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a"}]}}}]}"#,
        Err(&["taints[0].namespaces: missing (or null); expected a list of namespace names"])),
    ("a guarded taint with a bad namespace", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a", "namespaces": ["ok", "Team_A"]}]}}}]}"#,
        Err(&["taints[0].namespaces[1]: invalid namespace name \"Team_A\""])),
    ("a namespace listed twice", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a", "namespaces": ["x", "x"]}]}}}]}"#,
        Err(&["taints[0].namespaces[1]: namespace \"x\" is listed twice"])),
    ("a taint guarded twice", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a=b", "namespaces": ["x"]}, {"taint": "a=b", "namespaces": ["y"]}]}}}]}"#,
        Err(&["taints[1].taint: \"a=b\" is already guarded at predicates[0].argument.tolerationRestriction.taints[0]"])),
    ("an unknown field in a guarded taint", r#"{"predicates": [{"name": "G1", "argument":
        {"tolerationRestriction": {"taints": [{"taint": "a", "namespace": ["x"]}]}}}]}"#,
        Err(&["taints[0].namespace: unknown field `namespace`, expected one of: taint, namespaces"])),
    ("CheckNodeCircuitBreaker by name takes the defaults", r#"{"predicates": [{"name": "CheckNodeCircuitBreaker"}]}"#,
        Ok(&["CheckNodeCircuitBreaker=CheckNodeCircuitBreaker(CircuitBreakerArgs { failure_threshold: 3, min_workloads: 2, \
              window_seconds: 600, cool_down_seconds: 300, start_timeout_seconds: 120 })",
             "predicates[0]: \"CheckNodeCircuitBreaker\" is a Berth extension"])),
    ("circuitBreaker thresholds, the rest defaulted", r#"{"predicates": [{"name": "CheckNodeCircuitBreaker",
        "argument": {"circuitBreaker": {"failureThreshold": 5, "windowSeconds": 60, "startTimeoutSeconds": 30}}}]}"#,
        Ok(&["CheckNodeCircuitBreaker(CircuitBreakerArgs { failure_threshold: 5, min_workloads: 2, \
              window_seconds: 60, cool_down_seconds: 300, start_timeout_seconds: 30 })",
             "predicates[0].argument.circuitBreaker: a Berth extension"])),
    ("circuitBreaker with more workloads than failures", r#"{"predicates": [{"name": "B1",
        "argument": {"circuitBreaker": {"failureThreshold": 2, "minWorkloads": 3}}}]}"#,
        Err(&["predicates[0].argument.circuitBreaker.minWorkloads: 3 workloads cannot fit in 2 failures"])),
    ("circuitBreaker with a zero window", r#"{"predicates": [{"name": "B1",
        "argument": {"circuitBreaker": {"windowSeconds": 0}}}]}"#,
        Err(&["circuitBreaker.windowSeconds: must be in 1..=604800 (default 600), got 0"])),
    ("circuitBreaker with a misspelt field", r#"{"predicates": [{"name": "B1",
        "argument": {"circuitBreaker": {"threshold": 2}}}]}"#,
        Err(&["circuitBreaker.threshold: unknown field `threshold`, expected one of: failureThreshold, minWorkloads"])),
    ("workloadQuarantine with a quarantine node label", r#"{"predicates": [{"name": "CheckWorkloadQuarantine",
        "argument": {"workloadQuarantine": {"nodeThreshold": 2, "quarantineNodeLabel": "berth.dev/quarantine=true"}}}]}"#,
        Ok(&["CheckWorkloadQuarantine(WorkloadQuarantineArgs { node_threshold: 2, window_seconds: 3600, \
              not_ready_within_seconds: 600, cool_down_seconds: 3600, \
              quarantine_node_label: Some((\"berth.dev/quarantine\", Some(\"true\"))) })"])),
    ("two circuit breakers", r#"{"predicates": [{"name": "CheckNodeCircuitBreaker"},
        {"name": "Strict", "argument": {"circuitBreaker": {"failureThreshold": 1, "minWorkloads": 1}}}]}"#,
        Err(&["predicates[1].name: \"Strict\" is a second CheckNodeCircuitBreaker after predicates[0]; a policy has one \
               of each protection"])),
    ("workloadQuarantine of one node", r#"{"predicates": [{"name": "Q1",
        "argument": {"workloadQuarantine": {"nodeThreshold": 1}}}]}"#,
        Err(&["workloadQuarantine.nodeThreshold: 1 node going NotReady is no cascade; expected 2 or more"])),
    ("workloadQuarantine with a bad label", r#"{"predicates": [{"name": "Q1",
        "argument": {"workloadQuarantine": {"quarantineNodeLabel": "-q=x"}}}]}"#,
        Err(&["workloadQuarantine.quarantineNodeLabel: invalid label \"-q=x\": expected key[=value]"])),
    ("CheckWorkloadQuarantine with another kind's argument", r#"{"predicates": [{"name": "CheckWorkloadQuarantine",
        "argument": {"circuitBreaker": {}}}]}"#,
        Err(&["predicates[0].name: \"CheckWorkloadQuarantine\" is the built-in CheckWorkloadQuarantine, but its argument \
               makes it a CheckNodeCircuitBreaker"])),
    ("podIPCapacity from a node label, rejecting nodes without it by default", r#"{"predicates": [
        {"name": "CheckPodCIDRCapacity", "argument": {"podIPCapacity": {"nodeLabel": "example.com/pod-ips"}}}]}"#,
        Ok(&["CheckPodCIDRCapacity=CheckPodCIDRCapacity { source: NodeLabel(\"example.com/pod-ips\"), when_missing: Reject }",
             "predicates[0].argument.podIPCapacity: a Berth extension"])),
    ("podIPCapacity from an annotation, else the pod CIDRs", r#"{"predicates": [{"name": "EniIps",
        "argument": {"podIPCapacity": {"nodeAnnotation": "example.com/max-pod-ips", "whenMissing": "PodCIDR"}}}]}"#,
        Ok(&["EniIps=CheckPodCIDRCapacity { source: NodeAnnotation(\"example.com/max-pod-ips\"), when_missing: PodCIDR }"])),
    ("podIPCapacity from an allocatable resource", r#"{"predicates": [{"name": "PoolIps",
        "argument": {"podIPCapacity": {"resource": "example.com/pod-ips"}}}]}"#,
        Ok(&["PoolIps=CheckPodCIDRCapacity { source: Resource(\"example.com/pod-ips\"), when_missing: Reject }"])),
    ("podIPCapacity without a source", r#"{"predicates": [{"name": "P1", "argument": {"podIPCapacity": {"whenMissing": "Reject"}}}]}"#,
        Err(&["predicates[0].argument.podIPCapacity: podIPCapacity must set exactly one source of: nodeLabel, \
               nodeAnnotation, resource; it sets none"])),
    ("podIPCapacity with two sources", r#"{"predicates": [{"name": "P1", "argument":
        {"podIPCapacity": {"nodeLabel": "a", "resource": "example.com/b"}}}]}"#,
        Err(&["exactly one source of: nodeLabel, nodeAnnotation, resource; it sets nodeLabel, resource"])),
    ("podIPCapacity from cpu", r#"{"predicates": [{"name": "P1", "argument": {"podIPCapacity": {"resource": "cpu"}}}]}"#,
        Err(&["podIPCapacity.resource: \"cpu\" is not a count of addresses"])),
    ("podIPCapacity with a bad label key", r#"{"predicates": [{"name": "P1", "argument": {"podIPCapacity": {"nodeLabel": "a b"}}}]}"#,
        Err(&["podIPCapacity.nodeLabel: invalid label key: name part of \"a b\""])),
    ("podIPCapacity with an unknown whenMissing", r#"{"predicates": [{"name": "P1", "argument":
        {"podIPCapacity": {"nodeLabel": "a", "whenMissing": "Allow"}}}]}"#,
        Err(&["podIPCapacity.whenMissing: unknown value \"Allow\"; expected \"Reject\""])),
    ("a built-in predicate name drops its argument, as v1.22 does", r#"{"predicates": [
        {"name": "CheckServiceAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
        {"name": "CheckNodeLabelPresence", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}}]}"#,
        Ok(&["CheckNodeLabelPresence=CheckNodeLabelPresence { labels: [], presence: true }",
             "CheckServiceAffinity=CheckServiceAffinity { labels: [] }",
             "kube-scheduler v1.22 ignores the argument of an entry named \"CheckServiceAffinity\", so the \
              entry has no effect there; Berth ignores it too"])),
    ("RequestedToCapacityRatio, a name v1.22 refuses, applies its argument and says so", r#"{"priorities": [
        {"name": "RequestedToCapacityRatio", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
            {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
             "resources": [{"name": "cpu", "weight": 1}]}}}]}"#,
        Ok(&["RequestedToCapacityRatio:1=RequestedToCapacityRatio { shape: [ShapePoint { utilization: 0, score: 0 }, \
              ShapePoint { utilization: 100, score: 10 }], resources: [ResourceWeight { name: \"cpu\", weight: 1 }] }",
             "kube-scheduler v1.22 refuses to start with an entry named \"RequestedToCapacityRatio\"; Berth applies \
              the argument as RequestedToCapacityRatioPriority's"])),
    ("RequestedToCapacityRatio without argument: defaults, and v1.22 refuses it",
        r#"{"priorities": [{"name": "RequestedToCapacityRatio", "weight": 1}]}"#,
        Ok(&["resources: [ResourceWeight { name: \"cpu\", weight: 1 }, ResourceWeight { name: \"memory\", weight: 1 }]",
             "is a name kube-scheduler v1.22 refuses to start with (with or without arguments)"])),
    ("hardPodAffinitySymmetricWeight and alwaysCheckAllPredicates",
        r#"{"hardPodAffinitySymmetricWeight": 100, "alwaysCheckAllPredicates": true}"#,
        Ok(&["hardPodAffinitySymmetricWeight: 100\n", "alwaysCheckAllPredicates: true\n", NO_WARNINGS])),
    ("hardPodAffinitySymmetricWeight 0 means the default 1", r#"{"hardPodAffinitySymmetricWeight": 0}"#,
        Ok(&["hardPodAffinitySymmetricWeight: 1\n", "hardPodAffinitySymmetricWeight: 0 means \"not set\""])),
    ("weights beyond 32 bits work but warn", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 3000000000}]}"#,
        Ok(&["ImageLocalityPriority:3000000000", "priorities[0].weight: kube-scheduler v1.22 truncates weights to 32 bits"])),
    ("labelPreference and serviceAntiAffinity weights are checked per kind", r#"{"priorities": [
        {"name": "Gpu", "weight": 2, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
        {"name": "Zone", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "zone"}}}]}"#,
        Ok(&["priorities: Gpu:2=", "Zone:3="])),
    ("extender httpTimeout is integer nanoseconds; 0 and absent mean 5s", r#"{"extenders": [
        {"urlPrefix": "http://a", "httpTimeout": 1500000000},
        {"urlPrefix": "http://b", "httpTimeout": 0},
        {"urlPrefix": "http://c"}]}"#,
        Ok(&["extenders: http://a[1.5s], http://b[5s], http://c[5s]\n", NO_WARNINGS])),
    ("extender keys match case-insensitively", r#"{"extenders": [{"URLPrefix": "http://a", "FilterVerb": "filter",
        "PRIORITIZEVERB": "prioritize", "Weight": 1, "BindVerb": "bind", "enableHTTPS": true, "HTTPTimeout": 2000000000,
        "NodeCacheCapable": true, "Ignorable": false,
        "TLSConfig": {"Insecure": true, "ServerName": "ext", "CAData": "QUJD"},
        "ManagedResources": [{"Name": "example.com/foo", "IgnoredByScheduler": true}]}]}"#,
        Ok(&["extenders: http://a[2s]\n", NO_WARNINGS])),
    ("ignorable extenders are called last", r#"{"extenders": [
        {"urlPrefix": "http://a", "ignorable": true}, {"urlPrefix": "http://b"}, {"urlPrefix": "http://c", "ignorable": true}]}"#,
        Ok(&["extenders: http://b[5s], http://a[5s,ignorable], http://c[5s,ignorable]\n",
             "extenders: ignorable extenders are called after the others"])),

    // ---- Malformed JSON and schema errors ------------------------------------------------
    ("malformed JSON gives line and column", "{\n  \"predicates\": [\n    {\"name\": \"HostName\"},\n  ]\n}",
        Err(&["policies/x.json: line 4, column 3: malformed JSON: trailing comma"])),
    ("unterminated JSON", "{\"predicates\": [", Err(&["policies/x.json: line 1, column 16: malformed JSON: EOF while parsing a list"])),
    ("empty file", " \n", Err(&["policies/x.json: line 1, column 1: malformed JSON: the file is empty"])),
    ("trailing characters", "{} {}", Err(&["malformed JSON: trailing characters"])),
    ("top level must be an object", "[]", Err(&["policies/x.json: top level: invalid type: sequence, expected a Policy object (line 1, column 1)"])),
    ("unknown top-level field", r#"{"predicate": []}"#,
        Err(&["policies/x.json: predicate: unknown field `predicate`, expected one of: kind, apiVersion, predicates, \
               priorities, extenders, hardPodAffinitySymmetricWeight, alwaysCheckAllPredicates (line 1, column 12)"])),
    ("keys are case-sensitive outside extenders", r#"{"Predicates": []}"#, Err(&["Predicates: unknown field `Predicates`"])),
    ("unknown field in a priority (typo)", r#"{"priorities": [{"name": "ImageLocalityPriority", "wieght": 1}]}"#,
        Err(&["policies/x.json: priorities[0].wieght: unknown field `wieght`, expected one of: name, weight, argument"])),
    ("unknown argument kind of a predicate", r#"{"predicates": [{"name": "X1", "argument": {"labelPresence": {}}}]}"#,
        Err(&["predicates[0].argument.labelPresence: unknown field `labelPresence`, expected one of: serviceAffinity, \
               labelsPresence, namespaceNodeSelector, tolerationRestriction, podIPCapacity, circuitBreaker, workloadQuarantine, wasm"])),
    ("unknown field deep in requestedToCapacityRatioArguments", r#"{"priorities": [{"name": "R1", "weight": 1,
        "argument": {"requestedToCapacityRatioArguments": {"shape": [{"utilization": 0, "score": 1}, {"utilisation": 5}]}}}]}"#,
        Err(&["priorities[0].argument.requestedToCapacityRatioArguments.shape[1].utilisation: unknown field `utilisation`, \
               expected one of: utilization, score"])),
    ("unknown field in labelPreference", r#"{"priorities": [{"name": "L1", "weight": 1,
        "argument": {"labelPreference": {"label": "a", "presense": true}}}]}"#,
        Err(&["priorities[0].argument.labelPreference.presense: unknown field `presense`, expected one of: label, presence"])),
    ("unknown field in an extender", r#"{"extenders": [{"urlPrefix": "http://a", "urlprefx": "x"}]}"#,
        Err(&["extenders[0].urlprefx: unknown field `urlprefx` (keys here ignore case), expected one of: urlPrefix, filterVerb"])),
    ("unknown field in an extender's tlsConfig", r#"{"extenders": [{"urlPrefix": "http://a", "tlsConfig": {"insecur": true}}]}"#,
        Err(&["extenders[0].tlsConfig.insecur: unknown field `insecur`"])),
    ("unknown field in a managed resource", r#"{"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "a.io/b", "ignored": true}]}]}"#,
        Err(&["extenders[0].managedResources[0].ignored: unknown field `ignored`"])),
    ("duplicate key in a priority", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 1, "weight": 2}]}"#,
        Err(&["policies/x.json: priorities[0].weight: duplicate field `weight`: each key may appear once"])),
    ("duplicate top-level key", r#"{"predicates": [], "predicates": null}"#, Err(&["predicates: duplicate field `predicates`"])),
    ("duplicate extender key differing in case", r#"{"extenders": [{"urlPrefix": "http://a", "URLPREFIX": "http://b"}]}"#,
        Err(&["extenders[0].URLPREFIX: duplicate field `urlPrefix` (keys here ignore case)"])),
    ("weight of the wrong type", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": "1"}]}"#,
        Err(&["priorities[0].weight: invalid type: string \"1\", expected i64"])),
    ("fractional weight", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 1.5}]}"#,
        Err(&["priorities[0].weight: invalid type: floating point `1.5`, expected i64"])),
    ("presence of the wrong type", r#"{"priorities": [{"name": "L1", "weight": 1,
        "argument": {"labelPreference": {"label": "a", "presence": "yes"}}}]}"#,
        Err(&["priorities[0].argument.labelPreference.presence: invalid type: string \"yes\", expected a boolean"])),
    ("an array where a priority object is expected", r#"{"priorities": [["ImageLocalityPriority", 1]]}"#,
        Err(&["priorities[0]: invalid type: sequence, expected a priority object"])),
    ("httpTimeout must be an integer", r#"{"extenders": [{"urlPrefix": "http://a", "httpTimeout": 1.5e9}]}"#,
        Err(&["extenders[0].httpTimeout: invalid type: floating point"])),
    ("hardPodAffinitySymmetricWeight must be an integer", r#"{"hardPodAffinitySymmetricWeight": true}"#,
        Err(&["hardPodAffinitySymmetricWeight: invalid type: boolean `true`, expected i64"])),

    // ---- Names --------------------------------------------------------------------------
    ("kind must be Policy", r#"{"kind": "Polcy"}"#, Err(&["policies/x.json: kind: expected \"Policy\", got \"Polcy\""])),
    ("a KubeSchedulerConfiguration gets a hint", r#"{"kind": "KubeSchedulerConfiguration"}"#,
        Err(&["kind: expected \"Policy\"", "not a KubeSchedulerConfiguration"])),
    ("apiVersion must be v1", r#"{"apiVersion": "kubescheduler.config.k8s.io/v1beta1"}"#,
        Err(&["apiVersion: expected \"v1\" (or \"kubescheduler.config.k8s.io/v1\"), got \"kubescheduler.config.k8s.io/v1beta1\""])),
    ("unknown predicate name lists the accepted ones", r#"{"predicates": [{"name": "FooBar"}]}"#,
        Err(&["policies/x.json: predicates[0].name: predicate type not found for \"FooBar\"; expected one of: \
               CheckNodeCondition, CheckNodeUnschedulable, GeneralPredicates,", "MatchInterPodAffinity; or any name with \
               an argument (serviceAffinity, labelsPresence, namespaceNodeSelector, tolerationRestriction, \
               podIPCapacity, circuitBreaker, workloadQuarantine, wasm)"])),
    ("unknown priority name lists the accepted ones", r#"{"priorities": [{"name": "Spread", "weight": 1}]}"#,
        Err(&["priorities[0].name: priority type not found for \"Spread\"; expected one of: LeastRequestedPriority,",
              "or any name with an argument (serviceAntiAffinity, labelPreference, requestedToCapacityRatioArguments, wasm)"])),
    ("plugin names are not priority names", r#"{"priorities": [{"name": "NodeLabel", "weight": 1}]}"#,
        Err(&["priority type not found for \"NodeLabel\""])),
    ("a built-in name with an argument of another kind", r#"{"predicates": [
        {"name": "GeneralPredicates", "argument": {"serviceAffinity": {"labels": ["region"]}}}]}"#,
        Err(&["predicates[0].name: \"GeneralPredicates\" is the built-in GeneralPredicates, but its argument makes it a \
               CheckServiceAffinity; give the custom entry its own name"])),
    ("a built-in priority name with an argument", r#"{"priorities": [
        {"name": "NodeAffinityPriority", "weight": 1, "argument": {"labelPreference": {"label": "a", "presence": true}}}]}"#,
        Err(&["priorities[0].name: \"NodeAffinityPriority\" is the built-in NodeAffinity, but its argument makes it a NodeLabel"])),
    ("one name configured two ways", r#"{"predicates": [
        {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
        {"name": "Region", "argument": {"serviceAffinity": {"labels": ["zone"]}}}]}"#,
        Err(&["predicates[1].name: \"Region\" duplicates predicates[0]"])),
    ("one priority name configured two ways", r#"{"priorities": [
        {"name": "Zone", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
        {"name": "Zone", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}}]}"#,
        Err(&["priorities[1].name: \"Zone\" duplicates priorities[0]"])),

    // ---- Validation ----------------------------------------------------------------------
    ("priority weight 0", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 1}, {"name": "EvenPodsSpreadPriority", "weight": 0}]}"#,
        Err(&["policies/x.json: priorities[1].weight: weight must be a positive integer, got 0"])),
    ("negative priority weight", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": -2}]}"#,
        Err(&["priorities[0].weight: weight must be a positive integer, got -2"])),
    ("missing priority weight", r#"{"priorities": [{"name": "ImageLocalityPriority"}]}"#,
        Err(&["priorities[0].weight: missing (or null); expected a positive integer"])),
    ("weight at MaxWeight", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 922337203685477580}]}"#,
        Err(&["priorities[0].weight: weight 922337203685477580 is too large: it must be below 922337203685477580"])),
    ("total score overflows", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 50000000000000000},
        {"name": "NodeAffinityPriority", "weight": 50000000000000000}]}"#,
        Err(&["policies/x.json: priorities: the weights are too large", "overflows a 64-bit integer"])),
    ("extender weights count toward the total score", r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 90000000000000000}],
        "extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": 90000000000000000}]}"#,
        Err(&["extenders: the weights are too large"])),
    ("empty predicate argument", r#"{"predicates": [{"name": "X1", "argument": {}}]}"#,
        Err(&["predicates[0].argument: an argument must set exactly one of: serviceAffinity, labelsPresence, \
               namespaceNodeSelector, tolerationRestriction, podIPCapacity, circuitBreaker, workloadQuarantine, wasm; it sets none"])),
    ("two predicate arguments", r#"{"predicates": [{"name": "X1", "argument":
        {"serviceAffinity": {"labels": ["a"]}, "labelsPresence": {"labels": ["b"], "presence": true}}}]}"#,
        Err(&["predicates[0].argument: an argument must set exactly one of", "it sets 2: serviceAffinity, labelsPresence"])),
    ("an argument set to null counts as not set", r#"{"predicates": [{"name": "X1", "argument": {"serviceAffinity": null}}]}"#,
        Err(&["predicates[0].argument: an argument must set exactly one of", "it sets none"])),
    ("two priority arguments", r#"{"priorities": [{"name": "X1", "weight": 1, "argument":
        {"serviceAntiAffinity": {"label": "a"}, "labelPreference": {"label": "b", "presence": true}}}]}"#,
        Err(&["priorities[0].argument: an argument must set exactly one of: serviceAntiAffinity, labelPreference, \
               requestedToCapacityRatioArguments, wasm; it sets 2"])),
    ("serviceAffinity without labels", r#"{"predicates": [{"name": "Region", "argument": {"serviceAffinity": {}}}]}"#,
        Err(&["predicates[0].argument.serviceAffinity.labels: missing (or null); expected a list of node label keys"])),
    ("serviceAntiAffinity without label", r#"{"priorities": [{"name": "Zone", "weight": 1, "argument": {"serviceAntiAffinity": {}}}]}"#,
        Err(&["priorities[0].argument.serviceAntiAffinity.label: missing (or null)"])),
    ("requestedToCapacityRatioArguments twice", r#"{"priorities": [
        {"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {"shape": [{"utilization": 0, "score": 0}]}}},
        {"name": "R2", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {"shape": [{"utilization": 0, "score": 0}]}}}]}"#,
        Err(&["priorities[1]: RequestedToCapacityRatio may be configured once, and \"R1\" at priorities[0] already does"])),
    ("labelPreference priorities with different weights", r#"{"priorities": [
        {"name": "Gpu", "weight": 2, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
        {"name": "Ssd", "weight": 3, "argument": {"labelPreference": {"label": "ssd", "presence": true}}}]}"#,
        Err(&["priorities[1].weight: all labelPreference priorities must have the same weight: \"Ssd\" has 3 but \"Gpu\" at priorities[0] has 2"])),
    ("serviceAntiAffinity priorities with different weights", r#"{"priorities": [
        {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
        {"name": "Rack", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}}]}"#,
        Err(&["priorities[1].weight: all serviceAntiAffinity priorities must have the same weight"])),
    ("labelsPresence predicates contradicting each other", r#"{"predicates": [
        {"name": "HasGpu", "argument": {"labelsPresence": {"labels": ["gpu"], "presence": true}}},
        {"name": "NoGpu", "argument": {"labelsPresence": {"labels": ["gpu"], "presence": false}}}]}"#,
        Err(&["predicates[1].argument.labelsPresence.labels: label \"gpu\" must be absent for \"NoGpu\" but present for \
               \"HasGpu\" at predicates[0].argument.labelsPresence.labels; no node can pass both"])),
    ("labelPreference priorities contradicting each other", r#"{"priorities": [
        {"name": "Gpu", "weight": 1, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
        {"name": "NoGpu", "weight": 1, "argument": {"labelPreference": {"label": "gpu", "presence": false}}}]}"#,
        Err(&["priorities[1].argument.labelPreference: label \"gpu\" is preferred absent for \"NoGpu\""])),
    ("hardPodAffinitySymmetricWeight above 100", r#"{"hardPodAffinitySymmetricWeight": 101}"#,
        Err(&["policies/x.json: hardPodAffinitySymmetricWeight: must be in 0..=100 (0 means the default, 1), got 101"])),
    ("negative hardPodAffinitySymmetricWeight", r#"{"hardPodAffinitySymmetricWeight": -1}"#,
        Err(&["hardPodAffinitySymmetricWeight: must be in 0..=100", "got -1"])),
    ("huge hardPodAffinitySymmetricWeight", r#"{"hardPodAffinitySymmetricWeight": 4294967297}"#,
        Err(&["hardPodAffinitySymmetricWeight: must be in 0..=100", "got 4294967297"])),
    ("empty shape", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {"shape": []}}}]}"#,
        Err(&["priorities[0].argument.requestedToCapacityRatioArguments.shape: at least one point must be specified"])),
    ("missing shape", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {}}}]}"#,
        Err(&["requestedToCapacityRatioArguments.shape: at least one point must be specified"])),
    ("shape utilization must increase", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 10, "score": 1}, {"utilization": 50, "score": 2}, {"utilization": 50, "score": 3}]}}}]}"#,
        Err(&["shape[2].utilization: utilization must increase strictly from point to point: 50 follows 50"])),
    ("shape utilization above 100", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 101, "score": 1}]}}}]}"#,
        Err(&["shape[0].utilization: must be in 0..=100, got 101"])),
    ("negative shape utilization", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": -1, "score": 1}]}}}]}"#,
        Err(&["shape[0].utilization: must be in 0..=100, got -1"])),
    ("shape score above 10", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 11}]}}}]}"#,
        Err(&["shape[1].score: must be in 0..=10, got 11"])),
    ("shape point without score", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 0}]}}}]}"#,
        Err(&["shape[0].score: missing (or null); expected an integer in 0..=10"])),
    ("resource weight 0", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": "cpu", "weight": 0}]}}}]}"#,
        Err(&["resources[0].weight: resource weight must be >= 1, got 0"])),
    ("resource without weight", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": "cpu"}]}}}]}"#,
        Err(&["resources[0].weight: missing (or null); expected an integer >= 1"])),
    ("resource listed twice", r#"{"priorities": [{"name": "R1", "weight": 1, "argument": {"requestedToCapacityRatioArguments":
        {"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]}}}]}"#,
        Err(&["resources[1].name: resource \"cpu\" is listed more than once"])),
    ("invalid namespaceNodeSelector", r#"{"predicates": [{"name": "MatchNamespaceNodeSelector",
        "argument": {"namespaceNodeSelector": {"defaultNodeSelector": "region"}}}]}"#,
        Err(&["predicates[0].argument.namespaceNodeSelector.defaultNodeSelector: invalid selector term \"region\""])),
    ("namespaceNodeSelector with a bad label value", r#"{"predicates": [{"name": "MatchNamespaceNodeSelector",
        "argument": {"namespaceNodeSelector": {"defaultNodeSelector": "region=east coast"}}}]}"#,
        Err(&["defaultNodeSelector: label value \"east coast\" must consist of"])),
    ("two extenders may not both bind", r#"{"extenders": [{"urlPrefix": "http://a", "bindVerb": "bind"},
        {"urlPrefix": "http://b"}, {"urlPrefix": "http://c", "bindVerb": "bind"}]}"#,
        Err(&["policies/x.json: extenders[2].bindVerb: only one extender may bind, and extenders[0] already has a bindVerb"])),
    ("an empty bindVerb does not bind", r#"{"extenders": [{"urlPrefix": "http://a", "bindVerb": "bind"},
        {"urlPrefix": "http://b", "bindVerb": ""}, {"urlPrefix": "http://c", "bindVerb": "bind", "weight": 1}]}"#,
        Err(&["extenders[2].bindVerb: only one extender may bind"])),
    ("a prioritizing extender needs a positive weight", r#"{"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize"}]}"#,
        Err(&["extenders[0].weight: an extender with a prioritizeVerb must have a positive weight, got 0"])),
    ("a prioritizing extender with a negative weight", r#"{"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": -1}]}"#,
        Err(&["extenders[0].weight: an extender with a prioritizeVerb must have a positive weight, got -1"])),
    ("an extender needs a urlPrefix", r#"{"extenders": [{"filterVerb": "filter"}]}"#,
        Err(&["extenders[0].urlPrefix: missing (or null); expected the extender's URL prefix"])),
    ("an empty urlPrefix", r#"{"extenders": [{"urlPrefix": ""}]}"#, Err(&["extenders[0].urlPrefix: must not be empty"])),
    ("negative httpTimeout", r#"{"extenders": [{"urlPrefix": "http://a", "httpTimeout": -1}]}"#,
        Err(&["extenders[0].httpTimeout: must be >= 0 (integer nanoseconds; 0 means the default 5s), got -1"])),
    ("managed resource without a domain", r#"{"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "foo"}]}]}"#,
        Err(&["extenders[0].managedResources[0].name: \"foo\" is not an extended resource name"])),
    ("managed resource in kubernetes.io", r#"{"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "kubernetes.io/foo"}]}]}"#,
        Err(&["managedResources[0].name: \"kubernetes.io/foo\" is not an extended resource name"])),
    ("managed resource with an invalid name", r#"{"extenders": [{"urlPrefix": "http://a", "managedResources": [{"name": "Example.com/foo"}]}]}"#,
        Err(&["managedResources[0].name: prefix part of \"Example.com/foo\" must be a lowercase DNS subdomain"])),
    ("managed resource names are unique across extenders", r#"{"extenders": [
        {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/foo"}]},
        {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/bar"}, {"name": "example.com/foo"}]}]}"#,
        Err(&["extenders[1].managedResources[1].name: duplicate extender managed resource name \"example.com/foo\" \
               (first at extenders[0].managedResources[0].name)"])),
    ("tlsConfig data must be base64", r#"{"extenders": [{"urlPrefix": "https://a", "tlsConfig": {"caData": "not base64!"}}]}"#,
        Err(&["extenders[0].tlsConfig.caData: not valid base64"])),
    // ---- WASM plugins -----------------------------------------------------------------------
    ("a wasm predicate runs after every built-in, with defaults", r#"{"predicates": [
        {"name": "GpuFit", "argument": {"wasm": {"module": "gpu.wasm"}}}, {"name": "MatchInterPodAffinity"}]}"#,
        Ok(&["MatchInterPodAffinity, GpuFit=Wasm(WasmPlugin { module: \"gpu.wasm\", config: \"{}\", \
              failure_policy: Fail, timeout_millis: 200, memory_limit_mib: 128 })\n",
             "predicates[0].argument.wasm: a Berth extension"])),
    ("a wasm priority with config and limits", r#"{"priorities": [{"name": "Cost", "weight": 2, "argument":
        {"wasm": {"module": "team/cost.wasm", "config": {"label": "price", "spot": [1, 2]}, "failurePolicy": "Ignore",
        "timeoutMillis": 50, "memoryLimitMiB": 32}}}]}"#,
        Ok(&["priorities: Cost:2=Wasm(WasmPlugin { module: \"team/cost.wasm\", \
              config: \"{\\\"label\\\":\\\"price\\\",\\\"spot\\\":[1,2]}\", failure_policy: Ignore, \
              timeout_millis: 50, memory_limit_mib: 32 })\n"])),
    ("a wasm module is required", r#"{"predicates": [{"name": "P1", "argument": {"wasm": {}}}]}"#,
        Err(&["predicates[0].argument.wasm.module: missing (or null); expected a module file"])),
    ("a wasm module may not leave the plugins directory", r#"{"predicates": [{"name": "P1",
        "argument": {"wasm": {"module": "../x.wasm"}}}]}"#,
        Err(&["predicates[0].argument.wasm.module: \"../x.wasm\" must stay inside the plugins directory"])),
    ("an unknown failurePolicy", r#"{"priorities": [{"name": "P1", "weight": 1,
        "argument": {"wasm": {"module": "x.wasm", "failurePolicy": "fail"}}}]}"#,
        Err(&["priorities[0].argument.wasm.failurePolicy: expected \"Fail\" or \"Ignore\", got \"fail\""])),
    ("a zero timeout", r#"{"predicates": [{"name": "P1", "argument": {"wasm": {"module": "x.wasm", "timeoutMillis": 0}}}]}"#,
        Err(&["predicates[0].argument.wasm.timeoutMillis: must be in 1..=10000 (default 200), got 0"])),
    ("too much memory", r#"{"predicates": [{"name": "P1", "argument": {"wasm": {"module": "x.wasm", "memoryLimitMiB": 5000}}}]}"#,
        Err(&["wasm.memoryLimitMiB: must be in 1..=4096 (default 128), got 5000"])),
    ("a typo in the wasm object", r#"{"predicates": [{"name": "P1", "argument": {"wasm": {"modul": "x.wasm"}}}]}"#,
        Err(&["predicates[0].argument.wasm.modul: unknown field `modul`, expected one of: module, config, \
               failurePolicy, timeoutMillis, memoryLimitMiB"])),
    ("a built-in name cannot be a plugin", r#"{"predicates": [{"name": "HostName", "argument": {"wasm": {"module": "x.wasm"}}}]}"#,
        Err(&["predicates[0].name: \"HostName\" is the built-in HostName, but its argument makes it a WasmPlugin"])),
];

#[test]
fn table() {
    let mut failures = Vec::new();
    for (name, json, expect) in CASES {
        match (parse(json, SOURCE), expect) {
            (Result::Ok(policy), Ok(wanted)) => {
                let got = summary(&policy);
                for want in *wanted {
                    if !got.contains(want) {
                        failures.push(format!(
                            "{name}: summary lacks {want:?}\n--- summary:\n{got}"
                        ));
                    }
                }
            }
            (Result::Err(error), Err(wanted)) => {
                let got = error.to_string();
                for want in *wanted {
                    if !got.contains(want) {
                        failures.push(format!("{name}: error lacks {want:?}\n--- error:\n{got}"));
                    }
                }
            }
            (Result::Ok(policy), Err(_)) => {
                failures.push(format!(
                    "{name}: expected an error, got\n{}",
                    summary(&policy)
                ));
            }
            (Result::Err(error), Ok(_)) => {
                failures.push(format!("{name}: unexpected error: {error}"))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}

#[test]
fn error_display_is_exactly_file_path_message() {
    let json = r#"{"priorities": [{"name": "ImageLocalityPriority", "weight": 1}, {"name": "NodeAffinityPriority", "weight": 0}]}"#;
    let error = parse(json, SOURCE).err().map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("policies/x.json: priorities[1].weight: weight must be a positive integer, got 0")
    );
}

/// Entry names exactly as kube-scheduler v1.22.17 takes them: any string, a missing or null
/// name being Go's "". What v1.22 accepts or refuses was checked by running each policy
/// through the reference binary (`kube-scheduler-v1.22`, built by
/// `scripts/control-plane.sh --with-reference-scheduler`) with `--policy-config-file`.
/// Upstream, k8s.io/kubernetes v1.22.17:
/// - pkg/scheduler/apis/config/validation/validation.go:298-317, `ValidatePolicy`: weights
///   (303), custom priorities (306), extenders (309), hardPodAffinitySymmetricWeight (313);
///   no rule about names.
/// - pkg/scheduler/framework/plugins/legacy_registry.go:565-584, `ProcessPredicatePolicy`: a
///   name is looked up, and refused ("predicate type not found for %q", 584) only when the
///   entry has no argument; 623-644, `ProcessPriorityPolicy`, the same for priorities (644).
#[test]
fn entry_names_as_v1_22_takes_them() {
    let custom_predicate = |name: &str| {
        format!(
            r#"{{"predicates": [{{"name": {name}, "argument": {{"serviceAffinity": {{"labels": ["rack"]}}}}}}]}}"#
        )
    };
    let custom_priority = |name: &str| {
        format!(
            r#"{{"priorities": [{{"name": {name}, "weight": 2, "argument": {{"serviceAntiAffinity": {{"label": "rack"}}}}}}]}}"#
        )
    };
    let empty_warning = "warnings: predicates[0].name: is empty (or missing): kube-scheduler v1.22 accepts that, \
         but explanations, events and metrics will call this entry \"\"; give it a name\n";
    // (case, policy, Ok(lines of the summary) or Err(the message))
    type Case = (
        &'static str,
        String,
        Result<Vec<&'static str>, &'static str>,
    );
    let cases: Vec<Case> = vec![
        // Accepted by v1.22.17 (validation.go:298-317 has no name rule).
        (
            "underscore",
            custom_predicate(r#""rack_affinity""#),
            Result::Ok(vec![
                "rack_affinity=CheckServiceAffinity { labels: [\"rack\"] }",
                NO_WARNINGS,
            ]),
        ),
        (
            "one character",
            custom_predicate(r#""Z""#),
            Result::Ok(vec![
                "PodToleratesNodeTaints, Z=CheckServiceAffinity",
                NO_WARNINGS,
            ]),
        ),
        (
            "leading dash",
            custom_predicate(r#""-Zone""#),
            Result::Ok(vec!["-Zone=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "trailing dash",
            custom_predicate(r#""Zone-""#),
            Result::Ok(vec!["Zone-=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "space",
            custom_predicate(r#""My Region""#),
            Result::Ok(vec!["My Region=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "slash and dot",
            custom_predicate(r#""a/b.c""#),
            Result::Ok(vec!["a/b.c=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "non-ASCII",
            custom_predicate(r#""名前""#),
            Result::Ok(vec!["名前=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "300 characters",
            custom_predicate(&format!("\"{}\"", "L".repeat(300))),
            Result::Ok(vec!["LLLL=CheckServiceAffinity", NO_WARNINGS]),
        ),
        (
            "priority with an underscore",
            custom_priority(r#""rack_spread""#),
            Result::Ok(vec![
                "priorities: rack_spread:2=ServiceAntiAffinity { label: \"rack\" }\n",
                NO_WARNINGS,
            ]),
        ),
        // Accepted by v1.22.17 with the name "" (Go's zero value); Berth warns.
        (
            "empty",
            custom_predicate(r#""""#),
            Result::Ok(vec![
                "PodToleratesNodeTaints, =CheckServiceAffinity",
                empty_warning,
            ]),
        ),
        (
            "null",
            custom_predicate("null"),
            Result::Ok(vec!["=CheckServiceAffinity", empty_warning]),
        ),
        (
            "missing",
            r#"{"predicates": [{"argument": {"serviceAffinity": {"labels": ["rack"]}}}]}"#
                .to_owned(),
            Result::Ok(vec!["=CheckServiceAffinity", empty_warning]),
        ),
        // Refused by v1.22.17 only because there is no argument (legacy_registry.go:584, 644).
        (
            "unknown predicate without an argument",
            r#"{"predicates": [{"name": "Z"}]}"#.to_owned(),
            Result::Err("predicate type not found for \"Z\""),
        ),
        (
            "unknown priority without an argument",
            r#"{"priorities": [{"name": "rack_spread", "weight": 1}]}"#.to_owned(),
            Result::Err("priority type not found for \"rack_spread\""),
        ),
        (
            "empty name without an argument",
            r#"{"predicates": [{"name": ""}]}"#.to_owned(),
            Result::Err("predicate type not found for \"\""),
        ),
    ];
    let mut failures = Vec::new();
    for (case, policy, want) in &cases {
        match (parse(policy, SOURCE), want) {
            (Result::Ok(got), Result::Ok(lines)) => {
                let got = summary(&got);
                for line in lines {
                    if !got.contains(line) {
                        failures.push(format!("{case}: summary lacks {line:?}\n{got}"));
                    }
                }
            }
            (Result::Err(got), Result::Err(message)) => {
                let got = got.to_string();
                if !got.contains(message) {
                    failures.push(format!("{case}: error lacks {message:?}: {got}"));
                }
            }
            (got, _) => failures.push(format!("{case}: got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
