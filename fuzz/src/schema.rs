//! The `schema` target: JSON schema to GBNF. The grammar must parse with our own GBNF parser,
//! and, where the schema is simple enough that a value of it can be written down without a
//! validator (see [`instance`]), accept that value as `json.dumps` and as compact JSON write it.
//!
//! Input: the schema as JSON text (anything else is skipped).

use peg_runtime::gbnf::Grammar;
use peg_runtime::{schema, ErrorKind};
use serde_json::{Map, Value};

/// Checks the conversion of one schema; panics on a violated invariant.
pub fn check_schema(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else { return };
    let text = match schema::to_gbnf(&schema) {
        Ok(text) => text,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Schema, "a schema error of another kind: {e} for {schema}");
            return;
        }
    };
    let grammar = Grammar::parse(&text).unwrap_or_else(|e| panic!("the grammar of {schema} does not parse ({e}):\n{text}"));
    let Some(value) = instance(&schema) else { return };
    for written in [python_dumps(&value), serde_json::to_string(&value).unwrap()] {
        assert!(grammar.accepts(&written), "the grammar of {schema} rejects its instance {written}:\n{text}");
    }
}

/// A value the schema admits, for schemas made only of `type` (one name), `properties`,
/// `required` (declared names), `items`, `const`, `enum` and annotations; `None` for any other
/// schema (a keyword this function does not model could exclude the value it would write).
pub fn instance(schema: &Value) -> Option<Value> {
    instance_at(schema, 0)
}

fn instance_at(schema: &Value, depth: usize) -> Option<Value> {
    if depth > 16 {
        return None;
    }
    let s = match schema {
        Value::Bool(true) => return Some(Value::Null),
        Value::Object(s) => s,
        _ => return None,
    };
    const KNOWN: [&str; 9] = ["type", "properties", "required", "items", "const", "enum", "description", "title", "$comment"];
    if s.keys().any(|k| !KNOWN.contains(&k.as_str())) {
        return None;
    }
    let ty = match s.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return None,
    };
    // A literal that is also typed must be of that type; the instance is then the literal.
    let literal = match (s.get("const"), s.get("enum")) {
        (Some(_), Some(_)) => return None,
        (Some(c), None) => Some(c.clone()),
        (None, Some(Value::Array(e))) => Some(e.first()?.clone()),
        (None, Some(_)) => return None,
        (None, None) => None,
    };
    if let Some(v) = literal {
        return only_literal(s).then_some(v);
    }
    if s.len() == annotations(s) {
        // Says nothing: any value.
        return Some(Value::Null);
    }
    match ty.or_else(|| s.contains_key("properties").then_some("object"))? {
        "string" if s.len() == 1 + annotations(s) => Some(Value::String("a".into())),
        "integer" if s.len() == 1 + annotations(s) => Some(Value::from(7)),
        "number" if s.len() == 1 + annotations(s) => Some(Value::from(1.5)),
        "boolean" if s.len() == 1 + annotations(s) => Some(Value::Bool(true)),
        "null" if s.len() == 1 + annotations(s) => Some(Value::Null),
        "object" => {
            let props = match s.get("properties") {
                None => Map::new(),
                Some(Value::Object(p)) => p.clone(),
                Some(_) => return None,
            };
            let required: Vec<&str> = match s.get("required") {
                None => Vec::new(),
                Some(Value::Array(r)) => r.iter().map(Value::as_str).collect::<Option<_>>()?,
                Some(_) => return None,
            };
            if s.contains_key("items") || required.iter().any(|r| !props.contains_key(*r)) {
                return None;
            }
            let mut out = Map::new();
            for (name, sub) in &props {
                if required.contains(&name.as_str()) {
                    out.insert(name.clone(), instance_at(sub, depth + 1)?);
                }
            }
            Some(Value::Object(out))
        }
        "array" => {
            if s.contains_key("properties") || s.contains_key("required") {
                return None;
            }
            match s.get("items") {
                None => Some(Value::Array(Vec::new())),
                Some(items) => Some(Value::Array(vec![instance_at(items, depth + 1)?])),
            }
        }
        _ => None,
    }
}

fn annotations(s: &Map<String, Value>) -> usize {
    ["description", "title", "$comment"].iter().filter(|k| s.contains_key(**k)).count()
}

fn only_literal(s: &Map<String, Value>) -> bool {
    s.keys().all(|k| matches!(k.as_str(), "const" | "enum" | "description" | "title" | "$comment"))
}

/// `json.dumps` with its default separators (`, ` and `: `), which is what templates and models
/// write.
fn python_dumps(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}]", a.iter().map(python_dumps).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => {
            let members: Vec<String> = o.iter().map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_dumps(v))).collect();
            format!("{{{}}}", members.join(", "))
        }
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instances_of_simple_schemas() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "array", "items": {"enum": [2, 3]}}},
            "required": ["a", "c"]});
        assert_eq!(instance(&s), Some(json!({"a": "a", "c": [2]})));
        assert_eq!(python_dumps(&instance(&s).unwrap()), r#"{"a": "a", "c": [2]}"#);
        // A keyword this function does not model: no instance.
        assert_eq!(instance(&json!({"type": "integer", "minimum": 10})), None);
        assert_eq!(instance(&json!({"type": "object", "required": ["x"]})), None);
        check_schema(serde_json::to_string(&s).unwrap().as_bytes());
    }
}
