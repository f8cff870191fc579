//! ServiceAntiAffinity (policy argument `serviceAntiAffinity{label}`, v1.22 ServiceAffinity
//! score): spread a service's pods across the values of node labels.
//!
//! v1.22 folds every `serviceAntiAffinity` entry of a policy into one plugin over all their
//! labels (weight: the entries' common weight times their number); the registry does the same
//! and gives this rule the labels.
//!
//! The raw score of a node is the number of non-terminating pods of the pod's namespace on it
//! that match the selector of the first Service selecting the pod (first in the order the
//! cluster received the Services; upstream takes the lister's order, which is unspecified).
//! Without such a Service, or with an empty selector, every raw score is 0. Normalisation over
//! the feasible nodes, per label: with `N` the sum of raw scores over all of them and `c` the
//! sum over those sharing this node's label value, a node gets `100 * (N - c) / N` (100 when
//! `N` is 0), nothing when it lacks the label; each label's share is divided by the number of
//! labels and summed in float arithmetic, then truncated once.

use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::Sym;
use crate::model::SelectorKind;
use crate::rules::domain_rows::{DomainRows, Domains};
use crate::rules::selector_spread::count_per_node;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::service_affinity::UPSTREAM_PLUGIN;

/// The rule.
pub struct ServiceAntiAffinity {
    labels: Vec<String>,
    /// The feasible nodes' values of each label, kept for the next pod's cycle over the
    /// same nodes.
    rows: DomainRows,
}

impl ServiceAntiAffinity {
    /// A rule spreading service pods across the values of each of `labels` (one per policy
    /// entry, in file order).
    pub fn new(labels: Vec<String>) -> Self {
        ServiceAntiAffinity {
            labels,
            rows: DomainRows::default(),
        }
    }
}

struct Score<'a> {
    cluster: &'a Cluster,
    rows: &'a DomainRows,
    /// The labels that some object uses; a label no object uses is on no node and adds
    /// nothing, but still counts in `labels`.
    keys: Vec<Sym>,
    /// The number of labels, the divisor of each label's share.
    labels: usize,
    /// Matching pods per node (indexed by `NodeId.0`); None when nothing can match.
    counts: Option<Vec<u32>>,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: The matching pods on the node itself (label values are summed while normalising).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        self.counts
            .as_ref()
            .and_then(|c| c.get(node.id.0 as usize))
            .copied()
            .map_or(0, i64::from)
    }

    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let total: i64 = scores.iter().sum();
        if let [key] = self.keys.as_slice() {
            // One label (the usual policy entry): a node's score is its value's share, so
            // each value's is converted once and the nodes read it.
            let domains = self.rows.of(self.cluster, *key, nodes);
            let finals: Vec<i64> = self
                .shares(&domains, scores, total)
                .into_iter()
                .map(|share| (0f64 + share) as i64)
                .collect();
            for (row, s) in domains.of.iter().zip(scores.iter_mut()) {
                *s = finals.get(*row as usize).copied().unwrap_or(0);
            }
            return;
        }
        let mut result = vec![0f64; nodes.len()];
        for key in &self.keys {
            // Each node's row in the table of the key's values: kept across a class's
            // cycles over the same nodes (see [`DomainRows`]).
            let domains = self.rows.of(self.cluster, *key, nodes);
            let shares = self.shares(&domains, scores, total);
            for (row, r) in domains.of.iter().zip(result.iter_mut()) {
                if let Some(share) = shares.get(*row as usize) {
                    *r += *share;
                }
            }
        }
        for (s, r) in scores.iter_mut().zip(result) {
            *s = r as i64;
        }
    }
}

impl Score<'_> {
    /// Each value's share of the score: 100 times the fraction of the service's pods on
    /// nodes with another value (100 when none runs), over the number of labels.
    fn shares(&self, domains: &Domains, scores: &[i64], total: i64) -> Vec<f64> {
        let max = MAX_NODE_SCORE as f64;
        let mut by_value: Vec<i64> = vec![0; domains.values.len()];
        for (row, s) in domains.of.iter().zip(scores) {
            if let Some(here) = by_value.get_mut(*row as usize) {
                *here += *s;
            }
        }
        by_value
            .iter()
            .map(|here| {
                let share = if total <= 0 {
                    max
                } else {
                    max * ((total - here) as f64 / total as f64)
                };
                share / self.labels as f64
            })
            .collect()
    }
}

