//! A native and a constructed example, plus the mapper's special cases, each
//! checked one-shot and streamed in every chunking.

mod chat_common;

use std::sync::Arc;

use chat_common::check_streaming;
use peg_runtime::ErrorKind;
use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ConstructedBuilder, DeltaBuffer, NativeBuilder, SimpleBuilder, ToolSpec, stream_pieces};
use serde_json::json;

fn weather_tool() -> ToolSpec {
    ToolSpec::new("get_weather", json!({"type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"}}}))
}

fn options() -> ChatParseOptions {
    ChatParseOptions { tools: vec![weather_tool()], ..ChatParseOptions::default() }
}

/// Native: the arguments are one JSON object.
fn native_parser(options: ChatParseOptions) -> ChatParser {
    let arena = NativeBuilder::build(|p| {
        let get_weather_tool = p.tool(p.seq([
            p.tool_open(p.literal("{")),
            p.json_member("name", "\"" + p.tool_name(p.literal("get_weather")) + "\""),
            p.literal(","),
            p.json_member("arguments", p.tool_args(p.json())),
            p.tool_close(p.literal("}")),
        ]));
        p.seq([p.content(p.until("<tool_call>")), p.literal("<tool_call>"), get_weather_tool, p.literal("</tool_call>"), p.end()])
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), options)
}

/// Constructed: the arguments are separate XML elements.
fn constructed_parser(options: ChatParseOptions) -> ChatParser {
    let arena = ConstructedBuilder::build(|p| {
        let location_arg = p.tool_arg(p.seq([
            p.tool_arg_open("<parameter name=\"" + p.tool_arg_name(p.literal("location")) + "\">"),
            p.tool_arg_string_value(p.until("</parameter>")),
            p.tool_arg_close(p.literal("</parameter>")),
        ]));
        let get_weather_tool = p.tool(p.seq([
            p.tool_open("<function name=\"" + p.tool_name(p.literal("get_weather")) + "\">"),
            location_arg,
            p.tool_close(p.literal("</function>")),
        ]));
        p.seq([p.content(p.until("<tool_call>")), p.literal("<tool_call>"), get_weather_tool, p.literal("</tool_call>"), p.end()])
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), options)
}

#[test]
fn native_example() {
    let parser = native_parser(options());
    let out = r#"Let me check.<tool_call>{"name": "get_weather","arguments": {"location": "Paris", "days": 3}}</tool_call>"#;
    let m = check_streaming(&parser, out);
    assert_eq!(m.diagnostic, None);
    assert_eq!(m.message.content, "Let me check.");
    assert_eq!(m.message.tool_calls.len(), 1);
    let call = &m.message.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.id, "call_0");
    assert_eq!(call.arguments, r#"{"location": "Paris", "days": 3}"#);
}

#[test]
fn constructed_example() {
    let parser = constructed_parser(options());
    let out =
        "Checking <weather>.<tool_call><function name=\"get_weather\"><parameter name=\"location\">Paris, \"FR\"\n\\ é</parameter></function></tool_call>";
    let m = check_streaming(&parser, out);
    assert_eq!(m.diagnostic, None);
    assert_eq!(m.message.content, "Checking <weather>.");
    let call = &m.message.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args, json!({"location": "Paris, \"FR\"\n\\ é"}));
    assert_eq!(call.arguments, r#"{"location": "Paris, \"FR\"\n\\ é"}"#);
}

