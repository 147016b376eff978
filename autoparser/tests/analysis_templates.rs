//! Template analysis and generation over every template of the shared data's `templates/`.

use autoparser::analysis::analyze;
use autoparser::format::{TemplateAnalysis, ValueSyntax};
use autoparser::generator::{generate, render_conversation};
use autoparser::template::ChatTemplate;
use autoparser::{Request, ToolChoice};
use peg_runtime::chat::{ParseMode, RecoveryKind, Strictness};
use serde_json::json;

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &[
    "every_template_analyzes_and_round_trips_through_json",
    "every_template_generates_parser_and_grammar",
    "round_trip_reasoning_and_two_tool_calls",
    "whitespace_after_calls_follows_the_template",
    "argument_syntax_of_shared_templates",
];

/// Every shared template, compiled; `None` without the shared data.
fn templates() -> Option<Vec<(String, ChatTemplate)>> {
    let dir = shared_data::shared(CORPUS_TESTS)?.templates();
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("templates directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .map(|p| {
            let src = std::fs::read_to_string(&p).unwrap();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, ChatTemplate::from_source(&src, "", "").expect("template compiles"))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Some(v)
}

fn tools() -> Vec<serde_json::Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City."}, "days": {"type": "integer", "description": "Days."}},
            "required": ["location", "days"]}}}),
        json!({"type": "function", "function": {"name": "search", "description": "Search.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "Query."}}, "required": ["query"]}}}),
    ]
}

#[test]
fn every_template_analyzes_and_round_trips_through_json() {
    let Some(all) = templates() else { return };
    assert_eq!(all.len(), 59);
    let mut builders = Vec::new();
    for (name, t) in &all {
        let a = analyze(t).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = TemplateAnalysis::from_json(&a.to_json()).unwrap();
        assert_eq!(back, a, "{name}");
        if let Some(b) = &a.builder {
            builders.push(format!("{name}: {b}"));
        }
    }
    // Model-specific code is the exception: count it.
    println!("registered builders used by {} of {} templates: {builders:#?}", builders.len(), all.len());
    assert!(builders.len() <= 7, "{builders:?}");
}

#[test]
fn every_template_generates_parser_and_grammar() {
    let Some(all) = templates() else { return };
    for (name, t) in all {
        let a = analyze(&t).unwrap();
        for choice in [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None] {
            let req = Request {
                messages: vec![json!({"role": "user", "content": "What is the weather in Paris?"})],
                tools: tools(),
                tool_choice: choice,
                parallel_tool_calls: true,
                add_generation_prompt: true,
                enable_thinking: Some(true),
                ..Request::default()
            };
            let g = generate(&t, &a, &req).unwrap_or_else(|e| panic!("{name} {choice:?}: {e}"));
            if let Some(grammar) = &g.grammar {
                peg_runtime::gbnf::Grammar::parse(grammar).unwrap_or_else(|e| panic!("{name}: grammar: {e}"));
            }
            assert!(g.prompt.contains("What is the weather in Paris?"), "{name}");
        }
    }
}

/// Render a reasoning + two-call assistant turn, cut out what the model wrote, and parse it
/// back with the generated arena: both calls must come out, with their names.
#[test]
fn round_trip_reasoning_and_two_tool_calls() {
    let Some(all) = templates() else { return };
    let (mut eligible, mut passed, mut failures) = (0, 0, Vec::new());
    for (name, t) in all {
        let a = analyze(&t).unwrap();
        if !a.caps.supports_tool_calls || !a.caps.supports_parallel_tool_calls {
            continue;
        }
        let user = json!({"role": "user", "content": "Weather in Paris, and events?"});
        let asst = json!({"role": "assistant", "content": "", "reasoning_content": "I should call both tools.",
            "tool_calls": [
                {"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris", "days": 3}}},
                {"id": "call00002", "type": "function", "function": {"name": "search", "arguments": {"query": "Paris events"}}}]});
        let req = Request {
            messages: vec![user.clone()],
            tools: tools(),
            parallel_tool_calls: true,
            add_generation_prompt: true,
            enable_thinking: Some(true),
            ..Request::default()
        };
        let g = generate(&t, &a, &req).unwrap();
        let full = match render_conversation(&t, &a, &Request { messages: vec![user, asst], ..req.clone() }, false) {
            Ok(f) => f,
            Err(_) => continue,
        };
        let Some(cut) = full.strip_prefix(g.prompt.as_str()) else { continue };
        if !cut.contains("get_weather") {
            continue; // the template does not render calls
        }
        // The model stops at its end-of-turn marker.
        let cut = match a.end_of_turn.as_str() {
            "" => cut,
            eot => cut.find(eot).map_or(cut, |i| &cut[..i]),
        };
        eligible += 1;
        let input = format!("{}{}", g.prefill, cut);
        let out = g.arena.parse(input.as_bytes(), false).unwrap();
        let names: Vec<_> = out.ast.find_by_tag("tool_name").into_iter().map(|id| out.ast.text(id, input.as_bytes()).into_owned()).collect();
        if out.result.outcome == peg_runtime::parse::Outcome::Success && names == ["get_weather", "search"] {
            passed += 1;
        } else {
            failures.push(format!("{name}: {:?} {names:?} in {cut:?}", out.result.outcome));
        }
    }
    println!("round trip: {passed}/{eligible}; failures: {failures:#?}");
    assert!(eligible >= 25, "only {eligible} templates were eligible");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Whitespace after the last call is part of the format only where the template writes some:
