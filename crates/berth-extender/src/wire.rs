//! The JSON of k8s.io/kube-scheduler/extender/v1 as kube-scheduler v1.22 sends and reads it.
//!
//! The Go types have no JSON tags, so keys are the Go field names (`Pod`, `NodeNames`,
//! `FailedNodes`, ...). Go decodes keys case-insensitively (an exact match first) and ignores
//! unknown keys and `null` values; answers are read the same way here. Nodes and the pod go
//! out as the JSON the API server gave, untouched.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The body of a filter or prioritize call (`ExtenderArgs`).
#[derive(Serialize)]
pub struct ExtenderArgs<'a> {
    /// The pod being scheduled.
    #[serde(rename = "Pod")]
    pub pod: &'a RawValue,
    /// Whole nodes, when the extender is not node-cache capable.
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList<'a>>,
    /// Node names, when it is.
    #[serde(rename = "NodeNames")]
    pub node_names: Option<&'a [&'a str]>,
}

/// A `v1.NodeList` as Go marshals one built in memory: empty list metadata, no type meta.
#[derive(Serialize)]
pub struct NodeList<'a> {
    /// Always `{}`.
    pub metadata: Empty,
    /// The nodes.
    pub items: Vec<&'a RawValue>,
}

/// An empty JSON object.
#[derive(Serialize)]
pub struct Empty {}

/// The body of a bind call (`ExtenderBindingArgs`).
#[derive(Serialize)]
pub struct ExtenderBindingArgs<'a> {
    /// The pod's name.
    #[serde(rename = "PodName")]
    pub pod_name: &'a str,
    /// The pod's namespace.
    #[serde(rename = "PodNamespace")]
    pub pod_namespace: &'a str,
    /// The pod's UID.
    #[serde(rename = "PodUID")]
    pub pod_uid: &'a str,
    /// The chosen node.
    #[serde(rename = "Node")]
    pub node: &'a str,
}

/// The body of a preempt call (`ExtenderPreemptionArgs`): exactly one of the two maps is
/// set, as upstream sets them. Go writes map keys sorted, as a `BTreeMap` does.
#[derive(Serialize)]
pub struct ExtenderPreemptionArgs<'a> {
    /// The preemptor.
    #[serde(rename = "Pod")]
    pub pod: &'a RawValue,
    /// Victims as whole pods, when the extender is not node-cache capable.
    #[serde(rename = "NodeNameToVictims")]
    pub node_name_to_victims: Option<BTreeMap<&'a str, Victims<'a>>>,
    /// Victims as UIDs, when it is.
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: Option<BTreeMap<&'a str, MetaVictims<'a>>>,
}

/// `Victims`: one node's victims as whole pods.
#[derive(Serialize)]
pub struct Victims<'a> {
    /// The pods.
    #[serde(rename = "Pods")]
    pub pods: Vec<&'a RawValue>,
    /// Budget violations among them.
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// `MetaVictims`: one node's victims by UID.
#[derive(Serialize)]
pub struct MetaVictims<'a> {
    /// The pods.
    #[serde(rename = "Pods")]
    pub pods: Vec<MetaPod<'a>>,
    /// Budget violations among them (upstream's conversion never sets it: always 0).
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// `MetaPod`: a pod by UID.
#[derive(Serialize)]
pub struct MetaPod<'a> {
    /// The pod's UID.
    #[serde(rename = "UID")]
    pub uid: &'a str,
}

/// A decoded `ExtenderFilterResult`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FilterResult {
    /// `Nodes.items[*].metadata.name`, when `Nodes` was not null.
    pub nodes: Option<Vec<String>>,
    /// `NodeNames`, when not null.
    pub node_names: Option<Vec<String>>,
    /// `FailedNodes`: node name and message, sorted by node name.
    pub failed_nodes: Vec<(String, String)>,
    /// `FailedAndUnresolvableNodes`, sorted by node name.
    pub failed_and_unresolvable: Vec<(String, String)>,
    /// `Error` (empty when none).
    pub error: String,
}

