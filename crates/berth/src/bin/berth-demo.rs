//! `scripts/demo.sh`: Berth on a throwaway cluster, with no Docker and no kubelet.
//!
//! Starts the control plane the end-to-end tests use (etcd, kube-apiserver and kwok's fake
//! nodes, on 127.0.0.1, from berth-testcluster), six nodes in three zones, `berth run` with
//! the bundled policy as deploy/'s ServiceAccount, then a few Deployments with
//! `schedulerName: berth`; prints where each pod went and the Events saying why, the
//! metrics endpoint and a kubeconfig for kubectl; then stops everything, or with `--stay`
//! waits for Ctrl-C first. No controller-manager runs, so the demo creates each
//! Deployment's ReplicaSet and pods as the controllers would.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use berth_testcluster::{ClusterOptions, TestCluster, bounded_command, node_template};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const NAMESPACE: &str = "demo";
/// How long the demo's servers may live without `--stay` (every one is bounded).
const LIFETIME: Duration = Duration::from_secs(10 * 60);
/// With `--stay`: until Ctrl-C, at most this long.
const STAY_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// How long the pods may take to be decided.
const DECIDE_TIMEOUT: Duration = Duration::from_secs(120);

/// The demo's nodes: name, zone, cpu, memory, and a taint.
const NODES: [(&str, &str, &str, &str, Option<&str>); 6] = [
    ("app-a1", "zone-a", "4", "16Gi", None),
    ("app-a2", "zone-a", "4", "16Gi", None),
    ("app-b1", "zone-b", "4", "16Gi", None),
    ("app-b2", "zone-b", "2", "8Gi", None),
    ("app-c1", "zone-c", "4", "16Gi", None),
    ("infra-c1", "zone-c", "8", "32Gi", Some("infra")),
];

/// The demo's Deployments: name, replicas, cpu request, and whether its replicas must
/// avoid each other's nodes (required pod anti-affinity on the hostname).
const DEPLOYMENTS: [(&str, u32, &str, bool); 3] = [
    ("web", 4, "500m", false),
    ("api", 3, "1", true),
    ("batch", 1, "6", false),
];

struct Args {
    berth: PathBuf,
    stay: bool,
}

fn args() -> Result<Args> {
    let mut berth = None;
    let mut stay = false;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--berth" => berth = it.next().map(PathBuf::from),
            "--stay" => stay = true,
            "-h" | "--help" => {
                println!(
                    "usage: berth-demo --berth PATH [--stay]\n  \
                     --stay  keep the cluster and Berth up until Ctrl-C"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (usage: berth-demo --berth PATH [--stay])"),
        }
    }
    Ok(Args {
        berth: berth.context("--berth PATH: the berth binary to run")?,
        stay,
    })
}

fn main() -> Result<()> {
    let args = args()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(demo(args))
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// A plain HTTP GET on 127.0.0.1 (Berth's metrics endpoint): status and body.
fn get(port: u16, path: &str) -> Result<(u16, String)> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no HTTP status")?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

/// The demo's node `i`, labelled with its zone (and the `zone` and `region` labels the
/// bundled OpenShift policy spreads and groups a Service's pods by).
fn node(i: usize) -> Node {
    let (name, zone, cpu, memory, taint) = NODES[i];
    let mut node = node_template(name, cpu, memory, 110);
    let labels = node.metadata.labels.get_or_insert_default();
    labels.insert("topology.kubernetes.io/zone".into(), zone.into());
    labels.insert("zone".into(), zone.into());
    labels.insert("region".into(), "demo".into());
    if let Some(value) = taint {
        node.spec.get_or_insert_default().taints = Some(vec![Taint {
            key: "dedicated".into(),
            value: Some(value.into()),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }]);
    }
    node
}

/// `n` characters of the alphabet upstream's generated names use, derived from `seed`.
fn suffix(seed: &str, n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: usize = seed
        .bytes()
        .fold(7, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    (0..n)
        .map(|_| {
            h = h.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ALPHABET[(h >> 16) % ALPHABET.len()] as char
        })
        .collect()
}

/// A Deployment, its ReplicaSet and its pods, as the controllers would create them (the
/// pods' owner reference needs the ReplicaSet's UID, so the pods come second).
fn workload_yaml(name: &str, replicas: u32, cpu: &str, anti_affinity: bool) -> (String, String) {
    let hash = suffix(name, 5);
    let template = serde_json::json!({
        "metadata": {"labels": {"app": name, "pod-template-hash": hash}},
        "spec": {
            "schedulerName": "berth",
            "containers": [{"name": name, "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}],
            "affinity": if anti_affinity {
                serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": name}},
                     "topologyKey": "kubernetes.io/hostname"}]}})
            } else {
                serde_json::json!(null)
            },
        }
    });
    let objects = serde_json::json!([
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": name, "namespace": NAMESPACE},
         "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "namespace": NAMESPACE},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]}}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": format!("{name}-{hash}"), "namespace": NAMESPACE,
                      "labels": {"app": name, "pod-template-hash": hash}},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name, "pod-template-hash": hash}},
                  "template": template}},
    ]);
    let docs = objects
        .as_array()
        .expect("a list")
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join("\n---\n");
    (docs, template.to_string())
}

