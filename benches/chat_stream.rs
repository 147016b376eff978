//! Streaming a 64 KB tool argument in 4-byte chunks through the chat stream parser, against a
//! one-shot parse of the same output. Target: stream total <= 3x one-shot.
//!
//! Two stream forms: `push` returns owned deltas (a `Vec<ChatDelta>` per chunk); `push_into`
//! refills one reused `DeltaBuffer`, the realistic server loop (each delta is serialized to SSE
//! right away). `push_into` is timed alone (the parser's time, as the one-shot parse's message
//! is not read either) and with every delta read back. The printed ratios are the best of
//! several runs, to damp the machine's load.
//!
//! Run: `cargo bench --bench chat_stream -- --quick`
//!
//! Most chunks of a long argument take the stream's live lane (no parse, no fold: the chunk,
//! escaped, is the delta); only chunks that may start a delimiter, or that leave the text, run
//! a parse. The printed line shows how many parses a stream ran.
//!
//! Instruction counts (robust to load): `CHAT_STREAM_ONLY=MODE` runs one pass of one mode and
//! exits, MODE in `none` (setup only), `one_shot`, `owned`, `buffer`, `buffer_read`; e.g.
//! `CHAT_STREAM_ONLY=buffer valgrind --tool=callgrind target/release/deps/chat_stream-HASH`,
//! and subtract the `none` count. `CHAT_STREAM_SHAPE=native|constructed` keeps one input.
//! `CHAT_STREAM_REPS=N` runs the mode N times: the count of N=2 minus that of N=1 is one warm
//! run, without the first run's one-time costs (allocations that later runs reuse, lazily
//! built tables).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chat_peg::formats::{hermes, qwen3_coder};
use chat_peg::peg_runtime::chat::{ChatParseOptions, ChatParser, DeltaBuffer, DeltaRef, ToolSpec, stream_pieces};
use criterion::{Criterion, Throughput, criterion_group};
use peg_runtime::chat::ParseMode;
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

fn write_file() -> ToolSpec {
    ToolSpec::new("write_file", json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}))
}

fn native() -> (ChatParser, String) {
    // Calls are checked against no tools, as a server that does not validate them.
    let arena = hermes::arena(&[write_file()]).unwrap();
    let output =
        format!("I will write the file.\n<tool_call>\n{}</tool_call>", json!({"name": "write_file", "arguments": {"path": "src/main.rs", "content": body()}}));
    (ChatParser::new(Arc::new(arena), ChatParseOptions::default()), output)
}

