//! scheduler_perf's workloads (kubernetes/kubernetes, test/integration/scheduler_perf): its
//! node-default shape (4 CPUs, 32 GiB, 110 pods) with the zone labels each workload gives,
//! its pod templates (100m CPU, 500 MiB; the affinity, spreading and volume sections), init
//! pods scheduled first, untimed, as upstream creates them and waits, then the measured pods.
//!
//! After the run every placement is checked against the workload's hard constraints
//! (resources, node affinity, required pod anti-affinity, the spreading skew, volume limits),
//! so a fast but wrong scheduler fails the benchmark instead of reporting a figure.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Result, bail};
use berth_engine::labels::{Operator, Requirement};
use berth_engine::model::VolumeMode;
use berth_engine::model::{
    Container, Meta, Node, NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, Pod,
    PodAffinityTerm, PvSource, StringMap, TopologySpreadConstraint, Volume, VolumeSource,
    WeightedPodAffinityTerm, WhenUnsatisfiable,
};
use berth_engine::rules::volume_util::BIND_COMPLETED_ANNOTATION;
use berth_engine::{Cluster, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::args::{Args, Workload};
use super::measure::{schedule_timed, throughput};
use super::workload::{GI, MI, label_selector, ready_node};

/// node-default.yaml's capacity.
const NODE_MILLI_CPU: i64 = 4000;
const NODE_MEMORY: i64 = 32 * GI;
const NODE_PODS: i64 = 110;
/// Every pod template's requests.
const POD_MILLI_CPU: i64 = 100;
const POD_MEMORY: i64 = 500 * MI;
const ZONE_KEY: &str = "topology.kubernetes.io/zone";
const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// The spreading templates' maxSkew.
const MAX_SKEW: usize = 5;
/// v1.22's MaxEBSVolumeCount on a node without an instance-type label or allocatable limit.
const EBS_LIMIT: usize = 39;
/// Upstream creates init pods in sched-0 and measured pods in sched-1 where the templates'
/// affinity terms name both.
const INIT_NAMESPACE: &str = "sched-0";
const MEASURED_NAMESPACE: &str = "sched-1";
const COLOR: &str = "color";

/// scheduler_perf's pod templates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Template {
    /// pod-default.yaml.
    Default,
    /// pod-with-node-affinity.yaml: zone In (zone1, zone2).
    NodeAffinity,
    /// pod-with-pod-affinity.yaml: color=blue, requires a blue pod in the zone.
    PodAffinity,
    /// pod-with-pod-anti-affinity.yaml: color=green, requires no green pod on the node.
    PodAntiAffinity,
    /// pod-with-preferred-pod-affinity.yaml: color=red, prefers a red pod on the node.
    PreferredPodAffinity,
    /// pod-with-preferred-pod-anti-affinity.yaml: color=yellow, prefers none on the node.
    PreferredPodAntiAffinity,
    /// pod-with-topology-spreading.yaml: color=blue, maxSkew 5 over zones, DoNotSchedule.
    Spreading,
    /// pod-with-preferred-topology-spreading.yaml: the same, ScheduleAnyway.
    PreferredSpreading,
    /// pod-default.yaml with a claim bound to its own AWS EBS volume (pv-aws.yaml, pvc.yaml).
    WithVolume,
}

/// A workload's shape: the zone values nodes get (one at random each, as upstream's
/// labelNodePrepareStrategy; none without), the init pods' templates (`--running` of each)
/// and the measured pods' template.
pub(super) struct Plan {
    zones: &'static [&'static str],
    init: &'static [Template],
    measured: Template,
}

/// The plan of a scheduler_perf workload; None for Berth's own workloads.
pub(super) fn plan(workload: Workload) -> Option<Plan> {
    use Template as T;
    const ZONE1: &[&str] = &["zone1"];
    const MOONS: &[&str] = &["moon-1", "moon-2", "moon-3"];
    let (zones, init, measured): (&[&str], &[Template], Template) = match workload {
        Workload::SchedulingBasic => (&[], &[T::Default], T::Default),
        Workload::NodeAffinity => (ZONE1, &[T::NodeAffinity], T::NodeAffinity),
        Workload::PodAffinity => (ZONE1, &[T::PodAffinity], T::PodAffinity),
        Workload::PodAntiAffinity => (&[], &[T::PodAntiAffinity], T::PodAntiAffinity),
        Workload::PreferredPodAffinity => {
            (&[], &[T::PreferredPodAffinity], T::PreferredPodAffinity)
        }
        Workload::TopologySpreading => (MOONS, &[T::Default], T::Spreading),
        Workload::PreferredTopologySpreading => (MOONS, &[T::Default], T::PreferredSpreading),
        Workload::Mixed => (
            ZONE1,
            &[
                T::Default,
                T::PodAffinity,
                T::PodAntiAffinity,
                T::PreferredPodAffinity,
                T::PreferredPodAntiAffinity,
            ],
            T::Default,
        ),
        Workload::Volumes => (&[], &[T::WithVolume], T::WithVolume),
        Workload::Basic
        | Workload::AntiAffinity
        | Workload::NodeLabel
        | Workload::Preemption
        | Workload::Extender
        | Workload::Deployments => return None,
    };
    Some(Plan {
        zones,
        init,
        measured,
    })
}

