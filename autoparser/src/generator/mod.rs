//! Generation for a request: the parser arena, prefill, grammar triggers, preserved tokens and
//! prompts, from a cached [`TemplateAnalysis`].
//!
//! ```
//! use autoparser::{analysis::analyze, generator::generate, template::ChatTemplate, Request};
//! # fn main() -> Result<(), autoparser::Error> {
//! let t = ChatTemplate::from_source("{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>\
//!                                    {% endif %}{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|><think>{% endif %}", "", "")?;
//! let analysis = analyze(&t)?; // once per template
//! let g = generate(&t, &analysis, &Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]}))?)?;
//! assert_eq!(g.prompt, "<|user|>Hi<|end|><|assistant|><think>");
//! assert_eq!(g.prefill, "<think>"); // the prompt opened the model's reasoning
//! assert!(g.grammar.is_none()); // no tools, no response schema: nothing to constrain
//! # Ok(())
//! # }
//! ```

mod arena;
mod literal;

use std::sync::Arc;

use peg_runtime::Arena;
use peg_runtime::chat::{CallForm, ChatParseOptions, ChatParser, Strictness, ToolSpec};
use serde::{Deserialize, Serialize};

use crate::analysis::diff::calculate_diff_split;
use crate::error::{Error, ErrorKind};
use crate::format::{TemplateAnalysis, ToolFormat, ToolFormatAnalysis};
use crate::policy::Policy;
use crate::request::{ContinueFinal, ReasoningFormat, Request, ToolChoice};
use crate::template::{Lenient, Render, empty_content_as_null, object_arguments};
#[doc(hidden)]
pub use arena::build_grammar_arena;
pub(crate) use arena::parse_arena;

/// What starts the constrained part of a lazy grammar.
///
/// ```
/// use autoparser::GrammarTrigger;
/// let word = GrammarTrigger::Word("<tool_call>".into());
/// assert_eq!(serde_json::to_value(&word).unwrap(), serde_json::json!({"type": "word", "value": "<tool_call>"}));
/// let pattern: GrammarTrigger = serde_json::from_str(r#"{"type": "pattern", "value": "\\s*[\\[{]"}"#).unwrap();
/// assert_eq!(pattern, GrammarTrigger::Pattern(r"\s*[\[{]".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum GrammarTrigger {
    /// A literal word (a marker such as `<tool_call>`).
    Word(String),
    /// A regular expression matching from the start of the trigger.
    Pattern(String),
}

/// Everything a server needs for one request.
///
/// ```
/// use autoparser::{template::ChatTemplate, Model, Request};
/// use peg_runtime::{chat::{ParseMode, Strictness}, gbnf::Grammar};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let model = Model::analyze(ChatTemplate::from_source(src, "", "")?)?;
/// let request = Request::from_json(&serde_json::json!({
///     "messages": [{"role": "user", "content": "Pick a number"}],
///     "json_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
/// }))?;
/// let prepared = model.prepare(&request)?;
/// assert_eq!(prepared.generation_prompt, "<|assistant|>");
/// let grammar = Grammar::parse(prepared.grammar.as_deref().unwrap())?; // the whole output
/// assert!(!prepared.grammar_lazy && grammar.accepts(r#"{"n": 7}"#) && !grammar.accepts("Seven"));
/// let parsed = prepared.parser(Strictness::Strict).parse(r#"{"n": 7}"#, ParseMode::Complete)?;
/// assert_eq!(parsed.message.content, r#"{"n": 7}"#);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PreparedRequest {
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
    /// What the request asked that generation could only approximate (a tool parameter of an
    /// unknown type is left unconstrained), for the server to log.
    pub warnings: Vec<String>,
    /// The request's tools, read once: their schemas type the parsed arguments, and calls
    /// outside them are flagged.
    pub tools: Vec<ToolSpec>,
    /// How the model writes a turn of calls and nothing else after this prompt, where the
    /// analysis learned it: streams read such output without a parse.
    pub call_form: Option<CallForm>,
}

