//! The outputs and requests the server benchmarks (`server_paths.rs`, `server_stream.rs`) share:
//! realistic model outputs of a given size, all ASCII except where said, so that 4-byte chunks
//! cut them as tokens would.
#![allow(dead_code)]

use chat_peg::Request;
use serde_json::json;

/// A line of prose with markup that looks like markers (`<b>`, `</n>`, `tool_call`).
const PROSE: &str = "The user wants the <b>weather</b>; a tool_call may help. Let me think about it, step <1> of </n>.\n";

/// About `n` bytes of prose.
pub fn prose(n: usize) -> String {
    let mut s = String::with_capacity(n + PROSE.len());
    while s.len() < n {
        s.push_str(PROSE);
    }
    s
}

/// Half reasoning, half content, `n` bytes in all (Qwen3's `<think>` block).
pub fn reasoning_output(n: usize) -> String {
    format!("<think>\n{}</think>\n\n{}", prose(n / 2), prose(n / 2))
}

/// A tool set: a file writer (a long string argument), a record updater (nested JSON
/// arguments), a weather lookup (a short call).
pub fn tools_request() -> Request {
    let tool = |name: &str, params: serde_json::Value| json!({"type": "function", "function": {"name": name, "description": "A tool.", "parameters": params}});
    Request::from_json(&json!({
        "messages": [{"role": "user", "content": "Please help."}],
        "tools": [
            tool("write_file", json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]})),
            tool("update_records", json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}, "count": {"type": "integer"}}})),
            tool("get_weather", json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]})),
        ],
        "parallel_tool_calls": true,
    }))
    .unwrap()
}

/// Nested JSON arguments of about `n` bytes (`update_records`): objects, arrays, escapes,
/// numbers, literals and a non-ASCII character per item.
pub fn json_args(n: usize) -> String {
    let mut items = Vec::new();
    let (mut len, mut i) = (0, 0);
    while len < n {
        let item = format!(
            "{{\"id\": {i}, \"title\": \"Item number {i} with \\\"quotes\\\" and unicode caf\u{e9} \\u00e9\", \"price\": {}.{:02}, \"tags\": [\"a\", \"bb\", \"ccc\"], \"ok\": {}, \"none\": null, \"dims\": {{\"w\": {}, \"h\": [1, 2, {{\"d\": -3.5e2}}]}}}}",
            i * 7 % 1000,
            i % 100,
            i % 2 == 0,
            i % 13
        );
        len += item.len() + 2;
        items.push(item);
        i += 1;
    }
    format!("{{\"items\": [{}], \"count\": {i}}}", items.join(", "))
}

/// Hermes calls of `update_records` with 16 KB nested arguments, `n` bytes in all.
pub fn json_args_output(n: usize) -> String {
    let mut s = String::from("Updating the records.");
    while s.len() < n {
        s.push_str(&format!("\n<tool_call>\n{{\"name\": \"update_records\", \"arguments\": {}}}\n</tool_call>", json_args(16 * 1024)));
    }
    s
}

/// About `n` bytes of code: quotes, backslashes and newlines, which a JSON string escapes.
pub fn code(n: usize) -> String {
    let mut s = String::with_capacity(n + 100);
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("    let x{i} = format!(\"{{}} \\\\ {{}}\", a, b); // line {i}\n"));
        i += 1;
    }
    s
}

/// One Hermes call of `write_file` whose `content` is about `n` bytes of code, as a JSON string.
pub fn string_arg_output(n: usize) -> String {
    format!("I will write the file.\n<tool_call>\n{}\n</tool_call>", json!({"name": "write_file", "arguments": {"path": "src/main.rs", "content": code(n)}}))
}

/// A `write_file` call with about `n` bytes of code as its `content`, in the call format of
/// each of several templates other than Hermes (XML parameters, key/value tags, JSON after a
/// name or an id, prose the prompt's reasoning block ends in), or reasoning and content in
/// gpt-oss's channels: `(template, output)`, each the template's own form.
pub fn format_outputs(n: usize) -> Vec<(&'static str, String)> {
    let code = code(n);
    let json = serde_json::to_string(&json!({"path": "src/main.rs", "content": code})).unwrap();
    vec![
        (
            "Qwen3-Coder",
            format!(
                "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=content>\n{code}\n</parameter>\n</function>\n</tool_call>"
            ),
        ),
        (
            "GLM-4.6",
            format!(
                "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>src/main.rs</arg_value>\n<arg_key>content</arg_key>\n<arg_value>{code}</arg_value>\n</tool_call>"
            ),
        ),
        ("Mistral-Small-3.2-24B-Instruct-2506", format!("[TOOL_CALLS]write_file[CALL_ID]a1b2c3d4e[ARGS]{json}")),
        (
            "moonshotai-Kimi-K2",
            format!(
                "<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{json}<|tool_call_end|><|tool_calls_section_end|>"
            ),
        ),
        (
            "MiniMax-M2",
            format!(
                "The user wants a file.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"write_file\">\n<parameter name=\"path\">src/main.rs</parameter>\n<parameter name=\"content\">{code}</parameter>\n</invoke>\n</minimax:tool_call>"
            ),
        ),
        ("openai-gpt-oss-120b", format!("<|channel|>analysis<|message|>{}<|end|><|start|>assistant<|channel|>final<|message|>{}", prose(n / 2), prose(n / 2))),
    ]
}

/// A short Hermes call, as most calls are.
pub fn short_call_output() -> String {
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>".to_owned()
}
