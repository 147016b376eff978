//! Streaming: feed output chunk by chunk, get deltas as soon as text is certain.

use std::sync::Arc;

use crate::arena::NodeId;
use crate::chat::json_text;
use crate::chat::lane::Lane;
use crate::chat::mapper::{Driver, Input, Kind, Sink, Verbatim};
use crate::chat::message::{ChatDelta, ChatMessage, DeltaBuffer, DeltaRef, push_token};
use crate::chat::parser::{ChatParser, Diagnostic, Inner, ParsedMessage, Strictness, fold_parse, no_recovery_if_strict};
use crate::chat::predict::{Growth, string_growth, until_extends_with};
use crate::chat::recovery::Recovery;
use crate::error::{Error, ErrorKind};
use crate::leaf::Starts;
use crate::resume::{GrowingLeaf, Resume};
use crate::session::Session;

impl ChatParser {
    /// A streaming parser: feed chunks, get deltas. (Here, so the parser does not depend on
    /// the stream that is built from it.)
    ///
    /// ```
    /// use peg_runtime::chat::{ChatDelta, ChatParser, SimpleBuilder};
    /// let parser = ChatParser::new(SimpleBuilder::build(|p| p.content(p.rest())).unwrap().into(), Default::default());
    /// let mut stream = parser.stream();
    /// assert_eq!(stream.push("Hello").unwrap(), [ChatDelta::content("Hello")]);
    /// ```
    pub fn stream(&self) -> ChatStream {
        ChatStream::new(self.inner.clone(), Session::new(self.inner.arena.clone()))
    }

    /// A streaming parser whose parses come from `session`, a new incremental parser of the
    /// same grammar as this parser's arena, such as the `Session` of a parser `chat_peg!`
    /// generates (its `Chat::stream` calls this). The deltas equal those of
    /// [`stream`](ChatParser::stream). (Input the session already holds would be read as
    /// output written before the prefill.)
    pub fn stream_with<S: Resume>(&self, session: S) -> ChatStream<S> {
        ChatStream::new(self.inner.clone(), session)
    }
}

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
/// Each [`push`](ChatStream::push) re-parses incrementally with a [`Resume`]: the runtime's
/// [`Session`] over the parser's arena (the default), or the session of a parser `chat_peg!`
/// generates ([`ChatParser::stream_with`]). It folds only what is new: text already emitted is never retracted, a suffix that could still
/// be the start of a marker is held back, tool argument text streams as it arrives. All deltas
/// of a stream add up to the one-shot [`parse`](crate::chat::ChatParser::parse) of the whole
/// output.
///
/// While the output streams the inside of a text (content, reasoning, a string argument), a
/// chunk that can only extend that text is appended without a parse: its delta is the chunk
/// itself (JSON-escaped in an argument), and the next parse resumes over it. Such a push costs
/// a table lookup per byte and a few copies, so a long tool argument streams at a few times
/// the cost of parsing it in one shot, whatever the chunk size.
///
/// ```
/// use peg_runtime::chat::{ChatDelta, ChatMessage, ChatParser, NativeBuilder, ParseMode};
/// let arena = NativeBuilder::build(|p| {
///     let call = p.tool(p.tool_name(p.chars("[a-z]", 1, None)) + " " + p.tool_args(p.json()));
///     p.content(p.until("<call>")) + p.zero_or_more("<call>" + call + "</call>") + p.end()
/// })
/// .unwrap();
/// let parser = ChatParser::new(arena.into(), Default::default());
/// let mut stream = parser.stream();
/// let mut deltas = Vec::new();
/// for chunk in ["Sure.<ca", "ll>now {\"tz", "\": \"UTC\"}</call>"] {
///     deltas.extend(stream.push(chunk).unwrap());
/// }
/// assert_eq!(deltas[0], ChatDelta::content("Sure."));
/// assert_eq!(stream.message().tool_calls[0].name, "now");
/// let (last, parsed) = stream.finish().unwrap();
/// deltas.extend(last);
/// assert_eq!(ChatMessage::from_deltas(&deltas), parsed.message);
/// assert_eq!(parsed, parser.parse("Sure.<call>now {\"tz\": \"UTC\"}</call>", ParseMode::Complete).unwrap());
/// ```
#[derive(Debug)]
pub struct ChatStream<S = Session> {
    inner: Arc<Inner>,
    session: S,
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
    /// Set when the next chunk may take the live lane (see [`ChatStream::push_live`]).
    live: Option<Live>,
    /// Byte classes of the live lane (`PASS`, or a union of `ESCAPE`, `STOP`, `HIGH`) for the
    /// text kind `classes_of` (made when the lane first opens).
    classes: Option<Box<[u8; 256]>>,
    /// The kind, and the `until` node when the table was made from its delimiters alone.
    classes_of: Option<(Kind, Option<NodeId>)>,
    /// Whether chunks may be folded without a parse, and a parse that only grew the open text
    /// without a walk of its output (off only to test that it changes nothing).
    predict: bool,
    /// Set while the output follows the parser's [`CallForm`](crate::chat::CallForm): the
    /// structural lane folds it without a parse (`lane.rs`).
    lane: Option<Lane>,
    /// Chunks after which the lane hands over even where it could go on (a test's knob).
    lane_chunks: usize,
}

/// The live lane: the input ends inside a growing text that a chunk extends verbatim.
#[derive(Debug, Clone, Copy)]
struct Live {
    kind: Kind,
    to: Verbatim,
    /// The chunk must end in a visible ASCII byte (trailing whitespace is held back).
    trim: bool,
    /// Input length when the lane opened. The driver's read position and `viable` are
    /// brought up to the lane's end once, by [`ChatStream::close_live`], not per chunk.
    from: usize,
}

/// How a growing text takes the next chunk.
enum TextGrowth<'a> {
    /// Like an `until`: by every chunk in which none of the delimiters starts, nor a prefix
    /// of one cut by the chunk's end.
    Until(UntilSet<'a>),
    /// Like a JSON or Python string: by plain string characters while inside one.
    JsonString,
}

/// The delimiters that decide whether a chunk only extends a growing `until` text.
struct UntilSet<'a> {
    starts: &'a Starts,
    delimiters: &'a [String],
    /// The `until` node, when the set is that node's alone.
    node: Option<NodeId>,
}

