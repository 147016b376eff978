//! The generated parser and its arena agree: same outcome, end and AST on shared inputs,
//! complete and as every prefix parsed as partial input (property tests over fragments).

mod common;

use common::{hermes, kitchen_sink, xml_params};
use peg_runtime::Arena;
use proptest::prelude::*;

fn tools() -> Vec<hermes::Tool> {
    peg_runtime::__macro_support::tools_from_openai(&serde_json::json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
            "properties": {"tz": {"type": "string"}}}}}
    ]))
}

/// Checks one input whole and every prefix as partial input.
fn agree(name: &str, parse: &dyn Fn(&[u8], bool) -> peg_runtime::ParseOutput, arena: &Arena, input: &[u8]) {
    for partial in [false, true] {
        let ends: Vec<usize> = if partial { (0..=input.len()).collect() } else { vec![input.len()] };
        for end in ends {
            let x = &input[..end];
            let want = arena.parse(x, partial).unwrap();
            let got = parse(x, partial);
            assert_eq!(
                got,
                want,
                "{name}: generated parser and arena differ on {:?} (partial: {partial})\ngenerated:\n{}arena:\n{}",
                String::from_utf8_lossy(x),
                got.ast.dump(x),
                want.ast.dump(x)
            );
        }
    }
}

const HERMES: &[&str] = &[
    "",
    "Hello world",
    "<think>hmm, let me see</think>The answer is 4.",
    "<think>I should call a tool</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
    "Sure.<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call><tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}</tool_call>",
    "<tool_call>{\"name\": \"unknown\", \"arguments\": {}}</tool_call>",
    "<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>",
    "caf\u{e9} \u{1F600} <think>\u{fffd}</think>",
];

const XML: &[&str] = &[
    "plain text",
    "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=nope>\n</function>\n</tool_call>",
];

const SINK: &[&str] = &[
    "<tag> 12.5 xx yy zzz",
    "{\"a\": 1}[1,2]\"str\"'c#rest of it",
    "{'py': True} [None] 'x' 12 False None",
    "abc>>def>more\t",
    "true null -1.5e3 \"s\" {}",
    "<<no",
    "\u{e9}\u{e9}",
];

#[test]
fn corpus_inputs_agree() {
    let t = tools();
    let hp = hermes::Parser::new(&t);
    let ha = hermes::arena(&t).unwrap();
    for i in HERMES {
        agree("hermes", &|x, p| hp.parse(x, p).unwrap(), &ha, i.as_bytes());
    }
    let xp = xml_params::Parser::new(&t);
    let xa = xml_params::arena(&t).unwrap();
    for i in XML {
        agree("xml_params", &|x, p| xp.parse(x, p).unwrap(), &xa, i.as_bytes());
    }
    let ka = kitchen_sink::arena(&[]).unwrap();
    for i in SINK {
        agree("kitchen_sink", &|x, p| kitchen_sink::parse(x, p).unwrap(), &ka, i.as_bytes());
    }
}

#[test]
fn invalid_utf8_agrees() {
    let t = tools();
    let hp = hermes::Parser::new(&t);
    let ha = hermes::arena(&t).unwrap();
    for input in [&b"<think>a\xffb</think>c\xe2\x82"[..], b"x\xf0\x9f", b"<tool_call>{\"name\": \"get_time\", \"arguments\": {\"a\": \"\xff\"}}</tool_call>"] {
        agree("hermes", &|x, p| hp.parse(x, p).unwrap(), &ha, input);
    }
    let ka = kitchen_sink::arena(&[]).unwrap();
    for input in [&b"\xff\xfe"[..], b"<t\xffg>", b"ab\xe2\x82"] {
        agree("kitchen_sink", &|x, p| kitchen_sink::parse(x, p).unwrap(), &ka, input);
    }
}

#[test]
fn session_equals_one_shot() {
    let t = tools();
    let text = HERMES[3].as_bytes();
    let mut s = hermes::Session::new(hermes::Parser::new(&t));
    for chunk in text.chunks(5) {
        s.push(chunk);
        assert_eq!(s.parse().unwrap(), hermes::Parser::new(&t).parse(s.input(), true).unwrap());
    }
    assert_eq!(s.finish().unwrap().result.outcome, peg_runtime::Outcome::Success);
}

const HERMES_FRAGMENTS: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "{",
    "}",
    "\"name\"",
    ":",
    ",",
    " ",
    "\n",
    "\"get_weather\"",
    "\"get_time\"",
    "\"arguments\"",
    "{\"city\": \"Paris\"}",
    "[1]",
    "text",
    "\u{e9}",
    "\"",
];

