//! The corpus judge: run a `parse` case of `corpus/chat-cases.jsonl` (or the round-trip
//! corpus) through analysis, generation and the chat parser, and judge it exactly as
//! `corpus/README.md` says.

use std::sync::Arc;

use peg_runtime::chat::{ChatMessage, ChatParseOptions, ChatParser, ToolSpec};
use serde_json::Value;

use crate::analysis::{Render, TemplateAnalysis};
use crate::generator::{generate, Request};

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseOutcome {
    /// The case id.
    pub id: String,
    /// Whether it passed.
    pub passed: bool,
    /// Why it failed (empty when it passed).
    pub detail: String,
}

fn args_value(s: &str, partial: bool) -> Value {
    match serde_json::from_str::<Value>(s) {
        Ok(v) => v,
        Err(_) if partial || s.trim().is_empty() => Value::Null,
        Err(_) => Value::String(s.to_owned()),
    }
}

fn empty_args(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(|m| m.is_empty())
}

/// Compares a parsed message with the expected one (trimmed text, JSON arguments).
pub fn compare_message(got: &ChatMessage, expected: &Value, partial: bool) -> Result<(), String> {
    let s = |k: &str| expected.get(k).and_then(Value::as_str).unwrap_or("").trim().to_owned();
    if got.content.trim() != s("content") {
        return Err(format!("content {:?} != expected {:?}", got.content.trim(), s("content")));
    }
    if got.reasoning_content.trim() != s("reasoning_content") {
        return Err(format!("reasoning {:?} != expected {:?}", got.reasoning_content.trim(), s("reasoning_content")));
    }
    let exp_calls = expected.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
    if exp_calls.len() != got.tool_calls.len() {
        return Err(format!("{} tool calls != expected {}: {:?}", got.tool_calls.len(), exp_calls.len(), got.tool_calls));
    }
    for (g, e) in got.tool_calls.iter().zip(&exp_calls) {
        let en = e.get("name").and_then(Value::as_str).unwrap_or("");
        if g.name != en {
            return Err(format!("tool name {:?} != expected {en:?}", g.name));
        }
        let eid = e.get("id").and_then(Value::as_str).unwrap_or("");
        if !eid.is_empty() && g.id != eid {
            return Err(format!("tool id {:?} != expected {eid:?}", g.id));
        }
        let ea = args_value(e.get("arguments").and_then(Value::as_str).unwrap_or(""), partial);
        let ga = args_value(&g.arguments, partial);
        let same = ea == ga || (partial && (empty_args(&ea) || ga.is_null()) && empty_args(&ea) == empty_args(&ga))
            || (partial && ga.is_null() && empty_args(&ea));
        if !same {
            return Err(format!("arguments {} != expected {}", g.arguments, ea));
        }
    }
    Ok(())
}

/// Runs one `parse` case with a renderer for its template and the template's cached analysis.
pub fn run_parse_case(case: &Value, r: &dyn Render, analysis: &TemplateAnalysis) -> CaseOutcome {
    let id = case.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
    let fail = |detail: String| CaseOutcome { id: id.clone(), passed: false, detail };
    let req = Request::from_inputs(&case["inputs"]);
    let output = case.get("model_output").and_then(Value::as_str).unwrap_or("");
    let partial = case.get("is_partial").and_then(Value::as_bool).unwrap_or(false);
    let expect_failure = case.get("expect_failure").and_then(Value::as_bool).unwrap_or(false);
    let gen = match generate(r, analysis, &req) {
        Ok(g) => g,
        Err(e) => return fail(format!("generate: {e}")),
    };
    let options = ChatParseOptions {
        tools: req.tools.iter().filter_map(ToolSpec::from_openai).collect(),
        prefill: gen.prefill.clone(),
        strict: expect_failure,
        ..ChatParseOptions::default()
    };
    let parser = ChatParser::new(Arc::clone(&gen.arena), options);
    let parsed = parser.parse(output, partial);
    if expect_failure {
        return match parsed {
            Err(_) => CaseOutcome { id, passed: true, detail: String::new() },
            Ok(p) if p.diagnostic.is_some() => CaseOutcome { id, passed: true, detail: String::new() },
            Ok(p) => fail(format!("expected a parse failure, got {:?}", p.message)),
        };
    }
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => return fail(format!("parse error: {e}")),
    };
    if let Err(e) = compare_message(&parsed.message, &case["expected"], partial) {
        return fail(format!("{e} (diagnostic {:?}, prefill {:?})", parsed.diagnostic, gen.prefill));
    }
    // Streaming: small chunks, no failure, deltas add up to the final message.
    let mut stream = parser.stream();
    let mut deltas = Vec::new();
    let mut i = 0;
    while i < output.len() {
        let mut j = (i + 3).min(output.len());
        while !output.is_char_boundary(j) {
            j += 1;
        }
        match stream.push(&output[i..j]) {
            Ok(d) => deltas.extend(d),
            Err(e) => return fail(format!("stream push failed at {i}: {e}")),
        }
        i = j;
    }
    let final_msg = if partial {
        stream.message().clone()
    } else {
        match stream.finish() {
            Ok((d, p)) => {
                deltas.extend(d);
                p.message
            }
            Err(e) => return fail(format!("stream finish failed: {e}")),
        }
    };
    let from_deltas = ChatMessage::from_deltas(&deltas);
    if from_deltas != final_msg {
        return fail(format!("stream deltas {from_deltas:?} != final {final_msg:?}"));
    }
    if !partial && final_msg != parsed.message {
        return fail(format!("stream result {final_msg:?} != one-shot {:?}", parsed.message));
    }
    // The grammar accepts the output (from the first trigger on, when lazy).
    if let (Some(g), false) = (&gen.grammar, partial) {
        if let Err(e) = grammar_accepts(g, &gen, output, analysis) {
            return fail(e);
        }
    }
    CaseOutcome { id, passed: true, detail: String::new() }
}

