//! deploy/ stays consistent with the binary and the policy it ships: the ConfigMap holds
//! policies/openshift.json, and the Deployment's arguments are ones `berth run` accepts.

mod common;

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
    common::assert_berth_run_accepts(&deployment["spec"]["template"]["spec"]["containers"][0]);
}
