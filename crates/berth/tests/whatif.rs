//! What-if scenarios: `berth simulate --apply` through the CLI, one folder per case under
//! `tests/whatif/`:
//! - `cluster.yaml`: the cluster file;
//! - `policy.json` (optional): the policy, else the bundled OpenShift policy;
//! - `apply`: the manifest files to apply, one per line, relative to the case folder, in
//!   order (each becomes an `--apply`);
//! - then either `table.txt` and `output.jsonl`, the exact outputs (golden files), or
//!   `error.txt`, lines that the error (exit status 1, standard error) must contain.
//!
//! Set `BERTH_BLESS=1` to rewrite `table.txt` and `output.jsonl` from the current output
//! (then review the diff: a blessed file is a claim about correct behaviour).

#[path = "support/golden_file.rs"]
mod golden_file;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The terminal width the tables are laid out for.
const WIDTH: usize = 100;

fn simulate(dir: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_berth"));
    cmd.arg("simulate")
        .arg("--cluster")
        .arg(dir.join("cluster.yaml"));
    let policy = dir.join("policy.json");
    if policy.exists() {
        cmd.arg("--policy").arg(&policy);
    }
    let apply = fs::read_to_string(dir.join("apply")).expect("apply list");
    for file in apply.lines().map(str::trim).filter(|l| !l.is_empty()) {
        cmd.arg("--apply").arg(dir.join(file));
    }
    // Paths in messages are the case's own, not this machine's.
    cmd.current_dir(dir).args(extra);
    cmd.output().expect("run berth")
}

/// The output with the case folder's path left out, so golden files hold relative names.
fn text(dir: &Path, bytes: &[u8]) -> String {
    let prefix = format!("{}/", dir.display());
    String::from_utf8_lossy(bytes).replace(&prefix, "")
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whatif");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("whatif folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 6, "what-if cases under {}", root.display());
    dirs
}

fn run_case(dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let error = dir.join("error.txt");
    if error.exists() {
        let out = simulate(dir, &[]);
        let stderr = text(dir, &out.stderr);
        if out.status.success() {
            failures.push(format!("{}: succeeded, want an error", dir.display()));
        }
        let want = fs::read_to_string(&error).expect("error.txt");
        for line in want.lines().filter(|l| !l.is_empty()) {
            if !stderr.contains(line) {
                failures.push(format!(
                    "{}: error lacks {line:?}:\n{stderr}",
                    dir.display()
                ));
            }
        }
        if stderr.contains("panicked") {
            failures.push(format!("{}: panicked:\n{stderr}", dir.display()));
        }
        return failures;
    }
    for (file, extra) in [
        ("table.txt", &[][..]),
        ("output.jsonl", &["--output", "json"][..]),
    ] {
        let out = simulate(dir, extra);
        if !out.status.success() {
            failures.push(format!(
                "{} {extra:?}: exit {}: {}",
                dir.display(),
                out.status,
                text(dir, &out.stderr)
            ));
            continue;
        }
        let got = text(dir, &out.stdout);
        for (i, line) in got.lines().enumerate() {
            if file.ends_with(".txt") && line.chars().count() > WIDTH {
                failures.push(format!(
                    "{}/{file} line {}: wider than {WIDTH}",
                    dir.display(),
                    i + 1
                ));
            }
            if file.ends_with(".jsonl") && serde_json::from_str::<serde_json::Value>(line).is_err()
            {
                failures.push(format!("{}/{file}: not JSON: {line}", dir.display()));
            }
        }
        failures.extend(golden_file::compare(&dir.join(file), &got));
    }
    failures
}

#[test]
fn scenarios_match_their_expected_outputs() {
    let failures: Vec<String> = cases().iter().flat_map(|dir| run_case(dir)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README's example is the examples/whatif folder itself, so it stays runnable.
#[test]
fn readme_example_is_the_examples_folder() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/whatif");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whatif/examples");
    for file in fs::read_dir(&examples).expect("examples/whatif") {
        let path = file.expect("entry").path();
        let name = path.file_name().expect("name");
        assert_eq!(
            fs::read(&path).expect("example"),
            fs::read(case.join(name)).unwrap_or_default(),
            "tests/whatif/examples/{} must equal examples/whatif/{0} (copy it over)",
            name.to_string_lossy()
        );
    }
}

/// docs/simulate.md shows the examples case's table as it is.
#[test]
fn docs_show_the_examples_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("../../docs/simulate.md")).expect("docs/simulate.md");
    let table = fs::read_to_string(root.join("tests/whatif/examples/table.txt")).expect("table");
    assert!(
        doc.contains(&format!("```\n{table}```\n")),
        "docs/simulate.md's --apply example differs from tests/whatif/examples/table.txt"
    );
}

/// A manifest file that cannot be read is named as one.
#[test]
fn unreadable_manifest_is_named() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whatif/examples");
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["simulate", "--cluster"])
        .arg(dir.join("cluster.yaml"))
        .args(["--apply", "no-such-manifest.yaml"])
        .output()
        .expect("run berth");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: --apply: cannot read manifest file no-such-manifest.yaml: "),
        "{stderr}"
    );
}

/// The per-manifest JSON line answers the questions on its own: does it fit, where, why not.
#[test]
fn json_summary_counts_match_the_pod_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whatif/examples");
    let out = simulate(&dir, &["--output", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let (last, pods) = lines.split_last().expect("lines");
    let manifests = last["apply"].as_array().expect("apply section");
    for m in manifests {
        let mine: Vec<&serde_json::Value> = m["pods"].as_array().expect("pods").iter().collect();
        let placed = mine.iter().filter(|p| !p["node"].is_null()).count();
        assert_eq!(m["scheduled"], placed, "{m}");
        assert_eq!(m["created"], mine.len(), "{m}");
        for p in mine {
            let line = pods
                .iter()
                .find(|l| l["pod"] == p["pod"])
                .expect("pod line");
            assert_eq!(line["node"], p["node"], "{m}");
        }
        assert_eq!(m["fits"], m["unschedulable"] == 0, "{m}");
    }
}
