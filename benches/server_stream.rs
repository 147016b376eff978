//! Streaming as a server streams: a parser prepared through the front door (`Model` on the
//! shared templates; without the shared data the benchmarks are skipped with a notice), the
//! output pushed in 4-byte chunks (a token) into one reused `DeltaBuffer`, every delta read.
//! Reported per chunk: time (criterion's element throughput is chunks), allocations, and for
//! each case the peak heap the stream held above what was live before it started.
//!
//! Cases: content (Qwen3, no reasoning) and reasoning plus content at 16 KB and 512 KB (the
//! cost per chunk must not grow with the output), a 64 KB and a 512 KB string argument, nested
//! JSON arguments of 16 KB and 256 KB (Hermes 3), a short tool call (the stream's setup
//! spread over few chunks), and a 64 KB string argument in each of five other call formats
//! (Qwen3-Coder, GLM-4.6, Mistral, Kimi-K2, MiniMax-M2) and gpt-oss's reasoning and content
//! channels.
//!
//! Run: `cargo bench --bench server_stream` (add a filter, e.g. `-- content`).
//! `SERVER_STREAM_ONLY=NAME` streams one case once and exits (for `valgrind --tool=callgrind`);
//! `SERVER_STREAM_REPS=N` streams it N times (N=2 minus N=1: one warm stream, without one-time
//! costs such as compiling a tool's schema for the check of its calls).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use chat_peg::peg_runtime::chat::{ChatParser, DeltaBuffer, DeltaRef, stream_pieces};
use chat_peg::{Model, ParseMode, Request, Strictness};
use criterion::{Criterion, Throughput, criterion_group};
use serde_json::json;

#[path = "../tests/shared_data/mod.rs"]
mod shared_data;

#[path = "server_data/mod.rs"]
mod server_data;
use server_data::{format_outputs, json_args_output, prose, reasoning_output, short_call_output, string_arg_output, tools_request};

/// The system allocator, counting allocations and the bytes live (and their peak).
struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CHUNK: usize = 4;

/// Streams `pieces` through a new stream of `parser` into `out`, reading every delta as a
/// server serializing it would (here: summing its text length). Returns the bytes read.
fn stream(parser: &ChatParser, pieces: &[&str], out: &mut DeltaBuffer) -> usize {
    #[inline(always)]
    fn read(out: &DeltaBuffer) -> usize {
        out.iter()
            .map(|d| match d {
                DeltaRef::Content(t) | DeltaRef::Reasoning(t) => t.len(),
                DeltaRef::ToolCall { name, arguments, .. } => name.map_or(0, str::len) + arguments.map_or(0, str::len),
            })
            .sum()
    }
    let mut s = parser.stream();
    let mut bytes = 0;
    for p in pieces {
        s.push_into(p, out).unwrap();
        bytes += read(out);
    }
    black_box(s.finish_into(out).unwrap());
    bytes + read(out)
}

struct Case {
    name: &'static str,
    parser: ChatParser,
    output: String,
}

