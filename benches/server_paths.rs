//! What a server pays per response and per request, through the front door (`Model` on the
//! shared templates; without the shared data the benchmarks are skipped with a notice):
//!
//! * `oneshot`: a one-shot parse of a whole output (MB/s): 512 KB of reasoning and content
//!   (Qwen3), 256 KB of calls with nested JSON arguments (Hermes 3), one call whose argument is
//!   a 64 KB JSON string of code (Hermes 3), and the 91-byte call `server_stream` streams as
//!   `short_call` (its one-shot parse, in time per parse and per 4-byte piece of it: what a
//!   stream's chunks are measured against);
//! * `prepare`: `Model::prepare` for every request of the shared corpus (the template loaded and
//!   analyzed once per template); printed: the median and max time of one request, prepared
//!   again (the model's tool-set cache warm) and on a fresh model (cold). The criterion loop
//!   goes through all requests in turn, more tool sets per template than the cache keeps;
//! * `analyze`: `Model::analyze` of every shared template; printed: median and max.
//!
//! Streaming (time and allocations per chunk) is `benches/server_stream.rs`.
//!
//! Run: `cargo bench --bench server_paths` (add a filter, e.g. `-- oneshot`, to run one group).
//! `SERVER_PATHS_ONCE=NAME` parses one `oneshot` case once and exits, for instruction counts
//! under `valgrind --tool=callgrind` (`none` for the setup alone, to subtract);
//! `SERVER_PATHS_REPS=N` parses it N times (N=11 minus N=1, divided by ten: one parse, without
//! the setup's run-to-run noise).

use std::hint::black_box;
use std::time::{Duration, Instant};

use chat_peg::{Model, ParseMode, Request, Strictness};
use criterion::{Criterion, Throughput, criterion_group};
use serde_json::{Value, json};

#[path = "../tests/shared_data/mod.rs"]
mod shared_data;

#[path = "server_data/mod.rs"]
mod server_data;
use server_data::{json_args_output, reasoning_output, short_call_output, string_arg_output, tools_request};

const GROUPS: &[&str] = &["oneshot", "prepare", "analyze"];

/// The best of `reps` timings of `f`.
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

fn median_max(mut xs: Vec<Duration>) -> (Duration, Duration) {
    xs.sort();
    (xs[xs.len() / 2], *xs.last().unwrap())
}

/// Whether criterion's filter (the first free argument) selects `group`.
fn selected(group: &str) -> bool {
    match std::env::args().skip(1).find(|a| !a.starts_with('-') && a.parse::<f64>().is_err()) {
        Some(filter) => filter.starts_with(group) || group.starts_with(filter.as_str()),
        None => true,
    }
}

