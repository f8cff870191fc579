//! The host functions of docs/plugin-abi.md, natively: the same names and signatures as the
//! wasm imports, answered from the [`State`] of the instance being run. Pointers are real
//! addresses here; the SDK passes buffers as the ABI requires, and these functions honour the
//! same conventions (string results written only when they fit, -1 when absent, columns of
//! `n` items). What the wasm host rejects with a trap panics with the host's message, which
//! the test host turns into [`super::CallError::Trap`].

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

use super::{LogLine, State, view};
use crate::{Level, Normalize};

thread_local! {
    static CURRENT: RefCell<Option<Rc<RefCell<State>>>> = const { RefCell::new(None) };
}

/// Makes an instance's state the one the host functions serve, until dropped.
pub(crate) struct Current(Option<Rc<RefCell<State>>>);

impl Current {
    pub(crate) fn set(state: Rc<RefCell<State>>) -> Current {
        Current(CURRENT.with(|c| c.borrow_mut().replace(state)))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// A trap's message, carried by the panic that ends the call.
struct Trap(String);

fn trap(message: String) -> ! {
    std::panic::panic_any(Trap(message))
}

/// The message of a panic caught around a guest call.
pub(crate) fn panic_message(panic: Box<dyn Any + Send>) -> String {
    if let Some(Trap(m)) = panic.downcast_ref::<Trap>() {
        return m.clone();
    }
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned());
    format!("the plugin panicked: {text}")
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let state = CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        panic!(
            "berth-plugin: outside wasm, host functions are served only while a \
             testing::TestHost runs a plugin (TestHost::filter, TestHost::score, ...)"
        )
    });
    let mut state = state.borrow_mut();
    f(&mut state)
}

/// Like [`with`], for node and pod accessors: the host serves them only during a call.
fn in_call<R>(f: impl FnOnce(&mut State, std::ops::Range<usize>) -> R) -> R {
    with(|s| match s.call.clone() {
        Some(range) => f(s, range),
        None => trap(
            "node and pod accessors are only available during berth_filter / berth_score".into(),
        ),
    })
}

/// The node of call index `i`, as an index into the host's nodes.
fn node_index(range: &std::ops::Range<usize>, i: i32) -> usize {
    let len = range.len();
    match usize::try_from(i) {
        Ok(i) if i < len => range.start + i,
        _ => trap(format!("node index {i} is outside this call's {len} nodes")),
    }
}

/// # Safety
/// `ptr` is valid for `len` bytes (or `len` is 0).
unsafe fn read_bytes<'a>(ptr: *const u8, len: i32) -> &'a [u8] {
    if len <= 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: the caller passes a live slice of `len` bytes.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }
}

/// # Safety
/// As [`read_bytes`].
unsafe fn read_str(ptr: *const u8, len: i32) -> String {
    // SAFETY: forwarded.
    match std::str::from_utf8(unsafe { read_bytes(ptr, len) }) {
        Ok(s) => s.to_owned(),
        Err(_) => trap("a string argument is not valid UTF-8".into()),
    }
}

/// The string-result convention.
///
/// # Safety
/// `out` is writable for `cap` bytes.
unsafe fn write_result(out: *mut u8, cap: i32, value: Option<&[u8]>) -> i32 {
    let Some(value) = value else {
        return -1;
    };
    let len = value.len() as i32;
    if len <= cap && len > 0 {
        // SAFETY: `out` has room for `cap >= len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), out, value.len()) };
    }
    len
}

/// # Safety
/// `out` is writable for `items.len()` items.
unsafe fn write_column<T: Copy>(out: *mut T, items: &[T]) {
    if !items.is_empty() {
        // SAFETY: the SDK passes a buffer of one item per node of the call.
        unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), out, items.len()) };
    }
}

/// A string column: per node an (offset, length) pair of little-endian u32, then the bytes.
fn string_column<'s>(values: impl Iterator<Item = Option<&'s str>> + Clone) -> Vec<u8> {
    let count = values.clone().count();
    let mut out = Vec::new();
    let mut offset = (count * 8) as u32;
    for v in values.clone() {
        let (o, l) = match v {
            Some(s) => (offset, s.len() as u32),
            None => (0, u32::MAX),
        };
        offset += v.map_or(0, |s| s.len() as u32);
        out.extend_from_slice(&o.to_le_bytes());
        out.extend_from_slice(&l.to_le_bytes());
    }
    for v in values.flatten() {
        out.extend_from_slice(v.as_bytes());
    }
    out
}

fn symbol_of(state: &State, text: &str) -> i32 {
    state.symbol_ids.get(text).map_or(0, |id| *id as i32)
}

fn resource(state: &State, node: usize, name: &str, requested: bool) -> i64 {
    let node = &state.nodes[node];
    if requested {
        node.requested(name)
    } else {
        node.allocatable.get(name).copied().unwrap_or(0)
    }
}

