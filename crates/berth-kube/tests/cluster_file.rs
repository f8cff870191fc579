//! Tests for reading cluster files: input formats, dispatch by kind, and error messages.

use std::path::{Path, PathBuf};

use berth_kube::{
    ClusterFileError, ClusterObjects, Format, Location, load_cluster_file, parse_cluster,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn parse(text: &str) -> ClusterObjects {
    parse_cluster(text, "cluster.yaml").unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

fn parse_err(text: &str) -> ClusterFileError {
    match parse_cluster(text, "cluster.yaml") {
        Ok(objects) => panic!("expected an error, got {objects:?}"),
        Err(error) => error,
    }
}

fn names<
    T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
>(
    objects: &[T],
) -> Vec<&str> {
    objects
        .iter()
        .map(|o| o.metadata().name.as_deref().unwrap_or(""))
        .collect()
}

/// Counts per kind, in `ClusterObjects` field order.
fn counts(o: &ClusterObjects) -> [usize; 12] {
    [
        o.nodes.len(),
        o.pods.len(),
        o.namespaces.len(),
        o.services.len(),
        o.replication_controllers.len(),
        o.replica_sets.len(),
        o.stateful_sets.len(),
        o.persistent_volumes.len(),
        o.persistent_volume_claims.len(),
        o.storage_classes.len(),
        o.csi_nodes.len(),
        o.priority_classes.len(),
    ]
}

#[test]
fn kubectl_list_yaml() {
    let path = fixture("list.yaml");
    let objects = load_cluster_file(&path).unwrap();
    assert_eq!(names(&objects.nodes), ["node-a"]);
    assert_eq!(names(&objects.pods), ["web-0"]);
    let allocatable = objects.nodes[0]
        .status
        .as_ref()
        .unwrap()
        .allocatable
        .as_ref()
        .unwrap();
    assert_eq!(allocatable["cpu"].0, "3800m");
    assert_eq!(
        objects.warnings,
        [format!(
            "{}: item 2 (ConfigMap kube-system/foo): kind ConfigMap is not used by the scheduler, skipped",
            path.display()
        )]
    );
}

#[test]
fn typed_list_json_infers_item_kind() {
    let objects = load_cluster_file(&fixture("nodelist.json")).unwrap();
    assert_eq!(names(&objects.nodes), ["node-a", "node-b"]);
    assert!(objects.warnings.is_empty());
}

#[test]
fn multi_document_yaml_with_lists_and_empty_documents() {
    let path = fixture("multi.yaml");
    let objects = load_cluster_file(&path).unwrap();
    assert_eq!(counts(&objects), [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1]);
    assert_eq!(names(&objects.persistent_volumes), ["pv-1"]);
    assert_eq!(names(&objects.persistent_volume_claims), ["data-web-0"]);
    assert_eq!(objects.priority_classes[0].value, Some(1000));
    assert_eq!(
        objects.warnings,
        [format!(
            "{}: document 4 (Deployment default/web): kind Deployment is not used by the scheduler, skipped",
            path.display()
        )]
    );
}

#[test]
fn every_scheduler_kind_is_dispatched() {
    let text = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n}}
- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}, spec: {containers: [{name: c}]}}
- {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
- {apiVersion: v1, kind: Service, metadata: {name: s, namespace: ns}}
- {apiVersion: v1, kind: ReplicationController, metadata: {name: rc, namespace: ns}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs, namespace: ns}}
- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: ss, namespace: ns}}
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: pvc, namespace: ns}}
- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: sc}, provisioner: x}
- {apiVersion: storage.k8s.io/v1, kind: CSINode, metadata: {name: n}, spec: {drivers: []}}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: pc}, value: 5}
"#;
    let objects = parse(text);
    assert_eq!(counts(&objects), [1; 12]);
    assert!(objects.warnings.is_empty());
}

