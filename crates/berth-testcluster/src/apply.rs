//! Server-side apply of plain YAML manifests through kube's dynamic API.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_kind};
use kube::{Client, ResourceExt};
use serde::Deserialize;

/// The field manager the harness applies as.
const FIELD_MANAGER: &str = "berth-testcluster";

/// Parses every non-empty document of a (multi-document) YAML text.
pub(crate) fn parse_documents(yaml: &str) -> Result<Vec<DynamicObject>> {
    let mut objects = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let value = serde_yaml_ng::Value::deserialize(document)
            .with_context(|| format!("YAML document {}", index + 1))?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_yaml_ng::from_value(value)
            .with_context(|| format!("YAML document {} is not a Kubernetes object", index + 1))?;
        if object.types.is_none() {
            bail!("YAML document {} has no apiVersion/kind", index + 1);
        }
        objects.push(object);
    }
    Ok(objects)
}

/// The manifest files named by `paths`: files as given, directories as their `*.yaml` and
/// `*.yml` files in name order, leaving out kustomization files (they are no objects).
pub(crate) fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("reading {}", path.display()))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<std::io::Result<_>>()?;
            entries.sort();
            files.extend(entries.into_iter().filter(|p| is_manifest(p)));
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn is_manifest(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    yaml && !name.starts_with("kustomization.")
}

/// Applies `objects`, Namespaces and CRDs first so the objects inside them can follow. With
/// `dry_run` the apiserver validates, defaults and admits each object but stores none (so
/// the namespaces of namespaced objects must exist already).
pub(crate) async fn apply_objects(
    client: &Client,
    mut objects: Vec<DynamicObject>,
    dry_run: bool,
) -> Result<Vec<DynamicObject>> {
    objects.sort_by_key(|o| {
        let kind = o.types.as_ref().map(|t| t.kind.as_str()).unwrap_or("");
        !matches!(kind, "Namespace" | "CustomResourceDefinition")
    });
    let mut kinds: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)> = HashMap::new();
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    let mut applied = Vec::with_capacity(objects.len());
    for object in objects {
        let types = object.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types)
            .with_context(|| format!("apiVersion {:?}", types.api_version))?;
        if !kinds.contains_key(&gvk) {
            let found = pinned_kind(client, &gvk)
                .await
                .with_context(|| format!("looking up {} {}", types.api_version, types.kind))?;
            kinds.insert(gvk.clone(), found);
        }
        let (resource, capabilities) = &kinds[&gvk];
        let name = object.name_any();
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Cluster => Api::all_with(client.clone(), resource),
            Scope::Namespaced => {
                let namespace = object.namespace().unwrap_or_else(|| "default".into());
                Api::namespaced_with(client.clone(), &namespace, resource)
            }
        };
        let result = api
            .patch(&name, &params, &Patch::Apply(&object))
            .await
            .with_context(|| {
                let mode = if dry_run {
                    " (server-side dry run)"
                } else {
                    ""
                };
                format!("applying {} {name}{mode}", types.kind)
            })?;
        applied.push(result);
    }
    Ok(applied)
}
