//! Arguments written in a template's own syntax (value literals, raw values in tags, Python
//! literals) and parts that the generation prompt opens: what the model writes parses, streams and
//! fits the grammar.
//!
//! Each test runs on fixtures in `tests/fixtures/` and `tests/templates/` that write the shape it
//! is about, and on the shared templates of that shape when the shared data is there.

use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, Strictness};
use serde_json::{Value, json};

use autoparser::analysis::analyze;
use autoparser::format::TemplateAnalysis;
use autoparser::generator::generate;
use autoparser::template::ChatTemplate;
use autoparser::verify::{check_grammar, stream_message};
use autoparser::{ErrorKind, GrammarTrigger, PreparedRequest, Request};

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

/// The tests here that read the shared data (named in the skip notice): each also runs on
/// fixtures, so only its shared templates are skipped.
const CORPUS_TESTS: &[&str] = &[
    "nested_values_parse_stream_and_fit_the_grammar (the shared templates)",
    "partial_values_grow_and_close (the shared templates)",
    "nested_values_follow_their_schema_in_the_grammar (the shared templates)",
    "literal_rendered_values_fit_their_schema_grammar (the shared templates)",
    "python_rendered_values_fit_their_schema_grammar (the shared templates)",
    "python_values_follow_their_schema_in_the_grammar (the shared templates)",
    "odd_schemas_still_generate (the shared templates)",
    "string_values_may_hold_their_closing_tags (the shared templates)",
    "nullable_strings_read_null_and_strings (the shared templates)",
    "raw_values_follow_their_schema_in_the_grammar (the shared templates)",
    "parts_opened_by_the_prompt (the shared templates)",
    "broken_python_escapes_give_valid_json_arguments (the shared templates)",
    "hermes_string_arguments_stream_live",
];

/// Where a template of a test comes from.
#[derive(Clone, Copy)]
enum Source {
    /// `tests/fixtures/NAME.jinja` or `tests/templates/NAME.jinja`, in the repository.
    Fixture(&'static str),
    /// `templates/NAME.jinja` of the shared data.
    Shared(&'static str),
}
use Source::*;

impl Source {
    fn name(self) -> &'static str {
        match self {
            Fixture(n) | Shared(n) => n,
        }
    }

    /// The template, `None` for a shared one without the shared data.
    fn load(self) -> Option<ChatTemplate> {
        let path = match self {
            Fixture(name) => {
                let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
                let fixture = dir.join("fixtures").join(format!("{name}.jinja"));
                if fixture.is_file() { fixture } else { dir.join("templates").join(format!("{name}.jinja")) }
            }
            Shared(name) => shared_data::shared(CORPUS_TESTS)?.template(name),
        };
        Some(ChatTemplate::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    }
}

/// The fixture literals in the syntax of Gemma 4: `<|"|>` strings, bare keys in sorted order.
const LITERALS: [Source; 2] = [Fixture("literal-values"), Shared("google-gemma-4-31B-it")];

/// `source`'s parser for a request with `tools` (JSON text); `None`: skipped.
fn generated(source: Source, tools: &str) -> Option<(PreparedRequest, TemplateAnalysis, ChatParser)> {
    let t = source.load()?;
    Some(generated_with(&t, tools))
}

fn generated_with(t: &ChatTemplate, tools: &str) -> (PreparedRequest, TemplateAnalysis, ChatParser) {
    let a = analyze(t).unwrap();
    let tools: Value = serde_json::from_str(tools).unwrap();
    let req = Request::from_json(&json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools})).unwrap();
    let g = generate(t, &a, &req).unwrap();
    let parser = g.parser(Strictness::Lenient);
    (g, a, parser)
}

fn args(m: &ChatMessage) -> Value {
    serde_json::from_str(&m.tool_calls[0].arguments).unwrap()
}

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"}, "filters": {"type": "object"}, "tags": {"type": "array"}, "any": {}}}}}]"#;

const OUTPUT: &str = "<|tool_call>call:search{any:<|\"|>x<|\"|>,filters:{lang:<|\"|>d\"e\\<|\"|>,list:[<|\"|><|\"|>,<|\"|>a\nb<|\"|>,\
    {x:None,y:[1,-2.5e3,true,false]}],site:<|\"|>Zürich<|\"|>},query:<|\"|>best \"K\" <Zürich>\nlate<|\"|>,tags:[]}<tool_call|>";

