//! The chat formats the `chat` target parses with: the facade's hand-written Hermes and
//! Qwen3-Coder grammars, and the models analyzed from the repository's own templates (the test
//! templates of `autoparser`, the example, and three small ones of the fuzz crate reaching the
//! registry's builders), each prepared for a request declaring [`tools`], with thinking and
//! parallel calls on and off. Built once per process.

use std::sync::{Arc, OnceLock};

use autoparser::format::NAME_SLOT;
use autoparser::generator::{render_conversation, GrammarTrigger};
use autoparser::template::ChatTemplate;
use autoparser::{Model, Request};
use chat_peg::formats::{hermes, qwen3_coder};
use peg_runtime::chat::{ChatParseOptions, ChatParser, Strictness, ToolSpec};
use peg_runtime::gbnf::Grammar;
use serde_json::{json, Value};

/// One way of parsing output, with the text pieces fuzz inputs build outputs from.
pub struct Format {
    /// Which grammar or template, and the request variant.
    pub name: String,
    /// The lenient parser.
    pub parser: ChatParser,
    /// Marker strings the format uses (from the analysis, the preserved tokens, the triggers),
    /// then the pieces of its sample outputs (cut at the markers and between tokens).
    pub pieces: Vec<String>,
    /// Whole outputs as the template writes them (a call, two calls, plain content).
    pub samples: Vec<String>,
}

/// The request's tools: `get_weather(city: string, days: integer)`, both required, and
/// `run_query` with values of every other kind.
pub fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather forecast.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"]}}}),
        json!({"type": "function", "function": {"name": "run_query", "description": "Run a query.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}, "strict": {"type": "boolean"},
                "note": {"type": ["string", "null"]}, "filter": {"type": "object"}},
                "required": ["query"]}}}),
    ]
}

/// The tool names fuzz inputs write: the declared ones, then undeclared ones.
pub const TOOL_NAMES: [&str; 6] = ["get_weather", "run_query", "get_wether", "functions.get_weather", "", "python"];

