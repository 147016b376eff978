//! Arena to GBNF.
use crate::arena::Arena;
use crate::error::Error;

/// Options for [`generate`].
#[derive(Debug, Clone, Default)]
pub struct GbnfOptions {
    /// Emit only trigger rules and what they reach, with `root` as the alternation of triggers.
    pub lazy: bool,
}

/// Generates GBNF for `arena`.
pub fn generate(_arena: &Arena, _options: &GbnfOptions) -> Result<String, Error> {
    todo!()
}
