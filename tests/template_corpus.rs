//! Chat-template capabilities next to the reference's, read in place from the shared corpus.
//!
//! The corpus's `render/` scenarios and its `prompt`, `generation_prompt` and `capability`
//! cases are judged by `autoparser check` (`autoparser-cli/tests/corpus_check.rs`).

use std::fs;
use std::path::{Path, PathBuf};

use autoparser::template::ChatTemplate;
use serde_json::{Value as Json, json};

mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["capabilities_vs_reference_analysis"];

fn load_template(templates: &Path, name: &str) -> ChatTemplate {
    let path = templates.join(format!("{name}.jinja"));
    let src = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ChatTemplate::from_source(&src, "<s>", "</s>").unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn render(t: &ChatTemplate, messages: Json, tools: Option<Json>, extra: &[(&str, Json)]) -> Result<String, String> {
    let mut ctx = json!({"messages": messages, "bos_token": "", "eos_token": "", "add_generation_prompt": true});
    if let Some(tools) = tools {
        ctx["tools"] = tools;
    }
    for (k, v) in extra {
        ctx[*k] = v.clone();
    }
    t.render(&ctx).map_err(|e| e.to_string())
}

/// A conversation that shows capability `cap` (as the capability probes render it), with its
/// tools.
fn showing(cap: &str) -> (Json, Option<Json>) {
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": "Probe tool",
            "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]}}})
    };
    let user = json!({"role": "user", "content": "User message"});
    match cap {
        "supports_system_role" => (json!([{"role": "system", "content": "PROBE_SYSTEM"}, user]), None),
        "supports_tools" => (json!([user]), Some(json!([tool("probe_tool_def")]))),
        "supports_tool_calls" | "supports_parallel_tool_calls" | "supports_object_arguments" | "requires_non_null_content" => {
            let call = json!({"id": "call00001", "type": "function", "function": {"name": "probe_call_one", "arguments": {"arg": "probe_value_one"}}});
            let conv = json!([user, {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call00001", "content": "Tool response"},
                {"role": "assistant", "content": "Assistant message"}, user]);
            (conv, Some(json!([tool("probe_call_one")])))
        }
        "supports_typed_content" => (json!([{"role": "user", "content": [{"type": "text", "text": "PROBE_TYPED_CONTENT"}]}]), None),
        _ => (json!([{"role": "user", "content": "PROBE_STRING_CONTENT"}]), None),
    }
}

/// Why our capability `cap` of `t` may differ from the reference's, if it is one of the
/// differences understood; `None`: unexplained. Each reason is checked on the template, not taken
/// from a list of names.
fn explained(t: &ChatTemplate, cap: &str, ours: bool) -> Option<String> {
    if !ours {
        // The reference's engine renders what Hugging Face's refuses: our probe raises where
        // jinja2's sandbox does (a mutating list method) or on a variable only some callers pass.
        let (messages, tools) = showing(cap);
        let err = render(t, messages, tools, &[]).err()?;
        let sandbox = err.contains("is unsafe");
        let undefined = err.contains("undefined");
        return (sandbox || undefined).then(|| format!("the probe raises: {err}"));
    }
    match cap {
        // The reference probes without the knobs that keep earlier reasoning; we set them.
        "supports_preserve_reasoning" => {
            let messages = json!([{"role": "user", "content": "User message"},
                {"role": "assistant", "content": "Assistant message", "reasoning_content": "PROBE_REASONING", "thinking": "PROBE_REASONING"},
                {"role": "user", "content": "User message"}]);
            let plain = render(t, messages, None, &[("enable_thinking", json!(true))]).ok()?;
            (!plain.contains("PROBE_REASONING")).then(|| "earlier reasoning is kept only behind a knob".to_owned())
        }
        // Typed parts render exactly as the same text given as a string: the template handles them.
        "supports_typed_content" => {
            let typed = render(t, json!([{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}]), None, &[]).ok()?;
            let string = render(t, json!([{"role": "user", "content": "Hello there"}]), None, &[]).ok()?;
            (typed == string).then(|| "typed parts render as the string does".to_owned())
        }
        // The reference probes calls with empty content only; the template writes them for null.
        "supports_tool_calls" | "supports_parallel_tool_calls" => {
            t.capabilities().requires_null_content_with_calls.then(|| "calls render only for a message whose content is null".to_owned())
        }
        _ => None,
    }
}

/// Capabilities against the reference's detected `caps` in `analysis/NAME.json`. The reference's
/// probes are heuristics too (the `capability` chat cases are the acceptance test), so they may
/// differ, but only for a reason this test can see in the template; any other difference fails.
#[test]
fn capabilities_vs_reference_analysis() {
    let Some(shared) = shared_data::shared(CORPUS_TESTS) else { return };
    let dir = shared.corpus().join("analysis");
    let (mut same, mut total) = (0, 0);
    let (mut understood, mut unexplained) = (Vec::new(), Vec::new());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut templates = 0;
    for p in files {
        let a: Json = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if !shared.template(&name).exists() {
            continue;
        }
        templates += 1;
        let t = load_template(&shared.templates(), &name);
        let caps = t.capabilities();
        let reference = a["caps"].as_object().unwrap_or_else(|| panic!("{name}: no caps in the reference analysis"));
        assert!(!reference.is_empty(), "{name}: no caps in the reference analysis");
        for (k, v) in reference {
            total += 1;
            let theirs = v.as_bool().unwrap_or_else(|| panic!("{name}.{k}: {v} is not a boolean"));
            let ours = caps.get(k).unwrap_or_else(|| panic!("{name}: the reference's capability {k} is not one of ours"));
            if ours == theirs {
                same += 1;
                continue;
            }
            let d = format!("{name}.{k}: ours {ours}, reference {theirs}");
            match explained(&t, k, ours) {
                Some(why) => understood.push(format!("{d} ({why})")),
                None => unexplained.push(d),
            }
        }
    }
    println!("capabilities equal to the reference analysis: {same}/{total}");
    for d in &understood {
        println!("  differs {d}");
    }
    assert!(templates > 0 && total > 0, "no reference analysis names a shared template");
    assert!(unexplained.is_empty(), "capabilities differ from the reference analysis for no understood reason:\n{}", unexplained.join("\n"));
}
