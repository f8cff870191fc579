//! The handlers: each watch event's object converted into the engine's terms (through
//! berth-kube's per-object converters) and routed to the store as a [`ClusterEvent`]. The
//! only part of the scheduling thread that reads API objects: it feeds the protections what
//! kubelets reported and the extenders' documents their JSON, resolves priorities, and keeps
//! the pending pods it cannot read (for a `FailedScheduling` event) and the fields Berth does
//! not model.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use berth_engine::model;
use berth_kube::PriorityResolver;
use berth_kube::convert::{self, ConvertError};
use berth_kube::unmodelled;
use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tracing::{debug, warn};

use crate::events::{Change, ClusterEvent, Kind, ObjectKey, VolumeObject, WatchEvent, object_key};
use crate::queue::Queue;
use crate::store::{QueueChange, Store};
use crate::unreadable::{self, Unreadable};

/// Conversion and routing of watch events, and what it keeps about API objects.
#[derive(Debug)]
pub struct Handlers {
    /// The scheduler names (profiles) whose pending pods are ours.
    scheduler_names: Vec<String>,
    priority_classes: BTreeMap<String, PriorityClass>,
    priorities: PriorityResolver,
    /// Pending pods of this scheduler that cannot be read, by pod key.
    unreadable: HashMap<String, Unreadable>,
    /// Pods (by key) that set each field Berth does not model; a field is logged when its
    /// first pod appears.
    unmodelled: BTreeMap<(&'static str, &'static str), HashSet<String>>,
}

impl Handlers {
    /// Handlers for the schedulers (profiles) called `names`.
    pub fn serving(names: &[String]) -> Self {
        Handlers {
            scheduler_names: names.to_vec(),
            priority_classes: BTreeMap::new(),
            priorities: PriorityResolver::default(),
            unreadable: HashMap::new(),
            unmodelled: BTreeMap::new(),
        }
    }

    /// How many cached pods set each field Berth does not model (every field seen since
    /// start, so a gauge falls back to 0).
    pub fn unmodelled_field_counts(&self) -> Vec<(&'static str, &'static str, usize)> {
        self.unmodelled
            .iter()
            .map(|(&(kind, field), pods)| (kind, field, pods.len()))
            .collect()
    }

    /// Records which unmodelled fields a pod sets (none once deleted), logging each field the
    /// first time any pod sets it.
    fn track_unmodelled(&mut self, key: &str, object: Option<&Pod>) {
        let found = object.map(unmodelled::in_pod).unwrap_or_default();
        for u in &found {
            if !self.unmodelled.contains_key(&(u.kind, u.field)) {
                warn!(
                    kind = u.kind,
                    field = u.field,
                    refused = u.refuses,
                    "{}",
                    u.why
                );
            }
            self.unmodelled
                .entry((u.kind, u.field))
                .or_default()
                .insert(key.to_owned());
        }
        for ((kind, field), pods) in &mut self.unmodelled {
            if !found.iter().any(|u| u.kind == *kind && u.field == *field) {
                pods.remove(key);
            }
        }
    }

    /// Whether pending pods of `scheduler_name` are these handlers'.
    pub fn serves(&self, scheduler_name: &str) -> bool {
        self.scheduler_names.iter().any(|n| n == scheduler_name)
    }

