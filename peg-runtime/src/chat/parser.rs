//! The entry point: [`ChatParser`] over an arena, with one-shot and streaming parses.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::arena::{Arena, Node};
use crate::chat::args_schema::ArgsSchema;
use crate::chat::builder::tags;
use crate::chat::json_text::{self, close_partial_json};
use crate::chat::lane::{CallForm, LanePlan};
use crate::chat::mapper::{ArgType, Context, Driver, Input, Kind, MessageSink, Sink};
use crate::chat::message::ChatMessage;
use crate::chat::predict::{Predictor, args_are_json, id_after_args, leading_literals};
use crate::chat::recovery::Recovery;
use crate::error::{Error, ErrorKind};
use crate::parse::{Outcome, ParseOutput};

/// A tool the request offers: its name and its parameters' JSON schema.
///
/// ```
/// use peg_runtime::chat::{ChatParseOptions, ChatParser, NativeBuilder, ParseMode, RecoveryKind, ToolSpec};
/// let arena = NativeBuilder::build(|p| p.tool(p.tool_name(p.chars("[a-z_]", 1, None)) + p.tool_args(p.json()))).unwrap();
/// let tools = vec![ToolSpec::new("get_time", serde_json::json!({"type": "object", "properties": {"tz": {"type": "string"}}}))];
/// let parser = ChatParser::new(arena.into(), ChatParseOptions { tools, ..Default::default() });
/// let parsed = parser.parse(r#"get_time{"tz": 1}"#, ParseMode::Complete).unwrap();
/// assert_eq!(parsed.recoveries[0].kind, RecoveryKind::ArgumentsOutsideSchema); // kept, and flagged
/// let parsed = parser.parse("get_weather{}", ParseMode::Complete).unwrap();
/// assert_eq!(parsed.recoveries[0].kind, RecoveryKind::UnknownTool);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The function name.
    pub name: String,
    /// The JSON schema of the arguments object (`{"type": "object", "properties": ...}`).
    #[serde(default)]
    pub parameters: serde_json::Value,
}

impl ToolSpec {
    /// A tool with a name and a parameters schema.
    ///
    /// ```
    /// use peg_runtime::chat::ToolSpec;
    /// let tool = ToolSpec::new("get_time", serde_json::json!({"type": "object"}));
    /// assert_eq!(tool, ToolSpec::from_openai(&serde_json::json!({"type": "function", "function": {"name": "get_time"}})).unwrap());
    /// ```
    pub fn new(name: impl Into<String>, parameters: serde_json::Value) -> ToolSpec {
        ToolSpec { name: name.into(), parameters }
    }

    /// Reads an OpenAI tool entry, `{"type": "function", "function": {"name", "parameters"}}`
    /// (or the bare function object). Without `parameters` the tool takes an object of any
    /// members (`{"type": "object"}`). The one reader of request tools in the workspace.
    ///
    /// ```
    /// use peg_runtime::chat::ToolSpec;
    /// let t = ToolSpec::from_openai(&serde_json::json!({
    ///     "type": "function",
    ///     "function": {"name": "get_weather", "parameters": {"type": "object"}}
    /// }))
    /// .unwrap();
    /// assert_eq!(t.name, "get_weather");
    /// ```
    pub fn from_openai(tool: &serde_json::Value) -> Option<ToolSpec> {
        let f = tool.get("function").unwrap_or(tool);
        let name = f.get("name")?.as_str()?.to_owned();
        let parameters = f.get("parameters").filter(|p| !p.is_null()).cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}));
        Some(ToolSpec { name, parameters })
    }
}

/// How a parser treats output that deviates from the grammar.
///
/// ```
/// use peg_runtime::chat::{ChatParseOptions, ChatParser, ParseMode, SimpleBuilder, Strictness};
/// let arena = std::sync::Arc::new(SimpleBuilder::build(|p| p.content(p.until("<end>")) + "<end>" + p.end()).unwrap());
/// let parser = |strictness| ChatParser::new(arena.clone(), ChatParseOptions { strictness, ..Default::default() });
/// let lenient = parser(Strictness::Lenient).parse("Hi<end> and more", ParseMode::Complete).unwrap();
/// assert_eq!(lenient.message.content, "Hi and more"); // what follows `<end>` kept as content
/// assert_eq!(lenient.diagnostic.unwrap().offset, 7);
/// let err = parser(Strictness::Strict).parse("Hi<end> and more", ParseMode::Complete).unwrap_err();
/// assert_eq!(err.kind(), peg_runtime::ErrorKind::ParseFailed);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// Recover what the model meant ([`ParsedMessage::recoveries`] says what), and keep output
    /// that still does not fit as content ([`ParsedMessage::diagnostic`] says where).
    #[default]
    Lenient,
    /// Any deviation from the grammar is an [`ErrorKind::ParseFailed`] error.
    Strict,
}

