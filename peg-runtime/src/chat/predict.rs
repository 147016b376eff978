//! Predicting a growing node's growth, so that a stream need not re-parse on every chunk.
//!
//! A parse costs a fixed amount however small the chunk. While the end of input is inside a
//! text node whose parser is an `until` (or `rest`) or inside a JSON string, what the next
//! parse will do with a chunk is known in advance for most chunks: the node simply extends.
//! For such chunks the stream folds the growth directly and parses only when a chunk may
//! change the structure (a delimiter or its prefix, a quote, an escape cut by the chunk end).
//! Skipping a parse never changes the result, only when it is computed: the next real parse
//! resumes from the session's memo and agrees with what was folded.

use std::collections::{HashMap, HashSet};

use crate::arena::{Arena, Node, NodeId, PythonKind};
use crate::chat::builder::tags;
use crate::chat::mapper::Kind;
use crate::leaf::Starts;

/// How a node of one tag grows at the end of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Growth {
    /// By every chunk without an occurrence or a cut-off prefix of these delimiters
    /// (`rest` has none).
    Until(Vec<String>),
    /// By every chunk of plain string characters while inside a JSON or Python string.
    JsonString,
}

/// Growth per text tag, for tags whose every parser agrees on it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Predictor {
    /// Indexed like `TEXT_TAGS`.
    by_tag: [Option<Growth>; 5],
    /// The first two bytes of each tag's `until` delimiters.
    starts: [Starts; 5],
    /// Per tag, whether every parser of it agrees exactly: all are scanners, or all are
    /// `until`s of the same delimiters. The parser a text is read by can then say no more.
    exact: [bool; 5],
}

const TEXT_TAGS: [&str; 5] = [tags::CONTENT, tags::REASONING, tags::TOOL_ARGS, tags::TOOL_ARG_STRING_VALUE, tags::TOOL_ARG_JSON_VALUE];

impl Predictor {
    pub(crate) fn new(arena: &Arena) -> Predictor {
        // Every tag of a text kind counts, those inside lookaheads too. Only a node of the
        // parse's AST grows, and a lookahead builds none (its child's nodes are dropped, and a
        // child that reaches the end of input makes the lookahead need more input, which stops
        // the parse where the lookahead starts: nothing after it is in the AST). So a copy
        // inside a lookahead never grows; whether a lookahead that held one decided already
        // cannot change while the real node grows: it decided without reading the end.
        // Hermes's grammar holds copies of its calls inside the lookaheads that end its content;
        // classified like the real ones, they agree with them.
        let mut by_tag: HashMap<&'static str, Option<Growth>> = HashMap::new();
        let mut differ: HashSet<&'static str> = HashSet::new();
        for node in arena.nodes() {
            let Node::Tag { tag, child } = node else { continue };
            let Some(&name) = TEXT_TAGS.iter().find(|t| **t == tag.as_str()) else { continue };
            let g = classify(arena, *child, 0);
            let merged = match (by_tag.remove(name), g) {
                (None, g) => g,
                (Some(Some(Growth::Until(mut a))), Some(Growth::Until(b))) => {
                    if a.len() != b.len() || b.iter().any(|d| !a.contains(d)) {
                        differ.insert(name);
                    }
                    for d in b {
                        if !a.contains(&d) {
                            a.push(d);
                        }
                    }
                    Some(Growth::Until(a))
                }
                (Some(Some(Growth::JsonString)), Some(Growth::JsonString)) => Some(Growth::JsonString),
                _ => None,
            };
            by_tag.insert(name, merged);
        }
        let by_tag = TEXT_TAGS.map(|t| by_tag.remove(t).flatten());
        let exact = std::array::from_fn(|i| by_tag[i].is_some() && !differ.contains(TEXT_TAGS[i]));
        let starts = std::array::from_fn(|i| match &by_tag[i] {
            Some(Growth::Until(d)) => Starts::new(d.iter().map(|d| d.as_bytes())),
            _ => Starts::default(),
        });
        Predictor { by_tag, starts, exact }
    }

