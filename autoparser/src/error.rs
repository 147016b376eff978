//! The one error type of the crate: a kind to match on, a message, the template line when the
//! template is at fault, and the underlying cause as the error's source.

use std::fmt;
use std::sync::Arc;

/// What went wrong.
///
/// ```
/// use autoparser::{template::ChatTemplate, ErrorKind, Model, Request};
/// assert_eq!(ChatTemplate::from_source("{% if %}", "", "").unwrap_err().kind(), ErrorKind::TemplateSyntax);
/// assert_eq!(Model::load("no/such/template.jinja").unwrap_err().kind(), ErrorKind::Io);
/// assert_eq!(Request::from_json(&serde_json::json!({"tools": [1]})).unwrap_err().kind(), ErrorKind::InvalidRequest);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The template source does not compile.
    TemplateSyntax,
    /// The template called `raise_exception(message)`: it refuses this input.
    TemplateRaised,
    /// Rendering failed (type error, undefined value, bad filter argument...).
    TemplateRender,
    /// Rendering hit a resource bound ([`Error::limit`] says which).
    LimitExceeded,
    /// A file could not be read.
    Io,
    /// A template source (`tokenizer_config.json`, GGUF) is malformed or holds no template.
    InvalidSource,
    /// A named template variant does not exist.
    NotFound,
    /// A request (messages, tools, schema, continuation) cannot be used with this template.
    InvalidRequest,
    /// The template could not be analyzed (it does not render a basic conversation).
    Analysis,
    /// The parser arena or the grammar of a request could not be built.
    Generation,
    /// A check found a difference: a parsed message, a stream or a grammar disagrees with what
    /// was expected (the detail says where).
    Mismatch,
    /// The model's output could not be parsed (strict parsing, limits); the source is the
    /// parser's error, with its byte offset.
    Parse,
    /// A bug: a panic caught at the crate's boundary (the message is the panic's).
    Internal,
}

/// Which resource bound an untrusted template ran into (the bounds are
/// [`Limits`](crate::template::Limits)).
///
/// ```
/// use autoparser::template::{ChatTemplate, Limits};
/// use autoparser::{ErrorKind, Limit};
/// let endless = "{% for i in range(1000) %}{% for j in range(1000) %}.{% endfor %}{% endfor %}";
/// let t = ChatTemplate::with_limits(endless, "", "", Limits { fuel: 100_000, ..Limits::default() }).unwrap();
/// let err = t.render(&serde_json::json!({})).unwrap_err();
/// assert_eq!((err.kind(), err.limit()), (ErrorKind::LimitExceeded, Some(Limit::Fuel)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// The fuel of one render: too many instructions (long loops) or too much data created.
    Fuel,
    /// Macro / include / data nesting went too deep.
    Recursion,
    /// The rendered text grew past the output cap.
    OutputSize,
    /// A single value (range, repeated string or list) was too large.
    ValueSize,
    /// One tag of the source nests too deep to compile safely (operator chains such as
    /// `a + b + …` or `x|f|f…`, `elif` chains, blocks); refused before compiling.
    ExpressionDepth,
    /// The fuel of all the renders of one analysis or one prepared request.
    TotalFuel,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Fuel => "instruction budget exhausted",
            Limit::Recursion => "recursion limit exceeded",
            Limit::OutputSize => "output size limit exceeded",
            Limit::ValueSize => "value too large",
            Limit::ExpressionDepth => "expression nesting too deep",
            Limit::TotalFuel => "total instruction budget of the analysis or request exhausted",
        })
    }
}

/// An error of template loading, rendering, analysis or generation.
///
/// ```
/// use autoparser::template::ChatTemplate;
/// let t = ChatTemplate::from_source("{% if not messages %}\n{{ raise_exception('no messages') }}{% endif %}", "", "").unwrap();
/// let err = t.render(&serde_json::json!({"messages": []})).unwrap_err();
/// assert!(err.is_raised()); // the template refused the input
/// assert_eq!((err.detail(), err.line()), ("no messages", Some(2)));
/// ```
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    line: Option<usize>,
    limit: Option<Limit>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` with a human-readable detail.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Error {
        Error { kind, detail: detail.into(), line: None, limit: None, source: None }
    }

    /// Attaches the underlying cause, reported by [`source`](std::error::Error::source).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Arc::new(source));
        self
    }

    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = detail.into();
        self
    }

    /// Attaches the 1-based template line the error points at.
    pub fn with_line(mut self, line: Option<usize>) -> Error {
        self.line = line;
        self
    }

    pub(crate) fn limit_exceeded(limit: Limit, line: Option<usize>) -> Error {
        Error { limit: Some(limit), ..Error::new(ErrorKind::LimitExceeded, limit.to_string()).with_line(line) }
    }

    /// A caught panic: its message, not a generic one, so the bug can be reported.
    pub(crate) fn from_panic(what: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
        let message = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_default();
        Error::new(ErrorKind::Internal, format!("internal error during {what}: {message}"))
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The detail message (without the kind's prefix).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The template line (1-based) the error points at, when the engine knows it.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Which resource bound was hit, for [`ErrorKind::LimitExceeded`].
    pub fn limit(&self) -> Option<Limit> {
        self.limit
    }

    /// True when the template itself refused the input via `raise_exception`.
    pub fn is_raised(&self) -> bool {
        self.kind == ErrorKind::TemplateRaised
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            ErrorKind::TemplateSyntax => "template syntax error",
            ErrorKind::TemplateRaised => "template raised an exception",
            ErrorKind::TemplateRender => "template render error",
            ErrorKind::LimitExceeded => "template aborted",
            ErrorKind::Io => "cannot read",
            ErrorKind::InvalidSource => "invalid template source",
            ErrorKind::NotFound => "no such chat template",
            ErrorKind::InvalidRequest => "invalid request",
            ErrorKind::Analysis => "template analysis failed",
            ErrorKind::Generation => "generation failed",
            ErrorKind::Mismatch => "mismatch",
            ErrorKind::Parse => "output does not parse",
            ErrorKind::Internal => "bug",
        };
        f.write_str(prefix)?;
        if let Some(line) = self.line {
            write!(f, " at line {line}")?;
        }
        // The source is not repeated: walk `source()` for the chain.
        write!(f, ": {}", self.detail)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Parsing and streaming report the runtime's error; `?` turns it into this one, so a server
/// handles one error type from template to message.
impl From<peg_runtime::Error> for Error {
    fn from(e: peg_runtime::Error) -> Error {
        Error::new(ErrorKind::Parse, e.to_string()).with_source(e)
    }
}

impl PartialEq for Error {
    /// Kind, detail, line and limit; the source is not compared.
    fn eq(&self, other: &Error) -> bool {
        (self.kind, &self.detail, self.line, self.limit) == (other.kind, &other.detail, other.line, other.limit)
    }
}