/// Most reasons one instance may register, as the host.
const MAX_REASONS: usize = 4096;
/// Longest reason text kept.
const MAX_REASON_BYTES: usize = 256;
/// Longest error message kept.
const MAX_ERROR_BYTES: usize = 1024;

fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub unsafe fn config(out: *mut u8, cap: i32) -> i32 {
    // SAFETY: the SDK passes a buffer of `cap` bytes.
    with(|s| unsafe { write_result(out, cap, Some(s.config.as_bytes())) })
}

pub unsafe fn log(level: i32, ptr: *const u8, len: i32) {
    // SAFETY: the SDK passes a live slice.
    let text = String::from_utf8_lossy(unsafe { read_bytes(ptr, len) }).into_owned();
    let level = match level {
        i32::MIN..=0 => Level::Debug,
        1 => Level::Info,
        2 => Level::Warn,
        _ => Level::Error,
    };
    with(|s| s.logs.push(LogLine { level, text }));
}

pub unsafe fn set_error(ptr: *const u8, len: i32) {
    // SAFETY: the SDK passes a live slice.
    let text = String::from_utf8_lossy(unsafe { read_bytes(ptr, len) }).into_owned();
    with(|s| s.error = Some(truncate(&text, MAX_ERROR_BYTES).to_owned()));
}

pub unsafe fn set_normalize(mode: i32) {
    let normalize = match mode {
        0 => Normalize::None,
        1 => Normalize::Reduce,
        2 => Normalize::ReduceReverse,
        _ => trap(format!(
            "set_normalize({mode}): expected 0 (none), 1 (reduce) or 2 (reverse)"
        )),
    };
    with(|s| s.normalize = normalize);
}

pub unsafe fn intern(ptr: *const u8, len: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let text = unsafe { read_str(ptr, len) };
    in_call(|s, _| symbol_of(s, &text))
}

pub unsafe fn symbol(sym: i32, out: *mut u8, cap: i32) -> i32 {
    in_call(|s, _| {
        let text = usize::try_from(sym)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| s.symbols.get(i));
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, text.map(String::as_bytes)) }
    })
}

pub unsafe fn pod_json(out: *mut u8, cap: i32) -> i32 {
    in_call(|s, _| {
        if s.pod_json.is_none() {
            s.pod_json = s.pod.as_ref().map(view::pod_json);
        }
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, s.pod_json.as_deref()) }
    })
}

pub unsafe fn pod_label(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let key = unsafe { read_str(kp, kl) };
    in_call(|s, _| {
        let value = s.pod.as_ref().and_then(|p| p.labels.get(&key));
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, value.map(String::as_bytes)) }
    })
}

pub unsafe fn pod_annotation(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let key = unsafe { read_str(kp, kl) };
    in_call(|s, _| {
        let value = s.pod.as_ref().and_then(|p| p.annotations.get(&key));
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, value.map(String::as_bytes)) }
    })
}

pub unsafe fn pod_request(np: *const u8, nl: i32) -> i64 {
    // SAFETY: the SDK passes a live slice.
    let name = unsafe { read_str(np, nl) };
    in_call(|s, _| s.pod.as_ref().map_or(0, |p| p.request_of(&name)))
}

pub unsafe fn node_name(i: i32, out: *mut u8, cap: i32) -> i32 {
    in_call(|s, range| {
        let node = &s.nodes[node_index(&range, i)];
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(node.name.as_bytes())) }
    })
}

pub unsafe fn node_label(i: i32, key: i32) -> i32 {
    in_call(|s, range| {
        let node = &s.nodes[node_index(&range, i)];
        let key = usize::try_from(key)
            .ok()
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| s.symbols.get(k));
        key.and_then(|k| node.labels.get(k))
            .map_or(0, |v| symbol_of(s, v))
    })
}

pub unsafe fn node_annotation(i: i32, kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let key = unsafe { read_str(kp, kl) };
    in_call(|s, range| {
        let node = &s.nodes[node_index(&range, i)];
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, node.annotations.get(&key).map(String::as_bytes)) }
    })
}

pub unsafe fn node_taints(i: i32, out: *mut u8, cap: i32) -> i32 {
    in_call(|s, range| {
        let json = view::taints_json(&s.nodes[node_index(&range, i)].taints);
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(&json)) }
    })
}

pub unsafe fn node_allocatable(i: i32, np: *const u8, nl: i32) -> i64 {
    // SAFETY: the SDK passes a live slice.
    let name = unsafe { read_str(np, nl) };
    in_call(|s, range| resource(s, node_index(&range, i), &name, false))
}