#[test]
fn accepted_formats() {
    let node_yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n";
    let node_json = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}"#;
    // (description, text, node names, pod names)
    let cases: &[(&str, String, &[&str], &[&str])] = &[
        ("single YAML object", node_yaml.to_owned(), &["a"], &[]),
        ("single JSON object", node_json.to_owned(), &["a"], &[]),
        ("JSON with a byte order mark", format!("\u{feff}{node_json}"), &["a"], &[]),
        ("JSON after blank lines", format!("\n\n  {node_json}\n"), &["a"], &[]),
        (
            "JSON stream",
            format!("{node_json}\n{}", node_json.replace("\"a\"", "\"b\"")),
            &["a", "b"],
            &[],
        ),
        (
            "JSON List",
            format!(r#"{{"apiVersion": "v1", "kind": "List", "items": [{node_json}]}}"#),
            &["a"],
            &[],
        ),
        (
            "YAML flow style starting with a brace",
            "{apiVersion: v1, kind: Node, metadata: {name: a}}".to_owned(),
            &["a"],
            &[],
        ),
        ("YAML with a leading comment and ---", format!("# nodes\n---\n{node_yaml}"), &["a"], &[]),
        (
            "multi-document YAML with empty documents",
            format!("---\n---\n{node_yaml}---\n\n---\n{}---\n", node_yaml.replace("name: a", "name: b")),
            &["a", "b"],
            &[],
        ),
        (
            "typed PodList without item kinds",
            "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: p}\n  spec: {containers: [{name: c}]}\n"
                .to_owned(),
            &[],
            &["p"],
        ),
        ("List with null items", "apiVersion: v1\nkind: List\nitems: null\n".to_owned(), &[], &[]),
        ("List without items", "apiVersion: v1\nkind: List\n".to_owned(), &[], &[]),
        (
            "unquoted numeric quantities",
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus:\n  allocatable: {cpu: 4, memory: 1000000, pods: 110}\n  capacity: {cpu: 0.5}\n"
                .to_owned(),
            &["a"],
            &[],
        ),
    ];
    for (description, text, nodes, pods) in cases {
        let objects =
            parse_cluster(text, "cluster.yaml").unwrap_or_else(|e| panic!("{description}: {e}"));
        assert_eq!(names(&objects.nodes), *nodes, "{description}");
        assert_eq!(names(&objects.pods), *pods, "{description}");
        assert!(
            objects.warnings.is_empty(),
            "{description}: {:?}",
            objects.warnings
        );
    }
}

#[test]
fn unquoted_quantities_become_strings() {
    let objects = parse(
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus:\n  allocatable: {cpu: 4, memory: 0.5}\n",
    );
    let allocatable = objects.nodes[0]
        .status
        .as_ref()
        .unwrap()
        .allocatable
        .as_ref()
        .unwrap();
    assert_eq!(allocatable["cpu"].0, "4");
    assert_eq!(allocatable["memory"].0, "0.5");
}

#[test]
fn files_without_objects_warn() {
    for text in ["", "# nothing here\n", "---\n---\n", "null"] {
        let objects = parse(text);
        assert_eq!(counts(&objects), [0; 12], "{text:?}");
        assert_eq!(
            objects.warnings,
            ["cluster.yaml: no Kubernetes objects found"],
            "{text:?}"
        );
    }
}

#[test]
fn missing_file() {
    let error = load_cluster_file(Path::new("/nonexistent/cluster.yaml")).unwrap_err();
    assert!(matches!(error, ClusterFileError::Read { .. }));
    assert_eq!(
        error.to_string(),
        "cannot read cluster file /nonexistent/cluster.yaml: No such file or directory"
    );
}

