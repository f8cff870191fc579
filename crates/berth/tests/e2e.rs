//! `berth run` against a real control plane (etcd + kube-apiserver on loopback, from
//! berth-testcluster), authenticated as the Helm chart's ServiceAccount with the chart's RBAC
//! applied (deploy/'s, which tests/chart.rs shows grants the same, without helm:
//! `BERTH_SKIP_HELM=1`), so these tests also prove the shipped permissions suffice.
//!
//! Berth runs as the built binary, in its own process group under a watchdog, so a test
//! can SIGKILL it like a crashed replica and nothing outlives the test. The tests share the
//! machine's two cores, so they run one at a time.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use berth_testcluster::extender::{BindRequest, ExtenderServer};
use berth_testcluster::{ClusterOptions, node_template};
use common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_land_where_the_policy_says_and_failures_are_explained() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default()).await?;
        let nodes: Api<Node> = Api::all(env.admin.clone());
        let mut big = node_template("big", "8", "16Gi", 110);
        big.metadata.name = Some("big".into());
        let mut ssd = node_template("ssd", "2", "4Gi", 110);
        ssd.metadata.name = Some("ssd".into());
        ssd.metadata
            .labels
            .get_or_insert_default()
            .insert("disk".into(), "ssd".into());
        let mut tainted = node_template("tainted", "16", "32Gi", 110);
        tainted.metadata.name = Some("tainted".into());
        tainted.spec.get_or_insert_default().taints = Some(vec![serde_json::from_value(
            json!({"key": "dedicated", "value": "batch", "effect": "NoSchedule"}),
        )?]);
        env.cluster.create_nodes_with(1, |_| big.clone()).await?;
        env.cluster.create_nodes_with(1, |_| ssd.clone()).await?;
        env.cluster
            .create_nodes_with(1, |_| tainted.clone())
            .await?;
        assert_eq!(nodes.list(&ListParams::default()).await?.items.len(), 3);

        let mut berth = env.berth("solo", &[])?;
        berth.wait_ready().await?;
        env.create_pods(vec![
            pod(
                "wants-ssd",
                "berth",
                "500m",
                json!({"nodeSelector": {"disk": "ssd"}}),
            ),
            pod("needs-6-cpu", "berth", "6", json!({})),
            pod(
                "tolerates",
                "berth",
                "100m",
                json!({
                    "nodeSelector": {"kubernetes.io/hostname": "tainted"},
                    "tolerations": [{"key": "dedicated", "operator": "Equal",
                        "value": "batch", "effect": "NoSchedule"}]
                }),
            ),
            pod("too-big", "berth", "100", json!({})),
            pod("not-ours", "other-scheduler", "100m", json!({})),
        ])
        .await?;
        let bound = env.wait_bound("", 3, Duration::from_secs(60)).await?;
        let placed: BTreeMap<&str, &str> = bound
            .iter()
            .map(|p| (p.metadata.name.as_deref().unwrap(), node_name(p).unwrap()))
            .collect();
        assert_eq!(
            placed,
            BTreeMap::from([
                ("needs-6-cpu", "big"),
                ("tolerates", "tainted"),
                ("wants-ssd", "ssd")
            ])
        );

        // The pod that fits nowhere: an Event and the PodScheduled condition, same words.
        let api = env.pods();
        let message = env
            .unschedulable_message("too-big", Duration::from_secs(30))
            .await?;
        assert!(
            message.starts_with("0/3 nodes are available: ")
                && message.contains("Insufficient cpu"),
            "{message}"
        );
        let failed = env.events("FailedScheduling").await?;
        let notes: Vec<&str> = failed["too-big"]
            .iter()
            .filter_map(|e| e.note.as_deref())
            .collect();
        assert!(notes.contains(&message.as_str()), "{notes:?} vs {message}");
        assert_eq!(failed["too-big"][0].type_.as_deref(), Some("Warning"));

        let scheduled = env.events("Scheduled").await?;
        for (name, node) in &placed {
            let notes: Vec<&str> = scheduled[*name]
                .iter()
                .filter_map(|e| e.note.as_deref())
                .collect();
            assert_eq!(
                notes,
                [format!("Successfully assigned default/{name} to {node}")]
            );
        }

        // Another scheduler's pod: no node, no event from Berth.
        let theirs = api.get("not-ours").await?;
        assert_eq!(node_name(&theirs), None);
        assert!(!scheduled.contains_key("not-ours") && !failed.contains_key("not-ours"));

        let (code, metrics) = berth.get("/metrics")?;
        assert_eq!(code, 200);
        // Upstream's families, moved by what this replica did: three pods bound at their
        // first attempt out of four added, 3 nodes, this replica holding the lease.
        for line in [
            r#"scheduler_schedule_attempts_total{result="scheduled",profile="berth"} 3"#,
            "scheduler_pod_scheduling_attempts_count 3",
            "scheduler_pod_scheduling_attempts_sum 3",
            r#"scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 3"#,
            r#"scheduler_queue_incoming_pods_total{queue="active",event="UnschedulablePodAdd"} 4"#,
            r#"scheduler_scheduler_cache_size{type="nodes"} 3"#,
            &format!(r#"leader_election_master_status{{name="{LEASE}"}} 1"#),
        ] {
            assert!(metrics.contains(line), "missing {line} in\n{metrics}");
        }
        let algorithm = metrics
            .lines()
            .find_map(|l| l.strip_prefix("scheduler_scheduling_algorithm_duration_seconds_count "))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(algorithm.is_some_and(|n| n >= 4), "{metrics}");
        // too-big, rejected by GeneralPredicates (Insufficient cpu), counts under it while it
        // waits in the unschedulable sub-queue (0 while a cluster event has it retried).
        assert!(
            metrics.contains(
                r#"scheduler_unschedulable_pods{plugin="GeneralPredicates",profile="berth"} "#
            ),
            "{metrics}"
        );
        // /configz: the policy in effect, as JSON.
        let (code, configz) = berth.get("/configz")?;
        assert_eq!(code, 200);
        let configz: serde_json::Value = serde_json::from_str(&configz)?;
        let policy: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(POLICY)?)?;
        assert_eq!(
            configz["priorities"].as_array().map(Vec::len),
            policy["priorities"].as_array().map(Vec::len),
            "{configz}"
        );
        assert!(
            configz["rules"]["filters"]
                .as_array()
                .is_some_and(|f| !f.is_empty()),
            "{configz}"
        );
        assert_eq!(berth.get("/healthz")?.0, 200);
        let status = berth.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", berth.log());
        Ok(())
    })
    .await;
}

