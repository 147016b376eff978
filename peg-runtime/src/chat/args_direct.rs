//! A one-pass check of a call's arguments text against the schemas whose grammar verdict it
//! can tell without the grammar: types, `properties`, `required`, `additionalProperties`,
//! `items` and annotations (see [`Direct::of`]). It reads the text once, allocates nothing and
//! builds no `Value`, and only ever answers "fits for sure": anything it is not certain of
//! (another type than declared, a missing member, a number whose canonical form the grammar
//! may refuse, an escaped key, deep nesting, text serde would refuse) leaves the verdict to the
//! full check ([`super::args_schema::ArgsSchema::fits`] over the parsed value), so the calls
//! flagged are exactly those flagged before.

use serde_json::Value;

use crate::chat::json_text;
use crate::json::{short_escape, word_at};
use crate::swar::escaped_len;

/// Containers nested past this leave the verdict to the full check (serde's own limit is 128).
const MAX_NESTING: usize = 64;
/// Schema nesting past which a schema is not checked directly.
const MAX_SCHEMA_DEPTH: usize = 32;
/// Declared properties per object the direct check follows (a bit each).
const MAX_PROPS: usize = 64;

/// Keys a directly checked schema may hold besides annotations.
const DIRECT_KEYS: &[&str] = &["type", "properties", "required", "additionalProperties", "items"];

/// What a value must be, for a schema whose grammar the direct check mirrors. Every such schema
/// is plain in the sense of `args_schema::plain`, so the canonical form blanks what it can.
#[derive(Debug)]
pub(crate) enum Direct {
    /// Any value (`true`, `{}`): fits when its numbers fit (the canonical form blanks it).
    Any,
    /// `{"type": "string"}`: any string.
    Str,
    /// `{"type": "integer"}` without bounds.
    Int,
    /// `{"type": "number"}` without bounds.
    Num,
    Bool,
    Null,
    /// `{"type": "object"}` free: any members whose numbers fit.
    FreeObject,
    /// `{"type": "array"}` free: any items whose numbers fit.
    FreeArray,
    /// `{"type": "array", "items": ...}`.
    Array(Box<Direct>),
    /// `{"type": "object", "properties": ..., "required": ..., "additionalProperties": ...}`.
    Object(Box<Object>),
}

#[derive(Debug)]
pub(crate) struct Object {
    /// Declared properties: name, schema.
    props: Vec<(String, Direct)>,
    /// A bit per required property (by index in `props`).
    required: u64,
    /// The schema of undeclared members; `None`: none are allowed.
    additional: Option<Direct>,
}

impl Direct {
    /// The direct check of `schema` (opened up: `additionalProperties` made explicit where
    /// properties are declared), if it mirrors the schema's grammar exactly. `None` for
    /// anything else, including schemas whose grammar cannot be built (a required property
    /// not declared), so a schema checked directly always has a grammar.
    pub(crate) fn of(schema: &Value) -> Option<Direct> {
        Self::compile(schema, 0)
    }

