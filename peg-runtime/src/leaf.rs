//! The leaf matchers, shared by the engine ([`crate::parse`]) and the parsers `chat_peg!`
//! generates (through `macro_support`), so both match byte for byte alike.
//!
//! Each leaf returns a [`Res`]: outcome, end, whether it looked at the end of input
//! (`touched`) and whether the matched bytes hold invalid UTF-8. Leaves whose work can be
//! continued over a longer input also take and return a resume state; one-shot callers pass
//! `None` and drop what comes back (plain values, no allocation).

use crate::json::{ScanResult, Scanner};
use crate::outcome::Outcome;
use crate::parse::utf8::{self, Dec};

/// The result of one match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Res {
    /// Fail, success or need-more-input.
    pub outcome: Outcome,
    /// Where the match ends.
    pub end: usize,
    /// The result depends on where the input ends.
    pub touched: bool,
    /// The matched bytes contain invalid UTF-8.
    pub invalid: bool,
}

impl Res {
    /// A result from its parts.
    #[inline]
    pub fn new(outcome: Outcome, end: usize, touched: bool, invalid: bool) -> Res {
        Res { outcome, end, touched, invalid }
    }

    /// A success ending at `end` that did not look at the end of input.
    #[inline]
    pub fn ok(end: usize) -> Res {
        Res::new(Outcome::Success, end, false, false)
    }

    /// A failure at `end` that did not look at the end of input.
    #[inline]
    pub fn fail(end: usize) -> Res {
        Res::new(Outcome::Fail, end, false, false)
    }
}

impl From<ScanResult> for Res {
    #[inline]
    fn from(r: ScanResult) -> Res {
        Res::new(r.outcome, r.end, r.touched_end, r.invalid_utf8)
    }
}

/// Where `until`, `rest` or `marker` stopped: search again from `next`; UTF-8 is checked up to
/// `checked`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanState {
    /// Where the search resumes.
    pub next: usize,
    /// How far the span's UTF-8 is checked.
    pub checked: usize,
    /// Invalid UTF-8 seen so far.
    pub invalid: bool,
}

/// Where `chars` or `space` stopped: `count` characters matched up to `pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharsState {
    /// Characters matched so far.
    pub count: u32,
    /// Where matching resumes.
    pub pos: usize,
    /// Invalid UTF-8 seen so far.
    pub invalid: bool,
}

/// An exact string at `pos`; the input's end cutting it is need-more-input when partial, else
/// a failure.
#[inline]
pub fn literal(input: &[u8], partial: bool, pos: usize, text: &[u8]) -> Res {
    let avail = &input[pos.min(input.len())..];
    if avail.len() >= text.len() {
        if avail.starts_with(text) { Res::ok(pos + text.len()) } else { Res::fail(pos) }
    } else if text.starts_with(avail) {
        if partial { Res::new(Outcome::NeedMoreInput, input.len(), true, false) } else { Res::new(Outcome::Fail, pos, true, false) }
    } else {
        Res::fail(pos)
    }
}

/// Any single code point (an invalid byte is one, flagged).
#[inline]
pub fn any(input: &[u8], partial: bool, pos: usize) -> Res {
    match utf8::decode(input, pos) {
        Dec::Char(_, l) => Res::ok(pos + l),
        Dec::Invalid => Res::new(Outcome::Success, pos + 1, false, true),
        Dec::Truncated if partial => Res::new(Outcome::NeedMoreInput, pos, true, false),
        Dec::Truncated => Res::new(Outcome::Success, pos + 1, true, true),
        Dec::Eof if partial => Res::new(Outcome::NeedMoreInput, pos, true, false),
        Dec::Eof => Res::new(Outcome::Fail, pos, true, false),
    }
}