/// The node circuit breaker on a real cluster, with pod statuses written through the API as
/// a kubelet writes them. Pods of two ReplicaSets start on `good` but fail on `bad` (runtime
/// errors) while `bad` stays Ready: the breaker opens (an Event on the Node says why, the
/// metric shows it), a new pod goes to `good` although `bad` is emptier, and one pinned to
/// `bad` is refused with the breaker's reason. The leader is then killed; its successor
/// rebuilds the breaker from the pod statuses and refuses another pinned pod the same way.
/// After the cool-down one pinned pod is let through as the probe; once its containers run
/// the breaker closes and the other pinned pod is placed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_fails_every_pod_is_cut_off_survives_a_leader_change_and_is_probed_back() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for (name, cpu) in [("good", "8"), ("bad", "32")] {
            let mut node = node_template(name, cpu, "64Gi", 110);
            node.metadata.name = Some(name.into());
            env.cluster.create_nodes_with(1, |_| node.clone()).await?;
        }
        const COOL_DOWN: u64 = 25;
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "CheckNodeCircuitBreaker",
                "argument": {"circuitBreaker": {"failureThreshold": 2, "minWorkloads": 2,
                    "windowSeconds": 600, "coolDownSeconds": COOL_DOWN, "startTimeoutSeconds": 300}}}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]});
        let path = env.cluster.dir().join("breaker-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let policy_flag = path.display().to_string();
        let mut first = env.berth("first", &["--policy", &policy_flag])?;
        first.wait_ready().await?;

        let owned = |name: &str, owner: &str, node: &str| {
            let mut p = pod(name, "berth", "100m", json!({"nodeSelector": {"kubernetes.io/hostname": node}}));
            p.metadata.owner_references = Some(vec![serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                "uid": format!("00000000-0000-0000-0000-0000000000{}", owner.len()), "controller": true}))
                .expect("owner reference")]);
            p
        };
        env.create_pods(vec![
            owned("web-a", "web", "good"),
            owned("api-a", "api", "good"),
            owned("web-b", "web", "bad"),
            owned("api-b", "api", "bad"),
        ])
        .await?;
        for name in ["web-a", "api-a", "web-b", "api-b"] {
            env.wait_bound(name, 1, Duration::from_secs(30)).await?;
        }
        // What a kubelet writes: containers running on good, failing to be created on bad.
        let api = env.pods();
        let write_status = |name: &'static str, state: serde_json::Value, ready: bool| {
            let api = api.clone();
            async move {
                let now = berth_engine::health::format_utc(epoch_seconds());
                let status = json!({"status": {
                    "phase": if ready { "Running" } else { "Pending" },
                    "conditions": [{"type": "ContainersReady", "status": if ready { "True" } else { "False" },
                        "lastTransitionTime": now}],
                    "containerStatuses": [{"name": "c", "image": "pause", "imageID": "",
                        "ready": ready, "restartCount": 0, "state": state}]}});
                api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
                    .await
                    .map(drop)
            }
        };
        let running = || json!({"running": {"startedAt": berth_engine::health::format_utc(epoch_seconds())}});
        write_status("web-a", running(), true).await?;
        write_status("api-a", running(), true).await?;
        write_status("web-b", json!({"waiting": {"reason": "CreateContainerError",
            "message": "failed to create containerd task: OCI runtime create failed"}}), false).await?;
        write_status("api-b", json!({"waiting": {"reason": "RunContainerError"}}), false).await?;

        let opened = eventually("the breaker's Event on node bad", Duration::from_secs(30), || async {
            Ok(env.events("CircuitBreakerOpened").await?.remove("bad"))
        })
        .await?;
        let note = opened[0].note.clone().unwrap_or_default();
        assert!(note.contains("2 pods of 2 workloads failed to start"), "{note}");
        assert!(note.contains("default/web-b: CreateContainerError"), "{note}");
        assert_eq!(opened[0].type_.as_deref(), Some("Warning"));
        let (_, metrics) = first.get("/metrics")?;
        assert!(metrics.contains(r#"berth_circuit_breaker_state{node="bad",state="open"} 1"#), "{metrics}");

        env.create_pods(vec![pod("fresh", "berth", "100m", json!({}))]).await?;
        let bound = env.wait_bound("fresh", 1, Duration::from_secs(30)).await?;
        assert_eq!(node_name(&bound[0]), Some("good"), "bad is emptier: only the breaker keeps pods off");
        let open_message = "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
                            1 node(s) had an open circuit breaker.";
        env.create_pods(vec![pod("pinned-1", "berth", "100m", json!({"nodeSelector": {"kubernetes.io/hostname": "bad"}}))])
            .await?;
        assert_eq!(env.unschedulable_message("pinned-1", Duration::from_secs(30)).await?, open_message);

        // The leader dies; its successor knows the breaker from the pods' statuses alone.
        first.kill();
        let mut second = env.berth("second", &["--policy", &policy_flag])?;
        second.wait_ready().await?;
        eventually("the successor to lead", Duration::from_secs(60), || async {
            Ok((env.leader().await?.as_deref() == Some("second")).then_some(()))
        })
        .await?;
        env.create_pods(vec![pod("pinned-2", "berth", "100m", json!({"nodeSelector": {"kubernetes.io/hostname": "bad"}}))])
            .await?;
        assert_eq!(env.unschedulable_message("pinned-2", Duration::from_secs(30)).await?, open_message);
        let (_, metrics) = second.get("/metrics")?;
        assert!(metrics.contains(r#"berth_circuit_breaker_state{node="bad",state="open"} 1"#), "{metrics}");

        // After the cool-down one pinned pod is the probe; the other waits for its verdict.
        let probe = eventually("a probe on bad", Duration::from_secs(COOL_DOWN + 30), || async {
            let bound: Vec<String> = api
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter(|p| p.metadata.name.as_deref().unwrap_or("").starts_with("pinned-"))
                .filter(|p| node_name(p) == Some("bad"))
                .filter_map(|p| p.metadata.name)
                .collect();
            Ok((!bound.is_empty()).then_some(bound))
        })
        .await?;
        assert_eq!(probe.len(), 1, "one probe at a time: {probe:?}");
        let other = if probe[0] == "pinned-1" { "pinned-2" } else { "pinned-1" };
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(node_name(&api.get(other).await?).is_none(), "{other} waits for the probe");
        let probe_name: &'static str = if probe[0] == "pinned-1" { "pinned-1" } else { "pinned-2" };
        write_status(probe_name, running(), true).await?;
        let bound = env.wait_bound(other, 1, Duration::from_secs(30)).await?;
        assert_eq!(node_name(&bound[0]), Some("bad"));
        let closed = env.events("CircuitBreakerClosed").await?;
        assert!(closed.contains_key("bad"), "{closed:?}");
        let status = second.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", second.log());
        Ok(())
    })
    .await;
}

/// Crash-loop containment on a real cluster. Each pod of ReplicaSet `bomb` is followed by its
/// node going NotReady (written through the API as the node lifecycle controller and a
/// failing kubelet would: Ready False, the not-ready taint); the replacement lands on the next
/// node, which fails too. After the third node the ReplicaSet is quarantined: its next pod is
/// refused everywhere with a reason that says how to release it, while another workload's pod
/// is placed as usual. Annotating the ReplicaSet releases it and its pod is placed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_that_takes_down_node_after_node_is_quarantined_until_released() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for i in 1..=4 {
            let name = format!("n{i}");
            let mut node = node_template(&name, "8", "16Gi", 110);
            node.metadata.name = Some(name);
            env.cluster.create_nodes_with(1, |_| node.clone()).await?;
        }
        let sets: Api<k8s_openapi::api::apps::v1::ReplicaSet> =
            Api::namespaced(env.admin.clone(), "default");
        let set: k8s_openapi::api::apps::v1::ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "bomb", "namespace": "default"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "bomb"}},
                "template": {"metadata": {"labels": {"app": "bomb"}},
                    "spec": {"containers": [{"name": "c", "image": "bomb"}]}}}}))?;
        let uid = sets.create(&PostParams::default(), &set).await?.metadata.uid;
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "PodToleratesNodeTaints"},
                {"name": "CheckWorkloadQuarantine", "argument": {"workloadQuarantine": {
                    "nodeThreshold": 3, "windowSeconds": 600, "notReadyWithinSeconds": 120,
                    "coolDownSeconds": 600}}}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]});
        let path = env.cluster.dir().join("quarantine-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;

        let bomb = |name: &str| {
            let mut p = pod(name, "berth", "100m", json!({}));
            p.metadata.labels = Some(BTreeMap::from([("app".to_string(), "bomb".to_string())]));
            p.metadata.owner_references = Some(vec![serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bomb",
                "uid": uid.clone().unwrap_or_default(), "controller": true}))
            .expect("owner reference")]);
            p
        };
        let nodes: Api<Node> = Api::all(env.admin.clone());
        let mut failed = Vec::new();
        for i in 1..=3 {
            let name = format!("bomb-{i}");
            env.create_pods(vec![bomb(&name)]).await?;
            let bound = env.wait_bound(&name, 1, Duration::from_secs(30)).await?;
            let node = node_name(&bound[0]).context("bound")?.to_string();
            assert!(!failed.contains(&node), "{name} landed on {node}, which had failed");
            // The node exhausts itself: the kubelet stops reporting, the controller taints it.
            let now = berth_engine::health::format_utc(epoch_seconds());
            nodes
                .patch_status(&node, &PatchParams::default(), &Patch::Merge(&json!({"status": {
                    "conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}]}})))
                .await?;
            nodes
                .patch(&node, &PatchParams::default(), &Patch::Merge(&json!({"spec": {"taints": [
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]}})))
                .await?;
            failed.push(node);
            // The next pod is placed after this node failed, as an evicted replacement is.
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        }
        env.create_pods(vec![bomb("bomb-4"), pod("bystander", "berth", "100m", json!({}))])
            .await?;
        let bound = env.wait_bound("bystander", 1, Duration::from_secs(30)).await?;
        let healthy = node_name(&bound[0]).context("bound")?.to_string();
        assert!(!failed.contains(&healthy));
        let message = env
            .unschedulable_message("bomb-4", Duration::from_secs(30))
            .await?;
        let why = format!(
            "0/4 nodes are available: 4 pod's owner ReplicaSet default/bomb is quarantined: nodes {} \
             went NotReady shortly \
             after receiving its pods; annotate the ReplicaSet with berth.dev/quarantine-release=true \
             to release it, or wait until ",
            failed.join(", ")
        );
        // Every node refuses it for that reason, the healthy one included.
        assert!(message.starts_with(&why), "{message}");
        let (_, metrics) = berth.get("/metrics")?;
        assert!(
            metrics.contains(r#"berth_quarantined_workloads{kind="ReplicaSet",namespace="default",name="bomb"} 1"#),
            "{metrics}"
        );

        sets.patch("bomb", &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"annotations":
            {"berth.dev/quarantine-release": "true"}}})))
            .await?;
        let bound = env.wait_bound("bomb-4", 1, Duration::from_secs(30)).await?;
        assert_eq!(node_name(&bound[0]), Some(healthy.as_str()));
        let status = berth.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", berth.log());
        Ok(())
    })
    .await;
}

/// Pod-IP capacity beyond kubenet on a real cluster: node `ipam` publishes its pod-IP pool
/// in an annotation (as a per-node IPAM would), node `plain` publishes none and is not trusted
/// with pods. Two pods fill the pool, the third is refused with both reasons; when the IPAM
/// grows the pool (the annotation updated through the API), the third is placed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_ip_capacity_from_a_node_annotation_stops_pods_the_ipam_cannot_address() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(180), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for name in ["ipam", "plain"] {
            let mut node = node_template(name, "8", "16Gi", 110);
            node.metadata.name = Some(name.into());
            if name == "ipam" {
                node.metadata.annotations = Some(BTreeMap::from([(
                    "example.com/pod-ips".to_string(),
                    "2".to_string(),
                )]));
            }
            env.cluster.create_nodes_with(1, |_| node.clone()).await?;
        }
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "CheckPodCIDRCapacity",
                "argument": {"podIPCapacity": {"nodeAnnotation": "example.com/pod-ips"}}}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]});
        let path = env.cluster.dir().join("pod-ips-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        env.create_pods(vec![
            pod("ip-1", "berth", "100m", json!({})),
            pod("ip-2", "berth", "100m", json!({})),
        ])
        .await?;
        for bound in env.wait_bound("ip-", 2, Duration::from_secs(30)).await? {
            assert_eq!(node_name(&bound), Some("ipam"));
        }
        env.create_pods(vec![pod("ip-3", "berth", "100m", json!({}))])
            .await?;
        let message = env
            .unschedulable_message("ip-3", Duration::from_secs(30))
            .await?;
        assert_eq!(
            message,
            "0/2 nodes are available: 1 node(s) didn't publish their pod IP capacity (annotation \
             example.com/pod-ips), 1 node(s) had no free pod IP addresses."
        );
        let nodes: Api<Node> = Api::all(env.admin.clone());
        nodes
            .patch(
                "ipam",
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"annotations":
                {"example.com/pod-ips": "3"}}})),
            )
            .await?;
        let bound = env.wait_bound("ip-3", 1, Duration::from_secs(30)).await?;
        assert_eq!(node_name(&bound[0]), Some("ipam"));
        let status = berth.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", berth.log());
        Ok(())
    })
    .await;
}

/// Writes the status the kubelet reports for `name`'s container while an in-place resize is
/// under way: admitted and running with `cpu`.
async fn set_running_cpu(env: &Env, name: &str, cpu: &str) -> Result<()> {
    let resources = json!({"cpu": cpu, "memory": "64Mi"});
    env.pods()
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"status": {"phase": "Running", "containerStatuses": [{
                "name": "c", "image": "pause", "imageID": "", "ready": true,
                "restartCount": 0, "started": true, "state": {"running": {}},
                "allocatedResources": resources, "resources": {"requests": resources}}]}}),
            ),
        )
        .await
        .with_context(|| format!("setting {name}'s container status"))?;
    Ok(())
}

