//! `berth bench`: scheduling throughput on a seeded synthetic cluster, in process.
//!
//! The cluster mirrors upstream's scheduler_perf shapes: nodes spread over regions and zones,
//! running pods from ReplicaSets behind Services, then pending pods from the same apps.
//! Timings cover only the scheduling cycles and assignments, not building the cluster.
//!
//! Layers, each using only those below it: this dispatcher; the workloads with their own
//! loops (`wasm`, `preemption`, `extender`, `deployments`); `measure`, the basic timing loop; `workload`,
//! the synthetic cluster; `args`.

mod args;
mod deployments;
mod extender;
mod measure;
mod perf;
mod preemption;
mod wasm;
mod workload;

use anyhow::{Result, bail};

pub use args::Args;
use args::{Workload, config};
use measure::print_result;

use crate::{bundled, plugins};

/// Runs the benchmark and prints one result.
pub fn run(args: &Args) -> Result<()> {
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    if let Some(rounds) = args.reload_latency {
        return wasm::reload_latency(args.plugins.as_deref(), rounds, args.output);
    }
    if args.compare_wasm {
        return wasm::compare(args);
    }
    if args.workload == Workload::Extender {
        for result in extender::measure(args)? {
            print_result(&result, args.output);
        }
        return Ok(());
    }
    let plan = perf::plan(args.workload);
    let policy = match (&args.policy, args.workload) {
        (Some(p), _) => berth_policy::load(p)?,
        (None, Workload::NodeLabel) => wasm::node_label_policy(false)?,
        // scheduler_perf runs upstream's default plugins; policies/default.json is v1.22's
        // default provider as a Policy.
        (None, _) if plan.is_some() => {
            berth_policy::parse(bundled::DEFAULT_POLICY, bundled::DEFAULT_POLICY_NAME)?
        }
        (None, _) => berth_policy::parse(bundled::POLICY, bundled::POLICY_NAME)?,
    };
    let dir = plugins::plugins_dir(args.policy.as_deref(), args.plugins.as_deref());
    let (mut scheduler, _plugins) = plugins::scheduler(&policy, &dir, config(args))?;
    let result = match plan {
        Some(plan) => perf::measure(args, &plan, &mut scheduler)?,
        None if args.workload == Workload::Preemption => preemption::measure(args, &mut scheduler)?,
        None if args.workload == Workload::Deployments => {
            deployments::measure(args, &mut scheduler)?
        }
        None => measure::measure(args, &mut scheduler)?,
    };
    print_result(&result, args.output);
    Ok(())
}
