//! Watch streams for every kind the rules consult, forwarded to the scheduling thread as
//! [`WatchEvent`]s.
//!
//! kube-runtime's watcher relists after a disconnect or an expired resource version (410
//! Gone), retrying with its default backoff. A relist only says what exists now, so each
//! stream remembers the keys it has delivered and turns the objects a relist no longer
//! returns into deletes: the cache is updated object by object, never rebuilt.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tracing::debug;

use crate::Input;
use crate::events::{Change, ObjectKey, WatchEvent, object_key};
use crate::reachability::Reachability;

/// Finished pods never matter to the scheduler; leaving them out of the watch keeps the
/// cache small (a pod that finishes arrives as a delete).
const POD_FIELDS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// Asks the node or pod watch to list everything again, so every object is applied anew
/// (when the extenders' documents start keeping JSON they did not keep before).
#[derive(Clone, Default)]
pub struct Relists {
    /// Relists nodes.
    pub nodes: Arc<Notify>,
    /// Relists pods.
    pub pods: Arc<Notify>,
}

/// Starts one watch task per kind on `runtime`; they run until the receiver is gone or the
/// set is dropped.
pub fn spawn_all(
    client: &Client,
    runtime: &Handle,
    to: &Sender<Input>,
    relists: &Relists,
    reachability: &Arc<Reachability>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let all = watcher::Config::default();
    let c = client;
    macro_rules! watch {
        ($kind:ty, $variant:ident, $config:expr) => {
            watch!($kind, $variant, $config, None)
        };
        ($kind:ty, $variant:ident, $config:expr, $relist:expr) => {
            tasks.spawn_on(
                forward::<$kind>(
                    Api::all(c.clone()),
                    $config,
                    to.clone(),
                    WatchEvent::$variant,
                    $relist,
                    reachability.clone(),
                ),
                runtime,
            );
        };
    }
    watch!(Node, Node, all.clone(), Some(relists.nodes.clone()));
    watch!(
        Pod,
        Pod,
        all.clone().fields(POD_FIELDS),
        Some(relists.pods.clone())
    );
    watch!(Namespace, Namespace, all.clone());
    watch!(Service, Service, all.clone());
    watch!(ReplicationController, ReplicationController, all.clone());
    watch!(ReplicaSet, ReplicaSet, all.clone());
    watch!(StatefulSet, StatefulSet, all.clone());
    watch!(PersistentVolume, PersistentVolume, all.clone());
    watch!(PersistentVolumeClaim, PersistentVolumeClaim, all.clone());
    watch!(StorageClass, StorageClass, all.clone());
    watch!(CSINode, CsiNode, all.clone());
    watch!(PriorityClass, PriorityClass, all.clone());
    watch!(PodDisruptionBudget, PodDisruptionBudget, all);
    tasks
}

/// Forwards one kind's watch events until the receiver is gone; `relist` restarts the
/// watch (a fresh list, applied through the same [`Relist`]).
async fn forward<K>(
    api: Api<K>,
    config: watcher::Config,
    to: Sender<Input>,
    wrap: fn(Change<K>) -> WatchEvent,
    relist_on: Option<Arc<Notify>>,
    reachability: Arc<Reachability>,
) where
    K: Resource<DynamicType = ()>
        + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    let kind = K::kind(&());
    let mut relist = Relist::default();
    loop {
        let mut stream = std::pin::pin!(watcher(api.clone(), config.clone()).default_backoff());
        loop {
            let event = match &relist_on {
                Some(asked) => tokio::select! {
                    event = stream.next() => event,
                    _ = asked.notified() => {
                        debug!(%kind, "relisting, as asked");
                        break;
                    }
                },
                None => stream.next().await,
            };
            let event = match event {
                Some(Ok(event)) => {
                    // The watcher announces a relist before asking the server anything.
                    if !matches!(event, Event::Init) {
                        reachability.answered();
                    }
                    event
                }
                Some(Err(e)) => {
                    // The stream retries by itself after its backoff.
                    reachability.failed(&kind, &e);
                    continue;
                }
                None => {
                    debug!(%kind, "watch ended");
                    return;
                }
            };
            for change in relist.changes(event) {
                if to.send(Input::Watch(Box::new(wrap(change)))).is_err() {
                    return;
                }
            }
        }
    }
}

/// The keys a watch has delivered, to turn a relist into deletes for what it lacks.
#[derive(Debug, Default)]
pub struct Relist {
    known: HashSet<ObjectKey>,
    listing: HashSet<ObjectKey>,
    synced: bool,
}

impl Relist {
    /// The cache changes a watcher event stands for.
    pub fn changes<K>(&mut self, event: Event<K>) -> Vec<Change<K>>
    where
        K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    {
        match event {
            Event::Init => {
                self.listing.clear();
                Vec::new()
            }
            Event::InitApply(object) => {
                self.listing.insert(object_key(object.metadata()));
                vec![Change::Apply(object)]
            }
            Event::InitDone => {
                let listed = std::mem::take(&mut self.listing);
                let mut changes: Vec<Change<K>> = self
                    .known
                    .difference(&listed)
                    .cloned()
                    .map(Change::Delete)
                    .collect();
                self.known = listed;
                if !self.synced {
                    self.synced = true;
                    changes.push(Change::Synced);
                }
                changes
            }
            Event::Apply(object) => {
                self.known.insert(object_key(object.metadata()));
                vec![Change::Apply(object)]
            }
            Event::Delete(object) => {
                let key = object_key(object.metadata());
                self.known.remove(&key);
                vec![Change::Delete(key)]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    fn describe(changes: Vec<Change<Node>>) -> Vec<String> {
        changes
            .into_iter()
            .map(|c| match c {
                Change::Apply(n) => format!("apply {}", n.metadata.name.unwrap()),
                Change::Delete(k) => format!("delete {}", k.name),
                Change::Synced => "synced".into(),
            })
            .collect()
    }

    #[test]
    fn a_relist_deletes_what_it_no_longer_lists_and_syncs_once() {
        let mut r = Relist::default();
        let mut all = Vec::new();
        for e in [
            Event::Init,
            Event::InitApply(node("a")),
            Event::InitApply(node("b")),
            Event::InitDone,
            Event::Apply(node("c")),
            Event::Delete(node("a")),
            // Disconnected for a while: b went away, d appeared.
            Event::Init,
            Event::InitApply(node("c")),
            Event::InitApply(node("d")),
            Event::InitDone,
        ] {
            all.extend(describe(r.changes(e)));
        }
        assert_eq!(
            all,
            [
                "apply a", "apply b", "synced", "apply c", "delete a", "apply c", "apply d",
                "delete b"
            ]
        );
    }
}
