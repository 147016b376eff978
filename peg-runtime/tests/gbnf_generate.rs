//! GBNF generated from representative arenas: insta snapshots of the text, recognizer checks
//! of what it accepts, and the size and speed of a grammar for 300 tools.

use peg_runtime::Arena;
use peg_runtime::gbnf::{GbnfOptions, Grammar, generate};
use serde_json::{Value, json};

fn full(arena: &Arena) -> String {
    generate(arena, &GbnfOptions::default()).unwrap()
}

fn lazy(arena: &Arena) -> String {
    generate(arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap()
}

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}
        },
        "required": ["location"]
    })
}

/// Content with optional reasoning: `<think>...</think>` then the rest.
fn reasoning_arena() -> Arena {
    Arena::build(|p| p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>" + p.space()) + p.tag("content", p.rest())).unwrap()
}

/// Tool calls as JSON inside `<tool_call>` tags (the native shape).
fn native_arena() -> Arena {
    Arena::build(|p| {
        let mut tools = Vec::new();
        for (name, schema) in
            [("get_weather", weather_schema()), ("read_file", json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))]
        {
            let tool_name = p.json_member("name", "\"" + p.literal(name) + "\"");
            let args = p.json_member("arguments", p.schema(p.json(), &format!("tool-{name}-args"), schema, false));
            tools.push(p.rule(&format!("tool-{name}"), "{" << tool_name << "," << args << "}"));
        }
        let call = p.trigger_rule("tool_call", "<tool_call>" << p.choice(tools) << "</tool_call>");
        p.tag("content", p.until("<tool_call>")) + p.zero_or_more(call << p.space()) + p.end()
    })
    .unwrap()
}

/// XML-style arguments with raw string values (Qwen3-Coder style).
fn constructed_arena() -> Arena {
    Arena::build(|p| {
        let arg = |name: &str, schema: Value| {
            let value = p.schema(p.until("</parameter>"), &format!("weather-{name}"), schema, true);
            p.tag("arg", "<parameter=" + p.literal(name) + ">" + value + "</parameter>\n")
        };
        let location = arg("location", json!({"type": "string"}));
        let unit = arg("unit", json!({"type": "string", "enum": ["celsius", "fahrenheit"]}));
        let days = arg("days", json!({"type": "integer", "minimum": 1, "maximum": 14}));
        let code = arg("code", json!({"type": "string", "pattern": "^[A-Z]{3}$"}));
        let body = location + p.optional(unit) + p.optional(days) + p.optional(code);
        let call = p.trigger_rule("tool_call", "<tool_call>\n<function=get_weather>\n" + body + "</function>\n</tool_call>");
        p.tag("content", p.until("<tool_call>")) + p.optional(call)
    })
    .unwrap()
}

/// Pseudo-function calls `[name(arg=value, ...)]` with Python literal values.
fn pythonic_arena() -> Arena {
    Arena::build(|p| {
        let ident = p.chars("[a-zA-Z_]", 1, Some(1)) + p.chars("[a-zA-Z0-9_]", 0, Some(63));
        let kwarg = ident + "=" + p.python();
        let args = p.optional(kwarg + p.zero_or_more(", " + kwarg));
        let call = p.rule("call", p.literal("get_weather") + "(" + args + ")");
        let calls = p.trigger_rule("calls", "[" + call + p.repeat(", " + call, 0, Some(4)) + "]");
        p.until("[") + p.optional(calls)
    })
    .unwrap()
}

#[test]
fn snapshot_reasoning() {
    insta::assert_snapshot!(full(&reasoning_arena()));
}

#[test]
fn snapshot_native_full_and_lazy() {
    let arena = native_arena();
    insta::assert_snapshot!("native_full", full(&arena));
    insta::assert_snapshot!("native_lazy", lazy(&arena));
}

#[test]
fn snapshot_constructed_lazy() {
    insta::assert_snapshot!(lazy(&constructed_arena()));
}

#[test]
fn snapshot_pythonic_lazy() {
    insta::assert_snapshot!(lazy(&pythonic_arena()));
}

