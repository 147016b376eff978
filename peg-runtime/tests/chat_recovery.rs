//! Recoveries: nodes tagged `recovered.<kind>` and calls that do not fit the request's tools are
//! reported once, at their place in the output, alike one-shot and streamed; strict mode makes
//! them errors.

mod chat_common;

use std::sync::Arc;

use chat_common::{check_recoveries, weather};
use peg_runtime::ErrorKind;
use peg_runtime::chat::{ChatParseOptions, ChatParser, NativeBuilder, Recovery, RecoveryKind, SimpleBuilder, stream_pieces};

fn rec(kind: RecoveryKind, offset: usize, len: usize) -> Recovery {
    Recovery { kind, offset, len, detail: String::new() }
}

/// The streaming and recovery contracts of chat_common.
fn check(parser: &ChatParser, output: &str) -> peg_runtime::chat::ParsedMessage {
    check_recoveries(parser, output)
}

/// Reasoning whose start marker may be written again (a prefill opened it) and whose end
/// marker may be missing at the end of the output.
fn reasoning_parser(prefill: &str, strict: bool) -> ChatParser {
    let arena = SimpleBuilder::build(|p| {
        let again = p.optional(p.tag(RecoveryKind::ReasoningMarker.tag(), p.literal("<think>")));
        let close = p.literal("</think>") | p.tag(RecoveryKind::MissingClose.tag(), p.end());
        "<think>" + again + p.reasoning(p.until("</think>")) + close + p.content(p.rest())
    })
    .unwrap();
    ChatParser::new(
        Arc::new(arena),
        ChatParseOptions {
            prefill: prefill.into(),
            strictness: if strict { peg_runtime::chat::Strictness::Strict } else { peg_runtime::chat::Strictness::Lenient },
            ..Default::default()
        },
    )
}

#[test]
fn tagged_recoveries_are_reported_at_their_offset() {
    let parser = reasoning_parser("", false);
    let out = "<think><think>Hmm";
    let m = check(&parser, out);
    assert_eq!(m.message.reasoning_content, "Hmm");
    // A missing close at the end of the output is reported, though empty.
    assert_eq!(m.recoveries, [rec(RecoveryKind::ReasoningMarker, 7, 7), rec(RecoveryKind::MissingClose, out.len(), 0)]);
    // Nothing to recover.
    let m = check(&parser, "<think>Hmm</think>Hi");
    assert_eq!((m.recoveries.as_slice(), m.message.content.as_str()), ([].as_slice(), "Hi"));
}

#[test]
fn offsets_are_into_the_output_after_the_prefill() {
    let parser = reasoning_parser("<think>", false);
    let m = check(&parser, "<think>Hmm</think>Hi");
    assert_eq!(m.recoveries, [rec(RecoveryKind::ReasoningMarker, 0, 7)]);
    assert_eq!(m.message.content, "Hi");
    let m = check(&parser, "Hmm");
    assert_eq!(m.recoveries, [rec(RecoveryKind::MissingClose, 3, 0)]);
    let m = check(&parser, "<think>");
    assert_eq!(m.recoveries, [rec(RecoveryKind::ReasoningMarker, 0, 7), rec(RecoveryKind::MissingClose, 7, 0)]);
}

/// A recovery is known once it can no longer change: not while the output may still extend
/// the node, nor a missing close before the output ends.
#[test]
fn partial_parses_report_what_can_no_longer_change() {
    let parser = reasoning_parser("", false);
    assert_eq!(parser.parse("<think><thi", peg_runtime::chat::ParseMode::Partial).unwrap().recoveries, []);
    assert_eq!(parser.parse("<think><think>", peg_runtime::chat::ParseMode::Partial).unwrap().recoveries, []);
    assert_eq!(parser.parse("<think><think>H", peg_runtime::chat::ParseMode::Partial).unwrap().recoveries, [rec(RecoveryKind::ReasoningMarker, 7, 7)]);
    let mut s = parser.stream();
    s.push("<think><think>").unwrap();
    assert_eq!(s.recoveries(), []);
    s.push("Hm").unwrap();
    assert_eq!(s.recoveries(), [rec(RecoveryKind::ReasoningMarker, 7, 7)]);
    s.push("m").unwrap();
    assert_eq!(s.recoveries().len(), 1);
    let (_, fin) = s.finish().unwrap();
    assert_eq!(fin.recoveries, [rec(RecoveryKind::ReasoningMarker, 7, 7), rec(RecoveryKind::MissingClose, 17, 0)]);
    assert_eq!(s.recoveries(), fin.recoveries);
}

/// A recovering alternative that a partial parse follows, but the whole output does not.
#[test]
fn an_abandoned_recovery_is_not_reported() {
    let arena = SimpleBuilder::build(|p| {
        let body = || p.content(p.until("</a>"));
        let unclosed = p.tag(RecoveryKind::MissingClose.tag(), "<a>" + body() + p.end());
        let closed = "<a>" + body() + "</a>";
        p.choice([unclosed, closed]) + p.content(p.rest())
    })
    .unwrap();
    let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    let m = check(&parser, "<a>xy</a>z");
    assert_eq!((m.message.content.as_str(), m.recoveries.as_slice()), ("xyz", [].as_slice()));
    let m = check(&parser, "<a>xy");
    assert_eq!((m.message.content.as_str(), m.recoveries.as_slice()), ("xy", [rec(RecoveryKind::MissingClose, 0, 5)].as_slice()));
}

