//! EvenPodsSpread and EvenPodsSpreadPriority (v1.22 PodTopologySpread filter and score) over
//! the pod's own `spec.topologySpreadConstraints`.
//!
//! No cluster-level default constraints apply here: v1.22's legacy registry configures the
//! plugin with `DefaultingType: List` for EvenPodsSpreadPriority, so a pod without
//! constraints is never spread by this rule. The system default constraints come with
//! SelectorSpreadPriority when the DefaultPodTopologySpread gate is on
//! (`default_pod_topology_spread.rs`).
//!
//! Counting follows upstream: only pods in the pod's namespace that are not terminating and
//! match the constraint's selector count, and only on nodes that match the pod's node selector
//! and required node affinity and carry every constraint's topology key. Matching pods are
//! found through the cluster's label index.
//!
//! The fields v1.22 never knew follow v1.36 (`common.go`, `filtering.go`, `scoring.go` of
//! its podtopologyspread plugin): `nodeAffinityPolicy` and `nodeTaintsPolicy` choose, per
//! constraint, whether the node affinity and the node's taints limit the counted nodes
//! (`matchNodeInclusionPolicies`); `minDomains` makes a DoNotSchedule constraint take its
//! global minimum as 0 while it has fewer domains (`preFilterState.minMatchNum`);
//! `matchLabelKeys` is merged into the selector by conversion. With none of them set, every
//! decision, score and message is v1.22's.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::cluster::{Cluster, NamespaceFilter, NodeId, NodeInfo};
use crate::framework::{
    CountChanges, CycleContext, FailureKind, FilterPrep, FilterRule, MAX_NODE_SCORE, NodeCheck,
    NodeScore, Reason, Reuse, ScorePrep, ScoreRule,
};
use crate::labels::Sym;
use crate::model::{TaintEffect, WhenUnsatisfiable};
use crate::podinfo::{PodInfo, SpreadConstraint, any_term_matches};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "PodTopologySpread";

/// Placing the pod on the node would exceed a constraint's maximum skew.
pub const REASON: &str = "node(s) didn't match pod topology spread constraints";
/// The node lacks a constraint's topology key.
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The filter (DoNotSchedule constraints).
pub struct EvenPodsSpread;

/// The score (ScheduleAnyway constraints).
pub struct EvenPodsSpreadPriority;

/// The pod's constraints of one kind.
fn constraints(pod: &PodInfo, kind: WhenUnsatisfiable) -> Vec<&SpreadConstraint> {
    pod.spread_constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == kind)
        .collect()
}

/// Whether a node passes the pod's node selector and required node affinity (upstream's
/// `GetRequiredNodeAffinity(pod).Match(node)`).
pub(crate) fn matches_required_node_affinity(
    cluster: &Cluster,
    pod: &PodInfo,
    node: &NodeInfo,
) -> bool {
    pod.node_selector.matches(&node.labels)
        && pod.node_required.as_deref().is_none_or(|terms| {
            any_term_matches(terms, &node.labels, node.name(), cluster.interner())
        })
}

/// Whether the pod tolerates every NoSchedule and NoExecute taint of the node: upstream's
/// `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`, which
/// `nodeTaintsPolicy: Honor` reads (v1.36 `matchNodeInclusionPolicies`).
fn tolerates_node_taints(pod: &PodInfo, node: &NodeInfo) -> bool {
    node.taints().iter().all(|t| {
        t.effect == TaintEffect::PreferNoSchedule
            || pod.pod.tolerations.iter().any(|tol| tol.tolerates(t))
    })
}

/// A node carries every constraint's topology key (bit of a node's [`Scope`]).
const HAS_KEYS: u8 = 1;
/// A node passes the pod's node selector and required node affinity.
const MATCHES_AFFINITY: u8 = 2;
/// The pod tolerates the node's NoSchedule and NoExecute taints.
const TOLERATED: u8 = 4;

/// Per node slot, which of the conditions for counting its pods the node meets; a constraint
/// counts a node's pods when the node meets every condition [`needs`] names for it. Computed
/// once per pod: the node inclusion policies differ per constraint, the node does not.
type Scope = Vec<u8>;

/// The conditions a node must meet for a constraint to count its pods: every key (upstream's
/// `nodeLabelsMatchSpreadConstraints`), then what the constraint's node inclusion policies
/// honour (`matchNodeInclusionPolicies`; by default the node affinity, as v1.22 always did).
fn needs(c: &SpreadConstraint) -> u8 {
    let mut needs = HAS_KEYS;
    if c.honor_node_affinity {
        needs |= MATCHES_AFFINITY;
    }
    if c.honor_node_taints {
        needs |= TOLERATED;
    }
    needs
}

/// Whether a constraint needing `needs` counts the pods of the node in `slot`.
fn is_counted(scope: &[u8], slot: usize, needs: u8) -> bool {
    scope.get(slot).is_some_and(|s| s & needs == needs)
}

/// Every node's [`Scope`] bits; the node affinity and the taints are only looked at when a
/// constraint honours them.
fn node_scope(cluster: &Cluster, pod: &PodInfo, constraints: &[&SpreadConstraint]) -> Scope {
    let wanted = constraints.iter().fold(0, |bits, c| bits | needs(c));
    let mut scope = vec![0; cluster.node_slots()];
    for id in cluster.node_order() {
        let node = cluster.node(*id);
        if !constraints.iter().all(|c| node.labels.has(c.topology_key)) {
            continue;
        }
        let mut bits = HAS_KEYS;
        if wanted & MATCHES_AFFINITY != 0 && matches_required_node_affinity(cluster, pod, node) {
            bits |= MATCHES_AFFINITY;
        }
        if wanted & TOLERATED != 0 && tolerates_node_taints(pod, node) {
            bits |= TOLERATED;
        }
        scope[id.0 as usize] = bits;
    }
    scope
}

/// The nodes of the running pods a constraint counts (one entry per pod): same namespace as
/// the pod, not terminating, matched by the selector (none when there is no selector).
fn counted_pods(cluster: &Cluster, pod: &PodInfo, c: &SpreadConstraint) -> Vec<NodeId> {
    let Some(selector) = &c.selector else {
        return Vec::new();
    };
    let namespace = NamespaceFilter::only(pod.namespace);
    cluster
        .matching_pods(&namespace, selector)
        .filter_map(|id| {
            let p = cluster.pod(id);
            if p.terminating() { None } else { p.node }
        })
        .collect()
}

