//! The grammar rule of the corpus README: a generated grammar must accept the model output.
//!
//! A non-lazy grammar constrains the whole output. A lazy one leaves text free until the first
//! trigger that occurs outside a reasoning block, and constrains everything from that trigger
//! on (its `root` is the alternation of the trigger rules, which start with the trigger text).

use peg_runtime::gbnf::Grammar;
use peg_runtime::schema::regex;

use crate::error::{Error, ErrorKind};
use crate::format::{ReasoningMode, TemplateAnalysis};
use crate::generator::{GrammarTrigger, PreparedRequest};

/// Where a trigger can start in a text.
enum Trigger {
    Word(String),
    /// A compiled pattern: matched by growing a prefix until the grammar completes.
    Pattern {
        grammar: Grammar,
        anchored: bool,
    },
}

impl Trigger {
    fn compile(t: &GrammarTrigger) -> Result<Trigger, String> {
        match t {
            GrammarTrigger::Word(w) => Ok(Trigger::Word(w.clone())),
            GrammarTrigger::Pattern(p) => {
                let parsed = regex::parse(p).map_err(|e| format!("trigger pattern {p:?}: {e}"))?;
                let body = regex::to_gbnf(&parsed.regex, false);
                let grammar = Grammar::parse(&format!("root ::= {body}\n")).map_err(|e| format!("trigger pattern {p:?}: {e}"))?;
                Ok(Trigger::Pattern { grammar, anchored: parsed.anchored_start })
            }
        }
    }

    /// Whether the trigger matches at the start of `text`.
    fn matches_at(&self, text: &str) -> bool {
        match self {
            Trigger::Word(w) => !w.is_empty() && text.starts_with(w.as_str()),
            Trigger::Pattern { grammar, .. } => {
                let mut m = grammar.recognizer().matcher();
                if m.is_complete() {
                    return true;
                }
                for c in text.chars() {
                    if !m.push(c) {
                        return false;
                    }
                    if m.is_complete() {
                        return true;
                    }
                }
                false
            }
        }
    }
}

/// The reasoning markers the output may use, trimmed (empty when none).
fn reasoning_markers(a: &TemplateAnalysis) -> (&str, &str) {
    if a.reasoning.mode == ReasoningMode::None {
        return ("", "");
    }
    (a.reasoning.start.trim(), a.reasoning.end.trim())
}

