//! The Policy's extenders in `berth run`: their clients, shared by the scheduler (filter,
//! prioritize, preempt) and the binder (bind), replaced as a whole when a reloaded policy
//! changes them, and the JSON they are sent.

use std::sync::{Arc, RwLock};

use berth_extender::{ConfigError, Documents, Observer, PolicyExtender, documents_for};
use berth_policy::Extender;
use tokio::runtime::Handle;

use crate::watch::Relists;

/// The extenders in use; clones share them.
#[derive(Clone)]
pub struct ExtenderSet {
    current: Arc<RwLock<Current>>,
    documents: Documents,
    runtime: Handle,
    observer: Observer,
    relists: Relists,
}

struct Current {
    config: Vec<Extender>,
    clients: Vec<Arc<PolicyExtender>>,
}

impl ExtenderSet {
    /// Clients for `config` (the start policy's extenders, in call order) on `runtime`, with
    /// calls reported to `observer`; `relists` fill in JSON a later set needs that this one
    /// does not keep.
    pub fn new(
        config: &[Extender],
        runtime: &Handle,
        observer: Observer,
        relists: Relists,
    ) -> Result<Self, ConfigError> {
        let documents = documents_for(config);
        let clients =
            berth_extender::policy_extenders(config, runtime, &documents, Some(observer.clone()))?;
        Ok(ExtenderSet {
            current: Arc::new(RwLock::new(Current {
                config: config.to_vec(),
                clients,
            })),
            documents,
            runtime: runtime.clone(),
            observer,
            relists,
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        // Replaced whole under the lock: a poisoned lock still holds a consistent set.
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The JSON store the cache keeps for the calls (always handed to the cache, keeping
    /// nothing while there are no extenders, so that a reload that adds some can widen it).
    pub fn documents(&self) -> &Documents {
        &self.documents
    }

    /// How many extenders are in use.
    pub fn len(&self) -> usize {
        self.read().clients.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.read().clients.is_empty()
    }

    /// The engine's view of the extenders in use.
    pub fn engine(&self) -> Vec<Arc<dyn berth_engine::Extender>> {
        self.read()
            .clients
            .iter()
            .map(|e| e.clone() as Arc<dyn berth_engine::Extender>)
            .collect()
    }

    /// The first extender with a bindVerb interested in `pod` (upstream's extendersBinding).
    pub fn binder_for(&self, pod: &berth_engine::model::Pod) -> Option<Arc<PolicyExtender>> {
        self.read().clients.iter().find(|e| e.binds(pod)).cloned()
    }

    /// Switches to a reloaded policy's extenders: false when they are the ones in use. If
    /// one cannot be set up (a bad URL, unreadable or invalid TLS material), nothing
    /// changes and the error names it. When the new ones need JSON this set did not keep
    /// (whole nodes, pods when there were no extenders, or bound pods as preemption
    /// victims), the watches relist those kinds to fill it in; until then a call needing it
    /// fails with an error naming the object, and its pod is retried.
    pub fn update(&self, config: &[Extender]) -> Result<bool, ConfigError> {
        if self.read().config == config {
            return Ok(false);
        }
        let clients = berth_extender::policy_extenders(
            config,
            &self.runtime,
            &self.documents,
            Some(self.observer.clone()),
        )?;
        let widened = self.documents.widen_to(&documents_for(config));
        if widened.nodes {
            self.relists.nodes.notify_one();
        }
        if widened.pods {
            self.relists.pods.notify_one();
        }
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Current {
            config: config.to_vec(),
            clients,
        };
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn extenders(json: serde_json::Value) -> Vec<Extender> {
        let policy = serde_json::json!({"kind": "Policy", "apiVersion": "v1", "extenders": json});
        berth_policy::parse(&policy.to_string(), "policy.json")
            .expect("policy")
            .extenders
    }

    fn names(set: &ExtenderSet) -> Vec<String> {
        set.engine().iter().map(|e| e.name().to_string()).collect()
    }

    #[test]
    fn a_changed_policy_replaces_the_clients_and_a_bad_one_changes_nothing() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let observer: Observer = Arc::new(|_, _, _, _| {});
        let relists = Relists::default();
        let first = extenders(serde_json::json!([
            {"urlPrefix": "http://127.0.0.1:1/a", "filterVerb": "filter", "nodeCacheCapable": true}
        ]));
        let set = ExtenderSet::new(&first, runtime.handle(), observer, relists.clone()).unwrap();
        assert_eq!(names(&set), ["http://127.0.0.1:1/a"]);
        assert!(!set.update(&first).unwrap(), "unchanged");
        let before = set.engine();

        // Only the timeout changes: new clients all the same.
        let slower = extenders(serde_json::json!([
            {"urlPrefix": "http://127.0.0.1:1/a", "filterVerb": "filter", "nodeCacheCapable": true,
             "httpTimeout": 9_000_000_000u64}
        ]));
        assert!(set.update(&slower).unwrap());
        assert!(!Arc::ptr_eq(&before[0], &set.engine()[0]));

        // A bad CA file: an error naming it, and the running clients stay.
        let bad = extenders(serde_json::json!([
            {"urlPrefix": "https://127.0.0.1:1/b", "filterVerb": "filter",
             "tlsConfig": {"caFile": "/nonexistent/ca.crt"}}
        ]));
        let error = set.update(&bad).unwrap_err().to_string();
        assert!(
            error.contains("tlsConfig.caFile \"/nonexistent/ca.crt\" cannot be read"),
            "{error}"
        );
        assert_eq!(names(&set), ["http://127.0.0.1:1/a"]);
        assert!(!set.documents().keeps_nodes());

        // Whole nodes wanted now: the node watch is asked to relist, pods are not.
        let whole = extenders(serde_json::json!([
            {"urlPrefix": "http://127.0.0.1:1/c", "filterVerb": "filter", "bindVerb": "bind"}
        ]));
        assert!(set.update(&whole).unwrap());
        assert_eq!(names(&set), ["http://127.0.0.1:1/c"]);
        assert!(set.documents().keeps_nodes());
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), relists.nodes.notified())
                .await
                .expect("nodes relisted");
            assert!(
                tokio::time::timeout(Duration::from_millis(50), relists.pods.notified())
                    .await
                    .is_err(),
                "pods were kept already"
            );
        });
        // None left: nothing is called, nothing binds.
        assert!(set.update(&[]).unwrap());
        assert!(set.is_empty());
    }
}
