//! The harness against the real control plane: RBAC through a ServiceAccount token, nodes
//! and pods, an apiserver restart, kwok running pods, and teardown leaving nothing behind.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use berth_testcluster::{ClusterOptions, TestCluster, node_template, wait_for, wait_until};
use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod, PodSpec, Secret};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::wait::conditions::is_pod_running;
use kube::{Client, Config};

/// A namespace, a ServiceAccount that may list pods there and read nodes, and nothing else.
const LIMITED_RBAC: &str = "
apiVersion: v1
kind: ServiceAccount
metadata:
  name: reader
  namespace: team
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: node-reader
rules:
- apiGroups: ['']
  resources: [nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: reader-nodes
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
  namespace: team
rules:
- apiGroups: ['']
  resources: [pods]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader-pods
  namespace: team
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: team}
---
# Last in the text, applied first: the objects above live in it.
apiVersion: v1
kind: Namespace
metadata:
  name: team
";

fn pod(name: &str, node: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_owned),
            containers: vec![Container {
                name: "main".to_owned(),
                image: Some("registry.invalid/pause".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[tokio::test]
async fn limited_service_account_nodes_pods_and_apiserver_restart() {
    let mut cluster = TestCluster::start(ClusterOptions::default()).await.unwrap();
    let admin = cluster.admin_client().unwrap();

    let applied = cluster.apply_yaml(LIMITED_RBAC).await.unwrap();
    assert_eq!(applied.len(), 6);
    // Applying again is a no-op, as for `kubectl apply`.
    cluster.apply_yaml(LIMITED_RBAC).await.unwrap();
    Api::<Namespace>::all(admin.clone())
        .get("team")
        .await
        .unwrap();

    let nodes = cluster
        .create_nodes(3, &node_template("worker", "4", "8Gi", 110))
        .await
        .unwrap();
    assert_eq!(nodes[2].metadata.name.as_deref(), Some("worker-2"));
    let labels = nodes[0].metadata.labels.as_ref().unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], "worker-0");
    let allocatable = nodes[0]
        .status
        .as_ref()
        .unwrap()
        .allocatable
        .as_ref()
        .unwrap();
    assert_eq!(allocatable["cpu"].0, "4");

    let admin_pods: Api<Pod> = Api::namespaced(admin.clone(), "team");
    admin_pods
        .create(&PostParams::default(), &pod("web", None))
        .await
        .unwrap();

    let token = cluster
        .service_account_token("team", "reader")
        .await
        .unwrap();
    let reader = cluster.client_for_token(&token).unwrap();
    let reader_pods: Api<Pod> = Api::namespaced(reader.clone(), "team");
    let names: Vec<String> = reader_pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(names, ["web"]);
    let reader_nodes: Api<Node> = Api::all(reader.clone());
    assert_eq!(
        reader_nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    // Not granted: secrets anywhere, pods in another namespace, creating nodes.
    let denied = Api::<Secret>::namespaced(reader.clone(), "team")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_code(&denied), Some(403), "{denied}");
    let denied = Api::<Pod>::namespaced(reader.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_code(&denied), Some(403), "{denied}");
    let denied = reader_nodes
        .create(
            &PostParams::default(),
            &node_template("rogue", "1", "1Gi", 10),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&denied), Some(403), "{denied}");

    // A scheduler process gets the same identity from a kubeconfig file.
    let kubeconfig = cluster.kubeconfig_for_token(&token).unwrap();
    let from_file = client_from_kubeconfig(kubeconfig).await;
    let denied = Api::<Secret>::namespaced(from_file.clone(), "team")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_code(&denied), Some(403), "{denied}");
    Api::<Pod>::namespaced(from_file, "team")
        .get("web")
        .await
        .unwrap();

    // The same clients keep working once the apiserver is back, with the data kept in etcd.
    let port = cluster.server_url();
    cluster.stop_apiserver();
    assert!(reader_pods.list(&ListParams::default()).await.is_err());
    cluster.start_apiserver().await.unwrap();
    assert_eq!(cluster.server_url(), port);
    wait_until(
        "the reader to list pods again",
        Duration::from_secs(30),
        || {
            let pods = reader_pods.clone();
            async move { Ok(pods.list(&ListParams::default()).await?.items.len() == 1) }
        },
    )
    .await
    .unwrap();
    cluster.restart_apiserver().await.unwrap();
    wait_until(
        "the admin to list pods again",
        Duration::from_secs(30),
        || {
            let pods = admin_pods.clone();
            async move { Ok(!pods.list(&ListParams::default()).await?.items.is_empty()) }
        },
    )
    .await
    .unwrap();
    admin_pods
        .create(&PostParams::default(), &pod("after-restart", None))
        .await
        .unwrap();
    assert_eq!(
        reader_pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

async fn client_from_kubeconfig(path: PathBuf) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

#[tokio::test]
async fn kwok_makes_nodes_ready_and_runs_bound_pods() {
    let cluster = TestCluster::start(ClusterOptions::default().with_kwok())
        .await
        .unwrap();
    let client = cluster.admin_client().unwrap();
    // kwok must report Ready itself: start from a node without conditions.
    let mut template = node_template("kwok", "8", "16Gi", 110);
    template.status.as_mut().unwrap().conditions = None;
    cluster.create_nodes(2, &template).await.unwrap();

    let nodes: Api<Node> = Api::all(client.clone());
    wait_for(
        &nodes,
        "kwok-1",
        Duration::from_secs(60),
        |node: Option<&Node>| {
            let conditions = node.and_then(|n| n.status.as_ref()?.conditions.as_ref());
            conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        },
    )
    .await
    .unwrap();

    let pods: Api<Pod> = Api::namespaced(client, "default");
    pods.create(&PostParams::default(), &pod("bound", Some("kwok-0")))
        .await
        .unwrap();
    wait_for(&pods, "bound", Duration::from_secs(60), is_pod_running())
        .await
        .unwrap();
}

/// What a test needs to check that a cluster is gone.
struct Footprint {
    pids: Vec<u32>,
    ports: Vec<u16>,
    dir: PathBuf,
}

impl Footprint {
    fn of(cluster: &TestCluster) -> Self {
        Self {
            pids: cluster.pids(),
            ports: cluster.ports(),
            dir: cluster.dir().to_owned(),
        }
    }

    /// Live (not zombie) processes in the servers' process groups: the servers and their
    /// watchdogs.
    fn live_processes(&self) -> Vec<String> {
        let mut live = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid pgrp ...; comm may hold spaces, so split after the ')'.
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let pgrp: u32 = fields[2].parse().unwrap();
            if fields[0] != "Z" && self.pids.contains(&pgrp) {
                live.push(head.to_owned() + ")");
            }
        }
        live
    }

    /// Whether the servers and watchdogs are gone and every port can be bound again.
    fn is_gone(&self) -> bool {
        let ports_free = self
            .ports
            .iter()
            .all(|&port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok());
        ports_free && self.live_processes().is_empty()
    }

    /// Waits a little for killed processes to finish exiting, then checks all is gone.
    fn assert_gone_within(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.is_gone() {
            assert!(
                Instant::now() < deadline,
                "left behind: processes {:?}, ports {:?}",
                self.live_processes(),
                self.ports
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[tokio::test]
async fn drop_and_panic_tear_everything_down() {
    let cluster = TestCluster::start(ClusterOptions::default().with_kwok())
        .await
        .unwrap();
    let footprint = Footprint::of(&cluster);
    assert_eq!(footprint.pids.len(), 3);
    // 3 servers, 3 watchdogs, and any `sleep` a watchdog is in.
    assert!(footprint.live_processes().len() >= 6);
    drop(cluster);
    footprint.assert_gone_within(Duration::from_secs(5));
    assert!(!footprint.dir.exists());

    // A test that panics while holding a cluster tears it down while unwinding.
    let (sender, receiver) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cluster = runtime
            .block_on(TestCluster::start(ClusterOptions::default()))
            .unwrap();
        sender.send(Footprint::of(&cluster)).unwrap();
        panic!("deliberate panic with a cluster alive");
    });
    assert!(thread.join().is_err());
    let footprint = receiver.recv().unwrap();
    footprint.assert_gone_within(Duration::from_secs(5));
    assert!(!footprint.dir.exists());
}

#[tokio::test]
async fn watchdog_kills_servers_after_their_lifetime() {
    let lifetime = Duration::from_secs(20);
    let cluster = TestCluster::start(ClusterOptions::default().max_lifetime(lifetime))
        .await
        .unwrap();
    let footprint = Footprint::of(&cluster);
    // Leak the cluster as a hung test would: only the watchdogs can end the servers now.
    std::mem::forget(cluster);
    std::thread::sleep(lifetime / 2);
    assert!(!footprint.is_gone());
    footprint.assert_gone_within(lifetime);
    std::fs::remove_dir_all(&footprint.dir).unwrap();
}

/// Set in the environment of a copy of this test binary that starts a cluster and hangs.
const ORPHAN_PROBE_ENV: &str = "BERTH_TESTCLUSTER_ORPHAN_PROBE";

/// In the copy started by `killed_test_process_leaves_nothing_behind`: prints the cluster's
/// footprint, then hangs until killed. Elsewhere it does nothing.
#[tokio::test]
async fn orphan_probe() {
    if std::env::var_os(ORPHAN_PROBE_ENV).is_none() {
        return;
    }
    let cluster = TestCluster::start(ClusterOptions::default().with_kwok())
        .await
        .unwrap();
    let footprint = Footprint::of(&cluster);
    println!(
        "FOOTPRINT {:?} {:?} {}",
        footprint.pids,
        footprint.ports,
        footprint.dir.display()
    );
    tokio::time::sleep(Duration::from_secs(120)).await;
}

#[tokio::test]
async fn killed_test_process_leaves_nothing_behind() {
    let mut probe = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "orphan_probe", "--nocapture", "--test-threads=1"])
        .env(ORPHAN_PROBE_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(probe.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find_map(|l| Some(l[l.find("FOOTPRINT ")?..].to_owned()))
        .expect("the probe printed no footprint");
    // SIGKILL: no destructor, no unwinding; only the watchdogs can notice.
    probe.kill().unwrap();
    probe.wait().unwrap();
    let footprint = parse_footprint(&line);
    footprint.assert_gone_within(Duration::from_secs(5));
    assert!(!footprint.dir.exists());
}

/// Reads back the probe's `FOOTPRINT [pids] [ports] dir` line.
fn parse_footprint(line: &str) -> Footprint {
    let numbers = |list: &str| -> Vec<String> {
        list.trim_matches(['[', ']'])
            .split(", ")
            .map(str::to_owned)
            .collect()
    };
    let mut parts = line.trim_start_matches("FOOTPRINT ").splitn(3, "] ");
    let pids = numbers(parts.next().unwrap());
    let ports = numbers(parts.next().unwrap());
    Footprint {
        pids: pids.iter().map(|p| p.parse().unwrap()).collect(),
        ports: ports.iter().map(|p| p.parse().unwrap()).collect(),
        dir: PathBuf::from(parts.next().unwrap()),
    }
}

#[tokio::test]
async fn applies_manifest_directories_without_kustomization() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        "resources: [b.yaml, a.yml]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\n\
         data: {mode: strict}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.yml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "not a manifest\n").unwrap();
    let cluster = TestCluster::start(ClusterOptions::default()).await.unwrap();
    let applied = cluster.apply_files(&[dir.path()]).await.unwrap();
    let kinds: Vec<&str> = applied
        .iter()
        .map(|o| o.types.as_ref().unwrap().kind.as_str())
        .collect();
    assert_eq!(kinds, ["Namespace", "ConfigMap"]);
    let data: Option<BTreeMap<String, String>> =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
            cluster.admin_client().unwrap(),
            "apps",
        )
        .get("settings")
        .await
        .unwrap()
        .data;
    assert_eq!(data.unwrap()["mode"], "strict");
}
