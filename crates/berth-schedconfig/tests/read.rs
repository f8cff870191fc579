//! Reading KubeSchedulerConfiguration files: configurations that rely on v1's defaults, and
//! a table of everything outside the subset, each refused naming the field and what is
//! accepted.

use berth_policy::{FeatureGates, PriorityKind};
use berth_schedconfig::{ReadOptions, parse};

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

/// v1.36's defaults minus the two plugins Berth has no equivalent for.
const DEFAULTS: &str = "profiles:\n- schedulerName: berth\n  plugins:\n    multiPoint:\n      \
                        disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n";

fn read(body: &str, name: Option<&str>) -> Result<berth_policy::EffectivePolicy, String> {
    let options = ReadOptions {
        scheduler_name: name,
        feature_gates: FeatureGates::default(),
    };
    parse(&format!("{HEAD}{body}"), "c.yaml", options).map_err(|e| e.to_string())
}

#[test]
fn a_profile_relying_on_v1_defaults_reads_as_the_default_plugins_with_their_weights() {
    let policy = read(DEFAULTS, Some("berth")).expect("reads");
    let mut predicates: Vec<&str> = policy.predicates.iter().map(|p| p.name.as_str()).collect();
    predicates.sort();
    assert_eq!(
        predicates,
        [
            "CheckNodeUnschedulable",
            "CheckVolumeBinding",
            "EvenPodsSpread",
            "GeneralPredicates",
            "MatchInterPodAffinity",
            "MaxCSIVolumeCountPred",
            "NoDiskConflict",
            "NoVolumeZoneConflict",
            "PodToleratesNodeTaints",
        ]
    );
    let weight = |kind: PriorityKind| {
        policy
            .priorities
            .iter()
            .find(|p| p.kind == kind)
            .map(|p| p.weight)
    };
    // v1's multiPoint weights, not v1.22's.
    assert_eq!(weight(PriorityKind::TaintToleration), Some(3));
    assert_eq!(weight(PriorityKind::NodeAffinity), Some(2));
    assert_eq!(weight(PriorityKind::SelectorSpread), Some(2));
    assert_eq!(weight(PriorityKind::InterPodAffinity), Some(2));
    assert_eq!(weight(PriorityKind::LeastRequested), Some(1));
    assert_eq!(weight(PriorityKind::BalancedResourceAllocation), Some(1));
    assert_eq!(weight(PriorityKind::ImageLocality), Some(1));
    assert_eq!(policy.priorities.len(), 7);
    assert!(policy.warnings[0].contains("VolumeBinding's score is 0"));
}

#[test]
fn specific_points_override_and_disable_multi_point_defaults() {
    let body = format!(
        "{DEFAULTS}    score:\n      enabled: [{{name: TaintToleration, weight: 9}}]\n      \
         disabled: [{{name: ImageLocality}}, {{name: VolumeBinding}}]\n    preScore:\n      \
         disabled: [{{name: VolumeBinding}}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    \
         args: {{scoringStrategy: {{type: MostAllocated}}}}\n  - name: PodTopologySpread\n    \
         args: {{defaultingType: List}}\n  - name: InterPodAffinity\n    args: \
         {{hardPodAffinityWeight: 7}}\n"
    );
    let policy = read(&body, None).expect("reads");
    let names: Vec<(&str, i64)> = policy
        .priorities
        .iter()
        .map(|p| (p.name.as_str(), p.weight))
        .collect();
    assert!(names.contains(&("TaintTolerationPriority", 9)), "{names:?}");
    assert!(names.contains(&("MostRequestedPriority", 1)), "{names:?}");
    assert!(names.contains(&("EvenPodsSpreadPriority", 2)), "{names:?}");
    assert!(!names.iter().any(|(n, _)| *n == "ImageLocalityPriority"));
    assert_eq!(policy.hard_pod_affinity_symmetric_weight, 7);
    assert!(policy.warnings.is_empty(), "{:?}", policy.warnings);
}

#[test]
fn the_profile_is_chosen_by_scheduler_name() {
    let two = "profiles:\n- schedulerName: a\n- schedulerName: b\n";
    let err = read(two, None).unwrap_err();
    assert!(err.contains("has 2 profiles ([\"a\", \"b\"])"), "{err}");
    let err = read(two, Some("c")).unwrap_err();
    assert!(err.contains("no profile has schedulerName \"c\""), "{err}");
    // The chosen one is read (and fails on v1.36's defaults, which proves it was read).
    let err = read(two, Some("b")).unwrap_err();
    assert!(
        err.starts_with("c.yaml: profiles[1].plugins.filter: DynamicResources"),
        "{err}"
    );
}

