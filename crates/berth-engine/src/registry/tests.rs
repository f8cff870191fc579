use super::*;
use crate::testkit::*;

fn build(text: &str, gates: FeatureGates) -> Scheduler {
    let policy = berth_policy::parse(text, "p.json").expect("valid policy");
    let config = CycleConfig {
        feature_gates: gates,
        ..CycleConfig::default()
    };
    scheduler_for(&policy, config).expect("scheduler")
}

const GATE_OFF: FeatureGates = FeatureGates {
    default_pod_topology_spread: false,
};
const GATE_ON: FeatureGates = FeatureGates {
    default_pod_topology_spread: true,
};

/// Entries become rules as v1.22's legacy registry turns them into plugins: (policy,
/// gates, filters in order, scores with weights).
#[test]
fn entries_become_plugins_as_v122() {
    type Case = (
        &'static str,
        &'static str,
        FeatureGates,
        &'static [&'static str],
        &'static [(&'static str, i64)],
    );
    let cases: &[Case] = &[
        (
            "GeneralPredicates covers its four checks named again",
            r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "GeneralPredicates"},
                    {"name": "HostName"}, {"name": "PodFitsResources"}, {"name": "MatchNodeSelector"},
                    {"name": "NoDiskConflict"}], "priorities": []}"#,
            GATE_ON,
            &[
                "CheckNodeUnschedulable",
                "GeneralPredicates",
                "NoDiskConflict",
                "PodToleratesNodeTaints",
            ],
            &[],
        ),
        (
            "without GeneralPredicates each check is its own plugin",
            r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "HostName"}], "priorities": []}"#,
            GATE_ON,
            &[
                "CheckNodeUnschedulable",
                "HostName",
                "PodFitsHostPorts",
                "PodToleratesNodeTaints",
            ],
            &[],
        ),
        (
            "labelsPresence and serviceAffinity entries fold into one plugin each",
            r#"{"predicates": [
                    {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
                    {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}},
                    {"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
                    {"name": "Rack", "argument": {"serviceAffinity": {"labels": ["rack"]}}}], "priorities": []}"#,
            GATE_ON,
            &[
                "CheckNodeUnschedulable",
                "PodToleratesNodeTaints",
                "Zoned+NotRetiring",
                "Region+Rack",
            ],
            &[],
        ),
        (
            "EqualPriority is skipped; serviceAntiAffinity and labelPreference fold, weight n x w",
            r#"{"predicates": [], "priorities": [
                    {"name": "EqualPriority", "weight": 7},
                    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
                    {"name": "Gpu", "weight": 3, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
                    {"name": "Rack", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
                    {"name": "NoSpot", "weight": 3, "argument": {"labelPreference": {"label": "spot", "presence": false}}},
                    {"name": "Ssd", "weight": 3, "argument": {"labelPreference": {"label": "ssd", "presence": true}}}]}"#,
            GATE_ON,
            &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
            &[("Zone+Rack", 4), ("Gpu+NoSpot+Ssd", 9)],
        ),
        (
            "gate on: SelectorSpread and EvenPodsSpread are one PodTopologySpread",
            r#"{"predicates": [], "priorities": [{"name": "SelectorSpreadPriority", "weight": 2},
                    {"name": "LeastRequestedPriority", "weight": 1}, {"name": "EvenPodsSpreadPriority", "weight": 5}]}"#,
            GATE_ON,
            &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
            &[
                ("SelectorSpreadPriority+EvenPodsSpreadPriority", 5),
                ("LeastRequestedPriority", 1),
            ],
        ),
        (
            "gate on: EvenPodsSpread's weight counts even when smaller (differential seed 9)",
            r#"{"predicates": [], "priorities": [{"name": "EvenPodsSpreadPriority", "weight": 1},
                    {"name": "ServiceSpreadingPriority", "weight": 2}]}"#,
            GATE_ON,
            &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
            &[("EvenPodsSpreadPriority+ServiceSpreadingPriority", 1)],
        ),
        (
            "gate off: SelectorSpread and EvenPodsSpread stay apart",
            r#"{"predicates": [], "priorities": [{"name": "SelectorSpreadPriority", "weight": 2},
                    {"name": "EvenPodsSpreadPriority", "weight": 5}]}"#,
            GATE_OFF,
            &["CheckNodeUnschedulable", "PodToleratesNodeTaints"],
            &[("SelectorSpreadPriority", 2), ("EvenPodsSpreadPriority", 5)],
        ),
    ];
    for (name, text, gates, filters, scores) in cases {
        let s = build(text, *gates);
        let mut got: Vec<&str> = s.filters().iter().map(|f| f.name.as_str()).collect();
        // Placed among the policy's filters; its own test pins where.
        got.retain(|f| *f != read_write_once_pod::NAME);
        // Every scheduler starts with the checks of fields v1.22 never knew.
        assert_eq!(
            got[..2],
            [dynamic_resources::NAME, unmodelled_fields::NAME],
            "{name}: mandatory filters"
        );
        assert_eq!(&got[2..], *filters, "{name}: filters");
        let got: Vec<(&str, i64)> = s
            .scores()
            .iter()
            .map(|w| (w.name.as_str(), w.weight))
            .collect();
        assert_eq!(&got, scores, "{name}: scores");
    }
}

