//! Berth scheduler plugins in Rust.
//!
//! Implement [`Filter`] (a predicate) or [`Score`] (a priority) and export it with
//! [`filter_plugin!`] or [`score_plugin!`]; build with
//! `cargo build --release --target wasm32-wasip1` as a `cdylib`. The macros export the ABI
//! (docs/plugin-abi.md, version [`ABI_VERSION`]): the host calls your `filter` or `score` once
//! per chunk of nodes with the pod being scheduled, and you answer for every node of the
//! chunk. Read nodes through [`Nodes`]: per-node accessors for anything, column accessors
//! (one host call for all nodes) for the hot path. The policy entry's `config` arrives as your
//! own [`Filter::Config`] / [`Score::Config`] type, deserialised by the SDK.
//!
//! On any target but wasm32 the host functions are served by [`testing::TestHost`], an
//! in-memory host over nodes and pods built in the test, so `cargo test` exercises the
//! plugin's logic natively through the same SDK code the wasm build runs.
//!
//! ```
//! use berth_plugin::{Filter, Nodes, Pod, Reason, Symbol, Verdicts, filter_plugin, reason};
//!
//! #[derive(serde::Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Config { label: String }
//!
//! struct NeedsLabel { label: String, missing: Reason }
//! impl Filter for NeedsLabel {
//!     type Config = Config;
//!     fn new(config: Config) -> Result<Self, String> {
//!         Ok(NeedsLabel { label: config.label, missing: reason("node(s) lacked the label") })
//!     }
//!     fn filter(&mut self, _pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
//!         for (i, value) in nodes.labels(Symbol::of(&self.label)).iter().enumerate() {
//!             if value.is_none() { out.reject(i, self.missing); }
//!         }
//!         Ok(())
//!     }
//! }
//! filter_plugin!(NeedsLabel);
//! ```

use std::cell::RefCell;

use serde::Deserialize;
use serde::de::DeserializeOwned;

#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

#[cfg(not(target_arch = "wasm32"))]
use testing::sys;

/// The ABI version this SDK implements.
pub const ABI_VERSION: i32 = 1;

