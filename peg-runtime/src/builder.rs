//! The builder DSL: grammars read like the Rust that builds them.
//!
//! `a + b` is a sequence, `a | b` an ordered choice, `a << b` a sequence with optional
//! whitespace between; string literals stand wherever a parser is expected.
//! Errors (a bad character class, a duplicate rule) are collected and returned by
//! [`Builder::finish`], so building code needs no `?` on every call.

use std::cell::RefCell;
use std::ops::{Add, BitOr, BitOrAssign, Shl};

use crate::arena::{Arena, ArenaData, JsonKind, Node, NodeId, PythonKind};
use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};

#[derive(Default)]
struct BuilderData {
    nodes: Vec<Node>,
    rules: Vec<(String, NodeId)>,
    first_error: Option<Error>,
}

/// Collects nodes and rules, then [`finish`](Builder::finish)es into an [`Arena`].
///
/// ```
/// use peg_runtime::Builder;
/// let b = Builder::new();
/// let root = b.optional("<think>" + b.tag("reasoning", b.until("</think>")) + "</think>")
///     + b.tag("content", b.rest());
/// let arena = b.finish(root.id()).unwrap();
/// let input = b"No thinking needed.";
/// let out = arena.parse(input, false).unwrap();
/// assert!(out.ast.find_by_tag("reasoning").is_empty());
/// assert_eq!(out.ast.text(out.ast.find_by_tag("content")[0], input), "No thinking needed.");
/// ```
#[derive(Default)]
pub struct Builder {
    data: RefCell<BuilderData>,
}

/// A handle to a node being built. Cheap to copy; combine with `+`, `|` and `<<`.
///
/// ```
/// use peg_runtime::{Builder, Node};
/// let b = Builder::new();
/// let answer = b.literal("yes") | "no"; // `+` sequence, `|` ordered choice, `<<` spaced sequence
/// let Node::Choice { children } = b.node(answer.id()) else { panic!() };
/// assert_eq!(b.node(children[1]), Node::Literal { text: "no".into() });
/// let arena = b.finish(answer.id()).unwrap();
/// assert_eq!(arena.parse(b"no", false).unwrap().result.end, 2);
/// ```
#[derive(Clone, Copy)]
pub struct Parser<'a> {
    id: NodeId,
    builder: &'a Builder,
}

impl std::fmt::Debug for Parser<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parser({})", self.id.0)
    }
}

impl<'a> Parser<'a> {
    /// The node's id in the arena being built.
    pub fn id(self) -> NodeId {
        self.id
    }

    /// The builder this parser belongs to.
    pub fn builder(self) -> &'a Builder {
        self.builder
    }
}

/// Anything that can stand where a parser is expected: a [`Parser`], `&str`, `String`, `char`.
///
/// ```
/// use peg_runtime::{Arena, Builder, IntoParser, Parser};
/// // A helper taking a parser or a plain string.
/// fn bracketed<'a>(b: &'a Builder, inner: impl IntoParser<'a>) -> Parser<'a> {
///     "[" + inner.into_parser(b) + ']'
/// }
/// let arena = Arena::build(|p| bracketed(p, "TOOL_CALLS") + bracketed(p, p.until("]"))).unwrap();
/// assert_eq!(arena.parse(b"[TOOL_CALLS][x]", false).unwrap().result.end, 15);
/// ```
pub trait IntoParser<'a> {
    /// Converts into a node of `builder`.
    fn into_parser(self, builder: &'a Builder) -> Parser<'a>;
}

impl<'a> IntoParser<'a> for Parser<'a> {
    fn into_parser(self, _: &'a Builder) -> Parser<'a> {
        self
    }
}

impl<'a> IntoParser<'a> for &str {
    fn into_parser(self, builder: &'a Builder) -> Parser<'a> {
        builder.literal(self)
    }
}

impl<'a> IntoParser<'a> for &String {
    fn into_parser(self, builder: &'a Builder) -> Parser<'a> {
        builder.literal(self)
    }
}

impl<'a> IntoParser<'a> for String {
    fn into_parser(self, builder: &'a Builder) -> Parser<'a> {
        builder.literal(&self)
    }
}

impl<'a> IntoParser<'a> for char {
    fn into_parser(self, builder: &'a Builder) -> Parser<'a> {
        builder.literal(self.encode_utf8(&mut [0; 4]))
    }
}

impl Builder {
    /// An empty builder.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Adds a raw node; prefer the named constructors.
    pub fn add(&self, node: Node) -> Parser<'_> {
        let mut d = self.data.borrow_mut();
        let id = NodeId(d.nodes.len() as u32);
        d.nodes.push(node);
        Parser { id, builder: self }
    }

