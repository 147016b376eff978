//! Phase 3 and 4 (T1-T7, A1-A2): tool-call format, section/per-call markers, function markers,
//! argument markers, call ids. Works on the rendered tool region of a one-call and a two-call
//! message, located by needles.

use serde_json::Value;

use super::diff::calculate_diff_split;
use super::probe::{Asst, Call, Probe, needle::*};
use super::text::*;
use crate::format::*;

/// Stands for a call id in normalized renders.
const ID_MARK: &str = "\u{E000}";

/// The tool region of `calls` rendered: what a message with these calls adds over an empty one.
fn tool_region(p: &Probe, calls: Vec<Call>) -> Result<String, String> {
    tool_region_against(p, &content_turn(p)?, calls)
}

/// The turn calls are told from: a content needle (not empty content: an insertion next to an
/// empty content can align ambiguously with the end-of-turn marker).
fn content_turn(p: &Probe) -> Result<String, String> {
    p.render_asst(&Asst::content(CONTENT))
}

/// [`tool_region`] against the render of [`content_turn`].
fn tool_region_against(p: &Probe, content: &str, calls: Vec<Call>) -> Result<String, String> {
    let with = p.render_asst(&Asst::calls(calls))?;
    Ok(calculate_diff_split(content, &with).right)
}

/// Strips an empty reasoning block (`<think></think>`) from the start of a tool region.
fn strip_reasoning(h: &str, r: &ReasoningAnalysis) -> String {
    if r.end.is_empty() {
        return h.to_owned();
    }
    let t = h.trim_start();
    let after_start = if r.start.is_empty() { Some(t) } else { t.strip_prefix(r.start.as_str()) };
    if let Some(rest) = after_start
        && let Some(rest) = rest.trim_start().strip_prefix(r.end.as_str())
    {
        return rest.to_owned();
    }
    h.to_owned()
}

/// Result of T1: the tool region renders and how arguments were passed.
pub struct ToolProbe {
    /// One call, ids replaced by a private-use placeholder character.
    pub one: String,
    /// Two calls (if the template renders both).
    pub two: Option<String>,
    /// Whether ids appear in the output.
    pub has_ids: bool,
    /// Arguments were passed as objects.
    pub object_args: bool,
}

fn normalize_ids(s: &str) -> String {
    s.replace(ID_A, ID_MARK).replace(ID_B, ID_MARK)
}

/// T1: render tool calls; `None` if the template renders none.
pub fn probe_tools(p: &mut Probe, r: &ReasoningAnalysis) -> Option<ToolProbe> {
    // Calls with empty content first, then with null content (DeepSeek V3 renders calls only
    // for `content is none`).
    // (Rendered once: a turn of content alone does not depend on how calls are passed.)
    let content = content_turn(p).ok()?;
    for (null_content, object_args) in [(false, true), (false, false), (true, true), (true, false)] {
        p.null_content_with_calls = null_content;
        p.object_args = object_args;
        let Ok(mut one) = tool_region_against(p, &content, vec![Call::first()]) else { continue };
        let renders_call = |t: &str| t.contains(FUN_A) && t.contains(ARG_A) && t.contains(VAL_A);
        if !renders_call(&one) {
            continue;
        }
        if !null_content {
            // Calls with null content, as OpenAI clients send them, where empty content adds
            // text of its own (DeepSeek R1 distills write an empty content turn after the
            // calls' turn).
            p.null_content_with_calls = true;
            match tool_region_against(p, &content, vec![Call::first()]) {
                Ok(null) if renders_call(&null) && null.len() < one.len() => one = null,
                _ => p.null_content_with_calls = false,
            }
        }
        // Arguments rendered as an escaped JSON string mean the template wants strings.
        if object_args && one.contains(&format!("\\\"{ARG_A}\\\"")) {
            continue;
        }
        let one = strip_reasoning(&one, r);
        let two = tool_region_against(p, &content, vec![Call::first(), Call::second()])
            .ok()
            .filter(|t| t.contains(FUN_A) && t.contains(FUN_B))
            .map(|t| strip_reasoning(&t, r));
        let has_ids = one.contains(ID_A);
        return Some(ToolProbe { one: normalize_ids(&one), two: two.map(|t| normalize_ids(&t)), has_ids, object_args });
    }
    p.null_content_with_calls = false;
    None
}

/// Classifies the format: the JSON heuristic on function and argument names.
pub fn classify(h: &str) -> ToolFormat {
    if in_json_context(h, FUN_A) {
        ToolFormat::JsonNative
    } else if in_json_context(h, ARG_A) || h.contains(&format!("'{ARG_A}'")) {
        ToolFormat::TagWithJson
    } else {
        ToolFormat::TagWithTagged
    }
}

/// The outermost JSON object holding `name` but not `not`, starting at or after `from`. Each
/// place the quoted name is written is tried in turn: an opener may name the call before the
/// object does (`<tool_call name="f">{"name": "f", …}`).
fn call_object(h: &str, from: usize, name: &str, not: &str) -> Option<(usize, usize, Value)> {
    let quoted = format!("\"{name}\"");
    h[from..].match_indices(&quoted).find_map(|(at, _)| call_object_around(h, from, from + at, not))
}

/// The outermost JSON object starting at or after `from` that holds the byte `at`, without `not`.
fn call_object_around(h: &str, from: usize, at: usize, not: &str) -> Option<(usize, usize, Value)> {
    for (i, c) in h[from..at].char_indices() {
        let i = from + i;
        if c != '{' {
            continue;
        }
        // JSON, or a Python literal where the template prints the arguments mapping as it is
        // inside JSON it writes itself (`"arguments": {'alpha': 'XXXX'}`).
        if let Some((v, end)) = json_at(h, i).or_else(|| python_at(h, i))
            && end > at
            && !h[i..end].contains(&format!("\"{not}\""))
        {
            return Some((i, end, v)); // the first (outermost) start that parses wins
        }
    }
    None
}

fn find_path(v: &Value, pred: &dyn Fn(&Value) -> bool, path: &mut Vec<String>) -> bool {
    if let Value::Object(m) = v {
        for (k, x) in m {
            path.push(k.clone());
            if pred(x) || find_path(x, pred, path) {
                return true;
            }
            path.pop();
        }
    }
    false
}

fn has_arg(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key(ARG_A) || m.contains_key(ARG_B),
        Value::String(s) => s.contains(&format!("\"{ARG_A}\"")) || s.contains(&format!("\"{ARG_B}\"")),
        _ => false,
    }
}

/// Per-call and section markers from the text before the first call, between two calls and
/// after the last: sets section/per-call markers and the separator.
fn split_structure(f: &mut ToolFormatAnalysis, before: &str, between: Option<&str>, after: &str) {
    let Some(between) = between else {
        f.section_start = before.trim().to_owned();
        f.section_end = after.trim().to_owned();
        return;
    };
    let cs_len = lcs_whole_groups(before, between);
    let cs = &before[before.len() - cs_len..];
    let (pcs, pcs_rel) = if has_marker(cs) || open_tail(cs).is_some() {
        let p = from_first_marker(cs);
        (p, cs_len - p.len())
    } else {
        ("", cs_len)
    };
    let cp_len = lcp(between, after);
    let cp = &after[..cp_len];
    let pce_end = if has_marker(cp) { to_last_marker(cp).len() } else { 0 };
    let pce = &cp[..pce_end];
    f.per_call_start = pcs.trim().to_owned();
    f.per_call_end = pce.trim().to_owned();
    f.section_start = before[..before.len() - cs_len + pcs_rel].trim().to_owned();
    f.section_end = after[pce_end..].trim().to_owned();
    let sep_end = between.len().saturating_sub(cs_len) + pcs_rel;
    f.call_separator = between.get(pce_end..sep_end.max(pce_end)).unwrap_or("").trim().to_owned();
}

