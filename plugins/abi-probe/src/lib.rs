//! A test plugin, not an example: reads every node and pod fact through every accessor
//! (per-node and column forms), checks that the forms agree, and rejects each node with a
//! reason listing what it read, so the host's tests can compare it with the cluster.
//! Config: `{"label": "zone", "annotation": "note", "image": "img:1"}`.

use berth_plugin::{Filter, Nodes, Pod, Quantity, Symbol, Verdicts, filter_plugin, reason};

struct Probe {
    config: serde_json::Value,
}

impl Filter for Probe {
    fn new(config: &str) -> Result<Self, String> {
        Ok(Probe {
            config: serde_json::from_str(config).map_err(|e| e.to_string())?,
        })
    }

    fn filter(&mut self, pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        let label = self.config["label"].as_str().unwrap_or("zone");
        let annotation = self.config["annotation"].as_str().unwrap_or("note");
        let image = self.config["image"].as_str().unwrap_or("img:1");
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
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    format!(
                        "{}={}:{}",
                        t["key"].as_str().unwrap_or(""),
                        t["value"].as_str().unwrap_or(""),
                        t["effect"].as_str().unwrap_or("")
                    )
                })
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
