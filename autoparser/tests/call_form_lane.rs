//! The structural lane against the parser, over every template whose analysis learns a call
//! form: output written in the form (one call, two, nested and escaped arguments, arguments
//! outside the schema, an unknown tool), the same output deviating (text around it, Python
//! words, cut off anywhere), each streamed in several chunkings with the lane handing over
//! after every possible chunk, must give the one-shot parse: the same message, diagnostic and
//! recoveries, and deltas that add up to it.

use std::path::{Path, PathBuf};

use autoparser::Model;
use autoparser::Request;
use peg_runtime::chat::{CallForm, ChatMessage, ChatParser, DeltaBuffer, ParseMode, ParsedMessage, Strictness, stream_pieces};
use serde_json::{Value, json};

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

const CORPUS_TESTS: &[&str] = &["streams_in_the_call_form_equal_the_parse (the shared templates)"];

fn jinja_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jinja")).collect();
    v.sort();
    v
}

fn request() -> Request {
    let tool = |name: &str, params: Value| json!({"type": "function", "function": {"name": name, "description": "A tool.", "parameters": params}});
    Request::from_json(&json!({
        "messages": [{"role": "user", "content": "Please help."}],
        "tools": [
            tool("get_weather", json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]})),
            tool("get_time", json!({"type": "object", "properties": {"zone": {"type": "string"}}})),
            tool("write_file", json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "meta": {"type": "object"}}, "required": ["path"]})),
        ],
        "parallel_tool_calls": true,
    }))
    .unwrap()
}

/// Calls written in `form`.
fn written(form: &CallForm, calls: &[(&str, String)]) -> String {
    let mut out = form.open.clone();
    for (i, (name, args)) in calls.iter().enumerate() {
        if i > 0 {
            out.push_str(form.between.as_deref().unwrap_or(&form.close));
        }
        out.push_str(name);
        out.push_str(&form.name_end);
        out.push_str(args);
    }
    out.push_str(&form.close);
    out
}

