//! GBNF text to rules, following llama.cpp's grammar parser: rules end at a newline unless
//! inside parentheses or after `|`/`::=`; `#` starts a comment.

use std::collections::{HashMap, HashSet};

use super::{Element, Item, MAX_REPETITION, Rule, Sequence};
use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};

struct Parser<'t> {
    text: &'t str,
    pos: usize,
    /// Every rule reference with its byte offset, checked once all rules are known.
    refs: Vec<(String, usize)>,
    /// Current parenthesis nesting.
    depth: usize,
}

/// Parenthesis nesting past which a grammar is rejected (keeps recursion off the stack limit).
const MAX_NESTING: usize = 256;

/// Line and column (1-based, columns in characters) of byte offset `pos`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let before = &text[..pos.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn error_at(text: &str, pos: usize, msg: impl std::fmt::Display) -> Error {
    let (line, col) = line_col(text, pos);
    Error::new(ErrorKind::Grammar, format!("{line}:{col}: {msg}")).with_offset(pos)
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

impl<'t> Parser<'t> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        error_at(self.text, self.pos, msg)
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn peek2(&self) -> Option<char> {
        let mut it = self.text[self.pos..].chars();
        it.next();
        it.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.text[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Skips blanks and comments; newlines too when `newline_ok`.
    fn space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '#' => {
                    while let Some(c) = self.peek() {
                        if c == '\n' || c == '\r' {
                            break;
                        }
                        self.bump();
                    }
                }
                '\n' | '\r' if newline_ok => self.pos += 1,
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<String, Error> {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err(match self.peek() {
                Some(c) => format!("expecting a rule name, found `{}`", c.escape_default()),
                None => "expecting a rule name, found end of input".to_owned(),
            }));
        }
        Ok(self.text[start..self.pos].to_owned())
    }

    fn int(&mut self) -> Result<u32, Error> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err("expecting a number"));
        }
        self.text[start..self.pos].parse::<u32>().map_err(|_| error_at(self.text, start, "repetition count is too large"))
    }

    fn hex(&mut self, digits: usize) -> Result<char, Error> {
        let start = self.pos;
        let mut v: u32 = 0;
        for _ in 0..digits {
            let d = self.peek().and_then(|c| c.to_digit(16)).ok_or_else(|| self.err("expecting a hex digit"))?;
            self.pos += 1;
            v = v * 16 + d;
        }
        char::from_u32(v).ok_or_else(|| error_at(self.text, start, format!("escape value {v:#x} is not a character")))
    }

    /// One character of a literal or class, with escapes.
    fn char_(&mut self) -> Result<char, Error> {
        let start = self.pos;
        match self.bump() {
            None => Err(self.err("unexpected end of input")),
            Some('\\') => match self.bump() {
                Some('x') => self.hex(2),
                Some('u') => self.hex(4),
                Some('U') => self.hex(8),
                Some('t') => Ok('\t'),
                Some('n') => Ok('\n'),
                Some('r') => Ok('\r'),
                Some(c @ ('\\' | '"' | '[' | ']' | '-')) => Ok(c),
                Some(c) => Err(error_at(self.text, start, format!("unknown escape `\\{}`", c.escape_default()))),
                None => Err(self.err("unexpected end of input after `\\`")),
            },
            Some(c) => Ok(c),
        }
    }

    fn literal(&mut self) -> Result<String, Error> {
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return Err(self.err("unterminated string literal")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(s);
                }
                Some(_) => s.push(self.char_()?),
            }
        }
    }

    fn class(&mut self) -> Result<CharClass, Error> {
        let negated = self.eat("^");
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.err("unterminated character class")),
                Some(']') => {
                    self.pos += 1;
                    return Ok(CharClass::from_ranges(ranges, negated));
                }
                Some(_) => {
                    let start = self.pos;
                    let lo = self.char_()?;
                    if self.peek() == Some('-') && self.peek2().is_some_and(|c| c != ']') {
                        self.pos += 1;
                        let hi = self.char_()?;
                        if hi < lo {
                            return Err(error_at(self.text, start, "character range is out of order"));
                        }
                        ranges.push((lo, hi));
                    } else {
                        ranges.push((lo, lo));
                    }
                }
            }
        }
    }

    fn alternatives(&mut self, nested: bool) -> Result<Vec<Sequence>, Error> {
        let mut alts = vec![self.sequence(nested)?];
        while self.eat("|") {
            self.space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(alts)
    }

    fn sequence(&mut self, nested: bool) -> Result<Sequence, Error> {
        let mut seq: Sequence = Vec::new();
        // Whether the last item already carries a repetition suffix.
        let mut suffixed = false;
        while let Some(c) = self.peek() {
            let start = self.pos;
            let element = match c {
                '"' => {
                    self.pos += 1;
                    Element::Literal(self.literal()?)
                }
                '[' => {
                    self.pos += 1;
                    match self.class()? {
                        // `[^]` is any character, which the printer writes `.`: one element
                        // for both, so a printed grammar parses back to the same rules.
                        c if c.negated && c.ranges.is_empty() => Element::Any,
                        c => Element::Class(c),
                    }
                }
                '.' => {
                    self.pos += 1;
                    Element::Any
                }
                '(' => {
                    if self.depth >= MAX_NESTING {
                        return Err(self.err(format!("groups nest deeper than {MAX_NESTING}")));
                    }
                    self.pos += 1;
                    self.space(true);
                    self.depth += 1;
                    let alts = self.alternatives(true)?;
                    self.depth -= 1;
                    if !self.eat(")") {
                        return Err(self.err("expecting `)`"));
                    }
                    Element::Group(alts)
                }
                c if is_word_char(c) => {
                    let name = self.name()?;
                    self.refs.push((name.clone(), start));
                    Element::Ref(name)
                }
                '*' | '+' | '?' | '{' => {
                    let Some(last) = seq.last_mut() else {
                        return Err(self.err(format!("`{c}` needs a preceding item")));
                    };
                    if suffixed {
                        return Err(self.err("a repetition cannot be repeated directly; use parentheses"));
                    }
                    self.pos += 1;
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        '?' => (0, Some(1)),
                        _ => {
                            self.space(nested);
                            let min = self.int()?;
                            self.space(nested);
                            let max = if self.eat(",") {
                                self.space(nested);
                                if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.int()?) } else { None }
                            } else {
                                Some(min)
                            };
                            self.space(nested);
                            if !self.eat("}") {
                                return Err(self.err("expecting `}`"));
                            }
                            if min > MAX_REPETITION || max.is_some_and(|m| m > MAX_REPETITION) {
                                return Err(error_at(self.text, start, format!("repetition count exceeds the limit of {MAX_REPETITION}")));
                            }
                            if max.is_some_and(|m| m < min) {
                                return Err(error_at(self.text, start, "repetition bounds are inverted"));
                            }
                            (min, max)
                        }
                    };
                    last.min = min;
                    last.max = max;
                    suffixed = true;
                    self.space(nested);
                    continue;
                }
                _ => break,
            };
            seq.push(Item { element, min: 1, max: Some(1) });
            suffixed = false;
            self.space(nested);
        }
        Ok(seq)
    }
}

