//! JSON Schema to GBNF, following llama.cpp's `json-schema-to-grammar` conventions: shared
//! primitive rules (`string`, `number`, `space`, ...), a whitespace rule with a bounded count
//! of spaces, and one rule per object property.
//!
//! Supported: `type` (with unions), `properties`/`required`, optional properties in any order
//! (up to [`ANY_ORDER_LIMIT`] of them; beyond that, in declared order), `additionalProperties`,
//! `enum`, `const`, `anyOf`/`oneOf`/`allOf`, `$ref` into the same document (recursion allowed),
//! arrays (`items`, `prefixItems`, `minItems`/`maxItems`), strings (`minLength`/`maxLength`,
//! `pattern`, `format` date/time/date-time/uuid), integers and numbers with ranges.
//!
//! Conventions and limits:
//! - A value's rule carries no trailing whitespace; containers add the `space` rule between
//!   members, so a schema embedded in an arena ends exactly where the parser's JSON does.
//! - Additional properties never reuse a declared key.
//! - `const` and `enum` lists and mappings allow whitespace between their tokens, as
//!   `json.dumps` and templates' `tojson` write them (llama.cpp asks for compact JSON there).
//! - Ranged numbers are written without exponent; their bounds are exact, except that an
//!   exclusive bound is treated as inclusive when both bounds share the integer part.
//! - Large counts (`maxLength: 10000`) nest repetitions instead of unrolling them.
//! - Unknown keywords (`not`, `minProperties`, unknown formats) are ignored, as in llama.cpp.
//!
//! ```
//! use peg_runtime::{gbnf::Grammar, schema};
//! let s = serde_json::json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
//!     "required": ["city"]
//! });
//! let g = Grammar::parse(&schema::to_gbnf(&s).unwrap()).unwrap();
//! assert!(g.accepts(r#"{"city": "Paris", "days": 3}"#));
//! assert!(!g.accepts(r#"{"city": "Paris", "days": 30}"#));
//! assert!(!g.accepts(r#"{"days": 3}"#));
//! ```

// Regex to GBNF for `pattern`: shared with autoparser, not an API of its own.
#[doc(hidden)]
pub mod regex;

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};
use crate::gbnf::{GrammarBuilder, escape_literal, repetition};

/// Optional properties beyond this count are accepted in declared order only (any order
/// needs one rule per subset of the remaining properties).
///
/// ```
/// use peg_runtime::{gbnf::Grammar, schema::{to_gbnf, ANY_ORDER_LIMIT}};
/// let grammar = |n: usize| {
///     let props: serde_json::Map<_, _> = (0..n).map(|i| (format!("p{i}"), serde_json::json!({"type": "integer"}))).collect();
///     Grammar::parse(&to_gbnf(&serde_json::json!({"type": "object", "properties": props})).unwrap()).unwrap()
/// };
/// let reversed = r#"{"p1": 1, "p0": 0}"#;
/// assert!(grammar(ANY_ORDER_LIMIT).accepts(reversed));
/// assert!(!grammar(ANY_ORDER_LIMIT + 1).accepts(reversed));
/// ```
pub const ANY_ORDER_LIMIT: usize = 4;

/// Nesting depth past which a schema is rejected (guards the stack against hostile schemas).
const MAX_DEPTH: usize = 128;

/// Largest magnitude written as a digit range; wider integer bounds count as unbounded.
const MAX_EXACT: u64 = 9_999_999_999_999_999;

fn schema_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Schema, msg)
}

/// The JSON type a `type` name means: a JSON Schema type, or the Python-style name tool
/// schemas often carry instead (`float`, `int`, `dict`, `list`, `bool`, `str`). `None` for any
/// other name: such a value is unconstrained, never an error.
///
/// ```
/// use peg_runtime::schema::json_type;
/// assert_eq!(json_type("float"), Some("number"));
/// assert_eq!(json_type("integer"), Some("integer"));
/// assert_eq!(json_type("tensor"), None);
/// ```
#[doc(hidden)]
pub fn json_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "string" | "str" | "text" => "string",
        "integer" | "int" | "long" => "integer",
        "number" | "float" | "double" | "decimal" => "number",
        "boolean" | "bool" => "boolean",
        "object" | "dict" | "map" | "mapping" => "object",
        "array" | "list" | "tuple" => "array",
        "null" | "none" | "None" | "NoneType" => "null",
        _ => return None,
    })
}

/// What an argument schema admits, by kind of value: strings, `null`, anything else (numbers,
/// booleans, lists, mappings). The one reading of "is this argument a string" that the chat
/// mapper, the generated grammars and `chat_peg!` share. A schema that says nothing (no `type`,
/// `enum`, `const` or union) admits nothing here: its values are read as JSON. An unknown type
/// name admits anything.
///
/// ```
/// use peg_runtime::schema::Admits;
/// use serde_json::json;
/// assert!(Admits::of(&json!({"type": ["string", "null"]})).string);
/// assert!(Admits::of(&json!({"enum": ["a", "b"]})).only_strings());
/// assert!(!Admits::of(&json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})).only_strings());
/// assert!(Admits::of(&json!({"description": "x"})).says_nothing());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[doc(hidden)]
pub struct Admits {
    /// Strings.
    pub string: bool,
    /// `null`.
    pub null: bool,
    /// Numbers, booleans, lists or mappings.
    pub other: bool,
}

impl Admits {
    /// Reads `type` (a name or a list of names), else `const`/`enum` values, else the branches
    /// of `anyOf`/`oneOf`.
    pub fn of(schema: &Value) -> Admits {
        let mut a = Admits::default();
        let mut ty = |t: &Value| match t.as_str().map(json_type) {
            Some(Some("string")) => a.string = true,
            Some(Some("null")) => a.null = true,
            Some(Some(_)) => a.other = true,
            Some(None) => (a.string, a.null, a.other) = (true, true, true),
            None => {}
        };
        match schema.get("type") {
            Some(Value::Array(ts)) => ts.iter().for_each(&mut ty),
            Some(t) => ty(t),
            None => {
                let literals = match (schema.get("const"), schema.get("enum")) {
                    (Some(c), _) => std::slice::from_ref(c),
                    (None, Some(Value::Array(e))) => e.as_slice(),
                    _ => &[],
                };
                for v in literals {
                    match v {
                        Value::String(_) => a.string = true,
                        Value::Null => a.null = true,
                        _ => a.other = true,
                    }
                }
                for key in ["anyOf", "oneOf"] {
                    for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
                        let b = Admits::of(branch);
                        (a.string, a.null, a.other) = (a.string || b.string, a.null || b.null, a.other || b.other);
                    }
                }
            }
        }
        a
    }

    /// Strings and perhaps `null`, nothing else: a raw value is text (`null` aside).
    pub fn only_strings(self) -> bool {
        self.string && !self.other
    }

    /// The schema types nothing.
    pub fn says_nothing(self) -> bool {
        !(self.string || self.null || self.other)
    }
}

