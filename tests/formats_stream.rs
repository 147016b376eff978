//! Property tests of the streaming contract over generated outputs of the native
//! ([`formats::hermes`]) and constructed ([`formats::qwen3_coder`]) formats: for any chunking
//! the deltas add up to the one-shot message, and partial messages of a growing output are
//! monotone. Also holds for outputs cut short or followed by junk (lenient fallback).
//!
//! The formats have no reasoning block: a generated `<think>...</think>` is content.

#[path = "../peg-runtime/tests/chat_common/mod.rs"]
mod chat_common;

use std::sync::Arc;

use chat_common::stream;
use chat_peg::formats::{hermes, qwen3_coder};
use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ToolSpec, stream_pieces};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The formats parse only the calls of the request's tools: the grammar offers `names`, each
/// with the arguments the generators write.
fn grammar_tools<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<ToolSpec> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    let params = json!({"type": "object", "properties": {"path": {}, "count": {}, "opts": {}, "x": {}}});
    names.into_iter().map(|n| ToolSpec::new(n, params.clone())).collect()
}

/// Hermes: content, then `<tool_call>{"name", "arguments"}</tool_call>`s; no tools checked.
fn native<'a>(names: impl IntoIterator<Item = &'a str>) -> ChatParser {
    ChatParser::new(Arc::new(hermes::arena(&grammar_tools(names)).unwrap()), ChatParseOptions::default())
}

/// Qwen3-Coder XML arguments, typed by the schema of `edit`.
fn constructed<'a>(names: impl IntoIterator<Item = &'a str>) -> ChatParser {
    let arena = qwen3_coder::arena(&grammar_tools(names)).unwrap();
    let tool =
        ToolSpec::new("edit", json!({"type": "object", "properties": {"path": {"type": "string"}, "count": {"type": "integer"}, "opts": {"type": "object"}}}));
    ChatParser::new(Arc::new(arena), ChatParseOptions { tools: vec![tool], ..Default::default() })
}

/// The tool names of a generated output.
fn names(g: &Generated) -> impl Iterator<Item = &str> {
    g.calls.iter().map(|(n, _)| n.as_str())
}

fn text() -> impl Strategy<Value = String> {
    "[a-z <>/\"'\\\\\n{}é😀]{0,24}"
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), (-1000i64..1000).prop_map(|n| json!(n)), text().prop_map(Value::String),];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,5}", inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
struct Generated {
    output: String,
    reasoning: Option<String>,
    content: String,
    calls: Vec<(String, Value)>,
}

fn no_markers(s: &str) -> bool {
    !s.contains("<tool_call>") && !s.contains("<function=")
}

fn native_output() -> impl Strategy<Value = Generated> {
    let call = ("[a-z_]{1,8}", prop::collection::vec(("[a-z]{1,5}", json_value()), 0..4));
    (prop::option::of(text()), text(), prop::collection::vec(call, 0..3)).prop_map(|(reasoning, content, calls)| {
        let mut output = String::new();
        if let Some(r) = &reasoning {
            output.push_str(&format!("<think>{r}</think>"));
        }
        output.push_str(&content);
        let calls: Vec<(String, Value)> = calls.into_iter().map(|(n, kv)| (n, Value::Object(kv.into_iter().collect()))).collect();
        for (name, args) in &calls {
            output.push_str(&format!("<tool_call>\n{}</tool_call>\n", json!({"name": name, "arguments": args})));
        }
        Generated { output, reasoning, content, calls }
    })
}

fn constructed_output() -> impl Strategy<Value = Generated> {
    let arg = prop_oneof![
        text().prop_map(|t| ("path".to_owned(), t.replace("\n</parameter>", ""), Value::Null)),
        (-50i64..50).prop_map(|n| ("count".to_owned(), n.to_string(), json!(n))),
        json_value().prop_map(|v| ("opts".to_owned(), v.to_string(), v)),
    ];
    let call = ("[a-z_]{1,8}", prop::collection::vec(arg, 0..4));
    (prop::option::of(text()), text(), prop::collection::vec(call, 0..3)).prop_map(|(reasoning, content, calls)| {
        let mut output = String::new();
        if let Some(r) = &reasoning {
            output.push_str(&format!("<think>{r}</think>"));
        }
        output.push_str(&content);
        let mut expected = Vec::new();
        for (name, args) in calls {
            output.push_str(&format!("<tool_call>\n<function={name}>\n"));
            let mut obj = serde_json::Map::new();
            for (k, raw, v) in args {
                output.push_str(&format!("<parameter={k}>\n{raw}\n</parameter>\n"));
                // Only the `edit` tool has a schema; other tools' values stay strings.
                let v = if name == "edit" && k != "path" { v } else { Value::String(raw) };
                obj.insert(k, v);
            }
            output.push_str("</function>\n</tool_call>");
            expected.push((name, Value::Object(obj)));
        }
        Generated { output, reasoning, content, calls: expected }
    })
}

fn check_expected(m: &ChatMessage, g: &Generated) {
    // No reasoning block in these formats: the generated one stays in the content.
    let think = g.reasoning.as_ref().map(|r| format!("<think>{r}</think>")).unwrap_or_default();
    assert_eq!(m.reasoning_content, "", "{g:?}");
    assert_eq!(m.content, format!("{think}{}", g.content).trim(), "{g:?}");
    assert_eq!(m.tool_calls.len(), g.calls.len(), "{g:?}");
    for (call, (name, args)) in m.tool_calls.iter().zip(&g.calls) {
        assert_eq!(&call.name, name);
        let got: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|e| panic!("{e}: {:?}", call.arguments));
        // Duplicate keys in XML collapse to the last one, like serde_json does.
        assert_eq!(&got, args, "{:?}", call.arguments);
    }
}

