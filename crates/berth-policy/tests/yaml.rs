//! A YAML Policy, read as kube-scheduler v1.22.17 reads one: converted to JSON by
//! sigs.k8s.io/yaml v1.2.0 (go-yaml v2.4.0, YAML 1.1), then decoded as JSON is
//! (k8s.io/apimachinery v0.22.17, pkg/runtime/serializer/json/json.go, `Decode`).

use berth_policy::{EffectivePolicy, PolicyError, parse};

const JSON: &str = r#"{
  "kind": "Policy",
  "apiVersion": "v1",
  "predicates": [
    {"name": "GeneralPredicates"},
    {"name": "PodToleratesNodeTaints"},
    {"name": "rack_affinity", "argument": {"serviceAffinity": {"labels": ["region", "rack"]}}},
    {"name": "Z", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
    {"name": "Zone", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
    {"name": "Binpack", "weight": 3, "argument": {"requestedToCapacityRatioArguments":
      {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
       "resources": [{"name": "cpu", "weight": 1}]}}}
  ],
  "extenders": [{"urlPrefix": "http://127.0.0.1:8888", "filterVerb": "filter", "weight": 1,
    "enableHttps": false, "httpTimeout": 2000000000, "nodeCacheCapable": true,
    "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": true}],
    "ignorable": true}],
  "hardPodAffinitySymmetricWeight": 10,
  "alwaysCheckAllPredicates": true
}"#;

/// The same Policy as `JSON`, written as people write YAML: block and flow style, comments,
/// quoting only where needed, an anchor.
const YAML: &str = "\
# kube-scheduler v1.22 Policy
kind: Policy
apiVersion: v1
predicates:
  - name: GeneralPredicates
  - {name: PodToleratesNodeTaints}
  - name: rack_affinity
    argument:
      serviceAffinity:
        labels: [region, rack]
  - name: Z
    argument:
      labelsPresence:
        labels:
          - retiring
        presence: false
priorities:
  - &one {name: LeastRequestedPriority, weight: 1}
  - name: NodePreferAvoidPodsPriority
    weight: 10000
  - name: \"Zone\"
    weight: 2
    argument: {serviceAntiAffinity: {label: zone}}
  - name: Binpack
    weight: 3
    argument:
      requestedToCapacityRatioArguments:
        shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
        resources:
          - name: cpu
            weight: 1
extenders:
  - urlPrefix: http://127.0.0.1:8888
    filterVerb: filter
    weight: 1
    enableHttps: false
    httpTimeout: 2000000000
    nodeCacheCapable: true
    managedResources:
      - name: example.com/foo
        ignoredByScheduler: true
    ignorable: true
hardPodAffinitySymmetricWeight: 10
alwaysCheckAllPredicates: true
...
";