/// A complete grammar whose `root` accepts JSON instances of `schema`. The result is checked
/// with [`Grammar::parse`](crate::gbnf::Grammar::parse).
///
/// ```
/// use peg_runtime::{gbnf::Grammar, schema::to_gbnf};
/// let gbnf = to_gbnf(&serde_json::json!({"enum": ["celsius", "fahrenheit"]})).unwrap();
/// let g = Grammar::parse(&gbnf).unwrap();
/// assert!(g.accepts(r#""celsius""#) && !g.accepts(r#""kelvin""#));
/// let err = to_gbnf(&serde_json::json!({"$ref": "#/missing"})).unwrap_err();
/// assert_eq!(err.kind(), peg_runtime::ErrorKind::Schema);
/// ```
pub fn to_gbnf(schema: &Value) -> Result<String, Error> {
    let mut b = GrammarBuilder::new();
    let root = b.reserve("root");
    let mut conv = SchemaConverter::new(&mut b);
    let name = conv.add("root-value", schema)?;
    // llama.cpp's convention: trailing whitespace after the document.
    let sp = conv.space();
    b.define(&root, &format!("{name} {sp}"));
    let text = b.to_gbnf();
    // `$ref` cycles that consume nothing (`a -> b -> a`, `anyOf: [{$ref: "#"}]`) become left
    // recursion, which GBNF forbids.
    crate::gbnf::Grammar::parse(&text).map_err(|e| schema_err("the schema has no valid grammar").with_source(e))?;
    Ok(text)
}

/// A raw-text rule for a string schema (see [`SchemaConverter::add_raw`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawRule {
    /// The rule name.
    pub name: String,
    /// Every character the rule can produce.
    pub alphabet: CharClass,
}

/// Adds rules for JSON schemas to a [`GrammarBuilder`]. Primitive rules are shared between
/// schemas; `$ref`s resolve against the schema passed to [`add`](SchemaConverter::add).
pub(crate) struct SchemaConverter<'b> {
    b: &'b mut GrammarBuilder,
    doc: Value,
    refs: HashMap<String, String>,
    depth: usize,
    /// `value`, `object`, `array` rule names once created.
    values: Vec<String>,
}

fn json_literal(v: &Value) -> String {
    serde_json::to_string(v).expect("JSON values serialize")
}

fn get_u32(s: &Map<String, Value>, key: &str) -> Option<u32> {
    s.get(key).and_then(Value::as_u64).map(|n| n.min(u32::MAX as u64) as u32)
}

/// Decimal strings without leading zeros in `lo..=hi`, as GBNF alternatives.
fn uint_range(lo: u64, hi: u64) -> Vec<String> {
    if lo > hi {
        return Vec::new();
    }
    let (ls, hs) = (lo.to_string(), hi.to_string());
    let mut alts = Vec::new();
    let mut len = ls.len();
    while len <= hs.len() {
        let floor = if len == 1 { 0 } else { 10u64.pow(len as u32 - 1) };
        let ceil = 10u64.checked_pow(len as u32).map_or(u64::MAX, |x| x - 1);
        let a = lo.max(floor);
        let b = hi.min(ceil);
        if a == floor && b == ceil && len > 1 {
            // Merge the run of complete lengths into one repetition.
            let mut last = len;
            while last < hs.len() && hi >= 10u64.checked_pow(last as u32 + 1).map_or(u64::MAX, |x| x - 1) {
                last += 1;
            }
            alts.push(format!("[1-9] {}", repetition("[0-9]", len as u32 - 1, Some(last as u32 - 1))));
            len = last + 1;
            continue;
        }
        alts.extend(same_len(a.to_string().as_bytes(), b.to_string().as_bytes()));
        len += 1;
    }
    alts
}

fn digit_class(a: u8, b: u8) -> String {
    if a == b { format!("\"{}\"", a as char) } else { format!("[{}-{}]", a as char, b as char) }
}

fn group(alts: Vec<String>) -> String {
    if alts.len() == 1 { alts.into_iter().next().expect("one") } else { format!("({})", alts.join(" | ")) }
}

/// Digit strings of equal length between `a` and `b` inclusive.
fn same_len(a: &[u8], b: &[u8]) -> Vec<String> {
    let n = a.len();
    if n == 0 {
        return vec!["\"\"".to_owned()];
    }
    if n == 1 {
        return vec![digit_class(a[0], b[0])];
    }
    if a[0] == b[0] {
        let rest = group(same_len(&a[1..], &b[1..]));
        return vec![format!("\"{}\" {rest}", a[0] as char)];
    }
    let all = |s: &[u8], d: u8| s.iter().all(|&c| c == d);
    let tail = |k: usize| repetition("[0-9]", k as u32, Some(k as u32));
    let mut alts = Vec::new();
    let mut first = a[0];
    if !all(&a[1..], b'0') {
        let nines = vec![b'9'; n - 1];
        alts.push(format!("\"{}\" {}", a[0] as char, group(same_len(&a[1..], &nines))));
        first += 1;
    }
    let mut last = b[0];
    if !all(&b[1..], b'9') {
        let zeros = vec![b'0'; n - 1];
        alts.push(format!("\"{}\" {}", b[0] as char, group(same_len(&zeros, &b[1..]))));
        last -= 1;
    }
    if first <= last {
        alts.push(format!("{} {}", digit_class(first, last), tail(n - 1)));
    }
    alts
}

