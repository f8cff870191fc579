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
    /// Every extender is node-cache capable: node JSON is never sent, so none is kept.
    pods_only: bool,
    /// Some preempt call sends its victims whole, so bound pods are kept too.
    bound_pods: bool,
}

#[derive(Default)]
struct Inner {
    nodes: HashMap<String, Arc<RawValue>>,
    pods: HashMap<String, Arc<RawValue>>,
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
        let (nodes, pods) = self.counts();
        f.debug_struct("Documents")
            .field("nodes", &nodes)
            .field("pods", &pods)
            .field("pods_only", &self.pods_only)
            .field("bound_pods", &self.bound_pods)
            .finish()
    }
}

impl Documents {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that ignores nodes, for extenders that are all node-cache capable.
    pub fn pods_only() -> Self {
        Documents {
            pods_only: true,
            ..Self::default()
        }
    }

    /// Keeps bound pods too (the caller stores them): victims sent whole need them.
    pub fn with_bound_pods(mut self) -> Self {
        self.bound_pods = true;
        self
    }

    /// Whether bound pods are to be kept.
    pub fn keeps_bound_pods(&self) -> bool {
        self.bound_pods
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a map half-updated (each write is one
        // insert or remove), so a poisoned lock is still consistent.
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores (or replaces) node `name`.
    pub fn set_node<T: Serialize>(&self, name: &str, node: &T) -> Result<(), DocumentError> {
        if self.pods_only {
            return Ok(());
        }
        let json = encode("node", name, node)?;
        self.write().nodes.insert(name.to_string(), json);
        Ok(())
    }

    /// Forgets node `name`.
    pub fn remove_node(&self, name: &str) {
        self.write().nodes.remove(name);
    }

    /// Stores (or replaces) pod `namespace/name`.
    pub fn set_pod<T: Serialize>(&self, key: &str, pod: &T) -> Result<(), DocumentError> {
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
