//! Segmentation of rendered text into marker tokens and plain text.

use serde::{Deserialize, Serialize};

/// What a [`Segment`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// A marker token: `<...>`, `[...]`, `<|...|>`, `<｜...｜>`.
    Marker,
    /// Anything else.
    Text,
}

/// A piece of segmented text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Marker or text.
    pub kind: SegmentKind,
    /// The exact text.
    pub value: String,
}

impl Segment {
    fn new(kind: SegmentKind, value: &str) -> Segment {
        Segment { kind, value: value.to_owned() }
    }
    /// Whether this is a marker.
    pub fn is_marker(&self) -> bool {
        self.kind == SegmentKind::Marker
    }
}

const MAX_MARKER: usize = 80;

/// Length of the marker starting at `s[0..]`, if one does.
///
/// `<...>` markers start with a non-space character and hold no `<`, `>` or newline (so `a < b`
/// and `<` in prose are not markers). `[...]` markers hold only word characters, `/`, `|`, `=`,
/// `.`, `:` and `-`, so that JSON arrays are never taken for markers. A `[...]` marker inside
/// angle brackets (`<[role_user]>`) is one marker.
pub fn marker_len(s: &str) -> Option<usize> {
    if let Some(inner) = s.strip_prefix('<').filter(|r| r.starts_with('['))
        && let Some(n) = marker_len(inner).filter(|&n| inner[n..].starts_with('>'))
    {
        return Some(n + 2);
    }
    let mut chars = s.char_indices();
    let (_, open) = chars.next()?;
    let (close, square) = match open {
        '<' => ('>', false),
        '[' => (']', true),
        _ => return None,
    };
    let (_, first) = chars.next()?;
    if first.is_whitespace() || first == close {
        return None;
    }
    if square && !(first.is_alphabetic() || matches!(first, '/' | '|' | '_')) {
        return None;
    }
    if !square && matches!(first, '<' | '=' | '\'' | '"') {
        return None;
    }
    for (i, c) in s.char_indices().skip(1) {
        if i > MAX_MARKER {
            return None;
        }
        if c == close {
            return Some(i + 1);
        }
        if c == '\n' || c == '<' || c == '[' || c == '>' || c == ']' {
            return None;
        }
        if square && !(c.is_alphanumeric() || matches!(c, '_' | '/' | '|' | '=' | '.' | ':' | '-')) {
            return None;
        }
    }
    None
}

/// The closing form of an opening tag: `<think>` -> `</think>`, `[THINK]` -> `[/THINK]`.
pub fn closing_of(m: &str) -> Option<String> {
    let (open, rest) = m.split_at(m.chars().next()?.len_utf8());
    if rest.starts_with('/') || rest.starts_with('|') || rest.starts_with('｜') {
        return None;
    }
    Some(format!("{open}/{rest}"))
}

/// Whether `first`, a name and `second` are one composite marker (`<|open|>call<|sep|>`,
/// `<|close|>think<|sep|>`) rather than an element around its text (`<key>alpha</key>`).
pub fn is_named_group(first: &str, second: &str) -> bool {
    closing_of(first).as_deref() != Some(second)
}

/// Length of the marker at the start of `s`, with the name and marker that follow it at once
/// when they form a composite marker ([`is_named_group`]).
pub fn marker_group_len(s: &str) -> Option<usize> {
    let n = marker_len(s)?;
    let rest = &s[n..];
    let word = rest.len() - rest.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_').len();
    if word == 0 {
        return Some(n);
    }
    match marker_len(&rest[word..]) {
        Some(m) if is_named_group(&s[..n], &rest[word..word + m]) => Some(n + word + m),
        _ => Some(n),
    }
}