fn expected() -> Value {
    json!({"any": "x", "filters": {"lang": "d\"e\\", "list": ["", "a\nb", {"x": null, "y": [1, -2.5e3, true, false]}], "site": "Zürich"},
        "query": "best \"K\" <Zürich>\nlate", "tags": []})
}

#[test]
fn nested_values_parse_stream_and_fit_the_grammar() {
    for source in LITERALS {
        let Some((g, a, parser)) = generated(source, TOOLS) else { continue };
        let name = source.name();
        let one = parser.parse(OUTPUT, peg_runtime::chat::ParseMode::Complete).unwrap();
        assert_eq!(one.diagnostic, None, "{name}");
        assert_eq!(one.message.content, "", "{name}");
        assert_eq!(args(&one.message), expected(), "{name}");
        let streamed = stream_message(&parser, OUTPUT, false, 1).unwrap();
        assert_eq!(streamed, one.message, "{name}");
        check_grammar(&g, &a, OUTPUT).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn partial_values_grow_and_close() {
    for source in LITERALS {
        let Some((g, _, parser)) = generated(source, TOOLS) else { continue };
        let opts = ChatParseOptions { close_partial_arguments: true, ..parser.options().clone() };
        let closing = ChatParser::new(g.arena.clone(), opts);
        let mut last = String::new();
        for (cut, _) in OUTPUT.char_indices().skip(1) {
            let prefix = &OUTPUT[..cut];
            let m = parser.parse(prefix, peg_runtime::chat::ParseMode::Partial).unwrap();
            assert_eq!(m.message.content, "", "{prefix:?}");
            let got = m.message.tool_calls.first().map_or(String::new(), |c| c.arguments.clone());
            assert!(got.starts_with(&last), "{prefix:?}: {got:?} does not extend {last:?}");
            last = got;
            // Closed, a partial value is JSON whose strings and lists are cut.
            let closed = closing.parse(prefix, peg_runtime::chat::ParseMode::Partial).unwrap();
            if let Some(c) = closed.message.tool_calls.first().filter(|c| !c.arguments.is_empty()) {
                serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|e| panic!("{prefix:?}: {:?}: {e}", c.arguments));
            }
        }
        assert_eq!(serde_json::from_str::<Value>(&last).unwrap(), expected(), "{}", source.name());
    }
}

/// Typed nested values: the grammar follows the schema (types, enums, required and known
/// keys in the template's key order, item counts, `$ref`s) in the template's syntax; the
/// parser still reads any value.
#[test]
fn nested_values_follow_their_schema_in_the_grammar() {
    let tools = r##"[{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "filters": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "de"]}, "max": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}, "exact": {"type": "boolean"}}, "required": ["lang"]},
        "points": {"type": "array", "items": {"$ref": "#/$defs/point"}},
        "mode": {"anyOf": [{"type": "null"}, {"const": "fast"}]},
        "limit": {"type": ["integer", "null"]}},
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
        "required": ["query"]}}}]"##;
    for source in LITERALS {
        let Some((g, a, parser)) = generated(source, tools) else { continue };
        let name = source.name();
        let call = |written: &str| format!("<|tool_call>call:search{{query:<|\"|>rust<|\"|>,{written}}}<tool_call|>");
        let valid = [
            "filters:{exact:true,lang:<|\"|>en<|\"|>,max:5,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]},points:[{x:1,y:2.5},{x:-3,y:0}]",
            "filters:{exact:false,lang:<|\"|>de<|\"|>}",
            "filters:{ lang: <|\"|>de<|\"|> , tags: [] }",
            "points:[],mode:None",
            "mode:<|\"|>fast<|\"|>",
            // Scalars: the template's `None`, or JSON.
            "limit:None",
            "limit:null",
            "limit:7",
        ];
        for written in valid {
            let out = call(written);
            check_grammar(&g, &a, &out).unwrap_or_else(|e| panic!("{name}: {out}: {e}"));
            assert_eq!(parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap().diagnostic, None, "{name}: {out}");
        }
        let off_schema = [
            ("filters:{lang:<|\"|>fr<|\"|>}", json!({"lang": "fr"})),
            ("filters:{lang:<|\"|>en<|\"|>,max:<|\"|>5<|\"|>}", json!({"lang": "en", "max": "5"})),
            ("filters:{max:5}", json!({"max": 5})),
            ("filters:{lang:<|\"|>en<|\"|>,extra:1}", json!({"lang": "en", "extra": 1})),
            ("filters:{lang:<|\"|>en<|\"|>,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>,<|\"|>c<|\"|>]}", json!({"lang": "en", "tags": ["a", "b", "c"]})),
            ("filters:{lang:<|\"|>en<|\"|>,max:0}", json!({"lang": "en", "max": 0})),
            ("filters:[1]", json!([1])),
            // The template writes keys sorted: the grammar asks for that order.
            ("filters:{lang:<|\"|>de<|\"|>,exact:false}", json!({"lang": "de", "exact": false})),
        ];
        for (written, filters) in off_schema {
            let out = call(written);
            assert!(check_grammar(&g, &a, &out).is_err(), "{name}: the grammar accepts {out}");
            // Parsing is lenient: the call is read as written.
            let m = parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap();
            assert_eq!(m.diagnostic, None, "{name}: {out}");
            assert_eq!(args(&m.message)["filters"], filters, "{name}: {out}");
        }
        for written in ["points:[{x:1}]", "points:[{x:1,y:<|\"|>2<|\"|>}]", "mode:<|\"|>slow<|\"|>", "mode:true", "limit:True", "limit:1.5"] {
            let out = call(written);
            assert!(check_grammar(&g, &a, &out).is_err(), "{name}: the grammar accepts {out}");
            assert_eq!(parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap().diagnostic, None, "{name}: {out}");
        }
    }
}

