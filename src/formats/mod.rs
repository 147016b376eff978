//! Real model output formats written with [`chat_peg!`](crate::chat_peg): each module is
//! a specialized parser, its equivalent runtime arena, its GBNF and trigger words, and `Chat`,
//! its parses mapped to messages and streamed deltas (see the `peg-macros` docs for the
//! generated items). The grammars tag the chat AST shapes (`peg_runtime::chat`). These are the
//! one hand-written definition of each format in the workspace.
//!
//! ```
//! use chat_peg::formats::kimi_k2;
//! use chat_peg::peg_runtime::chat::{ChatParseOptions, ToolSpec};
//! let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
//! let chat = kimi_k2::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
//! let output = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>";
//! let mut stream = chat.stream();
//! for token in ["<|tool_call_begin|>func", "tions.get_", "weather:0<|tool_call_argument_begin|>{\"ci", "ty\": \"Paris\"}<|tool_call_end|>"] {
//!     stream.push(token).unwrap();
//! }
//! let call = &stream.finish().unwrap().1.message.tool_calls[0];
//! assert_eq!((call.id.as_str(), call.name.as_str()), ("functions.get_weather:0", "get_weather"));
//! assert_eq!(kimi_k2::TRIGGERS, ["<|tool_call_begin|>"]);
//! ```
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

use crate::chat_peg;

/// The assistant turn headers of the formats' templates: ChatML (Hermes, Qwen3-Coder), Kimi K2,
/// DeepSeek. Mistral's templates write none.
const TURN_HEADERS: [&str; 3] = ["<|im_start|>assistant\n", "<|im_assistant|>assistant<|im_middle|>", "<｜Assistant｜>"];

/// The prefill of a request (`ChatParseOptions::prefill`): the part of the rendered generation
/// prompt that already belongs to the model's message, i.e. the prompt after the assistant
/// turn header. Empty for a plain generation prompt; when a final assistant message is
/// continued, or the template opens a reasoning block, the text the template wrote of it.
///
/// ```
/// use chat_peg::formats::prefill;
/// assert_eq!(prefill("<|im_start|>assistant\n"), "");
/// assert_eq!(prefill("<|im_start|>assistant\nHello, "), "Hello, ");
/// assert_eq!(prefill("<｜Assistant｜><think>"), "<think>");
/// ```
pub fn prefill(generation_prompt: &str) -> &str {
    TURN_HEADERS.iter().find_map(|h| generation_prompt.strip_prefix(h)).unwrap_or(generation_prompt)
}

