//! Runtime throughput: an `until`-heavy 1 MB output, a JSON-argument-heavy 1 MB output, and a
//! 64 KB tool argument streamed in 4-byte chunks through a `Session` versus one full parse.
//!
//! Run: `cargo bench --bench runtime -- --quick` (or with `--warm-up-time 1 --measurement-time 3`).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group};
use peg_runtime::{Arena, Builder, Outcome, Parser, Session};

fn chat<'a>(p: &'a Builder) -> Parser<'a> {
    let name = "\"" + p.tag("tool_name", p.chars("[a-zA-Z0-9_]", 1, None)) + "\"";
    let call = p.tag(
        "tool",
        "<tool_call>"
            << p.literal("{")
            << p.json_member("name", name)
            << ","
            << p.json_member("arguments", p.tag("tool_args", p.json()))
            << "}"
            << "</tool_call>",
    );
    p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>" + p.space())
        + p.tag("content", p.until("<tool_call>"))
        + p.zero_or_more(call + p.space())
        + p.end()
}

/// ~1 MB of prose (with `<` and `</` near-misses) and one tool call.
fn until_heavy() -> Vec<u8> {
    let mut s = String::from("<think>");
    let line = "The user wants the <b>weather</b>; a tool_call may help. Let me think about it, step <1> of </n>.\n";
    while s.len() < 300_000 {
        s.push_str(line);
    }
    s.push_str("</think>\n");
    while s.len() < 1_000_000 {
        s.push_str(line);
    }
    s.push_str("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
    s.into_bytes()
}

fn json_args(target: usize) -> String {
    let mut items = Vec::new();
    let mut len = 0;
    let mut i = 0;
    while len < target {
        let item = format!(
            "{{\"id\": {i}, \"title\": \"Item number {i} with \\\"quotes\\\" and unicode caf\u{e9} \\u00e9\", \"price\": {}.{:02}, \"tags\": [\"a\", \"bb\", \"ccc\"], \"ok\": {}, \"none\": null}}",
            i * 7 % 1000,
            i % 100,
            i % 2 == 0
        );
        len += item.len() + 2;
        items.push(item);
        i += 1;
    }
    format!("{{\"items\": [{}], \"count\": {i}}}", items.join(", "))
}

/// ~1 MB of tool calls whose JSON arguments are most of the bytes.
fn json_heavy() -> Vec<u8> {
    let mut s = String::from("Calling tools.\n");
    let mut k = 0;
    while s.len() < 1_000_000 {
        s.push_str(&format!("<tool_call>\n{{\"name\": \"tool_{k}\", \"arguments\": {}}}\n</tool_call>\n", json_args(16_000)));
        k += 1;
    }
    s.into_bytes()
}

fn one_arg_64k() -> Vec<u8> {
    format!("Sure.<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {}}}\n</tool_call>", json_args(64 * 1024)).into_bytes()
}

fn stream(arena: &Arc<Arena>, input: &[u8], chunk: usize) -> Outcome {
    let mut s = Session::new(arena.clone());
    let mut last = Outcome::Fail;
    for c in input.chunks(chunk) {
        s.push(c);
        last = s.parse().unwrap().result.outcome;
    }
    black_box(last);
    s.finish().unwrap().result.outcome
}

/// Streaming with `update()`: the output is borrowed, not copied, after each chunk.
fn stream_update(arena: &Arc<Arena>, input: &[u8], chunk: usize) -> Outcome {
    let mut s = Session::new(arena.clone());
    for c in input.chunks(chunk) {
        s.push(c);
        black_box(s.update().unwrap().result.end);
    }
    s.finish().unwrap().result.outcome
}

fn benches(c: &mut Criterion) {
    let arena = Arc::new(Arena::build(chat).unwrap());

    let input = until_heavy();
    assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
    let mut g = c.benchmark_group("until_heavy_1mb");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("parse", |b| b.iter(|| arena.parse(black_box(&input), false).unwrap()));
    g.finish();

    let input = json_heavy();
    assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
    let mut g = c.benchmark_group("json_heavy_1mb");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("parse", |b| b.iter(|| arena.parse(black_box(&input), false).unwrap()));
    g.finish();

    let input = one_arg_64k();
    assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
    assert_eq!(stream(&arena, &input, 4), Outcome::Success);
    let mut g = c.benchmark_group("stream_64k_arg");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("one_full_parse", |b| b.iter(|| arena.parse(black_box(&input), false).unwrap()));
    g.bench_function("session_4_byte_chunks", |b| b.iter(|| stream(&arena, black_box(&input), 4)));
    g.bench_function("session_4_byte_chunks_update", |b| b.iter(|| stream_update(&arena, black_box(&input), 4)));
    g.finish();

    // Linearity: streamed time per byte should stay flat as the argument grows, for a JSON
    // argument and for plain content.
    let mut g = c.benchmark_group("stream_scaling");
    for kb in [16usize, 64, 256] {
        let input = format!("<tool_call>\n{{\"name\": \"f\", \"arguments\": {}}}\n</tool_call>", json_args(kb * 1024)).into_bytes();
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function(format!("json_{kb}k"), |b| b.iter(|| stream_update(&arena, black_box(&input), 4)));
        let text = "Some plain content with <b>tags</b> and < signs. ".repeat(kb * 1024 / 50).into_bytes();
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("content_{kb}k"), |b| b.iter(|| stream_update(&arena, black_box(&text), 4)));
    }
    g.finish();
}

criterion_group! {
    name = runtime;
    config = Criterion::default().sample_size(10);
    targets = benches
}

/// `RUNTIME_ONCE=full|stream|stream_update|json_heavy cargo bench --bench runtime`: run one workload
/// once and exit, for instruction counts under `valgrind --tool=callgrind` (wall-clock numbers on a
/// shared machine are noisy).
fn main() {
    if let Ok(which) = std::env::var("RUNTIME_ONCE") {
        let arena = Arc::new(Arena::build(chat).unwrap());
        let (input, json) = (one_arg_64k(), json_heavy());
        let out = match which.as_str() {
            "full" => arena.parse(&input, false).unwrap().result.outcome,
            "stream" => stream(&arena, &input, 4),
            "stream_update" => stream_update(&arena, &input, 4),
            "json_heavy" => arena.parse(&json, false).unwrap().result.outcome,
            "none" => Outcome::Success,
            other => panic!("unknown workload {other}"),
        };
        assert_eq!(out, Outcome::Success);
        return;
    }
    runtime();
    Criterion::default().configure_from_args().final_summary();
}
