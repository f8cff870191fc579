//! `berth convert` and `--config`: the report of what is not converted, `--strict`, and a
//! converted Policy scheduling exactly as the Policy does.

use std::fs;
use std::process::{Command, Output};

fn berth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .output()
        .expect("run berth")
}

fn policies(file: &str) -> String {
    format!("{}/../../policies/{file}", env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn convert_names_what_it_leaves_out_on_stderr_and_in_a_comment() {
    let out = berth(&["convert", &policies("openshift.json")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 7, "{stderr}");
    assert!(lines.iter().all(|l| l.starts_with("not converted: ")));
    assert!(lines[0].starts_with(
        "not converted: predicates Region: v1.22 ran it as the ServiceAffinity plugin"
    ));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("# NOT CONVERTED"), "{stdout}");
    assert!(stdout.contains("#   - priorities Zone: "), "{stdout}");
    let config: serde_yaml_ng::Value = serde_yaml_ng::from_str(&stdout).expect("YAML");
    assert_eq!(config["apiVersion"], "kubescheduler.config.k8s.io/v1");
    assert_eq!(config["profiles"][0]["schedulerName"], "default-scheduler");

    let strict = berth(&["convert", "--strict", &policies("openshift.json")]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(strict.stdout.is_empty());
    assert!(
        text(&strict.stderr).contains("7 part(s) of the policy have no equivalent"),
        "{}",
        text(&strict.stderr)
    );
    let full = berth(&[
        "convert",
        "--strict",
        "--scheduler-name",
        "berth",
        &policies("examples/with-extender.json"),
    ]);
    assert!(full.status.success(), "{}", text(&full.stderr));
    assert!(full.stderr.is_empty());
    assert!(text(&full.stdout).contains("# Everything converted."));
    assert!(text(&full.stdout).contains("schedulerName: berth"));
}

#[test]
fn a_converted_policy_schedules_as_the_policy_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.json");
    fs::write(
        &policy,
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"GeneralPredicates"},
        {"name":"PodToleratesNodeTaints"},{"name":"MatchInterPodAffinity"},
        {"name":"NoDiskConflict"}],"priorities":[{"name":"LeastRequestedPriority","weight":1},
        {"name":"BalancedResourceAllocation","weight":1},{"name":"SelectorSpreadPriority","weight":2},
        {"name":"NodeAffinityPriority","weight":1},{"name":"TaintTolerationPriority","weight":1},
        {"name":"InterPodAffinityPriority","weight":3}],"hardPodAffinitySymmetricWeight":5}"#,
    )
    .expect("write policy");
    let policy = policy.display().to_string();
    let out = berth(&["convert", "--strict", &policy]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = dir.path().join("config.yaml");
    fs::write(&config, &out.stdout).expect("write config");
    let config = config.display().to_string();
    let with_policy = berth(&[
        "simulate",
        "--output",
        "json",
        "--explain",
        "--policy",
        &policy,
    ]);
    let with_config = berth(&[
        "simulate",
        "--output",
        "json",
        "--explain",
        "--config",
        &config,
    ]);
    assert!(
        with_policy.status.success(),
        "{}",
        text(&with_policy.stderr)
    );
    assert!(
        with_config.status.success(),
        "{}",
        text(&with_config.stderr)
    );
    // Entry names differ (the configuration has plugins, not the file's names); placements,
    // scores and messages do not.
    let placements = |o: &Output| -> Vec<(String, String)> {
        text(&o.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
                (
                    v["pod"].to_string(),
                    format!("{} {}", v["node"], v["message"]),
                )
            })
            .collect()
    };
    assert_eq!(placements(&with_policy), placements(&with_config));
    assert!(placements(&with_policy).len() >= 5);

    let check = berth(&["check", "--config", &config]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("hardPodAffinitySymmetricWeight: 5"));
    let both = berth(&["check", &policy, "--config", &config]);
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
    let wrong = berth(&["check", "--config", &policy]);
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr)
            .contains("apiVersion: is \"v1\"; Berth reads kubescheduler.config.k8s.io/v1"),
        "{}",
        text(&wrong.stderr)
    );

    // `berth run` reads the same way, before it contacts any cluster.
    let run = berth(&["run", "--config", &policy]);
    assert!(!run.status.success());
    assert!(
        text(&run.stderr).contains("(this is a Policy file: give it with --policy)"),
        "{}",
        text(&run.stderr)
    );
    // Without --scheduler-name every profile of the file is served, as upstream; with one
    // that names no profile, Berth says so before it contacts any cluster.
    let run = berth(&[
        "run",
        "--config",
        &config,
        "--kubeconfig=/nonexistent/kubeconfig",
    ]);
    assert!(!run.status.success());
    assert!(
        text(&run.stderr).contains("kubeconfig /nonexistent/kubeconfig"),
        "{}",
        text(&run.stderr)
    );
    let run = berth(&["run", "--config", &config, "--scheduler-name=berth"]);
    assert!(!run.status.success());
    assert!(
        text(&run.stderr).contains("no profile has schedulerName \"berth\""),
        "{}",
        text(&run.stderr)
    );
    // As kube-scheduler v1.22: a Policy flag with --config takes the file's other settings,
    // and its profiles are not used (said once).
    let run = berth(&[
        "run",
        "--policy",
        &policy,
        "--config",
        &config,
        "--kubeconfig=/nonexistent/kubeconfig",
    ]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    let log = text(&run.stdout);
    assert!(log.contains("its profiles are not used"), "{log}");
    assert!(
        stderr.contains("kubeconfig /nonexistent/kubeconfig"),
        "{stderr}"
    );
}
