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

use crate::arena::{Arena, Node, NodeId};
use crate::ast::AstId;
use crate::ast::AstNode;
use crate::error::Error;
use crate::json::Scanner;
use crate::parse::{
    Built, Engine, Entry, Link, Memo, Outcome, ParseOptions, ParseOutput, ParseResult, Resume, canonical_into, finish_output_with_order, memoizable, until_scan,
};
use crate::resume::GrowingLeaf;

/// Room in a new memo for the results of a short reply (a tool call takes about a hundred):
/// it would otherwise grow through every size up to there, rehashing each time.
const SHORT_REPLY_RESULTS: usize = 128;

/// The buffers an ended session leaves to the next one on its thread: a server opens a stream
/// per request, and a short reply spent a tenth of its time growing them anew. Kept cleared,
/// at most [`KEPT_PER_THREAD`], and only if a short reply's size (a long reply's memory goes
/// with it).
#[derive(Debug, Default)]
struct Buffers {
    input: Vec<u8>,
    memo: Memo,
    nodes: Vec<AstNode>,
    spare: Spare,
}

const KEPT_PER_THREAD: usize = 4;
/// The largest buffers kept: input bytes, and memo results or AST nodes.
const KEPT_INPUT_BYTES: usize = 16 << 10;
const KEPT_ITEMS: usize = 1 << 10;

thread_local! {
    static KEPT: std::cell::RefCell<Vec<Buffers>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Buffers {
    /// Buffers an ended session kept, or new ones.
    fn take() -> Buffers {
        let kept = KEPT.try_with(|k| k.try_borrow_mut().ok().and_then(|mut k| k.pop())).ok().flatten();
        kept.unwrap_or_else(|| Buffers { memo: Memo::with_capacity(SHORT_REPLY_RESULTS), ..Buffers::default() })
    }

    /// Clears and keeps the buffers for the next session on this thread, if small enough and
    /// not too many are kept already.
    fn keep(mut self) {
        let small = self.input.capacity() <= KEPT_INPUT_BYTES && self.memo.map.capacity() <= KEPT_ITEMS && self.nodes.capacity() <= KEPT_ITEMS;
        if !small {
            return;
        }
        self.input.clear();
        self.memo.map.clear();
        self.memo.generation = 0;
        self.nodes.clear();
        let Spare { out, chain, order, path, ops } = &mut self.spare;
        out.clear();
        chain.clear();
        order.clear();
        path.clear();
        ops.clear();
        let _ = KEPT.try_with(|k| {
            if let Ok(mut k) = k.try_borrow_mut()
                && k.len() < KEPT_PER_THREAD
            {
                k.push(self);
            }
        });
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let input = std::mem::take(&mut self.input);
        let memo = std::mem::take(&mut self.memo);
        let nodes = std::mem::take(&mut self.nodes);
        let spare = std::mem::take(&mut self.spare);
        Buffers { input, memo, nodes, spare }.keep();
    }
}

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
    frontier: Option<Frontier>,
    /// The leanest frontier, when it applies (see [`JsonFront`]).
    json: Option<JsonFront>,
    /// The output of the last parse.
    last: ParseOutput,
    /// The last update kept the AST before it and only moved the ends of its partial nodes.
    in_place: bool,
    /// Buffers kept between updates, so a structural token allocates nothing.
    spare: Spare,
}

/// The buffers of a climb's parses and of the frontiers it replaces.
#[derive(Debug, Default)]
struct Spare {
    /// A parse's out stack and path.
    out: Vec<AstId>,
    chain: Vec<Link>,
    /// The session ids of the nodes a splice wrote.
    order: Vec<AstId>,
    /// A frontier's path and ops.
    path: Vec<Step>,
    ops: Vec<Op>,
}

/// One step of moving the partial path's ends after the leaf grew.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Lookahead: the span is empty at this position and holds no invalid bytes.
    Reset(usize),
    /// Bytes matched before the path child hold invalid UTF-8.
    Invalid,
    /// A tag/rule AST node: in the session's nodes, and at this index of the kept output.
    Label { node: Option<u32>, out: Option<u32> },
}

/// The last partial parse ended in need-more-input along a path on which nothing else touched
/// the end: the next parse only has to resume the leaf and, while it still needs more input,
/// move the ends of the partial nodes on the path.
#[derive(Debug)]
struct Frontier {
    /// The leaf node and its position.
    leaf: (NodeId, usize),
    /// What each link above the leaf does to the leaf's (end, invalid), leaf to root; links that
    /// pass the child's result through are left out.
    ops: Vec<Op>,
    /// The leaf's resume state (moved out of its memo entry while the frontier lives).
    leaf_resume: Option<Resume>,
    /// The leaf is inside a lookahead.
    peeking: bool,
    /// The path, leaf to root, each link with what it does to the ends passed up: when the
    /// leaf stops needing input, a parse from one of its links rebuilds the part below it (see
    /// [`Session::climb`]).
    path: Vec<Step>,
}

