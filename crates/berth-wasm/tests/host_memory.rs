//! Hostile guests must not make the host allocate: a host function whose length argument is
//! the guest's choice checks it against guest memory before doing any work, and copies at
//! most what it keeps. Measured as the growth of this process's peak RSS (`VmHWM`) around
//! one scheduling cycle; one test in its own binary, so nothing else moves the peak.

mod common;

use berth_engine::testkit::{cluster, node, pod};
use common::{Plugins, schedule};

/// `random_get(0, 256 MiB)` from a 64 KiB guest: the host used to allocate and fill the
/// whole length before finding that it does not fit.
const RANDOM_BOMB: &str = r#"(module
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "berth_abi_version") (result i32) (i32.const 1))
  (func (export "berth_filter") (param i32) (result i32)
    (drop (call $random (i32.const 0) (i32.const 0x10000000)))
    (i32.const 0)))"#;

/// A 1 MiB guest writing 256 iovecs that all cover its whole memory to stdout, then logging
/// its whole memory: the host used to concatenate 256 MiB before the 8 KiB log budget.
const WRITE_BOMB: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "berth" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 16)
  (func (export "berth_abi_version") (result i32) (i32.const 1))
  (func (export "berth_filter") (param i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (i32.const 256)))
        (i32.store (i32.shl (local.get $i) (i32.const 3)) (i32.const 0))
        (i32.store (i32.add (i32.shl (local.get $i) (i32.const 3)) (i32.const 4)) (i32.const 0x100000))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (drop (call $write (i32.const 1) (i32.const 0) (i32.const 256) (i32.const 0xFFFF0)))
    (call $log (i32.const 1) (i32.const 0) (i32.const 0x100000))
    (i32.const 0)))"#;

/// Peak resident set of this process in KiB, reset first when the kernel allows it.
fn reset_peak_rss() -> u64 {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    peak_rss_kib()
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn hostile_guests_cost_the_host_no_memory() {
    let plugins = Plugins::new(&[
        ("random", wat::parse_str(RANDOM_BOMB).expect("wat")),
        ("write", wat::parse_str(WRITE_BOMB).expect("wat")),
    ]);
    let cases = [
        (
            "random",
            "0/1 nodes are available: 1 plugin P1 failed: guest pointer 0x0+268435456 is outside its memory (65536 bytes).",
        ),
        ("write", "a"),
    ];
    let mut grown = Vec::new();
    for (module, want) in cases {
        let policy = format!(
            r#"{{"predicates": [{{"name": "P1", "argument": {{"wasm": {{"module": "{module}.wasm"}}}}}}], "priorities": []}}"#
        );
        let mut sched = plugins.scheduler(&policy).expect("scheduler");
        let mut cl = cluster(vec![node("a").build()], vec![]);
        let before = reset_peak_rss();
        let started = std::time::Instant::now();
        let got = schedule(&mut cl, &mut sched, vec![pod("p").build()]);
        let elapsed = started.elapsed();
        let grown_kib = peak_rss_kib().saturating_sub(before);
        eprintln!("{module}: peak RSS grew by {grown_kib} KiB in {elapsed:?}");
        assert_eq!(got, [want], "{module}");
        grown.push((module, grown_kib));
    }
    assert!(
        grown.iter().all(|(_, kib)| *kib < 16 * 1024),
        "the host's peak RSS grew for one guest call (KiB): {grown:?}"
    );
}
