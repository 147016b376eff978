//! The parse engine: a recursive-descent interpreter over the arena, one-shot or incremental.
//!
//! Every node call returns an [`Outcome`] with the end position it reached, and two facts the
//! streaming [`Session`](crate::Session) relies on: whether the result *touched the end of input*
//! (looked at the end, so a longer input could change it), and whether the matched bytes hold
//! invalid UTF-8. See `DESIGN.md` for the rules.

mod dump;
pub(crate) mod utf8;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::arena::{Arena, Node, NodeId};
use crate::ast::{Ast, AstId, AstNode};
use crate::error::{Error, ErrorKind};
use crate::fx_hash::FxMap;
use crate::json::{Dialect, Scanner, Target};
use crate::leaf::{self, CharsState, Delimiters, ScanState};
use crate::quick_fail::QuickFails;

pub(crate) use crate::leaf::Res;

pub use crate::outcome::Outcome;

/// An outcome with the span it covers.
///
/// ```
/// use peg_runtime::{Arena, Outcome, ParseResult};
/// let arena = Arena::build(|p| "<call>" + p.json() + "</call>").unwrap();
/// let failed = arena.parse(br#"<call>{"a": 1}</cal!"#, false).unwrap().result;
/// // The JSON matched; `</call>` did not, at byte 14.
/// assert_eq!(failed, ParseResult { outcome: Outcome::Fail, start: 0, end: 14 });
/// let cut = arena.parse(br#"<call>{"a""#, true).unwrap().result;
/// assert_eq!((cut.outcome, cut.end), (Outcome::NeedMoreInput, 10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ParseResult {
    /// Fail, success or need-more-input.
    pub outcome: Outcome,
    /// Where the match starts (0 for a whole parse).
    pub start: usize,
    /// Where the match ends; for a failure, how far the failing path got.
    pub end: usize,
}

/// The result of a parse and the AST it built.
///
/// ```
/// use peg_runtime::{Arena, Outcome};
/// let arena = Arena::build(|p| p.tag("word", p.chars("[a-z]", 1, None))).unwrap();
/// let out = arena.parse(b"hi!", false).unwrap();
/// assert_eq!((out.result.outcome, out.result.end), (Outcome::Success, 2));
/// assert_eq!(out.ast.text(out.ast.roots[0], b"hi!"), "hi");
/// assert!(arena.parse(b"!", false).unwrap().ast.is_empty()); // failed: no AST
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseOutput {
    /// Outcome and span of the root parser.
    pub result: ParseResult,
    /// The tagged AST (empty on failure). Node ids are in pre-order.
    pub ast: Ast,
}

/// Limits of a parse. Past either limit the parse returns [`ErrorKind::TooDeep`]; JSON and
/// Python values nest on a heap stack and count against neither.
///
/// ```
/// use peg_runtime::{Arena, ErrorKind, Outcome, ParseOptions};
/// // Balanced parentheses: each level is a rule call.
/// let arena = Arena::build(|p| p.rule("nest", ("(" + p.rule_ref("nest") + ")") | p.eps())).unwrap();
/// let o = ParseOptions::default().max_depth(100).max_stack_bytes(256 << 10);
/// let shallow = format!("{}{}", "(".repeat(20), ")".repeat(20));
/// assert_eq!(arena.parse_with(shallow.as_bytes(), false, o).unwrap().result.outcome, Outcome::Success);
/// let deep = format!("{}{}", "(".repeat(200), ")".repeat(200));
/// let err = arena.parse_with(deep.as_bytes(), false, o).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::TooDeep);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseOptions {
    /// Maximum nesting of parser calls (grammar recursion through rules).
    pub max_depth: usize,
    /// Maximum bytes of native stack the recursive descent may use (measured, so the limit holds
    /// whatever the optimization level and frame sizes).
    pub max_stack_bytes: usize,
}

/// Default [`ParseOptions::max_depth`].
pub const DEFAULT_MAX_DEPTH: usize = 1000;
/// Default [`ParseOptions::max_stack_bytes`]: fits a 2 MB test thread with room for the caller.
pub const DEFAULT_MAX_STACK_BYTES: usize = 1 << 20;

