//! `render/` scenarios: every `scenarios/NAME.json` × every template with an expected output
//! (`expected/TEMPLATE/NAME.txt`, byte-identical) or error (`.err`, must raise).
//!
//! The corpus README lists jinja2 behaviours that are quirks, not goals; they are skipped
//! ([`judge_render`]), here and only here.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use autoparser::Error;
use autoparser::verify::window;

use super::templates::TemplateStore;
use super::{CaseResult, Status};

/// Templates whose jinja2 output differs from any sane engine: a `safe` string concatenated
/// with text is HTML-escaped by jinja2 (corpus README: "not goals").
pub const JINJA2_QUIRK_TEMPLATES: &[&str] = &["meetkai-functionary-medium-v3.1"];

/// jinja2 errors that are not goals (corpus README): iterating `None`, serializing a
/// generator; and `from_json`, which HF lacks and the project provides.
pub const JINJA2_ERROR_QUIRKS: &[&str] =
    &["'NoneType' object is not iterable", "Object of type generator is not JSON serializable", "No filter named 'from_json'"];

/// What jinja2 did with a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderExpectation {
    /// It rendered this text (`.txt`).
    Text(String),
    /// It raised with this message (`.err`); `TemplateError: ...` is the template's own
    /// `raise_exception`, anything else a Python-level error.
    Error(String),
}

/// The judgement of one render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderVerdict {
    /// As expected.
    Pass,
    /// Not as expected, and why.
    Fail(String),
    /// A known jinja2 quirk (corpus README): neither pass nor fail.
    Skip(String),
}

/// Judges one render of `template` (its name decides the quirk exclusions).
///
/// * text: byte-identical, except that an HTML-escaped expected output of a quirk template that
///   we render differently is skipped;
/// * `raise_exception` in jinja2: we must raise too ([`TemplateError::is_raised`]);
/// * a Python-level jinja2 error: we must fail too, except for [`JINJA2_ERROR_QUIRKS`], which
///   we render (skipped).
pub fn judge_render(template: &str, got: &Result<String, Error>, expected: &RenderExpectation) -> RenderVerdict {
    match expected {
        RenderExpectation::Text(want) => {
            let html_escaped = ["&#34;", "&#39;", "&lt;", "&gt;", "&amp;", "&quot;"].iter().any(|e| want.contains(e));
            match got {
                Ok(g) if g == want => RenderVerdict::Pass,
                _ if JINJA2_QUIRK_TEMPLATES.contains(&template) && html_escaped => {
                    RenderVerdict::Skip("jinja2 HTML-escapes a safe string concatenated with text".into())
                }
                Ok(g) => RenderVerdict::Fail(format!("output differs {}", first_diff(g, want))),
                Err(e) => RenderVerdict::Fail(format!("render error: {e}")),
            }
        }
        RenderExpectation::Error(msg) if msg.starts_with("TemplateError:") => match got {
            Err(e) if e.is_raised() => RenderVerdict::Pass,
            Err(e) => RenderVerdict::Fail(format!("expected raise ({}), got error {e}", msg.trim())),
            Ok(_) => RenderVerdict::Fail(format!("expected raise ({}), rendered", msg.trim())),
        },
        RenderExpectation::Error(msg) => match got {
            Err(_) => RenderVerdict::Pass,
            Ok(_) => match JINJA2_ERROR_QUIRKS.iter().find(|q| msg.contains(*q)) {
                Some(q) => RenderVerdict::Skip(format!("jinja2 quirk: {q}")),
                None => RenderVerdict::Fail(format!("rendered where jinja2 raised {}", msg.trim())),
            },
        },
    }
}

/// Where two texts first differ, with some context of each (char-boundary safe).
pub fn first_diff(got: &str, want: &str) -> String {
    let i = got.bytes().zip(want.bytes()).take_while(|(x, y)| x == y).count();
    let snip = |s: &str| {
        let (lo, hi) = window(s, i, 60);
        format!("{:?}", &s[lo..hi])
    };
    format!("at byte {i}: got {} expected {}", snip(got), snip(want))
}