/// Fields kube-scheduler v1.22 never knew, on the real v1.36 apiserver: a pod whose sidecar
/// makes it 2.5 CPU is refused on 2-CPU nodes; a pod shrinking in place still counts its
/// larger running size until the kubelet reports the resize applied, and the room it then
/// frees is used; a gated pod waits, with no FailedScheduling, until its gate is removed; a
/// pod with resource claims is refused naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecars_resizes_gates_and_claims_are_honoured() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(180), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for name in ["small", "resizing"] {
            let mut node = node_template(name, "2", "4Gi", 110);
            node.metadata.name = Some(name.into());
            node.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert("kubernetes.io/hostname".into(), name.into());
            env.cluster.create_nodes_with(1, |_| node.clone()).await?;
        }
        // Bound by hand: asks 0.5 CPU, still runs with the 1.5 it had.
        env.create_pods(vec![pod(
            "shrinking",
            "someone-else",
            "500m",
            json!({"nodeName": "resizing"}),
        )])
        .await?;
        set_running_cpu(&env, "shrinking", "1500m").await?;
        let mut berth = env.berth("solo", &[])?;
        berth.wait_ready().await?;
        let sidecar = json!({"initContainers": [{"name": "proxy", "image": "envoy",
            "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]});
        env.create_pods(vec![
            pod("sidecar-big", "berth", "1500m", sidecar),
            pod(
                "after-resize",
                "berth",
                "1",
                json!({"nodeSelector": {"kubernetes.io/hostname": "resizing"}}),
            ),
            pod(
                "gated",
                "berth",
                "100m",
                json!({"schedulingGates": [{"name": "example.com/wait"}]}),
            ),
            pod(
                "dra",
                "berth",
                "100m",
                json!({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}),
            ),
        ])
        .await?;
        let wait = Duration::from_secs(30);
        assert_eq!(
            env.unschedulable_message("sidecar-big", wait).await?,
            "0/2 nodes are available: 2 Insufficient cpu."
        );
        let message = env.unschedulable_message("after-resize", wait).await?;
        ensure!(
            message.contains("1 Insufficient cpu"),
            "the resize not yet applied must still count 1.5 CPU: {message}"
        );
        let message = env.unschedulable_message("dra", wait).await?;
        ensure!(
            message.contains("spec.resourceClaims") && message.contains("DynamicResources"),
            "{message}"
        );
        // By now Berth has tried every ungated pod; the gated one was never tried.
        ensure!(
            !env.events("FailedScheduling").await?.contains_key("gated"),
            "a gated pod must not be tried"
        );
        ensure!(
            node_name(&env.pods().get("gated").await?).is_none(),
            "a gated pod must not be bound"
        );
        env.pods()
            .patch(
                "gated",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"schedulingGates": null}})),
            )
            .await?;
        let bound = env.wait_bound("gated", 1, wait).await?;
        ensure!(node_name(&bound[0]).is_some());
        set_running_cpu(&env, "shrinking", "500m").await?;
        let bound = env.wait_bound("after-resize", 1, wait).await?;
        assert_eq!(node_name(&bound[0]), Some("resizing"));
        ensure!(
            node_name(&env.pods().get("sidecar-big").await?).is_none(),
            "2.5 CPU fits no 2-CPU node"
        );
        assert_not_overcommitted(&env).await?;
        // Counted while it waits in the unschedulable queue (a cluster event may move it to
        // backoff for a moment, as it moves every refused pod).
        let counted =
            r#"scheduler_unschedulable_pods{plugin="DynamicResources",profile="berth"} 1"#;
        eventually(
            "the DRA pod counted under DynamicResources",
            wait,
            || async {
                let (_, metrics) = berth.get("/metrics")?;
                Ok(metrics.contains(counted).then_some(()))
            },
        )
        .await?;
        let status = berth.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", berth.log());
        Ok(())
    })
    .await;
}

/// Seconds since the epoch now.
fn epoch_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The tenant toleration guard on a real cluster: a pod of `default` that copied tenant-a's
/// toleration is refused tenant-a's node (FailedScheduling and the condition name the taint
/// and the namespace; the metric counts it) while a tolerate-everything pod lands on the
/// shared node only; once the namespace's tolerationsWhitelist annotation grants the taint,
/// the watch delivers it and the copier is placed there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_toleration_guard_refuses_copied_tolerations_until_the_namespace_is_granted() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default()).await?;
        let tainted = |name: &str, taint: serde_json::Value| -> Result<Node> {
            let mut node = node_template(name, "8", "16Gi", 110);
            node.metadata.name = Some(name.into());
            node.spec.get_or_insert_default().taints = Some(vec![serde_json::from_value(taint)?]);
            Ok(node)
        };
        let tenant = tainted(
            "tenant",
            json!({"key": "dedicated", "value": "tenant-a", "effect": "NoSchedule"}),
        )?;
        let gpu = tainted("gpu", json!({"key": "example.com/gpu", "effect": "NoSchedule"}))?;
        let mut shared = node_template("shared", "2", "4Gi", 110);
        shared.metadata.name = Some("shared".into());
        env.cluster.create_nodes_with(1, |_| tenant.clone()).await?;
        env.cluster.create_nodes_with(1, |_| gpu.clone()).await?;
        env.cluster.create_nodes_with(1, |_| shared.clone()).await?;

        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "PodToleratesNodeTaints"},
                {"name": "CheckTolerationRestriction", "argument": {"tolerationRestriction": {
                    "taints": [{"taint": "dedicated=tenant-a", "namespaces": ["tenant-a"]},
                               {"taint": "example.com/gpu", "namespaces": []}]}}}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]});
        let path = env.cluster.dir().join("guard-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        let copied = json!([{"key": "dedicated", "operator": "Equal", "value": "tenant-a",
            "effect": "NoSchedule"}]);
        env.create_pods(vec![
            pod(
                "copier",
                "berth",
                "100m",
                json!({"nodeSelector": {"kubernetes.io/hostname": "tenant"}, "tolerations": copied}),
            ),
            pod(
                "wildcard",
                "berth",
                "100m",
                json!({"tolerations": [{"operator": "Exists"}]}),
            ),
        ])
        .await?;
        let bound = env.wait_bound("wildcard", 1, Duration::from_secs(60)).await?;
        assert_eq!(node_name(&bound[0]), Some("shared"));

        let message = env
            .unschedulable_message("copier", Duration::from_secs(30))
            .await?;
        assert_eq!(
            message,
            "0/3 nodes are available: 1 node(s) had taint {dedicated: tenant-a}, that namespace \
             default may not tolerate, 2 node(s) didn't match Pod's node affinity/selector."
        );
        let failed = env.events("FailedScheduling").await?;
        assert!(
            failed["copier"]
                .iter()
                .any(|e| e.note.as_deref() == Some(message.as_str())),
            "{:?}",
            failed["copier"]
        );
        let (_, metrics) = berth.get("/metrics")?;
        assert!(
            metrics.contains(
                r#"berth_protection_rejected_nodes_total{predicate="CheckTolerationRestriction"}"#
            ),
            "{metrics}"
        );

        // The namespace's annotation grants the taint: the copier is placed on the next try.
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.admin.clone());
        let grant = json!({"metadata": {"annotations": {
            "scheduler.alpha.kubernetes.io/tolerationsWhitelist":
                r#"[{"key": "dedicated", "operator": "Equal", "value": "tenant-a"}]"#}}});
        namespaces
            .patch("default", &PatchParams::default(), &Patch::Merge(&grant))
            .await?;
        let bound = env.wait_bound("copier", 1, Duration::from_secs(90)).await?;
        assert_eq!(node_name(&bound[0]), Some("tenant"));
        let status = berth.terminate()?;
        assert!(status.success(), "exit {status}:\n{}", berth.log());
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extenders_filter_steer_bind_and_a_down_one_blocks_only_if_not_ignorable() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for name in ["e1", "e2", "e3"] {
            let mut n = node_template(name, "4", "8Gi", 110);
            n.metadata.name = Some(name.into());
            env.cluster.create_nodes_with(1, |_| n.clone()).await?;
        }
        let filter = ExtenderServer::start(BERTH_LIFETIME)?;
        // It also binds, through the API as a real binding extender would.
        let admin = env.admin.clone();
        let binder: berth_testcluster::extender::Binder = Arc::new(move |r: &BindRequest| {
            let (admin, r) = (admin.clone(), r.clone());
            let bind = async move {
                let binding: Binding = serde_json::from_value(json!({
                    "metadata": {"name": r.name, "namespace": r.namespace, "uid": r.uid},
                    "target": {"kind": "Node", "apiVersion": "v1", "name": r.node}}))
                .map_err(|e| e.to_string())?;
                Api::<Pod>::namespaced(admin, &r.namespace)
                    .create_subresource::<_, kube::core::Status>(
                        "binding",
                        &r.name,
                        &PostParams::default(),
                        &binding,
                    )
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            };
            // The extender's own runtime is busy answering; bind on a thread of its own.
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?
                    .block_on(bind)
            })
            .join()
            .unwrap_or_else(|_| Err("binding thread panicked".into()))
        });
        filter.configure(|b| {
            b.refuse.insert("e1".into(), "e1 is reserved".into());
            b.binder = Some(binder);
        });
        let steer = ExtenderServer::start(BERTH_LIFETIME)?;
        steer.configure(|b| {
            b.scores.insert("e3".into(), 10);
        });
        let down = format!("http://127.0.0.1:{}/x", free_port()?);
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "PodFitsResources"}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
            "extenders": [
                {"urlPrefix": filter.url_prefix(), "filterVerb": "filter", "bindVerb": "bind",
                 "nodeCacheCapable": true},
                {"urlPrefix": steer.url_prefix(), "prioritizeVerb": "prioritize", "weight": 5},
                {"urlPrefix": down, "filterVerb": "filter", "ignorable": true},
                {"urlPrefix": down, "filterVerb": "filter", "nodeCacheCapable": true,
                 "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": true}]}
            ]});
        let path = env.cluster.dir().join("extender-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        let gpu = json!({"containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": "100m"}, "limits": {"example.com/gpu": "1"}}}]});
        env.create_pods(vec![
            pod("ext-a", "berth", "100m", json!({})),
            pod("ext-b", "berth", "100m", json!({})),
            pod("gpu", "berth", "100m", gpu),
        ])
        .await?;
        // The filter keeps them off e1, the prioritizer steers them to e3, the ignorable
        // extender that is down does not block them.
        let bound = env.wait_bound("ext-", 2, Duration::from_secs(60)).await?;
        for p in &bound {
            assert_eq!(node_name(p), Some("e3"), "{}", berth.log());
        }
        // The binding extender bound them, not Berth.
        let binds: Vec<(String, String)> = filter
            .calls()
            .iter()
            .filter(|c| c.verb == "bind")
            .map(|c| (c.body["PodName"].to_string(), c.body["Node"].to_string()))
            .collect();
        assert_eq!(binds.len(), 2, "{binds:?}");
        assert!(binds.iter().all(|(_, node)| node == "\"e3\""), "{binds:?}");
        for (server, verb) in [(&filter, "filter"), (&steer, "prioritize")] {
            for name in ["ext-a", "ext-b"] {
                let calls = server
                    .calls()
                    .iter()
                    .filter(|c| c.verb == verb && c.body["Pod"]["metadata"]["name"] == name)
                    .count();
                assert_eq!(calls, 1, "{verb} calls for {name}");
            }
        }
        // The non-ignorable extender managing the GPU is down: the pod stays pending and its
        // Event says why, in upstream's words.
        let events = eventually("FailedScheduling for gpu", Duration::from_secs(30), || async {
            Ok(env.events("FailedScheduling").await?.remove("gpu"))
        })
        .await?;
        let note = events[0].note.clone().unwrap_or_default();
        assert!(
            note.starts_with(&format!("Post \"{down}/filter\": ")),
            "{note}"
        );
        assert_eq!(node_name(&env.pods().get("gpu").await?), None);
        let (_, metrics) = berth.get("/metrics")?;
        assert!(
            metrics.contains(&format!(
                "berth_extender_call_duration_seconds_count{{extender=\"{down}\",verb=\"filter\",result=\"error\"}}"
            )),
            "{metrics}"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_binding_claims_are_bound_before_their_pods() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(180), async {
        let env = Env::start(ClusterOptions::default()).await?;
        let mut local = node_template("local", "4", "8Gi", 110);
        local.metadata.name = Some("local".into());
        env.cluster.create_nodes_with(1, |_| local.clone()).await?;
        env.cluster
            .apply_yaml(
                r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: dynamic}
provisioner: example.com/fake-csi
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-local}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [local]}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fresh, namespace: default}
spec: {accessModes: [ReadWriteOnce], storageClassName: dynamic, resources: {requests: {storage: 1Gi}}}
"#,
            )
            .await?;
        // No PV controller runs here to mark the volume Available, as one would.
        let pvs: Api<PersistentVolume> = Api::all(env.admin.clone());
        let mut pv = pvs.get_status("pv-local").await?;
        pv.status.get_or_insert_default().phase = Some("Available".into());
        pvs.replace_status("pv-local", &PostParams::default(), &pv)
            .await?;

        // Claims are bound in the Reserve stage of CheckVolumeBinding, as upstream's
        // VolumeBinding plugin binds them: the policy must name it.
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "GeneralPredicates"}, {"name": "CheckVolumeBinding"}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]});
        let path = env.cluster.dir().join("volume-binding-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        let claim = |claim: &str| {
            json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]})
        };
        env.create_pods(vec![
            pod("uses-local", "berth", "100m", claim("data")),
            pod("uses-fresh", "berth", "100m", claim("fresh")),
        ])
        .await?;
        env.wait_bound("uses-", 2, Duration::from_secs(60)).await?;
        let claim_ref = pvs.get("pv-local").await?.spec.and_then(|s| s.claim_ref);
        assert_eq!(
            claim_ref.map(|r| (r.namespace, r.name)),
            Some((Some("default".into()), Some("data".into()))),
            "the chosen volume names its claim"
        );
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.admin.clone(), "default");
        let fresh = claims.get("fresh").await?;
        assert_eq!(
            fresh
                .metadata
                .annotations
                .unwrap_or_default()
                .get("volume.kubernetes.io/selected-node")
                .map(String::as_str),
            Some("local"),
            "the claim left to provisioning names the node"
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_when_the_leader_dies_and_binds_every_pod_once() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .create_nodes(20, &node_template("node", "4", "8Gi", 110))
            .await?;
        // A low client rate keeps the first leader busy long enough to be killed mid-run.
        let limits = ["--qps", "20", "--burst", "20"];
        let mut a = env.berth("replica-a", &limits)?;
        a.wait_ready().await?;
        let mut b = env.berth("replica-b", &limits)?;
        b.wait_ready().await?;
        let first = eventually("a lease holder", Duration::from_secs(30), || async {
            env.leader().await
        })
        .await?;
        let total = 200;
        env.create_pods(
            (0..total)
                .map(|i| pod(&format!("p-{i}"), "berth", "100m", json!({})))
                .collect(),
        )
        .await?;
        env.wait_bound("p-", 40, Duration::from_secs(60)).await?;
        let (dead, standby) = if first == "replica-a" {
            (&mut a, "replica-b")
        } else {
            (&mut b, "replica-a")
        };
        dead.kill();
        let killed_at = Instant::now();
        eventually(
            "the standby to take the lease",
            Duration::from_secs(30),
            || async { Ok((env.leader().await?.as_deref() == Some(standby)).then_some(())) },
        )
        .await?;
        let takeover = killed_at.elapsed();
        let bound = env
            .wait_bound("p-", total, Duration::from_secs(120))
            .await?;
        assert_eq!(bound.len(), total);
        assert_not_overcommitted(&env).await?;
        // Every pod bound once: the API server refuses a second binding, and no pod has more
        // than one Scheduled event; both replicas bound some. A killed replica's last events
        // may be lost, so wait until no more arrive rather than for one per pod.
        let mut scheduled = env.events("Scheduled").await?;
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let now = env.events("Scheduled").await?;
            if now.len() == scheduled.len() {
                break;
            }
            scheduled = now;
        }
        let mut by_replica: BTreeMap<String, usize> = BTreeMap::new();
        for (pod, events) in &scheduled {
            assert!(events.len() <= 1, "{pod} scheduled {} times", events.len());
            let who = events[0].reporting_instance.clone().unwrap_or_default();
            *by_replica.entry(who).or_default() += 1;
        }
        assert_eq!(by_replica.len(), 2, "{by_replica:?}");
        assert!(
            takeover < Duration::from_secs(10),
            "takeover took {takeover:?}"
        );
        eprintln!(
            "leader {first} killed; takeover in {takeover:?}; Scheduled events: {by_replica:?}"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_reconnects_after_an_apiserver_restart_and_finishes() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let mut env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .create_nodes(10, &node_template("node", "4", "8Gi", 110))
            .await?;
        let mut berth = env.berth("solo", &[])?;
        berth.wait_ready().await?;
        env.create_pods(
            (0..50)
                .map(|i| pod(&format!("before-{i}"), "berth", "100m", json!({})))
                .collect(),
        )
        .await?;
        env.wait_bound("before-", 50, Duration::from_secs(60))
            .await?;
        env.cluster.restart_apiserver().await?;
        // Made after the restart: only a reconnected watch sees them.
        env.create_pods(
            (0..50)
                .map(|i| pod(&format!("after-{i}"), "berth", "100m", json!({})))
                .collect(),
        )
        .await?;
        let bound = env.wait_bound("after-", 50, Duration::from_secs(120)).await;
        if let Err(e) = bound {
            bail!("{e:#}\nberth log:\n{}", berth.log());
        }
        env.wait_bound("", 100, Duration::from_secs(10)).await?;
        assert_not_overcommitted(&env).await?;
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_pods_on_five_hundred_nodes_fill_them_exactly() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(600), async {
        let env = Env::start(ClusterOptions::default()).await?;
        // Room for exactly 1,000 one-cpu pods: any accounting slip leaves a pod pending or
        // overcommits a node.
        env.cluster
            .create_nodes(500, &node_template("node", "2", "8Gi", 110))
            .await?;
        let mut berth = env.berth("solo", &["--qps", "500", "--burst", "1000"])?;
        berth.wait_ready().await?;
        let started = Instant::now();
        env.create_pods(
            (0..1000)
                .map(|i| pod(&format!("p-{i}"), "berth", "1", json!({})))
                .collect(),
        )
        .await?;
        let bound = env.wait_bound("p-", 1000, Duration::from_secs(400)).await;
        if let Err(e) = bound {
            bail!("{e:#}\nberth log tail:\n{}", tail(&berth.log(), 40));
        }
        assert_not_overcommitted(&env).await?;
        eprintln!(
            "1000 pods on 500 nodes bound in {:?} (debug build)",
            started.elapsed()
        );
        Ok(())
    })
    .await;
}

