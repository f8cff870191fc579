//! Bad input must give an error, never a panic.

use proptest::prelude::*;

/// A policy touching every part of the format, for mutation.
const RICH: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
  {"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
  {"name": "MatchNamespaceNodeSelector", "argument": {"namespaceNodeSelector": {"defaultNodeSelector": "a=b"}}},
  {"name": "Guard", "argument": {"tolerationRestriction": {"taints": [{"taint": "a=b:NoSchedule", "namespaces": ["x"]}]}}},
  {"name": "Ips", "argument": {"podIPCapacity": {"nodeLabel": "example.com/ips", "whenMissing": "PodCIDR"}}},
  {"name": "GeneralPredicates"}, {"name": "PodFitsPorts"}],
 "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
  {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
  {"name": "Gpu", "weight": 2, "argument": {"labelPreference": {"label": "gpu", "presence": true}}},
  {"name": "Binpack", "weight": 3, "argument": {"requestedToCapacityRatioArguments":
    {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
     "resources": [{"name": "cpu", "weight": 1}]}}}],
 "extenders": [{"urlPrefix": "http://a", "filterVerb": "f", "prioritizeVerb": "p", "weight": 1,
  "bindVerb": "b", "enableHttps": true, "httpTimeout": 30000000000, "nodeCacheCapable": true,
  "tlsConfig": {"insecure": true, "caData": "QUJD"},
  "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": true}], "ignorable": false}],
 "hardPodAffinitySymmetricWeight": 1, "alwaysCheckAllPredicates": false}"#;

/// The same in YAML, with the constructs a YAML file may add.
const RICH_YAML: &str = "kind: Policy
apiVersion: v1
predicates:
- name: Region
  argument: {serviceAffinity: {labels: [region, 'yes', \"on\"]}}
- &zoned
  name: Zoned
  argument:
    labelsPresence:
      labels:
      - zone
      presence: yes
- name: GeneralPredicates
priorities:
- {name: LeastRequestedPriority, weight: 0x01}
- <<: {weight: 2.0}
  name: Gpu
  argument: {labelPreference: {label: gpu, presence: !!bool true}}
extenders:
- urlPrefix: \"http://a\"
  httpTimeout: 30_000_000_000
  tlsConfig: {caData: QUJD}
  managedResources: [{name: example.com/foo, ignoredByScheduler: on}]
hardPodAffinitySymmetricWeight: 010
";

proptest! {
    #[test]
    fn mutated_yaml_policies_do_not_panic(at in 0..RICH_YAML.len(), cut in 0usize..8, insert in "[-0-9a-z{}\\[\\]\"',:.&*!<|>#~ \n]{0,4}") {
        let start = (0..=at).rev().find(|i| RICH_YAML.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut..=RICH_YAML.len()).find(|i| RICH_YAML.is_char_boundary(*i)).unwrap_or(RICH_YAML.len());
        let text = format!("{}{insert}{}", &RICH_YAML[..start], &RICH_YAML[end..]);
        if let Ok(policy) = berth_policy::parse(&text, "fuzz.yaml") {
            let _ = policy.describe();
        }
    }

    #[test]
    fn arbitrary_text_does_not_panic(text in "\\PC{0,200}") {
        let _ = berth_policy::parse(&text, "fuzz.json");
    }

    #[test]
    fn mutated_policies_do_not_panic(at in 0..RICH.len(), cut in 0usize..8, insert in "[-0-9a-z{}\\[\\]\",:. ]{0,4}") {
        let start = (0..=at).rev().find(|i| RICH.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut..=RICH.len()).find(|i| RICH.is_char_boundary(*i)).unwrap_or(RICH.len());
        let text = format!("{}{insert}{}", &RICH[..start], &RICH[end..]);
        if let Ok(policy) = berth_policy::parse(&text, "fuzz.json") {
            let _ = policy.describe();
        }
    }
}

#[test]
fn the_rich_policies_are_valid() {
    let policy = berth_policy::parse(RICH, "rich.json");
    assert!(policy.is_ok(), "{policy:?}");
    let policy = berth_policy::parse(RICH_YAML, "rich.yaml");
    assert!(policy.is_ok(), "{policy:?}");
}

/// Deep nesting is refused before the JSON parser runs, with the position where the bound
/// was crossed.
#[test]
fn deep_nesting_is_refused_up_front() {
    let depth = 100_000;
    let text = format!(
        "{{\"predicates\": {}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let error = berth_policy::parse(&text, "deep.json")
        .expect_err("refused")
        .to_string();
    assert_eq!(
        error,
        "deep.json: line 1, column 271: malformed JSON: nested deeper than 256 levels of [ and { \
         (counted inside strings too); a Policy nests about 5 levels deep"
    );
}
