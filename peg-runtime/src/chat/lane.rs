//! The structural lane: output written exactly as the template writes a turn of tool calls
//! is folded without a parse.
//!
//! A server's commonest short reply is a tool call and nothing else, in the template's own
//! form. Parsing it costs the engine's fixed costs (the first parse from the root, a climb
//! where each literal, the name and the arguments end, the final complete parse), a few
//! microseconds per stream, however short the reply. The lane reads such output with a step
//! per byte instead: the literals around each call ([`CallForm`]), a declared tool's name, and
//! arguments that are one JSON object, checked as strict JSON as they stream. What it reads
//! goes to the same fold a parse goes to, in the order the parse's events would come, so the
//! deltas and the message are the fold's own.
//!
//! The lane never decides anything the grammar decides differently: it takes only text that
//! strict JSON and the literals allow, and it announces a call only once its arguments open
//! (no earlier than the fold of a parse does). At the first byte it does not expect (text
//! before a call, another key order, a Python word, a missing close), or a recovery the fold
//! records, the stream hands over: one parse of everything pushed so far, folded afresh,
//! emitting only what that fold adds to what the lane emitted ([`Driver::adopting`]).
//!
//! [`Driver::adopting`]: crate::chat::mapper::Driver::adopting

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::chat::mapper::{Context, Fold, Kind, Sink};

/// How a template writes a turn of tool calls and nothing else: the literals around each
/// call's name and its arguments, a JSON object. A [`ChatStream`](crate::chat::ChatStream)
/// given one ([`ChatParseOptions::call_form`](crate::chat::ChatParseOptions::call_form))
/// reads output written exactly so without parsing it; anything else is parsed as usual, with
/// the same deltas and message.
///
/// ```
/// use peg_runtime::chat::CallForm;
/// // Hermes: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
/// let hermes = CallForm {
///     open: "<tool_call>\n{\"name\": \"".into(),
///     name_end: "\", \"arguments\": ".into(),
///     between: Some("}\n</tool_call>\n<tool_call>\n{\"name\": \"".into()),
///     close: "}\n</tool_call>".into(),
/// };
/// assert!(hermes.is_usable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallForm {
    /// What the output starts with, up to the first call's name.
    pub open: String,
    /// What follows a call's name, up to its arguments.
    pub name_end: String,
    /// What follows a call's arguments when another call follows, up to its name; `None`
    /// when a turn holds one call.
    pub between: Option<String>,
    /// What follows the last call's arguments: the end of the output.
    pub close: String,
}

impl CallForm {
    /// Whether a lane can follow the form: a non-empty opening, a name ended by a byte that
    /// cannot start arguments, and literals between calls that differ from the close.
    pub fn is_usable(&self) -> bool {
        !self.open.is_empty()
            && self.name_end.bytes().next().is_some_and(|b| b != b'{')
            && self.between.as_ref().is_none_or(|b| !b.is_empty() && *b != self.close)
    }
}

/// A [`CallForm`] with the request's tool names, made once per parser.
#[derive(Debug)]
pub(crate) struct LanePlan {
    form: CallForm,
    /// Declared names, sorted.
    names: Vec<String>,
}

impl LanePlan {
    /// The plan, if the form is usable and no declared name holds the byte that ends names.
    pub(crate) fn new<V>(form: &CallForm, tools: &HashMap<String, V>) -> Option<LanePlan> {
        if !form.is_usable() || tools.is_empty() {
            return None;
        }
        let end = form.name_end.as_bytes()[0];
        let mut names: Vec<String> = tools.keys().cloned().collect();
        if names.iter().any(|n| n.is_empty() || n.as_bytes().contains(&end)) {
            return None;
        }
        names.sort();
        Some(LanePlan { form: form.clone(), names })
    }
}

/// Where the lane is in the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// `open`, this many bytes matched.
    Open(usize),
    /// Inside a call's name.
    Name,
    /// `name_end`, this many bytes matched.
    NameEnd(usize),
    /// The arguments' first byte comes next: `{`.
    ArgsStart,
    /// Inside the arguments.
    Args,
    /// After a call's arguments: `k` bytes matched of `between` (while `to_next`) and of
    /// `close` (while `to_close`).
    After { k: usize, to_next: bool, to_close: bool },
}

/// Arguments longer than this are streamed by the parser's path: inside a long string, its
/// live lane takes a chunk for a table lookup per byte, and the parse the handover costs is
/// spread over the rest of the output. The structural lane is for the structure.
const LONG_ARGUMENTS: usize = 1024;

