// The generated trigger words, and a grammar's parse mapped to a message and streamed with the
// macro's own parser.
use peg_runtime::chat::{stream_pieces, ChatMessage, ChatParseOptions, ParseMode, ToolSpec};

peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<call>", "<fn ")) (call _)* end;
        trigger rule call = #tool(("<call>" _)? #tool_open("<fn ") each_tool(#tool_name(tool_name) ">" #tool_args(tool_schema(json))) #tool_close("</fn>"));
    }
}

fn main() {
    assert_eq!(g::TRIGGERS, ["<call>", "<fn "]);
    let tools = vec![ToolSpec::new("f", serde_json::json!({"type": "object"}))];
    let chat = g::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    let output = "Sure.<call><fn f>{\"a\": 1}</fn>\n<fn f>{}</fn>";
    let message = chat.parse(output, ParseMode::Complete).unwrap().message;
    assert_eq!((message.content.as_str(), message.tool_calls.len()), ("Sure.", 2));
    let mut stream = chat.stream();
    let mut deltas = Vec::new();
    for piece in stream_pieces(output, &[3]) {
        deltas.extend(stream.push(piece).unwrap());
    }
    deltas.extend(stream.finish().unwrap().0);
    assert_eq!(ChatMessage::from_deltas(&deltas), message);
}
