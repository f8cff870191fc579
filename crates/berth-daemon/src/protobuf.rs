//! Kubernetes' protobuf wire format for the objects Berth creates once per pod (the
//! binding and its `Scheduled` event), as kube-scheduler sends them, with JSON as the
//! fallback for a server that refuses protobuf.
//!
//! A message is upstream's `runtime/serializer/protobuf` envelope: the 4 bytes `k8s\0`,
//! then a `runtime.Unknown` whose `typeMeta` names the object's apiVersion and kind and
//! whose `raw` is the object's own protobuf encoding (the message types are kube-rs's
//! `k8s-pb`, generated from upstream's `generated.proto`).
//!
//! The binder sends JSON ([`CreateClient::json`]): on the binding ceiling, protobuf cost the
//! API server no less CPU per pod (docs/performance.md, "The binding ceiling"), whose
//! `ceiling-pb` contender sends these requests in protobuf.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::events::v1 as events;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::api::events::v1 as pb_events;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::Client;
use kube::client::Body;
use kube::core::response::StatusSummary;
use prost::Message;
use tracing::warn;

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// What a protobuf request accepts back: protobuf, or JSON from a server without it for the
/// resource (client-go's `AcceptContentTypes` for protobuf clients).
const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";
const JSON: &str = "application/json";
/// The envelope's first bytes.
const MAGIC: &[u8; 4] = b"k8s\0";
/// The longest response body read. The answers to these requests are a `Status` or the
/// created object, well under a kilobyte; a longer one is not read to its end.
const MAX_RESPONSE: usize = 1 << 20;

/// Why bytes are not the protobuf message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    /// The bytes do not start with `k8s\0`.
    #[error("not a Kubernetes protobuf message: it does not start with the bytes k8s\\0")]
    NoMagic,
    /// The `runtime.Unknown` envelope does not decode.
    #[error("the runtime.Unknown envelope does not decode: {0}")]
    Envelope(prost::DecodeError),
    /// The envelope holds another kind of object.
    #[error("expected a {expected}, got apiVersion {api_version:?} kind {kind:?}")]
    Kind {
        /// `apiVersion/kind` expected.
        expected: &'static str,
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The object inside the envelope does not decode.
    #[error("the {kind} in the envelope does not decode: {source}")]
    Object {
        /// Its kind.
        kind: &'static str,
        /// Why.
        source: prost::DecodeError,
    },
}

/// A Kubernetes object with its protobuf type.
pub trait Wire {
    /// The object's `apiVersion`.
    const API_VERSION: &'static str;
    /// The object's `kind`.
    const KIND: &'static str;
    /// `apiVersion/kind`, for messages.
    const NAME: &'static str;
    /// Its protobuf message.
    type Message: Message + Default;
}

impl Wire for core::Binding {
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "Binding";
    const NAME: &'static str = "v1/Binding";
    type Message = pb_core::Binding;
}

impl Wire for events::Event {
    const API_VERSION: &'static str = "events.k8s.io/v1";
    const KIND: &'static str = "Event";
    const NAME: &'static str = "events.k8s.io/v1/Event";
    type Message = pb_events::Event;
}

/// `metav1.Status`, the answer to a binding and to any failed request.
pub struct Status;

impl Wire for Status {
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "Status";
    const NAME: &'static str = "v1/Status";
    type Message = pb_meta::Status;
}

/// `message` in upstream's envelope, as an object of type `W`.
pub fn encode<W: Wire>(message: &W::Message) -> Vec<u8> {
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(W::API_VERSION.into()),
            kind: Some(W::KIND.into()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: None,
        content_type: None,
    };
    let mut bytes = Vec::with_capacity(MAGIC.len() + envelope.encoded_len());
    bytes.extend_from_slice(MAGIC);
    envelope
        .encode(&mut bytes)
        .expect("a Vec grows to any message's length");
    bytes
}

