//! The binary's edges: bad input gets a clear error and a non-zero exit, never a panic.

use std::fs;
use std::process::{Command, Output};

fn berth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .output()
        .expect("run berth")
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    fs::write(&p, text).expect("write fixture");
    p.display().to_string()
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n";

#[test]
fn bad_input_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy_ok = write(&dir, "ok.json", r#"{"kind":"Policy","apiVersion":"v1"}"#);
    let cases: Vec<(&str, Vec<String>, Vec<&str>)> = vec![
        (
            "missing cluster file",
            vec![
                "simulate".into(),
                "--cluster".into(),
                dir.path().join("nope.yaml").display().to_string(),
            ],
            vec![
                "cannot read cluster file",
                "nope.yaml",
                "No such file or directory",
            ],
        ),
        (
            "malformed YAML",
            vec![
                "simulate".into(),
                "--cluster".into(),
                write(&dir, "bad.yaml", "kind: Node\n  metadata: [\n"),
            ],
            vec!["bad.yaml", "line"],
        ),
        (
            "impossible quantity",
            vec![
                "simulate".into(),
                "--cluster".into(),
                write(&dir, "q.yaml", &NODE.replace("8Gi", "12Qi")),
            ],
            vec!["q.yaml", "Node n1", "status.allocatable.memory", "12Qi"],
        ),
        (
            "object without a name",
            vec![
                "simulate".into(),
                "--cluster".into(),
                write(
                    &dir,
                    "noname.yaml",
                    &NODE.replace("  name: n1\n", "  labels: {}\n"),
                ),
            ],
            vec!["noname.yaml", "metadata.name"],
        ),
        (
            "pod without containers",
            vec![
                "simulate".into(),
                "--cluster".into(),
                write(
                    &dir,
                    "pod.yaml",
                    &format!(
                        "{NODE}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec: {{}}\n"
                    ),
                ),
            ],
            vec!["pod.yaml", "(Pod p)", "spec.containers"],
        ),
        (
            "malformed policy JSON",
            vec![
                "check".into(),
                write(
                    &dir,
                    "p.json",
                    "{\"kind\": \"Policy\",\n  \"predicates\": [\n",
                ),
            ],
            vec!["p.json", "line"],
        ),
        (
            "policy with a typo",
            vec![
                "check".into(),
                write(
                    &dir,
                    "typo.json",
                    r#"{"priorities":[{"name":"LeastRequestedPriority","wieght":1}]}"#,
                ),
            ],
            vec!["typo.json", "priorities[0]", "wieght"],
        ),
        (
            "unknown predicate",
            vec![
                "simulate".into(),
                "--policy".into(),
                write(
                    &dir,
                    "unk.json",
                    r#"{"predicates":[{"name":"PodFitsEverything"}]}"#,
                ),
            ],
            vec!["unk.json", "predicates[0]", "PodFitsEverything"],
        ),
        (
            "missing policy file",
            vec![
                "simulate".into(),
                "--policy".into(),
                dir.path().join("gone.json").display().to_string(),
            ],
            vec!["gone.json"],
        ),
        (
            "bench whose init pods cannot fit",
            vec![
                "bench".into(),
                "--workload".into(),
                "pod-anti-affinity".into(),
                "--nodes".into(),
                "3".into(),
                "--running".into(),
                "5".into(),
            ],
            vec![
                "only 3 of 5 init pods fit on 3 nodes",
                "--nodes",
                "--running",
            ],
        ),
        (
            "bench with no nodes",
            vec![
                "bench".into(),
                "--nodes".into(),
                "0".into(),
                "--policy".into(),
                policy_ok.clone(),
            ],
            vec!["--nodes"],
        ),
    ];
    for (name, args, needles) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = berth(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{name}: expected failure, got success"
        );
        assert!(!stderr.contains("panicked"), "{name}: panicked: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "{name}: {n:?} not in: {stderr}");
        }
    }
}

