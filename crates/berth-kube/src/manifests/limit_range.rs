//! The LimitRanger admission plugin for the pods `--apply` creates: each Container-type
//! limit of the namespace's LimitRanges gives default limits and requests to every container
//! and init container that lacks them, and its min and max are enforced.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LimitRange, LimitRangeItem, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cluster_file::Problem;
use crate::quantity;

type ResourceMap = BTreeMap<String, Quantity>;

/// The API server's defaulting of a pod as it is decoded, before any admission plugin: a
/// resource with a limit and no request requests its limit.
pub(crate) fn default_requests_from_limits(spec: &mut PodSpec) {
    for container in containers_mut(spec) {
        let Some(resources) = container.resources.as_mut() else {
            continue;
        };
        let Some(limits) = resources.limits.as_ref() else {
            continue;
        };
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        for (name, limit) in limits {
            requests
                .entry(name.clone())
                .or_insert_with(|| limit.clone());
        }
    }
}

fn containers_mut(spec: &mut PodSpec) -> impl Iterator<Item = &mut Container> {
    spec.containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
}

/// A Container-type item's defaults as the API server stores the LimitRange: a missing
/// default limit is the max, a missing default request the default limit, else the min.
/// Every container, then every init container, with its list's field name and index.
fn named_containers(spec: &PodSpec) -> impl Iterator<Item = (&'static str, usize, &Container)> {
    let init = spec.init_containers.as_deref().unwrap_or_default();
    numbered("containers", &spec.containers).chain(numbered("initContainers", init))
}

fn numbered<'a>(
    name: &'static str,
    list: &'a [Container],
) -> impl Iterator<Item = (&'static str, usize, &'a Container)> {
    list.iter()
        .enumerate()
        .map(move |(index, container)| (name, index, container))
}

fn container_defaults(item: &LimitRangeItem) -> (ResourceMap, ResourceMap) {
    let mut limits = item.default.clone().unwrap_or_default();
    for (name, max) in item.max.iter().flatten() {
        limits.entry(name.clone()).or_insert_with(|| max.clone());
    }
    let mut requests = item.default_request.clone().unwrap_or_default();
    for (name, limit) in &limits {
        requests
            .entry(name.clone())
            .or_insert_with(|| limit.clone());
    }
    for (name, min) in item.min.iter().flatten() {
        requests.entry(name.clone()).or_insert_with(|| min.clone());
    }
    (limits, requests)
}

fn container_items(range: &LimitRange) -> impl Iterator<Item = &LimitRangeItem> {
    range
        .spec
        .iter()
        .flat_map(|spec| &spec.limits)
        .filter(|item| item.type_ == "Container")
}

/// Applies the ranges' container defaults to `spec`, prefixing fields with `at` (e.g.
/// `spec.template.spec`), then checks every container against their min and max. Returns a
/// note per range that set something, naming what it set.
pub(crate) fn apply(
    ranges: &[&LimitRange],
    spec: &mut PodSpec,
    at: &str,
) -> Result<Vec<String>, Problem> {
    let mut notes = Vec::new();
    for range in ranges {
        let name = range.metadata.name.as_deref().unwrap_or_default();
        let mut set: Vec<String> = Vec::new();
        for item in container_items(range) {
            let (limits, requests) = container_defaults(item);
            for container in containers_mut(spec) {
                let resources = container.resources.get_or_insert_with(Default::default);
                for (kind, defaults, target) in [
                    ("limit", &limits, &mut resources.limits),
                    ("request", &requests, &mut resources.requests),
                ] {
                    let target = target.get_or_insert_with(BTreeMap::new);
                    for (resource, value) in defaults {
                        if !target.contains_key(resource) {
                            target.insert(resource.clone(), value.clone());
                            set.push(format!("{} {resource} {kind} {}", container.name, value.0));
                        }
                    }
                }
            }
        }
        if !set.is_empty() {
            notes.push(format!("LimitRange {name} set {}", set.join(", ")));
        }
    }
    for range in ranges {
        for item in container_items(range) {
            check_bounds(range, item, spec, at)?;
        }
    }
    Ok(notes)
}

