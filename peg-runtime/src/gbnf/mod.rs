//! GBNF in llama.cpp's dialect: a parser and recognizer (our test oracle), and generation of
//! grammars from an [`Arena`](crate::Arena).
//!
//! - [`Grammar::parse`] reads GBNF text (errors name `line:column`), [`Grammar::accepts`] and
//!   [`Grammar::accepts_prefix`] answer membership with an Earley recognizer.
//! - [`generate`] turns an arena into GBNF, full or lazy ([`GbnfOptions`]).
//! - [`Recognizer`] and its [`Matcher`] follow a text character by character (constrained
//!   decoding); JSON-schema rules come from the `schema` layer (`schema::to_gbnf`).
//! - [`Sampler`] draws strings of a grammar's language: what a model under the grammar could
//!   write, for tests of the parser that reads it.
//!
//! The dialect: `name ::= alternatives` rules (names of letters, digits and `-`), string
//! literals, character classes (`[a-z]`, `[^"]`), `.`, rule references, groups, and the
//! repetitions `* + ? {m} {m,} {m,n}` (counts up to [`MAX_REPETITION`]). A grammar needs a
//! `root` rule and must not be left recursive.
//!
//! ```
//! use peg_runtime::gbnf::Grammar;
//! let g = Grammar::parse(r#"root ::= "<" [a-z]+ ">" | "x"{2,3}"#).unwrap();
//! assert!(g.accepts("<tag>"));
//! assert!(g.accepts("xxx"));
//! assert!(!g.accepts("xxxx"));
//! assert!(g.accepts_prefix("<ta"));
//! assert!(!g.accepts_prefix("<1"));
//! ```

mod builder;
mod compact;
mod generate;
mod parse;
mod recognize;
mod sample;

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

pub use builder::JSON_UNICODE_ESCAPE;
pub(crate) use builder::structural_chars;
pub(crate) use builder::{GrammarBuilder, escape_literal, format_class, repetition};
pub use generate::{GbnfOptions, generate};
pub use recognize::{Matcher, Recognizer};
pub use sample::Sampler;

use crate::chars::CharClass;
use crate::error::Error;

/// llama.cpp's upper bound for a repetition count (`{m,n}` with `m, n <= 2000`).
///
/// ```
/// use peg_runtime::gbnf::{Grammar, MAX_REPETITION};
/// assert!(Grammar::parse(&format!(r#"root ::= "a"{{0,{MAX_REPETITION}}}"#)).is_ok());
/// assert!(Grammar::parse(&format!(r#"root ::= "a"{{0,{}}}"#, MAX_REPETITION + 1)).is_err());
/// ```
pub const MAX_REPETITION: u32 = 2000;

/// One element of a sequence, before its repetition suffix.
///
/// ```
/// use peg_runtime::gbnf::{Element, Grammar};
/// let g = Grammar::parse(r#"root ::= "id:" ([0-9] | hex) .
/// hex ::= [a-f]"#).unwrap();
/// let elements: Vec<&Element> = g.rules()[0].alternatives[0].iter().map(|item| &item.element).collect();
/// assert_eq!(elements[0], &Element::Literal("id:".into()));
/// assert!(matches!(elements[1], Element::Group(alternatives) if alternatives[1][0].element == Element::Ref("hex".into())));
/// assert_eq!((elements[1].to_string(), elements[2]), ("([0-9] | hex)".to_owned(), &Element::Any));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// `"text"`: the exact characters (an empty literal matches the empty string).
    Literal(String),
    /// `[...]` or `[^...]`: one character of the class.
    Class(CharClass),
    /// `.`: any one character.
    Any,
    /// A reference to the rule of that name.
    Ref(String),
    /// `( alternatives )`.
    Group(Vec<Sequence>),
}

/// An element with its repetition bounds (`max: None` is unbounded; plain elements are `{1,1}`).
///
/// ```
/// use peg_runtime::gbnf::Grammar;
/// let g = Grammar::parse(r#"root ::= [0-9]{1,3} "x"* "!""#).unwrap();
/// let items = &g.rules()[0].alternatives[0];
/// assert_eq!((items[0].min, items[0].max), (1, Some(3)));
/// assert_eq!((items[1].min, items[1].max), (0, None));
/// assert_eq!((items[2].min, items[2].max), (1, Some(1)));
/// assert_eq!(items[0].to_string(), "[0-9]{1,3}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What is repeated.
    pub element: Element,
    /// Fewest repetitions.
    pub min: u32,
    /// Most repetitions, `None` for unbounded.
    pub max: Option<u32>,
}

/// Items matched one after another; an empty sequence matches the empty string.
///
/// ```
/// use peg_runtime::gbnf::{Grammar, Sequence};
/// let g = Grammar::parse(r#"root ::= "a" "b" | "c""#).unwrap();
/// let alternatives: &[Sequence] = &g.rule("root").unwrap().alternatives;
/// assert_eq!(alternatives.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);
/// ```
pub type Sequence = Vec<Item>;

/// A rule: its name and its alternatives.
///
/// ```
/// use peg_runtime::gbnf::Grammar;
/// let g = Grammar::parse("root ::= answer\nanswer ::= \"yes\" | \"no\"").unwrap();
/// let rule = g.rule("answer").unwrap();
/// assert_eq!((rule.name.as_str(), rule.alternatives.len()), ("answer", 2));
/// assert_eq!(g.rules().iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["root", "answer"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name.
    pub name: String,
    /// The alternatives, any of which matches.
    pub alternatives: Vec<Sequence>,
}

