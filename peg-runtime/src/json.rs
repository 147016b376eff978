//! A dedicated, iterative, resumable JSON scanner (RFC 8259), shared with the Python-literal
//! dialect of [`crate::python`].
//!
//! One leniency, for model output: a string may hold raw control characters other than line
//! breaks (a raw tab is a common slip); the chat layer escapes them in the arguments it writes.
//!
//! The scanner validates; it does not build values. It is a byte-exact state machine: it can stop
//! at the end of any input and continue later from exactly where it stopped (a [`Scanner`] is the
//! snapshot), which is how a streaming [`Session`](crate::Session) avoids rescanning a growing
//! tool argument. Nesting is tracked on an explicit stack, so `[[[[...` a hundred thousand deep is
//! an ordinary need-more-input, never a stack overflow.
//!
//! ```
//! use peg_runtime::json::{scan, ScanResult};
//! use peg_runtime::{JsonKind, Outcome};
//! let r = scan(br#"{"a": [1, 2.5e3, "x\n"]} tail"#, JsonKind::Object, false);
//! assert_eq!((r.outcome, r.end), (Outcome::Success, 24));
//! let r = scan(br#"{"a": [1, 2"#, JsonKind::Value, true);
//! assert_eq!(r.outcome, Outcome::NeedMoreInput);
//! assert_eq!(scan(b"[1,]", JsonKind::Array, false).outcome, Outcome::Fail);
//! ```

use crate::kinds::{JsonKind, PythonKind};
use crate::outcome::Outcome;

/// Which literal syntax the scanner accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// RFC 8259 JSON.
    Json,
    /// Python literals: either quote, `True`/`False`/`None`, trailing commas; dict keys are strings.
    Python,
}

/// What to scan at the start position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Any value.
    Value,
    /// An object / dict.
    Object,
    /// An array / list.
    Array,
    /// A string with its quotes.
    String,
    /// A number.
    Number,
    /// A boolean.
    Bool,
    /// `null` / `None`.
    Null,
    /// The body of a `"`-quoted string, stopping before the closing quote (not consumed).
    StringContent,
}

impl From<JsonKind> for Target {
    fn from(k: JsonKind) -> Target {
        match k {
            JsonKind::Value => Target::Value,
            JsonKind::Object => Target::Object,
            JsonKind::Array => Target::Array,
            JsonKind::String => Target::String,
            JsonKind::Number => Target::Number,
            JsonKind::Bool => Target::Bool,
            JsonKind::Null => Target::Null,
        }
    }
}

impl From<PythonKind> for Target {
    fn from(k: PythonKind) -> Target {
        match k {
            PythonKind::Value => Target::Value,
            PythonKind::Dict => Target::Object,
            PythonKind::List => Target::Array,
            PythonKind::Str => Target::String,
            PythonKind::Number => Target::Number,
            PythonKind::Bool => Target::Bool,
            PythonKind::None => Target::Null,
        }
    }
}

/// The result of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanResult {
    /// Success (a complete value), NeedMoreInput (cut by the end of partial input) or Fail.
    pub outcome: Outcome,
    /// Success: end of the value. NeedMoreInput: how far the text is safe to show (an incomplete
    /// escape or UTF-8 sequence at the end is held back). Fail: where scanning stopped.
    pub end: usize,
    /// The outcome depended on where the input ends (more input could change it).
    pub touched_end: bool,
    /// A string contained invalid UTF-8 (kept as is).
    pub invalid_utf8: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Array,
    /// Inside an object, scanning a key.
    Key,
    /// Inside an object, scanning a member value.
    Member,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Sign,
    Zero,
    Int,
    /// `.` after integer digits.
    Dot,
    /// `.` with no integer digits (Python `.5`).
    LeadDot,
    Frac,
    E,
    ESign,
    Exp,
}

/// How [`Scanner::run_states`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Invalid input (does not depend on the end of input).
    Fail,
    /// A complete value (does not depend on the end of input).
    Done,
    /// Partial input ended inside the value.
    More,
    /// Complete input ended a top-level number.
    EndDone,
    /// Complete input ended inside the value.
    EndFail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Start,
    Value,
    ArrFirst,
    ArrNext,
    ObjFirst,
    Key,
    Colon,
    After,
    Str { quote: u8 },
    Esc { quote: u8 },
    Hex { quote: u8, left: u8 },
    Utf8 { quote: u8, left: u8, lo: u8, hi: u8 },
    Num(Num),
    Word { word: u8, i: u8 },
    Done,
}

/// Escapes of two bytes, by their second byte: JSON's `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`,
/// `\t` (`[0]`); Python's any ASCII byte but those that start a hex escape (`[1]`).
const SHORT_ESCAPES: [[bool; 256]; 2] = {
    let mut t = [[false; 256]; 2];
    let json = b"\"\\/bfnrt";
    let mut k = 0;
    while k < json.len() {
        t[0][json[k] as usize] = true;
        k += 1;
    }
    let mut b = 0;
    while b < 0x80 {
        t[1][b] = b != b'x' as usize && b != b'u' as usize && b != b'U' as usize;
        b += 1;
    }
    t
};

/// Whether a backslash then `c` is a whole escape (no hex digits follow) in the dialect (`py`).
#[inline(always)]
pub(crate) fn short_escape(c: u8, py: bool) -> bool {
    SHORT_ESCAPES[usize::from(py)][c as usize]
}

