//! kube-scheduler v1.36's in-tree plugins as `kubescheduler.config.k8s.io/v1` sees them: the
//! extension points each implements (which `multiPoint` expands it to) and the default
//! `multiPoint` set. Read from v1.36.3's pkg/scheduler/framework/plugins and
//! pkg/scheduler/apis/config/v1/default_plugins.go.

use std::fmt;

/// An extension point of a profile's `plugins`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Point {
    /// `preEnqueue`.
    PreEnqueue,
    /// `queueSort`.
    QueueSort,
    /// `preFilter`.
    PreFilter,
    /// `filter`.
    Filter,
    /// `postFilter`.
    PostFilter,
    /// `preScore`.
    PreScore,
    /// `score`.
    Score,
    /// `reserve`.
    Reserve,
    /// `permit`.
    Permit,
    /// `preBind`.
    PreBind,
    /// `bind`.
    Bind,
    /// `postBind`.
    PostBind,
}

impl Point {
    /// Every extension point, in the order a profile lists them.
    pub const ALL: [Point; 12] = [
        Point::PreEnqueue,
        Point::QueueSort,
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
        Point::Reserve,
        Point::Permit,
        Point::PreBind,
        Point::Bind,
        Point::PostBind,
    ];

    /// The field name in `plugins`.
    pub fn field(self) -> &'static str {
        match self {
            Point::PreEnqueue => "preEnqueue",
            Point::QueueSort => "queueSort",
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
            Point::PostBind => "postBind",
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.field())
    }
}

use Point::*;

/// `PrioritySort`.
pub const PRIORITY_SORT: &str = "PrioritySort";
/// `SchedulingGates`.
pub const SCHEDULING_GATES: &str = "SchedulingGates";
/// `DefaultPreemption`.
pub const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
/// `DefaultBinder`.
pub const DEFAULT_BINDER: &str = "DefaultBinder";
/// `DynamicResources`.
pub const DYNAMIC_RESOURCES: &str = "DynamicResources";
/// `NodeDeclaredFeatures`.
pub const NODE_DECLARED_FEATURES: &str = "NodeDeclaredFeatures";

/// v1.36's in-tree plugins and the extension points each implements (Unreserve, PostBind and
/// the enqueue hooks aside, which are not configured separately).
pub const PLUGINS: &[(&str, &[Point])] = &[
    (SCHEDULING_GATES, &[PreEnqueue]),
    (PRIORITY_SORT, &[QueueSort]),
    ("NodeUnschedulable", &[Filter]),
    ("NodeName", &[Filter]),
    ("TaintToleration", &[Filter, PreScore, Score]),
    ("NodeAffinity", &[PreFilter, Filter, PreScore, Score]),
    ("NodePorts", &[PreFilter, Filter]),
    ("NodeResourcesFit", &[PreFilter, Filter, PreScore, Score]),
    ("VolumeRestrictions", &[PreFilter, Filter]),
    ("NodeVolumeLimits", &[PreFilter, Filter]),
    (
        "VolumeBinding",
        &[PreFilter, Filter, PreScore, Score, Reserve, PreBind],
    ),
    ("VolumeZone", &[PreFilter, Filter]),
    ("PodTopologySpread", &[PreFilter, Filter, PreScore, Score]),
    ("InterPodAffinity", &[PreFilter, Filter, PreScore, Score]),
    (DEFAULT_PREEMPTION, &[PreEnqueue, PostFilter]),
    ("NodeResourcesBalancedAllocation", &[PreScore, Score]),
    ("ImageLocality", &[Score]),
    (DEFAULT_BINDER, &[Bind]),
    (
        DYNAMIC_RESOURCES,
        &[
            PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve, PreBind,
        ],
    ),
    (NODE_DECLARED_FEATURES, &[PreFilter, Filter]),
    ("GangScheduling", &[PreEnqueue, Permit]),
    ("TopologyPlacementGenerator", &[]),
    ("PodGroupPodsCount", &[]),
];

/// v1.36's default `multiPoint` plugins with their weights, with its default feature gates
/// (DynamicResourceAllocation and NodeDeclaredFeatures on).
pub const DEFAULT_MULTI_POINT: &[(&str, Option<i32>)] = &[
    (SCHEDULING_GATES, None),
    (PRIORITY_SORT, None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", Some(3)),
    ("NodeAffinity", Some(2)),
    ("NodePorts", None),
    ("NodeResourcesFit", Some(1)),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", Some(2)),
    ("InterPodAffinity", Some(2)),
    (DYNAMIC_RESOURCES, Some(2)),
    (DEFAULT_PREEMPTION, None),
    ("NodeResourcesBalancedAllocation", Some(1)),
    ("ImageLocality", Some(1)),
    (DEFAULT_BINDER, None),
    (NODE_DECLARED_FEATURES, None),
];

/// Default plugins v1's set gained after v1beta3 was removed (v1.29): a v1beta3 file was
/// written for a default set without them.
pub const ADDED_AFTER_V1BETA3: &[&str] = &[DYNAMIC_RESOURCES, NODE_DECLARED_FEATURES];

/// The extension points `plugin` implements; `None` for a name v1.36 does not register.
pub fn points(plugin: &str) -> Option<&'static [Point]> {
    PLUGINS
        .iter()
        .find(|(name, _)| *name == plugin)
        .map(|(_, points)| *points)
}

/// Whether v1.36 registers `plugin` and it implements `point`.
pub fn implements(plugin: &str, point: Point) -> bool {
    points(plugin).is_some_and(|p| p.contains(&point))
}

/// The names v1.36 registers, for messages.
pub fn known_names() -> String {
    PLUGINS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}
