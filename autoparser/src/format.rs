//! The learned output format: how a template writes reasoning, content and tool calls, as
//! [`analysis`](crate::analysis) finds it and [`generator`](crate::generator) builds on it. Data
//! only, so the registry can adjust it without depending on either.
//!
//! Field names follow the reference analysis dumps (`corpus/analysis/*.json`) where sensible.
//!
//! ```
//! use autoparser::format::{ContentMode, ReasoningMode, ToolFormat};
//! use autoparser::{analysis::analyze, template::ChatTemplate};
//! let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
//!            {{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
//!            {% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
//! assert_eq!((a.reasoning.mode, a.content.mode, a.tools.format.mode), (ReasoningMode::TagBased, ContentMode::Plain, ToolFormat::JsonNative));
//! assert_eq!((a.tools.format.per_call_start.as_str(), a.end_of_turn.as_str()), ("<call>", "<|end|>"));
//! ```

use serde::{Deserialize, Serialize};

/// How the model writes reasoning.
///
/// ```
/// use autoparser::format::ReasoningMode;
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
///            {{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert_eq!(a.reasoning.mode, ReasoningMode::TagBased);
/// assert_eq!(serde_json::to_value(a.reasoning.mode).unwrap(), "TAG_BASED"); // as cached
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasoningMode {
    /// No reasoning markers found.
    #[default]
    None,
    /// `start` reasoning `end`; `start` may be empty (delimiter style: reasoning ends at `end`).
    TagBased,
    /// Reasoning only appears in messages with tool calls.
    ToolsOnly,
}

/// How the model wraps its content.
///
/// ```
/// use autoparser::format::ContentMode;
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' %}<response>{{ m.content }}</response>\
///            {% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert_eq!((a.content.mode, a.content.start.as_str()), (ContentMode::AlwaysWrapped, "<response>"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ContentMode {
    /// No markers.
    #[default]
    Plain,
    /// Always `start` content `end`.
    AlwaysWrapped,
    /// Wrapped only when reasoning is present.
    WrappedWithReasoning,
}

/// How the model writes tool calls.
///
/// ```
/// use autoparser::format::ToolFormat;
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<function={{ c.function.name }}>\
///            {% for k, v in c.function.arguments | items %}<parameter={{ k }}>{{ v }}</parameter>{% endfor %}</function>{% endfor %}\
///            <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// // Name and each argument in markers.
/// assert_eq!(a.tools.format.mode, ToolFormat::TagWithTagged);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolFormat {
    /// No tool calls.
    #[default]
    None,
    /// The whole call is JSON: `{"name": "f", "arguments": {...}}`.
    JsonNative,
    /// Name in markers, arguments one JSON object: `<function=f>{...}</function>`.
    TagWithJson,
    /// Name and each argument in markers: `<parameter=a>value</parameter>`.
    TagWithTagged,
}

/// Where a call id sits in a tag-based call.
///
/// ```
/// use autoparser::format::CallIdPosition;
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]{% elif m.role == 'assistant' %}{{ m.content }}\
///            {% for c in m.tool_calls or [] %}[TOOL_CALLS]{{ c.function.name }}[CALL_ID]{{ c.id }}[ARGS]{{ c.function.arguments | tojson }}\
///            {% endfor %}</s>{% endif %}{% endfor %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// // `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`
/// assert_eq!(a.tools.call_id.pos, CallIdPosition::BetweenFuncAndArgs);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CallIdPosition {
    /// No call id in the output.
    #[default]
    None,
    /// Before the function name.
    PreFuncName,
    /// Between function name and arguments.
    BetweenFuncAndArgs,
    /// After the arguments.
    PostArgs,
}