/// The byte offset in `output` where the first trigger outside reasoning starts, if any.
/// `prefill` is the text before the output (it may open a reasoning block).
pub fn first_trigger(triggers: &[GrammarTrigger], a: &TemplateAnalysis, prefill: &str, output: &str) -> Result<Option<usize>, String> {
    let compiled = triggers.iter().map(Trigger::compile).collect::<Result<Vec<_>, _>>()?;
    let (start, end) = reasoning_markers(a);
    // Reasoning open at the start of the output: the prefill opened it, or (delimiter style,
    // no start marker) the output reasons until the end marker.
    let mut in_reasoning = if !start.is_empty() {
        prefill.rfind(start).is_some_and(|i| end.is_empty() || !prefill[i..].contains(end))
    } else {
        !end.is_empty() && output.contains(end)
    };
    let mut i = 0;
    while i < output.len() {
        let rest = &output[i..];
        if in_reasoning {
            if end.is_empty() {
                return Ok(None);
            }
            match rest.find(end) {
                Some(j) => {
                    i += j + end.len();
                    in_reasoning = false;
                }
                None => return Ok(None),
            }
            continue;
        }
        if !start.is_empty() && rest.starts_with(start) {
            in_reasoning = true;
            i += start.len();
            continue;
        }
        let anchored_ok = i == 0;
        if compiled.iter().any(|t| match t {
            Trigger::Pattern { anchored: true, .. } if !anchored_ok => false,
            t => t.matches_at(rest),
        }) {
            return Ok(Some(i));
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    Ok(None)
}

/// Checks that `g`'s grammar accepts `output` under the lazy rule. `Ok` when there is no grammar.
///
/// ```
/// use autoparser::{template::ChatTemplate, verify::check_grammar, ErrorKind, Model, Request};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>\
///            {% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let prepared = model.prepare(&Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": "Time?"}],
///     "tools": [{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}]})).unwrap()).unwrap();
/// // Lazy: free text, then from the first `<call>` on what the grammar allows.
/// assert!(check_grammar(&prepared, model.analysis(), r#"Sure. <call>{"name": "now", "arguments": {}}</call>"#).is_ok());
/// let err = check_grammar(&prepared, model.analysis(), r#"<call>{"name": "later", "arguments": {}}</call>"#).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Mismatch);
/// ```
pub fn check_grammar(g: &PreparedRequest, a: &TemplateAnalysis, output: &str) -> Result<(), Error> {
    check(g, a, output).map_err(|detail| Error::new(ErrorKind::Mismatch, detail))
}

fn check(g: &PreparedRequest, a: &TemplateAnalysis, output: &str) -> Result<(), String> {
    let Some(text) = &g.grammar else { return Ok(()) };
    let grammar = Grammar::parse(text).map_err(|e| format!("grammar does not parse: {e}"))?;
    let constrained = if g.grammar_lazy {
        match first_trigger(&g.grammar_triggers, a, &g.prefill, output)? {
            Some(i) => &output[i..],
            None => return Ok(()),
        }
    } else {
        output
    };
    if grammar.accepts(constrained) {
        Ok(())
    } else {
        let m = &mut grammar.recognizer().matcher();
        let ok = constrained.char_indices().find(|&(_, c)| !m.push(c)).map_or(constrained.len(), |(i, _)| i);
        let (lo, hi) = window(constrained, ok, 40);
        let lazy = if g.grammar_lazy { "lazy " } else { "" };
        Err(if ok == constrained.len() {
            format!("{lazy}grammar rejects the output: it stops short of a complete match (output {:?})", &constrained[lo..])
        } else {
            format!("{lazy}grammar rejects the output at byte {} of the constrained text: {:?} | {:?}", ok, &constrained[lo..ok], &constrained[ok..hi])
        })
    }
}

/// A char-boundary window of `radius` bytes around `at` in `s`, for failure snippets.
///
/// ```
/// use autoparser::verify::window;
/// let s = "abc→def";
/// assert_eq!(window(s, 3, 2), (1, 6)); // `→` is 3 bytes: the end moves to its boundary
/// assert_eq!(&s[1..6], "bc→");
/// ```
pub fn window(s: &str, at: usize, radius: usize) -> (usize, usize) {
    let mut lo = at.saturating_sub(radius).min(s.len());
    while !s.is_char_boundary(lo) {
        lo -= 1;
    }
    let mut hi = at.saturating_add(radius).min(s.len());
    while !s.is_char_boundary(hi) {
        hi += 1;
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ReasoningAnalysis;

    fn think() -> TemplateAnalysis {
        TemplateAnalysis {
            reasoning: ReasoningAnalysis { mode: ReasoningMode::TagBased, start: "<think>".into(), end: "</think>".into() },
            ..TemplateAnalysis::default()
        }
    }

    #[test]
    fn triggers_inside_reasoning_do_not_count() {
        let t = [GrammarTrigger::Word("<tool_call>".into())];
        let out = "<think>maybe <tool_call></think>ok <tool_call>{}";
        assert_eq!(first_trigger(&t, &think(), "", out).unwrap(), Some(out.rfind("<tool_call>").unwrap()));
        // The prefill opened the block.
        let out = "maybe <tool_call></think><tool_call>";
        assert_eq!(first_trigger(&t, &think(), "<think>\n", out).unwrap(), Some(25));
        assert_eq!(first_trigger(&t, &think(), "", "no call").unwrap(), None);
    }

    #[test]
    fn pattern_triggers_match_leftmost() {
        let t = [GrammarTrigger::Pattern(r"\s*[\[{]".into())];
        assert_eq!(first_trigger(&t, &TemplateAnalysis::default(), "", "é ab  {\"x\"").unwrap(), Some(5));
    }
}
