//! The policy and cluster `berth simulate` uses when none is given, built into the binary so
//! a fresh checkout (or an installed binary) shows Berth working anywhere.

/// `policies/openshift.json`.
pub const POLICY_NAME: &str = "policies/openshift.json";
/// Its text.
pub const POLICY: &str = include_str!("../../../policies/openshift.json");

/// What berth-policy says about the bundled policy that is meant for the author of a policy:
/// OpenShift 3.11's default policy names two node-condition predicates that kube-scheduler
/// v1.22 no longer registers. Those warnings matter to someone carrying their own policy to
/// v1.22; a newcomer running `berth simulate` with no flags wrote no policy, so for the
/// bundled one (and only when it is used as the built-in default) exactly these are left out.
/// The same file passed with `--policy` is a user's policy and keeps them.
const BUNDLED_POLICY_NOTES: [&str; 2] = [
    "predicates[6]: \"CheckNodeMemoryPressure\" is no longer registered by kube-scheduler v1.22",
    "predicates[7]: \"CheckNodeDiskPressure\" is no longer registered by kube-scheduler v1.22",
];

/// The bundled policy as the built-in default: parsed, without the notes above.
pub fn policy() -> Result<berth_policy::EffectivePolicy, berth_policy::PolicyError> {
    let mut policy = berth_policy::parse(POLICY, POLICY_NAME)?;
    policy
        .warnings
        .retain(|w| !BUNDLED_POLICY_NOTES.iter().any(|n| w.starts_with(n)));
    Ok(policy)
}
/// `policies/default.json`: v1.22's default predicates and priorities as a Policy, which
/// `berth bench` runs scheduler_perf's workloads with.
pub const DEFAULT_POLICY_NAME: &str = "policies/default.json";
/// Its text.
pub const DEFAULT_POLICY: &str = include_str!("../../../policies/default.json");
/// `policies/example-cluster.yaml`.
pub const CLUSTER_NAME: &str = "policies/example-cluster.yaml";
/// Its text.
pub const CLUSTER: &str = include_str!("../../../policies/example-cluster.yaml");

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the two notes named are left out: any other warning the bundled policy gains
    /// (an edit of policies/openshift.json) still shows, and each note still matches one.
    #[test]
    fn the_built_in_policy_drops_exactly_its_two_v122_notes() {
        let parsed = berth_policy::parse(POLICY, POLICY_NAME).unwrap();
        assert_eq!(
            parsed.warnings.len(),
            BUNDLED_POLICY_NOTES.len(),
            "{:?}",
            parsed.warnings
        );
        for note in BUNDLED_POLICY_NOTES {
            assert_eq!(
                parsed
                    .warnings
                    .iter()
                    .filter(|w| w.starts_with(note))
                    .count(),
                1,
                "{note:?} in {:?}",
                parsed.warnings
            );
        }
        assert!(policy().unwrap().warnings.is_empty());
    }
}