fn constructed() -> (ChatParser, String) {
    let tool = write_file();
    let arena = qwen3_coder::arena(std::slice::from_ref(&tool)).unwrap();
    let output = format!(
        "I will write the file.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=content>\n{}\n</parameter>\n</function>\n</tool_call>",
        body()
    );
    (ChatParser::new(Arc::new(arena), ChatParseOptions { tools: vec![tool], ..Default::default() }), output)
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

/// The server loop: one reused buffer, each delta's text looked at once (here: its length).
/// Returns the number of deltas and of text bytes.
/// `push_into` over every piece. With `read`, every delta is also read back (as a server
/// serializing it would); without, only their count is taken, so the time is the parser's alone,
/// as in the one-shot measurement.
fn stream_buffer(parser: &ChatParser, pieces: &[&str], out: &mut DeltaBuffer, read: bool) -> (usize, usize) {
    let mut s = parser.stream();
    let (mut n, mut bytes) = (0, 0);
    // Inlined, so that without `read` the loop costs the harness next to nothing.
    #[inline(always)]
    fn look(out: &DeltaBuffer, read: bool, n: &mut usize, bytes: &mut usize) {
        if !read {
            *n += black_box(out.len());
            return;
        }
        for d in out.iter() {
            *n += 1;
            *bytes += match d {
                DeltaRef::Content(t) | DeltaRef::Reasoning(t) => t.len(),
                DeltaRef::ToolCall { arguments, .. } => arguments.map_or(0, str::len),
            };
        }
    }
    for p in pieces {
        s.push_into(p, out).unwrap();
        look(out, read, &mut n, &mut bytes);
    }
    s.finish_into(out).unwrap();
    look(out, read, &mut n, &mut bytes);
    (n, bytes)
}

/// Best of `reps` timings of `f`.
fn best<T>(reps: u32, mut f: impl FnMut() -> T) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let only = std::env::var("CHAT_STREAM_ONLY").ok();
    let reps: usize = std::env::var("CHAT_STREAM_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    for (shape, (parser, output)) in [("native", native()), ("constructed", constructed())] {
        let pieces = stream_pieces(&output, &[CHUNK]);
        if std::env::var("CHAT_STREAM_SHAPE").is_ok_and(|s| s != shape) {
            continue;
        }
        if let Some(mode) = only.as_deref() {
            let mut buf = DeltaBuffer::new();
            for _ in 0..reps {
                match mode {
                    "one_shot" => drop(black_box(parser.parse(black_box(&output), ParseMode::Complete).unwrap())),
                    "owned" => drop(black_box(stream_all(&parser, black_box(&pieces)))),
                    "buffer" => drop(black_box(stream_buffer(&parser, black_box(&pieces), &mut buf, false))),
                    "buffer_read" => drop(black_box(stream_buffer(&parser, black_box(&pieces), &mut buf, true))),
                    _ => {}
                }
            }
            continue;
        }
        // Sanity: the stream agrees with the one-shot parse.
        let whole = parser.parse(&output, ParseMode::Complete).unwrap();
        assert!(whole.diagnostic.is_none());
        assert!(whole.message.tool_calls[0].arguments.len() > SIZE);

        // Both stream forms agree with each other.
        let mut buf = DeltaBuffer::new();
        let owned = stream_all(&parser, &pieces);
        let buffered = stream_buffer(&parser, &pieces, &mut buf, true);
        assert_eq!(owned.0, buffered.0);

        // A direct ratio measurement, printed once, for the closing notes.
        let reps = 7;
        let one = best(reps, || parser.parse(black_box(&output), ParseMode::Complete).unwrap());
        let own = best(reps, || stream_all(&parser, black_box(&pieces)));
        let bufd = best(reps, || stream_buffer(&parser, black_box(&pieces), &mut buf, false));
        let read = best(reps, || stream_buffer(&parser, black_box(&pieces), &mut buf, true));
        println!(
            "{shape}: {} bytes, {} chunks, {} deltas, {} parses: one-shot {one:?}, push (owned) {own:?} = {:.2}x, \
             push_into (reused buffer) {bufd:?} = {:.2}x, push_into and reading every delta {read:?} = {:.2}x",
            output.len(),
            pieces.len(),
            owned.0,
            owned.1,
            own.as_secs_f64() / one.as_secs_f64(),
            bufd.as_secs_f64() / one.as_secs_f64(),
            read.as_secs_f64() / one.as_secs_f64(),
        );

        let mut g = c.benchmark_group(format!("chat_{shape}_64k"));
        g.throughput(Throughput::Bytes(output.len() as u64));
        g.measurement_time(Duration::from_secs(3));
        g.sample_size(10);
        g.bench_function("one_shot", |b| b.iter(|| parser.parse(black_box(&output), ParseMode::Complete).unwrap()));
        g.bench_function("stream_4b_chunks", |b| b.iter(|| stream_all(&parser, black_box(&pieces))));
        g.bench_function("stream_4b_chunks_reused_buffer", |b| b.iter(|| stream_buffer(&parser, black_box(&pieces), &mut buf, false)));
        g.bench_function("stream_4b_chunks_reused_buffer_read", |b| b.iter(|| stream_buffer(&parser, black_box(&pieces), &mut buf, true)));
        g.finish();
    }
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("CHAT_STREAM_ONLY").is_some() {
        bench(&mut Criterion::default());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
