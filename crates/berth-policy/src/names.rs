//! The predicate and priority names a Policy may use without an argument.
//!
//! The union of what kube-scheduler v1.22 and v1.12 accepted, plus Berth's own predicates.
//! Names v1.22 does not accept carry a note that becomes a warning.

use crate::types::{
    CircuitBreakerArgs, PodIpSource, PredicateKind, PriorityKind, ResourceWeight, ShapePoint,
    WhenCapacityMissing, WorkloadQuarantineArgs,
};

/// A built-in name and what it stands for.
pub(crate) struct Builtin<K: 'static> {
    /// The name as written in a Policy file.
    pub(crate) name: &'static str,
    /// The name duplicates are detected by (differs from `name` for aliases).
    pub(crate) canonical: &'static str,
    /// What the entry configures.
    pub(crate) kind: K,
    /// Why the name deserves a warning, if it does.
    pub(crate) note: Option<&'static str>,
    /// What kube-scheduler v1.22 does with an argument given to an entry of this name.
    pub(crate) v122_argument: V122Argument,
}

/// How kube-scheduler v1.22 treats the argument of an entry that has a built-in name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum V122Argument {
    /// The name takes no argument, or v1.22 applies it.
    Used,
    /// v1.22 finds the built-in by its name first and drops the argument, so the entry adds
    /// nothing; Berth does the same.
    Ignored,
    /// v1.22 refuses to start with this name; Berth applies the argument and warns.
    Refused,
}

const DROPPED: &str = "is no longer registered by kube-scheduler v1.22, which rejects the policy; \
                       Berth applies its v1.12 meaning";
const BERTH_ONLY: &str = "is a Berth extension: kube-scheduler rejects this predicate name";

const fn builtin<K>(name: &'static str, kind: K) -> Builtin<K> {
    Builtin {
        name,
        canonical: name,
        kind,
        note: None,
        v122_argument: V122Argument::Used,
    }
}

const fn noted<K>(name: &'static str, kind: K, note: &'static str) -> Builtin<K> {
    Builtin {
        name,
        canonical: name,
        kind,
        note: Some(note),
        v122_argument: V122Argument::Used,
    }
}

/// Predicates, in evaluation order, aliases after their target.
pub(crate) static PREDICATES: &[Builtin<PredicateKind>] = &[
    noted(
        "CheckNodeCondition",
        PredicateKind::CheckNodeCondition,
        DROPPED,
    ),
    builtin(
        "CheckNodeUnschedulable",
        PredicateKind::CheckNodeUnschedulable,
    ),
    builtin("GeneralPredicates", PredicateKind::GeneralPredicates),
    builtin("HostName", PredicateKind::HostName),
    builtin("PodFitsHostPorts", PredicateKind::PodFitsHostPorts),
    Builtin {
        name: "PodFitsPorts",
        canonical: "PodFitsHostPorts",
        kind: PredicateKind::PodFitsHostPorts,
        note: Some("is a deprecated alias of PodFitsHostPorts"),
        v122_argument: V122Argument::Used,
    },
    builtin("MatchNodeSelector", PredicateKind::MatchNodeSelector),
    noted(
        "MatchNamespaceNodeSelector",
        PredicateKind::MatchNamespaceNodeSelector {
            default_node_selector: String::new(),
        },
        BERTH_ONLY,
    ),
    builtin("PodFitsResources", PredicateKind::PodFitsResources),
    noted(
        "CheckPodCIDRCapacity",
        PredicateKind::CheckPodCIDRCapacity {
            source: PodIpSource::PodCidr,
            when_missing: WhenCapacityMissing::Reject,
        },
        BERTH_ONLY,
    ),
    noted(
        "CheckNodeCircuitBreaker",
        PredicateKind::CheckNodeCircuitBreaker(CircuitBreakerArgs::DEFAULT),
        BERTH_ONLY,
    ),
    noted(
        "CheckWorkloadQuarantine",
        PredicateKind::CheckWorkloadQuarantine(WorkloadQuarantineArgs::DEFAULT),
        BERTH_ONLY,
    ),
    builtin("NoDiskConflict", PredicateKind::NoDiskConflict),
    builtin(
        "PodToleratesNodeTaints",
        PredicateKind::PodToleratesNodeTaints,
    ),
    noted(
        "PodToleratesNodeNoExecuteTaints",
        PredicateKind::PodToleratesNodeNoExecuteTaints,
        DROPPED,
    ),
    Builtin {
        name: "CheckNodeLabelPresence",
        canonical: "CheckNodeLabelPresence",
        kind: PredicateKind::CheckNodeLabelPresence {
            labels: Vec::new(),
            presence: true,
        },
        note: Some("has no effect without a labelsPresence argument"),
        v122_argument: V122Argument::Ignored,
    },
    Builtin {
        name: "CheckServiceAffinity",
        canonical: "CheckServiceAffinity",
        kind: PredicateKind::CheckServiceAffinity { labels: Vec::new() },
        note: Some("has no effect without a serviceAffinity argument"),
        v122_argument: V122Argument::Ignored,
    },
    builtin("MaxEBSVolumeCount", PredicateKind::MaxEBSVolumeCount),
    builtin("MaxGCEPDVolumeCount", PredicateKind::MaxGCEPDVolumeCount),
    builtin(
        "MaxCSIVolumeCountPred",
        PredicateKind::MaxCSIVolumeCountPred,
    ),
    builtin(
        "MaxAzureDiskVolumeCount",
        PredicateKind::MaxAzureDiskVolumeCount,
    ),
    builtin("MaxCinderVolumeCount", PredicateKind::MaxCinderVolumeCount),
    builtin("CheckVolumeBinding", PredicateKind::CheckVolumeBinding),
    builtin("NoVolumeZoneConflict", PredicateKind::NoVolumeZoneConflict),
    noted(
        "CheckNodeMemoryPressure",
        PredicateKind::CheckNodeMemoryPressure,
        DROPPED,
    ),
    noted(
        "CheckNodePIDPressure",
        PredicateKind::CheckNodePIDPressure,
        DROPPED,
    ),
    noted(
        "CheckNodeDiskPressure",
        PredicateKind::CheckNodeDiskPressure,
        DROPPED,
    ),
    builtin("EvenPodsSpread", PredicateKind::EvenPodsSpread),
    builtin(
        "MatchInterPodAffinity",
        PredicateKind::MatchInterPodAffinity,
    ),
];

