//! From an OpenAI chat-completions request to the template context, and the prompt it renders.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::{Capabilities, ChatTemplate, env};
use crate::error::{Error, ErrorKind};
use crate::request::{ContinueFinal, Request};

/// Tags a model wraps its reasoning in (e.g. `<think>` / `</think>`).
///
/// ```
/// use autoparser::template::{ChatTemplate, ReasoningTags};
/// let t = ChatTemplate::from_source("{% for m in messages %}{{ m.content }}{% endfor %}", "", "").unwrap();
/// assert!(t.reasoning_tags().is_none()); // not a family the crate knows
/// let t = t.with_reasoning_tags(Some(ReasoningTags { start: "<think>".into(), end: "</think>".into() }));
/// assert_eq!(t.reasoning_tags().unwrap().end, "</think>");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningTags {
    /// Opens the reasoning block.
    pub start: String,
    /// Closes it.
    pub end: String,
}

/// What [`ChatTemplate::apply`] renders.
///
/// Without `continue_final_message`, `generation_prompt` is what `add_generation_prompt`
/// appends (computed even when the request did not ask for it); when continuing, it is the
/// tail of the prompt from the start of the final assistant turn.
///
/// ```
/// use autoparser::{template::ChatTemplate, Request};
/// let t = ChatTemplate::from_source("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}\
///                                    {% if add_generation_prompt %}<|assistant|>{% endif %}", "", "").unwrap();
/// let request = Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
/// let rendered = t.apply(&request).unwrap();
/// assert_eq!((rendered.prompt.as_str(), rendered.generation_prompt.as_str()), ("<|user|>Hi<|end|><|assistant|>", "<|assistant|>"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedPrompt {
    /// The full prompt sent to the model.
    pub prompt: String,
    /// The tail of `prompt` the template wrote for the assistant turn the model continues
    /// (the generation prompt, or the opened final message when continuing).
    pub generation_prompt: String,
}

const CONTINUE_MARKER: &str = "XCHATPEGCONTINUEMARKERX";

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidRequest, msg)
}

/// Normalize request messages for this template's needs.
pub(crate) fn prepare_messages(messages: &[Json], caps: &Capabilities) -> Result<Vec<Json>, Error> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let Json::Object(m) = m else {
                return Err(bad(format!("message {i} is not an object")));
            };
            let mut m = m.clone();
            if m.get("role").and_then(Json::as_str) == Some("developer") {
                m.insert("role".into(), "system".into());
            }
            if let Some(r) = m.get("reasoning_content").filter(|r| !r.is_null()).cloned() {
                m.entry("thinking").or_insert(r);
            }
            if let Some(content) = m.get_mut("content") {
                normalize_content(content, caps);
                if content.is_null() && caps.requires_non_null_content {
                    *content = Json::String(String::new());
                }
            }
            let mut m = Json::Object(m);
            if caps.requires_null_content_with_calls {
                empty_content_as_null(&mut m);
            }
            if caps.supports_object_arguments {
                object_arguments(&mut m);
            }
            Ok(m)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(order_tool_results)
}

/// A message with tool calls and empty content gets null content (templates that write calls
/// only for `content is none`).
pub(crate) fn empty_content_as_null(message: &mut Json) {
    let calls = message.get("tool_calls").and_then(Json::as_array).is_some_and(|c| !c.is_empty());
    if calls && message.get("content").and_then(Json::as_str) == Some("") {
        message["content"] = Json::Null;
    }
}

/// A message's tool-call arguments given as JSON text become objects (templates that iterate
/// `arguments.items()` need objects).
pub(crate) fn object_arguments(message: &mut Json) {
    let Some(Json::Array(calls)) = message.get_mut("tool_calls") else { return };
    for call in calls.iter_mut() {
        let Some(f) = call.get_mut("function").and_then(Json::as_object_mut) else { continue };
        if let Some(Json::String(text)) = f.get("arguments")
            && let Ok(obj @ Json::Object(_)) = serde_json::from_str::<Json>(text)
        {
            f.insert("arguments".into(), obj);
        }
    }
}