/// The host functions (docs/plugin-abi.md). Pointers are offsets in this module's memory.
#[cfg(target_arch = "wasm32")]
mod sys {
    #[link(wasm_import_module = "berth")]
    unsafe extern "C" {
        pub fn config(out: *mut u8, cap: i32) -> i32;
        pub fn log(level: i32, ptr: *const u8, len: i32);
        pub fn set_error(ptr: *const u8, len: i32);
        pub fn set_normalize(mode: i32);
        pub fn intern(ptr: *const u8, len: i32) -> i32;
        pub fn symbol(sym: i32, out: *mut u8, cap: i32) -> i32;
        pub fn pod_json(out: *mut u8, cap: i32) -> i32;
        pub fn pod_label(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32;
        pub fn pod_annotation(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32;
        pub fn pod_request(np: *const u8, nl: i32) -> i64;
        pub fn node_name(i: i32, out: *mut u8, cap: i32) -> i32;
        pub fn node_label(i: i32, key: i32) -> i32;
        pub fn node_annotation(i: i32, kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32;
        pub fn node_taints(i: i32, out: *mut u8, cap: i32) -> i32;
        pub fn node_allocatable(i: i32, np: *const u8, nl: i32) -> i64;
        pub fn node_requested(i: i32, np: *const u8, nl: i32) -> i64;
        pub fn node_pod_count(i: i32) -> i32;
        pub fn node_conditions(i: i32) -> i32;
        pub fn node_image_size(i: i32, np: *const u8, nl: i32) -> i64;
        pub fn node_pods(i: i32, out: *mut u8, cap: i32) -> i32;
        pub fn node_json(i: i32, out: *mut u8, cap: i32) -> i32;
        pub fn nodes_label(key: i32, out: *mut u32);
        pub fn nodes_annotation(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32;
        pub fn nodes_name(out: *mut u8, cap: i32) -> i32;
        pub fn nodes_resource(which: i32, np: *const u8, nl: i32, out: *mut i64);
        pub fn reason(ptr: *const u8, len: i32) -> i32;
        pub fn set_verdicts(ptr: *const u32);
        pub fn set_scores(ptr: *const i64);
    }
}

/// Calls a host function that writes a result of unknown length: `f(buffer, capacity)`
/// returns the full length (or -1 when absent) and writes only when it fits, so a second call
/// with a large enough buffer gets the rest.
fn fetch(mut f: impl FnMut(*mut u8, i32) -> i32) -> Option<Vec<u8>> {
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    loop {
        let cap = buf.capacity() as i32;
        let len = f(buf.as_mut_ptr(), cap);
        if len < 0 {
            return None;
        }
        if len <= cap {
            // SAFETY: the host wrote exactly `len` initialised bytes at the start of `buf`
            // (`len <= capacity`), as the ABI's string-result convention promises.
            unsafe { buf.set_len(len as usize) };
            return Some(buf);
        }
        buf.reserve(len as usize);
    }
}

fn fetch_string(f: impl FnMut(*mut u8, i32) -> i32) -> Option<String> {
    fetch(f).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn fetch_json(f: impl FnMut(*mut u8, i32) -> i32) -> serde_json::Value {
    fetch(f)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Decodes a string column: per node (offset, length), then the bytes.
fn decode_column(bytes: &[u8], count: usize) -> Vec<Option<String>> {
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    (0..count)
        .map(|i| {
            let (offset, len) = (word(i * 8) as usize, word(i * 8 + 4));
            if len == u32::MAX {
                return None;
            }
            bytes
                .get(offset..offset + len as usize)
                .map(|s| String::from_utf8_lossy(s).into_owned())
        })
        .collect()
}

/// Log levels of [`log`], as the ABI numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Debug.
    Debug = 0,
    /// Info.
    Info = 1,
    /// Warning.
    Warn = 2,
    /// Error.
    Error = 3,
}

/// Writes a line to the scheduler's log (bounded per call by the host).
pub fn log(level: Level, message: &str) {
    // SAFETY: the pointer and length describe a live, initialised byte slice.
    unsafe { sys::log(level as i32, message.as_ptr(), message.len() as i32) }
}

/// A string (label key or value) as the host's interner knows it: comparing symbols is
/// comparing integers. A string no object in the cluster uses has no symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol(u32);

impl Symbol {
    /// The symbol of `text`, None if no node, pod or selector uses it. Valid for the
    /// current call only: the host renumbers symbols between calls.
    pub fn of(text: &str) -> Option<Symbol> {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        let id = unsafe { sys::intern(text.as_ptr(), text.len() as i32) };
        (id > 0).then_some(Symbol(id as u32))
    }

    /// A symbol from a raw column value; 0 (absent) gives None.
    pub fn from_raw(id: u32) -> Option<Symbol> {
        (id > 0).then_some(Symbol(id))
    }

    /// The raw id, as in columns.
    pub fn raw(self) -> u32 {
        self.0
    }

    /// The text.
    pub fn text(self) -> String {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe { sys::symbol(self.0 as i32, out, cap) }).unwrap_or_default()
    }
}

/// The pod being scheduled.
pub struct Pod {
    _private: (),
}

impl Pod {
    /// The pod as JSON (`metadata`, `spec`, `request`; see docs/plugin-abi.md).
    pub fn json(&self) -> serde_json::Value {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_json(|out, cap| unsafe { sys::pod_json(out, cap) })
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<String> {
        // SAFETY: key is a live slice; `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe { sys::pod_label(key.as_ptr(), key.len() as i32, out, cap) })
    }

    /// An annotation's value.
    pub fn annotation(&self, key: &str) -> Option<String> {
        // SAFETY: key is a live slice; `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe {
            sys::pod_annotation(key.as_ptr(), key.len() as i32, out, cap)
        })
    }

    /// The pod's request of a resource (`cpu` in millicores, others in base units): per
    /// resource, the larger of the app containers' sum and any init container, plus overhead.
    pub fn request(&self, resource: &str) -> i64 {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        unsafe { sys::pod_request(resource.as_ptr(), resource.len() as i32) }
    }

    /// The pod's tolerations (from [`Pod::json`]).
    pub fn tolerations(&self) -> Vec<Toleration> {
        let mut json = self.json();
        serde_json::from_value(json["spec"]["tolerations"].take()).unwrap_or_default()
    }
}

/// A node taint, as `node_taints` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value ("" when unset).
    #[serde(default)]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// A pod toleration, as the pod's JSON view reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(default)]
pub struct Toleration {
    /// Key ("" with `Exists` tolerates every taint).
    pub key: String,
    /// `Equal` or `Exists`.
    pub operator: String,
    /// Value (for `Equal`).
    pub value: String,
    /// The effect it tolerates; None tolerates every effect.
    pub effect: Option<String>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint` (Kubernetes' `ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.as_ref().is_some_and(|e| *e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "Exists" => true,
            "Equal" | "" => self.value == taint.value,
            _ => false,
        }
    }
}

/// Node conditions as the host reports them: a set of the bits below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conditions(pub i32);

impl std::ops::BitOr for Conditions {
    type Output = Conditions;
    fn bitor(self, other: Conditions) -> Conditions {
        Conditions(self.0 | other.0)
    }
}

impl Conditions {
    /// No condition set (not even Ready).
    pub const NONE: Conditions = Conditions(0);
    /// Ready is True.
    pub const READY: Conditions = Conditions(1);
    /// MemoryPressure is True.
    pub const MEMORY_PRESSURE: Conditions = Conditions(2);
    /// DiskPressure is True.
    pub const DISK_PRESSURE: Conditions = Conditions(4);
    /// PIDPressure is True.
    pub const PID_PRESSURE: Conditions = Conditions(8);
    /// NetworkUnavailable is True.
    pub const NETWORK_UNAVAILABLE: Conditions = Conditions(16);
    /// `spec.unschedulable` is set.
    pub const UNSCHEDULABLE: Conditions = Conditions(32);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Conditions) -> bool {
        self.0 & other.0 == other.0
    }
    /// Ready is True.
    pub fn ready(self) -> bool {
        self.0 & 1 != 0
    }
    /// MemoryPressure is True.
    pub fn memory_pressure(self) -> bool {
        self.0 & 2 != 0
    }
    /// DiskPressure is True.
    pub fn disk_pressure(self) -> bool {
        self.0 & 4 != 0
    }
    /// PIDPressure is True.
    pub fn pid_pressure(self) -> bool {
        self.0 & 8 != 0
    }
    /// NetworkUnavailable is True.
    pub fn network_unavailable(self) -> bool {
        self.0 & 16 != 0
    }
    /// `spec.unschedulable` is set.
    pub fn unschedulable(self) -> bool {
        self.0 & 32 != 0
    }
}

/// Which quantities [`Nodes::resources`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Allocatable.
    Allocatable = 0,
    /// Requested by the pods on the node.
    Requested = 1,
}