/// The lane's state in one stream.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    at: At,
    /// Where the name being read starts in the input.
    name_at: usize,
    /// The index of the name just read.
    named: usize,
    json: JsonScan,
    /// Whether the open call's arguments were sealed.
    sealed: bool,
    /// The open call, not folded yet: its name, and where its arguments start in the input
    /// (a parse does not fold them yet either: see [`Lane::arguments`]).
    opening: Option<(usize, usize)>,
    /// Where the open call's arguments start and (once they did) end in the input.
    args_at: usize,
    args_end: usize,
    /// Input read: where the next chunk starts (the prefill counts).
    read: usize,
    /// Where the open call started.
    call_start: usize,
}

impl Lane {
    pub(crate) fn new(prefill: usize) -> Lane {
        Lane {
            at: At::Open(0),
            name_at: 0,
            named: 0,
            json: JsonScan::default(),
            sealed: true,
            opening: None,
            args_at: 0,
            args_end: 0,
            read: prefill,
            call_start: prefill,
        }
    }

    /// Reads `chunk`, the end of `input`, and folds what it holds. `false` when the chunk
    /// leaves the form: the lane is then done, and what it folded of the chunk is to be
    /// dropped (the caller hands over to a fresh fold).
    pub(crate) fn push(&mut self, plan: &LanePlan, input: &[u8], chunk: &str, fold: &mut Fold, cx: &Context, sink: &mut dyn Sink) -> bool {
        let form = &plan.form;
        let b = chunk.as_bytes();
        let base = self.read;
        debug_assert_eq!(base + b.len(), input.len());
        if self.at == At::Args && base - self.args_at > LONG_ARGUMENTS {
            return false;
        }
        let mut i = 0;
        // Where the argument text of this chunk started, while inside it, and whether all of
        // it so far is plain string text (no quote, backslash or control byte).
        let mut args_from = (self.at == At::Args).then_some(0);
        let mut plain = self.at == At::Args && self.json.in_string();
        while i < b.len() {
            let c = b[i];
            match self.at {
                At::Open(k) => {
                    let Some(k) = literal(&form.open, k, b, &mut i) else { return false };
                    match k {
                        Some(k) => self.at = At::Open(k),
                        None => self.start_name(base + i),
                    }
                    continue;
                }
                At::Name => {
                    let end = form.name_end.as_bytes()[0];
                    match b[i..].iter().position(|&x| x == end) {
                        Some(n) => {
                            let name = &input[self.name_at..base + i + n];
                            let Ok(named) = plan.names.binary_search_by(|d| d.as_bytes().cmp(name)) else { return false };
                            self.named = named;
                            self.at = At::NameEnd(0);
                            i += n;
                        }
                        None => i = b.len(),
                    }
                    continue;
                }
                At::NameEnd(k) => {
                    let Some(k) = literal(&form.name_end, k, b, &mut i) else { return false };
                    self.at = k.map_or(At::ArgsStart, At::NameEnd);
                    continue;
                }
                At::ArgsStart => {
                    if c != b'{' {
                        return false;
                    }
                    self.opening = Some((self.named, base + i));
                    self.args_at = base + i;
                    self.json = JsonScan::default();
                    self.sealed = false;
                    args_from = Some(i);
                    self.at = At::Args;
                    continue;
                }
                At::Args => {
                    if self.json.in_string() {
                        // Plain string bytes at once.
                        let n = b[i..].iter().position(|&x| x == b'"' || x == b'\\' || x < 0x20).unwrap_or(b.len() - i);
                        if n > 0 {
                            i += n;
                            continue;
                        }
                    }
                    plain = false;
                    match self.json.step(c) {
                        Json::More => {}
                        Json::Done => {
                            let from = args_from.take().unwrap_or(0);
                            self.args_end = base + i + 1;
                            if !self.arguments(plan, input, chunk, (base + from, base + i + 1), false, fold, cx, sink) {
                                return false;
                            }
                            self.at = At::After { k: 0, to_next: form.between.is_some(), to_close: true };
                        }
                        Json::Invalid => return false,
                    }
                }
                At::After { k, to_next, to_close } => {
                    if !self.sealed && !self.seal(plan, input, fold, cx, sink) {
                        return false;
                    }
                    let between = form.between.as_deref().unwrap_or("");
                    let next = to_next && between.as_bytes().get(k) == Some(&c);
                    let close = to_close && form.close.as_bytes().get(k) == Some(&c);
                    if !next && !close {
                        return false;
                    }
                    if next && k + 1 == between.len() {
                        self.call_start = base + i + 1;
                        self.start_name(base + i + 1);
                    } else {
                        self.at = At::After { k: k + 1, to_next: next, to_close: close };
                    }
                }
            }
            i += 1;
        }
        // A name no declared one starts with leaves what the grammar reads (each chunk ends
        // where the input fits the grammar).
        if self.at == At::Name {
            let name = &input[self.name_at..];
            let at = plan.names.partition_point(|d| d.as_bytes() < name);
            if !plan.names.get(at).is_some_and(|d| d.as_bytes().starts_with(name)) {
                return false;
            }
        }
        if let Some(from) = args_from
            && from < b.len()
            && !self.arguments(plan, input, chunk, (base + from, input.len()), plain, fold, cx, sink)
        {
            return false;
        }
        self.read = input.len();
        fold.pos = self.read;
        true
    }

