//! A small scheduler extender server speaking k8s.io/kube-scheduler/extender/v1 `filter` and
//! `prioritize` on 127.0.0.1, deciding with caller-given rules. `berth bench --workload
//! extender` runs one in process so that the calls it times are real HTTP round trips.
//!
//! It runs on its own thread and stops when dropped or after its lifetime bound, whichever
//! comes first. Request bodies are bounded; anything but a well-formed `ExtenderArgs` to one
//! of the two verbs is answered with a 4xx status naming what was wrong.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

/// The largest request body read; a 5,000-node `NodeList` of real nodes fits well inside.
pub const MAX_REQUEST_BYTES: usize = 256 << 20;

/// Gives the failure message for a node the filter refuses, `None` to pass it.
pub type RefuseRule = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;
/// Gives a node's prioritize score.
pub type ScoreRule = Box<dyn Fn(&str) -> i64 + Send + Sync>;

/// How the server decides: a node is refused when `refuse` gives a message for it, and
/// scored by `score` (extender/v1 scores are 0..=10).
pub struct Rules {
    /// The failure message for a node the filter refuses, `None` to pass it.
    pub refuse: RefuseRule,
    /// A node's prioritize score.
    pub score: ScoreRule,
}

/// A running extender server.
pub struct ExtenderServer {
    addr: SocketAddr,
    counts: Arc<Counts>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Counts {
    filter: AtomicU64,
    prioritize: AtomicU64,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[error("starting the extender server on 127.0.0.1: {0}")]
pub struct StartError(#[from] std::io::Error);

impl ExtenderServer {
    /// Starts serving `/scheduler/filter` and `/scheduler/prioritize` on an ephemeral port of
    /// 127.0.0.1; it stops after `lifetime` at the latest.
    pub fn start(rules: Rules, lifetime: Duration) -> Result<Self, StartError> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let counts = Arc::new(Counts::default());
        let (stop, stopped) = oneshot::channel();
        let state = Arc::new((rules, counts.clone()));
        let thread = std::thread::Builder::new()
            .name("extender-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => return tracing::error!("extender server: {e}"),
                    };
                    tokio::select! {
                        _ = serve(listener, state) => {}
                        _ = stopped => {}
                        _ = tokio::time::sleep(lifetime) => {
                            tracing::warn!("extender server: stopping at its lifetime bound");
                        }
                    }
                });
            })?;
        Ok(ExtenderServer {
            addr,
            counts,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The `urlPrefix` to put in a Policy: `http://127.0.0.1:PORT/scheduler`.
    pub fn url_prefix(&self) -> String {
        format!("http://{}/scheduler", self.addr)
    }

    /// Filter calls answered so far.
    pub fn filter_calls(&self) -> u64 {
        self.counts.filter.load(Ordering::Relaxed)
    }

    /// Prioritize calls answered so far.
    pub fn prioritize_calls(&self) -> u64 {
        self.counts.prioritize.load(Ordering::Relaxed)
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

async fn serve(listener: tokio::net::TcpListener, state: Arc<(Rules, Arc<Counts>)>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or similar: wait instead of spinning.
                tracing::warn!("extender server: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(request, state.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn reply(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        "application/json".parse().expect("static"),
    );
    response
}

async fn handle(
    request: Request<hyper::body::Incoming>,
    state: Arc<(Rules, Arc<Counts>)>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (rules, counts) = &*state;
    let verb = match request.uri().path() {
        "/scheduler/filter" => "filter",
        "/scheduler/prioritize" => "prioritize",
        other => {
            let message = format!(
                "no verb at {other:?}: this extender serves /scheduler/filter and \
                 /scheduler/prioritize"
            );
            return Ok(reply(StatusCode::NOT_FOUND, message.into_bytes()));
        }
    };
    if request.method() != hyper::Method::POST {
        let message = format!("{verb}: method {} not allowed, use POST", request.method());
        return Ok(reply(StatusCode::METHOD_NOT_ALLOWED, message.into_bytes()));
    }
    let body = match Limited::new(request.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            let message =
                format!("{verb}: reading the body (at most {MAX_REQUEST_BYTES} bytes): {e}");
            return Ok(reply(StatusCode::BAD_REQUEST, message.into_bytes()));
        }
    };
    let args = match parse_args(&body) {
        Ok(args) => args,
        Err(problem) => {
            let message = format!("{verb}: not an ExtenderArgs: {problem}");
            return Ok(reply(StatusCode::BAD_REQUEST, message.into_bytes()));
        }
    };
    let answer = if verb == "filter" {
        counts.filter.fetch_add(1, Ordering::Relaxed);
        filter(rules, args)
    } else {
        counts.prioritize.fetch_add(1, Ordering::Relaxed);
        let list: Vec<Value> = args
            .names()
            .map(|name| json!({"Host": name, "Score": (rules.score)(name)}))
            .collect();
        Value::Array(list)
    };
    Ok(reply(StatusCode::OK, answer.to_string().into_bytes()))
}

/// The candidate nodes of an `ExtenderArgs`: names (node-cache capable callers) or objects.
enum Args {
    Names(Vec<String>),
    Nodes(Vec<(String, Value)>),
}

impl Args {
    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            Args::Names(names) => Box::new(names.iter().map(String::as_str)),
            Args::Nodes(nodes) => Box::new(nodes.iter().map(|(name, _)| name.as_str())),
        }
    }
}

fn parse_args(body: &[u8]) -> Result<Args, String> {
    let mut value: Map<String, Value> =
        serde_json::from_slice(body).map_err(|e| format!("not a JSON object: {e}"))?;
    if let Some(names) = value.remove("NodeNames").filter(|v| !v.is_null()) {
        return serde_json::from_value(names)
            .map(Args::Names)
            .map_err(|e| format!("NodeNames must be an array of strings: {e}"));
    }
    let Some(Value::Object(mut list)) = value.remove("Nodes") else {
        return Err("neither NodeNames (an array) nor Nodes (a NodeList object) is set".into());
    };
    let Some(Value::Array(items)) = list.remove("items") else {
        return Err("Nodes.items must be an array of nodes".into());
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, node)| {
            let name = node
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("Nodes.items[{i}] has no metadata.name string"))?
                .to_string();
            Ok((name, node))
        })
        .collect::<Result<_, String>>()
        .map(Args::Nodes)
}

fn filter(rules: &Rules, args: Args) -> Value {
    let mut failed = Map::new();
    let mut keep = |name: &str| match (rules.refuse)(name) {
        Some(message) => {
            failed.insert(name.to_string(), Value::String(message));
            false
        }
        None => true,
    };
    // Node-cache capable callers get names back, the others the node objects, as upstream's
    // extenders answer.
    let passed = match args {
        Args::Names(names) => {
            let names: Vec<String> = names.into_iter().filter(|n| keep(n)).collect();
            json!({"NodeNames": names})
        }
        Args::Nodes(nodes) => {
            let items: Vec<Value> = nodes
                .into_iter()
                .filter(|(name, _)| keep(name))
                .map(|(_, node)| node)
                .collect();
            json!({"Nodes": {"metadata": {}, "items": items}})
        }
    };
    let mut answer = passed;
    answer["FailedNodes"] = Value::Object(failed);
    answer["Error"] = Value::String(String::new());
    answer
}
