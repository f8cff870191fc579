//! Berth as a running scheduler: watches the API server, keeps the engine's cluster current,
//! schedules the pending pods of its scheduler name one at a time, and binds them.
//!
//! Data flows one way: watch ([`events::WatchEvent`]) -> handlers (conversion, routing:
//! [`events::ClusterEvent`]) -> store ([`store::Store`], the engine `Cluster`) -> scheduling
//! attempt (decide, preempt, reserve, assume) -> binder (the API writes and the binding).
//! One thread owns the store and runs the attempts, so the hot path takes no lock; watches,
//! bindings, events and leader election are async tasks that talk to it over one channel of
//! [`Input`]s.

pub mod binder;
pub mod client;
pub mod configz;
mod daemon;
pub mod events;
pub mod extenders;
pub mod handlers;
pub mod leader;
pub mod metrics;
pub mod policy_configmap;
pub mod protections;
pub mod protobuf;
pub mod queue;
pub mod reachability;
pub mod reload;
pub mod scheduling;
pub mod secure;
mod server;
pub mod store;
pub mod unreadable;
pub mod watch;

pub use daemon::{DaemonConfig, DaemonError, ProfileRun, run, run_profiles, termination_signal};

/// What the scheduling thread reacts to.
#[derive(Debug)]
pub enum Input {
    /// A watched object changed.
    Watch(Box<events::WatchEvent>),
    /// A binding came back.
    Bound(binder::BindOutcome),
    /// This replica started or stopped leading.
    Leader(bool),
    /// Stop taking pods and return.
    Shutdown,
}

#[cfg(test)]
mod testing;