/// ReadWriteOncePod runs whatever the policy, where v1.36 runs VolumeRestrictions: after
/// the filters of the plugins v1.36 runs first (a cordoned node reports that, as there),
/// before the rest.
#[test]
fn read_write_once_pod_runs_where_v136_runs_volume_restrictions() {
    let s = &mut build(
        r#"{"predicates": [{"name": "CheckNodeUnschedulable"}, {"name": "GeneralPredicates"},
                {"name": "NoDiskConflict"}, {"name": "PodToleratesNodeTaints"},
                {"name": "CheckVolumeBinding"}, {"name": "MatchInterPodAffinity"}],
                "priorities": []}"#,
        GATE_ON,
    );
    let got: Vec<&str> = s.filters().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        got[2..],
        [
            "CheckNodeUnschedulable",
            "GeneralPredicates",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
            read_write_once_pod::NAME,
            "CheckVolumeBinding",
            "MatchInterPodAffinity"
        ]
    );
    let empty = build(r#"{"predicates": [], "priorities": []}"#, GATE_ON);
    assert!(
        empty
            .filters()
            .iter()
            .any(|f| f.name == read_write_once_pod::NAME),
        "a policy without predicates still checks the access mode"
    );
    let mut cl = cluster(
        vec![node("n1").build(), node("cordoned").unschedulable().build()],
        vec![pod("user").claim("data").on("n1").build()],
    );
    add_storage(
        &mut cl,
        vec![pv("pv", 1).claimed_by("data").build()],
        vec![
            pvc("data", 1)
                .access_modes(&[read_write_once_pod::ACCESS_MODE])
                .bound("pv")
                .build(),
        ],
        vec![],
    );
    let pending = cl.compile_pod(pod("p").claim("data").build());
    let decision = s.schedule(&cl, &pending);
    assert_eq!(
        decision.fit_error().map(|e| e.to_string()).as_deref(),
        Some(
            "0/2 nodes are available: 1 node(s) unavailable due to PersistentVolumeClaim \
                 with ReadWriteOncePod access mode already in-use by another pod, 1 node(s) \
                 were unschedulable."
        )
    );
}

/// The differential run's reproduction: with alwaysCheckAllPredicates, a port conflict
/// named by GeneralPredicates and PodFitsHostPorts counts once per node, as in v1.22.
#[test]
fn a_check_named_twice_reports_once() {
    let s = &mut build(
        r#"{"alwaysCheckAllPredicates": true, "predicates": [{"name": "GeneralPredicates"},
                {"name": "PodFitsHostPorts"}], "priorities": []}"#,
        GATE_ON,
    );
    let mut cl = cluster(
        vec![node("n").build()],
        vec![pod("web").host_port("", "TCP", 80).on("n").build()],
    );
    let pending = cl.compile_pod(pod("p").host_port("", "TCP", 80).build());
    let decision = s.schedule(&cl, &pending);
    assert_eq!(
        decision.fit_error().map(|e| e.to_string()).as_deref(),
        Some(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
        )
    );
}