/// Integers in the range (either side may be open), without trailing space.
fn int_range(lo: Option<i64>, hi: Option<i64>) -> String {
    let mut alts = Vec::new();
    if hi.is_none_or(|h| h >= 0) {
        let a = lo.map_or(0, |l| l.max(0) as u64);
        let b = hi.map_or(MAX_EXACT, |h| h as u64);
        alts.extend(uint_range(a, b));
    }
    if lo.is_none_or(|l| l < 0) {
        let a = hi.map_or(1, |h| if h < 0 { h.unsigned_abs() } else { 1 });
        let b = lo.map_or(MAX_EXACT, |l| l.unsigned_abs());
        let neg = uint_range(a, b);
        if !neg.is_empty() {
            alts.push(format!("\"-\" {}", group(neg)));
        }
    }
    if alts.is_empty() { "[]".to_owned() } else { group(alts) }
}

/// A non-negative decimal bound: integer part and fraction digits without trailing zeros.
#[derive(Debug, Clone, PartialEq)]
struct Dec {
    int: u64,
    frac: Vec<u8>,
}

impl Dec {
    /// The magnitude of `v`; `None` past the exactly written range.
    fn of(v: f64) -> Option<Dec> {
        let v = v.abs();
        if !v.is_finite() || v > MAX_EXACT as f64 {
            return None;
        }
        let text = format!("{v}");
        let (i, f) = text.split_once('.').unwrap_or((&text, ""));
        let frac: Vec<u8> = f.trim_end_matches('0').bytes().collect();
        Some(Dec { int: i.parse().ok()?, frac })
    }

    fn le(&self, other: &Dec) -> bool {
        (self.int, &self.frac) <= (other.int, &other.frac)
    }
}

fn digit_span(a: u8, b: u8) -> Option<String> {
    (a <= b).then(|| digit_class(a, b))
}

/// Fraction digit strings (at least one digit) whose zero-padded value is at least `d`.
fn frac_ge(d: &[u8]) -> String {
    match d {
        [] => "[0-9]+".to_owned(),
        [x] => format!("{} [0-9]*", digit_class(*x, b'9')),
        [x, rest @ ..] => {
            let mut alts = Vec::new();
            if let Some(c) = digit_span(x + 1, b'9') {
                alts.push(format!("{c} [0-9]*"));
            }
            alts.push(format!("\"{}\" {}", *x as char, frac_ge(rest)));
            group(alts)
        }
    }
}

/// Fraction digit strings (at least one digit) whose zero-padded value is at most `d`.
fn frac_le(d: &[u8]) -> String {
    match d {
        [] => "\"0\"+".to_owned(),
        [x, rest @ ..] => {
            let mut alts = Vec::new();
            if *x > b'0' {
                alts.push(format!("{} [0-9]*", digit_span(b'0', x - 1).expect("x > 0")));
            }
            if rest.is_empty() {
                alts.push(format!("\"{}\" \"0\"*", *x as char));
            } else {
                alts.push(format!("\"{}\" ({})?", *x as char, frac_le(rest)));
            }
            group(alts)
        }
    }
}

/// Fraction digit strings (at least one digit) whose zero-padded value exceeds `d`.
fn frac_gt(d: &[u8]) -> String {
    match d {
        [] => "\"0\"* [1-9] [0-9]*".to_owned(),
        [x, rest @ ..] => {
            let mut alts = Vec::new();
            if let Some(c) = digit_span(x + 1, b'9') {
                alts.push(format!("{c} [0-9]*"));
            }
            alts.push(format!("\"{}\" {}", *x as char, frac_gt(rest)));
            group(alts)
        }
    }
}

/// Fraction digit strings (at least one digit) whose zero-padded value is below `d`
/// (`None` when there are none, i.e. `d` is zero).
fn frac_lt(d: &[u8]) -> Option<String> {
    let [x, rest @ ..] = d else { return None };
    let mut alts = Vec::new();
    if *x > b'0' {
        alts.push(format!("{} [0-9]*", digit_span(b'0', x - 1).expect("x > 0")));
    }
    if let Some(r) = frac_lt(rest) {
        alts.push(format!("\"{}\" ({r})?", *x as char));
    }
    (!alts.is_empty()).then(|| group(alts))
}

/// Fraction digit strings (at least one digit) between `a` and `b` (zero-padded, `a <= b`).
fn frac_between(a: &[u8], b: &[u8]) -> String {
    match (a, b) {
        ([], _) => frac_le(b),
        (_, []) => "[]".to_owned(), // a > 0 = b: unreachable for ordered bounds
        ([x, ar @ ..], [y, br @ ..]) if x == y => {
            if ar.is_empty() {
                let inner = if br.is_empty() { "\"0\"+".to_owned() } else { frac_le(br) };
                format!("\"{}\" ({inner})?", *x as char)
            } else {
                format!("\"{}\" {}", *x as char, frac_between(ar, br))
            }
        }
        ([x, ar @ ..], [y, br @ ..]) => {
            let mut alts = Vec::new();
            alts.push(if ar.is_empty() { format!("\"{}\" [0-9]*", *x as char) } else { format!("\"{}\" {}", *x as char, frac_ge(ar)) });
            if let Some(c) = digit_span(x + 1, y.saturating_sub(1)).filter(|_| *y > 0) {
                alts.push(format!("{c} [0-9]*"));
            }
            alts.push(if br.is_empty() { format!("\"{}\" \"0\"*", *y as char) } else { format!("\"{}\" ({})?", *y as char, frac_le(br)) });
            group(alts)
        }
    }
}