    /// Converts one watch event, applies it to `store` and routes what it means for
    /// `queue`: pending pods of this scheduler go to (or leave) it, and changes that could
    /// make an unschedulable pod fit move its unschedulable pods.
    pub fn apply(&mut self, store: &mut Store, event: WatchEvent, queue: &mut Queue, now: Instant) {
        use model::SelectorKind::*;
        let kind = event.kind();
        let change = match event {
            WatchEvent::Node(c) => Self::node(store, c),
            WatchEvent::Pod(c) => self.pod(store, c, queue),
            WatchEvent::Namespace(c) => keyed(
                c,
                Kind::Namespace,
                |object| {
                    let ns = converted(convert::namespace(object))?;
                    if let Some(model::TolerationWhitelist::Invalid(why)) = &ns.toleration_whitelist
                    {
                        warn!(
                            namespace = %ns.meta.name,
                            error = %why,
                            "the namespace's {} annotation does not parse: it grants no taint \
                             that CheckTolerationRestriction guards",
                            convert::TOLERATIONS_WHITELIST_ANNOTATION
                        );
                    }
                    Some(ClusterEvent::NamespaceApplied(ns))
                },
                |key| ClusterEvent::NamespaceDeleted(key.name),
            ),
            WatchEvent::Service(c) => selector_object(c, Service, convert::service),
            WatchEvent::ReplicationController(c) => {
                selector_object(c, ReplicationController, convert::replication_controller)
            }
            WatchEvent::ReplicaSet(c) => selector_object(c, ReplicaSet, convert::replica_set),
            WatchEvent::StatefulSet(c) => selector_object(c, StatefulSet, convert::stateful_set),
            WatchEvent::PersistentVolume(c) => volume_object(c, Kind::PersistentVolume, |o| {
                convert::persistent_volume(o).map(VolumeObject::PersistentVolume)
            }),
            WatchEvent::PersistentVolumeClaim(c) => {
                volume_object(c, Kind::PersistentVolumeClaim, |o| {
                    convert::persistent_volume_claim(o).map(VolumeObject::PersistentVolumeClaim)
                })
            }
            WatchEvent::StorageClass(c) => volume_object(c, Kind::StorageClass, |o| {
                convert::storage_class(o).map(VolumeObject::StorageClass)
            }),
            WatchEvent::CsiNode(c) => volume_object(c, Kind::CsiNode, |o| {
                convert::csi_node(o).map(VolumeObject::CsiNode)
            }),
            WatchEvent::PriorityClass(c) => self.priority_class(c),
            WatchEvent::PodDisruptionBudget(c) => keyed(
                c,
                Kind::PodDisruptionBudget,
                |object| {
                    Some(ClusterEvent::BudgetApplied(converted(
                        convert::pod_disruption_budget(object),
                    )?))
                },
                ClusterEvent::BudgetDeleted,
            ),
        };
        let routing = store.apply(change);
        match routing.queue {
            QueueChange::Upsert(pod) => queue.upsert(*pod, now),
            QueueChange::Remove(key) => {
                queue.remove(&key);
            }
            QueueChange::None => {}
        }
        if let Some(event) = routing.retry {
            let moved = queue.move_all_unschedulable(now, event);
            if moved > 0 {
                debug!(
                    ?kind,
                    event, moved, "cluster event: retrying unschedulable pods"
                );
            }
        }
    }

    fn node(store: &mut Store, change: Change<Node>) -> ClusterEvent {
        match change {
            Change::Synced => ClusterEvent::Listed(Kind::Node),
            Change::Apply(object) => {
                store.protections_mut().node(&object);
                let Some(node) = converted(convert::node(&object)) else {
                    return ClusterEvent::Nothing(Kind::Node);
                };
                let name = &node.meta.name;
                // Kept up to date even when the model is unchanged: extenders get the node
                // as the API server has it.
                let json_newly_held = match store.documents() {
                    Some(documents) => documents.set_node(name, &object).unwrap_or_else(|e| {
                        warn!(node = %name, error = %e, "node JSON not kept for the extenders");
                        false
                    }),
                    None => false,
                };
                ClusterEvent::NodeApplied {
                    node,
                    json_newly_held,
                }
            }
            Change::Delete(key) => {
                store.protections_mut().node_deleted(&key.name);
                if let Some(documents) = store.documents() {
                    documents.remove_node(&key.name);
                }
                ClusterEvent::NodeDeleted(key.name)
            }
        }
    }

