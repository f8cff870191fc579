//! One extender's HTTP client: a pooled keep-alive connection per extender, `httpTimeout`
//! over the whole exchange (connect, send, read), bounded answers, no redirects.
//!
//! Calls run on a tokio runtime the caller owns; the scheduling thread starts them and waits
//! on a plain channel, so it may be any thread (not one of the runtime's).

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use berth_policy::Extender;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::ServerName;
use serde_json::value::RawValue;
use tokio::runtime::Handle;

use crate::error::{CallError, ConfigError};
use crate::tls;
use crate::wire::{
    self, ExtenderArgs, ExtenderBindingArgs, ExtenderPreemptionArgs, MetaPod, MetaVictims,
    NodeList, Victims,
};

/// Idle keep-alive connections are closed after this long (Go's default transport: 90 s).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// An answer may be this much larger than twice its request.
const ANSWER_SLACK: usize = 1 << 20;

/// An extender call, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// `filterVerb`.
    Filter,
    /// `prioritizeVerb`.
    Prioritize,
    /// `bindVerb`.
    Bind,
    /// `preemptVerb`.
    Preempt,
}

impl Verb {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Filter => "filter",
            Verb::Prioritize => "prioritize",
            Verb::Bind => "bind",
            Verb::Preempt => "preempt",
        }
    }
}

/// Told about every finished call: extender (URL prefix), verb, duration, success.
pub type Observer = Arc<dyn Fn(&str, Verb, Duration, bool) + Send + Sync>;

/// What a filter call decided, in upstream's terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterAnswer {
    /// The nodes that passed, in the extender's order.
    pub passed: Vec<String>,
    /// Failed nodes and their messages.
    pub failed: Vec<(String, String)>,
    /// Failed nodes that preemption cannot help, and their messages.
    pub failed_and_unresolvable: Vec<(String, String)>,
}

/// One candidate node as a preempt call carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreemptionCandidate<'a> {
    /// The node's name.
    pub node: &'a str,
    /// Its victims: (`namespace/name`, UID), most important first.
    pub victims: Vec<(String, &'a str)>,
    /// How many of them violate a PodDisruptionBudget.
    pub pdb_violations: i64,
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An extender reached over HTTP(S).
pub struct HttpExtender {
    config: Extender,
    client: HttpsClient,
    /// Whether the urlPrefix is https, and where the TLS material came from: to explain
    /// a failed connection.
    tls: Arc<(bool, tls::TlsSources)>,
    runtime: Handle,
    observer: Option<Observer>,
}

impl std::fmt::Debug for HttpExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpExtender")
            .field("url_prefix", &self.config.url_prefix)
            .finish_non_exhaustive()
    }
}

impl HttpExtender {
    /// Sets up the client of one Policy extender; its calls run on `runtime`.
    pub fn new(config: &Extender, runtime: Handle) -> Result<Self, ConfigError> {
        let (connector, sources) = connector(config)?;
        let https = config.url_prefix.starts_with("https://");
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .build(connector);
        Ok(HttpExtender {
            config: config.clone(),
            client,
            tls: Arc::new((https, sources)),
            runtime,
            observer: None,
        })
    }

    /// Reports every finished call to `observer` (metrics).
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The Policy entry.
    pub fn config(&self) -> &Extender {
        &self.config
    }

    /// Upstream's name of an extender: its URL prefix.
    pub fn name(&self) -> &str {
        &self.config.url_prefix
    }

    /// The full URL of `verb`, as upstream builds it.
    pub fn url(&self, verb: &str) -> String {
        format!("{}/{verb}", self.config.url_prefix.trim_end_matches('/'))
    }

