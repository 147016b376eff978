//! # chat-peg
//!
//! Turn the raw text an LLM emits into structured chat messages (content, reasoning, tool
//! calls), and build the grammars that constrain that text while it is generated, for any
//! model, learned from its chat template. No per-model parser to write or wait for.
//!
//! ## Key types
//!
//! - [`Model`]: a chat template and what analysis learned of its output format (markers around
//!   reasoning, content and calls; how arguments are written). Built once per template; cheap
//!   to clone; its [`analysis`](Model::analysis) serializes, for a cache.
//! - [`Request`]: one chat-completions request (messages, tools, `tool_choice`,
//!   `parallel_tool_calls`, `json_schema`, `reasoning_format`, continuation of the final
//!   message, template variables), deserialized from the request JSON.
//! - [`PreparedRequest`]: everything a server needs for that request: the prompt, the GBNF
//!   grammar with its lazy [`GrammarTrigger`]s, the tokens to keep whole, extra stops, and the
//!   parser of the model's output.
//! - [`ChatParser`] and [`ChatStream`]: parse a finished output into a [`ParsedMessage`]
//!   (an OpenAI assistant message, plus what lenient parsing recovered), or stream it chunk by
//!   chunk into [`ChatDelta`]s without re-parsing what was read.
//! - [`Error`]: the one error of template loading, analysis, preparation and parsing, with an
//!   [`ErrorKind`] to match on and the underlying cause as its
//!   [`source`](std::error::Error::source).
//!
//! ## Usage
//!
//! 1. Load and analyze the template: [`Model::load`] reads a `.jinja` file, a
//!    `tokenizer_config.json` or a `.gguf` ([`Model::analyze`] takes a compiled
//!    [`ChatTemplate`]; [`Model::from_analysis`] restores a cached analysis).
//! 2. Per request, [`Model::prepare`] it: send [`prompt`](PreparedRequest::prompt) to the
//!    model, constrain sampling with [`grammar`](PreparedRequest::grammar) (lazy:
//!    from the first trigger on), keep [`preserved_tokens`](PreparedRequest::preserved_tokens)
//!    whole, stop at [`additional_stops`](PreparedRequest::additional_stops).
//! 3. Get the request's parser: [`PreparedRequest::parser`], [`Strictness::Lenient`] (read what
//!    the model meant, report each [`Recovery`]) or [`Strictness::Strict`] (any deviation is an
//!    error).
//! 4. Parse the output ([`ChatParser::parse`] with [`ParseMode::Complete`], or
//!    [`ParseMode::Partial`] for a prefix), or stream it ([`ChatParser::stream`], then
//!    [`ChatStream::push`] per chunk and [`ChatStream::finish`]). A stream of output written
//!    exactly as the template writes a turn of tool calls runs no parse at all (the analysis
//!    learned that form: [`PreparedRequest::call_form`]); anything else is parsed, with the
//!    same deltas.
//!
//! ```
//! use chat_peg::{Model, ParseMode, Request, Strictness};
//!
//! # fn main() -> Result<(), chat_peg::Error> {
//! // 1. Once per template.
//! let model = Model::load("examples/chatml-tools/template.jinja")?;
//!
//! // 2. Per request.
//! let request = Request::from_json(&serde_json::json!({
//!     "messages": [{"role": "user", "content": "Weather in Paris?"}],
//!     "tools": [{"type": "function", "function": {"name": "get_weather",
//!         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
//! }))?;
//! let prepared = model.prepare(&request)?;
//! assert!(prepared.prompt.ends_with("<|im_start|>assistant\n"));
//! assert!(prepared.grammar.is_some() && prepared.grammar_lazy);
//!
//! // 3. and 4. Parse what the model wrote.
//! let parser = prepared.parser(Strictness::Lenient);
//! let output = "<think>\nParis it is.\n</think>\nChecking.\n<tool_call>\n\
//!               {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
//! let parsed = parser.parse(output, ParseMode::Complete)?;
//! assert_eq!(parsed.message.reasoning_content, "Paris it is.");
//! assert_eq!(parsed.message.content, "Checking.");
//! assert_eq!(parsed.message.tool_calls[0].name, "get_weather");
//! assert_eq!(parsed.message.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
//!
//! // Or stream it: deltas as the text arrives, the same message at the end.
//! let mut stream = parser.stream();
//! let mut content = String::new();
//! for chunk in output.as_bytes().chunks(7).map(|c| std::str::from_utf8(c).unwrap()) {
//!     for delta in stream.push(chunk)? {
//!         content.extend(delta.content);
//!     }
//! }
//! let (last, streamed) = stream.finish()?;
//! content.extend(last.into_iter().flat_map(|d| d.content));
//! assert_eq!(content, "Checking.");
//! assert_eq!(streamed, parsed);
//! # Ok(())
//! # }
//! ```
//!
//! ## Output that deviates from the template
//!
//! The grammar keeps a constrained model to the template's form, but unconstrained models
//! write calls in prose, in code fences, with keys reordered or closing markers left out. A
//! lenient parser reads these for any template and lists each reading in
//! [`ParsedMessage::recoveries`] (kind, byte offset and length), so a server can log or refuse
//! them; calls of tools the request did not declare, or with arguments outside their schema,
//! are kept and flagged the same way.
//!
//! ## Checking a template nobody has seen
//!
//! [`Model::verify`] renders seeded assistant messages with the template itself, cuts out what
//! the model would have written, and parses it back one-shot and streamed, checking the
//! grammar accepts it: a server can run it when it loads a template.
//!
//! ## The crates underneath
//!
//! - [`autoparser`]: template rendering exactly as Hugging Face renders it
//!   ([`autoparser::template`]), the differential analysis ([`autoparser::analysis`],
//!   [`autoparser::format`]), generation, verification.
//! - [`peg_runtime`]: the PEG arena and engine (complete and partial input), the JSON and
//!   Python-literal scanners, GBNF generation and recognition ([`peg_runtime::gbnf`]), JSON
//!   schema to GBNF ([`peg_runtime::schema`]), and the chat mapping ([`peg_runtime::chat`]).
//!   A server that ships prebuilt arenas depends on it alone: no template engine.
//! - [`peg_macros`]: [`chat_peg!`](peg_macros::chat_peg), a grammar written in Rust source and
//!   compiled at build time to a specialized parser, its GBNF and its runtime arena;
//!   [`formats`] holds hand-written grammars for real models as examples.
#![warn(missing_docs)]