/// A link of the frontier's path and its [`Op`] (a tag's or rule's holds its node's index in
/// the kept output).
type Step = (Link, Option<Op>);

/// The common frontier of a streaming tool argument: a JSON/Python scanner in the middle of a
/// value with only tags/rules above it. An update then resumes the scanner and stores the new end
/// into the partial output nodes; the session's own copies of those nodes are written once, when
/// this ends (from the kept output's end and `invalid`). While it lives it owns the leaf's
/// scanner; ending it hands the scanner back to the [`Frontier`].
#[derive(Debug)]
struct JsonFront {
    scanner: Box<Scanner>,
    /// Indices into `last.ast.nodes` of the partial labels on the path: the first two inline
    /// (usually a tool call and its argument; `usize::MAX` for none), the others in `more`.
    outs: [usize; 2],
    more: Box<[usize]>,
    /// Indices into the session's nodes of the same labels.
    nodes: Box<[usize]>,
    /// The path's invalid-UTF-8 flag as last stored.
    invalid: bool,
}

impl Session {
    /// A session over an empty input.
    ///
    /// ```
    /// use peg_runtime::{Arena, Outcome, Session};
    /// let mut s = Session::new(Arena::build(|p| p.json()).unwrap().into());
    /// assert_eq!(s.output().result.outcome, Outcome::Fail); // nothing parsed yet
    /// s.push(b"[1, 2");
    /// assert_eq!(s.parse().unwrap().result.outcome, Outcome::NeedMoreInput);
    /// ```
    pub fn new(arena: Arc<Arena>) -> Session {
        Session::with_options(arena, ParseOptions::default())
    }

    /// A session with explicit limits.
    pub fn with_options(arena: Arc<Arena>, options: ParseOptions) -> Session {
        let Buffers { input, memo, nodes, spare } = Buffers::take();
        Session { arena, input, memo, nodes, options, frontier: None, json: None, last: empty_output(), in_place: false, spare }
    }

    /// The grammar.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Appends a chunk of input.
    ///
    /// ```
    /// use peg_runtime::{Arena, Session};
    /// let mut s = Session::new(Arena::build(|p| p.rest()).unwrap().into());
    /// s.push(b"Hel");
    /// s.push(b"lo");
    /// assert_eq!(s.input(), b"Hello");
    /// ```
    #[inline(always)]
    pub fn push(&mut self, chunk: &[u8]) {
        append(&mut self.input, chunk);
    }

    /// All input pushed so far.
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// Parses all input so far as partial input; equals `arena.parse(self.input(), true)`.
    pub fn parse(&mut self) -> Result<ParseOutput, Error> {
        self.update().cloned()
    }

    /// [`Session::parse`] without copying the output: the result is kept in the session and
    /// borrowed. The cheapest way to follow a stream token by token.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::{Arena, Outcome, Session};
    /// let arena = Arc::new(Arena::build(|p| p.tag("content", p.until("<end>")) + "<end>").unwrap());
    /// let mut s = Session::new(arena);
    /// s.push(b"Hello, wor");
    /// let out = s.update().unwrap();
    /// assert_eq!(out.result.outcome, Outcome::NeedMoreInput);
    /// assert_eq!(out.ast.nodes[0].end, 10);
    /// ```
    #[inline]
    pub fn update(&mut self) -> Result<&ParseOutput, Error> {
        if let Some(j) = self.json.as_mut() {
            // The leanest step: no memo access, no allocation, a scanner resume and a few stores.
            let r = j.scanner.run_partial_inline(&self.input);
            if r.outcome == Outcome::NeedMoreInput {
                let nodes = &mut self.last.ast.nodes;
                if r.invalid_utf8 != j.invalid {
                    j.invalid = r.invalid_utf8;
                    for &k in j.outs.iter().chain(j.more.iter()) {
                        if let Some(n) = nodes.get_mut(k) {
                            n.invalid_utf8 = r.invalid_utf8;
                        }
                    }
                }
                for k in j.outs {
                    if let Some(n) = nodes.get_mut(k) {
                        n.end = r.end;
                    }
                }
                for &k in j.more.iter() {
                    if let Some(n) = nodes.get_mut(k) {
                        n.end = r.end;
                    }
                }
                self.last.result.end = r.end;
                self.in_place = true;
                return Ok(&self.last);
            }
            // Rerunning a scanner that stopped is idempotent, so `fast` takes over from here.
            self.end_json();
        }
        match self.fast() {
            Some(in_place) => self.in_place = in_place,
            None => {
                self.in_place = false;
                self.run(true)?;
            }
        }
        Ok(&self.last)
    }

