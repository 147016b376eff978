//! The front door: a template analyzed once, preparing each request.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::format::TemplateAnalysis;
use crate::generator::{generate, PreparedRequest};
use crate::request::Request;
use crate::template::{ChatTemplate, Metered};
use crate::verify::{verify, VerifyOptions, VerifyReport};

/// A chat template and what analysis learned of its output format.
///
/// Analyze once per template (tens of milliseconds), then [`prepare`](Model::prepare) every
/// request from it. Cheap to clone (shared, immutable); the analysis serializes
/// ([`TemplateAnalysis::to_json`]) so a server can cache it and rebuild the model with
/// [`from_analysis`](Model::from_analysis).
#[derive(Debug, Clone)]
pub struct Model {
    template: ChatTemplate,
    analysis: Arc<TemplateAnalysis>,
}

impl Model {
    /// Loads the default template of a `.jinja`, `tokenizer_config.json` or `.gguf` file and
    /// analyzes it.
    pub fn load(path: impl AsRef<Path>) -> Result<Model, Error> {
        Model::analyze(ChatTemplate::load(path.as_ref())?)
    }

    /// Analyzes a compiled template.
    pub fn analyze(template: ChatTemplate) -> Result<Model, Error> {
        let analysis = crate::analysis::analyze(&template)?;
        Ok(Model { template, analysis: Arc::new(analysis) })
    }

    /// A model from a cached analysis of this template (skips analyzing it again).
    pub fn from_analysis(template: ChatTemplate, analysis: TemplateAnalysis) -> Model {
        Model { template, analysis: Arc::new(analysis) }
    }

    /// The template.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// What analysis learned: markers, modes, capabilities.
    pub fn analysis(&self) -> &TemplateAnalysis {
        &self.analysis
    }

    /// Everything one request needs: the prompt, the grammar and its triggers, preserved tokens,
    /// stops, and the parser of the model's output (the request's tools read once).
    ///
    /// The renders share one budget ([`Limits::total_fuel`](crate::template::Limits::total_fuel)).
    pub fn prepare(&self, request: &Request) -> Result<PreparedRequest, Error> {
        request.validate()?;
        let metered = Metered::new(&self.template);
        metered.finish(generate(&metered, &self.analysis, request))
    }

    /// Checks this model's parser and grammar against the template's own renders of seeded
    /// messages (the check for a template nobody has seen; see [`crate::verify`]).
    pub fn verify(&self, options: &VerifyOptions) -> VerifyReport {
        verify(&self.template, &self.analysis, options)
    }
}