/// The repository's templates, by path. Append only: a chat input picks its format by its
/// place in [`formats`] (regression inputs depend on it).
const TEMPLATES: &[(&str, &str)] = &[
    ("examples/chatml-tools/template.jinja", include_str!("../../../examples/chatml-tools/template.jinja")),
    ("fuzz/templates/harmony.jinja", include_str!("../../templates/harmony.jinja")),
    ("fuzz/templates/kimi.jinja", include_str!("../../templates/kimi.jinja")),
    ("fuzz/templates/lfm2.jinja", include_str!("../../templates/lfm2.jinja")),
    ("autoparser/tests/templates/addressed-special.jinja", include_str!("../../../autoparser/tests/templates/addressed-special.jinja")),
    ("autoparser/tests/templates/addressed-words.jinja", include_str!("../../../autoparser/tests/templates/addressed-words.jinja")),
    ("autoparser/tests/templates/call-id-after-special.jinja", include_str!("../../../autoparser/tests/templates/call-id-after-special.jinja")),
    ("autoparser/tests/templates/call-id-after-words.jinja", include_str!("../../../autoparser/tests/templates/call-id-after-words.jinja")),
    ("autoparser/tests/templates/cdata-special.jinja", include_str!("../../../autoparser/tests/templates/cdata-special.jinja")),
    ("autoparser/tests/templates/cdata-words.jinja", include_str!("../../../autoparser/tests/templates/cdata-words.jinja")),
    ("autoparser/tests/templates/content-after-calls-special.jinja", include_str!("../../../autoparser/tests/templates/content-after-calls-special.jinja")),
    ("autoparser/tests/templates/content-after-calls-words.jinja", include_str!("../../../autoparser/tests/templates/content-after-calls-words.jinja")),
    ("autoparser/tests/templates/envelopes-special.jinja", include_str!("../../../autoparser/tests/templates/envelopes-special.jinja")),
    ("autoparser/tests/templates/envelopes-words.jinja", include_str!("../../../autoparser/tests/templates/envelopes-words.jinja")),
    ("autoparser/tests/templates/json-list-prefix-special.jinja", include_str!("../../../autoparser/tests/templates/json-list-prefix-special.jinja")),
    ("autoparser/tests/templates/json-list-prefix-words.jinja", include_str!("../../../autoparser/tests/templates/json-list-prefix-words.jinja")),
    ("autoparser/tests/templates/nested-tags-special.jinja", include_str!("../../../autoparser/tests/templates/nested-tags-special.jinja")),
    ("autoparser/tests/templates/nested-tags-words.jinja", include_str!("../../../autoparser/tests/templates/nested-tags-words.jinja")),
    ("autoparser/tests/templates/python-calls-special.jinja", include_str!("../../../autoparser/tests/templates/python-calls-special.jinja")),
    ("autoparser/tests/templates/python-calls-words.jinja", include_str!("../../../autoparser/tests/templates/python-calls-words.jinja")),
    ("autoparser/tests/templates/sentinels-special.jinja", include_str!("../../../autoparser/tests/templates/sentinels-special.jinja")),
    ("autoparser/tests/templates/sentinels-words.jinja", include_str!("../../../autoparser/tests/templates/sentinels-words.jinja")),
    ("autoparser/tests/fixtures/literal-values.jinja", include_str!("../../../autoparser/tests/fixtures/literal-values.jinja")),
    ("autoparser/tests/fixtures/parts-after-prompt.jinja", include_str!("../../../autoparser/tests/fixtures/parts-after-prompt.jinja")),
    ("autoparser/tests/fixtures/tagged-raw-values.jinja", include_str!("../../../autoparser/tests/fixtures/tagged-raw-values.jinja")),
    ("autoparser/tests/fixtures/typed-openers.jinja", include_str!("../../../autoparser/tests/fixtures/typed-openers.jinja")),
    ("autoparser/tests/recovery/call-id-special.jinja", include_str!("../../../autoparser/tests/recovery/call-id-special.jinja")),
    ("autoparser/tests/recovery/call-id-words.jinja", include_str!("../../../autoparser/tests/recovery/call-id-words.jinja")),
    ("autoparser/tests/recovery/deepseek-v3.1-sections.jinja", include_str!("../../../autoparser/tests/recovery/deepseek-v3.1-sections.jinja")),
    ("autoparser/tests/recovery/phi-4-mini-functools.jinja", include_str!("../../../autoparser/tests/recovery/phi-4-mini-functools.jinja")),
    ("autoparser/tests/probes/attribute-tags.jinja", include_str!("../../../autoparser/tests/probes/attribute-tags.jinja")),
    ("autoparser/tests/probes/calls-indented-json.jinja", include_str!("../../../autoparser/tests/probes/calls-indented-json.jinja")),
    ("autoparser/tests/probes/calls-keyed-by-name.jinja", include_str!("../../../autoparser/tests/probes/calls-keyed-by-name.jinja")),
    ("autoparser/tests/probes/fenced-json-list.jinja", include_str!("../../../autoparser/tests/probes/fenced-json-list.jinja")),
    ("autoparser/tests/probes/json-call-python-args.jinja", include_str!("../../../autoparser/tests/probes/json-call-python-args.jinja")),
    ("autoparser/tests/probes/name-tag-json-body.jinja", include_str!("../../../autoparser/tests/probes/name-tag-json-body.jinja")),
    ("autoparser/tests/probes/openai-shaped-call.jinja", include_str!("../../../autoparser/tests/probes/openai-shaped-call.jinja")),
    ("autoparser/tests/probes/prompt-trailing-space.jinja", include_str!("../../../autoparser/tests/probes/prompt-trailing-space.jinja")),
    ("autoparser/tests/probes/python-call-list.jinja", include_str!("../../../autoparser/tests/probes/python-call-list.jinja")),
    ("autoparser/tests/probes/quoted-python-values.jinja", include_str!("../../../autoparser/tests/probes/quoted-python-values.jinja")),
    ("autoparser/tests/probes/reasoning-words.jinja", include_str!("../../../autoparser/tests/probes/reasoning-words.jinja")),
    ("autoparser/tests/probes/solution-markers.jinja", include_str!("../../../autoparser/tests/probes/solution-markers.jinja")),
    ("autoparser/tests/probes/think-brackets.jinja", include_str!("../../../autoparser/tests/probes/think-brackets.jinja")),
    ("autoparser/tests/probes/turn-after-a-line-break.jinja", include_str!("../../../autoparser/tests/probes/turn-after-a-line-break.jinja")),
    ("autoparser/tests/probes/whole-call-python-dict.jinja", include_str!("../../../autoparser/tests/probes/whole-call-python-dict.jinja")),
    ("autoparser/tests/probes/yaml-lines.jinja", include_str!("../../../autoparser/tests/probes/yaml-lines.jinja")),
    ("autoparser/tests/probes/json-list-after-content.jinja", include_str!("../../../autoparser/tests/probes/json-list-after-content.jinja")),
    ("autoparser/tests/probes/content-in-call-markers.jinja", include_str!("../../../autoparser/tests/probes/content-in-call-markers.jinja")),
    ("autoparser/tests/probes/bracketed-angle-markers.jinja", include_str!("../../../autoparser/tests/probes/bracketed-angle-markers.jinja")),
    ("autoparser/tests/probes/parts-opened-by-markers.jinja", include_str!("../../../autoparser/tests/probes/parts-opened-by-markers.jinja")),
    ("autoparser/tests/probes/header-per-part.jinja", include_str!("../../../autoparser/tests/probes/header-per-part.jinja")),
    ("autoparser/tests/probes/json-calls-glued-after-content.jinja", include_str!("../../../autoparser/tests/probes/json-calls-glued-after-content.jinja")),
    ("autoparser/tests/probes/raw-inline-values.jinja", include_str!("../../../autoparser/tests/probes/raw-inline-values.jinja")),
    ("autoparser/tests/probes/element-values-after-a-token.jinja", include_str!("../../../autoparser/tests/probes/element-values-after-a-token.jinja")),
    ("autoparser/tests/probes/thinking-variable-cuts-content.jinja", include_str!("../../../autoparser/tests/probes/thinking-variable-cuts-content.jinja")),
    ("autoparser/tests/probes/tools-before-a-last-user-message.jinja", include_str!("../../../autoparser/tests/probes/tools-before-a-last-user-message.jinja")),
    ("autoparser/tests/probes/mode-switch-on-the-last-user-message.jinja", include_str!("../../../autoparser/tests/probes/mode-switch-on-the-last-user-message.jinja")),
    ("autoparser/tests/probes/prompt-opens-reasoning-history-never-writes.jinja", include_str!("../../../autoparser/tests/probes/prompt-opens-reasoning-history-never-writes.jinja")),
    ("autoparser/tests/probes/cdata-values.jinja", include_str!("../../../autoparser/tests/probes/cdata-values.jinja")),
    ("autoparser/tests/probes/calls-only-with-null-content.jinja", include_str!("../../../autoparser/tests/probes/calls-only-with-null-content.jinja")),
    ("autoparser/tests/probes/last-assistant-as-continuation.jinja", include_str!("../../../autoparser/tests/probes/last-assistant-as-continuation.jinja")),
    ("autoparser/tests/probes/id-and-name-attributes.jinja", include_str!("../../../autoparser/tests/probes/id-and-name-attributes.jinja")),
    ("autoparser/tests/probes/xml-element-args.jinja", include_str!("../../../autoparser/tests/probes/xml-element-args.jinja")),
    ("autoparser/tests/probes/tool-code-fence.jinja", include_str!("../../../autoparser/tests/probes/tool-code-fence.jinja")),
    ("autoparser/tests/probes/attribute-name-json-body.jinja", include_str!("../../../autoparser/tests/probes/attribute-name-json-body.jinja")),
    ("autoparser/tests/probes/kv-lines-in-named-call.jinja", include_str!("../../../autoparser/tests/probes/kv-lines-in-named-call.jinja")),
    ("autoparser/tests/probes/stringified-arguments.jinja", include_str!("../../../autoparser/tests/probes/stringified-arguments.jinja")),
    ("autoparser/tests/probes/name-line-python-kwargs.jinja", include_str!("../../../autoparser/tests/probes/name-line-python-kwargs.jinja")),
    ("autoparser/tests/probes/typed-parameter-attributes.jinja", include_str!("../../../autoparser/tests/probes/typed-parameter-attributes.jinja")),
    ("autoparser/tests/probes/json-name-line.jinja", include_str!("../../../autoparser/tests/probes/json-name-line.jinja")),
    ("autoparser/tests/probes/numbered-call-attributes.jinja", include_str!("../../../autoparser/tests/probes/numbered-call-attributes.jinja")),
    ("autoparser/tests/probes/numbered-call-lines.jinja", include_str!("../../../autoparser/tests/probes/numbered-call-lines.jinja")),
    ("autoparser/tests/probes/name-attribute-and-json-name.jinja", include_str!("../../../autoparser/tests/probes/name-attribute-and-json-name.jinja")),
    ("autoparser/tests/probes/name-in-header-and-invoke.jinja", include_str!("../../../autoparser/tests/probes/name-in-header-and-invoke.jinja")),
    ("autoparser/tests/probes/python-lines-in-section.jinja", include_str!("../../../autoparser/tests/probes/python-lines-in-section.jinja")),
    ("autoparser/tests/probes/call-word-python.jinja", include_str!("../../../autoparser/tests/probes/call-word-python.jinja")),
];