/// T1 JSON path: field names, array wrapping, section and per-call markers.
fn analyze_json(t: &mut ToolAnalysis, tp: &ToolProbe) -> Result<(), String> {
    let h = tp.two.as_deref().unwrap_or(&tp.one);
    let (s1, e1, v) = call_object(h, 0, FUN_A, FUN_B).ok_or("no JSON object around the function name")?;
    let f = &mut t.format;
    let mut path = Vec::new();
    if let Value::Object(m) = &v {
        if m.contains_key(FUN_A) {
            f.fun_name_is_key = true;
        }
        f.parameter_order = m.keys().cloned().collect();
    }
    if !f.fun_name_is_key {
        if !find_path(&v, &|x| x.as_str() == Some(FUN_A), &mut path) {
            return Err("function name not found in the call object".into());
        }
        f.name_field = path.last().cloned().unwrap_or_default();
        f.function_field = if path.len() > 1 { path[0].clone() } else { String::new() };
        path.clear();
        if find_path(&v, &has_arg, &mut path) {
            f.args_field = path.last().cloned().unwrap_or_default();
            let mut cur = &v;
            for k in &path {
                cur = &cur[k];
            }
            f.args_as_string = cur.is_string();
            // Arguments that are not JSON as written are a Python mapping.
            let written = &h[s1..e1];
            f.uses_python_dicts = !f.args_as_string && json_at(written, 0).is_none();
        }
        path.clear();
        if let Value::Object(m) = &v {
            if tp.has_ids {
                f.id_field = m.iter().find(|(_, x)| x.as_str() == Some(ID_MARK)).map(|(k, _)| k.clone()).unwrap_or_default();
            }
            // A field holding the call's index (`"0"` or `0`) is an id the template made up.
            f.gen_id_field =
                m.iter().find(|(k, x)| **k != f.id_field && (x.as_str() == Some("0") || x.as_u64() == Some(0))).map(|(k, _)| k.clone()).unwrap_or_default();
        }
    }
    // Array wrapping: `[` right before the first call, parsing as an array past it.
    let pre = h[..s1].trim_end();
    let mut start = s1;
    let mut end_all = e1;
    if pre.ends_with('[') {
        let lb = pre.len() - 1;
        if let Some((Value::Array(_), end)) = json_at(h, lb) {
            f.tools_array_wrapped = true;
            start = lb;
            end_all = end;
        }
    }
    match tp.two.as_deref() {
        Some(h2) => {
            let (s2, e2, _) = call_object(h2, e1, FUN_B, FUN_A).ok_or("second call object not found")?;
            if !f.tools_array_wrapped {
                end_all = e2;
            }
            let between = &h2[e1..s2];
            if f.tools_array_wrapped {
                f.section_start = h2[..start].trim().to_owned();
                f.section_end = h2[end_all..].trim().to_owned();
                f.call_separator = between.trim().to_owned();
            } else {
                // An opener naming its call (`<tool_call name="f">` before `{"name": "f", …}`):
                // the name is a slot the generator fills per call.
                let (before, between) = (h2[..start].replace(FUN_A, NAME_SLOT), between.replace(FUN_B, NAME_SLOT));
                split_structure(f, &before, Some(&between), &h2[end_all..]);
            }
        }
        None => split_structure(f, &h[..start].replace(FUN_A, NAME_SLOT), None, &h[end_all..]),
    }
    Ok(())
}

/// `s` with every ASCII digit written `0` (the same length).
fn digits_as_zero(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_digit() { '0' } else { c }).collect()
}

/// Splits a common text following an argument value into (value suffix, rest).
fn value_suffix_len(z1: &str, z2: &str) -> usize {
    let cp = common_prefix(z1, z2);
    if has_marker(cp) {
        to_last_marker(cp).len()
    } else {
        // No marker: the suffix is the shared punctuation (e.g. a quote) without whitespace.
        cp.trim_end().len()
    }
}

/// A call id written after the arguments (`{...} <id>abc</id></call>`): its markers, the last
/// marker before the id (with text glued to it) and the first after it, go to the call id; the
/// rest of `tail` is returned.
fn take_post_args_id(t: &mut ToolAnalysis, tail: String) -> String {
    let Some(k) = tail.find(ID_MARK) else { return tail };
    let (before, after) = (&tail[..k], &tail[k + ID_MARK.len()..]);
    let segs = super::segment::segmentize_markers(before);
    let prefix: String = match segs.iter().rposition(|s| s.kind == super::segment::SegmentKind::Marker) {
        Some(i) => segs[i..].iter().map(|s| s.value.as_str()).collect(),
        // Plain words: the line the id is written on, up to it (`Call ID: `).
        None => before.rsplit('\n').next().unwrap_or(before).to_owned(),
    };
    let suffix = match super::segment::first_marker(after) {
        Some((0, m)) => m.to_owned(),
        _ => String::new(),
    };
    t.call_id = ToolCallIdAnalysis { pos: CallIdPosition::PostArgs, prefix: prefix.trim().to_owned(), suffix: suffix.clone() };
    format!("{}{}", &before[..before.len() - prefix.len()], &after[suffix.len()..])
}