/// Where the run of a `quote`d string's body starting at `from` ends, over plain printable
/// ASCII and short escapes sixteen bytes at a time: at the quote, a
/// hex escape, an invalid or cut escape, a control or a non-ASCII byte.
#[inline(always)]
fn plain_end(input: &[u8], from: usize, quote: u8, py: bool) -> usize {
    from + crate::swar::escaped_len(&input[from..], quote, true, |c| short_escape(c, py)).0
}

const WORDS: [&[u8]; 6] = [b"true", b"false", b"null", b"True", b"False", b"None"];

/// A resumable scanner: create it at a position, [`run`](Scanner::run) it on the input, and if the
/// result touched the end, keep it and run it again once the input has grown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanner {
    dialect: Dialect,
    target: Target,
    stack: Vec<Frame>,
    st: St,
    pos: usize,
    /// Start of the pending escape / multi-byte character (the partial-mode safe end).
    pending: usize,
    invalid: bool,
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    /// A scanner for one `target` value starting at byte `start`.
    pub fn new(dialect: Dialect, target: Target, start: usize) -> Scanner {
        let st = if target == Target::StringContent { St::Str { quote: b'"' } } else { St::Start };
        Scanner { dialect, target, stack: Vec::new(), st, pos: start, pending: start, invalid: false }
    }

    /// Whether a string scanned so far held invalid UTF-8.
    pub(crate) fn invalid_utf8(&self) -> bool {
        self.invalid
    }

    /// Continues scanning over `input` (the whole input, positions are absolute). `partial`: the
    /// input may continue. A result with `touched_end == false` is final; otherwise the scanner
    /// may be run again on a longer input and continues where it stopped.
    #[inline]
    pub fn run(&mut self, input: &[u8], partial: bool) -> ScanResult {
        if partial && self.plain_str(input) {
            return self.result(input.len(), Stop::More);
        }
        let (end, stop) = match (self.dialect, partial) {
            (Dialect::Json, true) => self.run_states_at::<false, true>(input),
            (Dialect::Json, false) => self.run_states_at::<false, false>(input),
            (Dialect::Python, true) => self.run_states_at::<true, true>(input),
            (Dialect::Python, false) => self.run_states_at::<true, false>(input),
        };
        self.result(end, stop)
    }

    /// [`run`](Scanner::run) on partial input with the JSON state machine inlined into the
    /// caller: for a loop that resumes the scanner after every few bytes (`Session::update`), so
    /// the loop's invariants (tables, masks) are set up once per loop instead of once per resume.
    #[inline(always)]
    pub(crate) fn run_partial_inline(&mut self, input: &[u8]) -> ScanResult {
        if self.plain_str(input) {
            return self.result(input.len(), Stop::More);
        }
        let (end, stop) = match self.dialect {
            Dialect::Json => self.run_states::<false>(input, true),
            Dialect::Python => self.run_states_at::<true, true>(input),
        };
        self.result(end, stop)
    }

    /// Streaming: new plain bytes inside a string (the usual token) only move the cursor, without
    /// entering the state machine; what is scanned here is not scanned again. True if that
    /// reached the end of `input`.
    #[inline(always)]
    fn plain_str(&mut self, input: &[u8]) -> bool {
        let St::Str { quote } = self.st else { return false };
        self.pos = plain_end(input, self.pos, quote, self.dialect == Dialect::Python);
        self.pos >= input.len()
    }

    #[inline(always)]
    fn result(&self, end: usize, stop: Stop) -> ScanResult {
        let (outcome, touched_end) = match stop {
            Stop::Fail => (Outcome::Fail, false),
            Stop::Done => (Outcome::Success, false),
            Stop::More => (Outcome::NeedMoreInput, true),
            Stop::EndDone => (Outcome::Success, true),
            Stop::EndFail => (Outcome::Fail, true),
        };
        ScanResult { outcome, end, touched_end, invalid_utf8: self.invalid }
    }

    // Callers inline `run`, not the loop: one compiled copy per (dialect, mode).
    #[inline(never)]
    fn run_states_at<const PY: bool, const PARTIAL: bool>(&mut self, input: &[u8]) -> (usize, Stop) {
        if !PY && let Some(end) = self.json_run(input) {
            return (end, Stop::Done);
        }
        self.run_states::<PY>(input, PARTIAL)
    }

    /// The common run of JSON as structured code: a value, a member or an item per step
    /// instead of a turn of the state machine per token (tool arguments are mostly short
    /// tokens). What it does not take (an invalid escape, a line break in a string, text cut
    /// by the end of the input, invalid text) it leaves to the state machine, in the
    /// state the machine would be in at that byte, so the outcome and the scanner are the
    /// machine's. `Some(end)`: the value ended at `end`.
    #[inline(never)]
    fn json_run(&mut self, input: &[u8]) -> Option<usize> {
        let mut pos = self.pos;
        // The state the machine would be in before the value at `pos` (it differs only where
        // the input ends there); `None`: after a value.
        let mut value = match self.st {
            St::Value => Some(St::Value),
            St::After => None,
            St::Start => match (self.target, input.get(pos)) {
                (Target::Value | Target::Object, Some(b'{')) | (Target::Value | Target::Array, Some(b'[')) => Some(St::Start),
                _ => return None,
            },
            _ => return None,
        };
        macro_rules! hand_over {
            ($st:expr) => {{
                self.pos = pos;
                self.st = $st;
                return None;
            }};
        }
        // At a key's opening quote, a key frame on top: the key and the colon, up to the value.
        macro_rules! key {
            () => {
                match self.json_string(input, pos + 1) {
                    Ok(end) => pos = skip_ws(input, end),
                    Err((at, st)) => {
                        pos = at;
                        hand_over!(st)
                    }
                }
                if input.get(pos) != Some(&b':') {
                    hand_over!(St::Colon)
                }
                pos += 1;
                if let Some(top) = self.stack.last_mut() {
                    *top = Frame::Member;
                }
                value = Some(St::Value);
            };
        }
        loop {
            let Some(before) = value else {
                let Some(&top) = self.stack.last() else {
                    self.pos = pos;
                    self.st = St::Done;
                    return Some(pos);
                };
                pos = skip_ws(input, pos);
                match (input.get(pos), top) {
                    (Some(b','), Frame::Array) => {
                        pos += 1;
                        value = Some(St::ArrNext);
                    }
                    (Some(b','), Frame::Member) => {
                        if let Some(top) = self.stack.last_mut() {
                            *top = Frame::Key;
                        }
                        pos = skip_ws(input, pos + 1);
                        if input.get(pos) != Some(&b'"') {
                            hand_over!(St::Key)
                        }
                        key!();
                    }
                    (Some(b']'), Frame::Array) | (Some(b'}'), Frame::Member) => {
                        pos += 1;
                        self.stack.pop();
                    }
                    _ => hand_over!(St::After),
                }
                continue;
            };
            pos = skip_ws(input, pos);
            let Some(&b) = input.get(pos) else { hand_over!(before) };
            match b {
                b'"' => match self.json_string(input, pos + 1) {
                    Ok(end) => pos = end,
                    Err((at, st)) => {
                        pos = at;
                        hand_over!(st)
                    }
                },
                b'{' => {
                    self.stack.push(Frame::Key);
                    pos = skip_ws(input, pos + 1);
                    match input.get(pos) {
                        Some(b'"') => {
                            key!();
                            continue;
                        }
                        Some(b'}') => {
                            pos += 1;
                            self.stack.pop();
                        }
                        _ => hand_over!(St::ObjFirst),
                    }
                }
                b'[' => {
                    self.stack.push(Frame::Array);
                    pos = skip_ws(input, pos + 1);
                    if input.get(pos) != Some(&b']') {
                        value = Some(St::ArrFirst);
                        continue;
                    }
                    pos += 1;
                    self.stack.pop();
                }
                b'-' | b'0'..=b'9' => match json_number_end(input, pos) {
                    Some(end) => pos = end,
                    None => hand_over!(before),
                },
                _ => {
                    pos += match b {
                        b't' if word_at(input, pos, b"true") => 4,
                        b'f' if word_at(input, pos, b"false") => 5,
                        b'n' if word_at(input, pos, b"null") => 4,
                        _ => hand_over!(before),
                    };
                }
            }
            value = None;
        }
    }

    /// [`Scanner::json_run`]'s string body from `pos`: the end after its closing quote, or
    /// where and in which state the state machine takes over.
    #[inline(always)]
    fn json_string(&mut self, input: &[u8], mut pos: usize) -> Result<usize, (usize, St)> {
        let quote = b'"';
        loop {
            pos = plain_end(input, pos, quote, false);
            match input.get(pos) {
                Some(b'"') => return Ok(pos + 1),
                Some(b'\\') => match input.get(pos + 1..pos + 6) {
                    // Short escapes are passed by `plain_end`: a `\u` and its four digits.
                    Some([b'u', hex @ ..]) if hex.iter().all(u8::is_ascii_hexdigit) => {
                        self.pending = pos;
                        pos += 6;
                    }
                    _ => return Err((pos, St::Str { quote })),
                },
                // A two-byte character (accented Latin letters), as `str_slow` takes it.
                Some(0xC2..=0xDF) if input.get(pos + 1).is_some_and(|&c| c & 0xC0 == 0x80) => {
                    self.pending = pos;
                    pos += 2;
                }
                Some(_) => {
                    let limit = memchr::memchr2(quote, b'\\', &input[pos..]).map_or(input.len(), |k| pos + k);
                    match self.str_slow(input, quote, limit, pos) {
                        Ok((end, St::Str { .. })) => pos = end,
                        // A character cut by the end of the input.
                        Ok((end, st)) => return Err((end, st)),
                        // A line break: the machine fails there.
                        Err(_) => return Err((pos, St::Str { quote })),
                    }
                }
                None => return Err((pos, St::Str { quote })),
            }
        }
    }

    /// The state machine; `PY` is the dialect, a constant so that each dialect's loop carries no
    /// dialect checks (and a resume sets up no dialect-dependent values). Returns the end and how
    /// the scan stopped, a pair that travels in registers (a streaming resume is a few bytes of
    /// work, so its entry and exit matter).
    #[inline(always)]
    fn run_states<const PY: bool>(&mut self, input: &[u8], partial: bool) -> (usize, Stop) {
        let py = PY;
        let n = input.len();
        // Cursor and state live in registers; both are written back wherever the scan stops, so
        // resuming costs a load of each and a jump into the state's arm.
        let mut pos = self.pos;
        let mut st = self.st;
        macro_rules! stop {
            ($stop:expr, $end:expr) => {{
                self.pos = pos;
                self.st = st;
                return ($end, $stop);
            }};
        }
        macro_rules! fail {
            () => {
                stop!(Stop::Fail, pos)
            };
        }
        // A value ended before `pos`: continue in the enclosing container, or stop.
        macro_rules! complete {
            () => {
                match self.stack.last() {
                    None => {
                        st = St::Done;
                        stop!(Stop::Done, pos)
                    }
                    Some(Frame::Key) => st = St::Colon,
                    Some(Frame::Array | Frame::Member) => st = St::After,
                }
            };
        }
        // The first byte of a value (at `pos`): consume it or fail.
        macro_rules! value {
            ($b:expr) => {
                match value_start(&mut self.stack, $b, py) {
                    Some(s) => {
                        st = s;
                        pos += 1;
                    }
                    None => fail!(),
                }
            };
        }
        macro_rules! skip_ws {
            ($b:expr) => {
                if is_ws($b) {
                    pos += 1;
                    while pos < n && is_ws(input[pos]) {
                        pos += 1;
                    }
                    continue;
                }
            };
        }
        loop {
            if pos >= n {
                if matches!(st, St::Done) {
                    stop!(Stop::Done, pos);
                }
                if partial {
                    // Hold back an incomplete escape or UTF-8 sequence.
                    let end = if matches!(st, St::Esc { .. } | St::Hex { .. } | St::Utf8 { .. }) { self.pending } else { n };
                    stop!(Stop::More, end);
                }
                let top_number = matches!(st, St::Num(s) if num_final(s, py)) && self.stack.is_empty();
                stop!(if top_number { Stop::EndDone } else { Stop::EndFail }, n);
            }
            let b = input[pos];
            match st {
                St::Str { quote } => {
                    let i = plain_end(input, pos, quote, py);
                    pos = i;
                    if i >= n {
                        continue;
                    }
                    let c = input[i];
                    if c == quote {
                        if self.target == Target::StringContent && self.stack.is_empty() {
                            st = St::Done;
                            stop!(Stop::Done, pos);
                        }
                        pos += 1;
                        complete!();
                    } else if c == b'\\' {
                        self.pending = pos;
                        pos += 1;
                        st = St::Esc { quote };
                    } else {
                        // Control or non-ASCII: the careful path, up to the next quote/backslash.
                        let limit = memchr::memchr2(quote, b'\\', &input[i..]).map_or(n, |k| i + k);
                        match self.str_slow(input, quote, limit, pos) {
                            Ok((p, s)) => {
                                pos = p;
                                st = s;
                            }
                            Err(p) => {
                                pos = p;
                                fail!();
                            }
                        }
                    }
                }
                St::Colon => {
                    skip_ws!(b);
                    if b != b':' {
                        fail!();
                    }
                    pos += 1;
                    if let Some(top) = self.stack.last_mut() {
                        *top = Frame::Member;
                    }
                    st = St::Value;
                    // Common layout `: value`: dispatch the value without another loop turn.
                    if pos < n && input[pos] == b' ' {
                        pos += 1;
                    }
                    if pos < n && !is_ws(input[pos]) {
                        value!(input[pos]);
                    }
                }
                St::After => {
                    skip_ws!(b);
                    match (b, self.stack.last()) {
                        (b',', Some(Frame::Array)) => {
                            pos += 1;
                            st = St::ArrNext;
                            if pos < n && input[pos] == b' ' {
                                pos += 1;
                            }
                            // `, value`: dispatch directly (`]` after a comma is left to ArrNext).
                            if pos < n && !is_ws(input[pos]) && input[pos] != b']' {
                                value!(input[pos]);
                            }
                        }
                        (b',', Some(Frame::Member)) => {
                            pos += 1;
                            if let Some(top) = self.stack.last_mut() {
                                *top = Frame::Key;
                            }
                            st = St::Key;
                            if pos < n && input[pos] == b' ' {
                                pos += 1;
                            }
                            if !py && pos < n && input[pos] == b'"' {
                                pos += 1;
                                st = St::Str { quote: b'"' };
                            }
                        }
                        (b']', Some(Frame::Array)) | (b'}', Some(Frame::Member)) => {
                            pos += 1;
                            self.stack.pop();
                            complete!();
                        }
                        _ => fail!(),
                    }
                }
                St::Value => {
                    skip_ws!(b);
                    value!(b);
                }
                St::ArrFirst | St::ArrNext => {
                    skip_ws!(b);
                    if b == b']' && (matches!(st, St::ArrFirst) || py) {
                        pos += 1;
                        self.stack.pop();
                        complete!();
                    } else {
                        value!(b);
                    }
                }
                St::ObjFirst | St::Key => {
                    skip_ws!(b);
                    if b == b'}' && (matches!(st, St::ObjFirst) || py) {
                        pos += 1;
                        self.stack.pop();
                        complete!();
                    } else if py {
                        // Dict keys: strings, in either quote. (Python takes other scalars,
                        // but not as the keywords of a call, and JSON has no other: a stream
                        // that read JSON up to a key that is none stops there, as JSON does.)
                        if b != b'"' && b != b'\'' {
                            fail!();
                        }
                        value!(b);
                    } else if b == b'"' {
                        pos += 1;
                        st = St::Str { quote: b'"' };
                    } else {
                        fail!();
                    }
                }
                St::Num(s) => {
                    let next = match (s, b) {
                        (Num::Sign, b'0') if !py => Some(Num::Zero),
                        (Num::Sign, b'0'..=b'9') => Some(Num::Int),
                        (Num::Sign, b'.') if py => Some(Num::LeadDot),
                        (Num::Zero, b'0'..=b'9') if py => Some(Num::Int),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Int, b'_') if py => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                        (Num::Dot, b'e' | b'E') if py => Some(Num::E),
                        (Num::Dot | Num::LeadDot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Frac, b'_') if py => Some(Num::Frac),
                        (Num::E, b'+' | b'-') => Some(Num::ESign),
                        (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                        _ => None,
                    };
                    match next {
                        Some(ns) => {
                            pos += 1;
                            st = St::Num(ns);
                            // Digit runs are the common case.
                            if matches!(ns, Num::Int | Num::Frac | Num::Exp) {
                                while pos < n && input[pos].is_ascii_digit() {
                                    pos += 1;
                                }
                            }
                        }
                        // The number ended before `b` (not consumed).
                        None if num_final(s, py) => complete!(),
                        None => fail!(),
                    }
                }
                St::Esc { quote } => {
                    if py {
                        match b {
                            b'x' => st = St::Hex { quote, left: 2 },
                            b'u' => st = St::Hex { quote, left: 4 },
                            b'U' => st = St::Hex { quote, left: 8 },
                            // A backslash before a non-ASCII char stays literal; rescan the char.
                            0x80.. => {
                                st = St::Str { quote };
                                continue;
                            }
                            _ => st = St::Str { quote },
                        }
                    } else {
                        match b {
                            _ if short_escape(b, false) => st = St::Str { quote },
                            b'u' => st = St::Hex { quote, left: 4 },
                            _ => fail!(),
                        }
                    }
                    pos += 1;
                }
                St::Hex { quote, left } => {
                    if !b.is_ascii_hexdigit() {
                        fail!();
                    }
                    pos += 1;
                    st = if left == 1 { St::Str { quote } } else { St::Hex { quote, left: left - 1 } };
                }
                St::Utf8 { quote, left, lo, hi } => {
                    if b < lo || b > hi {
                        // Invalid sequence: the bytes so far are one invalid unit; rescan `b`.
                        self.invalid = true;
                        st = St::Str { quote };
                        continue;
                    }
                    pos += 1;
                    st = if left == 1 { St::Str { quote } } else { St::Utf8 { quote, left: left - 1, lo: 0x80, hi: 0xBF } };
                }
                St::Word { word, i } => {
                    let w = WORDS[word as usize];
                    let rest = &w[i as usize..];
                    if input.len() - pos >= rest.len() && input[pos..].iter().zip(rest).all(|(a, b)| a == b) {
                        pos += rest.len();
                        complete!();
                        continue;
                    }
                    if b != w[i as usize] {
                        fail!();
                    }
                    pos += 1;
                    if i as usize + 1 == w.len() {
                        complete!();
                    } else {
                        st = St::Word { word, i: i + 1 };
                    }
                }
                St::Start => {
                    let ok = match self.target {
                        Target::Value | Target::StringContent => true,
                        Target::Object => b == b'{',
                        Target::Array => b == b'[',
                        Target::String => b == b'"' || (py && b == b'\''),
                        Target::Number => b == b'-' || b.is_ascii_digit() || (py && (b == b'+' || b == b'.')),
                        Target::Bool => {
                            if py {
                                b == b'T' || b == b'F'
                            } else {
                                b == b't' || b == b'f'
                            }
                        }
                        Target::Null => b == if py { b'N' } else { b'n' },
                    };
                    if !ok {
                        fail!();
                    }
                    value!(b);
                }
                // A finished scanner run again.
                St::Done => stop!(Stop::Done, pos),
            }
        }
    }

    /// Byte-wise string scanning from `pos` up to `limit` (the next quote/backslash or the end):
    /// control characters and UTF-8. Returns the new position and state, or where a hard error is.
    fn str_slow(&mut self, input: &[u8], quote: u8, limit: usize, mut pos: usize) -> Result<(usize, St), usize> {
        while pos < limit {
            let b = input[pos];
            if b < 0x20 {
                // Line breaks end a string that lost its closing quote; other control bytes
                // (models write raw tabs) are kept, and the chat mapper escapes them.
                if b == b'\n' || b == b'\r' {
                    return Err(pos);
                }
                pos += 1;
            } else if b < 0x80 {
                pos += 1;
            } else {
                let (left, lo, hi) = match b {
                    0xC2..=0xDF => (1, 0x80, 0xBF),
                    0xE0 => (2, 0xA0, 0xBF),
                    0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
                    0xED => (2, 0x80, 0x9F),
                    0xF0 => (3, 0x90, 0xBF),
                    0xF1..=0xF3 => (3, 0x80, 0xBF),
                    0xF4 => (3, 0x80, 0x8F),
                    _ => {
                        self.invalid = true;
                        pos += 1;
                        continue;
                    }
                };
                self.pending = pos;
                pos += 1;
                // Finish the sequence inline when it is complete in the input.
                let mut left = left;
                let (mut lo, mut hi) = (lo, hi);
                loop {
                    if pos >= input.len() {
                        return Ok((pos, St::Utf8 { quote, left, lo, hi }));
                    }
                    let c = input[pos];
                    if c < lo || c > hi {
                        self.invalid = true;
                        break;
                    }
                    pos += 1;
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                    lo = 0x80;
                    hi = 0xBF;
                }
            }
        }
        Ok((pos, St::Str { quote }))
    }
}

