//! Streaming: feed output chunk by chunk, get deltas as soon as text is certain.

use std::sync::Arc;

use crate::chat::mapper::{Driver, Sink};
use crate::chat::message::{ChatDelta, ChatMessage, DeltaBuffer, DeltaRef};
use crate::chat::parser::{fold_parse, Diagnostic, Inner, ParsedMessage};
use crate::chat::predict::{string_growth, until_extends_with, Growth};
use crate::error::{Error, ErrorKind};
use crate::session::Session;

#[derive(Debug)]
enum State {
    /// Following the grammar.
    Parsing,
    /// The grammar stopped matching: everything from here on is content.
    Fallback,
    /// Strict mode hit an error; every later call returns it.
    Failed(Error),
    /// `finish` was called.
    Finished,
}

/// A streaming parse made by [`ChatParser::stream`](crate::chat::ChatParser::stream).
///
/// Each [`push`](ChatStream::push) re-parses incrementally with the runtime's [`Session`] and
/// folds only what is new: text already emitted is never retracted, a suffix that could still
/// be the start of a marker is held back, tool argument text streams as it arrives. All deltas
/// of a stream add up to the one-shot [`parse`](crate::chat::ChatParser::parse) of the whole
/// output.
#[derive(Debug)]
pub struct ChatStream {
    inner: Arc<Inner>,
    session: Session,
    driver: Driver,
    message: ChatMessage,
    state: State,
    /// Input length of the last parse that fit the grammar.
    viable: usize,
    diagnostic: Option<Diagnostic>,
    parses: usize,
    /// Tail plus chunk, when the last parse left an unread tail.
    scratch: String,
    /// The buffer behind the owned [`push`](ChatStream::push).
    owned: DeltaBuffer,
}

impl ChatStream {
    pub(crate) fn new(inner: Arc<Inner>) -> ChatStream {
        let mut session = Session::new(inner.arena.clone());
        session.push(inner.options.prefill.as_bytes());
        ChatStream {
            inner,
            session,
            driver: Driver::default(),
            message: ChatMessage::default(),
            state: State::Parsing,
            viable: 0,
            diagnostic: None,
            parses: 0,
            scratch: String::new(),
            owned: DeltaBuffer::new(),
        }
    }

    /// How many parses the stream has run. Chunks known to only extend the text the input
    /// ends in (no delimiter, quote or escape in them) are folded without one.
    pub fn parse_count(&self) -> usize {
        self.parses
    }

    /// The message the deltas so far add up to.
    pub fn message(&self) -> &ChatMessage {
        &self.message
    }

    /// Feeds the next chunk of model output; returns the deltas it made certain (often none).
    /// Lenient streams never fail here; strict ones return the parse error.
    ///
    /// A convenience over [`push_into`](ChatStream::push_into), which spares the allocations
    /// of the returned deltas.
    pub fn push(&mut self, chunk: &str) -> Result<Vec<ChatDelta>, Error> {
        let mut buf = std::mem::take(&mut self.owned);
        let r = self.push_into(chunk, &mut buf).map(|()| buf.to_deltas());
        self.owned = buf;
        r
    }

    /// Feeds the next chunk of model output and replaces the contents of `out` with the deltas
    /// it made certain (often none): the same deltas as [`push`](ChatStream::push) returns.
    /// Reusing one `out` across pushes, a stream allocates nothing per chunk in steady state.
    /// Lenient streams never fail here; strict ones return the parse error (`out` is then
    /// empty).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, DeltaBuffer, DeltaRef, SimpleBuilder};
    /// let arena = SimpleBuilder::build(|p| p.content(p.until("<end>")) + "<end>").unwrap();
    /// let mut stream = ChatParser::new(Arc::new(arena), ChatParseOptions::default()).stream();
    /// let mut out = DeltaBuffer::new();
    /// stream.push_into("Hello", &mut out).unwrap();
    /// assert_eq!(out.iter().collect::<Vec<_>>(), [DeltaRef::Content("Hello")]);
    /// stream.push_into(" world<e", &mut out).unwrap(); // `<e` may start `<end>`: held back
    /// assert_eq!(out.iter().collect::<Vec<_>>(), [DeltaRef::Content(" world")]);
    /// ```
    pub fn push_into(&mut self, chunk: &str, out: &mut DeltaBuffer) -> Result<(), Error> {
        out.clear();
        self.check_open()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match self.state {
            State::Parsing => {
                if !self.grow(chunk, out) {
                    self.session.push(chunk.as_bytes());
                    self.parses += 1;
                    let parsed = self.session.parse();
                    if let Err(e) = self.step(parsed, true, out) {
                        out.clear();
                        return Err(e);
                    }
                    self.record(out);
                }
            }
            _ => {
                self.session.push(chunk.as_bytes());
                let mut rec = Recorder { out, message: &mut self.message };
                self.driver.fold.extra_content(chunk, &mut rec);
            }
        }
        Ok(())
    }