/// Matching pods per value of the constraint's key, over the nodes it counts; every value of
/// such a node is present, possibly with 0.
fn domain_counts(
    cluster: &Cluster,
    pod: &PodInfo,
    c: &SpreadConstraint,
    scope: &[u8],
) -> FxHashMap<Sym, i64> {
    let needs = needs(c);
    let mut counts = FxHashMap::default();
    for id in cluster.node_order() {
        if is_counted(scope, id.0 as usize, needs)
            && let Some(v) = cluster.node(*id).labels.get(c.topology_key)
        {
            counts.insert(v, 0);
        }
    }
    for n in counted_pods(cluster, pod, c) {
        if is_counted(scope, n.0 as usize, needs)
            && let Some(v) = cluster.node(n).labels.get(c.topology_key)
        {
            *counts.entry(v).or_insert(0) += 1;
        }
    }
    counts
}

/// The count of a constraint without domains: upstream's MaxInt32, which lets every node
/// with the key pass.
const NO_DOMAIN: i64 = i32::MAX as i64;

/// One DoNotSchedule constraint, prepared.
struct FilterConstraint<'a> {
    constraint: &'a SpreadConstraint,
    /// The [`Scope`] bits a node needs for this constraint to count its pods.
    needs: u8,
    /// Matching pods per domain of the nodes this constraint counts.
    counts: FxHashMap<Sym, i64>,
    /// There are fewer domains than `minDomains` (but some): the global minimum is 0 whatever
    /// the counts (v1.36 `preFilterState.minMatchNum`). Placing or removing pods changes no
    /// domain's existence, so this holds for the whole cycle.
    min_is_zero: bool,
    /// The smallest count over those domains ([`NO_DOMAIN`] when there is none), with a
    /// domain that has it.
    global_min: i64,
    min_domain: Option<Sym>,
    /// The smallest count over the other domains, so that the minimum is known in O(1)
    /// when the counts of one domain change (upstream keeps two "critical paths" for this).
    second_min: i64,
    /// 1 if the pod matches the selector itself (placing it adds to the domain), else 0.
    self_match: i64,
}

impl FilterConstraint<'_> {
    /// Whether placing the pod in a domain with `matching` pods, when the least populated
    /// domain has `min`, keeps the skew within bounds.
    fn within_skew(&self, matching: i64, min: i64) -> bool {
        matching + self.self_match - min <= i64::from(self.constraint.max_skew)
    }

    /// The global minimum before any change to the counts.
    fn effective_min(&self) -> i64 {
        if self.min_is_zero { 0 } else { self.global_min }
    }
}

struct FilterCheck<'a> {
    pod: &'a PodInfo,
    constraints: Vec<FilterConstraint<'a>>,
    scope: Scope,
}

impl NodeCheck for FilterCheck<'_> {
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        self.check_changed(node, &CountChanges::default(), reasons)
    }

    /// Reusable across a class while the counts in the node's domains of the constraints'
    /// keys and the global minimum of each constraint stay.
    fn reuse(&self) -> Reuse {
        let mut keys: Vec<Sym> = self
            .constraints
            .iter()
            .map(|fc| fc.constraint.topology_key)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let minima: Vec<i64> = self
            .constraints
            .iter()
            .map(FilterConstraint::effective_min)
            .collect();
        Reuse::While {
            keys,
            summary: Reuse::digest(&minima),
        }
    }

    /// Upstream's `preFilterState.updateWithPod`: a pod of the pod's namespace matching a
    /// constraint's selector changes its domain's count, on nodes whose pods the constraint
    /// counts (even a terminating pod, which the prepared counts leave out: upstream does not
    /// check).
    fn count_pod(&self, changes: &mut CountChanges, other: &PodInfo, node: &NodeInfo, delta: i64) {
        if other.namespace != self.pod.namespace {
            return;
        }
        for (slot, fc) in self.constraints.iter().enumerate() {
            if !is_counted(&self.scope, node.id.0 as usize, fc.needs) {
                continue;
            }
            let c = fc.constraint;
            let selected = c
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(&other.labels));
            if let (true, Some(value)) = (selected, node.labels.get(c.topology_key)) {
                changes.add(slot as u32, c.topology_key, value, delta);
            }
        }
    }

    fn check_changed(
        &self,
        node: &NodeInfo,
        changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        for (slot, fc) in self.constraints.iter().enumerate() {
            let c = fc.constraint;
            let Some(value) = node.labels.get(c.topology_key) else {
                reasons.push(REASON_MISSING_LABEL.into());
                return false;
            };
            let delta = changes.get(slot as u32, c.topology_key, value);
            let matching = fc.counts.get(&value).copied().unwrap_or(0) + delta;
            // Only the node's own domain changed: the minimum is the other domains' or its.
            let min = if delta == 0 || fc.min_is_zero {
                fc.effective_min()
            } else if fc.min_domain == Some(value) {
                fc.second_min.min(matching)
            } else {
                fc.global_min.min(matching)
            };
            if !fc.within_skew(matching, min) {
                reasons.push(REASON.into());
                return false;
            }
        }
        true
    }
}

impl FilterRule for EvenPodsSpread {
    /// Upstream's PodTopologySpread: a node without the topology label is
    /// UnschedulableAndUnresolvable, too much skew only Unschedulable.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        if reason.as_str() == REASON_MISSING_LABEL {
            FailureKind::UnschedulableAndUnresolvable
        } else {
            FailureKind::Unschedulable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let hard = constraints(pod, WhenUnsatisfiable::DoNotSchedule);
        if hard.is_empty() {
            return FilterPrep::Skip;
        }
        let scope = node_scope(cluster, pod, &hard);
        let constraints = hard
            .iter()
            .map(|c| {
                let counts = domain_counts(cluster, pod, c, &scope);
                let min_domain = counts.iter().min_by_key(|(_, n)| **n).map(|(v, _)| *v);
                let others = |except: Option<Sym>| {
                    counts
                        .iter()
                        .filter(|(v, _)| Some(**v) != except)
                        .map(|(_, n)| *n)
                        .min()
                        .unwrap_or(NO_DOMAIN)
                };
                let self_match = c.selector.as_ref().is_some_and(|s| s.matches(&pod.labels));
                // With no domain at all, v1.36 (minimum 0 as 0 < minDomains) and v1.22
                // (minimum MaxInt32) both let every node with the keys pass, maxSkew being at
                // least 1: keep v1.22's unbounded minimum there.
                let min_is_zero =
                    !counts.is_empty() && (counts.len() as i64) < i64::from(c.min_domains);
                FilterConstraint {
                    constraint: c,
                    needs: needs(c),
                    min_is_zero,
                    global_min: others(None),
                    second_min: others(min_domain),
                    min_domain,
                    counts,
                    self_match: i64::from(self_match),
                }
            })
            .collect();
        FilterPrep::Check(Box::new(FilterCheck {
            pod,
            constraints,
            scope,
        }))
    }
}

/// Matching pods of one ScheduleAnyway constraint.
enum Counts {
    /// `kubernetes.io/hostname`: upstream counts the scored node's own pods, per node.
    PerNode(Vec<i64>),
    /// Other keys: per value, over the nodes the constraint counts.
    PerDomain(FxHashMap<Sym, i64>),
}