impl PreparedRequest {
    /// The chat parser of the request's output: this arena, prefill and tools.
    ///
    /// ```
    /// use autoparser::{template::ChatTemplate, Model, Request};
    /// use peg_runtime::chat::{ParseMode, Strictness};
    /// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    /// let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
    /// let prepared = model.prepare(&Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap()).unwrap();
    /// let mut stream = prepared.parser(Strictness::Lenient).stream();
    /// stream.push("Hel").unwrap();
    /// stream.push("lo!").unwrap();
    /// assert_eq!(stream.finish().unwrap().1.message.content, "Hello!");
    /// ```
    pub fn parser(&self, strictness: Strictness) -> ChatParser {
        ChatParser::new(self.arena.clone(), self.parse_options(strictness))
    }

    /// The options of [`parser`](PreparedRequest::parser): this prefill, tools and call form.
    pub fn parse_options(&self, strictness: Strictness) -> ChatParseOptions {
        ChatParseOptions {
            tools: self.tools.clone(),
            strictness,
            prefill: self.prefill.clone(),
            call_form: self.call_form.clone(),
            ..ChatParseOptions::default()
        }
    }
}

/// The prefill: what the prompt's end already wrote of the model's turn.
///
/// 1. start and end at the end (`<think></think>`): `start + end`, reasoning opened and closed;
/// 2. just start at the end (`<think>\n`): the prompt's text from the start marker, whitespace
///    kept;
/// 3. end only (a template that closes reasoning when thinking is off): `start + end`;
/// 4. the turn header that opens every part, the prompt stopping inside it.
pub(crate) fn extract_prefill(a: &TemplateAnalysis, prompt: &str) -> String {
    if a.header_per_part && prompt.ends_with(a.turn_header.as_str()) {
        return a.turn_header.clone();
    }
    let (s, e) = (a.reasoning.start.as_str(), a.reasoning.end.as_str());
    if e.is_empty() {
        return String::new();
    }
    let tail = prompt.trim_end();
    if tail.ends_with(e) {
        return format!("{s}{e}");
    }
    if s.is_empty() {
        // Delimiter style: text the prompt wrote after its last marker opens the reasoning
        // (`Here are my reasoning steps:\n`).
        if let Some((i, m)) = crate::analysis::segment::last_marker(prompt) {
            let after = &prompt[i + m.len()..];
            if !after.trim().is_empty() && !after.contains(e) {
                return after.trim_start().to_owned();
            }
        }
        return String::new();
    }
    if !s.is_empty() && tail.ends_with(s) {
        let i = prompt.len() - (prompt.len() - tail.len()) - s.len();
        return prompt[i..].to_owned();
    }
    String::new()
}

/// Prompt, generation prompt and prefill when the model continues the last message: the
/// prompt is cut right after the message's text, and everything of the assistant turn so far
/// is prefill (so the parse sees the whole message).
fn continue_final(
    r: &dyn Render,
    a: &TemplateAnalysis,
    req: &Request,
    mode: ContinueFinal,
    last: &serde_json::Value,
    earlier: &[serde_json::Value],
) -> Result<(String, String, String), Error> {
    let p0 = r.render(&context(req, earlier, true)).map_err(render_failed)?;
    // Templates may refuse a final message without content: then the turn is built below.
    let full = r.render(&context(req, &req.messages, false)).unwrap_or_default();
    let get = |k: &str| last.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
    let reasoning_text = [get("reasoning_content"), get("thinking"), get("reasoning")].into_iter().find(|s| !s.is_empty()).unwrap_or("");
    let content_text = get("content");
    let text = if mode == ContinueFinal::Reasoning { reasoning_text } else { content_text };
    let gp_for = |prompt: &str| calculate_diff_split(&r.render(&context(req, earlier, false)).unwrap_or_default(), prompt).right;
    // The template rendered the text (and the reasoning, if any) after the new turn's start: cut there.
    if !text.is_empty()
        && let Some(pos) = full.rfind(text)
    {
        let prompt = full[..pos + text.len()].to_owned();
        if pos >= p0.len() && prompt.starts_with(&p0) {
            let turn = &prompt[p0.len()..];
            if mode == ContinueFinal::Reasoning || reasoning_text.is_empty() || turn.contains(reasoning_text) {
                let mut prefill = extract_prefill(a, &p0);
                prefill.push_str(turn);
                let gp = gp_for(&prompt);
                return Ok((prompt, gp, prefill));
            }
        }
    }
    // Not rendered (templates drop reasoning from history): build the turn ourselves.
    let (start, end) = (a.reasoning.start.as_str(), a.reasoning.end.as_str());
    let mut prefill = if start.is_empty() { String::new() } else { extract_prefill(a, &p0) };
    let closed = !end.is_empty() && prefill.trim_end().ends_with(end.trim());
    if closed && !reasoning_text.is_empty() {
        prefill.clear();
    }
    let open = !start.trim().is_empty() && prefill.trim_end().ends_with(start.trim());
    let mut turn = String::new();
    if !reasoning_text.is_empty() && !end.is_empty() {
        if !open {
            turn.push_str(start);
        }
        turn.push_str(reasoning_text);
        if mode == ContinueFinal::Content {
            turn.push_str(end);
            // Content the template always wraps starts with its marker after the reasoning.
            if a.content.mode == crate::format::ContentMode::AlwaysWrapped {
                turn.push_str(&a.content.start);
            }
        }
    } else if mode == ContinueFinal::Content && open {
        // Continuing content: the reasoning the prompt opened is over.
        turn.push_str(end);
    }
    if mode == ContinueFinal::Content {
        turn.push_str(content_text);
    }
    prefill.push_str(&turn);
    let prompt = format!("{p0}{turn}");
    let gp = gp_for(&prompt);
    Ok((prompt, gp, prefill))
}

