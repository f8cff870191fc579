//! The HTTP client against the real test extender: each verb's message shape, keep-alive,
//! and every kind of bad answer giving its named error within `httpTimeout`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_extender::{CallError, HttpExtender};
use berth_testcluster::extender::{Answer, BindRequest, ExtenderServer, TestCertificates};
use serde_json::value::RawValue;
use serde_json::{Value, json};

const LIFETIME: Duration = Duration::from_secs(120);

struct Fixture {
    runtime: tokio::runtime::Runtime,
}

impl Fixture {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        Fixture { runtime }
    }

    /// An extender from a Policy entry (parsed as a Policy file is), with `fields` added.
    fn extender(&self, fields: Value) -> HttpExtender {
        let mut entry = json!({"filterVerb": "filter", "prioritizeVerb": "prioritize",
            "bindVerb": "bind", "weight": 2});
        entry
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let policy = json!({"kind": "Policy", "apiVersion": "v1", "extenders": [entry]});
        let policy = berth_policy::parse(&policy.to_string(), "policy.json").expect("policy");
        HttpExtender::new(&policy.extenders[0], self.runtime.handle().clone()).expect("extender")
    }
}

fn raw(v: Value) -> Arc<RawValue> {
    serde_json::value::to_raw_value(&v).unwrap().into()
}

fn pod() -> Arc<RawValue> {
    raw(json!({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}}))
}

fn node_json(names: &[&str]) -> Result<Vec<Arc<RawValue>>, String> {
    Ok(names
        .iter()
        .map(|n| raw(json!({"metadata": {"name": n}, "status": {"allocatable": {"cpu": "4"}}})))
        .collect())
}

fn filter(e: &HttpExtender, nodes: &[&str]) -> Result<berth_extender::FilterAnswer, CallError> {
    let body = e.args(&pod(), nodes, node_json).expect("args");
    let answer = e.start_filter(body).wait()?;
    e.filter_answer(&answer)
}

#[test]
fn filter_sends_names_to_a_node_cache_capable_extender() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    server.configure(|b| {
        b.refuse.insert("n2".into(), "no GPU".into());
        b.unresolvable.insert("n3".into(), "wrong zone".into());
    });
    let e = f.extender(json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true}));
    let answer = filter(&e, &["n1", "n2", "n3"]).unwrap();
    assert_eq!(answer.passed, ["n1"]);
    assert_eq!(answer.failed, [("n2".to_string(), "no GPU".to_string())]);
    assert_eq!(
        answer.failed_and_unresolvable,
        [("n3".to_string(), "wrong zone".to_string())]
    );
    let calls = server.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].verb, "filter");
    assert_eq!(
        calls[0].body,
        json!({"Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}},
               "Nodes": null, "NodeNames": ["n1", "n2", "n3"]})
    );
}

#[test]
fn filter_sends_whole_nodes_otherwise() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    server.configure(|b| {
        b.refuse.insert("n1".into(), "busy".into());
    });
    let e = f.extender(json!({"urlPrefix": server.url_prefix()}));
    let answer = filter(&e, &["n1", "n2"]).unwrap();
    assert_eq!(answer.passed, ["n2"]);
    let body = &server.calls()[0].body;
    assert_eq!(body["NodeNames"], Value::Null);
    assert_eq!(body["Nodes"]["metadata"], json!({}));
    assert_eq!(
        body["Nodes"]["items"][1],
        json!({"metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "4"}}})
    );
}

#[test]
fn prioritize_and_bind_messages() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let bound = Arc::new(std::sync::Mutex::new(Vec::<BindRequest>::new()));
    let record = bound.clone();
    server.configure(|b| {
        b.scores.insert("n2".into(), 7);
        b.binder = Some(Arc::new(move |r: &BindRequest| {
            record.lock().unwrap().push(r.clone());
            Ok(())
        }));
    });
    let e = f.extender(json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true}));
    let body = e.args(&pod(), &["n1", "n2"], node_json).unwrap();
    let answer = e.start_prioritize(body).wait().unwrap();
    assert_eq!(
        e.prioritize_answer(&answer).unwrap(),
        [("n1".to_string(), 0), ("n2".to_string(), 7)]
    );
    e.bind("default", "p", "u1", "n2").unwrap();
    assert_eq!(
        server.calls()[1].body,
        json!({"PodName": "p", "PodNamespace": "default", "PodUID": "u1", "Node": "n2"})
    );
    assert_eq!(bound.lock().unwrap()[0].node, "n2");
    server.configure(|b| b.answer = Answer::Error("node n2 is draining".into()));
    assert_eq!(
        e.bind("default", "p", "u1", "n2"),
        Err(CallError::Reported("node n2 is draining".into()))
    );
}

