//! The grammar side of tool-argument values written in a syntax other than JSON: a template's
//! own (Gemma 4: `{path:<|"|>a.txt<|"|>,lines:[1,2]}`) or Python literals (LFM2:
//! `{'path': 'a.txt', 'force': True}`). The argument's JSON schema is spelled in that syntax
//! and goes into `constrained(generic value, schema value)`, so generation follows the schema
//! while the parser still reads any value the model could write.
//!
//! Every parser built here accepts a subset of the generic value (the same strings, words,
//! numbers, separators and whitespace), so the grammar never allows text the parser rejects.
//! Where a schema says more than this covers (`allOf`, `not`, keys the syntax cannot spell),
//! the value falls back to the generic one: looser, never wrong.

use peg_runtime::{Builder, Parser};
use serde_json::{Map, Value};

use crate::format::ValueSyntax;

/// Nesting past which values are left to the generic value (this also ends `$ref` cycles).
const MAX_DEPTH: usize = 8;

/// Item counts past which `minItems`/`maxItems` are not spelled out.
const MAX_COUNT: u32 = 256;

/// How a syntax writes the leaves of a value; containers are `{k: v, ...}` and `[v, ...]`.
pub(super) trait Spelling {
    /// A string value; `schema` (one `type: string`) may constrain its text.
    fn string<'b>(&self, b: &'b Builder, schema: Value, name: &str) -> Parser<'b>;
    /// Exactly `text` as a string value; `None` if the syntax cannot write it.
    fn string_text<'b>(&self, b: &'b Builder, text: &str) -> Option<Parser<'b>>;
    /// Exactly `key` as a mapping key; `None` if the syntax cannot write it. Keys are strings
    /// unless said otherwise.
    fn key<'b>(&self, b: &'b Builder, key: &str) -> Option<Parser<'b>> {
        self.string_text(b, key)
    }
    /// Any mapping key.
    fn any_key<'b>(&self, b: &'b Builder) -> Parser<'b> {
        self.string(b, Value::Null, "")
    }
    /// How `true`, `false` or `null` is written.
    fn word(&self, v: &Value) -> &str;
    /// Mapping keys are written sorted.
    fn sorted_keys(&self) -> bool {
        false
    }
    /// The whitespace allowed around brackets, colons and commas.
    fn space<'b>(&self, b: &'b Builder) -> Parser<'b> {
        b.space()
    }
}

/// Builds schema-shaped values in a [`Spelling`].
pub(super) struct LiteralSchema<'a, 'b> {
    pub b: &'b Builder,
    pub spelling: &'a dyn Spelling,
    /// The generic value: the fallback where the schema is not followed.
    pub any: Parser<'b>,
    /// The document `$ref`s resolve against (the tool's parameters).
    pub root: &'a Value,
}

