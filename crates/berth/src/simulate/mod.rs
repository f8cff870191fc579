//! `berth simulate`: schedule a snapshot's pending pods and report every decision, as a
//! table (`table.rs`) or JSON lines (`json.rs`), and with `--report` as an HTML page
//! (`report.rs`).

mod facts;
mod json;
mod report;
mod table;
mod whatif;

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use berth_engine::RejectedBy;
use berth_engine::simulation::{queue_order, schedule_all_with};
use berth_engine::{CycleConfig, Decision, Detail};
use berth_kube::ClusterObjects;
use berth_policy::{EffectivePolicy, PredicateKind};

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
    /// Cluster file: a v1 List or multi-document YAML/JSON as kubectl prints it, `-` for
    /// standard input (default: the bundled policies/example-cluster.yaml).
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Only report this pod (`namespace/name`; repeatable). Every pending pod is still
    /// scheduled, in queue order, since earlier placements change later ones.
    #[arg(long = "pod", value_name = "NAMESPACE/NAME", value_parser = pod_key)]
    pods: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    output: Format,
    /// Show every node's filter outcome and every priority's scores.
    #[arg(long)]
    explain: bool,
    /// Also write one self-contained HTML page (no network fetches) explaining every decision:
    /// a node x rule heatmap per pod and the cluster's allocation before and after the run.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
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
    /// Manifests not yet in the cluster (Deployment, ReplicaSet, StatefulSet, Job, DaemonSet,
    /// Pod; YAML or JSON, Lists too; repeatable): their pods, as the controllers and admission
    /// would create them, are scheduled with the pending ones and summed up per manifest.
    #[arg(long = "apply", value_name = "FILE")]
    apply: Vec<PathBuf>,
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
        None => bundled::policy()?,
    };
    let (objects, source) = read_cluster(args.cluster.as_deref())?;
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
    let mut applied = None;
    if !args.apply.is_empty() {
        let (mut whatif, pods) = whatif::WhatIf::load(&args.apply, &objects, &mut cluster)?;
        pending.extend(pods);
        whatif.know(cluster.pods().map(|(_, p)| &p.pod).chain(&pending));
        applied = Some(whatif);
    }
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
    let shown: BTreeSet<&str> = args.pods.iter().map(String::as_str).collect();
    for key in &shown {
        if !pending.iter().any(|p| p.key() == *key) {
            bail!(
                "--pod {key}: {}",
                why_not_pending(key, &objects, args.scheduler_name.as_deref(), &source)
            );
        }
    }
    let rules = RuleKinds::of(&policy);
    let mut report = args.report.as_ref().map(|_| {
        let info = report::RunInfo {
            policy: policy_source.as_ref().map_or_else(
                || bundled::POLICY_NAME.to_string(),
                |s| s.path().display().to_string(),
            ),
            cluster: source.clone(),
            seed: args.seed,
        };
        let mut r = report::Report::new(info, &cluster, &scheduler, &rules);
        r.know_pods(&pending);
        r
    });
    let mut printer = Printer::new();
    let mut summary = Vec::new();
    let mut printed = 0usize;
    let (mut placed, mut failed) = (0usize, 0usize);
    schedule_all_with(
        &mut cluster,
        &mut scheduler,
        &budgets,
        pending,
        if args.explain || report.is_some() {
            Detail::Explained
        } else {
            Detail::Decision
        },
        |o| {
            for w in o.decision.iter().flat_map(Decision::warnings) {
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
            if let Some(w) = applied.as_mut() {
                w.record(o);
            }
            if o.node.is_some() {
                placed += 1;
            } else {
                failed += 1;
            }
            let is_shown = shown.is_empty() || shown.contains(o.pod.as_str());
            if let Some(r) = report.as_mut() {
                r.add(o, &rules, is_shown);
            }
            if !is_shown {
                return;
            }
            match (args.output, args.explain) {
                (Format::Json, explain) => {
                    printer.print(&format!("{}\n", json::line(o, &rules, explain)));
                }
                (Format::Table, true) => {
                    if printed > 0 {
                        printer.print("\n");
                    }
                    printed += 1;
                    printer.print(&table::explained(o, &rules, args.seed));
                }
                (Format::Table, false) => summary.push(o.clone()),
            }
        },
    )?;
    drop(extenders);
    if let Some(w) = applied.as_mut() {
        w.suggest(&mut cluster, &mut scheduler)?;
    }
    if let (Some(r), Some(path)) = (report, &args.report) {
        let applied = applied.as_ref().map(|w| w.json(&cluster));
        std::fs::write(path, r.finish(&cluster, applied))
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if args.output == Format::Table {
        if !args.explain {
            printer.print(&table::summary(&summary));
        }
        let mut total = format!(
            "\n{} pods: {placed} scheduled, {failed} unschedulable",
            placed + failed
        );
        if !shown.is_empty() {
            total.push_str(&format!(" ({} shown, --pod)", shown.len()));
        }
        printer.print(&format!("{total}\n"));
    }
    if let Some(w) = &applied {
        match args.output {
            Format::Table => printer.print(&w.table(&cluster)),
            Format::Json => printer.print(&format!("{}\n", w.json(&cluster))),
        }
    }
    printer.finish()
}

/// Standard output, buffered; the first write error is kept and ends the output. A closed
/// pipe (`berth simulate | head`) ends it quietly, as for any filter.
struct Printer {
    out: io::BufWriter<io::StdoutLock<'static>>,
    error: Option<io::Error>,
}

impl Printer {
    fn new() -> Self {
        Printer {
            out: io::BufWriter::new(io::stdout().lock()),
            error: None,
        }
    }

    fn print(&mut self, text: &str) {
        if self.error.is_none()
            && let Err(e) = self.out.write_all(text.as_bytes())
        {
            self.error = Some(e);
        }
    }

    fn finish(mut self) -> Result<()> {
        let result = match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            other => Ok(other?),
        }
    }
}