/// Whether the output is finished or may still continue.
///
/// ```
/// use peg_runtime::chat::{ChatParser, ParseMode, SimpleBuilder};
/// let arena = SimpleBuilder::build(|p| p.content(p.until("<end>")) + "<end>").unwrap();
/// let parser = ChatParser::new(arena.into(), Default::default());
/// // `<e` may start `<end>`: a prefix holds it back.
/// assert_eq!(parser.parse("Hello <e", ParseMode::Partial).unwrap().message.content, "Hello");
/// assert_eq!(parser.parse("Hello <e", ParseMode::Complete).unwrap().message.content, "Hello <e");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseMode {
    /// The whole output: what does not fit is recovered, kept as content or an error.
    #[default]
    Complete,
    /// A prefix of the output, as mid-stream: the message holds only what can no longer
    /// change, so a longer prefix's message always extends a shorter one's.
    Partial,
}

/// How a [`ChatParser`] maps output.
///
/// ```
/// use peg_runtime::chat::{ChatParseOptions, ChatParser, NativeBuilder, ParseMode};
/// let arena = NativeBuilder::build(|p| {
///     "<think>" + p.reasoning(p.until("</think>")) + "</think>" + p.tool(p.tool_name(p.literal("f")) + p.tool_args(p.json()))
/// })
/// .unwrap();
/// // The prompt ended in `<think>`; ids of calls get this prefix; cut arguments are closed.
/// let options = ChatParseOptions { prefill: "<think>".into(), tool_id_prefix: "id".into(), close_partial_arguments: true, ..Default::default() };
/// let parser = ChatParser::new(arena.into(), options);
/// let m = parser.parse(r#"Hm.</think>f{"a": [1"#, ParseMode::Partial).unwrap().message;
/// assert_eq!(m.reasoning_content, "Hm.");
/// assert_eq!((m.tool_calls[0].id.as_str(), m.tool_calls[0].arguments.as_str()), ("id0", r#"{"a": [1]}"#));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ChatParseOptions {
    /// The tools of the request: their schemas decide whether a raw argument value is a string.
    /// When there are any, a call of another tool, or whose arguments are not a JSON object
    /// that fits its tool's schema, is kept and reported as a [`Recovery`].
    pub tools: Vec<ToolSpec>,
    /// Return an error when the output does not fit the grammar or needs a recovery, instead
    /// of keeping the rest as content and reporting the recovery.
    pub strictness: Strictness,
    /// Text the template put at the end of the prompt (e.g. `"<think>\n"`), parsed as if the
    /// model had written it before its output.
    pub prefill: String,
    /// Ids of calls that carry none in the output are this prefix plus the call index.
    pub tool_id_prefix: String,
    /// In partial parses, close open strings, objects and arrays of tool arguments so they are
    /// valid JSON where possible (see [`close_partial_json`]). Off by default: the raw text so
    /// far is what grows monotonically and what the deltas carry.
    pub close_partial_arguments: bool,
    /// How the template writes a turn of tool calls and nothing else, if known: streams read
    /// output written exactly so without parsing it (the same deltas, for a fraction of the
    /// cost). Set by the `autoparser` from its analysis; anything the form does not say is
    /// parsed as usual. Unused with a `prefill`: the output then continues a turn the form's
    /// start was not written for.
    pub call_form: Option<CallForm>,
}

impl Default for ChatParseOptions {
    fn default() -> ChatParseOptions {
        ChatParseOptions {
            tools: Vec::new(),
            strictness: Strictness::Lenient,
            prefill: String::new(),
            tool_id_prefix: "call_".to_owned(),
            close_partial_arguments: false,
            call_form: None,
        }
    }
}

