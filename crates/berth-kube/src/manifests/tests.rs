//! Table-driven tests of each kind's expansion and of admission, from YAML as users write it.

use super::*;
use crate::parse_cluster;

const CLUSTER: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {zone: a, disk: ssd}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b, labels: {zone: b}}
  spec:
    taints: [{key: dedicated, value: infra, effect: NoSchedule}]
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-c, labels: {zone: c}}
  spec:
    taints: [{key: node.kubernetes.io/not-ready, effect: NoExecute}]
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Namespace
  metadata: {name: default}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team
    annotations:
      scheduler.alpha.kubernetes.io/node-selector: zone=a
      scheduler.alpha.kubernetes.io/defaultTolerations: '[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]'
- apiVersion: v1
  kind: LimitRange
  metadata: {name: defaults, namespace: team}
  spec:
    limits:
    - type: Container
      default: {cpu: 500m, memory: 256Mi}
      defaultRequest: {cpu: 100m}
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: high}
  value: 1000
  preemptionPolicy: Never
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: normal}
  value: 10
  globalDefault: true
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata:
    name: fast
    annotations: {storageclass.kubernetes.io/is-default-class: "true"}
  provisioner: example.com/fast
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: v1
  kind: Pod
  metadata: {name: taken, namespace: default}
  spec: {containers: [{name: c}]}
"#;

fn template(labels: &str, extra: &str) -> String {
    format!(
        "  template:\n    metadata: {{labels: {labels}}}\n    spec:\n      containers: [{{name: app, resources: {{requests: {{cpu: 200m}}}}}}]\n{extra}"
    )
}

fn run(manifest: &str) -> Result<Expansion, String> {
    let objects = parse_cluster(CLUSTER, "cluster.yaml").expect("cluster");
    let manifests = parse_manifests(manifest, "app.yaml").map_err(|e| e.to_string())?;
    expand(&manifests, &objects).map_err(|e| e.to_string())
}

fn names(e: &Expansion) -> Vec<String> {
    e.pods.iter().map(|p| p.key()).collect()
}

