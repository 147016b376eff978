//! The front door: a template analyzed once, preparing each request.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::error::Error;
use crate::format::TemplateAnalysis;
use crate::generator::{Constraints, PreparedRequest, constraints, generate_with};
use crate::request::Request;
use crate::template::{ChatTemplate, Metered};
use crate::verify::{VerifyOptions, VerifyReport, verify};

/// A chat template and what analysis learned of its output format.
///
/// ```
/// use autoparser::format::TemplateAnalysis;
/// use autoparser::template::ChatTemplate;
/// use autoparser::Model;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\
///            {% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let model = Model::analyze(ChatTemplate::from_source(src, "", "")?)?;
/// assert_eq!(model.analysis().tools.format.per_call_start, "<call>");
/// // Cache the analysis; later, rebuild the model without analyzing again.
/// let cached = model.analysis().to_json();
/// let again = Model::from_analysis(ChatTemplate::from_source(src, "", "")?, TemplateAnalysis::from_json(&cached)?);
/// assert_eq!(again.analysis(), model.analysis());
/// # Ok(())
/// # }
/// ```
///
/// Analyze once per template (tens of milliseconds), then [`prepare`](Model::prepare) every
/// request from it. Cheap to clone (shared, immutable); the analysis serializes
/// ([`TemplateAnalysis::to_json`]) so a server can cache it and rebuild the model with
/// [`from_analysis`](Model::from_analysis).
///
/// A model keeps what its last 16 tool sets made of the format (parser arena, grammar,
/// triggers; shared by its clones): a request whose tools,
/// tool choice, response schema and reasoning format an earlier one had is prepared without
/// building them again, with the same result.
#[derive(Debug, Clone)]
pub struct Model {
    template: ChatTemplate,
    analysis: Arc<TemplateAnalysis>,
    cache: Arc<ConstraintCache>,
}

/// How many tool sets (with their options) a [`Model`] keeps what they made of its format for:
/// a server's requests mostly share a few.
const CACHED_TOOL_SETS: usize = 16;

/// The most recently used [`Constraints`] by key, most recent last.
#[derive(Default)]
struct ConstraintCache {
    entries: Mutex<Vec<(u64, String, Arc<Constraints>)>>,
}

impl std::fmt::Debug for ConstraintCache {
    // The count only: the entries hold whole arenas and grammars.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.entries.lock().map_or(0, |e| e.len());
        f.debug_struct("ConstraintCache").field("tool_sets", &n).finish()
    }
}

impl ConstraintCache {
    fn get_or_build(&self, key: String, build: impl FnOnce() -> Result<Constraints, Error>) -> Result<Arc<Constraints>, Error> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let hash = h.finish();
        // A poisoned lock only means another thread panicked between two statements that
        // keep the list valid either way.
        let lock = || self.entries.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut entries = lock();
            if let Some(i) = entries.iter().position(|(h, k, _)| *h == hash && *k == key) {
                let entry = entries.remove(i);
                let found = entry.2.clone();
                entries.push(entry);
                return Ok(found);
            }
        }
        // Built unlocked: other requests go on meanwhile (two may build the same set once).
        let built = Arc::new(build()?);
        let mut entries = lock();
        if entries.len() >= CACHED_TOOL_SETS {
            entries.remove(0);
        }
        entries.push((hash, key, built.clone()));
        Ok(built)
    }
}

impl Model {
    /// Loads the default template of a `.jinja`, `tokenizer_config.json` or `.gguf` file and
    /// analyzes it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let path = std::env::temp_dir().join(format!("autoparser-load-{}.json", std::process::id()));
    /// std::fs::write(&path, r#"{"chat_template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}", "eos_token": "</s>"}"#)?;
    /// let model = autoparser::Model::load(&path)?;
    /// # std::fs::remove_file(&path)?;
    /// assert_eq!(model.template().eos_token(), "</s>");
    /// # Ok(())
    /// # }
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Model, Error> {
        Model::analyze(ChatTemplate::load(path.as_ref())?)
    }

    /// Analyzes a compiled template.
    ///
    /// ```
    /// use autoparser::{format::ReasoningMode, template::ChatTemplate, Model};
    /// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
    ///            {{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    /// let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
    /// let reasoning = &model.analysis().reasoning;
    /// assert_eq!((reasoning.mode, reasoning.start.as_str(), reasoning.end.as_str()), (ReasoningMode::TagBased, "<think>", "</think>"));
    /// ```
    pub fn analyze(template: ChatTemplate) -> Result<Model, Error> {
        let analysis = crate::analysis::analyze(&template)?;
        Ok(Model::from_analysis(template, analysis))
    }

