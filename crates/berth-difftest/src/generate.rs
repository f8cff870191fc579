//! Seeded random clusters and policies covering every predicate and priority that Berth
//! implements with kube-scheduler v1.22's meaning.
//!
//! Objects are plain JSON (what `kubectl apply` would take). A controller's UID is only known
//! once the apiserver has created it, so objects that must name one (owner references, the
//! node annotation `scheduler.alpha.kubernetes.io/preferAvoidPods`) carry the placeholder
//! [`uid_placeholder`], which the replay substitutes.
//!
//! Left out on purpose (see docs/fidelity.md): the predicates v1.22 no longer registers
//! (CheckNodeCondition, the node pressure checks, PodToleratesNodeNoExecuteTaints), Berth's
//! own predicates (CheckPodCIDRCapacity, MatchNamespaceNodeSelector), WASM plugins,
//! extenders, and pod priorities (every pod has the same, so v1.22 never preempts).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// Zones the generated nodes are spread over.
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
/// Pod "app" labels; `web`, `db` and `cache` are selected by Services and controllers.
const APPS: [&str; 4] = ["web", "db", "cache", "batch"];
/// Container images with their sizes (bytes), some present on nodes.
const IMAGES: [(&str, i64); 4] = [
    ("registry.local/web:1", 300_000_000),
    ("registry.local/db:2", 800_000_000),
    ("registry.local/cache:3", 50_000_000),
    ("registry.local/big:4", 2_000_000_000),
];
/// The CSI driver of the generated CSI volumes.
pub const CSI_DRIVER: &str = "csi.difftest.local";
/// The pod label v1.36 scenarios' `matchLabelKeys` and `mismatchLabelKeys` name.
pub const TRACK_LABEL: &str = "track";
/// Well-known topology labels.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const REGION_LABEL: &str = "topology.kubernetes.io/region";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// One generated case: a policy, the cluster it runs on, and the pods to place in order.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The seed that produced it.
    pub seed: u64,
    /// Whether it is a preemption scenario ([`crate::preemption::scenario`]).
    pub preemption: bool,
    /// The namespaces the scenario's namespaced objects live in (first: the main one).
    pub namespaces: [String; 2],
    /// The Policy file.
    pub policy: Value,
    /// Controllers (ReplicaSets, ReplicationControllers, StatefulSets), created first.
    pub controllers: Vec<Value>,
    /// Everything else that exists before the first pending pod: nodes, CSINodes,
    /// StorageClasses, PVs, PVCs, Services, RuntimeClasses, running pods.
    pub objects: Vec<Value>,
    /// The pods to schedule, one at a time, in this order.
    pub pending: Vec<Value>,
}

/// The placeholder standing for the UID of controller `kind/name` until it is created.
pub fn uid_placeholder(kind: &str, name: &str) -> String {
    format!("@uid:{kind}/{name}")
}

/// Generates the scenario of `seed`. Names are prefixed with `prefix` (cluster-scoped
/// objects) so scenarios can follow each other on one apiserver.
pub fn scenario(seed: u64, prefix: &str) -> Scenario {
    build(seed, prefix, false)
}

/// Generates the v1.36 scenario of `seed` ([`crate::v136`]): the v1.22-era cluster and pods
/// of [`scenario`] less inline in-tree volumes (v1.36 counts and checks them through CSI
/// migration, by design unlike v1.22), plus what v1.22 never knew: native sidecars (some
/// holding host ports), pod-level requests, running pods with a resize in progress or
/// pending (their status as the kubelet would write it), pending pods held by scheduling
/// gates, pending pods with resource claims (a DeviceClass exists for one claim, none for
/// the other; no node publishes ResourceSlices), topology spread `minDomains`,
/// `nodeAffinityPolicy`, `nodeTaintsPolicy` and `matchLabelKeys`, and pod (anti-)affinity
/// `matchLabelKeys` and `mismatchLabelKeys`. The policy is v1.22's default provider.
pub fn scenario_v136(seed: u64, prefix: &str) -> Scenario {
    build(seed, prefix, true)
}

fn build(seed: u64, prefix: &str, modern: bool) -> Scenario {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        prefix: prefix.to_owned(),
        ns: [prefix.to_owned(), format!("{prefix}-team")],
        modern,
    };
    let node_count = g.rng.random_range(3..=7usize);
    let nodes: Vec<String> = (0..node_count).map(|i| format!("{prefix}-n{i}")).collect();
    let controllers = g.controllers();
    let mut objects = Vec::new();
    objects.push(runtime_class(&g.prefix));
    for (i, name) in nodes.iter().enumerate() {
        objects.push(g.node(name, i));
        if g.chance(0.6) {
            objects.push(g.csi_node(name));
        }
    }
    objects.extend(g.storage(&nodes));
    objects.extend(g.services());
    if modern {
        objects.extend(g.device_claims());
        objects.extend(g.storage_v136(&nodes));
    }
    let running = g.rng.random_range(0..=6usize);
    for k in 0..running {
        let node = g.pick(&nodes).clone();
        let pod = g.pod(&format!("r{k}"), Some(&node), &nodes);
        objects.push(pod);
    }
    let pending_count = g.rng.random_range(4..=10usize);
    let pending = (0..pending_count)
        .map(|k| g.pod(&format!("p{k}"), None, &nodes))
        .collect();
    let policy = if modern {
        json!({"kind": "Policy", "apiVersion": "v1"})
    } else {
        g.policy()
    };
    Scenario {
        seed,
        preemption: false,
        namespaces: g.ns.clone(),
        policy,
        controllers,
        objects,
        pending,
    }
}

