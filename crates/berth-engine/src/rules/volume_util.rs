//! What the volume rules share: a pod's claims, the storage class of a claim or volume, the
//! API server's not-found messages, and node selector terms of PersistentVolumes and
//! StorageClasses matched against node labels.

use crate::cluster::Cluster;
use crate::labels::{Interner, Labels, Operator, Requirement, Sym};
use crate::model::{
    NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, StorageClass, VolumeBindingMode,
    VolumeSource,
};
use crate::podinfo::PodInfo;

/// The beta annotation naming the class of a claim or volume; it wins over `storageClassName`.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// Set on a claim by the PV controller once the claim is fully bound to its volume.
pub const BIND_COMPLETED_ANNOTATION: &str = "pv.kubernetes.io/bind-completed";
/// Set on a claim by the scheduler: provision its volume for this node.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";
/// The provisioner of classes that cannot provision volumes.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Upstream's error for a claim volume without a claim name (the API server forbids it).
pub const REASON_NO_CLAIM_NAME: &str = "PersistentVolumeClaim had no name";

/// The claim names of the pod's PersistentVolumeClaim volumes, in volume order.
pub fn claim_names(pod: &PodInfo) -> impl Iterator<Item = &str> {
    pod.pod.volumes.iter().filter_map(|v| match &v.source {
        VolumeSource::Pvc { claim_name } => Some(claim_name.as_str()),
        _ => None,
    })
}

/// A claim by namespace and name.
pub fn find_claim<'a>(
    cluster: &'a Cluster,
    namespace: &str,
    name: &str,
) -> Option<&'a PersistentVolumeClaim> {
    cluster.persistent_volume_claim(namespace, name)
}

/// Upstream's `GetPersistentVolumeClaimClass`: the beta annotation, else `storageClassName`,
/// else "" (the scheduler does not apply the default class; admission did that, if at all).
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    claim
        .meta
        .annotations
        .get(BETA_STORAGE_CLASS_ANNOTATION)
        .map(String::as_str)
        .or(claim.storage_class_name.as_deref())
        .unwrap_or("")
}

/// Upstream's `GetPersistentVolumeClass`: the beta annotation, else `storageClassName`.
pub fn volume_class(pv: &PersistentVolume) -> &str {
    pv.meta
        .annotations
        .get(BETA_STORAGE_CLASS_ANNOTATION)
        .unwrap_or(&pv.storage_class_name)
}

/// Whether a claim names its volume and the PV controller finished binding it. A claim that
/// names a volume without the annotation is only pre-bound, which upstream treats as unbound.
pub fn fully_bound(claim: &PersistentVolumeClaim) -> bool {
    !claim.volume_name.is_empty()
        && claim
            .meta
            .annotations
            .contains_key(BIND_COMPLETED_ANNOTATION)
}

/// Upstream's `IsDelayBindingMode`: the claim's class exists and waits for the first consumer.
/// A claim without a class, or whose class is missing, binds immediately.
pub fn waits_for_first_consumer(cluster: &Cluster, claim: &PersistentVolumeClaim) -> bool {
    let class = claim_class(claim);
    !class.is_empty()
        && cluster
            .storage_class(class)
            .is_some_and(|sc| sc.volume_binding_mode == VolumeBindingMode::WaitForFirstConsumer)
}

/// Whether a class can provision volumes at all.
pub fn can_provision(class: &StorageClass) -> bool {
    !class.provisioner.is_empty() && class.provisioner != NO_PROVISIONER
}

/// The lister's error for a missing claim.
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim \"{name}\" not found")
}

/// The lister's error for a missing volume.
pub fn volume_not_found(name: &str) -> String {
    format!("persistentvolume \"{name}\" not found")
}

/// The lister's error for a missing storage class.
pub fn class_not_found(name: &str) -> String {
    format!("storageclass.storage.k8s.io \"{name}\" not found")
}

/// Node selector terms (ORed) compiled against the cluster's interner without growing it, as
/// a rule's `prepare` must: a key or value the interner never saw is on no node, so a
/// requirement on it is decided at compile time.
///
/// Matching sees node labels only. Upstream's volume checks build a node from its labels
/// alone, so a `matchFields` requirement on `metadata.name` sees an empty name.
#[derive(Debug, Clone)]
pub struct NodeMatcher {
    /// The terms that can match some node; requirements that always hold are dropped.
    terms: Vec<Vec<Req>>,
}

#[derive(Debug, Clone)]
struct Req {
    key: Sym,
    test: Test,
}