    fn pod(&mut self, store: &mut Store, change: Change<Pod>, queue: &mut Queue) -> ClusterEvent {
        match change {
            Change::Synced => ClusterEvent::Listed(Kind::Pod),
            Change::Delete(key) => self.pod_deleted(store, key),
            Change::Apply(object) => {
                // Before a finished pod is dropped: kubelet refusing a pod finishes it.
                store.protections_mut().pod(&object);
                let key = object_key(&object.metadata);
                if convert::is_terminal(&object) {
                    return self.pod_deleted(store, key);
                }
                let pod_key = format!("{}/{}", key.namespace(), key.name);
                self.track_unmodelled(&pod_key, Some(&object));
                let Some(pod) = self.convert_pod(&object, queue) else {
                    return ClusterEvent::Nothing(Kind::Pod);
                };
                let ours = pod.node_name.is_none() && self.serves(&pod.scheduler_name);
                if let Some(documents) = store.documents() {
                    // Only pods this scheduler may place are ever sent, and bound pods
                    // as preemption victims when an extender gets them whole.
                    if ours || (pod.node_name.is_some() && documents.keeps_bound_pods()) {
                        if let Err(e) = documents.set_pod(&pod_key, &object) {
                            warn!(pod = %pod_key, error = %e,
                                "pod JSON not kept for the extenders");
                        }
                    } else {
                        documents.remove_pod(&pod_key);
                    }
                }
                if pod.node_name.is_some() {
                    ClusterEvent::PodBound(pod)
                } else if gated(&object) {
                    // Upstream holds pods with scheduling gates until the gates are removed.
                    queue.remove(&pod_key);
                    ClusterEvent::Nothing(Kind::Pod)
                } else {
                    ClusterEvent::PodPending { pod, ours }
                }
            }
        }
    }

    fn pod_deleted(&mut self, store: &mut Store, key: ObjectKey) -> ClusterEvent {
        let pod_key = format!("{}/{}", key.namespace(), key.name);
        self.track_unmodelled(&pod_key, None);
        if let Some(documents) = store.documents() {
            documents.remove_pod(&pod_key);
        }
        self.unreadable.remove(&pod_key);
        ClusterEvent::PodDeleted(key)
    }

    /// Converts a pod. A bound pod that fails is read leniently so it is still counted; a
    /// pending pod of this scheduler that fails is recorded for a `FailedScheduling` event.
    fn convert_pod(&mut self, object: &Pod, queue: &mut Queue) -> Option<model::Pod> {
        let meta = &object.metadata;
        let key = format!(
            "{}/{}",
            meta.namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("default"),
            meta.name.as_deref().unwrap_or_default()
        );
        let mut warnings = Vec::new();
        let result = convert::pod(object, &self.priorities, &mut warnings);
        for w in warnings {
            warn!("{w}");
        }
        let error = match result {
            Ok(pod) => {
                self.unreadable.remove(&key);
                return Some(pod);
            }
            Err(e) => e,
        };
        let bound = object
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if bound {
            let clamped = unreadable::clamp_quantities(object);
            let bare = unreadable::without_constraints(clamped.as_ref().unwrap_or(object));
            for candidate in clamped.iter().chain(std::iter::once(&bare)) {
                if let Ok(pod) = convert::pod(candidate, &self.priorities, &mut Vec::new()) {
                    warn!(pod = %key, error = %error,
                        "bound pod read leniently: counted on its node with out-of-range \
                         quantities clamped and, if that was not enough, without its constraints");
                    return Some(pod);
                }
            }
            warn!(pod = %key, error = %error, "bound pod left out of the cache: it cannot be read");
            return None;
        }
        queue.remove(&key);
        let ours = self.serves(unreadable::scheduler_name(object))
            && meta.deletion_timestamp.is_none()
            && !gated(object);
        if !ours {
            self.unreadable.remove(&key);
            return None;
        }
        warn!(pod = %key, error = %error, "pending pod cannot be read; reporting it on the pod");
        let message = unreadable::message(&error);
        let pod = unreadable::reference_pod(object);
        match self.unreadable.get_mut(&key) {
            Some(u) if u.message == message && u.pod.meta.uid == pod.meta.uid => {}
            _ => {
                self.unreadable.insert(
                    key,
                    Unreadable {
                        pod,
                        message,
                        reported: false,
                    },
                );
            }
        }
        None
    }

    /// Pending pods that cannot be read and have not been reported yet; marks them reported.
    pub fn take_unreported(&mut self) -> Vec<(model::Pod, String)> {
        self.unreadable
            .values_mut()
            .filter(|u| !u.reported)
            .map(|u| {
                u.reported = true;
                (u.pod.clone(), u.message.clone())
            })
            .collect()
    }

