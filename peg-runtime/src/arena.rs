//! The arena: every parser node of a grammar in one vector, a rule table and a root.
//!
//! Nodes refer to each other by [`NodeId`]. An [`Arena`] is immutable once built; the
//! [`Builder`](crate::Builder) creates it. Derived data (delimiter searchers) is rebuilt on
//! deserialization, so the serialized form holds only the grammar itself.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};
pub use crate::kinds::{JsonKind, PythonKind};
use crate::leaf::Delimiters;
pub use crate::node::{Node, NodeId};
use crate::quick_fail::QuickFails;

/// Compiles the delimiters of an `until` node.
fn delimiter_search(delimiters: &[String]) -> Result<Delimiters, Error> {
    if delimiters.is_empty() || delimiters.iter().any(|d| d.is_empty()) {
        return Err(Error::new(ErrorKind::InvalidParser, "`until` needs non-empty delimiters"));
    }
    Delimiters::try_new(delimiters).map_err(|e| Error::new(ErrorKind::InvalidParser, "cannot build the delimiter automaton").with_source(e))
}

/// The serialized form of an arena: nodes, rules by name, root.
///
/// ```
/// use peg_runtime::{Arena, ArenaData, Node, NodeId, Outcome};
/// let data = ArenaData {
///     nodes: vec![Node::Literal { text: "hi".into() }, Node::Rule { name: "root".into(), child: NodeId(0), trigger: false }],
///     rules: vec![("root".into(), NodeId(1))],
///     root: NodeId(1),
/// };
/// let arena = Arena::from_data(data.clone()).unwrap();
/// assert_eq!(arena.data(), &data);
/// assert_eq!(arena.parse(b"hi", false).unwrap().result.outcome, Outcome::Success);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaData {
    /// All nodes; a node's id is its index.
    pub nodes: Vec<Node>,
    /// Rule name to its [`Node::Rule`] node, in definition order.
    pub rules: Vec<(String, NodeId)>,
    /// The parser the whole input is matched against.
    pub root: NodeId,
}

/// A built grammar: nodes, rules, root, and precomputed searchers.
///
/// ```
/// use peg_runtime::Arena;
/// let arena = Arena::build(|p| p.literal("<think>") + p.until("</think>") + "</think>").unwrap();
/// let json = arena.to_json();
/// assert_eq!(Arena::from_json(&json).unwrap(), arena);
/// ```
#[derive(Debug, Clone)]
pub struct Arena {
    data: ArenaData,
    rule_index: HashMap<String, NodeId>,
    /// For each node: the rule node a `Ref` resolves to (else itself).
    resolved: Vec<NodeId>,
    /// For each node: its delimiter searcher (`until` nodes only).
    searchers: Vec<Option<Delimiters>>,
    /// For each node: the tag or rule name its AST nodes carry, shared by every AST node.
    labels: Vec<Option<Arc<str>>>,
    /// For each node: where it fails at once (a first byte, the end of complete input),
    /// answered without a call into it. Computed by the first parse: an arena only turned
    /// into a grammar never needs them.
    quick_fails: OnceLock<QuickFails>,
}

impl PartialEq for Arena {
    fn eq(&self, other: &Arena) -> bool {
        self.data == other.data
    }
}