/// Every format, built on first use.
pub fn formats() -> &'static [Format] {
    static FORMATS: OnceLock<Vec<Format>> = OnceLock::new();
    FORMATS.get_or_init(build)
}

fn build() -> Vec<Format> {
    let specs: Vec<ToolSpec> = tools().iter().filter_map(ToolSpec::from_openai).collect();
    let options = ChatParseOptions { tools: specs.clone(), strictness: Strictness::Lenient, ..ChatParseOptions::default() };
    let mut out = vec![
        hand_written("hermes", Arc::new(hermes::arena(&specs).expect("the Hermes arena builds")), &options, HERMES_MARKERS, HERMES_SAMPLES),
        hand_written("qwen3_coder", Arc::new(qwen3_coder::arena(&specs).expect("the Qwen3-Coder arena builds")), &options, QWEN_MARKERS, QWEN_SAMPLES),
    ];
    for (path, source) in TEMPLATES {
        let template = ChatTemplate::from_source(source, "<s>", "</s>").unwrap_or_else(|e| panic!("{path} compiles: {e}"));
        let model = Model::analyze(template).unwrap_or_else(|e| panic!("{path} analyzes: {e}"));
        for (thinking, parallel) in [(true, true), (false, false)] {
            out.push(analyzed(path, &model, thinking, parallel));
        }
    }
    out
}

