//! The formats written with `chat_peg!` for Kimi K2, Mistral (Small 3.2, Devstral, Ministral 3
//! reasoning, NeMo) and DeepSeek V3.1 over every corpus `parse` case of their templates, parsed
//! by the macro's own parser (`Chat`): one-shot, and streamed through its generated `Session`
//! in chunks of every size from 1 to 16 bytes. Judged as `autoparser check` does (corpus
//! README): content and reasoning trimmed, names and non-empty ids equal, arguments as JSON
//! values. The stream's deltas add up to the one-shot message and its final message equals it;
//! the one-shot message equals that of the runtime `ChatParser` over the arena. The lazy grammar
//! (with the request's tools) accepts each complete output with calls from its first trigger
//! word outside the reasoning on, as does llama.cpp's sampler, under the project's recognizer;
//! so do outputs of two and three parallel calls written here for each format.

use autoparser::Request;
use autoparser::template::ChatTemplate;
use autoparser::verify::compare_messages;
use chat_peg::formats::{self, deepseek_v3_1, kimi_k2, mistral, mistral_nemo, mistral_reasoning, mistral_reasoning_json};
use peg_runtime::chat::{ChatMessage, ChatParseOptions, ParseMode, ParsedMessage, ToolSpec, stream_pieces};
use peg_runtime::gbnf::Grammar;
use serde_json::{Value, json};

mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["macro_formats_pass_their_corpus_cases"];

/// What the test needs of a generated grammar module, for one request.
trait Format {
    /// One-shot message by the specialized parser, and by a runtime `ChatParser` over the arena.
    fn parse(&self, output: &str, mode: ParseMode) -> (ParsedMessage, ParsedMessage);
    /// The message streamed in `sizes`-byte chunks through the generated `Session`: the deltas
    /// added up, and the stream's own final message (its message so far for partial output).
    fn stream(&self, output: &str, size: usize, partial: bool) -> (ChatMessage, ParsedMessage);
    /// The lazy grammar for the request's tools, and its trigger words.
    fn lazy(&self) -> (String, &'static [&'static str]);
}

macro_rules! format_impl {
    ($m:ident) => {
        impl Format for ($m::Chat, Vec<ToolSpec>) {
            fn parse(&self, output: &str, mode: ParseMode) -> (ParsedMessage, ParsedMessage) {
                (self.0.parse(output, mode).unwrap(), self.0.chat_parser().parse(output, mode).unwrap())
            }
            fn stream(&self, output: &str, size: usize, partial: bool) -> (ChatMessage, ParsedMessage) {
                let mut stream = self.0.stream();
                let mut deltas = Vec::new();
                for piece in stream_pieces(output, &[size]) {
                    deltas.extend(stream.push(piece).unwrap());
                }
                let last = if partial {
                    ParsedMessage { message: stream.message().clone(), diagnostic: None, recoveries: stream.recoveries().to_vec() }
                } else {
                    let (last, fin) = stream.finish().unwrap();
                    deltas.extend(last);
                    fin
                };
                (ChatMessage::from_deltas(&deltas), last)
            }
            fn lazy(&self) -> (String, &'static [&'static str]) {
                ($m::gbnf(&self.1, true).unwrap(), $m::TRIGGERS)
            }
        }
    };
}
format_impl!(kimi_k2);
format_impl!(mistral);
format_impl!(mistral_reasoning);
format_impl!(mistral_reasoning_json);
format_impl!(mistral_nemo);
format_impl!(deepseek_v3_1);

/// The format for a request to a template: `None` for templates of other models. Ministral 3
/// keeps reasoning in the content unless the request separates it, and answers a response
/// schema with the JSON value.
fn format_of(template: &str, inputs: &Value, options: ChatParseOptions) -> Option<Box<dyn Format>> {
    let tools = options.tools.clone();
    Some(match template {
        "Kimi-K2-Thinking" | "Kimi-K2-Instruct" | "moonshotai-Kimi-K2" => Box::new((kimi_k2::Chat::new(options).unwrap(), tools)),
        "Mistral-Small-3.2-24B-Instruct-2506" | "unsloth-mistral-Devstral-Small-2507" => Box::new((mistral::Chat::new(options).unwrap(), tools)),
        "mistralai-Ministral-3-14B-Reasoning-2512" => {
            let separate = inputs["reasoning_format"].as_str().is_some_and(|f| f != "none");
            let schema = inputs["json_schema"].as_str().is_some_and(|s| !s.is_empty()) || inputs["json_schema"].is_object();
            match (separate, schema) {
                (false, _) => Box::new((mistral::Chat::new(options).unwrap(), tools)),
                (true, false) => Box::new((mistral_reasoning::Chat::new(options).unwrap(), tools)),
                (true, true) => Box::new((mistral_reasoning_json::Chat::new(options).unwrap(), tools)),
            }
        }
        "mistralai-Mistral-Nemo-Instruct-2407" => Box::new((mistral_nemo::Chat::new(options).unwrap(), tools)),
        "deepseek-ai-DeepSeek-V3.1" => Box::new((deepseek_v3_1::Chat::new(options).unwrap(), tools)),
        _ => return None,
    })
}