fn sorted_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

fn stem(p: &Path) -> String {
    p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Runs every render scenario of `render_dir` (`scenarios/`, `expected/`) whose id
/// (`render:TEMPLATE/SCENARIO`) contains `filter`. A missing directory is no cases; an
/// unreadable scenario or expectation is a failed case.
pub fn run_render(render_dir: &Path, store: &mut TemplateStore, filter: Option<&str>) -> Vec<CaseResult> {
    let mut scenarios: Vec<(String, Result<serde_json::Value, String>)> = Vec::new();
    for p in sorted_entries(&render_dir.join("scenarios")) {
        if p.extension().is_some_and(|e| e == "json") {
            let ctx = fs::read_to_string(&p).map_err(|e| e.to_string()).and_then(|t| serde_json::from_str(&t).map_err(|e| format!("invalid JSON: {e}")));
            scenarios.push((stem(&p), ctx));
        }
    }
    let mut out = Vec::new();
    for tdir in sorted_entries(&render_dir.join("expected")) {
        if !tdir.is_dir() {
            continue;
        }
        let name = tdir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut loaded = None;
        for (sc, ctx) in &scenarios {
            let id = format!("render:{name}/{sc}");
            if filter.is_some_and(|f| !id.contains(f)) {
                continue;
            }
            let base = tdir.join(sc);
            let (txt, err) = (base.with_extension("txt"), base.with_extension("err"));
            let expected = if txt.is_file() {
                fs::read_to_string(&txt).map(RenderExpectation::Text)
            } else if err.is_file() {
                fs::read_to_string(&err).map(RenderExpectation::Error)
            } else {
                continue;
            };
            let t0 = Instant::now();
            let tmpl = loaded.get_or_insert_with(|| store.named(&name)).clone();
            let (status, reason) = match (expected, ctx, &tmpl.template) {
                (Err(e), _, _) => (Status::Fail, format!("cannot read expectation: {e}")),
                (_, Err(e), _) => (Status::Fail, format!("bad scenario {sc}: {e}")),
                (_, _, Err(e)) => (Status::Fail, e.clone()),
                (Ok(exp), Ok(ctx), Ok(t)) => {
                    // A panic in one render is that scenario's failure, not the run's.
                    let verdict = catch_unwind(AssertUnwindSafe(|| judge_render(&name, &t.render(ctx), &exp)));
                    match verdict {
                        Ok(RenderVerdict::Pass) => (Status::Pass, String::new()),
                        Ok(RenderVerdict::Fail(r)) => (Status::Fail, r),
                        Ok(RenderVerdict::Skip(r)) => (Status::Skip, r),
                        Err(p) => (Status::Fail, format!("panicked: {}", super::panic_message(&*p))),
                    }
                }
            };
            out.push(CaseResult {
                id,
                kind: "render".into(),
                template: name.clone(),
                status,
                reasons: if reason.is_empty() { Vec::new() } else { vec![reason] },
                elapsed: t0.elapsed(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_are_skipped_only_for_their_templates() {
        let want = RenderExpectation::Text("a &lt; b".into());
        let got: Result<String, Error> = Ok("a < b".into());
        assert!(matches!(judge_render("meetkai-functionary-medium-v3.1", &got, &want), RenderVerdict::Skip(_)));
        assert!(matches!(judge_render("other", &got, &want), RenderVerdict::Fail(_)));
        let err = RenderExpectation::Error("TypeError: 'NoneType' object is not iterable".into());
        assert!(matches!(judge_render("other", &got, &err), RenderVerdict::Skip(_)));
        let raised = RenderExpectation::Error("TemplateError: no".into());
        assert!(matches!(judge_render("other", &got, &raised), RenderVerdict::Fail(_)));
    }

    #[test]
    fn first_diff_respects_char_boundaries() {
        let d = first_diff(&"é".repeat(100), &format!("{}x", "é".repeat(50)));
        assert!(d.starts_with("at byte 100"), "{d}");
    }
}