/// How the growing text of `kind` (starting at `start`) takes a chunk: as the leaf the
/// session's last parse stopped in takes it, when that leaf lies in the text (a chunk can
/// then extend nothing else: the rest of the path only follows it), else as every parser of
/// text of the kind agrees to. The agreement is always right but asks more: a lenient grammar
/// reads a kind of text in several call formats, and their `until` delimiters hold bytes the
/// text at hand never ends at (a Python call's `)` in an XML parameter's value: a parse per
/// line of code), or their parsers disagree (JSON arguments that may also be read as a
/// Python dict or loose text: no prediction at all).
#[inline(always)]
fn text_growth<'a, S: Resume>(inner: &'a Inner, session: &'a S, kind: Kind, start: usize) -> Option<TextGrowth<'a>> {
    let agreed = inner.predict.growth_of(kind);
    if let Some((growth, starts, true)) = agreed {
        // Every reader of the kind is a scanner, or an `until` of the same delimiters: the
        // leaf can say no more.
        return Some(match growth {
            Growth::Until(delimiters) => TextGrowth::Until(UntilSet { starts, delimiters, node: None }),
            Growth::JsonString => TextGrowth::JsonString,
        });
    }
    match session.growing_leaf() {
        Some((at, leaf)) if at >= start => Some(match leaf {
            GrowingLeaf::Until(node, search, delimiters) => TextGrowth::Until(UntilSet { starts: search.starts(), delimiters, node: Some(node) }),
            GrowingLeaf::Scanner => TextGrowth::JsonString,
        }),
        _ => Some(match agreed? {
            (Growth::Until(union), starts, _) => TextGrowth::Until(UntilSet { starts, delimiters: union, node: None }),
            (Growth::JsonString, _, _) => TextGrowth::JsonString,
        }),
    }
}

/// A byte that extends the text as it is.
const PASS: u8 = 0;
/// A byte that extends the text but is JSON-escaped in a string argument.
const ESCAPE: u8 = 1;
/// A byte that may start a delimiter (the chunk is looked at closer) or end a JSON string (the
/// chunk takes the normal path).
const STOP: u8 = 2;
/// A byte of a multi-byte character (passes unless also `STOP`).
const HIGH: u8 = 4;

