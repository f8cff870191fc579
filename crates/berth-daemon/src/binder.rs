//! The API effects of the scheduling thread's attempts, carried out and reported back,
//! never decided here: a Reservation's API writes then the pods/binding request (outcome
//! as [`Input::Bound`]), a preemption's nomination and victims' deletion, the `Scheduled`,
//! `FailedScheduling` and `Preempted` events and the `PodScheduled` condition, in upstream's
//! words so `kubectl describe pod` reads as it does for kube-scheduler's pods.

use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Instant;

use berth_engine::{ApiWrite, model};
use k8s_openapi::api::core::v1::{
    Binding, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod,
};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client};
use tokio::runtime::Handle;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::Input;
use crate::extenders::ExtenderSet;
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::protobuf::{self, CreateClient};
use crate::queue::QueuedPod;

/// Why a binding was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// The pod no longer exists (404).
    #[error("pod gone: {0}")]
    PodGone(String),
    /// The pod is already bound, or was re-created with another UID (409).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Anything else: the API server or the connection failed.
    #[error("{0}")]
    Other(String),
}

/// What became of a binding, sent back to the scheduling thread.
#[derive(Debug, Clone)]
pub struct BindOutcome {
    /// `namespace/name`.
    pub key: String,
    /// The pod's UID, so a re-created pod of the same name is not confused with it.
    pub uid: String,
    /// The node.
    pub node: String,
    /// Success or why not.
    pub result: Result<(), BindError>,
}

/// Binds `namespace/name` (which must still have `uid`) to `node` through the pods/binding
/// subresource, in the encoding `client` sends.
pub async fn bind(
    client: &CreateClient,
    namespace: &str,
    name: &str,
    uid: &str,
    node: &str,
) -> Result<(), BindError> {
    let binding = binding(namespace, name, uid, node);
    client
        .create(
            &format!("/api/v1/namespaces/{namespace}/pods/{name}/binding"),
            &binding,
            protobuf::binding(&binding),
        )
        .await
        .map_err(classify)
}

/// The binding of `namespace/name` with `uid` to `node`.
pub(crate) fn binding(namespace: &str, name: &str, uid: &str, node: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            // The API server rejects the binding (409) if the pod of this name has another
            // UID, so a pod deleted and re-created meanwhile is never bound by mistake.
            uid: Some(uid.to_string()),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.to_string()),
            ..ObjectReference::default()
        },
    }
}

/// Makes the API writes a placement's Reserve asked for, before the pod is bound, as
/// upstream's volume binder does for volumes: a volume gets the claim in its `claimRef` (the
/// PV controller completes the binding), a claim gets an annotation (the selected node of a
/// claim left to provisioning). Each write replaces the object at the version read, so a
/// concurrent change fails (409) rather than being overwritten; the pod is then retried like
/// any rejected binding.
pub async fn pre_bind(client: &Client, writes: &[ApiWrite]) -> Result<(), BindError> {
    // A missing volume or claim is no reason to drop the pod, as a 404 on the pod is.
    let volume_error = |e: kube::Error| match classify(e) {
        BindError::PodGone(m) => BindError::Other(format!("volume binding: {m}")),
        other => other,
    };
    for write in writes {
        match write {
            ApiWrite::ClaimVolume {
                volume,
                namespace,
                claim,
            } => {
                let api: Api<PersistentVolume> = Api::all(client.clone());
                let mut pv = api.get(volume).await.map_err(volume_error)?;
                let spec = pv.spec.get_or_insert_default();
                if let Some(taken) = &spec.claim_ref {
                    if taken.namespace.as_deref() == Some(namespace)
                        && taken.name.as_deref() == Some(claim)
                    {
                        continue;
                    }
                    return Err(BindError::Conflict(format!(
                        "persistentvolume {volume} is already claimed by {}/{}",
                        taken.namespace.as_deref().unwrap_or(""),
                        taken.name.as_deref().unwrap_or("")
                    )));
                }
                spec.claim_ref = Some(ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("PersistentVolumeClaim".into()),
                    namespace: Some(namespace.clone()),
                    name: Some(claim.clone()),
                    ..ObjectReference::default()
                });
                api.replace(volume, &PostParams::default(), &pv)
                    .await
                    .map_err(volume_error)?;
            }
            ApiWrite::AnnotateClaim {
                namespace,
                claim,
                key,
                value,
            } => {
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
                let mut pvc = api.get(claim).await.map_err(volume_error)?;
                let annotations = pvc.metadata.annotations.get_or_insert_default();
                if annotations.get(key) == Some(value) {
                    continue;
                }
                annotations.insert(key.clone(), value.clone());
                api.replace(claim, &PostParams::default(), &pvc)
                    .await
                    .map_err(volume_error)?;
            }
        }
    }
    Ok(())
}

