//! Phase 1 (R1-R3) reasoning markers and Phase 2 (C1) content markers.

use super::diff::{DiffSplit, calculate_diff_split};
use super::probe::{Asst, Call, Probe, needle::*};
use super::segment::{closing_of, first_marker, last_marker, marker_group_len, marker_len};
use super::text::*;
use crate::format::*;

/// Whether `m` directly precedes the content in a content-only render: then it opens the turn,
/// not the reasoning.
fn is_turn_marker(p: &Probe, m: &str) -> bool {
    match p.render_asst(&Asst::content(CONTENT)) {
        Ok(r) => r.find(CONTENT).is_some_and(|i| r[..i].trim_end().ends_with(m)),
        Err(_) => false,
    }
}

/// Start and end markers around the reasoning needle in a diff whose right side added it.
fn markers_around(p: &Probe, d: &DiffSplit) -> Option<(String, String)> {
    let i = d.right.find(REASONING)?;
    let pre = d.right[..i].trim();
    let post = d.right[i + REASONING.len()..].trim();
    let start = if !pre.is_empty() {
        from_first_marker(pre).to_owned()
    } else {
        match last_marker(d.prefix.trim_end()) {
            Some((k, m)) if k + m.len() == d.prefix.trim_end().len() && !is_turn_marker(p, m) => m.to_owned(),
            _ => String::new(),
        }
    };
    let end = if !post.is_empty() {
        // The first marker, a whole group (`<|close|>think<|sep|>`); a following content
        // opener belongs to content.
        let e = match first_marker(post) {
            Some((k, m)) => &post[..k + m.len()],
            None => post,
        };
        if e.contains(CONTENT) {
            return None;
        }
        e.to_owned()
    } else {
        let s = d.suffix.trim_start();
        // A whole group (`<|close|>think<|sep|>` after the empty block's `<|open|>think<|sep|>`),
        // not the content that follows a marker (`</think>CONTENT<｜end▁of▁sentence｜>`).
        let group = marker_group_len(s).filter(|&n| !s[..n].contains(CONTENT)).or_else(|| marker_len(s));
        match group {
            Some(n) if !s.starts_with(CONTENT) => s[..n].to_owned(),
            // A plain-word line opener (`Thought: `) whose reasoning the line break ends.
            _ if !start.is_empty() && !has_marker(&start) && !start.contains('\n') && d.right[i + REASONING.len()..].starts_with('\n') => "\n".to_owned(),
            _ => String::new(),
        }
    };
    (!end.is_empty()).then_some((start, end))
}