/// At a client QPS far below what 32 bindings in flight ask for, the bindings queue on the
/// rate limit; the lease renewals must not queue behind them (they have a client of their
/// own), or the lease lapses and binding stops every few seconds. The tests' lease: renew
/// deadline 3 s, renewals every 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bindings_throttled_by_a_low_qps_do_not_starve_the_lease() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .create_nodes(20, &node_template("node", "8", "32Gi", 110))
            .await?;
        let mut berth = env.berth("paced", &["--qps", "5", "--burst", "10"])?;
        berth.wait_ready().await?;
        env.create_pods(
            (0..60)
                .map(|i| pod(&format!("p-{i}"), "berth", "100m", json!({})))
                .collect(),
        )
        .await?;
        // 60 bindings at 5 a second take about 12 s; renewals stuck behind them lost the
        // lease for most of that time.
        let bound = env.wait_bound("p-", 60, Duration::from_secs(120)).await;
        let log = berth.log();
        if let Err(e) = bound {
            bail!("{e:#}\nberth log tail:\n{}", tail(&log, 40));
        }
        for lapse in ["lease has lapsed", "lease lost", "renewal failed"] {
            ensure!(
                !log.contains(lapse),
                "the lease lapsed while bindings waited on the rate limit ({lapse:?}):\n{}",
                tail(&log, 40)
            );
        }
        Ok(())
    })
    .await;
}

/// End-to-end throughput: 5,000 pods on 1,000 nodes, from the moment Berth is ready (its
/// caches hold every pending pod) until the watch shows the last pod bound. A measurement,
/// not a test with a time bound on the result:
/// `cargo test --release -p berth --test e2e -- --ignored --nocapture throughput`
/// (`BERTH_BENCH_QPS`, default 5000, sets the client QPS; burst is twice that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run explicitly, in release mode"]
async fn throughput_5000_pods_on_1000_nodes() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(1200), async {
        let qps: u32 = std::env::var("BERTH_BENCH_QPS")
            .ok()
            .and_then(|q| q.parse().ok())
            .unwrap_or(5000);
        let (nodes, pods) = (1000, 5000);
        let env = Env::start(
            ClusterOptions::default()
                .for_throughput()
                .max_lifetime(Duration::from_secs(1200)),
        )
        .await?;
        env.cluster
            .create_nodes(nodes, &node_template("node", "32", "128Gi", 110))
            .await?;
        env.create_pods(
            (0..pods)
                .map(|i| pod(&format!("p-{i}"), "berth", "100m", json!({})))
                .collect(),
        )
        .await?;
        let (q, b) = (qps.to_string(), (qps * 2).to_string());
        let mut berth = env.berth("bench", &["--qps", &q, "--burst", &b])?;
        let started = Instant::now();
        // Count bindings from a watch, not by listing 5,000 pods over and over.
        let api = env.pods();
        let config = kube::runtime::watcher::Config::default().fields("spec.nodeName!=");
        let mut stream = std::pin::pin!(kube::runtime::watcher(api, config));
        berth.wait_ready().await?;
        let ready = Instant::now();
        let mut bound = std::collections::HashSet::new();
        let mut per_second: BTreeMap<u64, usize> = BTreeMap::new();
        while bound.len() < pods {
            let event = stream.next().await.context("watch ended")??;
            if let kube::runtime::watcher::Event::Apply(p)
            | kube::runtime::watcher::Event::InitApply(p) = event
                && bound.insert(p.metadata.name.clone().unwrap_or_default())
            {
                *per_second.entry(ready.elapsed().as_secs()).or_default() += 1;
            }
        }
        let elapsed = ready.elapsed();
        env.wait_bound("p-", pods, Duration::from_secs(30)).await?;
        assert_not_overcommitted(&env).await?;
        let windows: Vec<usize> = per_second.values().copied().collect();
        // Berth's own account: time in scheduling cycles and in binding requests.
        let (_, metrics) = berth.get("/metrics")?;
        for line in metrics.lines().filter(|l| {
            (l.contains("_sum") || l.contains("_count"))
                && (l.starts_with("scheduler_scheduling_attempt_duration_seconds")
                    || l.starts_with("scheduler_framework_extension_point_duration_seconds"))
        }) {
            eprintln!("  {line}");
        }
        if let Ok(dir) = std::env::var("BERTH_BENCH_LOG_DIR") {
            std::fs::copy(&berth.log, Path::new(&dir).join("berth-bench.log"))?;
        }
        eprintln!(
            "throughput: {pods} pods on {nodes} nodes, client qps {qps} burst {}: \
             {:.1} s from ready ({:.1} s to ready), {:.0} pods/s; per 1 s window: {windows:?}",
            qps * 2,
            elapsed.as_secs_f64(),
            (ready - started).as_secs_f64(),
            pods as f64 / elapsed.as_secs_f64()
        );
        Ok(())
    })
    .await;
}

