//! Compaction of a generated grammar: what an arena writes inline at every place it is used
//! (the same value grammar at every argument of every tool, a whitespace run next to another)
//! becomes one rule, referred to by name, so a grammar's size follows the size of the tool
//! schemas rather than their number times their shape.
//!
//! Three rewrites, all on the parsed grammar:
//! - **Adjacent whitespace runs merge.** `ws ws` (two bounded runs at one structural point,
//!   from two builders that each allow whitespace there) becomes `ws`: one bounded run is what
//!   a model should write there, and the second only doubles the bound.
//! - **Identical rules merge.** Rules with the same body (the same argument grammar under
//!   two tools' names) become one, again until none is left, so rules that differed only by
//!   the names they refer to merge too.
//! - **Repeated groups become rules.** A parenthesized group written more than once, long
//!   enough that naming it saves bytes, is defined once as `group-N` and referred to; the
//!   largest saving first, again until nothing repeats.

use std::collections::{HashMap, HashSet};

use super::{Element, Item, Rule, Sequence};

/// Fewest characters of a group worth a rule of its own.
const MIN_GROUP_LEN: usize = 24;
/// Rounds of factoring: each round names the groups that still repeat after the last.
const MAX_ROUNDS: usize = 8;

/// Compacts `rules` in place; the language of every rule reachable from `root` is unchanged
/// except for merged whitespace runs.
pub(crate) fn compact(rules: &mut Vec<Rule>) {
    let runs = whitespace_runs(rules);
    for rule in rules.iter_mut() {
        for seq in &mut rule.alternatives {
            merge_runs(seq, &runs);
        }
    }
    merge_identical_rules(rules);
    let mut taken: HashSet<String> = rules.iter().map(|r| r.name.clone()).collect();
    let mut next = 1;
    for _ in 0..MAX_ROUNDS {
        let mut counts: HashMap<String, (usize, Element)> = HashMap::new();
        for rule in rules.iter() {
            for seq in &rule.alternatives {
                count_groups(seq, &mut counts);
            }
        }
        let mut repeated: Vec<(isize, String, Element)> = counts
            .into_iter()
            .filter(|(text, (n, _))| *n >= 2 && text.len() >= MIN_GROUP_LEN)
            .map(|(text, (n, e))| (saving(text.len(), n), text, e))
            .filter(|(s, _, _)| *s > 0)
            .collect();
        if repeated.is_empty() {
            break;
        }
        // Largest saving first; a group inside one named earlier in this round is counted
        // again in the next round, where the new rule holds it once.
        repeated.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut names: HashMap<String, String> = HashMap::new();
        for (_, text, element) in repeated {
            if names.keys().any(|named| named.contains(text.as_str())) {
                // Inside a group named this round: it may repeat only there.
                continue;
            }
            let name = loop {
                let candidate = format!("group-{next}");
                next += 1;
                if taken.insert(candidate.clone()) {
                    break candidate;
                }
            };
            let Element::Group(alternatives) = element else { continue };
            names.insert(text, name.clone());
            rules.push(Rule { name, alternatives });
        }
        for rule in rules.iter_mut() {
            for seq in &mut rule.alternatives {
                replace_groups(seq, &names);
            }
        }
    }
}

/// Merges rules with the same body into the first of them (`root` keeps its own).
fn merge_identical_rules(rules: &mut Vec<Rule>) {
    loop {
        let mut first: HashMap<String, String> = HashMap::new();
        let mut renamed: HashMap<String, String> = HashMap::new();
        for rule in rules.iter() {
            if rule.name == "root" {
                continue;
            }
            let body = Element::Group(rule.alternatives.clone()).to_string();
            match first.get(&body) {
                Some(kept) => {
                    renamed.insert(rule.name.clone(), kept.clone());
                }
                None => {
                    first.insert(body, rule.name.clone());
                }
            }
        }
        if renamed.is_empty() {
            return;
        }
        rules.retain(|r| !renamed.contains_key(&r.name));
        for rule in rules.iter_mut() {
            for seq in &mut rule.alternatives {
                rename_refs(seq, &renamed);
            }
        }
    }
}

fn rename_refs(seq: &mut Sequence, renamed: &HashMap<String, String>) {
    for item in seq.iter_mut() {
        match &mut item.element {
            Element::Ref(name) => {
                if let Some(kept) = renamed.get(name) {
                    *name = kept.clone();
                }
            }
            Element::Group(alts) => {
                for alt in alts {
                    rename_refs(alt, renamed);
                }
            }
            _ => {}
        }
    }
}

/// Bytes saved by naming a group of `len` characters written `n` times (a reference is about
/// ten characters, the definition adds its name and ` ::= `).
fn saving(len: usize, n: usize) -> isize {
    let reference = 10;
    (n * len) as isize - (n * reference + len + reference + 6) as isize
}

fn count_groups(seq: &Sequence, counts: &mut HashMap<String, (usize, Element)>) {
    for item in seq {
        if let Element::Group(alts) = &item.element {
            let text = item.element.to_string();
            counts.entry(text).or_insert_with(|| (0, item.element.clone())).0 += 1;
            for alt in alts {
                count_groups(alt, counts);
            }
        }
    }
}