/// elsewhere a strict parse ends right after the call, and a lenient one drops it, reported.
#[test]
fn whitespace_after_calls_follows_the_template() {
    let Some(all) = templates() else { return };
    let by_name = |n: &str| all.iter().find(|(name, _)| name == n).map(|(_, t)| t).unwrap();
    let nemotron = analyze(by_name("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")).unwrap();
    assert!(nemotron.tools.format.space_after_calls, "Nemotron writes `</tool_call>\n`");
    let glm = by_name("GLM-4.7-Flash");
    let a = analyze(glm).unwrap();
    assert!(!a.tools.format.space_after_calls, "GLM-4.7 ends the turn right after `</tool_call>`");
    let req = Request { messages: vec![json!({"role": "user", "content": "Weather?"})], tools: tools(), add_generation_prompt: true, ..Request::default() };
    let g = generate(glm, &a, &req).unwrap();
    let call = "<tool_call>search<arg_key>query</arg_key><arg_value>Paris</arg_value></tool_call>";
    let parse = |output: &str| g.arena.parse(format!("{}{output}", g.prefill).as_bytes(), false).unwrap().result.outcome;
    assert_eq!(parse(call), peg_runtime::parse::Outcome::Success);
    let with_break = format!("{call}\n");
    assert!(g.parser(Strictness::Strict).parse(&with_break, ParseMode::Complete).is_err());
    let lenient = g.parser(Strictness::Lenient).parse(&with_break, ParseMode::Complete).unwrap();
    assert_eq!((lenient.message.content.as_str(), lenient.message.tool_calls.len()), ("", 1));
    // (The call also ends the reasoning the prompt opened: reported before.)
    assert_eq!(lenient.recoveries.last().map(|r| (r.kind, r.offset)), Some((RecoveryKind::TextAroundCalls, call.len())));
}

/// The syntax nested argument values are written in, learned from the templates (the analysis
/// unit tests check the same on fixtures of these shapes).
#[test]
fn argument_syntax_of_shared_templates() {
    let Some(all) = templates() else { return };
    let analyzed = |n: &str| analyze(all.iter().find(|(name, _)| name == n).map(|(_, t)| t).unwrap_or_else(|| panic!("no template {n}"))).unwrap();
    let vs = analyzed("google-gemma-4-31B-it").tools.arguments.value_syntax;
    assert_eq!((vs.string_open.as_str(), vs.string_close.as_str()), ("<|\"|>", "<|\"|>"));
    assert_eq!((vs.key_open.as_str(), vs.key_separator.as_str(), vs.item_separator.as_str()), ("", ":", ","));
    assert_eq!((vs.true_literal.as_str(), vs.false_literal.as_str()), ("true", "false"));
    assert!(!vs.is_json());
    assert!(vs.sorted_keys);
    // Templates writing nested values as JSON (or Python reprs) keep the default.
    for name in ["Qwen3-Coder", "MiniMax-M2", "GLM-4.6"] {
        assert_eq!(analyzed(name).tools.arguments.value_syntax, ValueSyntax::default(), "{name}");
    }
    // Templates with one closing marker for every argument learn no elements.
    for name in ["Qwen3-Coder", "MiniMax-M2", "GLM-4.6", "google-gemma-4-31B-it"] {
        assert_eq!(analyzed(name).tools.arguments.elements, None, "{name}");
    }
}

/// Odd templates and requests give values, never panics.
#[test]
fn odd_templates_never_panic() {
    let pieces = [
        "{% for m in messages %}",
        "{% endfor %}",
        "{{ m.content }}",
        "<think>",
        "</think>",
        "{{ m.reasoning_content }}",
        "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}{% endif %}",
        "[TOOL_CALLS]",
        "<|im_start|>",
        "{{ m.role }}",
        "\n",
        "{% if add_generation_prompt %}<|assistant|>{% endif %}",
        "{{ raise_exception('no') }}",
        "<",
        "[",
        "{{ c.function.name }}",
        "｜",
        "é",
    ];
    // A small deterministic generator: every template is a sequence of pieces.
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..400 {
        let n = 1 + (next() % 12) as usize;
        let src: String = (0..n).map(|_| pieces[(next() % pieces.len() as u64) as usize]).collect();
        let Ok(t) = ChatTemplate::from_source(&src, "", "") else { continue };
        let analysis = analyze(&t);
        if let Err(e) = &analysis {
            assert!(!e.to_string().contains("internal error"), "{src:?}: {e}");
        }
        if let Ok(a) = analysis {
            let req = Request {
                messages: vec![json!({"role": "user", "content": "hi"})],
                tools: tools(),
                parallel_tool_calls: true,
                add_generation_prompt: true,
                ..Request::default()
            };
            if let Err(e) = generate(&t, &a, &req) {
                assert!(!e.to_string().contains("internal error"), "{src:?}: {e}");
            }
        }
    }
}