/// Values a template itself writes are accepted by the grammar of their exact schema and
/// parse back to themselves: pseudo-random nested values, rendered through the template
/// (the call is the text from the last `open` to the `close` after it).
fn rendered_values_fit_their_schema_grammar(source: Source, open: &str, close: &str) {
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }
    const STRINGS: [&str; 10] = ["", "a b", "Zürich", "q\"uote", "back\\slash", "line\nbreak", "{x:1}", "[1, 2]", "None", "a,b:c"];
    fn value(r: &mut Lcg, depth: u32) -> Value {
        match r.below(if depth >= 3 { 5 } else { 7 }) {
            0 => STRINGS[r.below(10) as usize].into(),
            1 => (r.below(2000) as i64 - 1000).into(),
            2 => (r.below(1000) as f64 / 8.0 - 50.5).into(),
            3 => (r.below(2) == 1).into(),
            4 => Value::Null,
            5 => (0..r.below(4)).map(|_| value(r, depth + 1)).collect(),
            _ => {
                let mut keys = vec!["zeta", "alpha", "mid_key", "b2"];
                let mut m = serde_json::Map::new();
                for _ in 0..r.below(4) {
                    let k = keys.remove(r.below(keys.len() as u64) as usize);
                    m.insert(k.into(), value(r, depth + 1));
                }
                Value::Object(m)
            }
        }
    }
    fn schema_of(v: &Value) -> Value {
        match v {
            Value::String(_) => json!({"type": "string"}),
            Value::Number(n) if n.is_i64() => json!({"type": "integer"}),
            Value::Number(_) => json!({"type": "number"}),
            Value::Bool(_) => json!({"type": "boolean"}),
            Value::Null => json!({"type": "null"}),
            Value::Array(items) if items.is_empty() => json!({"type": "array"}),
            Value::Array(items) => json!({"type": "array", "items": {"anyOf": items.iter().map(schema_of).collect::<Vec<_>>()}}),
            Value::Object(m) => json!({"type": "object", "additionalProperties": false, "required": m.keys().collect::<Vec<_>>(),
                "properties": m.iter().map(|(k, v)| (k.clone(), schema_of(v))).collect::<serde_json::Map<_, _>>()}),
        }
    }
    let Some(t) = source.load() else { return };
    let name = source.name();
    let mut r = Lcg(7);
    let mut checked = 0;
    while checked < 120 {
        let v = value(&mut r, 0);
        if !(v.is_array() || v.is_object()) {
            continue;
        }
        checked += 1;
        // Every third value is the one allowed (spelled exactly), else typed.
        let arg = if checked % 3 == 0 { json!({"enum": [v, "other"]}) } else { schema_of(&v) };
        let params = json!({"type": "object", "properties": {"arg": arg}, "required": ["arg"]});
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": params}}]).to_string();
        let (g, a, parser) = generated_with(&t, &tools);
        let call = json!({"type": "function", "function": {"name": "f", "arguments": {"arg": v}}});
        let ctx = json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}],
            "tools": serde_json::from_str::<Value>(&tools).unwrap(), "add_generation_prompt": false});
        let prompt = t.render(&ctx).unwrap();
        // The last open: a system prompt may show the call syntax before the turn.
        let i = prompt.rfind(open).unwrap_or_else(|| panic!("{name}: no {open:?} in {prompt:?}"));
        let j = i + prompt[i..].find(close).unwrap_or_else(|| panic!("{name}: no {close:?} in {prompt:?}"));
        let written = &prompt[i..j + close.len()];
        check_grammar(&g, &a, written).unwrap_or_else(|e| panic!("{name}: {v}: {e}"));
        let m = parser.parse(written, peg_runtime::chat::ParseMode::Complete).unwrap();
        assert_eq!(m.diagnostic, None, "{name}: {written}");
        assert_eq!(args(&m.message), json!({"arg": v}), "{name}: {written}");
    }
}