/// The prefill of a case: the rendered generation prompt after the assistant turn header.
fn prefill_of(shared: &shared_data::Shared, template: &str, inputs: &Value) -> Result<String, String> {
    let tmpl = ChatTemplate::load(&shared.template(template)).map_err(|e| format!("template {template}: {e}"))?;
    let req = Request::from_json(inputs).map_err(|e| format!("request: {e}"))?;
    let rendered = tmpl.apply(&req).map_err(|e| format!("render: {e}"))?;
    Ok(formats::prefill(&rendered.generation_prompt).to_owned())
}

/// Whether the lazy grammar accepts `output` from its first trigger word past `from` (the
/// end of the reasoning); `true` when no trigger occurs (the grammar never applies).
fn lazy_accepts(format: &dyn Format, output: &str, from: usize) -> Result<(), String> {
    let (text, triggers) = format.lazy();
    let grammar = Grammar::parse(&text).map_err(|e| format!("the lazy grammar does not parse: {e}"))?;
    let Some(at) = lazy_start(triggers, output, from) else { return Ok(()) };
    if grammar.accepts(&output[at..]) { Ok(()) } else { Err(format!("the lazy grammar rejects {:?}", &output[at..])) }
}

/// Where the first trigger word past `from` starts in `output`, if one does.
fn lazy_start(triggers: &[&str], output: &str, from: usize) -> Option<usize> {
    triggers.iter().filter_map(|t| output[from..].find(t).map(|i| from + i)).min()
}

/// Where the reasoning ends in `output` (its close marker included), by the one-shot parse.
fn reasoning_end(message: &ChatMessage, output: &str) -> usize {
    let r = message.reasoning_content.trim();
    if r.is_empty() {
        return 0;
    }
    output.find(r).map_or(0, |i| i + r.len())
}

