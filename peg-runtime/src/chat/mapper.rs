//! From a tagged AST to message text, incrementally.
//!
//! The AST is first flattened into [`Event`]s in input order (a tagged text node is one event;
//! a name, id or close marker another; scopes such as `tool` give a start and an end event).
//! A [`Fold`] consumes events left to right and writes to a [`Sink`]: content, reasoning, a tool
//! call's header (index, id, name) and its argument text, all append-only. A one-shot parse
//! folds every event of the final AST; a stream folds each partial AST from where the previous
//! one stopped, so both write the same text in the same order and the deltas add up to the
//! one-shot message by construction.
//!
//! Stability: in a partial parse, a node that is cut by the end of input, or ends exactly there,
//! may still change. Such a text node is *growing*: its bytes so far are emitted, and later
//! parses continue from there. Such a structural node (a name, a close) is not folded yet.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::{Ast, AstId, AstNode};
use crate::chat::args_schema::ArgsSchema;
use crate::chat::builder::tags;
use crate::chat::json_text::{self, JsonTail, LiteralToJson, PyToJson, escape_into, escapes, quote, unquote};
use crate::chat::message::{ChatMessage, push_token};
use crate::chat::recovery::{Recovery, RecoveryKind, TAG_PREFIX};

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Content,
    Reasoning,
    NewCall,
    EndCall,
    ToolName,
    ToolId,
    ToolArgs,
    ArgName,
    ArgString,
    ArgJson,
    EndArg,
    /// Raw string text inside a literal-syntax value.
    LitString,
    /// A token inside a literal-syntax value.
    LitToken,
    /// A mapping written as elements starts (`{`) or ends (`}`).
    ObjOpen,
    ObjClose,
    /// A list written as elements starts (`[`) or ends (`]`).
    ArrOpen,
    ArrClose,
    /// A member element's name.
    ElemKey,
    /// Arguments written as a JSON string literal holding them.
    ArgsString,
    /// A node the grammar tags as a recovery, placed after its children's events.
    Recovered(RecoveryKind),
}

impl Kind {
    /// The tag of a text kind.
    pub(crate) fn text_tag(self) -> Option<&'static str> {
        Some(match self {
            Kind::Content => tags::CONTENT,
            Kind::Reasoning => tags::REASONING,
            Kind::ToolArgs => tags::TOOL_ARGS,
            Kind::ArgString => tags::TOOL_ARG_STRING_VALUE,
            Kind::ArgJson => tags::TOOL_ARG_JSON_VALUE,
            _ => return None,
        })
    }

    /// The text kind of a tag.
    pub(crate) fn of_text_tag(tag: &str) -> Option<Kind> {
        [Kind::Content, Kind::Reasoning, Kind::ToolArgs, Kind::ArgString, Kind::ArgJson].into_iter().find(|k| k.text_tag() == Some(tag))
    }

    fn is_text(self) -> bool {
        matches!(self, Kind::Content | Kind::Reasoning | Kind::ToolArgs | Kind::ArgString | Kind::ArgJson | Kind::LitString)
    }
}

/// One step of the fold: a node's kind, span, and whether it can no longer change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub sealed: bool,
    /// The AST node it comes from.
    pub node: AstId,
}

/// Flattens `ast` into events. `final_input`: no more input will come, so every complete node
/// is sealed; otherwise a node ending at the end of input is not.
#[cfg(test)]
pub(crate) fn linearize(ast: &Ast, input_len: usize, final_input: bool, out: &mut Vec<Event>) {
    out.clear();
    Walk::new(ast, input_len, final_input, 0, &mut Vec::new()).roots(out);
}

/// A run of sibling subtrees whose events were all folded: a later walk of the same list
/// counts them without visiting them, so that folding a parse costs what is still open in it,
/// not the calls before (node identity across parses is checked by the last sibling's span).
#[derive(Debug, Clone)]
struct Folded {
    /// The list: its depth, its parent's start, and the events before it.
    depth: u32,
    parent_start: usize,
    before: usize,
    /// How many of its first children, the span of the last of them, their events and the
    /// key of the last one.
    children: usize,
    last: (usize, usize),
    events: usize,
    last_event: Option<(Kind, usize)>,
}

/// At most this many lists remember their folded prefix (one per nesting level that repeats).
const FOLDED_LISTS: usize = 8;

/// What the walk does with a node, read from its tag once.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// A text node: one event, nothing inside looked at.
    Text(Kind),
    /// A name, id or key: its event after the children's, once sealed, so that a node nested
    /// in it (a name inside an id) is sealed first and the events of a partial parse stay a
    /// prefix of a later one's.
    Name(Kind),
    /// An event once sealed; what is inside is the literal, not tags.
    Sealed(Kind),
    /// A close marker: its event at its end once sealed, then the children (a close the model
    /// left out is a recovery node inside).
    Close(Kind),
    /// A scope: a start and an end event around the children.
    Scope(Option<Kind>, Option<Kind>),
    /// A call's opening marker: a call scope unless already in one.
    ToolOpen,
    /// An argument's opening marker: its children (the name) only once it is read whole, so
    /// that an opener the output then leaves (a recovery ends the call before it) announced
    /// nothing.
    ArgOpen,
    /// A recovery node: its event after the children, once sealed.
    Recovered(Option<RecoveryKind>),
    /// Anything else: the children.
    Plain,
}

impl Role {
    fn of(tag: Option<&str>) -> Role {
        let Some(tag) = tag else { return Role::Plain };
        match tag {
            tags::CONTENT => Role::Text(Kind::Content),
            tags::REASONING => Role::Text(Kind::Reasoning),
            tags::TOOL_ARGS => Role::Text(Kind::ToolArgs),
            tags::TOOL_ARG_STRING_VALUE => Role::Text(Kind::ArgString),
            tags::TOOL_ARG_JSON_VALUE => Role::Text(Kind::ArgJson),
            tags::TOOL_ARG_LITERAL_STRING => Role::Text(Kind::LitString),
            tags::TOOL_NAME => Role::Name(Kind::ToolName),
            tags::TOOL_ID => Role::Name(Kind::ToolId),
            tags::TOOL_ARG_NAME => Role::Name(Kind::ArgName),
            tags::TOOL_ARG_ELEMENT_KEY => Role::Name(Kind::ElemKey),
            tags::TOOL_ARG_LITERAL_TOKEN => Role::Sealed(Kind::LitToken),
            // Decoded whole, so only once sealed.
            tags::TOOL_ARGS_STRING => Role::Sealed(Kind::ArgsString),
            tags::TOOL_CLOSE => Role::Close(Kind::EndCall),
            tags::TOOL_ARG_CLOSE => Role::Close(Kind::EndArg),
            tags::TOOL => Role::Scope(Some(Kind::NewCall), Some(Kind::EndCall)),
            tags::TOOL_OPEN => Role::ToolOpen,
            tags::TOOL_ARG_OPEN => Role::ArgOpen,
            tags::TOOL_ARG => Role::Scope(None, Some(Kind::EndArg)),
            tags::TOOL_ARG_ELEMENT_OBJECT => Role::Scope(Some(Kind::ObjOpen), Some(Kind::ObjClose)),
            tags::TOOL_ARG_ELEMENT_ARRAY => Role::Scope(Some(Kind::ArrOpen), Some(Kind::ArrClose)),
            tag if tag.starts_with(TAG_PREFIX) => Role::Recovered(RecoveryKind::of_tag(tag)),
            _ => Role::Plain,
        }
    }
}

/// One flattening of an AST into events. Events before `lo` (already folded) are counted,
/// not stored: `out` holds events `lo..`.
struct Walk<'a> {
    ast: &'a Ast,
    input_len: usize,
    final_input: bool,
    lo: usize,
    /// Events so far, stored or not.
    count: usize,
    /// The key of the event just before `lo`, when the walk saw it.
    before_lo: Option<(Kind, usize)>,
    last_key: Option<(Kind, usize)>,
    /// A complete node ends exactly at the end of input: more input seals it.
    fragile: bool,
    folded: &'a mut Vec<Folded>,
}

