//! InterPodAffinityPriority (v1.22 InterPodAffinity score): per topology domain (key, value),
//! the weights of the pod's preferred affinity terms (+) and preferred anti-affinity terms (-)
//! matched by running pods there, plus the running pods' terms that select the pod: required
//! affinity (+hardPodAffinityWeight, when > 0), preferred affinity (+weight) and preferred
//! anti-affinity (-weight). A node scores the sum over the domains it lies in; scores are
//! scaled min-max over the feasible nodes.
//!
//! Running pods' terms are found through the cluster's term index (by the labels they select)
//! rather than by scanning every pod with affinity, and the pod's own preferred terms through
//! the label index.

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId, NodeInfo, TermKind};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::{Labels, Sym};
use crate::podinfo::{AffinityTerm, PodInfo};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::inter_pod_affinity::UPSTREAM_PLUGIN;

/// The rule.
pub struct InterPodAffinityPriority {
    hard_pod_affinity_weight: i32,
}

impl InterPodAffinityPriority {
    /// The rule with the policy's `hardPodAffinitySymmetricWeight` (the policy crate turns an
    /// unset or zero value into upstream's default, 1).
    pub fn new(hard_pod_affinity_weight: i32) -> Self {
        InterPodAffinityPriority {
            hard_pod_affinity_weight,
        }
    }
}

/// Weights per topology domain, with the distinct keys so a node costs a lookup per key.
#[derive(Debug, Default)]
struct DomainScores {
    keys: Vec<Sym>,
    by_domain: FxHashMap<(Sym, Sym), i64>,
}

impl DomainScores {
    /// Adds `weight` to the domain of the node running `pod`, if that node has `key`.
    fn add(&mut self, cluster: &Cluster, pod: &PodInfo, key: Sym, weight: i64) {
        let Some(value) = pod.node.and_then(|n| cluster.node(n).labels.get(key)) else {
            return;
        };
        *self.by_domain.entry((key, value)).or_insert(0) += weight;
        if !self.keys.contains(&key) {
            self.keys.push(key);
        }
    }

    /// Adds the pod's own preferred `terms`, `sign` times their weight, for each running pod
    /// they select.
    fn add_own_terms(&mut self, cluster: &Cluster, terms: &[AffinityTerm], sign: i64) {
        for t in terms {
            let Some(selector) = &t.selector else {
                continue;
            };
            for id in cluster.matching_pods(&t.namespaces, selector) {
                self.add(
                    cluster,
                    cluster.pod(id),
                    t.topology_key,
                    sign * i64::from(t.weight),
                );
            }
        }
    }
}

struct Score {
    scores: DomainScores,
    /// The topology keys of the pod's own preferred terms, sorted.
    own_keys: Vec<Sym>,
}

impl NodeScore for Score {
    /// Reusable across a class while the pods in the node's domains of the pod's own term
    /// keys stay (running pods' terms reach the domains of their own keys, which the
    /// cluster's change log names when those pods come or go).
    fn reuse(&self) -> Reuse {
        Reuse::While {
            keys: self.own_keys.clone(),
            summary: 0,
        }
    }

    fn score(&self, node: &NodeInfo) -> i64 {
        self.scores
            .keys
            .iter()
            .filter_map(|k| {
                let v = node.labels.get(*k)?;
                self.scores.by_domain.get(&(*k, v))
            })
            .sum()
    }

    /// Min-max scaling over the feasible nodes. Since v1.21 (PR #98096) the minimum and
    /// maximum are the true ones, not clamped to include 0. The arithmetic is upstream's,
    /// in floating point and truncated, so ratios such as 0.29 give 28 as upstream does.
    fn normalize(&self, _nodes: &[NodeId], scores: &mut [i64]) {
        let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
            return;
        };
        let diff = max - min;
        for s in scores.iter_mut() {
            *s = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
    }
}

