//! Hot reload: modules replaced while pods are being scheduled, and the file watcher picking
//! up module and policy changes (rename-on-save, partial writes, broken files, deletes).

#[path = "../../berth-wasm/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use berth_daemon::reload::{PolicyInput, ReloadOptions, Reloader};
use berth_engine::CycleConfig;
use berth_engine::model::Node;
use berth_engine::testkit::{cluster, node, pod};
use common::{Plugins, fixture, schedule, wait_for};

/// The `modes` fixture requiring label `key` instead of `gpu`.
fn requiring(key: &str) -> Vec<u8> {
    let path = std::path::Path::new(common::FIXTURES).join("modes.wat");
    let text = std::fs::read_to_string(path).expect("fixture");
    let text = text
        .replace("\"gpu\"", &format!("\"{key}\""))
        .replace("no gpu label", &format!("no {key} label"));
    wat::parse_str(text).expect("wat")
}

/// Node i carries gpu when i % 3 == 0, ssd when i % 3 == 1, neither otherwise.
fn labelled_nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            let b = node(&format!("node-{i}"))
                .cpu(64_000)
                .mem(256 << 30)
                .pods(500);
            match i % 3 {
                0 => b.label("gpu", "a100"),
                1 => b.label("ssd", "yes"),
                _ => b,
            }
            .build()
        })
        .collect()
}

fn index(name: &str) -> usize {
    name.strip_prefix("node-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not placed: {name}"))
}

const POLICY: &str = r#"{"predicates": [{"name": "GpuFit", "argument": {"wasm": {"module": "modes.wasm"}}}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}"#;

#[test]
fn module_replaced_100_times_while_scheduling() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let mut sched = plugins.scheduler(POLICY).expect("scheduler");
    let mut cl = cluster(labelled_nodes(900), vec![]);
    let (gpu, ssd) = (requiring("gpu"), requiring("ssd"));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let host = plugins.host.clone();
        let dir = plugins.dir.path().to_path_buf();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut failures = 0;
            for k in 0..100 {
                let bytes: Vec<u8> = match k % 10 {
                    // A partial write: the first half of a valid module.
                    9 => gpu[..gpu.len() / 2].to_vec(),
                    _ if k % 2 == 0 => ssd.clone(),
                    _ => gpu.clone(),
                };
                std::fs::write(dir.join("modes.wasm"), &bytes).expect("write");
                for (_, result) in host.reload_modules() {
                    failures += usize::from(result.is_err());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            done.store(true, Ordering::Relaxed);
            failures
        })
    };
    let mut placed = 0;
    while !done.load(Ordering::Relaxed) || placed < 50 {
        let got = schedule(
            &mut cl,
            &mut sched,
            vec![pod(&format!("p{placed}")).req(10, 1 << 20).build()],
        );
        let i = index(&got[0]);
        assert_ne!(
            i % 3,
            2,
            "pod {placed} on {}, which has neither label",
            got[0]
        );
        placed += 1;
    }
    let failures = writer.join().expect("writer");
    assert_eq!(failures, 10, "every partial write is rejected");
    let plugin = &plugins.host.plugins()[0];
    assert_eq!(plugin.stats().reload_failures.load(Ordering::Relaxed), 10);
    assert!(
        plugin.version() > 50,
        "versions swapped in: {}",
        plugin.version()
    );
    assert_eq!(plugin.stats().failures.load(Ordering::Relaxed), 0);
}

