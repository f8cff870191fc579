//! Tests for converting typed Kubernetes objects into the engine's model.

use berth_kube::convert::{self, ConvertError, PriorityResolver};
use berth_kube::{ClusterObjects, parse_cluster, snapshot};
use berth_model::labels::{LabelSelector, Operator, Requirement};
use berth_model::model::{
    self, NodeInclusionPolicy, NodeSelectorTerm, PvSource, SelectorKind, StringMap, TaintEffect,
    TolerationOperator, VolumeBindingMode, VolumeSource, WhenUnsatisfiable,
};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;

fn objects(yaml: &str) -> ClusterObjects {
    parse_cluster(yaml, "test.yaml").unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

/// Decodes one object directly, bypassing the loader's own checks (as a watch would).
fn object<T: DeserializeOwned>(yaml: &str) -> T {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad test YAML: {e}"))
}

fn convert_pod(yaml: &str) -> Result<model::Pod, ConvertError> {
    convert::pod(&object(yaml), &PriorityResolver::default(), &mut Vec::new())
}

fn pod_ok(yaml: &str) -> model::Pod {
    convert_pod(yaml).unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

fn pod_err(yaml: &str) -> String {
    match convert_pod(yaml) {
        Ok(pod) => panic!("expected an error, got {pod:?}"),
        Err(error) => error.to_string(),
    }
}

fn list(items: &[(&str, i64)]) -> Vec<(String, i64)> {
    items.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
}

fn req(key: &str, operator: Operator, values: &[&str]) -> Requirement {
    Requirement {
        key: key.to_owned(),
        operator,
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    }
}

fn selector(requirements: Vec<Requirement>) -> Option<LabelSelector> {
    Some(LabelSelector { requirements })
}

fn map(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const NODE: &str = r#"
apiVersion: v1
kind: Node
metadata:
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
  creationTimestamp: "2024-05-01T09:00:00Z"
  labels:
    kubernetes.io/hostname: node-a
    topology.kubernetes.io/zone: zone-1
  name: node-a
  resourceVersion: "1234"
  uid: 0b6f3b3e-1111-2222-3333-444455556666
spec:
  podCIDR: 10.244.0.0/24
  podCIDRs:
  - 10.244.0.0/24
  - fd00:10:244::/64
  taints:
  - effect: NoSchedule
    key: dedicated
    value: gpu
  - effect: NoExecute
    key: node.kubernetes.io/unreachable
    timeAdded: "2024-05-01T10:00:00Z"
  unschedulable: true
status:
  allocatable:
    cpu: 3800m
    ephemeral-storage: "95551679124"
    hugepages-2Mi: "0"
    memory: 15Gi
    nvidia.com/gpu: "2"
    pods: "110"
  capacity:
    cpu: "4"
    memory: 16Gi
    pods: "110"
  conditions:
  - lastHeartbeatTime: "2024-05-01T10:00:00Z"
    lastTransitionTime: "2024-05-01T09:00:00Z"
    message: kubelet has sufficient memory available
    reason: KubeletHasSufficientMemory
    status: "False"
    type: MemoryPressure
  - lastHeartbeatTime: "2024-05-01T10:00:00Z"
    lastTransitionTime: "2024-05-01T09:00:00Z"
    message: kubelet has disk pressure
    reason: KubeletHasDiskPressure
    status: "True"
    type: DiskPressure
  - lastHeartbeatTime: "2024-05-01T10:00:00Z"
    lastTransitionTime: "2024-05-01T09:00:00Z"
    message: kubelet is posting ready status
    reason: KubeletReady
    status: "True"
    type: Ready
  images:
  - names:
    - registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097
    - registry.k8s.io/pause:3.9
    sizeBytes: 321520
  - names:
    - nginx:1.27
    sizeBytes: 70000000
"#;

#[test]
fn node_as_kubectl_prints_it() {
    let node = convert::node(&object(NODE)).unwrap();
    assert_eq!(node.meta.name, "node-a");
    assert_eq!(node.meta.namespace, "");
    assert_eq!(node.meta.uid, "0b6f3b3e-1111-2222-3333-444455556666");
    assert_eq!(node.meta.labels["topology.kubernetes.io/zone"], "zone-1");
    assert_eq!(node.meta.annotations["node.alpha.kubernetes.io/ttl"], "0");
    assert_eq!(node.meta.creation_timestamp, 1_714_554_000);
    assert!(!node.meta.deleting);
    assert!(node.unschedulable);
    assert_eq!(
        node.taints,
        [
            model::Taint {
                key: "dedicated".into(),
                value: "gpu".into(),
                effect: TaintEffect::NoSchedule,
            },
            model::Taint {
                key: "node.kubernetes.io/unreachable".into(),
                value: String::new(),
                effect: TaintEffect::NoExecute,
            },
        ]
    );
    assert_eq!(node.pod_cidrs, ["10.244.0.0/24", "fd00:10:244::/64"]);
    assert_eq!(
        node.allocatable,
        list(&[
            ("cpu", 3800),
            ("ephemeral-storage", 95_551_679_124),
            ("hugepages-2Mi", 0),
            ("memory", 15 << 30),
            ("nvidia.com/gpu", 2),
            ("pods", 110),
        ])
    );
    assert_eq!(
        node.conditions,
        model::NodeConditions {
            ready: Some(true),
            disk_pressure: true,
            ..Default::default()
        }
    );
    assert_eq!(node.images.len(), 2);
    assert_eq!(node.images[0].names[1], "registry.k8s.io/pause:3.9");
    assert_eq!(node.images[0].size_bytes, 321_520);
}

#[test]
fn node_allocatable_falls_back_to_capacity_and_pod_cidr() {
    let node = convert::node(&object(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: small
spec:
  podCIDR: 10.244.1.0/24
status:
  capacity:
    cpu: "2"
    memory: 4Gi
    pods: "10"
  conditions:
  - status: Unknown
    type: Ready
"#,
    ))
    .unwrap();
    assert_eq!(
        node.allocatable,
        list(&[("cpu", 2000), ("memory", 4 << 30), ("pods", 10)])
    );
    assert_eq!(node.pod_cidrs, ["10.244.1.0/24"]);
    assert_eq!(node.conditions.ready, Some(false));
    assert_eq!(node.meta.creation_timestamp, 0);
}

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2024-05-01T10:00:00Z"
  deletionTimestamp: "2024-05-01T11:00:00Z"
  generateName: web-6d4cf56db6-
  labels:
    app: web
    pod-template-hash: 6d4cf56db6
  name: web-6d4cf56db6-x7k2p
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-6d4cf56db6
    uid: 5b0c6c1e-0000-0000-0000-000000000001
  uid: 9a1e0c4a-0000-0000-0000-000000000002
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - preference:
          matchExpressions:
          - key: disktype
            operator: In
            values:
            - ssd
        weight: 20
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/arch
            operator: NotIn
            values:
            - arm64
          - key: cores
            operator: Gt
            values:
            - "4"
        - matchFields:
          - key: metadata.name
            operator: In
            values:
            - node-a
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app: cache
        topologyKey: topology.kubernetes.io/zone
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - podAffinityTerm:
          labelSelector:
            matchExpressions:
            - key: app
              operator: In
              values:
              - web
            - key: canary
              operator: DoesNotExist
          namespaceSelector:
            matchLabels:
              team: shop
          namespaces:
          - shop
          - shop-canary
          topologyKey: kubernetes.io/hostname
        weight: 100
  containers:
  - image: nginx:1.27
    imagePullPolicy: IfNotPresent
    name: nginx
    ports:
    - containerPort: 80
      hostPort: 8080
      protocol: TCP
    - containerPort: 53
      hostIP: 10.0.0.1
      hostPort: 53
      protocol: UDP
    - containerPort: 9090
      name: metrics
      protocol: TCP
    resources:
      limits:
        cpu: "1"
        memory: 512Mi
      requests:
        cpu: 250m
        memory: 256Mi
  - image: envoyproxy/envoy:v1.30
    name: proxy
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  hostNetwork: true
  initContainers:
  - image: busybox
    name: init
    resources:
      requests:
        cpu: "1"
        example.com/widget: "3"
  nodeSelector:
    kubernetes.io/os: linux
  overhead:
    cpu: 10m
    memory: 1Mi
  preemptionPolicy: PreemptLowerPriority
  priority: 1000
  priorityClassName: high
  restartPolicy: Always
  schedulerName: my-scheduler
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  - key: dedicated
    operator: Equal
    value: gpu
  - operator: Exists
  topologySpreadConstraints:
  - labelSelector:
      matchLabels:
        app: web
    maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: data-web-0
  - emptyDir: {}
    name: cache
  - name: kube-api-access-abcde
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken:
          expirationSeconds: 3607
          path: token
status:
  phase: Pending
  qosClass: Burstable
"#;

#[test]
fn pod_as_kubectl_prints_it() {
    let pod = pod_ok(POD);
    assert_eq!(pod.key(), "shop/web-6d4cf56db6-x7k2p");
    assert_eq!(pod.meta.creation_timestamp, 1_714_557_600);
    assert!(pod.meta.deleting);
    assert_eq!(
        pod.meta.owners,
        [model::OwnerRef {
            kind: "ReplicaSet".into(),
            name: "web-6d4cf56db6".into(),
            uid: "5b0c6c1e-0000-0000-0000-000000000001".into(),
            controller: true,
        }]
    );
    assert_eq!(pod.node_name, None);
    assert_eq!(pod.scheduler_name, "my-scheduler");
    assert_eq!(
        (pod.priority, pod.priority_class_name.as_str()),
        (1000, "high")
    );
    assert_eq!(pod.containers.len(), 2);
    let nginx = &pod.containers[0];
    assert_eq!(
        (nginx.name.as_str(), nginx.image.as_str()),
        ("nginx", "nginx:1.27")
    );
    assert_eq!(nginx.requests, list(&[("cpu", 250), ("memory", 256 << 20)]));
    assert_eq!(
        nginx.ports,
        [
            model::ContainerPort {
                host_port: 8080,
                host_ip: String::new(),
                protocol: "TCP".into(),
            },
            model::ContainerPort {
                host_port: 53,
                host_ip: "10.0.0.1".into(),
                protocol: "UDP".into(),
            },
            model::ContainerPort {
                host_port: 0,
                host_ip: String::new(),
                protocol: "TCP".into(),
            },
        ]
    );
    assert!(pod.containers[1].requests.is_empty());
    assert_eq!(
        pod.init_containers[0].requests,
        list(&[("cpu", 1000), ("example.com/widget", 3)])
    );
    assert_eq!(pod.overhead, list(&[("cpu", 10), ("memory", 1 << 20)]));
    assert_eq!(pod.node_selector, map(&[("kubernetes.io/os", "linux")]));
    assert!(pod.host_network);

    let affinity = &pod.affinity;
    assert_eq!(
        affinity.node_required,
        Some(vec![
            NodeSelectorTerm {
                match_expressions: vec![
                    req("kubernetes.io/arch", Operator::NotIn, &["arm64"]),
                    req("cores", Operator::Gt, &["4"]),
                ],
                match_fields: vec![],
            },
            NodeSelectorTerm {
                match_expressions: vec![],
                match_fields: vec![req("metadata.name", Operator::In, &["node-a"])],
            },
        ])
    );
    assert_eq!(
        affinity.node_preferred,
        [model::PreferredNodeTerm {
            weight: 20,
            term: NodeSelectorTerm {
                match_expressions: vec![req("disktype", Operator::In, &["ssd"])],
                match_fields: vec![],
            },
        }]
    );
    assert_eq!(
        affinity.pod_required,
        [model::PodAffinityTerm {
            label_selector: selector(vec![req("app", Operator::In, &["cache"])]),
            namespaces: vec![],
            namespace_selector: None,
            topology_key: "topology.kubernetes.io/zone".into(),
        }]
    );
    assert!(affinity.pod_preferred.is_empty() && affinity.anti_required.is_empty());
    assert_eq!(
        affinity.anti_preferred,
        [model::WeightedPodAffinityTerm {
            weight: 100,
            term: model::PodAffinityTerm {
                label_selector: selector(vec![
                    req("app", Operator::In, &["web"]),
                    req("canary", Operator::DoesNotExist, &[]),
                ]),
                namespaces: vec!["shop".into(), "shop-canary".into()],
                namespace_selector: selector(vec![req("team", Operator::In, &["shop"])]),
                topology_key: "kubernetes.io/hostname".into(),
            },
        }]
    );

    assert_eq!(
        pod.tolerations,
        [
            model::Toleration {
                key: "node.kubernetes.io/not-ready".into(),
                operator: TolerationOperator::Exists,
                value: String::new(),
                effect: Some(TaintEffect::NoExecute),
            },
            model::Toleration {
                key: "dedicated".into(),
                operator: TolerationOperator::Equal,
                value: "gpu".into(),
                effect: None,
            },
            model::Toleration {
                operator: TolerationOperator::Exists,
                ..Default::default()
            },
        ]
    );
    assert_eq!(
        pod.topology_spread_constraints,
        [
            model::TopologySpreadConstraint {
                max_skew: 1,
                topology_key: "topology.kubernetes.io/zone".into(),
                when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
                label_selector: selector(vec![req("app", Operator::In, &["web"])]),
                min_domains: None,
                node_affinity_policy: None,
                node_taints_policy: None,
            },
            model::TopologySpreadConstraint {
                max_skew: 2,
                topology_key: "kubernetes.io/hostname".into(),
                when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
                label_selector: None,
                min_domains: None,
                node_affinity_policy: None,
                node_taints_policy: None,
            },
        ]
    );
    let sources: Vec<_> = pod
        .volumes
        .iter()
        .map(|v| (v.name.as_str(), &v.source))
        .collect();
    assert_eq!(
        sources,
        [
            (
                "data",
                &VolumeSource::Pvc {
                    claim_name: "data-web-0".into()
                }
            ),
            ("cache", &VolumeSource::Other),
            ("kube-api-access-abcde", &VolumeSource::Other),
        ]
    );
}

#[test]
fn pod_defaults() {
    let pod = pod_ok(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: bare
spec:
  containers:
  - name: app
    image: app
  nodeName: node-b
"#,
    );
    assert_eq!(pod.meta.namespace, "default");
    assert_eq!(pod.scheduler_name, "default-scheduler");
    assert_eq!(pod.node_name.as_deref(), Some("node-b"));
    assert_eq!(pod.affinity, model::Affinity::default());
    assert!(!pod.host_network);
}

#[test]
fn limits_become_requests_when_requests_are_missing() {
    let pod = pod_ok(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: limits
spec:
  containers:
  - name: only-limits
    resources:
      limits:
        cpu: 500m
        memory: 1Gi
        nvidia.com/gpu: "1"
  - name: partial
    resources:
      limits:
        cpu: "2"
        memory: 2Gi
      requests:
        cpu: 100m
  - name: explicit-zero
    resources:
      limits:
        cpu: "1"
      requests:
        cpu: "0"
  initContainers:
  - name: init
    resources:
      limits:
        memory: 64Mi
"#,
    );
    let requests: Vec<_> = pod.containers.iter().map(|c| c.requests.clone()).collect();
    assert_eq!(
        requests,
        [
            list(&[("cpu", 500), ("memory", 1 << 30), ("nvidia.com/gpu", 1)]),
            list(&[("cpu", 100), ("memory", 2 << 30)]),
            list(&[("cpu", 0)]),
        ]
    );
    assert_eq!(
        pod.init_containers[0].requests,
        list(&[("memory", 64 << 20)])
    );
}

#[test]
fn pod_volume_sources() {
    let pod = pod_ok(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: volumes
spec:
  containers:
  - name: app
  volumes:
  - name: gce
    gcePersistentDisk:
      pdName: disk-1
      readOnly: true
  - name: ebs
    awsElasticBlockStore:
      volumeID: vol-0abc
  - name: rbd
    rbd:
      image: img
      monitors: [10.0.0.1:6789]
  - name: rbd-pool
    rbd:
      image: img
      monitors: [10.0.0.1:6789]
      pool: fast
      readOnly: true
  - name: iscsi
    iscsi:
      iqn: iqn.2001-04.com.example:storage
      lun: 3
      targetPortal: 10.0.0.2:3260
  - name: azure
    azureDisk:
      diskName: az-1
      diskURI: https://example/az-1.vhd
  - name: cinder
    cinder:
      volumeID: cinder-1
  - name: csi
    csi:
      driver: inline.csi.example.com
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests:
              storage: 1Gi
  - name: config
    configMap:
      name: settings
"#,
    );
    let sources: Vec<_> = pod.volumes.into_iter().map(|v| v.source).collect();
    assert_eq!(
        sources,
        [
            VolumeSource::GcePersistentDisk {
                pd_name: "disk-1".into(),
                read_only: true,
            },
            VolumeSource::AwsElasticBlockStore {
                volume_id: "vol-0abc".into(),
            },
            VolumeSource::Rbd {
                monitors: vec!["10.0.0.1:6789".into()],
                pool: "rbd".into(),
                image: "img".into(),
                read_only: false,
            },
            VolumeSource::Rbd {
                monitors: vec!["10.0.0.1:6789".into()],
                pool: "fast".into(),
                image: "img".into(),
                read_only: true,
            },
            VolumeSource::Iscsi {
                target_portal: "10.0.0.2:3260".into(),
                iqn: "iqn.2001-04.com.example:storage".into(),
                lun: 3,
                read_only: false,
            },
            VolumeSource::AzureDisk {
                disk_name: "az-1".into(),
            },
            VolumeSource::Cinder {
                volume_id: "cinder-1".into(),
            },
            VolumeSource::Csi {
                driver: "inline.csi.example.com".into(),
            },
            VolumeSource::Pvc {
                claim_name: "volumes-scratch".into(),
            },
            VolumeSource::Other,
        ]
    );
}

const PRIORITY_CLASSES: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: high
  value: 1000
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: default-a
  globalDefault: true
  value: 50
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: default-b
  globalDefault: true
  value: 10
"#;

#[test]
fn priority_resolution() {
    let with_classes = PriorityResolver::new(&objects(PRIORITY_CLASSES).priority_classes);
    let without_classes = PriorityResolver::default();
    // (resolver, spec lines, expected priority, expected class, expected warning)
    let cases: [(&PriorityResolver, &str, i32, &str, Option<&str>); 7] = [
        (
            &with_classes,
            "priority: 7\n  priorityClassName: high",
            7,
            "high",
            None,
        ),
        (&with_classes, "priorityClassName: high", 1000, "high", None),
        // Of two global defaults, the lower value wins, as in the admission plugin.
        (
            &with_classes,
            "schedulerName: default-scheduler",
            10,
            "default-b",
            None,
        ),
        (
            &without_classes,
            "schedulerName: default-scheduler",
            0,
            "",
            None,
        ),
        (&with_classes, "priority: 3", 3, "", None),
        (
            &without_classes,
            "priorityClassName: system-node-critical",
            2_000_001_000,
            "system-node-critical",
            None,
        ),
        (
            &with_classes,
            "priorityClassName: gold",
            0,
            "gold",
            Some(
                "Pod default/p: spec.priorityClassName: PriorityClass \"gold\" not found, using priority 0",
            ),
        ),
    ];
    for (resolver, spec, priority, class, warning) in cases {
        let yaml = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n  {spec}\n"
        );
        let mut warnings = Vec::new();
        let pod = convert::pod(&object(&yaml), resolver, &mut warnings).unwrap();
        assert_eq!(
            (pod.priority, pod.priority_class_name.as_str()),
            (priority, class),
            "{spec}"
        );
        assert_eq!(warnings, warning.into_iter().collect::<Vec<_>>(), "{spec}");
    }
}

/// Invalid pod specs and the error each must produce.
/// The v1.25+ spread fields and the v1.29+ affinity label keys, merged as v1.36's API server
/// does at creation (pkg/registry/core/pod/strategy.go: `applyLabelKeysToLabelSelector`
/// appends `key In [value]` for matchLabelKeys and `key NotIn [value]` for
/// mismatchLabelKeys, skips keys the pod has no label for, and leaves a nil selector nil in
/// `applyMatchLabelKeys` and `applyMatchLabelKeysAndMismatchLabelKeys`); the scheduler's own
/// spread merge (podtopologyspread/common.go `filterTopologySpreadConstraints`,
/// `mergeLabelSetWithSelector`) follows the same rules.
#[test]
fn label_keys_merged_and_spread_policies_kept() {
    let pod = pod_ok(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels:
    app: web
    pod-template-hash: 5d4f
    tenant: acme
spec:
  containers:
  - name: c
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector:
      matchLabels:
        app: web
    matchLabelKeys: [pod-template-hash, absent]
    minDomains: 3
    nodeAffinityPolicy: Ignore
    nodeTaintsPolicy: Honor
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    matchLabelKeys: [pod-template-hash]
  - maxSkew: 2
    topologyKey: rack
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchExpressions:
      - key: pod-template-hash
        operator: In
        values: [5d4f]
    matchLabelKeys: [pod-template-hash]
    nodeAffinityPolicy: Honor
    nodeTaintsPolicy: Ignore
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchExpressions:
          - key: app
            operator: In
            values: [web]
        matchLabelKeys: [pod-template-hash]
        mismatchLabelKeys: [tenant, absent]
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm:
          topologyKey: zone
          matchLabelKeys: [app]
      - weight: 20
        podAffinityTerm:
          topologyKey: zone
          labelSelector: {}
          mismatchLabelKeys: [tenant]
"#,
    );
    let spread: Vec<_> = pod
        .topology_spread_constraints
        .iter()
        .map(|c| {
            (
                c.label_selector.clone(),
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
        })
        .collect();
    assert_eq!(
        spread,
        [
            (
                selector(vec![
                    req("app", Operator::In, &["web"]),
                    req("pod-template-hash", Operator::In, &["5d4f"]),
                ]),
                Some(3),
                Some(NodeInclusionPolicy::Ignore),
                Some(NodeInclusionPolicy::Honor),
            ),
            // No selector: nothing to merge into, the constraint still selects nothing.
            (None, None, None, None),
            // Already merged by the API server: the repeated requirement selects the same pods.
            (
                selector(vec![
                    req("pod-template-hash", Operator::In, &["5d4f"]),
                    req("pod-template-hash", Operator::In, &["5d4f"]),
                ]),
                None,
                Some(NodeInclusionPolicy::Honor),
                Some(NodeInclusionPolicy::Ignore),
            ),
        ]
    );
    assert_eq!(
        pod.affinity.anti_required[0].label_selector,
        selector(vec![
            req("app", Operator::In, &["web"]),
            req("pod-template-hash", Operator::In, &["5d4f"]),
            req("tenant", Operator::NotIn, &["acme"]),
        ])
    );
    let preferred: Vec<_> = pod
        .affinity
        .pod_preferred
        .iter()
        .map(|w| w.term.label_selector.clone())
        .collect();
    assert_eq!(
        preferred,
        [
            None,
            selector(vec![req("tenant", Operator::NotIn, &["acme"])])
        ]
    );
}

#[test]
fn pod_errors_name_the_object_and_field() {
    const REQUIRED_TERM: &str = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";
    let cases: &[(&str, String)] = &[
        (
            r#"
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: zone
            operator: Among
            values: [a]"#,
            format!(
                "Pod default/web-1: {REQUIRED_TERM}.matchExpressions[0].operator: unknown operator \"Among\" (expected In, NotIn, Exists, DoesNotExist, Gt, Lt)"
            ),
        ),
        (
            r#"
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: zone
            operator: In"#,
            format!(
                "Pod default/web-1: {REQUIRED_TERM}.matchExpressions[0].values: must be non-empty for operator In or NotIn"
            ),
        ),
        (
            r#"
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: cores
            operator: Lt
            values: ["4", "8"]"#,
            format!(
                "Pod default/web-1: {REQUIRED_TERM}.matchExpressions[0].values: must hold exactly one integer for operator Gt or Lt"
            ),
        ),
        (
            r#"
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - key: metadata.labels
            operator: In
            values: [a]"#,
            format!(
                "Pod default/web-1: {REQUIRED_TERM}.matchFields[0].key: unsupported field \"metadata.labels\" (only metadata.name is supported)"
            ),
        ),
        (
            r#"
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchFields:
          - key: metadata.name
            operator: Exists"#,
            "Pod default/web-1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].operator: operator \"Exists\" is not valid for matchFields (expected In, NotIn)".to_owned(),
        ),
        (
            r#"
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchExpressions:
          - key: replicas
            operator: Gt
            values: ["1"]"#,
            "Pod default/web-1: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector.matchExpressions[0].operator: operator \"Gt\" is only valid in node selector terms (expected In, NotIn, Exists, DoesNotExist)".to_owned(),
        ),
        (
            r#"
  affinity:
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        podAffinityTerm:
          topologyKey: zone
          namespaceSelector:
            matchExpressions:
            - key: team
              operator: Exists
              values: [shop]"#,
            "Pod default/web-1: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector.matchExpressions[0].values: must be empty for operator Exists or DoesNotExist".to_owned(),
        ),
        (
            r#"
  tolerations:
  - key: a
    operator: Matches"#,
            "Pod default/web-1: spec.tolerations[0].operator: unknown operator \"Matches\" (expected Equal, Exists)".to_owned(),
        ),
        (
            r#"
  tolerations:
  - operator: Exists
  - key: a
    effect: NoLonger"#,
            "Pod default/web-1: spec.tolerations[1].effect: unknown taint effect \"NoLonger\" (expected NoSchedule, PreferNoSchedule, NoExecute)".to_owned(),
        ),
        (
            r#"
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: Ignore"#,
            "Pod default/web-1: spec.topologySpreadConstraints[0].whenUnsatisfiable: unknown value \"Ignore\" (expected DoNotSchedule, ScheduleAnyway)".to_owned(),
        ),
        (
            r#"
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    minDomains: 0"#,
            "Pod default/web-1: spec.topologySpreadConstraints[0].minDomains: must be at least 1, found 0".to_owned(),
        ),
        (
            r#"
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: ScheduleAnyway
    minDomains: 2"#,
            "Pod default/web-1: spec.topologySpreadConstraints[1].minDomains: only allowed with whenUnsatisfiable DoNotSchedule, not ScheduleAnyway".to_owned(),
        ),
        (
            r#"
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    nodeAffinityPolicy: Sometimes"#,
            "Pod default/web-1: spec.topologySpreadConstraints[0].nodeAffinityPolicy: unknown policy \"Sometimes\" (expected Honor, Ignore)".to_owned(),
        ),
        (
            r#"
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    nodeTaintsPolicy: honor"#,
            "Pod default/web-1: spec.topologySpreadConstraints[0].nodeTaintsPolicy: unknown policy \"honor\" (expected Honor, Ignore)".to_owned(),
        ),
        (
            r#"
  overhead:
    example.com/foo: 1x"#,
            "Pod default/web-1: spec.overhead[\"example.com/foo\"]: invalid quantity \"1x\": unknown suffix \"x\" (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)".to_owned(),
        ),
    ];
    for (spec, expected) in cases {
        let yaml = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\nspec:\n  containers:\n  - name: c{spec}\n"
        );
        assert_eq!(&pod_err(&yaml), expected);
    }
}

#[test]
fn container_and_metadata_errors() {
    let bad_limit = pod_err(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
spec:
  containers:
  - name: a
  - name: b
    resources:
      limits:
        cpu: lots
"#,
    );
    assert_eq!(
        bad_limit,
        "Pod ns/p: spec.containers[1].resources.limits.cpu: invalid quantity \"lots\": expected a number such as 1, 2.5, .5 or -1 before any suffix"
    );
    let unnamed = pod_err("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec:\n  containers: []\n");
    assert_eq!(unnamed, "Pod: metadata.name: missing or empty");
    let no_spec = pod_err("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n");
    assert_eq!(
        no_spec,
        "Pod default/p: spec: missing (a Pod needs spec.containers)"
    );
    let taint = convert::node(&object(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nspec:\n  taints:\n  - key: a\n    effect: Sometimes\n",
    ))
    .unwrap_err();
    assert_eq!(
        taint.to_string(),
        "Node n: spec.taints[0].effect: unknown taint effect \"Sometimes\" (expected NoSchedule, PreferNoSchedule, NoExecute)"
    );
    assert_eq!(taint.field, "spec.taints[0].effect");
    assert_eq!(taint.object.name.as_deref(), Some("n"));
}

#[test]
fn is_terminal_by_phase() {
    for (phase, terminal) in [
        ("Pending", false),
        ("Running", false),
        ("Unknown", false),
        ("Succeeded", true),
        ("Failed", true),
    ] {
        let pod: Pod = object(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nstatus:\n  phase: {phase}\n"
        ));
        assert_eq!(convert::is_terminal(&pod), terminal, "{phase}");
    }
    assert!(!convert::is_terminal(&object(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
    )));
}

#[test]
fn pod_selecting_objects() {
    let objects = objects(
        r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: shop
  spec:
    clusterIP: 10.96.0.10
    ports:
    - port: 80
      protocol: TCP
      targetPort: 8080
    selector:
      app: web
      tier: front
    type: ClusterIP
- apiVersion: v1
  kind: Service
  metadata:
    name: external
  spec:
    externalName: example.com
    type: ExternalName
- apiVersion: v1
  kind: ReplicationController
  metadata:
    name: legacy
  spec:
    replicas: 2
    template:
      metadata:
        labels:
          app: legacy
      spec:
        containers:
        - name: c
          image: legacy
- apiVersion: v1
  kind: ReplicationController
  metadata:
    name: explicit
  spec:
    selector:
      app: explicit
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    name: web-6d4cf56db6
    namespace: shop
  spec:
    selector:
      matchExpressions:
      - key: tier
        operator: NotIn
        values: [back]
      matchLabels:
        app: web
    template:
      metadata:
        labels:
          app: web
      spec:
        containers:
        - name: c
- apiVersion: apps/v1
  kind: StatefulSet
  metadata:
    name: db
  spec:
    selector:
      matchLabels:
        app: db
    serviceName: db
    template:
      metadata:
        labels:
          app: db
      spec:
        containers:
        - name: c
- apiVersion: apps/v1
  kind: StatefulSet
  metadata:
    name: empty-selector
  spec:
    selector: {}
    serviceName: x
    template:
      spec:
        containers:
        - name: c
"#,
    );
    let converted: Vec<model::PodSelector> = objects
        .services
        .iter()
        .map(convert::service)
        .chain(
            objects
                .replication_controllers
                .iter()
                .map(convert::replication_controller),
        )
        .chain(objects.replica_sets.iter().map(convert::replica_set))
        .chain(objects.stateful_sets.iter().map(convert::stateful_set))
        .collect::<Result<_, _>>()
        .unwrap();
    let summary: Vec<_> = converted
        .iter()
        .map(|o| {
            (
                o.kind,
                o.meta.namespace.as_str(),
                o.meta.name.as_str(),
                o.selector.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                SelectorKind::Service,
                "shop",
                "web",
                selector(vec![
                    req("app", Operator::In, &["web"]),
                    req("tier", Operator::In, &["front"]),
                ])
            ),
            (SelectorKind::Service, "default", "external", None),
            (
                SelectorKind::ReplicationController,
                "default",
                "legacy",
                selector(vec![req("app", Operator::In, &["legacy"])])
            ),
            (
                SelectorKind::ReplicationController,
                "default",
                "explicit",
                selector(vec![req("app", Operator::In, &["explicit"])])
            ),
            (
                SelectorKind::ReplicaSet,
                "shop",
                "web-6d4cf56db6",
                selector(vec![
                    req("app", Operator::In, &["web"]),
                    req("tier", Operator::NotIn, &["back"]),
                ])
            ),
            (
                SelectorKind::StatefulSet,
                "default",
                "db",
                selector(vec![req("app", Operator::In, &["db"])])
            ),
            (SelectorKind::StatefulSet, "default", "empty-selector", None),
        ]
    );
}

#[test]
fn storage_objects() {
    let objects = objects(
        r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: PersistentVolume
  metadata:
    labels:
      topology.kubernetes.io/zone: zone-1
    name: pv-gce
  spec:
    accessModes:
    - ReadWriteOnce
    capacity:
      storage: 10Gi
    claimRef:
      apiVersion: v1
      kind: PersistentVolumeClaim
      name: data-web-0
      namespace: shop
    gcePersistentDisk:
      fsType: ext4
      pdName: disk-1
    persistentVolumeReclaimPolicy: Delete
    storageClassName: standard
    volumeMode: Filesystem
  status:
    phase: Bound
- apiVersion: v1
  kind: PersistentVolume
  metadata:
    annotations:
      volume.beta.kubernetes.io/storage-class: legacy
    name: pv-csi
  spec:
    accessModes: [ReadWriteOnce, ReadOnlyMany]
    capacity:
      storage: 5G
    csi:
      driver: pd.csi.storage.gke.io
      volumeHandle: projects/p/zones/z/disks/d
    nodeAffinity:
      required:
        nodeSelectorTerms:
        - matchExpressions:
          - key: topology.gke.io/zone
            operator: In
            values: [zone-2]
    storageClassName: ignored-for-annotation
  status:
    phase: Available
- apiVersion: v1
  kind: PersistentVolume
  metadata:
    name: pv-local
  spec:
    capacity:
      storage: 1Ti
    local:
      path: /mnt/disks/ssd1
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: data-web-0
    namespace: shop
  spec:
    accessModes:
    - ReadWriteOnce
    resources:
      requests:
        storage: 8Gi
    storageClassName: standard
    volumeMode: Filesystem
    volumeName: pv-gce
  status:
    phase: Bound
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: no-class
  spec:
    accessModes: [ReadWriteOnce]
    resources:
      requests:
        storage: 1Gi
    selector:
      matchLabels:
        tier: gold
    storageClassName: ""
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: default-class
  spec:
    accessModes: [ReadWriteOnce]
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata:
    name: standard
  provisioner: kubernetes.io/gce-pd
  reclaimPolicy: Delete
  volumeBindingMode: WaitForFirstConsumer
  allowedTopologies:
  - matchLabelExpressions:
    - key: topology.kubernetes.io/zone
      values: [zone-1, zone-2]
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata:
    name: immediate
  provisioner: kubernetes.io/no-provisioner
- apiVersion: storage.k8s.io/v1
  kind: CSINode
  metadata:
    name: node-a
  spec:
    drivers:
    - allocatable:
        count: 127
      name: pd.csi.storage.gke.io
      nodeID: projects/p/zones/z/instances/node-a
      topologyKeys: [topology.gke.io/zone]
    - name: secrets-store.csi.k8s.io
      nodeID: node-a
"#,
    );
    let volumes: Vec<_> = objects
        .persistent_volumes
        .iter()
        .map(|v| convert::persistent_volume(v).unwrap())
        .collect();
    assert_eq!(
        volumes[0],
        model::PersistentVolume {
            meta: volumes[0].meta.clone(),
            capacity: 10 << 30,
            storage_class_name: "standard".into(),
            access_modes: vec!["ReadWriteOnce".into()],
            volume_mode: model::VolumeMode::Filesystem,
            volume_attributes_class_name: String::new(),
            node_affinity: None,
            claim_ref: Some(("shop".into(), "data-web-0".into())),
            source: PvSource::GcePersistentDisk {
                pd_name: "disk-1".into()
            },
            phase: "Bound".into(),
        }
    );
    assert_eq!(
        volumes[0].meta.labels["topology.kubernetes.io/zone"],
        "zone-1"
    );
    assert_eq!(volumes[1].capacity, 5_000_000_000);
    assert_eq!(volumes[1].storage_class_name, "legacy");
    assert_eq!(volumes[1].access_modes, ["ReadWriteOnce", "ReadOnlyMany"]);
    assert_eq!(
        volumes[1].node_affinity,
        Some(vec![NodeSelectorTerm {
            match_expressions: vec![req("topology.gke.io/zone", Operator::In, &["zone-2"])],
            match_fields: vec![],
        }])
    );
    assert_eq!(volumes[1].claim_ref, None);
    assert_eq!(
        volumes[1].source,
        PvSource::Csi {
            driver: "pd.csi.storage.gke.io".into(),
            volume_handle: "projects/p/zones/z/disks/d".into(),
        }
    );
    assert_eq!(volumes[1].phase, "Available");
    assert_eq!(
        (
            volumes[2].source.clone(),
            volumes[2].storage_class_name.as_str()
        ),
        (PvSource::Other, "")
    );

    let claims: Vec<_> = objects
        .persistent_volume_claims
        .iter()
        .map(|c| convert::persistent_volume_claim(c).unwrap())
        .collect();
    assert_eq!(
        claims[0],
        model::PersistentVolumeClaim {
            meta: claims[0].meta.clone(),
            volume_name: "pv-gce".into(),
            storage_class_name: Some("standard".into()),
            access_modes: vec!["ReadWriteOnce".into()],
            volume_mode: model::VolumeMode::Filesystem,
            volume_attributes_class_name: String::new(),
            request: 8 << 30,
            selector: None,
        }
    );
    assert_eq!(claims[0].meta.namespace, "shop");
    assert_eq!(claims[1].meta.namespace, "default");
    assert_eq!(claims[1].storage_class_name.as_deref(), Some(""));
    assert_eq!(
        claims[1].selector,
        selector(vec![req("tier", Operator::In, &["gold"])])
    );
    assert_eq!(
        (claims[2].storage_class_name.clone(), claims[2].request),
        (None, 0)
    );

    let classes: Vec<_> = objects
        .storage_classes
        .iter()
        .map(|c| convert::storage_class(c).unwrap())
        .collect();
    assert_eq!(classes[0].provisioner, "kubernetes.io/gce-pd");
    assert_eq!(
        classes[0].volume_binding_mode,
        VolumeBindingMode::WaitForFirstConsumer
    );
    assert_eq!(
        classes[0].allowed_topologies,
        [NodeSelectorTerm {
            match_expressions: vec![req(
                "topology.kubernetes.io/zone",
                Operator::In,
                &["zone-1", "zone-2"]
            )],
            match_fields: vec![],
        }]
    );
    assert_eq!(classes[1].volume_binding_mode, VolumeBindingMode::Immediate);
    assert!(classes[1].allowed_topologies.is_empty());

    let csi = convert::csi_node(&objects.csi_nodes[0]).unwrap();
    assert_eq!(csi.meta.name, "node-a");
    assert_eq!(
        csi.drivers,
        [
            ("pd.csi.storage.gke.io".to_owned(), Some(127)),
            ("secrets-store.csi.k8s.io".to_owned(), None),
        ]
    );
}

#[test]
fn storage_errors() {
    let claim = convert::persistent_volume_claim(&object(
        r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: c
  namespace: shop
spec:
  selector:
    matchExpressions:
    - key: tier
      operator: Gt
      values: ["1"]
"#,
    ))
    .unwrap_err();
    assert_eq!(
        claim.to_string(),
        "PersistentVolumeClaim shop/c: spec.selector.matchExpressions[0].operator: operator \"Gt\" is only valid in node selector terms (expected In, NotIn, Exists, DoesNotExist)"
    );
    let class = convert::storage_class(&object(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: s\nprovisioner: p\nvolumeBindingMode: Later\n",
    ))
    .unwrap_err();
    assert_eq!(
        class.to_string(),
        "StorageClass s: volumeBindingMode: unknown mode \"Later\" (expected Immediate, WaitForFirstConsumer)"
    );
    let topology = convert::storage_class(&object(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: s\nprovisioner: p\nallowedTopologies:\n- matchLabelExpressions:\n  - key: zone\n    values: []\n",
    ))
    .unwrap_err();
    assert_eq!(
        topology.to_string(),
        "StorageClass s: allowedTopologies[0].matchLabelExpressions[0].values: must be non-empty for operator In or NotIn"
    );
}

/// `volumeMode` (Filesystem when unset, as the API server defaults it), the access modes
/// (ReadWriteOncePod included) and `volumeAttributesClassName` ("" when unset, as upstream's
/// `FindMatchingVolume` reads it through `ptr.Deref`) on both kinds, and the error for a
/// mode the API does not know, naming the field and the accepted values.
#[test]
fn volume_modes_and_attributes_classes() {
    use model::VolumeMode::{Block, Filesystem};
    let volume = |spec: &str| {
        convert::persistent_volume(&object(&format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: v\nspec:\n{spec}"
        )))
    };
    let claim = |spec: &str| {
        convert::persistent_volume_claim(&object(&format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: c\n  namespace: shop\nspec:\n{spec}"
        )))
    };
    type Case = (&'static str, &'static str, model::VolumeMode, &'static str);
    let cases: Vec<Case> = vec![
        ("unset", "  accessModes: [ReadWriteOnce]\n", Filesystem, ""),
        ("Filesystem", "  volumeMode: Filesystem\n", Filesystem, ""),
        ("Block", "  volumeMode: Block\n", Block, ""),
        (
            "attributes class",
            "  volumeAttributesClassName: gold\n",
            Filesystem,
            "gold",
        ),
        (
            "empty attributes class is none",
            "  volumeAttributesClassName: \"\"\n",
            Filesystem,
            "",
        ),
    ];
    for (name, spec, mode, class) in cases {
        let v = volume(spec).unwrap();
        assert_eq!(
            (v.volume_mode, v.volume_attributes_class_name.as_str()),
            (mode, class),
            "volume: {name}"
        );
        let c = claim(spec).unwrap();
        assert_eq!(
            (c.volume_mode, c.volume_attributes_class_name.as_str()),
            (mode, class),
            "claim: {name}"
        );
    }
    let rwop = claim("  accessModes: [ReadWriteOncePod]\n").unwrap();
    assert_eq!(rwop.access_modes, ["ReadWriteOncePod"]);
    assert_eq!(
        volume("  volumeMode: Raw\n").unwrap_err().to_string(),
        "PersistentVolume v: spec.volumeMode: unknown volume mode \"Raw\" (expected Filesystem, Block)"
    );
    assert_eq!(
        claim("  volumeMode: block\n").unwrap_err().to_string(),
        "PersistentVolumeClaim shop/c: spec.volumeMode: unknown volume mode \"block\" (expected Filesystem, Block)"
    );
}

