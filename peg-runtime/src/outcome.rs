//! How a match ended: the one result type the engine and the scanners below it share.

use serde::{Deserialize, Serialize};

/// How a parse ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The input does not match.
    Fail,
    /// The input matches (the span says how much of it).
    Success,
    /// The input matches so far but was cut by the end of partial input.
    NeedMoreInput,
}
