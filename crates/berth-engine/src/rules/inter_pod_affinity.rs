//! MatchInterPodAffinity (v1.22 InterPodAffinity filter): the pod's required pod affinity and
//! anti-affinity terms, and the required anti-affinity terms of running pods that select it.
//!
//! Upstream counts, per topology domain (key, value), the existing pods matching each kind of
//! term, then checks each node's domains. Here the domains are found through the cluster's
//! indexes (pods by label, running pods' anti-affinity terms by the labels they select), so
//! preparing costs O(matching pods + matching terms) and a node check costs a label lookup and
//! a hash probe per topology key.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeInfo};
use crate::framework::{
    CountChanges, CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::labels::{Labels, Sym};
use crate::podinfo::{AffinityTerm, PodInfo};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "InterPodAffinity";

/// The node lacks a topology key of the pod's affinity, or no pod it asks for runs in the
/// node's domain.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// A pod the pod's anti-affinity rejects runs in the node's domain.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// A running pod's anti-affinity rejects the pod in the node's domain.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The rule.
pub struct MatchInterPodAffinity;

/// Slots of the three kinds of count in [`CountChanges`].
const AFFINITY: u32 = 0;
const ANTI: u32 = 1;
const EXISTING_ANTI: u32 = 2;

/// Counts of pods per topology domain (key, value), as upstream's `topologyToMatchedTermCount`
/// (a domain with no pod is absent), with the distinct keys among them so that testing a
/// node costs one label lookup and one probe per key.
#[derive(Debug, Default)]
struct Domains {
    keys: Vec<Sym>,
    counts: FxHashMap<(Sym, Sym), i64>,
}

impl Domains {
    /// Counts one more pod in the domain `key=value`.
    fn insert(&mut self, key: Sym, value: Sym) {
        *self.counts.entry((key, value)).or_insert(0) += 1;
        if !self.keys.contains(&key) {
            self.keys.push(key);
        }
    }

    /// Counts a pod on `node` (the node running a matching pod) for `key`, if it has the key.
    fn insert_node_domain(&mut self, cluster: &Cluster, pod: &PodInfo, key: Sym) {
        if let Some(value) = pod.node.and_then(|n| cluster.node(n).labels.get(key)) {
            self.insert(key, value);
        }
    }

    /// How many pods are counted in `key=value`.
    #[inline]
    fn count(&self, key: Sym, value: Sym) -> i64 {
        self.counts.get(&(key, value)).copied().unwrap_or(0)
    }

    /// Whether `key=value` holds a pod.
    #[inline]
    fn contains(&self, key: Sym, value: Sym) -> bool {
        self.count(key, value) > 0
    }

    /// Whether a node with these labels lies in any of the domains.
    #[inline]
    fn hold(&self, labels: &Labels) -> bool {
        self.keys
            .iter()
            .any(|k| labels.get(*k).is_some_and(|v| self.contains(*k, v)))
    }

    /// The count of `key=value` after `changes` to `slot`.
    #[inline]
    fn changed(&self, changes: &CountChanges, slot: u32, key: Sym, value: Sym) -> i64 {
        self.count(key, value) + changes.get(slot, key, value)
    }

    /// Whether a node with these labels lies in a domain holding a pod after `changes`.
    fn hold_changed(&self, labels: &Labels, changes: &CountChanges, slot: u32) -> bool {
        let changed_keys = changes
            .iter()
            .filter(|((s, _, _), _)| *s == slot)
            .map(|((_, k, _), _)| k);
        self.keys.iter().copied().chain(changed_keys).any(|k| {
            labels
                .get(k)
                .is_some_and(|v| self.changed(changes, slot, k, v) > 0)
        })
    }

    /// Whether no domain holds a pod after `changes` to `slot` (upstream's empty map: it
    /// deletes a domain whose count drops to zero).
    fn is_empty_changed(&self, changes: &CountChanges, slot: u32) -> bool {
        let mut held = self.counts.len();
        for ((s, k, v), delta) in changes.iter() {
            if s != slot {
                continue;
            }
            let before = self.count(k, v);
            match (before != 0, before + delta != 0) {
                (true, false) => held -= 1,
                (false, true) => held += 1,
                _ => {}
            }
        }
        held == 0
    }

    /// Whether there is no domain.
    fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// The prepared check.
struct Check<'a> {
    cluster: &'a Cluster,
    pod: &'a PodInfo,
    /// The pod's required affinity terms.
    affinity_terms: &'a [AffinityTerm],
    /// Domains, per affinity term key, of nodes running a pod that matches all the pod's
    /// affinity terms (upstream's `affinityCounts`).
    affinity_domains: Domains,
    /// Whether the pod matches all its own affinity terms (half of upstream's "first pod
    /// of a group" exception; the other half is that no other pod does).
    matches_own_terms: bool,
    /// Domains of pods the pod's anti-affinity terms select.
    anti_domains: Domains,
    /// Domains of running pods whose anti-affinity terms select the pod.
    existing_anti_domains: Domains,
    /// The verdict per node slot, from the same data (see [`Check::mask_for`]), built when
    /// a cycle first walks the nodes.
    mask: OnceLock<Vec<bool>>,
}

impl Check<'_> {
    /// Upstream's "first pod of a group" exception: no pod matching all the terms runs on a
    /// node with any of their keys, and the pod matches its own terms.
    fn first_of_group(&self) -> bool {
        self.matches_own_terms && self.affinity_domains.is_empty()
    }

    /// Every node's verdict at once, computed from the cluster's dense label tables: the
    /// affinity part walks the term keys' label columns (pods with required affinity only);
    /// the anti-affinity parts clear just the nodes of each forbidden domain.
    fn mask_for(&self, cluster: &Cluster) -> Vec<bool> {
        let slots = cluster.node_slots();
        let mut mask = vec![true; slots];
        let first_of_group = self.first_of_group();
        for t in self.affinity_terms {
            let column = cluster.label_column(t.topology_key).unwrap_or_default();
            for (slot, ok) in mask.iter_mut().enumerate() {
                *ok &= column.get(slot).copied().flatten().is_some_and(|v| {
                    first_of_group || self.affinity_domains.contains(t.topology_key, v)
                });
            }
        }
        for (key, value) in self
            .anti_domains
            .counts
            .keys()
            .chain(self.existing_anti_domains.counts.keys())
        {
            for id in cluster.nodes_with_label(*key, *value) {
                mask[id.0 as usize] = false;
            }
        }
        mask
    }

    /// Upstream's `satisfyPodAffinity`: the node must carry every term's key; then either each
    /// term has a matching pod in the node's domain, or the first-pod exception applies.
    #[inline]
    fn affinity_holds(&self, labels: &Labels) -> bool {
        let mut all_found = true;
        for t in self.affinity_terms {
            match labels.get(t.topology_key) {
                None => return false,
                Some(v) => all_found &= self.affinity_domains.contains(t.topology_key, v),
            }
        }
        all_found || self.first_of_group()
    }

    /// [`Check::affinity_holds`] after `changes`.
    fn affinity_holds_changed(&self, labels: &Labels, changes: &CountChanges) -> bool {
        let mut all_found = true;
        for t in self.affinity_terms {
            match labels.get(t.topology_key) {
                None => return false,
                Some(v) => {
                    all_found &= self
                        .affinity_domains
                        .changed(changes, AFFINITY, t.topology_key, v)
                        > 0
                }
            }
        }
        all_found
            || (self.matches_own_terms && self.affinity_domains.is_empty_changed(changes, AFFINITY))
    }
}

