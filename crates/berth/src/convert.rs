//! `berth convert`: a Policy file as the KubeSchedulerConfiguration (v1) profile that
//! reproduces it with upstream's plugins (see berth-schedconfig).

use std::path::PathBuf;

use anyhow::{Result, bail};
use berth_engine::FeatureGates;
use berth_schedconfig::{Options, convert};

/// Arguments of `berth convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The Policy file (JSON).
    policy: PathBuf,
    /// The profile's schedulerName (v1.22 ran a Policy as default-scheduler).
    #[arg(long, default_value = berth_schedconfig::types::DEFAULT_SCHEDULER_NAME)]
    scheduler_name: String,
    /// kube-scheduler v1.22 feature gates the policy is read under, as upstream's flag:
    /// `DefaultPodTopologySpread=false` (default: v1.22's).
    #[arg(long, value_parser = crate::feature_gates, default_value = "")]
    feature_gates: FeatureGates,
    /// Fail (exit status 1, nothing printed) when anything has no equivalent in v1, instead
    /// of printing the rest with a comment naming what was left out.
    #[arg(long)]
    strict: bool,
}

/// Prints the configuration; what is not converted goes to stderr (one line each, prefixed
/// `not converted: `) and into a comment at the top of the output.
pub fn run(args: &Args) -> Result<()> {
    let policy = berth_policy::load(&args.policy)?;
    let conversion = convert(
        &policy,
        &Options {
            scheduler_name: args.scheduler_name.clone(),
            feature_gates: args.feature_gates,
        },
    );
    for u in &conversion.unconverted {
        eprintln!("not converted: {u}");
    }
    if args.strict && !conversion.unconverted.is_empty() {
        bail!(
            "{}: {} part(s) of the policy have no equivalent in kubescheduler.config.k8s.io/v1 \
             (listed above); without --strict the rest is printed",
            args.policy.display(),
            conversion.unconverted.len()
        );
    }
    print!(
        "{}",
        conversion.to_yaml(&args.policy.display().to_string())?
    );
    Ok(())
}
