//! Which value a JSON or Python-literal node accepts: shared by the arena (its nodes), the
//! scanners and grammar generation, below all of them.

use serde::{Deserialize, Serialize};

/// Which JSON value a [`Node::Json`](crate::Node::Json) node accepts.
///
/// ```
/// use peg_runtime::{Arena, JsonKind, Node, Outcome};
/// let arena = Arena::build(|p| p.json_object()).unwrap();
/// assert_eq!(arena.node(arena.root()), &Node::Json { kind: JsonKind::Object });
/// assert_eq!(arena.parse(br#"{"a": [1, null]}"#, false).unwrap().result.outcome, Outcome::Success);
/// assert_eq!(arena.parse(b"[1]", false).unwrap().result.outcome, Outcome::Fail);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    /// Any JSON value.
    Value,
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."` with escapes.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

/// Which Python literal a [`Node::Python`](crate::Node::Python) node accepts.
///
/// ```
/// use peg_runtime::{Arena, Outcome, PythonKind};
/// let arena = Arena::build(|p| p.python_kind(PythonKind::Dict)).unwrap();
/// let out = arena.parse(b"{'city': 'Paris', 'metric': True}", false).unwrap();
/// assert_eq!((out.result.outcome, out.result.end), (Outcome::Success, 33));
/// assert_eq!(arena.parse(b"'Paris'", false).unwrap().result.outcome, Outcome::Fail);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PythonKind {
    /// Any Python literal: dict, list, str (either quote), number, True, False, None.
    Value,
    /// `{...}` with literal keys and values.
    Dict,
    /// `[...]`
    List,
    /// `'...'` or `"..."`.
    Str,
    /// An int or float.
    Number,
    /// `True` or `False`.
    Bool,
    /// `None`.
    None,
}

impl JsonKind {
    /// Every kind.
    pub const ALL: [JsonKind; 7] = [JsonKind::Value, JsonKind::Object, JsonKind::Array, JsonKind::String, JsonKind::Number, JsonKind::Bool, JsonKind::Null];

    /// The parser's name in dumps and in `chat_peg!` grammars.
    ///
    /// ```
    /// assert_eq!(peg_runtime::JsonKind::Object.dsl_name(), "json_object");
    /// ```
    pub fn dsl_name(self) -> &'static str {
        match self {
            JsonKind::Value => "json",
            JsonKind::Object => "json_object",
            JsonKind::Array => "json_array",
            JsonKind::String => "json_string",
            JsonKind::Number => "json_number",
            JsonKind::Bool => "json_bool",
            JsonKind::Null => "json_null",
        }
    }
}

impl PythonKind {
    /// Every kind.
    pub const ALL: [PythonKind; 7] =
        [PythonKind::Value, PythonKind::Dict, PythonKind::List, PythonKind::Str, PythonKind::Number, PythonKind::Bool, PythonKind::None];

    /// The parser's name in dumps and in `chat_peg!` grammars.
    ///
    /// ```
    /// assert_eq!(peg_runtime::PythonKind::Dict.dsl_name(), "python_dict");
    /// ```
    pub fn dsl_name(self) -> &'static str {
        match self {
            PythonKind::Value => "python",
            PythonKind::Dict => "python_dict",
            PythonKind::List => "python_list",
            PythonKind::Str => "python_str",
            PythonKind::Number => "python_number",
            PythonKind::Bool => "python_bool",
            PythonKind::None => "python_none",
        }
    }
}
