//! The host side of the ABI: the state each instance's store carries, the per-call context
//! (the cluster snapshot and the pod), and the host functions that read them.
//!
//! Node facts are read straight from the engine's `&Cluster` during a guest call. A store's
//! data must be `'static`, so the borrowed snapshot is lent through a scoped thread-local for
//! exactly the duration of the call ([`with_call`]); wasmtime runs a synchronous call and
//! every host function it makes on the calling thread, so the accessors always find it.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use berth_engine::PodInfo;
use berth_engine::framework::Reason;
use berth_engine::labels::Sym;
use berth_engine::{Cluster, NodeId, NodeInfo};
use lasso::Key;
use rustc_hash::FxHashMap;
use scoped_tls_hkt::scoped_thread_local;
use wasmtime::{Caller, Extern, Linker, Memory, ResourceLimiter, bail, format_err};

use crate::abi::{self, Normalize};
use crate::view;

/// What one guest call may look at.
#[derive(Clone, Copy)]
pub(crate) struct CallCtx<'a> {
    pub cluster: &'a Cluster,
    pub pod: &'a PodInfo,
    /// The nodes of this call; the guest names them by position.
    pub nodes: &'a [NodeId],
    /// Per-cycle data shared by the calls of one prepare.
    pub cycle: &'a CycleShared,
}

/// Computed at most once per pod and plugin, whichever chunk asks first.
#[derive(Default)]
pub(crate) struct CycleShared {
    pub pod_json: OnceLock<Vec<u8>>,
}

scoped_thread_local!(static CALL: for<'a> CallCtx<'a>);

/// Runs `f` with `ctx` visible to the host functions.
pub(crate) fn with_call<R>(ctx: CallCtx<'_>, f: impl FnOnce() -> R) -> R {
    CALL.set(ctx, f)
}

