//! The wasm engine shared by every plugin: compiler settings, the host functions, the epoch
//! ticker that bounds each call, and a small cache of compiled modules.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine, Linker, Module};

use crate::error::LoadError;
use crate::host::{self, HostState};

/// How often the epoch advances while a guest runs: the granularity of call timeouts.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);
/// Ticks the ticker goes on after the last call ends before it sleeps: pods arrive in bursts,
/// and waking the ticker per pod would cost more than ticking through a short gap.
const LINGER_TICKS: u32 = 100;
/// Most wasm stack one call may use.
const MAX_WASM_STACK: usize = 512 * 1024;
/// Compiled modules kept for reuse (several entries naming one file, a reverted edit).
const MODULE_CACHE_SIZE: usize = 16;

/// A compiled module with its content hash and bytes (compared on a hash match).
type CachedModule = (ContentHash, Arc<[u8]>, Module);

/// What the ticker and the calls share.
#[derive(Default)]
struct TickState {
    /// Guest calls in flight.
    active: AtomicUsize,
    /// Ticks so far.
    ticks: AtomicU64,
    stop: AtomicBool,
    /// Held to sleep on `wake` and to wake the ticker, so no wake-up is lost.
    lock: Mutex<()>,
    wake: Condvar,
}

/// Advances the engine's epoch every [`EPOCH_TICK`] while guest calls are in flight (and for
/// [`LINGER_TICKS`] after), and sleeps otherwise: an idle scheduler, or one whose policy has
/// no plugin, has no periodic wake-up. Deadlines hold because a call's deadline counts ticks
/// from its start, and the ticker runs for as long as any call does.
struct Ticker {
    state: Arc<TickState>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: Engine) -> std::io::Result<Ticker> {
        let state = Arc::new(TickState::default());
        let thread = {
            let state = state.clone();
            std::thread::Builder::new()
                .name("berth-wasm-epoch".into())
                .spawn(move || tick(&engine, &state))?
        };
        Ok(Ticker {
            state,
            thread: Some(thread),
        })
    }
}

fn tick(engine: &Engine, state: &TickState) {
    // Asleep until the first call.
    let mut quiet = LINGER_TICKS;
    while !state.stop.load(Ordering::Relaxed) {
        if state.active.load(Ordering::Acquire) > 0 {
            quiet = 0;
        } else if quiet >= LINGER_TICKS {
            let guard = state.lock.lock().unwrap_or_else(|e| e.into_inner());
            // Checked under the lock a caller takes to wake us: no wake-up is missed.
            if state.active.load(Ordering::Acquire) == 0 && !state.stop.load(Ordering::Relaxed) {
                drop(state.wake.wait(guard).unwrap_or_else(|e| e.into_inner()));
            }
            quiet = 0;
            continue;
        } else {
            quiet += 1;
        }
        std::thread::sleep(EPOCH_TICK);
        engine.increment_epoch();
        state.ticks.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        {
            let _guard = self.state.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.state.wake.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A guest call in flight: keeps the ticker running until dropped.
pub(crate) struct InFlight<'a>(&'a TickState);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Release);
    }
}

/// The engine, linker and module cache every plugin of a process shares.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    cache: Mutex<Vec<CachedModule>>,
    ticker: Ticker,
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
        let ticker = Ticker::start(engine.clone())
            .map_err(|e| LoadError::Engine(format!("cannot start the epoch ticker: {e}")))?;
        Ok(Arc::new(Runtime {
            engine,
            linker,
            cache: Mutex::new(Vec::new()),
            ticker,
        }))
    }

    /// Marks a guest call as in flight, waking the ticker if it sleeps. Hold the guard for
    /// the whole call: the call's epoch deadline only advances while some guard is alive.
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        let state = &*self.ticker.state;
        if state.active.fetch_add(1, Ordering::AcqRel) == 0 {
            let _guard = state.lock.lock().unwrap_or_else(|e| e.into_inner());
            state.wake.notify_one();
        }
        InFlight(state)
    }

    /// Epoch ticks so far (for tests of the ticker).
    #[doc(hidden)]
    pub fn epoch_ticks(&self) -> u64 {
        self.ticker.state.ticks.load(Ordering::Relaxed)
    }

    /// Compiles a binary module, reusing an identical earlier compilation.
    pub(crate) fn compile(&self, bytes: &[u8], hash: ContentHash) -> Result<Module, String> {
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
        let module = Module::from_binary(&self.engine, bytes).map_err(|e| format!("{e:#}"))?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MODULE_CACHE_SIZE {
            cache.remove(0);
        }
        cache.push((hash, bytes.into(), module.clone()));
        Ok(module)
    }
}

/// A SHA-256 digest of a file's contents.
pub(crate) type ContentHash = [u8; 32];

/// The digest of a module or policy file, to skip reloads of unchanged files. A
/// cryptographic digest, so that no plugin author can make a changed module pass for the
/// running one.
pub(crate) fn content_hash(bytes: &[u8]) -> ContentHash {
    Sha256::digest(bytes).into()
}

/// The digest standing for a file that could not be read, from the error's text: the same
/// error found again is the same "version", and it never equals a readable file's digest.
pub(crate) fn error_hash(error: &str) -> ContentHash {
    let mut digest = Sha256::new();
    digest.update(b"unreadable\0");
    digest.update(error.as_bytes());
    digest.finalize().into()
}
