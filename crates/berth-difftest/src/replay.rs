//! Putting a scenario into the test cluster, waiting for the reference's decision on each
//! pod, and reading back the state both schedulers must decide on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use berth_kube::ClusterObjects;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::generate::Scenario;
use crate::upstream::ReferenceScheduler;

/// How long the reference may take to decide one pod.
const DECISION_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the pod is polled for a decision.
const POLL: Duration = Duration::from_millis(40);

/// The reference's decision on one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Bound to this node.
    Bound(String),
    /// Unschedulable, with the PodScheduled condition's message (the FitError text).
    Unschedulable(String),
    /// Unschedulable (the FitError text), then preempted: nominated to `node` after deleting
    /// `victims` (`namespace/name`); `bound` is where the pod went once they were gone (None
    /// if it was not bound within the decision timeout).
    Preempted {
        /// The FitError text of the failed cycle.
        message: String,
        /// `status.nominatedNodeName`.
        node: String,
        /// The pods deleted by the preemption.
        victims: BTreeSet<String>,
        /// The node the pod was bound to afterwards.
        bound: Option<String>,
    },
}

impl Verdict {
    /// The FitError text, if the reference found the pod unschedulable.
    pub fn fit_error(&self) -> Option<&str> {
        match self {
            Verdict::Bound(_) => None,
            Verdict::Unschedulable(message) | Verdict::Preempted { message, .. } => Some(message),
        }
    }
}

/// Creates the scenario's namespaces, controllers and objects (not the pending pods).
pub async fn create_cluster(client: &Client, scenario: &Scenario) -> Result<()> {
    for ns in &scenario.namespaces {
        create(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns}}),
        )
        .await?;
    }
    let mut uids = BTreeMap::new();
    for controller in &scenario.controllers {
        let created = create(client, controller).await?;
        let kind = controller["kind"].as_str().unwrap_or_default();
        let name = created.metadata.name.clone().unwrap_or_default();
        let uid = created.metadata.uid.clone().unwrap_or_default();
        uids.insert(crate::generate::uid_placeholder(kind, &name), uid);
    }
    for object in &scenario.objects {
        let object = with_uids(object, &uids);
        create(client, &object).await?;
        write_status(client, &object).await?;
    }
    Ok(())
}

/// Writes the status a generated pod or PodDisruptionBudget carries through the status
/// subresource (creation drops it): a running pod's start time, as the kubelet would report
/// it, and a budget's allowance, as the disruption controller would compute it (this cluster
/// runs neither).
async fn write_status(client: &Client, object: &Value) -> Result<()> {
    let kind = object["kind"].as_str().unwrap_or_default();
    if !matches!(kind, "Pod" | "PodDisruptionBudget") || !object["status"].is_object() {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let patch = json!({"status": object["status"]});
    dynamic_api(client, object)?
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("writing the status of {kind} {name}"))?;
    Ok(())
}

/// Node that stands in for a barrier in the reference's node event stream (see
/// [`touch_nodes`]); it never holds a pod.
const SENTINEL_NODE: &str = "difftest-sentinel";

/// Updates every node of the scenario once (an annotation), after the reference's cache
/// holds them, and returns once the reference handled the updates.
///
/// v1.22's cache gives a node's images the number of nodes holding them *when the node was
/// added*, so right after start the first nodes listed see too few holders and
/// ImageLocality scores them lower. A node update recomputes it with every node known.
/// Berth always uses the current count (docs/fidelity.md lists this deviation).
///
/// v1.22 logs no node update, so a sentinel node is added and deleted behind the updates:
/// one informer hands a kind's events over in order, so once the reference logged the
/// sentinel's deletion it handled every update before it, and the sentinel is gone from
/// its cache before the first pod.
pub async fn touch_nodes(
    client: &Client,
    reference: &mut ReferenceScheduler,
    scenario: &Scenario,
) -> Result<()> {
    let names: Vec<&str> = scenario
        .objects
        .iter()
        .filter(|o| o["kind"] == "Node")
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    reference
        .await_node_events("Add event for node", &names)
        .await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = json!({"metadata": {"annotations": {"difftest.berth.local/touched": "yes"}}});
    for name in &names {
        nodes
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("updating node {name}"))?;
    }
    let sentinel: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": SENTINEL_NODE},
        "spec": {"unschedulable": true},
    }))?;
    nodes
        .create(&PostParams::default(), &sentinel)
        .await
        .context("creating the sentinel node")?;
    nodes
        .delete(SENTINEL_NODE, &DeleteParams::default())
        .await
        .context("deleting the sentinel node")?;
    reference
        .await_node_events("Delete event for node", &[SENTINEL_NODE])
        .await
}

