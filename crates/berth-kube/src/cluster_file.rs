//! Reading cluster files (`kubectl get ... -o yaml|json` output) into typed objects.

use std::collections::BTreeMap;
use std::collections::hash_map::{Entry, HashMap};
use std::path::Path;

use berth_policy::file::{MAX_NESTING, read_regular_text, too_deep};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    LimitRange, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodSpec,
    ReplicationController, ResourceRequirements, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{Metadata, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::convert::is_plain_key;
use crate::error::{ClusterFileError, Format, Location, ObjectRef, Site};
use crate::quantity::{self, QuantityError};
use crate::strict_value::StrictValue;

/// Every object kind the scheduler reads, as typed k8s-openapi objects, in file order.
#[derive(Debug, Default, Clone)]
pub struct ClusterObjects {
    /// `v1 Node` objects.
    pub nodes: Vec<Node>,
    /// `v1 Pod` objects.
    pub pods: Vec<Pod>,
    /// `v1 Namespace` objects.
    pub namespaces: Vec<Namespace>,
    /// `v1 Service` objects.
    pub services: Vec<Service>,
    /// `v1 ReplicationController` objects.
    pub replication_controllers: Vec<ReplicationController>,
    /// `apps/v1 ReplicaSet` objects.
    pub replica_sets: Vec<ReplicaSet>,
    /// `apps/v1 StatefulSet` objects.
    pub stateful_sets: Vec<StatefulSet>,
    /// `v1 PersistentVolume` objects.
    pub persistent_volumes: Vec<PersistentVolume>,
    /// `v1 PersistentVolumeClaim` objects.
    pub persistent_volume_claims: Vec<PersistentVolumeClaim>,
    /// `storage.k8s.io/v1 StorageClass` objects.
    pub storage_classes: Vec<StorageClass>,
    /// `storage.k8s.io/v1 CSINode` objects.
    pub csi_nodes: Vec<CSINode>,
    /// `scheduling.k8s.io/v1 PriorityClass` objects.
    pub priority_classes: Vec<PriorityClass>,
    /// `policy/v1 PodDisruptionBudget` objects.
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    /// `v1 LimitRange` objects: the defaults admission gives pods that `--apply` creates.
    pub limit_ranges: Vec<LimitRange>,
    /// Problems that did not stop loading, such as kinds the scheduler does not use.
    pub warnings: Vec<String>,
}

/// Reads and parses a cluster file; see [`parse_cluster`].
pub fn load_cluster_file(path: &Path) -> Result<ClusterObjects, ClusterFileError> {
    let text = read_regular_text(path, MAX_CLUSTER_FILE_BYTES).map_err(|error| {
        ClusterFileError::Read {
            path: path.to_owned(),
            error,
        }
    })?;
    parse_cluster(&text, &path.display().to_string())
}

/// Parses cluster-file text (YAML documents or JSON values holding objects or Lists);
/// `source` names the file in errors and warnings.
pub fn parse_cluster(text: &str, source: &str) -> Result<ClusterObjects, ClusterFileError> {
    let mut objects = ClusterObjects::default();
    let mut seen = Seen::default();
    let found_any = walk_objects(text, source, &mut |kind, item| {
        objects.add(&kind, item, &mut seen)
    })?;
    // Once per kind and field: a cluster file may come from a newer API server, so an
    // unknown field is a warning here (`--apply`, like kubectl's strict validation, refuses
    // it).
    for ((kind, field), (count, first)) in &seen.unknown {
        objects.warnings.push(format!(
            "{first}: {field}: unknown field of {kind} in Kubernetes v1.36's API (a typo, or a \
             newer field): ignored{}",
            match count {
                1 => String::new(),
                n => format!(" (set in {n} {kind} objects)"),
            }
        ));
    }
    if !found_any {
        objects
            .warnings
            .push(format!("{source}: no Kubernetes objects found"));
    }
    Ok(objects)
}

/// Reads every object of the text (YAML documents or JSON values, Lists flattened) and hands
/// each one, with its kind, to `each`, in file order; whether there was any object at all.
pub(crate) fn walk_objects(
    text: &str,
    source: &str,
    each: &mut dyn FnMut(String, Item) -> Result<(), ClusterFileError>,
) -> Result<bool, ClusterFileError> {
    let documents = read_documents(text, source)?;
    let multi_document = documents.len() > 1;
    let mut loader = Loader { file: source, each };
    let mut found_any = false;
    for (index, document) in documents.into_iter().enumerate() {
        if document.is_null() {
            continue;
        }
        found_any = true;
        loader.document(document, multi_document.then_some(index))?;
    }
    Ok(found_any)
}

impl ClusterObjects {
    /// Decodes one object and files it under its kind, or skips it with a warning.
    fn add(&mut self, kind: &str, item: Item, seen: &mut Seen) -> Result<(), ClusterFileError> {
        use Scope::{Cluster, Namespaced};
        match kind {
            "Node" => self.nodes.push(item.decode(seen, Cluster, validate_node)?),
            "Pod" => self.pods.push(item.decode(seen, Namespaced, validate_pod)?),
            "Namespace" => self.namespaces.push(item.decode(seen, Cluster, no_checks)?),
            "Service" => self
                .services
                .push(item.decode(seen, Namespaced, no_checks)?),
            "ReplicationController" => self
                .replication_controllers
                .push(item.decode(seen, Namespaced, no_checks)?),
            "ReplicaSet" => self
                .replica_sets
                .push(item.decode(seen, Namespaced, no_checks)?),
            "StatefulSet" => self
                .stateful_sets
                .push(item.decode(seen, Namespaced, no_checks)?),
            "PersistentVolume" => self.persistent_volumes.push(item.decode(
                seen,
                Cluster,
                validate_persistent_volume,
            )?),
            "PersistentVolumeClaim" => self.persistent_volume_claims.push(item.decode(
                seen,
                Namespaced,
                validate_persistent_volume_claim,
            )?),
            "StorageClass" => self
                .storage_classes
                .push(item.decode(seen, Cluster, no_checks)?),
            "CSINode" => self.csi_nodes.push(item.decode(seen, Cluster, no_checks)?),
            "PriorityClass" => self
                .priority_classes
                .push(item.decode(seen, Cluster, no_checks)?),
            "PodDisruptionBudget" => self
                .pod_disruption_budgets
                .push(item.decode(seen, Namespaced, no_checks)?),
            "LimitRange" => {
                self.limit_ranges
                    .push(item.decode(seen, Namespaced, validate_limit_range)?)
            }
            _ => self.warnings.push(format!(
                "{}: kind {kind} is not used by the scheduler, skipped",
                item.site
            )),
        }
        Ok(())
    }
}

/// Splits the text into documents; empty YAML documents come back as `Null`.
/// Largest cluster file read: a 5,000-node cluster with 150,000 pods is about 1 GiB of YAML.
pub const MAX_CLUSTER_FILE_BYTES: u64 = 4 << 30;

fn read_documents(text: &str, source: &str) -> Result<Vec<Value>, ClusterFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some((line, column)) = too_deep(text, MAX_NESTING) {
        let json = text.trim_start().starts_with(['{', '[']);
        return Err(ClusterFileError::Syntax {
            file: source.to_owned(),
            format: if json { Format::Json } else { Format::Yaml },
            line: Some(line),
            column: Some(column),
            message: format!(
                "nested deeper than {MAX_NESTING} levels of [ and {{ (counted inside strings \
                 too); Kubernetes objects nest about 20 levels deep"
            ),
        });
    }
    // JSON is valid YAML, but serde_json's messages are clearer for JSON input.
    // A leading `{` or `[` can also start YAML flow style, so fall back to YAML
    // and report the JSON error only if neither parser accepts the text.
    if text.trim_start().starts_with(['{', '[']) {
        let json: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text)
            .into_iter::<StrictValue>()
            .map(|document| document.map(|StrictValue(value)| value))
            .collect();
        return json.or_else(|json_error| {
            read_yaml(text, source).map_err(|_| ClusterFileError::Syntax {
                file: source.to_owned(),
                format: Format::Json,
                line: Some(json_error.line()),
                column: Some(json_error.column()),
                message: json_error.to_string(),
            })
        });
    }
    read_yaml(text, source)
}