/// A kwok cluster (pods run and go away on deletion) with two 2-CPU nodes, node-0 and
/// node-1, the PriorityClasses `low` (10) and `high` (1000), and `more` applied.
async fn two_small_nodes(more: &str) -> Result<Env> {
    let env = Env::start(ClusterOptions::default().with_kwok()).await?;
    env.cluster
        .create_nodes(2, &node_template("node", "2", "4Gi", 110))
        .await?;
    let classes = r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
"#;
    env.cluster.apply_yaml(&format!("{classes}{more}")).await?;
    Ok(env)
}

/// Preemption on the real API: two full nodes; a PodDisruptionBudget guards one node's pods,
/// so the high-priority pod evicts the other node's pods (deleted with their UID, `Preempted`
/// events in upstream's words) and is bound there once they are gone; a pod of
/// the same priority with `preemptionPolicy: Never` waits and evicts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_pod_preempts_where_no_budget_forbids_it() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = two_small_nodes(
            r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-never}
value: 1000
preemptionPolicy: Never
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec: {minAvailable: 2, selector: {matchLabels: {app: db}}}
"#,
        )
        .await?;
        let mut berth = env.berth("solo", &[])?;
        berth.wait_ready().await?;
        // Two guarded pods fill node-0, two unguarded ones node-1.
        let low = |name: &str, app: &str| {
            let node = if app == "db" { "node-0" } else { "node-1" };
            let mut p = pod(
                name,
                "berth",
                "1",
                json!({"priorityClassName": "low",
                       "nodeSelector": {"kubernetes.io/hostname": node}}),
            );
            p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
            p
        };
        env.create_pods(vec![low("db-1", "db"), low("db-2", "db")])
            .await?;
        let guarded = env.wait_bound("db-", 2, Duration::from_secs(60)).await?;
        let guarded_node = node_name(&guarded[0]).unwrap().to_string();
        assert_eq!(node_name(&guarded[1]), Some(guarded_node.as_str()));
        env.create_pods(vec![low("web-1", "web"), low("web-2", "web")])
            .await?;
        let victims = env.wait_bound("web-", 2, Duration::from_secs(60)).await?;
        let free_node = node_name(&victims[0]).unwrap().to_string();
        assert_ne!(free_node, guarded_node);

        env.create_pods(vec![pod(
            "vip",
            "berth",
            "2",
            json!({"priorityClassName": "high"}),
        )])
        .await?;
        let vip = env.wait_bound("vip", 1, Duration::from_secs(90)).await?;
        assert_eq!(node_name(&vip[0]), Some(free_node.as_str()));
        let preempted = env.events("Preempted").await?;
        let mut names: Vec<&str> = preempted.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["web-1", "web-2"]);
        for events in preempted.values() {
            assert_eq!(
                events[0].note.as_deref(),
                Some(format!("Preempted by default/vip on node {free_node}").as_str())
            );
        }
        let left: Vec<String> = env
            .pods()
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        assert!(left.contains(&"db-1".to_string()) && left.contains(&"db-2".to_string()));
        assert!(!left.iter().any(|n| n.starts_with("web-")), "{left:?}");

        // Same priority, preemptionPolicy Never: it waits, and the guarded pods stay.
        env.create_pods(vec![pod(
            "polite",
            "berth",
            "2",
            json!({"priorityClassName": "high-never"}),
        )])
        .await?;
        eventually(
            "polite reported unschedulable",
            Duration::from_secs(30),
            || async {
                Ok(env
                    .events("FailedScheduling")
                    .await?
                    .contains_key("polite")
                    .then_some(()))
            },
        )
        .await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let polite = env.pods().get("polite").await?;
        assert_eq!(node_name(&polite), None);
        assert_eq!(
            env.events("Preempted").await?.len(),
            2,
            "nothing else preempted"
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

/// The leader dies in the middle of preempting: five high-priority pods each need a whole
/// node of two low-priority pods. The standby must finish from the nominations and
/// deletions already made: exactly ten victims in all (a second preemption for a pod whose
/// node is already being freed, or a fresh one elsewhere, would delete more), every
/// preemptor bound alone on its node, nothing overcommitted.
/// The leader dies while the victims it chose are still terminating (held by a finalizer).
/// The standby finds the preemptor nominated to a node whose lower-priority pods are going
/// and waits, as v1.22 does, even though a node with cheaper victims (priority 1, where the
/// first victims have 10) appeared meanwhile: preempting again there would delete pods for
/// nothing. Once the victims are released the preemptor is bound where it was nominated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_waits_for_the_victims_its_predecessor_chose() {
    const HOLD: &str = "berth.test/hold";
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default().with_kwok()).await?;
        env.cluster
            .create_nodes(2, &node_template("node", "2", "4Gi", 110))
            .await?;
        env.cluster
            .apply_yaml(
                r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: lowest}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"#,
            )
            .await?;
        let mut a = env.berth("replica-a", &[])?;
        a.wait_ready().await?;
        let mut b = env.berth("replica-b", &[])?;
        b.wait_ready().await?;
        let first = eventually("a lease holder", Duration::from_secs(30), || async {
            env.leader().await
        })
        .await?;
        let held = |i: usize| {
            let mut p = pod(
                &format!("low-{i}"),
                "berth",
                "1",
                json!({"priorityClassName": "low"}),
            );
            p.metadata.finalizers = Some(vec![HOLD.into()]);
            p
        };
        env.create_pods((0..4).map(held).collect()).await?;
        env.wait_bound("low-", 4, Duration::from_secs(60)).await?;
        env.create_pods(vec![pod(
            "high",
            "berth",
            "2",
            json!({"priorityClassName": "high"}),
        )])
        .await?;
        let nominated = eventually(
            "the preemptor nominated",
            Duration::from_secs(60),
            || async {
                let p = env.pods().get("high").await?;
                Ok(p.status.and_then(|s| s.nominated_node_name))
            },
        )
        .await?;
        let victims = eventually("two Preempted victims", Duration::from_secs(30), || async {
            let events = env.events("Preempted").await?;
            Ok((events.len() == 2).then_some(events.into_keys().collect::<BTreeSet<_>>()))
        })
        .await?;
        let (dead, standby) = if first == "replica-a" {
            (&mut a, "replica-b")
        } else {
            (&mut b, "replica-a")
        };
        dead.kill();
        let mut spare = node_template("spare", "2", "4Gi", 110);
        spare.metadata.name = Some("spare".into());
        env.cluster.create_nodes_with(1, |_| spare.clone()).await?;
        env.create_pods(
            (0..2)
                .map(|i| {
                    pod(
                        &format!("lowest-{i}"),
                        "berth",
                        "1",
                        json!({"priorityClassName": "lowest", "nodeName": "spare"}),
                    )
                })
                .collect(),
        )
        .await?;
        eventually(
            "the standby to take the lease",
            Duration::from_secs(30),
            || async { Ok((env.leader().await?.as_deref() == Some(standby)).then_some(())) },
        )
        .await?;
        // The standby retries the pending preemptor at once and again on every node or pod
        // change; give it several attempts before looking.
        tokio::time::sleep(Duration::from_secs(8)).await;
        let after = env.events("Preempted").await?;
        ensure!(
            after.keys().collect::<BTreeSet<_>>() == victims.iter().collect(),
            "the standby preempted again: {:?} (first victims {victims:?})",
            after.keys().collect::<Vec<_>>()
        );
        let api = env.pods();
        for name in ["lowest-0", "lowest-1"] {
            let p = api.get(name).await?;
            ensure!(
                p.metadata.deletion_timestamp.is_none(),
                "{name} was deleted by a second preemption"
            );
        }
        let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        for i in 0..4 {
            api.patch(&format!("low-{i}"), &PatchParams::default(), &release)
                .await?;
        }
        let bound = env.wait_bound("high", 1, Duration::from_secs(60)).await?;
        ensure!(
            node_name(&bound[0]) == Some(nominated.as_str()),
            "bound to {:?}, nominated to {nominated}",
            node_name(&bound[0])
        );
        assert_not_overcommitted(&env).await?;
        Ok(())
    })
    .await;
}

/// A preempt extender changes the victims: unaided, the high-priority pod would evict the
/// cheaper pod; the extender (sent the victims whole, as it is not node-cache capable) drops
/// that node, so the dearer pod on the other node goes instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempt_extender_changes_the_victims() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = two_small_nodes(
            r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 500