/// T2-T7, A1-A2 for tag-based formats.
fn analyze_tagged(t: &mut ToolAnalysis, tp: &ToolProbe) -> Result<(), String> {
    let mode = t.format.mode;
    let h1 = &tp.one;
    let pa1 = h1.find(FUN_A).ok_or("function name missing")?;
    // Text before each function name: the common suffix is per-call start + name prefix.
    let (section_before, ps, after_b, body_a) = match tp.two.as_deref() {
        Some(h2) => {
            let pa = h2.find(FUN_A).ok_or("function name missing")?;
            let pb = h2.find(FUN_B).ok_or("second function name missing")?;
            let p = &h2[..pa];
            let m = &h2[pa + FUN_A.len()..pb];
            // Digits compare equal: a call's index in its opener (`<call n="2" name="`) is part
            // of the opener every call writes.
            let ps_len = lcs_whole_groups(&digits_as_zero(p), &digits_as_zero(m));
            let ps = &p[p.len() - ps_len..];
            // Snap the shared piece to start at a marker.
            let snapped = if has_marker(ps) || open_tail(ps).is_some() { from_first_marker(ps) } else { ps.trim_start() };
            let snapped = drop_closed_head(snapped);
            let cut = snapped.len();
            (p[..p.len() - cut].to_owned(), snapped.to_owned(), h2[pb + FUN_B.len()..].to_owned(), m[..m.len() - cut].to_owned())
        }
        None => {
            let p = &h1[..pa1];
            let (structure, np) = split_name_prefix(p);
            (structure.to_owned(), np.to_owned(), String::new(), h1[pa1 + FUN_A.len()..].to_owned())
        }
    };
    // The name written again inside the call (`to=f<|message|><invoke name="f">`): a slot the
    // generator fills with each call's name, so the markers come out alike for every name.
    let body_a = body_a.replace(FUN_A, NAME_SLOT);
    let after_b = after_b.replace(FUN_B, NAME_SLOT);
    // Per-call start vs name prefix, with a call id possibly between them.
    let (pcs_part, name_prefix) = if let Some(k) = ps.find(ID_MARK) {
        let (np_struct, np) = split_name_prefix(&ps[k + ID_MARK.len()..]);
        t.call_id = ToolCallIdAnalysis {
            pos: CallIdPosition::PreFuncName,
            prefix: ps[..k].rsplit_once(['>', ']']).map_or("", |(_, x)| x).to_owned(),
            suffix: np_struct.trim().to_owned(),
        };
        let pcs_end = k - t.call_id.prefix.len();
        (ps[..pcs_end].to_owned(), np.to_owned())
    } else if tp.two.is_some() {
        let (a, b) = split_name_prefix(&ps);
        (a.to_owned(), b.to_owned())
    } else {
        (String::new(), ps.clone())
    };
    t.function.name_prefix = name_prefix;
    let pcs = pcs_part.trim().to_owned();
    t.format.section_start = section_before.trim().to_owned();
    t.format.per_call_start = pcs;

    // After the name: name suffix (with an id between name and arguments), then arguments.
    let body_b = if tp.two.is_some() { after_b.clone() } else { String::new() };
    let (args1_start, args2_start);
    let arg_name_prefix;
    // The arguments object: JSON, or a Python literal where the template prints the mapping.
    let brace = |s: &str, at: fn(&str, usize) -> Option<(Value, usize)>| -> Option<usize> {
        s.char_indices().filter(|(_, c)| *c == '{').map(|(i, _)| i).find(|&i| at(s, i).is_some_and(|(v, _)| has_arg(&v)))
    };
    let mut args_at: fn(&str, usize) -> Option<(Value, usize)> = json_at;
    if mode == ToolFormat::TagWithJson {
        args1_start = match brace(&body_a, json_at) {
            Some(i) => i,
            None => {
                let i = brace(&body_a, python_at).ok_or("argument object not found")?;
                t.format.uses_python_dicts = true;
                args_at = python_at;
                i
            }
        };
        args2_start = if tp.two.is_some() { brace(&body_b, args_at) } else { None };
        arg_name_prefix = String::new();
    } else {
        let ia = body_a.find(ARG_A).ok_or("argument name missing")?;
        // Arg name prefix: shared text before each argument name within call two.
        let prefix = match tp.two.as_deref() {
            Some(_) => {
                let (ib, vb, ia2) = arg_order(&body_b)?;
                let cs = drop_closed_head(common_suffix(&body_b[..ib], &body_b[vb..ia2]));
                let (_, np) = split_name_prefix(cs);
                if np.is_empty() { from_first_marker(cs).to_owned() } else { np.to_owned() }
            }
            None => split_name_prefix(&body_a[..ia]).1.to_owned(),
        };
        args1_start = ia - prefix.len().min(ia);
        args2_start = arg_order(&body_b).ok().map(|(ib, _, _)| ib - prefix.len().min(ib));
        arg_name_prefix = prefix;
    }
    let x = &body_a[..args1_start];
    if let Some(k) = x.find(ID_MARK) {
        // Id between name and arguments: everything around it belongs to the id markers.
        t.call_id =
            ToolCallIdAnalysis { pos: CallIdPosition::BetweenFuncAndArgs, prefix: x[..k].trim().to_owned(), suffix: x[k + ID_MARK.len()..].trim().to_owned() };
        t.function.name_suffix = String::new();
    } else {
        let (ns, rest) = split_name_suffix(x);
        t.function.name_suffix = ns.to_owned();
        t.arguments.start = rest.trim().to_owned();
        // The same suffix after the second name with another number: a call index.
        if ns.contains(|c: char| c.is_ascii_digit()) && tp.two.is_some() {
            let strip = |s: &str| s.chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
            let ns2: String = body_b.chars().take(ns.chars().count()).collect();
            t.function.indexed = ns2 != ns && strip(&ns2) == strip(ns);
        }
    }
    let _ = args2_start;

    // Arguments and what follows them.
    let (rest1, rest2);
    if mode == ToolFormat::TagWithJson {
        let (_, end1) = args_at(&body_a, args1_start).ok_or("argument object does not parse")?;
        rest1 = body_a[end1..].to_owned();
        rest2 = args2_start.and_then(|s| args_at(&body_b, s)).map(|(_, end2)| body_b[end2..].to_owned());
    } else {
        t.arguments.name_prefix = arg_name_prefix.trim_start().to_owned();
        // A1/A2 on call one: name suffix and value prefix, between `alpha` and `XXXX`.
        let ia = body_a.find(ARG_A).ok_or("argument name missing")?;
        let va = body_a[ia..].find(VAL_A).map(|k| ia + k).ok_or("argument value missing")?;
        let y = &body_a[ia + ARG_A.len()..va];
        let (ns, vp) = if starts_with_marker(y) {
            let n = super::segment::marker_len(y).unwrap_or(0);
            (&y[..n], &y[n..])
        } else {
            split_name_suffix(y)
        };
        t.arguments.name_suffix = ns.to_owned();
        t.arguments.value_prefix = vp.to_owned();
        let z_a = &body_a[va + VAL_A.len()..];
        match tp.two.as_deref() {
            Some(_) => {
                let (_, vb, ia2) = arg_order(&body_b)?;
                let z1 = &body_b[vb..ia2 - arg_name_prefix.len().min(ia2 - vb)];
                let second_val = if body_b[ia2..].starts_with(ARG_A) { VAL_A } else { VAL_B };
                let va2 = body_b[ia2..].find(second_val).map(|k| ia2 + k).ok_or("value missing")?;
                let z2 = &body_b[va2 + second_val.len()..];
                let n = value_suffix_len(z1, z2);
                t.arguments.value_suffix = z1[..n].to_owned();
                t.arguments.separator = z1[n..].trim().to_owned();
                rest1 = z_a[n.min(z_a.len())..].to_owned();
                rest2 = Some(z2[n..].to_owned());
            }
            None => {
                let n = if has_marker(z_a) { first_marker_end(z_a) } else { 0 };
                t.arguments.value_suffix = z_a[..n].to_owned();
                rest1 = z_a[n..].to_owned();
                rest2 = None;
            }
        }
    }
    // rest1 = [args end] close + per-call end + separator; rest2 = the same + section end.
    let tail = match &rest2 {
        Some(r2) => {
            let cp = common_prefix(&rest1, r2);
            // Up to the last marker; without markers, the shared punctuation (`)`).
            let n = if has_marker(cp) { to_last_marker(cp).len() } else { cp.trim_end().len() };
            t.format.call_separator = rest1[n..].trim().to_owned();
            t.format.section_end = r2[n..].trim().to_owned();
            rest1[..n].to_owned()
        }
        None => rest1.clone(),
    };
    let tail = take_post_args_id(t, tail);
    if !has_marker(&tail) && !tail.trim().is_empty() {
        t.function.close = tail.trim().to_owned();
        return Ok(());
    }
    let mut markers: Vec<String> =
        super::segment::segmentize_markers(&tail).into_iter().filter(|s| !s.value.trim().is_empty()).map(|s| s.value.trim().to_owned()).collect();
    if tp.two.is_none() {
        // One call only: the last marker closes the section (or the call).
        if !t.format.per_call_start.is_empty() && !markers.is_empty() {
            t.format.per_call_end = markers.pop().unwrap_or_default();
        }
        t.function.close = markers.concat();
        if !t.format.section_start.is_empty() && t.format.per_call_start.is_empty() && !t.function.close.is_empty() {
            t.format.section_end = std::mem::take(&mut t.function.close);
        }
    } else {
        if !t.format.per_call_start.is_empty() && !markers.is_empty() {
            t.format.per_call_end = markers.pop().unwrap_or_default();
        }
        if !t.arguments.start.is_empty() && !markers.is_empty() {
            t.arguments.end = markers.remove(0);
        }
        t.function.close = markers.concat();
    }
    Ok(())
}

/// Closing markers named after what they close (`</alpha>`, `</foofoo>`): replaced in the
/// renders by one with [`NAME_SLOT`], so the markers come out alike for every name. Returns
/// whether argument and function closes are named.
fn slot_named_closes(tp: &mut ToolProbe) -> (bool, bool) {
    let mut found = [false, false];
    for (k, names) in [[ARG_A, ARG_B], [FUN_A, FUN_B]].iter().enumerate() {
        for (cp, cs) in [("</", ">"), ("[/", "]")] {
            if !tp.one.contains(&format!("{cp}{}{cs}", names[0])) {
                continue;
            }
            found[k] = true;
            let slot = format!("{cp}{NAME_SLOT}{cs}");
            let fix = |s: &mut String| {
                for n in names {
                    *s = s.replace(&format!("{cp}{n}{cs}"), &slot);
                }
            };
            fix(&mut tp.one);
            if let Some(two) = &mut tp.two {
                fix(two);
            }
            break;
        }
    }
    (found[0], found[1])
}

/// A shared piece before a name does not begin with the end of the marker before it: `>\n<`
/// after `<tool_calls>` and after `</alpha>` is the name prefix `<`.
fn drop_closed_head(s: &str) -> &str {
    match s.strip_prefix(['>', ']']) {
        Some(rest) if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() => rest.trim_start(),
        _ => s,
    }
}

/// In the two-argument call: (start of the first argument name, end of its value, start of the
/// second argument name), whichever order the template wrote them in.
fn arg_order(body: &str) -> Result<(usize, usize, usize), String> {
    let ia = body.find(ARG_A).ok_or("argument missing in call two")?;
    let ib = body.find(ARG_B).ok_or("second argument missing in call two")?;
    let (i1, v1, i2) = if ib < ia { (ib, VAL_B, ia) } else { (ia, VAL_A, ib) };
    let v = body[i1..i2].find(v1).map(|k| i1 + k + v1.len()).ok_or("first value missing in call two")?;
    Ok((i1, v, i2))
}

fn first_marker_end(s: &str) -> usize {
    super::segment::first_marker(s).map_or(0, |(i, m)| i + m.len())
}

