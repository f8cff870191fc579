//! `scripts/demo.sh` end to end, as README.md shows it (`bash scripts/demo.sh`), with this
//! test build's `berth` and `berth-demo`: a throwaway control plane on 127.0.0.1, `berth
//! run`, Deployments placed with their Events, the metrics, the kubeconfig, and everything
//! stopped at the end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The command README.md shows.
const COMMAND: &str = "bash scripts/demo.sh";
/// The demo takes seconds once the control plane is built; building it (Go) takes longer.
const TIMEOUT: Duration = Duration::from_secs(40 * 60);

/// `bash scripts/demo.sh` with `extra` arguments, in its own process group, with this test
/// build's binaries.
fn start(extra: &[&str]) -> Child {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (program, args) = COMMAND.split_once(' ').expect("program and script");
    Command::new(program)
        .args(args.split(' '))
        .args(extra)
        .current_dir(&root)
        .env("BERTH_BIN", env!("CARGO_BIN_EXE_berth"))
        .env("BERTH_DEMO_BIN", env!("CARGO_BIN_EXE_berth-demo"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash scripts/demo.sh")
}

/// Waits for the demo to exit, killing its process group (by its pid) past `TIMEOUT`.
fn wait_bounded(child: &mut Child) {
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let group = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            panic!("the demo ran past {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_demo_schedules_deployments_with_berth_and_cleans_up() {
    let mut child = start(&[]);
    wait_bounded(&mut child);
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

/// `--stay` keeps the cluster and Berth up (the kubeconfig there, Berth's health endpoint
/// answering) until Ctrl-C, then cleans up as without it.
#[test]
fn the_demo_stays_up_until_ctrl_c() {
    let mut child = start(&["--stay"]);
    let stdout = child.stdout.take().expect("stdout");
    let (lines, got) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let (mut kubeconfig, mut port, mut seen) = (None, None, String::new());
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let line = got
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| {
                let group = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                panic!("the demo did not come up:\n{seen}")
            });
        seen.push_str(&line);
        seen.push('\n');
        if let Some(path) = line.trim().strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(path.to_owned());
        }
        if let Some(rest) = line.strip_prefix("== metrics: http://127.0.0.1:") {
            port = rest.split('/').next().and_then(|p| p.parse::<u16>().ok());
        }
        if line.starts_with("== up until Ctrl-C") {
            break;
        }
    }
    let kubeconfig = kubeconfig.expect("a kubeconfig");
    let port = port.expect("the metrics port");
    // Still up a moment later: the kubeconfig is there and Berth answers.
    std::thread::sleep(Duration::from_secs(2));
    assert!(Path::new(&kubeconfig).exists(), "{seen}");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("berth's endpoint");
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // Ctrl-C: SIGINT to the demo (bash exec'd it, so it has the script's pid).
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    wait_bounded(&mut child);
    let status = child.wait().expect("status");
    while let Ok(line) = got.recv_timeout(Duration::from_secs(1)) {
        seen.push_str(&line);
        seen.push('\n');
    }
    assert!(status.success(), "{status}: {seen}");
    assert!(seen.contains("== cleaning up"), "{seen}");
    assert!(!Path::new(&kubeconfig).exists(), "{kubeconfig} left behind");
}
