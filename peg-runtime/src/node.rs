//! The nodes of a grammar: [`Node`], each a parser, referring to its children by [`NodeId`]
//! (an index into the [`Arena`](crate::Arena) that holds them).

use serde::{Deserialize, Serialize};

use crate::chars::CharClass;
use crate::kinds::{JsonKind, PythonKind};

/// Index of a node in its [`Arena`](crate::Arena).
///
/// ```
/// use peg_runtime::{Arena, Node};
/// let arena = Arena::build(|p| p.rule("greeting", "hi")).unwrap();
/// let id = arena.rule("greeting").unwrap();
/// assert_eq!(&arena.nodes()[id.index()], arena.node(id));
/// assert!(matches!(arena.node(id), Node::Rule { name, .. } if name == "greeting"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One parser in the arena. Combinators refer to children by [`NodeId`].
///
/// ```
/// use peg_runtime::{Arena, Node};
/// let arena = Arena::build(|p| p.literal("a") | "b").unwrap();
/// let Node::Choice { children } = arena.node(arena.root()) else { panic!() };
/// assert_eq!(arena.node(children[1]), &Node::Literal { text: "b".into() });
/// assert_eq!(arena.node(arena.root()).children(), &children[..]);
/// ```
// Each variant's doc describes its fields.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Node {
    /// Matches nothing, always succeeds.
    Eps,
    /// Succeeds only at input position 0.
    Start,
    /// Succeeds only at the end of input.
    End,
    /// An exact string.
    Literal { text: String },
    /// Any single code point.
    Any,
    /// All children in order.
    Sequence { children: Vec<NodeId> },
    /// The first child that succeeds (ordered choice).
    Choice { children: Vec<NodeId> },
    /// `child` between `min` and `max` times (`max: None` is unbounded). Greedy, no backtracking.
    Repeat { child: NodeId, min: u32, max: Option<u32> },
    /// Positive lookahead `&p`: succeeds if `child` does, consuming nothing.
    Peek { child: NodeId },
    /// Negative lookahead `!p`: succeeds if `child` fails, consuming nothing.
    Negate { child: NodeId },
    /// Between `min` and `max` code points of `class`.
    Chars { class: CharClass, min: u32, max: Option<u32> },
    /// Zero or more whitespace characters (space, tab, newline, carriage return).
    Space,
    /// Everything up to (not including) the first occurrence of any delimiter, or to the end.
    Until { delimiters: Vec<String> },
    /// Everything to the end of input.
    Rest,
    /// A JSON value of the given kind, scanned by dedicated code.
    Json { kind: JsonKind },
    /// What of a JSON value fits before the text stops fitting (at least its first byte);
    /// while a partial input still fits, need more input, as for a whole value. A recovery:
    /// arguments that open a value and then stop fitting are kept up to there, as a stream
    /// that has already sent them must keep them. A grammar allows whole values only.
    JsonPrefix,
    /// The inside of a JSON string, without its quotes: stops before the closing `"`.
    JsonStringContent,
    /// A Python literal of the given kind (dict/list/str/number/True/False/None).
    Python { kind: PythonKind },
    /// One marker token: text in `<...>` or `[...]`.
    Marker,
    /// A reference to a named rule, resolved when the arena is built.
    Ref { name: String },
    /// A named rule wrapping `child`. Creates an AST node named `name`.
    /// `trigger` rules are the entry points of lazy grammars.
    Rule { name: String, child: NodeId, trigger: bool },
    /// Parses with `child`; grammar generation emits rules for the JSON `schema` instead.
    /// `raw`: string values are written without quotes (XML-style arguments).
    Schema { child: NodeId, name: String, schema: serde_json::Value, raw: bool },
    /// Parses with `child`, but partial results produce no AST nodes.
    Atomic { child: NodeId },
    /// Creates an AST node carrying `tag` around what `child` matched.
    Tag { tag: String, child: NodeId },
    /// Parses with `child`; grammar generation emits `gbnf` (a GBNF expression) instead.
    Gbnf { child: NodeId, gbnf: String },
    /// Parses with `nodes[0]`; grammar generation emits `nodes[1]` instead: a stricter form
    /// of the same text (a schema spelled in a template's own value syntax), so generation is
    /// constrained while parsing stays lenient. Never parsed, `nodes[1]` may use no lookahead
    /// in a trigger rule.
    Constrained { nodes: [NodeId; 2] },
}

impl Node {
    /// The node's direct children, in order. `Ref` has none (see [`Arena::resolve`](crate::Arena::resolve)).
    pub fn children(&self) -> &[NodeId] {
        match self {
            Node::Sequence { children } | Node::Choice { children } => children,
            Node::Repeat { child, .. }
            | Node::Peek { child }
            | Node::Negate { child }
            | Node::Rule { child, .. }
            | Node::Schema { child, .. }
            | Node::Atomic { child }
            | Node::Tag { child, .. }
            | Node::Gbnf { child, .. } => std::slice::from_ref(child),
            Node::Constrained { nodes } => nodes,
            _ => &[],
        }
    }

    /// Whether the node is a JSON or Python scanner of a value or a string: at the end of
    /// input inside one of its strings, a chunk of plain characters only extends the string.
    pub(crate) fn scans_strings(&self) -> bool {
        matches!(
            self,
            Node::Json { kind: JsonKind::Value | JsonKind::Object | JsonKind::Array | JsonKind::String }
                | Node::JsonPrefix
                | Node::Python { kind: PythonKind::Value | PythonKind::Dict | PythonKind::List | PythonKind::Str }
        )
    }
}