#[test]
fn partial_native_arguments_stream_raw() {
    let parser = native_parser(options());
    let out = r#"<tool_call>{"name": "get_weather","arguments": {"location": "Par"#;
    let m = parser.parse(out, peg_runtime::chat::ParseMode::Partial).unwrap();
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"location": "Par"#);
    let closed = native_parser(ChatParseOptions { close_partial_arguments: true, ..options() }).parse(out, peg_runtime::chat::ParseMode::Partial).unwrap();
    assert_eq!(closed.message.tool_calls[0].arguments, r#"{"location": "Par"}"#);
}

#[test]
fn partial_constructed_arguments_stream_escaped() {
    let parser = constructed_parser(options());
    let out = "<tool_call><function name=\"get_weather\"><parameter name=\"location\">Pa\"ris</para";
    let m = parser.parse(out, peg_runtime::chat::ParseMode::Partial).unwrap();
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"location": "Pa\"ris"#);
    let closed = constructed_parser(ChatParseOptions { close_partial_arguments: true, ..options() }).parse(out, peg_runtime::chat::ParseMode::Partial).unwrap();
    assert_eq!(closed.message.tool_calls[0].arguments, r#"{"location": "Pa\"ris"}"#);
}

#[test]
fn lenient_keeps_unparsed_text_as_content() {
    let parser = native_parser(options());
    // Not JSON after "arguments": the rest becomes content.
    let out = r#"Hi <tool_call>{"name": "get_weather","arguments": {oops}}</tool_call>"#;
    let m = check_streaming(&parser, out);
    let d = m.diagnostic.clone().expect("a diagnostic");
    assert_eq!(&out[d.offset..d.offset + 4], "oops");
    assert!(m.message.content.starts_with("Hi"), "{:?}", m.message);
    assert!(m.message.content.ends_with("oops}}</tool_call>"), "{:?}", m.message);
    // Nothing matched after the content: everything stays text.
    let out = "Hi <tool_call>[not a call]";
    let m = check_streaming(&parser, out);
    assert_eq!(m.message.content, out);
    assert!(m.message.tool_calls.is_empty());
    assert_eq!(m.diagnostic.unwrap().offset, "Hi <tool_call>".len());
}

#[test]
fn strict_returns_the_error() {
    let parser = native_parser(ChatParseOptions { strictness: peg_runtime::chat::Strictness::Strict, ..options() });
    let out = "Hi <tool_call>[not a call]";
    let e = parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ParseFailed);
    assert_eq!(e.offset(), Some("Hi <tool_call>".len()));
    let mut s = parser.stream();
    let mut failed = false;
    for c in stream_pieces(out, &[3]) {
        if s.push(c).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed || s.finish().is_err());
}

#[test]
fn unterminated_call_keeps_what_was_parsed() {
    let parser = native_parser(options());
    let out = r#"<tool_call>{"name": "get_weather","arguments": {"location": "Paris"}"#;
    let m = check_streaming(&parser, out);
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"location": "Paris"}"#);
    // Parsing gave up where the call should have closed: at the end.
    assert_eq!(m.diagnostic.as_ref().map(|d| d.offset), Some(out.len()), "{:?}", m.diagnostic);
}