    /// The body of a filter or prioritize call: the pod and the nodes, by name when the
    /// extender is node-cache capable, else whole (`node_json` gives each node's JSON).
    pub fn args(
        &self,
        pod: &RawValue,
        names: &[&str],
        node_json: impl FnOnce(&[&str]) -> Result<Vec<Arc<RawValue>>, String>,
    ) -> Result<Vec<u8>, String> {
        let whole;
        let args = if self.config.node_cache_capable {
            ExtenderArgs {
                pod,
                nodes: None,
                node_names: Some(names),
            }
        } else {
            whole = node_json(names)?;
            ExtenderArgs {
                pod,
                nodes: Some(NodeList {
                    metadata: wire::Empty {},
                    items: whole.iter().map(|n| n.as_ref()).collect(),
                }),
                node_names: None,
            }
        };
        serde_json::to_vec(&args).map_err(|e| e.to_string())
    }

    /// The body of a preempt call, as upstream's ProcessPreemption builds it: a node-cache
    /// capable extender gets each victim's UID (`NodeNameToMetaVictims`, whose
    /// `NumPDBViolations` upstream never fills in, so 0), the others the victims' whole
    /// objects and their budget violations (`NodeNameToVictims`; `pod_json` gives each
    /// victim's JSON by `namespace/name`).
    pub fn preemption_args(
        &self,
        pod: &RawValue,
        candidates: &[PreemptionCandidate<'_>],
        pod_json: impl Fn(&str) -> Option<Arc<RawValue>>,
    ) -> Result<Vec<u8>, String> {
        if self.config.node_cache_capable {
            let meta = candidates
                .iter()
                .map(|c| {
                    let pods = c.victims.iter().map(|(_, uid)| MetaPod { uid }).collect();
                    (
                        c.node,
                        MetaVictims {
                            pods,
                            num_pdb_violations: 0,
                        },
                    )
                })
                .collect();
            let args = ExtenderPreemptionArgs {
                pod,
                node_name_to_victims: None,
                node_name_to_meta_victims: Some(meta),
            };
            return serde_json::to_vec(&args).map_err(|e| e.to_string());
        }
        let json = candidates
            .iter()
            .map(|c| {
                c.victims
                    .iter()
                    .map(|(key, _)| {
                        pod_json(key).ok_or_else(|| {
                            format!(
                                "extender {:?}: Berth holds no JSON for victim pod {key}, so it \
                                 cannot be sent",
                                self.name()
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let whole = candidates
            .iter()
            .zip(&json)
            .map(|(c, pods)| {
                (
                    c.node,
                    Victims {
                        pods: pods.iter().map(|p| p.as_ref()).collect(),
                        num_pdb_violations: c.pdb_violations,
                    },
                )
            })
            .collect();
        let args = ExtenderPreemptionArgs {
            pod,
            node_name_to_victims: Some(whole),
            node_name_to_meta_victims: None,
        };
        serde_json::to_vec(&args).map_err(|e| e.to_string())
    }

    /// Starts a preempt call with `body` (from [`HttpExtender::preemption_args`]).
    pub fn start_preempt(&self, body: Vec<u8>) -> Pending {
        let verb = self.config.preempt_verb.clone().unwrap_or_default();
        self.start(Verb::Preempt, &verb, body)
    }

    /// Reads a preempt answer: each node the extender keeps with its victims' UIDs.
    pub fn preempt_answer(&self, body: &[u8]) -> Result<Vec<(String, Vec<String>)>, CallError> {
        let verb = self.config.preempt_verb.as_deref().unwrap_or_default();
        wire::preemption_result(body)
            .map_err(|problem| self.garbage(verb, wire::PREEMPTION_RESULT, problem))
    }

    /// Starts a filter call with `body` (from [`HttpExtender::args`]).
    pub fn start_filter(&self, body: Vec<u8>) -> Pending {
        let verb = self.config.filter_verb.clone().unwrap_or_default();
        self.start(Verb::Filter, &verb, body)
    }

    /// Starts a prioritize call with `body` (from [`HttpExtender::args`]).
    pub fn start_prioritize(&self, body: Vec<u8>) -> Pending {
        let verb = self.config.prioritize_verb.clone().unwrap_or_default();
        self.start(Verb::Prioritize, &verb, body)
    }

    /// Reads a filter answer as upstream does: `Error` fails the call; a node-cache capable
    /// extender's `NodeNames` are the nodes that passed, else `Nodes`; neither means none
    /// passed. (The engine checks that each passed node is one it sent.)
    pub fn filter_answer(&self, body: &[u8]) -> Result<FilterAnswer, CallError> {
        let verb = self.config.filter_verb.as_deref().unwrap_or_default();
        let result = wire::filter_result(body)
            .map_err(|problem| self.garbage(verb, wire::FILTER_RESULT, problem))?;
        if !result.error.is_empty() {
            return Err(CallError::Reported(result.error));
        }
        let passed = match (
            self.config.node_cache_capable,
            result.node_names,
            result.nodes,
        ) {
            (true, Some(names), _) | (_, _, Some(names)) => names,
            _ => Vec::new(),
        };
        Ok(FilterAnswer {
            passed,
            failed: result.failed_nodes,
            failed_and_unresolvable: result.failed_and_unresolvable,
        })
    }

    /// Reads a prioritize answer: (host, score) pairs as given.
    pub fn prioritize_answer(&self, body: &[u8]) -> Result<Vec<(String, i64)>, CallError> {
        let verb = self.config.prioritize_verb.as_deref().unwrap_or_default();
        wire::host_priority_list(body)
            .map_err(|problem| self.garbage(verb, wire::HOST_PRIORITY_LIST, problem))
    }

    /// Asks the extender to bind the pod to `node` (it binds instead of the scheduler).
    /// Blocks the calling thread, which must not be one of the runtime's.
    pub fn bind(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<(), CallError> {
        let verb = self.config.bind_verb.clone().unwrap_or_default();
        let body = serde_json::to_vec(&ExtenderBindingArgs {
            pod_name: name,
            pod_namespace: namespace,
            pod_uid: uid,
            node,
        })
        .expect("binding arguments are strings");
        let answer = self.start(Verb::Bind, &verb, body).wait()?;
        let error = wire::binding_result(&answer)
            .map_err(|problem| self.garbage(&verb, wire::BINDING_RESULT, problem))?;
        if error.is_empty() {
            Ok(())
        } else {
            Err(CallError::Reported(error))
        }
    }

    /// The same bind call as an async function, for callers on the runtime.
    pub async fn bind_async(
        self: Arc<Self>,
        namespace: String,
        name: String,
        uid: String,
        node: String,
    ) -> Result<(), CallError> {
        let runtime = self.runtime.clone();
        runtime
            .spawn_blocking(move || self.bind(&namespace, &name, &uid, &node))
            .await
            .unwrap_or_else(|e| {
                Err(CallError::NotCalled {
                    extender: String::new(),
                    cause: e.to_string(),
                })
            })
    }

    fn garbage(&self, verb: &str, expected: &'static str, problem: String) -> CallError {
        CallError::Garbage {
            verb: verb.to_string(),
            url: self.url(verb),
            expected,
            problem,
        }
    }

    /// Sends `body` to `verb` on the runtime; the answer's body comes back through [`Pending`].
    fn start(&self, kind: Verb, verb: &str, body: Vec<u8>) -> Pending {
        let (tx, rx) = mpsc::sync_channel(1);
        let exchange = Exchange {
            client: self.client.clone(),
            tls: self.tls.clone(),
            url: self.url(verb),
            verb: verb.to_string(),
            limit: ANSWER_SLACK.saturating_add(body.len().saturating_mul(2)),
            body: Bytes::from(body),
            timeout: self.config.http_timeout,
        };
        let observer = self.observer.clone();
        let name = self.config.url_prefix.clone();
        self.runtime.spawn(async move {
            let started = Instant::now();
            let result = exchange.run().await;
            if let Some(observe) = observer {
                observe(&name, kind, started.elapsed(), result.is_ok());
            }
            // The receiver may be gone (its cycle was abandoned); nothing to tell then.
            let _ = tx.send(result);
        });
        Pending {
            rx,
            extender: self.config.url_prefix.clone(),
        }
    }
}

/// Checks everything [`HttpExtender::new`] would (the URL, the TLS material and its files)
/// without making a client: for a reloaded policy, before it is accepted.
pub fn check(config: &Extender) -> Result<(), ConfigError> {
    connector(config).map(drop)
}

/// The connector of `config`: its URL checked, its TLS set up as its `tlsConfig` says.
fn connector(
    config: &Extender,
) -> Result<(HttpsConnector<HttpConnector>, tls::TlsSources), ConfigError> {
    let url = &config.url_prefix;
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| ConfigError::BadUrl {
            url: url.clone(),
            problem: e.to_string(),
        })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.authority().is_some() => {}
        _ => {
            return Err(ConfigError::BadUrl {
                url: url.clone(),
                problem: "expected e.g. \"http://127.0.0.1:8888/scheduler\"".into(),
            });
        }
    }
    let (tls_config, sources) = tls::client_config(config)?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http();
    let connector = match tls::server_name(config.tls_config.as_ref()) {
        Some(name) => {
            let name = ServerName::try_from(name.clone()).map_err(|e| ConfigError::Tls {
                url: url.clone(),
                problem: format!("serverName {name:?}: {e}"),
            })?;
            builder
                .with_server_name_resolver(FixedServerNameResolver::new(name))
                .enable_http1()
                .wrap_connector(http)
        }
        None => builder.enable_http1().wrap_connector(http),
    };
    Ok((connector, sources))
}

/// A call under way.
pub struct Pending {
    rx: mpsc::Receiver<Result<Bytes, CallError>>,
    extender: String,
}

impl Pending {
    /// Waits for the answer's body (at most the extender's `httpTimeout`, which the call
    /// itself enforces).
    pub fn wait(self) -> Result<Bytes, CallError> {
        self.rx.recv().unwrap_or_else(|_| {
            Err(CallError::NotCalled {
                extender: self.extender,
                cause: "the extender runtime stopped before the call finished".into(),
            })
        })
    }
}

/// Everything one call needs, moved onto the runtime.
struct Exchange {
    client: HttpsClient,
    tls: Arc<(bool, tls::TlsSources)>,
    url: String,
    verb: String,
    body: Bytes,
    limit: usize,
    timeout: Duration,
}

impl Exchange {
    async fn run(self) -> Result<Bytes, CallError> {
        let url = self.url.clone();
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.exchange())
            .await
            .unwrap_or(Err(CallError::Timeout { url, timeout }))
    }

    async fn exchange(self) -> Result<Bytes, CallError> {
        let transport = |e: &(dyn std::error::Error + 'static)| {
            let (https, sources) = &*self.tls;
            let mut cause = chain(e);
            if let Some(fix) = tls::explain(e, *https, sources) {
                cause.push_str(": ");
                cause.push_str(&fix);
            }
            CallError::Transport {
                url: self.url.clone(),
                cause,
            }
        };
        let request = Request::post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(self.body.clone()))
            .map_err(|e| transport(&e))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| transport(&e))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(LOCATION)
                .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
                .unwrap_or_default();
            return Err(CallError::Redirect {
                verb: self.verb.clone(),
                url: self.url.clone(),
                code: status.as_u16(),
                location,
            });
        }
        if status != StatusCode::OK {
            return Err(CallError::Status {
                verb: self.verb.clone(),
                url: self.url.clone(),
                code: status.as_u16(),
            });
        }
        let too_large = || CallError::TooLarge {
            verb: self.verb.clone(),
            url: self.url.clone(),
            limit: self.limit,
        };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.limit as u64) {
            return Err(too_large());
        }
        match Limited::new(response.into_body(), self.limit)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            Err(e) => Err(transport(e.as_ref())),
        }
    }
}

/// An error and its causes, as one line: hyper's own text is terse ("client error
/// (Connect)"), the cause says what happened ("Connection refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
