//! `berth simulate`: schedule a snapshot's pending pods and report every decision.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use berth_engine::simulation::{Outcome, PreemptionReport, queue_order, schedule_all_with};
use berth_engine::{CycleConfig, Explanation};
use serde_json::{Value, json};

use crate::extenders::Extenders;
use crate::source::PolicySource;
use crate::{Format, bundled, plugins};

/// Arguments of `berth simulate`.
#[derive(clap::Args)]
pub struct Args {
    /// Policy file (default: the bundled policies/openshift.json).
    #[arg(long, conflicts_with = "config")]
    policy: Option<PathBuf>,
    /// A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration instead of a Policy (the
    /// subset `berth convert` writes; the profile named by --scheduler-name, else the only one).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Cluster file: a v1 List or multi-document YAML/JSON as kubectl prints it (default: the
    /// bundled policies/example-cluster.yaml).
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    output: Format,
    /// Show every node's filter outcome and every priority's scores.
    #[arg(long)]
    explain: bool,
    /// Seed of the tie-breaking random generator.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Percentage of nodes to find feasible before scoring (0 = adaptive, as upstream; 100 = all).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    percentage_of_nodes_to_score: u32,
    /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
    /// (default: v1.22's, DefaultPodTopologySpread=true).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    feature_gates: berth_engine::FeatureGates,
    /// Only schedule pending pods whose spec.schedulerName is this (default: every pending pod).
    #[arg(long)]
    scheduler_name: Option<String>,
    /// Directory of the WASM plugin modules the policy names (default: the policy file's
    /// directory).
    #[arg(long)]
    plugins: Option<PathBuf>,
    /// Do not call the policy's extenders (each one left out is named on stderr).
    #[arg(long)]
    skip_extenders: bool,
    /// The time (RFC 3339) at which the circuit breaker and workload quarantine judge the
    /// cluster file's pod and node statuses (default: the newest time those statuses record,
    /// i.e. when the snapshot was taken).
    #[arg(long, value_parser = parse_now)]
    now: Option<i64>,
}

fn parse_now(text: &str) -> Result<i64, String> {
    berth_kube::protections::parse_time(text)
}

