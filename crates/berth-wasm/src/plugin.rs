//! One plugin (a policy entry naming a module): its current code, a pool of ready instances,
//! and the batched evaluation of a pod over every node.
//!
//! Per pod, the node list is split into a few chunks evaluated in parallel, each by one guest
//! call on its own instance. Results land in a table indexed by node id, so the engine's
//! per-node check or score is a lookup. The code is read once per pod from an `ArcSwap`, so a
//! reload takes effect at the next pod and never in the middle of one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use berth_engine::NodeId;
use berth_engine::framework::{CycleContext, Reason};
use berth_policy::{FailurePolicy, WasmPlugin};
use rayon::prelude::*;
use wasmtime::{ExternType, InstancePre, Module, Store, Trap, TypedFunc, ValType};

use crate::abi::{self, Normalize};
use crate::error::LoadError;
use crate::host::{CallCtx, CycleShared, HostState, with_call};
use crate::runtime::{ContentHash, EPOCH_TICK, Runtime, content_hash, error_hash};

/// Below this many nodes one guest call covers them all.
const PARALLEL_THRESHOLD: usize = 512;
/// Fewest nodes per chunk when splitting.
const MIN_NODES_PER_CHUNK: usize = 256;
/// Bits of a verdict holding the reason id; the chunk index sits above them.
const REASON_BITS: u32 = 20;
/// Largest module file accepted. Go guests are a few MiB, Rust guests a few hundred KiB.
pub const MAX_MODULE_BYTES: u64 = 64 * 1024 * 1024;
/// The first bytes of every binary WebAssembly module.
const WASM_MAGIC: &[u8] = b"\0asm";

/// Whether a plugin filters or scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A predicate: `berth_filter`.
    Filter,
    /// A priority: `berth_score`.
    Score,
}

impl Kind {
    fn export(self) -> &'static str {
        match self {
            Kind::Filter => abi::EXPORT_FILTER,
            Kind::Score => abi::EXPORT_SCORE,
        }
    }

    fn entry(self) -> &'static str {
        match self {
            Kind::Filter => "predicate",
            Kind::Score => "priority",
        }
    }
}

/// Counters of one plugin, for logs, metrics and `berth check`.
#[derive(Debug, Default)]
pub struct PluginStats {
    /// Guest calls made (one per chunk per pod).
    pub calls: AtomicU64,
    /// Calls that trapped, timed out, ran out of memory or returned an error.
    pub failures: AtomicU64,
    /// Module versions swapped in after the first.
    pub reloads: AtomicU64,
    /// Reload attempts that failed (the last good version stayed).
    pub reload_failures: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl PluginStats {
    /// The last call failure or reload failure.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn record_error(&self, message: &str) -> bool {
        let mut last = self.last_error.lock().unwrap_or_else(|e| e.into_inner());
        let new = last.as_deref() != Some(message);
        if new {
            *last = Some(message.to_string());
        }
        new
    }
}

/// An instance ready to run.
struct Instance {
    store: Store<HostState>,
    run: TypedFunc<i32, i32>,
}

/// One version of a plugin's module, with its idle instances.
pub(crate) struct Code {
    pre: InstancePre<HostState>,
    hash: ContentHash,
    declared: Declared,
    /// 1 for the first version loaded, +1 per swap.
    version: u64,
    pool: Mutex<Vec<Instance>>,
}

/// What a guest declared while loading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Declared {
    /// How its raw scores are normalised (`set_normalize` in `berth_init`).
    pub normalize: Normalize,
    /// Whether its answers follow from the node and the pod alone (`berth_node_local`).
    pub node_local: bool,
}

/// One pod's evaluation by a plugin.
pub(crate) struct Evaluation {
    pub table: Table,
    pub declared: Declared,
    /// Whether a guest call failed (its nodes got the failure policy's answer, which holds
    /// for this pod only).
    pub failed: bool,
}

/// What a reload found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reloaded {
    /// The file has the contents already running.
    Unchanged,
    /// A new version is live.
    Swapped {
        /// Its version number.
        version: u64,
    },
}

