//! `berth bench --workload node-label --compare-wasm` and `berth bench --reload-latency N`:
//! what WASM plugins cost next to the built-in rules with the same logic, measured side by
//! side in one process, and how long a rewritten module takes to go live.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use berth_daemon::reload::{PolicyInput, ReloadOptions, Reloader};
use berth_policy::EffectivePolicy;
use berth_wasm::{PluginHost, Runtime};
use serde_json::json;

use super::args::{Args, Workload, config};
use super::measure::{measure, print_result};
use crate::{Format, plugins};

/// The built-in rules of the node-label workload.
const BUILTIN_POLICY: &str = r#"{"kind": "Policy", "apiVersion": "v1",
  "predicates": [{"name": "NeedsSsd", "argument": {"labelsPresence": {"labels": ["disk-ssd"], "presence": true}}}],
  "priorities": [{"name": "PreferFastNet", "weight": 1, "argument": {"labelPreference": {"label": "net-fast", "presence": true}}}]}"#;

/// The same rules as plugins (plugins/node-label-filter, plugins/node-label-score).
const WASM_POLICY: &str = r#"{"kind": "Policy", "apiVersion": "v1",
  "predicates": [{"name": "NeedsSsd", "argument": {"wasm": {"module": "node-label-filter.wasm",
    "config": {"labels": ["disk-ssd"], "presence": true}}}}],
  "priorities": [{"name": "PreferFastNet", "weight": 1, "argument": {"wasm": {"module": "node-label-score.wasm",
    "config": {"label": "net-fast", "presence": true}}}}]}"#;

/// Rounds of each variant, interleaved; the median is reported.
const ROUNDS: usize = 3;
/// How long files must be quiet before a reload, as `berth run` watches them.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// The node-label workload's policy, built-in or as plugins.
pub(super) fn node_label_policy(wasm: bool) -> Result<EffectivePolicy> {
    let (text, name) = if wasm {
        (WASM_POLICY, "node-label-wasm policy")
    } else {
        (BUILTIN_POLICY, "node-label policy")
    };
    Ok(berth_policy::parse(text, name)?)
}