    fn start_name(&mut self, at: usize) {
        self.name_at = at;
        self.at = At::Name;
    }

    /// Folds the open call's argument text `input[from..to]`, of `chunk` (the end of the
    /// input); `plain`: string text without a quote, backslash or control byte. A call not
    /// folded yet is folded once its arguments hold more than their brace and are no prefix
    /// of a literal some reading of arguments starts with: then a parse folds it too.
    #[allow(clippy::too_many_arguments)]
    fn arguments(
        &mut self,
        plan: &LanePlan,
        input: &[u8],
        chunk: &str,
        (from, to): (usize, usize),
        plain: bool,
        fold: &mut Fold,
        cx: &Context,
        sink: &mut dyn Sink,
    ) -> bool {
        fold.at = (self.call_start, to);
        match self.opening {
            None => {
                let base = input.len() - chunk.len();
                let Some(text) = chunk.get(from - base..to - base) else { return false };
                // Plain string text passes the normalizer as it is (as the parser's path
                // grows it: `Driver::grow`).
                if !(plain && fold.plain_args(text, cx, sink)) {
                    fold.text(Kind::ToolArgs, text, false, false, cx, sink);
                }
            }
            Some((_, at)) => {
                let Ok(text) = std::str::from_utf8(&input[at..to]) else { return false };
                let t = text.trim_start();
                let bare = t.strip_prefix('{').is_some_and(|r| r.trim_start().is_empty());
                if !bare && !cx.leading.iter().any(|(k, lit)| *k == Kind::ToolArgs && lit.starts_with(t)) {
                    self.open_call(plan, text, false, fold, cx, sink);
                }
            }
        }
        fold.reach();
        true
    }

    /// Whether the output so far is a whole turn of the form (the last call closed).
    pub(crate) fn complete(&self, plan: &LanePlan) -> bool {
        matches!(self.at, At::After { k, to_close: true, .. } if k == plan.form.close.len())
    }

    /// Ends a complete turn: the last arguments are sealed.
    pub(crate) fn finish(&mut self, plan: &LanePlan, input: &[u8], fold: &mut Fold, cx: &Context, sink: &mut dyn Sink) -> bool {
        self.sealed || self.seal(plan, input, fold, cx, sink)
    }

    /// The open call's arguments are whole (the input went past them).
    fn seal(&mut self, plan: &LanePlan, input: &[u8], fold: &mut Fold, cx: &Context, sink: &mut dyn Sink) -> bool {
        self.sealed = true;
        match self.opening {
            Some((_, at)) => {
                let Ok(text) = std::str::from_utf8(&input[at..self.args_end]) else { return false };
                self.open_call(plan, text, true, fold, cx, sink);
            }
            None => fold.text(Kind::ToolArgs, "", false, true, cx, sink),
        }
        true
    }

    /// Folds the open call: its start, its name, and `args`, its arguments so far (`sealed`:
    /// all of them).
    fn open_call(&mut self, plan: &LanePlan, args: &str, sealed: bool, fold: &mut Fold, cx: &Context, sink: &mut dyn Sink) {
        let Some((name, _)) = self.opening.take() else { return };
        let at = fold.at;
        fold.at = (self.call_start, self.call_start);
        fold.structural(Kind::NewCall, "", cx, sink);
        fold.structural(Kind::ToolName, &plan.names[name], cx, sink);
        fold.at = at;
        fold.text(Kind::ToolArgs, args, true, sealed, cx, sink);
    }
}

