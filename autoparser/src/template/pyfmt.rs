//! Python-compatible value formatting: `str()`, `repr()` and `json.dumps` over minijinja values.
//!
//! Hugging Face renders templates with jinja2, so `{{ value }}` prints Python's `str(value)`
//! (`True`, `None`, `['a', 'b']`, `{'k': 1}`, `1e-05`) and `tojson` is `json.dumps`.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, State, Value};

/// Nesting bound for formatting/serializing values (untrusted data may be deep).
const MAX_DEPTH: usize = 256;

/// The bytes a result may reach: what the render's remaining fuel can pay for (one fuel per 64
/// bytes). Text built from shared values (`[s] * 1000`) can be far larger than the values, so
/// it is checked as it grows, before it is allocated.
pub fn fuel_bytes(state: &State) -> usize {
    state.fuel_levels().map_or(usize::MAX, |(_, remaining)| usize::try_from(remaining.saturating_mul(64)).unwrap_or(usize::MAX))
}

/// Refuses growing `out` by `extra` bytes past `limit`, as the engine refuses what fuel cannot pay.
pub fn ensure_room(out: &str, extra: usize, limit: usize) -> Result<(), Error> {
    if out.len().saturating_add(extra) > limit { Err(out_of_fuel()) } else { Ok(()) }
}

fn out_of_fuel() -> Error {
    Error::new(ErrorKind::OutOfFuel, "the result would be larger than the remaining fuel can pay for")
}

/// Writes `value`'s text (`{}` or `{:#?}`) onto `out`, refused past `limit` bytes: the text of a
/// list of shared strings is not built before it is measured.
pub fn write_capped(out: &mut String, limit: usize, value: std::fmt::Arguments<'_>) -> Result<(), Error> {
    struct Capped<'o> {
        out: &'o mut String,
        limit: usize,
    }
    impl std::fmt::Write for Capped<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            if self.out.len().saturating_add(s.len()) > self.limit {
                return Err(std::fmt::Error);
            }
            self.out.push_str(s);
            Ok(())
        }
    }
    std::fmt::write(&mut Capped { out, limit }, value).map_err(|_| out_of_fuel())
}

/// Serializing (`str()`, `tojson`) is charged as the engine charges its own serializers, a
/// quarter fuel per byte: walking values is slower than copying bytes.
const SERIALIZED_BYTES_PER_FUEL: u64 = 4;

/// [`fuel_bytes`] for serialized text.
pub fn serialized_bytes(state: &State) -> usize {
    state.fuel_levels().map_or(usize::MAX, |(_, remaining)| usize::try_from(remaining.saturating_mul(SERIALIZED_BYTES_PER_FUEL)).unwrap_or(usize::MAX))
}

/// Charges the fuel of serializing `text`.
pub fn charge_serialized(state: &State, text: &str) -> Result<(), Error> {
    state.consume_fuel(text.len() as u64 / SERIALIZED_BYTES_PER_FUEL)
}

/// Python `repr(float)`: shortest round-trip digits, exponent form outside `1e-4 <= |x| < 1e16`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // `{:e}` gives the shortest round-trip digits, e.g. "1.5e-5", "-2.15e1".
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if exp + 1 >= n {
            out.push_str(&digits);
            for _ in 0..(exp + 1 - n) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (a, b) = digits.split_at((exp + 1) as usize);
            out.push_str(a);
            out.push('.');
            out.push_str(b);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

fn as_f64(v: &Value) -> Option<f64> {
    f64::try_from(v.clone()).ok()
}

/// Python `str(value)` as jinja2 prints it (undefined prints as nothing), refused past `limit`
/// bytes.
pub fn py_str(v: &Value, limit: usize) -> Result<String, Error> {
    let mut out = String::new();
    match v.kind() {
        ValueKind::String => {
            let s = v.as_str().unwrap_or_default();
            ensure_room(&out, s.len(), limit)?;
            out.push_str(s);
        }
        _ => write_repr(&mut out, v, 0, limit)?,
    }
    Ok(out)
}

fn too_deep() -> Error {
    Error::new(ErrorKind::InvalidOperation, "value nesting too deep (recursion limit)")
}

fn write_repr(out: &mut String, v: &Value, depth: usize, limit: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    ensure_room(out, 0, limit)?;
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&float_repr(as_f64(v).unwrap_or(f64::NAN)));
            }
        }
        ValueKind::String => str_repr(out, v.as_str().unwrap_or_default(), limit)?,
        ValueKind::Seq | ValueKind::Iterable => {
            let tuple = v.is_tuple();
            out.push(if tuple { '(' } else { '[' });
            let mut n = 0;
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, &item, depth + 1, limit)?;
                n += 1;
            }
            if tuple && n == 1 {
                out.push(',');
            }
            out.push(if tuple { ')' } else { ']' });
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, &key, depth + 1, limit)?;
                out.push_str(": ");
                let val = v.get_item(&key)?;
                write_repr(out, &val, depth + 1, limit)?;
            }
            out.push('}');
        }
        _ => write_capped(out, limit, format_args!("{v}"))?,
    }
    Ok(())
}