fn grammar_accepts(g: &str, gen: &crate::generator::GeneratedParser, output: &str, a: &TemplateAnalysis) -> Result<(), String> {
    let grammar = peg_runtime::gbnf::Grammar::parse(g).map_err(|e| format!("grammar does not parse: {e}"))?;
    let text = if gen.grammar_lazy {
        // Skip reasoning blocks, then find the first trigger.
        let mut from = 0;
        let full = format!("{}{}", gen.prefill, output);
        let (s, e) = (a.reasoning.start.trim(), a.reasoning.end.trim());
        if !e.is_empty() {
            if let Some(k) = full.find(e) {
                if s.is_empty() || full[..k].contains(s) {
                    from = k + e.len();
                }
            }
        }
        let from = from.saturating_sub(gen.prefill.len()).min(output.len());
        let mut best: Option<usize> = None;
        for t in &gen.grammar_triggers {
            let pos = match t {
                crate::generator::GrammarTrigger::Word(w) => output[from..].find(w.as_str()),
                crate::generator::GrammarTrigger::Pattern(_) => output[from..].find(['{', '[']),
            };
            if let Some(p) = pos {
                best = Some(best.map_or(p, |b: usize| b.min(p)));
            }
        }
        match best {
            Some(p) => &output[from + p..],
            None => return Ok(()),
        }
    } else {
        output
    };
    if grammar.accepts(text) {
        Ok(())
    } else {
        Err(format!("grammar rejects {text:?}"))
    }
}

/// Pass counts of a corpus run.
#[derive(Debug, Clone, Default)]
pub struct CorpusReport {
    /// Parse cases run.
    pub total: usize,
    /// Parse cases passed.
    pub passed: usize,
    /// Every failed case.
    pub failures: Vec<CaseOutcome>,
    /// Per template: (passed, total).
    pub per_template: std::collections::BTreeMap<String, (usize, usize)>,
}

/// Runs every `parse` case of `corpus_dir/chat-cases.jsonl` with templates from
/// `templates_dir` (inline `template_source` cases too), analyzing each template once.
pub fn run_corpus(corpus_dir: &std::path::Path, templates_dir: &std::path::Path) -> Result<CorpusReport, String> {
    use crate::template::ChatTemplate;
    let path = corpus_dir.join("chat-cases.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cache: std::collections::HashMap<String, Result<(ChatTemplate, TemplateAnalysis), String>> = Default::default();
    let mut report = CorpusReport::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        if case.get("kind").and_then(Value::as_str) != Some("parse") {
            continue;
        }
        let name = case.get("template").and_then(Value::as_str).unwrap_or("inline").to_owned();
        let source = match case.get("template").and_then(Value::as_str) {
            Some(n) => {
                let p = templates_dir.join(format!("{n}.jinja"));
                std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?
            }
            None => case.get("template_source").and_then(Value::as_str).unwrap_or("").to_owned(),
        };
        let entry = cache.entry(source.clone()).or_insert_with(|| {
            let t = ChatTemplate::from_source(&source, "", "").map_err(|e| e.to_string())?;
            let a = crate::analysis::analyze_template(&t).map_err(|e| e.to_string())?;
            Ok((t, a))
        });
        let outcome = match entry {
            Ok((t, a)) => run_parse_case(&case, &crate::analysis::TemplateRender(t), a),
            Err(e) => CaseOutcome {
                id: case.get("id").and_then(Value::as_str).unwrap_or("").to_owned(),
                passed: false,
                detail: format!("analysis: {e}"),
            },
        };
        report.total += 1;
        let slot = report.per_template.entry(name).or_default();
        slot.1 += 1;
        if outcome.passed {
            report.passed += 1;
            slot.0 += 1;
        } else {
            report.failures.push(outcome);
        }
    }
    Ok(report)
}