impl Default for ParseOptions {
    fn default() -> ParseOptions {
        ParseOptions { max_depth: DEFAULT_MAX_DEPTH, max_stack_bytes: DEFAULT_MAX_STACK_BYTES }
    }
}

impl ParseOptions {
    /// Sets [`ParseOptions::max_depth`].
    pub fn max_depth(mut self, depth: usize) -> ParseOptions {
        self.max_depth = depth;
        self
    }

    /// Sets [`ParseOptions::max_stack_bytes`].
    pub fn max_stack_bytes(mut self, bytes: usize) -> ParseOptions {
        self.max_stack_bytes = bytes;
        self
    }
}

/// An address on the current stack frame.
#[inline(always)]
fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

impl Arena {
    /// Parses `input` from its start with the root parser. `partial`: the input may continue
    /// (streaming); whatever is cut by its end gives [`Outcome::NeedMoreInput`].
    ///
    /// `Err` only for resource limits (nesting too deep); a non-match is `Ok` with
    /// [`Outcome::Fail`].
    ///
    /// ```
    /// use peg_runtime::{Arena, Outcome};
    /// let arena = Arena::build(|p| {
    ///     p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>")
    ///         + p.tag("content", p.rest())
    /// })
    /// .unwrap();
    /// let out = arena.parse(b"<think>hm</think>Hi", false).unwrap();
    /// assert_eq!(out.result.outcome, Outcome::Success);
    /// let input = b"<think>hm</think>Hi";
    /// let r = out.ast.find_by_tag("reasoning")[0];
    /// assert_eq!(out.ast.text(r, input), "hm");
    ///
    /// let out = arena.parse(b"<think>still thinking</th", true).unwrap();
    /// assert_eq!(out.result.outcome, Outcome::NeedMoreInput);
    /// let r = out.ast.find_by_tag("reasoning")[0];
    /// assert!(out.ast.node(r).partial);
    /// ```
    pub fn parse(&self, input: &[u8], partial: bool) -> Result<ParseOutput, Error> {
        self.parse_with(input, partial, ParseOptions::default())
    }

    /// [`Arena::parse`] with explicit limits.
    pub fn parse_with(&self, input: &[u8], partial: bool, options: ParseOptions) -> Result<ParseOutput, Error> {
        self.parse_from_root(input, partial, options, true)
    }

    /// A one-shot parse; `quick`: nodes that fail at once are answered without a call (off
    /// only to test that it changes nothing).
    fn parse_from_root(&self, input: &[u8], partial: bool, options: ParseOptions, quick: bool) -> Result<ParseOutput, Error> {
        let mut nodes = Vec::new();
        let mut engine = Engine::new(self, input, partial, options, &mut nodes, None);
        if !quick {
            engine.quick = None;
        }
        let r = engine.parse_node(self.root(), 0)?;
        let roots = std::mem::take(&mut engine.out);
        Ok(finish_output(&nodes, &roots, r))
    }
}

#[cfg(test)]
impl Arena {
    /// Node `id` at `pos` by the engine, called even where it fails at once.
    pub(crate) fn eval_at(&self, id: NodeId, input: &[u8], pos: usize, partial: bool) -> Res {
        let mut nodes = Vec::new();
        let mut engine = Engine::new(self, input, partial, ParseOptions::default(), &mut nodes, None);
        engine.quick = None;
        engine.parse_node(id, pos).unwrap()
    }

    /// [`Arena::parse`] calling into every node, even where it fails at once.
    pub(crate) fn parse_every_node(&self, input: &[u8], partial: bool) -> Result<ParseOutput, Error> {
        self.parse_from_root(input, partial, ParseOptions::default(), false)
    }
}

pub(crate) fn finish_output(nodes: &[AstNode], roots: &[AstId], r: Res) -> ParseOutput {
    finish_output_with_order(nodes, roots, r).0
}

/// Also returns, for each output node, the id it had in `nodes`.
pub(crate) fn finish_output_with_order(nodes: &[AstNode], roots: &[AstId], r: Res) -> (ParseOutput, Vec<AstId>) {
    let (ast, order) = if r.outcome == Outcome::Fail { (Ast::default(), Vec::new()) } else { canonical(nodes, roots) };
    (ParseOutput { result: ParseResult { outcome: r.outcome, start: 0, end: r.end }, ast }, order)
}

