//! The chat mapping over the hand-written formats of `chat_peg::formats`: calls that do not
//! fit the request's tools are flagged and kept, long arguments streamed without parses are
//! checked in full, constructed values follow their schema. Each output is checked one-shot and
//! streamed in every chunking (chat_common).

#[path = "../peg-runtime/tests/chat_common/mod.rs"]
mod chat_common;

use std::sync::Arc;

use chat_common::{check_recoveries as check, check_streaming, weather};
use chat_peg::formats::{hermes, qwen3_coder};
use peg_runtime::chat::{ChatParseOptions, ChatParser, Recovery, RecoveryKind, ToolSpec, stream_pieces};
use serde_json::json;

/// The Hermes arena offering `tools`: the format parses only calls of the tools its grammar is
/// built with, which need not be the tools the chat parser checks calls against.
fn hermes_arena(tools: &[ToolSpec]) -> Arc<peg_runtime::Arena> {
    Arc::new(hermes::arena(tools).unwrap())
}

#[test]
fn calls_that_do_not_fit_the_tools_are_flagged_and_kept() {
    let calls = [
        r#"{"name": "get_wether", "arguments": {"location": "Paris"}}"#,
        r#"{"name": "get_weather", "arguments": {"location": 3}}"#,
        // Fits: the key order and whitespace do not matter.
        "{\"name\": \"get_weather\", \"arguments\": {\"days\": 2,\n\n\n   \"location\": \"Paris\"}}",
        // Not an object (the format reads JSON arguments only).
        r#"{"name": "get_weather", "arguments": ["Paris"]}"#,
        r#"{"name": "get_weather", "arguments": {"days": 2}}"#,
    ];
    let out: String = calls.iter().map(|c| format!("<tool_call>{c}</tool_call>\n")).collect();
    // The grammar also offers the misspelled tool, so that its call parses and the chat parser,
    // checking against the request's one tool, flags it.
    let arena = hermes_arena(&[weather(), ToolSpec::new("get_wether", json!({"type": "object"}))]);
    let parser = ChatParser::new(arena.clone(), ChatParseOptions { tools: vec![weather()], ..Default::default() });
    let m = check(&parser, &out);
    let names: Vec<_> = m.message.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["get_wether", "get_weather", "get_weather", "get_weather", "get_weather"]);
    // A call is reported over its `tool` node, which in this format holds the whole block.
    let block = |i: usize| format!("<tool_call>{}</tool_call>", calls[i]);
    let flagged = |i: usize, kind, detail: &str| Recovery { kind, offset: out.find(&block(i)).unwrap(), len: block(i).len(), detail: detail.into() };
    assert_eq!(
        m.recoveries,
        [
            flagged(0, RecoveryKind::UnknownTool, "call 0: get_wether is not a declared tool"),
            flagged(1, RecoveryKind::ArgumentsOutsideSchema, "call 1: the arguments do not fit the schema of get_weather"),
            flagged(3, RecoveryKind::ArgumentsOutsideSchema, "call 3: the arguments are not a JSON object"),
            flagged(4, RecoveryKind::ArgumentsOutsideSchema, "call 4: the arguments do not fit the schema of get_weather"),
        ]
    );

    // Without tools in the request, nothing is checked.
    let unchecked = ChatParser::new(arena.clone(), ChatParseOptions::default());
    assert_eq!(check(&unchecked, &out).recoveries, []);
    // A tool without a schema (or with one the checker does not support) takes any object.
    let loose = vec![
        ToolSpec::new("get_weather", json!(null)),
        ToolSpec::new("get_wether", json!({"type": "object", "properties": {"location": {"type": "string", "pattern": "(?<=x)y"}}})),
    ];
    let parser = ChatParser::new(arena.clone(), ChatParseOptions { tools: loose, ..Default::default() });
    let kinds: Vec<_> = parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap().recoveries.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecoveryKind::ArgumentsOutsideSchema]);

    // Parsers that check calls are still shared across threads.
    fn shared<T: Send + Sync>(_: &T) {}
    shared(&parser);

    // Strict: the first call is an error.
    let strict = ChatParser::new(arena, ChatParseOptions { tools: vec![weather()], strictness: peg_runtime::chat::Strictness::Strict, ..Default::default() });
    let e = strict.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap_err();
    assert_eq!(e.offset(), Some(out.find(&block(0)).unwrap()));
    assert!(e.detail().contains("(unknown_tool): call 0: get_wether is not a declared tool"), "{e}");
    assert!(strict.parse(&out[..out.find(calls[1]).unwrap()], peg_runtime::chat::ParseMode::Partial).is_err());
    assert!(strict.parse(&format!("<tool_call>{}</tool_call>", calls[2]), peg_runtime::chat::ParseMode::Complete).is_ok());
}

