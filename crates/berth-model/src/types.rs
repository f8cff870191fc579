//! Small types shared by every layer of the engine: the ids the cluster hands out, host
//! ports, the namespaces an affinity term looks in, the kinds of affinity terms.
//!
//! A leaf: it depends only on [`crate::labels`], so the cluster, compiled pods and rules can
//! all use it without depending on one another.

use crate::labels::{HoldsSymbols, Labels, Selector, Sym};

/// Index of a node in the cluster. Stable while the node exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Index of a pod in the cluster. Stable while the pod exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodId(pub u32);

/// A host port in use or requested: (IP, protocol, port). IP "0.0.0.0" is the wildcard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host IP, "0.0.0.0" when unset.
    pub ip: Box<str>,
    /// Protocol, "TCP" when unset.
    pub protocol: Box<str>,
    /// Port number.
    pub port: i32,
}

impl HostPort {
    /// Whether two host ports conflict (same protocol and port, and IPs equal or either wildcard).
    #[inline]
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || &*self.ip == "0.0.0.0" || &*other.ip == "0.0.0.0")
    }
}

/// The namespaces a pod affinity term looks in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceFilter {
    /// Listed namespaces.
    pub names: Vec<Sym>,
    /// Namespaces whose labels match (None = no selector; an empty selector matches all).
    pub selector: Option<Selector>,
}

impl NamespaceFilter {
    /// Only the given namespace.
    pub fn only(ns: Sym) -> Self {
        NamespaceFilter {
            names: vec![ns],
            selector: None,
        }
    }

    /// Whether `ns` is included. `labels` gives the namespace's labels, None when there is no
    /// Namespace object (then only a listed name or an empty selector includes it). It is
    /// called only for a non-empty namespace selector, so the common case costs no lookup.
    #[inline]
    pub fn contains<'l>(&self, ns: Sym, labels: impl FnOnce() -> Option<&'l Labels>) -> bool {
        self.names.contains(&ns)
            || self
                .selector
                .as_ref()
                .is_some_and(|s| s.is_empty() || labels().is_some_and(|l| s.matches(l)))
    }
}

impl HoldsSymbols for NamespaceFilter {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        self.names.iter_mut().for_each(&mut *f);
        if let Some(s) = &mut self.selector {
            s.visit_symbols(f);
        }
    }
}

/// Which of a pod's affinity term lists a term reference points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TermKind {
    /// Required pod affinity.
    Required,
    /// Preferred pod affinity.
    Preferred,
    /// Required pod anti-affinity.
    AntiRequired,
    /// Preferred pod anti-affinity.
    AntiPreferred,
}
