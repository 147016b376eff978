//! Render probes: the contexts the analysis renders and compares.

use serde_json::{Value, json};

use super::diff::{DiffSplit, calculate_diff_split};
use crate::error::Error;
use crate::template::Render;

/// Needles: distinctive values whose position in renders reveals the markers around them.
pub mod needle {
    /// The user's question.
    pub const USER: &str = "USER_QUESTION_TEXT";
    /// Assistant content.
    pub const CONTENT: &str = "CONTENT_NEEDLE_TEXT";
    /// Reasoning.
    pub const REASONING: &str = "REASONING_NEEDLE_TEXT";
    /// First function name.
    pub const FUN_A: &str = "foofoo";
    /// Second function name.
    pub const FUN_B: &str = "barbar";
    /// First argument name.
    pub const ARG_A: &str = "alpha";
    /// Second argument name (shares no first or last character with the first).
    pub const ARG_B: &str = "bravo";
    /// First value.
    pub const VAL_A: &str = "XXXX";
    /// Second value.
    pub const VAL_B: &str = "YYYY";
    /// A number value.
    pub const NUM: i64 = 987654;
    /// First call id.
    pub const ID_A: &str = "call00001";
    /// Second call id.
    pub const ID_B: &str = "call99999";
    /// A user turn after the probed assistant turn (see [`super::history_turn`]).
    pub const NEXT_USER: &str = "NEXT_USER_TURN_TEXT";
}
use needle::*;

/// One tool call for a probe message.
#[derive(Debug, Clone)]
pub struct Call {
    /// Function name.
    pub name: &'static str,
    /// Arguments, in order.
    pub args: Vec<(&'static str, Value)>,
    /// Call id.
    pub id: &'static str,
}

impl Call {
    /// `foofoo(alpha="XXXX")` with id `call00001`.
    pub fn first() -> Call {
        Call { name: FUN_A, args: vec![(ARG_A, json!(VAL_A))], id: ID_A }
    }
    /// `barbar(bravo="YYYY", alpha="XXXX")` with id `call99999`.
    pub fn second() -> Call {
        Call { name: FUN_B, args: vec![(ARG_B, json!(VAL_B)), (ARG_A, json!(VAL_A))], id: ID_B }
    }
    /// `foofoo(alpha=12345)`: a non-string value.
    pub fn typed() -> Call {
        Call { name: FUN_A, args: vec![(ARG_A, json!(NUM))], id: ID_A }
    }
}

/// An assistant message for probes.
#[derive(Debug, Clone, Default)]
pub struct Asst {
    /// Content (None renders as null).
    pub content: Option<String>,
    /// Reasoning.
    pub reasoning: Option<&'static str>,
    /// Tool calls.
    pub calls: Vec<Call>,
    /// Send reasoning and content as typed content parts (`{"type": "thinking"}`,
    /// `{"type": "text"}`) instead of fields.
    pub parts: bool,
}

impl Asst {
    /// Content only.
    pub fn content(c: &str) -> Asst {
        Asst { content: Some(c.to_owned()), ..Asst::default() }
    }
    /// Tool calls with empty content.
    pub fn calls(calls: Vec<Call>) -> Asst {
        Asst { content: Some(String::new()), calls, ..Asst::default() }
    }
    /// Adds reasoning.
    pub fn with_reasoning(mut self, r: &'static str) -> Asst {
        self.reasoning = Some(r);
        self
    }
}

/// Renders probe contexts through a [`Render`].
pub struct Probe<'r> {
    r: &'r dyn Render,
    /// Pass tool-call arguments as objects (else as JSON strings).
    pub object_args: bool,
    /// Include the tool definitions in every context.
    pub with_tools: bool,
    /// Send a call message's empty content as null (templates that render calls only then).
    pub null_content_with_calls: bool,
    /// Set `thinking` next to `enable_thinking`. Off for a template that reads `thinking`
    /// (which requests never set: the generator passes `enable_thinking`) only to cut
    /// reasoning out of content it takes to hold some (`content.split('</think>')[1]`,
    /// Hermes 4), so that it fails on plain content: decided once, for every probe alike.
    thinking_var: bool,
    /// The template writes a last assistant message otherwise than as history (as the
    /// continuation of a prompt, its calls left out): probes render the message before a user
    /// turn and cut there, this header of the user turn with it.
    history_turn: Option<String>,
}

fn tool_def(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": "A test function.",
        "parameters": {"type": "object", "properties": {
            ARG_A: {"type": "string", "description": "First."},
            ARG_B: {"type": "string", "description": "Second."}},
        "required": [ARG_A]}}})
}