const XML_FRAGMENTS: &[&str] = &[
    "<tool_call>\n",
    "</tool_call>",
    "<function=",
    "get_weather",
    "get_time",
    ">\n",
    "</function>\n",
    "<parameter=",
    "city",
    "days",
    "\n</parameter>\n",
    "Paris",
    "3",
    "\n",
    "x",
];

fn fragments(list: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(list), 0..14).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn hermes_agrees_on_fragments(input in fragments(HERMES_FRAGMENTS)) {
        let t = tools();
        let hp = hermes::Parser::new(&t);
        let ha = hermes::arena(&t).unwrap();
        agree("hermes", &|x, p| hp.parse(x, p).unwrap(), &ha, input.as_bytes());
    }

    #[test]
    fn xml_agrees_on_fragments(input in fragments(XML_FRAGMENTS)) {
        let t = tools();
        let xp = xml_params::Parser::new(&t);
        let xa = xml_params::arena(&t).unwrap();
        agree("xml_params", &|x, p| xp.parse(x, p).unwrap(), &xa, input.as_bytes());
    }

    #[test]
    fn kitchen_sink_agrees_on_bytes(input in proptest::collection::vec(proptest::sample::select(&b"<>[]{}\"'#0123456789.xyz,: \t\nabTrueNn\xc3\xa9\xff"[..]), 0..24)) {
        let ka = kitchen_sink::arena(&[]).unwrap();
        agree("kitchen_sink", &|x, p| kitchen_sink::parse(x, p).unwrap(), &ka, &input);
    }
}

#[test]
fn grammars_really_match() {
    let t = tools();
    let hp = hermes::Parser::new(&t);
    let input = HERMES[4].as_bytes();
    let out = hp.parse(input, false).unwrap();
    assert_eq!(out.result.outcome, peg_runtime::Outcome::Success);
    let names: Vec<String> = out.ast.find_by_tag("tool_name").into_iter().map(|id| out.ast.text(id, input).into_owned()).collect();
    assert_eq!(names, ["get_time", "get_weather"]);
    assert_eq!(hp.parse(HERMES[5].as_bytes(), false).unwrap().result.outcome, peg_runtime::Outcome::Fail);
    let xp = xml_params::Parser::new(&t);
    let input = XML[1].as_bytes();
    let out = xp.parse(input, false).unwrap();
    assert_eq!(out.result.outcome, peg_runtime::Outcome::Success, "{}", out.ast.dump(input));
    assert_eq!(out.ast.find_by_tag("tool_arg").len(), 2);
    let partial = xp.parse(&input[..input.len() - 20], true).unwrap();
    assert_eq!(partial.result.outcome, peg_runtime::Outcome::NeedMoreInput);
    let out = kitchen_sink::parse(SINK[0].as_bytes(), false).unwrap();
    assert_eq!(out.result.outcome, peg_runtime::Outcome::Success);
}

