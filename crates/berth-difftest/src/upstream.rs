//! The references: kube-scheduler v1.22.17 run on the test cluster with a Policy file, or
//! kube-scheduler v1.36.3 with its default profile; and what either logs about each pod's
//! scores.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use berth_testcluster::{TestCluster, bounded_command};
use rustix::process::{Pid, Signal, kill_process_group};

/// The reference binary's name in the control-plane bin directory.
pub const REFERENCE_BINARY: &str = "kube-scheduler-v1.22";
/// The second reference's binary: the kube-scheduler of the control plane's release.
pub const V136_BINARY: &str = "kube-scheduler";
/// The scheduler name of v1.36's one profile. The test cluster runs no other scheduler
/// while a scenario runs, so the generated pods need no `schedulerName`.
pub const V136_SCHEDULER_NAME: &str = "default-scheduler";

/// Which reference to start, with what it is configured by.
#[derive(Debug, Clone, Copy)]
pub enum Reference<'a> {
    /// kube-scheduler v1.22.17 with a Policy file and one setting of the gate.
    V122 {
        /// The Policy (JSON).
        policy: &'a serde_json::Value,
        /// `DefaultPodTopologySpread`.
        gate: DefaultPodTopologySpread,
    },
    /// kube-scheduler v1.36.3 with its default profile (KubeSchedulerConfiguration v1).
    V136,
}

impl Reference<'_> {
    /// The reference in words, for errors.
    pub fn label(&self) -> &'static str {
        match self {
            Reference::V122 { .. } => "kube-scheduler v1.22",
            Reference::V136 => "kube-scheduler v1.36",
        }
    }
}

/// v1.22's feature gate that decides what serves `SelectorSpreadPriority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPodTopologySpread {
    /// `--feature-gates=DefaultPodTopologySpread=false`: SelectorSpread.
    Off,
    /// v1.22's default: PodTopologySpread with the system-default constraints.
    On,
}

impl DefaultPodTopologySpread {
    /// Both settings, off first.
    pub const BOTH: [Self; 2] = [Self::Off, Self::On];

    /// The setting as a boolean.
    pub fn enabled(self) -> bool {
        self == Self::On
    }

    /// A label for reports.
    pub fn label(self) -> &'static str {
        match self {
            Self::Off => "DefaultPodTopologySpread=false",
            Self::On => "DefaultPodTopologySpread=true (v1.22 default)",
        }
    }
}

/// A running reference scheduler, killed (its process group) when dropped.
pub struct ReferenceScheduler {
    child: Child,
    label: &'static str,
    log: PathBuf,
    /// How far the log has been read.
    offset: u64,
}

/// What the reference logged while scheduling one pod (at -v=10 from v1.22's
/// generic_scheduler.go or v1.36's schedule_one.go, in the same words).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScoreLog {
    /// (plugin, node) -> weighted score ("Plugin scored node for pod").
    pub plugins: BTreeMap<(String, String), i64>,
    /// node -> total ("Calculated node's final score for pod").
    pub totals: BTreeMap<String, i64>,
}

