//! The `json` target: peg-runtime's resumable JSON / Python-literal scanner on complete input,
//! on partial input, resumed over growing prefixes and on every prefix; the Python-to-JSON
//! conversion; the closing of cut JSON.
//!
//! Input: one byte choosing the dialect and what to scan (`Value`, `Object`, ...), one byte of
//! chunk size for the resumed scan, then the text.

use peg_runtime::chat::close_partial_json;
use peg_runtime::json::{is_valid, Dialect, ScanResult, Scanner, Target};
use peg_runtime::{python, Outcome};
use serde::de::IgnoredAny;

const TARGETS: [Target; 8] = [Target::Value, Target::Object, Target::Array, Target::String, Target::Number, Target::Bool, Target::Null, Target::StringContent];

/// Beyond this nesting serde_json (the oracle) refuses values the scanner accepts.
const ORACLE_DEPTH: usize = 100;

fn scan(dialect: Dialect, target: Target, input: &[u8], partial: bool) -> ScanResult {
    Scanner::new(dialect, target, 0).run(input, partial)
}

/// Checks the scanner on one input; panics on a violated invariant.
pub fn check_json(data: &[u8]) {
    let [mode, chunk, input @ ..] = data else { return };
    let dialect = if mode & 0x80 == 0 { Dialect::Json } else { Dialect::Python };
    let target = TARGETS[usize::from(mode & 0x7f) % TARGETS.len()];
    let chunk = usize::from(*chunk % 16) + 1;
    let show = String::from_utf8_lossy(input);
    let what = format!("{dialect:?} {target:?} of {show:?}");

    let complete = scan(dialect, target, input, false);
    assert_ne!(complete.outcome, Outcome::NeedMoreInput, "complete input needs no more: {what}");
    assert!(complete.end <= input.len(), "end past the input: {complete:?}, {what}");
    let partial = scan(dialect, target, input, true);
    assert!(partial.end <= input.len(), "end past the input: {partial:?}, {what}");
    // A result that did not depend on where the input ends is the same either way.
    if !complete.touched_end || !partial.touched_end {
        assert_eq!((complete.outcome, complete.end), (partial.outcome, partial.end), "complete vs partial scan of {what}");
    }

    check_resumed(dialect, target, input, chunk, complete, &what);
    check_prefixes(dialect, target, input, complete, &what);
    if dialect == Dialect::Json && target == Target::Value {
        if let Ok(text) = std::str::from_utf8(input) {
            check_oracle(text, &what);
        }
    }
    if dialect == Dialect::Python {
        if let Ok(json) = python::to_json(&show) {
            assert!(is_valid(json.as_bytes()), "python::to_json gave invalid JSON {json:?} for {what}");
            assert!(serde_json::from_str::<IgnoredAny>(&json).is_ok(), "serde_json rejects python::to_json's {json:?} for {what}");
        }
    }
}

/// One scanner run over growing prefixes (partial), then over the whole (complete), ends as a
/// fresh complete scan does; the shown end of a partial scan never moves back.
fn check_resumed(dialect: Dialect, target: Target, input: &[u8], chunk: usize, complete: ScanResult, what: &str) {
    let mut sc = Scanner::new(dialect, target, 0);
    let mut shown = 0;
    let mut len = 0;
    loop {
        len = (len + chunk).min(input.len());
        let r = sc.run(&input[..len], true);
        if !r.touched_end {
            assert_eq!((r.outcome, r.end), (complete.outcome, complete.end), "resumed (final at {len}) vs complete scan of {what}");
            return;
        }
        if r.outcome == Outcome::NeedMoreInput {
            assert!(r.end >= shown, "shown end moved back from {shown} to {} at {len}: {what}", r.end);
            shown = r.end;
        }
        if len == input.len() {
            break;
        }
    }
    let r = sc.run(input, false);
    assert_eq!((r.outcome, r.end), (complete.outcome, complete.end), "resumed vs complete scan of {what}");
}

/// Every prefix of a scanned value is viable; once a prefix fails, so does the whole.
fn check_prefixes(dialect: Dialect, target: Target, input: &[u8], complete: ScanResult, what: &str) {
    let limit = if complete.outcome == Outcome::Success { complete.end } else { input.len() };
    for cut in (0..limit).step_by(stride(limit)) {
        let r = scan(dialect, target, &input[..cut], true);
        if complete.outcome == Outcome::Success {
            assert_ne!(r.outcome, Outcome::Fail, "the prefix {:?} of a value fails: {what}", String::from_utf8_lossy(&input[..cut]));
        } else if r.outcome == Outcome::Fail && !r.touched_end {
            assert_eq!(complete.outcome, Outcome::Fail, "the prefix {:?} fails, the whole does not: {what}", String::from_utf8_lossy(&input[..cut]));
        }
    }
}

/// Checks of every prefix are quadratic: long inputs get about 256 of them.
fn stride(len: usize) -> usize {
    len / 256 + 1
}

/// Agrees with serde_json on what is one JSON text; serde_json's renderings of a value scan;
/// every cut of a JSON text closes into JSON.
fn check_oracle(text: &str, what: &str) {
    let depth = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if depth >= ORACLE_DEPTH {
        return;
    }
    let ours = is_valid(text.as_bytes());
    // Our one leniency: a raw control character other than a line break inside a string. A tab
    // read as a space and any other as a letter is what serde_json must agree on: the same
    // inside strings, and outside them a tab is whitespace and the others are errors for both.
    let strict: String = text
        .chars()
        .map(|c| {
            if c == '\t' {
                ' '
            } else if c < ' ' && c != '\n' && c != '\r' {
                'x'
            } else {
                c
            }
        })
        .collect();
    let theirs = serde_json::from_str::<IgnoredAny>(&strict).is_ok();
    assert_eq!(ours, theirs, "is_valid (ours) vs serde_json: {what}");
    if !ours {
        return;
    }
    // A value serde_json cannot hold (a number out of range, a lone surrogate) is not rewritten.
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        for rendered in [serde_json::to_string(&value).unwrap(), serde_json::to_string_pretty(&value).unwrap()] {
            assert!(is_valid(rendered.as_bytes()), "serde_json's rendering {rendered:?} does not scan ({what})");
        }
    }
    for cut in crate::cuts(text).step_by(stride(text.len())) {
        if let Some(closed) = close_partial_json(&text[..cut]) {
            assert!(serde_json::from_str::<IgnoredAny>(&closed).is_ok(), "close_partial_json({:?}) = {closed:?} is not JSON ({what})", &text[..cut]);
        }
    }
}
