//! `simulate --apply`: manifests not yet in the cluster, expanded by `berth_kube::manifests`
//! into the pods their controllers would create, scheduled with the cluster's pending pods,
//! and summed up per manifest: does it all fit, where, and if not why.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::{Context, Result};
use berth_engine::model;
use berth_engine::resources::{CPU, MEMORY};
use berth_engine::simulation::Outcome;
use berth_engine::{Cluster, Scheduler};
use berth_kube::ClusterObjects;
use berth_kube::manifests::{self, Applied};
use serde_json::{Value, json};

use super::table::wrap;

/// Where each applied pod ended up.
#[derive(Default)]
struct Placement {
    node: Option<String>,
    message: Option<String>,
    /// The node it preempted on, and the pods it evicted there.
    preempted: Option<(String, Vec<String>)>,
}

/// What a summary says of a pod that may be evicted: its controller and priority.
struct PodFacts {
    owner: Option<String>,
    priority: i32,
}

/// The applied manifests and, once scheduled, their pods' outcomes.
pub(super) struct WhatIf {
    workloads: Vec<Applied>,
    placements: HashMap<String, Placement>,
    /// Every pod that could be a victim (the cluster file's and the manifests'), by key.
    pods: HashMap<String, PodFacts>,
    /// Created claims naming a StorageClass the cluster file does not have: claim, class.
    missing_classes: HashMap<String, String>,
    /// The applied pods as created and admitted, by key (to try them on added nodes).
    created: HashMap<String, model::Pod>,
    /// Per manifest (by index) with unschedulable pods: the nodes whose addition fits them.
    suggestions: HashMap<usize, String>,
    /// ReplicaSets of the cluster file owned by a Deployment: `ns/rs` -> `Deployment ns/name`.
    deployments: HashMap<String, String>,
}