/// Matches `b[*i..]` against `lit` from its byte `k` on, as far as either goes: `None` if they
/// differ; else how much of `lit` is matched if not all of it (`Some(None)`: all).
fn literal(lit: &str, k: usize, b: &[u8], i: &mut usize) -> Option<Option<usize>> {
    let (lit, rest) = (&lit.as_bytes()[k..], &b[*i..]);
    let n = lit.len().min(rest.len());
    if n == 0 || lit[..n] != rest[..n] {
        return None;
    }
    *i += n;
    Some((n < lit.len()).then_some(k + n))
}

/// A step of [`JsonScan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Json {
    More,
    /// The outermost value ended with this byte.
    Done,
    Invalid,
}

/// What [`JsonScan`] expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Expect {
    /// A value (after `:`, `,` in an array, or `[`: `first` allows `]`).
    #[default]
    Value,
    ValueOrEnd,
    /// A key (after `{`: `first` allows `}`; after `,`: a key only).
    KeyOrEnd,
    Key,
    Colon,
    /// `,` or the close of the innermost container.
    CommaOrEnd,
    /// Inside a string (a key's, then `:` follows).
    Str {
        key: bool,
    },
    Escape {
        key: bool,
    },
    Hex {
        key: bool,
        left: u8,
    },
    /// Inside a number: what may come next.
    Number(Num),
    /// The rest of `true`, `false` or `null`.
    Word {
        word: &'static [u8],
        at: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    /// After `-`: a digit.
    Sign,
    /// After a leading `0`: `.`, `e` or the end.
    Zero,
    Int,
    /// After `.`: a digit.
    Point,
    Frac,
    /// After `e`: a sign or a digit.
    E,
    /// After the exponent's sign: a digit.
    ESign,
    Exp,
}

/// Strict JSON, one byte at a time: whether text is a prefix of one JSON value, and where the
/// value ends. Nesting is kept as one bit per level.
#[derive(Debug, Clone, Copy, Default)]
struct JsonScan {
    expect: Expect,
    /// Bit `d`: level `d` is an object (else an array).
    objects: u64,
    depth: u8,
}

/// Nesting the lane follows; deeper arguments are the parser's.
const MAX_DEPTH: u8 = 64;

impl JsonScan {
    /// Inside a string, before its next byte.
    fn in_string(&self) -> bool {
        matches!(self.expect, Expect::Str { .. })
    }