#[test]
fn everything_outside_the_subset_is_refused_naming_the_field() {
    let cases: &[(&str, &str)] = &[
        (
            "profiles: []\nleaderElect: false\n",
            "leaderElect: unknown field `leaderElect`, expected one of `apiVersion`, `kind`, `parallelism`, `leaderElection`",
        ),
        (
            "profiles:\n- schedulerName: x\n",
            "profiles[0].plugins.filter: DynamicResources is enabled (v1.36's default plugins include it)",
        ),
        (
            "profiles:\n- percentageOfNodesToScore: 150\n",
            "profiles[0].percentageOfNodesToScore: is 150; expected 0 (adaptive) to 100",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NodeLabel}]\n",
            "profiles[0].plugins.filter.enabled[0].name: \"NodeLabel\" is not a kube-scheduler v1.36 plugin",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodePorts}]\n",
            "profiles[0].plugins.score.enabled[0].name: NodePorts does not implement score",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: '*'}]\n",
            "profiles[0].plugins.filter: NodeUnschedulable is not enabled; a Policy always runs CheckNodeUnschedulable",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}, {name: SchedulingGates}]\n",
            "profiles[0].plugins.preEnqueue: SchedulingGates is not enabled",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}, {name: DefaultPreemption}]\n",
            "profiles[0].plugins.postFilter: enables {}; Berth runs {\"DefaultPreemption\"} here (a Policy always preempts)",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n    preFilter:\n      disabled: [{name: NodePorts}]\n",
            "profiles[0].plugins.preFilter: does not enable NodePorts, whose filter step needs it",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    args: {ignoredResources: [x]}\n",
            "profiles[0].pluginConfig[0].args: ignoredResources and ignoredResourceGroups have no Policy equivalent",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Balanced}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type: is \"Balanced\"; expected LeastAllocated, MostAllocated or RequestedToCapacityRatio",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {typo: x}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.typo: unknown field `typo`, expected one of `type`",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [b]}]}]}}}\n",
            "nodeSelectorTerms[0].matchExpressions[0]: operator \"In\" with 1 values has no Policy equivalent",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints: has no Policy equivalent",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 0}\n",
            "hardPodAffinityWeight: is 0; a Policy's hardPodAffinitySymmetricWeight takes 1..=100",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesAbsolute: 5}\n",
            "profiles[0].pluginConfig[0].args: Berth reads the args of NodeResourcesFit",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\n  pluginConfig:\n  - name: ImageLocality\n  - name: ImageLocality\n",
            "profiles[0].pluginConfig[1].name: ImageLocality has a second pluginConfig entry",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\nextenders:\n- urlPrefix: http://127.0.0.1:1/x\n  httpTimeout: \"5\"\n",
            "extenders[0].httpTimeout: \"5\" has a number without a unit",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DynamicResources}, {name: NodeDeclaredFeatures}]\nextenders:\n- urlPrefix: http://127.0.0.1:1/x\n  prioritizeVerb: p\n",
            "extenders[0].weight",
        ),
    ];
    for (body, want) in cases {
        let err = read(body, None).expect_err(body);
        assert!(err.contains(want), "{body}\n got: {err}\nwant: {want}");
    }
    let cases: &[(&str, &str)] = &[
        ("", "the file is empty"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1alpha2\nkind: KubeSchedulerConfiguration\n",
            "apiVersion: is \"kubescheduler.config.k8s.io/v1alpha2\"; Berth reads kubescheduler.config.k8s.io/v1beta1, kubescheduler.config.k8s.io/v1beta2, kubescheduler.config.k8s.io/v1beta3, kubescheduler.config.k8s.io/v1 (kube-scheduler v1.19 and later)",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n",
            "profiles[0]: a kubescheduler.config.k8s.io/v1beta2 profile runs kube-scheduler v1.22's plugin set",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
            "kind: is \"Policy\"; expected KubeSchedulerConfiguration",
        ),
        (
            "{\"kind\": \"Policy\", \"apiVersion\": \"v1\"}",
            "apiVersion: is \"v1\"",
        ),
        (
            "apiVersion: [",
            "c.yaml: apiVersion: invalid type: sequence, expected a string (line 1, column 13)",
        ),
        ("apiVersion: @x", "cannot start any token"),
    ];
    for (text, want) in cases {
        let err = parse(text, "c.yaml", ReadOptions::default())
            .map(|_| ())
            .expect_err(text)
            .to_string();
        assert!(err.contains(want), "{text}\n got: {err}\nwant: {want}");
    }
}

/// v1beta3 (kube-scheduler v1.23-v1.25) predates the default plugins v1 gained later
/// (DynamicResources, NodeDeclaredFeatures), so its default profile reads without disabling them;
/// its plugin args carry its own apiVersion.
#[test]
fn a_v1beta3_profile_reads_against_its_own_defaults() {
    let text = "apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: berth
  pluginConfig:
  - name: InterPodAffinity
    args:
      apiVersion: kubescheduler.config.k8s.io/v1beta3
      kind: InterPodAffinityArgs
      hardPodAffinityWeight: 5
";
    let policy = parse(text, "c.yaml", ReadOptions::default()).expect("v1beta3 reads");
    assert_eq!(policy.hard_pod_affinity_symmetric_weight, 5);
    let v1 = text.replace("v1beta3", "v1");
    let err = parse(&v1, "c.yaml", ReadOptions::default()).expect_err("v1 has DRA on");
    assert!(
        err.to_string().contains("DynamicResources is enabled"),
        "{err}"
    );
}
