//! A real scheduler extender for tests: an HTTP(S) server on 127.0.0.1 answering the four
//! verbs of k8s.io/kube-scheduler/extender/v1 (`filter`, `prioritize`, `bind`, `preempt`
//! under `/scheduler`), configurable to refuse nodes, score them, drop preemption
//! candidates or spare victims, slow down, fail with a status, answer garbage or a huge
//! body, or redirect. It reads requests as generic JSON,
//! independently of Berth's own wire types, and records every call.
//!
//! It runs on its own thread and stops when dropped or after its lifetime bound.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// How the server answers, for all verbs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Answer {
    /// The verb's proper answer.
    #[default]
    Normal,
    /// This HTTP status with an empty body.
    Status(u16),
    /// A body that is not JSON.
    Garbage,
    /// A valid-looking JSON string body of this many bytes.
    Huge(usize),
    /// `307 Temporary Redirect` to this location.
    Redirect(String),
    /// The verb's answer with its `Error` field set to this (filter and bind).
    Error(String),
}

/// A binding the server was asked to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRequest {
    /// `PodNamespace`.
    pub namespace: String,
    /// `PodName`.
    pub name: String,
    /// `PodUID`.
    pub uid: String,
    /// `Node`.
    pub node: String,
}

/// Called for each bind request; an `Err` is answered in the result's `Error`.
pub type Binder = Arc<dyn Fn(&BindRequest) -> Result<(), String> + Send + Sync>;

/// What the server does; change it at any time with [`ExtenderServer::configure`].
#[derive(Clone, Default)]
pub struct Behaviour {
    /// Nodes the filter refuses, with the message given in `FailedNodes`.
    pub refuse: BTreeMap<String, String>,
    /// Nodes the filter refuses in `FailedAndUnresolvableNodes`.
    pub unresolvable: BTreeMap<String, String>,
    /// Prioritize scores by node name (others get 0).
    pub scores: BTreeMap<String, i64>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// How to answer.
    pub answer: Answer,
    /// Makes the bindings; without one, bind requests are only recorded.
    pub binder: Option<Binder>,
    /// Preempt: candidate nodes to drop.
    pub preempt_drop: BTreeSet<String>,
    /// Preempt: victims to spare (left out of their node's victims), by UID, or by name
    /// when victims come whole.
    pub preempt_spare: BTreeSet<String>,
    /// Preempt: (node, pod UID) pairs to add to the answer, as a misbehaving extender might.
    pub preempt_add: Vec<(String, String)>,
}

/// One call received: the verb (last path segment) and its body as JSON.
#[derive(Debug, Clone)]
pub struct Call {
    /// `filter`, `prioritize`, `bind`, `preempt` or anything else asked for.
    pub verb: String,
    /// The request body (Null if it was not JSON).
    pub body: Value,
}

struct Shared {
    behaviour: Mutex<Behaviour>,
    calls: Mutex<Vec<Call>>,
    connections: AtomicUsize,
}

/// A running test extender.
pub struct ExtenderServer {
    addr: SocketAddr,
    tls: bool,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A PEM certificate chain and key for serving TLS.
#[derive(Clone)]
pub struct ServerTls {
    /// PEM certificate chain.
    pub cert_pem: Vec<u8>,
    /// PEM private key.
    pub key_pem: Vec<u8>,
    /// When set, clients must present a certificate signed by one of these (PEM).
    pub client_ca_pem: Option<Vec<u8>>,
}

impl ExtenderServer {
    /// Starts a plain HTTP extender that stops after `lifetime` at the latest.
    pub fn start(lifetime: Duration) -> Result<Self> {
        Self::start_inner(None, lifetime)
    }

    /// Starts an HTTPS extender.
    pub fn start_tls(tls: ServerTls, lifetime: Duration) -> Result<Self> {
        Self::start_inner(Some(tls), lifetime)
    }