impl<'a> Walk<'a> {
    fn new(ast: &'a Ast, input_len: usize, final_input: bool, lo: usize, folded: &'a mut Vec<Folded>) -> Walk<'a> {
        Walk { ast, input_len, final_input, lo, count: 0, before_lo: None, last_key: None, fragile: false, folded }
    }

    fn roots(&mut self, out: &mut Vec<Event>) {
        let ast = self.ast;
        self.list(0, usize::MAX, &ast.roots, false, out);
    }

    fn sealed(&mut self, n: &AstNode) -> bool {
        let complete = !n.partial;
        if complete && !self.final_input && n.end == self.input_len {
            self.fragile = true;
        }
        complete && (self.final_input || n.end < self.input_len)
    }

    fn push(&mut self, ev: Event, out: &mut Vec<Event>) {
        let key = Some((ev.kind, ev.start));
        if self.count >= self.lo {
            out.push(ev);
        } else if self.count + 1 == self.lo {
            self.before_lo = key;
        }
        self.last_key = key;
        self.count += 1;
    }

    /// Takes back the last event (an empty scope's start).
    fn unpush(&mut self, out: &mut Vec<Event>) {
        self.count -= 1;
        if self.count >= self.lo {
            out.pop();
        } else if self.count + 1 == self.lo {
            self.before_lo = None;
        }
        self.last_key = None;
    }

    /// The events of `children`, the children of a node at `depth` starting at `parent_start`.
    fn list(&mut self, depth: u32, parent_start: usize, children: &[AstId], in_tool: bool, out: &mut Vec<Event>) {
        let before = self.count;
        let mut from = 0;
        if let Some(f) = self.folded.iter().find(|f| (f.depth, f.parent_start, f.before) == (depth, parent_start, before)) {
            let last = children.get(f.children - 1).map(|&c| self.ast.node(c));
            if last.is_some_and(|n| (n.start, n.end) == f.last && !n.partial && (self.final_input || n.end < self.input_len)) {
                let (children, events, last_event) = (f.children, f.events, f.last_event);
                from = children;
                self.count += events;
                if events > 0 {
                    self.last_key = last_event;
                    if self.count == self.lo {
                        self.before_lo = last_event;
                    }
                }
            }
        }
        for (j, &c) in children.iter().enumerate().skip(from) {
            self.walk(c, depth + 1, in_tool, out);
            let n = self.ast.node(c);
            if self.lo > 0 && self.count <= self.lo && !n.partial && n.end < self.input_len {
                self.remember(Folded {
                    depth,
                    parent_start,
                    before,
                    children: j + 1,
                    last: (n.start, n.end),
                    events: self.count - before,
                    last_event: self.last_key,
                });
            }
        }
    }

    fn remember(&mut self, f: Folded) {
        let same = |g: &Folded| (g.depth, g.parent_start, g.before) == (f.depth, f.parent_start, f.before);
        match self.folded.iter().position(same) {
            Some(k) => self.folded[k] = f,
            None if self.folded.len() < FOLDED_LISTS => self.folded.push(f),
            None => {}
        }
    }

    fn walk(&mut self, id: AstId, depth: u32, in_tool: bool, out: &mut Vec<Event>) {
        let ast = self.ast;
        let n = ast.node(id);
        let sealed = self.sealed(n);
        let ev = |kind| Event { kind, start: n.start, end: n.end, sealed, node: id };
        let at_end = |kind| Event { kind, start: n.end, end: n.end, sealed, node: id };
        match Role::of(n.tag.as_deref()) {
            Role::Text(kind) => {
                // An empty growing node has nothing to say yet (and may vanish).
                if sealed || n.end > n.start {
                    self.push(ev(kind), out);
                }
            }
            Role::Name(kind) => {
                self.list(depth, n.start, &n.children, in_tool, out);
                if sealed {
                    self.push(ev(kind), out);
                }
            }
            Role::Sealed(kind) => {
                if sealed {
                    self.push(ev(kind), out);
                }
            }
            Role::Close(kind) => {
                if sealed {
                    self.push(at_end(kind), out);
                }
                self.list(depth, n.start, &n.children, in_tool, out);
            }
            Role::Scope(start, end) => self.scope(id, depth, in_tool, start, end, out),
            Role::ToolOpen if !in_tool => self.scope(id, depth, in_tool, Some(Kind::NewCall), None, out),
            Role::Recovered(kind) => {
                self.list(depth, n.start, &n.children, in_tool, out);
                // After the children, so that the events of a partial parse stay a prefix of
                // those of a later one.
                if let (Some(kind), true) = (kind, sealed) {
                    self.push(ev(Kind::Recovered(kind)), out);
                }
            }
            Role::ArgOpen => {
                if sealed {
                    self.list(depth, n.start, &n.children, in_tool, out);
                }
            }
            Role::ToolOpen | Role::Plain => self.list(depth, n.start, &n.children, in_tool, out),
        }
    }

    /// A scope's start event is placed only if something inside is folded (or the scope is
    /// sealed), so a speculative, still empty scope at the end of input leaves no trace.
    fn scope(&mut self, id: AstId, depth: u32, in_tool: bool, start: Option<Kind>, end: Option<Kind>, out: &mut Vec<Event>) {
        let n = self.ast.node(id);
        let sealed = self.sealed(n);
        let mark = self.count;
        if let Some(kind) = start {
            self.push(Event { kind, start: n.start, end: n.start, sealed: true, node: id }, out);
        }
        self.list(depth, n.start, &n.children, in_tool || start == Some(Kind::NewCall), out);
        if start.is_some() && self.count == mark + 1 && !sealed {
            self.unpush(out);
        }
        if let (Some(kind), true) = (end, sealed) {
            self.push(Event { kind, start: n.end, end: n.end, sealed, node: id }, out);
        }
    }
}

/// The raw texts a nullable string argument is null as: JSON's word, and Python's (templates
/// print values with `str`).
const NULL_WORDS: [&str; 2] = ["null", "None"];

/// How a schema types an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgType {
    /// `type: string` (or only strings allowed).
    String,
    /// A string or null: the text `null` (or Python's `None`) is null, anything else a string.
    NullableString,
    /// Any other declared type.
    Json,
}

impl ArgType {
    /// Reads a property schema ([`Admits`](crate::schema::Admits)); `None` when it does not say.
    pub(crate) fn of(schema: &serde_json::Value) -> Option<ArgType> {
        let a = crate::schema::Admits::of(schema);
        Some(match (a.only_strings(), a.null) {
            _ if a.says_nothing() => return None,
            (true, false) => ArgType::String,
            (true, true) => ArgType::NullableString,
            (false, _) => ArgType::Json,
        })
    }
}

/// What the fold needs to know about the request and the grammar.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// Tool name to argument name to type.
    pub arg_types: HashMap<String, HashMap<String, ArgType>>,
    /// The grammar tags call ids: wait for one before announcing a call.
    pub has_tool_id: bool,
    /// In a call, the grammar can put the id after the arguments: a call announced before its
    /// id is known (its arguments started) goes out without one, and the id follows in a
    /// fragment of its own once read (or generated when the call ends). Otherwise the arguments
    /// starting mean no id is coming, and the header carries a generated one.
    pub id_after_args: bool,
    /// The grammar tags `tool` or `tool_open`: calls are delimited by scopes.
    pub has_scopes: bool,
    /// Every parser of native arguments is a JSON scanner (`predict::args_are_json`).
    pub args_json: bool,
    /// Generated ids are this prefix plus the call index.
    pub id_prefix: String,
    /// Literals some parsers of a text kind start with: a growing node of that kind whose
    /// text is still a prefix of one may vanish (the literal may fail), so it is not folded.
    pub leading: Vec<(Kind, String)>,
    /// Length of the prefill: recovery offsets are into the model output after it.
    pub prefill: usize,
    /// The request's tools, each with the schema its arguments are checked against (`None`:
    /// not checked). Empty when the request declares none: calls are then not checked.
    pub tools: HashMap<String, Option<Arc<ArgsSchema>>>,
}

impl Context {
    fn arg_type(&self, tool: Option<&str>, arg: Option<&str>) -> Option<ArgType> {
        self.arg_types.get(tool?)?.get(arg?).copied()
    }
}

/// Where folded text goes.
pub(crate) trait Sink {
    fn content(&mut self, s: &str);
    fn reasoning(&mut self, s: &str);
    fn header(&mut self, index: usize, id: &str, name: &str);
    /// The id of call `index`, announced earlier without one (`header` with an empty id).
    fn late_id(&mut self, index: usize, id: &str);
    fn args(&mut self, index: usize, s: &str);
    /// The message emitted so far, where the sink knows it: then a parse that no longer agrees
    /// with the fold may be folded afresh ([`Driver::follow`]).
    fn emitted(&self) -> Option<&ChatMessage> {
        None
    }
}

/// Drops leading whitespace and holds trailing whitespace until more text follows, so that
/// the final text is trimmed and nothing emitted is ever retracted.
#[derive(Debug, Clone, Default)]
struct Trim {
    started: bool,
    held: String,
}

impl Trim {
    #[inline]
    fn push(&mut self, s: &str, mut emit: impl FnMut(&str)) {
        let s = if self.started {
            s
        } else {
            let t = s.trim_start();
            if t.is_empty() {
                return;
            }
            self.started = true;
            t
        };
        // A last byte that is ASCII and not whitespace ends the body (spares a Unicode trim).
        let body = if s.as_bytes().last().is_some_and(|&b| b > b' ' && b < 0x80) { s } else { s.trim_end() };
        if body.is_empty() {
            self.held.push_str(s);
            return;
        }
        if !self.held.is_empty() {
            emit(&self.held);
            self.held.clear();
        }
        emit(body);
        let rest = &s[body.len()..];
        if !rest.is_empty() {
            self.held.push_str(rest);
        }
    }
}

/// The state of the argument value being folded.
#[derive(Debug, Clone)]
enum Value {
    /// A JSON string: the opening quote is out.
    Str,
    /// A raw value the schema types as non-string: held whole, decided when complete.
    Held(String),
    /// A raw value of a nullable string: held while it could still be `null` or `None`.
    MaybeNull(String),
    /// A JSON value with only whitespace seen so far.
    Pending,
    /// A JSON (or Python) value streaming through the normalizer; the depth of the arguments'
    /// JSON where it started (to close it there if it is cut off).
    Json(PyToJson, Trim, usize),
    /// A literal-syntax value, converted piece by piece.
    Literal(LiteralToJson),
}

#[derive(Debug, Clone, Default)]
struct Call {
    name: Option<String>,
    /// The name as written, where it meant a declared tool written otherwise ([`declared_name`]).
    written_name: Option<String>,
    id: Option<String>,
    /// Set once the header is out.
    index: Option<usize>,
    /// The header went out without an id: it follows once read, or generated at the end.
    id_late: bool,
    /// Argument text produced before the header.
    buffer: String,
    args_any: bool,
    constructed: bool,
    arg_count: usize,
    arg_name: Option<String>,
    value: Option<Value>,
    /// Native arguments: normalizer and whitespace trim.
    py: PyToJson,
    trim: Trim,
    /// The input span folded into the call so far.
    start: usize,
    end: usize,
    /// All argument text written, kept to check the call against the request's tools.
    written: Option<String>,
    /// The argument text written, followed to close it if it is cut off. While `written` is
    /// kept, the tail follows it only when asked ([`Call::tail`]): up to `tail_at`.
    tail: JsonTail,
    tail_at: usize,
    /// The one-pass check's verdict on `written` ([`Fold::surely_fits`]) and the length it was
    /// given for.
    checked: Option<(usize, bool)>,
    /// The arguments came whole, a JSON object that surely fits the schema: checked as they
    /// went out and not kept, so `written` holds only what came after them.
    fitted_whole: bool,
    /// What was repaired to make the arguments valid JSON, for the recovery's detail.
    escaped_control: bool,
    closed_open: bool,
}

/// The mapper state: everything needed to continue folding where the last parse stopped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fold {
    content: Trim,
    reasoning: Trim,
    call: Option<Call>,
    headers: usize,
    /// Input offset folded so far (text of a growing node counts up to where it was read).
    pub pos: usize,
    /// Reused for escaped and normalized text, to spare an allocation per chunk.
    scratch: String,
    /// Input span of the event being folded (set by the [`Driver`]).
    pub at: (usize, usize),
    /// What was recovered so far, by offset.
    pub recoveries: Vec<Recovery>,
}

fn put_args(call: &mut Call, s: &str, sink: &mut dyn Sink) {
    if s.is_empty() {
        return;
    }
    call.args_any = true;
    match &mut call.written {
        // The tail follows the kept text when asked (`Call::tail`).
        Some(w) => push_token(w, s),
        None => call.tail.push(s),
    }
    emit_args(call, s, sink);
}

