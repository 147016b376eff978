//! Quick failures: for each node, where it fails without a call into it.
//!
//! A chat grammar is wide: a lenient one tries every tool's call form, then the recovery
//! shapes, at each place a call may start, and nearly all of them fail on their first byte
//! (`{` where the text has `<`), or, at the end of a complete output, at once. Knowing that
//! from the arena, the engine answers such a node with the failure it would compute, without
//! a call into it, a memo entry or an AST node.
//!
//! - A node *fails on byte `b`* when, at a position holding `b` (before the end of input), it
//!   fails without looking at the end of input: `Res::fail(pos)`, partial and complete alike.
//! - A node *fails at the end* when, at the end of complete input, it fails there: a failure
//!   at that position, which looked at the end of input or not (both are kept).
//!
//! Both are least fixpoints, so a rule that refers to itself before reading a byte (left
//! recursion) claims nothing and is evaluated as before.

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use crate::fx_hash::FxMap;
use crate::json::{Dialect, Scanner, Target};
use crate::leaf::{self, Res};
use crate::node::{Node, NodeId};
use crate::outcome::Outcome;

/// A set of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Bytes([u64; 4]);

impl Hash for Bytes {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for w in self.0 {
            h.write_u64(w);
        }
    }
}

impl Bytes {
    const NONE: Bytes = Bytes([0; 4]);
    const ALL: Bytes = Bytes([u64::MAX; 4]);

    fn without(mut self, b: u8) -> Bytes {
        self.0[usize::from(b >> 6)] &= !(1 << (b & 63));
        self
    }

    #[inline]
    fn contains(&self, b: u8) -> bool {
        self.0[usize::from(b >> 6)] >> (b & 63) & 1 != 0
    }

