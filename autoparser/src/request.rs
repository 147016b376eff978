//! The one request type: what a chat-completions request asks of a template, for rendering a
//! prompt ([`ChatTemplate::apply`](crate::template::ChatTemplate::apply)) and for preparing the
//! parser and grammar of a request ([`Model::prepare`](crate::Model::prepare)).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `tool_choice` of a request.
///
/// ```
/// use autoparser::{Request, ToolChoice};
/// let choice = |v: serde_json::Value| Request::from_json(&serde_json::json!({"tool_choice": v})).unwrap().tool_choice;
/// assert_eq!(choice("none".into()), ToolChoice::None);
/// assert_eq!(choice(serde_json::json!({"type": "function", "function": {"name": "now"}})), ToolChoice::Required);
/// assert_eq!(choice(serde_json::Value::Null), ToolChoice::Auto);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model may call tools or answer.
    #[default]
    Auto,
    /// The model must call a tool (also a `{"type": "function", ...}` object naming one).
    Required,
    /// The model must not call tools.
    None,
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            Some(Value::String(s)) => match s.as_str() {
                "required" => ToolChoice::Required,
                "none" => ToolChoice::None,
                "auto" | "" => ToolChoice::Auto,
                other => return Err(serde::de::Error::custom(format!("tool_choice must be auto, required or none, not {other:?}"))),
            },
            Some(Value::Object(_)) => ToolChoice::Required,
            None | Some(Value::Null) => ToolChoice::Auto,
            Some(other) => return Err(serde::de::Error::custom(format!("tool_choice must be a string or an object naming a function, not {other}"))),
        })
    }
}

/// Where reasoning goes.
///
/// ```
/// use autoparser::{template::ChatTemplate, Model, ReasoningFormat, Request};
/// use peg_runtime::chat::{ParseMode, Strictness};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
///            {{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let mut request = Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
/// let parse = |request: &Request| {
///     let parser = model.prepare(request).unwrap().parser(Strictness::Lenient);
///     parser.parse("<think>Hm.</think>Hello", ParseMode::Complete).unwrap().message
/// };
/// let m = parse(&request);
/// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Hm.", "Hello"));
/// request.reasoning_format = ReasoningFormat::None;
/// assert_eq!(parse(&request).content, "<think>Hm.</think>Hello");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningFormat {
    /// Reasoning stays in the content, markers and all.
    None,
    /// Reasoning is extracted into `reasoning_content` (`auto`, `deepseek`, ...).
    #[default]
    Extract,
}

impl<'de> Deserialize<'de> for ReasoningFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Servers name their extraction styles differently (`auto`, `deepseek`, `deepseek-legacy`):
        // all of them extract.
        Ok(match Option::<String>::deserialize(d)?.as_deref() {
            Some("none") => ReasoningFormat::None,
            _ => ReasoningFormat::Extract,
        })
    }
}

/// Whether the final (assistant) message is continued by the model.
///
/// ```
/// use autoparser::{template::ChatTemplate, ContinueFinal, Request};
/// let t = ChatTemplate::from_source("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}\
///                                    {% if add_generation_prompt %}<|assistant|>{% endif %}", "", "").unwrap();
/// let request = Request::from_json(&serde_json::json!({
///     "messages": [{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2,"}],
///     "continue_final_message": true,
/// })).unwrap();
/// assert_eq!(request.continue_final_message, ContinueFinal::Content);
/// let rendered = t.apply(&request).unwrap();
/// assert_eq!(rendered.prompt, "<|user|>Count<|end|><|assistant|>1, 2,"); // the model goes on from there
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinueFinal {
    /// A new assistant turn.
    #[default]
    None,
    /// The model continues the final message's `content`.
    Content,
    /// The model continues the final message's `reasoning_content`.
    Reasoning,
}

impl<'de> Deserialize<'de> for ContinueFinal {
    /// `true`/`false` (the Hugging Face flag), `null`, or `"none"`/`"content"`/`"reasoning"`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            Some(Value::Bool(true)) => ContinueFinal::Content,
            None | Some(Value::Bool(false)) => ContinueFinal::None,
            Some(Value::String(s)) => match s.as_str() {
                "none" | "" => ContinueFinal::None,
                "content" => ContinueFinal::Content,
                "reasoning" => ContinueFinal::Reasoning,
                other => return Err(serde::de::Error::custom(format!("continue_final_message must be none, content or reasoning, not {other:?}"))),
            },
            Some(other) => return Err(serde::de::Error::custom(format!("continue_final_message must be a boolean or a string, not {other}"))),
        })
    }
}

