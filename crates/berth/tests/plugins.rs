//! The example plugins under `plugins/` through the CLI: each example's `policy.json` and
//! `cluster.yaml` run by `berth simulate --output json` against its `expected.jsonl`, and
//! `berth check` loading (or rejecting) modules. The guests are built first by
//! scripts/build-plugins.sh (incremental; the test command also runs it).
//!
//! Set `BERTH_BLESS=1` to rewrite the `expected.jsonl` files from the current output.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// plugins/dist, built once per test run.
fn dist() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Command::new("bash")
                .arg(repo().join("scripts/build-plugins.sh"))
                .output()
                .expect("run scripts/build-plugins.sh");
            assert!(
                out.status.success(),
                "scripts/build-plugins.sh failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            repo().join("plugins/dist")
        })
        .clone()
}

fn berth(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .output()
        .expect("run berth");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn examples_through_simulate() {
    let dist = dist();
    let mut examples: Vec<PathBuf> = fs::read_dir(repo().join("plugins"))
        .expect("plugins folder")
        .map(|e| e.expect("entry").path().join("example"))
        .filter(|p| p.join("policy.json").exists())
        .collect();
    examples.sort();
    assert!(examples.len() >= 3, "examples: {examples:?}");
    let mut failures = Vec::new();
    for example in &examples {
        let (ok, got, stderr) = berth(&[
            "simulate",
            "--output",
            "json",
            "--policy",
            path(&example.join("policy.json")),
            "--cluster",
            path(&example.join("cluster.yaml")),
            "--plugins",
            path(&dist),
        ]);
        let expected = example.join("expected.jsonl");
        if !ok {
            failures.push(format!("{}: {stderr}", example.display()));
        } else if std::env::var_os("BERTH_BLESS").is_some() {
            fs::write(&expected, &got).expect("bless");
        } else if fs::read_to_string(&expected).unwrap_or_default() != got {
            failures.push(format!("{}: got\n{got}", example.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--explain` names a WASM plugin as what rejected a node, in the JSON (`kind` plugin) and
/// in the table (`plugin NAME`).
#[test]
fn explain_names_the_plugin_that_rejected() {
    let dist = dist();
    let example = repo().join("plugins/gpu-model/example");
    let (policy, cluster) = (example.join("policy.json"), example.join("cluster.yaml"));
    let args = |extra: &[&str]| {
        let mut a = vec![
            "simulate",
            "--explain",
            "--pod",
            "ml/train-v100",
            "--policy",
            path(&policy),
            "--cluster",
            path(&cluster),
            "--plugins",
            path(&dist),
        ];
        a.extend_from_slice(extra);
        berth(&a)
    };
    let (ok, json, err) = args(&["--output", "json"]);
    assert!(ok, "{err}");
    let line: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON line");
    let nodes = line["explain"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3, "{json}");
    for n in nodes {
        assert_eq!(
            n["rejections"],
            serde_json::json!([{"rule": "GpuModel", "kind": "plugin",
                "reason": "node(s) didn't have a requested GPU model"}]),
            "{json}"
        );
    }
    let (ok, table, err) = args(&[]);
    assert!(ok, "{err}");
    assert!(table.contains("3  plugin GpuModel"), "{table}");
}

#[test]
fn check_loads_plugins_and_reports_bad_modules() {
    let dist = dist();
    let policy = repo().join("plugins/gpu-model/example/policy.json");
    let (ok, out, err) = berth(&["check", path(&policy), "--plugins", path(&dist)]);
    assert!(ok, "{err}");
    assert!(
        out.contains("GpuModel: WasmPlugin (module \"gpu-model.wasm\", failurePolicy Fail")
            && out.contains("Plugins (1, from ")
            && out.contains("gpu-model.wasm (predicate): loaded"),
        "{out}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let broken = dir.path().join("policy.json");
    fs::write(
        &broken,
        r#"{"predicates": [{"name": "Gpu", "argument": {"wasm": {"module": "gpu-model.wasm"}}}]}"#,
    )
    .expect("write policy");
    fs::write(dir.path().join("gpu-model.wasm"), b"\0asm garbage").expect("write module");
    let (ok, _, err) = berth(&["check", path(&broken)]);
    assert!(!ok);
    assert!(
        err.contains("predicate Gpu: ")
            && err.contains("gpu-model.wasm: not a valid WebAssembly module"),
        "{err}"
    );

    fs::write(
        &broken,
        r#"{"priorities": [{"name": "S1", "weight": 1, "argument": {"wasm": {"module": "gpu-model.wasm"}}}]}"#,
    )
    .expect("write policy");
    let (ok, _, err) = berth(&["check", path(&broken), "--plugins", path(&dist)]);
    assert!(
        !ok && err.contains("no `berth_score(i32) -> i32` export"),
        "{err}"
    );
}