impl<'b> LiteralSchema<'_, 'b> {
    /// The value `schema` allows, spelled in the syntax; `None` when the schema does not
    /// constrain it here (the generic value applies). `name` prefixes grammar rule names.
    pub fn value(&self, schema: &Value, name: &str) -> Option<Parser<'b>> {
        self.schema_value(schema, name, 0)
    }

    fn schema_value(&self, s: &Value, name: &str, depth: usize) -> Option<Parser<'b>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let b = self.b;
        let obj = s.as_object()?;
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            return self.schema_value(self.resolve(r)?, name, depth + 1);
        }
        if let Some(c) = obj.get("const") {
            return self.spell(c, depth);
        }
        if let Some(Value::Array(e)) = obj.get("enum") {
            // Values the syntax cannot spell are left out: the model cannot write them either.
            let alts: Vec<Parser<'b>> = e.iter().filter_map(|v| self.spell(v, depth)).collect();
            return (!alts.is_empty()).then(|| b.choice(alts));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(alts)) = obj.get(key) {
                // Sibling keywords are not merged in: looser, as the note at the top says.
                let ps = alts.iter().enumerate().map(|(i, a)| self.schema_value(a, &format!("{name}-{i}"), depth + 1));
                let ps: Option<Vec<Parser<'b>>> = ps.collect();
                return ps.filter(|ps| !ps.is_empty()).map(|ps| b.choice(ps));
            }
        }
        if obj.contains_key("allOf") {
            return None;
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(obj, t, name, depth),
            Some(Value::Array(ts)) => {
                let ps: Option<Vec<Parser<'b>>> = ts.iter().map(|t| self.typed(obj, t.as_str()?, name, depth)).collect();
                ps.filter(|ps| !ps.is_empty()).map(|ps| b.choice(ps))
            }
            None if obj.contains_key("properties") => self.typed(obj, "object", name, depth),
            None if obj.contains_key("items") || obj.contains_key("prefixItems") => self.typed(obj, "array", name, depth),
            _ => None,
        }
    }

    fn typed(&self, obj: &Map<String, Value>, t: &str, name: &str, depth: usize) -> Option<Parser<'b>> {
        let b = self.b;
        let sp = self.spelling;
        // The schema with this one type, for the JSON-schema rules of strings and numbers.
        let single = || {
            let mut o = obj.clone();
            o.insert("type".into(), Value::String(t.into()));
            Value::Object(o)
        };
        match t {
            "string" => Some(sp.string(b, single(), name)),
            "integer" | "number" => Some(b.schema(b.json_number(), name, single(), false)),
            "boolean" => Some(b.choice([b.literal(sp.word(&Value::Bool(true))), b.literal(sp.word(&Value::Bool(false)))])),
            "null" => Some(b.literal(sp.word(&Value::Null))),
            "object" => self.object(obj, name, depth),
            "array" => self.array(obj, name, depth),
            _ => None,
        }
    }

    /// `{` members `}`: the properties in the order the template writes keys (sorted, or as
    /// declared), each at most once and required ones always, then additional members if the
    /// schema allows them.
    fn object(&self, obj: &Map<String, Value>, name: &str, depth: usize) -> Option<Parser<'b>> {
        let b = self.b;
        let empty = Map::new();
        let props = match obj.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return None,
            None => &empty,
        };
        let additional = match obj.get("additionalProperties") {
            None if props.is_empty() => return None,
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(self.any),
            Some(s) => Some(self.schema_value(s, &format!("{name}-additional"), depth + 1).unwrap_or(self.any)),
        };
        let required: Vec<&str> = obj.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if required.iter().any(|r| !props.contains_key(*r)) {
            return None;
        }
        let mut keys: Vec<&String> = props.keys().filter(|k| props[*k] != Value::Bool(false)).collect();
        if self.spelling.sorted_keys() {
            keys.sort();
        }
        let mut members = Vec::new();
        for key in keys {
            let value = self.schema_value(&props[key], &format!("{name}-{key}"), depth + 1).unwrap_or(self.any);
            members.push((self.spelling.key(b, key)? + self.pair(value), required.contains(&key.as_str())));
        }
        let extra = additional.map(|v| self.spelling.any_key(b) + self.pair(v));
        let sep = || self.sep();
        // `rest[i]`: members i.. after something was written. A rule each, so that the
        // grammar stays linear in the member count.
        let mut rest = vec![match extra {
            Some(m) => b.zero_or_more(sep() + m),
            None => b.eps(),
        }];
        for (i, &(m, req)) in members.iter().enumerate().rev() {
            let this = if req { sep() + m } else { b.optional(sep() + m) };
            let next = *rest.last()?;
            rest.push(b.rule(&self.fresh_rule(&format!("{name}-rest-{i}")), this + next));
        }
        rest.reverse();
        // `first`: members i.. before anything was written: the first member present opens.
        let mut first = match extra {
            Some(m) => b.optional(m + rest[members.len()]),
            None => b.eps(),
        };
        for (i, &(m, req)) in members.iter().enumerate().rev() {
            let opens = m + rest[i + 1];
            first = if req { opens } else { b.choice([opens, first]) };
        }
        Some(b.literal("{") + self.spelling.space(b) + first + self.spelling.space(b) + b.literal("}"))
    }

    /// `base`, or `base` with a number, whichever names no rule yet.
    fn fresh_rule(&self, base: &str) -> String {
        let mut name = base.to_owned();
        let mut n = 1;
        while self.b.has_rule(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        name
    }

    /// `[` items `]`: `prefixItems` in order, then `items` within `minItems`/`maxItems`.
    fn array(&self, obj: &Map<String, Value>, name: &str, depth: usize) -> Option<Parser<'b>> {
        let b = self.b;
        let count = |k: &str| obj.get(k).and_then(Value::as_u64).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let item = match obj.get("items") {
            Some(Value::Bool(false)) => None,
            Some(s) => Some(self.schema_value(s, &format!("{name}-item"), depth + 1).unwrap_or(self.any)),
            None => Some(self.any),
        };
        let sep = || self.sep();
        let body = match obj.get("prefixItems") {
            Some(Value::Array(prefix)) if !prefix.is_empty() => {
                let mut ps = prefix.iter().enumerate().map(|(i, s)| self.schema_value(s, &format!("{name}-{i}"), depth + 1).unwrap_or(self.any));
                let mut body = ps.next()?;
                for p in ps {
                    body = body + sep() + p;
                }
                match item {
                    Some(i) => body + b.zero_or_more(sep() + i),
                    None => body,
                }
            }
            Some(_) => return None,
            None => {
                let item = item?;
                // Past a few hundred items a bound constrains little and costs grammar size.
                let (min, max) = (count("minItems").unwrap_or(0), count("maxItems").filter(|&m| m <= MAX_COUNT));
                if min > MAX_COUNT || max.is_some_and(|m| m < min) {
                    return None;
                }
                if max == Some(0) {
                    b.eps()
                } else {
                    let rest = b.repeat(sep() + item, min.saturating_sub(1), max.map(|m| m - 1));
                    if min == 0 { b.optional(item + rest) } else { item + rest }
                }
            }
        };
        Some(b.literal("[") + self.spelling.space(b) + body + self.spelling.space(b) + b.literal("]"))
    }

    /// `v` spelled exactly, as the syntax writes it; `None` if it cannot.
    fn spell(&self, v: &Value, depth: usize) -> Option<Parser<'b>> {
        let b = self.b;
        let sp = self.spelling;
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match v {
            Value::String(s) => sp.string_text(b, s)?,
            Value::Number(n) => b.literal(&n.to_string()),
            Value::Bool(_) | Value::Null => b.literal(sp.word(v)),
            Value::Array(items) => {
                let parts: Option<Vec<Parser<'b>>> = items.iter().map(|i| self.spell(i, depth + 1)).collect();
                let parts = parts?;
                let mut body = b.eps();
                for (i, p) in parts.into_iter().enumerate() {
                    body = if i == 0 { p } else { body + self.sep() + p };
                }
                b.literal("[") + self.spelling.space(b) + body + self.spelling.space(b) + b.literal("]")
            }
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                if sp.sorted_keys() {
                    entries.sort_by_key(|(k, _)| *k);
                }
                let mut body = b.eps();
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    let member = sp.key(b, k)? + self.pair(self.spell(v, depth + 1)?);
                    body = if i == 0 { member } else { body + self.sep() + member };
                }
                b.literal("{") + self.spelling.space(b) + body + self.spelling.space(b) + b.literal("}")
            }
        })
    }

    /// `: value` after a key, with the generic value's whitespace.
    fn pair(&self, value: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        self.spelling.space(b) + b.literal(":") + self.spelling.space(b) + value
    }

    /// `,` between members or items, with the generic value's whitespace.
    fn sep(&self) -> Parser<'b> {
        let b = self.b;
        self.spelling.space(b) + b.literal(",") + self.spelling.space(b)
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }
}