    /// [`Predictor::growth`] by text kind, without comparing tag names, with the first two
    /// bytes of its delimiters when it grows like an `until`, and whether every parser of the
    /// kind agrees exactly (see [`Predictor::exact`]).
    #[inline(always)]
    pub(crate) fn growth_of(&self, kind: Kind) -> Option<(&Growth, &Starts, bool)> {
        let i = match kind {
            Kind::Content => 0,
            Kind::Reasoning => 1,
            Kind::ToolArgs => 2,
            Kind::ArgString => 3,
            Kind::ArgJson => 4,
            _ => return None,
        };
        Some((self.by_tag[i].as_ref()?, &self.starts[i], self.exact[i]))
    }

    #[cfg(test)]
    pub(crate) fn growth(&self, tag: &str) -> Option<&Growth> {
        TEXT_TAGS.iter().position(|t| *t == tag).and_then(|i| self.by_tag[i].as_ref())
    }
}

/// For each text tag whose parser starts with a literal (after optional whitespace), that
/// literal: e.g. a `content` tag around a whole `<think>...</think>` block.
pub(crate) fn leading_literals(arena: &Arena) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for node in arena.nodes() {
        let Node::Tag { tag, child } = node else { continue };
        let Some(&name) = TEXT_TAGS.iter().find(|t| **t == tag.as_str()) else { continue };
        if let Some(lit) = leading_literal(arena, *child, 0) {
            out.push((name, lit));
        }
    }
    out
}

/// Whether every parser of native arguments (`tool_args`) is a JSON scanner: their text is
/// JSON as written, but for raw control characters in strings (see [`PyToJson::json`]), or
/// a Python dict, which that pass-through turns to Python where it shows one.
///
/// [`PyToJson::json`]: crate::chat::json_text::PyToJson::json
pub(crate) fn args_are_json(arena: &Arena) -> bool {
    fn scanned(arena: &Arena, id: NodeId, depth: usize) -> bool {
        match arena.node(arena.resolve(id)) {
            _ if depth > 32 => false,
            // (A Python dict: the pass-through turns to Python at its first `'` or word.)
            Node::Json { .. } | Node::JsonPrefix | Node::Python { kind: PythonKind::Dict } => true,
            Node::Choice { children } => !children.is_empty() && children.iter().all(|&c| scanned(arena, c, depth + 1)),
            Node::Rule { child, .. }
            | Node::Schema { child, .. }
            | Node::Gbnf { child, .. }
            | Node::Constrained { nodes: [child, _] }
            | Node::Atomic { child } => scanned(arena, *child, depth + 1),
            _ => false,
        }
    }
    // Arguments an atomic node holds are a recovered Python dict among JSON arguments (read
    // whole, opened by `{'`): the JSON pass-through turns to Python at that quote.
    let whole: std::collections::HashSet<NodeId> = arena
        .nodes()
        .iter()
        .filter_map(|n| match n {
            Node::Atomic { child } => Some(arena.resolve(*child)),
            _ => None,
        })
        .collect();
    arena.nodes().iter().enumerate().all(|(i, n)| match n {
        Node::Tag { tag, child } if tag.as_str() == tags::TOOL_ARGS => whole.contains(&NodeId(i as u32)) || scanned(arena, *child, 0),
        _ => true,
    })
}

