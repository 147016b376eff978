//! # chat-peg
//!
//! Turn the raw text an LLM emits into structured chat messages, and build the grammars that
//! constrain that text while it is generated.
#![warn(missing_docs)]

pub use autoparser;
pub use peg_macros;
pub use peg_runtime;

pub mod formats;