/// A template's own syntax, as the analysis learned it.
impl Spelling for ValueSyntax {
    fn string<'b>(&self, b: &'b Builder, schema: Value, name: &str) -> Parser<'b> {
        let text = b.until(&self.string_close);
        // Unescaped text is the string itself: the schema's raw rule constrains it.
        let text = if self.string_escapes { text } else { b.schema(text, name, schema, true) };
        b.literal(&self.string_open) + text + b.literal(&self.string_close)
    }

    fn string_text<'b>(&self, b: &'b Builder, text: &str) -> Option<Parser<'b>> {
        let needs_escape = self.string_escapes && text.chars().any(|c| c < ' ' || c == '"' || c == '\\');
        if text.contains(self.string_close.as_str()) || needs_escape {
            return None;
        }
        Some(b.literal(&format!("{}{text}{}", self.string_open, self.string_close)))
    }

    /// Bare where the syntax writes keys bare and `key` has no character that ends a bare key,
    /// else quoted.
    fn key<'b>(&self, b: &'b Builder, key: &str) -> Option<Parser<'b>> {
        if self.key_open.is_empty() {
            let stops = self.bare_key_stops();
            if !key.is_empty() && !key.chars().any(|c| c.is_whitespace() || stops.contains(&c)) {
                return Some(b.literal(key));
            }
            return self.string_text(b, key);
        }
        if key.contains(self.key_close.as_str()) {
            return None;
        }
        Some(b.literal(&format!("{}{key}{}", self.key_open, self.key_close)))
    }

    fn any_key<'b>(&self, b: &'b Builder) -> Parser<'b> {
        if self.key_open.is_empty() {
            return self.bare_key(b);
        }
        b.literal(&self.key_open) + b.until(&self.key_close) + b.literal(&self.key_close)
    }

    fn word(&self, v: &Value) -> &str {
        let (w, json) = match v {
            Value::Bool(true) => (&self.true_literal, "true"),
            Value::Bool(false) => (&self.false_literal, "false"),
            _ => (&self.null_literal, "null"),
        };
        if w.trim().is_empty() { json } else { w.trim() }
    }

    fn sorted_keys(&self) -> bool {
        self.sorted_keys
    }
}

