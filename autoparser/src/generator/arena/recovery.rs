//! What the parse arena accepts beyond the template, so that lenient parsing recovers what a
//! model meant: JSON calls in another shape, calls in prose, code fences, extra wrappers. Only
//! the parse arena has these (the grammar constrains generation to the template's form), and
//! each is tagged with its [`RecoveryKind`] so the parse result reports it.

use peg_runtime::Parser;
use peg_runtime::chat::RecoveryKind;
use peg_runtime::chat::tags;

use super::{Ctx, Names};
use crate::format::{ToolAnalysis, ToolArgumentsAnalysis, ToolFormat, ToolFormatAnalysis, ToolFunctionAnalysis};
use crate::policy::python_dict_arguments;
use serde_json::Value;

/// Keys models write a JSON call's function name under, beside the template's own.
const NAME_KEYS: &[&str] = &["name", "function", "function_name", "tool_name", "tool"];
/// Keys models write a JSON call's arguments under, beside the template's own.
const ARGS_KEYS: &[&str] = &["arguments", "parameters", "args", "params", "input", "tool_input"];
/// Keys of a call id.
const ID_KEYS: &[&str] = &["id", "call_id", "tool_call_id"];
/// Keys of an object holding the list of calls (`{"tool_calls": [...]}`).
const ENVELOPE_KEYS: &[&str] = &["tool_calls", "function_calls", "calls"];
/// The key of an extra wrapper object around a call (`{"type": "function", "function": {...}}`).
const WRAPPER_KEY: &str = "function";

/// The call syntaxes several model families write inside the same call markers
/// (`<tool_call>...</tool_call>`): a JSON object or a list of them (Hermes, Qwen 2.5, Mistral
/// before v11), `<function=NAME>` with `<parameter=KEY>` values (Qwen3-Coder),
/// `<invoke name="NAME">` with `<parameter name="KEY">` values (MiniMax M2), the name then a JSON
/// object, `<function=NAME>` around a JSON object (Llama 3.1), the name, `[ARGS]` and a JSON
/// object (Mistral since v11), the name then `<arg_key>`/`<arg_value>` pairs (GLM 4.5+), a Python
/// call. A model tuned across them writes any inside its template's markers; only the calls'
/// syntax differs, so each is read there.
fn shared_marker_syntaxes() -> Vec<ToolAnalysis> {
    let tagged = |name_prefix: &str, name_suffix: &str, close: &str, arguments: ToolArgumentsAnalysis| ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::TagWithTagged, ..Default::default() },
        function: ToolFunctionAnalysis { name_prefix: name_prefix.into(), name_suffix: name_suffix.into(), close: close.into(), indexed: false },
        arguments,
        ..Default::default()
    };
    let args = |name_prefix: &str, name_suffix: &str, value_prefix: &str, value_suffix: &str| ToolArgumentsAnalysis {
        name_prefix: name_prefix.into(),
        name_suffix: name_suffix.into(),
        value_prefix: value_prefix.into(),
        value_suffix: value_suffix.into(),
        ..Default::default()
    };
    let json = json_call();
    let name_then_json = ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::TagWithJson, ..Default::default() },
        function: ToolFunctionAnalysis { name_suffix: "\n".into(), ..Default::default() },
        ..Default::default()
    };
    let function_tag_json = function_tag_json();
    // The name, `[ARGS]`, a JSON object (Mistral since v11, whose models also write the older
    // `[{"name": ...}]` list, and the reverse).
    let name_args_json = ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::TagWithJson, ..Default::default() },
        function: ToolFunctionAnalysis { name_suffix: "[ARGS]".into(), ..Default::default() },
        ..Default::default()
    };
    let python = python_call();
    // The name then a JSON object (after a line break or `[ARGS]`) comes before the name then
    // `<arg_key>` pairs, which a bare name (no pairs) also matches.
    vec![
        json,
        // JSON after `<function=NAME>` before its `<parameter=KEY>` elements: `{` tells them apart.
        function_tag_json,
        tagged("<function=", ">", "</function>", args("<parameter=", ">", "\n", "\n</parameter>")),
        tagged("<invoke name=\"", "\">", "</invoke>", args("<parameter name=\"", "\">", "", "</parameter>")),
        name_then_json,
        name_args_json,
        tagged("", "\n", "", args("<arg_key>", "</arg_key>", "\n<arg_value>", "</arg_value>")),
        python,
    ]
}

/// A JSON call object, `{"name": "get_weather", "arguments": {...}}` (Hermes, Qwen 2.5).
fn json_call() -> ToolAnalysis {
    ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::JsonNative, parameter_order: vec!["name".into(), "arguments".into()], ..Default::default() },
        ..Default::default()
    }
}

/// A Python call, `get_weather(city="Paris", days=3)` (Llama 3.2's pythonic calls).
fn python_call() -> ToolAnalysis {
    ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::TagWithTagged, ..Default::default() },
        function: ToolFunctionAnalysis { name_suffix: "(".into(), close: ")".into(), ..Default::default() },
        arguments: ToolArgumentsAnalysis { name_suffix: "=".into(), separator: ",".into(), ..Default::default() },
        ..Default::default()
    }
}

/// `<function=NAME>` around a JSON object (Llama 3.1's custom tool format), no markers around.
fn function_tag_json() -> ToolAnalysis {
    ToolAnalysis {
        format: ToolFormatAnalysis { mode: ToolFormat::TagWithJson, ..Default::default() },
        function: ToolFunctionAnalysis { name_prefix: "<function=".into(), name_suffix: ">".into(), close: "</function>".into(), indexed: false },
        ..Default::default()
    }
}

