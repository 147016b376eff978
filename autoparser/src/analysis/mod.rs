//! Differential template analysis: render variants of a conversation, compare them, and learn
//! the markers around reasoning, content and tool calls.
//!
//! Every phase renders *probes* (`probe.rs`): a user turn plus an assistant message holding
//! distinctive needles (a content text, a reasoning text, calls to `foofoo`/`barbar` with
//! arguments `alpha`/`bravo`, ids `call00001`/`call99999`). Comparing two renders
//! (`diff.rs`) and segmenting text into markers (`segment.rs`) locates the
//! markers around each needle. The only heuristic is JSON detection.
//!
//! What a marker is, is learned from the text, not assumed to be one `<…>` token:
//! - a marker, a name and a marker are one marker when the second does not close the first
//!   (`<|close|>think<|sep|>`, `<|open|>call<|sep|>`; but `<key>alpha</key>` is an element);
//! - a diff boundary never cuts such a group, nor a marker, nor (plain-word templates) the
//!   first word of a line (`BEGIN ` of `BEGIN ANSWER`); an insertion that could sit at several
//!   offsets sits where it starts with a marker or a line;
//! - plain-word openers with punctuation of their own (`§§ call `, `Action: `) announce calls
//!   like markers do.
//!
//! - R1-R5 (reasoning): with vs without reasoning (as a field, under its common names, or as a
//!   typed content part); reasoning next to tool calls only (tools-only); thinking off vs on in
//!   the generation prompt; history stripping of a conventional end marker; marker pairs the
//!   thinking prompt introduces.
//! - C1 (content): what the model writes before the content after the generation prompt
//!   (anchored there, so `<|open|>response<|sep|>` and `BEGIN ANSWER` are whole), and after it
//!   until content-only and calls-only turns end alike; the end-of-turn marker; the turn
//!   header the prompt ends with (`<|begin|>assistant`), which a part after reasoning repeats.
//! - T1-T7 (tools): the tool region of one and of two calls; JSON-native field names, array
//!   wrapping, section vs per-call markers, separator, function name markers (with call
//!   indices), argument container, call-id position; where content goes relative to calls.
//!   Turns made of addressed parts (`to=NAME<|message|>…<|end|>`, `>>>NAME\n…`): the header
//!   around the recipient, the content and reasoning recipients, the part end.
//! - T8 (call form): a turn of calls and nothing else as the template writes it, cut around
//!   each call's name and JSON arguments, for streams to read without a parse.
//! - A1-A4 (arguments): name and value markers, literal-valued calls (`f(a='x')`) and whether
//!   their strings are written raw (`'C:\dir'`), markers of non-string values
//!   (`string="false">`, the tail of a CDATA string's suffix), nested values in the template's
//!   own syntax.
//!
//! The result, [`TemplateAnalysis`], is computed once per template, serializes to JSON, and
//! feeds [`crate::generator`] per request. Formats the diff cannot express are handled by
//! builders registered in the registry, matched on the template's own renders.
//!
//! ```
//! use autoparser::{analysis::analyze, format::ToolFormat, template::ChatTemplate};
//! let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<function={{ c.function.name }}>\
//!            {{ c.function.arguments | tojson }}</function>{% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
//! assert_eq!(a.tools.format.mode, ToolFormat::TagWithJson); // the name in markers, JSON arguments
//! assert_eq!((a.tools.function.name_prefix.as_str(), a.tools.function.name_suffix.as_str()), ("<function=", ">"));
//! assert_eq!(a.tools.function.close, "</function>");
//! ```

mod call_form;
pub(crate) mod diff;
mod probe;
mod reasoning;
pub(crate) mod segment;
pub(crate) mod text;
mod tools;

use crate::format::*;

use crate::error::{Error, ErrorKind};
use crate::template::{Lenient, Memo, Metered, Render};

