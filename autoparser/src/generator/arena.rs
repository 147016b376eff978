//! The parser arena for a request, built from the analysis with the Builder DSL.

use peg_runtime::{Arena, Builder, Error, Parser};
use serde_json::Value;

use super::request::{ReasoningFormat, Request, ToolChoice};
use crate::analysis::{ContentMode, ReasoningMode, TemplateAnalysis, ToolFormat};

/// The semantic tags of the chat shapes (the chat mapper reads these).
pub mod tags {
    /// Reasoning text.
    pub const REASONING: &str = "reasoning";
    /// Content text.
    pub const CONTENT: &str = "content";
    /// A whole tool call.
    pub const TOOL: &str = "tool";
    /// Start of a call.
    pub const TOOL_OPEN: &str = "tool_open";
    /// End of a call.
    pub const TOOL_CLOSE: &str = "tool_close";
    /// Call id.
    pub const TOOL_ID: &str = "tool_id";
    /// Function name.
    pub const TOOL_NAME: &str = "tool_name";
    /// Arguments as one JSON object.
    pub const TOOL_ARGS: &str = "tool_args";
    /// One argument.
    pub const TOOL_ARG: &str = "tool_arg";
    /// Start of an argument.
    pub const TOOL_ARG_OPEN: &str = "tool_arg_open";
    /// End of an argument.
    pub const TOOL_ARG_CLOSE: &str = "tool_arg_close";
    /// Argument name.
    pub const TOOL_ARG_NAME: &str = "tool_arg_name";
    /// Raw string value.
    pub const TOOL_ARG_STRING_VALUE: &str = "tool_arg_string_value";
    /// JSON value.
    pub const TOOL_ARG_JSON_VALUE: &str = "tool_arg_json_value";
}

/// A literal that tolerates whitespace differences: surrounding whitespace of `s` is optional.
fn lit<'a>(b: &'a Builder, s: &str) -> Parser<'a> {
    let t = s.trim();
    if t.is_empty() {
        b.space()
    } else {
        b.space() + b.literal(t)
    }
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

/// The words that start a tool section (grammar triggers, content delimiters).
pub fn trigger_words(a: &TemplateAnalysis) -> Vec<String> {
    let f = &a.tools.format;
    let first = [&f.section_start, &f.per_call_start]
        .into_iter()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .map(str::to_owned);
    match first {
        Some(w) => vec![w],
        None => {
            let np = a.tools.function.name_prefix.trim();
            if a.tools.format.mode != ToolFormat::JsonNative && !np.is_empty() {
                vec![np.to_owned()]
            } else {
                Vec::new()
            }
        }
    }
}

fn tool_name_and_schema(t: &Value) -> Option<(String, Value)> {
    let f = t.get("function").unwrap_or(t);
    let name = f.get("name")?.as_str()?.to_owned();
    let params = f.get("parameters").cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}));
    Some((name, params))
}

fn is_string_schema(s: &Value) -> bool {
    match s.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        None => s.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_string)),
        _ => false,
    }
}

struct Ctx<'a, 'b> {
    b: &'b Builder,
    a: &'a TemplateAnalysis,
    req: &'a Request,
}

impl<'a, 'b> Ctx<'a, 'b> {
    fn extract_reasoning(&self) -> bool {
        self.req.reasoning_format == ReasoningFormat::Extract
    }

    /// The reasoning block, optional.
    fn reasoning(&self) -> Parser<'b> {
        let b = self.b;
        let r = &self.a.reasoning;
        if r.mode == ReasoningMode::None || r.end.trim().is_empty() {
            return b.eps();
        }
        let (s, e) = (r.start.trim(), r.end.trim());
        let body = b.until(e);
        let block = if self.extract_reasoning() {
            let inner = b.tag(super::tags::REASONING, body);
            if s.is_empty() {
                inner + e
            } else {
                b.space() + s + inner + e
            }
        } else {
            let whole = if s.is_empty() { body + e } else { b.space() + s + body + e };
            b.tag(super::tags::CONTENT, whole)
        };
        b.optional(block) + b.space()
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
        let body = if delims.is_empty() { b.rest() } else { b.until_one_of(delims) };
        let body = b.tag(super::tags::CONTENT, body);
        if c.mode != ContentMode::Plain && !cs.is_empty() {
            let mut p = b.optional(b.space() + cs) + body;
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
        self.req.tools.iter().filter_map(tool_name_and_schema).collect()
    }