struct Gen {
    rng: ChaCha8Rng,
    prefix: String,
    ns: [String; 2],
    /// A v1.36 scenario ([`scenario_v136`]). The v1.22 scenarios draw exactly as before,
    /// so their seeds keep their clusters.
    modern: bool,
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.random_range(0..items.len())]
    }

    /// The namespace of a pod or Service: mostly the main one.
    fn namespace(&mut self) -> String {
        if self.chance(0.8) {
            self.ns[0].clone()
        } else {
            self.ns[1].clone()
        }
    }

    fn node(&mut self, name: &str, index: usize) -> Value {
        let mut labels = json!({HOSTNAME_LABEL: name, "kubernetes.io/os": "linux"});
        // A few nodes without zone labels exercise the "no zone" paths of spreading.
        if self.chance(0.85) {
            labels[ZONE_LABEL] = json!(ZONES[index % ZONES.len()]);
            labels[REGION_LABEL] = json!("region-1");
        }
        if self.chance(0.5) {
            labels["disk"] = json!(*self.pick(&["ssd", "hdd"]));
        }
        if self.chance(0.4) {
            labels["tier"] = json!(*self.pick(&["gold", "silver"]));
        }
        let mut allocatable = json!({
            "cpu": *self.pick(&["1", "2", "4", "8"]),
            "memory": *self.pick(&["1Gi", "2Gi", "4Gi", "8Gi"]),
            "pods": *self.pick(&["4", "10", "110", "110"]),
            "ephemeral-storage": *self.pick(&["1Gi", "20Gi"]),
        });
        if self.chance(0.3) {
            allocatable["example.com/gpu"] = json!(*self.pick(&["1", "2"]));
        }
        if self.chance(0.3) {
            allocatable["attachable-volumes-aws-ebs"] = json!(*self.pick(&["1", "2"]));
        }
        let mut taints = Vec::new();
        let mut conditions =
            vec![json!({"type": "Ready", "status": "True", "reason": "KubeletReady"})];
        if self.chance(0.15) {
            taints.push(json!({"key": "dedicated", "value": "infra", "effect": "NoSchedule"}));
        }
        if self.chance(0.25) {
            taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"}));
        }
        if self.chance(0.05) {
            taints.push(json!({"key": "maintenance", "effect": "NoExecute"}));
        }
        // Node pressure as v1.22 sees it: the condition plus the taint the node lifecycle
        // controller adds for it (TaintNodesByCondition).
        for (condition, taint) in [
            ("MemoryPressure", "node.kubernetes.io/memory-pressure"),
            ("DiskPressure", "node.kubernetes.io/disk-pressure"),
            ("PIDPressure", "node.kubernetes.io/pid-pressure"),
        ] {
            let on = self.chance(0.04);
            conditions
                .push(json!({"type": condition, "status": if on { "True" } else { "False" }}));
            if on {
                taints.push(json!({"key": taint, "effect": "NoSchedule"}));
            }
        }
        let images: Vec<Value> = IMAGES
            .iter()
            .filter(|_| self.chance(0.35))
            .map(|(image, size)| json!({"names": [image], "sizeBytes": size}))
            .collect();
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {
                "capacity": allocatable.clone(),
                "allocatable": allocatable,
                "conditions": conditions,
                "images": images,
            },
        });
        if !taints.is_empty() {
            node["spec"]["taints"] = json!(taints);
        }
        if self.chance(0.08) {
            node["spec"]["unschedulable"] = json!(true);
        }
        if self.chance(0.15) {
            let (kind, api, controller) = if self.chance(0.5) {
                ("ReplicaSet", "apps/v1", "web-rs")
            } else {
                ("ReplicationController", "v1", "db-rc")
            };
            let avoid = json!({"preferAvoidPods": [{"podSignature": {"podController": {
                "apiVersion": api, "kind": kind, "name": controller,
                "uid": uid_placeholder(kind, controller), "controller": true}}}]});
            node["metadata"]["annotations"] = json!({
                "scheduler.alpha.kubernetes.io/preferAvoidPods": avoid.to_string()
            });
        }
        node
    }

    fn csi_node(&mut self, name: &str) -> Value {
        let count = self.rng.random_range(1..=2);
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name,
                "allocatable": {"count": count}}]}})
    }

    fn controllers(&mut self) -> Vec<Value> {
        let ns = self.ns[0].clone();
        let template = |app: &str| {
            json!({"metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "image": "registry.local/x:1"}]}})
        };
        vec![
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-rs", "namespace": ns},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                    "template": template("web")}}),
            json!({"apiVersion": "v1", "kind": "ReplicationController",
                "metadata": {"name": "db-rc", "namespace": ns},
                "spec": {"replicas": 0, "selector": {"app": "db"}, "template": template("db")}}),
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "cache-ss", "namespace": ns},
                "spec": {"replicas": 0, "serviceName": "cache",
                    "selector": {"matchLabels": {"app": "cache"}}, "template": template("cache")}}),
        ]
    }

    fn services(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for app in ["web", "db", "cache"] {
            if self.chance(0.7) {
                let ns = self.namespace();
                out.push(json!({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": app, "namespace": ns},
                    // Headless: the test cluster's /24 service range would fill up over
                    // a long run, and scheduling reads only the selector.
                    "spec": {"selector": {"app": app}, "clusterIP": "None",
                        "ports": [{"port": 80}]}}));
            }
        }
        out
    }

    /// StorageClasses, PersistentVolumes and claims: bound claims (with zone labels on their
    /// volumes, and CSI volumes), and unbound delayed-binding claims with local volumes.
    fn storage(&mut self, nodes: &[String]) -> Vec<Value> {
        let p = self.prefix.clone();
        let ns = self.ns[0].clone();
        let mut out = vec![
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": format!("{p}-wffc")},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer"}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": format!("{p}-instant")},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "Immediate"}),
        ];
        // Bound claims: zonal volumes and CSI volumes.
        for k in 0..3 {
            let claim = format!("bound-{k}");
            let pv = format!("{p}-pv-bound-{k}");
            let mut volume = json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv},
                "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                    "storageClassName": format!("{p}-instant"),
                    "claimRef": {"namespace": ns, "name": claim}}});
            if k == 2 {
                volume["spec"]["csi"] = json!({"driver": CSI_DRIVER, "volumeHandle": pv});
            } else {
                volume["spec"]["hostPath"] = json!({"path": format!("/tmp/{pv}")});
                let zone = *self.pick(&ZONES);
                volume["metadata"]["labels"] = json!({ZONE_LABEL: zone});
                if self.chance(0.4) {
                    volume["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In",
                            "values": [zone]}]}]}});
                }
            }
            out.push(volume);
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns,
                    "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv,
                    "storageClassName": format!("{p}-instant"),
                    "resources": {"requests": {"storage": "5Gi"}}}}));
        }
        // More CSI claims so the per-driver limit can bind.
        for k in 0..2 {
            let claim = format!("csi-{k}");
            let pv = format!("{p}-pv-csi-{k}");
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "storageClassName": format!("{p}-instant"),
                    "csi": {"driver": CSI_DRIVER, "volumeHandle": pv},
                    "claimRef": {"namespace": ns, "name": claim}}}));
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns,
                    "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv,
                    "storageClassName": format!("{p}-instant"),
                    "resources": {"requests": {"storage": "1Gi"}}}}));
        }
        // Delayed-binding claims and the local volumes that may satisfy them.
        for k in 0..2 {
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": format!("delayed-{k}"), "namespace": ns},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "storageClassName": format!("{p}-wffc"),
                    "resources": {"requests": {"storage": *self.pick(&["1Gi", "8Gi"])}}}}));
        }
        for (i, node) in nodes.iter().enumerate() {
            if !self.chance(0.4) {
                continue;
            }
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": format!("{p}-pv-local-{i}")},
                "spec": {"capacity": {"storage": *self.pick(&["2Gi", "10Gi"])},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": format!("{p}-wffc"),
                    "local": {"path": format!("/mnt/{i}")},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}}}}));
        }
        out
    }

    fn resources(&mut self, big: bool) -> Value {
        let mut requests = serde_json::Map::new();
        if self.chance(0.75) {
            let cpu = if big {
                *self.pick(&["100m", "250m", "500m", "1", "2"])
            } else {
                *self.pick(&["50m", "100m", "250m"])
            };
            requests.insert("cpu".into(), json!(cpu));
        }
        if self.chance(0.7) {
            let memory = if big {
                *self.pick(&["64Mi", "256Mi", "512Mi", "1Gi", "2Gi"])
            } else {
                *self.pick(&["32Mi", "128Mi"])
            };
            requests.insert("memory".into(), json!(memory));
        }
        if big && self.chance(0.05) {
            requests.insert("example.com/gpu".into(), json!("1"));
        }
        if big && self.chance(0.1) {
            requests.insert("ephemeral-storage".into(), json!("2Gi"));
        }
        // Extended resources must have limits equal to requests.
        let limits: serde_json::Map<String, Value> = requests
            .iter()
            .filter(|(k, _)| k.contains('/'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        json!({"requests": requests, "limits": limits})
    }

    fn selector_term(&mut self) -> Value {
        let app = *self.pick(&APPS);
        if self.chance(0.7) {
            json!({"matchLabels": {"app": app}})
        } else {
            json!({"matchExpressions": [{"key": "app", "operator": "In",
                "values": [app, *self.pick(&APPS)]}]})
        }
    }

    fn topology_key(&mut self) -> &'static str {
        // Mostly per node, which both required terms and spreading use most.
        const KEYS: [&str; 4] = [HOSTNAME_LABEL, ZONE_LABEL, HOSTNAME_LABEL, "disk"];
        KEYS[self.rng.random_range(0..KEYS.len())]
    }

    fn affinity_term(&mut self) -> Value {
        let mut term = json!({"labelSelector": self.selector_term(),
            "topologyKey": self.topology_key()});
        if self.chance(0.2) {
            term["namespaces"] = json!([self.ns[0], self.ns[1]]);
        }
        term
    }

    fn node_selector_requirement(&mut self) -> Value {
        match self.rng.random_range(0..4) {
            0 => json!({"key": "disk", "operator": "In", "values": [*self.pick(&["ssd", "hdd"])]}),
            1 => json!({"key": "tier", "operator": "Exists"}),
            2 => json!({"key": ZONE_LABEL, "operator": "NotIn", "values": [*self.pick(&ZONES)]}),
            _ => json!({"key": "tier", "operator": "DoesNotExist"}),
        }
    }

    fn pod(&mut self, name: &str, node: Option<&String>, nodes: &[String]) -> Value {
        let ns = self.namespace();
        let app = *self.pick(&APPS);
        let image = self.pick(&IMAGES).0;
        let mut container = json!({"name": "main", "image": image,
            "resources": self.resources(true)});
        if self.chance(0.2) {
            let port = *self.pick(&[8080, 8081, 9090]);
            let mut p = json!({"containerPort": port, "hostPort": port,
                "protocol": *self.pick(&["TCP", "TCP", "UDP"])});
            if self.chance(0.3) {
                p["hostIP"] = json!("127.0.0.1");
            }
            container["ports"] = json!([p]);
        }
        let mut containers = vec![container];
        if self.chance(0.25) {
            containers.push(json!({"name": "side", "image": self.pick(&IMAGES).0,
                "resources": self.resources(false)}));
        }
        let mut spec = json!({"containers": containers, "terminationGracePeriodSeconds": 0});
        if self.chance(0.2) {
            spec["initContainers"] = json!([{"name": "init", "image": "registry.local/init:1",
                "resources": self.resources(true)}]);
        }
        if self.chance(0.1) {
            spec["runtimeClassName"] = json!(format!("{}-kata", self.prefix));
        }
        if let Some(node) = node {
            spec["nodeName"] = json!(node);
        }
        if node.is_none() && self.chance(0.2) {
            spec["nodeSelector"] = if self.chance(0.8) {
                json!({"disk": *self.pick(&["ssd", "hdd"])})
            } else {
                json!({HOSTNAME_LABEL: self.pick(nodes)})
            };
        }
        let mut affinity = serde_json::Map::new();
        let mut node_affinity = serde_json::Map::new();
        if node.is_none() && self.chance(0.2) {
            let terms: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| json!({"matchExpressions": [self.node_selector_requirement()]}))
                .collect();
            node_affinity.insert(
                "requiredDuringSchedulingIgnoredDuringExecution".into(),
                json!({"nodeSelectorTerms": terms}),
            );
        }
        if self.chance(0.3) {
            let prefs: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| {
                    json!({"weight": self.rng.random_range(1..=100),
                        "preference": {"matchExpressions": [self.node_selector_requirement()]}})
                })
                .collect();
            node_affinity.insert(
                "preferredDuringSchedulingIgnoredDuringExecution".into(),
                json!(prefs),
            );
        }
        if !node_affinity.is_empty() {
            affinity.insert("nodeAffinity".into(), Value::Object(node_affinity));
        }
        for kind in ["podAffinity", "podAntiAffinity"] {
            let mut terms = serde_json::Map::new();
            if self.chance(0.1) {
                terms.insert(
                    "requiredDuringSchedulingIgnoredDuringExecution".into(),
                    json!([self.affinity_term()]),
                );
            }
            if self.chance(0.25) {
                let prefs: Vec<Value> = (0..self.rng.random_range(1..=2))
                    .map(|_| {
                        json!({"weight": self.rng.random_range(1..=100),
                            "podAffinityTerm": self.affinity_term()})
                    })
                    .collect();
                terms.insert(
                    "preferredDuringSchedulingIgnoredDuringExecution".into(),
                    json!(prefs),
                );
            }
            if !terms.is_empty() {
                affinity.insert(kind.into(), Value::Object(terms));
            }
        }
        if !affinity.is_empty() {
            spec["affinity"] = Value::Object(affinity);
        }
        if self.chance(0.35) {
            let mut tolerations = Vec::new();
            if self.chance(0.6) {
                tolerations.push(json!({"key": "dedicated", "operator": "Equal",
                    "value": "infra", "effect": "NoSchedule"}));
            }
            if self.chance(0.5) {
                tolerations.push(json!({"key": "spot", "operator": "Exists"}));
            }
            if self.chance(0.3) {
                tolerations.push(json!({"key": "maintenance", "operator": "Exists",
                    "effect": "NoExecute"}));
            }
            if self.chance(0.2) {
                tolerations.push(json!({"key": "node.kubernetes.io/memory-pressure",
                    "operator": "Exists", "effect": "NoSchedule"}));
            }
            if self.chance(0.1) {
                tolerations.push(json!({"operator": "Exists"}));
            }
            spec["tolerations"] = json!(tolerations);
        }
        if node.is_none() && self.chance(0.3) {
            // The apiserver rejects two constraints with the same key and action, so each
            // constraint gets its own key.
            let first = self.rng.random_range(0..3usize);
            let keys = [HOSTNAME_LABEL, ZONE_LABEL, "disk"];
            let constraints: Vec<Value> = (0..self.rng.random_range(1..=2usize))
                .map(|i| {
                    json!({"maxSkew": self.rng.random_range(1..=2),
                        "topologyKey": keys[(first + i) % keys.len()],
                        "whenUnsatisfiable": *self.pick(&["DoNotSchedule", "ScheduleAnyway"]),
                        "labelSelector": {"matchLabels": {"app": app}}})
                })
                .collect();
            spec["topologySpreadConstraints"] = json!(constraints);
        }
        spec["volumes"] = json!(self.volumes(&ns));
        let status = if self.modern {
            self.v136_fields(&mut spec, node.is_some())
        } else {
            None
        };
        let mut meta = json!({"name": name, "namespace": ns, "labels": {"app": app}});
        if self.modern && self.chance(0.7) {
            // The label the v1.36 label keys of spreading and affinity name.
            meta["labels"][TRACK_LABEL] = json!(*self.pick(&["stable", "canary"]));
        }
        if self.chance(0.4) {
            let (kind, api, controller) = match app {
                "web" => ("ReplicaSet", "apps/v1", "web-rs"),
                "db" => ("ReplicationController", "v1", "db-rc"),
                "cache" => ("StatefulSet", "apps/v1", "cache-ss"),
                _ => ("", "", ""),
            };
            // Controllers live in the main namespace; an owner must share the pod's.
            if !kind.is_empty() && ns == self.ns[0] {
                meta["ownerReferences"] = json!([{"apiVersion": api, "kind": kind,
                    "name": controller, "uid": uid_placeholder(kind, controller),
                    "controller": true}]);
            }
        }
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
        if let Some(status) = status {
            pod["status"] = status;
        }
        pod
    }

    /// The fields v1.22 never knew, added to a pod's `spec`; for a running pod (`bound`),
    /// the status the kubelet would write, if its resize state is one to test.
    fn v136_fields(&mut self, spec: &mut Value, bound: bool) -> Option<Value> {
        if self.chance(0.35) {
            // A native sidecar, before or after the regular init container (each regular
            // init container is counted with the sidecars started before it).
            let big = self.chance(0.4);
            let mut sidecar = json!({"name": "sidecar", "image": self.pick(&IMAGES).0,
                "restartPolicy": "Always", "resources": self.resources(big)});
            if self.chance(0.25) {
                let port = *self.pick(&[8080, 8081, 9090]);
                sidecar["ports"] = json!([{"containerPort": port, "hostPort": port}]);
            }
            let mut inits = spec["initContainers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let at = self.rng.random_range(0..=inits.len());
            inits.insert(at, sidecar);
            spec["initContainers"] = json!(inits);
        }
        if self.chance(0.2) {
            // Validation wants pod-level requests no lower than the containers' aggregate.
            let (cpu, memory) = aggregate_requests(spec);
            let cpu = cpu + *self.pick(&[0, 250, 1000, 3000]);
            let memory = memory + *self.pick(&[0, 256, 1024, 4096]);
            spec["resources"] = json!({"requests": {"cpu": format!("{cpu}m"),
                "memory": format!("{memory}Mi")}});
        }
        self.spread_v136(spec);
        self.affinity_label_keys(spec);
        if bound {
            return self.resize_status(spec);
        }
        if self.chance(0.15) {
            spec["schedulingGates"] = json!([{"name": "difftest.berth.local/hold"}]);
        }
        if self.chance(0.08) {
            let claim = *self.pick(&["claim-0", "claim-1"]);
            spec["resourceClaims"] = json!([{"name": "device", "resourceClaimName": claim}]);
        }
        None
    }

    /// v1.36's fields of topology spread constraints, on some of the pod's constraints:
    /// `minDomains` (DoNotSchedule only, as validation wants), `nodeAffinityPolicy`,
    /// `nodeTaintsPolicy` and `matchLabelKeys`.
    fn spread_v136(&mut self, spec: &mut Value) {
        let Some(constraints) = spec["topologySpreadConstraints"].as_array_mut() else {
            return;
        };
        for c in constraints.iter_mut() {
            if c["whenUnsatisfiable"] == "DoNotSchedule" && self.rng.random_bool(0.4) {
                c["minDomains"] = json!(self.rng.random_range(1..=4));
            }
            if self.rng.random_bool(0.3) {
                c["nodeAffinityPolicy"] = json!(*self.pick(&["Honor", "Ignore"]));
            }
            if self.rng.random_bool(0.3) {
                c["nodeTaintsPolicy"] = json!(*self.pick(&["Honor", "Ignore"]));
            }
            if self.rng.random_bool(0.3) {
                c["matchLabelKeys"] = json!([TRACK_LABEL]);
            }
        }
    }

    /// `matchLabelKeys` or `mismatchLabelKeys` on some of the pod's (anti-)affinity terms.
    fn affinity_label_keys(&mut self, spec: &mut Value) {
        for kind in ["podAffinity", "podAntiAffinity"] {
            let lists = spec
                .get_mut("affinity")
                .and_then(|a| a.get_mut(kind))
                .and_then(Value::as_object_mut);
            let Some(lists) = lists else {
                continue;
            };
            // Required terms are terms; preferred ones hold theirs in podAffinityTerm.
            for (when, list) in lists.iter_mut() {
                for entry in list.as_array_mut().into_iter().flatten() {
                    let term = if when.starts_with("preferred") {
                        &mut entry["podAffinityTerm"]
                    } else {
                        entry
                    };
                    if self.rng.random_bool(0.35) {
                        let field = *self.pick(&["matchLabelKeys", "mismatchLabelKeys"]);
                        term[field] = json!([TRACK_LABEL]);
                    }
                }
            }
        }
    }

    /// A running pod's status with an in-place resize under way, as the kubelet reports it
    /// (or None for a pod without one): the main container's and the sidecar's allocated
    /// and actual requests, and the PodResizePending condition when the kubelet has not
    /// admitted the resize. v1.36 counts the largest of spec, allocated and actual, but
    /// only allocated and actual while the resize is infeasible. A pod with pod-level
    /// requests reports them resized at pod level instead (InPlacePodLevelResources-
    /// VerticalScaling, beta and on in v1.36).
    fn resize_status(&mut self, spec: &Value) -> Option<Value> {
        if !self.chance(0.4) {
            return None;
        }
        let mode = *self.pick(&["shrinking", "growing", "Deferred", "Infeasible"]);
        let resized = |requested: &Value| {
            let mut allocated = serde_json::Map::new();
            let mut actual = serde_json::Map::new();
            for (resource, big, small) in [("cpu", "3", "50m"), ("memory", "3Gi", "32Mi")] {
                let Some(spec_value) = requested[resource].as_str() else {
                    continue;
                };
                let (a, b) = match mode {
                    // The spec asks for less; the kubelet has admitted it but not applied it.
                    "shrinking" => (big, big),
                    // The spec asks for more; admitted, not applied.
                    "growing" => (spec_value, small),
                    // The spec asks for more; not admitted (deferred or infeasible).
                    _ => (small, small),
                };
                allocated.insert(resource.into(), json!(a));
                actual.insert(resource.into(), json!(b));
            }
            (allocated, actual)
        };
        let condition = if matches!(mode, "Deferred" | "Infeasible") {
            json!({"type": "PodResizePending", "status": "True", "reason": mode,
                "message": "difftest"})
        } else {
            json!({"type": "PodResizeInProgress", "status": "True"})
        };
        let mut status = json!({"phase": "Running", "startTime": "2024-01-01T00:00:00Z",
            "conditions": [condition]});
        if spec["resources"].is_object() {
            let (allocated, actual) = resized(&spec["resources"]["requests"]);
            status["allocatedResources"] = json!(allocated);
            status["resources"] = json!({"requests": actual});
            return Some(status);
        }
        let mut statuses = Vec::new();
        let mut init_statuses = Vec::new();
        let containers = spec["containers"].as_array().cloned().unwrap_or_default();
        let inits = spec["initContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (container, sidecar) in containers
            .iter()
            .map(|c| (c, false))
            .chain(inits.iter().map(|c| (c, true)))
        {
            if sidecar && container["restartPolicy"] != "Always" {
                continue;
            }
            let (allocated, actual) = resized(&container["resources"]["requests"]);
            let status = json!({"name": container["name"], "image": container["image"],
                "imageID": "", "ready": true, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                "allocatedResources": allocated, "resources": {"requests": actual}});
            if sidecar {
                init_statuses.push(status);
            } else {
                statuses.push(status);
            }
        }
        status["containerStatuses"] = json!(statuses);
        status["initContainerStatuses"] = json!(init_statuses);
        Some(status)
    }

    /// v1.36's volume fields: delayed-binding claims of `volumeMode: Block` (`block-0`) and
    /// of a volume attributes class (`vac-0`), with node-bound volumes of either mode and
    /// class, or none, on some nodes. ReadWriteOncePod claims are left out until Berth
    /// words their reason as v1.36.3 does (its text is still v1.22's alpha one).
    fn storage_v136(&mut self, nodes: &[String]) -> Vec<Value> {
        let p = self.prefix.clone();
        let ns = self.ns[0].clone();
        let mut out = vec![
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "block-0", "namespace": ns},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Block",
                    "storageClassName": format!("{p}-wffc"),
                    "resources": {"requests": {"storage": "1Gi"}}}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "vac-0", "namespace": ns},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "volumeAttributesClassName": "fast",
                    "storageClassName": format!("{p}-wffc"),
                    "resources": {"requests": {"storage": "1Gi"}}}}),
        ];
        for (i, node) in nodes.iter().enumerate() {
            if !self.chance(0.5) {
                continue;
            }
            let mut spec = json!({"capacity": {"storage": "2Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": format!("{p}-wffc"),
                "local": {"path": format!("/mnt/v136-{i}")},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}}});
            if self.chance(0.5) {
                spec["volumeMode"] = json!("Block");
            }
            if self.chance(0.5) {
                // Validation allows an attributes class on CSI volumes only.
                spec["volumeAttributesClassName"] = json!(*self.pick(&["fast", "slow"]));
                spec.as_object_mut().map(|o| o.remove("local"));
                spec["csi"] = json!({"driver": CSI_DRIVER,
                    "volumeHandle": format!("{p}-pv-v136-{i}")});
            }
            out.push(json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": format!("{p}-pv-v136-{i}")}, "spec": spec}));
        }
        out
    }

    /// Two ResourceClaims in each namespace asking for one device: `claim-0` of a
    /// DeviceClass that exists, `claim-1` of one that does not. No ResourceSlice exists, so
    /// v1.36 can allocate neither.
    fn device_claims(&mut self) -> Vec<Value> {
        let class = format!("{}-gpu", self.prefix);
        let mut out = vec![
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": class}, "spec": {}}),
        ];
        for ns in self.ns.clone() {
            for (claim, class) in [
                ("claim-0", class.clone()),
                ("claim-1", format!("{}-missing", self.prefix)),
            ] {
                out.push(
                    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": claim, "namespace": ns},
                    "spec": {"devices": {"requests": [{"name": "device",
                        "exactly": {"deviceClassName": class}}]}}}),
                );
            }
        }
        out
    }

    fn volumes(&mut self, ns: &str) -> Vec<Value> {
        let mut volumes = Vec::new();
        if !self.modern && self.chance(0.15) {
            volumes.push(json!({"name": "ebs", "awsElasticBlockStore": {
                "volumeID": format!("vol-{}", self.rng.random_range(0..4))}}));
        }
        if !self.modern && self.chance(0.1) {
            volumes.push(json!({"name": "pd", "gcePersistentDisk": {
                "pdName": format!("pd-{}", self.rng.random_range(0..3)),
                "readOnly": self.chance(0.5)}}));
        }
        // Claims live in the main namespace only.
        if ns == self.ns[0] && self.chance(0.3) {
            let claim = match self.rng.random_range(0..3) {
                0 => format!("bound-{}", self.rng.random_range(0..3)),
                1 => format!("csi-{}", self.rng.random_range(0..2)),
                _ => format!("delayed-{}", self.rng.random_range(0..2)),
            };
            volumes.push(json!({"name": "data", "persistentVolumeClaim": {"claimName": claim}}));
        }
        if self.modern && ns == self.ns[0] && self.chance(0.25) {
            let claim = *self.pick(&["block-0", "vac-0"]);
            volumes.push(json!({"name": "v136", "persistentVolumeClaim": {"claimName": claim}}));
        }
        volumes
    }

    fn policy(&mut self) -> Value {
        let mut policy = json!({"kind": "Policy", "apiVersion": "v1"});
        if !self.chance(0.08) {
            policy["predicates"] = json!(self.predicates());
        }
        if !self.chance(0.08) {
            policy["priorities"] = json!(self.priorities());
        }
        if self.chance(0.3) {
            policy["alwaysCheckAllPredicates"] = json!(true);
        }
        if self.chance(0.3) {
            policy["hardPodAffinitySymmetricWeight"] = json!(self.rng.random_range(0..=100));
        }
        policy
    }

    fn predicates(&mut self) -> Vec<Value> {
        let mut names: Vec<&str> = Vec::new();
        let general = self.chance(0.55);
        if general {
            names.push("GeneralPredicates");
        }
        // Without GeneralPredicates its parts one by one, and sometimes both (v1.22 runs
        // a check named twice once).
        let parts_chance = if general { 0.25 } else { 0.5 };
        for part in [
            "PodFitsResources",
            "HostName",
            "MatchNodeSelector",
            "PodFitsHostPorts",
        ] {
            if self.chance(parts_chance) {
                names.push(if part == "PodFitsHostPorts" && self.chance(0.3) {
                    "PodFitsPorts"
                } else {
                    part
                });
            }
        }
        for (name, p) in [
            ("NoDiskConflict", 0.4),
            ("PodToleratesNodeTaints", 0.4),
            ("CheckNodeUnschedulable", 0.3),
            ("MaxEBSVolumeCount", 0.3),
            ("MaxGCEPDVolumeCount", 0.2),
            ("MaxCSIVolumeCountPred", 0.4),
            ("MaxAzureDiskVolumeCount", 0.1),
            ("MaxCinderVolumeCount", 0.1),
            ("CheckVolumeBinding", 0.5),
            ("NoVolumeZoneConflict", 0.4),
            ("EvenPodsSpread", 0.4),
            ("MatchInterPodAffinity", 0.5),
        ] {
            if self.chance(p) {
                names.push(name);
            }
        }
        let mut out: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        if self.chance(0.25) {
            let presence = self.chance(0.5);
            let labels = if presence { vec!["disk"] } else { vec!["tier"] };
            out.push(json!({"name": if presence { "HasDisk" } else { "NoTier" },
                "argument": {"labelsPresence": {"labels": labels, "presence": presence}}}));
        }
        if self.chance(0.2) {
            let label = *self.pick(&[ZONE_LABEL, "disk"]);
            out.push(json!({"name": "Affinity",
                "argument": {"serviceAffinity": {"labels": [label]}}}));
        }
        out
    }

    fn priorities(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for (name, p) in [
            ("LeastRequestedPriority", 0.5),
            ("MostRequestedPriority", 0.2),
            ("BalancedResourceAllocation", 0.4),
            ("SelectorSpreadPriority", 0.4),
            ("InterPodAffinityPriority", 0.4),
            ("NodeAffinityPriority", 0.4),
            ("TaintTolerationPriority", 0.4),
            ("ImageLocalityPriority", 0.3),
            ("NodePreferAvoidPodsPriority", 0.3),
            ("EqualPriority", 0.15),
            ("EvenPodsSpreadPriority", 0.3),
        ] {
            if self.chance(p) {
                let weight = if name == "NodePreferAvoidPodsPriority" && self.chance(0.5) {
                    10000
                } else {
                    self.rng.random_range(1..=5)
                };
                out.push(json!({"name": name, "weight": weight}));
            }
        }
        // Its deprecated alias, alone: Berth rejects a policy naming both (docs/fidelity.md).
        if self.chance(0.1) && !out.iter().any(|p| p["name"] == "SelectorSpreadPriority") {
            out.push(
                json!({"name": "ServiceSpreadingPriority", "weight": self.rng.random_range(1..=5)}),
            );
        }
        if self.chance(0.2) {
            let mut ratio = json!({"shape": [
                {"utilization": 0, "score": *self.pick(&[0, 10])},
                {"utilization": *self.pick(&[50, 80]), "score": *self.pick(&[3, 5, 8])},
                {"utilization": 100, "score": *self.pick(&[0, 10])}]});
            if self.chance(0.8) {
                let mut resources =
                    vec![json!({"name": "cpu", "weight": self.rng.random_range(1..=3)})];
                if self.chance(0.7) {
                    resources
                        .push(json!({"name": "memory", "weight": self.rng.random_range(1..=3)}));
                }
                ratio["resources"] = json!(resources);
            }
            out.push(
                json!({"name": "Shape", "weight": self.rng.random_range(1..=3),
                "argument": {"requestedToCapacityRatioArguments": ratio}}),
            );
        }
        // All serviceAntiAffinity and labelPreference entries share one weight (v1.22).
        let shared = self.rng.random_range(1..=3);
        if self.chance(0.3) {
            out.push(json!({"name": "ZoneSpread", "weight": shared,
                "argument": {"serviceAntiAffinity": {"label": ZONE_LABEL}}}));
        }
        if self.chance(0.3) {
            out.push(json!({"name": "DiskSpread", "weight": shared,
                "argument": {"serviceAntiAffinity": {"label": "disk"}}}));
        }
        if self.chance(0.3) {
            out.push(json!({"name": "PreferSSD", "weight": shared,
                "argument": {"labelPreference": {"label": "disk", "presence": true}}}));
        }
        if self.chance(0.3) {
            out.push(json!({"name": "AvoidTier", "weight": shared,
                "argument": {"labelPreference": {"label": "tier", "presence": false}}}));
        }
        out
    }
}

