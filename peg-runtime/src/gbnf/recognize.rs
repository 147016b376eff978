//! An Earley recognizer over a compiled grammar.
//!
//! Repetitions are not expanded into helper rules: an Earley item carries a count for the
//! element it stands on, so `x{0,2000}` costs nothing up front and unbounded repetitions
//! collapse their count once the minimum is reached. Nullable elements are skipped directly
//! (Aycock–Horspool), and unproductive rules are pruned so that "some item is alive after
//! the input" means "the input can still be completed".

use std::collections::HashMap;

use super::{Element, Grammar, Item as GItem};
use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};
use crate::fx_hash::{FxMap, FxSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sym {
    Char(u32),
    Rule(u32),
}

#[derive(Debug, Clone, Copy)]
struct CItem {
    sym: Sym,
    min: u32,
    max: u32,
}

const INF: u32 = u32::MAX;

/// A grammar compiled for recognition, starting at one rule.
///
/// ```
/// use peg_runtime::gbnf::{Grammar, Recognizer};
/// let g = Grammar::parse("root ::= \"x=\" num\nnum ::= [0-9]+").unwrap();
/// let num = Recognizer::new(&g, "num").unwrap();
/// assert!(num.accepts("42") && !num.accepts("x=42"));
/// assert!(g.recognizer().accepts("x=42")); // the grammar's own, from `root`
/// assert!(Recognizer::new(&g, "missing").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Recognizer {
    classes: Vec<CharClass>,
    alts: Vec<Vec<CItem>>,
    alt_rule: Vec<u32>,
    rule_alts: Vec<std::ops::Range<u32>>,
    nullable: Vec<bool>,
    start: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct EItem {
    alt: u32,
    pos: u32,
    cnt: u32,
    origin: u32,
}

struct Compiler<'g> {
    grammar: &'g Grammar,
    classes: Vec<CharClass>,
    class_index: HashMap<CharClass, u32>,
    /// Alternatives per rule; rules past the grammar's own are helpers for groups and literals.
    rules: Vec<Vec<Vec<CItem>>>,
}

impl Compiler<'_> {
    fn class(&mut self, c: CharClass) -> u32 {
        if let Some(&i) = self.class_index.get(&c) {
            return i;
        }
        let i = self.classes.len() as u32;
        self.classes.push(c.clone());
        self.class_index.insert(c, i);
        i
    }

    fn char_item(&mut self, ch: char) -> CItem {
        let i = self.class(CharClass { ranges: vec![(ch, ch)], negated: false });
        CItem { sym: Sym::Char(i), min: 1, max: 1 }
    }

    fn helper(&mut self, alts: Vec<Vec<CItem>>) -> u32 {
        self.rules.push(alts);
        (self.rules.len() - 1) as u32
    }

    fn seq(&mut self, seq: &[GItem]) -> Vec<CItem> {
        let mut out = Vec::new();
        for it in seq {
            let max = it.max.unwrap_or(INF);
            if max == 0 {
                continue;
            }
            let single = it.min == 1 && max == 1;
            let sym = match &it.element {
                Element::Literal(s) if s.is_empty() => continue,
                Element::Literal(s) if single => {
                    out.extend(s.chars().map(|c| self.char_item(c)));
                    continue;
                }
                Element::Literal(s) if s.chars().count() == 1 => {
                    let c = s.chars().next().expect("one char");
                    Sym::Char(self.class(CharClass { ranges: vec![(c, c)], negated: false }))
                }
                Element::Literal(s) => {
                    let chars = s.chars().map(|c| self.char_item(c)).collect();
                    Sym::Rule(self.helper(vec![chars]))
                }
                Element::Class(c) => Sym::Char(self.class(c.clone())),
                Element::Any => Sym::Char(self.class(CharClass { ranges: vec![], negated: true })),
                Element::Ref(n) => Sym::Rule(self.grammar.index[n] as u32),
                Element::Group(alts) => {
                    if single && alts.len() == 1 {
                        let inner = self.seq(&alts[0]);
                        out.extend(inner);
                        continue;
                    }
                    let compiled = alts.iter().map(|s| self.seq(s)).collect();
                    Sym::Rule(self.helper(compiled))
                }
            };
            out.push(CItem { sym, min: it.min, max });
        }
        out
    }
}