/// A separator that is a marker the arguments' start ends with and the name prefix continues
/// (`<|open|>` + `argument key="`) opens each argument: it belongs to the name prefix, so that
/// a call without arguments needs none (`<|sep|><|close|>call<|sep|>`).
fn opener_separator_to_names(ar: &mut ToolArgumentsAnalysis) {
    let sep = ar.separator.trim();
    let whole_marker = super::segment::marker_len(sep) == Some(sep.len());
    if sep.is_empty() || !whole_marker || ar.name_prefix.starts_with(char::is_whitespace) || ar.name_prefix.trim().is_empty() {
        return;
    }
    let Some(start) = ar.start.trim_end().strip_suffix(sep) else { return };
    ar.start = start.to_owned();
    ar.name_prefix = format!("{sep}{}", ar.name_prefix);
    ar.separator.clear();
}

/// Values written as quoted literals (`name='value'`): the quotes belong to the value.
fn detect_literal_values(t: &mut ToolAnalysis) {
    let ar = &mut t.arguments;
    let open = format!("{}{}", ar.name_suffix, ar.value_prefix);
    for q in ['\'', '"'] {
        if open.ends_with(q) && ar.value_suffix.starts_with(q) {
            ar.value_is_literal = true;
            ar.literal_quote = q.to_string();
            if ar.value_prefix.ends_with(q) {
                ar.value_prefix.pop();
            } else {
                ar.name_suffix.pop();
            }
            ar.value_suffix.remove(0);
            return;
        }
    }
}

/// Whether the template writes literal strings raw: a value holding a quote and a backslash
/// renders unchanged (a `repr` would escape or requote it).
fn literal_strings_raw(p: &Probe, r: &ReasoningAnalysis, quote: &str) -> bool {
    const TRICKY: &str = "XX'Y\\Z";
    let call = Call { args: vec![(ARG_A, serde_json::json!(TRICKY))], ..Call::first() };
    tool_region(p, vec![call]).is_ok_and(|h| strip_reasoning(&h, r).contains(&format!("{quote}{TRICKY}{quote}")))
}

/// Whether a number is written between the string quotes too (`alpha="987654"`).
fn values_quoted(p: &Probe, r: &ReasoningAnalysis, quote: &str) -> bool {
    tool_region(p, vec![Call::typed()]).is_ok_and(|h| strip_reasoning(&h, r).contains(&format!("{quote}{NUM}{quote}")))
}

/// A3: markers around a non-string value, where they differ from the string case.
fn analyze_typed_values(p: &Probe, t: &mut ToolAnalysis, r: &ReasoningAnalysis) {
    let Ok(h) = tool_region(p, vec![Call::typed()]) else { return };
    let h = strip_reasoning(&h, r);
    let num = NUM.to_string();
    let Some(ia) = h.find(ARG_A) else { return };
    let Some(iv) = h[ia..].find(&num).map(|k| ia + k) else { return };
    let open = &h[ia + ARG_A.len()..iv];
    let after = &h[iv + num.len()..];
    let ar = &mut t.arguments;
    let string_open = format!("{}{}", ar.name_suffix, ar.value_prefix);
    if open == string_open {
        return;
    }
    // What follows the value: the string case's suffix is replaced by this one.
    let close = match after.find(ar.value_suffix.trim()) {
        Some(k) if !ar.value_suffix.trim().is_empty() && after[..k].trim().is_empty() => after[..k + ar.value_suffix.trim().len()].to_owned(),
        // The string case's wrapper closed first (`]]></value>`): the non-string value closes
        // with the rest (`</value>`), the longest tail of that suffix the value is followed by.
        _ => {
            let vs = ar.value_suffix.trim();
            let rest = after.trim_start();
            let tail = vs.char_indices().map(|(i, _)| &vs[i..]).find(|t| has_marker(t) && rest.starts_with(t));
            tail.map_or(String::new(), |t| after[..after.len() - rest.len() + t.len()].to_owned())
        }
    };
    ar.json_value_open = Some(open.to_owned());
    ar.json_value_close = Some(close);
    // An opener ending in a marker, or in punctuation it shares with the string's opener
    // (`" type="number">` and `" type="string">`), may name the value's type: each type's
    // opener is what precedes that ending in its own render.
    let shared_end = common_suffix(open, &string_open);
    let last = match super::segment::last_marker(open).filter(|(k, m)| k + m.len() == open.len()) {
        Some((_, m)) => m,
        None if !shared_end.trim().is_empty() && !shared_end.contains(|c: char| c.is_alphanumeric() || c == '\n') => shared_end,
        None => return,
    };
    for (kind, value) in
        [("boolean", serde_json::json!(true)), ("null", Value::Null), ("object", serde_json::json!({"bravo": 1})), ("array", serde_json::json!([1]))]
    {
        let call = Call { args: vec![(ARG_A, value)], ..Call::typed() };
        let Ok(h) = tool_region(p, vec![call]) else { continue };
        let h = strip_reasoning(&h, r);
        let Some(ia) = h.find(ARG_A).map(|k| k + ARG_A.len()) else { continue };
        let Some(k) = h[ia..].find(last) else { continue };
        let typed = &h[ia..ia + k + last.len()];
        if typed != open && !typed.contains('\n') {
            ar.json_value_opens.insert(kind.to_owned(), typed.to_owned());
        }
    }
    if !ar.json_value_opens.is_empty() {
        ar.json_value_opens.insert("number".to_owned(), open.to_owned());
    }
}

/// The text a template writes for the value of `alpha` in a call `foofoo(alpha=value)`: the
/// render less what it shares with the render of `alpha=987654` before and after the number.
fn value_text(p: &Probe, r: &ReasoningAnalysis, number: &str, value: serde_json::Value) -> Option<String> {
    let call = Call { args: vec![(ARG_A, value)], ..Call::typed() };
    let h = strip_reasoning(&tool_region(p, vec![call]).ok()?, r);
    let start = lcp(&h, number);
    let end = h.len() - lcs(&h[start..], &number[start..]);
    (start < end).then(|| h[start..end].to_owned())
}

/// A4: how nested values are written, from the renders of `["XXXX", "YYYY"]`, `{"bravo":
/// "XXXX"}` and `[true, false, null]`. `None` when they do not fit the shape `[a<sep>b]`,
/// `{<key>:<value>}` (so nothing is learned).
pub fn derive_value_syntax(list: &str, map: &str, literals: &str) -> Option<ValueSyntax> {
    // `[` open XXXX close sep open YYYY close `]`.
    let inner = list.trim().strip_prefix('[')?.strip_suffix(']')?;
    let ix = inner.find(VAL_A)?;
    let iy = inner.find(VAL_B)?;
    let (string_open, string_close) = (&inner[..ix], &inner[iy + VAL_B.len()..]);
    let between = inner[ix + VAL_A.len()..iy].strip_prefix(string_close)?.strip_suffix(string_open)?;
    let item_separator = between.to_owned();
    // `{` key_open bravo key_close key_sep open XXXX close `}`.
    let inner = map.trim().strip_prefix('{')?.strip_suffix('}')?;
    let ib = inner.find(ARG_B)?;
    let key_open = &inner[..ib];
    let rest = inner[ib + ARG_B.len()..].strip_suffix(string_close)?.strip_suffix(VAL_A)?.strip_suffix(string_open)?;
    let key_close = if key_open.is_empty() {
        ""
    } else if rest.starts_with(key_open) {
        key_open
    } else if rest.starts_with(string_close) {
        string_close
    } else {
        return None;
    };
    let key_separator = rest[key_close.len()..].to_owned();
    if key_separator.trim().is_empty() || item_separator.trim().is_empty() {
        return None;
    }
    // `[` true sep false sep null `]`.
    let inner = literals.trim().strip_prefix('[')?.strip_suffix(']')?;
    let lits: Vec<&str> = inner.split(item_separator.as_str()).collect();
    let [t, f, n] = lits.as_slice() else { return None };
    if [t, f, n].iter().any(|l| l.is_empty() || l.contains(char::is_whitespace)) {
        return None;
    }
    Some(ValueSyntax {
        string_open: string_open.to_owned(),
        string_close: string_close.to_owned(),
        // Escaping is what JSON (and Python reprs) do; other quotes are raw text.
        string_escapes: string_open == string_close && (string_open == "\"" || string_open == "'"),
        key_open: key_open.to_owned(),
        key_close: key_close.to_owned(),
        key_separator,
        item_separator,
        true_literal: (*t).to_owned(),
        false_literal: (*f).to_owned(),
        null_literal: (*n).to_owned(),
        sorted_keys: false,
    })
}