/// Between `min` and `max` characters accepted by `matches` (an invalid byte is tested as
/// U+FFFD).
#[inline]
pub fn chars(
    input: &[u8],
    partial: bool,
    pos: usize,
    resume: Option<CharsState>,
    min: u32,
    max: Option<u32>,
    matches: impl Fn(char) -> bool,
) -> (Res, Option<CharsState>) {
    let CharsState { mut count, pos: mut p, mut invalid } = resume.unwrap_or(CharsState { count: 0, pos, invalid: false });
    // A truncated sequence in complete input: the result depends on the end, resumable from here.
    let mut touched: Option<CharsState> = None;
    let done = |count: u32, p: usize, invalid: bool, touched: Option<CharsState>| {
        let outcome = if count >= min { Outcome::Success } else { Outcome::Fail };
        (Res::new(outcome, p, touched.is_some(), invalid), touched)
    };
    loop {
        if max.is_some_and(|m| count >= m) {
            return done(count, p, invalid, touched);
        }
        // ASCII needs no decoding.
        if let Some(&b) = input.get(p)
            && b < 0x80
        {
            if !matches(b as char) {
                return done(count, p, invalid, touched);
            }
            p += 1;
            count += 1;
            continue;
        }
        match utf8::decode(input, p) {
            Dec::Char(c, l) => {
                if !matches(c) {
                    return done(count, p, invalid, touched);
                }
                p += l;
                count += 1;
            }
            d @ (Dec::Invalid | Dec::Truncated) => {
                if d == Dec::Truncated {
                    let snap = CharsState { count, pos: p, invalid };
                    if partial {
                        return (Res::new(Outcome::NeedMoreInput, p, true, invalid), Some(snap));
                    }
                    touched = Some(snap);
                }
                if !matches(char::REPLACEMENT_CHARACTER) {
                    return done(count, p, invalid, touched);
                }
                p += 1;
                count += 1;
                invalid = true;
            }
            Dec::Eof => {
                let snap = touched.unwrap_or(CharsState { count, pos: p, invalid });
                if partial {
                    return (Res::new(Outcome::NeedMoreInput, p, true, invalid), Some(snap));
                }
                return done(count, p, invalid, Some(snap));
            }
        }
    }
}

/// Zero or more of space, tab, newline, carriage return.
#[inline]
pub fn space(input: &[u8], partial: bool, pos: usize, resume: Option<CharsState>) -> (Res, Option<CharsState>) {
    let mut p = resume.map_or(pos, |s| s.pos);
    while p < input.len() && matches!(input[p], b' ' | b'\t' | b'\n' | b'\r') {
        p += 1;
    }
    if p < input.len() {
        return (Res::ok(p), None);
    }
    let outcome = if partial { Outcome::NeedMoreInput } else { Outcome::Success };
    (Res::new(outcome, p, true, false), Some(CharsState { count: 0, pos: p, invalid: false }))
}

/// The compiled delimiter set of an `until`, built once (per arena node, or per generated
/// parser in a static): the searcher, and which byte pairs a delimiter starts with.
#[derive(Debug, Clone)]
pub struct Delimiters {
    search: Search,
    starts: Starts,
    /// The longest delimiter's length.
    max_len: usize,
}

#[allow(clippy::large_enum_variant)] // built once, never moved on the hot path
#[derive(Debug, Clone)]
enum Search {
    /// One single-byte delimiter: `memchr`.
    Byte(u8),
    /// One delimiter: a substring finder.
    One(memchr::memmem::Finder<'static>),
    /// Several: leftmost-first Aho-Corasick.
    Many(aho_corasick::AhoCorasick),
    /// Several, with a vectorized searcher (Teddy) for this CPU: what `Many` finds. Chosen
    /// first because the automaton's own prefilter looks for a delimiter's first byte, and
    /// markup-rich text (`<b>`, `</p>`) is full of the `<` that chat markers start with.
    Packed(aho_corasick::packed::Searcher),
}

impl Delimiters {
    /// Compiles `delimiters` (non-empty, each non-empty: checked by the caller).
    pub fn try_new<D: AsRef<str>>(delimiters: &[D]) -> Result<Delimiters, aho_corasick::BuildError> {
        let search = match delimiters {
            [d] if d.as_ref().len() == 1 => Search::Byte(d.as_ref().as_bytes()[0]),
            [d] => Search::One(memchr::memmem::Finder::new(d.as_ref().as_bytes()).into_owned()),
            ds => {
                let packed = aho_corasick::packed::Config::new()
                    .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
                    .builder()
                    .extend(ds.iter().map(AsRef::as_ref))
                    .build();
                match packed {
                    Some(p) => Search::Packed(p),
                    None => Search::Many(
                        aho_corasick::AhoCorasick::builder().match_kind(aho_corasick::MatchKind::LeftmostFirst).build(ds.iter().map(AsRef::as_ref))?,
                    ),
                }
            }
        };
        Ok(Delimiters::with_search(search, delimiters))
    }