fn call_ctx<R>(f: impl FnOnce(CallCtx<'_>) -> wasmtime::Result<R>) -> wasmtime::Result<R> {
    if !CALL.is_set() {
        bail!("node and pod accessors are only available during berth_filter / berth_score");
    }
    CALL.with(f)
}

/// The memory budget of one instance: every linear memory and every table it has, together,
/// must fit `memory_bytes` (a module may declare several of each, and counting each
/// separately would multiply the cap). Records whether the guest ran into it.
pub(crate) struct Limits {
    pub memory_bytes: usize,
    /// Bytes held now by the instance's memories and tables.
    used: usize,
    pub hit: bool,
}

/// What one table element is charged against the budget: the host keeps a pointer-sized
/// reference plus bookkeeping per element; 16 bytes is an upper bound for funcref and
/// externref tables.
const TABLE_ELEMENT_BYTES: usize = 16;
/// Most memories and tables one instance may declare. Rust and Go guests have one of each.
const MAX_MEMORIES: usize = 4;
const MAX_TABLES: usize = 16;

impl Limits {
    pub fn new(memory_bytes: usize) -> Limits {
        Limits {
            memory_bytes,
            used: 0,
            hit: false,
        }
    }

    /// Charges a growth from `current` to `desired` bytes, or refuses it.
    fn grow(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let used = self.used.saturating_sub(current).saturating_add(desired);
        if used > self.memory_bytes {
            self.hit = true;
            bail!(
                "memory limit of {} MiB exceeded (memories and tables together)",
                self.memory_bytes / (1024 * 1024)
            );
        }
        self.used = used;
        Ok(true)
    }
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // The growth was charged but did not happen; the next growth charges from the real
        // size (`current`), so the budget stays exact.
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn instances(&self) -> usize {
        1
    }
}

/// The data of one instance's store.
pub(crate) struct HostState {
    /// The plugin's policy entry name, for log lines.
    pub plugin: Arc<str>,
    /// The plugin's configuration JSON.
    pub config: Arc<str>,
    pub memory: Option<Memory>,
    pub limits: Limits,
    /// Per node of the current call: 0 passes, else a reason id.
    pub verdicts: Vec<u32>,
    /// Per node of the current call: the raw score.
    pub scores: Vec<i64>,
    /// Reasons registered by this instance; id = index + 1.
    pub reasons: Vec<Reason>,
    reason_ids: FxHashMap<Box<str>, u32>,
    /// The message of the last `set_error`.
    pub error: Option<String>,
    pub normalize: Normalize,
    /// Guest output still allowed in this call.
    log_budget: usize,
    log_truncated: bool,
    /// State of the deterministic `random_get`.
    rng: u64,
    started: Instant,
}

impl HostState {
    pub fn new(plugin: Arc<str>, config: Arc<str>, memory_bytes: usize) -> Self {
        HostState {
            plugin,
            config,
            memory: None,
            limits: Limits::new(memory_bytes),
            verdicts: Vec::new(),
            scores: Vec::new(),
            reasons: Vec::new(),
            reason_ids: FxHashMap::default(),
            error: None,
            normalize: Normalize::None,
            log_budget: abi::MAX_LOG_BYTES_PER_CALL,
            log_truncated: false,
            rng: 0x9E37_79B9_7F4A_7C15,
            started: Instant::now(),
        }
    }

    /// Resets the per-call outputs for a call over `count` nodes.
    pub fn begin_call(&mut self, count: usize) {
        self.verdicts.clear();
        self.verdicts.resize(count, 0);
        self.scores.clear();
        self.scores.resize(count, 0);
        self.error = None;
        self.log_budget = abi::MAX_LOG_BYTES_PER_CALL;
        self.log_truncated = false;
    }

    fn log(&mut self, level: i32, bytes: &[u8]) {
        if self.log_budget == 0 {
            if !self.log_truncated {
                self.log_truncated = true;
                tracing::warn!(plugin = %self.plugin, "guest output over {} bytes in one call; the rest is dropped", abi::MAX_LOG_BYTES_PER_CALL);
            }
            return;
        }
        let kept = &bytes[..bytes.len().min(self.log_budget)];
        self.log_budget -= kept.len();
        let text = String::from_utf8_lossy(kept);
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        let plugin = &*self.plugin;
        match level {
            i32::MIN..=0 => tracing::debug!(target: "berth_wasm::guest", plugin, "{text}"),
            1 => tracing::info!(target: "berth_wasm::guest", plugin, "{text}"),
            2 => tracing::warn!(target: "berth_wasm::guest", plugin, "{text}"),
            _ => tracing::error!(target: "berth_wasm::guest", plugin, "{text}"),
        }
    }

    fn reason_id(&mut self, text: &str) -> wasmtime::Result<i32> {
        let text = truncate(text, abi::MAX_REASON_BYTES);
        if let Some(id) = self.reason_ids.get(text) {
            return Ok(*id as i32);
        }
        if self.reasons.len() >= abi::MAX_REASONS {
            bail!(
                "more than {} distinct reasons; reasons should be a few constant texts",
                abi::MAX_REASONS
            );
        }
        self.reasons.push(Reason::Owned(text.into()));
        let id = self.reasons.len() as u32;
        self.reason_ids.insert(text.into(), id);
        Ok(id as i32)
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: guests get no entropy source, only a fixed sequence.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

type Cx<'a> = Caller<'a, HostState>;

fn memory(caller: &mut Cx<'_>) -> wasmtime::Result<Memory> {
    if let Some(m) = caller.data().memory {
        return Ok(m);
    }
    match caller.get_export(abi::EXPORT_MEMORY) {
        Some(Extern::Memory(m)) => Ok(m),
        _ => bail!("the module exports no memory named `memory`"),
    }
}

fn range(len_total: usize, ptr: i32, len: i32) -> wasmtime::Result<std::ops::Range<usize>> {
    let (p, l) = (ptr as u32 as usize, len as u32 as usize);
    match p.checked_add(l) {
        Some(end) if end <= len_total => Ok(p..end),
        _ => bail!("guest pointer {p:#x}+{l} is outside its memory ({len_total} bytes)"),
    }
}

/// Copies `len` bytes at `ptr` out of guest memory.
fn read_bytes(caller: &mut Cx<'_>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let mem = memory(caller)?;
    let data = mem.data(&*caller);
    Ok(data[range(data.len(), ptr, len)?].to_vec())
}

/// Copies at most `max` bytes of the `len` at `ptr` (the whole range must be valid).
fn read_prefix(caller: &mut Cx<'_>, ptr: i32, len: i32, max: usize) -> wasmtime::Result<Vec<u8>> {
    let mem = memory(caller)?;
    let data = mem.data(&*caller);
    let r = range(data.len(), ptr, len)?;
    let end = r.start + r.len().min(max);
    Ok(data[r.start..end].to_vec())
}

/// Reads a UTF-8 string at `ptr`.
fn read_str(caller: &mut Cx<'_>, ptr: i32, len: i32) -> wasmtime::Result<String> {
    String::from_utf8(read_bytes(caller, ptr, len)?)
        .map_err(|_| format_err!("a string argument is not valid UTF-8"))
}

/// The string-result convention: returns the value's length, writing it only if it fits in
/// `cap` bytes at `out`; [`abi::ABSENT`] when there is no value.
fn write_result(
    caller: &mut Cx<'_>,
    out: i32,
    cap: i32,
    value: Option<&[u8]>,
) -> wasmtime::Result<i32> {
    let Some(value) = value else {
        return Ok(abi::ABSENT);
    };
    let len = i32::try_from(value.len()).map_err(|_| format_err!("value too large"))?;
    if len <= cap {
        let mem = memory(caller)?;
        let data = mem.data_mut(&mut *caller);
        let r = range(data.len(), out, len)?;
        data[r].copy_from_slice(value);
    }
    Ok(len)
}

/// Writes fixed-size little-endian items, one per node of the call, at `out`.
fn write_column<const N: usize>(
    caller: &mut Cx<'_>,
    out: i32,
    items: impl ExactSizeIterator<Item = [u8; N]>,
) -> wasmtime::Result<()> {
    let mem = memory(caller)?;
    let data = mem.data_mut(&mut *caller);
    let len = i32::try_from(items.len() * N).map_err(|_| format_err!("column too large"))?;
    let r = range(data.len(), out, len)?;
    for (slot, item) in data[r].chunks_exact_mut(N).zip(items) {
        slot.copy_from_slice(&item);
    }
    Ok(())
}

/// Encodes a string column: per node an (offset, length) pair of u32, then the bytes.
fn string_column<'s>(values: impl ExactSizeIterator<Item = Option<&'s str>> + Clone) -> Vec<u8> {
    let header = values.len() * 8;
    let body: usize = values.clone().map(|v| v.map_or(0, str::len)).sum();
    let mut out = Vec::with_capacity(header + body);
    let mut offset = header as u32;
    for v in values.clone() {
        let (o, l) = match v {
            Some(s) => (offset, s.len() as u32),
            None => (0, abi::COLUMN_ABSENT),
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

fn node<'a>(ctx: &CallCtx<'a>, index: i32) -> wasmtime::Result<&'a NodeInfo> {
    match ctx.nodes.get(index as u32 as usize) {
        Some(id) => Ok(ctx.cluster.node(*id)),
        None => bail!(
            "node index {index} is outside this call's {} nodes",
            ctx.nodes.len()
        ),
    }
}

/// A guest symbol: the interner key plus one, so that 0 means "none".
fn sym_to_guest(sym: Option<Sym>) -> i32 {
    sym.map_or(0, |s| s.into_usize() as i32 + 1)
}

fn sym_from_guest(id: i32) -> Option<Sym> {
    if id <= 0 {
        return None;
    }
    Sym::try_from_usize(id as usize - 1)
}

fn resource(info: &NodeInfo, name: &str, requested: bool) -> i64 {
    match (name, requested) {
        ("pods", false) => info.allowed_pods,
        ("pods", true) => info.pods.len() as i64,
        (_, false) => info.allocatable.get(name),
        (_, true) => info.requested.get(name),
    }
}

fn conditions(info: &NodeInfo) -> i32 {
    let c = info.conditions();
    let bits = [
        (c.ready == Some(true), abi::COND_READY),
        (c.memory_pressure, abi::COND_MEMORY_PRESSURE),
        (c.disk_pressure, abi::COND_DISK_PRESSURE),
        (c.pid_pressure, abi::COND_PID_PRESSURE),
        (c.network_unavailable, abi::COND_NETWORK_UNAVAILABLE),
        (info.unschedulable, abi::COND_UNSCHEDULABLE),
    ];
    bits.iter().filter(|(on, _)| *on).map(|(_, b)| b).sum()
}

/// Defines the `berth` host functions and the WASI subset on `linker`.
pub(crate) fn define(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    define_lifecycle(linker)?;
    define_pod(linker)?;
    define_node(linker)?;
    define_columns(linker)?;
    define_results(linker)?;
    define_wasi(linker)
}

fn define_lifecycle(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let m = abi::HOST_MODULE;
    l.func_wrap(m, "config", |mut c: Cx<'_>, out: i32, cap: i32| {
        let config = c.data().config.clone();
        write_result(&mut c, out, cap, Some(config.as_bytes()))
    })?;
    l.func_wrap(m, "log", |mut c: Cx<'_>, level: i32, ptr: i32, len: i32| {
        // Only what the log budget still allows is copied out of the guest.
        let budget = c.data().log_budget;
        let bytes = read_prefix(&mut c, ptr, len, budget)?;
        c.data_mut().log(level, &bytes);
        Ok(())
    })?;
    l.func_wrap(m, "set_error", |mut c: Cx<'_>, ptr: i32, len: i32| {
        let bytes = read_bytes(&mut c, ptr, len)?;
        let text = String::from_utf8_lossy(&bytes);
        c.data_mut().error = Some(truncate(&text, abi::MAX_ERROR_BYTES).to_string());
        Ok(())
    })?;
    l.func_wrap(m, "set_normalize", |mut c: Cx<'_>, mode: i32| {
        match Normalize::from_code(mode) {
            Some(n) => c.data_mut().normalize = n,
            None => bail!("set_normalize({mode}): expected 0 (none), 1 (reduce) or 2 (reverse)"),
        }
        Ok(())
    })?;
    l.func_wrap(m, "intern", |mut c: Cx<'_>, ptr: i32, len: i32| {
        let text = read_str(&mut c, ptr, len)?;
        call_ctx(|ctx| Ok(sym_to_guest(ctx.cluster.interner().get(&text))))
    })?;
    l.func_wrap(
        m,
        "symbol",
        |mut c: Cx<'_>, sym: i32, out: i32, cap: i32| {
            let text = call_ctx(|ctx| {
                Ok(sym_from_guest(sym)
                    .and_then(|s| ctx.cluster.interner().try_resolve(s))
                    .map(str::to_owned))
            })?;
            write_result(&mut c, out, cap, text.as_deref().map(str::as_bytes))
        },
    )?;
    Ok(())
}