/// How many characters of a string are escaped between checks of the output's size (an escape
/// writes at most 12 bytes).
const CHECK_EVERY: usize = 1024;

fn str_repr(out: &mut String, s: &str, limit: usize) -> Result<(), Error> {
    ensure_room(out, s.len() + 2, limit)?;
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for (k, c) in s.chars().enumerate() {
        if k % CHECK_EVERY == 0 {
            ensure_room(out, 0, limit)?;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    Ok(())
}

/// Options of Python's `json.dumps` as HF's `tojson` filter exposes them.
#[derive(Debug, Clone)]
pub struct JsonOpts {
    /// Escape non-ASCII as `\uXXXX` (HF's default: false).
    pub ensure_ascii: bool,
    /// Indent string per level; `None` = single line.
    pub indent: Option<String>,
    /// Between items (`", "`, or `","` with an indent).
    pub item_sep: String,
    /// Between a key and its value.
    pub key_sep: String,
    /// Sort object keys.
    pub sort_keys: bool,
}

impl Default for JsonOpts {
    fn default() -> Self {
        JsonOpts { ensure_ascii: false, indent: None, item_sep: ", ".into(), key_sep: ": ".into(), sort_keys: false }
    }
}

/// Python `json.dumps(value, ...)`, refused past `limit` bytes.
pub fn to_json(v: &Value, opts: &JsonOpts, limit: usize) -> Result<String, Error> {
    let mut out = String::new();
    write_json(&mut out, v, opts, 0, limit)?;
    Ok(out)
}

fn not_serializable(what: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("Object of type {what} is not JSON serializable"))
}

fn newline(out: &mut String, opts: &JsonOpts, depth: usize, limit: usize) -> Result<(), Error> {
    if let Some(ind) = &opts.indent {
        ensure_room(out, 1 + ind.len().saturating_mul(depth), limit)?;
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
    Ok(())
}

fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        float_repr(f)
    }
}

fn json_key(v: &Value) -> Result<String, Error> {
    Ok(match v.kind() {
        ValueKind::String => v.as_str().unwrap_or_default().to_string(),
        ValueKind::None => "null".into(),
        ValueKind::Bool => (if v.is_true() { "true" } else { "false" }).into(),
        ValueKind::Number if v.is_integer() => v.to_string(),
        ValueKind::Number => json_float(as_f64(v).unwrap_or(f64::NAN)),
        _ => return Err(Error::new(ErrorKind::InvalidOperation, format!("keys must be str, int, float, bool or None, not {}", v.kind()))),
    })
}