/// What a filter answer looks like, for error messages.
pub const FILTER_RESULT: &str = "an ExtenderFilterResult object {\"NodeNames\": [...] or \
     \"Nodes\": {\"items\": [...]}, \"FailedNodes\": {...}, \"FailedAndUnresolvableNodes\": {...}, \
     \"Error\": \"...\"}";
/// What a prioritize answer looks like.
pub const HOST_PRIORITY_LIST: &str =
    "a HostPriorityList [{\"Host\": \"node name\", \"Score\": integer}, ...]";
/// What a bind answer looks like.
pub const BINDING_RESULT: &str = "an ExtenderBindingResult object {\"Error\": \"...\"}";

/// What a preempt answer looks like.
pub const PREEMPTION_RESULT: &str = "an ExtenderPreemptionResult object \
     {\"NodeNameToMetaVictims\": {\"node name\": {\"Pods\": [{\"UID\": \"pod UID\"}, ...], \
     \"NumPDBViolations\": integer}, ...}}";

/// Decodes a preempt answer (`ExtenderPreemptionResult`): each node with its victims' UIDs
/// in the order given, nodes sorted by name. `NumPDBViolations` is read (it must be an
/// integer) but not returned: upstream does not use it. Where Go would dereference a null
/// (a null node entry or pod), this is an error instead.
pub fn preemption_result(body: &[u8]) -> Result<Vec<(String, Vec<String>)>, String> {
    let value = parse(body)?;
    let Some(object) = object_or_null(&value, "the answer")? else {
        return Ok(Vec::new());
    };
    let at = "NodeNameToMetaVictims";
    let map = match field(object, at) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(format!(
                "{at} is {}, not an object of node name to MetaVictims",
                kind(other)
            ));
        }
    };
    let mut nodes = map
        .iter()
        .map(|(node, victims)| {
            let at = format!("{at}.{node}");
            let victims = match victims {
                Value::Object(v) => v,
                other => {
                    return Err(format!(
                        "{at} is {}, not a MetaVictims object {{\"Pods\": [...]}}",
                        kind(other)
                    ));
                }
            };
            integer(
                field(victims, "NumPDBViolations"),
                &format!("{at}.NumPDBViolations"),
            )?;
            let pods = match field(victims, "Pods") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(pods)) => pods
                    .iter()
                    .enumerate()
                    .map(|(i, pod)| {
                        let at = format!("{at}.Pods[{i}]");
                        match pod {
                            Value::Object(pod) => string(field(pod, "UID"), &format!("{at}.UID")),
                            other => Err(format!(
                                "{at} is {}, not a MetaPod object {{\"UID\": \"...\"}}",
                                kind(other)
                            )),
                        }
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(format!("{at}.Pods is {}, not an array", kind(other)));
                }
            };
            Ok((node.clone(), pods))
        })
        .collect::<Result<Vec<_>, String>>()?;
    nodes.sort();
    Ok(nodes)
}

/// Decodes a filter answer.
pub fn filter_result(body: &[u8]) -> Result<FilterResult, String> {
    let value = parse(body)?;
    let Some(object) = object_or_null(&value, "the answer")? else {
        return Ok(FilterResult::default());
    };
    let nodes = match field(object, "Nodes") {
        None => None,
        Some(list) => match object_or_null(list, "Nodes")? {
            None => None,
            Some(list) => Some(node_list_names(list)?),
        },
    };
    Ok(FilterResult {
        nodes,
        node_names: string_list(field(object, "NodeNames"), "NodeNames")?,
        failed_nodes: failed_map(field(object, "FailedNodes"), "FailedNodes")?,
        failed_and_unresolvable: failed_map(
            field(object, "FailedAndUnresolvableNodes"),
            "FailedAndUnresolvableNodes",
        )?,
        error: string(field(object, "Error"), "Error")?,
    })
}

/// Decodes a prioritize answer: (host, score) in the order given.
pub fn host_priority_list(body: &[u8]) -> Result<Vec<(String, i64)>, String> {
    let value = parse(body)?;
    let items = match &value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(format!("the answer is {}, not an array", kind(other))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("[{i}]");
            let Some(object) = object_or_null(item, &at)? else {
                // Go decodes a null element as a zero HostPriority.
                return Ok((String::new(), 0));
            };
            let host = string(field(object, "Host"), &format!("{at}.Host"))?;
            let score = integer(field(object, "Score"), &format!("{at}.Score"))?;
            Ok((host, score))
        })
        .collect()
}

