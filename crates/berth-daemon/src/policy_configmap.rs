//! The Policy in a ConfigMap (kube-scheduler v1.22's `--policy-configmap`): its text under the
//! key `policy.cfg`, read once at start and then followed, each version handed to whoever
//! reloads the policy. Only `get` and `watch` on that one ConfigMap are needed (a watch with
//! a `metadata.name` field selector, from the version the get returned).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, WatchEvent, WatchParams};
use tokio::sync::watch;
use tracing::{info, warn};

/// The key v1.22 reads the Policy from (`SchedulerPolicyConfigMapKey`).
pub const POLICY_KEY: &str = "policy.cfg";

/// A ConfigMap's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfigMap {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for PolicyConfigMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConfigMap {}/{}", self.namespace, self.name)
    }
}

/// Why the Policy could not be read from its ConfigMap.
#[derive(Debug, thiserror::Error)]
pub enum ConfigMapError {
    /// The API server refused or failed the request.
    #[error("{map}: cannot read it: {source}")]
    Api {
        /// The ConfigMap.
        map: String,
        /// Why.
        source: kube::Error,
    },
    /// The ConfigMap has no `policy.cfg`.
    #[error(
        "{map} has no key {POLICY_KEY} (it has {keys}); put the Policy under {POLICY_KEY}, as kube-scheduler v1.22 reads it"
    )]
    NoKey {
        /// The ConfigMap.
        map: String,
        /// The keys it has.
        keys: String,
    },
}

impl PolicyConfigMap {
    fn api(&self, client: &Client) -> Api<ConfigMap> {
        Api::namespaced(client.clone(), &self.namespace)
    }

    /// The Policy's text now, and the ConfigMap's resource version.
    pub async fn fetch(&self, client: &Client) -> Result<(String, String), ConfigMapError> {
        let map = self
            .api(client)
            .get(&self.name)
            .await
            .map_err(|source| ConfigMapError::Api {
                map: self.to_string(),
                source,
            })?;
        let version = map.metadata.resource_version.clone().unwrap_or_default();
        Ok((self.text_of(&map)?, version))
    }

    fn text_of(&self, map: &ConfigMap) -> Result<String, ConfigMapError> {
        map.data
            .as_ref()
            .and_then(|d| d.get(POLICY_KEY))
            .cloned()
            .ok_or_else(|| {
                let keys: Vec<&str> = map
                    .data
                    .iter()
                    .flat_map(|d| d.keys())
                    .chain(map.binary_data.iter().flat_map(|d| d.keys()))
                    .map(String::as_str)
                    .collect();
                ConfigMapError::NoKey {
                    map: self.to_string(),
                    keys: if keys.is_empty() {
                        "no keys".into()
                    } else {
                        keys.join(", ")
                    },
                }
            })
    }

    /// Follows the ConfigMap from `version` until `stop` turns true, handing every version of
    /// the Policy to `offer` (or why there is none: deleted, key removed). A watch that ends
    /// or fails is started again from a fresh get, after a pause that doubles up to 30 s.
    pub async fn follow(
        &self,
        client: Client,
        mut version: String,
        offer: impl Fn(Result<String, String>) + Send,
        mut stop: watch::Receiver<bool>,
    ) {
        let api = self.api(&client);
        let params = WatchParams::default().fields(&format!("metadata.name={}", self.name));
        let mut pause = Duration::from_secs(1);
        loop {
            if *stop.borrow() {
                return;
            }
            if version.is_empty() {
                match self.fetch(&client).await {
                    Ok((text, v)) => {
                        offer(Ok(text));
                        version = v;
                        pause = Duration::from_secs(1);
                    }
                    Err(ConfigMapError::Api { source, .. }) if is_not_found(&source) => {
                        offer(Err(format!("{self} was deleted")));
                    }
                    Err(e) => {
                        warn!(error = %e, "following the policy ConfigMap");
                        if let ConfigMapError::NoKey { .. } = e {
                            offer(Err(e.to_string()));
                        }
                    }
                }
            }
            if !version.is_empty() {
                match api.watch(&params, &version).await {
                    Ok(events) => {
                        tokio::pin!(events);
                        loop {
                            let event = tokio::select! {
                                _ = stop.wait_for(|s| *s) => return,
                                event = events.next() => event,
                            };
                            match event {
                                None => break,
                                Some(Ok(WatchEvent::Added(map) | WatchEvent::Modified(map))) => {
                                    version =
                                        map.metadata.resource_version.clone().unwrap_or_default();
                                    offer(self.text_of(&map).map_err(|e| e.to_string()));
                                }
                                Some(Ok(WatchEvent::Deleted(_))) => {
                                    offer(Err(format!("{self} was deleted")));
                                    version.clear();
                                }
                                Some(Ok(WatchEvent::Bookmark(b))) => {
                                    version = b.metadata.resource_version;
                                }
                                Some(Ok(WatchEvent::Error(e))) => {
                                    // 410 Gone: the version is too old; start from a get.
                                    info!(code = e.code, message = %e.message, "policy ConfigMap watch ended");
                                    version.clear();
                                    break;
                                }
                                Some(Err(e)) => {
                                    warn!(error = %e, "policy ConfigMap watch failed");
                                    version.clear();
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        warn!(error = %e, "policy ConfigMap watch could not start");
                        version.clear();
                    }
                }
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(Duration::from_secs(30));
        }
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}