/// Saves like an editor: write a temporary file, then rename it over the target.
fn save(path: &std::path::Path, bytes: &[u8]) {
    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, bytes).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn watcher_reloads_modules_and_the_policy() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let policy_path = plugins.dir.path().join("policy.json");
    std::fs::write(&policy_path, POLICY).expect("policy");
    let config = CycleConfig {
        percentage_of_nodes_to_score: 100,
        ..CycleConfig::default()
    };
    let (reloader, mut sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(policy_path.to_path_buf()),
        config,
        ReloadOptions {
            debounce: Duration::from_millis(50),
            ..ReloadOptions::default()
        },
    )
    .expect("reloader");
    let mut cl = cluster(labelled_nodes(6), vec![]);
    let mut next = 0;
    let mut place = |sched: &mut berth_engine::Scheduler| {
        next += 1;
        index(&schedule(&mut cl, sched, vec![pod(&format!("p{next}")).build()])[0]) % 3
    };
    assert_eq!(place(&mut sched), 0, "gpu nodes first");

    // A new module version, saved by rename: live within a second.
    let module = plugins.dir.path().join("modes.wasm");
    save(&module, &requiring("ssd"));
    let plugin = plugins.host.plugins()[0].clone();
    let latency = wait_for("module version 2", || plugin.version() == 2);
    assert!(latency < Duration::from_secs(1), "reload took {latency:?}");
    assert_eq!(place(&mut sched), 1, "ssd nodes after the swap");

    // A broken write and a delete keep the running version.
    std::fs::write(&module, b"\0asm\x01\0\0\0\x05").expect("write");
    wait_for("a module failure", || {
        reloader.status().module_failures >= 1
    });
    std::fs::remove_file(&module).expect("delete");
    wait_for("a second module failure", || {
        reloader.status().module_failures >= 2
    });
    assert!(
        reloader
            .status()
            .last_error
            .is_some_and(|e| e.contains("modes.wasm: cannot read the module")),
        "{:?}",
        reloader.status()
    );
    assert_eq!(plugin.version(), 2);
    assert_eq!(place(&mut sched), 1, "still the last good version");

    // A new policy: built-in labelsPresence on gpu, no plugin.
    save(
        &policy_path,
        br#"{"predicates": [{"name": "NeedsGpu", "argument": {"labelsPresence": {"labels": ["gpu"], "presence": true}}}],
            "priorities": []}"#,
    );
    wait_for("the new policy", || reloader.status().policy_reloads == 1);
    let mut sched = reloader.take_scheduler().expect("a new scheduler");
    assert!(reloader.take_scheduler().is_none(), "handed over once");
    assert_eq!(place(&mut sched), 0);

    // A broken policy leaves the running one and says why.
    save(&policy_path, b"{\"predicates\": [");
    wait_for("a policy failure", || {
        reloader.status().policy_failures == 1
    });
    assert!(reloader.take_scheduler().is_none());
    let status = reloader.status();
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("policy.json: line 1")),
        "{status:?}"
    );
    assert_eq!(reloader.policy().predicates.len(), 3, "the running policy");
}

/// Writes `files` as one version of a ConfigMap volume in `dir`, the way kubelet's atomic
/// writer does: a new timestamped directory, a `..data_tmp` symlink to it renamed over
/// `..data` in one step, then the old version removed. The first call also makes the
/// user-visible names, symlinks through `..data`.
fn atomic_write(dir: &std::path::Path, version: u32, files: &[(&str, &[u8])]) {
    use std::os::unix::fs::symlink;
    let versioned = format!("..2026_11_23_10_00_0{version}.00000000{version}");
    std::fs::create_dir(dir.join(&versioned)).expect("version dir");
    for (name, bytes) in files {
        std::fs::write(dir.join(&versioned).join(name), bytes).expect("write");
    }
    let old = std::fs::read_link(dir.join("..data")).ok();
    symlink(&versioned, dir.join("..data_tmp")).expect("symlink");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("swap");
    for (name, _) in files {
        let visible = dir.join(name);
        if std::fs::symlink_metadata(&visible).is_err() {
            symlink(format!("..data/{name}"), &visible).expect("visible symlink");
        }
    }
    if let Some(old) = old {
        std::fs::remove_dir_all(dir.join(old)).expect("remove the old version");
    }
}

/// Plugins and the policy delivered in a ConfigMap volume (`binaryData` for the module):
/// kubelet's update swaps the `..data` symlink and the files users name never change, yet
/// both the module and the policy are reloaded.
#[test]
fn a_configmap_volume_update_reloads_the_module_and_the_policy() {
    let plugins = Plugins::new(&[]);
    let dir = plugins.dir.path();
    let policy_v1: &[u8] = POLICY.as_bytes();
    let gpu = fixture("modes");
    atomic_write(dir, 1, &[("policy.json", policy_v1), ("modes.wasm", &gpu)]);
    let config = CycleConfig {
        percentage_of_nodes_to_score: 100,
        ..CycleConfig::default()
    };
    let (reloader, mut sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(dir.join("policy.json").to_path_buf()),
        config,
        ReloadOptions {
            debounce: Duration::from_millis(50),
            ..ReloadOptions::default()
        },
    )
    .expect("reloader");
    let mut cl = cluster(labelled_nodes(6), vec![]);
    let mut next = 0;
    let mut place = |sched: &mut berth_engine::Scheduler| {
        next += 1;
        index(&schedule(&mut cl, sched, vec![pod(&format!("p{next}")).build()])[0]) % 3
    };
    assert_eq!(place(&mut sched), 0, "gpu nodes first");

    // Version 2 of the ConfigMap changes the module only.
    let ssd = requiring("ssd");
    atomic_write(dir, 2, &[("policy.json", policy_v1), ("modes.wasm", &ssd)]);
    let plugin = plugins.host.plugins()[0].clone();
    wait_for("module version 2", || plugin.version() == 2);
    assert_eq!(place(&mut sched), 1, "ssd nodes after the swap");
    assert_eq!(
        reloader.status().policy_reloads,
        0,
        "the policy bytes did not change"
    );

    // Version 3 changes the policy.
    let policy_v3: &[u8] = br#"{"predicates": [{"name": "NeedsGpu", "argument": {"labelsPresence": {"labels": ["gpu"], "presence": true}}}],
        "priorities": []}"#;
    atomic_write(dir, 3, &[("policy.json", policy_v3), ("modes.wasm", &ssd)]);
    wait_for("the new policy", || reloader.status().policy_reloads == 1);
    let mut sched = reloader.take_scheduler().expect("a new scheduler");
    assert_eq!(place(&mut sched), 0);
    assert_eq!(
        reloader.status().module_failures,
        0,
        "{:?}",
        reloader.status()
    );
    assert_eq!(
        reloader.status().policy_failures,
        0,
        "{:?}",
        reloader.status()
    );
}

