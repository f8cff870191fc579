//! `berth`: a policy-driven Kubernetes scheduler. This binary is the IO edge: it reads files,
//! prints results, and turns errors into messages and exit codes.

/// The allocator: glibc returns freed heap to the OS and faults it back in on every
/// scheduling cycle (each cycle allocates a few hundred KiB of per-node tables); mimalloc
/// keeps it. Its v2 line, because v3 holds freed memory for a second before returning it:
/// 50,000 pods, a 1.4 s run that outgrows its tables, peaked at 156 MiB with v3 against
/// 126-141 MiB with v2 (docs/performance.md, "Equivalence classes").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod bundled;
mod check;
mod convert;
mod extenders;
mod legacy;
mod plugins;
mod run;
mod simulate;
mod source;

use std::path::PathBuf;
use std::process::ExitCode;

use berth_engine::FeatureGates;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "berth",
    version,
    about = "A policy-driven Kubernetes scheduler"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a Policy file (or a KubeSchedulerConfiguration, --config) and print the
    /// effective configuration.
    Check {
        /// The Policy file (JSON).
        #[arg(required_unless_present = "config", conflicts_with = "config")]
        policy: Option<PathBuf>,
        /// A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration instead of a Policy
        /// (the subset `berth convert` writes; one profile).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Directory of the WASM plugin modules the policy names (default: the policy
        /// file's directory).
        #[arg(long)]
        plugins: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        output: Format,
        /// kube-scheduler feature gates, as upstream's flag: `DefaultPodTopologySpread=false`
        /// (default: v1.22's, DefaultPodTopologySpread=true).
        #[arg(long, value_parser = feature_gates, default_value = "")]
        feature_gates: FeatureGates,
        /// Also read a cluster file (as `simulate --cluster` takes it) and report what Berth
        /// would ignore or refuse in it: unknown fields, fields Berth does not model.
        #[arg(long)]
        cluster: Option<PathBuf>,
    },
    /// Print the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) that reproduces a
    /// Policy with kube-scheduler's plugins, naming what has no equivalent.
    Convert(convert::Args),
    /// Schedule the pending pods of a cluster snapshot and explain every decision.
    Simulate(simulate::Args),
    /// Measure scheduling throughput on a seeded synthetic cluster.
    Bench(bench::Args),
    /// Run as a named scheduler on a cluster: watch, schedule and bind its pending pods.
    /// Takes kube-scheduler v1.22's flags; a flag given twice takes its last value, as there.
    #[command(args_override_self = true)]
    Run(Box<run::Args>),
}

/// Output format of a command.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Table,
    /// One JSON object per line.
    Json,
}

/// Parses `--feature-gates` (upstream's syntax) over v1.22's defaults.
pub fn feature_gates(spec: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(spec).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let argv = match legacy::command_line(std::env::args().collect()) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("error: {}", each_cause_once(&e));
            return ExitCode::FAILURE;
        }
    };
    let cli = Cli::parse_from(argv);
    let result = match cli.command {
        Command::Check {
            policy,
            config,
            plugins,
            output,
            feature_gates,
            cluster,
        } => {
            let source = source::PolicySource::from_flags(
                policy.as_deref(),
                config.as_deref(),
                None,
                feature_gates,
            )
            .expect("clap requires a policy or --config");
            check::run(&source, plugins.as_deref(), output, feature_gates)
                .and_then(|()| cluster.map_or(Ok(()), |c| check::cluster(&c, output)))
        }
        Command::Convert(args) => convert::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Run(args) => run::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", each_cause_once(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by `: `, leaving out a cause whose words are already in
/// what is written: many libraries' errors repeat their source's message in their own, so
/// `{:#}` would print the same cause two or three times.
fn each_cause_once(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
