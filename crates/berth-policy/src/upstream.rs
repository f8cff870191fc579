//! The kube-scheduler framework plugins that serve Policy entries, as v1.22's legacy
//! registry maps them, and how it groups entries into plugin instances. The engine names its
//! rules after these plugins (berth-engine's `upstream_plugins_are_the_rules` test checks the
//! table against every rule's `UPSTREAM_PLUGIN`), and berth-schedconfig converts a Policy
//! into a KubeSchedulerConfiguration and back with them.

use crate::features::FeatureGates;
use crate::types::{EffectivePolicy, PredicateKind, PriorityKind};

/// NodeAffinity: MatchNodeSelector's filter and NodeAffinityPriority's score.
pub const NODE_AFFINITY: &str = "NodeAffinity";
/// NodeResourcesFit: PodFitsResources.
pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
/// NodeName: HostName.
pub const NODE_NAME: &str = "NodeName";
/// NodePorts: PodFitsHostPorts.
pub const NODE_PORTS: &str = "NodePorts";
/// The four plugins GeneralPredicates stands for, in v1.22's order.
pub const GENERAL_PREDICATES: [&str; 4] =
    [NODE_RESOURCES_FIT, NODE_NAME, NODE_PORTS, NODE_AFFINITY];
/// NodeLabel: CheckNodeLabelPresence and labelPreference.
pub const NODE_LABEL: &str = "NodeLabel";
/// PodTopologySpread: EvenPodsSpread and, with the DefaultPodTopologySpread gate,
/// SelectorSpreadPriority.
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
/// VolumeBinding: CheckVolumeBinding.
pub const VOLUME_BINDING: &str = "VolumeBinding";

/// The plugins v1.22's legacy registry enables for a predicate, in its order; empty where it
/// has none (Berth's own predicates, the v1.12-only ones and WASM plugins).
pub fn filter_plugins(kind: &PredicateKind) -> &'static [&'static str] {
    use PredicateKind as P;
    match kind {
        P::CheckNodeUnschedulable => &["NodeUnschedulable"],
        P::GeneralPredicates => &GENERAL_PREDICATES,
        P::HostName => &[NODE_NAME],
        P::PodFitsHostPorts => &[NODE_PORTS],
        P::MatchNodeSelector => &[NODE_AFFINITY],
        P::PodFitsResources => &[NODE_RESOURCES_FIT],
        P::NoDiskConflict => &["VolumeRestrictions"],
        P::PodToleratesNodeTaints => &["TaintToleration"],
        P::CheckNodeLabelPresence { .. } => &[NODE_LABEL],
        P::CheckServiceAffinity { .. } => &["ServiceAffinity"],
        P::MaxEBSVolumeCount => &["EBSLimits"],
        P::MaxGCEPDVolumeCount => &["GCEPDLimits"],
        P::MaxAzureDiskVolumeCount => &["AzureDiskLimits"],
        P::MaxCinderVolumeCount => &["CinderLimits"],
        P::MaxCSIVolumeCountPred => &["NodeVolumeLimits"],
        P::CheckVolumeBinding => &[VOLUME_BINDING],
        P::NoVolumeZoneConflict => &["VolumeZone"],
        P::EvenPodsSpread => &[POD_TOPOLOGY_SPREAD],
        P::MatchInterPodAffinity => &["InterPodAffinity"],
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

/// The plugin v1.22's legacy registry scores a priority with under `gates`; `None` where it
/// has none (EqualPriority, which it skips, and WASM plugins).
pub fn score_plugin(kind: &PriorityKind, gates: FeatureGates) -> Option<&'static str> {
    use PriorityKind as P;
    Some(match kind {
        P::LeastRequested => "NodeResourcesLeastAllocated",
        P::MostRequested => "NodeResourcesMostAllocated",
        P::BalancedResourceAllocation => "NodeResourcesBalancedAllocation",
        P::SelectorSpread if gates.default_pod_topology_spread => POD_TOPOLOGY_SPREAD,
        P::SelectorSpread => "SelectorSpread",
        P::InterPodAffinity => "InterPodAffinity",
        P::NodeAffinity => NODE_AFFINITY,
        P::TaintToleration => "TaintToleration",
        P::ImageLocality => "ImageLocality",
        P::NodePreferAvoidPods => "NodePreferAvoidPods",
        P::RequestedToCapacityRatio { .. } => "RequestedToCapacityRatio",
        P::ServiceAntiAffinity { .. } => "ServiceAffinity",
        P::NodeLabel { .. } => NODE_LABEL,
        P::EvenPodsSpread => POD_TOPOLOGY_SPREAD,
        P::EqualPriority | P::Wasm(_) => return None,
    })
}

/// Policy entries served by one framework plugin instance in v1.22 (one rule in the engine).
#[derive(Debug)]
pub struct EntryGroup<'p, K> {
    /// The entries' names, in file order.
    pub names: Vec<&'p str>,
    /// Their kinds, in the same order.
    pub kinds: Vec<&'p K>,
    /// The rule's weight (scores only).
    pub weight: i64,
}