/// Long arguments that stream without parses (the live lane) are checked in full.
#[test]
fn arguments_streamed_without_parses_are_checked_in_full() {
    let value = "line \"1\" \\ é\n\tline 2 ".repeat(30);
    let tool = |enum_value: &str| {
        let schema = json!({"type": "object", "properties": {"a": {"enum": [enum_value]}}, "required": ["a"]});
        vec![ToolSpec::new("f", schema)]
    };
    let constructed = format!("<tool_call>\n<function=f>\n<parameter=a>\n{value}\n</parameter>\n</function>\n</tool_call>");
    let native = format!(r#"<tool_call>{{"name": "f", "arguments": {{"a": {}}}}}</tool_call>"#, serde_json::to_string(&value).unwrap());
    let tools = tool(&value);
    for (arena, out) in [(qwen3_coder::arena(&tools).unwrap(), constructed), (hermes::arena(&tools).unwrap(), native)] {
        let arena = Arc::new(arena);
        let fits = ChatParser::new(arena.clone(), ChatParseOptions { tools: tool(&value), ..Default::default() });
        assert_eq!(check(&fits, &out).recoveries, []);
        let mut s = fits.stream();
        let pieces = stream_pieces(&out, &[1]);
        for piece in &pieces {
            s.push(piece).unwrap();
        }
        assert!(s.parse_count() < pieces.len() / 2, "{} parses", s.parse_count());
        assert_eq!(s.finish().unwrap().1.recoveries, []);
        let other = ChatParser::new(arena, ChatParseOptions { tools: tool("x"), ..Default::default() });
        let kinds: Vec<_> = check(&other, &out).recoveries.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RecoveryKind::ArgumentsOutsideSchema]);
    }
}

/// Schema-typed raw values: strings are quoted, other types stay JSON unless invalid, a
/// nullable string's `null` is null.
#[test]
fn constructed_values_follow_the_schema() {
    let tool = ToolSpec::new(
        "set",
        json!({"type": "object", "properties": {
            "s": {"type": "string"}, "n": {"type": "integer"}, "u": {"type": ["string", "object"]},
            "ns": {"type": ["string", "null"]}, "o": {"type": "object"}
        }}),
    );
    // The grammar offers the parameters the output writes (`x` untyped: it is not in the
    // request's schema, so its value stays a string).
    let mut offered = tool.clone();
    offered.parameters["properties"]["x"] = json!({});
    let arena = qwen3_coder::arena(&[offered]).unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions { tools: vec![tool], ..Default::default() });
    let out = "<tool_call>\n<function=set>\n\
        <parameter=s>\n42\n</parameter>\n\
        <parameter=n>\n42\n</parameter>\n\
        <parameter=u>\n{not json\n</parameter>\n\
        <parameter=o>\n{\"a\": [1]}\n</parameter>\n\
        <parameter=ns>\nnull\n</parameter>\n\
        <parameter=ns>\nnullable\n</parameter>\n\
        <parameter=x>\nfree text\n</parameter>\n\
        </function>\n</tool_call>";
    let m = check_streaming(&parser, out);
    assert_eq!(m.diagnostic, None, "{m:?}");
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"s": "42", "n": 42, "u": "{not json", "o": {"a": [1]}, "ns": null, "ns": "nullable", "x": "free text"}"#);
}

/// A held (schema-typed, not a string) value written as a Python literal becomes JSON; one
/// that is neither JSON nor Python stays a string.
#[test]
fn constructed_python_values_become_json() {
    let tool = ToolSpec::new("set", json!({"type": "object", "properties": {"o": {"type": "object"}, "l": {"type": "array"}}}));
    let parser =
        ChatParser::new(Arc::new(qwen3_coder::arena(std::slice::from_ref(&tool)).unwrap()), ChatParseOptions { tools: vec![tool], ..Default::default() });
    let out = "<tool_call>\n<function=set>\n\
        <parameter=o>\n{'a': True, 'b': None, 'c': 'it\\'s'}\n</parameter>\n\
        <parameter=l>\n[1, 'x',]\n</parameter>\n\
        <parameter=l>\n['open\n</parameter>\n\
        </function>\n</tool_call>";
    let m = check_streaming(&parser, out);
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"o": {"a":true,"b":null,"c":"it's"}, "l": [1,"x"], "l": "['open"}"#);
}