/// An OpenAI-style chat request, deserialized from the request JSON (unknown fields are
/// ignored, `null` means the default).
///
/// ```
/// use autoparser::{ContinueFinal, Request, ToolChoice};
/// let req: Request = serde_json::from_value(serde_json::json!({
///     "messages": [{"role": "user", "content": "Hi"}],
///     "tool_choice": "required",
///     "json_schema": "{\"type\": \"object\"}",
///     "continue_final_message": false,
/// })).unwrap();
/// assert_eq!(req.tool_choice, ToolChoice::Required);
/// assert_eq!(req.json_schema, Some(serde_json::json!({"type": "object"})));
/// assert_eq!(req.continue_final_message, ContinueFinal::None);
/// assert!(req.add_generation_prompt); // a server request opens the assistant turn
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Request {
    /// Conversation messages (`role`, `content` as text or parts, `tool_calls`,
    /// `reasoning_content`, `tool_call_id`, `name`...).
    #[serde(deserialize_with = "null_as_default")]
    pub messages: Vec<Value>,
    /// Tool definitions (`{"type": "function", "function": {...}}`).
    #[serde(deserialize_with = "null_as_default")]
    pub tools: Vec<Value>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Several calls allowed in one message.
    #[serde(deserialize_with = "null_as_default")]
    pub parallel_tool_calls: bool,
    /// A JSON schema the response must follow, as an object or as JSON text (empty text: none).
    /// The template sees it as `response_format`.
    #[serde(deserialize_with = "schema_object_or_text")]
    pub json_schema: Option<Value>,
    /// Reasoning extraction.
    pub reasoning_format: ReasoningFormat,
    /// Thinking on or off (`enable_thinking`). Unset, [`ChatTemplate::apply`] leaves the
    /// variable undefined, as Hugging Face does, and [`Model::prepare`] passes `true`, as
    /// llama.cpp's server does.
    ///
    /// [`ChatTemplate::apply`]: crate::template::ChatTemplate::apply
    /// [`Model::prepare`]: crate::Model::prepare
    pub enable_thinking: Option<bool>,
    /// Passed as `reasoning_effort` when set.
    pub reasoning_effort: Option<String>,
    /// RAG documents, passed through as `documents`.
    pub documents: Option<Value>,
    /// Open the assistant turn (the template's generation prompt). Default: true.
    #[serde(deserialize_with = "null_as_true")]
    pub add_generation_prompt: bool,
    /// Continue the final assistant message instead of opening a new turn.
    pub continue_final_message: ContinueFinal,
    /// Extra template variables, applied last.
    #[serde(deserialize_with = "null_as_default")]
    pub chat_template_kwargs: Map<String, Value>,
    /// The clock `strftime_now` reads (Unix seconds, UTC). Default: the Unix epoch.
    pub now: Option<i64>,
    /// The tokenizer adds BOS itself: a BOS the template writes first is cut from the prompt.
    #[serde(deserialize_with = "null_as_default")]
    pub add_bos: bool,
    /// The tokenizer adds EOS itself: an EOS the template writes last is cut.
    #[serde(deserialize_with = "null_as_default")]
    pub add_eos: bool,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: false,
            json_schema: None,
            reasoning_format: ReasoningFormat::Extract,
            enable_thinking: None,
            reasoning_effort: None,
            documents: None,
            add_generation_prompt: true,
            continue_final_message: ContinueFinal::None,
            chat_template_kwargs: Map::new(),
            now: None,
            add_bos: false,
            add_eos: false,
        }
    }
}

