//! What lenient parsing recovered: output that deviates from the template, read as what the
//! model meant, and reported so a server can log and count it.
//!
//! A grammar marks a recovery by wrapping the parser of the deviation in the tag of its kind
//! ([`RecoveryKind::tag`]). The mapper reports each such node once it can no longer change; the
//! mapper itself reports calls that do not fit the request ([`RecoveryKind::UnknownTool`],
//! [`RecoveryKind::ArgumentsOutsideSchema`]) and arguments it repaired
//! ([`RecoveryKind::ArgumentsRepaired`]). In strict mode a recovery is an error.

use serde::{Deserialize, Serialize};

/// The prefix of the recovery tags.
pub const TAG_PREFIX: &str = "recovered.";

/// A kind of deviation from the template that lenient parsing reads as what the model meant.
///
/// ```
/// use peg_runtime::chat::RecoveryKind;
/// let kind = RecoveryKind::CodeFence;
/// assert_eq!((kind.name(), kind.tag()), ("code_fence", "recovered.code_fence"));
/// assert_eq!(RecoveryKind::of_tag("recovered.code_fence"), Some(kind));
/// assert_eq!(serde_json::to_string(&kind).unwrap(), r#""code_fence""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryKind {
    /// A JSON call whose keys come in another order, under synonym keys (`parameters` for
    /// `arguments`), inside an extra `{"function": ...}` wrapper, or written as a Python dict;
    /// a call in another family's syntax inside the template's call markers; a gpt-oss call
    /// addressed `to=NAME` without its `functions.` namespace; calls without the list the
    /// template writes them in (`[TOOL_CALLS]{...}` for `[TOOL_CALLS][{...}]`); closing braces
    /// too many after a call (`{...}}}`); an attribute spelled as another family spells it
    /// (`<parameter name="city">` for `<parameter=city>`); bare Python calls that are the
    /// whole output; a tag call's arguments as elements named by their keys
    /// (`<city>Paris</city>`); the arguments alone after an opener that names the call
    /// (`<tool_call name="f">{"city": "Paris"}`).
    CallShape,
    /// Several calls joined otherwise than the template joins them (`;`, line breaks, each in
    /// its own wrapper, Python calls after the first without their opener), or where the
    /// template renders one call per turn.
    CallSeparator,
    /// A JSON call of a declared tool after prose, where the template writes calls at the
    /// start of the turn.
    CallInProse,
    /// Arguments given as a JSON string holding the object (`"arguments": "{\"a\": 1}"`).
    ArgumentsAsString,
    /// Arguments written as a Python literal (`{'city': 'Paris', 'ok': True}`, or JSON's
    /// quotes with Python's words, `{"days": None}`), or as a JavaScript object with bare keys
    /// (`{city: "Paris"}`), where the template writes JSON: read as the JSON they mean.
    ArgumentsAsPython,
    /// Calls inside a markdown code fence.
    CodeFence,
    /// A closing tag the model left out: an argument closed by the next one's opening, a close
    /// before the call's or the section's end (`</function>` before `</tool_call>`), the next
    /// call's opener or the end-of-turn marker, a close misspelled (`</tool_calls>`) or written
    /// as the call's opener again, or a call or section left open at the end of the output.
    MissingClose,
    /// Text between two calls or after the tool section, kept as content (whitespace alone
    /// after the section, where the template writes none, is dropped).
    TextAroundCalls,
    /// A reasoning start marker written again although the prompt opened reasoning, or
    /// reasoning that a tool call ends without its end marker, or a `<think>` block opening
    /// the output where the template has no reasoning (or a `<thinking>` block where it
    /// thinks in `<think>`).
    ReasoningMarker,
    /// Wrapper tokens the template never renders around calls (`<|python_tag|>`,
    /// `<|python_start|>...<|python_end|>`, `<tool_call>` around a JSON list), a Python list
    /// around Python calls the template writes one by one.
    ExtraWrapper,
    /// A call without the id the template writes for it (`[CALL_ID]...`); one is generated.
    MissingCallId,
    /// A call of a tool the request does not declare (kept).
    UnknownTool,
    /// A call naming a declared tool otherwise than it is declared: behind a namespace
    /// (`functions.get_weather`, `default_api:get_weather`), in other letter case or with `-`
    /// for `_`. Read as that tool.
    ToolNameRepaired,
    /// A call whose arguments are not a JSON object that fits the tool's schema (kept).
    ArgumentsOutsideSchema,
    /// Arguments that were not valid JSON, made valid by appending only: raw control
    /// characters in strings escaped, a value cut off closed (an open string, object, array).
    ArgumentsRepaired,
    /// Output the format has no place for (a message to a recipient that is neither the user
    /// nor a declared tool), kept as content.
    UnplacedText,
}