/// What the template supports, found by rendering probes.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% if tools %}Tools: {{ tools | tojson }}\n{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\
///            {% if m.tool_calls %}<call>{{ m.tool_calls[0].function | tojson }}</call>{% endif %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert!(a.caps.supports_tools && a.caps.supports_tool_calls);
/// assert!(!a.caps.supports_parallel_tool_calls); // only the first call is rendered
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Tool definitions change the prompt.
    pub supports_tools: bool,
    /// Assistant tool calls are rendered.
    pub supports_tool_calls: bool,
    /// Two tool calls in one message are both rendered.
    pub supports_parallel_tool_calls: bool,
    /// Tool call arguments may be passed as objects (else as JSON strings).
    pub supports_object_arguments: bool,
    /// A system message is rendered.
    pub supports_system_role: bool,
    /// `enable_thinking` changes the generation prompt.
    pub supports_thinking_toggle: bool,
    /// Tool calls are rendered only for a message whose content is null (DeepSeek V3 tests
    /// `message['content'] is none`): renders send a call message's empty content as null.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub null_content_with_calls: bool,
}

/// Reasoning markers.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
///            {{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert_eq!((a.reasoning.start.as_str(), a.reasoning.end.as_str()), ("<think>", "</think>"));
/// assert_eq!(a.reasoning.end_marker(), "</think>");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningAnalysis {
    /// The mode.
    pub mode: ReasoningMode,
    /// Start marker, e.g. `<think>` (empty for delimiter style).
    pub start: String,
    /// End marker, e.g. `</think>`.
    pub end: String,
}

impl ReasoningAnalysis {
    /// The end marker as the parser matches it: trimmed, or a line break for reasoning that
    /// only the end of its line ends (`Thought: ...`).
    pub fn end_marker(&self) -> &str {
        match self.end.trim() {
            "" if self.end.contains('\n') => "\n",
            e => e,
        }
    }
}

/// Content markers.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' %}<response>{{ m.content }}</response>\
///            {% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert_eq!(a.content.start, "<response>");
/// assert!(!a.content.requires_nonnull_content);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentAnalysis {
    /// The mode.
    pub mode: ContentMode,
    /// Start marker, e.g. `<response>`.
    pub start: String,
    /// End marker, e.g. `</response>`.
    pub end: String,
    /// The template needs a non-null content with tool calls.
    pub requires_nonnull_content: bool,
}

/// Markers and JSON fields of the tool-call section.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
///            {{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let f = &a.tools.format;
/// assert_eq!((f.per_call_start.as_str(), f.per_call_end.as_str()), ("<call>", "</call>"));
/// assert_eq!((f.name_field.as_str(), f.args_field.as_str()), ("name", "arguments"));
/// assert!(!f.args_as_string && !f.tools_array_wrapped);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFormatAnalysis {
    /// The format.
    pub mode: ToolFormat,
    /// Opens the section holding all calls.
    pub section_start: String,
    /// Closes the section.
    pub section_end: String,
    /// Opens each call. May hold the call's name as a [`NAME_SLOT`] (`<tool_call name="`
    /// slot `">` before a JSON call object naming it again).
    pub per_call_start: String,
    /// Closes each call.
    pub per_call_end: String,
    /// Between two calls.
    pub call_separator: String,
    /// JSON: the function name is the key, `{"f": {...}}`.
    pub fun_name_is_key: bool,
    /// JSON: calls are in an array `[{...}, {...}]`.
    pub tools_array_wrapped: bool,
    /// JSON: nesting key, `{"function": {"name": ...}}` (empty when flat).
    pub function_field: String,
    /// JSON: the name key.
    pub name_field: String,
    /// JSON: the arguments key.
    pub args_field: String,
    /// JSON: the call id key (string ids).
    pub id_field: String,
    /// JSON: a field the template fills with the call index (`"tool_call_id": "0"`).
    pub gen_id_field: String,
    /// JSON: order of the fields as rendered.
    pub parameter_order: Vec<String>,
    /// JSON: arguments are stringified JSON (`"arguments": "{...}"`).
    pub args_as_string: bool,
    /// The arguments object is a Python literal (`{'city': 'Paris', 'ok': True}`): the
    /// template prints the arguments mapping as it is, which Jinja writes as Python's `repr`.
    pub uses_python_dicts: bool,
    /// The template writes a message's content after its tool calls, not before.
    pub content_after_calls: bool,
    /// The template writes a message's content and then its tool calls (both kept), so calls
    /// without markers of their own may follow text.
    #[serde(default)]
    pub calls_after_content: bool,
    /// Opens the content of a message that has calls, the section start closing it (Llama 4:
    /// `<|python_start|>On it.<|python_end|>{...}`, an empty pair before calls alone).
    #[serde(default)]
    pub content_open_with_calls: String,
    /// The template writes whitespace after the last call (before the end of the turn), so a
    /// model may too; without it the output ends right after the last call.
    #[serde(default = "default_true")]
    pub space_after_calls: bool,
    /// The calls' opener ends reasoning: the template writes no reasoning end marker before
    /// calls (`<|plan|>…<|call|>{…}`, the content's opener ending it otherwise), so reasoning
    /// that runs into a call is no deviation.
    #[serde(default)]
    pub calls_end_reasoning: bool,
    /// The template closes the calls' section only after several calls (DeepSeek V3 writes
    /// `<｜tool▁calls▁end｜>` in the branch of the second call): a section left open at the end
    /// is its own form.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub section_end_optional: bool,
}