/// Copies the nodes reachable from `roots` into a fresh AST numbered in pre-order, so that
/// equal parses give equal ASTs however they were computed.
fn canonical(nodes: &[AstNode], roots: &[AstId]) -> (Ast, Vec<AstId>) {
    let mut ast = Ast::default();
    let mut order = Vec::new();
    canonical_into(nodes, roots, None, &mut ast, &mut order);
    (ast, order)
}

/// Appends the subtrees of `tops` to `ast` in pre-order, as children of `parent` (roots for
/// `None`), and for each node appended the id it had in `nodes` to `order`. Recursive: the AST
/// is no deeper than the parse that built it went, in smaller frames.
pub(crate) fn canonical_into(nodes: &[AstNode], tops: &[AstId], parent: Option<usize>, ast: &mut Ast, order: &mut Vec<AstId>) {
    for &old in tops {
        let n = &nodes[old.0 as usize];
        let new = ast.nodes.len();
        order.push(old);
        ast.nodes.push(AstNode { children: Vec::with_capacity(n.children.len()), ..n.clone_shallow() });
        match parent {
            Some(p) => ast.nodes[p].children.push(AstId(new as u32)),
            None => ast.roots.push(AstId(new as u32)),
        }
        canonical_into(nodes, &n.children, Some(new), ast, order);
    }
}

impl AstNode {
    fn clone_shallow(&self) -> AstNode {
        AstNode {
            tag: self.tag.clone(),
            rule: self.rule.clone(),
            start: self.start,
            end: self.end,
            children: Vec::new(),
            partial: self.partial,
            invalid_utf8: self.invalid_utf8,
        }
    }
}

/// Where an end-touching computation stopped, so the next parse over a longer input resumes
/// instead of starting over.
#[derive(Debug, Clone)]
pub(crate) enum Resume {
    /// `until`, `rest`, `marker`.
    Scan(ScanState),
    /// `chars`, `space`.
    Chars(CharsState),
    /// JSON / Python scanner snapshot.
    Json(Box<Scanner>),
    /// `repeat`: `count` iterations that did not touch the end, ending at `pos`, with their AST.
    Repeat { count: u32, pos: usize, ast: Vec<AstId>, invalid: bool },
}

/// A memo entry: the result of a node at a position, the AST nodes it produced, and for
/// end-touching results the resume state.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) res: Res,
    pub(crate) generation: u64,
    pub(crate) ast: Built,
    pub(crate) resume: Option<Resume>,
}

/// The top-level AST ids a memoized result built: most build none or one, kept inline (a
/// stream re-parses its path at every structural token, and a box per result was most of
/// its allocations).
#[derive(Debug)]
pub(crate) enum Built {
    Few(u8, [AstId; 2]),
    Many(Box<[AstId]>),
}

impl Built {
    pub(crate) const NONE: Built = Built::Few(0, [AstId(0); 2]);

    fn of(ids: &[AstId]) -> Built {
        match *ids {
            [] => Built::NONE,
            [a] => Built::Few(1, [a, AstId(0)]),
            [a, b] => Built::Few(2, [a, b]),
            _ => Built::Many(ids.into()),
        }
    }

    fn ids(&self) -> &[AstId] {
        match self {
            Built::Few(n, ids) => &ids[..*n as usize],
            Built::Many(ids) => ids,
        }
    }
}

/// The memo table of a [`Session`](crate::Session), keyed by (node, position).
#[derive(Debug, Default)]
pub(crate) struct Memo {
    pub(crate) map: FxMap<(u32, usize), Entry>,
    /// Incremented per parse; entries of the current generation are valid even if they touched
    /// the end (the input has not changed since).
    pub(crate) generation: u64,
}

impl Memo {
    /// A memo with room for `n` results before it grows.
    pub(crate) fn with_capacity(n: usize) -> Memo {
        Memo { map: HashMap::with_capacity_and_hasher(n, Default::default()), generation: 0 }
    }
}