/// Outputs in the form, each with whether the lane reads it to its end (`None`: either).
fn outputs(form: &CallForm) -> Vec<(String, Option<bool>)> {
    let weather = r#"{"city": "Paris", "days": 3}"#.to_owned();
    let file = serde_json::to_string(
        &json!({"path": "a\"b\\c", "content": "line\nnext\té 😀 </tool_call> \u{1}", "meta": {"tags": ["x", 1.5e3, -0, true, null], "n": {}}}),
    )
    .unwrap();
    let spaced = "{ \"zone\" :\n \"CET\" }".to_owned();
    let mut v = vec![
        (written(form, &[("get_weather", weather.clone())]), Some(true)),
        (written(form, &[("write_file", file.clone())]), Some(true)),
        (written(form, &[("get_time", spaced)]), Some(true)),
        (format!("{}\n", written(form, &[("get_weather", weather.clone())])), None),
        // Arguments outside the schema, and an unknown tool: the parser reports them.
        (written(form, &[("get_weather", r#"{"city": 5}"#.to_owned())]), Some(true)),
        (written(form, &[("unknown_tool", weather.clone())]), Some(false)),
        (written(form, &[("get_weather", r#"{"city": "Paris", "days": None}"#.to_owned())]), Some(false)),
        (written(form, &[("get_weather", r#"{"city": "Paris",}"#.to_owned())]), Some(false)),
        (format!("Sure. {}", written(form, &[("get_weather", weather.clone())])), Some(false)),
        (format!("{} Done.", written(form, &[("get_weather", weather.clone())])), Some(false)),
        (format!("{}{{\"city\": \"Rome\"}}", written(form, &[("get_weather", weather.clone())])), Some(false)),
    ];
    if form.between.is_some() {
        v.push((written(form, &[("get_weather", weather.clone()), ("get_time", r#"{"zone": "CET"}"#.to_owned()), ("write_file", file)]), Some(true)));
        // The parser reports the first call's arguments, which the lane leaves to it.
        v.push((written(form, &[("get_weather", r#"{"city": 5}"#.to_owned()), ("get_time", r#"{"zone": "CET"}"#.to_owned())]), Some(false)));
    }
    v
}

/// The stream of `output` in `chunk`-byte pieces, the lane handing over after `lane_chunks`:
/// what the deltas add up to, the final parse, and whether the lane read to the end.
fn streamed(parser: &ChatParser, output: &str, chunk: usize, lane_chunks: usize) -> (ChatMessage, ParsedMessage, bool) {
    let mut s = parser.stream();
    s.hand_over_after(lane_chunks);
    let mut out = DeltaBuffer::new();
    let mut deltas = Vec::new();
    for piece in stream_pieces(output, &[chunk]) {
        s.push_into(piece, &mut out).unwrap();
        deltas.extend(out.to_deltas());
    }
    let in_lane = s.in_lane();
    let fin = s.finish_into(&mut out).unwrap();
    deltas.extend(out.to_deltas());
    (ChatMessage::from_deltas(&deltas), fin, in_lane)
}

#[test]
fn streams_in_the_call_form_equal_the_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut templates: Vec<PathBuf> = ["templates", "recovery", "fixtures", "probes"].iter().flat_map(|d| jinja_files(&root.join(d))).collect();
    let shared = shared_data::shared(CORPUS_TESTS);
    if let Some(shared) = &shared {
        templates.extend(jinja_files(&shared.templates()));
    }
    let req = request();
    let (mut with_form, mut wrong) = (Vec::new(), Vec::new());
    for path in &templates {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Ok(model) = Model::load(path) else { continue };
        let Ok(prepared) = model.prepare(&req) else { continue };
        let Some(form) = prepared.call_form.clone() else { continue };
        with_form.push(name.clone());
        let parser = prepared.parser(Strictness::Lenient);
        for (output, lane_reads) in outputs(&form) {
            let one = parser.parse(&output, ParseMode::Complete).unwrap();
            let mut check = |what: String, (summed, fin, in_lane): (ChatMessage, ParsedMessage, bool), lane_expected: Option<bool>| {
                if fin != one || summed != one.message || lane_expected.is_some_and(|e| e != in_lane) {
                    wrong.push(format!("{name}: {output:?} {what}: deltas {summed:?}, final {fin:?}, one-shot {one:?}, in the lane at the end: {in_lane}"));
                }
            };
            for chunk in [1, 3, 4, 7, output.len()] {
                let n = stream_pieces(&output, &[chunk]).len();
                // (In 1-byte chunks, every third point: the others are those of longer chunks.)
                for k in (0..=n).filter(|&k| chunk > 1 || k % 3 == 0 || k == n) {
                    let expected = lane_reads.filter(|_| k == n);
                    check(format!("in {chunk}-byte chunks, handing over after {k}"), streamed(&parser, &output, chunk, k), expected);
                }
            }
            // Strict: the stream fails where the parse does, or ends as it does.
            let strict = prepared.parser(Strictness::Strict);
            let strict_one = strict.parse(&output, ParseMode::Complete).ok();
            let mut s = strict.stream();
            let pushed = stream_pieces(&output, &[4]).into_iter().try_for_each(|p| s.push(p).map(|_| ()));
            let strict_streamed = pushed.and_then(|()| s.finish()).ok().map(|(_, parsed)| parsed);
            if strict_streamed != strict_one {
                wrong.push(format!("{name}: {output:?} strict: streamed {strict_streamed:?}, one-shot {strict_one:?}"));
            }
            // Cut off anywhere: a stream that stops there ends as the parse of what it read.
            for end in (1..output.len()).filter(|&e| output.is_char_boundary(e)) {
                let cut = &output[..end];
                let one_cut = parser.parse(cut, ParseMode::Complete).unwrap();
                let (summed, fin, _) = streamed(&parser, cut, 3, usize::MAX);
                if fin != one_cut || summed != one_cut.message {
                    wrong.push(format!("{name}: {cut:?} cut off: deltas {summed:?}, final {fin:?}, one-shot {one_cut:?}"));
                }
            }
        }
        // Arguments long enough for the lane to leave them to the parser's path.
        let long = serde_json::to_string(&json!({"path": "p", "content": "x\"y\\z é\n".repeat(150)})).unwrap();
        let output = written(&form, &[("write_file", long)]);
        let one = parser.parse(&output, ParseMode::Complete).unwrap();
        let n = stream_pieces(&output, &[4]).len();
        for k in (0..=n).step_by(37).chain([n]) {
            let (summed, fin, in_lane) = streamed(&parser, &output, 4, k);
            if fin != one || summed != one.message || in_lane {
                wrong.push(format!("{name}: long arguments in 4-byte chunks, handing over after {k}: in the lane at the end: {in_lane}"));
            }
        }
    }
    println!("{} templates with a call form: {}", with_form.len(), with_form.join(", "));
    assert!(shared.is_none() || with_form.iter().any(|n| n == "NousResearch-Hermes-3-Llama-3.1-8B-tool_use"));
    assert!(!with_form.is_empty());
    let shown: Vec<String> = wrong.iter().take(12).map(|w| w.chars().take(1200).collect()).collect();
    assert!(wrong.is_empty(), "{} mismatches:\n{}", wrong.len(), shown.join("\n"));
}
