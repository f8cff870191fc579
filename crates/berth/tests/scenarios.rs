//! Scenario tests: `berth simulate --output json` on small clusters, against the expected
//! placements and messages. Each case is a folder under `tests/scenarios/`:
//! - `cluster.yaml`: the cluster, as kubectl prints it;
//! - `policy.json` (optional): the policy, else the bundled OpenShift policy;
//! - `args` (optional): extra command-line arguments, whitespace-separated;
//! - `expected.jsonl`: the exact output lines.
//!
//! Set `BERTH_BLESS=1` to rewrite `expected.jsonl` from the current output (then review the
//! diff: a blessed file is a claim about correct behaviour).

use std::fs;
use std::path::Path;
use std::process::Command;

fn run_case(dir: &Path) -> Result<(), String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_berth"));
    cmd.args(["simulate", "--output", "json", "--cluster"])
        .arg(dir.join("cluster.yaml"));
    let policy = dir.join("policy.json");
    if policy.exists() {
        cmd.arg("--policy").arg(&policy);
    }
    if let Ok(args) = fs::read_to_string(dir.join("args")) {
        cmd.args(args.split_whitespace());
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "exit {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let got = String::from_utf8_lossy(&out.stdout).to_string();
    let expected_path = dir.join("expected.jsonl");
    if std::env::var_os("BERTH_BLESS").is_some() {
        fs::write(&expected_path, &got).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let want = fs::read_to_string(&expected_path)
        .map_err(|e| format!("{}: {e}", expected_path.display()))?;
    let (got_lines, want_lines): (Vec<_>, Vec<_>) = (got.lines().collect(), want.lines().collect());
    if got_lines == want_lines {
        return Ok(());
    }
    let mut diff = String::new();
    for i in 0..got_lines.len().max(want_lines.len()) {
        let (g, w) = (got_lines.get(i), want_lines.get(i));
        if g != w {
            diff.push_str(&format!(
                "line {}:\n  want {}\n  got  {}\n",
                i + 1,
                w.unwrap_or(&"<none>"),
                g.unwrap_or(&"<none>")
            ));
        }
    }
    Err(diff)
}

#[test]
fn scenarios() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .expect("scenario folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no scenarios under {}", root.display());
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            run_case(d).err().map(|e| {
                format!(
                    "{}:\n{e}",
                    d.file_name().unwrap_or_default().to_string_lossy()
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
