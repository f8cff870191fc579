//! CheckWorkloadQuarantine (Berth): crash-loop containment. The pods of a quarantined
//! workload (see [`crate::health::quarantine`]) are kept off every node, or, when the policy
//! names a quarantine node label, off every node without it; nothing else in the cluster is
//! affected. The reason says why and how to release the workload.

use crate::cluster::NodeInfo;
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::health::quarantine::RELEASE_ANNOTATION;
use crate::health::state::Quarantine;
use crate::health::{Workload, format_utc, workload_of};

/// What every reason of this rule starts with.
const PREFIX: &str = "pod's owner ";
/// What every reason of this rule says after the owner.
const QUARANTINED: &str = " is quarantined";

/// The reason for a quarantined workload's pod on a node it may not use.
pub fn reason(workload: &Workload, quarantine: &Quarantine, label: Option<&NodeLabel>) -> String {
    let allowed = match label {
        Some(l) => format!(", and may only use nodes labelled {l}"),
        None => String::new(),
    };
    format!(
        "{PREFIX}{workload}{QUARANTINED}: nodes {} went NotReady shortly after receiving its \
         pods{allowed}; annotate the {} with {RELEASE_ANNOTATION}=true to release it, or wait \
         until {}",
        quarantine.nodes.join(", "),
        workload.kind,
        format_utc(quarantine.until)
    )
}

/// A node label (key, optionally value) that marks nodes quarantined pods may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabel {
    /// Label key.
    pub key: String,
    /// Label value; None accepts any.
    pub value: Option<String>,
}

impl std::fmt::Display for NodeLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={v}", self.key),
            None => f.write_str(&self.key),
        }
    }
}

/// The rule.
pub struct CheckWorkloadQuarantine {
    label: Option<NodeLabel>,
}

impl CheckWorkloadQuarantine {
    /// The rule; `label` names the nodes quarantined pods may still use.
    pub fn new(label: Option<NodeLabel>) -> Self {
        CheckWorkloadQuarantine { label }
    }
}

struct Check<'a> {
    label: &'a NodeLabel,
    reason: String,
}

impl NodeCheck for Check<'_> {
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let labelled = node
            .node
            .meta
            .labels
            .get(&self.label.key)
            .is_some_and(|v| self.label.value.as_ref().is_none_or(|want| want == v));
        if !labelled {
            reasons.push(self.reason.clone().into());
        }
        labelled
    }
}

impl FilterRule for CheckWorkloadQuarantine {
    /// Removing pods does not lift a quarantine.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let state = ctx.cluster.protections();
        if state.quarantines().is_empty() {
            return FilterPrep::Skip;
        }
        let Some(workload) = workload_of(&ctx.pod.pod) else {
            return FilterPrep::Skip;
        };
        let Some(quarantine) = state.quarantine(&workload) else {
            return FilterPrep::Skip;
        };
        let reason = reason(&workload, quarantine, self.label.as_ref());
        match &self.label {
            None => FilterPrep::RejectAll(vec![reason.into()]),
            Some(label) => FilterPrep::Check(Box::new(Check { label, reason })),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::testkit::*;

    fn bomb() -> Workload {
        Workload {
            kind: "ReplicaSet".into(),
            namespace: "default".into(),
            name: "bomb".into(),
        }
    }

    fn quarantine() -> Quarantine {
        Quarantine {
            since: 1_000,
            until: 4_600,
            nodes: vec!["n1".into(), "n2".into(), "n3".into()],
        }
    }

    #[test]
    fn only_the_quarantined_workloads_pods_are_kept_off() {
        let label = NodeLabel {
            key: "berth.dev/quarantine".into(),
            value: Some("true".into()),
        };
        let cases: &[(&str, Option<NodeLabel>, &str, &[&str])] = &[
            ("other workload", None, "web", &["a", "q", "q-other"]),
            ("quarantined, no quarantine nodes", None, "bomb", &[]),
            (
                "quarantined, quarantine nodes",
                Some(label.clone()),
                "bomb",
                &["q"],
            ),
            (
                "any value of the label",
                Some(NodeLabel {
                    key: "berth.dev/quarantine".into(),
                    value: None,
                }),
                "bomb",
                &["q", "q-other"],
            ),
        ];
        for (name, label, owner, want) in cases {
            let nodes = vec![
                node("a").build(),
                node("q").label("berth.dev/quarantine", "true").build(),
                node("q-other")
                    .label("berth.dev/quarantine", "maybe")
                    .build(),
            ];
            let mut cluster = cluster(nodes, vec![]);
            cluster
                .protections_mut()
                .set_quarantines(BTreeMap::from([(bomb(), quarantine())]));
            let rule = CheckWorkloadQuarantine::new(label.clone());
            let p = pod("p").owner("ReplicaSet", owner, "uid-1").build();
            let results = run_filter(&rule, &mut cluster, p);
            assert_eq!(passing(&results), *want, "{name}");
        }
    }

    #[test]
    fn a_bare_pod_is_never_quarantined() {
        let mut cluster = cluster(vec![node("a").build()], vec![]);
        cluster
            .protections_mut()
            .set_quarantines(BTreeMap::from([(bomb(), quarantine())]));
        let results = run_filter(
            &CheckWorkloadQuarantine::new(None),
            &mut cluster,
            pod("bomb").build(),
        );
        assert_eq!(passing(&results), ["a"]);
    }

    #[test]
    fn the_reason_says_why_and_how_to_release() {
        let text = reason(&bomb(), &quarantine(), None);
        assert_eq!(
            text,
            "pod's owner ReplicaSet default/bomb is quarantined: nodes n1, n2, n3 went NotReady \
             shortly after receiving its pods; annotate the ReplicaSet with \
             berth.dev/quarantine-release=true to release it, or wait until \
             1970-01-01T01:16:40Z"
        );
    }
}