/// The nodes of this call, numbered 0..len().
pub struct Nodes {
    count: usize,
}

impl Nodes {
    /// How many nodes this call covers.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the call covers no node.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// A node's name.
    pub fn name(&self, i: usize) -> String {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe { sys::node_name(i as i32, out, cap) }).unwrap_or_default()
    }

    /// A node's value of label `key`, as a symbol.
    pub fn label(&self, i: usize, key: Symbol) -> Option<Symbol> {
        // SAFETY: plain integers.
        Symbol::from_raw(unsafe { sys::node_label(i as i32, key.0 as i32) } as u32)
    }

    /// A node's value of label `key`, as text.
    pub fn label_text(&self, i: usize, key: &str) -> Option<String> {
        Symbol::of(key)
            .and_then(|k| self.label(i, k))
            .map(Symbol::text)
    }

    /// An annotation's value.
    pub fn annotation(&self, i: usize, key: &str) -> Option<String> {
        // SAFETY: key is a live slice; `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe {
            sys::node_annotation(i as i32, key.as_ptr(), key.len() as i32, out, cap)
        })
    }

    /// The node's taints.
    pub fn taints(&self, i: usize) -> Vec<Taint> {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch(|out, cap| unsafe { sys::node_taints(i as i32, out, cap) })
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// An allocatable quantity (`pods` is the pod capacity).
    pub fn allocatable(&self, i: usize, resource: &str) -> i64 {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        unsafe { sys::node_allocatable(i as i32, resource.as_ptr(), resource.len() as i32) }
    }

    /// A quantity requested by the pods on the node (`pods` is their count).
    pub fn requested(&self, i: usize, resource: &str) -> i64 {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        unsafe { sys::node_requested(i as i32, resource.as_ptr(), resource.len() as i32) }
    }

    /// How many pods run on the node.
    pub fn pod_count(&self, i: usize) -> u32 {
        // SAFETY: plain integers.
        unsafe { sys::node_pod_count(i as i32) as u32 }
    }

    /// The node's conditions.
    pub fn conditions(&self, i: usize) -> Conditions {
        // SAFETY: plain integers.
        Conditions(unsafe { sys::node_conditions(i as i32) })
    }

    /// The size of an image on the node, None if the node does not have it.
    pub fn image_size(&self, i: usize, image: &str) -> Option<i64> {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        let size = unsafe { sys::node_image_size(i as i32, image.as_ptr(), image.len() as i32) };
        (size >= 0).then_some(size)
    }

    /// The pods on the node, as a JSON array of `{namespace, name, labels}`.
    pub fn pods(&self, i: usize) -> serde_json::Value {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_json(|out, cap| unsafe { sys::node_pods(i as i32, out, cap) })
    }

    /// The whole node as JSON (see docs/plugin-abi.md).
    pub fn json(&self, i: usize) -> serde_json::Value {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_json(|out, cap| unsafe { sys::node_json(i as i32, out, cap) })
    }

    /// Label `key`'s value on every node, as raw symbol ids (0 = absent), in one host call.
    /// `out` is reused: pass the same vector every call to avoid allocating.
    pub fn label_column(&self, key: Option<Symbol>, out: &mut Vec<u32>) {
        out.clear();
        out.resize(self.count, 0);
        if let Some(key) = key {
            // SAFETY: `out` holds `count` u32s, the size the host writes.
            unsafe { sys::nodes_label(key.0 as i32, out.as_mut_ptr()) }
        }
    }

    /// Label `key`'s value on every node, as symbols.
    pub fn labels(&self, key: Option<Symbol>) -> Vec<Option<Symbol>> {
        let mut raw = Vec::new();
        self.label_column(key, &mut raw);
        raw.into_iter().map(Symbol::from_raw).collect()
    }

    /// Annotation `key` on every node, in one host call.
    pub fn annotations(&self, key: &str) -> Vec<Option<String>> {
        // SAFETY: key is a live slice; `fetch` passes a writable buffer of `cap` bytes.
        let bytes = fetch(|out, cap| unsafe {
            sys::nodes_annotation(key.as_ptr(), key.len() as i32, out, cap)
        })
        .unwrap_or_default();
        decode_column(&bytes, self.count)
    }

    /// Every node's name, in one host call.
    pub fn names(&self) -> Vec<String> {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        let bytes = fetch(|out, cap| unsafe { sys::nodes_name(out, cap) }).unwrap_or_default();
        decode_column(&bytes, self.count)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    }

    /// A quantity of `resource` on every node, in one host call.
    pub fn resources(&self, which: Quantity, resource: &str, out: &mut Vec<i64>) {
        out.clear();
        out.resize(self.count, 0);
        // SAFETY: `resource` is a live slice; `out` holds `count` i64s, the size the host writes.
        unsafe {
            sys::nodes_resource(
                which as i32,
                resource.as_ptr(),
                resource.len() as i32,
                out.as_mut_ptr(),
            )
        }
    }
}