#[test]
fn kinds_table() {
    // (name, manifest, pods wanted, what every pod must show)
    type Check = fn(&Expansion) -> Result<(), String>;
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: 3\n  selector: {{matchLabels: {{app: web}}}}\n{}",
        template("{app: web}", "")
    );
    let paused = deployment.replace("  replicas: 3\n", "  replicas: 3\n  paused: true\n");
    let replica_set = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: cache}}\nspec:\n  selector: {{matchLabels: {{app: cache}}}}\n{}",
        template("{app: cache}", "")
    );
    let stateful_set = format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db}}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {{matchLabels: {{app: db}}}}\n{}  volumeClaimTemplates:\n  - metadata: {{name: data}}\n    spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}\n",
        template("{app: db}", "")
    );
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: batch}}\nspec:\n  parallelism: 4\n  completions: 3\n{}",
        template("{}", "      restartPolicy: Never\n")
    );
    let indexed_job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: idx}}\nspec:\n  completionMode: Indexed\n  completions: 2\n  parallelism: 2\n{}",
        template("{}", "      restartPolicy: OnFailure\n")
    );
    let suspended_job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: later}}\nspec:\n  suspend: true\n{}",
        template("{}", "      restartPolicy: Never\n")
    );
    let daemon_set = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n{}",
        template("{app: agent}", "")
    );
    let tolerant_daemon_set = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: logs}}\nspec:\n  selector: {{matchLabels: {{app: logs}}}}\n{}",
        template(
            "{app: logs}",
            "      tolerations: [{key: dedicated, operator: Exists}]\n"
        )
    );
    let selective_daemon_set = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: ssd}}\nspec:\n  selector: {{matchLabels: {{app: ssd}}}}\n{}",
        template("{app: ssd}", "      nodeSelector: {disk: ssd}\n")
    );
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: solo}\nspec: {containers: [{name: c}]}\n"
            .to_owned();
    let cases: Vec<(&str, String, usize, Check)> = vec![
        ("deployment", deployment, 3, |e| {
            let rs = &e.workloads[0].note;
            let p = &e.pods[0];
            let owner = p.controller().ok_or("no controller")?;
            let hash = p
                .meta
                .labels
                .get("pod-template-hash")
                .ok_or("no hash label")?;
            check(
                owner.kind == "ReplicaSet" && owner.name == format!("web-{hash}"),
                "owner",
            )?;
            check(p.meta.name.starts_with(&format!("web-{hash}-")), "pod name")?;
            check(
                p.meta.name.len() == format!("web-{hash}-").len() + 5,
                "suffix length",
            )?;
            check(
                rs.as_deref() == Some(&*format!("through ReplicaSet web-{hash}")),
                "note",
            )?;
            check(
                e.selector_objects.len() == 1,
                "the ReplicaSet selects its pods",
            )?;
            check(
                p.priority == 10 && p.priority_class_name == "normal",
                "global default",
            )
        }),
        ("paused deployment", paused, 0, |e| {
            check(e.selector_objects.is_empty(), "no ReplicaSet")?;
            check(
                e.workloads[0]
                    .note
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("paused"),
                "note",
            )
        }),
        ("replica set, replicas default 1", replica_set, 1, |e| {
            let owner = e.pods[0].controller().ok_or("no controller")?;
            check(owner.kind == "ReplicaSet" && owner.name == "cache", "owner")?;
            check(
                e.pods[0].meta.labels.get("app").map(String::as_str) == Some("cache"),
                "labels",
            )
        }),
        ("stateful set", stateful_set, 2, |e| {
            check(
                names(e) == ["default/db-0", "default/db-1"],
                "ordinal names",
            )?;
            let p = &e.pods[1];
            check(
                p.meta
                    .labels
                    .get("statefulset.kubernetes.io/pod-name")
                    .map(String::as_str)
                    == Some("db-1"),
                "pod-name label",
            )?;
            check(
                p.volumes.iter().any(|v| {
                    v.name == "data"
                        && v.source
                            == model::VolumeSource::Pvc {
                                claim_name: "data-db-1".into(),
                            }
                }),
                "claim volume",
            )?;
            check(e.claims.len() == 2, "two claims")?;
            check(e.claims[1].meta.name == "data-db-1", "claim name")?;
            check(
                e.claims[1].storage_class_name.as_deref() == Some("fast"),
                "default class",
            )?;
            check(
                e.workloads[0]
                    .note
                    .as_deref()
                    .unwrap_or_default()
                    .contains("OrderedReady"),
                "note",
            )
        }),
        ("job: min(parallelism, completions)", job, 3, |e| {
            let p = &e.pods[0];
            check(
                p.meta.labels.get("job-name").map(String::as_str) == Some("batch"),
                "job-name",
            )?;
            check(
                p.meta.labels.contains_key("controller-uid"),
                "controller-uid",
            )?;
            check(p.controller().is_some_and(|o| o.kind == "Job"), "owner")
        }),
        ("indexed job", indexed_job, 2, |e| {
            check(
                e.pods[1].meta.name.starts_with("idx-1-"),
                "index in the name",
            )?;
            check(
                e.pods[1]
                    .meta
                    .annotations
                    .get("batch.kubernetes.io/job-completion-index")
                    .map(String::as_str)
                    == Some("1"),
                "index annotation",
            )
        }),
        ("suspended job", suspended_job, 0, |e| {
            check(
                e.workloads[0]
                    .note
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("suspended"),
                "note",
            )
        }),
        (
            "daemon set: tainted node-b skipped, not-ready node-c tolerated",
            daemon_set,
            2,
            |e| {
                let pinned: Vec<&str> = e
                    .pods
                    .iter()
                    .map(|p| {
                        let term = &p.affinity.node_required.as_ref().unwrap()[0];
                        term.match_fields[0].values[0].as_str()
                    })
                    .collect();
                check(
                    pinned == ["node-a", "node-c"],
                    "pinned to node-a and node-c",
                )?;
                check(
                    e.pods[0]
                        .tolerations
                        .iter()
                        .any(|t| t.key == "node.kubernetes.io/unschedulable"),
                    "the controller's tolerations",
                )?;
                check(
                    e.workloads[0].note.as_deref()
                        == Some(
                            "2 of 3 node(s) eligible; 1 node(s) had taints the daemon pod does not tolerate",
                        ),
                    "note",
                )
            },
        ),
        (
            "daemon set tolerating the taint",
            tolerant_daemon_set,
            3,
            |_| Ok(()),
        ),
        (
            "daemon set with a node selector",
            selective_daemon_set,
            1,
            |e| {
                check(e.workloads[0].note.as_deref().unwrap_or_default().contains("1 of 3 node(s) eligible; 2 node(s) didn't match the DaemonSet's node selector/affinity"), "note")
            },
        ),
        ("bare pod", pod, 1, |e| {
            check(names(e) == ["default/solo"], "name as written")?;
            check(e.pods[0].meta.owners.is_empty(), "no owner")?;
            check(
                e.workloads[0].requests == PodRequests::default(),
                "no requests",
            )
        }),
    ];
    for (name, manifest, want, verify) in cases {
        let expansion = run(&manifest).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            expansion.pods.len(),
            want,
            "{name}: {:?}",
            names(&expansion)
        );
        assert_eq!(expansion.workloads[0].pods.len(), want, "{name}");
        if let Err(why) = verify(&expansion) {
            panic!("{name}: {why}");
        }
        // Deterministic: the same manifest gives the same names.
        assert_eq!(names(&run(&manifest).unwrap()), names(&expansion), "{name}");
    }
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what} wrong"))
    }
}

