//! The plugin factory the engine's registry calls: it loads the modules a policy names from
//! a plugins directory and keeps track of the live plugins so their files can be reloaded.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use berth_engine::PluginFactory;
use berth_engine::framework::{FilterRule, ScoreRule};
use berth_policy::WasmPlugin;

use crate::error::LoadError;
use crate::plugin::{Kind, Plugin, Reloaded};
use crate::rules::{WasmFilter, WasmScore};
use crate::runtime::Runtime;

/// Loads plugins from one directory and remembers them for reloads.
///
/// Each plugin keeps a pool of instances (one per worker thread, so a pod's chunks never
/// wait), and each instance may hold up to its `memoryLimitMiB`. With a memory budget (see
/// [`PluginHost::with_memory_budget`]) the pools are sized so that the sum over live plugins
/// of instances x `memoryLimitMiB` stays within it; a plugin that cannot get even one
/// instance is refused with the figures.
pub struct PluginHost {
    runtime: Arc<Runtime>,
    dir: PathBuf,
    live: Mutex<Vec<Weak<Plugin>>>,
    budget_bytes: Option<u64>,
}

impl PluginHost {
    /// A host loading modules from `dir`.
    pub fn new(runtime: Arc<Runtime>, dir: impl Into<PathBuf>) -> Self {
        PluginHost {
            runtime,
            dir: dir.into(),
            live: Mutex::new(Vec::new()),
            budget_bytes: None,
        }
    }

    /// Bounds the memory all plugin instances together may hold: `berth run` derives it from
    /// the container's memory limit. None (the default) means one instance per worker thread
    /// whatever they hold.
    pub fn with_memory_budget(mut self, bytes: Option<u64>) -> Self {
        self.budget_bytes = bytes;
        self
    }

    /// The budget, if any.
    pub fn memory_budget(&self) -> Option<u64> {
        self.budget_bytes
    }

    /// What the live plugins' instances may hold together, in bytes.
    pub fn reserved_bytes(&self) -> u64 {
        self.plugins().iter().map(|p| p.reserved_bytes()).sum()
    }

    /// How many instances a new plugin with `spec` may have within the budget.
    fn instances_for(&self, spec: &WasmPlugin) -> Result<usize, LoadError> {
        let threads = rayon::current_num_threads().max(1);
        let Some(budget) = self.budget_bytes else {
            return Ok(threads);
        };
        let per_instance = spec.memory_limit_mib.saturating_mul(1024 * 1024).max(1);
        let reserved = self.reserved_bytes();
        let fit = budget.saturating_sub(reserved) / per_instance;
        if fit == 0 {
            return Err(LoadError::Budget {
                path: self.dir.join(&spec.module),
                message: format!(
                    "one instance may hold memoryLimitMiB = {} MiB, but only {} MiB of \
                     the plugin memory budget of {} MiB is left ({} MiB held by other plugins); \
                     lower memoryLimitMiB or raise the budget (--plugin-memory-mib, or the \
                     container's memory limit)",
                    spec.memory_limit_mib,
                    budget.saturating_sub(reserved) >> 20,
                    budget >> 20,
                    reserved >> 20
                ),
            });
        }
        Ok(threads.min(usize::try_from(fit).unwrap_or(usize::MAX)))
    }

    /// The plugins directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The plugins some scheduler still uses.
    pub fn plugins(&self) -> Vec<Arc<Plugin>> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.iter().filter_map(Weak::upgrade).collect()
    }

    /// The plugin for an entry: an already loaded one with the same name, kind and settings
    /// (so a policy reload keeps running instances), or a newly loaded one.
    pub fn load(
        &self,
        name: &str,
        spec: &WasmPlugin,
        kind: Kind,
    ) -> Result<Arc<Plugin>, LoadError> {
        if let Some(p) = self
            .plugins()
            .into_iter()
            .find(|p| p.name() == name && p.kind() == kind && p.spec() == spec)
        {
            return Ok(p);
        }
        let instances = self.instances_for(spec)?;
        let plugin = Arc::new(Plugin::load(
            self.runtime.clone(),
            &self.dir,
            name,
            spec,
            kind,
            instances,
        )?);
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(&plugin));
        Ok(plugin)
    }

    /// Re-reads every live plugin's module file; changed ones are swapped in if they load.
    pub fn reload_modules(&self) -> Vec<(Arc<Plugin>, Result<Reloaded, LoadError>)> {
        self.plugins()
            .into_iter()
            .map(|p| {
                let r = p.reload();
                (p, r)
            })
            .collect()
    }
}

impl PluginFactory for PluginHost {
    fn filter(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn FilterRule>, String> {
        let plugin = self
            .load(name, spec, Kind::Filter)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(WasmFilter(plugin)))
    }

    fn score(&self, name: &str, spec: &WasmPlugin) -> Result<Arc<dyn ScoreRule>, String> {
        let plugin = self
            .load(name, spec, Kind::Score)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(WasmScore(plugin)))
    }
}
