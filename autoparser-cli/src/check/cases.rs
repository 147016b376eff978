//! `chat-cases.jsonl`: `parse`, `prompt`, `generation_prompt` and `capability` cases.

use std::sync::Arc;
use std::time::Instant;

use autoparser::Request;
use autoparser::format::TemplateAnalysis;
use autoparser::generator::{PreparedRequest, generate};
use autoparser::verify::{check_grammar, compare_messages, stream_message};
use peg_runtime::chat::{ChatMessage, ChatParser, Strictness};
use serde_json::Value;

use super::templates::{LoadedTemplate, TemplateStore};
use super::{CheckOptions, Timings};
use peg_runtime::chat::ParseMode;

/// The template a case names (`template`) or carries (`template_source`).
fn case_template(case: &Value, store: &mut TemplateStore) -> Result<Arc<LoadedTemplate>, String> {
    match (case.get("template"), case.get("template_source")) {
        (Some(Value::String(name)), _) => Ok(store.named(name)),
        (_, Some(Value::String(src))) => Ok(store.inline(src)),
        _ => Err("the case names no template and carries no template_source".into()),
    }
}

fn str_field<'c>(case: &'c Value, key: &str) -> Result<&'c str, String> {
    case.get(key).and_then(Value::as_str).ok_or_else(|| format!("missing string field `{key}`"))
}

/// Applies one check (`contains`, `not_contains`, `equals`, `ends_with`) to `actual`.
pub fn apply_check(op: &str, actual: &str, value: &str) -> Result<bool, String> {
    Ok(match op {
        "contains" => actual.contains(value),
        "not_contains" => !actual.contains(value),
        "equals" => actual == value,
        "ends_with" => actual.ends_with(value),
        _ => return Err(format!("unknown check op {op:?}")),
    })
}

/// Judges one case; the reasons it failed (empty: passed).
pub fn judge_case(case: &Value, store: &mut TemplateStore, opts: &CheckOptions, timings: &mut Timings) -> Vec<String> {
    let kind = case.get("kind").and_then(Value::as_str).unwrap_or("");
    let result = match kind {
        "prompt" | "generation_prompt" => judge_prompt(case, store),
        "capability" => judge_capability(case, store),
        "parse" => return judge_parse(case, store, opts, timings),
        other => Err(format!("unknown case kind {other:?}")),
    };
    result.err().into_iter().collect()
}

fn judge_prompt(case: &Value, store: &mut TemplateStore) -> Result<(), String> {
    let loaded = case_template(case, store)?;
    let tmpl = loaded.template.as_ref().map_err(Clone::clone)?;
    let inputs = case.get("inputs").ok_or("missing `inputs`")?;
    let req = Request::from_json(inputs).map_err(|e| format!("bad inputs: {e}"))?;
    let out = tmpl.apply(&req).map_err(|e| format!("render error: {e}"))?;
    let checks = case.get("checks").and_then(Value::as_array).ok_or("missing `checks`")?;
    let mut errs = Vec::new();
    for c in checks {
        let (op, target, value) = (str_field(c, "op")?, str_field(c, "target")?, str_field(c, "value")?);
        let actual = match target {
            "prompt" => &out.prompt,
            "generation_prompt" => &out.generation_prompt,
            t => return Err(format!("unknown check target {t:?}")),
        };
        if !apply_check(op, actual, value)? {
            errs.push(format!("{op} {target} {value:?}: got {actual:?}"));
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs.join("; ")) }
}

fn judge_capability(case: &Value, store: &mut TemplateStore) -> Result<(), String> {
    let loaded = case_template(case, store)?;
    let tmpl = loaded.template.as_ref().map_err(Clone::clone)?;
    let cap = str_field(case, "cap")?;
    let expected = case.get("expected").and_then(Value::as_bool).ok_or("`expected` is not a boolean")?;
    match tmpl.capabilities().get(cap) {
        Some(got) if got == expected => Ok(()),
        Some(got) => Err(format!("{cap} = {got}, expected {expected}")),
        None => Err(format!("unknown capability {cap:?}")),
    }
}

/// Whether a request constrains output: tools, or a non-empty JSON schema.
fn constrains(inputs: &Value) -> bool {
    let tools = inputs.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
    let schema = match inputs.get("json_schema") {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Object(_)) => true,
        _ => false,
    };
    tools || schema
}