impl Call {
    /// The tail, caught up with all argument text written (spares following every piece of
    /// a streamed argument when the text is kept anyway).
    fn tail(&mut self) -> &mut JsonTail {
        if let Some(w) = &self.written {
            if let Some(rest) = w.get(self.tail_at..).filter(|r| !r.is_empty()) {
                self.tail.push(rest);
            }
            self.tail_at = w.len();
        }
        &mut self.tail
    }
}

/// Whether `s` is only JSON whitespace (or empty).
fn is_json_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Sends argument text to the sink, or to the call's buffer until its header is out.
fn emit_args(call: &mut Call, s: &str, sink: &mut dyn Sink) {
    match call.index {
        Some(i) => sink.args(i, s),
        None => call.buffer.push_str(s),
    }
}

impl Fold {
    /// Folds a text event's new bytes `text`. `first`: the node's first piece; `sealed`: its last.
    pub(crate) fn text(&mut self, kind: Kind, text: &str, first: bool, sealed: bool, cx: &Context, sink: &mut dyn Sink) {
        match kind {
            Kind::Content => self.content.push(text, |s| sink.content(s)),
            Kind::Reasoning => self.reasoning.push(text, |s| sink.reasoning(s)),
            Kind::ToolArgs => {
                let mut norm = std::mem::take(&mut self.scratch);
                norm.clear();
                let (headers, call) = self.ensure_call(cx, sink);
                if first && sealed && Self::whole_json_args(headers, call, text, cx, sink) {
                    self.scratch = norm;
                    return;
                }
                let mut pieces = std::mem::take(&mut call.trim);
                if sealed {
                    call.py.push(text, &mut norm);
                    call.py.finish(&mut norm);
                    pieces.push(&norm, |s| put_args(call, s, sink));
                    pieces.held.clear();
                } else {
                    let json = call.py.push_through(text, &mut norm);
                    pieces.push(json, |s| put_args(call, s, sink));
                }
                call.trim = pieces;
                if call.index.is_none() {
                    Self::maybe_header(headers, call, cx, false, sink);
                }
                self.scratch = norm;
            }
            Kind::ArgString | Kind::ArgJson => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let (headers, call) = self.ensure_call(cx, sink);
                if first {
                    Self::close_value(call, sink);
                    call.value = Some(match kind {
                        Kind::ArgJson => Value::Pending,
                        _ => match cx.arg_type(call.name.as_deref(), call.arg_name.as_deref()) {
                            Some(ArgType::Json) => Value::Held(String::new()),
                            Some(ArgType::NullableString) => Value::MaybeNull(String::new()),
                            _ => {
                                put_args(call, "\"", sink);
                                Value::Str
                            }
                        },
                    });
                }
                Self::value_text(call, text, &mut scratch, sink);
                if sealed {
                    Self::close_value(call, sink);
                }
                Self::maybe_header(headers, call, cx, false, sink);
                self.scratch = scratch;
            }
            Kind::LitString => self.literal(Some((first, sealed)), text, cx, sink),
            _ => {}
        }
    }

    /// Native arguments whole in one piece (a one-shot parse) that are certainly a JSON
    /// object: the normalizer and the trim would pass them through as they are (trimmed) and
    /// leave the tail after a complete value, so they are written in one copy. The check
    /// against the tool's schema is done in the same pass when the name is known (its
    /// verdict kept for [`Fold::check_call`]). `false` (nothing done) otherwise.
    fn whole_json_args(headers: &mut usize, call: &mut Call, text: &str, cx: &Context, sink: &mut dyn Sink) -> bool {
        if call.args_any || call.value.is_some() || call.trim.started || !call.py.is_fresh() || !call.tail().is_fresh() {
            return false;
        }
        let schema = call.name.as_deref().and_then(|n| cx.tools.get(n)).and_then(Option::as_deref);
        let fits = match schema {
            Some(s) => s.surely_fits(text),
            None => false,
        };
        if !fits && !super::args_direct::surely_object(text) {
            return false;
        }
        // Valid JSON around which only ASCII whitespace may stand.
        let text = text.trim_ascii();
        call.trim.started = true;
        call.args_any = true;
        call.tail().skip_value();
        if fits {
            // Checked already: a copy kept for the check would be the only one.
            call.fitted_whole = true;
        } else if let Some(w) = &mut call.written {
            w.push_str(text);
        }
        // The tail followed the value whole.
        call.tail_at = call.written.as_ref().map_or(0, String::len);
        // The header first where it is ready: the arguments then go to the sink directly, not
        // through the call's buffer (a second copy of them).
        Self::maybe_header(headers, call, cx, false, sink);
        emit_args(call, text, sink);
        true
    }

    /// Folds a piece of a literal-syntax value: a token (`string: None`) or string text with
    /// its (first, sealed) flags.
    fn literal(&mut self, string: Option<(bool, bool)>, text: &str, cx: &Context, sink: &mut dyn Sink) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let (headers, call) = self.ensure_call(cx, sink);
        if !matches!(call.value, Some(Value::Literal(_))) {
            Self::close_value(call, sink);
            call.value = Some(Value::Literal(LiteralToJson::default()));
        }
        if let Some(Value::Literal(l)) = &mut call.value {
            match string {
                Some((first, sealed)) => l.string(text, first, sealed, &mut scratch),
                None => l.token(text, &mut scratch),
            }
        }
        put_args(call, &scratch, sink);
        Self::maybe_header(headers, call, cx, false, sink);
        self.scratch = scratch;
    }

    /// [`Fold::text`] of a native arguments piece that continues a `"` string with `text`
    /// free of quotes, control characters and incomplete escapes: the normalizer would pass
    /// it through unchanged, so it is skipped. `false` (nothing done) if that does not apply.
    #[inline]
    pub(crate) fn plain_args(&mut self, text: &str, cx: &Context, sink: &mut dyn Sink) -> bool {
        let Some(call) = &mut self.call else { return false };
        if call.py.open_quote() != Some('"') {
            return false;
        }
        let mut pieces = std::mem::take(&mut call.trim);
        pieces.push(text, |s| put_args(call, s, sink));
        call.trim = pieces;
        Self::maybe_header(&mut self.headers, call, cx, false, sink);
        true
    }

    /// [`Fold::text`] of a later piece of an argument value that streams as a JSON string
    /// (the common case of a long constructed argument), without moving the value state.
    /// `false` (nothing done) if the value is in another state.
    fn string_value(&mut self, text: &str, cx: &Context, sink: &mut dyn Sink) -> bool {
        let Some(call) = &mut self.call else { return false };
        if !matches!(call.value, Some(Value::Str)) {
            return false;
        }
        put_string_text(call, text, &mut self.scratch, sink);
        Self::maybe_header(&mut self.headers, call, cx, false, sink);
        true
    }

    fn value_text(call: &mut Call, text: &str, scratch: &mut String, sink: &mut dyn Sink) {
        scratch.clear();
        let mut text = text;
        let mut value = call.value.take();
        if let Some(Value::Pending) = value {
            let t = text.trim_start();
            let Some(c) = t.chars().next() else {
                call.value = value;
                return;
            };
            text = t;
            if matches!(c, '{' | '[' | '"' | '\'' | '-' | '0'..='9' | 't' | 'f' | 'n' | 'T' | 'F' | 'N') {
                value = Some(Value::Json(PyToJson::default(), Trim::default(), call.tail().depth()));
            } else {
                // Not JSON after all: keep the text as a string.
                put_args(call, "\"", sink);
                value = Some(Value::Str);
            }
        }
        match &mut value {
            Some(Value::Str) => put_string_text(call, text, scratch, sink),
            Some(Value::Held(buf)) => buf.push_str(text),
            Some(Value::MaybeNull(buf)) => {
                buf.push_str(text);
                let t = buf.trim_start();
                if !NULL_WORDS.iter().any(|w| w.starts_with(t) || t.trim_end() == *w) {
                    let mut esc = String::from("\"");
                    escape_into(&mut esc, buf);
                    put_args(call, &esc, sink);
                    value = Some(Value::Str);
                }
            }
            Some(Value::Json(py, trim, _)) => {
                py.push(text, scratch);
                trim.push(scratch, |s| put_args(call, s, sink));
            }
            _ => {}
        }
        call.value = value;
    }

    /// Ends the current value: closes its string or writes out the held or pending value.
    fn close_value(call: &mut Call, sink: &mut dyn Sink) {
        match call.value.take() {
            Some(Value::Str) => put_args(call, "\"", sink),
            Some(Value::Held(buf)) => {
                let t = buf.trim();
                // JSON as written, else a Python literal as JSON, else the text as a string.
                if !t.is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() {
                    put_args(call, t, sink);
                } else if let Ok(j) = crate::python::to_json(t) {
                    put_args(call, &j, sink);
                } else {
                    put_args(call, &quote(&buf), sink);
                }
            }
            Some(Value::MaybeNull(buf)) => {
                put_args(call, &if NULL_WORDS.contains(&buf.trim()) { "null".to_owned() } else { quote(&buf) }, sink);
            }
            Some(Value::Pending) => put_args(call, "null", sink),
            Some(Value::Json(mut py, mut trim, depth)) => {
                let mut norm = String::new();
                py.finish(&mut norm);
                trim.push(&norm, |s| put_args(call, s, sink));
                call.escaped_control |= py.escaped_control;
                Self::close_open(call, depth, sink);
            }
            Some(Value::Literal(mut l)) => {
                let mut tail = String::new();
                l.finish(&mut tail);
                put_args(call, &tail, sink);
            }
            None => {}
        }
    }

    /// Folds a structural event; `text` is the node's text.
    pub(crate) fn structural(&mut self, kind: Kind, text: &str, cx: &Context, sink: &mut dyn Sink) {
        match kind {
            Kind::NewCall => self.new_call(cx, sink),
            Kind::EndCall => self.end_call(cx, sink),
            Kind::ToolName => {
                if !cx.has_scopes && self.call.as_ref().is_some_and(|c| c.name.is_some()) {
                    self.new_call(cx, sink);
                }
                let (headers, call) = self.ensure_call(cx, sink);
                if call.name.is_none() {
                    let written = unquote(text);
                    match declared_name(&written, &cx.tools) {
                        Some(name) => (call.name, call.written_name) = (Some(name), Some(written)),
                        None => call.name = Some(written),
                    }
                }
                Self::maybe_header(headers, call, cx, false, sink);
            }
            Kind::ToolId => {
                if !cx.has_scopes && self.call.as_ref().is_some_and(|c| c.id.is_some() || (c.index.is_some() && !c.id_late)) {
                    self.new_call(cx, sink);
                }
                let (headers, call) = self.ensure_call(cx, sink);
                match call.index {
                    None if call.id.is_none() => call.id = Some(unquote(text)),
                    Some(index) if call.id_late => {
                        call.id_late = false;
                        let id = unquote(text);
                        sink.late_id(index, &id);
                        call.id = Some(id);
                    }
                    _ => {}
                }
                Self::maybe_header(headers, call, cx, false, sink);
            }
            Kind::ArgName => {
                let (headers, call) = self.ensure_call(cx, sink);
                Self::close_value(call, sink);
                let name = unquote(text);
                let mut piece = String::from(if call.arg_count == 0 { "{" } else { ", " });
                piece.push_str(&quote(&name));
                piece.push_str(": ");
                call.constructed = true;
                call.arg_count += 1;
                call.arg_name = Some(name);
                put_args(call, &piece, sink);
                Self::maybe_header(headers, call, cx, false, sink);
            }
            Kind::EndArg => {
                if let Some(call) = &mut self.call {
                    Self::close_value(call, sink);
                }
            }
            Kind::LitToken => self.literal(None, text, cx, sink),
            Kind::ObjOpen => self.literal(None, "{", cx, sink),
            Kind::ObjClose => self.literal(None, "}", cx, sink),
            Kind::ArrOpen => self.literal(None, "[", cx, sink),
            Kind::ArrClose => self.literal(None, "]", cx, sink),
            Kind::ElemKey => {
                self.literal(Some((true, true)), text, cx, sink);
                self.literal(None, ":", cx, sink);
            }
            Kind::ArgsString => {
                let literal = text.trim();
                let decoded = serde_json::from_str::<String>(literal)
                    .ok()
                    .or_else(|| crate::python::to_json(literal).ok().and_then(|j| serde_json::from_str::<String>(&j).ok()));
                // A literal that does not decode is kept as written (never lose text).
                let args = decoded.as_deref().unwrap_or(text);
                let mut tail = JsonTail::default();
                tail.push(args);
                if tail.is_invalid() && crate::python::to_json(args.trim()).is_err() {
                    // No JSON can be made of it by appending: the text is content, the call
                    // gets no arguments.
                    self.content.push(args, |s| sink.content(s));
                    self.record(RecoveryKind::ArgumentsOutsideSchema, self.at, "the arguments are not JSON; kept as content".into(), cx);
                } else {
                    self.text(Kind::ToolArgs, args, true, true, cx, sink);
                }
            }
            Kind::Recovered(kind) => self.record(kind, self.at, String::new(), cx),
            _ => {}
        }
    }

    /// Records a recovery over the input span `(start, end)`.
    fn record(&mut self, kind: RecoveryKind, (start, end): (usize, usize), detail: String, cx: &Context) {
        let start = start.max(cx.prefill);
        let r = Recovery { kind, offset: start - cx.prefill, len: end.saturating_sub(start), detail };
        // The same deviation seen twice where two readings nest (a call shape inside another)
        // is one recovery.
        if let Some(same) = self.recoveries.iter_mut().find(|x| x.kind == kind && x.offset == r.offset && x.detail == r.detail) {
            same.len = same.len.max(r.len);
            return;
        }
        let at = self.recoveries.partition_point(|x| x.offset <= r.offset);
        // Closes left out where the output ends (a value's, its call's, the section's) are one
        // recovery: the output stopped.
        if let Some(prev) = at.checked_sub(1).map(|i| &mut self.recoveries[i])
            && kind == RecoveryKind::MissingClose
            && prev.kind == kind
            && r.offset <= prev.offset + prev.len
            && r.detail.is_empty()
        {
            prev.len = prev.len.max(r.offset + r.len - prev.offset);
            return;
        }
        self.recoveries.insert(at, r);
    }

    /// Extends the current call over the event being folded.
    pub(crate) fn reach(&mut self) {
        if let Some(call) = &mut self.call {
            call.end = call.end.max(self.at.1);
        }
    }

    /// Flags call `index` if it does not fit the request's tools: an unknown name, arguments
    /// that are no JSON object or do not fit the tool's schema.
    fn check_call(&mut self, index: usize, call: &mut Call, cx: &Context) {
        // The one-pass check settles nearly every call; what it cannot, the value decides.
        let sure = Self::surely_fits(call, cx);
        let span = (call.start, call.end.max(call.start));
        let name = call.name.as_deref().unwrap_or("");
        if let Some(written) = &call.written_name {
            self.record(RecoveryKind::ToolNameRepaired, span, format!("call {index}: {written} read as {name}"), cx);
        }
        let Some(args) = &call.written else { return };
        let schema = match cx.tools.get(name) {
            Some(schema) => schema.as_deref(),
            None => {
                let detail = match name {
                    "" => format!("call {index} has no name"),
                    _ => format!("call {index}: {name} is not a declared tool"),
                };
                self.record(RecoveryKind::UnknownTool, span, detail, cx);
                None
            }
        };
        let misfit = if sure {
            None
        } else if call.fitted_whole {
            // Anything but whitespace after a whole JSON object leaves no JSON object.
            Some("are not a JSON object".to_owned())
        } else {
            match serde_json::from_str::<serde_json::Value>(args) {
                Ok(v) if v.is_object() => match schema {
                    Some(s) if !s.fits(&v, args) => Some(format!("do not fit the schema of {name}")),
                    _ => None,
                },
                _ => Some("are not a JSON object".to_owned()),
            }
        };
        if let Some(why) = misfit {
            self.record(RecoveryKind::ArgumentsOutsideSchema, span, format!("call {index}: the arguments {why}"), cx);
        }
    }

    /// The current call (opened if there is none) and the header counter.
    fn ensure_call(&mut self, cx: &Context, sink: &mut dyn Sink) -> (&mut usize, &mut Call) {
        if self.call.is_none() {
            self.new_call(cx, sink);
        }
        (&mut self.headers, self.call.as_mut().expect("just created"))
    }

    fn new_call(&mut self, cx: &Context, sink: &mut dyn Sink) {
        self.end_call(cx, sink);
        let written = (!cx.tools.is_empty()).then(String::new);
        let py = if cx.args_json { PyToJson::json() } else { PyToJson::default() };
        self.call = Some(Call { start: self.at.0, end: self.at.0, written, py, ..Call::default() });
    }

    fn end_call(&mut self, cx: &Context, sink: &mut dyn Sink) {
        let Some(mut call) = self.call.take() else { return };
        Self::close_value(&mut call, sink);
        let mut tail = String::new();
        call.py.finish(&mut tail);
        let mut trim = std::mem::take(&mut call.trim);
        trim.push(&tail, |s| put_args(&mut call, s, sink));
        call.escaped_control |= call.py.escaped_control;
        if call.args_any {
            // A constructed object is closed below; a member cut off before its value gets one.
            let depth = usize::from(call.constructed);
            // Arguments that surely fit the schema are a whole value: nothing is left open.
            if !(depth == 0 && Self::surely_fits(&mut call, cx)) {
                Self::close_open(&mut call, depth, sink);
            }
        }
        if call.constructed {
            put_args(&mut call, "}", sink);
        } else if !call.args_any && call.name.is_some() {
            put_args(&mut call, "{}", sink);
        }
        Self::maybe_header(&mut self.headers, &mut call, cx, true, sink);
        if let Some(index) = call.index {
            if call.escaped_control || call.closed_open {
                let what = match (call.escaped_control, call.closed_open) {
                    (true, true) => "control characters escaped and what was left open closed",
                    (true, false) => "control characters escaped",
                    _ => "what was left open closed",
                };
                self.record(RecoveryKind::ArgumentsRepaired, (call.start, call.end.max(call.start)), format!("call {index}: {what}"), cx);
            }
            self.check_call(index, &mut call, cx);
        }
    }

    /// Whether the argument text written so far is surely one JSON object that fits the
    /// call's schema (without a schema: surely an object), by the one-pass check. The verdict
    /// is kept until more text is written, so ending a call checks it once.
    fn surely_fits(call: &mut Call, cx: &Context) -> bool {
        let Some(args) = &call.written else { return false };
        if call.fitted_whole {
            return is_json_space(args);
        }
        if let Some((len, fits)) = call.checked
            && len == args.len()
        {
            return fits;
        }
        let fits = match call.name.as_deref().and_then(|n| cx.tools.get(n)).and_then(Option::as_deref) {
            Some(schema) => schema.surely_fits(args),
            None => super::args_direct::surely_object(args),
        };
        call.checked = Some((args.len(), fits));
        fits
    }

    /// Appends what closes the arguments' JSON value open at `depth`, if it was cut off (the
    /// text written so far stays: it may have been streamed).
    fn close_open(call: &mut Call, depth: usize, sink: &mut dyn Sink) {
        let tail = call.tail();
        if tail.is_closed_at(depth) || tail.is_invalid() {
            return;
        }
        if let Some(suffix) = tail.close_to(depth) {
            call.closed_open = true;
            put_args(call, &suffix, sink);
        }
    }

    /// Announces the call once its name is known and its id is known or its arguments started
    /// (or the call ends). Until then argument text waits in the call's buffer. A call whose id
    /// can still come after its arguments is announced without one ([`Sink::late_id`] follows);
    /// otherwise a missing id is generated.
    fn maybe_header(headers: &mut usize, call: &mut Call, cx: &Context, closing: bool, sink: &mut dyn Sink) {
        let generated = |index: usize| {
            // (Without `format!`: an id per call of every stream.)
            let mut id = String::with_capacity(cx.id_prefix.len() + 4);
            id.push_str(&cx.id_prefix);
            id.push_str(itoa::Buffer::new().format(index));
            id
        };
        if let Some(index) = call.index {
            if closing && call.id_late {
                call.id_late = false;
                sink.late_id(index, &generated(index));
            }
            return;
        }
        let ready = match &call.name {
            Some(_) => closing || call.id.is_some() || !cx.has_tool_id || call.args_any,
            // A nameless call is announced only if it produced arguments (never lose text).
            None => closing && call.args_any,
        };
        if !ready {
            return;
        }
        let index = *headers;
        *headers += 1;
        call.index = Some(index);
        let id = match &call.id {
            Some(id) => id.clone(),
            None if cx.id_after_args && !closing => {
                call.id_late = true;
                String::new()
            }
            None => generated(index),
        };
        sink.header(index, &id, call.name.as_deref().unwrap_or(""));
        if !call.buffer.is_empty() {
            sink.args(index, &std::mem::take(&mut call.buffer));
        }
    }

    /// For a growing JSON-ish text of `kind`: the quote of the string it is inside, if any.
    pub(crate) fn open_quote(&self, kind: Kind) -> Option<char> {
        let call = self.call.as_ref()?;
        match kind {
            Kind::ToolArgs => call.py.open_quote(),
            Kind::ArgJson => match &call.value {
                Some(Value::Json(py, _, _)) => py.open_quote(),
                _ => None,
            },
            _ => None,
        }
    }

    /// Content that did not come from a tagged node (the unparsed remainder in lenient mode).
    pub(crate) fn extra_content(&mut self, text: &str, sink: &mut dyn Sink) {
        self.content.push(text, |s| sink.content(s));
    }

    /// The output from input offset `from` on, which the grammar has no place for: content,
    /// reported. A stream that sends later text the same way extends the report with
    /// [`Fold::more_unplaced`].
    pub(crate) fn unplaced(&mut self, from: usize, text: &str, cx: &Context, sink: &mut dyn Sink) {
        if text.is_empty() {
            return;
        }
        self.extra_content(text, sink);
        self.record(RecoveryKind::UnplacedText, (from, from + text.len()), String::new(), cx);
    }

    /// More unplaced output after [`Fold::unplaced`].
    pub(crate) fn more_unplaced(&mut self, text: &str, sink: &mut dyn Sink) {
        self.extra_content(text, sink);
        if let Some(r) = self.recoveries.iter_mut().rev().find(|r| r.kind == RecoveryKind::UnplacedText) {
            r.len += text.len();
        }
    }

    /// The input is complete: close the open call; held trailing whitespace is dropped.
    pub(crate) fn finish(&mut self, cx: &Context, sink: &mut dyn Sink) {
        self.end_call(cx, sink);
    }
}

