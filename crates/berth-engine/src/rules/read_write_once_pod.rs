//! ReadWriteOncePod (GA in v1.29): a claim with that access mode is used by at most one pod
//! in the whole cluster, so a pod whose claim is in use by a pod on any node fits nowhere
//! (the kubelet would leave it in ContainerCreating beside the claim's user).
//!
//! As v1.36's VolumeRestrictions does it (pkg/scheduler/framework/plugins/volumerestrictions/
//! volume_restrictions.go): PreFilter (`readWriteOncePodPVCsForPod`, `calPreFilterState`)
//! takes the pod's claims with the access mode and counts those some pod on a node uses
//! (`IsPVCUsedByPods`: pods on nodes, terminating ones too; Berth's cluster keeps the count
//! per claim, see `Cluster::claim_in_use`). Filter (`satisfyReadWriteOncePod`) fails every
//! node with [`REASON`] while that count is above zero, as `Unschedulable`, so preemption may
//! clear it: its AddPod/RemovePod (`updateWithPod`) add or remove, for a pod put on or taken
//! off a copy of a node, one per volume of that pod naming one of those claims, by name alone
//! (upstream compares no namespace there), and Berth's dry runs do the same through
//! [`NodeCheck::count_pod`]. So a node whose victims include the claim's user can take the
//! pod, and no other node can.
//!
//! PreFilter skips the pod when no claim is in use, unless the pod also mounts a disk the
//! plugin checks (then its state stays, and a nominated pod using the claim counts); a pod
//! without such claims is never checked. A claim that does not exist fails upstream's
//! PreFilter (`persistentvolumeclaim "<name>" not found`, `UnschedulableAndUnresolvable`) for
//! every pod; Berth says so only for a pod that uses a ReadWriteOncePod claim, since v1.22's
//! decisions for other pods stand (CheckVolumeBinding, when the policy has it, gives the same
//! reason).
//!
//! v1.22 knew the access mode only behind an alpha gate, so this check applies whatever the
//! policy says (the rule of fidelity: what v1.22 never knew follows v1.36, whose default
//! profile always runs VolumeRestrictions).

use std::sync::Arc;

use crate::cluster::NodeInfo;
use crate::framework::{
    CountChanges, CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason, Reuse,
};
use crate::labels::Sym;
use crate::model::VolumeSource;
use crate::podinfo::PodInfo;
use crate::rules::volume_util::{claim_names, claim_not_found, find_claim};

/// The kube-scheduler framework plugin whose check this is.
pub const UPSTREAM_PLUGIN: &str = "VolumeRestrictions";

/// The name the rule is known by in explanations and metrics.
pub const NAME: &str = "ReadWriteOncePod";

/// The access mode.
pub const ACCESS_MODE: &str = "ReadWriteOncePod";

/// Every node's reason while a claim of the pod is in use (v1.36.3's
/// `ErrReasonReadWriteOncePodConflict`; the alpha-era wording was "node has pod using
/// PersistentVolumeClaim with the same name and ReadWriteOncePod access mode").
pub const REASON: &str = "node(s) unavailable due to PersistentVolumeClaim with \
     ReadWriteOncePod access mode already in-use by another pod";

/// The filter plugins v1.36's default profile runs before VolumeRestrictions, and
/// VolumeRestrictions itself, whose Filter checks disk conflicts first (pkg/scheduler/apis/
/// config/v1/default_plugins.go, `getDefaultPlugins`).
const RUN_BEFORE: [&str; 7] = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    UPSTREAM_PLUGIN,
];

/// Where the rule goes among a policy's filters, given each filter's upstream plugins: after
/// the last one whose plugins all run before VolumeRestrictions in v1.36, so that a node one
/// of them rejects reports that reason and not this one, as in v1.36 (where only the first
/// failing filter of a node reports), and before every other.
pub fn position<'a>(filters: impl Iterator<Item = &'a [&'static str]>) -> usize {
    let mut at = 0;
    for (i, plugins) in filters.enumerate() {
        if !plugins.is_empty() && plugins.iter().all(|p| RUN_BEFORE.contains(p)) {
            at = i + 1;
        }
    }
    at
}

/// The rule.
pub struct ReadWriteOncePod;

