//! Grammars that steer a sampling model well, over every shared template:
//!
//! - no unbounded whitespace: a repetition without an upper bound never repeats something that
//!   matches only whitespace (models at normal temperatures fall into emitting it until their
//!   token limit);
//! - the grammar loads in the project's GBNF parser and accepts the round-trip outputs, also
//!   with one or two trailing line breaks;
//! - size: 300 small tools stay under [`BYTES_PER_TOOL`] each (shared rules written once, not
//!   inlined at every argument of every tool), and a grammar grows linearly with the tools.

use std::collections::HashSet;

use serde_json::{Value, json};

use autoparser::format::TemplateAnalysis;
use autoparser::verify::check_grammar;
use autoparser::{Model, PreparedRequest, Request};
use peg_runtime::gbnf::{Element, Grammar};

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

const CORPUS_TESTS: &[&str] = &["grammars_bound_whitespace_and_accept_round_trips", "grammars_stay_small_with_300_tools"];

/// The size goal per tool of [`probe_tool`].
const BYTES_PER_TOOL: usize = 400;

/// A small tool: a string, an integer, and an object holding a two-value enum. `suffix` makes
/// its parameter names its own (`query_7`), so that no two tools share a grammar by being
/// the same; without, tools differ only by name.
fn probe_tool(i: usize, suffix: bool) -> Value {
    let n = |name: &str| if suffix { format!("{name}_{i}") } else { name.to_owned() };
    let mut properties = serde_json::Map::new();
    properties.insert(n("query"), json!({"type": "string"}));
    properties.insert(n("limit"), json!({"type": "integer"}));
    properties.insert(n("options"), json!({"type": "object", "properties": {n("unit"): {"type": "string", "enum": ["celsius", "fahrenheit"]}}}));
    json!({"type": "function", "function": {
        "name": format!("tool_{i:03}"),
        "description": "A probe tool.",
        "parameters": {"type": "object", "properties": properties, "required": [n("query"), n("limit")]}
    }})
}

fn probe_request(tools: usize, suffix: bool) -> Request {
    Request {
        messages: vec![json!({"role": "user", "content": "Hello"})],
        tools: (0..tools).map(|i| probe_tool(i, suffix)).collect(),
        parallel_tool_calls: true,
        ..Request::default()
    }
}

/// Whether every string `element` matches is whitespace (the empty one included).
fn whitespace_only(g: &Grammar, element: &Element, seen: &mut HashSet<String>) -> bool {
    match element {
        Element::Literal(s) => s.chars().all(char::is_whitespace),
        Element::Class(c) => !c.negated && c.ranges.iter().all(|&(a, b)| (a..=b).all(char::is_whitespace)),
        Element::Any => false,
        Element::Ref(name) => {
            if !seen.insert(name.clone()) {
                return true;
            }
            let Some(rule) = g.rule(name) else { return false };
            rule.alternatives.iter().all(|seq| seq.iter().all(|item| whitespace_only(g, &item.element, seen)))
        }
        Element::Group(alts) => alts.iter().all(|seq| seq.iter().all(|item| whitespace_only(g, &item.element, seen))),
    }
}

