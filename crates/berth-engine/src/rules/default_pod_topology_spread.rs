//! SelectorSpreadPriority with the DefaultPodTopologySpread feature gate on (v1.22's
//! default): v1.22's legacy registry serves it with the PodTopologySpread score plugin and
//! `DefaultingType: System` instead of SelectorSpread.
//!
//! A pod with its own `topologySpreadConstraints` is scored on its ScheduleAnyway ones, as
//! EvenPodsSpreadPriority does. A pod without any gets upstream's system default constraints,
//! `kubernetes.io/hostname` with maxSkew 3 and `topology.kubernetes.io/zone` with maxSkew 5,
//! over the pods its Services and controller select (the selector SelectorSpread uses); with
//! no such selector every node scores 100. For system-defaulted constraints upstream does not
//! require nodes to carry the keys:
//! - a zone's count sums the matching pods on every node of that zone value that passes the
//!   pod's node selector and required affinity;
//! - a constraint's weight is ln(domains + 2) over the feasible nodes, the nodes without a
//!   zone counting as one more zone domain, every feasible node a hostname domain;
//! - a node scores `count * weight + (maxSkew - 1)` for each key it carries, summed in float
//!   and truncated, then `100 * (max + min - raw) / max` over the feasible nodes (100 for
//!   every node when max is 0).

use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId};
use crate::framework::{
    CycleContext, FeasibleNodes, Grouped, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule,
    map_scores_within,
};
use crate::labels::Sym;
use crate::rules::domain_rows::{DomainRows, Domains, NO_DOMAIN};
use crate::rules::pod_topology_spread::{EvenPodsSpreadPriority, matches_required_node_affinity};
use crate::rules::selector_spread::{count_occupied, dense_counts, spread_selectors};

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = crate::rules::pod_topology_spread::UPSTREAM_PLUGIN;

/// maxSkew of the system default hostname constraint.
const HOSTNAME_MAX_SKEW: i64 = 3;
/// maxSkew of the system default zone constraint.
const ZONE_MAX_SKEW: i64 = 5;

/// The rule.
#[derive(Default)]
pub struct DefaultPodTopologySpread {
    /// The feasible nodes' zones, kept for the next pod's cycle over the same nodes.
    rows: DomainRows,
    /// Whether every node carries the hostname label, as of a cluster epoch (node labels
    /// change only with the epoch): then a node's raw score follows from its zone alone
    /// unless it runs a matching pod, which [`NodeScore::grouped`] needs.
    hosts_labelled: Mutex<Option<(u64, bool)>>,
}

impl DefaultPodTopologySpread {
    fn every_host_labelled(&self, cluster: &Cluster) -> bool {
        let epoch = cluster.changes().epoch();
        let mut kept = self
            .hosts_labelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, labelled)) = *kept
            && at == epoch
        {
            return labelled;
        }
        let column = cluster.label_column(cluster.keys().hostname);
        let labelled = cluster.node_order().iter().all(|id| {
            column
                .and_then(|c| c.get(id.0 as usize).copied().flatten())
                .is_some()
        });
        *kept = Some((epoch, labelled));
        labelled
    }
}

struct Score<'a> {
    cluster: &'a Cluster,
    rows: &'a DomainRows,
    /// Matching pods per node (indexed by `NodeId.0`), built from `occupied` by the first
    /// cycle that scores every node: a cycle that takes the grouped scores reads only the
    /// few nodes running some, and clearing a count per node cost more than that.
    per_node: OnceLock<Vec<u32>>,
    /// Matching pods per zone value, over the nodes passing the pod's node affinity.
    per_zone: FxHashMap<Sym, i64>,
    /// The nodes running matching pods, with how many each.
    occupied: Vec<(NodeId, u32)>,
    /// Whether every node carries the hostname label.
    hosts_labelled: bool,
}