/// Runs the simulation and prints it.
pub fn run(args: &Args) -> Result<()> {
    let policy_source = PolicySource::from_flags(
        args.policy.as_deref(),
        args.config.as_deref(),
        args.scheduler_name.as_deref(),
        args.feature_gates,
    );
    let policy = match &policy_source {
        Some(source) => source.load()?,
        None => berth_policy::parse(bundled::POLICY, bundled::POLICY_NAME)?,
    };
    let objects = match &args.cluster {
        Some(p) => berth_kube::load_cluster_file(p)?,
        None => berth_kube::parse_cluster(bundled::CLUSTER, bundled::CLUSTER_NAME)?,
    };
    let source = args
        .cluster
        .as_ref()
        .map_or(bundled::CLUSTER_NAME.to_string(), |p| {
            p.display().to_string()
        });
    let snapshot =
        berth_kube::snapshot(&objects).with_context(|| format!("cluster file {source}"))?;
    for w in policy.warnings.iter().chain(&snapshot.warnings) {
        eprintln!("warning: {w}");
    }
    let config = CycleConfig {
        seed: args.seed,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        feature_gates: args.feature_gates,
        ..CycleConfig::default()
    };
    let dir = plugins::plugins_dir(
        policy_source.as_ref().map(PolicySource::path),
        args.plugins.as_deref(),
    );
    let (mut scheduler, _plugins) = plugins::scheduler(&policy, &dir, config)?;
    let extenders = if args.skip_extenders {
        for e in &policy.extenders {
            eprintln!(
                "warning: not calling extender {} (--skip-extenders)",
                e.url_prefix
            );
        }
        None
    } else if policy.extenders.is_empty() {
        None
    } else {
        let extenders = Extenders::new(&policy, None)?;
        extenders.add_objects(&objects)?;
        scheduler = scheduler.with_extenders(extenders.engine());
        Some(extenders)
    };
    let mut cluster = snapshot.cluster;
    let trackers = scheduler.trackers();
    if trackers.any() {
        let now = args
            .now
            .or_else(|| berth_kube::protections::snapshot_time(&objects))
            .unwrap_or(0);
        for note in berth_kube::protections::apply(&mut cluster, trackers, &objects, now) {
            eprintln!("protection: {note}");
        }
    }
    let budgets = snapshot.budgets;
    let mut pending = snapshot.pending;
    if let Some(name) = &args.scheduler_name {
        pending.retain(|p| &p.scheduler_name == name);
    }
    // A scheduler never places a pod that is being deleted (upstream's skipPodSchedule).
    pending.retain(|p| {
        if p.meta.deleting {
            eprintln!(
                "warning: pod {} is being deleted; not scheduling it",
                p.key()
            );
        }
        !p.meta.deleting
    });
    queue_order(&mut pending);

    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let (mut placed, mut failed) = (0usize, 0usize);
    let mut write_error = None;
    if args.output == Format::Table && !args.explain {
        writeln!(out, "{:<40} {:<24} MESSAGE", "POD", "NODE")?;
    }
    let explain = args.explain;
    schedule_all_with(
        &mut cluster,
        &mut scheduler,
        &budgets,
        pending,
        explain,
        |o| {
            for w in &o.decision.extender_warnings {
                eprintln!(
                    "warning: pod {}: extender {} failed and was skipped: {}",
                    o.pod, w.extender, w.message
                );
            }
            for w in &o.preemption_warnings {
                eprintln!(
                    "warning: pod {}: extender {} failed preempting and was skipped: {}",
                    o.pod, w.extender, w.message
                );
            }
            if let Some(e) = &o.preemption_error {
                eprintln!(
                    "warning: pod {}: preemption failed: extender {}: {}",
                    o.pod, e.extender, e.message
                );
            }
            if o.node.is_some() {
                placed += 1;
            } else {
                failed += 1;
            }
            let written = match args.output {
                Format::Json => writeln!(out, "{}", json_line(o)),
                Format::Table => write_table(&mut out, o, args.explain),
            };
            if let Err(e) = written {
                write_error.get_or_insert(e);
            }
        },
    )?;
    if let Some(e) = write_error {
        return Err(e.into());
    }
    if args.output == Format::Table {
        writeln!(
            out,
            "\n{} pods: {placed} scheduled, {failed} unschedulable",
            placed + failed
        )?;
    }
    out.flush()?;
    drop(extenders);
    Ok(())
}

fn json_line(o: &Outcome) -> Value {
    let mut v = json!({"pod": o.pod, "node": o.node, "message": o.message()});
    if o.nominated_node.is_some() {
        v["nominatedNode"] = json!(o.nominated_node);
        v["victims"] = json!(o.victims);
    }
    if let Some(e) = &o.decision.explanation {
        v["explain"] = explain_json(e);
    }
    if let Some(p) = &o.preemption {
        v["explain"]["preemption"] = preemption_json(p);
    }
    v
}

fn preemption_json(p: &PreemptionReport) -> Value {
    let victims: Vec<Value> = p
        .victims
        .iter()
        .map(|(pod, why)| json!({"pod": pod, "why": why}))
        .collect();
    let candidates: Vec<Value> = p
        .candidates
        .iter()
        .map(|c| {
            json!({"node": c.node, "victims": c.victims, "pdbViolations": c.pdb_violations,
                   "chosen": c.lost_on.is_none(), "lostOn": c.lost_on})
        })
        .collect();
    let rejected: Vec<Value> = p
        .rejected
        .iter()
        .map(|(node, why)| json!({"node": node, "why": why}))
        .collect();
    json!({"notEligible": p.not_eligible, "victims": victims, "candidates": candidates,
           "rejected": rejected, "unresolvableNodes": p.unresolvable,
           "extenders": p.extenders})
}