/// A registered rejection reason; register each text once (in `new`) and reuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason(u32);

/// Registers a reason text (as it should appear in the FitError) and returns its handle.
pub fn reason(text: &str) -> Reason {
    // SAFETY: the pointer and length describe a live, initialised byte slice.
    Reason(unsafe { sys::reason(text.as_ptr(), text.len() as i32) } as u32)
}

/// The filter's answers for this call: every node passes unless rejected.
pub struct Verdicts {
    ids: Vec<u32>,
    rejected: bool,
}

impl Verdicts {
    /// Rejects node `i` for `reason`.
    pub fn reject(&mut self, i: usize, reason: Reason) {
        if let Some(v) = self.ids.get_mut(i) {
            *v = reason.0;
            self.rejected = true;
        }
    }

    /// Lets node `i` pass again.
    pub fn pass(&mut self, i: usize) {
        if let Some(v) = self.ids.get_mut(i) {
            *v = 0;
        }
    }
}

/// How the host turns a score plugin's raw scores into 0..=100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalize {
    /// Scores are already 0..=100 (out-of-range values are clamped).
    None = 0,
    /// The highest raw score among feasible nodes becomes 100, the rest in proportion.
    Reduce = 1,
    /// The lowest raw score becomes the best: `100 - 100 * raw / highest`.
    ReduceReverse = 2,
}