#[test]
fn reasoning_grammar_accepts_what_the_format_allows() {
    let g = Grammar::parse(&full(&reasoning_arena())).unwrap();
    assert!(g.accepts("<think>hmm</think>\n\nAnswer"));
    assert!(g.accepts("Just an answer"));
    assert!(g.accepts_prefix("<think>still thin"));
    assert!(!g.accepts("<think>a</think>b</think>") || g.accepts("b</think>"), "content may contain anything");
}

#[test]
fn native_grammar_checks_tool_arguments() {
    let arena = native_arena();
    let g = Grammar::parse(&full(&arena)).unwrap();
    let ok = r#"Let me check.<tool_call>{"name": "get_weather", "arguments": {"location": "Paris", "days": 3}}</tool_call>"#;
    assert!(g.accepts(ok));
    assert!(g.accepts(r#"<tool_call>{"name":"read_file","arguments":{"path":"/etc/hosts"}}</tool_call>"#));
    assert!(!g.accepts(r#"<tool_call>{"name": "get_weather", "arguments": {"days": 3}}</tool_call>"#));
    assert!(!g.accepts(r#"<tool_call>{"name": "get_weather", "arguments": {"location": "Paris", "unit": "kelvin"}}</tool_call>"#));
    assert!(!g.accepts(r#"<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>"#));
    assert!(g.accepts_prefix(r#"<tool_call>{"name": "get_weather", "arguments": {"loc"#));
    let lz = Grammar::parse(&lazy(&arena)).unwrap();
    assert!(lz.accepts(r#"<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>"#));
    assert!(!lz.accepts("Let me check."));
}

#[test]
fn constructed_grammar_uses_raw_values() {
    let g = Grammar::parse(&lazy(&constructed_arena())).unwrap();
    let call = |args: &str| format!("<tool_call>\n<function=get_weather>\n{args}</function>\n</tool_call>");
    assert!(g.accepts(&call("<parameter=location>\nNew \"York\"\n</parameter>\n")));
    assert!(g.accepts(&call(
        "<parameter=location>Paris</parameter>\n<parameter=unit>celsius</parameter>\n<parameter=days>7</parameter>\n<parameter=code>ABC</parameter>\n"
    )));
    // The unconstrained raw string cannot contain its own closing tag.
    assert!(!g.accepts(&call("<parameter=location>a</parameter></parameter>\n")));
    assert!(!g.accepts(&call("<parameter=location>P</parameter>\n<parameter=unit>kelvin</parameter>\n")));
    assert!(!g.accepts(&call("<parameter=location>P</parameter>\n<parameter=days>15</parameter>\n")));
    assert!(!g.accepts(&call("<parameter=location>P</parameter>\n<parameter=code>abc</parameter>\n")));
}

#[test]
fn pythonic_grammar() {
    let g = Grammar::parse(&lazy(&pythonic_arena())).unwrap();
    assert!(g.accepts("[get_weather(city='Paris', days=3), get_weather(city=\"Rome\", opts={'a': [1, 2,], 'b': None})]"));
    assert!(!g.accepts("[get_weather(city=Paris)]"));
    assert!(!g.accepts(&format!("[{}]", ["get_weather()"; 6].join(", "))));
}

/// A realistic tool schema, varied by index: nested objects, enums, arrays, formats, ranges.
fn tool_schema(i: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            format!("query_{i}"): {"type": "string", "description": "what to look for", "minLength": 1, "maxLength": 500},
            "mode": {"type": "string", "enum": ["fast", "thorough", format!("custom-{}", i % 7)]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100 + i},
            "since": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            "filters": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "op": {"enum": ["eq", "ne", "lt", "gt"]},
                    "value": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}
                },
                "required": ["field", "op", "value"]
            },
            "options": {"$ref": "#/$defs/options"}
        },
        "required": [format!("query_{i}"), "mode"],
        "$defs": {
            "options": {"type": "object", "properties": {"verbose": {"type": "boolean"}, "retries": {"type": "integer", "minimum": 0, "maximum": 5}}}
        }
    })
}

fn tools_arena(n: usize) -> Arena {
    Arena::build(|p| {
        let mut tools = Vec::new();
        for i in 0..n {
            let name = format!("tool_{i}_search");
            let tool_name = p.json_member("name", "\"" + p.literal(&name) + "\"");
            let args = p.json_member("arguments", p.schema(p.json(), &format!("{name}-args"), tool_schema(i), false));
            tools.push(p.rule(&name, "{" << tool_name << "," << args << "}"));
        }
        let call = p.trigger_rule("tool_call", "<tool_call>" << p.choice(tools) << "</tool_call>");
        p.optional("<think>" + p.until("</think>") + "</think>") + p.until("<tool_call>") + p.zero_or_more(call << p.space())
    })
    .unwrap()
}

#[test]
fn three_hundred_tools_stay_small() {
    // Speed is measured by benches/autoparser.rs (`autoparser_300_tools`).
    let arena = tools_arena(300);
    let text = generate(&arena, &GbnfOptions { lazy: false, validate: false, compact: false }).unwrap();
    let g = Grammar::parse(&text).unwrap();
    assert!(text.len() < 1_000_000, "{} bytes", text.len());
    let call = r#"<tool_call>{"name": "tool_299_search", "arguments": {"query_299": "rust", "mode": "custom-5", "limit": 399, "since": "2024-01-02T03:04:05Z", "filters": {"field": "lang", "op": "eq", "value": true}, "options": {"retries": 5}}}</tool_call>"#;
    assert!(g.accepts(call));
    assert!(!g.accepts(&call.replace("399", "400")));
    let lz = generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap();
    assert!(lz.len() < text.len());
}

#[test]
fn schema_values_carry_no_trailing_space() {
    // The parser's `json()` stops at the value's end, so the grammar must not add whitespace
    // the following literal would then reject.
    let arena =
        Arena::build(|p| "<x>" + p.schema(p.json(), "args", json!({"type": "object", "properties": {"a": {"type": "integer"}}}), false) + "</x>").unwrap();
    let g = Grammar::parse(&full(&arena)).unwrap();
    assert!(g.accepts(r#"<x>{"a": 1}</x>"#));
    assert!(g.accepts("<x>{ \"a\" :\n 1 }</x>"));
    assert!(!g.accepts(r#"<x>{"a": 1} </x>"#));
    let out = arena.parse(br#"<x>{"a": 1} </x>"#, false).unwrap();
    assert!(out.result.outcome != peg_runtime::Outcome::Success || out.result.end != 16);
}

/// Strings sampled from the generated grammar: the parser must accept every one of them
/// (the direction that matters for constrained decoding: the grammar never lets the model
/// write what the parser then rejects).
#[test]
fn sampled_grammar_strings_parse() {
    let arenas = [
        ("reasoning", reasoning_arena()),
        ("native", native_arena()),
        ("constructed", constructed_arena()),
        ("pythonic", pythonic_arena()),
        ("tools", tools_arena(3)),
    ];
    for (name, arena) in &arenas {
        for lazy in [false, true] {
            if lazy && *name == "reasoning" {
                continue;
            }
            let text = generate(arena, &GbnfOptions { lazy, ..Default::default() }).unwrap();
            let g = Grammar::parse(&text).unwrap();
            let mut sampler = g.sampler(0);
            let mut checked = 0;
            for _ in 0..1200 {
                let Some(s) = sampler.sample() else { continue };
                assert!(g.accepts(&s), "{name}: sampled {s:?} not accepted by its own grammar");
                let out = arena.parse(s.as_bytes(), false).unwrap();
                // In these arenas the content before a trigger may be empty, so what a lazy
                // grammar accepts is a complete output too.
                assert!(
                    out.result.outcome == peg_runtime::Outcome::Success && out.result.end == s.len(),
                    "{name}: grammar accepts {s:?} but the parser gives {:?}",
                    out.result
                );
                checked += 1;
            }
            assert!(checked > 50, "{name}: only {checked} samples");
        }
    }
}
