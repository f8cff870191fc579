//! `simulate --apply`: manifests not yet in the cluster, expanded by `berth_kube::manifests`
//! into the pods their controllers would create, scheduled with the cluster's pending pods,
//! and summed up per manifest: does it all fit, where, and if not why.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::{Context, Result};
use berth_engine::Cluster;
use berth_engine::model;
use berth_engine::resources::{CPU, MEMORY};
use berth_engine::simulation::Outcome;
use berth_kube::ClusterObjects;
use berth_kube::manifests::{self, Applied};
use serde_json::{Value, json};

use super::table::wrap;

/// Where each applied pod ended up.
#[derive(Default)]
struct Placement {
    node: Option<String>,
    message: Option<String>,
}

/// The applied manifests and, once scheduled, their pods' outcomes.
pub(super) struct WhatIf {
    workloads: Vec<Applied>,
    placements: HashMap<String, Placement>,
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
        for claim in expansion.claims {
            cluster.upsert_persistent_volume_claim(claim);
        }
        let placements = expansion
            .pods
            .iter()
            .map(|p| (p.key(), Placement::default()))
            .collect();
        Ok((
            WhatIf {
                workloads: expansion.workloads,
                placements,
            },
            expansion.pods,
        ))
    }

    /// Notes an outcome if it is one of the applied pods.
    pub(super) fn record(&mut self, o: &Outcome) {
        if let Some(p) = self.placements.get_mut(&o.pod) {
            p.node.clone_from(&o.node);
            p.message = o.message();
        }
    }

    /// One summary per manifest.
    fn summaries(&self) -> Vec<Summary<'_>> {
        self.workloads
            .iter()
            .map(|w| Summary::of(w, &self.placements))
            .collect()
    }

    /// The table's section: per manifest, the verdict, the nodes, the requests, admission.
    pub(super) fn table(&self) -> String {
        let mut out = String::from("\nApplied (--apply):\n");
        for s in self.summaries() {
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
    pub(super) fn json(&self) -> Value {
        let manifests: Vec<Value> = self
            .summaries()
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
                json!({
                    "kind": w.kind, "namespace": w.namespace, "name": w.name,
                    "source": w.source, "wanted": w.wanted, "created": w.pods.len(),
                    "scheduled": s.scheduled, "unschedulable": s.unschedulable,
                    "notScheduled": s.not_scheduled, "fits": s.fits(),
                    "summary": s.verdict, "note": w.note, "pods": pods,
                    "unschedulableReasons": failures,
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
    /// The one-line answer.
    verdict: String,
}

impl<'a> Summary<'a> {
    fn of(workload: &'a Applied, placements: &'a HashMap<String, Placement>) -> Self {
        let mut s = Summary {
            workload,
            scheduled: 0,
            unschedulable: 0,
            not_scheduled: 0,
            nodes: BTreeMap::new(),
            failures: Vec::new(),
            ordered_stop: None,
            verdict: String::new(),
        };
        let mut messages: BTreeMap<&str, usize> = BTreeMap::new();
        for key in &workload.pods {
            let p = &placements[key];
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
        s.verdict = s.verdict();
        s
    }

    fn fits(&self) -> bool {
        self.unschedulable == 0 && self.not_scheduled == 0
    }

    fn verdict(&self) -> String {
        let w = self.workload;
        let created = w.pods.len();
        let unit = match w.kind {
            "Deployment" | "ReplicaSet" | "StatefulSet" => "replicas",
            _ => "pods",
        };
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
fn quantity(name: &str, value: i64) -> String {
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
