//! Parse one model output, in one shot and as a stream, with a grammar built in Rust.
//!
//! The model writes `<think>…</think>`, then text, then Hermes-style tool calls:
//! `<tool_call>{"name": …, "arguments": {…}}</tool_call>`. The demo prints the parsed message,
//! the streaming deltas for 5-byte chunks, and the lazy GBNF that constrains tool calls.
//!
//! Run with `cargo run --example demo`.

use std::sync::Arc;

use peg_runtime::chat::ParseMode;
use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, NativeBuilder, ToolSpec};
use peg_runtime::gbnf::{GbnfOptions, generate};

const OUTPUT: &str = "<think>\nThe user wants the weather in two cities.\n</think>\n\
Let me check both.\n\
<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n\
<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tōkyō\"}}\n</tool_call>";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        },
        "required": ["city"]
    });

    let arena = NativeBuilder::build(|p| {
        let call = p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.literal("get_weather")) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(p.schema(p.json(), "get-weather-args", schema.clone(), false)))
                << p.tool_close("}"),
        );
        let tool_calls = p.trigger_rule("tool-calls", p.one_or_more((p.space() + "<tool_call>") << call << "</tool_call>"));
        let reasoning = p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>");
        reasoning << (p.content(p.until("<tool_call>")) + p.optional(tool_calls) + p.space() + p.end())
    })?;

    let options = ChatParseOptions { tools: vec![ToolSpec::new("get_weather", schema)], ..Default::default() };
    let parser = ChatParser::new(Arc::new(arena.clone()), options);

    let parsed = parser.parse(OUTPUT, ParseMode::Complete)?;
    println!("== message\n{}", serde_json::to_string_pretty(&parsed.message)?);

    println!("\n== stream (5-byte chunks)");
    let mut stream = parser.stream();
    let mut deltas = Vec::new();
    let mut rest = OUTPUT;
    while !rest.is_empty() {
        let mut cut = rest.len().min(5);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        deltas.extend(stream.push(chunk)?);
        rest = tail;
    }
    let (last, _) = stream.finish()?;
    deltas.extend(last);
    for d in deltas.iter().take(12) {
        println!("{}", serde_json::to_string(d)?);
    }
    println!("... {} deltas in all", deltas.len());
    assert_eq!(ChatMessage::from_deltas(&deltas), parsed.message, "deltas add up to the message");

    println!("\n== lazy grammar (constrains from the first <tool_call> on)");
    println!("{}", generate(&arena, &GbnfOptions { lazy: true, ..Default::default() })?);
    Ok(())
}