fn oneshot(c: &mut Criterion, shared: &shared_data::Shared) {
    let qwen3 = Model::load(shared.template("Qwen-Qwen3-0.6B")).unwrap();
    let hermes = Model::load(shared.template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")).unwrap();
    let plain = qwen3.prepare(&Request::from_json(&json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap()).unwrap();
    let tools = hermes.prepare(&tools_request()).unwrap();
    let cases = [
        ("reasoning_content_512k", plain.parser(Strictness::Lenient), reasoning_output(512 * 1024)),
        ("json_args_256k", tools.parser(Strictness::Lenient), json_args_output(256 * 1024)),
        ("string_arg_64k", tools.parser(Strictness::Lenient), string_arg_output(64 * 1024)),
        ("short_call", tools.parser(Strictness::Lenient), short_call_output()),
    ];
    if let Ok(only) = std::env::var("SERVER_PATHS_ONCE") {
        let reps = std::env::var("SERVER_PATHS_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
        for (name, parser, output) in &cases {
            if *name == only {
                for _ in 0..reps {
                    black_box(parser.parse(black_box(output), ParseMode::Complete).unwrap());
                }
            }
        }
        return;
    }
    let mut g = c.benchmark_group("oneshot");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    for (name, parser, output) in &cases {
        // The output is what the benchmark says it is: parsed cleanly, every byte placed.
        let m = parser.parse(output, ParseMode::Complete).unwrap();
        assert!(m.diagnostic.is_none() && m.recoveries.is_empty(), "{name}: {:?} {:?}", m.diagnostic, m.recoveries);
        let placed = m.message.content.len() + m.message.reasoning_content.len() + m.message.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        if *name == "short_call" {
            // Mostly markup: the call is what must come out.
            assert!(m.message.tool_calls.len() == 1 && m.message.tool_calls[0].name == "get_weather", "{name}: {:?}", m.message);
        } else {
            assert!(placed > output.len() * 9 / 10, "{name}: {placed} of {} bytes placed", output.len());
        }
        let t = best(5, || parser.parse(black_box(output), ParseMode::Complete).unwrap());
        println!(
            "oneshot/{name}: {} bytes, {:.0} MB/s, {:.2} µs per parse, {:.0} ns per 4 bytes (best of 5)",
            output.len(),
            output.len() as f64 / t.as_secs_f64() / 1e6,
            t.as_secs_f64() * 1e6,
            t.as_nanos() as f64 * 4.0 / output.len() as f64
        );
        g.throughput(Throughput::Bytes(output.len() as u64));
        g.bench_function(*name, |b| b.iter(|| parser.parse(black_box(output), ParseMode::Complete).unwrap()));
    }
    g.finish();
}

/// Every request of the shared corpus naming a shared template, with its template's model.
fn corpus_requests(shared: &shared_data::Shared) -> Vec<(Model, Vec<Request>)> {
    let text = std::fs::read_to_string(shared.corpus().join("chat-cases.jsonl")).unwrap();
    let mut by_template: std::collections::BTreeMap<String, Vec<Request>> = Default::default();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let (Some(name), Some(kind)) = (case["template"].as_str(), case["kind"].as_str()) else { continue };
        if kind == "capability" {
            continue;
        }
        if let Ok(req) = Request::from_json(&case["inputs"]) {
            by_template.entry(name.to_owned()).or_default().push(req);
        }
    }
    by_template.into_iter().filter_map(|(name, reqs)| Some((Model::load(shared.template(&name)).ok()?, reqs))).collect()
}

fn prepare(c: &mut Criterion, shared: &shared_data::Shared) {
    let models = corpus_requests(shared);
    let count: usize = models.iter().map(|(_, r)| r.len()).sum();
    let prepare_all = || models.iter().flat_map(|(m, reqs)| reqs.iter().map(move |r| m.prepare(black_box(r)).is_ok() as usize)).sum::<usize>();
    let ok = prepare_all();
    // Per request: the best of 3 (the first run above warmed up whatever a model keeps).
    let times: Vec<Duration> = models.iter().flat_map(|(m, reqs)| reqs.iter().map(move |r| best(3, || m.prepare(r).is_ok()))).collect();
    let (median, max) = median_max(times);
    // The same without the model's cache of tool sets: a fresh model per request.
    let fresh = |m: &Model| Model::from_analysis(m.template().clone(), m.analysis().clone());
    let cold: Vec<Duration> = models
        .iter()
        .flat_map(|(m, reqs)| {
            reqs.iter().map(move |r| {
                (0..3)
                    .map(|_| {
                        let m = fresh(m);
                        let t = Instant::now();
                        black_box(m.prepare(r).is_ok());
                        t.elapsed()
                    })
                    .min()
                    .unwrap()
            })
        })
        .collect();
    let (cold_median, cold_max) = median_max(cold);
    println!(
        "prepare: {count} corpus requests on {} templates ({ok} prepared): median {median:?}, max {max:?} per request; \
         without the tool-set cache: median {cold_median:?}, max {cold_max:?}",
        models.len()
    );
    let mut g = c.benchmark_group("prepare");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(count as u64));
    g.bench_function(format!("corpus_{count}_requests"), |b| b.iter(prepare_all));
    g.finish();
}

fn analyze(c: &mut Criterion, shared: &shared_data::Shared) {
    let mut paths: Vec<_> = std::fs::read_dir(shared.templates()).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.retain(|p| p.extension().is_some_and(|x| x == "jinja"));
    paths.sort();
    let templates: Vec<_> = paths.iter().map(|p| chat_peg::autoparser::template::ChatTemplate::load(p).unwrap()).collect();
    let times: Vec<Duration> = templates.iter().map(|t| best(3, || Model::analyze(t.clone()).is_ok())).collect();
    let slowest = paths[times.iter().enumerate().max_by_key(|(_, t)| **t).unwrap().0].file_stem().unwrap().to_string_lossy().into_owned();
    let (median, max) = median_max(times);
    println!("analyze: {} templates: median {median:?}, max {max:?} ({slowest})", templates.len());
    let mut g = c.benchmark_group("analyze");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(templates.len() as u64));
    g.bench_function(format!("{}_templates", templates.len()), |b| {
        b.iter(|| templates.iter().map(|t| Model::analyze(black_box(t.clone())).is_ok() as usize).sum::<usize>())
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let Some(shared) = shared_data::shared_for("benchmark groups", GROUPS) else { return };
    if selected("oneshot") {
        oneshot(c, &shared);
    }
    if selected("prepare") {
        prepare(c, &shared);
    }
    if selected("analyze") {
        analyze(c, &shared);
    }
}

criterion_group!(group, benches);

fn main() {
    if std::env::var_os("SERVER_PATHS_ONCE").is_some() {
        let shared = shared_data::shared_for("benchmark groups", GROUPS).expect("the shared data");
        oneshot(&mut Criterion::default(), &shared);
        return;
    }
    group();
    Criterion::default().configure_from_args().final_summary();
}