/// Builds the nodes, schedules the init pods, times the measured ones and checks every
/// placement.
pub(super) fn measure(
    args: &Args,
    plan: &Plan,
    scheduler: &mut Scheduler,
) -> Result<serde_json::Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut cluster = Cluster::new();
    let mut zones = HashMap::new();
    for i in 0..args.nodes {
        let zone =
            (!plan.zones.is_empty()).then(|| plan.zones[rng.random_range(0..plan.zones.len())]);
        let node = node(i, zone);
        zones.insert(node.meta.name.clone(), zone);
        cluster.add_node(node)?;
    }
    let mut init = Vec::new();
    for (k, template) in plan.init.iter().enumerate() {
        for i in 0..args.running() {
            let name = format!("init-{k}-{i}");
            init.push(pod(&mut cluster, *template, &name, INIT_NAMESPACE));
        }
    }
    let wanted = init.len();
    let placed = schedule_timed(&mut cluster, scheduler, init)?.scheduled;
    if placed < wanted {
        bail!(
            "only {placed} of {wanted} init pods fit on {} nodes; give more --nodes or fewer --running",
            args.nodes
        );
    }
    let measured: Vec<Pod> = (0..args.pods())
        .map(|i| {
            pod(
                &mut cluster,
                plan.measured,
                &format!("pod-{i}"),
                MEASURED_NAMESPACE,
            )
        })
        .collect();
    let timed = schedule_timed(&mut cluster, scheduler, measured)?;
    check(&cluster, &zones)?;
    Ok(throughput(args, placed, &cluster, timed))
}

/// node-default.yaml, named and labelled.
fn node(i: usize, zone: Option<&str>) -> Node {
    let name = format!("node-{i}");
    let mut labels = StringMap::from([(HOSTNAME_KEY.to_string(), name.clone())]);
    if let Some(zone) = zone {
        labels.insert(ZONE_KEY.into(), zone.into());
    }
    ready_node(name, labels, NODE_MILLI_CPU, NODE_MEMORY, NODE_PODS)
}

/// A pod of `template`; for `WithVolume` also its bound claim and volume, added to `cluster`.
fn pod(cluster: &mut Cluster, template: Template, name: &str, namespace: &str) -> Pod {
    let mut pod = Pod {
        meta: Meta {
            name: name.into(),
            namespace: namespace.into(),
            uid: format!("{namespace}/{name}"),
            ..Meta::default()
        },
        scheduler_name: "berth".into(),
        containers: vec![Container {
            name: "pause".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            requests: vec![("cpu".into(), POD_MILLI_CPU), ("memory".into(), POD_MEMORY)],
            ports: Vec::new(),
            ..Container::default()
        }],
        ..Pod::default()
    };
    let both_namespaces = || vec![INIT_NAMESPACE.to_string(), MEASURED_NAMESPACE.to_string()];
    let term = |color: &str, topology_key: &str| PodAffinityTerm {
        label_selector: Some(label_selector(COLOR, color)),
        namespaces: both_namespaces(),
        topology_key: topology_key.into(),
        ..PodAffinityTerm::default()
    };
    let spread = |when_unsatisfiable| TopologySpreadConstraint {
        max_skew: MAX_SKEW as i32,
        topology_key: ZONE_KEY.into(),
        when_unsatisfiable,
        label_selector: Some(label_selector(COLOR, "blue")),
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
    };
    let color = match template {
        Template::Default => None,
        Template::NodeAffinity => {
            pod.affinity.node_required = Some(vec![NodeSelectorTerm {
                match_expressions: vec![Requirement {
                    key: ZONE_KEY.into(),
                    operator: Operator::In,
                    values: vec!["zone1".into(), "zone2".into()],
                }],
                match_fields: Vec::new(),
            }]);
            None
        }
        Template::PodAffinity => {
            pod.affinity.pod_required.push(term("blue", ZONE_KEY));
            Some("blue")
        }
        Template::PodAntiAffinity => {
            pod.affinity.anti_required.push(term("green", HOSTNAME_KEY));
            Some("green")
        }
        Template::PreferredPodAffinity => {
            pod.affinity.pod_preferred.push(WeightedPodAffinityTerm {
                weight: 1,
                term: term("red", HOSTNAME_KEY),
            });
            Some("red")
        }
        Template::PreferredPodAntiAffinity => {
            pod.affinity.anti_preferred.push(WeightedPodAffinityTerm {
                weight: 1,
                term: term("yellow", HOSTNAME_KEY),
            });
            Some("yellow")
        }
        Template::Spreading => {
            pod.topology_spread_constraints
                .push(spread(WhenUnsatisfiable::DoNotSchedule));
            Some("blue")
        }
        Template::PreferredSpreading => {
            pod.topology_spread_constraints
                .push(spread(WhenUnsatisfiable::ScheduleAnyway));
            Some("blue")
        }
        Template::WithVolume => {
            add_bound_volume(cluster, &mut pod);
            None
        }
    };
    if let Some(color) = color {
        pod.meta.labels.insert(COLOR.into(), color.into());
    }
    pod
}