    fn compile(schema: &Value, depth: usize) -> Option<Direct> {
        if depth > MAX_SCHEMA_DEPTH {
            return None;
        }
        let o = match schema {
            Value::Bool(true) => return Some(Direct::Any),
            Value::Object(o) => o,
            _ => return None,
        };
        let annotation = |k: &str| ANNOTATIONS.contains(&k);
        if !o.keys().all(|k| annotation(k) || DIRECT_KEYS.contains(&k.as_str())) {
            return None;
        }
        // The keys beyond annotations are among `allowed`.
        let only = |allowed: &[&str]| o.keys().all(|k| annotation(k) || allowed.contains(&k.as_str()));
        let ty = match o.get("type") {
            None => return only(&[]).then_some(Direct::Any),
            Some(Value::String(t)) => t.as_str(),
            Some(_) => return None,
        };
        match ty {
            "string" if only(&["type"]) => Some(Direct::Str),
            "integer" if only(&["type"]) => Some(Direct::Int),
            "number" if only(&["type"]) => Some(Direct::Num),
            "boolean" if only(&["type"]) => Some(Direct::Bool),
            "null" if only(&["type"]) => Some(Direct::Null),
            "array" if only(&["type", "items"]) => match o.get("items") {
                None => Some(Direct::FreeArray),
                Some(item @ Value::Object(_)) => Some(Direct::Array(Box::new(Self::compile(item, depth + 1)?))),
                Some(_) => None,
            },
            "object" if only(&["type", "properties", "required", "additionalProperties"]) => {
                let props = match o.get("properties") {
                    None => None,
                    Some(Value::Object(p)) => Some(p),
                    Some(_) => return None,
                };
                let additional = o.get("additionalProperties");
                if props.is_none_or(|p| p.is_empty()) && additional.is_none_or(|a| *a == Value::Bool(true)) && !o.contains_key("required") {
                    return Some(Direct::FreeObject);
                }
                let props = props.map(|p| p.iter().collect::<Vec<_>>()).unwrap_or_default();
                if props.len() > MAX_PROPS {
                    return None;
                }
                let mut compiled = Vec::with_capacity(props.len());
                for (name, s) in props {
                    // A property whose schema is `false` has no rule in the grammar; a name the
                    // canonical form would escape otherwise than the grammar's literal is left
                    // to the full check.
                    if *s == Value::Bool(false) || name.chars().any(|c| c < ' ' || matches!(c, '"' | '\\' | '\x7f')) {
                        return None;
                    }
                    compiled.push((name.clone(), Self::compile(s, depth + 1)?));
                }
                let mut required = 0_u64;
                match o.get("required") {
                    None => {}
                    Some(Value::Array(names)) => {
                        for name in names {
                            let i = compiled.iter().position(|(p, _)| Some(p.as_str()) == name.as_str())?;
                            required |= 1 << i;
                        }
                    }
                    Some(_) => return None,
                }
                let additional = match additional {
                    // Without declared properties and without `additionalProperties`, an
                    // object takes any members.
                    None if compiled.is_empty() => Some(Direct::Any),
                    None | Some(Value::Bool(false)) => None,
                    Some(Value::Bool(true)) => Some(Direct::Any),
                    Some(s @ Value::Object(_)) => Some(Self::compile(s, depth + 1)?),
                    Some(_) => return None,
                };
                Some(Direct::Object(Box::new(Object { props: compiled, required, additional })))
            }
            _ => None,
        }
    }

    /// Whether `text` is certainly a JSON object that fits: `true` only if the full check
    /// would say so; `false` when it may not (the full check then decides).
    pub(crate) fn surely_fits(&self, text: &str) -> bool {
        let mut s = Scan { b: text.as_bytes(), i: 0, depth: 0 };
        s.ws();
        if s.peek() != Some(b'{') || s.value(self).is_none() {
            return false;
        }
        s.ws();
        s.i == s.b.len()
    }
}

/// Whether `text` is certainly a JSON object (numbers within the grammar's bounds aside),
/// for calls with no schema to check.
pub(crate) fn surely_object(text: &str) -> bool {
    Direct::FreeObject.surely_fits(text)
}

/// How a number is checked: where the canonical form blanks it (its serialization within the
/// digit bounds of `args_schema::numbers_fit`), or as the grammar's `integer` or `number`.
#[derive(Clone, Copy, PartialEq)]
enum NumAs {
    Free,
    Int,
    Num,
}