/// Priorities, aliases after their target.
pub(crate) static PRIORITIES: &[Builtin<PriorityKind>] = &[
    builtin("LeastRequestedPriority", PriorityKind::LeastRequested),
    builtin("MostRequestedPriority", PriorityKind::MostRequested),
    builtin(
        "BalancedResourceAllocation",
        PriorityKind::BalancedResourceAllocation,
    ),
    builtin("SelectorSpreadPriority", PriorityKind::SelectorSpread),
    Builtin {
        name: "ServiceSpreadingPriority",
        canonical: "SelectorSpreadPriority",
        kind: PriorityKind::SelectorSpread,
        note: Some(
            "is a deprecated alias: it behaves as SelectorSpreadPriority, as in v1.18+ (v1.12 \
             spread by Services only)",
        ),
        v122_argument: V122Argument::Used,
    },
    builtin("InterPodAffinityPriority", PriorityKind::InterPodAffinity),
    builtin("NodeAffinityPriority", PriorityKind::NodeAffinity),
    builtin("TaintTolerationPriority", PriorityKind::TaintToleration),
    builtin("ImageLocalityPriority", PriorityKind::ImageLocality),
    builtin(
        "NodePreferAvoidPodsPriority",
        PriorityKind::NodePreferAvoidPods,
    ),
    noted(
        "EqualPriority",
        PriorityKind::EqualPriority,
        "gives every node the same score, so it never changes the ranking; kube-scheduler \
         v1.22 skips it",
    ),
    noted(
        "RequestedToCapacityRatioPriority",
        PriorityKind::RequestedToCapacityRatio {
            shape: Vec::new(),
            resources: Vec::new(),
        },
        "without requestedToCapacityRatioArguments uses the default shape (0->10, 100->0) \
         and resources (cpu 1, memory 1) as v1.14-v1.17 did; kube-scheduler v1.22 rejects it",
    ),
    Builtin {
        name: "RequestedToCapacityRatio",
        canonical: "RequestedToCapacityRatioPriority",
        kind: PriorityKind::RequestedToCapacityRatio {
            shape: Vec::new(),
            resources: Vec::new(),
        },
        note: Some(
            "is a name kube-scheduler v1.22 refuses to start with (with or without arguments); \
             Berth runs it as RequestedToCapacityRatioPriority with the default shape \
             (0->10, 100->0) and resources (cpu 1, memory 1)",
        ),
        v122_argument: V122Argument::Refused,
    },
    builtin("EvenPodsSpreadPriority", PriorityKind::EvenPodsSpread),
];

/// Berth's predicates that exist only with an argument: (name, the argument it needs).
static ARGUMENT_ONLY_PREDICATES: &[(&str, &str)] = &[(
    "CheckTolerationRestriction",
    "\"tolerationRestriction\": {\"taints\": [{\"taint\": \"key[=value][:effect]\", \
     \"namespaces\": [...]}]}",
)];

