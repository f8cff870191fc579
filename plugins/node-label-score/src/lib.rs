//! The built-in `labelPreference` priority as a plugin, for measuring plugin cost against the
//! native rule: 100 for a node where the label key's presence equals `presence`, else 0.
//! Config: `{"label": "ssd", "presence": true}`.

use berth_plugin::{Nodes, Pod, Score, Symbol, score_plugin};

struct LabelPreference {
    label: String,
    presence: bool,
    column: Vec<u32>,
}

impl Score for LabelPreference {
    fn new(config: &str) -> Result<Self, String> {
        let config: serde_json::Value =
            serde_json::from_str(config).map_err(|e| format!("config: {e}"))?;
        Ok(LabelPreference {
            label: config["label"]
                .as_str()
                .ok_or("config.label: expected a label key")?
                .to_owned(),
            presence: config["presence"].as_bool().unwrap_or(true),
            column: Vec::new(),
        })
    }

    fn score(&mut self, _pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String> {
        nodes.label_column(Symbol::of(&self.label), &mut self.column);
        for (score, value) in scores.iter_mut().zip(&self.column) {
            *score = if (*value != 0) == self.presence {
                100
            } else {
                0
            };
        }
        Ok(())
    }
}

score_plugin!(LabelPreference);
