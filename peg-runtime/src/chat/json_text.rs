//! Small text helpers for tool arguments: JSON string escaping, a streaming Python-literal to
//! JSON normalizer, and closing a cut-off JSON text so it parses.

use crate::swar::{has_byte, has_control, plain_len};

/// `bytes` as text, invalid UTF-8 replaced. Model output is nearly always valid: the standard
/// library's validation (word-at-a-time on ASCII) decides that several times faster than
/// `String::from_utf8_lossy` walks it.
#[inline]
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Whether JSON escapes byte `b` inside a string: `"`, `\` and control bytes.
#[inline]
pub(crate) fn escapes(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Appends `s` to `out` escaped for the inside of a JSON string (no surrounding quotes).
pub(crate) fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        if !escapes(b) {
            continue;
        }
        out.push_str(&s[last..i]);
        push_escaped(out, b);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// Appends, inside a JSON string, what the escape `\` `c` of a Python (or JSON) string
/// means, as valid JSON: `\a`, `\v` and `\0` become `\u` escapes, `\'` a quote, a backslash
/// before a line break continues the line; an escape Python does not know keeps its backslash
/// (`\€` is a backslash and `€`). Escapes with hex digits (`\x`, `\u`, `\U`) are
/// [`push_hex_escape`]'s, once their digits are in.
pub(crate) fn push_python_escape(out: &mut String, c: char) {
    match c {
        '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => {
            out.push('\\');
            out.push(c);
        }
        '\'' => out.push('\''),
        'a' => out.push_str("\\u0007"),
        'v' => out.push_str("\\u000b"),
        '0' => out.push_str("\\u0000"),
        '\n' => {}
        _ => {
            out.push_str("\\\\");
            escape_into(out, c.encode_utf8(&mut [0; 4]));
        }
    }
}

/// How many hex digits the escape `\` `c` takes (`\x41`, `\u00e9`, `\U0001F600`).
fn hex_digits(c: char) -> Option<usize> {
    match c {
        'x' => Some(2),
        'u' => Some(4),
        'U' => Some(8),
        _ => None,
    }
}

/// Which half of a UTF-16 surrogate pair the hex digits of a `\u` escape (`\uD83D`) are, if
/// either. The JSON grammar takes any `\u` escape, but JSON readers (serde_json, so every
/// Rust client) take a surrogate only as a high one right before a low one (`\uD83D\uDE00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surrogate {
    High,
    Low,
}

#[inline]
pub(crate) fn surrogate(hex: &[u8]) -> Option<Surrogate> {
    match hex {
        [b'd' | b'D', b'8' | b'9' | b'a' | b'b' | b'A' | b'B', ..] => Some(Surrogate::High),
        [b'd' | b'D', b'c'..=b'f' | b'C'..=b'F', ..] => Some(Surrogate::Low),
        _ => None,
    }
}

/// Whether the four digits after a `\u` make an escape that passes as written: hex digits,
/// and no surrogate (whether one pairs up is [`PyToJson`]'s to say).
#[inline]
pub(crate) fn plain_u_escape(hex: &[u8]) -> bool {
    hex.iter().all(u8::is_ascii_hexdigit) && surrogate(hex).is_none()
}

/// What a surrogate escape that does not pair up is written as: the replacement character,
/// as invalid UTF-8 is ([`lossy`]).
const LONE_SURROGATE: &str = "\\ufffd";

/// Appends the hex escape `\` `letter` `digits` as valid JSON meaning what Python reads:
/// `digits` holds as many hex digits as the escape takes, or fewer when the text broke it off,
/// and then the escape is text (a backslash, the letter, the digits), as JSON cannot hold it.
/// A surrogate is a lone one here (a pair is [`PyToJson`]'s): [`LONE_SURROGATE`].
fn push_hex_escape(out: &mut String, letter: char, digits: &str) {
    let complete = hex_digits(letter) == Some(digits.len());
    match letter {
        'u' if complete && surrogate(digits.as_bytes()).is_some() => out.push_str(LONE_SURROGATE),
        'u' if complete => {
            out.push_str("\\u");
            out.push_str(digits);
        }
        'x' if complete => {
            out.push_str("\\u00");
            out.push_str(digits);
        }
        'U' if complete => match u32::from_str_radix(digits, 16).ok().and_then(char::from_u32) {
            Some(c) => escape_into(out, c.encode_utf8(&mut [0; 4])),
            None if digits.starts_with("0000") && surrogate(&digits.as_bytes()[4..]).is_some() => out.push_str(LONE_SURROGATE),
            None => {
                out.push_str("\\\\U");
                out.push_str(digits);
            }
        },
        _ => {
            out.push_str("\\\\");
            out.push(letter);
            out.push_str(digits);
        }
    }
}

/// Appends the JSON escape of `b`, one of `"`, `\` or a control byte.
#[inline]
pub(crate) fn push_escaped(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
}

/// `s` as a JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_into(&mut out, s);
    out.push('"');
    out
}

/// `text` trimmed; a JSON string literal is decoded (names and ids may be tagged with quotes).
pub(crate) fn unquote(text: &str) -> String {
    let t = text.trim();
    if t.len() >= 2
        && t.starts_with('"')
        && t.ends_with('"')
        && let Ok(s) = serde_json::from_str::<String>(t)
    {
        return s;
    }
    if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') {
        return t[1..t.len() - 1].to_owned();
    }
    t.to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum PyState {
    #[default]
    Normal,
    Dq,
    DqEsc,
    Sq,
    SqEsc,
    /// Inside a hex escape (`PyToJson::hex` holds its letter and digits so far), in a string
    /// quoted with `'` if `sq`.
    Hex {
        sq: bool,
    },
}

/// `PyToJson::hex` holding a high surrogate escape (`u` and its digits), and that and the
/// escape after it.
const HIGH_HELD: usize = "uD83D".len();
const PAIR_HELD: usize = "uD83D\\uDE00".len();

/// Rewrites a Python literal (`{'a': True, 'b': None}`) into JSON text as it streams in.
/// JSON input passes through unchanged. Holds back only an unfinished identifier or escape,
/// so fed piece by piece it yields the same text as fed whole.
#[derive(Debug, Clone, Default)]
pub(crate) struct PyToJson {
    state: PyState,
    ident: String,
    /// A comma was read: it and the whitespace after it (`held`) wait until the next token
    /// shows whether it was a trailing comma (`[1, 2,]`, valid Python, not JSON).
    comma: bool,
    /// The whitespace after a held comma (the buffer is kept: a comma per member).
    held: String,
    /// A raw control character inside a string was escaped (the text was not valid JSON).
    pub(crate) escaped_control: bool,
    /// The letter and the digits so far of a hex escape (`PyState::Hex`): written once all
    /// its digits are in, so a broken one (`\uZZ`) never reaches the JSON text.
    hex: String,
    /// The text is JSON as a JSON scanner took it (see [`PyToJson::json`]).
    json: bool,
}

impl PyToJson {
    /// For text a JSON scanner took: JSON but for raw control characters in strings (the
    /// scanner's one leniency). Nothing outside strings is rewritten, so only strings are
    /// followed, and commas: JSON's words pass and no word of theirs cut by a piece's end is
    /// held back, but a comma no member follows yet is (the text may turn out to be a
    /// recovered Python dict with a trailing comma, `{"a": 1,}`). What JSON has no place for
    /// outside strings, a `'` or the first letter of `True`, `False` or `None`, turns it into
    /// the Python normalizer (a recovered Python dict among JSON arguments: `{"days": None}`
    /// is `{"days": null}`).
    pub(crate) fn json() -> PyToJson {
        PyToJson { json: true, ..PyToJson::default() }
    }

    fn flush_ident(&mut self, out: &mut String) {
        if self.ident.is_empty() {
            return;
        }
        out.push_str(match self.ident.as_str() {
            "True" => "true",
            "False" => "false",
            "None" => "null",
            other => other,
        });
        self.ident.clear();
    }

