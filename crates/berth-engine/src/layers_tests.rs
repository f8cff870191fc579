//! The engine's import directions, checked: its modules stand in layers, lowest first, and a
//! module may import (a `use crate::...` or any `crate::` path in its code) only its own
//! submodules and modules of lower layers, never one of its own layer or above. Upstream
//! enforces its import directions with `.import-restrictions`; this test fails the test
//! command on any import that runs back up, naming the file and the import.
//!
//! Test code (`#[cfg(test)] mod tests { ... }`, `*_tests.rs`, `tests.rs`, `testkit.rs`) may
//! import anything, and `lib.rs` only declares and re-exports.
//!
//! The boundaries around the engine are checked here too: its public modules are the ones
//! [`PUBLIC_MODULES`] lists, and the vocabulary crates below it (berth-model, berth-policy)
//! depend on no Berth crate, so they never pull in the engine.

use std::path::Path;

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // berth-model's modules, re-exported at the root.
    &["labels", "resources", "types", "model"],
    &["health"],
    &["podinfo"],
    &["cluster"],
    &["nominator", "framework", "explain", "diagnosis"],
    &["rules", "classes", "extender"],
    &["profile"],
    &["filters"],
    &["preemption"],
    &["scheduler"],
    &["schedule_one"],
    &["registry", "simulation"],
];

/// One import that runs back up: the file, the module it belongs to and the module it
/// imports.
#[derive(Debug, PartialEq, Eq)]
struct BackEdge {
    file: String,
    from: String,
    to: String,
}

/// The layer of `module`, if it has one.
fn layer_of(layers: &[&[&str]], module: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&module))
}

/// The top-level module a file under `src/` belongs to (`scheduler/feasible.rs` ->
/// `scheduler`), or None for files the check leaves alone.
fn module_of(file: &str) -> Option<&str> {
    let name = file.rsplit('/').next().unwrap_or(file);
    if file == "lib.rs" || file == "testkit.rs" || name == "tests.rs" || name.ends_with("_tests.rs")
    {
        return None;
    }
    let first = file.split('/').next().unwrap_or(file);
    Some(first.strip_suffix(".rs").unwrap_or(first))
}

/// The file's code without its inline test module and without comments.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .map(|l| l.trim_start())
                .find(|l| !l.starts_with("#["))
                .is_some_and(|l| {
                    // A test module another file's tests share is `pub(super)` or the like.
                    let l = l
                        .strip_prefix("pub(")
                        .and_then(|l| l.split_once(") "))
                        .map_or(l, |(_, l)| l);
                    l.starts_with("mod ") && l.ends_with('{')
                })
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The first segments of every `crate::` path in `code`, grouped imports
/// (`crate::{a, b::c}`) expanded.
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `berth_engine::crate::` never occurs; a preceding identifier character means a
        // longer name such as `my_crate::`.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if depth == 1 && item_start && !c.is_whitespace() => {
                        found.push(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found
}

/// Every import of `files` (path under `src/`, text) that runs back up `layers`, and
/// every module in no layer (as an edge to "?").
fn back_edges(layers: &[&[&str]], files: &[(String, String)]) -> Vec<BackEdge> {
    let mut edges = Vec::new();
    for (file, text) in files {
        let Some(from) = module_of(file) else {
            continue;
        };
        let Some(from_layer) = layer_of(layers, from) else {
            edges.push(BackEdge {
                file: file.clone(),
                from: from.to_string(),
                to: "?".to_string(),
            });
            continue;
        };
        for to in crate_paths(&code_of(text)) {
            if to == from {
                continue;
            }
            // A root re-export (`crate::Scheduler`) hides the direction: such paths count
            // as running back up.
            let up = layer_of(layers, &to).is_none_or(|l| l >= from_layer);
            if up {
                edges.push(BackEdge {
                    file: file.clone(),
                    from: from.to_string(),
                    to,
                });
            }
        }
    }
    edges
}

/// Every `.rs` file under `dir`, as (path relative to `root`, text).
fn read_sources(root: &Path, dir: &Path, into: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("the engine's sources")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under src");
            let text = std::fs::read_to_string(&path).expect("a source file");
            into.push((relative.to_string_lossy().replace('\\', "/"), text));
        }
    }
}