fn define_pod(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let m = abi::HOST_MODULE;
    l.func_wrap(m, "pod_json", |mut c: Cx<'_>, out: i32, cap: i32| {
        let json = call_ctx(|ctx| {
            Ok(ctx
                .cycle
                .pod_json
                .get_or_init(|| view::pod_json(ctx.pod))
                .clone())
        })?;
        write_result(&mut c, out, cap, Some(&json))
    })?;
    l.func_wrap(
        m,
        "pod_label",
        |mut c: Cx<'_>, kp: i32, kl: i32, out: i32, cap: i32| {
            let key = read_str(&mut c, kp, kl)?;
            let value = call_ctx(|ctx| Ok(ctx.pod.pod.meta.labels.get(&key).cloned()))?;
            write_result(&mut c, out, cap, value.as_deref().map(str::as_bytes))
        },
    )?;
    l.func_wrap(
        m,
        "pod_annotation",
        |mut c: Cx<'_>, kp: i32, kl: i32, out: i32, cap: i32| {
            let key = read_str(&mut c, kp, kl)?;
            let value = call_ctx(|ctx| Ok(ctx.pod.pod.meta.annotations.get(&key).cloned()))?;
            write_result(&mut c, out, cap, value.as_deref().map(str::as_bytes))
        },
    )?;
    l.func_wrap(m, "pod_request", |mut c: Cx<'_>, np: i32, nl: i32| {
        let name = read_str(&mut c, np, nl)?;
        call_ctx(|ctx| Ok(ctx.pod.request.get(&name)))
    })?;
    Ok(())
}

