//! The parser arena for a request, built from the analysis with the Builder DSL.

use peg_runtime::schema::Admits;
use peg_runtime::{Arena, Builder, Error, Parser};
use serde_json::Value;

use super::literal::{JsonInString, LiteralSchema, PythonSpelling, Spelling};
use crate::format::{AddressedParts, ContentMode, ElementSyntax, ReasoningMode, TemplateAnalysis, ToolFormat, with_name};
use crate::policy::{Calls, Policy, json_arguments, json_response};
use crate::request::Request;

mod recovery;

use peg_runtime::chat::RecoveryKind;

/// The rule of the tool section (a grammar trigger rule).
const SECTION_RULE: &str = "tool-calls";

/// The semantic tags of the chat shapes (the chat mapper reads these).
use peg_runtime::chat::tags;

/// A literal that tolerates whitespace differences: surrounding whitespace of `s` is optional.
fn lit<'a>(b: &'a Builder, s: &str) -> Parser<'a> {
    let t = s.trim();
    if t.is_empty() { b.space() } else { b.space() + b.literal(t) }
}

/// A literal a name follows: like [`lit`], and a word-style opener keeps the space it ends
/// with (`§§ call NAME`, `Action: NAME`). Digits in it number the calls (`<call n="1" name="`,
/// `1. NAME`): they match any digits.
fn opener<'a>(b: &'a Builder, s: &str) -> Parser<'a> {
    if s.trim().is_empty() || s.trim_end().len() == s.len() { lit_indexed(b, s) } else { lit_indexed(b, s) + b.space() }
}

/// Text up to one of `delims` where `real_end` (a parser from the delimiter on) matches: a
/// delimiter not followed so is text, and the scan goes on past its first character.
fn text_to_real_end<'a>(b: &'a Builder, delims: &[String], real_end: impl Fn() -> Parser<'a>) -> Parser<'a> {
    b.until_one_of(delims) + b.zero_or_more(b.negate(real_end()) + b.any() + b.until_one_of(delims))
}

/// A marker string that may carry a call index (`:0`, `:1`): digits match any digits.
fn lit_indexed<'a>(b: &'a Builder, s: &str) -> Parser<'a> {
    let t = s.trim();
    match t.find(|c: char| c.is_ascii_digit()) {
        Some(i) => {
            let j = t[i..].find(|c: char| !c.is_ascii_digit()).map_or(t.len(), |k| i + k);
            let mut p = b.space();
            if i > 0 {
                p = p + b.literal(&t[..i]);
            }
            p = p + b.chars("[0-9]", 1, None);
            if j < t.len() {
                p = p + b.literal(&t[j..]);
            }
            p
        }
        None => lit(b, s),
    }
}

/// A marker, or a plain-word opener with punctuation of its own (`§§ call `, `Action: `):
/// either way nothing else in the output is written like it.
fn distinct(s: &str) -> bool {
    crate::analysis::segment::first_marker(s).is_some()
        || crate::analysis::text::open_tail(s).is_some()
        || (s.len() >= 3 && s.chars().any(|c| !c.is_alphanumeric() && !c.is_whitespace() && c != '_'))
}

/// Whether each call of a tag format opens with its name prefix, no per-call opener before it
/// (`<invoke name="`, `BEGIN CALL `): that prefix announces a call as a per-call opener does
/// (alone where it is distinct, with each declared name where it is plain words or a lone
/// bracket), with or without the section around the calls.
fn name_prefix_opens_calls(a: &TemplateAnalysis) -> bool {
    let f = &a.tools.format;
    f.mode != ToolFormat::JsonNative && f.per_call_opener().is_empty() && !a.tools.function.name_prefix.trim().is_empty()
}

/// The words that start a tool section (grammar triggers, content delimiters).
///
/// Where a call opens with plain words only (`CALL get_weather {...}`), the opener with each
/// declared name (`tools`): the words alone also start prose, and a bracket would start a
/// grammar after the name it begins with.
pub fn trigger_words(a: &TemplateAnalysis, tools: &[(String, Value)]) -> Vec<String> {
    let f = &a.tools.format;
    let mut out: Vec<String> = Vec::new();
    // Both the section and the per-call opener announce calls: models drop the section
    // wrapper when each call has its own.
    // A per-call opener that also opens content or reasoning (`<|open|>` of
    // `<|open|>response<|sep|>`) announces a call only with the name prefix glued to it
    // (`<|open|>call tool="`).
    let np_raw = &a.tools.function.name_prefix;
    let pcs = f.per_call_opener();
    let shared_opener = !pcs.is_empty() && [&a.content.start, &a.reasoning.start].iter().any(|m| m.trim().starts_with(pcs));
    let per_call = if shared_opener && np_raw.starts_with(|c: char| !c.is_whitespace()) { format!("{pcs}{}", np_raw.trim_end()) } else { pcs.to_owned() };
    for s in [f.section_start.trim(), per_call.as_str()] {
        if !s.is_empty() && !out.iter().any(|x| x == s) {
            out.push(s.to_owned());
        }
    }
    let np = a.tools.function.name_prefix.trim();
    // A name prefix announces a call where no section does, and where no per-call opener does
    // (MiniMax's `<invoke name="` inside `<minimax:tool_call>`: models drop the section there
    // too): alone where it is a marker, with each declared name where it is not.
    let np_is_marker = distinct(np);
    let opens = name_prefix_opens_calls(a);
    let unsectioned = f.mode != ToolFormat::JsonNative && np_is_marker && f.section_start.trim().is_empty();
    if (unsectioned || (opens && np_is_marker)) && !out.iter().any(|x| x == np) {
        out.push(np.to_owned());
    }
    if (out.is_empty() || (opens && !np_is_marker)) && a.tools.format.mode != ToolFormat::JsonNative && !np.is_empty() {
        let opener = a.tools.function.name_prefix.trim_start();
        for name in tools.iter().map(|(name, _)| format!("{opener}{name}")) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    // A call opened by its bare name, followed by what prose does not write after one: a
    // marker (`get_weather\n```python\n`) or the JSON arguments (`get_weather\n{`). Each
    // declared name with it. (Not a lone bracket: `get_weather(city)` is also how prose
    // names a function.)
    let ns = &a.tools.function.name_suffix;
    let (after_name, told) = match a.tools.format.mode {
        ToolFormat::TagWithJson => (format!("{ns}{}{{", a.tools.arguments.start), true),
        _ => (ns.trim_end().to_owned(), distinct(ns.trim())),
    };
    if out.is_empty() && a.tools.format.mode != ToolFormat::JsonNative && np.is_empty() && told {
        out.extend(tools.iter().map(|(name, _)| format!("{name}{after_name}")));
    }
    out
}

/// The grammar triggers of addressed parts: the header of a part addressed to each function,
/// after the part start (`>>>get_weather\n`); where the prompt opens the first part, also that
/// header at the start of the output (an anchored pattern).
pub fn part_triggers(pa: &AddressedParts, names: &[String]) -> Vec<super::GrammarTrigger> {
    use super::GrammarTrigger;
    let mut out = Vec::new();
    for n in names {
        let header = pa.header(n);
        out.push(GrammarTrigger::Word(format!("{}{header}", pa.part_start.trim())));
        if !pa.part_start.trim().is_empty() {
            out.push(GrammarTrigger::Pattern(format!("^{}", regex_escaped(&header))));
        }
    }
    out
}

/// The trigger of calls no marker announces, a call opening with its bare name: the output
/// is the calls, so the pattern is anchored at its start. `None` where calls open otherwise.
pub fn bare_name_trigger(a: &TemplateAnalysis, names: &[String]) -> Option<super::GrammarTrigger> {
    let bare = a.tools.format.mode != ToolFormat::JsonNative && a.tools.function.name_prefix.trim().is_empty() && !names.is_empty();
    let alts: Vec<String> = names.iter().map(|n| regex_escaped(n)).collect();
    bare.then(|| super::GrammarTrigger::Pattern(format!("^\\s*({})", alts.join("|"))))
}

/// `text` as a regular expression matching it literally.
fn regex_escaped(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => "\\n".to_owned(),
            '\t' => "\\t".to_owned(),
            c if c.is_alphanumeric() || c == '_' || c == ' ' => c.to_string(),
            c => format!("\\{c}"),
        })
        .collect()
}

/// A schema admitting strings (perhaps among other types, `["string", "null"]`,
/// `anyOf: [{type: string}, {type: null}]`): XML-style formats write its values raw.
fn is_string_schema(s: &Value) -> bool {
    Admits::of(s).string
}

/// The string part of a schema admitting strings: what a raw value that is not one of the
/// other types must match.
fn string_part(s: &Value) -> Value {
    let mut out = s.clone();
    let Some(obj) = out.as_object_mut() else { return out };
    if let Some(Value::Array(e)) = obj.get_mut("enum") {
        e.retain(Value::is_string);
    }
    if obj.get("type").is_some_and(Value::is_array) {
        obj.insert("type".into(), "string".into());
    } else if obj.get("type").is_none() {
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = obj.get(key) else { continue };
            let strings: Vec<Value> = branches.iter().filter(|b| Admits::of(b).string).map(string_part).collect();
            obj.remove(key);
            if let [one] = strings.as_slice() {
                // The one string branch, with the keywords beside the union.
                for (k, v) in one.as_object().into_iter().flatten() {
                    obj.entry(k.clone()).or_insert_with(|| v.clone());
                }
            } else {
                obj.insert(key.into(), Value::Array(strings));
            }
            break;
        }
    }
    out
}

/// A schema typing only numbers, booleans (or null): no strings, lists or mappings.
fn is_scalar_schema(s: &Value) -> bool {
    let scalar = |t: &Value| matches!(t.as_str(), Some("integer" | "number" | "boolean" | "null"));
    match s.get("type") {
        Some(Value::String(_)) => scalar(&s["type"]),
        Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(scalar),
        _ => false,
    }
}

/// A schema of numbers only: JSON and Python literals spell its values alike.
fn spelled_alike(s: &Value) -> bool {
    let number = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    match s.get("type") {
        Some(Value::String(_)) => number(&s["type"]),
        Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(number),
        _ => false,
    }
}

/// How an element-style value is read, by its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    /// A mapping: member elements.
    Object,
    /// A list: item elements.
    Array,
    /// Only strings: raw text.
    String,
    /// Numbers, booleans, null: one token.
    Scalar,
    /// Untyped, or a union of nested and other values: any element value.
    Any,
    /// A top-level string or scalar: read as other formats' raw values.
    Other,
}

impl ElementKind {
    fn of(s: &Value) -> ElementKind {
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
            _ => Vec::new(),
        };
        let nested = |t: &&str| *t == "object" || *t == "array";
        match types.as_slice() {
            ["object"] => ElementKind::Object,
            ["array"] => ElementKind::Array,
            [] if s.get("properties").is_some() => ElementKind::Object,
            [] if s.get("items").is_some() => ElementKind::Array,
            [] if Admits::of(s) == Admits::default() => ElementKind::Any,
            ts if ts.iter().any(nested) => ElementKind::Any,
            ["string"] => ElementKind::String,
            _ if !Admits::of(s).string && Admits::of(s).other => ElementKind::Scalar,
            [] if Admits::of(s).string && !Admits::of(s).other => ElementKind::String,
            _ => ElementKind::Other,
        }
    }
}

/// Whether marker `m` is spelled as an opening (`<|tool_response>`, `<result>`), not a close.
fn is_opening(m: &str) -> bool {
    let m = m.trim();
    let special = m.starts_with("<|") && m.ends_with('>') && !m.ends_with("|>");
    let word_start = m.strip_prefix('<').and_then(|r| r.chars().next()).is_some_and(|c| c.is_alphanumeric() || c == '_');
    let element = word_start && m.ends_with('>') && !m.ends_with("/>");
    special || element
}

/// Arguments past which a grammar no longer tracks which were written (its rules grow as
/// two to this power).
const MAX_EXACT_ARGUMENTS: usize = 6;

/// How a call's function name may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names<'n> {
    /// Exactly this tool.
    One(&'n str),
    /// Any tool of the request.
    Declared,
    /// Any name (a call after a marker that announces calls; the mapper flags unknown ones).
    Any,
}

struct Ctx<'a, 'b> {
    b: &'b Builder,
    a: &'a TemplateAnalysis,
    policy: &'a Policy,
    /// Build for the grammar: it constrains only the model output, so what the prefill
    /// already wrote (an opened or closed reasoning block) is left out.
    prefill_for_grammar: Option<&'a str>,
    /// The calls content may hold ([`Ctx::embedded_calls`]), built once for every text.
    embedded: std::cell::OnceCell<Parser<'b>>,
}

impl<'a, 'b> Ctx<'a, 'b> {
    fn extract_reasoning(&self) -> bool {
        self.policy.extract_reasoning
    }

