//! Fields the API types know and Berth's model does not, that can change where a pod may go.
//!
//! Nothing is dropped in silence: each such field is named once per kind in a warning
//! (`simulate`, `check` of a cluster file) and in `berth run`'s log and metrics, and where
//! placing the pod as if the field were absent could overcommit a node or break a constraint
//! the user wrote, the pod is refused with a reason that names the field (`Pod::refused`,
//! which the engine's UnmodelledFields filter turns into every node's reason).
//!
//! Fields reviewed and left out of this list on purpose are in docs/fidelity.md (for
//! example Node `status.declaredFeatures`: in v1.36 no declared feature is inferred for
//! scheduling, so ignoring it moves no pod).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

/// A field Berth does not model.
#[derive(Debug, PartialEq, Eq)]
pub struct Unmodelled {
    /// The object's kind.
    pub kind: &'static str,
    /// The field path.
    pub field: &'static str,
    /// Whether a pending pod that sets it is refused rather than placed.
    pub refuses: bool,
    /// What ignoring it would do, and what to do instead; a refused pod's reason.
    pub why: &'static str,
}

/// Gang scheduling (workload-aware scheduling, alpha in v1.35): the API server keeps the
/// field only where its gate is on, so a pod that has it expects all-or-nothing placement.
pub const POD_SCHEDULING_GROUP: Unmodelled = Unmodelled {
    kind: "Pod",
    field: "spec.schedulingGroup",
    refuses: true,
    why: "pod sets spec.schedulingGroup (gang scheduling), which Berth does not model: \
          placing the group's pods one by one could break its all-or-nothing placement; \
          schedule it with a kube-scheduler that runs gang scheduling",
};

/// The fields of `pod` Berth does not model.
pub fn in_pod(pod: &Pod) -> Vec<&'static Unmodelled> {
    let mut found = Vec::new();
    if pod
        .spec
        .as_ref()
        .is_some_and(|s| s.scheduling_group.is_some())
    {
        found.push(&POD_SCHEDULING_GROUP);
    }
    found
}

/// How many objects set each unmodelled field, for one warning per kind and field.
#[derive(Debug, Default)]
pub struct Tally {
    counts: BTreeMap<(&'static str, &'static str), (usize, &'static Unmodelled)>,
}

impl Tally {
    /// Counts one object's unmodelled fields.
    pub fn add(&mut self, found: &[&'static Unmodelled]) {
        for u in found {
            self.counts.entry((u.kind, u.field)).or_insert((0, u)).0 += 1;
        }
    }

    /// One line per kind and field.
    pub fn warnings(&self) -> Vec<String> {
        self.counts
            .values()
            .map(|(count, u)| {
                let what = if u.refuses {
                    "refused, not placed"
                } else {
                    "placed as if it were unset"
                };
                format!(
                    "{count} {} object(s) set {} ({what}): {}",
                    u.kind, u.field, u.why
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec};

    fn pod(group: bool) -> Pod {
        Pod {
            spec: Some(PodSpec {
                scheduling_group: group.then(|| PodSchedulingGroup {
                    pod_group_name: Some("trainers".into()),
                }),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn fields_are_found_and_named_once_per_kind_and_field() {
        assert_eq!(in_pod(&pod(false)), Vec::<&Unmodelled>::new());
        let mut tally = Tally::default();
        tally.add(&in_pod(&pod(true)));
        tally.add(&in_pod(&pod(true)));
        tally.add(&in_pod(&pod(false)));
        let warnings = tally.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "2 Pod object(s) set spec.schedulingGroup (refused, not placed): pod sets \
                 spec.schedulingGroup (gang scheduling), which Berth does not model"
            ),
            "{warnings:?}"
        );
    }
}