/// Argument text inside a JSON string, escaped; as it is when nothing needs escaping (the
/// common case: no copy). `scratch` is overwritten.
fn put_string_text(call: &mut Call, text: &str, scratch: &mut String, sink: &mut dyn Sink) {
    if text.bytes().any(escapes) {
        scratch.clear();
        escape_into(scratch, text);
        put_args(call, scratch, sink);
    } else {
        put_args(call, text, sink);
    }
}

/// Largest `end' <= end` such that `input[from..end']` does not stop inside a UTF-8 sequence
/// that more input could complete.
fn utf8_safe_end(input: &[u8], from: usize, end: usize) -> usize {
    match std::str::from_utf8(&input[from..end]) {
        Ok(_) => end,
        Err(e) if e.error_len().is_none() => from + e.valid_up_to(),
        Err(_) => {
            // Invalid bytes inside: only an incomplete sequence at the very end is held back.
            let tail_start = end.saturating_sub(3).max(from);
            for s in tail_start..end {
                if std::str::from_utf8(&input[s..end]).is_err_and(|e| e.error_len().is_none() && e.valid_up_to() == 0) && (input[s] & 0xC0) == 0xC0 {
                    return s;
                }
            }
            end
        }
    }
}

/// The input a parse read: its bytes and, where known, text that is a `str` already: all of
/// it for a one-shot parse (which is given a `str`), the last chunk for a stream (pushed as a
/// `str`). Text cut from it at character boundaries needs no second UTF-8 check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Input<'a> {
    pub bytes: &'a [u8],
    /// `bytes[text_at..]` as a `str`.
    text: Option<&'a str>,
    text_at: usize,
}

