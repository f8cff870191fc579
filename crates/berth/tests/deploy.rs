//! deploy/ stays consistent with the binary and the policy it ships: the ConfigMap holds
//! policies/openshift.json, and the Deployment's arguments are ones `berth run` accepts.

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn yaml(path: &str) -> serde_yaml_ng::Value {
    let text = std::fs::read_to_string(format!("{ROOT}/{path}")).expect(path);
    serde_yaml_ng::from_str(&text).expect(path)
}

#[test]
fn the_policy_config_map_is_policies_openshift_json() {
    let map = yaml("deploy/policy.yaml");
    let shipped = map["data"]["policy.json"]
        .as_str()
        .expect("data.policy.json");
    let policy = std::fs::read_to_string(format!("{ROOT}/policies/openshift.json")).unwrap();
    assert_eq!(
        shipped, policy,
        "deploy/policy.yaml drifted from policies/openshift.json"
    );
}

#[test]
fn the_deployment_arguments_are_accepted_by_berth_run() {
    let deployment = yaml("deploy/deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_sequence()
        .expect("container args")
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .map(|a| match a.strip_prefix("--policy=") {
            // The mounted ConfigMap's file is the repository's policy.
            Some(_) => format!("--policy={ROOT}/policies/openshift.json"),
            None => a,
        })
        .collect();
    assert_eq!(args[0], "run");
    // Every argument parses; the run then stops at the missing API server configuration.
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(&args)
        .arg("--kubeconfig=/nonexistent/kubeconfig")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("kubeconfig /nonexistent/kubeconfig"),
        "expected a kubeconfig error, got:\n{stderr}"
    );
}
