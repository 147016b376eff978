//! A practical regex subset (JSON Schema `pattern`) to GBNF.
//!
//! Supported: literals and escapes, `.`, classes with ranges and negation, `\d \w \s` and their
//! negations, groups (`(...)`, `(?:...)`, named), alternation, the quantifiers `* + ? {n} {n,}
//! {n,m}` (lazy and possessive suffixes are ignored), and `^`/`$` at the ends. Backreferences,
//! lookaround and word boundaries are reported as errors.
//!
//! Output is either raw text or the inside of a JSON string, where characters appear in their
//! JSON-encoded form (`"` as `\"`, a newline as `\n`).

use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};
use crate::gbnf::{escape_literal, format_class, repetition};

/// A parsed regular expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Regex {
    /// One character of a class.
    Class(CharClass),
    /// Items in order.
    Concat(Vec<Regex>),
    /// Any of the alternatives.
    Alt(Vec<Regex>),
    /// Repetition with bounds.
    Repeat(Box<Regex>, u32, Option<u32>),
}

/// A pattern with its anchors.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// The expression between the anchors.
    pub regex: Regex,
    /// Starts with `^`.
    pub anchored_start: bool,
    /// Ends with `$`.
    pub anchored_end: bool,
}

fn err(pattern: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Schema, format!("pattern `{pattern}`: {msg}"))
}

fn single(c: char) -> CharClass {
    CharClass { ranges: vec![(c, c)], negated: false }
}

