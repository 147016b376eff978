//! Streaming: feed output chunk by chunk, get deltas as soon as text is certain.

use std::borrow::Cow;
use std::sync::Arc;

use crate::chat::mapper::{DeltaSink, Driver};
use crate::chat::message::{ChatDelta, ChatMessage};
use crate::chat::parser::{fold_parse, Diagnostic, Inner, ParsedMessage};
use crate::chat::predict::{string_growth, until_extends, Growth};
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
    pub fn push(&mut self, chunk: &str) -> Result<Vec<ChatDelta>, Error> {
        self.check_open()?;
        let mut sink = DeltaSink::default();
        if chunk.is_empty() {
            return Ok(Vec::new());
        }
        let growth = match self.state {
            State::Parsing => self.predicted_growth(chunk),
            _ => None,
        };
        self.session.push(chunk.as_bytes());
        match (&self.state, growth) {
            (State::Fallback, _) => self.driver.fold.extra_content(chunk, &mut sink),
            (_, Some(text)) => {
                // The next parse would only extend the growing node: fold that without it.
                self.driver.grow(&text, &self.inner.cx, &mut sink);
                self.viable = self.session.input().len();
            }
            _ => {
                self.parses += 1;
                let out = self.session.parse();
                self.step(out, true, &mut sink)?;
            }
        }
        Ok(self.record(sink))
    }

    /// Ends the stream: the final deltas and the whole message (equal to a one-shot parse).
    pub fn finish(&mut self) -> Result<(Vec<ChatDelta>, ParsedMessage), Error> {
        self.check_open()?;
        let mut sink = DeltaSink::default();
        if let State::Parsing = self.state {
            self.parses += 1;
            let out = self.session.finish();
            self.step(out, false, &mut sink)?;
        }
        self.driver.fold.finish(&self.inner.cx, &mut sink);
        self.state = State::Finished;
        let deltas = self.record(sink);
        Ok((deltas, ParsedMessage { message: self.message.clone(), diagnostic: self.diagnostic.clone() }))
    }

    /// If the text node the input ends in is known to take `chunk` (after the unread tail a
    /// parse left out, such as a possible delimiter start): the text to fold.
    fn predicted_growth<'c>(&self, chunk: &'c str) -> Option<Cow<'c, str>> {
        let (kind, read) = self.driver.growing()?;
        let input = self.session.input();
        let tail = std::str::from_utf8(input.get(read..)?).ok()?;
        let text = if tail.is_empty() { Cow::Borrowed(chunk) } else { Cow::Owned(format!("{tail}{chunk}")) };
        let n = match kind.text_tag().and_then(|t| self.inner.predict.growth(t))? {
            Growth::Until(delimiters) => until_extends(delimiters, text.as_bytes()).then_some(text.len())?,
            Growth::JsonString => string_growth(self.driver.fold.open_quote(kind)?, &text)?,
        };
        Some(match text {
            Cow::Borrowed(t) => Cow::Borrowed(&t[..n]),
            Cow::Owned(mut t) => {
                t.truncate(n);
                Cow::Owned(t)
            }
        })
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
        sink: &mut DeltaSink,
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

    fn record(&mut self, sink: DeltaSink) -> Vec<ChatDelta> {
        for d in &sink.deltas {
            self.message.apply(d);
        }
        sink.deltas
    }
}