fn cases(shared: &shared_data::Shared) -> Vec<Case> {
    let qwen3 = Model::load(shared.template("Qwen-Qwen3-0.6B")).unwrap();
    let hermes = Model::load(shared.template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")).unwrap();
    let chat = Request::from_json(&json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
    let plain = qwen3.prepare(&chat).unwrap().parser(Strictness::Lenient);
    let tools = hermes.prepare(&tools_request()).unwrap().parser(Strictness::Lenient);
    let case = |name, parser: &ChatParser, output| Case { name, parser: parser.clone(), output };
    vec![
        case("content_16k", &plain, prose(16 * 1024)),
        case("content_512k", &plain, prose(512 * 1024)),
        case("reasoning_content_16k", &plain, reasoning_output(16 * 1024)),
        case("reasoning_content_512k", &plain, reasoning_output(512 * 1024)),
        case("string_arg_64k", &tools, string_arg_output(64 * 1024)),
        case("string_arg_512k", &tools, string_arg_output(512 * 1024)),
        case("json_args_16k", &tools, json_args_output(16 * 1024)),
        case("json_args_256k", &tools, json_args_output(256 * 1024)),
        case("short_call", &tools, short_call_output()),
    ]
    .into_iter()
    .chain(format_outputs(64 * 1024).into_iter().map(|(template, output)| {
        let model = Model::load(shared.template(template)).unwrap();
        let parser = model.prepare(&tools_request()).unwrap().parser(Strictness::Lenient);
        let name = match template {
            "Qwen3-Coder" => "qwen3_coder_string_arg_64k",
            "GLM-4.6" => "glm_string_arg_64k",
            "Mistral-Small-3.2-24B-Instruct-2506" => "mistral_string_arg_64k",
            "moonshotai-Kimi-K2" => "kimi_string_arg_64k",
            "MiniMax-M2" => "minimax_string_arg_64k",
            _ => "gpt_oss_reasoning_content_64k",
        };
        Case { name, parser, output }
    }))
    .collect()
}

fn bench(c: &mut Criterion) {
    let Some(shared) = shared_data::shared_for("benchmark groups", &["stream_4b"]) else { return };
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-') && a.parse::<f64>().is_err());
    let only = std::env::var("SERVER_STREAM_ONLY").ok();
    let mut g = c.benchmark_group("stream_4b");
    g.sample_size(10).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for Case { name, parser, output } in cases(&shared) {
        if filter.as_deref().is_some_and(|f| !format!("stream_4b/{name}").contains(f)) {
            continue;
        }
        let pieces = stream_pieces(&output, &[CHUNK]);
        let mut out = DeltaBuffer::new();
        if let Some(only) = &only {
            if *only == name {
                let reps = std::env::var("SERVER_STREAM_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
                for _ in 0..reps {
                    black_box(stream(&parser, &pieces, &mut out));
                }
            }
            continue;
        }
        // The stream says what the one-shot parse says, and the case is what it claims.
        let whole = parser.parse(&output, ParseMode::Complete).unwrap();
        assert!(whole.diagnostic.is_none() && whole.recoveries.is_empty(), "{name}: {:?} {:?}", whole.diagnostic, whole.recoveries);
        let mut s = parser.stream();
        for p in &pieces {
            s.push_into(p, &mut out).unwrap();
        }
        assert_eq!(s.finish_into(&mut out).unwrap().message, whole.message, "{name}");

        // Allocations and peak heap of one stream (after a warm-up run), then the best time.
        black_box(stream(&parser, &pieces, &mut out));
        let (allocs, base) = (ALLOCS.load(Relaxed), LIVE.load(Relaxed));
        PEAK.store(base, Relaxed);
        black_box(stream(&parser, &pieces, &mut out));
        let allocs = ALLOCS.load(Relaxed) - allocs;
        let peak = PEAK.load(Relaxed) - base;
        let t = (0..5)
            .map(|_| {
                let t = Instant::now();
                black_box(stream(&parser, black_box(&pieces), &mut out));
                t.elapsed()
            })
            .min()
            .unwrap();
        println!(
            "stream_4b/{name}: {} bytes, {} chunks: {:.0} ns/chunk (best of 5), {:.3} allocations/chunk ({allocs} in all), peak heap {} KB ({:.1}x the output)",
            output.len(),
            pieces.len(),
            t.as_nanos() as f64 / pieces.len() as f64,
            allocs as f64 / pieces.len() as f64,
            peak / 1024,
            peak as f64 / output.len() as f64,
        );
        g.throughput(Throughput::Elements(pieces.len() as u64));
        g.bench_function(name, |b| b.iter(|| stream(&parser, black_box(&pieces), &mut out)));
    }
    g.finish();
}

criterion_group!(group, bench);

fn main() {
    group();
    if std::env::var_os("SERVER_STREAM_ONLY").is_none() {
        Criterion::default().configure_from_args().final_summary();
    }
}