/// Splits `text` into markers and text runs, in order; concatenating the values gives `text`.
pub fn segmentize_markers(text: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some(n) = marker_group_len(rest) {
            if text_start < i {
                out.push(Segment::new(SegmentKind::Text, &text[text_start..i]));
            }
            out.push(Segment::new(SegmentKind::Marker, &rest[..n]));
            i += n;
            text_start = i;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    if text_start < text.len() {
        out.push(Segment::new(SegmentKind::Text, &text[text_start..]));
    }
    out
}

/// The first marker in `s` with its byte offset.
pub fn first_marker(s: &str) -> Option<(usize, &str)> {
    let mut i = 0;
    while i < s.len() {
        if let Some(n) = marker_group_len(&s[i..]) {
            return Some((i, &s[i..i + n]));
        }
        i += s[i..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// The last marker in `s` with its byte offset.
pub fn last_marker(s: &str) -> Option<(usize, &str)> {
    let mut last = None;
    let mut i = 0;
    while i < s.len() {
        if let Some(n) = marker_group_len(&s[i..]) {
            last = Some((i, &s[i..i + n]));
            i += n;
        } else {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markers and text runs, in order.
    #[test]
    fn segments_concatenate_to_the_text() {
        let segs = segmentize_markers("<tool_call>\n{\"a\": [1]}</tool_call>");
        let v: Vec<_> = segs.iter().map(|s| (s.is_marker(), s.value.as_str())).collect();
        assert_eq!(v, [(true, "<tool_call>"), (false, "\n{\"a\": [1]}"), (true, "</tool_call>")]);
    }

    fn seg(s: &str) -> Vec<(bool, String)> {
        segmentize_markers(s).into_iter().map(|s| (s.is_marker(), s.value)).collect()
    }

    #[test]
    fn kinds_of_markers() {
        let is_single_marker = |s: &str| marker_len(s) == Some(s.len());
        assert!(is_single_marker("<think>"));
        assert!(is_single_marker("</think>"));
        assert!(is_single_marker("<|im_start|>"));
        assert!(is_single_marker("<｜tool▁calls▁begin｜>"));
        assert!(is_single_marker("[TOOL_CALLS]"));
        assert!(is_single_marker("[/THINK]"));
        assert!(is_single_marker("<function=get_weather>"));
        assert!(is_single_marker("<invoke name=\"x\">"));
        assert!(is_single_marker("<[role_user]>"));
        assert!(is_single_marker("<[/reasoning]>"));
        assert!(!is_single_marker("<[1, 2]>"));
        assert!(!is_single_marker("[1, 2]"));
        assert!(!is_single_marker("[\"a\"]"));
        assert!(!is_single_marker("< b>"));
        assert!(!is_single_marker("<>"));
    }

    #[test]
    fn segments_roundtrip() {
        for s in ["a < b and c > d", "<a>x</a>", "[TOOL_CALLS][{\"n\": 1}]", "<｜A｜>é<｜B｜>", "", "<<x>>"] {
            let joined: String = segmentize_markers(s).into_iter().map(|s| s.value).collect();
            assert_eq!(joined, s);
        }
        assert_eq!(seg("x<a>y"), [(false, "x".into()), (true, "<a>".into()), (false, "y".into())]);
        assert_eq!(seg("a < b"), [(false, "a < b".into())]);
    }

    #[test]
    fn first_last() {
        assert_eq!(first_marker("ab<x>cd</x>"), Some((2, "<x>")));
        assert_eq!(last_marker("ab<x>cd</x>e"), Some((7, "</x>")));
        assert_eq!(first_marker("ab<x> cd<y>"), Some((2, "<x>")));
        assert_eq!(first_marker("abc"), None);
    }

    #[test]
    fn markers_that_name_their_element_are_one_group() {
        assert_eq!(marker_group_len("<|open|>call<|sep|>rest"), Some(19));
        assert_eq!(marker_group_len("<|open|><|sep|>"), Some(8));
        assert_eq!(marker_group_len("</think>answer"), Some(8));
        // An element around its text is not a group.
        assert_eq!(marker_group_len("<arg_key>alpha</arg_key>"), Some(9));
        assert_eq!(first_marker("a <|close|>think<|sep|> b"), Some((2, "<|close|>think<|sep|>")));
        assert_eq!(last_marker("<|open|>x<|sep|>text<|close|>x<|sep|>"), Some((20, "<|close|>x<|sep|>")));
    }
}