impl<'a> Input<'a> {
    /// `bytes`, whose last bytes are `tail`: a stream's input ends with the chunk just pushed
    /// (`Resume::push` appends; checked in debug builds).
    pub(crate) fn with_tail(bytes: &'a [u8], tail: &'a str) -> Input<'a> {
        debug_assert!(bytes.ends_with(tail.as_bytes()));
        match bytes.len().checked_sub(tail.len()) {
            Some(at) => Input { bytes, text: Some(tail), text_at: at },
            None => Input::from(bytes),
        }
    }

    /// The first `len` bytes.
    pub(crate) fn prefix(self, len: usize) -> Input<'a> {
        let text = self.text.and_then(|t| t.get(..len.checked_sub(self.text_at)?));
        Input { bytes: &self.bytes[..len], text, text_at: self.text_at }
    }

    /// Bytes `from..end` as text, if they are known to be.
    fn text(self, from: usize, end: usize) -> Option<&'a str> {
        self.text?.get(from.checked_sub(self.text_at)?..end - self.text_at)
    }
}

impl<'a> From<&'a [u8]> for Input<'a> {
    fn from(bytes: &'a [u8]) -> Input<'a> {
        Input { bytes, text: None, text_at: 0 }
    }
}

impl<'a> From<&'a str> for Input<'a> {
    fn from(text: &'a str) -> Input<'a> {
        Input { bytes: text.as_bytes(), text: Some(text), text_at: 0 }
    }
}

/// Drives a [`Fold`] over successive ASTs of one growing input.
///
/// Between parses, a growing node whose growth is predictable may be extended directly with
/// [`Driver::grow`] (see `stream.rs`): it is folded exactly as the next parse would fold it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Driver {
    pub fold: Fold,
    /// Events fully folded, a prefix of every later event list.
    done: usize,
    last: Option<(Kind, usize)>,
    /// The growing text node: kind, start, bytes read up to.
    growing: Option<(Kind, usize, usize)>,
    /// The growing node in the AST last advanced over, when the walk found nothing else that
    /// more input could change (see [`Driver::grew_in_place`]).
    in_place: Option<AstId>,
    /// Events `done..` of the last walk.
    events: Vec<Event>,
    folded: Vec<Folded>,
    /// What the sink emitted was folded elsewhere ([`Driver::adopting`]).
    adopt: bool,
}

impl Driver {
    /// A driver taking over a stream whose deltas so far were folded without it (the
    /// structural lane, `lane.rs`): its first parse is folded afresh, and only what that fold
    /// adds to the message the sink emitted is emitted ([`Driver::follow`]).
    pub(crate) fn adopting() -> Driver {
        Driver { adopt: true, ..Driver::default() }
    }

    /// The growing text node's kind, where it starts and how far it was read.
    pub(crate) fn growing(&self) -> Option<(Kind, usize, usize)> {
        self.growing
    }

    /// Extends the growing node by `text`, which the next parse is known to add to it.
    /// `plain`: `text` is known to hold no quote, control character or incomplete escape
    /// (a JSON string's content as `string_growth` accepts it).
    pub(crate) fn grow(&mut self, text: &str, plain: bool, cx: &Context, sink: &mut dyn Sink) {
        if let Some((kind, start, read)) = &mut self.growing {
            *read += text.len();
            self.fold.at = (*start, *read);
            let fast = match *kind {
                Kind::ToolArgs => plain && self.fold.plain_args(text, cx, sink),
                Kind::ArgString | Kind::ArgJson => self.fold.string_value(text, cx, sink),
                _ => false,
            };
            if !fast {
                self.fold.text(*kind, text, false, false, cx, sink);
            }
            self.fold.reach();
            self.fold.pos = self.fold.pos.max(*read);
        }
    }

    /// [`Driver::advance`] over a parse that kept the AST of the last one and only moved the
    /// ends of its partial nodes (the path to the end of input): the events are those of the
    /// last walk but for the growing text's end, so only its growth is folded. `false`
    /// (nothing done) when the last walk left anything else open: the caller advances.
    pub(crate) fn grew_in_place(&mut self, ast: &Ast, input: Input, cx: &Context, sink: &mut dyn Sink) -> bool {
        let (Some((kind, start, read)), Some(id)) = (self.growing, self.in_place) else { return false };
        let Some(n) = ast.nodes.get(id.0 as usize) else { return false };
        if !n.partial || n.start != start || n.end < read || n.end > input.bytes.len() {
            return false;
        }
        let to = self.fold_text((kind, start), input, (read, n.end), (false, false), cx, sink);
        self.growing = Some((kind, start, to));
        true
    }

    /// Folds the bytes `from..end` of the text node (`kind`, `start`), with its (first,
    /// sealed) flags; a growing node is read up to a whole character. Returns where it was
    /// read to.
    #[inline]
    fn fold_text(
        &mut self,
        (kind, start): (Kind, usize),
        input: Input,
        (from, end): (usize, usize),
        (first, sealed): (bool, bool),
        cx: &Context,
        sink: &mut dyn Sink,
    ) -> usize {
        let bytes = input.bytes;
        let (text, to) = match input.text(from, end).map_or_else(|| std::str::from_utf8(&bytes[from..end]), Ok) {
            Ok(t) => (Cow::Borrowed(t), end),
            Err(_) => {
                let to = if sealed { end } else { utf8_safe_end(bytes, from, end) };
                (json_text::lossy(&bytes[from..to]), to)
            }
        };
        self.fold.at = (start, to);
        self.fold.text(kind, &text, first, sealed, cx, sink);
        self.fold.reach();
        self.fold.pos = self.fold.pos.max(to);
        to
    }

    /// [`Driver::advance`]; where the parse no longer agrees with the fold, it is folded afresh,
    /// and if that fold writes everything already emitted and more, the driver continues from
    /// it, emitting only the difference. An ordered choice may change its mind about text the
    /// fold took in but did not emit yet (a call whose header waits for its name, arguments held
    /// back): the stream then ends as a one-shot parse of the same output, which never saw the
    /// abandoned reading.
    pub(crate) fn follow(&mut self, ast: &Ast, input: Input, final_input: bool, cx: &Context, sink: &mut dyn Sink) -> bool {
        if !self.adopt && self.advance(ast, input, final_input, cx, sink) {
            return true;
        }
        let Some(emitted) = sink.emitted() else { return false };
        let mut fresh = Driver::default();
        let mut refolded = MessageSink::default();
        if !fresh.advance(ast, input, final_input, cx, &mut refolded) || !refolded.message.extends(emitted) {
            return false;
        }
        let before = Lengths::of(emitted);
        before.emit_growth(&refolded.message, sink);
        *self = fresh;
        true
    }

