//! `berth simulate` and `berth check` with a Policy's extenders, against real test extenders
//! on 127.0.0.1: filtering, steering, failures, `--skip-extenders`, what `check` says.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use berth_testcluster::extender::{Answer, ExtenderServer};
use serde_json::{Value, json};

const LIFETIME: Duration = Duration::from_secs(120);

/// Three 4-CPU nodes (one also with a GPU) and pending pods p1, p2 (1 CPU each) and gpu (a GPU).
const CLUSTER: &str = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n3, labels: {gpu: "yes"}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110", example.com/gpu: "1"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1, namespace: default, uid: u1}, spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p2, namespace: default, uid: u2}, spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: gpu, namespace: default, uid: u3}, spec: {containers: [{name: c, image: i, resources: {limits: {example.com/gpu: "1"}}}]}}
"#;

fn berth(dir: &Path, args: &[&str], policy: &Value) -> Output {
    berth_on(dir, args, policy, CLUSTER)
}

fn berth_on(dir: &Path, args: &[&str], policy: &Value, cluster_text: &str) -> Output {
    let policy_path = dir.join("policy.json");
    fs::write(&policy_path, policy.to_string()).unwrap();
    let cluster = dir.join("cluster.yaml");
    fs::write(&cluster, cluster_text).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_berth"));
    cmd.args(args);
    if args[0] == "simulate" {
        cmd.args(["--output", "json", "--cluster"]).arg(&cluster);
        cmd.arg("--policy");
    }
    cmd.arg(&policy_path).output().expect("run berth")
}