/// Put each run of tool results in the order of the tool calls they answer (matched by
/// `tool_call_id`): templates pair results with calls by position.
fn order_tool_results(mut messages: Vec<Json>) -> Vec<Json> {
    let role = |m: &Json| m.get("role").and_then(Json::as_str).map(String::from);
    let mut i = 0;
    while i < messages.len() {
        let ids: Vec<String> = match messages[i].get("tool_calls").and_then(Json::as_array) {
            Some(calls) if role(&messages[i]).as_deref() == Some("assistant") => {
                calls.iter().filter_map(|c| c.get("id").and_then(Json::as_str).map(String::from)).collect()
            }
            _ => Vec::new(),
        };
        i += 1;
        if ids.is_empty() {
            continue;
        }
        let start = i;
        while i < messages.len() && role(&messages[i]).as_deref() == Some("tool") {
            i += 1;
        }
        let rank = |m: &Json| m.get("tool_call_id").and_then(Json::as_str).and_then(|id| ids.iter().position(|x| x == id)).unwrap_or(usize::MAX);
        messages[start..i].sort_by_key(rank);
    }
    messages
}

fn normalize_content(content: &mut Json, caps: &Capabilities) {
    match content {
        Json::Array(parts) if !caps.supports_typed_content => {
            let texts: Vec<&str> =
                parts.iter().filter(|p| p.get("type").and_then(Json::as_str) == Some("text")).filter_map(|p| p.get("text").and_then(Json::as_str)).collect();
            if texts.len() == parts.len() {
                *content = Json::String(texts.concat());
            }
        }
        Json::String(s) if caps.supports_typed_content && !caps.supports_string_content => {
            *content = serde_json::json!([{"type": "text", "text": s}]);
        }
        _ => {}
    }
}

/// The context for one render: every variable but `messages` and `add_generation_prompt`.
fn base_context(tmpl: &ChatTemplate, req: &Request) -> Result<Map<String, Json>, Error> {
    let mut ctx = Map::new();
    // As HF: `tools` and `documents` are always defined, `None` when absent.
    let tools = if req.tools.is_empty() { Json::Null } else { Json::Array(req.tools.clone()) };
    ctx.insert("tools".into(), tools);
    ctx.insert("documents".into(), req.documents.clone().unwrap_or(Json::Null));
    ctx.insert("bos_token".into(), tmpl.bos_token().into());
    ctx.insert("eos_token".into(), tmpl.eos_token().into());
    if let Some(on) = req.enable_thinking {
        ctx.insert("enable_thinking".into(), on.into());
    }
    if let Some(e) = &req.reasoning_effort {
        ctx.insert("reasoning_effort".into(), e.clone().into());
    }
    if let Some(schema) = &req.json_schema {
        ctx.insert("response_format".into(), schema.clone());
    }
    for (k, v) in &req.chat_template_kwargs {
        ctx.insert(k.clone(), v.clone());
    }
    if req.chat_template_kwargs.get("preserve_reasoning").and_then(Json::as_bool) == Some(true) {
        // Templates spell "keep earlier turns' reasoning" in different ways.
        for (knob, value) in crate::registry::PRESERVE_REASONING_KNOBS {
            if tmpl.source().contains(knob) && !req.chat_template_kwargs.contains_key(*knob) {
                ctx.insert((*knob).into(), (*value).into());
            }
        }
    }
    ctx.insert(env::NOW_KEY.into(), req.now.unwrap_or(0).into());
    Ok(ctx)
}

fn render_with(tmpl: &ChatTemplate, base: &Map<String, Json>, messages: &[Json], agp: bool) -> Result<String, Error> {
    let mut ctx = base.clone();
    ctx.insert("messages".into(), Json::Array(messages.to_vec()));
    ctx.insert("add_generation_prompt".into(), agp.into());
    tmpl.render_value(minijinja::Value::from(minijinja::value::Serde(&ctx)))
}

/// Byte length of the longest common prefix, on a char boundary.
pub(crate) fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