/// A broken module or policy is rejected once per version: rescans caused by unrelated file
/// changes neither rebuild it nor count it again.
#[test]
fn rejected_versions_are_counted_once() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let policy_path = plugins.dir.path().join("policy.json");
    std::fs::write(&policy_path, POLICY).expect("policy");
    let (reloader, _sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(policy_path.to_path_buf()),
        CycleConfig::default(),
        ReloadOptions {
            debounce: Duration::from_secs(3600),
            ..ReloadOptions::default()
        },
    )
    .expect("reloader");
    let module = plugins.dir.path().join("modes.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0\x05").expect("write");
    std::fs::write(&policy_path, b"{\"predicates\": [").expect("write");
    for _ in 0..5 {
        reloader.rescan();
    }
    let status = reloader.status();
    assert_eq!(
        (
            status.rescans,
            status.module_failures,
            status.policy_failures
        ),
        (5, 1, 1),
        "{status:?}"
    );
    let plugin = &plugins.host.plugins()[0];
    assert_eq!(plugin.stats().reload_failures.load(Ordering::Relaxed), 1);
    assert!(status.last_error.is_some());

    // Another broken version, a deleted file: each a new version, counted once.
    std::fs::write(&module, b"\0asm\x01\0\0\0\x06").expect("write");
    reloader.rescan();
    reloader.rescan();
    std::fs::remove_file(&module).expect("delete");
    reloader.rescan();
    reloader.rescan();
    assert_eq!(reloader.status().module_failures, 3);

    // A good version resets it: the first broken version is new again after it.
    std::fs::write(&module, requiring("ssd")).expect("write");
    std::fs::write(&policy_path, POLICY).expect("write");
    reloader.rescan();
    assert_eq!(plugin.version(), 2);
    std::fs::write(&module, b"\0asm\x01\0\0\0\x05").expect("write");
    reloader.rescan();
    reloader.rescan();
    let status = reloader.status();
    assert_eq!(
        (
            status.module_failures,
            status.module_reloads,
            status.policy_failures
        ),
        (4, 1, 1),
        "{status:?}"
    );
}

/// A policy that parses and builds but fails the caller's check is rejected like a broken
/// one, once per version, with the check's words; one that passes is handed over.
#[test]
fn a_policy_failing_the_callers_check_is_rejected() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let policy_path = plugins.dir.path().join("policy.json");
    std::fs::write(&policy_path, POLICY).expect("policy");
    let check: berth_daemon::reload::PolicyCheck = Box::new(|policy| {
        if policy.priorities.is_empty() {
            Err("no priorities: not for this caller".into())
        } else {
            Ok(())
        }
    });
    let (reloader, _sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(policy_path.to_path_buf()),
        CycleConfig::default(),
        ReloadOptions {
            debounce: Duration::from_secs(3600),
            check: Some(check),
            ..ReloadOptions::default()
        },
    )
    .expect("reloader");
    let no_priorities = br#"{"predicates": [{"name": "PodFitsResources"}], "priorities": []}"#;
    std::fs::write(&policy_path, no_priorities).expect("write");
    reloader.rescan();
    reloader.rescan();
    let status = reloader.status();
    assert_eq!((status.policy_failures, status.policy_reloads), (1, 0));
    let expected = format!(
        "{}: no priorities: not for this caller",
        policy_path.display()
    );
    assert_eq!(status.last_error.as_deref(), Some(expected.as_str()));
    assert!(reloader.take_scheduler().is_none());
    assert_eq!(reloader.policy().priorities.len(), 1, "the running policy");

    std::fs::write(&policy_path, POLICY.replace("GpuFit", "GpuFit2")).expect("write");
    reloader.rescan();
    assert_eq!(reloader.status().policy_reloads, 1);
    assert!(reloader.take_scheduler().is_some());
}

