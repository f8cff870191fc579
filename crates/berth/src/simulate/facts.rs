//! What the report shows of a pod and of a node beside the decisions: the facts a reader
//! needs to understand a verdict (requests as admitted, priority, labels, tolerations,
//! affinity and spread; allocatable, labels, taints and conditions), as short strings.

use berth_engine::NodeInfo;
use berth_engine::labels::{LabelSelector, Operator, Requirement};
use berth_engine::model::{
    self, NodeSelectorTerm, PodAffinityTerm, Taint, Toleration, TolerationOperator,
    WhenUnsatisfiable,
};
use berth_engine::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, Resources};
use serde_json::{Value, json};

use super::whatif::quantity;

/// A pod's facts: `requests` (what it reserves on a node, as admitted: containers, init
/// containers, sidecars, pod-level requests and overhead combined), `priority`,
/// `priorityClass`, `labels`, `nodeSelector`, `tolerations`, `affinity` and `spread`.
pub(super) fn pod(pod: &model::Pod) -> Value {
    let requests = berth_engine::effective_requests(pod);
    json!({
        "requests": resources(&requests),
        "priority": pod.priority,
        "priorityClass": pod.priority_class_name,
        "preemptionPolicy": if pod.preempt_never { "Never" } else { "PreemptLowerPriority" },
        "labels": pairs(pod.meta.labels.iter()),
        "nodeSelector": pairs(pod.node_selector.iter()),
        "tolerations": pod.tolerations.iter().map(toleration).collect::<Vec<_>>(),
        "affinity": affinity(&pod.affinity),
        "spread": pod.topology_spread_constraints.iter().map(|c| {
            let mode = match c.when_unsatisfiable {
                WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
                WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
            };
            let mut s = format!("maxSkew {} over {}, {mode}", c.max_skew, c.topology_key);
            if let Some(selector) = &c.label_selector {
                s.push_str(&format!(", pods {}", selector_text(selector)));
            }
            if let Some(min) = c.min_domains {
                s.push_str(&format!(", minDomains {min}"));
            }
            s
        }).collect::<Vec<_>>(),
    })
}

/// A node's facts: `allocatable`, `labels`, `taints`, `conditions` (the ones that are not
/// as a healthy node has them, and `spec.unschedulable`).
pub(super) fn node(info: &NodeInfo) -> Value {
    let mut allocatable = resources(&info.allocatable);
    allocatable["pods"] = json!(info.allowed_pods.to_string());
    let c = info.conditions();
    let mut conditions = Vec::new();
    match c.ready {
        Some(true) => conditions.push("Ready"),
        Some(false) => conditions.push("not Ready"),
        None => conditions.push("Ready unknown"),
    }
    for (set, name) in [
        (c.memory_pressure, "MemoryPressure"),
        (c.disk_pressure, "DiskPressure"),
        (c.pid_pressure, "PIDPressure"),
        (c.network_unavailable, "NetworkUnavailable"),
        (c.out_of_disk, "OutOfDisk"),
        (info.node.unschedulable, "unschedulable (cordoned)"),
    ] {
        if set {
            conditions.push(name);
        }
    }
    json!({
        "allocatable": allocatable,
        "labels": pairs(info.node.meta.labels.iter()),
        "taints": info.taints().iter().map(taint).collect::<Vec<_>>(),
        "conditions": conditions,
    })
}

fn resources(r: &Resources) -> Value {
    let mut map = serde_json::Map::new();
    for (name, v) in [
        (CPU, r.milli_cpu),
        (MEMORY, r.memory),
        (EPHEMERAL_STORAGE, r.ephemeral_storage),
    ] {
        if v != 0 {
            map.insert(name.to_owned(), json!(quantity(name, v)));
        }
    }
    for (name, v) in &r.scalars {
        if *v != 0 {
            map.insert(name.to_string(), json!(quantity(name, *v)));
        }
    }
    Value::Object(map)
}

fn pairs<'a>(map: impl Iterator<Item = (&'a String, &'a String)>) -> Vec<String> {
    map.map(|(k, v)| format!("{k}={v}")).collect()
}

/// As `kubectl taint` writes it: `key=value:Effect`.
fn taint(t: &Taint) -> String {
    if t.value.is_empty() {
        format!("{}:{}", t.key, t.effect.as_str())
    } else {
        format!("{}={}:{}", t.key, t.value, t.effect.as_str())
    }
}

fn toleration(t: &Toleration) -> String {
    let what = match (t.operator, t.key.is_empty()) {
        (TolerationOperator::Exists, true) => "every taint".to_owned(),
        (TolerationOperator::Exists, false) => format!("{} (any value)", t.key),
        (TolerationOperator::Equal, _) => format!("{}={}", t.key, t.value),
    };
    match t.effect {
        Some(effect) => format!("{what}:{}", effect.as_str()),
        None => what,
    }
}

fn requirement(r: &Requirement) -> String {
    let values = r.values.join(", ");
    match r.operator {
        Operator::In if r.values.len() == 1 => format!("{}={values}", r.key),
        Operator::In => format!("{} in ({values})", r.key),
        Operator::NotIn => format!("{} notin ({values})", r.key),
        Operator::Exists => r.key.clone(),
        Operator::DoesNotExist => format!("!{}", r.key),
        Operator::Gt => format!("{} > {values}", r.key),
        Operator::Lt => format!("{} < {values}", r.key),
    }
}

fn selector_text(s: &LabelSelector) -> String {
    if s.requirements.is_empty() {
        return "(all)".to_owned();
    }
    s.requirements
        .iter()
        .map(requirement)
        .collect::<Vec<_>>()
        .join(", ")
}

fn node_term(t: &NodeSelectorTerm) -> String {
    let mut parts: Vec<String> = t.match_expressions.iter().map(requirement).collect();
    parts.extend(
        t.match_fields
            .iter()
            .map(|r| format!("field {}", requirement(r))),
    );
    if parts.is_empty() {
        "(matches no node)".to_owned()
    } else {
        parts.join(", ")
    }
}

fn pod_term(t: &PodAffinityTerm) -> String {
    let pods = t
        .label_selector
        .as_ref()
        .map_or_else(|| "(no pod)".to_owned(), selector_text);
    let mut s = format!("pods {pods} per {}", t.topology_key);
    if !t.namespaces.is_empty() {
        s.push_str(&format!(" in namespaces {}", t.namespaces.join(", ")));
    }
    if let Some(ns) = &t.namespace_selector {
        s.push_str(&format!(" in namespaces {}", selector_text(ns)));
    }
    s
}

/// Each affinity term as one line: `required node affinity: zone in (a, b)`.
fn affinity(a: &model::Affinity) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(terms) = &a.node_required {
        let any: Vec<String> = terms.iter().map(node_term).collect();
        out.push(format!("required node affinity: {}", any.join(" OR ")));
    }
    for p in &a.node_preferred {
        out.push(format!(
            "preferred node affinity (weight {}): {}",
            p.weight,
            node_term(&p.term)
        ));
    }
    for (terms, what) in [
        (&a.pod_required, "required pod affinity"),
        (&a.anti_required, "required pod anti-affinity"),
    ] {
        for t in terms {
            out.push(format!("{what}: {}", pod_term(t)));
        }
    }
    for (terms, what) in [
        (&a.pod_preferred, "preferred pod affinity"),
        (&a.anti_preferred, "preferred pod anti-affinity"),
    ] {
        for t in terms {
            out.push(format!(
                "{what} (weight {}): {}",
                t.weight,
                pod_term(&t.term)
            ));
        }
    }
    out
}
