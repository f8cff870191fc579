//! The `deployments` workload: what most pending pods of a real cluster look like. A few
//! hundred Deployments (ReplicaSets) and StatefulSets of 5-100 identical replicas, each with
//! a Service over it, some with required anti-affinity on the hostname or a hard spread over
//! zones, on nodes over 3 regions and 9 zones. Replicas of one workload are equal pods, so
//! equivalence classes apply; the spreading priorities change some scores after every
//! placement. `--arrival` orders the pending pods workload by workload (grouped, as a
//! rollout creates them) or round-robin over the workloads (interleaved).

use anyhow::Result;
use berth_engine::model::{
    Meta, Pod, PodSelector, SelectorKind, TopologySpreadConstraint, WhenUnsatisfiable,
};
use berth_engine::{Cluster, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::args::{Args, Arrival};
use super::measure::{schedule_timed, throughput};
use super::workload::{MI, apart_on_hostname, app_pod, label_selector, synthetic_node};

/// What one workload's replicas are.
struct Workload {
    name: String,
    kind: SelectorKind,
    replicas: usize,
    milli_cpu: i64,
    memory: i64,
    /// Required anti-affinity against its own pods on the hostname.
    anti_affinity: bool,
    /// A DoNotSchedule spread over zones, maxSkew 1.
    zone_spread: bool,
}

impl Workload {
    fn replica(&self, index: usize, node: Option<String>) -> Pod {
        let name = format!("{}-{index}", self.name);
        let owner = match self.kind {
            SelectorKind::StatefulSet => "StatefulSet",
            _ => "ReplicaSet",
        };
        let mut pod = app_pod(
            &name,
            &self.name,
            owner,
            (self.milli_cpu, self.memory),
            node,
        );
        if self.anti_affinity {
            pod.affinity
                .anti_required
                .push(apart_on_hostname(&self.name));
        }
        if self.zone_spread {
            pod.topology_spread_constraints
                .push(TopologySpreadConstraint {
                    max_skew: 1,
                    topology_key: "topology.kubernetes.io/zone".into(),
                    when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
                    label_selector: Some(label_selector("app", &self.name)),
                    min_domains: None,
                    node_affinity_policy: None,
                    node_taints_policy: None,
                });
        }
        pod
    }
}

/// Workloads of 5-100 replicas until they hold `total` pods; one in ten with required
/// anti-affinity (at most as many replicas as nodes), one in ten spread over zones, one in
/// five a StatefulSet.
fn workloads(rng: &mut ChaCha8Rng, total: usize, nodes: usize) -> Vec<Workload> {
    let mut out = Vec::new();
    let mut pods = 0;
    while pods < total {
        let i = out.len();
        let replicas = rng.random_range(5..=100).min(total - pods);
        let shape = rng.random_range(0..10);
        out.push(Workload {
            name: format!("app-{i}"),
            kind: if rng.random_range(0..5) == 0 {
                SelectorKind::StatefulSet
            } else {
                SelectorKind::ReplicaSet
            },
            replicas,
            milli_cpu: rng.random_range(1..=10) * 100,
            memory: rng.random_range(1..=8) * 128 * MI,
            anti_affinity: shape == 0 && replicas <= nodes,
            zone_spread: shape == 1,
        });
        pods += replicas;
    }
    out
}

/// Builds the cluster, binds the first `--running` replicas (the oldest of each workload)
/// to random nodes, and times scheduling the rest in the `--arrival` order.
pub(super) fn measure(args: &Args, scheduler: &mut Scheduler) -> Result<serde_json::Value> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let running = args.running();
    let workloads = workloads(&mut rng, running + args.pods(), args.nodes);
    let mut cluster = Cluster::new();
    for i in 0..args.nodes {
        cluster.add_node(synthetic_node(&mut rng, i))?;
    }
    for w in &workloads {
        for kind in [SelectorKind::Service, w.kind] {
            cluster.upsert_selector_object(&PodSelector {
                kind,
                meta: Meta {
                    name: w.name.clone(),
                    namespace: "bench".into(),
                    uid: format!("{}-{kind:?}", w.name),
                    ..Meta::default()
                },
                selector: Some(label_selector("app", &w.name)),
            });
        }
    }
    // Replicas in creation order per workload; the running ones are each workload's first,
    // taken round-robin so every workload has some running.
    let mut next = vec![0usize; workloads.len()];
    let mut placed = 0;
    while placed < running {
        for (w, n) in workloads.iter().zip(next.iter_mut()) {
            if placed == running {
                break;
            }
            if *n < w.replicas {
                let node = format!("node-{}", rng.random_range(0..args.nodes));
                cluster.add_pod(w.replica(*n, Some(node)))?;
                *n += 1;
                placed += 1;
            }
        }
    }
    let pending: Vec<Pod> = match args.arrival {
        Arrival::Grouped => workloads
            .iter()
            .zip(&next)
            .flat_map(|(w, &first)| (first..w.replicas).map(move |i| w.replica(i, None)))
            .collect(),
        Arrival::Interleaved => {
            let mut out = Vec::new();
            let mut cursor = next.clone();
            loop {
                let before = out.len();
                for (w, n) in workloads.iter().zip(cursor.iter_mut()) {
                    if *n < w.replicas {
                        out.push(w.replica(*n, None));
                        *n += 1;
                    }
                }
                if out.len() == before {
                    break out;
                }
            }
        }
    };
    let timed = schedule_timed(&mut cluster, scheduler, pending)?;
    let mut result = throughput(args, running, &cluster, timed);
    result["workloads"] = workloads.len().into();
    result["arrival"] = args.arrival.name().into();
    // How much the equivalence classes saved: node answers reused from an earlier replica,
    // and node answers asked of the rules while a class kept answers.
    let (reused, asked) = scheduler.class_counts();
    result["class_answers_reused"] = reused.into();
    result["class_answers_asked"] = asked.into();
    // Cycles whose totals were summed from a class's answers and the spreading rules'
    // scores by zone, without normalising a column.
    let summed = scheduler.summed_cycles();
    result["class_cycles_summed"] = summed.summed.into();
    result["class_cycles_ranked"] = summed.ranked.into();
    result["class_cycles_tallied"] = summed.tallied.into();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_hold_the_pods_asked_for_in_replica_sets_and_stateful_sets() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let w = workloads(&mut rng, 11_000, 5000);
        assert_eq!(w.iter().map(|w| w.replicas).sum::<usize>(), 11_000);
        assert!(w.iter().all(|w| (1..=100).contains(&w.replicas)));
        assert!((100..=400).contains(&w.len()), "{} workloads", w.len());
        for (what, n) in [
            (
                "anti-affinity",
                w.iter().filter(|w| w.anti_affinity).count(),
            ),
            ("zone spread", w.iter().filter(|w| w.zone_spread).count()),
            (
                "stateful sets",
                w.iter()
                    .filter(|w| w.kind == SelectorKind::StatefulSet)
                    .count(),
            ),
        ] {
            assert!(n > 0 && n < w.len() / 2, "{what}: {n} of {}", w.len());
        }
        // Replicas of one workload are equal but for their names.
        let a = w[0].replica(0, None);
        let mut b = w[0].replica(1, None);
        b.meta.name.clone_from(&a.meta.name);
        b.meta.uid.clone_from(&a.meta.uid);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
