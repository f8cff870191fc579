//! CheckNodeLabelPresence (v1.22 NodeLabel filter, policy argument `labelsPresence`): a node
//! must carry every label key of the `presence: true` entries and none of the `presence:
//! false` ones. Values are not looked at.
//!
//! v1.22 folds every `labelsPresence` entry of a policy into one NodeLabel plugin, so a node
//! failing several entries gives the reason once; the registry does the same and gives this
//! rule the keys of all of them.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::labels::{Interner, Sym};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeLabel";

/// The node has a label it must not have, or lacks one it must have.
pub const REASON: &str = "node(s) didn't have the requested labels";

/// Label keys wanted present or absent, as symbols, for the NodeLabel filter and score.
pub(crate) struct LabelKeys {
    /// (key, whether it is wanted present), for the keys some object uses.
    pub(crate) known: Vec<(Sym, bool)>,
    /// Keys wanted present that no object uses, so no node has them.
    pub(crate) unknown_present: usize,
    /// Keys wanted absent that no object uses, so every node lacks them.
    pub(crate) unknown_absent: usize,
}

impl LabelKeys {
    /// The `present` and `absent` keys looked up in the interner.
    pub(crate) fn of(interner: &Interner, present: &[String], absent: &[String]) -> Self {
        let mut keys = LabelKeys {
            known: Vec::with_capacity(present.len() + absent.len()),
            unknown_present: 0,
            unknown_absent: 0,
        };
        let wanted = present
            .iter()
            .map(|l| (l, true))
            .chain(absent.iter().map(|l| (l, false)));
        for (label, presence) in wanted {
            match interner.get(label) {
                Some(k) => keys.known.push((k, presence)),
                None if presence => keys.unknown_present += 1,
                None => keys.unknown_absent += 1,
            }
        }
        keys
    }
}

/// The rule.
pub struct CheckNodeLabelPresence {
    present: Vec<String>,
    absent: Vec<String>,
}

impl CheckNodeLabelPresence {
    /// A rule requiring the `present` keys on a node and forbidding the `absent` ones.
    pub fn new(present: Vec<String>, absent: Vec<String>) -> Self {
        CheckNodeLabelPresence { present, absent }
    }
}

struct Check {
    /// (key, whether it must be present), for the keys some object in the cluster uses; a key
    /// never interned is on no node.
    keys: Vec<(Sym, bool)>,
    /// A required key no node can carry: every node fails.
    always_fails: bool,
}

impl NodeCheck for Check {
    fn node_local(&self) -> bool {
        true
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let ok = !self.always_fails
            && self
                .keys
                .iter()
                .all(|(k, presence)| node.labels.has(*k) == *presence);
        if !ok {
            reasons.push(REASON.into());
        }
        ok
    }
}

impl FilterRule for CheckNodeLabelPresence {
    /// Upstream's NodeLabel fails as UnschedulableAndUnresolvable.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let keys = LabelKeys::of(ctx.cluster.interner(), &self.present, &self.absent);
        // An unknown key is absent from every node: it fails a presence check and satisfies
        // an absence check.
        let always_fails = keys.unknown_present > 0;
        let keys = keys.known;
        if keys.is_empty() && !always_fails {
            return FilterPrep::Skip;
        }
        FilterPrep::Check(Box::new(Check { keys, always_fails }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    /// Upstream's TestNodeLabelFilter, restated; its node carries `foo` and `bar`.
    #[test]
    fn upstream_table() {
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            ("present label does not match", &["baz"], &[], false),
            ("absent label does not match", &[], &["baz"], true),
            (
                "one of two present labels matches",
                &["foo", "baz"],
                &[],
                false,
            ),
            (
                "one of two absent labels matches",
                &[],
                &["foo", "baz"],
                false,
            ),
            ("all present labels match", &["foo", "bar"], &[], true),
            ("all absent labels match", &[], &["foo", "bar"], false),
            (
                "both present and absent label matches",
                &["foo"],
                &["bar"],
                false,
            ),
            (
                "neither present nor absent label matches",
                &["foz"],
                &["baz"],
                false,
            ),
            (
                "present label matches and absent label doesn't match",
                &["foo"],
                &["baz"],
                true,
            ),
            (
                "present label doesn't match and absent label matches",
                &["foz"],
                &["bar"],
                false,
            ),
            ("no label", &[], &[], true),
        ];
        for (name, present, absent, want_pass) in cases {
            let to_vec = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            let rule = CheckNodeLabelPresence::new(to_vec(present), to_vec(absent));
            let mut cl = cluster(
                vec![
                    node("n")
                        .label("foo", "any value")
                        .label("bar", "any value")
                        .build(),
                ],
                vec![],
            );
            let got = run_filter(&rule, &mut cl, pod("p").build());
            let reasons = &got[0].1;
            assert!(
                reasons.is_empty() || reasons == &vec![REASON.to_string()],
                "{name}: {reasons:?}"
            );
            let pass = reasons.is_empty();
            assert_eq!(pass, *want_pass, "{name}");
        }
    }

    #[test]
    fn edge_cases() {
        let nodes = || {
            vec![
                node("a")
                    .label("retiring", "2024-01-01")
                    .label("zone", "")
                    .build(),
                node("b").label("zone", "z1").build(),
                node("c").build(),
            ]
        };
        let cases: Vec<(&str, Vec<&str>, bool, Vec<&str>)> = vec![
            (
                "an empty value still counts as present",
                vec!["zone"],
                true,
                vec!["a", "b"],
            ),
            (
                "absence excludes any value",
                vec!["retiring"],
                false,
                vec!["b", "c"],
            ),
            (
                "a key no object uses fails presence everywhere",
                vec!["never-seen"],
                true,
                vec![],
            ),
            (
                "a key no object uses passes absence everywhere",
                vec!["never-seen"],
                false,
                vec!["a", "b", "c"],
            ),
            ("a value is not a key", vec!["z1"], true, vec![]),
            ("empty list passes", vec![], true, vec!["a", "b", "c"]),
        ];
        for (name, labels, presence, want) in cases {
            let labels: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
            let rule = if presence {
                CheckNodeLabelPresence::new(labels, Vec::new())
            } else {
                CheckNodeLabelPresence::new(Vec::new(), labels)
            };
            let mut cl = cluster(nodes(), vec![]);
            let got = run_filter(&rule, &mut cl, pod("p").build());
            assert_eq!(passing(&got), want, "{name}");
        }
    }
}
