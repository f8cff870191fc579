//! `berth check`: validate a policy and print what it amounts to.

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::extenders::{self, Extenders};
use crate::{Format, plugins};

/// Loads, validates and prints the effective configuration. Every plugin module the policy
/// names is loaded: it must exist, compile, export what its entry needs and speak a
/// supported ABI version.
pub fn run(path: &Path, plugins_flag: Option<&Path>, format: Format) -> Result<()> {
    let mut policy = berth_policy::load(path)?;
    let (warnings, notes) = extenders::check(&policy);
    policy.warnings.extend(warnings);
    let dir = plugins::plugins_dir(Some(path), plugins_flag);
    // Kept alive while reporting: the host only lists plugins some scheduler still uses.
    let (_scheduler, host) = plugins::scheduler(&policy, &dir, Default::default())?;
    let loaded = host.as_ref().map(|h| h.plugins()).unwrap_or_default();
    // Sets up every extender's client (URL, TLS material) without calling it.
    Extenders::new(&policy, None)?;
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
            if !notes.is_empty() {
                println!("Extender notes ({}):", notes.len());
                for note in &notes {
                    println!("  - {note}");
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
            if !notes.is_empty() {
                value["extenderNotes"] = json!(notes);
            }
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    Ok(())
}