/// Where lenient parsing stopped following the grammar.
///
/// ```
/// use peg_runtime::chat::{ChatParser, NativeBuilder, ParseMode};
/// let arena = NativeBuilder::build(|p| {
///     let call = p.tool(p.tool_name(p.literal("f")) + p.tool_args(p.json()));
///     p.content(p.until("<call>")) + p.optional("<call>" + call + "</call>")
/// })
/// .unwrap();
/// let parser = ChatParser::new(arena.into(), Default::default());
/// let parsed = parser.parse("Sure.<call>g{}</call>", ParseMode::Complete).unwrap();
/// let diagnostic = parsed.diagnostic.unwrap();
/// assert_eq!(diagnostic.offset, 5); // from there on, content
/// assert_eq!(parsed.message.content, "Sure.<call>g{}</call>");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Byte offset into the model output (after the prefill) where the grammar stopped matching.
    pub offset: usize,
    /// What happened.
    pub message: String,
}

/// A mapped message and, in lenient mode, where parsing gave up.
///
/// ```
/// use peg_runtime::chat::{ChatParser, ParseMode, SimpleBuilder};
/// let arena = SimpleBuilder::build(|p| p.content(p.rest())).unwrap();
/// let parsed = ChatParser::new(arena.into(), Default::default()).parse("Hello!", ParseMode::Complete).unwrap();
/// assert_eq!(parsed.message.content, "Hello!");
/// assert!(parsed.diagnostic.is_none() && parsed.recoveries.is_empty());
/// assert_eq!(serde_json::to_value(&parsed).unwrap()["message"]["role"], "assistant");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedMessage {
    /// The assistant message.
    pub message: ChatMessage,
    /// Set when part of the output did not fit the grammar and was kept as content.
    pub diagnostic: Option<Diagnostic>,
    /// What lenient parsing read as what the model meant, in output order (by offset; empty
    /// in strict mode, where a recovery is an error). A partial parse reports only recoveries
    /// that can no longer change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recoveries: Vec<Recovery>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub arena: Arc<Arena>,
    pub options: ChatParseOptions,
    pub cx: Context,
    pub predict: Predictor,
    /// The structural lane's plan, when the options give a form it can follow.
    pub lane: Option<LanePlan>,
}

/// Maps model output to an assistant message with a grammar whose nodes carry the chat tags
/// (see [`tags`](crate::chat::tags)).
///
/// ```
/// use std::sync::Arc;
/// use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ParseMode, SimpleBuilder};
/// let arena = SimpleBuilder::build(|p| {
///     p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>") + p.content(p.rest())
/// })
/// .unwrap();
/// let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
/// let out = parser.parse("<think>Hmm.</think>\nHello!", ParseMode::Complete).unwrap();
/// assert_eq!(out.message.reasoning_content, "Hmm.");
/// assert_eq!(out.message.content, "Hello!");
///
/// let mut stream = parser.stream();
/// let mut deltas = Vec::new();
/// for chunk in ["<thi", "nk>Hm", "m.</th", "ink>\nHel", "lo!"] {
///     deltas.extend(stream.push(chunk).unwrap());
/// }
/// let (last, fin) = stream.finish().unwrap();
/// deltas.extend(last);
/// assert_eq!(ChatMessage::from_deltas(&deltas), out.message);
/// assert_eq!(fin, out);
/// ```
#[derive(Debug, Clone)]
pub struct ChatParser {
    pub(crate) inner: Arc<Inner>,
}

