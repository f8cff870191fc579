//! DynamicResources, refused: a pod with `spec.resourceClaims` (Dynamic Resource Allocation,
//! GA in v1.34) needs devices allocated from ResourceSlices and the allocation written to its
//! claims before binding. Berth does not allocate devices, and placing such a pod anyway
//! leaves it in ContainerCreating on a node that may have no device at all, so it fits
//! nowhere, with a reason that names the field and what to do instead.
//!
//! v1.22 never knew the field, so this check applies whatever the policy says (the rule of
//! fidelity: what v1.22 never knew follows v1.36, whose default profile always runs
//! DynamicResources).

use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, Reason};

/// The kube-scheduler framework plugin whose work this stands in for.
pub const UPSTREAM_PLUGIN: &str = "DynamicResources";

/// The name the rule is known by in explanations and metrics.
pub const NAME: &str = "DynamicResources";

/// Every node's reason for a pod with resource claims.
pub const REASON: &str = "pod has resource claims (spec.resourceClaims): Berth does not \
     allocate Dynamic Resource Allocation devices; schedule the pod with a scheduler that runs \
     the DynamicResources plugin (kube-scheduler v1.34 or later, default-scheduler)";

/// The rule.
pub struct DynamicResources;

impl FilterRule for DynamicResources {
    /// Removing pods cannot allocate a device, so preemption is not tried.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        if ctx.pod.pod.resource_claims.is_empty() {
            FilterPrep::Skip
        } else {
            FilterPrep::RejectAll(vec![REASON.into()])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn claims_fit_nowhere_and_other_pods_are_not_checked() {
        let mut claimed = pod("p").build();
        claimed.resource_claims = vec!["gpu".into()];
        let cases = vec![
            ("no claims: not checked", pod("p").build(), vec![]),
            (
                "a claim: every node refused",
                claimed,
                vec![REASON.to_string()],
            ),
        ];
        for (name, p, want) in cases {
            let mut c = cluster(vec![node("n1").build(), node("n2").build()], vec![]);
            let got = run_filter(&DynamicResources, &mut c, p);
            for (node, reasons) in got {
                assert_eq!(reasons, want, "{name}: {node}");
            }
        }
    }
}