/// A plugin as configured by one policy entry.
pub struct Plugin {
    name: Arc<str>,
    spec: WasmPlugin,
    kind: Kind,
    path: PathBuf,
    runtime: Arc<Runtime>,
    /// Instances per version: at most this many guest calls run at once.
    instances: usize,
    code: ArcSwap<Code>,
    /// A fingerprint of the last file contents (or read error) that failed to load, so an
    /// unchanged broken file is neither rebuilt nor counted again on every rescan.
    rejected: Mutex<Option<ContentHash>>,
    stats: PluginStats,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("path", &self.path)
            .field("version", &self.version())
            .finish()
    }
}

/// The outcome of one chunk's call.
struct ChunkOut {
    verdicts: Vec<u32>,
    reasons: Vec<Reason>,
    scores: Vec<i64>,
}

/// Per node id, what the plugin said about the pod.
pub(crate) enum Table {
    /// Filter verdicts per node slot.
    Verdicts {
        /// 0 passes, else chunk << REASON_BITS | reason id.
        table: Vec<u32>,
        /// Whether each slot passes: the engine's fast feasibility mask.
        mask: Vec<bool>,
        /// Per chunk, its reasons by id - 1.
        reasons: Vec<Vec<Reason>>,
        any_rejected: bool,
    },
    /// A raw score per node slot.
    Scores(Vec<i64>),
}

impl Table {
    /// The reason a node was rejected, None if it passed.
    #[inline]
    pub fn reason(&self, id: NodeId) -> Option<&Reason> {
        let Table::Verdicts { table, reasons, .. } = self else {
            return None;
        };
        let v = *table.get(id.0 as usize)?;
        if v == 0 {
            return None;
        }
        let chunk = (v >> REASON_BITS) as usize;
        let reason = (v & ((1 << REASON_BITS) - 1)) as usize;
        reasons.get(chunk)?.get(reason - 1)
    }

    /// A node's raw score.
    #[inline]
    pub fn score(&self, id: NodeId) -> i64 {
        match self {
            Table::Scores(s) => s.get(id.0 as usize).copied().unwrap_or(0),
            Table::Verdicts { .. } => 0,
        }
    }
}

impl Plugin {
    /// Loads `spec.module` from `dir` for the entry `name`: compiles it, checks the ABI,
    /// and starts `instances` instances (running `berth_init` with the entry's config).
    pub fn load(
        runtime: Arc<Runtime>,
        dir: &std::path::Path,
        name: &str,
        spec: &WasmPlugin,
        kind: Kind,
        instances: usize,
    ) -> Result<Plugin, LoadError> {
        let instances = instances.max(1);
        let path = dir.join(&spec.module);
        let bytes = read_module(&path)?;
        let plugin_name: Arc<str> = name.into();
        let code = build_code(
            &runtime,
            &plugin_name,
            spec,
            kind,
            &path,
            &bytes,
            (1, instances),
        )?;
        Ok(Plugin {
            name: plugin_name,
            spec: spec.clone(),
            kind,
            path,
            runtime,
            instances,
            code: ArcSwap::from_pointee(code),
            rejected: Mutex::new(None),
            stats: PluginStats::default(),
        })
    }

    /// The policy entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The module file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The entry's plugin settings.
    pub fn spec(&self) -> &WasmPlugin {
        &self.spec
    }

    /// Filter or score.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The counters.
    pub fn stats(&self) -> &PluginStats {
        &self.stats
    }

    /// Instances per version (the most guest calls at once).
    pub fn instances(&self) -> usize {
        self.instances
    }

    /// The most memory this plugin's instances may hold together.
    pub fn reserved_bytes(&self) -> u64 {
        (self.instances as u64)
            .saturating_mul(self.spec.memory_limit_mib.saturating_mul(1024 * 1024))
    }

    /// The version now live: 1 at load, +1 per swap.
    pub fn version(&self) -> u64 {
        self.code.load().version
    }