/// Builds the parser, prompt and triggers for `req`, through any [`Render`] (for a
/// [`ChatTemplate`](crate::template::ChatTemplate), [`Model::prepare`](crate::Model::prepare)
/// is the front door).
///
/// ```
/// # use autoparser::analysis::analyze;
/// # use autoparser::template::Render;
/// # use autoparser::generator::generate;
/// # use autoparser::{GrammarTrigger, Request};
/// # use peg_runtime::chat::{ParseMode, Strictness};
/// # struct Fixed;
/// # impl Render for Fixed {
/// #     fn render(&self, ctx: &serde_json::Value) -> Result<String, autoparser::Error> {
/// #         let mut out = String::new();
/// #         for m in ctx["messages"].as_array().unwrap() {
/// #             out += &format!("<|{}|>", m["role"].as_str().unwrap());
/// #             if let Some(r) = m["reasoning_content"].as_str() { out += &format!("<think>{r}</think>"); }
/// #             out += m["content"].as_str().unwrap_or("");
/// #             for c in m["tool_calls"].as_array().into_iter().flatten() {
/// #                 out += &format!("<tool_call>{}</tool_call>", serde_json::json!({
/// #                     "name": c["function"]["name"], "arguments": c["function"]["arguments"]}));
/// #             }
/// #             out += "<|end|>";
/// #         }
/// #         if ctx["add_generation_prompt"] == true { out += "<|assistant|>"; }
/// #         Ok(out)
/// #     }
/// # }
/// let analysis = analyze(&Fixed).unwrap(); // once per template
/// let req = Request {
///     messages: vec![serde_json::json!({"role": "user", "content": "Weather?"})],
///     tools: vec![serde_json::json!({"type": "function", "function": {"name": "get_weather",
///         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})],
///     add_generation_prompt: true,
///     ..Request::default()
/// };
/// let g = generate(&Fixed, &analysis, &req).unwrap(); // per request
/// assert_eq!(g.generation_prompt, "<|assistant|>");
/// assert_eq!(g.grammar_triggers, [GrammarTrigger::Word("<tool_call>".into())]);
/// let out = r#"<think>Let me check.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#;
/// let parsed = g.parser(Strictness::Lenient).parse(out, ParseMode::Complete).unwrap();
/// assert_eq!(parsed.message.reasoning_content, "Let me check.");
/// assert_eq!(parsed.message.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
/// ```
pub fn generate(r: &dyn Render, a: &TemplateAnalysis, req: &Request) -> Result<PreparedRequest, Error> {
    generate_with(r, a, req, &|req, prefill| constraints(a, req, prefill).map(Arc::new))
}

/// [`generate`], taking what the request's tools and options make of the format from
/// `constrain` (given the request and the prefill): [`constraints`], or a cache of them.
pub(crate) fn generate_with(r: &dyn Render, a: &TemplateAnalysis, req: &Request, constrain: &Constrain) -> Result<PreparedRequest, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| generate_inner(r, a, req, constrain)))
        .unwrap_or_else(|panic| Err(Error::from_panic("generation", panic)))
}