fn define_node(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let m = abi::HOST_MODULE;
    l.func_wrap(
        m,
        "node_name",
        |mut c: Cx<'_>, i: i32, out: i32, cap: i32| {
            let name = call_ctx(|ctx| Ok(node(&ctx, i)?.name().to_owned()))?;
            write_result(&mut c, out, cap, Some(name.as_bytes()))
        },
    )?;
    l.func_wrap(m, "node_label", |_: Cx<'_>, i: i32, key: i32| {
        call_ctx(|ctx| {
            let info = node(&ctx, i)?;
            Ok(sym_to_guest(
                sym_from_guest(key).and_then(|k| info.labels.get(k)),
            ))
        })
    })?;
    l.func_wrap(
        m,
        "node_annotation",
        |mut c: Cx<'_>, i: i32, kp: i32, kl: i32, out: i32, cap: i32| {
            let key = read_str(&mut c, kp, kl)?;
            let value =
                call_ctx(|ctx| Ok(node(&ctx, i)?.node.meta.annotations.get(&key).cloned()))?;
            write_result(&mut c, out, cap, value.as_deref().map(str::as_bytes))
        },
    )?;
    l.func_wrap(
        m,
        "node_taints",
        |mut c: Cx<'_>, i: i32, out: i32, cap: i32| {
            let json = call_ctx(|ctx| Ok(view::taints_json(node(&ctx, i)?.taints())))?;
            write_result(&mut c, out, cap, Some(&json))
        },
    )?;
    l.func_wrap(
        m,
        "node_allocatable",
        |mut c: Cx<'_>, i: i32, np: i32, nl: i32| {
            let name = read_str(&mut c, np, nl)?;
            call_ctx(|ctx| Ok(resource(node(&ctx, i)?, &name, false)))
        },
    )?;
    l.func_wrap(
        m,
        "node_requested",
        |mut c: Cx<'_>, i: i32, np: i32, nl: i32| {
            let name = read_str(&mut c, np, nl)?;
            call_ctx(|ctx| Ok(resource(node(&ctx, i)?, &name, true)))
        },
    )?;
    l.func_wrap(m, "node_pod_count", |_: Cx<'_>, i: i32| {
        call_ctx(|ctx| Ok(node(&ctx, i)?.pods.len() as i32))
    })?;
    l.func_wrap(m, "node_conditions", |_: Cx<'_>, i: i32| {
        call_ctx(|ctx| Ok(conditions(node(&ctx, i)?)))
    })?;
    l.func_wrap(
        m,
        "node_image_size",
        |mut c: Cx<'_>, i: i32, np: i32, nl: i32| {
            let name = read_str(&mut c, np, nl)?;
            call_ctx(|ctx| {
                Ok(node(&ctx, i)?
                    .images
                    .get(name.as_str())
                    .copied()
                    .unwrap_or(-1))
            })
        },
    )?;
    l.func_wrap(
        m,
        "node_pods",
        |mut c: Cx<'_>, i: i32, out: i32, cap: i32| {
            let json = call_ctx(|ctx| Ok(view::node_pods_json(ctx.cluster, node(&ctx, i)?)))?;
            write_result(&mut c, out, cap, Some(&json))
        },
    )?;
    l.func_wrap(
        m,
        "node_json",
        |mut c: Cx<'_>, i: i32, out: i32, cap: i32| {
            let json = call_ctx(|ctx| Ok(view::node_json(node(&ctx, i)?)))?;
            write_result(&mut c, out, cap, Some(&json))
        },
    )?;
    Ok(())
}