/// Decimal magnitudes `m` (no sign, no exponent) above `lo` and below `hi` (open when
/// `None`); the flags make a bound exclusive. With both bounds in the same integer, an
/// exclusive bound is treated as inclusive.
fn magnitude_range(lo: &Dec, lo_excl: bool, hi: Option<(&Dec, bool)>) -> Vec<String> {
    let any_frac = "(\".\" [0-9]{1,16})?";
    let mut alts = Vec::new();
    let low_end = |d: &Dec| match (d.frac.is_empty(), lo_excl) {
        (true, false) => format!("\"{}\" {any_frac}", d.int),
        (false, false) => format!("\"{}\" \".\" {}", d.int, frac_ge(&d.frac)),
        (_, true) => format!("\"{}\" \".\" {}", d.int, frac_gt(&d.frac)),
    };
    let high_end = |d: &Dec, excl: bool| match (d.frac.is_empty(), excl) {
        (true, true) => None,
        (_, true) => Some(format!("\"{}\" (\".\" {})?", d.int, frac_lt(&d.frac).expect("non-zero fraction"))),
        (_, false) => Some(format!("\"{}\" (\".\" {})?", d.int, frac_le(&d.frac))),
    };
    match hi {
        None => {
            alts.push(low_end(lo));
            let ints = uint_range(lo.int + 1, MAX_EXACT);
            if !ints.is_empty() {
                alts.push(format!("{} {any_frac}", group(ints)));
            }
        }
        Some((hi, _)) if !lo.le(hi) => {}
        Some((hi, _)) if hi.int == lo.int => {
            let f = if lo.frac.is_empty() { format!("(\".\" {})?", frac_le(&hi.frac)) } else { format!("\".\" {}", frac_between(&lo.frac, &hi.frac)) };
            alts.push(format!("\"{}\" {f}", lo.int));
        }
        Some((hi, hi_excl)) => {
            alts.push(low_end(lo));
            if hi.int > lo.int + 1 {
                alts.push(format!("{} {any_frac}", group(uint_range(lo.int + 1, hi.int - 1))));
            }
            alts.extend(high_end(hi, hi_excl));
        }
    }
    alts
}

impl<'b> SchemaConverter<'b> {
    /// A converter adding rules to `b`.
    pub fn new(b: &'b mut GrammarBuilder) -> SchemaConverter<'b> {
        SchemaConverter { b, doc: Value::Null, refs: HashMap::new(), depth: 0, values: Vec::new() }
    }

    /// Adds rules for `schema` (a complete document: `$ref`s resolve against it) and returns
    /// the name of the rule accepting its instances, followed by optional whitespace.
    pub fn add(&mut self, name: &str, schema: &Value) -> Result<String, Error> {
        self.doc = schema.clone();
        self.refs.clear();
        self.depth = 0;
        let body = self.visit(schema, name)?;
        Ok(self.rule(name, &body))
    }

    /// For `raw` string values (written without quotes or escapes): a rule for the string's
    /// text, or `None` when the schema does not constrain the text (or only with a pattern
    /// containing `.*`), in which case the caller's own grammar for the text should be used.
    /// Non-string schemas get their normal JSON rule.
    pub fn add_raw(&mut self, name: &str, schema: &Value) -> Result<Option<RawRule>, Error> {
        self.doc = schema.clone();
        self.refs.clear();
        self.depth = 0;
        let resolved = self.resolve_refs(schema)?;
        let Some(obj) = resolved.as_object() else { return Ok(None) };
        let is_string = match obj.get("type") {
            Some(Value::String(t)) => t == "string",
            None => !obj.contains_key("properties") && !obj.contains_key("items"),
            _ => false,
        };
        let literals: Option<Vec<&Value>> = match (obj.get("const"), obj.get("enum")) {
            (Some(c), _) => Some(vec![c]),
            (None, Some(Value::Array(e))) => Some(e.iter().collect()),
            _ => None,
        };
        if let Some(lits) = literals
            && lits.iter().all(|v| v.is_string())
            && !lits.is_empty()
        {
            let mut alphabet = Vec::new();
            let alts: Vec<String> = lits
                .iter()
                .map(|v| {
                    let s = v.as_str().expect("checked");
                    alphabet.extend(s.chars().map(|c| (c, c)));
                    escape_literal(s)
                })
                .collect();
            let name = self.rule(name, &alts.join(" | "));
            return Ok(Some(RawRule { name, alphabet: CharClass::from_ranges(alphabet, false) }));
        }
        if !is_string || obj.contains_key("properties") || obj.contains_key("items") {
            let n = self.add(name, schema)?;
            // Scalars cannot contain markup delimiters; objects and arrays hold strings that can.
            let scalar = matches!(obj.get("type").and_then(Value::as_str), Some("integer" | "number" | "boolean" | "null"));
            let alphabet = if scalar {
                let ranges = vec![('0', '9'), ('a', 'z'), ('A', 'Z'), ('-', '-'), ('+', '+'), ('.', '.'), (' ', ' '), ('\t', '\t'), ('\n', '\n')];
                CharClass::from_ranges(ranges, false)
            } else {
                CharClass::from_ranges(vec![], true)
            };
            return Ok(Some(RawRule { name: n, alphabet }));
        }
        if let Some(Value::String(p)) = obj.get("pattern") {
            let pat = regex::parse(p)?;
            if !pat.anchored_start || !pat.anchored_end || regex::has_dot_star(&pat.regex) {
                return Ok(None);
            }
            let mut alphabet = Vec::new();
            regex::alphabet(&pat.regex, &mut alphabet);
            let body = regex::to_gbnf(&pat.regex, false);
            let name = self.rule(name, &body);
            return Ok(Some(RawRule { name, alphabet: CharClass::from_ranges(alphabet, false) }));
        }
        if let Some(Value::String(f)) = obj.get("format")
            && let Some(rule) = self.format_rule(f)
        {
            let alphabet =
                CharClass::from_ranges(vec![('0', '9'), ('a', 'f'), ('A', 'F'), ('-', '-'), (':', ':'), ('.', '.'), ('T', 'T'), ('Z', 'Z'), ('+', '+')], false);
            let name = self.rule(name, &rule);
            return Ok(Some(RawRule { name, alphabet }));
        }
        Ok(None)
    }

    /// A rule for `body`: an existing rule with the same body is reused (identical
    /// sub-schemas across tools share rules), and a body that is just a rule name is that name.
    fn rule(&mut self, name: &str, body: &str) -> String {
        if !body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return body.to_owned();
        }
        let body = if body.starts_with('(') && body.ends_with(')') && regex::balanced_group(body) { &body[1..body.len() - 1] } else { body };
        self.b.add_shared(name, body)
    }

    // ---- primitives ----

    fn space(&mut self) -> String {
        self.b.add_rule("space", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}")
    }