#[test]
fn syntax_errors_give_line_and_column() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: a\n";
    match parse_err(yaml) {
        ClusterFileError::Syntax {
            format,
            line,
            column,
            ref message,
            ..
        } => {
            assert_eq!(format, Format::Yaml);
            assert!(line.is_some() && column.is_some(), "{message}");
            assert!(message.contains("line"), "{message}");
        }
        other => panic!("unexpected error {other}"),
    }

    let second_document = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [\n";
    match parse_err(second_document) {
        ClusterFileError::Syntax { line, .. } => assert!(line >= Some(5), "{line:?}"),
        other => panic!("unexpected error {other}"),
    }

    let json = "{\"apiVersion\": \"v1\",\n \"kind\": \"Node\",\n \"metadata\": {\"name\": \"a\"}";
    let error = parse_err(json);
    assert!(
        matches!(
            error,
            ClusterFileError::Syntax {
                format: Format::Json,
                line: Some(3),
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("cluster.yaml: invalid JSON: EOF while parsing an object at line 3"),
        "{message}"
    );

    let duplicate_key = "apiVersion: v1\nkind: Node\nkind: Pod\n";
    let message = parse_err(duplicate_key).to_string();
    assert!(
        message.starts_with("cluster.yaml: invalid YAML: "),
        "{message}"
    );
    assert_eq!(
        message,
        "cluster.yaml: invalid YAML: duplicate key \"kind\" at line 1 column 1"
    );

    let duplicate_json_key = "{\"apiVersion\": \"v1\", \"kind\": \"Node\",\n \"kind\": \"Pod\"}";
    let message = parse_err(duplicate_json_key).to_string();
    assert!(
        message.starts_with("cluster.yaml: invalid JSON: duplicate key \"kind\" at line 2"),
        "{message}"
    );

    let nested_duplicate =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels: {x: \"1\", x: \"2\"}\n";
    let message = parse_err(nested_duplicate).to_string();
    assert!(
        message.contains("metadata.labels: duplicate key \"x\" at line 5"),
        "{message}"
    );
}

/// A List whose item 3 is `node`, after three valid pods.
fn list_with_node_at_3(node: &str) -> String {
    let pod = |name: &str| {
        format!(
            "- {{apiVersion: v1, kind: Pod, metadata: {{name: {name}, namespace: default}}, spec: {{containers: [{{name: c}}]}}}}\n"
        )
    };
    format!(
        "apiVersion: v1\nkind: List\nitems:\n{}{}{}{node}",
        pod("p0"),
        pod("p1"),
        pod("p2")
    )
}

#[test]
fn quantity_error_message_matches_the_documented_example() {
    let node = "- apiVersion: v1\n  kind: Node\n  metadata: {name: node-a}\n  status:\n    allocatable: {cpu: 12Qi}\n";
    let error = parse_err(&list_with_node_at_3(node));
    assert_eq!(
        error.to_string(),
        r#"cluster.yaml: item 3 (Node node-a): status.allocatable.cpu: invalid quantity "12Qi": unknown suffix "Qi" (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)"#
    );
    match error {
        ClusterFileError::Quantity { site, field, error } => {
            assert_eq!(
                site.location,
                Location {
                    document: None,
                    item: Some(3)
                }
            );
            assert_eq!(
                site.object.as_ref().unwrap().name.as_deref(),
                Some("node-a")
            );
            assert_eq!(field, "status.allocatable.cpu");
            assert_eq!(error.input, "12Qi");
        }
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn errors_name_file_location_object_and_field() {
    let pod = |spec: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec: {spec}\n")
    };
    let list = |items: &str| format!("apiVersion: v1\nkind: List\nitems:\n{items}");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "document is not a mapping",
            "just a string".to_owned(),
            "cluster.yaml: expected a Kubernetes object (a mapping with apiVersion and kind), found a string",
        ),
        (
            "document is a sequence",
            "- a\n- b\n".to_owned(),
            "cluster.yaml: expected a Kubernetes object (a mapping with apiVersion and kind), found a list",
        ),
        (
            "list item is not a mapping",
            list("- 42\n"),
            "cluster.yaml: item 0: expected a Kubernetes object (a mapping with apiVersion and kind), found a number",
        ),
        (
            "items is not a list",
            "apiVersion: v1\nkind: List\nitems: {a: b}\n".to_owned(),
            "cluster.yaml: List: items must be a list, found a mapping",
        ),
        (
            "missing kind",
            "apiVersion: v1\nmetadata: {name: a}\n".to_owned(),
            "cluster.yaml: object a: missing kind (every object needs apiVersion and kind)",
        ),
        (
            "missing kind in a List item",
            list("- {apiVersion: v1, metadata: {name: a}}\n- {apiVersion: v1}\n"),
            "cluster.yaml: item 0 (object a): missing kind",
        ),
        (
            "missing kind and name in a List item",
            list("- {apiVersion: v1, kind: Node, metadata: {name: a}}\n- {apiVersion: v1}\n"),
            "cluster.yaml: item 1: missing kind",
        ),
        (
            "kind is not a string",
            "apiVersion: v1\nkind: 5\n".to_owned(),
            "cluster.yaml: kind must be a non-empty string, found a number",
        ),
        (
            "missing apiVersion",
            list("- {kind: Node, metadata: {name: node-a}}\n"),
            "cluster.yaml: item 0 (Node node-a): missing apiVersion (every object needs apiVersion and kind)",
        ),
        (
            "unsupported apiVersion",
            "apiVersion: extensions/v1beta1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: ns}\n".to_owned(),
            "cluster.yaml: ReplicaSet ns/rs: apiVersion extensions/v1beta1 is not supported for kind ReplicaSet (expected apps/v1)",
        ),
        (
            "nested List",
            list("- {apiVersion: v1, kind: List, items: []}\n"),
            "cluster.yaml: item 0 (List): a List item cannot itself be a List",
        ),
        (
            "wrong type deep in the object",
            pod("{containers: [{name: c, ports: [{containerPort: eighty}]}]}"),
            "cluster.yaml: Pod ns/p: spec.containers[0].ports[0].containerPort: invalid type: string \"eighty\", expected i32",
        ),
        (
            "wrong type at the top level",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: high\n".to_owned(),
            "cluster.yaml: PriorityClass high: value: invalid type: string \"high\", expected i32",
        ),
        (
            "list where a mapping belongs",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: [a, b]}\n".to_owned(),
            "cluster.yaml: Node n: metadata.labels: invalid type: sequence, expected a map",
        ),
        (
            "pod with containers missing",
            pod("{nodeName: n}"),
            "cluster.yaml: Pod ns/p: spec.containers: missing or empty (a Pod needs at least one container)",
        ),
        (
            "metadata of the wrong type",
            "apiVersion: v1\nkind: Node\nmetadata: node-a\n".to_owned(),
            "cluster.yaml: Node: metadata: invalid type: string \"node-a\", expected ObjectMeta",
        ),
        (
            "missing name",
            list("- {apiVersion: v1, kind: Node, metadata: {labels: {a: b}}}\n"),
            "cluster.yaml: item 0 (Node): metadata.name: missing or empty",
        ),
        (
            "empty name",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: \"\"}\n".to_owned(),
            "cluster.yaml: Namespace: metadata.name: missing or empty",
        ),
        (
            "missing metadata",
            "apiVersion: v1\nkind: Service\n".to_owned(),
            "cluster.yaml: Service: metadata.name: missing or empty",
        ),
        (
            "pod without spec",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n".to_owned(),
            "cluster.yaml: Pod ns/p: spec: missing (a Pod needs spec.containers)",
        ),
        (
            "pod without containers",
            pod("{containers: []}"),
            "cluster.yaml: Pod ns/p: spec.containers: missing or empty (a Pod needs at least one container)",
        ),
        (
            "container request",
            pod("{containers: [{name: a}, {name: b, resources: {requests: {memory: 1.5.3}}}]}"),
            "cluster.yaml: Pod ns/p: spec.containers[1].resources.requests.memory: invalid quantity \"1.5.3\": unknown suffix \".3\"",
        ),
        (
            "container limit",
            pod("{containers: [{name: a, resources: {limits: {cpu: \"--1\"}}}]}"),
            "cluster.yaml: Pod ns/p: spec.containers[0].resources.limits.cpu: invalid quantity \"--1\": expected a number",
        ),
        (
            "init container request",
            pod("{containers: [{name: a}], initContainers: [{name: i, resources: {requests: {cpu: 1e}}}]}"),
            "cluster.yaml: Pod ns/p: spec.initContainers[0].resources.requests.cpu: invalid quantity \"1e\": invalid exponent \"e\"",
        ),
        (
            "pod overhead",
            pod("{containers: [{name: a}], overhead: {memory: \"\"}}"),
            "cluster.yaml: Pod ns/p: spec.overhead.memory: invalid quantity \"\": empty string",
        ),
        (
            "pod-level resources",
            pod("{containers: [{name: a}], resources: {limits: {memory: 1Zi}}}"),
            "cluster.yaml: Pod ns/p: spec.resources.limits.memory: invalid quantity \"1Zi\"",
        ),
        (
            "cpu overflowing in millis",
            pod("{containers: [{name: a, resources: {requests: {cpu: \"10000000000000000\"}}}]}"),
            "spec.containers[0].resources.requests.cpu: invalid quantity \"10000000000000000\": the value in millis does not fit in a signed 64-bit integer",
        ),
        (
            "node capacity extended resource",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {capacity: {nvidia.com/gpu: two}}\n".to_owned(),
            "cluster.yaml: Node n: status.capacity[\"nvidia.com/gpu\"]: invalid quantity \"two\"",
        ),
        (
            "node memory overflow",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 9Ei}}\n".to_owned(),
            "cluster.yaml: Node n: status.allocatable.memory: invalid quantity \"9Ei\": the value does not fit",
        ),
        (
            "unquoted integer beyond 64 bits",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 99999999999999999999999}}\n".to_owned(),
            "cluster.yaml: Node n: status.allocatable.memory: invalid quantity \"99999999999999999999999\": the value does not fit",
        ),
        (
            "persistent volume capacity",
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {capacity: {storage: 10GB}}\n".to_owned(),
            "cluster.yaml: PersistentVolume pv: spec.capacity.storage: invalid quantity \"10GB\": unknown suffix \"GB\"",
        ),
        (
            "persistent volume claim request",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c, namespace: ns}\nspec: {resources: {requests: {storage: 5 Gi}}}\n".to_owned(),
            "cluster.yaml: PersistentVolumeClaim ns/c: spec.resources.requests.storage: invalid quantity \"5 Gi\"",
        ),
        (
            "error in a multi-document List",
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata: {{name: ns}}\n---\n{}",
                list("- {apiVersion: v1, kind: Node, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}}\n")
            ),
            "cluster.yaml: document 1, item 1 (Pod ns/p): spec: missing",
        ),
        (
            "error in a later document",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n---\napiVersion: v1\nkind: Node\nmetadata: {}\n".to_owned(),
            "cluster.yaml: document 2 (Node): metadata.name: missing or empty",
        ),
    ];
    for (description, text, expected) in cases {
        let message = parse_err(&text).to_string();
        assert!(
            message.contains(expected),
            "{description}:\n  got      {message}\n  expected {expected}"
        );
    }
}