/// Decodes a bind answer: its `Error` (empty when the binding succeeded).
pub fn binding_result(body: &[u8]) -> Result<String, String> {
    let value = parse(body)?;
    match object_or_null(&value, "the answer")? {
        None => Ok(String::new()),
        Some(object) => string(field(object, "Error"), "Error"),
    }
}

fn parse(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| {
        let start: String = String::from_utf8_lossy(&body[..body.len().min(80)]).into();
        format!("invalid JSON ({e}); the answer began {start:?}")
    })
}

/// A key as Go's encoding/json finds it: the exact name, else an ASCII case-insensitive one.
fn field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).or_else(|| {
        object
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object_or_null<'a>(
    value: &'a Value,
    at: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(format!("{at} is {}, not an object", kind(other))),
    }
}

fn string(value: Option<&Value>, at: &str) -> Result<String, String> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("{at} is {}, not a string", kind(other))),
    }
}

fn integer(value: Option<&Value>, at: &str) -> Result<i64, String> {
    match value {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| format!("{at} is {n}, not a 64-bit integer")),
        Some(other) => Err(format!("{at} is {}, not an integer", kind(other))),
    }
}

fn string_list(value: Option<&Value>, at: &str) -> Result<Option<Vec<String>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| string(Some(item), &format!("{at}[{i}]")))
            .collect::<Result<_, _>>()
            .map(Some),
        Some(other) => Err(format!("{at} is {}, not an array of names", kind(other))),
    }
}

fn failed_map(value: Option<&Value>, at: &str) -> Result<Vec<(String, String)>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => {
            let mut entries = map
                .iter()
                .map(|(node, message)| {
                    Ok((
                        node.clone(),
                        string(Some(message), &format!("{at}.{node}"))?,
                    ))
                })
                .collect::<Result<Vec<_>, String>>()?;
            entries.sort();
            Ok(entries)
        }
        Some(other) => Err(format!(
            "{at} is {}, not an object of node name to message",
            kind(other)
        )),
    }
}