    /// Parses all input so far as complete input; equals `arena.parse(self.input(), false)`.
    /// The session stays usable: pushing more input afterwards continues the stream.
    ///
    /// ```
    /// use peg_runtime::{Arena, Outcome, Session};
    /// let mut s = Session::new(Arena::build(|p| p.literal("a") + p.end()).unwrap().into());
    /// s.push(b"a");
    /// assert_eq!(s.finish().unwrap().result.outcome, Outcome::Success);
    /// s.push(b"b"); // the stream goes on
    /// assert_eq!(s.finish().unwrap().result.outcome, Outcome::Fail);
    /// ```
    pub fn finish(&mut self) -> Result<ParseOutput, Error> {
        self.finish_in_place()?;
        Ok(self.last.clone())
    }

    /// [`Session::finish`] keeping the output in the session (see [`Session::output`]).
    pub(crate) fn finish_in_place(&mut self) -> Result<&ParseOutput, Error> {
        self.in_place = false;
        self.run(false)?;
        Ok(&self.last)
    }

    /// The output of the last [`parse`](Session::parse), [`update`](Session::update) or
    /// [`finish`](Session::finish) (empty and failed before the first).
    pub fn output(&self) -> &ParseOutput {
        &self.last
    }

    /// Drops all input and memoized state.
    pub fn reset(&mut self) {
        self.input.clear();
        self.memo = Memo::default();
        self.nodes.clear();
        self.frontier = None;
        self.json = None;
        self.last = empty_output();
        self.in_place = false;
    }

    /// Whether the last [`update`](Session::update) kept the output before it and only moved
    /// the ends of its partial nodes, those on the path to the end of input (a streaming text
    /// or argument grew): a caller that read the last output needs to look at nothing else.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::{Arena, Session};
    /// let arena = Arc::new(Arena::build(|p| p.tag("content", p.until("<end>")) + "<end>").unwrap());
    /// let mut s = Session::new(arena);
    /// s.push(b"Hello");
    /// s.update().unwrap();
    /// s.push(b", world");
    /// s.update().unwrap();
    /// assert!(s.grew_in_place());
    /// s.push(b"<end>");
    /// s.update().unwrap();
    /// assert!(!s.grew_in_place());
    /// ```
    pub fn grew_in_place(&self) -> bool {
        self.in_place
    }

    /// The leaf the last update stopped in, when only it can take more input (the end of the
    /// path to the end of input, outside any lookahead) and it is an `until` or a scanner of
    /// strings: where it started, and what it is.
    pub(crate) fn growing_leaf(&self) -> Option<(usize, GrowingLeaf<'_>)> {
        let f = self.frontier.as_ref()?;
        // A leaf inside a lookahead grows no text: the text it peeks past ended where the
        // lookahead starts.
        if f.peeking {
            return None;
        }
        let (id, pos) = f.leaf;
        match self.arena.node(id) {
            Node::Until { delimiters } => Some((pos, GrowingLeaf::Until(id, self.arena.searcher(id)?, delimiters))),
            node if node.scans_strings() => Some((pos, GrowingLeaf::Scanner)),
            _ => None,
        }
    }

    /// Ends the [`JsonFront`]: writes the session's copies of the path's nodes and hands the
    /// scanner back to the frontier.
    #[cold]
    fn end_json(&mut self) {
        let Some(j) = self.json.take() else { return };
        for &a in j.nodes.iter() {
            if let Some(n) = self.nodes.get_mut(a) {
                n.end = self.last.result.end;
                n.invalid_utf8 = j.invalid;
            }
        }
        if let Some(f) = self.frontier.as_mut() {
            f.leaf_resume = Some(Resume::Json(j.scanner));
        }
    }