    /// Wraps an existing node id in a handle.
    pub fn parser(&self, id: NodeId) -> Parser<'_> {
        Parser { id, builder: self }
    }

    /// A copy of node `id`.
    pub fn node(&self, id: NodeId) -> Node {
        self.data.borrow().nodes[id.index()].clone()
    }

    fn defer_error(&self, e: Error) {
        let mut d = self.data.borrow_mut();
        if d.first_error.is_none() {
            d.first_error = Some(e);
        }
    }

    /// Validates and produces the arena with `root` as its entry point, leaving the builder empty.
    /// The first error of any call (a bad character class, a duplicate rule) surfaces here.
    ///
    /// ```
    /// use peg_runtime::{Builder, ErrorKind};
    /// let b = Builder::new();
    /// let root = b.rule_ref("answer"); // defined below: references resolve here
    /// b.rule("answer", b.literal("yes") | "no");
    /// assert!(b.finish(root.id()).is_ok());
    /// let root = b.rule_ref("missing");
    /// assert_eq!(b.finish(root.id()).unwrap_err().kind(), ErrorKind::UndefinedRule);
    /// ```
    pub fn finish(&self, root: NodeId) -> Result<Arena, Error> {
        let d = std::mem::take(&mut *self.data.borrow_mut());
        if let Some(e) = d.first_error {
            return Err(e);
        }
        Arena::from_data(ArenaData { nodes: d.nodes, rules: d.rules, root })
    }

    // ---- basic matchers ----

