//! Unit tests per combinator, in full and partial mode.

use super::*;
use crate::{Builder, Parser};
use Outcome::{Fail, NeedMoreInput as More, Success};

fn arena(f: impl for<'a> FnOnce(&'a Builder) -> Parser<'a>) -> Arena {
    Arena::build(f).unwrap()
}

/// (outcome, end) in full and in partial mode.
fn both(a: &Arena, input: &str) -> ((Outcome, usize), (Outcome, usize)) {
    let f = a.parse(input.as_bytes(), false).unwrap().result;
    let p = a.parse(input.as_bytes(), true).unwrap().result;
    ((f.outcome, f.end), (p.outcome, p.end))
}

fn full(a: &Arena, input: &str) -> (Outcome, usize) {
    both(a, input).0
}

fn part(a: &Arena, input: &str) -> (Outcome, usize) {
    both(a, input).1
}

#[test]
fn eps_start_end() {
    let a = arena(|p| p.eps());
    assert_eq!(both(&a, "x"), ((Success, 0), (Success, 0)));
    let a = arena(|p| p.start() + "a");
    assert_eq!(full(&a, "ab"), (Success, 1));
    let a = arena(|p| "a" + p.start());
    assert_eq!(full(&a, "a").0, Fail);
    let a = arena(|p| p.literal("a") + p.end());
    assert_eq!(both(&a, "a"), ((Success, 1), (Success, 1)));
    assert_eq!(full(&a, "ab").0, Fail);
    assert_eq!(part(&a, "ab").0, Fail);
}

#[test]
fn literal_full_and_partial() {
    let a = arena(|p| p.literal("<tool_call>"));
    assert_eq!(both(&a, "<tool_call>x"), ((Success, 11), (Success, 11)));
    assert_eq!(both(&a, "<tool"), ((Fail, 0), (More, 5)));
    assert_eq!(both(&a, ""), ((Fail, 0), (More, 0)));
    assert_eq!(both(&a, "<tx"), ((Fail, 0), (Fail, 0)));
}

#[test]
fn any_works_on_code_points() {
    let a = arena(|p| p.any() + p.any());
    assert_eq!(full(&a, "é✓"), (Success, 5));
    assert_eq!(both(&a, "a"), ((Fail, 1), (More, 1)));
    // A truncated sequence at the end of partial input needs more.
    assert_eq!(part(&a, "a\u{2713}").0, Success);
    let s = b"a\xE2\x9C";
    assert_eq!(a.parse(s, true).unwrap().result.outcome, More);
    // Invalid bytes are consumed one at a time and flagged.
    let a = arena(|p| p.tag("t", p.any() + p.any()));
    let out = a.parse(b"\xFFz", false).unwrap();
    assert_eq!(out.result.end, 2);
    assert!(out.ast.nodes[0].invalid_utf8);
    let out = a.parse(b"a\xE2\x9C", false).unwrap();
    assert_eq!((out.result.outcome, out.result.end), (Success, 2));
    assert!(out.ast.nodes[0].invalid_utf8);
}

#[test]
fn sequence_and_choice() {
    let a = arena(|p| p.literal("ab") + "cd");
    assert_eq!(both(&a, "abcd"), ((Success, 4), (Success, 4)));
    assert_eq!(both(&a, "abc"), ((Fail, 2), (More, 3)));
    assert_eq!(both(&a, "abx"), ((Fail, 2), (Fail, 2)));
    let a = arena(|p| p.literal("abc") | "abd" | "x");
    assert_eq!(full(&a, "abd"), (Success, 3));
    assert_eq!(full(&a, "x"), (Success, 1));
    assert_eq!(both(&a, "ab"), ((Fail, 0), (More, 2)));
    assert_eq!(both(&a, "q"), ((Fail, 0), (Fail, 0)));
    let a = arena(|p| p.choice(Vec::<&str>::new()));
    assert_eq!(full(&a, "q").0, Fail);
}

#[test]
fn repetitions() {
    let a = arena(|p| p.one_or_more("ab"));
    assert_eq!(both(&a, "ababx"), ((Success, 4), (Success, 4)));
    assert_eq!(both(&a, "aba"), ((Success, 2), (More, 3)));
    assert_eq!(both(&a, "x"), ((Fail, 0), (Fail, 0)));
    let a = arena(|p| p.zero_or_more("ab"));
    assert_eq!(full(&a, "x"), (Success, 0));
    let a = arena(|p| p.optional("ab") + "c");
    assert_eq!(full(&a, "abc"), (Success, 3));
    assert_eq!(full(&a, "c"), (Success, 1));
    let a = arena(|p| p.repeat("a", 2, Some(3)));
    assert_eq!(full(&a, "a").0, Fail);
    assert_eq!(full(&a, "aa"), (Success, 2));
    assert_eq!(full(&a, "aaaaa"), (Success, 3));
    let a = arena(|p| p.repeat_n("a", 2));
    assert_eq!(full(&a, "aaa"), (Success, 2));
    // No progress: an empty match ends the loop.
    let a = arena(|p| p.zero_or_more(p.eps()));
    assert_eq!(full(&a, "x"), (Success, 0));
    let a = arena(|p| p.repeat(p.eps(), 3, Some(5)));
    assert_eq!(full(&a, "x"), (Success, 0));
}

