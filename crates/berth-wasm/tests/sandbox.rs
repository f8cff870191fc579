//! The plugin sandbox's bounds on what a module may hold and on the files it is read from:
//! one memory budget for all of an instance's memories and tables, regular files only with a
//! size cap, binary modules only and no file content echoed in errors.

mod common;

use std::time::Duration;

use berth_wasm::MAX_MODULE_BYTES;
use common::Plugins;

fn policy(module: &str, extra: &str) -> String {
    format!(
        r#"{{"predicates": [{{"name": "P1", "argument": {{"wasm": {{"module": "{module}"{extra}}}}}}}], "priorities": []}}"#
    )
}

/// A filter module whose other declarations are `decls`.
fn module_with(decls: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module (memory (export "memory") 16) {decls}
          (func (export "berth_abi_version") (result i32) (i32.const 1))
          (func (export "berth_filter") (param i32) (result i32) (i32.const 0)))"#
    ))
    .expect("wat")
}

#[test]
fn memories_and_tables_share_one_budget() {
    let one_mib = r#", "memoryLimitMiB": 1"#;
    let cases = [
        // The exported 1 MiB memory alone fits the 1 MiB budget.
        ("fits", module_with(""), None),
        // Three 1 MiB memories: each fitted the cap on its own.
        (
            "memories",
            module_with("(memory 16) (memory 16)"),
            Some("memory limit of 1 MiB exceeded"),
        ),
        // Eight tables of 2^20 funcrefs: tables counted against nothing.
        (
            "tables",
            module_with(&"(table 1048576 funcref)".repeat(8)),
            Some("memory limit of 1 MiB exceeded"),
        ),
        // More memories than any guest needs, even empty ones.
        (
            "many-memories",
            module_with(&"(memory 0)".repeat(8)),
            Some("the plugin failed to start"),
        ),
    ];
    let modules: Vec<(&str, Vec<u8>)> = cases.iter().map(|(n, b, _)| (*n, b.clone())).collect();
    let plugins = Plugins::new(&modules);
    let mut wrong = Vec::new();
    for (name, _, want) in cases {
        let got = plugins.scheduler(&policy(&format!("{name}.wasm"), one_mib));
        let ok = match (&got, want) {
            (Ok(_), None) => true,
            (Err(error), Some(want)) => {
                error.contains("the plugin failed to start") && error.contains(want)
            }
            _ => false,
        };
        if !ok {
            wrong.push(format!("{name}: {:?}", got.err()));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn modules_are_read_only_from_bounded_regular_files() {
    let plugins = Plugins::new(&[]);
    let dir = plugins.dir.path();
    let fifo = dir.join("fifo.wasm");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.wasm")).expect("symlink");
    let big = std::fs::File::create(dir.join("big.wasm")).expect("create");
    big.set_len(MAX_MODULE_BYTES + 1).expect("sparse file");

    // A FIFO used to block the loader for ever (on the reload thread in `berth run`).
    let (tx, rx) = std::sync::mpsc::channel();
    let host = plugins.host.clone();
    let fifo_policy = policy("fifo.wasm", "");
    std::thread::spawn(move || {
        let policy = berth_policy::parse(&fifo_policy, "policy.json").expect("policy");
        let got = berth_engine::scheduler_with_plugins(
            &policy,
            berth_engine::CycleConfig::default(),
            &*host,
        )
        .err()
        .map(|e| e.to_string());
        let _ = tx.send(got);
    });
    let got = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(got) => got.unwrap_or_default(),
        Err(_) => {
            // Release the blocked reader before failing.
            let _ = std::fs::write(&fifo, b"");
            panic!("loading a FIFO module blocked for 10 s");
        }
    };
    assert!(
        got.ends_with("fifo.wasm: cannot read the module: it is a FIFO, not a regular file (symlinks to regular files are followed)"),
        "{got}"
    );

    let cases = [
        (
            "zero.wasm",
            "zero.wasm: cannot read the module: it is a character device, not a regular file",
        ),
        (
            "big.wasm",
            "big.wasm: cannot read the module: it is 67108865 bytes, over the limit of 67108864 bytes",
        ),
    ];
    for (module, want) in cases {
        let error = plugins
            .scheduler(&policy(module, ""))
            .err()
            .unwrap_or_default();
        assert!(error.contains(want), "{module}: {error}");
    }
}

#[test]
fn errors_never_quote_the_file() {
    let plugins = Plugins::new(&[]);
    let dir = plugins.dir.path();
    let secret = dir.join("secret.env");
    std::fs::write(&secret, "(module TOKEN=hunter2\nPASSWORD=swordfish\n").expect("write");
    std::os::unix::fs::symlink(&secret, dir.join("leak.wasm")).expect("symlink");
    let error = plugins
        .scheduler(&policy("leak.wasm", ""))
        .err()
        .unwrap_or_default();
    assert!(
        !error.contains("hunter2") && !error.contains("TOKEN") && !error.contains("swordfish"),
        "the error quotes the file: {error}"
    );
    assert!(
        error.contains("leak.wasm: not a valid WebAssembly module: the file does not start with the binary WebAssembly magic bytes"),
        "{error}"
    );
}

/// The sum over plugins of instances x memoryLimitMiB stays within the host's budget: pools
/// shrink to fit, and a plugin that cannot get one instance is refused with the figures.
#[test]
fn plugin_instances_fit_the_memory_budget() {
    let threads = rayon::current_num_threads() as u64;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("fits.wasm"), module_with("")).expect("write");
    let host = berth_wasm::PluginHost::new(common::runtime(), dir.path())
        .with_memory_budget(Some((threads + 1) << 20));
    let entry = |name: &str| {
        format!(
            r#"{{"name": "{name}", "argument": {{"wasm": {{"module": "fits.wasm", "memoryLimitMiB": 1}}}}}}"#
        )
    };
    let build = |names: &[&str]| {
        let entries: Vec<String> = names.iter().map(|n| entry(n)).collect();
        let text = format!(
            r#"{{"predicates": [{}], "priorities": []}}"#,
            entries.join(",")
        );
        let policy = berth_policy::parse(&text, "policy.json").expect("policy");
        berth_engine::scheduler_with_plugins(&policy, berth_engine::CycleConfig::default(), &host)
            .map_err(|e| e.to_string())
    };
    let two = build(&["P1", "P2"]).expect("two plugins fit");
    let instances: Vec<usize> = host.plugins().iter().map(|p| p.instances()).collect();
    assert_eq!(instances, [threads as usize, 1]);
    assert_eq!(host.reserved_bytes(), (threads + 1) << 20);
    drop(two);
    let error = build(&["P1", "P2", "P3"])
        .err()
        .expect("a third does not fit");
    assert!(
        error.starts_with("predicate P3: ") && error.contains(&format!(
            "one instance may hold memoryLimitMiB = 1 MiB, but only 0 MiB of the plugin memory budget of {} MiB is left ({} MiB held by other plugins)",
            threads + 1,
            threads + 1
        )),
        "{error}"
    );
    assert_eq!(
        host.reserved_bytes(),
        0,
        "the refused scheduler's plugins are gone"
    );
}