/// A4 for element-style values: from the renders of `["XXXX", "YYYY"]`, `{"bravo": "XXXX"}`
/// and `[true, false, null]` written as `<item>XXXX</item><item>YYYY</item>`,
/// `<bravo>XXXX</bravo>` and `<item>True</item>...`: the tag shape, the item element's name
/// and the scalar words. `None` when they are not written so.
pub fn derive_element_syntax(list: &str, map: &str, literals: &str) -> Option<ElementSyntax> {
    // open_prefix bravo open_suffix XXXX close_prefix bravo close_suffix.
    let m = map.trim();
    let ib = m.find(ARG_B)?;
    let open_prefix = &m[..ib];
    let rest = &m[ib + ARG_B.len()..];
    let iv = rest.find(VAL_A)?;
    let open_suffix = rest[..iv].trim_end();
    let close = rest[iv + VAL_A.len()..].trim_start();
    let ic = close.find(ARG_B)?;
    let (close_prefix, close_suffix) = (&close[..ic], &close[ic + ARG_B.len()..]);
    let bracket = |s: &str| !s.is_empty() && !s.contains(char::is_alphanumeric) && !s.contains(char::is_whitespace);
    // Both tags may start with one token the template writes before every element
    // (`]<]minimax[>[<bravo>`, `]<]minimax[>[</bravo>`): the same in both, before the brackets.
    let shared = &open_prefix[..super::text::lcp(open_prefix, close_prefix)];
    let token = shared.trim_end_matches(|c: char| !c.is_alphanumeric());
    if token.contains(char::is_whitespace)
        || ![&open_prefix[token.len()..], open_suffix, &close_prefix[token.len()..], close_suffix].iter().all(|s| bracket(s))
        || open_prefix == close_prefix
    {
        return None;
    }
    let e = |item: &str| ElementSyntax {
        open_prefix: open_prefix.to_owned(),
        open_suffix: open_suffix.to_owned(),
        close_prefix: close_prefix.to_owned(),
        close_suffix: close_suffix.to_owned(),
        item: item.to_owned(),
        ..ElementSyntax::default()
    };
    // The items: open(item) XXXX close(item), open(item) YYYY close(item).
    let l = list.trim().strip_prefix(open_prefix)?;
    let item = &l[..l.find(open_suffix)?];
    if item.is_empty() || !item.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        return None;
    }
    let mut syntax = e(item);
    let items = |s: &str| -> Option<Vec<String>> {
        let (open, close) = (syntax.open(item), syntax.close(item));
        let mut out = Vec::new();
        let mut rest = s.trim();
        while !rest.is_empty() {
            let r = rest.strip_prefix(open.as_str())?;
            let k = r.find(close.as_str())?;
            out.push(r[..k].trim().to_owned());
            rest = r[k + close.len()..].trim_start();
        }
        Some(out)
    };
    if items(list)? != [VAL_A, VAL_B] {
        return None;
    }
    let lits = items(literals)?;
    let [t, f, n] = lits.as_slice() else { return None };
    if [t, f].iter().any(|l| l.is_empty() || l.contains(char::is_whitespace)) || n.contains(char::is_whitespace) {
        return None;
    }
    // A template that writes nothing for null (an empty element) gives no word to read back.
    let n = if n.is_empty() { "null".to_owned() } else { n.clone() };
    (syntax.true_literal, syntax.false_literal, syntax.null_literal) = (t.clone(), f.clone(), n);
    Some(syntax)
}

/// A4: the value syntax of nested values; JSON (the default) when the template writes JSON or
/// Python literals, which the JSON and Python parsers read.
fn analyze_value_syntax(p: &Probe, t: &mut ToolAnalysis, r: &ReasoningAnalysis) {
    use serde_json::json;
    let Ok(h) = tool_region(p, vec![Call::typed()]) else { return };
    let number = strip_reasoning(&h, r);
    let text = |v: Value| value_text(p, r, &number, v);
    let (Some(list), Some(map), Some(lits)) = (text(json!([VAL_A, VAL_B])), text(json!({ ARG_B: VAL_A })), text(json!([true, false, null]))) else {
        return;
    };
    let reads_as_literal = |s: &str| serde_json::from_str::<Value>(s).is_ok() || s.trim_start().starts_with(['{', '[']) && s.contains('\'');
    if [&list, &map].iter().all(|s| reads_as_literal(s)) {
        return;
    }
    if let Some(e) = derive_element_syntax(&list, &map, &lits) {
        t.arguments.elements = Some(e);
        return;
    }
    if let Some(mut vs) = derive_value_syntax(&list, &map, &lits).filter(|vs| !vs.is_json() && vs.string_open != "'") {
        // Keys given out of order: written as given, or sorted?
        let two = text(json!({ ARG_B: VAL_A, ARG_A: VAL_B })).unwrap_or_default();
        vs.sorted_keys = matches!((two.find(ARG_A), two.find(ARG_B)), (Some(a), Some(b)) if a < b);
        t.arguments.value_syntax = vs;
    }
}

