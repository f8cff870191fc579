//! What the API server does to a pod before the scheduler sees it, in upstream's plugin
//! order: defaulting, NamespaceLifecycle (the namespace must exist), LimitRanger,
//! PodNodeSelector, Priority, DefaultTolerationSeconds and PodTolerationRestriction.

use std::collections::HashMap;

use berth_model::labels::parse_node_selector;
use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod, PodSpec, Toleration};

use super::limit_range;
use crate::ClusterObjects;
use crate::cluster_file::Problem;
use crate::convert::{KUBERNETES_NODE_SELECTOR_ANNOTATION, SYSTEM_PRIORITY_CLASSES};

/// The PodTolerationRestriction plugin's annotation: tolerations every new pod of the
/// namespace gets (a JSON list).
pub const DEFAULT_TOLERATIONS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";

/// How long DefaultTolerationSeconds lets a pod stay on a not-ready or unreachable node.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The cluster objects admission reads.
pub(crate) struct Admission<'a> {
    namespaces: HashMap<&'a str, &'a Namespace>,
    /// Whether the cluster file lists namespaces at all; one that lists none cannot say
    /// which exist, so any is accepted.
    namespaces_listed: bool,
    limit_ranges: HashMap<&'a str, Vec<&'a LimitRange>>,
    classes: HashMap<&'a str, (i32, Option<&'a str>)>,
    global_default: Option<(&'a str, i32, Option<&'a str>)>,
}

impl<'a> Admission<'a> {
    pub(crate) fn new(objects: &'a ClusterObjects) -> Self {
        let namespaces = objects
            .namespaces
            .iter()
            .filter_map(|n| Some((n.metadata.name.as_deref()?, n)))
            .collect();
        let mut limit_ranges: HashMap<&str, Vec<&LimitRange>> = HashMap::new();
        for range in &objects.limit_ranges {
            let namespace = range.metadata.namespace.as_deref().unwrap_or("default");
            limit_ranges.entry(namespace).or_default().push(range);
        }
        // Upstream lists them from a cache in name order.
        for ranges in limit_ranges.values_mut() {
            ranges.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        }
        let mut classes: HashMap<&str, (i32, Option<&str>)> = SYSTEM_PRIORITY_CLASSES
            .iter()
            .map(|&(name, value)| (name, (value, None)))
            .collect();
        let mut global_default: Option<(&str, i32, Option<&str>)> = None;
        for class in &objects.priority_classes {
            let Some(name) = class.metadata.name.as_deref() else {
                continue;
            };
            let policy = class.preemption_policy.as_deref();
            // Go decodes a missing `value` as 0.
            let value = class.value.unwrap_or(0);
            classes.insert(name, (value, policy));
            // Upstream takes the lowest value when several classes claim to be the default.
            if class.global_default == Some(true)
                && global_default.is_none_or(|(_, lowest, _)| value < lowest)
            {
                global_default = Some((name, value, policy));
            }
        }
        Admission {
            namespaces,
            namespaces_listed: !objects.namespaces.is_empty(),
            limit_ranges,
            classes,
            global_default,
        }
    }

    /// Admits `pod` (in `namespace`; its spec at the field path `at`), changing it as the
    /// plugins would; a note per change, or the problem that would make admission reject it.
    pub(crate) fn admit(
        &self,
        namespace: &str,
        pod: &mut Pod,
        at: &str,
    ) -> Result<Vec<String>, Problem> {
        let Some(spec) = pod.spec.as_mut() else {
            return Err(Problem::Message {
                field: at.to_owned(),
                message: "missing (a pod needs spec.containers)".to_owned(),
            });
        };
        let ns = self.namespaces.get(namespace).copied();
        if self.namespaces_listed && ns.is_none() {
            return Err(Problem::Message {
                field: "metadata.namespace".to_owned(),
                message: format!(
                    "namespace {namespace:?} is not in the cluster file (admission refuses \
                     pods in a namespace that does not exist; add the Namespace to the cluster)"
                ),
            });
        }
        let annotations = ns.and_then(|n| n.metadata.annotations.as_ref());
        let annotation = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
        limit_range::default_requests_from_limits(spec);
        let ranges = self
            .limit_ranges
            .get(namespace)
            .map_or(&[][..], Vec::as_slice);
        let mut notes = limit_range::apply(ranges, spec, at)?;
        limit_range::check_requests_within_limits(spec, at)?;
        if let Some(text) = annotation(KUBERNETES_NODE_SELECTOR_ANNOTATION) {
            notes.extend(node_selector(namespace, text, spec, at)?);
        }
        notes.extend(self.priority(spec, at)?);
        default_toleration_seconds(spec);
        if let Some(text) = annotation(DEFAULT_TOLERATIONS_ANNOTATION) {
            notes.extend(namespace_tolerations(namespace, text, spec)?);
        }
        if !best_effort(spec) {
            merge_tolerations(
                spec,
                [Toleration {
                    key: Some("node.kubernetes.io/memory-pressure".to_owned()),
                    operator: Some("Exists".to_owned()),
                    effect: Some("NoSchedule".to_owned()),
                    ..Default::default()
                }],
            );
        }
        Ok(notes)
    }