/// A parsed, checked GBNF grammar. Every referenced rule exists, `root` exists, no rule is left
/// recursive, and repetition counts are within [`MAX_REPETITION`].
///
/// ```
/// use peg_runtime::gbnf::Grammar;
/// let text = "root ::= call+\ncall ::= \"<\" [a-z]+ \">\"\n";
/// let g = Grammar::parse(text).unwrap();
/// assert!(g.accepts("<a><bc>") && !g.accepts("<a>x"));
/// assert_eq!(g.to_string(), text); // written back as GBNF
/// let err = Grammar::parse("root ::= undefined").unwrap_err();
/// assert_eq!(err.kind(), peg_runtime::ErrorKind::Grammar);
/// ```
#[derive(Debug, Clone)]
pub struct Grammar {
    rules: Vec<Rule>,
    index: HashMap<String, usize>,
    compiled: OnceLock<Recognizer>,
}

impl PartialEq for Grammar {
    fn eq(&self, other: &Grammar) -> bool {
        self.rules == other.rules
    }
}

impl Grammar {
    /// Parses and checks GBNF text. Errors have kind [`ErrorKind::Grammar`](crate::ErrorKind::Grammar)
    /// and name the line and column.
    ///
    /// ```
    /// use peg_runtime::gbnf::Grammar;
    /// assert!(Grammar::parse(r#"root ::= [a-z]+ ("," [a-z]+)*"#).unwrap().accepts("a,bc"));
    /// let err = Grammar::parse("root ::= \"a\"\nroot-x ::= root-x \"b\"").unwrap_err();
    /// assert!(err.to_string().contains("left recursi"), "{err}");
    /// ```
    pub fn parse(text: &str) -> Result<Grammar, Error> {
        let rules = parse::parse(text)?;
        let index = rules.iter().enumerate().map(|(i, r)| (r.name.clone(), i)).collect();
        Ok(Grammar { rules, index, compiled: OnceLock::new() })
    }

    /// The rules in definition order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule named `name`.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.index.get(name).map(|&i| &self.rules[i])
    }

    /// The compiled recognizer for the `root` rule (built once, on first use).
    pub fn recognizer(&self) -> &Recognizer {
        self.compiled.get_or_init(|| Recognizer::new(self, "root").expect("root was checked at parse time"))
    }

    /// Rewrites the grammar smaller: a group written at several places becomes one rule
    /// (`group-N`), and adjacent runs of the same bounded whitespace rule merge into one.
    /// [`generate`] does this unless [`GbnfOptions::compact`] is off.
    ///
    /// ```
    /// use peg_runtime::gbnf::Grammar;
    /// let mut g = Grammar::parse("root ::= lat \",\" lon\nlat ::= [0-9]+ \".\" [0-9]+\nlon ::= [0-9]+ \".\" [0-9]+").unwrap();
    /// g.compact(); // identical rules merge
    /// assert_eq!(g.to_string(), "root ::= lat \",\" lat\nlat ::= [0-9]+ \".\" [0-9]+\n");
    /// assert!(g.accepts("48.85,2.35"));
    /// ```
    pub fn compact(&mut self) {
        compact::compact(&mut self.rules);
        self.index = self.rules.iter().enumerate().map(|(i, r)| (r.name.clone(), i)).collect();
        self.compiled = OnceLock::new();
    }

    /// Whether the whole of `input` is in the language of `root`.
    pub fn accepts(&self, input: &str) -> bool {
        self.recognizer().accepts(input)
    }

    /// Whether `input` can still be completed into a string `root` accepts.
    ///
    /// ```
    /// use peg_runtime::gbnf::Grammar;
    /// let g = Grammar::parse(r#"root ::= "<call>" [a-z]+ "</call>""#).unwrap();
    /// assert!(g.accepts_prefix("<call>now</") && !g.accepts("<call>now</"));
    /// assert!(!g.accepts_prefix("<call>NOW"));
    /// ```
    pub fn accepts_prefix(&self, input: &str) -> bool {
        self.recognizer().accepts_prefix(input)
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Literal(s) => f.write_str(&escape_literal(s)),
            Element::Class(c) => f.write_str(&format_class(c)),
            Element::Any => f.write_str("."),
            Element::Ref(name) => f.write_str(name),
            Element::Group(alts) => {
                f.write_str("(")?;
                write_alternatives(f, alts)?;
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.element)?;
        match (self.min, self.max) {
            (1, Some(1)) => Ok(()),
            (0, Some(1)) => f.write_str("?"),
            (0, None) => f.write_str("*"),
            (1, None) => f.write_str("+"),
            (m, None) => write!(f, "{{{m},}}"),
            (m, Some(n)) if m == n => write!(f, "{{{m}}}"),
            (m, Some(n)) => write!(f, "{{{m},{n}}}"),
        }
    }
}

fn write_alternatives(f: &mut fmt::Formatter<'_>, alts: &[Sequence]) -> fmt::Result {
    for (i, seq) in alts.iter().enumerate() {
        if i > 0 {
            f.write_str(" | ")?;
        }
        for (j, item) in seq.iter().enumerate() {
            if j > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{item}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Grammar {
    /// Writes the grammar back as GBNF text, one rule per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rule in &self.rules {
            write!(f, "{} ::= ", rule.name)?;
            write_alternatives(f, &rule.alternatives)?;
            f.write_str("\n")?;
        }
        Ok(())
    }
}