#[test]
fn strict_mode_makes_a_recovery_an_error() {
    let parser = reasoning_parser("<think>", true);
    let m = parser.parse("Hmm</think>Hi", peg_runtime::chat::ParseMode::Complete).unwrap();
    assert_eq!((m.message.content.as_str(), m.recoveries.as_slice()), ("Hi", [].as_slice()));
    let e = parser.parse("Hmm", peg_runtime::chat::ParseMode::Complete).unwrap_err();
    assert_eq!((e.kind(), e.offset()), (ErrorKind::ParseFailed, Some(3)));
    assert!(e.detail().contains("(missing_close)"), "{e}");
    // Before the output ends, the missing close is not known: a partial parse succeeds.
    let m = parser.parse("Hmm", peg_runtime::chat::ParseMode::Partial).unwrap();
    assert_eq!((m.message.reasoning_content.as_str(), m.message.content.as_str(), m.recoveries.as_slice()), ("Hmm", "", [].as_slice()));
    // A marker inside the reasoning is text.
    let m = parser.parse("Hmm<think></think>", peg_runtime::chat::ParseMode::Complete).unwrap();
    assert_eq!((m.message.reasoning_content.as_str(), m.message.content.as_str(), m.recoveries.as_slice()), ("Hmm<think>", "", [].as_slice()));
    let e = parser.parse("<think>Hmm</think>", peg_runtime::chat::ParseMode::Complete).unwrap_err();
    assert_eq!(e.offset(), Some(0));
    assert!(e.detail().contains("(reasoning_marker)"), "{e}");

    // Streamed: the push that makes the recovery certain fails, and so does every later call.
    let mut s = parser.stream();
    // Reasoning text or the marker again: nothing to emit until the next byte tells.
    assert_eq!(s.push("<think>").unwrap(), []);
    let e = s.push("H").unwrap_err();
    assert!(e.detail().contains("(reasoning_marker)"), "{e}");
    assert!(s.push("mm").is_err() && s.finish().is_err());
    let mut s = parser.stream();
    for piece in stream_pieces("Hmm", &[1]) {
        s.push(piece).unwrap();
    }
    let e = s.finish().unwrap_err();
    assert_eq!(e.offset(), Some(3));
}

/// Native calls whose arguments may be written as a JSON string holding the object, and may
/// come before the name.
fn string_args_parser(options: ChatParseOptions) -> ChatParser {
    let arena = NativeBuilder::build(|p| {
        let name = || p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"");
        let as_string = p.tag(RecoveryKind::ArgumentsAsString.tag(), p.tool_args_string(p.json_string()));
        let args = || p.json_member("arguments", p.tool_args(p.json_object()) | as_string);
        let call = p.tool(p.tool_open("{") << p.choice([name() << "," << args(), args() << "," << name()]) << p.tool_close("}"));
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), options)
}

#[test]
fn arguments_written_as_a_string_are_decoded() {
    let parser = string_args_parser(ChatParseOptions { tools: vec![weather()], ..Default::default() });
    let literal = r#""{\"location\": \"Paris \\\"Nord\\\"\", \"days\": 3}""#;
    let out = format!(r#"Hi<tool_call>{{"name": "get_weather", "arguments": {literal}}}</tool_call>"#);
    let m = check(&parser, &out);
    let call = &m.message.tool_calls[0];
    assert_eq!((call.name.as_str(), call.arguments.as_str()), ("get_weather", r#"{"location": "Paris \"Nord\"", "days": 3}"#));
    assert_eq!(m.recoveries, [rec(RecoveryKind::ArgumentsAsString, out.find(literal).unwrap(), literal.len())]);

    // Before the name: buffered until the call is announced.
    let literal = r#""{\"days\": 2, \"location\": \"Oslo\"}""#;
    let out = format!(r#"<tool_call>{{"arguments": {literal}, "name": "get_weather"}}</tool_call>"#);
    let m = check(&parser, &out);
    let call = &m.message.tool_calls[0];
    assert_eq!((call.name.as_str(), call.arguments.as_str()), ("get_weather", r#"{"days": 2, "location": "Oslo"}"#));
    assert_eq!(m.recoveries, [rec(RecoveryKind::ArgumentsAsString, out.find(literal).unwrap(), literal.len())]);

    // As an object: nothing recovered.
    let m = check(&parser, r#"<tool_call>{"name": "get_weather", "arguments": {"location": "Rome"}}</tool_call>"#);
    assert_eq!((m.message.tool_calls[0].arguments.as_str(), m.recoveries.as_slice()), (r#"{"location": "Rome"}"#, [].as_slice()));
}

/// A string that does not decode (a lone surrogate) is kept as the arguments, as written but
/// for the lone surrogate, written as `\ufffd` (arguments are valid JSON).
#[test]
fn arguments_string_that_does_not_decode_is_kept() {
    let parser = string_args_parser(ChatParseOptions { tools: vec![weather()], ..Default::default() });
    let out = r#"<tool_call>{"name": "get_weather", "arguments": "{\"location\": \"\ud800\"}"}</tool_call>"#;
    let m = check(&parser, out);
    assert_eq!(m.message.tool_calls[0].arguments, r#""{\"location\": \"\ufffd\"}""#);
    // By offset: the call starts before its arguments.
    let kinds: Vec<_> = m.recoveries.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecoveryKind::ArgumentsOutsideSchema, RecoveryKind::ArgumentsAsString]);
    assert_eq!(m.recoveries[0].detail, "call 0: the arguments are not a JSON object");
}