/// A cursor over the arguments; every method returns `None` when unsure.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Scan<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn value(&mut self, d: &Direct) -> Option<()> {
        match (d, self.peek()?) {
            (Direct::Any, _) => self.free(),
            (Direct::Str, b'"') => self.string().map(drop),
            (Direct::Int, b'-' | b'0'..=b'9') => self.number(NumAs::Int),
            (Direct::Num, b'-' | b'0'..=b'9') => self.number(NumAs::Num),
            (Direct::Bool, b't') => self.word(b"true"),
            (Direct::Bool, b'f') => self.word(b"false"),
            (Direct::Null, b'n') => self.word(b"null"),
            (Direct::FreeObject, b'{') | (Direct::FreeArray, b'[') => self.free(),
            (Direct::Array(item), b'[') => self.array(|s| s.value(item)),
            (Direct::Object(o), b'{') => self.object(o),
            _ => None,
        }
    }

    /// Any value, its numbers as the canonical form's blanking needs them. A flat walk, a bit
    /// per open container telling an array from an object: data the schema leaves free is
    /// often most of the arguments, and a call per value costs more than its tokens.
    fn free(&mut self) -> Option<()> {
        let base = self.depth;
        // Bit 0 is the innermost container (at most `MAX_NESTING` of them).
        let mut arrays = 0_u64;
        loop {
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.nest()?;
                    self.i += 1;
                    let array = open == b'[';
                    arrays = arrays << 1 | u64::from(array);
                    self.ws();
                    if self.peek()? != open + 2 {
                        if !array {
                            self.key()?;
                        }
                        continue;
                    }
                    // Empty (`]` and `}` follow their opening bracket by two).
                    self.i += 1;
                    self.depth -= 1;
                    arrays >>= 1;
                }
                b'"' => drop(self.string()?),
                b't' => self.word(b"true")?,
                b'f' => self.word(b"false")?,
                b'n' => self.word(b"null")?,
                _ => self.number(NumAs::Free)?,
            }
            // After a value: close containers up to a comma, then the next value.
            loop {
                if self.depth == base {
                    return Some(());
                }
                let array = arrays & 1 == 1;
                if !self.separator_or(if array { b']' } else { b'}' })? {
                    if !array {
                        self.key()?;
                    }
                    break;
                }
                self.depth -= 1;
                arrays >>= 1;
            }
        }
    }

    /// A literal of `N` bytes.
    #[inline(always)]
    fn word<const N: usize>(&mut self, w: &[u8; N]) -> Option<()> {
        word_at(self.b, self.i, w).then(|| self.i += N)
    }

    fn nest(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.nest()?;
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_none() {
            loop {
                item(self)?;
                if self.separator_or(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// After a member or item: a comma (false) or the container's `close` (true).
    fn separator_or(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let b = self.peek()?;
        if b != b',' && b != close {
            return None;
        }
        self.i += 1;
        if b == b',' {
            self.ws();
        }
        Some(b == close)
    }

    /// An object; `member` reads each value, given its key's raw text (`None` if escaped).
    fn members(&mut self, mut member: impl FnMut(&mut Self, Option<&[u8]>) -> Option<()>) -> Option<()> {
        self.nest()?;
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                let (start, end, escaped) = self.key()?;
                let b = self.b;
                member(self, (!escaped).then(|| &b[start..end]))?;
                if self.separator_or(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// A member's key (as [`Scan::string`]) and colon, up to its value.
    // Inlined into the walks: keys are most of the tokens of nested arguments.
    #[inline(always)]
    fn key(&mut self) -> Option<(usize, usize, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(key)
    }

    fn object(&mut self, o: &Object) -> Option<()> {
        let mut seen = 0_u64;
        self.members(|s, key| {
            // An escaped key may spell a declared one: the full check decodes it.
            let key = key?;
            match o.props.iter().position(|(name, _)| name.as_bytes() == key) {
                Some(i) => {
                    seen |= 1 << i;
                    s.value(&o.props[i].1)
                }
                None => s.value(o.additional.as_ref()?),
            }
        })?;
        (seen & o.required == o.required).then_some(())
    }

    /// A string at `"`: the span of its body and whether it holds escapes. `None` for what
    /// serde refuses (control characters, unknown escapes) and for `\u` surrogates.
    // Most strings are short keys: a call costs as much as their word.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let b = self.b;
        let start = self.i + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            // To the next quote, control byte or escape of more than two bytes.
            let (run, short) = escaped_len(b.get(i..)?, b'"', false, |c| short_escape(c, false));
            i += run;
            escaped |= short;
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some((start, i, escaped));
                }
                b'\\' if b.get(i + 1) == Some(&b'u') => {
                    escaped = true;
                    let hex = b.get(i + 2..i + 6)?;
                    // A surrogate must pair up: the full check.
                    if !json_text::plain_u_escape(hex) {
                        return None;
                    }
                    i += 6;
                }
                // A control byte or an unknown escape.
                _ => return None,
            }
        }
    }

    /// A number whose canonical form the grammar takes where `how` says.
    // Inlined into the walks: most numbers are short, and taken without a call.
    #[inline(always)]
    fn number(&mut self, how: NumAs) -> Option<()> {
        let b = self.b;
        let start = self.i;
        let int_start = start + usize::from(b.get(start) == Some(&b'-'));
        let mut i = digits_end(b, int_start);
        let int = &b[int_start..i];
        if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
            return None;
        }
        let mut float = false;
        let mut frac: &[u8] = &[];
        if b.get(i) == Some(&b'.') {
            float = true;
            let f = i + 1;
            i = digits_end(b, f);
            if i == f {
                return None;
            }
            frac = &b[f..i];
        }
        let mut exp = 0;
        if let Some(b'e' | b'E') = b.get(i) {
            float = true;
            i += 1;
            let negative = b.get(i) == Some(&b'-');
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let e = i;
            i = digits_end(b, i);
            if i == e {
                return None;
            }
            // Longer exponents take the careful path below.
            let d = &b[e..i];
            let x = if d.len() > 4 { i32::MAX } else { d.iter().fold(0, |x, &c| x * 10 + i32::from(c - b'0')) };
            exp = if negative { -x } else { x };
        }
        self.i = i;
        if !float {
            // An integer of at most 15 digits is the same text in every canonical form, and
            // within every bound (`-0` is a float to serde).
            return (int.len() <= 15 && &b[start..i] != b"-0").then_some(());
        }
        if how != NumAs::Int && short_float(int, frac, exp) {
            return Some(());
        }
        serde_float_fits(&b[start..i], how).then_some(())
    }
}

