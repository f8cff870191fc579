//! The wasm engine shared by every plugin: compiler settings, the host functions, the epoch
//! ticker that bounds each call, and a small cache of compiled modules.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config, Engine, Linker, Module};

use crate::error::LoadError;
use crate::host::{self, HostState};

/// How often the epoch advances: the granularity of call timeouts.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);
/// Most wasm stack one call may use.
const MAX_WASM_STACK: usize = 512 * 1024;
/// Compiled modules kept for reuse (several entries naming one file, a reverted edit).
const MODULE_CACHE_SIZE: usize = 16;

/// A compiled module with its content hash and bytes (compared on a hash match).
type CachedModule = (u64, Arc<[u8]>, Module);

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The engine, linker and module cache every plugin of a process shares.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    cache: Mutex<Vec<CachedModule>>,
    _ticker: Ticker,
}

impl Runtime {
    /// Sets up the engine: epoch interruption for timeouts, a bounded wasm stack, and the
    /// host functions of the ABI.
    pub fn new() -> Result<Arc<Runtime>, LoadError> {
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .max_wasm_stack(MAX_WASM_STACK)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        let engine = Engine::new(&config).map_err(|e| LoadError::Engine(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        host::define(&mut linker).map_err(|e| LoadError::Engine(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let engine = engine.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("berth-wasm-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| LoadError::Engine(format!("cannot start the epoch ticker: {e}")))?
        };
        Ok(Arc::new(Runtime {
            engine,
            linker,
            cache: Mutex::new(Vec::new()),
            _ticker: Ticker {
                stop,
                thread: Some(thread),
            },
        }))
    }

    /// Compiles a module (binary, or WAT text), reusing an identical earlier compilation.
    pub(crate) fn compile(&self, bytes: &[u8], hash: u64) -> Result<Module, String> {
        let cached = |cache: &Vec<CachedModule>| {
            cache
                .iter()
                .find(|(h, b, _)| *h == hash && **b == *bytes)
                .map(|(_, _, m)| m.clone())
        };
        if let Some(m) = cached(&self.cache.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(m);
        }
        // Compiled outside the lock: compiling takes milliseconds to seconds.
        let module = Module::new(&self.engine, bytes).map_err(|e| format!("{e:#}"))?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MODULE_CACHE_SIZE {
            cache.remove(0);
        }
        cache.push((hash, bytes.into(), module.clone()));
        Ok(module)
    }
}

/// A content hash of a module file, to skip reloads of unchanged files (FNV-1a, 64 bits).
pub(crate) fn content_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