#[test]
fn literal_rendered_values_fit_their_schema_grammar() {
    for source in LITERALS {
        rendered_values_fit_their_schema_grammar(source, "<|tool_call>", "<tool_call|>");
    }
}

/// Templates writing Python-literal arguments in a list of calls, with their call markers.
const PYTHON: [(Source, &str, &str); 2] =
    [(Fixture("python-calls-special"), "<|python_start|>", "<|python_end|>"), (Shared("LFM2.5-8B-A1B"), "<|tool_call_start|>", "<|tool_call_end|>")];

#[test]
fn python_rendered_values_fit_their_schema_grammar() {
    for (source, open, close) in PYTHON {
        rendered_values_fit_their_schema_grammar(source, open, close);
    }
}

/// Python-literal arguments: the grammar follows the schema in JSON or Python spelling; the
/// parser still reads any literal.
#[test]
fn python_values_follow_their_schema_in_the_grammar() {
    let tools = r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "opts": {"type": "object", "properties": {"on": {"type": "boolean"}, "tag": {"type": "string"}}, "required": ["on"]}}}}}]"#;
    for (source, open, close) in PYTHON {
        let Some((g, a, parser)) = generated(source, tools) else { continue };
        let name = source.name();
        let call = |written: &str| format!("{open}[f({written})]{close}");
        for written in ["n=3, opts={'on': True}", "opts={\"on\": true, \"tag\": \"x\"}", "opts={'on': False, 'tag': 'it\\'s'}", "opts={\"on\": True}"] {
            let out = call(written);
            check_grammar(&g, &a, &out).unwrap_or_else(|e| panic!("{name}: {out}: {e}"));
            assert_eq!(parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap().diagnostic, None, "{name}: {out}");
        }
        for written in ["n='3'", "n=True", "opts={'on': 'yes'}", "opts={'off': True}", "opts={'tag': 'x'}", "opts=[True]"] {
            let out = call(written);
            assert!(check_grammar(&g, &a, &out).is_err(), "{name}: the grammar accepts {out}");
            let m = parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap();
            assert_eq!(m.diagnostic, None, "{name}: {out}");
            assert_eq!(m.message.tool_calls.len(), 1, "{name}: {out}");
        }
    }
}

/// A string escape the model breaks off (`'\uZZ'`, `'\x4'`, a `\U` past the last code point)
/// stays text in the arguments, which are valid JSON one-shot and in every chunking.
#[test]
fn broken_python_escapes_give_valid_json_arguments() {
    let tools = r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}}]"#;
    let written = [
        (r"s='\uZZ'", "\\uZZ"),
        (r"s='\x4 and \x41'", "\\x4 and A"),
        (r#"s="\U0011FFFF\U0001F600""#, "\\U0011FFFF\u{1F600}"),
        (r"s='ends in \u12'", "ends in \\u12"),
    ];
    for (source, open, close) in PYTHON {
        let Some((_, _, parser)) = generated(source, tools) else { continue };
        let name = source.name();
        for (args, want) in written {
            let out = format!("{open}[f({args})]{close}");
            let one_shot = parser.parse(&out, peg_runtime::chat::ParseMode::Complete).unwrap().message;
            let call = one_shot.tool_calls.first().unwrap_or_else(|| panic!("{name}: no call in {out}"));
            let value: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|e| panic!("{name}: {out}: {e}"));
            // LFM2.5 writes strings raw (a backslash is text), the fixture as Python literals.
            if matches!(source, Fixture(_)) {
                assert_eq!(value["s"], want, "{name}: {out}");
            } else {
                assert!(value["s"].is_string(), "{name}: {out}: {value}");
            }
            for chunk in [1, 2, 3, 5] {
                let streamed = stream_message(&parser, &out, false, chunk).unwrap();
                assert_eq!(streamed.tool_calls, one_shot.tool_calls, "{name}: {out} in chunks of {chunk}");
            }
        }
    }
}