#[test]
fn calls_reuse_one_kept_alive_connection() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let e = f.extender(json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true}));
    for _ in 0..5 {
        filter(&e, &["n1"]).unwrap();
    }
    assert_eq!(server.count("filter"), 5);
    assert_eq!(server.connections(), 1);
}

#[test]
fn bad_answers_are_named_errors() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let e = f.extender(json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true}));
    let url = format!("{}/filter", server.url_prefix());
    let error = |answer: Answer| {
        server.configure(|b| b.answer = answer);
        filter(&e, &["n1"]).expect_err("a bad answer")
    };
    assert_eq!(
        error(Answer::Status(500)).to_string(),
        format!("failed filter with extender at URL {url}, code 500")
    );
    assert!(matches!(error(Answer::Garbage), CallError::Garbage { .. }));
    assert!(
        error(Answer::Garbage)
            .to_string()
            .contains("the answer is not an ExtenderFilterResult")
    );
    assert!(matches!(
        error(Answer::Huge(4 << 20)),
        CallError::TooLarge { .. }
    ));
    let redirect = error(Answer::Redirect("http://elsewhere/filter".into()));
    assert!(
        matches!(&redirect, CallError::Redirect { code: 307, location, .. } if location == "http://elsewhere/filter"),
        "{redirect}"
    );
    assert_eq!(
        error(Answer::Error("quota exceeded".into())),
        CallError::Reported("quota exceeded".into())
    );
}

#[test]
fn a_slow_extender_times_out_at_http_timeout() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    server.configure(|b| b.delay = Duration::from_secs(5));
    // 300 ms in nanoseconds, as the Policy file writes durations.
    let e = f.extender(
        json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true,
        "httpTimeout": 300_000_000u64}),
    );
    let started = Instant::now();
    let error = filter(&e, &["n1"]).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");
    assert!(
        error.to_string().contains("httpTimeout of 300ms"),
        "{error}"
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn an_unreachable_extender_is_a_transport_error() {
    let f = Fixture::new();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = f.extender(json!({"urlPrefix": format!("http://127.0.0.1:{port}/scheduler")}));
    let error = filter(&e, &["n1"]).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "Post \"http://127.0.0.1:{port}/scheduler/filter\": "
        )),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[test]
fn bad_urls_and_tls_settings_are_config_errors() {
    let f = Fixture::new();
    let make = |fields: Value| {
        let mut entry = json!({"filterVerb": "filter"});
        entry
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let policy = json!({"extenders": [entry]});
        let policy = berth_policy::parse(&policy.to_string(), "p.json").unwrap();
        HttpExtender::new(&policy.extenders[0], f.runtime.handle().clone())
            .err()
            .map(|e| e.to_string())
    };
    assert!(
        make(json!({"urlPrefix": "ftp://x"}))
            .unwrap()
            .contains("must be an http:// or https:// URL")
    );
    assert!(
        make(json!({"urlPrefix": "https://x", "tlsConfig": {"caFile": "/nonexistent/ca.crt"}}))
            .unwrap()
            .contains("tlsConfig.caFile \"/nonexistent/ca.crt\" cannot be read")
    );
    assert!(
        make(json!({"urlPrefix": "https://x", "tlsConfig": {"certData": "bm90IHBlbQ=="}}))
            .unwrap()
            .contains("a client certificate without a key")
    );
}