    /// Re-reads the module file and swaps in its contents if they changed and load cleanly.
    /// On error the running version stays and the error is recorded, once per distinct
    /// file version: the same broken contents found again are `Unchanged`.
    pub fn reload(&self) -> Result<Reloaded, LoadError> {
        let read = read_module(&self.path);
        let fingerprint = match &read {
            Ok(bytes) => content_hash(bytes),
            // A read error's text stands for the "version" of a missing or unreadable file.
            Err(e) => error_hash(&e.to_string()),
        };
        let mut rejected = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        if *rejected == Some(fingerprint) {
            return Ok(Reloaded::Unchanged);
        }
        let result = read.and_then(|bytes| self.try_reload(&bytes));
        match &result {
            Err(e) => {
                *rejected = Some(fingerprint);
                self.stats.reload_failures.fetch_add(1, Ordering::Relaxed);
                self.stats.record_error(&e.to_string());
                tracing::warn!(plugin = %self.name, "reload failed, keeping version {}: {e}", self.version());
            }
            Ok(_) => *rejected = None,
        }
        result
    }

    fn try_reload(&self, bytes: &[u8]) -> Result<Reloaded, LoadError> {
        let current = self.code.load();
        if content_hash(bytes) == current.hash {
            return Ok(Reloaded::Unchanged);
        }
        let version = current.version + 1;
        let code = build_code(
            &self.runtime,
            &self.name,
            &self.spec,
            self.kind,
            &self.path,
            bytes,
            (version, self.instances),
        )?;
        self.code.store(Arc::new(code));
        self.stats.reloads.fetch_add(1, Ordering::Relaxed);
        tracing::info!(plugin = %self.name, path = %self.path.display(), "module version {version} is live");
        Ok(Reloaded::Swapped { version })
    }

    /// Runs the guest over every node for this pod; the table answers per-node questions.
    pub(crate) fn evaluate(&self, ctx: CycleContext<'_>) -> Evaluation {
        let code = self.code.load_full();
        let nodes = ctx.cluster.node_order();
        let chunks = chunk_count(nodes.len()).min(self.instances);
        let size = nodes.len().div_ceil(chunks).max(1);
        let cycle = CycleShared::default();
        let run = |c: usize| {
            let part = &nodes[(c * size).min(nodes.len())..((c + 1) * size).min(nodes.len())];
            let call = CallCtx {
                cluster: ctx.cluster,
                pod: ctx.pod,
                nodes: part,
                cycle: &cycle,
            };
            (part, self.call(&code, call))
        };
        let outs: Vec<(&[NodeId], Result<ChunkOut, String>)> = if chunks == 1 {
            vec![run(0)]
        } else {
            (0..chunks).into_par_iter().map(run).collect()
        };
        let failed = outs.iter().any(|(_, out)| out.is_err());
        let slots = ctx.cluster.node_slots();
        let table = match self.kind {
            Kind::Filter => {
                let mut table = vec![0u32; slots];
                let mut mask = vec![true; slots];
                let mut reasons = Vec::with_capacity(chunks);
                let mut any_rejected = false;
                for (c, (part, out)) in outs.into_iter().enumerate() {
                    let (verdicts, chunk_reasons) = match out {
                        Ok(o) => (o.verdicts, o.reasons),
                        Err(cause) => match self.spec.failure_policy {
                            FailurePolicy::Fail => (
                                vec![1; part.len()],
                                vec![Reason::Owned(
                                    format!("plugin {} failed: {cause}", self.name).into(),
                                )],
                            ),
                            FailurePolicy::Ignore => (Vec::new(), Vec::new()),
                        },
                    };
                    let high = (c as u32) << REASON_BITS;
                    for (id, v) in part.iter().zip(&verdicts) {
                        if *v != 0 {
                            any_rejected = true;
                            table[id.0 as usize] = high | v;
                            mask[id.0 as usize] = false;
                        }
                    }
                    reasons.push(chunk_reasons);
                }
                Table::Verdicts {
                    table,
                    mask,
                    reasons,
                    any_rejected,
                }
            }
            Kind::Score => {
                let mut table = vec![0i64; slots];
                for (part, out) in outs {
                    if let Ok(o) = out {
                        for (id, s) in part.iter().zip(&o.scores) {
                            table[id.0 as usize] = *s;
                        }
                    }
                }
                Table::Scores(table)
            }
        };
        Evaluation {
            table,
            declared: code.declared,
            failed,
        }
    }