/// The JSON output lines of a successful run.
fn lines(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (pod, node, message) per output line.
fn placements(out: &Output) -> Vec<(String, Option<String>, Option<String>)> {
    lines(out)
        .into_iter()
        .map(|v| {
            let s = |k: &str| v[k].as_str().map(String::from);
            (s("pod").unwrap(), s("node"), s("message"))
        })
        .collect()
}

fn node_of(out: &[(String, Option<String>, Option<String>)], pod: &str) -> Option<String> {
    out.iter().find(|p| p.0 == pod).and_then(|p| p.1.clone())
}

fn policy(extenders: Vec<Value>) -> Value {
    json!({"kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": "PodFitsResources"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
        "extenders": extenders})
}

#[test]
fn simulate_calls_filter_and_prioritize_once_per_pod() {
    let dir = tempfile::tempdir().unwrap();
    let filter = ExtenderServer::start(LIFETIME).unwrap();
    filter.configure(|b| {
        b.refuse.insert("n1".into(), "n1 is reserved".into());
    });
    let steer = ExtenderServer::start(LIFETIME).unwrap();
    steer.configure(|b| {
        b.scores.insert("n3".into(), 10);
    });
    let out = berth(
        dir.path(),
        &["simulate"],
        &policy(vec![
            json!({"urlPrefix": filter.url_prefix(), "filterVerb": "filter", "nodeCacheCapable": true}),
            json!({"urlPrefix": steer.url_prefix(), "prioritizeVerb": "prioritize", "weight": 5}),
        ]),
    );
    let placed = placements(&out);
    // Every pod goes to n3: n1 is refused, the prioritizer's 10 x 5 (scaled to 500)
    // outweighs LeastRequested.
    for pod in ["default/p1", "default/p2", "default/gpu"] {
        assert_eq!(node_of(&placed, pod).as_deref(), Some("n3"), "{pod}");
    }
    assert_eq!(filter.count("filter"), 3);
    // The GPU pod fits only n3 by Berth's own resource fit, so it is not prioritized, as
    // upstream skips scoring for a single feasible node.
    assert_eq!(steer.count("prioritize"), 2);
    // The prioritizer is not node-cache capable: it gets whole nodes from the cluster file.
    let body = &steer.calls()[0].body;
    assert_eq!(body["Nodes"]["items"][0]["metadata"]["name"], "n2");
    assert_eq!(
        body["Nodes"]["items"][1]["status"]["allocatable"]["cpu"],
        "4"
    );
    assert_eq!(body["Pod"]["metadata"]["name"], "p1");
    assert_eq!(
        filter.calls()[0].body["NodeNames"],
        json!(["n1", "n2", "n3"])
    );

    // --explain names the extender that refused n1, and gives its score as answered (raw),
    // scaled to 0..100 (normalized) and times its weight (weighted).
    let out = berth(
        dir.path(),
        &["simulate", "--explain", "--pod", "default/p1"],
        &policy(vec![
            json!({"urlPrefix": filter.url_prefix(), "filterVerb": "filter", "nodeCacheCapable": true}),
            json!({"urlPrefix": steer.url_prefix(), "prioritizeVerb": "prioritize", "weight": 5}),
        ]),
    );
    let explained = lines(&out);
    assert_eq!(explained.len(), 1);
    let nodes = explained[0]["explain"]["nodes"].as_array().unwrap();
    let node = |name: &str| nodes.iter().find(|n| n["node"] == name).unwrap();
    assert_eq!(
        node("n1")["rejections"],
        json!([{"rule": filter.url_prefix(), "kind": "extender", "reason": "n1 is reserved"}])
    );
    let scores = node("n3")["scores"].as_array().unwrap();
    assert_eq!(
        scores.last().unwrap(),
        &json!({"priority": format!("extender {}", steer.url_prefix()), "weight": 5,
                "raw": 10, "normalized": 100, "weighted": 500})
    );
}

#[test]
fn refusals_join_the_fit_error_and_managed_resources_pick_the_pods() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = ExtenderServer::start(LIFETIME).unwrap();
    gpu.configure(|b| {
        for n in ["n1", "n2", "n3"] {
            b.refuse.insert(n.into(), "GPU quota exhausted".into());
        }
    });
    let out = berth(
        dir.path(),
        &["simulate"],
        &policy(vec![
            json!({"urlPrefix": gpu.url_prefix(), "filterVerb": "filter",
            "nodeCacheCapable": true,
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": true}]}),
        ]),
    );
    let placed = placements(&out);
    assert!(node_of(&placed, "default/p1").is_some());
    let gpu_pod = placed.iter().find(|p| p.0 == "default/gpu").unwrap();
    assert_eq!(gpu_pod.1, None);
    // n1 and n2 have no GPU, but the resource is ignored by Berth's own fit: only the
    // extender rejects them.
    assert_eq!(
        gpu_pod.2.as_deref(),
        Some("0/3 nodes are available: 3 GPU quota exhausted.")
    );
    assert_eq!(gpu.count("filter"), 1, "only the pod requesting the GPU");
}

#[test]
fn a_down_extender_blocks_unless_ignorable_and_skipping_names_each() {
    let dir = tempfile::tempdir().unwrap();
    let down = ExtenderServer::start(LIFETIME).unwrap();
    down.configure(|b| b.answer = Answer::Status(503));
    let url = down.url_prefix();
    let entry = |ignorable: bool| {
        json!({"urlPrefix": url, "filterVerb": "filter", "ignorable": ignorable,
               "nodeCacheCapable": true})
    };
    let out = berth(dir.path(), &["simulate"], &policy(vec![entry(false)]));
    for (_, node, message) in placements(&out) {
        assert_eq!(node, None);
        assert_eq!(
            message.as_deref(),
            Some(format!("failed filter with extender at URL {url}/filter, code 503").as_str())
        );
    }
    let out = berth(dir.path(), &["simulate"], &policy(vec![entry(true)]));
    assert!(placements(&out).iter().all(|p| p.1.is_some()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: pod default/p1: extender {url} failed and was skipped: failed filter"
        )),
        "{stderr}"
    );
    let calls = down.count("filter");
    let out = berth(
        dir.path(),
        &["simulate", "--skip-extenders"],
        &policy(vec![entry(false)]),
    );
    assert!(placements(&out).iter().all(|p| p.1.is_some()));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!(
        "warning: not calling extender {url} (--skip-extenders)"
    )));
    assert_eq!(
        down.count("filter"),
        calls,
        "skipped extenders are not called"
    );
}