impl Recognizer {
    /// Compiles `grammar` for recognition starting at rule `start`.
    pub fn new(grammar: &Grammar, start: &str) -> Result<Recognizer, Error> {
        let start = *grammar.index.get(start).ok_or_else(|| Error::new(ErrorKind::Grammar, format!("no rule named `{start}`")))?;
        let mut c = Compiler { grammar, classes: Vec::new(), class_index: HashMap::new(), rules: vec![Vec::new(); grammar.rules.len()] };
        for (i, r) in grammar.rules.iter().enumerate() {
            let alts = r.alternatives.iter().map(|s| c.seq(s)).collect();
            c.rules[i] = alts;
        }
        let Compiler { classes, mut rules, .. } = c;
        let char_ok: Vec<bool> = classes.iter().map(|k| k.negated || !k.ranges.is_empty()).collect();

        // Productive rules: those deriving at least one string.
        let mut productive = vec![false; rules.len()];
        let item_ok = |it: &CItem, productive: &[bool]| match it.sym {
            Sym::Char(i) => char_ok[i as usize],
            Sym::Rule(r) => productive[r as usize],
        };
        loop {
            let mut changed = false;
            for r in 0..rules.len() {
                if !productive[r] && rules[r].iter().any(|a| a.iter().all(|it| it.min == 0 || item_ok(it, &productive))) {
                    productive[r] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Prune: drop alternatives needing an unproductive item; optional ones may only be skipped.
        for alts in rules.iter_mut() {
            alts.retain(|a| a.iter().all(|it| it.min == 0 || item_ok(it, &productive)));
            for a in alts.iter_mut() {
                for it in a.iter_mut() {
                    if !item_ok(it, &productive) {
                        it.max = 0;
                    }
                }
            }
        }
        let mut nullable = vec![false; rules.len()];
        loop {
            let mut changed = false;
            for r in 0..rules.len() {
                if !nullable[r] && rules[r].iter().any(|a| a.iter().all(|it| it.min == 0 || matches!(it.sym, Sym::Rule(x) if nullable[x as usize]))) {
                    nullable[r] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut alts = Vec::new();
        let mut alt_rule = Vec::new();
        let mut rule_alts = Vec::new();
        for (r, ralts) in rules.into_iter().enumerate() {
            let from = alts.len() as u32;
            for a in ralts {
                alts.push(a);
                alt_rule.push(r as u32);
            }
            rule_alts.push(from..alts.len() as u32);
        }
        Ok(Recognizer { classes, alts, alt_rule, rule_alts, nullable, start: start as u32 })
    }

    /// Whether the whole of `input` is in the language.
    pub fn accepts(&self, input: &str) -> bool {
        let mut run = Run::new(self);
        for c in input.chars() {
            if !run.step(c) {
                return false;
            }
        }
        run.complete()
    }

    /// Whether `input` is a prefix of some string in the language.
    pub fn accepts_prefix(&self, input: &str) -> bool {
        let mut run = Run::new(self);
        !run.items.is_empty() && input.chars().all(|c| run.step(c))
    }

    /// Starts an incremental match: feed characters one at a time.
    ///
    /// ```
    /// use peg_runtime::gbnf::Grammar;
    /// let g = Grammar::parse(r#"root ::= "ab"+"#).unwrap();
    /// let mut m = g.recognizer().matcher();
    /// assert!(m.push_str("ab") && m.is_complete());
    /// assert!(m.push('a') && !m.is_complete());
    /// assert!(!m.push('a'));
    /// ```
    pub fn matcher(&self) -> Matcher<'_> {
        let run = Run::new(self);
        let alive = !run.items.is_empty();
        Matcher { run, alive }
    }

    fn skippable(&self, it: &CItem) -> bool {
        match it.sym {
            Sym::Rule(r) => self.nullable[r as usize],
            Sym::Char(_) => false,
        }
    }
}

/// An incremental match against a [`Recognizer`]'s grammar (see [`Recognizer::matcher`]).
///
/// ```
/// use peg_runtime::gbnf::Grammar;
/// let g = Grammar::parse(r#"root ::= "<call>" [a-z]+ "</call>""#).unwrap();
/// let mut m = g.recognizer().matcher();
/// assert!(m.push_str("<call>get") && !m.is_complete());
/// assert!(m.push_str("</call>") && m.is_complete());
/// assert!(!m.push('!') && !m.is_alive()); // nothing may follow
/// ```
pub struct Matcher<'r> {
    run: Run<'r>,
    alive: bool,
}

impl Matcher<'_> {
    /// Consumes one character; false once the input can no longer be completed (and from
    /// then on).
    pub fn push(&mut self, c: char) -> bool {
        if self.alive {
            self.alive = self.run.step(c);
        }
        self.alive
    }

    /// Consumes every character of `s`; false once the input can no longer be completed.
    pub fn push_str(&mut self, s: &str) -> bool {
        s.chars().all(|c| self.push(c))
    }

    /// Whether the input so far can still be completed.
    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// Whether the input so far is a complete string of the language.
    pub fn is_complete(&self) -> bool {
        self.alive && self.run.complete()
    }
}

/// One recognition in progress: the current Earley set and the waiting lists of earlier ones.
struct Run<'r> {
    g: &'r Recognizer,
    /// Per set: rule -> items waiting for that rule to complete.
    waiting: Vec<FxMap<u32, Vec<EItem>>>,
    items: Vec<EItem>,
    seen: FxSet<EItem>,
}

impl<'r> Run<'r> {
    fn new(g: &'r Recognizer) -> Run<'r> {
        let mut run = Run { g, waiting: Vec::new(), items: Vec::new(), seen: Default::default() };
        run.waiting.push(FxMap::default());
        for a in g.rule_alts[g.start as usize].clone() {
            run.add(EItem { alt: a, pos: 0, cnt: 0, origin: 0 });
        }
        run.close();
        run
    }

    fn add(&mut self, it: EItem) {
        if self.seen.insert(it) {
            self.items.push(it);
        }
    }

    /// The item after one more match of the element it stands on.
    fn advanced(&self, it: EItem) -> EItem {
        let e = &self.g.alts[it.alt as usize][it.pos as usize];
        let mut cnt = it.cnt + 1;
        if e.max == INF && cnt > e.min {
            cnt = e.min; // counts past the minimum are interchangeable when unbounded
        }
        EItem { cnt, ..it }
    }

    /// Predicts and completes within the current set.
    fn close(&mut self) {
        let k = (self.waiting.len() - 1) as u32;
        let mut i = 0;
        while i < self.items.len() {
            let it = self.items[i];
            i += 1;
            let alt = &self.g.alts[it.alt as usize];
            if it.pos as usize == alt.len() {
                if it.origin == k {
                    continue; // an empty match; waiters skip nullable items by themselves
                }
                let r = self.g.alt_rule[it.alt as usize];
                let waiters = self.waiting[it.origin as usize].get(&r).cloned().unwrap_or_default();
                for w in waiters {
                    let a = self.advanced(w);
                    self.add(a);
                }
                continue;
            }
            let e = alt[it.pos as usize];
            if it.cnt >= e.min || self.g.skippable(&e) {
                self.add(EItem { pos: it.pos + 1, cnt: 0, ..it });
            }
            if it.cnt < e.max
                && let Sym::Rule(r) = e.sym
            {
                let first = {
                    let w = self.waiting[k as usize].entry(r).or_default();
                    w.push(it);
                    w.len() == 1
                };
                if first {
                    for a in self.g.rule_alts[r as usize].clone() {
                        self.add(EItem { alt: a, pos: 0, cnt: 0, origin: k });
                    }
                }
            }
        }
    }

    /// Consumes one character; false when no item survives.
    fn step(&mut self, c: char) -> bool {
        let old = std::mem::take(&mut self.items);
        self.seen.clear();
        self.waiting.push(FxMap::default());
        for it in old {
            let alt = &self.g.alts[it.alt as usize];
            if let Some(e) = alt.get(it.pos as usize)
                && let Sym::Char(ci) = e.sym
                && it.cnt < e.max
                && self.g.classes[ci as usize].matches(c)
            {
                let a = self.advanced(it);
                self.add(a);
            }
        }
        self.close();
        !self.items.is_empty()
    }

    fn complete(&self) -> bool {
        self.items.iter().any(|it| it.origin == 0 && self.g.alt_rule[it.alt as usize] == self.g.start && it.pos as usize == self.g.alts[it.alt as usize].len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Grammar;

    fn g(text: &str) -> Grammar {
        Grammar::parse(text).unwrap()
    }

    #[test]
    fn literals_classes_and_groups() {
        let gr = g(r#"root ::= "ab" [0-9]+ ("x" | "yz")? ."#);
        assert!(gr.accepts("ab12x!"));
        assert!(gr.accepts("ab1yzq"));
        assert!(gr.accepts("ab1é"));
        assert!(!gr.accepts("ab"));
        assert!(!gr.accepts("ab1yz"));
        assert!(gr.accepts_prefix("ab1y"));
        assert!(!gr.accepts_prefix("ac"));
        assert!(gr.accepts_prefix(""));
    }

    #[test]
    fn bounded_repetitions() {
        let gr = g(r#"root ::= "a"{2,4} "b"{3} ("cd"){0,2}"#);
        for (s, ok) in [("aabbb", true), ("aaaabbbcdcd", true), ("abbb", false), ("aaaaabbb", false), ("aabbbcdcdcd", false)] {
            assert_eq!(gr.accepts(s), ok, "{s}");
        }
        let big = g(r#"root ::= [a-z]{0,2000} "!""#);
        let s = "q".repeat(2000) + "!";
        assert!(big.accepts(&s));
        let s = "q".repeat(2001) + "!";
        assert!(!big.accepts(&s));
        let nested = g(r#"root ::= ("ab"{2000}){3}"#);
        assert!(nested.accepts(&"ab".repeat(6000)));
        assert!(!nested.accepts(&"ab".repeat(5999)));
    }

    #[test]
    fn nullable_and_recursive_rules() {
        let gr = g("root ::= a b \"x\"\na ::= \"\" | \"a\"\nb ::= a a\n");
        assert!(gr.accepts("x") && gr.accepts("ax") && gr.accepts("aaax"));
        assert!(!gr.accepts("aaaax"));
        let paren = g("root ::= \"(\" root \")\" root | ");
        assert!(paren.accepts("(()())()"));
        assert!(!paren.accepts("(()"));
        assert!(paren.accepts_prefix("(()"));
        let nested = g("root ::= (\"a\"?)* \"b\"");
        assert!(nested.accepts("aaab") && nested.accepts("b"));
    }

    #[test]
    fn unproductive_rules_do_not_count_as_prefixes() {
        let gr = g("root ::= \"a\" loop | \"b\"\nloop ::= \"x\" loop");
        assert!(!gr.accepts_prefix("a"));
        assert!(gr.accepts("b"));
        let empty = g("root ::= \"a\" []");
        assert!(!empty.accepts_prefix("a"));
        let never = g("root ::= \"x\" root");
        assert!(!never.accepts_prefix("") && !never.accepts(""));
    }

    #[test]
    fn negated_classes_and_any() {
        let gr = g(r#"root ::= [^"\\\x00-\x1F]* "\"""#);
        assert!(gr.accepts("héllo\""));
        assert!(!gr.accepts("a\nb\""));
        assert!(!gr.accepts("a\\\""));
    }
}