/// The reason for a node failing the three parts, checked in upstream's order.
fn verdict(affinity: bool, anti: bool, existing_anti: bool, reasons: &mut Vec<Reason>) -> bool {
    // v1.22 reports only the specific reason: PR #102518 (merged before the 1.22 freeze)
    // dropped the generic "node(s) didn't match pod affinity/anti-affinity rules" that
    // earlier releases added to each failure.
    let failed = if !affinity {
        REASON_AFFINITY
    } else if anti {
        REASON_ANTI_AFFINITY
    } else if existing_anti {
        REASON_EXISTING_ANTI_AFFINITY
    } else {
        return true;
    };
    reasons.push(failed.into());
    false
}

impl NodeCheck for Check<'_> {
    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let labels = &node.labels;
        verdict(
            self.affinity_holds(labels),
            self.anti_domains.hold(labels),
            self.existing_anti_domains.hold(labels),
            reasons,
        )
    }

    fn mask(&self) -> Option<&[bool]> {
        Some(self.mask.get_or_init(|| self.mask_for(self.cluster)))
    }

    /// Reusable across a class while the pods in the node's domains of the pod's own term
    /// keys stay (a running pod's anti-affinity term reaches the domains of its own key, which
    /// the cluster's change log names when that pod comes or goes), and while the "first pod
    /// of a group" exception holds or not.
    fn reuse(&self) -> Reuse {
        let mut keys: Vec<Sym> = self
            .affinity_terms
            .iter()
            .chain(&self.pod.affinity.anti_required)
            .map(|t| t.topology_key)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Reuse::While {
            keys,
            summary: u64::from(self.first_of_group()),
        }
    }

    /// Upstream's `preFilterState.updateWithPod`: the added or removed pod counts in the
    /// node's domains for each of its anti-affinity terms selecting the pod being scheduled,
    /// for each affinity term of that pod when it matches them all, and for each of that
    /// pod's anti-affinity terms selecting it.
    fn count_pod(&self, changes: &mut CountChanges, other: &PodInfo, node: &NodeInfo, delta: i64) {
        let cluster = self.cluster;
        let mut count = |slot: u32, key: Sym| {
            if let Some(value) = node.labels.get(key) {
                changes.add(slot, key, value, delta);
            }
        };
        let no_labels = Labels::default();
        let own_namespace_labels = cluster
            .namespace_labels(self.pod.namespace)
            .unwrap_or(&no_labels);
        for t in &other.affinity.anti_required {
            if t.matches_in(self.pod, own_namespace_labels) {
                count(EXISTING_ANTI, t.topology_key);
            }
        }
        let other_namespace_labels = cluster.namespace_labels(other.namespace);
        if !self.affinity_terms.is_empty()
            && self
                .affinity_terms
                .iter()
                .all(|t| t.matches(other, other_namespace_labels))
        {
            for t in self.affinity_terms {
                count(AFFINITY, t.topology_key);
            }
        }
        for t in &self.pod.affinity.anti_required {
            if t.matches(other, other_namespace_labels) {
                count(ANTI, t.topology_key);
            }
        }
    }

    fn check_changed(
        &self,
        node: &NodeInfo,
        changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        let labels = &node.labels;
        verdict(
            self.affinity_holds_changed(labels, changes),
            self.anti_domains.hold_changed(labels, changes, ANTI),
            self.existing_anti_domains
                .hold_changed(labels, changes, EXISTING_ANTI),
            reasons,
        )
    }
}

