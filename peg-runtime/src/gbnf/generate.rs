//! Arena to GBNF: every combinator maps to a GBNF expression, except lookahead, which emits
//! nothing (and is an error inside a trigger rule).
//!
//! The grammar accepts exactly what the parser accepts for arenas where PEG and CFG agree:
//! no lookahead, `start`/`end` only at the ends, choices whose alternatives do not match
//! prefixes of each other's matches in context, and repetitions/`until`/`space`/`chars` not
//! followed by text they could themselves consume (PEG repetition never gives back).

use std::collections::{HashMap, HashSet};

use super::{Grammar, GrammarBuilder, JSON_UNICODE_ESCAPE, escape_literal, format_class, repetition};
use crate::arena::{Arena, JsonKind, Node, NodeId, PythonKind};
use crate::chars::CharClass;
use crate::error::{Error, ErrorKind};
#[cfg(feature = "schema")]
use crate::schema::SchemaConverter;

/// Options for [`generate`].
///
/// ```
/// use peg_runtime::gbnf::{generate, GbnfOptions, Grammar};
/// use peg_runtime::Arena;
/// let arena = Arena::build(|p| p.until("<call>") + p.optional(p.trigger_rule("call", "<call>" + p.json()))).unwrap();
/// let lazy = generate(&arena, &GbnfOptions { lazy: true, ..GbnfOptions::default() }).unwrap();
/// let g = Grammar::parse(&lazy).unwrap();
/// assert!(g.accepts("<call>[1, 2]") && !g.accepts("Hi <call>[1, 2]")); // from the trigger on
/// let full = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
/// assert!(full.accepts("Hi <call>[1, 2]"));
/// ```
#[derive(Debug, Clone)]
pub struct GbnfOptions {
    /// Emit only trigger rules and what they reach, with `root` as the alternation of triggers.
    pub lazy: bool,
    /// Parse the result with [`Grammar::parse`] before returning it (catches malformed
    /// verbatim `gbnf` nodes and left recursion). On by default.
    pub validate: bool,
    /// Write what repeats once ([`Grammar::compact`]): a group used at several places
    /// becomes a rule, adjacent whitespace runs merge. On by default; implies `validate`.
    pub compact: bool,
}

impl Default for GbnfOptions {
    fn default() -> GbnfOptions {
        GbnfOptions { lazy: false, validate: true, compact: true }
    }
}

/// Generates GBNF for `arena`: the full grammar (`root` is the arena's root) or, with
/// `lazy`, only the trigger rules and what they reach.
///
/// ```
/// use peg_runtime::{Arena, gbnf::{generate, GbnfOptions, Grammar}};
/// let arena = Arena::build(|p| {
///     let call = p.trigger_rule("tool_call", "<call>" + p.json() + "</call>");
///     p.tag("content", p.until("<call>")) + p.optional(call)
/// })
/// .unwrap();
/// let full = generate(&arena, &GbnfOptions::default()).unwrap();
/// let g = Grammar::parse(&full).unwrap();
/// assert!(g.accepts(r#"hi <call>{"a": 1}</call>"#));
/// assert!(!g.accepts(r#"hi <call> <call>{"a": 1}</call>"#));
/// let lazy = generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap();
/// assert!(lazy.starts_with("root ::= tool-call\n"));
/// ```
pub fn generate(arena: &Arena, options: &GbnfOptions) -> Result<String, Error> {
    let mut g = Gen { depth: 0, arena, b: GrammarBuilder::new(), rule_names: HashMap::new(), queue: Vec::new() };
    let root = g.b.reserve("root");
    check_triggers(arena)?;
    let root_body = if options.lazy {
        let triggers: Vec<NodeId> = arena.rules().iter().map(|&(_, id)| id).filter(|&id| matches!(arena.node(id), Node::Rule { trigger: true, .. })).collect();
        if triggers.is_empty() {
            return Err(Error::new(ErrorKind::Grammar, "a lazy grammar needs at least one trigger rule"));
        }
        match g.tail_after_trigger(arena.root(), &mut Vec::new())? {
            Some(tail) => tail,
            // The root reaches no trigger: the triggers stand alone.
            None => triggers.into_iter().map(|t| g.rule_name(t)).collect::<Vec<_>>().join(" | "),
        }
    } else {
        g.expr(arena.root())?
    };
    g.b.define(&root, if root_body.is_empty() { "\"\"" } else { &root_body });
    while let Some(rule) = g.queue.pop() {
        let Node::Rule { child, .. } = arena.node(rule) else { continue };
        let body = g.expr(*child)?;
        let name = g.rule_names[&rule].clone();
        g.b.define(&name, if body.is_empty() { "\"\"" } else { &body });
    }
    // Raw schema fallbacks and shared primitives can leave rules nothing refers to.
    let text = g.b.to_gbnf_reachable();
    if options.validate || options.compact {
        let mut grammar = Grammar::parse(&text).map_err(|e| Error::new(ErrorKind::Grammar, "generated grammar is invalid").with_source(e))?;
        if options.compact {
            grammar.compact();
            return Ok(grammar.to_string());
        }
    }
    Ok(text)
}