fn classify(error: kube::Error) -> BindError {
    match &error {
        kube::Error::Api(status) if status.code == 404 => {
            BindError::PodGone(status.message.clone())
        }
        kube::Error::Api(status) if status.code == 409 => {
            BindError::Conflict(status.message.clone())
        }
        _ => BindError::Other(error.to_string()),
    }
}

/// A reference to a pod for events.
pub fn pod_reference(pod: &model::Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.meta.namespace.clone()),
        name: Some(pod.meta.name.clone()),
        uid: Some(pod.meta.uid.clone()).filter(|u| !u.is_empty()),
        ..ObjectReference::default()
    }
}

/// Publishes events that never repeat for their object (`Scheduled`, `Preempted`) as kube's
/// `Recorder` does, without its cache: the Recorder keeps every event it sent for six
/// minutes to turn repeats into series (and scans them all at each publish), so at a steady
/// 1,000 bindings a second it would hold 360,000 events that can never repeat.
#[derive(Clone)]
pub struct OneOffEvents {
    client: CreateClient,
    reporter: Reporter,
}

impl OneOffEvents {
    /// Events through `client`, reported by `reporter`.
    pub fn new(client: CreateClient, reporter: Reporter) -> Self {
        OneOffEvents { client, reporter }
    }

    /// Creates the event, named and filled as the Recorder names and fills a new one.
    pub async fn publish(
        &self,
        ev: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let event = self.event(ev, regarding, Timestamp::now());
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        self.client
            .create(
                &format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events"),
                &event,
                protobuf::event(&event),
            )
            .await
    }