/// Domains holding a pod that matches every one of `terms`, for each term's key.
fn affinity_domains(cluster: &Cluster, terms: &[AffinityTerm]) -> Domains {
    let mut domains = Domains::default();
    let Some((first, rest)) = terms.split_first() else {
        return domains;
    };
    let Some(selector) = &first.selector else {
        return domains;
    };
    for id in cluster.matching_pods(&first.namespaces, selector) {
        let p = cluster.pod(id);
        if rest
            .iter()
            .all(|t| t.matches(p, cluster.namespace_labels(p.namespace)))
        {
            for t in terms {
                domains.insert_node_domain(cluster, p, t.topology_key);
            }
        }
    }
    domains
}

/// Domains holding a pod that matches any one of `terms` (each term on its own key).
fn anti_affinity_domains(cluster: &Cluster, terms: &[AffinityTerm]) -> Domains {
    let mut domains = Domains::default();
    for t in terms {
        let Some(selector) = &t.selector else {
            continue;
        };
        for id in cluster.matching_pods(&t.namespaces, selector) {
            domains.insert_node_domain(cluster, cluster.pod(id), t.topology_key);
        }
    }
    domains
}

/// Domains of running pods with a required anti-affinity term selecting `pod`.
fn existing_anti_affinity_domains(cluster: &Cluster, pod: &PodInfo) -> Domains {
    let mut domains = Domains::default();
    let index = cluster.required_anti_affinity_terms();
    if index.is_empty() {
        return domains;
    }
    let no_labels = Labels::default();
    // Without a Namespace object upstream matches running pods' namespace selectors against
    // no labels.
    let namespace_labels = cluster
        .namespace_labels(pod.namespace)
        .unwrap_or(&no_labels);
    for r in index.candidates(&pod.labels) {
        let Some(term) = cluster.term(r) else {
            continue;
        };
        if term.matches_in(pod, namespace_labels) {
            domains.insert_node_domain(cluster, cluster.pod(r.pod), term.topology_key);
        }
    }
    domains
}

