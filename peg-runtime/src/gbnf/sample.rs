//! Random strings of a grammar's language: the test side of constrained decoding. A string
//! drawn here is one a model under the grammar could write, so a parser can be checked
//! against everything its grammar allows, not only against the examples someone wrote.

use super::{Element, Grammar, Item};
use crate::chars::CharClass;

/// Rule nesting past which a draw gives up (recursive rules could go on forever).
const MAX_DEPTH: usize = 40;
/// Length past which a draw gives up.
const MAX_LEN: usize = 4000;
/// Repetitions drawn past an item's minimum, at most.
const MAX_EXTRA: u32 = 3;

/// Draws strings from a [`Grammar`] (seeded, so a failure can be replayed).
///
/// ```
/// use peg_runtime::gbnf::Grammar;
/// let g = Grammar::parse(r#"root ::= "<" [a-z]{1,3} ">" | "x"+"#).unwrap();
/// let mut sampler = g.sampler(7);
/// for _ in 0..20 {
///     if let Some(s) = sampler.sample() {
///         assert!(g.accepts(&s), "{s}");
///     }
/// }
/// ```
#[derive(Debug)]
pub struct Sampler<'g> {
    grammar: &'g Grammar,
    state: u64,
}

impl Grammar {
    /// A sampler of this grammar's `root`, seeded with `seed`.
    pub fn sampler(&self, seed: u64) -> Sampler<'_> {
        // xorshift needs a state that is not zero.
        Sampler { grammar: self, state: seed ^ 0x9E37_79B9_7F4A_7C15 | 1 }
    }
}

impl Sampler<'_> {
    /// One string of the language of `root`, or `None` when the draw nested or grew past its
    /// bounds (draw again).
    pub fn sample(&mut self) -> Option<String> {
        let mut out = String::new();
        self.rule("root", 0, &mut out).then_some(out)
    }

    fn rand(&mut self, n: usize) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        if n == 0 { 0 } else { (self.state % n as u64) as usize }
    }

    /// A character of `class`: from its ranges, or from a pool of characters that matter to
    /// parsers (markup, quotes, escapes, whitespace, multi-byte text).
    fn pick_char(&mut self, class: &CharClass) -> Option<char> {
        const POOL: &[char] =
            &['a', 'z', 'Q', '0', '7', ' ', '\n', '\t', '<', '>', '/', '"', '\'', '\\', '{', '}', '[', ']', ',', ':', '-', '_', '.', 'é', '€', '😀'];
        if !class.negated && !class.ranges.is_empty() && self.rand(2) == 0 {
            let (lo, hi) = class.ranges[self.rand(class.ranges.len())];
            let span = (hi as u32 - lo as u32) as usize;
            return char::from_u32(lo as u32 + self.rand(span.min(200) + 1) as u32).filter(|c| class.matches(*c));
        }
        let candidates: Vec<char> = POOL.iter().copied().filter(|&c| class.matches(c)).collect();
        if candidates.is_empty() { class.ranges.first().map(|r| r.0).filter(|c| class.matches(*c)) } else { Some(candidates[self.rand(candidates.len())]) }
    }

    fn seq(&mut self, seq: &[Item], depth: usize, out: &mut String) -> bool {
        for item in seq {
            let room = item.max.map_or(MAX_EXTRA, |m| (m - item.min).min(MAX_EXTRA)) as usize;
            let n = item.min as usize + self.rand(room + 1);
            for _ in 0..n {
                let ok = match &item.element {
                    Element::Literal(s) => {
                        out.push_str(s);
                        true
                    }
                    Element::Class(c) => self.pick_char(c).map(|ch| out.push(ch)).is_some(),
                    Element::Any => {
                        let any = CharClass { ranges: vec![], negated: true };
                        self.pick_char(&any).map(|ch| out.push(ch)).is_some()
                    }
                    Element::Ref(name) => self.rule(name, depth + 1, out),
                    Element::Group(alts) => {
                        let alt = &alts[self.rand(alts.len())];
                        self.seq(alt, depth + 1, out)
                    }
                };
                if !ok || out.len() > MAX_LEN {
                    return false;
                }
            }
        }
        true
    }

    fn rule(&mut self, name: &str, depth: usize, out: &mut String) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let Some(rule) = self.grammar.rule(name) else { return false };
        let alt = &rule.alternatives[self.rand(rule.alternatives.len())];
        self.seq(alt, depth, out)
    }
}