impl<S: Resume> ChatStream<S> {
    fn new(inner: Arc<Inner>, mut session: S) -> ChatStream<S> {
        session.push(inner.options.prefill.as_bytes());
        let lane = inner.lane.as_ref().map(|_| Lane::new(inner.options.prefill.len()));
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
            live: None,
            classes: None,
            classes_of: None,
            predict: true,
            lane,
            lane_chunks: usize::MAX,
        }
    }

    /// Makes the structural lane hand over after `chunks` more chunks (or never take one):
    /// for tests that the handover at any point yields the deltas of a stream without it.
    #[doc(hidden)]
    pub fn hand_over_after(&mut self, chunks: usize) {
        self.lane_chunks = chunks;
    }

    /// Whether the structural lane is still reading the output.
    #[doc(hidden)]
    pub fn in_lane(&self) -> bool {
        self.lane.is_some()
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

    /// What was recovered so far, by offset: recoveries that can no longer change. After
    /// [`finish`](ChatStream::finish), those of the one-shot parse.
    pub fn recoveries(&self) -> &[Recovery] {
        &self.driver.fold.recoveries
    }

    /// Feeds the next chunk of model output; returns the deltas it made certain (often none).
    /// Lenient streams never fail here; strict ones return the parse error.
    ///
    /// A convenience over [`push_into`](ChatStream::push_into), which spares the allocations
    /// of the returned deltas.
    ///
    /// ```
    /// use peg_runtime::chat::{ChatDelta, ChatParser, SimpleBuilder};
    /// let arena = SimpleBuilder::build(|p| "<think>" + p.reasoning(p.until("</think>")) + "</think>" + p.content(p.rest())).unwrap();
    /// let mut stream = ChatParser::new(arena.into(), Default::default()).stream();
    /// assert_eq!(stream.push("<thi").unwrap(), []); // nothing certain yet
    /// assert_eq!(stream.push("nk>Hm").unwrap(), [ChatDelta::reasoning("Hm")]);
    /// ```
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
    #[inline]
    pub fn push_into(&mut self, chunk: &str, out: &mut DeltaBuffer) -> Result<(), Error> {
        out.clear();
        if let Some(live) = self.live
            && self.push_live(live, chunk, out)
        {
            return Ok(());
        }
        self.push_slow(chunk, out)
    }

    /// [`ChatStream::push_into`] in the structural lane, with `out` cleared: the chunk is
    /// folded as the lane reads it, or the lane hands over to the parser.
    #[inline(never)]
    fn push_lane(&mut self, chunk: &str, out: &mut DeltaBuffer) -> Result<(), Error> {
        self.check_open()?;
        if chunk.is_empty() {
            return Ok(());
        }
        let (Some(lane), Some(plan)) = (self.lane.as_mut(), self.inner.lane.as_ref()) else { return Ok(()) };
        self.session.push(chunk.as_bytes());
        let fold = &mut self.driver.fold;
        let mark = Mark::of(&self.message);
        let mut rec = Recorder { out, message: &mut self.message };
        if self.lane_chunks > 0 && lane.push(plan, self.session.input(), chunk, fold, &self.inner.cx, &mut rec) && fold.recoveries.is_empty() {
            self.lane_chunks -= 1;
            // What a parse after the chunk would have recorded: the input fits the grammar.
            self.viable = self.session.input().len();
            return Ok(());
        }
        // What the lane folded of the chunk was not sent: the parser takes over before it.
        mark.roll_back(&mut self.message);
        out.clear();
        self.hand_over(out)?;
        self.live = self.find_live();
        Ok(())
    }

    /// Ends the structural lane: the parser takes over from the message the lane emitted, with
    /// the parse a push of the input so far would have run; `out` gets what it adds.
    #[inline(never)]
    fn hand_over(&mut self, out: &mut DeltaBuffer) -> Result<(), Error> {
        self.lane = None;
        self.driver = Driver::adopting();
        self.parses += 1;
        let parsed = self.session.update().map(|_| ());
        self.step(parsed, true, out)?;
        self.record(out);
        Ok(())
    }

    /// [`ChatStream::push_into`] past the live lane, with `out` cleared.
    #[inline(never)]
    fn push_slow(&mut self, chunk: &str, out: &mut DeltaBuffer) -> Result<(), Error> {
        if self.lane.is_some() {
            return self.push_lane(chunk, out);
        }
        self.close_live();
        self.check_open()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match self.state {
            State::Parsing => {
                if !(self.predict && self.grow(chunk, out)) {
                    self.session.push(chunk.as_bytes());
                    self.parses += 1;
                    // Folded from the session's own output: no copy of the AST.
                    let parsed = self.session.update().map(|_| ());
                    if !(self.predict && parsed.is_ok() && self.session.grew_in_place() && self.step_in_place(chunk, out)?) {
                        self.step(parsed, true, out)?;
                        self.record(out);
                    }
                }
                self.live = self.find_live();
            }
            _ => {
                self.session.push(chunk.as_bytes());
                let mut rec = Recorder { out, message: &mut self.message };
                self.driver.fold.more_unplaced(chunk, &mut rec);
            }
        }
        Ok(())
    }

    /// Ends the stream: the final deltas and the whole message (equal to a one-shot parse).
    ///
    /// ```
    /// use peg_runtime::chat::{ChatDelta, ChatParser, SimpleBuilder};
    /// let parser = ChatParser::new(SimpleBuilder::build(|p| p.content(p.rest())).unwrap().into(), Default::default());
    /// let mut stream = parser.stream();
    /// assert_eq!(stream.push("Hi ").unwrap(), [ChatDelta::content("Hi")]); // trailing space held back
    /// let (last, parsed) = stream.finish().unwrap();
    /// assert!(last.is_empty()); // trimmed at the end
    /// assert_eq!(parsed.message.content, "Hi");
    /// ```
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
        self.close_live();
        self.check_open()?;
        if let (Some(lane), Some(plan)) = (self.lane.as_mut(), self.inner.lane.as_ref()) {
            // A whole turn of the form ends as the fold ends it, unless the fold recovers
            // something (whose span the parser knows).
            if lane.complete(plan) {
                let fold = &mut self.driver.fold;
                let mark = Mark::of(&self.message);
                let mut rec = Recorder { out, message: &mut self.message };
                let finished = lane.finish(plan, self.session.input(), fold, &self.inner.cx, &mut rec);
                fold.finish(&self.inner.cx, &mut rec);
                if finished && fold.recoveries.is_empty() {
                    self.lane = None;
                    self.state = State::Finished;
                    return Ok(ParsedMessage { message: self.message.clone(), diagnostic: None, recoveries: Vec::new() });
                }
                mark.roll_back(&mut self.message);
                out.clear();
            }
            // The parser takes over as after the last push, then finishes; `out` gets both.
            self.hand_over(out)?;
            let mut rest = DeltaBuffer::new();
            let parsed = self.finish_parsing(&mut rest);
            for d in rest.iter() {
                out.push_ref(d);
            }
            return parsed;
        }
        self.finish_parsing(out)
    }

    /// [`ChatStream::finish_into`] on the parser's path: `out` gets the final deltas.
    fn finish_parsing(&mut self, out: &mut DeltaBuffer) -> Result<ParsedMessage, Error> {
        if let State::Parsing = self.state {
            self.parses += 1;
            let parsed = self.session.finish().map(|_| ());
            self.step(parsed, false, out)?;
        }
        self.driver.fold.finish(&self.inner.cx, out);
        if let Err(e) = no_recovery_if_strict(&self.inner, &self.driver) {
            out.clear();
            self.state = State::Failed(e.clone());
            return Err(e);
        }
        self.state = State::Finished;
        self.record(out);
        let recoveries = self.driver.fold.recoveries.clone();
        Ok(ParsedMessage { message: self.message.clone(), diagnostic: self.diagnostic.clone(), recoveries })
    }

    /// The fast path: if the text node the input ends in is known to take `chunk` (after the
    /// unread tail a parse left out, such as a possible delimiter start), pushes the chunk
    /// and folds the growth without a parse. `false` (nothing done) if a parse is needed.
    fn grow(&mut self, chunk: &str, out: &mut DeltaBuffer) -> bool {
        let ChatStream { inner, session, driver, scratch, viable, message, .. } = self;
        let Some((kind, start, read)) = driver.growing() else { return false };
        let Some(growth) = text_growth(inner, session, kind, start) else { return false };
        if matches!(growth, TextGrowth::JsonString) && driver.fold.open_quote(kind).is_none() {
            return false;
        }
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
            TextGrowth::Until(set) if until_extends_with(set.starts, set.delimiters, text.as_bytes()) => (text.len(), false),
            TextGrowth::Until(_) => return false,
            TextGrowth::JsonString => match driver.fold.open_quote(kind) {
                Some(q) => match string_growth(q, text) {
                    Some(n) => (n, q == '"'),
                    None => return false,
                },
                None => return false,
            },
        };
        session.push(chunk.as_bytes());
        driver.grow(&text[..n], plain, &inner.cx, &mut Recorder { out, message });
        *viable = session.input().len();
        true
    }

    /// The live lane: the last push left the input inside a growing text, read to the end,
    /// whose next piece the fold passes through verbatim ([`Driver::verbatim`]). A chunk in
    /// which no delimiter of the text, nor a prefix of one cut by the chunk end, starts (for a
    /// JSON string: without a quote or control character, a backslash only in a whole escape of
    /// native arguments) then only extends that
    /// text: the parse it would take is left to the next push that needs one (the session
    /// resumes its scan over the skipped bytes), and its delta is the chunk itself
    /// (JSON-escaped for a string argument). A chunk of trimmed text must also end in a
    /// visible ASCII byte (trailing whitespace is held back). Exactly what
    /// [`ChatStream::grow`] and a parse would emit, for a fraction of the cost. The common
    /// chunk has no delimiter's first byte at all and is decided by one table lookup per byte.
    /// `false` (nothing done) if the chunk needs the normal path.
    #[inline(always)]
    fn push_live(&mut self, live: Live, chunk: &str, out: &mut DeltaBuffer) -> bool {
        let bytes = chunk.as_bytes();
        let Some(&last) = bytes.last() else { return false };
        let Some(t) = self.classes.as_deref() else { return false };
        let mut class = match *bytes {
            // The common token size: four independent lookups, no loop.
            [a, b, c, d] => t[usize::from(a)] | t[usize::from(b)] | t[usize::from(c)] | t[usize::from(d)],
            _ => PASS,
        };
        if bytes.len() != 4 {
            for &b in bytes {
                class |= t[usize::from(b)];
            }
        }
        if class & STOP != 0 {
            if let Verbatim::ToolArgs(_) = live.to {
                // Whole JSON escapes keep the string open and pass the normalizer as written.
                if !whole_escapes_only(bytes) {
                    return false;
                }
                class = PASS;
            } else {
                if !self.until_takes(live.kind, bytes) {
                    return false;
                }
                // Escape (or copy) by the general path, or the ASCII one.
                class = if bytes.is_ascii() { ESCAPE } else { ESCAPE | HIGH };
            }
        }
        if live.trim && !(last > b' ' && last < 0x80) {
            return false;
        }
        self.session.push(bytes);
        let message = &mut self.message;
        match live.to {
            Verbatim::Content => {
                out.content(chunk);
                push_token(&mut message.content, chunk);
            }
            Verbatim::Reasoning => {
                out.reasoning(chunk);
                push_token(&mut message.reasoning_content, chunk);
            }
            Verbatim::ToolArgs(i) | Verbatim::ArgString(i) => {
                let text = match class {
                    PASS | HIGH => out.args_with(i, |t| push_token(t, chunk)),
                    ESCAPE => out.args_with(i, |t| escape_ascii_json(t, bytes)),
                    _ => out.args_with(i, |t| escape_json(t, chunk)),
                };
                if let Some(call) = message.tool_calls.get_mut(i) {
                    push_token(&mut call.arguments, text);
                }
            }
        }
        true
    }

    /// For a chunk with a delimiter's first byte: whether it still only extends the `until`
    /// text of `kind` (no delimiter, nor a prefix of one cut by the chunk end, starts in it).
    #[inline(never)]
    fn until_takes(&self, kind: Kind, bytes: &[u8]) -> bool {
        let Some((_, start, _)) = self.driver.growing() else { return false };
        matches!(text_growth(&self.inner, &self.session, kind, start), Some(TextGrowth::Until(set)) if until_extends_with(set.starts, set.delimiters, bytes))
    }

    /// Whether the next chunk may take the live lane, after a push on the normal path.
    #[inline(always)]
    fn find_live(&mut self) -> Option<Live> {
        if !self.predict || !matches!(self.state, State::Parsing) {
            return None;
        }
        let (kind, to) = self.driver.verbatim(self.session.input().len())?;
        let (_, start, _) = self.driver.growing()?;
        if let Verbatim::ArgString(i) | Verbatim::ToolArgs(i) = to {
            // The call's header is out, so the message has it; checked to stay panic-free.
            if i >= self.message.tool_calls.len() {
                return None;
            }
        }
        let set = match text_growth(&self.inner, &self.session, kind, start)? {
            TextGrowth::Until(set) => Some(set),
            TextGrowth::JsonString => None,
        };
        let of = (kind, set.as_ref().and_then(|s| s.node));
        if self.classes_of != Some(of) {
            let classes = match (to, set) {
                (Verbatim::Content | Verbatim::Reasoning, Some(set)) => byte_classes(|b| set.starts.first(b), false),
                (Verbatim::ArgString(_), Some(set)) => byte_classes(|b| set.starts.first(b), true),
                // A quote, backslash or control byte may end the JSON string or need a parse.
                (Verbatim::ToolArgs(_), None) => byte_classes(json_text::escapes, false),
                _ => return None,
            };
            match &mut self.classes {
                Some(table) => **table = classes,
                None => self.classes = Some(Box::new(classes)),
            }
            self.classes_of = Some(of);
        }
        Some(Live { kind, to, trim: !matches!(to, Verbatim::ArgString(_)), from: self.session.input().len() })
    }

    /// Ends the live lane: the growing text took every byte pushed since it opened, and the
    /// input up to here fits the grammar (what a parse after each chunk would have recorded).
    fn close_live(&mut self) {
        if let Some(live) = self.live.take() {
            let len = self.session.input().len();
            if len > live.from {
                self.driver.grew_verbatim(&self.session.input()[live.from..len]);
                self.viable = len;
            }
        }
    }

    fn check_open(&self) -> Result<(), Error> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Finished => Err(Error::new(ErrorKind::ParseFailed, "the stream is finished")),
            _ => Ok(()),
        }
    }

    /// Folds the session's last output (`parsed` says whether the parse succeeded).
    /// On an error (strict mode), `out` is left empty and the stream failed.
    fn step(&mut self, parsed: Result<(), Error>, partial: bool, out: &mut DeltaBuffer) -> Result<(), Error> {
        let input = self.session.input();
        let parsed = parsed.map(|()| self.session.output());
        let mut sink = Emitting { out, before: &self.message };
        match fold_parse(&self.inner, &mut self.driver, &mut sink, input, parsed, partial, self.viable) {
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
                out.clear();
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// [`ChatStream::step`] after a parse that only moved the ends of the last one's partial
    /// nodes: only the growing text is folded. `Ok(false)` (nothing done) when the driver
    /// needs the whole parse.
    fn step_in_place(&mut self, chunk: &str, out: &mut DeltaBuffer) -> Result<bool, Error> {
        let (input, ast, cx) = (self.session.input(), &self.session.output().ast, &self.inner.cx);
        let len = input.len();
        // The chunk came as a `str`: text read from it needs no UTF-8 check.
        let input = Input::with_tail(input, chunk);
        if self.inner.options.strictness == Strictness::Lenient {
            // A lenient fold cannot fail: the message takes the deltas as they are written.
            if !self.driver.grew_in_place(ast, input, cx, &mut Recorder { out, message: &mut self.message }) {
                return Ok(false);
            }
        } else {
            if !self.driver.grew_in_place(ast, input, cx, &mut Emitting { out, before: &self.message }) {
                return Ok(false);
            }
            if let Err(e) = no_recovery_if_strict(&self.inner, &self.driver) {
                out.clear();
                self.state = State::Failed(e.clone());
                return Err(e);
            }
            self.record(out);
        }
        self.viable = len;
        Ok(true)
    }

    fn record(&mut self, out: &DeltaBuffer) {
        for d in out.iter() {
            self.message.apply_ref(d);
        }
    }
}

/// Whether the quotes, backslashes and control bytes of `b` (inside a `"` string) are all
/// within JSON escapes that `b` holds whole and that pass the normalizer as written (no
/// surrogate escape): it then continues the string.
#[inline(never)]
fn whole_escapes_only(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => match b.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                // A surrogate escape may be lone: whether it pairs up is the normalizer's.
                Some(b'u') if b.get(i + 2..i + 6).is_some_and(json_text::plain_u_escape) => i += 6,
                _ => return false,
            },
            c if json_text::escapes(c) => return false,
            _ => i += 1,
        }
    }
    true
}

