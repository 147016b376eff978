//! A chat request, as the generator needs it.

use peg_runtime::chat::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `tool_choice` of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model may call tools or answer.
    #[default]
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call tools.
    None,
}

/// Where reasoning goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningFormat {
    /// Reasoning stays in the content, markers and all.
    None,
    /// Reasoning is extracted into `reasoning_content` (`auto`, `deepseek`).
    #[default]
    Extract,
}

/// Whether the last (assistant) message is continued by the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinueFinal {
    /// A new assistant turn.
    #[default]
    None,
    /// The model continues the last message's content.
    Content,
    /// The model continues the last message's reasoning.
    Reasoning,
}

/// The inputs of one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// OpenAI-style messages.
    pub messages: Vec<Value>,
    /// OpenAI-style tool definitions.
    pub tools: Vec<Value>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Several calls allowed in one message.
    pub parallel_tool_calls: bool,
    /// A JSON schema the response must follow (`response_format`), if any.
    pub json_schema: Option<Value>,
    /// Reasoning extraction.
    pub reasoning_format: ReasoningFormat,
    /// Thinking on or off (passed to the template as `enable_thinking`).
    pub enable_thinking: bool,
    /// Append the generation prompt.
    pub add_generation_prompt: bool,
    /// Continue the final assistant message instead of starting a new turn.
    pub continue_final: ContinueFinal,
    /// Extra template variables (`chat_template_kwargs`), `bos_token`, `eos_token`, ...
    pub extra_context: serde_json::Map<String, Value>,
    /// The tokenizer adds the BOS token itself: a BOS the template renders first is cut from
    /// the prompt.
    #[serde(default)]
    pub add_bos: bool,
    /// The tokenizer adds the EOS token itself: an EOS the template renders last is cut.
    #[serde(default)]
    pub add_eos: bool,
}

impl Request {
    /// The request's functions as (name, parameters schema), longest name first: in an ordered
    /// choice a name that prefixes another (`f` vs `f_with_opt`) must come after it.
    pub fn tool_schemas(&self) -> Vec<(String, Value)> {
        let mut tools: Vec<(String, Value)> = self.tools.iter().filter_map(ToolSpec::from_openai).map(|t| (t.name, t.parameters)).collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.0.len()));
        tools
    }

    /// Reads the `inputs` object of a corpus case (`messages`, `tools`, `tool_choice`,
    /// `parallel_tool_calls`, `json_schema`, `reasoning_format`, `enable_thinking`,
    /// `add_generation_prompt`, `continue_final_message`, `chat_template_kwargs`, `now`,
    /// `add_bos`, `add_eos`).
    pub fn from_inputs(inputs: &Value) -> Request {
        let s = |k: &str| inputs.get(k).and_then(Value::as_str).unwrap_or("");
        let json_schema = match inputs.get("json_schema") {
            Some(Value::String(t)) if !t.trim().is_empty() => serde_json::from_str(t).ok(),
            Some(v @ Value::Object(_)) => Some(v.clone()),
            _ => None,
        };
        let mut extra = serde_json::Map::new();
        if let Some(now) = inputs.get("now").filter(|v| v.is_number()) {
            extra.insert("now".into(), now.clone());
        }
        if let Some(Value::Object(m)) = inputs.get("chat_template_kwargs") {
            extra.extend(m.clone());
        }
        Request {
            messages: inputs.get("messages").and_then(Value::as_array).cloned().unwrap_or_default(),
            tools: inputs.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
            tool_choice: match s("tool_choice") {
                "required" => ToolChoice::Required,
                "none" => ToolChoice::None,
                _ => ToolChoice::Auto,
            },
            parallel_tool_calls: inputs.get("parallel_tool_calls").and_then(Value::as_bool).unwrap_or(false),
            json_schema,
            reasoning_format: if s("reasoning_format") == "none" { ReasoningFormat::None } else { ReasoningFormat::Extract },
            enable_thinking: inputs.get("enable_thinking").and_then(Value::as_bool).unwrap_or(true),
            add_generation_prompt: inputs.get("add_generation_prompt").and_then(Value::as_bool).unwrap_or(true),
            continue_final: match s("continue_final_message") {
                "content" => ContinueFinal::Content,
                "reasoning" => ContinueFinal::Reasoning,
                _ => ContinueFinal::None,
            },
            extra_context: extra,
            add_bos: inputs.get("add_bos").and_then(Value::as_bool).unwrap_or(false),
            add_eos: inputs.get("add_eos").and_then(Value::as_bool).unwrap_or(false),
        }
    }

    /// A copy whose tool-call arguments given as JSON text are objects (templates that iterate
    /// `arguments.items()` need objects).
    pub fn with_object_arguments(&self) -> Request {
        let mut r = self.clone();
        for m in &mut r.messages {
            let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) else { continue };
            for c in calls {
                let Some(f) = c.get_mut("function") else { continue };
                if let Some(Value::String(text)) = f.get("arguments") {
                    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
                        f["arguments"] = v;
                    }
                }
            }
        }
        r
    }

    /// The template context for this request.
    pub fn context(&self, add_generation_prompt: bool) -> Value {
        self.context_with(&self.messages, add_generation_prompt)
    }

    /// The template context with other messages.
    pub fn context_with(&self, messages: &[Value], add_generation_prompt: bool) -> Value {
        let mut c = serde_json::json!({
            "messages": messages,
            "add_generation_prompt": add_generation_prompt,
            "enable_thinking": self.enable_thinking,
            "bos_token": "",
            "eos_token": "",
        });
        if !self.tools.is_empty() {
            c["tools"] = Value::Array(self.tools.clone());
        }
        for (k, v) in &self.extra_context {
            c[k] = v.clone();
        }
        c
    }
}