impl ReferenceScheduler {
    /// Starts `reference` against `cluster` in `dir`, for at most `lifetime`; returns once
    /// it is healthy. The free ports it is given may be taken by another process before it binds them (the machine is shared):
    /// it is then started again on new ones, up to three times in all.
    pub async fn start(
        cluster: &TestCluster,
        reference: Reference<'_>,
        dir: &Path,
        lifetime: Duration,
    ) -> Result<Self> {
        let mut attempt = 1;
        loop {
            match Self::start_once(cluster, reference, dir, lifetime).await {
                Err(e) if attempt < 3 && format!("{e:#}").contains("address already in use") => {
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    async fn start_once(
        cluster: &TestCluster,
        reference: Reference<'_>,
        dir: &Path,
        lifetime: Duration,
    ) -> Result<Self> {
        let binary = cluster.bin_dir().join(match reference {
            Reference::V122 { .. } => REFERENCE_BINARY,
            Reference::V136 => V136_BINARY,
        });
        if !binary.is_file() {
            bail!(
                "{} is missing: run scripts/control-plane.sh --with-reference-scheduler (it \
                 builds kube-scheduler v1.22.17 from its Go module, beside the release's own) \
                 and point BERTH_CONTROL_PLANE_BIN at the directory it prints",
                binary.display()
            );
        }
        std::fs::create_dir_all(dir)?;
        let health_port = free_port()?;
        let log = dir.join("kube-scheduler.log");
        let out = File::create(&log)?;
        let mut command = bounded_command(&binary, lifetime, None);
        match reference {
            Reference::V122 { policy, gate } => {
                v122_arguments(&mut command, cluster, policy, gate, dir)?;
            }
            Reference::V136 => v136_arguments(&mut command, cluster, dir)?,
        }
        let child = command
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={health_port}"))
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut reference = ReferenceScheduler {
            child,
            label: reference.label(),
            log,
            offset: 0,
        };
        reference.wait_healthy(health_port).await?;
        Ok(reference)
    }

    /// Waits until the start is logged and the health port answers. Both come before the
    /// informers list anything (see [`ReferenceScheduler::await_node_events`]).
    async fn wait_healthy(&mut self, port: u16) -> Result<()> {
        self.poll_log(|text| {
            let up = text.contains("Starting Kubernetes Scheduler")
                && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            (!up).then(|| "was not ready".to_string())
        })
        .await
    }

    /// Reads the log every 50 ms until `waiting` finds nothing left to wait for (None);
    /// fails with what it still waits for ("was not ready") after 60 s, or if the process
    /// exits.
    async fn poll_log(&mut self, mut waiting: impl FnMut(&str) -> Option<String>) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            self.check_running()?;
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let Some(what) = waiting(&text) else {
                return Ok(());
            };
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{} {what} within 60 s; its log:\n{}",
                    self.label,
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The reference in words ("kube-scheduler v1.22"), for errors.
    pub fn label(&self) -> &'static str {
        self.label
    }

    /// Fails with the log's tail if the process exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); its log:\n{}",
                self.label,
                self.log_tail()
            );
        }
        Ok(())
    }

    /// The last lines of the log, for errors.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Waits until the reference logged `event` (v1.22's node informer handlers log "Add
    /// event for node" and "Delete event for node" at -v=3) for every node of `names`.
    ///
    /// The reference's start is logged, and its health port opens, before its informers
    /// list anything, so only these lines tell what its cache holds.
    pub async fn await_node_events(&mut self, event: &str, names: &[&str]) -> Result<()> {
        let quoted = format!("\"{event}\"");
        self.poll_log(|text| {
            let seen: BTreeSet<&str> = text
                .lines()
                .filter(|line| line.contains(&quoted))
                .filter_map(|line| field(line, "node"))
                .collect();
            let missing: Vec<&&str> = names.iter().filter(|name| !seen.contains(*name)).collect();
            (!missing.is_empty()).then(|| format!("logged no {quoted} for nodes {missing:?}"))
        })
        .await
    }

    /// The score lines logged for `pod` (`namespace/name`) since the last call.
    pub fn take_scores(&mut self, pod: &str) -> Result<ScoreLog> {
        let mut file = File::open(&self.log)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        // Only whole lines: a line being written is read next time.
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.offset += end as u64;
        let text = String::from_utf8_lossy(&bytes[..end]);
        Ok(parse_scores(&text, pod))
    }
}

impl Drop for ReferenceScheduler {
    fn drop(&mut self) {
        // The child leads its own process group (bounded_command), which also holds its
        // watchdog; an error only means the group is gone already.
        let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        let _ = self.child.wait();
    }
}

/// Parses v1.22's score lines for `pod`, e.g.
/// `I1123 ... generic_scheduler.go:434] "Plugin scored node for pod" pod="ns/p0"
/// plugin="NodeResourcesLeastAllocated" node="n1" score=87`.
pub fn parse_scores(text: &str, pod: &str) -> ScoreLog {
    let mut log = ScoreLog::default();
    let pod_field = format!("pod=\"{pod}\"");
    for line in text.lines() {
        let plugin_line = line.contains("\"Plugin scored node for pod\"");
        let total_line = line.contains("\"Calculated node's final score for pod\"");
        if !(plugin_line || total_line) || !line.contains(&pod_field) {
            continue;
        }
        let (Some(node), Some(score)) = (field(line, "node"), field(line, "score")) else {
            continue;
        };
        let Ok(score) = score.parse::<i64>() else {
            continue;
        };
        if plugin_line {
            if let Some(plugin) = field(line, "plugin") {
                log.plugins
                    .insert((plugin.to_owned(), node.to_owned()), score);
            }
        } else {
            log.totals.insert(node.to_owned(), score);
        }
    }
    log
}

/// The value of ` key=value` or ` key="value"` in a structured klog line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let marker = format!(" {key}=");
    let start = line.find(&marker)? + marker.len();
    let rest = &line[start..];
    if let Some(quoted) = rest.strip_prefix('"') {
        quoted.split('"').next()
    } else {
        rest.split_whitespace().next()
    }
}

