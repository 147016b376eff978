//! The extension point for formats the general analysis cannot express.
//!
//! A [`ModelBuilder`] is registered with a *fingerprint*: marker strings that must all occur in
//! the template's own render of an assistant tool call (or of plain content). Detection runs on
//! renders, never on template source text, so a re-formatted template of the same model still
//! matches. When a builder matches, [`crate::analysis::analyze`] records its name in
//! [`TemplateAnalysis::builder`] and generation hands the arena to it.
//!
//! Registered builders (see [`builders`]), three in all: `gpt_oss_harmony` (channel
//! messages), and two for templates that cannot render the calls their models write:
//! `kimi_k2` (sandboxed `list.append`) and `lfm2_pythonic` (calls never rendered). Addressed
//! parts (`>>>recipient`, functionary v3.2) are learned by the general analysis
//! ([`crate::analysis::AddressedParts`]).

use peg_runtime::{Arena, Error};

use crate::analysis::TemplateAnalysis;
use crate::request::Request;

/// A model-specific parser builder.
pub trait ModelBuilder: Send + Sync {
    /// Unique name, stored in [`TemplateAnalysis::builder`].
    fn name(&self) -> &'static str;
    /// Markers that must all occur in the probe renders for this builder to apply.
    fn fingerprint(&self) -> &'static [&'static str];
    /// Whether the builder applies given the general analysis (e.g. only when it found no
    /// tool calls). Defaults to always.
    fn applies(&self, _analysis: &TemplateAnalysis) -> bool {
        true
    }
    /// Adjusts the general analysis (e.g. fills markers the templates never render).
    fn adjust(&self, _analysis: &mut TemplateAnalysis) {}
    /// Builds the arena for a request; `None` uses the general builder on the (adjusted)
    /// analysis.
    fn build_arena(&self, _analysis: &TemplateAnalysis, _req: &Request) -> Option<Result<Arena, Error>> {
        None
    }
}

/// LFM2: the template lists tools (`List of tools: `) but never renders calls; the model
/// writes Python-style calls, `<|tool_call_start|>[f(a="x", b=1)]<|tool_call_end|>`.
struct Lfm2Pythonic;

impl ModelBuilder for Lfm2Pythonic {
    fn name(&self) -> &'static str {
        "lfm2_pythonic"
    }
    fn fingerprint(&self) -> &'static [&'static str] {
        &["List of tools: "]
    }
    fn applies(&self, a: &TemplateAnalysis) -> bool {
        a.tools.format.mode == crate::analysis::ToolFormat::None
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        let t = &mut a.tools;
        t.format.mode = crate::analysis::ToolFormat::TagWithTagged;
        t.format.section_start = "<|tool_call_start|>[".into();
        t.format.section_end = "]<|tool_call_end|>".into();
        t.format.call_separator = ",".into();
        t.function.name_suffix = "(".into();
        t.function.close = ")".into();
        t.arguments.name_suffix = "=".into();
        t.arguments.separator = ",".into();
        t.arguments.value_is_literal = true;
        a.caps.supports_tool_calls = true;
        a.caps.supports_parallel_tool_calls = true;
    }
}

/// gpt-oss harmony: the output is a series of channel messages,
/// `<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...`,
/// and tool calls are messages addressed `to=functions.NAME`. Channels and recipients are not
/// markers around content, so the diff analysis cannot express them.
struct GptOssHarmony;

impl ModelBuilder for GptOssHarmony {
    fn name(&self) -> &'static str {
        "gpt_oss_harmony"
    }
    fn fingerprint(&self) -> &'static [&'static str] {
        &["<|channel|>", "<|message|>", "to=functions."]
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        a.reasoning = crate::analysis::ReasoningAnalysis {
            mode: crate::analysis::ReasoningMode::TagBased,
            start: "<|channel|>analysis<|message|>".into(),
            end: "<|end|>".into(),
        };
        a.content = crate::analysis::ContentAnalysis {
            mode: crate::analysis::ContentMode::AlwaysWrapped,
            start: "<|channel|>final<|message|>".into(),
            end: String::new(),
            requires_nonnull_content: false,
        };
        a.tools.format.mode = crate::analysis::ToolFormat::TagWithJson;
        a.tools.format.per_call_start = "to=functions.".into();
        a.tools.function.name_prefix = "to=functions.".into();
        a.additional_stops = vec!["<|call|>".into()];
        a.caps.supports_tool_calls = true;
    }
    fn build_arena(&self, _a: &TemplateAnalysis, req: &Request) -> Option<Result<Arena, Error>> {
        Some(harmony_arena(req))
    }
}