/// Byte classes of a growing text: bytes for which `stop` holds (a delimiter's first byte)
/// stop the live lane; `escape`: the text goes into a JSON string.
fn byte_classes(stop: impl Fn(u8) -> bool, escape: bool) -> [u8; 256] {
    let mut c = [PASS; 256];
    c[0x80..].fill(HIGH);
    for b in 0..=255u8 {
        if stop(b) {
            c[usize::from(b)] = STOP;
        } else if escape && json_text::escapes(b) {
            c[usize::from(b)] = ESCAPE;
        }
    }
    c
}

/// Cuts `text` into pieces the way a token stream delivers it: piece sizes follow `sizes`
/// cyclically (`&[4]`: 4 bytes each; a size of 0 counts as 1, no sizes is one piece), each
/// end moved forward to a character boundary. For feeding a [`ChatStream`] in tests,
/// benchmarks and simulations.
///
/// ```
/// use peg_runtime::chat::stream_pieces;
///
/// assert_eq!(stream_pieces("abcdé", &[2]), ["ab", "cd", "é"]);
/// assert_eq!(stream_pieces("abcdef", &[1, 3]), ["a", "bcd", "e", "f"]);
/// assert_eq!(stream_pieces("é", &[1]), ["é"]);
/// ```
pub fn stream_pieces<'t>(text: &'t str, sizes: &[usize]) -> Vec<&'t str> {
    let mut out = Vec::new();
    let (mut i, mut k) = (0, 0);
    while i < text.len() {
        let size = if sizes.is_empty() { text.len() } else { sizes[k % sizes.len()] };
        let mut j = (i + size.max(1)).min(text.len());
        while !text.is_char_boundary(j) {
            j += 1;
        }
        out.push(&text[i..j]);
        i = j;
        k += 1;
    }
    out
}