#[test]
fn macro_formats_pass_their_corpus_cases() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let text = std::fs::read_to_string(shared.corpus().join("chat-cases.jsonl")).expect("the shared corpus");
    let (mut ran, mut lazy_checked) = (0, 0);
    let mut templates = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        if case["kind"] != "parse" || case["expect_failure"] == true {
            continue;
        }
        let template = case["template"].as_str().unwrap_or("");
        let inputs = &case["inputs"];
        let id = case["id"].as_str().unwrap();
        let tools: Vec<ToolSpec> = inputs["tools"].as_array().into_iter().flatten().filter_map(ToolSpec::from_openai).collect();
        let prefill = match format_of(template, inputs, ChatParseOptions::default()) {
            None => continue,
            Some(_) => match prefill_of(&shared, template, inputs) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("{id}: {e}"));
                    continue;
                }
            },
        };
        let format = format_of(template, inputs, ChatParseOptions { tools: tools.clone(), prefill: prefill.clone(), ..Default::default() }).expect("a format");
        templates.insert(template.to_owned());
        ran += 1;
        let output = case["model_output"].as_str().unwrap();
        let partial = case["is_partial"] == true;
        let want: ChatMessage = serde_json::from_value(case["expected"].clone()).unwrap();
        let mode = if partial { ParseMode::Partial } else { ParseMode::Complete };

        let (got, by_arena) = format.parse(output, mode);
        if let Err(e) = compare_messages(&got.message, &want) {
            failures.push(format!("{id}: {e} (prefill {prefill:?})"));
            continue;
        }
        if got != by_arena {
            failures.push(format!("{id}: the specialized parser and the arena map to different messages"));
            continue;
        }
        for size in 1..=16 {
            let (added, last) = format.stream(output, size, partial);
            if added != got.message || (!partial && last != got) || (partial && last.message != got.message) {
                failures.push(format!("{id}: streamed in {size}-byte chunks: {added:?}, expected {:?}", got.message));
                break;
            }
        }
        if !partial && !tools.is_empty() {
            lazy_checked += 1;
            if let Err(e) = lazy_accepts(&*format, output, reasoning_end(&got.message, output)) {
                failures.push(format!("{id}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {ran} failed:\n{}", failures.len(), failures.join("\n"));
    // Every format met its models' cases.
    for t in
        ["Kimi-K2-Thinking", "moonshotai-Kimi-K2", "Mistral-Small-3.2-24B-Instruct-2506", "unsloth-mistral-Devstral-Small-2507", "deepseek-ai-DeepSeek-V3.1"]
    {
        assert!(templates.contains(t), "no corpus case of {t}");
    }
    assert!(lazy_checked > 10, "{lazy_checked} lazy grammar checks");
}

/// Two and three parallel calls, with whitespace between and after them, in each format: the
/// lazy grammar accepts them from the first trigger word on, and the macro's parser reads every
/// call, one-shot and streamed.
#[test]
fn lazy_grammars_accept_parallel_calls() {
    let tools: Vec<ToolSpec> = ["get_time", "get_weather", "search"]
        .iter()
        .map(|n| ToolSpec::new(*n, json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}})))
        .collect();
    let args = [r#"{"city": "Paris"}"#, r#"{"city": "Tokyo", "days": 3}"#, r#"{}"#];
    let names = ["get_time", "get_weather", "search"];
    let options = || ChatParseOptions { tools: tools.clone(), ..Default::default() };
    /// A format, how it writes call `i` of a name and arguments, what comes before and after.
    type Case = (Box<dyn Format>, fn(usize, &str, &str) -> String, (&'static str, &'static str));
    let cases: Vec<Case> = vec![
        (
            Box::new((kimi_k2::Chat::new(options()).unwrap(), tools.clone())),
            |i, n, a| format!("<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{a}<|tool_call_end|>\n"),
            ("<think>Hmm.</think>Let me check.<|tool_calls_section_begin|>", "<|tool_calls_section_end|>\n"),
        ),
        (Box::new((mistral::Chat::new(options()).unwrap(), tools.clone())), |_, n, a| format!("[TOOL_CALLS]{n}[ARGS]{a}\n"), ("Let me check.", "")),
        (
            Box::new((mistral_reasoning::Chat::new(options()).unwrap(), tools.clone())),
            |i, n, a| format!("[TOOL_CALLS]{n}[CALL_ID]c{i}[ARGS]{a}"),
            ("[THINK]Hmm, [TOOL_CALLS] maybe.[/THINK]", " "),
        ),
        (
            Box::new((mistral_nemo::Chat::new(options()).unwrap(), tools.clone())),
            |i, n, a| format!("{}{{\"name\": \"{n}\", \"arguments\": {a}, \"id\": \"c{i}\"}}", if i == 0 { "" } else { ", " }),
            ("Sure.[TOOL_CALLS][", "]"),
        ),
        (
            Box::new((deepseek_v3_1::Chat::new(options()).unwrap(), tools.clone())),
            |_, n, a| format!("<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{a}<｜tool▁call▁end｜>"),
            ("<think>Hmm.</think>Checking.<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>\n"),
        ),
    ];
    for (format, call, (before, after)) in &cases {
        for n in [2, 3] {
            let calls: String = (0..n).map(|i| call(i, names[i], args[i])).collect();
            let output = format!("{before}{calls}{after}");
            let (got, by_arena) = format.parse(&output, ParseMode::Complete);
            assert_eq!(got, by_arena, "{output}");
            assert!(got.diagnostic.is_none(), "{output}: {:?}", got.diagnostic);
            let read: Vec<(&str, Value)> = got.message.tool_calls.iter().map(|c| (c.name.as_str(), serde_json::from_str(&c.arguments).unwrap())).collect();
            let written: Vec<(&str, Value)> = (0..n).map(|i| (names[i], serde_json::from_str(args[i]).unwrap())).collect();
            assert_eq!(read, written, "{output}");
            for size in [1, 2, 3, 5, 16] {
                let (added, last) = format.stream(&output, size, false);
                assert_eq!((&added, &last), (&got.message, &got), "{output} in {size}-byte chunks");
            }
            lazy_accepts(&**format, &output, reasoning_end(&got.message, &output)).unwrap();
            let (text, triggers) = format.lazy();
            assert!(triggers.iter().any(|t| output.contains(t)), "{output}: no trigger of {triggers:?}");
            // The lazy grammar ends where the output does: trailing text it does not allow.
            let grammar = Grammar::parse(&text).unwrap();
            let at = lazy_start(triggers, &output, reasoning_end(&got.message, &output)).unwrap();
            assert!(!grammar.accepts(&format!("{} trailing prose", &output[at..])), "{output}");
        }
    }
}