    #[inline]
    fn step(&mut self, c: u8) -> Json {
        use Expect::*;
        let ws = matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        match self.expect {
            Str { key } => {
                match c {
                    b'"' => self.expect = if key { Colon } else { CommaOrEnd },
                    b'\\' => self.expect = Escape { key },
                    0..0x20 => return Json::Invalid,
                    _ => {}
                }
                return if self.expect == CommaOrEnd { self.after_value() } else { Json::More };
            }
            Escape { key } => {
                self.expect = match c {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Str { key },
                    b'u' => Hex { key, left: 4 },
                    _ => return Json::Invalid,
                };
            }
            Hex { key, left } => {
                if !c.is_ascii_hexdigit() {
                    return Json::Invalid;
                }
                self.expect = if left == 1 { Str { key } } else { Hex { key, left: left - 1 } };
            }
            Word { word, at } => {
                if word[usize::from(at)] != c {
                    return Json::Invalid;
                }
                if usize::from(at) + 1 == word.len() {
                    self.expect = CommaOrEnd;
                    return self.after_value();
                }
                self.expect = Word { word, at: at + 1 };
            }
            Number(n) => {
                let next = match (n, c) {
                    (Num::Sign, b'0') => Some(Num::Zero),
                    (Num::Sign, b'1'..=b'9') => Some(Num::Int),
                    (Num::Int, b'0'..=b'9') => Some(Num::Int),
                    (Num::Zero | Num::Int, b'.') => Some(Num::Point),
                    (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                    (Num::Point | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                    (Num::E, b'+' | b'-') => Some(Num::ESign),
                    (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                    _ => None,
                };
                match next {
                    Some(n) => self.expect = Number(n),
                    None if matches!(n, Num::Zero | Num::Int | Num::Frac | Num::Exp) => {
                        self.expect = CommaOrEnd;
                        return self.step(c);
                    }
                    None => return Json::Invalid,
                }
            }
            _ if ws => {}
            Value | ValueOrEnd => {
                if c == b']' && self.expect == ValueOrEnd {
                    return self.close();
                }
                self.expect = match c {
                    b'"' => Str { key: false },
                    b'{' => return self.open(true),
                    b'[' => return self.open(false),
                    b't' => Word { word: b"true", at: 1 },
                    b'f' => Word { word: b"false", at: 1 },
                    b'n' => Word { word: b"null", at: 1 },
                    b'-' => Number(Num::Sign),
                    b'0' => Number(Num::Zero),
                    b'1'..=b'9' => Number(Num::Int),
                    _ => return Json::Invalid,
                };
            }
            KeyOrEnd | Key => match c {
                b'"' => self.expect = Str { key: true },
                b'}' if self.expect == KeyOrEnd => return self.close(),
                _ => return Json::Invalid,
            },
            Colon => {
                if c != b':' {
                    return Json::Invalid;
                }
                self.expect = Value;
            }
            CommaOrEnd => {
                let object = self.depth > 0 && self.objects & (1 << (self.depth - 1)) != 0;
                match c {
                    b',' => self.expect = if object { Key } else { Value },
                    b'}' if object => return self.close(),
                    b']' if !object && self.depth > 0 => return self.close(),
                    _ => return Json::Invalid,
                }
            }
        }
        Json::More
    }

    fn open(&mut self, object: bool) -> Json {
        if self.depth == MAX_DEPTH {
            return Json::Invalid;
        }
        if object {
            self.objects |= 1 << self.depth;
        } else {
            self.objects &= !(1 << self.depth);
        }
        self.depth += 1;
        self.expect = if object { Expect::KeyOrEnd } else { Expect::ValueOrEnd };
        Json::More
    }

    fn close(&mut self) -> Json {
        self.depth -= 1;
        self.expect = Expect::CommaOrEnd;
        self.after_value()
    }

    /// A value just ended: the whole one if no container is open.
    fn after_value(&self) -> Json {
        if self.depth == 0 { Json::Done } else { Json::More }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Option<usize> {
        let mut s = JsonScan::default();
        for (i, b) in text.bytes().enumerate() {
            match s.step(b) {
                Json::More => {}
                Json::Done => return Some(i + 1),
                Json::Invalid => return None,
            }
        }
        None
    }

    #[test]
    fn strict_json_values_end_where_they_close() {
        let cases = [r#"{"a": 1}"#, r#"{"a": [1, -2.5e+3, 0, true, false, null, "x\"\u00e9"], "b": {}}"#, r#"{"a":{"b":[[],[{}]]}}"#, r#"{ "k" : "v" }"#];
        for c in cases {
            assert_eq!(scan(&format!("{c}tail")), Some(c.len()), "{c}");
            serde_json::from_str::<serde_json::Value>(c).unwrap();
        }
    }

    #[test]
    fn what_strict_json_refuses_hands_over() {
        for c in [
            r#"{"a": None}"#,
            r#"{'a': 1}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1.}"#,
            r#"{"a": -}"#,
            "{\"a\": \"\n\"}",
            r#"{"a": "\x"}"#,
            r#"{"a" 1}"#,
            r#"{1: 2}"#,
            r#"{"a": [1 2]}"#,
            r#"{"a": tru}"#,
        ] {
            assert_eq!(scan(c), None, "{c}");
            assert!(serde_json::from_str::<serde_json::Value>(c).is_err(), "{c}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_the_parser() {
        let deep = format!("{}{}", "[".repeat(usize::from(MAX_DEPTH) + 1), "]".repeat(usize::from(MAX_DEPTH) + 1));
        assert_eq!(scan(&format!("{{\"a\": {deep}}}")), None);
    }

    #[test]
    fn forms_that_cannot_be_followed_are_refused() {
        let form = CallForm { open: "<c>".into(), name_end: "{".into(), between: None, close: "</c>".into() };
        assert!(!form.is_usable());
        let form = CallForm { open: "<c>".into(), name_end: ">".into(), between: Some("</c>".into()), close: "</c>".into() };
        assert!(!form.is_usable());
        let ok = CallForm { open: "<c=".into(), name_end: ">".into(), between: None, close: "</c>".into() };
        let tools: HashMap<String, ()> = [("a>b".to_owned(), ())].into();
        assert!(LanePlan::new(&ok, &tools).is_none());
        let tools: HashMap<String, ()> = [("ab".to_owned(), ())].into();
        assert!(LanePlan::new(&ok, &tools).is_some());
    }
}
