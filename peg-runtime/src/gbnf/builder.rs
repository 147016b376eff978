//! Writing GBNF: escaping, repetition within llama.cpp's limits, and a rule collector with
//! unique sanitized names.

use std::collections::HashMap;

use super::MAX_REPETITION;
use crate::chars::CharClass;

/// A JSON string's `\u` escape after its backslash, in GBNF: a code point outside the surrogates, or a high
/// surrogate escaped together with its low one. A lone surrogate (`\uDFAD`) is valid JSON
/// text by the grammar of RFC 8259 but no Unicode text: strict readers (serde_json, every
/// client that decodes to UTF-8) refuse it, so no grammar lets a model write one.
///
/// ```
/// use peg_runtime::gbnf::{Grammar, JSON_UNICODE_ESCAPE};
/// let g = Grammar::parse(&format!(r#"root ::= "\\" {JSON_UNICODE_ESCAPE}"#)).unwrap();
/// assert!(g.accepts(r"\u00e9") && g.accepts(r"\ud83d\ude00"));
/// assert!(!g.accepts(r"\udfad")); // a lone surrogate
/// ```
pub const JSON_UNICODE_ESCAPE: &str =
    r#""u" ([0-9A-Ca-cEFef] [0-9A-Fa-f]{3} | [Dd] [0-7] [0-9A-Fa-f]{2} | [Dd] [89ABab] [0-9A-Fa-f]{2} "\\u" [Dd] [C-Fc-f] [0-9A-Fa-f]{2})"#;

/// Turns any text into a valid rule name: letters, digits and `-` (`read_file` → `read-file`).
pub(crate) fn sanitize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    if out.is_empty() {
        out.push('r');
    }
    out
}

/// The characters of a GBNF expression that are outside string literals and character
/// classes (and not escaped), each with its byte offset and the parenthesis depth after it.
pub(crate) fn structural_chars(e: &str) -> impl Iterator<Item = (usize, char, i32)> + '_ {
    let (mut depth, mut in_str, mut in_class, mut escape) = (0i32, false, false, false);
    e.char_indices().filter_map(move |(i, c)| {
        if escape {
            escape = false;
            return None;
        }
        match c {
            '\\' => escape = true,
            '"' if !in_class => in_str = !in_str,
            _ if in_str => {}
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '(' => {
                depth += 1;
                return Some((i, c, depth));
            }
            ')' => {
                depth -= 1;
                return Some((i, c, depth));
            }
            _ => return Some((i, c, depth)),
        }
        None
    })
}

fn push_hex(out: &mut String, c: char) {
    let v = c as u32;
    if v <= 0xFF {
        out.push_str(&format!("\\x{v:02X}"));
    } else if v <= 0xFFFF {
        out.push_str(&format!("\\u{v:04X}"));
    } else {
        // Outside the BMP: written as itself (UTF-8), which llama.cpp reads as one character.
        out.push(c);
    }
}

/// Escapes one character for use inside `"..."`.
fn escape_literal_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() => push_hex(out, c),
        c => out.push(c),
    }
}

/// A GBNF string literal for `s`, quoted (`a"b` → `"a\"b"`).
pub(crate) fn escape_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        escape_literal_char(&mut out, c);
    }
    out.push('"');
    out
}

/// Escapes one character for use inside `[...]`. `-` and `^` are written as hex escapes,
/// which every version of llama.cpp's parser reads.
pub(crate) fn escape_class_char(c: char) -> String {
    let mut out = String::new();
    match c {
        '\\' => out.push_str("\\\\"),
        ']' => out.push_str("\\]"),
        '[' => out.push_str("\\["),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '-' | '^' => push_hex(&mut out, c),
        c if c.is_control() => push_hex(&mut out, c),
        c => out.push(c),
    }
    out
}

/// A GBNF element for `class`: `[...]`, `[^...]`, or `.` for the class of every character.
pub(crate) fn format_class(class: &CharClass) -> String {
    if class.negated && class.ranges.is_empty() {
        return ".".to_owned();
    }
    let mut out = String::from("[");
    if class.negated {
        out.push('^');
    }
    for &(lo, hi) in &class.ranges {
        out.push_str(&escape_class_char(lo));
        if hi != lo {
            if hi as u32 != lo as u32 + 1 {
                out.push('-');
            }
            out.push_str(&escape_class_char(hi));
        }
    }
    out.push(']');
    out
}