    fn prim(&mut self, which: &str) -> String {
        match which {
            "boolean" => self.b.add_rule("boolean", "\"true\" | \"false\""),
            "null" => self.b.add_rule("null", "\"null\""),
            "char" => self.b.add_rule("char", &format!(r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | {})"#, crate::gbnf::JSON_UNICODE_ESCAPE)),
            "string" => {
                let c = self.prim("char");
                self.b.add_rule("string", &format!("\"\\\"\" {c}* \"\\\"\""))
            }
            "integral-part" => self.b.add_rule("integral-part", "[0] | [1-9] [0-9]{0,15}"),
            "decimal-part" => self.b.add_rule("decimal-part", "[0-9]{1,16}"),
            "number" => {
                let ip = self.prim("integral-part");
                let dp = self.prim("decimal-part");
                // Exponent digits may lead with zeros (`1.5e-05`, as Python's json writes it);
                // two others at most, so every number is a double (readers refuse `1e999`).
                self.b.add_rule("number", &format!("(\"-\"? {ip}) (\".\" {dp})? ([eE] [-+]? \"0\"{{0,2}} [0-9]{{1,2}})?"))
            }
            "integer" => {
                let ip = self.prim("integral-part");
                self.b.add_rule("integer", &format!("\"-\"? {ip}"))
            }
            _ => unreachable!("unknown primitive {which}"),
        }
    }

    /// The recursive primitives `value`, `object`, `array` (created together, once).
    fn value(&mut self, which: &str) -> String {
        if let (Some(v), Some(o), Some(a)) = (self.b.memo.get("schema:value"), self.b.memo.get("schema:object"), self.b.memo.get("schema:array")) {
            self.values = vec![v.clone(), o.clone(), a.clone()];
        }
        if self.values.is_empty() {
            let sp = self.space();
            let v = self.b.reserve("value");
            let o = self.b.reserve("object");
            let a = self.b.reserve("array");
            let (s, n, bo, nu) = (self.prim("string"), self.prim("number"), self.prim("boolean"), self.prim("null"));
            self.b.define(&v, &format!("{o} | {a} | {s} | {n} | {bo} | {nu}"));
            self.b.define(&o, &format!("\"{{\" {sp} ({s} {sp} \":\" {sp} {v} {sp} (\",\" {sp} {s} {sp} \":\" {sp} {v} {sp})*)? \"}}\""));
            self.b.define(&a, &format!("\"[\" {sp} ({v} {sp} (\",\" {sp} {v} {sp})*)? \"]\""));
            self.b.memo.insert("schema:value".into(), v.clone());
            self.b.memo.insert("schema:object".into(), o.clone());
            self.b.memo.insert("schema:array".into(), a.clone());
            self.values = vec![v, o, a];
        }
        match which {
            "object" => self.values[1].clone(),
            "array" => self.values[2].clone(),
            _ => self.values[0].clone(),
        }
    }

    /// A JSON string (with trailing space) that is none of `keys`, so additional properties
    /// cannot repeat declared ones. Keys needing escapes fall back to any string.
    fn not_strings(&mut self, name: &str, keys: &[&str]) -> String {
        if keys.is_empty() || keys.iter().any(|k| k.chars().any(|c| c == '"' || c == '\\' || (c as u32) < 0x20)) {
            return self.prim("string");
        }
        #[derive(Default)]
        struct Trie {
            children: Vec<(char, Trie)>,
            end: bool,
        }
        let mut root = Trie::default();
        for k in keys {
            let mut node = &mut root;
            for c in k.chars() {
                let i = match node.children.iter().position(|(x, _)| *x == c) {
                    Some(i) => i,
                    None => {
                        node.children.push((c, Trie::default()));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[i].1;
            }
            node.end = true;
        }
        let ch = self.prim("char");
        // Strings from this trie node on: follow a key, leave the trie (then anything), or stop
        // where no key ends.
        fn alts(t: &Trie, ch: &str) -> String {
            let mut out = Vec::new();
            for (c, child) in &t.children {
                out.push(format!("{} {}", escape_literal(&c.to_string()), alts(child, ch)).trim_end().to_owned());
            }
            let mut ranges: Vec<(char, char)> = t.children.iter().map(|(c, _)| (*c, *c)).collect();
            ranges.extend([('"', '"'), ('\\', '\\'), ('\0', '\x1f'), ('\x7f', '\x7f')]);
            let leave = crate::gbnf::format_class(&CharClass::from_ranges(ranges, true));
            out.push(format!("({leave} | [\\\\] ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{{4}})) {ch}*"));
            let body = out.join(" | ");
            if t.end { format!("({body})") } else { format!("({body})?") }
        }
        let body = format!("\"\\\"\" {} \"\\\"\"", alts(&root, &ch));
        self.rule(&format!("{name}-additional-key"), &body)
    }

    fn format_rule(&mut self, format: &str) -> Option<String> {
        let date = r#"[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [1-2] [0-9] | "3" [0-1])"#;
        let time = r#"([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+\x2D] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])"#;
        Some(match format {
            "date" => self.b.add_rule("date", date),
            "time" => self.b.add_rule("time", time),
            "date-time" => {
                let d = self.b.add_rule("date", date);
                let t = self.b.add_rule("time", time);
                self.b.add_rule("date-time", &format!("{d} \"T\" {t}"))
            }
            "uuid" => self.b.add_rule("uuid", r#"[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}"#),
            _ => return None,
        })
    }

    // ---- schema walk ----

    /// Follows `$ref` chains at the top of `schema`.
    fn resolve_refs(&self, schema: &Value) -> Result<Value, Error> {
        let mut cur = schema.clone();
        for _ in 0..64 {
            match cur.get("$ref").and_then(Value::as_str) {
                Some(r) => cur = self.lookup(r)?.clone(),
                None => return Ok(cur),
            }
        }
        Err(schema_err("`$ref` chain is too long or cyclic"))
    }

    fn lookup(&self, reference: &str) -> Result<&Value, Error> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(schema_err(format!("only local `$ref`s are supported, not `{reference}`")));
        };
        if pointer.is_empty() {
            return Ok(&self.doc);
        }
        let decoded: String = pointer.replace("%25", "%").replace("%22", "\"");
        self.doc.pointer(&decoded).ok_or_else(|| schema_err(format!("`$ref` `{reference}` points at nothing")))
    }

    /// A GBNF expression for instances of `schema`, each followed by optional whitespace.
    fn visit(&mut self, schema: &Value, name: &str) -> Result<String, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(schema_err("schema nests too deeply"));
        }
        let r = self.visit_inner(schema, name);
        self.depth -= 1;
        r
    }

