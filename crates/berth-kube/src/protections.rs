//! The history-based protections over a cluster file: the circuit breakers and quarantines a
//! snapshot's pod and node statuses imply at a given time, as a daemon that had watched the
//! cluster would hold them (see [`berth_engine::health`]).

use std::collections::BTreeSet;

use berth_engine::Cluster;
use berth_engine::health::breaker::CircuitBreakers;
use berth_engine::health::quarantine::{Fact, Quarantines, RELEASE_ANNOTATION};
use berth_engine::health::state::Circuit;
use berth_engine::health::{PodStart, StartState, Trackers, Workload, format_utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::ClusterObjects;
use crate::convert::{node_readiness, pod_start};

/// Reads an RFC 3339 time (`2026-11-23T10:00:00Z`) as seconds since the epoch.
pub fn parse_time(text: &str) -> Result<i64, String> {
    serde_json::from_value::<Time>(serde_json::Value::String(text.to_owned()))
        .map(|t| t.0.as_second())
        .map_err(|e| {
            format!("invalid time {text:?}: {e}; expected RFC 3339, e.g. 2026-11-23T10:00:00Z")
        })
}

/// The snapshot's own time: the newest time any pod or node status in it records (node
/// heartbeats are usually the newest). Protections judge a snapshot as of when it was taken,
/// not as of when it is read.
pub fn snapshot_time(objects: &ClusterObjects) -> Option<i64> {
    let starts = objects
        .pods
        .iter()
        .filter_map(pod_start)
        .map(|s| match s.state {
            StartState::Started { at } | StartState::Failed { at, .. } => at.max(s.placed_at),
            StartState::Waiting { .. } => s.placed_at,
        });
    let nodes = objects
        .nodes
        .iter()
        .filter_map(|n| n.status.as_ref()?.conditions.as_ref())
        .flatten()
        .flat_map(|c| {
            [
                c.last_heartbeat_time.as_ref(),
                c.last_transition_time.as_ref(),
            ]
        })
        .flatten()
        .map(|t| t.0.as_second());
    starts.chain(nodes).max()
}

/// Every assigned pod's start in the snapshot.
pub fn pod_starts(objects: &ClusterObjects) -> Vec<PodStart> {
    objects.pods.iter().filter_map(pod_start).collect()
}

/// The workloads whose owner object carries the release annotation.
pub fn released_workloads(objects: &ClusterObjects) -> BTreeSet<Workload> {
    fn released(kind: &str, meta: &ObjectMeta) -> Option<Workload> {
        meta.annotations
            .as_ref()?
            .contains_key(RELEASE_ANNOTATION)
            .then(|| Workload {
                kind: kind.to_owned(),
                namespace: meta
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_owned()),
                name: meta.name.clone().unwrap_or_default(),
            })
    }
    let replica_sets = objects
        .replica_sets
        .iter()
        .filter_map(|o| released("ReplicaSet", &o.metadata));
    let stateful_sets = objects
        .stateful_sets
        .iter()
        .filter_map(|o| released("StatefulSet", &o.metadata));
    let controllers = objects
        .replication_controllers
        .iter()
        .filter_map(|o| released("ReplicationController", &o.metadata));
    replica_sets
        .chain(stateful_sets)
        .chain(controllers)
        .collect()
}

/// Containment's facts in the snapshot: every placement of a controlled pod (from `starts`,
/// the snapshot's [`pod_starts`]), and every node's last readiness change.
pub fn quarantine_facts(objects: &ClusterObjects, starts: &[PodStart]) -> Vec<Fact> {
    let placements = starts.iter().filter_map(|s| {
        Some(Fact::Placed {
            owner: s.owner.clone()?,
            node: s.node.clone(),
            at: s.placed_at,
        })
    });
    let readiness = objects.nodes.iter().filter_map(|node| {
        let (ready, at) = node_readiness(node)?;
        Some(Fact::Readiness {
            node: node.metadata.name.clone()?,
            ready,
            at,
        })
    });
    placements.chain(readiness).collect()
}

/// Runs the trackers `trackers` names over the snapshot up to `now` and publishes their
/// verdicts into `cluster`; returns a line per open breaker or quarantine, for the user.
pub fn apply(
    cluster: &mut Cluster,
    trackers: Trackers,
    objects: &ClusterObjects,
    now: i64,
) -> Vec<String> {
    let mut notes = Vec::new();
    let starts = pod_starts(objects);
    if let Some(config) = trackers.breaker {
        let breakers = CircuitBreakers::rebuild(config, &starts, now);
        let view = breakers.view();
        let mut nodes: Vec<(&String, &Circuit)> = view.iter().collect();
        nodes.sort_by_key(|(node, _)| *node);
        for (node, circuit) in nodes {
            notes.push(match circuit {
                Circuit::Open { since, until, failures } => format!(
                    "node {node}: circuit breaker open since {} until {} ({})",
                    format_utc(*since),
                    format_utc(*until),
                    failures
                        .iter()
                        .map(|(pod, _, reason)| format!("{pod}: {reason}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Circuit::HalfOpen { probe: None } => {
                    format!("node {node}: circuit breaker half-open, the next pod placed there is its probe")
                }
                Circuit::HalfOpen { probe: Some(probe) } => {
                    format!("node {node}: circuit breaker half-open, waiting for probe pod {probe}")
                }
            });
        }
        cluster.protections_mut().set_circuits(view);
    }
    if let Some(config) = trackers.quarantine {
        let quarantines = Quarantines::rebuild(
            config,
            &quarantine_facts(objects, &starts),
            released_workloads(objects),
            now,
        );
        let view = quarantines.view();
        for (workload, q) in &view {
            notes.push(format!(
                "{workload}: quarantined since {} until {}: nodes {} went NotReady shortly after receiving its pods",
                format_utc(q.since),
                format_utc(q.until),
                q.nodes.join(", ")
            ));
        }
        cluster.protections_mut().set_quarantines(view);
    }
    notes
}