impl FilterRule for MatchInterPodAffinity {
    /// Upstream's InterPodAffinity: an unmet affinity is UnschedulableAndUnresolvable (preemption
    /// does not add pods), unmet anti-affinity only Unschedulable.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        if reason.as_str() == REASON_AFFINITY {
            FailureKind::UnschedulableAndUnresolvable
        } else {
            FailureKind::Unschedulable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let affinity = &pod.affinity;
        let existing_anti_domains = existing_anti_affinity_domains(cluster, pod);
        // With a pod nominated somewhere, its anti-affinity may reject this pod on the node
        // it is added to, which only the check can tell.
        if affinity.required.is_empty()
            && affinity.anti_required.is_empty()
            && existing_anti_domains.is_empty()
            && !ctx.nominated
        {
            return FilterPrep::Skip;
        }
        let matches_own_terms = affinity
            .required
            .iter()
            .all(|t| t.matches(pod, cluster.namespace_labels(pod.namespace)));
        let check = Check {
            cluster,
            pod,
            affinity_terms: &affinity.required,
            affinity_domains: affinity_domains(cluster, &affinity.required),
            matches_own_terms,
            anti_domains: anti_affinity_domains(cluster, &affinity.anti_required),
            existing_anti_domains,
            mask: OnceLock::new(),
        };
        FilterPrep::Check(Box::new(check))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::{self, *};
    use crate::labels::{LabelSelector, Requirement};
    use crate::model::{Node, Pod, PodAffinityTerm};
    use crate::testkit::*;

    /// Name, nodes, running pods, the pod, each node's reason ("" passes).
    type NodesCase = (&'static str, Vec<Node>, Vec<Pod>, Pod, Vec<&'static str>);

    const AFF: &str = REASON_AFFINITY;
    const ANTI: &str = REASON_ANTI_AFFINITY;
    const EXISTING: &str = REASON_EXISTING_ANTI_AFFINITY;

    /// A term over arbitrary requirements.
    fn t(topology_key: &str, reqs: &[(&str, Operator, &[&str])]) -> PodAffinityTerm {
        let requirements: Vec<Requirement> = reqs.iter().map(|(k, op, v)| req(k, *op, v)).collect();
        PodAffinityTerm {
            label_selector: Some(LabelSelector { requirements }),
            topology_key: topology_key.into(),
            ..PodAffinityTerm::default()
        }
    }

    /// Sets a pod's required affinity and anti-affinity terms.
    fn terms(
        p: PodBuilder,
        affinity: Vec<PodAffinityTerm>,
        anti: Vec<PodAffinityTerm>,
    ) -> PodBuilder {
        p.with(|p| {
            p.affinity.pod_required = affinity;
            p.affinity.anti_required = anti;
        })
    }

    /// One expected outcome per node, in node order: "" passes.
    fn run(nodes: Vec<Node>, pods: Vec<Pod>, incoming: Pod) -> Vec<String> {
        let mut cl = cluster(nodes, pods);
        run_filter(&MatchInterPodAffinity, &mut cl, incoming)
            .into_iter()
            .map(|(_, r)| {
                assert!(r.len() <= 1, "one reason at most: {r:?}");
                r.into_iter().next().unwrap_or_default()
            })
            .collect()
    }

    /// Upstream's TestRequiredAffinitySingleNode, restated (machine1: region=r1, zone=z11).
    #[test]
    fn single_node_table() {
        let node1 = || {
            vec![
                node("machine1")
                    .label("region", "r1")
                    .label("zone", "z11")
                    .build(),
            ]
        };
        let scan = || pod("e").label("service", "securityscan").on("machine1");
        let s1 = || pod("p").label("security", "S1");
        let in_scan = || t("region", &[("service", In, &["securityscan", "value2"])]);
        let anti_virus_node = || t("node", &[("service", In, &["antivirusscan", "value2"])]);
        let cases: Vec<(&str, Vec<Pod>, Pod, &str)> = vec![
            ("no required terms, no pods", vec![], pod("p").build(), ""),
            (
                "affinity In matches the existing pod",
                vec![scan().build()],
                terms(s1(), vec![in_scan()], vec![]).build(),
                "",
            ),
            (
                "affinity NotIn matches the existing pod",
                vec![scan().build()],
                terms(
                    s1(),
                    vec![t(
                        "region",
                        &[("service", NotIn, &["securityscan3", "value3"])],
                    )],
                    vec![],
                )
                .build(),
                "",
            ),
            (
                "affinity looks in another namespace",
                vec![scan().ns("ns").build()],
                terms(
                    s1(),
                    vec![PodAffinityTerm {
                        namespaces: vec!["DiffNameSpace".into()],
                        ..in_scan()
                    }],
                    vec![],
                )
                .build(),
                AFF,
            ),
            (
                "affinity selector matches nothing and the node lacks the empty topology key",
                vec![scan().build()],
                terms(
                    pod("p").label("service", "securityscan"),
                    vec![t("", &[("service", In, &["antivirusscan", "value2"])])],
                    vec![],
                )
                .build(),
                AFF,
            ),
            (
                "several affinity terms with different operators, all matched",
                vec![scan().build()],
                terms(
                    s1(),
                    vec![
                        t(
                            "region",
                            &[("service", Exists, &[]), ("wrongkey", DoesNotExist, &[])],
                        ),
                        t(
                            "region",
                            &[
                                ("service", In, &["securityscan"]),
                                ("service", NotIn, &["WrongValue"]),
                            ],
                        ),
                    ],
                    vec![],
                )
                .build(),
                "",
            ),
            (
                "requirements of a term are ANDed: one fails",
                vec![scan().build()],
                terms(
                    s1(),
                    vec![
                        t(
                            "region",
                            &[("service", Exists, &[]), ("wrongkey", DoesNotExist, &[])],
                        ),
                        t(
                            "region",
                            &[
                                ("service", In, &["securityscan2"]),
                                ("service", NotIn, &["WrongValue"]),
                            ],
                        ),
                    ],
                    vec![],
                )
                .build(),
                AFF,
            ),
            (
                "affinity and anti-affinity both satisfied",
                vec![scan().build()],
                terms(s1(), vec![in_scan()], vec![anti_virus_node()]).build(),
                "",
            ),
            (
                "affinity, anti-affinity and the existing pod's anti-affinity all satisfied",
                vec![terms(scan(), vec![], vec![anti_virus_node()]).build()],
                terms(s1(), vec![in_scan()], vec![anti_virus_node()]).build(),
                "",
            ),
            (
                "affinity satisfied, anti-affinity not",
                vec![scan().build()],
                terms(
                    s1(),
                    vec![in_scan()],
                    vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
                )
                .build(),
                ANTI,
            ),
            (
                "the existing pod's anti-affinity rejects the pod",
                vec![
                    terms(
                        scan(),
                        vec![],
                        vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
                    )
                    .build(),
                ],
                terms(
                    pod("p").label("service", "securityscan"),
                    vec![in_scan()],
                    vec![anti_virus_node()],
                )
                .build(),
                EXISTING,
            ),
            (
                "the only matching pod runs nowhere and the pod does not match its own term",
                vec![pod("e").label("service", "securityscan").build()],
                terms(
                    pod("p").label("service", "securityscan"),
                    vec![t(
                        "region",
                        &[("service", NotIn, &["securityscan", "value2"])],
                    )],
                    vec![],
                )
                .build(),
                AFF,
            ),
            (
                "existing anti-affinity applies to a pod without terms",
                vec![
                    terms(
                        scan(),
                        vec![],
                        vec![t("zone", &[("service", In, &["securityscan", "value2"])])],
                    )
                    .build(),
                ],
                pod("p").label("service", "securityscan").build(),
                EXISTING,
            ),
            (
                "existing anti-affinity with NotIn does not select the pod",
                vec![
                    terms(
                        scan(),
                        vec![],
                        vec![t(
                            "zone",
                            &[("service", NotIn, &["securityscan", "value2"])],
                        )],
                    )
                    .build(),
                ],
                pod("p").label("service", "securityscan").build(),
                "",
            ),
            (
                "symmetry a1: the pod's own anti-affinity is reported first",
                vec![
                    terms(
                        pod("e").label("security", "S1").on("machine1"),
                        vec![],
                        vec![t("zone", &[("security", Exists, &[])])],
                    )
                    .build(),
                ],
                terms(
                    pod("p").label("service", "securityscan"),
                    vec![],
                    vec![
                        t("zone", &[("service", Exists, &[])]),
                        t("zone", &[("security", Exists, &[])]),
                    ],
                )
                .build(),
                ANTI,
            ),
            (
                "symmetry a2: only the existing pod's anti-affinity matches",
                vec![
                    terms(
                        scan(),
                        vec![],
                        vec![
                            t("zone", &[("service", Exists, &[])]),
                            t("zone", &[("security", Exists, &[])]),
                        ],
                    )
                    .build(),
                ],
                terms(s1(), vec![], vec![t("zone", &[("security", Exists, &[])])]).build(),
                EXISTING,
            ),
            (
                // Releases before the framework checked running pods' terms first and
                // reported "existing pods" here; v1.22 checks the pod's own terms first.
                "symmetry b1: both match each other, the pod's own anti-affinity comes first",
                vec![
                    terms(
                        pod("e").label("def", "").label("xyz", "").on("machine1"),
                        vec![],
                        vec![
                            t("zone", &[("abc", Exists, &[])]),
                            t("zone", &[("def", Exists, &[])]),
                        ],
                    )
                    .build(),
                ],
                terms(
                    pod("p").label("abc", "").label("xyz", ""),
                    vec![],
                    vec![
                        t("zone", &[("abc", Exists, &[])]),
                        t("zone", &[("def", Exists, &[])]),
                    ],
                )
                .build(),
                ANTI,
            ),
        ];
        for (name, pods, incoming, want) in cases {
            assert_eq!(run(node1(), pods, incoming), vec![want], "{name}");
        }
    }

    /// Upstream's TestRequiredAffinityMultipleNodes, restated.
    #[test]
    fn multiple_nodes_table() {
        let china = |n: &str| node(n).label("region", "China").build();
        let china_az1 = |n: &str| node(n).label("region", "China").label("az", "az1").build();
        let india = |n: &str| node(n).label("region", "India").build();
        let rz = |n: &str, r: &str, z: &str| node(n).label("region", r).label("zone", z).build();
        let foo_exists = |key: &str| t(key, &[("foo", Exists, &[])]);
        let bar_exists = |key: &str| t(key, &[("bar", Exists, &[])]);
        let cases: Vec<NodesCase> = vec![
            (
                "nodes sharing the matching pod's region pass",
                vec![china("m1"), china_az1("m2"), india("m3")],
                vec![pod("p1").label("foo", "bar").on("m1").build()],
                pod("p").affinity("region", &[("foo", "bar")]).build(),
                vec!["", "", AFF],
            ),
            (
                "first pod of a group: nothing matches all terms anywhere, the pod matches its own",
                vec![rz("a", "r1", "az1"), rz("b", "r1", "az2")],
                vec![pod("p1").label("foo", "bar").on("a").build()],
                pod("p")
                    .label("foo", "bar")
                    .label("service", "securityscan")
                    .affinity("zone", &[("foo", "bar")])
                    .affinity("zone", &[("service", "securityscan")])
                    .build(),
                vec!["", ""],
            ),
            (
                "anti-affinity rejects every node of the matching pod's region",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
                vec![pod("e").label("foo", "abc").on("a").build()],
                pod("p").anti_affinity("region", &[("foo", "abc")]).build(),
                vec![ANTI, ANTI],
            ),
            (
                "anti-affinity rejects when any one term matches",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
                vec![
                    pod("e")
                        .label("foo", "abc")
                        .label("service", "securityscan")
                        .on("a")
                        .build(),
                ],
                pod("p")
                    .anti_affinity("region", &[("foo", "abc")])
                    .anti_affinity("zone", &[("service", "securityscan")])
                    .build(),
                vec![ANTI, ANTI],
            ),
            (
                "anti-affinity leaves other regions free",
                vec![china("a"), china_az1("b"), india("c")],
                vec![pod("e").label("foo", "abc").on("a").build()],
                pod("p").anti_affinity("region", &[("foo", "abc")]).build(),
                vec![ANTI, ANTI, ""],
            ),
            (
                "pods of other namespaces are not selected, nor is the pod by their terms",
                vec![china("a"), china_az1("b"), india("c")],
                vec![
                    pod("e1").ns("NS1").label("foo", "bar").on("a").build(),
                    terms(
                        pod("e2").ns("NS2").on("c"),
                        vec![],
                        vec![t("region", &[("foo", In, &["123"])])],
                    )
                    .build(),
                ],
                pod("p")
                    .ns("NS1")
                    .label("foo", "123")
                    .anti_affinity("region", &[("foo", "bar")])
                    .build(),
                vec![ANTI, ANTI, ""],
            ),
            (
                "an existing term whose key no node has rejects nothing",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
                vec![
                    terms(
                        pod("e").on("a"),
                        vec![],
                        vec![foo_exists("invalid-node-label")],
                    )
                    .build(),
                ],
                pod("p").label("foo", "").build(),
                vec!["", ""],
            ),
            (
                "the pod's term whose key no node has rejects nothing",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
                vec![pod("e").label("foo", "").on("a").build()],
                terms(pod("p"), vec![], vec![foo_exists("invalid-node-label")]).build(),
                vec!["", ""],
            ),
            (
                "each existing pod's term rejects its own domain",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z2")],
                vec![
                    terms(pod("e1").on("a"), vec![], vec![foo_exists("zone")]).build(),
                    terms(pod("e2").on("a"), vec![], vec![bar_exists("region")]).build(),
                ],
                pod("p").label("foo", "").label("bar", "").build(),
                vec![EXISTING, EXISTING],
            ),
            (
                "existing pods on two zones reject both, a third zone stays free",
                vec![
                    rz("a", "r1", "z1"),
                    rz("b", "r1", "z2"),
                    rz("c", "r1", "z3"),
                ],
                vec![
                    terms(
                        pod("e1").on("a"),
                        vec![],
                        vec![foo_exists("zone"), t("zone", &[("labelA", Exists, &[])])],
                    )
                    .build(),
                    terms(
                        pod("e2").on("b"),
                        vec![],
                        vec![bar_exists("zone"), t("zone", &[("labelB", Exists, &[])])],
                    )
                    .build(),
                ],
                pod("p").label("foo", "").label("bar", "").build(),
                vec![EXISTING, EXISTING, ""],
            ),
            (
                "affinity terms: all must match one pod, then every key must be on the node",
                vec![rz("a", "r1", "z1"), rz("b", "r1", "z1")],
                vec![pod("e").label("foo", "").label("bar", "").on("a").build()],
                terms(
                    pod("p"),
                    vec![foo_exists("region"), bar_exists("zone")],
                    vec![],
                )
                .build(),
                vec!["", ""],
            ),
            (
                "a node without an affinity term's key fails even with the first-pod exception",
                vec![rz("a", "r1", "z1"), node("b").label("region", "r1").build()],
                vec![],
                pod("p")
                    .label("foo", "")
                    .label("bar", "")
                    .with(|p| {
                        p.affinity.pod_required = vec![foo_exists("region"), bar_exists("zone")];
                    })
                    .build(),
                vec!["", AFF],
            ),
            (
                "a pod matching all terms on a node with only one key still disables the exception",
                vec![node("a").label("region", "r1").build(), rz("b", "r2", "z1")],
                vec![pod("e").label("foo", "").label("bar", "").on("a").build()],
                pod("p")
                    .label("foo", "")
                    .label("bar", "")
                    .with(|p| {
                        p.affinity.pod_required = vec![foo_exists("region"), bar_exists("zone")];
                    })
                    .build(),
                vec![AFF, AFF],
            ),
        ];
        for (name, nodes, pods, incoming, want) in cases {
            assert_eq!(run(nodes, pods, incoming), want, "{name}");
        }
    }

    #[test]
    fn namespaces_and_selectors() {
        let nodes = || {
            vec![
                node("a").label("zone", "z1").build(),
                node("b").label("zone", "z2").build(),
            ]
        };
        let web_on_a = |ns: &str| pod("e").ns(ns).label("app", "web").on("a").build();
        let ns_selected = |sel: Option<LabelSelector>| PodAffinityTerm {
            namespace_selector: sel,
            ..term("zone", &[("app", "web")])
        };
        let with_ns = |nss: Vec<crate::model::Namespace>, pods: Vec<Pod>, incoming: Pod| {
            let mut cl = cluster(nodes(), vec![]);
            for n in &nss {
                cl.upsert_namespace(n);
            }
            for p in pods {
                cl.add_pod(p).expect("test pod");
            }
            run_filter(&MatchInterPodAffinity, &mut cl, incoming)
                .into_iter()
                .map(|(_, r)| r.join(","))
                .collect::<Vec<_>>()
        };
        let teams = || {
            vec![
                namespace("t1", &[("team", "a")]),
                namespace("t2", &[("team", "b")]),
            ]
        };
        let team_a = || Some(selector(&[("team", "a")]));
        let anti = |term: PodAffinityTerm| {
            pod("p")
                .with(move |p| p.affinity.anti_required = vec![term])
                .build()
        };
        let cases: Vec<(&str, Vec<Pod>, Pod, Vec<&str>)> = vec![
            (
                "default: the pod's own namespace only",
                vec![web_on_a("other")],
                pod("p").anti_affinity("zone", &[("app", "web")]).build(),
                vec!["", ""],
            ),
            (
                "same namespace",
                vec![web_on_a("default")],
                pod("p").anti_affinity("zone", &[("app", "web")]).build(),
                vec![ANTI, ""],
            ),
            (
                "an empty namespace selector selects every namespace",
                vec![web_on_a("other")],
                anti(ns_selected(Some(LabelSelector::default()))),
                vec![ANTI, ""],
            ),
            (
                "a namespace selector selects by namespace labels",
                vec![web_on_a("t1")],
                anti(ns_selected(team_a())),
                vec![ANTI, ""],
            ),
            (
                "a namespace selector skips other namespaces",
                vec![web_on_a("t2")],
                anti(ns_selected(team_a())),
                vec!["", ""],
            ),
            (
                "listed namespaces and the selector add up",
                vec![web_on_a("x")],
                anti(PodAffinityTerm {
                    namespaces: vec!["x".into()],
                    ..ns_selected(team_a())
                }),
                vec![ANTI, ""],
            ),
            (
                "a nil label selector selects nothing",
                vec![web_on_a("default")],
                anti(PodAffinityTerm {
                    label_selector: None,
                    ..term("zone", &[])
                }),
                vec!["", ""],
            ),
            (
                "an empty label selector selects every pod of the namespace",
                vec![web_on_a("default")],
                anti(term("zone", &[])),
                vec![ANTI, ""],
            ),
            (
                "an existing pod's namespace selector is matched against the pod's namespace labels",
                vec![
                    pod("e")
                        .ns("t2")
                        .on("a")
                        .with(|p| {
                            p.affinity.anti_required = vec![PodAffinityTerm {
                                namespace_selector: Some(selector(&[("team", "a")])),
                                ..term("zone", &[("app", "web")])
                            }]
                        })
                        .build(),
                ],
                pod("p").ns("t1").label("app", "web").build(),
                vec![EXISTING, ""],
            ),
            (
                "an existing pod's term ignores pods of unselected namespaces",
                vec![
                    pod("e")
                        .ns("t1")
                        .on("a")
                        .with(|p| {
                            p.affinity.anti_required = vec![PodAffinityTerm {
                                namespace_selector: Some(selector(&[("team", "a")])),
                                ..term("zone", &[("app", "web")])
                            }]
                        })
                        .build(),
                ],
                pod("p").ns("t2").label("app", "web").build(),
                vec!["", ""],
            ),
            (
                "a namespace without a Namespace object has no labels for existing pods' selectors",
                vec![
                    pod("e")
                        .ns("t1")
                        .on("a")
                        .with(|p| {
                            p.affinity.anti_required = vec![PodAffinityTerm {
                                namespace_selector: Some(LabelSelector {
                                    requirements: vec![req("team", DoesNotExist, &[])],
                                }),
                                ..term("zone", &[("app", "web")])
                            }]
                        })
                        .build(),
                ],
                pod("p").ns("ghost").label("app", "web").build(),
                vec![EXISTING, ""],
            ),
            (
                "the incoming pod's affinity with a namespace selector",
                vec![web_on_a("t1")],
                pod("p")
                    .with(|p| {
                        p.affinity.pod_required = vec![PodAffinityTerm {
                            namespace_selector: Some(selector(&[("team", "a")])),
                            ..term("zone", &[("app", "web")])
                        }]
                    })
                    .build(),
                vec!["", AFF],
            ),
            (
                "terminating pods still count for inter-pod affinity",
                vec![pod("e").label("app", "web").on("a").terminating().build()],
                pod("p").anti_affinity("zone", &[("app", "web")]).build(),
                vec![ANTI, ""],
            ),
        ];
        for (name, pods, incoming, want) in cases {
            assert_eq!(with_ns(teams(), pods, incoming), want, "{name}");
        }
    }

    /// The benchmark's shape: every pod keeps away from its own app on its host. The term
    /// index must stay right while pods come and go.
    #[test]
    fn hostname_anti_affinity_follows_assign_and_unassign() {
        let mut cl = cluster(
            vec![node("a").build(), node("b").build(), node("c").build()],
            vec![],
        );
        let spread = |name: &str, app: &str| {
            pod(name)
                .label("app", app)
                .anti_affinity("kubernetes.io/hostname", &[("app", app)])
        };
        let p1 = cl
            .add_pod(spread("w1", "web").on("a").build())
            .expect("pod");
        cl.add_pod(spread("d1", "db").on("b").build()).expect("pod");
        let got = run_filter(&MatchInterPodAffinity, &mut cl, spread("w2", "web").build());
        assert_eq!(passing(&got), vec!["b", "c"]);
        assert_eq!(got[0].1, vec![ANTI.to_string()]);
        // A pod without terms is kept off only by the running pod's term.
        let got = run_filter(
            &MatchInterPodAffinity,
            &mut cl,
            pod("x").label("app", "web").build(),
        );
        assert_eq!(got[0].1, vec![EXISTING.to_string()]);
        cl.unassign(p1);
        let got = run_filter(
            &MatchInterPodAffinity,
            &mut cl,
            pod("x").label("app", "web").build(),
        );
        assert_eq!(passing(&got), vec!["a", "b", "c"]);
        let b = cl.node_by_name("b").expect("node");
        cl.assign(p1, b);
        let got = run_filter(
            &MatchInterPodAffinity,
            &mut cl,
            pod("x").label("app", "web").build(),
        );
        assert_eq!(passing(&got), vec!["a", "c"]);
        cl.remove_node("b");
        let got = run_filter(
            &MatchInterPodAffinity,
            &mut cl,
            pod("x").label("app", "web").build(),
        );
        assert_eq!(passing(&got), vec!["a", "c"]);
    }

    #[test]
    fn skips_when_nothing_can_reject() {
        let mut cl = cluster(
            vec![node("a").build()],
            vec![
                pod("e")
                    .label("app", "db")
                    .on("a")
                    .anti_affinity("kubernetes.io/hostname", &[("app", "db")])
                    .build(),
            ],
        );
        let info = cl.compile_pod(pod("p").label("app", "web").build());
        let ctx = CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: false,
        };
        assert!(matches!(
            MatchInterPodAffinity.prepare(ctx),
            FilterPrep::Skip
        ));
        let info = cl.compile_pod(pod("p").label("app", "db").build());
        let ctx = CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: false,
        };
        assert!(matches!(
            MatchInterPodAffinity.prepare(ctx),
            FilterPrep::Check(_)
        ));
    }
}