pub unsafe fn node_requested(i: i32, np: *const u8, nl: i32) -> i64 {
    // SAFETY: the SDK passes a live slice.
    let name = unsafe { read_str(np, nl) };
    in_call(|s, range| resource(s, node_index(&range, i), &name, true))
}

pub unsafe fn node_pod_count(i: i32) -> i32 {
    in_call(|s, range| s.nodes[node_index(&range, i)].pods.len() as i32)
}

pub unsafe fn node_conditions(i: i32) -> i32 {
    in_call(|s, range| s.nodes[node_index(&range, i)].conditions.0)
}

pub unsafe fn node_image_size(i: i32, np: *const u8, nl: i32) -> i64 {
    // SAFETY: the SDK passes a live slice.
    let name = unsafe { read_str(np, nl) };
    in_call(|s, range| {
        s.nodes[node_index(&range, i)]
            .images
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map_or(-1, |(_, size)| *size)
    })
}

pub unsafe fn node_pods(i: i32, out: *mut u8, cap: i32) -> i32 {
    in_call(|s, range| {
        let json = view::node_pods_json(&s.nodes[node_index(&range, i)]);
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(&json)) }
    })
}

pub unsafe fn node_json(i: i32, out: *mut u8, cap: i32) -> i32 {
    in_call(|s, range| {
        let json = view::node_json(&s.nodes[node_index(&range, i)]);
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(&json)) }
    })
}

pub unsafe fn nodes_label(key: i32, out: *mut u32) {
    in_call(|s, range| {
        let key = usize::try_from(key)
            .ok()
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| s.symbols.get(k));
        let column: Vec<u32> = s.nodes[range]
            .iter()
            .map(|n| {
                key.and_then(|k| n.labels.get(k))
                    .map_or(0, |v| symbol_of(s, v) as u32)
            })
            .collect();
        // SAFETY: the SDK passes one u32 per node of the call.
        unsafe { write_column(out, &column) }
    })
}

pub unsafe fn nodes_annotation(kp: *const u8, kl: i32, out: *mut u8, cap: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let key = unsafe { read_str(kp, kl) };
    in_call(|s, range| {
        let column = string_column(
            s.nodes[range]
                .iter()
                .map(|n| n.annotations.get(&key).map(String::as_str)),
        );
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(&column)) }
    })
}

pub unsafe fn nodes_name(out: *mut u8, cap: i32) -> i32 {
    in_call(|s, range| {
        let column = string_column(s.nodes[range].iter().map(|n| Some(n.name.as_str())));
        // SAFETY: the SDK passes a buffer of `cap` bytes.
        unsafe { write_result(out, cap, Some(&column)) }
    })
}

pub unsafe fn nodes_resource(which: i32, np: *const u8, nl: i32, out: *mut i64) {
    // SAFETY: the SDK passes a live slice.
    let name = unsafe { read_str(np, nl) };
    let requested = match which {
        0 => false,
        1 => true,
        _ => trap(format!(
            "nodes_resource({which}): expected 0 (allocatable) or 1 (requested)"
        )),
    };
    in_call(|s, range| {
        let column: Vec<i64> = range.map(|n| resource(s, n, &name, requested)).collect();
        // SAFETY: the SDK passes one i64 per node of the call.
        unsafe { write_column(out, &column) }
    })
}

pub unsafe fn reason(ptr: *const u8, len: i32) -> i32 {
    // SAFETY: the SDK passes a live slice.
    let text = String::from_utf8_lossy(unsafe { read_bytes(ptr, len) }).into_owned();
    let text = truncate(&text, MAX_REASON_BYTES);
    with(|s| {
        if let Some(id) = s.reason_ids.get(text) {
            return *id as i32;
        }
        if s.reasons.len() >= MAX_REASONS {
            trap(format!(
                "more than {MAX_REASONS} distinct reasons; reasons should be a few constant texts"
            ));
        }
        s.reasons.push(text.to_owned());
        let id = s.reasons.len() as u32;
        s.reason_ids.insert(text.to_owned(), id);
        id as i32
    })
}

pub unsafe fn set_verdicts(ptr: *const u32) {
    with(|s| {
        let known = s.reasons.len() as u32;
        // SAFETY: the SDK passes one u32 per node of the call.
        let ids = unsafe { std::slice::from_raw_parts(ptr, s.call_verdicts.len()) };
        if let Some(id) = ids.iter().find(|id| **id > known) {
            trap(format!(
                "set_verdicts: unknown reason id {id}; register it with `reason` first"
            ));
        }
        s.call_verdicts.copy_from_slice(ids);
    })
}

pub unsafe fn set_scores(ptr: *const i64) {
    with(|s| {
        // SAFETY: the SDK passes one i64 per node of the call.
        let scores = unsafe { std::slice::from_raw_parts(ptr, s.call_scores.len()) };
        s.call_scores.copy_from_slice(scores);
    })
}
