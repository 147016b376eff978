//! Untrusted templates end in a clear error, in bounded time and memory: a panic, a stack
//! overflow or an allocation of gigabytes takes a server down with it. Each test names the limit
//! that stops its template; fuel is deterministic, so the limits are asserted, never the time.

use autoparser::analysis::analyze;
use autoparser::template::{ChatTemplate, Limits};
use autoparser::{Error, ErrorKind, Limit, Model, Request};
use serde_json::json;

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["qwen3_coder_in_nested_loops_exhausts_the_analysis_budget"];

fn compile(src: &str) -> Result<ChatTemplate, Error> {
    ChatTemplate::from_source(src, "<s>", "</s>")
}

fn render(src: &str) -> Error {
    compile(src).expect("compiles").render(&json!({"messages": [{"role": "user", "content": "hi"}]})).expect_err("a limit stops it")
}

#[track_caller]
fn assert_limit(err: &Error, limit: Limit) {
    assert_eq!((err.kind(), err.limit()), (ErrorKind::LimitExceeded, Some(limit)), "{err}");
}

#[test]
fn generation_tag_overlapping_its_own_delimiter_is_a_syntax_error() {
    // `{%}` once made the generation-tag rewrite slice backwards and panic.
    for src in ["{%}generation", "{%-}generation", "{%}", "{%+}endgeneration%}", "é{%}generation{%é"] {
        let err = compile(src).expect_err(src);
        assert_eq!(err.kind(), ErrorKind::TemplateSyntax, "{src}: {err}");
    }
}

/// Chains of each kind the compiler recurses through, far past what overflows its stack.
fn deep_chains() -> Vec<(&'static str, String)> {
    vec![
        ("1+1+…", format!("{{{{ {} }}}}", vec!["1"; 20_000].join("+"))),
        ("|upper…", format!("{{{{ 'a'{} }}}}", "|upper".repeat(50_000))),
        (".y…", format!("{{{{ x{} }}}}", ".y".repeat(50_000))),
        ("[0]…", format!("{{{{ x{} }}}}", "[0]".repeat(100_000))),
        ("~", format!("{{{{ {} }}}}", vec!["'a'"; 20_000].join(" ~ "))),
        ("and", format!("{{{{ {} }}}}", vec!["x"; 20_000].join(" and "))),
        ("or", format!("{{{{ {} }}}}", vec!["x"; 20_000].join(" or "))),
        ("==", format!("{{{{ {} }}}}", vec!["x"; 20_000].join(" == "))),
        ("()", format!("{{{{ x{} }}}}", "()".repeat(50_000))),
        ("if-else", format!("{{{{ {} }}}}", vec!["1"; 20_000].join(" if x else "))),
        ("unary -", format!("{{{{ {}1 }}}}", "-".repeat(50_000))),
        ("not", format!("{{{{ {}1 }}}}", "not ".repeat(50_000))),
        ("elif", format!("{{% if x %}}{}{{% endif %}}", "{% elif x %}".repeat(20_000))),
        ("set", format!("{{% set x = {} %}}", vec!["1"; 20_000].join(" + "))),
    ]
}

#[test]
fn deep_expression_chains_are_refused_before_compiling() {
    for (what, src) in deep_chains() {
        let err = compile(&src).expect_err(what);
        assert_limit(&err, Limit::ExpressionDepth);
        assert_eq!(err.line(), Some(1), "{what}");
    }
}

#[test]
fn chains_in_strings_comments_and_raw_blocks_are_text() {
    let chain = vec!["1"; 5000].join("+");
    let src = format!("{{{{ '{chain}' }}}}{{# {{{{ {chain} }}}} #}}{{% raw %}}{{{{ {chain} }}}}{{% endraw %}}");
    let out = compile(&src).expect("compiles").render(&json!({})).expect("renders");
    assert_eq!(out, format!("{chain}{{{{ {chain} }}}}"));
}