/// Where [`generate_with`] gets a request's [`Constraints`].
pub(crate) type Constrain<'c> = dyn Fn(&Request, &str) -> Result<Arc<Constraints>, Error> + 'c;

/// What a request's tools, tool choice, response schema and reasoning format make of the
/// format, with the prefill: the same for every request that agrees on those
/// ([`Constraints::key`]), whatever its messages.
#[derive(Debug)]
pub(crate) struct Constraints {
    arena: Arc<Arena>,
    grammar: Option<String>,
    grammar_lazy: bool,
    grammar_triggers: Vec<GrammarTrigger>,
    warnings: Vec<String>,
    tools: Vec<ToolSpec>,
}

impl Constraints {
    /// The request's part that [`constraints`] reads, with the prefill: requests with equal
    /// keys have equal constraints.
    pub(crate) fn key(req: &Request, prefill: &str) -> String {
        serde_json::json!([req.tools, req.tool_choice, req.parallel_tool_calls, req.json_schema, req.reasoning_format, prefill]).to_string()
    }
}

/// For a template that never writes calls, when `req` declares tools it may call: the
/// analysis to parse with, reading calls in the form models fall back to without one, JSON
/// objects naming a declared tool (`{"name": …, "arguments": …}`), alone or in the text, in a
/// list or a wrapper token (reported as such). The tools reach the model in the template's
/// prompt or the server's; what the template never shows is not constrained (no grammar).
fn calls_unshown(a: &TemplateAnalysis, req: &Request) -> Option<TemplateAnalysis> {
    if a.tools.format.mode != ToolFormat::None || a.parts.is_some() || req.tools.is_empty() || req.tool_choice == ToolChoice::None {
        return None;
    }
    let mut generic = a.clone();
    generic.tools.format =
        ToolFormatAnalysis { mode: ToolFormat::JsonNative, parameter_order: vec!["name".into(), "arguments".into()], ..ToolFormatAnalysis::default() };
    Some(generic)
}