    /// Ends the stream: the final deltas and the whole message (equal to a one-shot parse).
    pub fn finish(&mut self) -> Result<(Vec<ChatDelta>, ParsedMessage), Error> {
        let mut buf = std::mem::take(&mut self.owned);
        let r = self.finish_into(&mut buf).map(|m| (buf.to_deltas(), m));
        self.owned = buf;
        r
    }

    /// [`finish`](ChatStream::finish) writing the final deltas into `out` (replacing its
    /// contents); returns the whole message.
    pub fn finish_into(&mut self, out: &mut DeltaBuffer) -> Result<ParsedMessage, Error> {
        out.clear();
        self.check_open()?;
        if let State::Parsing = self.state {
            self.parses += 1;
            let parsed = self.session.finish();
            if let Err(e) = self.step(parsed, false, out) {
                out.clear();
                return Err(e);
            }
        }
        self.driver.fold.finish(&self.inner.cx, out);
        self.state = State::Finished;
        self.record(out);
        Ok(ParsedMessage { message: self.message.clone(), diagnostic: self.diagnostic.clone() })
    }

    /// The fast path: if the text node the input ends in is known to take `chunk` (after the
    /// unread tail a parse left out, such as a possible delimiter start), pushes the chunk
    /// and folds the growth without a parse. `false` (nothing done) if a parse is needed.
    fn grow(&mut self, chunk: &str, out: &mut DeltaBuffer) -> bool {
        let ChatStream { inner, session, driver, scratch, viable, message, .. } = self;
        let Some((kind, read)) = driver.growing() else { return false };
        let Some((growth, firsts)) = inner.predict.growth_of(kind) else { return false };
        let Some(tail) = session.input().get(read..) else { return false };
        let text = if tail.is_empty() {
            chunk
        } else {
            let Ok(tail) = std::str::from_utf8(tail) else { return false };
            scratch.clear();
            scratch.push_str(tail);
            scratch.push_str(chunk);
            scratch.as_str()
        };
        let (n, plain) = match growth {
            Growth::Until(delimiters) if until_extends_with(firsts, delimiters, text.as_bytes()) => (text.len(), false),
            Growth::JsonString => match driver.fold.open_quote(kind) {
                Some(q) => match string_growth(q, text) {
                    Some(n) => (n, q == '"'),
                    None => return false,
                },
                None => return false,
            },
            _ => return false,
        };
        session.push(chunk.as_bytes());
        driver.grow(&text[..n], plain, &inner.cx, &mut Recorder { out, message });
        *viable = session.input().len();
        true
    }

