//! JSON schema to GBNF: every supported keyword, each checked with the recognizer on
//! instances that must be accepted and instances that must be rejected.

use peg_runtime::gbnf::Grammar;
use peg_runtime::schema;
use serde_json::{Value, json};

#[track_caller]
fn check(schema: Value, accept: &[&str], reject: &[&str]) -> Grammar {
    let text = schema::to_gbnf(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
    let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for s in accept {
        assert!(g.accepts(s), "should accept {s}\n{text}");
        // Accepted instances are valid JSON (the grammar never exceeds JSON).
        serde_json::from_str::<Value>(s).unwrap_or_else(|e| panic!("test instance {s} is not JSON: {e}"));
    }
    for s in reject {
        assert!(!g.accepts(s), "should reject {s}\n{text}");
    }
    g
}

#[test]
fn primitive_types_and_unions() {
    check(json!({"type": "string"}), &[r#""""#, r#""a\"b\\c\u00e9\n""#, r#""é😀""#], &[r#""a"#, "\"a\nb\"", "1", r#""\x""#]);
    check(json!({"type": "integer"}), &["0", "-12", "1234567890123456"], &["01", "1.5", "-", "1e3", "12345678901234567"]);
    check(json!({"type": "number"}), &["0", "-1.5", "3e10", "2.5E-3", "1.5e-05", "1E+007"], &["01", ".5", "1.", "+1", "1e"]);
    check(json!({"type": "boolean"}), &["true", "false"], &["True", "1"]);
    check(json!({"type": "null"}), &["null"], &["nul", "None"]);
    check(json!({"type": ["string", "null"]}), &[r#""x""#, "null"], &["1"]);
    check(json!({}), &[r#"{"a": [1, {"b": null}]}"#, "true", r#""s""#], &["{a: 1}", "[1,]"]);
    check(json!(true), &["1", "[]"], &["[}"]);
}

#[test]
fn whitespace_is_bounded_like_llama_cpp() {
    check(json!({"type": "array", "items": {"type": "integer"}}), &["[1, 2]", "[\n  1,\n  2\n]", "[ 1 ]"], &[&format!("[1,{}2]", " ".repeat(30)), "[1,\t2]"]);
}

#[test]
fn objects_required_and_optional_in_any_order() {
    let s = json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string"},
            "c": {"type": "boolean"},
            "d": {"type": "null"}
        },
        "required": ["a"]
    });
    check(
        s,
        &[r#"{"a": 1}"#, r#"{"a": 1, "b": "x"}"#, r#"{"a": 1, "c": true, "b": "x"}"#, r#"{"a":1,"d":null,"c":false,"b":""}"#],
        &[r#"{"b": "x"}"#, r#"{"a": 1, "b": "x", "b": "y"}"#, r#"{"a": 1, "e": 2}"#, r#"{"a": 1,}"#, r#"{"b": "x", "a": 1}"#, "{}"],
    );
    // No required properties: any subset in any order, including none.
    check(
        json!({"properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}),
        &["{}", r#"{"y": 2}"#, r#"{"y": 2, "x": 1}"#],
        &[r#"{"y": 2, "y": 1}"#, r#"{, "x": 1}"#],
    );
}

#[test]
fn many_optional_properties_keep_declared_order() {
    let props: serde_json::Map<String, Value> = (0..8).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    let g = check(
        json!({"type": "object", "properties": props}),
        &["{}", r#"{"p0": 0, "p7": 7}"#, r#"{"p3": 3}"#],
        &[r#"{"p7": 7, "p0": 0}"#, r#"{"p3": 3, "p3": 3}"#],
    );
    assert!(g.rules().len() < 40, "{}", g.rules().len());
}

#[test]
fn additional_properties() {
    check(
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}),
        &[r#"{"a": 1, "z": "s"}"#, r#"{"z": "s", "y": "t"}"#, "{}", r#"{"ab": "s", "": "t", "\u0041": "u"}"#],
        &[r#"{"a": 1, "z": 2}"#, r#"{"a": 1, "a": "x"}"#, r#"{"a": "x"}"#],
    );
    check(
        json!({"properties": {"ab": {"type": "integer"}, "ac": {"type": "integer"}, "b": {"type": "integer"}}, "required": [], "additionalProperties": {"type": "null"}}),
        &[r#"{"ab": 1, "a": null, "abc": null, "ad": null, "x": null}"#],
        &[r#"{"ab": null}"#, r#"{"ac": null}"#, r#"{"b": null}"#],
    );
    check(json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}), &[r#"{"a": 1}"#], &[r#"{"a": 1, "z": "s"}"#]);
    check(json!({"type": "object"}), &[r#"{"anything": [1, "x"]}"#, "{}"], &["[]"]);
    check(json!({"type": "object", "additionalProperties": {"type": "integer"}}), &[r#"{"a": 1, "b": 2}"#], &[r#"{"a": "1"}"#]);
}

#[test]
fn enum_and_const() {
    check(json!({"enum": ["red", "green", 3, null]}), &[r#""red""#, "3", "null"], &[r#""blue""#, "4", "red"]);
    // Whitespace between tokens, as `json.dumps` writes it; the value exactly.
    check(json!({"const": {"k": [1, 2]}}), &[r#"{"k":[1,2]}"#, r#"{"k": [1, 2]}"#], &[r#"{"k": [1, 3]}"#, r#"{"k": [1, 2], "j": 0}"#, "1"]);
    check(json!({"type": "string", "enum": ["a\"b"]}), &[r#""a\"b""#], &[r#""ab""#]);
}

#[test]
fn any_one_all_of() {
    check(json!({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}), &["1", r#""ab""#], &[r#""abc""#, "true"]);
    check(json!({"oneOf": [{"const": 1}, {"const": 2}]}), &["1", "2"], &["3"]);
    check(
        json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]}
        ]}),
        &[r#"{"a": 1, "b": "x"}"#],
        &[r#"{"a": 1}"#, r#"{"b": "x"}"#],
    );
    // Keys beside anyOf apply to every branch.
    check(
        json!({"type": "object", "properties": {"k": {"type": "integer"}}, "anyOf": [{"required": ["k"]}, {"properties": {"j": {"type": "null"}}, "required": ["j"]}]}),
        &[r#"{"k": 1}"#, r#"{"j": null}"#],
        &["{}"],
    );
}

#[test]
fn refs_and_recursion() {
    check(
        json!({
            "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
            "$ref": "#/$defs/node"
        }),
        &[r#"{"v": 1, "next": null}"#, r#"{"v": 1, "next": {"v": 2, "next": {"v": 3, "next": null}}}"#],
        &[r#"{"v": 1}"#, r#"{"v": 1, "next": {"v": 2}}"#],
    );
    check(json!({"definitions": {"id": {"type": "integer", "minimum": 0}}, "type": "array", "items": {"$ref": "#/definitions/id"}}), &["[0, 5]"], &["[-1]"]);
    check(json!({"type": "object", "properties": {"self": {"$ref": "#"}}}), &[r#"{"self": {"self": {}}}"#], &[r#"{"self": 1}"#]);
    // An unknown type name is no error: its value is unconstrained (tool schemas carry such
    // names, and one must not fail a request); Python-style names mean their JSON type.
    check(json!({"type": "frobnicate"}), &["1", r#""s""#, r#"{"a": [null]}"#], &["nope"]);
    check(json!({"type": "float"}), &["1.5", "-2"], &[r#""1.5""#]);
    check(json!({"type": "dict", "properties": {"n": {"type": "int"}}}), &[r#"{"n": 3}"#], &[r#"{"n": 3.5}"#, "[]"]);
    for bad in [json!({"$ref": "#/nope"}), json!({"$ref": "http://x/schema.json"}), json!({"enum": []}), json!(false), json!(12)] {
        let e = schema::to_gbnf(&bad).unwrap_err();
        assert_eq!(e.kind(), peg_runtime::ErrorKind::Schema, "{bad}");
    }
}

#[test]
fn arrays() {
    check(json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}), &["[1]", "[1, 2, 3]"], &["[]", "[1, 2, 3, 4]", "[1 2]"]);
    check(json!({"type": "array", "items": {"type": "integer"}, "minItems": 2}), &["[1, 2]", "[1, 2, 3, 4, 5]"], &["[1]"]);
    check(json!({"type": "array", "maxItems": 0}), &["[]"], &["[1]"]);
    check(json!({"type": "array", "items": false}), &["[]", "[ ]"], &["[1]"]);
    check(json!({"type": "array"}), &["[]", r#"[1, "a", null]"#], &["[,]"]);
    check(json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}), &[r#"["a", 1]"#], &[r#"[1, "a"]"#, r#"["a"]"#]);
}

#[test]
fn strings_lengths_patterns_formats() {
    check(json!({"type": "string", "minLength": 2, "maxLength": 3}), &[r#""ab""#, r#""a\"c""#], &[r#""a""#, r#""abcd""#]);
    check(json!({"type": "string", "pattern": "^[a-z]+-[0-9]{2}$"}), &[r#""ab-12""#], &[r#""ab-1""#, r#""Ab-12""#]);
    check(json!({"type": "string", "pattern": "[0-9]{3}"}), &[r#""x123y""#, r#""123""#], &[r#""12""#]);
    check(json!({"type": "string", "format": "date"}), &[r#""2024-02-29""#], &[r#""2024-13-01""#, r#""24-01-01""#]);
    check(json!({"type": "string", "format": "time"}), &[r#""12:30:00Z""#, r#""23:59:59.123+02:00""#], &[r#""24:00:00Z""#]);
    check(json!({"type": "string", "format": "date-time"}), &[r#""2024-02-29T12:30:00Z""#], &[r#""2024-02-29 12:30:00Z""#]);
    check(json!({"type": "string", "format": "uuid"}), &[r#""123e4567-e89b-12d3-a456-426614174000""#], &[r#""123e4567""#]);
    check(json!({"type": "string", "format": "email"}), &[r#""anything""#], &[]);
}

#[test]
fn large_bounds_stay_small() {
    let text = schema::to_gbnf(&json!({"type": "string", "maxLength": 10000})).unwrap();
    assert!(text.len() < 1000, "{text}");
    let g = Grammar::parse(&text).unwrap();
    assert!(g.accepts(&format!("\"{}\"", "x".repeat(10000))));
    assert!(!g.accepts(&format!("\"{}\"", "x".repeat(10001))));
    let text = schema::to_gbnf(&json!({"type": "array", "items": {"type": "integer"}, "minItems": 3000})).unwrap();
    assert!(text.len() < 1000, "{text}");
    let g = Grammar::parse(&text).unwrap();
    let many = |n: usize| format!("[{}]", vec!["1"; n].join(","));
    assert!(g.accepts(&many(3000)) && !g.accepts(&many(2999)));
}

#[test]
fn integer_ranges() {
    let cases: &[(Value, &[i64], &[i64])] = &[
        (json!({"type": "integer", "minimum": 0}), &[0, 1, 9, 10, 99999], &[-1, -100]),
        (json!({"type": "integer", "minimum": 5, "maximum": 123}), &[5, 9, 10, 99, 100, 119, 123], &[4, 0, 124, 130, 200, 1000]),
        (json!({"type": "integer", "minimum": -20, "maximum": -3}), &[-20, -15, -3], &[-21, -2, 0, 3]),
        (json!({"type": "integer", "minimum": -7, "maximum": 250}), &[-7, -1, 0, 199, 250], &[-8, 251, 300]),
        (json!({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}), &[1, 9], &[0, 10]),
        (json!({"type": "integer", "maximum": 42}), &[42, 0, -1000], &[43, 100]),
        (json!({"type": "integer", "minimum": 1000, "maximum": 1000}), &[1000], &[999, 1001]),
    ];
    for (s, ok, bad) in cases {
        let text = schema::to_gbnf(s).unwrap();
        let g = Grammar::parse(&text).unwrap();
        for v in *ok {
            assert!(g.accepts(&v.to_string()), "{s} should accept {v}\n{text}");
        }
        for v in *bad {
            assert!(!g.accepts(&v.to_string()), "{s} should reject {v}\n{text}");
        }
        assert!(!g.accepts("01") && !g.accepts("-0") || s.get("maximum") == Some(&json!(42)), "{s}\n{text}");
    }
    // Exhaustive check of a small range against arithmetic.
    let g = Grammar::parse(&schema::to_gbnf(&json!({"type": "integer", "minimum": -37, "maximum": 213})).unwrap()).unwrap();
    for v in -500..=500 {
        assert_eq!(g.accepts(&v.to_string()), (-37..=213).contains(&v), "{v}");
    }
}

#[test]
fn fractional_number_ranges_are_exact() {
    let bounds: [Option<f64>; 11] =
        [None, Some(-10.5), Some(-3.0), Some(-0.25), Some(0.0), Some(0.1), Some(0.5), Some(1.0), Some(2.75), Some(3.05), Some(10.0)];
    let fracs = ["", ".0", ".00", ".05", ".1", ".25", ".5", ".50", ".75", ".751", ".9", ".99", ".999"];
    let mut values = Vec::new();
    for i in 0..=12 {
        for f in fracs {
            values.push(format!("{i}{f}"));
            if i != 0 || !f.trim_matches(['.', '0']).is_empty() {
                values.push(format!("-{i}{f}"));
            }
        }
    }
    for lo in bounds {
        for hi in bounds {
            if lo.is_none() && hi.is_none() || lo.zip(hi).is_some_and(|(l, h)| l > h) {
                continue;
            }
            for (lx, hx) in [(false, false), (true, false), (false, true), (true, true)] {
                // Exclusive bounds within one integer are treated as inclusive (documented).
                let same_int = |a: f64, b: f64| a.abs().floor() == b.abs().floor();
                let nonneg_same = hi.is_some_and(|h| h >= 0.0 && same_int(lo.map_or(0.0, |l| l.max(0.0)), h));
                let neg_same = lo.is_some_and(|l| l < 0.0 && same_int(hi.map_or(0.0, |h| h.min(0.0)), l));
                if (lx || hx) && (nonneg_same || neg_same) {
                    continue;
                }
                let mut schema = json!({"type": "number"});
                if let Some(l) = lo {
                    schema[if lx { "exclusiveMinimum" } else { "minimum" }] = json!(l);
                }
                if let Some(h) = hi {
                    schema[if hx { "exclusiveMaximum" } else { "maximum" }] = json!(h);
                }
                let text = match schema::to_gbnf(&schema) {
                    Ok(t) => t,
                    Err(_) => {
                        // Only empty ranges may fail.
                        assert!(lo == hi && (lx || hx), "{schema}");
                        continue;
                    }
                };
                let g = Grammar::parse(&text).unwrap();
                for v in &values {
                    let x: f64 = v.parse().unwrap();
                    let above = lo.is_none_or(|l| if lx { x > l } else { x >= l });
                    let below = hi.is_none_or(|h| if hx { x < h } else { x <= h });
                    assert_eq!(g.accepts(v), above && below, "{schema} on {v}\n{text}");
                }
            }
        }
    }
}

#[test]
fn number_ranges() {
    check(json!({"type": "number", "minimum": 0, "maximum": 10}), &["0", "0.5", "9.99", "10", "10.0"], &["-1", "10.5", "11", "-0.5"]);
    check(json!({"type": "number", "minimum": -5}), &["-5", "-4.5", "0", "1000.25"], &["-5.5", "-6"]);
    check(json!({"type": "number", "maximum": -1}), &["-1", "-1.0", "-2.5"], &["0", "-0.5"]);
}

#[test]
fn rules_are_shared_and_names_sanitized() {
    let text = schema::to_gbnf(
        &json!({"type": "object", "properties": {"file_path": {"type": "string"}, "other.name": {"type": "string"}}, "required": ["file_path"]}),
    )
    .unwrap();
    Grammar::parse(&text).unwrap();
    assert!(text.contains("root-value-file-path-kv ::="), "{text}");
    assert_eq!(text.matches("\nstring ::=").count(), 1, "{text}");
}

#[test]
fn hostile_schemas_are_errors_not_crashes() {
    // serde_json itself caps parsed nesting at 128 (and cannot drop much deeper values), so
    // the converter's own limit sits just above what it can receive.
    let nested = |n: usize| {
        let mut deep = json!({"type": "integer"});
        for _ in 0..n {
            deep = json!({"type": "array", "items": deep});
        }
        deep
    };
    Grammar::parse(&schema::to_gbnf(&nested(120)).unwrap()).unwrap();
    assert_eq!(schema::to_gbnf(&nested(400)).unwrap_err().kind(), peg_runtime::ErrorKind::Schema);
    let cyclic = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    assert!(schema::to_gbnf(&cyclic).is_err());
    for bad in [
        json!({"type": "string", "pattern": "(a"}),
        json!({"type": "string", "minLength": 5, "maxLength": 2}),
        json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
        json!({"type": "integer", "minimum": 10, "maximum": 2}),
        json!({"anyOf": []}),
        json!({"type": 5}),
    ] {
        assert!(schema::to_gbnf(&bad).is_err(), "{bad}");
    }
    // Huge bounds stay small and valid.
    let text = schema::to_gbnf(&json!({"type": "array", "minItems": 4_000_000_000u64, "maxItems": 4_000_000_001u64})).unwrap();
    assert!(text.len() < 2000);
    Grammar::parse(&text).unwrap();
}

#[test]
fn recognizer_handles_kilobytes_quickly() {
    let g = Grammar::parse(&schema::to_gbnf(&json!({})).unwrap()).unwrap();
    let mut doc = String::from("[");
    for i in 0..200 {
        doc.push_str(&format!(r#"{{"id": {i}, "name": "item number {i}", "tags": ["a", "b"], "ok": true}}, "#));
    }
    doc.push_str("null]");
    assert!(doc.len() > 10_000);
    assert!(g.accepts(&doc));
    assert!(!g.accepts(&doc[..doc.len() - 1]));
    assert!(g.accepts_prefix(&doc[..doc.len() - 1]));
}
