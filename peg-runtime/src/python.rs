//! Python literals: dicts, lists, strings in either quote, numbers, `True`, `False`, `None`.
//!
//! Some models write tool arguments as Python (`{'city': 'Paris', 'days': 3, 'metric': True}`).
//! Scanning shares the resumable scanner of [`crate::json`] (dialect [`Dialect::Python`]);
//! [`to_json`] converts a literal to JSON text for the chat layer.
//!
//! ```
//! use peg_runtime::python::{scan, to_json};
//! use peg_runtime::{Outcome, PythonKind};
//! assert_eq!(to_json("{'a': [1, 2.5, True, None], 'b': \"it's\",}").unwrap(),
//!            r#"{"a":[1,2.5,true,null],"b":"it's"}"#);
//! assert_eq!(scan(b"['x', ", PythonKind::List, true).outcome, Outcome::NeedMoreInput);
//! ```

use crate::error::{Error, ErrorKind};
use crate::json::{Dialect, ScanResult, Scanner, Target};
use crate::kinds::PythonKind;
use crate::parse::Outcome;

/// Scans one Python literal of `kind` at the start of `input`. `partial`: the input may continue.
#[doc(hidden)]
pub fn scan(input: &[u8], kind: PythonKind, partial: bool) -> ScanResult {
    Scanner::new(Dialect::Python, kind.into(), 0).run(input, partial)
}

/// Converts one Python literal (surrounding whitespace allowed) to compact JSON text.
///
/// Strings are decoded (Python escapes) and re-encoded as JSON strings; `True`/`False`/`None`
/// become `true`/`false`/`null`; trailing commas are dropped; numbers are normalized (`1_000`,
/// `+1`, `.5`, `5.`). Dict keys are strings (as keyword arguments must be). A string escaping a code point that is not a Unicode scalar value (a lone surrogate, `\ud800`)
/// has no UTF-8 form: an error, so callers can keep such text as written.
///
/// The one whole-text converter of the crate; the chat stream rewrites arguments as they
/// arrive with its own incremental rewriter, but converts whole values here.
///
/// ```
/// use peg_runtime::python::to_json;
/// assert_eq!(to_json(" {'n': 1_000, 'x': .5, 'ok': False} ").unwrap(), r#"{"n":1000,"x":0.5,"ok":false}"#);
/// assert!(to_json("{1: 'x'}").is_err());
/// assert_eq!(to_json(r"'\ud800'").unwrap_err().kind(), peg_runtime::ErrorKind::ParseFailed);
/// ```
pub fn to_json(text: &str) -> Result<String, Error> {
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let r = Scanner::new(Dialect::Python, Target::Value, start).run(bytes, false);
    let trailing_ok = bytes[r.end.min(bytes.len())..].iter().all(|b| b.is_ascii_whitespace());
    if r.outcome != Outcome::Success || !trailing_ok {
        return Err(Error::new(ErrorKind::ParseFailed, "not a Python literal").with_offset(r.end));
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = start;
    let end = r.end;
    while i < end {
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' | b',' | b':' => {
                out.push(b as char);
                i += 1;
            }
            b'}' | b']' => {
                if out.ends_with(',') {
                    out.pop();
                }
                out.push(b as char);
                i += 1;
            }
            b'\'' | b'"' => {
                let Some((s, next)) = decode_str(text, i) else {
                    return Err(Error::new(ErrorKind::ParseFailed, "a string escapes a code point that is not a Unicode scalar value").with_offset(i));
                };
                out.push_str(&serde_json::to_string(&s).expect("strings serialize"));
                i = next;
            }
            _ => {
                let j = i + bytes[i..end].iter().position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'+' | b'-'))).unwrap_or(end - i);
                let word = &text[i..j];
                match word {
                    "True" => out.push_str("true"),
                    "False" => out.push_str("false"),
                    "None" => out.push_str("null"),
                    w => out.push_str(&normalize_number(w)),
                }
                i = j;
            }
        }
    }
    Ok(out)
}

/// Decodes the (scanner-validated) Python string starting with its quote at `i`; returns the
/// value and the position after the closing quote; `None` for an escape of a non-scalar value.
fn decode_str(text: &str, i: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let quote = bytes[i] as char;
    let mut s = String::new();
    let mut chars = text[i + 1..].char_indices();
    let hex = |chars: &mut std::str::CharIndices<'_>, n: usize| -> Option<char> {
        let mut v = 0u32;
        for _ in 0..n {
            v = v * 16 + chars.next().and_then(|(_, c)| c.to_digit(16)).unwrap_or(0);
        }
        char::from_u32(v)
    };
    while let Some((k, c)) = chars.next() {
        if c == quote {
            return Some((s, i + 1 + k + 1));
        }
        if c != '\\' {
            s.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else { break };
        match e {
            'n' => s.push('\n'),
            't' => s.push('\t'),
            'r' => s.push('\r'),
            'b' => s.push('\u{8}'),
            'f' => s.push('\u{c}'),
            'v' => s.push('\u{b}'),
            'a' => s.push('\u{7}'),
            '\\' | '\'' | '"' => s.push(e),
            '\n' => {}
            'x' => s.push(hex(&mut chars, 2)?),
            'u' => s.push(hex(&mut chars, 4)?),
            'U' => s.push(hex(&mut chars, 8)?),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    let mut look = chars.clone();
                    match look.next().and_then(|(_, c)| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars = look;
                        }
                        None => break,
                    }
                }
                s.push(char::from_u32(v)?);
            }
            other => {
                s.push('\\');
                s.push(other);
            }
        }
    }
    Some((s, text.len()))
}