impl Arena {
    /// Validates `data` and precomputes what parsing needs.
    ///
    /// ```
    /// use peg_runtime::{Arena, ArenaData, ErrorKind, Node, NodeId};
    /// let data = ArenaData { nodes: vec![Node::Ref { name: "missing".into() }], rules: vec![], root: NodeId(0) };
    /// assert_eq!(Arena::from_data(data).unwrap_err().kind(), ErrorKind::UndefinedRule);
    /// ```
    pub fn from_data(data: ArenaData) -> Result<Arena, Error> {
        let n = data.nodes.len();
        let check = |id: NodeId| -> Result<(), Error> {
            if id.index() < n { Ok(()) } else { Err(Error::new(ErrorKind::InvalidArena, format!("node id {} out of range", id.0))) }
        };
        check(data.root).map_err(|_| Error::new(ErrorKind::MissingRoot, "the root is not a node of the arena"))?;
        let mut rule_index = HashMap::with_capacity(data.rules.len());
        for (name, id) in &data.rules {
            check(*id)?;
            match &data.nodes[id.index()] {
                Node::Rule { name: n2, .. } if n2 == name => {}
                _ => return Err(Error::new(ErrorKind::InvalidArena, format!("rule `{name}` does not point at its rule node"))),
            }
            if rule_index.insert(name.clone(), *id).is_some() {
                return Err(Error::new(ErrorKind::DuplicateRule, format!("rule `{name}` is defined twice")));
            }
        }
        let mut resolved = Vec::with_capacity(n);
        let mut searchers = Vec::with_capacity(n);
        // Arenas repeat delimiter sets (one per argument value): each is compiled once
        // (clones share the automaton).
        let mut compiled: HashMap<&[String], Delimiters> = HashMap::new();
        for (i, node) in data.nodes.iter().enumerate() {
            for &c in node.children() {
                check(c)?;
            }
            let mut target = NodeId(i as u32);
            let mut searcher = None;
            match node {
                Node::Ref { name } => {
                    target = *rule_index.get(name).ok_or_else(|| Error::new(ErrorKind::UndefinedRule, format!("rule `{name}` is not defined")))?;
                }
                Node::Until { delimiters } => {
                    searcher = Some(match compiled.get(delimiters.as_slice()) {
                        Some(d) => d.clone(),
                        None => {
                            let d = delimiter_search(delimiters)?;
                            compiled.insert(delimiters, d.clone());
                            d
                        }
                    })
                }
                Node::Repeat { min, max: Some(max), .. } if max < min => {
                    return Err(Error::new(ErrorKind::InvalidParser, format!("repeat bounds {min}..{max} are inverted")));
                }
                Node::Chars { min, max: Some(max), .. } if max < min => {
                    return Err(Error::new(ErrorKind::InvalidParser, format!("chars bounds {min}..{max} are inverted")));
                }
                _ => {}
            }
            resolved.push(target);
            searchers.push(searcher);
        }
        let labels = data
            .nodes
            .iter()
            .map(|node| match node {
                Node::Tag { tag, .. } => Some(Arc::from(tag.as_str())),
                Node::Rule { name, .. } => Some(Arc::from(name.as_str())),
                _ => None,
            })
            .collect();
        Ok(Arena { data, rule_index, resolved, searchers, labels, quick_fails: OnceLock::new() })
    }

    /// Builds an arena with the [`Builder`](crate::Builder) DSL; the closure returns the root.
    ///
    /// ```
    /// use peg_runtime::{Arena, Outcome};
    /// let arena = Arena::build(|p| p.rule("word", p.chars("[a-z]", 1, None)) << p.rule_ref("word")).unwrap();
    /// let out = arena.parse(b"hello  world", false).unwrap();
    /// assert_eq!((out.result.outcome, out.result.end), (Outcome::Success, 12));
    /// assert_eq!(arena.rules()[0].0, "word");
    /// ```
    pub fn build<'b, F>(f: F) -> Result<Arena, Error>
    where
        F: for<'a> FnOnce(&'a crate::Builder) -> crate::Parser<'a>,
    {
        let b = crate::Builder::new();
        let root = f(&b).id();
        b.finish(root)
    }

    /// The serializable form.
    pub fn data(&self) -> &ArenaData {
        &self.data
    }

    /// The node with id `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.data.nodes[id.index()]
    }

    /// All nodes; a node's id is its index.
    pub fn nodes(&self) -> &[Node] {
        &self.data.nodes
    }

    /// The root parser.
    pub fn root(&self) -> NodeId {
        self.data.root
    }

    /// Rules in definition order.
    pub fn rules(&self) -> &[(String, NodeId)] {
        &self.data.rules
    }

    /// The rule node named `name`.
    pub fn rule(&self, name: &str) -> Option<NodeId> {
        self.rule_index.get(name).copied()
    }

    /// Follows a `Ref` to its rule node; any other node is returned as is.
    #[inline]
    pub fn resolve(&self, id: NodeId) -> NodeId {
        self.resolved[id.index()]
    }

    /// The precomputed searcher of an `until` node.
    #[inline]
    pub(crate) fn searcher(&self, id: NodeId) -> Option<&Delimiters> {
        self.searchers[id.index()].as_ref()
    }

    /// The tag (of a `Tag` node) or name (of a `Rule` node) its AST nodes carry.
    #[inline]
    pub fn label(&self, id: NodeId) -> Option<&Arc<str>> {
        self.labels[id.index()].as_ref()
    }

    /// Where each node fails at once (see `quick_fail.rs`).
    #[inline]
    pub(crate) fn quick_fails(&self) -> &QuickFails {
        self.quick_fails.get_or_init(|| QuickFails::new(&self.data.nodes, &self.resolved))
    }

    /// Serializes to JSON (stable: node order and field order are fixed).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.data).expect("arena data is always serializable")
    }

    /// Deserializes and validates an arena from [`Arena::to_json`] output.
    pub fn from_json(text: &str) -> Result<Arena, Error> {
        let data: ArenaData = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::InvalidArena, format!("malformed arena JSON at line {}, column {}", e.line(), e.column())).with_source(e))?;
        Arena::from_data(data)
    }
}

impl Serialize for Arena {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.data.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Arena {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Arena, D::Error> {
        let data = ArenaData::deserialize(d)?;
        Arena::from_data(data).map_err(serde::de::Error::custom)
    }
}
