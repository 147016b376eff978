//! Unit tests of the template module (corpus tests live in the root `tests/`).

use super::*;
use crate::{ErrorKind, Limit, Request};
use serde_json::json;

fn render(src: &str, ctx: serde_json::Value) -> Result<String, Error> {
    ChatTemplate::from_source(src, "<s>", "</s>")?.render(&ctx)
}

#[test]
fn python_formatting_and_filters() {
    let ctx = json!({"x": {"a": [1, 2.5, null, true]}, "f": 1e-5, "s": "it's"});
    assert_eq!(render("{{ x }}", ctx.clone()).unwrap(), "{'a': [1, 2.5, None, True]}");
    assert_eq!(render("{{ f }} {{ none }} {{ true }}", ctx.clone()).unwrap(), "1e-05 None True");
    assert_eq!(render("{{ x | tojson }}", ctx.clone()).unwrap(), r#"{"a": [1, 2.5, null, true]}"#);
    assert_eq!(render("{{ x | tojson(indent=2) }}", ctx.clone()).unwrap(), "{\n  \"a\": [\n    1,\n    2.5,\n    null,\n    true\n  ]\n}");
    assert_eq!(render("{{ s | tojson }}", ctx.clone()).unwrap(), r#""it's""#);
    // HF's signature: ensure_ascii, indent, separators, sort_keys.
    assert_eq!(render("{{ {'b': 'é', 'a': 1} | tojson(true, none, (',', ':'), true) }}", json!({})).unwrap(), r#"{"a":1,"b":"\u00e9"}"#);
    assert_eq!(render("{{ '3.7' | int }} {{ 'x' | int }} {{ '12' | int }} {{ none | int }}", json!({})).unwrap(), "3 0 12 0");
    assert_eq!(render("{{ '{\"k\": [1]}' | from_json }}", json!({})).unwrap(), "{'k': [1]}");
    assert_eq!(render("{{ x | string }}", ctx.clone()).unwrap(), "{'a': [1, 2.5, None, True]}");
    // Python's `str.title` and markupsafe's entities, as jinja2 renders them.
    assert_eq!(render("{{ \"it's x1y\".title() }} {{ \"it's\" | title }} {{ \"It'S\".istitle() }}", json!({})).unwrap(), "It'S X1Y It's True");
    assert_eq!(render("{{ s | e }} {{ '<b>' | safe | escape }} {{ '\"&>' | escape }}", ctx.clone()).unwrap(), "it&#39;s <b> &#34;&amp;&gt;");
    // Lists built up by concatenation are lists (minijinja keeps them lazy).
    let built = "{% set ns = namespace(l=[]) %}{% for i in [1, 2] %}{% set ns.l = ns.l + [{'n': i}] %}{% endfor %}{{ ns.l | tojson }}";
    assert_eq!(render(built, json!({})).unwrap(), r#"[{"n": 1}, {"n": 2}]"#);
    assert_eq!(render("{{ ([1] + [2]) | tojson }}", json!({})).unwrap(), "[1, 2]");
}

#[test]
fn jinja2_tests() {
    let src = "{{ none is iterable }}{{ 'a' is sequence }}{{ {} is sequence }}{{ [] is iterable }}";
    assert_eq!(render(src, json!({})).unwrap(), "FalseTrueTrueTrue");
}

#[test]
fn python_methods() {
    assert_eq!(
        render("{{ 'a b  c '.rsplit(None, 1) }}{{ '  a b c'.rsplit(None, 1) }}{{ x | length }}{{ 'ab' | center(6) }}", json!({})).unwrap(),
        "['a b', 'c']['  a b', 'c']0  ab  "
    );
    let src = "{{ 'a-b-c'.rsplit('-', 1) }}{{ 'abc'.removeprefix('a') }}{{ 'k=v'.partition('=')[2] }}{{ ' x '.strip() }}{{ [1,2].index(2) }}";
    assert_eq!(render(src, json!({})).unwrap(), "['a-b', 'c']bcvx1");
    let err = render("{% set l = [] %}{{ l.append(1) }}", json!({})).unwrap_err();
    assert!(err.to_string().contains("unsafe"), "{err}");
}

#[test]
fn whitespace_and_loop_controls() {
    let src = "{% for i in range(5) %}\n  {% if i == 3 %}{% break %}{% endif %}\n{{ i }}\n{% endfor %}";
    assert_eq!(render(src, json!({})).unwrap(), "0\n1\n2\n");
}

#[test]
fn generation_block_renders_its_body() {
    let src = "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}";
    assert_eq!(render(src, json!({"messages": [{"content": "hi"}]})).unwrap(), "hi");
}

#[test]
fn raise_exception_is_a_refusal_with_line() {
    let err = render("line1\n{{ raise_exception('no system role') }}", json!({})).unwrap_err();
    assert!(err.is_raised());
    assert_eq!(err.line(), Some(2));
    assert!(err.to_string().contains("no system role"));
}

#[test]
fn strftime_now_reads_the_request_clock() {
    let out = render("{{ strftime_now('%d %b %Y') }}", json!({"now": 1735732800})).unwrap();
    assert_eq!(out, "01 Jan 2025");
    assert_eq!(render("{{ strftime_now('%Y') }}", json!({})).unwrap(), "1970");
}

#[test]
fn namespace_and_dict() {
    let src = "{% set ns = namespace(n=0) %}{% for i in [1,2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}{{ dict(a=1) }}";
    assert_eq!(render(src, json!({})).unwrap(), "3{'a': 1}");
}

#[test]
fn syntax_errors_carry_the_line() {
    let err = ChatTemplate::from_source("ok\n{% if %}", "", "").unwrap_err();
    assert!((err.kind(), err.line()) == (ErrorKind::TemplateSyntax, Some(2)), "{err:?}");
}

/// The error of a hostile template: a limit (fuel, recursion, output size) must stop it, which
/// the callers check by the error's kind.
fn quick_err(src: &str) -> Error {
    render(src, json!({})).unwrap_err()
}

#[test]
fn hostile_infinite_loop() {
    let err = quick_err("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    assert!(err.limit() == Some(Limit::Fuel), "{err:?}");
}

#[test]
fn hostile_huge_range() {
    let err = quick_err("{% for i in range(10**9) %}x{% endfor %}");
    assert!(err.kind() == ErrorKind::LimitExceeded, "{err:?}");
}

#[test]
fn hostile_deep_recursion() {
    let err = quick_err("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    assert!(err.limit() == Some(Limit::Recursion), "{err:?}");
}

#[test]
fn hostile_deep_syntax_nesting() {
    let depth = 100_000;
    let src = format!("{{{{ {}1{} }}}}", "(".repeat(depth), ")".repeat(depth));
    let err = ChatTemplate::from_source(&src, "", "").unwrap_err();
    assert!(err.kind() == ErrorKind::TemplateSyntax, "{err:?}");
    let src = format!("{}x{}", "{% if true %}".repeat(5000), "{% endif %}".repeat(5000));
    assert!(ChatTemplate::from_source(&src, "", "").is_err());
}

#[test]
fn hostile_deep_data() {
    let mut v = json!("leaf");
    for _ in 0..2000 {
        v = json!([v]);
    }
    let t = ChatTemplate::from_source("{{ x }}{{ x | tojson }}", "", "").unwrap();
    assert!(t.render(&json!({ "x": v })).is_err());
}

#[test]
fn hostile_huge_output() {
    let err = quick_err("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}");
    assert!(err.limit() == Some(Limit::OutputSize), "{err:?}");
}

#[test]
fn load_sources() {
    let dir = std::env::temp_dir().join(format!("chatpeg-tmpl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("tokenizer_config.json");
    std::fs::write(
        &cfg,
        r#"{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": [{"name": "default", "template": "{{ bos_token }}D"},
                              {"name": "tool_use", "template": "T{{ eos_token }}"}]}"#,
    )
    .unwrap();
    let src = load(&cfg).unwrap();
    assert_eq!(src.templates.len(), 2);
    assert_eq!(ChatTemplate::load(&cfg).unwrap().render(&json!({})).unwrap(), "<s>D");
    assert_eq!(load_named(&cfg, Some("tool_use")).unwrap().render(&json!({})).unwrap(), "T</s>");
    assert_eq!(load_named(&cfg, Some("rag")).unwrap_err().kind(), ErrorKind::NotFound);

    let gguf = dir.join("model.gguf");
    std::fs::write(&gguf, gguf::tests::sample(300)).unwrap();
    let t = ChatTemplate::load(&gguf).unwrap();
    assert_eq!(t.render(&json!({"messages": [{"content": "hi"}]})).unwrap(), "<s>hi");
    assert_eq!(load_named(&gguf, Some("tool_use")).unwrap().render(&json!({})).unwrap(), "TOOLS</s>");

    let sub = dir.join("split");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("tokenizer_config.json"), r#"{"bos_token": "<B>", "eos_token": null}"#).unwrap();
    std::fs::write(sub.join("chat_template.jinja"), "S{{ bos_token }}").unwrap();
    assert_eq!(ChatTemplate::load(&sub.join("tokenizer_config.json")).unwrap().render(&json!({})).unwrap(), "S<B>");

    let jinja = dir.join("t.jinja");
    std::fs::write(&jinja, "J{{ bos_token }}").unwrap();
    assert_eq!(ChatTemplate::load(&jinja).unwrap().render(&json!({})).unwrap(), "J");

    for bad in
        [r#"{"chat_template": 3}"#, r#"{"chat_template": [{"name": "x"}]}"#, r#"{"bos_token": "x"}"#, r#"{"chat_template": "x", "bos_token": 5}"#, "not json"]
    {
        assert!(TemplateSource::from_tokenizer_config(bad).is_err(), "{bad}");
    }
    let err = load(&dir.join("missing.jinja")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(std::error::Error::source(&err).is_some_and(|e| e.is::<std::io::Error>()), "{err:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn apply_request_and_generation_prompt() {
    let t = ChatTemplate::from_source(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
        "",
        "",
    )
    .unwrap();
    let req: Request = serde_json::from_value(json!({
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "sys"}]},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
            {"role": "assistant", "content": "Hel"}
        ],
        "continue_final_message": "content"
    }))
    .unwrap();
    let out = t.apply(&req).unwrap();
    assert_eq!(out.prompt, "<system>sys<assistant>{\"a\": 1}<assistant>Hel");
    assert_eq!(out.generation_prompt, "<assistant>Hel");
}

#[test]
fn capabilities_of_a_simple_template() {
    let t = ChatTemplate::from_source("{% for m in messages %}{% if m.role != 'system' %}{{ m.content }}{% endif %}{% endfor %}", "", "").unwrap();
    let c = t.capabilities();
    assert!(c.supports_string_content);
    assert!(!c.supports_system_role);
    assert!(!c.supports_tools);
    assert!(!c.supports_tool_calls);
}

#[test]
fn add_bos_strips_the_template_bos() {
    let t = ChatTemplate::from_source("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}", "<s>", "</s>").unwrap();
    let req: Request = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": "x"}], "add_bos": true, "add_eos": true
    }))
    .unwrap();
    assert_eq!(t.apply(&req).unwrap().prompt, "x");
}

#[test]
fn templates_are_shareable() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<ChatTemplate>();
}

#[test]
fn tool_results_follow_call_order() {
    let t = ChatTemplate::from_source("{% for m in messages %}{% if m.role == 'tool' %}[{{ m.content }}]{% endif %}{% endfor %}", "", "").unwrap();
    let req: Request = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"}
    ]}))
    .unwrap();
    assert_eq!(t.apply(&req).unwrap().prompt, "[A][B]");
}

