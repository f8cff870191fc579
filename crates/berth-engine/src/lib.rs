//! Berth's scheduling engine.
//!
//! Architecture invariant: this crate does no IO, starts no threads of its own beyond rayon's
//! pool, and needs no async runtime or API client. Callers build a [`Cluster`] from the
//! [`model`] types, compile a [`Scheduler`] from a policy, and run one cycle per pod.
//!
//! Its modules are private, and what other crates use of them is re-exported here. The
//! public modules are namespaces whose names are part of the API: the vocabulary of
//! berth-model; [`framework`], the traits a rule implements (berth-wasm's plugins do);
//! [`rules`], one module per rule with its reason strings and upstream plugin name, which
//! callers match on; [`health`], the protections' trackers that whoever watches the cluster
//! feeds; [`extender`], the protocol an extender implements; [`simulation`], the driver of a
//! batch of pods; and `testkit`, the builders for tests. `layers_tests.rs` holds the list.

mod classes;
#[cfg(test)]
mod classes_tests;
mod cluster;
mod diagnosis;
mod explain;
pub mod extender;
mod filters;
pub mod framework;
pub mod health;
#[cfg(test)]
mod layers_tests;
mod nominator;
mod podinfo;
#[cfg(test)]
mod podinfo_requests_tests;
mod preemption;
mod profile;
mod registry;
pub mod rules;
mod schedule_one;
mod scheduler;
pub mod simulation;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use berth_model::{labels, model, resources, types};
pub use berth_policy::FeatureGates;
pub use classes::SummedCycles;
pub use cluster::{Cluster, ClusterError, ClusterSizes, Compaction, NodeId, NodeInfo, PodId};
pub use diagnosis::{Candidate, FitError};
pub use explain::{Explanation, NodeExplanation, RejectedBy, Rejection, ScoreValue};
pub use extender::{Extender, ExtenderError};
pub use framework::{
    ApiWrite, CycleContext, FailureKind, FilterRule, Reason, Reservation, Reuse, ScoreRule,
};
pub use nominator::Nominator;
pub use podinfo::{PodInfo, any_term_matches, effective_requests};
pub use preemption::{DisruptionBudgets, LostOn, PreemptionExplanation, PreemptionOutcome};
pub use registry::{PluginFactory, RegistryError, scheduler_for, scheduler_with_plugins};
pub use schedule_one::{Effects, Eviction, Placement, schedule_one};
pub use scheduler::{CycleConfig, Decision, Detail, Scheduler};