#[test]
fn tls_with_a_ca_a_client_certificate_or_insecure() {
    use base64::Engine as _;
    let f = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::generate(dir.path()).unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut server_tls = certs.server.clone();
    server_tls.client_ca_pem = Some(certs.ca_pem.clone());
    let server = ExtenderServer::start_tls(server_tls, LIFETIME).unwrap();
    let url = server.url_prefix();
    // Trusted CA and a client certificate: works.
    let e = f.extender(
        json!({"urlPrefix": url, "nodeCacheCapable": true, "enableHTTPS": true,
        "tlsConfig": {"caData": b64(&certs.ca_pem), "certData": b64(&certs.client_cert_pem),
                      "keyData": b64(&certs.client_key_pem)}}),
    );
    assert_eq!(filter(&e, &["n1"]).unwrap().passed, ["n1"]);
    // The same through a server name that the certificate also holds.
    let e = f.extender(json!({"urlPrefix": url, "nodeCacheCapable": true,
        "tlsConfig": {"caData": b64(&certs.ca_pem), "serverName": "extender.test",
                      "certData": b64(&certs.client_cert_pem), "keyData": b64(&certs.client_key_pem)}}));
    assert_eq!(filter(&e, &["n1"]).unwrap().passed, ["n1"]);
    // No client certificate: the server refuses the handshake.
    let e = f.extender(json!({"urlPrefix": url, "nodeCacheCapable": true,
        "tlsConfig": {"caData": b64(&certs.ca_pem)}}));
    assert!(matches!(
        filter(&e, &["n1"]).unwrap_err(),
        CallError::Transport { .. }
    ));
    // A server the client does not trust (its own CA unknown, no insecure): a TLS error.
    let plain = ExtenderServer::start_tls(certs.server.clone(), LIFETIME).unwrap();
    let e = f.extender(json!({"urlPrefix": plain.url_prefix(), "nodeCacheCapable": true}));
    let error = filter(&e, &["n1"]).unwrap_err().to_string();
    assert!(error.contains("certificate"), "{error}");
    // enableHTTPS without a CA skips verification, as upstream does; so does insecure.
    for fields in [
        json!({"enableHTTPS": true}),
        json!({"tlsConfig": {"insecure": true}}),
    ] {
        let mut entry = json!({"urlPrefix": plain.url_prefix(), "nodeCacheCapable": true});
        entry
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let e = f.extender(entry);
        assert_eq!(filter(&e, &["n1"]).unwrap().passed, ["n1"]);
    }
}

fn candidates() -> Vec<berth_extender::PreemptionCandidate<'static>> {
    use berth_extender::PreemptionCandidate;
    vec![
        PreemptionCandidate {
            node: "n2",
            victims: vec![("default/c".into(), "u-c")],
            pdb_violations: 1,
        },
        PreemptionCandidate {
            node: "n1",
            victims: vec![("default/a".into(), "u-a"), ("default/b".into(), "u-b")],
            pdb_violations: 0,
        },
    ]
}

fn victim_json(key: &str) -> Option<Arc<RawValue>> {
    let (namespace, name) = key.split_once('/')?;
    Some(raw(
        json!({"metadata": {"name": name, "namespace": namespace, "uid": format!("u-{name}")}}),
    ))
}

fn preempt(e: &HttpExtender) -> Result<Vec<(String, Vec<String>)>, CallError> {
    let body = e
        .preemption_args(&pod(), &candidates(), victim_json)
        .expect("args");
    let answer = e.start_preempt(body).wait()?;
    e.preempt_answer(&answer)
}

#[test]
fn preempt_sends_meta_victims_to_a_node_cache_capable_extender() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let e = f.extender(
        json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true,
        "preemptVerb": "preempt"}),
    );
    let uids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        preempt(&e).unwrap(),
        [
            ("n1".to_string(), uids(&["u-a", "u-b"])),
            ("n2".to_string(), uids(&["u-c"]))
        ]
    );
    // As upstream's convertToNodeNameToMetaVictims: UIDs only, NumPDBViolations never set.
    assert_eq!(
        server.calls()[0].body,
        json!({"Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}},
               "NodeNameToVictims": null,
               "NodeNameToMetaVictims": {
                   "n1": {"Pods": [{"UID": "u-a"}, {"UID": "u-b"}], "NumPDBViolations": 0},
                   "n2": {"Pods": [{"UID": "u-c"}], "NumPDBViolations": 0}}})
    );
    // The extender drops a node and spares a victim; Berth reads what it kept.
    server.configure(|b| {
        b.preempt_drop.insert("n2".into());
        b.preempt_spare.insert("u-a".into());
    });
    assert_eq!(preempt(&e).unwrap(), [("n1".to_string(), uids(&["u-b"]))]);
}