#[test]
fn duplicates_name_both_locations() {
    let pod = |name: &str, namespace: &str| {
        format!(
            "- {{apiVersion: v1, kind: Pod, metadata: {{name: {name}{namespace}}}, spec: {{containers: [{{name: c}}]}}}}\n"
        )
    };
    let node =
        |name: &str| format!("- {{apiVersion: v1, kind: Node, metadata: {{name: {name}}}}}\n");
    let list = |items: &[String]| format!("apiVersion: v1\nkind: List\nitems:\n{}", items.concat());
    let cases = [
        (
            "same pod twice",
            list(&[
                pod("web-0", ", namespace: prod"),
                node("web-0"),
                pod("web-0", ", namespace: prod"),
            ]),
            "cluster.yaml: duplicate Pod prod/web-0: defined at item 0 and again at item 2",
        ),
        (
            "unset namespace is default",
            list(&[pod("web-0", ""), pod("web-0", ", namespace: default")]),
            "cluster.yaml: duplicate Pod default/web-0: defined at item 0 and again at item 1",
        ),
        (
            "across documents",
            format!(
                "{}---\n{}",
                list(&[node("a")]),
                list(&[node("b"), node("a")])
            ),
            "cluster.yaml: duplicate Node a: defined at document 0, item 0 and again at document 1, item 1",
        ),
    ];
    for (description, text, expected) in cases {
        let error = parse_err(&text);
        assert!(
            matches!(error, ClusterFileError::Duplicate { .. }),
            "{description}: {error:?}"
        );
        assert_eq!(error.to_string(), expected, "{description}");
    }

    // Same name in different namespaces, or of different kinds, is not a duplicate.
    let objects = parse(&list(&[
        pod("web-0", ", namespace: a"),
        pod("web-0", ", namespace: b"),
        node("web-0"),
    ]));
    assert_eq!(objects.pods.len(), 2);
}

