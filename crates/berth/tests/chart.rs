//! The Helm chart (deploy/helm/berth) and the kustomize base (deploy/): rendered, they are
//! accepted by a real apiserver (server-side dry run), the chart's RBAC is deploy/rbac.yaml's,
//! its policy is policies/openshift.json, its `berth run` arguments parse, both ways of
//! delivering plugins render to pods the apiserver keeps as written, and bad values fail
//! `helm template` with a message naming the value.
//!
//! helm comes from `scripts/helm.sh` (built from its Go module and cached, as
//! `scripts/test.sh` does before the tests) or `BERTH_HELM`; `BERTH_SKIP_HELM=1` skips these
//! tests, which otherwise fail when helm cannot be had.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use berth_testcluster::ClusterOptions;
use kube::api::DynamicObject;
use serde_yaml_ng::Value;

use common::{DEPLOY, NAMESPACE, SERIAL, bounded, helm};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The smallest valid WASM module (magic and version), base64: a stand-in plugin.
const EMPTY_MODULE_BASE64: &str = "AGFzbQEAAAA=";

/// `helm template berth deploy/helm/berth --namespace berth-system ARGS`: the rendered text,
/// or helm's error output.
fn template(helm: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(helm)
        .args(["template", "berth", &format!("{DEPLOY}/helm/berth")])
        .args(["--namespace", NAMESPACE])
        .args(args)
        .output()
        .expect("running helm");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn render(helm: &Path, args: &[&str]) -> String {
    template(helm, args).unwrap_or_else(|e| panic!("helm template {args:?} failed:\n{e}"))
}

/// The objects of a multi-document YAML text.
fn documents(yaml: &str) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in yaml.lines().chain(std::iter::once("---")) {
        if line == "---" {
            let value: Value = serde_yaml_ng::from_str(&current)
                .unwrap_or_else(|e| panic!("not YAML ({e}):\n{current}"));
            if !value.is_null() {
                docs.push(value);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

/// The one object of `kind` (and `name`, if given).
fn object<'a>(docs: &'a [Value], kind: &str, name: Option<&str>) -> &'a Value {
    let found: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == kind)
        .filter(|d| name.is_none_or(|n| d["metadata"]["name"] == n))
        .collect();
    assert_eq!(found.len(), 1, "expected one {kind} {name:?}");
    found[0]
}

fn count(docs: &[Value], kind: &str) -> usize {
    docs.iter().filter(|d| d["kind"] == kind).count()
}

/// The kustomize base as `kubectl kustomize deploy/` renders it, for what the base uses: the
/// resources in their order, each object labelled with the `labels` pairs. Anything else in
/// kustomization.yaml (patches, generators, a namespace differing from the files') fails, so
/// a change to the base that this reading would get wrong cannot pass unnoticed.
fn kustomize_base() -> String {
    let kustomization: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(format!("{DEPLOY}/kustomization.yaml")).unwrap(),
    )
    .unwrap();
    let mapping = kustomization.as_mapping().expect("a mapping");
    for key in mapping.keys() {
        let key = key.as_str().unwrap();
        assert!(
            ["apiVersion", "kind", "namespace", "labels", "resources"].contains(&key),
            "kustomization.yaml uses {key:?}, which this test's reading of the base does not apply"
        );
    }
    let namespace = kustomization["namespace"].as_str().unwrap();
    let mut labels = serde_yaml_ng::Mapping::new();
    for entry in kustomization["labels"].as_sequence().unwrap() {
        assert!(
            entry.get("includeSelectors").is_none() && entry.get("includeTemplates").is_none(),
            "labels with selectors/templates are not applied by this test's reading"
        );
        labels.extend(entry["pairs"].as_mapping().unwrap().clone());
    }
    let mut out = Vec::new();
    for resource in kustomization["resources"].as_sequence().unwrap() {
        let file = resource.as_str().unwrap();
        let text = std::fs::read_to_string(format!("{DEPLOY}/{file}")).unwrap();
        for mut doc in documents(&text) {
            if let Some(ns) = doc["metadata"].get("namespace") {
                assert_eq!(ns, namespace, "{file}: namespace differs from the base's");
            }
            let meta = doc["metadata"].as_mapping_mut().unwrap();
            let existing = meta
                .entry("labels".into())
                .or_insert_with(|| Value::Mapping(Default::default()));
            existing.as_mapping_mut().unwrap().extend(labels.clone());
            out.push(serde_yaml_ng::to_string(&doc).unwrap());
        }
    }
    out.join("---\n")
}

