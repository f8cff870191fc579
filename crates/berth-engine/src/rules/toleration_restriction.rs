//! CheckTolerationRestriction (Berth): the tenant toleration guard. Nodes dedicated to a
//! tenant with a taint are only as private as the taint is secret, and anyone who can read a
//! node can copy its taint into a toleration. This predicate decides, at scheduling time,
//! which namespaces may *use* a guarded taint:
//!
//! - A pod uses a taint of the candidate node when one of its tolerations tolerates it.
//!   Only NoSchedule and NoExecute taints count: a PreferNoSchedule taint keeps no pod off a
//!   node, so tolerating it gains nothing to guard. Nodes without a guarded taint, and pods
//!   that do not tolerate it (PodToleratesNodeTaints turns those away), are not this rule's
//!   business.
//! - A guarded taint (key, optionally value and effect, from the policy argument) may be used
//!   by the namespaces the policy lists for it; when several entries match one taint, the
//!   namespaces of any of them may use it.
//! - Any other namespace may use it only if its `scheduler.alpha.kubernetes.io/tolerationsWhitelist`
//!   annotation (the PodTolerationRestriction admission plugin's JSON list of tolerations,
//!   parsed by the converter into [`crate::model::Namespace::toleration_whitelist`]) has a
//!   toleration that tolerates the node's taint. The list is read as grants: an empty list
//!   grants nothing (upstream's admission plugin reads it as "no restriction"), and one that
//!   does not parse grants nothing and the reason says why.
//!
//! The node is then rejected, naming the taint and the namespace; removing pods cannot change
//! a taint, so preemption does not try.

use crate::cluster::NodeInfo;
use crate::framework::{
    CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::model::{Taint, TaintEffect, Toleration, TolerationWhitelist};

/// The namespace annotation that grants guarded taints.
pub const WHITELIST_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";

/// What every reason of this rule says between the taint and the namespace.
const THAT_NAMESPACE: &str = "}, that namespace ";
/// What every reason of this rule says after the namespace.
const MAY_NOT_TOLERATE: &str = " may not tolerate";

/// The reason for a guarded taint the pod's namespace may not use (upstream's taint reason
/// wording, so FitError counts read alike: nodes with the same taint add up).
pub fn reason(key: &str, value: &str, namespace: &str) -> String {
    format!("node(s) had taint {{{key}: {value}{THAT_NAMESPACE}{namespace}{MAY_NOT_TOLERATE}")
}

/// The reason when the namespace's whitelist annotation does not parse.
pub fn invalid_whitelist_reason(key: &str, value: &str, namespace: &str, why: &str) -> String {
    format!(
        "{} (its {WHITELIST_ANNOTATION} annotation grants nothing, as it does not parse: {why})",
        reason(key, value, namespace)
    )
}

/// One guarded taint with the namespaces the policy allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Taint key.
    pub key: String,
    /// Taint value; None guards every value.
    pub value: Option<String>,
    /// Taint effect; None guards NoSchedule and NoExecute.
    pub effect: Option<TaintEffect>,
    /// Namespaces that may tolerate it.
    pub namespaces: Vec<String>,
}

impl Guard {
    fn matches(&self, taint: &Taint) -> bool {
        taint.effect != TaintEffect::PreferNoSchedule
            && self.key == taint.key
            && self.value.as_ref().is_none_or(|v| *v == taint.value)
            && self.effect.is_none_or(|e| e == taint.effect)
    }
}

/// The rule.
pub struct CheckTolerationRestriction {
    guards: Vec<Guard>,
}

impl CheckTolerationRestriction {
    /// The rule over `guards`.
    pub fn new(guards: Vec<Guard>) -> Self {
        CheckTolerationRestriction { guards }
    }
}

struct Check<'a> {
    guards: &'a [Guard],
    /// Per guard: whether the policy lets the pod's namespace use it.
    allowed: Vec<bool>,
    tolerations: &'a [Toleration],
    /// The namespace's whitelist, as grants.
    granted: &'a [Toleration],
    /// Why the namespace's whitelist annotation does not parse, if it does not.
    invalid: Option<&'a str>,
    namespace: &'a str,
}

impl Check<'_> {
    /// Whether `taint` is guarded against the pod's namespace, the pod uses it, and nothing
    /// grants it.
    fn forbidden(&self, taint: &Taint) -> bool {
        let mut guarded = false;
        for (guard, allowed) in self.guards.iter().zip(&self.allowed) {
            if guard.matches(taint) {
                if *allowed {
                    return false;
                }
                guarded = true;
            }
        }
        guarded
            && self.tolerations.iter().any(|t| t.tolerates(taint))
            && !self.granted.iter().any(|t| t.tolerates(taint))
    }
}

