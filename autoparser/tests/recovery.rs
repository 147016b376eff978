//! Acceptance table of issue #13: lenient parsing reads sloppy model output as what the model
//! meant and reports each recovery (kind + byte offset into the output); strict parsing fails.
//!
//! Each row: a template (shared, or a fixture in `tests/recovery/`), the request's tools, the
//! thinking switch, a sloppy output, the expected message and the expected recoveries in output
//! order, each with an anchor: the text `output[offset..]` starts with (leading whitespace
//! skipped), `""` to check only that the offset is inside the output, `"$"` for the end of the
//! output (only whitespace after it). Anchor conventions:
//! - a deviating call (`call_shape`, `call_in_prose`): the call's first byte (a call in prose:
//!   its fence or wrapper's, if any);
//! - `call_separator`: the separator before the next call (where each call comes in a wrapper
//!   of its own, that wrapper); `text_around_calls`: the first byte of the text between the
//!   calls (or after them);
//! - `missing_close`: where the close belongs (before the next open, or the end of the output;
//!   whatever is left open at the end is one recovery);
//! - `reasoning_marker`: the repeated start marker, or the tool-call marker that ends reasoning;
//! - `extra_wrapper`, `code_fence`, `arguments_as_string`, `arguments_as_python`: the wrapper /
//!   fence / string's / dict's first byte.
//!
//! One test runs the whole table and reports every failing row at once (a scoreboard).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use RecoveryKind::*;
use autoparser::Request;
use autoparser::analysis::analyze;
use autoparser::format::TemplateAnalysis;
use autoparser::generator::{PreparedRequest, generate, render_conversation};
use autoparser::template::ChatTemplate;
use autoparser::verify::compare_messages;
use peg_runtime::chat::ParseMode;
use peg_runtime::chat::{ChatDelta, ChatMessage, ChatParser, ParsedMessage, RecoveryKind, Strictness, stream_pieces};
use serde_json::{Value, json};

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["sloppy_outputs_recover (the rows on shared templates)", "well_formed_outputs_report_no_recovery (the shared templates)"];

// Templates.
const HERMES: &str = "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use";
const QWEN25: &str = "Qwen-Qwen2.5-7B-Instruct";
const QWEN3: &str = "Qwen-Qwen3-0.6B";
const LLAMA31: &str = "meta-llama-Llama-3.1-8B-Instruct";
const LLAMA32: &str = "meta-llama-Llama-3.2-3B-Instruct";
const LLAMA33: &str = "meta-llama-Llama-3.3-70B-Instruct";
const NEMO: &str = "mistralai-Mistral-Nemo-Instruct-2407";
const DSV31: &str = "deepseek-ai-DeepSeek-V3.1";
const KIMI: &str = "moonshotai-Kimi-K2";
const MISTRAL: &str = "Mistral-Small-3.2-24B-Instruct-2506";
const DEVSTRAL: &str = "unsloth-mistral-Devstral-Small-2507";
/// LFM2 (the registry's pythonic calls): `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.
const LFM2: &str = "LFM2-8B-A1B";
/// Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`.
const GEMMA4: &str = "google-gemma-4-31B-it";
/// Addressed parts: `>>>all\n` text, `>>>NAME\n` a call's JSON arguments.
const FUNCTIONARY32: &str = "meetkai-functionary-medium-v3.2";
const QCODER: &str = "Qwen3-Coder";
const GLM: &str = "GLM-4.6";
const QWEN35: &str = "Qwen3.5-4B";
const MINIMAX: &str = "MiniMax-M2";
const GPT_OSS: &str = "openai-gpt-oss-120b";
/// Fixture: DeepSeek-V3.1 style whose section markers wrap the call loop.
const DS_SECTIONS: &str = "recovery/deepseek-v3.1-sections";
/// Probe: tags spelled with special tokens and attributes, typed per value (Kimi K3's structure).
const ATTRIBUTE_TAGS: &str = "probes/attribute-tags";
/// Probe: every part opens with the turn header, the prompt stopping inside it (HyperCLOVA X's structure).
const HEADER_PER_PART: &str = "probes/header-per-part";
/// Probe: parts addressed `to=NAME<|message|>`, a call's body naming the tool again in an invoke element.
const NAME_IN_HEADER: &str = "probes/name-in-header-and-invoke";
/// Probe: `<tool_call name="f">` before a JSON call object naming the tool again.
const NAMED_OPENER: &str = "probes/name-attribute-and-json-name";
/// Probe: Python calls one per line inside `<function_calls>`.
const PYTHON_LINES: &str = "probes/python-lines-in-section";
/// Probe: `Call: ` before each Python call.
const CALL_WORD: &str = "probes/call-word-python";
/// Fixture: Phi-4-mini style `functools[{"name": …, "arguments": …}]`.
const PHI: &str = "recovery/phi-4-mini-functools";
/// Fixture: a call id marker between name and arguments, special tokens.
const CALL_ID_SPECIAL: &str = "recovery/call-id-special";
/// Fixture: a call id marker between name and arguments, bracket words.
const CALL_ID_WORDS: &str = "recovery/call-id-words";
/// Fixture: lists the tools but writes no call in history (no call format to learn).
const CALLS_UNSHOWN: &str = "recovery/calls-unshown";
/// Never writes calls; its system prompt asks for `<|tool_call|>` and a JSON list.
const GRANITE33: &str = "ibm-granite-granite-3.3-2B-Instruct";
/// Fixture: ReAct-style `Action:` / `Action Input:` lines, the reply text after the calls.
const REACT: &str = "templates/content-after-calls-words";
/// LFM2.5 (general analysis): Python calls in a list inside `<|tool_call_start|>[` … `]<|tool_call_end|>`.
const LFM25: &str = "LFM2.5-8B-A1B";
/// Plain-word envelopes: `BEGIN TOOLS`, then `BEGIN CALL NAME` + JSON + `END CALL` per call.
const ENVELOPES: &str = "templates/envelopes-words";
/// `<tool_calls>` around calls named by their own element (`<get_weather><city>…`).
const NESTED_TAGS: &str = "templates/nested-tags-words";
/// Probe: no marker at all, the name on a line and the JSON arguments on the next.
const NAME_LINE: &str = "probes/json-name-line";

struct Row {
    name: &'static str,
    template: &'static str,
    tools: Value,
    /// `enable_thinking` (and `thinking`); `None`: the request's default.
    thinking: Option<bool>,
    output: &'static str,
    want: Value,
    recoveries: Vec<(RecoveryKind, &'static str)>,
    /// Where the output leaves the grammar (an anchor, as for recoveries), if it does.
    diagnostic: Option<&'static str>,
    /// The request's `parallel_tool_calls` (true unless a row asks for one call).
    parallel: bool,
}

fn row(name: &'static str, template: &'static str, output: &'static str, want: Value, recoveries: &[(RecoveryKind, &'static str)]) -> Row {
    Row { name, template, tools: tools(), thinking: None, output, want, recoveries: recoveries.to_vec(), diagnostic: None, parallel: true }
}

impl Row {
    fn tools(mut self, tools: Value) -> Row {
        self.tools = tools;
        self
    }
    fn thinking(mut self, on: bool) -> Row {
        self.thinking = Some(on);
        self
    }
    fn one_call_asked(mut self) -> Row {
        self.parallel = false;
        self
    }
    fn leaves_grammar_at(mut self, anchor: &'static str) -> Row {
        self.diagnostic = Some(anchor);
        self
    }
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "The weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time", "description": "The time in a zone",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
    ])
}

/// Nullable parameters, both spellings.
/// A weather tool with an object parameter.
fn object_param_tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "options": {"type": "object", "properties": {"unit": {"type": "string"}}}},
            "required": ["city"]}}}])
}

fn nullable_tools() -> Value {
    json!([{"type": "function", "function": {"name": "annotate", "description": "Annotate",
        "parameters": {"type": "object", "properties": {
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "label": {"type": ["string", "null"]}}, "required": ["note"]}}}])
}

/// Python-style type names.
fn python_typed_tools() -> Value {
    json!([{"type": "function", "function": {"name": "measure", "description": "Measure",
        "parameters": {"type": "object", "properties": {
            "x": {"type": "float"}, "n": {"type": "int"}, "d": {"type": "dict"}}, "required": ["x"]}}}])
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}
fn weather() -> Value {
    call("get_weather", json!({"city": "Paris"}))
}
fn weather2() -> Value {
    call("get_weather", json!({"city": "Paris", "days": 2}))
}
fn time() -> Value {
    call("get_time", json!({"zone": "CET"}))
}
fn stock() -> Value {
    call("get_stock", json!({"symbol": "ACME"}))
}
fn calls(calls: &[Value]) -> Value {
    json!({"content": "", "tool_calls": calls})
}
fn msg(content: &str, calls: &[Value]) -> Value {
    json!({"content": content, "tool_calls": calls})
}
fn reasoned(reasoning: &str, content: &str, calls: &[Value]) -> Value {
    json!({"content": content, "reasoning_content": reasoning, "tool_calls": calls})
}

