//! NodeLabelPriority (policy argument `labelPreference{label, presence}`, v1.22 NodeLabel
//! score): nodes where label keys exist (`presence: true`) or do not. Values are not looked
//! at and there is no normalisation.
//!
//! v1.22 folds every `labelPreference` entry of a policy into one plugin: a node scores
//! `100 * (keys as preferred) / (number of keys)` in integer arithmetic, and the plugin's
//! weight is the entries' common weight times their number. The registry does the same and
//! gives this rule the keys of all of them.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::Sym;
use crate::rules::label_presence::LabelKeys;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::label_presence::UPSTREAM_PLUGIN;

/// The rule.
pub struct NodeLabelPriority {
    present: Vec<String>,
    absent: Vec<String>,
}

impl NodeLabelPriority {
    /// A rule preferring nodes that have the `present` keys and lack the `absent` ones.
    pub fn new(present: Vec<String>, absent: Vec<String>) -> Self {
        NodeLabelPriority { present, absent }
    }
}

struct Score {
    /// (key, whether it is preferred present), for the keys some object uses.
    keys: Vec<(Sym, bool)>,
    /// Keys no object uses: on no node, so they count for every node when preferred absent.
    absent_everywhere: i64,
    /// The number of keys, the divisor.
    size: i64,
}

impl NodeScore for Score {
    /// Reusable across a class while the node is unchanged: The node's labels.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        let matched = self
            .keys
            .iter()
            .filter(|(k, presence)| node.labels.has(*k) == *presence)
            .count() as i64;
        (matched + self.absent_everywhere) * MAX_NODE_SCORE / self.size
    }
}

impl ScoreRule for NodeLabelPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let size = (self.present.len() + self.absent.len()) as i64;
        if size == 0 {
            return ScorePrep::Constant(0);
        }
        let keys = LabelKeys::of(ctx.cluster.interner(), &self.present, &self.absent);
        let absent_everywhere = keys.unknown_absent as i64;
        let keys = keys.known;
        if keys.is_empty() {
            return ScorePrep::Constant(absent_everywhere * MAX_NODE_SCORE / size);
        }
        ScorePrep::PerNode(Box::new(Score {
            keys,
            absent_everywhere,
            size,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn rule(entries: &[(&str, bool)]) -> NodeLabelPriority {
        let keys = |presence: bool| {
            entries
                .iter()
                .filter(|(_, p)| *p == presence)
                .map(|(l, _)| l.to_string())
                .collect()
        };
        NodeLabelPriority::new(keys(true), keys(false))
    }

    /// Upstream's TestNodeLabelScore multi-label cases: the mean over the keys, integer
    /// division once (one of three preferred keys: 33, where three separate entries give
    /// 100 + 0 + 0 over three times the weight, i.e. 33.3).
    /// (case, (key, preferred present) per entry, score).
    type Case = (&'static str, &'static [(&'static str, bool)], i64);

    #[test]
    fn several_keys_average() {
        let cases: &[Case] = &[
            (
                "two present labels match",
                &[("foo", true), ("bar", true)],
                100,
            ),
            (
                "one of two present labels matches",
                &[("foo", true), ("somelabel", true)],
                50,
            ),
            (
                "two absent labels mismatch",
                &[("foo", false), ("bar", false)],
                0,
            ),
            (
                "one of two absent labels matches",
                &[("foo", false), ("somelabel", false)],
                50,
            ),
            (
                "present and absent both as preferred",
                &[("foo", true), ("somelabel", false)],
                100,
            ),
            (
                "present and absent both not as preferred",
                &[("somelabel", true), ("foo", false)],
                0,
            ),
            (
                "one of three",
                &[("foo", true), ("x", true), ("y", true)],
                33,
            ),
            (
                "two of three",
                &[("foo", true), ("bar", true), ("y", true)],
                66,
            ),
        ];
        for (name, entries, want) in cases {
            let mut cl = cluster(
                vec![node("machine1").label("foo", "").label("bar", "").build()],
                vec![],
            );
            let got = run_score(&rule(entries), &mut cl, pod("p").build());
            assert_eq!(got[0].1, *want, "{name}");
        }
    }

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
            let got = run_score(&rule(&[(label, *presence)]), &mut cl, pod("p").build());
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
            let got: Vec<i64> = run_score(&rule(&[(label, *presence)]), &mut cl, pod("p").build())
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want.to_vec(), "{name}");
        }
    }
}
