//! Template engine errors as the crate's [`Error`].

use crate::error::{Error, ErrorKind, Limit};

/// Classify a minijinja error; the engine's error stays the source.
pub(crate) fn from_minijinja(err: minijinja::Error, output_overflow: bool) -> Error {
    use minijinja::ErrorKind as K;
    let line = err.line();
    if output_overflow {
        return Error::limit_exceeded(Limit::OutputSize, line);
    }
    // raise_exception attaches a `Raised` source; find it anywhere in the chain.
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = src {
        if let Some(r) = e.downcast_ref::<crate::template::env::Raised>() {
            return Error::new(ErrorKind::TemplateRaised, r.0.clone()).with_line(line);
        }
        src = e.source();
    }
    match err.kind() {
        K::SyntaxError | K::BadEscape => Error::new(ErrorKind::TemplateSyntax, detail(&err)).with_line(line).with_source(err),
        K::OutOfFuel => Error::limit_exceeded(Limit::Fuel, line),
        K::InvalidOperation => {
            let d = detail(&err);
            if d.contains("recursion limit") {
                Error::limit_exceeded(Limit::Recursion, line)
            } else if d.contains("too large") || d.contains("too many elements") {
                Error::limit_exceeded(Limit::ValueSize, line)
            } else {
                Error::new(ErrorKind::TemplateRender, d).with_line(line).with_source(err)
            }
        }
        _ => Error::new(ErrorKind::TemplateRender, detail(&err)).with_line(line).with_source(err),
    }
}

fn detail(err: &minijinja::Error) -> String {
    match err.detail() {
        Some(d) => format!("{}: {d}", err.kind()),
        None => err.kind().to_string(),
    }
}