pub(crate) struct Engine<'e> {
    arena: &'e Arena,
    input: &'e [u8],
    partial: bool,
    max_depth: usize,
    max_stack: usize,
    stack_base: usize,
    depth: usize,
    nodes: &'e mut Vec<AstNode>,
    /// The top-level AST ids produced by the calls in progress (a stack shared by all frames).
    pub(crate) out: Vec<AstId>,
    memo: Option<&'e mut Memo>,
    /// Session partial parses: the path of the need-more-input result, leaf first.
    pub(crate) chain: Vec<Link>,
    /// Set by a combinator right before it passes a child's need-more-input up:
    /// (something else it ran touched the end, the bytes it matched before that child are invalid).
    pre: (bool, bool),
    /// Nodes that fail at once (on their first byte, at the end of complete input), answered
    /// without a call (`None` only to test that it changes nothing).
    quick: Option<&'e QuickFails>,
}

/// One node on the path from the root to the leaf that needed more input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    pub id: NodeId,
    pub pos: usize,
    /// Nothing but the path child touched the end: the node's result follows from the child's.
    pub clean: bool,
    /// Invalid UTF-8 in what the node matched before the path child.
    pub pre_invalid: bool,
    /// The AST node a `tag`/`rule` link created.
    pub ast: Option<AstId>,
    /// How many AST ids the out stack held when the node's call began: its own ids follow
    /// those of what precedes it under its nearest `tag`/`rule` (or among the roots).
    pub mark: u32,
}