/// Two 2-CPU nodes, each full with one low-priority pod (`low` on n1 with priority 1,
/// `mid` on n2 with priority 5), and a pending 2-CPU pod of priority 100: it must preempt,
/// and unaided picks n1 (the lower-priority victim).
const FULL: &str = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: low, namespace: default, uid: u-low}, spec: {nodeName: n1, priority: 1, containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: mid, namespace: default, uid: u-mid}, spec: {nodeName: n2, priority: 5, containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: big, namespace: default, uid: u-big}, spec: {priority: 100, containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
"#;

/// The output line of `default/big`.
fn big(out: &Output) -> Value {
    lines(out)
        .into_iter()
        .find(|v| v["pod"] == "default/big")
        .expect("a line for default/big")
}

#[test]
fn simulate_asks_preempt_extenders_which_victims_go() {
    let dir = tempfile::tempdir().unwrap();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let entry = |cache: bool, ignorable: bool| {
        json!({"urlPrefix": server.url_prefix(), "preemptVerb": "preempt",
               "nodeCacheCapable": cache, "ignorable": ignorable})
    };
    let run = |extender: Value| {
        big(&berth_on(
            dir.path(),
            &["simulate"],
            &policy(vec![extender]),
            FULL,
        ))
    };
    // Keeping every candidate changes nothing: low on n1 goes.
    let v = run(entry(true, false));
    assert_eq!(
        (v["node"].as_str(), &v["victims"]),
        (Some("n1"), &json!(["default/low"]))
    );
    assert_eq!(
        server.calls()[0].body["NodeNameToMetaVictims"],
        json!({"n1": {"Pods": [{"UID": "u-low"}], "NumPDBViolations": 0},
               "n2": {"Pods": [{"UID": "u-mid"}], "NumPDBViolations": 0}})
    );
    // Dropping n1 makes mid on n2 the victim; whole victims come from the cluster file.
    server.configure(|b| {
        b.preempt_drop.insert("n1".into());
    });
    let v = run(entry(false, false));
    assert_eq!(
        (v["node"].as_str(), &v["victims"]),
        (Some("n2"), &json!(["default/mid"]))
    );
    let body = server.calls().last().unwrap().body.clone();
    assert_eq!(
        body["NodeNameToVictims"]["n2"]["Pods"][0]["metadata"]["name"],
        "mid"
    );
    // Dropping both: no candidate, no preemption.
    server.configure(|b| {
        b.preempt_drop.insert("n2".into());
    });
    let v = run(entry(true, false));
    assert_eq!((&v["node"], &v["victims"]), (&Value::Null, &Value::Null));
    // A failing non-ignorable extender fails the preemption (named on stderr); an ignorable
    // one is skipped and the unaided choice stands.
    server.configure(|b| b.answer = Answer::Status(500));
    let out = berth_on(
        dir.path(),
        &["simulate"],
        &policy(vec![entry(true, false)]),
        FULL,
    );
    assert_eq!(big(&out)["victims"], Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let url = server.url_prefix();
    assert!(
        stderr.contains(&format!(
            "warning: pod default/big: preemption failed: extender {url}: failed preempt with \
             extender at URL {url}/preempt, code 500"
        )),
        "{stderr}"
    );
    let out = berth_on(
        dir.path(),
        &["simulate"],
        &policy(vec![entry(true, true)]),
        FULL,
    );
    assert_eq!(big(&out)["victims"], json!(["default/low"]));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "extender {url} failed preempting and was skipped"
                .replace("{url}", &url)
                .as_str()
        )
    );
    // --skip-extenders: not asked.
    let calls = server.count("preempt");
    let out = berth_on(
        dir.path(),
        &["simulate", "--skip-extenders"],
        &policy(vec![entry(true, false)]),
        FULL,
    );
    assert_eq!(big(&out)["victims"], json!(["default/low"]));
    assert_eq!(server.count("preempt"), calls);
}