impl NodeCheck for Check<'_> {
    /// Reusable across a class while the node is unchanged: The node, the pod and its namespace (an object: any change to it is seen).
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let Some(taint) = node.taints().iter().find(|t| self.forbidden(t)) else {
            return true;
        };
        let text = match self.invalid {
            None => reason(&taint.key, &taint.value, self.namespace),
            Some(why) => invalid_whitelist_reason(&taint.key, &taint.value, self.namespace, why),
        };
        reasons.push(text.into());
        false
    }
}

impl FilterRule for CheckTolerationRestriction {
    /// Removing pods cannot change a node's taints or a namespace's grants.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let tolerations = &ctx.pod.pod.tolerations;
        let namespace = ctx.pod.pod.meta.namespace.as_str();
        if tolerations.is_empty() {
            return FilterPrep::Skip;
        }
        let allowed: Vec<bool> = self
            .guards
            .iter()
            .map(|g| g.namespaces.iter().any(|n| n == namespace))
            .collect();
        if allowed.iter().all(|a| *a) {
            return FilterPrep::Skip;
        }
        let whitelist = ctx
            .cluster
            .namespace(ctx.pod.namespace)
            .and_then(|ns| ns.toleration_whitelist.as_ref());
        let (granted, invalid): (&[Toleration], _) = match whitelist {
            Some(TolerationWhitelist::Tolerations(list)) => (list, None),
            Some(TolerationWhitelist::Invalid(why)) => (&[], Some(why.as_str())),
            None => (&[], None),
        };
        FilterPrep::Check(Box::new(Check {
            guards: &self.guards,
            allowed,
            tolerations,
            granted,
            invalid,
            namespace,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Namespace;
    use crate::model::TolerationOperator::{Equal, Exists};
    use crate::testkit::*;
    use TaintEffect::*;

    fn guard(key: &str, value: Option<&str>, effect: Option<TaintEffect>, ns: &[&str]) -> Guard {
        Guard {
            key: key.into(),
            value: value.map(Into::into),
            effect,
            namespaces: ns.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn toleration(key: &str, value: &str, effect: Option<TaintEffect>) -> Toleration {
        Toleration {
            key: key.into(),
            operator: if value.is_empty() { Exists } else { Equal },
            value: value.into(),
            effect,
        }
    }

    /// Nodes: `a` dedicated to tenant-a (NoSchedule), `a-evict` the same taint as NoExecute,
    /// `gpu` with a valueless gpu taint, `soft` with tenant-a's taint as PreferNoSchedule,
    /// `plain` without taints.
    fn nodes() -> Vec<crate::model::Node> {
        vec![
            node("a").taint("dedicated", "tenant-a", NoSchedule).build(),
            node("a-evict")
                .taint("dedicated", "tenant-a", NoExecute)
                .build(),
            node("gpu").taint("gpu", "", NoSchedule).build(),
            node("soft")
                .taint("dedicated", "tenant-a", PreferNoSchedule)
                .build(),
            node("plain").build(),
        ]
    }

    fn with_whitelist(whitelist: Option<TolerationWhitelist>) -> crate::Cluster {
        let mut c = cluster(nodes(), vec![]);
        let mut ns = Namespace::default();
        ns.meta.name = "team-b".into();
        ns.toleration_whitelist = whitelist;
        c.upsert_namespace(&ns);
        c
    }

    /// (name, guards, whitelist of team-b, pod, nodes that pass)
    type Case = (
        &'static str,
        Vec<Guard>,
        Option<TolerationWhitelist>,
        crate::model::Pod,
        Vec<&'static str>,
    );

    const ALL: [&str; 5] = ["a", "a-evict", "gpu", "soft", "plain"];

    #[test]
    fn table() {
        let tenant_a = || vec![guard("dedicated", Some("tenant-a"), None, &["tenant-a"])];
        let copier = || {
            pod("p")
                .ns("team-b")
                .tolerate("dedicated", Equal, "tenant-a", None)
        };
        let cases: Vec<Case> = vec![
            (
                "a copied toleration is refused on the guarded nodes only",
                tenant_a(),
                None,
                copier().build(),
                vec!["gpu", "soft", "plain"],
            ),
            (
                "the allowed namespace uses it",
                tenant_a(),
                None,
                pod("p")
                    .ns("tenant-a")
                    .tolerate("dedicated", Equal, "tenant-a", None)
                    .build(),
                ALL.to_vec(),
            ),
            (
                "a pod without tolerations is left to PodToleratesNodeTaints",
                tenant_a(),
                None,
                pod("p").ns("team-b").build(),
                ALL.to_vec(),
            ),
            (
                "a toleration of another taint does not use the guarded one",
                tenant_a(),
                None,
                pod("p")
                    .ns("team-b")
                    .tolerate("gpu", Exists, "", None)
                    .build(),
                ALL.to_vec(),
            ),
            (
                "tolerate-everything uses every guarded taint",
                tenant_a(),
                None,
                pod("p").ns("team-b").tolerate("", Exists, "", None).build(),
                vec!["gpu", "soft", "plain"],
            ),
            (
                "a NoExecute-only toleration uses only the NoExecute taint",
                tenant_a(),
                None,
                pod("p")
                    .ns("team-b")
                    .tolerate("dedicated", Exists, "", Some(NoExecute))
                    .build(),
                vec!["a", "gpu", "soft", "plain"],
            ),
            (
                "a guard with an effect leaves the other effect alone",
                vec![guard("dedicated", None, Some(NoExecute), &[])],
                None,
                copier().build(),
                vec!["a", "gpu", "soft", "plain"],
            ),
            (
                "a guard with a value leaves other values alone",
                vec![guard("dedicated", Some("tenant-c"), None, &[])],
                None,
                copier().build(),
                ALL.to_vec(),
            ),
            (
                "a key-only guard covers valueless taints",
                vec![guard("gpu", None, None, &["ml"])],
                None,
                pod("p")
                    .ns("team-b")
                    .tolerate("gpu", Exists, "", None)
                    .build(),
                vec!["a", "a-evict", "soft", "plain"],
            ),
            (
                "the whitelist annotation grants the taint",
                tenant_a(),
                Some(TolerationWhitelist::Tolerations(vec![toleration(
                    "dedicated",
                    "tenant-a",
                    None,
                )])),
                copier().build(),
                ALL.to_vec(),
            ),
            (
                "a whitelist entry grants only the taints it tolerates",
                tenant_a(),
                Some(TolerationWhitelist::Tolerations(vec![toleration(
                    "dedicated",
                    "tenant-a",
                    Some(NoExecute),
                )])),
                copier().build(),
                vec!["a-evict", "gpu", "soft", "plain"],
            ),
            (
                "an empty whitelist grants nothing",
                tenant_a(),
                Some(TolerationWhitelist::Tolerations(vec![])),
                copier().build(),
                vec!["gpu", "soft", "plain"],
            ),
            (
                "an invalid whitelist grants nothing",
                tenant_a(),
                Some(TolerationWhitelist::Invalid("bad JSON".into())),
                copier().build(),
                vec!["gpu", "soft", "plain"],
            ),
            (
                "several guards on one taint: any of them allowing is enough",
                vec![
                    guard("dedicated", None, None, &["ops"]),
                    guard("dedicated", Some("tenant-a"), None, &["team-b"]),
                ],
                None,
                copier().build(),
                ALL.to_vec(),
            ),
        ];
        for (name, guards, whitelist, p, want) in cases {
            let rule = CheckTolerationRestriction::new(guards);
            let mut cl = with_whitelist(whitelist);
            let got = run_filter(&rule, &mut cl, p);
            assert_eq!(passing(&got), want, "{name}");
        }
    }

    #[test]
    fn reasons_name_the_taint_and_the_namespace() {
        let rule = CheckTolerationRestriction::new(vec![guard(
            "dedicated",
            Some("tenant-a"),
            None,
            &["tenant-a"],
        )]);
        let copier = pod("p")
            .ns("team-b")
            .tolerate("dedicated", Equal, "tenant-a", None)
            .build();
        let mut cl = with_whitelist(None);
        let got = run_filter(&rule, &mut cl, copier.clone());
        assert_eq!(
            got[0].1,
            vec!["node(s) had taint {dedicated: tenant-a}, that namespace team-b may not tolerate"]
        );
        let mut cl = with_whitelist(Some(TolerationWhitelist::Invalid(
            "expected a JSON list".into(),
        )));
        let got = run_filter(&rule, &mut cl, copier);
        assert_eq!(
            got[0].1,
            vec![
                "node(s) had taint {dedicated: tenant-a}, that namespace team-b may not tolerate \
                 (its scheduler.alpha.kubernetes.io/tolerationsWhitelist annotation grants \
                 nothing, as it does not parse: expected a JSON list)"
            ]
        );
        let reason: Reason = got[0].1[0].clone().into();
        assert_eq!(
            rule.failure_kind(&reason),
            FailureKind::UnschedulableAndUnresolvable
        );
    }
}