fn default_true() -> bool {
    true
}

impl ToolFormatAnalysis {
    /// What opens every call whatever its name: the per-call start up to the name it holds,
    /// trimmed (`<tool_call name="` of `<tool_call name="` [`NAME_SLOT`] `">`).
    ///
    /// ```
    /// use autoparser::format::{ToolFormatAnalysis, NAME_SLOT};
    /// let f = ToolFormatAnalysis { per_call_start: format!("<tool_call name=\"{NAME_SLOT}\">"), ..Default::default() };
    /// assert_eq!(f.per_call_opener(), "<tool_call name=\"");
    /// ```
    pub fn per_call_opener(&self) -> &str {
        self.named_per_call_start().map_or(self.per_call_start.trim(), |(opener, _)| opener)
    }

    /// Where the per-call start holds the call's name: what comes before and after the
    /// [`NAME_SLOT`], trimmed at the ends (`("<tool_call name=\"", "\">")`).
    pub fn named_per_call_start(&self) -> Option<(&str, &str)> {
        self.per_call_start.trim().split_once(NAME_SLOT)
    }
}

impl Default for ToolFormatAnalysis {
    fn default() -> Self {
        ToolFormatAnalysis {
            mode: ToolFormat::None,
            section_start: String::new(),
            section_end: String::new(),
            per_call_start: String::new(),
            per_call_end: String::new(),
            call_separator: String::new(),
            fun_name_is_key: false,
            tools_array_wrapped: false,
            function_field: String::new(),
            name_field: "name".into(),
            args_field: "arguments".into(),
            id_field: String::new(),
            gen_id_field: String::new(),
            parameter_order: Vec::new(),
            args_as_string: false,
            uses_python_dicts: false,
            content_after_calls: false,
            calls_after_content: false,
            content_open_with_calls: String::new(),
            space_after_calls: true,
            calls_end_reasoning: false,
            section_end_optional: false,
        }
    }
}

/// Markers around the function name.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<function={{ c.function.name }}>\
///            {% for k, v in c.function.arguments | items %}<parameter={{ k }}>{{ v }}</parameter>{% endfor %}</function>{% endfor %}\
///            <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let f = &a.tools.function;
/// assert_eq!((f.name_prefix.as_str(), f.name_suffix.as_str(), f.close.as_str()), ("<function=", ">", "</function>"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFunctionAnalysis {
    /// Before the name, e.g. `<function=`.
    pub name_prefix: String,
    /// After the name, e.g. `>\n`.
    pub name_suffix: String,
    /// Closes the function, e.g. `</function>`.
    pub close: String,
    /// The suffix carries the call's index (`functions.f:0`, `functions.g:1`): prefix, name
    /// and suffix together are the call id.
    pub indexed: bool,
}