    /// The reasoning block, optional.
    fn reasoning(&self) -> Parser<'b> {
        self.reasoning_before(None)
    }

    /// The reasoning block, optional; `calls` is what follows when the model goes from
    /// reasoning straight to a tool call (the section to the end of the output).
    fn reasoning_before(&self, calls: Option<Parser<'b>>) -> Parser<'b> {
        let b = self.b;
        let r = &self.a.reasoning;
        if r.mode == ReasoningMode::None || r.end_marker().is_empty() {
            return self.unknown_reasoning();
        }
        let (s, e) = (r.start.trim(), r.end_marker());
        let mut s = s;
        if let Some(prefill) = self.prefill_for_grammar {
            let p = prefill.trim();
            if !p.is_empty() && p.ends_with(e) {
                return b.space(); // closed by the prompt
            }
            if !s.is_empty() && p.ends_with(s) {
                s = ""; // opened by the prompt: the output starts inside reasoning
            } else if self.a.header_per_part && !p.is_empty() {
                // The prompt wrote the header the start marker begins with.
                s = s.strip_prefix(p).unwrap_or(s).trim();
            }
        }
        let body = b.until(e);
        let block = if self.extract_reasoning() {
            // Models may go from reasoning straight to a tool call: it ends reasoning too.
            let triggers = if self.tools_on() { trigger_words(self.a, &self.policy.tools) } else { Vec::new() };
            let (inner, close) = if triggers.is_empty() || r.start.trim().is_empty() {
                (b.tag(tags::REASONING, body), b.literal(e))
            } else {
                let mut d = vec![e.to_owned()];
                d.extend(triggers.iter().cloned());
                let inner = b.tag(tags::REASONING, b.until_one_of(d));
                match calls {
                    // Reasoning that only a line break ends (`Thought: ...`): its first line,
                    // then more lines only where calls follow them (without calls they are
                    // content). Held back whole until that is known, so no delta is retracted.
                    Some(calls) if e == "\n" => {
                        let first = b.tag(tags::REASONING, b.until("\n"));
                        let more = b.atomic(b.tag(tags::REASONING, b.until_one_of(triggers)) + b.peek(calls));
                        (first + b.optional(more), b.optional(b.literal(e)))
                    }
                    // A trigger ends the reasoning only when the calls from it run to the end
                    // of the output; otherwise (a call quoted in the reasoning) the block goes
                    // on to its end marker. The lookahead tags nothing, so a stream only ever
                    // extends the reasoning.
                    Some(calls) => {
                        let quoted = b.tag(tags::REASONING, b.until(e)) + e;
                        // Where the template ends reasoning with the calls themselves, that is
                        // no missing marker.
                        let unclosed =
                            if self.a.tools.format.calls_end_reasoning { b.peek(calls) } else { self.recovered(RecoveryKind::ReasoningMarker, b.peek(calls)) };
                        (inner, b.choice([b.literal(e), unclosed, b.end(), quoted]))
                    }
                    None => (inner, b.optional(b.literal(e))),
                }
            };
            if s.is_empty() {
                inner + close
            } else if self.recovering() {
                // Models write the start marker again after the prompt's.
                // A block holding only the marker is kept as written (nothing to recover).
                let again = b.optional(self.recovered(RecoveryKind::ReasoningMarker, b.space() + s + b.negate(b.space() + r.end_marker())));
                b.space() + s + again + inner + close
            } else {
                b.space() + s + inner + close
            }
        } else {
            // Reasoning stays in the content, with the whitespace after it.
            let whole = if s.is_empty() { body + e } else { b.space() + s + body + e };
            if self.prefill_for_grammar.is_some() && s.is_empty() && !r.start.trim().is_empty() {
                return b.optional(whole + b.space());
            }
            // Atomic: while incomplete, the block may still turn out not to be reasoning.
            return b.optional(b.atomic(b.tag(tags::CONTENT, whole + b.space())));
        };
        // Recovering, where the output opens the block: one in the tags another family thinks
        // in (`<thinking>` for `<think>`), tried first (`<think>` begins `<thinking>`).
        let others = if self.recovering() && !s.is_empty() { self.conventional_reasoning_blocks(s) } else { Vec::new() };
        let block = if others.is_empty() { block } else { b.choice([self.recovered(RecoveryKind::ReasoningMarker, b.space() + b.choice(others)), block]) };
        b.optional(block) + b.space()
    }

    /// Where the template knows no reasoning: a block in tags several families think in
    /// (`<think>…</think>`) that opens the output, when recovering and reasoning is
    /// extracted, reported (models tuned to reason keep doing it under a template that never
    /// shows it: a distill's base template). Left open, it runs to the end, as a stream that
    /// sent it as reasoning would have it.
    fn unknown_reasoning(&self) -> Parser<'b> {
        let b = self.b;
        if !self.recovering() || !self.extract_reasoning() {
            return b.eps();
        }
        let blocks = self.conventional_reasoning_blocks("");
        b.optional(self.recovered(RecoveryKind::ReasoningMarker, b.space() + b.choice(blocks)) + b.space())
    }

    /// A reasoning block in each of the tags several families think in but `except` (a start
    /// marker): left open, it runs to the end.
    fn conventional_reasoning_blocks(&self, except: &str) -> Vec<Parser<'b>> {
        let b = self.b;
        crate::registry::CONVENTIONAL_REASONING_TAGS
            .iter()
            .filter(|(s, _)| *s != except)
            .map(|(s, e)| b.literal(s) + b.tag(tags::REASONING, b.until(e)) + b.optional(b.literal(e)))
            .collect()
    }

    /// When reasoning is extracted: what matches reasoning-marker noise in the content (an
    /// empty block, possibly after stray opening tokens, or a stray end marker), the opening
    /// token of the start marker and the end marker.
    fn reasoning_noise(&self) -> Option<(Parser<'b>, String, String)> {
        let b = self.b;
        let r = &self.a.reasoning;
        let (s, e) = (r.start.trim(), r.end.trim());
        // Not in the grammar: GBNF has no lookahead, and the model need not write noise.
        if self.prefill_for_grammar.is_some() || !self.extract_reasoning() || r.mode == ReasoningMode::None || s.is_empty() || e.is_empty() {
            return None;
        }
        let open_tok = crate::analysis::segment::first_marker(s).filter(|(i, _)| *i == 0).map_or(s, |(_, m)| m);
        // A stray token is one another follows (PEG repetition does not give back).
        let stray = b.zero_or_more(b.literal(open_tok) + b.peek(b.literal(open_tok)));
        let empty_block = stray + b.literal(s) + b.space() + b.literal(e);
        Some((b.choice([empty_block, b.literal(e)]), open_tok.to_owned(), e.to_owned()))
    }

    /// Content up to one of `stops` (or the end), unwrapping content markers.
    fn content(&self, stops: &[String]) -> Parser<'b> {
        let b = self.b;
        let c = &self.a.content;
        let (cs, ce) = (c.start.trim(), c.end.trim());
        let mut delims: Vec<String> = stops.iter().filter(|s| !s.is_empty()).cloned().collect();
        if c.mode != ContentMode::Plain && !ce.is_empty() {
            delims.push(ce.to_owned());
        }
        let eot = self.a.end_of_turn.trim();
        // Text that is dropped (marker noise) and the delimiters kept as text when they are not.
        let mut drops: Vec<Parser<'b>> = Vec::new();
        let mut kept: Vec<String> = Vec::new();
        if let Some((noise, open_tok, end)) = self.reasoning_noise() {
            // Empty reasoning blocks and stray end markers around the content are not text.
            drops.push(noise);
            kept.push(open_tok);
            kept.push(end);
        }
        // Calls of declared tools the model wrote inside its text.
        let embedded = self.recovering() && self.prose_calls();
        // Code fences and wrapper tokens before a call's marker.
        let decorated = self.recovering() && self.tools_on() && !stops.is_empty();
        if embedded || decorated {
            kept.extend(self.embedded_starts(embedded));
        }
        if decorated {
            let stop_marks: Vec<Parser<'b>> = stops.iter().filter(|s| !s.is_empty()).map(|s| b.literal(s)).collect();
            drops.push(self.decoration_before(b.choice(stop_marks)));
        }
        let plain = c.mode == ContentMode::Plain || cs.is_empty();
        if plain && !eot.is_empty() && self.prefill_for_grammar.is_none() {
            // Models write the end-of-turn marker the template puts after the content: dropped
            // where the output ends (elsewhere it is text; templates may even render calls
            // after it, `<|message_sep|>function call`).
            drops.push(b.literal(eot) + b.space() + b.end());
            kept.push(eot.to_owned());
        }
        let body = if drops.is_empty() && !embedded {
            b.tag(tags::CONTENT, if delims.is_empty() { b.rest() } else { b.until_one_of(delims) })
        } else {
            let mut d = delims.clone();
            d.extend(kept.iter().cloned());
            // Where text ends: a stop, or what follows text (noise, a call the model wrote in
            // it). Kept tokens that start none of these are text.
            let ends: Vec<Parser<'b>> = delims.iter().map(|s| b.literal(s)).collect();
            let mut mids = drops.clone();
            if embedded {
                // Text after a call is reported (at its start); the call is in prose unless it
                // comes first.
                // (The end-of-turn marker where the output ends is no text: it is dropped.)
                let output_end = || if eot.is_empty() { b.end() } else { b.choice([b.end(), b.literal(eot) + b.space() + b.end()]) };
                let around = || b.optional(self.recovered(RecoveryKind::TextAroundCalls, b.space() + b.negate(output_end())));
                let calls = self.embedded_calls();
                let f = &self.a.tools.format;
                let unmarked = f.section_start.trim().is_empty() && f.per_call_start.trim().is_empty();
                // First, a call is a call; where the template marks calls, one without its
                // markers is another shape (other syntaxes report themselves).
                let first = if self.json_calls() && !unmarked { self.recovered(RecoveryKind::CallShape, calls) } else { calls };
                drops.push(first + around());
                drops.extend(self.whole_output_python_calls());
                // Where the template itself writes unmarked calls after text, that is no deviation.
                let own = self.json_calls() && f.calls_after_content && unmarked;
                mids.push(if own { calls } else { self.recovered(RecoveryKind::CallInProse, calls) } + around());
            }
            let mut breaks = ends.clone();
            breaks.extend(mids.iter().copied());
            // One node per run of text, however many delimiters it holds: a stream re-reads the
            // AST on each parse.
            let piece = || b.tag(tags::CONTENT, text_to_real_end(b, &d, || b.choice(breaks.clone())));
            let mut more = b.choice(mids) + piece();
            let mut lead = b.choice(drops);
            if !ends.is_empty() {
                // A kept token may begin a stop (`<|open|>` of `<|open|>call<|sep|>`): the stop
                // wins, as it does over a wrapper token around embedded calls.
                more = b.negate(b.choice(ends.clone())) + more;
                lead = b.negate(b.space() + b.choice(ends)) + lead;
            }
            b.zero_or_more(lead) + piece() + b.zero_or_more(more)
        };
        // Where the template opens the content of a message with calls (`<|python_start|>`),
        // the opener goes before the text.
        let open = self.a.tools.format.content_open_with_calls.trim();
        let body = if !open.is_empty() && self.tools_on() { b.optional(b.literal(open)) + body } else { body };
        // Models repeat the turn header the generation prompt ends with.
        let th = self.a.turn_header.trim();
        let body = if plain && !th.is_empty() && self.prefill_for_grammar.is_none() { b.optional(b.literal(th)) + body } else { body };
        if c.mode != ContentMode::Plain && !cs.is_empty() {
            // A part of its own after reasoning repeats the turn header (`<|begin|>assistant`).
            let header = if th.is_empty() { b.eps() } else { b.optional(b.space() + th) };
            let mut p = header + b.optional(b.space() + cs) + body;
            if !ce.is_empty() {
                p = p + b.optional(b.literal(ce));
            }
            if !eot.is_empty() {
                p = p + b.optional(b.space() + eot);
            }
            p
        } else {
            body
        }
    }

    fn tools(&self) -> Vec<(String, Value)> {
        self.policy.tools.clone()
    }

    /// One call of `name`, JSON-native.
    fn json_call(&self, name: &str, schema: &Value) -> Parser<'b> {
        let args = if self.a.tools.format.args_as_string && !self.recovering() {
            self.string_arguments(name, schema)
        } else {
            self.or_loose_args(self.object_arguments(name, schema))
        };
        self.json_call_shaped(Names::One(name), args)
    }

    /// One JSON-native call in the template's shape: a name as `names` allows, arguments `args`.
    fn json_call_shaped(&self, names: Names<'_>, args: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let quoted_name = || "\"" + self.name_parser(names) + "\"";
        if f.fun_name_is_key {
            let open = b.tag(tags::TOOL_OPEN, b.literal("{"));
            return b.tag(tags::TOOL, open << quoted_name() << ":" << args << self.json_call_close());
        }
        let member = |key: &str| -> (Parser<'b>, bool) {
            if !f.function_field.is_empty() && key == f.function_field {
                let inner = "{" << b.json_member(&f.name_field, quoted_name()) << "," << b.json_member(&f.args_field, args) << "}";
                (b.json_member(key, inner), true)
            } else if key == f.name_field {
                (b.json_member(key, quoted_name()), true)
            } else if key == f.args_field {
                (b.json_member(key, args), true)
            } else if key == f.gen_id_field {
                let v = b.choice(["\"" + b.tag(tags::TOOL_ID, b.json_string_content()) + "\"", b.tag(tags::TOOL_ID, b.json_number())]);
                (b.json_member(key, v), false)
            } else if key == f.id_field {
                (b.json_member(key, "\"" + b.tag(tags::TOOL_ID, b.json_string_content()) + "\""), false)
            } else {
                (b.json_member(key, b.json()), false)
            }
        };
        let mut order = f.parameter_order.clone();
        if order.is_empty() {
            order = vec![f.name_field.clone(), f.args_field.clone()];
        }
        let mut body = b.tag(tags::TOOL_OPEN, b.literal("{"));
        let mut first = true;
        for key in &order {
            let (m, required) = member(key);
            let item = if first { b.space() + m } else { b.space() + "," + b.space() + m };
            if required {
                body = body + item;
                first = false;
            } else if first {
                body = body + b.optional(b.space() + m + b.space() + ",");
            } else {
                body = body + b.optional(item);
            }
        }
        b.tag(tags::TOOL, body + b.space() + self.json_call_close())
    }

    /// The call id section, `prefix id suffix`.
    fn call_id(&self) -> Parser<'b> {
        let b = self.b;
        let t = &self.a.tools;
        let id = &t.call_id;
        // The id runs to its suffix, or without one to the marker that follows it (an id in
        // an attribute, `<tool_call id="ID" name="NAME">`, is followed by `" name="`).
        use crate::format::CallIdPosition as P;
        let next = match id.pos {
            P::PreFuncName => t.function.name_prefix.trim(),
            P::BetweenFuncAndArgs => t.arguments.start.trim(),
            _ => "",
        };
        let stop = [id.suffix.trim(), next].into_iter().find(|m| !m.is_empty()).unwrap_or("\n").to_owned();
        // An id never spans lines: one that would is something else (the next call's markers).
        let body = if stop == "\n" { b.until(&stop) } else { b.until_one_of(vec![stop.clone(), "\n".to_owned()]) };
        let written = lit(b, &id.prefix) + b.tag(tags::TOOL_ID, body) + lit(b, &id.suffix);
        if !self.recovering() || id.prefix.trim().is_empty() {
            return written;
        }
        // Models leave the id out (`[TOOL_CALLS]get_weather[ARGS]{...}`): one is generated.
        // Reported where it belongs, once what follows shows it is missing.
        let missing = if !id.suffix.trim().is_empty() {
            // The suffix stays (`[ARGS]` after `[CALL_ID]...`).
            let suffix = self.recovered(RecoveryKind::MissingCallId, b.peek(lit(b, &id.suffix))) + lit(b, &id.suffix);
            if id.pos != crate::format::CallIdPosition::BetweenFuncAndArgs || self.a.tools.format.mode != ToolFormat::TagWithJson {
                suffix
            } else {
                // Or it went too, the object right after the name (`get_weather{...}`).
                b.choice([suffix, self.recovered(RecoveryKind::CallShape, b.space() + b.peek("{"))])
            }
        } else if id.pos == crate::format::CallIdPosition::BetweenFuncAndArgs {
            self.recovered(RecoveryKind::MissingCallId, b.peek(lit(b, &self.a.tools.arguments.start)))
        } else {
            return written;
        };
        b.choice([written, missing])
    }

    /// A call's arguments object as the template writes it: JSON following the tool's schema,
    /// or a Python literal (generated as the schema says, spelled as Python writes it).
    fn object_arguments(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        if !self.a.tools.format.uses_python_dicts {
            return json_arguments(b, name, schema);
        }
        let any = b.python_kind(peg_runtime::PythonKind::Dict);
        let spelled = LiteralSchema { b, spelling: &PythonSpelling, any, root: schema };
        let value = match spelled.value(schema, &format!("{name}-args")) {
            Some(g) => b.constrained(any, g),
            None => any,
        };
        b.tag(tags::TOOL_ARGS, value)
    }

    /// A call's arguments as a JSON string holding the object, as a template writes them
    /// (`"{\"city\": \"Paris\"}"`): generated as the schema says, spelled inside the string.
    fn string_arguments(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let string = b.json_string();
        let spelled = LiteralSchema { b, spelling: &JsonInString, any: self.json_in_string_value(), root: schema };
        let value = match spelled.value(schema, &format!("{name}-args")) {
            Some(g) => b.constrained(string, b.literal("\"") + g + b.literal("\"")),
            None => string,
        };
        b.tag(tags::TOOL_ARGS_STRING, value)
    }

    /// Any JSON value written inside a JSON string (see [`JsonInString`]): one recursive rule.
    fn json_in_string_value(&self) -> Parser<'b> {
        const RULE: &str = "json-in-string-value";
        let b = self.b;
        if b.has_rule(RULE) {
            return b.rule_ref(RULE);
        }
        let sp = &JsonInString;
        let s = || sp.space(b);
        let v = || b.rule_ref(RULE);
        let member = sp.any_key(b) + s() + ":" + s() + v();
        let object = "{" + s() + b.optional(member + b.zero_or_more(s() + "," + s() + member)) + s() + "}";
        let array = "[" + s() + b.optional(v() + b.zero_or_more(s() + "," + s() + v())) + s() + "]";
        let words = ["true", "false", "null"].map(|w| b.literal(w));
        b.rule(RULE, b.choice([sp.string(b, Value::Null, ""), b.json_number(), words[0], words[1], words[2], object, array]))
    }

    /// One call of `name`, tag-based.
    fn tag_call(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let args = if self.a.tools.format.mode == ToolFormat::TagWithJson {
            let json = || self.object_arguments(name, schema);
            if self.recovering() {
                // A Python dict before the JSON object: told by `{'`, so that a stream never
                // sends a `{` the dict then takes back (the dict is read whole).
                let python = (!self.a.tools.format.uses_python_dicts).then(|| b.space() + self.args_as_python());
                let alts = [
                    Some(b.space() + self.args_as_string()),
                    python,
                    Some(b.space() + self.args_as_js()),
                    Some(b.space() + json() + self.extra_braces(name, &[])),
                    Some(self.fenced(json())),
                    Some(b.space() + self.loose_args() + self.extra_braces(name, &[])),
                ];
                b.choice(alts.into_iter().flatten().collect::<Vec<_>>())
            } else {
                b.space() + json()
            }
        } else {
            self.tagged_args(name, schema)
        };
        let mut calls = vec![self.tag_call_with(self.name_parser(Names::One(name)), name, args)];
        if !self.recovering() {
            return calls[0];
        }
        // The recoveries below are read whole (atomic): a call announced in a stream must stay
        // a call whatever follows.
        if self.a.tools.format.mode == ToolFormat::TagWithTagged {
            // Models write the arguments as one JSON object where the template tags each.
            // Tried first: the call's own form would announce the name before the `{` shows
            // it is not that form, and this one is read whole (a stream would lose the call).
            let json = b.space() + b.peek("{") + b.tag(tags::TOOL_ARGS, b.json_object());
            calls.insert(0, self.recovered(RecoveryKind::CallShape, b.atomic(self.tag_call_with(self.name_parser(Names::One(name)), name, json))));
            // So are arguments as elements named by their keys (told by the key).
            if let Some(named) = self.args_as_named_elements(name, schema) {
                calls.insert(1, named);
            }
        }
        // A word before the name (`call:get_weather`) left out.
        let t = &self.a.tools;
        let np = t.function.name_prefix.trim();
        let word = !np.is_empty() && np.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'));
        if word && !t.function.indexed && crate::analysis::text::has_marker(t.format.per_call_start.trim()) {
            let mut unprefixed = self.a.tools.clone();
            unprefixed.function.name_prefix.clear();
            let call = self.with_tools(unprefixed, |ctx| ctx.tag_call(name, schema));
            calls.push(self.recovered(RecoveryKind::CallShape, b.atomic(call)));
        }
        if calls.len() == 1 { calls[0] } else { b.choice(calls) }
    }

    /// A tag-based call of a tool the request does not declare (the mapper flags it), where
    /// its close does not hold its name.
    fn undeclared_tag_call(&self) -> Option<Parser<'b>> {
        let b = self.b;
        let t = &self.a.tools;
        if t.function.close.contains(crate::format::NAME_SLOT) || t.arguments.start.contains(crate::format::NAME_SLOT) {
            return None;
        }
        let args = if self.a.tools.format.mode == ToolFormat::TagWithJson {
            // Arguments that open a value and then stop fitting are kept up to there (a stream
            // has sent that much), the rest read as what follows a call; no value at all is
            // no arguments.
            let cut = b.space() + b.tag(tags::TOOL_ARGS, b.json_prefix());
            b.choice([self.fenced(self.loose_args()), b.space() + self.loose_args(), cut, b.space() + b.tag(tags::TOOL_ARGS, b.eps())])
        } else {
            self.tagged_args("", &Value::Null)
        };
        let call = self.tag_call_with(self.name_parser(Names::Any), "", args);
        // Where nothing marks the name (`[f(a=1)]`), a word is a call only with what follows
        // a name (`(`): a word of text after the calls stays text.
        let t = &self.a.tools;
        if !t.function.name_prefix.trim().is_empty() {
            return Some(call);
        }
        // (JSON arguments right after the name open with their brace.)
        let json_open = if t.format.mode == ToolFormat::TagWithJson && t.call_id.pos != crate::format::CallIdPosition::BetweenFuncAndArgs { "{" } else { "" };
        let after_name = [t.function.name_suffix.trim(), t.arguments.start.trim(), json_open]
            .into_iter()
            .find(|m| !m.is_empty() && !m.contains(|c: char| c.is_ascii_digit()));
        Some(match after_name {
            Some(m) => b.peek(b.chars("[A-Za-z0-9_.-]", 1, None) + b.space() + b.literal(m)) + call,
            None => call,
        })
    }

    /// A tag-based call: its name parser `name` (the name for a close marker holding it:
    /// `close_name`) and its arguments.
    fn tag_call_with(&self, name: Parser<'b>, close_name: &str, args: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let t = &self.a.tools;
        use crate::format::CallIdPosition as P;
        let mut open = b.eps();
        if t.call_id.pos == P::PreFuncName {
            open = open + self.call_id();
        }
        // `functions.NAME:0` is the call id, with the name inside; an opener with attributes
        // (`call tool="NAME" index="1"`) only numbers the calls.
        if t.function.names_in_ids() {
            let np = t.function.name_prefix.trim();
            let id = b.literal(np) + name + lit_indexed(b, &t.function.name_suffix);
            // Atomic: the name inside is announced only with the whole id.
            let mut whole = b.atomic(b.tag(tags::TOOL_ID, id));
            if self.recovering() && !np.is_empty() {
                // Models leave out the id's prefix or its index (`get_weather:0`,
                // `functions.get_weather`): the name is still the name, the text the id. Only
                // with the arguments' opener after it: a word of text is no call until then, and
                // a stream must not announce one that the text goes on to unmake.
                let partial = b.optional(b.literal(np)) + name + b.optional(lit_indexed(b, &t.function.name_suffix));
                let args_next = if t.arguments.start.trim().is_empty() { b.eps() } else { b.peek(lit(b, &t.arguments.start)) };
                whole = b.choice([whole, self.recovered(RecoveryKind::CallShape, b.atomic(b.tag(tags::TOOL_ID, partial) + args_next))]);
            }
            open = open + b.space() + whole;
        } else {
            let own = opener(b, &t.function.name_prefix) + name + lit_indexed(b, &t.function.name_suffix);
            let own = self.attribute_quotes(own, &t.function.name_prefix, name, &t.function.name_suffix);
            // The marker after the name: its suffix, or the arguments' opener.
            let suffix = [t.function.name_suffix.trim(), t.arguments.start.trim()].into_iter().find(|m| !m.is_empty()).unwrap_or_default();
            let typed_first = self.recovering()
                && t.format.mode == ToolFormat::TagWithJson
                && t.function.name_prefix.trim().is_empty()
                && t.call_id.pos == P::None
                && crate::analysis::text::has_marker(suffix);
            open = open
                + if typed_first {
                    // The call's type before its name, joined by the marker that follows the
                    // name (`function<｜tool▁sep｜>get_weather` then the arguments, DeepSeek V3's
                    // form where V3.1 writes `get_weather<｜tool▁sep｜>`).
                    let typed = b.literal("function") + b.literal(suffix) + name + b.peek(b.space() + b.choice([b.literal("{"), b.literal("```")]));
                    b.choice([own, self.recovered(RecoveryKind::CallShape, typed)])
                } else {
                    own
                };
        }
        if t.call_id.pos == P::BetweenFuncAndArgs {
            open = open + self.call_id();
        }
        let mut args_start = lit(b, &with_name(&t.arguments.start, close_name));
        if self.recovering() && self.a.tools.format.mode == ToolFormat::TagWithJson && !t.arguments.start.trim().is_empty() {
            // The arguments' marker left out, the object right after the name (`f{"a": 1}`).
            args_start = b.choice([args_start, self.recovered(RecoveryKind::CallShape, b.space() + b.peek(b.choice([b.literal("{"), b.literal("```")])))]);
        }
        let mut body = b.tag(tags::TOOL_OPEN, open) + args_start + args;
        // A grammar writes nothing between an inline raw value and what ends it: the parser
        // would read it as the value's.
        let tight = self.raw_inline() && !self.recovering();
        body = body
            + match (t.arguments.end.trim().is_empty(), tight) {
                (true, true) => b.eps(),
                (true, false) => lit(b, &t.arguments.end),
                _ => self.closing(lit(b, &t.arguments.end), &t.arguments.end, false),
            };
        if t.call_id.pos == P::PostArgs {
            body = body + self.call_id();
        }
        let fun_close = with_name(&t.function.close, close_name);
        let close = match (fun_close.trim().is_empty(), tight) {
            (true, _) => b.eps(),
            (false, true) => self.closing(b.literal(fun_close.trim()), &fun_close, false),
            (false, false) => self.closing(lit(b, &fun_close), &fun_close, false),
        };
        b.tag(tags::TOOL, body + b.tag(tags::TOOL_CLOSE, close))
    }

    /// Tagged arguments: any order, each `name_prefix NAME name_suffix value value_suffix`.
    pub(super) fn tagged_args(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let ar = &self.a.tools.arguments;
        let props: Vec<(String, Value)> =
            schema.get("properties").and_then(Value::as_object).map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
        let vs = ar.value_suffix.trim();
        let names: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
        let one = |arg: &str, s: &Value| -> Parser<'b> {
            // A value suffix naming its argument (`</alpha>`).
            let vs_named = with_name(vs, arg);
            let vs = vs_named.as_str();
            // (Inline raw values: the name right after the separator, as the value ends there.)
            let lead = if self.raw_inline() && !self.recovering() { b.eps() } else { opener(b, &ar.name_prefix) };
            let arg_name = b.tag(tags::TOOL_ARG_NAME, b.literal(arg));
            let open = self.attribute_quotes(lead + arg_name + b.literal(ar.name_suffix.trim_end()), &ar.name_prefix, arg_name, &ar.name_suffix);
            // Recovering: a bare name before a colon written as a JSON key (`"city": ` for
            // `city:`).
            let open = if self.recovering() && ar.name_prefix.trim().is_empty() && ar.name_suffix.trim() == ":" {
                b.choice([open, self.recovered(RecoveryKind::CallShape, b.space() + "\"" + arg_name + "\"" + b.space() + ":")])
            } else {
                open
            };
            if let Some(e) = &ar.elements {
                // Mappings and lists written as nested elements.
                let kind = ElementKind::of(s);
                if matches!(kind, ElementKind::Object | ElementKind::Array | ElementKind::Any) {
                    let value = match kind {
                        ElementKind::Any => b.choice([self.element_nested(e), b.space() + self.element_scalar(e, None)]),
                        _ => self.element_value(e, s, vs, 0),
                    };
                    let close = b.space() + vs;
                    return b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open) + value + b.tag(tags::TOOL_ARG_CLOSE, close));
                }
            }
            // Without a value prefix, the whitespace the name suffix ends with (` ::: `) is
            // the template's, not the value's.
            let ns_space = &ar.name_suffix[ar.name_suffix.trim_end().len()..];
            let vp = if ar.value_prefix.is_empty() && !ar.name_suffix.trim().is_empty() { ns_space } else { ar.value_prefix.as_str() };
            let vp = if vp.trim().is_empty() {
                if vp.is_empty() { b.eps() } else { b.optional(b.literal(vp)) }
            } else {
                b.space() + b.literal(vp.trim()) + b.optional(b.literal(&vp[vp.trim_end().len()..]))
            };
            // Templates print dict/list arguments as JSON or as Python reprs, or in their own
            // literal syntax.
            let json_value = || {
                // Scalars are written alike in both: the schema constrains them as JSON.
                if let Some(v) = self.literal_value().filter(|_| !is_scalar_schema(s)) {
                    // Parsed as any literal value; generated as the schema says.
                    let spelled = LiteralSchema { b, spelling: &ar.value_syntax, any: v, root: schema };
                    return match spelled.value(s, &format!("{name}-{arg}")) {
                        Some(g) => b.constrained(v, g),
                        None => v,
                    };
                }
                let schema_json = b.schema(b.json(), &format!("{name}-{arg}"), s.clone(), false);
                let value = b.choice([schema_json, b.python()]);
                // A scalar in the template's own words (`None`), where JSON or Python reads them.
                let vs = &ar.value_syntax;
                let words_read = [(&vs.true_literal, "True"), (&vs.false_literal, "False"), (&vs.null_literal, "None")]
                    .iter()
                    .all(|(w, py)| w.trim() == *py || ["true", "false", "null"].contains(&w.trim()));
                if self.literal_value().is_some() && words_read {
                    let spelled = LiteralSchema { b, spelling: vs, any: value, root: schema };
                    if let Some(g) = spelled.value(s, &format!("{name}-{arg}-lit")) {
                        return b.tag(tags::TOOL_ARG_JSON_VALUE, b.constrained(value, b.choice([schema_json, g])));
                    }
                }
                if !self.recovering() {
                    // Generated: the schema's value, in JSON or in Python literals (numbers
                    // are spelled alike, so JSON alone).
                    let python = LiteralSchema { b, spelling: &PythonSpelling, any: b.python(), root: schema };
                    let grammar = match python.value(s, &format!("{name}-{arg}-py")) {
                        Some(_) if spelled_alike(s) => schema_json,
                        Some(py) => b.choice([schema_json, py]),
                        // A schema Python literals cannot follow here (a free-form object):
                        // any Python value, as the parser reads.
                        None => value,
                    };
                    return b.tag(tags::TOOL_ARG_JSON_VALUE, b.constrained(value, grammar));
                }
                // A value that turns out not to fit is read another way, so it is announced
                // only whole (a partial `t` may not become `true`).
                b.atomic(b.tag(tags::TOOL_ARG_JSON_VALUE, value))
            };
            if ar.value_is_literal {
                // Literal syntax: JSON or Python (`'x'`, `True`, `None`).
                let schema_json = b.schema(b.json(), &format!("{name}-{arg}"), s.clone(), false);
                // Models also write raw line breaks inside single-quoted strings (the chat
                // mapper escapes them).
                // (Generated: a `\u` escape is a code point, not a lone surrogate.)
                let escape = b.gbnf("\\" + b.any(), &format!("\"\\\\\" ([^u] | {})", peg_runtime::gbnf::JSON_UNICODE_ESCAPE));
                let raw_sq = "'" + b.zero_or_more(b.choice([escape, b.chars("[^'\\\\]", 1, None)])) + "'";
                let value = b.choice([schema_json, b.python(), raw_sq]);
                // Generated: JSON or Python literals, as the schema says.
                let spelled = LiteralSchema { b, spelling: &PythonSpelling, any: b.python(), root: schema };
                let value = match spelled.value(s, &format!("{name}-{arg}-py")) {
                    // Templates write string arguments raw between single quotes (line breaks
                    // and all), which only a whole argument may be.
                    Some(g) if is_string_schema(s) && s.get("enum").is_none() && s.get("const").is_none() => {
                        b.constrained(value, b.choice([schema_json, g, raw_sq]))
                    }
                    Some(_) if spelled_alike(s) => b.constrained(value, schema_json),
                    Some(g) => b.constrained(value, b.choice([schema_json, g])),
                    None => value,
                };
                let lit_value = b.tag(tags::TOOL_ARG_JSON_VALUE, value);
                let open = || opener(b, &ar.name_prefix) + b.tag(tags::TOOL_ARG_NAME, b.literal(arg)) + lit(b, &ar.name_suffix);
                let literal = b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open()) + b.space() + lit_value + b.tag(tags::TOOL_ARG_CLOSE, b.eps()));
                let raw_strings = ar.literal_strings_raw && Admits::of(s).string;
                if !(raw_strings || ar.values_quoted) {
                    return literal;
                }
                // The template writes values raw between quotes: such a value ends at a quote
                // the next argument (`, name=`) or the call's close comes after.
                let q = if ar.literal_quote.is_empty() { "'" } else { ar.literal_quote.as_str() };
                let close = self.a.tools.function.close.trim();
                let sep = if ar.separator.trim().is_empty() { "," } else { ar.separator.trim() };
                let mut follow: Vec<String> = props.iter().map(|(k, _)| format!("{sep} {k}{}", ar.name_suffix.trim())).collect();
                follow.extend(props.iter().map(|(k, _)| format!("{sep}{k}{}", ar.name_suffix.trim())));
                if !close.is_empty() {
                    follow.push(close.to_owned());
                }
                // (Whitespace may stand between, as the arguments' grammar allows.)
                let next_arg =
                    || b.choice(props.iter().map(|(k, _)| b.literal(sep) + b.space() + b.literal(k) + b.space() + ar.name_suffix.trim()).collect::<Vec<_>>());
                let quote_end = || b.literal(q) + b.space() + if close.is_empty() { next_arg() } else { b.choice([next_arg(), b.literal(close)]) };
                let text = text_to_real_end(b, &[q.to_owned()], quote_end);
                let to_quote_end = || b.until_one_of(follow.iter().map(|f| format!("{q}{f}")));
                let raw_string = || b.schema(b.constrained(text, to_quote_end()), &format!("{name}-{arg}-raw"), string_part(s), true);
                let value = if !ar.values_quoted || is_string_schema(s) {
                    raw_string()
                } else {
                    // Any other type: the text Python's `str` gives, read as the schema types
                    // the argument (the mapper), generated in Python literals.
                    let spelled = LiteralSchema { b, spelling: &PythonSpelling, any: text, root: schema };
                    match spelled.value(s, &format!("{name}-{arg}-py")) {
                        Some(g) => b.constrained(text, g),
                        // A free-form value: any text up to the quote.
                        None => b.constrained(text, to_quote_end()),
                    }
                };
                let raw = b.tag(tags::TOOL_ARG_STRING_VALUE, value);
                let raw_arg = b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open() + b.space() + q) + raw + b.tag(tags::TOOL_ARG_CLOSE, b.literal(q)));
                // Generated: the template's own form only, where every value is quoted.
                if ar.values_quoted && !self.recovering() {
                    return raw_arg;
                }
                return b.choice([raw_arg, literal]);
            }
            let admits = Admits::of(s);
            // Non-string values may have their own markers (`string="false">`, no quotes): a
            // union of strings and other types may take either opener.
            let json_arg = match (&ar.json_value_open, &ar.json_value_close) {
                (Some(jo), Some(jc)) if !admits.string || admits.null || admits.other => {
                    let typed = self.typed_openers(s, jo);
                    let typed = if typed.len() == 1 { b.literal(&typed[0]) } else { b.choice(typed.iter().map(|o| b.literal(o)).collect::<Vec<_>>()) };
                    let open = opener(b, &ar.name_prefix) + b.tag(tags::TOOL_ARG_NAME, b.literal(arg)) + typed;
                    let close = if jc.trim().is_empty() { b.eps() } else { b.space() + jc.trim() };
                    Some(b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open) + b.space() + json_value() + b.tag(tags::TOOL_ARG_CLOSE, close)))
                }
                _ => None,
            };
            if let (false, Some(json_arg)) = (admits.string, json_arg) {
                return json_arg;
            }
            // Raw strings end at their suffix, or (without one) at the next argument line: its
            // name prefix, or without one its name and suffix (`city: Paris` lines).
            let opened = !ar.name_prefix.trim().is_empty() || !ar.name_suffix.trim().is_empty();
            let raw = !vs.is_empty() || (!ar.value_is_literal && ar.value_prefix.trim().is_empty() && opened) || self.raw_inline();
            let (value, unclosed) = if admits.string && raw {
                // Without an opener of its own, a raw `null` (`None`) of a nullable string is null.
                let (raw_value, unclosed) = self.raw_string_value((name, arg), s, admits.null && json_arg.is_none(), &names);
                if self.raw_inline() && self.recovering() {
                    // A string the model quoted (`city='Paris'`) is the string inside the quotes.
                    let end = self.raw_inline_end(name, &self.inline_openings(&names));
                    let quoted = b.atomic(b.tag(tags::TOOL_ARG_JSON_VALUE, b.python_kind(peg_runtime::PythonKind::Str)));
                    (b.choice([quoted + b.peek(end), raw_value]), unclosed)
                } else {
                    (raw_value, unclosed)
                }
            } else {
                // A value the model left its suffix out after ends where the next argument or
                // a closing marker starts a line, as a raw string's does.
                let ends = if vs.is_empty() { Vec::new() } else { self.unclosed_value_ends(name, &names) };
                (b.space() + json_value(), (!ends.is_empty()).then(|| self.unclosed_value_end(&ends)))
            };
            let close = if vs.is_empty() {
                b.eps()
            } else if admits.string && raw && !self.recovering() {
                // Whitespace before the suffix is part of a raw value as the parser reads it:
                // the grammar allows only the template's own (a line break before
                // `</parameter>`), so what the model writes is the value it means.
                let own = &ar.value_suffix[..ar.value_suffix.len() - ar.value_suffix.trim_start().len()];
                if own.is_empty() { b.literal(vs) } else { b.optional(b.literal(own)) + vs }
            } else {
                b.space() + vs
            };
            let close = match unclosed {
                Some(u) => b.choice([close, self.recovered(RecoveryKind::MissingClose, u)]),
                None => close,
            };
            let arg = b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open) + vp + value + b.tag(tags::TOOL_ARG_CLOSE, close));
            // Recovering: a string in JSON quotes where the template writes its own quote token
            // around it (`city:"Paris"` for `city:<|"|>Paris<|"|>`).
            let own_quote = ar.value_prefix.trim();
            let arg = if self.recovering() && admits.string && raw && crate::analysis::text::has_marker(own_quote) && own_quote == vs {
                let quoted = b.space() + b.peek("\"") + b.atomic(b.tag(tags::TOOL_ARG_JSON_VALUE, b.json_string()));
                let json_quoted = b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open) + quoted + b.tag(tags::TOOL_ARG_CLOSE, b.eps()));
                b.choice([arg, self.recovered(RecoveryKind::CallShape, json_quoted)])
            } else {
                arg
            };
            match json_arg {
                Some(json_arg) => b.choice([arg, json_arg]),
                None => arg,
            }
        };
        let sep = ar.separator.trim();
        if !self.recovering() {
            // The grammar writes a call the tool accepts: required arguments present, each
            // at most once.
            let required = |k: &str| schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|n| n == k));
            let args = props.iter().map(|(k, v)| (one(k, v), required(k))).collect();
            return self.exact_args(&format!("{name}-args"), args, sep);
        }
        let mut alts: Vec<Parser<'b>> = props.iter().map(|(k, v)| one(k, v)).collect();
        alts.extend(self.undeclared_tagged_arg());
        if alts.is_empty() {
            return b.eps();
        }
        let item = b.choice(alts);
        let rest = if sep.is_empty() { b.space() + item } else { b.space() + b.optional(b.literal(sep)) + b.space() + item };
        b.optional(b.space() + item + b.zero_or_more(rest))
    }

    /// The arguments of a call the tool accepts, each `(parser, required)`: in any order (the
    /// model chooses it, as the template writes them as given), each at most once, the
    /// required ones all present, joined by `sep` (empty: whitespace alone). One rule per set
    /// of arguments written so far, so up to [`MAX_EXACT_ARGUMENTS`] arguments; past that any
    /// argument may come in any order (the arguments stay typed by their schemas).
    fn exact_args(&self, rule: &str, args: Vec<(Parser<'b>, bool)>, sep: &str) -> Parser<'b> {
        let b = self.b;
        let n = args.len();
        let tight = self.raw_inline();
        // Nothing but a line break between raw values and the bare name of the next argument
        // (`city: Paris` lines): the grammar writes it, as a raw value may hold anything else.
        // (Literal values end by their own syntax: `a="x"b=1` needs nothing between.)
        let ar = &self.a.tools.arguments;
        let lines = sep.is_empty() && ar.name_prefix.trim().is_empty() && ar.value_suffix.trim().is_empty() && !ar.value_is_literal && !tight;
        let joined = |first: bool, a: Parser<'b>| {
            if !first && lines {
                "\n" + b.space() + a
            } else if first || sep.is_empty() {
                b.space() + a
            } else if tight {
                sep + b.optional(b.literal(" ")) + a
            } else {
                b.space() + sep + b.space() + a
            }
        };
        if n == 0 {
            return b.eps();
        }
        if n == 1 {
            let (arg, required) = args[0];
            let one = joined(true, arg);
            return if required { one } else { b.optional(one) };
        }
        // Each argument is written once, referred to from every set it may extend.
        let args: Vec<(Parser<'b>, bool)> = args.into_iter().enumerate().map(|(i, (a, r))| (self.shared_rule(&format!("{rule}-{i}"), a), r)).collect();
        if n > MAX_EXACT_ARGUMENTS {
            let item = b.choice(args.iter().map(|(a, _)| *a).collect::<Vec<_>>());
            return b.optional(joined(true, item) + b.zero_or_more(joined(false, item)));
        }
        let required: u32 = args.iter().enumerate().filter(|(_, (_, r))| *r).map(|(i, _)| 1 << i).sum();
        let all = (1u32 << n) - 1;
        let prefix = self.unique_rule_name(&format!("{rule}-set"));
        let state = |mask: u32| format!("{prefix}-{mask}");
        // From the fullest set down, so every rule a set refers to is named already.
        for mask in (0..all).rev() {
            let mut alts: Vec<Parser<'b>> = (0..n)
                .filter(|i| mask & (1 << i) == 0)
                .map(|i| {
                    let next = mask | (1 << i);
                    let rest = if next == all { b.eps() } else { b.rule_ref(&state(next)) };
                    joined(mask == 0, args[i].0) + rest
                })
                .collect();
            if mask & required == required {
                alts.push(b.eps());
            }
            b.rule(&state(mask), b.choice(alts));
        }
        b.rule_ref(&state(0))
    }

    /// A name for a new grammar rule, `name` or `name-N`, that no rule has yet.
    fn unique_rule_name(&self, name: &str) -> String {
        let mut unique = name.to_owned();
        let mut n = 1;
        while self.b.has_rule(&unique) || self.b.has_rule(&format!("{unique}-0")) {
            n += 1;
            unique = format!("{name}-{n}");
        }
        unique
    }

    /// `p` as a rule of the grammar named after `name` (made unique), so that what refers to
    /// it several times writes it once.
    fn shared_rule(&self, name: &str, p: Parser<'b>) -> Parser<'b> {
        self.b.rule(&self.unique_rule_name(name), p)
    }

    /// An argument the schema does not name, where arguments are closed by a fixed marker:
    /// its value as a raw string (the mapper flags the arguments as outside the schema).
    fn undeclared_tagged_arg(&self) -> Option<Parser<'b>> {
        let b = self.b;
        let ar = &self.a.tools.arguments;
        let vs = ar.value_suffix.trim();
        if !self.recovering() || vs.is_empty() || vs.contains(crate::format::NAME_SLOT) || ar.elements.is_some() || ar.value_is_literal {
            return None;
        }
        let (np, ns) = (ar.name_prefix.trim(), ar.name_suffix.trim());
        if np.is_empty() || ns.is_empty() {
            return None;
        }
        let name = b.tag(tags::TOOL_ARG_NAME, b.chars("[A-Za-z0-9_.-]", 1, None));
        let open = opener(b, &ar.name_prefix) + name + b.literal(ns);
        let vp = ar.value_prefix.trim();
        let vp = if vp.is_empty() { b.optional(b.literal("\n")) } else { b.space() + vp + b.optional(b.literal("\n")) };
        // The line break before the suffix is the template's (as for declared arguments).
        let vs_full = ar.value_suffix.trim_start_matches([' ', '\t']);
        let value = b.tag(tags::TOOL_ARG_STRING_VALUE, b.until_one_of([vs_full, vs]));
        let close = b.tag(tags::TOOL_ARG_CLOSE, b.space() + vs);
        Some(b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, open) + vp + value + close))
    }

    /// The openers of a non-string value of schema `s` (trimmed at the end): `json_open`,
    /// or where the template names the value's type in its opener, those of the types `s`
    /// admits (all of them when recovering, or when `s` names none).
    fn typed_openers(&self, s: &Value, json_open: &str) -> Vec<String> {
        let opens = &self.a.tools.arguments.json_value_opens;
        if opens.is_empty() {
            return vec![json_open.trim_end().to_owned()];
        }
        let named: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        // Type names read as everywhere else (`int`, `float`, `dict`...); an integer's opener
        // is the number's.
        let wanted: Vec<&str> = named
            .iter()
            .filter_map(|t| peg_runtime::schema::json_type(t))
            .map(|t| if t == "integer" { "number" } else { t })
            .filter(|t| opens.contains_key(*t))
            .collect();
        let mut out: Vec<String> = Vec::new();
        for (t, o) in opens {
            if (self.recovering() || wanted.is_empty() || wanted.contains(&t.as_str())) && !out.iter().any(|x| x == o.trim_end()) {
                out.push(o.trim_end().to_owned());
            }
        }
        out
    }

    /// Arguments written `name=value` inside the call, strings as they are (Python's `str`:
    /// `f(city=New York, days=3)`): no marker around a name or a value, a separator between.
    fn raw_inline(&self) -> bool {
        let t = &self.a.tools;
        let ar = &t.arguments;
        t.format.mode == ToolFormat::TagWithTagged
            && !ar.value_is_literal
            && [&ar.name_prefix, &ar.value_prefix, &ar.value_suffix].iter().all(|m| m.trim().is_empty())
            && !ar.name_suffix.trim().is_empty()
            && !ar.separator.trim().is_empty()
            && !t.function.close.trim().is_empty()
    }

    /// Where an inline value ends ([`Ctx::raw_inline`]): at the separator before the next
    /// argument's opening, or at the call's close where the call ends there (another call,
    /// the section's end, the end).
    fn raw_inline_end(&self, fun: &str, openings: &[String]) -> Parser<'b> {
        let b = self.b;
        let t = &self.a.tools;
        let sep = t.arguments.separator.trim();
        // Or where the next call opens, on a line of its own (calls one per line).
        let next_call = b.choice(
            self.tools().iter().map(|(n, _)| b.literal(&format!("{}{n}{}", t.function.name_prefix.trim(), t.function.name_suffix.trim()))).collect::<Vec<_>>(),
        );
        let ends: Vec<Parser<'b>> =
            [sep, t.format.section_end.trim(), t.format.per_call_end.trim()].iter().filter(|m| !m.is_empty()).map(|m| b.literal(m)).chain([b.end()]).collect();
        let after = b.choice([b.space() + b.peek(b.choice(ends)), b.peek("\n" + b.space() + next_call)]);
        let close = b.literal(with_name(&t.function.close, fun).trim()) + after;
        // The separator as the values end there: with one space or none (a line break is text).
        b.choice([close, b.literal(sep) + b.optional(b.literal(" ")) + b.choice(openings.iter().map(|o| b.literal(o)).collect::<Vec<_>>())])
    }

    /// The openings of the arguments `names` in the inline form (`city=`).
    fn inline_openings(&self, names: &[&str]) -> Vec<String> {
        let suffix = self.a.tools.arguments.name_suffix.trim_end();
        names.iter().map(|n| format!("{n}{suffix}")).collect()
    }

    /// Recovery: what ends an argument value whose suffix the model left out, on a line of
    /// its own: the next argument's whole opening, or a closing marker (the arguments', the
    /// call's, the section's, a next call's opener). Empty when not recovering or values
    /// have no suffix.
    fn unclosed_value_ends(&self, fun: &str, names: &[&str]) -> Vec<String> {
        let ar = &self.a.tools.arguments;
        if !self.recovering() || ar.value_suffix.trim().is_empty() {
            return Vec::new();
        }
        let np = ar.name_prefix.trim();
        let mut v: Vec<String> = names.iter().filter(|_| !np.is_empty()).map(|n| format!("{np}{n}{}", ar.name_suffix.trim_end())).collect();
        v.extend(self.closing_markers(fun));
        v
    }

    /// What may close the arguments of a call of `fun` after a value: the arguments' close,
    /// the function's, the call's, the section's, and a next call's opener (where the call's
    /// close may be left out); trimmed, each once.
    fn closing_markers(&self, fun: &str) -> Vec<String> {
        let t = &self.a.tools;
        let mut markers: Vec<String> = Vec::new();
        for m in [&t.arguments.end, &with_name(&t.function.close, fun), &t.format.per_call_end, &t.format.section_end, &t.format.per_call_opener().to_owned()] {
            let m = m.trim();
            if !m.is_empty() && !markers.iter().any(|x| x == m) {
                markers.push(m.to_owned());
            }
        }
        markers
    }

    /// A lookahead at one of `ends` (see [`Self::unclosed_value_ends`]) or the output's end.
    fn unclosed_value_end(&self, ends: &[String]) -> Parser<'b> {
        let b = self.b;
        let mut alts: Vec<Parser<'b>> = ends.iter().map(|o| b.literal(o)).collect();
        alts.push(b.end());
        b.peek(b.space() + b.choice(alts))
    }

    /// A raw string argument value, up to the value suffix, tagged. The value suffix ends the
    /// value only where what follows it can follow an argument (whitespace, then the next
    /// argument or the close of the arguments, function, call or section, or the end of the
    /// output), so a value may contain the closing tags of its own elements. `nullable`: a
    /// raw null word (`null`, `None`) there is null. `names`: the call's argument names.
    ///
    /// Also, when recovering: the lookahead where a value the model left unclosed ends (the
    /// next argument's opening or a closing marker on a line of its own, or the end).
    fn raw_string_value(&self, (fun, arg): (&str, &str), s: &Value, nullable: bool, names: &[&str]) -> (Parser<'b>, Option<Parser<'b>>) {
        let b = self.b;
        let t = &self.a.tools;
        let ar = &t.arguments;
        let id = &format!("{fun}-{arg}");
        let vs_named = with_name(ar.value_suffix.trim(), arg);
        let vs = vs_named.as_str();
        let vs_full_named = with_name(ar.value_suffix.trim_start_matches([' ', '\t']), arg);
        let vs_full = vs_full_named.as_str();
        let delims: Vec<String> = if vs_full != vs { vec![vs_full.to_owned(), vs.to_owned()] } else { vec![vs.to_owned()] };
        // What may follow the value suffix: the next argument (after the separator), a
        // closing marker, the end.
        let (np, sep) = (ar.name_prefix.trim(), ar.separator.trim());
        // The next argument's opening: the name prefix, or without one a name and its suffix
        // (either, with a separate opener for non-strings).
        let mut openings: Vec<String> = Vec::new();
        if !np.is_empty() {
            openings.push(np.to_owned());
        }
        for suffix in [Some(&ar.name_suffix), ar.json_value_open.as_ref()].into_iter().flatten().chain(ar.json_value_opens.values()).filter(|_| np.is_empty()) {
            for n in names {
                let o = format!("{np}{n}{}", suffix.trim_end());
                if !openings.contains(&o) {
                    openings.push(o);
                }
            }
        }
        let fun_close = with_name(&t.function.close, fun);
        let markers = self.closing_markers(fun);
        let inline = self.raw_inline();
        let after = || {
            if inline {
                return self.raw_inline_end(fun, &openings);
            }
            let mut alts: Vec<Parser<'b>> = Vec::new();
            if !openings.is_empty() {
                let sep = if sep.is_empty() { b.eps() } else { b.optional(b.literal(sep)) };
                alts.push(sep + b.space() + b.choice(openings.iter().map(|o| b.literal(o)).collect::<Vec<_>>()));
            }
            alts.extend(markers.iter().map(|m| b.literal(m)));
            alts.push(b.end());
            b.space() + vs + b.space() + b.choice(alts)
        };
        let mut follow: Vec<String> = markers.clone();
        for o in &openings {
            follow.push(o.clone());
            if !sep.is_empty() {
                follow.push(format!("{sep}{o}"));
            }
        }
        // No suffix (`@@ name ::: value` lines): the value runs to a line break before a
        // follower, or to a closing marker; inline (`f(city=New York, days=3)`), to the
        // separator before the next argument, or to a closing marker.
        let delims: Vec<String> = if inline {
            let mut d = vec![fun_close.trim().to_owned()];
            d.extend(openings.iter().flat_map(|o| [format!("{sep}{o}"), format!("{sep} {o}")]));
            d
        } else if vs.is_empty() {
            let mut d: Vec<String> = markers.clone();
            d.extend(follow.iter().map(|f| format!("\n{f}")));
            d
        } else {
            delims
        };
        let unclosed_at = self.unclosed_value_ends(fun, names);
        let unclosed = || self.unclosed_value_end(&unclosed_at);
        let (delims, real_end) = if unclosed_at.is_empty() {
            (delims, b.eps())
        } else {
            let mut d = delims;
            d.extend(unclosed_at.iter().map(|o| format!("\n{o}")));
            (d, unclosed())
        };
        let real_end = || if unclosed_at.is_empty() { after() } else { b.choice([after(), real_end]) };
        // A suffix not followed so is text: the scan goes on past its first character.
        // Without a suffix, whitespace before what ends the value is the template's (a grammar
        // writes it there), not the value's.
        let text = if !inline && vs.is_empty() {
            let mut d = delims.clone();
            d.extend([" ", "\t", "\r", "\n"].map(String::from));
            text_to_real_end(b, &d, real_end)
        } else {
            text_to_real_end(b, &delims, real_end)
        };
        // The grammar has no lookahead: the text contains no suffix followed by a follower
        // (as the parser reads it, with or without a line break between).
        let grammar = if inline {
            // Not opened by a quote (the parser reads a quoted value as the string inside) nor
            // by what ends it.
            let mut class = String::from("[^\"'");
            for c in delims.iter().filter_map(|d| d.chars().next()) {
                if matches!(c, '\\' | ']' | '^' | '-') {
                    class.push('\\');
                }
                if !class.contains(c) {
                    class.push(c);
                }
            }
            class.push(']');
            b.optional(b.chars(&class, 1, Some(1)) + b.until_one_of(&delims))
        } else if follow.is_empty() || vs.is_empty() {
            b.until_one_of(&delims)
        } else {
            b.until_one_of(follow.iter().flat_map(|f| [format!("{vs}{f}"), format!("{vs}\n{f}")]))
        };
        let string = b.tag(tags::TOOL_ARG_STRING_VALUE, b.schema(b.constrained(text, grammar), id, string_part(s), true));
        // An XML-style value may be a CDATA section (templates write values holding `<`, `&` or
        // a line break so): the string is what it holds.
        let string = if !inline && vs.starts_with("</") {
            let held = b.tag(tags::TOOL_ARG_STRING_VALUE, b.schema(b.until("]]>"), id, string_part(s), true));
            let section = b.literal("<![CDATA[") + held + b.literal("]]>");
            b.choice([b.constrained(section + b.peek(after()), section), string])
        } else {
            string
        };
        let unclosed = (!unclosed_at.is_empty()).then(unclosed);
        if !nullable {
            return (string, unclosed);
        }
        let mut words: Vec<&str> = vec!["null", "None", ar.value_syntax.null_literal.trim()];
        words.retain(|w| !w.is_empty());
        words.sort_by_key(|w| (std::cmp::Reverse(w.len()), w.to_string()));
        words.dedup();
        let word = || b.choice(words.iter().map(|w| b.literal(w)).collect::<Vec<_>>());
        // Read as a JSON (Python) literal once the lookahead has seen the whole value.
        let null = b.peek(word() + after()) + b.atomic(b.tag(tags::TOOL_ARG_JSON_VALUE, b.choice([b.json(), b.python()])));
        (b.choice([b.constrained(null, word()), string]), unclosed)
    }

    /// The text between an element's tags, as `s` types it (`close` ends the element): a
    /// mapping's member elements, a list's item elements, or a scalar, tagged for the chat
    /// mapper. Members the schema does not name, and values it does not type, are read as
    /// any element value.
    fn element_value(&self, e: &ElementSyntax, s: &Value, close: &str, depth: usize) -> Parser<'b> {
        let b = self.b;
        let kind = if depth > 8 { ElementKind::Any } else { ElementKind::of(s) };
        match kind {
            ElementKind::Object => {
                let mut members: Vec<(Parser<'b>, bool)> = Vec::new();
                let required = |k: &str| s.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|n| n == k));
                for (k, ps) in s.get("properties").and_then(Value::as_object).into_iter().flatten() {
                    let key = b.literal(&e.open_prefix) + b.tag(tags::TOOL_ARG_ELEMENT_KEY, b.literal(k)) + b.literal(&e.open_suffix);
                    members.push((key + self.element_value(e, ps, &e.close(k), depth + 1) + b.space() + b.literal(&e.close(k)), required(k)));
                }
                if !self.recovering() && !members.is_empty() && s.get("additionalProperties") != Some(&Value::Bool(true)) {
                    // Generated: the members the schema names, required ones present, each once.
                    return b.tag(tags::TOOL_ARG_ELEMENT_OBJECT, self.exact_args("element-members", members, "") + b.space());
                }
                let mut members: Vec<Parser<'b>> = members.into_iter().map(|(m, _)| m).collect();
                members.push(self.element_member(e));
                b.tag(tags::TOOL_ARG_ELEMENT_OBJECT, b.space() + b.zero_or_more(b.choice(members) + b.space()))
            }
            ElementKind::Array => {
                let items = s.get("items").cloned().unwrap_or(Value::Null);
                let item = b.literal(&e.open(&e.item)) + self.element_value(e, &items, &e.close(&e.item), depth + 1) + b.space() + b.literal(&e.close(&e.item));
                b.tag(tags::TOOL_ARG_ELEMENT_ARRAY, b.space() + b.zero_or_more(item + b.space()))
            }
            ElementKind::String => {
                let string = b.tag(tags::TOOL_ARG_LITERAL_STRING, b.until(close));
                if !Admits::of(s).null {
                    return string;
                }
                // A nullable string: its null word alone is null.
                let mut words = vec![e.null_literal.as_str(), "null", "None"];
                words.dedup();
                let word = b.tag(tags::TOOL_ARG_LITERAL_TOKEN, b.choice(words.iter().map(|w| b.literal(w)).collect::<Vec<_>>()));
                b.choice([b.constrained(word + b.peek(b.space() + b.literal(close)), word), string])
            }
            ElementKind::Scalar => self.element_scalar(e, Some(s)),
            ElementKind::Any | ElementKind::Other => self.element_any(e),
        }
    }

    /// A member element of any name, holding any element value.
    fn element_member(&self, e: &ElementSyntax) -> Parser<'b> {
        let b = self.b;
        let name = || b.chars("[A-Za-z0-9_.-]", 1, None);
        let key = b.literal(&e.open_prefix) + b.tag(tags::TOOL_ARG_ELEMENT_KEY, name()) + b.literal(&e.open_suffix);
        key + self.element_any(e) + b.space() + b.literal(&e.close_prefix) + name() + b.literal(&e.close_suffix)
    }

    /// One or more member elements (a mapping) or item elements (a list), any values.
    fn element_nested(&self, e: &ElementSyntax) -> Parser<'b> {
        if !self.b.has_rule("element-nested") {
            self.element_any(e);
        }
        self.b.rule_ref("element-nested")
    }

    /// Any element value: nested elements or a scalar. Two mutually recursive rules,
    /// `element-any` and `element-nested`.
    fn element_any(&self, e: &ElementSyntax) -> Parser<'b> {
        const RULE: &str = "element-any";
        let b = self.b;
        if b.has_rule(RULE) {
            return b.rule_ref(RULE);
        }
        let r = b.rule(RULE, b.choice([b.rule_ref("element-nested"), self.element_scalar(e, None)]));
        let item = b.literal(&e.open(&e.item)) + b.rule_ref(RULE) + b.space() + b.literal(&e.close(&e.item));
        let list = b.tag(tags::TOOL_ARG_ELEMENT_ARRAY, b.one_or_more(b.space() + item) + b.space());
        let map = b.tag(tags::TOOL_ARG_ELEMENT_OBJECT, b.one_or_more(b.space() + self.element_member(e)) + b.space());
        b.rule("element-nested", b.choice([list, map]));
        r
    }

    /// A scalar between element tags: a number or a true/false/null word where that is the
    /// whole text (as `s` types it, when given), else a string.
    fn element_scalar(&self, e: &ElementSyntax, s: Option<&Value>) -> Parser<'b> {
        let b = self.b;
        let mut words: Vec<&str> = vec![&e.true_literal, &e.false_literal, &e.null_literal, "true", "false", "null", "True", "False", "None"];
        words.sort_by_key(|w| (std::cmp::Reverse(w.len()), w.to_string()));
        words.dedup();
        let word = || b.choice(words.iter().map(|w| b.literal(w)).collect::<Vec<_>>());
        let ends = || b.peek(b.space() + b.literal(&e.close_prefix));
        let token = b.tag(tags::TOOL_ARG_LITERAL_TOKEN, b.choice([b.json_number(), word()]));
        let token = b.constrained(token + ends(), token);
        let string = b.tag(tags::TOOL_ARG_LITERAL_STRING, b.until(&e.close_prefix));
        match s {
            // Numbers only: generated as the schema says (JSON spells them as the template).
            Some(s) if !self.recovering() && spelled_alike(s) => b.constrained(token, b.schema(b.json_number(), "element-number", s.clone(), false)),
            // Typed by the schema: a string where it admits one, else the token.
            Some(s) if !Admits::of(s).string => token,
            _ => b.choice([token, string]),
        }
    }

    /// A value in the template's own literal syntax (`{key:<|"|>text<|"|>,n:3}`), when it has
    /// one (else `None`: values are JSON or Python literals): one recursive rule, its pieces
    /// tagged for the chat mapper's conversion to JSON. JSON strings and quoted keys are
    /// read too. The grammar side of a schema-typed argument is built by [`LiteralSchema`].
    fn literal_value(&self) -> Option<Parser<'b>> {
        const RULE: &str = "literal-value";
        let b = self.b;
        let vs = &self.a.tools.arguments.value_syntax;
        // The mapper knows JSON's punctuation only.
        if vs.is_json() || vs.item_separator.trim() != "," || vs.key_separator.trim() != ":" || vs.string_close.is_empty() {
            return None;
        }
        if b.has_rule(RULE) {
            return Some(b.rule_ref(RULE));
        }
        let tok = |p: Parser<'b>| b.tag(tags::TOOL_ARG_LITERAL_TOKEN, p);
        let text = |p: Parser<'b>| b.tag(tags::TOOL_ARG_LITERAL_STRING, p);
        let quoted = |open: &str, close: &str| b.literal(open) + text(b.until(close)) + b.literal(close);
        let string = quoted(&vs.string_open, &vs.string_close);
        let json_string = tok(b.json_string());
        let key = if vs.key_open.is_empty() {
            b.choice([text(vs.bare_key(b)), string, json_string])
        } else if vs.key_open == vs.string_open && vs.key_close == vs.string_close {
            b.choice([string, json_string])
        } else {
            b.choice([quoted(&vs.key_open, &vs.key_close), string, json_string])
        };
        let value = || b.rule_ref(RULE);
        let sep = || b.space() + tok(b.literal(",")) + b.space();
        let member = || key + b.space() + tok(b.literal(":")) + b.space() + value();
        let map = tok(b.literal("{")) + b.space() + b.optional(member() + b.zero_or_more(sep() + member())) + b.space() + tok(b.literal("}"));
        let list = tok(b.literal("[")) + b.space() + b.optional(value() + b.zero_or_more(sep() + value())) + b.space() + tok(b.literal("]"));
        let mut words: Vec<&str> = vec![&vs.true_literal, &vs.false_literal, &vs.null_literal, "true", "false", "null"];
        words.retain(|w| !w.trim().is_empty());
        words.sort_by_key(|w| (std::cmp::Reverse(w.len()), w.to_string()));
        words.dedup();
        let literal = tok(b.choice(words.iter().map(|w| b.literal(w.trim())).collect::<Vec<_>>()));
        Some(b.rule(RULE, b.choice([map, list, string, json_string, tok(b.json_number()), literal])))
    }

    /// One call of any tool, wrapped in per-call markers.
    fn any_call(&self) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let tools = self.tools();
        // A per-call start naming its call (`<tool_call name="f">` before `{"name": "f", …}`):
        // generated, each tool's call opens with its own name; read, with any name (the call
        // object names the call).
        let named_opener = f.named_per_call_start().is_some();
        let single = if self.recovering() && self.json_calls() {
            // Any name is a call (the mapper flags unknown ones) where calls are expected.
            // (Calls in prose take declared tools only: `embedded_calls`.)
            let names = Names::Any;
            let call = self.json_call_any_shape(names);
            let call = match self.named_opener_args_only() {
                Some(args_only) => b.choice([self.per_call_start_any_name() + b.space() + call, args_only]),
                None => call,
            };
            if f.tools_array_wrapped {
                call
            } else {
                // A JSON list of calls where the template writes one call per marker.
                let wrapped = b.choice([self.json_list(call), self.json_envelope(call)]);
                b.choice([call, self.recovered(RecoveryKind::ExtraWrapper, wrapped), self.fenced(call)])
            }
        } else {
            let mut calls: Vec<Parser<'b>> = tools
                .iter()
                .map(|(n, s)| {
                    let call = if f.mode == ToolFormat::JsonNative { self.json_call(n, s) } else { self.tag_call(n, s) };
                    let call = if named_opener && !self.recovering() { lit(b, &with_name(&f.per_call_start, n)) + b.space() + call } else { call };
                    // A rule per tool: the grammar names each call once, however often the
                    // section repeats calls.
                    if self.recovering() { call } else { self.shared_rule(&format!("{n}-call"), call) }
                })
                .collect();
            if self.recovering() && f.mode != ToolFormat::JsonNative && !trigger_words(self.a, &self.policy.tools).is_empty() {
                calls.extend(self.undeclared_tag_call());
            }
            calls.extend(self.json_call_in_list());
            b.choice(calls)
        };
        // Models drop per-call wrappers when the function has its own marker (`<function=`).
        let own_marker = f.mode != ToolFormat::JsonNative && !self.a.tools.function.name_prefix.trim().is_empty();
        // A call that starts with its name, a marker following (`get_weather[ARGS]`), also
        // tells itself from text.
        let t = &self.a.tools;
        let after_name = [t.function.name_suffix.trim(), t.call_id.prefix.trim(), t.arguments.start.trim()].into_iter().find(|m| !m.is_empty());
        let starts_with_name = t.call_id.pos != crate::format::CallIdPosition::PreFuncName;
        let marked_name = f.mode != ToolFormat::JsonNative && starts_with_name && after_name.is_some_and(crate::analysis::text::has_marker);
        // Recovering: several calls inside one per-call wrapper, where a call's start says so.
        let one = |first: Parser<'b>| {
            if self.recovering() && !f.per_call_start.trim().is_empty() && (own_marker || marked_name || self.json_calls()) {
                first + b.zero_or_more(self.joined_call("", single))
            } else {
                first
            }
        };
        // Where the opener names the call, the call (built above) holds it.
        let pcs = if named_opener { b.space() } else { lit(b, &f.per_call_start) };
        // Recovering: the marker written twice (`<tool_call>\n<tool_call>\n{…}`).
        let pcs = if self.recovering() && !f.per_call_start.trim().is_empty() {
            // (Where the opener names the call, the call holds it: the first of two is the extra.)
            let twice = if named_opener { self.per_call_start_any_name() + b.peek(self.per_call_start_any_name()) } else { lit(b, &f.per_call_start) };
            pcs + b.optional(self.recovered(RecoveryKind::ExtraWrapper, twice))
        } else {
            pcs
        };
        // After the marker itself (not where the template's own call may leave it out), the
        // first call may be in another family's syntax; more calls joined inside it are read
        // in the template's own (each alternative a stream waits on costs a parse).
        let others = self.calls_in_other_syntaxes();
        // A grammar lets the wrapper go only where the name's own opener is a marker (`<function=`),
        // not a word glued to the wrapper (`<|tag|>` + `call name="`).
        let droppable = own_marker && (self.recovering() || self.a.tools.function.name_prefix.trim_start().starts_with(['<', '[']));
        // A bare name and its argument tags (GLM): the own call first where it ends the call,
        // for the name alone is also the start of the name and a JSON object; then the other
        // syntaxes; then the own call however it ends.
        let pce_text = f.per_call_end.trim();
        let bare_name = f.mode == ToolFormat::TagWithTagged && self.a.tools.function.name_prefix.trim().is_empty();
        let own_first = || {
            if !bare_name || pce_text.is_empty() {
                return b.choice(std::iter::once(single).chain(others.iter().copied()).collect::<Vec<_>>());
            }
            let mut alts = vec![single + b.peek(b.space() + b.choice([b.literal(pce_text), b.end()]))];
            alts.extend(others.iter().copied());
            alts.push(single);
            b.choice(alts)
        };
        let mut p = match (own_marker, others.is_empty()) {
            (_, true) => (if droppable { b.optional(pcs) } else { pcs }) + b.space() + one(single),
            (false, false) => pcs + b.space() + one(own_first()),
            (true, false) => {
                let marked = pcs + b.space() + one(own_first());
                b.choice([marked, b.space() + one(single)])
            }
        };
        if !f.per_call_end.trim().is_empty() {
            let pce = lit(b, &f.per_call_end);
            p = p + self.closing(pce, &f.per_call_end, own_marker);
        }
        if self.recovering() {
            p
        } else {
            // The first call and the repeated ones refer to one rule.
            self.shared_rule("call", p)
        }
    }

    /// The whole tool section.
    fn tool_section(&self) -> Parser<'b> {
        self.tool_section_then(self.b.eps())
    }

    /// The tool section followed by `after`, in one trigger rule.
    fn tool_section_then(&self, after: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let call = self.any_call();
        let sep = f.call_separator.trim();
        let more = if sep.is_empty() { b.space() + call } else { b.space() + sep + b.space() + call };
        let calls = if !self.recovering() {
            if self.policy.parallel { call + b.zero_or_more(more) } else { call }
        } else {
            // Models join calls with `;`, `,` or line breaks whatever the template does, and
            // write several where the template (or the request) has one.
            let joined = self.joined_call(sep, call);
            // Python calls after the first without its opener (`Call: f(a=1); g(b=2)`), or all in a
            // Python list where the template writes them one by one (`[f(a=1), g(b=2)]`).
            let joined = match self.bare_python_call(false) {
                Some(bare) => b.choice([joined, self.joined_call(sep, bare)]),
                None => joined,
            };
            let calls = if self.policy.parallel { call + b.zero_or_more(b.choice([more, joined])) } else { call + b.zero_or_more(joined) };
            match self.bare_python_call(true) {
                Some(bare) => b.choice([self.recovered(RecoveryKind::ExtraWrapper, b.space() + self.json_list(bare)), calls]),
                None => calls,
            }
        };
        let calls = if !f.tools_array_wrapped {
            calls
        } else if self.recovering() {
            // Models write a lone call without the list the template puts it in (in JSON, or
            // in another syntax the section holds).
            let lone = if f.mode == ToolFormat::JsonNative && !self.other_syntaxes_read() { b.peek("{") } else { b.negate("[") };
            let bare = self.recovered(RecoveryKind::CallShape, b.space() + lone) + calls;
            b.choice([b.space() + "[" + b.space() + calls + b.space() + "]", bare])
        } else {
            b.space() + "[" + b.space() + calls + b.space() + "]"
        };
        let mut ss = lit(b, &f.section_start);
        if self.a.header_per_part && !f.section_start.trim().is_empty() {
            // A part of its own: the turn header opens it (the prompt's, for the first part).
            ss = b.optional(lit(b, &self.a.turn_header)) + ss;
        }
        // Models drop the section wrapper where each call has an opener of its own.
        let has_per_call = !f.per_call_start.trim().is_empty() || name_prefix_opens_calls(self.a);
        let mut sec = if has_per_call && !f.section_start.trim().is_empty() { b.optional(ss) } else { ss } + calls;
        if !f.section_end.trim().is_empty() {
            // Left out before text or more calls: that text (or call) is reported instead.
            // A section end spelled as an opening (`<|tool_response>`) starts what follows the
            // calls, where the model stops: missing at the end, it is no deviation.
            let se = lit(b, &f.section_end);
            sec = sec + if is_opening(&f.section_end) || f.section_end_optional { b.optional(se) } else { b.optional(self.closing(se, &f.section_end, false)) };
        }
        let sec = match self.list_in_section() {
            // The list left out inside the section's markers
            // (`<|tool_call_start|>f(a=1)<|tool_call_end|>` for
            // `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`): told by the byte after the
            // opening marker, where nothing has been read yet.
            Some((open, close)) if self.recovering() => {
                let mut bare = lit(b, open) + b.space() + self.recovered(RecoveryKind::CallShape, b.negate("[") + calls);
                if !close.is_empty() {
                    bare = bare + b.space() + b.optional(self.closing(lit(b, close), close, false));
                }
                b.choice([sec, bare])
            }
            _ => sec,
        };
        b.trigger_rule(SECTION_RULE, sec + self.after_calls() + after)
    }

    /// Where the section's markers open and close a list around the calls
    /// (`<|tool_call_start|>[` … `]<|tool_call_end|>`): the markers without the brackets.
    fn list_in_section(&self) -> Option<(&str, &str)> {
        let f = &self.a.tools.format;
        let open = f.section_start.trim().strip_suffix('[')?.trim_end();
        let close = f.section_end.trim().strip_prefix(']')?.trim_start();
        crate::analysis::segment::first_marker(open).is_some().then_some((open, close))
    }

    /// What may follow the last call: whitespace where the template writes some there; in the
    /// grammar always a bounded run (models end a section with a line break or two before
    /// they stop, whatever the template renders).
    fn after_calls(&self) -> Parser<'b> {
        if self.a.tools.format.space_after_calls || !self.recovering() { self.b.space() } else { self.b.eps() }
    }

    fn tools_on(&self) -> bool {
        self.policy.calls_on()
    }

    /// Addressed parts: `[part_start] HEADER(recipient) BODY [part_end]`, again and again. A part
    /// to the content recipient is content, one to the reasoning recipient reasoning, one to a
    /// declared function a call (its body the JSON arguments). Text bodies run to the next
    /// part (its start, the part end, or without either the next header) or the end.
    fn parts_root(&self, pa: &AddressedParts) -> Parser<'b> {
        let b = self.b;
        let (ps, pe, eot) = (pa.part_start.trim(), pa.part_end.trim(), self.a.end_of_turn.trim());
        let header = |recipient: Parser<'b>| {
            let mut h = b.space();
            if !pa.recipient_prefix.trim().is_empty() {
                h = h + b.literal(pa.recipient_prefix.trim());
            }
            h = h + recipient;
            if !pa.recipient_suffix.trim().is_empty() {
                h = h + b.literal(pa.recipient_suffix.trim());
            }
            h + b.space()
        };
        let tools = if self.tools_on() { self.tools() } else { Vec::new() };
        let mut delims: Vec<String> = Vec::new();
        for d in [pe, ps, eot] {
            if !d.is_empty() && !delims.iter().any(|x| x == d) {
                delims.push(d.to_owned());
            }
        }
        if pe.is_empty() && ps.is_empty() {
            // Only the next header ends a part (`\n@get_weather: `).
            let mut recipients = vec![pa.content_recipient.clone(), pa.reasoning_recipient.clone()];
            recipients.extend(tools.iter().map(|(n, _)| n.clone()));
            for r in recipients.iter().filter(|r| !r.is_empty()) {
                delims.push(format!("{}{}", pa.part_end, pa.header(r)));
            }
        }
        let text = || if delims.is_empty() { b.rest() } else { b.until_one_of(delims.clone()) };
        let content_body = match &self.policy.response_schema {
            Some(schema) => json_response(b, schema) + b.space(),
            None => b.tag(tags::CONTENT, text()),
        };
        let mut text_parts = vec![header(b.literal(&pa.content_recipient)) + content_body];
        if !pa.reasoning_recipient.is_empty() {
            let r = header(b.literal(&pa.reasoning_recipient));
            text_parts.insert(0, if self.extract_reasoning() { r + b.tag(tags::REASONING, text()) } else { b.tag(tags::CONTENT, r + text()) });
        }
        let text_part = b.choice(text_parts);
        let opt = |s: &str| if s.is_empty() { b.eps() } else { b.optional(b.literal(s)) };
        // Between parts: the part end, then the next part's start.
        let sep = || b.space() + opt(pe) + b.space() + opt(ps);
        let trailing = || b.space() + opt(pe) + b.space() + opt(eot) + b.space();
        let mut lead = b.space() + opt(ps);
        if self.recovering() && self.policy.response_schema.is_none() {
            // Text the output starts with, its header left out (`Let me check.` for
            // `all\nLet me check.`): content, up to the next part.
            let mut known: Vec<Parser<'b>> =
                [&pa.content_recipient, &pa.reasoning_recipient].into_iter().filter(|r| !r.is_empty()).map(|r| b.literal(r)).collect();
            known.extend(tools.iter().map(|(n, _)| b.literal(n)));
            let headerless = b.negate(header(b.choice(known))) + b.negate(b.space() + b.end()) + b.tag(tags::CONTENT, text());
            lead = lead + b.optional(self.recovered(RecoveryKind::UnplacedText, headerless) + b.space() + opt(ps));
        }
        let texts = b.optional(text_part + b.zero_or_more(sep() + text_part));
        if tools.is_empty() {
            return lead + texts + trailing() + b.end();
        }
        let calls: Vec<Parser<'b>> = tools
            .iter()
            .map(|(name, schema)| {
                let open = b.tag(tags::TOOL_OPEN, header(b.tag(tags::TOOL_NAME, b.literal(name))));
                let t = &self.a.tools;
                if t.format.mode == ToolFormat::TagWithTagged {
                    // A tagged body in its own markers (`<invoke name="f">` + parameters).
                    let ends = |m: &str| if m.trim().is_empty() { b.eps() } else { self.closing(lit(b, m), m, false) };
                    let args_close = ends(&t.arguments.end);
                    let close = ends(&with_name(&t.function.close, name));
                    let body = self.args_opener(&t.arguments.start, name) + self.tagged_args(name, schema) + args_close;
                    let call = b.tag(tags::TOOL, open + body + b.tag(tags::TOOL_CLOSE, close));
                    if !self.recovering() {
                        return call;
                    }
                    // The arguments as one JSON object instead (tried first, read whole: the
                    // tagged form would announce the call before the `{` shows it is not it).
                    let json = b.space() + b.peek("{") + b.tag(tags::TOOL_ARGS, b.json_object());
                    let as_json = b.atomic(b.tag(tags::TOOL, open + json + b.tag(tags::TOOL_CLOSE, b.eps())));
                    return b.choice([self.recovered(RecoveryKind::CallShape, as_json), call]);
                }
                // (Recovering: arguments as a JSON string or a Python dict too.)
                let args = self.or_loose_args(json_arguments(b, name, schema));
                b.tag(tags::TOOL, open + args + b.tag(tags::TOOL_CLOSE, b.eps()))
            })
            .collect();
        let call = b.choice(calls);
        let calls = if self.policy.parallel {
            call + b.zero_or_more(sep() + call)
        } else if self.recovering() {
            // Models write several calls where the request asks for one.
            call + b.zero_or_more(self.recovered(RecoveryKind::CallSeparator, sep() + call))
        } else {
            call
        };
        let section = b.trigger_rule("tool-calls", b.space() + opt(ps) + calls + trailing());
        let before = b.space() + opt(pe);
        // Recovering: text parts after the calls, and calls after those.
        let section = if self.recovering() {
            let text_after = self.recovered(RecoveryKind::TextAroundCalls, sep() + text_part);
            section + b.zero_or_more(b.choice([text_after, sep() + calls + trailing()]))
        } else {
            section
        };
        if self.policy.calls == Calls::Required {
            return lead + b.optional(text_part + b.zero_or_more(sep() + text_part) + before) + section + b.end();
        }
        lead + texts + b.optional(before + section) + trailing() + b.end()
    }

    fn root(&self) -> Parser<'b> {
        let b = self.b;
        if let Some(pa) = &self.a.parts {
            return self.parts_root(pa);
        }
        let reasoning = self.reasoning();
        if let Some(schema) = &self.policy.response_schema {
            let content = json_response(b, schema);
            // Models wrap JSON in a code fence, and in the template's content markers.
            let fence = b.optional(b.choice(["```json", "```"]) + b.space());
            let c = &self.a.content;
            let (cs, ce) = (c.start.trim(), c.end.trim());
            let mut body = fence + content + b.space() + b.optional(b.literal("```"));
            if c.mode != ContentMode::Plain && !cs.is_empty() {
                body = b.optional(b.literal(cs)) + b.space() + body;
                if !ce.is_empty() {
                    body = body + b.space() + b.optional(b.literal(ce));
                }
            }
            return reasoning + b.space() + body + b.space() + b.end();
        }
        if !self.tools_on() {
            return reasoning + self.content(&[]) + b.end();
        }
        let mut triggers = trigger_words(self.a, &self.policy.tools);
        if let Some((open, _)) = self.list_in_section().filter(|_| self.recovering()) {
            // Content stops at the section's marker where the list after it is left out.
            if !triggers.iter().any(|t| t == open) {
                triggers.push(open.to_owned());
            }
        }
        let (th, ss) = (self.a.turn_header.trim(), self.a.tools.format.section_start.trim());
        if self.a.header_per_part && !ss.is_empty() {
            // Content whose part end the model left out stops at the calls' header too.
            triggers.extend([format!("{th}{ss}"), format!("{th} {ss}")]);
        }
        let section = if self.a.tools.format.content_after_calls && !triggers.is_empty() {
            // Content the template writes after the calls.
            self.tool_section_then(b.optional(self.content(&triggers)))
        } else {
            self.tool_section()
        };
        // The grammar has no lookahead: there, any trigger ends the reasoning. The lookahead
        // allows trailing whitespace even where the output may not end with any: in a stream,
        // `space` at the end of the input waits for more, so a call quoted in the reasoning is
        // not announced before the text after it is seen.
        let reasoning = if !self.recovering() {
            reasoning
        } else if triggers.is_empty() {
            self.reasoning_before(Some(section + b.space() + b.end()))
        } else {
            // Text may follow the calls (recovered), but not the reasoning's end marker.
            let e = self.a.reasoning.end_marker();
            // (A line break ending reasoning is no marker: calls span lines.)
            let no_end = if e.trim().is_empty() { b.eps() } else { b.negate(b.until(e) + e) };
            self.reasoning_before(Some(no_end + section + b.zero_or_more(self.after_section(&triggers)) + b.space() + b.end()))
        };
        if self.policy.calls == Calls::Required {
            // Calls are required; a short preamble before a marked call is still content.
            if triggers.is_empty() {
                return reasoning + b.space() + section + b.end();
            }
            return reasoning + self.content(&triggers) + section + b.end();
        }
        if triggers.is_empty() {
            // No marker announces calls: either the output is calls, or it is content.
            return reasoning + b.choice([b.space() + section + self.space_after_section() + b.end(), self.content(&[]) + b.end()]);
        }
        if !self.recovering() {
            return reasoning + self.content(&triggers) + b.optional(section) + b.end();
        }
        reasoning + self.content(&triggers) + b.optional(section + b.zero_or_more(self.after_section(&triggers)) + self.space_after_section()) + b.end()
    }

    /// Whitespace after the calls where the output ends and the template writes none there:
    /// models write a line break before they stop. Read when recovering, and reported (the
    /// message drops it; strict parsing keeps to the template's form).
    fn space_after_section(&self) -> Parser<'b> {
        let b = self.b;
        if !self.recovering() {
            return b.eps();
        }
        b.optional(self.recovered(RecoveryKind::TextAroundCalls, b.chars("[ \\t\\r\\n]", 1, None) + b.peek(b.end())))
    }

    /// After a tool section, where the template ends the turn: another section (each call in
    /// a wrapper of its own), or text and perhaps more calls.
    fn after_section(&self, triggers: &[String]) -> Parser<'b> {
        let b = self.b;
        let text = b.peek(b.space() + b.negate(b.end())) + self.content(triggers);
        let marker = || b.choice(triggers.iter().map(|t| b.literal(t)).collect::<Vec<_>>());
        // Not a token the template opens its own parts with either (`<|open|>` of
        // `<|open|>argument`), which is text to keep, not a wrapper's close.
        let a = self.a;
        let own: Vec<&str> = [a.tools.format.per_call_opener(), a.content.start.trim(), a.reasoning.start.trim()]
            .into_iter()
            .chain(triggers.iter().map(String::as_str))
            .filter(|m| !m.is_empty())
            .collect();
        let own = b.choice(own.iter().map(|t| b.literal(t)).collect::<Vec<_>>());
        // The end-of-turn marker where the output ends is no text (not reported: the
        // template writes it after the calls, and models write what they were trained on).
        let eot = a.end_of_turn.trim();
        let mut alts = Vec::new();
        if !eot.is_empty() {
            alts.push(b.space() + eot + b.space() + b.end());
        }
        alts.extend([
            self.decoration_after(own),
            self.recovered(RecoveryKind::CallSeparator, b.space() + b.peek(marker()) + b.rule_ref(SECTION_RULE)),
            self.recovered(RecoveryKind::TextAroundCalls, text) + b.optional(b.rule_ref(SECTION_RULE)),
        ]);
        b.choice(alts)
    }
}