    /// The frontier fast path, updating `self.last`: whether only the ends of the path moved;
    /// `None` when the slow path must run.
    #[inline(never)]
    fn fast(&mut self) -> Option<bool> {
        let f = self.frontier.as_mut()?;
        let arena = &*self.arena;
        let (leaf, pos) = f.leaf;
        self.memo.generation += 1;
        let generation = self.memo.generation;
        // A JSON/Python scanner in the middle of a value (the common case while a tool argument
        // streams) continues in place.
        if let Some(Resume::Json(sc)) = f.leaf_resume.as_mut() {
            let r = sc.run(&self.input, true);
            if r.outcome == Outcome::NeedMoreInput {
                let (end, invalid) = (r.end, r.invalid_utf8);
                apply_ops(f.ops.iter().copied(), end, invalid, &mut self.nodes, &mut self.last);
                return Some(true);
            }
        }
        let step = match (arena.node(leaf), arena.searcher(leaf)) {
            // Streaming content: an `until` continues its search directly.
            (Node::Until { delimiters }, Some(searcher)) => Some(until_scan(&self.input, true, searcher, delimiters, pos, f.leaf_resume.take())),
            _ => Engine::new(arena, &self.input, true, self.options, &mut self.nodes, None).eval_leaf(leaf, pos, f.leaf_resume.take()),
        };
        let Some((r, resume)) = step else {
            if let Some(f) = self.frontier.take() {
                self.recycle(f);
            }
            return None;
        };
        let resume = if r.touched { resume } else { None };
        if r.outcome != Outcome::NeedMoreInput {
            // The parses that follow (from a link of the path, or the slow path's from the
            // root, which runs in this same generation) find the leaf's result.
            if memoizable(arena.node(leaf)) {
                let entry = Entry { res: r, generation, ast: Built::NONE, resume };
                self.memo.map.insert((leaf.0, pos), entry);
            }
            if self.climb() {
                return Some(false);
            }
            self.memo.generation -= 1;
            return None;
        }
        f.leaf_resume = resume;
        apply_ops(f.ops.iter().copied(), r.end, r.invalid, &mut self.nodes, &mut self.last);
        Some(true)
    }

    /// The frontier's leaf stopped needing input (it matched, or failed): re-parses the path's
    /// links upwards from the leaf's parent until one still needs more input along a path the
    /// frontier can follow. Everything above that link is unchanged, as in a parse from the
    /// root with the memo: its links' earlier children did not look at the end of input, and
    /// they pass the link's need-more-input up as before. So the output keeps all but what the
    /// link built, which is a suffix of it in pre-order (nothing lies right of the path), and
    /// only the path's ends move. A token that completes a literal costs a parse of the
    /// literal's parent, not of the whole output. `false` when no link below the root qualifies
    /// (the slow path then parses from the root, in this generation, reusing what was parsed).
    fn climb(&mut self) -> bool {
        let Some(f) = self.frontier.take() else { return false };
        let followed = self.climb_from(&f);
        self.recycle(f);
        followed
    }

    fn climb_from(&mut self, f: &Frontier) -> bool {
        let top = f.path.len() - 1;
        for k in 1..top {
            let (link, _) = f.path[k];
            let arena = &*self.arena;
            let mut engine = Engine::new(arena, &self.input, true, self.options, &mut self.nodes, Some(&mut self.memo)).nested(top - k);
            engine.out = cleared(&mut self.spare.out);
            engine.chain = cleared(&mut self.spare.chain);
            // An error (nesting too deep) is the slow path's to report.
            let r = engine.parse_node(link.id, link.pos);
            let (built, chain) = (std::mem::take(&mut engine.out), std::mem::take(&mut engine.chain));
            drop(engine);
            let followed = match r {
                Ok(r) if r.outcome == Outcome::NeedMoreInput => {
                    if !follows_to_a_leaf(arena, &chain, (link.id, link.pos)) {
                        return false;
                    }
                    let at = self.splice(&f.path[k..], &built);
                    let order = std::mem::take(&mut self.spare.order);
                    let arena = &*self.arena;
                    let mut path = cleared(&mut self.spare.path);
                    path.extend(chain.iter().map(|&l| step_of(arena, Link { mark: l.mark + link.mark, ..l }, &order, at)));
                    path.extend_from_slice(&f.path[k + 1..]);
                    apply_ops(f.path[k + 1..].iter().filter_map(|s| s.1), r.end, r.invalid, &mut self.nodes, &mut self.last);
                    self.follow(path);
                    self.spare.order = order;
                    true
                }
                Ok(_) => false,
                Err(_) => return false,
            };
            (self.spare.out, self.spare.chain) = (built, chain);
            if followed {
                return true;
            }
        }
        false
    }

    /// Keeps the buffers of a frontier that ended.
    fn recycle(&mut self, f: Frontier) {
        (self.spare.path, self.spare.ops) = (f.path, f.ops);
    }

