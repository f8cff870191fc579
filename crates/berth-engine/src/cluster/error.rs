//! The errors of cluster updates: a leaf, so the node info and the cluster can both use it.

/// Errors from cluster updates.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClusterError {
    /// A node of that name exists already.
    #[error("node {0} already exists")]
    DuplicateNode(String),
    /// A pod of that namespace/name exists already.
    #[error("pod {0} already exists")]
    DuplicatePod(String),
    /// A pod names a node that does not exist.
    #[error("pod {pod} is bound to node {node}, which is not in the cluster")]
    UnknownNode {
        /// The pod.
        pod: String,
        /// The node.
        node: String,
    },
    /// A node's pod CIDR does not parse.
    #[error(
        "node {node}: spec.podCIDRs: invalid CIDR {cidr:?} (expected e.g. 10.244.1.0/24 or fd00::/64)"
    )]
    BadCidr {
        /// The node.
        node: String,
        /// The CIDR.
        cidr: String,
    },
}