fn plugins_dir(flag: Option<&Path>) -> Result<PathBuf> {
    let dir = flag.map_or_else(|| PathBuf::from("plugins/dist"), Path::to_path_buf);
    for module in ["node-label-filter.wasm", "node-label-score.wasm"] {
        if !dir.join(module).exists() {
            bail!(
                "{} not found; build the plugins with scripts/build-plugins.sh or pass --plugins DIR",
                dir.join(module).display()
            );
        }
    }
    Ok(dir)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs the built-in and the plugin variant of the node-label workload, interleaved, and
/// prints both with the per-pod time ratio.
pub(super) fn compare(args: &Args) -> Result<()> {
    if args.workload != Workload::NodeLabel {
        bail!("--compare-wasm needs --workload node-label");
    }
    let dir = plugins_dir(args.plugins.as_deref())?;
    let (builtin, wasm) = (node_label_policy(false)?, node_label_policy(true)?);
    let mut runs: [Vec<serde_json::Value>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        for (variant, policy) in [&builtin, &wasm].into_iter().enumerate() {
            let (mut scheduler, _plugins) = plugins::scheduler(policy, &dir, config(args))?;
            runs[variant].push(measure(args, &mut scheduler)?);
        }
    }
    let stat = |variant: usize, key: &str| {
        median(
            runs[variant]
                .iter()
                .map(|r| r[key].as_f64().unwrap_or(0.0))
                .collect(),
        )
    };
    let ratio = |key: &str| (stat(1, key) / stat(0, key) * 100.0).round() / 100.0;
    let summary = |variant: usize| {
        let mut v = runs[variant][0].clone();
        for key in ["pods_per_sec", "mean_us", "p50_us", "p99_us"] {
            v[key] = json!(stat(variant, key));
        }
        v
    };
    let result = json!({
        "workload": "node-label",
        "rounds": ROUNDS,
        "builtin": summary(0),
        "wasm": summary(1),
        "ratio_mean_us": ratio("mean_us"),
        "ratio_p50_us": ratio("p50_us"),
        "same_placements": runs[0][0]["placement_digest"] == runs[1][0]["placement_digest"],
    });
    match args.output {
        Format::Json => println!("{result}"),
        Format::Table => {
            println!("{:>14}  {:>12}  {:>12}", "", "built-in", "wasm");
            for key in [
                "pods_per_sec",
                "mean_us",
                "p50_us",
                "p99_us",
                "scheduled",
                "placement_digest",
            ] {
                println!(
                    "{key:>14}  {:>12}  {:>12}",
                    result["builtin"][key], result["wasm"][key]
                );
            }
            println!(
                "{:>14}  wasm/built-in per-pod time: {} (mean), {} (p50); median of {ROUNDS} rounds at {} nodes",
                "ratio", result["ratio_mean_us"], result["ratio_p50_us"], args.nodes
            );
            println!("{:>14}  {}", "same decisions", result["same_placements"]);
        }
    }
    Ok(())
}

/// `module` with a custom section appended: the same code, different bytes.
fn variant(module: &[u8], k: usize) -> Vec<u8> {
    let name = b"berth-bench";
    let payload = (k as u64).to_le_bytes();
    let mut out = module.to_vec();
    out.push(0);
    out.push((1 + name.len() + payload.len()) as u8);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

/// Writes a new version of a score plugin `rounds` times, by rename as editors and
/// ConfigMaps do, and times each from the write until the new version is live.
pub(super) fn reload_latency(flag: Option<&Path>, rounds: usize, format: Format) -> Result<()> {
    if rounds == 0 {
        bail!("--reload-latency needs at least 1 round");
    }
    let source = plugins_dir(flag)?.join("node-label-score.wasm");
    let module = std::fs::read(&source).with_context(|| source.display().to_string())?;
    let dir = tempfile_dir()?;
    let path = dir.join("score.wasm");
    std::fs::write(&path, &module)?;
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"priorities": [{"name": "Score", "weight": 1, "argument": {"wasm": {"module": "score.wasm",
            "config": {"label": "net-fast", "presence": true}}}}]}"#,
    )?;
    let host = Arc::new(PluginHost::new(Runtime::new()?, &dir));
    let options = ReloadOptions {
        debounce: DEBOUNCE,
        ..ReloadOptions::default()
    };
    let (reloader, _scheduler) = Reloader::start(
        host.clone(),
        PolicyInput::File(policy),
        Default::default(),
        options,
    )?;
    let plugin = host.plugins().into_iter().next().context("plugin loaded")?;
    let mut latencies = Vec::with_capacity(rounds);
    for k in 0..rounds {
        let want = plugin.version() + 1;
        let tmp = dir.join("score.wasm.tmp");
        let start = Instant::now();
        std::fs::write(&tmp, variant(&module, k))?;
        std::fs::rename(&tmp, &path)?;
        while plugin.version() < want {
            if start.elapsed() > Duration::from_secs(10) {
                bail!(
                    "version {want} not live after 10 s: {:?}",
                    reloader.status()
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        // Let the watcher settle so each round starts from a quiet directory.
        std::thread::sleep(DEBOUNCE * 2);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut sorted = latencies.clone();
    sorted.sort_by(f64::total_cmp);
    let ms = |v: f64| (v * 10.0).round() / 10.0;
    let result = json!({
        "reloads": rounds,
        "debounce_ms": DEBOUNCE.as_millis() as u64,
        "min_ms": ms(sorted[0]),
        "median_ms": ms(sorted[sorted.len() / 2]),
        "max_ms": ms(sorted[sorted.len() - 1]),
        "failures": reloader.status().module_failures,
    });
    print_result(&result, format);
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("berth-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
