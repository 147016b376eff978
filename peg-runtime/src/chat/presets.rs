//! Ready-made arenas for two widespread output formats, for servers that know their model's
//! format and for tests and benchmarks that need a realistic grammar of each tool shape. Other
//! formats are built with the builders, or learned from a chat template by `autoparser`.

use super::builder::{ConstructedBuilder, NativeBuilder};
use crate::Arena;

/// Hermes / Qwen 2.5 style, the native shape: an optional `<think>…</think>` block, content,
/// then calls `<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>` (arguments as JSON
/// or as a Python literal), each followed by optional whitespace.
///
/// ```
/// use std::sync::Arc;
/// use peg_runtime::chat::{presets, ChatParseOptions, ChatParser};
///
/// let parser = ChatParser::new(Arc::new(presets::hermes()), ChatParseOptions::default());
/// let out = parser.parse(r#"Sure.<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>"#, peg_runtime::chat::ParseMode::Complete).unwrap();
/// assert_eq!(out.message.content, "Sure.");
/// assert_eq!(out.message.tool_calls[0].arguments, r#"{"x": 1}"#);
/// ```
pub fn hermes() -> Arena {
    NativeBuilder::build(|p| {
        let reasoning = p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>");
        let call = p.tool(
            p.tool_open("{")
                << p.json_member("name", "\"" + p.tool_name(p.json_string_content()) + "\"")
                << ","
                << p.json_member("arguments", p.tool_args(p.json() | p.python()))
                << p.tool_close("}"),
        );
        reasoning + p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>" << call << "</tool_call>" << p.space()) + p.end()
    })
    .expect("the Hermes grammar is valid")
}

/// Qwen3-Coder style, the constructed shape: an optional `<think>…</think>` block, content, then
/// calls `<tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n…</function>\n</tool_call>`
/// whose values are raw text (typed by the tool's schema when the message is built).
///
/// ```
/// use std::sync::Arc;
/// use peg_runtime::chat::{presets, ChatParseOptions, ChatParser};
///
/// let parser = ChatParser::new(Arc::new(presets::qwen3_coder()), ChatParseOptions::default());
/// let out = "<tool_call>\n<function=f>\n<parameter=path>\na.txt\n</parameter>\n</function>\n</tool_call>";
/// let msg = parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap().message;
/// assert_eq!(msg.tool_calls[0].arguments, r#"{"path": "a.txt"}"#);
/// ```
pub fn qwen3_coder() -> Arena {
    ConstructedBuilder::build(|p| {
        let reasoning = p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>");
        let name = || p.chars("[a-zA-Z0-9_.-]", 1, None);
        let arg = p.tool_arg(
            p.tool_arg_open("<parameter=" + p.tool_arg_name(name()) + ">\n")
                + p.tool_arg_string_value(p.until("\n</parameter>"))
                + p.tool_arg_close("\n</parameter>\n"),
        );
        let call = p.tool(p.tool_open("<function=" + p.tool_name(name()) + ">\n") + p.zero_or_more(arg) + p.tool_close("</function>"));
        reasoning + p.content(p.until("<tool_call>")) + p.zero_or_more("<tool_call>\n" + call + "\n</tool_call>" + p.space()) + p.end()
    })
    .expect("the Qwen3-Coder grammar is valid")
}