/// Where the JSON number at `pos` ends, if it is whole before the end of `input` (the byte
/// after it decides nothing here: as in the state machine, what follows is checked as what
/// comes after a value).
#[inline(always)]
fn json_number_end(input: &[u8], pos: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while input.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let int = pos + usize::from(input[pos] == b'-');
    let mut end = match input.get(int)? {
        b'0' => int + 1,
        b'1'..=b'9' => digits(int + 1),
        _ => return None,
    };
    if input.get(end) == Some(&b'.') {
        let frac = digits(end + 1);
        if frac == end + 1 {
            return None;
        }
        end = frac;
    }
    if let Some(b'e' | b'E') = input.get(end) {
        let sign = end + 1 + usize::from(matches!(input.get(end + 1), Some(b'+' | b'-')));
        end = digits(sign);
        if end == sign {
            return None;
        }
    }
    (end < input.len()).then_some(end)
}

/// Whether `input` holds `word` at `pos` (a fixed size: compared in registers, not by a call).
#[inline(always)]
pub(crate) fn word_at<const N: usize>(input: &[u8], pos: usize, word: &[u8; N]) -> bool {
    input.get(pos..pos + N).is_some_and(|w| w == word)
}

/// Where the run of JSON whitespace from `pos` ends.
#[inline(always)]
fn skip_ws(input: &[u8], mut pos: usize) -> usize {
    while pos < input.len() && is_ws(input[pos]) {
        pos += 1;
    }
    pos
}