fn pods_yaml(replicas: u32, template: &str, rs: &str, rs_uid: &str) -> Result<String> {
    let template: serde_json::Value = serde_json::from_str(template)?;
    let mut docs = Vec::new();
    for i in 0..replicas {
        let suffix = suffix(&format!("{rs}/{i}"), 5);
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{rs}-{suffix}"), "namespace": NAMESPACE,
                         "labels": template["metadata"]["labels"],
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "name": rs, "uid": rs_uid, "controller": true}]},
            "spec": template["spec"],
        });
        if pod["spec"]["affinity"].is_null() {
            pod["spec"]
                .as_object_mut()
                .expect("spec")
                .remove("affinity");
        }
        docs.push(pod.to_string());
    }
    Ok(docs.join("\n---\n"))
}

async fn demo(args: Args) -> Result<()> {
    let lifetime = if args.stay { STAY_LIFETIME } else { LIFETIME };
    println!("== starting etcd, kube-apiserver and kwok on 127.0.0.1");
    let cluster =
        TestCluster::start(ClusterOptions::default().with_kwok().max_lifetime(lifetime)).await?;
    let deploy = Path::new(REPO).join("deploy");
    cluster
        .apply_files(&[
            deploy.join("namespace.yaml"),
            deploy.join("serviceaccount.yaml"),
            deploy.join("rbac.yaml"),
        ])
        .await?;
    cluster.create_nodes_with(NODES.len(), node).await?;
    println!(
        "   nodes (kwok): {}",
        NODES.map(|n| format!("{} ({})", n.0, n.1)).join(", ")
    );
    println!("   infra-c1 is tainted dedicated=infra:NoSchedule; app-b2 is half the size");

    let token = cluster
        .service_account_token("berth-system", "berth")
        .await?;
    let berth_kubeconfig = cluster.kubeconfig_for_token(&token)?;
    let metrics = free_port()?;
    let log_path = cluster.dir().join("berth.log");
    let log = std::fs::File::create(&log_path)?;
    let policy = Path::new(REPO).join("policies/openshift.json");
    println!("== berth run --policy policies/openshift.json (as deploy/'s ServiceAccount)");
    let mut berth = bounded_command(&args.berth, lifetime, None)
        .arg("run")
        .arg("--policy")
        .arg(&policy)
        .arg("--kubeconfig")
        .arg(&berth_kubeconfig)
        .args(["--scheduler-name", "berth", "--leader-elect=false"])
        // Plain HTTP on loopback, for curl; no HTTPS port, so demos and their tests never
        // contend for 10259.
        .arg("--metrics-addr")
        .arg(format!("127.0.0.1:{metrics}"))
        .arg("--secure-port=0")
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting berth run")?;
    let result = scheduled(&cluster, metrics, &mut berth, &log_path).await;
    match &result {
        Ok(()) if args.stay => {
            println!(
                "\n== up until Ctrl-C (at most {} h); Berth's log: {}",
                STAY_LIFETIME.as_secs() / 3600,
                log_path.display()
            );
            tokio::signal::ctrl_c().await?;
        }
        Ok(()) => {}
        Err(_) => {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            eprintln!("berth run's log (last lines):");
            for line in tail.into_iter().rev() {
                eprintln!("  {line}");
            }
        }
    }
    println!(
        "== cleaning up: stopping berth run (pid {}) and the cluster",
        berth.id()
    );
    // The process is the watchdog shell, in its own process group with berth: end both.
    let group = rustix::process::Pid::from_raw(berth.id() as i32).context("pid")?;
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
    let _ = berth.wait();
    drop(cluster);
    result
}

