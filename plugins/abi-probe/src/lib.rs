//! A test plugin, not an example: reads every node and pod fact through every accessor
//! (per-node and column forms), checks that the forms agree, and rejects each node with a
//! reason listing what it read, so the host's tests can compare it with the cluster.
//! Config: `{"label": "zone", "annotation": "note", "image": "img:1"}`.

use berth_plugin::{Filter, Nodes, Pod, Quantity, Symbol, Verdicts, filter_plugin, reason};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    label: String,
    annotation: String,
    image: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            label: "zone".into(),
            annotation: "note".into(),
            image: "img:1".into(),
        }
    }
}

struct Probe {
    config: Config,
}

impl Filter for Probe {
    type Config = Config;

    fn new(config: Config) -> Result<Self, String> {
        Ok(Probe { config })
    }

    fn filter(&mut self, pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        let (label, annotation, image) = (
            self.config.label.as_str(),
            self.config.annotation.as_str(),
            self.config.image.as_str(),
        );
        let key = Symbol::of(label);
        let labels = nodes.labels(key);
        let annotations = nodes.annotations(annotation);
        let names = nodes.names();
        let mut cpu = Vec::new();
        nodes.resources(Quantity::Allocatable, "cpu", &mut cpu);
        let mut requested = Vec::new();
        nodes.resources(Quantity::Requested, "memory", &mut requested);
        let pod_json = pod.json();
        let pod_name = pod_json["metadata"]["name"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        for i in 0..nodes.len() {
            let name = nodes.name(i);
            let json = nodes.json(i);
            let checks = [
                (names[i] == name, "names"),
                (json["metadata"]["name"] == name.as_str(), "json name"),
                (
                    key.and_then(|k| nodes.label(i, k)) == labels[i],
                    "label column",
                ),
                (
                    nodes.annotation(i, annotation) == annotations[i],
                    "annotation column",
                ),
                (nodes.allocatable(i, "cpu") == cpu[i], "cpu column"),
                (
                    nodes.requested(i, "memory") == requested[i],
                    "memory column",
                ),
                (json["podCount"] == nodes.pod_count(i), "json pod count"),
                (
                    nodes.pods(i).as_array().map_or(0, Vec::len) == nodes.pod_count(i) as usize,
                    "pods",
                ),
            ];
            if let Some((_, what)) = checks.iter().find(|(ok, _)| !ok) {
                return Err(format!("{name}: {what} disagree"));
            }
            let taints: Vec<String> = nodes
                .taints(i)
                .iter()
                .map(|t| format!("{}={}:{}", t.key, t.value, t.effect))
                .collect();
            let text = format!(
                "{name} label={} annotation={} cpu={} memory={} pods={}/{} conditions={} image={} taints=[{}] pod={} pod-annotation={} pod-cpu={}",
                labels[i].map(Symbol::text).unwrap_or_else(|| "-".into()),
                annotations[i].as_deref().unwrap_or("-"),
                cpu[i],
                requested[i],
                nodes.pod_count(i),
                nodes.allocatable(i, "pods"),
                nodes.conditions(i).0,
                nodes
                    .image_size(i, image)
                    .map_or("-".into(), |s| s.to_string()),
                taints.join(","),
                pod_name,
                pod.annotation(annotation).as_deref().unwrap_or("-"),
                pod.request("cpu"),
            );
            out.reject(i, reason(&text));
        }
        Ok(())
    }
}

filter_plugin!(Probe);

/// The same cluster and expectations as crates/berth-wasm/tests/sdk.rs
/// (`every_accessor_round_trips`), so the in-memory host answers as the wasm host does.
#[cfg(test)]
mod tests {
    use super::*;
    use berth_plugin::Conditions;
    use berth_plugin::testing::{FakeNode, FakePod, TestHost};

    #[test]
    fn every_accessor_agrees_with_the_wasm_host() {
        let host = TestHost::new()
            .config(r#"{"label": "zone", "annotation": "note", "image": "img:1"}"#)
            .nodes([
                FakeNode::new("n1")
                    .allocatable("cpu", 4000)
                    .allocatable("memory", 8 << 30)
                    .allocatable("pods", 10)
                    .label("zone", "z1")
                    .annotation("note", "hello")
                    .taint("dedicated", "gpu", "NoSchedule")
                    .image("img:1", 1234)
                    .conditions(Conditions::READY)
                    .pod(
                        FakePod::new("running")
                            .request("cpu", 500)
                            .request("memory", 1 << 30),
                    ),
                FakeNode::new("n2")
                    .allocatable("cpu", 2000)
                    .allocatable("memory", 4 << 30)
                    .allocatable("pods", 20)
                    .unschedulable(),
            ]);
        let pod = FakePod::new("new")
            .request("cpu", 250)
            .annotation("note", "from the pod");
        for chunk in [1, 2] {
            let result = host
                .clone()
                .chunk_size(chunk)
                .filter::<Probe>(&pod)
                .expect("probe");
            let pod_part = "pod=new pod-annotation=from the pod pod-cpu=250";
            assert_eq!(
                result.verdicts,
                [
                    (
                        "n1".to_string(),
                        Some(format!(
                            "n1 label=z1 annotation=hello cpu=4000 memory={} pods=1/10 conditions=1 \
                             image=1234 taints=[dedicated=gpu:NoSchedule] {pod_part}",
                            1 << 30
                        ))
                    ),
                    (
                        "n2".to_string(),
                        Some(format!(
                            "n2 label=- annotation=- cpu=2000 memory=0 pods=0/20 conditions=33 \
                             image=- taints=[] {pod_part}"
                        ))
                    ),
                ],
                "chunk {chunk}"
            );
        }
    }
}
