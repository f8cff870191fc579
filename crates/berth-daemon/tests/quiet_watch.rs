//! The file watch of hot reload costs nothing while the files are quiet. In a test binary of
//! its own: it counts the wake-ups of every reload thread in the process.

#[path = "../../berth-wasm/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use berth_daemon::reload::{PolicyInput, ReloadOptions, Reloader};
use common::{Plugins, fixture, wait_for};

const POLICY: &str = r#"{"predicates": [{"name": "GpuFit", "argument": {"wasm": {"module": "modes.wasm"}}}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}"#;

/// Context switches of every thread of this process but the calling one (from /proc): how
/// often the others woke.
fn wake_ups_of_other_threads() -> u64 {
    let me = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    let me = me.file_name().expect("a thread id");
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let task = task.expect("task").path();
        if task.file_name() == Some(me) {
            continue;
        }
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        total += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

/// A watch with nothing changing sleeps: no thread of the process wakes while the files are
/// quiet (a ticking debouncer woke every quarter of the debounce time; the epoch ticker
/// sleeps once the plugins' load-time calls are over), and the rescan's own reads of the
/// files set off no further rescan.
#[test]
fn a_quiet_watch_never_wakes() {
    let plugins = Plugins::new(&[("modes", fixture("modes"))]);
    let policy_path = plugins.dir.path().join("policy.json");
    std::fs::write(&policy_path, POLICY).expect("policy");
    let debounce = Duration::from_millis(20);
    let (reloader, _sched) = Reloader::start(
        plugins.host.clone(),
        PolicyInput::File(policy_path.to_path_buf()),
        Default::default(),
        ReloadOptions {
            debounce,
            ..ReloadOptions::default()
        },
    )
    .expect("reloader");
    // Settled: the reload thread has blocked and the epoch ticker's linger after the
    // plugins' load-time calls is over.
    std::thread::sleep(Duration::from_millis(500));
    let before = wake_ups_of_other_threads();
    // Fifty debounce periods.
    std::thread::sleep(debounce * 50);
    assert_eq!(
        wake_ups_of_other_threads(),
        before,
        "woke with nothing changed"
    );
    assert_eq!(reloader.status().rescans, 0);

    // One change: one rescan, then quiet again although the rescan opened every file.
    std::fs::write(&policy_path, POLICY).expect("policy");
    wait_for("the rescan", || reloader.status().rescans == 1);
    std::thread::sleep(debounce * 50);
    assert_eq!(reloader.status().rescans, 1, "{:?}", reloader.status());
}