/// Odd or hostile schemas give a parser and a grammar that parses (falling back to the
/// generic value where they say nothing usable), or a clear error: never a panic.
#[test]
fn odd_schemas_still_generate() {
    let schemas = [
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 5, "maxItems": 2}),
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 100000, "maxItems": 4000000000u64}),
        json!({"type": "array", "maxItems": 0}),
        json!({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}),
        json!({"$ref": "#/nowhere"}),
        json!({"enum": []}),
        json!({"anyOf": []}),
        json!({"type": ["object", "nonsense"]}),
        json!({"type": "object", "properties": {"a b": {"type": "string"}, "<|\"|>": {"type": "integer"}, "": {}}, "required": ["a b"]}),
        json!({"type": "object", "properties": {"x": false}, "additionalProperties": {"type": "boolean"}}),
        json!({"const": {"k": ["<|\"|>", "it's", null]}}),
        json!({"allOf": [{"type": "object"}]}),
        json!(true),
    ];
    let sources = LITERALS.into_iter().chain(PYTHON.map(|(s, _, _)| s));
    let templates: Vec<(&str, ChatTemplate, TemplateAnalysis)> = sources
        .filter_map(|s| {
            let t = s.load()?;
            let a = analyze(&t).unwrap();
            Some((s.name(), t, a))
        })
        .collect();
    for schema in schemas {
        let params = json!({"type": "object", "properties": {"v": schema}});
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": params}}]);
        for (name, t, a) in &templates {
            let req = Request::from_json(&json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools})).unwrap();
            match generate(t, a, &req) {
                Ok(g) => {
                    let text = g.grammar.unwrap_or_else(|| panic!("{name}: no grammar for {schema}"));
                    peg_runtime::gbnf::Grammar::parse(&text).unwrap_or_else(|e| panic!("{name} {schema}: {e}"));
                }
                // The JSON-schema converter refuses contradictions and dangling `$ref`s.
                Err(e) => assert!(e.kind() == ErrorKind::Generation && e.detail().contains("Schema"), "{name} {schema}: {e}"),
            }
        }
    }
}

/// Templates writing one tag per argument, each value on lines of its own (Qwen3-Coder's shape).
const TAGGED_LINES: [Source; 2] = [Fixture("tagged-raw-values"), Shared("Qwen3-Coder")];

fn tagged(source: Source, params: Value) -> Option<(PreparedRequest, TemplateAnalysis, ChatParser)> {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": params}}}]);
    generated(source, &tools.to_string())
}

/// `output` parses (whole and streamed byte by byte, its arguments only growing) to one
/// call of `f` with `args` and no content, and the grammar accepts it.
fn round_trip(g: &PreparedRequest, a: &TemplateAnalysis, parser: &ChatParser, output: &str, args: Value) {
    let m = parser.parse(output, peg_runtime::chat::ParseMode::Complete).unwrap();
    assert_eq!(m.diagnostic, None, "{output}");
    assert_eq!(m.message.content, "", "{output}");
    assert_eq!(m.message.tool_calls.len(), 1, "{output}");
    assert_eq!(m.message.tool_calls[0].name, "f", "{output}");
    assert_eq!(serde_json::from_str::<Value>(&m.message.tool_calls[0].arguments).unwrap(), args, "{output}");
    let streamed = stream_message(parser, output, false, 1).unwrap();
    assert_eq!(streamed, m.message, "{output}");
    let mut last = String::new();
    for (cut, _) in output.char_indices().skip(1) {
        let p = parser.parse(&output[..cut], peg_runtime::chat::ParseMode::Partial).unwrap();
        assert_eq!(p.message.content, "", "{:?}", &output[..cut]);
        let got = p.message.tool_calls.first().map_or(String::new(), |c| c.arguments.clone());
        assert!(got.starts_with(&last), "{:?}: {got:?} does not extend {last:?}", &output[..cut]);
        last = got;
    }
    check_grammar(g, a, output).unwrap_or_else(|e| panic!("{output}: {e}"));
}