/// Several labelsPresence entries failing on one node give the reason once.
#[test]
fn folded_label_presence_reports_once() {
    let s = &mut build(
        r#"{"alwaysCheckAllPredicates": true, "predicates": [
                {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
                {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}}],
                "priorities": []}"#,
        GATE_ON,
    );
    let mut cl = cluster(vec![node("n").label("retiring", "").build()], vec![]);
    let pending = cl.compile_pod(pod("p").build());
    let decision = s.schedule(&cl, &pending);
    assert_eq!(
        decision.fit_error().map(|e| e.to_string()).as_deref(),
        Some("0/1 nodes are available: 1 node(s) didn't have the requested labels.")
    );
}

#[test]
fn plugins_need_a_factory() {
    let policy = berth_policy::parse(
        r#"{"priorities": [{"name": "Cost", "weight": 1, "argument": {"wasm": {"module": "c.wasm"}}}]}"#,
        "p.json",
    )
    .expect("valid policy");
    let error = scheduler_for(&policy, CycleConfig::default()).err();
    assert_eq!(
        error.map(|e| e.to_string()).as_deref(),
        Some("priority Cost: this entry names a WASM plugin, but plugins are not enabled here")
    );
}

/// The rules' own plugin names are berth-policy's table
/// ([`berth_policy::upstream`]), for every built-in entry under both gate settings.
#[test]
fn upstream_plugins_are_the_rules() {
    let text = r#"{"predicates": [{"name": "CheckNodeCondition"},
            {"name": "CheckNodeUnschedulable"}, {"name": "GeneralPredicates"},
            {"name": "HostName"}, {"name": "PodFitsHostPorts"}, {"name": "MatchNodeSelector"},
            {"name": "PodFitsResources"}, {"name": "MatchNamespaceNodeSelector"},
            {"name": "NoDiskConflict"}, {"name": "PodToleratesNodeNoExecuteTaints"},
            {"name": "CheckNodeCircuitBreaker"}, {"name": "CheckWorkloadQuarantine"},
            {"name": "Tr", "argument": {"tolerationRestriction": {"taints": [
                {"taint": "k", "namespaces": ["n"]}]}}},
            {"name": "Lp", "argument": {"labelsPresence": {"labels": ["a"], "presence": true}}},
            {"name": "Sa", "argument": {"serviceAffinity": {"labels": ["a"]}}},
            {"name": "MaxEBSVolumeCount"}, {"name": "MaxGCEPDVolumeCount"},
            {"name": "MaxCSIVolumeCountPred"}, {"name": "MaxAzureDiskVolumeCount"},
            {"name": "MaxCinderVolumeCount"}, {"name": "CheckVolumeBinding"},
            {"name": "NoVolumeZoneConflict"}, {"name": "CheckNodeMemoryPressure"},
            {"name": "CheckNodePIDPressure"}, {"name": "CheckNodeDiskPressure"},
            {"name": "EvenPodsSpread"}, {"name": "MatchInterPodAffinity"},
            {"name": "CheckPodCIDRCapacity"}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
            {"name": "MostRequestedPriority", "weight": 1},
            {"name": "BalancedResourceAllocation", "weight": 1},
            {"name": "SelectorSpreadPriority", "weight": 1},
            {"name": "InterPodAffinityPriority", "weight": 1},
            {"name": "NodeAffinityPriority", "weight": 1},
            {"name": "TaintTolerationPriority", "weight": 1},
            {"name": "ImageLocalityPriority", "weight": 1},
            {"name": "NodePreferAvoidPodsPriority", "weight": 1},
            {"name": "EqualPriority", "weight": 1},
            {"name": "EvenPodsSpreadPriority", "weight": 1},
            {"name": "Za", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "z"}}},
            {"name": "Pr", "weight": 1, "argument": {"labelPreference": {"label": "p", "presence": true}}},
            {"name": "Rc", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                "resources": [{"name": "cpu", "weight": 1}]}}}]}"#;
    let policy = berth_policy::parse(text, "p.json").expect("valid policy");
    for p in &policy.predicates {
        assert_eq!(
            upstream::filter_plugins(&p.kind),
            rule_filter_plugins(&p.kind),
            "{}",
            p.name
        );
    }
    for gates in [GATE_ON, GATE_OFF] {
        for p in &policy.priorities {
            assert_eq!(
                upstream::score_plugin(&p.kind, gates),
                rule_score_plugin(&p.kind, gates),
                "{} under {gates}",
                p.name
            );
        }
    }
}

