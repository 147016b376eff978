//! The tagged AST produced by a parse: an arena of nodes, each with a tag or rule name,
//! a byte span into the input, children and a partial flag.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Index of a node in its [`Ast`].
///
/// ```
/// use peg_runtime::{Arena, AstId};
/// let arena = Arena::build(|p| p.tag("a", "x") + p.tag("b", "y")).unwrap();
/// let out = arena.parse(b"xy", false).unwrap();
/// assert_eq!(out.ast.roots, [AstId(0), AstId(1)]);
/// assert_eq!(out.ast.node(AstId(1)).tag.as_deref(), Some("b"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AstId(pub u32);

/// One AST node. Created by `tag` nodes (with `tag` set) and `rule` nodes (with `rule` set).
///
/// ```
/// use peg_runtime::Arena;
/// let arena = Arena::build(|p| p.rule("call", "<" + p.tag("name", p.until(">")) + ">")).unwrap();
/// let out = arena.parse(b"<get_time", true).unwrap();
/// let call = out.ast.node(out.ast.roots[0]);
/// assert_eq!((call.rule.as_deref(), call.tag.as_deref()), (Some("call"), None));
/// let name = out.ast.node(call.children[0]);
/// assert_eq!((name.tag.as_deref(), name.start, name.end, name.partial), (Some("name"), 1, 9, true));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AstNode {
    /// The semantic tag (`reasoning`, `tool_name`, ...), for nodes made by `tag`.
    pub tag: Option<Arc<str>>,
    /// The rule name, for nodes made by `rule`.
    pub rule: Option<Arc<str>>,
    /// Byte offset where the match starts.
    pub start: usize,
    /// Byte offset where the match ends (exclusive).
    pub end: usize,
    /// Child nodes in input order.
    pub children: Vec<AstId>,
    /// The match was cut by the end of a partial input and may still grow.
    pub partial: bool,
    /// The matched bytes contain invalid UTF-8 (kept as is; [`Ast::text`] replaces it).
    pub invalid_utf8: bool,
}

/// What a visitor tells [`Ast::visit`] to do next.
///
/// ```
/// use peg_runtime::{Arena, Visit};
/// let arena = Arena::build(|p| p.tag("outer", p.tag("inner", "a")) + p.tag("next", "b")).unwrap();
/// let out = arena.parse(b"ab", false).unwrap();
/// let mut seen = Vec::new();
/// out.ast.visit(|_, node, _| {
///     seen.push(node.tag.as_deref().unwrap().to_owned());
///     Visit::Skip // not into `outer`'s children
/// });
/// assert_eq!(seen, ["outer", "next"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Visit this node's children.
    Descend,
    /// Skip this node's children.
    Skip,
    /// Stop the walk.
    Stop,
}

/// The nodes of one parse; top-level nodes in [`Ast::roots`].
///
/// ```
/// use peg_runtime::Arena;
/// let arena = Arena::build(|p| p.tag("call", "<" + p.tag("name", p.until(">")) + ">")).unwrap();
/// let input = b"<get_time>";
/// let ast = arena.parse(input, false).unwrap().ast;
/// let name = ast.find_by_tag("name")[0];
/// assert_eq!(ast.text(name, input), "get_time");
/// assert_eq!(ast.dump(input), "#call 0..10 \"<get_time>\"\n  #name 1..9 \"get_time\"\n");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ast {
    /// All nodes; an [`AstId`] indexes here.
    pub nodes: Vec<AstNode>,
    /// Top-level nodes in input order.
    pub roots: Vec<AstId>,
}

impl Ast {
    /// The node `id`.
    #[inline]
    pub fn node(&self, id: AstId) -> &AstNode {
        &self.nodes[id.0 as usize]
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the AST has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The text a node matched; invalid UTF-8 becomes U+FFFD.
    pub fn text<'i>(&self, id: AstId, input: &'i [u8]) -> Cow<'i, str> {
        let n = self.node(id);
        String::from_utf8_lossy(&input[n.start..n.end])
    }

    /// Depth-first, pre-order walk from the roots; `f` gets the id, the node and its depth.
    pub fn visit(&self, mut f: impl FnMut(AstId, &AstNode, usize) -> Visit) {
        let mut stack: Vec<(AstId, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((id, depth)) = stack.pop() {
            let node = self.node(id);
            match f(id, node, depth) {
                Visit::Stop => return,
                Visit::Skip => {}
                Visit::Descend => stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1))),
            }
        }
    }

    /// All nodes tagged `tag`, in pre-order.
    pub fn find_by_tag(&self, tag: &str) -> Vec<AstId> {
        let mut out = Vec::new();
        self.visit(|id, n, _| {
            if n.tag.as_deref() == Some(tag) {
                out.push(id);
            }
            Visit::Descend
        });
        out
    }

    /// A readable indented dump: one node a line with tag/rule, span, flags and text.
    pub fn dump(&self, input: &[u8]) -> String {
        let mut s = String::new();
        self.visit(|id, n, depth| {
            let label = match (&n.tag, &n.rule) {
                (Some(t), _) => format!("#{t}"),
                (None, Some(r)) => format!("@{r}"),
                (None, None) => "?".to_owned(),
            };
            let flags = match (n.partial, n.invalid_utf8) {
                (true, true) => " partial invalid-utf8",
                (true, false) => " partial",
                (false, true) => " invalid-utf8",
                (false, false) => "",
            };
            s.push_str(&format!("{:indent$}{label} {}..{}{flags} {:?}\n", "", n.start, n.end, self.text(id, input), indent = depth * 2));
            Visit::Descend
        });
        s
    }
}
