//! Storage: PersistentVolumes, their claims, StorageClasses and CSINodes.

use std::collections::BTreeMap;

use berth_model::model::{self, PvSource};
use k8s_openapi::api::core::v1::{self as core, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::field::{Field, Problem};
use super::selectors::{self, node_selector, optional_selector};

use super::{BETA_STORAGE_CLASS_ANNOTATION, ConvertError, amount, convert};

/// The storage class: the beta annotation first, as upstream's helpers read it.
fn storage_class_of(meta: &model::Meta, spec_class: Option<&String>) -> Option<String> {
    meta.annotations
        .get(BETA_STORAGE_CLASS_ANNOTATION)
        .or(spec_class)
        .cloned()
}

/// The `storage` entry of a resource map in bytes (0 when absent).
fn storage(list: Option<&BTreeMap<String, Quantity>>, at: Field<'_>) -> Result<i64, Problem> {
    list.and_then(|list| list.get("storage"))
        .map_or(Ok(0), |q| amount("storage", q, at.key("storage")))
}

/// A `volumeMode`: Filesystem when unset, as the API server defaults it.
fn volume_mode(mode: Option<&str>, at: Field<'_>) -> Result<model::VolumeMode, Problem> {
    match mode {
        None | Some("Filesystem") => Ok(model::VolumeMode::Filesystem),
        Some("Block") => Ok(model::VolumeMode::Block),
        Some(other) => Err(at.problem(format!(
            "unknown volume mode {other:?} (expected Filesystem, Block)"
        ))),
    }
}

/// Converts a PersistentVolume.
pub fn persistent_volume(
    volume: &PersistentVolume,
) -> Result<model::PersistentVolume, ConvertError> {
    convert(volume, |meta| {
        let spec = volume.spec.as_ref();
        let at = Field::root("spec");
        let node_affinity = spec
            .and_then(|spec| spec.node_affinity.as_ref()?.required.as_ref())
            .map(|required| node_selector(required, at.name("nodeAffinity").name("required")))
            .transpose()?;
        Ok(model::PersistentVolume {
            capacity: storage(spec.and_then(|s| s.capacity.as_ref()), at.name("capacity"))?,
            storage_class_name: storage_class_of(
                &meta,
                spec.and_then(|s| s.storage_class_name.as_ref()),
            )
            .unwrap_or_default(),
            access_modes: spec
                .and_then(|s| s.access_modes.clone())
                .unwrap_or_default(),
            volume_mode: volume_mode(
                spec.and_then(|s| s.volume_mode.as_deref()),
                at.name("volumeMode"),
            )?,
            volume_attributes_class_name: spec
                .and_then(|s| s.volume_attributes_class_name.clone())
                .unwrap_or_default(),
            node_affinity,
            claim_ref: spec.and_then(|s| s.claim_ref.as_ref()).map(|claim| {
                (
                    claim.namespace.clone().unwrap_or_default(),
                    claim.name.clone().unwrap_or_default(),
                )
            }),
            source: spec.map_or(PvSource::Other, pv_source),
            phase: volume
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default(),
            meta,
        })
    })
}

fn pv_source(spec: &core::PersistentVolumeSpec) -> PvSource {
    if let Some(gce) = &spec.gce_persistent_disk {
        PvSource::GcePersistentDisk {
            pd_name: gce.pd_name.clone(),
        }
    } else if let Some(ebs) = &spec.aws_elastic_block_store {
        PvSource::AwsElasticBlockStore {
            volume_id: ebs.volume_id.clone(),
        }
    } else if let Some(azure) = &spec.azure_disk {
        PvSource::AzureDisk {
            disk_name: azure.disk_name.clone(),
        }
    } else if let Some(cinder) = &spec.cinder {
        PvSource::Cinder {
            volume_id: cinder.volume_id.clone(),
        }
    } else if let Some(csi) = &spec.csi {
        PvSource::Csi {
            driver: csi.driver.clone(),
            volume_handle: csi.volume_handle.clone(),
        }
    } else {
        PvSource::Other
    }
}

/// Converts a PersistentVolumeClaim; `storage_class_name` stays None when unset (the
/// default class applies) and Some("") when explicitly empty (no class).
pub fn persistent_volume_claim(
    claim: &PersistentVolumeClaim,
) -> Result<model::PersistentVolumeClaim, ConvertError> {
    convert(claim, |meta| {
        let spec = claim.spec.as_ref();
        let at = Field::root("spec");
        let requests = spec
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref());
        Ok(model::PersistentVolumeClaim {
            volume_name: spec.and_then(|s| s.volume_name.clone()).unwrap_or_default(),
            storage_class_name: storage_class_of(
                &meta,
                spec.and_then(|s| s.storage_class_name.as_ref()),
            ),
            access_modes: spec
                .and_then(|s| s.access_modes.clone())
                .unwrap_or_default(),
            volume_mode: volume_mode(
                spec.and_then(|s| s.volume_mode.as_deref()),
                at.name("volumeMode"),
            )?,
            volume_attributes_class_name: spec
                .and_then(|s| s.volume_attributes_class_name.clone())
                .unwrap_or_default(),
            request: storage(requests, at.name("resources").name("requests"))?,
            selector: optional_selector(
                spec.and_then(|s| s.selector.as_ref()),
                at.name("selector"),
            )?,
            meta,
        })
    })
}

/// Converts a StorageClass; the binding mode defaults to Immediate.
pub fn storage_class(class: &StorageClass) -> Result<model::StorageClass, ConvertError> {
    convert(class, |meta| {
        let volume_binding_mode = match class.volume_binding_mode.as_deref() {
            None | Some("Immediate") => model::VolumeBindingMode::Immediate,
            Some("WaitForFirstConsumer") => model::VolumeBindingMode::WaitForFirstConsumer,
            Some(other) => {
                return Err(Field::root("volumeBindingMode").problem(format!(
                    "unknown mode {other:?} (expected Immediate, WaitForFirstConsumer)"
                )));
            }
        };
        let at = Field::root("allowedTopologies");
        let allowed_topologies = class
            .allowed_topologies
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, term)| selectors::topology_selector_term(term, at.index(index)))
            .collect::<Result<_, _>>()?;
        Ok(model::StorageClass {
            meta,
            provisioner: class.provisioner.clone(),
            volume_binding_mode,
            allowed_topologies,
        })
    })
}

/// Converts a CSINode: each driver with its volume limit, if it reports one.
pub fn csi_node(node: &CSINode) -> Result<model::CsiNode, ConvertError> {
    convert(node, |meta| {
        Ok(model::CsiNode {
            meta,
            drivers: node
                .spec
                .drivers
                .iter()
                .map(|driver| {
                    let count = driver.allocatable.as_ref().and_then(|a| a.count);
                    (driver.name.clone(), count.map(i64::from))
                })
                .collect(),
        })
    })
}
