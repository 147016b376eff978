//! Chat messages from model output: map a tagged parse to an OpenAI-style assistant message,
//! in one shot or as a stream of deltas.
//!
//! Grammars tag their nodes with the semantic tags of one of three shapes, built
//! with [`SimpleBuilder`] (reasoning, content), [`NativeBuilder`] (tool arguments as one JSON
//! object) or [`ConstructedBuilder`] (arguments as separate entities); a [`ChatParser`] over
//! the arena maps the tags to a [`ChatMessage`]:
//!
//! - `content` / `reasoning` texts are concatenated per field, surrounding whitespace trimmed.
//! - A call starts at `tool` (or a `tool_open` outside one); `tool_name` and `tool_id` set its
//!   name and id; arguments that arrive before the name are buffered. A call without an id in
//!   the output gets `tool_id_prefix` + its index, so one-shot and stream agree. Where the
//!   grammar can put the id after the arguments, a call is announced with an empty id when its
//!   arguments start (they stream live) and the id follows once read, or generated when the
//!   call ends.
//! - `tool_args` is JSON (a Python literal is normalized to JSON); `tool_args_string`, a JSON
//!   string literal holding the arguments' JSON text, is decoded once complete and mapped as
//!   `tool_args` text (kept as written if it does not decode). Constructed arguments are
//!   assembled as `{"name": value, ...}`: `tool_arg_string_value` becomes an escaped JSON string
//!   unless the tool's schema types the parameter otherwise (then the text is kept as JSON if
//!   it parses, else quoted; a nullable string's `null` is null); `tool_arg_json_value` stays
//!   JSON. A value in a template's own literal syntax (Gemma 4's `{key:<|"|>text<|"|>}`) is
//!   tagged piece by piece: `tool_arg_literal_string` texts become JSON strings,
//!   `tool_arg_literal_token`s (brackets, separators, numbers, literals) are written as JSON,
//!   and what neither covers (quote markers, whitespace) is dropped.
//! - Lenient by default: output the grammar does not match is kept as content from where the
//!   parse stopped following it, with a [`Diagnostic`]; strict mode returns the error.
//! - Recoveries: a node tagged [`RecoveryKind::tag`] (`recovered.<kind>`) maps what it holds
//!   as usual and is reported as a [`Recovery`] (offset and length in the output after the
//!   prefill) once it can no longer change, even if empty. With [`ChatParseOptions::tools`]
//!   given, a call is also reported when its tool is not among them or its arguments are not
//!   a JSON object fitting the tool's schema (the call is kept). Strict mode makes a recovery
//!   an error.
//!
//! Streaming ([`ChatStream`]) folds each incremental parse of the runtime
//! [`Session`](crate::Session) from where the previous one stopped: text is emitted once it can
//! no longer change (a node cut by the end of input grows, a name or close marker waits until
//! it is followed by more input), never retracted, and the deltas add up to
//! [`ChatParser::parse`] of the whole output. Partial parses are monotone: the message of a
//! longer prefix extends that of a shorter one.
//!
//! ```
//! use peg_runtime::chat::{tags, ChatParseOptions, ChatParser, ParseMode, RecoveryKind, Strictness};
//! use peg_runtime::Arena;
//! // `<call>NAME ARGS</call>` after the content; a close the model left out is a recovery.
//! let arena = Arena::build(|p| {
//!     let close = p.tag(tags::TOOL_CLOSE, "</call>" | p.tag(RecoveryKind::MissingClose.tag(), p.end()));
//!     let name = p.tag(tags::TOOL_NAME, p.chars("[a-z_]", 1, None));
//!     let call = p.tag(tags::TOOL, "<call>" + name + " " + p.tag(tags::TOOL_ARGS, p.json()) + close);
//!     p.tag(tags::CONTENT, p.until("<call>")) + p.zero_or_more(call) + p.end()
//! })
//! .unwrap();
//! let output = r#"Checking. <call>get_time {"tz": "UTC"}"#;
//! let lenient = ChatParser::new(arena.clone().into(), ChatParseOptions::default());
//! let parsed = lenient.parse(output, ParseMode::Complete).unwrap();
//! assert_eq!(parsed.message.content, "Checking.");
//! assert_eq!((parsed.message.tool_calls[0].id.as_str(), parsed.message.tool_calls[0].name.as_str()), ("call_0", "get_time"));
//! assert_eq!(parsed.recoveries[0].kind, RecoveryKind::MissingClose);
//! let strict = ChatParser::new(arena.into(), ChatParseOptions { strictness: Strictness::Strict, ..Default::default() });
//! assert!(strict.parse(output, ParseMode::Complete).is_err());
//! ```

mod args_direct;
mod args_schema;
mod builder;
mod json_text;
mod lane;
mod mapper;
mod message;
mod parser;
mod predict;
mod recovery;
mod stream;

pub use builder::{ConstructedBuilder, NativeBuilder, SimpleBuilder, tags};
pub use json_text::close_partial_json;
pub use lane::CallForm;
pub use message::{ChatDelta, ChatMessage, ChatToolCall, DeltaBuffer, DeltaRef, ToolCallDelta};
pub use parser::{ChatParseOptions, ChatParser, Diagnostic, ParseMode, ParsedMessage, Strictness, ToolSpec};
pub use recovery::{Recovery, RecoveryKind};
pub use stream::{ChatStream, stream_pieces};
