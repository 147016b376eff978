//! The one error type of the runtime, with a kind enum (minijinja style).

use std::fmt;

/// What went wrong.
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

/// An error with a kind, a message and, where known, a byte offset into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    offset: Option<usize>,
}

impl Error {
    /// Creates an error of `kind` with a human-readable detail.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Error {
        Error { kind, detail: detail.into(), offset: None }
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

impl std::error::Error for Error {}
