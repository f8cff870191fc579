//! `berth check`: validate a policy and print what it amounts to.

use std::path::Path;

use anyhow::{Context, Result};
use berth_engine::{CycleConfig, FeatureGates};
use serde_json::json;

use crate::extenders::{self, Extenders};
use crate::source::PolicySource;
use crate::{Format, plugins};

/// What the DefaultPodTopologySpread gate does to SelectorSpreadPriority.
fn spread_note(gates: FeatureGates) -> &'static str {
    if gates.default_pod_topology_spread {
        "SelectorSpreadPriority is served by PodTopologySpread with the system default constraints"
    } else {
        "SelectorSpreadPriority is the classic SelectorSpread"
    }
}

/// Loads, validates and prints the effective configuration. Every plugin module the policy
/// names is loaded: it must exist, compile, export what its entry needs and speak a
/// supported ABI version.
pub fn run(
    source: &PolicySource,
    plugins_flag: Option<&Path>,
    format: Format,
    gates: FeatureGates,
) -> Result<()> {
    let path = source.path();
    let mut policy = source.load()?;
    let (warnings, notes) = extenders::check(&policy);
    policy.warnings.extend(warnings);
    let dir = plugins::plugins_dir(Some(path), plugins_flag);
    let config = CycleConfig {
        feature_gates: gates,
        ..CycleConfig::default()
    };
    // Kept alive while reporting: the host only lists plugins some scheduler still uses.
    let (scheduler, host) = plugins::scheduler(&policy, &dir, config)?;
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
            println!("Feature gates: {gates} ({})", spread_note(gates));
            println!(
                "Rules (as kube-scheduler v1.22 builds its plugins: entries of one plugin run once):"
            );
            for f in scheduler.filters() {
                println!("  filter  {}", f.name);
            }
            for s in scheduler.scores() {
                println!("  score   {} (weight {})", s.name, s.weight);
            }
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
            // The document `berth run` serves on /configz, plus the plugins loaded.
            let mut value = berth_daemon::configz::document(&policy, &scheduler, gates);
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

/// Reads a cluster file as `simulate` does and reports what it holds and every warning:
/// fields the API does not know, fields Berth does not model, objects it cannot use.
pub fn cluster(path: &Path, format: Format) -> Result<()> {
    let objects = berth_kube::load_cluster_file(path)?;
    let snapshot = berth_kube::snapshot(&objects)
        .with_context(|| format!("cluster file {}", path.display()))?;
    let sizes = snapshot.cluster.sizes();
    match format {
        Format::Table => {
            println!(
                "Cluster file {}: {} nodes, {} running pods, {} pending pods",
                path.display(),
                sizes.nodes,
                sizes.pods,
                snapshot.pending.len()
            );
            if snapshot.warnings.is_empty() {
                println!("  nothing ignored or refused");
            }
            for w in &snapshot.warnings {
                println!("  warning: {w}");
            }
        }
        Format::Json => {
            let value = json!({
                "cluster": path.display().to_string(),
                "nodes": sizes.nodes,
                "runningPods": sizes.pods,
                "pendingPods": snapshot.pending.len(),
                "warnings": snapshot.warnings,
            });
            println!("{}", serde_json::to_string(&value)?);
        }
    }
    Ok(())
}