/// The plugins of the rules a predicate builds, by the rules' own constants.
fn rule_filter_plugins(kind: &PredicateKind) -> &'static [&'static str] {
    use PredicateKind as P;
    match kind {
        P::CheckNodeUnschedulable => &[node_unschedulable::UPSTREAM_PLUGIN],
        P::GeneralPredicates => &general_predicates::UPSTREAM_PLUGINS,
        P::HostName => &[node_name::UPSTREAM_PLUGIN],
        P::PodFitsHostPorts => &[host_ports::UPSTREAM_PLUGIN],
        P::MatchNodeSelector => &[node_selector::UPSTREAM_PLUGIN],
        P::PodFitsResources => &[resources_fit::UPSTREAM_PLUGIN],
        P::NoDiskConflict => &[disk_conflict::UPSTREAM_PLUGIN],
        P::PodToleratesNodeTaints => &[taints::UPSTREAM_PLUGIN],
        P::CheckNodeLabelPresence { .. } => &[label_presence::UPSTREAM_PLUGIN],
        P::CheckServiceAffinity { .. } => &[service_affinity::UPSTREAM_PLUGIN],
        P::MaxEBSVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_EBS],
        P::MaxGCEPDVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_GCE_PD],
        P::MaxAzureDiskVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_AZURE_DISK],
        P::MaxCinderVolumeCount => &[volume_limits::UPSTREAM_PLUGIN_CINDER],
        P::MaxCSIVolumeCountPred => &[volume_limits::UPSTREAM_PLUGIN_CSI],
        P::CheckVolumeBinding => &[volume_binding::UPSTREAM_PLUGIN],
        P::NoVolumeZoneConflict => &[volume_zone::UPSTREAM_PLUGIN],
        P::EvenPodsSpread => &[pod_topology_spread::UPSTREAM_PLUGIN],
        P::MatchInterPodAffinity => &[inter_pod_affinity::UPSTREAM_PLUGIN],
        P::CheckNodeCondition
        | P::MatchNamespaceNodeSelector { .. }
        | P::CheckPodCIDRCapacity { .. }
        | P::CheckTolerationRestriction { .. }
        | P::CheckNodeCircuitBreaker(_)
        | P::CheckWorkloadQuarantine(_)
        | P::PodToleratesNodeNoExecuteTaints
        | P::CheckNodeMemoryPressure
        | P::CheckNodePIDPressure
        | P::CheckNodeDiskPressure
        | P::Wasm(_) => &[],
    }
}

/// The plugin of the rule a priority builds under `gates`, by the rule's own constant.
fn rule_score_plugin(kind: &PriorityKind, gates: FeatureGates) -> Option<&'static str> {
    use PriorityKind as P;
    Some(match kind {
        P::LeastRequested => least_requested::UPSTREAM_PLUGIN,
        P::MostRequested => most_requested::UPSTREAM_PLUGIN,
        P::BalancedResourceAllocation => balanced_allocation::UPSTREAM_PLUGIN,
        P::SelectorSpread if gates.default_pod_topology_spread => {
            default_pod_topology_spread::UPSTREAM_PLUGIN
        }
        P::SelectorSpread => selector_spread::UPSTREAM_PLUGIN,
        P::InterPodAffinity => inter_pod_affinity_priority::UPSTREAM_PLUGIN,
        P::NodeAffinity => node_affinity_priority::UPSTREAM_PLUGIN,
        P::TaintToleration => taint_toleration_priority::UPSTREAM_PLUGIN,
        P::ImageLocality => image_locality::UPSTREAM_PLUGIN,
        P::NodePreferAvoidPods => prefer_avoid_pods::UPSTREAM_PLUGIN,
        P::RequestedToCapacityRatio { .. } => requested_to_capacity_ratio::UPSTREAM_PLUGIN,
        P::ServiceAntiAffinity { .. } => service_anti_affinity::UPSTREAM_PLUGIN,
        P::NodeLabel { .. } => node_label_priority::UPSTREAM_PLUGIN,
        P::EvenPodsSpread => pod_topology_spread::UPSTREAM_PLUGIN,
        P::EqualPriority | P::Wasm(_) => return None,
    })
}