/// Appends `s` JSON-escaped, as `json_text::escape_into` does, char by char: cheaper for the
/// few bytes of a streamed chunk.
#[inline]
fn escape_json(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    for c in s.chars() {
        // Most characters need no escape: one predictable test instead of a jump table.
        if c >= ' ' && c != '"' && c != '\\' {
            out.push(c);
        } else {
            json_text::push_escaped(out, c as u8);
        }
    }
}

/// [`escape_json`] for ASCII text (the caller's byte classes say so): a byte at a time, no
/// decoding. A non-ASCII byte, were one passed, is copied as U+FFFD rather than mis-escaped.
#[inline]
fn escape_ascii_json(out: &mut String, s: &[u8]) {
    out.reserve(s.len() + 2);
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            b'\n' => out.push_str("\\n"),
            b' '..=0x7f => out.push(char::from(b)),
            0x80.. => out.push(char::REPLACEMENT_CHARACTER),
            _ => json_text::push_escaped(out, b),
        }
    }
}

/// How far a message went, to take back what a dropped chunk of the structural lane added to
/// it (the lane adds calls, argument text to the last one, and ids in the order of the calls).
struct Mark {
    content: usize,
    reasoning: usize,
    calls: usize,
    args: usize,
    ids: usize,
}

impl Mark {
    fn of(m: &ChatMessage) -> Mark {
        Mark {
            content: m.content.len(),
            reasoning: m.reasoning_content.len(),
            calls: m.tool_calls.len(),
            args: m.tool_calls.last().map_or(0, |c| c.arguments.len()),
            ids: m.tool_calls.iter().take_while(|c| !c.id.is_empty()).count(),
        }
    }

    fn roll_back(&self, m: &mut ChatMessage) {
        m.content.truncate(self.content);
        m.reasoning_content.truncate(self.reasoning);
        m.tool_calls.truncate(self.calls);
        if let Some(c) = m.tool_calls.last_mut() {
            c.arguments.truncate(self.args);
        }
        for c in m.tool_calls.iter_mut().skip(self.ids) {
            c.id.clear();
        }
    }
}

/// The caller's buffer, empty when a parse is folded into it, with the message the stream
/// emitted before: what a parse that no longer agrees with the fold must extend
/// ([`Driver::follow`](crate::chat::mapper::Driver::follow)).
struct Emitting<'a> {
    out: &'a mut DeltaBuffer,
    before: &'a ChatMessage,
}

