//! Runtime parameters: the request's tools and their arguments.
peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<tool_call>")) call* end;
        trigger rule call = "<tool_call>" each_tool(
            "<function=" #tool_name(tool_name) ">" each_arg(
                "<parameter=" arg_name ">" if_string_arg(arg_schema(until("</parameter>")), arg_schema(json)) "</parameter>"
            )* "</function>"
        ) "</tool_call>";
    }
}
fn main() {
    let tools = vec![g::Tool::new("f", serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}))];
    let arena = g::arena(&tools).unwrap();
    assert!(arena.nodes().iter().any(|n| matches!(n, peg_runtime::Node::Schema { raw: true, .. })));
}