impl ValueSyntax {
    /// A bare key: up to whitespace, a separator, bracket or quote.
    pub(super) fn bare_key<'b>(&self, b: &'b Builder) -> Parser<'b> {
        let class: String = self.bare_key_stops().iter().map(|c| format!("\\u{:04x}", *c as u32)).collect();
        b.chars(&format!("[^\\s{class}]"), 1, None)
    }

    /// Besides whitespace, the characters that end a bare key.
    fn bare_key_stops(&self) -> Vec<char> {
        let mut stops: Vec<char> = "{}[],:\"'".chars().collect();
        stops.extend(self.string_open.chars().next());
        stops.extend(self.key_separator.trim().chars());
        stops
    }
}

/// JSON written inside a JSON string (`"{\"city\": \"Paris\"}"`, arguments a template writes
/// as a string): every quote and backslash of the JSON escaped once more, no line breaks.
pub(super) struct JsonInString;

impl Spelling for JsonInString {
    fn string<'b>(&self, b: &'b Builder, _schema: Value, _name: &str) -> Parser<'b> {
        // An inner escape (`\n`, `\\`, `\"`) is written with its backslash escaped, and its
        // quote or backslash too (`\\n`, `\\\\`, `\\\"`); no `\u` escapes: characters are
        // written as they are.
        let plain = b.chars("[^\"\\\\\\x00-\\x1f]", 1, None);
        let escape = b.literal("\\\\") + b.choice([b.chars("[nrtbf/]", 1, Some(1)), b.literal("\\\\"), b.literal("\\\"")]);
        b.literal("\\\"") + b.zero_or_more(b.choice([plain, escape])) + b.literal("\\\"")
    }

    fn string_text<'b>(&self, b: &'b Builder, text: &str) -> Option<Parser<'b>> {
        let twice = serde_json::to_string(&serde_json::to_string(text).ok()?).ok()?;
        Some(b.literal(&twice[1..twice.len() - 1]))
    }

    fn word(&self, v: &Value) -> &str {
        match v {
            Value::Bool(true) => "true",
            Value::Bool(false) => "false",
            _ => "null",
        }
    }

    fn space<'b>(&self, b: &'b Builder) -> Parser<'b> {
        b.optional(b.literal(" "))
    }
}

/// Python literals, as models write them: strings in either quote with backslash escapes,
/// `True`, `False`, `None`, quoted keys, keys in the order given.
pub(super) struct PythonSpelling;

impl Spelling for PythonSpelling {
    fn string<'b>(&self, b: &'b Builder, _schema: Value, _name: &str) -> Parser<'b> {
        // A subset of what the Python scanner reads: no raw line breaks, the common escapes.
        let quoted = |q: char| {
            let plain = b.chars(&format!("[^{q}\\\\\\n\\r]"), 1, None);
            let escape = b.literal("\\") + b.chars("[nrt0abfv\\\\'\"]", 1, Some(1));
            // Generated: no lone surrogate (JSON readers refuse one).
            let unicode = b.gbnf(b.literal("\\u") + b.chars("[0-9a-fA-F]", 4, Some(4)), &format!("\"\\\\\" {}", peg_runtime::gbnf::JSON_UNICODE_ESCAPE));
            let q = q.to_string();
            b.literal(&q) + b.zero_or_more(b.choice([plain, escape, unicode])) + b.literal(&q)
        };
        b.choice([quoted('\''), quoted('"')])
    }

    /// As Python's `repr` writes it, or as JSON (whose escapes Python reads too).
    fn string_text<'b>(&self, b: &'b Builder, text: &str) -> Option<Parser<'b>> {
        let json = serde_json::to_string(text).ok()?;
        let repr = python_repr(text);
        Some(if repr == json { b.literal(&json) } else { b.choice([b.literal(&repr), b.literal(&json)]) })
    }

    fn word(&self, v: &Value) -> &str {
        match v {
            Value::Bool(true) => "True",
            Value::Bool(false) => "False",
            _ => "None",
        }
    }
}

/// `text` as Python's `repr` writes a string: single quotes unless only double quotes avoid
/// an escape; `\\`, the quote, and control characters escaped.
fn python_repr(text: &str) -> String {
    let q = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(q);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(q);
    out
}