#[test]
fn admission_table() {
    let pod = |namespace: &str, spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: {namespace}}}\nspec:\n{spec}"
        )
    };
    // LimitRange, namespace selector and tolerations, priority.
    let e = run(&pod(
        "team",
        "  priorityClassName: high\n  initContainers: [{name: init, resources: {requests: {cpu: \"1\"}, limits: {cpu: \"1\"}}}]\n  containers: [{name: a}, {name: b, resources: {limits: {cpu: 300m}}}]\n",
    ))
    .unwrap();
    let p = &e.pods[0];
    let requests = |c: &model::Container| c.requests.clone();
    assert_eq!(
        requests(&p.containers[0]),
        [("cpu".to_owned(), 100), ("memory".to_owned(), 268_435_456)],
        "defaultRequest cpu, memory request from the default limit"
    );
    assert_eq!(
        requests(&p.containers[1])[0],
        ("cpu".to_owned(), 300),
        "request from own limit"
    );
    assert_eq!(
        requests(&p.init_containers[0])[0],
        ("cpu".to_owned(), 1000),
        "init keeps its own"
    );
    assert_eq!(p.node_selector.get("zone").map(String::as_str), Some("a"));
    assert!(
        p.tolerations.iter().any(|t| t.key == "dedicated"),
        "namespace tolerations"
    );
    assert!(
        p.tolerations
            .iter()
            .any(|t| t.key == "node.kubernetes.io/not-ready"),
        "300 s"
    );
    assert!(
        p.tolerations
            .iter()
            .any(|t| t.key == "node.kubernetes.io/memory-pressure"),
        "not BestEffort"
    );
    assert_eq!((p.priority, p.preempt_never), (1000, true));
    let requests = &e.workloads[0].requests;
    assert_eq!(requests.containers[0], ("cpu".to_owned(), 400));
    assert_eq!(requests.init_containers[0], ("cpu".to_owned(), 1000));
    assert_eq!(
        requests.effective[0],
        ("cpu".to_owned(), 1000),
        "init containers reserve more"
    );
    let notes = e.workloads[0].admission.join("; ");
    for want in [
        "LimitRange defaults set",
        "node selector zone=a from namespace team",
        "priority 1000 from PriorityClass high",
        "1 default toleration(s) from namespace team",
    ] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
    // A BestEffort pod in default gets no memory-pressure toleration.
    let e = run(&pod("default", "  containers: [{name: a}]\n")).unwrap();
    assert!(
        !e.pods[0]
            .tolerations
            .iter()
            .any(|t| t.key == "node.kubernetes.io/memory-pressure")
    );

    // Rejections: (spec, namespace, wanted message parts)
    let rejected = [
        (
            "  priorityClassName: gold\n  containers: [{name: a}]\n",
            "default",
            "spec.priorityClassName: no PriorityClass with name gold was found",
        ),
        (
            "  priority: 5\n  containers: [{name: a}]\n",
            "default",
            "spec.priority: the integer value of priority (5) must not be provided",
        ),
        (
            "  nodeSelector: {zone: b}\n  containers: [{name: a}]\n",
            "team",
            "pod node label selector conflicts with its namespace node label selector: zone=b",
        ),
        (
            "  containers: [{name: a}]\n",
            "nowhere",
            "metadata.namespace: namespace \"nowhere\" is not in the cluster file",
        ),
        (
            "  containers: [{name: a, resources: {requests: {cpu: 600m}}}]\n",
            "team",
            "spec.containers[0].resources.requests.cpu: 600m must be less than or equal to cpu limit 500m",
        ),
        (
            "  nodeName: node-a\n  containers: [{name: a}]\n",
            "default",
            "spec.nodeName: set to \"node-a\"",
        ),
    ];
    for (spec, namespace, want) in rejected {
        let got = run(&pod(namespace, spec)).map(|_| ()).unwrap_err();
        assert!(got.starts_with("app.yaml: Pod"), "{got}");
        assert!(got.contains(want), "want {want:?}, got {got}");
    }
}