fn kind_of(o: &DynamicObject) -> &str {
    o.types.as_ref().map_or("", |t| t.kind.as_str())
}

fn stored<'a>(objects: &'a [DynamicObject], kind: &str) -> &'a serde_json::Value {
    let found: Vec<&DynamicObject> = objects.iter().filter(|o| kind_of(o) == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind} back from the dry run");
    &found[0].data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_and_the_kustomize_base_pass_a_server_side_dry_run() {
    let Some(helm) = helm() else { return };
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let cluster = berth_testcluster::TestCluster::start(ClusterOptions::default()).await?;
        // Dry runs store nothing, so the namespace they go into must exist for real.
        cluster
            .apply_files(&[Path::new(DEPLOY).join("namespace.yaml")])
            .await?;

        let base = cluster
            .dry_run_yaml(&kustomize_base())
            .await
            .context("the kustomize base")?;
        let kinds: Vec<&str> = base.iter().map(kind_of).collect();
        for kind in [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "Deployment",
            "PodDisruptionBudget",
            "Service",
        ] {
            assert!(kinds.contains(&kind), "the base has no {kind}: {kinds:?}");
        }

        let chart = cluster
            .dry_run_yaml(&render(helm, &[]))
            .await
            .context("the chart with its default values")?;
        assert_eq!(
            stored(&chart, "PodDisruptionBudget")["spec"]["maxUnavailable"],
            1
        );
        assert_eq!(stored(&chart, "Service")["spec"]["ports"][0]["port"], 10259);

        // A small module in the ConfigMap's binaryData.
        let set = format!("plugins.configMap.gpu\\.wasm={EMPTY_MODULE_BASE64}");
        let in_config_map = cluster
            .dry_run_yaml(&render(helm, &["--set", &set]))
            .await
            .context("the chart with a module in the ConfigMap")?;
        assert_eq!(
            stored(&in_config_map, "ConfigMap")["binaryData"]["gpu.wasm"],
            EMPTY_MODULE_BASE64
        );

        // Modules from an image, mounted as an image volume: the apiserver keeps the volume
        // (a disabled ImageVolume feature gate would drop it silently).
        let image_volume = cluster
            .dry_run_yaml(&render(
                helm,
                &[
                    "--set",
                    "plugins.image.reference=registry.example/berth-plugins:1",
                ],
            ))
            .await
            .context("the chart with an image volume of plugins")?;
        let pod = &stored(&image_volume, "Deployment")["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][1]["image"]["reference"], "registry.example/berth-plugins:1",
            "{pod:#}"
        );

        // The same image copied into an emptyDir by an init container (older clusters).
        let init = cluster
            .dry_run_yaml(&render(
                helm,
                &[
                    "--set",
                    "plugins.image.reference=registry.example/berth-plugins:1",
                    "--set",
                    "plugins.image.mode=initContainer",
                ],
            ))
            .await
            .context("the chart with an init container copying plugins")?;
        let pod = &stored(&init, "Deployment")["spec"]["template"]["spec"];
        assert_eq!(
            pod["initContainers"][0]["image"],
            "registry.example/berth-plugins:1"
        );
        assert!(pod["volumes"][1]["emptyDir"].is_object(), "{pod:#}");

        // Past a ConfigMap's 1 MiB the apiserver refuses: large modules need the image.
        let values = cluster.dir().join("big-plugin.yaml");
        let big = "A".repeat(1400 * 1024);
        std::fs::write(
            &values,
            format!("plugins:\n  configMap:\n    big.wasm: {big}\n"),
        )?;
        let refused = cluster
            .dry_run_yaml(&render(helm, &["-f", values.to_str().unwrap()]))
            .await;
        match refused {
            Ok(_) => bail!("a ConfigMap holding a 1.05 MB module passed the dry run"),
            Err(e) => {
                let message = format!("{e:#}");
                assert!(
                    message.contains("ConfigMap berth-policy") && message.contains("1048576"),
                    "{message}"
                );
            }
        }
        Ok(())
    })
    .await;
}