    /// Replaces in the kept output (and the session's own node of the nearest tag/rule above)
    /// what the link `path[0]` built before with `built`, its new top-level nodes; returns
    /// where the new nodes start in the output (their ids in the session's nodes are left in
    /// `spare.order`).
    fn splice(&mut self, path: &[Step], built: &[AstId]) -> usize {
        let arena = &*self.arena;
        let mark = path[0].0.mark;
        let ast = &mut self.last.ast;
        let order = &mut self.spare.order;
        order.clear();
        for (l, op) in &path[1..] {
            match (arena.node(l.id), op) {
                // Need more input drops what a lookahead's or an atomic's child built.
                (Node::Peek { .. } | Node::Negate { .. } | Node::Atomic { .. }, _) => return ast.nodes.len(),
                (Node::Tag { .. } | Node::Rule { .. }, op) => {
                    let Some(Op::Label { out: Some(parent), .. }) = op else { return ast.nodes.len() };
                    let parent = *parent as usize;
                    let keep = (mark - l.mark) as usize;
                    let at = ast.nodes[parent].children.get(keep).map_or(ast.nodes.len(), |c| c.0 as usize);
                    ast.nodes.truncate(at);
                    ast.nodes[parent].children.truncate(keep);
                    canonical_into(&self.nodes, built, Some(parent), ast, order);
                    if let Some(n) = l.ast.and_then(|a| self.nodes.get_mut(a.0 as usize)) {
                        n.children.truncate(keep);
                        n.children.extend_from_slice(built);
                    }
                    return at;
                }
                _ => {}
            }
        }
        let keep = mark as usize;
        let at = ast.roots.get(keep).map_or(ast.nodes.len(), |c| c.0 as usize);
        ast.nodes.truncate(at);
        ast.roots.truncate(keep);
        canonical_into(&self.nodes, built, None, ast, order);
        at
    }

    /// Makes `path` (leaf to root, a parse's path to where it needed more input) the frontier,
    /// with the scanner lane when it applies.
    fn follow(&mut self, path: Vec<Step>) {
        let mut ops = cleared(&mut self.spare.ops);
        ops.extend(path[1..].iter().filter_map(|&(_, op)| op));
        let leaf = (path[0].0.id, path[0].0.pos);
        let mut leaf_resume = self.memo.map.get_mut(&(leaf.0.0, leaf.1)).and_then(|e| e.resume.take());
        let labels_only = ops.iter().all(|op| matches!(op, Op::Label { .. }));
        let json_leaf = if labels_only { leaf_resume.take_if(|r| matches!(r, Resume::Json(_))) } else { None };
        if let Some(Resume::Json(scanner)) = json_leaf {
            let mut outs = ops.iter().filter_map(|op| match *op {
                Op::Label { out: Some(k), .. } => Some(k as usize),
                _ => None,
            });
            let first = [outs.next().unwrap_or(usize::MAX), outs.next().unwrap_or(usize::MAX)];
            let more = outs.collect();
            let nodes = ops
                .iter()
                .filter_map(|op| match *op {
                    Op::Label { node: Some(a), .. } => Some(a as usize),
                    _ => None,
                })
                .collect();
            let invalid = scanner.invalid_utf8();
            self.json = Some(JsonFront { scanner, outs: first, more, nodes, invalid });
        }
        let peeking = ops.iter().any(|op| matches!(op, Op::Reset(_)));
        self.frontier = Some(Frontier { leaf, ops, leaf_resume, peeking, path });
    }

    /// A parse from the root (with the memo), kept as the last output.
    #[inline(never)]
    fn run(&mut self, partial: bool) -> Result<(), Error> {
        self.end_json();
        if let Some(mut f) = self.frontier.take() {
            // Hand the leaf's latest state back to its memo entry.
            let (leaf, pos) = f.leaf;
            if let Some(e) = self.memo.map.get_mut(&(leaf.0, pos)) {
                e.resume = f.leaf_resume.take();
            }
            self.recycle(f);
        }
        let arena = &*self.arena;
        let (output, order, links) = memo_parse(arena, &self.input, partial, self.options, &mut self.nodes, &mut self.memo)?;
        let root = (arena.resolve(arena.root()), 0);
        let follows = partial && output.result.outcome == Outcome::NeedMoreInput && follows_to_a_leaf(arena, &links, root);
        self.last = output;
        if follows {
            let mut path = cleared(&mut self.spare.path);
            path.extend(links.into_iter().map(|l| step_of(arena, l, &order, 0)));
            self.follow(path);
        }
        Ok(())
    }
}

/// One parse from the root with a memo of earlier parses of the same (or a shorter) input:
/// the output, the order of its AST nodes, and the chain of nodes on the path to where the
/// parse stopped.
fn memo_parse(
    arena: &Arena,
    input: &[u8],
    partial: bool,
    options: ParseOptions,
    nodes: &mut Vec<AstNode>,
    memo: &mut Memo,
) -> Result<(ParseOutput, Vec<AstId>, Vec<Link>), Error> {
    memo.generation += 1;
    let mut engine = Engine::new(arena, input, partial, options, nodes, Some(memo));
    // Entries written before an error are consistent; nothing to undo.
    let r = engine.parse_node(arena.root(), 0)?;
    let roots = std::mem::take(&mut engine.out);
    let links = std::mem::take(&mut engine.chain);
    drop(engine);
    let (output, order) = finish_output_with_order(nodes, &roots, r);
    Ok((output, order, links))
}