#[test]
fn namespace_conversion() {
    let namespace = convert::namespace(&object(
        r#"
apiVersion: v1
kind: Namespace
metadata:
  annotations:
    scheduler.alpha.kubernetes.io/node-selector: env=prod
  labels:
    kubernetes.io/metadata.name: shop
    team: shop
  name: shop
spec:
  finalizers:
  - kubernetes
status:
  phase: Active
"#,
    ))
    .unwrap();
    assert_eq!(namespace.meta.name, "shop");
    assert_eq!(namespace.meta.namespace, "");
    assert_eq!(namespace.meta.labels["team"], "shop");
    assert_eq!(
        namespace.meta.annotations["scheduler.alpha.kubernetes.io/node-selector"],
        "env=prod"
    );
    assert_eq!(
        namespace.node_selector,
        Some(model::NamespaceNodeSelector::Pairs(vec![(
            "env".into(),
            "prod".into()
        )]))
    );
}

const CLUSTER: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: node-a
    name: node-a
  spec:
    podCIDR: 10.244.0.0/24
  status:
    allocatable:
      cpu: "4"
      memory: 16Gi
      pods: "110"
- apiVersion: v1
  kind: Node
  metadata:
    name: node-b
  status:
    capacity:
      cpu: "2"
      memory: 8Gi
      pods: "110"