/// `item` repeated `min..=max` times (`None`: unbounded) within llama.cpp's limit of
/// [`MAX_REPETITION`] per count: larger counts nest, so the text stays small.
/// `item` must be a single GBNF element (a name, literal, class, or parenthesized group).
pub(crate) fn repetition(item: &str, min: u32, max: Option<u32>) -> String {
    const M: u32 = MAX_REPETITION;
    match (min, max) {
        (_, Some(0)) => "\"\"".to_owned(),
        (1, Some(1)) => item.to_owned(),
        (0, Some(1)) => format!("{item}?"),
        (0, None) => format!("{item}*"),
        (1, None) => format!("{item}+"),
        (m, None) if m <= M => format!("{item}{{{m},}}"),
        (m, None) => format!("{} {item}*", exactly(item, m)),
        (m, Some(n)) if n <= M => {
            if m == n {
                format!("{item}{{{m}}}")
            } else {
                format!("{item}{{{m},{n}}}")
            }
        }
        (m, Some(n)) if m == n => exactly(item, m),
        (0, Some(n)) => {
            // c = M*a + b: either a < q and any b < M, or a == q and b <= r.
            let (q, r) = (n / M, n % M);
            let block = format!("({item}{{{M}}})");
            let low = format!("{} {}", repetition(&block, 0, Some(q - 1)), repetition(item, 0, Some(M - 1)));
            let high = format!("{} {}", exactly(&block, q), repetition(item, 0, Some(r)));
            format!("({low} | {high})")
        }
        (m, Some(n)) => format!("{} {}", exactly(item, m), repetition(item, 0, Some(n - m))),
    }
}

fn exactly(item: &str, n: u32) -> String {
    const M: u32 = MAX_REPETITION;
    if n <= M {
        return repetition(item, n, Some(n));
    }
    let block = format!("({item}{{{M}}})");
    let head = exactly(&block, n / M);
    match n % M {
        0 => head,
        r => format!("{head} {}", repetition(item, r, Some(r))),
    }
}

/// Collects named rules into a grammar. Names are sanitized and made unique; adding the same
/// body under the same name twice returns the existing rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct GrammarBuilder {
    rules: Vec<(String, Option<String>)>,
    index: HashMap<String, usize>,
    /// Body to name, for rules whose content is shared regardless of the requested name.
    #[cfg_attr(not(feature = "schema"), allow(dead_code))]
    by_body: HashMap<String, String>,
    /// Names of generated rule families (JSON primitives, until automata) by a private key,
    /// so several generators on one builder share them.
    pub(crate) memo: HashMap<String, String>,
}

impl GrammarBuilder {
    /// An empty builder.
    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// Reserves a unique name derived from `name` for a rule defined later with
    /// [`define`](GrammarBuilder::define) (for recursive rules).
    pub fn reserve(&mut self, name: &str) -> String {
        let base = sanitize_name(name);
        let mut candidate = base.clone();
        let mut n = 1;
        while self.index.contains_key(&candidate) {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        self.index.insert(candidate.clone(), self.rules.len());
        self.rules.push((candidate.clone(), None));
        candidate
    }

    /// Sets the body of a reserved rule.
    pub fn define(&mut self, reserved: &str, body: &str) {
        if let Some(&i) = self.index.get(reserved) {
            self.rules[i].1 = Some(body.to_owned());
        }
    }

    /// Adds rule `name ::= body`, returning the name to reference it by.
    pub fn add_rule(&mut self, name: &str, body: &str) -> String {
        let base = sanitize_name(name);
        let mut candidate = base.clone();
        let mut n = 1;
        loop {
            match self.index.get(&candidate) {
                None => break,
                Some(&i) if self.rules[i].1.as_deref() == Some(body) => return candidate,
                Some(_) => {
                    n += 1;
                    candidate = format!("{base}-{n}");
                }
            }
        }
        self.index.insert(candidate.clone(), self.rules.len());
        self.rules.push((candidate.clone(), Some(body.to_owned())));
        candidate
    }

    /// Adds a rule whose body is shared: a second call with the same body returns the first
    /// rule's name, whatever name it asks for.
    #[cfg_attr(not(feature = "schema"), allow(dead_code))] // shared rules are the schema converter's
    pub fn add_shared(&mut self, name: &str, body: &str) -> String {
        if let Some(existing) = self.by_body.get(body) {
            return existing.clone();
        }
        let n = self.add_rule(name, body);
        self.by_body.insert(body.to_owned(), n.clone());
        n
    }

    /// Like [`to_gbnf`](GrammarBuilder::to_gbnf), but only with the rules reachable from `root`.
    pub fn to_gbnf_reachable(&self) -> String {
        let mut keep = vec![false; self.rules.len()];
        let mut stack: Vec<usize> = self.index.get("root").copied().into_iter().collect();
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut keep[i], true) {
                continue;
            }
            if let Some(body) = &self.rules[i].1 {
                for name in rule_refs(body) {
                    if let Some(&j) = self.index.get(name)
                        && !keep[j]
                    {
                        stack.push(j);
                    }
                }
            }
        }
        let mut pruned = GrammarBuilder::new();
        for (i, (name, body)) in self.rules.iter().enumerate() {
            if keep[i] {
                pruned.index.insert(name.clone(), pruned.rules.len());
                pruned.rules.push((name.clone(), body.clone()));
            }
        }
        pruned.to_gbnf()
    }

    /// The grammar text: `root` first (if present), then the other rules in order.
    /// Reserved rules that were never defined are written as the empty string `""`.
    pub fn to_gbnf(&self) -> String {
        let mut out = String::new();
        let mut write = |name: &str, body: Option<&str>| {
            out.push_str(name);
            out.push_str(" ::= ");
            out.push_str(body.unwrap_or("\"\""));
            out.push('\n');
        };
        if let Some(&i) = self.index.get("root") {
            write("root", self.rules[i].1.as_deref());
        }
        for (name, body) in &self.rules {
            if name != "root" {
                write(name, body.as_deref());
            }
        }
        out
    }
}

