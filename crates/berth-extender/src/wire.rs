//! The JSON of k8s.io/kube-scheduler/extender/v1 as kube-scheduler v1.22 sends and reads it.
//!
//! The Go types have no JSON tags, so keys are the Go field names (`Pod`, `NodeNames`,
//! `FailedNodes`, ...). Go decodes keys case-insensitively (an exact match first) and ignores
//! unknown keys and `null` values; answers are read the same way here. Nodes and the pod go
//! out as the JSON the API server gave, untouched.

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