#[test]
fn lookahead() {
    let a = arena(|p| p.peek("ab") + "a");
    assert_eq!(both(&a, "ab"), ((Success, 1), (Success, 1)));
    assert_eq!(both(&a, "a"), ((Fail, 0), (More, 0)));
    let a = arena(|p| p.negate("ab") + p.any());
    assert_eq!(full(&a, "ax"), (Success, 1));
    assert_eq!(full(&a, "ab").0, Fail);
    assert_eq!(both(&a, "a"), ((Success, 1), (More, 0)));
    // Lookahead builds no AST.
    let a = arena(|p| p.peek(p.tag("t", "a")) + p.tag("u", "a"));
    let out = a.parse(b"a", false).unwrap();
    assert_eq!(out.ast.len(), 1);
    assert_eq!(out.ast.nodes[0].tag.as_deref(), Some("u"));
}

#[test]
fn chars_classes() {
    let a = arena(|p| p.chars("[a-z_]", 1, None));
    assert_eq!(both(&a, "ab_c1"), ((Success, 4), (Success, 4)));
    assert_eq!(both(&a, "abc"), ((Success, 3), (More, 3)));
    assert_eq!(both(&a, "1"), ((Fail, 0), (Fail, 0)));
    assert_eq!(both(&a, ""), ((Fail, 0), (More, 0)));
    let a = arena(|p| p.chars("[^\"\\n]", 0, Some(3)));
    assert_eq!(full(&a, "éé\"x"), (Success, 4));
    assert_eq!(full(&a, "abcdef"), (Success, 3));
    assert_eq!(part(&a, "abcdef"), (Success, 3));
    let a = arena(|p| p.chars("[0-9]", 2, Some(4)));
    assert_eq!(full(&a, "1x").0, Fail);
    // Code points: a multi-byte char is one repetition; a negated class accepts invalid bytes.
    let a = arena(|p| p.tag("t", p.chars("[^x]", 0, None)));
    let out = a.parse(b"\xC3\xA9\xFFx", false).unwrap();
    assert_eq!(out.result.end, 3);
    assert!(out.ast.nodes[0].invalid_utf8);
    let out = a.parse(b"ab\xC3", true).unwrap();
    assert_eq!((out.result.outcome, out.result.end), (More, 2));
}

#[test]
fn space_until_rest() {
    let a = arena(|p| p.space() + "x");
    assert_eq!(both(&a, " \t\n\rx"), ((Success, 5), (Success, 5)));
    assert_eq!(both(&a, "  "), ((Fail, 2), (More, 2)));
    let a = arena(|p| p.until("</think>"));
    assert_eq!(both(&a, "abc</think>"), ((Success, 3), (Success, 3)));
    assert_eq!(both(&a, "abc"), ((Success, 3), (More, 3)));
    assert_eq!(both(&a, "abc</thi"), ((Success, 8), (More, 3)));
    let a = arena(|p| p.until_one_of(["<a>", "<b>", "c"]));
    assert_eq!(full(&a, "xx<b>c"), (Success, 2));
    assert_eq!(full(&a, "xxc<b>"), (Success, 2));
    // A longer delimiter cut by the end may start before a complete shorter one.
    let a = arena(|p| p.until_one_of(["abcd", "c"]) + "abcd" + p.end());
    assert_eq!(full(&a, "xabcd"), (Success, 5));
    assert_eq!(part(&a, "xabc"), (More, 1));
    let a = arena(|p| p.rest());
    assert_eq!(both(&a, "abc"), ((Success, 3), (More, 3)));
    // A truncated UTF-8 sequence is held back in partial mode.
    let out = a.parse(b"ab\xE2\x9C", true).unwrap();
    assert_eq!((out.result.outcome, out.result.end), (More, 2));
    let a = arena(|p| p.tag("t", p.until("<")));
    let out = a.parse(b"a\xFFb<", false).unwrap();
    assert_eq!(out.result.end, 3);
    assert!(out.ast.nodes[0].invalid_utf8);
    let out = a.parse(b"ab\xE2\x9C", true).unwrap();
    assert_eq!((out.result.end, out.ast.nodes[0].invalid_utf8), (2, false));
    let out = a.parse(b"ab\xE2\x9C", false).unwrap();
    assert_eq!((out.result.end, out.ast.nodes[0].invalid_utf8), (4, true));
}