    fn with_search<D: AsRef<str>>(search: Search, delimiters: &[D]) -> Delimiters {
        let starts = Starts::new(delimiters.iter().map(|d| d.as_ref().as_bytes()));
        Delimiters { search, starts, max_len: delimiters.iter().map(|d| d.as_ref().len()).max().unwrap_or(1) }
    }

    /// [`Delimiters::try_new`] for delimiters checked at compile time: an automaton that cannot
    /// be built (unreachable for a handful of short strings) falls back to the first delimiter.
    #[cfg(feature = "chat")]
    pub fn new(delimiters: &[&str]) -> Delimiters {
        Delimiters::try_new(delimiters)
            .unwrap_or_else(|_| Delimiters::with_search(Search::One(memchr::memmem::Finder::new(delimiters[0].as_bytes()).into_owned()), delimiters))
    }

    /// Which byte pairs the delimiters start with.
    #[cfg(feature = "chat")]
    pub(crate) fn starts(&self) -> &Starts {
        &self.starts
    }

    /// Byte offset of the first delimiter occurrence in `haystack`, if any.
    #[inline]
    pub fn find(&self, haystack: &[u8]) -> Option<usize> {
        match &self.search {
            Search::Byte(b) => memchr::memchr(*b, haystack),
            Search::One(f) => f.find(haystack),
            Search::Many(ac) => ac.find(haystack).map(|m| m.start()),
            Search::Packed(p) => p.find(haystack).map(|m| m.start()),
        }
    }
}

/// A set of bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ByteSet([u64; 4]);

impl ByteSet {
    /// Every byte.
    const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    fn insert(&mut self, b: u8) {
        self.0[usize::from(b >> 6)] |= 1 << (b & 63);
    }

    #[inline]
    fn contains(&self, b: u8) -> bool {
        (self.0[usize::from(b >> 6)] >> (b & 63)) & 1 == 1
    }
}

/// Which first two bytes the words of a set start with: a filter that rules out nearly every
/// position of text before a word is compared there. Chat delimiter sets hold dozens of words
/// that share their first byte (`\n</parameter>`, `\n<parameter=city>`, `\n</function>`),
/// and text holds that byte often (a line break per line of code), so the first byte alone
/// lets most positions through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Starts {
    /// Per byte, 1 + the index in `seconds` of the bytes that follow it at a word's start, or
    /// 0 if no word starts with it. Words are UTF-8, so at most 192 bytes start one.
    index: Box<[u8; 256]>,
    /// The second bytes; every byte where a word is that first byte alone.
    seconds: Vec<ByteSet>,
}

impl Default for Starts {
    fn default() -> Starts {
        Starts::new([])
    }
}

