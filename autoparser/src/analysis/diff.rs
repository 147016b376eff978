//! Differential comparison of two renders: common prefix and suffix, and what differs.

use serde::{Deserialize, Serialize};

/// Two renders split into their common `prefix` and `suffix` and the differing middles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffSplit {
    /// Common to both renders, at the start.
    pub prefix: String,
    /// Common to both renders, at the end.
    pub suffix: String,
    /// Only in the first render.
    pub left: String,
    /// Only in the second render.
    pub right: String,
}

fn common_prefix_len(a: &str, b: &str) -> usize {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    floor_boundary(a, n)
}

fn common_suffix_len(a: &str, b: &str) -> usize {
    let n = a.bytes().rev().zip(b.bytes().rev()).take_while(|(x, y)| x == y).count();
    // Back off to a char boundary of both strings (they share these bytes).
    let mut n = n;
    while n > 0 && !a.is_char_boundary(a.len() - n) {
        n -= 1;
    }
    n
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Longest marker we will repair across a diff boundary.
const MAX_MARKER: usize = 80;

/// Where an unterminated marker begins at the end of `s`: an opening `<` or `[` after the last
/// closing bracket, with marker-like text after it.
fn open_marker_tail(s: &str) -> Option<usize> {
    let start = s.rfind(['<', '['])?;
    let tail = &s[start..];
    if tail.len() > MAX_MARKER || tail.contains(['>', ']', '\n']) {
        return None;
    }
    Some(start)
}

/// Length of a marker remainder at the start of `s`: text up to and including the first closing
/// bracket, when no opening bracket comes first.
fn close_marker_head(s: &str) -> Option<usize> {
    let end = s.find(['>', ']'])?;
    let head = &s[..end];
    if end > MAX_MARKER || head.contains(['<', '[', '\n']) {
        return None;
    }
    Some(end + 1)
}

/// Splits two renders into common prefix/suffix and differing middles, then moves markers cut
/// in half by the prefix or suffix boundary into the middles until stable.
pub fn calculate_diff_split(a: &str, b: &str) -> DiffSplit {
    let p = common_prefix_len(a, b);
    let s = common_suffix_len(&a[p..], &b[p..]);
    let mut prefix = a[..p].to_owned();
    let mut left = a[p..a.len() - s].to_owned();
    let mut right = b[p..b.len() - s].to_owned();
    let mut suffix = a[a.len() - s..].to_owned();
    loop {
        let mut changed = false;
        if !left.is_empty() || !right.is_empty() {
            // A marker opened in the prefix and closed inside the differing part.
            if let Some(i) = open_marker_tail(&prefix)
                && (left.contains(['>', ']']) || right.contains(['>', ']']) || close_marker_head(&suffix).is_some())
            {
                let moved = prefix.split_off(i);
                left.insert_str(0, &moved);
                right.insert_str(0, &moved);
                changed = true;
            }
            // A marker opened in the differing part and closed in the suffix.
            let opened = |m: &str| open_marker_tail(m).is_some();
            if let Some(n) = close_marker_head(&suffix)
                && (opened(&left) || opened(&right) || (open_marker_tail(&prefix).is_some()))
            {
                let moved: String = suffix.drain(..n).collect();
                left.push_str(&moved);
                right.push_str(&moved);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    regroup_cut(&mut prefix, &mut left, &mut right);
    regroup_cut_end(&mut left, &mut right, &mut suffix);
    // An insertion (or deletion) next to text it repeats can sit at several offsets: between
    // two `<|open|>` markers, `think<|sep|>…<|open|>` and `<|open|>think<|sep|>…` are the same
    // change. Prefer the one that starts at a marker.
    if left.is_empty() {
        align_to_marker(&mut prefix, &mut right, &mut suffix);
    } else if right.is_empty() {
        align_to_marker(&mut prefix, &mut left, &mut suffix);
    }
    DiffSplit { prefix, suffix, left, right }
}

/// Two replacements that open with the same first piece of a composite opener: the prefix
/// took the piece. Moves it back into both middles:
/// - a marker before a name and a marker (`<|open|>` + `response<|sep|>` / `tools<|sep|>`);
/// - in plain-word templates, a first word (`BEGIN ` + `ANSWER` / `TOOLS`) at a line start.
fn regroup_cut(prefix: &mut String, left: &mut String, right: &mut String) {
    use super::segment::{last_marker, marker_len};
    if left.is_empty() || right.is_empty() {
        return;
    }
    let word_len = |m: &str| m.len() - m.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_').len();
    let named = |m: &str| {
        let w = word_len(m);
        w > 0 && marker_len(&m[w..]).is_some()
    };
    let cut = if named(left) && named(right) {
        last_marker(prefix).filter(|(k, m)| k + m.len() == prefix.len()).map(|(k, _)| k)
    } else if word_len(left) > 0 && word_len(right) > 0 {
        let line = prefix.rfind('\n').map_or(0, |i| i + 1);
        let piece = &prefix[line..];
        let first_word = piece.strip_suffix(' ').is_some_and(|w| !w.is_empty() && word_len(w) == w.len());
        first_word.then_some(line)
    } else {
        None
    };
    if let Some(k) = cut {
        let moved = prefix.split_off(k);
        left.insert_str(0, &moved);
        right.insert_str(0, &moved);
    }
}

/// The mirror of [`regroup_cut`] at the end: both middles end with a marker and a name
/// (`<|close|>response` / `<|close|>tools`) and the suffix took the marker that closes the
/// group (`<|sep|>`). Moves it back into both middles.
fn regroup_cut_end(left: &mut String, right: &mut String, suffix: &mut String) {
    use super::text::ends_in_named_group;
    if left.is_empty() || right.is_empty() {
        return;
    }
    if let (true, true, Some(n)) = (ends_in_named_group(left, suffix), ends_in_named_group(right, suffix), super::segment::marker_len(suffix)) {
        let moved: String = suffix.drain(..n).collect();
        left.push_str(&moved);
        right.push_str(&moved);
    }
}

/// Moves the inserted `mid` left, within what `prefix` repeats of its end, to the nearest
/// offset where it starts with a marker, or (plain-word templates: `BEGIN ANSWER` after
/// `BEGIN ASSISTANT`) at the start of a line; unchanged when it already does or none exists.
fn align_to_marker(prefix: &mut String, mid: &mut String, suffix: &mut String) {
    use super::segment::marker_len;
    let line_start = |p: &str| p.is_empty() || p.ends_with('\n');
    if mid.is_empty() || marker_len(mid).is_some() || (line_start(prefix) && !super::text::has_marker(mid)) {
        return;
    }
    let words = !super::text::has_marker(mid);
    let (pb, mb) = (prefix.as_bytes(), mid.as_bytes());
    let mut k = 0;
    while k < pb.len() && k < mb.len() && k < MAX_MARKER && pb[pb.len() - 1 - k] == mb[mb.len() - 1 - k] {
        k += 1;
        let (cut_p, cut_m) = (pb.len() - k, mb.len() - k);
        if !prefix.is_char_boundary(cut_p) || !mid.is_char_boundary(cut_m) {
            continue;
        }
        let shifted = format!("{}{}", &prefix[cut_p..], &mid[..cut_m]);
        if marker_len(&shifted).is_some() || (words && line_start(&prefix[..cut_p])) {
            suffix.insert_str(0, &mid[cut_m..]);
            prefix.truncate(cut_p);
            *mid = shifted;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split of two renders, markers kept whole.
    #[test]
    fn diff_split_keeps_markers_whole() {
        let d = calculate_diff_split("<a>x</a>", "<a>yy</a>");
        assert_eq!((d.prefix.as_str(), d.left.as_str(), d.right.as_str(), d.suffix.as_str()), ("<a>", "x", "yy", "</a>"));
        // a marker cut by the common prefix moves whole into the differing parts
        let d = calculate_diff_split("<think>a", "<tool>a");
        assert_eq!((d.prefix.as_str(), d.left.as_str(), d.right.as_str()), ("", "<think>", "<tool>"));
        // a composite opener is not cut after its first marker
        let d = calculate_diff_split("<|o|>answer<|s|>A", "<|o|>tools<|s|>T");
        assert_eq!((d.prefix.as_str(), d.left.as_str()), ("", "<|o|>answer<|s|>A"));
        // an insertion between repeated markers starts at a marker
        let d = calculate_diff_split("<|o|>answer", "<|o|>think<|s|>R<|o|>answer");
        assert_eq!((d.prefix.as_str(), d.right.as_str(), d.suffix.as_str()), ("", "<|o|>think<|s|>R", "<|o|>answer"));
    }

    fn parts(d: &DiffSplit) -> (&str, &str, &str, &str) {
        (&d.prefix, &d.left, &d.right, &d.suffix)
    }

    #[test]
    fn plain_diff() {
        let d = calculate_diff_split("hello world", "hello there world");
        assert_eq!(parts(&d), ("hello ", "", "there ", "world"));
    }

    #[test]
    fn identical() {
        let d = calculate_diff_split("abc", "abc");
        assert_eq!(parts(&d), ("abc", "", "", ""));
    }

    #[test]
    fn fixes_split_tags() {
        let d = calculate_diff_split("x<tool_call>{}</tool_call>", "x<tool_resp>{}</tool_resp>");
        assert_eq!(d.prefix, "x");
        assert_eq!(d.left, "<tool_call>{}</tool_call>");
        assert_eq!(d.right, "<tool_resp>{}</tool_resp>");
        let d = calculate_diff_split("<|im_start|>assistant\nA</think>", "<|im_start|>assistant\nB</think>");
        assert_eq!(parts(&d), ("<|im_start|>assistant\n", "A", "B", "</think>"));
        let d = calculate_diff_split("[TOOL_CALLS]a[ARGS]", "[TOOL_CALLS]b[ARGS]");
        assert_eq!(parts(&d), ("[TOOL_CALLS]", "a", "b", "[ARGS]"));
        // Suffix cut: `foo>` is the tail of `<function=foo>` vs `<function=barfoo>`.
        let d = calculate_diff_split("<function=xfoo>", "<function=yfoo>");
        assert_eq!(parts(&d), ("", "<function=xfoo>", "<function=yfoo>", ""));
    }

    #[test]
    fn multibyte() {
        let d = calculate_diff_split("<｜a｜>é", "<｜a｜>è");
        assert_eq!(d.prefix, "<｜a｜>");
        assert_eq!(d.left, "é");
        let d = calculate_diff_split("aé", "bé");
        assert_eq!(parts(&d), ("", "a", "b", "é"));
    }
}