fn parsed(text: &str) -> EffectivePolicy {
    parse(text, "p.yaml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn yaml_equal_to_json_gives_the_same_policy() {
    assert_eq!(parsed(YAML), parsed(JSON));
}

/// Good YAML files, each equal to a JSON one. The YAML 1.1 spellings are go-yaml v2.4.0's
/// (resolve.go, `resolveMapList`): v1.22.17 reads `yes`/`on` as true, `010` as 8, `0x0A`
/// as 10, `1_1` as 11 and `2.0` as the integer 2 (sigs.k8s.io/yaml writes the float 2 as
/// JSON `2`); each was checked with the reference binary (kube-scheduler-v1.22).
#[test]
fn good_yaml_files() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "a JSON document that does not start with {",
            "\n  \n{}",
            "{}",
        ),
        (
            "top-level flow mapping after a comment",
            "# c\n{kind: Policy}",
            r#"{"kind": "Policy"}"#,
        ),
        (
            "explicit document start",
            "---\nkind: Policy\n",
            r#"{"kind": "Policy"}"#,
        ),
        (
            "yes and on are true, no and off false (YAML 1.1)",
            "alwaysCheckAllPredicates: yes\npredicates:\n- name: a\n  argument: {labelsPresence: {labels: [x], presence: on}}\n- name: b\n  argument: {labelsPresence: {labels: [disk], presence: off}}\n",
            r#"{"alwaysCheckAllPredicates": true, "predicates": [
                {"name": "a", "argument": {"labelsPresence": {"labels": ["x"], "presence": true}}},
                {"name": "b", "argument": {"labelsPresence": {"labels": ["disk"], "presence": false}}}]}"#,
        ),
        (
            "y and N are booleans too (YAML 1.1)",
            "alwaysCheckAllPredicates: y\n",
            r#"{"alwaysCheckAllPredicates": true}"#,
        ),
        (
            "octal, hex, underscores and whole floats as integers",
            "priorities:\n- {name: LeastRequestedPriority, weight: 010}\n- {name: BalancedResourceAllocation, weight: 2.0}\n- {name: ImageLocalityPriority, weight: 0x0A}\n- {name: NodeAffinityPriority, weight: 1_1}\n",
            r#"{"priorities": [{"name": "LeastRequestedPriority", "weight": 8},
                {"name": "BalancedResourceAllocation", "weight": 2},
                {"name": "ImageLocalityPriority", "weight": 10},
                {"name": "NodeAffinityPriority", "weight": 11}]}"#,
        ),
        (
            "quoted yes and numbers stay strings",
            "predicates:\n- name: \"on\"\n  argument: {serviceAffinity: {labels: ['yes', \"10\"]}}\n",
            r#"{"predicates": [{"name": "on", "argument": {"serviceAffinity": {"labels": ["yes", "10"]}}}]}"#,
        ),
        (
            "!!str makes a plain scalar a string",
            "predicates:\n- name: !!str 10\n  argument: {serviceAffinity: {labels: [!!str true]}}\n",
            r#"{"predicates": [{"name": "10", "argument": {"serviceAffinity": {"labels": ["true"]}}}]}"#,
        ),
        (
            "block scalars are strings",
            "predicates:\n- name: |-\n    Region\n  argument: {serviceAffinity: {labels: [region]}}\n",
            r#"{"predicates": [{"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}}]}"#,
        ),
        (
            "anchors, aliases and a << merge",
            "priorities:\n- &lr {name: LeastRequestedPriority, weight: 1}\n- <<: {weight: 1}\n  name: BalancedResourceAllocation\n",
            r#"{"priorities": [{"name": "LeastRequestedPriority", "weight": 1},
                {"name": "BalancedResourceAllocation", "weight": 1}]}"#,
        ),
        (
            "null and ~ are null, as absent",
            "predicates: ~\npriorities: null\nextenders:\n",
            "{}",
        ),
    ];
    for (case, yaml, json) in cases {
        let (yaml, json) = (parse(yaml, "p.yaml"), parse(json, "p.json"));
        match (yaml, json) {
            (Ok(yaml), Ok(json)) => assert_eq!(yaml, json, "{case}"),
            (yaml, json) => panic!("{case}: YAML {yaml:?}, JSON {json:?}"),
        }
    }
}

