//! Property tests: the prefix property of partial parsing, and streaming sessions agreeing with
//! one-shot parses whatever the chunking.

use std::sync::Arc;

use peg_runtime::{Arena, Builder, Outcome, Parser, Session};
use proptest::prelude::*;

fn native<'a>(p: &'a Builder) -> Parser<'a> {
    let name = "\"" + p.tag("tool_name", p.chars("[a-z_]", 1, None)) + "\"";
    let call = p.tag(
        "tool",
        "<tool_call>" << p.literal("{") << p.json_member("name", name) << "," << p.json_member("arguments", p.tag("args", p.json())) << "}" << "</tool_call>",
    );
    p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>" + p.space())
        + p.tag("content", p.until("<tool_call>"))
        + p.zero_or_more(call + p.space())
        + p.end()
}

fn constructed<'a>(p: &'a Builder) -> Parser<'a> {
    let arg = p.tag("arg", "<parameter=" + p.tag("arg_name", p.chars("[a-z]", 1, None)) + ">" + p.tag("value", p.until("</parameter>")) + "</parameter>");
    let func = p.tag("tool", "<function=" + p.tag("name", p.chars("[a-z]", 1, None)) + ">" + p.zero_or_more(arg) + "</function>");
    p.tag("content", p.until_one_of(["<function=", "<|end|>"])) + p.zero_or_more(func) + p.optional("<|end|>") + p.end()
}

fn mixed<'a>(p: &'a Builder) -> Parser<'a> {
    let item = p.choice([
        p.tag("marker", p.marker()),
        p.tag("py", p.python()),
        p.tag("text", p.chars("[^<\\['\"{]", 1, Some(7))),
        p.atomic(p.tag("quoted", "\"" + p.json_string_content() + "\"")),
        p.tag("other", p.any()),
    ]);
    p.zero_or_more(item) + p.end()
}

fn recursive<'a>(p: &'a Builder) -> Parser<'a> {
    let item = p.rule("item", p.chars("[0-9]", 1, None) | p.rule_ref("list") | p.tag("s", p.json_string()));
    let list = p.rule("list", "[" << p.optional(item << p.zero_or_more("," << p.rule_ref("item"))) << "]");
    p.zero_or_more(p.negate("[") + p.tag("pre", p.any())) + list + p.rest()
}

/// A tag around a sequence whose earlier parts may hold invalid UTF-8 while a later part grows.
fn wrapped<'a>(p: &'a Builder) -> Parser<'a> {
    let block = p.tag("block", p.chars("[^<]", 0, None) + "<" + p.tag("inner", p.until(">")) + ">");
    p.zero_or_more(block) + p.tag("tail", p.rest())
}

fn grammars() -> Vec<Arc<Arena>> {
    vec![
        Arc::new(Arena::build(native).unwrap()),
        Arc::new(Arena::build(constructed).unwrap()),
        Arc::new(Arena::build(mixed).unwrap()),
        Arc::new(Arena::build(recursive).unwrap()),
        Arc::new(Arena::build(wrapped).unwrap()),
    ]
}

const PIECES: &[&[u8]] = &[
    b"<think>",
    b"</think>",
    b"<tool_call>",
    b"</tool_call>",
    b"<function=",
    b"</function>",
    b"<parameter=",
    b"</parameter>",
    b"<|end|>",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"'",
    b":",
    b",",
    b" ",
    b"\n",
    b"a",
    b"name",
    b"arguments",
    b"1",
    b"-2.5",
    b"true",
    b"None",
    b"null",
    b"\\",
    b"\\n",
    "é".as_bytes(),
    "✓".as_bytes(),
    b"\xFF",
    b"\xE2",
    b"<",
    b">",
    b"\"name\": \"f\"",
];