/// Python number syntax to JSON number syntax.
fn normalize_number(w: &str) -> String {
    let w: String = w.chars().filter(|&c| c != '_').collect();
    let (sign, body) = match w.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", w.strip_prefix('+').unwrap_or(&w)),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(k) => (&body[..k], &body[k..]),
        None => (body, ""),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(k) => (&mantissa[..k], Some(&mantissa[k + 1..])),
        None => (mantissa, None),
    };
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let mut out = format!("{sign}{int}");
    if let Some(f) = frac {
        out.push('.');
        out.push_str(if f.is_empty() { "0" } else { f });
    }
    out.push_str(exp);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_python_literals() {
        for s in ["{'a': 1}", "[1, 'x', \"y\", True, False, None,]", "{\"a\": 'a', 'b': [], }", "-1.5e3", "1_000", ".5", "5.", "'it\\'s'", "()"] {
            let r = scan(s.as_bytes(), PythonKind::Value, false);
            if s == "()" {
                assert_eq!(r.outcome, Outcome::Fail);
            } else {
                assert_eq!((r.outcome, r.end), (Outcome::Success, s.len()), "{s}");
            }
        }
        assert_eq!(scan(b"true", PythonKind::Value, false).outcome, Outcome::Fail);
        assert_eq!(scan(b"{'a': 1", PythonKind::Dict, true).outcome, Outcome::NeedMoreInput);
        assert_eq!(scan(b"{'a': 1", PythonKind::Dict, false).outcome, Outcome::Fail);
        assert_eq!(scan(b"'abc", PythonKind::Str, true).outcome, Outcome::NeedMoreInput);
        assert_eq!(scan(b"Tr", PythonKind::Bool, true).outcome, Outcome::NeedMoreInput);
        assert_eq!(scan(b"None", PythonKind::None, false).end, 4);
        assert_eq!(scan(b"[1]", PythonKind::Dict, false).outcome, Outcome::Fail);
        assert_eq!(scan(b"{[1]: 2}", PythonKind::Dict, false).outcome, Outcome::Fail);
        // Keys are strings: a word or number there fails where it starts, as in JSON.
        for s in ["{1: 2}", "{None: 2}", "{'a': 1, True: 2}", "{'a': {2.5: 1}}"] {
            assert_eq!(scan(s.as_bytes(), PythonKind::Dict, false).outcome, Outcome::Fail, "{s}");
        }
        assert_eq!(scan(b"{'a': 1, N", PythonKind::Dict, true).outcome, Outcome::Fail);
    }

    #[test]
    fn converts_to_json() {
        let cases = [
            ("{'a': 'b'}", r#"{"a":"b"}"#),
            ("  [True, False, None]  ", "[true,false,null]"),
            ("{'q': \"say \\\"hi\\\"\\n\", 'n': -0.5}", r#"{"q":"say \"hi\"\n","n":-0.5}"#),
            ("[1_000, +2, .5, 5., 007, 1e3]", "[1000,2,0.5,5.0,7,1e3]"),
            ("{\"x\": None, 'y': {'z': True}}", r#"{"x":null,"y":{"z":true}}"#),
            ("'caf\\xe9 \\u00e9'", r#""café é""#),
            ("[[1,], {'a': [],},]", r#"[[1],{"a":[]}]"#),
        ];
        for (py, json) in cases {
            let got = to_json(py).unwrap();
            assert_eq!(got, json, "{py}");
            assert!(serde_json::from_str::<serde_json::Value>(&got).is_ok());
        }
        assert!(to_json("{'a': 1").is_err());
        assert!(to_json("[1] x").is_err());
        assert!(to_json("").is_err());
        assert!(to_json("'\\ud800'").is_err());
    }

    /// What the chat layer relies on when it converts a whole value: Python strings with either
    /// quote and their escapes, mixed quotes, JSON-only escapes in a double-quoted string.
    #[test]
    fn converts_what_the_chat_layer_needs() {
        let cases = [
            (r#"{'q': 'say "hi"\n', "d": "it\'s"}"#, r#"{"q":"say \"hi\"\n","d":"it's"}"#),
            (r#"'{"location": "Oslo"}'"#, r#""{\"location\": \"Oslo\"}""#),
            (r#""{\"a\": 1}""#, r#""{\"a\": 1}""#),
            ("{'a': [1, 2,\n], 'b': 3, }", r#"{"a":[1,2],"b":3}"#),
            ("None", "null"),
        ];
        for (py, json) in cases {
            assert_eq!(to_json(py).unwrap(), json, "{py}");
        }
    }
}