/// Parses GBNF text into rules and checks references, `root`, and left recursion.
pub(super) fn parse(text: &str) -> Result<Vec<Rule>, Error> {
    let mut p = Parser { text, pos: 0, refs: Vec::new(), depth: 0 };
    let mut rules: Vec<Rule> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut starts: Vec<usize> = Vec::new();
    p.space(true);
    while p.pos < text.len() {
        let start = p.pos;
        let name = p.name()?;
        p.space(false);
        if !p.eat("::=") {
            return Err(p.err(format!("expecting `::=` after rule name `{name}`")));
        }
        p.space(true);
        let alternatives = p.alternatives(false)?;
        match p.peek() {
            None | Some('\n') | Some('\r') => {}
            Some(c) => return Err(p.err(format!("expecting newline or end of input, found `{}`", c.escape_default()))),
        }
        if index.insert(name.clone(), rules.len()).is_some() {
            return Err(error_at(text, start, format!("rule `{name}` is defined twice")));
        }
        rules.push(Rule { name, alternatives });
        starts.push(start);
        p.space(true);
    }
    for (name, pos) in &p.refs {
        if !index.contains_key(name) {
            return Err(error_at(text, *pos, format!("undefined rule `{name}`")));
        }
    }
    if !index.contains_key("root") {
        return Err(Error::new(ErrorKind::Grammar, "the grammar has no `root` rule"));
    }
    check_left_recursion(&rules, &index).map_err(|(rule, msg)| error_at(text, starts[rule], msg))?;
    Ok(rules)
}