#[derive(Debug, Clone)]
enum Test {
    In(Vec<Sym>),
    NotIn(Vec<Sym>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// What compiling one requirement gives.
enum Compiled {
    /// It holds on every node.
    Always,
    /// It holds on no node (or is invalid, which upstream treats as not matching).
    Never,
    /// It depends on the node.
    Check(Req),
}

impl NodeMatcher {
    /// Compiles required terms (ORed). No term, or only empty terms, matches no node.
    pub fn compile(interner: &Interner, terms: &[NodeSelectorTerm]) -> Self {
        let terms = terms
            .iter()
            .filter(|t| !(t.match_expressions.is_empty() && t.match_fields.is_empty()))
            .filter_map(|t| {
                if !t.match_fields.iter().all(field_holds_for_unnamed_node) {
                    return None;
                }
                let mut reqs = Vec::new();
                for r in &t.match_expressions {
                    match compile_req(interner, r) {
                        Compiled::Always => {}
                        Compiled::Never => return None,
                        Compiled::Check(req) => reqs.push(req),
                    }
                }
                Some(reqs)
            })
            .collect();
        NodeMatcher { terms }
    }

    /// Whether a node with these labels satisfies some term.
    #[inline]
    pub fn matches(&self, labels: &Labels, interner: &Interner) -> bool {
        self.terms
            .iter()
            .any(|reqs| reqs.iter().all(|r| r.holds(labels, interner)))
    }

    /// If the matcher is exactly "`key` In values" (a volume pinned to hosts by their
    /// hostname label, as local volumes are), those values: callers can then index by them.
    pub fn single_in(&self, key: Sym) -> Option<&[Sym]> {
        match self.terms.as_slice() {
            [reqs] => match reqs.as_slice() {
                [
                    Req {
                        key: k,
                        test: Test::In(values),
                    },
                ] if *k == key => Some(values),
                _ => None,
            },
            _ => None,
        }
    }
}

impl Req {
    #[inline]
    fn holds(&self, labels: &Labels, interner: &Interner) -> bool {
        let value = labels.get(self.key);
        let number = || value.and_then(|v| interner.resolve(v).parse::<i64>().ok());
        match &self.test {
            Test::In(values) => value.is_some_and(|v| values.contains(&v)),
            Test::NotIn(values) => value.is_none_or(|v| !values.contains(&v)),
            Test::Exists => value.is_some(),
            Test::DoesNotExist => value.is_none(),
            Test::Gt(bound) => number().is_some_and(|n| n > *bound),
            Test::Lt(bound) => number().is_some_and(|n| n < *bound),
        }
    }
}

/// Compiles one label requirement, validating it as upstream's `NewRequirement` does.
fn compile_req(interner: &Interner, r: &Requirement) -> Compiled {
    use Operator::*;
    let valid = match r.operator {
        In | NotIn => !r.values.is_empty(),
        Exists | DoesNotExist => r.values.is_empty(),
        Gt | Lt => r.values.len() == 1 && r.values[0].parse::<i64>().is_ok(),
    };
    if !valid {
        return Compiled::Never;
    }
    let Some(key) = interner.get(&r.key) else {
        // No node carries the key: the requirement is decided by absence.
        return match r.operator {
            NotIn | DoesNotExist => Compiled::Always,
            In | Exists | Gt | Lt => Compiled::Never,
        };
    };
    let known = || -> Vec<Sym> { r.values.iter().filter_map(|v| interner.get(v)).collect() };
    let bound = || r.values[0].parse::<i64>().unwrap_or_default();
    let test = match r.operator {
        In => {
            let values = known();
            if values.is_empty() {
                return Compiled::Never;
            }
            Test::In(values)
        }
        NotIn => Test::NotIn(known()),
        Exists => Test::Exists,
        DoesNotExist => Test::DoesNotExist,
        Gt => Test::Gt(bound()),
        Lt => Test::Lt(bound()),
    };
    Compiled::Check(Req { key, test })
}

/// A `matchFields` requirement evaluated for a node whose name is empty (see [`NodeMatcher`]).
/// Only `metadata.name` with In / NotIn is valid upstream; anything else fails the term.
fn field_holds_for_unnamed_node(r: &Requirement) -> bool {
    if r.key != "metadata.name" || r.values.is_empty() {
        return false;
    }
    let listed = r.values.iter().any(|v| v.is_empty());
    match r.operator {
        Operator::In => listed,
        Operator::NotIn => !listed,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Operator::*;
    use crate::testkit::*;

    #[test]
    fn matcher_table() {
        let name_in = NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: vec![req("metadata.name", In, &["a"])],
        };
        let name_not_in = NodeSelectorTerm {
            match_expressions: vec![req("zone", In, &["z1"])],
            match_fields: vec![req("metadata.name", NotIn, &["a"])],
        };
        let cases: Vec<(&str, Vec<NodeSelectorTerm>, Vec<&str>)> = vec![
            (
                "In",
                vec![node_term(vec![req("zone", In, &["z1", "z9"])])],
                vec!["a"],
            ),
            (
                "terms are ORed",
                vec![
                    node_term(vec![req("zone", In, &["z1"])]),
                    node_term(vec![req("zone", In, &["z2"])]),
                ],
                vec!["a", "b"],
            ),
            (
                "NotIn matches nodes without the key",
                vec![node_term(vec![req("zone", NotIn, &["z1"])])],
                vec!["b", "c"],
            ),
            (
                "NotIn with values no node has",
                vec![node_term(vec![req("zone", NotIn, &["nowhere"])])],
                vec!["a", "b", "c"],
            ),
            (
                "a key no node has: DoesNotExist holds",
                vec![node_term(vec![req("unknown-key", DoesNotExist, &[])])],
                vec!["a", "b", "c"],
            ),
            (
                "a key no node has: Exists fails",
                vec![node_term(vec![req("unknown-key", Exists, &[])])],
                vec![],
            ),
            (
                "In with values no node has",
                vec![node_term(vec![req("zone", In, &["nowhere"])])],
                vec![],
            ),
            (
                "Gt",
                vec![node_term(vec![req("disks", Gt, &["3"])])],
                vec!["a"],
            ),
            (
                "Lt",
                vec![node_term(vec![req("disks", Lt, &["3"])])],
                vec!["b"],
            ),
            (
                "Gt with a non-integer bound is invalid",
                vec![node_term(vec![req("disks", Gt, &["x"])])],
                vec![],
            ),
            (
                "In without values is invalid",
                vec![node_term(vec![req("zone", In, &[])])],
                vec![],
            ),
            (
                "an empty term matches nothing",
                vec![node_term(vec![])],
                vec![],
            ),
            ("no term matches nothing", vec![], vec![]),
            (
                "metadata.name In never matches: the node is nameless",
                vec![name_in],
                vec![],
            ),
            (
                "metadata.name NotIn always holds",
                vec![name_not_in],
                vec!["a"],
            ),
        ];
        let cl = cluster(
            vec![
                node("a").label("zone", "z1").label("disks", "8").build(),
                node("b").label("zone", "z2").label("disks", "2").build(),
                node("c").build(),
            ],
            vec![],
        );
        for (name, terms, want) in cases {
            let m = NodeMatcher::compile(cl.interner(), &terms);
            let got: Vec<&str> = cl
                .node_order()
                .iter()
                .map(|id| cl.node(*id))
                .filter(|n| m.matches(&n.labels, cl.interner()))
                .map(|n| n.name())
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn single_in_detects_hostname_pinning() {
        let cl = cluster(vec![node("a").build(), node("b").build()], vec![]);
        let host = cl.keys().hostname;
        let pinned = NodeMatcher::compile(
            cl.interner(),
            &[node_term(vec![req(
                "kubernetes.io/hostname",
                In,
                &["a", "b"],
            )])],
        );
        assert_eq!(pinned.single_in(host).map(<[Sym]>::len), Some(2));
        let two_reqs = NodeMatcher::compile(
            cl.interner(),
            &[node_term(vec![
                req("kubernetes.io/hostname", In, &["a"]),
                req("kubernetes.io/hostname", Exists, &[]),
            ])],
        );
        assert!(two_reqs.single_in(host).is_none());
    }

    #[test]
    fn classes_and_binding_state() {
        let mut c = pvc("c", GI).class("fast").build();
        assert_eq!(claim_class(&c), "fast");
        c.meta
            .annotations
            .insert(BETA_STORAGE_CLASS_ANNOTATION.into(), "beta".into());
        assert_eq!(claim_class(&c), "beta");
        assert_eq!(claim_class(&pvc("none", GI).build()), "");
        assert!(!fully_bound(&pvc("pre", GI).prebound("pv").build()));
        assert!(fully_bound(&pvc("b", GI).bound("pv").build()));
        assert_eq!(volume_class(&pv("v", GI).class("slow").build()), "slow");
    }
}
