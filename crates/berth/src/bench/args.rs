//! The arguments of `berth bench` and the cycle settings they make.

use std::path::PathBuf;

use berth_engine::CycleConfig;

use crate::Format;

/// A benchmark workload.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Pods with requests, Services and ReplicaSets, scheduled by the OpenShift policy.
    Basic,
    /// As basic, and every pod has required anti-affinity against its app on the hostname.
    AntiAffinity,
    /// Nodes labelled disk-ssd (half) and net-fast (a third), scheduled by a labelsPresence
    /// predicate and a labelPreference priority; `--compare-wasm` runs the same logic as
    /// WASM plugins beside it.
    NodeLabel,
    /// Every node full of priority-0 pods; each pending pod has priority 1000 and must
    /// preempt. Reports preemptions per second (`--running` is ignored: the nodes are
    /// filled to capacity).
    Preemption,
    /// As basic, plus a filter and prioritize HTTP extender on 127.0.0.1 served in process;
    /// runs with `nodeCacheCapable` off then on and reports the share of time in its calls.
    Extender,
    /// scheduler_perf's SchedulingBasic: equal plain pods (100m CPU, 500 MiB) on nodes
    /// without zones (1,000 init pods, 10,000 measured).
    SchedulingBasic,
    /// scheduler_perf's SchedulingNodeAffinity: every node in zone1, every pod requires zone
    /// zone1 or zone2 (5,000 init pods, 10,000 measured).
    NodeAffinity,
    /// scheduler_perf's SchedulingPodAffinity: every node in zone1, pods require a pod of
    /// theirs in the zone (5,000 init pods, 5,000 measured).
    PodAffinity,
    /// scheduler_perf's SchedulingPodAntiAffinity: pods require no pod of theirs on the node
    /// (1,000 init pods, 2,000 measured).
    PodAntiAffinity,
    /// scheduler_perf's SchedulingPreferredPodAffinity: pods prefer a node holding a pod of
    /// theirs (5,000 init pods, 5,000 measured).
    PreferredPodAffinity,
    /// scheduler_perf's TopologySpreading: nodes in three zones, measured pods spread over
    /// them with maxSkew 5, DoNotSchedule (5,000 init pods, 5,000 measured).
    TopologySpreading,
    /// scheduler_perf's PreferredTopologySpreading: as topology-spreading, ScheduleAnyway.
    PreferredTopologySpreading,
    /// scheduler_perf's MixedSchedulingBasePod: init pods of five kinds (plain, pod affinity,
    /// anti-affinity, preferred affinity and anti-affinity; 2,000 of each), 5,000 plain
    /// measured pods.
    Mixed,
    /// scheduler_perf's SchedulingInTreePVs: every pod mounts its own claim, bound to an AWS
    /// EBS PersistentVolume (1,000 init pods, 2,000 measured).
    Volumes,
    /// Deployments and StatefulSets of 5-100 identical replicas with a Service each, some with
    /// required anti-affinity or a hard zone spread, under the OpenShift policy (`--arrival`
    /// orders their pods).
    Deployments,
}

/// The order the `deployments` workload's pending pods arrive in.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Arrival {
    /// Workload by workload, as rollouts create them.
    Grouped,
    /// Round-robin over the workloads.
    Interleaved,
}

impl Arrival {
    pub(super) fn name(self) -> &'static str {
        match self {
            Arrival::Grouped => "grouped",
            Arrival::Interleaved => "interleaved",
        }
    }
}

