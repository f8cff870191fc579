//! The real kube-scheduler v1.36 (built by scripts/control-plane.sh) starts with every
//! `berth convert` output: config decoding, validation and every profile's plugins and args
//! are checked before it logs "Starting Kubernetes Scheduler". One control plane, the files
//! in sequence, each scheduler killed (its process group) as soon as it is up; a control
//! config naming a plugin v1.36 no longer has must make it exit, so the check can fail.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use berth_testcluster::{ClusterOptions, TestCluster, bounded_command};
use common::{Process, free_port};

/// kube-scheduler v1.36 in the control-plane bin directory.
const BINARY: &str = "kube-scheduler";

/// `berth convert FILE` (not strict: what is not converted is left out).
fn converted(policy: &Path) -> Result<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .arg("convert")
        .arg(policy)
        .output()?;
    if !out.status.success() {
        bail!(
            "berth convert {}: {}",
            policy.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The converted file plus what only the test needs: where the apiserver is and no leader
/// election. The profile is left exactly as converted.
fn runnable(config: &str, cluster: &TestCluster) -> Result<String> {
    let mut value: serde_yaml_ng::Value = serde_yaml_ng::from_str(config)?;
    let map = value.as_mapping_mut().context("a mapping")?;
    map.insert(
        "clientConnection".into(),
        serde_yaml_ng::from_str(&format!(
            "{{kubeconfig: {:?}}}",
            cluster.kubeconfig_path().display().to_string()
        ))?,
    );
    map.insert(
        "leaderElection".into(),
        serde_yaml_ng::from_str("{leaderElect: false}")?,
    );
    Ok(serde_yaml_ng::to_string(&value)?)
}

/// Starts kube-scheduler with `config`; `Ok` once it logged its start and serves its secure
/// port, `Err` with its log if it exits first or is not up within a minute.
async fn start(cluster: &TestCluster, config: &str, dir: &Path) -> Result<Process> {
    let binary = cluster.bin_dir().join(BINARY);
    let path = dir.join("config.yaml");
    std::fs::write(&path, config)?;
    let log = dir.join("kube-scheduler.log");
    let out = File::create(&log)?;
    let port = free_port()?;
    let kubeconfig = cluster.kubeconfig_path().display().to_string();
    let child = bounded_command(&binary, Duration::from_secs(120), None)
        .arg(format!("--config={}", path.display()))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={port}"))
        .arg(format!("--authentication-kubeconfig={kubeconfig}"))
        .arg(format!("--authorization-kubeconfig={kubeconfig}"))
        .arg("-v=2")
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let mut scheduler = Process { child, log };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = scheduler.child.try_wait()? {
            bail!(
                "kube-scheduler exited ({status}); its log:\n{}",
                scheduler.log()
            );
        }
        if scheduler.log().contains("Starting Kubernetes Scheduler")
            && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        {
            return Ok(scheduler);
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "kube-scheduler did not start in 60 s; its log:\n{}",
                scheduler.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn policy_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
    let mut files: Vec<PathBuf> = [root.clone(), root.join("examples")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("policies dir"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_scheduler_v1_36_starts_with_every_converted_policy() {
    tokio::time::timeout(Duration::from_secs(420), async {
        let cluster = TestCluster::start(ClusterOptions::default()).await?;
        let dir = tempfile::tempdir()?;
        let files = policy_files();
        assert!(files.len() >= 5, "{files:?}");
        for (i, policy) in files.iter().enumerate() {
            let config = runnable(&converted(policy)?, &cluster)?;
            let run = dir.path().join(i.to_string());
            std::fs::create_dir_all(&run)?;
            let scheduler = start(&cluster, &config, &run)
                .await
                .with_context(|| format!("{} converted:\n{config}", policy.display()))?;
            drop(scheduler);
        }
        // The control: v1.22's NodeLabel plugin, which v1.36 no longer has.
        let openshift = runnable(&converted(&files[0])?, &cluster)?;
        let bad = openshift.replacen(
            "    filter:\n      enabled:\n",
            "    filter:\n      enabled:\n      - name: NodeLabel\n",
            1,
        );
        assert_ne!(bad, openshift, "the control config must differ");
        let run = dir.path().join("control");
        std::fs::create_dir_all(&run)?;
        let err = start(&cluster, &bad, &run)
            .await
            .err()
            .context("v1.36 accepted NodeLabel")?;
        assert!(format!("{err}").contains("NodeLabel"), "{err:#}");
        anyhow::Ok(())
    })
    .await
    .expect("within 7 minutes")
    .expect("kube-scheduler v1.36 accepts the converted files");
}
