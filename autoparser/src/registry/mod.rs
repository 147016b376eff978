//! The extension point for formats the general analysis cannot express.
//!
//! A [`ModelBuilder`] is registered with a *fingerprint*: marker strings that must all occur in
//! the template's own render of an assistant tool call (or of plain content). Detection runs on
//! renders, never on template source text, so a re-formatted template of the same model still
//! matches. When a builder matches, [`crate::analysis::analyze`] records its name in
//! [`TemplateAnalysis::builder`]; a builder whose format needs an arena of its own builds it in
//! [`arenas`], at generation time.
//!
//! Registered builders (see [`builders`]), three in all: `gpt_oss_harmony` (channel
//! messages), and two for templates that cannot render the calls their models write:
//! `kimi_k2` (sandboxed `list.append`) and `lfm2_pythonic` (calls never rendered). Addressed
//! parts (`>>>recipient`, functionary v3.2) are learned by the general analysis
//! ([`crate::format::AddressedParts`]).

pub(crate) mod arenas;

use crate::format::TemplateAnalysis;

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
        a.tools.format.mode == crate::format::ToolFormat::None
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        let t = &mut a.tools;
        t.format.mode = crate::format::ToolFormat::TagWithTagged;
        // The calls are a list inside the section's markers: a model that leaves out its
        // brackets, or the end marker after them, is recovered as with any list of calls.
        t.format.section_start = "<|tool_call_start|>".into();
        t.format.section_end = "<|tool_call_end|>".into();
        t.format.tools_array_wrapped = true;
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
        arenas::GPT_OSS_HARMONY
    }
    fn fingerprint(&self) -> &'static [&'static str] {
        &["<|channel|>", "<|message|>", "to=functions."]
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        a.reasoning = crate::format::ReasoningAnalysis {
            mode: crate::format::ReasoningMode::TagBased,
            start: "<|channel|>analysis<|message|>".into(),
            end: "<|end|>".into(),
        };
        a.content = crate::format::ContentAnalysis {
            mode: crate::format::ContentMode::AlwaysWrapped,
            start: "<|channel|>final<|message|>".into(),
            end: String::new(),
            requires_nonnull_content: false,
        };
        a.tools.format.mode = crate::format::ToolFormat::TagWithJson;
        a.tools.format.per_call_start = "to=functions.".into();
        a.tools.function.name_prefix = "to=functions.".into();
        a.additional_stops = vec!["<|call|>".into()];
        a.caps.supports_tool_calls = true;
    }
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
        a.tools.format.mode == crate::format::ToolFormat::None || a.reasoning.mode == crate::format::ReasoningMode::None
    }
    fn adjust(&self, a: &mut TemplateAnalysis) {
        if a.reasoning.mode == crate::format::ReasoningMode::None {
            a.reasoning = crate::format::ReasoningAnalysis { mode: crate::format::ReasoningMode::TagBased, start: "<think>".into(), end: "</think>".into() };
        }
        if a.tools.format.mode != crate::format::ToolFormat::None {
            return;
        }
        let t = &mut a.tools;
        t.format.mode = crate::format::ToolFormat::TagWithJson;
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

/// Reasoning tags several families write, `(start, end)`: probed when a template only strips
/// reasoning from history (`content.split('</think>')`) and never writes a marker itself.
pub(crate) const CONVENTIONAL_REASONING_TAGS: &[(&str, &str)] = &[("<think>", "</think>"), ("[THINK]", "[/THINK]"), ("<thinking>", "</thinking>")];

/// Template variables with which families turn on keeping earlier turns' reasoning, and the
/// value that keeps it (a request's `preserve_reasoning` sets whichever the template reads).
pub(crate) const PRESERVE_REASONING_KNOBS: &[(&str, bool)] =
    &[("drop_thinking", false), ("clear_thinking", false), ("truncate_history_thinking", false), ("preserve_thinking", true)];

/// The tags a model wraps its reasoning in, `(start, end)`, for templates that never render a
/// final message's reasoning (continuing it needs them): families whose models think in tags
/// their templates do not show, recognized by the template text.
pub(crate) fn reasoning_tags(template_source: &str) -> Option<(&'static str, &'static str)> {
    if template_source.contains("<|channel>thought") {
        return Some(("<|channel>thought\n", "<channel|>"));
    }
    if template_source.contains("[THINK]") {
        return Some(("[THINK]", "[/THINK]"));
    }
    // Kimi (`<|im_middle|>`) and LFM2 (`<|tool_list_start|>`) think in <think> tags even where
    // their templates never mention them.
    if ["<think>", "</think>", "<|im_middle|>", "<|tool_list_start|>"].iter().any(|m| template_source.contains(m)) {
        return Some(("<think>", "</think>"));
    }
    None
}