/// A recipient as headers name it: a word (`user`, `all`, `get_weather`, `functions.f`).
fn is_recipient(w: &str) -> bool {
    !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The JSON arguments object right after a call's name (after the header suffix): (suffix
/// length, end of the object).
fn args_after_name(rest: &str) -> Option<(usize, usize)> {
    rest.char_indices().filter(|(_, c)| *c == '{').find_map(|(i, _)| json_at(rest, i).filter(|(v, _)| has_arg(v)).map(|(_, e)| (i, e)))
}

/// Learns addressed parts from the turns the model writes (the renders less the generation
/// prompt): `content` (content only), `one` and `two` (one and two calls), `content_call`
/// (content and one call), `reasoning` (reasoning and content); `prompt` is the generation
/// prompt. The call's header is `prefix NAME suffix` before its JSON arguments; the content is
/// addressed alike (`prefix RECIPIENT suffix`) or this is no addressed structure. What comes
/// between two parts (the second call after the first, or a call after content) less the
/// header prefix is the part end, then the part start: the longest piece of it, from a marker,
/// the generation prompt ends with (the prompt opens the first part). Where the call's body is
/// tagged (`json_body` false), the header suffix is what follows the content's recipient, and
/// the call must continue with it.
pub fn learn_parts(
    prompt: &str,
    content: &str,
    one: &str,
    two: Option<&str>,
    content_call: Option<&str>,
    reasoning: Option<&str>,
    json_body: bool,
) -> Option<AddressedParts> {
    let i = one.find(FUN_A)?;
    let prefix = one[..i].trim_start();
    let rest = &one[i + FUN_A.len()..];
    let suffix = match args_after_name(rest) {
        Some((j, _)) => &rest[..j],
        None if !json_body => {
            let header = content[..content.find(CONTENT)?].trim_start().strip_prefix(prefix)?;
            let suffix = header.trim_start_matches(|c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
            (!suffix.trim().is_empty() && rest.starts_with(suffix)).then_some(suffix)?
        }
        None => return None,
    };
    let word_between = |h: &str| -> Option<String> {
        let h = h.trim_start();
        let w = h.strip_prefix(prefix)?.strip_suffix(suffix)?;
        is_recipient(w).then(|| w.to_owned())
    };
    let content_recipient = word_between(&content[..content.find(CONTENT)?])?;
    if content_recipient == FUN_A {
        return None;
    }
    // Between two parts: the second call after the first, or a call after content.
    let between = two
        .and_then(|t| {
            let i = t.find(FUN_A)?;
            let (_, e) = args_after_name(&t[i + FUN_A.len()..])?;
            let end = i + FUN_A.len() + e;
            Some(t[end..t[end..].find(FUN_B)? + end].to_owned())
        })
        .or_else(|| {
            let t = content_call?;
            let c = t.find(CONTENT)? + CONTENT.len();
            Some(t[c..c + t[c..].find(FUN_A)?].to_owned())
        })?;
    let x = between.strip_suffix(prefix)?;
    if x.contains(CONTENT) || x.contains(FUN_A) {
        return None;
    }
    // The part start: from the start or a marker of `x`, what the generation prompt ends with.
    let gp = prompt.trim_end();
    let k = x
        .char_indices()
        .map(|(k, _)| k)
        .filter(|&k| k == 0 || super::segment::marker_len(&x[k..]).is_some())
        .find(|&k| !x[k..].trim().is_empty() && gp.ends_with(x[k..].trim()));
    let (part_end, part_start) = match k {
        Some(k) => (&x[..k], x[k..].trim()),
        None => (x, ""),
    };
    // Something must mark the parts: a header of more than a line break, or a part start.
    if prefix.trim().is_empty() && suffix.trim().is_empty() && part_start.is_empty() {
        return None;
    }
    let reasoning_recipient = reasoning
        .and_then(|t| {
            let r = t.find(REASONING)?;
            let c = t.find(CONTENT).filter(|&c| c > r)?;
            t[r..c].contains(&format!("{prefix}{content_recipient}{suffix}")).then_some(())?;
            word_between(&t[..r])
        })
        .filter(|w| *w != content_recipient)
        .unwrap_or_default();
    Some(AddressedParts {
        recipient_prefix: prefix.to_owned(),
        recipient_suffix: suffix.to_owned(),
        content_recipient,
        reasoning_recipient,
        part_end: part_end.to_owned(),
        part_start: part_start.to_owned(),
    })
}

/// Addressed parts of the template ([`learn_parts`] on its renders), for a template whose
/// calls are a name and JSON arguments (`json_body`) or tagged arguments.
pub fn analyze_parts(p: &Probe, json_body: bool) -> Option<AddressedParts> {
    let prompt = p.render_prompt(Some(true)).ok()?;
    let turn = |a: &Asst| -> Option<String> { p.render_asst(a).ok()?.strip_prefix(prompt.as_str()).map(str::to_owned) };
    let content = turn(&Asst::content(CONTENT))?;
    let one = turn(&Asst::calls(vec![Call::first()]))?;
    let two = turn(&Asst::calls(vec![Call::first(), Call::second()])).filter(|t| t.contains(FUN_B));
    let mut both = Asst::calls(vec![Call::first()]);
    both.content = Some(CONTENT.to_owned());
    let content_call = turn(&both);
    let reasoning = turn(&Asst::content(CONTENT).with_reasoning(REASONING));
    let gp = calculate_diff_split(&p.render(&p.ctx(p.base(), false, Some(true))).ok()?, &prompt).right;
    learn_parts(&gp, &content, &one, two.as_deref(), content_call.as_deref(), reasoning.as_deref(), json_body)
}

/// Runs the tool phases.
pub fn analyze_tools(p: &mut Probe, r: &ReasoningAnalysis, caps: &mut Capabilities) -> Result<ToolAnalysis, String> {
    let mut t = ToolAnalysis::default();
    let Some(tp) = probe_tools(p, r) else {
        return Ok(t);
    };
    caps.supports_tool_calls = true;
    caps.supports_object_arguments = tp.object_args;
    caps.null_content_with_calls = p.null_content_with_calls;
    caps.supports_parallel_tool_calls = tp.two.is_some();
    t.format.mode = classify(&tp.one);
    let mut tp = tp;
    match t.format.mode {
        ToolFormat::JsonNative => analyze_json(&mut t, &tp)?,
        _ => {
            slot_named_closes(&mut tp);
            analyze_tagged(&mut t, &tp)?;
        }
    }
    let section_end = t.format.section_end.trim();
    t.format.section_end_optional = !section_end.is_empty() && !tp.one.contains(section_end);
    // Where content goes when a message has both.
    let mut both = Asst::calls(vec![Call::first()]);
    both.content = Some(CONTENT.to_owned());
    if let Ok(s) = p.render_asst(&both)
        && let (Some(c), Some(f)) = (s.rfind(CONTENT), s.rfind(FUN_A))
    {
        t.format.content_after_calls = c > f;
        t.format.calls_after_content = c < f;
    }
    if t.format.mode == ToolFormat::TagWithTagged {
        opener_separator_to_names(&mut t.arguments);
        detect_literal_values(&mut t);
        if t.arguments.value_is_literal {
            let quote = t.arguments.literal_quote.clone();
            t.arguments.literal_strings_raw = literal_strings_raw(p, r, &quote);
            t.arguments.values_quoted = values_quoted(p, r, &quote);
        }
        if !t.arguments.value_is_literal {
            analyze_typed_values(p, &mut t, r);
            analyze_value_syntax(p, &mut t, r);
        }
    }
    t.arguments.omits_null = omits_null(p);
    Ok(t)
}

/// Whether the template skips null arguments: a call writes its second argument's name once
/// more when the argument holds a string than when it holds null, the first argument's value
/// written in both (two renders, compared whole: the tool list names the argument too).
fn omits_null(p: &Probe) -> bool {
    let render = |b: Value| p.render_asst(&Asst::calls(vec![Call { args: vec![(ARG_B, b), (ARG_A, serde_json::json!(VAL_A))], ..Call::second() }])).ok();
    match (render(serde_json::json!(VAL_B)), render(Value::Null)) {
        (Some(with), Some(null)) => with.contains(VAL_A) && null.contains(VAL_A) && with.matches(ARG_B).count() > null.matches(ARG_B).count(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(one: &str, two: Option<&str>) -> ToolAnalysis {
        let tp = ToolProbe { one: normalize_ids(one), two: two.map(normalize_ids), has_ids: one.contains(ID_A), object_args: true };
        let mut t = ToolAnalysis::default();
        t.format.mode = classify(&tp.one);
        match t.format.mode {
            ToolFormat::JsonNative => analyze_json(&mut t, &tp).unwrap(),
            _ => analyze_tagged(&mut t, &tp).unwrap(),
        }
        t
    }

    #[test]
    fn hermes_json() {
        let c1 = r#"{"name": "foofoo", "arguments": {"alpha": "XXXX"}}"#;
        let c2 = r#"{"name": "barbar", "arguments": {"bravo": "YYYY", "alpha": "XXXX"}}"#;
        let t = run(&format!("<tool_call>\n{c1}\n</tool_call>"), Some(&format!("<tool_call>\n{c1}\n</tool_call>\n<tool_call>\n{c2}\n</tool_call>")));
        assert_eq!(t.format.mode, ToolFormat::JsonNative);
        assert_eq!(t.format.per_call_start, "<tool_call>");
        assert_eq!(t.format.per_call_end, "</tool_call>");
        assert_eq!(t.format.section_start, "");
        assert_eq!(t.format.name_field, "name");
        assert_eq!(t.format.args_field, "arguments");
    }

    #[test]
    fn qwen_coder_tagged() {
        let c1 = "<tool_call>\n<function=foofoo>\n<parameter=alpha>\nXXXX\n</parameter>\n</function>\n</tool_call>";
        let c2 = "<tool_call>\n<function=barbar>\n<parameter=bravo>\nYYYY\n</parameter>\n<parameter=alpha>\nXXXX\n</parameter>\n</function>\n</tool_call>";
        let t = run(c1, Some(&format!("{c1}\n{c2}")));
        assert_eq!(t.format.mode, ToolFormat::TagWithTagged);
        assert_eq!(t.format.per_call_start, "<tool_call>");
        assert_eq!(t.format.per_call_end, "</tool_call>");
        assert_eq!(t.function.name_prefix, "<function=");
        assert_eq!(t.function.name_suffix, ">");
        assert_eq!(t.function.close, "</function>");
        assert_eq!(t.arguments.name_prefix, "<parameter=");
        assert_eq!(t.arguments.name_suffix, ">");
        assert_eq!(t.arguments.value_prefix, "\n");
        assert_eq!(t.arguments.value_suffix, "\n</parameter>");
    }

    #[test]
    fn value_syntax_from_renders() {
        let vs = derive_value_syntax("[<|\"|>XXXX<|\"|>,<|\"|>YYYY<|\"|>]", "{bravo:<|\"|>XXXX<|\"|>}", "[true,false,None]").unwrap();
        assert_eq!((vs.string_open.as_str(), vs.string_close.as_str()), ("<|\"|>", "<|\"|>"));
        assert_eq!((vs.key_open.as_str(), vs.key_close.as_str(), vs.key_separator.as_str()), ("", "", ":"));
        assert_eq!(vs.item_separator, ",");
        assert_eq!((vs.true_literal.as_str(), vs.false_literal.as_str(), vs.null_literal.as_str()), ("true", "false", "None"));
        assert!(!vs.string_escapes && !vs.is_json());
        let json = derive_value_syntax(r#"["XXXX", "YYYY"]"#, r#"{"bravo": "XXXX"}"#, "[true, false, null]").unwrap();
        assert!(json.is_json(), "{json:?}");
        // Keys quoted like strings, another quote pair.
        let q = derive_value_syntax("[«XXXX», «YYYY»]", "{«bravo» => «XXXX»}", "[yes, no, nil]").unwrap();
        assert_eq!((q.key_open.as_str(), q.key_close.as_str(), q.key_separator.as_str()), ("«", "»", " => "));
        assert_eq!(q.null_literal, "nil");
        // Analyses cached before the field existed read as JSON.
        let mut old = serde_json::to_value(ToolArgumentsAnalysis::default()).unwrap();
        old.as_object_mut().unwrap().remove("value_syntax");
        assert!(serde_json::from_value::<ToolArgumentsAnalysis>(old).unwrap().value_syntax.is_json());
        // Not the expected shape: nothing learned.
        assert_eq!(derive_value_syntax("XXXX,YYYY", "{bravo:XXXX}", "[true,false,null]"), None);
        assert_eq!(derive_value_syntax("[XXXX YYYY]", "{bravo:XXXX}", "[true,false,null]"), None);
    }

    fn analyzed(name: &str) -> TemplateAnalysis {
        let path = crate::analysis::test_util::template_path(name);
        let t = crate::analysis::test_util::template(&std::fs::read_to_string(path).unwrap()).unwrap();
        crate::analysis::analyze(&t).unwrap()
    }

    #[test]
    fn value_syntax_of_templates() {
        // Gemma 4's syntax: `<|"|>` strings, bare sorted keys.
        let vs = analyzed("literal-values").tools.arguments.value_syntax;
        assert_eq!((vs.string_open.as_str(), vs.string_close.as_str()), ("<|\"|>", "<|\"|>"));
        assert_eq!((vs.key_open.as_str(), vs.key_separator.as_str(), vs.item_separator.as_str()), ("", ":", ","));
        assert_eq!((vs.true_literal.as_str(), vs.false_literal.as_str()), ("true", "false"));
        assert!(!vs.is_json());
        assert!(vs.sorted_keys);
        // Templates writing nested values as JSON keep the default.
        for name in ["tagged-raw-values", "typed-openers", "cdata-words", "sentinels-words"] {
            assert_eq!(analyzed(name).tools.arguments.value_syntax, ValueSyntax::default(), "{name}");
        }
    }

    /// Tags spelled with special tokens and attributes (`<|tag|>arg key="city" type="string"<|gt|>`):
    /// whole groups end the reasoning, the answer's end stays out of the tool section, each
    /// argument's opener starts with the tag marker (a call without arguments has none), and
    /// the openers of non-strings are learned per JSON type.
    #[test]
    fn attribute_tags() {
        let a = analyzed("attribute-tags");
        assert_eq!((a.reasoning.start.as_str(), a.reasoning.end.as_str()), ("<|tag|>think<|gt|>", "<|endtag|>think<|gt|>"));
        assert_eq!((a.content.start.as_str(), a.content.end.as_str()), ("<|tag|>answer<|gt|>", "<|endtag|>answer<|gt|>"));
        assert_eq!(a.tools.format.section_start, "<|tag|>calls<|gt|>");
        let ar = &a.tools.arguments;
        assert_eq!((ar.start.as_str(), ar.name_prefix.as_str(), ar.separator.as_str()), ("<|gt|>", "<|tag|>arg key=\"", ""));
        let types: Vec<&str> = ar.json_value_opens.keys().map(String::as_str).collect();
        assert_eq!(types, ["array", "boolean", "null", "number", "object"]);
        assert_eq!(ar.json_value_opens["boolean"], "\" type=\"boolean\"<|gt|>");
        // Where one opener serves every non-string type, none is learned per type.
        assert!(analyzed("typed-openers").tools.arguments.json_value_opens.is_empty());
    }

    /// Where a message's content goes next to its calls: before (`On it.[{...}]`), after, or
    /// dropped.
    #[test]
    fn content_beside_calls() {
        let f = analyzed("json-list-after-content").tools.format;
        assert!(f.calls_after_content && !f.content_after_calls);
        let f = analyzed("content-after-calls-special").tools.format;
        assert!(f.content_after_calls && !f.calls_after_content);
        assert!(f.content_open_with_calls.is_empty());
    }

    /// Content a message with calls writes between the two markers of the section start
    /// (`<|python_start|>On it.<|python_end|>{...}`): the first opens the content, the
    /// second alone starts the section.
    #[test]
    fn content_between_the_section_start_markers() {
        let f = analyzed("content-in-call-markers").tools.format;
        assert_eq!((f.content_open_with_calls.as_str(), f.section_start.as_str()), ("<|python_start|>", "<|python_end|>"));
    }

    /// Parts opened by markers and closed by none (`<|plan|>…<|call|>{…}`): the call's opener
    /// ends reasoning as the content's does; where an end marker closes reasoning before calls,
    /// it does not.
    #[test]
    fn calls_that_end_reasoning() {
        let f = analyzed("parts-opened-by-markers").tools.format;
        assert!(f.calls_end_reasoning, "{f:?}");
        for name in ["think-brackets", "attribute-tags"] {
            assert!(!analyzed(name).tools.format.calls_end_reasoning, "{name}");
        }
    }

    /// Values written between the string quotes whatever their type (`days="3"`): learned
    /// with the quote; literal values written as themselves (`days=3`) are not.
    #[test]
    fn quoted_values() {
        let a = analyzed("quoted-python-values").tools.arguments;
        assert!(a.value_is_literal && a.values_quoted && a.literal_strings_raw, "{a:?}");
        assert_eq!(a.literal_quote, "\"");
        let a = analyzed("python-calls-special").tools.arguments;
        assert!(a.value_is_literal && !a.values_quoted, "{a:?}");
        assert_eq!(a.literal_quote, "'");
    }

    /// A template printing the arguments mapping as it is writes Python's repr: the object is
    /// found as a Python literal, and only where JSON does not parse.
    #[test]
    fn python_repr_arguments() {
        for name in ["python-dict-args-special", "python-dict-args-words"] {
            let a = analyzed(name);
            assert_eq!(a.tools.format.mode, ToolFormat::TagWithJson, "{name}");
            assert!(a.tools.format.uses_python_dicts, "{name}");
        }
        assert_eq!(analyzed("python-dict-args-words").tools.function.name_prefix, "CALL ");
        // Inside JSON the template writes itself around them.
        let a = analyzed("json-call-python-args");
        assert_eq!((a.tools.format.mode, a.tools.format.args_field.as_str()), (ToolFormat::JsonNative, "arguments"));
        assert!(a.tools.format.uses_python_dicts);
        assert!(!analyzed("openai-shaped-call").tools.format.uses_python_dicts);
        for name in ["cdata-words", "sentinels-words", "envelopes-special"] {
            assert!(!analyzed(name).tools.format.uses_python_dicts, "{name}");
        }
    }

    #[test]
    fn addressed_parts_from_turns() {
        let (c1, c2) = (r#"{"alpha": "XXXX"}"#, r#"{"bravo": "YYYY", "alpha": "XXXX"}"#);
        // Special tokens, reasoning a part of its own.
        let p = learn_parts(
            "<|start|>assistant\n",
            "to=user<|message|>CONTENT_NEEDLE_TEXT<|end|><|return|>\n",
            &format!("to=foofoo<|message|>{c1}<|end|><|return|>\n"),
            Some(&format!("to=foofoo<|message|>{c1}<|end|>to=barbar<|message|>{c2}<|end|><|return|>\n")),
            None,
            Some("to=thoughts<|message|>REASONING_NEEDLE_TEXT<|end|>to=user<|message|>CONTENT_NEEDLE_TEXT<|end|><|return|>\n"),
            true,
        )
        .unwrap();
        assert_eq!((p.recipient_prefix.as_str(), p.recipient_suffix.as_str()), ("to=", "<|message|>"));
        assert_eq!((p.content_recipient.as_str(), p.reasoning_recipient.as_str()), ("user", "thoughts"));
        assert_eq!((p.part_end.as_str(), p.part_start.as_str()), ("<|end|>", ""));
        // Words, one part a line.
        let p = learn_parts(
            "### assistant\n",
            "@user: CONTENT_NEEDLE_TEXT\n\n",
            &format!("@foofoo: {c1}\n\n"),
            Some(&format!("@foofoo: {c1}\n@barbar: {c2}\n\n")),
            None,
            None,
            true,
        )
        .unwrap();
        assert_eq!((p.recipient_prefix.as_str(), p.recipient_suffix.as_str(), p.content_recipient.as_str()), ("@", ": ", "user"));
        assert_eq!((p.part_end.as_str(), p.part_start.as_str(), p.reasoning_recipient.as_str()), ("\n", "", ""));
        // The prompt opens the first part (`>>>`); content with a call gives the part start.
        let p = learn_parts(
            "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
            "all\nCONTENT_NEEDLE_TEXT<|eot_id|>",
            &format!("foofoo\n{c1}<|eot_id|>"),
            None,
            Some(&format!("all\nCONTENT_NEEDLE_TEXT>>>foofoo\n{c1}<|eot_id|>")),
            None,
            true,
        )
        .unwrap();
        assert_eq!((p.recipient_prefix.as_str(), p.recipient_suffix.as_str(), p.content_recipient.as_str()), ("", "\n", "all"));
        assert_eq!((p.part_end.as_str(), p.part_start.as_str()), ("", ">>>"));
        // A tagged body: the header suffix is what follows the content's recipient, and the
        // call continues with it.
        let p = learn_parts(
            "<|start|>assistant",
            " to=user<|message|>CONTENT_NEEDLE_TEXT<|eot|>",
            " to=foofoo<|message|><calls><invoke name=\"foofoo\"><arg name=\"alpha\">XXXX</arg></invoke></calls><|eom|>",
            None,
            Some(" to=user<|message|>CONTENT_NEEDLE_TEXT<|eom|><|start|>assistant to=foofoo<|message|><calls><invoke name=\"foofoo\"></invoke></calls><|eom|>"),
            None,
            false,
        )
        .unwrap();
        assert_eq!((p.recipient_prefix.as_str(), p.recipient_suffix.as_str(), p.content_recipient.as_str()), ("to=", "<|message|>", "user"));
        assert_eq!((p.part_end.as_str(), p.part_start.as_str()), ("<|eom|>", "<|start|>assistant"));
        // Content not addressed like calls (channels, harmony), or plain content: no parts.
        assert_eq!(
            learn_parts(
                "<|start|>assistant",
                "<|channel|>final<|message|>CONTENT_NEEDLE_TEXT<|return|>",
                &format!(" to=functions.foofoo<|channel|>commentary json<|message|>{c1}<|call|>"),
                None,
                None,
                None,
                true
            ),
            None
        );
        assert_eq!(
            learn_parts(
                "<|assistant|>",
                "CONTENT_NEEDLE_TEXT<|end|>",
                &format!("<tool_call>foofoo\n{c1}</tool_call><|end|>"),
                Some(&format!("<tool_call>foofoo\n{c1}</tool_call><tool_call>barbar\n{c2}</tool_call><|end|>")),
                None,
                None,
                true
            ),
            None
        );
        // Cached analyses from before the field load without parts.
        let mut old = serde_json::to_value(TemplateAnalysis::default()).unwrap();
        old.as_object_mut().unwrap().remove("parts");
        assert_eq!(serde_json::from_value::<TemplateAnalysis>(old).unwrap().parts, None);
    }

    #[test]
    fn element_syntax_from_renders() {
        // nested-tags-special: elements inline, Python words.
        let e =
            derive_element_syntax("<item>XXXX</item><item>YYYY</item>", "<bravo>XXXX</bravo>", "<item>True</item><item>False</item><item>None</item>").unwrap();
        assert_eq!((e.open("k"), e.close("k"), e.item.as_str()), ("<k>".to_owned(), "</k>".to_owned(), "item"));
        assert_eq!((e.true_literal.as_str(), e.false_literal.as_str(), e.null_literal.as_str()), ("True", "False", "None"));
        // nested-tags-words: one element a line.
        let e = derive_element_syntax(
            "\n<item>XXXX</item>\n<item>YYYY</item>\n",
            "\n<bravo>XXXX</bravo>\n",
            "\n<item>true</item>\n<item>false</item>\n<item>null</item>\n",
        )
        .unwrap();
        assert_eq!(e, ElementSyntax::default());
        // A token of the template's own before every tag, and nothing written for null.
        let t = |s: &str| s.replace('^', "%%el%%");
        let e = derive_element_syntax(
            &t("^<item>XXXX^</item>^<item>YYYY^</item>"),
            &t("^<bravo>XXXX^</bravo>"),
            &t("^<item>true^</item>^<item>false^</item>^<item>^</item>"),
        )
        .unwrap();
        assert_eq!((e.open("k"), e.close("k"), e.null_literal.as_str()), (t("^<k>"), t("^</k>"), "null"));
        // Not when the token differs between the tags, or holds a space.
        assert_eq!(derive_element_syntax("a<item>XXXX</item>", "a<bravo>XXXXb</bravo>", "<item>true</item>"), None);
        assert_eq!(
            derive_element_syntax(
                "el x<item>XXXXel x</item>el x<item>YYYYel x</item>",
                "el x<bravo>XXXXel x</bravo>",
                "el x<item>trueel x</item>el x<item>falseel x</item>el x<item>nullel x</item>"
            ),
            None
        );
        // JSON, Gemma's literals, Python reprs: not elements.
        assert_eq!(derive_element_syntax(r#"["XXXX", "YYYY"]"#, r#"{"bravo": "XXXX"}"#, "[true, false, null]"), None);
        assert_eq!(derive_element_syntax("[<|\"|>XXXX<|\"|>,<|\"|>YYYY<|\"|>]", "{bravo:<|\"|>XXXX<|\"|>}", "[true,false,None]"), None);
        assert_eq!(derive_element_syntax("['XXXX', 'YYYY']", "{'bravo': 'XXXX'}", "[True, False, None]"), None);
        // Analyses cached before the field existed load without it.
        let mut old = serde_json::to_value(ToolArgumentsAnalysis::default()).unwrap();
        old.as_object_mut().unwrap().remove("elements");
        assert_eq!(serde_json::from_value::<ToolArgumentsAnalysis>(old).unwrap().elements, None);
    }

    #[test]
    fn nested_tag_templates() {
        let slot = format!("</{NAME_SLOT}>");
        let t = analyzed("nested-tags-special").tools;
        assert_eq!((t.format.per_call_start.as_str(), t.format.per_call_end.as_str()), ("<|tool_call_start|>", "<|tool_call_end|>"));
        assert_eq!((t.function.name_prefix.as_str(), t.function.name_suffix.as_str(), t.function.close.as_str()), ("<invoke name=\"", "\">", "</invoke>"));
        assert_eq!((t.arguments.name_prefix.as_str(), t.arguments.name_suffix.as_str(), t.arguments.value_suffix.as_str()), ("<", ">", slot.as_str()));
        let e = t.arguments.elements.unwrap();
        assert_eq!((e.item.as_str(), e.true_literal.as_str(), e.null_literal.as_str()), ("item", "True", "None"));
        let a = analyzed("nested-tags-words");
        let t = &a.tools;
        assert_eq!((t.format.section_start.as_str(), t.format.section_end.as_str()), ("<tool_calls>", "</tool_calls>"));
        assert_eq!((t.function.name_prefix.as_str(), t.function.name_suffix.as_str(), t.function.close.as_str()), ("<", ">", slot.as_str()));
        assert_eq!((t.arguments.name_prefix.as_str(), t.arguments.value_suffix.as_str()), ("<", slot.as_str()));
        assert_eq!(t.arguments.elements, Some(ElementSyntax::default()));
        assert!(a.preserved_tokens.iter().all(|m| !m.contains(NAME_SLOT)), "{:?}", a.preserved_tokens);
        assert_eq!(with_name(&t.function.close, "get_time"), "</get_time>");
        // Templates with one closing marker for every argument learn no elements.
        for name in ["tagged-raw-values", "typed-openers", "cdata-words", "literal-values"] {
            assert_eq!(analyzed(name).tools.arguments.elements, None, "{name}");
        }
    }

    #[test]
    fn mistral_ids() {
        let t = run(
            "[TOOL_CALLS]foofoo[CALL_ID]call00001[ARGS]{\"alpha\": \"XXXX\"}",
            Some(
                "[TOOL_CALLS]foofoo[CALL_ID]call00001[ARGS]{\"alpha\": \"XXXX\"}[TOOL_CALLS]barbar[CALL_ID]call99999[ARGS]{\"bravo\": \"YYYY\", \"alpha\": \"XXXX\"}",
            ),
        );
        assert_eq!(t.format.mode, ToolFormat::TagWithJson);
        assert_eq!(t.format.per_call_start, "[TOOL_CALLS]");
        assert_eq!(t.call_id.pos, CallIdPosition::BetweenFuncAndArgs);
        assert_eq!(t.call_id.prefix, "[CALL_ID]");
        assert_eq!(t.call_id.suffix, "[ARGS]");
    }
}
