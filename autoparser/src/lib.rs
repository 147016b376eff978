//! # autoparser
//!
//! Render any chat template as Hugging Face does, learn the model's output format from the
//! template by differential rendering, and build, per request, the prompt, the grammar that
//! constrains generation and the parser of the output. No per-model code beyond a small
//! registry for formats no general rule expresses.
//!
//! ## Key types
//!
//! - [`Model`]: a template ([`template::ChatTemplate`]) and its learned format
//!   ([`format::TemplateAnalysis`], serializable for a cache).
//! - [`Request`]: one chat-completions request, deserialized from its JSON.
//! - [`PreparedRequest`]: the prompt, the GBNF grammar and its [`GrammarTrigger`]s, preserved
//!   tokens, stops, and the parser ([`PreparedRequest::parser`]).
//! - [`Error`]: every failure, with an [`ErrorKind`], the template line when the template is at
//!   fault, and the cause as its source.
//!
//! ## Usage
//!
//! 1. [`Model::load`] a `.jinja`, `tokenizer_config.json` or `.gguf` (or [`Model::analyze`] a
//!    compiled template, or [`Model::from_analysis`] with a cached analysis).
//! 2. [`Model::prepare`] each [`Request`].
//! 3. Parse the output with [`PreparedRequest::parser`] (`parse` or `stream`).
//! 4. Optionally, [`Model::verify`] a template nobody has seen: its own renders, parsed back.
//!
//! ```
//! use autoparser::{Model, Request};
//! use autoparser::template::ChatTemplate;
//! use peg_runtime::chat::{ParseMode, Strictness};
//!
//! let template = ChatTemplate::from_source(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\
//!      {% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
//!      {% if add_generation_prompt %}<|assistant|>{% endif %}",
//!     "", "",
//! ).unwrap();
//! let model = Model::analyze(template).unwrap();
//! let request = Request::from_json(&serde_json::json!({
//!     "messages": [{"role": "user", "content": "Time in Paris?"}],
//!     "tools": [{"type": "function", "function": {"name": "time", "parameters": {"type": "object"}}}],
//! })).unwrap();
//! let prepared = model.prepare(&request).unwrap();
//! assert_eq!(prepared.generation_prompt, "<|assistant|>");
//! let out = r#"Checking.<call>{"name": "time", "arguments": {"city": "Paris"}}</call>"#;
//! let parsed = prepared.parser(Strictness::Lenient).parse(out, ParseMode::Complete).unwrap();
//! assert_eq!(parsed.message.content, "Checking.");
//! assert_eq!(parsed.message.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
//! ```
//!
//! ## Modules, in the order data flows
//!
//! [`template`] renders; [`analysis`] learns the [`format`](mod@format) once per template (with the
//! registry's model knowledge where no general rule applies); [`generator`] builds a request's
//! prompt, parse arena and grammar; [`verify`] checks a template's parser against the
//! template's own renders. The `autoparser` command and the corpus judge are the
//! `autoparser-cli` package: this library has no command-line dependency.
#![warn(missing_docs)]

mod error;
mod model;
mod policy;
mod request;

pub mod analysis;
pub mod format;
pub mod generator;
mod registry;
pub mod template;
pub mod verify;

pub use error::{Error, ErrorKind, Limit};
pub use generator::{GrammarTrigger, PreparedRequest};
pub use model::Model;
pub use request::{ContinueFinal, ReasoningFormat, Request, ToolChoice};
