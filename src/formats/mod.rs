//! Real model output formats written with [`chat_peg!`](peg_macros::chat_peg): each module is
//! a specialized parser, its equivalent runtime arena and its GBNF (see the `peg-macros` docs
//! for the generated items). The grammars tag the chat AST shapes (`peg_runtime::chat`), so
//! the chat parser maps their parses to messages. These are the one hand-written definition of
//! each format in the workspace.
//!
//! ```
//! use chat_peg::formats::hermes;
//! let tools = vec![hermes::Tool::new("get_weather", serde_json::json!({"type": "object"}))];
//! let input = br#"Sure.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#;
//! let out = hermes::Parser::new(&tools).parse(input, false).unwrap();
//! let name = out.ast.find_by_tag("tool_name")[0];
//! assert_eq!(out.ast.text(name, input), "get_weather");
//! assert_eq!(out, hermes::arena(&tools).unwrap().parse(input, false).unwrap());
//! ```

use peg_macros::chat_peg;

/// The assistant turn header of the formats' templates (Hermes, Qwen3-Coder).
const TURN_HEADER: &str = "<|im_start|>assistant\n";

/// The prefill of a request (`ChatParseOptions::prefill`): the part of the rendered generation
/// prompt that already belongs to the model's message, i.e. the prompt after the assistant
/// turn header. Empty for a plain generation prompt; when a final assistant message is
/// continued, the text the template wrote of it.
///
/// ```
/// use chat_peg::formats::prefill;
/// assert_eq!(prefill("<|im_start|>assistant\n"), "");
/// assert_eq!(prefill("<|im_start|>assistant\nHello, "), "Hello, ");
/// ```
pub fn prefill(generation_prompt: &str) -> &str {
    generation_prompt.strip_prefix(TURN_HEADER).unwrap_or(generation_prompt)
}

chat_peg! {
    /// Hermes 2 Pro / Hermes 3 / Qwen 2.5: content, then `<tool_call>` blocks holding one JSON
    /// object `{"name": ..., "arguments": {...}}` each.
    pub grammar hermes {
        root = #content(until("<tool_call>")) (tool_call _)* end;
        trigger rule tool_call = #tool(
            #tool_open("<tool_call>") _ "{" _ each_tool(
                json_member("name", "\"" #tool_name(tool_name) "\"") _ "," _
                json_member("arguments", #tool_args(tool_schema(json)))
            ) _ "}" _ #tool_close("</tool_call>")
        );
    }
}

chat_peg! {
    /// Qwen3-Coder: XML-style calls, one `<parameter=NAME>` element per argument, values raw
    /// (the chat mapper converts them by the argument's schema type). The opening
    /// `<tool_call>` is optional, as the model sometimes omits it.
    pub grammar qwen3_coder {
        root = #content(until("<tool_call>", "<function=")) (tool_call _)* end;
        trigger rule tool_call = #tool(
            #tool_open(("<tool_call>" _)? "<function=") each_tool(
                #tool_name(tool_name) ">" _ (each_arg(#tool_arg(
                    #tool_arg_open("<parameter=") #tool_arg_name(arg_name) ">" "\n"?
                    #tool_arg_string_value(arg_schema(until("\n</parameter>", "</parameter>"))) "\n"?
                    #tool_arg_close("</parameter>")
                )) _)*
            ) #tool_close("</function>" (_ "</tool_call>")?)
        );
    }
}
