//! Errors of template loading and rendering.

use std::fmt;
use std::path::PathBuf;

/// Which resource bound an untrusted template ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The instruction budget (minijinja fuel): infinite or very long loops.
    Fuel,
    /// Macro / include / data nesting went too deep.
    Recursion,
    /// The rendered text grew past the output cap.
    OutputSize,
    /// A single value (range, repeated string or list) was too large.
    ValueSize,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Fuel => "instruction budget exhausted",
            Limit::Recursion => "recursion limit exceeded",
            Limit::OutputSize => "output size limit exceeded",
            Limit::ValueSize => "value too large",
        })
    }
}

/// Error loading, compiling or rendering a chat template.
///
/// Every variant that comes from the template itself carries the template line (1-based)
/// when the engine knows it.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The template source does not compile.
    #[error("template syntax error{}: {message}", at_line(*line))]
    Syntax {
        /// 1-based template line.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The template called `raise_exception(message)`: it refuses this input.
    #[error("template raised an exception{}: {message}", at_line(*line))]
    Raised {
        /// 1-based template line of the call.
        line: Option<usize>,
        /// The template's message.
        message: String,
    },
    /// Rendering failed (type error, undefined value, bad filter argument...).
    #[error("template render error{}: {message}", at_line(*line))]
    Render {
        /// 1-based template line.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
    /// Rendering hit a resource bound (untrusted template protection).
    #[error("template aborted{}: {limit}", at_line(*line))]
    Limit {
        /// 1-based template line where rendering stopped.
        line: Option<usize>,
        /// Which bound.
        limit: Limit,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A source (tokenizer_config.json, GGUF, request JSON) is malformed or holds no template.
    #[error("invalid template source: {0}")]
    InvalidSource(String),
    /// A GGUF file is malformed.
    #[error("invalid GGUF file: {0}")]
    Gguf(String),
    /// A named template variant does not exist.
    #[error("no chat template named {name:?} (available: {available:?})")]
    NotFound {
        /// The requested name.
        name: String,
        /// The names the source has.
        available: Vec<String>,
    },
}

fn at_line(line: Option<usize>) -> String {
    match line {
        Some(l) => format!(" at line {l}"),
        None => String::new(),
    }
}

impl TemplateError {
    /// The template line the error points at, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            TemplateError::Syntax { line, .. }
            | TemplateError::Raised { line, .. }
            | TemplateError::Render { line, .. }
            | TemplateError::Limit { line, .. } => *line,
            _ => None,
        }
    }

    /// True when the template itself refused the input via `raise_exception`.
    pub fn is_raised(&self) -> bool {
        matches!(self, TemplateError::Raised { .. })
    }

    /// Classify a minijinja error.
    pub(crate) fn from_minijinja(err: minijinja::Error, output_overflow: bool) -> TemplateError {
        use minijinja::ErrorKind as K;
        let line = err.line();
        if output_overflow {
            return TemplateError::Limit { line, limit: Limit::OutputSize };
        }
        // raise_exception attaches a `Raised` source; find it anywhere in the chain.
        let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&err);
        while let Some(e) = src {
            if let Some(r) = e.downcast_ref::<crate::template::env::Raised>() {
                return TemplateError::Raised { line, message: r.0.clone() };
            }
            src = e.source();
        }
        match err.kind() {
            K::SyntaxError | K::BadEscape => TemplateError::Syntax { line, message: detail(&err) },
            K::OutOfFuel => TemplateError::Limit { line, limit: Limit::Fuel },
            K::InvalidOperation => {
                let d = detail(&err);
                if d.contains("recursion limit") {
                    TemplateError::Limit { line, limit: Limit::Recursion }
                } else if d.contains("too large") || d.contains("too many elements") {
                    TemplateError::Limit { line, limit: Limit::ValueSize }
                } else {
                    TemplateError::Render { line, message: d }
                }
            }
            _ => TemplateError::Render { line, message: detail(&err) },
        }
    }
}

fn detail(err: &minijinja::Error) -> String {
    match err.detail() {
        Some(d) => format!("{}: {d}", err.kind()),
        None => err.kind().to_string(),
    }
}