struct SpreadScore<'a> {
    cluster: &'a Cluster,
    constraints: Vec<(&'a SpreadConstraint, Counts)>,
    hostname: Sym,
}

impl NodeScore for SpreadScore<'_> {
    /// Reusable across a class while the node is unchanged: `score` gives a placeholder; normalising, which runs for every pod, does the work.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    /// The raw score weights each constraint by the number of its domains among the feasible
    /// nodes, which only [`NodeScore::normalize`] sees; it is computed there.
    fn score(&self, _node: &NodeInfo) -> i64 {
        0
    }

    fn score_batch(&self, _cluster: &Cluster, _nodes: &[NodeId], out: &mut [i64]) {
        out.fill(0);
    }

    /// The raw score is a placeholder.
    fn keeps_raw(&self) -> bool {
        false
    }

    /// Upstream's Score and NormalizeScore over the feasible nodes. Nodes lacking a key are
    /// ignored and score 0. A constraint's weight is ln(domains + 2), the domains being the
    /// distinct values among the other feasible nodes (for the hostname key, their number);
    /// raw = Σ count·weight + (maxSkew - 1), truncated (v1.22; rounding came in 1.24); then
    /// 100·(max + min - raw)/max, or 100 for every node when max is 0.
    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let ignored = self.raw(nodes, scores);
        let kept = || {
            scores
                .iter()
                .zip(&ignored)
                .filter(|(_, i)| !**i)
                .map(|(s, _)| *s)
        };
        let min = kept().min().unwrap_or(i64::MAX);
        let max = kept().max().unwrap_or(0).max(0);
        for (s, ignored) in scores.iter_mut().zip(&ignored) {
            *s = if *ignored {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *s) / max
            };
        }
    }

    fn raw_scores(&self, nodes: &[NodeId], scores: &mut [i64]) {
        self.raw(nodes, scores);
    }
}