impl FilterRule for ReadWriteOncePod {
    /// The conflict is `Unschedulable` (preemption may remove the claim's user); a missing
    /// claim is `UnschedulableAndUnresolvable`, as upstream's PreFilter returns it.
    fn failure_kind(&self, reason: &Reason) -> FailureKind {
        if reason.as_str() == REASON {
            FailureKind::Unschedulable
        } else {
            FailureKind::UnschedulableAndUnresolvable
        }
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let cluster = ctx.cluster;
        let namespace = ctx.pod.pod.meta.namespace.as_str();
        let mut missing = None;
        let mut claims: Vec<&str> = Vec::new();
        for name in claim_names(ctx.pod) {
            match find_claim(cluster, namespace, name) {
                None => {
                    missing.get_or_insert(name);
                }
                Some(claim) if claim.access_modes.iter().any(|m| m == ACCESS_MODE) => {
                    if !claims.contains(&name) {
                        claims.push(name);
                    }
                }
                Some(_) => {}
            }
        }
        if claims.is_empty() {
            return FilterPrep::Skip;
        }
        if let Some(name) = missing {
            return FilterPrep::RejectAll(vec![Reason::Owned(Arc::from(claim_not_found(name)))]);
        }
        let in_use = claims
            .iter()
            .filter(|name| cluster.claim_in_use(namespace, name))
            .count() as i64;
        if in_use == 0 && !(ctx.nominated && mounts_disk(ctx.pod)) {
            return FilterPrep::Skip;
        }
        FilterPrep::Check(Box::new(ClaimCheck {
            claims,
            in_use,
            key: cluster.keys().hostname,
        }))
    }
}

/// Whether the pod mounts a disk VolumeRestrictions checks for conflicts (upstream's
/// `needsRestrictionsCheck`), which keeps the plugin's state for nominated pods to count in.
fn mounts_disk(pod: &PodInfo) -> bool {
    pod.pod.volumes.iter().any(|v| {
        matches!(
            v.source,
            VolumeSource::GcePersistentDisk { .. }
                | VolumeSource::AwsElasticBlockStore { .. }
                | VolumeSource::Rbd { .. }
                | VolumeSource::Iscsi { .. }
        )
    })
}

/// The prepared check: the pod's ReadWriteOncePod claims and how many of them are in use.
struct ClaimCheck<'a> {
    claims: Vec<&'a str>,
    in_use: i64,
    /// The key a copy's count change is recorded under (any fixed symbol does).
    key: Sym,
}

impl ClaimCheck<'_> {
    fn verdict(count: i64, reasons: &mut Vec<Reason>) -> bool {
        if count > 0 {
            reasons.push(REASON.into());
            return false;
        }
        true
    }
}

