//! The `chat` target: lenient chat parsing of outputs built from the input ([`output`]) with
//! one of the [`formats`]. Invariants:
//!
//! - (a) a one-shot parse of the whole output succeeds;
//! - (b) streamed in chunks (sizes from the input), the deltas add up to the one-shot message
//!   (content, reasoning, calls with ids, names and arguments), and the stream ends with the
//!   one-shot result (message, diagnostic, recoveries);
//! - (c) a partial parse of every prefix (of a long output: of [`PREFIXES`] of them) succeeds,
//!   and each extends the previous one and is extended by the whole (`peg_runtime::chat`:
//!   partial parses are monotone);
//! - (d) every call's arguments in the final message are valid JSON; a value other than an
//!   object (the model wrote a string or a list) is reported as `arguments_outside_schema`;
//! - (e) no byte lost: every free word of the output is in the message (content, reasoning, a
//!   call's id, name or arguments), or inside a token the parser reported dropping as
//!   decoration (an `extra_wrapper` such as `<|word|>` before a call, a `code_fence`).
//!
//! A violation panics with the format, the output and the one-shot result (recoveries and
//! diagnostic included). While fuzzing, `CHAT_PEG_FUZZ_SKIP=b,d` leaves invariants out (here
//! (b) and (d)), to look past a known violation for others ([`crate::skip`]).

pub mod formats;
pub mod output;

use peg_runtime::chat::{stream_pieces, ChatMessage, ChatParser, ParseMode, ParsedMessage, RecoveryKind};

use crate::{cuts, skip};
use output::{decode, encode, Op, Output};

/// Each partial parse is a whole parse: every prefix of an output up to this many characters,
/// about this many spread over a longer one.
const PREFIXES: usize = 256;

/// Checks one input; panics on a violated invariant.
pub fn check_chat(data: &[u8]) {
    let Some(out) = decode(data, formats::formats()) else { return };
    check_output(&out);
}

/// The decoded form of an input, for reading a regression: the format, chunk sizes and output.
pub fn describe(data: &[u8]) -> String {
    match decode(data, formats::formats()) {
        Some(o) => format!("format: {}\nchunks: {:?}\nwords: {:?}\noutput: {:?}", o.format.name, o.chunks, o.words, o.text),
        None => "(too short)".into(),
    }
}

fn context(out: &Output, parsed: Option<&ParsedMessage>) -> String {
    let mut s = format!("\nformat: {}\nchunks: {:?}\noutput: {:?}", out.format.name, out.chunks, out.text);
    if let Some(p) = parsed {
        s.push_str(&format!("\none-shot: {}", serde_json::to_string(p).unwrap_or_default()));
    }
    s
}

