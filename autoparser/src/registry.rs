//! The extension point for formats the general analysis cannot express.
//!
//! A [`ModelBuilder`] is registered with a *fingerprint*: marker strings that must all occur in
//! the template's own render of an assistant tool call (or of plain content). Detection runs on
//! renders, never on template source text, so a re-formatted template of the same model still
//! matches. When a builder matches, [`crate::analysis::analyze`] records its name in
//! [`TemplateAnalysis::builder`] and generation hands the arena to it.
//!
//! Registered builders: none yet (every template in the corpus that analyzes is handled by the
//! general path). Channel formats such as gpt-oss harmony and Functionary v3.2's `>>>` are
//! the expected users.

use peg_runtime::{Arena, Error};

use crate::analysis::TemplateAnalysis;
use crate::generator::Request;

/// A model-specific parser builder.
pub trait ModelBuilder: Send + Sync {
    /// Unique name, stored in [`TemplateAnalysis::builder`].
    fn name(&self) -> &'static str;
    /// Markers that must all occur in the probe renders for this builder to apply.
    fn fingerprint(&self) -> &'static [&'static str];
    /// Adjusts the general analysis (e.g. fills markers the diff could not find).
    fn adjust(&self, _analysis: &mut TemplateAnalysis) {}
    /// Builds the arena for a request.
    fn build_arena(&self, analysis: &TemplateAnalysis, req: &Request) -> Result<Arena, Error>;
}

/// All registered builders, in priority order.
pub fn builders() -> &'static [&'static dyn ModelBuilder] {
    &[]
}

/// The builder whose fingerprint all occurs in `renders`.
pub fn detect(renders: &str) -> Option<&'static dyn ModelBuilder> {
    builders().iter().copied().find(|b| b.fingerprint().iter().all(|m| renders.contains(m)))
}

/// The builder recorded in the analysis, if any.
pub fn find(a: &TemplateAnalysis) -> Option<&'static dyn ModelBuilder> {
    let name = a.builder.as_deref()?;
    builders().iter().copied().find(|b| b.name() == name)
}
