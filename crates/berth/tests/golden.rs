//! Golden tests of `berth simulate`'s output: the table, the `--explain` table, the
//! `--explain --output json` lines and the `--report` page, byte for byte. Each case is a
//! folder under `tests/golden/`:
//! - `cluster.yaml` (optional): the cluster, given on standard input (`--cluster -`), else
//!   the bundled example cluster;
//! - `policy.json` (optional): the policy, else the bundled OpenShift policy;
//! - `summary.txt`, `explain.txt`, `explain.jsonl`, `report.html`: the expected outputs
//!   (`report.html` is checked in a browser by `report.rs`; its inline style and script,
//!   the same in every report, are kept as the names of their files, while the page's
//!   Content Security Policy still pins them by their SHA-256 hashes).
//!
//! Set `BERTH_BLESS=1` to rewrite the expected files from the current output (then review
//! the diff: a blessed file is a claim about correct behaviour).

#[path = "support/golden_file.rs"]
mod golden_file;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The terminal width the tables are laid out for.
const WIDTH: usize = 100;

/// `berth simulate` on a case with extra arguments; its standard output.
fn simulate(dir: &Path, extra: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_berth"));
    cmd.arg("simulate").args(extra);
    let cluster = fs::read(dir.join("cluster.yaml")).ok();
    if cluster.is_some() {
        cmd.args(["--cluster", "-"]);
    }
    // Run in the case's folder, so the report names the policy by a path that is the same
    // on every machine.
    cmd.current_dir(dir);
    if dir.join("policy.json").exists() {
        cmd.args(["--policy", "policy.json"]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run berth");
    let mut stdin = child.stdin.take().expect("stdin");
    if let Some(text) = &cluster {
        stdin.write_all(text).expect("write the cluster to berth");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("berth output");
    assert!(
        out.status.success(),
        "{} {extra:?}: exit {}: {}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("golden folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 2, "golden cases under {}", root.display());
    dirs
}

/// The page `berth simulate --report` writes for a case, its inline style and script
/// replaced by the names of their files.
fn report(dir: &Path) -> String {
    let out = tempfile::tempdir().expect("temp dir");
    let html = out.path().join("report.html");
    let html_arg = html.to_str().expect("UTF-8 temp path");
    simulate(dir, &["--report", html_arg]);
    let mut page = fs::read_to_string(&html).expect("the report");
    for asset in ["report.css", "report.js"] {
        let path = format!("src/simulate/report/{asset}");
        let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path))
            .expect("report asset");
        assert_eq!(page.matches(&text).count(), 1, "{path} inline once");
        page = page.replacen(&text, &format!("/* {path} */"), 1);
    }
    page
}

#[test]
fn outputs_match_their_golden_files() {
    let mut failures = Vec::new();
    for dir in cases() {
        let outputs = [
            ("report.html", report(&dir)),
            ("summary.txt", simulate(&dir, &[])),
            ("explain.txt", simulate(&dir, &["--explain"])),
            (
                "explain.jsonl",
                simulate(&dir, &["--explain", "--output", "json"]),
            ),
        ];
        for (file, got) in &outputs {
            if file.ends_with(".html") {
                // Every string from the cluster stays inside the escaped data blob.
                if got.matches("<script").count() != 2 {
                    failures.push(format!(
                        "{}/{file}: scripts besides the page's own",
                        dir.display()
                    ));
                }
            } else if file.ends_with(".txt") {
                for (i, line) in got.lines().enumerate() {
                    let width = line.chars().count();
                    if width > WIDTH {
                        failures.push(format!(
                            "{}/{file} line {}: {width} columns, more than {WIDTH}:\n{line}",
                            dir.display(),
                            i + 1
                        ));
                    }
                }
            } else {
                for line in got.lines() {
                    if let Err(e) = serde_json::from_str::<serde_json::Value>(line) {
                        failures.push(format!("{}/{file}: not JSON ({e}): {line}", dir.display()));
                    }
                }
            }
            failures.extend(golden_file::compare(&dir.join(file), got));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--pod` reports a subset of the very same decisions: every pod is still scheduled in
/// order, so later pods see earlier placements.
#[test]
fn pod_filter_shows_the_same_decisions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/rejections-tie-constant");
    let all = simulate(&dir, &["--explain", "--output", "json"]);
    let picked = ["default/huge", "default/web-0"];
    let some = simulate(
        &dir,
        &[
            "--explain",
            "--output",
            "json",
            "--pod",
            picked[0],
            "--pod",
            picked[1],
        ],
    );
    let want: Vec<&str> = all
        .lines()
        .filter(|l| {
            picked
                .iter()
                .any(|p| l.starts_with(&format!("{{\"pod\":\"{p}\"")))
        })
        .collect();
    assert_eq!(want.len(), 2, "{all}");
    assert_eq!(some.lines().collect::<Vec<_>>(), want);
    let table = simulate(&dir, &["--pod", "default/pinned"]);
    assert!(table.contains("default/pinned"), "{table}");
    assert!(!table.contains("default/huge"), "{table}");
    assert!(
        table.contains("3 pods: 2 scheduled, 1 unschedulable (1 shown, --pod)"),
        "{table}"
    );
}