    /// One call of `name`, JSON-native.
    fn json_call(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let args = b.tag(super::tags::TOOL_ARGS, b.schema(b.json(), &format!("{name}-args"), schema.clone(), false));
        let quoted_name = || "\"" + b.tag(super::tags::TOOL_NAME, b.literal(name)) + "\"";
        if f.fun_name_is_key {
            let open = b.tag(super::tags::TOOL_OPEN, b.literal("{"));
            return b.tag(
                super::tags::TOOL,
                open << quoted_name() << ":" << args << b.tag(super::tags::TOOL_CLOSE, b.literal("}")),
            );
        }
        let member = |key: &str| -> (Parser<'b>, bool) {
            if !f.function_field.is_empty() && key == f.function_field {
                let inner = "{" << b.json_member(&f.name_field, quoted_name()) << "," << b.json_member(&f.args_field, args) << "}";
                (b.json_member(key, inner), true)
            } else if key == f.name_field {
                (b.json_member(key, quoted_name()), true)
            } else if key == f.args_field {
                (b.json_member(key, args), true)
            } else if key == f.id_field {
                (b.json_member(key, "\"" + b.tag(super::tags::TOOL_ID, b.json_string_content()) + "\""), false)
            } else {
                (b.json_member(key, b.json()), false)
            }
        };
        let mut order = f.parameter_order.clone();
        if order.is_empty() {
            order = vec![f.name_field.clone(), f.args_field.clone()];
        }
        let mut body = b.tag(super::tags::TOOL_OPEN, b.literal("{"));
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
        b.tag(super::tags::TOOL, body + b.space() + b.tag(super::tags::TOOL_CLOSE, b.literal("}")))
    }