impl ChatParser {
    /// A parser over `arena` (built with one of the shape builders).
    ///
    /// ```
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, ParseMode, SimpleBuilder};
    /// let arena = SimpleBuilder::build(|p| p.content(p.rest())).unwrap();
    /// let parser = ChatParser::new(arena.into(), ChatParseOptions::default());
    /// assert_eq!(parser.parse(" Hi ", ParseMode::Complete).unwrap().message.content, "Hi");
    /// ```
    pub fn new(arena: Arc<Arena>, options: ChatParseOptions) -> ChatParser {
        let has_tag = |names: &[&str]| arena.nodes().iter().any(|n| matches!(n, Node::Tag { tag, .. } if names.contains(&tag.as_str())));
        let mut cx = Context {
            has_tool_id: has_tag(&[tags::TOOL_ID]),
            has_scopes: has_tag(&[tags::TOOL, tags::TOOL_OPEN]),
            id_after_args: id_after_args(&arena),
            args_json: args_are_json(&arena),
            id_prefix: options.tool_id_prefix.clone(),
            prefill: options.prefill.len(),
            ..Context::default()
        };
        for tool in &options.tools {
            let schema = tool.parameters.is_object().then(|| Arc::new(ArgsSchema::new(&tool.parameters)));
            cx.tools.insert(tool.name.clone(), schema);
            let Some(props) = tool.parameters.get("properties").and_then(|p| p.as_object()) else { continue };
            let types = props.iter().filter_map(|(k, v)| Some((k.clone(), ArgType::of(v)?))).collect();
            cx.arg_types.insert(tool.name.clone(), types);
        }
        let predict = Predictor::new(&arena);
        let lane = options.call_form.as_ref().filter(|_| options.prefill.is_empty()).and_then(|form| LanePlan::new(form, &cx.tools));
        for (tag, lit) in leading_literals(&arena) {
            if let Some(kind) = Kind::of_text_tag(tag) {
                cx.leading.push((kind, lit));
            }
        }
        ChatParser { inner: Arc::new(Inner { arena, options, cx, predict, lane }) }
    }

    /// The options the parser was made with.
    pub fn options(&self) -> &ChatParseOptions {
        &self.inner.options
    }

    /// Parses an output, whole or a prefix of it ([`ParseMode`]).
    ///
    /// A partial result holds only what can no longer change, so the message of a longer
    /// output always extends that of a shorter one. In lenient mode (the default) output that
    /// does not fit the grammar is kept as content and a [`Diagnostic`] says where, and what
    /// was recovered is reported in [`ParsedMessage::recoveries`]; strict mode returns an
    /// [`ErrorKind::ParseFailed`] error instead.
    ///
    /// ```
    /// use peg_runtime::chat::{ChatParser, NativeBuilder, ParseMode};
    /// let arena = NativeBuilder::build(|p| p.tool(p.tool_name(p.chars("[a-z]", 1, None)) + p.tool_args(p.json()))).unwrap();
    /// let parser = ChatParser::new(arena.into(), Default::default());
    /// let whole = parser.parse(r#"now{"tz": "UTC"}"#, ParseMode::Complete).unwrap().message;
    /// assert_eq!(whole.tool_calls[0].arguments, r#"{"tz": "UTC"}"#);
    /// let prefix = parser.parse(r#"now{"tz": "U"#, ParseMode::Partial).unwrap().message;
    /// assert_eq!(prefix.tool_calls[0].arguments, r#"{"tz": "U"#); // the raw text so far
    /// assert!(whole.extends(&prefix));
    /// ```
    pub fn parse(&self, output: &str, mode: ParseMode) -> Result<ParsedMessage, Error> {
        let arena = &self.inner.arena;
        if mode == ParseMode::Partial {
            return self.parse_with(output, mode, |input, partial| arena.parse(input, partial));
        }
        // `parse_with`'s two parses (partial, then complete) share a memo: the complete parse
        // reuses every result of the partial one that did not reach the end of input (equal to
        // `arena.parse`, at the cost of the path to the end), rather than scanning the whole
        // output again.
        let mut parses = crate::session::TwoPass::new(arena);
        self.parse_with(output, mode, |input, partial| parses.parse(input, partial))
    }

    /// [`parse`](ChatParser::parse) with the parses produced by another parser of the same
    /// grammar, such as the specialized parser `chat_peg!` generates: `parse(input, partial)`
    /// must return what `arena.parse(input, partial)` would, for the prefill followed by the
    /// output. The message then equals that of [`parse`](ChatParser::parse).
    ///
    /// It is called with the whole input as partial and, for a complete output, again as complete
    /// (a complete output is folded as a stream would see it, so the message is exactly what
    /// the deltas add up to). Lenient recovery from output that does not fit the grammar
    /// still searches the longest fitting prefix with the arena.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, ParseMode, SimpleBuilder};
    /// let arena = Arc::new(SimpleBuilder::build(|p| p.reasoning(p.until("</think>")) + "</think>" + p.content(p.rest())).unwrap());
    /// let parser = ChatParser::new(arena.clone(), ChatParseOptions { prefill: "<think>".into(), ..Default::default() });
    /// let mut calls = Vec::new();
    /// let out = parser
    ///     .parse_with("Hmm.</think>Hi!", ParseMode::Complete, |input, partial| {
    ///         calls.push((String::from_utf8_lossy(input).into_owned(), partial));
    ///         arena.parse(input, partial)
    ///     })
    ///     .unwrap();
    /// assert_eq!(out, parser.parse("Hmm.</think>Hi!", ParseMode::Complete).unwrap());
    /// assert_eq!(calls, [("<think>Hmm.</think>Hi!".to_owned(), true), ("<think>Hmm.</think>Hi!".to_owned(), false)]);
    /// ```
    pub fn parse_with<F>(&self, output: &str, mode: ParseMode, mut parse: F) -> Result<ParsedMessage, Error>
    where
        F: FnMut(&[u8], bool) -> Result<ParseOutput, Error>,
    {
        let partial = mode == ParseMode::Partial;
        let inner = &*self.inner;
        let input = with_prefill(&inner.options.prefill, output);
        let bytes = input.as_bytes();
        let mut driver = Driver::default();
        let mut sink = MessageSink::default();
        // A complete output is folded as a stream would see it: first as partial input, then
        // as complete, so that the one-shot message is exactly what the deltas add up to.
        let out = parse(bytes, true);
        let mut diagnostic = fold_parse(inner, &mut driver, &mut sink, &*input, out.as_ref().map_err(Error::clone), true, 0)?;
        if !partial {
            if diagnostic.is_none() {
                let out = parse(bytes, false);
                diagnostic = fold_parse(inner, &mut driver, &mut sink, &*input, out.as_ref().map_err(Error::clone), false, bytes.len())?;
            }
            driver.fold.finish(&inner.cx, &mut sink);
            no_recovery_if_strict(inner, &driver)?;
        }
        let mut message = sink.message;
        if partial && inner.options.close_partial_arguments {
            for call in &mut message.tool_calls {
                if let Some(closed) = close_partial_json(&call.arguments) {
                    call.arguments = closed;
                }
            }
        }
        Ok(ParsedMessage { message, diagnostic, recoveries: driver.fold.recoveries })
    }
}