    /// The Priority plugin: the class's value (the named one, else the global default),
    /// and its preemption policy; a pod may not contradict them.
    fn priority(&self, spec: &mut PodSpec, at: &str) -> Result<Option<String>, Problem> {
        let named = spec
            .priority_class_name
            .as_deref()
            .filter(|n| !n.is_empty());
        let (name, value, policy) = match named {
            Some(name) => match self.classes.get(name) {
                Some(&(value, policy)) => (name.to_owned(), value, policy),
                None => {
                    let mut known: Vec<&str> = self.classes.keys().copied().collect();
                    known.sort_unstable();
                    return Err(Problem::Message {
                        field: format!("{at}.priorityClassName"),
                        message: format!(
                            "no PriorityClass with name {name} was found (admission would \
                             reject the pod; known: {})",
                            known.join(", ")
                        ),
                    });
                }
            },
            None => match self.global_default {
                Some((name, value, policy)) => (name.to_owned(), value, policy),
                None => (String::new(), 0, None),
            },
        };
        if let Some(given) = spec.priority
            && given != value
        {
            return Err(Problem::Message {
                field: format!("{at}.priority"),
                message: format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; \
                     priority admission controller computed {value} from the given \
                     PriorityClass name"
                ),
            });
        }
        let policy = policy.unwrap_or("PreemptLowerPriority");
        match spec.preemption_policy.as_deref() {
            Some(given) if given != policy => {
                return Err(Problem::Message {
                    field: format!("{at}.preemptionPolicy"),
                    message: format!(
                        "the string value of PreemptionPolicy ({given}) must not be provided \
                         in pod spec; priority admission controller computed {policy} from the \
                         given PriorityClass name"
                    ),
                });
            }
            _ => spec.preemption_policy = Some(policy.to_owned()),
        }
        spec.priority = Some(value);
        if name.is_empty() {
            return Ok(None);
        }
        let note = format!(
            "priority {value} from PriorityClass {name}{}",
            if named.is_none() {
                " (globalDefault)"
            } else {
                ""
            }
        );
        spec.priority_class_name = Some(name);
        Ok(Some(note))
    }
}

/// PodNodeSelector: the namespace's selector merged into the pod's; a pod selecting another
/// value for one of its keys is refused.
fn node_selector(
    namespace: &str,
    text: &str,
    spec: &mut PodSpec,
    at: &str,
) -> Result<Option<String>, Problem> {
    let pairs = parse_node_selector(text).map_err(|why| Problem::Message {
        field: format!("metadata.annotations[{KUBERNETES_NODE_SELECTOR_ANNOTATION:?}]"),
        message: format!("of namespace {namespace}: {why} (admission would reject every pod)"),
    })?;
    if pairs.is_empty() {
        return Ok(None);
    }
    let selector = spec.node_selector.get_or_insert_with(Default::default);
    for (key, value) in &pairs {
        match selector.get(key) {
            Some(own) if own != value => {
                return Err(Problem::Message {
                    field: format!("{at}.nodeSelector"),
                    message: format!(
                        "pod node label selector conflicts with its namespace node label \
                         selector: {key}={own}, namespace {namespace} has {key}={value}"
                    ),
                });
            }
            _ => {
                selector.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(Some(format!(
        "node selector {text} from namespace {namespace}"
    )))
}

/// DefaultTolerationSeconds: a pod tolerates not-ready and unreachable nodes for 300 s
/// unless it says otherwise.
fn default_toleration_seconds(spec: &mut PodSpec) {
    let tolerates = |spec: &PodSpec, key: &str| {
        spec.tolerations.iter().flatten().any(|t| {
            matches!(t.key.as_deref(), None | Some("")) || t.key.as_deref() == Some(key)
        } && matches!(t.effect.as_deref(), None | Some("" | "NoExecute")))
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !tolerates(spec, key) {
            spec.tolerations
                .get_or_insert_with(Vec::new)
                .push(Toleration {
                    key: Some(key.to_owned()),
                    operator: Some("Exists".to_owned()),
                    effect: Some("NoExecute".to_owned()),
                    toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                    ..Default::default()
                });
        }
    }
}

/// PodTolerationRestriction: the namespace's default tolerations merged into the pod's.
fn namespace_tolerations(
    namespace: &str,
    text: &str,
    spec: &mut PodSpec,
) -> Result<Option<String>, Problem> {
    let list = if text.trim().is_empty() {
        Vec::new()
    } else {
        serde_json::from_str::<Option<Vec<Toleration>>>(text)
            .map_err(|e| Problem::Message {
                field: format!("metadata.annotations[{DEFAULT_TOLERATIONS_ANNOTATION:?}]"),
                message: format!(
                    "of namespace {namespace}: expected a JSON list of tolerations such as \
                     [{{\"key\": \"dedicated\", \"operator\": \"Exists\"}}]: {e}"
                ),
            })?
            .unwrap_or_default()
    };
    if list.is_empty() {
        return Ok(None);
    }
    let count = list.len();
    merge_tolerations(spec, list);
    Ok(Some(format!(
        "{count} default toleration(s) from namespace {namespace}"
    )))
}

/// Adds each toleration the pod does not already have (upstream's MergeTolerations drops
/// exact repeats the same way).
fn merge_tolerations(spec: &mut PodSpec, extra: impl IntoIterator<Item = Toleration>) {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for toleration in extra {
        if !tolerations.iter().any(|t| same_toleration(t, &toleration)) {
            tolerations.push(toleration);
        }
    }
}

fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let operator = |t: &Toleration| match t.operator.as_deref() {
        None | Some("") => "Equal".to_owned(),
        Some(other) => other.to_owned(),
    };
    text(&a.key) == text(&b.key)
        && operator(a) == operator(b)
        && text(&a.value) == text(&b.value)
        && text(&a.effect) == text(&b.effect)
        && a.toleration_seconds == b.toleration_seconds
}

/// Whether no container or init container requests or limits cpu or memory (QoS class
/// BestEffort).
fn best_effort(spec: &PodSpec) -> bool {
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .all(|r| {
            [&r.requests, &r.limits]
                .into_iter()
                .flatten()
                .all(|list| !list.contains_key("cpu") && !list.contains_key("memory"))
        })
}
