//! `scripts/demo.sh` end to end, as README.md shows it (`bash scripts/demo.sh`), with this
//! test build's `berth` and `berth-demo`: a throwaway control plane on 127.0.0.1, `berth
//! run`, Deployments placed with their Events, the metrics, the kubeconfig, and everything
//! stopped at the end.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The command README.md shows.
const COMMAND: &str = "bash scripts/demo.sh";
/// The demo takes seconds once the control plane is built; building it (Go) takes longer.
const TIMEOUT: Duration = Duration::from_secs(40 * 60);

#[test]
fn the_demo_schedules_deployments_with_berth_and_cleans_up() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (program, args) = COMMAND.split_once(' ').expect("program and script");
    let mut child = Command::new(program)
        .args(args.split(' '))
        .current_dir(&root)
        .env("BERTH_BIN", env!("CARGO_BIN_EXE_berth"))
        .env("BERTH_DEMO_BIN", env!("CARGO_BIN_EXE_berth-demo"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash scripts/demo.sh");
    let pid = child.id();
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let group = rustix::process::Pid::from_raw(pid as i32).expect("pid");
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            panic!("the demo ran past {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Every replica decided: 4 web and 3 api placed by berth, api one per node (required
    // anti-affinity), and batch refused everywhere with the reasons counted per node.
    let placed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("demo/") && !l.ends_with("<pending>"))
        .collect();
    assert_eq!(placed.len(), 7, "{stdout}");
    let api_nodes: std::collections::BTreeSet<&str> = placed
        .iter()
        .filter(|l| l.starts_with("demo/api-"))
        .filter_map(|l| l.split(" -> ").nth(1))
        .collect();
    assert_eq!(api_nodes.len(), 3, "api's replicas share a node: {stdout}");
    assert_eq!(
        stdout
            .matches("Scheduled (berth): Successfully assigned demo/")
            .count(),
        7,
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "FailedScheduling (berth): 0/6 nodes are available: 1 node(s) had taint {dedicated: \
             infra}, that the pod didn't tolerate, 5 Insufficient cpu."
        ),
        "{stdout}"
    );
    assert!(!placed.iter().any(|l| l.contains("infra-c1")), "{stdout}");
    assert!(
        stdout.contains(
            "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"berth\"} 7"
        ),
        "{stdout}"
    );
    let kubeconfig = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("export KUBECONFIG="))
        .expect("the kubeconfig to use kubectl with");
    // Cleaned up: the cluster's directory (its kubeconfig with it) is gone.
    assert!(!Path::new(kubeconfig).exists(), "{kubeconfig} left behind");
    assert!(stdout.contains("== cleaning up"), "{stdout}");
}