/// Deserialises a policy entry's `config` JSON into `T`. The error names the field that did
/// not match (`config.leadMinutes: invalid type: string "x", expected f64`), or says where
/// the JSON itself is malformed.
pub fn parse_config<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // Malformed JSON has no field to name; its position says where to look.
        if path == "." || !inner.is_data() {
            return format!("config: {inner}");
        }
        // The position is noise once the field is named.
        let text = inner.to_string();
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        format!(
            "config.{path}: {}",
            text.strip_suffix(&position).unwrap_or(&text)
        )
    })?;
    de.end().map_err(|e| format!("config: {e}"))?;
    Ok(value)
}

/// The [`Filter::Config`] of a plugin that takes no configuration: accepts `{}` (the host's
/// default) and rejects any field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

/// A predicate.
pub trait Filter: Sized {
    /// The plugin's configuration: the policy entry's `config` (`{}` when absent),
    /// deserialised with serde. Use `serde_json::Value` to read it untyped.
    type Config: DeserializeOwned;
    /// Builds the plugin from its configuration; called once per instance. An error stops
    /// the plugin from loading and is reported; name the offending field in it.
    fn new(config: Self::Config) -> Result<Self, String>;
    /// Whether the verdict on a node follows from that node and the pod alone (not from
    /// other nodes or where other pods run). The scheduler then keeps it for later pods of
    /// the same class while the node is unchanged. Default: false, asked for every pod.
    const NODE_LOCAL: bool = false;
    /// Rejects the nodes that cannot take the pod.
    fn filter(&mut self, pod: &Pod, nodes: &Nodes, verdicts: &mut Verdicts) -> Result<(), String>;
}

/// A priority.
pub trait Score: Sized {
    /// The plugin's configuration, as [`Filter::Config`].
    type Config: DeserializeOwned;
    /// Builds the plugin from its configuration; called once per instance.
    fn new(config: Self::Config) -> Result<Self, String>;
    /// As [`Filter::NODE_LOCAL`], for the raw score of a node.
    const NODE_LOCAL: bool = false;
    /// How raw scores are normalised (default: they already are 0..=100).
    fn normalize(&self) -> Normalize {
        Normalize::None
    }
    /// Sets a raw score for each node (`scores[i]`, 0 by default).
    fn score(&mut self, pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String>;
}

/// What the export macros expand to call; not part of the API.
#[doc(hidden)]
pub mod __export {
    use super::*;

    thread_local! {
        static VERDICTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
        static SCORES: RefCell<Vec<i64>> = const { RefCell::new(Vec::new()) };
    }

    fn error(message: &str) -> i32 {
        // SAFETY: the pointer and length describe a live, initialised byte slice.
        unsafe { sys::set_error(message.as_ptr(), message.len() as i32) };
        1
    }

    fn config() -> String {
        // SAFETY: `fetch` passes a writable buffer of `cap` bytes.
        fetch_string(|out, cap| unsafe { sys::config(out, cap) }).unwrap_or_default()
    }

    pub fn init_filter<T: Filter>(slot: &RefCell<Option<T>>) -> i32 {
        match parse_config(&config()).and_then(T::new) {
            Ok(p) => {
                *slot.borrow_mut() = Some(p);
                0
            }
            Err(e) => error(&e),
        }
    }

