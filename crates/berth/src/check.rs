//! `berth check`: validate a policy and print what it amounts to.

use std::path::Path;

use anyhow::Result;

use crate::Format;

/// Loads, validates and prints the effective configuration.
pub fn run(path: &Path, format: Format) -> Result<()> {
    let policy = berth_policy::load(path)?;
    berth_engine::registry::scheduler_for(&policy, Default::default())?;
    match format {
        Format::Table => print!("{}", policy.describe()),
        Format::Json => println!("{}", serde_json::to_string_pretty(&policy)?),
    }
    Ok(())
}