- apiVersion: v1
  kind: Namespace
  metadata:
    labels:
      team: shop
    name: shop
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: shop
  spec:
    selector:
      app: web
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: data
    namespace: shop
  spec:
    accessModes: [ReadWriteOnce]
    resources:
      requests:
        storage: 1Gi
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: batch
  value: 100
- apiVersion: v1
  kind: Pod
  metadata:
    labels:
      app: web
    name: web-0
    namespace: shop
  spec:
    containers:
    - name: app
      resources:
        requests:
          cpu: 500m
          memory: 1Gi
    - name: sidecar
      resources:
        limits:
          cpu: 100m
          memory: 64Mi
    nodeName: node-a
  status:
    phase: Running
- apiVersion: v1
  kind: Pod
  metadata:
    name: job-done
  spec:
    containers:
    - name: job
      resources:
        requests:
          cpu: "3"
    nodeName: node-a
  status:
    phase: Succeeded
- apiVersion: v1
  kind: Pod
  metadata:
    name: orphan
  spec:
    containers:
    - name: app
    nodeName: node-gone
  status:
    phase: Running
- apiVersion: v1
  kind: Pod
  metadata:
    name: pending-2
  spec:
    containers:
    - name: app
    priorityClassName: batch
  status:
    phase: Pending
- apiVersion: v1
  kind: Pod
  metadata:
    name: failed-pending
  spec:
    containers:
    - name: app
  status:
    phase: Failed