/// Whether the float `text` fits where `how` says, as serde reads it and writes it back (the
/// canonical form).
#[inline(never)]
fn serde_float_fits(text: &[u8], how: NumAs) -> bool {
    let Some(n) = std::str::from_utf8(text).ok().and_then(|t| serde_json::from_str::<serde_json::Number>(t).ok()) else { return false };
    let Some(f) = n.as_f64() else { return false };
    if how == NumAs::Int {
        // An integral float is written as an integer (`args_schema::write_canonical`).
        return n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15;
    }
    let mut buf = Buf::default();
    if std::fmt::Write::write_fmt(&mut buf, format_args!("{n}")).is_err() {
        return false;
    }
    let t = std::str::from_utf8(&buf.b[..buf.len]).unwrap_or_default();
    match how {
        NumAs::Free => number_text_fits(t),
        _ => grammar_number(t),
    }
}

/// Whether a float (its integral digits, fraction digits and exponent) is written by serde
/// within the digit bounds both of the blanking (`args_schema::numbers_fit`) and of the
/// grammar's `number` rule, whichever of fixed or scientific notation serde picks. So it is
/// when its significand has at most 15 digits and its decimal exponent is at most 22 in
/// magnitude: serde then reads it exactly (one multiplication or division of exact values),
/// its shortest digits are the significand's, and with its point at most 16 digits in (and
/// at most 16 digits after it when it is below 1) both notations fit.
fn short_float(int: &[u8], frac: &[u8], exp: i32) -> bool {
    let zeros = |d: &[u8]| d.iter().take_while(|&&c| c == b'0').count();
    let trailing_zeros = |d: &[u8]| d.iter().rev().take_while(|&&c| c == b'0').count();
    // The digits `int` then `frac`, without leading zeros.
    let lead = match zeros(int) {
        z if z == int.len() => z + zeros(frac),
        z => z,
    };
    let n = int.len() + frac.len() - lead;
    if n == 0 {
        // Zero: `0.0` or `-0.0`.
        return true;
    }
    let Some(e10) = exp.checked_sub(frac.len() as i32) else { return false };
    if n > 15 || e10.unsigned_abs() > 22 {
        return false;
    }
    // The significant digits without trailing zeros, and the point after `p` of them.
    let trailing = match trailing_zeros(frac) {
        z if z == frac.len() => z + trailing_zeros(int),
        z => z,
    };
    let kept = (n - trailing) as i32;
    let p = n as i32 + e10;
    p <= 16 && (p > 0 || kept - p <= 16)
}

/// Whether `t` matches the schema grammar's `number` rule:
/// `-? (0 | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? "0"{0,2} [0-9]{1,2})?`.
fn grammar_number(t: &str) -> bool {
    let t = t.strip_prefix('-').unwrap_or(t);
    let (mantissa, exp) = t.split_once(['e', 'E']).map_or((t, None), |(m, e)| (m, Some(e)));
    let (int, frac) = mantissa.split_once('.').map_or((mantissa, None), |(i, f)| (i, Some(f)));
    let digits = |d: &str, max: usize| !d.is_empty() && d.len() <= max && d.bytes().all(|b| b.is_ascii_digit());
    let exp_fits = |e: &str| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        let zeros = e.bytes().take_while(|&c| c == b'0').count().min(2);
        digits(e, 4) && (0..=zeros).any(|k| (1..=2).contains(&(e.len() - k)))
    };
    digits(int, 16) && (int == "0" || !int.starts_with('0')) && frac.is_none_or(|f| digits(f, 16)) && exp.is_none_or(exp_fits)
}

/// A stack buffer to format a number into (serde writes at most 24 bytes of an `f64`).
#[derive(Default)]
struct Buf {
    b: [u8; 32],
    len: usize,
}

impl std::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let dst = self.b.get_mut(self.len..self.len + s.len()).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