fn write_json(out: &mut String, v: &Value, opts: &JsonOpts, depth: usize, limit: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    ensure_room(out, 0, limit)?;
    match v.kind() {
        ValueKind::Undefined => return Err(not_serializable("Undefined")),
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&json_float(as_f64(v).unwrap_or(f64::NAN)));
            }
        }
        ValueKind::String => json_str(out, v.as_str().unwrap_or_default(), opts.ensure_ascii, limit)?,
        // A concatenation of lists (`ns.calls + [call]`) is a list in Python; minijinja keeps it
        // lazy, but sized. (A sized iterable Python would refuse, `range(3)`, is written too.)
        ValueKind::Seq | ValueKind::Iterable if v.kind() == ValueKind::Seq || v.len().is_some() => {
            let items: Vec<Value> = v.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    ensure_room(out, opts.item_sep.len(), limit)?;
                    out.push_str(&opts.item_sep);
                }
                newline(out, opts, depth + 1, limit)?;
                write_json(out, item, opts, depth + 1, limit)?;
            }
            newline(out, opts, depth, limit)?;
            out.push(']');
        }
        ValueKind::Map => {
            let mut pairs = Vec::new();
            for key in v.try_iter()? {
                let val = v.get_item(&key)?;
                pairs.push((json_key(&key)?, val));
            }
            if opts.sort_keys {
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            if pairs.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, val)) in pairs.iter().enumerate() {
                if i > 0 {
                    ensure_room(out, opts.item_sep.len(), limit)?;
                    out.push_str(&opts.item_sep);
                }
                newline(out, opts, depth + 1, limit)?;
                json_str(out, k, opts.ensure_ascii, limit)?;
                ensure_room(out, opts.key_sep.len(), limit)?;
                out.push_str(&opts.key_sep);
                write_json(out, val, opts, depth + 1, limit)?;
            }
            newline(out, opts, depth, limit)?;
            out.push('}');
        }
        ValueKind::Iterable => return Err(not_serializable("generator")),
        ValueKind::Bytes => return Err(not_serializable("bytes")),
        _ => return Err(not_serializable(&v.kind().to_string())),
    }
    Ok(())
}

fn json_str(out: &mut String, s: &str, ensure_ascii: bool, limit: usize) -> Result<(), Error> {
    ensure_room(out, s.len() + 2, limit)?;
    out.push('"');
    for (k, c) in s.chars().enumerate() {
        if k % CHECK_EVERY == 0 {
            ensure_room(out, 0, limit)?;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python() {
        for (f, s) in [
            (21.5, "21.5"),
            (-2.5, "-2.5"),
            (3.0, "3.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123456789012345.0, "123456789012345.0"),
            (1.5e20, "1.5e+20"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (2.5e-7, "2.5e-07"),
        ] {
            assert_eq!(float_repr(f), s, "{f}");
        }
    }

    #[test]
    fn json_like_python() {
        let v = Value::from(minijinja::value::Serde(serde_json::json!({"b": [1, 2.0, "x\u{e9}"], "a": null, "t": true})));
        assert_eq!(to_json(&v, &JsonOpts::default(), usize::MAX).unwrap(), r#"{"b": [1, 2.0, "xé"], "a": null, "t": true}"#);
        let opts = JsonOpts { ensure_ascii: true, sort_keys: true, ..JsonOpts::default() };
        assert_eq!(to_json(&v, &opts, usize::MAX).unwrap(), r#"{"a": null, "b": [1, 2.0, "x\u00e9"], "t": true}"#);
        let opts = JsonOpts { indent: Some("  ".into()), item_sep: ",".into(), ..JsonOpts::default() };
        assert_eq!(to_json(&v, &opts, usize::MAX).unwrap(), "{\n  \"b\": [\n    1,\n    2.0,\n    \"xé\"\n  ],\n  \"a\": null,\n  \"t\": true\n}");
    }

    #[test]
    fn text_past_the_limit_is_refused() {
        let v = Value::from(minijinja::value::Serde(serde_json::json!(["abcd", "efgh"])));
        assert_eq!(py_str(&v, 16).unwrap(), "['abcd', 'efgh']");
        assert_eq!(py_str(&v, 10).unwrap_err().kind(), ErrorKind::OutOfFuel);
        assert_eq!(to_json(&v, &JsonOpts::default(), 8).unwrap_err().kind(), ErrorKind::OutOfFuel);
        let opts = JsonOpts { indent: Some("x".repeat(1000)), item_sep: ",".into(), ..JsonOpts::default() };
        assert_eq!(to_json(&v, &opts, 100).unwrap_err().kind(), ErrorKind::OutOfFuel);
    }

    #[test]
    fn repr_like_python() {
        let v = Value::from(minijinja::value::Serde(serde_json::json!({"a": [1, "it's", null, false], "b": "x"})));
        assert_eq!(py_str(&v, usize::MAX).unwrap(), r#"{'a': [1, "it's", None, False], 'b': 'x'}"#);
    }
}