fn num_final(s: Num, py: bool) -> bool {
    matches!(s, Num::Zero | Num::Int | Num::Frac | Num::Exp) || (py && s == Num::Dot)
}

/// The state after the first byte `b` of a value (pushing a frame for a container); `None` if no
/// value starts with `b`.
#[inline(always)]
fn value_start(stack: &mut Vec<Frame>, b: u8, py: bool) -> Option<St> {
    Some(match b {
        b'{' => {
            stack.push(Frame::Key);
            St::ObjFirst
        }
        b'[' => {
            stack.push(Frame::Array);
            St::ArrFirst
        }
        b'"' => St::Str { quote: b'"' },
        b'\'' if py => St::Str { quote: b'\'' },
        b'-' => St::Num(Num::Sign),
        b'+' if py => St::Num(Num::Sign),
        b'.' if py => St::Num(Num::LeadDot),
        b'0' => St::Num(Num::Zero),
        b'1'..=b'9' => St::Num(Num::Int),
        b't' if !py => St::Word { word: 0, i: 1 },
        b'f' if !py => St::Word { word: 1, i: 1 },
        b'n' if !py => St::Word { word: 2, i: 1 },
        b'T' if py => St::Word { word: 3, i: 1 },
        b'F' if py => St::Word { word: 4, i: 1 },
        b'N' if py => St::Word { word: 5, i: 1 },
        _ => return None,
    })
}