impl WhatIf {
    /// Reads the manifest files, expands them against the cluster file's objects, adds the
    /// ReplicaSets, StatefulSets and claims they create to `cluster`, and returns the pods.
    pub(super) fn load(
        files: &[PathBuf],
        objects: &ClusterObjects,
        cluster: &mut Cluster,
    ) -> Result<(Self, Vec<model::Pod>)> {
        let mut all = Vec::new();
        for file in files {
            let name = file.display().to_string();
            let text =
                berth_policy::file::read_regular_text(file, berth_kube::MAX_CLUSTER_FILE_BYTES)
                    .with_context(|| format!("--apply: cannot read manifest file {name}"))?;
            all.extend(manifests::parse_manifests(&text, &name).context("--apply")?);
        }
        let expansion = manifests::expand(&all, objects).context("--apply")?;
        for object in &expansion.selector_objects {
            cluster.upsert_selector_object(object);
        }
        let classes: Vec<&str> = objects
            .storage_classes
            .iter()
            .filter_map(|c| c.metadata.name.as_deref())
            .collect();
        let mut missing_classes = HashMap::new();
        for claim in expansion.claims {
            if let Some(class) = claim.storage_class_name.as_deref()
                && !class.is_empty()
                && !classes.contains(&class)
            {
                let key = format!("{}/{}", claim.meta.namespace, claim.meta.name);
                missing_classes.insert(key, class.to_owned());
            }
            cluster.upsert_persistent_volume_claim(claim);
        }
        let placements = expansion
            .pods
            .iter()
            .map(|p| (p.key(), Placement::default()))
            .collect();
        let created = expansion
            .pods
            .iter()
            .map(|p| (p.key(), p.clone()))
            .collect();
        let deployments = objects
            .replica_sets
            .iter()
            .filter_map(|rs| {
                let namespace = rs.metadata.namespace.as_deref().unwrap_or("default");
                let owner = rs
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true) && o.kind == "Deployment")?;
                let name = rs.metadata.name.as_deref()?;
                Some((
                    format!("{namespace}/{name}"),
                    format!("Deployment {namespace}/{}", owner.name),
                ))
            })
            .collect();
        Ok((
            WhatIf {
                workloads: expansion.workloads,
                placements,
                pods: HashMap::new(),
                missing_classes,
                created,
                suggestions: HashMap::new(),
                deployments,
            },
            expansion.pods,
        ))
    }

    /// Learns the controller and priority of pods that may be evicted, before scheduling
    /// (a victim is gone from the cluster once the summary is written).
    pub(super) fn know<'p>(&mut self, pods: impl Iterator<Item = &'p model::Pod>) {
        for pod in pods {
            let owner = pod.meta.owners.iter().find(|o| o.controller).map(|o| {
                let controller = format!("{}/{}", pod.meta.namespace, o.name);
                match self.deployments.get(&controller) {
                    Some(deployment) if o.kind == "ReplicaSet" => deployment.clone(),
                    _ => format!("{} {controller}", o.kind),
                }
            });
            let facts = PodFacts {
                owner,
                priority: pod.priority,
            };
            self.pods.insert(pod.key(), facts);
        }
    }

    /// Notes an outcome if it is one of the applied pods.
    pub(super) fn record(&mut self, o: &Outcome) {
        if let Some(p) = self.placements.get_mut(&o.pod) {
            p.node.clone_from(&o.node);
            p.message = o.message();
            p.preempted = o
                .nominated_node
                .as_ref()
                .map(|node| (node.clone(), o.victims.clone()));
        }
    }

    /// One summary per manifest.
    fn summaries<'a>(&'a self, cluster: &Cluster) -> Vec<Summary<'a>> {
        self.workloads
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let mut s = Summary::of(w, &self.placements, cluster);
                s.hints = self.hints(w);
                s.suggestion = self.suggestions.get(&i).cloned();
                s
            })
            .collect()
    }

    /// For each manifest with unschedulable pods (but a DaemonSet, whose pods are pinned to
    /// their nodes): the fewest copies of one existing node that would fit them all, found by
    /// adding empty copies of each kind of node (same labels but the hostname, taints and
    /// allocatable) and scheduling the pods again with every rule of the policy; then every
    /// copy and pod placed on it is removed, leaving `cluster` as the run left it. Not done
    /// with extenders, whose answers about nodes that do not exist would mean nothing.
    pub(super) fn suggest(
        &mut self,
        cluster: &mut Cluster,
        scheduler: &mut Scheduler,
    ) -> Result<()> {
        if !scheduler.extenders().is_empty() {
            return Ok(());
        }
        let templates = node_shapes(cluster);
        for (i, w) in self.workloads.iter().enumerate() {
            if w.kind == "DaemonSet" {
                continue;
            }
            let failed: Vec<&model::Pod> = w
                .pods
                .iter()
                .filter(|k| {
                    let p = &self.placements[*k];
                    p.node.is_none() && p.message.is_some()
                })
                .filter_map(|k| self.created.get(k))
                .filter(|p| p.scheduling_gates.is_empty())
                .collect();
            if failed.is_empty() || failed.len() > MAX_PODS_TRIED {
                continue;
            }
            let mut best: Option<(usize, &str)> = None;
            for template in &templates {
                if let Some(n) = copies_needed(cluster, scheduler, template, &failed)?
                    && best.is_none_or(|(m, _)| n < m)
                {
                    best = Some((n, template.meta.name.as_str()));
                }
            }
            if let Some((n, like)) = best {
                let nodes = if n == 1 { "one node" } else { "nodes" };
                let count = if n == 1 {
                    String::new()
                } else {
                    format!("{n} ")
                };
                let all = if failed.len() == 1 { "it" } else { "them all" };
                self.suggestions.insert(
                    i,
                    format!("adding {count}{nodes} like {like} would fit {all}"),
                );
            }
        }
        Ok(())
    }

    /// What the user may have got wrong that the FitError does not say: a claim naming a
    /// StorageClass the cluster does not have (upstream then reads the claim as bound at
    /// once, and says only `pod has unbound immediate PersistentVolumeClaims`).
    fn hints(&self, w: &Applied) -> Vec<String> {
        w.claims
            .iter()
            .filter_map(|claim| {
                let class = self.missing_classes.get(claim)?;
                Some(format!(
                    "claim {claim} names StorageClass {class}, which the cluster file does \
                     not have: add the StorageClass (or fix storageClassName); without it the \
                     claim is never bound, so its pod is unschedulable"
                ))
            })
            .collect()
    }

    /// A victim as the summary names it: `ns/name (priority P, ReplicaSet ns/rs)`.
    fn victim(&self, key: &str) -> String {
        match self.pods.get(key) {
            Some(f) => match &f.owner {
                Some(owner) => format!("{key} (priority {}, {owner})", f.priority),
                None => format!("{key} (priority {})", f.priority),
            },
            None => key.to_owned(),
        }
    }

    /// The table's section: per manifest, the verdict, the nodes, the requests, admission.
    pub(super) fn table(&self, cluster: &Cluster) -> String {
        let mut out = String::from("\nApplied (--apply):\n");
        for s in self.summaries(cluster) {
            let w = s.workload;
            out.push_str(&wrap(
                &format!(
                    "{} {}/{}: {}",
                    w.kind.to_lowercase(),
                    w.namespace,
                    w.name,
                    s.verdict
                ),
                "",
                "    ",
            ));
            // A single reason is already on the verdict's line.
            if s.failures.len() > 1 {
                for (pods, message) in &s.failures {
                    out.push_str(&wrap(&format!("{pods} x {message}"), "  ", "    "));
                }
            }
            if !s.nodes.is_empty() {
                let nodes: Vec<String> = s
                    .nodes
                    .iter()
                    .map(|(node, n)| format!("{node} x{n}"))
                    .collect();
                out.push_str(&wrap(
                    &format!("placed: {}", nodes.join(", ")),
                    "  ",
                    "    ",
                ));
            }
            for (pod, node, victims) in &s.preemptions {
                let victims: Vec<String> = victims.iter().map(|v| self.victim(v)).collect();
                out.push_str(&wrap(
                    &format!("{pod} preempts on {node}: {}", victims.join(", ")),
                    "  ",
                    "    ",
                ));
            }
            if let Some(short) = &s.shortfall {
                out.push_str(&wrap(&format!("short: {short}"), "  ", "    "));
            }
            if let Some(fix) = &s.suggestion {
                out.push_str(&wrap(&format!("fits with: {fix}"), "  ", "    "));
            }
            for hint in &s.hints {
                out.push_str(&wrap(&format!("hint: {hint}"), "  ", "    "));
            }
            if let Some(note) = &w.note {
                out.push_str(&wrap(note, "  ", "    "));
            }
            if !w.pods.is_empty() {
                out.push_str(&wrap(&requests_line(&w.requests), "  ", "    "));
            }
            for note in &w.admission {
                out.push_str(&wrap(&format!("admission: {note}"), "  ", "    "));
            }
            if !w.claims.is_empty() {
                out.push_str(&wrap(
                    &format!("claims created: {}", w.claims.join(", ")),
                    "  ",
                    "    ",
                ));
            }
        }
        out
    }

    /// The JSON line of `--output json`: `{"apply": [...]}`, one object per manifest.
    pub(super) fn json(&self, cluster: &Cluster) -> Value {
        let manifests: Vec<Value> = self
            .summaries(cluster)
            .iter()
            .map(|s| {
                let w = s.workload;
                let pods: Vec<Value> = w
                    .pods
                    .iter()
                    .map(|key| {
                        let p = &self.placements[key];
                        json!({"pod": key, "node": p.node})
                    })
                    .collect();
                let failures: Vec<Value> = s
                    .failures
                    .iter()
                    .map(|(pods, message)| json!({"pods": pods, "message": message}))
                    .collect();
                let preemptions: Vec<Value> = s
                    .preemptions
                    .iter()
                    .map(|(pod, node, victims)| {
                        let victims: Vec<Value> = victims
                            .iter()
                            .map(|v| {
                                let facts = self.pods.get(v);
                                json!({"pod": v, "priority": facts.map(|f| f.priority),
                                       "owner": facts.and_then(|f| f.owner.as_deref())})
                            })
                            .collect();
                        json!({"pod": pod, "node": node, "victims": victims})
                    })
                    .collect();
                json!({
                    "kind": w.kind, "namespace": w.namespace, "name": w.name,
                    "source": w.source, "wanted": w.wanted, "created": w.pods.len(),
                    "scheduled": s.scheduled, "unschedulable": s.unschedulable,
                    "notScheduled": s.not_scheduled, "fits": s.fits(),
                    "summary": s.verdict, "note": w.note, "pods": pods,
                    "unschedulableReasons": failures, "preemptions": preemptions,
                    "shortfall": s.shortfall, "suggestion": s.suggestion, "hints": s.hints,
                    "requests": {
                        "containers": quantities(&w.requests.containers),
                        "sidecars": quantities(&w.requests.sidecars),
                        "initContainers": quantities(&w.requests.init_containers),
                        "podLevel": quantities(&w.requests.pod_level),
                        "overhead": quantities(&w.requests.overhead),
                        "effective": quantities(&w.requests.effective),
                    },
                    "admission": w.admission, "claims": w.claims,
                })
            })
            .collect();
        json!({ "apply": manifests })
    }
}