    /// Folds what is new in `ast`, a parse of `input`. Returns `false`, folding nothing, when
    /// the parse no longer agrees with what was folded (an earlier node vanished or changed
    /// kind): emitted text cannot be retracted, so the caller must give up following it.
    pub(crate) fn advance(&mut self, ast: &Ast, input: Input, final_input: bool, cx: &Context, sink: &mut dyn Sink) -> bool {
        let bytes = input.bytes;
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let lo = self.done;
        let mut walk = Walk::new(ast, bytes.len(), final_input, lo, &mut self.folded);
        walk.roots(&mut events);
        let (total, before_lo, fragile) = (walk.count, walk.before_lo, walk.fragile);
        self.in_place = None;
        let mut i = lo;
        let key = |e: &Event| (e.kind, e.start);
        // Mid-stream, a parse may not have reached what was folded yet: another alternative
        // of an ordered choice that is still looking ahead (a lookahead tags nothing until it
        // is decided). Wait for a parse that does; the final one must.
        let short = match self.growing {
            Some(_) => total <= i,
            None => total < i,
        };
        if short && !final_input {
            self.events = events;
            return true;
        }
        let agrees = i <= total
            && (i == 0 || before_lo == self.last)
            && match self.growing {
                Some((k, s, _)) => events.first().is_some_and(|e| key(e) == (k, s)),
                None => true,
            };
        if !agrees {
            self.events = events;
            return false;
        }
        while i < total {
            let ev = events[i - lo];
            if ev.kind.is_text() {
                let (from, first) = match self.growing {
                    Some((k, s, read)) if k == ev.kind && s == ev.start => (read.min(ev.end), false),
                    _ => (ev.start, true),
                };
                if !ev.sealed && first && !cx.leading.is_empty() {
                    let t = json_text::lossy(&bytes[ev.start..ev.end]);
                    let t = t.trim_start();
                    if cx.leading.iter().any(|(k, lit)| *k == ev.kind && lit.starts_with(t)) {
                        break;
                    }
                }
                // Arguments stream once they open an object. Anything else (a word that may
                // be `false`, a string) may still turn out to be prose the grammar keeps as
                // content, and streamed text cannot be taken back: it waits to be complete.
                if ev.kind == Kind::ToolArgs && !ev.sealed && first && bytes[ev.start..ev.end].trim_ascii_start().first() != Some(&b'{') {
                    break;
                }
                let to = self.fold_text((ev.kind, ev.start), input, (from, ev.end), (first, ev.sealed), cx, sink);
                if !ev.sealed {
                    self.growing = Some((ev.kind, ev.start, to));
                    self.in_place = (!fragile).then_some(ev.node);
                    break;
                }
                self.growing = None;
            } else if ev.sealed {
                let text = json_text::lossy(&bytes[ev.start..ev.end]);
                self.fold.at = (ev.start, ev.end);
                // A call's end belongs to it; a new call's start does not.
                if ev.kind == Kind::EndCall {
                    self.fold.reach();
                }
                self.fold.structural(ev.kind, &text, cx, sink);
                if ev.kind != Kind::EndCall {
                    self.fold.reach();
                }
                self.fold.pos = self.fold.pos.max(ev.end);
            } else {
                break;
            }
            i += 1;
            self.done = i;
            self.last = Some((ev.kind, ev.start));
        }
        self.events = events;
        true
    }
}

// ---- Verbatim growth (the stream's live fast path, `stream.rs`): additions only. ----

/// Where the fold sends the next piece of a growing text, when it passes the piece through
/// unchanged (a string argument: only JSON-escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verbatim {
    /// Content whose leading whitespace is behind it, no trailing whitespace held: a piece
    /// ending in a visible ASCII byte is emitted as it is.
    Content,
    /// Reasoning, as `Content`.
    Reasoning,
    /// A string argument value whose opening quote is out, of announced call `0`: the piece is
    /// emitted JSON-escaped.
    ArgString(usize),
    /// Native arguments inside a `"` string of announced call `0`, trim state as `Content`:
    /// a piece of plain string characters ending in a visible ASCII byte is emitted as is.
    ToolArgs(usize),
}

impl Trim {
    /// Whether a piece ending in a visible ASCII byte would be emitted as it is.
    fn passes(&self) -> bool {
        self.started && self.held.is_empty()
    }
}

impl Driver {
    /// The growing text node's kind and where its next piece goes verbatim, if it was read up
    /// to `input_len` (nothing left unread, such as a possible delimiter start) and the fold
    /// would pass the piece through.
    pub(crate) fn verbatim(&self, input_len: usize) -> Option<(Kind, Verbatim)> {
        let (kind, _, read) = self.growing?;
        if read != input_len {
            return None;
        }
        let fold = &self.fold;
        let to = match kind {
            Kind::Content => fold.content.passes().then_some(Verbatim::Content)?,
            Kind::Reasoning => fold.reasoning.passes().then_some(Verbatim::Reasoning)?,
            Kind::ArgString => {
                let call = fold.call.as_ref()?;
                matches!(call.value, Some(Value::Str)).then_some(Verbatim::ArgString(call.index?))?
            }
            Kind::ToolArgs => {
                let call = fold.call.as_ref()?;
                (call.py.open_quote() == Some('"') && call.trim.passes()).then_some(Verbatim::ToolArgs(call.index?))?
            }
            _ => return None,
        };
        Some((kind, to))
    }

    /// Records that the growing node took the bytes `grown`, which the caller emitted as
    /// [`Driver::verbatim`] said (exactly what [`Driver::grow`] would have emitted).
    #[inline]
    pub(crate) fn grew_verbatim(&mut self, grown: &[u8]) {
        if let Some((kind, start, read)) = &mut self.growing {
            *read += grown.len();
            self.fold.pos = self.fold.pos.max(*read);
            self.fold.at = (*start, *read);
            self.fold.reach();
            if let Some(w) = self.fold.call.as_mut().and_then(|c| c.written.as_mut()) {
                let text = json_text::lossy(grown);
                match kind {
                    Kind::ArgString => escape_into(w, &text),
                    Kind::ToolArgs => w.push_str(&text),
                    _ => {}
                }
            }
        }
    }
}

// ---- End of verbatim growth. ----

/// How much of each field a message has: what a later message that extends it adds.
struct Lengths {
    content: usize,
    reasoning: usize,
    /// Per call: whether its id is known, the length of its arguments.
    calls: Vec<(bool, usize)>,
}

impl Lengths {
    fn of(m: &ChatMessage) -> Lengths {
        Lengths {
            content: m.content.len(),
            reasoning: m.reasoning_content.len(),
            calls: m.tool_calls.iter().map(|c| (!c.id.is_empty(), c.arguments.len())).collect(),
        }
    }

    /// Emits what `later` (which extends the measured message) adds to it.
    fn emit_growth(&self, later: &ChatMessage, sink: &mut dyn Sink) {
        fn rest(s: &str, from: usize) -> &str {
            s.get(from..).unwrap_or_default()
        }
        let content = rest(&later.content, self.content);
        if !content.is_empty() {
            sink.content(content);
        }
        let reasoning = rest(&later.reasoning_content, self.reasoning);
        if !reasoning.is_empty() {
            sink.reasoning(reasoning);
        }
        for (index, call) in later.tool_calls.iter().enumerate() {
            let from = match self.calls.get(index) {
                Some(&(id_known, len)) => {
                    if !id_known && !call.id.is_empty() {
                        sink.late_id(index, &call.id);
                    }
                    len
                }
                None => {
                    sink.header(index, &call.id, &call.name);
                    0
                }
            };
            let args = rest(&call.arguments, from);
            if !args.is_empty() {
                sink.args(index, args);
            }
        }
    }
}

/// A sink that builds a message directly.
#[derive(Debug, Default)]
pub(crate) struct MessageSink {
    pub message: ChatMessage,
}

impl Sink for MessageSink {
    fn content(&mut self, s: &str) {
        self.message.content.push_str(s);
    }
    fn reasoning(&mut self, s: &str) {
        self.message.reasoning_content.push_str(s);
    }
    fn header(&mut self, index: usize, id: &str, name: &str) {
        let calls = &mut self.message.tool_calls;
        while calls.len() <= index {
            calls.push(Default::default());
        }
        calls[index].id = id.to_owned();
        calls[index].name = name.to_owned();
    }
    fn late_id(&mut self, index: usize, id: &str) {
        if let Some(c) = self.message.tool_calls.get_mut(index) {
            c.id = id.to_owned();
        }
    }
    fn args(&mut self, index: usize, s: &str) {
        if let Some(c) = self.message.tool_calls.get_mut(index) {
            c.arguments.push_str(s);
        }
    }
    fn emitted(&self) -> Option<&ChatMessage> {
        Some(&self.message)
    }
}

impl Sink for crate::chat::DeltaBuffer {
    fn content(&mut self, s: &str) {
        crate::chat::DeltaBuffer::content(self, s);
    }
    fn reasoning(&mut self, s: &str) {
        crate::chat::DeltaBuffer::reasoning(self, s);
    }
    fn header(&mut self, index: usize, id: &str, name: &str) {
        crate::chat::DeltaBuffer::header(self, index, id, name);
    }
    fn late_id(&mut self, index: usize, id: &str) {
        crate::chat::DeltaBuffer::late_id(self, index, id);
    }
    fn args(&mut self, index: usize, s: &str) {
        crate::chat::DeltaBuffer::args(self, index, s);
    }
}

/// A sink that records deltas, merging adjacent pieces of the same field.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct DeltaSink {
    pub deltas: Vec<crate::chat::ChatDelta>,
}

#[cfg(test)]
impl Sink for DeltaSink {
    fn content(&mut self, s: &str) {
        match self.deltas.last_mut() {
            Some(crate::chat::ChatDelta { content: Some(c), .. }) => c.push_str(s),
            _ => self.deltas.push(crate::chat::ChatDelta::content(s)),
        }
    }
    fn reasoning(&mut self, s: &str) {
        match self.deltas.last_mut() {
            Some(crate::chat::ChatDelta { reasoning_content: Some(c), .. }) => c.push_str(s),
            _ => self.deltas.push(crate::chat::ChatDelta::reasoning(s)),
        }
    }
    fn header(&mut self, index: usize, id: &str, name: &str) {
        self.deltas.push(crate::chat::ChatDelta::tool_call(crate::chat::ToolCallDelta::header(index, id, name)));
    }
    fn late_id(&mut self, index: usize, id: &str) {
        self.deltas.push(crate::chat::ChatDelta::tool_call(crate::chat::ToolCallDelta::late_id(index, id)));
    }
    fn args(&mut self, index: usize, s: &str) {
        if let Some(d) = self.deltas.last_mut()
            && let [t] = d.tool_calls.as_mut_slice()
            && t.index == index
        {
            t.arguments.get_or_insert_with(String::new).push_str(s);
            return;
        }
        self.deltas.push(crate::chat::ChatDelta::tool_call(crate::chat::ToolCallDelta::arguments(index, s)));
    }
}

