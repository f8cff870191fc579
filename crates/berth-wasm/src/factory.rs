//! The plugin factory the engine's registry calls: it loads the modules a policy names from
//! a plugins directory and keeps track of the live plugins so their files can be reloaded.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use berth_engine::framework::{FilterRule, ScoreRule};
use berth_engine::registry::PluginFactory;
use berth_policy::WasmPlugin;

use crate::error::LoadError;
use crate::plugin::{Kind, Plugin, Reloaded};
use crate::rules::{WasmFilter, WasmScore};
use crate::runtime::Runtime;

/// Loads plugins from one directory and remembers them for reloads.
pub struct PluginHost {
    runtime: Arc<Runtime>,
    dir: PathBuf,
    live: Mutex<Vec<Weak<Plugin>>>,
}

impl PluginHost {
    /// A host loading modules from `dir`.
    pub fn new(runtime: Arc<Runtime>, dir: impl Into<PathBuf>) -> Self {
        PluginHost {
            runtime,
            dir: dir.into(),
            live: Mutex::new(Vec::new()),
        }
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
        let plugin = Arc::new(Plugin::load(
            self.runtime.clone(),
            &self.dir,
            name,
            spec,
            kind,
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
