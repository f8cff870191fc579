//! CheckServiceAffinity (v1.22 ServiceAffinity filter, policy argument `serviceAffinity`):
//! pods of a service stay on nodes with the same values of the affinity labels.
//!
//! The values come first from the pod's `nodeSelector`. When some are missing and a Service
//! in the pod's namespace selects the pod, the rest are copied from the node of the first
//! already-placed pod of that namespace whose labels include all of the pod's labels (that is
//! upstream's test: it matches on the pod's own labels, not on the Service's selector). If no
//! such pod exists the missing labels are left free. A node passes when it carries every
//! collected label with the collected value.
//!
//! "First" follows upstream's snapshot listing: pods are listed node by node in the cluster's
//! node order (zones interleaved), so the node used is the first node in that order running a
//! matching pod. Terminating pods count, as upstream.

use std::sync::OnceLock;

use crate::cluster::{Cluster, NamespaceFilter, NodeId, NodeInfo};
use crate::framework::{CycleContext, FilterPrep, FilterRule, NodeCheck, Reason, Reuse};
use crate::labels::{Selector, Sym};
use crate::model::SelectorKind;
use crate::podinfo::PodInfo;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "ServiceAffinity";

/// The node's labels differ from the values the service's pods are pinned to.
pub const REASON: &str = "node(s) didn't match service affinity";

/// The rule.
pub struct CheckServiceAffinity {
    labels: Vec<String>,
}

impl CheckServiceAffinity {
    /// A rule keeping a service's pods on nodes that agree on these label keys.
    pub fn new(labels: Vec<String>) -> Self {
        CheckServiceAffinity { labels }
    }
}

/// The label values a node must carry, read from the cluster's dense label columns. The
/// verdict for every node at once (the mask) is built only when a cycle walks the nodes: a
/// pod of a class whose kept answers hold asks about a few nodes or none.
struct Check<'a> {
    /// Per required pair, the key's label column and the value required.
    columns: Vec<(&'a [Option<Sym>], Sym)>,
    /// Whether no node can pass (a required value or key no node carries).
    always_fails: bool,
    slots: usize,
    mask: OnceLock<Vec<bool>>,
    /// Digest of the label values required (and whether the pod can fit nowhere), which
    /// is all the verdicts depend on besides each node's labels.
    required: u64,
}

impl Check<'_> {
    #[inline]
    fn passes(&self, slot: usize) -> bool {
        !self.always_fails
            && self
                .columns
                .iter()
                .all(|(column, v)| column.get(slot).copied().flatten() == Some(*v))
    }
}

impl NodeCheck for Check<'_> {
    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let ok = self.passes(node.id.0 as usize);
        if !ok {
            reasons.push(REASON.into());
        }
        ok
    }

    fn mask(&self) -> Option<&[bool]> {
        Some(
            self.mask
                .get_or_init(|| (0..self.slots).map(|slot| self.passes(slot)).collect()),
        )
    }

    /// Reusable across a class while the node's labels and the values required (taken
    /// from a peer's node) stay.
    fn reuse(&self) -> Reuse {
        Reuse::While {
            keys: Vec::new(),
            summary: self.required,
        }
    }
}

/// The node whose labels fill the affinity labels the pod's node selector leaves open: the
/// first node, in the cluster's node order, running an assigned pod of the pod's namespace
/// whose labels include all of the pod's labels. `missing` are the keys still open; when every
/// candidate node agrees on them the node order need not be walked.
fn first_peer_node(cluster: &Cluster, pod: &PodInfo, missing: &[Sym]) -> Option<NodeId> {
    let selector = Selector::from_pairs(pod.labels.iter());
    let namespaces = NamespaceFilter::only(pod.namespace);
    let mut nodes: Vec<NodeId> = cluster
        .matching_pods(&namespaces, &selector)
        .filter_map(|id| cluster.pod(id).node)
        .collect();
    let first = *nodes.first()?;
    let values = |id: NodeId| missing.iter().map(move |k| cluster.node(id).labels.get(*k));
    if nodes.iter().all(|id| values(*id).eq(values(first))) {
        return Some(first);
    }
    nodes.sort_unstable();
    nodes.dedup();
    cluster
        .node_order()
        .iter()
        .copied()
        .find(|id| nodes.binary_search(id).is_ok())
}