impl ToolFunctionAnalysis {
    /// The call id holds the name (`functions.f:0`): an indexed suffix, and a prefix and suffix
    /// that are parts of one word (no space or quote), not an opener with attributes
    /// (`call tool="f" index="1"`) that merely numbers the calls.
    pub(crate) fn names_in_ids(&self) -> bool {
        let id_like = |s: &str| !s.trim().contains(|c: char| c.is_whitespace() || c == '"' || c == '\'');
        self.indexed && id_like(&self.name_prefix) && id_like(&self.name_suffix)
    }
}

/// Markers of the arguments.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<function={{ c.function.name }}>\
///            {% for k, v in c.function.arguments | items %}<parameter={{ k }}>{{ v }}</parameter>{% endfor %}</function>{% endfor %}\
///            <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let args = &a.tools.arguments;
/// assert_eq!((args.name_prefix.as_str(), args.name_suffix.as_str(), args.value_suffix.as_str()), ("<parameter=", ">", "</parameter>"));
/// assert!(args.value_syntax.is_json());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolArgumentsAnalysis {
    /// Opens the arguments container (tag formats), e.g. `<arguments>`.
    pub start: String,
    /// Closes the container.
    pub end: String,
    /// Before an argument name, e.g. `<parameter=`.
    pub name_prefix: String,
    /// After an argument name, e.g. `>\n`.
    pub name_suffix: String,
    /// Before a value.
    pub value_prefix: String,
    /// After a value, e.g. `\n</parameter>\n`.
    pub value_suffix: String,
    /// Between two arguments.
    pub separator: String,
    /// Values are literals of the call syntax (`f(a='x', b=1)`): strings quoted, parsed as JSON
    /// or Python literals.
    pub value_is_literal: bool,
    /// Literal string values are written raw between their quotes, unescaped
    /// (`'C:\dir'`, `'it's'`): they end at a quote an argument's follower comes after.
    #[serde(default)]
    pub literal_strings_raw: bool,
    /// The quote literal strings are written between (`'` or `"`), when values are literals.
    #[serde(default)]
    pub literal_quote: String,
    /// Every value is written between those quotes, whatever its type: the text Python's
    /// `str` gives (`n="2"`, `ok="True"`, `loc="{'city': 'Paris'}"`), read as the
    /// argument's schema types it.
    #[serde(default)]
    pub values_quoted: bool,
    /// Between a name and a non-string (JSON) value, when it differs from the string case
    /// (e.g. `" string="false">`, `:` without a quote marker).
    pub json_value_open: Option<String>,
    /// After a non-string value, when it differs from `value_suffix`.
    pub json_value_close: Option<String>,
    /// Openers that name the value's JSON type (`" type="boolean"<|sep|>`), by type
    /// (`number`, `boolean`, `null`, `object`, `array`), when they differ from
    /// `json_value_open` (the number's); empty when every non-string shares that opener.
    #[serde(default)]
    pub json_value_opens: std::collections::BTreeMap<String, String>,
    /// How the template writes nested values (lists, mappings, the strings inside them).
    #[serde(default)]
    pub value_syntax: ValueSyntax,
    /// Mappings and lists written as nested elements (`<loc><city>Paris</city></loc>`), when
    /// the template does so (A4); `value_suffix` then closes with the argument's name.
    #[serde(default)]
    pub elements: Option<ElementSyntax>,
    /// The template writes no argument whose value is null (it skips them): a model trained
    /// on it writes null as the argument's absence, so an argument that may be null is not
    /// required of it.
    #[serde(default)]
    pub omits_null: bool,
}

