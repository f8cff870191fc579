//! Every command README.md shows is run, so the guide cannot go stale.
//!
//! Each fenced block names its language; the `sh` blocks are commands. A block is run with
//! bash (`-euo pipefail`) in a scratch directory that links the repository's top-level
//! entries (so files the commands write land there), with this test build's `berth` first on
//! `PATH`; `cargo run --release --` is read as that `berth`, which it builds from the same
//! sources. A block that cannot run here says so on the line before it, as an HTML comment
//! this test recognises and reports:
//!
//! - `<!-- readme-test: skip (REASON) -->`: not run, for the reason given (a real cluster,
//!   a registry);
//! - `<!-- readme-test: run by PATH -->`: run by another test or script, whose file must
//!   contain every line of the block as written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one block may run (debug build of `berth` on small inputs).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);
const MARK: &str = "<!-- readme-test:";
/// The quick start: the bundled simulate and the test command, nothing else.
const QUICK_START: [&str; 2] = ["cargo run --release -- simulate", "bash scripts/test.sh"];

#[derive(Debug, PartialEq)]
enum Annotation {
    Run,
    Skip(String),
    RunBy(String),
}

#[derive(Debug)]
struct Block {
    line: usize,
    lang: String,
    text: String,
    annotation: Annotation,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn annotation(line: &str, at: usize) -> Annotation {
    let Some(rest) = line.trim().strip_prefix(MARK) else {
        return Annotation::Run;
    };
    let body = rest
        .strip_suffix("-->")
        .unwrap_or_else(|| panic!("README.md:{at}: unterminated readme-test comment"))
        .trim();
    if let Some(reason) = body
        .strip_prefix("skip (")
        .and_then(|r| r.strip_suffix(')'))
    {
        assert!(
            !reason.is_empty(),
            "README.md:{at}: a skip names its reason"
        );
        Annotation::Skip(reason.to_string())
    } else if let Some(path) = body.strip_prefix("run by ") {
        Annotation::RunBy(path.to_string())
    } else {
        panic!("README.md:{at}: unknown readme-test annotation {body:?}");
    }
}

/// The fenced blocks of a markdown text, with the annotation on the line before each.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let indent = lines[i].len() - trimmed.len();
            let before = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .copied()
                .unwrap_or("");
            let start = i + 1;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                body.push(lines[i].get(indent..).unwrap_or(lines[i].trim_start()));
                i += 1;
            }
            assert!(i < lines.len(), "README.md:{start}: unclosed code block");
            out.push(Block {
                line: start,
                lang: lang.trim().to_string(),
                text: body.join("\n") + "\n",
                annotation: annotation(before, start - 1),
            });
        }
        i += 1;
    }
    out
}

/// Runs a block with a deadline; returns (success, stdout, stderr).
fn run(block: &str, dir: &Path, path_var: &str) -> (bool, String, String) {
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", block])
        .current_dir(dir)
        .env("PATH", path_var)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });
    let deadline = Instant::now() + BLOCK_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill the block's bash, by its pid");
            panic!("block ran past {BLOCK_TIMEOUT:?}:\n{block}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.success(),
        out_reader.join().unwrap().expect("stdout"),
        err_reader.join().unwrap().expect("stderr"),
    )
}

#[test]
fn every_readme_command_runs() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let blocks = blocks(&readme);
    let scratch = tempfile::tempdir().expect("scratch dir");
    for entry in std::fs::read_dir(&root).expect("repository root") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if name == ".git" || name == "target" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), scratch.path().join(&name)).expect("link");
    }
    let berth = Path::new(env!("CARGO_BIN_EXE_berth"));
    let path_var = format!(
        "{}:{}",
        berth.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut ran, mut elsewhere, mut skipped) = (0, Vec::new(), Vec::new());
    for block in &blocks {
        assert!(
            !block.lang.is_empty(),
            "README.md:{}: a fenced block names its language (sh for commands)",
            block.line
        );
        assert!(
            !matches!(block.lang.as_str(), "bash" | "shell" | "console" | "zsh"),
            "README.md:{}: commands go in `sh` blocks, so this test finds them",
            block.line
        );
        if block.lang != "sh" {
            assert_eq!(
                block.annotation,
                Annotation::Run,
                "README.md:{}: readme-test annotations belong on sh blocks",
                block.line
            );
            continue;
        }
        match &block.annotation {
            Annotation::Skip(reason) => skipped.push(format!(
                "README.md:{}: {} ({reason})",
                block.line,
                block.text.trim()
            )),
            Annotation::RunBy(path) => {
                let file = std::fs::read_to_string(root.join(path))
                    .unwrap_or_else(|e| panic!("README.md:{}: run by {path}: {e}", block.line));
                for line in block.text.lines().filter(|l| !l.trim().is_empty()) {
                    assert!(
                        file.contains(line.trim()),
                        "README.md:{}: {path} does not run {:?}",
                        block.line,
                        line.trim()
                    );
                }
                elsewhere.push(format!(
                    "README.md:{}: {} (by {path})",
                    block.line,
                    block.text.trim()
                ));
            }
            Annotation::Run => {
                let script = block.text.replace("cargo run --release -- ", "berth ");
                let (ok, stdout, stderr) = run(&script, scratch.path(), &path_var);
                assert!(
                    ok,
                    "README.md:{}: failed:\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                    block.line, block.text
                );
                assert!(
                    !stdout.trim().is_empty(),
                    "README.md:{}: printed nothing:\n{}",
                    block.line,
                    block.text
                );
                // A newcomer's first command warns about nothing (other examples may:
                // a WASM plugin entry is a Berth extension kube-scheduler would refuse).
                if block.text.trim() == QUICK_START[0] {
                    assert_eq!(
                        stderr, "",
                        "README.md:{}: the quick start warns",
                        block.line
                    );
                }
                println!("ran README.md:{}: {}", block.line, block.text.trim());
                ran += 1;
            }
        }
    }
    for line in &elsewhere {
        println!("run by another test: {line}");
    }
    for line in &skipped {
        println!("not run: {line}");
    }
    println!(
        "README.md: {ran} command block(s) run, {} run by other tests, {} not run",
        elsewhere.len(),
        skipped.len()
    );
    assert!(ran >= 5, "only {ran} README blocks ran: {blocks:?}");
}

/// The quick start is exactly the two commands a fresh machine needs: the bundled simulate
/// (run above, warning about nothing) and the test command.
#[test]
fn the_quick_start_is_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let quick = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Quick start section");
    let commands: Vec<Block> = blocks(quick)
        .into_iter()
        .filter(|b| b.lang == "sh")
        .collect();
    let texts: Vec<&str> = commands.iter().map(|b| b.text.trim()).collect();
    assert_eq!(
        texts, QUICK_START,
        "the quick start is exactly two commands: the bundled simulate and the test command"
    );
}
