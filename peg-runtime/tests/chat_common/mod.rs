//! Helpers shared by the chat integration tests.
#![allow(dead_code)]

use peg_runtime::chat::{ChatDelta, ChatMessage, ChatParser, ParsedMessage, stream_pieces};

/// Streams `pieces`, returning all deltas and the final result.
pub fn stream(parser: &ChatParser, pieces: &[&str]) -> (Vec<ChatDelta>, ParsedMessage) {
    let mut s = parser.stream();
    let mut deltas = Vec::new();
    for p in pieces {
        deltas.extend(s.push(p).expect("a lenient stream never fails"));
    }
    let (last, fin) = s.finish().expect("a lenient stream never fails");
    deltas.extend(last);
    (deltas, fin)
}

/// Checks the streaming contract on `output`: for several chunkings the deltas add up to the
/// one-shot message and `finish` returns the one-shot result; partial parses of its prefixes
/// grow monotonically and end in the one-shot message. Returns the one-shot result.
pub fn check_streaming(parser: &ChatParser, output: &str) -> ParsedMessage {
    let whole = parser.parse(output, peg_runtime::chat::ParseMode::Complete).expect("lenient parse");
    let mut sizes: Vec<usize> = (1..=8).collect();
    sizes.extend([13, 64, output.len().max(1)]);
    for n in sizes {
        let pieces = stream_pieces(output, &[n]);
        let (deltas, fin) = stream(parser, &pieces);
        assert_eq!(ChatMessage::from_deltas(&deltas), whole.message, "deltas, chunk size {n}, output {output:?}");
        assert_eq!(fin, whole, "finish, chunk size {n}, output {output:?}");
    }
    let mut prev = ChatMessage::default();
    for (i, _) in output.char_indices().skip(1).chain([(output.len(), ' ')]) {
        let cur = parser.parse(&output[..i], peg_runtime::chat::ParseMode::Partial).expect("lenient parse").message;
        assert!(cur.extends(&prev), "not monotone at {i} of {output:?}:\n{prev:?}\n{cur:?}");
        prev = cur;
    }
    assert!(whole.message.extends(&prev), "final message does not extend the partial ones: {output:?}");
    whole
}

/// Checks the streaming contract (chat_common) and, for every prefix, that a partial parse
/// reports only recoveries the whole output reports too (none is retracted), and that a
/// stream knows no more than that while it runs. Returns the one-shot result.
pub fn check_recoveries(parser: &ChatParser, output: &str) -> peg_runtime::chat::ParsedMessage {
    let whole = check_streaming(parser, output);
    for (i, _) in output.char_indices().skip(1) {
        let partial = parser.parse(&output[..i], peg_runtime::chat::ParseMode::Partial).unwrap();
        for r in &partial.recoveries {
            assert!(whole.recoveries.contains(r), "{r:?} of the prefix {:?} is not in {:?}", &output[..i], whole.recoveries);
        }
    }
    for n in [1, 3, 7] {
        let mut s = parser.stream();
        for piece in stream_pieces(output, &[n]) {
            s.push(piece).unwrap();
            assert!(s.recoveries().iter().all(|r| whole.recoveries.contains(r)), "chunks of {n}: {:?}", s.recoveries());
        }
        let (_, fin) = s.finish().unwrap();
        assert_eq!(s.recoveries(), fin.recoveries);
    }
    whole
}

/// A tool of the recovery tests: `get_weather(location: string, days?: integer)`.
pub fn weather() -> peg_runtime::chat::ToolSpec {
    peg_runtime::chat::ToolSpec::new(
        "get_weather",
        serde_json::json!({
            "type": "object",
            "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["location"]
        }),
    )
}
