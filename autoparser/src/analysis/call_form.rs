//! T8 (call form): the template's own writing of a turn of tool calls and nothing else, cut
//! around each call's name and JSON arguments. Streams read output written exactly so without
//! a parse (the structural lane of `peg-runtime`); the parser reads everything else.
//!
//! The turn is what a render of one call (and of two) writes after the generation prompt,
//! up to where it ends as a turn of content ends (the end of turn). Its arguments are found as JSON: the object the probe's arguments
//! serialize to, wherever a value starting at a `{` decodes to it. Templates whose turn does
//! not continue the prompt as written, whose arguments are no JSON object, or whose literals
//! hold anything of the call (its id, an argument's name) get no form: their streams parse.

use serde_json::{Value, json};

use super::probe::{Asst, Call, Probe, needle};
use crate::analysis::diff::calculate_diff_split;
use crate::analysis::text::strip_turn_end;
use crate::format::{CallFormAnalysis, TemplateAnalysis, ToolFormat};
use peg_runtime::chat::CallForm;

/// The call form, if the template writes a turn of calls in one.
pub(crate) fn learn(p: &Probe, a: &TemplateAnalysis) -> Option<CallFormAnalysis> {
    if a.tools.format.mode == ToolFormat::None || a.parts.is_some() || !a.caps.supports_tool_calls {
        return None;
    }
    let prompt = p.render(&p.ctx(p.base(), true, Some(true))).ok()?;
    let without = p.render(&p.ctx(p.base(), false, Some(true))).ok()?;
    let generation_prompt = calculate_diff_split(&without, &prompt).right;
    // The turn ends as a turn of content ends: what follows the content is its tail.
    let content = p.render_asst(&Asst::content(needle::CONTENT)).ok()?;
    let tails = [content[content.rfind(needle::CONTENT)? + needle::CONTENT.len()..].to_owned()];
    let turn = |calls: Vec<Call>| -> Option<String> {
        let rendered = p.render_asst(&Asst::calls(calls)).ok()?;
        let turn = rendered.strip_prefix(prompt.as_str())?;
        Some(strip_turn_end(turn, &tails).trim_end().to_owned())
    };
    let one = turn(vec![Call::first()])?;
    let (open, name_end, close) = cut_call(&one, needle::FUN_A, &json!({needle::ARG_A: needle::VAL_A}))?;
    // A second call: the literals around it must be the first's (a call index in them, as
    // `functions.f:0`, is no literal), and what comes between is learned.
    let two = turn(vec![Call::first(), Call::second()])?;
    let rest = two.strip_prefix(&one[..one.len() - close.len()])?;
    let at = rest.find(needle::FUN_B)?;
    let (between, second) = rest.split_at(at);
    let (open_b, name_end_b, close_b) = cut_call(second, needle::FUN_B, &json!({needle::ARG_B: needle::VAL_B, needle::ARG_A: needle::VAL_A}))?;
    if !open_b.is_empty() || name_end_b != name_end || close_b != close {
        return None;
    }
    // A third call repeats the second's literals (a call index in them, `"id": "1"` or
    // `n="2"`, makes no form).
    let three = turn(vec![Call::first(), Call::second(), Call::first()])?;
    let rest = three.strip_prefix(&two[..two.len() - close.len()])?;
    let (between_c, third) = rest.split_at(rest.rfind(needle::FUN_A)?);
    let (open_c, name_end_c, close_c) = cut_call(third, needle::FUN_A, &json!({needle::ARG_A: needle::VAL_A}))?;
    if between_c != between || !open_c.is_empty() || name_end_c != name_end || close_c != close {
        return None;
    }
    // A template that writes one call of two learns no separator: a turn holds one call.
    let between = a.caps.supports_parallel_tool_calls.then(|| between.to_owned());
    let form = CallForm { open: open.to_owned(), name_end: name_end.to_owned(), between, close: close.to_owned() };
    let literals = [Some(&form.open), Some(&form.name_end), form.between.as_ref(), Some(&form.close)];
    let needles = [needle::FUN_A, needle::FUN_B, needle::ARG_A, needle::ARG_B, needle::VAL_A, needle::VAL_B, needle::ID_A, needle::ID_B];
    if literals.iter().flatten().any(|l| needles.iter().any(|n| l.contains(n))) || !form.is_usable() {
        return None;
    }
    Some(CallFormAnalysis { generation_prompt, form })
}

/// `turn` cut as `open NAME name_end ARGS close` (without `ARGS`), where `ARGS` is the JSON object `args`
/// (the last such object in the turn) and `NAME` the last `name` before it.
fn cut_call<'t>(turn: &'t str, name: &str, args: &Value) -> Option<(&'t str, &'t str, &'t str)> {
    let (from, to) = turn.match_indices('{').rev().find_map(|(i, _)| {
        let mut values = serde_json::Deserializer::from_str(&turn[i..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(v)) if v == *args => Some((i, i + values.byte_offset())),
            _ => None,
        }
    })?;
    let at = turn[..from].rfind(name)?;
    Some((&turn[..at], &turn[at + name.len()..from], &turn[to..]))
}

#[cfg(test)]
mod tests {
    use crate::analysis::analyze;
    use crate::template::ChatTemplate;

    fn form(src: &str) -> Option<peg_runtime::chat::CallForm> {
        analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap().tools.call_form.map(|f| f.form)
    }

    #[test]
    fn json_calls_in_markers_are_cut_around_name_and_arguments() {
        let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>\n{{ c.function | tojson }}\n</tool_call>\
                   {% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        let f = form(src).expect("a form");
        assert_eq!(f.open, "<tool_call>\n{\"name\": \"");
        assert_eq!(f.name_end, "\", \"arguments\": ");
        assert_eq!(f.between.as_deref(), Some("}\n</tool_call>\n<tool_call>\n{\"name\": \""));
        assert_eq!(f.close, "}\n</tool_call>");
    }

    #[test]
    fn a_name_in_markers_before_json_arguments() {
        let src = "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]{% else %}{{ m.content }}\
                   {% for c in m.tool_calls or [] %}[TOOL_CALLS]{{ c.function.name }}[ARGS]{{ c.function.arguments | tojson }}{% endfor %}</s>{% endif %}{% endfor %}";
        let f = form(src).expect("a form");
        assert_eq!((f.open.as_str(), f.name_end.as_str(), f.between.as_deref(), f.close.as_str()), ("[TOOL_CALLS]", "[ARGS]", Some("[TOOL_CALLS]"), ""));
    }

    #[test]
    fn calls_with_ids_or_arguments_in_tags_have_no_form() {
        let ids = "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]{% else %}{{ m.content }}\
                   {% for c in m.tool_calls or [] %}[TOOL_CALLS]{{ c.function.name }}[CALL_ID]{{ c.id }}[ARGS]{{ c.function.arguments | tojson }}{% endfor %}</s>{% endif %}{% endfor %}";
        assert_eq!(form(ids), None);
        let tagged = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<function={{ c.function.name }}>\
                      {% for k, v in c.function.arguments | items %}<parameter={{ k }}>{{ v }}</parameter>{% endfor %}</function>{% endfor %}\
                      <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
        assert_eq!(form(tagged), None);
    }
}
