//! How a parsed message is judged against a corpus expectation, and the streaming rule.

use peg_runtime::chat::{ChatDelta, ChatMessage, ChatParser};
use serde_json::Value;

use crate::error::{Error, ErrorKind};

/// Arguments as the corpus compares them: a JSON value, or `None` ("empty") when the text is
/// not (yet) valid JSON.
pub fn arguments_value(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// Compares `got` with `want` as the corpus README says: content and reasoning after trimming
/// surrounding whitespace; per tool call the name, the id (an empty expected id matches any)
/// and the arguments as JSON values (text that is not valid JSON compares as empty, which only
/// a partial output can legitimately leave).
///
/// ```
/// use autoparser::verify::compare_messages;
/// use peg_runtime::chat::ChatMessage;
/// let want: ChatMessage = serde_json::from_value(serde_json::json!({
///     "content": "Hi", "tool_calls": [{"name": "f", "arguments": "{\"a\": 1}", "id": ""}]})).unwrap();
/// let got: ChatMessage = serde_json::from_value(serde_json::json!({
///     "content": " Hi\n", "tool_calls": [{"name": "f", "arguments": "{\"a\":1}", "id": "call_0"}]})).unwrap();
/// assert!(compare_messages(&got, &want).is_ok());
/// ```
pub fn compare_messages(got: &ChatMessage, want: &ChatMessage) -> Result<(), Error> {
    let mut diffs = Vec::new();
    if got.content.trim() != want.content.trim() {
        diffs.push(format!("content {:?}, expected {:?}", got.content.trim(), want.content.trim()));
    }
    if got.reasoning_content.trim() != want.reasoning_content.trim() {
        diffs.push(format!("reasoning {:?}, expected {:?}", got.reasoning_content.trim(), want.reasoning_content.trim()));
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        let names = |m: &ChatMessage| m.tool_calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        diffs.push(format!("{} tool calls {:?}, expected {} {:?}", got.tool_calls.len(), names(got), want.tool_calls.len(), names(want)));
    } else {
        for (i, (g, w)) in got.tool_calls.iter().zip(&want.tool_calls).enumerate() {
            if g.name != w.name {
                diffs.push(format!("call {i} name {:?}, expected {:?}", g.name, w.name));
            }
            if !w.id.is_empty() && g.id != w.id {
                diffs.push(format!("call {i} id {:?}, expected {:?}", g.id, w.id));
            }
            if arguments_value(&g.arguments) != arguments_value(&w.arguments) {
                diffs.push(format!("call {i} arguments {:?}, expected {:?}", g.arguments, w.arguments));
            }
        }
    }
    if diffs.is_empty() { Ok(()) } else { Err(Error::new(ErrorKind::Mismatch, diffs.join("; "))) }
}

/// Feeds `output` to a stream in chunks of `chunk` bytes: no push may fail, and the deltas
/// must add up to the stream's final message (for a complete output; a partial one is never
/// finished). Returns the message the deltas add up to.
///
/// ```
/// use autoparser::verify::stream_message;
/// use peg_runtime::chat::{ChatParser, ParseMode, SimpleBuilder};
/// let arena = SimpleBuilder::build(|p| "<think>" + p.reasoning(p.until("</think>")) + "</think>" + p.content(p.rest())).unwrap();
/// let parser = ChatParser::new(arena.into(), Default::default());
/// let output = "<think>Hm.</think>Hello!";
/// let streamed = stream_message(&parser, output, false, 3).unwrap(); // 3-byte chunks
/// assert_eq!(streamed, parser.parse(output, ParseMode::Complete).unwrap().message);
/// ```
pub fn stream_message(parser: &ChatParser, output: &str, partial: bool, chunk: usize) -> Result<ChatMessage, Error> {
    let mut stream = parser.stream();
    let mut deltas: Vec<ChatDelta> = Vec::new();
    let mut at = 0;
    for c in peg_runtime::chat::stream_pieces(output, &[chunk]) {
        let d = stream.push(c).map_err(|e| Error::new(ErrorKind::Mismatch, format!("push failed at byte {at}: {e}")).with_source(e))?;
        deltas.extend(d);
        at += c.len();
    }
    let summed = if partial {
        ChatMessage::from_deltas(&deltas)
    } else {
        let (last, fin) = stream.finish().map_err(|e| Error::new(ErrorKind::Mismatch, format!("finish failed: {e}")).with_source(e))?;
        deltas.extend(last);
        let summed = ChatMessage::from_deltas(&deltas);
        if summed != fin.message {
            return Err(Error::new(ErrorKind::Mismatch, format!("deltas add up to {summed:?}, the stream's final message is {:?}", fin.message)));
        }
        summed
    };
    Ok(summed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_arguments_compare_as_empty() {
        let m = |args: &str| {
            let mut m = ChatMessage::default();
            m.tool_calls.push(peg_runtime::chat::ChatToolCall { id: String::new(), name: "f".into(), arguments: args.into() });
            m
        };
        assert!(compare_messages(&m("{\"a\": "), &m("")).is_ok());
        assert!(compare_messages(&m("{\"a\": 1}"), &m("")).is_err());
        assert!(compare_messages(&m("{\"a\": 1}"), &m("{ \"a\" : 1 }")).is_ok());
    }
}
