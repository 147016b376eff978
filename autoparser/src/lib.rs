//! # autoparser
//!
//! Render any chat template as Hugging Face does, analyze it by differential rendering, and
//! build the parser arena, grammar, triggers and prompt for a model.

pub mod analysis;
pub mod generator;
pub mod registry;
pub mod template;
