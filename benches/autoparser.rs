//! The autoparser's costs over every template of the shared data's `templates/` (found as the
//! corpus tests find it; without it the benchmarks are skipped with a notice): analyzing a template
//! (done once per template and cached), and generating everything a request needs (prompt,
//! arena, GBNF, triggers) from a cached analysis (done per request); and the grammar of a
//! request offering 300 tools with realistic schemas; and streaming the parse of a long answer
//! full of markup (code, tags, JSON examples) through generated parsers, where the lenient
//! parser looks for calls the model may have written inside its text.
//!
//! Run: `cargo bench --bench autoparser -- --quick`

use std::hint::black_box;

use chat_peg::autoparser::Request;
use chat_peg::autoparser::analysis::analyze;
use chat_peg::autoparser::format::TemplateAnalysis;
use chat_peg::autoparser::generator::{build_grammar_arena, generate};
use chat_peg::autoparser::template::ChatTemplate;
use chat_peg::peg_runtime::chat::Strictness;
use chat_peg::peg_runtime::gbnf::{self, GbnfOptions};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

#[path = "../tests/shared_data/mod.rs"]
mod shared_data;

/// The benchmark groups that read the shared templates: all of them (named in the skip notice).
const SHARED_GROUPS: &[&str] = &["autoparser", "autoparser_300_tools", "autoparser_stream_markup_30kb"];

/// Every shared template, compiled; `None` without the shared data.
fn templates() -> Option<Vec<(String, ChatTemplate)>> {
    let dir = shared_data::shared_for("benchmark groups", SHARED_GROUPS)?.templates();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("the shared templates")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    let all = paths
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, ChatTemplate::from_source(&std::fs::read_to_string(p).unwrap(), "", "").unwrap())
        })
        .collect();
    Some(all)
}

fn request() -> Request {
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": "A tool.", "parameters": {"type": "object",
            "properties": {"location": {"type": "string"}, "days": {"type": "integer"}}, "required": ["location"]}}})
    };
    Request {
        messages: vec![json!({"role": "user", "content": "What is the weather in Paris?"})],
        tools: vec![tool("get_weather"), tool("search")],
        parallel_tool_calls: true,
        add_generation_prompt: true,
        ..Request::default()
    }
}

/// `n` tools whose schemas use most JSON-schema keywords.
fn many_tools(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            json!({"type": "function", "function": {"name": format!("tool_{i}"), "description": "A tool.", "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 200},
                    "mode": {"enum": ["fast", "exact", format!("custom-{}", i % 7)]},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100 + i},
                    "since": {"type": "string", "format": "date-time"},
                    "filters": {"type": "array", "items": {"type": "object", "properties": {
                        "field": {"type": "string"}, "value": {"type": ["string", "number", "boolean"]}}, "required": ["field"]}, "maxItems": 5},
                    "options": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
                "required": ["query"]
            }}})
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let Some(templates) = templates() else { return };
    let (names, all): (Vec<String>, Vec<ChatTemplate>) = templates.into_iter().unzip();
    let analyses: Vec<TemplateAnalysis> = all.iter().map(|t| analyze(t).unwrap()).collect();
    let req = request();
    let mut g = c.benchmark_group("autoparser");
    g.sample_size(10);
    // Per iteration: every template once (divide by the template count for one).
    g.bench_function(format!("analyze_{}_templates", all.len()), |b| b.iter(|| all.iter().map(|t| analyze(black_box(t)).is_ok() as usize).sum::<usize>()));
    g.bench_function(format!("generate_cached_{}_templates", all.len()), |b| {
        b.iter(|| all.iter().zip(&analyses).map(|(t, a)| generate(t, a, black_box(&req)).is_ok() as usize).sum::<usize>())
    });
    g.finish();

    // 300 tools on a Hermes-style template: generation per request, and the GBNF alone.
    let at = names.iter().position(|n| n == "NousResearch-Hermes-3-Llama-3.1-8B-tool_use").expect("the Hermes 3 template");
    let hermes = (&all[at], &analyses[at]);
    let req = Request { tools: many_tools(300), ..request() };
    let mut g = c.benchmark_group("autoparser_300_tools");
    g.sample_size(10);
    g.bench_function("generate", |b| b.iter(|| generate(hermes.0, hermes.1, black_box(&req)).unwrap().grammar.map(|t| t.len())));
    let arena = build_grammar_arena(hermes.1, &req, "").unwrap();
    g.bench_function("gbnf_lazy", |b| b.iter(|| gbnf::generate(black_box(&arena), &GbnfOptions { lazy: true, ..Default::default() }).unwrap().len()));
    g.finish();

    // A 30 KB answer with code fences, HTML tags and JSON examples, streamed in 4-byte chunks.
    let answer = markup_answer();
    let req = request();
    let mut g = c.benchmark_group("autoparser_stream_markup_30kb");
    g.sample_size(10);
    g.throughput(criterion::Throughput::Bytes(answer.len() as u64));
    for name in ["NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "meta-llama-Llama-3.2-3B-Instruct", "Qwen3-Coder"] {
        let at = names.iter().position(|n| n == name).expect("a shared template");
        let parser = generate(&all[at], &analyses[at], &req).unwrap().parser(Strictness::Lenient);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut s = parser.stream();
                let mut n = 0;
                for piece in answer.as_bytes().chunks(4) {
                    n += s.push(std::str::from_utf8(piece).unwrap()).unwrap().len();
                }
                n + s.finish().unwrap().0.len()
            })
        });
    }
    g.finish();
}

/// Prose with markdown, code fences, HTML tags and JSON examples (ASCII, so 4-byte chunks
/// never cut a character).
fn markup_answer() -> String {
    let mut out = String::new();
    for i in 0..300 {
        out.push_str(&format!("Here is some prose about item {i}, with a [link](http://x.y) and `code` spans. "));
        if i % 5 == 0 {
            out.push_str(&format!("\n```js\nfunction f{i}(a) {{ return {{x: a, y: [1,2,3]}}; }}\n```\n"));
        }
        if i % 7 == 0 {
            out.push_str("<div class=\"c\"><b>bold</b> <i>it</i></div>\n");
        }
        if i % 11 == 0 {
            out.push_str("Example JSON: {\"a\": 1, \"b\": {\"c\": [1, 2]}}.\n");
        }
    }
    out
}

criterion_group!(group, benches);
criterion_main!(group);