peg_macros::chat_peg! {
    /// Recursion through rules: nested brackets with a rule per level.
    grammar nested {
        custom_tags = [leaf];
        root = value end;
        rule value = "[" _ (item _)* "]" / #leaf(["0-9"]+);
        rule item = value ","?;
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let ok = b"[1, [2, [3]], []]";
    let arena = nested::arena(&[]).unwrap();
    assert_eq!(nested::parse(ok, false).unwrap(), arena.parse(ok, false).unwrap());
    assert_eq!(nested::parse(ok, false).unwrap().result.outcome, peg_runtime::Outcome::Success);
    let deep = "[".repeat(100_000);
    for partial in [false, true] {
        let err = nested::parse(deep.as_bytes(), partial).unwrap_err();
        assert_eq!(err.kind(), peg_runtime::ErrorKind::TooDeep);
    }
}

/// The generated parser and the arena map to the same chat message (`ChatParser::parse_with`
/// over the generated parser against `ChatParser::parse`), whole and every prefix as partial
/// output; for complete outputs also with a prefill.
fn same_message(name: &str, parse: &dyn Fn(&[u8], bool) -> peg_runtime::ParseOutput, arena: &Arena, tools: &[hermes::Tool], output: &str) {
    use peg_runtime::chat::ParseMode;
    use peg_runtime::chat::{ChatParseOptions, ChatParser};
    use std::sync::Arc;
    let arena = Arc::new(arena.clone());
    for prefill in ["", "<think>"] {
        let options = ChatParseOptions { tools: tools.to_vec(), prefill: prefill.into(), ..Default::default() };
        let chat = ChatParser::new(arena.clone(), options);
        let ends = (0..=output.len()).filter(|&e| output.is_char_boundary(e));
        for (end, partial) in ends.map(|e| (e, true)).chain([(output.len(), false)]) {
            let out = &output[..end];
            let want = chat.parse(out, if partial { ParseMode::Partial } else { ParseMode::Complete }).unwrap();
            let got = chat.parse_with(out, if partial { ParseMode::Partial } else { ParseMode::Complete }, |x, p| Ok(parse(x, p))).unwrap();
            assert_eq!(got, want, "{name}: messages differ on {out:?} (prefill {prefill:?}, partial: {partial})");
        }
    }
}

#[test]
fn same_chat_message() {
    let t = tools();
    let hp = hermes::Parser::new(&t);
    let ha = hermes::arena(&t).unwrap();
    for i in HERMES {
        same_message("hermes", &|x, p| hp.parse(x, p).unwrap(), &ha, &t, i);
    }
    let xp = xml_params::Parser::new(&t);
    let xa = xml_params::arena(&t).unwrap();
    for i in XML {
        same_message("xml_params", &|x, p| xp.parse(x, p).unwrap(), &xa, &t, i);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn same_chat_message_on_fragments(hermes_input in fragments(HERMES_FRAGMENTS), xml_input in fragments(XML_FRAGMENTS)) {
        let t = tools();
        let hp = hermes::Parser::new(&t);
        same_message("hermes", &|x, p| hp.parse(x, p).unwrap(), &hermes::arena(&t).unwrap(), &t, &hermes_input);
        let xp = xml_params::Parser::new(&t);
        same_message("xml_params", &|x, p| xp.parse(x, p).unwrap(), &xml_params::arena(&t).unwrap(), &t, &xml_input);
    }
}

/// A session fed `input` in chunks of `size` gives, after each chunk, the one-shot partial
/// parse of the input so far (its memo of final rule results changes nothing), and finishes
/// with the one-shot complete parse.
fn session_agrees<S>(
    name: &str,
    mut session: S,
    push: fn(&mut S, &[u8]),
    step: fn(&mut S, bool) -> peg_runtime::ParseOutput,
    one_shot: &dyn Fn(&[u8], bool) -> peg_runtime::ParseOutput,
    input: &[u8],
    size: usize,
) {
    let mut so_far = Vec::new();
    for chunk in input.chunks(size.max(1)) {
        push(&mut session, chunk);
        so_far.extend_from_slice(chunk);
        assert_eq!(step(&mut session, true), one_shot(&so_far, true), "{name}: session differs after {:?}", String::from_utf8_lossy(&so_far));
    }
    assert_eq!(step(&mut session, false), one_shot(input, false), "{name}: finished session differs on {:?}", String::from_utf8_lossy(input));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sessions_equal_one_shot(
        hermes_input in fragments(HERMES_FRAGMENTS),
        xml_input in fragments(XML_FRAGMENTS),
        sink_input in proptest::collection::vec(proptest::sample::select(&b"<>[]{}\"'#0123456789.xyz,: \t\nabTrueNn\xc3\xa9\xff"[..]), 0..24),
        nested_input in proptest::collection::vec(proptest::sample::select(&b"[], 12"[..]), 0..24),
        size in 1usize..7,
    ) {
        let t = tools();
        let hp = hermes::Parser::new(&t);
        session_agrees("hermes", hermes::Session::new(hp.clone()), |s, c| s.push(c), |s, p| if p { s.parse().unwrap() } else { s.finish().unwrap() }, &|x, p| hp.parse(x, p).unwrap(), hermes_input.as_bytes(), size);
        let xp = xml_params::Parser::new(&t);
        session_agrees("xml_params", xml_params::Session::new(xp.clone()), |s, c| s.push(c), |s, p| if p { s.parse().unwrap() } else { s.finish().unwrap() }, &|x, p| xp.parse(x, p).unwrap(), xml_input.as_bytes(), size);
        session_agrees("kitchen_sink", kitchen_sink::Session::default(), |s, c| s.push(c), |s, p| if p { s.parse().unwrap() } else { s.finish().unwrap() }, &|x, p| kitchen_sink::parse(x, p).unwrap(), &sink_input, size);
        session_agrees("nested", nested::Session::default(), |s, c| s.push(c), |s, p| if p { s.parse().unwrap() } else { s.finish().unwrap() }, &|x, p| nested::parse(x, p).unwrap(), &nested_input, size);
    }
}