    /// Matches nothing, always succeeds.
    pub fn eps(&self) -> Parser<'_> {
        self.add(Node::Eps)
    }
    /// Succeeds only at the start of input.
    pub fn start(&self) -> Parser<'_> {
        self.add(Node::Start)
    }
    /// Succeeds only at the end of input.
    pub fn end(&self) -> Parser<'_> {
        self.add(Node::End)
    }
    /// An exact string.
    pub fn literal(&self, text: &str) -> Parser<'_> {
        self.add(Node::Literal { text: text.to_owned() })
    }
    /// Any single code point.
    pub fn any(&self) -> Parser<'_> {
        self.add(Node::Any)
    }

    // ---- combinators ----

    /// All parsers in order.
    pub fn seq<'a, I, P>(&'a self, parts: I) -> Parser<'a>
    where
        I: IntoIterator<Item = P>,
        P: IntoParser<'a>,
    {
        let children = parts.into_iter().map(|p| p.into_parser(self).id).collect();
        self.add(Node::Sequence { children })
    }
    /// Parsers in order with optional whitespace ([`Builder::space`]) between them.
    pub fn spaced<'a, I, P>(&'a self, parts: I) -> Parser<'a>
    where
        I: IntoIterator<Item = P>,
        P: IntoParser<'a>,
    {
        let mut children = Vec::new();
        for (i, p) in parts.into_iter().enumerate() {
            if i > 0 {
                children.push(self.space().id);
            }
            children.push(p.into_parser(self).id);
        }
        self.add(Node::Sequence { children })
    }
    /// The first alternative that succeeds. An empty choice always fails.
    pub fn choice<'a, I, P>(&'a self, alternatives: I) -> Parser<'a>
    where
        I: IntoIterator<Item = P>,
        P: IntoParser<'a>,
    {
        let children = alternatives.into_iter().map(|p| p.into_parser(self).id).collect();
        self.add(Node::Choice { children })
    }
    /// One or more repetitions.
    pub fn one_or_more<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        self.repeat(p, 1, None)
    }
    /// Zero or more repetitions.
    pub fn zero_or_more<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        self.repeat(p, 0, None)
    }
    /// Zero or one occurrence.
    pub fn optional<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        self.repeat(p, 0, Some(1))
    }
    /// Between `min` and `max` repetitions (`None`: unbounded).
    pub fn repeat<'a>(&'a self, p: impl IntoParser<'a>, min: u32, max: Option<u32>) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Repeat { child, min, max })
    }
    /// Exactly `n` repetitions.
    pub fn repeat_n<'a>(&'a self, p: impl IntoParser<'a>, n: u32) -> Parser<'a> {
        self.repeat(p, n, Some(n))
    }

    // ---- lookahead ----

    /// Positive lookahead `&p`.
    pub fn peek<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Peek { child })
    }
    /// Negative lookahead `!p`.
    pub fn negate<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Negate { child })
    }

    // ---- characters and utilities ----

    /// Between `min` and `max` characters of the class `spec` (e.g. `[a-z_]`, `[^"]`).
    pub fn chars(&self, spec: &str, min: u32, max: Option<u32>) -> Parser<'_> {
        match CharClass::parse(spec) {
            Ok(class) => self.add(Node::Chars { class, min, max }),
            Err(e) => {
                self.defer_error(e);
                self.add(Node::Eps)
            }
        }
    }
    /// Zero or more whitespace characters.
    pub fn space(&self) -> Parser<'_> {
        self.add(Node::Space)
    }
    /// Text up to (not including) `delimiter`, or to the end.
    pub fn until(&self, delimiter: &str) -> Parser<'_> {
        self.until_one_of([delimiter])
    }
    /// Text up to the first of `delimiters`, or to the end.
    pub fn until_one_of<I, S>(&self, delimiters: I) -> Parser<'_>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let delimiters = delimiters.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.add(Node::Until { delimiters })
    }
    /// Everything to the end of input.
    pub fn rest(&self) -> Parser<'_> {
        self.add(Node::Rest)
    }
    /// One marker token, `<...>` or `[...]`.
    pub fn marker(&self) -> Parser<'_> {
        self.add(Node::Marker)
    }

    // ---- JSON ----

    /// Any JSON value.
    pub fn json(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Value })
    }
    /// What of a JSON value fits before the text stops fitting ([`Node::JsonPrefix`]): a
    /// recovery for arguments that open a value and then go wrong.
    ///
    /// ```
    /// use peg_runtime::{Arena, Outcome};
    /// let arena = Arena::build(|p| p.json_prefix()).unwrap();
    /// let out = arena.parse(br#"{"city": Paris}"#, false).unwrap();
    /// assert_eq!((out.result.outcome, out.result.end), (Outcome::Success, 9)); // `{"city": `
    /// assert_eq!(arena.parse(br#"{"city": "Pa"#, true).unwrap().result.outcome, Outcome::NeedMoreInput);
    /// assert_eq!(arena.parse(b"Paris", false).unwrap().result.outcome, Outcome::Fail);
    /// ```
    pub fn json_prefix(&self) -> Parser<'_> {
        self.add(Node::JsonPrefix)
    }
    /// A JSON object.
    pub fn json_object(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Object })
    }
    /// A JSON array.
    pub fn json_array(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Array })
    }
    /// A JSON string with its quotes.
    pub fn json_string(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::String })
    }
    /// A JSON number.
    pub fn json_number(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Number })
    }
    /// `true` or `false`.
    pub fn json_bool(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Bool })
    }
    /// `null`.
    pub fn json_null(&self) -> Parser<'_> {
        self.add(Node::Json { kind: JsonKind::Null })
    }
    /// The inside of a JSON string (escapes allowed), stopping before the closing quote.
    pub fn json_string_content(&self) -> Parser<'_> {
        self.add(Node::JsonStringContent)
    }
    /// An object member `"key": value` with optional whitespace around the colon.
    pub fn json_member<'a>(&'a self, key: &str, value: impl IntoParser<'a>) -> Parser<'a> {
        let quoted = serde_json::to_string(key).expect("string serializes");
        let key = self.literal(&quoted);
        let colon = self.literal(":");
        self.spaced([key, colon, value.into_parser(self)])
    }

    // ---- Python literals ----

    /// Any Python literal (dict, list, str, number, True, False, None).
    pub fn python(&self) -> Parser<'_> {
        self.add(Node::Python { kind: PythonKind::Value })
    }
    /// A Python literal of a given kind.
    pub fn python_kind(&self, kind: PythonKind) -> Parser<'_> {
        self.add(Node::Python { kind })
    }

    // ---- grammar building ----

    /// A reference to rule `name` (may be defined later; resolved by [`Builder::finish`]).
    pub fn rule_ref(&self, name: &str) -> Parser<'_> {
        self.add(Node::Ref { name: name.to_owned() })
    }
    /// Defines rule `name` as `p` and returns a reference to it.
    ///
    /// ```
    /// use peg_runtime::Arena;
    /// let arena = Arena::build(|p| p.zero_or_more(p.rule("word", p.chars("[a-z]", 1, None)) + " ")).unwrap();
    /// let out = arena.parse(b"a bc ", false).unwrap();
    /// let words: Vec<_> = out.ast.roots.iter().map(|&id| out.ast.node(id).rule.as_deref().unwrap()).collect();
    /// assert_eq!(words, ["word", "word"]); // each match an AST node named after the rule
    /// ```
    pub fn rule<'a>(&'a self, name: &str, p: impl IntoParser<'a>) -> Parser<'a> {
        self.define_rule(name, p, false)
    }
    /// Defines a trigger rule: an entry point of lazy grammars.
    ///
    /// ```
    /// use peg_runtime::gbnf::{generate, GbnfOptions};
    /// use peg_runtime::Arena;
    /// let arena = Arena::build(|p| p.until("<call>") + p.optional(p.trigger_rule("call", "<call>" + p.json()))).unwrap();
    /// let lazy = generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap();
    /// assert!(lazy.starts_with("root ::= call\n"));
    /// ```
    pub fn trigger_rule<'a>(&'a self, name: &str, p: impl IntoParser<'a>) -> Parser<'a> {
        self.define_rule(name, p, true)
    }
    fn define_rule<'a>(&'a self, name: &str, p: impl IntoParser<'a>, trigger: bool) -> Parser<'a> {
        let child = p.into_parser(self).id;
        if self.has_rule(name) {
            self.defer_error(Error::new(ErrorKind::DuplicateRule, format!("rule `{name}` is defined twice")));
        } else {
            let id = self.add(Node::Rule { name: name.to_owned(), child, trigger }).id;
            self.data.borrow_mut().rules.push((name.to_owned(), id));
        }
        self.rule_ref(name)
    }
    /// Whether a rule named `name` exists.
    pub fn has_rule(&self, name: &str) -> bool {
        self.data.borrow().rules.iter().any(|(n, _)| n == name)
    }
    /// Parses with `p`; grammars use the JSON `schema` instead. `raw`: unquoted string values.
    pub fn schema<'a>(&'a self, p: impl IntoParser<'a>, name: &str, schema: serde_json::Value, raw: bool) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Schema { child, name: name.to_owned(), schema, raw })
    }
    /// Parses with `p`; grammars emit the GBNF expression `gbnf` instead.
    pub fn gbnf<'a>(&'a self, p: impl IntoParser<'a>, gbnf: &str) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Gbnf { child, gbnf: gbnf.to_owned() })
    }
    /// Parses with `p`; grammars are generated from `grammar` instead, a parser for a stricter
    /// form of the same text. Parsing stays lenient while generation is constrained, as with
    /// [`schema`](Builder::schema) for a value syntax that is not JSON.
    ///
    /// ```
    /// use peg_runtime::gbnf::{generate, GbnfOptions, Grammar};
    /// use peg_runtime::{Arena, Outcome};
    /// let arena = Arena::build(|p| p.constrained(p.chars("[a-z]", 1, None), p.literal("yes") | "no")).unwrap();
    /// assert_eq!(arena.parse(b"maybe", false).unwrap().result.outcome, Outcome::Success);
    /// let grammar = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
    /// assert!(grammar.accepts("yes") && !grammar.accepts("maybe"));
    /// ```
    pub fn constrained<'a>(&'a self, p: impl IntoParser<'a>, grammar: impl IntoParser<'a>) -> Parser<'a> {
        let parse = p.into_parser(self).id;
        let grammar = grammar.into_parser(self).id;
        self.add(Node::Constrained { nodes: [parse, grammar] })
    }

    // ---- AST control ----

    /// Partial parses of `p` produce no AST nodes.
    pub fn atomic<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Atomic { child })
    }
    /// An AST node tagged `tag` around what `p` matches.
    ///
    /// ```
    /// use peg_runtime::Arena;
    /// let arena = Arena::build(|p| "[" + p.tag("id", p.chars("[0-9]", 1, None)) + "]").unwrap();
    /// let out = arena.parse(b"[42]", false).unwrap();
    /// assert_eq!(out.ast.text(out.ast.find_by_tag("id")[0], b"[42]"), "42");
    /// ```
    pub fn tag<'a>(&'a self, tag: &str, p: impl IntoParser<'a>) -> Parser<'a> {
        let child = p.into_parser(self).id;
        self.add(Node::Tag { tag: tag.to_owned(), child })
    }

    fn join(&self, lhs: NodeId, rhs: NodeId, choice: bool) -> Parser<'_> {
        // Flatten left-nested chains so `a + b + c` is one node with three children.
        let mut children = match (self.node(lhs), choice) {
            (Node::Sequence { children }, false) | (Node::Choice { children }, true) => children,
            _ => vec![lhs],
        };
        children.push(rhs);
        self.add(if choice { Node::Choice { children } } else { Node::Sequence { children } })
    }
}

