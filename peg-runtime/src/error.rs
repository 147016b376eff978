//! The one error type of the runtime, with a kind enum (minijinja style).

use std::fmt;
use std::sync::Arc;

/// What went wrong.
///
/// ```
/// use peg_runtime::{Builder, ErrorKind};
/// let b = Builder::new();
/// let root = b.rule("x", "a") + b.rule("x", "b");
/// assert_eq!(b.finish(root.id()).unwrap_err().kind(), ErrorKind::DuplicateRule);
/// let b = Builder::new();
/// let root = b.chars("[z-a]", 1, None);
/// assert_eq!(b.finish(root.id()).unwrap_err().kind(), ErrorKind::InvalidCharClass);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A character class could not be parsed.
    InvalidCharClass,
    /// A `ref` names a rule that was never defined.
    UndefinedRule,
    /// Two rules share a name.
    DuplicateRule,
    /// The arena has no root parser.
    MissingRoot,
    /// An `until` delimiter is empty, or a repetition's bounds are inverted.
    InvalidParser,
    /// Serialized arena data is malformed.
    InvalidArena,
    /// The input nests deeper than the configured limit.
    TooDeep,
    /// The input did not match (strict callers).
    ParseFailed,
    /// A grammar (GBNF) is malformed or cannot be generated.
    Grammar,
    /// A JSON schema is malformed or unsupported.
    Schema,
}

/// An error with a kind, a message and, where known, a byte offset into the input and the
/// underlying error it wraps ([`std::error::Error::source`]).
///
/// ```
/// use peg_runtime::{Arena, ErrorKind};
/// let err = Arena::from_json("{not json").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidArena);
/// let cause = std::error::Error::source(&err).unwrap();
/// assert!(cause.downcast_ref::<serde_json::Error>().is_some());
/// ```
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    offset: Option<usize>,
    // An `Arc` keeps the error `Clone` whatever the cause is.
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// Equal kind, detail and offset; the source is not compared (causes are rarely comparable).
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.kind == other.kind && self.detail == other.detail && self.offset == other.offset
    }
}

impl Eq for Error {}

impl Error {
    /// Creates an error of `kind` with a human-readable detail.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Error {
        Error { kind, detail: detail.into(), offset: None, source: None }
    }

    /// Attaches the underlying error this one wraps, returned by [`std::error::Error::source`].
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Arc::new(source));
        self
    }

    /// Attaches the byte offset the error refers to.
    pub fn with_offset(mut self, offset: usize) -> Error {
        self.offset = Some(offset);
        self
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The detail message.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The byte offset into the input, if the error refers to one.
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.detail)?;
        if let Some(off) = self.offset {
            write!(f, " (at byte {off})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_is_kept_and_not_compared() {
        let io = std::io::Error::other("disk");
        let e = Error::new(ErrorKind::InvalidArena, "read").with_source(io);
        assert_eq!(std::error::Error::source(&e).map(|s| s.to_string()).as_deref(), Some("disk"));
        assert_eq!(e.clone(), Error::new(ErrorKind::InvalidArena, "read"));
        assert!(std::error::Error::source(&e.clone()).is_some());
    }
}