fn harmony_arena(req: &Request) -> Result<Arena, Error> {
    use crate::generator::tags;
    use crate::request::{ReasoningFormat, ToolChoice};
    let b = peg_runtime::Builder::new();
    let stops = ["<|end|>", "<|return|>", "<|call|>", "<|start|>"];
    let msg_end = || b.optional(b.choice(["<|end|>", "<|return|>", "<|call|>"]));
    let word = || b.chars("[a-zA-Z0-9_.]", 1, None);
    let channel = || b.optional("<|channel|>" + word());
    // `<|channel|>commentary to=assistant` addresses the user: a no-op prefix.
    let to_assistant = b.optional(b.literal("<|channel|>commentary to=assistant"));
    let extract = req.reasoning_format == ReasoningFormat::Extract;
    let analysis_body = b.until_one_of(stops);
    let analysis = if extract {
        "<|channel|>analysis<|message|>" + b.tag(tags::REASONING, analysis_body) + msg_end()
    } else {
        b.tag(tags::CONTENT, "<|channel|>analysis<|message|>" + analysis_body + b.optional(b.literal("<|end|>")))
    };
    let constrain = || b.optional(b.space() + b.optional(b.literal("<|constrain|>")) + word());
    let final_body = match &req.json_schema {
        Some(schema) => b.tag(tags::CONTENT, b.schema(b.json(), "response-format", schema.clone(), false)),
        None => b.tag(tags::CONTENT, b.until_one_of(stops)),
    };
    let final_msg = "<|channel|>" + b.choice(["final", "commentary"]) + constrain() + "<|message|>" + final_body + msg_end();
    let tools_on = !req.tools.is_empty() && req.tool_choice != ToolChoice::None;
    let mut items = Vec::new();
    if tools_on {
        let mut calls = Vec::new();
        let tools = req.tool_schemas();
        for (name, schema) in &tools {
            let open = b.tag(tags::TOOL_OPEN, "to=functions." + b.tag(tags::TOOL_NAME, b.literal(name)));
            let args = b.tag(tags::TOOL_ARGS, b.schema(b.json(), &format!("{name}-args"), schema.clone(), false));
            calls.push(b.tag(tags::TOOL, open + b.until("<|message|>") + "<|message|>" + args + b.tag(tags::TOOL_CLOSE, msg_end())));
        }
        let call = b.trigger_rule("tool-call", b.choice(calls));
        items.push(channel() + b.space() + call);
    }
    // Messages to other recipients (built-in tools) are not function calls: skip them.
    let other = channel() + b.space() + "to=" + b.until("<|message|>") + "<|message|>" + b.until_one_of(stops) + msg_end();
    items.push(other);
    items.push(analysis);
    items.push(final_msg);
    let item = b.optional(b.literal("<|start|>assistant")) + to_assistant + b.choice(items);
    let root = b.zero_or_more(b.space() + item) + b.space() + b.end();
    b.finish(root.id())
}

/// Kimi K2 templates that do not render what the model writes.
///
/// - Calls: some templates render them with `list.append`, which sandboxed Jinja (Hugging
///   Face's and ours) refuses, so the diff cannot see them. The format is the one the general
///   analysis finds on the Kimi K2 template that does render calls.
/// - Reasoning: the models of the family open their turn with a `<think>...</think>` block
///   (the Kimi K2 Thinking template renders it) even where a template never renders one.
struct KimiK2Unrendered;

impl ModelBuilder for KimiK2Unrendered {
    fn name(&self) -> &'static str {
        "kimi_k2"
    }
    fn fingerprint(&self) -> &'static [&'static str] {
        &["<|im_assistant|>", "<|im_middle|>"]
    }
    fn applies(&self, a: &TemplateAnalysis) -> bool {
        a.tools.format.mode == crate::analysis::ToolFormat::None || a.reasoning.mode == crate::analysis::ReasoningMode::None
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        if a.reasoning.mode == crate::analysis::ReasoningMode::None {
            a.reasoning =
                crate::analysis::ReasoningAnalysis { mode: crate::analysis::ReasoningMode::TagBased, start: "<think>".into(), end: "</think>".into() };
        }
        if a.tools.format.mode != crate::analysis::ToolFormat::None {
            return;
        }
        let t = &mut a.tools;
        t.format.mode = crate::analysis::ToolFormat::TagWithJson;
        t.format.section_start = "<|tool_calls_section_begin|>".into();
        t.format.section_end = "<|tool_calls_section_end|>".into();
        t.format.per_call_start = "<|tool_call_begin|>".into();
        t.format.per_call_end = "<|tool_call_end|>".into();
        t.function.name_prefix = "functions.".into();
        t.function.name_suffix = ":0".into();
        t.function.indexed = true;
        t.arguments.start = "<|tool_call_argument_begin|>".into();
        a.caps.supports_tool_calls = true;
        a.caps.supports_parallel_tool_calls = true;
    }
}

/// All registered builders, in priority order.
pub fn builders() -> &'static [&'static dyn ModelBuilder] {
    &[&GptOssHarmony, &KimiK2Unrendered, &Lfm2Pythonic]
}

/// The builder whose fingerprint all occurs in `renders` and that applies to `a`.
pub fn detect(renders: &str, a: &TemplateAnalysis) -> Option<&'static dyn ModelBuilder> {
    builders().iter().copied().find(|b| b.fingerprint().iter().all(|m| renders.contains(m)) && b.applies(a))
}

/// The builder recorded in the analysis, if any.
pub fn find(a: &TemplateAnalysis) -> Option<&'static dyn ModelBuilder> {
    let name = a.builder.as_deref()?;
    builders().iter().copied().find(|b| b.name() == name)
}