impl Starts {
    pub(crate) fn new<'w>(words: impl IntoIterator<Item = &'w [u8]>) -> Starts {
        let mut starts = Starts { index: Box::new([0; 256]), seconds: Vec::new() };
        for w in words {
            let Some(&first) = w.first() else { continue };
            let at = usize::from(first);
            if starts.index[at] == 0 {
                starts.seconds.push(ByteSet::default());
                // Saturates only past 255 distinct first bytes, which no UTF-8 word set has; a
                // shared set then only lets more positions through.
                starts.index[at] = u8::try_from(starts.seconds.len()).unwrap_or(u8::MAX);
            }
            let seconds = &mut starts.seconds[usize::from(starts.index[at]) - 1];
            match w.get(1) {
                Some(&second) => seconds.insert(second),
                None => *seconds = ByteSet::ALL,
            }
        }
        starts
    }

    /// Whether `b` starts a word.
    #[cfg(feature = "chat")]
    #[inline]
    pub(crate) fn first(&self, b: u8) -> bool {
        self.index[usize::from(b)] != 0
    }

    /// Whether a word may start at the front of `text` (non-empty): its first two bytes, or
    /// its one byte, begin a word. A `false` is certain; a `true` asks for the comparison.
    #[inline]
    pub(crate) fn may_start(&self, text: &[u8]) -> bool {
        let i = self.index[usize::from(text[0])];
        i != 0 && text.get(1).is_none_or(|&b| self.seconds[usize::from(i) - 1].contains(b))
    }
}

/// Text up to the first delimiter, or to the end. Partial input holds back a tail that may be
/// the start of a delimiter (and a truncated UTF-8 sequence), so the span never shows half a
/// delimiter.
#[inline]
pub fn until<D: AsRef<str>>(
    input: &[u8],
    partial: bool,
    pos: usize,
    search: &Delimiters,
    delimiters: &[D],
    resume: Option<ScanState>,
) -> (Res, Option<ScanState>) {
    let n = input.len();
    let ScanState { next: from, checked, invalid } = resume.unwrap_or(ScanState { next: pos, checked: pos, invalid: false });
    let found = search.find(&input[from.min(n)..]).map(|k| k + from);
    let tail = pos.max(n.saturating_sub(search.max_len - 1));
    // The first position where a delimiter may start but is cut by the end of input.
    let limit = found.unwrap_or(n).min(n);
    let cut = (tail..limit).find(|&j| {
        let t = &input[j..];
        search.starts.may_start(t)
            && delimiters.iter().any(|d| {
                let d = d.as_ref().as_bytes();
                d.len() > t.len() && d[0] == t[0] && d.starts_with(t)
            })
    });
    let (outcome, end, touched) = match (found, cut) {
        (Some(k), None) => (Outcome::Success, k, false),
        (found, cut) => {
            if partial {
                (Outcome::NeedMoreInput, cut.unwrap_or(n), true)
            } else {
                (Outcome::Success, found.unwrap_or(n), true)
            }
        }
    };
    let (inv, valid_end) = utf8::check(input, checked.min(end), end);
    let mut invalid = invalid || inv;
    let end = if outcome == Outcome::NeedMoreInput { valid_end } else { end };
    let resume = ScanState { next: tail, checked: valid_end, invalid };
    if outcome != Outcome::NeedMoreInput && valid_end < end {
        // A truncated sequence at the end of complete input is invalid.
        invalid = true;
    }
    (Res::new(outcome, end, touched, invalid), touched.then_some(resume))
}

/// Everything to the end of input.
#[inline]
pub fn rest(input: &[u8], partial: bool, pos: usize, resume: Option<ScanState>) -> (Res, Option<ScanState>) {
    let n = input.len();
    let (checked, invalid) = resume.map_or((pos, false), |s| (s.checked, s.invalid));
    let (inv, valid_end) = utf8::check(input, checked.min(n), n.max(pos));
    let invalid = invalid || inv;
    let res = if partial {
        Res::new(Outcome::NeedMoreInput, valid_end, true, invalid)
    } else {
        Res::new(Outcome::Success, n.max(pos), true, invalid || valid_end < n)
    };
    (res, Some(ScanState { next: valid_end, checked: valid_end, invalid }))
}

