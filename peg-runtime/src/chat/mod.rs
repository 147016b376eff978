//! Chat messages from model output: map a tagged parse to an OpenAI-style assistant message,
//! in one shot or as a stream of deltas.
//!
//! Grammars tag their nodes with the semantic tags of one of three shapes (seed 003), built
//! with [`SimpleBuilder`], [`NativeBuilder`] or [`ConstructedBuilder`]; the mapper reads the
//! tags.

mod builder;
mod json_text;
mod mapper;
mod message;
mod parser;
mod stream;

pub use builder::{tags, ConstructedBuilder, NativeBuilder, SimpleBuilder};
pub use json_text::close_partial_json;
pub use message::{ChatDelta, ChatMessage, ChatToolCall, ToolCallDelta};
pub use parser::{ChatParseOptions, ChatParser, Diagnostic, ParsedMessage, ToolSpec};
pub use stream::ChatStream;