    /// One guest call over `call.nodes` on an idle instance (or a fresh one). A trapped
    /// instance is dropped; the error is the failure's cause.
    fn call(&self, code: &Code, call: CallCtx<'_>) -> Result<ChunkOut, String> {
        self.stats.calls.fetch_add(1, Ordering::Relaxed);
        let result = self.try_call(code, call);
        if let Err(cause) = &result {
            let n = self.stats.failures.fetch_add(1, Ordering::Relaxed) + 1;
            let new = self.stats.record_error(cause);
            // A plugin failing on every pod would flood the log: report changes, then rarely.
            if new || n.is_power_of_two() {
                tracing::warn!(
                    plugin = %self.name,
                    failures = n,
                    policy = self.spec.failure_policy.as_str(),
                    "plugin call failed: {cause}"
                );
            }
        }
        result
    }

    fn try_call(&self, code: &Code, call: CallCtx<'_>) -> Result<ChunkOut, String> {
        let idle = code.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut inst = match idle {
            Some(i) => i,
            None => instantiate(&self.runtime, &self.name, &self.spec, self.kind, &code.pre)
                .map(|(i, _)| i)?,
        };
        let count = call.nodes.len();
        let state = inst.store.data_mut();
        state.begin_call(count);
        state.limits.hit = false;
        let _running = self.runtime.in_flight();
        inst.store.set_epoch_deadline(deadline_ticks(&self.spec));
        let returned = with_call(call, || inst.run.call(&mut inst.store, count as i32));
        match returned {
            Ok(0) => {
                let state = inst.store.data_mut();
                let out = ChunkOut {
                    verdicts: std::mem::take(&mut state.verdicts),
                    reasons: state.reasons.clone(),
                    scores: std::mem::take(&mut state.scores),
                };
                code.pool
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(inst);
                Ok(out)
            }
            Ok(rc) => {
                let message = inst.store.data_mut().error.take();
                // The guest reported an error itself: its state is intact, keep the instance.
                code.pool
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(inst);
                Err(match message {
                    Some(m) => format!("{} returned {rc}: {m}", self.kind.export()),
                    None => format!("{} returned {rc}", self.kind.export()),
                })
            }
            Err(e) => Err(cause(&e, &inst.store, &self.spec)),
        }
    }
}

/// How many chunks (guest calls, in parallel) a pod's nodes are split into.
fn chunk_count(nodes: usize) -> usize {
    if nodes < PARALLEL_THRESHOLD {
        return 1;
    }
    rayon::current_num_threads()
        .min(nodes / MIN_NODES_PER_CHUNK)
        .max(1)
}

fn deadline_ticks(spec: &WasmPlugin) -> u64 {
    let tick = EPOCH_TICK.as_millis().max(1) as u64;
    spec.timeout_millis.div_ceil(tick) + 1
}

/// A short, stable description of why a call failed, for reasons and logs.
fn cause(e: &wasmtime::Error, store: &Store<HostState>, spec: &WasmPlugin) -> String {
    if store.data().limits.hit {
        return format!("memory limit of {} MiB exceeded", spec.memory_limit_mib);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!("timed out after {} ms", spec.timeout_millis),
        Some(Trap::StackOverflow) => "wasm stack overflow".to_string(),
        Some(trap) => trap.to_string(),
        // Host function errors carry a backtrace context; the root cause says what happened.
        None => e.root_cause().to_string(),
    }
}