"#,
        )
        .await?;
        let extender = ExtenderServer::start(BERTH_LIFETIME)?;
        extender.configure(|b| {
            b.preempt_drop.insert("node-0".into());
        });
        let policy = json!({"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}],
            "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
            "extenders": [{"urlPrefix": extender.url_prefix(), "preemptVerb": "preempt"}]});
        let path = env.cluster.dir().join("preempt-policy.json");
        std::fs::write(&path, policy.to_string())?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        let pinned = |name: &str, class: &str, node: &str| {
            pod(
                name,
                "berth",
                "2",
                json!({"priorityClassName": class,
                       "nodeSelector": {"kubernetes.io/hostname": node}}),
            )
        };
        env.create_pods(vec![
            pinned("cheap", "low", "node-0"),
            pinned("dear", "mid", "node-1"),
        ])
        .await?;
        env.wait_bound("cheap", 1, Duration::from_secs(60)).await?;
        env.wait_bound("dear", 1, Duration::from_secs(60)).await?;
        env.create_pods(vec![pod(
            "vip",
            "berth",
            "2",
            json!({"priorityClassName": "high"}),
        )])
        .await?;
        let vip = env.wait_bound("vip", 1, Duration::from_secs(90)).await?;
        assert_eq!(node_name(&vip[0]), Some("node-1"), "{}", berth.log());
        let preempted = env.events("Preempted").await?;
        assert_eq!(preempted.keys().collect::<Vec<_>>(), ["dear"]);
        assert!(env.pods().get_opt("cheap").await?.is_some());
        // It was asked once, with both candidates and their victims whole.
        let calls: Vec<_> = extender
            .calls()
            .into_iter()
            .filter(|c| c.verb == "preempt")
            .collect();
        assert_eq!(calls.len(), 1, "{calls:?}");
        let sent = &calls[0].body["NodeNameToVictims"];
        for (node, victim) in [("node-0", "cheap"), ("node-1", "dear")] {
            assert_eq!(
                sent[node]["Pods"][0]["metadata"]["name"], victim,
                "{sent}"
            );
        }
        assert_eq!(calls[0].body["NodeNameToMetaVictims"], serde_json::Value::Null);
        let (_, metrics) = berth.get("/metrics")?;
        assert!(
            metrics.contains(&format!(
                "berth_extender_call_duration_seconds_count{{extender=\"{}\",verb=\"preempt\",result=\"success\"}} 1",
                extender.url_prefix()
            )),
            "{metrics}"
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

/// Label churn as a long-running cluster sees it: every round a new ReplicaSet-like
/// generation of pods (a new `pod-template-hash`, a preferred anti-affinity term selecting
/// it) replaces the previous one, and each pod also carries labels unique to it, as Job and
/// CI pipeline pods do (`job-name`, `controller-uid` and their `batch.kubernetes.io/` twins,
/// Tekton's run names and UIDs: six new strings per pod), so label values that no live
/// object uses any more pile up unless the cache lets them go.
struct Churn {
    nodes: usize,
    pods_per_round: usize,
    /// How long to churn, and at least how many rounds (a slow machine churns longer).
    duration: Duration,
    min_rounds: usize,
    sample_every: Duration,
}

/// Berth as sampled during churn.
#[derive(Debug)]
struct Sample {
    at: Duration,
    rounds: usize,
    rss_kib: u64,
    tables: BTreeMap<String, i64>,
}

impl Sample {
    fn table(&self, name: &str) -> i64 {
        self.tables.get(name).copied().unwrap_or(-1)
    }
}

/// Round `round`'s pods: one generation of the churning workload.
fn churn_pods(round: usize, count: usize) -> Vec<Pod> {
    let hash = format!("{:010x}", mix(round, usize::MAX) >> 24);
    (0..count)
        .map(|i| {
            let job = format!("churn-{round}-{i}");
            let (a, b) = (mix(round, i), mix(i, round));
            let uid = format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xffff,
                b >> 48,
                b & 0xffff_ffff_ffff
            );
            let mut p = pod(
                &format!("{job}-{}", &hash[..5]),
                "berth",
                "10m",
                json!({"affinity": {"podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"pod-template-hash": hash}}
                        }
                    }]
                }}}),
            );
            let run = format!("build-{round}-{i}-{:x}", a >> 40);
            let run_uid = format!("{:016x}{:016x}", b, a);
            let task = format!("{run}-compile");
            let task_uid = format!("{:016x}{:016x}", a ^ b, b.rotate_left(17));
            p.metadata.labels = Some(
                [
                    ("app", "churn"),
                    ("pod-template-hash", hash.as_str()),
                    ("job-name", job.as_str()),
                    ("controller-uid", uid.as_str()),
                    ("batch.kubernetes.io/job-name", job.as_str()),
                    ("batch.kubernetes.io/controller-uid", uid.as_str()),
                    ("tekton.dev/pipelineRun", run.as_str()),
                    ("tekton.dev/pipelineRunUID", run_uid.as_str()),
                    ("tekton.dev/taskRun", task.as_str()),
                    ("tekton.dev/taskRunUID", task_uid.as_str()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            );
            p
        })
        .collect()
}

/// Runs the churn against a Berth already ready: each round creates a generation, waits
/// until Berth has bound all of it, then deletes the generation before it. Samples Berth's
/// RSS and cache table sizes every `sample_every`.
async fn churn(env: &Env, berth: &Berth, churn: &Churn) -> Result<Vec<Sample>> {
    let pid = berth.pid();
    let api = env.pods();
    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut next_sample = started;
    let mut round = 0;
    while started.elapsed() < churn.duration || round < churn.min_rounds {
        env.create_pods(churn_pods(round, churn.pods_per_round))
            .await?;
        let hash = format!("pod-template-hash={:010x}", mix(round, usize::MAX) >> 24);
        eventually(
            &format!("round {round} bound"),
            Duration::from_secs(120),
            || async {
                let pods = api.list(&ListParams::default().labels(&hash)).await?.items;
                Ok(
                    (pods.iter().filter(|p| node_name(p).is_some()).count()
                        >= churn.pods_per_round)
                        .then_some(()),
                )
            },
        )
        .await?;
        if round > 0 {
            let previous = format!(
                "pod-template-hash={:010x}",
                mix(round - 1, usize::MAX) >> 24
            );
            let delete = kube::api::DeleteParams {
                grace_period_seconds: Some(0),
                ..kube::api::DeleteParams::default()
            };
            api.delete_collection(&delete, &ListParams::default().labels(&previous))
                .await?;
        }
        round += 1;
        if Instant::now() >= next_sample {
            let (_, metrics) = berth.get("/metrics")?;
            let tables = metrics
                .lines()
                .filter_map(|l| l.strip_prefix("berth_cache_entries{table=\""))
                .filter_map(|l| l.split_once("\"} "))
                .filter_map(|(table, n)| Some((table.to_string(), n.trim().parse().ok()?)))
                .collect();
            let sample = Sample {
                at: started.elapsed(),
                rounds: round,
                rss_kib: rss_kib(pid)?,
                tables,
            };
            eprintln!(
                "soak t={:>4}s rounds={:>4} pods_created={:>6} rss_kib={:>7} interned={} \
                 pod_label_pairs={} pods={}",
                sample.at.as_secs(),
                round,
                round * churn.pods_per_round,
                sample.rss_kib,
                sample.table("interned_strings"),
                sample.table("pod_label_pairs"),
                sample.table("pods"),
            );
            samples.push(sample);
            next_sample += churn.sample_every;
        }
    }
    Ok(samples)
}

/// Starts a control plane with `churn.nodes` kwok nodes and a ready Berth for a churn run.
async fn churn_env(churn: &Churn) -> Result<(Env, Berth)> {
    let lifetime = churn.duration + Duration::from_secs(600);
    let env = Env::start(
        ClusterOptions::default()
            .with_kwok()
            .for_throughput()
            .max_lifetime(lifetime),
    )
    .await?;
    env.cluster
        .create_nodes(churn.nodes, &node_template("node", "32", "128Gi", 110))
        .await?;
    let mut berth = env.berth_for(lifetime, "soak", &["--qps", "500", "--burst", "1000"])?;
    berth.wait_ready().await?;
    Ok((env, berth))
}