impl<K> EntryGroup<'_, K> {
    /// The rule's name: its entries' names joined with `+`.
    pub fn name(&self) -> String {
        self.names.join("+")
    }

    /// The first entry's kind (the group's kind: entries of one group share it).
    pub fn first(&self) -> &K {
        self.kinds[0]
    }
}

/// The upstream plugin a mergeable entry configures: entries with the same key are one
/// plugin instance in v1.22 (their arguments appended).
fn merged_filter(kind: &PredicateKind) -> Option<&'static str> {
    match kind {
        PredicateKind::CheckNodeLabelPresence { .. }
        | PredicateKind::CheckServiceAffinity { .. } => filter_plugins(kind).first().copied(),
        _ => None,
    }
}

/// The predicates as v1.22 runs them, in evaluation order: the labelsPresence entries are
/// one NodeLabel filter and the serviceAffinity entries one ServiceAffinity filter; with
/// GeneralPredicates (whose four checks are the NodeResourcesFit, NodeName, NodePorts and
/// NodeAffinity plugins) the entries naming those plugins again add nothing, since
/// GeneralPredicates comes first in the order.
pub fn filter_groups(policy: &EffectivePolicy) -> Vec<EntryGroup<'_, PredicateKind>> {
    use PredicateKind as P;
    let general = policy
        .predicates
        .iter()
        .any(|p| matches!(p.kind, P::GeneralPredicates));
    let mut groups: Vec<EntryGroup<'_, PredicateKind>> = Vec::new();
    for p in &policy.predicates {
        let in_general = matches!(
            p.kind,
            P::HostName | P::PodFitsHostPorts | P::MatchNodeSelector | P::PodFitsResources
        );
        if general && in_general {
            continue;
        }
        let merged = merged_filter(&p.kind).and_then(|key| {
            groups
                .iter_mut()
                .find(|g| merged_filter(g.first()) == Some(key))
        });
        match merged {
            Some(group) => {
                group.names.push(&p.name);
                group.kinds.push(&p.kind);
            }
            None => groups.push(EntryGroup {
                names: vec![&p.name],
                kinds: vec![&p.kind],
                weight: 0,
            }),
        }
    }
    groups
}

/// The upstream score plugin a priority entry configures, when entries can share one.
fn merged_score(kind: &PriorityKind, gates: FeatureGates) -> Option<&'static str> {
    match kind {
        PriorityKind::ServiceAntiAffinity { .. }
        | PriorityKind::NodeLabel { .. }
        | PriorityKind::EvenPodsSpread => score_plugin(kind, gates),
        PriorityKind::SelectorSpread if gates.default_pod_topology_spread => {
            score_plugin(kind, gates)
        }
        _ => None,
    }
}