    fn and(self, o: Bytes) -> Bytes {
        Bytes(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }

    fn or(self, o: Bytes) -> Bytes {
        Bytes(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
}

/// Per node, the bytes it fails on at once and whether it fails at the end (see the module
/// docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct QuickFails {
    /// Distinct sets; index 0 is the empty set.
    sets: Vec<Bytes>,
    /// Per node, its set's index.
    of_node: Vec<u16>,
    /// Per node, what it does at the end of complete input.
    at_end: Vec<AtEnd>,
}

/// What a node does at the end of complete input, where that is known without a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtEnd {
    Unknown,
    /// Fails there; `touched`: the failure looked at the end of input.
    Fails {
        touched: bool,
    },
    /// Succeeds there, matching nothing.
    Empty {
        touched: bool,
    },
}

impl QuickFails {
    /// The sets of `nodes`, with `resolved` mapping each `Ref` to its rule.
    pub(crate) fn new(nodes: &[Node], resolved: &[NodeId]) -> QuickFails {
        // What is known so far: a node fails at once (`fail`), or matches nothing and succeeds
        // at once (`empty`), without looking at the end of input. Leaves are known from the
        // start; the others only grow, pass by pass.
        let (mut fail, mut empty): (Vec<Bytes>, Vec<Bytes>) = nodes.iter().map(leaf).unzip();
        // In an order with children before their parents, one pass settles all but recursion,
        // which takes a few more. Every pass's sets are sound on their own.
        let order = composites(nodes);
        for _ in 0..32 {
            let mut changed = false;
            for &i in &order {
                let i = i as usize;
                let Some((f, e)) = inner(&nodes[i], NodeId(i as u32), resolved, &fail, &empty) else { continue };
                if (f, e) != (fail[i], empty[i]) {
                    (fail[i], empty[i]) = (f.or(fail[i]), e.or(empty[i]));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut index: FxMap<Bytes, u16> = FxMap::default();
        index.insert(Bytes::NONE, 0);
        let mut sets = vec![Bytes::NONE];
        let of_node = fail
            .iter()
            .map(|s| match index.get(s) {
                Some(&k) => k,
                None if sets.len() < usize::from(u16::MAX) => {
                    let k = sets.len() as u16;
                    sets.push(*s);
                    index.insert(*s, k);
                    k
                }
                None => 0,
            })
            .collect();
        QuickFails { sets, of_node, at_end: at_end(nodes, resolved, &order) }
    }

    /// Whether node `id` fails at once at a position holding byte `b`.
    #[inline]
    pub(crate) fn fails_on(&self, id: NodeId, b: u8) -> bool {
        match self.of_node.get(id.index()) {
            Some(0) | None => false,
            Some(&k) => self.sets[usize::from(k)].contains(b),
        }
    }

    /// Whether node `id` fails at the end of complete input: `Some(touched)`, whether that
    /// failure looked at the end.
    #[inline]
    pub(crate) fn fails_at_end(&self, id: NodeId) -> Option<bool> {
        match self.at_end.get(id.index()) {
            Some(AtEnd::Fails { touched }) => Some(*touched),
            _ => None,
        }
    }
}

/// A leaf's (fail, empty) sets, following what the engine does with it (a composite node's
/// start from nothing).
fn leaf(node: &Node) -> (Bytes, Bytes) {
    let scanner = |dialect: Dialect, target: Target| (probe(dialect, target).first_bytes, Bytes::NONE);
    match node {
        Node::Eps => (Bytes::NONE, Bytes::ALL),
        Node::End => (Bytes::ALL, Bytes::NONE),
        Node::Literal { text } => match text.as_bytes().first() {
            Some(&first) => (Bytes::ALL.without(first), Bytes::NONE),
            None => (Bytes::NONE, Bytes::ALL),
        },
        // An ASCII byte the class refuses ends the run there; other bytes are decoded first.
        Node::Chars { class, min, .. } => {
            let mut taken = Bytes::NONE;
            for &(lo, hi) in &class.ranges {
                let (lo, hi) = (u32::from(lo), u32::from(hi).min(0x7f));
                for w in (lo >> 6)..=(hi >> 6).min(1) {
                    if lo > hi {
                        break;
                    }
                    let (from, to) = (lo.max(w * 64) - w * 64, hi.min(w * 64 + 63) - w * 64);
                    taken.0[w as usize] |= (u64::MAX >> (63 - to)) & (u64::MAX << from);
                }
            }
            let ascii = Bytes([u64::MAX, u64::MAX, 0, 0]);
            let refused = if class.negated { taken } else { ascii.and(Bytes(taken.0.map(|w| !w))) };
            if *min == 0 { (Bytes::NONE, refused) } else { (refused, Bytes::NONE) }
        }
        Node::Space => (Bytes::NONE, [b' ', b'\t', b'\n', b'\r'].into_iter().fold(Bytes::ALL, Bytes::without)),
        // The scanners and `marker` are asked: each byte alone, as the start of an input
        // that may continue. What they refuse without looking further they refuse anywhere.
        Node::Json { kind } => scanner(Dialect::Json, (*kind).into()),
        // Fails where a value fails at its first byte (it keeps what fit only past it).
        Node::JsonPrefix => scanner(Dialect::Json, Target::Value),
        Node::Python { kind } => scanner(Dialect::Python, (*kind).into()),
        Node::Marker => (fails_at_once(|input| leaf::marker(input, true, 0, None).0), Bytes::NONE),
        // Decided past the first byte or at the input's start, or composite: nothing yet.
        _ => (Bytes::NONE, Bytes::NONE),
    }
}

/// What a scanner (of one dialect and target) fails on at once.
#[derive(Debug, Clone, Copy)]
struct Probed {
    first_bytes: Bytes,
    at_end: AtEnd,
}

const TARGETS: [Target; 8] = [Target::Value, Target::Object, Target::Array, Target::String, Target::Number, Target::Bool, Target::Null, Target::StringContent];

/// Every scanner asked once per process: the answers depend on no arena.
fn probe(dialect: Dialect, target: Target) -> Probed {
    static PROBED: OnceLock<[[Probed; 8]; 2]> = OnceLock::new();
    let table = PROBED.get_or_init(|| {
        [Dialect::Json, Dialect::Python].map(|dialect| {
            TARGETS.map(|target| Probed {
                first_bytes: fails_at_once(|input| Scanner::new(dialect, target, 0).run(input, true).into()),
                at_end: at_end_of(Scanner::new(dialect, target, 0).run(b"", false).into()),
            })
        })
    });
    let t = TARGETS.iter().position(|&t| t == target).unwrap_or(0);
    table[usize::from(dialect == Dialect::Python)][t]
}

/// A leaf's result on no input, complete, as what it does at the end.
fn at_end_of(r: Res) -> AtEnd {
    match (r.outcome, r.end) {
        (Outcome::Fail, 0) => AtEnd::Fails { touched: r.touched },
        (Outcome::Success, 0) => AtEnd::Empty { touched: r.touched },
        _ => AtEnd::Unknown,
    }
}

/// The composite nodes, in id order: the builder adds a node's children before it, so one
/// pass in this order settles all but what a rule's reference reaches (a rule is added after
/// the references to it), which takes another pass or two.
fn composites(nodes: &[Node]) -> Vec<u32> {
    (0..nodes.len() as u32).filter(|&i| !nodes[i as usize].children().is_empty() || matches!(nodes[i as usize], Node::Ref { .. })).collect()
}

/// The bytes on which a leaf, run on that byte alone (an input that may continue), fails at
/// its start without looking at the end of input.
fn fails_at_once(run: impl Fn(&[u8]) -> Res) -> Bytes {
    let mut s = Bytes::NONE;
    for b in 0..=255u8 {
        let r = run(&[b]);
        if (r.outcome, r.end, r.touched) == (Outcome::Fail, 0, false) {
            s.0[usize::from(b >> 6)] |= 1 << (b & 63);
        }
    }
    s
}

/// The (fail, empty) sets of children run in turn while each goes on (matches nothing in a
/// sequence, fails in a choice): the node ends as the first child that does not.
fn sets_in_turn(children: impl Iterator<Item = (Bytes, Bytes)>, sequence: bool) -> (Bytes, Bytes) {
    let (mut on, mut stop) = (Bytes::ALL, Bytes::NONE);
    for (fail, empty) in children {
        let (goes_on, stops) = if sequence { (empty, fail) } else { (fail, empty) };
        stop = stop.or(on.and(stops));
        on = on.and(goes_on);
    }
    if sequence { (stop, on) } else { (on, stop) }
}

/// A composite node's (fail, empty) sets from its children's current ones, following what the
/// engine does with it; `None` for a leaf.
fn inner(node: &Node, id: NodeId, resolved: &[NodeId], fail: &[Bytes], empty: &[Bytes]) -> Option<(Bytes, Bytes)> {
    let of = |c: &NodeId| (fail[c.index()], empty[c.index()]);
    Some(match node {
        // Fails where a child fails after children that all matched nothing.
        Node::Sequence { children } => sets_in_turn(children.iter().map(of), true),
        // Fails where every child fails; matches nothing where the first child not failing does.
        Node::Choice { children } => sets_in_turn(children.iter().map(of), false),
        Node::Repeat { child, min, max } => {
            let (cf, ce) = of(child);
            if *max == Some(0) {
                (Bytes::NONE, Bytes::ALL)
            } else if *min == 0 {
                // No iteration, or one that matched nothing (the repeat stops there).
                (Bytes::NONE, cf.or(ce))
            } else {
                (cf, ce)
            }
        }
        Node::Peek { child } => of(child),
        Node::Negate { child } => {
            let (cf, ce) = of(child);
            (ce, cf)
        }
        Node::Ref { .. } => {
            let target = resolved[id.index()];
            if target == id { (Bytes::NONE, Bytes::NONE) } else { of(&target) }
        }
        Node::Rule { child, .. } | Node::Tag { child, .. } | Node::Schema { child, .. } | Node::Gbnf { child, .. } | Node::Atomic { child } => of(child),
        Node::Constrained { nodes: [child, _] } => of(child),
        _ => return None,
    })
}

/// What each node does at the end of complete input, by asking each leaf on an empty input and
/// following what the engine does with composite nodes, to a fixpoint.
fn at_end(nodes: &[Node], resolved: &[NodeId], order: &[u32]) -> Vec<AtEnd> {
    let scan = |dialect: Dialect, target: Target| probe(dialect, target).at_end;
    let mut ends: Vec<AtEnd> = nodes
        .iter()
        .map(|node| match node {
            Node::Eps => AtEnd::Empty { touched: false },
            Node::End => AtEnd::Empty { touched: true },
            Node::Literal { text } => at_end_of(leaf::literal(b"", false, 0, text.as_bytes())),
            Node::Any => at_end_of(leaf::any(b"", false, 0)),
            Node::Chars { class, min, max } => at_end_of(leaf::chars(b"", false, 0, None, *min, *max, |c| class.matches(c)).0),
            Node::Space => at_end_of(leaf::space(b"", false, 0, None).0),
            Node::Marker => at_end_of(leaf::marker(b"", false, 0, None).0),
            Node::Json { kind } => scan(Dialect::Json, (*kind).into()),
            // A value that fits nothing keeps nothing: its failure stands.
            Node::JsonPrefix => scan(Dialect::Json, Target::Value),
            Node::JsonStringContent => scan(Dialect::Json, Target::StringContent),
            Node::Python { kind } => scan(Dialect::Python, (*kind).into()),
            // `start` depends on where the end is; `until` and `rest` are left to their calls.
            _ => AtEnd::Unknown,
        })
        .collect();
    for _ in 0..32 {
        let mut changed = false;
        for &i in order {
            let i = i as usize;
            if ends[i] != AtEnd::Unknown {
                continue;
            }
            let e = end_of(&nodes[i], NodeId(i as u32), resolved, &ends);
            if e != AtEnd::Unknown {
                ends[i] = e;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    ends
}

/// Children run in turn while each ends as `goes_on` says (a sequence's match nothing, a
/// choice's fail), the looks at the end of input adding up; the first that ends otherwise
/// ends the node.
fn in_turn(children: &[NodeId], ends: &[AtEnd], goes_on: fn(bool) -> AtEnd) -> AtEnd {
    let mut seen = false;
    for c in children {
        let e = ends[c.index()];
        let (AtEnd::Fails { touched } | AtEnd::Empty { touched }) = e else { return AtEnd::Unknown };
        seen |= touched;
        if e != goes_on(touched) {
            return match e {
                AtEnd::Fails { .. } => AtEnd::Fails { touched: seen },
                _ => AtEnd::Empty { touched: seen },
            };
        }
    }
    goes_on(seen)
}

/// A composite node at the end of complete input, from its children, as the engine runs it.
fn end_of(node: &Node, id: NodeId, resolved: &[NodeId], ends: &[AtEnd]) -> AtEnd {
    let of = |c: &NodeId| ends[c.index()];
    match node {
        // Children matching nothing in turn, to the first that fails.
        Node::Sequence { children } => in_turn(children, ends, |touched| AtEnd::Empty { touched }),
        // Children failing in turn, to the first that matches.
        Node::Choice { children } => in_turn(children, ends, |touched| AtEnd::Fails { touched }),
        Node::Repeat { child, min, max } => match (max, of(child)) {
            (Some(0), _) => AtEnd::Empty { touched: false },
            (_, AtEnd::Fails { touched }) if *min == 0 => AtEnd::Empty { touched },
            (_, AtEnd::Fails { touched }) => AtEnd::Fails { touched },
            // One iteration matching nothing meets the minimum.
            (_, e) => e,
        },
        Node::Peek { child } => of(child),
        Node::Negate { child } => match of(child) {
            AtEnd::Fails { touched } => AtEnd::Empty { touched },
            AtEnd::Empty { touched } => AtEnd::Fails { touched },
            AtEnd::Unknown => AtEnd::Unknown,
        },
        Node::Ref { .. } => {
            let target = resolved[id.index()];
            if target == id { AtEnd::Unknown } else { of(&target) }
        }
        Node::Rule { child, .. } | Node::Tag { child, .. } | Node::Schema { child, .. } | Node::Gbnf { child, .. } | Node::Atomic { child } => of(child),
        Node::Constrained { nodes: [child, _] } => of(child),
        _ => AtEnd::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use crate::test_rng::Rng;
    use crate::{Arena, NodeId, Outcome};

    /// A wide grammar like a lenient chat one: calls in several shapes, lookaheads that end
    /// the content, recovery alternatives, a recursive rule and a left-recursive one.
    fn wide() -> Arena {
        Arena::build(|p| {
            let value = p.rule(
                "value",
                p.chars("[0-9]", 1, None)
                    | ("=" + p.chars("[^\"<]", 1, None))
                    | ("~" + p.chars("[ -~]", 0, Some(4)) + p.chars("[?-Z]", 1, None))
                    | ("(" + p.space() + p.rule_ref("value") + p.space() + ")")
                    | p.json_object()
                    | p.json_string()
                    | p.python_kind(crate::PythonKind::Dict)
                    | p.json_prefix()
                    | p.json_number()
                    | p.python()
                    | p.marker(),
            );
            let _left = p.rule("left", (p.rule_ref("left") + "x") | "y");
            let name = p.tag("name", p.chars("[a-z_]", 1, None));
            let call = p.tag(
                "call",
                "{" + p.space()
                    + "\"name\""
                    + p.space()
                    + ":"
                    + p.space()
                    + "\""
                    + name
                    + "\""
                    + p.optional(p.space() + "," + p.space() + value)
                    + p.space()
                    + "}",
            );
            let list = "[" + p.space() + call + p.zero_or_more(p.space() + "," + p.space() + call) + p.space() + "]";
            let fenced = p.tag("fence", "```" + p.chars("[a-z]", 0, None)) + p.space() + call + p.space() + "```";
            let wrapped = p.negate("<x>") + p.peek("<" + p.chars("[a-z]", 1, Some(3))) + "<" + p.chars("[a-z]", 1, Some(3)) + ">" + p.space() + call;
            let section = "<tool>"
                + p.space()
                + p.atomic(list | call | fenced | wrapped | p.tag("odd", "!" + p.rule_ref("left")))
                + p.space()
                + (p.literal("</tool>") | p.tag("missing_close", p.space() + p.end()));
            let ends_content = p.peek(p.space() + (p.literal("<tool>") | "```"));
            p.tag("content", p.until_one_of(["<tool>", "```"])) + p.zero_or_more(p.negate(p.end()) + (section | (ends_content + fenced))) + p.space() + p.end()
        })
        .unwrap()
    }

    const PIECES: [&str; 34] = [
        "=ab",
        "~ Q",
        "?Z@",
        "!",
        "'",
        "{\"a\": 1}",
        "{'a': None}",
        "-1",
        "true",
        "[1, 2]",
        "<tool>",
        "</tool>",
        "{",
        "}",
        "[",
        "]",
        "\"name\"",
        ":",
        ",",
        "\"",
        " ",
        "\n",
        "get_w",
        "```",
        "json",
        "<x>",
        "<ab>",
        "(",
        ")",
        "42",
        "y",
        "x",
        "é",
        "\u{ff}",
    ];

    fn draw(rng: &mut Rng) -> Vec<u8> {
        let mut s = Vec::new();
        if rng.below(3) == 0 {
            s.extend_from_slice(b"Hi ");
        }
        for _ in 0..rng.below(24) {
            s.extend_from_slice(rng.pick(&PIECES).as_bytes());
        }
        if rng.below(8) == 0 {
            s.push(0xff);
        }
        s
    }

    /// Every node the sets say fails at once does, by the engine, at every position of many
    /// inputs, partial and complete: the property the engine's answer relies on.
    #[test]
    fn claimed_failures_are_failures() {
        let arena = wide();
        let mut rng = Rng(0x5eed_f1e5);
        let mut claimed = 0;
        for _ in 0..150 {
            let input = draw(&mut rng);
            for partial in [false, true] {
                for pos in 0..input.len() {
                    for i in 0..arena.nodes().len() {
                        let id = NodeId(i as u32);
                        if arena.quick_fails().fails_on(id, input[pos]) {
                            claimed += 1;
                            let r = arena.eval_at(id, &input, pos, partial);
                            assert_eq!(
                                (r.outcome, r.end, r.touched),
                                (Outcome::Fail, pos, false),
                                "node {i} at {pos} of {:?}",
                                String::from_utf8_lossy(&input)
                            );
                        }
                    }
                }
            }
        }
        assert!(claimed > 10_000, "{claimed}");
        // At the end of complete input: after every prefix of every input.
        let mut claimed = 0;
        let mut rng = Rng(0xe0d0_f1e5);
        for _ in 0..150 {
            let input = draw(&mut rng);
            for cut in 0..=input.len() {
                let prefix = &input[..cut];
                for i in 0..arena.nodes().len() {
                    let id = NodeId(i as u32);
                    if let Some(touched) = arena.quick_fails().fails_at_end(id) {
                        claimed += 1;
                        let r = arena.eval_at(id, prefix, cut, false);
                        assert_eq!(
                            (r.outcome, r.end, r.touched),
                            (Outcome::Fail, cut, touched),
                            "node {i} at the end of {:?}",
                            String::from_utf8_lossy(prefix)
                        );
                    }
                }
            }
        }
        assert!(claimed > 10_000, "{claimed}");
        // A left-recursive rule claims nothing before it reads: it is called as before.
        let left = arena.rule("left").unwrap();
        assert!(!arena.quick_fails().fails_on(left, b'z'));
    }

    /// Whole parses, partial and complete, equal those that call into every node.
    #[test]
    fn parses_equal_those_calling_every_node() {
        let arena = wide();
        let mut rng = Rng(0xfeed_0b17e);
        for _ in 0..400 {
            let input = draw(&mut rng);
            for partial in [false, true] {
                let fast = arena.parse(&input, partial);
                let slow = arena.parse_every_node(&input, partial);
                assert_eq!(fast.map_err(|e| e.kind()), slow.map_err(|e| e.kind()), "{:?} partial={partial}", String::from_utf8_lossy(&input));
            }
        }
    }
}
