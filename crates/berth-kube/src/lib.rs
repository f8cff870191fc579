//! Kubernetes objects for Berth: reading cluster files into typed k8s-openapi
//! objects, and strict Kubernetes quantity parsing.
//!
//! A cluster file is what `kubectl get ... -o yaml` or `-o json` prints: a `v1 List`,
//! a typed list such as `NodeList`, a single object, several `---` separated YAML
//! documents, or a stream of JSON values. [`parse_cluster`] dispatches each object by
//! apiVersion and kind into [`ClusterObjects`], skipping kinds the scheduler does not
//! use with a warning, and rejects input the scheduler could not rely on with a
//! [`ClusterFileError`] that names the file, location, object and field.
//!
//! [`convert`] turns those objects into the engine's model, one object at a time (for a
//! watch-based daemon) or as a whole [`Snapshot`] ready to schedule.
//!
//! [`manifests`] reads workloads that are not yet in the cluster and expands them into the
//! admitted pods their controllers would create (`berth simulate --apply`).

mod cluster_file;
pub mod convert;
mod error;
pub mod manifests;
pub mod protections;
pub mod quantity;
mod strict_value;
pub mod unmodelled;

pub use cluster_file::{ClusterObjects, MAX_CLUSTER_FILE_BYTES, load_cluster_file, parse_cluster};
pub use convert::{ConvertError, PriorityResolver, Snapshot, snapshot};
pub use error::{ClusterFileError, Format, Location, ObjectRef, Site};