    /// A model from a cached analysis of this template (skips analyzing it again).
    ///
    /// ```
    /// use autoparser::{format::TemplateAnalysis, template::ChatTemplate, Model, Request};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    /// let cached = Model::analyze(ChatTemplate::from_source(src, "", "")?)?.analysis().to_json();
    /// // Later, or in another process:
    /// let model = Model::from_analysis(ChatTemplate::from_source(src, "", "")?, TemplateAnalysis::from_json(&cached)?);
    /// let request = Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]}))?;
    /// assert_eq!(model.prepare(&request)?.prompt, "<|user|>Hi<|end|><|assistant|>");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_analysis(template: ChatTemplate, analysis: TemplateAnalysis) -> Model {
        Model { template, analysis: Arc::new(analysis), cache: Arc::default() }
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
    ///
    /// ```
    /// use autoparser::{template::ChatTemplate, GrammarTrigger, Model, Request};
    /// use peg_runtime::chat::{ParseMode, Strictness};
    /// # fn main() -> Result<(), autoparser::Error> {
    /// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\
    ///            {% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
    ///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
    /// let model = Model::analyze(ChatTemplate::from_source(src, "", "")?)?;
    /// let request = Request::from_json(&serde_json::json!({
    ///     "messages": [{"role": "user", "content": "Time?"}],
    ///     "tools": [{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}],
    /// }))?;
    /// let prepared = model.prepare(&request)?;
    /// assert_eq!(prepared.prompt, "<|user|>Time?<|end|><|assistant|>");
    /// assert_eq!(prepared.grammar_triggers, [GrammarTrigger::Word("<call>".into())]);
    /// let parsed = prepared.parser(Strictness::Strict).parse(r#"<call>{"name": "now", "arguments": {}}</call>"#, ParseMode::Complete)?;
    /// assert_eq!(parsed.message.tool_calls[0].name, "now");
    /// # Ok(())
    /// # }
    /// ```
    pub fn prepare(&self, request: &Request) -> Result<PreparedRequest, Error> {
        request.validate()?;
        let metered = Metered::new(&self.template);
        let a = &*self.analysis;
        let cached = |req: &Request, prefill: &str| self.cache.get_or_build(Constraints::key(req, prefill), || constraints(a, req, prefill));
        metered.finish(generate_with(&metered, a, request, &cached))
    }

    /// Checks this model's parser and grammar against the template's own renders of seeded
    /// messages (the check for a template nobody has seen; see [`crate::verify`]).
    ///
    /// ```
    /// use autoparser::{template::ChatTemplate, verify::VerifyOptions, Model};
    /// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    /// let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
    /// let report = model.verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    /// assert!(report.passed(), "{}", report.text());
    /// ```
    pub fn verify(&self, options: &VerifyOptions) -> VerifyReport {
        verify(&self.template, &self.analysis, options)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::generator::generate;

    /// Everything of a prepared request, as comparable text.
    fn summary(p: &PreparedRequest) -> String {
        format!(
            "{}\n{:?}\n{:?} {} {:?}\n{:?} {:?}\n{:?} {:?} {:?}\n{:?}",
            p.arena.to_json(),
            p.grammar,
            p.prefill,
            p.grammar_lazy,
            p.grammar_triggers,
            p.preserved_tokens,
            p.additional_stops,
            p.generation_prompt,
            p.prompt,
            p.warnings,
            p.tools
        )
    }

    /// A request prepared from the cache equals one prepared afresh; requests that differ in
    /// their tools or options get their own entries.
    #[test]
    fn cached_preparation_equals_a_fresh_one() {
        let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
        let tool =
            |name: &str| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}});
        let req = |content: &str, tools: Vec<serde_json::Value>, choice: &str| {
            Request::from_json(&json!({"messages": [{"role": "user", "content": content}], "tools": tools, "tool_choice": choice})).unwrap()
        };
        let requests = [
            req("a", vec![tool("f")], "auto"),
            req("b", vec![tool("f")], "auto"),
            req("c", vec![tool("f")], "required"),
            req("d", vec![tool("f"), tool("g")], "auto"),
            req("e", vec![], "auto"),
            req("f", vec![tool("f")], "auto"),
        ];
        let clone = model.clone();
        let prepared: Vec<PreparedRequest> = requests.iter().map(|r| clone.prepare(r).unwrap()).collect();
        for (r, p) in requests.iter().zip(&prepared) {
            assert_eq!(summary(p), summary(&generate(model.template(), model.analysis(), r).unwrap()));
        }
        // The same tools and options share one parser; others do not.
        assert!(Arc::ptr_eq(&prepared[0].arena, &prepared[1].arena) && Arc::ptr_eq(&prepared[0].arena, &prepared[5].arena));
        assert!(!Arc::ptr_eq(&prepared[0].arena, &prepared[2].arena) && !Arc::ptr_eq(&prepared[0].arena, &prepared[3].arena));
        assert_ne!(prepared[0].grammar, prepared[3].grammar);
        assert_eq!(model.cache.entries.lock().unwrap().len(), 4);
        // Bounded: the oldest entries go.
        for i in 0..2 * CACHED_TOOL_SETS {
            model.prepare(&req("x", vec![tool(&format!("t{i}"))], "auto")).unwrap();
        }
        assert_eq!(model.cache.entries.lock().unwrap().len(), CACHED_TOOL_SETS);
        assert!(!Arc::ptr_eq(&model.prepare(&requests[0]).unwrap().arena, &prepared[0].arena));
    }
}