/// Reads a module file: a regular file (symlinks followed) of at most [`MAX_MODULE_BYTES`]
/// holding a binary module. WAT text is refused without being parsed, so that a module path
/// pointing at some other file never gets that file's content quoted in an error.
fn read_module(path: &std::path::Path) -> Result<Vec<u8>, LoadError> {
    let bytes =
        berth_policy::file::read_regular_file(path, MAX_MODULE_BYTES).map_err(|source| {
            LoadError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    if !bytes.starts_with(WASM_MAGIC) {
        return Err(LoadError::Compile {
            path: path.to_path_buf(),
            message: "the file does not start with the binary WebAssembly magic bytes \\0asm; \
                      only binary modules are accepted (compile WAT text with `wasm-tools parse` \
                      or `wat2wasm` first)"
                .to_string(),
        });
    }
    Ok(bytes)
}

/// Compiles, validates and starts one version of a module.
fn build_code(
    runtime: &Arc<Runtime>,
    name: &Arc<str>,
    spec: &WasmPlugin,
    kind: Kind,
    path: &std::path::Path,
    bytes: &[u8],
    (version, instances): (u64, usize),
) -> Result<Code, LoadError> {
    let hash = content_hash(bytes);
    let module = runtime
        .compile(bytes, hash)
        .map_err(|message| LoadError::Compile {
            path: path.to_path_buf(),
            message,
        })?;
    check_abi(&module, kind).map_err(|message| LoadError::Abi {
        path: path.to_path_buf(),
        message,
    })?;
    let mut linker = runtime.linker.clone();
    linker
        .define_unknown_imports_as_traps(&module)
        .and_then(|()| linker.instantiate_pre(&module))
        .map_err(|e| LoadError::Abi {
            path: path.to_path_buf(),
            message: format!("{e:#}"),
        })
        .and_then(|pre| {
            let init_error = |message| LoadError::Init {
                path: path.to_path_buf(),
                message,
            };
            // One instance per chunk a pod may be split into, so chunks never wait for one.
            let mut pool = Vec::new();
            let (first, declared) = instantiate(runtime, name, spec, kind, &pre).map_err(|m| {
                if m.starts_with("declares ABI version") {
                    LoadError::Abi {
                        path: path.to_path_buf(),
                        message: m,
                    }
                } else {
                    init_error(m)
                }
            })?;
            pool.push(first);
            for _ in 1..instances {
                pool.push(
                    instantiate(runtime, name, spec, kind, &pre)
                        .map_err(init_error)?
                        .0,
                );
            }
            Ok(Code {
                pre,
                hash,
                declared,
                version,
                pool: Mutex::new(pool),
            })
        })
}

/// Checks the exports the ABI requires and that every `berth` import exists in this version.
fn check_abi(module: &Module, kind: Kind) -> Result<(), String> {
    let func = |name: &str| match module.get_export(name) {
        Some(ExternType::Func(f)) => Some(f),
        _ => None,
    };
    let is = |types: &mut dyn ExactSizeIterator<Item = ValType>, want: &[&str]| {
        types.len() == want.len()
            && types
                .zip(want)
                .all(|(t, w)| matches!((t, *w), (ValType::I32, "i32") | (ValType::I64, "i64")))
    };
    let mut missing = Vec::new();
    let mut require = |name: &str, params: &[&str], results: &[&str], optional: bool| {
        let signature = format!("{name}({}) -> {}", params.join(", "), {
            if results.is_empty() {
                "()".to_string()
            } else {
                results.join(", ")
            }
        });
        match func(name) {
            Some(f) if is(&mut f.params(), params) && is(&mut f.results(), results) => {}
            Some(_) => missing.push(format!(
                "`{name}` has the wrong type (expected {signature})"
            )),
            None if optional => {}
            None => missing.push(format!("no `{signature}` export")),
        }
    };
    require(abi::EXPORT_VERSION, &[], &["i32"], false);
    require(kind.export(), &["i32"], &["i32"], false);
    require(abi::EXPORT_INIT, &[], &["i32"], true);
    require(abi::EXPORT_INITIALIZE, &[], &[], true);
    require(abi::EXPORT_NODE_LOCAL, &[], &["i32"], true);
    if !matches!(
        module.get_export(abi::EXPORT_MEMORY),
        Some(ExternType::Memory(_))
    ) {
        missing.push("no `memory` export".to_string());
    }
    for import in module.imports() {
        if import.module() == abi::HOST_MODULE
            && !abi::HOST_FUNCTIONS
                .iter()
                .any(|(n, _, _)| *n == import.name())
        {
            missing.push(format!(
                "imports `berth.{}`, which ABI version {} does not have",
                import.name(),
                abi::ABI_VERSION
            ));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "not a {} plugin of ABI version {}: {}",
        kind.entry(),
        abi::ABI_VERSION,
        missing.join("; ")
    ))
}

/// A fresh instance: instantiated from `pre`, reactor-initialised, its ABI version checked
/// and `berth_init` run. Also returns what the guest declared.
fn instantiate(
    runtime: &Runtime,
    name: &Arc<str>,
    spec: &WasmPlugin,
    kind: Kind,
    pre: &InstancePre<HostState>,
) -> Result<(Instance, Declared), String> {
    let memory_bytes =
        usize::try_from(spec.memory_limit_mib.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
    let mut store = Store::new(
        &runtime.engine,
        HostState::new(name.clone(), spec.config.as_str().into(), memory_bytes),
    );
    store.limiter(|s| &mut s.limits);
    store.epoch_deadline_trap();
    // Instantiation runs guest code (start function, initialisers): the ticker must run.
    let _running = runtime.in_flight();
    let ticks = deadline_ticks(spec);
    store.set_epoch_deadline(ticks);
    let fail = |e: wasmtime::Error, store: &Store<HostState>| cause(&e, store, spec);
    let instance = match pre.instantiate(&mut store) {
        Ok(i) => i,
        Err(e) => return Err(fail(e, &store)),
    };
    store.data_mut().memory = instance.get_memory(&mut store, abi::EXPORT_MEMORY);
    if let Ok(init) = instance.get_typed_func::<(), ()>(&mut store, abi::EXPORT_INITIALIZE)
        && let Err(e) = init.call(&mut store, ())
    {
        return Err(format!("_initialize: {}", fail(e, &store)));
    }
    let version = instance
        .get_typed_func::<(), i32>(&mut store, abi::EXPORT_VERSION)
        .and_then(|f| {
            store.set_epoch_deadline(ticks);
            f.call(&mut store, ())
        });
    match version {
        Ok(abi::ABI_VERSION) => {}
        Ok(v) => {
            return Err(format!(
                "declares ABI version {v}, but this host speaks version {}",
                abi::ABI_VERSION
            ));
        }
        Err(e) => return Err(format!("{}: {}", abi::EXPORT_VERSION, fail(e, &store))),
    }
    if let Ok(init) = instance.get_typed_func::<(), i32>(&mut store, abi::EXPORT_INIT) {
        store.set_epoch_deadline(ticks);
        match init.call(&mut store, ()) {
            Ok(0) => {}
            Ok(rc) => {
                let message = store.data_mut().error.take().unwrap_or_default();
                return Err(format!("berth_init returned {rc}: {message}"));
            }
            Err(e) => return Err(format!("berth_init: {}", fail(e, &store))),
        }
    }
    let run = instance
        .get_typed_func::<i32, i32>(&mut store, kind.export())
        .map_err(|e| format!("{e:#}"))?;
    let node_local = match instance.get_typed_func::<(), i32>(&mut store, abi::EXPORT_NODE_LOCAL) {
        Ok(f) => {
            store.set_epoch_deadline(ticks);
            match f.call(&mut store, ()) {
                Ok(v) => v == 1,
                Err(e) => return Err(format!("{}: {}", abi::EXPORT_NODE_LOCAL, fail(e, &store))),
            }
        }
        Err(_) => false,
    };
    let declared = Declared {
        normalize: store.data().normalize,
        node_local,
    };
    Ok((Instance { store, run }, declared))
}