/// Label churn in the test command: a minute (and 30 generations at least) on 100 nodes. The cache's
/// tables must follow the live pods: the interner holds a few thousand strings at most
/// while the run creates several times that many, and the pod label index only the
/// pairs of live pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_churn_keeps_the_cache_tables_bounded() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(420), async {
        let spec = Churn {
            nodes: 100,
            pods_per_round: 40,
            duration: Duration::from_secs(60),
            min_rounds: 30,
            sample_every: Duration::from_secs(5),
        };
        let (env, mut berth) = churn_env(&spec).await?;
        let samples = churn(&env, &berth, &spec).await?;
        let last = samples.last().context("no sample")?;
        // Six distinct strings per pod created plus a hash per round: what an interner
        // that never lets go holds at least.
        let created = 6 * last.rounds * spec.pods_per_round;
        // At most two generations are live: their strings, the fixed ones (keys, the nodes'
        // hostname labels, namespaces), and the garbage the interner may hold before it
        // compacts (as much as it holds live, plus a floor of 1,024).
        let live_pods = 2 * spec.pods_per_round;
        let bound = (2 * (6 * live_pods + spec.nodes + 200) + 1024) as i64;
        assert!(
            created as i64 > 2 * bound,
            "the run is too short to tell: {created} strings created, bound {bound}"
        );
        let most = samples
            .iter()
            .map(|s| s.table("interned_strings"))
            .max()
            .unwrap_or(-1);
        assert!(
            (0..=bound).contains(&most),
            "interned strings reached {most} (bound {bound}, {created} created): {samples:?}"
        );
        let pairs = last.table("pod_label_pairs");
        assert!(
            (0..=(10 * live_pods as i64 + 50)).contains(&pairs),
            "pod label index holds {pairs} pairs for at most {live_pods} live pods"
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

/// The soak: ten minutes (`BERTH_SOAK_MINUTES`) of label churn on 300 nodes, Berth's RSS
/// sampled every 20 s; the mean RSS of the last third of the samples must stay within
/// `SOAK_MARGIN` of the middle third's (a leak of the churn's strings and index entries
/// grows it steadily). A measurement, run explicitly:
/// `cargo test --release -p berth --test e2e -- --ignored --nocapture soak`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a 10-minute soak: run explicitly, in release mode"]
async fn soak_rss_plateaus_under_label_churn() {
    /// Allowed growth of the last third's mean RSS over the middle third's.
    const SOAK_MARGIN: f64 = 0.05;
    let _one = SERIAL.lock().await;
    let minutes: u64 = std::env::var("BERTH_SOAK_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(10);
    let spec = Churn {
        nodes: 300,
        pods_per_round: 100,
        duration: Duration::from_secs(minutes * 60),
        min_rounds: 0,
        sample_every: Duration::from_secs(20),
    };
    bounded(spec.duration + Duration::from_secs(600), async {
        let (env, mut berth) = churn_env(&spec).await?;
        let samples = churn(&env, &berth, &spec).await?;
        let series: Vec<(u64, u64)> = samples
            .iter()
            .map(|s| (s.at.as_secs(), s.rss_kib))
            .collect();
        eprintln!("soak RSS series (seconds, KiB): {series:?}");
        let third = samples.len() / 3;
        anyhow::ensure!(third >= 2, "too few samples: {}", samples.len());
        let mean = |s: &[Sample]| s.iter().map(|s| s.rss_kib as f64).sum::<f64>() / s.len() as f64;
        let middle = mean(&samples[third..2 * third]);
        let last = mean(&samples[samples.len() - third..]);
        eprintln!(
            "soak: middle third mean {middle:.0} KiB, last third mean {last:.0} KiB ({:+.1}%)",
            (last / middle - 1.0) * 100.0
        );
        assert!(
            last <= middle * (1.0 + SOAK_MARGIN),
            "RSS grows: last third {last:.0} KiB > middle third {middle:.0} KiB + {:.0}%",
            SOAK_MARGIN * 100.0
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

/// A policy reload swaps the extenders without a restart: a new extender (sent whole nodes,
/// which the first one did not need, so the node watch relists to keep them) replaces the
/// old; a reload whose extender cannot be set up is refused and the running ones stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_policy_swaps_its_extenders_and_a_bad_one_is_refused() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(240), async {
        let env = Env::start(ClusterOptions::default()).await?;
        for name in ["e1", "e2"] {
            let mut n = node_template(name, "4", "8Gi", 110);
            n.metadata.name = Some(name.into());
            env.cluster.create_nodes_with(1, |_| n.clone()).await?;
        }
        let first = ExtenderServer::start(BERTH_LIFETIME)?;
        first.configure(|b| {
            b.refuse.insert("e1".into(), "e1 is reserved".into());
        });
        let second = ExtenderServer::start(BERTH_LIFETIME)?;
        second.configure(|b| {
            b.refuse.insert("e2".into(), "e2 is reserved".into());
        });
        let policy = |extender: serde_json::Value| {
            json!({"kind": "Policy", "apiVersion": "v1",
                "predicates": [{"name": "PodFitsResources"}],
                "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
                "extenders": [extender]})
            .to_string()
        };
        let path = env.cluster.dir().join("reload-policy.json");
        // Whole, by a rename, so the reloader never reads half a file.
        let write = |text: String| {
            let next = path.with_extension("next");
            std::fs::write(&next, text)?;
            std::fs::rename(&next, &path)
        };
        write(policy(
            json!({"urlPrefix": first.url_prefix(), "filterVerb": "filter",
                "nodeCacheCapable": true}),
        ))?;
        let mut berth = env.berth("solo", &["--policy", &path.display().to_string()])?;
        berth.wait_ready().await?;
        let placed = |name: &'static str| {
            let env = &env;
            async move {
                env.create_pods(vec![pod(name, "berth", "100m", json!({}))])
                    .await?;
                let bound = env.wait_bound(name, 1, Duration::from_secs(60)).await?;
                Ok::<_, anyhow::Error>(node_name(&bound[0]).map(String::from))
            }
        };
        assert_eq!(placed("r1").await?.as_deref(), Some("e2"));
        let reloads = |berth: &Berth| berth.log().matches("policy reloaded").count();

        write(policy(
            json!({"urlPrefix": second.url_prefix(), "filterVerb": "filter"}),
        ))?;
        eventually("the policy reloaded", Duration::from_secs(30), || async {
            Ok((reloads(&berth) >= 1).then_some(()))
        })
        .await?;
        assert_eq!(
            placed("r2").await?.as_deref(),
            Some("e1"),
            "{}",
            berth.log()
        );
        assert!(
            berth
                .log()
                .contains("the reloaded policy's extenders are now called")
        );
        // /configz shows the reloaded policy.
        let (_, configz) = berth.get("/configz")?;
        let configz: serde_json::Value = serde_json::from_str(&configz)?;
        assert_eq!(
            configz["extenders"][0]["urlPrefix"],
            second.url_prefix(),
            "{configz}"
        );
        let asked = |server: &ExtenderServer, pod: &str| {
            server
                .calls()
                .iter()
                .filter(|c| c.verb == "filter" && c.body["Pod"]["metadata"]["name"] == pod)
                .count()
        };
        assert_eq!((asked(&first, "r2"), asked(&second, "r2") >= 1), (0, true));
        // The new extender is not node-cache capable: it got whole nodes.
        let call = second
            .calls()
            .into_iter()
            .rfind(|c| c.verb == "filter")
            .unwrap();
        assert_eq!(
            call.body["Nodes"]["items"][0]["status"]["allocatable"]["cpu"],
            "4"
        );

        // An extender whose CA file does not exist cannot be set up: refused, and the
        // running extender keeps steering.
        write(policy(
            json!({"urlPrefix": "https://127.0.0.1:1/x", "filterVerb": "filter",
                "tlsConfig": {"caFile": "/nonexistent/ca.crt"}}),
        ))?;
        let refusal = format!(
            "policy reload failed, keeping the running policy: {}: its \
             extenders cannot be set up: extender \"https://127.0.0.1:1/x\": tlsConfig.caFile \
             \"/nonexistent/ca.crt\" cannot be read",
            path.display()
        );
        let line = eventually(
            "the bad policy refused",
            Duration::from_secs(30),
            || async {
                Ok(berth
                    .log()
                    .lines()
                    .find(|l| l.contains(&refusal))
                    .map(String::from))
            },
        )
        .await?;
        assert!(line.contains("ERROR"), "{line}");
        assert_eq!(
            placed("r3").await?.as_deref(),
            Some("e1"),
            "{}",
            berth.log()
        );
        assert_eq!((reloads(&berth), asked(&second, "r3")), (1, 1));
        // The metrics count it as a rejected reload.
        let (_, metrics) = berth.get("/metrics")?;
        assert!(
            metrics.contains(r#"berth_reloads_total{object="policy",result="rejected"} 1"#),
            "{metrics}"
        );
        berth.terminate()?;
        Ok(())
    })
    .await;
}

/// The secure port as kube-scheduler's, judged by kube-scheduler v1.36.3 itself on the same
/// cluster: both delegate to the API server with the chart's ServiceAccount (whose
/// system:auth-delegator binding is the chart's), and answer every request with the same
/// status. Upstream's delegated authentication lets a request without a token through as
/// system:anonymous (so a protected path is 403 unless RBAC grants it, and only an invalid
/// token is 401); the health paths are always allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secure_port_authenticates_and_authorizes_as_kube_scheduler_does() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .apply_yaml(&format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: nobody, namespace: {NAMESPACE}}}\n\
                 ---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: scraper, namespace: {NAMESPACE}}}\n\
                 ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n\
                 metadata: {{name: test-metrics-reader}}\n\
                 rules: [{{nonResourceURLs: [/metrics], verbs: [get]}}]\n\
                 ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
                 metadata: {{name: test-metrics-reader}}\n\
                 roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-metrics-reader}}\n\
                 subjects: [{{kind: ServiceAccount, name: scraper, namespace: {NAMESPACE}}}]\n"
            ))
            .await?;
        let nobody = env.cluster.service_account_token(NAMESPACE, "nobody").await?;
        let scraper = env.cluster.service_account_token(NAMESPACE, "scraper").await?;
        let dir = tempfile::tempdir()?;
        let berth_port = free_port()?;
        let mut berth = env.berth(
            "secure",
            &[
                &format!("--secure-port={berth_port}"),
                "--bind-address=127.0.0.1",
                &format!("--cert-dir={}", dir.path().join("berth").display()),
            ],
        )?;
        berth.wait_ready().await?;
        let judge_port = free_port()?;
        let delegate = env.kubeconfig.display().to_string();
        let log = dir.path().join("kube-scheduler.log");
        let out = std::fs::File::create(&log)?;
        let binary = env.cluster.bin_dir().join("kube-scheduler");
        let judge = berth_testcluster::bounded_command(&binary, Duration::from_secs(240), None)
            .arg(format!("--kubeconfig={}", env.cluster.kubeconfig_path().display()))
            .arg(format!("--authentication-kubeconfig={delegate}"))
            .arg(format!("--authorization-kubeconfig={delegate}"))
            .arg(format!("--secure-port={judge_port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--leader-elect=false")
            .arg(format!("--cert-dir={}", dir.path().join("judge").display()))
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("starting kube-scheduler")?;
        let _judge = Process { child: judge, log };
        // Ready, not just listening: its /readyz answers 500 until its informers have synced.
        eventually("kube-scheduler ready", Duration::from_secs(60), || async {
            Ok((https_get(judge_port, None, "/readyz").await? == 200).then_some(()))
        })
        .await?;
        let cases: [(Option<&str>, &str, u16); 9] = [
            (None, "/healthz", 200),
            (None, "/readyz", 200),
            (None, "/livez", 200),
            (None, "/metrics", 403),
            (Some("not-a-token"), "/metrics", 401),
            (Some(&nobody), "/metrics", 403),
            (Some(&scraper), "/metrics", 200),
            (Some(&scraper), "/configz", 403),
            (Some(&nobody), "/healthz", 200),
        ];
        for (token, path, want) in cases {
            let who = token.map_or("no token", |t| if t == nobody { "nobody" } else if t == scraper { "scraper" } else { t });
            let judged = https_get(judge_port, token, path).await?;
            let got = https_get(berth_port, token, path).await?;
            ensure!(
                got == judged && got == want,
                "{who} GET {path}: berth {got}, kube-scheduler v1.36.3 {judged}, expected {want}\nberth log:\n{}",
                tail(&berth.log(), 30)
            );
        }
        // A second request inside the 10 s cache answers the same.
        let metrics = https_get(berth_port, Some(&scraper), "/metrics").await?;
        ensure!(metrics == 200, "scraper again: {metrics}");
        Ok(())
    })
    .await;
}

/// The Policy in a ConfigMap (v1.22's --policy-configmap, the chart's policyConfigMap): read
/// through the API with the chart's extra Role (get and watch on that ConfigMap alone),
/// followed, and reloaded by the file's rule: a changed Policy takes effect, a broken one or a
/// deleted ConfigMap leaves the last good one running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_in_a_configmap_is_read_followed_and_reloaded() {
    let _one = SERIAL.lock().await;
    let Some(helm) = helm() else {
        eprintln!("SKIPPED: helm is not available (BERTH_SKIP_HELM), so no chart Role to apply");
        return;
    };
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        let out = std::process::Command::new(helm)
            .args(["template", "berth", &format!("{DEPLOY}/helm/berth")])
            .args(["--namespace", NAMESPACE])
            .args(["--set", "policyConfigMap.name=scheduler-policy"])
            .args(["--show-only", "templates/rbac.yaml"])
            .output()?;
        ensure!(
            out.status.success(),
            "helm: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        env.cluster
            .apply_yaml(&String::from_utf8(out.stdout)?)
            .await?;
        env.cluster
            .create_nodes(4, &node_template("node", "4", "8Gi", 110))
            .await?;
        let policy = std::fs::read_to_string(POLICY)?;
        let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(env.admin.clone(), NAMESPACE);
        let map = |text: &str| {
            serde_json::from_value::<k8s_openapi::api::core::v1::ConfigMap>(json!({
                "metadata": {"name": "scheduler-policy", "namespace": NAMESPACE},
                "data": {"policy.cfg": text},
            }))
        };
        maps.create(&PostParams::default(), &map(&policy)?).await?;
        let mut berth = env.berth(
            "configmap",
            &[
                "--policy-configmap=scheduler-policy",
                &format!("--policy-configmap-namespace={NAMESPACE}"),
            ],
        )?;
        berth.wait_ready().await?;
        env.create_pods(vec![pod("first", "berth", "100m", json!({}))])
            .await?;
        env.wait_bound("first", 1, Duration::from_secs(30)).await?;
        let reloads = |berth: &Berth, what: &str| berth.log().matches(what).count();
        // A broken Policy: refused, the running one stays and keeps scheduling.
        maps.replace(
            "scheduler-policy",
            &PostParams::default(),
            &map("{\"predicates\": [")?,
        )
        .await?;
        eventually(
            "the broken Policy refused",
            Duration::from_secs(30),
            || async { Ok((reloads(&berth, "policy reload failed") >= 1).then_some(())) },
        )
        .await?;
        env.create_pods(vec![pod("second", "berth", "100m", json!({}))])
            .await?;
        env.wait_bound("second", 1, Duration::from_secs(30)).await?;
        // A changed Policy that loads: reloaded.
        let changed = policy.replace("\"weight\": 1", "\"weight\": 2");
        ensure!(
            changed != policy,
            "the bundled policy has a weight 1 priority"
        );
        maps.replace("scheduler-policy", &PostParams::default(), &map(&changed)?)
            .await?;
        eventually(
            "the changed Policy reloaded",
            Duration::from_secs(30),
            || async { Ok((reloads(&berth, "policy reloaded") >= 1).then_some(())) },
        )
        .await?;
        // Deleted: said, and the last good Policy keeps scheduling.
        maps.delete("scheduler-policy", &Default::default()).await?;
        eventually("the deletion reported", Duration::from_secs(30), || async {
            Ok((reloads(&berth, "was deleted") >= 1).then_some(()))
        })
        .await?;
        env.create_pods(vec![pod("third", "berth", "100m", json!({}))])
            .await?;
        env.wait_bound("third", 1, Duration::from_secs(30)).await?;
        ensure!(
            !berth.log().contains("forbidden"),
            "the chart's Role should be enough:\n{}",
            tail(&berth.log(), 30)
        );
        Ok(())
    })
    .await;
}

