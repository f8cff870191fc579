//! Hot reload, in one place: watch the policy (a file, or text handed over from a ConfigMap)
//! and the plugins directory, rebuild off the scheduling path, and hand new versions over
//! between cycles. berth-wasm swaps a changed module inside its plugin; this decides when.
//!
//! A changed module is swapped inside its plugin (the next pod's prepare sees it); a changed
//! policy becomes a whole new scheduler that the scheduling loop takes between two cycles
//! with [`Reloader::take_scheduler`]. Directories are watched, not files, because editors
//! save by writing a temporary file and renaming it, and Kubernetes ConfigMap volumes swap a
//! symlink; any event leads to a rescan that compares contents, so duplicate events, renames
//! and partial writes all come down to "did the bytes change, and do they load?". A file
//! that fails to load (or disappears) leaves the last good version running and is reported.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_engine::scheduler_with_plugins;
use berth_engine::{CycleConfig, Scheduler};
use berth_policy::{EffectivePolicy, PolicyError};
use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

use berth_wasm::{PluginHost, Reloaded};
use sha2::{Digest, Sha256};

/// Why reloading could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The file watcher could not be created or could not watch a directory.
    #[error("cannot watch {}: {source}", path.display())]
    Notify {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: notify::Error,
    },
    /// The policy is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policy names a plugin that cannot be loaded.
    #[error(transparent)]
    Registry(#[from] berth_engine::RegistryError),
}

/// The digest of a policy's text, to skip reloads of unchanged versions.
type ContentHash = [u8; 32];

fn content_hash(bytes: &[u8]) -> ContentHash {
    Sha256::digest(bytes).into()
}

/// The digest standing for a policy that could not be read, from the error's text: the same
/// error found again is the same "version", and it never equals a readable policy's digest.
fn error_hash(error: &str) -> ContentHash {
    let mut digest = Sha256::new();
    digest.update(b"unreadable\0");
    digest.update(error.as_bytes());
    digest.finalize().into()
}

/// What reloading has done so far; the metrics of hot reload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadStatus {
    /// Policies swapped in after the first.
    pub policy_reloads: u64,
    /// Policy changes rejected (the running policy stayed).
    pub policy_failures: u64,
    /// Module versions swapped in.
    pub module_reloads: u64,
    /// Module changes rejected (the running version stayed).
    pub module_failures: u64,
    /// Rescans run (one per debounced burst of file events).
    pub rescans: u64,
    /// The most recent error, if the latest attempt of its kind failed.
    pub last_error: Option<String>,
}

/// A check a reloaded policy must pass before it is accepted, beyond parsing and building
/// its scheduler (what the caller sets up beside it, such as extenders): `Err` names what is
/// wrong, and the running policy stays.
pub type PolicyCheck = Box<dyn Fn(&EffectivePolicy) -> Result<(), String> + Send + Sync>;

/// Turns the policy file's text into a policy; the second argument names the file. The
/// default is [`berth_policy::parse`] (a Policy file); `berth run --config` reads a
/// KubeSchedulerConfiguration instead.
pub type PolicyParser =
    Arc<dyn Fn(&str, &str) -> Result<EffectivePolicy, PolicyError> + Send + Sync>;

/// Where a policy comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyInput {
    /// A file, read at start and at every rescan (its directory is watched).
    File(PathBuf),
    /// Text the caller hands over: `text` first, then each version through
    /// [`Reloader::offer`] (a watched ConfigMap's); `name` names it in messages.
    Offered {
        /// The policy's name in messages.
        name: String,
        /// Its first version.
        text: String,
    },
}

/// How to read and accept a policy.
pub struct ReloadOptions {
    /// How long the files must be quiet before a rescan (editors and ConfigMap volumes
    /// write in several steps).
    pub debounce: Duration,
    /// A check a reloaded policy must pass beyond parsing and building.
    pub check: Option<PolicyCheck>,
    /// Turns the text into a policy.
    pub parse: PolicyParser,
}

impl Default for ReloadOptions {
    /// A Policy file's parser, no check, 300 ms of quiet.
    fn default() -> Self {
        ReloadOptions {
            debounce: Duration::from_millis(300),
            check: None,
            parse: Arc::new(berth_policy::parse),
        }
    }
}

/// The policy's source as the rescans read it.
enum Source {
    File(PathBuf),
    Offered {
        name: String,
        latest: Mutex<Result<String, String>>,
    },
}

impl Source {
    /// The policy's name in messages.
    fn name(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Offered { name, .. } => name.clone(),
        }
    }

    /// The name in messages and the text now (or why there is none).
    fn read(&self) -> (String, Result<String, String>) {
        match self {
            Source::File(path) => {
                let file = path.display().to_string();
                let read = read_policy(path)
                    .map_err(|e| format!("{file}: cannot read the policy file: {e}"));
                (file, read)
            }
            Source::Offered { name, latest } => (name.clone(), lock(latest).clone()),
        }
    }
}

