//! Where the policy comes from: a Policy file (`--policy`) or a KubeSchedulerConfiguration
//! (`--config`, the subset that maps one to one onto a Policy; see berth-schedconfig).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use berth_daemon::reload::PolicyParser;
use berth_engine::FeatureGates;
use berth_policy::{EffectivePolicy, PolicyError};
use berth_schedconfig::ReadOptions;

/// A policy file and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySource {
    /// A `kind: Policy` file.
    Policy(PathBuf),
    /// A `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration, read for the profile
    /// `scheduler_name` (or its only profile).
    Config {
        /// The file.
        path: PathBuf,
        /// The profile to read; `None` means the file's only one.
        scheduler_name: Option<String>,
        /// The feature gates the policy runs under (they decide what PodTopologySpread maps to).
        gates: FeatureGates,
    },
}

impl PolicySource {
    /// From the `--policy` and `--config` flags (clap makes them exclusive).
    pub fn from_flags(
        policy: Option<&Path>,
        config: Option<&Path>,
        scheduler_name: Option<&str>,
        gates: FeatureGates,
    ) -> Option<Self> {
        match (policy, config) {
            (_, Some(path)) => Some(PolicySource::Config {
                path: path.to_path_buf(),
                scheduler_name: scheduler_name.map(str::to_string),
                gates,
            }),
            (Some(path), None) => Some(PolicySource::Policy(path.to_path_buf())),
            (None, None) => None,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            PolicySource::Policy(path) | PolicySource::Config { path, .. } => path,
        }
    }

    /// Reads and parses the file.
    pub fn load(&self) -> Result<EffectivePolicy, PolicyError> {
        match self {
            PolicySource::Policy(path) => berth_policy::load(path),
            PolicySource::Config {
                path,
                scheduler_name,
                gates,
            } => berth_schedconfig::load(
                path,
                ReadOptions {
                    scheduler_name: scheduler_name.as_deref(),
                    feature_gates: *gates,
                },
            ),
        }
    }

    /// The parser the reloader reads new versions of the file with.
    pub fn parser(&self) -> PolicyParser {
        match self.clone() {
            PolicySource::Policy(_) => Arc::new(berth_policy::parse),
            PolicySource::Config {
                scheduler_name,
                gates,
                ..
            } => Arc::new(move |text, source| {
                berth_schedconfig::parse(
                    text,
                    source,
                    ReadOptions {
                        scheduler_name: scheduler_name.as_deref(),
                        feature_gates: gates,
                    },
                )
            }),
        }
    }
}