/// A string value may hold the closing tags of its own elements: the value suffix ends it
/// only where the next argument or a closing marker follows.
#[test]
fn string_values_may_hold_their_closing_tags() {
    let params = json!({"recipient": {"type": "string"}, "text": {"type": "string"}});
    for source in TAGGED_LINES {
        let Some((g, a, parser)) = tagged(source, params.clone()) else { continue };
        let call = |r: &str, t: &str| {
            format!("<tool_call>\n<function=f>\n<parameter=recipient>\n{r}\n</parameter>\n<parameter=text>\n{t}\n</parameter>\n</function>\n</tool_call>")
        };
        for (r, t) in [
            ("</parameter> and </function>", "ok"),
            ("a\n</parameter>\nb", "x\n</parameter>: </function>"),
            ("</parameter>", "<parameter=x> </parameter>y"),
            ("plain", "two\nlines"),
        ] {
            round_trip(&g, &a, &parser, &call(r, t), json!({"recipient": r, "text": t}));
        }
    }
    // Without line breaks around values.
    let args = json!({"recipient": "</parameter> and </function>", "text": "x</parameter>y"});
    let inline = [
        (
            Fixture("cdata-words"),
            "<call tool=\"f\">\n<arg name=\"recipient\"></parameter> and </function></arg>\n<arg name=\"text\">x</parameter>y</arg>\n</call>\n",
        ),
        (
            Shared("ByteDance-Seed-OSS"),
            "<seed:tool_call>\n<function=f>\n<parameter=recipient></parameter> and </function></parameter>\n\
            <parameter=text>x</parameter>y</parameter>\n</function>\n</seed:tool_call>",
        ),
    ];
    for (source, out) in inline {
        let Some((g, a, parser)) = tagged(source, params.clone()) else { continue };
        round_trip(&g, &a, &parser, out, args.clone());
    }
}

/// A nullable string written raw: the template's `None` (or `null`) is null, other text a
/// string; with separate openers for strings and other values (DSML), either opener.
#[test]
fn nullable_strings_read_null_and_strings() {
    for note in [json!({"type": ["string", "null"]}), json!({"anyOf": [{"type": "string"}, {"type": "null"}]})] {
        for source in TAGGED_LINES {
            let Some((g, a, parser)) = tagged(source, json!({"note": note})) else { continue };
            let call = |v: &str| format!("<tool_call>\n<function=f>\n<parameter=note>\n{v}\n</parameter>\n</function>\n</tool_call>");
            for (v, want) in
                [("None", Value::Null), ("null", Value::Null), ("Nonesuch", json!("Nonesuch")), ("None of it", json!("None of it")), ("text", json!("text"))]
            {
                round_trip(&g, &a, &parser, &call(v), json!({"note": want}));
            }
        }
        for source in [Fixture("typed-openers"), Shared("deepseek-ai-DeepSeek-V3.2")] {
            let Some((g, a, parser)) = tagged(source, json!({"note": note, "id": {"type": "integer"}})) else { continue };
            let call = |v: &str| {
                // The next argument has the other opener.
                format!(
                    "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n{v}\n<｜DSML｜parameter name=\"id\" string=\"false\">70</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"
                )
            };
            let (null, text) = (
                "<｜DSML｜parameter name=\"note\" string=\"false\">null</｜DSML｜parameter>",
                "<｜DSML｜parameter name=\"note\" string=\"true\">null</｜DSML｜parameter> or not</｜DSML｜parameter>",
            );
            round_trip(&g, &a, &parser, &call(null), json!({"id": 70, "note": null}));
            round_trip(&g, &a, &parser, &call(text), json!({"id": 70, "note": "null</｜DSML｜parameter> or not"}));
        }
    }
}

