//! What kubelets report, summarised for the history-based protections
//! ([`berth_engine::health`]): how far an assigned pod's start got, and when a node's
//! readiness last changed. Status fields are written by kubelets, not users, so a field that
//! is missing or odd is read as no evidence rather than refused.

use berth_engine::health::{PodStart, StartState, Workload, is_node_reason};
use k8s_openapi::api::core::v1::{ContainerStatus, Node, Pod, PodCondition};

/// Waiting reasons that only say kubelet is still working on the pod.
const STILL_STARTING: &[&str] = &["ContainerCreating", "PodInitializing"];

/// The start of an assigned pod, or None for a pod on no node.
pub fn pod_start(pod: &Pod) -> Option<PodStart> {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())?;
    let meta = &pod.metadata;
    let namespace = meta
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let name = meta.name.clone().unwrap_or_default();
    let key = format!("{namespace}/{name}");
    let owner = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| Workload {
            kind: o.kind.clone(),
            namespace: namespace.clone(),
            name: o.name.clone(),
        });
    let status = pod.status.as_ref();
    let conditions: &[PodCondition] = status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let condition = |kind: &str| conditions.iter().find(|c| c.type_ == kind);
    let transition = |c: &PodCondition| c.last_transition_time.as_ref().map(|t| t.0.as_second());
    let created = meta.creation_timestamp.as_ref().map(|t| t.0.as_second());
    let placed_at = condition("PodScheduled")
        .filter(|c| c.status == "True")
        .and_then(transition)
        .or_else(|| {
            status
                .and_then(|s| s.start_time.as_ref())
                .map(|t| t.0.as_second())
        })
        .or(created)
        .unwrap_or(0);
    // When kubelet last changed its mind about the pod being ready: the time a failure
    // shows in the status.
    let reported_at = condition("ContainersReady")
        .or_else(|| condition("Ready"))
        .and_then(transition)
        .unwrap_or(placed_at)
        .max(placed_at);
    let containers: Vec<&ContainerStatus> = status
        .into_iter()
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .collect();
    let state = if let Some(at) = first_start(&containers) {
        StartState::Started { at }
    } else if let Some(reason) = status
        .filter(|s| s.phase.as_deref() == Some("Failed"))
        .and_then(|s| s.reason.clone())
    {
        StartState::Failed {
            at: reported_at,
            reason,
        }
    } else if let Some(reason) = failure_reason(&containers) {
        StartState::Failed {
            at: reported_at,
            reason,
        }
    } else {
        let sandbox_ready = match condition("PodReadyToStartContainers") {
            Some(c) => c.status != "False",
            None => {
                containers.is_empty()
                    || !containers
                        .iter()
                        .all(|c| waiting_reason(c) == Some("ContainerCreating"))
            }
        };
        StartState::Waiting { sandbox_ready }
    };
    Some(PodStart {
        uid: meta
            .uid
            .clone()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| key.clone()),
        key,
        node,
        owner,
        placed_at,
        state,
    })
}

/// A node's Ready condition: whether it is True, and since when. None without the condition
/// or its transition time.
pub fn node_readiness(node: &Node) -> Option<(bool, i64)> {
    let ready = node
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    let at = ready.last_transition_time.as_ref()?.0.as_second();
    Some((ready.status == "True", at))
}

fn waiting_reason(status: &ContainerStatus) -> Option<&str> {
    status.state.as_ref()?.waiting.as_ref()?.reason.as_deref()
}

/// When the first container started, if one has: running now, or terminated (now or
/// before) after starting. A container the runtime could not run at all did not start.
fn first_start(containers: &[&ContainerStatus]) -> Option<i64> {
    let mut first: Option<i64> = None;
    for c in containers {
        for state in [c.state.as_ref(), c.last_state.as_ref()]
            .into_iter()
            .flatten()
        {
            let started = state
                .running
                .as_ref()
                .and_then(|r| r.started_at.as_ref())
                .or_else(|| {
                    state
                        .terminated
                        .as_ref()
                        .filter(|t| !t.reason.as_deref().is_some_and(is_node_reason))
                        .and_then(|t| t.started_at.as_ref())
                });
            if let Some(at) = started.map(|t| t.0.as_second()) {
                first = Some(first.map_or(at, |f| f.min(at)));
            }
        }
    }
    first
}