#[test]
fn prefill_is_parsed_before_the_output() {
    let arena = SimpleBuilder::build(|p| p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>") + p.content(p.rest())).unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions { prefill: "<think>\n".into(), ..Default::default() });
    let m = check_streaming(&parser, "Let me think.\n</think>\n\nThe answer is 4.");
    assert_eq!(m.message.reasoning_content, "Let me think.");
    assert_eq!(m.message.content, "The answer is 4.");
}

/// Arguments before the name are buffered; ids from the output are kept; Python dicts become
/// JSON.
#[test]
fn native_orderings_ids_and_python_dicts() {
    let arena = NativeBuilder::build(|p| {
        let name = p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"");
        let args = p.json_member("arguments", p.tool_args(p.json() | p.python()));
        let id = p.json_member("id", "\"" + p.tool_id(p.json_string_content()) + "\"");
        let call = p.tool(p.tool_open("{") << p.choice([args << "," << name, id << "," << name << "," << args, name << "," << args]) << p.tool_close("}"));
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    let out = concat!(
        r#"<tool_call>{"arguments": {"x": [1, 2]}, "name": "first"}</tool_call>"#,
        "\n",
        r#"<tool_call>{"id": "abc", "name": "second", "arguments": {'q': 'it\'s "so"', 'on': True, 'off': None}}</tool_call>"#,
        r#"<tool_call>{"name": "third", "arguments": {}}</tool_call>"#,
    );
    let m = check_streaming(&parser, out);
    assert_eq!(m.diagnostic, None, "{m:?}");
    let calls = &m.message.tool_calls;
    assert_eq!(calls.len(), 3);
    assert_eq!((calls[0].name.as_str(), calls[0].id.as_str()), ("first", "call_0"));
    assert_eq!(calls[0].arguments, r#"{"x": [1, 2]}"#);
    assert_eq!((calls[1].name.as_str(), calls[1].id.as_str()), ("second", "abc"));
    let args: serde_json::Value = serde_json::from_str(&calls[1].arguments).unwrap();
    assert_eq!(args, json!({"q": "it's \"so\"", "on": true, "off": null}));
    assert_eq!((calls[2].name.as_str(), calls[2].arguments.as_str()), ("third", "{}"));
}

/// A content tag around a whole `<seed:think>` block (reasoning kept in content) shares a
/// prefix with the tool-call marker: while the output is `<seed:` either may follow, so the
/// stream must not emit it as content yet.
#[test]
fn speculative_leading_literal_is_held() {
    let arena = NativeBuilder::build(|p| {
        let think = p.optional(p.content(p.space() + "<seed:think>" + p.until("</seed:think>") + "</seed:think>")) + p.space();
        let call = p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(p.json()))
                << p.tool_close("}"),
        );
        think + p.content(p.until("<seed:tool_call>")) + p.zero_or_more("<seed:tool_call>" << call << "</seed:tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    let m = check_streaming(&parser, r#"<seed:tool_call>{"name": "f", "arguments": {"a": 1}}</seed:tool_call>"#);
    assert_eq!(m.message.content, "");
    assert_eq!(m.message.tool_calls[0].arguments, r#"{"a": 1}"#);
    let m = check_streaming(&parser, "<seed:think>hm</seed:think>Hi");
    assert_eq!(m.message.content, "<seed:think>hm</seed:think>Hi");
}

/// Mistral Nemo's shape: `[TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}, ...]`, the
/// id optional and after the arguments.
fn id_last_parser(options: ChatParseOptions) -> ChatParser {
    let arena = NativeBuilder::build(|p| {
        let name = p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"");
        let args = p.json_member("arguments", p.tool_args(p.json()));
        let id = p.json_member("id", "\"" + p.tool_id(p.json_string_content()) + "\"");
        let call = p.tool(p.tool_open("{") << name << "," << args << p.optional(p.literal(",") << id) << p.tool_close("}"));
        let calls = "[TOOL_CALLS]" << p.literal("[") << call << p.zero_or_more(p.literal(",") << call) << "]";
        p.content(p.until("[TOOL_CALLS]")) + p.optional(calls) + p.space() + p.end()
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), options)
}

/// Streams `output` cut once at every char boundary: the deltas add up to the one-shot message.
fn check_every_split(parser: &ChatParser, output: &str) {
    let whole = parser.parse(output, peg_runtime::chat::ParseMode::Complete).unwrap();
    for (i, _) in output.char_indices().skip(1) {
        let (deltas, fin) = chat_common::stream(parser, &[&output[..i], &output[i..]]);
        assert_eq!(ChatMessage::from_deltas(&deltas), whole.message, "split at {i} of {output:?}");
        assert_eq!(fin, whole, "split at {i} of {output:?}");
    }
}

/// For each call of a 1-byte stream of `output`: the input length when its id came out.
fn header_positions(parser: &ChatParser, output: &str) -> Vec<usize> {
    let mut s = parser.stream();
    let mut at = Vec::new();
    let mut fed = 0;
    for c in stream_pieces(output, &[1]) {
        fed += c.len();
        for d in s.push(c).unwrap() {
            at.extend(d.tool_calls.iter().filter(|t| t.id.is_some()).map(|_| fed));
        }
    }
    for d in s.finish().unwrap().0 {
        at.extend(d.tool_calls.iter().filter(|t| t.id.is_some()).map(|_| usize::MAX));
    }
    at
}

/// Ids after the arguments are kept: a call is announced without an id when its arguments
/// start, and its id follows once read (or generated when the call ends without one).
#[test]
fn ids_after_the_arguments_are_kept() {
    let out = concat!(
        "Calling.[TOOL_CALLS][",
        r#"{"name": "get_weather", "arguments": {"location": "Paris", "days": 3}, "id": "123456789"}, "#,
        r#"{"name": "search", "arguments": {"q": "a \"b\" <c>\nü"}},"#,
        r#"{"name": "get_weather", "arguments": {}, "id": "abcdefghi"}]"#,
    );
    let mut tools = options().tools;
    tools.push(ToolSpec::new("search", json!({"type": "object", "properties": {"q": {"type": "string"}}})));
    for strict in [false, true] {
        // Strict: every call fits the request's tools.
        let parser = id_last_parser(ChatParseOptions {
            strictness: if strict { peg_runtime::chat::Strictness::Strict } else { peg_runtime::chat::Strictness::Lenient },
            tools: tools.clone(),
            ..options()
        });
        let m = check_streaming(&parser, out);
        assert_eq!(m.diagnostic, None);
        assert_eq!(m.recoveries, []);
        assert_eq!(m.message.content, "Calling.");
        let calls: Vec<_> = m.message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(
            calls,
            [
                ("123456789", "get_weather", r#"{"location": "Paris", "days": 3}"#),
                ("call_1", "search", r#"{"q": "a \"b\" <c>\nü"}"#),
                ("abcdefghi", "get_weather", "{}"),
            ]
        );
        check_every_split(&parser, out);
        for n in [1, 5] {
            let mut s = parser.stream();
            let mut buf = DeltaBuffer::new();
            let mut deltas = Vec::new();
            for c in stream_pieces(out, &[n]) {
                s.push_into(c, &mut buf).unwrap();
                deltas.extend(buf.to_deltas());
            }
            let fin = s.finish_into(&mut buf).unwrap();
            deltas.extend(buf.to_deltas());
            assert_eq!(ChatMessage::from_deltas(&deltas), m.message, "push_into, chunks of {n}");
            assert_eq!(fin, m);
        }
        // Each id comes out when read, or at the end of its call (the `}` and the byte after).
        let after = |s: &str| out.find(s).unwrap() + s.len();
        assert_eq!(header_positions(&parser, out), [after(r#""123456789""#), after(r#"ü"}}"#) + 1, after(r#""abcdefghi""#)]);
    }
}

/// Cut inside the arguments of a call whose id may still follow: the call is out with its name
/// and arguments so far but no id, and the partial message is what the stream emitted. When the
/// output ends there, the call gets a generated id.
#[test]
fn id_last_call_cut_inside_the_arguments() {
    let parser = id_last_parser(options());
    let out = r#"Hi[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Pa"#;
    let partial = parser.parse(out, peg_runtime::chat::ParseMode::Partial).unwrap();
    let call = &partial.message.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str(), call.arguments.as_str()), ("", "get_weather", r#"{"location": "Pa"#));
    for n in [1, 3, 7, out.len()] {
        let mut s = parser.stream();
        let mut deltas = Vec::new();
        for c in stream_pieces(out, &[n]) {
            deltas.extend(s.push(c).unwrap());
        }
        assert_eq!(ChatMessage::from_deltas(&deltas), partial.message, "chunks of {n}");
        assert_eq!(s.message(), &partial.message);
    }
    let m = check_streaming(&parser, out);
    assert_eq!(m.diagnostic.as_ref().map(|d| d.offset), Some(out.len()), "{:?}", m.diagnostic);
    let call = &m.message.tool_calls[0];
    // Complete output: the arguments cut off are closed (valid JSON), and that is reported.
    assert_eq!((call.id.as_str(), call.name.as_str(), call.arguments.as_str()), ("call_0", "get_weather", r#"{"location": "Pa"}"#));
    assert!(m.recoveries.iter().any(|r| r.kind == peg_runtime::chat::RecoveryKind::ArgumentsRepaired), "{:?}", m.recoveries);
    // Cut after the arguments, before the id.
    let out = r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"days": 1}, "id": "12"#;
    let no_id_yet = |m: &ChatMessage| m.tool_calls.len() == 1 && m.tool_calls[0].id.is_empty() && m.tool_calls[0].arguments == r#"{"days": 1}"#;
    assert!(no_id_yet(&parser.parse(out, peg_runtime::chat::ParseMode::Partial).unwrap().message));
    check_streaming(&parser, out);
    let strict = id_last_parser(ChatParseOptions { strictness: peg_runtime::chat::Strictness::Strict, ..options() });
    assert!(no_id_yet(&strict.parse(out, peg_runtime::chat::ParseMode::Partial).unwrap().message));
    assert_eq!(strict.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap_err().kind(), ErrorKind::ParseFailed);
}

/// A grammar that takes the id before the name or after the arguments: an id that comes first
/// announces the call with its name, and its arguments stream as they arrive.
#[test]
fn ids_first_still_stream_live() {
    let arena = NativeBuilder::build(|p| {
        let name = || p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"");
        let args = || p.json_member("arguments", p.tool_args(p.json()));
        let id = || p.json_member("id", "\"" + p.tool_id(p.json_string_content()) + "\"");
        let body = p.choice([id() << "," << name() << "," << args(), name() << "," << args() << p.optional(p.literal(",") << id())]);
        let call = p.tool(p.tool_open("{") << body << p.tool_close("}"));
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    let out = concat!(
        r#"<tool_call>{"id": "first", "name": "f", "arguments": {"a": "long text"}}</tool_call>"#,
        r#"<tool_call>{"name": "g", "arguments": {"b": 2}, "id": "second"}</tool_call>"#,
    );
    let m = check_streaming(&parser, out);
    let ids: Vec<_> = m.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["first", "second"]);
    check_every_split(&parser, out);
    let after = |s: &str| out.find(s).unwrap() + s.len();
    assert_eq!(header_positions(&parser, out), [after(r#""name": "f""#), after(r#""second""#)]);
    // The first call's arguments are out before its call ends.
    let cut = &out[..after("long")];
    let partial = parser.parse(cut, peg_runtime::chat::ParseMode::Partial).unwrap();
    assert!(partial.message.tool_calls[0].arguments.starts_with(r#"{"a": "long"#), "{partial:?}");
}

/// A held call whose output stops fitting the grammar: the call still comes out (at the end,
/// with a generated id) and the rest is content; nothing is lost or doubled.
#[test]
fn id_last_call_that_stops_fitting_keeps_its_text() {
    let parser = id_last_parser(options());
    let out = r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"days": 2}, "oops": 1}]"#;
    let m = check_streaming(&parser, out);
    let d = m.diagnostic.expect("a diagnostic");
    assert!(out[d.offset..].starts_with(r#"oops""#), "{d:?}");
    assert_eq!(m.message.content, r#", "oops": 1}]"#);
    let call = &m.message.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str(), call.arguments.as_str()), ("call_0", "get_weather", r#"{"days": 2}"#));
    let strict = id_last_parser(ChatParseOptions { strictness: peg_runtime::chat::Strictness::Strict, ..options() });
    assert_eq!(strict.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap_err().kind(), ErrorKind::ParseFailed);
}