/// The preemption part of `--explain` as text.
fn write_preemption(out: &mut impl Write, p: &PreemptionReport) -> io::Result<()> {
    if let Some(why) = &p.not_eligible {
        return writeln!(out, "  preemption: not attempted: {why}");
    }
    if p.candidates.is_empty() {
        writeln!(out, "  preemption: no node can be freed for the pod")?;
    }
    for (pod, why) in &p.victims {
        writeln!(out, "  victim {pod}: {why}")?;
    }
    for c in &p.candidates {
        let verdict = c
            .lost_on
            .as_deref()
            .map_or("chosen".to_string(), |l| format!("lost: {l}"));
        writeln!(
            out,
            "  candidate {}: victims [{}], {} PDB violation(s): {verdict}",
            c.node,
            c.victims.join(", "),
            c.pdb_violations
        )?;
    }
    for (node, why) in &p.rejected {
        writeln!(out, "  not a candidate {node}: {why}")?;
    }
    if p.unresolvable > 0 {
        writeln!(
            out,
            "  {} node(s) not tried: removing pods cannot help there",
            p.unresolvable
        )?;
    }
    if !p.extenders.is_empty() {
        writeln!(
            out,
            "  candidates and victims as extender(s) {} answered",
            p.extenders.join(", ")
        )?;
    }
    Ok(())
}

fn explain_json(e: &Explanation) -> Value {
    let nodes: Vec<Value> = e
        .nodes
        .iter()
        .map(|n| {
            let mut v = json!({"node": n.node, "feasible": n.reasons.is_empty()});
            if !n.reasons.is_empty() {
                v["reasons"] = json!(n.reasons);
            }
            if let Some(total) = n.total {
                let scores: Vec<Value> = e
                    .score_rules
                    .iter()
                    .zip(&n.scores)
                    .map(|((name, weight), s)| {
                        json!({"priority": name, "weight": weight, "raw": s, "weighted": s * weight})
                    })
                    .collect();
                v["scores"] = json!(scores);
                v["total"] = json!(total);
            }
            v
        })
        .collect();
    json!({"nodes": nodes, "not_evaluated": e.not_evaluated})
}

fn write_table(out: &mut impl Write, o: &Outcome, explain: bool) -> io::Result<()> {
    let node = o.node.as_deref().unwrap_or("<none>");
    let mut message = o.message().unwrap_or_default();
    if let Some(nominated) = &o.nominated_node {
        let preempted = format!("preempted {} on {nominated}", o.victims.join(", "));
        message = if message.is_empty() {
            preempted
        } else {
            format!("{message} ({preempted})")
        };
    }
    if !explain {
        return writeln!(out, "{:<40} {:<24} {message}", o.pod, node);
    }
    writeln!(out, "{} -> {node}", o.pod)?;
    if !message.is_empty() {
        writeln!(out, "  {message}")?;
    }
    if let Some(p) = &o.preemption {
        write_preemption(out, p)?;
    }
    let Some(e) = &o.decision.explanation else {
        return Ok(());
    };
    let width = e
        .nodes
        .iter()
        .map(|n| n.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    if !e.score_rules.is_empty() {
        write!(out, "  {:<width$}  {:>8}", "NODE", "TOTAL")?;
        for (name, weight) in &e.score_rules {
            write!(out, "  {name}(x{weight})")?;
        }
        writeln!(out)?;
    }
    for n in &e.nodes {
        match n.total {
            Some(total) => {
                let marker = if Some(n.node.as_str()) == o.node.as_deref() {
                    "*"
                } else {
                    " "
                };
                write!(out, "{marker} {:<width$}  {total:>8}", n.node)?;
                for ((name, weight), s) in e.score_rules.iter().zip(&n.scores) {
                    let w = name.len() + weight.to_string().len() + 3;
                    write!(out, "  {:>w$}", format!("{s}/{}", s * weight))?;
                }
                writeln!(out)?;
            }
            None if n.reasons.is_empty() => writeln!(out, "  {:<width$}  feasible", n.node)?,
            None => writeln!(out, "  {:<width$}  {}", n.node, n.reasons.join("; "))?,
        }
    }
    if e.not_evaluated > 0 {
        writeln!(
            out,
            "  ({} nodes not evaluated: enough feasible nodes found)",
            e.not_evaluated
        )?;
    }
    writeln!(out)
}
