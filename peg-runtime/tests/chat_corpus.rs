//! Hand-written grammars for two corpus templates (Hermes 2 Pro: native JSON arguments;
//! Qwen3-Coder: XML arguments), run over the corpus `parse` cases of those templates and
//! judged as the corpus README says: content and reasoning trimmed, names and non-empty ids
//! equal, arguments as JSON values (not-yet-valid JSON compares as empty), and streaming in
//! small chunks adds up to the final message.

mod chat_common;

use std::sync::Arc;

use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ConstructedBuilder, NativeBuilder, ToolSpec};
use serde_json::Value;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/chat-cases.jsonl");

fn hermes(tools: Vec<ToolSpec>, prefill: String) -> ChatParser {
    let arena = NativeBuilder::build(|p| {
        let call = p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(p.json()))
                << p.tool_close("}"),
        );
        p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), ChatParseOptions { tools, prefill, ..Default::default() })
}

fn qwen3_coder(tools: Vec<ToolSpec>, prefill: String) -> ChatParser {
    let arena = ConstructedBuilder::build(|p| {
        let arg = p.tool_arg(
            p.tool_arg_open("<parameter=" + p.tool_arg_name(p.until(">")) + ">\n")
                + p.tool_arg_string_value(p.until("\n</parameter>"))
                + p.tool_arg_close("\n</parameter>"),
        );
        let call = p.tool(
            p.tool_open("<function=" + p.tool_name(p.until(">")) + ">")
                << p.zero_or_more(arg << p.space())
                << p.tool_close("</function>"),
        );
        let calls = p.one_or_more(p.optional("<tool_call>") << call << p.optional(p.space() + "</tool_call>") << p.space());
        p.content(p.until_one_of(["<tool_call>", "<function="])) + p.optional(calls) + p.end()
    })
    .unwrap();
    ChatParser::new(Arc::new(arena), ChatParseOptions { tools, prefill, ..Default::default() })
}

fn args_value(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

fn judge(id: &str, got: &ChatMessage, want: &ChatMessage) -> Result<(), String> {
    let fail = |what: &str| Err(format!("{id}: {what}\n got  {got:?}\n want {want:?}"));
    if got.content.trim() != want.content.trim() {
        return fail("content");
    }
    if got.reasoning_content.trim() != want.reasoning_content.trim() {
        return fail("reasoning");
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        return fail("tool call count");
    }
    for (g, w) in got.tool_calls.iter().zip(&want.tool_calls) {
        if g.name != w.name || (!w.id.is_empty() && g.id != w.id) {
            return fail("tool name or id");
        }
        if args_value(&g.arguments) != args_value(&w.arguments) {
            return fail("arguments");
        }
    }
    Ok(())
}

#[test]
fn corpus_cases_of_hand_written_grammars() {
    let text = std::fs::read_to_string(CORPUS).expect("the shared corpus");
    let mut ran = 0;
    let mut failures = Vec::new();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        if case["kind"] != "parse" || case["expect_failure"] == true {
            continue;
        }
        let template = case["template"].as_str().unwrap_or("");
        let make: fn(Vec<ToolSpec>, String) -> ChatParser = match template {
            "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use" => hermes,
            "Qwen3-Coder" => qwen3_coder,
            _ => continue,
        };
        let inputs = &case["inputs"];
        let tools: Vec<ToolSpec> =
            inputs["tools"].as_array().into_iter().flatten().filter_map(ToolSpec::from_openai).collect();
        // Continuing the final assistant message: its content was already "said".
        let prefill = if inputs["continue_final_message"] == "content" {
            inputs["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_owned()
        } else {
            String::new()
        };
        let parser = make(tools, prefill);
        let output = case["model_output"].as_str().unwrap();
        let partial = case["is_partial"] == true;
        let want: ChatMessage = serde_json::from_value(case["expected"].clone()).unwrap();
        let id = case["id"].as_str().unwrap();
        let got = parser.parse(output, partial).unwrap();
        ran += 1;
        if let Err(e) = judge(id, &got.message, &want) {
            failures.push(e);
            continue;
        }
        if !partial {
            let (deltas, fin) = chat_common::stream(&parser, &chat_common::chunks(output, 3));
            if ChatMessage::from_deltas(&deltas) != got.message || fin != got {
                failures.push(format!("{id}: streaming disagrees with one-shot"));
            }
        }
    }
    assert!(ran >= 20, "only {ran} cases ran");
    assert!(failures.is_empty(), "{} of {ran} failed:\n{}", failures.len(), failures.join("\n"));
}
