//! Label selectors and node selector terms, validated as the API server validates them.

use berth_model::labels::{LabelSelector, Operator, Requirement};
use berth_model::model::{NodeSelectorTerm, StringMap};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::field::{Field, Problem};

const LABEL_OPERATORS: &str = "In, NotIn, Exists, DoesNotExist";
const NODE_OPERATORS: &str = "In, NotIn, Exists, DoesNotExist, Gt, Lt";

/// The only field a node selector term's `matchFields` may name.
const NODE_NAME_FIELD: &str = "metadata.name";

/// A label selector: `matchLabels` entries become `In` requirements with one value,
/// followed by `matchExpressions` (no Gt/Lt, which only node selector terms allow).
pub(crate) fn label_selector(
    selector: &meta::LabelSelector,
    at: Field<'_>,
) -> Result<LabelSelector, Problem> {
    let mut requirements =
        LabelSelector::from_map(selector.match_labels.iter().flatten()).requirements;
    let expressions = at.name("matchExpressions");
    for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
        let at = expressions.index(index);
        let operator = match expression.operator.as_str() {
            "Gt" | "Lt" => {
                return Err(at.name("operator").problem(format!(
                    "operator {:?} is only valid in node selector terms (expected {LABEL_OPERATORS})",
                    expression.operator
                )));
            }
            other => parse_operator(other, LABEL_OPERATORS, at)?,
        };
        requirements.push(requirement(
            &expression.key,
            operator,
            expression.values.as_deref(),
            at,
        )?);
    }
    Ok(LabelSelector { requirements })
}

/// A `NodeSelector`'s terms (ORed).
pub(crate) fn node_selector(
    selector: &core::NodeSelector,
    at: Field<'_>,
) -> Result<Vec<NodeSelectorTerm>, Problem> {
    let terms = at.name("nodeSelectorTerms");
    selector
        .node_selector_terms
        .iter()
        .enumerate()
        .map(|(index, term)| node_selector_term(term, terms.index(index)))
        .collect()
}

/// One node selector term: label requirements (Gt/Lt allowed) and `metadata.name` field
/// requirements (In/NotIn with exactly one value, as upstream validation demands).
pub(crate) fn node_selector_term(
    term: &core::NodeSelectorTerm,
    at: Field<'_>,
) -> Result<NodeSelectorTerm, Problem> {
    let expressions = at.name("matchExpressions");
    let match_expressions = term
        .match_expressions
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, expression)| {
            let at = expressions.index(index);
            let operator = parse_operator(&expression.operator, NODE_OPERATORS, at)?;
            requirement(&expression.key, operator, expression.values.as_deref(), at)
        })
        .collect::<Result<_, _>>()?;
    let fields = at.name("matchFields");
    let match_fields = term
        .match_fields
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, field)| field_requirement(field, fields.index(index)))
        .collect::<Result<_, _>>()?;
    Ok(NodeSelectorTerm {
        match_expressions,
        match_fields,
    })
}

fn field_requirement(
    field: &core::NodeSelectorRequirement,
    at: Field<'_>,
) -> Result<Requirement, Problem> {
    if field.key != NODE_NAME_FIELD {
        return Err(at.name("key").problem(format!(
            "unsupported field {:?} (only {NODE_NAME_FIELD} is supported)",
            field.key
        )));
    }
    let operator = match field.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        other => {
            return Err(at.name("operator").problem(format!(
                "operator {other:?} is not valid for matchFields (expected In, NotIn)"
            )));
        }
    };
    let values = field.values.clone().unwrap_or_default();
    if values.len() != 1 {
        return Err(at.name("values").problem(format!(
            "must hold exactly one node name for operator {}, found {}",
            field.operator,
            values.len()
        )));
    }
    Ok(Requirement {
        key: field.key.clone(),
        operator,
        values,
    })
}

fn parse_operator(operator: &str, expected: &str, at: Field<'_>) -> Result<Operator, Problem> {
    Ok(match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::Gt,
        "Lt" => Operator::Lt,
        other => {
            return Err(at
                .name("operator")
                .problem(format!("unknown operator {other:?} (expected {expected})")));
        }
    })
}

/// A requirement whose values suit its operator.
fn requirement(
    key: &str,
    operator: Operator,
    values: Option<&[String]>,
    at: Field<'_>,
) -> Result<Requirement, Problem> {
    let values = values.unwrap_or_default();
    let wrong_values = match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            Some("must be non-empty for operator In or NotIn")
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Some("must be empty for operator Exists or DoesNotExist")
        }
        // A single non-integer bound passes validation upstream and matches no node.
        Operator::Gt | Operator::Lt if values.len() != 1 => {
            Some("must hold exactly one integer for operator Gt or Lt")
        }
        _ => None,
    };
    if let Some(message) = wrong_values {
        return Err(at.name("values").problem(message));
    }
    Ok(Requirement {
        key: key.to_owned(),
        operator,
        values: values.to_vec(),
    })
}

/// A StorageClass `allowedTopologies` term: each label requirement becomes `In`.
pub(crate) fn topology_selector_term(
    term: &core::TopologySelectorTerm,
    at: Field<'_>,
) -> Result<NodeSelectorTerm, Problem> {
    let expressions = at.name("matchLabelExpressions");
    let match_expressions = term
        .match_label_expressions
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, expression)| {
            requirement(
                &expression.key,
                Operator::In,
                Some(&expression.values),
                expressions.index(index),
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(NodeSelectorTerm {
        match_expressions,
        match_fields: Vec::new(),
    })
}

/// A label selector that may be absent (absent selects nothing or everything, as the
/// caller decides).
pub(crate) fn optional_selector(
    selector: Option<&meta::LabelSelector>,
    at: Field<'_>,
) -> Result<Option<LabelSelector>, Problem> {
    selector.map(|s| label_selector(s, at)).transpose()
}

/// Adds `key <operator> [the pod's value]` to `selector` for each of `keys` the pod has a
/// label for, as v1.36's API server does at pod creation (`applyLabelKeysToLabelSelector` in
/// pkg/registry/core/pod/strategy.go, for `matchLabelKeys` with In and `mismatchLabelKeys`
/// with NotIn): a key the pod has no label for is skipped, and an absent selector stays
/// absent, selecting nothing either way (`applyMatchLabelKeys`,
/// `applyMatchLabelKeysAndMismatchLabelKeys`). Pods read from an API server already carry
/// these requirements (affinity terms since v1.31, spread constraints since v1.34); adding
/// the same requirement again selects the same pods, so merging again is idempotent, and
/// cluster files written by hand get it too.
pub(crate) fn add_label_keys(
    selector: &mut Option<LabelSelector>,
    keys: Option<&[String]>,
    operator: Operator,
    labels: &StringMap,
) {
    let Some(selector) = selector else {
        return;
    };
    for key in keys.unwrap_or_default() {
        if let Some(value) = labels.get(key) {
            selector.requirements.push(Requirement {
                key: key.clone(),
                operator,
                values: vec![value.clone()],
            });
        }
    }
}
