//! The specialized parsers of `chat_peg::formats` against the runtime arena of the same
//! grammar, on the same inputs: one-shot parses of complete input, the generated `Session`
//! against the runtime's `Session` following a stream chunk by chunk, and a `ChatStream`
//! driven by each (deltas out). Target: the macro at least as fast as the arena everywhere.
//! After the runs it prints the macro/arena time ratio of every benchmark that ran.
//!
//! Run: `cargo bench --bench macro_vs_runtime -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use chat_peg::formats::{hermes, qwen3_coder};
use chat_peg::peg_runtime::chat::{ChatParseOptions, ChatParser, DeltaBuffer, ToolSpec};
use criterion::{Criterion, Throughput, criterion_group};
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

/// Streams `input` through the generated Hermes `Session`, the runtime's incremental
/// `Session` (both followed with `update`, which borrows the output: a copy per chunk would
/// cost both the same and hide the parsers), and, for reference, a one-shot generated parse of
/// all input per chunk (`macro_reparse`: what a stream costs without a session).
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
                black_box(s.update().unwrap());
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
                black_box(s.update().unwrap());
            }
            s.finish().unwrap().ast.len()
        })
    });
    g.finish();
}

/// One call with a 64 KB string argument (a single value growing at the end of input).
fn big_argument() -> String {
    format!(
        "Writing it.\n<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"{}\", \"count\": 1}}}}\n</tool_call>\n",
        "abcdefgh".repeat(8192)
    )
}

/// Streaming: the Hermes input in 16-byte chunks (many short calls), and the 64 KB argument
/// in 4-byte chunks.
fn stream(c: &mut Criterion) {
    stream_group(c, "hermes_stream_16b", &hermes_input(20), 16, 20);
    stream_group(c, "hermes_stream_64k_arg_4b", &big_argument(), 4, 10);
}

/// A `ChatStream` (deltas out, into one reused buffer) driven by the generated Hermes
/// `Session` (`hermes::Chat::stream`) and by the runtime's `Session` over the arena.
fn chat_group(c: &mut Criterion, group: &str, input: &str, chunk: usize, samples: usize) {
    let options = ChatParseOptions { tools: tools(), ..Default::default() };
    let chat = hermes::Chat::new(options.clone()).unwrap();
    let runtime = ChatParser::new(Arc::new(hermes::arena(&options.tools).unwrap()), options);
    let pieces = chat_peg::peg_runtime::chat::stream_pieces(input, &[chunk]);
    let mut g = c.benchmark_group(group);
    g.sample_size(samples);
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("macro", |b| {
        b.iter(|| {
            let mut s = chat.stream();
            let mut out = DeltaBuffer::new();
            for p in &pieces {
                s.push_into(p, &mut out).unwrap();
                black_box(&out);
            }
            s.finish_into(&mut out).unwrap().message.tool_calls.len()
        })
    });
    g.bench_function("arena", |b| {
        b.iter(|| {
            let mut s = runtime.stream();
            let mut out = DeltaBuffer::new();
            for p in &pieces {
                s.push_into(p, &mut out).unwrap();
                black_box(&out);
            }
            s.finish_into(&mut out).unwrap().message.tool_calls.len()
        })
    });
    g.finish();
}

fn chat(c: &mut Criterion) {
    chat_group(c, "hermes_chat_16b", &hermes_input(20), 16, 20);
    chat_group(c, "hermes_chat_64k_arg_4b", &big_argument(), 4, 10);
}

criterion_group!(benches, bench, stream, chat);

fn main() {
    let started = SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios(started);
}

/// Where criterion keeps its results: `CRITERION_HOME`, else `criterion` in the target folder
/// (`CARGO_TARGET_DIR`, else three levels above this benchmark's executable,
/// `target/release/deps/`).
fn criterion_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(home.into());
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(target).join("criterion"));
    }
    Some(std::env::current_exe().ok()?.ancestors().nth(3)?.join("criterion"))
}

/// The median time (ns) of `group/function` measured by this run (results of earlier runs, left
/// on disk, are ignored).
fn median_ns(home: &std::path::Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = home.join(group).join(function).join("new").join("estimates.json");
    if std::fs::metadata(&path).ok()?.modified().ok()? < since {
        return None;
    }
    let estimates: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

/// Prints the macro/arena time ratio of every benchmark that ran (below 1: the macro is faster).
fn print_ratios(since: SystemTime) {
    let Some(home) = criterion_home() else { return };
    let groups: [(&str, &[&str]); 6] = [
        ("hermes", &["macro"]),
        ("qwen3_coder", &["macro"]),
        ("hermes_stream_16b", &["macro", "macro_reparse"]),
        ("hermes_stream_64k_arg_4b", &["macro", "macro_reparse"]),
        ("hermes_chat_16b", &["macro"]),
        ("hermes_chat_64k_arg_4b", &["macro"]),
    ];
    println!("\nmacro/arena time ratios (median; below 1: the macro is faster; macro_reparse: no session, for reference)");
    for (group, functions) in groups {
        let Some(arena) = median_ns(&home, group, "arena", since) else { continue };
        for function in functions {
            if let Some(t) = median_ns(&home, group, function, since) {
                println!(
                    "{:<40} {:>12.1} µs  arena {:>12.1} µs  ratio {:>7.3}  ({:.2}x)",
                    format!("{group}/{function}"),
                    t / 1e3,
                    arena / 1e3,
                    t / arena,
                    arena / t
                );
            }
        }
    }
}
