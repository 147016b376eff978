//! The formats of `chat_peg::formats` over the corpus `parse` cases of their templates, judged
//! as `autoparser check` does (corpus README): content and reasoning trimmed, names and
//! non-empty ids equal, arguments as JSON values, and streaming in small chunks adds up to the
//! final message. Each case also checks that the specialized parser and the arena give the same
//! parse, whole and for every prefix as partial input, and the same chat message, whole and
//! for every prefix (`ChatParser::parse_with` over the specialized parser). The prefill comes
//! from the template's rendered generation prompt (`formats::prefill`).

use std::sync::Arc;

use autoparser::Request;
use autoparser::template::ChatTemplate;
use autoparser::verify::compare_messages;
use chat_peg::formats::{self, hermes, qwen3_coder};
use peg_runtime::chat::ParseMode;
use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ToolSpec, stream_pieces};
use peg_runtime::{Arena, ParseOutput};
use serde_json::Value;

mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["formats_pass_their_corpus_cases"];

/// A format: its arena, its specialized parser for a request's tools, and its generated
/// `Session` fed the given chunks (the partial parse after each, then the final parse).
struct Format {
    arena: fn(&[ToolSpec]) -> Result<Arena, peg_runtime::Error>,
    parse: fn(&[ToolSpec], &[u8], bool) -> ParseOutput,
    session: fn(&[ToolSpec], &[&[u8]]) -> Vec<ParseOutput>,
}

macro_rules! session_fn {
    ($m:ident) => {
        |tools, chunks| {
            let mut s = $m::Session::new($m::Parser::new(tools));
            let mut outs = Vec::new();
            for c in chunks {
                s.push(c);
                outs.push(s.parse().unwrap());
            }
            outs.push(s.finish().unwrap());
            outs
        }
    };
}

/// The format of a template.
fn format_of(template: &str) -> Option<Format> {
    Some(match template {
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use" | "NousResearch-Hermes-3-Llama-3.1-8B-tool_use" => {
            Format { arena: hermes::arena, parse: |t, x, p| hermes::Parser::new(t).parse(x, p).unwrap(), session: session_fn!(hermes) }
        }
        "Qwen3-Coder" => {
            Format { arena: qwen3_coder::arena, parse: |t, x, p| qwen3_coder::Parser::new(t).parse(x, p).unwrap(), session: session_fn!(qwen3_coder) }
        }
        _ => return None,
    })
}

/// The prefill of a case: the rendered generation prompt after the assistant turn header.
fn prefill_of(shared: &shared_data::Shared, template: &str, inputs: &Value) -> Result<String, String> {
    let path = shared.template(template);
    let tmpl = ChatTemplate::load(&path).map_err(|e| format!("template {template}: {e}"))?;
    let req = Request::from_json(inputs).map_err(|e| format!("request: {e}"))?;
    let rendered = tmpl.apply(&req).map_err(|e| format!("render: {e}"))?;
    Ok(formats::prefill(&rendered.generation_prompt).to_owned())
}