fn read_yaml(text: &str, source: &str) -> Result<Vec<Value>, ClusterFileError> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| {
            StrictValue::deserialize(document)
                .map(|StrictValue(value)| value)
                .map_err(|error| {
                    let location = error.location();
                    ClusterFileError::Syntax {
                        file: source.to_owned(),
                        format: Format::Yaml,
                        line: location.as_ref().map(serde_yaml_ng::Location::line),
                        column: location.as_ref().map(serde_yaml_ng::Location::column),
                        message: error.to_string(),
                    }
                })
        })
        .collect()
}

/// Identity of an object for duplicate detection: kind, namespace, name.
pub(crate) type ObjectKey = (&'static str, String, String);

struct Loader<'a, 'f> {
    file: &'a str,
    each: &'f mut dyn FnMut(String, Item) -> Result<(), ClusterFileError>,
}

impl Loader<'_, '_> {
    fn site(&self, location: Location, object: Option<ObjectRef>) -> Box<Site> {
        Box::new(Site {
            file: self.file.to_owned(),
            location,
            object,
        })
    }

    fn malformed(
        &self,
        location: Location,
        object: Option<ObjectRef>,
        message: String,
    ) -> ClusterFileError {
        ClusterFileError::Malformed {
            site: self.site(location, object),
            message,
        }
    }

    /// Loads one non-empty document: a List or a single object.
    fn document(&mut self, document: Value, index: Option<usize>) -> Result<(), ClusterFileError> {
        let location = Location {
            document: index,
            item: None,
        };
        let Value::Object(mut map) = document else {
            return Err(self.malformed(location, None, not_an_object(&document)));
        };
        let Some(list_kind) = map
            .get("kind")
            .and_then(Value::as_str)
            .and_then(list_item_kind)
        else {
            return self.object(map, location);
        };
        // Typed lists (NodeList, ...) straight from the API server omit the items'
        // kind and apiVersion; they follow from the list itself.
        let defaults = (!list_kind.is_empty()).then(|| {
            (
                list_kind.to_owned(),
                map.get("apiVersion").filter(|v| v.is_string()).cloned(),
            )
        });
        let items = match map.remove("items") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(self.malformed(
                    location,
                    Some(raw_object_ref(&map)),
                    format!("items must be a list, found {}", value_type(&other)),
                ));
            }
        };
        for (item_index, item) in items.into_iter().enumerate() {
            let location = Location {
                item: Some(item_index),
                ..location
            };
            let Value::Object(mut item) = item else {
                return Err(self.malformed(location, None, not_an_object(&item)));
            };
            if let Some((kind, api_version)) = &defaults {
                fill_missing(&mut item, "kind", Some(Value::String(kind.clone())));
                fill_missing(&mut item, "apiVersion", api_version.clone());
            }
            if item
                .get("kind")
                .and_then(Value::as_str)
                .and_then(list_item_kind)
                .is_some()
            {
                return Err(self.malformed(
                    location,
                    Some(raw_object_ref(&item)),
                    "a List item cannot itself be a List".to_owned(),
                ));
            }
            self.object(item, location)?;
        }
        Ok(())
    }

    /// Checks one object's kind and apiVersion and hands it on.
    fn object(
        &mut self,
        map: Map<String, Value>,
        location: Location,
    ) -> Result<(), ClusterFileError> {
        let object_ref = raw_object_ref(&map);
        let kind = match map.get("kind") {
            Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
            None | Some(Value::Null) => {
                return Err(self.malformed(
                    location,
                    object_ref.name.is_some().then_some(object_ref),
                    "missing kind (every object needs apiVersion and kind)".to_owned(),
                ));
            }
            Some(other) => {
                return Err(self.malformed(
                    location,
                    None,
                    format!(
                        "kind must be a non-empty string, found {}",
                        value_type(other)
                    ),
                ));
            }
        };
        let object_ref = Some(object_ref);
        let api_version = match map.get("apiVersion") {
            Some(Value::String(api_version)) if !api_version.is_empty() => api_version.clone(),
            None | Some(Value::Null) => {
                return Err(self.malformed(
                    location,
                    object_ref,
                    "missing apiVersion (every object needs apiVersion and kind)".to_owned(),
                ));
            }
            Some(other) => {
                return Err(self.malformed(
                    location,
                    object_ref,
                    format!(
                        "apiVersion must be a non-empty string, found {}",
                        value_type(other)
                    ),
                ));
            }
        };
        let item = Item {
            site: self.site(location, object_ref),
            api_version,
            value: Value::Object(map),
        };
        (self.each)(kind, item)
    }
}

