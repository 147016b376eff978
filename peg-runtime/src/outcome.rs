//! How a match ended: the one result type the engine and the scanners below it share.

use serde::{Deserialize, Serialize};

/// How a parse ended.
///
/// ```
/// use peg_runtime::{Arena, Outcome};
/// let arena = Arena::build(|p| p.literal("<think>") + p.until("</think>") + "</think>").unwrap();
/// let outcome = |input: &str, partial| arena.parse(input.as_bytes(), partial).unwrap().result.outcome;
/// assert_eq!(outcome("<think>hm</think>", false), Outcome::Success);
/// assert_eq!(outcome("<think>hm</thi", true), Outcome::NeedMoreInput); // streaming: may continue
/// assert_eq!(outcome("<think>hm</thi", false), Outcome::Fail); // complete: it does not
/// assert_eq!(outcome("Hello", true), Outcome::Fail);
/// ```
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
