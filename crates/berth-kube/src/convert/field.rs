//! Field paths inside an object, built while conversion descends and rendered only when
//! something is wrong, so converting a valid object allocates no path strings.

use std::fmt;

/// A field path such as `spec.containers[0].resources.limits.cpu`.
#[derive(Clone, Copy)]
pub(crate) struct Field<'a> {
    parent: Option<&'a Field<'a>>,
    segment: Segment<'a>,
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    /// A struct field, written `.name`.
    Name(&'a str),
    /// A list index, written `[i]`.
    Index(usize),
    /// A map key, written `.key` or `["key"]` when a dot would make it ambiguous.
    Key(&'a str),
}

/// A field path and what is wrong there; the caller adds the object.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) field: String,
    pub(crate) message: String,
}

impl<'a> Field<'a> {
    /// A top-level field of an object.
    pub(crate) const fn root(name: &'a str) -> Self {
        Field {
            parent: None,
            segment: Segment::Name(name),
        }
    }

    /// A field of this one.
    pub(crate) fn name<'b>(&'b self, name: &'b str) -> Field<'b> {
        self.child(Segment::Name(name))
    }

    /// An item of this list.
    pub(crate) fn index(&self, index: usize) -> Field<'_> {
        self.child(Segment::Index(index))
    }

    /// An entry of this map.
    pub(crate) fn key<'b>(&'b self, key: &'b str) -> Field<'b> {
        self.child(Segment::Key(key))
    }

    fn child<'b>(&'b self, segment: Segment<'b>) -> Field<'b> {
        Field {
            parent: Some(self),
            segment,
        }
    }

    /// The problem `message` at this path.
    pub(crate) fn problem(&self, message: impl Into<String>) -> Problem {
        Problem {
            field: self.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.segment {
            Segment::Name(name) if self.parent.is_none() => f.write_str(name),
            Segment::Name(name) => write!(f, ".{name}"),
            Segment::Index(index) => write!(f, "[{index}]"),
            Segment::Key(key) if is_plain_key(key) => write!(f, ".{key}"),
            Segment::Key(key) => write!(f, "[{key:?}]"),
        }
    }
}

/// Whether a map key reads unambiguously after a dot (no dots, slashes or spaces).
pub(crate) fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