/// Lookahead cannot be expressed in GBNF; inside a trigger rule it would make the lazy
/// grammar accept text the parser rejects.
fn check_triggers(arena: &Arena) -> Result<(), Error> {
    for &(ref name, id) in arena.rules() {
        let Node::Rule { child, trigger: true, .. } = arena.node(id) else { continue };
        let mut seen = HashSet::new();
        let mut stack = vec![*child];
        while let Some(n) = stack.pop() {
            let n = arena.resolve(n);
            if !seen.insert(n) {
                continue;
            }
            match arena.node(n) {
                Node::Peek { .. } | Node::Negate { .. } => {
                    return Err(Error::new(
                        ErrorKind::Grammar,
                        format!(
                            "trigger rule `{name}` uses lookahead (`peek`/`negate`), which GBNF cannot express; wrap it in `schema`, `gbnf` or `constrained`"
                        ),
                    ));
                }
                // These emit their own grammar instead of their child's.
                Node::Schema { raw: false, .. } | Node::Gbnf { .. } => {}
                Node::Constrained { nodes: [_, grammar] } => stack.push(*grammar),
                node => stack.extend(node.children().iter().copied()),
            }
        }
    }
    Ok(())
}

/// Nesting of nodes within one rule past which generation stops (rules restart the count).
const MAX_DEPTH: usize = 400;

/// Whitespace at a structural point (between markers, inside JSON and Python containers):
/// bounded, because a sampling model left an unbounded run can emit whitespace until its token
/// limit. 24 covers what templates render (a line break or two, indentation of pretty-printed
/// JSON several levels deep); the parser itself accepts any amount.
const BOUNDED_WS: &str = "[ \\t\\n\\r]{0,24}";

struct Gen<'a> {
    depth: usize,
    arena: &'a Arena,
    b: GrammarBuilder,
    rule_names: HashMap<NodeId, String>,
    queue: Vec<NodeId>,
}

/// The alternation of `alts`; `None` for none.
fn alternation(mut alts: Vec<String>) -> Option<String> {
    match alts.len() {
        0 => None,
        1 => alts.pop(),
        _ => Some(format!("({})", alts.join(" | "))),
    }
}

/// `e` as an item of a sequence: an alternation needs parentheses.
fn seq_item(e: String) -> String {
    if e.contains('|') { atom(&e) } else { e }
}

/// Wraps `e` in parentheses unless it is already a single element.
fn atom(e: &str) -> String {
    if is_atom(e) { e.to_owned() } else { format!("({e})") }
}

fn is_atom(e: &str) -> bool {
    // A single element has no top-level space or `|`.
    if super::structural_chars(e).any(|(_, c, depth)| depth == 0 && (c == ' ' || c == '|')) {
        return false;
    }
    // A repetition suffix makes `x*` an element, but repeating it again needs parentheses.
    !e.ends_with(['*', '+', '?', '}'])
}