fn shorthand(c: char) -> Option<(Vec<(char, char)>, bool)> {
    let digit = vec![('0', '9')];
    let word = vec![('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
    let space = vec![('\t', '\r'), (' ', ' ')];
    Some(match c {
        'd' => (digit, false),
        'D' => (digit, true),
        'w' => (word, false),
        'W' => (word, true),
        's' => (space, false),
        'S' => (space, true),
        _ => return None,
    })
}

struct P<'a> {
    src: &'a str,
    chars: Vec<char>,
    i: usize,
    depth: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn hex(&mut self, n: usize) -> Result<char, Error> {
        let s: String = self.chars.iter().skip(self.i).take(n).collect();
        if s.chars().count() != n {
            return Err(err(self.src, "short hex escape"));
        }
        self.i += n;
        let v = u32::from_str_radix(&s, 16).map_err(|_| err(self.src, "bad hex escape"))?;
        char::from_u32(v).ok_or_else(|| err(self.src, "escape is not a character"))
    }

    /// An escape after `\`: either one character or a shorthand class.
    fn escape(&mut self) -> Result<Result<char, CharClass>, Error> {
        let c = self.peek().ok_or_else(|| err(self.src, "dangling `\\`"))?;
        self.i += 1;
        if let Some((ranges, neg)) = shorthand(c) {
            return Ok(Err(CharClass::from_ranges(ranges, neg)));
        }
        Ok(Ok(match c {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'f' => '\x0c',
            'v' => '\x0b',
            '0' => '\0',
            'x' => self.hex(2)?,
            'u' => self.hex(4)?,
            'b' | 'B' => return Err(err(self.src, "word boundaries are not supported")),
            c if c.is_ascii_digit() => return Err(err(self.src, "backreferences are not supported")),
            c if c.is_ascii_alphanumeric() => return Err(err(self.src, format!("unknown escape `\\{c}`"))),
            c => c,
        }))
    }

    fn alt(&mut self) -> Result<Regex, Error> {
        let mut alts = vec![self.concat()?];
        while self.peek() == Some('|') {
            self.i += 1;
            alts.push(self.concat()?);
        }
        Ok(if alts.len() == 1 { alts.pop().expect("one") } else { Regex::Alt(alts) })
    }

    fn concat(&mut self) -> Result<Regex, Error> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            let atom = match c {
                '|' | ')' => break,
                '^' | '$' => return Err(err(self.src, "anchors are only supported at the ends")),
                '(' => {
                    self.i += 1;
                    self.depth += 1;
                    if self.depth > 128 {
                        return Err(err(self.src, "groups nest too deeply"));
                    }
                    if self.peek() == Some('?') {
                        self.i += 1;
                        match self.peek() {
                            Some(':') => self.i += 1,
                            Some('<') if !matches!(self.chars.get(self.i + 1), Some('=' | '!')) => {
                                while self.peek().is_some_and(|c| c != '>') {
                                    self.i += 1;
                                }
                                self.i += 1;
                            }
                            Some('P') => {
                                while self.peek().is_some_and(|c| c != '>') {
                                    self.i += 1;
                                }
                                self.i += 1;
                            }
                            _ => return Err(err(self.src, "lookaround and inline flags are not supported")),
                        }
                    }
                    let inner = self.alt()?;
                    if self.peek() != Some(')') {
                        return Err(err(self.src, "missing `)`"));
                    }
                    self.i += 1;
                    self.depth -= 1;
                    inner
                }
                '[' => {
                    self.i += 1;
                    Regex::Class(self.class()?)
                }
                '.' => {
                    self.i += 1;
                    Regex::Class(CharClass::from_ranges(vec![('\n', '\n'), ('\r', '\r')], true))
                }
                '\\' => {
                    self.i += 1;
                    match self.escape()? {
                        Ok(c) => Regex::Class(single(c)),
                        Err(class) => Regex::Class(class),
                    }
                }
                '*' | '+' | '?' => return Err(err(self.src, format!("`{c}` needs a preceding item"))),
                '{' if !self.at_counted() => {
                    self.i += 1;
                    Regex::Class(single('{'))
                }
                '{' => return Err(err(self.src, "`{` needs a preceding item")),
                c => {
                    self.i += 1;
                    Regex::Class(single(c))
                }
            };
            let atom = self.quantifiers(atom)?;
            items.push(atom);
        }
        Ok(if items.len() == 1 { items.pop().expect("one") } else { Regex::Concat(items) })
    }

    /// Whether `{` here starts a `{n}`, `{n,}` or `{n,m}` quantifier.
    fn at_counted(&self) -> bool {
        let rest: String = self.chars[self.i..].iter().take_while(|&&c| c != '}').collect();
        self.chars.len() > self.i + rest.chars().count()
            && rest.len() > 1
            && rest[1..].chars().all(|c| c.is_ascii_digit() || c == ',')
            && rest[1..].chars().next().is_some_and(|c| c.is_ascii_digit())
            && rest.matches(',').count() <= 1
    }

    fn quantifiers(&mut self, mut atom: Regex) -> Result<Regex, Error> {
        let mut quantified = false;
        loop {
            let (min, max) = match self.peek() {
                Some('*') => {
                    self.i += 1;
                    (0, None)
                }
                Some('+') => {
                    self.i += 1;
                    (1, None)
                }
                Some('?') => {
                    self.i += 1;
                    (0, Some(1))
                }
                Some('{') if self.at_counted() => {
                    self.i += 1;
                    let body: String = self.chars[self.i..].iter().take_while(|&&c| c != '}').collect();
                    self.i += body.chars().count() + 1;
                    let num = |s: &str| s.parse::<u32>().map_err(|_| err(self.src, "bad repetition count"));
                    match body.split_once(',') {
                        None => {
                            let n = num(&body)?;
                            (n, Some(n))
                        }
                        Some((a, "")) => (num(a)?, None),
                        Some((a, b)) => {
                            let (a, b) = (num(a)?, num(b)?);
                            if b < a {
                                return Err(err(self.src, "repetition bounds are inverted"));
                            }
                            (a, Some(b))
                        }
                    }
                }
                _ => return Ok(atom),
            };
            // Lazy and possessive suffixes do not change the language.
            if matches!(self.peek(), Some('?' | '+')) {
                self.i += 1;
            }
            if quantified {
                // As in ECMAScript: `a**` and `a{2}{3}` have nothing to repeat.
                return Err(err(self.src, "a quantifier needs something to repeat"));
            }
            quantified = true;
            atom = Regex::Repeat(Box::new(atom), min, max);
        }
    }

    fn class(&mut self) -> Result<CharClass, Error> {
        let negated = self.peek() == Some('^');
        if negated {
            self.i += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or_else(|| err(self.src, "missing `]`"))?;
            if c == ']' && !first {
                self.i += 1;
                break;
            }
            first = false;
            self.i += 1;
            let lo = if c == '\\' {
                match self.escape()? {
                    Ok(c) => c,
                    Err(class) => {
                        if class.negated {
                            // `[\D]`-style: add the complement as ranges.
                            let mut prev = '\0' as u32;
                            for &(a, b) in &class.ranges {
                                if (a as u32) > prev
                                    && let (Some(x), Some(y)) = (char::from_u32(prev), char::from_u32(a as u32 - 1))
                                {
                                    ranges.push((x, y));
                                }
                                prev = b as u32 + 1;
                            }
                            ranges.push((char::from_u32(prev).unwrap_or('\u{10FFFF}'), '\u{10FFFF}'));
                        } else {
                            ranges.extend(class.ranges);
                        }
                        continue;
                    }
                }
            } else {
                c
            };
            if self.peek() == Some('-') && self.chars.get(self.i + 1).is_some_and(|&c| c != ']') {
                self.i += 1;
                let h = self.peek().expect("checked");
                self.i += 1;
                let hi = if h == '\\' { self.escape()?.map_err(|_| err(self.src, "a class shorthand cannot end a range"))? } else { h };
                if hi < lo {
                    return Err(err(self.src, "range out of order"));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(CharClass::from_ranges(ranges, negated))
    }
}

/// Parses a regex pattern.
pub fn parse(pattern: &str) -> Result<Pattern, Error> {
    let mut chars: Vec<char> = pattern.chars().collect();
    let anchored_start = chars.first() == Some(&'^');
    if anchored_start {
        chars.remove(0);
    }
    let anchored_end = chars.last() == Some(&'$') && !(chars.len() >= 2 && chars[chars.len() - 2] == '\\');
    if anchored_end {
        chars.pop();
    }
    let mut p = P { src: pattern, chars, i: 0, depth: 0 };
    let regex = p.alt()?;
    if p.i != p.chars.len() {
        return Err(err(pattern, "unbalanced `)`"));
    }
    Ok(Pattern { regex, anchored_start, anchored_end })
}

/// Whether the pattern matches `.*` somewhere (an unconstrained run of any characters).
pub fn has_dot_star(r: &Regex) -> bool {
    match r {
        Regex::Class(_) => false,
        Regex::Concat(v) | Regex::Alt(v) => v.iter().any(has_dot_star),
        Regex::Repeat(inner, _, None) => matches!(**inner, Regex::Class(ref c) if c.negated && c.ranges.len() <= 2) || has_dot_star(inner),
        Regex::Repeat(inner, _, _) => has_dot_star(inner),
    }
}

/// Every character the expression can produce, as sorted ranges.
pub fn alphabet(r: &Regex, out: &mut Vec<(char, char)>) {
    match r {
        Regex::Class(c) if c.negated => out.push(('\0', '\u{10FFFF}')),
        Regex::Class(c) => out.extend(c.ranges.iter().copied()),
        Regex::Concat(v) | Regex::Alt(v) => v.iter().for_each(|x| alphabet(x, out)),
        Regex::Repeat(inner, _, Some(0)) => {
            let _ = inner;
        }
        Regex::Repeat(inner, _, _) => alphabet(inner, out),
    }
}

/// Characters that cannot appear as themselves inside a JSON string.
fn json_special(c: char) -> bool {
    c == '"' || c == '\\' || (c as u32) < 0x20
}

fn json_escape_of(c: char) -> String {
    match c {
        '"' => "\\\"".to_owned(),
        '\\' => "\\\\".to_owned(),
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        '\x08' => "\\b".to_owned(),
        '\x0c' => "\\f".to_owned(),
        c => format!("\\u{:04x}", c as u32),
    }
}

/// GBNF for one character of `class`: as itself in raw mode, JSON-encoded in JSON mode.
pub fn class_to_gbnf(class: &CharClass, json: bool) -> String {
    if !json {
        return format_class(class);
    }
    let specials: Vec<char> = ['"', '\\'].into_iter().chain((0u8..0x20).map(char::from)).filter(|&c| class.matches(c)).collect();
    let mut alts = Vec::new();
    let plain = if class.negated {
        let mut r = class.ranges.clone();
        r.extend([('"', '"'), ('\\', '\\'), ('\0', '\x1f')]);
        Some(CharClass::from_ranges(r, true))
    } else {
        // Remove the special characters from the ranges.
        let mut r = Vec::new();
        for &(lo, hi) in &class.ranges {
            let mut start = lo as u32;
            for s in ['\0'..='\x1f', '"'..='"', '\\'..='\\'] {
                let (a, b) = (*s.start() as u32, *s.end() as u32);
                if b < start || a > hi as u32 {
                    continue;
                }
                if a > start {
                    r.push((char::from_u32(start).expect("valid"), char::from_u32(a - 1).expect("valid")));
                }
                start = start.max(b + 1);
            }
            if start <= hi as u32 {
                r.push((char::from_u32(start).expect("valid"), hi));
            }
        }
        (!r.is_empty()).then(|| CharClass::from_ranges(r, false))
    };
    if let Some(p) = plain {
        alts.push(format_class(&p));
    }
    let controls = specials.iter().filter(|&&c| (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t' | '\x08' | '\x0c')).count();
    for &c in &specials {
        let generic = (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t' | '\x08' | '\x0c');
        if generic && controls == 27 {
            continue; // all of them: one `\u00XX` alternative below
        }
        alts.push(escape_literal(&json_escape_of(c)));
    }
    if controls == 27 {
        alts.push("\"\\\\u00\" [01] [0-9a-fA-F]".to_owned());
    }
    match alts.len() {
        0 => "[]".to_owned(),
        1 => alts.pop().expect("one"),
        _ => format!("({})", alts.join(" | ")),
    }
}

/// GBNF for the expression; `json` selects JSON-string encoding of characters.
pub fn to_gbnf(r: &Regex, json: bool) -> String {
    match r {
        Regex::Class(c) if !c.negated && c.ranges.len() == 1 && c.ranges[0].0 == c.ranges[0].1 => {
            let ch = c.ranges[0].0;
            if json { escape_literal(&if json_special(ch) { json_escape_of(ch) } else { ch.to_string() }) } else { escape_literal(&ch.to_string()) }
        }
        Regex::Class(c) => class_to_gbnf(c, json),
        Regex::Concat(v) => {
            // Merge runs of single characters into one literal.
            let mut parts: Vec<String> = Vec::new();
            let mut lit = String::new();
            for x in v {
                match x {
                    Regex::Class(c) if !c.negated && c.ranges.len() == 1 && c.ranges[0].0 == c.ranges[0].1 => {
                        let ch = c.ranges[0].0;
                        if json && json_special(ch) {
                            lit.push_str(&json_escape_of(ch));
                        } else {
                            lit.push(ch);
                        }
                    }
                    other => {
                        if !lit.is_empty() {
                            parts.push(escape_literal(&std::mem::take(&mut lit)));
                        }
                        parts.push(to_gbnf(other, json));
                    }
                }
            }
            if !lit.is_empty() {
                parts.push(escape_literal(&lit));
            }
            if parts.is_empty() { "\"\"".to_owned() } else { parts.join(" ") }
        }
        Regex::Alt(v) => format!("({})", v.iter().map(|x| to_gbnf(x, json)).collect::<Vec<_>>().join(" | ")),
        Regex::Repeat(inner, min, max) => {
            let mut s = to_gbnf(inner, json);
            let atomic = !s.contains(' ') || (s.starts_with('(') && s.ends_with(')') && balanced_group(&s));
            if !atomic {
                s = format!("({s})");
            }
            repetition(&s, *min, *max)
        }
    }
}

/// Whether `s` is one parenthesized group (its first `(` closes at the very end).
pub(crate) fn balanced_group(s: &str) -> bool {
    let mut depth = 0;
    for (i, c, d) in crate::gbnf::structural_chars(s) {
        if c == ')' && d == 0 && i != s.len() - 1 {
            return false;
        }
        depth = d;
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gbnf::Grammar;

    fn grammar(pattern: &str, json: bool) -> Grammar {
        let p = parse(pattern).unwrap();
        let body = to_gbnf(&p.regex, json);
        Grammar::parse(&format!("root ::= {body}")).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn raw_patterns() {
        let g = grammar(r"^[A-Z]{2,3}-\d+(\.\d{1,2})?$", false);
        for (s, ok) in [("AB-1", true), ("ABC-12.50", true), ("A-1", false), ("AB-1.", false), ("ABCD-1", false)] {
            assert_eq!(g.accepts(s), ok, "{s}");
        }
        let g = grammar(r"^(cat|dog)s?|[^a-z\s]x$", false);
        assert!(g.accepts("cats") && g.accepts("dog") && g.accepts("Qx") && !g.accepts(" x"));
        let g = grammar(r"^a{3}b{0,}[\w-]+?$", false);
        assert!(g.accepts("aaab_-z") && !g.accepts("aab_"));
    }

    #[test]
    fn json_mode_escapes_characters() {
        let g = grammar(r#"^a"b\\c[\n"x]$"#, true);
        assert!(g.accepts(r#"a\"b\\c\n"#));
        assert!(g.accepts(r#"a\"b\\c\""#));
        assert!(!g.accepts("a\"b\\c\n"));
        let g = grammar(r"^[^,]+$", true);
        assert!(g.accepts(r#"x\"y\n\u0001"#));
        assert!(!g.accepts("x,y"));
    }

    #[test]
    fn unsupported_features_are_errors() {
        for p in [r"(a)\1", r"(?=a)", r"\bword", r"a^b", r"(ab", r"ab)", r"[abc", r"a{3,2}", r"*a", r"a**", r"a{2}{3}"] {
            let e = parse(p).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Schema, "{p}");
        }
        assert!(parse(r"a{x}").is_ok()); // literal brace
        assert!(parse(&format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000))).is_err());
    }
}
