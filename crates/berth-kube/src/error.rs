//! Errors from reading cluster files, with enough context to find the culprit.

use std::fmt;
use std::path::PathBuf;

use crate::quantity::QuantityError;

/// Why a cluster file could not be turned into objects.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterFileError {
    /// The file could not be read.
    #[error("cannot read cluster file {}: {}", path.display(), io_message(error))]
    Read {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The text is not well-formed YAML or JSON.
    #[error("{file}: invalid {format}: {}", with_position(message, *line, *column))]
    Syntax {
        /// The file name given to the parser.
        file: String,
        /// The syntax the text was read as.
        format: Format,
        /// 1-based line of the error, when the parser knows it.
        line: Option<usize>,
        /// 1-based column of the error, when the parser knows it.
        column: Option<usize>,
        /// The parser's message, which usually includes the position.
        message: String,
    },
    /// A document or item is not a usable Kubernetes object: not a mapping,
    /// no kind or apiVersion, an unsupported apiVersion, or a List whose items are not a list.
    #[error("{site}: {message}")]
    Malformed {
        /// Where the object is.
        site: Box<Site>,
        /// What is wrong with it.
        message: String,
    },
    /// An object does not match its Kubernetes schema.
    #[error("{site}: {}{message}", field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Schema {
        /// Where the object is.
        site: Box<Site>,
        /// The field path within the object, when known (e.g. `spec.containers[0].name`).
        field: Option<String>,
        /// The decoder's message.
        message: String,
    },
    /// A resource quantity the scheduler reads is not valid.
    #[error("{site}: {field}: {error}")]
    Quantity {
        /// Where the object is.
        site: Box<Site>,
        /// The field path within the object (e.g. `status.allocatable.cpu`).
        field: String,
        /// Why the quantity was rejected.
        error: QuantityError,
    },
    /// An object lacks something the scheduler relies on.
    #[error("{site}: {field}: {message}")]
    Invalid {
        /// Where the object is.
        site: Box<Site>,
        /// The field path within the object (e.g. `metadata.name`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Two objects share kind, namespace and name.
    #[error("{file}: duplicate {object}: defined at {first} and again at {second}")]
    Duplicate {
        /// The file name given to the parser.
        file: String,
        /// The object defined twice.
        object: Box<ObjectRef>,
        /// Where it is first defined.
        first: Location,
        /// Where it is defined again.
        second: Location,
    },
}

/// Rust appends " (os error N)" to OS errors; the OS text alone reads better.
fn io_message(error: &std::io::Error) -> String {
    let message = error.to_string();
    match error.raw_os_error() {
        Some(code) => message
            .strip_suffix(&format!(" (os error {code})"))
            .map_or_else(|| message.clone(), str::to_owned),
        None => message,
    }
}

/// The message with the position appended when the parser left it out (it does
/// for errors reported at the very start of the text, such as a duplicate top-level key).
fn with_position(message: &str, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) if !message.contains(" line ") => {
            format!("{message} at line {line} column {column}")
        }
        _ => message.to_owned(),
    }
}

/// The syntax a cluster file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (a single value or a stream of values).
    Json,
    /// YAML (one or more `---` separated documents).
    Yaml,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Json => "JSON",
            Format::Yaml => "YAML",
        })
    }
}

/// Where an object sits in a cluster file; indices are 0-based, as in `yq`'s
/// `documentIndex` and `.items[N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// The document index, only when the file holds more than one document.
    pub document: Option<usize>,
    /// The index in the List's `items`, only when the object is a List item.
    pub item: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.document, self.item) {
            (Some(document), Some(item)) => write!(f, "document {document}, item {item}"),
            (Some(document), None) => write!(f, "document {document}"),
            (None, Some(item)) => write!(f, "item {item}"),
            (None, None) => f.write_str("the only document"),
        }
    }
}

/// What an object is, as far as its raw fields tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: String,
    /// `metadata.namespace`, when set.
    pub namespace: Option<String>,
    /// `metadata.name`, when set.
    pub name: Option<String>,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        match (&self.namespace, &self.name) {
            (Some(namespace), Some(name)) => write!(f, " {namespace}/{name}"),
            (None, Some(name)) => write!(f, " {name}"),
            _ => Ok(()),
        }
    }
}

/// A file, a location in it, and the object there when known: the prefix of error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The file name given to the parser.
    pub file: String,
    /// Where in the file.
    pub location: Location,
    /// The object there, when its kind is known.
    pub object: Option<ObjectRef>,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        let whole_file = self.location == Location::default();
        match (&self.object, whole_file) {
            (Some(object), false) => write!(f, ": {} ({object})", self.location),
            (Some(object), true) => write!(f, ": {object}"),
            (None, false) => write!(f, ": {}", self.location),
            (None, true) => Ok(()),
        }
    }
}
