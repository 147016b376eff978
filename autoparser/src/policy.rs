//! What a request asks of the parser, decided once for every arena builder (the general one
//! and the registry's): which tools, whether calls are off, optional or required, one call or
//! several, a response schema, reasoning extracted or kept; and the JSON pieces every builder
//! constrains the same way (arguments by their tool's schema, the response by its schema, with
//! the same rule names in the grammar).

use peg_runtime::chat::{RecoveryKind, ToolSpec, tags};
use peg_runtime::{Builder, Parser, PythonKind};
use serde_json::Value;

use crate::format::{TemplateAnalysis, ToolFormat};
use crate::request::{ReasoningFormat, Request, ToolChoice};

/// Whether the output may, must or must not hold calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calls {
    /// No tools, `tool_choice: none`, or a format without calls.
    Off,
    /// `tool_choice: auto`.
    Optional,
    /// `tool_choice: required` (or a named function).
    Required,
}

/// The request's policy.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The request's functions as (name, parameters schema), longest name first: in an ordered
    /// choice a name that prefixes another (`f` vs `f_with_opt`) must come after it.
    pub tools: Vec<(String, Value)>,
    pub calls: Calls,
    /// Several calls in one message.
    pub parallel: bool,
    /// The schema the response (the content) must follow.
    pub response_schema: Option<Value>,
    /// Reasoning goes to `reasoning_content` (else it stays in the content, markers and all).
    pub extract_reasoning: bool,
}

impl Policy {
    /// The policy of `req` for a template whose format is `a` (a format without calls turns
    /// calls off).
    pub fn new(req: &Request, a: &TemplateAnalysis) -> Policy {
        let mut tools: Vec<(String, Value)> = req.tools.iter().filter_map(ToolSpec::from_openai).map(|t| (t.name, t.parameters)).collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.0.len()));
        let calls = match req.tool_choice {
            _ if tools.is_empty() || a.tools.format.mode == ToolFormat::None => Calls::Off,
            ToolChoice::None => Calls::Off,
            ToolChoice::Auto => Calls::Optional,
            ToolChoice::Required => Calls::Required,
        };
        Policy {
            tools,
            calls,
            parallel: req.parallel_tool_calls,
            response_schema: req.json_schema.clone(),
            extract_reasoning: req.reasoning_format == ReasoningFormat::Extract,
        }
    }

    /// Calls may appear.
    pub fn calls_on(&self) -> bool {
        self.calls != Calls::Off
    }

    /// The grammar applies only from a trigger on: calls are optional and nothing else is
    /// constrained.
    pub fn lazy_grammar(&self) -> bool {
        self.calls == Calls::Optional && self.response_schema.is_none()
    }

    /// The output is constrained at all.
    pub fn constrained(&self) -> bool {
        self.calls_on() || self.response_schema.is_some()
    }
}

/// A call's arguments: JSON following the tool's schema, tagged as arguments; rule
/// `NAME-args` in the grammar.
pub(crate) fn json_arguments<'b>(b: &'b Builder, name: &str, schema: &Value) -> Parser<'b> {
    b.tag(tags::TOOL_ARGS, b.schema(b.json(), &format!("{name}-args"), schema.clone(), false))
}

/// Arguments written as a Python dict where the template writes JSON, reported
/// (`arguments_as_python`; the mapper writes them as JSON). Two readers:
/// - with Python's quotes (`{'city': 'Paris', 'ok': True}`), tried before the JSON
///   arguments: told by the first key's quote (`{'`: before it, nothing of either has been
///   read, so a stream never sends JSON text that a dict then replaces), read whole;
/// - with JSON's quotes (a trailing comma, `{"a": 1,}`, or Python's words, `{"days": None}`),
///   tried after them, not read whole: up to where JSON fails the dict is the same text,
///   which a stream has sent as JSON's, and the mapper's pass-through turns to Python where
///   JSON cannot go on (it holds a comma back until the next member shows it is no trailing
///   one, and writes a word of Python's as JSON's), so nothing sent is taken back, and a dict
///   that stops fitting later shows what JSON showed.
pub(crate) fn python_dict_arguments(b: &Builder) -> (Parser<'_>, Parser<'_>) {
    let recovered = |p| b.tag(RecoveryKind::ArgumentsAsPython.tag(), p);
    let dict = || b.tag(tags::TOOL_ARGS, b.python_kind(PythonKind::Dict));
    (recovered(b.peek("{" + b.space() + "'") + b.atomic(dict())), recovered(dict()))
}

/// The response: JSON following the request's schema, tagged as content; rule
/// `response-format` in the grammar.
pub(crate) fn json_response<'b>(b: &'b Builder, schema: &Value) -> Parser<'b> {
    b.tag(tags::CONTENT, b.schema(b.json(), "response-format", schema.clone(), false))
}
