//! The whole state of a cluster in a form two clusters can be compared by: every symbol
//! resolved to its text and every id to a name, so a cluster changed step by step and one
//! built from scratch from the same final objects compare equal exactly when every
//! aggregate and index agrees. On the way it asserts the invariants that tie the tables of
//! one cluster together (ids, slots, and each per-node aggregate against the pods it lists).
//!
//! What legitimately differs between the two is left out, each with its reason: the
//! interner's contents and size (a changed cluster has interned strings no object uses any
//! more, until it compacts), node and pod ids (a changed cluster has holes where objects
//! left), the order of lists kept with `swap_remove` (it depends on history, so nothing may
//! read meaning into it: the daemon's cluster and one rebuilt after a restart order them
//! differently), stamps (fresh on every change), extended resources whose sum on a node went back
//! to zero (their entry may stay; readers take a missing one as zero), dense zone numbers and the zones a cluster
//! has seen (the table only grows), label columns no node fills (they read like missing
//! ones) and the compaction bookkeeping.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::labels::HoldsSymbols;
use crate::resources::{RequestSum, clamp_i64};

/// The canonical form: one entry per object, aggregate or index entry, keyed so a mismatch
/// names what differs.
pub(super) fn canonical(c: &Cluster) -> BTreeMap<String, String> {
    let text = |s: Sym| c.interner.resolve(s).to_string();
    let labels = |l: &Labels| {
        l.iter()
            .map(|(k, v)| (text(k), text(v)))
            .collect::<BTreeSet<_>>()
    };
    // Symbols in visiting order with the labels left out (they are sorted by symbol, so their
    // order depends on the numbering; they are compared as sets above).
    let structure = |mut pod: PodInfo| {
        pod.labels = Labels::default();
        let mut out = Vec::new();
        pod.visit_symbols(&mut |s| out.push(text(*s)));
        out
    };
    let node_name = |id: NodeId| c.node(id).name().to_string();
    let pod_key = |id: PodId| c.pod(id).key();
    // Sorted, not deduplicated: an id listed twice is a bookkeeping error a set would hide.
    let names = |ids: &[PodId]| {
        let mut keys: Vec<String> = ids.iter().map(|p| pod_key(*p)).collect();
        keys.sort();
        keys
    };
    let mut out = BTreeMap::new();
    let mut put = |k: String, v: String| {
        assert!(out.insert(k.clone(), v).is_none(), "{k} twice");
    };
    put(
        "well-known keys".into(),
        format!(
            "{:?}",
            [
                c.keys.hostname,
                c.keys.zone,
                c.keys.zone_beta,
                c.keys.region,
                c.keys.region_beta
            ]
            .map(text)
        ),
    );

    // Nodes.
    assert_eq!(
        c.zone_slots.len(),
        c.nodes.len(),
        "a zone slot per node slot"
    );
    let mut seen_zones = BTreeSet::new();
    assert!(
        c.zones.iter().all(|z| seen_zones.insert(*z)),
        "a zone listed twice"
    );
    let mut stamps = BTreeSet::new();
    for (i, n) in c.nodes.iter().enumerate() {
        let Some(n) = n else {
            assert_eq!(c.zone_slots[i], NO_ZONE, "zone slot of removed node {i}");
            continue;
        };
        assert_eq!(n.id, NodeId(i as u32), "id of {}", n.name());
        assert_eq!(
            c.node_by_name.get(n.name()),
            Some(&n.id),
            "name of {}",
            n.name()
        );
        assert!(stamps.insert(n.stamp), "stamp of {} given twice", n.name());
        let zone = n.zone_key.map(text);
        let slot = c.zone_slots[i];
        let slot_zone = (slot != NO_ZONE).then(|| text(c.zones[slot as usize]));
        assert_eq!(zone, slot_zone, "zone slot of {}", n.name());
        assert!(
            n.image_syms.windows(2).all(|w| w[0].0 < w[1].0),
            "image symbols of {} sorted",
            n.name()
        );
        check_node_sums(c, n);
        assert_eq!(
            c.fit[n.id.0 as usize],
            NodeFit::of(n),
            "fit row of {}",
            n.name()
        );
        let images: BTreeSet<_> = n.image_syms.iter().map(|(s, b)| (text(*s), *b)).collect();
        let image_names: BTreeMap<_, _> = n.images.iter().collect();
        let mut ports: Vec<String> = n.used_ports.iter().map(|p| format!("{p:?}")).collect();
        ports.sort();
        put(
            format!("node {}", n.name()),
            format!(
                "labels {:?} zone {zone:?} images {images:?} {image_names:?} requested {:?} \
                 nonzero {} {} {:?} pods {:?} ports {ports:?} affinity {:?} ip {} of {:?} \
                 allowed {} allocatable {:?} unschedulable {} conditions {:?} taints {:?} \
                 avoid {:?} object {:?}",
                labels(&n.labels),
                n.requested.without_zeros(),
                n.nonzero_milli_cpu,
                n.nonzero_memory,
                n.nonzero_exact,
                names(&n.pods),
                names(&n.pods_with_affinity),
                n.pods_needing_ip,
                n.pod_ip_capacity,
                n.allowed_pods,
                n.allocatable,
                n.unschedulable,
                n.conditions,
                n.taints,
                n.prefer_avoid,
                n.node,
            ),
        );
    }
    assert_eq!(
        c.node_by_name.len(),
        c.nodes.iter().flatten().count(),
        "nodes by name"
    );
    // The visiting order is semantic (it decides which nodes a cycle sees first).
    put(
        "node order".into(),
        format!(
            "{:?}",
            c.node_order()
                .iter()
                .map(|id| node_name(*id))
                .collect::<Vec<_>>()
        ),
    );

    // Pods.
    let free: BTreeSet<u32> = c.free_pod_slots.iter().copied().collect();
    assert_eq!(free.len(), c.free_pod_slots.len(), "a free pod slot twice");
    for (i, p) in c.pods.iter().enumerate() {
        assert_eq!(p.is_none(), free.contains(&(i as u32)), "pod slot {i} free");
    }
    assert_eq!(c.pod_by_key.len(), c.pods().count(), "pods by key");
    for (id, p) in c.pods() {
        assert_eq!(
            c.pod_by_key(&p.pod.meta.namespace, &p.pod.meta.name),
            Some(id),
            "key of {}",
            p.key()
        );
        assert_eq!(
            p.node.map(node_name),
            p.pod.node_name,
            "node name of {}",
            p.key()
        );
        if let Some(n) = p.node {
            let on = &c.node(n).pods;
            assert_eq!(
                on.iter().filter(|q| **q == id).count(),
                1,
                "{} listed once on its node",
                p.key()
            );
        }
        put(
            format!("pod {}", p.key()),
            format!(
                "ns {} labels {:?} node {:?} structure {:?} object {:?}",
                text(p.namespace),
                labels(&p.labels),
                p.node.map(node_name),
                structure(p.clone()),
                p.pod,
            ),
        );
    }

    // Cluster-level indexes over assigned pods.
    for ((k, v), pods) in &c.label_index {
        assert!(!pods.is_empty(), "empty pod label entry");
        put(
            format!("pod label {}={}", text(*k), text(*v)),
            format!("{:?}", names(pods)),
        );
    }
    for ((k, v), nodes) in &c.label_nodes {
        assert!(!nodes.is_empty(), "empty node label entry");
        let mut nodes: Vec<_> = nodes.iter().map(|n| node_name(*n)).collect();
        nodes.sort();
        put(
            format!("node label {}={}", text(*k), text(*v)),
            format!("{nodes:?}"),
        );
    }
    for (k, column) in &c.label_columns {
        assert_eq!(column.len(), c.nodes.len(), "column length");
        for (i, v) in column.iter().enumerate() {
            assert!(
                c.nodes[i].is_some() || v.is_none(),
                "column {} holds removed node {i}",
                text(*k)
            );
        }
        if column.iter().all(Option::is_none) {
            continue;
        }
        let values: BTreeMap<_, _> = column
            .iter()
            .enumerate()
            .filter(|(i, _)| c.nodes[*i].is_some())
            .map(|(i, v)| (node_name(NodeId(i as u32)), v.map(text)))
            .collect();
        put(format!("column {}", text(*k)), format!("{values:?}"));
    }
    put(
        "pods with affinity".into(),
        format!("{:?}", names(&c.pods_with_affinity)),
    );
    put(
        "pods with volumes".into(),
        format!("{:?}", names(&c.pods_with_volumes)),
    );
    for (namespace, claims) in &c.claim_users {
        assert!(!claims.is_empty(), "empty claim users entry");
        for (claim, users) in claims {
            assert!(*users > 0, "claim users entry of zero");
            put(
                format!("claim users {namespace}/{claim}"),
                users.to_string(),
            );
        }
    }
    for (which, index) in [
        ("anti", &c.anti_affinity_terms),
        ("scoring", &c.scoring_terms),
    ] {
        let refs = |rs: &[TermRef]| {
            let mut refs: Vec<_> = rs
                .iter()
                .map(|r| format!("{} {:?} {}", pod_key(r.pod), r.kind, r.index))
                .collect();
            refs.sort();
            refs
        };
        for ((k, v), terms) in &index.by_label {
            assert!(!terms.is_empty(), "empty {which} term entry");
            // A term listed twice under one label would be yielded twice as a candidate.
            let unique: std::collections::HashSet<&TermRef> = terms.iter().collect();
            assert_eq!(unique.len(), terms.len(), "{which} term listed twice");
            put(
                format!("{which} terms {}={}", text(*k), text(*v)),
                format!("{:?}", refs(terms)),
            );
        }
        put(
            format!("{which} unindexed"),
            format!("{:?}", refs(&index.unindexed)),
        );
    }
    let images: BTreeMap<_, _> = c.image_node_counts.iter().collect();
    assert!(images.values().all(|n| **n > 0), "an image on no node");
    put("images".into(), format!("{images:?}"));
    put("avoiding nodes".into(), c.avoiding_nodes.to_string());
    put(
        "soft-tainted nodes".into(),
        c.soft_tainted_nodes.to_string(),
    );

    // The other objects.
    for (ns, info) in &c.namespaces {
        put(
            format!("namespace {}", text(*ns)),
            format!(
                "{:?} {:?} {:?}",
                labels(&info.labels),
                info.node_selector,
                info.toleration_whitelist
            ),
        );
    }
    // In order: rules take the first Service that selects a pod.
    let objects: Vec<String> = c
        .selector_objects()
        .iter()
        .map(|o| {
            let mut syms = Vec::new();
            if let Some(mut s) = o.selector.clone() {
                s.visit_symbols(&mut |s| syms.push(text(*s)));
            }
            format!(
                "{:?} {}/{} {:?} {syms:?}",
                o.kind,
                text(o.namespace),
                o.name,
                o.selector.is_some()
            )
        })
        .collect();
    put("selector objects".into(), format!("{objects:?}"));
    let sorted = |m: &dyn Fn() -> Vec<String>| {
        let mut v = m();
        v.sort();
        format!("{v:?}")
    };
    put(
        "persistent volumes".into(),
        sorted(&|| {
            c.persistent_volumes
                .iter()
                .map(|e| format!("{e:?}"))
                .collect()
        }),
    );
    put(
        "claims".into(),
        sorted(&|| {
            c.persistent_volume_claims
                .iter()
                .map(|e| format!("{e:?}"))
                .collect()
        }),
    );
    put(
        "storage classes".into(),
        sorted(&|| c.storage_classes.iter().map(|e| format!("{e:?}")).collect()),
    );
    put(
        "csi nodes".into(),
        sorted(&|| c.csi_nodes.iter().map(|e| format!("{e:?}")).collect()),
    );
    let s = c.sizes();
    put(
        "sizes".into(),
        format!(
            "pods {} nodes {} pod labels {} node labels {} images {} term labels {}",
            s.pods,
            s.nodes,
            s.pod_label_pairs,
            s.node_label_pairs,
            s.image_names,
            s.term_label_pairs
        ),
    );
    out
}

