//! The generated `arena(tools)` equals the arena the macro built at expansion time, and
//! splices tools in.

mod common;

use common::{hermes, kitchen_sink, xml_params};
use peg_runtime::{Arena, Node};

#[test]
fn runtime_arena_equals_expansion_time_arena() {
    for (built, json) in [
        (hermes::arena(&[]).unwrap(), hermes::__ARENA_JSON),
        (xml_params::arena(&[]).unwrap(), xml_params::__ARENA_JSON),
        (kitchen_sink::arena(&[]).unwrap(), kitchen_sink::__ARENA_JSON),
    ] {
        assert_eq!(built, Arena::from_json(json).unwrap());
    }
}

#[test]
fn tools_are_spliced_in() {
    let tools = peg_runtime::__macro_support::tools_from_openai(&serde_json::json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
    ]));
    let arena = hermes::arena(&tools).unwrap();
    let literals: Vec<&str> = arena
        .nodes()
        .iter()
        .filter_map(|n| match n {
            Node::Literal { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(literals.contains(&"get_weather") && literals.contains(&"search"));
    let schemas: Vec<&str> = arena
        .nodes()
        .iter()
        .filter_map(|n| match n {
            Node::Schema { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(schemas, ["tool-get_weather-args", "tool-search-args"]);
    let triggers: Vec<&str> = arena.rules().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(triggers, ["reasoning", "tool_call", "call"]);
}

#[test]
fn gbnf_constants_match_runtime_generation() {
    use peg_runtime::gbnf::{GbnfOptions, Grammar, generate};
    let lazy = GbnfOptions { lazy: true, ..Default::default() };
    assert_eq!(hermes::GBNF, generate(&hermes::arena(&[]).unwrap(), &GbnfOptions::default()).unwrap());
    assert_eq!(hermes::GBNF_LAZY.unwrap(), generate(&hermes::arena(&[]).unwrap(), &lazy).unwrap());
    assert_eq!(hermes::gbnf(&[], false).unwrap(), hermes::GBNF);
    assert!(kitchen_sink::GBNF_LAZY.is_none());
    let tools = peg_runtime::__macro_support::tools_from_openai(&serde_json::json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    ]));
    let text = hermes::gbnf(&tools, false).unwrap();
    let g = Grammar::parse(&text).unwrap();
    assert!(g.accepts("<think>x</think>Hi<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"));
    assert!(!g.accepts("Hi<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>"));
    // The lazy grammar runs from the first trigger word to the end: every call after it.
    assert_eq!(hermes::TRIGGERS, ["<tool_call>"]);
    assert!(kitchen_sink::TRIGGERS.is_empty());
    let lazy = Grammar::parse(&hermes::gbnf(&tools, true).unwrap()).unwrap();
    let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    assert!(lazy.accepts(call) && lazy.accepts(&format!("{call}\n{call} {call}\n")));
    assert!(!lazy.accepts(&format!("{call} more text")));
}
