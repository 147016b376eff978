//! The specialized parsers of `chat_peg::formats` against the runtime arena of the same
//! grammar, on the same inputs (one-shot, complete input). Target: macro >= 2x faster.
//!
//! Run: `cargo bench --bench macro_vs_runtime -- --quick`

use std::hint::black_box;

use chat_peg::formats::{hermes, qwen3_coder};
use chat_peg::peg_runtime::chat::ToolSpec;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

fn tools() -> Vec<ToolSpec> {
    ["get_weather", "search_web", "read_file", "write_file", "run_command"]
        .iter()
        .map(|name| {
            ToolSpec::new(
                *name,
                json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "count": {"type": "integer"}, "verbose": {"type": "boolean"}
                }}),
            )
        })
        .collect()
}

/// Many short tool calls: parser structure dominates.
fn hermes_input(calls: usize) -> String {
    let mut s = String::from("Let me look at a few things before answering.\n");
    for i in 0..calls {
        let name = ["get_weather", "search_web", "read_file", "write_file", "run_command"][i % 5];
        s.push_str(&format!(
            "<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {{\"path\": \"src/file_{i}.rs\", \"count\": {i}, \"verbose\": true}}}}\n</tool_call>\n"
        ));
    }
    s
}

fn qwen_input(calls: usize) -> String {
    let mut s = String::from("I'll make the changes.\n");
    for i in 0..calls {
        let name = ["get_weather", "search_web", "read_file", "write_file", "run_command"][i % 5];
        s.push_str(&format!(
            "<tool_call>\n<function={name}>\n<parameter=path>\nsrc/file_{i}.rs\n</parameter>\n<parameter=count>\n{i}\n</parameter>\n<parameter=verbose>\ntrue\n</parameter>\n</function>\n</tool_call>\n"
        ));
    }
    s
}

/// Name, input, the specialized parse (returns the AST size), the arena of the same grammar.
type Case = (&'static str, String, Box<dyn Fn(&[u8]) -> usize>, chat_peg::peg_runtime::Arena);

fn bench(c: &mut Criterion) {
    let tools = tools();
    let cases: Vec<Case> = vec![
        (
            "hermes",
            hermes_input(20),
            {
                let p = hermes::Parser::new(&tools);
                Box::new(move |x: &[u8]| p.parse(x, false).unwrap().ast.len())
            },
            hermes::arena(&tools).unwrap(),
        ),
        (
            "qwen3_coder",
            qwen_input(20),
            {
                let p = qwen3_coder::Parser::new(&tools);
                Box::new(move |x: &[u8]| p.parse(x, false).unwrap().ast.len())
            },
            qwen3_coder::arena(&tools).unwrap(),
        ),
    ];
    for (name, input, macro_parse, arena) in &cases {
        // Same result from both, or the comparison is meaningless.
        assert_eq!(macro_parse(input.as_bytes()), arena.parse(input.as_bytes(), false).unwrap().ast.len());
        assert!(arena.parse(input.as_bytes(), false).unwrap().result.outcome == chat_peg::peg_runtime::Outcome::Success);
        let mut g = c.benchmark_group(*name);
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function("macro", |b| b.iter(|| macro_parse(black_box(input.as_bytes()))));
        g.bench_function("arena", |b| b.iter(|| arena.parse(black_box(input.as_bytes()), false).unwrap().ast.len()));
        g.finish();
    }
}

/// Streams `input` through the generated Hermes `Session` (memo of final rule results), a
/// one-shot generated parse per chunk (no memo), and the runtime's incremental `Session`.
fn stream_group(c: &mut Criterion, group: &str, input: &str, chunk: usize, samples: usize) {
    let tools = tools();
    let arena = std::sync::Arc::new(hermes::arena(&tools).unwrap());
    let parser = hermes::Parser::new(&tools);
    let mut g = c.benchmark_group(group);
    g.sample_size(samples);
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("macro", |b| {
        b.iter(|| {
            let mut s = hermes::Session::new(parser.clone());
            for c in input.as_bytes().chunks(chunk) {
                s.push(c);
                black_box(s.parse().unwrap());
            }
            s.finish().unwrap().ast.len()
        })
    });
    g.bench_function("macro_reparse", |b| {
        b.iter(|| {
            let bytes = input.as_bytes();
            let mut end = 0;
            while end < bytes.len() {
                end = (end + chunk).min(bytes.len());
                black_box(parser.parse(&bytes[..end], true).unwrap());
            }
            parser.parse(bytes, false).unwrap().ast.len()
        })
    });
    g.bench_function("arena", |b| {
        b.iter(|| {
            let mut s = chat_peg::peg_runtime::Session::new(arena.clone());
            for c in input.as_bytes().chunks(chunk) {
                s.push(c);
                black_box(s.parse().unwrap());
            }
            s.finish().unwrap().ast.len()
        })
    });
    g.finish();
}

/// Streaming: the Hermes input in 16-byte chunks (many short calls), and one call with a
/// 64 KB string argument in 4-byte chunks (a single value growing at the end of input).
fn stream(c: &mut Criterion) {
    stream_group(c, "hermes_stream_16b", &hermes_input(20), 16, 20);
    let big = format!(
        "Writing it.\n<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"{}\", \"count\": 1}}}}\n</tool_call>\n",
        "abcdefgh".repeat(8192)
    );
    stream_group(c, "hermes_stream_64k_arg_4b", &big, 4, 10);
}

criterion_group!(benches, bench, stream);
criterion_main!(benches);