impl NodeScore for Score<'_> {
    /// Reusable across a class while the node is unchanged: `score` gives a placeholder; normalising, which runs for every pod, does the work.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    /// The raw score is a placeholder.
    fn keeps_raw(&self) -> bool {
        false
    }

    /// The weights depend on the feasible nodes, which only [`NodeScore::normalize`] sees;
    /// the raw score is computed there.
    fn score(&self, _node: &crate::cluster::NodeInfo) -> i64 {
        0
    }

    fn score_batch(&self, _cluster: &Cluster, _nodes: &[NodeId], out: &mut [i64]) {
        out.fill(0);
    }

    fn normalize(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let (min, max) = self.raw(nodes, scores).unwrap_or((0, 0));
        if max <= 0 {
            scores.fill(MAX_NODE_SCORE);
            return;
        }
        map_scores_within(scores, min, max, |s| MAX_NODE_SCORE * (max + min - s) / max);
    }

    fn raw_scores(&self, nodes: &[NodeId], scores: &mut [i64]) {
        let _ = self.raw(nodes, scores);
    }

    /// The zone, when every node carries the hostname label (else whether a node carries
    /// it would split the groups).
    fn group_key(&self) -> Option<Sym> {
        self.hosts_labelled.then(|| self.cluster.keys().zone)
    }

    /// By zone: a node running no matching pod scores its zone's empty-node score, the
    /// nodes running some are set apart.
    fn grouped(&self, feasible: &dyn FeasibleNodes) -> Option<Grouped> {
        let zone_key = self.group_key()?;
        if feasible.count() == 0 {
            return None;
        }
        let (zones, unlabelled_count) = feasible.by_value(zone_key)?;
        let weights = Weights::of(
            feasible.count(),
            zones.len() + usize::from(unlabelled_count > 0),
        );
        let zone_terms: Vec<f64> = zones
            .iter()
            .map(|(z, _)| self.zone_term(*z, weights.zone))
            .collect();
        let unlabelled_zone = zone_terms.len();
        // Raw scores: each zone's nodes running no matching pod (the last entry: those
        // without a zone), and the feasible nodes running some.
        let mut empty: Vec<i64> = (0..=unlabelled_zone)
            .map(|z| {
                raw_of(
                    &zone_terms,
                    weights.host,
                    Some(0),
                    zone_index(z, unlabelled_zone),
                )
            })
            .collect();
        // How many feasible nodes of each group run no matching pod.
        let mut left: Vec<u32> = zones.iter().map(|(_, n)| *n).collect();
        left.push(unlabelled_count);
        let column = self.cluster.label_column(zone_key);
        let mut apart: Vec<(NodeId, i64)> = Vec::new();
        for (id, count) in self
            .occupied
            .iter()
            .filter(|(id, _)| feasible.contains(*id))
        {
            let zone = column.and_then(|c| c.get(id.0 as usize).copied().flatten());
            let z = zone
                .and_then(|v| zones.iter().position(|(z, _)| *z == v))
                .unwrap_or(unlabelled_zone);
            if let Some(n) = left.get_mut(z) {
                *n = n.saturating_sub(1);
            }
            let row = zone_index(z, unlabelled_zone);
            apart.push((*id, raw_of(&zone_terms, weights.host, Some(*count), row)));
        }
        let present = empty
            .iter()
            .zip(&left)
            .filter(|(_, n)| **n > 0)
            .map(|(s, _)| *s);
        let (min, max) = present
            .chain(apart.iter().map(|(_, s)| *s))
            .fold((i64::MAX, i64::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)));
        let normal = |s: i64| {
            if max <= 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - s) / max
            }
        };
        // A group with no node left scores no node: 0 keeps the table in range.
        for (s, n) in empty.iter_mut().zip(&left) {
            *s = if *n > 0 { normal(*s) } else { 0 };
        }
        for (_, s) in apart.iter_mut() {
            *s = normal(*s);
        }
        let unlabelled = empty.pop().unwrap_or(0);
        Some(Grouped {
            table: zones.iter().map(|(z, _)| *z).zip(empty).collect(),
            unlabelled,
            apart,
        })
    }
}

/// The default constraints' weights over one list of feasible nodes: ln(number of nodes +
/// 2) for the hostname, ln(number of zones, those without one counting as one, + 2).
#[derive(Clone, Copy)]
struct Weights {
    host: f64,
    zone: f64,
}

impl Weights {
    /// The weights over `nodes` feasible nodes in `zones` zones (the nodes without a zone
    /// counting as one).
    fn of(nodes: usize, zones: usize) -> Self {
        Weights {
            host: ((nodes + 2) as f64).ln(),
            zone: ((zones + 2) as f64).ln(),
        }
    }
}

/// The zone of `domains.of` for the table index `z`, where `z == unlabelled` stands for
/// the nodes without a zone.
fn zone_index(z: usize, unlabelled: usize) -> u32 {
    if z == unlabelled { NO_DOMAIN } else { z as u32 }
}