/// Upstream calls an extender once per pod per verb in a cycle, with all the nodes in the
/// one call; so does Berth. Twelve 4-CPU nodes each run a 2-CPU pod of priority 1. Three
/// 1-CPU pods of priority 200 go first and fit anywhere: one filter and one prioritize call
/// each, with the twelve nodes. Then a 4-CPU pod of priority 100 fits nowhere and preempts:
/// one preempt call with every candidate (the nine nodes without a priority-200 pod), then
/// one filter call in the cycle after its victim is gone. Bind is `berth run`'s: the
/// end-to-end test counts one bind call per pod.
#[test]
fn each_verb_is_called_once_per_pod_never_per_node() {
    let mut cluster = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for i in 0..12 {
        cluster.push_str(&format!(
            "- {{apiVersion: v1, kind: Node, metadata: {{name: n{i}}}, status: {{allocatable: \
             {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}}}\n\
             - {{apiVersion: v1, kind: Pod, metadata: {{name: run{i}, namespace: default, uid: \
             u-run{i}}}, spec: {{nodeName: n{i}, priority: 1, containers: [{{name: c, image: i, \
             resources: {{requests: {{cpu: \"2\"}}}}}}]}}}}\n"
        ));
    }
    for (name, cpu, priority) in [
        ("p1", 1, 200),
        ("p2", 1, 200),
        ("p3", 1, 200),
        ("big", 4, 100),
    ] {
        cluster.push_str(&format!(
            "- {{apiVersion: v1, kind: Pod, metadata: {{name: {name}, namespace: default, uid: \
             u-{name}}}, spec: {{priority: {priority}, containers: [{{name: c, image: i, \
             resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}}}\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let extender = json!({"urlPrefix": server.url_prefix(), "filterVerb": "filter",
        "prioritizeVerb": "prioritize", "weight": 1, "preemptVerb": "preempt",
        "nodeCacheCapable": true});
    let out = berth_on(dir.path(), &["simulate"], &policy(vec![extender]), &cluster);
    let placed = lines(&out);
    assert!(placed.iter().all(|p| p["node"].is_string()), "{placed:?}");
    let calls = server.calls();
    // (verb, pod) -> the number of nodes in each call.
    let sizes = |verb: &str, pod: &str| -> Vec<usize> {
        calls
            .iter()
            .filter(|c| c.verb == verb && c.body["Pod"]["metadata"]["name"] == pod)
            .map(|c| match verb {
                "preempt" => c.body["NodeNameToMetaVictims"]
                    .as_object()
                    .map_or(0, |m| m.len()),
                _ => c.body["NodeNames"].as_array().map_or(0, Vec::len),
            })
            .collect()
    };
    for pod in ["p1", "p2", "p3"] {
        assert_eq!(sizes("filter", pod), [12], "{pod}");
        assert_eq!(sizes("prioritize", pod), [12], "{pod}");
        assert!(sizes("preempt", pod).is_empty(), "{pod}");
    }
    assert_eq!(sizes("preempt", "big"), [9]);
    assert_eq!(sizes("filter", "big"), [1]);
    assert_eq!(calls.len(), 3 * 2 + 2);
}

#[test]
fn check_warns_only_about_what_berth_does_not_do() {
    let dir = tempfile::tempdir().unwrap();
    let plain = json!({"urlPrefix": "http://127.0.0.1:1/x", "filterVerb": "filter"});
    let out = berth(dir.path(), &["check"], &policy(vec![plain]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Warnings: none"), "{text}");
    let preempting = json!({"urlPrefix": "http://127.0.0.1:1/x", "filterVerb": "filter",
        "preemptVerb": "preempt", "ignorable": true,
        "managedResources": [{"name": "example.com/gpu"}]});
    let out = berth(dir.path(), &["check"], &policy(vec![preempting]));
    let text = String::from_utf8_lossy(&out.stdout);
    // Berth calls the preemptVerb: no warning, a note of what it is asked.
    assert!(text.contains("Warnings: none"), "{text}");
    assert!(
        text.contains("preemptVerb \"preempt\": asked (victims as whole pods)"),
        "{text}"
    );
    assert!(text.contains("called only for pods that request one of example.com/gpu"));
    assert!(text.contains("ignorable: when its filter or preempt call fails"));
    assert!(
        text.contains("with --skip-extenders it calls none"),
        "{text}"
    );
    // A bind extender is left out of simulate, and check says so.
    let binding = json!({"urlPrefix": "http://127.0.0.1:1/x", "bindVerb": "bind"});
    let out = berth(dir.path(), &["check"], &policy(vec![binding]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Warnings: none"), "{text}");
    assert!(
        text.contains("bindVerb \"bind\" is called by berth run only"),
        "{text}"
    );
    // One Berth can never call is the only warning.
    let idle = json!({"urlPrefix": "http://127.0.0.1:1/x"});
    let out = berth(dir.path(), &["check"], &policy(vec![idle]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("so it is never called"), "{text}");
    // A client that cannot be set up is an error naming the field.
    let bad = json!({"urlPrefix": "https://127.0.0.1:1/x", "filterVerb": "filter",
        "tlsConfig": {"caFile": "/nonexistent/ca.pem"}});
    let out = berth(dir.path(), &["check"], &policy(vec![bad]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tlsConfig.caFile"));
}