impl Gen<'_> {
    fn rule_name(&mut self, rule: NodeId) -> String {
        if let Some(n) = self.rule_names.get(&rule) {
            return n.clone();
        }
        let name = match self.arena.node(rule) {
            Node::Rule { name, .. } => name.clone(),
            _ => "rule".to_owned(),
        };
        let n = self.b.reserve(&name);
        self.rule_names.insert(rule, n.clone());
        self.queue.push(rule);
        n
    }

    fn nothing(&mut self) -> String {
        // A rule deriving no string: accepted by every GBNF parser, matched by nothing.
        self.b.add_rule("nothing", "\"\\x00\" nothing")
    }

    /// What a lazy grammar constrains of a match of `id`: from the first trigger rule in it to
    /// its end, i.e. the trigger and everything the node matches after it (later calls of a
    /// repetition, the whitespace and closing markers that follow). `None` when `id` reaches no
    /// trigger. `rules`: the rules being expanded, to refuse a trigger behind recursion (its
    /// tail has no finite expression this way).
    fn tail_after_trigger(&mut self, id: NodeId, rules: &mut Vec<NodeId>) -> Result<Option<String>, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(ErrorKind::Grammar, format!("the arena nests deeper than {MAX_DEPTH} nodes within one rule")));
        }
        let r = self.tail_after_trigger_inner(id, rules);
        self.depth -= 1;
        r
    }

    fn tail_after_trigger_inner(&mut self, id: NodeId, rules: &mut Vec<NodeId>) -> Result<Option<String>, Error> {
        let arena = self.arena;
        let id = arena.resolve(id);
        Ok(match arena.node(id) {
            Node::Rule { trigger: true, .. } => Some(self.rule_name(id)),
            Node::Rule { name, child, .. } => {
                if rules.contains(&id) {
                    return Err(Error::new(
                        ErrorKind::Grammar,
                        format!("rule `{name}` reaches a trigger rule through recursion; a lazy grammar cannot start inside it"),
                    ));
                }
                rules.push(id);
                let tail = self.tail_after_trigger(*child, rules);
                rules.pop();
                tail?
            }
            Node::Sequence { children } => {
                let mut alts = Vec::new();
                for (i, &c) in children.iter().enumerate() {
                    let Some(tail) = self.tail_after_trigger(c, rules)? else { continue };
                    let mut parts = vec![seq_item(tail)];
                    for &after in &children[i + 1..] {
                        let e = self.expr(after)?;
                        if !e.is_empty() {
                            parts.push(seq_item(e));
                        }
                    }
                    alts.push(parts.join(" "));
                }
                alternation(alts)
            }
            Node::Choice { children } => {
                let mut alts = Vec::new();
                for &c in children {
                    alts.extend(self.tail_after_trigger(c, rules)?);
                }
                alternation(alts)
            }
            // The iteration holding the first trigger, then the iterations after it (a superset
            // for `min` > 1: the free text before the trigger may have held some).
            Node::Repeat { child, max, .. } if *max != Some(0) => match self.tail_after_trigger(*child, rules)? {
                Some(tail) => {
                    let more = self.expr(*child)?;
                    let more = if more.is_empty() || *max == Some(1) { String::new() } else { repetition(&atom(&more), 0, max.map(|m| m - 1)) };
                    Some(if more.is_empty() { tail } else { format!("{} {more}", seq_item(tail)) })
                }
                None => None,
            },
            Node::Atomic { child } | Node::Tag { child, .. } => self.tail_after_trigger(*child, rules)?,
            // Leaves, lookahead (matches no text), and nodes that emit a grammar of their own.
            _ => None,
        })
    }

    /// The expression for node `id`; an empty string stands for the empty match.
    fn expr(&mut self, id: NodeId) -> Result<String, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(ErrorKind::Grammar, format!("the arena nests deeper than {MAX_DEPTH} nodes within one rule")));
        }
        let r = self.expr_inner(id);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, id: NodeId) -> Result<String, Error> {
        let arena = self.arena;
        Ok(match arena.node(id) {
            Node::Eps | Node::Start | Node::End | Node::Peek { .. } | Node::Negate { .. } => String::new(),
            Node::Literal { text } if text.is_empty() => String::new(),
            Node::Literal { text } => escape_literal(text),
            Node::Any => ".".to_owned(),
            Node::Sequence { children } => {
                let mut parts = Vec::new();
                for &c in children {
                    let e = self.expr(c)?;
                    if !e.is_empty() {
                        parts.push(seq_item(e));
                    }
                }
                parts.join(" ")
            }
            Node::Choice { children } => {
                if children.is_empty() {
                    return Ok(self.nothing());
                }
                let mut alts = Vec::new();
                for &c in children {
                    let e = self.expr(c)?;
                    alts.push(if e.is_empty() { "\"\"".to_owned() } else { e });
                }
                if alts.len() == 1 { alts.pop().expect("one") } else { format!("({})", alts.join(" | ")) }
            }
            Node::Repeat { child, min, max } => {
                let e = self.expr(*child)?;
                if e.is_empty() || *max == Some(0) { String::new() } else { repetition(&atom(&e), *min, *max) }
            }
            Node::Chars { class, min, max } => {
                if *max == Some(0) {
                    String::new()
                } else if !class.negated && class.ranges.is_empty() {
                    if *min == 0 { String::new() } else { self.nothing() }
                } else {
                    repetition(&format_class(class), *min, *max)
                }
            }
            Node::Space => self.b.add_rule("ws", BOUNDED_WS),
            Node::Until { delimiters } => self.until(delimiters),
            Node::Rest => ".*".to_owned(),
            Node::Json { kind } => self.json(*kind),
            // A recovery when parsing; generation writes whole values.
            Node::JsonPrefix => self.json(JsonKind::Value),
            Node::JsonStringContent => {
                let c = self.json_char();
                format!("{c}*")
            }
            Node::Python { kind } => self.python(*kind),
            Node::Marker => self.b.add_rule("marker", "\"<\" [^>\\n]+ \">\" | \"[\" [^\\]\\n]+ \"]\""),
            Node::Ref { .. } | Node::Rule { .. } => {
                let r = arena.resolve(id);
                self.rule_name(r)
            }
            Node::Schema { child, name, schema, raw } => self.schema(*child, name, schema, *raw)?,
            Node::Atomic { child } | Node::Tag { child, .. } => self.expr(*child)?,
            Node::Constrained { nodes: [_, grammar] } => self.expr(*grammar)?,
            Node::Gbnf { gbnf, .. } => {
                if gbnf.trim().is_empty() {
                    String::new()
                } else {
                    format!("({gbnf})")
                }
            }
        })
    }

    /// The rules of a `schema` node: the schema's, or for a raw string schema a raw-text rule
    /// where it cannot run past the child's delimiters (else the child's own expression).
    #[cfg(feature = "schema")]
    fn schema(&mut self, child: NodeId, name: &str, schema: &serde_json::Value, raw: bool) -> Result<String, Error> {
        if !raw {
            return SchemaConverter::new(&mut self.b).add(name, schema);
        }
        match SchemaConverter::new(&mut self.b).add_raw(name, schema)? {
            Some(r) if self.raw_is_delimited(child, &r.alphabet) => Ok(r.name),
            _ => self.expr(child),
        }
    }

    /// Without the schema converter a `schema` node has no grammar: an error, not a silently
    /// looser grammar (enabling the feature elsewhere in a build must not change output).
    #[cfg(not(feature = "schema"))]
    fn schema(&mut self, _child: NodeId, name: &str, _schema: &serde_json::Value, _raw: bool) -> Result<String, Error> {
        Err(Error::new(ErrorKind::Grammar, format!("schema node `{name}` needs peg-runtime's `schema` feature")))
    }

    /// A raw rule may replace the child's `until` only if it cannot produce a delimiter
    /// (some character of every delimiter is outside its alphabet).
    #[cfg_attr(not(feature = "schema"), allow(dead_code))]
    fn raw_is_delimited(&self, child: NodeId, alphabet: &CharClass) -> bool {
        let mut id = child;
        loop {
            match self.arena.node(self.arena.resolve(id)) {
                Node::Tag { child, .. } | Node::Atomic { child } | Node::Rule { child, .. } => id = *child,
                // The grammar side is what the raw rule replaces.
                Node::Constrained { nodes: [_, grammar] } => id = *grammar,
                Node::Until { delimiters } => {
                    return delimiters.iter().all(|d| d.chars().any(|c| !alphabet.matches(c)));
                }
                _ => return true,
            }
        }
    }

    /// "Any text not containing a delimiter": one rule per state of the delimiters'
    /// matching automaton (states are proper delimiter prefixes, as in Aho–Corasick).
    fn until(&mut self, delimiters: &[String]) -> String {
        let key = format!("until:{}", serde_json::to_string(delimiters).expect("strings serialize"));
        if let Some(n) = self.b.memo.get(&key) {
            return n.clone();
        }
        // A delimiter containing another one adds nothing to "contains no delimiter".
        let mut delims: Vec<Vec<char>> = Vec::new();
        for (i, d) in delimiters.iter().enumerate() {
            let redundant = delimiters.iter().enumerate().any(|(j, e)| j != i && !e.is_empty() && d.contains(e.as_str()) && (e != d || j < i));
            if !redundant {
                delims.push(d.chars().collect());
            }
        }
        // States: the proper prefixes of the delimiters (none holds a delimiter, as none holds
        // another), in a trie whose Aho-Corasick transitions `delta` follow the text: the
        // longest suffix that is a state, or `None` where a delimiter completes.
        let mut states: Vec<Vec<char>> = vec![Vec::new()];
        let mut child: HashMap<(usize, char), usize> = HashMap::new();
        let mut completes: HashSet<(usize, char)> = HashSet::new();
        for d in &delims {
            let mut at = 0;
            for (k, &c) in d.iter().enumerate() {
                if k + 1 == d.len() {
                    completes.insert((at, c));
                    break;
                }
                at = match child.get(&(at, c)) {
                    Some(&u) => u,
                    None => {
                        states.push(d[..=k].to_vec());
                        child.insert((at, c), states.len() - 1);
                        states.len() - 1
                    }
                };
            }
        }
        let mut alphabet: Vec<char> = delims.iter().flatten().copied().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        // (An empty delimiter ends the text anywhere.)
        let empty = delims.iter().any(Vec::is_empty);
        let mut by_length: Vec<usize> = (0..states.len()).collect();
        by_length.sort_by_key(|&s| states[s].len());
        let mut fail = vec![0; states.len()];
        let mut delta: Vec<Vec<Option<usize>>> = vec![Vec::new(); states.len()];
        for &s in &by_length {
            // `fail[s]` is shorter than `s`: its row is done.
            let row: Vec<Option<usize>> = alphabet
                .iter()
                .enumerate()
                .map(|(a, &c)| match child.get(&(s, c)) {
                    _ if empty || completes.contains(&(s, c)) => None,
                    Some(&u) => Some(u),
                    None if s == 0 => Some(0),
                    None => delta[fail[s]][a],
                })
                .collect();
            for (a, &c) in alphabet.iter().enumerate() {
                if let Some(&u) = child.get(&(s, c)) {
                    fail[u] = if s == 0 { 0 } else { delta[fail[s]][a].unwrap_or(0) };
                }
            }
            delta[s] = row;
        }
        let base = self.b.reserve("until");
        let names: Vec<String> = (0..states.len()).map(|q| if q == 0 { base.clone() } else { self.b.reserve(&format!("{base}-s{q}")) }).collect();
        self.b.memo.insert(key, base.clone());
        for q in 0..states.len() {
            let mut by_target: Vec<(usize, Vec<char>)> = Vec::new();
            let mut leaving: Vec<(char, char)> = Vec::new(); // chars not going to state 0
            for (a, &c) in alphabet.iter().enumerate() {
                let t = delta[q][a];
                if t != Some(0) {
                    leaving.push((c, c));
                }
                if let Some(t) = t.filter(|&t| t != 0) {
                    match by_target.iter_mut().find(|(x, _)| *x == t) {
                        Some((_, cs)) => cs.push(c),
                        None => by_target.push((t, vec![c])),
                    }
                }
            }
            let stay = format_class(&CharClass::from_ranges(leaving, true));
            let mut alts: Vec<String> = Vec::new();
            if q != 0 {
                alts.push(format!("{stay} {}", names[0]));
            }
            for (t, cs) in by_target {
                let class = if cs.len() == 1 {
                    escape_literal(&cs[0].to_string())
                } else {
                    format_class(&CharClass::from_ranges(cs.iter().map(|&c| (c, c)).collect(), false))
                };
                alts.push(format!("{class} {}", names[t]));
            }
            let body = match (q, alts.is_empty()) {
                (0, true) => format!("{stay}*"),
                (0, false) => format!("{stay}* ({})?", alts.join(" | ")),
                (_, _) => format!("({})?", alts.join(" | ")),
            };
            self.b.define(&names[q], &body);
        }
        base
    }

    fn json_char(&mut self) -> String {
        self.b.add_rule("json-char", &format!(r#"[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | {JSON_UNICODE_ESCAPE})"#))
    }

    /// RFC 8259 JSON, matching the parser's scanner: whitespace inside containers only.
    fn json(&mut self, kind: JsonKind) -> String {
        let ws = self.b.add_rule("ws", BOUNDED_WS);
        let ch = self.json_char();
        let string = self.b.add_rule("json-string", &format!("\"\\\"\" {ch}* \"\\\"\""));
        // Two exponent digits (after leading zeros) at most: every number is a double
        // (readers refuse `1e999`).
        let number = self.b.add_rule("json-number", "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? \"0\"{0,2} [0-9]{1,2})?");
        let boolean = self.b.add_rule("json-bool", "\"true\" | \"false\"");
        let null = self.b.add_rule("json-null", "\"null\"");
        let (value, object, array) = match (self.b.memo.get("json:value"), self.b.memo.get("json:object"), self.b.memo.get("json:array")) {
            (Some(v), Some(o), Some(a)) => (v.clone(), o.clone(), a.clone()),
            _ => {
                let v = self.b.reserve("json-value");
                let o = self.b.reserve("json-object");
                let a = self.b.reserve("json-array");
                self.b.define(&v, &format!("{o} | {a} | {string} | {number} | {boolean} | {null}"));
                self.b.define(&o, &format!("\"{{\" {ws} ({string} {ws} \":\" {ws} {v} {ws} (\",\" {ws} {string} {ws} \":\" {ws} {v} {ws})*)? \"}}\""));
                self.b.define(&a, &format!("\"[\" {ws} ({v} {ws} (\",\" {ws} {v} {ws})*)? \"]\""));
                self.b.memo.insert("json:value".into(), v.clone());
                self.b.memo.insert("json:object".into(), o.clone());
                self.b.memo.insert("json:array".into(), a.clone());
                (v, o, a)
            }
        };
        match kind {
            JsonKind::Value => value,
            JsonKind::Object => object,
            JsonKind::Array => array,
            JsonKind::String => string,
            JsonKind::Number => number,
            JsonKind::Bool => boolean,
            JsonKind::Null => null,
        }
    }

    /// Python literals as the parser's scanner reads them: either quote, `True`/`False`/
    /// `None`, trailing commas, string dict keys, loose numbers (`+1`, `.5`, `1_000`, `1.`).
    fn python(&mut self, kind: PythonKind) -> String {
        let ws = self.b.add_rule("ws", BOUNDED_WS);
        let esc = r#""\\" ("x" [0-9a-fA-F]{2} | "u" [0-9a-fA-F]{4} | "U" [0-9a-fA-F]{8} | [^xuU])"#;
        let string = self.b.add_rule("py-str", &format!(r#""\"" ([^"\\\n\r] | {esc})* "\"" | "'" ([^'\\\n\r] | {esc})* "'""#));
        let number = self.b.add_rule(
            "py-number",
            r#"([-+] [0-9] [0-9_]* | "0" ([0-9] [0-9_]*)? | [1-9] [0-9_]*) ("." ([0-9] [0-9_]*)?)? ([eE] [-+]? [0-9]+)? | [-+]? "." [0-9] [0-9_]* ([eE] [-+]? [0-9]+)?"#,
        );
        let boolean = self.b.add_rule("py-bool", "\"True\" | \"False\"");
        let none = self.b.add_rule("py-none", "\"None\"");
        let (value, dict, list) = match (self.b.memo.get("py:value"), self.b.memo.get("py:dict"), self.b.memo.get("py:list")) {
            (Some(v), Some(o), Some(a)) => (v.clone(), o.clone(), a.clone()),
            _ => {
                let v = self.b.reserve("py-value");
                let d = self.b.reserve("py-dict");
                let l = self.b.reserve("py-list");
                let key = &string;
                self.b.define(&v, &format!("{d} | {l} | {string} | {number} | {boolean} | {none}"));
                self.b.define(&d, &format!("\"{{\" {ws} ({key} {ws} \":\" {ws} {v} {ws} (\",\" {ws} {key} {ws} \":\" {ws} {v} {ws})* (\",\" {ws})?)? \"}}\""));
                self.b.define(&l, &format!("\"[\" {ws} ({v} {ws} (\",\" {ws} {v} {ws})* (\",\" {ws})?)? \"]\""));
                self.b.memo.insert("py:value".into(), v.clone());
                self.b.memo.insert("py:dict".into(), d.clone());
                self.b.memo.insert("py:list".into(), l.clone());
                (v, d, l)
            }
        };
        match kind {
            PythonKind::Value => value,
            PythonKind::Dict => dict,
            PythonKind::List => list,
            PythonKind::Str => string,
            PythonKind::Number => number,
            PythonKind::Bool => boolean,
            PythonKind::None => none,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(arena: &Arena) -> Grammar {
        let text = generate(arena, &GbnfOptions::default()).unwrap();
        Grammar::parse(&text).unwrap()
    }

    #[test]
    fn until_is_exact_for_overlapping_delimiters() {
        for delims in [vec!["ab"], vec!["aab"], vec!["abab"], vec!["</tool_call>"], vec!["ab", "bc"], vec!["x", "yz", "xyzzy"], vec!["\n</p>", "</p>", "</p>"]]
        {
            let arena = Arena::build(|p| p.until_one_of(&delims)).unwrap();
            let g = full(&arena);
            // All strings over the delimiters' alphabet plus one other char, up to length 6.
            let mut alphabet: Vec<char> = delims.iter().flat_map(|d| d.chars()).collect();
            alphabet.sort_unstable();
            alphabet.dedup();
            alphabet.truncate(4);
            alphabet.push('q');
            let mut words = vec![String::new()];
            for _ in 0..5 {
                let next: Vec<String> = words.iter().flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}"))).collect();
                words.extend(next.into_iter().filter(|w| w.len() <= 5));
                words.sort();
                words.dedup();
            }
            for w in &words {
                let want = !delims.iter().any(|d| w.contains(d));
                assert_eq!(g.accepts(w), want, "{delims:?} {w:?}");
            }
        }
    }

    #[test]
    fn many_delimiters_stay_small() {
        let delims: Vec<String> = (0..60).map(|i| format!("<|marker_{i}_end|>")).collect();
        let arena = Arena::build(|p| p.until_one_of(&delims)).unwrap();
        // The until automaton is linear in the delimiters' total length, not exponential.
        let text = generate(&arena, &GbnfOptions::default()).unwrap();
        assert!(text.len() < 200_000, "{} bytes", text.len());
        let g = full(&arena);
        assert!(g.accepts("text <|marker_7_end| <|marker_x"));
        assert!(!g.accepts("text <|marker_59_end|>"));
    }

    #[test]
    fn lookahead_in_trigger_rules_is_an_error() {
        let arena = Arena::build(|p| {
            let t = p.trigger_rule("call", "<" + p.negate("x") + p.any());
            p.rest() + t
        })
        .unwrap();
        let e = generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Grammar);
        assert!(e.detail().contains("`call`"), "{e}");
        // Outside trigger rules, lookahead simply emits nothing.
        let arena = Arena::build(|p| p.negate("x") + p.any()).unwrap();
        assert!(full(&arena).accepts("x"));
        // Behind a schema, it is fine.
        let arena = Arena::build(|p| {
            let inner = p.schema(p.negate("x") + p.json(), "args", serde_json::json!({"type": "integer"}), false);
            p.trigger_rule("call", "<" + inner + ">")
        })
        .unwrap();
        assert!(generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).is_ok());
        // Behind `constrained`, only the grammar side counts.
        let arena = Arena::build(|p| p.trigger_rule("call", "<" + p.constrained(p.negate("x") + p.any(), "y") + ">")).unwrap();
        assert!(generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).is_ok());
        let arena = Arena::build(|p| p.trigger_rule("call", "<" + p.constrained("y", p.negate("x") + p.any()) + ">")).unwrap();
        assert_eq!(generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap_err().kind(), ErrorKind::Grammar);
    }

    /// `constrained` parses with its first parser and emits its second, rules included.
    #[test]
    fn constrained_emits_the_grammar_side() {
        let arena = Arena::build(|p| {
            let digits = p.rule("digits", p.chars("[0-9]", 1, Some(3)));
            "n=" + p.constrained(p.until(";"), digits) + ";"
        })
        .unwrap();
        assert_eq!(arena.parse(b"n=abc;", false).unwrap().result.outcome, crate::Outcome::Success);
        let g = full(&arena);
        assert!(g.accepts("n=123;"));
        assert!(!g.accepts("n=abc;") && !g.accepts("n=1234;"));
        let back = Arena::from_data(serde_json::from_str(&serde_json::to_string(arena.data()).unwrap()).unwrap()).unwrap();
        assert_eq!(back.dump(), arena.dump());
        assert!(arena.dump().contains("constrained(until(\";\"), digits)"), "{}", arena.dump());
    }

    #[test]
    fn lazy_needs_triggers_and_emits_only_reachable_rules() {
        let arena = Arena::build(|p| {
            p.rule("unused", "u");
            let args = p.rule("args", p.json_object());
            let a = p.trigger_rule("call_a", "<a>" + args + "</a>");
            let b = p.trigger_rule("call_b", "<b>" + p.json_number() + "</b>");
            p.until("<") + p.optional(a | b)
        })
        .unwrap();
        let lazy = generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap();
        assert!(lazy.starts_with("root ::= (call-a | call-b)\n"), "{lazy}");
        assert!(!lazy.contains("unused") && !lazy.contains("until"), "{lazy}");
        let g = Grammar::parse(&lazy).unwrap();
        assert!(g.accepts("<a>{\"k\": [1]}</a>") && g.accepts("<b>-1.5e3</b>") && !g.accepts("x<b>1</b>"));
        let none = Arena::build(|p| p.rest()).unwrap();
        assert!(generate(&none, &GbnfOptions { lazy: true, ..Default::default() }).is_err());
    }

    /// A lazy grammar accepts what the parser accepts from the first trigger on: every later
    /// call of a repetition, what lies between and after them, a section's closing marker.
    #[test]
    fn lazy_grammar_runs_from_the_first_trigger_to_the_end() {
        let arena = Arena::build(|p| {
            let call = p.trigger_rule("call", "<call>" + p.json_object() + "</call>");
            let section = p.rule("section", "<calls>" + p.one_or_more(call + p.space()) + "</calls>");
            p.until("<") + p.zero_or_more(call + p.space()) + p.optional(section) + p.end()
        })
        .unwrap();
        let g = Grammar::parse(&generate(&arena, &GbnfOptions { lazy: true, ..Default::default() }).unwrap()).unwrap();
        for text in [r#"<call>{}</call>"#, "<call>{}</call>\n<call>{\"a\": 1}</call> ", "<call>{}</call><calls><call>{}</call> <call>{}</call></calls>"] {
            assert!(arena.parse(format!("hi {text}").as_bytes(), false).unwrap().result.end == text.len() + 3, "{text}");
            assert!(g.accepts(text), "{text}");
        }
        assert!(!g.accepts("<call>{}</call> hi") && !g.accepts("<calls><call>{}</call>") && !g.accepts("<call>{}</call><calls></calls>"));
        let recursive = Arena::build(|p| {
            let call = p.trigger_rule("call", "<call>" + p.json_object() + "</call>");
            p.rule("calls", call + p.optional(p.rule_ref("calls")))
        })
        .unwrap();
        assert_eq!(generate(&recursive, &GbnfOptions { lazy: true, ..Default::default() }).unwrap_err().kind(), ErrorKind::Grammar);
    }

    #[test]
    fn large_repeats_nest_within_the_limit() {
        let arena = Arena::build(|p| p.repeat("ab", 2001, Some(4500)) + p.chars("[x]", 0, Some(2500)) + "!").unwrap();
        let text = generate(&arena, &GbnfOptions::default()).unwrap();
        assert!(text.len() < 300, "{text}");
        let g = Grammar::parse(&text).unwrap();
        assert!(g.accepts(&format!("{}{}!", "ab".repeat(2001), "x".repeat(2500))));
        assert!(g.accepts(&("ab".repeat(4500) + "!")));
        assert!(!g.accepts(&("ab".repeat(2000) + "!")));
        assert!(!g.accepts(&("ab".repeat(4501) + "!")));
        assert!(!g.accepts(&format!("{}{}!", "ab".repeat(3000), "x".repeat(2501))));
    }

    #[test]
    fn verbatim_gbnf_empty_choice_and_anchors() {
        let arena = Arena::build(|p| p.start() + p.gbnf(p.any(), "[0-9]+ | \"x\"") + p.choice(Vec::<&str>::new()).builder().eps() + p.end()).unwrap();
        let g = full(&arena);
        assert!(g.accepts("123") && g.accepts("x") && !g.accepts("y"));
        let never = Arena::build(|p| p.literal("a") + p.choice(Vec::<&str>::new())).unwrap();
        let g = full(&never);
        assert!(!g.accepts("a") && !g.accepts_prefix("ab"));
        let broken = Arena::build(|p| p.gbnf(p.any(), "[0-9")).unwrap();
        let e = generate(&broken, &GbnfOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Grammar);
        assert!(e.detail().contains("generated grammar is invalid"), "{e}");
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<Error>()).expect("the parse error is the source");
        assert!(cause.detail().contains("unterminated character class"), "{cause}");
    }

    #[test]
    fn deep_arenas_are_errors_not_crashes() {
        use crate::arena::ArenaData;
        let mut nodes = vec![Node::Literal { text: "a".into() }];
        for i in 0..100_000u32 {
            nodes.push(Node::Repeat { child: NodeId(i), min: 0, max: Some(1) });
        }
        let root = NodeId(nodes.len() as u32 - 1);
        let arena = Arena::from_data(ArenaData { nodes, rules: vec![], root }).unwrap();
        let e = generate(&arena, &GbnfOptions::default()).unwrap_err();
        assert!(e.detail().contains("nests deeper"), "{e}");
    }

    #[test]
    fn names_are_sanitized_and_root_is_reserved() {
        let arena = Arena::build(|p| {
            let r = p.rule("root", "x");
            let f = p.rule("read_file", "y");
            r + f
        })
        .unwrap();
        let text = generate(&arena, &GbnfOptions::default()).unwrap();
        assert!(text.starts_with("root ::= root-2 read-file\n"), "{text}");
    }
}