#[test]
fn json_nodes() {
    let a = arena(|p| p.json());
    assert_eq!(both(&a, r#"{"a": [1, true]}"#), ((Success, 16), (Success, 16)));
    assert_eq!(both(&a, r#"{"a": [1, tr"#), ((Fail, 12), (More, 12)));
    assert_eq!(both(&a, "12"), ((Success, 2), (More, 2)));
    assert_eq!(both(&a, "[1,]"), ((Fail, 3), (Fail, 3)));
    let a = arena(|p| p.json_object());
    assert_eq!(full(&a, "[]").0, Fail);
    let a = arena(|p| p.json_array());
    assert_eq!(full(&a, "[] x"), (Success, 2));
    let a = arena(|p| p.json_string());
    assert_eq!(both(&a, r#""a\"b""#), ((Success, 6), (Success, 6)));
    let a = arena(|p| p.json_number());
    assert_eq!(full(&a, "-1.5e3,"), (Success, 6));
    let a = arena(|p| p.json_bool() | p.json_null());
    assert_eq!(full(&a, "null"), (Success, 4));
    assert_eq!(part(&a, "fal"), (More, 3));
    let a = arena(|p| "\"" + p.tag("s", p.json_string_content()) + "\"");
    assert_eq!(both(&a, r#""a\nb" x"#), ((Success, 6), (Success, 6)));
    assert_eq!(both(&a, r#""ab\"#), ((Fail, 4), (More, 3)));
    let a = arena(|p| "{" << p.json_member("name", p.tag("n", p.json_string())) << "}");
    assert_eq!(full(&a, r#"{ "name" : "f" }"#), (Success, 16));
}

#[test]
fn python_and_marker() {
    let a = arena(|p| p.python());
    assert_eq!(both(&a, "{'a': [1, None],}"), ((Success, 17), (Success, 17)));
    assert_eq!(both(&a, "{'a': [1, No"), ((Fail, 12), (More, 12)));
    let a = arena(|p| p.python_kind(crate::PythonKind::Str));
    assert_eq!(full(&a, "'x' rest"), (Success, 3));
    let a = arena(|p| p.marker());
    assert_eq!(both(&a, "<|im_end|> x"), ((Success, 10), (Success, 10)));
    assert_eq!(both(&a, "[TOOL_CALLS]"), ((Success, 12), (Success, 12)));
    assert_eq!(both(&a, "<tool"), ((Fail, 5), (More, 5)));
    assert_eq!(both(&a, "<a\nb>").0.0, Fail);
    assert_eq!(both(&a, "<>").0.0, Fail);
    assert_eq!(both(&a, "x").0.0, Fail);
    assert_eq!(both(&a, ""), ((Fail, 0), (More, 0)));
}

#[test]
fn rules_refs_schema_gbnf() {
    let a = arena(|p| {
        let item = p.rule("item", p.chars("[a-z]", 1, None));
        let list = p.rule("list", "[" + item + p.zero_or_more("," + p.rule_ref("item")) + "]");
        p.schema(p.gbnf(list, "\"[\" [a-z]+ \"]\""), "l", serde_json::json!({"type": "array"}), false)
    });
    let out = a.parse(b"[ab,c]", false).unwrap();
    assert_eq!(out.result.outcome, Success);
    let rules: Vec<_> = out.ast.nodes.iter().map(|n| n.rule.as_deref().unwrap()).collect();
    assert_eq!(rules, ["list", "item", "item"]);
    assert_eq!(out.ast.node(out.ast.roots[0]).children.len(), 2);
}

#[test]
fn tags_build_the_ast_and_flag_partial_nodes() {
    let a = arena(|p| {
        p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>")
            + p.tag("content", p.until("<tool_call>"))
            + p.optional(p.tag("tool", "<tool_call>" + p.tag("args", p.json()) + "</tool_call>"))
            + p.end()
    });
    let input = "<think>hmm</think>Hello<tool_call>{\"a\": 1}</tool_call>";
    let out = a.parse(input.as_bytes(), false).unwrap();
    assert_eq!(out.result, ParseResult { outcome: Success, start: 0, end: input.len() });
    let tags: Vec<_> = out.ast.nodes.iter().map(|n| n.tag.as_deref().unwrap()).collect();
    assert_eq!(tags, ["reasoning", "content", "tool", "args"]);
    assert!(out.ast.nodes.iter().all(|n| !n.partial));
    assert_eq!(out.ast.text(out.ast.find_by_tag("args")[0], input.as_bytes()), "{\"a\": 1}");

    let cut = "<think>hmm</think>Hello<tool_call>{\"a\": ";
    let out = a.parse(cut.as_bytes(), true).unwrap();
    assert_eq!(out.result.outcome, More);
    let partial: Vec<_> = out.ast.nodes.iter().map(|n| (n.tag.as_deref().unwrap(), n.partial)).collect();
    assert_eq!(partial, [("reasoning", false), ("content", false), ("tool", true), ("args", true)]);
    assert_eq!(a.parse(cut.as_bytes(), false).unwrap().result.outcome, Fail);
    assert!(a.parse(cut.as_bytes(), false).unwrap().ast.is_empty());
}

#[test]
fn atomic_drops_partial_nodes() {
    let a = arena(|p| p.atomic(p.tag("t", p.literal("abc"))));
    let out = a.parse(b"ab", true).unwrap();
    assert_eq!(out.result.outcome, More);
    assert!(out.ast.is_empty());
    let out = a.parse(b"abc", true).unwrap();
    assert_eq!(out.ast.len(), 1);
}

#[test]
fn recursion_is_bounded() {
    let a = arena(|p| p.rule("n", ("(" + p.rule_ref("n") + ")") | p.eps()));
    let deep = "(".repeat(100_000);
    let err = a.parse(deep.as_bytes(), true).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooDeep);
    let ok = format!("{}{}", "(".repeat(50), ")".repeat(50));
    assert_eq!(a.parse(ok.as_bytes(), false).unwrap().result.end, 100);
    // The default limit fits a 2 MB thread stack.
    let handle =
        std::thread::Builder::new().stack_size(2 << 20).spawn(move || a.parse(deep.as_bytes(), false).map(|o| o.result.outcome).map_err(|e| e.kind())).unwrap();
    assert_eq!(handle.join().unwrap(), Err(ErrorKind::TooDeep));
    let j = arena(|p| p.json());
    let deep = "[".repeat(100_000);
    assert_eq!(j.parse(deep.as_bytes(), true).unwrap().result.outcome, More);
    assert_eq!(j.parse(deep.as_bytes(), false).unwrap().result.outcome, Fail);
}

#[test]
fn custom_depth_limit() {
    let a = arena(|p| p.rule("n", ("(" + p.rule_ref("n") + ")") | p.eps()));
    let opts = ParseOptions::default().max_depth(20);
    assert!(a.parse_with(b"((((((((((", false, opts).is_err());
    assert!(a.parse_with(b"(())", false, opts).is_ok());
}

#[test]
fn output_serializes() {
    let a = arena(|p| p.tag("content", p.rest()));
    let out = a.parse(b"hi", true).unwrap();
    let text = serde_json::to_string(&out).unwrap();
    let back: ParseOutput = serde_json::from_str(&text).unwrap();
    assert_eq!(back, out);
}

#[test]
fn arena_serde_round_trip_is_stable_and_parses_the_same() {
    let a = arena(|p| {
        let item = p.rule("item", p.chars("[0-9]", 1, None) | p.rule_ref("list") | p.json_string());
        let list = p.trigger_rule("list", "[" + p.optional(item + p.zero_or_more("," + p.rule_ref("item"))) + "]");
        p.start()
            + p.peek("[")
            + p.negate("]")
            + p.atomic(p.tag("l", list))
            + p.repeat(p.any(), 0, Some(3))
            + p.space()
            + p.schema(p.optional(p.json()), "s", serde_json::json!({"type": "object"}), true)
            + p.gbnf(p.optional(p.python()), "[a-z]+")
            + p.optional(p.marker())
            + p.tag("u", p.until_one_of(["<end>", "</x>"]))
            + p.chars("[^\\n]", 0, Some(4))
            + p.optional("\"" + p.json_string_content() + "\"")
            + p.eps()
            + p.tag("r", p.rest())
            + p.end()
    });
    let text = a.to_json();
    let back = Arena::from_json(&text).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.to_json(), text);
    assert_eq!(back.dump(), a.dump());
    let via_serde: Arena = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    assert_eq!(via_serde, a);
    for input in ["[1,[2,\"x\"]]abc {\"k\": 1}<x>tail<end>more", "[1]", "[1,[2"] {
        for partial in [false, true] {
            assert_eq!(back.parse(input.as_bytes(), partial).unwrap(), a.parse(input.as_bytes(), partial).unwrap());
        }
    }
    assert_eq!(a.parse(b"[1,[2,\"x\"]]abc", false).unwrap().result.outcome, Success);
    // Malformed data is an error, not a panic.
    assert!(Arena::from_json("{\"nodes\": [], \"rules\": [], \"root\": 3}").is_err());
    assert!(Arena::from_json("{\"nodes\": [{\"type\": \"ref\", \"name\": \"x\"}], \"rules\": [], \"root\": 0}").is_err());
}