/// Scans one JSON value of `kind` at the start of `input`. `partial`: the input may continue.
pub fn scan(input: &[u8], kind: JsonKind, partial: bool) -> ScanResult {
    Scanner::new(Dialect::Json, kind.into(), 0).run(input, partial)
}

/// Whether `input` is exactly one JSON value (surrounding whitespace allowed).
pub fn is_valid(input: &[u8]) -> bool {
    let start = input.iter().position(|&b| !is_ws(b)).unwrap_or(input.len());
    let r = Scanner::new(Dialect::Json, Target::Value, start).run(input, false);
    r.outcome == Outcome::Success && input[r.end..].iter().all(|&b| is_ws(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(s: &str) -> (Outcome, usize) {
        let r = scan(s.as_bytes(), JsonKind::Value, false);
        (r.outcome, r.end)
    }

    #[test]
    fn accepts_rfc8259_values() {
        for s in [
            "0",
            "-0",
            "12",
            "-1.5e+10",
            "1E3",
            "0.25",
            "\"\"",
            "\"a\\u00e9\\n\\\"\"",
            "true",
            "false",
            "null",
            "[]",
            "{}",
            "[1, [2, {\"a\": null}], \"x\"]",
            "{\"k\" : {\"n\": [true , false]}}",
            "\"héllo ✓ 😀\"",
        ] {
            assert_eq!(full(s), (Outcome::Success, s.len()), "{s}");
            assert!(is_valid(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn rejects_invalid_json() {
        for s in ["[1,]", "{\"a\":1,}", "{a:1}", "'x'", "01x", "-", "1.", "1e", "\"\\x\"", "\"a\nb\"", "tru", "[1 2]", "{\"a\" 1}", "True", "+1"] {
            assert!(!is_valid(s.as_bytes()), "{s}");
        }
        assert_eq!(full("tru"), (Outcome::Fail, 3));
        assert_eq!(full("[1 2]").0, Outcome::Fail);
        // A value followed by other text ends where the value ends.
        assert_eq!(full("01"), (Outcome::Success, 1));
        assert_eq!(full("{} x"), (Outcome::Success, 2));
    }

    #[test]
    fn separator_fast_paths() {
        for ok in ["{\"a\":  1, \"b\": [1, 2,\n3], \"c\":\t{}}", "[1, [], {}, \"x\", -1, true]", "{\"a\": {\"b\": null}}"] {
            assert!(is_valid(ok.as_bytes()), "{ok}");
        }
        for bad in ["[1, ]", "{\"a\": 1, }", "{\"a\": , }", "[1, , 2]", "{\"a\": 1, b}"] {
            assert!(!is_valid(bad.as_bytes()), "{bad}");
        }
        let py = |s: &str| Scanner::new(Dialect::Python, Target::Value, 0).run(s.as_bytes(), false);
        for ok in ["[1, ]", "{'a': 1, }", "{'a': 1, \"b\": 'c'}", "['x', \"y\"]"] {
            assert_eq!(py(ok).end, ok.len(), "{ok}");
        }
    }

    #[test]
    fn kinds_check_the_first_byte() {
        assert_eq!(scan(b"[1]", JsonKind::Object, false).outcome, Outcome::Fail);
        assert_eq!(scan(b"{}", JsonKind::Object, false).outcome, Outcome::Success);
        assert_eq!(scan(b"\"s\"", JsonKind::String, false).end, 3);
        assert_eq!(scan(b"-3.5,", JsonKind::Number, false).end, 4);
        assert_eq!(scan(b"null", JsonKind::Bool, false).outcome, Outcome::Fail);
        assert_eq!(scan(b"false", JsonKind::Bool, false).end, 5);
        assert_eq!(scan(b"null", JsonKind::Null, false).end, 4);
    }

    #[test]
    fn partial_input_needs_more() {
        for s in ["", "{", "{\"a", "{\"a\":", "[1, 2", "\"abc\\", "\"abc\\u00", "tr", "12", "-", "{\"a\": 1.5e"] {
            let r = scan(s.as_bytes(), JsonKind::Value, true);
            assert_eq!(r.outcome, Outcome::NeedMoreInput, "{s}");
            assert!(r.touched_end);
        }
        // Held back: an incomplete escape and an incomplete UTF-8 sequence.
        assert_eq!(scan(b"\"ab\\u00", JsonKind::Value, true).end, 3);
        assert_eq!(scan(b"\"ab\xC3", JsonKind::Value, true).end, 3);
        // A complete container does not depend on what follows.
        let r = scan(b"{\"a\":1}", JsonKind::Value, true);
        assert_eq!((r.outcome, r.touched_end), (Outcome::Success, false));
        // A top-level number at the end of complete input is complete.
        let r = scan(b"12", JsonKind::Value, false);
        assert_eq!((r.outcome, r.end, r.touched_end), (Outcome::Success, 2, true));
    }

    #[test]
    fn deep_nesting_is_iterative() {
        let deep = vec![b'['; 100_000];
        assert_eq!(scan(&deep, JsonKind::Value, true).outcome, Outcome::NeedMoreInput);
        assert_eq!(scan(&deep, JsonKind::Value, false).outcome, Outcome::Fail);
        let mut ok = vec![b'['; 50_000];
        ok.extend(vec![b']'; 50_000]);
        assert_eq!(scan(&ok, JsonKind::Value, false).end, 100_000);
    }

    #[test]
    fn invalid_utf8_is_kept_and_flagged() {
        let r = scan(b"\"a\xFFb\"", JsonKind::Value, false);
        assert_eq!((r.outcome, r.end, r.invalid_utf8), (Outcome::Success, 5, true));
        let r = scan(b"\"a\xE2\x82b\"", JsonKind::Value, false);
        assert_eq!((r.outcome, r.end, r.invalid_utf8), (Outcome::Success, 6, true));
        let r = scan("\"é\"".as_bytes(), JsonKind::Value, false);
        assert!(!r.invalid_utf8);
    }

    #[test]
    fn resumes_byte_by_byte() {
        let text = r#"{"name": "f\u00e9", "args": [1, -2.5e3, true, null, {"x": "café ✓ \\"}]}"#.as_bytes();
        let mut sc = Scanner::new(Dialect::Json, Target::Value, 0);
        for i in 0..text.len() {
            let r = sc.run(&text[..i], true);
            assert_eq!(r.outcome, Outcome::NeedMoreInput, "prefix {i}");
        }
        let r = sc.run(text, true);
        assert_eq!((r.outcome, r.end), (Outcome::Success, text.len()));
        assert_eq!(scan(text, JsonKind::Value, false).end, text.len());
    }

    /// The scan of a whole input against the same scan resumed a byte at a time, where every
    /// escape goes through the state machine rather than the word loop's run.
    fn agrees_with_bytewise(text: &[u8], dialect: Dialect) {
        let whole = Scanner::new(dialect, Target::Value, 0).run(text, false);
        let mut sc = Scanner::new(dialect, Target::Value, 0);
        let bytewise = (0..text.len()).map(|i| sc.run(&text[..i], true)).find(|r| !r.touched_end).unwrap_or_else(|| sc.run(text, false));
        assert_eq!(whole, bytewise, "{dialect:?} {:?}", String::from_utf8_lossy(text));
    }

    /// Strings of escapes at every offset in a word, runs of backslashes of every length
    /// before a quote, hex escapes, control bytes, multi-byte and invalid UTF-8.
    #[test]
    fn string_runs_agree_with_the_state_machine() {
        for run in 0..18 {
            for offset in 0..10 {
                for end in [&b"\"]"[..], b"'\"]", b"n\"]", b"u00e9\"]", b"x41'\"]", b"\n\"]", b"\xc3\xa9\"]", b"\xff\"]"] {
                    let mut t = b"[\"".to_vec();
                    t.extend(std::iter::repeat_n(b'a', offset));
                    t.extend(std::iter::repeat_n(b'\\', run));
                    t.extend_from_slice(end);
                    agrees_with_bytewise(&t, Dialect::Json);
                    t[1] = b'\'';
                    agrees_with_bytewise(&t, Dialect::Python);
                }
            }
        }
        let atoms: [&[u8]; 20] = [
            b"\\",
            b"\\\\",
            b"\\\"",
            b"\"",
            b"'",
            b"n",
            b"u",
            b"x",
            b"U",
            b"0",
            b"aD",
            b"\x01",
            b"\n",
            b"\t",
            b"\xc3\xa9",
            b"\xe2\x9c\x93",
            b"\xf0\x9f\x98\x80",
            b"\xff",
            b"\xe2\x9c",
            b"plain text",
        ];
        let mut rng = crate::test_rng::Rng(0x5eed);
        let mut draw = |n: usize| rng.below(n);
        for _ in 0..5000 {
            let quote = [b'"', b'\''][draw(2)];
            let mut t = vec![b'[', quote];
            for _ in 0..draw(12) {
                t.extend_from_slice(atoms[draw(atoms.len())]);
            }
            t.extend_from_slice(&[quote, b']']);
            agrees_with_bytewise(&t, Dialect::Json);
            agrees_with_bytewise(&t, Dialect::Python);
        }
    }

    /// Random JSON-ish text: brackets, separators, words, numbers, strings with escapes of
    /// every kind, control bytes, multi-byte and invalid UTF-8, odd whitespace; mostly valid.
    fn jsonish(r: &mut crate::test_rng::Rng, depth: usize, out: &mut Vec<u8>) {
        const ODD: &[&[u8]] = &[b",", b":", b"]", b"}", b"[", b"{", b"tru", b"\"", b"-", b"1.", b"01", b"1e", b"\\", b"\n", b"x"];
        const PIECES: &[&[u8]] = &[
            b"a",
            b"\\\"",
            b"\\\\",
            b"\\n",
            b"\\u00e9",
            b"\\u12",
            b"\\uZZZZ",
            b"\\x",
            b"\x01",
            b"\t",
            b"\n",
            b"\xc3\xa9",
            b"\xc3",
            b"\xc0\xa9",
            b"\xe2\x9c\x93",
            b"\xff",
            b"\xe2\x9c",
            b"plain words",
        ];
        const NUMBERS: &[&[u8]] = &[b"0", b"-0", b"7", b"-12", b"3.25", b"-3.5e2", b"1E+2", b"1e-7", b"123456789", b"0.5"];
        let ws = |r: &mut crate::test_rng::Rng, out: &mut Vec<u8>| out.extend_from_slice(r.pick(&[&b""[..], b"", b" ", b"\n  ", b"\t", b" \r\n"]));
        if r.below(30) == 0 {
            out.extend_from_slice(r.pick(ODD));
        }
        match r.below(if depth > 4 { 4 } else { 7 }) {
            0 => out.extend_from_slice(r.pick(NUMBERS)),
            1 => out.extend_from_slice(r.pick(&[&b"true"[..], b"false", b"null"])),
            2 | 3 => {
                out.push(b'"');
                for _ in 0..r.below(6) {
                    out.extend_from_slice(r.pick(PIECES));
                }
                out.push(b'"');
            }
            _ => {
                let object = r.below(2) == 0;
                out.push(if object { b'{' } else { b'[' });
                ws(r, out);
                for k in 0..r.below(4) {
                    if k > 0 {
                        out.push(b',');
                        ws(r, out);
                    }
                    if object {
                        out.extend_from_slice(r.pick(&[&b"\"k\""[..], b"\"a\\\"b\"", b"\"\\u0069d\"", b"\"caf\xc3\xa9\""]));
                        ws(r, out);
                        out.push(b':');
                        ws(r, out);
                    }
                    jsonish(r, depth + 1, out);
                    ws(r, out);
                }
                out.push(if object { b'}' } else { b']' });
            }
        }
        if r.below(30) == 0 {
            out.extend_from_slice(r.pick(ODD));
        }
    }

    /// The structured run over JSON leaves the outcome and the scanner exactly as the state
    /// machine alone would: on whole and cut input, partial or complete, fresh or resumed.
    #[test]
    fn json_run_agrees_with_the_state_machine() {
        let mut r = crate::test_rng::Rng(0x15_0a);
        let machine = |sc: &mut Scanner, input: &[u8], partial: bool| {
            let (end, stop) = sc.run_states::<false>(input, partial);
            sc.result(end, stop)
        };
        for _ in 0..3000 {
            let mut t = Vec::new();
            jsonish(&mut r, 0, &mut t);
            if r.below(2) == 0 {
                t.extend_from_slice(b" tail");
            }
            let target = r.pick(&[Target::Value, Target::Object, Target::Array]);
            for cut in (0..=t.len()).filter(|&c| c == t.len() || r.below(4) == 0) {
                for partial in [true, false] {
                    let (mut fast, mut slow) = (Scanner::new(Dialect::Json, target, 0), Scanner::new(Dialect::Json, target, 0));
                    assert_eq!(fast.run(&t[..cut], partial), machine(&mut slow, &t[..cut], partial), "{:?} at {cut}", String::from_utf8_lossy(&t));
                    assert_eq!(fast, slow, "{:?} at {cut}", String::from_utf8_lossy(&t));
                    if partial && fast.st != St::Done {
                        assert_eq!(fast.run(&t, false), machine(&mut slow, &t, false), "{:?} resumed at {cut}", String::from_utf8_lossy(&t));
                        assert_eq!(fast, slow);
                    }
                }
            }
        }
    }

    #[test]
    fn string_content_stops_before_the_quote() {
        let mut sc = Scanner::new(Dialect::Json, Target::StringContent, 0);
        let r = sc.run(br#"ab\"c" rest"#, false);
        assert_eq!((r.outcome, r.end), (Outcome::Success, 5));
        let mut sc = Scanner::new(Dialect::Json, Target::StringContent, 0);
        assert_eq!(sc.run(b"abc", true).outcome, Outcome::NeedMoreInput);
        assert_eq!(sc.run(b"abc", false).outcome, Outcome::Fail);
    }
}