/// The rules with an unbounded repetition of whitespace, as `rule: item`.
fn unbounded_whitespace(g: &Grammar) -> Vec<String> {
    fn walk(g: &Grammar, rule: &str, seq: &[peg_runtime::gbnf::Item], out: &mut Vec<String>) {
        for item in seq {
            if item.max.is_none() && whitespace_only(g, &item.element, &mut HashSet::new()) {
                out.push(format!("{rule}: {item}"));
            }
            if let Element::Group(alts) = &item.element {
                for alt in alts {
                    walk(g, rule, alt, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    for rule in g.rules() {
        for alt in &rule.alternatives {
            walk(g, &rule.name, alt, &mut out);
        }
    }
    out
}

/// Every shared template that loads, with its model.
fn models(shared: &shared_data::Shared) -> Vec<(String, Model)> {
    let mut names: Vec<_> =
        std::fs::read_dir(shared.templates()).unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".jinja").map(str::to_string)).collect();
    names.sort();
    names.into_iter().filter_map(|n| Model::load(shared.template(&n)).ok().map(|m| (n, m))).collect()
}

fn check_output(p: &PreparedRequest, a: &TemplateAnalysis, output: &str) -> Result<(), String> {
    check_grammar(p, a, output).map_err(|e| e.to_string())
}

#[test]
fn grammars_bound_whitespace_and_accept_round_trips() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let models = models(&shared);
    assert!(models.len() >= 50, "only {} shared templates load", models.len());
    let mut failures = Vec::new();
    let mut with_grammar = 0;
    for (name, model) in &models {
        let Ok(p) = model.prepare(&probe_request(2, true)) else { continue };
        let Some(text) = &p.grammar else { continue };
        with_grammar += 1;
        match Grammar::parse(text) {
            Ok(g) => {
                let unbounded = unbounded_whitespace(&g);
                if !unbounded.is_empty() {
                    failures.push(format!("{name}: unbounded whitespace in {}", unbounded.join(", ")));
                }
            }
            Err(e) => failures.push(format!("{name}: the grammar does not load: {e}")),
        }
    }
    assert!(with_grammar >= 50, "only {with_grammar} templates generate a tool grammar");

    // The round trips: each output, and the same with one or two trailing line breaks.
    let cases = std::fs::read_to_string(shared.roundtrip().join("chat-cases.jsonl")).unwrap();
    let mut checked = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        if case["is_partial"].as_bool() == Some(true) {
            continue;
        }
        let id = case["id"].as_str().unwrap();
        let template = case["template"].as_str().unwrap();
        let Some((_, model)) = models.iter().find(|(n, _)| n == template) else {
            failures.push(format!("{id}: template {template} does not load"));
            continue;
        };
        let request = Request::from_json(&case["inputs"]).unwrap();
        let p = model.prepare(&request).unwrap();
        let output = case["model_output"].as_str().unwrap();
        for tail in ["", "\n", "\n\n"] {
            checked += 1;
            if let Err(e) = check_output(&p, model.analysis(), &format!("{output}{tail}")) {
                failures.push(format!("{id} (+{tail:?}): {e}"));
            }
        }
    }
    assert!(checked > 600, "only {checked} round-trip outputs checked");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn grammars_stay_small_with_300_tools() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let bytes = |model: &Model, tools: usize, suffix: bool| model.prepare(&probe_request(tools, suffix)).ok()?.grammar.map(|g| g.len());
    let mut table = Vec::new();
    for (name, model) in models(&shared) {
        let Some(alike) = bytes(&model, 300, false) else { continue };
        let own_30 = bytes(&model, 30, true).unwrap();
        let own_300 = bytes(&model, 300, true).unwrap();
        table.push((name, alike, own_30, own_300));
    }
    assert!(table.len() >= 50, "only {} templates generate a tool grammar", table.len());
    let mut report = String::from("template | bytes (300 tools) | bytes per tool | per tool, own parameter names (30 tools, 300 tools)\n");
    for (name, alike, own_30, own_300) in &table {
        report += &format!("{name} | {alike} | {} | {}, {}\n", alike / 300, own_30 / 30, own_300 / 300);
    }
    let mut sizes: Vec<usize> = table.iter().map(|t| t.1).collect();
    sizes.sort_unstable();
    report += &format!("median {} bytes, max {} bytes, {} templates\n", sizes[sizes.len() / 2], sizes[sizes.len() - 1], sizes.len());
    eprintln!("{report}");
    let mut over = Vec::new();
    for (name, alike, own_30, own_300) in &table {
        if alike / 300 > BYTES_PER_TOOL {
            over.push(format!("{name}: {} bytes per tool", alike / 300));
        }
        // Linear in the tools: ten times the tools, about ten times the grammar (names grow
        // a digit longer, the shared rules come once).
        if own_300 / 300 > own_30 / 30 * 5 / 4 {
            over.push(format!("{name}: {own_30} bytes for 30 tools, {own_300} for 300"));
        }
    }
    assert!(over.is_empty(), "over {BYTES_PER_TOOL} bytes per tool, or growing faster than the tools:\n{}", over.join("\n"));
}