/// Analyzes a template through any renderer: phases R1-R3, C1, T1-T7, A1-A2.
///
/// ```
/// # use autoparser::analysis::analyze;
/// # use autoparser::format::ToolFormat;
/// # use autoparser::template::Render;
/// struct Fixed;
/// impl Render for Fixed {
///     fn render(&self, ctx: &serde_json::Value) -> Result<String, autoparser::Error> {
///         let mut out = String::new();
///         for m in ctx["messages"].as_array().unwrap() {
///             out += &format!("<|{}|>", m["role"].as_str().unwrap());
///             if let Some(r) = m["reasoning_content"].as_str() { out += &format!("<think>{r}</think>"); }
///             out += m["content"].as_str().unwrap_or("");
///             for c in m["tool_calls"].as_array().into_iter().flatten() {
///                 out += &format!("<tool_call>{}</tool_call>", serde_json::json!({
///                     "name": c["function"]["name"], "arguments": c["function"]["arguments"]}));
///             }
///             out += "<|end|>";
///         }
///         if ctx["add_generation_prompt"] == true { out += "<|assistant|>"; }
///         Ok(out)
///     }
/// }
/// let a = analyze(&Fixed).unwrap();
/// assert_eq!((a.reasoning.start.as_str(), a.reasoning.end.as_str()), ("<think>", "</think>"));
/// assert_eq!(a.tools.format.mode, ToolFormat::JsonNative);
/// assert_eq!(a.tools.format.per_call_start, "<tool_call>");
/// ```
///
/// The renders share one budget ([`Render::budget`]); once it is spent the analysis fails with
/// [`Limit::TotalFuel`](crate::Limit::TotalFuel), whatever the phases made of the refused renders.
pub fn analyze(r: &dyn Render) -> Result<TemplateAnalysis, Error> {
    let metered = Metered::new(r);
    // A bug in a phase must not take the caller down: report it as an error.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyze_inner(&metered)));
    metered.finish(result.unwrap_or_else(|panic| Err(Error::from_panic("analysis", panic))))
}

/// Templates that write a last assistant message otherwise than history (as the
/// continuation of a generation prompt, its calls left out) show a turn as the model wrote it
/// only before another turn: the analysis and `verify` render the turn before a user turn and
/// cut it there. The user turn's header is where a render cut at that user's text
/// (`before_next`) and one cut at the first user's text (`before_first`) end alike, from the
/// first marker of that common end (the whitespace before it ends the assistant turn); the
/// whole common end in a template without markers. `None` where they share no end.
pub(crate) fn user_header<'t>(before_next: &'t str, before_first: &str) -> Option<&'t str> {
    let common = text::common_suffix(before_next, before_first);
    let header = match segment::first_marker(common) {
        Some((i, _)) => &common[i..],
        None => common.trim_start(),
    };
    (!header.trim().is_empty()).then_some(header)
}

/// A render cut at the text of the user turn after an assistant turn (`before_next`), without
/// that user turn's `header` (see [`user_header`]): the conversation up to the end of the
/// assistant turn.
pub(crate) fn history_turn<'t>(before_next: &'t str, header: &str) -> &'t str {
    before_next.strip_suffix(header).unwrap_or(before_next)
}