/// Stands for the name of what a marker closes (`</` [`NAME_SLOT`] `>` is `</alpha>` after
/// argument `alpha`): in `value_suffix` and `function.close` of element-style formats.
///
/// ```
/// use autoparser::format::{with_name, NAME_SLOT};
/// let value_suffix = format!("</{NAME_SLOT}>");
/// assert_eq!(with_name(&value_suffix, "alpha"), "</alpha>");
/// ```
pub const NAME_SLOT: &str = "\u{E001}";

/// Puts `name` into a marker holding [`NAME_SLOT`].
///
/// ```
/// use autoparser::format::with_name;
/// assert_eq!(with_name("</\u{E001}>\n", "city"), "</city>\n");
/// assert_eq!(with_name("</parameter>", "city"), "</parameter>"); // no slot: unchanged
/// ```
pub fn with_name(marker: &str, name: &str) -> String {
    marker.replace(NAME_SLOT, name)
}

/// Nested values written as elements, learned by rendering a mapping and a list (A4): each
/// member of a mapping is `open_prefix KEY open_suffix value close_prefix KEY close_suffix`,
/// each item of a list the same with `item` for the key; scalars are raw text.
///
/// ```
/// use autoparser::format::ElementSyntax;
/// let e = ElementSyntax::default();
/// assert_eq!((e.open("city"), e.close("city")), ("<city>".to_owned(), "</city>".to_owned()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ElementSyntax {
    /// Before an element's name in its opening tag (`<`).
    pub open_prefix: String,
    /// After the name in the opening tag (`>`).
    pub open_suffix: String,
    /// Before the name in the closing tag (`</`).
    pub close_prefix: String,
    /// After the name in the closing tag (`>`).
    pub close_suffix: String,
    /// The element name of list items (`item`).
    pub item: String,
    /// How `true` is written.
    pub true_literal: String,
    /// How `false` is written.
    pub false_literal: String,
    /// How `null` is written.
    pub null_literal: String,
}

impl Default for ElementSyntax {
    fn default() -> Self {
        ElementSyntax {
            open_prefix: "<".into(),
            open_suffix: ">".into(),
            close_prefix: "</".into(),
            close_suffix: ">".into(),
            item: "item".into(),
            true_literal: "true".into(),
            false_literal: "false".into(),
            null_literal: "null".into(),
        }
    }
}

impl ElementSyntax {
    /// The opening tag of element `name`.
    pub fn open(&self, name: &str) -> String {
        format!("{}{name}{}", self.open_prefix, self.open_suffix)
    }
    /// The closing tag of element `name`.
    pub fn close(&self, name: &str) -> String {
        format!("{}{name}{}", self.close_prefix, self.close_suffix)
    }
}

/// The literal syntax of argument values, learned by rendering nested values (A4). The
/// default is JSON (Python reprs count as JSON too: the JSON/Python parsers read them).
///
/// ```
/// use autoparser::format::ValueSyntax;
/// assert!(ValueSyntax::default().is_json());
/// let gemma = ValueSyntax { string_open: "<|\"|>".into(), string_close: "<|\"|>".into(), key_open: String::new(), key_close: String::new(), ..ValueSyntax::default() };
/// assert!(!gemma.is_json());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ValueSyntax {
    /// Opens a string (`"` in JSON, `<|"|>` in Gemma 4).
    pub string_open: String,
    /// Closes a string.
    pub string_close: String,
    /// Strings are JSON-escaped inside their quotes (else raw text up to `string_close`).
    pub string_escapes: bool,
    /// Opens a mapping key; empty for bare keys (`{key:value}`).
    pub key_open: String,
    /// Closes a mapping key.
    pub key_close: String,
    /// Between a key and its value, as rendered (`": "`, `":"`).
    pub key_separator: String,
    /// Between two items of a list or mapping, as rendered (`", "`, `","`).
    pub item_separator: String,
    /// How `true` is written.
    pub true_literal: String,
    /// How `false` is written.
    pub false_literal: String,
    /// How `null` is written.
    pub null_literal: String,
    /// Mapping keys are written sorted (`dictsort`), not in the order they were given.
    pub sorted_keys: bool,
}