- apiVersion: v1
  kind: Pod
  metadata:
    name: pending-1
    namespace: shop
  spec:
    containers:
    - name: app
    priorityClassName: platinum
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: ignored
"#;

#[test]
fn snapshot_builds_the_cluster() {
    let snapshot = snapshot(&objects(CLUSTER)).unwrap();
    let cluster = &snapshot.cluster;
    assert_eq!(cluster.node_count(), 2);
    let node_a = cluster.node(cluster.node_by_name("node-a").unwrap());
    // web-0 only: the Succeeded job is ignored; the sidecar's limits count as requests.
    assert_eq!(node_a.requested.milli_cpu, 600);
    assert_eq!(node_a.requested.memory, (1 << 30) + (64 << 20));
    assert_eq!(node_a.pods.len(), 1);
    let node_b = cluster.node(cluster.node_by_name("node-b").unwrap());
    assert_eq!(node_b.allocatable.milli_cpu, 2000);
    assert_eq!(node_b.allowed_pods, 110);
    assert!(node_b.pods.is_empty());
    assert!(cluster.pod_by_key("shop", "web-0").is_some());
    assert!(cluster.pod_by_key("default", "job-done").is_none());
    assert!(cluster.pod_by_key("default", "orphan").is_none());
    assert_eq!(cluster.pods().count(), 1);
    assert_eq!(cluster.namespaces().count(), 1);
    assert_eq!(cluster.selector_objects().len(), 1);
    assert!(cluster.persistent_volume_claim("shop", "data").is_some());

    let pending: Vec<_> = snapshot
        .pending
        .iter()
        .map(|p| (p.key(), p.priority))
        .collect();
    assert_eq!(
        pending,
        [
            ("default/pending-2".to_owned(), 100),
            ("shop/pending-1".to_owned(), 0),
        ]
    );
    assert_eq!(
        snapshot.warnings,
        [
            "test.yaml: item 12 (ConfigMap ignored): kind ConfigMap is not used by the scheduler, skipped",
            "Pod default/orphan: spec.nodeName: node \"node-gone\" is not in the cluster file; pod ignored",
            "Pod shop/pending-1: spec.priorityClassName: PriorityClass \"platinum\" not found, using priority 0",
        ]
    );
}