    /// The call id section, `prefix id suffix`.
    fn call_id(&self) -> Parser<'b> {
        let b = self.b;
        let id = &self.a.tools.call_id;
        let stop = if id.suffix.trim().is_empty() { "\n".to_owned() } else { id.suffix.trim().to_owned() };
        lit(b, &id.prefix) + b.tag(super::tags::TOOL_ID, b.until(&stop)) + lit(b, &id.suffix)
    }

    /// One call of `name`, tag-based.
    fn tag_call(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let t = &self.a.tools;
        use crate::analysis::CallIdPosition as P;
        let mut open = b.eps();
        if t.call_id.pos == P::PreFuncName {
            open = open + self.call_id();
        }
        open = open + lit(b, &t.function.name_prefix) + b.tag(super::tags::TOOL_NAME, b.literal(name));
        open = open + lit_indexed(b, &t.function.name_suffix);
        if t.call_id.pos == P::BetweenFuncAndArgs {
            open = open + self.call_id();
        }
        let mut body = b.tag(super::tags::TOOL_OPEN, open) + lit(b, &t.arguments.start);
        if t.format.mode == ToolFormat::TagWithJson {
            let args = b.schema(b.json(), &format!("{name}-args"), schema.clone(), false);
            body = body + b.space() + b.tag(super::tags::TOOL_ARGS, args);
        } else {
            body = body + self.tagged_args(name, schema);
        }
        body = body + lit(b, &t.arguments.end);
        if t.call_id.pos == P::PostArgs {
            body = body + self.call_id();
        }
        let close = if t.function.close.trim().is_empty() { b.eps() } else { lit(b, &t.function.close) };
        b.tag(super::tags::TOOL, body + b.tag(super::tags::TOOL_CLOSE, close))
    }

    /// Tagged arguments: any order, each `name_prefix NAME name_suffix value value_suffix`.
    fn tagged_args(&self, name: &str, schema: &Value) -> Parser<'b> {
        let b = self.b;
        let ar = &self.a.tools.arguments;
        let props: Vec<(String, Value)> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let vs = ar.value_suffix.trim();
        let vs_full = ar.value_suffix.trim_start_matches([' ', '\t']);
        let one = |arg: &str, s: &Value| -> Parser<'b> {
            let open = lit(b, &ar.name_prefix) + b.tag(super::tags::TOOL_ARG_NAME, b.literal(arg)) + b.literal(ar.name_suffix.trim_end());
            let vp = &ar.value_prefix;
            let vp = if vp.trim().is_empty() {
                if vp.is_empty() { b.eps() } else { b.optional(b.literal(vp)) }
            } else {
                b.space() + b.literal(vp.trim()) + b.optional(b.literal(&vp[vp.trim_end().len()..]))
            };
            let value = if is_string_schema(s) && !vs.is_empty() {
                let delims: Vec<String> = if vs_full != vs { vec![vs_full.to_owned(), vs.to_owned()] } else { vec![vs.to_owned()] };
                b.tag(super::tags::TOOL_ARG_STRING_VALUE, b.schema(b.until_one_of(delims), &format!("{name}-{arg}"), s.clone(), true))
            } else {
                b.space() + b.tag(super::tags::TOOL_ARG_JSON_VALUE, b.schema(b.json(), &format!("{name}-{arg}"), s.clone(), false))
            };
            let close = if vs.is_empty() { b.eps() } else { b.space() + vs };
            b.tag(super::tags::TOOL_ARG, b.tag(super::tags::TOOL_ARG_OPEN, open) + vp + value + b.tag(super::tags::TOOL_ARG_CLOSE, close))
        };
        if props.is_empty() {
            return b.eps();
        }
        let alts: Vec<Parser<'b>> = props.iter().map(|(k, v)| one(k, v)).collect();
        let sep = ar.separator.trim();
        let item = b.choice(alts);
        let rest = if sep.is_empty() { b.space() + item } else { b.space() + b.optional(b.literal(sep)) + b.space() + item };
        b.optional(b.space() + item + b.zero_or_more(rest))
    }

    /// One call of any tool, wrapped in per-call markers.
    fn any_call(&self) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let calls: Vec<Parser<'b>> = self
            .tools()
            .iter()
            .map(|(n, s)| if f.mode == ToolFormat::JsonNative { self.json_call(n, s) } else { self.tag_call(n, s) })
            .collect();
        let one = b.choice(calls);
        let mut p = lit(b, &f.per_call_start) + b.space() + one;
        if !f.per_call_end.trim().is_empty() {
            p = p + lit(b, &f.per_call_end);
        }
        p
    }

    /// The whole tool section.
    fn tool_section(&self) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let call = self.any_call();
        let sep = f.call_separator.trim();
        let more = if sep.is_empty() { b.space() + call } else { b.space() + sep + b.space() + call };
        let calls = if self.req.parallel_tool_calls { call + b.zero_or_more(more) } else { call };
        let calls = if f.tools_array_wrapped { b.space() + "[" + b.space() + calls + b.space() + "]" } else { calls };
        let mut sec = lit(b, &f.section_start) + calls;
        if !f.section_end.trim().is_empty() {
            sec = sec + b.optional(lit(b, &f.section_end));
        }
        b.trigger_rule("tool-calls", sec)
    }

    fn root(&self) -> Parser<'b> {
        let b = self.b;
        let reasoning = self.reasoning();
        if let Some(schema) = &self.req.json_schema {
            let content = b.tag(super::tags::CONTENT, b.schema(b.json(), "response-format", schema.clone(), false));
            return reasoning + b.space() + content + b.space() + b.end();
        }
        let tools_on = !self.req.tools.is_empty()
            && self.req.tool_choice != ToolChoice::None
            && self.a.tools.format.mode != ToolFormat::None
            && !self.tools().is_empty();
        if !tools_on {
            return reasoning + self.content(&[]) + b.end();
        }
        let section = self.tool_section();
        let triggers = trigger_words(self.a);
        if self.req.tool_choice == ToolChoice::Required {
            return reasoning + b.space() + section + b.space() + b.end();
        }
        if triggers.is_empty() {
            // No marker announces calls: either the output is calls, or it is content.
            return reasoning + b.choice([b.space() + section + b.space() + b.end(), self.content(&[]) + b.end()]);
        }
        reasoning + self.content(&triggers) + b.optional(section) + b.space() + b.end()
    }
}

/// Builds the arena for `req` (the prefill is part of the parsed input).
pub fn build_arena(a: &TemplateAnalysis, req: &Request, _prefill: &str) -> Result<Arena, Error> {
    if let Some(builder) = crate::registry::find(a) {
        return builder.build_arena(a, req);
    }
    let b = Builder::new();
    let root = Ctx { b: &b, a, req }.root();
    b.finish(root.id())
}

/// The GBNF grammar of `arena`, once the GBNF generator is available.
pub fn grammar(_arena: &Arena, _lazy: bool) -> Option<String> {
    None
}