impl Workload {
    pub(super) fn name(self) -> &'static str {
        match self {
            Workload::Basic => "basic",
            Workload::AntiAffinity => "anti-affinity",
            Workload::NodeLabel => "node-label",
            Workload::Preemption => "preemption",
            Workload::Extender => "extender",
            Workload::SchedulingBasic => "scheduling-basic",
            Workload::NodeAffinity => "node-affinity",
            Workload::PodAffinity => "pod-affinity",
            Workload::PodAntiAffinity => "pod-anti-affinity",
            Workload::PreferredPodAffinity => "preferred-pod-affinity",
            Workload::TopologySpreading => "topology-spreading",
            Workload::PreferredTopologySpreading => "preferred-topology-spreading",
            Workload::Mixed => "mixed",
            Workload::Volumes => "volumes",
            Workload::Deployments => "deployments",
        }
    }

    /// scheduler_perf's (init pods, measured pods) of the 5,000-node case upstream publishes
    /// a threshold for; None for Berth's own workloads.
    pub(super) fn scheduler_perf_counts(self) -> Option<(usize, usize)> {
        match self {
            Workload::NodeAffinity => Some((5000, 10000)),
            Workload::PodAffinity
            | Workload::PreferredPodAffinity
            | Workload::TopologySpreading
            | Workload::PreferredTopologySpreading => Some((5000, 5000)),
            Workload::PodAntiAffinity => Some((1000, 2000)),
            Workload::SchedulingBasic => Some((1000, 10000)),
            Workload::Mixed => Some((2000, 5000)),
            Workload::Volumes => Some((1000, 2000)),
            Workload::Basic
            | Workload::AntiAffinity
            | Workload::NodeLabel
            | Workload::Preemption
            | Workload::Extender
            | Workload::Deployments => None,
        }
    }
}

/// Arguments of `berth bench`.
#[derive(clap::Args)]
pub struct Args {
    /// The workload.
    #[arg(long, value_enum, default_value_t = Workload::Basic)]
    pub(super) workload: Workload,
    /// Number of nodes.
    #[arg(long, default_value_t = 5000)]
    pub(super) nodes: usize,
    /// Number of pods running before the benchmark starts (default 1,000; scheduler_perf's
    /// init pods for its workloads, of each kind for `mixed`).
    #[arg(long)]
    pub(super) running: Option<usize>,
    /// Number of pending pods to schedule (default 10,000; 1,000 for `--workload
    /// preemption`; scheduler_perf's measured pods for its workloads).
    #[arg(long)]
    pub(super) pods: Option<usize>,
    /// Policy file (default: the bundled OpenShift policy).
    #[arg(long)]
    pub(super) policy: Option<PathBuf>,
    /// Seed of the synthetic cluster and of tie-breaking.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Percentage of nodes to find feasible before scoring (100 = score every feasible node).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub(super) percentage_of_nodes_to_score: u32,
    /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
    /// (default: v1.22's, DefaultPodTopologySpread=true).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    pub(super) feature_gates: berth_engine::FeatureGates,
    /// Ask every node for every pod, as upstream does, instead of reusing the answers kept
    /// for equal pods (equivalence classes); decisions are the same, only the time differs.
    #[arg(long)]
    pub(super) no_equivalence_classes: bool,
    /// With `--workload deployments`: the order the pending pods arrive in.
    #[arg(long, value_enum, default_value_t = Arrival::Grouped)]
    pub(super) arrival: Arrival,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(super) output: Format,
    /// With `--workload node-label`: also run the same rules as WASM plugins
    /// (node-label-filter.wasm, node-label-score.wasm) and print both with the ratio.
    #[arg(long)]
    pub(super) compare_wasm: bool,
    /// Directory of WASM plugin modules (default: the policy file's directory, or
    /// plugins/dist for `--compare-wasm`).
    #[arg(long)]
    pub(super) plugins: Option<PathBuf>,
    /// Instead of scheduling, measure hot reload: write a new version of a plugin module this
    /// many times and time each until it is live.
    #[arg(long)]
    pub(super) reload_latency: Option<usize>,
}

impl Args {
    /// The number of pending pods.
    pub(super) fn pods(&self) -> usize {
        self.pods.unwrap_or(match self.workload {
            Workload::Preemption => 1000,
            w => w
                .scheduler_perf_counts()
                .map_or(10000, |(_, measured)| measured),
        })
    }

    /// The number of pods running before the measured ones.
    pub(super) fn running(&self) -> usize {
        self.running.unwrap_or_else(|| {
            self.workload
                .scheduler_perf_counts()
                .map_or(1000, |(init, _)| init)
        })
    }
}

/// The cycle settings of a run.
pub(super) fn config(args: &Args) -> CycleConfig {
    CycleConfig {
        seed: args.seed,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        feature_gates: args.feature_gates,
        equivalence_classes: !args.no_equivalence_classes,
        ..CycleConfig::default()
    }
}
