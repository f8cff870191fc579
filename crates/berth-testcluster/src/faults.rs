//! A fault-injecting proxy between a scheduler under test and the cluster's apiserver.
//!
//! The scheduler talks plain HTTP to the proxy on 127.0.0.1 (its kubeconfig from
//! [`FaultProxy::kubeconfig_for_token`] carries its bearer token, which the proxy passes
//! on); the proxy forwards every request over HTTPS to the apiserver, trusting the
//! cluster's CA. Tests script what it does to two kinds of request:
//!
//! - pods/binding POSTs: answered with an error status without reaching the apiserver,
//!   forwarded and then answered with an error (the write happened, the client is told it
//!   failed), or held until the test releases them (a binding in flight);
//! - watches of one resource: stalled (events are dropped, as if the connection hung), and
//!   expired (ended with the `ERROR` event of status 410 Gone that an apiserver sends for a
//!   too-old resource version), which makes the client relist.
//!
//! The proxy runs on its own thread and runtime and stops when dropped or after its
//! lifetime bound, whichever comes first.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::sync::{oneshot, watch};

use crate::TestCluster;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

/// What happens to a binding the proxy intercepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingFault {
    /// Answered with this status; the apiserver never sees the binding.
    Refuse(u16),
    /// Forwarded (the pod is bound), then answered with this status instead of the
    /// apiserver's answer.
    ForwardThenFail(u16),
}

/// What becomes of held bindings when they are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Forwarded to the apiserver, which answers.
    Forward,
    /// Answered with this status without reaching the apiserver.
    Fail(u16),
}

/// What the proxy has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Binding POSTs received.
    pub bindings: usize,
    /// Bindings given a scripted fault (refused, or forwarded and failed).
    pub faulted: usize,
    /// Bindings held (ever).
    pub held: usize,
    /// Watch streams ended with 410 Gone.
    pub expired: usize,
    /// Watch events dropped while a resource's watches were stalled.
    pub dropped_events: usize,
}

/// Watch control, shared with every watch stream: which resources are stalled, and how
/// many times each resource's watches were expired.
#[derive(Debug, Clone, Default)]
struct WatchControl {
    stalled: HashSet<String>,
    expiries: HashMap<String, u64>,
}

struct Held {
    release: oneshot::Sender<Release>,
}

/// Which bindings are held.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hold {
    Every,
    To(String),
}

#[derive(Default)]
struct State {
    faults: VecDeque<BindingFault>,
    hold: Option<Hold>,
    held: Vec<Held>,
    stats: ProxyStats,
}