/// Where the run of ASCII digits of `b` starting at `i` ends.
fn digits_end(b: &[u8], i: usize) -> usize {
    i + b.get(i..).map_or(0, |t| t.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// Keys that constrain nothing.
pub(crate) const ANNOTATIONS: &[&str] = &["description", "title", "default", "examples", "$comment", "$schema", "$id", "$defs", "definitions"];

/// Whether number text `t` (as serde writes it) has at most 16 digits in each part.
pub(crate) fn number_text_fits(t: &str) -> bool {
    let t = t.strip_prefix('-').unwrap_or(t);
    let (mantissa, exp) = t.split_once(['e', 'E']).map_or((t, None), |(m, e)| (m, Some(e)));
    let (int, frac) = mantissa.split_once('.').map_or((mantissa, None), |(i, f)| (i, Some(f)));
    let digits = |d: &str, max: usize| !d.is_empty() && d.len() <= max && d.bytes().all(|b| b.is_ascii_digit());
    digits(int, 16)
        && (int == "0" || !int.starts_with('0'))
        && frac.is_none_or(|f| digits(f, 16))
        && exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), 16))
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::chat::args_schema::ArgsSchema;
    use crate::gbnf::Grammar;
    use crate::test_rng::Rng;

    const NAMES: &[&str] = &["a", "b", "city", "days", "x", "ab", "é"];

    /// A schema, mostly of what the direct check covers, sometimes not.
    fn schema(r: &mut Rng, depth: usize) -> Value {
        let leaf = [
            json!({"type": "string"}),
            json!({"type": "integer"}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
            json!({"type": "null"}),
            json!({}),
            json!(true),
            json!({"type": "object"}),
            json!({"type": "array"}),
        ];
        let odd = [
            json!({"type": "integer", "minimum": 1}),
            json!({"type": "string", "maxLength": 3}),
            json!({"enum": ["a", 1]}),
            json!({"type": ["string", "null"]}),
            json!({"type": "str"}),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            json!({"type": "array", "items": {"type": "integer"}, "maxItems": 2}),
        ];
        match r.below(if depth > 2 { 3 } else { 6 }) {
            0 | 1 => r.pick(&leaf),
            2 => r.pick(&odd),
            3 => json!({"type": "array", "items": schema(r, depth + 1), "description": "d"}),
            _ => {
                let mut props = Map::new();
                for _ in 0..r.below(4) {
                    props.insert(r.pick(NAMES).to_string(), schema(r, depth + 1));
                }
                let mut o = json!({"type": "object", "properties": props});
                let keys: Vec<String> = o["properties"].as_object().unwrap().keys().cloned().collect();
                let required: Vec<&String> = keys.iter().filter(|_| r.below(2) == 0).collect();
                if !required.is_empty() || r.below(4) == 0 {
                    o["required"] = json!(required);
                }
                match r.below(4) {
                    0 => o["additionalProperties"] = json!(false),
                    1 => o["additionalProperties"] = schema(r, depth + 1),
                    _ => {}
                }
                o
            }
        }
    }

    const NUMBERS: &[&str] = &[
        "1.5e-99999",
        "-2.5e+123456",
        "0.0e-99999",
        "0",
        "-0",
        "7",
        "-12",
        "3.0",
        "2.50",
        "-3.5e2",
        "1e2",
        "1E+2",
        "1e-7",
        "0.000123456789012345",
        "123456789012345",
        "1234567890123456",
        "12345678901234567890",
        "1e100",
        "1e400",
        "0.1",
        "-0.0",
        "4.5e15",
        "1.5e-05",
        "00",
        "1.",
        "-",
    ];
    const STRINGS: &[&str] = &[
        r#""""#,
        r#""Paris""#,
        r#""a\"b\\c\n""#,
        r#""caf\u00e9 é""#,
        "\"\u{7f}\"",
        r#""\ud83d\ude00""#,
        r#""\ud800""#,
        r#""\x41""#,
        "\"tab\there\"",
        r#""\u00zz""#,
        r#""/\/""#,
    ];

    /// JSON-ish text for a value of `s` (when `fit`, mostly of the declared shape), with odd
    /// whitespace, orders, numbers, escapes and now and then something invalid.
    fn text(r: &mut Rng, s: &Value, depth: usize, out: &mut String) {
        let ws = |r: &mut Rng, out: &mut String| out.push_str(r.pick(&["", "", " ", "\n  ", "\t"]));
        let ty =
            s.get("type").and_then(Value::as_str).unwrap_or(if depth > 3 { "string" } else { r.pick(&["object", "array", "string", "number", "integer"]) });
        let ty = if r.below(12) == 0 { r.pick(&["string", "number", "boolean", "null", "object", "array"]) } else { ty };
        match ty {
            "string" | "str" => out.push_str(r.pick(STRINGS)),
            "integer" | "number" => out.push_str(r.pick(NUMBERS)),
            "boolean" => out.push_str(r.pick(&["true", "false", "True"])),
            "null" => out.push_str(r.pick(&["null", "None"])),
            "array" => {
                out.push('[');
                ws(r, out);
                let item = s.get("items").cloned().unwrap_or(json!({}));
                for i in 0..r.below(4) {
                    if i > 0 {
                        out.push(',');
                        ws(r, out);
                    }
                    text(r, &item, depth + 1, out);
                    ws(r, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                ws(r, out);
                let props = s.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
                let mut keys: Vec<String> = props.keys().filter(|_| r.below(5) > 0).cloned().collect();
                if r.below(3) == 0 {
                    keys.push(r.pick(&["z", "a", "c\\u0069ty", "\u{7f}", "y"]).to_string());
                }
                if keys.len() > 1 && r.below(2) == 0 {
                    keys.swap(0, 1);
                }
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        ws(r, out);
                    }
                    out.push('"');
                    out.push_str(k);
                    out.push('"');
                    ws(r, out);
                    out.push(':');
                    ws(r, out);
                    let sub = props.get(k).or(s.get("additionalProperties").filter(|a| a.is_object())).cloned().unwrap_or(json!({}));
                    text(r, &sub, depth + 1, out);
                }
                ws(r, out);
                out.push('}');
            }
        }
    }

    /// The verdict of the full check, as `Fold::check_call` reaches it.
    fn full(a: &ArgsSchema, text: &str) -> bool {
        matches!(serde_json::from_str::<Value>(text), Ok(v) if v.is_object() && a.fits(&v, text))
    }

    /// The direct check never accepts what the full check flags, and settles most calls of
    /// the schemas it covers; a schema it covers always has a grammar.
    #[test]
    fn direct_check_agrees_with_the_recognizer() {
        let mut r = Rng(0x5eed);
        let (mut sure, mut agreed_fits, mut covered) = (0, 0, 0);
        for _ in 0..400 {
            let s = schema(&mut r, 0);
            let mut root = json!({"type": "object", "properties": {"p": s.clone(), "q": {"type": "string"}}, "required": ["p"]});
            if r.below(3) == 0 {
                root = s.clone();
            }
            let a = ArgsSchema::new(&root);
            let mut opened = root.clone();
            if let Some(o) = opened.as_object_mut().filter(|o| o.contains_key("properties") && !o.contains_key("additionalProperties")) {
                o.insert("additionalProperties".into(), json!(true));
            }
            let direct = Direct::of(&opened);
            if direct.is_some() {
                covered += 1;
                assert!(crate::schema::to_gbnf(&opened).is_ok_and(|g| Grammar::parse(&g).is_ok()), "{root}");
            }
            for _ in 0..8 {
                let mut t = String::new();
                text(&mut r, &root, 0, &mut t);
                let (d, f) = (a.surely_fits(&t), full(&a, &t));
                assert!(!d || f, "the direct check accepts what the full check flags: {root} on {t}");
                sure += usize::from(d);
                agreed_fits += usize::from(f && direct.is_some());
            }
        }
        assert!(covered > 150 && sure * 10 > agreed_fits * 7, "covered {covered}, sure {sure} of {agreed_fits}");
    }

    /// Arguments drawn from the schema's own grammar (what a constrained model writes): the
    /// direct check takes nearly all of them, and flags none the full check takes.
    #[test]
    fn direct_check_takes_what_the_grammar_draws() {
        let mut r = Rng(0xd1ec7);
        let (mut drawn, mut sure) = (0, 0);
        for seed in 0..150 {
            let s = schema(&mut r, 1);
            let root = json!({"type": "object", "properties": {"p": s, "n": {"type": "number"}}, "required": ["p"], "additionalProperties": false});
            let a = ArgsSchema::new(&root);
            if a.direct().is_none() {
                continue;
            }
            let g = Grammar::parse(&crate::schema::to_gbnf(&root).unwrap()).unwrap();
            let mut sampler = g.sampler(seed);
            for _ in 0..10 {
                let Some(t) = sampler.sample() else { continue };
                let (d, f) = (a.surely_fits(&t), full(&a, &t));
                assert!(!d || f, "{root} on {t}");
                drawn += usize::from(f);
                sure += usize::from(d);
            }
        }
        assert!(drawn > 200 && sure * 10 > drawn * 8, "sure {sure} of {drawn}");
    }

    /// Cut and corrupted arguments never panic, and are never accepted where the full check
    /// flags them.
    #[test]
    fn damaged_arguments_are_left_to_the_full_check() {
        let root = json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "number"}}}, "required": ["city"]});
        let a = ArgsSchema::new(&root);
        let good = r#"{"city": "Pa\"ris\u00e9", "days": 3, "tags": [1.5, -2e3, 0], "extra": {"k": [null, true]}}"#;
        assert!(a.surely_fits(good) && full(&a, good));
        // Exponents past any bound are left to serde (and never overflow here).
        for e in ["1.5e-99999", "1e99999999999", "-0.5E-2147483648"] {
            let t = format!(r#"{{"city": "x", "tags": [{e}]}}"#);
            assert!(!a.surely_fits(&t) || full(&a, &t), "{t}");
        }
        let mut r = Rng(99);
        for cut in 0..good.len() {
            if good.is_char_boundary(cut) {
                assert!(!a.surely_fits(&good[..cut]));
            }
        }
        let bytes: &[u8] = b"{}[]\",:\\ 0-.eE\x01\x7fnulltrue";
        for _ in 0..3000 {
            let mut t = good.as_bytes().to_vec();
            for _ in 0..1 + r.below(3) {
                let at = r.below(t.len());
                t[at] = r.pick(bytes);
            }
            let Ok(t) = String::from_utf8(t) else { continue };
            assert!(!a.surely_fits(&t) || full(&a, &t), "{t}");
        }
    }

    /// The walk of free values as it was, a call per value: the flat walk's reference.
    fn free_by_calls(s: &mut Scan) -> Option<()> {
        match s.peek()? {
            b'{' => s.members(|s, _| free_by_calls(s)),
            b'[' => s.array(free_by_calls),
            b'"' => s.string().map(drop),
            b't' => s.word(b"true"),
            b'f' => s.word(b"false"),
            b'n' => s.word(b"null"),
            _ => s.number(NumAs::Free),
        }
    }

    /// A string as it was scanned, a byte at a time: the word loop's reference.
    fn string_bytewise(s: &mut Scan) -> Option<(usize, usize, bool)> {
        let (b, start) = (s.b, s.i + 1);
        let (mut i, mut escaped) = (start, false);
        loop {
            match *b.get(i)? {
                b'"' => {
                    s.i = i + 1;
                    return Some((start, i, escaped));
                }
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
                            let code = u16::from_str_radix(hex, 16).ok().filter(|_| !hex.starts_with('+'))?;
                            if (0xD800..0xE000).contains(&code) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// Random JSON-ish text of the bytes and tokens that matter to the walk: brackets,
    /// separators, words, numbers, strings with escapes of every kind, control bytes and
    /// multi-byte characters, mostly well formed.
    fn jsonish(r: &mut Rng, depth: usize, out: &mut String) {
        const TOKENS: &[&str] = &["", ",", ":", "]", "}", "[", "{", " ", "tru", "nul", "\"", "-", "1.", "0x", "\\"];
        const PIECES: &[&str] = &["a", "\\\"", "\\\\", "\\n", "\\u00e9", "\\uD83D", "\\ud7ff", "\\u12", "\\x", "\u{1}", "\t", "é", "✓ 😀", "/", "\\/", "\\"];
        if r.below(40) == 0 {
            out.push_str(r.pick(TOKENS));
        }
        match r.below(if depth > 5 { 4 } else { 7 }) {
            0 => out.push_str(r.pick(NUMBERS)),
            1 => out.push_str(r.pick(&["true", "false", "null"])),
            2 | 3 => {
                out.push('"');
                for _ in 0..r.below(12) {
                    out.push_str(r.pick(PIECES));
                }
                out.push('"');
            }
            4 | 5 => {
                let (open, close) = if r.below(2) == 0 { ('[', ']') } else { ('{', '}') };
                out.push(open);
                out.push_str(r.pick(&["", " ", "\n "]));
                for k in 0..r.below(5) {
                    if k > 0 {
                        out.push_str(r.pick(&[",", ", ", " ,\n"]));
                    }
                    // Now and then a member without its key or colon.
                    if open == '{' && r.below(12) > 0 {
                        out.push_str(r.pick(&["\"k\"", "\"\\u0069d\"", "\"a\\\"b\""]));
                        out.push_str(r.pick(&[":", ": ", " : ", ":", ": ", " : ", ""]));
                    }
                    jsonish(r, depth + 1, out);
                }
                out.push_str(r.pick(&["", " "]));
                out.push(close);
            }
            _ => {
                let deep = r.below(70);
                out.push_str(&"[".repeat(deep));
                jsonish(r, depth + 1, out);
                out.push_str(&"]".repeat(deep));
            }
        }
        if r.below(40) == 0 {
            out.push_str(r.pick(TOKENS));
        }
    }

    /// The flat walk of free values and the word loop over strings answer as the walks
    /// they replace, and stop at the same place.
    #[test]
    fn free_walk_agrees_with_a_call_per_value() {
        let mut r = Rng(0xf7ee);
        let mut texts: Vec<String> = (0..4000)
            .map(|_| {
                let mut t = String::new();
                jsonish(&mut r, 0, &mut t);
                t
            })
            .collect();
        for depth in [62, 63, 64, 65] {
            texts.push(format!("{}{}", "[{\"a\":".repeat(depth / 2), "}]".repeat(depth / 2)));
            texts.push(format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
        }
        let mut accepted = 0;
        for t in &texts {
            let mut flat = Scan { b: t.as_bytes(), i: 0, depth: 0 };
            let mut calls = Scan { b: t.as_bytes(), i: 0, depth: 0 };
            let (a, b) = (flat.free(), free_by_calls(&mut calls));
            assert_eq!(a, b, "{t}");
            if a.is_some() {
                accepted += 1;
                assert_eq!(flat.i, calls.i, "{t}");
            }
            for start in t.match_indices('"').map(|(i, _)| i).take(8) {
                let mut words = Scan { b: t.as_bytes(), i: start, depth: 0 };
                let mut bytes = Scan { b: t.as_bytes(), i: start, depth: 0 };
                assert_eq!(words.string(), string_bytewise(&mut bytes), "{t} at {start}");
                assert_eq!(words.i, bytes.i);
            }
        }
        assert!(accepted > 1000, "{accepted}");
    }

    /// The floats taken without serde are written by serde within both digit bounds.
    #[test]
    fn short_floats_fit_as_serde_writes_them() {
        let mut r = Rng(0xf10a7);
        let mut taken = 0;
        for _ in 0..20000 {
            let digits = |r: &mut Rng, n: usize| (0..n).map(|_| (b'0' + r.below(10) as u8) as char).collect::<String>();
            let len = 1 + r.below(17);
            let mut int = digits(&mut r, len);
            if r.below(3) == 0 || int.starts_with('0') {
                int = (b'0' + r.below(10) as u8).to_string();
            }
            let (zeros, len) = match r.below(4) {
                0 => (r.below(8), r.below(4)),
                _ => (0, r.below(20)),
            };
            let frac = "0".repeat(zeros) + digits(&mut r, len).as_str();
            let exp = r.below(60) as i32 - 30;
            let mut t = int.clone();
            if !frac.is_empty() {
                t = format!("{t}.{frac}");
            }
            let with_exp = r.below(2) == 0 || frac.is_empty();
            if with_exp {
                t = format!("{t}e{exp}");
            }
            if short_float(int.as_bytes(), frac.as_bytes(), if with_exp { exp } else { 0 }) {
                taken += 1;
                let n: serde_json::Number = serde_json::from_str(&t).unwrap();
                let w = n.to_string();
                assert!(number_text_fits(&w) && grammar_number(&w), "{t} is written {w}");
            }
        }
        assert!(taken > 5000, "{taken}");
    }

    #[test]
    fn what_is_checked_directly() {
        let of = |s: Value| Direct::of(&s).is_some();
        assert!(of(json!({"type": "object", "properties": {"a": {"type": "string", "description": "x"}}, "required": ["a"], "additionalProperties": true})));
        assert!(of(
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}, "additionalProperties": {"type": "integer"}})
        ));
        // Bounds, enums, alternatives, references and a required name not declared are not.
        assert!(!of(json!({"type": "integer", "minimum": 0})));
        assert!(!of(json!({"enum": [1]})));
        assert!(!of(json!({"anyOf": [{"type": "string"}]})));
        assert!(!of(json!({"$ref": "#/$defs/a", "$defs": {"a": {}}})));
        assert!(!of(json!({"type": "object", "properties": {}, "required": ["a"]})));
        assert!(!of(json!({"type": "object", "properties": {"a\"": {}}})));
    }
}