/// The snapshot command of the README and docs/simulate.md as kubectl (v1.32) printed it against a real kube-apiserver
/// (v1.36, berth-testcluster with two kwok nodes): one `v1 List` of every kind Berth reads,
/// with the server's fields (managedFields, uids, status) left in. Every object is read, none
/// skipped, and the snapshot tells the running pod from the pending ones.
#[test]
fn kubectl_snapshot_command_output_is_accepted() {
    let path = fixture("kubectl-get-all.json");
    let objects = load_cluster_file(&path).unwrap();
    assert!(objects.warnings.is_empty(), "{:?}", objects.warnings);
    assert_eq!(names(&objects.nodes), ["node-0", "node-1"]);
    assert_eq!(names(&objects.pods), ["report", "web-0", "web-1"]);
    assert_eq!(
        names(&objects.namespaces),
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "shop"
        ]
    );
    assert_eq!(names(&objects.services), ["kubernetes", "web"]);
    assert_eq!(names(&objects.persistent_volumes), ["pv-1"]);
    assert_eq!(names(&objects.persistent_volume_claims), ["data"]);
    assert_eq!(names(&objects.storage_classes), ["local"]);
    assert_eq!(
        names(&objects.priority_classes),
        [
            "batch-low",
            "system-cluster-critical",
            "system-node-critical"
        ]
    );
    assert_eq!(names(&objects.pod_disruption_budgets), ["web"]);
    let snapshot = berth_kube::snapshot(&objects).unwrap();
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    let pending: Vec<String> = snapshot.pending.iter().map(|p| p.key()).collect();
    assert_eq!(pending, ["shop/report", "shop/web-1"]);
    let running: Vec<String> = snapshot.cluster.pods().map(|(_, p)| p.key()).collect();
    assert_eq!(running, ["shop/web-0"]);
    assert_eq!(snapshot.cluster.node_count(), 2);
}

