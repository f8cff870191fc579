//! The kube-scheduler `kind: Policy` file (the `--policy-config-file` format, v1.22 semantics),
//! JSON or YAML: parsing, validation and the effective configuration the scheduler runs with.
//!
//! What is accepted is the union of what kube-scheduler v1.22 and v1.12 accepted, plus Berth's
//! own predicates; names v1.22 would reject are accepted with a warning. Berth is stricter than
//! kube-scheduler in a few ways, each reported with the file, the JSON path and a fix:
//! unknown fields and repeated keys are errors at any depth, a JSON array where an object is
//! expected is an error, a built-in name may not carry an argument of another kind, an
//! extender needs a `urlPrefix`, a repeated predicate or priority name (or alias) is an
//! error where kube-scheduler silently keeps one, and a YAML file holds one document where
//! kube-scheduler silently ignores all but the first.

mod build;
mod describe;
mod error;
pub mod features;
pub mod file;
mod names;
mod raw;
mod syntax;
mod types;
pub mod upstream;
mod yaml;

use std::path::Path;

use serde_json::error::Category;

pub use build::{
    DEFAULT_WASM_MEMORY_LIMIT_MIB, DEFAULT_WASM_TIMEOUT_MILLIS, MAX_WASM_MEMORY_LIMIT_MIB,
    MAX_WASM_TIMEOUT_MILLIS,
};
pub use error::PolicyError;
pub use features::{FeatureGateError, FeatureGates};
pub use types::{
    CircuitBreakerArgs, Defaulted, EffectivePolicy, Extender, ExtenderTlsConfig, FailurePolicy,
    GuardedEffect, ManagedResource, PodIpSource, PredicateConfig, PredicateKind, PriorityConfig,
    PriorityKind, ResourceWeight, ShapePoint, TaintGuard, WasmPlugin, WhenCapacityMissing,
    WorkloadQuarantineArgs,
};

/// Reads and parses a Policy file; errors name the file as given.
pub fn load(path: &Path) -> Result<EffectivePolicy, PolicyError> {
    let file = path.display().to_string();
    let text = file::read_regular_text(path, file::MAX_POLICY_BYTES).map_err(|source| {
        PolicyError::Read {
            file: file.clone(),
            source,
        }
    })?;
    parse(&text, &file)
}

/// Parses a Policy, JSON or YAML as kube-scheduler v1.22 tells them apart: text whose first
/// non-space character is `{` is JSON (apimachinery's `IsJSONBuffer`), anything else YAML,
/// converted to JSON as v1.22 converts it (see `yaml.rs`). `source` names the file in error
/// messages.
pub fn parse(text: &str, source: &str) -> Result<EffectivePolicy, PolicyError> {
    if text.trim().is_empty() {
        return Err(PolicyError::Syntax {
            file: source.to_owned(),
            line: 1,
            column: 1,
            message: "the file is empty; a Policy is a JSON object such as \
                      {\"kind\": \"Policy\", \"apiVersion\": \"v1\"}, or the same in YAML"
                .to_owned(),
        });
    }
    if let Some((line, column)) = file::too_deep(text, file::MAX_NESTING) {
        return Err(PolicyError::Syntax {
            file: source.to_owned(),
            line,
            column,
            message: format!(
                "nested deeper than {} levels of [ and {{ (counted inside strings too); a Policy \
                 nests about 5 levels deep",
                file::MAX_NESTING
            ),
        });
    }
    if text.trim_start().starts_with('{') {
        return build::build(decode_json(text, source)?, source);
    }
    let converted = yaml::to_json(text).map_err(|error| match error {
        yaml::YamlError::Syntax { mark, message } => PolicyError::YamlSyntax {
            file: source.to_owned(),
            line: mark.0,
            column: mark.1,
            message,
        },
        yaml::YamlError::Value {
            mark,
            path,
            message,
        } => PolicyError::Schema {
            file: source.to_owned(),
            path,
            message,
            line: mark.0,
            column: mark.1,
        },
    })?;
    // The JSON is well formed and has one token per line, so an error's line tells which
    // YAML value it is about.
    let raw = decode_json(&converted.json, source).map_err(|error| match error {
        PolicyError::Schema {
            file,
            path,
            message,
            line,
            ..
        } => {
            let (line, column) = converted.mark(line);
            PolicyError::Schema {
                file,
                path,
                message,
                line,
                column,
            }
        }
        PolicyError::Syntax {
            file,
            line,
            message,
            ..
        } => {
            let (line, column) = converted.mark(line);
            PolicyError::YamlSyntax {
                file,
                line,
                column,
                message,
            }
        }
        other => other,
    })?;
    build::build(raw, source)
}

fn decode_json(text: &str, source: &str) -> Result<raw::RawPolicy, PolicyError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let raw: raw::RawPolicy =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            // Another kind of file (a KubeSchedulerConfiguration's `profiles`) fails on its
            // first field the Policy lacks; its kind says more.
            if let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text)
                && let Some(serde_json::Value::String(kind)) = object.get("kind")
                && let Some(message) = build::kind_error(kind)
            {
                return PolicyError::Invalid {
                    file: source.to_owned(),
                    path: "kind".to_owned(),
                    message,
                };
            }
            let path = error.path().to_string();
            json_error(error.into_inner(), path, source)
        })?;
    deserializer
        .end()
        .map_err(|error| json_error(error, String::new(), source))?;
    Ok(raw)
}

/// The Policy name of a built-in predicate kind, e.g. `HostName` (its arguments aside);
/// `None` for WASM plugins.
pub fn predicate_name(kind: &PredicateKind) -> Option<&'static str> {
    names::predicate_name(kind)
}

/// The Policy name of a built-in priority kind, e.g. `LeastRequestedPriority`; `None` for
/// kinds only an argument selects (serviceAntiAffinity, labelPreference) and WASM plugins.
pub fn priority_name(kind: &PriorityKind) -> Option<&'static str> {
    names::priority_name(kind)
}

/// The configuration of kube-scheduler's default provider (v1.22), as a Policy without lists.
pub fn default_policy() -> EffectivePolicy {
    build::default_policy()
}

fn json_error(error: serde_json::Error, path: String, file: &str) -> PolicyError {
    let (line, raw_column) = (error.line(), error.column());
    let text = error.to_string();
    // serde_json appends the position, which the error carries separately.
    let message = text
        .strip_suffix(&format!(" at line {line} column {raw_column}"))
        .unwrap_or(&text)
        .to_owned();
    // serde_json says column 0 when nothing on the line was consumed yet; people count from 1.
    let column = raw_column.max(1);
    let file = file.to_owned();
    match error.classify() {
        Category::Data => {
            // serde_path_to_error calls the top level ".".
            let path = if path == "." { String::new() } else { path };
            PolicyError::Schema {
                file,
                path,
                message,
                line,
                column,
            }
        }
        Category::Io | Category::Syntax | Category::Eof => PolicyError::Syntax {
            file,
            line,
            column,
            message,
        },
    }
}