#[test]
fn no_import_runs_back_up() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    assert!(files.len() > 20, "found only {} source files", files.len());
    let edges = back_edges(LAYERS, &files);
    let report: Vec<String> = edges
        .iter()
        .map(|e| match e.to.as_str() {
            "?" => format!(
                "crates/berth-engine/src/{}: module `{}` is in no layer of \
                 layers_tests.rs's LAYERS; place it there",
                e.file, e.from
            ),
            to => format!(
                "crates/berth-engine/src/{}: `crate::{to}` runs back up: `{}` (layer {}) may \
                 import only modules of lower layers (see LAYERS in layers_tests.rs)",
                e.file,
                e.from,
                layer_of(LAYERS, &e.from).unwrap_or(0)
            ),
        })
        .collect();
    assert!(report.is_empty(), "\n{}\n", report.join("\n"));
}

#[test]
fn the_check_finds_back_edges() {
    let layers: &[&[&str]] = &[&["model"], &["framework", "explain"], &["scheduler"]];
    let file = |path: &str, text: &str| (path.to_string(), text.to_string());
    let files = vec![
        // Downward, own submodules, comments and the inline test module are fine.
        file(
            "scheduler/feasible.rs",
            "use crate::framework::NodeCheck;\nuse crate::scheduler::Walk;\n\
             // crate::nowhere\n#[cfg(test)]\nmod tests {\n    use crate::nowhere::X;\n}\n",
        ),
        // Up a layer, grouped, inline and through the root all run back up.
        file(
            "model.rs",
            "use crate::{explain::Explanation, framework};\n",
        ),
        file(
            "framework.rs",
            "fn f() -> crate::scheduler::Decision { todo!() }\n",
        ),
        file(
            "explain.rs",
            "use crate::Scheduler;\nuse crate::framework::Reason;\n",
        ),
        file(
            "scheduler/select.rs",
            "use crate::framework::highest;\n#[cfg(test)]\npub(super) mod tests {\n    \
             use crate::nowhere::X;\n}\n",
        ),
        file("newcomer.rs", "use crate::model::Pod;\n"),
        file("scheduler_tests.rs", "use crate::scheduler::*;\n"),
    ];
    let got: Vec<(String, String, String)> = back_edges(layers, &files)
        .into_iter()
        .map(|e| (e.file, e.from, e.to))
        .collect();
    let want = [
        ("model.rs", "model", "explain"),
        ("model.rs", "model", "framework"),
        ("framework.rs", "framework", "scheduler"),
        ("explain.rs", "explain", "Scheduler"),
        ("explain.rs", "explain", "framework"),
        ("newcomer.rs", "newcomer", "?"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(f, a, b)| (f.to_string(), a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
}

/// The engine's public namespaces: every other module is private and what other crates use
/// of it is re-exported at the root, so a module made public is a deliberate change of the
/// API, made here too (lib.rs says why each of these is public).
const PUBLIC_MODULES: &[&str] = &[
    "extender",
    "framework",
    "health",
    "rules",
    "simulation",
    "testkit",
];

#[test]
fn public_modules_are_the_declared_ones() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("lib.rs");
    let public: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert_eq!(public, PUBLIC_MODULES, "the `pub mod`s of lib.rs");
    assert!(
        !lib.lines().any(|l| l.trim().starts_with("pub(crate) mod")),
        "lib.rs: a module is either public (PUBLIC_MODULES) or private"
    );
}

/// The dependencies on other crates of the workspace that `crate_dir`'s Cargo.toml declares
/// (`[dependencies]`, `[dev-dependencies]` and `[build-dependencies]`).
fn berth_dependencies(crate_dir: &str) -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("a crate's Cargo.toml");
    let mut in_dependencies = false;
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.ends_with("dependencies]");
        } else if in_dependencies && line.starts_with("berth") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

/// The vocabulary crates stand below the engine: Cargo refuses a cycle, and this keeps them
/// from depending on any other Berth crate at all (the engine, or a converter above it).
#[test]
fn vocabulary_crates_depend_on_no_berth_crate() {
    for vocabulary in ["berth-model", "berth-policy"] {
        assert_eq!(
            berth_dependencies(vocabulary),
            Vec::<String>::new(),
            "crates/{vocabulary}/Cargo.toml"
        );
    }
    assert_eq!(
        berth_dependencies("berth-engine"),
        ["berth-model", "berth-policy", "berth-engine"],
        "crates/berth-engine/Cargo.toml: the vocabulary crates (and itself, with the test kit)"
    );
}