impl Default for ValueSyntax {
    fn default() -> Self {
        ValueSyntax {
            string_open: "\"".into(),
            string_close: "\"".into(),
            string_escapes: true,
            key_open: "\"".into(),
            key_close: "\"".into(),
            key_separator: ": ".into(),
            item_separator: ", ".into(),
            true_literal: "true".into(),
            false_literal: "false".into(),
            null_literal: "null".into(),
            sorted_keys: false,
        }
    }
}

impl ValueSyntax {
    /// The syntax is JSON's (whitespace around separators aside): values parse as JSON.
    pub fn is_json(&self) -> bool {
        let j = ValueSyntax::default();
        self.string_open == j.string_open
            && self.string_close == j.string_close
            && self.string_escapes
            && self.key_open == j.key_open
            && self.key_close == j.key_close
            && self.key_separator.trim() == ":"
            && self.item_separator.trim() == ","
            && self.true_literal == j.true_literal
            && self.false_literal == j.false_literal
            && self.null_literal == j.null_literal
    }
}

/// Call id markers.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]{% elif m.role == 'assistant' %}{{ m.content }}\
///            {% for c in m.tool_calls or [] %}[TOOL_CALLS]{{ c.function.name }}[CALL_ID]{{ c.id }}[ARGS]{{ c.function.arguments | tojson }}\
///            {% endfor %}</s>{% endif %}{% endfor %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let id = &a.tools.call_id;
/// assert_eq!((id.prefix.as_str(), id.suffix.as_str()), ("[CALL_ID]", "[ARGS]"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallIdAnalysis {
    /// Position.
    pub pos: CallIdPosition,
    /// Before the id.
    pub prefix: String,
    /// After the id.
    pub suffix: String,
}

/// Everything about tool calls.
///
/// ```
/// use autoparser::format::{CallIdPosition, ToolFormat};
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]{% elif m.role == 'assistant' %}{{ m.content }}\
///            {% for c in m.tool_calls or [] %}[TOOL_CALLS]{{ c.function.name }}[CALL_ID]{{ c.id }}[ARGS]{{ c.function.arguments | tojson }}\
///            {% endfor %}</s>{% endif %}{% endfor %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// let tools = &a.tools;
/// assert_eq!((tools.format.mode, tools.format.per_call_start.as_str()), (ToolFormat::TagWithJson, "[TOOL_CALLS]"));
/// assert_eq!(tools.call_id.pos, CallIdPosition::BetweenFuncAndArgs);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnalysis {
    /// Section, per-call markers and JSON fields.
    pub format: ToolFormatAnalysis,
    /// Function name markers.
    pub function: ToolFunctionAnalysis,
    /// Argument markers.
    pub arguments: ToolArgumentsAnalysis,
    /// Call id markers.
    pub call_id: ToolCallIdAnalysis,
    /// How a turn of calls and nothing else is written, when it is a form streams can read
    /// without a parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_form: Option<CallFormAnalysis>,
}

/// A turn of tool calls as the template writes it after the generation prompt it was learned
/// with (a request with another prompt may be answered otherwise, and its streams parse).
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}\
///            <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let learned = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap().tools.call_form.unwrap();
/// assert_eq!(learned.generation_prompt, "<|assistant|>");
/// assert_eq!((learned.form.open.as_str(), learned.form.close.as_str()), ("<call>{\"name\": \"", "}</call>"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFormAnalysis {
    /// The generation prompt of the renders the form was cut from.
    pub generation_prompt: String,
    /// The form.
    #[serde(flatten)]
    pub form: peg_runtime::chat::CallForm,
}