/// `--cluster -` and `--pod`: bad standard input and a `--pod` naming no pending pod are
/// errors that say what was wrong (the bundled cluster has app-a1's pods running, no
/// `shop/nope`).
#[test]
fn stdin_and_pod_errors_say_what_was_wrong() {
    let with_stdin = |args: &[&str], input: &[u8]| -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run berth");
        let mut stdin = child.stdin.take().expect("stdin");
        std::io::Write::write_all(&mut stdin, input).expect("write stdin");
        drop(stdin);
        child.wait_with_output().expect("output")
    };
    let cases: Vec<(&str, Output, Vec<&str>)> = vec![
        (
            "stdin not UTF-8",
            with_stdin(&["simulate", "--cluster", "-"], b"kind: Node\n\xff\xfe"),
            vec!["standard input", "not UTF-8"],
        ),
        (
            "stdin malformed",
            with_stdin(
                &["simulate", "--cluster", "-"],
                b"kind: Node\n  metadata: [\n",
            ),
            vec!["standard input", "line"],
        ),
        (
            "pod not in the file",
            berth(&["simulate", "--pod", "shop/nope"]),
            vec!["--pod shop/nope", "no pod of that name"],
        ),
        (
            "pod already running",
            berth(&["simulate", "--pod", "shop/web-7d9f-x2k4l"]),
            vec!["--pod shop/web-7d9f-x2k4l", "already runs on node"],
        ),
        (
            "pod key without a namespace",
            berth(&["simulate", "--pod", "web-0"]),
            vec!["web-0", "expected NAMESPACE/NAME"],
        ),
    ];
    for (name, out, needles) in cases {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: succeeded");
        assert!(!stderr.contains("panicked"), "{name}: panicked: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "{name}: {n:?} not in: {stderr}");
        }
    }
}

#[test]
fn default_simulation_runs_and_is_deterministic() {
    let a = berth(&["simulate", "--output", "json", "--seed", "7"]);
    let b = berth(&["simulate", "--output", "json", "--seed", "7"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    // A newcomer's first run warns about nothing: the bundled policy's notes on v1.22 are
    // for authors of policies, and the bundled cluster has nothing to warn about.
    assert_eq!(String::from_utf8_lossy(&a.stderr), "");
    // The same file given as the user's own policy keeps them.
    let own = berth(&["simulate", "--policy", "../../policies/openshift.json"]);
    let own_stderr = String::from_utf8_lossy(&own.stderr);
    assert!(own.status.success(), "{own_stderr}");
    assert!(
        own_stderr.contains(
            "\"CheckNodeMemoryPressure\" is no longer registered by kube-scheduler v1.22"
        ),
        "{own_stderr}"
    );
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(text.lines().count() >= 5);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        assert!(v["pod"].is_string());
        assert_eq!(v["node"].is_null(), v["message"].is_string(), "{line}");
    }
}

#[test]
fn check_prints_the_effective_configuration() {
    let out = berth(&[
        "check",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let pos = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s} missing from:\n{text}"))
    };
    // Evaluation order, not file order: NoDiskConflict is listed first in the file.
    assert!(pos("CheckNodeUnschedulable") < pos("GeneralPredicates"));
    assert!(pos("GeneralPredicates") < pos("NoDiskConflict"));
    assert!(pos("NoDiskConflict") < pos("Region"));
    assert!(pos("Region") < pos("MatchInterPodAffinity"));
    assert!(text.contains("10000"));
}

/// A YAML Policy is read as kube-scheduler v1.22 reads one: the OpenShift policy written in
/// YAML checks exactly as its JSON, and a YAML mistake is named with its line and column.
#[test]
fn check_reads_a_yaml_policy_as_its_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = write(
        &dir,
        "openshift.yaml",
        "kind: Policy
apiVersion: v1
predicates:
- name: NoDiskConflict
- name: NoVolumeZoneConflict
- name: MaxEBSVolumeCount
- name: MaxGCEPDVolumeCount
- name: GeneralPredicates
- name: PodToleratesNodeTaints
- name: CheckNodeMemoryPressure
- name: CheckNodeDiskPressure
- name: MatchInterPodAffinity
- name: Region
  argument:
    serviceAffinity:
      labels: [region]
priorities:
- {name: LeastRequestedPriority, weight: 1}
- {name: BalancedResourceAllocation, weight: 1}
- {name: SelectorSpreadPriority, weight: 1}
- {name: NodePreferAvoidPodsPriority, weight: 10000}
- {name: NodeAffinityPriority, weight: 1}
- {name: TaintTolerationPriority, weight: 1}
- {name: InterPodAffinityPriority, weight: 1}
- name: Zone
  weight: 2
  argument:
    serviceAntiAffinity:
      label: zone
",
    );
    let json = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json");
    let (from_yaml, from_json) = (berth(&["check", &yaml]), berth(&["check", json]));
    assert!(
        from_yaml.status.success(),
        "{}",
        String::from_utf8_lossy(&from_yaml.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&from_yaml.stdout),
        String::from_utf8_lossy(&from_json.stdout)
    );
    let bad = write(
        &dir,
        "bad.yaml",
        "kind: Policy\npriorities:\n- name: LeastRequestedPriority\n  weight: one\n",
    );
    let out = berth(&["check", &bad]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{bad}: priorities[0].weight: invalid type: string \"one\", expected i64 (line 4, \
             column 11)"
        )),
        "{stderr}"
    );
}