/// The text a parse reads: the prefill, then the output. Without a prefill the output itself,
/// not a copy: a long copy's fresh allocation costs more in page faults than the parse.
fn with_prefill<'a>(prefill: &str, output: &'a str) -> std::borrow::Cow<'a, str> {
    if prefill.is_empty() { output.into() } else { [prefill, output].concat().into() }
}

/// In strict mode, a recovery is an error.
pub(crate) fn no_recovery_if_strict(inner: &Inner, driver: &Driver) -> Result<(), Error> {
    match driver.fold.recoveries.first() {
        Some(r) if inner.options.strictness == Strictness::Strict => {
            let mut what = format!("the output needs recovery ({})", r.kind);
            if !r.detail.is_empty() {
                what.push_str(": ");
                what.push_str(&r.detail);
            }
            Err(Error::new(ErrorKind::ParseFailed, what).with_offset(r.offset))
        }
        _ => Ok(()),
    }
}

/// Whether the input so far can still be (or already is) a complete match.
fn viable(arena: &Arena, input: &[u8]) -> bool {
    match arena.parse(input, true) {
        Ok(o) => match o.result.outcome {
            Outcome::NeedMoreInput => true,
            Outcome::Success => o.result.end == input.len(),
            Outcome::Fail => false,
        },
        Err(_) => false,
    }
}