    fn start_inner(tls: Option<ServerTls>, lifetime: Duration) -> Result<Self> {
        let acceptor = tls.map(acceptor).transpose()?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .context("binding the test extender on 127.0.0.1")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            behaviour: Mutex::new(Behaviour::default()),
            calls: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
        });
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the test extender's runtime")?;
        let is_tls = acceptor.is_some();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("test-extender".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => return eprintln!("test extender: {e}"),
                    };
                    let serve = serve(listener, acceptor, serving);
                    tokio::select! {
                        _ = serve => {}
                        _ = stopped => {}
                        _ = tokio::time::sleep(lifetime) => {
                            eprintln!("test extender: stopping at its lifetime bound");
                        }
                    }
                });
            })?;
        Ok(ExtenderServer {
            addr,
            tls: is_tls,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The URL prefix to put in a Policy: `http(s)://127.0.0.1:PORT/scheduler`.
    pub fn url_prefix(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/scheduler", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the behaviour.
    pub fn configure(&self, change: impl FnOnce(&mut Behaviour)) {
        change(
            &mut self
                .shared
                .behaviour
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
    }

    /// The calls received so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many connections were accepted (keep-alive clients reuse one).
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// How many calls of `verb` were received.
    pub fn count(&self, verb: &str) -> usize {
        self.calls().iter().filter(|c| c.verb == verb).count()
    }
}

impl Drop for ExtenderServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn acceptor(tls: ServerTls) -> Result<tokio_rustls::TlsAcceptor> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = CertificateDer::pem_slice_iter(&tls.cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("test extender certificate")?;
    let key = PrivateKeyDer::from_pem_slice(&tls.key_pem).context("test extender key")?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match tls.client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&ca) {
                roots.add(cert.context("client CA")?)?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certs, key)?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(request, shared.clone()));
            let http = hyper::server::conn::http1::Builder::new();
            match acceptor {
                None => {
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                }
                Some(acceptor) => {
                    // A refused handshake (a client that does not trust us) just ends here.
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
            }
        });
    }
}

async fn handle(
    request: Request<hyper::body::Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let verb = request
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Call {
            verb: verb.clone(),
            body: body.clone(),
        });
    let behaviour = shared
        .behaviour
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if !behaviour.delay.is_zero() {
        tokio::time::sleep(behaviour.delay).await;
    }
    let reply = |status: StatusCode, body: Vec<u8>| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    };
    let error = match &behaviour.answer {
        Answer::Normal => None,
        Answer::Error(message) => Some(message.clone()),
        Answer::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Ok(reply(status, Vec::new()));
        }
        Answer::Garbage => return Ok(reply(StatusCode::OK, b"<html>not json</html>".to_vec())),
        Answer::Huge(size) => {
            let mut body = vec![b'"'];
            body.resize(size.saturating_sub(1), b'x');
            body.push(b'"');
            return Ok(reply(StatusCode::OK, body));
        }
        Answer::Redirect(location) => {
            let mut response = reply(StatusCode::TEMPORARY_REDIRECT, Vec::new());
            if let Ok(value) = location.parse() {
                response.headers_mut().insert(http::header::LOCATION, value);
            }
            return Ok(response);
        }
    };
    let answer = match verb.as_str() {
        "filter" => filter(&body, &behaviour, error),
        "prioritize" => prioritize(&body, &behaviour),
        "bind" => bind(&body, &behaviour, error),
        "preempt" => preempt(&body, &behaviour),
        _ => return Ok(reply(StatusCode::NOT_FOUND, Vec::new())),
    };
    Ok(reply(StatusCode::OK, answer.to_string().into_bytes()))
}