/// R1-R3.
pub fn analyze_reasoning(p: &Probe, caps: &mut Capabilities, notes: &mut Vec<String>) -> ReasoningAnalysis {
    let mut r = ReasoningAnalysis::default();
    // R1: with vs without reasoning_content.
    let a = Asst::content(CONTENT);
    if let Ok((d, _, _)) = p.compare(&a, &a.clone().with_reasoning(REASONING))
        && let Some((s, e)) = markers_around(p, &d)
    {
        r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: s, end: e };
    }
    // R1 with typed content parts (`{"type": "thinking"}`).
    if r.mode == ReasoningMode::None {
        let a = Asst { parts: true, ..Asst::content(CONTENT) };
        if let Ok((d, _, _)) = p.compare(&a, &a.clone().with_reasoning(REASONING))
            && let Some((s, e)) = markers_around(p, &d)
        {
            notes.push("reasoning found through typed content parts".into());
            r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: s, end: e };
        }
    }
    // R3: reasoning shown only next to tool calls.
    if r.mode == ReasoningMode::None {
        let a = Asst::calls(vec![Call::first()]);
        if let Ok((d, _, _)) = p.compare(&a, &a.clone().with_reasoning(REASONING))
            && let Some((s, e)) = markers_around(p, &d)
        {
            r = ReasoningAnalysis { mode: ReasoningMode::ToolsOnly, start: s, end: e };
        }
    }
    // R2: enable_thinking=false vs true in the generation prompt.
    let (pf, pt) = (p.render_prompt(Some(false)), p.render_prompt(Some(true)));
    if let (Ok(pf), Ok(pt)) = (pf, pt) {
        caps.supports_thinking_toggle = pf != pt;
        // Only the turn after the user's message: system prompts may mention markers.
        let tail = |s: &str| s.rfind(USER).map_or(s.to_owned(), |i| s[i + USER.len()..].to_owned());
        let (pf, pt) = (tail(&pf), tail(&pt));
        let d = calculate_diff_split(&pf, &pt);
        if r.mode == ReasoningMode::None {
            let left: Vec<_> = super::segment::segmentize_markers(&d.left).into_iter().filter(|s| s.is_marker()).collect();
            let right_marker = last_marker(d.right.trim_end()).filter(|(k, m)| k + m.len() == d.right.trim_end().len());
            let prompt_tail = last_marker(pt.trim_end()).filter(|(k, m)| k + m.len() == pt.trim_end().len());
            if left.len() >= 2 {
                // Disabled thinking writes an empty block: both markers.
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: left[0].value.clone(), end: left[left.len() - 1].value.clone() };
            } else if let (Some((_, m)), 1) = (right_marker, left.len()) {
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: m.to_owned(), end: left[0].value.clone() };
            } else if let (1, Some((_, m))) = (left.len(), prompt_tail) {
                // Disabled adds only the end marker after a start already in the prompt.
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: m.to_owned(), end: left[0].value.clone() };
            } else if let Some((_, m)) = right_marker.or(prompt_tail) {
                // The prompt opens reasoning (`<think>`): the model closes it. A marker that
                // also opens plain content must be confirmed: the template strips reasoning
                // written before the closing form from history.
                if let Some(end) = closing_of(m) {
                    let mut msgs = p.base();
                    msgs.push(p.asst_json(&Asst::content(&format!("{REASONING}{end}{CONTENT}"))));
                    msgs.push(serde_json::json!({"role": "user", "content": "Next question"}));
                    let stripped = p.render(&p.ctx(msgs, false, Some(true))).is_ok_and(|s| s.contains(CONTENT) && !s.contains(REASONING));
                    if stripped || !is_turn_marker(p, m) {
                        notes.push(format!("reasoning end `{end}` derived from prompt-opened `{m}`"));
                        r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: m.to_owned(), end };
                    }
                }
            }
        }
    }
    // R4: templates that only strip reasoning from history (`content.split('</think>')`):
    // probe conventional end markers; the one whose preceding text vanishes is the end.
    if r.mode == ReasoningMode::None {
        for &(start, end) in crate::registry::CONVENTIONAL_REASONING_TAGS {
            let mut msgs = p.base();
            msgs.push(p.asst_json(&Asst::content(&format!("{start}{REASONING}{end}{CONTENT}"))));
            msgs.push(serde_json::json!({"role": "user", "content": "Next question"}));
            let stripped = p.render(&p.ctx(msgs, false, Some(true))).is_ok_and(|s| s.contains(CONTENT) && !s.contains(REASONING));
            if stripped {
                notes.push(format!("reasoning `{start}`..`{end}` found by history stripping"));
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: start.into(), end: end.into() };
                break;
            }
        }
    }
    // R6: an empty block the template writes right before plain content (`<think></think>`).
    if r.mode == ReasoningMode::None
        && let Ok(s) = p.render_asst(&Asst::content(CONTENT))
        && let Some(i) = s.find(CONTENT)
    {
        let before = s[..i].trim_end();
        if let Some((k, end)) = last_marker(before).filter(|(k, m)| k + m.len() == before.len()) {
            let b2 = before[..k].trim_end();
            if let Some((_, start)) = last_marker(b2).filter(|(k2, m)| k2 + m.len() == b2.len())
                && closing_of(start).as_deref() == Some(end)
            {
                notes.push(format!("reasoning `{start}`..`{end}` from the empty block before content"));
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: start.to_owned(), end: end.to_owned() };
            }
        }
    }
    // R5: markers the prompt introduces only when thinking is on (instructions such as
    // "write your thoughts in <think></think>"): an opening/closing pair.
    for with_tools in [true, false] {
        if r.mode != ReasoningMode::None {
            break;
        }
        let mut q = p.clone_with_tools(with_tools);
        q.object_args = p.object_args;
        if let (Ok(pf), Ok(pt)) = (q.render_prompt(Some(false)), q.render_prompt(Some(true))) {
            let before: Vec<String> = super::segment::segmentize_markers(&pf).into_iter().filter(|s| s.is_marker()).map(|s| s.value).collect();
            let added: Vec<String> =
                super::segment::segmentize_markers(&pt).into_iter().filter(|s| s.is_marker() && !before.contains(&s.value)).map(|s| s.value).collect();
            let pair = added.iter().find_map(|m| closing_of(m).filter(|c| added.contains(c)).map(|c| (m.clone(), c)));
            if let Some((start, end)) = pair {
                notes.push(format!("reasoning `{start}`..`{end}` introduced by the thinking prompt"));
                r = ReasoningAnalysis { mode: ReasoningMode::TagBased, start, end };
            }
        }
    }
    r
}