fn analyze_inner(r: &dyn Render) -> Result<TemplateAnalysis, Error> {
    let lenient = Lenient(r);
    let memo = Memo::new(&lenient);
    let r: &dyn Render = &memo;
    let mut p = probe::Probe::new(r);
    let mut a = TemplateAnalysis::default();
    // The basic conversation must render, with tools or without.
    if let Err(e) = p.render_prompt(Some(true)) {
        p.with_tools = false;
        if p.render_prompt(Some(true)).is_err() {
            return Err(Error::new(ErrorKind::Analysis, format!("the template does not render a basic conversation: {e}")).with_source(e));
        }
    }
    a.caps.supports_tools = p.with_tools && {
        let with = p.render_prompt(Some(true)).ok();
        with.is_some() && with != p.clone_with_tools(false).render_prompt(Some(true)).ok()
    };
    a.caps.supports_system_role = {
        let ctx = p.ctx(vec![serde_json::json!({"role": "system", "content": "SYSTEM_NEEDLE"}), p.base()[0].clone()], true, None);
        r.render(&ctx).is_ok_and(|s| s.contains("SYSTEM_NEEDLE"))
    };
    a.reasoning = reasoning::analyze_reasoning(&p, &mut a.caps, &mut a.notes);
    let mut tools_error = None;
    a.tools = match tools::analyze_tools(&mut p, &a.reasoning, &mut a.caps) {
        Ok(t) => t,
        Err(e) => {
            a.notes.push(format!("tools: {e}"));
            tools_error = Some(e);
            ToolAnalysis::default()
        }
    };
    a.content = reasoning::analyze_content(&p, a.caps.supports_tool_calls, &a.reasoning);
    section_start_beside_content(&p, &mut a);
    a.tools.format.calls_end_reasoning = reasoning::calls_end_reasoning(&p, &a.reasoning, &a.tools.format);
    // The end-of-turn marker (what follows plain content) is not part of the tool section.
    if let Ok(r) = p.render_asst(&probe::Asst::content(probe::needle::CONTENT))
        && let Some(i) = r.find(probe::needle::CONTENT)
    {
        let after = &r[i + probe::needle::CONTENT.len()..];
        let after = after.strip_prefix(a.content.end.as_str()).unwrap_or(after).trim_start();
        // A marker, or a short marker-like token up to the line end (`[e~[`).
        let n = segment::marker_group_len(after).or_else(|| {
            let line = after.split('\n').next().unwrap_or("");
            (!line.is_empty() && line.len() <= 16 && !line.contains(char::is_whitespace)).then_some(line.len())
        });
        if let Some(n) = n {
            let eot = &after[..n];
            let se = &mut a.tools.format.section_end;
            if let Some(k) = se.find(eot) {
                se.truncate(k);
                *se = se.trim().to_owned();
            }
            a.end_of_turn = eot.to_owned();
        }
    }
    // Addressed parts: content, reasoning and calls each a part whose header names its
    // recipient. The marker slots say the same where they can (other code reads them).
    let mode = a.tools.format.mode;
    if matches!(mode, ToolFormat::TagWithJson | ToolFormat::TagWithTagged)
        && let Some(parts) = tools::analyze_parts(&p, mode == ToolFormat::TagWithJson)
    {
        apply_parts(&mut a, parts);
    }
    // Whitespace the template writes after the calls (in the render with calls, the tool
    // region's trailing whitespace and what follows it before the next marker).
    if a.tools.format.mode != ToolFormat::None {
        let one = vec![probe::Call::first()];
        if let (Ok(empty), Ok(with)) = (p.render_asst(&probe::Asst::content(probe::needle::CONTENT)), p.render_asst(&probe::Asst::calls(one))) {
            let d = diff::calculate_diff_split(&empty, &with);
            let tail = d.right.len() - d.right.trim_end().len();
            let lead = d.suffix.len() - d.suffix.trim_start().len();
            a.tools.format.space_after_calls = tail + lead > 0;
        }
    }
    // The generation prompt's closing marker, which models may write again.
    if let (Ok(with), Ok(without)) = (r.render(&p.ctx(p.base(), true, None)), r.render(&p.ctx(p.base(), false, None))) {
        let gp = diff::calculate_diff_split(&without, &with).right;
        let gp_raw_len = gp.len();
        let gp = gp.trim_end();
        // A marker, or a marker and the role it names (`<|begin|>assistant`).
        let header = segment::last_marker(gp).filter(|(k, m)| {
            let rest = &gp[k + m.len()..];
            rest.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        if let Some((k, m)) = header
            && m != a.reasoning.start.trim()
            && m != a.reasoning.end.trim()
            && m != a.content.start.trim()
        {
            a.turn_header = gp[k..].to_owned();
        }
        // The prompt stops inside the header (nothing after it, not even a line break) and
        // the turn writes it again before its later parts.
        if !a.turn_header.is_empty() && gp.len() == gp_raw_len {
            header_per_part(&p, &mut a);
        }
    }
    // Registered builders: fingerprints are matched against the template's own renders.
    let mut renders = String::new();
    for m in [probe::Asst::content(probe::needle::CONTENT), probe::Asst::calls(vec![probe::Call::first()])] {
        if let Ok(s) = p.render_asst(&m) {
            renders.push_str(&s);
        }
    }
    if let Some(b) = crate::registry::detect(&renders, &a) {
        a.builder = Some(b.name().to_owned());
        b.adjust(&mut a);
    } else {
        a.tools_error = tools_error;
    }
    if a.tools_error.is_none() {
        a.tools.call_form = call_form::learn(&p, &a);
    }
    a.preserved_tokens = collect_preserved_tokens(&a);
    Ok(a)
}

/// Where the turn writes the turn header again before its later parts (after reasoning, and
/// before calls that follow content), every part opens with it: records that, and the marker
/// slots that follow. The text between a part and the next header is the part end; content
/// is wrapped in the header and the part end. (After the calls the part end is where the
/// turn ends, and the model stops.)
fn header_per_part(p: &probe::Probe, a: &mut TemplateAnalysis) {
    use probe::needle::{CONTENT, REASONING};
    let th = a.turn_header.as_str();
    let Ok(prompt) = p.render_prompt(Some(true)) else { return };
    let turn = |m: &probe::Asst| p.render_asst(m).ok().and_then(|r| r.strip_prefix(prompt.as_str()).map(str::to_owned));
    // Parts with a marker of their own (`<|think|>`, `<|content|>`) after the header are the
    // marker slots' to read; here the output continues the header's line (`/think\n`).
    let firsts = [probe::Asst::content(CONTENT), probe::Asst::calls(vec![probe::Call::first()]), probe::Asst::content(CONTENT).with_reasoning(REASONING)];
    if firsts.iter().filter_map(&turn).any(|t| segment::marker_len(t.trim_start()).is_some()) {
        return;
    }
    let mut both = probe::Asst::calls(vec![probe::Call::first()]);
    both.content = Some(CONTENT.to_owned());
    // The part end: after the first part's text, up to the header of the next part.
    let part_end = [(turn(&both), CONTENT), (turn(&probe::Asst::content(CONTENT).with_reasoning(REASONING)), REASONING)].into_iter().find_map(|(t, needle)| {
        let t = t?;
        let after = &t[t.find(needle)? + needle.len()..];
        // One marker (`<|im_end|>`): the header itself opens the next part, nothing before it.
        let end = after[..after.find(th)?].trim();
        (!end.is_empty() && segment::marker_group_len(end) == Some(end.len())).then(|| end.to_owned())
    });
    let Some(part_end) = part_end else { return };
    a.header_per_part = true;
    if a.content.mode == ContentMode::Plain {
        a.content = ContentAnalysis { mode: ContentMode::AlwaysWrapped, start: th.to_owned(), end: part_end, ..a.content.clone() };
    }
}

/// Records addressed parts in `a`, and the marker slots that follow from them: content and
/// reasoning wrapped in their parts' headers, calls opened by the call header.
fn apply_parts(a: &mut TemplateAnalysis, parts: AddressedParts) {
    let end = parts.part_end.trim().to_owned();
    // Content alone ended otherwise than a part (`<|eot|>` where parts end in `<|eom|>`): that
    // marker ends the turn.
    let content_end = a.content.end.trim();
    if a.end_of_turn.is_empty() && !content_end.is_empty() && content_end != end && segment::marker_group_len(content_end) == Some(content_end.len()) {
        a.end_of_turn = content_end.to_owned();
    }
    a.content = ContentAnalysis { mode: ContentMode::AlwaysWrapped, start: parts.header(&parts.content_recipient), end: end.clone(), ..a.content.clone() };
    if !parts.reasoning_recipient.is_empty() {
        a.reasoning = ReasoningAnalysis { mode: ReasoningMode::TagBased, start: parts.header(&parts.reasoning_recipient), end };
    }
    let t = &mut a.tools;
    t.format.section_start.clear();
    t.format.section_end.clear();
    t.format.per_call_start = parts.part_start.clone();
    t.format.per_call_end = parts.part_end.trim().to_owned();
    t.format.call_separator.clear();
    t.function.name_prefix = parts.recipient_prefix.clone();
    t.function.name_suffix = parts.recipient_suffix.clone();
    if t.format.mode == ToolFormat::TagWithTagged {
        // A tagged body keeps its markers, less the header's suffix before them and the part
        // end after them.
        let (rs, pe) = (parts.recipient_suffix.trim(), parts.part_end.trim());
        let start = t.arguments.start.trim();
        t.arguments.start = start.strip_prefix(rs).unwrap_or(start).trim().to_owned();
        let close = t.function.close.trim();
        t.function.close = close.strip_suffix(pe).unwrap_or(close).trim().to_owned();
    } else {
        t.function.close.clear();
        t.arguments.start.clear();
        t.arguments.end.clear();
    }
    a.parts = Some(parts);
}

/// The union of all marker tokens in the analysis (what the tokenizer must not split).
pub(crate) fn collect_preserved_tokens(a: &TemplateAnalysis) -> Vec<String> {
    let t = &a.tools;
    let all = [
        &a.reasoning.start,
        &a.reasoning.end,
        &a.content.start,
        &a.content.end,
        &t.format.section_start,
        &t.format.section_end,
        &t.format.per_call_start,
        &t.format.per_call_end,
        &t.function.name_prefix,
        &t.function.name_suffix,
        &t.function.close,
        &t.arguments.start,
        &t.arguments.end,
        &t.arguments.name_prefix,
        &t.arguments.name_suffix,
        &t.arguments.value_prefix,
        &t.arguments.value_suffix,
        &t.call_id.prefix,
        &t.call_id.suffix,
    ];
    let mut out: Vec<String> = Vec::new();
    for s in all {
        let mut push = |m: &str| {
            if !m.is_empty() && !out.iter().any(|x| x == m) {
                out.push(m.to_owned());
            }
        };
        for seg in segment::segmentize_markers(s) {
            // A marker named after what it closes (`</alpha>`) is no one token.
            if seg.is_marker() && !seg.value.contains(NAME_SLOT) {
                push(&seg.value);
            }
        }
        if let Some(i) = text::open_tail(s) {
            push(&s[i..]);
        }
    }
    out
}

/// Where the tool section starts next to the content markers: a section start that begins
/// with the always-wrapped content's end (the empty content's, in a calls-only turn) starts
/// after it; one of two markers that a message with content writes the content between
/// (`<|python_start|>` CONTENT `<|python_end|>` before calls) starts at the second, the first
/// opening the content.
fn section_start_beside_content(p: &probe::Probe, a: &mut TemplateAnalysis) {
    let content_end = a.content.end.trim();
    if a.content.mode == ContentMode::AlwaysWrapped
        && !content_end.is_empty()
        && let Some(rest) = a.tools.format.section_start.trim_start().strip_prefix(content_end)
        && !rest.trim().is_empty()
    {
        a.tools.format.section_start = rest.trim().to_owned();
    }
    let ss = a.tools.format.section_start.trim().to_owned();
    if let Some((0, open)) = segment::first_marker(&ss) {
        let close = ss[open.len()..].trim();
        let mut both = probe::Asst::calls(vec![probe::Call::first()]);
        both.content = Some(probe::needle::CONTENT.to_owned());
        if !close.is_empty()
            && segment::marker_group_len(close) == Some(close.len())
            && p.render_asst(&both).is_ok_and(|r| r.contains(&format!("{open}{}{close}", probe::needle::CONTENT)))
        {
            a.tools.format.content_open_with_calls = open.to_owned();
            a.tools.format.section_start = close.to_owned();
        }
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use crate::template::ChatTemplate;

    /// The fixture template `name`, written in the repository: `tests/templates/` (two per
    /// structure class), `tests/fixtures/` (one per argument or part shape a test is about) or
    /// `tests/recovery/`. Unit tests read nothing else; the shared templates are for `tests/`.
    pub fn template_path(name: &str) -> std::path::PathBuf {
        let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        ["templates", "fixtures", "recovery", "probes"]
            .iter()
            .map(|dir| tests.join(dir).join(format!("{name}.jinja")))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("no fixture template {name} in tests/templates, tests/fixtures, tests/recovery or tests/probes"))
    }

    pub fn template(src: &str) -> Result<ChatTemplate, String> {
        ChatTemplate::from_source(src, "", "").map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyzed(name: &str) -> TemplateAnalysis {
        let src = std::fs::read_to_string(test_util::template_path(name)).unwrap();
        analyze(&test_util::template(&src).unwrap()).unwrap()
    }

    /// A turn whose every part opens with the turn header (`<|turn|>model:thought`,
    /// `<|turn|>model`, `<|turn|>model:calls`), the prompt stopping inside it: content is
    /// wrapped in the header and the part end. A header the prompt completes (a line break
    /// after it) or that later parts do not repeat is no such turn.
    #[test]
    fn a_header_opening_every_part() {
        let a = analyzed("header-per-part");
        assert!(a.header_per_part);
        assert_eq!(a.turn_header, "<|turn|>model");
        assert_eq!((a.content.mode, a.content.start.as_str(), a.content.end.as_str()), (ContentMode::AlwaysWrapped, "<|turn|>model", "<|end|>"));
        assert_eq!(a.reasoning.start, "<|turn|>model:thought");
        for name in ["think-brackets", "parts-opened-by-markers", "turn-after-a-line-break", "prompt-trailing-space", "attribute-tags"] {
            assert!(!analyzed(name).header_per_part, "{name}");
        }
    }

    #[test]
    fn a_user_turn_header_starts_at_the_first_marker_of_the_common_end() {
        let next = "<|sys|>T<|eot|>\n<|user|>Q<|eot|>\n<|bot|><calls>\n{}\n</calls><|eot|>\n<|user|>";
        assert_eq!(super::user_header(next, "<|user|>"), Some("<|user|>"));
        // After a system turn, the common end holds the assistant turn's end too.
        assert_eq!(super::user_header(next, "<|sys|>T<|eot|>\n<|user|>"), Some("<|eot|>\n<|user|>"));
        let next = "System: T\nUser: Q\nAssistant: A\nUser: ";
        assert_eq!(super::user_header(next, "System: T\nUser: "), Some("User: "));
        assert_eq!(super::user_header("abc", "xyz"), None);
        assert_eq!(super::history_turn("A<|eot|>\n<|user|>", "<|user|>"), "A<|eot|>\n");
    }
}