/// The reason kubelet gives for a container that cannot start: a waiting reason other than
/// "still starting", or a runtime that could not run it. Node reasons come first, so a pod
/// with both kinds is charged to the node only if the node's is there.
fn failure_reason(containers: &[&ContainerStatus]) -> Option<String> {
    let mut reasons = containers.iter().filter_map(|c| {
        let state = c.state.as_ref()?;
        state
            .waiting
            .as_ref()
            .and_then(|w| w.reason.as_deref())
            .filter(|r| !STILL_STARTING.contains(r))
            .or_else(|| {
                state
                    .terminated
                    .as_ref()
                    .and_then(|t| t.reason.as_deref())
                    .filter(|r| is_node_reason(r))
            })
    });
    let all: Vec<&str> = reasons.by_ref().collect();
    all.iter()
        .find(|r| is_node_reason(r))
        .or_else(|| all.first())
        .map(|r| (*r).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1",
                "creationTimestamp": "2026-11-23T10:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                    "uid": "rs", "controller": true}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
            "status": status
        }))
        .expect("a pod")
    }

    const SCHEDULED: &str = "2026-11-23T10:00:01Z";
    const T0: i64 = 1_795_428_000; // 2026-11-23T10:00:00Z

    fn conditions(extra: serde_json::Value) -> serde_json::Value {
        let mut list = vec![serde_json::json!(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": SCHEDULED})];
        if let serde_json::Value::Array(more) = extra {
            list.extend(more);
        }
        serde_json::Value::Array(list)
    }

    #[test]
    fn starts_as_kubelet_reports_them() {
        let waiting = |reason: &str| {
            serde_json::json!([{"name": "c", "image": "x", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason}}}])
        };
        let not_ready_at = serde_json::json!([{"type": "ContainersReady", "status": "False",
            "lastTransitionTime": "2026-11-23T10:00:05Z"}]);
        let cases: Vec<(&str, serde_json::Value, StartState)> = vec![
            (
                "no status yet",
                serde_json::json!({}),
                StartState::Waiting {
                    sandbox_ready: true,
                },
            ),
            (
                "sandbox not created (condition)",
                serde_json::json!({"conditions": conditions(serde_json::json!([
                    {"type": "PodReadyToStartContainers", "status": "False"}])),
                    "containerStatuses": waiting("ContainerCreating")}),
                StartState::Waiting {
                    sandbox_ready: false,
                },
            ),
            (
                "sandbox not created (older kubelet)",
                serde_json::json!({"conditions": conditions(serde_json::json!([])),
                    "containerStatuses": waiting("ContainerCreating")}),
                StartState::Waiting {
                    sandbox_ready: false,
                },
            ),
            (
                "sandbox up, image pulling",
                serde_json::json!({"conditions": conditions(serde_json::json!([
                    {"type": "PodReadyToStartContainers", "status": "True"}])),
                    "containerStatuses": waiting("ContainerCreating")}),
                StartState::Waiting {
                    sandbox_ready: true,
                },
            ),
            (
                "runtime error",
                serde_json::json!({"conditions": conditions(not_ready_at.clone()),
                    "containerStatuses": waiting("CreateContainerError")}),
                StartState::Failed {
                    at: T0 + 5,
                    reason: "CreateContainerError".into(),
                },
            ),
            (
                "image pull",
                serde_json::json!({"conditions": conditions(not_ready_at.clone()),
                    "containerStatuses": waiting("ImagePullBackOff")}),
                StartState::Failed {
                    at: T0 + 5,
                    reason: "ImagePullBackOff".into(),
                },
            ),
            (
                "refused by kubelet admission",
                serde_json::json!({"phase": "Failed", "reason": "OutOfcpu",
                    "conditions": conditions(serde_json::json!([]))}),
                StartState::Failed {
                    at: T0 + 1,
                    reason: "OutOfcpu".into(),
                },
            ),
            (
                "running",
                serde_json::json!({"conditions": conditions(serde_json::json!([])),
                    "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {"startedAt": "2026-11-23T10:00:09Z"}}}]}),
                StartState::Started { at: T0 + 9 },
            ),
            (
                "crash looping started once",
                serde_json::json!({"conditions": conditions(serde_json::json!([])),
                    "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "startedAt": "2026-11-23T10:00:07Z"}}}]}),
                StartState::Started { at: T0 + 7 },
            ),
            (
                "a container the runtime could not run",
                serde_json::json!({"conditions": conditions(not_ready_at),
                    "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"terminated": {"exitCode": 128,
                    "reason": "ContainerCannotRun", "startedAt": "1970-01-01T00:00:00Z"}}}]}),
                StartState::Failed {
                    at: T0 + 5,
                    reason: "ContainerCannotRun".into(),
                },
            ),
        ];
        for (name, status, want) in cases {
            let got = pod_start(&pod(status)).expect("assigned");
            assert_eq!(got.state, want, "{name}");
            assert_eq!(
                (got.uid.as_str(), got.key.as_str(), got.node.as_str()),
                ("u1", "shop/web-1", "n1")
            );
            let owner = got.owner.expect("owner");
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str()),
                ("ReplicaSet", "web")
            );
        }
        let placed = pod_start(&pod(
            serde_json::json!({"conditions": conditions(serde_json::json!([]))}),
        ));
        assert_eq!(placed.map(|p| p.placed_at), Some(T0 + 1));
        let unplaced: Pod = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
        )
        .expect("pod");
        assert_eq!(pod_start(&unplaced), None);
    }

    #[test]
    fn node_readiness_and_since_when() {
        let node = |status: &str| -> Node {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n1"}, "status": {"conditions": [
                {"type": "Ready", "status": status, "lastTransitionTime": "2026-11-23T10:00:00Z"}]}}))
            .expect("node")
        };
        assert_eq!(node_readiness(&node("True")), Some((true, T0)));
        assert_eq!(node_readiness(&node("False")), Some((false, T0)));
        assert_eq!(node_readiness(&node("Unknown")), Some((false, T0)));
        let bare: Node =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n1"}})).expect("node");
        assert_eq!(node_readiness(&bare), None);
    }
}