    fn visit_inner(&mut self, schema: &Value, name: &str) -> Result<String, Error> {
        let obj = match schema {
            Value::Bool(true) => return Ok(self.value("value")),
            Value::Bool(false) => return Err(schema_err(format!("schema `{name}` is `false` and accepts nothing"))),
            Value::Object(o) => o,
            _ => return Err(schema_err(format!("schema `{name}` is not an object"))),
        };
        if let Some(r) = obj.get("$ref") {
            let r = r.as_str().ok_or_else(|| schema_err("`$ref` must be a string"))?.to_owned();
            if let Some(n) = self.refs.get(&r) {
                return Ok(n.clone());
            }
            let target = self.lookup(&r)?.clone();
            // A target without `$ref`s inside means the same in every document: share it.
            let text = json_literal(&target);
            let shared_key = (!text.contains("\"$ref\"")).then(|| format!("schema-ref:{text}"));
            if let Some(n) = shared_key.as_ref().and_then(|k| self.b.memo.get(k)) {
                return Ok(n.clone());
            }
            let base = r.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or("ref").to_owned();
            let rule = self.b.reserve(&format!("ref-{base}"));
            self.refs.insert(r, rule.clone());
            let body = self.visit(&target, &rule)?;
            self.b.define(&rule, &body);
            if let Some(k) = shared_key {
                self.b.memo.insert(k, rule.clone());
            }
            return Ok(rule);
        }
        if let Some(c) = obj.get("const") {
            return Ok(self.constant(c));
        }
        if let Some(e) = obj.get("enum") {
            let e = e.as_array().ok_or_else(|| schema_err("`enum` must be an array"))?;
            if e.is_empty() {
                return Err(schema_err(format!("`enum` of `{name}` is empty")));
            }
            let alts: Vec<String> = e.iter().map(|v| self.constant(v)).collect();
            return Ok(group(alts));
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(list) = obj.get(key) {
                let list = list.as_array().ok_or_else(|| schema_err(format!("`{key}` must be an array")))?;
                if list.is_empty() {
                    return Err(schema_err(format!("`{key}` of `{name}` is empty")));
                }
                let mut alts = Vec::new();
                for (i, s) in list.iter().enumerate() {
                    let merged = self.merge_siblings(obj, key, s);
                    let body = self.visit(&merged, &format!("{name}-{i}"))?;
                    alts.push(self.rule(&format!("{name}-{i}"), &body));
                }
                return Ok(group(alts));
            }
        }
        if let Some(list) = obj.get("allOf") {
            let list = list.as_array().ok_or_else(|| schema_err("`allOf` must be an array"))?;
            let mut merged = obj.clone();
            merged.remove("allOf");
            let mut merged = Value::Object(merged);
            for s in list {
                let s = self.resolve_refs(s)?;
                merged = merge_schemas(&merged, &s);
            }
            return self.visit(&merged, name);
        }
        match obj.get("type") {
            Some(Value::Array(types)) => {
                if types.is_empty() {
                    return Err(schema_err(format!("`type` of `{name}` is empty")));
                }
                let mut alts = Vec::new();
                for t in types {
                    let mut one = obj.clone();
                    one.insert("type".into(), t.clone());
                    let tn = t.as_str().unwrap_or("t");
                    let body = self.visit(&Value::Object(one), &format!("{name}-{tn}"))?;
                    alts.push(self.rule(&format!("{name}-{tn}"), &body));
                }
                Ok(group(alts))
            }
            Some(Value::String(t)) => self.typed(obj, t, name),
            Some(_) => Err(schema_err(format!("`type` of `{name}` must be a string or an array"))),
            None => {
                if obj.contains_key("properties") || obj.contains_key("additionalProperties") {
                    self.typed(obj, "object", name)
                } else if obj.contains_key("items") || obj.contains_key("prefixItems") {
                    self.typed(obj, "array", name)
                } else if obj.contains_key("pattern") || obj.contains_key("format") || obj.contains_key("minLength") || obj.contains_key("maxLength") {
                    self.typed(obj, "string", name)
                } else {
                    Ok(self.value("value"))
                }
            }
        }
    }

    /// `v` exactly, with optional whitespace between the tokens of a list or mapping (as
    /// `json.dumps` and the templates' `tojson` write them).
    fn constant(&mut self, v: &Value) -> String {
        let (open, close) = match v {
            Value::Array(items) if !items.is_empty() => ("[", "]"),
            Value::Object(m) if !m.is_empty() => ("{", "}"),
            _ => return escape_literal(&json_literal(v)),
        };
        let sp = self.space();
        let parts: Vec<String> = match v {
            Value::Array(items) => items.iter().map(|i| self.constant(i)).collect(),
            Value::Object(m) => {
                m.iter().map(|(k, v)| format!("{} {sp} \":\" {sp} {}", escape_literal(&json_literal(&Value::String(k.clone()))), self.constant(v))).collect()
            }
            _ => Vec::new(),
        };
        format!("\"{open}\" {sp} {} {sp} \"{close}\"", parts.join(&format!(" {sp} \",\" {sp} ")))
    }

    /// `{type: object, anyOf: [...]}`: keys beside `anyOf` apply to every alternative.
    fn merge_siblings(&self, parent: &Map<String, Value>, key: &str, alt: &Value) -> Value {
        let mut base = parent.clone();
        base.remove(key);
        if base.is_empty() {
            return alt.clone();
        }
        match self.resolve_refs(alt) {
            Ok(a) => merge_schemas(&Value::Object(base), &a),
            Err(_) => alt.clone(),
        }
    }

