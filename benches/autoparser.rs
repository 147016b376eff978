//! The autoparser's costs over every template of `../shared/templates`: analyzing a template
//! (done once per template and cached), and generating everything a request needs (prompt,
//! arena, GBNF, triggers) from a cached analysis (done per request).
//!
//! Run: `cargo bench --bench autoparser -- --quick`

use std::hint::black_box;

use chat_peg::autoparser::analysis::{analyze_template, TemplateAnalysis, TemplateRender};
use chat_peg::autoparser::generator::{generate, Request};
use chat_peg::autoparser::template::ChatTemplate;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

fn templates() -> Vec<ChatTemplate> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/templates");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("the shared templates beside the checkout")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    paths.iter().map(|p| ChatTemplate::from_source(&std::fs::read_to_string(p).unwrap(), "", "").unwrap()).collect()
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

fn benches(c: &mut Criterion) {
    let all = templates();
    let analyses: Vec<TemplateAnalysis> = all.iter().map(|t| analyze_template(t).unwrap()).collect();
    let req = request();
    let mut g = c.benchmark_group("autoparser");
    g.sample_size(10);
    // Per iteration: every template once (divide by the template count for one).
    g.bench_function(format!("analyze_{}_templates", all.len()), |b| {
        b.iter(|| all.iter().map(|t| analyze_template(black_box(t)).is_ok() as usize).sum::<usize>())
    });
    g.bench_function(format!("generate_cached_{}_templates", all.len()), |b| {
        b.iter(|| all.iter().zip(&analyses).map(|(t, a)| generate(&TemplateRender(t), a, black_box(&req)).is_ok() as usize).sum::<usize>())
    });
    g.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