impl<'e> Engine<'e> {
    pub(crate) fn new(
        arena: &'e Arena,
        input: &'e [u8],
        partial: bool,
        options: ParseOptions,
        nodes: &'e mut Vec<AstNode>,
        memo: Option<&'e mut Memo>,
    ) -> Engine<'e> {
        Engine {
            arena,
            input,
            partial,
            max_depth: options.max_depth,
            max_stack: options.max_stack_bytes,
            stack_base: stack_address(),
            depth: 0,
            nodes,
            out: Vec::new(),
            memo,
            chain: Vec::new(),
            pre: (false, false),
            quick: Some(arena.quick_fails()),
        }
    }

    /// Counts `depth` calls as already in progress: a parse that starts below the root
    /// meets the nesting limit where a parse from the root would.
    pub(crate) fn nested(mut self, depth: usize) -> Engine<'e> {
        self.depth = depth;
        self
    }

    /// Parses node `id` at `pos`, appending the AST nodes it creates to `self.out`.
    pub(crate) fn parse_node(&mut self, id: NodeId, pos: usize) -> Result<Res, Error> {
        let id = self.arena.resolve(id);
        // Most alternatives of a wide grammar fail on their first byte, or at once at the end
        // of a complete output: answered from the arena.
        if let Some(quick) = self.quick {
            match self.input.get(pos) {
                Some(&b) if quick.fails_on(id, b) => return Ok(Res::fail(pos)),
                None if !self.partial => {
                    if let Some(touched) = quick.fails_at_end(id) {
                        return Ok(Res::new(Outcome::Fail, pos, touched, false));
                    }
                }
                _ => {}
            }
        }
        if self.depth >= self.max_depth || stack_address().abs_diff(self.stack_base) > self.max_stack {
            return Err(Error::new(ErrorKind::TooDeep, format!("parser nesting exceeds {}", self.max_depth)).with_offset(pos));
        }
        let memoize = self.memo.is_some() && memoizable(self.arena.node(id));
        let mut resume = None;
        if memoize {
            let memo = self.memo.as_deref_mut().expect("checked");
            let generation = memo.generation;
            if let Some(e) = memo.map.get_mut(&(id.0, pos)) {
                if !e.res.touched || e.generation == generation {
                    self.out.extend_from_slice(e.ast.ids());
                    return Ok(e.res);
                }
                resume = e.resume.take();
            }
        }
        let mark = self.out.len();
        let node_mark = self.nodes.len();
        self.depth += 1;
        let r = self.eval(id, pos, resume);
        self.depth -= 1;
        let (res, resume) = r?;
        let pre = std::mem::take(&mut self.pre);
        if res.outcome == Outcome::NeedMoreInput && self.partial && self.memo.is_some() {
            let labeled = matches!(self.arena.node(id), Node::Tag { .. } | Node::Rule { .. });
            let ast = if labeled { self.out.last().copied() } else { None };
            self.chain.push(Link { id, pos, clean: !pre.0, pre_invalid: pre.1, ast, mark: mark as u32 });
        }
        if res.outcome == Outcome::Fail {
            self.out.truncate(mark);
            if self.memo.is_none() {
                // One-shot: nodes of a failed call are unreachable; recycle them.
                self.nodes.truncate(node_mark);
            }
        }
        if memoize {
            let memo = self.memo.as_deref_mut().expect("checked");
            let entry = Entry { res, generation: memo.generation, ast: Built::of(&self.out[mark..]), resume: if res.touched { resume } else { None } };
            memo.map.insert((id.0, pos), entry);
        }
        Ok(res)
    }

    pub(crate) fn eval(&mut self, id: NodeId, pos: usize, resume: Option<Resume>) -> Result<(Res, Option<Resume>), Error> {
        let arena = self.arena;
        let n = self.input.len();
        let r = match arena.node(id) {
            Node::Eps => Res::ok(pos),
            Node::Start => {
                if pos == 0 {
                    Res::ok(pos)
                } else {
                    Res::fail(pos)
                }
            }
            Node::End => {
                if pos >= n {
                    Res::new(Outcome::Success, pos, true, false)
                } else {
                    Res::fail(pos)
                }
            }
            Node::Literal { text } => self.literal(text.as_bytes(), pos),
            Node::Any => self.any(pos),
            Node::Sequence { children } => self.sequence(children, pos)?,
            Node::Choice { children } => self.choice(children, pos)?,
            Node::Repeat { child, min, max } => return self.repeat(*child, *min, *max, pos, resume),
            Node::Peek { child } => self.lookahead(*child, pos, false)?,
            Node::Negate { child } => self.lookahead(*child, pos, true)?,
            Node::Chars { class, min, max } => {
                let (class, min, max) = (class, *min, *max);
                return Ok(self.chars(pos, resume, min, max, |c| class.matches(c)));
            }
            Node::Space => return Ok(self.space(pos, resume)),
            Node::Until { delimiters } => return Ok(self.until(id, delimiters, pos, resume)),
            Node::Rest => return Ok(self.rest(pos, resume)),
            Node::Marker => return Ok(self.marker(pos, resume)),
            Node::Json { kind } => return Ok(self.scan(Dialect::Json, (*kind).into(), pos, resume)),
            Node::JsonPrefix => return Ok(self.scan_prefix(pos, resume)),
            Node::JsonStringContent => return Ok(self.scan(Dialect::Json, Target::StringContent, pos, resume)),
            Node::Python { kind } => return Ok(self.scan(Dialect::Python, (*kind).into(), pos, resume)),
            Node::Ref { .. } => {
                // `resolve` maps every ref to its rule; a ref left here means a broken arena.
                return Err(Error::new(ErrorKind::UndefinedRule, "unresolved reference"));
            }
            Node::Rule { child, .. } => self.labeled(id, *child, pos, true)?,
            Node::Tag { child, .. } => self.labeled(id, *child, pos, false)?,
            Node::Schema { child, .. } | Node::Gbnf { child, .. } => self.parse_node(*child, pos)?,
            Node::Constrained { nodes: [child, _] } => self.parse_node(*child, pos)?,
            Node::Atomic { child } => self.atomic(*child, pos)?,
        };
        Ok((r, None))
    }

    /// Evaluates a leaf node (no children) on its own: the session's frontier fast path.
    pub(crate) fn eval_leaf(&mut self, id: NodeId, pos: usize, resume: Option<Resume>) -> Option<(Res, Option<Resume>)> {
        Some(match self.arena.node(id) {
            Node::Literal { text } => (self.literal(text.as_bytes(), pos), None),
            Node::Any => (self.any(pos), None),
            Node::Chars { class, min, max } => self.chars(pos, resume, *min, *max, |c| class.matches(c)),
            Node::Space => self.space(pos, resume),
            Node::Until { delimiters } => self.until(id, delimiters, pos, resume),
            Node::Rest => self.rest(pos, resume),
            Node::Marker => self.marker(pos, resume),
            Node::Json { kind } => self.scan(Dialect::Json, (*kind).into(), pos, resume),
            Node::JsonPrefix => self.scan_prefix(pos, resume),
            Node::JsonStringContent => self.scan(Dialect::Json, Target::StringContent, pos, resume),
            Node::Python { kind } => self.scan(Dialect::Python, (*kind).into(), pos, resume),
            _ => return None,
        })
    }

    #[inline(never)]
    fn sequence(&mut self, children: &[NodeId], pos: usize) -> Result<Res, Error> {
        let mut p = pos;
        let mut touched = false;
        let mut invalid = false;
        for &c in children {
            let r = self.parse_node(c, p)?;
            self.pre = (touched, invalid);
            touched |= r.touched;
            invalid |= r.invalid;
            match r.outcome {
                Outcome::Success => p = r.end,
                o => return Ok(Res::new(o, r.end, touched, invalid)),
            }
        }
        Ok(Res::new(Outcome::Success, p, touched, invalid))
    }

    #[inline(never)]
    fn choice(&mut self, children: &[NodeId], pos: usize) -> Result<Res, Error> {
        let mut touched = false;
        for &c in children {
            let r = self.parse_node(c, pos)?;
            self.pre = (touched, false);
            touched |= r.touched;
            if r.outcome != Outcome::Fail {
                return Ok(Res { touched, ..r });
            }
        }
        Ok(Res::new(Outcome::Fail, pos, touched, false))
    }

    #[inline(never)]
    fn lookahead(&mut self, child: NodeId, pos: usize, negate: bool) -> Result<Res, Error> {
        let mark = self.out.len();
        let node_mark = self.nodes.len();
        let r = self.parse_node(child, pos)?;
        // Lookahead builds no AST.
        self.out.truncate(mark);
        if self.memo.is_none() {
            self.nodes.truncate(node_mark);
        }
        let outcome = match (r.outcome, negate) {
            (Outcome::NeedMoreInput, _) => Outcome::NeedMoreInput,
            (Outcome::Success, false) | (Outcome::Fail, true) => Outcome::Success,
            _ => Outcome::Fail,
        };
        Ok(Res::new(outcome, pos, r.touched, false))
    }

    /// `rule` and `tag`: an AST node around what the child matched.
    #[inline(never)]
    fn labeled(&mut self, id: NodeId, child: NodeId, pos: usize, is_rule: bool) -> Result<Res, Error> {
        let mark = self.out.len();
        let r = self.parse_node(child, pos)?;
        if r.outcome != Outcome::Fail {
            let children: Vec<AstId> = self.out.drain(mark..).collect();
            let label = self.arena.label(id).cloned();
            let (tag, rule) = if is_rule { (None, label) } else { (label, None) };
            let ast_id = AstId(self.nodes.len() as u32);
            self.nodes.push(AstNode { tag, rule, start: pos, end: r.end, children, partial: r.outcome == Outcome::NeedMoreInput, invalid_utf8: r.invalid });
            self.out.push(ast_id);
        }
        Ok(r)
    }

    #[inline(never)]
    fn atomic(&mut self, child: NodeId, pos: usize) -> Result<Res, Error> {
        let mark = self.out.len();
        let r = self.parse_node(child, pos)?;
        if r.outcome == Outcome::NeedMoreInput {
            self.out.truncate(mark);
        }
        Ok(r)
    }

    #[inline]
    fn literal(&self, text: &[u8], pos: usize) -> Res {
        leaf::literal(self.input, self.partial, pos, text)
    }

    #[inline]
    fn any(&self, pos: usize) -> Res {
        leaf::any(self.input, self.partial, pos)
    }

    fn repeat(&mut self, child: NodeId, min: u32, max: Option<u32>, pos: usize, resume: Option<Resume>) -> Result<(Res, Option<Resume>), Error> {
        let mark = self.out.len();
        let (mut count, mut p, mut invalid) = (0u32, pos, false);
        if let Some(Resume::Repeat { count: c, pos: rp, ast, invalid: inv }) = resume {
            self.out.extend_from_slice(&ast);
            (count, p, invalid) = (c, rp, inv);
        }
        let mut touched = false;
        // State before the first end-touching iteration: where the next parse resumes.
        let mut snapshot: Option<(u32, usize, usize, bool)> = None;
        let outcome = loop {
            if max.is_some_and(|m| count >= m) {
                break Outcome::Success;
            }
            let before = (count, p, self.out.len() - mark, invalid);
            let r = self.parse_node(child, p)?;
            self.pre = (touched, invalid);
            if r.touched && !touched {
                touched = true;
                snapshot = Some(before);
            }
            match r.outcome {
                Outcome::Success => {
                    count += 1;
                    invalid |= r.invalid;
                    if r.end == p {
                        // No progress: every further iteration would match the same empty span,
                        // so the minimum is met.
                        break Outcome::Success;
                    }
                    p = r.end;
                }
                Outcome::NeedMoreInput => {
                    invalid |= r.invalid;
                    p = r.end;
                    break Outcome::NeedMoreInput;
                }
                Outcome::Fail => break if count >= min { Outcome::Success } else { Outcome::Fail },
            }
        };
        let resume = snapshot.map(|(c, rp, ast_len, inv)| Resume::Repeat { count: c, pos: rp, ast: self.out[mark..mark + ast_len].to_vec(), invalid: inv });
        Ok((Res::new(outcome, p, touched, invalid), resume))
    }

    #[inline(never)]
    fn chars(&self, pos: usize, resume: Option<Resume>, min: u32, max: Option<u32>, matches: impl Fn(char) -> bool) -> (Res, Option<Resume>) {
        let (r, s) = leaf::chars(self.input, self.partial, pos, chars_state(resume), min, max, matches);
        (r, s.map(Resume::Chars))
    }

    #[inline(never)]
    fn space(&self, pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let (r, s) = leaf::space(self.input, self.partial, pos, chars_state(resume));
        (r, s.map(Resume::Chars))
    }

    #[inline(never)]
    fn until(&self, id: NodeId, delimiters: &[String], pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let searcher = self.arena.searcher(id).expect("until nodes have a searcher");
        until_scan(self.input, self.partial, searcher, delimiters, pos, resume)
    }

    #[inline(never)]
    fn rest(&self, pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let (r, s) = leaf::rest(self.input, self.partial, pos, scan_state(resume));
        (r, s.map(Resume::Scan))
    }

    #[inline(never)]
    fn marker(&self, pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let (r, s) = leaf::marker(self.input, self.partial, pos, scan_state(resume));
        (r, s.map(Resume::Scan))
    }

    #[inline(never)]
    fn scan(&self, dialect: Dialect, target: Target, pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let mut sc = match resume {
            Some(Resume::Json(sc)) => sc,
            _ => Box::new(Scanner::new(dialect, target, pos)),
        };
        let res = leaf::scan(&mut sc, self.input, self.partial);
        (res, res.touched.then_some(Resume::Json(sc)))
    }

    /// `json_prefix`: a JSON value scan whose failure after its first byte matches what
    /// fit (the scanner stops where the text stopped fitting).
    fn scan_prefix(&self, pos: usize, resume: Option<Resume>) -> (Res, Option<Resume>) {
        let (res, resume) = self.scan(Dialect::Json, Target::Value, pos, resume);
        match res.outcome {
            Outcome::Fail if res.end > pos => (Res { outcome: Outcome::Success, ..res }, resume),
            _ => (res, resume),
        }
    }
}