impl FilterRule for CheckServiceAffinity {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if self.labels.is_empty() {
            return FilterPrep::Skip;
        }
        let (cluster, pod) = (ctx.cluster, ctx.pod);
        let interner = cluster.interner();
        let mut pairs: Vec<(Sym, Sym)> = Vec::new();
        let mut missing: Vec<Sym> = Vec::new();
        let mut always_fails = false;
        for label in &self.labels {
            let key = interner.get(label);
            match (pod.pod.node_selector.get(label), key) {
                (Some(value), Some(key)) => match interner.get(value) {
                    Some(value) => pairs.push((key, value)),
                    None => always_fails = true,
                },
                (Some(_), None) => always_fails = true,
                // A key no object uses is on no node, so no peer's node can supply it.
                (None, None) => {}
                (None, Some(key)) => missing.push(key),
            }
        }
        let has_service = || {
            cluster
                .selecting(pod, Some(SelectorKind::Service))
                .next()
                .is_some()
        };
        if !missing.is_empty()
            && has_service()
            && let Some(peer) = first_peer_node(cluster, pod, &missing)
        {
            let labels = &cluster.node(peer).labels;
            pairs.extend(
                missing
                    .iter()
                    .filter_map(|k| labels.get(*k).map(|v| (*k, v))),
            );
        }
        if pairs.is_empty() && !always_fails {
            return FilterPrep::Skip;
        }
        let columns: Vec<(&[Option<Sym>], Sym)> = pairs
            .iter()
            .filter_map(|(k, v)| {
                let column = cluster.label_column(*k);
                always_fails |= column.is_none();
                column.map(|c| (c, *v))
            })
            .collect();
        FilterPrep::Check(Box::new(Check {
            columns,
            always_fails,
            slots: cluster.node_slots(),
            mask: OnceLock::new(),
            required: Reuse::digest(&(pairs, always_fails)),
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

    fn nodes() -> Vec<crate::model::Node> {
        vec![
            node("machine1")
                .label("region", "r1")
                .label("zone", "z11")
                .build(),
            node("machine2")
                .label("region", "r1")
                .label("zone", "z12")
                .build(),
            node("machine3")
                .label("region", "r2")
                .label("zone", "z21")
                .build(),
            node("machine4")
                .label("region", "r2")
                .label("zone", "z22")
                .build(),
            node("machine5")
                .label("region", "r2")
                .label("zone", "z22")
                .build(),
        ]
    }

    struct Case {
        name: &'static str,
        pod: Pod,
        pods: Vec<Pod>,
        services: Vec<PodSelector>,
        labels: &'static [&'static str],
        node: &'static str,
        pass: bool,
    }

    /// Upstream's TestServiceAffinity, restated: a pod labelled foo=bar, one existing pod,
    /// and the verdict on one node.
    #[test]
    fn upstream_table() {
        let sel = [("foo", "bar")];
        let labelled = |name: &str| pod(name).label("foo", "bar");
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: pod("p").build(),
                pods: vec![],
                services: vec![],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "pod with region label match",
                pod: pod("p").node_selector("region", "r1").build(),
                pods: vec![],
                services: vec![],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "pod with region label mismatch",
                pod: pod("p").node_selector("region", "r2").build(),
                pods: vec![],
                services: vec![],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "service pod on same node",
                pod: labelled("p").build(),
                pods: vec![labelled("e").on("machine1").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "service pod on different node, region match",
                pod: labelled("p").build(),
                pods: vec![labelled("e").on("machine2").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "service pod on different node, region mismatch",
                pod: labelled("p").build(),
                pods: vec![labelled("e").on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "service in different namespace, region mismatch",
                pod: labelled("p").ns("ns1").build(),
                pods: vec![labelled("e").ns("ns1").on("machine3").build()],
                services: vec![service("ns2", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "pod in different namespace, region mismatch",
                pod: labelled("p").ns("ns1").build(),
                pods: vec![labelled("e").ns("ns2").on("machine3").build()],
                services: vec![service("ns1", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "service and pod in same namespace, region mismatch",
                pod: labelled("p").ns("ns1").build(),
                pods: vec![labelled("e").ns("ns1").on("machine3").build()],
                services: vec![service("ns1", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "service pod on different node, multiple labels, not all match",
                pod: labelled("p").build(),
                pods: vec![labelled("e").on("machine2").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region", "zone"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "service pod on different node, multiple labels, all match",
                pod: labelled("p").build(),
                pods: vec![labelled("e").on("machine5").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region", "zone"],
                node: "machine4",
                pass: true,
            },
        ];
        run_cases(cases);
    }

    #[test]
    fn edge_cases() {
        let sel = [("app", "web")];
        let web = |name: &str| pod(name).label("app", "web");
        let cases = vec![
            Case {
                name: "a peer must carry all of the pod's labels, not just the service's",
                pod: web("p").label("tier", "front").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a peer with extra labels still pins",
                pod: web("p").build(),
                pods: vec![web("e").label("tier", "front").on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "without a service, peers do not pin",
                pod: web("p").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a service without selector selects nothing",
                pod: web("p").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![PodSelector {
                    selector: None,
                    ..service("default", "s", &[])
                }],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a service with an empty selector selects every pod",
                pod: web("p").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![service("default", "s", &[])],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "a terminating peer still pins",
                pod: web("p").build(),
                pods: vec![web("e").terminating().on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "the node selector wins over the peer",
                pod: web("p").node_selector("region", "r1").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a peer's node without the label leaves it free",
                pod: web("p").build(),
                pods: vec![web("e").on("bare").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["region"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a node-selector value no node has fails every node",
                pod: web("p").node_selector("region", "r9").build(),
                pods: vec![],
                services: vec![],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
            Case {
                name: "an affinity label nobody uses is free",
                pod: web("p").build(),
                pods: vec![web("e").on("machine3").build()],
                services: vec![service("default", "s", &sel)],
                labels: &["rack"],
                node: "machine1",
                pass: true,
            },
            Case {
                name: "a pod without labels is pinned by any placed pod of its namespace",
                pod: pod("p").build(),
                pods: vec![pod("e").on("machine3").build()],
                services: vec![service("default", "s", &[])],
                labels: &["region"],
                node: "machine1",
                pass: false,
            },
        ];
        run_cases(cases);
    }

    fn run_cases(cases: Vec<Case>) {
        for c in cases {
            let mut all_nodes = nodes();
            all_nodes.push(node("bare").build());
            let mut cl = cluster(all_nodes, c.pods);
            for s in &c.services {
                cl.upsert_selector_object(s);
            }
            let rule = CheckServiceAffinity::new(c.labels.iter().map(|s| s.to_string()).collect());
            let got = run_filter(&rule, &mut cl, c.pod);
            let (_, reasons) = got
                .iter()
                .find(|(n, _)| n == c.node)
                .expect("node in cluster");
            assert_eq!(reasons.is_empty(), c.pass, "{}", c.name);
            assert!(
                reasons.is_empty() || reasons == &vec![REASON.to_string()],
                "{}",
                c.name
            );
        }
    }

    /// With peers on nodes that disagree, the first node in the cluster's node order decides.
    #[test]
    fn first_peer_follows_node_order() {
        let mut cl = cluster(
            nodes(),
            vec![
                pod("e1").label("app", "web").on("machine3").build(),
                pod("e2").label("app", "web").on("machine1").build(),
            ],
        );
        cl.upsert_selector_object(&service("default", "s", &[("app", "web")]));
        let first = cl
            .node_order()
            .iter()
            .map(|id| cl.node(*id).name().to_string())
            .find(|n| n == "machine1" || n == "machine3")
            .expect("both nodes listed");
        let rule = CheckServiceAffinity::new(vec!["region".into()]);
        let got = run_filter(&rule, &mut cl, pod("p").label("app", "web").build());
        let region_of = |n: &str| {
            if n == "machine1" || n == "machine2" {
                "r1"
            } else {
                "r2"
            }
        };
        for (n, reasons) in &got {
            assert_eq!(reasons.is_empty(), region_of(n) == region_of(&first), "{n}");
        }
    }
}
