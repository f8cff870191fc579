//! Differential testing of Berth against the real kube-scheduler v1.22.17 (the last release
//! that reads a Policy file), the reference of Berth's semantics.
//!
//! For each seeded [`generate::scenario`]: the cluster is created in a local apiserver
//! (berth-testcluster), kube-scheduler v1.22.17 is started on it with the scenario's Policy
//! and one setting of `DefaultPodTopologySpread`, and the pending pods are created one at a
//! time, each after the previous one was bound or found unschedulable. Before each pod the
//! state is read back from the apiserver, so Berth decides on exactly what the reference's
//! cache held (earlier pods bound where the reference put them, volumes it bound). Berth
//! must then agree on three things:
//!
//! - the decision: the reference's node is among Berth's top-scoring nodes, or both find
//!   the pod unschedulable;
//! - the FitError text, character for character;
//! - every framework plugin's weighted score on every node, as v1.22 logs them at -v=10
//!   ("Plugin scored node for pod"), with Berth's policy entries grouped into plugins as
//!   v1.22's legacy registry groups them ([`berth::score_plugin`]).
//!
//! [`Report`] counts the agreement and keeps every disagreement with enough to reproduce
//! it: the seed, and (with `BERTH_DIFFTEST_OUT`) the policy and cluster file that
//! `berth simulate --explain` runs on.
//!
//! [`v136`] runs the second reference, kube-scheduler v1.36.3 with its default profile, on
//! clusters using the fields v1.22 never knew, with Berth on v1.22's default provider.

pub mod berth;
pub mod generate;
pub mod preemption;
pub mod replay;
pub mod report;
pub mod upstream;
pub mod v136;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use berth_testcluster::{ClusterOptions, TestCluster};

pub use report::{Disagreement, Report};
pub use upstream::DefaultPodTopologySpread;

/// Environment variable: a directory where each disagreement's policy and cluster file
/// are written, for `berth simulate --policy P --cluster C --explain`.
pub const OUT_DIR_ENV: &str = "BERTH_DIFFTEST_OUT";

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Scenario seeds ([`generate::scenario`]).
    pub seeds: Vec<u64>,
    /// Preemption scenario seeds ([`preemption::scenario`]).
    pub preemption_seeds: Vec<u64>,
    /// Gate settings to run each seed under.
    pub gates: Vec<DefaultPodTopologySpread>,
    /// Bound on the whole run (the control plane is killed after it).
    pub max_lifetime: Duration,
}

/// Runs every seed under every gate setting on one test cluster and returns the report.
pub async fn run(options: &RunOptions) -> Result<Report> {
    let cluster = TestCluster::start(
        ClusterOptions::default()
            .max_lifetime(options.max_lifetime)
            .for_throughput(),
    )
    .await?;
    let client = cluster.admin_client()?;
    let out_dir = std::env::var_os(OUT_DIR_ENV).map(PathBuf::from);
    let mut report = Report::default();
    let started = Instant::now();
    for &gate in &options.gates {
        let random = options.seeds.iter().map(|&seed| {
            let prefix = format!("g{}s{seed}", u8::from(gate.enabled()));
            (prefix.clone(), generate::scenario(seed, &prefix))
        });
        let preempting = options.preemption_seeds.iter().map(|&seed| {
            let prefix = format!("g{}p{seed}", u8::from(gate.enabled()));
            (prefix.clone(), preemption::scenario(seed, &prefix))
        });
        for (prefix, scenario) in random.chain(preempting) {
            let seed = scenario.seed;
            let dir = cluster.dir().join(&prefix);
            run_scenario(
                &cluster,
                &client,
                &scenario,
                gate,
                &dir,
                out_dir.as_deref(),
                &mut report,
            )
            .await
            .with_context(|| {
                let family = if scenario.preemption {
                    "preemption "
                } else {
                    ""
                };
                format!("{family}scenario seed {seed} with {}", gate.label())
            })?;
            replay::delete_scenario(&client, &scenario).await?;
        }
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

async fn run_scenario(
    cluster: &TestCluster,
    client: &kube::Client,
    scenario: &generate::Scenario,
    gate: DefaultPodTopologySpread,
    dir: &Path,
    out_dir: Option<&Path>,
    report: &mut Report,
) -> Result<()> {
    let stats = report.gate(gate);
    stats.scenarios += 1;
    let policy = match berth::policy(&scenario.policy) {
        Ok(policy) => policy,
        Err(e) => {
            report.disagree(Disagreement::new(
                scenario,
                gate,
                "-",
                "policy",
                e.to_string(),
            ));
            return Ok(());
        }
    };
    replay::create_cluster(client, scenario).await?;
    let lifetime = Duration::from_secs(300);
    let mut reference = upstream::ReferenceScheduler::start(
        cluster,
        upstream::Reference::V122 {
            policy: &scenario.policy,
            gate,
        },
        dir,
        lifetime,
    )
    .await?;
    replay::touch_nodes(client, &mut reference, scenario).await?;
    for index in 0..scenario.pending.len() {
        let state = replay::list_state(client).await?;
        let pod = replay::create_pod(client, scenario, index).await?;
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let verdict = replay::await_verdict(client, &mut reference, &pod, &state.pods).await?;
        if scenario.preemption {
            replay::mark_started(client, &pod, &verdict, index).await?;
        }
        let scores = reference.take_scores(&key)?;
        let ours = berth::decide(&policy, &state, &pod, gate);
        let found = report.compare(scenario, gate, &key, &verdict, &scores, ours);
        if let (true, Some(out)) = (found, out_dir) {
            report::write_reproduction(out, scenario, gate, &key, &state, &pod)?;
        }
    }
    Ok(())
}