async fn scheduled(
    cluster: &TestCluster,
    metrics: u16,
    berth: &mut std::process::Child,
    log: &Path,
) -> Result<()> {
    let started = Instant::now();
    while get(metrics, "/readyz").map(|(s, _)| s).ok() != Some(200) {
        if let Some(status) = berth.try_wait()? {
            bail!("berth run exited ({status}); its log is {}", log.display());
        }
        if started.elapsed() > Duration::from_secs(60) {
            bail!(
                "berth run was not ready within 60 s; its log is {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("   ready in {:.1} s", started.elapsed().as_secs_f64());

    println!(
        "== applying Deployments web (4 x 500m cpu), api (3 x 1 cpu, one per node) and batch (1 x 6 cpu)"
    );
    println!(
        "   (no controller-manager runs: the demo creates each ReplicaSet and its pods as it would)"
    );
    cluster
        .apply_yaml(&format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {{\"name\": \"{NAMESPACE}\"}}}}"
        ))
        .await?;
    let mut wanted = 0;
    for (name, replicas, cpu, anti) in DEPLOYMENTS {
        let (objects, template) = workload_yaml(name, replicas, cpu, anti);
        let stored = cluster.apply_yaml(&objects).await?;
        let rs = stored
            .iter()
            .find(|o| o.types.as_ref().is_some_and(|t| t.kind == "ReplicaSet"))
            .context("the ReplicaSet as stored")?;
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        cluster
            .apply_yaml(&pods_yaml(replicas, &template, &rs_name, &uid)?)
            .await?;
        wanted += replicas as usize;
    }

    let client = cluster.admin_client()?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let events: Api<Event> = Api::namespaced(client, NAMESPACE);
    let deadline = Instant::now() + DECIDE_TIMEOUT;
    let (pod_list, event_list) = loop {
        let pod_list = pods.list(&ListParams::default()).await?.items;
        let event_list = events.list(&ListParams::default()).await?.items;
        let decided = pod_list
            .iter()
            .filter(|p| {
                let name = p.metadata.name.as_deref();
                p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                    || event_list.iter().any(|e| {
                        e.reason.as_deref() == Some("FailedScheduling")
                            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == name
                    })
            })
            .count();
        if pod_list.len() == wanted && decided == wanted {
            break (pod_list, event_list);
        }
        if Instant::now() > deadline {
            bail!("{decided} of {wanted} pods decided after {DECIDE_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };

    println!("\n== where each pod went, and why (its Events, from berth)");
    let zone_of = |node: &str| NODES.iter().find(|n| n.0 == node).map_or("", |n| n.1);
    let mut sorted = pod_list;
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for pod in &sorted {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        match node {
            Some(node) => println!("{NAMESPACE}/{name} -> {node} ({})", zone_of(node)),
            None => println!("{NAMESPACE}/{name} -> <pending>"),
        }
        for event in event_list
            .iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        {
            println!(
                "    {} ({}): {}",
                event.reason.as_deref().unwrap_or_default(),
                event.reporting_controller.as_deref().unwrap_or_default(),
                event.note.as_deref().unwrap_or_default()
            );
        }
    }

    println!("\n== metrics: http://127.0.0.1:{metrics}/metrics (also /healthz, /readyz, /configz)");
    let (_, body) = get(metrics, "/metrics")?;
    for line in body.lines().filter(|l| {
        l.starts_with("scheduler_schedule_attempts_total")
            || l.starts_with("scheduler_pending_pods")
    }) {
        println!("   {line}");
    }
    println!("\n== kubectl");
    println!(
        "   export KUBECONFIG={}",
        cluster.kubeconfig_path().display()
    );
    println!("   kubectl get pods -n {NAMESPACE} -o wide");
    println!("   kubectl get events -n {NAMESPACE}");
    println!(
        "   Give your own pods spec.schedulerName: berth (nodes are kwok's: pods run, no containers start)."
    );
    Ok(())
}