    fn typed(&mut self, obj: &Map<String, Value>, t: &str, name: &str) -> Result<String, Error> {
        match t {
            "null" => Ok(self.prim("null")),
            "boolean" => Ok(self.prim("boolean")),
            "string" => self.string(obj, name),
            "integer" => {
                let lo = bound(obj, "minimum", "exclusiveMinimum", true);
                let hi = bound(obj, "maximum", "exclusiveMaximum", false);
                let clamp = |v: f64, up: bool| -> Option<i64> {
                    let v = if up { v.ceil() } else { v.floor() };
                    (v.abs() <= MAX_EXACT as f64).then_some(v as i64)
                };
                let (lo, hi) = (lo.and_then(|v| clamp(v, true)), hi.and_then(|v| clamp(v, false)));
                if lo.is_none() && hi.is_none() {
                    return Ok(self.prim("integer"));
                }
                if let (Some(l), Some(h)) = (lo, hi)
                    && l > h
                {
                    return Err(schema_err(format!("the range of `{name}` is empty")));
                }
                Ok(int_range(lo, hi))
            }
            "number" => {
                // Bounds too large to write exactly leave that side open.
                let lo = num_bound(obj, "minimum", "exclusiveMinimum").filter(|(v, _)| Dec::of(*v).is_some());
                let hi = num_bound(obj, "maximum", "exclusiveMaximum").filter(|(v, _)| Dec::of(*v).is_some());
                if lo.is_none() && hi.is_none() {
                    return Ok(self.prim("number"));
                }
                let zero = Dec { int: 0, frac: Vec::new() };
                let mut alts = Vec::new();
                // Non-negative numbers, unless the upper bound excludes them all.
                if hi.is_none_or(|(h, x)| h > 0.0 || (h == 0.0 && !x)) {
                    let (a, ax) = match lo {
                        Some((l, x)) if l >= 0.0 => (Dec::of(l).expect("filtered"), x),
                        _ => (zero.clone(), false),
                    };
                    let b = hi.map(|(h, x)| (Dec::of(h).expect("filtered"), x));
                    alts.extend(magnitude_range(&a, ax, b.as_ref().map(|(d, x)| (d, *x))));
                }
                // Negative numbers: the magnitude lies between |hi| (or 0) and |lo|.
                if lo.is_none_or(|(l, _)| l < 0.0) {
                    let (a, ax) = match hi {
                        Some((h, x)) if h < 0.0 => (Dec::of(h).expect("filtered"), x),
                        _ => (zero.clone(), false),
                    };
                    let b = lo.map(|(l, x)| (Dec::of(l).expect("filtered"), x));
                    let neg = magnitude_range(&a, ax, b.as_ref().map(|(d, x)| (d, *x)));
                    if !neg.is_empty() {
                        alts.push(format!("\"-\" {}", group(neg)));
                    }
                }
                let (lo, hi) = (lo.map(|b| b.0), hi.map(|b| b.0));
                if alts.is_empty() || lo.zip(hi).is_some_and(|(l, h)| l > h) {
                    return Err(schema_err(format!("the range of `{name}` is empty")));
                }
                Ok(group(alts))
            }
            "object" => self.object(obj, name),
            "array" => self.array(obj, name),
            // Another spelling of a JSON type, or an unknown one: any value.
            other => match json_type(other) {
                Some(t) => self.typed(obj, t, name),
                None => Ok(self.value("value")),
            },
        }
    }

    fn string(&mut self, obj: &Map<String, Value>, name: &str) -> Result<String, Error> {
        let q = "\"\\\"\"";
        if let Some(Value::String(f)) = obj.get("format")
            && let Some(r) = self.format_rule(f)
        {
            return Ok(format!("{q} {r} {q}"));
        }
        if let Some(p) = obj.get("pattern") {
            let p = p.as_str().ok_or_else(|| schema_err("`pattern` must be a string"))?;
            let pat = regex::parse(p)?;
            let c = self.prim("char");
            let mut body = regex::to_gbnf(&pat.regex, true);
            if !pat.anchored_start {
                body = format!("{c}* {body}");
            }
            if !pat.anchored_end {
                body = format!("{body} {c}*");
            }
            let r = self.rule(&format!("{name}-pattern"), &body);
            return Ok(format!("{q} {r} {q}"));
        }
        let min = get_u32(obj, "minLength").unwrap_or(0);
        let max = get_u32(obj, "maxLength");
        if min == 0 && max.is_none() {
            return Ok(self.prim("string"));
        }
        if max.is_some_and(|m| m < min) {
            return Err(schema_err(format!("`{name}` has maxLength below minLength")));
        }
        let c = self.prim("char");
        Ok(format!("{q} {} {q}", repetition(&c, min, max)))
    }

    fn array(&mut self, obj: &Map<String, Value>, name: &str) -> Result<String, Error> {
        let sp = self.space();
        let prefix = match (obj.get("prefixItems"), obj.get("items")) {
            (Some(Value::Array(p)), _) => Some(p),
            (None, Some(Value::Array(p))) => Some(p),
            _ => None,
        };
        if let Some(items) = prefix {
            let mut parts = Vec::new();
            for (i, s) in items.iter().enumerate() {
                let body = self.visit(s, &format!("{name}-tuple-{i}"))?;
                parts.push(self.rule(&format!("{name}-tuple-{i}"), &body));
            }
            let inner = parts.join(&format!(" {sp} \",\" {sp} "));
            return Ok(format!("\"[\" {sp} {inner} {sp} \"]\""));
        }
        let item = match obj.get("items") {
            Some(Value::Bool(false)) => return Ok(format!("\"[\" {sp} \"]\"")),
            Some(s) => {
                let body = self.visit(s, &format!("{name}-item"))?;
                self.rule(&format!("{name}-item"), &body)
            }
            None => self.value("value"),
        };
        let min = get_u32(obj, "minItems").unwrap_or(0);
        let max = get_u32(obj, "maxItems");
        if max.is_some_and(|m| m < min) {
            return Err(schema_err(format!("`{name}` has maxItems below minItems")));
        }
        let more = format!("(\",\" {sp} {item} {sp})");
        let list = match (min, max) {
            (_, Some(0)) => String::new(),
            (0, max) => format!("({item} {sp} {})?", repetition(&more, 0, max.map(|m| m - 1))),
            (m, max) => format!("{item} {sp} {}", repetition(&more, m - 1, max.map(|x| x - 1))),
        };
        Ok(format!("\"[\" {sp} {list} \"]\""))
    }