fn token_input() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z \"\\\\é✓\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,5}", inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Inputs the `native` grammar accepts.
fn native_input() -> impl Strategy<Value = Vec<u8>> {
    (prop::option::of("[a-z <>/\n]{0,20}"), "[a-zé <>\n]{0,30}", prop::collection::vec(("[a-z_]{1,8}", json_value(), any::<bool>()), 0..3)).prop_map(
        |(reasoning, content, calls)| {
            let mut s = String::new();
            if let Some(r) = reasoning {
                s.push_str(&format!("<think>{}</think>\n", r.replace("</think>", "")));
            }
            s.push_str(&content.replace("<tool_call>", ""));
            for (name, args, pretty) in calls {
                let args = if pretty { serde_json::to_string_pretty(&args) } else { serde_json::to_string(&args) }.unwrap();
                s.push_str(&format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>\n"));
            }
            s.into_bytes()
        },
    )
}

/// Inputs the `constructed` grammar accepts.
fn constructed_input() -> impl Strategy<Value = Vec<u8>> {
    ("[a-z <>\n]{0,20}", prop::collection::vec(("[a-z]{1,6}", prop::collection::vec(("[a-z]{1,6}", "[a-z <>/\n{}\"]{0,16}"), 0..3)), 0..3)).prop_map(
        |(content, funcs)| {
            let mut s = content.replace('<', " ");
            for (name, args) in funcs {
                s.push_str(&format!("<function={name}>"));
                for (k, v) in args {
                    s.push_str(&format!("<parameter={k}>{}</parameter>", v.replace('<', "(")));
                }
                s.push_str("</function>");
            }
            s.push_str("<|end|>");
            s.into_bytes()
        },
    )
}

fn check_prefixes(arena: &Arena, input: &[u8]) -> Result<(), TestCaseError> {
    for i in 0..=input.len() {
        let out = arena.parse(&input[..i], true).unwrap();
        prop_assert_ne!(out.result.outcome, Outcome::Fail, "prefix {} of {:?}", i, String::from_utf8_lossy(input));
    }
    Ok(())
}

fn check_session(arena: &Arc<Arena>, input: &[u8], chunks: &[usize]) -> Result<(), TestCaseError> {
    let mut s = Session::new(arena.clone());
    let mut at = 0;
    let mut sizes = chunks.iter().cycle();
    while at < input.len() {
        let k = (*sizes.next().unwrap()).min(input.len() - at);
        s.push(&input[at..at + k]);
        at += k;
        let got = if at % 2 == 0 { s.parse().unwrap() } else { s.update().unwrap().clone() };
        let want = arena.parse(&input[..at], true).unwrap();
        prop_assert_eq!(got, want, "after {} bytes of {:?}", at, String::from_utf8_lossy(input));
        if k.is_multiple_of(3) {
            // Finishing mid-stream and then pushing more must not disturb the session.
            prop_assert_eq!(s.finish().unwrap(), arena.parse(&input[..at], false).unwrap(), "finish after {} bytes", at);
        }
    }
    prop_assert_eq!(s.finish().unwrap(), arena.parse(input, false).unwrap());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn accepted_native_inputs_have_no_failing_prefix(input in native_input()) {
        let arena = Arena::build(native).unwrap();
        prop_assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
        check_prefixes(&arena, &input)?;
    }

    #[test]
    fn accepted_constructed_inputs_have_no_failing_prefix(input in constructed_input()) {
        let arena = Arena::build(constructed).unwrap();
        prop_assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
        check_prefixes(&arena, &input)?;
    }

    #[test]
    fn any_accepted_input_has_no_failing_prefix(input in token_input(), g in 0usize..5) {
        let arena = &grammars()[g];
        if arena.parse(&input, false).unwrap().result.outcome == Outcome::Success {
            check_prefixes(arena, &input)?;
        }
    }

    #[test]
    fn session_equals_one_shot(input in token_input(), g in 0usize..5, chunks in prop::collection::vec(1usize..9, 1..6)) {
        check_session(&grammars()[g], &input, &chunks)?;
    }

    #[test]
    fn session_equals_one_shot_on_accepted_input(input in native_input(), c in prop::collection::vec(1usize..9, 1..6),
                                                 input2 in constructed_input()) {
        let arenas = grammars();
        check_session(&arenas[0], &input, &c)?;
        check_session(&arenas[1], &input2, &c)?;
    }
}

/// Pieces of JSON string bodies whose bytes a chunk boundary can split anywhere: escapes, `\u`
/// sequences and surrogate pairs, multi-byte and invalid UTF-8, plain runs.
const STRING_PIECES: &[&[u8]] = &[
    b"plain text ",
    b"a",
    b"\\\"",
    b"\\\\",
    b"\\n",
    b"\\/",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b"\\u2713",
    "é".as_bytes(),
    "✓".as_bytes(),
    "😀".as_bytes(),
    b"\xFF",
    b"\xE2\x82",
    b"'",
    b"{[,:]}",
];
const NUMBER_PIECES: &[&str] = &["0", "-0", "7", "1234567890", "-12.5", "0.25e-3", "6E+20", "-1.0e10"];
const WORD_PIECES: &[&str] = &["true", "false", "null"];

/// A tool call whose argument streams through every scanner state: strings built from
/// [`STRING_PIECES`], numbers, words, nesting.
fn streamed_argument() -> impl Strategy<Value = Vec<u8>> {
    let string = prop::collection::vec(prop::sample::select(STRING_PIECES), 0..6).prop_map(|v| [&b"\""[..], &v.concat(), b"\""].concat());
    let scalar = prop_oneof![
        string,
        prop::sample::select(NUMBER_PIECES).prop_map(|n| n.as_bytes().to_vec()),
        prop::sample::select(WORD_PIECES).prop_map(|w| w.as_bytes().to_vec()),
    ];
    let members = prop::collection::vec(("[a-z]{1,4}", scalar.clone(), prop::collection::vec(scalar, 0..3)), 0..5);
    members.prop_map(|members| {
        let mut arg = b"{".to_vec();
        for (i, (key, value, list)) in members.into_iter().enumerate() {
            if i > 0 {
                arg.extend_from_slice(b", ");
            }
            arg.extend_from_slice(format!("\"{key}\": ").as_bytes());
            if list.is_empty() {
                arg.extend(value);
            } else {
                arg.push(b'[');
                arg.extend(value);
                for v in list {
                    arg.extend_from_slice(b",");
                    arg.extend(v);
                }
                arg.push(b']');
            }
        }
        arg.push(b'}');
        [&b"Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": "[..], &arg, b"}\n</tool_call>"].concat()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn streamed_json_argument_equals_one_shot(input in streamed_argument(), chunks in prop::collection::vec(1usize..9, 1..6)) {
        let arena = Arc::new(Arena::build(native).unwrap());
        prop_assert_eq!(arena.parse(&input, false).unwrap().result.outcome, Outcome::Success);
        check_session(&arena, &input, &chunks)?;
    }
}

fn mutated_json() -> impl Strategy<Value = Vec<u8>> {
    let edit = (any::<prop::sample::Index>(), prop::sample::select(b"{}[]\",:0-1eE.+ tfnarsul\\x".to_vec()), 0u8..3);
    (json_value(), any::<bool>(), prop::collection::vec(edit, 0..3)).prop_map(|(v, pretty, edits)| {
        let mut s = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) }.unwrap();
        for (at, byte, op) in edits {
            let i = at.index(s.len() + 1);
            match op {
                0 => s.insert(i, byte),
                1 if i < s.len() => {
                    s.remove(i);
                }
                _ if i < s.len() => s[i] = byte,
                _ => {}
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn json_scanner_agrees_with_serde_json(input in mutated_json()) {
        // Invalid UTF-8 inside strings is kept and flagged by design; serde_json rejects it.
        prop_assume!(std::str::from_utf8(&input).is_ok());
        let ours = peg_runtime::json::is_valid(&input);
        let parsed = serde_json::from_slice::<serde_json::Value>(&input);
        // serde_json rejects numbers beyond f64 range, which the JSON grammar allows.
        prop_assume!(!matches!(&parsed, Err(e) if e.to_string().contains("out of range")));
        let theirs = parsed.is_ok();
        prop_assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(&input));
    }

    #[test]
    fn json_scanner_resumes_over_any_chunking(input in mutated_json(), chunks in prop::collection::vec(1usize..7, 1..4)) {
        use peg_runtime::json::{Dialect, Scanner, Target};
        let want = Scanner::new(Dialect::Json, Target::Value, 0).run(&input, false);
        let mut sc = Scanner::new(Dialect::Json, Target::Value, 0);
        let mut at = 0;
        let mut sizes = chunks.iter().cycle();
        loop {
            let r = sc.run(&input[..at], true);
            let fresh = Scanner::new(Dialect::Json, Target::Value, 0).run(&input[..at], true);
            prop_assert_eq!(r, fresh);
            if !r.touched_end || at == input.len() {
                break;
            }
            at = (at + sizes.next().unwrap()).min(input.len());
        }
        if want.touched_end || at == input.len() {
            prop_assert_eq!(sc.run(&input, false), want);
        }
    }
}

fn py_repr(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => {
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\'' => out.push_str("\\'"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Value::Array(a) => {
            out.push('[');
            for x in a {
                py_repr(x, out);
                out.push_str(", ");
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (k, x) in o {
                py_repr(&Value::String(k.clone()), out);
                out.push_str(": ");
                py_repr(x, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn python_literals_convert_to_the_same_json(v in json_value()) {
        let mut py = String::new();
        py_repr(&v, &mut py);
        let r = peg_runtime::python::scan(py.as_bytes(), peg_runtime::PythonKind::Value, false);
        prop_assert_eq!((r.outcome, r.end), (Outcome::Success, py.len()), "{}", py);
        // Number text passes through unchanged, so compact serde_json output is the reference
        // (comparing parsed values would hit serde_json's inexact float parsing).
        let json = peg_runtime::python::to_json(&py).unwrap();
        prop_assert_eq!(json, serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn python_to_json_never_panics(s in "[\\[\\]{}'\":, 0-9.eE+_TrueFalsNonx\\\\é-]{0,30}") {
        if let Ok(json) = peg_runtime::python::to_json(&s) {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok(), "{} -> {}", s, json);
        }
    }
}