/// The argument a predicate name needs, when the name is one of Berth's argument-only ones.
pub(crate) fn argument_only_predicate(name: &str) -> Option<&'static str> {
    ARGUMENT_ONLY_PREDICATES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, argument)| *argument)
}

/// Looks a predicate name up.
pub(crate) fn predicate(name: &str) -> Option<&'static Builtin<PredicateKind>> {
    PREDICATES.iter().find(|b| b.name == name)
}

/// Looks a priority name up.
pub(crate) fn priority(name: &str) -> Option<&'static Builtin<PriorityKind>> {
    PRIORITIES.iter().find(|b| b.name == name)
}

/// The canonical name of a built-in predicate kind (its arguments aside).
pub(crate) fn predicate_name(kind: &PredicateKind) -> Option<&'static str> {
    canonical_name(PREDICATES, kind)
}

/// The canonical name of a built-in priority kind (its arguments aside).
pub(crate) fn priority_name(kind: &PriorityKind) -> Option<&'static str> {
    canonical_name(PRIORITIES, kind)
}

fn canonical_name<K>(table: &'static [Builtin<K>], kind: &K) -> Option<&'static str> {
    let wanted = std::mem::discriminant(kind);
    table
        .iter()
        .find(|b| b.name == b.canonical && std::mem::discriminant(&b.kind) == wanted)
        .map(|b| b.name)
}

impl Builtin<PriorityKind> {
    /// The kind of an entry that names this priority without an argument.
    pub(crate) fn kind_without_argument(&self) -> PriorityKind {
        match &self.kind {
            // The table cannot allocate; the defaults are filled in here.
            PriorityKind::RequestedToCapacityRatio { .. } => {
                PriorityKind::RequestedToCapacityRatio {
                    shape: default_shape(),
                    resources: default_resources(),
                }
            }
            other => other.clone(),
        }
    }
}

/// The default shape of RequestedToCapacityRatio: full score when empty, none when full.
pub(crate) fn default_shape() -> Vec<ShapePoint> {
    vec![
        ShapePoint {
            utilization: 0,
            score: 10,
        },
        ShapePoint {
            utilization: 100,
            score: 0,
        },
    ]
}

/// The default resources of RequestedToCapacityRatio.
pub(crate) fn default_resources() -> Vec<ResourceWeight> {
    vec![
        ResourceWeight {
            name: "cpu".to_owned(),
            weight: 1,
        },
        ResourceWeight {
            name: "memory".to_owned(),
            weight: 1,
        },
    ]
}

/// Predicates that run whatever the file says.
pub(crate) const MANDATORY_PREDICATES: [PredicateKind; 2] = [
    PredicateKind::PodToleratesNodeTaints,
    PredicateKind::CheckNodeUnschedulable,
];

/// The v1.22 default provider's predicates.
pub(crate) const DEFAULT_PREDICATES: [PredicateKind; 12] = [
    PredicateKind::NoVolumeZoneConflict,
    PredicateKind::MaxEBSVolumeCount,
    PredicateKind::MaxGCEPDVolumeCount,
    PredicateKind::MaxAzureDiskVolumeCount,
    PredicateKind::MaxCSIVolumeCountPred,
    PredicateKind::MatchInterPodAffinity,
    PredicateKind::NoDiskConflict,
    PredicateKind::GeneralPredicates,
    PredicateKind::PodToleratesNodeTaints,
    PredicateKind::CheckVolumeBinding,
    PredicateKind::CheckNodeUnschedulable,
    PredicateKind::EvenPodsSpread,
];

/// The v1.22 default provider's priorities and weights.
pub(crate) const DEFAULT_PRIORITIES: [(&str, PriorityKind, i64); 9] = [
    ("SelectorSpreadPriority", PriorityKind::SelectorSpread, 1),
    (
        "InterPodAffinityPriority",
        PriorityKind::InterPodAffinity,
        1,
    ),
    ("LeastRequestedPriority", PriorityKind::LeastRequested, 1),
    (
        "BalancedResourceAllocation",
        PriorityKind::BalancedResourceAllocation,
        1,
    ),
    (
        "NodePreferAvoidPodsPriority",
        PriorityKind::NodePreferAvoidPods,
        10000,
    ),
    ("NodeAffinityPriority", PriorityKind::NodeAffinity, 1),
    ("TaintTolerationPriority", PriorityKind::TaintToleration, 1),
    ("ImageLocalityPriority", PriorityKind::ImageLocality, 1),
    ("EvenPodsSpreadPriority", PriorityKind::EvenPodsSpread, 2),
];