/// LimitRanger's min and max for one container: a request and a limit at least the min, a
/// limit (required) and a request at most the max.
fn check_bounds(
    range: &LimitRange,
    item: &LimitRangeItem,
    spec: &PodSpec,
    at: &str,
) -> Result<(), Problem> {
    let name = range.metadata.name.as_deref().unwrap_or_default();
    for (list, index, container) in named_containers(spec) {
        let resources = container.resources.as_ref();
        let requests = resources.and_then(|r| r.requests.as_ref());
        let limits = resources.and_then(|r| r.limits.as_ref());
        let field = |kind: &str, resource: &str| {
            format!("{at}.{list}[{index}].resources.{kind}.{resource}")
        };
        let reject = |field: String, message: String| Problem::Message {
            field,
            message: format!("LimitRange {name}: {message} (admission would reject the pod)"),
        };
        for (resource, min) in item.min.iter().flatten() {
            for (kind, values) in [("requests", requests), ("limits", limits)] {
                let word = &kind[..kind.len() - 1];
                match values.and_then(|v| v.get(resource)) {
                    None => {
                        return Err(reject(
                            field(kind, resource),
                            format!(
                                "minimum {resource} usage per Container is {}, but no {word} is specified",
                                min.0
                            ),
                        ));
                    }
                    Some(value) if amount(resource, value) < amount(resource, min) => {
                        return Err(reject(
                            field(kind, resource),
                            format!(
                                "minimum {resource} usage per Container is {}, but {word} is {}",
                                min.0, value.0
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        for (resource, max) in item.max.iter().flatten() {
            match limits.and_then(|v| v.get(resource)) {
                None => {
                    return Err(reject(
                        field("limits", resource),
                        format!(
                            "maximum {resource} usage per Container is {}, but no limit is specified",
                            max.0
                        ),
                    ));
                }
                Some(value) if amount(resource, value) > amount(resource, max) => {
                    return Err(reject(
                        field("limits", resource),
                        format!(
                            "maximum {resource} usage per Container is {}, but limit is {}",
                            max.0, value.0
                        ),
                    ));
                }
                Some(_) => {}
            }
            if let Some(value) = requests.and_then(|v| v.get(resource))
                && amount(resource, value) > amount(resource, max)
            {
                return Err(reject(
                    field("requests", resource),
                    format!(
                        "maximum {resource} usage per Container is {}, but request is {}",
                        max.0, value.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// API validation after admission: no container may request more than its limit (a
/// LimitRange's default limit below a request written in the manifest trips this).
pub(crate) fn check_requests_within_limits(spec: &PodSpec, at: &str) -> Result<(), Problem> {
    for (list, index, container) in named_containers(spec) {
        let Some(resources) = container.resources.as_ref() else {
            continue;
        };
        let limits = resources.limits.iter().flatten();
        for (resource, limit) in limits {
            let request = resources.requests.as_ref().and_then(|r| r.get(resource));
            if let Some(request) = request
                && amount(resource, request) > amount(resource, limit)
            {
                return Err(Problem::Message {
                    field: format!("{at}.{list}[{index}].resources.requests.{resource}"),
                    message: format!(
                        "{} must be less than or equal to {resource} limit {} (the API \
                         server would reject the pod; a LimitRange's default limit counts)",
                        request.0, limit.0
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A quantity in the scheduler's units; the loader has already checked every quantity of
/// the LimitRange and the template, so the fallback is never taken.
fn amount(resource: &str, q: &Quantity) -> i64 {
    let converted = if resource == "cpu" {
        quantity::cpu_millis(q)
    } else {
        quantity::value(q)
    };
    converted.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{LimitRangeSpec, ResourceRequirements};

    fn q(pairs: &[(&str, &str)]) -> Option<ResourceMap> {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        })
    }

    fn range(
        default: &[(&str, &str)],
        request: &[(&str, &str)],
        max: &[(&str, &str)],
    ) -> LimitRange {
        LimitRange {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("limits".into()),
                ..Default::default()
            },
            spec: Some(LimitRangeSpec {
                limits: vec![LimitRangeItem {
                    type_: "Container".into(),
                    default: q(default),
                    default_request: q(request),
                    max: q(max),
                    ..Default::default()
                }],
            }),
        }
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: q(requests),
                limits: q(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    type Pairs = Vec<(String, String)>;

    fn resources(c: &Container) -> (Pairs, Pairs) {
        let flat = |m: &Option<ResourceMap>| {
            m.iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<Vec<_>>()
        };
        let r = c.resources.as_ref().unwrap();
        (flat(&r.requests), flat(&r.limits))
    }

    fn pairs(p: &[(&str, &str)]) -> Pairs {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_table() {
        // (name, range, container requests, container limits, want requests, want limits)
        type Case = (
            &'static str,
            LimitRange,
            Vec<(&'static str, &'static str)>,
            Vec<(&'static str, &'static str)>,
            Vec<(&'static str, &'static str)>,
            Vec<(&'static str, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "empty container gets both",
                range(&[("cpu", "500m")], &[("cpu", "100m")], &[]),
                vec![],
                vec![],
                vec![("cpu", "100m")],
                vec![("cpu", "500m")],
            ),
            (
                "default request falls back to the default limit",
                range(&[("memory", "256Mi")], &[], &[]),
                vec![],
                vec![],
                vec![("memory", "256Mi")],
                vec![("memory", "256Mi")],
            ),
            (
                "default limit falls back to the max",
                range(&[], &[], &[("cpu", "2")]),
                vec![],
                vec![],
                vec![("cpu", "2")],
                vec![("cpu", "2")],
            ),
            (
                "a limit alone is the request (API defaulting first), not the range's request",
                range(&[("cpu", "500m")], &[("cpu", "100m")], &[]),
                vec![],
                vec![("cpu", "300m")],
                vec![("cpu", "300m")],
                vec![("cpu", "300m")],
            ),
            (
                "a set request is kept, the limit defaulted",
                range(&[("cpu", "500m")], &[("cpu", "100m")], &[]),
                vec![("cpu", "200m")],
                vec![],
                vec![("cpu", "200m")],
                vec![("cpu", "500m")],
            ),
        ];
        for (name, range, requests, limits, want_requests, want_limits) in cases {
            let mut spec = PodSpec {
                containers: vec![container("app", &requests, &limits)],
                init_containers: Some(vec![container("init", &requests, &limits)]),
                ..Default::default()
            };
            default_requests_from_limits(&mut spec);
            apply(&[&range], &mut spec, "spec").unwrap_or_else(|_| panic!("{name}"));
            for c in spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
            {
                assert_eq!(
                    resources(c),
                    (pairs(&want_requests), pairs(&want_limits)),
                    "{name}: {}",
                    c.name
                );
            }
        }
    }

    #[test]
    fn bounds_reject() {
        let cases = [
            (
                container("app", &[], &[("cpu", "3")]),
                "spec.containers[0].resources.limits.cpu",
                "maximum cpu usage per Container is 2, but limit is 3",
            ),
            (
                container("app", &[("cpu", "3")], &[("cpu", "1")]),
                "spec.containers[0].resources.requests.cpu",
                "maximum cpu usage per Container is 2, but request is 3",
            ),
        ];
        for (c, want_field, want) in cases {
            let mut spec = PodSpec {
                containers: vec![c],
                ..Default::default()
            };
            let Err(Problem::Message { field, message }) =
                apply(&[&range(&[], &[], &[("cpu", "2")])], &mut spec, "spec")
            else {
                panic!("{want}: accepted");
            };
            assert_eq!(field, want_field);
            assert!(message.contains(want), "{message}");
        }
    }

    #[test]
    fn notes_name_what_was_set() {
        let mut spec = PodSpec {
            containers: vec![container("app", &[], &[])],
            ..Default::default()
        };
        let notes = apply(&[&range(&[("cpu", "1")], &[], &[])], &mut spec, "spec").unwrap();
        assert_eq!(
            notes,
            ["LimitRange limits set app cpu limit 1, app cpu request 1"]
        );
    }
}
