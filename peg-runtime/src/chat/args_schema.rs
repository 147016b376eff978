//! Whether a call's arguments fit its tool's parameters schema, with the crate's own schema
//! machinery: the schema's grammar ([`crate::schema::to_gbnf`]) recognizes the arguments.
//!
//! That grammar is made to constrain generation, so it is stricter than the schema: required
//! properties in declared order, bounded whitespace, no undeclared properties unless the schema
//! names `additionalProperties`. So the schema is first opened up as JSON Schema reads it
//! (undeclared properties allowed unless `additionalProperties` says otherwise), and the
//! arguments are checked in a canonical form written for the grammar: compact, members in the
//! order it takes them, integral numbers of an `integer` written as integers. The text as
//! written is tried too.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::args_direct::{ANNOTATIONS, Direct, number_text_fits};
use crate::gbnf::Grammar;

/// `$ref` hops, or nested `anyOf`/`oneOf`, followed in a row before giving up (guards
/// against reference cycles).
const MAX_HOPS: usize = 32;

/// `allOf` parts merged per value before giving up (guards against cycles and against
/// references that multiply).
const MERGE_BUDGET: usize = 256;

/// Schema nesting past which a schema is not checked (the converter's own limit).
const MAX_DEPTH: usize = 128;

/// A tool's parameters schema, to check arguments against.
#[derive(Debug)]
pub(crate) struct ArgsSchema {
    /// The schema, opened up; `None` when it nests too deeply to check.
    schema: Option<Value>,
    /// Compiled on the first check the direct one cannot settle (a request may declare many
    /// tools and call few); `None` when the schema has no grammar.
    grammar: OnceLock<Option<Grammar>>,
    /// The one-pass check of the arguments text, when the schema is one it mirrors.
    direct: Option<Direct>,
}

impl ArgsSchema {
    pub(crate) fn new(schema: &Value) -> ArgsSchema {
        let mut opened = schema.clone();
        let schema = allow_additional(&mut opened, 0).then_some(opened);
        let direct = schema.as_ref().and_then(Direct::of);
        ArgsSchema { schema, grammar: OnceLock::new(), direct }
    }

    /// Whether the arguments `text` are certainly a JSON object that fits (what [`fits`]
    /// over the parsed value would say), read in one pass without parsing them into a value;
    /// `false` when that takes the full check.
    ///
    /// [`fits`]: ArgsSchema::fits
    #[cfg(test)]
    pub(crate) fn direct(&self) -> Option<&Direct> {
        self.direct.as_ref()
    }

    pub(crate) fn surely_fits(&self, text: &str) -> bool {
        match (&self.schema, &self.direct) {
            (Some(_), Some(direct)) => direct.surely_fits(text),
            // Not checked against the schema: a JSON object is enough.
            (None, _) => super::args_direct::surely_object(text),
            (Some(_), None) => false,
        }
    }

    /// Whether the arguments `value`, parsed from `text`, fit the schema. A schema without a
    /// grammar (a feature the converter does not support) takes any arguments, rather than
    /// failing valid ones.
    pub(crate) fn fits(&self, value: &Value, text: &str) -> bool {
        let Some(schema) = &self.schema else { return true };
        let grammar = self.grammar.get_or_init(|| Grammar::parse(&crate::schema::to_gbnf(schema).ok()?).ok());
        let Some(grammar) = grammar else { return true };
        let mut canonical = String::new();
        write_canonical(value, schema, schema, true, &mut canonical);
        grammar.accepts(&canonical) || (canonical != text.trim() && grammar.accepts(text.trim()))
    }
}

/// Keys of a schema that leave the grammar of a value as the plain rules of its `type`: the
/// grammar of its members and items is then that of the subschemas [`write_canonical`] writes
/// them for. Anything else (alternatives, `const`, `enum`, string or number constraints,
/// `prefixItems`, `patternProperties`, unknown keywords) may make the grammar differ.
const PLAIN_KEYS: &[&str] = &["type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems"];

