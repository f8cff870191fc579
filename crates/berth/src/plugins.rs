//! WASM plugins for `check`, `simulate` and `bench`: where modules are looked up, and
//! building a scheduler that can load them.
//!
//! A policy's `wasm.module` paths are relative to the plugins directory: `--plugins DIR` when
//! given, else the policy file's own directory (so a policy and its modules travel together,
//! as in a ConfigMap), else `./plugins` for the bundled policy.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use berth_engine::{CycleConfig, Scheduler};
use berth_engine::{scheduler_for, scheduler_with_plugins};
use berth_policy::{EffectivePolicy, PredicateKind, PriorityKind};
use berth_wasm::{PluginHost, Runtime};

/// The plugins directory for a policy file and an optional `--plugins` flag.
pub fn plugins_dir(policy: Option<&Path>, flag: Option<&Path>) -> PathBuf {
    if let Some(dir) = flag {
        return dir.to_path_buf();
    }
    match policy.and_then(Path::parent) {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        Some(_) => PathBuf::from("."),
        None => PathBuf::from("plugins"),
    }
}

/// Whether any predicate or priority names a plugin.
pub fn uses_plugins(policy: &EffectivePolicy) -> bool {
    policy
        .predicates
        .iter()
        .any(|p| matches!(p.kind, PredicateKind::Wasm(_)))
        || policy
            .priorities
            .iter()
            .any(|p| matches!(p.kind, PriorityKind::Wasm(_)))
}

/// A scheduler for `policy`, loading its plugins from `dir` (the host is None without any).
pub fn scheduler(
    policy: &EffectivePolicy,
    dir: &Path,
    config: CycleConfig,
) -> Result<(Scheduler, Option<Arc<PluginHost>>)> {
    if !uses_plugins(policy) {
        return Ok((scheduler_for(policy, config)?, None));
    }
    let host = Arc::new(PluginHost::new(Runtime::new()?, dir));
    let scheduler = scheduler_with_plugins(policy, config, &*host)
        .with_context(|| format!("plugins directory {}", dir.display()))?;
    Ok((scheduler, Some(host)))
}