/// A node's raw score: its matching pods (`host`, None when it lacks the hostname label)
/// and its zone's term (`zone` indexes `zone_terms`; none for a node without a zone),
/// summed in float and truncated, as upstream.
fn raw_of(zone_terms: &[f64], host_weight: f64, host: Option<u32>, zone: u32) -> i64 {
    let mut raw = 0f64;
    if let Some(count) = host {
        raw += f64::from(count) * host_weight + (HOSTNAME_MAX_SKEW - 1) as f64;
    }
    if let Some(term) = zone_terms.get(zone as usize) {
        raw += *term;
    }
    raw as i64
}

impl Score<'_> {
    /// Upstream's Score: each feasible node's matching pods on it and in its zone, weighted
    /// by ln(number of feasible nodes + 2) and ln(number of their zones + 2), plus the
    /// default constraints' maxSkew - 1, truncated. Returns the lowest and highest raw
    /// score (None without nodes), found as they are written.
    fn raw(&self, nodes: &[NodeId], scores: &mut [i64]) -> Option<(i64, i64)> {
        let keys = &self.cluster.keys();
        // The dense label column, so no node is touched (None: no node has the key).
        let host_column = self.cluster.label_column(keys.hostname);
        let at = |column: Option<&[Option<Sym>]>, id: NodeId| {
            column.and_then(|c| c.get(id.0 as usize).copied().flatten())
        };
        let domains = self.rows.of(self.cluster, keys.zone, nodes);
        let weights = Weights::of(
            nodes.len(),
            domains.values.len() + usize::from(domains.unlabelled),
        );
        let zone_terms = self.zone_terms(&domains, weights.zone);
        let raw_of = |host: Option<u32>, zone: u32| raw_of(&zone_terms, weights.host, host, zone);
        // Most nodes run no matching pod: their raw score follows from whether they carry
        // the hostname label and their zone alone, so it is computed once per zone (by the
        // same arithmetic) and read; the nodes running some are computed one by one.
        let unlabelled_zone = zone_terms.len();
        let empty: Vec<[i64; 2]> = (0..=unlabelled_zone)
            .map(|z| {
                let zone = zone_index(z, unlabelled_zone);
                [raw_of(None, zone), raw_of(Some(0), zone)]
            })
            .collect();
        let per_node = self
            .per_node
            .get_or_init(|| dense_counts(self.cluster, &self.occupied));
        let (mut low, mut high) = (i64::MAX, i64::MIN);
        for ((id, zone), s) in nodes.iter().zip(domains.of.iter()).zip(scores.iter_mut()) {
            let labelled = at(host_column, *id).is_some();
            let count = per_node[id.0 as usize];
            *s = if count == 0 {
                let z = (*zone as usize).min(unlabelled_zone);
                empty[z][usize::from(labelled)]
            } else {
                raw_of(labelled.then_some(count), *zone)
            };
            low = low.min(*s);
            high = high.max(*s);
        }
        (!nodes.is_empty()).then_some((low, high))
    }

    /// Each zone's term of the raw score (its matching pods times the zone weight, plus the
    /// zone constraint's maxSkew - 1), in the order of `domains.values`.
    fn zone_terms(&self, domains: &Domains, zone_weight: f64) -> Vec<f64> {
        domains
            .values
            .iter()
            .map(|z| self.zone_term(*z, zone_weight))
            .collect()
    }

    /// One zone's term of the raw score.
    fn zone_term(&self, zone: Sym, zone_weight: f64) -> f64 {
        let count = self.per_zone.get(&zone).copied().unwrap_or(0);
        count as f64 * zone_weight + (ZONE_MAX_SKEW - 1) as f64
    }
}

