//! # autoparser
//!
//! Render any chat template as Hugging Face does, analyze it by differential rendering, and
//! build the parser arena, grammar, triggers and prompt for a model.
//!
//! The flow: [`template`] renders, [`analysis`] learns the markers once per template,
//! [`generator`] builds the parser arena, grammar and prompt per request, [`registry`] holds
//! the few model-specific builders, [`verify`] checks a template's parser against the
//! template's own renders, [`check`] judges a corpus, and [`cli`] is the `autoparser` command.
#![warn(missing_docs)]

pub mod analysis;
pub mod check;
pub mod cli;
pub mod generator;
pub mod registry;
pub mod template;
pub mod verify;