/// The parser arena, grammar, triggers, schema warnings and tools of `req` (reading only the
/// part of it in [`Constraints::key`]).
pub(crate) fn constraints(a: &TemplateAnalysis, req: &Request, prefill: &str) -> Result<Constraints, Error> {
    let relaxed;
    let req = if a.tools.arguments.omits_null && !req.tools.is_empty() {
        relaxed = Request { tools: req.tools.iter().map(null_not_required).collect(), ..req.clone() };
        &relaxed
    } else {
        req
    };
    let policy = Policy::new(req, a);
    let arena = match calls_unshown(a, req) {
        Some(generic) => parse_arena(&generic, &Policy::new(req, &generic)),
        None => parse_arena(a, &policy),
    }
    .map_err(|e| generation_failed("parser construction", e))?;
    let grammar_lazy = policy.lazy_grammar();
    let mut grammar_triggers = Vec::new();
    if grammar_lazy {
        if let Some(pa) = &a.parts {
            let names: Vec<String> = policy.tools.iter().map(|(n, _)| n.clone()).collect();
            grammar_triggers = arena::part_triggers(pa, &names);
        } else {
            grammar_triggers.extend(arena::trigger_words(a, &policy.tools).into_iter().map(GrammarTrigger::Word));
        }
        if grammar_triggers.is_empty() {
            let names: Vec<String> = policy.tools.iter().map(|(n, _)| n.clone()).collect();
            grammar_triggers.push(arena::bare_name_trigger(a, &names).unwrap_or_else(|| GrammarTrigger::Pattern(r#"\s*[\[{]"#.into())));
        }
    }
    let grammar = if policy.constrained() {
        let ga = arena::grammar_arena(a, &policy, prefill).map_err(|e| generation_failed("parser construction", e))?;
        Some(arena::grammar(&ga, grammar_lazy).map_err(|e| generation_failed("grammar generation", e))?)
    } else {
        None
    };
    Ok(Constraints {
        arena: Arc::new(arena),
        grammar,
        grammar_lazy,
        grammar_triggers,
        warnings: schema_warnings(&policy.tools),
        tools: req.tools.iter().filter_map(ToolSpec::from_openai).collect(),
    })
}

/// `tool` (an OpenAI tool) without the required arguments whose schema admits null: for a
/// template that writes null as an argument's absence (the grammar then lets the model leave
/// them out, and the check of the calls reads them as given).
fn null_not_required(tool: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    fn admits_null(schema: &Value) -> bool {
        let ty = |t: &Value| t.as_str() == Some("null");
        schema.get("type").is_some_and(|t| ty(t) || t.as_array().is_some_and(|a| a.iter().any(ty)))
            || schema.get("nullable").and_then(Value::as_bool) == Some(true)
            || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
            || schema.get("const").is_some_and(Value::is_null)
            || ["anyOf", "oneOf"].iter().any(|k| schema.get(*k).and_then(Value::as_array).is_some_and(|o| o.iter().any(admits_null)))
    }
    let mut tool = tool.clone();
    if let Some(params) = tool.get_mut("function").and_then(|f| f.get_mut("parameters")).filter(|p| p.is_object()) {
        let props = params.get("properties").cloned().unwrap_or(Value::Null);
        if let Some(required) = params.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|name| !name.as_str().and_then(|n| props.get(n)).is_some_and(admits_null));
        }
    }
    tool
}

/// The request as the template is rendered with it: arguments as objects where the template
/// reads them so, and the template's own special tokens unless the request names them.
fn template_request(r: &dyn Render, a: &TemplateAnalysis, req: &Request) -> Request {
    let mut req = req.clone();
    if a.caps.supports_object_arguments {
        req.messages.iter_mut().for_each(object_arguments);
    }
    if a.caps.null_content_with_calls {
        req.messages.iter_mut().for_each(empty_content_as_null);
    }
    let (bos, eos) = r.special_tokens();
    req.chat_template_kwargs.entry("bos_token").or_insert_with(|| bos.into());
    req.chat_template_kwargs.entry("eos_token").or_insert_with(|| eos.into());
    req
}

/// The context the generator renders: the request as llama.cpp's server passes it (thinking on
/// unless the request turns it off, `tools` only when there are some), then `now` and the
/// request's template variables.
fn context(req: &Request, messages: &[serde_json::Value], add_generation_prompt: bool) -> serde_json::Value {
    let mut c = serde_json::json!({
        "messages": messages,
        "add_generation_prompt": add_generation_prompt,
        "enable_thinking": req.enable_thinking.unwrap_or(true),
        "bos_token": "",
        "eos_token": "",
    });
    if !req.tools.is_empty() {
        c["tools"] = serde_json::Value::Array(req.tools.clone());
    }
    if let Some(now) = req.now {
        c["now"] = now.into();
    }
    for (k, v) in &req.chat_template_kwargs {
        c[k] = v.clone();
    }
    c
}

/// Renders `req`'s conversation exactly as [`generate`] renders its prompt (same context), with
/// or without the generation prompt: the text a finished turn has in a later prompt.
///
/// ```
/// use autoparser::{analysis::analyze, generator::render_conversation, template::ChatTemplate, Request};
/// let t = ChatTemplate::from_source("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}\
///                                    {% if add_generation_prompt %}<|assistant|>{% endif %}", "", "").unwrap();
/// let analysis = analyze(&t).unwrap();
/// let req = Request::from_json(&serde_json::json!({"messages": [
///     {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]})).unwrap();
/// assert_eq!(render_conversation(&t, &analysis, &req, false).unwrap(), "<|user|>Hi<|end|><|assistant|>Hello!<|end|>");
/// ```
pub fn render_conversation(r: &dyn Render, a: &TemplateAnalysis, req: &Request, add_generation_prompt: bool) -> Result<String, Error> {
    let lenient = Lenient(r);
    let req = template_request(&lenient, a, req);
    lenient.render(&context(&req, &req.messages, add_generation_prompt)).map_err(render_failed)
}

fn generate_inner(r: &dyn Render, a: &TemplateAnalysis, req: &Request, constrain: &Constrain) -> Result<PreparedRequest, Error> {
    if let Some(e) = &a.tools_error
        && !req.tools.is_empty()
        && req.tool_choice != ToolChoice::None
    {
        return Err(Error::new(ErrorKind::Analysis, format!("the request has tools, but the template's tool calls could not be learned: {e}")));
    }
    let lenient = Lenient(r);
    let r: &dyn Render = &lenient;
    let req = &template_request(r, a, req);
    let (mut prompt, generation_prompt, prefill) = match (req.continue_final_message, req.messages.split_last()) {
        (ContinueFinal::None, _) | (_, None) => {
            let prompt = r.render(&context(req, &req.messages, req.add_generation_prompt)).map_err(render_failed)?;
            let generation_prompt = if req.add_generation_prompt {
                match r.render(&context(req, &req.messages, false)) {
                    Ok(without) => calculate_diff_split(&without, &prompt).right,
                    Err(_) => String::new(),
                }
            } else {
                String::new()
            };
            let mut prefill = extract_prefill(a, &prompt);
            // Reasoning kept in the content: an empty closed block is template boilerplate.
            if req.reasoning_format == ReasoningFormat::None && prefill.trim() == format!("{}{}", a.reasoning.start, a.reasoning.end).trim() {
                prefill.clear();
            }
            (prompt, generation_prompt, prefill)
        }
        (mode, Some((last, earlier))) => continue_final(r, a, req, mode, last, earlier)?,
    };
    // Tokens the tokenizer adds itself are not in the prompt text (as llama.cpp does).
    let special = |key: &str| req.chat_template_kwargs.get(key).and_then(serde_json::Value::as_str).unwrap_or("").to_owned();
    let (bos, eos) = (special("bos_token"), special("eos_token"));
    if req.add_bos && !bos.is_empty() && prompt.starts_with(&bos) {
        prompt.drain(..bos.len());
    }
    if req.add_eos && !eos.is_empty() && prompt.ends_with(&eos) {
        prompt.truncate(prompt.len() - eos.len());
    }
    let c = constrain(req, &prefill)?;
    let call_form = call_form(a, req, &generation_prompt, &prefill);
    Ok(PreparedRequest {
        arena: c.arena.clone(),
        prefill,
        grammar: c.grammar.clone(),
        grammar_lazy: c.grammar_lazy,
        grammar_triggers: c.grammar_triggers.clone(),
        preserved_tokens: a.preserved_tokens.clone(),
        additional_stops: a.additional_stops.clone(),
        generation_prompt,
        prompt,
        warnings: c.warnings.clone(),
        tools: c.tools.clone(),
        call_form,
    })
}

/// The learned call form, where this request's output may be written in it: calls may be
/// made (of any tool declared), the prompt is the one the form was learned after and writes
/// nothing of the turn, and a second call is allowed where the form has one.
fn call_form(a: &TemplateAnalysis, req: &Request, generation_prompt: &str, prefill: &str) -> Option<CallForm> {
    let learned = a.tools.call_form.as_ref()?;
    if req.tools.is_empty()
        || req.tool_choice == ToolChoice::None
        || req.json_schema.is_some()
        || !prefill.is_empty()
        || learned.generation_prompt != generation_prompt
    {
        return None;
    }
    let mut form = learned.form.clone();
    if !req.parallel_tool_calls {
        form.between = None;
    }
    Some(form)
}

fn render_failed(e: Error) -> Error {
    Error::new(ErrorKind::Generation, format!("the template failed on the request: {e}")).with_source(e)
}

fn generation_failed(what: &str, e: peg_runtime::Error) -> Error {
    Error::new(ErrorKind::Generation, format!("{what} failed: {e}")).with_source(e)
}

/// A warning for each `type` name in the tools' schemas that is no JSON type nor a known
/// spelling of one ([`peg_runtime::schema::json_type`]): its values are left unconstrained.
fn schema_warnings(tools: &[(String, serde_json::Value)]) -> Vec<String> {
    fn walk(v: &serde_json::Value, tool: &str, path: &str, out: &mut Vec<String>) {
        use serde_json::Value;
        match v {
            Value::Object(m) => {
                let names: Vec<&str> = match m.get("type") {
                    Some(Value::String(t)) => vec![t],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                for t in names.into_iter().filter(|t| peg_runtime::schema::json_type(t).is_none()) {
                    out.push(format!("tool `{tool}`: unknown type `{t}` at `{path}`; its value is not constrained"));
                }
                for (k, x) in m {
                    if k != "enum" && k != "const" && k != "default" && k != "examples" {
                        walk(x, tool, &format!("{path}/{k}"), out);
                    }
                }
            }
            Value::Array(xs) => xs.iter().enumerate().for_each(|(i, x)| walk(x, tool, &format!("{path}/{i}"), out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (name, schema) in tools {
        walk(schema, name, "", &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use peg_runtime::chat::ParseMode;

    /// For a template that writes null as an argument's absence, an argument that may be null
    /// is not required; the others stay required.
    #[test]
    fn nullable_arguments_are_not_required_where_null_is_absence() {
        let tool = serde_json::json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "d": {"type": "integer", "nullable": true}},
            "required": ["a", "b", "c", "d"]}}});
        assert_eq!(null_not_required(&tool)["function"]["parameters"]["required"], serde_json::json!(["a"]));
        // Nothing to relax: unchanged.
        let plain = serde_json::json!({"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}});
        assert_eq!(null_not_required(&plain), plain);
    }

    /// Tool schemas with Python-style or unknown type names still generate (issue: `"type":
    /// "float"` failed the whole request); unknown names are reported.
    #[test]
    fn unknown_type_names_degrade_with_a_warning() {
        let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        let t = ChatTemplate::from_source(src, "", "").unwrap();
        let a = analyze(&t).unwrap();
        let inputs = serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "properties": {"x": {"type": "float"}, "y": {"type": "int"}, "z": {"type": "dict"}, "w": {"type": "tensor"}}, "required": ["x"]}}}]});
        let g = generate(&t, &a, &Request::from_json(&inputs).unwrap()).unwrap();
        assert_eq!(g.warnings, ["tool `f`: unknown type `tensor` at `/properties/w`; its value is not constrained"]);
        let grammar = peg_runtime::gbnf::Grammar::parse(g.grammar.as_ref().unwrap()).unwrap();
        let call = |args: &str| format!(r#"<tool_call>{{"name": "f", "arguments": {args}}}</tool_call>"#);
        assert!(grammar.accepts(&call(r#"{"x": 1.5, "y": 2, "z": {"a": 1}, "w": [1, "any"]}"#)));
        assert!(!grammar.accepts(&call(r#"{"x": "not a float"}"#)));
        let parsed = g.parser(Strictness::Lenient).parse(&call(r#"{"x": 1.5, "w": "t"}"#), ParseMode::Complete).unwrap();
        assert_eq!(parsed.message.tool_calls[0].arguments, r#"{"x": 1.5, "w": "t"}"#);
    }
    use crate::analysis::analyze;
    use crate::template::ChatTemplate;

    /// A per-call opener that also opens the answer or the reasoning (`<|tag|>` of
    /// `<|tag|>answer<|gt|>`) announces a call only with the name attribute glued to it.
    #[test]
    fn a_shared_per_call_opener_triggers_with_the_name_prefix() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes/attribute-tags.jinja");
        let t = ChatTemplate::from_source(&std::fs::read_to_string(path).unwrap(), "", "").unwrap();
        let a = analyze(&t).unwrap();
        assert_eq!(arena::trigger_words(&a, &[]), ["<|tag|>calls<|gt|>", "<|tag|>call name=\""]);
        // Where the opener is the call's alone, it announces calls as it is.
        let mut b = a.clone();
        (b.content.start, b.reasoning.start) = ("<|answer|>".into(), "<|think|>".into());
        assert_eq!(arena::trigger_words(&b, &[]), ["<|tag|>calls<|gt|>", "<|tag|>"]);
    }

    #[test]
    fn prompt_has_the_template_bos_unless_the_tokenizer_adds_it() {
        let src = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        let t = ChatTemplate::from_source(src, "<s>", "</s>").unwrap();
        let a = analyze(&t).unwrap();
        let inputs = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        let g = generate(&t, &a, &Request::from_json(&inputs).unwrap()).unwrap();
        assert_eq!(g.prompt, "<s><|user|>hi</s><|assistant|>");
        assert_eq!(g.generation_prompt, "<|assistant|>");
        let mut inputs = inputs;
        inputs["add_bos"] = true.into();
        let g = generate(&t, &a, &Request::from_json(&inputs).unwrap()).unwrap();
        assert_eq!(g.prompt, "<|user|>hi</s><|assistant|>");
        // A request may name its own tokens.
        inputs["chat_template_kwargs"] = serde_json::json!({"bos_token": "<BOS>"});
        let g = generate(&t, &a, &Request::from_json(&inputs).unwrap()).unwrap();
        assert_eq!(g.prompt, "<|user|>hi</s><|assistant|>");
    }
}