/// The aggregate cpu (millicores) and memory (MiB) requests of a pod's containers, as v1.36
/// computes them: app containers and sidecars summed, each regular init container with the
/// sidecars started before it, the larger of the two. Only the quantities the generator
/// writes are read.
fn aggregate_requests(spec: &Value) -> (i64, i64) {
    let requests = |c: &Value| {
        let r = &c["resources"]["requests"];
        (
            r["cpu"].as_str().map_or(0, millicores),
            r["memory"].as_str().map_or(0, mebibytes),
        )
    };
    let (mut cpu, mut memory) = (0, 0);
    for c in spec["containers"].as_array().into_iter().flatten() {
        let (a, b) = requests(c);
        cpu += a;
        memory += b;
    }
    let (mut sidecars_cpu, mut sidecars_memory) = (0, 0);
    let (mut init_cpu, mut init_memory) = (0, 0);
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        let (a, b) = requests(c);
        if c["restartPolicy"] == "Always" {
            cpu += a;
            memory += b;
            sidecars_cpu += a;
            sidecars_memory += b;
            init_cpu = init_cpu.max(sidecars_cpu);
            init_memory = init_memory.max(sidecars_memory);
        } else {
            init_cpu = init_cpu.max(a + sidecars_cpu);
            init_memory = init_memory.max(b + sidecars_memory);
        }
    }
    (cpu.max(init_cpu), memory.max(init_memory))
}