    pub fn init_score<T: Score>(slot: &RefCell<Option<T>>) -> i32 {
        match parse_config(&config()).and_then(T::new) {
            Ok(p) => {
                // SAFETY: a plain integer.
                unsafe { sys::set_normalize(p.normalize() as i32) };
                *slot.borrow_mut() = Some(p);
                0
            }
            Err(e) => error(&e),
        }
    }

    pub fn run_filter<T: Filter>(slot: &RefCell<Option<T>>, count: i32) -> i32 {
        let mut guard = slot.borrow_mut();
        let Some(plugin) = guard.as_mut() else {
            return error("berth_init did not run");
        };
        VERDICTS.with(|buffer| {
            let mut ids = std::mem::take(&mut *buffer.borrow_mut());
            ids.clear();
            ids.resize(count.max(0) as usize, 0);
            let mut verdicts = Verdicts {
                ids,
                rejected: false,
            };
            let nodes = Nodes {
                count: count.max(0) as usize,
            };
            let result = plugin.filter(&Pod { _private: () }, &nodes, &mut verdicts);
            if verdicts.rejected {
                // SAFETY: `ids` holds `count` u32s, the size the host reads.
                unsafe { sys::set_verdicts(verdicts.ids.as_ptr()) };
            }
            *buffer.borrow_mut() = verdicts.ids;
            match result {
                Ok(()) => 0,
                Err(e) => error(&e),
            }
        })
    }

    pub fn run_score<T: Score>(slot: &RefCell<Option<T>>, count: i32) -> i32 {
        let mut guard = slot.borrow_mut();
        let Some(plugin) = guard.as_mut() else {
            return error("berth_init did not run");
        };
        SCORES.with(|buffer| {
            let mut scores = std::mem::take(&mut *buffer.borrow_mut());
            scores.clear();
            scores.resize(count.max(0) as usize, 0);
            let nodes = Nodes {
                count: count.max(0) as usize,
            };
            let result = plugin.score(&Pod { _private: () }, &nodes, &mut scores);
            // SAFETY: `scores` holds `count` i64s, the size the host reads.
            unsafe { sys::set_scores(scores.as_ptr()) };
            *buffer.borrow_mut() = scores;
            match result {
                Ok(()) => 0,
                Err(e) => error(&e),
            }
        })
    }
}

/// Exports a [`Filter`] type as this module's predicate.
#[macro_export]
macro_rules! filter_plugin {
    ($plugin:ty) => {
        ::std::thread_local! {
            static __BERTH_PLUGIN: ::std::cell::RefCell<::std::option::Option<$plugin>> =
                const { ::std::cell::RefCell::new(::std::option::Option::None) };
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_abi_version() -> i32 {
            $crate::ABI_VERSION
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_init() -> i32 {
            __BERTH_PLUGIN.with(|slot| $crate::__export::init_filter::<$plugin>(slot))
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_node_local() -> i32 {
            <$plugin as $crate::Filter>::NODE_LOCAL as i32
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_filter(count: i32) -> i32 {
            __BERTH_PLUGIN.with(|slot| $crate::__export::run_filter::<$plugin>(slot, count))
        }
    };
}

/// Exports a [`Score`] type as this module's priority.
#[macro_export]
macro_rules! score_plugin {
    ($plugin:ty) => {
        ::std::thread_local! {
            static __BERTH_PLUGIN: ::std::cell::RefCell<::std::option::Option<$plugin>> =
                const { ::std::cell::RefCell::new(::std::option::Option::None) };
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_abi_version() -> i32 {
            $crate::ABI_VERSION
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_init() -> i32 {
            __BERTH_PLUGIN.with(|slot| $crate::__export::init_score::<$plugin>(slot))
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_node_local() -> i32 {
            <$plugin as $crate::Score>::NODE_LOCAL as i32
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn berth_score(count: i32) -> i32 {
            __BERTH_PLUGIN.with(|slot| $crate::__export::run_score::<$plugin>(slot, count))
        }
    };
}