/// The grammar of a typed raw value still follows its string part (the raw rule replaces
/// the text), and its null.
#[test]
fn raw_values_follow_their_schema_in_the_grammar() {
    let params = json!({"mode": {"type": ["string", "null"], "enum": ["fast", "slow", null]}, "text": {"type": "string"}});
    for source in TAGGED_LINES {
        let Some((g, a, parser)) = tagged(source, params.clone()) else { continue };
        let call =
            |v: &str| format!("<tool_call>\n<function=f>\n<parameter=mode>\n{v}\n</parameter>\n<parameter=text>\nx\n</parameter>\n</function>\n</tool_call>");
        round_trip(&g, &a, &parser, &call("fast"), json!({"mode": "fast", "text": "x"}));
        round_trip(&g, &a, &parser, &call("None"), json!({"mode": null, "text": "x"}));
        assert!(check_grammar(&g, &a, &call("medium")).is_err(), "{}", source.name());
        assert!(check_grammar(&g, &a, &call("fast</parameter>")).is_err(), "{}", source.name());
    }
}

/// The prompt opens the first part (`>>>`): a call may start the output, or follow content
/// after the part start; both trigger the grammar.
#[test]
fn parts_opened_by_the_prompt() {
    for source in [Fixture("parts-after-prompt"), Shared("meetkai-functionary-medium-v3.2")] {
        let Some(t) = source.load() else { continue };
        let name = source.name();
        let a = analyze(&t).unwrap();
        assert_eq!(a.builder, None, "{name}");
        let p = a.parts.clone().unwrap_or_else(|| panic!("{name}: no parts"));
        assert_eq!((p.part_start.as_str(), p.content_recipient.as_str(), p.recipient_suffix.as_str()), (">>>", "all", "\n"), "{name}");
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}]);
        let req = Request::from_json(&json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools, "parallel_tool_calls": true})).unwrap();
        let g = generate(&t, &a, &req).unwrap();
        assert!(g.grammar_triggers.contains(&GrammarTrigger::Word(">>>f\n".into())), "{name}: {:?}", g.grammar_triggers);
        let parser = g.parser(Strictness::Lenient);
        for (out, content, n) in
            [("f\n{\"n\": 1}>>>f\n{\"n\": 2}", "", 2), ("all\nSure >> ok.>>>f\n{\"n\": 1}", "Sure >> ok.", 1), ("all\nJust text.", "Just text.", 0)]
        {
            let m = parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap().message;
            assert_eq!((m.content.as_str(), m.tool_calls.len()), (content, n), "{name}: {out}");
            assert_eq!(stream_message(&parser, out, false, 1).unwrap(), m, "{name}: {out}");
            check_grammar(&g, &a, out).unwrap_or_else(|e| panic!("{name}: {out}: {e}"));
        }
    }
}

/// Hermes 3's content ends where a lookahead finds a call (copies of the calls inside it): its
/// native string arguments still take the live lane. Streamed in pieces of 1 to 8 bytes, a
/// string with escapes, quotes, non-ASCII and the closing marker adds up to the one-shot parse,
/// and most pieces are folded without a parse.
#[test]
fn hermes_string_arguments_stream_live() {
    use peg_runtime::chat::{DeltaBuffer, ParseMode, stream_pieces};
    let tools = r#"[{"type": "function", "function": {"name": "write_file", "description": "Writes a file.", "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}}]"#;
    let Some((_, _, parser)) = generated(Shared("NousResearch-Hermes-3-Llama-3.1-8B-tool_use"), tools) else { return };
    let content = "fn main() { println!(\"{} \\ {}\", \"</tool_call>\", 'é'); } // 😀 \u{1}\t```\n".repeat(40);
    let call = json!({"name": "write_file", "arguments": {"path": "src/main.rs", "content": content}});
    let output = format!("I will write it.\n<tool_call>\n{call}\n</tool_call>");
    let whole = parser.parse(&output, ParseMode::Complete).unwrap();
    assert_eq!(args(&whole.message)["content"], content);
    for size in 1..=8 {
        let pieces = stream_pieces(&output, &[size]);
        let mut stream = parser.stream();
        let mut out = DeltaBuffer::new();
        let mut deltas = Vec::new();
        for piece in &pieces {
            stream.push_into(piece, &mut out).unwrap();
            deltas.extend(out.to_deltas());
        }
        let last = stream.finish_into(&mut out).unwrap();
        deltas.extend(out.to_deltas());
        assert_eq!(last, whole, "pieces of {size}");
        assert_eq!(ChatMessage::from_deltas(&deltas), whole.message, "pieces of {size}");
        let parses = stream.parse_count();
        assert!(parses * 3 < pieces.len(), "{parses} parses for {} pieces of {size}", pieces.len());
    }
}