/// The priorities as v1.22 groups them: the serviceAntiAffinity
/// entries are one ServiceAffinity plugin and the labelPreference entries one NodeLabel
/// plugin, each weighted by the entries' common weight times their number; with the
/// DefaultPodTopologySpread gate, SelectorSpreadPriority and EvenPodsSpreadPriority are one
/// PodTopologySpread plugin with EvenPodsSpreadPriority's weight (see below).
pub fn score_groups(
    policy: &EffectivePolicy,
    gates: FeatureGates,
) -> Vec<EntryGroup<'_, PriorityKind>> {
    let mut groups: Vec<EntryGroup<'_, PriorityKind>> = Vec::new();
    for p in &policy.priorities {
        let key = merged_score(&p.kind, gates);
        let merged = key.and_then(|key| {
            groups
                .iter_mut()
                .find(|g| merged_score(g.first(), gates) == Some(key))
        });
        match merged {
            Some(group) => {
                group.names.push(&p.name);
                group.kinds.push(&p.kind);
                group.weight = match (key, &p.kind) {
                    // v1.22 appends the plugin for its priorities in name order, so
                    // EvenPodsSpreadPriority's weight is set first, and its "keep the max
                    // weight" update changes a copy (legacy_registry.go appendToPluginSet):
                    // EvenPodsSpreadPriority's weight is the one that counts.
                    (Some(POD_TOPOLOGY_SPREAD), PriorityKind::EvenPodsSpread) => p.weight,
                    (Some(POD_TOPOLOGY_SPREAD), _) => group.weight,
                    _ => group.weight + p.weight,
                };
            }
            None => groups.push(EntryGroup {
                names: vec![&p.name],
                kinds: vec![&p.kind],
                weight: p.weight,
            }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upstream plugin of every built-in entry, as v1.22's legacy_registry.go registers
    /// them (none for Berth's own predicates and the v1.12-only ones).
    #[test]
    fn entries_name_their_upstream_plugins() {
        let text = r#"{"predicates": [{"name": "CheckNodeCondition"},
            {"name": "CheckNodeUnschedulable"}, {"name": "GeneralPredicates"},
            {"name": "NoDiskConflict"}, {"name": "PodToleratesNodeNoExecuteTaints"},
            {"name": "Lp", "argument": {"labelsPresence": {"labels": ["a"], "presence": true}}},
            {"name": "Sa", "argument": {"serviceAffinity": {"labels": ["a"]}}},
            {"name": "MaxEBSVolumeCount"}, {"name": "MaxGCEPDVolumeCount"},
            {"name": "MaxCSIVolumeCountPred"}, {"name": "MaxAzureDiskVolumeCount"},
            {"name": "MaxCinderVolumeCount"}, {"name": "CheckVolumeBinding"},
            {"name": "NoVolumeZoneConflict"}, {"name": "CheckNodeMemoryPressure"},
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
        let policy = crate::parse(text, "p.json").expect("valid policy");
        let filters: Vec<(&str, Vec<&str>)> = policy
            .predicates
            .iter()
            .map(|p| (p.name.as_str(), filter_plugins(&p.kind).to_vec()))
            .collect();
        let want: Vec<(&str, Vec<&str>)> = vec![
            ("CheckNodeCondition", vec![]),
            ("CheckNodeUnschedulable", vec!["NodeUnschedulable"]),
            (
                "GeneralPredicates",
                vec!["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
            ),
            ("CheckPodCIDRCapacity", vec![]),
            ("NoDiskConflict", vec!["VolumeRestrictions"]),
            ("PodToleratesNodeTaints", vec!["TaintToleration"]),
            ("PodToleratesNodeNoExecuteTaints", vec![]),
            ("Lp", vec!["NodeLabel"]),
            ("Sa", vec!["ServiceAffinity"]),
            ("MaxEBSVolumeCount", vec!["EBSLimits"]),
            ("MaxGCEPDVolumeCount", vec!["GCEPDLimits"]),
            ("MaxCSIVolumeCountPred", vec!["NodeVolumeLimits"]),
            ("MaxAzureDiskVolumeCount", vec!["AzureDiskLimits"]),
            ("MaxCinderVolumeCount", vec!["CinderLimits"]),
            ("CheckVolumeBinding", vec!["VolumeBinding"]),
            ("NoVolumeZoneConflict", vec!["VolumeZone"]),
            ("CheckNodeMemoryPressure", vec![]),
            ("EvenPodsSpread", vec!["PodTopologySpread"]),
            ("MatchInterPodAffinity", vec!["InterPodAffinity"]),
        ];
        assert_eq!(filters, want);
        let scores = |gates| -> Vec<(&str, Option<&str>)> {
            policy
                .priorities
                .iter()
                .map(|p| (p.name.as_str(), score_plugin(&p.kind, gates)))
                .collect()
        };
        let on = scores(FeatureGates::default());
        assert_eq!(
            on,
            [
                (
                    "LeastRequestedPriority",
                    Some("NodeResourcesLeastAllocated")
                ),
                ("MostRequestedPriority", Some("NodeResourcesMostAllocated")),
                (
                    "BalancedResourceAllocation",
                    Some("NodeResourcesBalancedAllocation")
                ),
                ("SelectorSpreadPriority", Some("PodTopologySpread")),
                ("InterPodAffinityPriority", Some("InterPodAffinity")),
                ("NodeAffinityPriority", Some("NodeAffinity")),
                ("TaintTolerationPriority", Some("TaintToleration")),
                ("ImageLocalityPriority", Some("ImageLocality")),
                ("NodePreferAvoidPodsPriority", Some("NodePreferAvoidPods")),
                ("EqualPriority", None),
                ("EvenPodsSpreadPriority", Some("PodTopologySpread")),
                ("Za", Some("ServiceAffinity")),
                ("Pr", Some("NodeLabel")),
                ("Rc", Some("RequestedToCapacityRatio")),
            ]
        );
        let off = scores(FeatureGates::parse("DefaultPodTopologySpread=false").unwrap());
        assert_eq!(off[3], ("SelectorSpreadPriority", Some("SelectorSpread")));
    }
}