fn check_output(out: &Output) {
    let parser: &ChatParser = &out.format.parser;
    let text = out.text.as_str();

    // (a)
    let whole = match parser.parse(text, ParseMode::Complete) {
        Ok(w) => w,
        Err(e) => panic!("(a) lenient parse failed: {e}{}", context(out, None)),
    };
    let cx = context(out, Some(&whole));

    // (b)
    let mut stream = parser.stream();
    let mut deltas = Vec::new();
    for piece in stream_pieces(text, &out.chunks) {
        match stream.push(piece) {
            Ok(d) => deltas.extend(d),
            Err(e) => panic!("(b) lenient stream failed at {piece:?}: {e}{cx}"),
        }
    }
    let (last, streamed) = stream.finish().unwrap_or_else(|e| panic!("(b) lenient stream failed at finish: {e}{cx}"));
    deltas.extend(last);
    let summed = ChatMessage::from_deltas(&deltas);
    assert!(skip("b") || summed == whole.message, "(b) the deltas add up to {}{cx}", serde_json::to_string(&summed).unwrap_or_default());
    assert!(skip("b") || streamed == whole, "(b) the stream ends with {}{cx}", serde_json::to_string(&streamed).unwrap_or_default());

    // (c)
    let all: Vec<usize> = cuts(text).collect();
    let mut prev = ChatMessage::default();
    for &cut in all.iter().step_by(all.len().div_ceil(PREFIXES + 1).max(1)) {
        let prefix = &text[..cut];
        let partial = match parser.parse(prefix, ParseMode::Partial) {
            Ok(p) => p.message,
            Err(e) => panic!("(c) partial parse of {prefix:?} failed: {e}{cx}"),
        };
        assert!(skip("c") || partial.extends(&prev), "(c) the partial parse of {prefix:?} does not extend the previous one:\n{prev:?}\n{partial:?}{cx}");
        prev = partial;
    }
    assert!(skip("c") || whole.message.extends(&prev), "(c) the one-shot message does not extend the partial ones:\n{prev:?}{cx}");

    // (d)
    for (i, call) in whole.message.tool_calls.iter().enumerate().filter(|_| !skip("d")) {
        let reported = || whole.recoveries.iter().any(|r| r.kind == RecoveryKind::ArgumentsOutsideSchema && r.detail.starts_with(&format!("call {i}:")));
        match serde_json::from_str::<serde_json::Value>(&call.arguments) {
            Ok(serde_json::Value::Object(_)) => {}
            Ok(_) if reported() => {}
            Ok(_) => panic!("(d) the arguments of call {i} are no JSON object, unreported: {:?}{cx}", call.arguments),
            Err(e) => panic!("(d) the arguments of call {i} are not valid JSON ({e}): {:?}{cx}", call.arguments),
        }
    }

    // (e)
    let m = &whole.message;
    let mut haystack = format!("{}\n{}", m.content, m.reasoning_content);
    for call in &m.tool_calls {
        haystack.push_str(&format!("\n{}\n{}\n{}", call.id, call.name, call.arguments));
    }
    let dropped = |at: usize, len: usize| {
        whole
            .recoveries
            .iter()
            .any(|r| matches!(r.kind, RecoveryKind::ExtraWrapper | RecoveryKind::CodeFence) && r.offset <= at && at + len <= r.offset + r.len)
    };
    for (word, at) in out.words.iter().filter(|_| !skip("e")) {
        assert!(haystack.contains(word.as_str()) || dropped(*at, word.len()), "(e) the word {word} is lost{cx}");
    }
}


/// A seed corpus: per format, its sample outputs whole and as pieces, with free words around
/// and inside them, and a Hermes-style JSON call where the format has its markers. Named
/// `<format index>-<kind>`.
pub fn seed_inputs() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (i, f) in formats::formats().iter().enumerate() {
        let i = i as u8;
        let piece = |p: &str| f.pieces.iter().position(|x| x == p).map(|n| Op::Piece(n as u16));
        seeds.push((format!("{i:02}-sample"), encode(i, [7, 3], &[Op::Word, Op::Punct(0), Op::Sample(0), Op::Punct(1), Op::Word])));
        if f.samples.len() > 1 {
            seeds.push((format!("{i:02}-samples"), encode(i, [13, 1], &[Op::Sample(1), Op::Word, Op::Sample(2)])));
        }
        // The first sample as pieces, with a word after each of its first words.
        let Some(sample) = f.samples.first() else { continue };
        let mut ops = Vec::new();
        let mut rest = sample.as_str();
        while !rest.is_empty() {
            let Some((n, p)) = f.pieces.iter().enumerate().filter(|(_, p)| rest.starts_with(p.as_str())).max_by_key(|(_, p)| p.len()) else { break };
            ops.push(Op::Piece(n as u16));
            if ops.len() < 12 && p.chars().all(char::is_alphanumeric) {
                ops.extend([Op::Punct(0), Op::Word]);
            }
            rest = &rest[p.len()..];
        }
        seeds.push((format!("{i:02}-pieces"), encode(i, [1, 5], &ops)));
        if let (Some(open), Some(close)) = (piece("<tool_call>"), piece("</tool_call>")) {
            seeds.push((format!("{i:02}-json-call"), encode(i, [2, 2], &[open, Op::Json(14), Op::Json(10), Op::Json(1), close, Op::Word])));
        }
    }
    seeds
}