/// Whether, at a value of schema `s` (resolved; `merged`: `allOf` parts were merged into it),
/// the grammar is the plain rule of the value's type, so the values inside it may be blanked
/// ([`settled`]).
fn plain(s: &Value, merged: bool) -> bool {
    match s {
        Value::Bool(b) => *b,
        Value::Object(o) => {
            !merged
                && o.iter().all(|(k, v)| {
                    ANNOTATIONS.contains(&k.as_str())
                        || match k.as_str() {
                            "type" => v.as_str().is_some_and(|t| crate::schema::json_type(t).is_some()),
                            "items" => v.is_object(),
                            "properties" => v.is_object(),
                            "additionalProperties" => v.is_object() || v.is_boolean(),
                            _ => PLAIN_KEYS.contains(&k.as_str()),
                        }
                })
        }
        _ => false,
    }
}

/// Whether the grammar of (resolved, plain) schema `s` accepts `v` whatever its strings,
/// numbers within the grammar's bounds aside: `s` takes any string, or is the free value,
/// object or array rule (no declared members, items or counts), or is an array of such items.
/// The canonical form may then write `v` empty of its type (`""`, `{}`, `[]`, `0`): the verdict
/// is the same, and recognizing the value is most of the cost of a check (arguments are often
/// a long text, or data the schema leaves free).
fn settled(v: &Value, s: &Value, root: &Value) -> bool {
    let only = |extra: &[&str]| match s {
        Value::Bool(b) => *b,
        Value::Object(o) => o.keys().all(|k| ANNOTATIONS.contains(&k.as_str()) || extra.contains(&k.as_str())),
        _ => false,
    };
    let ty = s.get("type").and_then(Value::as_str);
    match (ty, v) {
        (None, _) => only(&[]) && numbers_fit(v),
        (Some("string"), Value::String(_)) => only(&["type"]),
        (Some("object"), Value::Object(_)) => only(&["type"]) && numbers_fit(v),
        (Some("array"), Value::Array(items)) => match s.get("items") {
            None => only(&["type"]) && numbers_fit(v),
            Some(item) if only(&["type", "items"]) => {
                let mut budget = MERGE_BUDGET;
                let item = resolve(item, root, &mut budget);
                plain(&item, matches!(item, Cow::Owned(_))) && items.iter().all(|x| settled(x, &item, root))
            }
            Some(_) => false,
        },
        _ => false,
    }
}

/// Whether every number in `v` fits the schema grammar's `number` rule (at most 16 digits in
/// each part: `-? (0 | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,16})?`).
fn numbers_fit(v: &Value) -> bool {
    match v {
        // An integer is written in plain digits: at most 16 of them.
        Value::Number(n) if n.as_u64().is_some_and(|x| x < 10_u64.pow(16)) || n.as_i64().is_some_and(|x| x.unsigned_abs() < 10_u64.pow(16)) => true,
        Value::Number(n) => number_text_fits(&n.to_string()),
        Value::Array(xs) => xs.iter().all(numbers_fit),
        Value::Object(m) => m.values().all(numbers_fit),
        _ => true,
    }
}

/// Allows undeclared properties in every object schema that does not say whether they are
/// allowed. `false` when the schema nests too deeply.
fn allow_additional(schema: &mut Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Value::Object(o) = schema else { return true };
    if o.contains_key("properties") && !o.contains_key("additionalProperties") {
        o.insert("additionalProperties".to_owned(), Value::Bool(true));
    }
    o.iter_mut().all(|(key, sub)| match key.as_str() {
        "properties" | "$defs" | "definitions" | "patternProperties" => match sub {
            Value::Object(subs) => subs.values_mut().all(|s| allow_additional(s, depth + 1)),
            _ => true,
        },
        "anyOf" | "oneOf" | "allOf" | "prefixItems" => match sub {
            Value::Array(subs) => subs.iter_mut().all(|s| allow_additional(s, depth + 1)),
            _ => true,
        },
        "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => allow_additional(sub, depth + 1),
        _ => true,
    })
}

/// Follows `$ref`s into `root` and merges `allOf` parts, as long as `budget` lasts: the
/// schema whose keys apply.
fn resolve<'s>(schema: &'s Value, root: &'s Value, budget: &mut usize) -> Cow<'s, Value> {
    let mut s = schema;
    for _ in 0..MAX_HOPS {
        match s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')).and_then(|p| root.pointer(p)) {
            Some(target) => s = target,
            None => break,
        }
    }
    let Some(parts) = s.get("allOf").and_then(Value::as_array) else { return Cow::Borrowed(s) };
    let mut merged = s.clone();
    if let Some(o) = merged.as_object_mut() {
        o.remove("allOf");
    }
    for part in parts {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        merged = crate::schema::merge_schemas(&merged, &resolve(part, root, budget));
    }
    Cow::Owned(merged)
}