#[test]
fn preempt_sends_whole_victims_otherwise() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let e = f.extender(json!({"urlPrefix": server.url_prefix(), "preemptVerb": "preempt"}));
    server.configure(|b| {
        b.preempt_spare.insert("b".into());
    });
    assert_eq!(
        preempt(&e).unwrap(),
        [
            ("n1".to_string(), vec!["u-a".to_string()]),
            ("n2".to_string(), vec!["u-c".to_string()])
        ]
    );
    let body = &server.calls()[0].body;
    assert_eq!(body["NodeNameToMetaVictims"], Value::Null);
    assert_eq!(
        body["NodeNameToVictims"]["n2"],
        json!({"Pods": [{"metadata": {"name": "c", "namespace": "default", "uid": "u-c"}}],
               "NumPDBViolations": 1})
    );
    // A victim whose JSON Berth does not hold cannot be sent: a named error, no call.
    let error = e
        .preemption_args(&pod(), &candidates(), |_| None)
        .unwrap_err();
    assert!(
        error.contains("no JSON for victim pod default/c"),
        "{error}"
    );
}

#[test]
fn bad_preempt_answers_are_named_errors() {
    let f = Fixture::new();
    let server = ExtenderServer::start(LIFETIME).unwrap();
    let e = f.extender(
        json!({"urlPrefix": server.url_prefix(), "nodeCacheCapable": true,
        "preemptVerb": "preempt"}),
    );
    let url = format!("{}/preempt", server.url_prefix());
    server.configure(|b| b.answer = Answer::Status(503));
    assert_eq!(
        preempt(&e).unwrap_err().to_string(),
        format!("failed preempt with extender at URL {url}, code 503")
    );
    server.configure(|b| b.answer = Answer::Garbage);
    let error = preempt(&e).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "failed preempt with extender at URL {url}: the answer is not an \
             ExtenderPreemptionResult object"
        )),
        "{error}"
    );
}

/// Each TLS mistake is a transport error within httpTimeout that names the extender's URL,
/// what went wrong and what to change. Servers on 127.0.0.1 only, each bounded by LIFETIME.
#[test]
fn tls_mistakes_are_named_with_what_to_fix() {
    let f = Fixture::new();
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let certs = TestCertificates::generate(ours.path()).unwrap();
    let other = TestCertificates::generate(theirs.path()).unwrap();
    let ca_file = ours.path().join("ca.crt").display().to_string();
    let timeout = Duration::from_secs(2);
    // Calls `e`'s filter and checks the error's URL, and that it came within httpTimeout.
    let fails = |e: &HttpExtender| {
        let started = Instant::now();
        let error = filter(e, &["n1"]).expect_err("a TLS mistake");
        assert!(
            started.elapsed() < timeout + Duration::from_secs(1),
            "{error}"
        );
        assert!(
            matches!(&error, CallError::Transport { url, .. } if *url == e.url("filter")),
            "{error:?}"
        );
        error.to_string()
    };
    let with = |url: String, tls: Value| {
        f.extender(json!({"urlPrefix": url, "nodeCacheCapable": true,
            "httpTimeout": timeout.as_nanos() as u64, "tlsConfig": tls}))
    };

    // A server whose certificate another CA signed than the one configured.
    let foreign = ExtenderServer::start_tls(other.server.clone(), LIFETIME).unwrap();
    let error = fails(&with(foreign.url_prefix(), json!({"caFile": ca_file})));
    assert!(
        error.contains(&format!(
            "the extender's certificate is not signed by the configured CA \
             (tlsConfig.caFile={ca_file:?})"
        )),
        "{error}"
    );
    // No CA configured: the system's roots do not know the test CA either.
    let error = fails(&with(foreign.url_prefix(), json!({})));
    assert!(
        error.contains("not signed by a CA this machine trusts")
            && error.contains("set tlsConfig.caFile or caData"),
        "{error}"
    );

    // A plain HTTP server behind an https:// urlPrefix.
    let plain = ExtenderServer::start(LIFETIME).unwrap();
    let https_to_plain = plain.url_prefix().replacen("http://", "https://", 1);
    let error = fails(
        &f.extender(json!({"urlPrefix": https_to_plain, "enableHTTPS": true,
        "nodeCacheCapable": true, "httpTimeout": timeout.as_nanos() as u64})),
    );
    assert!(
        error.contains("the extender does not speak TLS")
            && error.contains("urlPrefix must start with http://"),
        "{error}"
    );

    // An HTTPS server behind an http:// urlPrefix.
    let secure = ExtenderServer::start_tls(certs.server.clone(), LIFETIME).unwrap();
    let http_to_tls = secure.url_prefix().replacen("https://", "http://", 1);
    let error = fails(&with(http_to_tls, json!({})));
    assert!(
        error.contains("did not answer in HTTP")
            && error.contains("urlPrefix must start with https://"),
        "{error}"
    );

    // A server that requires a client certificate: none configured, or one it does not trust.
    let mut strict_tls = certs.server.clone();
    strict_tls.client_ca_pem = Some(certs.ca_pem.clone());
    let strict = ExtenderServer::start_tls(strict_tls, LIFETIME).unwrap();
    let error = fails(&with(strict.url_prefix(), json!({"caFile": ca_file})));
    assert!(
        error.contains("the extender requires a client certificate")
            && error.contains("set tlsConfig.certFile and keyFile"),
        "{error}"
    );
    let other_cert = theirs.path().join("client.crt").display().to_string();
    let other_key = theirs.path().join("client.key").display().to_string();
    let error = fails(&with(
        strict.url_prefix(),
        json!({"caFile": ca_file, "certFile": other_cert, "keyFile": other_key}),
    ));
    assert!(
        error.contains(&format!(
            "the extender refused the client certificate (tlsConfig.certFile={other_cert:?})"
        )),
        "{error}"
    );
    assert_eq!(strict.calls().len(), 0);
}

