//! Nodes.

use berth_model::model;
use k8s_openapi::api::core::v1::Node;

use super::field::{Field, Problem};

use super::{ConvertError, annotations, convert, resource_list, taint_effect};

/// Converts a Node; allocatable falls back to capacity when the status has none.
pub fn node(node: &Node) -> Result<model::Node, ConvertError> {
    convert(node, |meta| {
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        let spec_at = Field::root("spec");
        let taints_at = spec_at.name("taints");
        let taints = spec
            .and_then(|spec| spec.taints.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, taint)| {
                Ok(model::Taint {
                    key: taint.key.clone(),
                    value: taint.value.clone().unwrap_or_default(),
                    effect: taint_effect(&taint.effect, taints_at.index(index).name("effect"))?,
                })
            })
            .collect::<Result<_, Problem>>()?;
        let pod_cidrs = spec.map_or_else(Vec::new, |spec| match spec.pod_cidrs.as_deref() {
            Some(cidrs) if !cidrs.is_empty() => cidrs.to_vec(),
            _ => spec
                .pod_cidr
                .iter()
                .filter(|c| !c.is_empty())
                .cloned()
                .collect(),
        });
        let status_at = Field::root("status");
        // The kubelet reports allocatable; objects written by hand often carry capacity only.
        let allocatable = match status {
            Some(status) if status.allocatable.as_ref().is_some_and(|a| !a.is_empty()) => {
                resource_list(status.allocatable.as_ref(), status_at.name("allocatable"))?
            }
            Some(status) => resource_list(status.capacity.as_ref(), status_at.name("capacity"))?,
            None => Vec::new(),
        };
        let mut conditions = model::NodeConditions::default();
        for condition in status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
        {
            let is_true = condition.status == "True";
            match condition.type_.as_str() {
                "Ready" => conditions.ready = Some(is_true),
                "MemoryPressure" => conditions.memory_pressure = is_true,
                "DiskPressure" => conditions.disk_pressure = is_true,
                "PIDPressure" => conditions.pid_pressure = is_true,
                "NetworkUnavailable" => conditions.network_unavailable = is_true,
                "OutOfDisk" => conditions.out_of_disk = is_true,
                _ => {}
            }
        }
        let images = status
            .and_then(|s| s.images.as_ref())
            .into_iter()
            .flatten()
            .map(|image| model::NodeImage {
                names: image.names.clone().unwrap_or_default(),
                size_bytes: image.size_bytes.unwrap_or(0),
            })
            .collect();
        let prefer_avoid_pods = annotations::prefer_avoid_pods(&meta.annotations);
        Ok(model::Node {
            meta,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            taints,
            pod_cidrs,
            allocatable,
            conditions,
            images,
            prefer_avoid_pods,
        })
    })
}