/// Creates pending pod `index` and returns it as the apiserver stored it (with admission's
/// defaults, such as a RuntimeClass's overhead).
pub async fn create_pod(client: &Client, scenario: &Scenario, index: usize) -> Result<Pod> {
    let uids = controller_uids(client, scenario).await?;
    let object = with_uids(&scenario.pending[index], &uids);
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod: Pod = serde_json::from_value(object.clone())?;
    pods.create(&PostParams::default(), &pod)
        .await
        .with_context(|| format!("creating pod {}", object["metadata"]["name"]))
}

/// Waits for the reference's decision on `pod`, standing in for the PV controller (which
/// this cluster does not run) so delayed-binding claims the reference chose volumes for
/// become bound, as v1.22's volume binder waits for. An unschedulable pod is deleted at
/// once, so it is not retried behind the next pods' backs; one that preempted (its
/// `status.nominatedNodeName` is set with the condition, after v1.22 deleted the victims)
/// is awaited until bound, and its victims are the pods of `before` that are gone.
pub async fn await_verdict(
    client: &Client,
    reference: &mut ReferenceScheduler,
    pod: &Pod,
    before: &[Pod],
) -> Result<Verdict> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let deadline = tokio::time::Instant::now() + DECISION_TIMEOUT;
    loop {
        reference.check_running()?;
        let current = pods.get(&name).await?;
        if let Some(node) = current.spec.as_ref().and_then(|s| s.node_name.clone()) {
            return Ok(Verdict::Bound(node));
        }
        let unschedulable = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            });
        if let Some(condition) = unschedulable {
            let message = condition.message.clone().unwrap_or_default();
            let nominated = current
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty());
            if let Some(node) = nominated {
                let victims = gone(client, before).await?;
                let bound = await_binding(client, reference, &pods, &name).await?;
                return Ok(Verdict::Preempted {
                    message,
                    node,
                    victims,
                    bound,
                });
            }
            pods.delete(&name, &DeleteParams::default().grace_period(0))
                .await?;
            return Ok(Verdict::Unschedulable(message));
        }
        complete_volume_bindings(client).await?;
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{} made no decision on {namespace}/{name} within {:?}; its log:\n{}",
                reference.label(),
                DECISION_TIMEOUT,
                reference.log_tail()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Gives pending pod `index`, once bound, a start time after every running pod's (the
/// kubelet's part): without one, v1.22 takes "now" as its start time when it orders victims
/// of equal priority, which changes from call to call.
pub async fn mark_started(
    client: &Client,
    pod: &Pod,
    verdict: &Verdict,
    index: usize,
) -> Result<()> {
    let bound = match verdict {
        Verdict::Bound(_) | Verdict::Preempted { bound: Some(_), .. } => true,
        Verdict::Unschedulable(_) | Verdict::Preempted { bound: None, .. } => false,
    };
    if !bound {
        return Ok(());
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let start = format!("2024-01-02T00:{:02}:{:02}Z", index / 60 % 60, index % 60);
    let patch = json!({"status": {"phase": "Running", "startTime": start}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("writing the start time of {namespace}/{name}"))?;
    Ok(())
}

/// `namespace/name` of the pods of `before` that no longer exist or are being deleted.
async fn gone(client: &Client, before: &[Pod]) -> Result<BTreeSet<String>> {
    let now: BTreeSet<String> = list::<Pod>(client)
        .await?
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(pod_key)
        .collect();
    Ok(before
        .iter()
        .map(pod_key)
        .filter(|k| !now.contains(k))
        .collect())
}

fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Waits until the preemptor `name` is bound (v1.22 retries it once its victims are gone);
/// None, and the pod deleted, if it is not within the decision timeout.
async fn await_binding(
    client: &Client,
    reference: &mut ReferenceScheduler,
    pods: &Api<Pod>,
    name: &str,
) -> Result<Option<String>> {
    let deadline = tokio::time::Instant::now() + DECISION_TIMEOUT;
    while tokio::time::Instant::now() < deadline {
        reference.check_running()?;
        let current = pods.get(name).await?;
        if let Some(node) = current.spec.as_ref().and_then(|s| s.node_name.clone()) {
            return Ok(Some(node));
        }
        complete_volume_bindings(client).await?;
        tokio::time::sleep(POLL).await;
    }
    pods.delete(name, &DeleteParams::default().grace_period(0))
        .await?;
    Ok(None)
}

/// The PV controller's part of binding: a volume whose claimRef names a claim that does
/// not name it yet gets the claim bound to it (volumeName and the bind-completed
/// annotation, which v1.22's binder checks).
async fn complete_volume_bindings(client: &Client) -> Result<()> {
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    for volume in volumes.list(&ListParams::default()).await? {
        let Some(claim) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
            continue;
        };
        let (Some(ns), Some(claim_name)) = (&claim.namespace, &claim.name) else {
            continue;
        };
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
        let Some(current) = claims.get_opt(claim_name).await? else {
            continue;
        };
        let bound = current
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .is_some_and(|v| !v.is_empty());
        if bound {
            continue;
        }
        let patch = json!({
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"volumeName": volume.metadata.name},
        });
        claims
            .patch(claim_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("binding claim {ns}/{claim_name}"))?;
    }
    Ok(())
}