impl<'b> Ctx<'_, 'b> {
    /// Calls inside the template's call markers in the other syntaxes those markers hold
    /// ([`shared_marker_syntaxes`]), reported as another call shape; none where the markers are
    /// plain words (there the syntax is all that tells a call).
    pub(super) fn calls_in_other_syntaxes(&self) -> Vec<Parser<'b>> {
        if !self.other_syntaxes_read() {
            return Vec::new();
        }
        let t = &self.a.tools;
        let own = (t.format.mode, t.function.name_prefix.trim(), t.arguments.name_prefix.trim());
        // A syntax holds the call only if the call ends there: a prefix of another's is not it.
        let b = self.b;
        let end = [t.format.per_call_end.trim(), t.format.section_end.trim()].into_iter().find(|e| !e.is_empty()).unwrap_or_default();
        let ends = if end.is_empty() { b.eps() } else { b.peek(b.space() + b.choice([b.literal(end), b.end()])) };
        shared_marker_syntaxes()
            .into_iter()
            .filter(|s| (s.format.mode, s.function.name_prefix.trim(), s.arguments.name_prefix.trim()) != own)
            .map(|mut tools| {
                // The template's markers around the calls: what ends a call's last value.
                let f = &t.format;
                tools.format.section_start.clone_from(&f.section_start);
                tools.format.section_end.clone_from(&f.section_end);
                tools.format.per_call_start.clone_from(&f.per_call_start);
                tools.format.per_call_end.clone_from(&f.per_call_end);
                tools.format.call_separator.clone_from(&f.call_separator);
                let json = tools.format.mode == ToolFormat::JsonNative;
                let ids = self.writes_ids();
                let calls: Vec<Parser<'b>> = self.with_tools(tools, |other| {
                    if json {
                        // One object, or a list of them (Mistral's `[TOOL_CALLS][{...}]`).
                        let call = other.json_call_of_declared(ids);
                        vec![call, other.json_list(call)]
                    } else {
                        self.tools().iter().map(|(n, s)| other.tag_call(n, s)).collect()
                    }
                });
                // Read whole: a stream sends nothing of a call that may still turn out to be
                // no call in this syntax (its arguments could not be taken back).
                self.recovered(RecoveryKind::CallShape, b.atomic(b.choice(calls) + ends))
            })
            .collect()
    }

    /// A JSON call object of a declared tool as an item of the template's list of calls in
    /// another syntax (LFM2's `[get_weather(city="Paris")]`, whose models also write
    /// `[{"name": "get_weather", "arguments": {...}}]` when asked for JSON), reported as another
    /// call shape. `{` tells it from the template's own call, which starts with a name. Read
    /// whole, like the other syntaxes inside markers.
    pub(super) fn json_call_in_list(&self) -> Option<Parser<'b>> {
        let f = &self.a.tools.format;
        if !self.recovering() || !f.tools_array_wrapped || f.mode == ToolFormat::JsonNative {
            return None;
        }
        let b = self.b;
        // Shapes without an id only: an id would make every call of the arena wait for one
        // before it is announced.
        let calls = self.with_tools(json_call(), |json| json.named_json_calls());
        Some(self.recovered(RecoveryKind::CallShape, b.peek("{") + b.atomic(b.choice(calls))))
    }

    /// Whether [`Ctx::calls_in_other_syntaxes`] has any: when recovering, where special markers
    /// announce calls, the per-call ones or the section's where calls have none of their own
    /// (not where the per-call one names the call: what follows it is that call's).
    pub(super) fn other_syntaxes_read(&self) -> bool {
        let f = &self.a.tools.format;
        if f.named_per_call_start().is_some() {
            return false;
        }
        let marker = |m: &str| crate::analysis::segment::first_marker(m.trim()).is_some();
        self.recovering() && (marker(&f.per_call_start) || (f.per_call_start.trim().is_empty() && marker(&f.section_start)))
    }

    /// Whether the template writes call ids. Where it does not, calls in other syntaxes come in
    /// no shape with one: every call of the arena would wait for its id before being announced.
    fn writes_ids(&self) -> bool {
        let t = &self.a.tools;
        t.call_id.pos != crate::format::CallIdPosition::None || !t.format.id_field.is_empty()
    }

    /// A JSON call of a declared tool in any shape, or (`ids` false) in the shapes without an id.
    fn json_call_of_declared(&self, ids: bool) -> Parser<'b> {
        if ids { self.json_call_any_shape(Names::Declared) } else { self.b.choice(self.named_json_calls()) }
    }

    /// JSON calls of the declared tools in this context's shape, arguments in any form, or in
    /// another shape whose id (if any) is not read.
    fn named_json_calls(&self) -> Vec<Parser<'b>> {
        let mut calls: Vec<Parser<'b>> = self.tools().iter().map(|(n, s)| self.json_call(n, s)).collect();
        calls.push(self.json_call_shaped(Names::Declared, self.loose_args()));
        calls.push(self.recovered(RecoveryKind::CallShape, self.loose_json_call(Names::Declared, false)));
        calls
    }

    /// What `build` makes in this arena's context with `tools` as the template's call format:
    /// calls in another syntax, built by the same rules.
    pub(super) fn with_tools<R>(&self, tools: ToolAnalysis, build: impl FnOnce(&Ctx<'_, 'b>) -> R) -> R {
        let mut a = self.a.clone();
        a.tools = tools;
        build(&Ctx { b: self.b, a: &a, policy: self.policy, prefill_for_grammar: None, embedded: Default::default() })
    }

    /// The per-call start, the name it may hold any name (`<tool_call name="` NAME `">`; not
    /// the call's name: the call object that follows names it).
    pub(super) fn per_call_start_any_name(&self) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        match f.named_per_call_start() {
            Some((open, close)) => b.space() + b.literal(open) + b.chars("[A-Za-z0-9_.:-]", 1, Some(128)) + b.literal(close),
            None => super::lit(b, &f.per_call_start),
        }
    }

    /// Where the per-call start names the call before a JSON call object naming it again
    /// (`<tool_call name="f">{"name": "f", "arguments": {…}}`): the call with its arguments
    /// alone after the opener (`<tool_call name="f">{"city": "Paris"}`), the name the opener's,
    /// reported as another call shape.
    pub(super) fn named_opener_args_only(&self) -> Option<Parser<'b>> {
        let f = &self.a.tools.format;
        let (open, close) = f.named_per_call_start()?;
        if !self.recovering() || f.mode != ToolFormat::JsonNative {
            return None;
        }
        let tagged = ToolAnalysis {
            format: ToolFormatAnalysis { mode: ToolFormat::TagWithJson, ..Default::default() },
            function: ToolFunctionAnalysis { name_prefix: open.into(), name_suffix: close.into(), ..Default::default() },
            ..Default::default()
        };
        let b = self.b;
        let call = self.with_tools(tagged, |t| t.tag_call_with(t.name_parser(Names::Any), "", b.space() + t.loose_args()));
        Some(self.recovered(RecoveryKind::CallShape, call))
    }

    /// `own`, the template's `prefix NAME suffix` around `name`; when recovering, where the
    /// name is an attribute value, also in the spellings of the same attribute models mix up,
    /// reported as another call shape: a quoted value (`<invoke name="` … `">`) in single
    /// quotes or none (`<invoke name=get_weather>`), or as the tag's own value
    /// (`<invoke=get_weather>`); the tag's own value (`<parameter=` … `>`) as its `name`
    /// attribute, quoted or not (`<parameter name="city">`).
    pub(super) fn attribute_quotes(&self, own: Parser<'b>, prefix: &str, name: Parser<'b>, suffix: &str) -> Parser<'b> {
        let b = self.b;
        if !self.recovering() {
            return own;
        }
        let (prefix, suffix) = (prefix.trim(), suffix.trim());
        let quote = || b.optional(b.choice([b.literal("\""), b.literal("'")]));
        // The tag before its value: `<invoke` of `<invoke name="`, `<parameter` of `<parameter=`.
        fn tag_of(p: &str) -> Option<&str> {
            let word = p.strip_prefix('<')?;
            (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))).then_some(p)
        }
        let mut others = Vec::new();
        if let (Some(bare_prefix), Some(bare_suffix)) = (prefix.strip_suffix('"'), suffix.strip_prefix('"')) {
            if !bare_prefix.ends_with('=') {
                return own;
            }
            let single = || b.optional(b.literal("'"));
            others.push(b.literal(bare_prefix) + single() + name + single() + b.literal(bare_suffix));
            if let Some(tag) = bare_prefix.strip_suffix(" name=").and_then(tag_of) {
                others.push(b.literal(&format!("{tag}=")) + name + b.literal(bare_suffix));
            }
        } else if let (Some(tag), true) = (prefix.strip_suffix('=').and_then(tag_of), suffix == ">") {
            others.push(b.literal(&format!("{tag} name=")) + quote() + name + quote() + b.literal(">"));
        }
        if others.is_empty() {
            return own;
        }
        let others = if others.len() == 1 { others[0] } else { b.choice(others) };
        b.choice([own, self.recovered(RecoveryKind::CallShape, b.space() + others)])
    }

    /// Whether this arena parses (not generates): recoveries are for parsing only.
    pub(super) fn recovering(&self) -> bool {
        self.prefill_for_grammar.is_none()
    }

    /// `p`, reported as a recovery of `kind`.
    pub(super) fn recovered(&self, kind: RecoveryKind, p: Parser<'b>) -> Parser<'b> {
        self.b.tag(kind.tag(), p)
    }

    /// A closing marker (`close`, the parser of `text`); when recovering, also, reported:
    /// the same tag misspelled (`</tool_calls>`, `<\\tool_call>`, `<tool_call/>` for
    /// `</tool_call>`); the call's opener written again for the call's close where the
    /// output ends (`<tool_call>` for `</tool_call>`); none where the output ends, or where
    /// the marker that ends the call or the calls' section follows (`</parameter></tool_call>`
    /// without `</function>`), or the next call's opener. `optional`: the template's form
    /// may leave it out anyway.
    pub(super) fn closing(&self, close: Parser<'b>, text: &str, optional: bool) -> Parser<'b> {
        let b = self.b;
        let mut alts = vec![close];
        if self.recovering() {
            let f = &self.a.tools.format;
            let eot = self.a.end_of_turn.trim();
            let output_end = || if eot.is_empty() { b.end() } else { b.choice([b.end(), b.literal(eot) + b.space() + b.end()]) };
            let word = text
                .trim()
                .strip_prefix("</")
                .and_then(|t| t.strip_suffix('>'))
                .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')));
            if let Some(w) = word {
                let misspelled = [format!("</{w}s>"), format!("<\\{w}>"), format!("<{w}/>"), format!("</ {w}>")];
                alts.push(self.recovered(RecoveryKind::MissingClose, b.space() + b.choice(misspelled.iter().map(|m| b.literal(m)).collect::<Vec<_>>())));
            }
            let pcs = f.per_call_opener();
            if !pcs.is_empty() && f.named_per_call_start().is_none() && text.trim() == f.per_call_end.trim() {
                alts.push(self.recovered(RecoveryKind::MissingClose, b.space() + pcs + b.peek(b.space() + output_end())));
            }
            let mut outer: Vec<Parser<'b>> =
                [f.per_call_end.trim(), f.section_end.trim(), pcs].into_iter().filter(|m| !m.is_empty()).map(|m| b.literal(m)).collect();
            outer.push(output_end());
            alts.push(self.recovered(RecoveryKind::MissingClose, b.space() + b.peek(b.choice(outer))));
        }
        if optional {
            // Left out mid-output: reported too, the template writes it.
            alts.push(if self.recovering() { self.recovered(RecoveryKind::MissingClose, b.eps()) } else { b.eps() });
        }
        if alts.len() == 1 { close } else { b.choice(alts) }
    }

    /// A lookahead at where a call of `fun` ends: a marker that closes its arguments, the
    /// call or its section, or that opens the next call ([`Ctx::closing_markers`]); the
    /// end-of-turn marker where the output ends; the end; or one of `more`.
    pub(super) fn call_end_ahead(&self, fun: &str, more: &[&str]) -> Parser<'b> {
        self.call_end_ahead_or_end(fun, more, true)
    }

    /// [`Ctx::call_end_ahead`], the end of the output itself among the ends only if `or_end`.
    fn call_end_ahead_or_end(&self, fun: &str, more: &[&str], or_end: bool) -> Parser<'b> {
        let b = self.b;
        let mut ends: Vec<Parser<'b>> = self.closing_markers(fun).iter().map(|m| b.literal(m)).collect();
        ends.extend(more.iter().map(|m| b.literal(m)));
        let eot = self.a.end_of_turn.trim();
        if !eot.is_empty() {
            ends.push(b.literal(eot) + b.space() + b.end());
        }
        if or_end {
            ends.push(b.end());
        }
        b.peek(b.space() + b.choice(ends))
    }

    /// The `}` that closes a JSON call object (its close tag); when recovering, also none
    /// where the call ends (`{"name": …, "arguments": {…}` then `</tool_call>`), and braces
    /// too many after it (`{…}}}`), each reported.
    pub(super) fn json_call_close(&self) -> Parser<'b> {
        let b = self.b;
        let close = b.tag(tags::TOOL_CLOSE, b.literal("}"));
        if !self.recovering() {
            return close;
        }
        let left_out = self.recovered(RecoveryKind::MissingClose, b.tag(tags::TOOL_CLOSE, b.eps()) + self.call_end_ahead("", &[]));
        // (A call object may end a list of calls.)
        b.choice([close + self.extra_braces("", &["]"]), left_out])
    }

    /// The opener of a call's arguments (`start`, holding the call's name `fun` where the
    /// template writes it again), and where it is several markers, the same with its leading
    /// markers left out (`<invoke name="f">` for `<calls>\n<invoke name="f">`: models drop
    /// the wrapper around a lone call), reported as another call shape. The closes are read
    /// as optional already ([`Ctx::closing`]).
    pub(super) fn args_opener(&self, start: &str, fun: &str) -> Parser<'b> {
        let b = self.b;
        let whole = super::lit(b, &crate::format::with_name(start, fun));
        if !self.recovering() {
            return whole;
        }
        let segs = crate::analysis::segment::segmentize_markers(start.trim());
        let mut alts = vec![whole];
        let mut from = 0;
        for (k, seg) in segs.iter().enumerate() {
            if k > 0 && seg.is_marker() {
                let rest = &start.trim()[from..];
                alts.push(self.recovered(RecoveryKind::CallShape, super::lit(b, &crate::format::with_name(rest, fun))));
            }
            from += seg.value.len();
        }
        if alts.len() == 1 { alts.remove(0) } else { b.choice(alts) }
    }

    /// After a JSON object that ends a call of `fun`: closing braces too many (`{…}}`), where
    /// the call ends after them ([`Ctx::call_end_ahead`] with `more`), reported as another
    /// call shape (models lose count of what they opened).
    pub(super) fn extra_braces(&self, fun: &str, more: &[&str]) -> Parser<'b> {
        let b = self.b;
        // Where a marker that ends the call is a brace (`{'name': 'f', 'arguments': {…}}`
        // written as tags around the arguments), braces after the arguments are its own.
        if self.closing_markers(fun).iter().any(|m| m.starts_with('}')) {
            return b.eps();
        }
        // The first glued to the close (so that a call's end is answered at once by a byte
        // that is no brace: streams re-parse a call's end at every chunk there).
        b.optional(self.recovered(RecoveryKind::CallShape, "}" + b.zero_or_more(b.space() + "}") + self.call_end_ahead(fun, more)))
    }

    /// The function name, tagged, as `names` allows (without quotes).
    pub(super) fn name_parser(&self, names: Names<'_>) -> Parser<'b> {
        let b = self.b;
        let inner = match names {
            Names::One(n) => b.literal(n),
            // Longest first: a name that is a prefix of another must not win.
            Names::Declared => b.choice(self.tools().iter().map(|(n, _)| b.literal(n)).collect::<Vec<_>>()),
            Names::Any if self.a.tools.format.mode == ToolFormat::JsonNative => b.json_string_content(),
            // A word (`get_weather`, `functions.get`), not punctuation alone.
            Names::Any => b.chars("[A-Za-z0-9_]", 1, Some(1)) + b.chars("[A-Za-z0-9_.-]", 0, None),
        };
        b.tag(tags::TOOL_NAME, inner)
    }

    /// `"k": ` for any key `k` of `keys` (whitespace around the colon optional), or `'k': ` (a
    /// call written as a Python dict).
    fn key_of(&self, keys: &[&str]) -> Parser<'b> {
        let b = self.b;
        let mut keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        // Longest first (a key that is a prefix of another must not win), then duplicates out.
        keys.sort_by(|x, y| y.len().cmp(&x.len()).then(x.cmp(y)));
        keys.dedup();
        let alts: Vec<Parser<'b>> = keys.iter().flat_map(|k| [b.literal(&format!("\"{k}\"")), b.literal(&format!("'{k}'"))]).collect();
        b.choice(alts) + b.space() + ":" + b.space()
    }

    /// The usual keys of a call member, and the template's own (`own`, where it names one).
    fn keys<'k>(usual: &[&'k str], own: &[&'k String]) -> Vec<&'k str> {
        let mut keys = usual.to_vec();
        keys.extend(own.iter().filter(|k| !k.is_empty()).map(|k| k.as_str()));
        keys
    }

    fn name_keys(&self) -> Vec<&str> {
        Self::keys(NAME_KEYS, &[&self.a.tools.format.name_field])
    }

    fn args_keys(&self) -> Vec<&str> {
        Self::keys(ARGS_KEYS, &[&self.a.tools.format.args_field])
    }

    fn id_keys(&self) -> Vec<&str> {
        let f = &self.a.tools.format;
        Self::keys(ID_KEYS, &[&f.id_field, &f.gen_id_field])
    }

    /// Arguments written as a JSON string holding the object (`"{\"city\": \"Paris\"}"`),
    /// reported unless the template writes them so.
    pub(super) fn args_as_string(&self) -> Parser<'b> {
        let b = self.b;
        let p = b.peek("\"" + b.space() + "{") + b.tag(tags::TOOL_ARGS_STRING, b.json_string());
        if self.a.tools.format.args_as_string { p } else { self.recovered(RecoveryKind::ArgumentsAsString, p) }
    }

    /// Arguments written as a Python dict with Python's quotes, read whole where the
    /// arguments are otherwise JSON, reported unless the template writes them so (see
    /// [`python_dict_arguments`]).
    pub(super) fn args_as_python(&self) -> Parser<'b> {
        let b = self.b;
        if self.a.tools.format.uses_python_dicts {
            return b.tag(tags::TOOL_ARGS, b.python_kind(peg_runtime::PythonKind::Dict));
        }
        python_dict_arguments(b).0
    }

    /// Arguments written as a JavaScript object, keys bare (`{city: "Paris", days: 3}`): read
    /// as the JSON they mean. Told by `{` and a bare key, where JSON and Python fail at once;
    /// read whole.
    pub(super) fn args_as_js(&self) -> Parser<'b> {
        const RULE: &str = "js-value";
        let b = self.b;
        let tok = |p: Parser<'b>| b.tag(tags::TOOL_ARG_LITERAL_TOKEN, p);
        let bare = || b.chars("[A-Za-z_$]", 1, Some(1)) + b.chars("[A-Za-z0-9_$]", 0, None);
        let value = if b.has_rule(RULE) {
            b.rule_ref(RULE)
        } else {
            let value = || b.rule_ref(RULE);
            let key = b.choice([b.tag(tags::TOOL_ARG_LITERAL_STRING, bare()), tok(b.json_string())]);
            let sep = || b.space() + tok(b.literal(",")) + b.space();
            // (A trailing comma, as JavaScript allows, is dropped.)
            let trailing = || b.optional(b.space() + "," + b.peek(b.space() + b.choice(["}", "]"])));
            let member = || key + b.space() + tok(b.literal(":")) + b.space() + value();
            let map = tok(b.literal("{")) + b.space() + b.optional(member() + b.zero_or_more(sep() + member()) + trailing()) + b.space() + tok(b.literal("}"));
            let list = tok(b.literal("[")) + b.space() + b.optional(value() + b.zero_or_more(sep() + value()) + trailing()) + b.space() + tok(b.literal("]"));
            let word = tok(b.choice([b.literal("true"), b.literal("false"), b.literal("null")]));
            b.rule(RULE, b.choice([map, list, tok(b.json_string()), tok(b.json_number()), word]))
        };
        // Each member an argument (its value as the literal tokens above), as tagged formats
        // write them; a key quoted as in JSON is one too.
        let name = b.choice([b.tag(tags::TOOL_ARG_NAME, bare()), "\"" + b.tag(tags::TOOL_ARG_NAME, b.chars("[^\"\\\\]", 1, None)) + "\""]);
        let arg = || b.tag(tags::TOOL_ARG, name + b.space() + ":" + b.space() + value);
        let sep = || b.space() + "," + b.space();
        let trailing = b.optional(b.space() + "," + b.peek(b.space() + "}"));
        let object = "{" + b.space() + arg() + b.zero_or_more(sep() + arg()) + trailing + b.space() + "}";
        let told = b.peek("{" + b.space() + bare() + b.space() + ":");
        self.recovered(RecoveryKind::ArgumentsAsPython, told + b.atomic(object))
    }

    /// Arguments that are no JSON but a Python dict written with JSON's quotes, tried after
    /// JSON (see [`python_dict_arguments`]).
    pub(super) fn args_past_json(&self) -> Parser<'b> {
        python_dict_arguments(self.b).1
    }

    /// `args` (the template's arguments), or when recovering a string holding them or a
    /// Python dict.
    pub(super) fn or_loose_args(&self, args: Parser<'b>) -> Parser<'b> {
        if self.recovering() {
            self.b.choice([self.args_none(), self.args_as_string(), self.args_as_python(), self.args_as_js(), args, self.args_past_json(), self.args_cut()])
        } else {
            args
        }
    }

    /// Arguments that open a JSON value and stop fitting right before what ends the call
    /// (`{"city": "Paris"` then `</tool_call>`): kept up to there (a stream has sent that
    /// much), what was left open closed by the mapper (reported as repaired). (Output that
    /// ends inside the arguments is the longest prefix that fits, folded as cut off.)
    fn args_cut(&self) -> Parser<'b> {
        let b = self.b;
        b.tag(tags::TOOL_ARGS, b.json_prefix()) + self.call_end_ahead_or_end("", &[], false)
    }

    /// The arguments value of a call in any shape: an object (or, flagged by the mapper, any
    /// JSON), a JSON string holding the object, or a Python dict (with Python's quotes or
    /// JSON's).
    pub(super) fn loose_args(&self) -> Parser<'b> {
        let b = self.b;
        b.choice([
            self.args_as_python(),
            self.args_as_js(),
            b.tag(tags::TOOL_ARGS, b.json_object()),
            self.args_none(),
            self.args_as_string(),
            b.tag(tags::TOOL_ARGS, b.json()),
            self.args_past_json(),
        ])
    }

    /// `null` or `""` for the arguments of a call without any: it has none (`{}`), reported.
    fn args_none(&self) -> Parser<'b> {
        let b = self.b;
        self.recovered(RecoveryKind::CallShape, b.choice([b.literal("null"), b.literal("\"\"")]) + b.peek(b.space() + b.choice(["}", ","])))
    }

    /// A call object whose members come in any order under any of the usual keys, perhaps
    /// inside an extra `{"function": {...}}` wrapper: `{"arguments": {...}, "name": "f"}`,
    /// `{"type": "function", "function": {"name": "f", "parameters": {...}}}`. The object must
    /// name a tool as `names` allows (checked by lookahead before anything is tagged).
    pub(super) fn loose_json_call(&self, names: Names<'_>, ids: bool) -> Parser<'b> {
        let b = self.b;
        let name_keys = self.name_keys();
        let args_keys = self.args_keys();
        let id_keys = if ids { self.id_keys() } else { Vec::new() };
        let mut special = name_keys.clone();
        special.extend(args_keys.iter().copied());
        special.extend(id_keys.iter().copied());
        special.push(WRAPPER_KEY);
        // Any member, as JSON or as Python (a call written as a Python dict); `not` says which
        // it must not be.
        let member_but = |not: Parser<'b>| {
            let key = b.choice([b.json_string(), b.python_kind(peg_runtime::PythonKind::Str)]);
            b.negate(not) + key + b.space() + ":" + b.space() + b.choice([b.json(), b.python()])
        };
        let other = || member_but(self.key_of(&special));
        let quoted_name = |tagged: bool| {
            let n = self.name_parser(names);
            // In single quotes, any name is a word (JSON string content would run past the quote).
            let single = if names == Names::Any { b.tag(tags::TOOL_NAME, b.chars("[A-Za-z0-9_.:-]", 1, None)) } else { n };
            let (n, single) = if tagged { (n, single) } else { (b.atomic(n), b.atomic(single)) };
            b.choice(["\"" + n + "\"", "'" + single + "'"])
        };
        // Lookahead: the object (or its wrapper's) has a name member naming a tool.
        let skip = || b.zero_or_more(member_but(self.key_of(&name_keys)) + b.space() + "," + b.space());
        let named_flat = || "{" + b.space() + skip() + self.key_of(&name_keys) + quoted_name(false);
        let named = b.choice([named_flat(), "{" + b.space() + skip() + self.key_of(&[WRAPPER_KEY]) + named_flat()]);
        // ... and arguments: in text an object with a name alone is not a call; where a marker
        // announced calls (any name), it is one without arguments.
        let not_args = || b.choice([self.key_of(&args_keys), self.key_of(&[WRAPPER_KEY]) + "{"]);
        let skip_args = || b.zero_or_more(member_but(not_args()) + b.space() + "," + b.space());
        let with_args_flat = || "{" + b.space() + skip_args() + self.key_of(&args_keys);
        let with_args = b.choice([with_args_flat(), "{" + b.space() + skip_args() + self.key_of(&[WRAPPER_KEY]) + with_args_flat()]);
        let named = if names == Names::Any { named } else { b.peek(with_args) + named };
        // (Built only where read: an id tag anywhere in the arena makes every call wait for one.)
        let id =
            ids.then(|| self.key_of(&id_keys) + b.choice(["\"" + b.tag(tags::TOOL_ID, b.json_string_content()) + "\"", b.tag(tags::TOOL_ID, b.json_number())]));
        let members = |wrapper: Option<Parser<'b>>| {
            let mut alts = vec![self.key_of(&name_keys) + quoted_name(true), self.key_of(&args_keys) + self.loose_args()];
            if let Some(w) = wrapper {
                alts.push(w);
            }
            alts.extend(id);
            alts.push(other());
            let member = b.choice(alts);
            "{" + b.space() + member + b.zero_or_more(b.space() + "," + b.space() + member) + b.space()
        };
        let inner = members(None) + "}";
        let wrapper = self.key_of(&[WRAPPER_KEY]) + inner;
        let body = b.tag(tags::TOOL_OPEN, b.eps()) + members(Some(wrapper)) + self.json_call_close();
        b.peek(named) + b.tag(tags::TOOL, body)
    }

    /// Whether calls are JSON objects with the name inside, so that one is recognizable
    /// wherever it appears.
    pub(super) fn json_calls(&self) -> bool {
        let f = &self.a.tools.format;
        f.mode == ToolFormat::JsonNative && !f.fun_name_is_key && self.tools_on()
    }

    /// Whether text may hold calls of declared tools ([`Ctx::embedded_calls`]): where calls are
    /// JSON objects, and where they are tagged (models tuned across families write a JSON call
    /// where their template tags one).
    pub(super) fn prose_calls(&self) -> bool {
        self.json_calls() || (self.a.tools.format.mode != ToolFormat::JsonNative && self.tools_on())
    }

    /// One JSON call of `names` in the template's shape or (recovered) any other.
    pub(super) fn json_call_any_shape(&self, names: Names<'_>) -> Parser<'b> {
        let b = self.b;
        let mut alts: Vec<Parser<'b>> = match names {
            Names::One(n) => {
                let schema = self.tools().into_iter().find(|(t, _)| t == n).map(|(_, s)| s).unwrap_or(serde_json::Value::Bool(true));
                vec![self.json_call(n, &schema)]
            }
            _ => self.tools().iter().map(|(n, s)| self.json_call(n, s)).collect(),
        };
        // The template's shape with arguments outside the schema (the mapper flags them).
        alts.push(self.json_call_shaped(names, self.loose_args()));
        alts.push(self.recovered(RecoveryKind::CallShape, self.loose_json_call(names, true)));
        b.choice(alts)
    }

    /// Another `call` joined otherwise than the template joins calls: by `sep` (the template's
    /// separator, if any), `;`, `,` or whitespace. The report covers the call too: it is final
    /// only once the call is.
    pub(super) fn joined_call(&self, sep: &str, call: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let mut seps = vec![b.literal(";"), b.literal(",")];
        if !sep.is_empty() {
            seps.insert(0, b.literal(sep));
        }
        self.recovered(RecoveryKind::CallSeparator, b.space() + b.optional(b.choice(seps)) + b.space() + call)
    }

    /// A JSON list of `call`s, `[call, call]`.
    pub(super) fn json_list(&self, call: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        "[" + b.space() + call + b.zero_or_more(b.space() + "," + b.space() + call) + b.space() + "]"
    }

    /// Calls one after another joined by `;`, `,` or whitespace, or a JSON list of them. Where
    /// the template itself writes calls without markers, joined as it joins them (Llama 4's
    /// `{...}{...}` after the text) is no deviation.
    fn json_call_run(&self, call: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let f = &self.a.tools.format;
        let sep = f.call_separator.trim();
        let joined = self.joined_call(sep, call);
        let more = if f.section_start.trim().is_empty() && f.per_call_start.trim().is_empty() {
            let own = if sep.is_empty() { b.space() + call } else { b.space() + sep + b.space() + call };
            b.choice([own, joined])
        } else {
            joined
        };
        b.choice([self.json_list(call), self.recovered(RecoveryKind::ExtraWrapper, self.json_envelope(call)), call + b.zero_or_more(more)])
    }

    /// A JSON list of `call`s as the member of an object, as an API response holds them:
    /// `{"tool_calls": [call, call]}`.
    pub(super) fn json_envelope(&self, call: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let key = b.choice(ENVELOPE_KEYS.iter().map(|k| b.literal(&format!("\"{k}\""))).collect::<Vec<_>>());
        "{" + b.space() + key + b.space() + ":" + b.space() + self.json_list(call) + b.space() + "}"
    }

    /// A special token or tag that may wrap calls: `<|python_start|>`, `<tool_call>`, `[CALLS]`.
    fn wrapper_open(&self) -> Parser<'b> {
        let b = self.b;
        let word = |class: &str| b.chars(class, 1, None);
        b.choice(["<|" + word("[a-zA-Z0-9_]") + "|>", "<" + word("[a-zA-Z0-9_]") + ">", "[" + word("[A-Z_]") + "]"])
    }

    /// What closes a wrapper: `<|python_end|>`, `</tool_call>`, `[/CALLS]`.
    fn wrapper_close(&self) -> Parser<'b> {
        let b = self.b;
        let word = |class: &str| b.chars(class, 1, None);
        b.choice(["<|" + word("[a-zA-Z0-9_]") + "|>", "</" + word("[a-zA-Z0-9_]") + ">", "[/" + word("[A-Z_]") + "]"])
    }

    /// A markdown code fence's opening line start (```` ```json ````).
    fn fence_open(&self) -> Parser<'b> {
        let b = self.b;
        b.literal("```") + b.chars("[a-zA-Z_]", 0, None)
    }

    /// A fence or wrapper token right before `what` (reported, not content).
    pub(super) fn decoration_before(&self, what: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let one = b.negate(what)
            + b.choice([self.recovered(RecoveryKind::CodeFence, self.fence_open()), self.recovered(RecoveryKind::ExtraWrapper, self.wrapper_open())]);
        // Atomic: a token is reported only once the marker after it is there.
        // At most a fence and a token (`` ```\n<|python_start|> ``): a run of tags in text
        // is then looked at a bounded length from each position. The gate turns most text
        // away at its first bytes (each position tried costs a stream memory).
        let gate = b.space() + b.choice([b.literal("```"), "<" + b.chars("[a-zA-Z0-9_|]", 1, Some(40)) + ">", "[" + b.chars("[A-Z_]", 1, Some(40)) + "]"]);
        b.peek(gate) + b.atomic(b.repeat(b.space() + one, 1, Some(2)) + b.peek(b.space() + what))
    }

    /// A fence close or wrapper close after calls (reported, not content), not `marker` (what
    /// starts more calls).
    pub(super) fn decoration_after(&self, marker: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        // Not reported: the opening was (one deviation, one report). Whitespace after it that
        // ends the output goes with it (the end of the calls has none of its own).
        b.space() + b.negate(marker) + b.choice([b.literal("```"), self.wrapper_close()]) + b.optional(b.space() + b.end())
    }

    /// Arguments in a code fence (```` ```json {...} ``` ````), the fence reported.
    pub(super) fn fenced(&self, args: Parser<'b>) -> Parser<'b> {
        let b = self.b;
        let open = self.recovered(RecoveryKind::CodeFence, self.fence_open() + b.peek(b.space() + "{"));
        b.space() + open + b.space() + args + b.space() + "```"
    }

    /// Calls found inside content (JSON formats): a run of complete calls of declared tools,
    /// perhaps in a markdown code fence and wrapper tokens the template never writes
    /// (`<|python_tag|>`, `<|python_start|>...<|python_end|>`, `<tool_call>[...]</tool_call>`).
    /// Built once per arena: where text came before it, the caller reports it as in prose.
    pub(super) fn embedded_calls(&self) -> Parser<'b> {
        *self.embedded.get_or_init(|| self.build_embedded_calls())
    }

    fn build_embedded_calls(&self) -> Parser<'b> {
        let b = self.b;
        // Or declared tools called as `<function=NAME>{...}</function>` (Llama 3.1's form,
        // which models tuned on several families write where their template has no markers).
        // Where the template tags calls, the JSON forms are read with arguments of any shape
        // (the mapper checks them against the tool), built once for all tools rather than per
        // tool: a request may declare hundreds.
        let generic = !self.json_calls();
        let tagged = self.with_tools(function_tag_json(), |tagged| match generic {
            true => tagged.tag_call_with(tagged.name_parser(Names::Declared), "", b.space() + tagged.loose_args()),
            false => b.choice(self.tools().iter().map(|(n, s)| tagged.tag_call(n, s)).collect::<Vec<_>>()),
        });
        let tagged = self.recovered(RecoveryKind::CallShape, tagged + b.zero_or_more(b.space() + tagged));
        // Or as Python calls (Llama 3.2's pythonic `[get_weather(city="Paris")]`; Gemma 3's
        // in a `tool_code` fence): a list of them, or in a fence one per line. (Only where the
        // template writes JSON calls: their arguments are built per tool.)
        let python_ending = |end: &str| self.python_call_ending(end);
        let shape = |p: Parser<'b>| self.recovered(RecoveryKind::CallShape, p);
        let python = (!generic).then(|| {
            let list = python_ending("]");
            let list = "[" + b.space() + list + b.zero_or_more(b.space() + "," + b.space() + list) + b.space() + "]";
            let lines = python_ending("```");
            let lines = lines + b.zero_or_more(b.space() + lines);
            let fenced_lines = self.recovered(RecoveryKind::CodeFence, self.fence_open() + b.space()) + shape(lines) + b.space() + "```";
            (shape(list), fenced_lines)
        });
        let json = if self.json_calls() {
            self.json_call_run(self.json_call_any_shape(Names::Declared))
        } else {
            // JSON calls where the template tags them: another call shape.
            let ids = self.writes_ids();
            shape(self.with_tools(json_call(), |json| {
                let call = b.choice([json.json_call_shaped(Names::Declared, json.loose_args()), shape(json.loose_json_call(Names::Declared, ids))]);
                json.json_call_run(call)
            }))
        };
        // Where the template writes Python calls in markers, its calls in a Python list without
        // them (`[f(a=1), g(b=2)]` for `<|tool_call_start|>[f(a=1), g(b=2)]<|tool_call_end|>`).
        let own_list = self.bare_python_call(true).map(|call| shape(self.json_list(call)));
        let calls = b.choice([Some(json), Some(tagged), python.map(|p| p.0), own_list].into_iter().flatten().collect::<Vec<_>>());
        // A close is read only after its opener: where none opened, the calls end with their own
        // close, and the text after them (`<` of an end-of-turn marker) is not held as the
        // start of one.
        let fenced = self.recovered(RecoveryKind::CodeFence, self.fence_open() + b.space()) + b.space() + calls + b.optional(b.space() + "```");
        let inner = b.choice([python.map(|p| p.1), Some(fenced), Some(b.space() + calls)].into_iter().flatten().collect::<Vec<_>>());
        let wrapped = self.recovered(RecoveryKind::ExtraWrapper, self.wrapper_open() + b.space()) + inner + b.optional(b.space() + self.wrapper_close());
        let whole = b.choice([wrapped, inner]);
        // Atomic: a fence or token is reported only with the calls it holds (a fence in
        // prose usually holds code). The gate turns most text away at its first bytes: each
        // position tried costs a stream memory for as long as it lives.
        let opens = || b.choice([b.literal("{"), b.literal("["), b.literal("```")]);
        let gate = b.space()
            + b.choice([
                "{" + b.space() + "\"",
                "[" + b.space() + "{",
                "[" + b.space() + b.chars("[A-Za-z_]", 1, Some(1)),
                b.literal("```"),
                b.literal("<function="),
                "<" + b.chars("[a-zA-Z0-9_|]", 1, Some(40)) + ">" + b.space() + opens(),
            ]);
        b.peek(gate) + b.atomic(b.space() + whole)
    }

    /// Where the template writes Python calls (`NAME(` … `)`), a call of a declared tool in
    /// them without the name's opener or the per-call markers (`get_weather(city="Paris")` for
    /// `Call: get_weather(city="Paris")`): as models write the calls after the first, or all of
    /// them in a Python list (`in_list`: then `]` also ends a call's last value). `None`
    /// elsewhere, or when not recovering.
    pub(super) fn bare_python_call(&self, in_list: bool) -> Option<Parser<'b>> {
        let t = &self.a.tools;
        let python = t.format.mode == ToolFormat::TagWithTagged && t.function.name_suffix.trim() == "(" && t.function.close.trim() == ")";
        if !self.recovering() || !python || t.format.tools_array_wrapped {
            return None;
        }
        let mut bare = t.clone();
        bare.function.name_prefix.clear();
        bare.format.per_call_start.clear();
        bare.format.per_call_end.clear();
        if in_list {
            bare.format.section_end = "]".into();
        }
        Some(self.declared_tag_calls(bare))
    }

    /// A call of any declared tool in the tag-based syntax `tools`.
    fn declared_tag_calls(&self, tools: ToolAnalysis) -> Parser<'b> {
        self.with_tools(tools, |syntax| self.b.choice(self.tools().iter().map(|(n, s)| syntax.tag_call(n, s)).collect::<Vec<_>>()))
    }

    /// A tagged call of `name` whose arguments are elements named by their keys
    /// (`<city>Paris</city>` where the template writes `<parameter=city>Paris</parameter>`),
    /// as models tuned on XML-style tools write them: told by `<` and a key of the tool's
    /// schema, read whole, reported as another call shape. `None` where the template's own
    /// arguments are such elements, or the tool declares no properties.
    pub(super) fn args_as_named_elements(&self, name: &str, schema: &Value) -> Option<Parser<'b>> {
        let b = self.b;
        let t = &self.a.tools;
        let keys: Vec<&String> = schema.get("properties").and_then(Value::as_object).map(|m| m.keys().collect()).unwrap_or_default();
        if keys.is_empty() || t.arguments.name_prefix.trim() == "<" || t.arguments.elements.is_some() {
            return None;
        }
        let mut named = t.clone();
        named.arguments = ToolArgumentsAnalysis {
            name_prefix: "<".into(),
            name_suffix: ">".into(),
            // (On lines of their own, or not: the line breaks around a value are the element's.)
            value_prefix: "\n".into(),
            value_suffix: format!("\n</{}>", crate::format::NAME_SLOT),
            value_syntax: t.arguments.value_syntax.clone(),
            ..Default::default()
        };
        let told = b.space() + "<" + b.choice(keys.iter().map(|k| b.literal(k)).collect::<Vec<_>>()) + ">";
        let call = self.with_tools(named, |named| {
            let args = b.peek(told) + named.tagged_args(name, schema);
            named.tag_call_with(named.name_parser(Names::One(name)), name, args)
        });
        Some(self.recovered(RecoveryKind::CallShape, b.atomic(call)))
    }

    /// A Python call of a declared tool (`get_weather(city="Paris")`) ending before `end`:
    /// what closes the calls is also what ends a call's last value.
    fn python_call_ending(&self, end: &str) -> Parser<'b> {
        let mut tools = python_call();
        tools.format.section_end = end.into();
        self.declared_tag_calls(tools)
    }

    /// Python calls of declared tools, one per line, that are all the output holds
    /// (`get_weather(city="Paris")`): models tuned on pythonic calls leave out the list or
    /// fence they usually put them in. Read only as the whole output (with the end-of-turn
    /// marker where it ends), where no prose would be a call; read whole, so a stream holds
    /// text that opens with a tool's name until it is known. Where the template writes JSON
    /// calls, in Python's own form (as the other Python forms in text); where it writes Python
    /// calls in markers, in its form without them, joined by commas or line breaks too.
    pub(super) fn whole_output_python_calls(&self) -> Option<Parser<'b>> {
        let b = self.b;
        let eot = self.a.end_of_turn.trim();
        let output_end = if eot.is_empty() { b.end() } else { b.choice([b.end(), b.literal(eot) + b.space() + b.end()]) };
        let line_break = || b.chars("[ \t]", 0, None) + "\n" + b.space();
        let calls = if self.json_calls() {
            // Calls as Python writes them, keyword arguments of literal values and every `)`
            // there, none of the recoveries inside calls (which would make prose a value); the
            // mapper checks the arguments against the tool.
            let value = b.tag(tags::TOOL_ARG_JSON_VALUE, b.choice([b.json(), b.python()]));
            let key = b.tag(tags::TOOL_ARG_NAME, b.chars("[A-Za-z_]", 1, Some(1)) + b.chars("[A-Za-z0-9_]", 0, None));
            let arg = b.tag(tags::TOOL_ARG, b.tag(tags::TOOL_ARG_OPEN, key + b.space() + "=") + b.space() + value + b.tag(tags::TOOL_ARG_CLOSE, b.eps()));
            let args = b.optional(b.space() + arg + b.zero_or_more(b.space() + "," + b.space() + arg) + b.optional(b.space() + ",")) + b.space();
            let call = self.with_tools(python_call(), |python| python.tag_call_with(python.name_parser(Names::Declared), "", args));
            call + b.zero_or_more(line_break() + call)
        } else {
            // Where the template writes Python calls inside its markers, its own calls without
            // them, joined by commas or line breaks.
            let call = self.bare_python_call(false)?;
            let sep = b.choice([b.space() + b.choice([",", ";"]) + b.space(), line_break()]);
            call + b.zero_or_more(sep + call)
        };
        Some(b.atomic(self.recovered(RecoveryKind::CallShape, b.space() + calls) + b.space() + b.peek(output_end)))
    }

    /// The characters content stops at to look for a wrapper token or fence before calls,
    /// and (`calls`) for a JSON call itself.
    pub(super) fn embedded_starts(&self, calls: bool) -> Vec<String> {
        let starts: &[&str] = if calls { &["{", "[", "<", "`"] } else { &["[", "<", "`"] };
        starts.iter().map(|s| (*s).to_owned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::is_opening;

    #[test]
    fn openings_and_closes() {
        for m in ["<|tool_response>", "<tool_response>", " <result>\n"] {
            assert!(is_opening(m), "{m}");
        }
        for m in ["</minimax:tool_call>", "<|tool_calls_section_end|>", "<｜tool▁calls▁end｜>", "[/TOOL_CALLS]", "<br/>", "]"] {
            assert!(!is_opening(m), "{m}");
        }
    }
}