/// A claim of the pod's and the AWS EBS volume it is bound to, as scheduler_perf's
/// persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath make them: 1 GiB,
/// ReadOnlyMany, bound before the pod is created.
fn add_bound_volume(cluster: &mut Cluster, pod: &mut Pod) {
    let ns = pod.meta.namespace.clone();
    let (pv_name, claim_name) = (
        format!("pv-{ns}-{}", pod.meta.name),
        format!("pvc-{}", pod.meta.name),
    );
    let access_modes = vec!["ReadOnlyMany".to_string()];
    cluster.upsert_persistent_volume(PersistentVolume {
        meta: Meta {
            name: pv_name.clone(),
            ..Meta::default()
        },
        capacity: GI,
        storage_class_name: String::new(),
        access_modes: access_modes.clone(),
        volume_mode: VolumeMode::Filesystem,
        volume_attributes_class_name: String::new(),
        node_affinity: None,
        claim_ref: Some((ns.clone(), claim_name.clone())),
        source: PvSource::AwsElasticBlockStore {
            volume_id: format!("vol-{ns}-{}", pod.meta.name),
        },
        phase: "Bound".into(),
    });
    cluster.upsert_persistent_volume_claim(PersistentVolumeClaim {
        meta: Meta {
            name: claim_name.clone(),
            namespace: ns,
            annotations: [(BIND_COMPLETED_ANNOTATION.to_string(), "yes".to_string())].into(),
            ..Meta::default()
        },
        volume_name: pv_name,
        storage_class_name: Some(String::new()),
        access_modes,
        volume_mode: VolumeMode::Filesystem,
        volume_attributes_class_name: String::new(),
        request: GI,
        selector: None,
    });
    pod.volumes.push(Volume {
        name: "data".into(),
        source: VolumeSource::Pvc { claim_name },
    });
}

