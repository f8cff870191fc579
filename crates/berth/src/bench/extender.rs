//! `berth bench --workload extender`: the basic workload with a filter and prioritize
//! extender on 127.0.0.1, served in process by [`berth_extender::server`], once with
//! `nodeCacheCapable` off (whole nodes sent) and once on (names only).
//!
//! Besides pods/s it reports the share of wall time spent inside extender calls, timed by
//! the client around each HTTP round trip, and checks that each pod got exactly one filter
//! and one prioritize call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use berth_extender::Verb;
use berth_extender::server::{ExtenderServer, Rules};
use serde_json::json;

use super::args::{Args, config};
use super::measure;
use crate::extenders::Extenders;
use crate::{bundled, plugins};

/// The server outlives any sane run, but not a forgotten one.
const SERVER_LIFETIME: Duration = Duration::from_secs(3600);

/// Time and number of calls per verb, as the client observed them.
#[derive(Default)]
struct Tally {
    filter_ns: AtomicU64,
    prioritize_ns: AtomicU64,
    failed: AtomicU64,
}

/// The extender refuses one node in seven and scores by the node number, so that it both
/// shrinks the feasible set and changes placements.
fn rules() -> Rules {
    let number = |name: &str| {
        name.rsplit('-')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Rules {
        refuse: Box::new(move |name| {
            (number(name) % 7 == 3).then(|| "bench extender: refused".to_string())
        }),
        score: Box::new(move |name| (number(name) % 11) as i64),
    }
}

/// Runs both variants and returns one result for each.
pub(super) fn measure(args: &Args) -> Result<Vec<serde_json::Value>> {
    [false, true]
        .into_iter()
        .map(|cache| measure_one(args, cache))
        .collect()
}

fn measure_one(args: &Args, node_cache_capable: bool) -> Result<serde_json::Value> {
    let server = ExtenderServer::start(rules(), SERVER_LIFETIME)?;
    let mut policy = match &args.policy {
        Some(p) => berth_policy::load(p)?,
        None => berth_policy::parse(bundled::POLICY, bundled::POLICY_NAME)?,
    };
    let extender_policy = format!(
        r#"{{"kind": "Policy", "apiVersion": "v1", "extenders": [{{
            "urlPrefix": "{}", "filterVerb": "filter", "prioritizeVerb": "prioritize",
            "weight": 1, "nodeCacheCapable": {node_cache_capable}, "httpTimeout": 30000000000
        }}]}}"#,
        server.url_prefix()
    );
    let extender = berth_policy::parse(&extender_policy, "bench extender")?
        .extenders
        .pop()
        .context("the bench extender policy has no extender")?;
    policy.extenders.push(extender);

    let tally = Arc::new(Tally::default());
    let observed = tally.clone();
    let observer: berth_extender::Observer = Arc::new(move |_name, verb, took, ok| {
        let ns = took.as_nanos() as u64;
        match verb {
            Verb::Filter => observed.filter_ns.fetch_add(ns, Ordering::Relaxed),
            Verb::Prioritize => observed.prioritize_ns.fetch_add(ns, Ordering::Relaxed),
            _ => 0,
        };
        if !ok {
            observed.failed.fetch_add(1, Ordering::Relaxed);
        }
    });
    let extenders = Extenders::new(&policy, Some(observer))?;
    add_documents(&extenders, args)?;

    let dir = plugins::plugins_dir(args.policy.as_deref(), args.plugins.as_deref());
    let (scheduler, _plugins) = plugins::scheduler(&policy, &dir, config(args))?;
    let mut scheduler = scheduler.with_extenders(extenders.engine());
    let mut result = measure::measure(args, &mut scheduler)?;

    let pods = args.pods() as u64;
    let (filters, prioritizes) = (server.filter_calls(), server.prioritize_calls());
    let failed = tally.failed.load(Ordering::Relaxed);
    if filters != pods || prioritizes != pods || failed != 0 {
        bail!(
            "expected exactly one filter and one prioritize call per pod ({pods} each, none \
             failed), the extender answered {filters} filter and {prioritizes} prioritize \
             calls and {failed} failed"
        );
    }
    let elapsed_s = pods as f64 / result["pods_per_sec"].as_f64().unwrap_or(f64::NAN);
    let share = |ns: &AtomicU64| {
        let secs = ns.load(Ordering::Relaxed) as f64 / 1e9;
        (secs / elapsed_s * 1000.0).round() / 10.0
    };
    let object = result
        .as_object_mut()
        .context("the bench result is an object")?;
    object.insert("node_cache_capable".into(), json!(node_cache_capable));
    object.insert("filter_calls".into(), json!(filters));
    object.insert("prioritize_calls".into(), json!(prioritizes));
    object.insert("filter_pct".into(), json!(share(&tally.filter_ns)));
    object.insert("prioritize_pct".into(), json!(share(&tally.prioritize_ns)));
    Ok(result)
}

/// The node and pod JSON the extender is sent: the synthetic nodes and pending pods by
/// name (the bench's own model objects hold the rest).
fn add_documents(extenders: &Extenders, args: &Args) -> Result<()> {
    for i in 0..args.nodes {
        let name = format!("node-{i}");
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        });
        extenders.documents.set_node(&name, &node)?;
    }
    for i in 0..args.pods() {
        let name = format!("pending-{i}");
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": name},
            "spec": {"schedulerName": "berth", "containers": [{"name": "main"}]},
        });
        extenders
            .documents
            .set_pod(&format!("bench/{name}"), &pod)?;
    }
    Ok(())
}