/// One marker token: `<...>` or `[...]` on one line, not empty.
#[inline]
pub fn marker(input: &[u8], partial: bool, pos: usize, resume: Option<ScanState>) -> (Res, Option<ScanState>) {
    let n = input.len();
    let Some(&open) = input.get(pos) else {
        let o = if partial { Outcome::NeedMoreInput } else { Outcome::Fail };
        return (Res::new(o, pos, true, false), Some(ScanState { next: pos + 1, checked: pos + 1, invalid: false }));
    };
    let close = match open {
        b'<' => b'>',
        b'[' => b']',
        _ => return (Res::fail(pos), None),
    };
    let ScanState { next: from, checked, invalid } = match resume {
        Some(s) => ScanState { next: s.next.max(pos + 1), checked: s.checked.max(pos + 1), invalid: s.invalid },
        None => ScanState { next: pos + 1, checked: pos + 1, invalid: false },
    };
    match memchr::memchr2(close, b'\n', &input[from.min(n)..]).map(|k| k + from) {
        Some(k) if input[k] == close && k > pos + 1 => {
            let (inv, _) = utf8::check(input, checked, k);
            (Res::new(Outcome::Success, k + 1, false, invalid || inv), None)
        }
        Some(k) => (Res::fail(k), None),
        None => {
            let (inv, valid_end) = utf8::check(input, checked, n);
            let invalid = invalid || inv;
            let resume = ScanState { next: n, checked: valid_end, invalid };
            if partial {
                (Res::new(Outcome::NeedMoreInput, valid_end, true, invalid), Some(resume))
            } else {
                (Res::new(Outcome::Fail, n, true, invalid), Some(resume))
            }
        }
    }
}

/// A JSON or Python value (or the inside of a JSON string): the resumable scanner run from
/// where it stopped.
#[inline]
pub fn scan(scanner: &mut Scanner, input: &[u8], partial: bool) -> Res {
    scanner.run(input, partial).into()
}

#[cfg(test)]
mod tests {
    use super::{Delimiters, Starts};

    /// `may_start` says no only where no word agrees with the text on their common length.
    #[test]
    fn starts_rule_out_only_positions_where_no_word_starts() {
        let sets: [&[&str]; 4] = [&["\n</parameter>", "</parameter>", "\n<parameter=city>", "]]>"], &["<", "<ab", "b"], &["x"], &["é</a>", "éa", "\n\n"]];
        let unit = "x<b>ab</n><a]]\n</p\n<parameter=c\n\né</aéa</parameter>";
        for set in sets {
            let starts = Starts::new(set.iter().map(|w| w.as_bytes()));
            for i in 0..unit.len() {
                let text = &unit.as_bytes()[i..];
                let agree = |t: &[u8]| set.iter().any(|w| t.iter().zip(w.as_bytes()).all(|(a, b)| a == b));
                // Exactly the positions where a word agrees on the first two bytes pass...
                assert_eq!(starts.may_start(text), agree(&text[..text.len().min(2)]), "{set:?} at {i}");
                // ...so every position where a word agrees on all the text has passes.
                assert!(!agree(text) || starts.may_start(text), "{set:?} at {i}");
            }
            let none = Starts::default();
            assert!(!none.may_start(b"x") && !none.may_start(b"<a"));
        }
    }

    /// The vectorized searcher finds what the automaton finds: the leftmost delimiter, the
    /// earlier-listed one of those starting there, in haystacks of every length.
    #[test]
    fn packed_delimiters_find_what_the_automaton_finds() {
        let sets: [&[&str]; 4] = [&["<tool_call>", "<|im_end|>"], &["<a", "<ab", "b"], &["</think>", "<think>", "</"], &["\n\n", "\n<", "<|"]];
        let unit = "x<b>ab</n><a<|im<tool_c\n<|im_end|></think>\n\n<ab<tool_call>";
        for set in sets {
            let packed = Delimiters::try_new(set).unwrap();
            let super::Search::Packed(_) = packed.search else { continue };
            let many = aho_corasick::AhoCorasick::builder().match_kind(aho_corasick::MatchKind::LeftmostFirst).build(set).unwrap();
            for i in 0..unit.len() {
                for j in i..=unit.len() {
                    let hay = &unit.as_bytes()[i..j];
                    let want = many.find(hay).map(|m| m.start());
                    assert_eq!(packed.find(hay), want, "{set:?} in {:?}", &unit[i..j]);
                }
            }
        }
    }
}