/// At the default bound every kind of chain, alone or inside nested blocks, compiles on a test
/// thread's 2 MiB stack, and one level more is refused.
#[test]
fn chains_at_the_bound_compile() {
    let fors = |n: usize, inner: String| format!("{}{inner}{}", "{% for a in b %}".repeat(n), "{% endfor %}".repeat(n));
    type Chain<'f> = Box<dyn Fn(usize) -> String + 'f>;
    let chains: [(&str, Chain); 8] = [
        ("+", Box::new(|n| format!("{{{{ 1{} }}}}", "+1".repeat(n)))),
        ("|upper", Box::new(|n| format!("{{{{ 'a'{} }}}}", "|upper".repeat(n)))),
        ("[0]", Box::new(|n| format!("{{{{ x{} }}}}", "[0]".repeat(n)))),
        ("()", Box::new(|n| format!("{{{{ x{} }}}}", "()".repeat(n)))),
        ("not", Box::new(|n| format!("{{{{ {}1 }}}}", "not ".repeat(n)))),
        // The `if` is a level of its own.
        ("elif", Box::new(|n| format!("{{% if x %}}{}{{% endif %}}", "{% elif x %}".repeat(n - 1)))),
        // Blocks as deep as the parser allows, the rest of the depth in `elif`s or calls.
        ("for+elif", Box::new(move |n| fors(140, format!("{{% if x %}}{}{{% endif %}}", "{% elif x %}".repeat(n - 141))))),
        ("for+()", Box::new(move |n| fors(140, format!("{{{{ x{} }}}}", "()".repeat(n - 140))))),
    ];
    let n = Limits::default().expression_depth;
    for (what, chain) in chains {
        compile(&chain(n)).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_limit(&compile(&chain(n + 1)).map(|_| ()).expect_err(what), Limit::ExpressionDepth);
    }
}

/// A string doubled again and again: 2^32 bytes unless fuel pays for every byte created.
#[test]
fn doubling_a_string_runs_out_of_fuel() {
    let ns = "{% set ns = namespace(s='ab') %}";
    for (op, times) in [("+", 31), ("+", 40), ("~", 28)] {
        let src = format!("{ns}{}{{{{ ns.s|length }}}}", format!("{{% set ns.s = ns.s {op} ns.s %}}").repeat(times));
        assert_limit(&render(&src), Limit::Fuel);
    }
}

/// Text built from one large value repeated: the result is checked as it grows, never built
/// first and charged after.
#[test]
fn repeating_a_large_value_runs_out_of_fuel() {
    // 8 MiB, within the fuel; a thousand copies of it are not.
    let big = "{% set ns = namespace(s='ab') %}{% for i in range(22) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}";
    for (what, expr) in [
        ("join filter", "([ns.s] * 1000)|join|length"),
        ("join filter with a separator", "([ns.s] * 1000)|join(',')|length"),
        ("str.join", "''.join([ns.s] * 1000)|length"),
        ("tojson", "([ns.s] * 1000)|list|tojson|length"),
        ("string", "([ns.s] * 1000)|list|string|length"),
        ("printing a list", "([ns.s] * 1000)|list"),
        ("raise_exception", "raise_exception(([ns.s] * 1000)|list)"),
        ("pprint", "([ns.s] * 1000)|list|pprint|length"),
        ("join of lists", "[([ns.s] * 1000)|list]|join|length"),
        ("str.format repeating a field", "('{0}' * 1000).format(ns.s)|length"),
    ] {
        let err = render(&format!("{big}{{{{ {expr} }}}}"));
        assert_eq!(err.limit(), Some(Limit::Fuel), "{what}: {err}");
    }
}

/// Methods whose results are much larger than their input pay before building them.
#[test]
fn amplifying_methods_run_out_of_fuel() {
    // 4 MiB of text in 2 Mi words or lines.
    let text = |unit: &str| format!("{{% set ns = namespace(s='{unit}') %}}{{% for i in range(21) %}}{{% set ns.s = ns.s ~ ns.s %}}{{% endfor %}}");
    for (unit, expr) in [("a ", "ns.s.split(' ')"), ("a ", "ns.s.split()"), ("a ", "ns.s.rsplit(' ')"), ("a\\n", "ns.s.splitlines()")] {
        let src = format!("{}{{% for i in range(20) %}}{{{{ {expr}|length }}}}{{% endfor %}}", text(unit));
        assert_limit(&render(&src), Limit::Fuel);
    }
    // 4 Mi empty lists in 12 MiB of JSON.
    let src = format!("{}{{{{ ('[' ~ ns.s ~ '[]]')|from_json|length }}}}", text("[],"));
    assert_limit(&render(&src), Limit::Fuel);
    // Widths and precisions.
    for expr in ["'{:>1000000000}'.format('x')", "'{:.1000000000f}'.format(1.5)", "'%1000000000s'|format('x')"] {
        assert_limit(&render(&format!("{{{{ {expr} }}}}")), Limit::Fuel);
    }
    let out = compile("{{ '{:>5}|{:.2f}|{}'.format('x', 1.5, 'y') }}").unwrap().render(&json!({})).unwrap();
    assert_eq!(out, "    x|1.50|y");
    // An indent of 2 MiB, written before every item.
    let src = format!("{}{{{{ ([[[[1]]]] * 1000)|list|tojson(indent=ns.s) }}}}", text("  "));
    assert_limit(&render(&src), Limit::Fuel);
}