    fn check_open(&self) -> Result<(), Error> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Finished => Err(Error::new(ErrorKind::ParseFailed, "the stream is finished")),
            _ => Ok(()),
        }
    }

    fn step(
        &mut self,
        out: Result<crate::parse::ParseOutput, Error>,
        partial: bool,
        sink: &mut dyn Sink,
    ) -> Result<(), Error> {
        let input = self.session.input();
        match fold_parse(&self.inner, &mut self.driver, sink, input, out, partial, self.viable) {
            Ok(None) => {
                self.viable = input.len();
                Ok(())
            }
            Ok(Some(d)) => {
                self.diagnostic = Some(d);
                self.state = State::Fallback;
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    fn record(&mut self, out: &DeltaBuffer) {
        for d in out.iter() {
            self.message.apply_ref(d);
        }
    }
}

/// Writes deltas to the caller's buffer and applies them to the stream's message at once,
/// sparing a second pass over the buffer. Only for folds that cannot fail (a strict stream's
/// error must leave the message as it was).
struct Recorder<'a> {
    out: &'a mut DeltaBuffer,
    message: &'a mut ChatMessage,
}

impl Sink for Recorder<'_> {
    fn content(&mut self, s: &str) {
        self.out.content(s);
        self.message.content.push_str(s);
    }
    fn reasoning(&mut self, s: &str) {
        self.out.reasoning(s);
        self.message.reasoning_content.push_str(s);
    }
    fn header(&mut self, index: usize, id: &str, name: &str) {
        self.out.header(index, id, name);
        self.message.apply_ref(DeltaRef::ToolCall { index, id: Some(id), name: Some(name), arguments: None });
    }
    fn late_id(&mut self, index: usize, id: &str) {
        self.out.late_id(index, id);
        self.message.apply_ref(DeltaRef::ToolCall { index, id: Some(id), name: None, arguments: None });
    }
    fn args(&mut self, index: usize, s: &str) {
        self.out.args(index, s);
        // Applying pieces one by one equals applying the coalesced delta.
        match self.message.tool_calls.get_mut(index) {
            Some(call) => call.arguments.push_str(s),
            None => self.message.apply_ref(DeltaRef::ToolCall { index, id: None, name: None, arguments: Some(s) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatParseOptions, ChatParser, ConstructedBuilder, NativeBuilder, ToolSpec};

    fn parsers() -> Vec<ChatParser> {
        let native = NativeBuilder::build(|p| {
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
        let constructed = ConstructedBuilder::build(|p| {
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
            "f",
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}),
        );
        vec![
            ChatParser::new(Arc::new(native), ChatParseOptions::default()),
            ChatParser::new(Arc::new(constructed), ChatParseOptions { tools: vec![tool], ..Default::default() }),
        ]
    }

    const OUTPUTS: [&str; 5] = [
        "Hi there.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x \\\"q\\\" \\\\ \\u00e9 y\\n\", \"b\": [1, 2]}}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
        "Hi <tool_call>{\"name\": \"f\", \"arguments\": {'a': True, \"b\": \"é\\\\\"}}</tool_call> trailing",
        "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nline \"1\" \\ é\n\tline 2\n</parameter>\n<parameter=n>\n 42 \n</parameter>\n</function>\n</tool_call>",
        "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nunfinished <b> \n</param",
        "<tool_call>\n<function=f>\n<parameter=a>\nx</function> broken",
    ];

    /// `push_into` with one reused buffer yields exactly the deltas `push` returns.
    #[test]
    fn push_into_equals_push() {
        for parser in parsers() {
            for output in OUTPUTS {
                for size in [1, 3, 4, 7, 64] {
                    let mut a = parser.stream();
                    let mut b = parser.stream();
                    let mut buf = DeltaBuffer::new();
                    let mut all = Vec::new();
                    let mut i = 0;
                    while i < output.len() {
                        let mut j = (i + size).min(output.len());
                        while !output.is_char_boundary(j) {
                            j += 1;
                        }
                        let owned = a.push(&output[i..j]).unwrap();
                        b.push_into(&output[i..j], &mut buf).unwrap();
                        assert_eq!(buf.to_deltas(), owned, "{output:?} in chunks of {size}");
                        assert_eq!(a.message(), b.message());
                        all.extend(owned);
                        i = j;
                    }
                    let (last, whole) = a.finish().unwrap();
                    let whole_b = b.finish_into(&mut buf).unwrap();
                    assert_eq!(buf.to_deltas(), last);
                    assert_eq!(whole_b, whole);
                    all.extend(last);
                    assert_eq!(ChatMessage::from_deltas(&all), whole.message);
                    assert_eq!(whole, parser.parse(output, false).unwrap());
                    assert!(b.push_into("x", &mut buf).is_err() && buf.is_empty());
                }
            }
        }
    }
}