chat_peg! {
    /// Hermes 2 Pro / Hermes 3 / Qwen 2.5: content, then `<tool_call>` blocks holding one JSON
    /// object `{"name": ..., "arguments": {...}}` each.
    ///
    /// ```
    /// use chat_peg::formats::hermes;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = hermes::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// let output = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.content.as_str(), m.tool_calls[0].arguments.as_str()), ("Sure.", r#"{"city": "Paris"}"#));
    /// assert_eq!(hermes::TRIGGERS, ["<tool_call>"]);
    /// ```
    pub grammar hermes {
        doc_examples(chat_peg::formats::hermes, runtime = chat_peg::peg_runtime);
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
    ///
    /// ```
    /// use chat_peg::formats::qwen3_coder;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let schema = serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}});
    /// let tools = vec![ToolSpec::new("get_weather", schema)];
    /// let chat = qwen3_coder::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// // Raw values are typed by the schema: `days` is an integer.
    /// let output = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris", "days": 3}"#);
    /// ```
    pub grammar qwen3_coder {
        doc_examples(chat_peg::formats::qwen3_coder, runtime = chat_peg::peg_runtime);
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

chat_peg! {
    /// Mistral Small 3.2 / Devstral: content, then `[TOOL_CALLS]NAME[ARGS]{...}` per call, an
    /// optional `[CALL_ID]ID` before the arguments.
    ///
    /// ```
    /// use chat_peg::formats::mistral;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = mistral::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// let m = chat.parse(r#"[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}"#, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.tool_calls[0].id.as_str(), m.tool_calls[0].name.as_str()), ("a1B2c3D4e", "get_weather"));
    /// ```
    pub grammar mistral {
        doc_examples(chat_peg::formats::mistral, runtime = chat_peg::peg_runtime);
        root = answer;
        rule answer = #content(until("[TOOL_CALLS]")) (tool_call _)* end;
        trigger rule tool_call = #tool(
            #tool_open("[TOOL_CALLS]") each_tool(
                #tool_name(tool_name) ("[CALL_ID]" #tool_id(["a-zA-Z0-9"]+))? "[ARGS]" #tool_args(tool_schema(json))
            )
        );
    }

    /// Ministral 3 reasoning models: [`mistral`] after an optional `[THINK]...[/THINK]` block
    /// (for requests that separate reasoning; otherwise [`mistral`] keeps it in the content).
    ///
    /// ```
    /// use chat_peg::formats::mistral_reasoning;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = mistral_reasoning::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// let output = r#"[THINK]Paris, then.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}"#;
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Paris, then.", "Checking."));
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
    /// ```
    pub grammar mistral_reasoning extends mistral {
        doc_examples(chat_peg::formats::mistral_reasoning, runtime = chat_peg::peg_runtime);
        root = reasoning? answer;
        rule reasoning = "[THINK]" #reasoning(until("[/THINK]")) "[/THINK]";
    }

    /// [`mistral_reasoning`] for a request with a response schema: the answer is one JSON value,
    /// bare or in a fenced `json` code block; the content is the value.
    ///
    /// ```
    /// use chat_peg::formats::mistral_reasoning_json;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = mistral_reasoning_json::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// let output = "[THINK]A number.[/THINK]```json\n{\"n\": 7}\n```";
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("A number.", r#"{"n": 7}"#));
    /// ```
    #[allow(deprecated)] // The calls of `mistral` are unreachable: such a request has none.
    pub grammar mistral_reasoning_json extends mistral_reasoning {
        doc_examples(chat_peg::formats::mistral_reasoning_json, runtime = chat_peg::peg_runtime);
        rule answer = _ ("```json" _ #content(json) _ "```" / #content(json)) _ end;
    }

    /// Mistral NeMo: content, then `[TOOL_CALLS]` and a JSON array of
    /// `{"name": ..., "arguments": {...}, "id": ...}` calls.
    ///
    /// ```
    /// use chat_peg::formats::mistral_nemo;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = mistral_nemo::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// let output = r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]"#;
    /// let call = &chat.parse(output, ParseMode::Complete).unwrap().message.tool_calls[0];
    /// assert_eq!((call.id.as_str(), call.arguments.as_str()), ("a1B2c3D4e", r#"{"city": "Paris"}"#));
    /// ```
    pub grammar mistral_nemo {
        doc_examples(chat_peg::formats::mistral_nemo, runtime = chat_peg::peg_runtime);
        root = #content(until("[TOOL_CALLS]")) tool_calls? _ end;
        trigger rule tool_calls = "[TOOL_CALLS]" _ "[" _ tool_call (_ "," _ tool_call)* _ "]";
        rule tool_call = #tool(
            #tool_open("{") _ each_tool(
                json_member("name", "\"" #tool_name(tool_name) "\"") _ "," _
                json_member("arguments", #tool_args(tool_schema(json)))
            ) (_ "," _ json_member("id", "\"" #tool_id(["a-zA-Z0-9"]+) "\""))? _ #tool_close("}")
        );
    }
}

chat_peg! {
    /// DeepSeek V3.1: reasoning closed by `</think>` (the prompt opens it, or closes it at
    /// once), content, then one `<｜tool▁calls▁begin｜>` section of calls
    /// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`. A second `<think>`
    /// (the template writes one before a continued message's own) is a recovery.
    ///
    /// ```
    /// use chat_peg::formats::deepseek_v3_1;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = deepseek_v3_1::Chat::new(ChatParseOptions { tools, prefill: "<think>".into(), ..Default::default() }).unwrap();
    /// // The prompt opened the reasoning.
    /// let output = "Paris.</think>Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>\
    ///               {\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Paris.", "Checking."));
    /// assert_eq!(m.tool_calls[0].name, "get_weather");
    /// ```
    pub grammar deepseek_v3_1 {
        doc_examples(chat_peg::formats::deepseek_v3_1, runtime = chat_peg::peg_runtime);
        root = ("<think>" #recovered.reasoning_marker("<think>")? #reasoning(until("</think>")) "</think>")? #content(until("<｜tool▁calls▁begin｜>")) tool_calls? _ end;
        trigger rule tool_calls = "<｜tool▁calls▁begin｜>" _ (tool_call _)+ "<｜tool▁calls▁end｜>";
        rule tool_call = #tool(
            #tool_open("<｜tool▁call▁begin｜>") each_tool(
                #tool_name(tool_name) "<｜tool▁sep｜>" #tool_args(tool_schema(json))
            ) _ #tool_close("<｜tool▁call▁end｜>")
        );
    }
}

chat_peg! {
    /// Kimi K2: optional reasoning, content, then calls
    /// `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>`
    /// whose id is `functions.NAME:IDX` (the name tag nests in the id tag). The section markers
    /// around the calls, a call's end marker and the reasoning's close may be missing.
    ///
    /// ```
    /// use chat_peg::formats::kimi_k2;
    /// use chat_peg::peg_runtime::chat::{ChatParseOptions, ParseMode, ToolSpec};
    /// let tools = vec![ToolSpec::new("get_weather", serde_json::json!({"type": "object"}))];
    /// let chat = kimi_k2::Chat::new(ChatParseOptions { tools, ..Default::default() }).unwrap();
    /// // Without the reasoning's close and the call's end marker.
    /// let output = "<think>Paris.<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}";
    /// let m = chat.parse(output, ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.reasoning_content.as_str(), m.tool_calls[0].id.as_str()), ("Paris.", "functions.get_weather:0"));
    /// ```
    pub grammar kimi_k2 {
        doc_examples(chat_peg::formats::kimi_k2, runtime = chat_peg::peg_runtime);
        root = ("<think>" #reasoning(until("</think>", "<|tool_calls_section_begin|>", "<|tool_call_begin|>")) "</think>"?)?
            #content(until("<|tool_calls_section_begin|>", "<|tool_call_begin|>"))
            ("<|tool_calls_section_begin|>" _)? (tool_call _)* ("<|tool_calls_section_end|>" _)? end;
        trigger rule tool_call = #tool(
            #tool_open("<|tool_call_begin|>") each_tool(
                #tool_id("functions." #tool_name(tool_name) ":" ["0-9"]+) "<|tool_call_argument_begin|>" #tool_args(tool_schema(json))
            ) _ #tool_close("<|tool_call_end|>"?)
        );
    }
}
