//! Streaming a 64 KB tool argument in 4-byte chunks through the chat stream parser, against a
//! one-shot parse of the same output. Target: stream total <= 3x one-shot.
//!
//! Run: `cargo bench --bench chat_stream -- --quick`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chat_peg::peg_runtime::chat::{ChatParseOptions, ChatParser, ConstructedBuilder, NativeBuilder, ToolSpec};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

const SIZE: usize = 64 * 1024;
const CHUNK: usize = 4;

/// A file body of about `SIZE` bytes: code-like lines with quotes and backslashes.
fn body() -> String {
    let mut s = String::with_capacity(SIZE + 100);
    let mut i = 0;
    while s.len() < SIZE {
        s.push_str(&format!("    let x{i} = format!(\"{{}} \\\\ {{}}\", a, b); // line {i}\n"));
        i += 1;
    }
    s
}

fn native() -> (ChatParser, String) {
    let arena = NativeBuilder::build(|p| {
        let call = p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(p.json()))
                << p.tool_close("}"),
        );
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    let output = format!(
        "I will write the file.\n<tool_call>\n{}</tool_call>",
        json!({"name": "write_file", "arguments": {"path": "src/main.rs", "content": body()}})
    );
    (ChatParser::new(Arc::new(arena), ChatParseOptions::default()), output)
}

fn constructed() -> (ChatParser, String) {
    let arena = ConstructedBuilder::build(|p| {
        let arg = p.tool_arg(
            p.tool_arg_open("<parameter=" + p.tool_arg_name(p.chars("[a-z_]", 1, None)) + ">\n")
                + p.tool_arg_string_value(p.until("\n</parameter>"))
                + p.tool_arg_close("\n</parameter>\n"),
        );
        let call = p.tool(
            p.tool_open("<function=" + p.tool_name(p.chars("[a-z_]", 1, None)) + ">\n")
                + p.zero_or_more(arg)
                + p.tool_close("</function>"),
        );
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>\n" + call + "\n</tool_call>" + p.space()) + p.end()
    })
    .unwrap();
    let tool = ToolSpec::new(
        "write_file",
        json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
    );
    let output = format!(
        "I will write the file.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=content>\n{}\n</parameter>\n</function>\n</tool_call>",
        body()
    );
    (ChatParser::new(Arc::new(arena), ChatParseOptions { tools: vec![tool], ..Default::default() }), output)
}

fn chunks(s: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(s.len() / CHUNK + 1);
    let mut i = 0;
    while i < s.len() {
        let mut j = (i + CHUNK).min(s.len());
        while !s.is_char_boundary(j) {
            j += 1;
        }
        out.push(&s[i..j]);
        i = j;
    }
    out
}

/// Streams all pieces; returns the number of deltas and of parses run.
fn stream_all(parser: &ChatParser, pieces: &[&str]) -> (usize, usize) {
    let mut s = parser.stream();
    let mut n = 0;
    for p in pieces {
        n += s.push(p).unwrap().len();
    }
    n += s.finish().unwrap().0.len();
    (n, s.parse_count())
}

fn bench(c: &mut Criterion) {
    for (shape, (parser, output)) in [("native", native()), ("constructed", constructed())] {
        let pieces = chunks(&output);
        // Sanity: the stream agrees with the one-shot parse.
        let whole = parser.parse(&output, false).unwrap();
        assert!(whole.diagnostic.is_none());
        assert!(whole.message.tool_calls[0].arguments.len() > SIZE);

        // A direct ratio measurement, printed once, for the closing notes.
        let reps = 5;
        let t = Instant::now();
        for _ in 0..reps {
            black_box(parser.parse(black_box(&output), false).unwrap());
        }
        let one = t.elapsed() / reps;
        let t = Instant::now();
        let mut stats = (0, 0);
        for _ in 0..reps {
            stats = black_box(stream_all(&parser, &pieces));
        }
        let st = t.elapsed() / reps;
        println!(
            "{shape}: {} bytes, {} chunks, {} deltas, {} parses: one-shot {:?}, stream {:?}, ratio {:.2}x",
            output.len(),
            pieces.len(),
            stats.0,
            stats.1,
            one,
            st,
            st.as_secs_f64() / one.as_secs_f64()
        );

        let mut g = c.benchmark_group(format!("chat_{shape}_64k"));
        g.throughput(Throughput::Bytes(output.len() as u64));
        g.measurement_time(Duration::from_secs(3));
        g.sample_size(10);
        g.bench_function("one_shot", |b| b.iter(|| parser.parse(black_box(&output), false).unwrap()));
        g.bench_function("stream_4b_chunks", |b| b.iter(|| stream_all(&parser, black_box(&pieces))));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
