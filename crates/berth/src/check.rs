//! `berth check`: validate a policy and print what it amounts to.

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::{Format, plugins};

/// Loads, validates and prints the effective configuration. Every plugin module the policy
/// names is loaded: it must exist, compile, export what its entry needs and speak a
/// supported ABI version.
pub fn run(path: &Path, plugins_flag: Option<&Path>, format: Format) -> Result<()> {
    let policy = berth_policy::load(path)?;
    let dir = plugins::plugins_dir(Some(path), plugins_flag);
    // Kept alive while reporting: the host only lists plugins some scheduler still uses.
    let (_scheduler, host) = plugins::scheduler(&policy, &dir, Default::default())?;
    let loaded = host.as_ref().map(|h| h.plugins()).unwrap_or_default();
    let line = |p: &berth_wasm::Plugin| {
        let kind = match p.kind() {
            berth_wasm::Kind::Filter => "predicate",
            berth_wasm::Kind::Score => "priority",
        };
        (p.name().to_string(), kind, p.path().display().to_string())
    };
    match format {
        Format::Table => {
            print!("{}", policy.describe());
            if !loaded.is_empty() {
                println!(
                    "Plugins ({}, from {}; ABI version {}):",
                    loaded.len(),
                    dir.display(),
                    berth_wasm::abi::ABI_VERSION
                );
                for p in &loaded {
                    let (name, kind, module) = line(p);
                    println!("  {name}: {module} ({kind}): loaded");
                }
            }
        }
        Format::Json => {
            let mut value = serde_json::to_value(&policy)?;
            if !loaded.is_empty() {
                value["plugins"] = loaded
                    .iter()
                    .map(|p| {
                        let (name, kind, module) = line(p);
                        json!({"name": name, "kind": kind, "module": module, "status": "loaded"})
                    })
                    .collect();
            }
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    Ok(())
}
