//! Incremental streaming parse: push chunks, re-parse without starting over.
//!
//! A [`Session`] memoizes every node result by (node, position). A result that did not look at
//! the end of input is final (the input only grows), so the next parse reuses it and its AST
//! nodes as they are. A result that touched the end is recomputed, but resumes from a
//! node-specific state (an `until` continues its search, a JSON scanner continues from its
//! snapshot, a repetition continues after its last final iteration). Each parse therefore
//! costs about the length of the new chunk plus the depth of the path that reaches the end of
//! input, and the results equal a one-shot [`Arena::parse`] of the same text.

use std::sync::Arc;

use crate::arena::Arena;
use crate::ast::AstNode;
use crate::error::Error;
use crate::parse::{finish_output, Engine, Memo, ParseOptions, ParseOutput};

/// A streaming parse over input that arrives in chunks.
///
/// ```
/// use std::sync::Arc;
/// use peg_runtime::{Arena, Outcome, Session};
/// let arena = Arc::new(Arena::build(|p| p.tag("content", p.until("<tool_call>")) + "<tool_call>" + p.tag("args", p.json()) + p.end()).unwrap());
/// let mut s = Session::new(arena.clone());
/// for chunk in ["Hello ", "wor", "ld<tool", "_call>{\"a\": [1,", " 2]}"] {
///     s.push(chunk.as_bytes());
///     let out = s.parse().unwrap();
///     assert_eq!(out, arena.parse(s.input(), true).unwrap());
/// }
/// let out = s.finish().unwrap();
/// assert_eq!(out.result.outcome, Outcome::Success);
/// assert_eq!(out.ast.text(out.ast.find_by_tag("args")[0], s.input()), "{\"a\": [1, 2]}");
/// ```
#[derive(Debug)]
pub struct Session {
    arena: Arc<Arena>,
    input: Vec<u8>,
    memo: Memo,
    nodes: Vec<AstNode>,
    options: ParseOptions,
}

impl Session {
    /// A session over an empty input.
    pub fn new(arena: Arc<Arena>) -> Session {
        Session::with_options(arena, ParseOptions::default())
    }

    /// A session with explicit limits.
    pub fn with_options(arena: Arc<Arena>, options: ParseOptions) -> Session {
        Session { arena, input: Vec::new(), memo: Memo::default(), nodes: Vec::new(), options }
    }

    /// The grammar.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Appends a chunk of input.
    pub fn push(&mut self, chunk: &[u8]) {
        self.input.extend_from_slice(chunk);
    }

    /// All input pushed so far.
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// Parses all input so far as partial input; equals `arena.parse(self.input(), true)`.
    pub fn parse(&mut self) -> Result<ParseOutput, Error> {
        self.run(true)
    }

    /// Parses all input so far as complete input; equals `arena.parse(self.input(), false)`.
    /// The session stays usable: pushing more input afterwards continues the stream.
    pub fn finish(&mut self) -> Result<ParseOutput, Error> {
        self.run(false)
    }

    /// Drops all input and memoized state.
    pub fn reset(&mut self) {
        self.input.clear();
        self.memo = Memo::default();
        self.nodes.clear();
    }

    fn run(&mut self, partial: bool) -> Result<ParseOutput, Error> {
        self.memo.generation = self.memo.generation.wrapping_add(1);
        let arena = &*self.arena;
        let mut engine = Engine::new(arena, &self.input, partial, self.options, &mut self.nodes, Some(&mut self.memo));
        let r = engine.parse_node(arena.root(), 0);
        let roots = std::mem::take(&mut engine.out);
        drop(engine);
        match r {
            Ok(r) => Ok(finish_output(&self.nodes, &roots, r)),
            Err(e) => {
                // Entries written before the error are consistent; nothing to undo.
                Err(e)
            }
        }
    }
}
