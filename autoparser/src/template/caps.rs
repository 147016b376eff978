//! Capability detection by probing renders.
//!
//! Each probe renders a small conversation with unique marker strings and checks which markers
//! reach the output. A probe that raises counts as "not supported".

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::{ChatTemplate, Metered, Render};

/// What a chat template can express, detected by rendering probes.
///
/// ```
/// use autoparser::template::ChatTemplate;
/// let t = ChatTemplate::from_source("{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}{% endif %}\
///                                    <|{{ m.role }}|>{{ m.content }}{% endfor %}", "", "").unwrap();
/// let caps = t.capabilities();
/// assert!(!caps.supports_system_role && !caps.supports_tools && caps.supports_string_content);
/// assert_eq!(caps.get("supports_system_role"), Some(false));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Capabilities {
    /// A leading `system` message is rendered.
    pub supports_system_role: bool,
    /// Tool definitions passed as `tools` are rendered.
    pub supports_tools: bool,
    /// Assistant `tool_calls` are rendered.
    pub supports_tool_calls: bool,
    /// Two tool calls in one assistant message are both rendered.
    pub supports_parallel_tool_calls: bool,
    /// Tool-call `arguments` given as a JSON object render as JSON (not a Python repr).
    pub supports_object_arguments: bool,
    /// Message `content` given as a string is rendered.
    pub supports_string_content: bool,
    /// Message `content` given as typed parts (`[{"type": "text", "text": ..}]`) is rendered
    /// as its text.
    pub supports_typed_content: bool,
    /// `reasoning_content` of an earlier assistant turn (before the last user message) is kept.
    pub supports_preserve_reasoning: bool,
    /// The template reads `reasoning_effort` (statically, or its output changes with it).
    pub supports_reasoning_effort: bool,
    /// An assistant tool-call message with `content: null` fails to render but renders with
    /// `""` ([`ChatTemplate::apply`](super::ChatTemplate::apply) then sends `""`).
    pub requires_non_null_content: bool,
    /// An assistant message's tool calls render only with `content: null` (DeepSeek V3 tests
    /// `message['content'] is none`): [`ChatTemplate::apply`](super::ChatTemplate::apply) sends
    /// a call message's empty content as null.
    pub requires_null_content_with_calls: bool,
}

impl Capabilities {
    /// The capabilities as `(name, value)` pairs, names as in the corpus.
    pub fn to_pairs(&self) -> [(&'static str, bool); 11] {
        [
            ("supports_system_role", self.supports_system_role),
            ("supports_tools", self.supports_tools),
            ("supports_tool_calls", self.supports_tool_calls),
            ("supports_parallel_tool_calls", self.supports_parallel_tool_calls),
            ("supports_object_arguments", self.supports_object_arguments),
            ("supports_string_content", self.supports_string_content),
            ("supports_typed_content", self.supports_typed_content),
            ("supports_preserve_reasoning", self.supports_preserve_reasoning),
            ("supports_reasoning_effort", self.supports_reasoning_effort),
            ("requires_non_null_content", self.requires_non_null_content),
            ("requires_null_content_with_calls", self.requires_null_content_with_calls),
        ]
    }

    /// Look a capability up by its corpus name.
    pub fn get(&self, name: &str) -> Option<bool> {
        self.to_pairs().into_iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

fn probe(t: &dyn Render, messages: Json, tools: Option<Json>) -> Option<String> {
    let mut ctx = json!({
        "messages": messages,
        "bos_token": "",
        "eos_token": "",
        "add_generation_prompt": true,
    });
    if let Some(tools) = tools {
        ctx["tools"] = tools;
    }
    t.render(&ctx).ok()
}

fn tool_def(name: &str) -> Json {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": "Probe tool",
            "parameters": {
                "type": "object",
                "properties": {"arg": {"type": "string", "description": "Probe argument"}},
                "required": ["arg"]
            }
        }
    })
}