/// Whether a kind's objects live in a namespace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Namespaced,
    Cluster,
}

/// What decoding has met so far: objects by identity (a second one is a duplicate) and, per
/// kind and field path (list indices as `[]`), the fields the API types do not know, with how
/// many objects set each and where the first one is.
#[derive(Default)]
pub(crate) struct Seen {
    objects: HashMap<ObjectKey, Location>,
    pub(crate) unknown: BTreeMap<(&'static str, String), (usize, Box<Site>)>,
}

/// The field paths of `written` that `decoded` (the typed object written back) lacks: fields
/// the API types do not know, which decoding drops. Nulls are skipped (they mean unset).
fn unknown_fields(written: &Value, decoded: &Value, path: &str, out: &mut Vec<String>) {
    match (written, decoded) {
        (Value::Object(written), Value::Object(decoded)) => {
            for (key, value) in written {
                if value.is_null() {
                    continue;
                }
                let here = match path {
                    "" if is_plain_key(key) => key.clone(),
                    _ => field_path(path, key),
                };
                match decoded.get(key) {
                    None => out.push(here),
                    Some(known) => unknown_fields(value, known, &here, out),
                }
            }
        }
        (Value::Array(written), Value::Array(decoded)) => {
            for (value, known) in written.iter().zip(decoded) {
                unknown_fields(value, known, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// One object of a known kind, not yet decoded.
pub(crate) struct Item {
    pub(crate) site: Box<Site>,
    api_version: String,
    value: Value,
}

/// A check the scheduler relies on failed: the field path and what is wrong.
#[derive(Debug)]
pub(crate) enum Problem {
    Message { field: String, message: String },
    Quantity { field: String, error: QuantityError },
}

impl Item {
    /// Decodes the item as `T`, validates it and rejects duplicates.
    pub(crate) fn decode<T>(
        self,
        seen: &mut Seen,
        scope: Scope,
        validate: fn(&T) -> Result<(), Problem>,
    ) -> Result<T, ClusterFileError>
    where
        T: Resource + Metadata<Ty = ObjectMeta> + DeserializeOwned + Serialize,
    {
        let Item {
            site,
            api_version,
            value,
        } = self;
        if api_version != T::API_VERSION {
            return Err(ClusterFileError::Malformed {
                message: format!(
                    "apiVersion {api_version} is not supported for kind {} (expected {})",
                    T::KIND,
                    T::API_VERSION
                ),
                site,
            });
        }
        let object: T = serde_path_to_error::deserialize(&value).map_err(|error| {
            let field = error.path().to_string();
            ClusterFileError::Schema {
                field: (field != ".").then_some(field),
                message: error.into_inner().to_string(),
                site: site.clone(),
            }
        })?;
        let metadata = object.metadata();
        let name = match metadata.name.as_deref() {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                return Err(ClusterFileError::Invalid {
                    site,
                    field: "metadata.name".to_owned(),
                    message: "missing or empty".to_owned(),
                });
            }
        };
        // An unset namespace means "default" for namespaced kinds, as `kubectl apply` treats it.
        let namespace = match metadata.namespace.as_deref() {
            _ if scope == Scope::Cluster => String::new(),
            Some(namespace) if !namespace.is_empty() => namespace.to_owned(),
            _ => "default".to_owned(),
        };
        if let Err(problem) = validate(&object) {
            return Err(match problem {
                Problem::Message { field, message } => ClusterFileError::Invalid {
                    site,
                    field,
                    message,
                },
                Problem::Quantity { field, error } => {
                    ClusterFileError::Quantity { site, field, error }
                }
            });
        }
        // Written back, a typed object has every field it understood; what it lacks was
        // dropped in decoding.
        if let Ok(decoded) = serde_json::to_value(&object) {
            let mut unknown = Vec::new();
            unknown_fields(&value, &decoded, "", &mut unknown);
            for field in unknown {
                seen.unknown
                    .entry((T::KIND, field))
                    .and_modify(|(count, _)| *count += 1)
                    .or_insert_with(|| (1, site.clone()));
            }
        }
        match seen.objects.entry((T::KIND, namespace, name)) {
            Entry::Occupied(first) => {
                let (kind, namespace, name) = first.key();
                return Err(ClusterFileError::Duplicate {
                    object: Box::new(ObjectRef {
                        kind: (*kind).to_owned(),
                        namespace: (scope == Scope::Namespaced).then(|| namespace.clone()),
                        name: Some(name.clone()),
                    }),
                    first: *first.get(),
                    second: site.location,
                    file: site.file,
                });
            }
            Entry::Vacant(slot) => {
                slot.insert(site.location);
            }
        }
        Ok(object)
    }
}

pub(crate) fn no_checks<T>(_: &T) -> Result<(), Problem> {
    Ok(())
}

fn validate_node(node: &Node) -> Result<(), Problem> {
    if let Some(status) = &node.status {
        check_quantities("status.allocatable", status.allocatable.as_ref())?;
        check_quantities("status.capacity", status.capacity.as_ref())?;
    }
    Ok(())
}

fn validate_pod(pod: &Pod) -> Result<(), Problem> {
    let Some(spec) = &pod.spec else {
        return Err(Problem::Message {
            field: "spec".to_owned(),
            message: "missing (a Pod needs spec.containers)".to_owned(),
        });
    };
    validate_pod_spec("spec", spec)
}

/// The checks of a pod's spec the scheduler relies on, for a Pod (`prefix` "spec") or a
/// workload's pod template ("spec.template.spec").
pub(crate) fn validate_pod_spec(prefix: &str, spec: &PodSpec) -> Result<(), Problem> {
    if spec.containers.is_empty() {
        return Err(Problem::Message {
            field: format!("{prefix}.containers"),
            message: "missing or empty (a Pod needs at least one container)".to_owned(),
        });
    }
    let init_containers = spec.init_containers.as_deref().unwrap_or_default();
    for (list, containers) in [
        ("containers", &spec.containers[..]),
        ("initContainers", init_containers),
    ] {
        for (index, container) in containers.iter().enumerate() {
            check_requirements(
                &format!("{prefix}.{list}[{index}].resources"),
                container.resources.as_ref(),
            )?;
        }
    }
    check_quantities(&format!("{prefix}.overhead"), spec.overhead.as_ref())?;
    check_requirements(&format!("{prefix}.resources"), spec.resources.as_ref())
}

/// Every quantity of every limit, as the scheduler will read it.
fn validate_limit_range(range: &LimitRange) -> Result<(), Problem> {
    let limits = range.spec.as_ref().map(|spec| &spec.limits[..]);
    for (index, item) in limits.unwrap_or_default().iter().enumerate() {
        let at = format!("spec.limits[{index}]");
        for (name, list) in [
            ("default", &item.default),
            ("defaultRequest", &item.default_request),
            ("max", &item.max),
            ("min", &item.min),
            ("maxLimitRequestRatio", &item.max_limit_request_ratio),
        ] {
            check_quantities(&format!("{at}.{name}"), list.as_ref())?;
        }
    }
    Ok(())
}

fn validate_persistent_volume(volume: &PersistentVolume) -> Result<(), Problem> {
    let capacity = volume.spec.as_ref().and_then(|spec| spec.capacity.as_ref());
    check_quantities("spec.capacity", capacity)
}

fn validate_persistent_volume_claim(claim: &PersistentVolumeClaim) -> Result<(), Problem> {
    let Some(resources) = claim.spec.as_ref().and_then(|spec| spec.resources.as_ref()) else {
        return Ok(());
    };
    check_quantities("spec.resources.requests", resources.requests.as_ref())?;
    check_quantities("spec.resources.limits", resources.limits.as_ref())
}

pub(crate) fn check_requirements(
    prefix: &str,
    requirements: Option<&ResourceRequirements>,
) -> Result<(), Problem> {
    let Some(requirements) = requirements else {
        return Ok(());
    };
    check_quantities(
        &format!("{prefix}.requests"),
        requirements.requests.as_ref(),
    )?;
    check_quantities(&format!("{prefix}.limits"), requirements.limits.as_ref())
}

/// Checks that every quantity converts the way the scheduler will read it:
/// CPU in millis, everything else as an integer.
pub(crate) fn check_quantities(
    prefix: &str,
    quantities: Option<&BTreeMap<String, Quantity>>,
) -> Result<(), Problem> {
    for (resource, q) in quantities.into_iter().flatten() {
        let converted = if resource == "cpu" {
            quantity::cpu_millis(q)
        } else {
            quantity::value(q)
        };
        if let Err(error) = converted {
            return Err(Problem::Quantity {
                field: field_path(prefix, resource),
                error,
            });
        }
    }
    Ok(())
}

/// `prefix.key`, or `prefix["key"]` when the key would be ambiguous after a dot.
fn field_path(prefix: &str, key: &str) -> String {
    if is_plain_key(key) {
        format!("{prefix}.{key}")
    } else {
        format!("{prefix}[{key:?}]")
    }
}

/// For a list kind (`List`, `NodeList`, ...), the kind of its items (empty for `List`).
fn list_item_kind(kind: &str) -> Option<&str> {
    kind.strip_suffix("List")
}

fn fill_missing(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value
        && map.get(key).is_none_or(Value::is_null)
    {
        map.insert(key.to_owned(), value);
    }
}

/// Kind, namespace and name as far as the raw fields are strings.
fn raw_object_ref(map: &Map<String, Value>) -> ObjectRef {
    let metadata = map.get("metadata");
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    ObjectRef {
        kind: text(map.get("kind")).unwrap_or_else(|| "object".to_owned()),
        namespace: text(metadata.and_then(|m| m.get("namespace"))),
        name: text(metadata.and_then(|m| m.get("name"))),
    }
}

fn not_an_object(value: &Value) -> String {
    format!(
        "expected a Kubernetes object (a mapping with apiVersion and kind), found {}",
        value_type(value)
    )
}

fn value_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