impl ScoreRule for DefaultPodTopologySpread {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        if !pod.spread_constraints.is_empty() {
            return EvenPodsSpreadPriority.prepare(ctx);
        }
        let selectors = spread_selectors(cluster, pod);
        if selectors.is_empty() {
            return ScorePrep::Constant(MAX_NODE_SCORE);
        }
        let occupied = count_occupied(cluster, pod.namespace, &selectors);
        // Only nodes running matching pods add to a zone.
        let mut per_zone: FxHashMap<Sym, i64> = FxHashMap::default();
        if let Some(zones) = cluster.label_column(cluster.keys().zone) {
            for &(id, count) in &occupied {
                if let Some(Some(zone)) = zones.get(id.0 as usize)
                    && matches_required_node_affinity(cluster, pod, cluster.node(id))
                {
                    *per_zone.entry(*zone).or_insert(0) += i64::from(count);
                }
            }
        }
        ScorePrep::PerNode(Box::new(Score {
            cluster,
            rows: &self.rows,
            per_node: OnceLock::new(),
            per_zone,
            occupied,
            hosts_labelled: self.every_host_labelled(cluster),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pod, SelectorKind};
    use crate::testkit::*;

    const HOST: &str = "kubernetes.io/hostname";
    const ZONE: &str = "topology.kubernetes.io/zone";

    fn zoned(name: &str, zone: &str) -> crate::model::Node {
        node(name).label(HOST, name).label(ZONE, zone).build()
    }

    fn web(name: &str) -> crate::testkit::PodBuilder {
        labelled(name, &[("app", "web")])
    }

    fn scores(nodes: Vec<crate::model::Node>, pods: Vec<Pod>, incoming: Pod) -> Vec<(String, i64)> {
        let mut cl = cluster(nodes, pods);
        cl.upsert_selector_object(&selector_object(
            SelectorKind::Service,
            "default",
            "web",
            &[("app", "web")],
        ));
        let mut got = run_score(&DefaultPodTopologySpread::default(), &mut cl, incoming);
        got.sort();
        got
    }

    /// Worked by hand from upstream's formulas. Nodes a, b in zone z1 and c in z2; web pods
    /// on a (2) and c (1). Weights: hostname ln(3 + 2), zone ln(2 + 2). Raw: a = 2·1.609 +
    /// 2 + 2·1.386 + 4 = 11.99, so 11; b = 0 + 2 + 2·1.386 + 4 = 8.77, so 8; c = 1.609 +
    /// 2 + 1.386 + 4 = 8.99, so 8. Normalised, 100·(11 + 8 - raw)/11: a 72, b 100, c 100.
    #[test]
    fn zone_and_hostname_defaults() {
        let got = scores(
            vec![zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2")],
            vec![
                web("w1").on("a").build(),
                web("w2").on("a").build(),
                web("w3").on("c").build(),
            ],
            web("p").build(),
        );
        assert_eq!(
            got,
            vec![("a".into(), 72), ("b".into(), 100), ("c".into(), 100)]
        );
    }

    /// Upstream does not ignore nodes missing a key when the constraints are the system's:
    /// a node without a zone gets only the hostname term, so it looks emptier. With no
    /// matching pod, n (hostname only) has raw 2 and a (both keys) 2 + 4 = 6;
    /// 100·(6 + 2 - raw)/6: a 33, n 100.
    #[test]
    fn nodes_without_keys_are_scored() {
        let got = scores(
            vec![zoned("a", "z1"), node("n").build()],
            vec![web("w").ns("other").on("a").build()],
            web("p").build(),
        );
        assert_eq!(got, vec![("a".into(), 33), ("n".into(), 100)]);
    }

    /// Nodes with and without each key, running matching pods or none (the nodes running
    /// none read a raw score computed once per zone). Weights: hostname ln(5 + 2) = 1.946,
    /// zone ln(2 + 1 + 2) = 1.609 (z1, z2 and the nodes without a zone); zone sums: z1 2,
    /// z2 one. Raw: a = 2·1.946 + 2 + 2·1.609 + 4 = 13.11, so 13; b = 2 + 7.22, so 9;
    /// c = 1.946 + 2 (no zone), so 3; d = 1.609 + 4 (no hostname), so 5; e = 0.
    /// Normalised, 100·(13 + 0 - raw)/13: a 0, b 30, c 76, d 61, e 100.
    #[test]
    fn nodes_running_none_score_as_computed_one_by_one() {
        let got = scores(
            vec![
                zoned("a", "z1"),
                zoned("b", "z1"),
                node("c").build(),
                node("d").label(ZONE, "z2").unlabel(HOST).build(),
                node("e").unlabel(HOST).build(),
            ],
            vec![
                web("w1").on("a").build(),
                web("w2").on("a").build(),
                web("w3").on("c").build(),
                web("w4").on("d").build(),
            ],
            web("p").build(),
        );
        let want: Vec<(String, i64)> = [("a", 0), ("b", 30), ("c", 76), ("d", 61), ("e", 100)]
            .iter()
            .map(|(n, s)| (n.to_string(), *s))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn no_selector_scores_100() {
        let mut cl = cluster(vec![zoned("a", "z1"), zoned("b", "z2")], vec![]);
        let got = run_score(
            &DefaultPodTopologySpread::default(),
            &mut cl,
            pod("p").build(),
        );
        assert!(got.iter().all(|(_, s)| *s == MAX_NODE_SCORE), "{got:?}");
    }
}
