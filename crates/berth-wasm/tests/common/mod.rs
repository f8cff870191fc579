//! Helpers shared by the runtime tests (and berth-daemon's reload tests, which include this
//! file): plugin directories from WAT fixtures, schedulers
//! from policy text, and scheduling a batch with readable outcomes.

// Each test binary includes this module and uses a different subset of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use berth_engine::model::{Node, Pod};
use berth_engine::scheduler_with_plugins;
use berth_engine::simulation::schedule_all;
use berth_engine::{Cluster, CycleConfig, Detail, Scheduler};
use berth_wasm::{PluginHost, Runtime};

/// One runtime for the whole test binary, as in a real process.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| Runtime::new().expect("wasm engine"))
        .clone()
}

/// The WAT fixtures' directory (berth-wasm's; the daemon's reload tests share this module).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../berth-wasm/tests/fixtures");

/// A fixture's WAT text compiled to a binary module.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(FIXTURES).join(format!("{name}.wat"));
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A plugins directory holding `name.wasm` for each (name, bytes).
pub struct Plugins {
    pub dir: tempfile::TempDir,
    pub host: Arc<PluginHost>,
}

impl Plugins {
    pub fn new(modules: &[(&str, Vec<u8>)]) -> Plugins {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, bytes) in modules {
            std::fs::write(dir.path().join(format!("{name}.wasm")), bytes).expect("write module");
        }
        let host = Arc::new(PluginHost::new(runtime(), dir.path()));
        Plugins { dir, host }
    }

    /// Writes (replaces) a module file.
    pub fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir.path().join(format!("{name}.wasm")), bytes).expect("write module");
    }

    /// A scheduler for the policy text, every node considered.
    pub fn scheduler(&self, policy: &str) -> Result<Scheduler, String> {
        let policy = berth_policy::parse(policy, "policy.json").map_err(|e| e.to_string())?;
        let config = CycleConfig {
            percentage_of_nodes_to_score: 100,
            ..CycleConfig::default()
        };
        scheduler_with_plugins(&policy, config, &*self.host).map_err(|e| e.to_string())
    }
}

/// Schedules `pods` in order: per pod, the chosen node or the FitError message.
pub fn schedule(cluster: &mut Cluster, scheduler: &mut Scheduler, pods: Vec<Pod>) -> Vec<String> {
    let mut out = Vec::new();
    schedule_all(cluster, scheduler, pods, Detail::Decision, |o| {
        out.push(match &o.node {
            Some(n) => n.clone(),
            None => o.message().unwrap_or_default(),
        })
    })
    .expect("schedule");
    out
}

/// `n` nodes named node-<i>; every `gpu_every`-th has the label gpu=a100.
pub fn nodes(n: usize, gpu_every: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            let mut b = berth_engine::testkit::node(&format!("node-{i}"))
                .cpu(4000 + 1000 * (i as i64 % 4))
                .mem(8 << 30)
                .pods(110);
            if i % gpu_every == 0 {
                b = b.label("gpu", "a100");
            }
            b.build()
        })
        .collect()
}

/// Polls `ready` every millisecond until it holds, failing after 10 s; how long it took.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    start.elapsed()
}