/// Everything the schedulers read, as the apiserver has it now.
pub async fn list_state(client: &Client) -> Result<ClusterObjects> {
    Ok(ClusterObjects {
        nodes: list(client).await?,
        pods: list(client).await?,
        namespaces: list(client).await?,
        services: list(client).await?,
        replication_controllers: list::<ReplicationController>(client).await?,
        replica_sets: list::<ReplicaSet>(client).await?,
        stateful_sets: list::<StatefulSet>(client).await?,
        persistent_volumes: list(client).await?,
        persistent_volume_claims: list(client).await?,
        storage_classes: list(client).await?,
        csi_nodes: list(client).await?,
        priority_classes: list::<PriorityClass>(client).await?,
        pod_disruption_budgets: list::<PodDisruptionBudget>(client).await?,
        // Only `simulate --apply` reads LimitRanges; the apiserver has applied them already.
        limit_ranges: Vec::new(),
        warnings: Vec::new(),
    })
}

/// Removes what a scenario made that the next one would see: its pods (grace period 0: no
/// kubelet), nodes, CSINodes, volumes (without the protection finalizer no controller
/// would clear) and storage classes. Namespaced leftovers stay in the scenario's own
/// namespaces, which no later scenario uses.
pub async fn delete_scenario(client: &Client, scenario: &Scenario) -> Result<()> {
    for ns in &scenario.namespaces {
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        pods.delete_collection(
            &DeleteParams::default().grace_period(0),
            &ListParams::default(),
        )
        .await?;
    }
    let unprotect = json!({"metadata": {"finalizers": null}});
    for object in &scenario.objects {
        let Some(name) = object["metadata"]["name"].as_str() else {
            continue;
        };
        if object["metadata"]["namespace"].is_string() {
            continue;
        }
        let api = dynamic_api(client, object)?;
        // A scenario whose policy Berth rejected never created its objects.
        if object["kind"] == "PersistentVolume" {
            let patched = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&unprotect))
                .await;
            ignore_not_found(patched.map(drop)).with_context(|| format!("unprotecting {name}"))?;
        }
        let deleted = api.delete(name, &DeleteParams::default()).await;
        ignore_not_found(deleted.map(drop)).with_context(|| format!("deleting {name}"))?;
    }
    Ok(())
}

fn ignore_not_found(result: kube::Result<()>) -> kube::Result<()> {
    match result {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => other,
    }
}

/// The UIDs of the scenario's controllers, for placeholders.
async fn controller_uids(client: &Client, scenario: &Scenario) -> Result<BTreeMap<String, String>> {
    let mut uids = BTreeMap::new();
    for controller in &scenario.controllers {
        let api = dynamic_api(client, controller)?;
        let name = controller["metadata"]["name"].as_str().unwrap_or_default();
        let kind = controller["kind"].as_str().unwrap_or_default();
        let object = api.get(name).await?;
        uids.insert(
            crate::generate::uid_placeholder(kind, name),
            object.metadata.uid.unwrap_or_default(),
        );
    }
    Ok(uids)
}

/// `value` with every UID placeholder replaced.
fn with_uids(value: &Value, uids: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => match uids.get(s) {
            Some(uid) => Value::String(uid.clone()),
            // The preferAvoidPods annotation is JSON inside a string.
            None if s.contains("@uid:") => {
                let mut s = s.clone();
                for (placeholder, uid) in uids {
                    s = s.replace(placeholder, uid);
                }
                Value::String(s)
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| with_uids(v, uids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), with_uids(v, uids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

async fn create(client: &Client, object: &Value) -> Result<DynamicObject> {
    let api = dynamic_api(client, object)?;
    let dynamic: DynamicObject = serde_json::from_value(object.clone())?;
    api.create(&PostParams::default(), &dynamic)
        .await
        .with_context(|| format!("creating {} {}", object["kind"], object["metadata"]["name"]))
}

fn dynamic_api(client: &Client, object: &Value) -> Result<Api<DynamicObject>> {
    let api_version = object["apiVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("object without apiVersion: {object}"))?;
    let kind = object["kind"]
        .as_str()
        .ok_or_else(|| anyhow!("object without kind: {object}"))?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Ok(match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}

async fn list<K>(client: &Client) -> Result<Vec<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    Ok(api.list(&ListParams::default()).await?.items)
}