/// Unreadable or garbage CA, certificate and key files are refused when the policy is
/// loaded, each naming the field, the file and what it should hold.
#[test]
fn bad_tls_files_are_refused_at_load() {
    let f = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::generate(dir.path()).unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    let garbage = file("garbage.pem", b"this is not PEM\n");
    let key = dir.path().join("client.key").display().to_string();
    let cert = dir.path().join("client.crt").display().to_string();
    let ca = dir.path().join("ca.crt").display().to_string();
    let unreadable = dir.path().display().to_string();
    let error = |tls: Value| {
        let policy = json!({"extenders": [{"urlPrefix": "https://127.0.0.1:1/x",
            "filterVerb": "filter", "tlsConfig": tls}]});
        let policy = berth_policy::parse(&policy.to_string(), "p.json").unwrap();
        let error = HttpExtender::new(&policy.extenders[0], f.runtime.handle().clone())
            .expect_err("bad TLS material");
        let text = error.to_string();
        assert!(
            text.starts_with("extender \"https://127.0.0.1:1/x\": tlsConfig"),
            "{text}"
        );
        text
    };
    let cases = [
        (
            json!({"caFile": "/nonexistent/ca.crt"}),
            "tlsConfig.caFile \"/nonexistent/ca.crt\" cannot be read".to_string(),
        ),
        (
            json!({"caFile": unreadable}),
            format!("tlsConfig.caFile {unreadable:?} cannot be read"),
        ),
        (
            json!({"caFile": garbage}),
            format!(
                "tlsConfig.caFile={garbage:?} holds no PEM certificate (expected \
                 \"-----BEGIN CERTIFICATE-----\")"
            ),
        ),
        (
            json!({"caFile": ca, "certFile": garbage, "keyFile": key}),
            format!(
                "tlsConfig.certFile={garbage:?} holds no PEM certificate (expected \
                 \"-----BEGIN CERTIFICATE-----\")"
            ),
        ),
        (
            json!({"caFile": ca, "certFile": cert, "keyFile": garbage}),
            format!("tlsConfig.keyFile={garbage:?} holds no PEM private key"),
        ),
        (
            json!({"caFile": ca, "certFile": cert, "keyFile": "/nonexistent/client.key"}),
            "tlsConfig.keyFile \"/nonexistent/client.key\" cannot be read".to_string(),
        ),
        (
            // The key of another certificate.
            json!({"caFile": ca, "certFile": cert,
                   "keyFile": dir.path().join("server.key").display().to_string()}),
            format!("tlsConfig.certFile={cert:?} and its key do not match"),
        ),
    ];
    for (tls, expected) in cases {
        let text = error(tls.clone());
        assert!(text.contains(&expected), "{tls}: {text}");
    }
    drop(certs);
}