fn define_columns(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let m = abi::HOST_MODULE;
    l.func_wrap(m, "nodes_label", |mut c: Cx<'_>, key: i32, out: i32| {
        let Some(key) = sym_from_guest(key) else {
            return call_ctx(|ctx| write_column(&mut c, out, ctx.nodes.iter().map(|_| [0u8; 4])));
        };
        call_ctx(|ctx| match ctx.cluster.label_column(key) {
            Some(column) => write_column(
                &mut c,
                out,
                ctx.nodes
                    .iter()
                    .map(|id| (sym_to_guest(column[id.0 as usize]) as u32).to_le_bytes()),
            ),
            None => write_column(&mut c, out, ctx.nodes.iter().map(|_| [0u8; 4])),
        })
    })?;
    l.func_wrap(
        m,
        "nodes_annotation",
        |mut c: Cx<'_>, kp: i32, kl: i32, out: i32, cap: i32| {
            let key = read_str(&mut c, kp, kl)?;
            let column = call_ctx(|ctx| {
                Ok(string_column(ctx.nodes.iter().map(|id| {
                    ctx.cluster
                        .node(*id)
                        .node
                        .meta
                        .annotations
                        .get(&key)
                        .map(String::as_str)
                })))
            })?;
            write_result(&mut c, out, cap, Some(&column))
        },
    )?;
    l.func_wrap(m, "nodes_name", |mut c: Cx<'_>, out: i32, cap: i32| {
        let column = call_ctx(|ctx| {
            Ok(string_column(
                ctx.nodes
                    .iter()
                    .map(|id| Some(ctx.cluster.node(*id).name())),
            ))
        })?;
        write_result(&mut c, out, cap, Some(&column))
    })?;
    l.func_wrap(
        m,
        "nodes_resource",
        |mut c: Cx<'_>, which: i32, np: i32, nl: i32, out: i32| {
            let name = read_str(&mut c, np, nl)?;
            let requested = match which {
                abi::RESOURCE_ALLOCATABLE => false,
                abi::RESOURCE_REQUESTED => true,
                _ => bail!("nodes_resource({which}): expected 0 (allocatable) or 1 (requested)"),
            };
            call_ctx(|ctx| {
                write_column(
                    &mut c,
                    out,
                    ctx.nodes
                        .iter()
                        .map(|id| resource(ctx.cluster.node(*id), &name, requested).to_le_bytes()),
                )
            })
        },
    )?;
    Ok(())
}

