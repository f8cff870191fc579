//! Berth's scheduling engine.
//!
//! Architecture invariant: this crate does no IO, starts no threads of its own beyond rayon's
//! pool, and needs no async runtime or API client. Callers build a [`Cluster`] from the
//! [`model`] types, compile a [`Scheduler`] from a policy, and run one cycle per pod.

mod classes;
#[cfg(test)]
mod classes_tests;
pub mod cluster;
pub mod diagnosis;
pub mod explain;
pub mod extender;
mod filters;
pub mod framework;
pub mod health;
#[cfg(test)]
mod layers_tests;
pub mod nominator;
pub mod podinfo;
#[cfg(test)]
mod podinfo_requests_tests;
pub mod preemption;
pub mod profile;
pub mod registry;
pub mod rules;
pub mod scheduler;
pub mod simulation;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use berth_model::{labels, model, resources, types};
pub use berth_policy::FeatureGates;
pub use cluster::{Cluster, ClusterError, ClusterSizes, Compaction, NodeId, NodeInfo, PodId};
pub use diagnosis::FitError;
pub use explain::Explanation;
pub use extender::{Extender, ExtenderError};
pub use framework::{
    ApiWrite, CycleContext, FailureKind, FilterRule, Reason, Reservation, Reuse, ScoreRule,
};
pub use nominator::Nominator;
pub use podinfo::PodInfo;
pub use scheduler::{CycleConfig, Decision, Scheduler};