/// A whole input parsed as partial, then as complete: the complete parse reuses every rule
/// result of the partial one that did not look at the end of input, as a [`Session`] would,
/// but over the caller's text (a session copies its input, and a long copy's fresh pages
/// cost more than the parse).
#[cfg(feature = "chat")]
pub(crate) struct TwoPass<'a> {
    arena: &'a Arena,
    nodes: Vec<AstNode>,
    memo: Memo,
}

#[cfg(feature = "chat")]
impl<'a> TwoPass<'a> {
    pub(crate) fn new(arena: &'a Arena) -> TwoPass<'a> {
        TwoPass { arena, nodes: Vec::new(), memo: Memo::with_capacity(SHORT_REPLY_RESULTS) }
    }

    /// Equals `arena.parse(input, partial)`. Every call reads the same input (the memo holds
    /// results of earlier calls at its positions); the partial parse comes first.
    pub(crate) fn parse(&mut self, input: &[u8], partial: bool) -> Result<ParseOutput, Error> {
        Ok(memo_parse(self.arena, input, partial, ParseOptions::default(), &mut self.nodes, &mut self.memo)?.0)
    }
}

/// Appends a chunk to a session's input (this one's, and the sessions `chat_peg!` generates).
#[inline(always)]
pub(crate) fn append(input: &mut Vec<u8>, chunk: &[u8]) {
    // Token-sized chunks: copies of a constant size compile to a move, not a `memcpy` call.
    macro_rules! small {
        ($($n:literal)*) => {
            match chunk.len() {
                $($n => if let Ok(a) = <&[u8; $n]>::try_from(chunk) {
                    input.extend_from_slice(a);
                    return;
                },)*
                _ => {}
            }
        };
    }
    small!(1 2 3 4 5 6 7 8);
    input.extend_from_slice(chunk);
}

fn empty_output() -> ParseOutput {
    ParseOutput { result: ParseResult { outcome: Outcome::Fail, start: 0, end: 0 }, ast: Default::default() }
}

/// Whether `links` (leaf first, as a parse that needed more input recorded them) go from a leaf
/// up to `top` with nothing but the path touching the end of input: the frontier can follow.
fn follows_to_a_leaf(arena: &Arena, links: &[Link], top: (NodeId, usize)) -> bool {
    links.first().is_some_and(|l| arena.node(l.id).children().is_empty() && !matches!(arena.node(l.id), Node::Ref { .. }))
        && links.last().is_some_and(|l| (l.id, l.pos) == top)
        && links.iter().all(|l| l.clean)
}

/// A path's link with its op; `order[i]` is the session node at output index `at + i`.
fn step_of(arena: &Arena, l: Link, order: &[AstId], at: usize) -> Step {
    let out = l.ast.and_then(|a| order.iter().position(|&o| o == a)).map(|i| (at + i) as u32);
    (l, op_of(arena, &l, out))
}

/// What a link does to the end and invalid flag passed up from below it; `out`: the index of
/// a tag's or rule's node in the kept output.
fn op_of(arena: &Arena, l: &Link, out: Option<u32>) -> Option<Op> {
    match arena.node(l.id) {
        Node::Peek { .. } | Node::Negate { .. } => Some(Op::Reset(l.pos)),
        Node::Sequence { .. } | Node::Repeat { .. } if l.pre_invalid => Some(Op::Invalid),
        Node::Tag { .. } | Node::Rule { .. } => Some(Op::Label { node: l.ast.map(|a| a.0), out }),
        _ => None,
    }
}

/// `v`'s buffer, emptied, leaving an empty `Vec` (no allocation) behind.
fn cleared<T>(v: &mut Vec<T>) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v
}