impl NodeCheck for ClaimCheck<'_> {
    /// Every node's verdict follows from the count alone, which the summary carries: a pod
    /// placed or removed anywhere that changes it makes the class ask again.
    fn reuse(&self) -> Reuse {
        Reuse::While {
            keys: Vec::new(),
            summary: Reuse::digest(&self.in_use),
        }
    }

    #[inline]
    fn check(&self, _node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        Self::verdict(self.in_use, reasons)
    }

    fn count_pod(&self, changes: &mut CountChanges, other: &PodInfo, _node: &NodeInfo, delta: i64) {
        let uses = claim_names(other)
            .filter(|name| self.claims.contains(name))
            .count() as i64;
        if uses > 0 {
            changes.add(0, self.key, self.key, delta * uses);
        }
    }

    fn check_changed(
        &self,
        _node: &NodeInfo,
        changes: &CountChanges,
        reasons: &mut Vec<Reason>,
    ) -> bool {
        Self::verdict(self.in_use + changes.get(0, self.key, self.key), reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cluster;
    use crate::model::Pod;
    use crate::testkit::*;

    const G: i64 = 1_000_000_000;

    fn claims() -> Vec<crate::model::PersistentVolumeClaim> {
        vec![
            pvc("rwop", G).access_modes(&[ACCESS_MODE]).build(),
            pvc("rwop2", G).access_modes(&[ACCESS_MODE]).build(),
            pvc("rwx", G).access_modes(&["ReadWriteMany"]).build(),
            pvc("rwop", G)
                .ns("other")
                .access_modes(&[ACCESS_MODE])
                .build(),
        ]
    }

    fn setup(pods: Vec<Pod>) -> Cluster {
        let mut cl = cluster(vec![node("n1").build(), node("n2").build()], pods);
        add_storage(&mut cl, vec![], claims(), vec![]);
        cl
    }

    fn using(name: &str, claims: &[&str]) -> PodBuilder {
        claims.iter().fold(pod(name), |p, c| p.claim(c))
    }

    /// Upstream's TestReadWriteOncePodPreFilter and TestReadWriteOncePodFilter
    /// (volume_restrictions_test.go): the claim's access mode, whether a pod on a node uses
    /// it, and the status every node then gets.
    #[test]
    fn table() {
        let rejected = || vec![REASON.to_string()];
        type Case = (&'static str, Vec<Pod>, Pod, Vec<String>);
        let cases: Vec<Case> = vec![
            (
                "no claims: not checked",
                vec![using("user", &["rwop"]).on("n1").build()],
                pod("p").build(),
                vec![],
            ),
            (
                "a claim without the access mode: not checked",
                vec![using("user", &["rwx"]).on("n1").build()],
                using("p", &["rwx"]).build(),
                vec![],
            ),
            (
                "a claim no pod uses: fits",
                vec![using("user", &["rwx"]).on("n1").build()],
                using("p", &["rwop"]).build(),
                vec![],
            ),
            (
                "a claim a pod on n1 uses: every node fails",
                vec![using("user", &["rwop"]).on("n1").build()],
                using("p", &["rwop"]).build(),
                rejected(),
            ),
            (
                "two conflicts: one reason",
                vec![
                    using("user", &["rwop"]).on("n1").build(),
                    using("user2", &["rwop2"]).on("n2").build(),
                ],
                using("p", &["rwop", "rwop2"]).build(),
                rejected(),
            ),
            (
                "a terminating user still holds the claim",
                vec![using("user", &["rwop"]).on("n1").terminating().build()],
                using("p", &["rwop"]).build(),
                rejected(),
            ),
            (
                "a pending pod using the claim does not",
                vec![using("user", &["rwop"]).build()],
                using("p", &["rwop"]).build(),
                vec![],
            ),
            (
                "a claim of the same name in another namespace does not",
                vec![using("user", &["rwop"]).ns("other").on("n1").build()],
                using("p", &["rwop"]).build(),
                vec![],
            ),
            (
                "a missing claim beside a ReadWriteOncePod one: PreFilter's not found",
                vec![],
                using("p", &["gone", "rwop"]).build(),
                vec!["persistentvolumeclaim \"gone\" not found".to_string()],
            ),
            (
                "a missing claim without a ReadWriteOncePod one: left to v1.22's rules",
                vec![],
                using("p", &["gone", "rwx"]).build(),
                vec![],
            ),
        ];
        for (name, pods, pending, want) in cases {
            let mut cl = setup(pods);
            let got = run_filter(&ReadWriteOncePod, &mut cl, pending);
            for (node, reasons) in got {
                assert_eq!(reasons, want, "{name}: {node}");
            }
        }
    }

    #[test]
    fn position_among_the_policy_filters() {
        let cases: Vec<(&str, Vec<&[&'static str]>, usize)> = vec![
            ("no filters", vec![], 0),
            (
                "after taints, before volume binding",
                vec![
                    &["NodeUnschedulable"],
                    &["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
                    &["VolumeRestrictions"],
                    &["TaintToleration"],
                    &["VolumeBinding"],
                    &["InterPodAffinity"],
                ],
                4,
            ),
            (
                "Berth's own filters do not move it",
                vec![&[], &["NodeName"], &[]],
                2,
            ),
            (
                "first when nothing runs before it",
                vec![&["VolumeBinding"], &[]],
                0,
            ),
        ];
        for (name, filters, want) in cases {
            assert_eq!(position(filters.into_iter()), want, "{name}");
        }
    }

    #[test]
    fn failure_kinds_follow_upstream() {
        assert_eq!(
            ReadWriteOncePod.failure_kind(&REASON.into()),
            FailureKind::Unschedulable
        );
        assert_eq!(
            ReadWriteOncePod.failure_kind(&Reason::from(claim_not_found("gone"))),
            FailureKind::UnschedulableAndUnresolvable
        );
    }

    /// The claim is freed as soon as its user leaves the cluster (the index follows pods).
    #[test]
    fn the_claim_is_freed_when_its_user_goes() {
        let mut cl = setup(vec![using("user", &["rwop"]).on("n1").build()]);
        let got = run_filter(&ReadWriteOncePod, &mut cl, using("p", &["rwop"]).build());
        assert_eq!(passing(&got), Vec::<&str>::new());
        cl.remove_pod("default", "user");
        let got = run_filter(&ReadWriteOncePod, &mut cl, using("p", &["rwop"]).build());
        assert_eq!(passing(&got), vec!["n1", "n2"]);
    }

    /// Upstream's AddPod/RemovePod (`updateWithPod`): on a copy of a node, removing the
    /// claim's user clears the conflict, removing another pod does not, and adding a pod
    /// that names the claim (in any namespace: upstream compares names only) brings it back.
    #[test]
    fn count_changes_on_node_copies() {
        let mut cl = setup(vec![
            using("user", &["rwop", "rwx"]).on("n1").build(),
            using("bystander", &["rwx"]).on("n1").build(),
        ]);
        let pending = cl.compile_pod(using("p", &["rwop"]).build());
        let elsewhere = cl.compile_pod(using("q", &["rwop"]).ns("other").build());
        let prep = ReadWriteOncePod.prepare(CycleContext {
            cluster: &cl,
            pod: &pending,
            nominated: false,
        });
        let FilterPrep::Check(check) = prep else {
            panic!("the claim is in use: the rule checks");
        };
        let n1 = cl.node(cl.node_by_name("n1").expect("n1"));
        let info = |name: &str| cl.pod(cl.pod_by_key("default", name).expect("test pod"));
        let verdict = |changes: &CountChanges| check.check_changed(n1, changes, &mut Vec::new());
        let mut changes = CountChanges::default();
        check.count_pod(&mut changes, info("bystander"), n1, -1);
        assert!(!verdict(&changes), "removing a bystander frees nothing");
        check.count_pod(&mut changes, info("user"), n1, -1);
        assert!(verdict(&changes), "removing the user frees the claim");
        check.count_pod(&mut changes, &elsewhere, n1, 1);
        assert!(!verdict(&changes), "a pod naming the claim takes it again");
    }

    /// Equal pods (one class) sharing a claim are decided as a cycle asking every node
    /// decides them: the first is placed, the others fit nowhere, with classes on or off.
    #[test]
    fn equal_pods_sharing_a_claim_are_decided_alike_with_classes() {
        use crate::preemption::DisruptionBudgets;
        use crate::scheduler::CycleConfig;
        use crate::simulation::{Outcome, schedule_all_with};
        let policy = berth_policy::parse(
            r#"{"predicates": [{"name": "GeneralPredicates"}],
                "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}"#,
            "p.json",
        )
        .expect("policy");
        let run = |classes: bool| {
            let mut cl = setup(vec![]);
            let config = CycleConfig {
                equivalence_classes: classes,
                ..CycleConfig::default()
            };
            let mut s = crate::registry::scheduler_for(&policy, config).expect("scheduler");
            let pending = (0..4)
                .map(|i| using(&format!("p{i}"), &["rwop"]).build())
                .chain([using("other", &["rwop2"]).build()])
                .collect();
            let mut out = Vec::new();
            schedule_all_with(
                &mut cl,
                &mut s,
                &DisruptionBudgets::new(),
                pending,
                crate::Detail::Decision,
                |o: &Outcome| out.push((o.pod.clone(), o.node.clone(), o.message())),
            )
            .expect("schedule");
            out
        };
        let plain = run(false);
        assert_eq!(plain, run(true));
        let refused = Some(format!("0/2 nodes are available: 2 {REASON}."));
        let placed: Vec<bool> = plain.iter().map(|(_, node, _)| node.is_some()).collect();
        assert_eq!(placed, [true, false, false, false, true]);
        for (pod, _, message) in &plain[1..4] {
            assert_eq!(*message, refused, "{pod}");
        }
    }

    /// A claim no pod uses skips the check, even with a nominated pod that might use it,
    /// unless the pod also mounts a disk (upstream keeps its state then).
    #[test]
    fn skips_unless_a_nominated_pod_could_count() {
        let mut cl = setup(vec![]);
        let plain = cl.compile_pod(using("p", &["rwop"]).build());
        let with_disk = cl.compile_pod(
            using("p", &["rwop"])
                .volume(
                    "disk",
                    VolumeSource::AwsElasticBlockStore {
                        volume_id: "vol".into(),
                    },
                )
                .build(),
        );
        let skips = |pod: &PodInfo, nominated: bool| {
            matches!(
                ReadWriteOncePod.prepare(CycleContext {
                    cluster: &cl,
                    pod,
                    nominated,
                }),
                FilterPrep::Skip
            )
        };
        assert!(skips(&plain, false));
        assert!(skips(&plain, true));
        assert!(skips(&with_disk, false));
        assert!(!skips(&with_disk, true));
    }
}