fn element_nullable(e: &Element, nullable: &[bool], index: &HashMap<String, usize>) -> bool {
    match e {
        Element::Literal(s) => s.is_empty(),
        Element::Class(_) | Element::Any => false,
        Element::Ref(n) => nullable[index[n]],
        Element::Group(alts) => alts.iter().any(|s| seq_nullable(s, nullable, index)),
    }
}

fn seq_nullable(seq: &[Item], nullable: &[bool], index: &HashMap<String, usize>) -> bool {
    seq.iter().all(|it| it.min == 0 || it.max == Some(0) || element_nullable(&it.element, nullable, index))
}

/// Which rules derive the empty string (fixpoint).
pub(super) fn nullable_rules(rules: &[Rule], index: &HashMap<String, usize>) -> Vec<bool> {
    let mut nullable = vec![false; rules.len()];
    loop {
        let mut changed = false;
        for (i, r) in rules.iter().enumerate() {
            if !nullable[i] && r.alternatives.iter().any(|s| seq_nullable(s, &nullable, index)) {
                nullable[i] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}

/// Rules that can be reached at the start of `seq` (before anything non-empty).
fn left_refs(seq: &[Item], nullable: &[bool], index: &HashMap<String, usize>, out: &mut HashSet<usize>) {
    for it in seq {
        if it.max == Some(0) {
            continue;
        }
        match &it.element {
            Element::Ref(n) => {
                out.insert(index[n]);
            }
            Element::Group(alts) => {
                for s in alts {
                    left_refs(s, nullable, index, out);
                }
            }
            _ => {}
        }
        if !(it.min == 0 || element_nullable(&it.element, nullable, index)) {
            break;
        }
    }
}

/// On failure: the first rule of the cycle and the message.
fn check_left_recursion(rules: &[Rule], index: &HashMap<String, usize>) -> Result<(), (usize, String)> {
    let nullable = nullable_rules(rules, index);
    let edges: Vec<Vec<usize>> = rules
        .iter()
        .map(|r| {
            let mut out = HashSet::new();
            for s in &r.alternatives {
                left_refs(s, &nullable, index, &mut out);
            }
            let mut v: Vec<usize> = out.into_iter().collect();
            v.sort_unstable();
            v
        })
        .collect();
    // Iterative DFS with colors; on a back edge, report the cycle.
    let mut color = vec![0u8; rules.len()];
    for start in 0..rules.len() {
        if color[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        color[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < edges[node].len() {
                let to = edges[node][*next];
                *next += 1;
                match color[to] {
                    0 => {
                        color[to] = 1;
                        stack.push((to, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(n, _)| n == to).unwrap_or(0);
                        let mut path: Vec<&str> = stack[from..].iter().map(|&(n, _)| rules[n].name.as_str()).collect();
                        path.push(&rules[to].name);
                        return Err((to, format!("left recursion: {}", path.join(" -> "))));
                    }
                    _ => {}
                }
            } else {
                color[node] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Grammar;
    use crate::ErrorKind;

    fn err(text: &str) -> String {
        let e = Grammar::parse(text).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Grammar);
        e.detail().to_owned()
    }

    #[test]
    fn parses_llama_style_json_grammar() {
        let g = Grammar::parse(
            r#"
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#,
        )
        .unwrap();
        assert_eq!(g.rules().len(), 7);
        assert!(g.accepts(r#"{"a": [1, 2.5, "x\"y"], "b": {"c": null}}"#));
        assert!(!g.accepts(r#"{"a": }"#));
        assert!(g.accepts_prefix(r#"{"a": [1, 2"#));
        // Display output parses back to the same rules.
        let again = Grammar::parse(&g.to_string()).unwrap();
        assert_eq!(again, g);
    }

    #[test]
    fn errors_name_line_and_column() {
        assert!(err("root ::= \"a\"\nx ::= [a-").starts_with("2:"), "{}", err("root ::= \"a\"\nx ::= [a-"));
        assert_eq!(err("root ::= foo"), "1:10: undefined rule `foo`");
        assert!(err("root ::= \"a\" )").contains("expecting newline"));
        assert!(err("root ::= \"\\q\"").contains("unknown escape"));
        assert!(err("root := \"a\"").contains("expecting `::=`"));
        assert!(err("root ::= \"a\"{2001}").contains("limit of 2000"));
        assert!(err("root ::= \"a\"{3,2}").contains("inverted"));
        assert!(err("root ::= * \"a\"").contains("preceding item"));
        assert!(err("a ::= \"x\"").contains("no `root` rule"));
        assert!(err("root ::= \"a\"\nroot ::= \"b\"").contains("defined twice"));
        assert!(err("root ::= (\"a\"").contains("expecting `)`"));
        assert!(err("root ::= \"abc").contains("unterminated"));
    }

    #[test]
    fn hostile_grammars_are_errors_not_crashes() {
        let deep = format!("root ::= {}\"a\"{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(err(&deep).contains("nest deeper"));
        let ok = format!("root ::= {}\"a\"{}", "(".repeat(200), ")".repeat(200));
        assert!(Grammar::parse(&ok).unwrap().accepts("a"));
        assert!(err("root ::= \"a\"{99999999999}").contains("too large"));
        assert!(err("root ::= \"\\xZZ\"").contains("hex digit"));
        assert!(err("root ::= \"\\uD800\"").contains("not a character"));
        assert!(err("root ::= [b-a]").contains("out of order"));
        assert!(err("").contains("no `root`"));
        assert!(err("root ::= \"a\" \x01").contains("expecting newline"));
    }

    #[test]
    fn rejects_left_recursion() {
        assert_eq!(err("root ::= root \"a\" | \"b\""), "1:1: left recursion: root -> root");
        assert_eq!(err("root ::= x\nx ::= \"a\"? x"), "2:1: left recursion: x -> x");
        assert!(err("root ::= a\na ::= b? c\nb ::= \"x\"\nc ::= \"y\"? root \"z\"").contains("left recursion"));
        // Right recursion is fine.
        assert!(Grammar::parse("root ::= \"a\" root | \"b\"").is_ok());
    }

    #[test]
    fn newlines_end_rules_outside_parentheses() {
        let g = Grammar::parse("root ::= \"a\" |\n  \"b\"\nx ::= (\n \"c\"\n | \"d\"\n)").unwrap();
        assert!(g.accepts("b"));
        assert!(err("root ::= \"a\"\n  | \"b\"").contains("expecting a rule name"));
    }

    #[test]
    fn a_negated_empty_class_is_any_character() {
        let g = Grammar::parse("root ::= ([^]) [^]*").unwrap();
        assert_eq!(g, Grammar::parse("root ::= (.) .*").unwrap());
        assert_eq!(Grammar::parse(&g.to_string()).unwrap(), g);
        assert!(g.accepts("\u{0}x\u{10FFFF}"));
    }
}
