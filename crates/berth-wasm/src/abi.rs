//! The plugin ABI's names and numbers, as docs/plugin-abi.md specifies them. The document is
//! the contract; this module is its one copy in the host.

/// The ABI version this host speaks; a module's `berth_abi_version()` must return it.
pub const ABI_VERSION: i32 = 1;

/// The import module of the host functions.
pub const HOST_MODULE: &str = "berth";

/// Export: `berth_abi_version() -> i32`.
pub const EXPORT_VERSION: &str = "berth_abi_version";
/// Export (optional): `berth_init() -> i32`, called once per instance; 0 means ready.
pub const EXPORT_INIT: &str = "berth_init";
/// Export of a filter plugin: `berth_filter(node_count: i32) -> i32`; 0 means done.
pub const EXPORT_FILTER: &str = "berth_filter";
/// Export of a score plugin: `berth_score(node_count: i32) -> i32`; 0 means done.
pub const EXPORT_SCORE: &str = "berth_score";
/// Export (optional): the WASI reactor initialiser, run once before anything else.
pub const EXPORT_INITIALIZE: &str = "_initialize";
/// Export: the guest's linear memory.
pub const EXPORT_MEMORY: &str = "memory";
/// Optional export, `() -> i32`: 1 when the guest's answer about a node follows from that
/// node (its object and pods) and the pod alone, so the scheduler may keep it for later pods
/// of the same class (equal in everything but their identity) while the node is unchanged.
/// Absent or anything else: the answer is asked again for every pod.
pub const EXPORT_NODE_LOCAL: &str = "berth_node_local";

/// `node_conditions` bit: the Ready condition is True.
pub const COND_READY: i32 = 1;
/// `node_conditions` bit: MemoryPressure is True.
pub const COND_MEMORY_PRESSURE: i32 = 2;
/// `node_conditions` bit: DiskPressure is True.
pub const COND_DISK_PRESSURE: i32 = 4;
/// `node_conditions` bit: PIDPressure is True.
pub const COND_PID_PRESSURE: i32 = 8;
/// `node_conditions` bit: NetworkUnavailable is True.
pub const COND_NETWORK_UNAVAILABLE: i32 = 16;
/// `node_conditions` bit: `spec.unschedulable` is set.
pub const COND_UNSCHEDULABLE: i32 = 32;

/// `nodes_resource` selector: allocatable quantities.
pub const RESOURCE_ALLOCATABLE: i32 = 0;
/// `nodes_resource` selector: quantities requested by the pods on the node.
pub const RESOURCE_REQUESTED: i32 = 1;

/// Returned by string accessors when the value is absent.
pub const ABSENT: i32 = -1;
/// Length marker of an absent value in a string column.
pub const COLUMN_ABSENT: u32 = u32::MAX;

/// How the host turns a score plugin's raw scores into 0..=100 (`set_normalize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Normalize {
    /// Scores are already 0..=100; out-of-range values are clamped.
    #[default]
    None,
    /// Scaled so the highest feasible node gets 100 (upstream's reduce).
    Reduce,
    /// As `Reduce`, reversed: the lowest raw score gets 100.
    ReduceReverse,
}

impl Normalize {
    /// The mode of a `set_normalize` argument.
    pub fn from_code(code: i32) -> Option<Normalize> {
        match code {
            0 => Some(Normalize::None),
            1 => Some(Normalize::Reduce),
            2 => Some(Normalize::ReduceReverse),
            _ => None,
        }
    }
}

/// Most distinct reasons one instance may register: reasons are meant to be a few constants.
pub const MAX_REASONS: usize = 4096;
/// Longest reason text kept; longer ones are cut at a character boundary.
pub const MAX_REASON_BYTES: usize = 256;
/// Most bytes of guest output (stdout, stderr, `log`) logged per call; the rest is dropped.
pub const MAX_LOG_BYTES_PER_CALL: usize = 8 * 1024;
/// Longest error message kept from `set_error`.
pub const MAX_ERROR_BYTES: usize = 1024;

/// The host functions of ABI version 1: (name, parameter types, result types), with `i` for
/// i32 and `I` for i64. Used to tell a module that imports something this version lacks.
pub const HOST_FUNCTIONS: &[(&str, &str, &str)] = &[
    ("config", "ii", "i"),
    ("log", "iii", ""),
    ("set_error", "ii", ""),
    ("set_normalize", "i", ""),
    ("intern", "ii", "i"),
    ("symbol", "iii", "i"),
    ("pod_json", "ii", "i"),
    ("pod_label", "iiii", "i"),
    ("pod_annotation", "iiii", "i"),
    ("pod_request", "ii", "I"),
    ("node_name", "iii", "i"),
    ("node_label", "ii", "i"),
    ("node_annotation", "iiiii", "i"),
    ("node_taints", "iii", "i"),
    ("node_allocatable", "iii", "I"),
    ("node_requested", "iii", "I"),
    ("node_pod_count", "i", "i"),
    ("node_conditions", "i", "i"),
    ("node_image_size", "iii", "I"),
    ("node_pods", "iii", "i"),
    ("node_json", "iii", "i"),
    ("nodes_label", "ii", ""),
    ("nodes_annotation", "iiii", "i"),
    ("nodes_name", "ii", "i"),
    ("nodes_resource", "iiii", ""),
    ("reason", "ii", "i"),
    ("reject", "ii", ""),
    ("set_verdicts", "i", ""),
    ("set_score", "iI", ""),
    ("set_scores", "i", ""),
];
