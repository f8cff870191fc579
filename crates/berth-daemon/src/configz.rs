//! `/configz`: the configuration in effect as JSON (the document `berth check --output json`
//! prints, without the plugin list), replaced when a reloaded policy is swapped in.

use std::collections::BTreeMap;
use std::sync::RwLock;

use berth_engine::{FeatureGates, Scheduler};
use berth_policy::EffectivePolicy;
use serde_json::{Value, json};

/// The effective policy (predicates in evaluation order, priorities with weights,
/// extenders, settings, what came from defaults, warnings), the feature gates, and the rules
/// the scheduler built from it (entries of one upstream plugin are one rule).
pub fn document(policy: &EffectivePolicy, scheduler: &Scheduler, gates: FeatureGates) -> Value {
    let mut value = match serde_json::to_value(policy) {
        Ok(v) => v,
        // The policy's types serialise to plain JSON; nothing in them can fail.
        Err(e) => json!({ "error": format!("the policy cannot be shown: {e}") }),
    };
    value["featureGates"] = json!({"DefaultPodTopologySpread": gates.default_pod_topology_spread});
    value["rules"] = json!({
        "filters": scheduler.filters().iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        "scores": scheduler
            .scores()
            .iter()
            .map(|s| json!({"name": s.name, "weight": s.weight}))
            .collect::<Vec<_>>(),
    });
    value
}

/// The document served, shared by the server and whoever swaps policies in: one profile's
/// document, or with several `{"profiles": {name: document}}`.
#[derive(Debug, Default)]
pub struct Configz {
    documents: RwLock<BTreeMap<String, Value>>,
}

impl Configz {
    /// Serves `document` from now on (the only profile's).
    pub fn set(&self, document: &Value) {
        self.set_profile("", document);
    }

    /// Serves `document` as the profile `name`'s from now on.
    pub fn set_profile(&self, name: &str, document: &Value) {
        self.documents
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(name.to_string(), document.clone());
    }

    /// The document served now.
    pub fn text(&self) -> String {
        let documents = self
            .documents
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let value = match documents.len() {
            1 => documents.values().next().cloned().unwrap_or_default(),
            _ => json!({ "profiles": *documents }),
        };
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_engine::CycleConfig;

    #[test]
    fn the_document_is_the_effective_policy_with_its_rules_and_follows_updates() {
        let load = |text: &str| {
            let policy = berth_policy::parse(text, "test.json").expect("policy");
            let scheduler =
                berth_engine::scheduler_for(&policy, CycleConfig::default()).expect("scheduler");
            document(&policy, &scheduler, FeatureGates::default())
        };
        let configz = Configz::default();
        configz.set(&load(
            r#"{"predicates": [{"name": "GeneralPredicates"}],
                "priorities": [{"name": "LeastRequestedPriority", "weight": 2}]}"#,
        ));
        let shown: Value = serde_json::from_str(&configz.text()).expect("JSON");
        assert_eq!(shown["priorities"][0]["name"], "LeastRequestedPriority");
        assert_eq!(shown["priorities"][0]["weight"], 2);
        assert_eq!(shown["alwaysCheckAllPredicates"], false);
        assert_eq!(
            shown["rules"]["scores"],
            json!([{"name": "LeastRequestedPriority", "weight": 2}])
        );
        assert!(
            shown["rules"]["filters"]
                .as_array()
                .expect("filters")
                .contains(&json!("GeneralPredicates")),
            "{shown}"
        );
        assert_eq!(shown["featureGates"]["DefaultPodTopologySpread"], true);

        configz.set(&load(
            r#"{"predicates": [], "priorities": [{"name": "MostRequestedPriority", "weight": 1}]}"#,
        ));
        let shown: Value = serde_json::from_str(&configz.text()).expect("JSON");
        assert_eq!(shown["priorities"][0]["name"], "MostRequestedPriority");
    }
}