#[test]
fn unknown_fields_are_named_once_per_kind_and_field() {
    let pod = |name: &str| {
        format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: {name}, creationTimestamp: null}}\n  spec:\n    \
             containers: [{{name: c, image: app, resourcez: {{}}}}]\n    \
             tolerations: [{{key: a, operator: Exists, efect: NoSchedule}}]\n"
        )
    };
    let text = format!(
        "apiVersion: v1\nkind: List\nitems:\n{}{}- {{apiVersion: v1, kind: Node, metadata: {{name: n1}}, spec: {{unschedulabel: true}}}}\n",
        pod("a"),
        pod("b")
    );
    let objects = parse(&text);
    assert_eq!(counts(&objects)[..2], [1, 2]);
    assert_eq!(
        objects.warnings,
        [
            "cluster.yaml: item 2 (Node n1): spec.unschedulabel: unknown field of Node in \
             Kubernetes v1.36's API (a typo, or a newer field): ignored",
            "cluster.yaml: item 0 (Pod a): spec.containers[].resourcez: unknown field \
             of Pod in Kubernetes v1.36's API (a typo, or a newer field): ignored (set in 2 Pod \
             objects)",
            "cluster.yaml: item 0 (Pod a): spec.tolerations[].efect: unknown field of \
             Pod in Kubernetes v1.36's API (a typo, or a newer field): ignored (set in 2 Pod \
             objects)",
        ]
    );
}

/// The volume fields v1.22 never knew reach the engine from a cluster file (no warning: the
/// API types know them and the model reads them), and a volume mode the API does not know is
/// an error naming the object, the field and what is accepted.
#[test]
fn volume_modes_attributes_classes_and_read_write_once_pod_are_read() {
    let list = |mode: &str| {
        format!(
            "apiVersion: v1\nkind: List\nitems:\n\
             - {{apiVersion: v1, kind: PersistentVolume, metadata: {{name: v}}, spec: {{volumeMode: {mode}, volumeAttributesClassName: gold, capacity: {{storage: 1Gi}}}}}}\n\
             - {{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {{name: c, namespace: ns}}, spec: {{accessModes: [ReadWriteOncePod], volumeMode: Block}}}}\n"
        )
    };
    let objects = parse(&list("Block"));
    assert!(objects.warnings.is_empty(), "{:?}", objects.warnings);
    let snapshot = berth_kube::snapshot(&objects).unwrap();
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    let volume = snapshot.cluster.persistent_volume("v").expect("volume");
    assert_eq!(
        (
            volume.volume_mode,
            volume.volume_attributes_class_name.as_str()
        ),
        (berth_model::model::VolumeMode::Block, "gold")
    );
    let claim = snapshot
        .cluster
        .persistent_volume_claim("ns", "c")
        .expect("claim");
    assert_eq!(claim.access_modes, ["ReadWriteOncePod"]);
    assert_eq!(claim.volume_mode, berth_model::model::VolumeMode::Block);
    let error = berth_kube::snapshot(&parse(&list("Raw")))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "PersistentVolume v: spec.volumeMode: unknown volume mode \"Raw\" (expected Filesystem, Block)"
        ),
        "{error}"
    );
}