/// Streams `output` cut by the cycle of `sizes` and compares with the one-shot parse.
fn check_chunking(parser: &ChatParser, output: &str, sizes: &[usize]) {
    let whole = parser.parse(output, peg_runtime::chat::ParseMode::Complete).unwrap();
    let pieces = stream_pieces(output, sizes);
    let (deltas, fin) = stream(parser, &pieces);
    assert_eq!(ChatMessage::from_deltas(&deltas), whole.message, "{output:?} in {pieces:?}");
    assert_eq!(fin, whole, "{output:?}");
}

fn check_monotone(parser: &ChatParser, output: &str) {
    let mut prev = ChatMessage::default();
    for (i, _) in output.char_indices().skip(1).chain([(output.len(), ' ')]) {
        let cur = parser.parse(&output[..i], peg_runtime::chat::ParseMode::Partial).unwrap().message;
        assert!(cur.extends(&prev), "not monotone at {i} of {output:?}:\n{prev:?}\n{cur:?}");
        prev = cur;
    }
    let fin = parser.parse(output, peg_runtime::chat::ParseMode::Complete).unwrap().message;
    assert!(fin.extends(&prev), "{output:?}:\n{prev:?}\n{fin:?}");
}

/// A generated output, possibly cut short or followed by junk.
fn mutated(g: impl Strategy<Value = Generated>) -> impl Strategy<Value = (Generated, String)> {
    (g, 0usize..3, any::<prop::sample::Index>(), text()).prop_map(|(g, how, at, junk)| {
        let out = match how {
            0 => g.output.clone(),
            1 => {
                let mut cut = at.index(g.output.len() + 1);
                while !g.output.is_char_boundary(cut) {
                    cut -= 1;
                }
                g.output[..cut].to_owned()
            }
            _ => format!("{}{{{junk}", g.output),
        };
        (g, out)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn native_one_shot_matches_generator(g in native_output()) {
        prop_assume!(no_markers(&g.content) && g.reasoning.as_deref().is_none_or(no_markers));
        let m = native(names(&g)).parse(&g.output, peg_runtime::chat::ParseMode::Complete).unwrap();
        prop_assert_eq!(m.diagnostic, None);
        check_expected(&m.message, &g);
    }

    #[test]
    fn constructed_one_shot_matches_generator(g in constructed_output()) {
        prop_assume!(no_markers(&g.content) && g.reasoning.as_deref().is_none_or(no_markers));
        let m = constructed(names(&g)).parse(&g.output, peg_runtime::chat::ParseMode::Complete).unwrap();
        prop_assert_eq!(m.diagnostic, None);
        check_expected(&m.message, &g);
    }

    #[test]
    fn native_deltas_add_up((g, out) in mutated(native_output()), sizes in prop::collection::vec(1usize..12, 1..6)) {
        check_chunking(&native(names(&g)), &out, &sizes);
    }

    #[test]
    fn constructed_deltas_add_up((g, out) in mutated(constructed_output()), sizes in prop::collection::vec(1usize..12, 1..6)) {
        check_chunking(&constructed(names(&g)), &out, &sizes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn native_partials_are_monotone((g, out) in mutated(native_output())) {
        check_monotone(&native(names(&g)), &out);
    }

    #[test]
    fn constructed_partials_are_monotone((g, out) in mutated(constructed_output())) {
        check_monotone(&constructed(names(&g)), &out);
    }
}

/// Text that exercises the stream's fast paths: delimiter starts and prefixes cut by chunk
/// ends, `<` inside values, multi-byte UTF-8, characters JSON escapes, trailing whitespace.
fn tricky() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "word ",
        "xyz",
        " ",
        "\n",
        "<",
        "</",
        "<b>",
        "\"",
        "\\",
        "é",
        "😀",
        "\t",
        "\r",
        "\u{1}",
        "\u{1f}",
        "\n</param",
        "<tool_",
        "</think",
        "{",
        "}",
    ]);
    prop::collection::vec(pieces, 0..32).prop_map(|v| v.concat())
}

/// After every push, the stream's message is the one-shot partial parse of the output so far.
fn check_partials_track(parser: &ChatParser, output: &str, sizes: &[usize]) {
    let mut s = parser.stream();
    let mut j = 0;
    for piece in stream_pieces(output, sizes) {
        j += piece.len();
        s.push(piece).unwrap();
        let want = parser.parse(&output[..j], peg_runtime::chat::ParseMode::Partial).unwrap();
        assert_eq!(s.message(), &want.message, "{output:?} cut at {j}");
    }
    assert_eq!(s.finish().unwrap().1, parser.parse(output, peg_runtime::chat::ParseMode::Complete).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn stream_message_is_the_partial_parse(
        (a, b, c) in (tricky(), tricky(), tricky()),
        sizes in prop::collection::vec(1usize..9, 1..5),
    ) {
        let arg = serde_json::to_string(&b).unwrap();
        check_partials_track(&native(["f"]), &format!("<think>{a}</think>{c}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": {arg}}}}}</tool_call>"), &sizes);
        check_partials_track(&native(["f"]), &format!("{a}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{b}"), &sizes);
        check_partials_track(
            &constructed(["edit"]),
            &format!("<think>{a}</think>{c}<tool_call>\n<function=edit>\n<parameter=path>\n{b}\n</parameter>\n<parameter=x>\n{c}\n</parameter>\n</function>\n</tool_call>"),
            &sizes,
        );
    }
}