struct Shared {
    state: Mutex<State>,
    watches: watch::Sender<WatchControl>,
    upstream: Upstream,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How to reach the apiserver.
struct Upstream {
    addr: SocketAddr,
    tls: tokio_rustls::TlsConnector,
}

/// The proxy. Dropping it stops it.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy to `cluster`'s apiserver that stops after `lifetime` at the latest.
    pub fn start(cluster: &TestCluster, lifetime: Duration) -> Result<Self> {
        let ca = std::fs::read(cluster.ca_path()).context("reading the apiserver's CA")?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&ca) {
            roots.add(cert.context("the apiserver's CA file")?)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let upstream = Upstream {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, cluster.apiserver_port)),
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        };
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .context("binding the fault proxy on 127.0.0.1")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            watches: watch::Sender::new(WatchControl::default()),
            upstream,
        });
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the fault proxy's runtime")?;
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => return eprintln!("fault proxy: {e}"),
                    };
                    tokio::select! {
                        _ = serve(listener, serving) => {}
                        _ = stopped => {}
                        _ = tokio::time::sleep(lifetime) => {
                            eprintln!("fault proxy: stopping at its lifetime bound");
                        }
                    }
                });
            })?;
        Ok(FaultProxy {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig that reaches `cluster` through this proxy and authenticates with
    /// `token`.
    pub fn kubeconfig_for_token(&self, cluster: &TestCluster, token: &str) -> Result<PathBuf> {
        cluster.kubeconfig_at(&self.url(), token)
    }

    /// The next bindings, one fault each, in order; later ones pass.
    pub fn fault_next_bindings(&self, faults: impl IntoIterator<Item = BindingFault>) {
        self.shared.state().faults.extend(faults);
    }

    /// Scripted faults not yet used.
    pub fn pending_faults(&self) -> usize {
        self.shared.state().faults.len()
    }

    /// Holds the bindings to `node` (every binding, for None) from now on, until
    /// [`Self::stop_holding`]; they wait for [`Self::release_held`].
    pub fn hold_bindings(&self, node: Option<&str>) {
        self.shared.state().hold = Some(match node {
            Some(n) => Hold::To(n.to_owned()),
            None => Hold::Every,
        });
    }

    /// Lets new bindings pass; those held stay held.
    pub fn stop_holding(&self) {
        self.shared.state().hold = None;
    }

    /// How many bindings are held now.
    pub fn held(&self) -> usize {
        self.shared.state().held.len()
    }

    /// Releases the `n` oldest held bindings, forwarded or failed as `release` says.
    pub fn release_held(&self, n: usize, release: Release) {
        let held: Vec<Held> = {
            let mut state = self.shared.state();
            let n = n.min(state.held.len());
            state.held.drain(..n).collect()
        };
        for h in held {
            // A held request whose client gave up has nobody to answer.
            let _ = h.release.send(release);
        }
    }

    /// Drops every event of the watches of `resource` (e.g. `pods`) from now on, on open
    /// streams and new ones, until [`Self::expire_watches`].
    pub fn stall_watches(&self, resource: &str) {
        self.shared.watches.send_modify(|c| {
            c.stalled.insert(resource.to_owned());
        });
    }

    /// Ends every open watch of `resource` with a 410 Gone `ERROR` event and stops
    /// stalling it: the client must list again.
    pub fn expire_watches(&self, resource: &str) {
        self.shared.watches.send_modify(|c| {
            c.stalled.remove(resource);
            *c.expiries.entry(resource.to_owned()).or_default() += 1;
        });
    }

    /// What the proxy has done so far.
    pub fn stats(&self) -> ProxyStats {
        self.shared.state().stats.clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.release_held(usize::MAX, Release::Fail(503));
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl TestCluster {
    /// The apiserver's CA (its self-signed serving certificate file, which holds the CA).
    pub(crate) fn ca_path(&self) -> PathBuf {
        self.dir.path().join("certs").join("apiserver.crt")
    }
}

async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        // Reap finished connections so the set does not grow for the proxy's life.
        while connections.try_join_next().is_some() {}
        let shared = shared.clone();
        connections.spawn(async move {
            // One upstream connection per client connection: HTTP/1 answers one request at
            // a time, so the client's keep-alive maps onto the apiserver's.
            let upstream = Arc::new(tokio::sync::Mutex::new(None));
            let service =
                service_fn(move |request| handle(request, shared.clone(), upstream.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type UpstreamSender = Arc<tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>>;

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    upstream: UpstreamSender,
) -> Result<Response<ProxyBody>, Infallible> {
    Ok(match proxy(request, shared, &upstream).await {
        Ok(response) => response,
        Err(e) => status_response(502, &format!("fault proxy: {e:#}")),
    })
}

async fn proxy(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    upstream: &UpstreamSender,
) -> Result<Response<ProxyBody>> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let is_binding = parts.method == http::Method::POST && path.ends_with("/binding");
    let watched = (parts.method == http::Method::GET
        && query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1"))
    .then(|| resource_of(&path));

    let mut after_forward = None;
    if is_binding {
        let node = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|b| b["target"]["name"].as_str().map(str::to_owned))
            .unwrap_or_default();
        match binding_fault(&shared, &node) {
            Intercept::Pass => {}
            Intercept::Fault(BindingFault::Refuse(code)) => {
                return Ok(status_response(code, "fault proxy: binding refused"));
            }
            Intercept::Fault(BindingFault::ForwardThenFail(code)) => after_forward = Some(code),
            Intercept::Hold(released) => match released.await {
                Ok(Release::Forward) => {}
                Ok(Release::Fail(code)) => {
                    return Ok(status_response(code, "fault proxy: held binding failed"));
                }
                Err(_) => return Ok(status_response(503, "fault proxy: stopping")),
            },
        }
    }

    let mut upstream_request = Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.clone())
        .version(http::Version::HTTP_11);
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) && name != http::header::HOST {
            upstream_request = upstream_request.header(name, value);
        }
    }
    let upstream_request = upstream_request
        .header(
            http::header::HOST,
            HeaderValue::from_str(&shared.upstream.addr.to_string())?,
        )
        .body(Full::new(body))?;
    let response = send(&shared, upstream, upstream_request).await?;
    if let Some(code) = after_forward {
        // Read the apiserver's answer so the binding has happened, then hide it.
        let _ = response.into_body().collect().await;
        return Ok(status_response(
            code,
            "fault proxy: binding failed after it was made",
        ));
    }
    let (mut parts, body) = response.into_parts();
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    let body = match watched {
        Some(resource) if parts.status.is_success() => {
            parts.headers.remove(http::header::CONTENT_LENGTH);
            watch_body(body, resource, shared.clone())
        }
        _ => body.map_err(|e| Box::new(e) as BoxError).boxed(),
    };
    Ok(Response::from_parts(parts, body))
}

enum Intercept {
    Pass,
    Fault(BindingFault),
    Hold(oneshot::Receiver<Release>),
}

fn binding_fault(shared: &Shared, node: &str) -> Intercept {
    let mut state = shared.state();
    state.stats.bindings += 1;
    if let Some(fault) = state.faults.pop_front() {
        state.stats.faulted += 1;
        return Intercept::Fault(fault);
    }
    let hold = match &state.hold {
        Some(Hold::Every) => true,
        Some(Hold::To(n)) => n == node,
        None => false,
    };
    if hold {
        let (release, released) = oneshot::channel();
        state.held.push(Held { release });
        state.stats.held += 1;
        return Intercept::Hold(released);
    }
    Intercept::Pass
}

/// Sends `request` on the client connection's upstream connection, opening one (TCP, TLS,
/// HTTP/1 handshake) when there is none or the last one closed.
async fn send(
    shared: &Shared,
    upstream: &UpstreamSender,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>> {
    let mut sender = upstream.lock().await;
    if let Some(s) = sender.as_mut()
        && s.ready().await.is_err()
    {
        *sender = None;
    }
    let s = match sender.as_mut() {
        Some(s) => s,
        None => sender.insert(connect(&shared.upstream).await?),
    };
    Ok(s.send_request(request).await?)
}

async fn connect(upstream: &Upstream) -> Result<SendRequest<Full<Bytes>>> {
    let tcp = tokio::net::TcpStream::connect(upstream.addr)
        .await
        .context("connecting to the apiserver")?;
    let name = ServerName::IpAddress(upstream.addr.ip().into());
    let tls = upstream
        .tls
        .connect(name, tcp)
        .await
        .context("TLS to the apiserver")?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// The body of a watch of `resource`, passed on event by event (one JSON object per line),
/// dropping events while the resource is stalled and ending with a 410 `ERROR` event when
/// it is expired.
fn watch_body(mut upstream: Incoming, resource: String, shared: Arc<Shared>) -> ProxyBody {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, BoxError>>(16);
    tokio::spawn(async move {
        let mut control = shared.watches.subscribe();
        let expiries = |c: &WatchControl| c.expiries.get(&resource).copied().unwrap_or(0);
        let start = expiries(&control.borrow_and_update());
        let mut pending = BytesMut::new();
        loop {
            let frame = tokio::select! {
                frame = upstream.frame() => frame,
                changed = control.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if expiries(&control.borrow_and_update()) > start {
                        shared.state().stats.expired += 1;
                        let _ = tx.send(Ok(Frame::data(gone_event()))).await;
                        return;
                    }
                    continue;
                }
                _ = tx.closed() => return,
            };
            let data = match frame {
                None => return,
                Some(Err(e)) => {
                    let _ = tx.send(Err(Box::new(e))).await;
                    return;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            pending.extend_from_slice(&data);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let event = pending.split_to(end + 1).freeze();
                if control.borrow().stalled.contains(&resource) {
                    shared.state().stats.dropped_events += 1;
                    continue;
                }
                if tx.send(Ok(Frame::data(event))).await.is_err() {
                    return;
                }
            }
        }
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    StreamBody::new(events).boxed()
}

/// The event an apiserver ends a watch with when the resource version it resumes from is
/// too old (etcd compacted it).
fn gone_event() -> Bytes {
    let event = json!({
        "type": "ERROR",
        "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version (fault proxy)", "reason": "Expired",
            "code": 410
        }
    });
    Bytes::from(format!("{event}\n"))
}

/// An apiserver-style `Status` answer.
fn status_response(code: u16, message: &str) -> Response<ProxyBody> {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = match code {
        409 => "Conflict",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        _ => "Unknown",
    };
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code
    });
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The resource a list or watch path names: its last segment (`/api/v1/pods` -> `pods`).
fn resource_of(path: &str) -> String {
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// Headers about one hop's connection, which a proxy does not pass on.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_is_the_paths_last_segment() {
        assert_eq!(resource_of("/api/v1/pods"), "pods");
        assert_eq!(resource_of("/api/v1/namespaces/default/pods"), "pods");
        assert_eq!(resource_of("/apis/apps/v1/replicasets"), "replicasets");
    }

    #[test]
    fn the_gone_event_is_one_line_of_a_410_status() {
        let line = gone_event();
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let event: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            (event["type"].as_str(), event["object"]["code"].as_u64()),
            (Some("ERROR"), Some(410))
        );
    }
}