fn chars_state(resume: Option<Resume>) -> Option<CharsState> {
    match resume {
        Some(Resume::Chars(s)) => Some(s),
        _ => None,
    }
}

fn scan_state(resume: Option<Resume>) -> Option<ScanState> {
    match resume {
        Some(Resume::Scan(s)) => Some(s),
        _ => None,
    }
}

/// The `until` leaf with the engine's resume state (the session's fast path calls it directly).
pub(crate) fn until_scan(
    input: &[u8],
    partial: bool,
    searcher: &Delimiters,
    delimiters: &[String],
    pos: usize,
    resume: Option<Resume>,
) -> (Res, Option<Resume>) {
    let (r, s) = leaf::until(input, partial, pos, searcher, delimiters, scan_state(resume));
    (r, s.map(Resume::Scan))
}

/// Whether a node's results are worth a memo entry: cheap leaves are recomputed instead.
pub(crate) fn memoizable(node: &Node) -> bool {
    !matches!(
        node,
        Node::Eps
            | Node::Start
            | Node::End
            | Node::Literal { .. }
            | Node::Any
            | Node::Schema { .. }
            | Node::Gbnf { .. }
            | Node::Constrained { .. }
            | Node::Atomic { .. }
    )
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<ParseOutput>();
    f::<Arc<Arena>>();
}

#[cfg(test)]
mod tests;
