//! The built-in `labelsPresence` predicate as a plugin, for measuring plugin cost against
//! the native rule: every listed label key must be present (or, with `presence: false`,
//! absent) on the node. Config: `{"labels": ["a", "b"], "presence": true}`.

use berth_plugin::{Filter, Nodes, Pod, Reason, Symbol, Verdicts, filter_plugin, reason};

/// The built-in rule's reason, so FitErrors read the same.
const REASON: &str = "node(s) didn't have the requested labels";

struct LabelsPresence {
    labels: Vec<String>,
    presence: bool,
    reason: Reason,
    column: Vec<u32>,
}

impl Filter for LabelsPresence {
    fn new(config: &str) -> Result<Self, String> {
        let config: serde_json::Value =
            serde_json::from_str(config).map_err(|e| format!("config: {e}"))?;
        let labels = config["labels"]
            .as_array()
            .ok_or("config.labels: expected a list of label keys")?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or("config.labels: expected strings")
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LabelsPresence {
            labels,
            presence: config["presence"].as_bool().unwrap_or(true),
            reason: reason(REASON),
            column: Vec::new(),
        })
    }

    fn filter(&mut self, _pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        for label in &self.labels {
            let key = Symbol::of(label);
            if key.is_none() && !self.presence {
                // A key no object uses is on no node: absence holds everywhere.
                continue;
            }
            nodes.label_column(key, &mut self.column);
            for (i, value) in self.column.iter().enumerate() {
                if (*value != 0) != self.presence {
                    out.reject(i, self.reason);
                }
            }
        }
        Ok(())
    }
}

filter_plugin!(LabelsPresence);