impl Sink for Emitting<'_> {
    fn content(&mut self, s: &str) {
        self.out.content(s);
    }
    fn reasoning(&mut self, s: &str) {
        self.out.reasoning(s);
    }
    fn header(&mut self, index: usize, id: &str, name: &str) {
        self.out.header(index, id, name);
    }
    fn late_id(&mut self, index: usize, id: &str) {
        self.out.late_id(index, id);
    }
    fn args(&mut self, index: usize, s: &str) {
        self.out.args(index, s);
    }
    fn emitted(&self) -> Option<&ChatMessage> {
        // Only while nothing was written: the message would not include it.
        self.out.is_empty().then_some(self.before)
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
            Some(call) => push_token(&mut call.arguments, s),
            None => self.message.apply_ref(DeltaRef::ToolCall { index, id: None, name: None, arguments: Some(s) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatParseOptions, ChatParser, ToolSpec};
    use proptest::prelude::{Strategy, TestCaseError, prop, prop_assert, prop_assert_eq};

    #[test]
    fn stream_pieces_keep_characters_whole() {
        let s = "aé𝄞b";
        for n in 0..8 {
            let c = stream_pieces(s, &[n]);
            assert_eq!(c.concat(), s);
            assert!(c.iter().all(|x| !x.is_empty()));
        }
        assert_eq!(stream_pieces(s, &[]), [s]);
        assert!(stream_pieces("", &[3]).is_empty());
    }

    /// Hermes's call object: `{"name": …, "arguments": …}`, the arguments read by `args`.
    fn json_call<'a>(p: &'a crate::chat::NativeBuilder, args: crate::builder::Parser<'a>) -> crate::builder::Parser<'a> {
        p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(args))
                << p.tool_close("}"),
        )
    }

    /// A native format (Hermes-like: JSON or Python arguments) and a constructed one
    /// (Qwen3-Coder-like XML parameters), each with an optional reasoning block and any tool
    /// name; then grammars whose readers of a kind of text differ: XML parameters or Python
    /// calls, JSON arguments or text up to a marker.
    fn parsers() -> Vec<ChatParser> {
        let native = crate::chat::NativeBuilder::build(|p| {
            let reasoning = p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>");
            let call = json_call(p, p.json() | p.python());
            reasoning + p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
        })
        .unwrap();
        // Qwen3-Coder's XML parameters.
        fn xml_call(p: &crate::chat::ConstructedBuilder) -> crate::builder::Parser<'_> {
            let name = || p.chars("[a-zA-Z0-9_.-]", 1, None);
            let arg = p.tool_arg(
                p.tool_arg_open("<parameter=" + p.tool_arg_name(name()) + ">\n")
                    + p.tool_arg_string_value(p.until("\n</parameter>"))
                    + p.tool_arg_close("\n</parameter>\n"),
            );
            p.tool(p.tool_open("<function=" + p.tool_name(name()) + ">\n") + p.zero_or_more(arg) + p.tool_close("</function>"))
        }
        let constructed = crate::chat::ConstructedBuilder::build(|p| {
            let reasoning = p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>");
            reasoning + p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>\n" + xml_call(p) + "\n</tool_call>" + p.space()) + p.end()
        })
        .unwrap();
        // Two call formats whose string values end at different delimiters: XML parameters,
        // and Python calls whose values end at `)` or `, `.
        let two_formats = crate::chat::ConstructedBuilder::build(|p| {
            let name = || p.chars("[a-zA-Z0-9_.-]", 1, None);
            let py_arg = p.tool_arg(
                p.tool_arg_open(p.tool_arg_name(name()) + "=") + p.tool_arg_string_value(p.until_one_of([")", ", "])) + p.tool_arg_close(p.optional(", ")),
            );
            let py = p.tool(p.tool_open(p.tool_name(name()) + "(") + p.zero_or_more(py_arg) + p.tool_close(")"));
            p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>\n" + (xml_call(p) | py) + "\n</tool_call>" + p.space()) + p.end()
        })
        .unwrap();
        // JSON arguments, and arguments read as text up to a marker: the argument readers
        // disagree on how their text grows.
        let json_or_text = crate::chat::NativeBuilder::build(|p| {
            let call = json_call(p, p.json());
            let marked = p.tool(p.tool_open("[CALL]") + p.tool_name(p.until("[ARGS]")) + "[ARGS]" + p.tool_args(p.until("[END]")) + p.tool_close("[END]"));
            p.content(p.until_one_of(["<tool_call>", "[CALL]"])) + p.zero_or_more(("<tool_call>" << call << "</tool_call>" << p.space()) | marked) + p.end()
        })
        .unwrap();
        let tool = ToolSpec::new("f", serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}));
        vec![
            ChatParser::new(Arc::new(native), ChatParseOptions { tools: vec![tool.clone()], ..Default::default() }),
            ChatParser::new(Arc::new(constructed), ChatParseOptions { tools: vec![tool.clone()], ..Default::default() }),
            ChatParser::new(Arc::new(two_formats), ChatParseOptions { tools: vec![tool.clone()], ..Default::default() }),
            ChatParser::new(Arc::new(json_or_text), ChatParseOptions { tools: vec![tool], ..Default::default() }),
        ]
    }

    const OUTPUTS: [&str; 5] = [
        "Hi there.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x \\\"q\\\" \\\\ \\u00e9 y\\n\", \"b\": [1, 2]}}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
        "Hi <tool_call>{\"name\": \"f\", \"arguments\": {'a': True, \"b\": \"é\\\\\"}}</tool_call> trailing",
        "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nline \"1\" \\ é\n\tline 2\n</parameter>\n<parameter=n>\n 42 \n</parameter>\n</function>\n</tool_call>",
        "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nunfinished <b> \n</param",
        "<tool_call>\n<function=f>\n<parameter=a>\nx</function> broken",
    ];

    /// `escape_json` writes what `escape_into` writes.
    #[test]
    fn escape_json_equals_escape_into() {
        let mut all = String::from("a\"b\\c/é😀\u{7f}");
        all.extend((0u8..0x20).map(char::from));
        let ascii: String = all.chars().filter(char::is_ascii).collect();
        for s in [all.as_str(), ascii.as_str(), "", "plain", "\"", "\\\n", "a long plain ascii text, longer than sixteen"] {
            let (mut a, mut b) = (String::from("x"), String::from("x"));
            escape_json(&mut a, s);
            crate::chat::json_text::escape_into(&mut b, s);
            assert_eq!(a, b);
            if s.is_ascii() {
                let mut c = String::from("x");
                escape_ascii_json(&mut c, s.as_bytes());
                assert_eq!(c, b);
            }
        }
    }

    /// Streams `output` in `sizes`-cycled chunks through a stream with and one without the
    /// fast paths (`grow`, the live lane): every push must give the same deltas; both must add
    /// up to the one-shot parse. Returns the parses the fast stream ran.
    fn fast_equals_slow(parser: &ChatParser, output: &str, sizes: &[usize]) -> Result<usize, TestCaseError> {
        let mut fast = parser.stream();
        let mut slow = parser.stream();
        slow.predict = false;
        let (mut bf, mut bs) = (DeltaBuffer::new(), DeltaBuffer::new());
        let mut all = Vec::new();
        let mut j = 0;
        for piece in stream_pieces(output, sizes) {
            let i = j;
            j += piece.len();
            let (rf, rs) = (fast.push_into(piece, &mut bf), slow.push_into(piece, &mut bs));
            prop_assert_eq!(rf.is_ok(), rs.is_ok());
            prop_assert_eq!(bf.to_deltas(), bs.to_deltas(), "{:?} at {}..{}", output, i, j);
            prop_assert_eq!(fast.message(), slow.message());
            prop_assert_eq!(fast.recoveries(), slow.recoveries());
            all.extend(bf.to_deltas());
        }
        let (wf, ws) = (fast.finish_into(&mut bf), slow.finish_into(&mut bs));
        prop_assert_eq!(bf.to_deltas(), bs.to_deltas());
        all.extend(bf.to_deltas());
        prop_assert_eq!(&wf, &ws);
        let strict = parser.options().strictness == crate::chat::Strictness::Strict;
        let whole = parser.parse(output, crate::chat::ParseMode::Complete);
        prop_assert_eq!(whole.is_ok(), wf.is_ok());
        if let (Ok(whole), Ok(wf)) = (whole, wf) {
            prop_assert_eq!(&ChatMessage::from_deltas(&all), &whole.message);
            prop_assert_eq!(wf, whole);
        } else {
            prop_assert!(strict);
        }
        Ok(fast.parses)
    }

    /// Pieces of text that exercise the fast paths' decisions: delimiter starts and prefixes,
    /// `<` inside values, multi-byte UTF-8, characters JSON escapes, trailing whitespace.
    fn tricky() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a",
            "word ",
            "xyz",
            " ",
            "  ",
            "\n",
            "\n\n",
            "<",
            "</",
            "<b>",
            "\"",
            "\\",
            "\\\"",
            "\\u00e9",
            "\\ud83d",
            "\\uDE00",
            "\\n",
            "é",
            "😀",
            "\t",
            "\r",
            "\u{1}",
            "\u{8}",
            "\u{c}",
            "\u{1f}",
            "\u{7f}",
            "\n</param",
            "\n</parameter",
            "<tool_",
            "</think",
            "{",
            "}",
            ")",
            ", ",
            "f(a=",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
    }

    /// [`with_reasoning`] whose start marker may come again and whose end marker may be
    /// missing, both reported as recoveries.
    fn recovering(strict: bool, prefill: &str) -> ChatParser {
        use crate::chat::RecoveryKind;
        let arena = crate::chat::SimpleBuilder::build(|p| {
            let again = p.optional(p.tag(RecoveryKind::ReasoningMarker.tag(), p.literal("<think>")));
            let close = p.literal("</think>") | p.tag(RecoveryKind::MissingClose.tag(), p.end());
            p.optional("<think>" + again + p.reasoning(p.until("</think>")) + close) + p.content(p.until("<tool_call>")) + p.end()
        })
        .unwrap();
        parser_of(arena, strict, prefill)
    }

    fn parser_of(arena: crate::Arena, strict: bool, prefill: &str) -> ChatParser {
        let strictness = if strict { crate::chat::Strictness::Strict } else { crate::chat::Strictness::Lenient };
        ChatParser::new(Arc::new(arena), ChatParseOptions { strictness, prefill: prefill.into(), ..Default::default() })
    }

    fn with_reasoning(strict: bool, prefill: &str) -> ChatParser {
        let arena = crate::chat::SimpleBuilder::build(|p| {
            p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>") + p.content(p.until("<tool_call>")) + p.end()
        })
        .unwrap();
        parser_of(arena, strict, prefill)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

        #[test]
        fn fast_paths_change_nothing(
            (a, b, c) in (tricky(), tricky(), tricky()),
            sizes in prop::collection::vec(1usize..9, 1..6),
            strict in proptest::prelude::any::<bool>(),
        ) {
            let ps = parsers();
            let json_arg = serde_json::to_string(&b).unwrap();
            let outputs = [
                (&ps[1], format!("{a}<tool_call>\n<function=f>\n<parameter=a>\n{b}\n</parameter>\n<parameter=b>\n{c}\n</parameter>\n</function>\n</tool_call>")),
                (&ps[1], format!("{a}<tool_call>\n<function=f>\n<parameter=n>\n{b}\n</parameter>\n</function>\n</tool_call>{c}")),
                (&ps[0], format!("{a}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": {json_arg}, \"b\": 1}}}}</tool_call>{c}")),
                (&ps[0], format!("{a}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{b}")),
                // Several calls: the finished ones are skipped by later walks; Python arguments
                // grow in place through the normalizer.
                (&ps[0], format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": {json_arg}}}}}</tool_call>\n<tool_call>{{\"name\": \"f\", \"arguments\": {{'a': {json_arg}, 'n': [1, {{'k': None, 'm': True}},]}}}}</tool_call><tool_call>{{\"name\": \"f\", \"arguments\": {{\"n\": 3}}}}</tool_call>{c}")),
                (&ps[1], format!("<tool_call>\n<function=f>\n<parameter=a>\n{a}\n</parameter>\n</function>\n</tool_call><tool_call>\n<function=f>\n<parameter=a>\n{b}\n</parameter>\n</function>\n</tool_call>{c}")),
                // A text of one format holding the other's delimiters.
                (&ps[2], format!("{a}<tool_call>\n<function=f>\n<parameter=a>\n{b}\n</parameter>\n</function>\n</tool_call>{c}")),
                (&ps[2], format!("<tool_call>\nf(a={a}, n={b})\n</tool_call>{c}")),
                (&ps[3], format!("{a}<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": {json_arg}, \"b\": 1}}}}</tool_call>{c}")),
                (&ps[3], format!("{a}[CALL]f[ARGS]{{\"a\": \"{b}\"}}[END]{c}")),
            ];
            for (parser, output) in outputs {
                fast_equals_slow(parser, &output, &sizes)?;
            }
            let p = with_reasoning(strict, "");
            fast_equals_slow(&p, &format!("<think>{a}</think>{b}"), &sizes)?;
            fast_equals_slow(&p, &format!("<think>{a}{b}"), &sizes)?;
            fast_equals_slow(&with_reasoning(strict, "<think>\n"), &format!("{a}</think>{b}"), &sizes)?;
            let p = recovering(strict, "<think>");
            for output in [format!("<think>{a}</think>{b}"), format!("{a}</think>{b}"), format!("<think>{a}"), format!("{a}<think>{b}{c}")] {
                fast_equals_slow(&p, &output, &sizes)?;
            }
            let rest = crate::chat::SimpleBuilder::build(|p| p.content(p.rest())).unwrap();
            fast_equals_slow(&ChatParser::new(Arc::new(rest), ChatParseOptions::default()), &format!("{a}{b}"), &sizes)?;
        }
    }

    /// The live lane runs without parses for a long string argument in small chunks.
    #[test]
    fn long_argument_streams_without_parses() {
        let ps = parsers();
        // Lines of code, then a long line.
        let body = format!("{}{}\nend", "let s = \"a \\\\ b\"; // é\n".repeat(40), "x = \"q\" \\\\ é; ".repeat(400));
        let output = format!("<tool_call>\n<function=f>\n<parameter=a>\n{body}\n</parameter>\n</function>\n</tool_call>");
        let parses = fast_equals_slow(&ps[1], &output, &[4]).unwrap();
        assert!(parses < 60, "{parses} parses");
    }

    /// The live lane goes on through whole escapes inside a native JSON string argument.
    /// A growing text is asked about its own delimiters only: code with `)` and `, ` on every
    /// line, in an XML parameter of a grammar whose Python calls end their values there,
    /// streams without a parse per line (each of the 160 lines would take one or more).
    #[test]
    fn a_text_takes_a_parse_only_at_its_own_delimiters() {
        let ps = parsers();
        let body = "let t = f(a, b); // (x, y)\n".repeat(160);
        let output = format!("<tool_call>\n<function=f>\n<parameter=a>\n{body}\n</parameter>\n</function>\n</tool_call>");
        let parses = fast_equals_slow(&ps[2], &output, &[4]).unwrap();
        assert!(parses < 110, "{parses} parses");
        // The Python form still ends its values at `)`.
        fast_equals_slow(&ps[2], "<tool_call>\nf(a=x, n=3)\n</tool_call>", &[1, 2, 4]).unwrap();
        let whole = ps[2].parse("<tool_call>\nf(a=x, n=3)\n</tool_call>", crate::chat::ParseMode::Complete).unwrap();
        assert_eq!(whole.message.tool_calls[0].arguments, r#"{"a": "x", "n": 3}"#);
    }

    /// A lookahead inside a text that reaches the end of input stops the parse where it
    /// starts: the `until` it stopped in is not the text's, and a chunk its delimiters let
    /// through does not extend the text.
    #[test]
    fn an_until_inside_a_lookahead_grows_no_text() {
        let arena = crate::chat::SimpleBuilder::build(|p| {
            let marked = || p.literal("<c>") + p.until("!") + "!";
            let text = p.until("<c>") + p.zero_or_more(p.negate(marked()) + p.any() + p.until("<c>"));
            p.content(text) + p.optional("<c>" + p.reasoning(p.until("!")) + "!") + p.end()
        })
        .unwrap();
        let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
        for output in ["hello <c>abc def ghi jkl", "hello <c>abc def!", "a <c>b <c>c d e f!", "<c>xyz uvw rst"] {
            for size in [1, 2, 3, 4, 5] {
                fast_equals_slow(&parser, output, &[size]).unwrap();
            }
        }
    }

    /// Two `until`s at one position, the second tried after the first matched and what
    /// followed it failed: the live lane's byte table follows the one that grows.
    #[test]
    fn the_live_lane_follows_the_until_that_grows() {
        let arena = crate::chat::SimpleBuilder::build(|p| p.content((p.until("X") + "X!") | p.until("Y")) + p.optional(p.literal("Y") + p.reasoning(p.rest())))
            .unwrap();
        let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
        for output in ["abcdX?efghYijkl", "abcdX!", "abcdefgh"] {
            for size in [1, 2, 3, 4] {
                fast_equals_slow(&parser, output, &[size]).unwrap();
            }
        }
    }

    /// A JSON string argument streams on the live lane where the grammar also reads
    /// arguments as text: the scanner the parse stopped in says how the text grows.
    #[test]
    fn json_arguments_stream_live_where_other_arguments_are_text() {
        let ps = parsers();
        assert!(ps[3].inner.predict.growth_of(Kind::ToolArgs).is_none(), "the readers agree: the test needs them not to");
        let body = "let s = a + b; // é\n".repeat(300);
        let output = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {}}}</tool_call>", serde_json::json!({"a": body, "n": 3}));
        let parses = fast_equals_slow(&ps[3], &output, &[4]).unwrap();
        assert!(parses < 40, "{parses} parses");
        fast_equals_slow(&ps[3], "[CALL]f[ARGS]{\"a\": \"x y z\"}[END]", &[1, 3, 4]).unwrap();
    }

    #[test]
    fn escaped_native_argument_streams_with_few_parses() {
        let ps = parsers();
        let code = "let s = format!(\"{} \\ {}\", a, b); // é \\u00e9\n".repeat(200);
        let output = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {}}}</tool_call>", serde_json::json!({"a": code}));
        let chunks = stream_pieces(&output, &[4]).len();
        let parses = fast_equals_slow(&ps[0], &output, &[4]).unwrap();
        assert!(parses * 3 < chunks, "{parses} parses for {chunks} chunks");
    }

    /// Hermes's shape: content ends where a call starts, as a lookahead holding a copy of the
    /// call says (here a call in a code fence, Hermes's recovery), so the grammar holds
    /// `tool_args` inside a lookahead too.
    fn hermes_like() -> ChatParser {
        let arena = crate::chat::NativeBuilder::build(|p| {
            let call = || json_call(p, p.json());
            let fenced = || "```" << call() << "```";
            let starts = || p.literal("<tool_call>") | (p.peek(p.literal("```")) + p.atomic(fenced()));
            let text = p.until_one_of(["<tool_call>", "```"]) + p.zero_or_more(p.negate(starts()) + p.any() + p.until_one_of(["<tool_call>", "```"]));
            let calls = ("<tool_call>" << call() << "</tool_call>") | fenced();
            p.content(text) + p.zero_or_more(calls << p.space()) + p.end()
        })
        .unwrap();
        let tool = ToolSpec::new("f", serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}));
        ChatParser::new(Arc::new(arena), ChatParseOptions { tools: vec![tool], ..Default::default() })
    }

    /// A copy of the call inside a lookahead does not keep a native string argument off the
    /// live lane: streamed in pieces of 1 to 8 bytes (escapes, quotes, non-ASCII, the closing
    /// marker inside the string), every push gives what a parse would, and most pieces take
    /// no parse.
    #[test]
    fn string_argument_streams_live_past_lookahead_copies() {
        let parser = hermes_like();
        assert_eq!(parser.inner.predict.growth(crate::chat::builder::tags::TOOL_ARGS), Some(&Growth::JsonString));
        let value = "say \"hi\" \\ </tool_call> é 😀 \u{1} ``` {\"x\": 1}\n\t".repeat(60);
        let args = serde_json::json!({"a": value, "b": 3});
        for size in 1..=8 {
            for lead in ["Sure.\n", "a ``` b\n"] {
                let output = format!("{lead}<tool_call>{{\"name\": \"f\", \"arguments\": {args}}}</tool_call>");
                let chunks = stream_pieces(&output, &[size]).len();
                let parses = fast_equals_slow(&parser, &output, &[size]).unwrap();
                assert!(parses * 3 < chunks, "{parses} parses for {chunks} chunks of {size}");
            }
        }
        // Cut off inside the string, and a call in a code fence (decided by the lookahead's copy).
        let cut = format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{}", &serde_json::to_string(&value).unwrap()[1..400]);
        let fenced = format!("x ```{{\"name\": \"f\", \"arguments\": {args}}}``` y");
        for output in [cut, fenced] {
            for sizes in [&[1][..], &[3, 5], &[8, 2, 7]] {
                fast_equals_slow(&parser, &output, sizes).unwrap();
            }
        }
    }

    /// Surrogate escapes in JSON arguments, lone or in pairs, the pairs cut anywhere by the
    /// chunks: the deltas add up to the one-shot message, whose arguments JSON readers take
    /// (a lone surrogate is `\ufffd`, a pair stays as written).
    #[test]
    fn lone_surrogate_escapes_stream_as_replacement_characters() {
        let value = r"Paris\ud800/think> \udc00x \uD83D\uDE00 \ud800\u0041 \ud83d\ude00\ude00 \uDBFF\uDBFF\uDFFF \ud800\n".repeat(20);
        let ps = parsers();
        for parser in [&hermes_like(), &ps[0]] {
            let outputs = [
                format!("Sure.\n<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{value}\", \"b\": 3}}}}</tool_call>"),
                r#"<tool_call>{"name": "f", "arguments": {"a": "\udc00"}}</tool_call>"#.to_owned(),
                // Cut off after a high surrogate: nothing pairs it up.
                format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{value}\\uD83D"),
                format!("<tool_call>{{\"name\": \"f\", \"arguments\": {{\"a\": \"{value}\\uD83D\\"),
            ];
            for output in &outputs {
                for size in 1..=8 {
                    fast_equals_slow(parser, output, &[size]).unwrap();
                }
                fast_equals_slow(parser, output, &[3, 5, 1, 8]).unwrap();
                let whole = parser.parse(output, crate::chat::ParseMode::Complete).unwrap();
                assert!(!whole.message.tool_calls.is_empty(), "{output}");
                for call in &whole.message.tool_calls {
                    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_else(|e| panic!("{}: {e}", call.arguments));
                    let a = args["a"].as_str().unwrap();
                    assert!(a.contains('\u{fffd}') && !a.contains('\\'), "{a}");
                }
            }
            let whole = parser.parse(&outputs[0], crate::chat::ParseMode::Complete).unwrap();
            let a = serde_json::from_str::<serde_json::Value>(&whole.message.tool_calls[0].arguments).unwrap()["a"].as_str().unwrap().to_owned();
            assert!(a.starts_with("Paris\u{fffd}/think> \u{fffd}x 😀 \u{fffd}A 😀\u{fffd} \u{fffd}\u{10ffff} \u{fffd}\n"), "{a}");
        }
    }

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
                    assert_eq!(whole, parser.parse(output, crate::chat::ParseMode::Complete).unwrap());
                    assert!(b.push_into("x", &mut buf).is_err() && buf.is_empty());
                }
            }
        }
    }
}