/// Asserts that a node's aggregates are the sums over the pods it lists, recomputed here
/// independently of the incremental path.
fn check_node_sums(c: &Cluster, n: &NodeInfo) {
    let pods: Vec<&PodInfo> = n.pods.iter().map(|id| c.pod(*id)).collect();
    for id in &n.pods {
        assert_eq!(
            c.pod(*id).node,
            Some(n.id),
            "{} on {}",
            c.pod(*id).key(),
            n.name()
        );
    }
    let mut requested = RequestSum::default();
    for p in &pods {
        requested.add(&p.request);
    }
    assert_eq!(
        n.requested.without_zeros(),
        requested.without_zeros(),
        "requests on {}",
        n.name()
    );
    let exact = pods.iter().fold((0i128, 0i128), |(cpu, mem), p| {
        (
            cpu + i128::from(p.nonzero_milli_cpu),
            mem + i128::from(p.nonzero_memory),
        )
    });
    assert_eq!(n.nonzero_exact, exact, "scoring requests on {}", n.name());
    assert_eq!(
        (n.nonzero_milli_cpu, n.nonzero_memory),
        (clamp_i64(exact.0), clamp_i64(exact.1)),
        "clamped scoring requests on {}",
        n.name()
    );
    let needing_ip = pods.iter().filter(|p| p.needs_ip).count() as u64;
    assert_eq!(n.pods_needing_ip, needing_ip, "pod IPs on {}", n.name());
    let mut ports: Vec<String> = pods
        .iter()
        .flat_map(|p| &p.host_ports)
        .map(|p| format!("{p:?}"))
        .collect();
    ports.sort();
    let mut used: Vec<String> = n.used_ports.iter().map(|p| format!("{p:?}")).collect();
    used.sort();
    assert_eq!(used, ports, "host ports on {}", n.name());
    let mut with_affinity: Vec<PodId> = n
        .pods
        .iter()
        .copied()
        .filter(|id| c.pod(*id).affinity.has_pod_terms())
        .collect();
    with_affinity.sort();
    let mut listed = n.pods_with_affinity.clone();
    listed.sort();
    assert_eq!(listed, with_affinity, "pods with affinity on {}", n.name());
}

/// A new cluster holding `nodes` (the live nodes of `changed`), added in `changed`'s slot
/// order, so both visit nodes alike: the first step of a rebuild from the final objects.
pub(super) fn with_nodes_in_slot_order<'a>(
    changed: &Cluster,
    nodes: impl Iterator<Item = &'a model::Node>,
) -> Cluster {
    let mut nodes: Vec<(NodeId, &model::Node)> = nodes
        .map(|n| (changed.node_by_name(&n.meta.name).expect("live"), n))
        .collect();
    nodes.sort_by_key(|(id, _)| id.0);
    let mut fresh = Cluster::new();
    for (_, n) in nodes {
        fresh.add_node(n.clone()).expect("node");
    }
    fresh
}