/// The policy file is read by the parser the caller gives (`berth run --config` reads a
/// KubeSchedulerConfiguration), at start and on every reload; its errors are reported like
/// a Policy's.
#[test]
fn the_policy_file_is_read_by_the_given_parser() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let path = plugins.dir.path().join("labels.txt");
    std::fs::write(&path, "gpu").expect("file");
    // A toy format: the label keys a node must have, one policy entry for all of them.
    let parser: berth_daemon::reload::PolicyParser = Arc::new(|text: &str, source: &str| {
        let labels: Vec<&str> = text.split_whitespace().collect();
        if labels.is_empty() {
            return berth_policy::parse("", source);
        }
        let policy = serde_json::json!({"predicates": [{"name": "Labels", "argument":
            {"labelsPresence": {"labels": labels, "presence": true}}}], "priorities": []});
        berth_policy::parse(&policy.to_string(), source)
    });
    let (reloader, mut sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(path.to_path_buf()),
        CycleConfig::default(),
        ReloadOptions {
            debounce: Duration::from_millis(50),
            check: None,
            parse: parser,
        },
    )
    .expect("reloader");
    let labels = |r: &Reloader| match &r.policy().predicates.last().expect("entry").kind {
        berth_policy::PredicateKind::CheckNodeLabelPresence { labels, .. } => labels.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(labels(&reloader), ["gpu"]);
    let mut cl = cluster(labelled_nodes(6), vec![]);
    let placed = schedule(&mut cl, &mut sched, vec![pod("p1").build()]);
    assert_eq!(index(&placed[0]) % 3, 0, "a gpu node");

    save(&path, b"ssd");
    wait_for("the new file", || reloader.status().policy_reloads == 1);
    assert_eq!(labels(&reloader), ["ssd"]);
    let mut sched = reloader.take_scheduler().expect("a new scheduler");
    let placed = schedule(&mut cl, &mut sched, vec![pod("p2").build()]);
    assert_eq!(index(&placed[0]) % 3, 1, "an ssd node");

    save(&path, b" ");
    wait_for("a rejected file", || reloader.status().policy_failures == 1);
    let status = reloader.status();
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("the file is empty")),
        "{status:?}"
    );
    assert_eq!(labels(&reloader), ["ssd"], "the running policy stays");
}

/// A policy handed over by the caller (a ConfigMap's text) follows the file's rule: a version
/// that loads replaces the running one, a broken one or none at all (the ConfigMap deleted)
/// leaves it running, reported once per version; the same text again is no reload.
#[test]
fn an_offered_policy_reloads_as_a_file_does() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let (reloader, _sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::Offered {
            name: "ConfigMap kube-system/scheduler-policy".to_string(),
            text: POLICY.to_string(),
        },
        CycleConfig::default(),
        ReloadOptions {
            debounce: Duration::from_secs(3600),
            check: None,
            parse: Arc::new(berth_policy::parse),
        },
    )
    .expect("reloader");
    reloader.offer(Ok(POLICY.to_string()));
    assert_eq!(reloader.status().policy_reloads, 0, "unchanged text");
    reloader.offer(Ok("{\"predicates\": [".to_string()));
    reloader.offer(Ok("{\"predicates\": [".to_string()));
    let status = reloader.status();
    assert_eq!((status.policy_reloads, status.policy_failures), (0, 1));
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("ConfigMap kube-system/scheduler-policy")),
        "{status:?}"
    );
    reloader.offer(Err(
        "ConfigMap kube-system/scheduler-policy was deleted".to_string()
    ));
    assert_eq!(reloader.status().policy_failures, 2);
    assert!(
        reloader.take_scheduler().is_none(),
        "the running policy stays"
    );
    reloader.offer(Ok(POLICY.replace("GpuFit", "GpuFit2")));
    assert_eq!(reloader.status().policy_reloads, 1);
    assert!(reloader.take_scheduler().is_some());
    assert!(
        reloader
            .policy()
            .predicates
            .iter()
            .any(|p| p.name == "GpuFit2")
    );
}