/// Whether, inside some `tool` node, a `tool_id` can come after the call's arguments (a
/// `tool_args` or `tool_arg*` node), e.g. `{"name": ..., "arguments": ..., "id": ...}`. The
/// mapper then announces a call whose arguments start before its id without one, and sends
/// the id in a later fragment; in other grammars a call without an id by then gets a
/// generated one.
pub(crate) fn id_after_args(arena: &Arena) -> bool {
    const ARGS: u8 = 1;
    const ID: u8 = 2;
    const AFTER: u8 = 4;
    let nodes = arena.nodes();
    if !nodes.iter().any(|n| matches!(n, Node::Tag { tag, .. } if tag == tags::TOOL_ID)) {
        return false;
    }
    // Per node: it can produce arguments, an id, an id after arguments. Rules may refer to
    // each other in cycles, so compute the least fixpoint with a worklist: a node's flags
    // only grow, at most three times, so the work is linear in the number of edges.
    // Parents of each node (through references), flat: those of `c` are
    // `parents[starts[c]..starts[c + 1]]`.
    let mut starts = vec![0u32; nodes.len() + 1];
    for node in nodes {
        for &c in node.children() {
            starts[arena.resolve(c).index() + 1] += 1;
        }
    }
    for i in 0..nodes.len() {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let mut parents = vec![0u32; starts[nodes.len()] as usize];
    for (i, node) in nodes.iter().enumerate() {
        for &c in node.children() {
            let c = arena.resolve(c).index();
            parents[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
    }
    let mut sum = vec![0u8; nodes.len()];
    let of = |sum: &[u8], id: NodeId| sum[arena.resolve(id).index()];
    let mut work: Vec<u32> = (0..nodes.len() as u32).collect();
    while let Some(i) = work.pop() {
        let i = i as usize;
        let s = match &nodes[i] {
            Node::Tag { tag, child } => match tag.as_str() {
                tags::TOOL_ID => ID | of(&sum, *child),
                tags::TOOL_ARGS | tags::TOOL_ARGS_STRING | tags::TOOL_ARG | tags::TOOL_ARG_NAME | tags::TOOL_ARG_STRING_VALUE | tags::TOOL_ARG_JSON_VALUE => {
                    ARGS | of(&sum, *child)
                }
                // A nested call is its own scope.
                tags::TOOL => 0,
                _ => of(&sum, *child),
            },
            Node::Sequence { children } => children.iter().fold(0, |acc, &c| {
                let c = of(&sum, c);
                let after = if acc & ARGS != 0 && c & ID != 0 { AFTER } else { 0 };
                acc | c | after
            }),
            Node::Choice { children } => children.iter().fold(0, |acc, &c| acc | of(&sum, c)),
            Node::Repeat { child, max, .. } => {
                let c = of(&sum, *child);
                // A second round follows the first.
                let loops = max.is_none_or(|m| m > 1);
                c | if loops && c & (ARGS | ID) == ARGS | ID { AFTER } else { 0 }
            }
            // A lookahead produces no nodes.
            Node::Peek { .. } | Node::Negate { .. } => 0,
            Node::Rule { child, .. }
            | Node::Schema { child, .. }
            | Node::Atomic { child }
            | Node::Gbnf { child, .. }
            | Node::Constrained { nodes: [child, _] } => of(&sum, *child),
            // Read through `resolve` by whoever refers to it.
            _ => 0,
        };
        if s | sum[i] != sum[i] {
            sum[i] |= s;
            work.extend_from_slice(&parents[starts[i] as usize..starts[i + 1] as usize]);
        }
    }
    nodes.iter().any(|n| matches!(n, Node::Tag { tag, child } if tag == tags::TOOL && of(&sum, *child) & AFTER != 0))
}

fn leading_literal(arena: &Arena, id: NodeId, depth: usize) -> Option<String> {
    if depth > 32 {
        return None;
    }
    match arena.node(arena.resolve(id)) {
        Node::Literal { text } if !text.is_empty() => Some(text.clone()),
        Node::Sequence { children } => {
            let first = children.iter().find(|&&c| !matches!(arena.node(arena.resolve(c)), Node::Space | Node::Eps))?;
            leading_literal(arena, *first, depth + 1)
        }
        Node::Rule { child, .. } | Node::Schema { child, .. } | Node::Gbnf { child, .. } | Node::Constrained { nodes: [child, _] } => {
            leading_literal(arena, *child, depth + 1)
        }
        _ => None,
    }
}

fn classify(arena: &Arena, id: NodeId, depth: usize) -> Option<Growth> {
    if depth > 32 {
        return None;
    }
    match arena.node(arena.resolve(id)) {
        Node::Until { delimiters } => Some(Growth::Until(delimiters.clone())),
        Node::Rest => Some(Growth::Until(Vec::new())),
        node if node.scans_strings() => Some(Growth::JsonString),
        Node::Choice { children } if !children.is_empty() => {
            let all = children.iter().all(|&c| classify(arena, c, depth + 1) == Some(Growth::JsonString));
            all.then_some(Growth::JsonString)
        }
        // `until (… until)*`: text whose delimiters a lookahead may take as text. At the end
        // of input inside either `until`, what came before is decided, and a chunk without its
        // delimiters only extends it.
        Node::Sequence { children } if children.len() == 2 => {
            let first = classify(arena, children[0], depth + 1).filter(|g| matches!(g, Growth::Until(d) if !d.is_empty()))?;
            let Node::Repeat { child, .. } = arena.node(arena.resolve(children[1])) else { return None };
            let Node::Sequence { children: round } = arena.node(arena.resolve(*child)) else { return None };
            (classify(arena, *round.last()?, depth + 1)? == first).then_some(first)
        }
        Node::Rule { child, .. } | Node::Schema { child, .. } | Node::Gbnf { child, .. } | Node::Constrained { nodes: [child, _] } => {
            classify(arena, *child, depth + 1)
        }
        _ => None,
    }
}

/// Whether appending `chunk` to `input` (which ends inside an `until` node that found no
/// delimiter and no delimiter prefix) only extends the node.
#[cfg(test)]
pub(crate) fn until_extends(delimiters: &[String], chunk: &[u8]) -> bool {
    until_extends_with(&Starts::new(delimiters.iter().map(|d| d.as_bytes())), delimiters, chunk)
}

/// [`until_extends`] with the delimiters' first two bytes gathered beforehand.
#[inline]
pub(crate) fn until_extends_with(starts: &Starts, delimiters: &[String], chunk: &[u8]) -> bool {
    // A delimiter starting before the chunk would have left a prefix at the old end (and the
    // node would not have reached it); so only starts inside the chunk matter.
    // A delimiter starts at `j` if it and the rest of the chunk agree on their common length
    // (all of it, or a prefix cut by the chunk end). Compared bytewise: the lengths are a few
    // bytes, shorter than a `memcmp` call.
    for j in 0..chunk.len() {
        let rem = &chunk[j..];
        if starts.may_start(rem) && delimiters.iter().any(|d| d.as_bytes().first() == Some(&rem[0]) && rem.iter().zip(d.as_bytes()).all(|(a, b)| a == b)) {
            return false;
        }
    }
    true
}

/// How much of `text`, appended inside a string opened by `quote`, a parse would add to the
/// string: all of it, or all but a final backslash whose escape is still to come (a parse
/// leaves that out too). `None` if the text may leave the string or holds an escape that
/// takes a parse (`\u`, Python escapes).
#[inline(always)]
pub(crate) fn string_growth(quote: char, text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if quote.is_ascii() && b.iter().all(|&c| c >= 0x20 && c != b'\\' && c != quote as u8) {
        // Plain characters only (the common case).
        return Some(b.len());
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c < 0x20 || c as char == quote => return None,
            b'\\' if quote == '"' => match b.get(i + 1) {
                None => return Some(i),
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                    i += 2;
                    continue;
                }
                Some(_) => return None,
            },
            b'\\' => return None,
            _ => {}
        }
        i += 1;
    }
    Some(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::NativeBuilder;

    #[test]
    fn arguments_are_json_when_every_parser_of_them_is_a_json_scanner() {
        let json = NativeBuilder::build(|p| p.tool_args(p.json_object() | p.rule("args", p.json())) + p.tool_args(p.atomic(p.json_array()))).unwrap();
        assert!(args_are_json(&json));
        let python = NativeBuilder::build(|p| p.tool_args(p.json()) + p.tool_args(p.json() | p.python())).unwrap();
        assert!(!args_are_json(&python));
        let text = NativeBuilder::build(|p| p.tool_args(p.until("</args>"))).unwrap();
        assert!(!args_are_json(&text));
    }

    #[test]
    fn tags_classify_by_their_parsers() {
        let arena = NativeBuilder::build(|p| {
            p.content(p.until("<tool_call>"))
                + p.tool_args(p.json() | p.python())
                + p.reasoning(p.until("</think>"))
                + p.reasoning(p.rest())
                + p.tag(tags::TOOL_ARG_STRING_VALUE, p.until("x"))
        })
        .unwrap();
        let pr = Predictor::new(&arena);
        assert_eq!(pr.growth(tags::CONTENT), Some(&Growth::Until(vec!["<tool_call>".to_owned()])));
        assert_eq!(pr.growth(tags::TOOL_ARGS), Some(&Growth::JsonString));
        assert_eq!(pr.growth(tags::REASONING), Some(&Growth::Until(vec!["</think>".to_owned()])));
        assert_eq!(pr.growth(tags::TOOL_ARG_STRING_VALUE), Some(&Growth::Until(vec!["x".to_owned()])));
    }

    /// Copies of tagged parsers inside lookaheads (Hermes's content ends where a call would
    /// parse) never grow: they count like the real ones, so copies that agree with them keep
    /// the prediction, and one that does not still takes it away.
    #[test]
    fn copies_inside_lookaheads_classify_like_the_real_ones() {
        let arena = NativeBuilder::build(|p| {
            let call = || "<c>" + p.tool_args(p.json()) + "</c>";
            let text = p.until("<c>") + p.zero_or_more(p.negate(call()) + p.any() + p.until("<c>"));
            p.content(text) + p.zero_or_more(call()) + p.peek(p.tag(tags::TOOL_ARG_STRING_VALUE, p.chars("[a-z]", 1, None)))
        })
        .unwrap();
        let pr = Predictor::new(&arena);
        assert_eq!(pr.growth(tags::TOOL_ARGS), Some(&Growth::JsonString));
        assert_eq!(pr.growth(tags::CONTENT), Some(&Growth::Until(vec!["<c>".to_owned()])));
        assert_eq!(pr.growth(tags::TOOL_ARG_STRING_VALUE), None);
        let arena = NativeBuilder::build(|p| {
            p.tool_args(p.json())
                + p.tag(tags::TOOL_ARG_STRING_VALUE, p.until("x"))
                + p.peek(p.tool_args(p.chars("[a-z]", 1, None)) + p.tag(tags::TOOL_ARG_STRING_VALUE, p.until("y")))
        })
        .unwrap();
        let pr = Predictor::new(&arena);
        assert_eq!(pr.growth(tags::TOOL_ARGS), None);
        assert_eq!(pr.growth(tags::TOOL_ARG_STRING_VALUE), Some(&Growth::Until(vec!["x".to_owned(), "y".to_owned()])));
    }

    /// A value whose delimiter a lookahead may take as text grows like its `until`.
    #[test]
    fn until_continued_past_a_delimiter_classifies_as_until() {
        let arena = NativeBuilder::build(|p| {
            let text = p.until("</v>") + p.zero_or_more(p.negate("</v>" << p.literal("<v>")) + p.any() + p.until("</v>"));
            let other = p.until("</v>") + p.zero_or_more(p.any() + p.until("</w>"));
            p.tag(tags::TOOL_ARG_STRING_VALUE, text) + p.tag(tags::CONTENT, other)
        })
        .unwrap();
        let pr = Predictor::new(&arena);
        assert_eq!(pr.growth(tags::TOOL_ARG_STRING_VALUE), Some(&Growth::Until(vec!["</v>".to_owned()])));
        assert_eq!(pr.growth(tags::CONTENT), None);
    }

    #[test]
    fn ids_after_arguments_are_found_in_tool_scopes() {
        use crate::chat::ConstructedBuilder;
        let native = |order: &dyn Fn(&NativeBuilder) -> crate::Parser<'_>| {
            let arena =
                NativeBuilder::build(|p| p.content(p.until("[")) + p.zero_or_more("[" << p.tool(p.tool_open("{") << order(p) << p.tool_close("}")) << "]"))
                    .unwrap();
            id_after_args(&arena)
        };
        fn name(p: &NativeBuilder) -> crate::Parser<'_> {
            p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
        }
        fn args(p: &NativeBuilder) -> crate::Parser<'_> {
            p.json_member("arguments", p.tool_args(p.json()))
        }
        fn id(p: &NativeBuilder) -> crate::Parser<'_> {
            p.json_member("id", "\"" + p.tool_id(p.json_string_content()) + "\"")
        }
        // Mistral Nemo: an optional id after the arguments.
        assert!(native(&|p| name(p) << "," << args(p) << p.optional(p.literal(",") << id(p))));
        // Ids first, or none: arguments stream live.
        assert!(!native(&|p| p.optional(id(p) << ",") << name(p) << "," << args(p)));
        assert!(!native(&|p| name(p) << "," << args(p)));
        // Alternatives are not sequences: no ordering has the id after the arguments.
        assert!(!native(&|p| p.choice([args(p) << "," << name(p), id(p) << "," << name(p) << "," << args(p)])));
        // One does.
        assert!(native(&|p| p.choice([id(p) << "," << name(p) << "," << args(p), name(p) << "," << args(p) << "," << id(p)])));
        // Through a rule reference.
        let arena = NativeBuilder::build(|p| {
            // Referenced before it is defined.
            let call = p.tool(p.tool_open("{") << name(p) << "," << args(p) << "," << p.rule_ref("id") << p.tool_close("}"));
            p.rule("id", id(p));
            p.content(p.until("[")) + p.zero_or_more("[" << call << "]")
        })
        .unwrap();
        assert!(id_after_args(&arena));
        // Calls in a loop outside the tool scope: the next call's id does not count.
        let arena = NativeBuilder::build(|p| {
            let call = p.tool(p.tool_open("{") << id(p) << "," << name(p) << "," << args(p) << p.tool_close("}"));
            p.content(p.until("[")) + p.zero_or_more(call)
        })
        .unwrap();
        assert!(!id_after_args(&arena));
        // Constructed arguments followed by an id section (a `PostArgs` call id).
        let arena = ConstructedBuilder::build(|p| {
            let arg = p.tool_arg(
                p.tool_arg_open("<arg=" + p.tool_arg_name(p.chars("[a-z]", 1, None)) + ">")
                    + p.tool_arg_string_value(p.until("</arg>"))
                    + p.tool_arg_close("</arg>"),
            );
            let call = p.tool(
                p.tool_open("<call=" + p.tool_name(p.chars("[a-z]", 1, None)) + ">")
                    + p.zero_or_more(arg)
                    + "<id>"
                    + p.tool_id(p.until("</id>"))
                    + "</id>"
                    + p.tool_close("</call>"),
            );
            p.content(p.until("<call=")) + p.zero_or_more(call)
        })
        .unwrap();
        assert!(id_after_args(&arena));
    }

    #[test]
    fn chunk_checks() {
        let d = vec!["\n</parameter>".to_owned()];
        assert!(until_extends(&d, b"ab\n c"));
        assert!(!until_extends(&d, b"ab\n</"));
        assert!(!until_extends(&d, b"a\n</parameter>b"));
        assert!(until_extends(&[], b"anything"));
        assert_eq!(string_growth('"', "ab\\n\\\"c'"), Some(8));
        assert_eq!(string_growth('"', "ab\\"), Some(2));
        assert_eq!(string_growth('"', "a\"b"), None);
        assert_eq!(string_growth('"', "a\\u0041"), None);
        assert_eq!(string_growth('"', "a\nb"), None);
        assert_eq!(string_growth('\'', "a\"b"), Some(3));
        assert_eq!(string_growth('\'', "a'b"), None);
        assert_eq!(string_growth('\'', "a\\'b"), None);
    }
}
