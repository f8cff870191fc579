//! Errors a user can act on: each names the file, where in it, and what is wrong.

/// Why a Policy file was rejected. `Display` gives the full message, ready to print.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{file}: cannot read the policy file: {source}")]
    Read {
        /// The file name as given.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not well-formed JSON.
    #[error("{file}: line {line}, column {column}: malformed JSON: {message}")]
    Syntax {
        /// The file name as given.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser expected.
        message: String,
    },
    /// The text is not well-formed YAML, or not one YAML document.
    #[error("{file}: line {line}, column {column}: malformed YAML: {message}")]
    YamlSyntax {
        /// The file name as given.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the YAML parser expected.
        message: String,
    },
    /// A value has the wrong type, or a field is unknown, duplicated or missing.
    #[error(
        "{file}: {}: {message} (line {line}, column {column})",
        show_path(path)
    )]
    Schema {
        /// The file name as given.
        file: String,
        /// JSON path of the offending value, e.g. `priorities[1].weight`; empty for the top level.
        path: String,
        /// What is wrong and what would be accepted.
        message: String,
        /// 1-based line where the problem was detected.
        line: usize,
        /// 1-based column where the problem was detected.
        column: usize,
    },
    /// The file is well-formed but breaks a rule.
    #[error("{file}: {}: {message}", show_path(path))]
    Invalid {
        /// The file name as given.
        file: String,
        /// JSON path of the offending value, e.g. `priorities[1].weight`; empty for the top level.
        path: String,
        /// What is wrong and what would be accepted.
        message: String,
    },
}

/// An empty path would leave a dangling `: :` in the message.
fn show_path(path: &str) -> &str {
    if path.is_empty() { "top level" } else { path }
}