/// The JSON types `schema` declares, if it declares any.
fn declared_types(schema: &Value) -> Option<Vec<&'static str>> {
    match schema.get("type")? {
        Value::String(t) => Some(crate::schema::json_type(t).into_iter().collect()),
        Value::Array(ts) => Some(ts.iter().filter_map(|t| t.as_str().and_then(crate::schema::json_type)).collect()),
        _ => None,
    }
}

fn type_fits(schema: &Value, v: &Value) -> bool {
    let Some(types) = declared_types(schema) else { return true };
    types.iter().any(|t| match *t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" | "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => v.is_null(),
    })
}

/// For `anyOf`/`oneOf`, the alternative (with its siblings' keys) that `v` most likely
/// meant: one whose type fits, then the most of an object's keys among its properties.
fn alternative<'s>(schema: Cow<'s, Value>, v: &Value, root: &Value, hops: usize, budget: &mut usize) -> Cow<'s, Value> {
    if hops >= MAX_HOPS {
        return schema;
    }
    for key in ["anyOf", "oneOf"] {
        let Some(alts) = schema.get(key).and_then(Value::as_array) else { continue };
        let mut siblings = schema.as_ref().clone();
        if let Some(o) = siblings.as_object_mut() {
            o.remove(key);
        }
        let score = |alt: &Value| {
            let props = alt.get("properties").and_then(Value::as_object);
            let known = match (v, props) {
                (Value::Object(m), Some(p)) => m.keys().filter(|k| p.contains_key(*k)).count(),
                _ => 0,
            };
            (type_fits(alt, v), known)
        };
        let best = alts
            .iter()
            .map(|alt| crate::schema::merge_schemas(&siblings, &resolve(alt, root, budget)))
            .enumerate()
            .max_by_key(|(i, alt)| (score(alt), std::cmp::Reverse(*i)));
        if let Some((_, alt)) = best {
            return alternative(Cow::Owned(alt), v, root, hops + 1, budget);
        }
    }
    schema
}

/// Writes `v` in the canonical form for the grammar of `schema` (see the module doc).
///
/// With `blank`, a value whose verdict is [`settled`] is written empty. Only along a path of
/// plain schemas ([`plain`]): under an alternative or a merge, the grammar at a value may be
/// another subschema's than the one written for it.
fn write_canonical(v: &Value, schema: &Value, root: &Value, blank: bool, out: &mut String) {
    let mut budget = MERGE_BUDGET;
    let schema = resolve(schema, root, &mut budget);
    let blank = blank && plain(&schema, matches!(schema, Cow::Owned(_)));
    let schema = alternative(schema, v, root, 0, &mut budget);
    let any = Value::Bool(true);
    match v {
        _ if blank && settled(v, &schema, root) => out.push_str(match v {
            Value::String(_) => "\"\"",
            Value::Object(_) => "{}",
            Value::Array(_) => "[]",
            Value::Number(_) => "0",
            Value::Bool(true) => "true",
            Value::Bool(false) => "false",
            Value::Null => "null",
        }),
        Value::Object(members) => {
            let empty = Map::new();
            let props = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
            let required = |k: &str| schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|x| x.as_str() == Some(k)));
            let declared = props.keys().filter(|k| members.contains_key(*k));
            let order =
                declared.clone().filter(|k| required(k)).chain(declared.filter(|k| !required(k))).chain(members.keys().filter(|k| !props.contains_key(*k)));
            let additional = match schema.get("additionalProperties") {
                Some(s @ (Value::Object(_) | Value::Bool(_))) => s,
                _ => &any,
            };
            out.push('{');
            for (i, k) in order.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(&Value::String(k.clone()), out);
                out.push(':');
                write_canonical(&members[k], props.get(k).unwrap_or(additional), root, blank, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = match schema.get("items") {
                Some(s @ Value::Object(_)) => s,
                _ => &any,
            };
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, prefix.and_then(|p| p.get(i)).unwrap_or(rest), root, blank, out);
            }
            out.push(']');
        }
        Value::Number(n) => {
            let integer = declared_types(&schema).is_some_and(|t| t.contains(&"integer") && !t.contains(&"number"));
            match n.as_f64() {
                // `3.0` is an integer to the schema, not to its grammar.
                Some(f) if integer && n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => out.push_str(&(f as i64).to_string()),
                _ => write_json(v, out),
            }
        }
        _ => write_json(v, out),
    }
}