#[test]
fn formats_pass_their_corpus_cases() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let text = std::fs::read_to_string(shared.corpus().join("chat-cases.jsonl")).expect("the shared corpus");
    let mut ran = 0;
    let mut failures = Vec::new();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        if case["kind"] != "parse" || case["expect_failure"] == true {
            continue;
        }
        let template = case["template"].as_str().unwrap_or("");
        let inputs = &case["inputs"];
        let Some(format) = format_of(template) else { continue };
        let id = case["id"].as_str().unwrap();
        let tools: Vec<ToolSpec> = inputs["tools"].as_array().into_iter().flatten().filter_map(ToolSpec::from_openai).collect();
        let prefill = match prefill_of(&shared, template, inputs) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        let output = case["model_output"].as_str().unwrap();
        let partial = case["is_partial"] == true;
        let want: ChatMessage = serde_json::from_value(case["expected"].clone()).unwrap();
        ran += 1;

        // Specialized parser and arena agree on the input, whole and every prefix.
        let arena = (format.arena)(&tools).unwrap();
        let full = format!("{prefill}{output}");
        let bytes = full.as_bytes();
        let whole = (format.parse)(&tools, bytes, partial);
        if whole != arena.parse(bytes, partial).unwrap() {
            failures.push(format!("{id}: specialized parser and arena differ on the whole output"));
            continue;
        }
        if whole.result.outcome == peg_runtime::Outcome::Fail {
            failures.push(format!("{id}: the grammar does not match the output"));
            continue;
        }
        if let Some(end) = (0..=bytes.len()).find(|&e| (format.parse)(&tools, &bytes[..e], true) != arena.parse(&bytes[..e], true).unwrap()) {
            failures.push(format!("{id}: specialized parser and arena differ on the prefix of {end} bytes"));
            continue;
        }

        // The generated session equals one-shot parses, chunk by chunk.
        for size in [1, 3, 7] {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            let outs = (format.session)(&tools, &chunks);
            let mut end = 0;
            let mut want: Vec<ParseOutput> = chunks
                .iter()
                .map(|c| {
                    end += c.len();
                    (format.parse)(&tools, &bytes[..end], true)
                })
                .collect();
            want.push((format.parse)(&tools, bytes, false));
            if outs != want {
                failures.push(format!("{id}: the generated session differs from one-shot parses ({size}-byte chunks)"));
            }
        }

        let parser = ChatParser::new(Arc::new(arena), ChatParseOptions { tools: tools.clone(), prefill, ..Default::default() });
        let got = parser.parse(output, if partial { ParseMode::Partial } else { ParseMode::Complete }).unwrap();
        if let Err(e) = compare_messages(&got.message, &want) {
            failures.push(format!("{id}: {e}"));
            continue;
        }
        // The same message from the specialized parser, whole and for every prefix.
        let specialized = |out: &str, partial: bool| {
            parser.parse_with(out, if partial { ParseMode::Partial } else { ParseMode::Complete }, |x, p| Ok((format.parse)(&tools, x, p))).unwrap()
        };
        if specialized(output, partial) != got {
            failures.push(format!("{id}: specialized parser and arena map to different messages"));
            continue;
        }
        if let Some(end) = (0..=output.len())
            .filter(|&e| output.is_char_boundary(e))
            .find(|&e| specialized(&output[..e], true) != parser.parse(&output[..e], ParseMode::Partial).unwrap())
        {
            failures.push(format!("{id}: specialized parser and arena map the prefix of {end} bytes to different messages"));
            continue;
        }
        if !partial {
            let mut stream = parser.stream();
            let mut deltas = Vec::new();
            for c in stream_pieces(output, &[3]) {
                deltas.extend(stream.push(c).unwrap());
            }
            let (last, fin) = stream.finish().unwrap();
            deltas.extend(last);
            if ChatMessage::from_deltas(&deltas) != got.message || fin != got {
                failures.push(format!("{id}: streaming disagrees with one-shot"));
            }
        }
    }
    assert!(ran > 0, "no corpus case of these formats ran");
    assert!(failures.is_empty(), "{} of {ran} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn gbnf_snapshots() {
    insta::assert_snapshot!("hermes_gbnf", hermes::GBNF);
    insta::assert_snapshot!("hermes_gbnf_lazy", hermes::GBNF_LAZY.unwrap());
    insta::assert_snapshot!("qwen3_coder_gbnf_lazy", qwen3_coder::GBNF_LAZY.unwrap());
    let tools: Vec<ToolSpec> = vec![ToolSpec::new(
        "get_weather",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}),
    )];
    insta::assert_snapshot!("hermes_gbnf_lazy_with_tool", hermes::gbnf(&tools, true).unwrap());
    insta::assert_snapshot!("qwen3_coder_gbnf_lazy_with_tool", qwen3_coder::gbnf(&tools, true).unwrap());
}

mod fragments {
    //! Specialized parser and arena agree on random splices of each format's tokens, whole and
    //! every prefix as partial input.

    use super::*;
    use proptest::prelude::*;

    const QWEN: &[&str] = &[
        "<tool_call>",
        "\n",
        "<function=get_weather>",
        "<function=other>",
        "<parameter=city>",
        "<parameter=days>",
        "Paris",
        "3",
        "</parameter>",
        "</function>",
        "</tool_call>",
        "text ",
    ];
    const HERMES: &[&str] = &["<tool_call>", "</tool_call>", "{", "}", "\"name\": \"get_weather\"", ",", "\"arguments\": ", "{\"city\": 1}", " ", "hi"];

    fn splice(list: &'static [&'static str]) -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(list), 0..12).prop_map(|v| v.concat())
    }

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}))]
    }

    fn check(format: Format, input: &str) {
        let tools = tools();
        let arena = (format.arena)(&tools).unwrap();
        let b = input.as_bytes();
        assert_eq!((format.parse)(&tools, b, false), arena.parse(b, false).unwrap(), "{input:?}");
        for e in 0..=b.len() {
            assert_eq!((format.parse)(&tools, &b[..e], true), arena.parse(&b[..e], true).unwrap(), "{:?}", &input.as_bytes()[..e]);
        }
    }

    /// The generated `Session` (memo of final rule results) equals one-shot parses.
    macro_rules! session_agrees {
        ($m:ident, $input:expr, $size:expr) => {{
            let tools = tools();
            let parser = $m::Parser::new(&tools);
            let mut s = $m::Session::new(parser.clone());
            let b = $input.as_bytes();
            for chunk in b.chunks($size) {
                s.push(chunk);
                assert_eq!(s.parse().unwrap(), parser.parse(s.input(), true).unwrap(), "{:?}", String::from_utf8_lossy(s.input()));
            }
            assert_eq!(s.finish().unwrap(), parser.parse(b, false).unwrap(), "{:?}", $input);
        }};
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
        #[test]
        fn qwen3_coder_agrees(input in splice(QWEN)) {
            check(format_of("Qwen3-Coder").unwrap(), &input);
        }
        #[test]
        fn hermes_agrees(input in splice(HERMES)) {
            check(format_of("NousResearch-Hermes-3-Llama-3.1-8B-tool_use").unwrap(), &input);
        }
        #[test]
        fn sessions_agree(qwen in splice(QWEN), hermes_text in splice(HERMES), size in 1usize..6) {
            session_agrees!(qwen3_coder, qwen, size);
            session_agrees!(hermes, hermes_text, size);
        }
    }
}