fn define_results(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let m = abi::HOST_MODULE;
    l.func_wrap(m, "reason", |mut c: Cx<'_>, ptr: i32, len: i32| {
        let bytes = read_bytes(&mut c, ptr, len)?;
        let text = String::from_utf8_lossy(&bytes);
        c.data_mut().reason_id(&text)
    })?;
    l.func_wrap(m, "reject", |mut c: Cx<'_>, i: i32, reason: i32| {
        let state = c.data_mut();
        if reason <= 0 || reason as usize > state.reasons.len() {
            bail!("reject({i}, {reason}): unknown reason id; register it with `reason` first");
        }
        match state.verdicts.get_mut(i as u32 as usize) {
            Some(v) => *v = reason as u32,
            None => bail!("reject({i}, ..): node index outside this call"),
        }
        Ok(())
    })?;
    l.func_wrap(m, "set_verdicts", |mut c: Cx<'_>, ptr: i32| {
        let count = c.data().verdicts.len();
        let bytes = read_bytes(&mut c, ptr, (count * 4) as i32)?;
        let state = c.data_mut();
        let known = state.reasons.len() as u32;
        for (v, b) in state.verdicts.iter_mut().zip(bytes.chunks_exact(4)) {
            let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if id > known {
                bail!("set_verdicts: unknown reason id {id}; register it with `reason` first");
            }
            *v = id;
        }
        Ok(())
    })?;
    l.func_wrap(m, "set_score", |mut c: Cx<'_>, i: i32, score: i64| {
        match c.data_mut().scores.get_mut(i as u32 as usize) {
            Some(s) => *s = score,
            None => bail!("set_score({i}, ..): node index outside this call"),
        }
        Ok(())
    })?;
    l.func_wrap(m, "set_scores", |mut c: Cx<'_>, ptr: i32| {
        let count = c.data().scores.len();
        let bytes = read_bytes(&mut c, ptr, (count * 8) as i32)?;
        for (s, b) in c.data_mut().scores.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(b);
            *s = i64::from_le_bytes(le);
        }
        Ok(())
    })?;
    Ok(())
}