#[test]
fn snapshot_errors_name_the_object() {
    let bad_cidr = objects(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nspec:\n  podCIDR: 10.0.0.0/99\n",
    );
    assert_eq!(
        snapshot(&bad_cidr).unwrap_err().to_string(),
        "Node n: spec.podCIDRs: invalid CIDR \"10.0.0.0/99\" (expected e.g. 10.244.1.0/24 or fd00::/64)"
    );
    let bad_selector = objects(
        r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
  namespace: shop
spec:
  selector:
    matchExpressions:
    - key: app
      operator: Exists
      values: [web]
  template:
    spec:
      containers:
      - name: c
"#,
    );
    assert_eq!(
        snapshot(&bad_selector).unwrap_err().to_string(),
        "ReplicaSet shop/rs: spec.selector.matchExpressions[0].values: must be empty for operator Exists or DoesNotExist"
    );
}

/// A pod with fields kube-scheduler v1.22 never knew: a native sidecar, pod-level resources,
/// an in-place resize in progress, scheduling gates and resource claims.
const MODERN_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: modern
  namespace: shop
spec:
  nodeName: n1
  initContainers:
  - name: setup
    image: busybox
    resources:
      requests: {cpu: 500m}
  - name: proxy
    image: envoy
    restartPolicy: Always
    ports:
    - containerPort: 15001
      hostPort: 15001
    resources:
      limits: {cpu: 250m, memory: 64Mi}
  containers:
  - name: app
    image: app:1
    resources:
      requests: {cpu: "1"}
  resources:
    limits: {memory: 1Gi}
    requests: {cpu: "2"}
  schedulingGates:
  - name: example.com/quota
  resourceClaims:
  - name: gpu
    resourceClaimName: gpu-claim