pub(crate) fn apply(tmpl: &ChatTemplate, req: &Request) -> Result<RenderedPrompt, Error> {
    let mut out = apply_inner(tmpl, req)?;
    let (bos, eos) = (tmpl.bos_token(), tmpl.eos_token());
    if req.add_bos && !bos.is_empty() && out.prompt.starts_with(bos) {
        out.prompt.drain(..bos.len());
        if out.generation_prompt.len() > out.prompt.len() {
            out.generation_prompt = out.prompt.clone();
        }
    }
    if req.add_eos && !eos.is_empty() && out.prompt.ends_with(eos) {
        out.prompt.truncate(out.prompt.len() - eos.len());
        if out.generation_prompt.ends_with(eos) {
            out.generation_prompt.truncate(out.generation_prompt.len() - eos.len());
        }
    }
    Ok(out)
}

fn apply_inner(tmpl: &ChatTemplate, req: &Request) -> Result<RenderedPrompt, Error> {
    let caps = tmpl.capabilities();
    let messages = prepare_messages(&req.messages, &caps)?;
    let base = base_context(tmpl, req)?;
    if req.continue_final_message == ContinueFinal::None {
        let with = render_with(tmpl, &base, &messages, true)?;
        let without = render_with(tmpl, &base, &messages, false)?;
        let generation_prompt = with[common_prefix(&with, &without)..].to_string();
        let prompt = if req.add_generation_prompt { with } else { without };
        return Ok(RenderedPrompt { prompt, generation_prompt });
    }

    let Some((last, history)) = messages.split_last() else {
        return Err(bad("continue_final_message needs at least one message"));
    };
    if last.get("role").and_then(Json::as_str) != Some("assistant") {
        return Err(bad("continue_final_message needs a final assistant message"));
    }
    let text = |field: &str| last.get(field).and_then(Json::as_str).unwrap_or_default().to_string();
    let (reasoning, content) = (text("reasoning_content"), text("content"));
    let mode = req.continue_final_message;
    let prefix_of = |prompt: String| -> RenderedPrompt {
        // A template may refuse the shortened history (e.g. no user message): then all of
        // the prompt counts as generation prompt.
        let prefix = render_with(tmpl, &base, history, false).unwrap_or_default();
        let generation_prompt = prompt[common_prefix(&prompt, &prefix)..].to_string();
        RenderedPrompt { prompt, generation_prompt }
    };

    // The template never shows a final message's reasoning, but the model writes it between
    // known tags: open the assistant turn and write the reasoning (and content) ourselves.
    if let Some(tags) = tmpl.reasoning_tags()
        && (mode == ContinueFinal::Reasoning || !reasoning.is_empty())
        && !tmpl.renders_final_reasoning()
    {
        let mut prompt = render_with(tmpl, &base, history, true)?;
        prompt.push_str(&tags.start);
        prompt.push_str(&reasoning);
        if mode == ContinueFinal::Content {
            prompt.push_str(&tags.end);
            prompt.push_str(&content);
        }
        return Ok(prefix_of(prompt));
    }

    // Render with a marker right after the partial text, and cut there: the text up to the
    // marker is exactly what the template writes before the model's continuation.
    let attempt = |field: &str| -> Result<Option<String>, Error> {
        let mut m = last.as_object().cloned().unwrap_or_default();
        let marked = Json::String(format!("{}{CONTINUE_MARKER}", text(field)));
        m.insert(field.into(), marked.clone());
        if field == "reasoning_content" {
            m.insert("thinking".into(), marked);
        }
        let mut msgs = history.to_vec();
        msgs.push(Json::Object(m));
        let out = render_with(tmpl, &base, &msgs, false)?;
        Ok(out.find(CONTINUE_MARKER).map(|i| out[..i].to_string()))
    };
    let mut cut = None;
    if mode == ContinueFinal::Reasoning {
        // Partial reasoning with empty content may be refused by the template: fall through.
        cut = attempt("reasoning_content").unwrap_or(None);
    }
    if cut.is_none() {
        cut = attempt("content")?;
    }
    let prompt = match cut {
        Some(p) => p,
        // The template drops the final message's text entirely: nothing to continue inside.
        None => render_with(tmpl, &base, &messages, false)?,
    };
    Ok(prefix_of(prompt))
}