    /// Feeds `s`, appending the JSON text that is now certain to `out`.
    pub(crate) fn push(&mut self, s: &str, out: &mut String) {
        let run = self.feed(s, out);
        out.push_str(&s[run..]);
    }

    /// [`PyToJson::push`] into an empty `out`, returning the text: `s` itself when it passes
    /// through unchanged (the common piece of JSON arguments: no copy).
    pub(crate) fn push_through<'a>(&mut self, s: &'a str, out: &'a mut String) -> &'a str {
        match self.feed(s, out) {
            0 if out.is_empty() => s,
            run => {
                out.push_str(&s[run..]);
                out
            }
        }
    }

    /// Feeds `s`, appending to `out` the JSON text certain up to the returned offset, from
    /// which on `s` passes through as it is.
    fn feed(&mut self, s: &str, out: &mut String) -> usize {
        // Runs of bytes the state passes through unchanged (most of a string, most of the
        // whitespace and numbers between tokens) are found a word at a time and copied as one
        // slice; only the bytes that end a run go through `step`. Every byte that ends a run
        // is ASCII, so runs end on character boundaries (an escape skipped inside a run may
        // take a multi-byte character: the run still ends at an ASCII byte).
        let b = s.as_bytes();
        // A comma the last piece ended in is settled by this piece's first token; the rest
        // of the piece may then pass as written.
        let mut start = 0;
        if self.json
            && self.comma
            && self.state == PyState::Normal
            && self.ident.is_empty()
            && let Some(k) = b.iter().position(|c| !c.is_ascii_whitespace()).filter(|&k| b[k].is_ascii())
        {
            for &c in &b[..=k] {
                self.step(char::from(c), out);
            }
            start = k + 1;
        }
        if self.json && self.json_passes(&b[start..]) {
            return start;
        }
        let mut run = start;
        let mut i = start;
        while i < b.len() {
            i += match self.state {
                PyState::Dq => plain_len(&b[i..], |w| has_byte(w, b'"') | has_byte(w, b'\\') | has_control(w), |c| matches!(c, b'"' | b'\\') || c < 0x20),
                PyState::Sq => plain_len(
                    &b[i..],
                    |w| has_byte(w, b'"') | has_byte(w, b'\'') | has_byte(w, b'\\') | has_control(w),
                    |c| matches!(c, b'"' | b'\'' | b'\\') || c < 0x20,
                ),
                // JSON has no `T`, `F` or `N` outside its strings: one starts a Python word.
                PyState::Normal if self.json && !self.comma && self.ident.is_empty() => {
                    b[i..].iter().position(|&c| matches!(c, b'"' | b'\'' | b',' | b'T' | b'F' | b'N')).unwrap_or(b.len() - i)
                }
                PyState::Normal if self.ident.is_empty() && !self.comma => {
                    b[i..].iter().position(|&c| matches!(c, b'"' | b'\'' | b'A'..=b'Z' | b'a'..=b'z' | b'_' | b',')).unwrap_or(b.len() - i)
                }
                _ => 0,
            };
            // What JSON text holds passes through as written, so the run goes on past it: a
            // JSON escape (`push_python_escape` keeps it), the quotes of a `"` string, a word
            // that ends in this piece and is not a Python literal, a comma followed here by
            // whitespace and another member (not a trailing comma `step` would drop).
            match (self.state, b.get(i)) {
                (PyState::Dq, Some(b'\\')) if b.get(i + 1).is_some_and(|&n| matches!(n, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')) => {
                    i += 2;
                    continue;
                }
                // A `\u` escape only with its four digits (a broken one is `step`'s), and not
                // of a surrogate (whether it pairs up is `step`'s).
                (PyState::Dq, Some(b'\\')) if b.get(i + 1) == Some(&b'u') && b.get(i + 2..i + 6).is_some_and(plain_u_escape) => {
                    i += 6;
                    continue;
                }
                (PyState::Dq, Some(b'"')) => {
                    self.state = PyState::Normal;
                    i += 1;
                    continue;
                }
                (PyState::Normal, Some(&c)) if self.ident.is_empty() && !self.comma => match c {
                    b'"' => {
                        self.state = PyState::Dq;
                        i += 1;
                        continue;
                    }
                    b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                        let end = b[i..].iter().position(|&c| !(c.is_ascii_alphanumeric() || c == b'_')).map(|k| i + k);
                        if let Some(end) = end.filter(|&e| !matches!(&b[i..e], b"True" | b"False" | b"None")) {
                            i = end;
                            continue;
                        }
                    }
                    b',' => {
                        let next = b[i + 1..].iter().position(|c| !matches!(c, b'\t'..=b'\r' | b' ')).map(|k| i + 1 + k);
                        if let Some(next) = next.filter(|&n| matches!(b[n], 0x21..=0x7f) && !matches!(b[n], b'}' | b']')) {
                            i = next;
                            continue;
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
            let Some(c) = s.get(i..).and_then(|t| t.chars().next()) else { break };
            out.push_str(&s[run..i]);
            i += c.len_utf8();
            run = i;
            self.step(c, out);
        }
        run
    }

    /// JSON mode's walk of a piece that passes as written (the common token): the quotes and
    /// two-character escapes move the state; a control character, a `\u` escape or a piece
    /// that ends in an escape leaves the state as it was, for the general walk. `true` when
    /// the piece passed.
    fn json_passes(&mut self, b: &[u8]) -> bool {
        let mut in_string = match self.state {
            PyState::Normal if self.comma || !self.ident.is_empty() => return false,
            PyState::Normal => false,
            PyState::Dq => true,
            _ => return false,
        };
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            match (in_string, c) {
                (_, b'"') => in_string = !in_string,
                (true, b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')) => i += 1,
                (true, b'\\') => return false,
                (true, c) if c < 0x20 => return false,
                // A quote JSON has no place for, or the first letter of a Python word
                // (`True`, `False`, `None`): a Python literal (see `step`).
                (false, b'\'' | b'T' | b'F' | b'N') => return false,
                // A comma passes where another member follows it in this piece; one that may
                // be trailing (`{"a": 1,}`, a recovered Python dict) waits (see `step`).
                (false, b',') => {
                    let mut j = i + 1;
                    while matches!(b.get(j), Some(b' ' | b'\n' | b'\t' | b'\r')) {
                        j += 1;
                    }
                    if !matches!(b.get(j), Some(&n) if n > b' ' && n < 0x80 && n != b'}' && n != b']') {
                        return false;
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.state = if in_string { PyState::Dq } else { PyState::Normal };
        true
    }

    /// Whether nothing is held or open: JSON text would pass through unchanged from here.
    pub(crate) fn is_fresh(&self) -> bool {
        self.state == PyState::Normal && self.ident.is_empty() && !self.comma
    }

    fn step(&mut self, c: char, out: &mut String) {
        match self.state {
            PyState::Normal => {
                if self.comma {
                    if c.is_whitespace() {
                        self.held.push(c);
                        return;
                    }
                    self.comma = false;
                    // A trailing comma is dropped, its whitespace kept.
                    if !matches!(c, '}' | ']') {
                        out.push(',');
                    }
                    out.push_str(&self.held);
                    self.held.clear();
                }
                if (c.is_ascii_alphanumeric() || c == '_') && (!self.ident.is_empty() || !c.is_ascii_digit()) {
                    self.ident.push(c);
                    return;
                }
                self.flush_ident(out);
                match c {
                    ',' => self.comma = true,
                    '"' => {
                        self.state = PyState::Dq;
                        out.push('"');
                    }
                    '\'' => {
                        // JSON text has no `'` outside its strings: where one comes, the value
                        // is a Python literal (a recovered dict, `{'city': ...}`), read as such.
                        self.json = false;
                        self.state = PyState::Sq;
                        out.push('"');
                    }
                    'A'..='Z' | 'a'..='z' | '_' => self.ident.push(c),
                    _ => out.push(c),
                }
            }
            PyState::Dq => match c {
                '\\' => self.state = PyState::DqEsc,
                '"' => {
                    self.state = PyState::Normal;
                    out.push('"');
                }
                _ if c < ' ' => {
                    self.escaped_control = true;
                    push_escaped(out, c as u8);
                }
                _ => out.push(c),
            },
            PyState::DqEsc | PyState::SqEsc => {
                let sq = self.state == PyState::SqEsc;
                if hex_digits(c).is_some() {
                    self.state = PyState::Hex { sq };
                    self.hex.push(c);
                    return;
                }
                self.state = if sq { PyState::Sq } else { PyState::Dq };
                push_python_escape(out, c);
            }
            PyState::Hex { sq } => {
                let letter = self.hex.chars().next().unwrap_or('u');
                if self.holds_high() {
                    return self.step_after_high(c, sq, out);
                }
                let need = hex_digits(letter).unwrap_or(0);
                let complete = c.is_ascii_hexdigit() && self.hex.len() == need;
                if c.is_ascii_hexdigit() && !complete {
                    self.hex.push(c);
                    return;
                }
                if complete {
                    self.hex.push(c);
                    if letter == 'u' && surrogate(&self.hex.as_bytes()[1..]) == Some(Surrogate::High) {
                        // Held: only the escape after it shows whether it is half of a pair.
                        return;
                    }
                }
                push_hex_escape(out, letter, &self.hex[1..]);
                self.hex.clear();
                self.state = if sq { PyState::Sq } else { PyState::Dq };
                if !complete {
                    self.step(c, out);
                }
            }
            PyState::Sq => match c {
                '\\' => self.state = PyState::SqEsc,
                '\'' => {
                    self.state = PyState::Normal;
                    out.push('"');
                }
                _ => escape_into(out, c.encode_utf8(&mut [0; 4])),
            },
        }
    }

    /// [`PyToJson::step`] after a held high surrogate escape: `hex` holds `u`, its four digits
    /// and what came of the next escape (`\\`, `u`, digits). A low surrogate completes the pair,
    /// written as it came; anything else leaves the high one lone ([`LONE_SURROGATE`]), and
    /// what followed it is read afresh.
    fn step_after_high(&mut self, c: char, sq: bool, out: &mut String) {
        let follows = match self.hex.len() - HIGH_HELD {
            0 => c == '\\',
            1 => c == 'u',
            _ => c.is_ascii_hexdigit(),
        };
        if follows {
            self.hex.push(c);
            if self.hex.len() < PAIR_HELD {
                return;
            }
            if surrogate(&self.hex.as_bytes()[HIGH_HELD + 2..]) == Some(Surrogate::Low) {
                out.push('\\');
                out.push_str(&self.hex);
                self.hex.clear();
                self.state = if sq { PyState::Sq } else { PyState::Dq };
                return;
            }
        }
        self.lone_high(sq, out);
        if !follows {
            self.step(c, out);
        }
    }

    /// The held high surrogate escape pairs with nothing: [`LONE_SURROGATE`], and what came
    /// after it is read afresh.
    fn lone_high(&mut self, sq: bool, out: &mut String) {
        out.push_str(LONE_SURROGATE);
        let held = std::mem::take(&mut self.hex);
        self.state = if sq { PyState::Sq } else { PyState::Dq };
        for h in held[HIGH_HELD..].chars() {
            self.step(h, out);
        }
    }

    /// Whether `hex` holds a whole high surrogate escape (and what followed it).
    fn holds_high(&self) -> bool {
        self.hex.len() >= HIGH_HELD && self.hex.starts_with('u')
    }

    /// The quote of the string the text is inside (not mid-escape), if any.
    pub(crate) fn open_quote(&self) -> Option<char> {
        match self.state {
            PyState::Dq => Some('"'),
            PyState::Sq => Some('\''),
            _ => None,
        }
    }

    /// Ends the text: a held identifier or dangling escape is written out.
    pub(crate) fn finish(&mut self, out: &mut String) {
        // A word the text ends inside (`N` of `None`, the output cut there) is that word:
        // JSON has no way to append to it.
        if let Some(word) = ["True", "False", "None"].into_iter().find(|w| !self.ident.is_empty() && w.starts_with(self.ident.as_str())) {
            self.ident.replace_range(.., word);
        }
        self.flush_ident(out);
        // A comma the text ends after has no member after it: a trailing comma, dropped.
        self.comma = false;
        self.held.clear();
        if let PyState::Hex { sq } = self.state
            && self.holds_high()
        {
            self.lone_high(sq, out);
        }
        if matches!(self.state, PyState::DqEsc | PyState::SqEsc) {
            out.push_str("\\\\");
        }
        if let Some(letter) = self.hex.chars().next() {
            push_hex_escape(out, letter, &self.hex[1..]);
            self.hex.clear();
        }
        self.state = PyState::Normal;
    }
}

/// Rewrites a whole text as the stream would (whole-text conversion is `python::to_json`).
#[cfg(test)]
fn py_to_json(s: &str) -> String {
    let mut n = PyToJson::default();
    let mut out = String::with_capacity(s.len());
    n.push(s, &mut out);
    n.finish(&mut out);
    out
}

/// What a literal value expects next (to close a cut-off value validly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Expect {
    /// A value (at the start, after `[` or `:`).
    #[default]
    Value,
    /// A mapping key (after `{`).
    Key,
    /// The separator after a key.
    Colon,
    /// A separator or closer, after a complete value.
    More,
}

/// Converts a value written in a template's own literal syntax (`{key:<|"|>text<|"|>}`) to
/// JSON text as it streams in. The grammar tags the value's pieces, so no syntax is known
/// here: tokens (`{ } [ ] , :`, numbers, JSON strings, `true`/`True`, `null`/`None`) arrive
/// whole and map to JSON; the raw text of strings and bare keys arrives in pieces and becomes
/// an escaped JSON string. Untagged text (quote markers, whitespace) is dropped. The state
/// kept (open brackets, an open string, a held comma) lets [`LiteralToJson::finish`] close a
/// cut-off value validly.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiteralToJson {
    /// Open `{` and `[`.
    stack: Vec<u8>,
    expect: Expect,
    /// Inside a string whose opening quote is out; `true` for a mapping key.
    string: Option<bool>,
    /// A `,` held until the next item shows it is not a trailing one.
    comma: bool,
    /// Something was written.
    any: bool,
}

impl LiteralToJson {
    fn flush_comma(&mut self, out: &mut String) {
        if std::mem::take(&mut self.comma) {
            out.push(',');
            self.expect = if self.stack.last() == Some(&b'{') { Expect::Key } else { Expect::Value };
        }
    }

    /// A new item right after a complete one inside a list or mapping: values written as
    /// elements (`<item>1</item><item>2</item>`) have no separator token, so one is implied.
    fn implied_comma(&mut self) {
        if self.expect == Expect::More && !self.stack.is_empty() && self.string.is_none() {
            self.comma = true;
        }
    }

    /// A whole token: punctuation, a number, a literal or a JSON string.
    pub(crate) fn token(&mut self, text: &str, out: &mut String) {
        let t = text.trim();
        if t.is_empty() {
            return;
        }
        self.any = true;
        if !matches!(t, "," | "}" | "]" | ":") {
            self.implied_comma();
        }
        match t {
            "," => {
                self.comma = true;
                return;
            }
            "}" | "]" => {
                // A trailing comma is dropped.
                self.comma = false;
                self.stack.pop();
                self.expect = Expect::More;
                out.push_str(t);
                return;
            }
            _ => {}
        }
        self.flush_comma(out);
        self.expect = match t {
            "{" => {
                self.stack.push(b'{');
                Expect::Key
            }
            "[" => {
                self.stack.push(b'[');
                Expect::Value
            }
            ":" => Expect::Value,
            _ if self.expect == Expect::Key => Expect::Colon,
            _ => Expect::More,
        };
        // A word is its JSON literal; so is the start of one a value was cut off in (`N` of
        // `None` where the output ends), as JSON has no way to append to it. Anything else
        // that is no JSON scalar is written as a string: the arguments stay JSON.
        let lower = t.to_ascii_lowercase();
        let word = [("true", "true"), ("false", "false"), ("null", "null"), ("none", "null"), ("nil", "null")]
            .into_iter()
            .find(|(w, _)| w.starts_with(lower.as_str()))
            .map(|(_, json)| json);
        match word {
            _ if matches!(t, "{" | "[" | ":") => out.push_str(t),
            Some(json) => out.push_str(json),
            None if serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() => out.push_str(t),
            None => {
                out.push('"');
                escape_into(out, t);
                out.push('"');
            }
        }
    }

    /// A piece of a raw string (or bare key); `first` and `sealed` mark its first and last.
    pub(crate) fn string(&mut self, text: &str, first: bool, sealed: bool, out: &mut String) {
        if first || self.string.is_none() {
            if self.string.is_none() {
                self.implied_comma();
            }
            self.flush_comma(out);
            self.any = true;
            self.string = Some(self.expect == Expect::Key);
            out.push('"');
        }
        escape_into(out, text);
        if sealed {
            out.push('"');
            self.expect = if self.string == Some(true) { Expect::Colon } else { Expect::More };
            self.string = None;
        }
    }

    /// Ends the value, closing what a cut-off value left open.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if let Some(key) = self.string.take() {
            out.push('"');
            self.expect = if key { Expect::Colon } else { Expect::More };
        }
        self.comma = false;
        match self.expect {
            Expect::Colon => out.push_str(":null"),
            Expect::Value if self.stack.last() == Some(&b'{') || !self.any => out.push_str("null"),
            _ => {}
        }
        while let Some(c) = self.stack.pop() {
            out.push(if c == b'{' { '}' } else { ']' });
        }
        self.expect = Expect::More;
    }
}

/// Converts a whole tagged literal value: `(is_token, text)` pieces in order.
#[cfg(test)]
fn literal_to_json(pieces: &[(bool, &str)]) -> String {
    let mut l = LiteralToJson::default();
    let mut out = String::new();
    for &(tok, text) in pieces {
        if tok {
            l.token(text, &mut out);
        } else {
            l.string(text, true, true, &mut out);
        }
    }
    l.finish(&mut out);
    out
}

/// Where a [`JsonTail`] is in the JSON text written so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum TailState {
    /// A value is expected (at the start, after `:` or after `,` in an array).
    #[default]
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value: `,` or a closer (or, at the top, nothing more).
    More,
    /// Inside a string; `key`: an object key.
    Str { key: bool },
    /// After a backslash inside a string.
    Esc { key: bool },
    /// Inside a `\u` escape, `left` hex digits to go.
    Hex { key: bool, left: u8 },
    /// Inside `true`/`false`/`null`: the rest of the word.
    Word(&'static str),
    /// Inside a number: whether a digit is needed before it may end.
    Num { needs_digit: bool, frac: bool, exp: bool },
    /// Not a JSON prefix.
    Invalid,
}

/// Follows JSON text as it is written, piece by piece, so that a value cut off anywhere can be
/// closed by appending only (what was streamed is never retracted): an open string gets its
/// quote, a dangling key `: null`, an unfinished word or number its rest, open objects and
/// arrays their closers.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct JsonTail {
    state: TailState,
    /// Open containers: `{` or `[`.
    stack: Vec<u8>,
}

impl JsonTail {
    /// Follows `s`, the next piece of the text.
    pub(crate) fn push(&mut self, s: &str) {
        use TailState::*;
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            // Runs that leave the state as it is are skipped: plain string text (a word at a
            // time, then at memchr speed: keys are short, code long), digits, whitespace
            // between tokens.
            match self.state {
                Str { .. } => {
                    let short = plain_len(&b[i..b.len().min(i + 16)], |w| has_byte(w, b'"') | has_byte(w, b'\\'), |c| matches!(c, b'"' | b'\\'));
                    i += short;
                    if short == 16 {
                        match memchr::memchr2(b'"', b'\\', &b[i..]) {
                            Some(k) => i += k,
                            None => return,
                        }
                    }
                }
                Num { frac, exp, .. } => {
                    let digits = b[i..].iter().position(|c| !c.is_ascii_digit()).unwrap_or(b.len() - i);
                    if digits > 0 {
                        self.state = Num { needs_digit: false, frac, exp };
                        i += digits;
                    }
                }
                Value | ValueOrClose | KeyOrClose | Key | Colon | More => {
                    i += b[i..].iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r')).unwrap_or(b.len() - i);
                }
                _ => {}
            }
            let Some(&c) = b.get(i) else { return };
            self.step(c);
            i += 1;
        }
    }

    /// Whether no text was followed yet.
    pub(crate) fn is_fresh(&self) -> bool {
        self.state == TailState::Value && self.stack.is_empty()
    }

    /// Follows a complete, valid JSON value (from the start): what pushing it would do.
    pub(crate) fn skip_value(&mut self) {
        debug_assert!(self.is_fresh());
        self.state = TailState::More;
    }

    fn step(&mut self, c: u8) {
        use TailState::*;
        let ws = matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        self.state = match self.state {
            Invalid => Invalid,
            Str { key } => match c {
                b'"' if key => Colon,
                b'"' => More,
                b'\\' => Esc { key },
                _ => Str { key },
            },
            Esc { key } if c == b'u' => Hex { key, left: 4 },
            Esc { key } => Str { key },
            Hex { key, left } if c.is_ascii_hexdigit() => {
                if left == 1 {
                    Str { key }
                } else {
                    Hex { key, left: left - 1 }
                }
            }
            Hex { .. } => Invalid,
            Word(rest) => match rest.as_bytes().first() {
                Some(&r) if r == c => {
                    if rest.len() == 1 {
                        More
                    } else {
                        Word(&rest[1..])
                    }
                }
                _ => Invalid,
            },
            Num { needs_digit, frac, exp } => match c {
                b'0'..=b'9' => Num { needs_digit: false, frac, exp },
                b'.' if !needs_digit && !frac && !exp => Num { needs_digit: true, frac: true, exp },
                b'e' | b'E' if !needs_digit && !exp => Num { needs_digit: true, frac, exp: true },
                b'+' | b'-' if needs_digit && exp => Num { needs_digit, frac, exp },
                _ if needs_digit => Invalid,
                _ => {
                    self.state = More;
                    return self.step(c);
                }
            },
            _ if ws => self.state,
            Value | ValueOrClose => match c {
                b']' if self.state == ValueOrClose => self.pop(b'['),
                b'{' => {
                    self.stack.push(b'{');
                    KeyOrClose
                }
                b'[' => {
                    self.stack.push(b'[');
                    ValueOrClose
                }
                b'"' => Str { key: false },
                b't' => Word("rue"),
                b'f' => Word("alse"),
                b'n' => Word("ull"),
                b'-' => Num { needs_digit: true, frac: false, exp: false },
                b'0'..=b'9' => Num { needs_digit: false, frac: false, exp: false },
                _ => Invalid,
            },
            KeyOrClose | Key => match c {
                b'"' => Str { key: true },
                b'}' if self.state == KeyOrClose => self.pop(b'{'),
                _ => Invalid,
            },
            Colon if c == b':' => Value,
            More => match (c, self.stack.last()) {
                (b',', Some(b'{')) => Key,
                (b',', Some(_)) => Value,
                (b'}', _) => self.pop(b'{'),
                (b']', _) => self.pop(b'['),
                _ => Invalid,
            },
            Colon => Invalid,
        };
    }

    fn pop(&mut self, open: u8) -> TailState {
        match self.stack.pop() {
            Some(top) if top == open => TailState::More,
            _ => TailState::Invalid,
        }
    }

    /// Open containers: a value that starts now can later be closed with [`close_to`](Self::close_to) this depth.
    pub(crate) fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Whether the text is one complete value (at the top) or a complete member value at `depth`.
    pub(crate) fn is_closed_at(&self, depth: usize) -> bool {
        // A number may end where the text ends.
        matches!(self.state, TailState::More | TailState::Num { needs_digit: false, .. }) && self.stack.len() == depth
    }

    /// Whether the text so far is not the start of any JSON text.
    pub(crate) fn is_invalid(&self) -> bool {
        self.state == TailState::Invalid
    }

    /// What to append so that the value open at `depth` (and everything inside it) is
    /// complete; `None` if the text is no JSON prefix. A value not started yet becomes `null`.
    pub(crate) fn close_to(&self, depth: usize) -> Option<String> {
        use TailState::*;
        let mut out = String::new();
        let mut state = self.state;
        loop {
            state = match state {
                Invalid => return None,
                Str { key } => {
                    out.push('"');
                    if key { Colon } else { More }
                }
                Esc { key } => {
                    out.push('\\');
                    Str { key }
                }
                Hex { key, left } => {
                    out.extend(std::iter::repeat_n('0', usize::from(left)));
                    Str { key }
                }
                Word(rest) => {
                    out.push_str(rest);
                    More
                }
                Num { needs_digit: true, .. } => {
                    out.push('0');
                    More
                }
                Num { .. } => More,
                Colon => {
                    out.push_str(": ");
                    Value
                }
                Key => {
                    out.push_str("\"\": ");
                    Value
                }
                Value => {
                    out.push_str("null");
                    More
                }
                ValueOrClose | KeyOrClose | More => break,
            };
        }
        for &open in self.stack.get(depth..).unwrap_or_default().iter().rev() {
            out.push(if open == b'{' { '}' } else { ']' });
        }
        Some(out)
    }
}

fn is_valid_json(s: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
}

/// Closes a JSON text cut off mid-stream so it parses: an open string gets its quote, open
/// objects and arrays their brackets; a dangling key, colon, comma or unfinished literal is
/// dropped. `None` when nothing valid can be made (e.g. empty text); complete JSON is returned
/// as is.
///
/// ```
/// use peg_runtime::chat::close_partial_json;
/// assert_eq!(close_partial_json(r#"{"a": "hel"#).as_deref(), Some(r#"{"a": "hel"}"#));
/// assert_eq!(close_partial_json(r#"{"a": 1, "b"#).as_deref(), Some(r#"{"a": 1}"#));
/// assert_eq!(close_partial_json(r#"[1, [2, tr"#).as_deref(), Some(r#"[1, [2]]"#));
/// assert_eq!(close_partial_json(""), None);
/// ```
pub fn close_partial_json(text: &str) -> Option<String> {
    if is_valid_json(text) {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    // Truncation points known to close cleanly: (length, closers needed there).
    let mut safe: Option<(usize, Vec<u8>)> = None;
    let mut in_string = false;
    let mut string_is_key = false;
    let mut escape = false;
    let mut string_start = 0;
    // In an object, whether the next string is a key.
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escape {
                escape = false;
            } else if b == b'\\' {
                escape = true;
            } else if b == b'"' {
                in_string = false;
                if !string_is_key {
                    safe = Some((i + 1, stack.clone()));
                }
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = i;
                string_is_key = expect_key && stack.last() == Some(&b'{');
                expect_key = false;
            }
            b'{' => {
                stack.push(b'{');
                expect_key = true;
                safe = Some((i + 1, stack.clone()));
            }
            b'[' => {
                stack.push(b'[');
                safe = Some((i + 1, stack.clone()));
            }
            b'}' | b']' => {
                stack.pop();
                safe = Some((i + 1, stack.clone()));
            }
            b',' => expect_key = stack.last() == Some(&b'{'),
            b':' => expect_key = false,
            _ if b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'+' => {
                // A number or literal: safe after it if it is complete.
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'-' | b'.' | b'+')) {
                    i += 1;
                }
                if is_valid_json(&text[start..i]) && i < bytes.len() {
                    safe = Some((i, stack.clone()));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let close = |mut s: String, stack: &[u8]| {
        for &c in stack.iter().rev() {
            s.push(if c == b'{' { '}' } else { ']' });
        }
        s
    };
    let mut candidates = Vec::new();
    if in_string && !string_is_key {
        // Drop a dangling escape so the added quote is not escaped.
        let mut body = text;
        let tail = &text[string_start..];
        if let Some(pos) = tail.rfind('\\') {
            let after = &tail[pos + 1..];
            let complete = match after.chars().next() {
                None => false,
                Some('u') => after.len() >= 5,
                Some(_) => true,
            };
            let backslashes = tail[..=pos].bytes().rev().take_while(|&b| b == b'\\').count();
            if backslashes % 2 == 1 && !complete {
                body = &text[..string_start + pos];
            }
        }
        candidates.push(close(format!("{body}\""), &stack));
    } else if !in_string {
        candidates.push(close(text.trim_end().trim_end_matches(',').to_owned(), &stack));
    }
    if let Some((len, st)) = safe {
        candidates.push(close(text[..len].to_owned(), &st));
    }
    candidates.into_iter().find(|c| is_valid_json(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_become_json() {
        assert_eq!(py_to_json("{'a': True, 'b': None, 'c': [False, 1.5e3]}"), r#"{"a": true, "b": null, "c": [false, 1.5e3]}"#);
        // A word the text ends inside is that word (the output was cut there).
        assert_eq!(py_to_json("{'a': N"), r#"{"a": null"#);
        assert_eq!(py_to_json("[Fa"), "[false");
        assert_eq!(py_to_json(r#"{'q': 'say "hi"\n', "d": "it\'s"}"#), r#"{"q": "say \"hi\"\n", "d": "it's"}"#);
        assert_eq!(py_to_json(r#"{"x": "True"}"#), r#"{"x": "True"}"#);
        assert_eq!(py_to_json("{'a': [1, 2,\n], 'b': 3, }"), "{\"a\": [1, 2\n], \"b\": 3 }");
        // A comma the text ends after has no member after it: dropped, like a trailing one.
        assert_eq!(py_to_json("[1,"), "[1");
        assert_eq!(py_to_json("{'a': 1, "), r#"{"a": 1"#);
    }

    /// Every escape of a Python (or JSON) string becomes valid JSON meaning what Python reads,
    /// whole or fed a character at a time.
    #[test]
    fn python_escapes_become_valid_json() {
        for (python, value) in [
            (r#""a\€""#, "a\\€"),
            (r"'a\Q'", "a\\Q"),
            (r"'\x41\a\v\0'", "A\u{7}\u{b}\0"),
            (r#""\/\"\b""#, "/\"\u{8}"),
            ("'line\\\ncontinued'", "linecontinued"),
            (r"'it\'s'", "it's"),
            (r"'\uZZ and \u12'", "\\uZZ and \\u12"),
            (r#""\u00e9\u12""#, "é\\u12"),
            (r"'\xZ\x4'", "\\xZ\\x4"),
            (r"'\U0001F600 \U0011FFFF \Ug'", "😀 \\U0011FFFF \\Ug"),
            (r#""\ud83d\ude00""#, "😀"),
        ] {
            let whole = py_to_json(python);
            let mut stepped = String::new();
            let mut p = PyToJson::default();
            for c in python.chars() {
                p.push(c.encode_utf8(&mut [0; 4]), &mut stepped);
            }
            p.finish(&mut stepped);
            assert_eq!(whole, stepped, "{python}");
            assert_eq!(serde_json::from_str::<String>(&whole).unwrap_or_else(|e| panic!("{python} -> {whole}: {e}")), value, "{python}");
        }
    }

    /// A surrogate escape is written as it came only as half of a pair; a lone one becomes
    /// `\ufffd` (JSON readers refuse it), in both modes, however the text is cut.
    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        for (text, want, value) in [
            (r#""a\ud800""#, r#""a\ufffd""#, Some("a\u{fffd}")),
            (r#""\udc00x""#, r#""\ufffdx""#, Some("\u{fffd}x")),
            (r#""\ud800x""#, r#""\ufffdx""#, Some("\u{fffd}x")),
            (r#""\ud800\u0041""#, r#""\ufffd\u0041""#, Some("\u{fffd}A")),
            (r#""\ud800\n\ud800\"""#, r#""\ufffd\n\ufffd\"""#, Some("\u{fffd}\n\u{fffd}\"")),
            (r#"["\ud83d\ude00", "\uD83D\uDE00", "\uDBFF\uDFFF"]"#, r#"["\ud83d\ude00", "\uD83D\uDE00", "\uDBFF\uDFFF"]"#, None),
            (r#""\ud800\ud83d\ude00\ude00""#, r#""\ufffd\ud83d\ude00\ufffd""#, Some("\u{fffd}😀\u{fffd}")),
            (r#""\uDBFF\uDBFF\uDC00""#, r#""\ufffd\uDBFF\uDC00""#, Some("\u{fffd}\u{10fc00}")),
            (r#""\ud800\u12" "#, r#""\ufffd\\u12" "#, Some("\u{fffd}\\u12")),
            (r#"{"a": "\uD800"}"#, r#"{"a": "\ufffd"}"#, None),
            // Cut off: a held high surrogate, and the escape after it, go out at the end.
            (r#""\ud83d"#, r#""\ufffd"#, None),
            (r#""\ud83d\"#, r#""\ufffd\\"#, None),
            (r#""\ud83d\ude"#, r#""\ufffd\\ude"#, None),
        ] {
            for json in [false, true] {
                let mut n = if json { PyToJson::json() } else { PyToJson::default() };
                assert_eq!(fed_in_pieces(&mut n, text, text.len()), want, "{text} (json mode: {json})");
                for at in 1..text.len() {
                    let mut n = if json { PyToJson::json() } else { PyToJson::default() };
                    let mut out = String::new();
                    n.push(&text[..at], &mut out);
                    n.push(&text[at..], &mut out);
                    n.finish(&mut out);
                    assert_eq!(out, want, "{text} cut at {at} (json mode: {json})");
                }
            }
            match value {
                Some(v) => assert_eq!(serde_json::from_str::<String>(want).unwrap(), v, "{text}"),
                None if want.ends_with(['"', ']', '}']) => assert!(is_valid_json(want), "{want}"),
                None => {}
            }
        }
        // Python escapes that make surrogates: the same rule.
        for (python, want) in [
            (r"'\ud800'", r#""\ufffd""#),
            (r"'\ud83d\ude00'", r#""\ud83d\ude00""#),
            (r"'\U0000d800 \U0000DFFF'", r#""\ufffd \ufffd""#),
            (r"'\x41\ud800\x41'", r#""\u0041\ufffd\u0041""#),
            (r"'\ud800\''", r#""\ufffd'""#),
        ] {
            assert_eq!(py_to_json(python), want, "{python}");
            assert!(is_valid_json(want), "{want}");
        }
    }

    /// The run-copying `push` writes what stepping every character does, however the text is
    /// cut (escapes, multi-byte characters, runs longer than a word, Python strings).
    #[test]
    fn python_runs_match_stepping_every_character() {
        let texts = [
            r#"{"code": "fn main() {\n    println!(\"{} \\ {}\", a, b); // café \u00e9\n}", "n": [1, -2.5e3, true, null]}"#,
            "{\"a\": \"tab\there, raw\u{1}control, \\é escaped é, \\' kept\"}",
            r#"{'q': 'say "hi" \' and \x41 ünïcødé', 'l': [False, None, 'a',  ], 'long': 'abcdefghijklmnopqrstuvwxyz0123456789'}"#,
            "[\"ends in a backslash \\",
            r#"{"a": "\u12G \uABCD \x4 \u00e9nd", 'b': '\U0001F600\U0011ffff\u', "c": "\u"#,
            // Words, commas and quotes the runs pass through, and the ones they must not.
            "{\"a\": [true, True, Truex, _x1, 1e5, 3None, none], \"b\":\t{\"c\" : false,\n\t\"d\": null ,}, \"e\": [1,\u{a0}2,\u{1c}3, 4 ,\u{b}5,]}",
            "[\"\", \"\\\"\", \"x\"\"y\",\"\\q\",  \"é\",é,\"\u{2028}\"]",
            r#"{"s": "\ud83d\ude00 \ud800x \uDBFF\u0041 \udc00 \ud800\ud83d\uDE00", 'p': '\ud800\'\ud83d\ude00', "t": "\ud800"#,
        ];
        for text in texts {
            let mut reference = PyToJson::default();
            let mut want = String::new();
            for c in text.chars() {
                reference.step(c, &mut want);
            }
            reference.finish(&mut want);
            for size in [1, 2, 3, 4, 7, 9, 64] {
                let mut n = PyToJson::default();
                assert_eq!(fed_in_pieces(&mut n, text, size), want, "{text:?} in pieces of {size}");
                assert_eq!(n.escaped_control, reference.escaped_control);
            }
        }
    }

    /// On what a JSON scanner takes (JSON with raw control characters in strings), the JSON
    /// mode writes what the full normalizer writes, however the text is cut, and it holds back
    /// nothing outside strings (commas and words go out with their piece).
    /// A trailing comma in JSON mode (a recovered Python dict written with JSON's quotes,
    /// `{"a": 1,}`) is held until what follows shows it is one, and dropped: in pieces of any
    /// size the text is the JSON it means, and a comma before another member passes.
    #[test]
    fn json_mode_drops_a_trailing_comma() {
        for (text, want) in
            [("{\"a\": 1,}", "{\"a\": 1}"), ("{\"a\": [1, 2 ,\n],\n}", "{\"a\": [1, 2 \n]\n}"), ("{\"a\": 1, \"b\": \"x,\"}", "{\"a\": 1, \"b\": \"x,\"}")]
        {
            for size in 1..=8 {
                let mut n = PyToJson::json();
                let mut out = String::new();
                for piece in crate::chat::stream_pieces(text, &[size]) {
                    let mut scratch = String::new();
                    out.push_str(n.push_through(piece, &mut scratch));
                }
                n.finish(&mut out);
                assert_eq!(out, want, "{text:?} in pieces of {size}");
            }
        }
    }

    #[test]
    fn json_mode_matches_the_full_normalizer_on_scanned_json() {
        let texts = [
            r#"{"code": "fn main() {\n    println!(\"{} \\ {}\", a, b); // café \u00e9\n}", "n": [1, -2.5e3, true, false, null]}"#,
            "{\"a\": \"tab\there, raw\u{1}control \\u00e9 \\ud83d\\ude00 é\", \"b\": [\"\", \"\\\"\", {}], \"c\" :\t{\"d\" : null ,\n\"e\": 0}}",
            "[\"ends in a backslash \\",
            r#"["\ud83d\ude00 \ud800x \uDBFF\u0041 \udc00 \ud800\ud83d\uDE00", "\ud800"#,
        ];
        for text in texts {
            assert_ne!(crate::json::scan(text.as_bytes(), crate::arena::JsonKind::Value, true).outcome, crate::Outcome::Fail, "{text:?}");
            let mut reference = PyToJson::default();
            let mut want = String::new();
            reference.push(text, &mut want);
            reference.finish(&mut want);
            for size in [1, 2, 3, 4, 7, 64] {
                let mut n = PyToJson::json();
                let mut out = String::new();
                for piece in crate::chat::stream_pieces(text, &[size]) {
                    let (before, outside) = (out.len(), n.is_fresh());
                    n.push(piece, &mut out);
                    if outside && n.is_fresh() && !piece.contains('"') {
                        assert_eq!(&out[before..], piece, "{text:?}: {piece:?} passes as written");
                    }
                }
                n.finish(&mut out);
                assert_eq!(out, want, "{text:?} in pieces of {size}");
                assert_eq!(n.escaped_control, reference.escaped_control);
            }
        }
    }

    /// A Python dict among JSON arguments (a recovery that opens with `{'`): the JSON mode turns
    /// to Python at the quote, however the text is cut.
    #[test]
    fn json_mode_turns_python_at_a_quote_outside_strings() {
        let text = r#"{'city': 'it\'s "Paris"', 'ok': True, 'x': None, 'l': [1, 'a',],}"#;
        let want = py_to_json(text);
        assert_eq!(want, r#"{"city": "it's \"Paris\"", "ok": true, "x": null, "l": [1, "a"]}"#);
        for size in [1, 2, 3, 5, 64] {
            assert_eq!(fed_in_pieces(&mut PyToJson::json(), text, size), want, "in pieces of {size}");
        }
    }

    /// Python's words in a dict written with JSON's quotes (`{"days": None}`, a recovered
    /// Python dict among JSON arguments): the JSON mode writes them as JSON's, however the
    /// text is cut, and JSON's own words and exponents pass.
    #[test]
    fn json_mode_turns_python_at_a_python_word() {
        let text = r#"{"city": "Paris", "ok": True, "no": False, "days": None, "n": [1E5, true, null], "s": "None"}"#;
        let want = r#"{"city": "Paris", "ok": true, "no": false, "days": null, "n": [1E5, true, null], "s": "None"}"#;
        assert_eq!(py_to_json(text), want);
        for size in [1, 2, 3, 4, 5, 7, 64] {
            assert_eq!(fed_in_pieces(&mut PyToJson::json(), text, size), want, "in pieces of {size}");
        }
    }

    /// `text` through `n` in pieces of `size` bytes, finished.
    fn fed_in_pieces(n: &mut PyToJson, text: &str, size: usize) -> String {
        let mut out = String::new();
        for piece in crate::chat::stream_pieces(text, &[size]) {
            n.push(piece, &mut out);
        }
        n.finish(&mut out);
        out
    }

    /// The runs `JsonTail::push` skips leave it where stepping every byte does.
    #[test]
    fn tail_runs_match_stepping_every_byte() {
        let texts = [
            r#"{"code": "fn main() {\n    println!(\"{} \\ {}\", a, b); // a string longer than sixteen bytes \u00e9\n}", "n": [1, -2.5e3, 0.5E+7, true, null]}"#,
            "{ \"a\" :\t[ 12 , -0 , {\"b\": [] } ] , \"c\": \"x\\\"y\" }",
            r#"[1, 2.e5, -]"#,
            r#"{"a": 1 "b"}"#,
            "[\"unterminated and long enough to reach memchr",
        ];
        for text in texts {
            let mut want = JsonTail::default();
            for &c in text.as_bytes() {
                want.step(c);
            }
            for size in [1, 2, 3, 5, 8, 17, 1000] {
                let mut tail = JsonTail::default();
                for piece in crate::chat::stream_pieces(text, &[size]) {
                    tail.push(piece);
                }
                assert_eq!(tail, want, "{text:?} in pieces of {size}");
            }
        }
    }

    #[test]
    fn python_streaming_matches_whole() {
        let src = r#"{'name': 'it\'s', 'ok': True, "v": [None, 'a"b', 12, ], }"#;
        let whole = py_to_json(src);
        for step in 1..6 {
            let mut n = PyToJson::default();
            let mut out = String::new();
            let chars: Vec<char> = src.chars().collect();
            for piece in chars.chunks(step) {
                n.push(&piece.iter().collect::<String>(), &mut out);
            }
            n.finish(&mut out);
            assert_eq!(out, whole, "step {step}");
        }
    }

    #[test]
    fn literal_values_become_json() {
        use serde_json::json;
        let v = |pieces: &[(bool, &str)]| serde_json::from_str::<serde_json::Value>(&literal_to_json(pieces)).unwrap();
        // {theme:<|"|>dark<|"|>,count:3,ok:True,none:None,list:[<|"|>a "b" \c\n<|"|>,{k:<|"|><|"|>}]}
        let pieces = [
            (true, "{"),
            (false, "theme"),
            (true, ":"),
            (false, "dark"),
            (true, ","),
            (false, "count"),
            (true, ":"),
            (true, "3"),
            (true, ","),
            (false, "ok"),
            (true, ":"),
            (true, "True"),
            (true, ","),
            (false, "none"),
            (true, ":"),
            (true, "None"),
            (true, ","),
            (false, "list"),
            (true, ":"),
            (true, "["),
            (false, "a \"b\" \\c\nZürich"),
            (true, ","),
            (true, "{"),
            (false, "k"),
            (true, ":"),
            (false, ""),
            (true, "}"),
            (true, ","),
            (true, "\"j\\\"s\""),
            (true, "]"),
            (true, "}"),
        ];
        assert_eq!(v(&pieces), json!({"theme": "dark", "count": 3, "ok": true, "none": null, "list": ["a \"b\" \\c\nZürich", {"k": ""}, "j\"s"]}));
        assert_eq!(v(&[(true, "["), (true, "1"), (true, ","), (true, "]")]), json!([1]));
        assert_eq!(v(&[(true, "-1.5e3")]), json!(-1.5e3));
        assert_eq!(literal_to_json(&[]), "null");
        // A word cut off where the output ends is its literal; a token that is no JSON scalar a
        // string: the arguments stay JSON.
        assert_eq!(v(&[(true, "{"), (false, "days"), (true, ":"), (true, "N"), (true, "}")]), json!({"days": null}));
        assert_eq!(v(&[(true, "["), (true, "tr"), (true, ","), (true, "x1"), (true, "]")]), json!([true, "x1"]));
        // Values written as elements have no separators: items after a complete one imply them.
        let pieces = [
            (true, "{"),
            (false, "loc"),
            (true, ":"),
            (true, "{"),
            (false, "city"),
            (true, ":"),
            (false, "Paris"),
            (false, "zip"),
            (true, ":"),
            (true, "75001"),
            (true, "}"),
            (false, "stops"),
            (true, ":"),
            (true, "["),
            (true, "1"),
            (false, "x"),
            (true, "["),
            (true, "]"),
            (true, "{"),
            (true, "}"),
            (true, "None"),
            (true, "]"),
            (true, "}"),
        ];
        assert_eq!(v(&pieces), json!({"loc": {"city": "Paris", "zip": 75001}, "stops": [1, "x", [], {}, null]}));
    }

    #[test]
    fn cut_literal_values_close() {
        let closed = |pieces: &[(bool, &str, bool)]| {
            let mut l = LiteralToJson::default();
            let mut out = String::new();
            for (i, &(tok, text, sealed)) in pieces.iter().enumerate() {
                if tok {
                    l.token(text, &mut out);
                } else {
                    let first = i == 0 || pieces[i - 1].0 || pieces[i - 1].2;
                    l.string(text, first, sealed, &mut out);
                }
            }
            l.finish(&mut out);
            serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{out}: {e}"))
        };
        use serde_json::json;
        assert_eq!(closed(&[(true, "{", true), (false, "the", false)]), json!({"the": null}));
        assert_eq!(closed(&[(true, "{", true), (false, "theme", true)]), json!({"theme": null}));
        assert_eq!(closed(&[(true, "{", true), (false, "theme", true), (true, ":", true)]), json!({"theme": null}));
        assert_eq!(closed(&[(true, "{", true), (false, "a", true), (true, ":", true), (false, "da", false), (false, "r", false)]), json!({"a": "dar"}));
        assert_eq!(closed(&[(true, "[", true), (true, "[", true), (true, "1", true), (true, ",", true)]), json!([[1]]));
        assert_eq!(closed(&[(true, "{", true), (false, "a", true), (true, ":", true), (true, "1", true), (true, ",", true)]), json!({"a": 1}));
    }

    /// End to end: a constructed grammar with a literal-syntax value, one-shot, streamed byte
    /// by byte and cut at every character.
    #[test]
    fn literal_values_through_the_chat_parser() {
        use crate::chat::{ChatMessage, ChatParseOptions, ChatParser, ConstructedBuilder};
        let arena = ConstructedBuilder::build(|p| {
            let q = "<|\"|>";
            let tok = |x| p.tool_arg_literal_token(x);
            let string = || q + p.tool_arg_literal_string(p.until(q)) + q;
            let value = || p.rule_ref("v");
            let sep = || tok(p.literal(","));
            let member = || p.tool_arg_literal_string(p.chars("[a-z]", 1, None)) + tok(p.literal(":")) + value();
            let map = tok(p.literal("{")) + p.optional(member() + p.zero_or_more(sep() + member())) + tok(p.literal("}"));
            let list = tok(p.literal("[")) + p.optional(value() + p.zero_or_more(sep() + value())) + tok(p.literal("]"));
            let words = tok(p.choice([p.literal("true"), p.literal("false"), p.literal("None")]));
            let v = p.rule("v", p.choice([map, list, string(), tok(p.json_number()), words]));
            let arg = p.tool_arg(p.tool_arg_open(p.tool_arg_name(p.chars("[a-z]", 1, None)) + ":") + v + p.tool_arg_close(p.eps()));
            let call =
                p.tool(p.tool_open("call:" + p.tool_name(p.chars("[a-z_]", 1, None)) + "{") + p.optional(arg + p.zero_or_more("," + arg)) + p.tool_close("}"));
            p.content(p.until("<|tool_call>")) + p.zero_or_more("<|tool_call>" + call + "<tool_call|>") + p.end()
        })
        .unwrap();
        let parser = ChatParser::new(std::sync::Arc::new(arena), ChatParseOptions::default());
        let output = "Hi<|tool_call>call:f{a:{k:<|\"|>x \"y\" \\ \u{e9}\n<|\"|>,l:[<|\"|><|\"|>,{},[1,-2.5],None]},b:true}<tool_call|>";
        let one = parser.parse(output, crate::chat::ParseMode::Complete).unwrap();
        assert_eq!(one.diagnostic, None);
        let args: serde_json::Value = serde_json::from_str(&one.message.tool_calls[0].arguments).unwrap();
        assert_eq!(args, serde_json::json!({"a": {"k": "x \"y\" \\ \u{e9}\n", "l": ["", {}, [1, -2.5], null]}, "b": true}));
        let mut stream = parser.stream();
        let mut deltas = Vec::new();
        let mut last = String::new();
        for (i, c) in output.char_indices() {
            deltas.extend(stream.push(&output[i..i + c.len_utf8()]).unwrap());
            let cut = parser.parse(&output[..i + c.len_utf8()], crate::chat::ParseMode::Partial).unwrap().message;
            let got = cut.tool_calls.first().map_or(String::new(), |c| c.arguments.clone());
            assert!(got.starts_with(&last), "{got:?} does not extend {last:?}");
            last = got;
        }
        deltas.extend(stream.finish().unwrap().0);
        assert_eq!(ChatMessage::from_deltas(&deltas), one.message);
    }

    #[test]
    fn escaping() {
        let mut s = String::new();
        escape_into(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, "a\\\"b\\\\c\\nd\\u0001é");
        assert_eq!(serde_json::from_str::<String>(&quote("x\ty\u{7f}")).unwrap(), "x\ty\u{7f}");
        assert_eq!(unquote(" \"a\\\"b\" "), "a\"b");
        assert_eq!(unquote(" get_weather\n"), "get_weather");
    }

    #[test]
    fn closing() {
        for (input, want) in [
            (r#"{"a": "x\"#, Some(r#"{"a": "x"}"#)),
            (r#"{"a": "x\u00"#, Some(r#"{"a": "x"}"#)),
            (r#"{"a": {"b": [1, 2"#, Some(r#"{"a": {"b": [1, 2]}}"#)),
            (r#"{"a": 1,"#, Some(r#"{"a": 1}"#)),
            (r#"{"a": "#, Some("{}")),
            (r#"{"a"#, Some("{}")),
            (r#"{"a": 12"#, Some(r#"{"a": 12}"#)),
            (r#"{"a": 1."#, Some("{}")),
            ("[", Some("[]")),
            ("", None),
            ("tru", None),
        ] {
            assert_eq!(close_partial_json(input).as_deref(), want, "{input}");
        }
    }
}

#[cfg(test)]
mod tail_tests {
    use super::JsonTail;

    fn closed(pieces: &[&str]) -> Option<String> {
        let mut t = JsonTail::default();
        pieces.iter().for_each(|p| t.push(p));
        t.close_to(0).map(|s| pieces.concat() + s.as_str())
    }

    /// Whatever prefix of a JSON text is cut off, appending the suffix makes valid JSON that
    /// starts with everything written.
    #[test]
    fn every_prefix_closes_by_appending() {
        let texts = [
            r#"{"a": [1, -2.5e+3, true, false, null, "x\"y\\z\u00e9"], "b": {"c": {}}, "d": [], "e": "é"}"#,
            r#"[{"k": "v"}, [[]], 0, "\n"]"#,
            r#""just a string""#,
            "12.5",
        ];
        for text in texts {
            for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
                let (head, rest) = text.split_at(cut);
                // Fed whole and in two pieces: the same suffix.
                let whole = closed(&[head]).unwrap_or_else(|| panic!("{head:?} is a JSON prefix"));
                let split = closed(&[&head[..head.len() / 2], &head[head.len() / 2..]]);
                assert_eq!(Some(&whole), split.as_ref(), "{head:?}");
                if cut == 0 {
                    assert_eq!(whole, "null");
                    continue;
                }
                assert!(whole.starts_with(head));
                serde_json::from_str::<serde_json::Value>(&whole).unwrap_or_else(|e| panic!("{head:?} closed as {whole:?}: {e}"));
                if rest.is_empty() {
                    assert_eq!(whole, text, "complete text gets no suffix");
                    let mut t = JsonTail::default();
                    t.push(text);
                    assert!(t.is_closed_at(0), "{text:?} is complete");
                }
            }
        }
    }

    #[test]
    fn closes_keys_escapes_and_words() {
        assert_eq!(closed(&[r#"{"a"#]).unwrap(), r#"{"a": null}"#);
        assert_eq!(closed(&[r#"{"a""#]).unwrap(), r#"{"a": null}"#);
        assert_eq!(closed(&[r#"{"a": tr"#]).unwrap(), r#"{"a": true}"#);
        assert_eq!(closed(&[r#"["x\"#]).unwrap(), r#"["x\\"]"#);
        assert_eq!(closed(&[r#"["\u00"#]).unwrap(), r#"["\u0000"]"#);
        assert_eq!(closed(&["[1."]).unwrap(), "[1.0]");
    }

    /// Text that is no JSON prefix cannot be closed; the caller keeps it and reports it.
    #[test]
    fn text_that_is_no_json_prefix_is_refused() {
        for bad in ["{a", "[1,]", "}", "{\"a\" 1", "[tx", "1 2", "{\"a\": 1]"] {
            assert_eq!(closed(&[bad]), None, "{bad:?}");
        }
    }
}
