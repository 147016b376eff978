//! Small string helpers shared by the phases: common prefixes/suffixes, marker snapping, JSON
//! location.

use super::segment::{first_marker, last_marker, marker_len};

/// Byte length of the longest common prefix (on a char boundary).
pub fn lcp(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while n > 0 && !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// Byte length of the longest common suffix (on a char boundary).
pub fn lcs(a: &str, b: &str) -> usize {
    let mut n = a.bytes().rev().zip(b.bytes().rev()).take_while(|(x, y)| x == y).count();
    while n > 0 && !a.is_char_boundary(a.len() - n) {
        n -= 1;
    }
    n
}

/// The common suffix of `a` and `b`.
pub fn common_suffix<'a>(a: &'a str, b: &str) -> &'a str {
    &a[a.len() - lcs(a, b)..]
}

/// The common prefix of `a` and `b`.
pub fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    &a[..lcp(a, b)]
}

/// Start of an unterminated marker at the end of `s` (`<function=`, `<parameter name="`).
pub fn open_tail(s: &str) -> Option<usize> {
    let i = s.rfind(['<', '['])?;
    let t = &s[i..];
    (!t.contains(['>', ']', '\n']) && t.len() > 1 && t.len() < 80).then_some(i)
}

/// Trims a piece that begins a structure to start at its first marker (leading text such as a
/// newline belongs to whatever came before).
pub fn from_first_marker(s: &str) -> &str {
    match first_marker(s) {
        Some((i, _)) => &s[i..],
        None => match open_tail(s) {
            Some(i) => &s[i..],
            None => s.trim(),
        },
    }
}

/// Cuts a piece that ends a structure just after its last marker.
pub fn to_last_marker(s: &str) -> &str {
    match last_marker(s) {
        Some((i, m)) => &s[..i + m.len()],
        None => s.trim(),
    }
}

/// Splits text that precedes a name into (structure, name prefix): the name prefix is an
/// unterminated marker (`<function=`) or the text after the last complete marker
/// (`functions.`), or empty.
pub fn split_name_prefix(s: &str) -> (&str, &str) {
    if let Some(i) = open_tail(s) {
        return (&s[..i], &s[i..]);
    }
    match last_marker(s) {
        Some((i, m)) => {
            let end = i + m.len();
            let after = &s[end..];
            if after.trim().is_empty() { (s, "") } else { (&s[..end], after.trim_start()) }
        }
        None => ("", s.trim_start()),
    }
}

/// Splits text that follows a name into (name suffix, rest): when the name sits inside an open
/// marker, the suffix runs through its closing bracket; otherwise it is the text up to the
/// first marker.
pub fn split_name_suffix(s: &str) -> (&str, &str) {
    let close = s.find(['>', ']']);
    let open = s.find(['<', '[']);
    match (close, open) {
        (Some(c), Some(o)) if c < o => (&s[..=c], &s[c + 1..]),
        (Some(c), None) => (&s[..=c], &s[c + 1..]),
        (_, Some(o)) => (&s[..o], &s[o..]),
        (None, None) => (s, ""),
    }
}

/// Whether `s` holds at least one marker.
pub fn has_marker(s: &str) -> bool {
    first_marker(s).is_some()
}

/// Parses one JSON value starting exactly at byte `i` of `s`; returns it and its end offset.
pub fn json_at(s: &str, i: usize) -> Option<(serde_json::Value, usize)> {
    let mut it = serde_json::Deserializer::from_str(&s[i..]).into_iter::<serde_json::Value>();
    match it.next() {
        Some(Ok(v)) => Some((v, i + it.byte_offset())),
        _ => None,
    }
}

/// Parses one Python literal starting exactly at byte `i` of `s` (a mapping printed as it
/// is: `{'a': True, 'b': None}`); returns it as JSON and its end offset.
pub fn python_at(s: &str, i: usize) -> Option<(serde_json::Value, usize)> {
    use std::sync::LazyLock;
    static LITERAL: LazyLock<Option<peg_runtime::Arena>> = LazyLock::new(|| peg_runtime::Arena::build(|p| p.python()).ok());
    let out = LITERAL.as_ref()?.parse(&s.as_bytes()[i..], false).ok()?;
    if out.result.outcome != peg_runtime::Outcome::Success {
        return None;
    }
    let end = i + out.result.end;
    let json = peg_runtime::python::to_json(&s[i..end]).ok()?;
    Some((serde_json::from_str(&json).ok()?, end))
}

