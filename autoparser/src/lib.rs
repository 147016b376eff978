//! # autoparser
//!
//! Render any chat template as Hugging Face does, analyze it by differential rendering, and
//! build the parser arena, grammar, triggers and prompt for a model.
//!
//! The flow: [`template`] renders, [`analysis`] learns the markers once per template,
//! [`generator`] builds the parser arena, grammar and prompt per request, [`registry`] holds
//! the few model-specific builders, and [`verify`] checks a template's parser against the
//! template's own renders. The `autoparser` command and the corpus judge (`autoparser check`)
//! are the `autoparser-cli` package; this library has no command-line dependency.
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