/// Common mistakes name their subject and cause once: libraries' errors repeat their
/// sources' messages, which the binary prints once.
#[test]
fn each_cause_is_said_once() {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json");
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("kubeconfig");
    let missing = missing.display().to_string();
    let cases: [(&str, Vec<&str>, &str); 2] = [
        (
            "missing kubeconfig",
            vec![
                "run",
                "--policy",
                policy,
                "--leader-elect=false",
                "--secure-port=0",
                "--kubeconfig",
                &missing,
            ],
            "No such file or directory",
        ),
        (
            "missing policy",
            vec!["check", "/nonexistent/policy.json"],
            "No such file or directory",
        ),
    ];
    for (name, args, cause) in cases {
        let out = berth(&args);
        assert!(!out.status.success(), "{name}: should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{name}: no error line in {stderr}"));
        assert_eq!(error.matches(cause).count(), 1, "{name}: {error}");
    }
}

/// An API server that refuses connections is named once, with its URL and the cause, not
/// once per watch per retry.
#[test]
fn an_unreachable_api_server_is_named_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Port 1 on loopback: nothing listens there, so every connection is refused at once.
    let kubeconfig = write(
        &dir,
        "kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n\
         contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n\
         users: [{name: u, user: {token: t}}]\n",
    );
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args([
            "run",
            "--policy",
            policy,
            "--leader-elect=false",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .args(["--metrics-addr", "127.0.0.1:0", "--secure-port=0"])
        .args(["--logging-format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run berth");
    // Long enough for every watch to fail and retry several times.
    std::thread::sleep(std::time::Duration::from_secs(4));
    child.kill().expect("stop berth");
    let out = child.wait_with_output().expect("berth's output");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let failing: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("API server request failed"))
        .collect();
    assert_eq!(failing.len(), 1, "one line for the one cause:\n{log}");
    assert!(
        failing[0].contains("https://127.0.0.1:1/") && failing[0].contains("Connection refused"),
        "{}",
        failing[0]
    );
    assert!(
        !log.contains("client error (Connect)"),
        "kube's own lines:\n{log}"
    );
}

#[test]
fn check_of_a_cluster_file_names_what_berth_ignores_or_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = write(
        &dir,
        "cluster.yaml",
        "apiVersion: v1\nkind: List\nitems:\n\
         - {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {unschedulabel: true}}\n\
         - apiVersion: v1\n  kind: Pod\n  metadata: {name: gang-0}\n  \
         spec: {schedulingGroup: {podGroupName: g}, containers: [{name: c}]}\n",
    );
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/openshift.json");
    let out = berth(&["check", policy, "--cluster", &cluster]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "1 nodes, 0 running pods, 1 pending pods",
        "spec.unschedulabel: unknown field of Node",
        "1 Pod object(s) set spec.schedulingGroup (refused, not placed)",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}

/// Every `berth bench` workload runs once at a small size (a sample, never timed): each
/// pending pod is placed, the run's own placement checks pass, and the result names the
/// machine. Figures come from release builds at full size (docs/performance.md).
#[test]
fn every_bench_workload_runs_a_small_sample() {
    let workloads = [
        "basic",
        "anti-affinity",
        "node-label",
        "scheduling-basic",
        "node-affinity",
        "pod-affinity",
        "pod-anti-affinity",
        "preferred-pod-affinity",
        "topology-spreading",
        "preferred-topology-spreading",
        "mixed",
        "volumes",
        "preemption",
    ];
    for workload in workloads {
        let out = berth(&[
            "bench",
            "--workload",
            workload,
            "--nodes",
            "60",
            "--running",
            "20",
            "--pods",
            "40",
            "--output",
            "json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{workload}: {stderr}");
        let result: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{workload}: {e}"));
        let placed = if workload == "preemption" {
            &result["preempted"]
        } else {
            &result["scheduled"]
        };
        assert_eq!(placed, 40, "{workload}: {result}");
        assert_eq!(result["workload"], workload, "{result}");
        assert!(result["cpu_model"].is_string(), "{workload}: {result}");
        assert!(
            result["available_parallelism"].as_u64() >= Some(1),
            "{workload}: {result}"
        );
    }
}