/// Whether `needle` occurs in `s` as a JSON string (`"needle"`) preceded by `{`, `,`, `:` or `[`
/// (whitespace allowed): the one heuristic of the analysis.
pub fn in_json_context(s: &str, needle: &str) -> bool {
    let quoted = format!("\"{needle}\"");
    let mut from = 0;
    while let Some(k) = s[from..].find(&quoted) {
        let at = from + k;
        let before = s[..at].trim_end();
        if before.ends_with(['{', ',', ':', '[']) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// Whether a marker starts at byte 0 of `s`.
pub fn starts_with_marker(s: &str) -> bool {
    marker_len(s).is_some()
}

/// Whether `text` ends with a marker and a name (`<|close|>tools`) that the marker `next`
/// begins with (`<|sep|>`) closes as one group, so that marker belongs with it.
pub fn ends_in_named_group(text: &str, next: &str) -> bool {
    let word = text.len() - text.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_').len();
    let head = &text[..text.len() - word];
    word > 0
        && crate::analysis::segment::marker_len(next).is_some_and(|n| {
            // The single marker before the name (the group scan would take the name along).
            let open = head.rfind(['<', '[']).map(|k| &head[k..]).filter(|m| marker_len(m) == Some(m.len()));
            open.is_some_and(|o| crate::analysis::segment::is_named_group(o, &next[..n]))
        })
}

/// The length of the common suffix of `a` and `b`, not starting with a marker that closes a
/// named group in either (`tools<|sep|>` and `call<|sep|>` share `<|sep|>`, which belongs
/// to each group).
pub fn lcs_whole_groups(a: &str, b: &str) -> usize {
    let n = lcs(a, b);
    let common = &a[a.len() - n..];
    match crate::analysis::segment::marker_len(common) {
        Some(m) if ends_in_named_group(&a[..a.len() - n], common) || ends_in_named_group(&b[..b.len() - n], common) => n - m,
        _ => n,
    }
}

/// `turn` without the end of turn: a whole tail (what follows a turn's text in a render) it
/// ends with, or the markers of one (the common end, from its first marker:
/// `<|END_ACTION|><|END_OF_TURN_TOKEN|>` ends like `<|END_RESPONSE|><|END_OF_TURN_TOKEN|>`).
pub(crate) fn strip_turn_end<'t>(turn: &'t str, tails: &[String]) -> &'t str {
    let mut cut = 0;
    for tail in tails {
        let n = lcs(turn, tail);
        let common = &turn[turn.len() - n..];
        let strip = if n == tail.len() {
            n
        } else {
            match crate::analysis::segment::first_marker(common) {
                // Not the marker that closes a named group (`<|close|>tools` + `<|sep|>`).
                Some((i, m)) if ends_in_named_group(&turn[..turn.len() - n + i], m) => {
                    let after = &common[i + m.len()..];
                    crate::analysis::segment::first_marker(after).map_or(0, |(j, _)| after.len() - j)
                }
                Some((i, _)) => n - i,
                // Plain-word templates: whole lines (`\nEND ASSISTANT`).
                None if common.starts_with('\n') => n,
                None => n - common.trim_start().len(),
            }
        };
        cut = cut.max(strip);
    }
    &turn[..turn.len() - cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literal_at() {
        let s = "f {'a': True, 'b': [None, \"it's\"]} tail";
        let (v, end) = python_at(s, 2).unwrap();
        assert_eq!(v, serde_json::json!({"a": true, "b": [null, "it's"]}));
        assert_eq!(&s[end..], " tail");
        assert!(python_at(s, 0).is_none());
        assert!(python_at("{'a': ", 0).is_none());
    }

    #[test]
    fn name_prefix_split() {
        assert_eq!(split_name_prefix("<tool_call>\n<function="), ("<tool_call>\n", "<function="));
        assert_eq!(split_name_prefix("<|tool_call_begin|>functions."), ("<|tool_call_begin|>", "functions."));
        assert_eq!(split_name_prefix("<tool_call>"), ("<tool_call>", ""));
        assert_eq!(split_name_prefix("<invoke name=\""), ("", "<invoke name=\""));
    }

    #[test]
    fn name_suffix_split() {
        assert_eq!(split_name_suffix(">\n<parameter="), (">", "\n<parameter="));
        assert_eq!(split_name_suffix("\n<arg_key>"), ("\n", "<arg_key>"));
        assert_eq!(split_name_suffix("\">\n"), ("\">", "\n"));
    }

    #[test]
    fn json_helpers() {
        let s = "x{\"a\": [1, 2]} tail";
        assert_eq!(json_at(s, 1).unwrap().1, 14);
        assert!(json_at(s, 0).is_none());
        assert!(in_json_context("{\"name\": \"foo\"}", "foo"));
        assert!(in_json_context("[{\"foo\": {}}]", "foo"));
        assert!(!in_json_context("<function=foo>", "foo"));
        assert_eq!(to_last_marker("\n</x>\n"), "\n</x>");
        assert_eq!(from_first_marker("\n<x>a"), "<x>a");
    }

    #[test]
    fn named_groups_are_not_split() {
        assert!(ends_in_named_group("x<|close|>tools", "<|sep|>"));
        assert!(!ends_in_named_group("x<|close|>", "<|sep|>"));
        assert!(!ends_in_named_group("plain words", "<|sep|>"));
        assert!(!ends_in_named_group("<a>x", "</a>"));
        // `tools<|sep|>` and `call<|sep|>` share `<|sep|>`, which closes each group.
        let (a, b) = ("<|open|>tools<|sep|><|open|>call<|sep|>", "<|close|>call<|sep|><|open|>call<|sep|>");
        assert_eq!(&a[a.len() - lcs_whole_groups(a, b)..], "<|open|>call<|sep|>");
        assert_eq!(lcs_whole_groups("<a>x</a>", "<a>y</a>"), 4);
    }
}
