//! The in-process extender server answers Berth's own client, whole nodes and names alike,
//! and refuses what is not an ExtenderArgs.

use std::time::Duration;

use berth_extender::HttpExtender;
use berth_extender::server::{ExtenderServer, Rules};
use serde_json::value::RawValue;

fn rules() -> Rules {
    Rules {
        refuse: Box::new(|name| (name == "b").then(|| "no b".to_string())),
        score: Box::new(|name| if name == "c" { 7 } else { 1 }),
    }
}

fn client(server: &ExtenderServer, cache: bool, runtime: &tokio::runtime::Runtime) -> HttpExtender {
    let text = format!(
        r#"{{"kind": "Policy", "apiVersion": "v1", "extenders": [{{"urlPrefix": "{}",
            "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
            "nodeCacheCapable": {cache}}}]}}"#,
        server.url_prefix()
    );
    let policy = berth_policy::parse(&text, "test").unwrap();
    HttpExtender::new(&policy.extenders[0], runtime.handle().clone()).unwrap()
}

#[test]
fn answers_filter_and_prioritize_for_names_and_whole_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = ExtenderServer::start(rules(), Duration::from_secs(60)).unwrap();
    let pod = RawValue::from_string(r#"{"metadata":{"name":"p","namespace":"d"}}"#.into()).unwrap();
    for cache in [true, false] {
        let http = client(&server, cache, &runtime);
        let body = http
            .args(&pod, &["a", "b", "c"], |names| {
                Ok(names
                    .iter()
                    .map(|n| {
                        RawValue::from_string(format!(r#"{{"metadata":{{"name":"{n}"}}}}"#))
                            .unwrap()
                            .into()
                    })
                    .collect())
            })
            .unwrap();
        let answer = http.start_filter(body.clone()).wait().unwrap();
        let answer = http.filter_answer(&answer).unwrap();
        assert_eq!(answer.passed, ["a", "c"], "cache {cache}");
        assert_eq!(answer.failed, [("b".to_string(), "no b".to_string())]);
        let scores = http.start_prioritize(body).wait().unwrap();
        let scores = http.prioritize_answer(&scores).unwrap();
        assert_eq!(
            scores,
            [("a".into(), 1), ("b".into(), 1), ("c".into(), 7)],
            "cache {cache}"
        );
    }
    assert_eq!((server.filter_calls(), server.prioritize_calls()), (2, 2));
}

#[test]
fn refuses_bodies_that_are_not_extender_args() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = ExtenderServer::start(rules(), Duration::from_secs(60)).unwrap();
    let http = client(&server, true, &runtime);
    for body in [
        &b"not json"[..],
        b"{}",
        b"{\"NodeNames\": [1]}",
        b"{\"Nodes\": {}}",
    ] {
        let error = http
            .start_filter(body.to_vec())
            .wait()
            .unwrap_err()
            .to_string();
        assert!(error.contains("400"), "{error}");
    }
    assert_eq!(server.filter_calls(), 0);
}
