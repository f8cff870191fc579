//! Berth's input vocabulary: the parts of Kubernetes objects the scheduler reads, as plain
//! Rust values ([`model`]), their quantities ([`resources`]), interned labels and compiled
//! selectors ([`labels`]) and the small ids and terms every layer of the engine shares
//! ([`types`]).
//!
//! Architecture invariant: this crate depends on nothing of Berth's and on no thread pool,
//! so the converters (berth-kube) and the engine share one vocabulary without the converters
//! pulling in rules.

pub mod labels;
pub mod model;
pub mod resources;
mod string_map;
pub mod types;