impl ScoreRule for ServiceAntiAffinity {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let cluster = ctx.cluster;
        let keys: Vec<Sym> = self
            .labels
            .iter()
            .filter_map(|l| cluster.interner().get(l))
            .collect();
        // Labels no object uses are on no node: every node scores 0.
        if keys.is_empty() {
            return ScorePrep::Constant(0);
        }
        let selector = cluster
            .selecting(ctx.pod, Some(SelectorKind::Service))
            .next()
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty());
        let counts = selector
            .map(|s| count_per_node(cluster, ctx.pod.namespace, &[s]))
            .filter(|(_, total, _)| *total > 0)
            .map(|(counts, _, _)| counts);
        ScorePrep::PerNode(Box::new(Score {
            cluster,
            rows: &self.rows,
            keys,
            labels: self.labels.len(),
            counts,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pod, PodSelector};
    use crate::testkit::*;

    fn service(ns: &str, name: &str, sel: &[(&str, &str)]) -> PodSelector {
        selector_object(SelectorKind::Service, ns, name, sel)
    }

    const LABELS1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
    const LABELS2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];
    const NAMES: [&str; 6] = [
        "machine11",
        "machine12",
        "machine21",
        "machine22",
        "machine01",
        "machine02",
    ];

    /// Upstream's labeledNodes: zone1 and zone2 with two machines each, two unzoned machines.
    /// With `racks`, the nodesWithZoneAndRackLabels variant.
    fn nodes(racks: bool) -> Vec<crate::model::Node> {
        let rack = |n: &str| match n {
            "machine12" => Some("rack2"),
            "machine11" | "machine21" | "machine22" => Some("rack1"),
            _ => None,
        };
        NAMES
            .iter()
            .map(|n| {
                let b = node(n);
                let b = match &n[7..8] {
                    "1" => b.label("zone", "zone1"),
                    "2" => b.label("zone", "zone2"),
                    _ => b.label("name", "value"),
                };
                match rack(n).filter(|_| racks) {
                    Some(r) => b.label("rack", r).build(),
                    None => b.build(),
                }
            })
            .collect()
    }

    struct Case {
        name: &'static str,
        pod: Pod,
        pods: Vec<Pod>,
        services: Vec<PodSelector>,
        want: [i64; 6],
    }

    fn run(label: &str, racks: bool, cases: Vec<Case>) {
        for c in cases {
            let mut cl = cluster(nodes(racks), c.pods);
            for s in &c.services {
                cl.upsert_selector_object(s);
            }
            let labels = label.split(',').map(str::to_string).collect();
            let got = run_score(&ServiceAntiAffinity::new(labels), &mut cl, c.pod);
            let want: Vec<(String, i64)> =
                NAMES.iter().map(|n| n.to_string()).zip(c.want).collect();
            let mut got_sorted = got.clone();
            got_sorted.sort_by_key(|(n, _)| NAMES.iter().position(|m| m == n));
            assert_eq!(got_sorted, want, "{}", c.name);
        }
    }

    /// Upstream's TestServiceAffinityScore (single-label cases), restated. Scores are in the
    /// order machine11, machine12, machine21, machine22, machine01, machine02.
    #[test]
    fn upstream_table() {
        let on = |name: &str, labels: &[(&str, &str)], node: &str| {
            labelled(name, labels).on(node).build()
        };
        let svc = |sel: &[(&str, &str)]| vec![service("default", "s", sel)];
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: pod("p").build(),
                pods: vec![],
                services: vec![],
                want: [100, 100, 100, 100, 0, 0],
            },
            Case {
                name: "no services",
                pod: labelled("p", LABELS1).build(),
                pods: vec![pod("e").on("machine11").build()],
                services: vec![],
                want: [100, 100, 100, 100, 0, 0],
            },
            Case {
                name: "different services",
                pod: labelled("p", LABELS1).build(),
                pods: vec![on("e", LABELS2, "machine11")],
                services: svc(&[("key", "value")]),
                want: [100, 100, 100, 100, 0, 0],
            },
            Case {
                name: "three pods, one service pod",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    on("e1", LABELS2, "machine01"),
                    on("e2", LABELS2, "machine11"),
                    on("e3", LABELS1, "machine21"),
                ],
                services: svc(LABELS1),
                want: [100, 100, 0, 0, 0, 0],
            },
            Case {
                name: "three pods, two service pods on different machines",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    on("e1", LABELS2, "machine11"),
                    on("e2", LABELS1, "machine11"),
                    on("e3", LABELS1, "machine21"),
                ],
                services: svc(LABELS1),
                want: [50, 50, 50, 50, 0, 0],
            },
            Case {
                name: "three service label match pods in different namespaces",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    labelled("e1", LABELS1).ns("other").on("machine11").build(),
                    on("e2", LABELS1, "machine11"),
                    labelled("e3", LABELS1).ns("other").on("machine21").build(),
                    labelled("e4", LABELS1).ns("ns1").on("machine21").build(),
                ],
                services: svc(LABELS1),
                want: [0, 0, 100, 100, 0, 0],
            },
            Case {
                name: "four pods, three service pods",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    on("e1", LABELS2, "machine11"),
                    on("e2", LABELS1, "machine11"),
                    on("e3", LABELS1, "machine21"),
                    on("e4", LABELS1, "machine21"),
                ],
                services: svc(LABELS1),
                want: [66, 66, 33, 33, 0, 0],
            },
            Case {
                name: "service with partial pod label matches",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    on("e1", LABELS2, "machine11"),
                    on("e2", LABELS1, "machine11"),
                    on("e3", LABELS1, "machine21"),
                ],
                services: svc(&[("baz", "blah")]),
                want: [33, 33, 66, 66, 0, 0],
            },
            Case {
                name: "service pod on non-zoned node",
                pod: labelled("p", LABELS1).build(),
                pods: vec![
                    on("e1", LABELS1, "machine01"),
                    on("e2", LABELS1, "machine11"),
                    on("e3", LABELS1, "machine21"),
                    on("e4", LABELS1, "machine21"),
                ],
                services: svc(LABELS1),
                want: [75, 75, 50, 50, 0, 0],
            },
        ];
        run("zone", false, cases);
    }

    /// Upstream's two-label case ("three pods, two service pods, with rack label"): the
    /// per-label scores (zone [50, 50, 50, 50, 0, 0], rack [0, 100, 0, 0, 0, 0]) averaged.
    #[test]
    fn upstream_two_label_case() {
        let on = |name: &str, labels: &[(&str, &str)], node: &str| {
            labelled(name, labels).on(node).build()
        };
        let case = |want| Case {
            name: "three pods, two service pods, with rack label",
            pod: labelled("p", LABELS1).build(),
            pods: vec![
                on("e1", LABELS2, "machine01"),
                on("e2", LABELS1, "machine11"),
                on("e3", LABELS1, "machine21"),
            ],
            services: vec![service("default", "s", LABELS1)],
            want,
        };
        run("zone", true, vec![case([50, 50, 50, 50, 0, 0])]);
        run("rack", true, vec![case([0, 100, 0, 0, 0, 0])]);
        run("zone,rack", true, vec![case([25, 75, 25, 25, 0, 0])]);
    }

    /// Shares add up in float and truncate once: each node gets 50 from labels x and y and
    /// nothing from z, which no node has; 50/3 + 50/3 = 33.3 gives 33 (truncating each
    /// share first would give 32).
    #[test]
    fn shares_truncate_once() {
        let web: &[(&str, &str)] = &[("app", "web")];
        let mut cl = cluster(
            vec![
                node("a").label("x", "1").label("y", "1").build(),
                node("b").label("x", "2").label("y", "2").build(),
            ],
            vec![
                labelled("e1", web).on("a").build(),
                labelled("e2", web).on("b").build(),
            ],
        );
        cl.upsert_selector_object(&service("default", "s", web));
        let rule = ServiceAntiAffinity::new(vec!["x".into(), "y".into(), "z".into()]);
        let mut got = run_score(&rule, &mut cl, labelled("p", web).build());
        got.sort();
        assert_eq!(got, vec![("a".to_string(), 33), ("b".to_string(), 33)]);
    }

    #[test]
    fn edge_cases() {
        let web: &[(&str, &str)] = &[("app", "web")];
        let on = |name: &str, node: &str| labelled(name, web).on(node).build();
        let cases = vec![
            Case {
                name: "terminating pods do not count",
                pod: labelled("p", web).build(),
                pods: vec![
                    labelled("e1", web).terminating().on("machine11").build(),
                    on("e2", "machine21"),
                ],
                services: vec![service("default", "s", web)],
                want: [100, 100, 0, 0, 0, 0],
            },
            Case {
                name: "the first service decides",
                pod: labelled("p", web).label("tier", "front").build(),
                pods: vec![
                    on("e1", "machine11"),
                    labelled("e2", &[("tier", "front")]).on("machine21").build(),
                ],
                services: vec![
                    service("default", "s1", &[("tier", "front")]),
                    service("default", "s2", web),
                ],
                want: [100, 100, 0, 0, 0, 0],
            },
            Case {
                name: "a service in another namespace does not apply",
                pod: labelled("p", web).build(),
                pods: vec![on("e1", "machine11")],
                services: vec![service("other", "s", web)],
                want: [100, 100, 100, 100, 0, 0],
            },
            Case {
                name: "a service with an empty selector counts nothing",
                pod: labelled("p", web).build(),
                pods: vec![on("e1", "machine11")],
                services: vec![service("default", "s", &[])],
                want: [100, 100, 100, 100, 0, 0],
            },
        ];
        run("zone", false, cases);
    }

    #[test]
    fn unknown_label_scores_zero() {
        let mut cl = cluster(nodes(false), vec![]);
        let got = run_score(
            &ServiceAntiAffinity::new(vec!["never-seen".into()]),
            &mut cl,
            pod("p").build(),
        );
        assert!(got.iter().all(|(_, s)| *s == 0));
    }

    /// Only the feasible nodes count towards N and the per-value sums.
    #[test]
    fn normalises_over_feasible_nodes() {
        let web: &[(&str, &str)] = &[("app", "web")];
        let mut cl = cluster(
            nodes(false),
            vec![
                labelled("e1", web).on("machine11").build(),
                labelled("e2", web).on("machine22").build(),
            ],
        );
        cl.upsert_selector_object(&service("default", "s", web));
        let feasible: Vec<NodeId> = ["machine12", "machine22"]
            .iter()
            .filter_map(|n| cl.node_by_name(n))
            .collect();
        let got = run_score_on(
            &ServiceAntiAffinity::new(vec!["zone".into()]),
            &mut cl,
            labelled("p", web).build(),
            &feasible,
        );
        assert_eq!(
            got,
            vec![("machine12".to_string(), 100), ("machine22".to_string(), 0)]
        );
    }
}
