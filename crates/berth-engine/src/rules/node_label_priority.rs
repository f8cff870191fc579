//! NodeLabelPriority (policy argument `labelPreference{label, presence}`, v1.22 NodeLabel
//! score): 100 for a node where the label key's existence equals `presence`, else 0. Values
//! are not looked at and there is no normalisation.
//!
//! Upstream folds every `labelPreference` entry into one plugin that averages them; here
//! each entry is its own rule, and the registry combines them.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, ScorePrep, ScoreRule};
use crate::labels::Sym;

/// The rule.
pub struct NodeLabelPriority {
    label: String,
    presence: bool,
}

impl NodeLabelPriority {
    /// A rule preferring nodes that have (`presence`) or lack the label key.
    pub fn new(label: String, presence: bool) -> Self {
        NodeLabelPriority { label, presence }
    }

    fn score_for(&self, exists: bool) -> i64 {
        if exists == self.presence {
            MAX_NODE_SCORE
        } else {
            0
        }
    }
}

struct Score<'a> {
    rule: &'a NodeLabelPriority,
    key: Sym,
}

impl NodeScore for Score<'_> {
    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.rule.score_for(node.labels.has(self.key))
    }
}

impl ScoreRule for NodeLabelPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        match ctx.cluster.interner.get(&self.label) {
            Some(key) => ScorePrep::PerNode(Box::new(Score { rule: self, key })),
            // A key no object uses is on no node.
            None => ScorePrep::Constant(self.score_for(false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    /// Upstream's TestNodeLabelScore single-label cases; its node carries `foo` and `bar`
    /// with empty values.
    #[test]
    fn upstream_table() {
        let cases: &[(&str, &str, bool, i64)] = &[
            ("one present label match", "foo", true, 100),
            ("one present label mismatch", "somelabel", true, 0),
            ("one absent label match", "foo", false, 0),
            ("one absent label mismatch", "somelabel", false, 100),
        ];
        for (name, label, presence, want) in cases {
            let mut cl = cluster(
                vec![node("machine1").label("foo", "").label("bar", "").build()],
                vec![],
            );
            let got = run_score(
                &NodeLabelPriority::new(label.to_string(), *presence),
                &mut cl,
                pod("p").build(),
            );
            assert_eq!(got[0].1, *want, "{name}");
        }
    }

    #[test]
    fn per_node() {
        let cases: &[(&str, &str, bool, [i64; 3])] = &[
            ("presence", "ssd", true, [100, 0, 0]),
            ("absence", "ssd", false, [0, 100, 100]),
            ("a value is not a key", "yes", true, [0, 0, 0]),
            ("a key no object uses, presence", "gpu", true, [0, 0, 0]),
            (
                "a key no object uses, absence",
                "gpu",
                false,
                [100, 100, 100],
            ),
        ];
        for (name, label, presence, want) in cases {
            let mut cl = cluster(
                vec![
                    node("a").label("ssd", "yes").build(),
                    node("b").build(),
                    node("c").label("hdd", "").build(),
                ],
                vec![],
            );
            let got: Vec<i64> = run_score(
                &NodeLabelPriority::new(label.to_string(), *presence),
                &mut cl,
                pod("p").build(),
            )
            .into_iter()
            .map(|(_, s)| s)
            .collect();
            assert_eq!(got, want.to_vec(), "{name}");
        }
    }
}