/// The object of type `W` in the envelope `bytes`.
pub fn decode<W: Wire>(bytes: &[u8]) -> Result<W::Message, ProtobufError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let envelope = Unknown::decode(rest).map_err(ProtobufError::Envelope)?;
    let type_meta = envelope.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
    );
    if api_version != W::API_VERSION || kind != W::KIND {
        return Err(ProtobufError::Kind {
            expected: W::NAME,
            api_version,
            kind,
        });
    }
    W::Message::decode(envelope.raw.unwrap_or_default().as_slice()).map_err(|source| {
        ProtobufError::Object {
            kind: W::KIND,
            source,
        }
    })
}

/// A binding in protobuf.
pub fn binding(binding: &core::Binding) -> pb_core::Binding {
    pb_core::Binding {
        metadata: Some(object_meta(&binding.metadata)),
        target: Some(object_reference(&binding.target)),
    }
}

/// An event in protobuf, every field of it.
pub fn event(event: &events::Event) -> pb_events::Event {
    let events::Event {
        action,
        deprecated_count,
        deprecated_first_timestamp,
        deprecated_last_timestamp,
        deprecated_source,
        event_time,
        metadata,
        note,
        reason,
        regarding,
        related,
        reporting_controller,
        reporting_instance,
        series,
        type_,
    } = event;
    pb_events::Event {
        metadata: Some(object_meta(metadata)),
        event_time: event_time.as_ref().map(micro_time),
        series: series.as_ref().map(|s| pb_events::EventSeries {
            count: Some(s.count),
            last_observed_time: Some(micro_time(&s.last_observed_time)),
        }),
        reporting_controller: reporting_controller.clone(),
        reporting_instance: reporting_instance.clone(),
        action: action.clone(),
        reason: reason.clone(),
        regarding: regarding.as_ref().map(object_reference),
        related: related.as_ref().map(object_reference),
        note: note.clone(),
        r#type: type_.clone(),
        deprecated_source: deprecated_source.as_ref().map(|s| pb_core::EventSource {
            component: s.component.clone(),
            host: s.host.clone(),
        }),
        deprecated_first_timestamp: deprecated_first_timestamp.as_ref().map(time),
        deprecated_last_timestamp: deprecated_last_timestamp.as_ref().map(time),
        deprecated_count: *deprecated_count,
    }
}

/// The metadata fields an object Berth creates can have: its name (or prefix), namespace,
/// UID (the binding's precondition), labels and annotations. The others (versions,
/// timestamps, owners, finalizers, managed fields) are the server's to set.
fn object_meta(meta: &meta::ObjectMeta) -> pb_meta::ObjectMeta {
    pb_meta::ObjectMeta {
        name: meta.name.clone(),
        generate_name: meta.generate_name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        labels: meta
            .labels
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        annotations: meta
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        ..pb_meta::ObjectMeta::default()
    }
}

fn object_reference(reference: &core::ObjectReference) -> pb_core::ObjectReference {
    let core::ObjectReference {
        api_version,
        field_path,
        kind,
        name,
        namespace,
        resource_version,
        uid,
    } = reference;
    pb_core::ObjectReference {
        kind: kind.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        uid: uid.clone(),
        api_version: api_version.clone(),
        resource_version: resource_version.clone(),
        field_path: field_path.clone(),
    }
}

/// Microseconds, as upstream's MicroTime sends (and its JSON form keeps).
fn micro_time(t: &meta::MicroTime) -> pb_meta::MicroTime {
    pb_meta::MicroTime {
        seconds: Some(t.0.as_second()),
        nanos: Some(t.0.subsec_nanosecond() / 1000 * 1000),
    }
}

/// Whole seconds, as a Time's JSON form keeps.
fn time(t: &meta::Time) -> pb_meta::Time {
    pb_meta::Time {
        seconds: Some(t.0.as_second()),
        nanos: Some(0),
    }
}

/// A client that creates objects in protobuf until the server refuses it (415 Unsupported
/// Media Type or 406 Not Acceptable: an aggregated API or a proxy without protobuf), then
/// in JSON from that request on. Clones share what was learnt.
#[derive(Clone)]
pub struct CreateClient {
    client: Client,
    json_only: Arc<AtomicBool>,
}

