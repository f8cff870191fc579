//! The policy and cluster `berth simulate` uses when none is given, built into the binary so
//! a fresh checkout (or an installed binary) shows Berth working anywhere.

/// `policies/openshift.json`.
pub const POLICY_NAME: &str = "policies/openshift.json";
/// Its text.
pub const POLICY: &str = include_str!("../../../policies/openshift.json");
/// `policies/default.json`: v1.22's default predicates and priorities as a Policy, which
/// `berth bench` runs scheduler_perf's workloads with.
pub const DEFAULT_POLICY_NAME: &str = "policies/default.json";
/// Its text.
pub const DEFAULT_POLICY: &str = include_str!("../../../policies/default.json");
/// `policies/example-cluster.yaml`.
pub const CLUSTER_NAME: &str = "policies/example-cluster.yaml";
/// Its text.
pub const CLUSTER: &str = include_str!("../../../policies/example-cluster.yaml");
