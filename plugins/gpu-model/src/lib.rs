//! GPU model filter: a pod lists the GPU models it can use in an annotation; nodes whose GPU
//! model label is not one of them are rejected. Pods without the annotation pass everywhere.
//!
//! Config (all optional):
//! `{"nodeLabel": "nvidia.com/gpu.product", "podAnnotation": "berth.dev/gpu-models"}`.
//! The annotation is a comma-separated list, e.g. `NVIDIA-A100-SXM4-80GB,NVIDIA-H100-80GB-HBM3`.

use berth_plugin::{Filter, Nodes, Pod, Reason, Symbol, Verdicts, filter_plugin, reason};
use serde::Deserialize;

/// The reason a node without a wanted model is rejected for.
const REASON: &str = "node(s) didn't have a requested GPU model";

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    node_label: String,
    pod_annotation: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            node_label: "nvidia.com/gpu.product".into(),
            pod_annotation: "berth.dev/gpu-models".into(),
        }
    }
}

struct GpuModel {
    node_label: String,
    pod_annotation: String,
    reason: Reason,
    column: Vec<u32>,
}

impl Filter for GpuModel {
    type Config = Config;

    fn new(config: Config) -> Result<Self, String> {
        for (field, value) in [
            ("nodeLabel", &config.node_label),
            ("podAnnotation", &config.pod_annotation),
        ] {
            if value.is_empty() {
                return Err(format!("config.{field}: expected a non-empty string"));
            }
        }
        Ok(GpuModel {
            node_label: config.node_label,
            pod_annotation: config.pod_annotation,
            reason: reason(REASON),
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_plugin::testing::{CallError, FakeNode, FakePod, TestHost};

    const A100: &str = "NVIDIA-A100-SXM4-80GB";
    const H100: &str = "NVIDIA-H100-80GB-HBM3";

    fn host(config: &str) -> TestHost {
        TestHost::new().config(config).nodes([
            FakeNode::new("a100").label("nvidia.com/gpu.product", A100),
            FakeNode::new("h100").label("nvidia.com/gpu.product", H100),
            FakeNode::new("cpu-only"),
            FakeNode::new("custom").label("gpu", H100),
        ])
    }

    #[test]
    fn nodes_pass_when_their_model_is_listed() {
        let cases: &[(&str, Option<&str>, &[&str])] = &[
            (
                "no annotation passes everywhere",
                None,
                &["a100", "h100", "cpu-only", "custom"],
            ),
            ("one model", Some(A100), &["a100"]),
            (
                "two models, spaces",
                Some(" NVIDIA-A100-SXM4-80GB , NVIDIA-H100-80GB-HBM3"),
                &["a100", "h100"],
            ),
            ("a model no node has", Some("NVIDIA-B200"), &[]),
            ("empty list", Some(""), &[]),
            (
                "empty entries ignored",
                Some(",,NVIDIA-H100-80GB-HBM3,"),
                &["h100"],
            ),
        ];
        for (name, annotation, want) in cases {
            let mut pod = FakePod::new("p");
            if let Some(a) = annotation {
                pod = pod.annotation("berth.dev/gpu-models", a);
            }
            let result = host("{}").filter::<GpuModel>(&pod).expect(name);
            assert_eq!(&result.passed(), want, "{name}");
            for (node, verdict) in &result.verdicts {
                if verdict.is_some() {
                    assert_eq!(verdict.as_deref(), Some(REASON), "{name}: {node}");
                }
            }
        }
    }

    #[test]
    fn config_names_the_label_and_annotation() {
        let pod = FakePod::new("p").annotation("models", H100);
        let result = host(r#"{"nodeLabel": "gpu", "podAnnotation": "models"}"#)
            .filter::<GpuModel>(&pod)
            .expect("filter");
        assert_eq!(result.passed(), ["custom"]);
    }

    #[test]
    fn same_answer_in_chunks() {
        let pod = FakePod::new("p").annotation("berth.dev/gpu-models", H100);
        let result = host("{}")
            .chunk_size(1)
            .filter::<GpuModel>(&pod)
            .expect("filter");
        assert_eq!(result.passed(), ["h100"]);
    }

    #[test]
    fn bad_config_is_rejected_naming_the_field() {
        let cases = [
            (
                r#"{"nodeLabel": 7}"#,
                "config.nodeLabel: invalid type: integer `7`, expected a string",
            ),
            (
                r#"{"nodeLabel": ""}"#,
                "config.nodeLabel: expected a non-empty string",
            ),
            (
                r#"{"podAnnotation": ""}"#,
                "config.podAnnotation: expected a non-empty string",
            ),
            (
                r#"{"nodeLable": "x"}"#,
                "config.nodeLable: unknown field `nodeLable`, expected `nodeLabel` or `podAnnotation`",
            ),
            (
                r#"{"nodeLabel": "x""#,
                "config: EOF while parsing an object at line 1 column 17",
            ),
            (
                "5",
                "config: invalid type: integer `5`, expected struct Config at line 1 column 1",
            ),
        ];
        for (config, want) in cases {
            let got = host(config).filter_instance::<GpuModel>().err();
            assert_eq!(got, Some(CallError::Failed(want.into())), "{config}");
        }
    }
}
