//! The JSON of the objects an extender is sent: nodes (for extenders that are not
//! node-cache capable), pending pods, and bound pods when a preempt call sends victims
//! whole, as the API server or the cluster file gave them.
//! The engine's model keeps only what scheduling reads, so the caller keeps this beside it,
//! updated from the same watch events or file.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::value::RawValue;

/// Node and pod JSON by name, shared between the caller that updates it and the extenders.
#[derive(Clone, Default)]
pub struct Documents {
    inner: Arc<RwLock<Inner>>,
}

struct Inner {
    nodes: HashMap<String, Arc<RawValue>>,
    pods: HashMap<String, Arc<RawValue>>,
    keep: Keep,
}

/// What a store keeps: only what some extender is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Keep {
    /// Node JSON: false when every extender is node-cache capable (sent names only).
    nodes: bool,
    /// Pending pods' JSON: false when there is no extender at all.
    pods: bool,
    /// Bound pods' JSON too: some preempt call sends its victims whole.
    bound_pods: bool,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            nodes: HashMap::new(),
            pods: HashMap::new(),
            keep: Keep {
                nodes: true,
                pods: true,
                bound_pods: false,
            },
        }
    }
}

/// What [`Documents::widen_to`] added: the kinds whose JSON must now be filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Widened {
    /// Nodes.
    pub nodes: bool,
    /// Pods (pending ones, or bound ones too).
    pub pods: bool,
}

/// An object that does not serialise to JSON (never for k8s-openapi types).
#[derive(Debug, thiserror::Error)]
#[error("{kind} {name}: cannot be written as JSON: {problem}")]
pub struct DocumentError {
    kind: &'static str,
    name: String,
    problem: String,
}

fn encode<T: Serialize>(
    kind: &'static str,
    name: &str,
    object: &T,
) -> Result<Arc<RawValue>, DocumentError> {
    serde_json::value::to_raw_value(object)
        .map(Arc::from)
        .map_err(|e| DocumentError {
            kind,
            name: name.to_string(),
            problem: e.to_string(),
        })
}

impl std::fmt::Debug for Documents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.read();
        f.debug_struct("Documents")
            .field("nodes", &inner.nodes.len())
            .field("pods", &inner.pods.len())
            .field("keep", &inner.keep)
            .finish()
    }
}

impl Documents {
    /// An empty store that keeps nodes and pending pods.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that ignores nodes, for extenders that are all node-cache capable.
    pub fn pods_only() -> Self {
        let documents = Self::default();
        documents.write().keep.nodes = false;
        documents
    }

    /// A store that keeps nothing, for a policy without extenders (`berth run` still hands
    /// one to its cache, so that a reloaded policy with extenders can widen it).
    pub fn unused() -> Self {
        let documents = Self::default();
        documents.write().keep = Keep {
            nodes: false,
            pods: false,
            bound_pods: false,
        };
        documents
    }

    /// Keeps bound pods too (the caller stores them): victims sent whole need them.
    pub fn with_bound_pods(self) -> Self {
        self.write().keep.bound_pods = true;
        self
    }

    /// Whether bound pods are to be kept.
    pub fn keeps_bound_pods(&self) -> bool {
        self.read().keep.bound_pods
    }

    /// Whether node JSON is kept.
    pub fn keeps_nodes(&self) -> bool {
        self.read().keep.nodes
    }

    /// Widens what is kept to what `other` keeps too (a reloaded policy's extenders may
    /// need more); never narrows, as extenders of the running policy may still be called.
    /// Returns whether it now keeps nodes, and pods, that it did not keep before: the
    /// caller must fill those in (relist them).
    pub fn widen_to(&self, other: &Documents) -> Widened {
        let wanted = other.read().keep;
        let mut inner = self.write();
        let had = inner.keep;
        inner.keep = Keep {
            nodes: had.nodes || wanted.nodes,
            pods: had.pods || wanted.pods,
            bound_pods: had.bound_pods || wanted.bound_pods,
        };
        Widened {
            nodes: wanted.nodes && !had.nodes,
            pods: (wanted.pods && !had.pods) || (wanted.bound_pods && !had.bound_pods),
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a map half-updated (each write is one
        // insert or remove), so a poisoned lock is still consistent.
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores (or replaces) node `name`; true when the store held no JSON for it before, so
    /// a pod refused for want of it may fit now.
    pub fn set_node<T: Serialize>(&self, name: &str, node: &T) -> Result<bool, DocumentError> {
        if !self.keeps_nodes() {
            return Ok(false);
        }
        let json = encode("node", name, node)?;
        Ok(self.write().nodes.insert(name.to_string(), json).is_none())
    }

    /// Forgets node `name`.
    pub fn remove_node(&self, name: &str) {
        self.write().nodes.remove(name);
    }

    /// Stores (or replaces) pod `namespace/name`.
    pub fn set_pod<T: Serialize>(&self, key: &str, pod: &T) -> Result<(), DocumentError> {
        if !self.read().keep.pods {
            return Ok(());
        }
        let json = encode("pod", key, pod)?;
        self.write().pods.insert(key.to_string(), json);
        Ok(())
    }

    /// Forgets pod `namespace/name`.
    pub fn remove_pod(&self, key: &str) {
        self.write().pods.remove(key);
    }

    /// Pod `namespace/name`'s JSON.
    pub fn pod(&self, key: &str) -> Option<Arc<RawValue>> {
        self.read().pods.get(key).cloned()
    }

    /// The JSON of each named node, in order; the first name without JSON is the error.
    pub fn nodes<'a>(&self, names: &[&'a str]) -> Result<Vec<Arc<RawValue>>, &'a str> {
        let inner = self.read();
        names
            .iter()
            .map(|name| inner.nodes.get(*name).cloned().ok_or(*name))
            .collect()
    }

    /// Number of nodes and pods held.
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.read();
        (inner.nodes.len(), inner.pods.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_keeps_more_and_says_what_to_fill_in() {
        let unused = Documents::unused();
        unused.set_pod("default/p", &"{}").unwrap();
        unused.set_node("n1", &"{}").unwrap();
        assert_eq!(unused.counts(), (0, 0));
        let widened = unused.widen_to(&Documents::pods_only());
        assert_eq!(
            widened,
            Widened {
                nodes: false,
                pods: true
            }
        );
        unused.set_pod("default/p", &"{}").unwrap();
        unused.set_node("n1", &"{}").unwrap();
        assert_eq!(unused.counts(), (0, 1));
        let widened = unused.widen_to(&Documents::new().with_bound_pods());
        assert_eq!(
            widened,
            Widened {
                nodes: true,
                pods: true
            }
        );
        assert!(unused.keeps_nodes() && unused.keeps_bound_pods());
        // Never narrowed, and nothing new to fill in.
        assert_eq!(unused.widen_to(&Documents::unused()), Widened::default());
        assert!(unused.keeps_nodes() && unused.keeps_bound_pods());
    }
}