fn node_list_names(list: &Map<String, Value>) -> Result<Vec<String>, String> {
    let items = match field(list, "items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("Nodes.items is {}, not an array", kind(other))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let at = format!("Nodes.items[{i}]");
            let name = object_or_null(node, &at)?
                .and_then(|n| field(n, "metadata"))
                .map(|m| object_or_null(m, &format!("{at}.metadata")))
                .transpose()?
                .flatten()
                .and_then(|m| field(m, "name"));
            string(name, &format!("{at}.metadata.name"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("valid JSON")
    }

    #[test]
    fn args_with_node_names_match_upstream() {
        let pod = raw(r#"{"metadata":{"name":"p","namespace":"default"}}"#);
        let names = ["n1", "n2"];
        let args = ExtenderArgs {
            pod: &pod,
            nodes: None,
            node_names: Some(&names),
        };
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"Pod":{"metadata":{"name":"p","namespace":"default"}},"Nodes":null,"NodeNames":["n1","n2"]}"#
        );
    }

    #[test]
    fn args_with_whole_nodes_match_upstream() {
        let pod = raw(r#"{"metadata":{"name":"p"}}"#);
        let n1 = raw(r#"{"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}}"#);
        let args = ExtenderArgs {
            pod: &pod,
            nodes: Some(NodeList {
                metadata: Empty {},
                items: vec![&n1],
            }),
            node_names: None,
        };
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"Pod":{"metadata":{"name":"p"}},"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}}]},"NodeNames":null}"#
        );
    }

    #[test]
    fn binding_args_match_upstream() {
        let args = ExtenderBindingArgs {
            pod_name: "p",
            pod_namespace: "ns",
            pod_uid: "u-1",
            node: "n1",
        };
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"PodName":"p","PodNamespace":"ns","PodUID":"u-1","Node":"n1"}"#
        );
    }

    #[test]
    fn filter_results_decode_as_go_does() {
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let cases: Vec<(&str, FilterResult)> = vec![
            // As upstream's own extenders write it (Go field names).
            (
                r#"{"NodeNames":["n1"],"FailedNodes":{"n2":"no GPU"},"FailedAndUnresolvableNodes":{"n3":"gone"},"Error":""}"#,
                FilterResult {
                    node_names: names(&["n1"]),
                    failed_nodes: pairs(&[("n2", "no GPU")]),
                    failed_and_unresolvable: pairs(&[("n3", "gone")]),
                    ..FilterResult::default()
                },
            ),
            // Keys match case-insensitively; unknown keys are ignored.
            (
                r#"{"nodenames":["n1","n2"],"failedNodes":null,"extra":1}"#,
                FilterResult {
                    node_names: names(&["n1", "n2"]),
                    ..FilterResult::default()
                },
            ),
            // Whole nodes.
            (
                r#"{"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1"}},{"metadata":{"name":"n2"}}]}}"#,
                FilterResult {
                    nodes: names(&["n1", "n2"]),
                    ..FilterResult::default()
                },
            ),
            (
                r#"{"Error":"quota exceeded"}"#,
                FilterResult {
                    error: "quota exceeded".into(),
                    ..FilterResult::default()
                },
            ),
            ("null", FilterResult::default()),
            ("{}", FilterResult::default()),
        ];
        for (text, want) in cases {
            assert_eq!(filter_result(text.as_bytes()).as_ref(), Ok(&want), "{text}");
        }
    }

    #[test]
    fn garbage_filter_results_are_named() {
        let cases = [
            ("<html>", "invalid JSON"),
            ("[]", "the answer is an array, not an object"),
            (
                r#"{"NodeNames":"n1"}"#,
                "NodeNames is a string, not an array of names",
            ),
            (
                r#"{"NodeNames":[1]}"#,
                "NodeNames[0] is a number, not a string",
            ),
            (
                r#"{"FailedNodes":["n1"]}"#,
                "FailedNodes is an array, not an object",
            ),
            (
                r#"{"FailedNodes":{"n1":3}}"#,
                "FailedNodes.n1 is a number, not a string",
            ),
            (
                r#"{"Nodes":{"items":[{"metadata":{"name":7}}]}}"#,
                "Nodes.items[0].metadata.name is a number",
            ),
            (r#"{"Error":false}"#, "Error is a boolean, not a string"),
        ];
        for (text, want) in cases {
            let got = filter_result(text.as_bytes()).expect_err(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }

    #[test]
    fn host_priority_lists_decode_as_go_does() {
        assert_eq!(
            host_priority_list(br#"[{"Host":"n1","Score":7},{"host":"n2","score":0}]"#),
            Ok(vec![("n1".into(), 7), ("n2".into(), 0)])
        );
        assert_eq!(host_priority_list(b"null"), Ok(vec![]));
        for (text, want) in [
            (r#"{"Host":"n1"}"#, "the answer is an object, not an array"),
            (
                r#"[{"Host":"n1","Score":1.5}]"#,
                "[0].Score is 1.5, not a 64-bit integer",
            ),
            (
                r#"[{"Host":"n1","Score":"9"}]"#,
                "[0].Score is a string, not an integer",
            ),
            (r#"[3]"#, "[0] is a number, not an object"),
        ] {
            let got = host_priority_list(text.as_bytes()).expect_err(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }

    /// Upstream's own shapes: what `json.Marshal` writes for an ExtenderPreemptionArgs built
    /// by ProcessPreemption for a node-cache capable extender (NodeNameToVictims nil, meta
    /// victims with the UIDs and NumPDBViolations unset) and for one that is not.
    #[test]
    fn preemption_args_match_upstream() {
        let pod = raw(r#"{"metadata":{"name":"p","uid":"u-p"}}"#);
        let meta = BTreeMap::from([
            (
                "n2",
                MetaVictims {
                    pods: vec![MetaPod { uid: "u-b" }],
                    num_pdb_violations: 0,
                },
            ),
            (
                "n1",
                MetaVictims {
                    pods: vec![MetaPod { uid: "u-a" }, MetaPod { uid: "u-c" }],
                    num_pdb_violations: 0,
                },
            ),
        ]);
        let args = ExtenderPreemptionArgs {
            pod: &pod,
            node_name_to_victims: None,
            node_name_to_meta_victims: Some(meta),
        };
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"Pod":{"metadata":{"name":"p","uid":"u-p"}},"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u-a"},{"UID":"u-c"}],"NumPDBViolations":0},"n2":{"Pods":[{"UID":"u-b"}],"NumPDBViolations":0}}}"#
        );
        let victim = raw(r#"{"metadata":{"name":"a","uid":"u-a"}}"#);
        let whole = BTreeMap::from([(
            "n1",
            Victims {
                pods: vec![&victim],
                num_pdb_violations: 1,
            },
        )]);
        let args = ExtenderPreemptionArgs {
            pod: &pod,
            node_name_to_victims: Some(whole),
            node_name_to_meta_victims: None,
        };
        assert_eq!(
            serde_json::to_string(&args).unwrap(),
            r#"{"Pod":{"metadata":{"name":"p","uid":"u-p"}},"NodeNameToVictims":{"n1":{"Pods":[{"metadata":{"name":"a","uid":"u-a"}}],"NumPDBViolations":1}},"NodeNameToMetaVictims":null}"#
        );
    }

    #[test]
    fn preemption_results_decode_as_go_does() {
        let got = |text: &str| preemption_result(text.as_bytes());
        let uids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got(
                r#"{"NodeNameToMetaVictims":{"n2":{"Pods":[{"UID":"b"}],"NumPDBViolations":0},"n1":{"Pods":[{"UID":"c"},{"UID":"a"}]}}}"#
            ),
            Ok(vec![
                ("n1".into(), uids(&["c", "a"])),
                ("n2".into(), uids(&["b"]))
            ])
        );
        // Keys case-insensitively, unknown keys ignored, nulls as Go reads them.
        assert_eq!(
            got(r#"{"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"a","extra":1}]}},"x":2}"#),
            Ok(vec![("n1".into(), uids(&["a"]))])
        );
        assert_eq!(
            got(r#"{"NodeNameToMetaVictims":{"n1":{"Pods":null}}}"#),
            Ok(vec![("n1".into(), vec![])])
        );
        for empty in [
            "null",
            "{}",
            r#"{"NodeNameToMetaVictims":null}"#,
            r#"{"NodeNameToMetaVictims":{}}"#,
        ] {
            assert_eq!(got(empty), Ok(vec![]), "{empty}");
        }
        for (text, want) in [
            ("[1]", "the answer is an array, not an object"),
            (
                r#"{"NodeNameToMetaVictims":[]}"#,
                "NodeNameToMetaVictims is an array, not an object of node name to MetaVictims",
            ),
            (
                r#"{"NodeNameToMetaVictims":{"n1":null}}"#,
                "NodeNameToMetaVictims.n1 is null, not a MetaVictims object",
            ),
            (
                r#"{"NodeNameToMetaVictims":{"n1":{"Pods":{}}}}"#,
                "NodeNameToMetaVictims.n1.Pods is an object, not an array",
            ),
            (
                r#"{"NodeNameToMetaVictims":{"n1":{"Pods":["a"]}}}"#,
                "NodeNameToMetaVictims.n1.Pods[0] is a string, not a MetaPod object",
            ),
            (
                r#"{"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":5}]}}}"#,
                "NodeNameToMetaVictims.n1.Pods[0].UID is a number, not a string",
            ),
            (
                r#"{"NodeNameToMetaVictims":{"n1":{"Pods":[],"NumPDBViolations":"1"}}}"#,
                "NodeNameToMetaVictims.n1.NumPDBViolations is a string, not an integer",
            ),
        ] {
            let error = got(text).expect_err(text);
            assert!(error.contains(want), "{text}: {error}");
        }
    }

    #[test]
    fn binding_results_decode_as_go_does() {
        assert_eq!(binding_result(br#"{"Error":""}"#), Ok(String::new()));
        assert_eq!(binding_result(br#"{}"#), Ok(String::new()));
        assert_eq!(
            binding_result(br#"{"error":"node full"}"#),
            Ok("node full".into())
        );
        assert!(binding_result(b"[]").is_err());
    }
}
