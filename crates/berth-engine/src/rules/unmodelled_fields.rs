//! UnmodelledFields: a pod that sets a field Berth does not model, where placing it as if
//! the field were absent could overcommit a node or break a constraint the user wrote, fits
//! nowhere. The converter names such fields in `Pod::refused`; this rule turns them into
//! every node's reason, so the pod gets a FailedScheduling event (and `simulate` a message)
//! that says which field and what to do, and is counted under this rule's name in the
//! unschedulable-pods metric.

use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, Reason};

/// The name the rule is known by in explanations and metrics.
pub const NAME: &str = "UnmodelledFields";

/// The rule.
pub struct UnmodelledFields;

impl FilterRule for UnmodelledFields {
    /// Removing pods cannot make a field understood, so preemption is not tried.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let refused = &ctx.pod.pod.refused;
        if refused.is_empty() {
            FilterPrep::Skip
        } else {
            FilterPrep::RejectAll(refused.iter().map(|r| Reason::from(r.clone())).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn a_refused_field_fits_nowhere_and_other_pods_are_not_checked() {
        let why = "pod sets spec.example, which Berth does not model";
        let mut refused = pod("p").build();
        refused.refused = vec![why.into()];
        let cases = vec![
            ("nothing refused: not checked", pod("p").build(), vec![]),
            (
                "a refused field: every node refused",
                refused,
                vec![why.to_string()],
            ),
        ];
        for (name, p, want) in cases {
            let mut c = cluster(vec![node("n1").build(), node("n2").build()], vec![]);
            for (node, reasons) in run_filter(&UnmodelledFields, &mut c, p) {
                assert_eq!(reasons, want, "{name}: {node}");
            }
        }
    }
}
