//! The extension point for formats the general analysis cannot express.
//!
//! A [`ModelBuilder`] is registered with a *fingerprint*: marker strings that must all occur in
//! the template's own render of an assistant tool call (or of plain content). Detection runs on
//! renders, never on template source text, so a re-formatted template of the same model still
//! matches. When a builder matches, [`crate::analysis::analyze`] records its name in
//! [`TemplateAnalysis::builder`] and generation hands the arena to it.
//!
//! Registered builders (see [`builders`]): `lfm2_pythonic` (a template that never renders the
//! calls its model writes).

use peg_runtime::{Arena, Error};

use crate::analysis::TemplateAnalysis;
use crate::generator::Request;

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

/// All registered builders, in priority order.
pub fn builders() -> &'static [&'static dyn ModelBuilder] {
    &[&Lfm2Pythonic]
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