/// WASI errno values the stubs return.
const ERRNO_SUCCESS: i32 = 0;
const ERRNO_BADF: i32 = 8;
const ERRNO_INVAL: i32 = 28;
const ERRNO_NOSYS: i32 = 52;
const ERRNO_SPIPE: i32 = 70;
const WASI: &str = "wasi_snapshot_preview1";

fn write_u32s(c: &mut Cx<'_>, items: &[(i32, u32)]) -> wasmtime::Result<()> {
    for (ptr, value) in items {
        let mem = memory(c)?;
        let data = mem.data_mut(&mut *c);
        let r = range(data.len(), *ptr, 4)?;
        data[r].copy_from_slice(&value.to_le_bytes());
    }
    Ok(())
}

/// The WASI functions Rust and Go guests import, as a sandbox: no arguments, no environment,
/// no files (no preopened directories, so no path can be opened), stdout and stderr to the
/// log, a clock, and a fixed pseudo-random sequence. Every other WASI import traps when called.
fn define_wasi(l: &mut Linker<HostState>) -> wasmtime::Result<()> {
    for sizes in ["args_sizes_get", "environ_sizes_get"] {
        l.func_wrap(WASI, sizes, |mut c: Cx<'_>, count: i32, size: i32| {
            write_u32s(&mut c, &[(count, 0), (size, 0)])?;
            Ok(ERRNO_SUCCESS)
        })?;
    }
    for values in ["args_get", "environ_get"] {
        l.func_wrap(WASI, values, |_: Cx<'_>, _: i32, _: i32| Ok(ERRNO_SUCCESS))?;
    }
    l.func_wrap(
        WASI,
        "fd_write",
        |mut c: Cx<'_>, fd: i32, iovs: i32, iovs_len: i32, written: i32| {
            if fd != 1 && fd != 2 {
                return Ok(ERRNO_BADF);
            }
            // Every iovec is checked, but only what the log budget still allows is copied:
            // overlapping iovecs must not multiply a small guest into a huge host buffer.
            let budget = c.data().log_budget;
            let mem = memory(&mut c)?;
            let data = mem.data(&c);
            let vecs = range(data.len(), iovs, iovs_len.saturating_mul(8))?;
            let mut total: u32 = 0;
            let mut text = Vec::new();
            for iov in data[vecs].chunks_exact(8) {
                let ptr = i32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]);
                let len = i32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]);
                let r = range(data.len(), ptr, len)?;
                let room = budget.saturating_sub(text.len());
                text.extend_from_slice(&data[r.start..r.start + r.len().min(room)]);
                total = total.saturating_add(len as u32);
            }
            let level = if fd == 2 { 2 } else { 1 };
            c.data_mut().log(level, &text);
            write_u32s(&mut c, &[(written, total)])?;
            Ok(ERRNO_SUCCESS)
        },
    )?;
    l.func_wrap(
        WASI,
        "fd_read",
        |mut c: Cx<'_>, fd: i32, _: i32, _: i32, read: i32| {
            if fd != 0 {
                return Ok(ERRNO_BADF);
            }
            write_u32s(&mut c, &[(read, 0)])?;
            Ok(ERRNO_SUCCESS)
        },
    )?;
    l.func_wrap(WASI, "fd_close", |_: Cx<'_>, fd: i32| {
        Ok(if (0..=2).contains(&fd) {
            ERRNO_SUCCESS
        } else {
            ERRNO_BADF
        })
    })?;
    l.func_wrap(
        WASI,
        "fd_seek",
        |_: Cx<'_>, fd: i32, _: i64, _: i32, _: i32| {
            Ok(if (0..=2).contains(&fd) {
                ERRNO_SPIPE
            } else {
                ERRNO_BADF
            })
        },
    )?;
    l.func_wrap(WASI, "fd_fdstat_get", |mut c: Cx<'_>, fd: i32, out: i32| {
        if !(0..=2).contains(&fd) {
            return Ok(ERRNO_BADF);
        }
        // fdstat: filetype u8 (2 = character device), flags u16, rights base and inheriting u64.
        let mut stat = [0u8; 24];
        stat[0] = 2;
        let mem = memory(&mut c)?;
        let data = mem.data_mut(&mut c);
        let r = range(data.len(), out, 24)?;
        data[r].copy_from_slice(&stat);
        Ok(ERRNO_SUCCESS)
    })?;
    l.func_wrap(WASI, "fd_fdstat_set_flags", |_: Cx<'_>, fd: i32, _: i32| {
        Ok(if (0..=2).contains(&fd) {
            ERRNO_SUCCESS
        } else {
            ERRNO_BADF
        })
    })?;
    l.func_wrap(WASI, "fd_prestat_get", |_: Cx<'_>, _: i32, _: i32| {
        Ok(ERRNO_BADF)
    })?;
    l.func_wrap(
        WASI,
        "fd_prestat_dir_name",
        |_: Cx<'_>, _: i32, _: i32, _: i32| Ok(ERRNO_BADF),
    )?;
    l.func_wrap(
        WASI,
        "clock_time_get",
        |mut c: Cx<'_>, id: i32, _precision: i64, out: i32| {
            let nanos: u64 = match id {
                0 => std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
                1..=3 => c.data().started.elapsed().as_nanos() as u64,
                _ => return Ok(ERRNO_INVAL),
            };
            let mem = memory(&mut c)?;
            let data = mem.data_mut(&mut c);
            let r = range(data.len(), out, 8)?;
            data[r].copy_from_slice(&nanos.to_le_bytes());
            Ok(ERRNO_SUCCESS)
        },
    )?;
    l.func_wrap(
        WASI,
        "clock_res_get",
        |mut c: Cx<'_>, _id: i32, out: i32| {
            let mem = memory(&mut c)?;
            let data = mem.data_mut(&mut c);
            let r = range(data.len(), out, 8)?;
            data[r].copy_from_slice(&1000u64.to_le_bytes());
            Ok(ERRNO_SUCCESS)
        },
    )?;
    l.func_wrap(WASI, "random_get", |mut c: Cx<'_>, buf: i32, len: i32| {
        // The range is checked before any work and filled in place: the length is the
        // guest's choice, so the host allocates nothing for it.
        let mem = memory(&mut c)?;
        let (data, state) = mem.data_and_store_mut(&mut c);
        let r = range(data.len(), buf, len)?;
        for chunk in data[r].chunks_mut(8) {
            let bytes = state.next_random().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(ERRNO_SUCCESS)
    })?;
    l.func_wrap(WASI, "sched_yield", |_: Cx<'_>| Ok(ERRNO_SUCCESS))?;
    l.func_wrap(
        WASI,
        "poll_oneoff",
        |_: Cx<'_>, _: i32, _: i32, _: i32, _: i32| Ok(ERRNO_NOSYS),
    )?;
    l.func_wrap(
        WASI,
        "proc_exit",
        |_: Cx<'_>, code: i32| -> wasmtime::Result<()> {
            bail!("the guest called proc_exit({code})")
        },
    )?;
    Ok(())
}