/// The rules of the ClusterRole and of the Role in a rendering.
fn rules(docs: &[Value]) -> (Value, Value) {
    (
        object(docs, "ClusterRole", None)["rules"].clone(),
        object(docs, "Role", None)["rules"].clone(),
    )
}

#[test]
fn the_chart_rbac_is_deploy_rbac_yaml() {
    let Some(helm) = helm() else { return };
    let base = documents(&std::fs::read_to_string(format!("{DEPLOY}/rbac.yaml")).unwrap());
    let chart = documents(&render(helm, &[]));
    assert_eq!(rules(&chart), rules(&base));
    // Bound to the chart's ServiceAccount, the Role in the Lease's namespace; the secure port's
    // delegation through system:auth-delegator, as deploy/rbac.yaml binds it.
    for (name, role) in [
        ("berth-scheduler", "berth-scheduler"),
        ("berth-auth-delegator", "system:auth-delegator"),
    ] {
        let binding = object(&chart, "ClusterRoleBinding", Some(name));
        assert_eq!(binding["subjects"][0]["name"], "berth");
        assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
        assert_eq!(
            binding["roleRef"],
            object(&base, "ClusterRoleBinding", Some(name))["roleRef"]
        );
        assert_eq!(binding["roleRef"]["name"], role);
    }
    let lease_ns = render(
        helm,
        &["--set", "leaderElection.resourceNamespace=kube-system"],
    );
    assert_eq!(
        object(&documents(&lease_ns), "Role", None)["metadata"]["namespace"],
        "kube-system"
    );
}

#[test]
fn the_chart_policy_is_policies_openshift_json() {
    let Some(helm) = helm() else { return };
    let chart = documents(&render(helm, &[]));
    let shipped = object(&chart, "ConfigMap", None)["data"]["policy.json"]
        .as_str()
        .unwrap()
        .to_string();
    let policy = std::fs::read_to_string(format!("{ROOT}/policies/openshift.json")).unwrap();
    assert_eq!(
        shipped, policy,
        "values.yaml's policy drifted from policies/openshift.json"
    );
}

/// `berth run` accepts the rendered Deployment's arguments.
fn assert_berth_run_accepts(rendered: &str) {
    let docs = documents(rendered);
    let deployment = object(&docs, "Deployment", None);
    common::assert_berth_run_accepts(&deployment["spec"]["template"]["spec"]["containers"][0]);
}

#[test]
fn the_chart_arguments_are_accepted_by_berth_run() {
    let Some(helm) = helm() else { return };
    assert_berth_run_accepts(&render(helm, &[]));
    let tuned = render(
        helm,
        &[
            "--set",
            "plugins.image.reference=registry.example/p:1",
            "--set",
            "plugins.memoryMiB=256",
            "--set",
            "verbosity=4",
            "--set",
            "leaderElection.leaseDuration=30s",
            "--set",
            "loggingFormat=text",
        ],
    );
    assert!(
        tuned.contains("--plugins=/var/lib/berth/plugin-image/plugins"),
        "{tuned}"
    );
    assert_berth_run_accepts(&tuned);
    let single = render(
        helm,
        &[
            "--set",
            "replicas=1",
            "--set",
            "leaderElection.enabled=false",
        ],
    );
    assert!(single.contains("--leader-elect=false"));
    assert_berth_run_accepts(&single);
}