impl RecoveryKind {
    /// Every kind, in declaration order.
    pub const ALL: [RecoveryKind; 16] = [
        RecoveryKind::CallShape,
        RecoveryKind::CallSeparator,
        RecoveryKind::CallInProse,
        RecoveryKind::ArgumentsAsString,
        RecoveryKind::ArgumentsAsPython,
        RecoveryKind::CodeFence,
        RecoveryKind::MissingClose,
        RecoveryKind::TextAroundCalls,
        RecoveryKind::ReasoningMarker,
        RecoveryKind::ExtraWrapper,
        RecoveryKind::MissingCallId,
        RecoveryKind::UnknownTool,
        RecoveryKind::ToolNameRepaired,
        RecoveryKind::ArgumentsOutsideSchema,
        RecoveryKind::ArgumentsRepaired,
        RecoveryKind::UnplacedText,
    ];

    /// The kind's name, as serialized (`call_shape`).
    pub fn name(self) -> &'static str {
        match self {
            RecoveryKind::CallShape => "call_shape",
            RecoveryKind::CallSeparator => "call_separator",
            RecoveryKind::CallInProse => "call_in_prose",
            RecoveryKind::ArgumentsAsString => "arguments_as_string",
            RecoveryKind::ArgumentsAsPython => "arguments_as_python",
            RecoveryKind::CodeFence => "code_fence",
            RecoveryKind::MissingClose => "missing_close",
            RecoveryKind::TextAroundCalls => "text_around_calls",
            RecoveryKind::ReasoningMarker => "reasoning_marker",
            RecoveryKind::ExtraWrapper => "extra_wrapper",
            RecoveryKind::MissingCallId => "missing_call_id",
            RecoveryKind::UnknownTool => "unknown_tool",
            RecoveryKind::ToolNameRepaired => "tool_name_repaired",
            RecoveryKind::ArgumentsOutsideSchema => "arguments_outside_schema",
            RecoveryKind::ArgumentsRepaired => "arguments_repaired",
            RecoveryKind::UnplacedText => "unplaced_text",
        }
    }

    /// The tag a grammar wraps a recovering parser in (`recovered.call_shape`).
    pub fn tag(self) -> &'static str {
        match self {
            RecoveryKind::CallShape => "recovered.call_shape",
            RecoveryKind::CallSeparator => "recovered.call_separator",
            RecoveryKind::CallInProse => "recovered.call_in_prose",
            RecoveryKind::ArgumentsAsString => "recovered.arguments_as_string",
            RecoveryKind::ArgumentsAsPython => "recovered.arguments_as_python",
            RecoveryKind::CodeFence => "recovered.code_fence",
            RecoveryKind::MissingClose => "recovered.missing_close",
            RecoveryKind::TextAroundCalls => "recovered.text_around_calls",
            RecoveryKind::ReasoningMarker => "recovered.reasoning_marker",
            RecoveryKind::ExtraWrapper => "recovered.extra_wrapper",
            RecoveryKind::MissingCallId => "recovered.missing_call_id",
            RecoveryKind::UnknownTool => "recovered.unknown_tool",
            RecoveryKind::ToolNameRepaired => "recovered.tool_name_repaired",
            RecoveryKind::ArgumentsOutsideSchema => "recovered.arguments_outside_schema",
            RecoveryKind::ArgumentsRepaired => "recovered.arguments_repaired",
            RecoveryKind::UnplacedText => "recovered.unplaced_text",
        }
    }

    /// The kind of a recovery tag.
    pub fn of_tag(tag: &str) -> Option<RecoveryKind> {
        let name = tag.strip_prefix(TAG_PREFIX)?;
        RecoveryKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for RecoveryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One recovery: its kind and where in the model output (after the prefill) it happened.
///
/// ```
/// use peg_runtime::chat::{ChatParser, ParseMode, Recovery, RecoveryKind, SimpleBuilder};
/// // A fenced answer is read as the answer, and the fence reported.
/// let arena = SimpleBuilder::build(|p| {
///     let fenced = p.tag(RecoveryKind::CodeFence.tag(), "```\n" + p.content(p.until("```")) + "```");
///     p.content(p.until("```")) + p.optional(fenced) + p.end()
/// })
/// .unwrap();
/// let parsed = ChatParser::new(arena.into(), Default::default()).parse("Here:```\n42\n```", ParseMode::Complete).unwrap();
/// assert_eq!(parsed.message.content, "Here:42");
/// assert_eq!(parsed.recoveries, [Recovery { kind: RecoveryKind::CodeFence, offset: 5, len: 10, detail: String::new() }]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// What was recovered.
    pub kind: RecoveryKind,
    /// Byte offset of the recovered text in the model output.
    pub offset: usize,
    /// Its length in bytes (0 for something missing, such as a closing tag).
    pub len: usize,
    /// For calls the mapper flags: which call (its index) and why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_names_agree() {
        for k in RecoveryKind::ALL {
            assert_eq!(k.tag(), format!("{TAG_PREFIX}{}", k.name()));
            assert_eq!(RecoveryKind::of_tag(k.tag()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(k.name().into()));
        }
        assert_eq!(RecoveryKind::of_tag("recovered.nothing"), None);
        assert_eq!(RecoveryKind::of_tag("content"), None);
    }
}