impl ScoreRule for InterPodAffinityPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let mut scores = DomainScores::default();
        scores.add_own_terms(cluster, &pod.affinity.preferred, 1);
        scores.add_own_terms(cluster, &pod.affinity.anti_preferred, -1);
        let index = cluster.scoring_affinity_terms();
        if !index.is_empty() {
            let no_labels = Labels::default();
            let namespace_labels = cluster
                .namespace_labels(pod.namespace)
                .unwrap_or(&no_labels);
            for r in index.candidates(&pod.labels) {
                let Some(term) = cluster.term(r) else {
                    continue;
                };
                let weight = match r.kind {
                    TermKind::Required if self.hard_pod_affinity_weight > 0 => {
                        self.hard_pod_affinity_weight
                    }
                    TermKind::Preferred => term.weight,
                    TermKind::AntiPreferred => -term.weight,
                    TermKind::Required | TermKind::AntiRequired => continue,
                };
                if term.matches_in(pod, namespace_labels) {
                    scores.add(
                        cluster,
                        cluster.pod(r.pod),
                        term.topology_key,
                        i64::from(weight),
                    );
                }
            }
        }
        // With every domain at 0 every node scores 0 and normalises to 0, as upstream's
        // all-equal case does.
        if scores.by_domain.values().all(|v| *v == 0) {
            return ScorePrep::Constant(0);
        }
        let mut own_keys: Vec<Sym> = pod
            .affinity
            .preferred
            .iter()
            .chain(&pod.affinity.anti_preferred)
            .map(|t| t.topology_key)
            .collect();
        own_keys.sort_unstable();
        own_keys.dedup();
        ScorePrep::PerNode(Box::new(Score { scores, own_keys }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelSelector;
    use crate::labels::Operator::*;
    use crate::model::{Affinity, Node, Pod, PodAffinityTerm, WeightedPodAffinityTerm};
    use crate::testkit::*;

    /// Name, nodes, running pods, the pod, scores.
    type ScoreCase = (&'static str, Vec<Node>, Vec<Pod>, Pod, Vec<i64>);

    fn china(n: &str) -> Node {
        node(n).label("region", "China").build()
    }
    fn india(n: &str) -> Node {
        node(n).label("region", "India").build()
    }
    fn az(n: &str, z: &str) -> Node {
        node(n).label("az", z).build()
    }
    fn china_az1(n: &str) -> Node {
        node(n).label("region", "China").label("az", "az1").build()
    }

    fn sec(name: &str, s: &str) -> PodBuilder {
        pod(name).label("security", s)
    }

    fn weighted(weight: i32, term: PodAffinityTerm) -> WeightedPodAffinityTerm {
        WeightedPodAffinityTerm { weight, term }
    }

    /// Upstream's `stayWithS1InRegionAwayFromS2InAz`.
    fn with_s1_away_from_s2() -> Affinity {
        Affinity {
            pod_preferred: vec![weighted(8, term("region", &[("security", "S1")]))],
            anti_preferred: vec![weighted(5, term("az", &[("security", "S2")]))],
            ..Affinity::default()
        }
    }

    /// Upstream's `affinity3`: two terms with different operators.
    fn affinity3() -> Affinity {
        let t = |reqs: Vec<crate::labels::Requirement>| PodAffinityTerm {
            label_selector: Some(LabelSelector { requirements: reqs }),
            topology_key: "region".into(),
            ..PodAffinityTerm::default()
        };
        Affinity {
            pod_preferred: vec![
                weighted(
                    8,
                    t(vec![
                        req("security", NotIn, &["S1"]),
                        req("security", In, &["S2"]),
                    ]),
                ),
                weighted(
                    2,
                    t(vec![
                        req("security", Exists, &[]),
                        req("wrongkey", DoesNotExist, &[]),
                    ]),
                ),
            ],
            ..Affinity::default()
        }
    }

    /// Upstream's `hardAffinity`.
    fn hard_affinity() -> Affinity {
        Affinity {
            pod_required: vec![
                PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        requirements: vec![req("security", In, &["S1", "value2"])],
                    }),
                    ..term("region", &[])
                },
                PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        requirements: vec![
                            req("security", Exists, &[]),
                            req("wrongkey", DoesNotExist, &[]),
                        ],
                    }),
                    ..term("region", &[])
                },
            ],
            ..Affinity::default()
        }
    }

    /// A preferred term over S1 in region, looking in `subteam2.team2` and team1 namespaces.
    fn s1_in_team1(anti: bool) -> Affinity {
        let t = weighted(
            5,
            PodAffinityTerm {
                namespaces: vec!["subteam2.team2".into()],
                namespace_selector: Some(selector(&[("team", "team1")])),
                ..term("region", &[("security", "S1")])
            },
        );
        if anti {
            Affinity {
                anti_preferred: vec![t],
                ..Affinity::default()
            }
        } else {
            Affinity {
                pod_preferred: vec![t],
                ..Affinity::default()
            }
        }
    }

    fn set(a: Affinity) -> impl FnOnce(&mut Pod) {
        move |p| p.affinity = a
    }

    fn scores(
        rule: &InterPodAffinityPriority,
        nodes: Vec<Node>,
        pods: Vec<Pod>,
        incoming: Pod,
    ) -> Vec<i64> {
        let mut cl = cluster(nodes, vec![]);
        for (name, team) in [
            ("subteam1.team1", "team1"),
            ("subteam2.team1", "team1"),
            ("subteam1.team2", "team2"),
            ("subteam2.team2", "team2"),
        ] {
            cl.upsert_namespace(&namespace(name, &[("team", team)]));
        }
        for p in pods {
            cl.add_pod(p).expect("test pod");
        }
        run_score(rule, &mut cl, incoming)
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    }

    /// Upstream's TestPreferredAffinity, restated (v1.21+ expectations: true min-max).
    #[test]
    fn preferred_affinity_table() {
        let stay_s1 = || Affinity {
            pod_preferred: vec![weighted(5, term("region", &[("security", "S1")]))],
            ..Affinity::default()
        };
        let stay_s2 = || Affinity {
            pod_preferred: vec![weighted(6, term("region", &[("security", "S2")]))],
            ..Affinity::default()
        };
        let away_s1 = || Affinity {
            anti_preferred: vec![weighted(5, term("az", &[("security", "S1")]))],
            ..Affinity::default()
        };
        let away_s2 = || Affinity {
            anti_preferred: vec![weighted(5, term("az", &[("security", "S2")]))],
            ..Affinity::default()
        };
        let cases: Vec<ScoreCase> = vec![
            (
                "no affinity anywhere",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![],
                sec("p", "S1").build(),
                vec![0, 0, 0],
            ),
            (
                "matching pods in the node's region score high, a node without the key does not",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S2").on("n2").build(),
                    sec("c", "S1").on("n3").build(),
                ],
                sec("p", "S1").with(set(stay_s1())).build(),
                vec![100, 0, 0],
            ),
            (
                "every node of the matching region scores the same",
                vec![china("n1"), china_az1("n2"), india("n3")],
                vec![sec("a", "S1").on("n1").build()],
                pod("p").with(set(stay_s1())).build(),
                vec![100, 100, 0],
            ),
            (
                "the region with more matches wins; the other gets 0 (true minimum)",
                vec![
                    china("n1"),
                    india("n2"),
                    china("n3"),
                    china("n4"),
                    india("n5"),
                ],
                vec![
                    sec("a", "S2").on("n1").build(),
                    sec("b", "S2").on("n1").build(),
                    sec("c", "S2").on("n2").build(),
                    sec("d", "S2").on("n3").build(),
                    sec("e", "S2").on("n4").build(),
                    sec("f", "S2").on("n5").build(),
                ],
                sec("p", "S1").with(set(stay_s2())).build(),
                vec![100, 0, 100, 100, 0],
            ),
            (
                "different operators, some terms failing",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S2").on("n2").build(),
                    sec("c", "S1").on("n3").build(),
                ],
                sec("p", "S1").with(set(affinity3())).build(),
                vec![20, 100, 0],
            ),
            (
                "symmetry: running pods' preferred affinity selecting the pod",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1").on("n1").with(set(stay_s1())).build(),
                    sec("b", "S2").on("n2").with(set(stay_s2())).build(),
                ],
                sec("p", "S2").build(),
                vec![0, 100, 0],
            ),
            (
                "symmetry with a namespace selector",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1")
                        .on("n1")
                        .with(set(s1_in_team1(false)))
                        .build(),
                    sec("b", "S2").on("n2").with(set(stay_s2())).build(),
                ],
                sec("p", "S1").ns("subteam1.team1").build(),
                vec![100, 0, 0],
            ),
            (
                "anti-affinity symmetry with a namespace selector",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1").on("n1").with(set(s1_in_team1(true))).build(),
                    sec("b", "S2").on("n2").with(set(stay_s2())).build(),
                ],
                sec("p", "S1").ns("subteam1.team1").build(),
                vec![0, 100, 100],
            ),
            (
                "symmetry: running pods' required affinity counts hardPodAffinityWeight",
                vec![china("n1"), india("n2"), az("n3", "az1")],
                vec![
                    sec("a", "S1").on("n1").with(set(hard_affinity())).build(),
                    sec("b", "S2").on("n2").with(set(hard_affinity())).build(),
                ],
                sec("p", "S1").build(),
                vec![100, 100, 0],
            ),
            (
                "anti-affinity: the node without a matching pod scores high",
                vec![az("n1", "az1"), china("n2")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S2").on("n2").build(),
                ],
                sec("p", "S1").with(set(away_s1())).build(),
                vec![0, 100],
            ),
            (
                "anti-affinity: a node without the key scores high",
                vec![az("n1", "az1"), china("n2")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S1").on("n2").build(),
                ],
                sec("p", "S1").with(set(away_s1())).build(),
                vec![0, 100],
            ),
            (
                "anti-affinity: more matches score lower",
                vec![az("n1", "az1"), india("n2")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S1").on("n1").build(),
                    sec("c", "S2").on("n2").build(),
                ],
                sec("p", "S1").with(set(away_s1())).build(),
                vec![0, 100],
            ),
            (
                "anti-affinity symmetry",
                vec![az("n1", "az1"), az("n2", "az2")],
                vec![
                    sec("a", "S1").on("n1").with(set(away_s2())).build(),
                    sec("b", "S2").on("n2").with(set(away_s1())).build(),
                ],
                sec("p", "S2").build(),
                vec![0, 100],
            ),
            (
                "affinity and anti-affinity together",
                vec![china("n1"), az("n2", "az1")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S1").on("n2").build(),
                ],
                sec("p", "S1").with(set(with_s1_away_from_s2())).build(),
                vec![100, 0],
            ),
            (
                "pods of one group: together in the region, apart per zone",
                vec![
                    china_az1("n1"),
                    india("n2"),
                    china("n3"),
                    china("n4"),
                    india("n5"),
                ],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S1").on("n1").build(),
                    sec("c", "S1").on("n2").build(),
                    sec("d", "S1").on("n3").build(),
                    sec("e", "S1").on("n3").build(),
                    sec("f", "S1").on("n4").build(),
                    sec("g", "S1").on("n5").build(),
                ],
                sec("p", "S1").with(set(with_s1_away_from_s2())).build(),
                vec![100, 0, 100, 100, 0],
            ),
            (
                "affinity, anti-affinity and both symmetries (8, -5, 8, -5)",
                vec![china("n1"), az("n2", "az1"), india("n3"), az("n4", "az2")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    sec("b", "S2").on("n2").build(),
                    pod("c").on("n3").with(set(with_s1_away_from_s2())).build(),
                    pod("d").on("n4").with(set(away_s1())).build(),
                ],
                sec("p", "S1").with(set(with_s1_away_from_s2())).build(),
                vec![100, 0, 100, 0],
            ),
            (
                "equal non-zero scores everywhere normalise to 0",
                vec![china("n1"), china("n2")],
                vec![
                    sec("a", "S1").on("n1").build(),
                    pod("b").on("n2").with(set(with_s1_away_from_s2())).build(),
                ],
                sec("p", "S1").build(),
                vec![0, 0],
            ),
        ];
        for (name, nodes, pods, incoming, want) in cases {
            assert_eq!(
                scores(&InterPodAffinityPriority::new(1), nodes, pods, incoming),
                want,
                "{name}"
            );
        }
    }

    /// Upstream's TestPreferredAffinityWithHardPodAffinitySymmetricWeight, restated.
    #[test]
    fn hard_pod_affinity_weight() {
        let hard = || Affinity {
            pod_required: vec![term("region", &[("service", "S1")])],
            ..Affinity::default()
        };
        let nodes = || vec![china("n1"), india("n2"), az("n3", "az1")];
        let pods = || {
            vec![
                pod("a").on("n1").with(set(hard())).build(),
                pod("b").on("n2").with(set(hard())).build(),
            ]
        };
        let incoming = || pod("p").label("service", "S1").build();
        for (weight, want) in [
            (1, vec![100, 100, 0]),
            (5, vec![100, 100, 0]),
            (0, vec![0, 0, 0]),
        ] {
            assert_eq!(
                scores(
                    &InterPodAffinityPriority::new(weight),
                    nodes(),
                    pods(),
                    incoming()
                ),
                want,
                "weight {weight}"
            );
        }
        // Only the running pod on n1 selects the pod: its region alone gains the weight.
        let pods = vec![
            pod("a").on("n1").with(set(hard())).build(),
            pod("b").on("n2").build(),
        ];
        assert_eq!(
            scores(&InterPodAffinityPriority::new(1), nodes(), pods, incoming()),
            vec![100, 0, 0]
        );
    }

    /// Upstream normalises in floating point and truncates: 100 * (29/100) is 28.999...
    #[test]
    fn normalisation_truncates_like_upstream() {
        let nodes = vec![
            node("n1").label("zone", "z1").build(),
            node("n2").label("zone", "z2").build(),
            node("n3").label("zone", "z3").build(),
        ];
        let pods = vec![
            pod("a").label("app", "a").on("n1").build(),
            pod("b").label("app", "b").on("n2").build(),
        ];
        let incoming = pod("p")
            .prefer_affinity(29, "zone", &[("app", "a")])
            .prefer_affinity(100, "zone", &[("app", "b")])
            .build();
        assert_eq!(
            scores(&InterPodAffinityPriority::new(1), nodes, pods, incoming),
            vec![28, 100, 0]
        );
    }

    #[test]
    fn constant_when_nothing_contributes() {
        let mut cl = cluster(
            vec![node("n1").build()],
            vec![
                pod("a")
                    .label("app", "db")
                    .on("n1")
                    .anti_affinity("kubernetes.io/hostname", &[("app", "db")])
                    .build(),
            ],
        );
        let info = cl.compile_pod(
            pod("p")
                .label("app", "db")
                .anti_affinity("kubernetes.io/hostname", &[("app", "db")])
                .build(),
        );
        let rule = InterPodAffinityPriority::new(1);
        let ctx = CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: false,
        };
        assert!(matches!(rule.prepare(ctx), ScorePrep::Constant(0)));
    }
}