/// Moves the ends of the partial path after its leaf grew to (`end`, `invalid`).
#[inline]
fn apply_ops(ops: impl IntoIterator<Item = Op>, end: usize, invalid: bool, nodes: &mut [AstNode], last: &mut ParseOutput) {
    let (mut end, mut invalid) = (end, invalid);
    for op in ops {
        match op {
            Op::Reset(at) => {
                end = at;
                invalid = false;
            }
            Op::Invalid => invalid = true,
            Op::Label { node, out } => {
                if let Some(a) = node {
                    let n = &mut nodes[a as usize];
                    n.end = end;
                    n.invalid_utf8 = invalid;
                }
                if let Some(k) = out {
                    let n = &mut last.ast.nodes[k as usize];
                    n.end = end;
                    n.invalid_utf8 = invalid;
                }
            }
        }
    }
    last.result.end = end;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn chat() -> Arc<Arena> {
        Arc::new(
            Arena::build(|p| {
                p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>")
                    + p.tag("content", p.until("<tool_call>"))
                    + p.optional(p.tag("tool", "<tool_call>" + p.tag("args", p.json()) + "</tool_call>"))
                    + p.end()
            })
            .unwrap(),
        )
    }

    /// Streams `text` in pieces of `chunk` bytes: every update, and the finish, equal the
    /// one-shot parse of the input so far.
    fn streams_like_one_shot(arena: &Arc<Arena>, text: &[u8], chunk: usize) -> Session {
        let mut s = Session::new(arena.clone());
        for (i, c) in text.chunks(chunk).enumerate() {
            s.push(c);
            let at = ((i + 1) * chunk).min(text.len());
            assert_eq!(s.update().unwrap(), &arena.parse(&text[..at], true).unwrap(), "{:?} in chunks of {chunk}, at {at}", String::from_utf8_lossy(text));
        }
        assert_eq!(s.finish().unwrap(), arena.parse(text, false).unwrap(), "{:?}", String::from_utf8_lossy(text));
        s
    }

    #[test]
    fn follows_a_stream_and_matches_one_shot() {
        let arena = chat();
        let text = "<think>a\u{e9}b</think>Hello \u{1F600} world<tool_call>{\"k\": [1, \"\u{2713}\"]}</tool_call>";
        let mut s = Session::new(arena.clone());
        for (i, b) in text.as_bytes().iter().enumerate() {
            s.push(std::slice::from_ref(b));
            let want = arena.parse(&text.as_bytes()[..=i], true).unwrap();
            assert_eq!(s.update().unwrap(), &want, "byte {i}");
            assert_eq!(s.output(), &want);
        }
        assert_eq!(s.finish().unwrap(), arena.parse(text.as_bytes(), false).unwrap());
        assert_eq!(s.output().result.outcome, Outcome::Success);
    }

    #[test]
    fn a_new_session_takes_an_ended_ones_buffers_cleared() {
        let arena = chat();
        drop(streams_like_one_shot(&arena, b"<think>long enough to grow the buffers</think>Hi<tool_call>{\"a\": [1, 2]}</tool_call>", 3));
        let s = Session::new(arena.clone());
        assert!(s.input.capacity() > 0 && s.input.is_empty() && s.memo.map.is_empty() && s.nodes.is_empty(), "kept and cleared");
        drop(s);
        // And parses as a new one: a different text, every prefix.
        streams_like_one_shot(&arena, b"Hello<tool_call>{\"b\": \"x\"}</tool_call>", 2);
        // A long reply's buffers are not kept.
        let long = format!("{}<tool_call>{{}}</tool_call>", "x".repeat(KEPT_INPUT_BYTES + 1));
        drop(streams_like_one_shot(&arena, long.as_bytes(), 4096));
        KEPT.with(|k| assert!(k.borrow().iter().all(|b| b.input.capacity() <= KEPT_INPUT_BYTES)));
    }

    #[test]
    fn json_argument_fast_path_matches_one_shot() {
        // Long digit runs and plain string runs take the scanner's and the session's fast steps.
        let arena = chat();
        // Every chunk boundary also falls inside escapes, `\u` sequences, a surrogate pair,
        // multi-byte and invalid UTF-8, words and numbers.
        let text: &[u8] = b"Hi<tool_call>{\"n\": 1234567890123.25e12345, \"s\": \"plain text plain text \\\"q\\\" caf\xC3\xA9 \\u00e9 \\ud83d\\ude00 \xF0\x9F\x98\x80 more plain\", \"a\": [10, -0.5E+3, true, null, false], \"bad\": \"x\xFFy\\\\\"}</tool_call>";
        for chunk in 1..9 {
            let s = streams_like_one_shot(&arena, text, chunk);
            assert_eq!(s.output().result.outcome, Outcome::Success);
            assert!(s.output().ast.nodes.iter().any(|n| n.tag.as_deref() == Some("args") && n.invalid_utf8));
        }
    }

    #[test]
    fn finish_mid_stream_then_continue_and_reset() {
        let arena = chat();
        let mut s = Session::new(arena.clone());
        s.push(b"Hi <tool_call>{\"a\": 1");
        assert_eq!(s.finish().unwrap().result.outcome, Outcome::Fail);
        s.push(b"}</tool_call>");
        assert_eq!(s.parse().unwrap(), arena.parse(s.input(), true).unwrap());
        assert_eq!(s.finish().unwrap().result.outcome, Outcome::Success);
        s.reset();
        assert!(s.input().is_empty());
        s.push(b"x");
        assert_eq!(s.parse().unwrap(), arena.parse(b"x", true).unwrap());
    }

    #[test]
    fn invalid_utf8_streams_like_one_shot() {
        let arena = chat();
        let text: &[u8] = b"ab\xFF\xE2\x82cd\xE2\x82\xAC<tool_call>{\"s\": \"x\xC3\"}</tool_call>";
        let s = streams_like_one_shot(&arena, text, 3);
        assert!(s.output().ast.nodes.iter().any(|n| n.tag.as_deref() == Some("content") && n.invalid_utf8));
    }

    /// Nested sequences, choices that change their mind, repetitions, lookaheads, atomics,
    /// rules and tags: the frontier's leaf completes inside each of them.
    fn structured() -> Arc<Arena> {
        Arc::new(
            Arena::build(|p| {
                let name = p.tag("name", p.chars("[a-z_]", 1, None));
                let args = p.tag("args", p.json());
                let call = p.rule("call", "<call" + p.space() + name + p.space() + ">" + p.space() + p.optional(args) + p.space() + "</call>");
                let pair = p.atomic(p.tag("pair", "[" + p.tag("key", p.chars("[a-z]", 1, Some(3))) + "=" + p.tag("value", p.until("]")) + "]"));
                let nested = p.rule("nested", "(" + p.zero_or_more(p.rule_ref("nested") | p.tag("leaf", p.chars("[a-z]", 1, None))) + ")");
                let word = p.tag("word", p.chars("[a-z ]", 1, None));
                let quoted = p.tag("quoted", p.atomic("'" + p.tag("q", p.chars("[a-z]", 0, None)) + "'/"));
                let guarded = p.negate("<call") + p.tag("other", "<" + p.chars("[a-z]", 0, None) + ">");
                p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>" + p.space())
                    + p.zero_or_more(
                        p.tag("item", call | pair | nested | guarded | quoted | word)
                            + p.optional(p.peek(p.space() + p.tag("ahead", "<") + "call") + p.space()),
                    )
                    + p.end()
            })
            .unwrap(),
        )
    }

    #[test]
    fn structure_completing_mid_stream_matches_one_shot() {
        const PIECES: &[&str] = &[
            "<call get_time>{\"tz\": [1, \"x\"]}</call>",
            "<call  f > </call>",
            "<call g>{}",
            "[ab=c d]",
            "[abcd=x]",
            "(a(b)(c(d))e)",
            "(a(b",
            "<br>",
            "<call",
            "hello world",
            " ",
            "<think>hm</think> ",
            "]",
            "caf\u{e9}",
            "'abc'/",
            "'a'",
        ];
        let arena = structured();
        let mut rng = crate::test_rng::Rng(0x5e55);
        for case in 0..300 {
            let text: String = (0..1 + rng.below(6)).map(|_| rng.pick(PIECES)).collect();
            let bytes = text.as_bytes();
            let mut s = Session::new(arena.clone());
            let mut at = 0;
            while at < bytes.len() {
                let next = (at + 1 + rng.below(if case % 2 == 0 { 1 } else { 6 })).min(bytes.len());
                s.push(&bytes[at..next]);
                at = next;
                assert_eq!(s.update().unwrap(), &arena.parse(&bytes[..at], true).unwrap(), "{text:?} at {at}");
            }
            assert_eq!(s.finish().unwrap(), arena.parse(bytes, false).unwrap(), "{text:?}");
        }
    }

    /// A value that stops fitting is kept up to there by `json_prefix`: a stream, which saw
    /// the value fit until then, reads what a one-shot parse reads.
    #[test]
    fn json_prefix_streams_like_one_shot() {
        let arena = Arc::new(
            Arena::build(|p| {
                let call = "<c>" + p.tag("args", p.json() | p.json_prefix() | p.eps()) + p.optional("</c>");
                p.zero_or_more(p.tag("call", call) | p.tag("text", p.until("<c>"))) + p.end()
            })
            .unwrap(),
        );
        let texts = [
            "<c>{\"a\": [1, 2]}</c>x",
            "<c>{\"city\": Paris}</c><c>{\"zone\": \"CET\"}</c>",
            "<c>{\"cityParis\", \"days\": 3}{</c>",
            "<c>{\"a\": \"b",
            "<c>none</c><c>[1, tru]",
        ];
        for text in texts {
            for chunk in 1..5 {
                streams_like_one_shot(&arena, text.as_bytes(), chunk);
            }
        }
        let out = arena.parse(texts[1].as_bytes(), false).unwrap();
        let args: Vec<_> = out.ast.find_by_tag("args").into_iter().map(|a| out.ast.text(a, texts[1].as_bytes()).into_owned()).collect();
        assert_eq!(args, ["{\"city\": ", "{\"zone\": \"CET\"}"]);
    }

    #[test]
    fn too_deep_is_an_error_not_a_crash() {
        let arena = Arc::new(Arena::build(|p| p.rule("n", ("(" + p.rule_ref("n") + ")") | p.eps())).unwrap());
        let mut s = Session::with_options(arena, ParseOptions::default().max_depth(50));
        s.push("(".repeat(100).as_bytes());
        assert_eq!(s.parse().unwrap_err().kind(), ErrorKind::TooDeep);
        assert_eq!(s.finish().unwrap_err().kind(), ErrorKind::TooDeep);
    }
}