/// The names and (when sent whole) the node objects of an `ExtenderArgs`.
fn sent_nodes(args: &Value) -> (bool, Vec<(String, Value)>) {
    if let Some(names) = args.get("NodeNames").and_then(Value::as_array) {
        let nodes = names
            .iter()
            .filter_map(Value::as_str)
            .map(|n| (n.to_string(), Value::Null))
            .collect();
        return (true, nodes);
    }
    let items = args
        .pointer("/Nodes/items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let nodes = items
        .into_iter()
        .map(|node| {
            let name = node
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (name, node)
        })
        .collect();
    (false, nodes)
}

fn filter(args: &Value, behaviour: &Behaviour, error: Option<String>) -> Value {
    let (by_name, sent) = sent_nodes(args);
    let mut failed = serde_json::Map::new();
    let mut unresolvable = serde_json::Map::new();
    let mut passed = Vec::new();
    for (name, node) in sent {
        if let Some(message) = behaviour.unresolvable.get(&name) {
            unresolvable.insert(name, json!(message));
        } else if let Some(message) = behaviour.refuse.get(&name) {
            failed.insert(name, json!(message));
        } else {
            passed.push((name, node));
        }
    }
    let (nodes, names) = if by_name {
        let names: Vec<String> = passed.into_iter().map(|(n, _)| n).collect();
        (Value::Null, json!(names))
    } else {
        let items: Vec<Value> = passed.into_iter().map(|(_, n)| n).collect();
        (json!({"metadata": {}, "items": items}), Value::Null)
    };
    json!({
        "Nodes": nodes,
        "NodeNames": names,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": error.unwrap_or_default(),
    })
}

fn prioritize(args: &Value, behaviour: &Behaviour) -> Value {
    let (_, sent) = sent_nodes(args);
    let list: Vec<Value> = sent
        .into_iter()
        .map(|(name, _)| {
            let score = behaviour.scores.get(&name).copied().unwrap_or(0);
            json!({"Host": name, "Score": score})
        })
        .collect();
    Value::Array(list)
}

fn bind(args: &Value, behaviour: &Behaviour, error: Option<String>) -> Value {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let request = BindRequest {
        namespace: text("PodNamespace"),
        name: text("PodName"),
        uid: text("PodUID"),
        node: text("Node"),
    };
    let outcome = match (error, &behaviour.binder) {
        (Some(message), _) => Err(message),
        (None, Some(binder)) => binder(&request),
        (None, None) => Ok(()),
    };
    json!({"Error": outcome.err().unwrap_or_default()})
}

/// Answers with the candidates and victims it was sent, as meta victims (pod UIDs, as
/// upstream's extenders always answer), less the dropped nodes and spared victims, plus
/// the added pairs.
fn preempt(args: &Value, behaviour: &Behaviour) -> Value {
    let mut result: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let spared = |uid: &str, name: &str| {
        behaviour.preempt_spare.contains(uid) || behaviour.preempt_spare.contains(name)
    };
    let text = |v: &Value, pointer: &str| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (map, meta) = match args.get("NodeNameToMetaVictims").and_then(Value::as_object) {
        Some(meta) => (Some(meta), true),
        None => (
            args.get("NodeNameToVictims").and_then(Value::as_object),
            false,
        ),
    };
    for (node, victims) in map.into_iter().flatten() {
        if behaviour.preempt_drop.contains(node) {
            continue;
        }
        let pods = victims.get("Pods").and_then(Value::as_array);
        let uids = pods
            .into_iter()
            .flatten()
            .map(|p| {
                if meta {
                    (text(p, "/UID"), String::new())
                } else {
                    (text(p, "/metadata/uid"), text(p, "/metadata/name"))
                }
            })
            .filter(|(uid, name)| !spared(uid, name))
            .map(|(uid, _)| uid)
            .collect();
        result.insert(node.clone(), uids);
    }
    for (node, uid) in &behaviour.preempt_add {
        result.entry(node.clone()).or_default().push(uid.clone());
    }
    let result: serde_json::Map<String, Value> = result
        .into_iter()
        .map(|(node, uids)| {
            let pods: Vec<Value> = uids.into_iter().map(|uid| json!({"UID": uid})).collect();
            (node, json!({"Pods": pods, "NumPDBViolations": 0}))
        })
        .collect();
    json!({ "NodeNameToMetaVictims": result })
}

/// A self-signed CA and a server certificate for 127.0.0.1 signed by it, plus a client
/// certificate signed by the same CA, made with the `openssl` command line tool.
pub struct TestCertificates {
    /// The CA certificate (PEM).
    pub ca_pem: Vec<u8>,
    /// The server's TLS material.
    pub server: ServerTls,
    /// A client certificate (PEM) signed by the CA.
    pub client_cert_pem: Vec<u8>,
    /// Its key (PEM).
    pub client_key_pem: Vec<u8>,
}

impl TestCertificates {
    /// Makes the certificates in `dir`.
    pub fn generate(dir: &std::path::Path) -> Result<Self> {
        let run = |args: &[&str]| -> Result<()> {
            let out = std::process::Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .context("running openssl (needed to make test certificates)")?;
            anyhow::ensure!(
                out.status.success(),
                "openssl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        };
        let key = |name: &str| {
            run(&[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                name,
            ])
        };
        key("ca.key")?;
        run(&[
            "req",
            "-x509",
            "-new",
            "-key",
            "ca.key",
            "-subj",
            "/CN=berth-test-ca",
            "-days",
            "1",
            "-out",
            "ca.crt",
        ])?;
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:extender.test\nextendedKeyUsage=serverAuth\n",
        )?;
        std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n")?;
        for (name, cn) in [("server", "127.0.0.1"), ("client", "berth")] {
            key(&format!("{name}.key"))?;
            run(&[
                "req",
                "-new",
                "-key",
                &format!("{name}.key"),
                "-subj",
                &format!("/CN={cn}"),
                "-out",
                &format!("{name}.csr"),
            ])?;
            run(&[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &format!("{name}.ext"),
                "-out",
                &format!("{name}.crt"),
            ])?;
        }
        let read =
            |name: &str| std::fs::read(dir.join(name)).with_context(|| format!("reading {name}"));
        Ok(TestCertificates {
            ca_pem: read("ca.crt")?,
            server: ServerTls {
                cert_pem: read("server.crt")?,
                key_pem: read("server.key")?,
                client_ca_pem: None,
            },
            client_cert_pem: read("client.crt")?,
            client_key_pem: read("client.key")?,
        })
    }
}
