//! The grammar side of tool-argument values written in a template's own literal syntax
//! (Gemma 4: `{path:<|"|>a.txt<|"|>,lines:[1,2]}`): the argument's JSON schema spelled in that
//! syntax. It goes into `constrained(generic value, schema value)`, so generation follows the
//! schema while the parser still reads any value the template could write.
//!
//! Every parser built here accepts a subset of the generic literal value (the same strings,
//! words, numbers, separators and whitespace), so the grammar never allows text the parser
//! rejects. Where a schema says more than this covers (`allOf`, `not`, keys the syntax cannot
//! spell), the value falls back to the generic one: looser, never wrong.

use peg_runtime::{Builder, Parser};
use serde_json::{Map, Value};

use crate::analysis::ValueSyntax;

/// Nesting past which values are left to the generic value (this also ends `$ref` cycles).
const MAX_DEPTH: usize = 8;

/// Builds schema-shaped values in a template's literal syntax.
pub(super) struct LiteralSchema<'a, 'b> {
    pub b: &'b Builder,
    pub syntax: &'a ValueSyntax,
    /// The generic literal value: the fallback where the schema is not followed.
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
        let vs = self.syntax;
        // The schema with this one type, for the JSON-schema rules of strings and numbers.
        let single = || {
            let mut o = obj.clone();
            o.insert("type".into(), Value::String(t.into()));
            Value::Object(o)
        };
        match t {
            "string" => {
                let text = b.until(&vs.string_close);
                // Unescaped text is the string itself: the schema's raw rule constrains it.
                let text = if vs.string_escapes { text } else { b.schema(text, name, single(), true) };
                Some(b.literal(&vs.string_open) + text + b.literal(&vs.string_close))
            }
            "integer" | "number" => Some(b.schema(b.json_number(), name, single(), false)),
            "boolean" => Some(b.choice([b.literal(word(&vs.true_literal, "true")), b.literal(word(&vs.false_literal, "false"))])),
            "null" => Some(b.literal(word(&vs.null_literal, "null"))),
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
        if self.syntax.sorted_keys {
            keys.sort();
        }
        let mut members = Vec::new();
        for key in keys {
            let value = self.schema_value(&props[key], &format!("{name}-{key}"), depth + 1).unwrap_or(self.any);
            members.push((self.key(key)? + self.pair(value), required.contains(&key.as_str())));
        }
        let extra = additional.map(|v| self.any_key() + self.pair(v));
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
        Some(b.literal("{") + b.space() + first + b.space() + b.literal("}"))
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
                let (min, max) = (count("minItems").unwrap_or(0), count("maxItems"));
                if max.is_some_and(|m| m < min) {
                    return None;
                }
                if max == Some(0) {
                    b.eps()
                } else {
                    let rest = b.repeat(sep() + item, min.saturating_sub(1), max.map(|m| m - 1));
                    if min == 0 {
                        b.optional(item + rest)
                    } else {
                        item + rest
                    }
                }
            }
        };
        Some(b.literal("[") + b.space() + body + b.space() + b.literal("]"))
    }

    /// `v` spelled exactly, as the template would write it; `None` if the syntax cannot.
    fn spell(&self, v: &Value, depth: usize) -> Option<Parser<'b>> {
        let b = self.b;
        let vs = self.syntax;
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match v {
            Value::String(s) => b.literal(&self.string_text(s)?),
            Value::Number(n) => b.literal(&n.to_string()),
            Value::Bool(true) => b.literal(word(&vs.true_literal, "true")),
            Value::Bool(false) => b.literal(word(&vs.false_literal, "false")),
            Value::Null => b.literal(word(&vs.null_literal, "null")),
            Value::Array(items) => {
                let parts: Option<Vec<Parser<'b>>> = items.iter().map(|i| self.spell(i, depth + 1)).collect();
                let parts = parts?;
                let mut body = b.eps();
                for (i, p) in parts.into_iter().enumerate() {
                    body = if i == 0 { p } else { body + b.literal(",") + p };
                }
                b.literal("[") + body + b.literal("]")
            }
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                if vs.sorted_keys {
                    entries.sort_by_key(|(k, _)| *k);
                }
                let mut body = b.eps();
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    let member = self.key(k)? + b.literal(":") + self.spell(v, depth + 1)?;
                    body = if i == 0 { member } else { body + b.literal(",") + member };
                }
                b.literal("{") + body + b.literal("}")
            }
        })
    }

    /// A string as the syntax writes it, quotes included; `None` if it cannot (the text holds
    /// the closing quote, or needs escapes the syntax has).
    fn string_text(&self, s: &str) -> Option<String> {
        let vs = self.syntax;
        let needs_escape = vs.string_escapes && s.chars().any(|c| c < ' ' || c == '"' || c == '\\');
        (!s.contains(vs.string_close.as_str()) && !needs_escape).then(|| format!("{}{s}{}", vs.string_open, vs.string_close))
    }

    /// A mapping key: bare where the syntax writes keys bare and `key` has no character that
    /// ends a bare key, else quoted.
    fn key(&self, key: &str) -> Option<Parser<'b>> {
        let b = self.b;
        let vs = self.syntax;
        if vs.key_open.is_empty() {
            if !key.is_empty() && !key.chars().any(|c| self.ends_bare_key(c)) {
                return Some(b.literal(key));
            }
            return Some(b.literal(&self.string_text(key)?));
        }
        if key.contains(vs.key_close.as_str()) {
            return None;
        }
        Some(b.literal(&format!("{}{key}{}", vs.key_open, vs.key_close)))
    }

    /// Any key (for additional members), in the syntax's own spelling.
    fn any_key(&self) -> Parser<'b> {
        let b = self.b;
        let vs = self.syntax;
        if vs.key_open.is_empty() {
            let class: String = self.bare_key_stops().iter().map(|c| format!("\\u{:04x}", *c as u32)).collect();
            return b.chars(&format!("[^\\s{class}]"), 1, None);
        }
        b.literal(&vs.key_open) + b.until(&vs.key_close) + b.literal(&vs.key_close)
    }

    /// Besides whitespace, the characters that end a bare key, as the generic value reads keys.
    fn bare_key_stops(&self) -> Vec<char> {
        let vs = self.syntax;
        let mut stops: Vec<char> = "{}[],:\"'".chars().collect();
        stops.extend(vs.string_open.chars().next());
        stops.extend(vs.key_separator.trim().chars());
        stops
    }

    fn ends_bare_key(&self, c: char) -> bool {
        c.is_whitespace() || self.bare_key_stops().contains(&c)
    }

    /// `: value` after a key, with the generic value's whitespace.
    fn pair(&self, value: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        b.space() + b.literal(":") + b.space() + value
    }

    /// `,` between members or items, with the generic value's whitespace.
    fn sep(&self) -> Parser<'b> {
        let b = self.b;
        b.space() + b.literal(",") + b.space()
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }
}

/// The syntax's word for a literal, or JSON's when it has none.
fn word<'s>(w: &'s str, json: &'s str) -> &'s str {
    if w.trim().is_empty() {
        json
    } else {
        w.trim()
    }
}