#[test]
fn methods_and_filters_never_panic_on_odd_arguments() {
    let receivers = ["'abc'", "''", "'  a b  '", "[1, 2]", "{'a': 1}", "none", "1", "1.5", "true", "undefined_var"];
    let args = ["", "none", "1", "-1", "0", "'a'", "''", "[1]", "'a', 1", "'', -5", "1, 2, 3", "'-', 1"];
    let methods = [
        "strip",
        "lstrip",
        "rstrip",
        "split",
        "rsplit",
        "splitlines",
        "partition",
        "rpartition",
        "replace",
        "removeprefix",
        "removesuffix",
        "startswith",
        "endswith",
        "find",
        "rfind",
        "index",
        "rindex",
        "count",
        "zfill",
        "ljust",
        "rjust",
        "center",
        "upper",
        "lower",
        "title",
        "capitalize",
        "swapcase",
        "istitle",
        "format",
        "join",
        "get",
        "items",
        "keys",
        "values",
        "copy",
        "append",
        "pop",
        "update",
    ];
    let filters = ["tojson", "string", "int", "float", "trim", "length", "count", "center", "from_json", "wordcount"];
    let mut n = 0;
    for r in receivers {
        for a in args {
            for m in methods {
                let _ = render(&format!("{{{{ ({r}).{m}({a}) }}}}"), json!({}));
                n += 1;
            }
            for f in filters {
                let sep = if a.is_empty() { "" } else { "(" };
                let end = if a.is_empty() { "" } else { ")" };
                let _ = render(&format!("{{{{ ({r}) | {f}{sep}{a}{end} }}}}"), json!({}));
                n += 1;
            }
        }
    }
    assert!(n > 1000);
    assert_eq!(render("{{ range(3) | length }}", json!({})).unwrap(), "3");
}