    fn object(&mut self, obj: &Map<String, Value>, name: &str) -> Result<String, Error> {
        let sp = self.space();
        let empty = Map::new();
        let props = match obj.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(schema_err(format!("`properties` of `{name}` must be an object"))),
            None => &empty,
        };
        let required: BTreeSet<&str> = obj.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let additional = match obj.get("additionalProperties") {
            None if props.is_empty() => Some(Value::Bool(true)),
            None | Some(Value::Bool(false)) => None,
            Some(s) => Some(s.clone()),
        };
        if props.is_empty() && matches!(additional, Some(Value::Bool(true))) {
            return Ok(self.value("object"));
        }
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (key, s) in props {
            if s == &Value::Bool(false) {
                continue;
            }
            let pname = format!("{name}-{key}");
            let body = self.visit(s, &pname)?;
            let value = self.rule(&pname, &body);
            let kv = self.rule(&format!("{pname}-kv"), &format!("{} {sp} \":\" {sp} {value} {sp}", escape_literal(&json_literal(&Value::String(key.clone())))));
            if required.contains(key.as_str()) {
                req.push(kv);
            } else {
                opt.push(kv);
            }
        }
        for r in &required {
            if !props.contains_key(*r) {
                return Err(schema_err(format!("`{name}` requires `{r}`, which is not among its properties")));
            }
        }
        let add_kv = match &additional {
            None => None,
            Some(s) => {
                let body = self.visit(s, &format!("{name}-additional"))?;
                let v = self.rule(&format!("{name}-additional"), &body);
                let keys: Vec<&str> = props.keys().map(String::as_str).collect();
                let st = self.not_strings(name, &keys);
                Some(self.rule(&format!("{name}-additional-kv"), &format!("{st} {sp} \":\" {sp} {v} {sp}")))
            }
        };
        let comma = format!("\",\" {sp}");
        let mut body = format!("\"{{\" {sp}");
        if !req.is_empty() {
            body.push(' ');
            body.push_str(&req.join(&format!(" {comma} ")));
        }
        let mut tails = Tails { name: name.to_owned(), opt: &opt, add_kv: add_kv.as_deref(), comma: &comma, memo: HashMap::new() };
        let all: Vec<usize> = (0..opt.len()).collect();
        let tail = tails.tail(self, &all, req.is_empty());
        if !tail.is_empty() {
            body.push(' ');
            body.push_str(&tail);
        }
        body.push_str(" \"}\"");
        Ok(body)
    }
}

/// The optional-property and additional-property part of an object, as rules per state.
struct Tails<'a> {
    name: String,
    opt: &'a [String],
    add_kv: Option<&'a str>,
    comma: &'a str,
    memo: HashMap<(Vec<usize>, bool), String>,
}

impl Tails<'_> {
    /// Expression for: any of `remaining` optional properties (each at most once), then
    /// additional properties. `first`: nothing written yet, so no leading comma.
    fn tail(&mut self, conv: &mut SchemaConverter<'_>, remaining: &[usize], first: bool) -> String {
        let key = (remaining.to_vec(), first);
        if let Some(n) = self.memo.get(&key) {
            return n.clone();
        }
        let sep = if first { String::new() } else { format!("{} ", self.comma) };
        let adds = match self.add_kv {
            None => String::new(),
            Some(kv) if first => format!("({kv} ({} {kv})*)?", self.comma),
            Some(kv) => format!("({} {kv})*", self.comma),
        };
        if remaining.is_empty() {
            return adds;
        }
        let any_order = self.opt.len() <= ANY_ORDER_LIMIT;
        if !any_order && !first {
            // Declared order after something was written: a chain of optional members.
            let next = self.tail(conv, &remaining[1..], false);
            let body = format!("({} {})? {next}", self.comma, self.opt[remaining[0]]);
            let rule = conv.rule(&format!("{}-rest", self.name), body.trim_end());
            self.memo.insert(key, rule.clone());
            return rule;
        }
        let mut alts = Vec::new();
        for (pos, &i) in remaining.iter().enumerate() {
            let rest: Vec<usize> = if any_order { remaining.iter().copied().filter(|&j| j != i).collect() } else { remaining[pos + 1..].to_vec() };
            let next = self.tail(conv, &rest, false);
            alts.push(format!("{sep}{} {next}", self.opt[i]).trim_end().to_owned());
        }
        alts.push(if adds.is_empty() { "\"\"".to_owned() } else { adds });
        let body = alts.join(" | ");
        let rule = conv.rule(&format!("{}-rest", self.name), &body);
        self.memo.insert(key, rule.clone());
        rule
    }
}

/// Reads a lower or upper bound, from draft-6 numbers or draft-4 boolean exclusivity.
/// Exclusive integer bounds move by one (numbers use [`num_bound`]).
fn bound(obj: &Map<String, Value>, inclusive: &str, exclusive: &str, lower: bool) -> Option<f64> {
    let integer = obj.get("type").and_then(Value::as_str) == Some("integer");
    let step = if integer { 1.0 } else { 0.0 };
    let shift = |v: f64| if lower { v + step } else { v - step };
    match obj.get(exclusive) {
        Some(Value::Number(n)) => return n.as_f64().map(|v| if integer && v.fract() == 0.0 { shift(v) } else { v }),
        Some(Value::Bool(true)) => return obj.get(inclusive).and_then(Value::as_f64).map(|v| if integer && v.fract() == 0.0 { shift(v) } else { v }),
        _ => {}
    }
    obj.get(inclusive).and_then(Value::as_f64)
}

/// A number bound and whether it is exclusive (draft-6 numbers or draft-4 booleans).
fn num_bound(obj: &Map<String, Value>, inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    match obj.get(exclusive) {
        Some(Value::Number(n)) => n.as_f64().map(|v| (v, true)),
        Some(Value::Bool(true)) => obj.get(inclusive).and_then(Value::as_f64).map(|v| (v, true)),
        _ => obj.get(inclusive).and_then(Value::as_f64).map(|v| (v, false)),
    }
}

/// Merges two schemas for `allOf`: properties and required lists are united, other keys of
/// `b` override those of `a`.
pub(crate) fn merge_schemas(a: &Value, b: &Value) -> Value {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return b.clone() };
    let mut out = a.clone();
    for (k, v) in b {
        match (k.as_str(), out.get_mut(k)) {
            ("properties", Some(Value::Object(existing))) => {
                if let Value::Object(more) = v {
                    for (pk, pv) in more {
                        existing.insert(pk.clone(), pv.clone());
                    }
                }
            }
            ("required", Some(Value::Array(existing))) => {
                if let Value::Array(more) = v {
                    for r in more {
                        if !existing.contains(r) {
                            existing.push(r.clone());
                        }
                    }
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}