/// Which filter names are WASM plugins (the rest of the policy's filters are built-in
/// predicates), to name what rejected a node.
struct RuleKinds {
    plugins: BTreeSet<String>,
}

impl RuleKinds {
    fn of(policy: &EffectivePolicy) -> Self {
        RuleKinds {
            plugins: policy
                .predicates
                .iter()
                .filter(|p| matches!(p.kind, PredicateKind::Wasm(_)))
                .map(|p| p.name.clone())
                .collect(),
        }
    }

    /// `predicate`, `plugin` or `extender`.
    fn kind(&self, by: &RejectedBy) -> &'static str {
        match by {
            RejectedBy::Filter(name) if self.plugins.contains(name) => "plugin",
            RejectedBy::Filter(_) => "predicate",
            RejectedBy::Extender(_) => "extender",
        }
    }
}

/// Parses `--pod`: `namespace/name`, both parts non-empty.
fn pod_key(s: &str) -> Result<String, String> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(s.to_string())
        }
        _ => Err(format!(
            "{s:?} is not a pod key: expected NAMESPACE/NAME, such as default/web-0"
        )),
    }
}

/// Why `key` is not among the pods to schedule, for a `--pod` that names none of them.
fn why_not_pending(
    key: &str,
    objects: &ClusterObjects,
    scheduler_name: Option<&str>,
    source: &str,
) -> String {
    let (namespace, name) = key.split_once('/').unwrap_or_default();
    let pod = objects.pods.iter().find(|p| {
        p.metadata.name.as_deref() == Some(name)
            && p.metadata.namespace.as_deref().unwrap_or("default") == namespace
    });
    let Some(pod) = pod else {
        return format!("no pod of that name in {source}");
    };
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    if let Some(node) = spec.and_then(|s| s.node_name.as_deref()) {
        return format!("already runs on node {node} (only pending pods are scheduled)");
    }
    if let Some(phase @ ("Succeeded" | "Failed")) = status.and_then(|s| s.phase.as_deref()) {
        return format!("has finished ({phase}); only pending pods are scheduled");
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return "is being deleted; a scheduler does not place it".to_string();
    }
    match (
        scheduler_name,
        spec.and_then(|s| s.scheduler_name.as_deref()),
    ) {
        (Some(wanted), theirs) => format!(
            "its spec.schedulerName is {}, not --scheduler-name {wanted}",
            theirs.unwrap_or("default-scheduler")
        ),
        (None, _) => format!("not a pending pod of {source}"),
    }
}

/// The cluster objects and the name of where they came from: the file, standard input
/// (`-`), or the bundled example.
fn read_cluster(path: Option<&Path>) -> Result<(ClusterObjects, String)> {
    match path {
        None => Ok((
            berth_kube::parse_cluster(bundled::CLUSTER, bundled::CLUSTER_NAME)?,
            bundled::CLUSTER_NAME.to_string(),
        )),
        Some(p) if p.as_os_str() == "-" => {
            let source = "standard input";
            let text = read_stdin(berth_kube::MAX_CLUSTER_FILE_BYTES)
                .with_context(|| format!("cannot read cluster file from {source}"))?;
            Ok((
                berth_kube::parse_cluster(&text, source)?,
                source.to_string(),
            ))
        }
        Some(p) => Ok((berth_kube::load_cluster_file(p)?, p.display().to_string())),
    }
}

/// Standard input as text, refused past `max` bytes.
fn read_stdin(max: u64) -> Result<String> {
    let mut bytes = Vec::new();
    io::stdin().lock().take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        bail!("it is larger than {max} bytes");
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "it is not UTF-8 text (invalid byte at offset {}); a cluster file is YAML or JSON",
            e.utf8_error().valid_up_to()
        )
    })
}