/// One manifest's outcome counted.
struct Summary<'a> {
    workload: &'a Applied,
    scheduled: usize,
    unschedulable: usize,
    /// Created but never scheduled here (another schedulerName, or being deleted).
    not_scheduled: usize,
    /// Placed pods per node.
    nodes: BTreeMap<&'a str, usize>,
    /// Distinct failure messages with how many pods gave each, most common first.
    failures: Vec<(usize, &'a str)>,
    /// For an OrderedReady StatefulSet, its first unschedulable pod when later ones exist:
    /// the controller would not create those yet.
    ordered_stop: Option<String>,
    /// Pods that fit by preempting: the pod, the node, the victims.
    preemptions: Vec<(&'a str, &'a str, &'a [String])>,
    /// For pods short of a resource on every node: how much, against the most free node.
    shortfall: Option<String>,
    /// What the manifest may have got wrong (a missing StorageClass).
    hints: Vec<String>,
    /// The nodes whose addition would fit its unschedulable pods.
    suggestion: Option<String>,
    /// The one-line answer.
    verdict: String,
}

impl<'a> Summary<'a> {
    fn of(
        workload: &'a Applied,
        placements: &'a HashMap<String, Placement>,
        cluster: &Cluster,
    ) -> Self {
        let mut s = Summary {
            workload,
            scheduled: 0,
            unschedulable: 0,
            not_scheduled: 0,
            nodes: BTreeMap::new(),
            failures: Vec::new(),
            ordered_stop: None,
            preemptions: Vec::new(),
            shortfall: None,
            hints: Vec::new(),
            suggestion: None,
            verdict: String::new(),
        };
        let mut messages: BTreeMap<&str, usize> = BTreeMap::new();
        for key in &workload.pods {
            let p = &placements[key];
            if let (Some((node, victims)), Some(_)) = (&p.preempted, &p.node) {
                s.preemptions
                    .push((key.as_str(), node.as_str(), victims.as_slice()));
            }
            match (&p.node, &p.message) {
                (Some(node), _) => {
                    s.scheduled += 1;
                    *s.nodes.entry(node.as_str()).or_default() += 1;
                }
                (None, Some(message)) => {
                    s.unschedulable += 1;
                    *messages.entry(message.as_str()).or_default() += 1;
                }
                (None, None) => s.not_scheduled += 1,
            }
        }
        let ordered = workload.kind == "StatefulSet"
            && workload
                .note
                .as_deref()
                .is_some_and(|n| n.starts_with("OrderedReady"));
        if ordered {
            let first = workload
                .pods
                .iter()
                .position(|key| placements[key].node.is_none());
            if let Some(index) = first.filter(|&i| i + 1 < workload.pods.len()) {
                s.ordered_stop = Some(workload.pods[index].clone());
            }
        }
        s.failures = messages.into_iter().map(|(m, n)| (n, m)).collect();
        s.failures.sort_by_key(|f| std::cmp::Reverse(f.0));
        s.shortfall = shortfall(workload, &s.failures, cluster);
        s.verdict = s.verdict();
        s
    }

    fn fits(&self) -> bool {
        self.unschedulable == 0 && self.not_scheduled == 0
    }

    fn verdict(&self) -> String {
        let w = self.workload;
        let created = w.pods.len();
        let unit = unit(w.kind);
        if created == 0 {
            return "no pods to create".to_owned();
        }
        let mut verdict = if self.unschedulable == 0 {
            if w.kind == "Pod" {
                "fits".to_owned()
            } else {
                format!("all {created} {unit} fit")
            }
        } else {
            let mut v = if w.kind == "Pod" {
                "unschedulable".to_owned()
            } else {
                format!("{} of {created} {unit} unschedulable", self.unschedulable)
            };
            // One reason for every failure reads best on the same line.
            if let [(_, message)] = self.failures[..] {
                v.push_str(&format!(": {message}"));
            }
            v
        };
        if !self.preemptions.is_empty() {
            let victims: usize = self.preemptions.iter().map(|p| p.2.len()).sum();
            verdict.truncate(verdict.trim_end_matches('.').len());
            let plural = if victims == 1 { "" } else { "s" };
            if w.kind == "Pod" {
                verdict.push_str(&format!(" by preempting {victims} pod{plural}"));
            } else {
                verdict.push_str(&format!(
                    "; {} of them by preempting {victims} pod{plural}",
                    self.preemptions.len()
                ));
            }
        }
        if let Some(first) = &self.ordered_stop {
            // The FitError's closing full stop would sit before the semicolon.
            verdict.truncate(verdict.trim_end_matches('.').len());
            verdict.push_str(&format!(
                "; OrderedReady would create none after {first} until it runs (they are \
                 scheduled here regardless)"
            ));
        }
        if self.not_scheduled > 0 {
            verdict.truncate(verdict.trim_end_matches('.').len());
            verdict.push_str(&format!(
                "; {} not for this scheduler (spec.schedulerName) or being deleted",
                self.not_scheduled
            ));
        }
        verdict
    }
}

/// For the pods refused for want of a resource (`Insufficient cpu`), how much more each
/// needs than the node with the most of it free has, after the run:
/// `2 replicas need 1500m cpu more than any node has free (most free: app-a1, 500m of 4)`.
fn shortfall(workload: &Applied, failures: &[(usize, &str)], cluster: &Cluster) -> Option<String> {
    let mut parts = Vec::new();
    for (name, request) in &workload.requests.effective {
        let reason = format!("Insufficient {name}");
        let pods: usize = failures
            .iter()
            .filter(|(_, m)| m.contains(&reason))
            .map(|(n, _)| n)
            .sum();
        if pods == 0 {
            continue;
        }
        let most_free = cluster
            .node_order()
            .iter()
            .map(|&id| {
                let node = cluster.node(id);
                let allocatable = node.allocatable.get(name);
                (
                    allocatable - node.requested.get(name),
                    allocatable,
                    node.name(),
                )
            })
            .max_by_key(|(free, _, _)| *free);
        let Some((free, allocatable, node)) = most_free else {
            continue;
        };
        let short = request - free.max(0);
        if short <= 0 {
            continue;
        }
        let who = match (workload.kind, pods) {
            ("Pod", _) => "the pod needs".to_owned(),
            (kind, 1) => format!("1 of the {} needs", unit(kind)),
            (kind, n) => format!("{n} {} need", unit(kind)),
        };
        parts.push(format!(
            "{who} {} {name} more than any node has free (most free: {node}, {} of {})",
            quantity(name, short),
            quantity(name, free.max(0)),
            quantity(name, allocatable)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Copies of one node tried per kind of node, and unschedulable pods of one manifest tried on
/// them, at most (what-if runs are small; past these the answer is left out).
const MAX_COPIES: usize = 20;
const MAX_PODS_TRIED: usize = 200;
/// Kinds of node tried, at most, in the cluster's order.
const MAX_SHAPES: usize = 16;
const HOSTNAME: &str = "kubernetes.io/hostname";

/// One schedulable node of each kind (labels but the hostname, taints, allocatable).
fn node_shapes(cluster: &Cluster) -> Vec<model::Node> {
    let mut seen = std::collections::HashSet::new();
    let mut shapes = Vec::new();
    for &id in cluster.node_order() {
        let node = &cluster.node(id).node;
        if node.unschedulable {
            continue;
        }
        let mut labels = node.meta.labels.clone();
        labels.remove(HOSTNAME);
        let key = format!("{labels:?}|{:?}|{:?}", node.taints, node.allocatable);
        if seen.insert(key) {
            shapes.push((**node).clone());
            if shapes.len() == MAX_SHAPES {
                break;
            }
        }
    }
    shapes
}

/// How many empty copies of `template` fit `pods` (scheduled in order with the policy's
/// rules, a copy added each time no node takes the next pod), or None when a fresh copy does
/// not take a pod or more than [`MAX_COPIES`] are needed. The copies and the pods placed are
/// removed again.
fn copies_needed(
    cluster: &mut Cluster,
    scheduler: &mut Scheduler,
    template: &model::Node,
    pods: &[&model::Pod],
) -> Result<Option<usize>> {
    let mut copies: Vec<String> = Vec::new();
    let mut placed: Vec<(String, String)> = Vec::new();
    let mut fits = true;
    'pods: for pod in pods {
        let mut fresh = false;
        loop {
            let info = cluster.compile_pod((*pod).clone());
            if let Some(node) = scheduler.schedule(cluster, &info).node() {
                placed.push((pod.meta.namespace.clone(), pod.meta.name.clone()));
                cluster.insert_pod(info, Some(node))?;
                continue 'pods;
            }
            if fresh || copies.len() == MAX_COPIES {
                fits = false;
                break 'pods;
            }
            let mut copy = template.clone();
            let name = format!("{}-like-{}", template.meta.name, copies.len() + 1);
            copy.meta.name.clone_from(&name);
            copy.meta.uid = format!("berth-what-if-{name}");
            copy.meta.labels.insert(HOSTNAME.to_owned(), name.clone());
            cluster.upsert_node(copy)?;
            copies.push(name);
            fresh = true;
        }
    }
    let answer = (fits && !copies.is_empty()).then_some(copies.len());
    for (namespace, name) in placed {
        cluster.remove_pod(&namespace, &name);
    }
    for name in copies {
        cluster.remove_node(&name);
    }
    Ok(answer)
}

/// What a manifest's pods are called in a verdict.
fn unit(kind: &str) -> &'static str {
    match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" => "replicas",
        _ => "pods",
    }
}

/// `requests per pod: cpu 250m, memory 64Mi; init containers: cpu 1; reserved: cpu 1, ...`
fn requests_line(r: &manifests::PodRequests) -> String {
    let text = |list: &[(String, i64)]| {
        if list.is_empty() {
            return "none".to_owned();
        }
        list.iter()
            .map(|(name, v)| format!("{name} {}", quantity(name, *v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut line = format!("requests per pod: containers {}", text(&r.containers));
    if !r.sidecars.is_empty() {
        line.push_str(&format!("; sidecars {}", text(&r.sidecars)));
    }
    if !r.init_containers.is_empty() {
        line.push_str(&format!("; init containers {}", text(&r.init_containers)));
    }
    if !r.pod_level.is_empty() {
        line.push_str(&format!("; pod-level {}", text(&r.pod_level)));
    }
    if !r.overhead.is_empty() {
        line.push_str(&format!("; overhead {}", text(&r.overhead)));
    }
    if r.effective != r.containers {
        line.push_str(&format!("; reserved {}", text(&r.effective)));
    }
    line
}

fn quantities(list: &[(String, i64)]) -> Value {
    let map: serde_json::Map<String, Value> = list
        .iter()
        .map(|(name, v)| (name.clone(), json!(quantity(name, *v))))
        .collect();
    Value::Object(map)
}

/// A quantity as Kubernetes writes it: cpu in cores or millicores, bytes in the largest
/// binary unit that divides them.
pub(super) fn quantity(name: &str, value: i64) -> String {
    if name == CPU {
        return if value % 1000 == 0 {
            (value / 1000).to_string()
        } else {
            format!("{value}m")
        };
    }
    if name == MEMORY || name.contains("storage") {
        for (unit, size) in [
            ("Ti", 1i64 << 40),
            ("Gi", 1 << 30),
            ("Mi", 1 << 20),
            ("Ki", 1 << 10),
        ] {
            if value != 0 && value % size == 0 {
                return format!("{}{unit}", value / size);
            }
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::quantity;

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        for (name, value, want) in [
            ("cpu", 250, "250m"),
            ("cpu", 2000, "2"),
            ("memory", 64 << 20, "64Mi"),
            ("memory", 3 << 30, "3Gi"),
            ("memory", 1000, "1000"),
            ("ephemeral-storage", 1 << 30, "1Gi"),
            ("nvidia.com/gpu", 2, "2"),
        ] {
            assert_eq!(quantity(name, value), want, "{name} {value}");
        }
    }
}