impl<'a, R: IntoParser<'a>> Add<R> for Parser<'a> {
    type Output = Parser<'a>;
    fn add(self, rhs: R) -> Parser<'a> {
        let r = rhs.into_parser(self.builder).id;
        self.builder.join(self.id, r, false)
    }
}

impl<'a> Add<Parser<'a>> for &str {
    type Output = Parser<'a>;
    fn add(self, rhs: Parser<'a>) -> Parser<'a> {
        let l = rhs.builder.literal(self).id;
        rhs.builder.join(l, rhs.id, false)
    }
}

impl<'a> Add<Parser<'a>> for String {
    type Output = Parser<'a>;
    fn add(self, rhs: Parser<'a>) -> Parser<'a> {
        self.as_str() + rhs
    }
}

impl<'a, R: IntoParser<'a>> BitOr<R> for Parser<'a> {
    type Output = Parser<'a>;
    fn bitor(self, rhs: R) -> Parser<'a> {
        let r = rhs.into_parser(self.builder).id;
        self.builder.join(self.id, r, true)
    }
}

impl<'a> BitOr<Parser<'a>> for &str {
    type Output = Parser<'a>;
    fn bitor(self, rhs: Parser<'a>) -> Parser<'a> {
        let l = rhs.builder.literal(self).id;
        rhs.builder.join(l, rhs.id, true)
    }
}

impl<'a, R: IntoParser<'a>> BitOrAssign<R> for Parser<'a> {
    fn bitor_assign(&mut self, rhs: R) {
        *self = *self | rhs;
    }
}

