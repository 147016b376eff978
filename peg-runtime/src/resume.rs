//! [`Resume`]: what a stream needs of an incremental parser, so that a
//! [`ChatStream`](crate::chat::ChatStream) can be driven by the runtime [`Session`] over an
//! arena or by the session of a parser `chat_peg!` generates.

use crate::arena::NodeId;
use crate::error::Error;
use crate::leaf::Delimiters;
use crate::parse::ParseOutput;
use crate::session::Session;

/// An incremental parse of input that only grows: push chunks, parse what there is so far as
/// partial input, or as complete input at the end. Its outputs must equal one-shot parses of
/// the same grammar (`Arena::parse(input, partial)`) of the input so far.
///
/// ```
/// use peg_runtime::{Arena, Outcome, Resume, Session};
/// // Any incremental parser: the runtime's `Session`, or one `chat_peg!` generates.
/// fn feed<R: Resume>(parser: &mut R, chunks: &[&str]) -> Outcome {
///     for chunk in chunks {
///         parser.push(chunk.as_bytes());
///         assert_eq!(parser.update().unwrap().result.outcome, Outcome::NeedMoreInput);
///     }
///     parser.finish().unwrap().result.outcome
/// }
/// let arena = Arena::build(|p| "[" + p.json() + "]").unwrap();
/// let mut session = Session::new(arena.into());
/// assert_eq!(feed(&mut session, &["[{\"a\"", ": 1}"]), Outcome::Fail); // no closing `]`
/// session.push(b"]");
/// assert_eq!(Resume::finish(&mut session).unwrap().result.outcome, Outcome::Success);
/// ```
pub trait Resume {
    /// Appends a chunk of input.
    fn push(&mut self, chunk: &[u8]);
    /// All input pushed so far.
    fn input(&self) -> &[u8];
    /// Parses all input so far as partial input; the output is kept and borrowed.
    fn update(&mut self) -> Result<&ParseOutput, Error>;
    /// Parses all input so far as complete input; the output is kept and borrowed. Pushing
    /// more input afterwards continues the stream.
    fn finish(&mut self) -> Result<&ParseOutput, Error>;
    /// The output of the last [`update`](Resume::update) or [`finish`](Resume::finish).
    fn output(&self) -> &ParseOutput;
    /// Whether the last [`update`](Resume::update) kept the output before it and only moved
    /// the ends of its partial nodes (see [`Session::grew_in_place`]). `false`, the default,
    /// is always correct: the stream then walks the whole output.
    fn grew_in_place(&self) -> bool {
        false
    }
    /// The leaf the last [`update`](Resume::update) stopped in, when only it can take more
    /// input: where it started, and what it is. `None`, the default, is always correct: the
    /// stream then predicts a growing text from every parser of its kind.
    #[doc(hidden)]
    fn growing_leaf(&self) -> Option<(usize, GrowingLeaf<'_>)> {
        None
    }
}

/// The leaf an incremental parse stopped in, where a chunk can extend nothing else.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum GrowingLeaf<'a> {
    /// An `until`: the node, its compiled delimiters, and the delimiters.
    Until(NodeId, &'a Delimiters, &'a [String]),
    /// A JSON or Python scanner of a value or a string.
    Scanner,
}

impl Resume for Session {
    #[inline]
    fn push(&mut self, chunk: &[u8]) {
        Session::push(self, chunk);
    }
    #[inline]
    fn input(&self) -> &[u8] {
        Session::input(self)
    }
    // Always: a stream calls it from its push and its lane's handover, and the push is the
    // hot one (a call there costs the long-argument streams ~2%).
    #[inline(always)]
    fn update(&mut self) -> Result<&ParseOutput, Error> {
        Session::update(self)
    }
    fn finish(&mut self) -> Result<&ParseOutput, Error> {
        // The output stays in the session: a stream folds it from there, no copy.
        self.finish_in_place()
    }
    #[inline]
    fn output(&self) -> &ParseOutput {
        Session::output(self)
    }
    #[inline]
    fn grew_in_place(&self) -> bool {
        Session::grew_in_place(self)
    }
    #[inline]
    fn growing_leaf(&self) -> Option<(usize, GrowingLeaf<'_>)> {
        Session::growing_leaf(self)
    }
}
