//! Generation for a request: the parser arena, prefill, grammar triggers, preserved tokens and
//! prompts, from a cached [`TemplateAnalysis`].

mod arena;
pub mod request;

use std::sync::Arc;

use peg_runtime::Arena;
use serde::{Deserialize, Serialize};

use crate::analysis::{diff::calculate_diff_split, Render, TemplateAnalysis, ToolFormat};
pub use arena::{build_arena, tags};
pub use request::{ReasoningFormat, Request, ToolChoice};

/// What starts the constrained part of a lazy grammar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum GrammarTrigger {
    /// A literal word (a marker such as `<tool_call>`).
    Word(String),
    /// A regular expression matching from the start of the trigger.
    Pattern(String),
}

/// Everything a server needs for one request.
#[derive(Debug, Clone)]
pub struct GeneratedParser {
    /// The parser: tags per the chat shapes.
    pub arena: Arc<Arena>,
    /// Text the prompt ends with that belongs to the model's turn (e.g. `<think>\n`); prepend
    /// it to the output before parsing.
    pub prefill: String,
    /// The GBNF grammar, when output must be constrained (tools or a JSON schema).
    pub grammar: Option<String>,
    /// The grammar applies only from the first trigger on.
    pub grammar_lazy: bool,
    /// Triggers of a lazy grammar.
    pub grammar_triggers: Vec<GrammarTrigger>,
    /// Marker tokens the tokenizer must keep whole.
    pub preserved_tokens: Vec<String>,
    /// Extra stop strings.
    pub additional_stops: Vec<String>,
    /// What the template appends for the assistant turn.
    pub generation_prompt: String,
    /// The whole rendered prompt.
    pub prompt: String,
}

/// Why generation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenerateError {
    /// The template failed on the request.
    #[error("template render failed: {0}")]
    Render(String),
    /// The arena did not build.
    #[error("parser construction failed: {0}")]
    Arena(String),
}

/// The prefill (seed 002): what the prompt's end already wrote of the model's turn.
///
/// 1. start and end at the end (`<think></think>`): `start + end`, reasoning opened and closed;
/// 2. just start at the end (`<think>\n`): the prompt's text from the start marker, whitespace
///    kept;
/// 3. end only (a template that closes reasoning when thinking is off): `start + end`.
pub fn extract_prefill(a: &TemplateAnalysis, prompt: &str) -> String {
    let (s, e) = (a.reasoning.start.as_str(), a.reasoning.end.as_str());
    if e.is_empty() {
        return String::new();
    }
    let tail = prompt.trim_end();
    if tail.ends_with(e) {
        return format!("{s}{e}");
    }
    if !s.is_empty() && tail.ends_with(s) {
        let i = prompt.len() - (prompt.len() - tail.len()) - s.len();
        return prompt[i..].to_owned();
    }
    String::new()
}

/// Builds the parser, prompt and triggers for `req`.
pub fn generate(r: &dyn Render, a: &TemplateAnalysis, req: &Request) -> Result<GeneratedParser, GenerateError> {
    let prompt = r.render(&req.context(req.add_generation_prompt)).map_err(GenerateError::Render)?;
    let generation_prompt = if req.add_generation_prompt {
        match r.render(&req.context(false)) {
            Ok(without) => calculate_diff_split(&without, &prompt).right,
            Err(_) => String::new(),
        }
    } else {
        String::new()
    };
    let prefill = extract_prefill(a, &prompt);
    let arena = build_arena(a, req, &prefill).map_err(|e| GenerateError::Arena(e.to_string()))?;
    let tools_on = !req.tools.is_empty() && req.tool_choice != ToolChoice::None && a.tools.format.mode != ToolFormat::None;
    let mut grammar_triggers = Vec::new();
    if tools_on && req.tool_choice == ToolChoice::Auto {
        for t in arena::trigger_words(a) {
            grammar_triggers.push(GrammarTrigger::Word(t));
        }
        if grammar_triggers.is_empty() {
            grammar_triggers.push(GrammarTrigger::Pattern(r#"\s*[\[{]"#.into()));
        }
    }
    let grammar_lazy = tools_on && req.tool_choice == ToolChoice::Auto;
    let constrained = tools_on || req.json_schema.is_some();
    let grammar = if constrained { arena::grammar(&arena, grammar_lazy) } else { None };
    Ok(GeneratedParser {
        arena: Arc::new(arena),
        prefill,
        grammar,
        grammar_lazy,
        grammar_triggers,
        preserved_tokens: a.preserved_tokens.clone(),
        additional_stops: a.additional_stops.clone(),
        generation_prompt,
        prompt,
    })
}
