//! Policy files to and from kube-scheduler's KubeSchedulerConfiguration
//! (`kubescheduler.config.k8s.io/v1`), the migration path off `kind: Policy`, which upstream
//! removed in v1.23.
//!
//! [`convert()`] writes the profile that reproduces a policy with upstream's plugins, as
//! v1.22's legacy registry mapped them, and names everything v1 has no equivalent for;
//! [`read`] takes such a file back (the subset that maps one to one onto a Policy). The
//! policy-name -> plugin mapping itself is berth-policy's ([`berth_policy::upstream`]), the
//! table the engine's rules are checked against, so both directions follow one table.

pub mod args;
pub mod component;
pub mod convert;
pub mod goduration;
pub mod plugins;
pub mod read;
pub mod types;

pub use component::{ConfigVersion, Settings};
pub use convert::{Conversion, Options, Unconverted, convert};
pub use read::{ReadOptions, load, parse, settings};
pub use types::KubeSchedulerConfiguration;