fn judge_parse(case: &Value, store: &mut TemplateStore, opts: &CheckOptions, timings: &mut Timings) -> Vec<String> {
    match prepare_parse(case, store, timings) {
        Err(e) => vec![e],
        Ok(p) => p.judge(opts, timings),
    }
}

/// A parse case made ready: its template analyzed, its parser generated.
struct ParseCase<'c> {
    output: &'c str,
    partial: bool,
    expect_failure: bool,
    expected: Option<ChatMessage>,
    inputs: &'c Value,
    analysis: Arc<TemplateAnalysis>,
    generated: PreparedRequest,
}

fn prepare_parse<'c>(case: &'c Value, store: &mut TemplateStore, timings: &mut Timings) -> Result<ParseCase<'c>, String> {
    let output = str_field(case, "model_output")?;
    let partial = case.get("is_partial").and_then(Value::as_bool).unwrap_or(false);
    let expect_failure = case.get("expect_failure").and_then(Value::as_bool).unwrap_or(false);
    let expected = match case.get("expected") {
        Some(v) if !v.is_null() => Some(serde_json::from_value::<ChatMessage>(v.clone()).map_err(|e| format!("bad `expected`: {e}"))?),
        _ if expect_failure => None,
        _ => return Err("missing `expected`".into()),
    };
    let inputs = case.get("inputs").filter(|v| v.is_object()).ok_or("missing `inputs` object")?;
    let loaded = case_template(case, store)?;
    let tmpl = loaded.template.as_ref().map_err(Clone::clone)?;
    let (analysis, _) = loaded.analysis();
    let analysis = analysis?;
    let req = Request::from_json(inputs).map_err(|e| format!("bad inputs: {e}"))?;
    let t0 = Instant::now();
    let generated = generate(tmpl, &analysis, &req).map_err(|e| format!("generate: {e}"))?;
    timings.generate.push(t0.elapsed());
    Ok(ParseCase { output, partial, expect_failure, expected, inputs, analysis, generated })
}

impl ParseCase<'_> {
    fn parser(&self, strict: bool) -> ChatParser {
        self.generated.parser(if strict { Strictness::Strict } else { Strictness::Lenient })
    }

    fn judge(&self, opts: &CheckOptions, timings: &mut Timings) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.expect_failure {
            return match self.parser(true).parse(self.output, if self.partial { ParseMode::Partial } else { ParseMode::Complete }) {
                Err(_) => Vec::new(),
                Ok(m) => vec![format!("expected a parse failure, parsed {}", brief(&m.message))],
            };
        }
        let Some(want) = &self.expected else { return vec!["missing `expected`".into()] };
        let parser = self.parser(false);
        let t0 = Instant::now();
        let parsed = parser.parse(self.output, if self.partial { ParseMode::Partial } else { ParseMode::Complete });
        timings.parse.push(t0.elapsed());
        let one_shot = match parsed {
            Err(e) => {
                reasons.push(format!("parse error: {e}"));
                None
            }
            Ok(p) => {
                if let Err(d) = compare_messages(&p.message, want) {
                    let diag = p.diagnostic.map(|d| format!(" [grammar stopped at byte {}: {}]", d.offset, d.message));
                    reasons.push(format!("parse: {}{}", d.detail(), diag.unwrap_or_default()));
                }
                Some(p.message)
            }
        };
        for &n in &opts.chunk_sizes {
            let streamed = stream_message(&parser, self.output, self.partial, n).map_err(|e| e.detail().to_owned()).and_then(|m| {
                compare_messages(&m, want).map_err(|d| format!("streamed message: {}", d.detail()))?;
                // A complete stream ends where the one-shot parse does, byte for byte.
                match &one_shot {
                    Some(o) if !self.partial && *o != m => Err(format!("stream ends in {m:?}, the one-shot parse is {o:?}")),
                    _ => Ok(()),
                }
            });
            if let Err(e) = streamed {
                reasons.push(format!("stream ({n}-byte chunks): {e}"));
                break;
            }
        }
        if opts.grammar && !self.partial && constrains(self.inputs) {
            timings.grammar_checked += usize::from(self.generated.grammar.is_some());
            if let Err(e) = check_grammar(&self.generated, &self.analysis, self.output) {
                reasons.push(format!("grammar: {}", e.detail()));
            }
        }
        reasons
    }
}

fn brief(m: &ChatMessage) -> String {
    serde_json::to_string(m).unwrap_or_else(|_| format!("{m:?}"))
}