#[test]
fn null_content_becomes_empty_for_templates_that_need_it() {
    let t = ChatTemplate::from_source(
        "{% for m in messages %}{{ m.role + ':' + m.content }}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}\n{% endfor %}",
        "",
        "",
    )
    .unwrap();
    assert!(t.capabilities().requires_non_null_content);
    let req: Request = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}
    ]}))
    .unwrap();
    assert_eq!(t.apply(&req).unwrap().prompt, "user:qassistant:{\"a\": 1}");
}

#[test]
fn empty_content_becomes_null_for_templates_that_write_calls_only_then() {
    let t = ChatTemplate::from_source(
        "{% for m in messages %}{{ m.role }}:{% if m.content is none %}{% for c in m.tool_calls %}<call>{{ c.function.name + ' ' + c.function.arguments }}</call>{% endfor %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}",
        "",
        "",
    )
    .unwrap();
    assert!(t.capabilities().supports_tool_calls && t.capabilities().requires_null_content_with_calls);
    let req: Request = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}
    ]}))
    .unwrap();
    assert_eq!(t.apply(&req).unwrap().prompt, "user:qassistant:<call>f {\"a\": 1}</call>");
}

/// Random templates assembled from Jinja fragments (and raw bytes) compile or fail cleanly,
/// and render or fail cleanly: never a panic.
#[test]
fn random_templates_never_panic() {
    let frags = [
        "{{ ",
        " }}",
        "{% ",
        " %}",
        "{%- ",
        " -%}",
        "{# ",
        " #}",
        "for m in messages",
        "endfor",
        "if ",
        "endif",
        "else",
        "set x = ",
        "x",
        "messages[0]",
        ".content",
        "| tojson",
        "| length",
        "| int",
        "| string",
        "| trim",
        "| from_json",
        "'a'",
        "1",
        "-1",
        "none",
        "[1, {'a': [2]}]",
        "{'k': none}",
        " + ",
        " ~ ",
        " * ",
        " / ",
        "(",
        ")",
        "[",
        "]",
        ",",
        ".split(",
        ".rsplit(",
        ".strip(",
        ".get(",
        "raise_exception('r')",
        "strftime_now('%Y %b %%')",
        "namespace(a=1)",
        "range(3)",
        "loop.index",
        "generation",
        "endgeneration",
        "macro f(a)",
        "endmacro",
        "f(1)",
        "break",
        "continue",
        "is iterable",
        "is sequence",
        "not ",
        " and ",
        " or ",
        "\n",
        "  ",
        "é",
        "\u{0}",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let ctx = json!({"messages": [{"role": "user", "content": "{\"a\": 1}"}], "now": 1735732800});
    for _ in 0..1500 {
        let n = 1 + next() % 24;
        let src: String = (0..n).map(|_| frags[(next() % frags.len() as u64) as usize]).collect();
        if let Ok(t) = ChatTemplate::from_source(&src, "<s>", "</s>") {
            let _ = t.render(&ctx);
        }
    }
}