#[test]
fn the_chart_spreads_replicas_and_budgets_disruptions() {
    let Some(helm) = helm() else { return };
    let docs = documents(&render(helm, &[]));
    let pod = &object(&docs, "Deployment", None)["spec"]["template"]["spec"];
    let term = &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        [0]["podAffinityTerm"];
    assert_eq!(term["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(
        term["labelSelector"]["matchLabels"],
        object(&docs, "Deployment", None)["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(count(&docs, "PodDisruptionBudget"), 1);
    // One replica cannot lose one: no budget that would block every drain.
    let single = documents(&render(helm, &["--set", "replicas=1"]));
    assert_eq!(count(&single, "PodDisruptionBudget"), 0);
    // Affinity given in values replaces the default.
    let pinned = documents(&render(
        helm,
        &[
            "--set",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=role",
            "--set",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
        ],
    ));
    let affinity = &object(&pinned, "Deployment", None)["spec"]["template"]["spec"]["affinity"];
    assert!(affinity.get("podAntiAffinity").is_none(), "{affinity:?}");
    assert!(affinity.get("nodeAffinity").is_some(), "{affinity:?}");
}

#[test]
fn bad_values_fail_naming_the_value() {
    let Some(helm) = helm() else { return };
    let cases: &[(&[&str], &str)] = &[
        (
            &["--set", "leaderElection.enabled=false"],
            "replicas is 2 but leaderElection.enabled is false",
        ),
        (
            &["--set", "plugins.image.mode=copy"],
            "plugins.image.mode is \"copy\"; accepted: imageVolume",
        ),
        (
            &[
                "--set",
                "plugins.image.reference=r/p:1",
                "--set",
                "plugins.configMap.a\\.wasm=AGFzbQEAAAA=",
            ],
            "plugins.configMap and plugins.image.reference are both set",
        ),
        (
            &["--set", "plugins.configMap.a\\.txt=AGFzbQEAAAA="],
            "plugins.configMap key \"a.txt\": plugin file names end in .wasm",
        ),
        (
            &["--set", "plugins.configMap.a\\.wasm=not base64!"],
            "plugins.configMap.a.wasm is not base64",
        ),
        (
            &["--set", "plugins.image.path=plugins"],
            "plugins.image.path is \"plugins\"; it must be an absolute directory",
        ),
    ];
    for (args, expected) in cases {
        match template(helm, args) {
            Ok(_) => panic!("helm template {args:?} succeeded"),
            Err(e) => assert!(
                e.contains(expected),
                "{args:?}: expected {expected:?} in:\n{e}"
            ),
        }
    }
}

#[test]
fn a_policy_given_as_a_yaml_map_renders_as_the_same_json() {
    let Some(helm) = helm() else { return };
    let policy = std::fs::read_to_string(format!("{ROOT}/policies/openshift.json")).unwrap();
    let expected: serde_json::Value = serde_json::from_str(&policy).unwrap();
    // JSON is YAML: under `policy:` it is a map, not a string.
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, format!("policy: {}\n", expected)).unwrap();
    let docs = documents(&render(helm, &["-f", values.to_str().unwrap()]));
    let shipped = object(&docs, "ConfigMap", None)["data"]["policy.json"]
        .as_str()
        .unwrap();
    let rendered: serde_json::Value = serde_json::from_str(shipped)
        .unwrap_or_else(|e| panic!("the rendered policy is not JSON ({e}):\n{shipped}"));
    assert_eq!(rendered, expected);
}

/// The chart's default container arguments: the kustomize base's, with the lease timing
/// spelled out at `berth run`'s defaults.
/// kubeadm v1.22's kube-scheduler arguments (deploy/legacy, as kubeadm writes them) given as
/// the chart's extraArgs render into a Deployment `berth run` accepts, and the secure port and
/// its probes follow the values.
#[test]
fn kubeadms_v122_arguments_run_through_the_chart() {
    let Some(helm) = helm() else { return };
    let manifest: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(format!("{DEPLOY}/legacy/kubeadm-v1.22-kube-scheduler.yaml"))
            .unwrap(),
    )
    .unwrap();
    let kubeadm: Vec<String> = manifest["spec"]["containers"][0]["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .skip(1)
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(kubeadm.contains(&"--port=0".to_string()), "{kubeadm:?}");
    let mut values = Vec::new();
    for (i, arg) in kubeadm.iter().enumerate() {
        values.push("--set-string".to_string());
        values.push(format!("extraArgs[{i}]={arg}"));
    }
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let rendered = render(helm, &values);
    for arg in &kubeadm {
        assert!(rendered.contains(arg.as_str()), "{arg} not rendered");
    }
    assert_berth_run_accepts(&rendered);
    let plain = render(
        helm,
        &[
            "--set",
            "metrics.port=0",
            "--set",
            "metrics.insecurePort=10251",
        ],
    );
    assert!(
        plain.contains("--secure-port=0") && plain.contains("--port=10251"),
        "{plain}"
    );
    let plain_docs = documents(&plain);
    let container =
        &object(&plain_docs, "Deployment", None)["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(
        count(&plain_docs, "Service"),
        0,
        "no HTTPS port, no HTTPS Service"
    );
    assert_berth_run_accepts(&plain);
    let docs = documents(&render(helm, &[]));
    let probe = &object(&docs, "Deployment", None)["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
        ["httpGet"];
    assert_eq!(probe["scheme"], "HTTPS");
    assert_eq!(probe["port"], "https");
    assert_eq!(
        object(&docs, "ClusterRoleBinding", Some("berth-auth-delegator"))["roleRef"]["name"],
        "system:auth-delegator"
    );
}

#[test]
fn the_chart_runs_berth_as_the_kustomize_base_does() {
    let Some(helm) = helm() else { return };
    let args = |docs: &[Value]| -> Vec<String> {
        object(docs, "Deployment", None)["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    let base = documents(&std::fs::read_to_string(format!("{DEPLOY}/deployment.yaml")).unwrap());
    let timing = [
        "--leader-elect-lease-duration=15s",
        "--leader-elect-renew-deadline=10s",
        "--leader-elect-retry-period=2s",
    ];
    let chart: Vec<String> = args(&documents(&render(helm, &[])))
        .into_iter()
        .filter(|a| !timing.contains(&a.as_str()))
        .collect();
    assert_eq!(chart, args(&base));
}

/// A module delivered in the ConfigMap works where the pod finds it: the gpu-model example's
/// policy and module, put in through the chart's values, written out of the rendered
/// ConfigMap as its volume holds them (data and decoded binaryData side by side), schedule
/// the example's cluster exactly as `expected.jsonl` says, with no `--plugins` (the policy's
/// directory, as in the pod).
#[test]
fn a_module_in_the_config_map_is_loaded_beside_the_policy() {
    use base64::Engine as _;
    let Some(helm) = helm() else { return };
    let module = Path::new(ROOT).join("plugins/dist/gpu-model.wasm");
    if !module.exists() {
        let out = Command::new("bash")
            .arg(format!("{ROOT}/scripts/build-plugins.sh"))
            .output()
            .expect("running scripts/build-plugins.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let example = Path::new(ROOT).join("plugins/gpu-model/example");
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    let policy = std::fs::read_to_string(example.join("policy.json")).unwrap();
    let values_doc = serde_json::json!({
        "policy": policy,
        "plugins": {"configMap": {"gpu-model.wasm": b64.encode(std::fs::read(&module).unwrap())}},
    });
    std::fs::write(&values, values_doc.to_string()).unwrap();
    let docs = documents(&render(helm, &["-f", values.to_str().unwrap()]));
    let config_map = object(&docs, "ConfigMap", None);

    let volume = dir.path().join("etc-berth");
    std::fs::create_dir(&volume).unwrap();
    for (key, text) in config_map["data"].as_mapping().unwrap() {
        std::fs::write(volume.join(key.as_str().unwrap()), text.as_str().unwrap()).unwrap();
    }
    for (key, encoded) in config_map["binaryData"].as_mapping().unwrap() {
        let bytes = b64.decode(encoded.as_str().unwrap()).unwrap();
        std::fs::write(volume.join(key.as_str().unwrap()), bytes).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .arg("simulate")
        .args(["--output", "json", "--policy"])
        .arg(volume.join("policy.json"))
        .arg("--cluster")
        .arg(example.join("cluster.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = std::fs::read_to_string(example.join("expected.jsonl")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

/// The PodDisruptionBudget, the metrics Service and the replicas' anti-affinity select the
/// Deployment's pods (the apiserver accepts selectors that match nothing).
fn assert_selectors_match_the_pods(what: &str, docs: &[Value]) {
    let deployment = object(docs, "Deployment", None);
    let labels = deployment["spec"]["template"]["metadata"]["labels"]
        .as_mapping()
        .unwrap();
    let term = &deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        [0]["podAffinityTerm"];
    let selectors = [
        ("anti-affinity", &term["labelSelector"]["matchLabels"]),
        (
            "PodDisruptionBudget",
            &object(docs, "PodDisruptionBudget", None)["spec"]["selector"]["matchLabels"],
        ),
        (
            "Service",
            &object(docs, "Service", None)["spec"]["selector"],
        ),
        ("Deployment", &deployment["spec"]["selector"]["matchLabels"]),
    ];
    for (name, selector) in selectors {
        let selector = selector
            .as_mapping()
            .unwrap_or_else(|| panic!("{what}: the {name} has no selector"));
        assert!(
            !selector.is_empty(),
            "{what}: the {name}'s selector is empty"
        );
        for (key, value) in selector {
            assert_eq!(
                labels.get(key),
                Some(value),
                "{what}: the {name} selects {key:?}={value:?}, which the pods do not carry"
            );
        }
    }
}

#[test]
fn the_budget_service_and_anti_affinity_select_the_pods() {
    assert_selectors_match_the_pods("the kustomize base", &documents(&kustomize_base()));
    let Some(helm) = helm() else { return };
    assert_selectors_match_the_pods("the chart", &documents(&render(helm, &[])));
}

#[test]
fn the_chart_passes_helm_lint_strict() {
    let Some(helm) = helm() else { return };
    let out = Command::new(helm)
        .args(["lint", "--strict", &format!("{DEPLOY}/helm/berth")])
        .output()
        .expect("running helm lint");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `policyConfigMap` runs Berth on a Policy read from the API: v1.22's flags, and RBAC grown
/// by exactly get and watch on that one ConfigMap, in its namespace.
#[test]
fn a_policy_configmap_grants_get_and_watch_on_it_alone() {
    let Some(helm) = helm() else { return };
    let rendered = render(
        helm,
        &[
            "--set",
            "policyConfigMap.name=scheduler-policy",
            "--set",
            "policyConfigMap.namespace=kube-system",
        ],
    );
    assert!(
        rendered.contains("--policy-configmap=scheduler-policy"),
        "{rendered}"
    );
    assert!(rendered.contains("--policy-configmap-namespace=kube-system"));
    assert!(!rendered.contains("--policy=/etc/berth/policy.json"));
    assert_berth_run_accepts(&rendered);
    let docs = documents(&rendered);
    let role = object(&docs, "Role", Some("berth-policy-configmap"));
    assert_eq!(role["metadata"]["namespace"], "kube-system");
    let rules: Value = serde_yaml_ng::from_str(
        "- apiGroups: ['']\n  resources: [configmaps]\n  resourceNames: [scheduler-policy]\n  verbs: [get, watch]\n",
    )
    .unwrap();
    assert_eq!(role["rules"], rules);
    let binding = object(&docs, "RoleBinding", Some("berth-policy-configmap"));
    assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
    let default = documents(&render(helm, &[]));
    assert_eq!(
        count(&default, "Role"),
        1,
        "only the lease's Role by default"
    );
}