/// Compact JSON, with DEL escaped (the grammar's strings do not take it raw).
fn write_json(v: &Value, out: &mut String) {
    let text = serde_json::to_string(v).unwrap_or_default();
    if text.contains('\u{7f}') {
        out.push_str(&text.replace('\u{7f}', "\\u007f"));
    } else {
        out.push_str(&text);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fits(schema: Value, args: &str) -> bool {
        ArgsSchema::new(&schema).fits(&serde_json::from_str(args).unwrap(), args)
    }

    #[test]
    fn arguments_are_checked_in_canonical_form() {
        let weather = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}, "units": {"enum": ["c", "f"]}},
            "required": ["city", "days"]
        });
        assert!(fits(weather.clone(), r#"{"city": "Paris", "days": 3}"#));
        // Another order, whitespace the grammar bounds, an integral float, DEL in a string.
        assert!(fits(weather.clone(), "{\n\n\n    \"units\" :  \"c\",\"days\": 3.0,   \"city\": \"Pa\u{7f}ris\"\n}"));
        assert!(!fits(weather.clone(), r#"{"city": "Paris"}"#));
        assert!(!fits(weather.clone(), r#"{"city": "Paris", "days": "3"}"#));
        assert!(!fits(weather.clone(), r#"{"city": "Paris", "days": 0}"#));
        assert!(!fits(weather.clone(), r#"{"city": "Paris", "days": 3, "units": "k"}"#));
        // Undeclared properties, unless the schema closes the object.
        assert!(fits(weather.clone(), r#"{"extra": [1], "city": "Paris", "days": 3}"#));
        let mut closed = weather;
        closed["additionalProperties"] = json!(false);
        assert!(!fits(closed.clone(), r#"{"extra": [1], "city": "Paris", "days": 3}"#));
        closed["additionalProperties"] = json!({"type": "integer"});
        assert!(fits(closed.clone(), r#"{"extra": 1, "city": "Paris", "days": 3}"#));
        assert!(!fits(closed, r#"{"extra": "1", "city": "Paris", "days": 3}"#));
        // Nested, through `$ref`, `allOf` and `anyOf`.
        let nested = json!({
            "type": "object",
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
            "properties": {
                "path": {"type": "array", "items": {"$ref": "#/$defs/point"}},
                "tag": {"anyOf": [{"type": "null"}, {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}]}
            },
            "required": ["path"]
        });
        assert!(fits(nested.clone(), r#"{"tag": {"b": "x", "a": 1}, "path": [{"y": 1, "x": 2}, {"x": 0.5, "y": -1}]}"#));
        assert!(fits(nested.clone(), r#"{"path": [], "tag": null}"#));
        assert!(!fits(nested.clone(), r#"{"path": [{"x": 1}]}"#));
        assert!(!fits(nested.clone(), r#"{"path": [], "tag": {"a": 1}}"#));
        assert!(fits(nested, r#"{"path": [{"x": 1, "y": 2, "z": 3}], "tag": {"a": 1, "b": "", "c": null}}"#));
    }

    /// The canonical form with strings blanked is accepted exactly when the one with them
    /// written out is, whatever the schema around them, so blanking changes no verdict.
    #[test]
    fn blanked_strings_change_no_verdict() {
        let schemas = [
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string", "description": "text"}}, "required": ["path"]}),
            json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 3, "maxLength": 5}, "p": {"type": "string", "pattern": "^[a-z]+$"}, "e": {"enum": ["a", "bb"]}}}),
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}, "maxItems": 2}, "x": {"type": "object", "additionalProperties": {"type": "string", "format": "date"}}}}),
            json!({"type": "object", "anyOf": [
                {"properties": {"kind": {"const": "a"}, "x": {"type": "string"}}, "required": ["kind"]},
                {"properties": {"kind": {"const": "b"}, "x": {"type": "string", "minLength": 5}}, "required": ["kind"]}]}),
            json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"maxLength": 2}]}, "y": {"$ref": "#/$defs/s"}, "t": {"type": ["string", "null"]}},
                "$defs": {"s": {"type": "string", "const": "fixed"}}}),
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/free"}}, "extra": {"type": "array"}}, "$defs": {"free": {"type": "object"}}}),
            json!({"type": "object", "properties": {"l": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 1}], "items": {"type": "string"}}, "d": {"type": "object", "properties": {"k": {"type": "string"}}, "additionalProperties": false}}}),
        ];
        let args = [
            r#"{"path": "src/main.rs", "content": "fn main() {\n    println!(\"hi \\ there\");\n}\u007f"}"#,
            r#"{"path": 1, "content": "x"}"#,
            r#"{"s": "abcd", "p": "abc", "e": "bb"}"#,
            r#"{"s": "abcdefg", "p": "ABC", "e": "c"}"#,
            r#"{"items": [{"a": "long text", "b": [1, 12345678901234567890, {"c": "d"}]}], "x": {"k": "2024-01-01", "j": "not a date"}}"#,
            r#"{"items": [{}, {}, {}], "x": {"k": "2024-01-01"}}"#,
            r#"{"kind": "b", "x": "abcdef"}"#,
            r#"{"kind": "b", "x": "ab"}"#,
            r#"{"kind": "a", "x": ""}"#,
            r#"{"x": "abc", "y": "fixed", "t": "any"}"#,
            r#"{"x": "ab", "y": "other", "t": null}"#,
            r#"{"l": ["ab", "c"], "d": {"k": "v", "other": "w"}}"#,
            r#"{"l": ["a", "long text"], "d": {"k": "v"}}"#,
            r#"{"extra": {"deep": ["é\u0001", "x"]}, "n": 123456789012345678901}"#,
        ];
        let mut verdicts = [0, 0];
        for schema in &schemas {
            let s = ArgsSchema::new(schema);
            let opened = s.schema.as_ref().unwrap();
            let grammar = Grammar::parse(&crate::schema::to_gbnf(opened).unwrap()).unwrap();
            for a in args {
                let v: Value = serde_json::from_str(a).unwrap();
                let (mut full, mut blank) = (String::new(), String::new());
                write_canonical(&v, opened, opened, false, &mut full);
                write_canonical(&v, opened, opened, true, &mut blank);
                let verdict = grammar.accepts(&full);
                assert_eq!(verdict, grammar.accepts(&blank), "{schema} on {a}: {full} vs {blank}");
                verdicts[usize::from(verdict)] += 1;
            }
        }
        // Both verdicts occur, and blanking took effect somewhere.
        assert!(verdicts[0] > 10 && verdicts[1] > 10, "{verdicts:?}");
        let mut blank = String::new();
        write_canonical(&serde_json::from_str(args[0]).unwrap(), &schemas[0], &schemas[0], true, &mut blank);
        assert_eq!(blank, r#"{"path":"","content":""}"#);
        blank.clear();
        write_canonical(&serde_json::from_str(args[5]).unwrap(), &schemas[2], &schemas[2], true, &mut blank);
        assert_eq!(blank, r#"{"items":[{},{},{}],"x":{"k":"2024-01-01"}}"#);
    }

    #[test]
    fn unsupported_schemas_are_not_checked() {
        let lookbehind = json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=x)a"}}, "required": ["b"]});
        assert!(fits(lookbehind, r#"{"a": 1}"#));
        assert!(fits(json!(false), r#"{"a": 1}"#));
        let mut deep = json!({"type": "object", "required": ["a"]});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(fits(deep, r#"{"b": 1}"#));
        let cycle = json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}});
        assert!(fits(cycle, r#"{"x": 1}"#));
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            defs.insert(format!("d{i}"), json!({"allOf": [{"$ref": format!("#/$defs/d{}", i + 1)}, {"$ref": format!("#/$defs/d{}", i + 1)}]}));
        }
        defs.insert("d40".into(), json!({"type": "integer"}));
        let doubling = json!({"$defs": defs, "type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}});
        assert!(!fits(doubling, r#"{"x": "1"}"#), "a schema whose references multiply is checked, in bounded time");
        // Unknown type names and keywords constrain nothing.
        assert!(fits(json!({"type": "object", "properties": {"a": {"type": "tensor"}}, "not": {}}), r#"{"a": [1]}"#));
    }
}