fn replace_groups(seq: &mut Sequence, names: &HashMap<String, String>) {
    for item in seq.iter_mut() {
        if !matches!(item.element, Element::Group(_)) {
            continue;
        }
        if let Some(name) = names.get(&item.element.to_string()) {
            item.element = Element::Ref(name.clone());
        } else if let Element::Group(alts) = &mut item.element {
            for alt in alts {
                replace_groups(alt, names);
            }
        }
    }
}

/// Rules that are one bounded run of whitespace characters (`ws ::= [ \t\n\r]{0,24}`).
fn whitespace_runs(rules: &[Rule]) -> HashSet<String> {
    rules
        .iter()
        .filter(|r| match r.alternatives.as_slice() {
            [seq] => match seq.as_slice() {
                [Item { element: Element::Class(c), min: 0, max: Some(_) }] => !c.negated && c.ranges.iter().all(|&(a, b)| (a..=b).all(char::is_whitespace)),
                _ => false,
            },
            _ => false,
        })
        .map(|r| r.name.clone())
        .collect()
}

/// Drops a whitespace run that directly follows the same run (also inside groups).
fn merge_runs(seq: &mut Sequence, runs: &HashSet<String>) {
    let is_run = |item: &Item| matches!(&item.element, Element::Ref(n) if runs.contains(n)) && item.min <= 1 && item.max == Some(1);
    let mut out: Sequence = Vec::with_capacity(seq.len());
    for mut item in seq.drain(..) {
        if let Element::Group(alts) = &mut item.element {
            for alt in alts {
                merge_runs(alt, runs);
            }
        }
        if let Some(last) = out.last_mut()
            && is_run(last)
            && is_run(&item)
            && last.element == item.element
        {
            // `ws? ws` and `ws ws?` are `ws`.
            last.min = last.min.max(item.min);
            continue;
        }
        out.push(item);
    }
    *seq = out;
}

#[cfg(test)]
mod tests {
    use crate::gbnf::Grammar;

    fn compacted(text: &str) -> Grammar {
        let mut g = Grammar::parse(text).unwrap();
        g.compact();
        // What it prints reads back as the same grammar.
        assert_eq!(Grammar::parse(&g.to_string()).unwrap(), g);
        g
    }

    #[test]
    fn repeated_groups_become_one_rule() {
        let text = r#"root ::= a | b | c
a ::= "a(" ("'" [^']* "'" | "\"" [^"]* "\"") ")"
b ::= "b(" ("'" [^']* "'" | "\"" [^"]* "\"") ")"
c ::= "c(" ("'" [^']* "'" | "\"" [^"]* "\"") ")"
"#;
        let g = compacted(text);
        let printed = g.to_string();
        assert_eq!(printed.matches("[^']").count(), 1, "{printed}");
        assert!(g.rule("group-1").is_some(), "{printed}");
        for s in ["a('x')", "b(\"y\")"] {
            assert!(g.accepts(s), "{s}");
        }
        assert!(!g.accepts("a('x\")"));
    }

    #[test]
    fn short_or_single_groups_stay_inline() {
        let text = "root ::= (\"a\" | \"b\") (\"a\" | \"b\") (\"a long group written only once\" | \"c\")\n";
        let g = compacted(text);
        assert_eq!(g.rules().len(), 1, "{g}");
    }

    #[test]
    fn identical_rules_merge_until_none_is_left() {
        let text = r#"root ::= a-call | b-call | c-call | d-call
a-call ::= "a(" a-arg ")"
b-call ::= "b(" b-arg ")"
a-arg ::= [0-9]+ a-more
b-arg ::= [0-9]+ b-more
a-more ::= ("," [0-9]+)*
b-more ::= ("," [0-9]+)*
c-call ::= "c(" c-list ")"
d-call ::= "d(" d-list ")"
c-list ::= [0-9]+ ("," c-list)?
d-list ::= [0-9]+ ("," d-list)?
"#;
        let g = compacted(text);
        // b-more is a-more, so then b-arg is a-arg.
        assert!(g.rule("b-more").is_none() && g.rule("b-arg").is_none(), "{g}");
        assert!(g.accepts("b(1,2)") && g.accepts("a(3)"));
        // Recursive rules alike only up to their own names stay apart (no rename proves them
        // equal), and still accept what they did.
        assert!(g.rule("c-list").is_some() && g.rule("d-list").is_some(), "{g}");
        assert!(g.accepts("d(1,2,3)"));
    }

    #[test]
    fn adjacent_whitespace_runs_merge() {
        let g = compacted("root ::= ws ws \"x\" ws? ws (ws ws \"y\")\nws ::= [ \\t\\n]{0,4}\n");
        assert_eq!(g.rule("root").unwrap().alternatives[0].len(), 4, "{g}");
        assert!(g.accepts("    x    y"));
        assert!(!g.accepts("     x"), "one run of at most 4");
    }

    #[test]
    fn nested_repeats_are_named_once_each() {
        let inner = r#"("x" [0-9]+ "y" | "z" [a-z]+ "w")"#;
        let outer = format!(r#"("<" {inner} ">" | "[" {inner} "]")"#);
        let text = format!("root ::= {outer} {outer} {inner}\n");
        let g = compacted(&text);
        let printed = g.to_string();
        assert_eq!(printed.matches("[0-9]+").count(), 1, "{printed}");
        assert!(g.accepts("<x1y>[zaw]x2y"));
    }
}