pub use autoparser;
pub use peg_macros;
pub use peg_runtime;

pub use autoparser::template::ChatTemplate;
pub use autoparser::{Error, ErrorKind, GrammarTrigger, Model, PreparedRequest, Request};
pub use peg_runtime::chat::{ChatDelta, ChatParser, ChatStream, ParseMode, ParsedMessage, Recovery, Strictness};

pub mod formats;

/// [`chat_peg!`](peg_macros::chat_peg) for crates that depend on `chat-peg` alone: the generated
/// code reaches the runtime through this crate's re-export ([`peg_runtime`]), so no
/// `crate = ...;` line is needed. The grammar reference, the generated items and a complete
/// example from grammar to streamed deltas are in the [`peg_macros`] docs.
///
/// ```
/// chat_peg::chat_peg! {
///     pub grammar answer {
///         root = ("<think>" #reasoning(until("</think>")) "</think>")? _ #content(rest);
///     }
/// }
/// let chat = answer::Chat::new(Default::default()).unwrap();
/// let parsed = chat.parse("<think>Easy.</think> 42", chat_peg::ParseMode::Complete).unwrap();
/// assert_eq!((parsed.message.reasoning_content.as_str(), parsed.message.content.as_str()), ("Easy.", "42"));
/// ```
#[macro_export]
macro_rules! chat_peg {
    ($($grammars:tt)*) => {
        $crate::peg_macros::chat_peg! { crate = $crate::peg_runtime; $($grammars)* }
    };
}

/// The README's examples, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