impl<'a, R: IntoParser<'a>> Shl<R> for Parser<'a> {
    type Output = Parser<'a>;
    fn shl(self, rhs: R) -> Parser<'a> {
        let b = self.builder;
        let r = rhs.into_parser(b);
        let sp = b.space();
        self + sp + r
    }
}

impl<'a> Shl<Parser<'a>> for &str {
    type Output = Parser<'a>;
    fn shl(self, rhs: Parser<'a>) -> Parser<'a> {
        rhs.builder.literal(self) << rhs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_flatten() {
        let b = Builder::new();
        let p = b.literal("a") + "b" + "c";
        match b.node(p.id()) {
            Node::Sequence { children } => assert_eq!(children.len(), 3),
            n => panic!("{n:?}"),
        }
        let c = "x" | b.literal("y") | "z";
        match b.node(c.id()) {
            Node::Choice { children } => assert_eq!(children.len(), 3),
            n => panic!("{n:?}"),
        }
    }

    #[test]
    fn deferred_errors_surface_on_finish() {
        let b = Builder::new();
        let p = b.chars("[z-a]", 0, None);
        assert_eq!(b.finish(p.id()).unwrap_err().kind(), ErrorKind::InvalidCharClass);
        let b = Builder::new();
        b.rule("x", "a");
        let p = b.rule("x", "b");
        assert_eq!(b.finish(p.id()).unwrap_err().kind(), ErrorKind::DuplicateRule);
        let b = Builder::new();
        let p = b.rule_ref("nope");
        assert_eq!(b.finish(p.id()).unwrap_err().kind(), ErrorKind::UndefinedRule);
        let b = Builder::new();
        let p = b.until("");
        assert_eq!(b.finish(p.id()).unwrap_err().kind(), ErrorKind::InvalidParser);
    }

    #[test]
    fn rules_resolve_and_serialize() {
        let arena = Arena::build(|b| {
            let value = b.rule("value", b.json());
            b.trigger_rule("call", "<call>" << value << "</call>")
        })
        .unwrap();
        let call = arena.rule("call").unwrap();
        assert_eq!(arena.resolve(arena.root()), call);
        let back = Arena::from_json(&arena.to_json()).unwrap();
        assert_eq!(back, arena);
    }
}