/// The longest prefix of `input` that is viable, given that `input[..lo]` is.
/// Viability is prefix-closed for the grammars we build, so a binary search finds it.
fn max_viable(arena: &Arena, input: &[u8], lo: usize) -> usize {
    let (mut lo, mut hi) = (lo, input.len());
    if lo >= hi || viable(arena, input) {
        return hi;
    }
    let boundary = |mut i: usize| {
        while i > 0 && i < input.len() && (input[i] & 0xC0) == 0x80 {
            i -= 1;
        }
        i
    };
    while hi - lo > 1 {
        let mut mid = boundary(lo + (hi - lo) / 2);
        if mid <= lo {
            mid = lo + 1;
            while mid < hi && (input[mid] & 0xC0) == 0x80 {
                mid += 1;
            }
            if mid >= hi {
                break;
            }
        }
        if viable(arena, &input[..mid]) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Folds one parse of `input` (bytes, or the `str` of a one-shot parse; `partial`: more may
/// come). When the parse does not fit, the longest viable prefix is folded and the rest goes
/// to content (lenient), or an error is returned (strict). `lo`: a prefix length known to be
/// viable.
pub(crate) fn fold_parse<'a>(
    inner: &Inner,
    driver: &mut Driver,
    sink: &mut dyn Sink,
    input: impl Into<Input<'a>>,
    out: Result<&ParseOutput, Error>,
    partial: bool,
    lo: usize,
) -> Result<Option<Diagnostic>, Error> {
    let input: Input = input.into();
    let bytes = input.bytes;
    let cx = &inner.cx;
    let strict = inner.options.strictness == Strictness::Strict;
    let prefill = inner.options.prefill.len();
    let out = match out {
        Ok(o) => o,
        Err(e) if strict => return Err(e),
        Err(e) => {
            // A resource limit: treat like a mismatch where the last good parse stopped.
            let l = max_viable(&inner.arena, bytes, lo);
            return Ok(Some(fall_back(inner, driver, sink, input, l, &e.to_string())));
        }
    };
    let len = bytes.len();
    let r = out.result;
    let diverged = |driver: &mut Driver, sink: &mut dyn Sink| {
        let what = "the grammar reinterprets output that was already emitted";
        if strict {
            return Err(Error::new(ErrorKind::ParseFailed, what).with_offset(lo.saturating_sub(prefill)));
        }
        Ok(Some(fall_back(inner, driver, sink, input, lo, what)))
    };
    match r.outcome {
        Outcome::Success if r.end == len => {
            if !driver.follow(&out.ast, input, !partial, cx, sink) {
                return diverged(driver, sink);
            }
            no_recovery_if_strict(inner, driver)?;
            Ok(None)
        }
        Outcome::NeedMoreInput if partial => {
            if !driver.follow(&out.ast, input, false, cx, sink) {
                return diverged(driver, sink);
            }
            no_recovery_if_strict(inner, driver)?;
            Ok(None)
        }
        Outcome::Success => {
            let at = r.end.saturating_sub(prefill);
            if strict {
                return Err(Error::new(ErrorKind::ParseFailed, "text after the end of what the grammar matches").with_offset(at));
            }
            if !driver.follow(&out.ast, input.prefix(r.end), true, cx, sink) {
                return diverged(driver, sink);
            }
            let rest = json_text::lossy(&bytes[r.end..]);
            driver.fold.unplaced(r.end, &rest, cx, sink);
            Ok(Some(Diagnostic { offset: at, message: "text after the end of what the grammar matches is kept as content".into() }))
        }
        Outcome::Fail | Outcome::NeedMoreInput => {
            let l = if r.outcome == Outcome::NeedMoreInput { len } else { max_viable(&inner.arena, bytes, lo) };
            let what = if l == len { "the output ends inside an unfinished structure" } else { "the output does not match the grammar" };
            if strict {
                return Err(Error::new(ErrorKind::ParseFailed, what).with_offset(l.saturating_sub(prefill)));
            }
            Ok(Some(fall_back(inner, driver, sink, input, l, what)))
        }
    }
}

/// Folds the viable prefix `input[..l]` as final, then sends the unaccounted rest to content.
fn fall_back(inner: &Inner, driver: &mut Driver, sink: &mut dyn Sink, input: Input, l: usize, what: &str) -> Diagnostic {
    let bytes = input.bytes;
    let cx = &inner.cx;
    let mut rest_from = driver.fold.pos;
    // The prefix is folded as a stream that stopped there would have it (as partial input,
    // then as final), so that whatever chunks led here, the message is the same: a final fold
    // alone takes nothing of a node the prefix cuts, and a stream has folded some of it.
    if let Ok(pre) = inner.arena.parse(&bytes[..l], true)
        && pre.result.outcome != Outcome::Fail
        && driver.follow(&pre.ast, input.prefix(l), false, cx, sink)
        && driver.follow(&pre.ast, input.prefix(l), true, cx, sink)
    {
        // A complete match accounts for all of its text; a cut one only for what was folded.
        rest_from = if pre.result.outcome == Outcome::Success { l } else { driver.fold.pos };
    }
    let rest_from = rest_from.min(bytes.len());
    let rest = json_text::lossy(&bytes[rest_from..]);
    driver.fold.unplaced(rest_from, &rest, cx, sink);
    Diagnostic { offset: l.saturating_sub(inner.options.prefill.len()), message: format!("{what}; the rest is kept as content") }
}