    /// The event made at `now`.
    pub(crate) fn event(
        &self,
        ev: &Event,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(ev.action.clone()),
            reason: Some(ev.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: ev.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_ref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            type_: Some(
                match ev.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            related: ev.secondary.clone(),
            ..K8sEvent::default()
        }
    }
}

/// Upstream's `Scheduled` event.
pub async fn record_scheduled(
    events: &OneOffEvents,
    pod: &ObjectReference,
    node: &str,
) -> Result<(), kube::Error> {
    let note = format!(
        "Successfully assigned {}/{} to {node}",
        pod.namespace.as_deref().unwrap_or_default(),
        pod.name.as_deref().unwrap_or_default()
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Scheduled".into(),
        note: Some(note),
        action: "Binding".into(),
        secondary: None,
    };
    events.publish(&event, pod).await
}

/// Upstream's `FailedScheduling` event and, when `set_condition`, the pod's `PodScheduled`
/// condition set to False/Unschedulable with the same message.
pub async fn record_unschedulable(
    client: &Client,
    recorder: &Recorder,
    pod: &ObjectReference,
    message: &str,
    set_condition: bool,
) -> Result<(), kube::Error> {
    let event = Event {
        type_: EventType::Warning,
        reason: "FailedScheduling".into(),
        note: Some(message.to_string()),
        action: "Scheduling".into(),
        secondary: None,
    };
    recorder.publish(&event, pod).await?;
    if set_condition {
        let pods: Api<Pod> = Api::namespaced(
            client.clone(),
            pod.namespace.as_deref().unwrap_or("default"),
        );
        // A strategic-merge patch merges conditions by type, leaving the others alone.
        let patch = serde_json::json!({
            "status": {
                "conditions": [{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastProbeTime": null,
                    "lastTransitionTime": Timestamp::now().to_string(),
                }]
            }
        });
        pods.patch_status(
            pod.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await?;
    }
    Ok(())
}

/// Sets (`Some`) or clears (`None`) a pod's `status.nominatedNodeName`.
pub async fn set_nominated_node(
    client: &Client,
    namespace: &str,
    name: &str,
    node: Option<&str>,
) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({"status": {"nominatedNodeName": node}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(drop)
}

/// Deletes a preemption victim with its own grace period, only if it is still the pod with
/// `uid` (a pod re-created under the same name is left alone). A victim already gone is
/// not an error.
pub async fn delete_victim(client: &Client, victim: &model::Pod) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &victim.meta.namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(victim.meta.uid.clone()).filter(|u| !u.is_empty()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(&victim.meta.name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Upstream's `Preempted` event on a victim, related to the preemptor.
pub async fn record_preempted(
    events: &OneOffEvents,
    victim: &ObjectReference,
    preemptor: &ObjectReference,
    node: &str,
) -> Result<(), kube::Error> {
    let note = format!(
        "Preempted by {}/{} on node {node}",
        preemptor.namespace.as_deref().unwrap_or_default(),
        preemptor.name.as_deref().unwrap_or_default()
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Preempted".into(),
        note: Some(note),
        action: "Preempting".into(),
        secondary: Some(preemptor.clone()),
    };
    events.publish(&event, victim).await
}

/// Why a binding was not sent: the lease had lapsed when its turn came.
const NOT_LEADING: &str = "not sent: this replica's lease has lapsed (it may no longer lead)";

/// Requests in flight per client (bindings; events and conditions).
const MAX_IN_FLIGHT: usize = 32;

/// Runs bindings, events and condition updates as tasks on the runtime, reporting binding
/// outcomes back to the scheduling thread.
#[derive(Clone)]
pub struct Binder {
    client: Client,
    /// The same client for bindings. In JSON: protobuf, as kube-scheduler sends them, cost
    /// the API server no less CPU per pod on the binding ceiling (docs/performance.md).
    bindings: CreateClient,
    /// `FailedScheduling` events, which repeat while a pod waits: the Recorder turns the
    /// repeats into a series.
    recorder: Recorder,
    one_off: OneOffEvents,
    runtime: Handle,
    tasks: TaskTracker,
    /// Bounds the requests in flight per client. Thousands of simultaneous requests each
    /// open a connection (with a TLS handshake) and all slow down together; a bounded set
    /// reuses its connections, and the rate limit still sets the pace.
    binds: Arc<Semaphore>,
    reports: Arc<Semaphore>,
    results: Sender<Input>,
    metrics: Metrics,
    /// The Policy's extenders: the first interested one with a bindVerb binds instead.
    extenders: Option<ExtenderSet>,
    /// Checked right before each binding, nomination and victim deletion is sent: a
    /// request queued before a pause past the lease is dropped, not sent on stale state.
    leadership: Leadership,
}

impl Binder {
    /// A binder publishing events as `scheduler_name` from replica `identity`. Events go
    /// through their own client, with its own rate limit, as kube-scheduler's do, so a burst
    /// of events never delays bindings.
    pub fn new(
        client: Client,
        events: Client,
        scheduler_name: &str,
        identity: &str,
        runtime: Handle,
        results: Sender<Input>,
        metrics: Metrics,
    ) -> Self {
        let reporter = Reporter {
            controller: scheduler_name.to_string(),
            instance: Some(identity.to_string()),
        };
        Binder {
            recorder: Recorder::new(events.clone(), reporter.clone()),
            one_off: OneOffEvents::new(CreateClient::json(events), reporter),
            bindings: CreateClient::json(client.clone()),
            client,
            runtime,
            tasks: TaskTracker::new(),
            binds: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            reports: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            results,
            metrics,
            extenders: None,
            leadership: Leadership::sole(),
        }
    }

    /// Sends requests only while `leadership` holds.
    pub fn with_leadership(mut self, leadership: Leadership) -> Self {
        self.leadership = leadership;
        self
    }

    /// Err when the lease no longer allows acting.
    fn still_leading(&self) -> Result<(), BindError> {
        if self.leadership.holds(Instant::now()) {
            Ok(())
        } else {
            Err(BindError::Other(NOT_LEADING.into()))
        }
    }

    /// Lets the first of `extenders` with a bindVerb that is interested in a pod bind it,
    /// as upstream's extendersBinding does.
    pub fn with_extenders(mut self, extenders: ExtenderSet) -> Self {
        self.extenders = Some(extenders);
        self
    }

    /// The tasks in flight, to wait for at shutdown.
    pub fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }
}

/// What the scheduling thread asks of the API, as a trait so the loop can be tested
/// without one.
pub trait Backend {
    /// Binds an assumed pod (with its queue history, for the metrics of a scheduled pod) to
    /// a node, after the API writes its Reserve asked for; the outcome comes back as
    /// [`Input::Bound`].
    fn bind(&self, queued: &QueuedPod, node: &str, writes: Vec<ApiWrite>);
    /// Reports that a pod fits no node.
    fn unschedulable(&self, pod: &model::Pod, message: &str, set_condition: bool);
    /// Carries out a preemption: nominates `preemptor` to `node` (first, so a replica
    /// taking over sees the nomination and waits for the victims), deletes the victims, and
    /// clears the nominations of `demoted` (lower-priority pods nominated to that node).
    fn preempt(
        &self,
        preemptor: &model::Pod,
        node: &str,
        victims: Vec<model::Pod>,
        demoted: Vec<String>,
    );
    /// Clears a pod's nomination (preemption cannot help it anywhere any more).
    fn clear_nomination(&self, pod: &model::Pod);
    /// Records an Event about what a protection did (a node's circuit breaker opening).
    fn protection_event(&self, regarding: ObjectReference, reason: &str, note: &str, warning: bool);
}

impl Backend for Binder {
    fn protection_event(
        &self,
        regarding: ObjectReference,
        reason: &str,
        note: &str,
        warning: bool,
    ) {
        let this = self.clone();
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            note: Some(note.to_owned()),
            action: "Protecting".into(),
            secondary: None,
        };
        self.tasks.spawn_on(
            async move {
                let _permit = this.reports.acquire().await;
                if let Err(e) = this.one_off.publish(&event, &regarding).await {
                    warn!(object = ?regarding.name, reason = %event.reason, error = %e,
                        "could not record the protection's event");
                }
            },
            &self.runtime,
        );
    }

    fn bind(&self, queued: &QueuedPod, node: &str, writes: Vec<ApiWrite>) {
        let pod = &queued.pod;
        // Upstream counts the attempt that placed the pod too.
        let (attempts, queued_at) = (queued.attempts.saturating_add(1), queued.queued_at);
        let this = self.clone();
        let reference = pod_reference(pod);
        let (namespace, name, uid) = (
            pod.meta.namespace.clone(),
            pod.meta.name.clone(),
            pod.meta.uid.clone(),
        );
        let node = node.to_string();
        let extender = self.extenders.as_ref().and_then(|set| set.binder_for(pod));
        self.tasks.spawn_on(
            async move {
                let permit = this.binds.acquire().await;
                let start = Instant::now();
                let result = match this.still_leading() {
                    Err(e) => Err(e),
                    Ok(()) => pre_bind(&this.client, &writes).await,
                };
                let result = match (result.and_then(|()| this.still_leading()), extender) {
                    (Err(e), _) => Err(e),
                    (Ok(()), None) => bind(&this.bindings, &namespace, &name, &uid, &node).await,
                    (Ok(()), Some(extender)) => extender
                        .http()
                        .clone()
                        .bind_async(namespace.clone(), name.clone(), uid.clone(), node.clone())
                        .await
                        .map_err(|e| BindError::Other(format!("extender binding: {e}"))),
                };
                this.metrics
                    .bind(result.is_ok(), start.elapsed().as_secs_f64());
                let key = format!("{namespace}/{name}");
                match &result {
                    Ok(()) => debug!(pod = %key, %node, "bound"),
                    Err(e) => warn!(pod = %key, %node, error = %e, "binding rejected"),
                }
                let bound = result.is_ok();
                if bound {
                    this.metrics
                        .pod_scheduled(attempts, queued_at.elapsed().as_secs_f64());
                }
                drop(permit);
                // The scheduling thread may have stopped (shutdown); the outcome no longer
                // matters then.
                let _ = this.results.send(Input::Bound(BindOutcome {
                    key: key.clone(),
                    uid,
                    node: node.clone(),
                    result,
                }));
                if !bound {
                    return;
                }
                let _permit = this.reports.acquire().await;
                if let Err(e) = record_scheduled(&this.one_off, &reference, &node).await {
                    warn!(pod = %key, error = %e, "could not record the Scheduled event");
                }
            },
            &self.runtime,
        );
    }

    fn preempt(
        &self,
        preemptor: &model::Pod,
        node: &str,
        victims: Vec<model::Pod>,
        demoted: Vec<String>,
    ) {
        let this = self.clone();
        let reference = pod_reference(preemptor);
        let (namespace, name) = (
            preemptor.meta.namespace.clone(),
            preemptor.meta.name.clone(),
        );
        let node = node.to_string();
        self.tasks.spawn_on(
            async move {
                let key = format!("{namespace}/{name}");
                {
                    let _permit = this.binds.acquire().await;
                    if let Err(e) = this.still_leading() {
                        warn!(pod = %key, %node, error = %e, "not preempting");
                        return;
                    }
                    if let Err(e) =
                        set_nominated_node(&this.client, &namespace, &name, Some(&node)).await
                    {
                        // Without the nomination a successor could pick other victims:
                        // delete nothing; the pod is retried.
                        warn!(pod = %key, %node, error = %e, "could not nominate; not preempting");
                        return;
                    }
                }
                for victim in &victims {
                    let deleted = {
                        let _permit = this.binds.acquire().await;
                        if let Err(e) = this.still_leading() {
                            warn!(pod = %key, %node, error = %e, "preemption cut short");
                            return;
                        }
                        delete_victim(&this.client, victim).await
                    };
                    if let Err(e) = deleted {
                        warn!(pod = %key, victim = %victim.key(), error = %e,
                            "could not delete preemption victim");
                        continue;
                    }
                    debug!(pod = %key, victim = %victim.key(), %node, "preempted");
                    let _permit = this.reports.acquire().await;
                    let target = pod_reference(victim);
                    if let Err(e) = record_preempted(&this.one_off, &target, &reference, &node).await {
                        warn!(victim = %victim.key(), error = %e, "could not record the Preempted event");
                    }
                }
                for other in demoted {
                    let Some((ns, n)) = other.split_once('/') else {
                        continue;
                    };
                    let _permit = this.binds.acquire().await;
                    if let Err(e) = set_nominated_node(&this.client, ns, n, None).await {
                        warn!(pod = %other, error = %e, "could not clear the nomination");
                    }
                }
            },
            &self.runtime,
        );
    }

    fn clear_nomination(&self, pod: &model::Pod) {
        let this = self.clone();
        let (namespace, name) = (pod.meta.namespace.clone(), pod.meta.name.clone());
        self.tasks.spawn_on(
            async move {
                let _permit = this.binds.acquire().await;
                if let Err(e) = set_nominated_node(&this.client, &namespace, &name, None).await {
                    warn!(pod = %format!("{namespace}/{name}"), error = %e,
                        "could not clear the nomination");
                }
            },
            &self.runtime,
        );
    }

    fn unschedulable(&self, pod: &model::Pod, message: &str, set_condition: bool) {
        let this = self.clone();
        let reference = pod_reference(pod);
        let message = message.to_string();
        self.tasks.spawn_on(
            async move {
                let _permit = this.reports.acquire().await;
                if let Err(e) = record_unschedulable(
                    &this.client,
                    &this.recorder,
                    &reference,
                    &message,
                    set_condition,
                )
                .await
                {
                    warn!(pod = ?reference.name, error = %e,
                        "could not record FailedScheduling");
                }
            },
            &self.runtime,
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use http::{Method, Request, Response, StatusCode};
    use kube::client::Body;
    use serde_json::{Value, json};
    use tower_test::mock;

    /// The server side of [`mock_client`] (the protobuf tests use both too).
    pub(crate) type Handle = mock::Handle<Request<Body>, Response<Body>>;

    /// A client whose requests the test answers through the handle.
    pub(crate) fn mock_client() -> (Client, Handle) {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        (Client::new(service, "default"), handle)
    }

    /// Answers the next request with `status` and `body`; returns the request's method,
    /// path, content type and JSON body.
    async fn answer(
        handle: &mut Handle,
        status: u16,
        body: Value,
    ) -> (Method, String, String, Value) {
        let (request, respond) = handle.next_request().await.expect("a request");
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let bytes = request.into_body().collect_bytes().await.unwrap();
        let sent: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        respond.send_response(
            Response::builder()
                .status(StatusCode::from_u16(status).unwrap())
                .body(Body::from(serde_json::to_vec(&body).unwrap()))
                .unwrap(),
        );
        (method, path, content_type, sent)
    }

    fn status(code: u16, reason: &str, message: &str) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": if code < 300 { "Success" } else { "Failure" },
            "reason": reason, "message": message, "code": code})
    }

    /// In JSON, as the binder sends it (protobuf.rs tests the protobuf form).
    #[tokio::test]
    async fn a_binding_names_the_pod_uid_and_the_node() {
        let (client, mut handle) = mock_client();
        let server =
            tokio::spawn(async move { answer(&mut handle, 201, status(201, "", "")).await });
        bind(
            &CreateClient::json(client.clone()),
            "ns",
            "web-1",
            "uid-1",
            "node-7",
        )
        .await
        .unwrap();
        let (method, path, _, sent) = server.await.unwrap();
        assert_eq!(method, Method::POST);
        assert_eq!(path, "/api/v1/namespaces/ns/pods/web-1/binding");
        assert_eq!(sent["metadata"]["uid"], "uid-1");
        assert_eq!(sent["metadata"]["name"], "web-1");
        assert_eq!(
            sent["target"],
            json!({"apiVersion": "v1", "kind": "Node", "name": "node-7"})
        );
    }

    #[tokio::test]
    async fn rejected_bindings_say_why() {
        for (code, reason, expected) in [
            (
                409,
                "Conflict",
                BindError::Conflict("pod web-1 is already assigned to node \"n\"".into()),
            ),
            (
                404,
                "NotFound",
                BindError::PodGone("pods \"web-1\" not found".into()),
            ),
        ] {
            let (client, mut handle) = mock_client();
            let message = match &expected {
                BindError::Conflict(m) | BindError::PodGone(m) | BindError::Other(m) => m.clone(),
            };
            let server = tokio::spawn(async move {
                answer(&mut handle, code, status(code, reason, &message)).await
            });
            let result = bind(
                &CreateClient::json(client.clone()),
                "ns",
                "web-1",
                "uid-1",
                "n",
            )
            .await;
            server.await.unwrap();
            assert_eq!(result, Err(expected));
        }
        let (client, mut handle) = mock_client();
        let server = tokio::spawn(async move {
            answer(&mut handle, 500, status(500, "InternalError", "etcd down")).await
        });
        let result = bind(
            &CreateClient::json(client.clone()),
            "ns",
            "web-1",
            "uid-1",
            "n",
        )
        .await;
        server.await.unwrap();
        assert!(matches!(result, Err(BindError::Other(_))), "{result:?}");
    }

    fn reference() -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some("web-1".into()),
            uid: Some("uid-1".into()),
            ..ObjectReference::default()
        }
    }