/// The arena that parses the prefill followed by the model output.
pub(crate) fn parse_arena(a: &TemplateAnalysis, policy: &Policy) -> Result<Arena, Error> {
    build(a, policy, None)
}

/// The arena a grammar is generated from: it matches the model output alone, after `prefill`.
pub(crate) fn grammar_arena(a: &TemplateAnalysis, policy: &Policy, prefill: &str) -> Result<Arena, Error> {
    build(a, policy, Some(prefill))
}

/// The arena a request's grammar is generated from (benchmarks measure GBNF generation alone).
pub fn build_grammar_arena(a: &TemplateAnalysis, req: &Request, prefill: &str) -> Result<Arena, Error> {
    grammar_arena(a, &Policy::new(req, a), prefill)
}

fn build(a: &TemplateAnalysis, policy: &Policy, prefill_for_grammar: Option<&str>) -> Result<Arena, Error> {
    if let Some(arena) = crate::registry::arenas::build(a, policy, prefill_for_grammar.is_none()) {
        return arena;
    }
    let b = Builder::new();
    let root = Ctx { b: &b, a, policy, prefill_for_grammar, embedded: Default::default() }.root();
    b.finish(root.id())
}

/// The GBNF grammar of `arena` (lazy: only the trigger rules). `Err` carries the generator's
/// message.
pub fn grammar(arena: &Arena, lazy: bool) -> Result<String, Error> {
    peg_runtime::gbnf::generate(arena, &peg_runtime::gbnf::GbnfOptions { lazy, ..Default::default() })
}

