//! Berth's client for a Policy's HTTP scheduler extenders, speaking the JSON of
//! k8s.io/kube-scheduler/extender/v1 as kube-scheduler v1.22 does.
//!
//! Architecture invariant: the engine never sees HTTP. This crate owns the clients (one per
//! extender, keep-alive, `httpTimeout` over each whole call, bounded answers, no redirects,
//! TLS per the Policy's `tlsConfig`) and the JSON of the nodes and pods it sends.

pub mod client;
pub mod documents;
pub mod error;
pub mod scheduling;
pub mod server;
pub mod tls;
pub mod wire;

pub use client::{FilterAnswer, HttpExtender, Observer, Pending, PreemptionCandidate, Verb};
pub use documents::{DocumentError, Documents, Widened};
pub use error::{CallError, ConfigError};
pub use scheduling::{PolicyExtender, check_extenders, documents_for, policy_extenders};