#[test]
fn bad_manifests_table() {
    let deployment = |spec: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n{spec}")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "unknown kind",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n".into(),
            "app.yaml: ConfigMap x: kind ConfigMap cannot be applied (--apply takes apps/v1 Deployment",
        ),
        (
            "second document of a file",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\napiVersion: apps/v1\nkind: CronJob\nmetadata: {name: x}\n".into(),
            "app.yaml: document 1 (CronJob x): kind CronJob cannot be applied",
        ),
        (
            "negative replicas",
            deployment(&format!("  replicas: -2\n  selector: {{matchLabels: {{app: web}}}}\n{}", template("{app: web}", ""))),
            "spec.replicas: must be greater than or equal to 0, found -2",
        ),
        (
            "too many replicas",
            deployment(&format!("  replicas: 2000000\n  selector: {{matchLabels: {{app: web}}}}\n{}", template("{app: web}", ""))),
            "spec.replicas: 2000000 is more than the 100000 pods",
        ),
        (
            "missing template",
            deployment("  selector: {matchLabels: {app: web}}\n"),
            "app.yaml: Deployment web: spec.template.spec: missing (a pod template needs spec.containers)",
        ),
        (
            "selector not matching",
            deployment(&format!("  selector: {{matchLabels: {{app: api}}}}\n{}", template("{app: web}", ""))),
            "spec.template.metadata.labels: `selector` does not match template `labels`",
        ),
        (
            "unparseable quantity",
            deployment(&format!("  selector: {{matchLabels: {{app: web}}}}\n{}", template("{app: web}", "").replace("200m", "lots"))),
            "spec.template.spec.containers[0].resources.requests.cpu",
        ),
        (
            "name of an existing pod",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: taken}\nspec: {containers: [{name: c}]}\n".into(),
            "pod default/taken would collide with a pod of that name already in the cluster",
        ),
        (
            "job restarting Always",
            format!("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n{}", template("{}", "      restartPolicy: Always\n")),
            "spec.template.spec.restartPolicy: \"Always\" is not allowed",
        ),
        (
            "a misspelt field, as kubectl's strict validation refuses it",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}], nodeSelecter: {disk: ssd}}\n".into(),
            "app.yaml: Pod a: spec.nodeSelecter: unknown field of Pod in Kubernetes v1.36's API (kubectl apply refuses it too",
        ),
        (
            "nothing",
            "# only a comment\n".into(),
            "app.yaml: no objects found (--apply takes",
        ),
    ];
    for (name, manifest, want) in cases {
        let got = run(&manifest).map(|_| ()).unwrap_err();
        assert!(got.contains(want), "{name}: want {want:?}, got {got}");
    }
}

#[test]
fn lists_and_json() {
    let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "c"}]}}]}"#;
    let e = run(json).unwrap();
    assert_eq!(names(&e), ["default/a", "default/b"]);
    assert_eq!(e.workloads[1].source, "app.yaml: item 1");
}
