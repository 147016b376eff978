//! [`Arena::dump`]: the grammar in a readable PEG-like notation.

use std::fmt::Write;

use crate::arena::{Arena, Node, NodeId};

/// Binding strength, loosest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    Choice,
    Seq,
    Prefix,
    Postfix,
}

/// Expressions nested deeper than this print as `…` (the dump is for people).
const MAX_DEPTH: usize = 48;

impl Arena {
    /// A readable multi-line dump: the root, then every rule, in a PEG-like notation.
    ///
    /// `a b` is a sequence, `a | b` a choice, `&a`/`!a` lookahead, `a* a+ a? a{m,n}` repetition,
    /// `.` any code point, `^`/`$` start/end; rules are referred to by name.
    ///
    /// ```
    /// use peg_runtime::Arena;
    /// let arena = Arena::build(|p| {
    ///     let args = p.rule("args", p.json_object());
    ///     p.tag("content", p.until("<tool_call>")) + p.optional("<tool_call>" + args) + p.end()
    /// })
    /// .unwrap();
    /// assert_eq!(
    ///     arena.dump(),
    ///     "root := tag(content, until(\"<tool_call>\")) (\"<tool_call>\" args)? $\nargs := json_object\n"
    /// );
    /// ```
    pub fn dump(&self) -> String {
        let mut s = String::new();
        let root = self.root();
        let _ = writeln!(s, "root := {}", self.expr(root, Prec::Choice, 0));
        for (name, id) in self.rules() {
            let (child, trigger) = match self.node(*id) {
                Node::Rule { child, trigger, .. } => (*child, *trigger),
                _ => continue,
            };
            let kw = if trigger { "trigger " } else { "" };
            let _ = writeln!(s, "{kw}{name} := {}", self.expr(child, Prec::Choice, 0));
        }
        s
    }

    fn expr(&self, id: NodeId, min: Prec, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "…".to_owned();
        }
        let d = depth + 1;
        let q = |t: &str| serde_json::to_string(t).unwrap_or_default();
        let (text, prec) = match self.node(id) {
            Node::Eps => ("eps".to_owned(), Prec::Postfix),
            Node::Start => ("^".to_owned(), Prec::Postfix),
            Node::End => ("$".to_owned(), Prec::Postfix),
            Node::Literal { text } => (q(text), Prec::Postfix),
            Node::Any => (".".to_owned(), Prec::Postfix),
            Node::Sequence { children } => {
                let parts: Vec<String> = children.iter().map(|&c| self.expr(c, Prec::Prefix, d)).collect();
                match parts.len() {
                    0 => ("eps".to_owned(), Prec::Postfix),
                    1 => return parts.into_iter().next().unwrap_or_default(),
                    _ => (parts.join(" "), Prec::Seq),
                }
            }
            Node::Choice { children } => {
                let parts: Vec<String> = children.iter().map(|&c| self.expr(c, Prec::Seq, d)).collect();
                match parts.len() {
                    0 => ("fail".to_owned(), Prec::Postfix),
                    1 => return parts.into_iter().next().unwrap_or_default(),
                    _ => (parts.join(" | "), Prec::Choice),
                }
            }
            Node::Repeat { child, min, max } => {
                let inner = self.expr(*child, Prec::Postfix, d);
                (format!("{inner}{}", repeat_suffix(*min, *max)), Prec::Postfix)
            }
            Node::Peek { child } => (format!("&{}", self.expr(*child, Prec::Postfix, d)), Prec::Prefix),
            Node::Negate { child } => (format!("!{}", self.expr(*child, Prec::Postfix, d)), Prec::Prefix),
            Node::Chars { class, min, max } => {
                let suffix = if (*min, *max) == (1, Some(1)) { String::new() } else { repeat_suffix(*min, *max) };
                (format!("{class}{suffix}"), Prec::Postfix)
            }
            Node::Space => ("space".to_owned(), Prec::Postfix),
            Node::Until { delimiters } => {
                let ds: Vec<String> = delimiters.iter().map(|t| q(t)).collect();
                (format!("until({})", ds.join(", ")), Prec::Postfix)
            }
            Node::Rest => ("rest".to_owned(), Prec::Postfix),
            Node::Json { kind } => (kind.dsl_name().to_owned(), Prec::Postfix),
            Node::JsonStringContent => ("json_string_content".to_owned(), Prec::Postfix),
            Node::JsonPrefix => ("json_prefix".to_owned(), Prec::Postfix),
            Node::Python { kind } => (kind.dsl_name().to_owned(), Prec::Postfix),
            Node::Marker => ("marker".to_owned(), Prec::Postfix),
            Node::Ref { name } => (name.clone(), Prec::Postfix),
            // Rules are defined on their own line; inside expressions they are names.
            Node::Rule { name, .. } => (name.clone(), Prec::Postfix),
            Node::Schema { child, name, .. } => (format!("schema({name}, {})", self.expr(*child, Prec::Choice, d)), Prec::Postfix),
            Node::Atomic { child } => (format!("atomic({})", self.expr(*child, Prec::Choice, d)), Prec::Postfix),
            Node::Tag { tag, child } => (format!("tag({tag}, {})", self.expr(*child, Prec::Choice, d)), Prec::Postfix),
            Node::Gbnf { child, gbnf } => (format!("gbnf({}, {})", q(gbnf), self.expr(*child, Prec::Choice, d)), Prec::Postfix),
            Node::Constrained { nodes: [parse, grammar] } => {
                (format!("constrained({}, {})", self.expr(*parse, Prec::Choice, d), self.expr(*grammar, Prec::Choice, d)), Prec::Postfix)
            }
        };
        if prec < min { format!("({text})") } else { text }
    }
}

/// The repetition suffix of `min..=max` (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`).
fn repeat_suffix(min: u32, max: Option<u32>) -> String {
    match (min, max) {
        (0, None) => "*".to_owned(),
        (1, None) => "+".to_owned(),
        (0, Some(1)) => "?".to_owned(),
        (lo, None) => format!("{{{lo},}}"),
        (lo, Some(hi)) if lo == hi => format!("{{{lo}}}"),
        (lo, Some(hi)) => format!("{{{lo},{hi}}}"),
    }
}

#[cfg(test)]
mod tests {
    use crate::arena::Arena;

    #[test]
    fn dumps_every_node_kind() {
        let arena = Arena::build(|p| {
            let item = p.rule("item", p.chars("[0-9]", 1, None) | p.rule_ref("list") | p.json_string());
            let list = p.trigger_rule("list", "[" + p.optional(item + p.zero_or_more("," + p.rule_ref("item"))) + "]");
            p.start()
                + p.peek("[")
                + p.negate("]")
                + p.atomic(p.tag("l", list))
                + p.repeat(p.any(), 2, Some(3))
                + p.repeat_n(p.space(), 2)
                + p.schema(p.json(), "s", serde_json::json!({}), false)
                + p.gbnf(p.python(), "[a-z]+")
                + p.marker()
                + p.until_one_of(["a", "b"])
                + p.chars("[^\\n]", 0, Some(4))
                + p.json_string_content()
                + p.eps()
                + p.rest()
                + p.end()
        })
        .unwrap();
        let dump = arena.dump();
        assert_eq!(
            dump,
            "root := ^ &\"[\" !\"]\" atomic(tag(l, list)) .{2,3} space{2} schema(s, json) gbnf(\"[a-z]+\", python) marker \
             until(\"a\", \"b\") [^\\n]{0,4} json_string_content eps rest $\n\
             item := [0-9]+ | list | json_string\n\
             trigger list := \"[\" (item (\",\" item)*)? \"]\"\n"
        );
    }
}
