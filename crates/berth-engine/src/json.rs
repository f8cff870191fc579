//! The few JSON-valued annotations the engine reads.

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvoidPods {
    #[serde(default)]
    prefer_avoid_pods: Vec<AvoidEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvoidEntry {
    pod_signature: Signature,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Signature {
    pod_controller: Option<Controller>,
}

#[derive(Deserialize)]
struct Controller {
    kind: String,
    #[serde(default)]
    uid: String,
}

/// The (controller kind, controller uid) pairs of a `preferAvoidPods` annotation. A malformed
/// annotation yields nothing, as upstream ignores it.
pub fn prefer_avoid_entries(text: &str) -> Vec<(Box<str>, Box<str>)> {
    serde_json::from_str::<AvoidPods>(text)
        .map(|a| {
            a.prefer_avoid_pods
                .into_iter()
                .filter_map(|e| e.pod_signature.pod_controller)
                .map(|c| (c.kind.into(), c.uid.into()))
                .collect()
        })
        .unwrap_or_default()
}