/// The analysis renders its probes many times; a template whose every render nearly exhausts
/// its fuel must not multiply that by the number of probes.
#[test]
fn heavy_renders_exhaust_the_analysis_budget() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/templates");
    let src = std::fs::read_to_string(dir.join("envelopes-special.jinja")).unwrap();
    let t = compile(&nested_loops(&src, 20)).expect("compiles");
    assert_limit(&Model::analyze(t).expect_err("exhausts the budget"), Limit::TotalFuel);
    // The plain template analyzes within the same budget.
    assert!(analyze(&compile(&src).unwrap()).is_ok());
}

#[test]
fn qwen3_coder_in_nested_loops_exhausts_the_analysis_budget() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let src = std::fs::read_to_string(shared.template("Qwen3-Coder")).unwrap();
    let t = compile(&nested_loops(&src, 20)).expect("compiles");
    assert_limit(&analyze(&t).expect_err("exhausts the budget"), Limit::TotalFuel);
}

/// `src` inside `depth` loops over the messages: 2^depth times the work for two messages.
fn nested_loops(src: &str, depth: usize) -> String {
    let open: String = (0..depth).map(|k| format!("{{%- for m{k} in messages %}}")).collect();
    format!("{open}{src}{}", "{%- endfor %}".repeat(depth))
}

/// The budget is the template's [`Limits`], for analysis and for each prepared request alike.
#[test]
fn the_budget_is_configurable_and_bounds_each_request() {
    // Cheap for the analysis' short conversations, about 300k fuel per render of a long one.
    let src = "{% if messages|length > 6 %}{% for i in range(300) %}{% for j in range(300) %}{% endfor %}{% endfor %}{% endif %}\
               {% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}\
               {% if add_generation_prompt %}<|assistant|>{% endif %}";
    let limits = Limits { total_fuel: 500_000, ..Limits::default() };
    let tiny = Limits { total_fuel: 100, ..Limits::default() };
    let err = analyze(&ChatTemplate::with_limits(src, "", "", tiny).unwrap()).expect_err("budget of 100");
    assert_limit(&err, Limit::TotalFuel);
    let model = Model::analyze(ChatTemplate::with_limits(src, "", "", limits).unwrap()).expect("analyzes");
    let turns: Vec<_> = (0..8).map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "x"})).collect();
    let short = Request { messages: turns[..1].to_vec(), add_generation_prompt: true, ..Request::default() };
    let long = Request { messages: turns[..7].to_vec(), add_generation_prompt: true, ..Request::default() };
    assert!(model.prepare(&short).is_ok());
    // Each request has a budget of its own: the short one spent nothing of the long one's.
    assert_limit(&model.prepare(&long).expect_err("heavy renders"), Limit::TotalFuel);
    assert!(model.prepare(&short).is_ok());
}

/// Fuel is deterministic: a limit hit once is hit the same way every time.
#[test]
fn limits_are_deterministic() {
    let src = "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}";
    let first = render(src);
    for _ in 0..3 {
        assert_eq!(render(src), first);
    }
    // Every render of the analysis runs out of fuel, and the budget too.
    let analysis = analyze(&compile(src).unwrap()).expect_err("never renders");
    assert_limit(&analysis, Limit::TotalFuel);
    assert_eq!(analyze(&compile(src).unwrap()).unwrap_err(), analysis);
}

/// A template whose calls no rule reads (here each call object is never closed, a bug some
/// published templates have) still serves plain chat; a request with tools is refused with
/// the reason, not answered with a parser that would return the calls as text.
#[test]
fn calls_no_rule_reads_refuse_tool_requests_only() {
    let src = r#"{%- for m in messages -%}<|{{ m.role }}|>{{ m.content or '' }}
{%- if m.tool_calls %}<CALLS>[{% for c in m.tool_calls %}{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}{{ ', ' if not loop.last }}{% endfor %}]</CALLS>{% endif -%}
<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"#;
    let model = Model::analyze(compile(src).unwrap()).expect("the analysis succeeds");
    assert!(model.analysis().tools_error.as_deref().is_some_and(|e| e.contains("JSON object")), "{:?}", model.analysis().tools_error);
    let chat = Request::from_json(&json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
    let parsed = model.prepare(&chat).unwrap().parser(Default::default()).parse("Hello!", Default::default()).unwrap();
    assert_eq!(parsed.message.content, "Hello!");
    let tool = json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}});
    let with_tools = Request::from_json(&json!({"messages": [{"role": "user", "content": "Hi"}], "tools": [tool]})).unwrap();
    let err = model.prepare(&with_tools).expect_err("tools are refused");
    assert_eq!(err.kind(), ErrorKind::Analysis, "{err}");
    assert!(err.to_string().contains("could not be learned"), "{err}");
    let off = Request::from_json(&json!({"messages": [{"role": "user", "content": "Hi"}], "tools": [tool], "tool_choice": "none"})).unwrap();
    assert!(model.prepare(&off).is_ok());
}