/// Rule names referenced in a rule body (outside literals, classes and counts).
fn rule_refs(body: &str) -> Vec<&str> {
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'[' => {
                let close = if bytes[i] == b'"' { b'"' } else { b']' };
                i += 1;
                while i < bytes.len() && bytes[i] != close {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'{' => {
                while i < bytes.len() && bytes[i] != b'}' {
                    i += 1;
                }
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            c if c.is_ascii_alphanumeric() || c == b'-' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
                    i += 1;
                }
                out.push(&body[start..i]);
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gbnf::Grammar;

    fn accepts_count(rep: &str, n: usize) -> bool {
        let g = Grammar::parse(&format!("root ::= {rep}")).unwrap();
        g.accepts(&"a".repeat(n))
    }

    #[test]
    fn large_repetitions_are_exact() {
        let cases: [(u32, Option<u32>); 5] = [(0, Some(4500)), (2500, Some(2500)), (2100, None), (10, Some(4001)), (1999, Some(6000))];
        for (min, max) in cases {
            let rep = repetition("\"a\"", min, max);
            assert!(rep.len() < 200, "{rep}");
            let hi = max.unwrap_or(min + 50) as usize;
            for n in [0, 1, min as usize - (min > 0) as usize, min as usize, 1999, 2000, 2001, 3999, 4000, 4001, 4499, 4500, 4501, hi, hi + 1] {
                let want = n >= min as usize && max.is_none_or(|m| n <= m as usize);
                assert_eq!(accepts_count(&rep, n), want, "{rep} with {n}");
            }
        }
    }

    #[test]
    fn escapes_round_trip_through_the_parser() {
        let nasty = "a\"b\\c\nd\te\r\u{1}é€😀-]^[";
        let g = Grammar::parse(&format!("root ::= {}", escape_literal(nasty))).unwrap();
        assert!(g.accepts(nasty));
        let class = CharClass::from_ranges(vec![('-', '-'), ('^', '^'), (']', ']'), ('\\', '\\'), ('\0', '\x1f'), ('a', 'b')], false);
        let g = Grammar::parse(&format!("root ::= {}+", format_class(&class))).unwrap();
        assert!(g.accepts("-^]\\\u{3}ab"));
        assert!(!g.accepts("c"));
    }

    #[test]
    fn names_are_sanitized_and_unique() {
        let mut b = GrammarBuilder::new();
        assert_eq!(b.reserve("root"), "root");
        assert_eq!(b.add_rule("read_file", "\"x\""), "read-file");
        assert_eq!(b.add_rule("read-file", "\"y\""), "read-file-2");
        assert_eq!(b.add_shared("anything", "\"x\" \"x\""), "anything");
        assert_eq!(b.add_shared("other", "\"x\" \"x\""), "anything");
        b.define("root", "read-file read-file-2");
        assert!(b.to_gbnf().starts_with("root ::= read-file read-file-2\n"));
    }
}

#[cfg(test)]
mod examples {
    use super::*;
    use crate::gbnf::Grammar;

    #[test]
    fn sanitizes_names() {
        assert_eq!(sanitize_name("read_file"), "read-file");
        assert_eq!(sanitize_name("tool.get weather"), "tool-get-weather");
        assert_eq!(sanitize_name(""), "r");
    }

    #[test]
    fn repetitions_stay_within_the_limit() {
        assert_eq!(repetition("x", 0, None), "x*");
        assert_eq!(repetition("x", 2, Some(5)), "x{2,5}");
        assert_eq!(repetition("x", 0, Some(4500)), "((x{2000})? x{0,1999} | (x{2000}){2} x{0,500})");
    }

    #[test]
    fn builder_names_rules_uniquely() {
        let mut b = GrammarBuilder::new();
        let digit = b.add_rule("my_digit", "[0-9]");
        assert_eq!(digit, "my-digit");
        assert_eq!(b.add_rule("my_digit", "[0-9]"), "my-digit");
        assert_eq!(b.add_rule("my_digit", "[0-7]"), "my-digit-2");
        b.add_rule("root", &format!("{digit}+"));
        let g = Grammar::parse(&b.to_gbnf()).unwrap();
        assert!(g.accepts("42"));
    }
}