impl Request {
    /// Reads a request from its JSON (the chat-completions body, or a corpus case's `inputs`)
    /// and [`validate`](Request::validate)s it. An error names the field at fault.
    ///
    /// ```
    /// use autoparser::{ErrorKind, Request};
    /// let err = Request::from_json(&serde_json::json!({"messages": "Hi"})).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    /// assert!(err.to_string().contains("messages"), "{err}");
    /// ```
    pub fn from_json(json: &Value) -> Result<Request, crate::Error> {
        let req: Request = serde_path_to_error::deserialize(json).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            invalid(format!("{field}: {inner}")).with_source(inner)
        })?;
        req.validate()?;
        Ok(req)
    }

    /// Checks what the types alone do not: every message is an object with a string `role`,
    /// every tool an object naming its function, with object `parameters` if any.
    /// [`Model::prepare`](crate::Model::prepare) checks each request it is given.
    ///
    /// ```
    /// use autoparser::{ErrorKind, Request};
    /// let mut request = Request::default();
    /// request.messages.push(serde_json::json!({"content": "Hi"})); // no role
    /// assert_eq!(request.validate().unwrap_err().kind(), ErrorKind::InvalidRequest);
    /// request.messages[0]["role"] = "user".into();
    /// assert!(request.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), crate::Error> {
        for (i, m) in self.messages.iter().enumerate() {
            let Some(m) = m.as_object() else { return Err(invalid(format!("messages[{i}]: a message must be an object, not {m}"))) };
            if !m.get("role").is_some_and(Value::is_string) {
                return Err(invalid(format!("messages[{i}].role: a message needs a role (a string)")));
            }
        }
        for (i, t) in self.tools.iter().enumerate() {
            let function = t.get("function").unwrap_or(t);
            if !function.get("name").is_some_and(Value::is_string) {
                return Err(invalid(format!("tools[{i}]: a tool must be an object naming its function (`function.name`), not {t}")));
            }
            if let Some(p) = function.get("parameters").filter(|p| !p.is_null() && !p.is_object()) {
                return Err(invalid(format!("tools[{i}].function.parameters: must be a JSON schema object, not {p}")));
            }
        }
        Ok(())
    }
}

fn invalid(message: String) -> crate::Error {
    crate::Error::new(crate::ErrorKind::InvalidRequest, message)
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn null_as_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

fn schema_object_or_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => serde_json::from_str(&text).map(Some).map_err(|e| serde::de::Error::custom(format!("json_schema is not valid JSON: {e}"))),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        None | Some(Value::Null) => Ok(None),
        Some(other) => Err(serde::de::Error::custom(format!("json_schema must be an object or JSON text, not {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error_of(req: Value) -> String {
        let err = Request::from_json(&req).expect_err("a bad request is refused");
        assert_eq!(err.kind(), crate::ErrorKind::InvalidRequest);
        err.to_string()
    }

    /// A bad request is an error naming the field, never a silent default.
    #[test]
    fn bad_requests_name_the_field() {
        let user = json!([{"role": "user", "content": "Hi"}]);
        let cases = [
            (json!({"messages": user, "tools": {"type": "function", "function": {"name": "f"}}, "tool_choice": "required"}), "tools"),
            (json!({"messages": "Hi"}), "messages"),
            (json!({"messages": [5]}), "messages[0]"),
            (json!({"messages": [{"content": "Hi"}]}), "messages[0].role"),
            (json!({"messages": user, "tools": [5]}), "tools[0]"),
            (json!({"messages": user, "tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]}), "tools[0].function.parameters"),
            (json!({"messages": user, "parallel_tool_calls": "yes"}), "parallel_tool_calls"),
            (json!({"messages": user, "add_generation_prompt": 1}), "add_generation_prompt"),
            (json!({"messages": user, "enable_thinking": "false"}), "enable_thinking"),
            (json!({"messages": user, "tool_choice": 5}), "tool_choice"),
            (json!({"messages": user, "json_schema": 5}), "json_schema"),
            (json!({"messages": user, "chat_template_kwargs": []}), "chat_template_kwargs"),
        ];
        for (req, field) in cases {
            let msg = error_of(req.clone());
            assert!(msg.contains(field), "{req}: {msg:?} does not name {field}");
        }
    }

    #[test]
    fn nulls_mean_the_defaults() {
        let req =
            Request::from_json(&json!({"messages": null, "tools": null, "tool_choice": null, "parallel_tool_calls": null, "add_generation_prompt": null}));
        assert_eq!(req.unwrap(), Request::default());
    }
}