status:
  phase: Running
  conditions:
  - type: PodResizePending
    status: "True"
    reason: Infeasible
  containerStatuses:
  - name: app
    image: app:1
    imageID: ""
    ready: true
    restartCount: 0
    allocatedResources: {cpu: 1500m}
    resources:
      requests: {cpu: 1200m}
  initContainerStatuses:
  - name: proxy
    image: envoy
    imageID: ""
    ready: true
    restartCount: 0
"#;

#[test]
fn fields_v122_never_knew_are_read() {
    let pod = pod_ok(MODERN_POD);
    let [setup, proxy] = &pod.init_containers[..] else {
        panic!("two init containers: {:?}", pod.init_containers);
    };
    assert!(!setup.restartable && proxy.restartable);
    // A limit without a request is the request too, for sidecars and pod-level resources.
    assert_eq!(proxy.requests, list(&[("cpu", 250), ("memory", 64 << 20)]));
    assert_eq!(pod.resources, list(&[("cpu", 2000), ("memory", 1 << 30)]));
    assert_eq!(proxy.ports[0].host_port, 15001);
    // The status is matched to containers by name; the sidecar reports no resources.
    let app = &pod.containers[0];
    assert_eq!(app.allocated, Some(list(&[("cpu", 1500)])));
    assert_eq!(app.actual, Some(list(&[("cpu", 1200)])));
    assert_eq!((&proxy.allocated, &proxy.actual), (&None, &None));
    assert!(pod.resize_infeasible);
    assert_eq!(pod.scheduling_gates, ["example.com/quota"]);
    assert_eq!(pod.resource_claims, ["gpu"]);
}

#[test]
fn a_bad_status_quantity_names_the_status_field() {
    let yaml = MODERN_POD.replace(
        "allocatedResources: {cpu: 1500m}",
        "allocatedResources: {cpu: 1x}",
    );
    assert_eq!(
        pod_err(&yaml),
        "Pod shop/modern: status.containerStatuses[0].allocatedResources.cpu: invalid quantity \"1x\": unknown suffix \"x\" (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)"
    );
}