const HERMES_MARKERS: &[&str] = &["<tool_call>", "</tool_call>", "{\"name\": \"", "\", \"arguments\": ", "<think>", "</think>"];
const HERMES_SAMPLES: &[&str] = &[
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}</tool_call>\n<tool_call>{\"name\": \"run_query\", \"arguments\": {\"query\": \"rain\", \"tags\": [\"a\", \"b\"], \"strict\": true, \"note\": null}}</tool_call>",
];
const QWEN_MARKERS: &[&str] = &["<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", "<think>", "</think>"];
const QWEN_SAMPLES: &[&str] = &[
    "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=run_query>\n<parameter=query>\nrain \"today\"\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=strict>\ntrue\n</parameter>\n<parameter=note>\nnull\n</parameter>\n<parameter=filter>\n{\"x\": 1}\n</parameter>\n</function>\n</tool_call>",
];

fn hand_written(name: &str, arena: Arc<peg_runtime::Arena>, options: &ChatParseOptions, markers: &[&str], samples: &[&str]) -> Format {
    let markers: Vec<String> = markers.iter().map(|m| m.to_string()).collect();
    let samples: Vec<String> = samples.iter().map(|s| s.to_string()).collect();
    Format { name: name.into(), parser: ChatParser::new(arena, options.clone()), pieces: pieces(markers, &samples), samples }
}

fn request(messages: Value, thinking: bool, parallel: bool) -> Request {
    Request::from_json(&json!({"messages": messages, "tools": tools(), "parallel_tool_calls": parallel, "enable_thinking": thinking}))
        .expect("the request is valid")
}