fn millicores(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<i64>().unwrap_or(0) * 1000,
    }
}

fn mebibytes(q: &str) -> i64 {
    if let Some(g) = q.strip_suffix("Gi") {
        g.parse::<i64>().unwrap_or(0) * 1024
    } else {
        q.strip_suffix("Mi")
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }
}

fn runtime_class(prefix: &str) -> Value {
    json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": format!("{prefix}-kata")}, "handler": "kata",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_scenario() {
        let a = scenario(7, "s7");
        let b = scenario(7, "s7");
        assert_eq!(a.policy, b.policy);
        assert_eq!(a.objects, b.objects);
        assert_eq!(a.pending, b.pending);
    }

    #[test]
    fn every_predicate_and_priority_is_reached_over_a_few_seeds() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let s = scenario(seed, "s");
            for list in ["predicates", "priorities"] {
                for entry in s.policy[list].as_array().into_iter().flatten() {
                    let key = match entry["argument"].as_object() {
                        Some(arg) => arg.keys().next().cloned().unwrap_or_default(),
                        None => entry["name"].as_str().unwrap_or_default().to_owned(),
                    };
                    seen.insert(key);
                }
            }
        }
        for name in [
            "GeneralPredicates",
            "PodFitsResources",
            "HostName",
            "MatchNodeSelector",
            "PodFitsHostPorts",
            "PodFitsPorts",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
            "CheckNodeUnschedulable",
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxCSIVolumeCountPred",
            "MaxAzureDiskVolumeCount",
            "MaxCinderVolumeCount",
            "CheckVolumeBinding",
            "NoVolumeZoneConflict",
            "EvenPodsSpread",
            "MatchInterPodAffinity",
            "labelsPresence",
            "serviceAffinity",
            "LeastRequestedPriority",
            "MostRequestedPriority",
            "BalancedResourceAllocation",
            "SelectorSpreadPriority",
            "ServiceSpreadingPriority",
            "InterPodAffinityPriority",
            "NodeAffinityPriority",
            "TaintTolerationPriority",
            "ImageLocalityPriority",
            "NodePreferAvoidPodsPriority",
            "EqualPriority",
            "EvenPodsSpreadPriority",
            "requestedToCapacityRatioArguments",
            "serviceAntiAffinity",
            "labelPreference",
        ] {
            assert!(seen.contains(name), "{name} never generated");
        }
    }
}