    /// Priority classes only affect pods converted later; admission has normally written
    /// `spec.priority` into every pod already.
    fn priority_class(&mut self, change: Change<PriorityClass>) -> ClusterEvent {
        match change {
            Change::Synced => return ClusterEvent::Listed(Kind::PriorityClass),
            Change::Apply(object) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                self.priority_classes.insert(name, object);
            }
            Change::Delete(key) => {
                self.priority_classes.remove(&key.name);
            }
        }
        let classes: Vec<PriorityClass> = self.priority_classes.values().cloned().collect();
        self.priorities = PriorityResolver::new(&classes);
        ClusterEvent::Nothing(Kind::PriorityClass)
    }
}

/// A change of a kind the store keeps by key, converted by `apply` (None: the object cannot
/// be read).
fn keyed<K: Metadata<Ty = ObjectMeta>>(
    change: Change<K>,
    kind: Kind,
    apply: impl FnOnce(&K) -> Option<ClusterEvent>,
    delete: impl FnOnce(ObjectKey) -> ClusterEvent,
) -> ClusterEvent {
    match change {
        Change::Synced => ClusterEvent::Listed(kind),
        Change::Apply(object) => apply(&object)
            .unwrap_or_else(|| ClusterEvent::Unreadable(kind, object_key(object.metadata()))),
        Change::Delete(key) => delete(key),
    }
}

fn selector_object<K: Metadata<Ty = ObjectMeta>>(
    change: Change<K>,
    kind: model::SelectorKind,
    convert: fn(&K) -> Result<model::PodSelector, ConvertError>,
) -> ClusterEvent {
    keyed(
        change,
        crate::events::kind_of_selector(kind),
        |object| {
            Some(ClusterEvent::SelectorObjectApplied(converted(convert(
                object,
            ))?))
        },
        |key| ClusterEvent::SelectorObjectDeleted(kind, key),
    )
}

fn volume_object<K: Metadata<Ty = ObjectMeta>>(
    change: Change<K>,
    kind: Kind,
    convert: impl FnOnce(&K) -> Result<VolumeObject, ConvertError>,
) -> ClusterEvent {
    keyed(
        change,
        kind,
        |object| {
            Some(ClusterEvent::VolumeObjectApplied(converted(convert(
                object,
            ))?))
        },
        |key| ClusterEvent::VolumeObjectDeleted(kind, key),
    )
}