/// R6: whether the template ends reasoning with the calls' opener alone: in a turn of
/// reasoning and a call, what it writes between the two holds the opener and no reasoning end.
pub fn calls_end_reasoning(p: &Probe, r: &ReasoningAnalysis, f: &ToolFormatAnalysis) -> bool {
    let (e, opener) = (r.end_marker(), [f.section_start.trim(), f.per_call_opener()].into_iter().find(|m| !m.is_empty()).unwrap_or(""));
    if r.mode == ReasoningMode::None || e.is_empty() || opener.is_empty() {
        return false;
    }
    let Ok(turn) = p.render_asst(&Asst::calls(vec![Call::first()]).with_reasoning(REASONING)) else { return false };
    let Some(between) = turn.find(REASONING).and_then(|i| turn.get(i + REASONING.len()..i + turn[i..].find(FUN_A)?)) else { return false };
    between.contains(opener) && !between.contains(e)
}

/// C1: content wrapping markers.
///
/// Anchored at the generation prompt: what the model writes before the content needle (after
/// an empty reasoning block the template may write) opens the content, and what follows it
/// until the content-only and the calls-only turns end alike closes it. Where the prompt is no
/// prefix of the turn, the diff of the two turns decides.
pub fn analyze_content(p: &Probe, tools: bool, r: &ReasoningAnalysis) -> ContentAnalysis {
    let mut c = ContentAnalysis::default();
    let a = Asst::content(CONTENT);
    let b = if tools { Asst::calls(vec![Call::first()]) } else { Asst::content("") };
    let Ok((d, ra, rb)) = p.compare(&a, &b) else { return c };
    let Some(i) = d.left.find(CONTENT) else { return c };
    let pre = d.left[..i].trim();
    let post = d.left[i + CONTENT.len()..].trim();
    let mut start = last_marker(pre).filter(|(k, m)| k + m.len() == pre.len()).map(|(_, m)| m.to_owned());
    let mut end = first_marker(post).filter(|(k, _)| *k == 0).map(|(_, m)| m.to_owned());
    if let Some((s, e)) = anchored_content_markers(p, r, &ra, &rb) {
        // The anchored opener holds the marker the diff found (`<|open|>response<|sep|>` vs
        // `<|sep|>`), or the diff found none (plain-word envelopes).
        if start.as_deref().is_none_or(|m| s.ends_with(m)) {
            start = Some(s);
            end = Some(e);
        }
    }
    if let Some(s) = start.filter(|s| !s.is_empty() && *s != r.start && *s != r.end) {
        c.mode = ContentMode::AlwaysWrapped;
        c.start = s;
        c.end = end.unwrap_or_default();
    }
    c
}

/// The content opener and closer written in the turn after the generation prompt: `(start,
/// end)`, or `None` when the turn does not continue the prompt or writes nothing around the
/// content. `content` and `calls` are the renders of a content-only and a calls-only turn.
fn anchored_content_markers(p: &Probe, r: &ReasoningAnalysis, content: &str, calls: &str) -> Option<(String, String)> {
    let prompt = p.render_prompt(Some(true)).ok()?;
    let turn = content.strip_prefix(prompt.as_str())?;
    let i = turn.find(CONTENT)?;
    let mut pre = &turn[..i];
    // An empty reasoning block before the content belongs to reasoning.
    if !r.end.trim().is_empty()
        && let Some(k) = pre.find(r.end.trim())
    {
        pre = &pre[k + r.end.trim().len()..];
    }
    let pre = pre.trim();
    let plain_line = !pre.contains('\n') && pre.len() <= 40;
    if pre.is_empty() || !(has_marker(pre) || plain_line) {
        return None;
    }
    let post = &turn[i + CONTENT.len()..];
    let calls_tail = calls.strip_prefix(prompt.as_str()).unwrap_or(calls);
    let shared = lcs(post, calls_tail);
    let mut end = &post[..post.len() - shared];
    // Never inside a marker (`<|END_RESPONSE|>` vs `<|END_ACTION|>` share `|>`).
    if let Some(k) = open_tail(end)
        && let Some(n) = marker_len(&post[k..])
    {
        end = &post[..k + n];
    }
    // Do not cut a closer that names what it closes (`<|close|>response` + `<|sep|>`).
    let rest = &post[end.len()..];
    if ends_in_named_group(end, rest) {
        end = &post[..end.len() + marker_len(rest).unwrap_or(0)];
    }
    Some((pre.to_owned(), end.trim().to_owned()))
}