struct Shared {
    host: Arc<PluginHost>,
    check: Option<PolicyCheck>,
    parse: PolicyParser,
    input: Source,
    config: CycleConfig,
    /// Hash of the policy text running now.
    policy_hash: Mutex<ContentHash>,
    /// Hash of the last policy text (or read error) rejected, so an unchanged broken file is
    /// neither re-parsed nor counted again on every rescan.
    policy_rejected: Mutex<Option<ContentHash>>,
    policy: Mutex<EffectivePolicy>,
    /// A new scheduler with the policy it was built from, until taken.
    pending: Mutex<Option<(Scheduler, EffectivePolicy)>>,
    status: Mutex<ReloadStatus>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Watches a policy file and a plugins directory.
pub struct Reloader {
    shared: Arc<Shared>,
    /// Dropping it ends the watch, and with it the debounce thread; None when there is
    /// nothing to watch (an offered policy and no plugins directory).
    _watcher: Option<RecommendedWatcher>,
}

/// Watches `dirs` and rescans once per burst of file events, when `debounce` has passed
/// without another. The debounce thread blocks until an event arrives, so a scheduler whose
/// files do not change never wakes for them (a ticking debouncer, notify-debouncer-full's,
/// woke every quarter of the debounce time for as long as the daemon ran). Reads are not
/// changes: the rescan itself opens the files, and must not set off another.
fn watch(
    dirs: &[(PathBuf, RecursiveMode)],
    debounce: Duration,
    shared: Arc<Shared>,
) -> Result<RecommendedWatcher, WatchError> {
    let (events, bursts) = mpsc::channel::<notify::Result<Event>>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        if !matches!(&event, Ok(e) if e.kind.is_access()) {
            // Fails only once the debounce thread is gone, when nothing is left to tell.
            let _ = events.send(event);
        }
    })
    .map_err(|source| WatchError::Notify {
        path: dirs[0].0.clone(),
        source,
    })?;
    std::thread::Builder::new()
        .name("berth-reload".into())
        .spawn(move || {
            // Ends when the watcher is dropped and its sender with it.
            while let Ok(first) = bursts.recv() {
                let mut burst = vec![first];
                loop {
                    match bursts.recv_timeout(debounce) {
                        Ok(event) => burst.push(event),
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                for e in burst.into_iter().filter_map(Result::err) {
                    tracing::warn!("file watch error: {e}");
                }
                shared.rescan();
            }
        })
        .map_err(|source| WatchError::Notify {
            path: dirs[0].0.clone(),
            source: notify::Error::io(source),
        })?;
    for (dir, mode) in dirs {
        watcher
            .watch(dir, *mode)
            .map_err(|source| WatchError::Notify {
                path: dir.clone(),
                source,
            })?;
    }
    Ok(watcher)
}

impl Reloader {
    /// Reads the policy from `input` once and builds its first scheduler with the plugins of
    /// `host`, then watches: the plugins directory, and the policy file's directory for a
    /// file (an offered policy changes through [`Reloader::offer`]).
    pub fn start(
        host: Arc<PluginHost>,
        input: PolicyInput,
        config: CycleConfig,
        options: ReloadOptions,
    ) -> Result<(Reloader, Scheduler), WatchError> {
        let ReloadOptions {
            debounce,
            check,
            parse,
        } = options;
        let (source, text, mut dirs) = match input {
            PolicyInput::File(path) => {
                let text = read_policy(&path).map_err(|source| PolicyError::Read {
                    file: path.display().to_string(),
                    source,
                })?;
                let policy_dir = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let mut dirs = Vec::new();
                if !same_dir(&policy_dir, host.dir()) {
                    dirs.push((policy_dir, RecursiveMode::NonRecursive));
                }
                (Source::File(path), text, dirs)
            }
            PolicyInput::Offered { name, text } => {
                let source = Source::Offered {
                    name,
                    latest: Mutex::new(Ok(text.clone())),
                };
                (source, text, Vec::new())
            }
        };
        let (shared, scheduler) = Shared::first(host.clone(), source, &text, config, check, parse)?;
        // Without a plugins directory there are no modules to watch (a policy naming one
        // fails to load, saying which).
        if host.dir().is_dir() {
            dirs.insert(0, (host.dir().to_path_buf(), RecursiveMode::Recursive));
        }
        let watcher = match dirs.is_empty() {
            true => None,
            false => Some(watch(&dirs, debounce, shared.clone())?),
        };
        Ok((
            Reloader {
                shared,
                _watcher: watcher,
            },
            scheduler,
        ))
    }

    /// Hands over the policy's latest text (or why there is none, e.g. its ConfigMap was
    /// deleted) and reloads at once, with the file's rule: a version that loads replaces the
    /// running policy, one that does not (or none) leaves it running and is reported.
    /// Ignored for a policy read from a file.
    pub fn offer(&self, text: Result<String, String>) {
        if let Source::Offered { latest, .. } = &self.shared.input {
            *lock(latest) = text;
            self.shared.rescan();
        }
    }

    /// A scheduler for a changed policy, once per change; the caller swaps it in between
    /// cycles. None when the policy has not changed since the last call.
    pub fn take_scheduler(&self) -> Option<Scheduler> {
        self.take_update().map(|(scheduler, _)| scheduler)
    }

    /// [`Reloader::take_scheduler`] with the policy that scheduler was built from (for what
    /// the caller sets up beside it, such as extenders), taken together so they match.
    pub fn take_update(&self) -> Option<(Scheduler, EffectivePolicy)> {
        lock(&self.shared.pending).take()
    }

    /// The policy running now (the last one that loaded).
    pub fn policy(&self) -> EffectivePolicy {
        lock(&self.shared.policy).clone()
    }

    /// The counters and last error.
    pub fn status(&self) -> ReloadStatus {
        lock(&self.shared.status).clone()
    }

    /// Rescans now, as a file event would.
    pub fn rescan(&self) {
        self.shared.rescan();
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

impl Shared {
    /// The state of a reloader whose first policy is `text`, and that policy's scheduler.
    fn first(
        host: Arc<PluginHost>,
        input: Source,
        text: &str,
        config: CycleConfig,
        check: Option<PolicyCheck>,
        parse: PolicyParser,
    ) -> Result<(Arc<Shared>, Scheduler), WatchError> {
        let policy = parse(text, &input.name())?;
        let scheduler = scheduler_with_plugins(&policy, config, &*host)?;
        let shared = Arc::new(Shared {
            host,
            check,
            parse,
            input,
            config,
            policy_hash: Mutex::new(content_hash(text.as_bytes())),
            policy_rejected: Mutex::new(None),
            policy: Mutex::new(policy),
            pending: Mutex::new(None),
            status: Mutex::new(ReloadStatus::default()),
        });
        Ok((shared, scheduler))
    }

    fn rescan(&self) {
        let mut module_reloads = 0;
        let mut module_errors = Vec::new();
        for (_, result) in self.host.reload_modules() {
            match result {
                Ok(Reloaded::Swapped { .. }) => module_reloads += 1,
                Ok(Reloaded::Unchanged) => {}
                Err(e) => module_errors.push(e.to_string()),
            }
        }
        let policy_result = self.reload_policy();
        let mut status = lock(&self.status);
        status.rescans += 1;
        status.module_reloads += module_reloads;
        status.module_failures += module_errors.len() as u64;
        match policy_result {
            Ok(true) => status.policy_reloads += 1,
            Ok(false) => {}
            Err(e) => {
                // An error, not a warning: the operator's change is not in effect.
                tracing::error!("policy reload failed, keeping the running policy: {e}");
                status.policy_failures += 1;
                status.last_error = Some(e);
                return;
            }
        }
        if let Some(e) = module_errors.pop() {
            status.last_error = Some(e);
        } else if module_reloads > 0 || matches!(policy_result, Ok(true)) {
            status.last_error = None;
        }
    }

    /// Loads the policy file if its contents changed; true when a new scheduler is pending.
    /// A version that failed once is `Ok(false)` until the file changes again.
    fn reload_policy(&self) -> Result<bool, String> {
        let (file, read) = self.input.read();
        let hash = match &read {
            Ok(text) => content_hash(text.as_bytes()),
            Err(e) => error_hash(e),
        };
        if hash == *lock(&self.policy_hash) {
            *lock(&self.policy_rejected) = None;
            return Ok(false);
        }
        if *lock(&self.policy_rejected) == Some(hash) {
            return Ok(false);
        }
        let built = read.and_then(|text| {
            let policy = (self.parse)(&text, &file).map_err(|e| e.to_string())?;
            if let Some(check) = &self.check {
                check(&policy).map_err(|e| format!("{file}: {e}"))?;
            }
            let scheduler = scheduler_with_plugins(&policy, self.config, &*self.host)
                .map_err(|e| e.to_string())?;
            Ok((policy, scheduler))
        });
        let (policy, scheduler) = match built {
            Ok(b) => b,
            Err(e) => {
                *lock(&self.policy_rejected) = Some(hash);
                return Err(e);
            }
        };
        *lock(&self.pending) = Some((scheduler, policy.clone()));
        *lock(&self.policy) = policy;
        *lock(&self.policy_hash) = hash;
        *lock(&self.policy_rejected) = None;
        tracing::info!(policy = %file, "policy reloaded");
        Ok(true)
    }
}

fn read_policy(path: &Path) -> std::io::Result<String> {
    berth_policy::file::read_regular_text(path, berth_policy::file::MAX_POLICY_BYTES)
}