impl CreateClient {
    /// Protobuf first.
    pub fn new(client: Client) -> Self {
        CreateClient {
            client,
            json_only: Arc::new(AtomicBool::new(false)),
        }
    }

    /// JSON only, as kube's own requests and the binder's.
    pub fn json(client: Client) -> Self {
        CreateClient {
            client,
            json_only: Arc::new(AtomicBool::new(true)),
        }
    }

    /// The client itself, for other requests.
    pub fn kube(&self) -> &Client {
        &self.client
    }

    /// Whether requests go in JSON (protobuf was refused, or never tried).
    pub fn sends_json(&self) -> bool {
        self.json_only.load(Ordering::Relaxed)
    }

    /// POSTs `object` to `path`, the collection (or subresource) creating it. The answer's
    /// body is read only for an error's `Status`.
    pub async fn create<W>(
        &self,
        path: &str,
        object: &W,
        protobuf: W::Message,
    ) -> Result<(), kube::Error>
    where
        W: Wire + serde::Serialize,
    {
        if !self.sends_json() {
            let request = post(path, MEDIA_TYPE, ACCEPT_PROTOBUF, encode::<W>(&protobuf))?;
            let response = self.client.send(request).await?;
            if !refuses_protobuf(response.status()) {
                return answer(response).await;
            }
            if !self.json_only.swap(true, Ordering::Relaxed) {
                warn!(status = %response.status(), kind = W::NAME,
                    "the API server refuses protobuf requests; this client sends JSON from now on");
            }
        }
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        answer(self.client.send(post(path, JSON, JSON, body)?).await?).await
    }
}

fn refuses_protobuf(status: StatusCode) -> bool {
    status == StatusCode::UNSUPPORTED_MEDIA_TYPE || status == StatusCode::NOT_ACCEPTABLE
}

fn post(
    path: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> Result<Request<Body>, kube::Error> {
    Request::post(path)
        .header(CONTENT_TYPE, content_type)
        .header(ACCEPT, accept)
        .body(Body::from(body))
        .map_err(kube::Error::HttpError)
}

/// Ok for a success (its body read, up to [`MAX_RESPONSE`], so the connection is kept);
/// the server's `Status` as [`kube::Error::Api`] otherwise, or one naming what was wrong
/// with the answer when it holds none, with the answer's HTTP code either way.
async fn answer(response: Response<Body>) -> Result<(), kube::Error> {
    let code = response.status();
    let protobuf = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(MEDIA_TYPE));
    let body = Limited::new(response.into_body(), MAX_RESPONSE)
        .collect()
        .await;
    if code.is_success() {
        // Created: the object's echo is not needed, and a body cut short changes nothing.
        return Ok(());
    }
    let status = match body {
        Err(e) => failure(
            code,
            format!("the body of the answer could not be read: {e}"),
        ),
        Ok(body) => error_status(code, &body.to_bytes(), protobuf),
    };
    Err(kube::Error::Api(Box::new(status)))
}

/// The `Status` an error answer carries, in protobuf or JSON.
fn error_status(code: StatusCode, body: &[u8], protobuf: bool) -> kube::core::Status {
    if protobuf {
        return match decode::<Status>(body) {
            Ok(status) => from_protobuf(status, code),
            Err(e) => failure(code, format!("the answer's Status: {e}")),
        };
    }
    match serde_json::from_slice::<kube::core::Status>(body) {
        Ok(status) => status,
        Err(_) => failure(
            code,
            format!(
                "an answer that is not a Status: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)]).trim()
            ),
        ),
    }
}

fn failure(code: StatusCode, message: String) -> kube::core::Status {
    kube::core::Status::failure(&message, code.canonical_reason().unwrap_or_default())
        .with_code(code.as_u16())
}