#[rustfmt::skip]
fn table() -> Vec<Row> {
    vec![
        // 1. call_shape
        row("hermes: keys in another order ({\"arguments\": …, \"name\": …})", HERMES,
            "<tool_call>\n{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "{\"arguments\"")]),
        row("hermes: \"parameters\" for \"arguments\"", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("hermes: extra {\"function\": {…}} wrapper", HERMES,
            "<tool_call>\n{\"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "{\"function\"")]),
        row("qwen2.5: keys in another order", QWEN25,
            "<tool_call>\n{\"arguments\": {\"city\": \"Paris\", \"days\": 2}, \"name\": \"get_weather\"}\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "{\"arguments\"")]),
        row("qwen2.5: \"parameters\" for \"arguments\", in another order", QWEN25,
            "<tool_call>\n{\"parameters\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "{\"parameters\"")]),
        row("llama3.2: keys in another order", LLAMA32,
            "{\"parameters\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}",
            calls(&[weather()]), &[(CallShape, "{\"parameters\"")]),
        row("llama3.2: \"arguments\" for \"parameters\"", LLAMA32,
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("llama3.2: extra {\"function\": {…}} wrapper", LLAMA32,
            "{\"function\": {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}}",
            calls(&[weather()]), &[(CallShape, "{\"function\"")]),
        row("mistral-nemo: \"parameters\" for \"arguments\" in the [TOOL_CALLS] list", NEMO,
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}]",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("mistral-nemo: a lone call without the [TOOL_CALLS] list's brackets", NEMO,
            "[TOOL_CALLS]{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("hermes: the calls in a {\"tool_calls\": [...]} object, no markers", HERMES,
            "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]}",
            calls(&[weather()]), &[(ExtraWrapper, "{\"tool_calls\""), (CallShape, "{\"tool_calls\"")]),
        row("llama3.2: the calls in a {\"tool_calls\": [...]} object", LLAMA32,
            "{\"tool_calls\": [{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}]}",
            calls(&[weather(), time()]), &[(ExtraWrapper, "{\"tool_calls\"")]),
        row("qwen3-coder: MiniMax's <invoke name=…> inside <tool_call>", QCODER,
            "<tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "<invoke")]),
        row("qwen3-coder: a JSON call object where the template tags calls", QCODER,
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("glm-4.6: a JSON call object after text, no markers", GLM,
            "Let me check.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            msg("Let me check.", &[weather()]), &[(CallShape, "{\"name\""), (CallInProse, "{\"name\"")]),
        row("devstral: the calls in a {\"tool_calls\": [...]} object with ids, no markers", DEVSTRAL,
            "{\n  \"tool_calls\": [\n    {\n      \"name\": \"get_weather\",\n      \"arguments\": {\"city\": \"Paris\"},\n      \"id\": \"162875335\"\n    }\n  ]\n}",
            calls(&[weather()]), &[(ExtraWrapper, "{\n"), (CallShape, "{\n"), (CallShape, "{\n      \"name\"")]),
        row("qwen3-coder regression: JSON in the text naming no declared tool stays content", QCODER,
            "The config is {\"name\": \"prod\", \"arguments\": {\"debug\": false}}.",
            msg("The config is {\"name\": \"prod\", \"arguments\": {\"debug\": false}}.", &[]), &[]),
        row("mistral-nemo: the name, [ARGS] and the arguments (Mistral v11's form)", NEMO,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
            calls(&[weather()]), &[(CallShape, "get_weather")]),
        row("minimax-m2: a JSON call inside the tool-call section", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather()]), &[(CallShape, "{\"name\"")]),
        row("header per part probe: a lone call without the list's brackets", HEADER_PER_PART,
            ":calls\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("header per part probe: content without its part end, then the calls' header", HEADER_PER_PART,
            "\nSure.\n<|turn|>model:calls\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            msg("Sure.", &[weather()]), &[]),
        row("addressed invoke probe: the calls' wrapper left out", NAME_IN_HEADER,
            " to=get_weather<|message|><x:invoke name=\"get_weather\">\n<x:parameter name=\"city\">Paris</x:parameter>\n</x:invoke>\n</x:calls><|eom|>",
            calls(&[weather()]), &[(CallShape, "<x:invoke")]),
        row("addressed invoke probe: the arguments as one JSON object", NAME_IN_HEADER,
            " to=get_weather<|message|>{\"city\": \"Paris\"}<|eom|>",
            calls(&[weather()]), &[(CallShape, "to=get_weather")]),
        row("addressed invoke probe: closes left out at the end of the output", NAME_IN_HEADER,
            " to=get_weather<|message|><x:calls>\n<x:invoke name=\"get_weather\">\n<x:parameter name=\"city\">Paris</x:parameter>",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("named opener probe: the arguments alone after the opener naming the call", NAMED_OPENER,
            "<tool_call name=\"get_weather\">\n{\"city\": \"Paris\"}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "<tool_call")]),
        row("named opener probe: the opener written twice", NAMED_OPENER,
            "<tool_call name=\"get_weather\">\n<tool_call name=\"get_weather\">\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "<tool_call")]),
        row("python lines probe: the calls in a Python list", PYTHON_LINES,
            "<function_calls>\n[get_weather(city=\"Paris\"), get_time(zone=\"CET\")]\n</function_calls>",
            calls(&[weather(), time()]), &[(ExtraWrapper, "[")]),
        row("call word probe: the second call joined by ';' without its word", CALL_WORD,
            "Call: get_weather(city=\"Paris\"); get_time(zone=\"CET\")<bot_end>",
            calls(&[weather(), time()]), &[(CallSeparator, ";")]),
        row("call word probe: the second call on the next line without its word", CALL_WORD,
            "Sure.\nCall: get_weather(city=\"Paris\")\nget_time(zone=\"CET\")",
            msg("Sure.", &[weather(), time()]), &[(CallSeparator, "get_time")]),
        row("qwen3-coder: the arguments as elements named by their keys", QCODER,
            "<tool_call>\n<function=get_weather>\n<city>\nParis\n</city>\n<days>2</days>\n</function>\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "<function=")]),
        row("glm-4.6: the arguments as elements named by their keys", GLM,
            "<tool_call>get_weather\n<city>Paris</city>\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "get_weather")]),
        row("qwen3: reasoning in <thinking> tags where the template thinks in <think>", QWEN3,
            "<thinking>\nThe user asks.\n</thinking>\n\nSure.",
            reasoned("The user asks.", "Sure.", &[]), &[(ReasoningMarker, "<thinking>")]),
        row("hermes: the arguments as a JavaScript object, keys bare", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {city: \"Paris\", days: 2,}}\n</tool_call>",
            calls(&[weather2()]), &[(ArgumentsAsPython, "{city")]),
        row("qwen3-coder: JavaScript object arguments in a JSON call, a line break after the close", QCODER,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {city: \"Paris\", \"days\": 2}}\n</tool_call>\n",
            calls(&[weather2()]), &[(CallShape, "{\"name\""), (ArgumentsAsPython, "{city"), (TextAroundCalls, "$")]),
        row("hermes: a line break after the last close (the template writes none)", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n",
            calls(&[weather()]), &[(TextAroundCalls, "$")]),
        row("hermes: a trailing comma in the arguments", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\",}}\n</tool_call>",
            calls(&[weather()]), &[(ArgumentsAsPython, "{\"city\"")]),
        row("hermes: a call without arguments (its required one missing: flagged too)", HERMES,
            "<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>",
            calls(&[call("get_time", json!({}))]), &[(ArgumentsOutsideSchema, ""), (CallShape, "{\"name\"")]),
        row("phi-4-mini fixture: keys in another order inside functools[…]", PHI,
            "functools[{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}]",
            calls(&[weather()]), &[(CallShape, "{\"arguments\"")]),

        // Inside the template's call markers, another family's call syntax.
        row("hermes: a Qwen3-Coder call (<function=…><parameter=…>) inside <tool_call>", HERMES,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "<function=")]),
        row("hermes: a GLM call (name, <arg_key>/<arg_value>) inside <tool_call>", HERMES,
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "get_weather")]),
        row("hermes: the name, then JSON arguments, inside <tool_call>", HERMES,
            "<tool_call>\nget_weather\n{\"city\": \"Paris\"}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "get_weather")]),
        row("qwen3-coder: a Hermes JSON call inside <tool_call>", QCODER,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "{\"name\"")]),
        row("glm-4.6: a Qwen3-Coder call inside <tool_call>", GLM,
            "<tool_call><function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function></tool_call>",
            calls(&[weather()]), &[(CallShape, "<function=")]),
        row("mistral-small-3.2: the JSON list of calls Mistral wrote before v11", MISTRAL,
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}]",
            calls(&[weather(), weather2()]), &[(CallShape, "[{")]),
        row("mistral-small-3.2: a second call without its [TOOL_CALLS]", MISTRAL,
            "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{\"city\": \"Paris\"}get_weather[CALL_ID]bcdefghij[ARGS]{\"city\": \"Paris\", \"days\": 2}",
            calls(&[weather(), weather2()]), &[(CallSeparator, "get_weather[CALL_ID]bcdefghij")]),
        row("qwen3-coder: a JSON list of calls inside <tool_call>", QCODER,
            "<tool_call>\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "[{")]),
        row("glm-4.6: the name, then JSON arguments, inside <tool_call> (GLM 4's own form)", GLM,
            "<tool_call>get_weather\n{\"city\": \"Paris\"}</tool_call>",
            calls(&[weather()]), &[(CallShape, "get_weather")]),
        row("glm-4.6: a Hermes JSON call inside <tool_call>", GLM,
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
            calls(&[weather()]), &[(CallShape, "{\"name\"")]),
        row("hermes: a call written as a Python dict inside <tool_call>", HERMES,
            "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "{'name'"), (ArgumentsAsPython, "{'city'")]),
        row("hermes: a Python call inside <tool_call>", HERMES,
            "<tool_call>\nget_weather(city=\"Paris\", days=2)\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "get_weather")]),
        row("qwen3-coder: JSON arguments inside <function=…> (Llama 3.1's form) inside <tool_call>", QCODER,
            "<tool_call>\n<function=get_weather>\n{\"city\": \"Paris\", \"days\": 2}\n</function>\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "<function=")]),
        row("qwen3-coder: </function> left out before </tool_call>", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
            calls(&[weather()]), &[(MissingClose, "</tool_call>")]),
        row("qwen3-coder: a Python call inside <tool_call>", QCODER,
            "<tool_call>\nget_weather(city='Paris', days=2)\n</tool_call>",
            calls(&[weather2()]), &[(CallShape, "get_weather")]),

        row("qwen3-coder: an argument opened by its name attribute (MiniMax's spelling)", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter name=\"city\">Paris</parameter>\n</function>\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "<parameter name=")]),
        row("qwen3-coder: the function opened by its name attribute", QCODER,
            "<tool_call>\n<function name=\"get_weather\">\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "<function name=")]),
        row("minimax-m2: the invoke and a parameter named as the tag's own value (Qwen3-Coder's spelling)", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke=get_weather>\n<parameter=city>Paris</parameter>\n</invoke>\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather()]), &[(CallShape, "<invoke=get_weather>"), (CallShape, "<parameter=city>")]),

        // 2. call_separator
        row("llama3.2: two calls joined by `; ` (one-shot and streamed agree: 2 calls)", LLAMA32,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}",
            calls(&[weather(), time()]), &[(CallSeparator, ";")]),
        // The template has no separator of its own and the request allows parallel calls:
        // whitespace between calls is the grammar's own form, nothing to recover.
        row("llama3.2: two calls on separate lines", LLAMA32,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n{\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}",
            calls(&[weather(), time()]), &[]),
        row("hermes: two calls in one <tool_call>, one per line", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
            calls(&[weather(), time()]), &[(CallSeparator, "{\"name\": \"get_time\"")]),
        row("qwen2.5: two calls in one <tool_call> joined by `;`", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}};\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
            calls(&[weather(), time()]), &[(CallSeparator, ";")]),
        row("functionary-v3.2: a second call part where the request asks for one", FUNCTIONARY32,
            ">>>get_weather\n{\"city\": \"Paris\"}>>>get_time\n{\"zone\": \"CET\"}",
            calls(&[weather(), time()]), &[(CallSeparator, ">>>get_time")]).one_call_asked(),
        row("mistral-nemo: each call in its own [TOOL_CALLS][…]", NEMO,
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}][TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}, \"id\": \"bcdefghij\"}]",
            calls(&[weather(), time()]), &[(CallSeparator, "[TOOL_CALLS][{\"name\": \"get_time\"")]),
        row("deepseek-v3.1: each call in its own <｜tool▁calls▁begin｜> section", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"zone\": \"CET\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[weather(), time()]), &[(CallSeparator, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time")]).thinking(false),
        row("kimi-k2: each call in its own tool-calls section", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|><|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{\"zone\": \"CET\"}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather(), time()]), &[(CallSeparator, "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time")]),
        row("qwen3-coder: two <function=…> in one <tool_call>", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather(), time()]), &[(CallSeparator, "<function=get_time>")]),
        row("phi-4-mini fixture: each call in its own functools[…]", PHI,
            "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\nfunctools[{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]",
            calls(&[weather(), time()]), &[(CallSeparator, "functools[{\"name\": \"get_time\"")]),

        // 3. call_in_prose
        row("llama3.2: call after prose", LLAMA32,
            "Let me look that up.\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            msg("Let me look that up.", &[weather()]), &[(CallInProse, "{\"name\"")]),
        row("llama3.1: call after prose", LLAMA31,
            "Let me look that up.\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
            msg("Let me look that up.", &[weather2()]), &[(CallInProse, "{\"name\"")]),
        row("llama3.3: call after prose on the same line", LLAMA33,
            "Sure, checking: {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            msg("Sure, checking:", &[weather()]), &[(CallInProse, "{\"name\"")]),
        row("hermes: a <function=NAME>{…}</function> call after prose, no <tool_call>", HERMES,
            "Let me look that up.\n<function=get_weather>{\"city\": \"Paris\"}</function>",
            msg("Let me look that up.", &[weather()]), &[(CallShape, "<function="), (CallInProse, "<function=")]),
        row("qwen2.5: two <function=NAME>{…}</function> calls, no <tool_call>", QWEN25,
            "<function=get_weather>{\"city\": \"Paris\"}</function>\n<function=get_time>{\"zone\": \"CET\"}</function>",
            calls(&[weather(), time()]), &[(CallShape, "<function=get_weather")]),
        row("llama3.2: a list of Python calls (its light models' pythonic form)", LLAMA32,
            "[get_weather(city=\"Paris\", days=3), get_time(zone=\"CET\")]",
            calls(&[call("get_weather", json!({"city": "Paris", "days": 3})), time()]), &[(CallShape, "[get_weather")]),
        row("hermes: Python calls in a tool_code fence after prose (Gemma 3's form)", HERMES,
            "Let me check.\n```tool_code\nget_weather(city=\"Paris\")\nget_time(zone=\"CET\")\n```",
            msg("Let me check.", &[weather(), time()]), &[(CodeFence, "```tool_code"), (CallInProse, "```tool_code"), (CallShape, "get_weather(")]),
        row("llama3.2: a Python call of an undeclared tool in a fence stays content", LLAMA32,
            "```python\nprint(x=1)\n```",
            msg("```python\nprint(x=1)\n```", &[]), &[]),
        row("calls-unshown fixture: a JSON call after text, where the template never writes calls", CALLS_UNSHOWN,
            "Let me check.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            msg("Let me check.", &[weather()]), &[(CallInProse, "{\"name\"")]),
        row("llama3.2: call shape of an unknown name in prose stays content", LLAMA32,
            "For example {\"name\": \"get_stock\", \"parameters\": {\"symbol\": \"ACME\"}} would be a call.",
            msg("For example {\"name\": \"get_stock\", \"parameters\": {\"symbol\": \"ACME\"}} would be a call.", &[]), &[]),
        row("llama3.2: JSON that is no call shape in prose stays content", LLAMA32,
            "The result was {\"city\": \"Paris\", \"temp\": 21}.",
            msg("The result was {\"city\": \"Paris\", \"temp\": 21}.", &[]), &[]),
        row("llama3.1: JSON that is no call shape in prose stays content", LLAMA31,
            "Here is the data:\n{\"name\": \"Paris\", \"population\": 2100000}",
            msg("Here is the data:\n{\"name\": \"Paris\", \"population\": 2100000}", &[]), &[]),

        row("hermes: a bare Python call is the whole output", HERMES,
            "get_weather(city='Paris', days=2)",
            calls(&[weather2()]), &[(CallShape, "get_weather")]),
        row("llama3.2: bare Python calls one per line are the whole output, then the end-of-turn marker", LLAMA32,
            "get_weather(city=\"Paris\")\nget_time(zone=\"CET\")<|eot_id|>",
            calls(&[weather(), time()]), &[(CallShape, "get_weather")]),
        row("hermes: a bare Python call followed by prose stays content", HERMES,
            "get_weather(city=\"Paris\") is what I would call.",
            msg("get_weather(city=\"Paris\") is what I would call.", &[]), &[]),

        // 4. arguments_as_string
        row("hermes: arguments as a JSON string", HERMES,
            r#"<tool_call>
{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}
</tool_call>"#,
            calls(&[weather()]), &[(ArgumentsAsString, r#""{\"city\""#)]),
        row("llama3.2: parameters as a JSON string", LLAMA32,
            r#"{"name": "get_weather", "parameters": "{\"city\": \"Paris\", \"days\": 2}"}"#,
            calls(&[weather2()]), &[(ArgumentsAsString, r#""{\"city\""#)]),
        row("deepseek-v3.1: arguments as a JSON string after <｜tool▁sep｜>", DSV31,
            r#"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"{\"city\": \"Paris\"}"<｜tool▁call▁end｜><｜tool▁calls▁end｜>"#,
            calls(&[weather()]), &[(ArgumentsAsString, r#""{\"city\""#)]).thinking(false),
        row("kimi-k2: arguments as a JSON string", KIMI,
            r#"<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"{\"city\": \"Paris\"}"<|tool_call_end|><|tool_calls_section_end|>"#,
            calls(&[weather()]), &[(ArgumentsAsString, r#""{\"city\""#)]),
        row("mistral-small-3.2: [ARGS] as a JSON string", MISTRAL,
            r#"[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]"{\"city\": \"Paris\"}""#,
            calls(&[weather()]), &[(ArgumentsAsString, r#""{\"city\""#)]),
        row("phi-4-mini fixture: arguments as a JSON string", PHI,
            r#"functools[{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}]"#,
            calls(&[weather()]), &[(ArgumentsAsString, r#""{\"city\""#)]),

        // 4b. arguments_as_python
        row("hermes: arguments as a Python dict", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {'city': 'Paris', 'days': 2}}\n</tool_call>",
            calls(&[weather2()]), &[(ArgumentsAsPython, "{'city'")]),
        row("llama3.2: parameters as a Python dict", LLAMA32,
            "{\"name\": \"get_weather\", \"parameters\": {'city': 'Paris'}}",
            calls(&[weather()]), &[(ArgumentsAsPython, "{'city'")]),
        row("kimi-k2: arguments as a Python dict", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{'city': 'Paris'}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather()]), &[(ArgumentsAsPython, "{'city'")]),
        row("mistral-small-3.2: [ARGS] as a Python dict", MISTRAL,
            "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{'city': 'Paris', 'days': 2}",
            calls(&[weather2()]), &[(ArgumentsAsPython, "{'city'")]),
        // JSON's quotes with Python's words: read where JSON fails, streamed as JSON until then
        // (`None` where `days` is an integer: flagged too).
        row("hermes: Python's None among JSON-quoted arguments", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": None}}\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": null}))]), &[(ArgumentsOutsideSchema, ""), (ArgumentsAsPython, "{\"city\"")]),
        row("mistral-small-3.2: Python's None among JSON-quoted [ARGS]", MISTRAL,
            "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{\"city\": \"Paris\", \"days\": None}",
            calls(&[call("get_weather", json!({"city": "Paris", "days": null}))]), &[(ArgumentsOutsideSchema, ""), (ArgumentsAsPython, "{\"city\"")]),
        row("kimi-k2: Python's True among JSON-quoted arguments", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\", \"days\": True}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": true}))]), &[(ArgumentsOutsideSchema, ""), (ArgumentsAsPython, "{\"city\"")]),
        row("deepseek-v3.1: Python's None among JSON-quoted arguments", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\", \"days\": None}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": null}))]), &[(ArgumentsOutsideSchema, ""), (ArgumentsAsPython, "{\"city\"")]).thinking(false),
        row("gpt-oss: Python's None among JSON-quoted arguments", GPT_OSS,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": None}<|call|>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": null}))]), &[(ArgumentsOutsideSchema, ""), (ArgumentsAsPython, "{\"city\"")]),
        row("gpt-oss: arguments as a Python dict", GPT_OSS,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{'city': 'Paris'}<|call|>",
            calls(&[weather()]), &[(ArgumentsAsPython, "{'city'")]),

        // 5. code_fence
        row("llama3.2: call in a ```json fence", LLAMA32,
            "```json\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n```",
            calls(&[weather()]), &[(CodeFence, "```json")]),
        row("llama3.2: call in a ```json fence after prose", LLAMA32,
            "Here you go:\n```json\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n```",
            msg("Here you go:", &[weather()]), &[(CodeFence, "```json"), (CallInProse, "```json")]),
        row("hermes: <tool_call> block in a ``` fence", HERMES,
            "```\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n```",
            calls(&[weather()]), &[(CodeFence, "```")]),
        row("hermes: JSON in a ```json fence inside <tool_call>", HERMES,
            "<tool_call>\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```\n</tool_call>",
            calls(&[weather()]), &[(CodeFence, "```json")]),
        row("deepseek-v3.1: arguments in a ```json fence after <｜tool▁sep｜>", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[weather()]), &[(CodeFence, "```json")]).thinking(false),
        row("kimi-k2: arguments in a ```json fence", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>```json\n{\"city\": \"Paris\"}\n```<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather()]), &[(CodeFence, "```json")]),
        row("qwen3-coder: <tool_call> block in a ```xml fence", QCODER,
            "```xml\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n```",
            calls(&[weather()]), &[(CodeFence, "```xml")]),

        // 6. missing_close
        row("qwen3-coder: missing </parameter> before next <parameter=", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather2()]), &[(MissingClose, "<parameter=days>")]),
        row("qwen3-coder: missing </parameter> before </function>", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>",
            calls(&[weather()]), &[(MissingClose, "</function>")]),
        row("qwen3-coder: missing </parameter> after an integer, before </function>", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n</function>\n</tool_call>",
            calls(&[weather2()]), &[(MissingClose, "<parameter=days>"), (MissingClose, "</function>")]),
        row("qwen3-coder: call left open at the end", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("qwen3-coder: value left open at the end", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("glm-4.6: missing </arg_value> before next <arg_key>", GLM,
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
            calls(&[weather2()]), &[(MissingClose, "<arg_key>days")]),
        row("glm-4.6: call left open at the end", GLM,
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("minimax-m2: missing </parameter> before next <parameter", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris\n<parameter name=\"days\">2</parameter>\n</invoke>\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather2()]), &[(MissingClose, "<parameter name=\"days\">")]),
        row("minimax-m2: missing </parameter> after an integer, before </invoke>", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">2\n</invoke>\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather2()]), &[(MissingClose, "</invoke>")]),
        row("minimax-m2: tool-call section left open at the end", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n",
            reasoned("Checking.", "", &[weather()]), &[(MissingClose, "$")]),
        row("hermes: <tool_call> left open at the end", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("lfm2: the list closed, its section left open at the end", LFM2,
            "<|tool_call_start|>[get_weather(city=\"Paris\")]",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("deepseek-v3.1: tool-calls section left open at the end", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>",
            calls(&[weather()]), &[(MissingClose, "$")]).thinking(false),
        // Arguments that open an object and stop fitting are kept up to there and closed: a
        // stream has sent that much. The rest is text, and the calls after it are calls.
        row("kimi-k2: arguments that stop fitting, then another call", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": Paris}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{\"zone\": \"CET\"}<|tool_call_end|><|tool_calls_section_end|>",
            msg("Paris}", &[call("get_weather", json!({"city": null})), time()]),
            &[(ArgumentsRepaired, "functions.get_weather"), (ArgumentsOutsideSchema, "functions.get_weather"), (MissingClose, "Paris}"), (TextAroundCalls, "Paris}"), (ExtraWrapper, "<|tool_call_end|>")]),
        row("react fixture: arguments that stop fitting, then another call", REACT,
            "Checking.\nAction: get_weather\nAction Input: {\"city\": Paris}\nAction: get_time\nAction Input: {\"zone\": \"CET\"}\nDone.",
            msg("Checking.\nParis}\nDone.", &[call("get_weather", json!({"city": null})), time()]),
            &[(ArgumentsRepaired, "Action: get_weather"), (ArgumentsOutsideSchema, "Action: get_weather"), (CallSeparator, "Action: get_time")]),
        row("kimi-k2: tool-calls section left open at the end", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("kimi-k2: missing <|tool_call_end|> before the next <|tool_call_begin|>", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{\"zone\": \"CET\"}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather(), time()]), &[(MissingClose, "<|tool_call_begin|>functions.get_time")]),

        row("qwen2.5: the call's opener written again for its close, between calls and at the end", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n<tool_call>",
            calls(&[weather(), time()]), &[(MissingClose, "<tool_call>\n{\"name\": \"get_time\""), (MissingClose, "<tool_call>")]),
        row("qwen2.5: the call's close misspelled (</tool_calls>)", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_calls>",
            calls(&[weather()]), &[(MissingClose, "</tool_calls>")]),
        row("qwen3-coder: </tool_call> misspelled with a backslash", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n<\\tool_call>",
            calls(&[weather()]), &[(MissingClose, "<\\tool_call>")]),

        row("qwen2.5: null for the arguments of a call without any (its required one missing: flagged too)", QWEN25,
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": null}\n</tool_call>",
            calls(&[call("get_time", json!({}))]), &[(ArgumentsOutsideSchema, ""), (CallShape, "null")]),
        row("hermes: an empty string for the arguments of a call without any (flagged too)", HERMES,
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"\"}\n</tool_call>",
            calls(&[call("get_time", json!({}))]), &[(ArgumentsOutsideSchema, ""), (CallShape, "\"\"}")]),

        // Braces: models lose count of what they opened.
        row("qwen2.5: the call object's closing brace left out before </tool_call>", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call>",
            calls(&[weather()]), &[(MissingClose, "</tool_call>")]),
        row("qwen2.5: the arguments and the call object left open before </tool_call>", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"\n</tool_call>",
            calls(&[weather()]), &[(ArgumentsRepaired, "{\"name\""), (MissingClose, "</tool_call>")]),
        row("qwen2.5: </tool_call> left out before the end-of-turn marker", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}<|im_end|>",
            calls(&[weather()]), &[(MissingClose, "<|im_end|>")]),
        row("llama3.1: the call object's closing brace left out before <|eot_id|>", LLAMA31,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}<|eot_id|>",
            calls(&[weather()]), &[(MissingClose, "<|eot_id|>")]),
        row("llama3.1: the call object's closing brace left out at the end", LLAMA31,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}",
            calls(&[weather2()]), &[(MissingClose, "$")]),
        row("hermes: a closing brace too many after a JSON call", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}\n</tool_call>",
            calls(&[weather()]), &[(CallShape, "}\n</tool_call>")]),
        row("hermes: closing braces too many before the next call", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}} }\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
            calls(&[weather(), time()]), &[(CallShape, "} }\n</tool_call>")]),
        row("llama3.1: a closing brace too many at the end", LLAMA31,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}}",
            calls(&[weather()]), &[(CallShape, "}")]),
        row("mistral 3.2: a closing brace too many after [ARGS] arguments", MISTRAL,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(MissingCallId, "[ARGS]"), (CallShape, "}")]),
        row("nemo: a closing brace too many in the list of calls", NEMO,
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]",
            calls(&[weather()]), &[(CallShape, "}]")]),

        // 7. text_around_calls
        row("hermes: text between two calls", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\nAnd the time:\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
            msg("And the time:", &[weather(), time()]), &[(TextAroundCalls, "And the time:")]),
        row("hermes: text after the calls", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\nI asked for the weather.",
            msg("I asked for the weather.", &[weather()]), &[(TextAroundCalls, "I asked")]),
        row("glm-4.6: text between two calls", GLM,
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\nNow the time.\n<tool_call>get_time\n<arg_key>zone</arg_key>\n<arg_value>CET</arg_value>\n</tool_call>",
            msg("Now the time.", &[weather(), time()]), &[(TextAroundCalls, "Now the time.")]),
        row("kimi-k2: text after the tool-calls section (no <|tool_call_end|><|tool_calls_section_end|> in content)", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>Let me know if you need more.",
            msg("Let me know if you need more.", &[weather()]), &[(TextAroundCalls, "Let me know")]),
        row("kimi-k2: text between two calls in the section", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>Also the time.<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{\"zone\": \"CET\"}<|tool_call_end|><|tool_calls_section_end|>",
            msg("Also the time.", &[weather(), time()]), &[(TextAroundCalls, "Also the time.")]),
        row("deepseek-v3.1: text after the tool-calls section", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>Done.",
            msg("Done.", &[weather()]), &[(TextAroundCalls, "Done.")]).thinking(false),
        row("qwen3-coder: text between two calls", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\nAlso:\n<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n</tool_call>",
            msg("Also:", &[weather(), time()]), &[(TextAroundCalls, "Also:")]),
        row("minimax-m2: calls without the tool-call section (each <invoke> opens its call)", MINIMAX,
            "Checking.\n</think>\n\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>",
            reasoned("Checking.", "", &[weather()]), &[(MissingClose, "$")]),
        row("minimax-m2: reasoning left open when an <invoke> begins without the section", MINIMAX,
            "The user wants the weather.\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>",
            reasoned("The user wants the weather.", "", &[weather()]), &[(ReasoningMarker, "<invoke"), (MissingClose, "$")]),
        row("envelopes-words fixture: a call without BEGIN TOOLS after text (BEGIN CALL and the name open it)", ENVELOPES,
            "Sure.\nBEGIN CALL get_weather\n{\"city\": \"Paris\"}\nEND CALL",
            msg("Sure.", &[weather()]), &[(MissingClose, "$")]),
        row("nested-tags-words fixture: a call without <tool_calls> (its name's element opens it)", NESTED_TAGS,
            "<get_weather>\n<city>Paris</city>\n</get_weather>",
            calls(&[weather()]), &[(MissingClose, "$")]),
        row("minimax-m2: text after the tool-call section", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n</minimax:tool_call>\nOne moment.",
            reasoned("Checking.", "One moment.", &[weather()]), &[(TextAroundCalls, "One moment.")]),
        row("mistral-small-3.2: text after the call's arguments", MISTRAL,
            "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{\"city\": \"Paris\"}\nDone.",
            msg("Done.", &[weather()]), &[(TextAroundCalls, "Done.")]),

        // 8. reasoning_marker
        row("qwen3.5: <think> written again after the prompt's <think>", QWEN35,
            "<think>\nThe user wants the weather.\n</think>\n\nIt is sunny in Paris.",
            reasoned("The user wants the weather.", "It is sunny in Paris.", &[]), &[(ReasoningMarker, "<think>")]),
        row("minimax-m2: <think> written again after the prompt's <think>", MINIMAX,
            "<think>\nThe user wants the weather.\n</think>\n\nIt is sunny in Paris.",
            reasoned("The user wants the weather.", "It is sunny in Paris.", &[]), &[(ReasoningMarker, "<think>")]),
        row("deepseek-v3.1 (thinking): <think> written again after the prompt's <think>", DSV31,
            "<think>Weather question.</think>It is sunny in Paris.",
            reasoned("Weather question.", "It is sunny in Paris.", &[]), &[(ReasoningMarker, "<think>")]).thinking(true),
        row("qwen3.5: reasoning left open when <tool_call> begins", QWEN35,
            "The user wants the weather.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            reasoned("The user wants the weather.", "", &[weather()]), &[(ReasoningMarker, "<tool_call>")]),
        row("minimax-m2: reasoning left open when <minimax:tool_call> begins", MINIMAX,
            "The user wants the weather.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n</minimax:tool_call>",
            reasoned("The user wants the weather.", "", &[weather()]), &[(ReasoningMarker, "<minimax:tool_call>")]),
        row("glm-4.6: reasoning left open when <tool_call> begins", GLM,
            "<think>I should check the weather.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
            reasoned("I should check the weather.", "", &[weather()]), &[(ReasoningMarker, "<tool_call>")]),
        row("deepseek-v3.1 (thinking): reasoning left open when the tool-calls section begins", DSV31,
            "Need the weather.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            reasoned("Need the weather.", "", &[weather()]), &[(ReasoningMarker, "<｜tool▁calls▁begin｜>")]).thinking(true),
        row("qwen3.5: <think> written again and left open when <tool_call> begins", QWEN35,
            "<think>\nThe user wants the weather.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            reasoned("The user wants the weather.", "", &[weather()]), &[(ReasoningMarker, "<think>"), (ReasoningMarker, "<tool_call>")]),

        row("qwen2.5: reasoning in <think> tags the template never writes (a distill under its base template), then a call", QWEN25,
            "<think>\nParis, so one call.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            reasoned("Paris, so one call.", "", &[weather()]), &[(ReasoningMarker, "<think>")]),
        row("llama3.1: a <think> block the template never writes, left open at the end", LLAMA31,
            "<think>The user wants the weather",
            reasoned("The user wants the weather", "", &[]), &[(ReasoningMarker, "<think>")]),
        row("qwen2.5: a <think> tag after text stays content", QWEN25,
            "Sure: <think> is a tag.",
            msg("Sure: <think> is a tag.", &[]), &[]),

        // 9. extra_wrapper
        row("llama3.2: <|python_tag|> before the call", LLAMA32,
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[(ExtraWrapper, "<|python_tag|>")]),
        row("llama3.2: <|python_start|>…<|python_end|> around the call", LLAMA32,
            "<|python_start|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|python_end|>",
            calls(&[weather()]), &[(ExtraWrapper, "<|python_start|>")]),
        row("llama3.2: <tool_call>…</tool_call> around the call", LLAMA32,
            "<tool_call>\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "<tool_call>")]),
        row("llama3.3: <|python_start|>…<|python_end|> around the call", LLAMA33,
            "<|python_start|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|python_end|>",
            calls(&[weather()]), &[(ExtraWrapper, "<|python_start|>")]),
        row("hermes: a JSON list inside <tool_call>", HERMES,
            "<tool_call>\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "[{")]),
        row("qwen2.5: a JSON list of two calls inside <tool_call>", QWEN25,
            "<tool_call>\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]\n</tool_call>",
            calls(&[weather(), time()]), &[(ExtraWrapper, "[{")]),
        row("hermes: the <tool_call> opener written twice", HERMES,
            "<tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "<tool_call>\n{")]),
        row("qwen3-coder: the <tool_call> opener written twice", QCODER,
            "<tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "<tool_call>\n<function")]),
        row("qwen3-coder: the closing </tool_call> written twice, then a line break", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n</tool_call>\n",
            calls(&[weather()]), &[]),
        row("qwen3-coder (no reasoning): a stray </think> after the calls, then line breaks", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n</think>\n\n",
            calls(&[weather()]), &[]),
        row("granite-3.3 (never writes calls): <|tool_call|> and a JSON list, as its prompt asks", GRANITE33,
            "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]",
            calls(&[weather(), time()]), &[(ExtraWrapper, "<|tool_call|>")]),
        row("phi-4-mini fixture: <tool_call>…</tool_call> around functools[…]", PHI,
            "<tool_call>\nfunctools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\n</tool_call>",
            calls(&[weather()]), &[(ExtraWrapper, "<tool_call>")]),

        // missing_call_id (not in the issue's list: models leave out ids the template writes)
        row("mistral-small-3.2: call without its [CALL_ID]", MISTRAL,
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
            calls(&[weather()]), &[(MissingCallId, "[ARGS]")]),
        row("deepseek-v3.1: DeepSeek V3's call (type, marker, name, fenced JSON) inside V3.1's markers", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[weather()]), &[(CallShape, "function<｜tool▁sep｜>"), (CallShape, "```json"), (CodeFence, "```json")]).thinking(false),
        row("kimi-k2: a call id without its functions. prefix", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather()]), &[(CallShape, "get_weather:0")]),
        row("kimi-k2: a call id without its index", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[weather()]), &[(CallShape, "functions.get_weather")]),
        row("minimax-m2: attribute values without their quotes", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=get_weather>\n<parameter name='city'>Paris</parameter>\n</invoke>\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather()]), &[(CallShape, "<invoke name=get_weather>"), (CallShape, "<parameter name='city'>")]),
        row("minimax-m2: a JSON object for the parameter tags", MINIMAX,
            "Checking.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">{\"city\": \"Paris\", \"days\": 2}</invoke>\n</minimax:tool_call>",
            reasoned("Checking.", "", &[weather2()]), &[(CallShape, "<invoke name")]),
        row("gemma-4: a string in JSON quotes for the template's quote token", GEMMA4,
            "<|tool_call>call:get_weather{city:\"Paris\",days:2}<tool_call|>",
            calls(&[weather2()]), &[(CallShape, "city:\"Paris\"")]),
        row("gemma-4: the call: word before the name left out", GEMMA4,
            "<|tool_call>get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
            calls(&[weather()]), &[(CallShape, "get_weather{")]),
        row("gemma-4: the arguments written as JSON members", GEMMA4,
            "<|tool_call>call:get_weather{\"city\": \"Paris\"}<tool_call|>",
            calls(&[weather()]), &[(CallShape, "\"city\": \"Paris\"")]),
        row("lfm2: a lone call without the list's brackets", LFM2,
            "<|tool_call_start|>get_weather(city=\"Paris\")<|tool_call_end|>",
            calls(&[weather()]), &[(CallShape, "get_weather(")]),
        row("lfm2.5: a lone call without the list's brackets inside the markers", LFM25,
            "<|tool_call_start|>get_weather(city=\"Paris\")<|tool_call_end|>",
            calls(&[weather()]), &[(CallShape, "get_weather(")]),
        row("lfm2.5: the calls' list after text without the markers around it", LFM25,
            "Sure.\n[get_weather(city=\"Paris\"), get_time(zone=\"CET\")]",
            msg("Sure.", &[weather(), time()]), &[(CallShape, "[get_weather"), (CallInProse, "[get_weather")]),
        row("lfm2.5: the calls' list alone without the markers", LFM25,
            "[get_weather(city=\"Paris\")]",
            calls(&[weather()]), &[(CallShape, "[get_weather")]),
        row("lfm2.5: its calls as the whole output, without the markers or the list", LFM25,
            "get_weather(city=\"Paris\"), get_time(zone=\"CET\")",
            calls(&[weather(), time()]), &[(CallShape, "get_weather(")]),
        row("lfm2.5: a tool's name in prose stays content", LFM25,
            "Use get_weather(city=\"Paris\") to check.",
            msg("Use get_weather(city=\"Paris\") to check.", &[]), &[]),
        row("lfm2: JSON call objects in the list (as its models write when asked for JSON)", LFM2,
            "<|tool_call_start|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]<|tool_call_end|>",
            calls(&[weather(), time()]), &[(CallShape, "{\"name\": \"get_weather\""), (CallShape, "{\"name\": \"get_time\"")]),
        row("mistral-small-3.2: call without its [CALL_ID] and [ARGS]", MISTRAL,
            "[TOOL_CALLS]get_weather{\"city\": \"Paris\"}",
            calls(&[weather()]), &[(CallShape, "{\"city\"")]),
        row("devstral: call without its [ARGS]", DEVSTRAL,
            "[TOOL_CALLS]get_weather{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{\"zone\": \"CET\"}",
            calls(&[weather(), time()]), &[(CallShape, "{\"city\"")]),
        row("call-id-special fixture: call without its <|call_id|>", CALL_ID_SPECIAL,
            "<|call|>get_weather<|args|>{\"city\": \"Paris\"}<|/call|>",
            calls(&[weather()]), &[(MissingCallId, "<|args|>")]),
        row("call-id-words fixture: second call without its [ID]", CALL_ID_WORDS,
            "[CALL]get_weather[ID]abcdefghi[ARGS]{\"city\": \"Paris\"}[/CALL][CALL]get_time[ARGS]{\"zone\": \"CET\"}[/CALL]",
            calls(&[weather(), time()]), &[(MissingCallId, "[ARGS]{\"zone\"")]),

        // 10. unknown_tool / tool_name_repaired / arguments_outside_schema
        row("hermes: a declared tool behind the functions. namespace", HERMES,
            "<tool_call>\n{\"name\": \"functions.get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            calls(&[weather()]), &[(ToolNameRepaired, "")]),
        row("qwen3-coder: a declared tool in other letter case", QCODER,
            "<tool_call>\n<function=Get_Weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            calls(&[weather()]), &[(ToolNameRepaired, "")]),
        row("mistral-small-3.2: a declared tool with - for _", MISTRAL,
            "[TOOL_CALLS]get-weather[CALL_ID]abcdefghi[ARGS]{\"city\": \"Paris\"}",
            calls(&[weather()]), &[(ToolNameRepaired, "")]),
        row("hermes: call of a tool not in the request", HERMES,
            "<tool_call>\n{\"name\": \"get_stock\", \"arguments\": {\"symbol\": \"ACME\"}}\n</tool_call>",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("llama3.2: call of a tool not in the request at the turn's start", LLAMA32,
            "{\"name\": \"get_stock\", \"parameters\": {\"symbol\": \"ACME\"}}",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("qwen3-coder: call of a tool not in the request", QCODER,
            "<tool_call>\n<function=get_stock>\n<parameter=symbol>\nACME\n</parameter>\n</function>\n</tool_call>",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("glm-4.6: call of a tool not in the request", GLM,
            "<tool_call>get_stock\n<arg_key>symbol</arg_key>\n<arg_value>ACME</arg_value>\n</tool_call>",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("deepseek-v3.1: call of a tool not in the request", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_stock<｜tool▁sep｜>{\"symbol\": \"ACME\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[stock()]), &[(UnknownTool, "")]).thinking(false),
        row("kimi-k2: call of a tool not in the request", KIMI,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_stock:0<|tool_call_argument_begin|>{\"symbol\": \"ACME\"}<|tool_call_end|><|tool_calls_section_end|>",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("mistral-small-3.2: call of a tool not in the request", MISTRAL,
            "[TOOL_CALLS]get_stock[CALL_ID]abcdefghi[ARGS]{\"symbol\": \"ACME\"}",
            calls(&[stock()]), &[(UnknownTool, "")]),
        row("hermes: argument of the wrong type", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": \"two\"}}\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": "two"}))]), &[(ArgumentsOutsideSchema, "")]),
        row("hermes: required argument missing", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>",
            calls(&[call("get_weather", json!({"days": 2}))]), &[(ArgumentsOutsideSchema, "")]),
        row("llama3.2: argument of the wrong type", LLAMA32,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": 75001}}",
            calls(&[call("get_weather", json!({"city": 75001}))]), &[(ArgumentsOutsideSchema, "")]),
        row("qwen3-coder: value that does not fit the parameter's type", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\ntwo\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "Paris", "days": "two"}))]), &[(ArgumentsOutsideSchema, "")]),
        row("glm-4.6: required argument missing", GLM,
            "<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
            calls(&[call("get_weather", json!({"days": 2}))]), &[(ArgumentsOutsideSchema, "")]),
        row("deepseek-v3.1: arguments not an object", DSV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>[\"Paris\"]<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[call("get_weather", json!(["Paris"]))]), &[(ArgumentsOutsideSchema, "")]).thinking(false),

        // 11. arguments_repaired: arguments that are not valid JSON become valid JSON by
        // appending only (what streamed stays), and unplaced_text: what the grammar has no
        // place for is content. Nothing the model wrote is lost.
        row("hermes: raw tab inside an argument string", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a\tb\"}}\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "a\tb"}))]), &[(ArgumentsRepaired, "")]),
        row("qwen2.5: raw tab inside an argument string", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a\tb\", \"days\": 2}}\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "a\tb", "days": 2}))]), &[(ArgumentsRepaired, "")]),
        row("llama3.2: raw tab inside an argument string", LLAMA32,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"a\tb\"}}",
            calls(&[call("get_weather", json!({"city": "a\tb"}))]), &[(ArgumentsRepaired, "")]),
        row("gpt-oss: raw tab inside an argument string", GPT_OSS,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"a\tb\"}<|call|>",
            calls(&[call("get_weather", json!({"city": "a\tb"}))]), &[(ArgumentsRepaired, "")]),
        row("hermes: unescaped quote: the string is closed where it ended, the rest is content", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris&, \"days\": 3}}\n</tool_call>",
            msg("days\": 3}}\n</tool_call>", &[call("get_weather", json!({"city": "Paris&, "}))]), &[(ArgumentsRepaired, ""), (UnplacedText, "days")])
            .leaves_grammar_at("days"),
        row("qwen2.5: unescaped quote", QWEN25,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris&, \"days\": 3}}\n</tool_call>",
            msg("days\": 3}}\n</tool_call>", &[call("get_weather", json!({"city": "Paris&, "}))]), &[(ArgumentsRepaired, ""), (UnplacedText, "days")])
            .leaves_grammar_at("days"),
        row("gpt-oss: unescaped quote", GPT_OSS,
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris&, \"days\": 3}",
            msg("days\": 3}", &[call("get_weather", json!({"city": "Paris&, "}))]), &[(ArgumentsRepaired, ""), (UnplacedText, "days")])
            .leaves_grammar_at("days"),
        row("hermes: output cut after an argument's comma: the comma is dropped, the object closed", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", ",
            calls(&[call("get_weather", json!({"city": "Paris"}))]), &[(ArgumentsRepaired, "")])
            .leaves_grammar_at(""),
        row("hermes: arguments that stop being JSON mid-way: what fit is the call (however streamed), the rest content", HERMES,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2 oops}}\n</tool_call>",
            msg("oops}}\n</tool_call>", &[call("get_weather", json!({"city": "Paris", "days": 2}))]), &[(ArgumentsRepaired, ""), (UnplacedText, "oops")])
            .leaves_grammar_at("oops"),
        row("qwen3-coder: raw tab inside a string of an object parameter", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=options>\n{\"unit\": \"a\tb\"}\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "Paris", "options": {"unit": "a\tb"}}))]), &[(ArgumentsRepaired, "")]).tools(object_param_tools()),
        row("qwen3-coder: raw line break inside a string of an object parameter: kept as a string", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=options>\n{\"unit\": \"a\nb\"}\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("get_weather", json!({"city": "Paris", "options": "{\"unit\": \"a\nb\"}"}))]), &[(ArgumentsOutsideSchema, "")]).tools(object_param_tools()),
        row("qwen3-coder: an unknown parameter is kept", QCODER,
            "<tool_call>\n<function=get_weather>\n<parameter=bogus>\nParis\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("get_weather", json!({"bogus": "Paris"}))]), &[(ArgumentsOutsideSchema, "")]).tools(object_param_tools()),
        row("gpt-oss: a message to an unknown recipient is content", GPT_OSS,
            "<|channel|>analysis to=x<|message|>secret text",
            msg("secret text", &[]), &[(UnplacedText, "<|channel|>")]),
        row("gpt-oss: a call of an undeclared function is kept", GPT_OSS,
            "<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{\"a\": 1}",
            calls(&[call("special_function", json!({"a": 1}))]), &[(UnknownTool, "")]),
        row("attribute tags: an argument whose type word the template never writes stays text, its opener too", ATTRIBUTE_TAGS,
            "<|endtag|>answer<|gt|><|tag|>calls<|gt|><|tag|>call name=\"get_weather\" n=\"1\"<|gt|><|tag|>arg key=\"city\" type=\"string\"<|gt|>Paris<|endtag|>arg<|gt|><|tag|>arg key=\"days\" type=\"integer\"<|gt|>3<|endtag|>arg<|gt|><|endtag|>call<|gt|><|endtag|>calls<|gt|>",
            msg("<|tag|>arg key=\"days\" type=\"integer\"<|gt|>3<|endtag|>arg<|gt|><|endtag|>call<|gt|><|endtag|>calls<|gt|>", &[call("get_weather", json!({"city": "Paris"}))]),
            &[(MissingClose, "<|tag|>arg key=\"days\""), (TextAroundCalls, "<|tag|>arg key=\"days\"")]).thinking(false),
        row("gpt-oss: a declared function addressed without `functions.`", GPT_OSS,
            "<|channel|>commentary to=get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
            calls(&[call("get_weather", json!({"city": "Paris"}))]), &[(CallShape, "to=get_weather")]),

        // Regressions (well-formed unless said otherwise).
        row("qwen3-coder regression: nullable parameters, null and a string", QCODER,
            "<tool_call>\n<function=annotate>\n<parameter=note>\nnull\n</parameter>\n<parameter=label>\nhello world\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("annotate", json!({"note": null, "label": "hello world"}))]), &[]).tools(nullable_tools()),
        row("qwen3-coder regression: nullable parameters, a string and null", QCODER,
            "<tool_call>\n<function=annotate>\n<parameter=note>\nhello world\n</parameter>\n<parameter=label>\nnull\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("annotate", json!({"note": "hello world", "label": null}))]), &[]).tools(nullable_tools()),
        row("qwen3.5 regression: nullable parameters", QWEN35,
            "<tool_call>\n<function=annotate>\n<parameter=note>\nnull\n</parameter>\n<parameter=label>\nhello\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("annotate", json!({"note": null, "label": "hello"}))]), &[]).tools(nullable_tools()).thinking(false),
        row("qwen3-coder regression: \"float\"/\"int\"/\"dict\" types generate and parse", QCODER,
            "<tool_call>\n<function=measure>\n<parameter=x>\n1.5\n</parameter>\n<parameter=n>\n3\n</parameter>\n<parameter=d>\n{\"a\": 1}\n</parameter>\n</function>\n</tool_call>",
            calls(&[call("measure", json!({"x": 1.5, "n": 3, "d": {"a": 1}}))]), &[]).tools(python_typed_tools()),
        // (Hermes' own template recurses forever on a `type` string it does not know.)
        row("qwen2.5 regression: \"float\"/\"int\"/\"dict\" types generate and parse", QWEN25,
            "<tool_call>\n{\"name\": \"measure\", \"arguments\": {\"x\": 1.5, \"n\": 3, \"d\": {\"a\": 1}}}\n</tool_call>",
            calls(&[call("measure", json!({"x": 1.5, "n": 3, "d": {"a": 1}}))]), &[]).tools(python_typed_tools()),
        row("glm-4.6 regression: \"float\"/\"int\"/\"dict\" types generate and parse", GLM,
            "<tool_call>measure\n<arg_key>x</arg_key>\n<arg_value>1.5</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n<arg_key>d</arg_key>\n<arg_value>{\"a\": 1}</arg_value>\n</tool_call>",
            calls(&[call("measure", json!({"x": 1.5, "n": 3, "d": {"a": 1}}))]), &[]).tools(python_typed_tools()),
        row("deepseek-v3.1-sections fixture: content before the section (no <｜tool▁calls▁begin｜> in content)", DS_SECTIONS,
            "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            msg("Checking.", &[weather()]), &[]).thinking(false),
        row("deepseek-v3.1-sections fixture: two calls in one section", DS_SECTIONS,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"zone\": \"CET\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            calls(&[weather(), time()]), &[]).thinking(false),
        row("functionary-v3.2: a text part after the call parts", FUNCTIONARY32,
            ">>>get_weather\n{\"city\": \"Paris\"}>>>all\nDone.",
            msg("Done.", &[weather()]), &[(TextAroundCalls, ">>>all")]),
        row("functionary-v3.2: text before the calls without its all header", FUNCTIONARY32,
            "Let me check.\n>>>get_weather\n{\"city\": \"Paris\"}",
            msg("Let me check.", &[weather()]), &[(UnplacedText, "Let me check.")]),
        row("deepseek-v3.1-sections fixture: text after the section", DS_SECTIONS,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>Done.",
            msg("Done.", &[weather()]), &[(TextAroundCalls, "Done.")]).thinking(false),
        // A template that never writes calls: JSON calls of declared tools are read anyway.
        row("calls-unshown fixture regression: a JSON call alone is a call", CALLS_UNSHOWN,
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
            calls(&[weather()]), &[]),
        row("calls-unshown fixture regression: text that names no declared tool stays content", CALLS_UNSHOWN,
            "The data: {\"name\": \"Paris\", \"population\": 2100000}",
            msg("The data: {\"name\": \"Paris\", \"population\": 2100000}", &[]), &[]),
        row("qwen2.5 regression: the end-of-turn marker written after the text, tools declared", QWEN25,
            "The weather is fine.<|im_end|>\n",
            msg("The weather is fine.", &[]), &[]),
        row("qwen2.5 regression: the end-of-turn marker inside the text stays text", QWEN25,
            "Models end turns with <|im_end|> here.",
            msg("Models end turns with <|im_end|> here.", &[]), &[]),
        row("phi-4-mini fixture regression: plain text is content", PHI,
            "The weather in Paris is sunny.",
            msg("The weather in Paris is sunny.", &[]), &[]),
        row("phi-4-mini fixture regression: a call list is calls", PHI,
            "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]",
            calls(&[weather(), time()]), &[]),
        row("phi-4-mini fixture regression: content, then a call list", PHI,
            "Let me check.functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            msg("Let me check.", &[weather()]), &[]),
        row("json-name-line probe regression: content, then a call on its lines", NAME_LINE,
            "Let me check.\nget_weather\n{\"city\": \"Paris\"}",
            msg("Let me check.", &[weather()]), &[]),
        row("json-name-line probe regression: a function named in prose stays content", NAME_LINE,
            "You can use get_weather(city) to check.",
            msg("You can use get_weather(city) to check.", &[]), &[]),
        row("json-name-line probe regression: words after a call are no calls of their own", NAME_LINE,
            "get_weather\n{\"city\": \"Paris\"}\nis what I ran",
            msg("is what I ran", &[weather()]), &[(TextAroundCalls, "is what")]),
    ]
}

/// The deviation group a row counts for in the coverage summary.
fn group(r: &Row) -> &'static str {
    match r.recoveries.first().map(|(k, _)| *k) {
        Some(k) => k.name(),
        None if r.name.contains("regression") || r.name.contains("fixture") => "regression (well-formed)",
        None => "stays content",
    }
}

// ---------------------------------------------------------------------------------------------

fn shared_templates() -> Option<PathBuf> {
    shared_data::shared(CORPUS_TESTS).map(|s| s.templates())
}

fn template_path(name: &str) -> Option<PathBuf> {
    match name.split_once('/') {
        Some((dir @ ("recovery" | "templates" | "probes"), f)) => {
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(dir).join(format!("{f}.jinja")))
        }
        _ => shared_templates().map(|d| d.join(format!("{name}.jinja"))),
    }
}

/// Templates and their analyses, loaded once.
#[derive(Default)]
struct Templates(HashMap<&'static str, Result<(ChatTemplate, TemplateAnalysis), String>>);

impl Templates {
    fn get(&mut self, name: &'static str) -> Result<&(ChatTemplate, TemplateAnalysis), String> {
        self.0
            .entry(name)
            .or_insert_with(|| {
                let path = template_path(name).ok_or("no ../shared/templates")?;
                let t = ChatTemplate::load(&path).map_err(|e| format!("load {}: {e}", path.display()))?;
                let a = analyze(&t).map_err(|e| format!("analysis: {e}"))?;
                Ok((t, a))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

fn request(tools: &Value, thinking: Option<bool>, parallel: bool, messages: Value) -> Request {
    let mut inputs = json!({"messages": messages, "tools": tools, "parallel_tool_calls": parallel});
    if let Some(on) = thinking {
        inputs["enable_thinking"] = on.into();
        inputs["chat_template_kwargs"] = json!({"thinking": on});
    }
    Request::from_json(&inputs).unwrap()
}

fn user() -> Value {
    json!({"role": "user", "content": "What is the weather in Paris?"})
}

/// The stream in `chunk`-byte pieces: what the deltas add up to, and the final parse.
fn streamed(parser: &ChatParser, output: &str, chunk: usize) -> Result<(ChatMessage, ParsedMessage), String> {
    let mut s = parser.stream();
    let mut deltas: Vec<ChatDelta> = Vec::new();
    let mut at = 0;
    for piece in stream_pieces(output, &[chunk]) {
        deltas.extend(s.push(piece).map_err(|e| format!("push failed at byte {at}: {e}"))?);
        at += piece.len();
    }
    let (last, fin) = s.finish().map_err(|e| format!("finish failed: {e}"))?;
    deltas.extend(last);
    Ok((ChatMessage::from_deltas(&deltas), fin))
}

fn kinds_text(ks: &[RecoveryKind]) -> String {
    format!("[{}]", ks.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "))
}

fn one_line(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Where `a` and `b` first differ, as short excerpts.
fn message_diff(a: &ChatMessage, b: &ChatMessage) -> String {
    compare_messages(a, b).err().map(|e| e.detail().to_owned()).unwrap_or_else(|| format!("{} vs {}", one_line(a), one_line(b)))
}

/// Everything wrong with one row (empty: it passes).
fn check_row(templates: &mut Templates, r: &Row) -> Vec<String> {
    let (t, a) = match templates.get(r.template) {
        Ok(x) => x,
        Err(e) => return vec![e],
    };
    let req = request(&r.tools, r.thinking, r.parallel, json!([user()]));
    let g = match generate(t, a, &req) {
        Ok(g) => g,
        Err(e) => return vec![format!("generate: {e}")],
    };
    let want: ChatMessage = serde_json::from_value(r.want.clone()).expect("the row's expected message");
    let out = r.output;
    let mut bad = Vec::new();
    let one = match g.parser(Strictness::Lenient).parse(out, ParseMode::Complete) {
        Ok(p) => p,
        Err(e) => return vec![format!("lenient parse failed: {e}")],
    };
    if let Err(d) = compare_messages(&one.message, &want) {
        bad.push(format!("message: {}", d.detail()));
    }
    match (&one.diagnostic, r.diagnostic) {
        (Some(d), Some(anchor)) if out.get(d.offset..).is_some_and(|rest| rest.trim_start().starts_with(anchor)) => {}
        (None, None) => {}
        (Some(d), _) => {
            bad.push(format!("diagnostic at byte {} ({:?}): {}", d.offset, out.get(d.offset..).unwrap_or("").chars().take(30).collect::<String>(), d.message))
        }
        (None, Some(anchor)) => bad.push(format!("no diagnostic, expected one at {anchor:?}")),
    }
    let got: Vec<RecoveryKind> = one.recoveries.iter().map(|x| x.kind).collect();
    let wanted: Vec<RecoveryKind> = r.recoveries.iter().map(|x| x.0).collect();
    if got != wanted {
        bad.push(format!("recoveries {}, expected {}", kinds_text(&got), kinds_text(&wanted)));
    }
    for (i, rec) in one.recoveries.iter().enumerate() {
        let Some(rest) = out.get(rec.offset..).filter(|_| rec.offset + rec.len <= out.len()) else {
            bad.push(format!("recovery {i} ({}) at {}+{} is not inside the output ({} bytes)", rec.kind, rec.offset, rec.len, out.len()));
            continue;
        };
        let anchor = match r.recoveries.get(i) {
            Some(&(k, anchor)) if k == rec.kind => anchor,
            _ => continue,
        };
        let ok = match anchor {
            "" => true,
            "$" => rest.trim().is_empty(),
            _ => rest.trim_start().starts_with(anchor),
        };
        if !ok {
            let shown: String = rest.chars().take(40).collect();
            bad.push(format!("recovery {i} ({}) at byte {} points at {shown:?}, expected {anchor:?}", rec.kind, rec.offset));
        }
    }
    let lenient = g.parser(Strictness::Lenient);
    for chunk in [1, 3, 7] {
        match streamed(&lenient, out, chunk) {
            Err(e) => bad.push(format!("stream/{chunk}: {e}")),
            Ok((summed, fin)) => {
                if summed != one.message {
                    bad.push(format!("stream/{chunk}: deltas differ from the one-shot message: {}", message_diff(&summed, &one.message)));
                } else if fin.message != one.message {
                    bad.push(format!("stream/{chunk}: final message differs from the one-shot message: {}", message_diff(&fin.message, &one.message)));
                }
                if fin.recoveries != one.recoveries {
                    bad.push(format!("stream/{chunk}: recoveries {}, one-shot {}", one_line(&fin.recoveries), one_line(&one.recoveries)));
                }
            }
        }
    }
    match (wanted.is_empty(), g.parser(Strictness::Strict).parse(out, ParseMode::Complete)) {
        (false, Ok(p)) => bad.push(format!("strict: parsed ({}), expected an error", one_line(&p.message))),
        (true, Err(e)) => bad.push(format!("strict: {e}")),
        (true, Ok(p)) if p.message != one.message => bad.push(format!("strict: message differs: {}", message_diff(&p.message, &one.message))),
        _ => {}
    }
    bad
}

#[test]
fn sloppy_outputs_recover() {
    let rows = table();
    let have_shared = shared_templates().is_some();
    let mut templates = Templates::default();
    let mut failures = Vec::new();
    let mut run = 0;
    for r in &rows {
        if !have_shared && !r.template.starts_with("recovery/") {
            continue;
        }
        run += 1;
        let bad = check_row(&mut templates, r);
        println!("{} {}", if bad.is_empty() { "pass" } else { "FAIL" }, r.name);
        for b in &bad {
            println!("       {b}");
        }
        if !bad.is_empty() {
            failures.push(format!("{}\n    {}", r.name, bad.join("\n    ")));
        }
    }
    println!("{} of {run} rows pass", run - failures.len());
    assert!(failures.is_empty(), "{} of {run} rows fail:\n{}", failures.len(), failures.join("\n"));
}

/// Every deviation is tested in at least three templates; names are unique, expected messages
/// read, anchors occur in the output in the recoveries' order.
#[test]
fn the_table_covers_each_deviation() {
    let rows = table();
    let mut per_kind: BTreeMap<RecoveryKind, BTreeSet<&str>> = BTreeMap::new();
    let mut per_group: BTreeMap<&str, usize> = BTreeMap::new();
    let mut names = BTreeSet::new();
    for r in &rows {
        assert!(names.insert(r.name), "duplicate row name {:?}", r.name);
        serde_json::from_value::<ChatMessage>(r.want.clone()).unwrap_or_else(|e| panic!("{}: {e}", r.name));
        let mut at = 0;
        for &(k, anchor) in r.recoveries.iter().filter(|(_, a)| !a.is_empty() && *a != "$") {
            let i = r.output[at..].find(anchor).unwrap_or_else(|| panic!("{}: {k} anchor {anchor:?} not in the output after byte {at}", r.name));
            at += i;
        }
        for (k, _) in &r.recoveries {
            per_kind.entry(*k).or_default().insert(r.template);
        }
        *per_group.entry(group(r)).or_default() += 1;
    }
    for (g, n) in &per_group {
        println!("{g:<28} {n} rows");
    }
    let mut per_template: BTreeMap<&str, usize> = BTreeMap::new();
    rows.iter().for_each(|r| *per_template.entry(r.template).or_default() += 1);
    for (t, n) in &per_template {
        println!("{t:<46} {n} rows");
    }
    for k in RecoveryKind::ALL {
        let t = per_kind.get(&k).map_or(0, BTreeSet::len);
        println!("{:<28} {t} templates", k.name());
        assert!(t >= 3, "{} is tested in {t} templates", k.name());
    }
}

// ---------------------------------------------------------------------------------------------

/// Templates whose own renders must parse with no recovery.
const WELL_FORMED: &[(&str, Option<bool>)] = &[
    (HERMES, None),
    (QWEN25, None),
    (LLAMA31, None),
    (LLAMA32, None),
    (LLAMA33, None),
    (NEMO, None),
    (DSV31, Some(false)),
    (KIMI, None),
    (MISTRAL, None),
    (QCODER, None),
    (GLM, None),
    (QWEN35, Some(false)),
    (MINIMAX, None),
    (DS_SECTIONS, Some(false)),
    (PHI, None),
    (CALL_ID_SPECIAL, None),
    (CALL_ID_WORDS, None),
];

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// The model output the template's render of `msg` implies: the turn after the prompt, without
/// the end of turn (what the template writes after a content-only turn).
fn rendered_output(t: &ChatTemplate, a: &TemplateAnalysis, req: &Request, g: &PreparedRequest, msg: &Value) -> Result<String, String> {
    let render = |m: &Value| {
        let mut r = req.clone();
        r.messages.push(m.clone());
        render_conversation(t, a, &r, false).map_err(|e| e.to_string())
    };
    const NEEDLE: &str = "END_OF_TURN_PROBE";
    let probe = render(&json!({"role": "assistant", "content": NEEDLE}))?;
    let tail = probe.rfind(NEEDLE).map_or("", |i| &probe[i + NEEDLE.len()..]).to_owned();
    let full = render(msg)?;
    let turn = match full.strip_prefix(g.prompt.as_str()) {
        Some(turn) => turn.to_owned(),
        None => {
            // The prompt opened reasoning that history drops: close it, then the turn.
            let base = g.prompt.strip_suffix(g.prefill.as_str()).ok_or("the render does not continue the prompt")?;
            let turn = full.strip_prefix(base).ok_or("the render does not continue the prompt")?;
            match turn.strip_prefix(g.prefill.as_str()) {
                Some(rest) => rest.to_owned(),
                None => format!("\n{}\n\n{}", a.reasoning.end, turn.trim_start()),
            }
        }
    };
    Ok(turn.strip_suffix(tail.as_str()).unwrap_or(&turn).to_owned())
}

#[test]
fn well_formed_outputs_report_no_recovery() {
    let have_shared = shared_templates().is_some();
    let messages = [
        (
            "one call",
            json!({"role": "assistant", "content": "", "tool_calls": [
            tool_call("abcdefghi", "get_weather", json!({"city": "Paris", "days": 2}))]}),
        ),
        (
            "two calls",
            json!({"role": "assistant", "content": "", "tool_calls": [
            tool_call("abcdefghi", "get_weather", json!({"city": "Paris"})), tool_call("bcdefghij", "get_time", json!({"zone": "CET"}))]}),
        ),
        ("content", json!({"role": "assistant", "content": "It is sunny in Paris."})),
        (
            "content and a call",
            json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
            tool_call("abcdefghi", "get_weather", json!({"city": "Paris"}))]}),
        ),
    ];
    let mut templates = Templates::default();
    let mut failures = Vec::new();
    for &(name, thinking) in WELL_FORMED {
        if !have_shared && !name.starts_with("recovery/") {
            continue;
        }
        let (t, a) = match templates.get(name) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let req = request(&tools(), thinking, true, json!([user()]));
        let g = match generate(t, a, &req) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{name}: generate: {e}"));
                continue;
            }
        };
        let parser = g.parser(Strictness::Lenient);
        let mut checked = Vec::new();
        for (case, m) in &messages {
            // A template that refuses the message (one call per turn, …) has no case.
            let Ok(out) = rendered_output(t, a, &req, &g, m) else { continue };
            checked.push(*case);
            let mut want: ChatMessage = serde_json::from_value(m.clone()).unwrap();
            want.tool_calls.iter_mut().for_each(|c| c.id.clear());
            // Templates that drop the content of a turn with calls.
            if !out.contains(want.content.trim()) {
                want.content.clear();
            }
            let p = match parser.parse(&out, ParseMode::Complete) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("{name} / {case}: parse failed: {e}"));
                    continue;
                }
            };
            let mut bad = Vec::new();
            if !p.recoveries.is_empty() {
                bad.push(format!("recoveries {}", one_line(&p.recoveries)));
            }
            if let Some(d) = &p.diagnostic {
                bad.push(format!("diagnostic at byte {}: {}", d.offset, d.message));
            }
            if let Err(d) = compare_messages(&p.message, &want) {
                bad.push(format!("message: {}", d.detail()));
            }
            if !bad.is_empty() {
                failures.push(format!("{name} / {case} ({out:?}): {}", bad.join("; ")));
            }
        }
        println!("{name:<46} {}", checked.join(", "));
        if !checked.contains(&"one call") {
            failures.push(format!("{name}: no rendered call to check ({checked:?})"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