impl SpreadScore<'_> {
    /// Upstream's Score: each feasible node's raw score into `scores`; returns which nodes
    /// are ignored (they lack a constraint's key; their scores are left as they were).
    fn raw(&self, nodes: &[NodeId], scores: &mut [i64]) -> Vec<bool> {
        let infos: Vec<&NodeInfo> = nodes.iter().map(|id| self.cluster.node(*id)).collect();
        let ignored: Vec<bool> = infos
            .iter()
            .map(|n| {
                self.constraints
                    .iter()
                    .any(|(c, _)| !n.labels.has(c.topology_key))
            })
            .collect();
        let scored = ignored.iter().filter(|i| !**i).count();
        let weights: Vec<f64> = self
            .constraints
            .iter()
            .map(|(c, _)| {
                let size = if c.topology_key == self.hostname {
                    scored
                } else {
                    infos
                        .iter()
                        .zip(&ignored)
                        .filter(|(_, i)| !**i)
                        .filter_map(|(n, _)| n.labels.get(c.topology_key))
                        .collect::<FxHashSet<Sym>>()
                        .len()
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        for (k, (id, node)) in nodes.iter().zip(&infos).enumerate() {
            if ignored[k] {
                continue;
            }
            let mut raw = 0f64;
            for ((c, counts), w) in self.constraints.iter().zip(&weights) {
                let count = match counts {
                    Counts::PerNode(per_node) => per_node[id.0 as usize],
                    Counts::PerDomain(per_domain) => node
                        .labels
                        .get(c.topology_key)
                        .and_then(|v| per_domain.get(&v).copied())
                        .unwrap_or(0),
                };
                raw += count as f64 * w + f64::from(c.max_skew - 1);
            }
            scores[k] = raw as i64;
        }
        ignored
    }
}

impl ScoreRule for EvenPodsSpreadPriority {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let soft = constraints(pod, WhenUnsatisfiable::ScheduleAnyway);
        if soft.is_empty() {
            // v1.22 still scores such a pod: Score gives every node 0 and NormalizeScore turns
            // an all-zero maximum into MaxNodeScore, so every node gets 100. (Later releases
            // skip the plugin instead.) The constant changes no decision.
            return ScorePrep::Constant(MAX_NODE_SCORE);
        }
        let hostname = cluster.keys().hostname;
        // Hostname constraints count per node without the scope check (v1.36 too, whatever
        // the node inclusion policies: its Score counts the scored node's pods); skip the
        // O(nodes) scope pass when they are all there is.
        let scope = if soft.iter().all(|c| c.topology_key == hostname) {
            Vec::new()
        } else {
            node_scope(cluster, pod, &soft)
        };
        let constraints = soft
            .into_iter()
            .map(|c| {
                let counts = if c.topology_key == hostname {
                    let mut per_node = vec![0; cluster.node_slots()];
                    for n in counted_pods(cluster, pod, c) {
                        per_node[n.0 as usize] += 1;
                    }
                    Counts::PerNode(per_node)
                } else {
                    Counts::PerDomain(domain_counts(cluster, pod, c, &scope))
                };
                (c, counts)
            })
            .collect();
        ScorePrep::PerNode(Box::new(SpreadScore {
            cluster,
            constraints,
            hostname,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::In;
    use crate::model::{Node, Pod, WhenUnsatisfiable::*};
    use crate::testkit::*;

    /// Name, nodes, running pods, the pod, each node's reason ("" passes).
    type FilterCase = (&'static str, Vec<Node>, Vec<Pod>, Pod, Vec<&'static str>);
    /// Name, nodes, how many lead the feasible list, running pods, the pod, scores.
    type ScoreCase = (&'static str, Vec<Node>, usize, Vec<Pod>, Pod, Vec<i64>);

    const SKEW: &str = REASON;
    const MISSING: &str = REASON_MISSING_LABEL;

    /// A node with a zone and a `node` label, as upstream's tests build them.
    fn zn(name: &str, zone: &str) -> Node {
        node(name).label("zone", zone).label("node", name).build()
    }

    fn four_nodes() -> Vec<Node> {
        vec![
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ]
    }

    /// A pod labelled `foo` on a node.
    fn foo_on(name: &str, node: &str) -> Pod {
        pod(name).label("foo", "").on(node).build()
    }

    /// Matching pods spread as 2/1/0/3 over node-a, node-b, node-x, node-y.
    fn spread_2_1_0_3() -> Vec<Pod> {
        vec![
            foo_on("p-a1", "node-a"),
            foo_on("p-a2", "node-a"),
            foo_on("p-b1", "node-b"),
            foo_on("p-y1", "node-y"),
            foo_on("p-y2", "node-y"),
            foo_on("p-y3", "node-y"),
        ]
    }

    fn hard(p: PodBuilder, max_skew: i32, key: &str) -> PodBuilder {
        p.spread(max_skew, key, DoNotSchedule, Some(exists(&["foo"])))
    }

    fn filter(nodes: Vec<Node>, pods: Vec<Pod>, incoming: Pod) -> Vec<String> {
        let mut cl = cluster(nodes, pods);
        run_filter(&EvenPodsSpread, &mut cl, incoming)
            .into_iter()
            .map(|(_, r)| {
                assert!(r.len() <= 1, "one reason at most: {r:?}");
                r.into_iter().next().unwrap_or_default()
            })
            .collect()
    }

    /// Upstream's TestSingleConstraint and TestMultipleConstraints, restated (node order
    /// node-a, node-b, node-x, node-y unless stated).
    #[test]
    fn filter_table() {
        let p = || pod("p").label("foo", "");
        let cases: Vec<FilterCase> = vec![
            (
                "no constraints",
                four_nodes(),
                spread_2_1_0_3(),
                pod("p").build(),
                vec!["", "", "", ""],
            ),
            (
                "no existing pods",
                four_nodes(),
                vec![],
                hard(p(), 1, "zone").build(),
                vec!["", "", "", ""],
            ),
            (
                "no existing pods, the pod does not match itself",
                four_nodes(),
                vec![],
                p().spread(1, "zone", DoNotSchedule, Some(exists(&["bar"])))
                    .build(),
                vec!["", "", "", ""],
            ),
            (
                "pods of other namespaces do not count",
                four_nodes(),
                vec![
                    pod("p-a1").ns("ns1").label("foo", "").on("node-a").build(),
                    pod("p-b1").ns("ns2").label("foo", "").on("node-a").build(),
                    foo_on("p-x1", "node-x"),
                    foo_on("p-y1", "node-y"),
                ],
                hard(p(), 1, "zone").build(),
                vec!["", "", SKEW, SKEW],
            ),
            (
                "zones 3/3: all fit",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 1, "zone").build(),
                vec!["", "", "", ""],
            ),
            (
                "zones 1/2 because node-b lacks the zone label",
                vec![
                    zn("node-a", "zone1"),
                    node("node-b")
                        .label("zon", "zone1")
                        .label("node", "node-b")
                        .build(),
                    zn("node-x", "zone2"),
                    zn("node-y", "zone2"),
                ],
                vec![
                    foo_on("p-a1", "node-a"),
                    foo_on("p-b1", "node-b"),
                    foo_on("p-x1", "node-x"),
                    foo_on("p-y1", "node-y"),
                ],
                hard(p(), 1, "zone").build(),
                vec!["", MISSING, SKEW, SKEW],
            ),
            (
                "no node has the key",
                vec![zn("node-a", "zone1"), zn("node-x", "zone2")],
                vec![],
                hard(p(), 1, "rack").build(),
                vec![MISSING, MISSING],
            ),
            (
                "nodes 2/1/0/3: only node-x fits",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 1, "node").build(),
                vec![SKEW, SKEW, "", SKEW],
            ),
            (
                "nodes 2/1/0/3, maxSkew 2: node-b and node-x fit",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 2, "node").build(),
                vec![SKEW, "", "", SKEW],
            ),
            (
                "nodes 2/1/0/3, the pod does not match itself",
                four_nodes(),
                spread_2_1_0_3(),
                hard(pod("p").label("bar", ""), 1, "node").build(),
                vec![SKEW, "", "", SKEW],
            ),
            (
                // Only node-a and node-y count (2/~1~/~0~/3); node-b and node-x are left to
                // the node affinity filter.
                "node affinity limits the counted nodes",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 1, "node")
                    .node_affinity(vec![node_term(vec![req(
                        "node",
                        In,
                        &["node-a", "node-y"],
                    )])])
                    .build(),
                vec!["", "", "", SKEW],
            ),
            (
                "terminating pods do not count",
                vec![
                    node("node-a").label("node", "node-a").build(),
                    node("node-b").label("node", "node-b").build(),
                ],
                vec![
                    pod("p-a")
                        .label("foo", "")
                        .on("node-a")
                        .terminating()
                        .build(),
                    foo_on("p-b", "node-b"),
                ],
                hard(p(), 1, "node").build(),
                vec!["", SKEW],
            ),
            (
                "two constraints, zones 3/3 and nodes 2/1/0/3: node-x",
                four_nodes(),
                spread_2_1_0_3(),
                hard(hard(p(), 1, "zone"), 1, "node").build(),
                vec![SKEW, SKEW, "", SKEW],
            ),
            (
                "two constraints, zones 3/4 and nodes 2/1/0/4: none",
                four_nodes(),
                [spread_2_1_0_3(), vec![foo_on("p-y4", "node-y")]].concat(),
                hard(hard(p(), 1, "zone"), 1, "node").build(),
                vec![SKEW, SKEW, SKEW, SKEW],
            ),
            (
                "a nil selector counts nothing and the pod does not match it",
                four_nodes(),
                spread_2_1_0_3(),
                p().spread(1, "node", DoNotSchedule, None).build(),
                vec!["", "", "", ""],
            ),
            (
                "no node counts (node selector matches none): the minimum is unbounded",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 1, "node").node_selector("disk", "ssd").build(),
                vec!["", "", "", ""],
            ),
            (
                "the first failing constraint decides the reason; node-x lacks the rack key",
                four_nodes()
                    .into_iter()
                    .map(|n| {
                        let mut n = n;
                        if n.meta.name != "node-x" {
                            n.meta.labels.insert("rack".into(), "r1".into());
                        }
                        n
                    })
                    .collect(),
                spread_2_1_0_3(),
                hard(hard(p(), 1, "node"), 1, "rack").build(),
                vec![SKEW, "", MISSING, SKEW],
            ),
            (
                "when no node has every key nothing counts: only missing labels fail",
                four_nodes(),
                spread_2_1_0_3(),
                hard(hard(p(), 1, "node"), 1, "rack").build(),
                vec![MISSING, MISSING, MISSING, MISSING],
            ),
            (
                "ScheduleAnyway constraints do not filter",
                four_nodes(),
                spread_2_1_0_3(),
                p().spread(1, "rack", ScheduleAnyway, Some(exists(&["foo"])))
                    .build(),
                vec!["", "", "", ""],
            ),
        ];
        for (name, nodes, pods, incoming, want) in cases {
            assert_eq!(filter(nodes, pods, incoming), want, "{name}");
        }
    }

    /// Upstream's `taints` of filtering_test.go and scoring_test.go (v1.36.3).
    const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

    fn keyed(name: &str) -> crate::testkit::NodeBuilder {
        node(name).label("node", name)
    }

    /// Fields v1.22 never knew, from v1.36.3's filtering_test.go (TestSingleConstraint's
    /// minDomains and NodeInclusionPolicy cases, TestPreFilterState's node inclusion cases
    /// turned into Filter verdicts). Each verdict follows `calPreFilterState` (which nodes
    /// count, per constraint, by `matchNodeInclusionPolicies`), `minMatchNum` (the minimum is
    /// 0 while there are fewer domains than minDomains) and `Filter` (matching + self -
    /// minimum <= maxSkew), worked in the comments.
    #[test]
    fn filter_table_v136_fields() {
        use crate::model::NodeInclusionPolicy::{Honor, Ignore};
        use crate::model::TaintEffect::NoSchedule;
        let p = || pod("p").label("foo", "");
        let nodes_abc = || {
            vec![
                keyed("node-a").build(),
                keyed("node-b").build(),
                keyed("node-c").build(),
            ]
        };
        let pods_2_2_1 = || foo_pods(&[("node-a", 2), ("node-b", 2), ("node-c", 1)]);
        let zones_2_1 = || {
            vec![
                foo_on("p-b1", "node-a"),
                foo_on("p-b2", "node-b"),
                foo_on("p-y1", "node-y"),
            ]
        };
        // Nodes with a `foo` label except node-y; matching pods 1/1/0/1.
        let foo_nodes = || {
            vec![
                keyed("node-a").label("foo", "").build(),
                keyed("node-b").label("foo", "").build(),
                keyed("node-x").label("foo", "").build(),
                keyed("node-y").build(),
            ]
        };
        let pods_1_1_0_1 = || {
            vec![
                foo_on("p-b1", "node-a"),
                foo_on("p-b2", "node-b"),
                foo_on("p-y1", "node-y"),
            ]
        };
        let tainted_y = || {
            vec![
                keyed("node-a").build(),
                keyed("node-b").build(),
                keyed("node-x").build(),
                keyed("node-y").taint(UNSCHEDULABLE, "", NoSchedule).build(),
            ]
        };
        let bar_on = |name: &str, node: &str| pod(name).label("bar", "").on(node).build();
        // TestPreFilterState's "NodeTaintsPolicy honored" nodes and pods: bar pods 1/2/0.
        let bar_nodes = || {
            vec![
                keyed("node-a").build(),
                keyed("node-b").build(),
                keyed("node-c")
                    .taint(UNSCHEDULABLE, "", NoSchedule)
                    .label("bar", "")
                    .build(),
            ]
        };
        let bar_pods = || {
            vec![
                bar_on("p-a", "node-a"),
                bar_on("p-b", "node-b"),
                bar_on("p-c", "node-b"),
                pod("p-d").on("node-c").build(),
            ]
        };
        let bar_taints_honored = || {
            pod("p")
                .label("foo", "")
                .spread(1, "node", DoNotSchedule, Some(exists(&["bar"])))
                .inclusion(None, Some(Honor))
        };
        let zone_nodes = |b_taint: bool, foo: [bool; 3]| {
            ["node-a", "node-b", "node-x"]
                .iter()
                .zip(foo)
                .map(|(name, foo)| {
                    let zone = if *name == "node-x" { "zone2" } else { "zone1" };
                    let mut n = keyed(name).label("zone", zone);
                    if foo {
                        n = n.label("foo", "");
                    }
                    if b_taint && *name == "node-b" {
                        n = n.taint(UNSCHEDULABLE, "", NoSchedule);
                    }
                    n.build()
                })
                .collect::<Vec<_>>()
        };
        let pods_b2_x1 = || foo_pods(&[("node-b", 2), ("node-x", 1)]);
        let cases: Vec<FilterCase> = vec![
            (
                // Domains 3 < minDomains 4: minimum 0; a, b: 2 + 1 - 0 > 2.
                "nodes 2/2/1, maxSkew 2, fewer domains than minDomains: node-c",
                nodes_abc(),
                pods_2_2_1(),
                hard(p(), 2, "node").min_domains(4).build(),
                vec![SKEW, SKEW, ""],
            ),
            (
                // Domains 3 >= minDomains 2: minimum 1; a, b: 2 + 1 - 1 <= 2.
                "nodes 2/2/1, maxSkew 2, more domains than minDomains: all",
                nodes_abc(),
                pods_2_2_1(),
                hard(p(), 2, "node").min_domains(2).build(),
                vec!["", "", ""],
            ),
            (
                // Zones 2/1, 2 domains < 3: minimum 0; zone1: 2 + 1 - 0 > 2.
                "zones 2/1, maxSkew 2, fewer domains than minDomains: zone2",
                four_nodes(),
                zones_2_1(),
                hard(p(), 2, "zone").min_domains(3).build(),
                vec![SKEW, SKEW, "", ""],
            ),
            (
                "zones 2/1, maxSkew 2, minDomains 1: all",
                four_nodes(),
                zones_2_1(),
                hard(p(), 2, "zone").min_domains(1).build(),
                vec!["", "", "", ""],
            ),
            (
                // No domain: v1.36's minimum is 0 (0 < 3), matching 0 + 1 - 0 <= 1.
                "minDomains with no counted node: all",
                four_nodes(),
                spread_2_1_0_3(),
                hard(p(), 1, "node")
                    .min_domains(3)
                    .node_selector("disk", "ssd")
                    .build(),
                vec!["", "", "", ""],
            ),
            (
                // 1/1/0/~0~: node-y is not counted, its domain absent (0 + 1 - 0).
                "nodeAffinityPolicy Honor (the default) with a node selector",
                foo_nodes(),
                pods_1_1_0_1(),
                hard(p(), 1, "node")
                    .node_selector("foo", "")
                    .inclusion(Some(Honor), None)
                    .build(),
                vec![SKEW, SKEW, "", ""],
            ),
            (
                // 1/1/0/1: node-y counts.
                "nodeAffinityPolicy Ignore with a node selector",
                foo_nodes(),
                pods_1_1_0_1(),
                hard(p(), 1, "node")
                    .node_selector("foo", "")
                    .inclusion(Some(Ignore), None)
                    .build(),
                vec![SKEW, SKEW, "", SKEW],
            ),
            (
                "nodeAffinityPolicy Honor with required node affinity",
                foo_nodes(),
                pods_1_1_0_1(),
                hard(p(), 1, "node")
                    .node_affinity(vec![node_term(vec![req("foo", In, &[""])])])
                    .build(),
                vec![SKEW, SKEW, "", ""],
            ),
            (
                "nodeAffinityPolicy Ignore with required node affinity",
                foo_nodes(),
                pods_1_1_0_1(),
                hard(p(), 1, "node")
                    .node_affinity(vec![node_term(vec![req("foo", In, &[""])])])
                    .inclusion(Some(Ignore), None)
                    .build(),
                vec![SKEW, SKEW, "", SKEW],
            ),
            (
                // 1/1/0/~0~: the NoSchedule taint is not tolerated, node-y is not counted.
                "nodeTaintsPolicy Honor",
                tainted_y(),
                pods_1_1_0_1(),
                hard(p(), 1, "node").inclusion(None, Some(Honor)).build(),
                vec![SKEW, SKEW, "", ""],
            ),
            (
                "nodeTaintsPolicy Ignore (the default)",
                tainted_y(),
                pods_1_1_0_1(),
                hard(p(), 1, "node").inclusion(None, Some(Ignore)).build(),
                vec![SKEW, SKEW, "", SKEW],
            ),
            (
                // bar pods 1/2 (node-c left out), minimum 1, the pod does not match: all pass.
                "nodeTaintsPolicy Honor, untolerated taint",
                bar_nodes(),
                bar_pods(),
                bar_taints_honored().build(),
                vec!["", "", ""],
            ),
            (
                // The taint is tolerated: 1/2/0, minimum 0, node-b: 2 + 0 - 0 > 1.
                "nodeTaintsPolicy Honor, tolerated taint",
                bar_nodes(),
                bar_pods(),
                bar_taints_honored()
                    .tolerate(
                        UNSCHEDULABLE,
                        crate::model::TolerationOperator::Exists,
                        "",
                        None,
                    )
                    .build(),
                vec!["", SKEW, ""],
            ),
            (
                // Zone (Honor affinity): zone1 0 (node-b left out), zone2 1; node (Ignore):
                // 0/2/1. node-b fails the node constraint, node-x the zone one.
                "two constraints, zone honours the node selector, node ignores it",
                zone_nodes(false, [true, false, true]),
                pods_b2_x1(),
                hard(hard(p().node_selector("foo", ""), 1, "zone"), 1, "node")
                    .inclusion(Some(Ignore), None)
                    .build(),
                vec!["", SKEW, SKEW],
            ),
            (
                // Zone (Honor taints): zone1 0 (tainted node-b left out), zone2 1; node
                // (defaults): 0/2/1.
                "two constraints, zone honours taints, node does not",
                zone_nodes(true, [true, false, true]),
                pods_b2_x1(),
                hard(hard(p(), 1, "zone").inclusion(None, Some(Honor)), 1, "node").build(),
                vec!["", SKEW, SKEW],
            ),
        ];
        for (name, nodes, pods, incoming, want) in cases {
            assert_eq!(filter(nodes, pods, incoming), want, "{name}");
        }
    }

    /// The incoming pod's reason on node `on` once `other` is added there (`delta` 1) or
    /// removed (-1), as for a nominated pod or a preemption victim, with how many counts
    /// changed.
    fn filter_after(
        nodes: Vec<Node>,
        pods: Vec<Pod>,
        incoming: Pod,
        other: Pod,
        on: &str,
        delta: i64,
    ) -> (usize, String) {
        let mut cl = cluster(nodes, pods);
        let info = cl.compile_pod(incoming);
        let other = cl.compile_pod(other);
        let ctx = CycleContext {
            cluster: &cl,
            pod: &info,
            nominated: true,
        };
        let FilterPrep::Check(check) = EvenPodsSpread.prepare(ctx) else {
            panic!("a DoNotSchedule constraint prepares a check");
        };
        let node = cl.node(cl.node_by_name(on).expect("test node"));
        let mut changes = CountChanges::default();
        check.count_pod(&mut changes, &other, node, delta);
        let mut reasons = Vec::new();
        check.check_changed(node, &changes, &mut reasons);
        (
            changes.iter().count(),
            reasons.first().map(|r| r.to_string()).unwrap_or_default(),
        )
    }

    /// Counts changed by a pod added or removed (v1.36.3 filtering.go `updateWithPod`: only
    /// on nodes that have every key and pass the constraint's `matchNodeInclusionPolicies`)
    /// and the minimum under minDomains (`minMatchNum`, which reads only the number of
    /// domains, which adding or removing pods does not change).
    #[test]
    fn counts_after_adding_or_removing_pods() {
        use crate::model::NodeInclusionPolicy::Honor;
        use crate::model::TaintEffect::NoSchedule;
        let p = || pod("p").label("foo", "");
        // TestPreFilterStateAddPod's nodes: node-a in zone1 tainted, node-b in zone2.
        let nodes = || {
            vec![
                keyed("node-a")
                    .label("zone", "zone1")
                    .taint(UNSCHEDULABLE, "", NoSchedule)
                    .build(),
                zn("node-b", "zone2"),
            ]
        };
        let pods = || vec![foo_on("p-a1", "node-a"), foo_on("p-b2", "node-b")];
        let added = || foo_on("p-a3", "node-a");
        let honoring = || hard(p(), 1, "zone").inclusion(None, Some(Honor)).build();
        // Taints ignored: node-a counts, zone1 goes to 2 and fails (2 + 1 - 1 > 1).
        assert_eq!(
            filter_after(
                nodes(),
                pods(),
                hard(p(), 1, "zone").build(),
                added(),
                "node-a",
                1
            ),
            (1, SKEW.to_owned())
        );
        // Taints honoured and untolerated: node-a does not count, nothing changes; zone1
        // has no count, 0 + 1 - 1 passes.
        assert_eq!(
            filter_after(nodes(), pods(), honoring(), added(), "node-a", 1),
            (0, String::new())
        );
        // Tolerated: node-a counts again (upstream's "add a pod when scheduling taint
        // tolerated pod with NodeInclusionPolicy enabled").
        let tolerating = hard(
            p().tolerate(
                UNSCHEDULABLE,
                crate::model::TolerationOperator::Exists,
                "",
                None,
            ),
            1,
            "zone",
        )
        .inclusion(None, Some(Honor))
        .build();
        assert_eq!(
            filter_after(nodes(), pods(), tolerating, added(), "node-a", 1),
            (1, SKEW.to_owned())
        );
        // Nodes 2/2/1, maxSkew 2, minDomains 4: one more pod on node-c makes it 2 + 1 - 0 > 2,
        // the minimum staying 0 (without minDomains it would be 2: 2 + 1 - 2 passes).
        let abc = || {
            vec![
                keyed("node-a").build(),
                keyed("node-b").build(),
                keyed("node-c").build(),
            ]
        };
        let pods_2_2_1 = || foo_pods(&[("node-a", 2), ("node-b", 2), ("node-c", 1)]);
        assert_eq!(
            filter_after(
                abc(),
                pods_2_2_1(),
                hard(p(), 2, "node").min_domains(4).build(),
                foo_on("p-c2", "node-c"),
                "node-c",
                1,
            ),
            (1, SKEW.to_owned())
        );
        assert_eq!(
            filter_after(
                abc(),
                pods_2_2_1(),
                hard(p(), 2, "node").build(),
                foo_on("p-c2", "node-c"),
                "node-c",
                1,
            ),
            (1, String::new())
        );
        // Removing a pod from node-a: 1 + 1 - 0 <= 2.
        assert_eq!(
            filter_after(
                abc(),
                pods_2_2_1(),
                hard(p(), 2, "node").min_domains(4).build(),
                foo_on("p-node-a-0", "node-a"),
                "node-a",
                -1,
            ),
            (1, String::new())
        );
    }

    fn host(name: &str) -> Node {
        node(name).build()
    }

    fn soft(p: PodBuilder, max_skew: i32, key: &str, label: &str) -> PodBuilder {
        p.spread(max_skew, key, ScheduleAnyway, Some(exists(&[label])))
    }

    /// Scores with `feasible` the first n nodes (the rest failed the filters).
    fn score(nodes: Vec<Node>, feasible: usize, pods: Vec<Pod>, incoming: Pod) -> Vec<i64> {
        let mut cl = cluster(nodes, pods);
        let ids: Vec<NodeId> = cl.node_order()[..feasible].to_vec();
        run_score_on(&EvenPodsSpreadPriority, &mut cl, incoming, &ids)
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    }

    fn foo_pods(spec: &[(&str, usize)]) -> Vec<Pod> {
        spec.iter()
            .flat_map(|(n, count)| (0..*count).map(move |i| foo_on(&format!("p-{n}-{i}"), n)))
            .collect()
    }

    /// Upstream's TestPodTopologySpreadScore, restated. v1.22 truncates the raw score (the
    /// rounding of PR #107384 came in 1.24), which these expectations pin.
    #[test]
    fn score_table() {
        const H: &str = "kubernetes.io/hostname";
        let p = || pod("p").label("foo", "");
        let four = || {
            vec![
                host("node-a"),
                host("node-b"),
                host("node-c"),
                host("node-d"),
            ]
        };
        let cases: Vec<ScoreCase> = vec![
            (
                "no existing pods",
                vec![host("node-a"), host("node-b")],
                2,
                vec![],
                soft(p(), 1, H, "foo").build(),
                vec![100, 100],
            ),
            (
                "only one candidate node",
                vec![host("node-a"), host("node-b")],
                1,
                foo_pods(&[("node-a", 2), ("node-b", 1)]),
                soft(p(), 1, H, "foo").build(),
                vec![100],
            ),
            (
                "same number of matching pods everywhere",
                vec![host("node-a"), host("node-b")],
                2,
                foo_pods(&[("node-a", 1), ("node-b", 1)]),
                soft(p(), 1, H, "foo").build(),
                vec![100, 100],
            ),
            (
                "nodes 2/1/0/3",
                four(),
                4,
                foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]),
                soft(p(), 1, H, "foo").build(),
                vec![40, 80, 100, 0],
            ),
            (
                "nodes 2/1/0/3, maxSkew 2",
                four(),
                4,
                foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]),
                soft(p(), 2, H, "foo").build(),
                vec![50, 83, 100, 16],
            ),
            (
                "nodes 4/3/2/1, maxSkew 3",
                four(),
                4,
                foo_pods(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)]),
                soft(p(), 3, H, "foo").build(),
                vec![33, 55, 77, 100],
            ),
            (
                "nodes 4/2/1/~3~",
                vec![
                    host("node-a"),
                    host("node-b"),
                    host("node-x"),
                    host("node-y"),
                ],
                3,
                foo_pods(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)]),
                soft(p(), 1, H, "foo").build(),
                vec![16, 66, 100],
            ),
            (
                "nodes 4/?2?/1/~3~: node-b lacks the key and is ignored",
                vec![
                    host("node-a"),
                    node("node-b")
                        .unlabel("kubernetes.io/hostname")
                        .label("n", "node-b")
                        .build(),
                    host("node-x"),
                    host("node-y"),
                ],
                3,
                foo_pods(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)]),
                soft(p(), 1, H, "foo").build(),
                vec![20, 0, 100],
            ),
            (
                "zones 4+2 / 1+~3~",
                vec![
                    node("node-a").label("zone", "zone1").build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-x").label("zone", "zone2").build(),
                    node("node-y").label("zone", "zone2").build(),
                ],
                3,
                foo_pods(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)]),
                soft(p(), 1, "zone", "foo").build(),
                vec![62, 62, 100],
            ),
            (
                "zone and node constraints, nodes 2/~1~/2/~4~",
                vec![
                    node("node-a").label("zone", "zone1").build(),
                    node("node-x").label("zone", "zone2").build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-y").label("zone", "zone2").build(),
                ],
                2,
                foo_pods(&[("node-a", 2), ("node-b", 1), ("node-x", 2), ("node-y", 4)]),
                soft(soft(p(), 1, "zone", "foo"), 1, H, "foo").build(),
                vec![100, 54],
            ),
            (
                "zone and node constraints with different selectors",
                vec![
                    node("node-a").label("zone", "zone1").build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-x").label("zone", "zone2").build(),
                    node("node-y").label("zone", "zone2").build(),
                ],
                4,
                vec![
                    foo_on("p-a1", "node-a"),
                    pod("p-b1")
                        .label("foo", "")
                        .label("bar", "")
                        .on("node-b")
                        .build(),
                    foo_on("p-y1", "node-y"),
                    pod("p-y2").label("bar", "").on("node-y").build(),
                ],
                soft(soft(p().label("bar", ""), 1, "zone", "foo"), 1, H, "bar").build(),
                vec![75, 25, 100, 50],
            ),
            (
                "zone and node constraints with different selectors, some nodes empty",
                vec![
                    node("node-a").label("zone", "zone1").build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-x").label("zone", "zone2").build(),
                    node("node-y").label("zone", "zone2").build(),
                ],
                4,
                vec![
                    pod("p-b1").label("bar", "").on("node-b").build(),
                    foo_on("p-x1", "node-x"),
                    pod("p-y1")
                        .label("foo", "")
                        .label("bar", "")
                        .on("node-y")
                        .build(),
                ],
                soft(soft(p().label("bar", ""), 1, "zone", "foo"), 1, H, "bar").build(),
                vec![100, 75, 50, 0],
            ),
            (
                "zone and node constraints with different selectors, 3 of 4 candidates",
                vec![
                    node("node-a").label("zone", "zone1").build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-x").label("zone", "zone2").build(),
                    node("node-y").label("zone", "zone2").build(),
                ],
                3,
                vec![
                    foo_on("p-a1", "node-a"),
                    pod("p-b1")
                        .label("foo", "")
                        .label("bar", "")
                        .on("node-b")
                        .build(),
                    foo_on("p-y1", "node-y"),
                    pod("p-y2").label("bar", "").on("node-y").build(),
                ],
                soft(soft(p().label("bar", ""), 1, "zone", "foo"), 1, H, "bar").build(),
                vec![75, 25, 100],
            ),
            (
                "pods of other namespaces do not count",
                vec![host("node-a"), host("node-b")],
                2,
                vec![
                    pod("p-a1").ns("ns1").label("foo", "").on("node-a").build(),
                    foo_on("p-a2", "node-a"),
                    foo_on("p-b1", "node-b"),
                    foo_on("p-b2", "node-b"),
                ],
                soft(p(), 1, H, "foo").build(),
                vec![100, 50],
            ),
            (
                "terminating pods do not count",
                vec![host("node-a"), host("node-b")],
                2,
                vec![
                    pod("p-a")
                        .label("foo", "")
                        .on("node-a")
                        .terminating()
                        .build(),
                    foo_on("p-b", "node-b"),
                ],
                soft(p(), 1, H, "foo").build(),
                vec![100, 0],
            ),
            (
                // v1.22 runs Score and NormalizeScore for such a pod too: every node scores 0,
                // and an all-zero maximum normalises to 100.
                "no ScheduleAnyway constraint: 100 everywhere",
                four(),
                4,
                foo_pods(&[("node-a", 2)]),
                p().spread(1, H, DoNotSchedule, Some(exists(&["foo"])))
                    .build(),
                vec![100, 100, 100, 100],
            ),
            (
                "a zone's count leaves out nodes failing the pod's node affinity",
                vec![
                    node("node-a")
                        .label("zone", "zone1")
                        .label("disk", "ssd")
                        .build(),
                    node("node-b").label("zone", "zone1").build(),
                    node("node-x")
                        .label("zone", "zone2")
                        .label("disk", "ssd")
                        .build(),
                ],
                3,
                foo_pods(&[("node-a", 1), ("node-b", 5), ("node-x", 2)]),
                soft(p(), 1, "zone", "foo")
                    .node_selector("disk", "ssd")
                    .build(),
                vec![100, 100, 50],
            ),
        ];
        for (name, nodes, feasible, pods, incoming, want) in cases {
            assert_eq!(score(nodes, feasible, pods, incoming), want, "{name}");
        }
    }

    /// v1.36.3 scoring_test.go's NodeInclusionPolicy and minDomains cases. Which nodes' pods
    /// count follows v1.36 (`PreScore` skips a node for a constraint when
    /// `matchNodeInclusionPolicies` fails; domains and weights come from the feasible nodes,
    /// `initPreScoreState`); the raw score is still truncated as v1.22 does, where v1.36
    /// rounds, so some expectations differ from upstream's test. Nodes a, b, c with key `node`,
    /// all feasible: weight ln(3 + 2) = 1.609, raw = count·1.609 + (maxSkew - 1).
    #[test]
    fn score_table_v136_fields() {
        use crate::model::NodeInclusionPolicy::{Honor, Ignore};
        use crate::model::TaintEffect::NoSchedule;
        let p = || pod("p").label("foo", "");
        let foo_nodes = || {
            vec![
                keyed("node-a").label("foo", "").build(),
                keyed("node-b").label("foo", "").build(),
                keyed("node-c").build(),
            ]
        };
        let tainted_c = || {
            vec![
                keyed("node-a").build(),
                keyed("node-b").build(),
                keyed("node-c").taint(UNSCHEDULABLE, "", NoSchedule).build(),
            ]
        };
        let pods_2_1_1 = || foo_pods(&[("node-a", 2), ("node-b", 1), ("node-c", 1)]);
        let by_selector = || p().node_selector("foo", "");
        let by_affinity = || p().node_affinity(vec![node_term(vec![req("foo", In, &[""])])]);
        let cases: Vec<ScoreCase> = vec![
            (
                // minDomains is read by Filter only: counts 2/2/1, raw 4.21, 4.21, 2.60
                // truncated to 4, 4, 2; 100·(4 + 2 - raw)/4.
                "minDomains has no effect on ScheduleAnyway",
                vec![
                    keyed("node-a").build(),
                    keyed("node-b").build(),
                    keyed("node-c").build(),
                ],
                3,
                foo_pods(&[("node-a", 2), ("node-b", 2), ("node-c", 1)]),
                soft(p(), 2, "node", "foo").min_domains(10).build(),
                vec![50, 50, 100],
            ),
            (
                // node-c is not counted: 2/1/0, raw 3, 1, 0; 100·(3 + 0 - raw)/3.
                "nodeAffinityPolicy Honor with a node selector",
                foo_nodes(),
                3,
                pods_2_1_1(),
                soft(by_selector(), 1, "node", "foo").build(),
                vec![0, 66, 100],
            ),
            (
                // Every node counts: 2/1/1, raw 3, 1, 1; 100·(3 + 1 - raw)/3.
                "nodeAffinityPolicy Ignore with a node selector",
                foo_nodes(),
                3,
                pods_2_1_1(),
                soft(by_selector(), 1, "node", "foo")
                    .inclusion(Some(Ignore), None)
                    .build(),
                vec![33, 100, 100],
            ),
            (
                "nodeAffinityPolicy Honor with required node affinity",
                foo_nodes(),
                3,
                pods_2_1_1(),
                soft(by_affinity(), 1, "node", "foo")
                    .inclusion(Some(Honor), None)
                    .build(),
                vec![0, 66, 100],
            ),
            (
                "nodeAffinityPolicy Ignore with required node affinity",
                foo_nodes(),
                3,
                pods_2_1_1(),
                soft(by_affinity(), 1, "node", "foo")
                    .inclusion(Some(Ignore), None)
                    .build(),
                vec![33, 100, 100],
            ),
            (
                "nodeTaintsPolicy Honor: the tainted node is not counted",
                tainted_c(),
                3,
                pods_2_1_1(),
                soft(p(), 1, "node", "foo")
                    .inclusion(None, Some(Honor))
                    .build(),
                vec![0, 66, 100],
            ),
            (
                "nodeTaintsPolicy Ignore (the default)",
                tainted_c(),
                3,
                pods_2_1_1(),
                soft(p(), 1, "node", "foo").build(),
                vec![33, 100, 100],
            ),
            (
                // The hostname key counts the scored node's own pods whatever the policies
                // (v1.36 `Score`): 2/1/1, raw 3, 1, 1.
                "hostname constraints ignore nodeTaintsPolicy",
                vec![
                    host("node-a"),
                    host("node-b"),
                    node("node-c").taint(UNSCHEDULABLE, "", NoSchedule).build(),
                ],
                3,
                pods_2_1_1(),
                soft(p(), 1, "kubernetes.io/hostname", "foo")
                    .inclusion(None, Some(Honor))
                    .build(),
                vec![33, 100, 100],
            ),
        ];
        for (name, nodes, feasible, pods, incoming, want) in cases {
            assert_eq!(score(nodes, feasible, pods, incoming), want, "{name}");
        }
    }
}