/// The fields of a `Status` the binder reads (code, message, reason); the HTTP code when
/// the Status has none.
fn from_protobuf(status: pb_meta::Status, code: StatusCode) -> kube::core::Status {
    kube::core::Status {
        status: match status.status.as_deref() {
            Some("Success") => Some(StatusSummary::Success),
            Some("Failure") => Some(StatusSummary::Failure),
            _ => None,
        },
        code: status
            .code
            .and_then(|c| u16::try_from(c).ok())
            .filter(|&c| c != 0)
            .unwrap_or(code.as_u16()),
        message: status.message.unwrap_or_default(),
        reason: status.reason.unwrap_or_default(),
        metadata: None,
        details: None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use http::{Method, Response};
    use k8s_openapi::jiff::Timestamp;
    use kube::runtime::events::{Event, EventType, Reporter};
    use serde_json::Value;

    use super::*;
    use crate::binder::tests::{Handle, mock_client};
    use crate::binder::{BindError, OneOffEvents, bind, binding, record_scheduled};

    /// A request as the server saw it.
    struct Sent {
        path: String,
        content_type: String,
        accept: String,
        body: Vec<u8>,
    }

    /// Answers the next request with `code` and `body` of `content_type`.
    async fn answer(handle: &mut Handle, code: u16, content_type: &str, body: Vec<u8>) -> Sent {
        let (request, respond) = handle.next_request().await.expect("a request");
        let (parts, sent) = request.into_parts();
        assert_eq!(parts.method, Method::POST);
        let header = |name| {
            parts
                .headers
                .get(name)
                .map(|v: &http::HeaderValue| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let (path, content_type_sent, accept) = (
            parts.uri.path().to_string(),
            header(CONTENT_TYPE),
            header(ACCEPT),
        );
        let sent = sent.collect_bytes().await.unwrap().to_vec();
        respond.send_response(
            Response::builder()
                .status(code)
                .header(CONTENT_TYPE, content_type)
                .body(Body::from(body))
                .unwrap(),
        );
        Sent {
            path,
            content_type: content_type_sent,
            accept,
            body: sent,
        }
    }

    fn json_status(code: u16, reason: &str, message: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"kind": "Status", "apiVersion": "v1",
            "metadata": {}, "status": "Failure", "reason": reason, "message": message,
            "code": code}))
        .unwrap()
    }

    fn protobuf_status(code: i32, reason: &str, message: &str) -> Vec<u8> {
        encode::<Status>(&pb_meta::Status {
            status: Some("Failure".into()),
            message: Some(message.into()),
            reason: Some(reason.into()),
            code: Some(code),
            ..pb_meta::Status::default()
        })
    }

    fn pod() -> core::ObjectReference {
        core::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some("web-1".into()),
            uid: Some("uid-1".into()),
            ..core::ObjectReference::default()
        }
    }

    fn reporter() -> Reporter {
        Reporter {
            controller: "berth".into(),
            instance: Some("replica-1".into()),
        }
    }

    /// The `Scheduled` event of ns/web-1 on node-7 at a fixed time (with nanoseconds, which
    /// both encodings cut to microseconds).
    fn scheduled(events: &OneOffEvents) -> events::Event {
        let now: Timestamp = "2027-01-15T08:00:00.123456789Z".parse().unwrap();
        let event = Event {
            type_: EventType::Normal,
            reason: "Scheduled".into(),
            note: Some("Successfully assigned ns/web-1 to node-7".into()),
            action: "Binding".into(),
            secondary: None,
        };
        events.event(&event, &pod(), now)
    }

    fn testdata(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/protobuf")
            .join(name)
    }

    /// `bytes` against the golden file `name`; `BERTH_BLESS=1` rewrites it (then run the Go
    /// program beside it, which rewrites the JSON [`decoded_by_upstream`] reads).
    fn golden(name: &str, bytes: &[u8]) {
        let path = testdata(name);
        if std::env::var_os("BERTH_BLESS").is_some() {
            std::fs::write(&path, bytes).unwrap();
            return;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            bytes == want,
            "{} differs:\n got {bytes:02x?}\nwant {want:02x?}",
            path.display()
        );
    }

    /// Drops what Go's JSON writes for fields it holds unset: nulls and empty objects.
    fn without_unset(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, without_unset(v)))
                    .filter(|(_, v)| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
                    .collect(),
            ),
            other => other,
        }
    }

    /// What upstream's serializer decoded from the golden `name.pb` (`name.json`, written
    /// by `main.go` beside it) is what the JSON fallback sends.
    fn decoded_by_upstream(name: &str, fallback: &impl serde::Serialize) {
        let path = testdata(&format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let upstream: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            without_unset(upstream),
            without_unset(serde_json::to_value(fallback).unwrap())
        );
    }

    #[tokio::test]
    async fn the_binding_and_the_event_are_encoded_as_upstream_decodes_them() {
        let b = binding("ns", "web-1", "uid-1", "node-7");
        let binding_bytes = encode::<core::Binding>(&super::binding(&b));
        let (client, _handle) = mock_client();
        let events = OneOffEvents::new(CreateClient::new(client), reporter());
        let e = scheduled(&events);
        let event_bytes = encode::<events::Event>(&event(&e));
        golden("binding.pb", &binding_bytes);
        golden("event.pb", &event_bytes);
        decoded_by_upstream("binding", &b);
        decoded_by_upstream("event", &e);
        assert_eq!(
            decode::<core::Binding>(&binding_bytes),
            Ok(super::binding(&b))
        );
        assert_eq!(decode::<events::Event>(&event_bytes), Ok(event(&e)));
    }

    #[test]
    fn bytes_that_are_not_the_message_expected_say_why() {
        let b = encode::<core::Binding>(&super::binding(&binding("ns", "p", "u", "n")));
        assert_eq!(decode::<core::Binding>(b"{}"), Err(ProtobufError::NoMagic));
        assert!(matches!(
            decode::<core::Binding>(&b[..b.len() - 3]),
            Err(ProtobufError::Envelope(_))
        ));
        assert_eq!(
            decode::<Status>(&b),
            Err(ProtobufError::Kind {
                expected: "v1/Status",
                api_version: "v1".into(),
                kind: "Binding".into()
            })
        );
        let garbage = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("Binding".into()),
            }),
            raw: Some(vec![0x0a, 0x7f, 0x01]),
            ..Unknown::default()
        };
        let mut bytes = MAGIC.to_vec();
        bytes.extend(garbage.encode_to_vec());
        assert!(matches!(
            decode::<core::Binding>(&bytes),
            Err(ProtobufError::Object {
                kind: "Binding",
                ..
            })
        ));
        // Every prefix is an error or a message, never a panic.
        for end in 0..b.len() {
            let _ = decode::<core::Binding>(&b[..end]);
        }
    }

    #[tokio::test]
    async fn a_binding_goes_in_protobuf() {
        let (client, mut handle) = mock_client();
        let server = tokio::spawn(async move {
            answer(&mut handle, 201, MEDIA_TYPE, protobuf_status(201, "", "")).await
        });
        let client = CreateClient::new(client);
        bind(&client, "ns", "web-1", "uid-1", "node-7")
            .await
            .unwrap();
        let sent = server.await.unwrap();
        assert_eq!(sent.path, "/api/v1/namespaces/ns/pods/web-1/binding");
        assert_eq!(sent.content_type, MEDIA_TYPE);
        assert_eq!(sent.accept, ACCEPT_PROTOBUF);
        let sent = decode::<core::Binding>(&sent.body).unwrap();
        let metadata = sent.metadata.unwrap();
        assert_eq!(
            (metadata.name.as_deref(), metadata.uid.as_deref()),
            (Some("web-1"), Some("uid-1"))
        );
        assert_eq!(sent.target.unwrap().name.as_deref(), Some("node-7"));
        assert!(!client.sends_json());
    }

    #[tokio::test]
    async fn a_refusal_turns_the_client_and_its_clones_to_json() {
        for refusal in [415, 406] {
            let (client, mut handle) = mock_client();
            let server = tokio::spawn(async move {
                let refused = answer(
                    &mut handle,
                    refusal,
                    JSON,
                    json_status(refusal, "UnsupportedMediaType", "no protobuf here"),
                )
                .await;
                let retried = answer(&mut handle, 201, JSON, b"{}".to_vec()).await;
                let next = answer(&mut handle, 201, JSON, b"{}".to_vec()).await;
                [refused, retried, next].map(|s| s.content_type)
            });
            let client = CreateClient::new(client);
            bind(&client, "ns", "a", "uid-a", "n").await.unwrap();
            let events = OneOffEvents::new(client.clone(), reporter());
            record_scheduled(&events, &pod(), "n").await.unwrap();
            assert_eq!(server.await.unwrap(), [MEDIA_TYPE, JSON, JSON], "{refusal}");
            assert!(client.sends_json());
        }
    }

    #[tokio::test]
    async fn an_event_goes_in_protobuf() {
        let (client, mut handle) = mock_client();
        let server =
            tokio::spawn(async move { answer(&mut handle, 201, MEDIA_TYPE, Vec::new()).await });
        let events = OneOffEvents::new(CreateClient::new(client), reporter());
        record_scheduled(&events, &pod(), "node-7").await.unwrap();
        let sent = server.await.unwrap();
        assert_eq!(sent.path, "/apis/events.k8s.io/v1/namespaces/ns/events");
        let sent = decode::<events::Event>(&sent.body).unwrap();
        assert_eq!(sent.reason.as_deref(), Some("Scheduled"));
        assert_eq!(
            sent.note.as_deref(),
            Some("Successfully assigned ns/web-1 to node-7")
        );
        assert_eq!(sent.regarding.unwrap().uid.as_deref(), Some("uid-1"));
    }

    /// Binds once against an answer of `code` with `body` of `content_type`.
    async fn bind_against(code: u16, content_type: &'static str, body: Vec<u8>) -> BindError {
        let (client, mut handle) = mock_client();
        let server =
            tokio::spawn(async move { answer(&mut handle, code, content_type, body).await });
        let result = bind(&CreateClient::new(client), "ns", "web-1", "uid-1", "n").await;
        server.await.unwrap();
        result.unwrap_err()
    }

    #[tokio::test]
    async fn error_answers_keep_their_code_and_say_what_was_wrong() {
        let taken = "pod web-1 is already assigned to node \"m\"";
        assert_eq!(
            bind_against(409, MEDIA_TYPE, protobuf_status(409, "Conflict", taken)).await,
            BindError::Conflict(taken.into())
        );
        assert_eq!(
            bind_against(
                404,
                JSON,
                json_status(404, "NotFound", "pods \"web-1\" not found")
            )
            .await,
            BindError::PodGone("pods \"web-1\" not found".into())
        );
        let garbled = bind_against(409, MEDIA_TYPE, b"k8s\0\x0a\xff".to_vec()).await;
        assert!(
            matches!(&garbled, BindError::Conflict(m) if m.contains("envelope does not decode")),
            "{garbled:?}"
        );
        let not_protobuf = bind_against(404, MEDIA_TYPE, b"<html>".to_vec()).await;
        assert!(
            matches!(&not_protobuf, BindError::PodGone(m) if m.contains("does not start")),
            "{not_protobuf:?}"
        );
        let text = bind_against(500, JSON, b"upstream connect error".to_vec()).await;
        assert!(
            matches!(&text, BindError::Other(m) if m.contains("upstream connect error")),
            "{text:?}"
        );
        // An answer past the limit is not read to its end.
        let huge = bind_against(500, MEDIA_TYPE, vec![b'x'; MAX_RESPONSE + 1]).await;
        assert!(
            matches!(&huge, BindError::Other(m) if m.contains("could not be read")),
            "{huge:?}"
        );
    }
}
