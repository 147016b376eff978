//! # peg-runtime
//!
//! A PEG parser-combinator arena for the text LLMs emit: reasoning blocks, tool calls, JSON
//! arguments. Build a grammar with the [`Builder`] DSL, parse complete or partial (streaming)
//! input, read the tagged [`Ast`], and generate GBNF that constrains generation to exactly
//! what the parser accepts.
//!
//! ```
//! use peg_runtime::{Arena, Outcome};
//! let arena = Arena::build(|p| {
//!     p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>")
//!         + p.tag("content", p.rest())
//! })
//! .unwrap();
//! let input = b"<think>The user greets me.</think>Hello!";
//! let out = arena.parse(input, false).unwrap();
//! assert_eq!(out.result.outcome, Outcome::Success);
//! let text = |tag| out.ast.text(out.ast.find_by_tag(tag)[0], input);
//! assert_eq!(text("reasoning"), "The user greets me.");
//! assert_eq!(text("content"), "Hello!");
//!
//! // Streaming: a cut input needs more, and what is cut is marked partial.
//! let out = arena.parse(b"<think>The user gr", true).unwrap();
//! assert_eq!(out.result.outcome, Outcome::NeedMoreInput);
//! let reasoning = out.ast.find_by_tag("reasoning")[0];
//! assert!(out.ast.node(reasoning).partial);
//! ```
//!
//! # Features
//!
//! The engine, the AST, sessions and the JSON / Python scanners are always built. `gbnf` adds
//! GBNF generation, parsing and recognition; `schema` JSON schema to GBNF (and `gbnf`); `chat`
//! (default) the chat mapping to messages and deltas (and `schema`). See the workspace's
//! `DESIGN.md`, "peg-runtime layers".
#![warn(missing_docs)]

#[cfg(feature = "chat")]
#[doc(hidden)]
pub mod macro_support;
#[cfg(feature = "chat")]
#[doc(hidden)]
pub use macro_support as __macro_support;

mod arena;
mod ast;
mod builder;
mod chars;
#[cfg(feature = "chat")]
pub mod chat;
mod error;
mod fx_hash;
#[cfg(feature = "gbnf")]
pub mod gbnf;
mod kinds;
// The resumable JSON / Python scanner: public for the parsers `chat_peg!` generates and for
// tests, not an API of its own.
#[doc(hidden)]
pub mod json;
mod leaf;
mod node;
mod outcome;
// Its items are re-exported here; the module path stays for existing callers.
#[doc(hidden)]
pub mod parse;
pub mod python;
mod quick_fail;
mod resume;
#[cfg(feature = "schema")]
pub mod schema;
mod session;
mod swar;
#[cfg(test)]
mod test_rng;

pub use arena::{Arena, ArenaData, JsonKind, Node, NodeId, PythonKind};
pub use ast::{Ast, AstId, AstNode, Visit};
pub use builder::{Builder, IntoParser, Parser};
pub use chars::CharClass;
pub use error::{Error, ErrorKind};
pub use parse::{Outcome, ParseOptions, ParseOutput, ParseResult};
pub use resume::Resume;
pub use session::Session;