/// v1.22's configuration and flags: the Policy file, the gates, and the score lines of
/// generic_scheduler.go.
fn v122_arguments(
    command: &mut std::process::Command,
    cluster: &TestCluster,
    policy: &serde_json::Value,
    gate: DefaultPodTopologySpread,
    dir: &Path,
) -> Result<()> {
    let policy_path = dir.join("policy.json");
    std::fs::write(&policy_path, serde_json::to_vec_pretty(policy)?)?;
    // v1.22's default v1beta2 configuration rejects a Policy naming LeastRequestedPriority
    // (kubernetes/kubernetes#105202); a v1beta1 file does not. The insecure
    // healthz/metrics listener, which a config file opens on 0.0.0.0:10251 whatever
    // `--port` says (two runs at once collided there), goes to a free loopback port
    // (the file cannot turn it off: port 0 is refused). The Policy replaces the profiles,
    // so the scheduler name is always default-scheduler: the test cluster runs no other
    // scheduler.
    let insecure_port = free_port()?;
    let config_path = dir.join("config.yaml");
    std::fs::write(
        &config_path,
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1beta1\n\
             kind: KubeSchedulerConfiguration\n\
             clientConnection:\n  kubeconfig: {}\n  qps: 500\n  burst: 1000\n\
             leaderElection:\n  leaderElect: false\n\
             healthzBindAddress: 127.0.0.1:{insecure_port}\n\
             metricsBindAddress: 127.0.0.1:{insecure_port}\n",
            cluster.kubeconfig_path().display()
        ),
    )?;
    let gates = format!(
        // CSIStorageCapacity off: v1.22 would watch storage.k8s.io/v1beta1
        // CSIStorageCapacities, which the v1.36 apiserver no longer serves, and never sync.
        // No generated CSIDriver asks for capacity tracking, so it changes no decision.
        "--feature-gates=DefaultPodTopologySpread={},CSIStorageCapacity=false",
        gate.enabled()
    );
    command
        .arg(format!("--config={}", config_path.display()))
        .arg(format!("--policy-config-file={}", policy_path.display()))
        .arg(gates)
        // The score lines are logged at -v=10 by generic_scheduler.go; -v=10 everywhere
        // would also log every API request and response body. eventhandlers.go logs each
        // node added or deleted at -v=3 (see `await_node_events`).
        .arg("-v=2")
        .arg("--vmodule=generic_scheduler=10,eventhandlers=3")
        .arg("--port=0");
    Ok(())
}

/// v1.36's configuration and flags: the default profile under [`V136_SCHEDULER_NAME`],
/// every feature gate at its default, and the score lines of schedule_one.go.
fn v136_arguments(
    command: &mut std::process::Command,
    cluster: &TestCluster,
    dir: &Path,
) -> Result<()> {
    let config_path = dir.join("config.yaml");
    // v1.36 has no insecure listener: the secure one (127.0.0.1) serves health.
    std::fs::write(
        &config_path,
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\n\
             kind: KubeSchedulerConfiguration\n\
             clientConnection:\n  kubeconfig: {}\n  qps: 500\n  burst: 1000\n\
             leaderElection:\n  leaderElect: false\n\
             profiles:\n- schedulerName: {V136_SCHEDULER_NAME}\n",
            cluster.kubeconfig_path().display()
        ),
    )?;
    command
        .arg(format!("--config={}", config_path.display()))
        // "Plugin scored node for pod" and the totals are logged at -v=10 by
        // schedule_one.go, as generic_scheduler.go did in v1.22.
        .arg("-v=2")
        .arg("--vmodule=schedule_one=10");
    Ok(())
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_lines_are_parsed_for_the_pod_only() {
        let text = r#"I1123 10:00:00.000000   1 generic_scheduler.go:434] "Plugin scored node for pod" pod="s1/p0" plugin="NodeResourcesLeastAllocated" node="s1-n0" score=87
I1123 10:00:00.000000   1 generic_scheduler.go:434] "Plugin scored node for pod" pod="s1/p1" plugin="NodeResourcesLeastAllocated" node="s1-n0" score=12
I1123 10:00:00.000000   1 generic_scheduler.go:491] "Calculated node's final score for pod" pod="s1/p0" node="s1-n0" score=174
"#;
        let log = parse_scores(text, "s1/p0");
        assert_eq!(
            log.plugins,
            BTreeMap::from([(
                ("NodeResourcesLeastAllocated".to_owned(), "s1-n0".to_owned()),
                87
            )])
        );
        assert_eq!(log.totals, BTreeMap::from([("s1-n0".to_owned(), 174)]));
    }
}