/// Fails on a placement that breaks a hard constraint of the templates: a node over its
/// CPU, memory or pod capacity or over the EBS volume limit, a node-affinity pod outside
/// zone1/zone2, two pods of the required anti-affinity's color on one node, or the
/// DoNotSchedule spreading pods' counts in two zones apart by more than maxSkew.
fn check(cluster: &Cluster, zones: &HashMap<String, Option<&'static str>>) -> Result<()> {
    #[derive(Default)]
    struct Load {
        milli_cpu: i64,
        memory: i64,
        pods: i64,
        volumes: usize,
        green: usize,
    }
    let mut loads: HashMap<&str, Load> = HashMap::new();
    // Every zone that has a node counts, with or without spreading pods.
    let mut spread: BTreeMap<&str, usize> = zones.values().flatten().map(|z| (*z, 0)).collect();
    for (_, info) in cluster.pods() {
        let Some(node) = info.node else { continue };
        let node = cluster.node(node).name();
        let zone = zones.get(node).copied().flatten();
        let pod = &info.pod;
        let load = loads.entry(node).or_default();
        load.milli_cpu += POD_MILLI_CPU;
        load.memory += POD_MEMORY;
        load.pods += 1;
        load.volumes += pod.volumes.len();
        if pod.meta.labels.get(COLOR).map(String::as_str) == Some("green") {
            load.green += 1;
        }
        if pod.affinity.node_required.is_some() && !matches!(zone, Some("zone1" | "zone2")) {
            bail!("{} is on {node}, outside zone1 and zone2", pod.key());
        }
        let hard_spread = pod
            .topology_spread_constraints
            .iter()
            .any(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule);
        if let (true, Some(zone)) = (hard_spread, zone) {
            *spread.entry(zone).or_default() += 1;
        }
    }
    for (node, load) in &loads {
        if load.milli_cpu > NODE_MILLI_CPU || load.memory > NODE_MEMORY || load.pods > NODE_PODS {
            bail!("{node} holds more than its capacity: {} pods", load.pods);
        }
        if load.volumes > EBS_LIMIT {
            bail!(
                "{node} has {} EBS volumes, over the limit of {EBS_LIMIT}",
                load.volumes
            );
        }
        if load.green > 1 {
            bail!(
                "{node} holds {} pods with required anti-affinity against each other",
                load.green
            );
        }
    }
    let (min, max) = (
        spread.values().min().copied().unwrap_or(0),
        spread.values().max().copied().unwrap_or(0),
    );
    if max - min > MAX_SKEW {
        bail!("spreading pods per zone {spread:?} are apart by more than maxSkew {MAX_SKEW}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes with the given zones and pods of a template placed on given nodes, then `check`.
    fn check_placed(
        node_zones: &[Option<&'static str>],
        pods: &[(Template, usize, usize)],
    ) -> Result<()> {
        let mut cluster = Cluster::new();
        let mut zones = HashMap::new();
        for (i, zone) in node_zones.iter().enumerate() {
            let node = node(i, *zone);
            zones.insert(node.meta.name.clone(), *zone);
            cluster.add_node(node)?;
        }
        for (k, (template, count, on)) in pods.iter().enumerate() {
            for i in 0..*count {
                let mut p = pod(
                    &mut cluster,
                    *template,
                    &format!("p-{k}-{i}"),
                    INIT_NAMESPACE,
                );
                p.node_name = Some(format!("node-{on}"));
                cluster.add_pod(p)?;
            }
        }
        check(&cluster, &zones)
    }

    #[test]
    fn check_fails_on_each_broken_constraint() {
        use Template as T;
        let moons = [Some("moon-1"), Some("moon-2")];
        // (case, the nodes' zones, pods as (template, how many, on node i), the error wanted)
        type Case<'a> = (
            &'a str,
            &'a [Option<&'static str>],
            &'a [(Template, usize, usize)],
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            (
                "apart anti-affinity",
                &[None, None],
                &[(T::PodAntiAffinity, 1, 0), (T::PodAntiAffinity, 1, 1)],
                None,
            ),
            (
                "shared anti-affinity",
                &[None, None],
                &[(T::PodAntiAffinity, 2, 0)],
                Some("required anti-affinity"),
            ),
            (
                "skew at maxSkew",
                &moons,
                &[(T::Spreading, MAX_SKEW, 0)],
                None,
            ),
            (
                "skew over maxSkew",
                &moons,
                &[(T::Spreading, MAX_SKEW + 1, 0)],
                Some("maxSkew"),
            ),
            (
                "soft skew over maxSkew",
                &moons,
                &[(T::PreferredSpreading, MAX_SKEW + 1, 0)],
                None,
            ),
            (
                "node affinity kept",
                &[Some("zone1")],
                &[(T::NodeAffinity, 1, 0)],
                None,
            ),
            (
                "node affinity broken",
                &moons,
                &[(T::NodeAffinity, 1, 0)],
                Some("outside zone1"),
            ),
            ("full node", &[None], &[(T::Default, 40, 0)], None),
            (
                "over capacity",
                &[None],
                &[(T::Default, 41, 0)],
                Some("capacity"),
            ),
            (
                "over the EBS limit",
                &[None],
                &[(T::WithVolume, EBS_LIMIT + 1, 0)],
                Some("EBS volumes"),
            ),
        ];
        for (name, zones, pods, want) in cases {
            let got = check_placed(zones, pods);
            match (want, got) {
                (None, Ok(())) => {}
                (Some(needle), Err(e)) => {
                    assert!(e.to_string().contains(needle), "{name}: {e}");
                }
                (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
            }
        }
    }
}