/// Each YAML error names the file, the JSON path where there is one, what is wrong, and
/// the line and column in the YAML text.
#[test]
fn yaml_errors_name_the_place() {
    let cases: &[(&str, &str, &str)] = &[
        // Syntax: line and column of the YAML parser's error.
        (
            "bad indentation",
            "kind: Policy\npredicates:\n- name: HostName\n bad: [\n",
            "p.yaml: line 4, column 2: malformed YAML: while parsing a block mapping, did not find expected key",
        ),
        (
            "unclosed flow mapping",
            "kind: Policy\npredicates: {name: x\n",
            "p.yaml: line 3, column 1: malformed YAML: while parsing a flow mapping, did not find expected ',' or '}'",
        ),
        (
            "unterminated quote",
            "kind: Policy\npredicates:\n- name: 'HostName\n",
            "p.yaml: line 3, column 9: malformed YAML: while scanning a quoted scalar, found unexpected end of stream",
        ),
        (
            "undefined alias",
            "kind: Policy\npredicates:\n- *nope\n",
            "p.yaml: line 3, column 3: malformed YAML: while parsing node, found unknown anchor",
        ),
        (
            "a second document",
            "kind: Policy\n---\nkind: Policy\n",
            "p.yaml: line 2, column 1: malformed YAML: a second YAML document starts here; a Policy file holds one \
             (kube-scheduler v1.22 would silently ignore the rest)",
        ),
        (
            "only comments",
            "# nothing here\n",
            "p.yaml: line 1, column 1: malformed YAML: the file holds no YAML value, only comments; a Policy is a \
             mapping such as `kind: Policy`",
        ),
        (
            "a tag that does not fit",
            "hardPodAffinitySymmetricWeight: !!int ten\n",
            "p.yaml: line 1, column 33: malformed YAML: cannot decode !!str `ten` as a !!int",
        ),
        // Types and fields: the JSON path and the position of the value or key.
        (
            "on is a boolean, not a name (YAML 1.1)",
            "kind: Policy\npredicates:\n- name: on\n",
            "p.yaml: predicates[0].name: invalid type: boolean `true`, expected a string (line 3, column 9)",
        ),
        (
            "a fractional weight",
            "priorities:\n- name: LeastRequestedPriority\n  weight: 1.5\n",
            "p.yaml: priorities[0].weight: invalid type: floating point `1.5`, expected i64 (line 3, column 11)",
        ),
        (
            "a string for a list",
            "predicates:\n- name: Region\n  argument:\n    serviceAffinity:\n      labels: rack\n",
            "p.yaml: predicates[0].argument.serviceAffinity.labels: invalid type: string \"rack\", expected a sequence \
             (line 5, column 15)",
        ),
        (
            "a number in a list of strings",
            "predicates:\n- name: Region\n  argument: {serviceAffinity: {labels: [1, on]}}\n",
            "p.yaml: predicates[0].argument.serviceAffinity.labels[0]: invalid type: integer `1`, expected a string \
             (line 3, column 41)",
        ),
        (
            "a duration where nanoseconds are expected",
            "extenders:\n- urlPrefix: http://a\n  httpTimeout: 5s\n",
            "p.yaml: extenders[0].httpTimeout: invalid type: string \"5s\", expected i64 (line 3, column 16)",
        ),
        (
            "an unknown field",
            "kind: Policy\nfoo: 1\n",
            "p.yaml: foo: unknown field `foo`, expected one of: kind, apiVersion, predicates, priorities, extenders, \
             hardPodAffinitySymmetricWeight, alwaysCheckAllPredicates (line 2, column 1)",
        ),
        (
            "a repeated key",
            "predicates:\n- name: HostName\n  name: x\n",
            "p.yaml: predicates[0].name: duplicate field `name`: each key may appear once (line 3, column 3)",
        ),
        (
            "a key a merge repeats",
            "priorities:\n- <<: {name: LeastRequestedPriority, weight: 1}\n  name: MostRequestedPriority\n",
            "p.yaml: priorities[0].name: duplicate field `name`: each key may appear once (line 3, column 3)",
        ),
        (
            "a merge of a scalar",
            "priorities:\n- <<: 1\n",
            "p.yaml: priorities[0]: a << merge takes a mapping or a list of mappings (line 2, column 7)",
        ),
        (
            "a null key",
            "kind: Policy\n~: 1\n",
            "p.yaml: top level: a null key (~, null or nothing) cannot be a JSON key, and kube-scheduler v1.22 \
             refuses it; expected a field name (line 2, column 1)",
        ),
        (
            "NaN",
            "priorities:\n- {name: LeastRequestedPriority, weight: .nan}\n",
            "p.yaml: priorities[0].weight: NaN (.nan or .inf) has no JSON form, so kube-scheduler v1.22 refuses it; \
             expected a finite number (line 2, column 42)",
        ),
        (
            "a list at the top",
            "- a\n- b\n",
            "p.yaml: top level: invalid type: sequence, expected a Policy object (line 1, column 1)",
        ),
        // Another kind of file is named by its kind, not by its first unknown field.
        (
            "a KubeSchedulerConfiguration",
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: berth\n",
            "p.yaml: kind: expected \"Policy\", got \"KubeSchedulerConfiguration\"; Berth reads the legacy Policy file \
             (--policy-config-file), not a KubeSchedulerConfiguration (give that with --config)",
        ),
        // Validation after decoding is the same for YAML and JSON.
        (
            "a weight out of range",
            "priorities:\n- {name: LeastRequestedPriority, weight: 0}\n",
            "p.yaml: priorities[0].weight: weight must be a positive integer, got 0",
        ),
    ];
    let mut failures = Vec::new();
    for (case, yaml, want) in cases {
        match parse(yaml, "p.yaml") {
            Ok(_) => failures.push(format!("{case}: accepted")),
            Err(error) if error.to_string() != *want => {
                failures.push(format!("{case}:\n  got  {error}\n  want {want}"));
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn yaml_syntax_errors_are_their_own_variant() {
    match parse("a: [\n", "p.yaml") {
        Err(PolicyError::YamlSyntax {
            file, line, column, ..
        }) => {
            assert_eq!((file.as_str(), line, column), ("p.yaml", 2, 1));
        }
        other => panic!("expected a YamlSyntax error, got {other:?}"),
    }
}

/// Nesting and aliases are bounded before they cost time or stack.
#[test]
fn yaml_that_expands_without_bound_is_refused() {
    let deep = "- ".repeat(100_000) + "x\n";
    let error = parse(&deep, "deep.yaml").expect_err("refused").to_string();
    assert_eq!(
        error,
        "deep.yaml: line 1, column 513: malformed YAML: nested deeper than 256 levels; a Policy \
         nests about 5 levels deep"
    );
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let previous = level - 1;
        bomb.push_str(&format!(
            "a{level}: &a{level} [*a{previous}, *a{previous}, *a{previous}, *a{previous}, \
             *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}]\n"
        ));
    }
    let error = parse(&bomb, "bomb.yaml").expect_err("refused").to_string();
    assert!(
        error.contains(
            "malformed YAML: the file holds more than 1000000 values (aliases and anchors \
             expanded); a Policy has a few hundred"
        ),
        "{error}"
    );
}