fn analyzed(path: &str, model: &Model, thinking: bool, parallel: bool) -> Format {
    let name = format!("{path} (thinking {thinking}, parallel calls {parallel})");
    let user = json!({"role": "user", "content": "What is the weather in Paris?"});
    let prepared = model.prepare(&request(json!([user]), thinking, parallel)).unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    if let Some(g) = &prepared.grammar {
        Grammar::parse(g).unwrap_or_else(|e| panic!("{name}: the request's grammar does not parse: {e}"));
    }
    let mut markers = Vec::new();
    let analysis = serde_json::to_value(model.analysis()).expect("the analysis serializes");
    strings(&analysis, &mut markers);
    markers.extend(prepared.preserved_tokens.iter().cloned());
    markers.extend(prepared.additional_stops.iter().cloned());
    markers.extend(prepared.grammar_triggers.iter().filter_map(|t| match t {
        GrammarTrigger::Word(w) => Some(w.clone()),
        GrammarTrigger::Pattern(_) => None,
    }));
    markers.extend([prepared.prefill.clone(), prepared.generation_prompt.clone()]);
    // Markers with a name slot, once per declared tool name.
    let markers: Vec<String> = markers
        .into_iter()
        .flat_map(|m| if m.contains(NAME_SLOT) { TOOL_NAMES[..2].iter().map(|n| m.replace(NAME_SLOT, n)).collect() } else { vec![m] })
        .filter(|m| !m.is_empty() && m.len() <= 80)
        .collect();

    // What the template writes for an assistant turn, after the prompt.
    let prompt = render_conversation(model.template(), model.analysis(), &request(json!([user]), thinking, parallel), true).unwrap_or_default();
    let call = |id: &str, name: &str, args: Value| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}});
    let turns = [
        json!({"role": "assistant", "reasoning_content": "The user wants a forecast.", "content": "Let me check.",
            "tool_calls": [call("call_1", "get_weather", json!({"city": "Paris", "days": 3}))]}),
        json!({"role": "assistant", "content": "",
            "tool_calls": [call("call_1", "get_weather", json!({"city": "Paris", "days": 3})),
                call("call_2", "run_query", json!({"query": "rain \"today\"", "limit": 5, "ratio": 0.5, "tags": ["a", "b"],
                    "strict": true, "note": null, "filter": {"x": 1}}))]}),
        json!({"role": "assistant", "reasoning_content": "Easy.", "content": "It is sunny in Paris."}),
    ];
    let mut samples = Vec::new();
    for turn in turns {
        let Ok(full) = render_conversation(model.template(), model.analysis(), &request(json!([user, turn]), thinking, parallel), false) else {
            continue;
        };
        let common = full.bytes().zip(prompt.bytes()).take_while(|(a, b)| a == b).count();
        let mut start = common;
        while !full.is_char_boundary(start) {
            start -= 1;
        }
        let sample = full[start..].trim_end();
        let sample = sample.strip_suffix(model.analysis().end_of_turn.trim()).unwrap_or(sample);
        if !sample.is_empty() {
            samples.push(sample.to_string());
        }
    }
    Format { name, parser: prepared.parser(Strictness::Lenient), pieces: pieces(markers, &samples), samples }
}

/// The string leaves of `v`, but its notes (prose).
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().filter(|(k, _)| *k != "notes").for_each(|(_, x)| strings(x, out)),
        _ => {}
    }
}

/// The markers, then the samples cut into markers and tokens (runs of letters and digits,
/// runs of whitespace, single other characters), without duplicates.
fn pieces(markers: Vec<String>, samples: &[String]) -> Vec<String> {
    let mut sorted = markers.clone();
    sorted.sort_by_key(|m| std::cmp::Reverse(m.len()));
    let mut out = markers;
    for sample in samples {
        let mut rest = sample.as_str();
        while let Some(c) = rest.chars().next() {
            let len = match sorted.iter().find(|m| rest.starts_with(m.as_str())) {
                Some(m) => m.len(),
                None if c.is_alphanumeric() => rest.find(|c: char| !c.is_alphanumeric()).unwrap_or(rest.len()),
                None if c.is_whitespace() => rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len()),
                None => c.len_utf8(),
            };
            out.push(rest[..len].to_string());
            rest = &rest[len..];
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}