/// Whether a pod has scheduling gates (`spec.schedulingGates`) left.
fn gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// The converted object, or None after logging why it cannot be used.
fn converted<T>(result: Result<T, ConvertError>) -> Option<T> {
    result
        .inspect_err(|e| warn!(error = %e, "object left out of the cache"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Place, QueueConfig, QueuedPod};
    use crate::testing::{bound, node, phase, pod};
    use berth_engine::Scheduler;
    use berth_extender::Documents;
    use k8s_openapi::api::core::v1::Service;

    struct Fixture {
        handlers: Handlers,
        store: Store,
        queue: Queue,
        now: Instant,
        scheduler: Scheduler,
    }

    impl Fixture {
        fn new() -> Self {
            let policy = berth_policy::parse(
                r#"{"predicates":[{"name":"CheckVolumeBinding"}],"priorities":[]}"#,
                "test.json",
            )
            .expect("policy");
            Fixture {
                scheduler: berth_engine::scheduler_for(&policy, Default::default())
                    .expect("scheduler"),
                handlers: Handlers::serving(&["berth".to_string()]),
                store: Store::new(),
                queue: Queue::new(QueueConfig::default()),
                now: Instant::now(),
            }
        }

        /// Reserves and assumes `queued` on `node` as a scheduling attempt does; returns the
        /// node's name.
        fn assume(&mut self, queued: QueuedPod, node: &str) -> String {
            let info = self.store.compile(queued.pod.clone());
            let id = self.store.cluster().node_by_name(node).unwrap();
            let (placement, mut assumptions) = self.store.attempt_parts();
            let reservation = self.scheduler.reserve(placement.cluster, &info, id);
            placement.cluster.insert_pod(info, Some(id)).unwrap();
            assumptions.assume(placement.cluster, queued, id, reservation)
        }

        fn node(&mut self, change: Change<Node>) {
            self.handlers.apply(
                &mut self.store,
                WatchEvent::Node(change),
                &mut self.queue,
                self.now,
            );
        }

        fn pod(&mut self, change: Change<Pod>) {
            self.handlers.apply(
                &mut self.store,
                WatchEvent::Pod(change),
                &mut self.queue,
                self.now,
            );
        }

        /// Milli-CPU requested on a node and its pods' names.
        fn on(&self, node: &str) -> (i64, Vec<String>) {
            let c = self.store.cluster();
            let n = c.node(c.node_by_name(node).expect("node in cache"));
            let mut pods: Vec<String> = n
                .pods
                .iter()
                .map(|p| c.pod(*p).pod.meta.name.clone())
                .collect();
            pods.sort();
            (n.requested.milli_cpu, pods)
        }
    }

    fn delete(name: &str) -> ObjectKey {
        ObjectKey::namespaced("default", name)
    }

    #[test]
    fn assigned_pods_count_pending_pods_of_ours_queue_others_are_left_alone() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(bound(
            pod("running", "default-scheduler", 500),
            "n1",
        )));
        f.pod(Change::Apply(pod("mine", "berth", 100)));
        f.pod(Change::Apply(pod("theirs", "default-scheduler", 100)));
        assert_eq!(f.on("n1"), (500, vec!["running".into()]));
        assert_eq!(f.queue.place("default/mine"), Some(Place::Active));
        assert!(!f.queue.contains("default/theirs"));
        assert!(f.store.cluster().pod_by_key("default", "theirs").is_none());
    }

    #[test]
    fn extender_documents_hold_nodes_and_only_our_pending_pods() {
        let mut f = Fixture::new();
        let documents = Documents::new();
        f.store.set_documents(documents.clone());
        f.node(Change::Apply(node("n1", 4)));
        f.node(Change::Apply(node("n2", 4)));
        f.pod(Change::Apply(pod("mine", "berth", 100)));
        f.pod(Change::Apply(pod("theirs", "default-scheduler", 100)));
        assert_eq!(documents.counts(), (2, 1));
        let json = documents.pod("default/mine").expect("pending pod kept");
        assert!(json.get().contains("\"name\":\"mine\""), "{}", json.get());
        assert!(documents.nodes(&["n2"]).is_ok());
        // Bound: no longer sent to extenders; a deleted node goes too.
        f.pod(Change::Apply(bound(pod("mine", "berth", 100), "n1")));
        f.node(Change::Delete(ObjectKey::cluster("n2")));
        assert_eq!(documents.counts(), (1, 0));
    }

    #[test]
    fn gated_pods_wait_until_their_gates_are_removed() {
        let mut f = Fixture::new();
        let mut gated = pod("gated", "berth", 100);
        gated.spec.as_mut().unwrap().scheduling_gates = Some(vec![
            serde_json::from_value(serde_json::json!({"name": "example.com/quota"})).unwrap(),
        ]);
        f.pod(Change::Apply(gated));
        assert!(!f.queue.contains("default/gated"));
        f.pod(Change::Apply(pod("gated", "berth", 100)));
        assert_eq!(f.queue.place("default/gated"), Some(Place::Active));
    }

    #[test]
    fn pods_setting_unmodelled_fields_are_counted_until_they_go() {
        let mut f = Fixture::new();
        let mut gang = pod("gang-0", "berth", 100);
        gang.spec.as_mut().unwrap().scheduling_group =
            Some(serde_json::from_value(serde_json::json!({"podGroupName": "trainers"})).unwrap());
        let field = ("Pod", "spec.schedulingGroup");
        f.pod(Change::Apply(gang.clone()));
        f.pod(Change::Apply(pod("plain", "berth", 100)));
        assert_eq!(
            f.handlers.unmodelled_field_counts(),
            [(field.0, field.1, 1)]
        );
        // The field dropped from the pod, then the pod back and deleted: the gauge stays.
        f.pod(Change::Apply(pod("gang-0", "berth", 100)));
        assert_eq!(
            f.handlers.unmodelled_field_counts(),
            [(field.0, field.1, 0)]
        );
        f.pod(Change::Apply(gang));
        f.pod(Change::Delete(delete("gang-0")));
        assert_eq!(
            f.handlers.unmodelled_field_counts(),
            [(field.0, field.1, 0)]
        );
    }

    #[test]
    fn finished_and_deleted_pods_free_their_node() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        f.pod(Change::Apply(bound(pod("b", "berth", 300), "n1")));
        f.pod(Change::Apply(phase(
            bound(pod("a", "berth", 500), "n1"),
            "Succeeded",
        )));
        assert_eq!(f.on("n1"), (300, vec!["b".into()]));
        f.pod(Change::Delete(delete("b")));
        assert_eq!(f.on("n1"), (0, vec![]));
    }

    #[test]
    fn a_changed_pod_replaces_its_old_version_an_unchanged_one_is_a_no_op() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.node(Change::Apply(node("n2", 4)));
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        let before = f.store.cluster().pod_by_key("default", "a");
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        assert_eq!(f.store.cluster().pod_by_key("default", "a"), before);
        // Deleted and re-created under the same name on another node, delete unseen.
        f.pod(Change::Apply(bound(pod("a", "berth", 700), "n2")));
        assert_eq!(f.on("n1"), (0, vec![]));
        assert_eq!(f.on("n2"), (700, vec!["a".into()]));
    }

    /// Each event that retries the unschedulable pods is counted under upstream's label for
    /// it: the resource and whether it was added or changed.
    #[test]
    fn retrying_events_are_labelled_by_resource_and_action() {
        use crate::metrics::tests::value;
        let metrics = crate::metrics::Metrics::new("berth");
        let mut f = Fixture::new();
        f.queue = Queue::new(QueueConfig::default()).with_metrics(metrics.clone());
        f.node(Change::Apply(node("n1", 1)));
        f.pod(Change::Apply(bound(pod("a", "other", 500), "n1")));
        f.pod(Change::Apply(pod("big", "berth", 4000)));
        let service = |selector: &str| {
            serde_json::from_value::<Service>(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": selector}}
            }))
            .expect("service")
        };
        let mut changed = node("n1", 1);
        changed
            .metadata
            .labels
            .get_or_insert_default()
            .insert("disk".into(), "ssd".into());
        type Event = Box<dyn Fn(&mut Fixture)>;
        let events: [(&str, Event); 5] = [
            (
                "NodeAdd",
                Box::new(|f| f.node(Change::Apply(node("n2", 1)))),
            ),
            (
                "NodeUpdate",
                Box::new(move |f| f.node(Change::Apply(changed.clone()))),
            ),
            (
                "AssignedPodDelete",
                Box::new(|f| f.pod(Change::Delete(delete("a")))),
            ),
            (
                "ServiceAdd",
                Box::new(move |f| {
                    f.handlers.apply(
                        &mut f.store,
                        WatchEvent::Service(Change::Apply(service("web"))),
                        &mut f.queue,
                        f.now,
                    )
                }),
            ),
            (
                "ServiceUpdate",
                Box::new(move |f| {
                    f.handlers.apply(
                        &mut f.store,
                        WatchEvent::Service(Change::Apply(service("api"))),
                        &mut f.queue,
                        f.now,
                    )
                }),
            ),
        ];
        for (label, event) in events {
            let queued = f.queue.pop(f.now).expect("big is active");
            f.queue.unschedulable(queued, f.now);
            f.now += std::time::Duration::from_secs(10);
            event(&mut f);
            assert_eq!(f.queue.place("default/big"), Some(Place::Active), "{label}");
            let text = metrics.encode();
            assert_eq!(
                value(
                    &text,
                    &format!(
                        r#"scheduler_queue_incoming_pods_total{{queue="active",event="{label}"}}"#
                    )
                ),
                Some(1.0),
                "{label} in\n{text}"
            );
        }
    }

    #[test]
    fn pods_of_a_deleted_node_wait_for_it_to_come_back() {
        let mut f = Fixture::new();
        f.pod(Change::Apply(bound(pod("early", "berth", 200), "n1")));
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.on("n1"), (200, vec!["early".into()]));
        f.node(Change::Delete(ObjectKey::cluster("n1")));
        assert!(f.store.cluster().node_by_name("n1").is_none());
        assert!(f.store.cluster().pod_by_key("default", "early").is_none());
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.on("n1"), (200, vec!["early".into()]));
    }

    #[test]
    fn node_events_retry_unschedulable_pods_unchanged_nodes_do_not() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 1)));
        f.pod(Change::Apply(pod("big", "berth", 2000)));
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.now += std::time::Duration::from_secs(5);
        f.node(Change::Apply(node("n1", 1)));
        assert_eq!(f.queue.place("default/big"), Some(Place::Unschedulable));
        f.node(Change::Apply(node("n2", 4)));
        assert_eq!(f.queue.place("default/big"), Some(Place::Active));
    }

    /// A reloaded policy's extender needs node JSON the store did not keep: a pod refused
    /// for want of it is retried when the relist fills it in, though the node is unchanged.
    #[test]
    fn node_json_filled_in_by_a_relist_retries_unschedulable_pods() {
        let mut f = Fixture::new();
        let documents = Documents::pods_only();
        f.store.set_documents(documents.clone());
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("p", "berth", 100)));
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.now += std::time::Duration::from_secs(5);
        documents.widen_to(&Documents::new());
        f.node(Change::Apply(node("n1", 4)));
        assert!(documents.nodes(&["n1"]).is_ok());
        assert_eq!(f.queue.place("default/p"), Some(Place::Active));
        // Once held, an unchanged node retries nothing.
        let queued = f.queue.pop(f.now).unwrap();
        f.queue.unschedulable(queued, f.now);
        f.node(Change::Apply(node("n1", 4)));
        assert_eq!(f.queue.place("default/p"), Some(Place::Unschedulable));
    }

    #[test]
    fn an_assumption_holds_until_the_watch_confirms_or_the_binding_fails() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("a", "berth", 500)));
        let queued = f.queue.pop(f.now).unwrap();
        assert_eq!(f.assume(queued, "n1"), "n1");
        assert_eq!(f.on("n1"), (500, vec!["a".into()]));
        // The watch still shows it pending (an update from before the binding): ignored.
        f.pod(Change::Apply(pod("a", "berth", 500)));
        assert!(!f.queue.contains("default/a"));
        assert_eq!(f.on("n1").0, 500);
        // A failed binding for another UID changes nothing; for this one it undoes it.
        assert!(f.store.forget("default/a", "uid-other").is_none());
        let (back, _) = f.store.forget("default/a", "uid-a").expect("assumed");
        assert_eq!(back.pod.meta.name, "a");
        assert_eq!(f.on("n1"), (0, vec![]));
    }

    #[test]
    fn the_watch_showing_the_pod_bound_confirms_the_assumption() {
        let mut f = Fixture::new();
        f.node(Change::Apply(node("n1", 4)));
        f.pod(Change::Apply(pod("a", "berth", 500)));
        let queued = f.queue.pop(f.now).unwrap();
        f.assume(queued, "n1");
        f.pod(Change::Apply(bound(pod("a", "berth", 500), "n1")));
        assert_eq!(f.store.assumed_count(), 0);
        assert_eq!(f.on("n1"), (500, vec!["a".into()]));
        // A late failure report (it was bound after all) must not undo the confirmed pod.
        assert!(f.store.forget("default/a", "uid-a").is_none());
        assert_eq!(f.on("n1").0, 500);
    }

    #[test]
    fn namespaces_and_selector_objects_are_replaced_and_removed() {
        use k8s_openapi::api::core::v1::Service;
        let mut f = Fixture::new();
        let service = |selector: serde_json::Value| -> Service {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": selector}
            }))
            .unwrap()
        };
        let apply = |f: &mut Fixture, s: Service| {
            f.handlers.apply(
                &mut f.store,
                WatchEvent::Service(Change::Apply(s)),
                &mut f.queue,
                f.now,
            )
        };
        apply(&mut f, service(serde_json::json!({"app": "web"})));
        apply(&mut f, service(serde_json::json!({"app": "web2"})));
        assert_eq!(f.store.cluster().selector_objects().len(), 1);
        f.handlers.apply(
            &mut f.store,
            WatchEvent::Service(Change::Delete(delete("web"))),
            &mut f.queue,
            f.now,
        );
        assert!(f.store.cluster().selector_objects().is_empty());
    }
}
