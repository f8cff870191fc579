//! GPU model filter: a pod lists the GPU models it can use in an annotation; nodes whose GPU
//! model label is not one of them are rejected. Pods without the annotation pass everywhere.
//!
//! Config (all optional):
//! `{"nodeLabel": "nvidia.com/gpu.product", "podAnnotation": "berth.dev/gpu-models"}`.
//! The annotation is a comma-separated list, e.g. `NVIDIA-A100-SXM4-80GB,NVIDIA-H100-80GB-HBM3`.

use berth_plugin::{Filter, Nodes, Pod, Reason, Symbol, Verdicts, filter_plugin, reason};

struct GpuModel {
    node_label: String,
    pod_annotation: String,
    reason: Reason,
    column: Vec<u32>,
}

impl Filter for GpuModel {
    fn new(config: &str) -> Result<Self, String> {
        let config: serde_json::Value =
            serde_json::from_str(config).map_err(|e| format!("config: {e}"))?;
        let text = |key: &str, default: &str| match &config[key] {
            serde_json::Value::Null => Ok(default.to_owned()),
            serde_json::Value::String(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(format!("config.{key}: expected a non-empty string")),
        };
        Ok(GpuModel {
            node_label: text("nodeLabel", "nvidia.com/gpu.product")?,
            pod_annotation: text("podAnnotation", "berth.dev/gpu-models")?,
            reason: reason("node(s) didn't have a requested GPU model"),
            column: Vec::new(),
        })
    }

    fn filter(&mut self, pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        let Some(wanted) = pod.annotation(&self.pod_annotation) else {
            return Ok(());
        };
        // Models no node carries have no symbol; they cannot match anything.
        let models: Vec<Symbol> = wanted
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .filter_map(Symbol::of)
            .collect();
        nodes.label_column(Symbol::of(&self.node_label), &mut self.column);
        for (i, value) in self.column.iter().enumerate() {
            let fits = Symbol::from_raw(*value).is_some_and(|v| models.contains(&v));
            if !fits {
                out.reject(i, self.reason);
            }
        }
        Ok(())
    }
}

filter_plugin!(GpuModel);
