//! The built-in `labelsPresence` predicate as a plugin, for measuring plugin cost against
//! the native rule: every listed label key must be present (or, with `presence: false`,
//! absent) on the node. Config: `{"labels": ["a", "b"], "presence": true}`.

use berth_plugin::{Filter, Nodes, Pod, Reason, Symbol, Verdicts, filter_plugin, reason};
use serde::Deserialize;

/// The built-in rule's reason, so FitErrors read the same.
const REASON: &str = "node(s) didn't have the requested labels";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    labels: Vec<String>,
    #[serde(default = "present")]
    presence: bool,
}

fn present() -> bool {
    true
}

struct LabelsPresence {
    config: Config,
    reason: Reason,
    column: Vec<u32>,
}

impl Filter for LabelsPresence {
    type Config = Config;
    /// A node's verdict is its own labels' doing.
    const NODE_LOCAL: bool = true;

    fn new(config: Config) -> Result<Self, String> {
        Ok(LabelsPresence {
            config,
            reason: reason(REASON),
            column: Vec::new(),
        })
    }

    fn filter(&mut self, _pod: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
        let presence = self.config.presence;
        for label in &self.config.labels {
            let key = Symbol::of(label);
            if key.is_none() && !presence {
                // A key no object uses is on no node: absence holds everywhere.
                continue;
            }
            nodes.label_column(key, &mut self.column);
            for (i, value) in self.column.iter().enumerate() {
                if (*value != 0) != presence {
                    out.reject(i, self.reason);
                }
            }
        }
        Ok(())
    }
}

filter_plugin!(LabelsPresence);

#[cfg(test)]
mod tests {
    use super::*;
    use berth_plugin::testing::{CallError, FakeNode, FakePod, TestHost};

    #[test]
    fn every_label_must_match_presence() {
        let host = |config: &str| {
            TestHost::new().config(config).nodes([
                FakeNode::new("both").label("a", "1").label("b", ""),
                FakeNode::new("only-a").label("a", "x"),
                FakeNode::new("none"),
            ])
        };
        let cases: &[(&str, &[&str])] = &[
            (r#"{"labels": ["a"]}"#, &["both", "only-a"]),
            (r#"{"labels": ["a", "b"]}"#, &["both"]),
            (r#"{"labels": ["a", "b"], "presence": false}"#, &["none"]),
            (
                r#"{"labels": ["b"], "presence": false}"#,
                &["only-a", "none"],
            ),
            (
                r#"{"labels": ["unused"], "presence": false}"#,
                &["both", "only-a", "none"],
            ),
            (r#"{"labels": ["unused"]}"#, &[]),
            (r#"{"labels": []}"#, &["both", "only-a", "none"]),
        ];
        for (config, want) in cases {
            let result = host(config)
                .filter::<LabelsPresence>(&FakePod::new("p"))
                .expect(config);
            assert_eq!(&result.passed(), want, "{config}");
            assert!(
                result
                    .verdicts
                    .iter()
                    .all(|(_, r)| r.as_deref().is_none_or(|r| r == REASON)),
                "{config}: {result:?}"
            );
        }
    }

    #[test]
    fn bad_config_is_rejected_naming_the_field() {
        let cases = [
            ("{}", "config: missing field `labels` at line 1 column 2"),
            (
                r#"{"labels": "a"}"#,
                "config.labels: invalid type: string \"a\", expected a sequence",
            ),
            (
                r#"{"labels": ["a", 1]}"#,
                "config.labels[1]: invalid type: integer `1`, expected a string",
            ),
            (
                r#"{"labels": [], "presence": "yes"}"#,
                "config.presence: invalid type: string \"yes\", expected a boolean",
            ),
        ];
        for (config, want) in cases {
            let got = TestHost::new()
                .config(config)
                .filter_instance::<LabelsPresence>()
                .err();
            assert_eq!(got, Some(CallError::Failed(want.into())), "{config}");
        }
    }
}