/// Addressed messages: the assistant turn is a run of parts `HEADER BODY END`, each header
/// naming the part's recipient (`to=user<|message|>`, `@get_weather: `, `>>>all\n`). Content is
/// the part addressed to the recipient the template writes for content, a call the part
/// addressed to a declared function (its body the JSON arguments, or arguments in the
/// template's tags), reasoning the part addressed to the recipient the template writes for
/// reasoning. Learned by diffing the renders of
/// content, of one and two calls and of reasoning (the analysis of tools).
///
/// ```
/// use autoparser::format::AddressedParts;
/// let p = AddressedParts { recipient_prefix: "to=".into(), recipient_suffix: "<|message|>".into(), content_recipient: "user".into(), ..AddressedParts::default() };
/// assert_eq!(p.header("user"), "to=user<|message|>");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AddressedParts {
    /// Before the recipient in a header (`to=`, `@`; empty for `NAME\n`).
    pub recipient_prefix: String,
    /// After the recipient (`<|message|>`, `: `, `\n`).
    pub recipient_suffix: String,
    /// The recipient of content parts (`user`, `all`).
    pub content_recipient: String,
    /// The recipient of reasoning parts (`thoughts`); empty when reasoning is no part.
    pub reasoning_recipient: String,
    /// Ends a part (`<|end|>`, `\n`); may be empty.
    pub part_end: String,
    /// Opens each part after the first (`>>>`); the generation prompt writes it for the first.
    pub part_start: String,
}

impl AddressedParts {
    /// The header of a part addressed to `recipient`, as the template writes it.
    pub fn header(&self, recipient: &str) -> String {
        format!("{}{recipient}{}", self.recipient_prefix, self.recipient_suffix)
    }
}

/// The result of analyzing one template. Cheap to clone, serializable, cached per template.
///
/// ```
/// use autoparser::format::TemplateAnalysis;
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}\
///            {{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>{% endfor %}<|end|>{% endfor %}\
///            {% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let a = analyze(&ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
/// assert_eq!(a.preserved_tokens, ["<think>", "</think>", "<call>", "</call>"]);
/// assert_eq!(TemplateAnalysis::from_json(&a.to_json()).unwrap(), a); // a cache round trip
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateAnalysis {
    /// A registered model-specific builder that handles this template, if any.
    pub builder: Option<String>,
    /// Capabilities.
    pub caps: Capabilities,
    /// Reasoning.
    pub reasoning: ReasoningAnalysis,
    /// Content.
    pub content: ContentAnalysis,
    /// Tool calls.
    pub tools: ToolAnalysis,
    /// The marker ending an assistant turn after plain content (e.g. `<|im_end|>`), if any.
    pub end_of_turn: String,
    /// The marker the generation prompt ends with (`<|CHATBOT_TOKEN|>`), when it is not a
    /// reasoning marker: models repeat it before their content.
    #[serde(default)]
    pub turn_header: String,
    /// Every part of the turn (reasoning, content, calls) is opened by the turn header, the
    /// part's kind after it (`<|im_start|>assistant/think\n`, `<|im_start|>assistant\n`,
    /// `<|im_start|>assistant -> tool/function_call\n`), and the generation prompt stops
    /// inside the first one: the prompt's header is prefill, later parts repeat it.
    #[serde(default)]
    pub header_per_part: bool,
    /// The turn is a run of addressed parts (content, reasoning and calls each a part of its
    /// own); `None` for the marker-slot model above.
    #[serde(default)]
    pub parts: Option<AddressedParts>,
    /// Marker tokens the tokenizer must keep whole.
    pub preserved_tokens: Vec<String>,
    /// Extra stop strings.
    pub additional_stops: Vec<String>,
    /// Notes from analysis steps that found nothing or failed softly (for debugging).
    pub notes: Vec<String>,
    /// Why the template's tool calls could not be learned (it renders calls no rule reads):
    /// requests with tools are refused with this reason, plain chat works.
    #[serde(default)]
    pub tools_error: Option<String>,
}

impl TemplateAnalysis {
    /// Serializes to JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("analysis serializes")
    }
    /// Deserializes from [`TemplateAnalysis::to_json`] output.
    pub fn from_json(s: &str) -> Result<TemplateAnalysis, serde_json::Error> {
        serde_json::from_str(s)
    }
}