    fn reporter() -> Reporter {
        Reporter {
            controller: "berth".into(),
            instance: Some("replica-1".into()),
        }
    }

    fn recorder(client: &Client) -> Recorder {
        Recorder::new(client.clone(), reporter())
    }

    #[tokio::test]
    async fn a_failure_records_the_event_and_the_pod_condition() {
        let (client, mut handle) = mock_client();
        let message = "0/3 nodes are available: 3 Insufficient cpu.";
        let server = tokio::spawn(async move {
            let event = answer(&mut handle, 201, json!({"metadata": {}})).await;
            let patch = answer(&mut handle, 200, json!({"metadata": {"name": "web-1"}})).await;
            (event, patch)
        });
        record_unschedulable(&client, &recorder(&client), &reference(), message, true)
            .await
            .unwrap();
        let ((m1, p1, _, event), (m2, p2, ct, patch)) = server.await.unwrap();
        assert_eq!(
            (m1, p1.as_str()),
            (Method::POST, "/apis/events.k8s.io/v1/namespaces/ns/events")
        );
        assert_eq!(event["reason"], "FailedScheduling");
        assert_eq!(event["type"], "Warning");
        assert_eq!(event["note"], message);
        assert_eq!(event["regarding"]["name"], "web-1");
        assert_eq!(event["reportingController"], "berth");
        assert_eq!(
            (m2, p2.as_str()),
            (Method::PATCH, "/api/v1/namespaces/ns/pods/web-1/status")
        );
        assert_eq!(ct, "application/strategic-merge-patch+json");
        let condition = &patch["status"]["conditions"][0];
        assert_eq!(condition["type"], "PodScheduled");
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "Unschedulable");
        assert_eq!(condition["message"], message);
    }

    #[tokio::test]
    async fn an_unchanged_failure_only_records_the_event() {
        let (client, mut handle) = mock_client();
        let server = tokio::spawn(async move {
            answer(&mut handle, 201, json!({"metadata": {}})).await;
            handle
        });
        record_unschedulable(&client, &recorder(&client), &reference(), "again", false)
            .await
            .unwrap();
        let mut handle = server.await.unwrap();
        drop(client);
        assert!(handle.next_request().await.is_none(), "no condition patch");
    }

    #[tokio::test]
    async fn success_is_recorded_in_upstream_words() {
        let (client, mut handle) = mock_client();
        let server =
            tokio::spawn(async move { answer(&mut handle, 201, json!({"metadata": {}})).await });
        let events = OneOffEvents::new(CreateClient::json(client.clone()), reporter());
        record_scheduled(&events, &reference(), "node-7")
            .await
            .unwrap();
        let (method, path, _, event) = server.await.unwrap();
        assert_eq!(
            (method, path.as_str()),
            (Method::POST, "/apis/events.k8s.io/v1/namespaces/ns/events")
        );
        assert_eq!(event["reason"], "Scheduled");
        assert_eq!(event["action"], "Binding");
        assert_eq!(event["type"], "Normal");
        assert_eq!(event["note"], "Successfully assigned ns/web-1 to node-7");
        assert_eq!(event["regarding"]["uid"], "uid-1");
        assert_eq!(event["reportingController"], "berth");
        assert_eq!(event["reportingInstance"], "replica-1");
        assert!(event["eventTime"].is_string(), "{event}");
        let name = event["metadata"]["name"].as_str().unwrap_or_default();
        assert!(name.starts_with("web-1."), "{name}");
    }
}