/// Nodes whose bound pods ask for more than they have, after `scheduler_names`' pods (half
/// each, interleaved, created at once) onto nodes with room for two of them each, once
/// binding has gone quiet.
async fn race_round(env: &Env, names: [&str; 2], nodes: usize) -> Result<(usize, usize)> {
    let pods: Vec<Pod> = (0..nodes * 3)
        .map(|i| pod(&format!("race-{i}"), names[i % 2], "1", json!({})))
        .collect();
    env.create_pods(pods).await?;
    let mut last = usize::MAX;
    let mut quiet_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let bound = Placement::read(env).await?.nodes.len();
        if bound != last {
            last = bound;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() > Duration::from_secs(5) && bound >= nodes * 2 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "binding did not settle: {bound} bound"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let placement = Placement::read(env).await?;
    let over = placement.overcommitted().len();
    Ok((over, placement.nodes.len()))
}

/// Two schedulers placing onto the same nodes race: each counts only its own assumed pods,
/// so both can take a node's last room (scheduler-plugins' install guide warns of it). Berth
/// serving both names from one process (profiles: one cache, one queue) cannot. Measured on
/// the real apiserver: kube-scheduler v1.36.3 (default-scheduler) beside Berth (berth), then
/// Berth alone serving both; `BERTH_RACE_ROUNDS` rounds of each (default 1; docs/performance.md
/// has a longer run). The two-scheduler count is reported, not asserted (a race may by chance
/// not happen); the one-process count must be 0 in every round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schedulers_race_for_room_and_two_profiles_of_one_berth_do_not() {
    let _one = SERIAL.lock().await;
    let rounds: usize = std::env::var("BERTH_RACE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    const NODES: usize = 30;
    bounded(Duration::from_secs(240 + 200 * rounds as u64), async {
        let mut raced = Vec::new();
        let mut profiled = Vec::new();
        for round in 0..rounds {
            // Two schedulers.
            let env = Env::start(ClusterOptions::default()).await?;
            env.cluster
                .create_nodes(NODES, &node_template("node", "2", "16Gi", 110))
                .await?;
            let mut berth = env.berth(&format!("race-{round}"), &["--leader-elect=false"])?;
            berth.wait_ready().await?;
            let dir = tempfile::tempdir()?;
            let port = free_port()?;
            let log = dir.path().join("kube-scheduler.log");
            let out = std::fs::File::create(&log)?;
            let binary = env.cluster.bin_dir().join("kube-scheduler");
            let child = berth_testcluster::bounded_command(&binary, Duration::from_secs(300), None)
                .arg(format!("--kubeconfig={}", env.cluster.kubeconfig_path().display()))
                .arg(format!("--secure-port={port}"))
                .arg("--bind-address=127.0.0.1")
                .arg("--leader-elect=false")
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()
                .context("starting kube-scheduler")?;
            let _kube_scheduler = Process { child, log };
            eventually("kube-scheduler ready", Duration::from_secs(60), || async {
                Ok((https_get(port, None, "/readyz").await? == 200).then_some(()))
            })
            .await?;
            raced.push(race_round(&env, ["default-scheduler", "berth"], NODES).await?);
            drop(berth);
            // One Berth, both names.
            let env = Env::start(ClusterOptions::default()).await?;
            env.cluster
                .create_nodes(NODES, &node_template("node", "2", "16Gi", 110))
                .await?;
            let mut berth = env.berth(
                &format!("profiles-{round}"),
                &["--leader-elect=false", &format!("--profile=default-scheduler={POLICY}")],
            )?;
            berth.wait_ready().await?;
            let (over, bound) = race_round(&env, ["default-scheduler", "berth"], NODES).await?;
            ensure!(
                over == 0 && bound == NODES * 2,
                "one Berth serving both names: {over} nodes overcommitted, {bound} bound\n{}",
                tail(&berth.log(), 30)
            );
            profiled.push((over, bound));
        }
        println!(
            "race on {NODES} nodes x 2 cpu, {} pods of 1 cpu: kube-scheduler v1.36.3 + Berth: \
             overcommitted nodes (pods bound) {raced:?}; one Berth serving both names: {profiled:?}",
            NODES * 3
        );
        Ok(())
    })
    .await;
}

/// kube-scheduler v1.22's real command lines run Berth on the real API server as they are:
/// kubeadm v1.22's manifest (deploy/legacy) with its paths pointed at the test cluster and
/// the Policy added as kubeadm's extraArgs would, and OpenShift 3.11's master-config.yaml with
/// its Policy and loopback kubeconfig pointed likewise. Each schedules default-scheduler's
/// pods (v1.22 ran a Policy under that name) and answers the manifest's HTTPS probe. The
/// secure port is moved to a free one (the last flag wins, as in v1.22), so the test cannot
/// collide with anything on 10259.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadm_and_openshift_command_lines_run_as_they_are() {
    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(300), async {
        let env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .create_nodes(3, &node_template("node", "4", "8Gi", 110))
            .await?;
        // kubeadm's scheduler.conf is system:kube-scheduler's, whose rights include the Lease
        // in kube-system that v1.22's leader election takes; the admin's stands in for it.
        let admin = env.cluster.kubeconfig_path().display().to_string();
        let kubeconfig = env.kubeconfig.display().to_string();
        let manifest: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(
            format!("{DEPLOY}/legacy/kubeadm-v1.22-kube-scheduler.yaml"),
        )?)?;
        let kubeadm: Vec<String> = manifest["spec"]["containers"][0]["command"]
            .as_sequence()
            .context("command")?
            .iter()
            .skip(1)
            .filter_map(|a| a.as_str())
            .map(|a| a.replace("/etc/kubernetes/scheduler.conf", &admin))
            .chain([format!("--policy-config-file={POLICY}")])
            .collect();
        let dir = tempfile::tempdir()?;
        let master =
            std::fs::read_to_string(format!("{DEPLOY}/legacy/openshift-3.11-master-config.yaml"))?
                .replace("/etc/origin/master/scheduler.json", POLICY)
                .replace("openshift-master.kubeconfig", &kubeconfig);
        let master_config = dir.path().join("master-config.yaml");
        std::fs::write(&master_config, master)?;
        let openshift = vec![
            format!("--master-config={}", master_config.display()),
            "--leader-elect=false".to_string(),
        ];
        for (name, args) in [("kubeadm", kubeadm), ("openshift", openshift)] {
            let port = free_port()?;
            let log = dir.path().join(format!("{name}.log"));
            let out = std::fs::File::create(&log)?;
            let child = berth_testcluster::bounded_command(
                Path::new(env!("CARGO_BIN_EXE_berth")),
                Duration::from_secs(120),
                None,
            )
            .arg("run")
            .args(&args)
            .arg(format!("--secure-port={port}"))
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
            let process = Process { child, log };
            eventually(
                &format!("{name}: HTTPS /healthz"),
                Duration::from_secs(60),
                || async { Ok((https_get(port, None, "/healthz").await? == 200).then_some(())) },
            )
            .await
            .with_context(|| tail(&process.log(), 30))?;
            let pod_name = format!("{name}-pod");
            env.create_pods(vec![pod(&pod_name, "default-scheduler", "100m", json!({}))])
                .await?;
            env.wait_bound(&pod_name, 1, Duration::from_secs(60))
                .await
                .with_context(|| tail(&process.log(), 30))?;
            ensure!(
                https_get(port, None, "/metrics").await? == 403,
                "{name}: /metrics must need a token"
            );
        }
        Ok(())
    })
    .await;
}

/// The binding and the `Scheduled` event in protobuf (berth-daemon's `protobuf` module, the
/// binding ceiling's `ceiling-pb` requests) round-trip through the real apiserver: the pod
/// lands, the event reads back in upstream's words, the apiserver's protobuf answer to a
/// second binding decodes as the conflict it is, and the clients never turned to JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bindings_and_events_round_trip_through_the_apiserver() {
    use berth_daemon::binder::{BindError, OneOffEvents, bind, record_scheduled};
    use berth_daemon::client::{ClientSettings, connect};
    use berth_daemon::protobuf::CreateClient;
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::Reporter;

    let _one = SERIAL.lock().await;
    bounded(Duration::from_secs(120), async {
        let env = Env::start(ClusterOptions::default()).await?;
        env.cluster
            .create_nodes(2, &node_template("node", "4", "8Gi", 110))
            .await?;
        env.create_pods(vec![pod("pb", "nobody", "100m", json!({}))])
            .await?;
        let uid = env.pods().get("pb").await?.metadata.uid.context("a UID")?;
        let settings = ClientSettings {
            kubeconfig: Some(env.kubeconfig.clone()),
            ..ClientSettings::default()
        };
        let bindings = CreateClient::new(connect(&settings).await?);
        let events = CreateClient::new(connect(&settings).await?);
        bind(&bindings, "default", "pb", &uid, "node-1").await?;
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("pb".into()),
            uid: Some(uid.clone()),
            ..ObjectReference::default()
        };
        let reporter = Reporter {
            controller: "berth".into(),
            instance: Some("e2e".into()),
        };
        record_scheduled(
            &OneOffEvents::new(events.clone(), reporter),
            &reference,
            "node-1",
        )
        .await?;
        let bound = env.pods().get("pb").await?;
        assert_eq!(node_name(&bound), Some("node-1"));
        let scheduled = env.events("Scheduled").await?;
        let event = &scheduled["pb"][0];
        assert_eq!(
            event.note.as_deref(),
            Some("Successfully assigned default/pb to node-1")
        );
        assert_eq!(
            event.regarding.as_ref().and_then(|r| r.uid.as_deref()),
            Some(uid.as_str())
        );
        assert_eq!(event.reporting_controller.as_deref(), Some("berth"));
        let again = bind(&bindings, "default", "pb", &uid, "node-2").await;
        assert!(
            matches!(&again, Err(BindError::Conflict(m)) if m.contains("already assigned")),
            "{again:?}"
        );
        assert!(!bindings.sends_json() && !events.sends_json());
        Ok(())
    })
    .await;
}