/// The declared tool a call's name means where it is written otherwise: behind a namespace
/// (`functions.get_weather`, `default_api:get_weather`), in other letter case, or with `-` for
/// `_`. `None` where it is a declared name as written, or means none or several of them.
fn declared_name<V>(written: &str, tools: &HashMap<String, V>) -> Option<String> {
    if tools.is_empty() || tools.contains_key(written) {
        return None;
    }
    let bare = written.rsplit(['.', ':', '/']).next().unwrap_or(written);
    if bare != written && tools.contains_key(bare) {
        return Some(bare.to_owned());
    }
    let fold = |s: &str| s.to_lowercase().replace('-', "_");
    let want = fold(bare);
    let mut found = tools.keys().filter(|k| fold(k) == want);
    match (found.next(), found.next()) {
        (Some(k), None) => Some(k.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ast::AstNode;
    use crate::chat::ChatMessage;

    #[test]
    fn a_declared_name_written_otherwise_is_that_tool_only_where_one_is_meant() {
        let tools: HashMap<String, ()> = ["get_weather", "Get_Time", "get_time"].into_iter().map(|n| (n.to_owned(), ())).collect();
        let read = |w: &str| declared_name(w, &tools);
        assert_eq!(read("functions.get_weather").as_deref(), Some("get_weather"));
        assert_eq!(read("default_api:GET-WEATHER").as_deref(), Some("get_weather"));
        assert_eq!(read("get_weather"), None); // as declared
        assert_eq!(read("GET_TIME"), None); // two declared names fold alike
        assert_eq!(read("get_stock"), None);
        assert_eq!(declared_name("functions.get_weather", &HashMap::<String, ()>::new()), None);
    }

    #[test]
    fn input_text_is_known_only_inside_its_str() {
        let bytes = "ab caf\u{e9}".as_bytes();
        let input = Input::with_tail(bytes, "f\u{e9}");
        assert_eq!((input.text(5, 8), input.text(6, 8)), (Some("f\u{e9}"), Some("\u{e9}")));
        assert_eq!((input.text(4, 8), input.text(5, 7)), (None, None)); // before the tail; mid-character
        assert_eq!(input.prefix(6).text(5, 6), Some("f"));
        let whole = Input::from("ab caf\u{e9}");
        assert_eq!((whole.text(0, 2), whole.prefix(3).text(0, 3)), (Some("ab"), Some("ab ")));
    }

    /// A hand-made AST: `(tag, start, end, partial, children)` in pre-order.
    enum T {
        N(&'static str, usize, usize, bool, Vec<T>),
    }

    fn ast(roots: Vec<T>) -> Ast {
        fn add(a: &mut Ast, t: T) -> AstId {
            let T::N(tag, start, end, partial, children) = t;
            let id = AstId(a.nodes.len() as u32);
            a.nodes.push(AstNode { tag: Some(Arc::from(tag)), rule: None, start, end, children: vec![], partial, invalid_utf8: false });
            let kids: Vec<AstId> = children.into_iter().map(|c| add(a, c)).collect();
            a.nodes[id.0 as usize].children = kids;
            id
        }
        let mut a = Ast::default();
        for r in roots {
            let id = add(&mut a, r);
            a.roots.push(id);
        }
        a
    }

    fn at(input: &str, s: &str) -> (usize, usize) {
        let i = input.find(s).unwrap();
        (i, i + s.len())
    }

    #[test]
    fn constructed_call_with_typed_args() {
        let input = r#"Hi <f=get><p=city>Paris "x"</p><p=days> 3 </p></f>"#;
        let (c0, c1) = (0, 3);
        let (n0, n1) = at(input, "get");
        let (a0, a1) = at(input, "city");
        let (v0, v1) = at(input, r#"Paris "x""#);
        let (b0, b1) = at(input, "days");
        let (w0, w1) = at(input, " 3 ");
        let end = input.len();
        use T::N;
        let tree = ast(vec![
            N("content", c0, c1, false, vec![]),
            N(
                "tool",
                c1,
                end,
                false,
                vec![
                    N("tool_name", n0, n1, false, vec![]),
                    N("tool_arg", a0 - 3, v1 + 4, false, vec![N("tool_arg_name", a0, a1, false, vec![]), N("tool_arg_string_value", v0, v1, false, vec![])]),
                    N("tool_arg", b0 - 3, w1 + 4, false, vec![N("tool_arg_name", b0, b1, false, vec![]), N("tool_arg_string_value", w0, w1, false, vec![])]),
                    N("tool_close", end - 4, end, false, vec![]),
                ],
            ),
        ]);
        let mut cx = Context { id_prefix: "call_".into(), has_scopes: true, ..Context::default() };
        cx.arg_types.insert("get".into(), [("city".to_owned(), ArgType::String), ("days".to_owned(), ArgType::Json)].into_iter().collect());
        let mut d = Driver::default();
        let mut sink = MessageSink::default();
        d.advance(&tree, Input::from(input.as_bytes()), true, &cx, &mut sink);
        d.fold.finish(&cx, &mut sink);
        let m: ChatMessage = sink.message;
        assert_eq!(m.content, "Hi");
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].name, "get");
        assert_eq!(m.tool_calls[0].id, "call_0");
        assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris \"x\"", "days": 3}"#);
    }

    /// An ordered choice that changes its mind about a call the fold took in but did not
    /// announce yet: the driver folds the new reading afresh and goes on from it, as a parse
    /// that never saw the abandoned one would.
    #[test]
    fn a_changed_reading_is_folded_afresh() {
        use T::N;
        let cx = Context { has_tool_id: true, has_scopes: true, id_prefix: "call_".into(), ..Context::default() };
        let input = "<call>get<id>";
        let mut d = Driver::default();
        let mut sink = MessageSink::default();
        // The call's name is in, its header waits for the id.
        let call = ast(vec![N("tool", 0, 13, true, vec![N("tool_name", 6, 9, false, vec![])])]);
        assert!(d.follow(&call, Input::from(&input.as_bytes()[..13]), false, &cx, &mut sink));
        assert_eq!(sink.message, ChatMessage::default());
        // More input, and the parse reads all of it as content.
        let input = "<call>get<id> is how calls start";
        let prose = ast(vec![N("content", 0, input.len(), false, vec![])]);
        assert!(!d.clone().advance(&prose, Input::from(input.as_bytes()), true, &cx, &mut MessageSink::default()), "the fold no longer agrees");
        assert!(d.follow(&prose, Input::from(input.as_bytes()), true, &cx, &mut sink));
        d.fold.finish(&cx, &mut sink);
        assert_eq!(sink.message.content, input);
        assert!(sink.message.tool_calls.is_empty());
        // What was emitted cannot be taken back: without the emitted message, no refold.
        let mut d = Driver::default();
        let mut deltas = DeltaSink::default();
        assert!(d.follow(&call, Input::from(&input.as_bytes()[..13]), false, &cx, &mut deltas));
        assert!(!d.follow(&prose, Input::from(input.as_bytes()), true, &cx, &mut deltas));
    }

    /// Arguments stream once they open an object; a bare word (perhaps `false`, perhaps prose)
    /// waits until it is complete.
    #[test]
    fn only_an_object_streams_as_arguments() {
        use T::N;
        let cx = Context { has_scopes: true, id_prefix: "call_".into(), ..Context::default() };
        let args = |input: &str, from: usize, partial: bool| {
            ast(vec![N("tool", 0, input.len(), partial, vec![N("tool_name", 0, 1, false, vec![]), N("tool_args", from, input.len(), partial, vec![])])])
        };
        for (input, streamed) in [("f fals", ""), ("f  ", ""), (r#"f "a b"#, ""), (r#"f {"a": 1"#, r#"{"a": 1"#)] {
            let mut d = Driver::default();
            let mut sink = MessageSink::default();
            assert!(d.follow(&args(input, 1, true), Input::from(input.as_bytes()), false, &cx, &mut sink));
            let shown = sink.message.tool_calls.first().map(|c| c.arguments.as_str()).unwrap_or_default();
            assert_eq!(shown, streamed, "{input:?}");
        }
        let input = "f false";
        let mut d = Driver::default();
        let mut sink = MessageSink::default();
        assert!(d.follow(&args(input, 1, false), Input::from(input.as_bytes()), true, &cx, &mut sink));
        assert_eq!(sink.message.tool_calls[0].arguments, "false");
    }

    #[test]
    fn growing_text_continues_where_it_stopped() {
        let cx = Context::default();
        let full = "  hello world  ";
        let mut d = Driver::default();
        let mut sink = DeltaSink::default();
        for cut in [3, 8, 9, 13, full.len()] {
            let tree = ast(vec![T::N("content", 0, cut, cut < full.len(), vec![])]);
            d.advance(&tree, Input::from(&full.as_bytes()[..cut]), cut == full.len(), &cx, &mut sink);
        }
        d.fold.finish(&cx, &mut sink);
        let m = ChatMessage::from_deltas(&sink.deltas);
        assert_eq!(m.content, "hello world");
    }

    /// A stream of calls: the calls folded are remembered per sibling list, so later walks
    /// count them instead of visiting them, and give the events a full walk gives.
    #[test]
    fn folded_calls_are_counted_not_walked() {
        use T::N;
        let cx = Context { has_scopes: true, id_prefix: "call_".into(), ..Context::default() };
        // `<c>{"i": K}</c>` repeated: call K spans 13K..13K+13, its arguments 13K+3..13K+11.
        let call = |k: usize, end: usize| {
            let s = 13 * k;
            let partial = end < s + 13;
            let mut kids = vec![N("tool_name", s, s, false, vec![]), N("tool_args", s + 3, end.min(s + 11), partial, vec![])];
            if !partial {
                kids.push(N("tool_close", s + 11, s + 13, false, vec![]));
            }
            N("tool", s, end.min(s + 13), partial, kids)
        };
        let input: String = (0..6).map(|k| format!("<c>{{\"i\": {k}}}</c>")).collect();
        let tree = |len: usize| ast(vec![N("calls", 0, len, true, (0..6).filter(|k| 13 * k + 3 < len).map(|k| call(k, len)).collect())]);
        let mut d = Driver::default();
        let mut sink = MessageSink::default();
        for len in (4..=input.len()).step_by(3) {
            assert!(d.follow(&tree(len), Input::from(&input.as_bytes()[..len]), false, &cx, &mut sink), "at {len}");
        }
        // Finished calls were remembered and skipped; the fold is that of one full walk.
        assert!(d.folded.iter().any(|f| f.children >= 4), "{:?}", d.folded);
        let mut whole = Driver::default();
        let mut once = MessageSink::default();
        assert!(whole.follow(&tree(input.len() - 1), Input::from(&input.as_bytes()[..input.len() - 1]), false, &cx, &mut once));
        assert_eq!(sink.message, once.message);
        assert_eq!(sink.message.tool_calls.len(), 6);
        // The same walk with and without the remembered prefix; and when the last remembered
        // call changed (its close gone), the prefix is not taken: its count would be stale.
        let len = input.len() - 1;
        let walk = |tree: &Ast, folded: &mut Vec<Folded>| {
            let mut w = Walk::new(tree, len, false, d.done, folded);
            let mut out = Vec::new();
            w.roots(&mut out);
            (w.count, w.before_lo, out)
        };
        let same = tree(len);
        assert_eq!(walk(&same, &mut d.folded.clone()), walk(&same, &mut Vec::new()));
        let k = d.folded.iter().map(|f| f.children).max().unwrap();
        let mut changed = tree(len);
        let last = changed.nodes[changed.roots[0].0 as usize].children[k - 1].0 as usize;
        changed.nodes[last].end -= 2;
        changed.nodes[last].children.pop();
        assert_eq!(walk(&changed, &mut d.folded.clone()), walk(&changed, &mut Vec::new()));
    }

    /// Whole arguments checked as they go out are not kept; what comes after them in the same
    /// call decides as it would have with them: whitespace keeps them fitting, anything else
    /// leaves no JSON object.
    #[test]
    fn whole_arguments_that_fit_are_not_kept() {
        let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let tools = HashMap::from([("f".to_owned(), Some(Arc::new(ArgsSchema::new(&schema))))]);
        let cx = Context { has_scopes: true, id_prefix: "call_".into(), tools, ..Context::default() };
        let verdicts = |after: &[&str]| {
            let mut f = Fold::default();
            let mut sink = MessageSink::default();
            f.structural(Kind::NewCall, "", &cx, &mut sink);
            f.structural(Kind::ToolName, "f", &cx, &mut sink);
            f.text(Kind::ToolArgs, " {\"a\": 1} ", true, true, &cx, &mut sink);
            assert!(f.call.as_ref().is_some_and(|c| c.fitted_whole && c.written.as_deref() == Some("")));
            for piece in after {
                f.text(Kind::ToolArgs, piece, true, true, &cx, &mut sink);
            }
            f.structural(Kind::EndCall, "", &cx, &mut sink);
            (sink.message.tool_calls[0].arguments.clone(), f.recoveries.iter().map(|r| r.kind).collect::<Vec<_>>())
        };
        assert_eq!(verdicts(&[]), ("{\"a\": 1}".to_owned(), vec![]));
        assert_eq!(verdicts(&[" \n"]).1, []);
        assert_eq!(verdicts(&["{\"a\": 2}"]).1, [RecoveryKind::ArgumentsOutsideSchema]);
    }

    /// Ids after the arguments: the call is announced without an id when its arguments start,
    /// they stream live, and the id follows in a fragment of its own once read (or generated
    /// when the call ends); an id that comes first is in the header.
    #[test]
    fn ids_after_the_arguments_come_in_a_later_fragment() {
        use crate::chat::{ChatDelta, ToolCallDelta};
        let cx = Context { has_tool_id: true, has_scopes: true, id_after_args: true, id_prefix: "call_".into(), ..Context::default() };
        let mut f = Fold::default();
        let mut sink = DeltaSink::default();
        let with_args = |index, id: &str, name: &str, args: &str| {
            ChatDelta::tool_call(ToolCallDelta { arguments: Some(args.into()), ..ToolCallDelta::header(index, id, name) })
        };
        let late = |index, id: &str| ChatDelta::tool_call(ToolCallDelta::late_id(index, id));
        f.structural(Kind::NewCall, "", &cx, &mut sink);
        f.structural(Kind::ToolName, "f", &cx, &mut sink);
        assert!(sink.deltas.is_empty(), "the id may still come first: {:?}", sink.deltas);
        f.text(Kind::ToolArgs, "{\"a\": ", true, false, &cx, &mut sink);
        assert_eq!(sink.deltas, [with_args(0, "", "f", "{\"a\":")]);
        assert_eq!(sink.deltas[0].tool_calls[0].id, None);
        f.text(Kind::ToolArgs, "1} ", false, true, &cx, &mut sink);
        f.structural(Kind::ToolId, "123456789", &cx, &mut sink);
        assert_eq!(sink.deltas[1..], [late(0, "123456789")]);
        f.structural(Kind::EndCall, "", &cx, &mut sink);
        assert_eq!(sink.deltas.len(), 2);

        // No id: the generated one when the call ends.
        f.structural(Kind::NewCall, "", &cx, &mut sink);
        f.structural(Kind::ToolName, "g", &cx, &mut sink);
        f.text(Kind::ToolArgs, "{}", true, true, &cx, &mut sink);
        assert_eq!(sink.deltas[2..], [with_args(1, "", "g", "{}")]);
        f.structural(Kind::EndCall, "", &cx, &mut sink);
        assert_eq!(sink.deltas[3..], [late(1, "call_1")]);

        // An id before the arguments: in the header.
        f.structural(Kind::NewCall, "", &cx, &mut sink);
        f.structural(Kind::ToolId, "first", &cx, &mut sink);
        f.structural(Kind::ToolName, "h", &cx, &mut sink);
        assert_eq!(sink.deltas[4..], [ChatDelta::tool_call(ToolCallDelta::header(2, "first", "h"))]);
        f.text(Kind::ToolArgs, "{\"b\": \"x y", true, false, &cx, &mut sink);
        assert_eq!(sink.deltas[4..], [with_args(2, "first", "h", "{\"b\": \"x y")]);

        // Cut by the end of input: the generated id comes with the end, and the arguments cut
        // off are closed by appending (both reported).
        f.structural(Kind::NewCall, "", &cx, &mut sink);
        f.structural(Kind::ToolName, "k", &cx, &mut sink);
        f.text(Kind::ToolArgs, "{\"c\": \"x", true, false, &cx, &mut sink);
        f.finish(&cx, &mut sink);
        let m = ChatMessage::from_deltas(&sink.deltas);
        let calls: Vec<_> = m.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("123456789", "f", "{\"a\": 1}"), ("call_1", "g", "{}"), ("first", "h", "{\"b\": \"x y\"}"), ("call_3", "k", "{\"c\": \"x\"}")]);
        let repaired: Vec<_> = f.recoveries.iter().map(|r| (r.kind, r.detail.as_str())).collect();
        assert_eq!(
            repaired,
            [(RecoveryKind::ArgumentsRepaired, "call 2: what was left open closed"), (RecoveryKind::ArgumentsRepaired, "call 3: what was left open closed")]
        );
    }

    /// Without ids after the arguments, the arguments starting mean no id is coming.
    #[test]
    fn arguments_stream_live_when_no_id_can_follow() {
        let cx = Context { has_tool_id: true, has_scopes: true, id_prefix: "call_".into(), ..Context::default() };
        let mut f = Fold::default();
        let mut sink = DeltaSink::default();
        f.structural(Kind::NewCall, "", &cx, &mut sink);
        f.structural(Kind::ToolName, "f", &cx, &mut sink);
        assert!(sink.deltas.is_empty());
        f.text(Kind::ToolArgs, "{\"a\"", true, false, &cx, &mut sink);
        let m = ChatMessage::from_deltas(&sink.deltas);
        assert_eq!((m.tool_calls[0].id.as_str(), m.tool_calls[0].arguments.as_str()), ("call_0", "{\"a\""));
    }

    /// A recovery node's event follows its children's, once the node is sealed; the report's
    /// offset is into the output after the prefill, and a node is reported once.
    #[test]
    fn recoveries_are_reported_after_their_children_once_sealed() {
        let input = "<p><think>Hmm";
        let len = input.len();
        let tree = ast(vec![T::N("recovered.reasoning_marker", 3, len, false, vec![T::N("reasoning", 10, len, false, vec![])])]);
        let mut events = Vec::new();
        linearize(&tree, len, false, &mut events);
        let kinds: Vec<Kind> = events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::Reasoning], "not sealed at the end of partial input");
        linearize(&tree, len, true, &mut events);
        let kinds: Vec<Kind> = events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::Reasoning, Kind::Recovered(RecoveryKind::ReasoningMarker)]);

        let cx = Context { prefill: 3, ..Context::default() };
        let mut d = Driver::default();
        let mut sink = MessageSink::default();
        assert!(d.advance(&tree, Input::from(input.as_bytes()), false, &cx, &mut sink));
        assert_eq!(d.fold.recoveries, []);
        for _ in 0..2 {
            assert!(d.advance(&tree, Input::from(input.as_bytes()), true, &cx, &mut sink));
        }
        d.fold.finish(&cx, &mut sink);
        let expected = Recovery { kind: RecoveryKind::ReasoningMarker, offset: 0, len: 10, detail: String::new() };
        assert_eq!(d.fold.recoveries, [expected]);
        assert_eq!(sink.message.reasoning_content, "Hmm");
    }

    #[test]
    fn arg_types_from_schemas() {
        use serde_json::json;
        assert_eq!(ArgType::of(&json!({"type": "string"})), Some(ArgType::String));
        assert_eq!(ArgType::of(&json!({"type": ["string", "null"]})), Some(ArgType::NullableString));
        assert_eq!(ArgType::of(&json!({"type": ["null", "string"]})), Some(ArgType::NullableString));
        assert_eq!(ArgType::of(&json!({"type": ["string", "object"]})), Some(ArgType::Json));
        assert_eq!(ArgType::of(&json!({"type": "integer"})), Some(ArgType::Json));
        assert_eq!(ArgType::of(&json!({"enum": ["a", "b"]})), Some(ArgType::String));
        assert_eq!(ArgType::of(&json!({"anyOf": [{"type": "string"}, {"type": "number"}]})), Some(ArgType::Json));
        assert_eq!(ArgType::of(&json!({"description": "x"})), None);
    }
}