fn tool_call(id: &str, name: &str, args: Json) -> Json {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

/// A conversation with one assistant turn of `calls` (its content `content`).
fn tool_conversation(calls: Vec<Json>, content: Json) -> Json {
    json!([
        {"role": "user", "content": "User message"},
        {"role": "assistant", "content": content, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call00001", "content": "Tool response"},
        {"role": "assistant", "content": "Assistant message"},
        {"role": "user", "content": "User message"}
    ])
}

pub(crate) fn detect(template: &ChatTemplate) -> Capabilities {
    // A template exhausting the budget has no more capabilities than its renders so far showed.
    let metered = Metered::new(template);
    let t: &dyn Render = &metered;
    let mut c = Capabilities::default();
    let has = |out: &Option<String>, s: &str| out.as_deref().is_some_and(|o| o.contains(s));

    let out = probe(t, json!([{"role": "user", "content": "PROBE_STRING_CONTENT"}]), None);
    c.supports_string_content = has(&out, "PROBE_STRING_CONTENT");

    let out = probe(t, json!([{"role": "user", "content": [{"type": "text", "text": "PROBE_TYPED_CONTENT"}]}]), None);
    // Printed as text, not as the Python repr or JSON of the parts list.
    c.supports_typed_content =
        has(&out, "PROBE_TYPED_CONTENT") && !has(&out, "'text': 'PROBE_TYPED_CONTENT'") && !has(&out, "\"text\": \"PROBE_TYPED_CONTENT\"");

    let out = probe(t, json!([{"role": "system", "content": "PROBE_SYSTEM"}, {"role": "user", "content": "User message"}]), None);
    c.supports_system_role = has(&out, "PROBE_SYSTEM");

    let out = probe(t, json!([{"role": "user", "content": "User message"}]), Some(json!([tool_def("probe_tool_def")])));
    c.supports_tools = has(&out, "probe_tool_def");

    let tools = Some(json!([tool_def("probe_call_one"), tool_def("probe_call_two")]));
    let obj_args = |v: &str| json!({"arg": v});
    let one_call = |content: Json| {
        let out = probe(t, tool_conversation(vec![tool_call("call00001", "probe_call_one", obj_args("probe_value_one"))], content.clone()), tools.clone());
        let str_args = Json::String(json!({"arg": "probe_value_one"}).to_string());
        let str_out = probe(t, tool_conversation(vec![tool_call("call00001", "probe_call_one", str_args)], content), tools.clone());
        (out, str_out)
    };
    // A tool call counts when its arguments reach the output (the name alone is also in `tools`).
    let shown = |(out, str_out): &(Option<String>, Option<String>)| has(out, "probe_value_one") || has(str_out, "probe_value_one");
    let mut outs = one_call(json!(""));
    if !shown(&outs) {
        let with_null = one_call(Json::Null);
        if shown(&with_null) {
            c.requires_null_content_with_calls = true;
            outs = with_null;
        }
    }
    c.supports_tool_calls = shown(&outs);
    let out = outs.0;
    c.supports_object_arguments = has(&out, "probe_value_one") && !has(&out, "'arg': 'probe_value_one'");

    if c.supports_tool_calls {
        let with_content =
            |content: Json| probe(t, tool_conversation(vec![tool_call("call00001", "probe_call_one", obj_args("probe_value_one"))], content), tools.clone());
        c.requires_non_null_content = with_content(Json::Null).is_none() && with_content(json!("")).is_some();

        let args = |v: &str| {
            if c.supports_object_arguments { obj_args(v) } else { Json::String(obj_args(v).to_string()) }
        };
        let out = probe(
            t,
            tool_conversation(
                vec![tool_call("call00001", "probe_call_one", args("probe_value_one")), tool_call("call00002", "probe_call_two", args("probe_value_two"))],
                if c.requires_null_content_with_calls { Json::Null } else { json!("") },
            ),
            tools,
        );
        c.supports_parallel_tool_calls = has(&out, "probe_value_one") && has(&out, "probe_value_two");
    }

    // Earlier-turn reasoning, with thinking on and every "keep reasoning" knob set.
    let mut ctx = json!({
        "messages": [
            {"role": "user", "content": "User message"},
            {"role": "assistant", "content": "Assistant message",
             "reasoning_content": "PROBE_REASONING", "thinking": "PROBE_REASONING"},
            {"role": "user", "content": "User message"}
        ],
        "bos_token": "", "eos_token": "", "add_generation_prompt": true, "enable_thinking": true,
    });
    for (knob, value) in crate::registry::PRESERVE_REASONING_KNOBS {
        ctx[*knob] = (*value).into();
    }
    c.supports_preserve_reasoning = t.render(&ctx).is_ok_and(|o| o.contains("PROBE_REASONING"));

    c.supports_reasoning_effort = template.variables(false).contains("reasoning_effort") || effort_changes_output(t);
    c
}

/// Whether passing `reasoning_effort` changes the render (thinking enabled).
fn effort_changes_output(t: &dyn Render) -> bool {
    let render = |effort: Option<&str>| {
        let mut ctx = json!({
            "messages": [{"role": "system", "content": "System message"}, {"role": "user", "content": "User message"}],
            "bos_token": "", "eos_token": "", "add_generation_prompt": true, "enable_thinking": true,
        });
        if let Some(e) = effort {
            ctx["reasoning_effort"] = e.into();
        }
        t.render(&ctx).ok()
    };
    let base = render(None);
    ["low", "high", "max", "none", "minimal"].iter().any(|e| {
        let out = render(Some(e));
        out.is_some() && out != base
    })
}

/// Whether a final assistant message's reasoning reaches the output (thinking enabled).
pub(crate) fn renders_final_reasoning(t: &ChatTemplate) -> bool {
    let ctx = json!({
        "messages": [
            {"role": "user", "content": "User message"},
            {"role": "assistant", "content": "Assistant message",
             "reasoning_content": "PROBE_FINAL_REASONING", "thinking": "PROBE_FINAL_REASONING"}
        ],
        "bos_token": "", "eos_token": "", "add_generation_prompt": false, "enable_thinking": true,
    });
    t.render(&ctx).is_ok_and(|o| o.contains("PROBE_FINAL_REASONING"))
}
