//! The built-in `labelPreference` priority as a plugin, for measuring plugin cost against the
//! native rule: 100 for a node where the label key's presence equals `presence`, else 0.
//! Config: `{"label": "ssd", "presence": true}`.

use berth_plugin::{Nodes, Pod, Score, Symbol, score_plugin};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    label: String,
    #[serde(default = "present")]
    presence: bool,
}

fn present() -> bool {
    true
}

struct LabelPreference {
    config: Config,
    column: Vec<u32>,
}

impl Score for LabelPreference {
    type Config = Config;
    /// A node's score is its own labels' doing.
    const NODE_LOCAL: bool = true;

    fn new(config: Config) -> Result<Self, String> {
        Ok(LabelPreference {
            config,
            column: Vec::new(),
        })
    }

    fn score(&mut self, _pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String> {
        nodes.label_column(Symbol::of(&self.config.label), &mut self.column);
        for (score, value) in scores.iter_mut().zip(&self.column) {
            *score = if (*value != 0) == self.config.presence {
                100
            } else {
                0
            };
        }
        Ok(())
    }
}

score_plugin!(LabelPreference);

#[cfg(test)]
mod tests {
    use super::*;
    use berth_plugin::Normalize;
    use berth_plugin::testing::{CallError, FakeNode, FakePod, TestHost};

    #[test]
    fn hundred_where_presence_matches() {
        let cases: &[(&str, [i64; 3])] = &[
            (r#"{"label": "ssd"}"#, [100, 100, 0]),
            (r#"{"label": "ssd", "presence": false}"#, [0, 0, 100]),
            (r#"{"label": "unused"}"#, [0, 0, 0]),
            (r#"{"label": "unused", "presence": false}"#, [100, 100, 100]),
        ];
        for (config, want) in cases {
            let host = TestHost::new().config(config).chunk_size(2).nodes([
                FakeNode::new("a").label("ssd", "true"),
                FakeNode::new("b").label("ssd", ""),
                FakeNode::new("c").label("hdd", "true"),
            ]);
            let result = host
                .score::<LabelPreference>(&FakePod::new("p"))
                .expect(config);
            assert_eq!(result.normalize, Normalize::None, "{config}");
            let got: Vec<i64> = result.scores.iter().map(|(_, s)| *s).collect();
            assert_eq!(&got, want, "{config}");
        }
    }

    #[test]
    fn bad_config_is_rejected_naming_the_field() {
        let cases = [
            (
                r#"{"presence": true}"#,
                "config: missing field `label` at line 1 column 18",
            ),
            (
                r#"{"label": ["ssd"]}"#,
                "config.label: invalid type: sequence, expected a string",
            ),
        ];
        for (config, want) in cases {
            let got = TestHost::new()
                .config(config)
                .score_instance::<LabelPreference>()
                .err();
            assert_eq!(got, Some(CallError::Failed(want.into())), "{config}");
        }
    }
}