impl<'r> Probe<'r> {
    /// A probe over `r`.
    pub fn new(r: &'r dyn Render) -> Probe<'r> {
        let mut p = Probe { r, object_args: true, with_tools: true, null_content_with_calls: false, thinking_var: true, history_turn: None };
        if p.render_asst(&Asst::content(CONTENT)).is_err() {
            p.thinking_var = false;
            if p.render_asst(&Asst::content(CONTENT)).is_err() {
                p.thinking_var = true;
            }
        }
        let calls = Asst::calls(vec![Call::first()]);
        // (The call's value, not its name: the tools listed in the prompt hold the names.)
        if p.render_asst(&calls).is_ok_and(|t| !t.contains(VAL_A)) {
            p.history_turn = p.user_header();
            if !p.render_asst(&calls).is_ok_and(|t| t.contains(VAL_A)) {
                p.history_turn = None;
            }
        }
        p
    }

    /// The header of a user turn after an assistant turn: where the two renders, cut at the
    /// user's text, end alike (from the first marker of that common end; see
    /// [`super::history_turn`]).
    fn user_header(&self) -> Option<String> {
        let mut m = self.base();
        m.push(self.asst_json(&Asst::content(CONTENT)));
        m.push(json!({"role": "user", "content": NEXT_USER}));
        let text = self.render(&self.ctx(m, false, Some(true))).ok()?;
        // Without tools: a system turn listing them would end as an assistant turn does.
        let bare = self.clone_with_tools(false);
        let first = bare.render(&bare.ctx(self.base(), false, Some(true))).ok()?;
        super::user_header(&text[..text.rfind(NEXT_USER)?], &first[..first.find(USER)?]).map(str::to_owned)
    }

    /// The same renderer, with or without tool definitions in the context.
    pub fn clone_with_tools(&self, with_tools: bool) -> Probe<'r> {
        Probe { with_tools, history_turn: self.history_turn.clone(), ..*self }
    }

    /// The tool-call JSON of `c` as templates receive it.
    pub fn call_json(&self, c: &Call) -> Value {
        let mut args = serde_json::Map::new();
        for (k, v) in &c.args {
            args.insert((*k).into(), v.clone());
        }
        let args = if self.object_args { Value::Object(args) } else { json!(Value::Object(args).to_string()) };
        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
    }

    /// The message JSON of `a`.
    pub fn asst_json(&self, a: &Asst) -> Value {
        let mut m = json!({"role": "assistant", "content": a.content});
        if a.parts {
            let mut parts = Vec::new();
            if let Some(r) = a.reasoning {
                parts.push(json!({"type": "thinking", "thinking": r}));
            }
            parts.push(json!({"type": "text", "text": a.content.clone().unwrap_or_default()}));
            m["content"] = Value::Array(parts);
        } else if let Some(r) = a.reasoning {
            // Templates read reasoning under different names.
            m["reasoning_content"] = json!(r);
            m["thinking"] = json!(r);
            m["reasoning"] = json!(r);
        }
        if !a.calls.is_empty() {
            m["tool_calls"] = Value::Array(a.calls.iter().map(|c| self.call_json(c)).collect());
            if self.null_content_with_calls && a.content.as_deref() == Some("") {
                m["content"] = Value::Null;
            }
        }
        m
    }

    /// A full render context.
    pub fn ctx(&self, messages: Vec<Value>, agp: bool, thinking: Option<bool>) -> Value {
        let tools = if self.with_tools { json!([tool_def(FUN_A), tool_def(FUN_B)]) } else { Value::Null };
        let mut c = json!({
            "messages": messages, "tools": tools, "add_generation_prompt": agp,
            "bos_token": "", "eos_token": "",
        });
        if let Some(t) = thinking {
            c["enable_thinking"] = json!(t);
            if self.thinking_var {
                c["thinking"] = json!(t);
            }
        }
        c
    }

    /// `[user]`.
    pub fn base(&self) -> Vec<Value> {
        vec![json!({"role": "user", "content": USER})]
    }

    /// Renders `[user, assistant]` without a generation prompt (for a template that writes a
    /// last assistant message otherwise, `[user, assistant, user]` up to the last user turn).
    pub fn render_asst(&self, a: &Asst) -> Result<String, String> {
        let mut m = self.base();
        m.push(self.asst_json(a));
        let Some(header) = &self.history_turn else { return self.render(&self.ctx(m, false, Some(true))) };
        m.push(json!({"role": "user", "content": NEXT_USER}));
        let text = self.render(&self.ctx(m, false, Some(true)))?;
        let before = text.rfind(NEXT_USER).map(|i| &text[..i]).ok_or("the next user turn is not rendered")?;
        Ok(super::history_turn(before, header).to_owned())
    }

    /// Renders `[user]` with a generation prompt.
    pub fn render_prompt(&self, thinking: Option<bool>) -> Result<String, Error> {
        self.r.render(&self.ctx(self.base(), true, thinking))
    }

    /// Renders any context; the phases compare and report error messages.
    pub fn render(&self, ctx: &Value) -> Result<String, String> {
        self.r.render(ctx).map_err(|e| e.to_string())
    }

    /// Diff of two assistant messages' renders.
    pub fn compare(&self, a: &Asst, b: &Asst) -> Result<(DiffSplit, String, String), String> {
        let ra = self.render_asst(a)?;
        let rb = self.render_asst(b)?;
        Ok((calculate_diff_split(&ra, &rb), ra, rb))
    }
}