#[cfg(test)]
mod string_schema_tests {
    use serde_json::json;

    #[test]
    fn schemas_admitting_strings_agree() {
        use super::{is_string_schema, string_part};
        for s in [
            json!({"type": "string"}),
            json!({"type": ["string", "null"]}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"enum": ["a", null]}),
        ] {
            assert!(is_string_schema(&s), "{s}");
        }
        assert_eq!(string_part(&json!({"type": ["string", "null"], "maxLength": 3})), json!({"type": "string", "maxLength": 3}));
        assert_eq!(
            string_part(&json!({"anyOf": [{"type": "null"}, {"type": "string", "enum": ["a"]}], "description": "d"})),
            json!({"type": "string", "enum": ["a"], "description": "d"})
        );
        assert!(!is_string_schema(&json!({"type": ["integer", "null"]})));
    }
}

#[cfg(test)]
mod parts_tests {
    use peg_runtime::chat::Strictness;
    use serde_json::{Value, json};

    use crate::Request;
    use crate::analysis::analyze;
    use crate::generator::{GrammarTrigger, generate};
    use crate::template::ChatTemplate;

    fn fixture(name: &str) -> ChatTemplate {
        ChatTemplate::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/templates/{name}.jinja"))).unwrap()
    }

    /// Addressed parts: content, reasoning and calls come back from their parts, streamed as
    /// one-shot, and the lazy grammar (from the first part to a function) accepts the calls.
    #[test]
    fn addressed_parts_parse_stream_and_fit_the_grammar() {
        let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}]);
        let req = Request::from_json(&json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools, "parallel_tool_calls": true})).unwrap();
        let cases = [
            (
                "addressed-special",
                "to=thoughts<|message|>Hmm.\nto=user?<|end|>to=user<|message|>On it: to=x<|end|>to=get_weather<|message|>{\"city\": \"Paris\"}<|end|>to=get_time<|message|>{\"zone\": \"CET\"}",
                "Hmm.\nto=user?",
                "On it: to=x",
            ),
            (
                "addressed-words",
                "@user: On it.\n@someone: not a part\n@get_weather: {\"city\": \"Paris\"}\n@get_time: {\"zone\": \"CET\"}",
                "",
                "On it.\n@someone: not a part",
            ),
        ];
        for (name, out, reasoning, content) in cases {
            let t = fixture(name);
            let a = analyze(&t).unwrap();
            assert!(a.parts.is_some(), "{name}: {a:?}");
            let g = generate(&t, &a, &req).unwrap();
            assert!(
                g.grammar_lazy && g.grammar_triggers.iter().all(|t| matches!(t, GrammarTrigger::Word(w) if w.contains("get_"))),
                "{name}: {:?}",
                g.grammar_triggers
            );
            let parser = g.parser(Strictness::Lenient);
            let m = parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap().message;
            assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), (reasoning, content), "{name}");
            let calls: Vec<(String, Value)> = m.tool_calls.iter().map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap())).collect();
            assert_eq!(calls, [("get_weather".to_owned(), json!({"city": "Paris"})), ("get_time".to_owned(), json!({"zone": "CET"}))], "{name}");
            assert_eq!(crate::verify::stream_message(&parser, out, false, 1).unwrap(), m, "{name}");
            crate::verify::check_grammar(&g, &a, out).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
