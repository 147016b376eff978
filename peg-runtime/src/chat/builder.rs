//! Builders for the three chat AST shapes: `simple` (reasoning, content), `native`
//! (tool arguments as one JSON object) and `constructed` (arguments as separate entities).
//!
//! Each builder derefs to [`Builder`], so every combinator is at hand; the shape adds methods
//! that wrap a parser in its semantic tag. The mapper ([`crate::chat::ChatParser`]) reads
//! exactly these tags.

use std::ops::Deref;

use crate::arena::Arena;
use crate::builder::{Builder, IntoParser, Parser};
use crate::error::Error;

/// The semantic tag names the mapper understands.
///
/// ```
/// use peg_runtime::chat::{tags, ChatParser, ParseMode, SimpleBuilder};
/// use peg_runtime::Arena;
/// // The shape builders' methods wrap a parser in these tags, as `Builder::tag` does.
/// let tagged = Arena::build(|p| p.tag(tags::REASONING, p.until("\n")) + "\n" + p.tag(tags::CONTENT, p.rest())).unwrap();
/// let shaped = SimpleBuilder::build(|p| p.reasoning(p.until("\n")) + "\n" + p.content(p.rest())).unwrap();
/// assert_eq!(tagged, shaped);
/// let m = ChatParser::new(tagged.into(), Default::default()).parse("Hmm.\nHi!", ParseMode::Complete).unwrap().message;
/// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Hmm.", "Hi!"));
/// ```
pub mod tags {
    /// Reasoning text (`reasoning_content`).
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// let arena = Arena::build(|p| {
    ///     "<think>" + p.tag(tags::REASONING, p.until("</think>")) + "</think>" + p.tag(tags::CONTENT, p.rest())
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("<think> Easy. </think>4", ParseMode::Complete)?.message;
    /// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Easy.", "4"));
    /// # Ok(())
    /// # }
    /// ```
    pub const REASONING: &str = "reasoning";
    /// Content text.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// // Two pieces of content: one text, trimmed as a whole.
    /// let arena = Arena::build(|p| p.tag(tags::CONTENT, p.until("<br>")) + "<br>" + p.tag(tags::CONTENT, p.rest()))?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(" Hello <br>world \n", ParseMode::Complete)?.message;
    /// assert_eq!(m.content, "Hello world");
    /// # Ok(())
    /// # }
    /// ```
    pub const CONTENT: &str = "content";
    /// A whole tool call.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// // Each `tool` node is one call.
    /// let arena = Arena::build(|p| {
    ///     let call = p.tag(tags::TOOL, "<" + p.tag(tags::TOOL_NAME, p.chars("[a-z]", 1, None)) + " " + p.tag(tags::TOOL_ARGS, p.json()) + ">");
    ///     p.zero_or_more(call) + p.end()
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"<now {}><add {"a": 1}>"#, ParseMode::Complete)?.message;
    /// assert_eq!((m.tool_calls.len(), m.tool_calls[1].name.as_str()), (2, "add"));
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL: &str = "tool";
    /// The start of a tool call.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// // Without `tool` nodes, each `tool_open` starts a call.
    /// let arena = Arena::build(|p| {
    ///     let call = p.tag(tags::TOOL_OPEN, "[CALL]") + p.tag(tags::TOOL_NAME, p.chars("[a-z]", 1, None)) + p.tag(tags::TOOL_ARGS, p.json());
    ///     p.zero_or_more(call) + p.end()
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"[CALL]now{}[CALL]add{"a": 1}"#, ParseMode::Complete)?.message;
    /// assert_eq!((m.tool_calls.len(), m.tool_calls[1].arguments.as_str()), (2, r#"{"a": 1}"#));
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_OPEN: &str = "tool_open";
    /// The end of a tool call.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// use peg_runtime::chat::RecoveryKind;
    /// // The close marker, or nothing at the end of the output: a recovery.
    /// let arena = Arena::build(|p| {
    ///     let close = p.tag(tags::TOOL_CLOSE, "</call>" | p.tag(RecoveryKind::MissingClose.tag(), p.end()));
    ///     p.tag(tags::TOOL, "<call>" + p.tag(tags::TOOL_NAME, p.chars("[a-z]", 1, None)) + close)
    /// })?;
    /// let parsed = ChatParser::new(arena.into(), Default::default()).parse("<call>now", ParseMode::Complete)?;
    /// assert_eq!(parsed.message.tool_calls[0].name, "now");
    /// assert_eq!((parsed.recoveries[0].kind, parsed.recoveries[0].offset), (RecoveryKind::MissingClose, 9));
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_CLOSE: &str = "tool_close";
    /// The call id, when the output carries one.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// let arena = Arena::build(|p| {
    ///     let call = p.tag(tags::TOOL_NAME, p.chars("[a-z]", 1, None)) + p.optional("[ID]" + p.tag(tags::TOOL_ID, p.chars("[a-z0-9]", 1, None)));
    ///     p.tag(tags::TOOL, call + "[ARGS]" + p.tag(tags::TOOL_ARGS, p.json())) + ";"
    /// })?;
    /// let parser = ChatParser::new(arena.into(), Default::default());
    /// assert_eq!(parser.parse("now[ID]x7[ARGS]{};", ParseMode::Complete)?.message.tool_calls[0].id, "x7");
    /// // Without one in the output: the id prefix and the call's index.
    /// assert_eq!(parser.parse("now[ARGS]{};", ParseMode::Complete)?.message.tool_calls[0].id, "call_0");
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ID: &str = "tool_id";
    /// The function name.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// let arena = Arena::build(|p| p.tag(tags::TOOL, "functions." + p.tag(tags::TOOL_NAME, p.until("(")) + "()"))?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("functions.get_time()", ParseMode::Complete)?.message;
    /// assert_eq!((m.tool_calls[0].name.as_str(), m.tool_calls[0].arguments.as_str()), ("get_time", "{}"));
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_NAME: &str = "tool_name";
    /// The arguments as one JSON (or Python-literal) object.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// // JSON, or a Python literal normalized to JSON.
    /// let arena = Arena::build(|p| p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, "f") + p.tag(tags::TOOL_ARGS, p.json() | p.python())))?;
    /// let parser = ChatParser::new(arena.into(), Default::default());
    /// assert_eq!(parser.parse(r#"f{"n": [1, 2]}"#, ParseMode::Complete)?.message.tool_calls[0].arguments, r#"{"n": [1, 2]}"#);
    /// assert_eq!(parser.parse("f{'ok': True}", ParseMode::Complete)?.message.tool_calls[0].arguments, r#"{"ok": true}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARGS: &str = "tool_args";
    /// The arguments written as a JSON string literal holding their JSON text
    /// (`"{\"city\": \"Paris\"}"`): the whole literal, quotes included. Decoded once
    /// complete, then mapped as `tool_args` text; a literal that does not decode is kept as
    /// the arguments as it is.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// let arena = Arena::build(|p| {
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, "f") + " " + p.tag(tags::TOOL_ARGS_STRING, p.json_string()))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"f "{\"city\": \"Paris\"}""#, ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARGS_STRING: &str = "tool_args_string";
    /// One argument: name and value.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // `<call NAME><ARG>value</ARG>...</call>`: each `tool_arg` is one member of the arguments.
    /// let arena = Arena::build(|p| {
    ///     let value = p.tag(tags::TOOL_ARG_STRING_VALUE, p.until("</"));
    ///     let arg = p.tag(tags::TOOL_ARG, "<" + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">" + value + "</" + name(p) + ">");
    ///     p.tag(tags::TOOL, "<call " + p.tag(tags::TOOL_NAME, name(p)) + ">" + p.zero_or_more(arg) + "</call>")
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("<call weather><city>Paris</city><unit>C</unit></call>", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris", "unit": "C"}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG: &str = "tool_arg";
    /// The start of an argument. A stream announces the argument's name only once its start
    /// is read whole.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // The opening marker of an argument, here holding its name.
    /// let arena = Arena::build(|p| {
    ///     let open = p.tag(tags::TOOL_ARG_OPEN, "<parameter=" + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">");
    ///     let arg = p.tag(tags::TOOL_ARG, open + p.tag(tags::TOOL_ARG_STRING_VALUE, p.until("</parameter>")) + p.tag(tags::TOOL_ARG_CLOSE, "</parameter>"));
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.zero_or_more(arg))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("weather:<parameter=city>Paris</parameter>", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris"}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_OPEN: &str = "tool_arg_open";
    /// The end of an argument.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// use peg_runtime::chat::RecoveryKind;
    /// // The closing marker of an argument, or (a recovery) nothing before the next argument.
    /// let arena = Arena::build(|p| {
    ///     let close = p.tag(tags::TOOL_ARG_CLOSE, "</arg>" | p.tag(RecoveryKind::MissingClose.tag(), p.peek("<arg ") | p.end()));
    ///     let value = p.tag(tags::TOOL_ARG_STRING_VALUE, p.until_one_of(["</arg>", "<arg "]));
    ///     let arg = p.tag(tags::TOOL_ARG, "<arg " + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">" + value + close);
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.zero_or_more(arg))
    /// })?;
    /// let parsed = ChatParser::new(arena.into(), Default::default()).parse("f:<arg a>1<arg b>2</arg>", ParseMode::Complete)?;
    /// assert_eq!(parsed.message.tool_calls[0].arguments, r#"{"a": "1", "b": "2"}"#);
    /// assert_eq!(parsed.recoveries[0].kind, RecoveryKind::MissingClose);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_CLOSE: &str = "tool_arg_close";
    /// The argument name.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// let arena = Arena::build(|p| {
    ///     let arg = p.tag(tags::TOOL_ARG, p.tag(tags::TOOL_ARG_NAME, name(p)) + "=" + p.tag(tags::TOOL_ARG_JSON_VALUE, p.json()));
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + "(" + arg + p.zero_or_more(", " + arg) + ")")
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"add(a=1, b=2)"#, ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"a": 1, "b": 2}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_NAME: &str = "tool_arg_name";
    /// A raw string value: becomes a JSON string (escaped) unless the schema says otherwise.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// use peg_runtime::chat::{ChatParseOptions, ToolSpec};
    /// let arena = Arena::build(|p| {
    ///     let arg = p.tag(tags::TOOL_ARG, p.tag(tags::TOOL_ARG_NAME, name(p)) + "=" + p.tag(tags::TOOL_ARG_STRING_VALUE, p.until_one_of([";", ")"])));
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + "(" + arg + p.zero_or_more(";" + arg) + ")")
    /// })?;
    /// // The schema types `days`: its raw text is a number; `city` stays a string.
    /// let tool = ToolSpec::new("weather", serde_json::json!({"type": "object", "properties": {"days": {"type": "integer"}}}));
    /// let parser = ChatParser::new(arena.into(), ChatParseOptions { tools: vec![tool], ..Default::default() });
    /// let m = parser.parse(r#"weather(city=Paris "FR";days=3)"#, ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"city": "Paris \"FR\"", "days": 3}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_STRING_VALUE: &str = "tool_arg_string_value";
    /// A JSON (or Python-literal) value, kept as JSON.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// let arena = Arena::build(|p| {
    ///     let arg = p.tag(tags::TOOL_ARG, "<" + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">" + p.tag(tags::TOOL_ARG_JSON_VALUE, p.json()) + "</>");
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.zero_or_more(arg))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"f:<days>3</><tags>["a"]</>"#, ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"days": 3, "tags": ["a"]}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_JSON_VALUE: &str = "tool_arg_json_value";
    /// Inside a value written in a template's own literal syntax (`{key:<|"|>text<|"|>}`):
    /// the raw text of a string or a bare key, without its quote markers; becomes an escaped
    /// JSON string. Text of the value that no `tool_arg_literal_*` tag covers (quote markers,
    /// whitespace) is dropped.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // A value in a literal syntax: `{key:<|"|>text<|"|>}`.
    /// let arena = Arena::build(|p| {
    ///     let text = "<|\"|>" + p.tag(tags::TOOL_ARG_LITERAL_STRING, p.until("<|\"|>")) + "<|\"|>";
    ///     let value = p.tag(tags::TOOL_ARG_LITERAL_TOKEN, "{") + p.tag(tags::TOOL_ARG_LITERAL_STRING, name(p))
    ///         + p.tag(tags::TOOL_ARG_LITERAL_TOKEN, ":") + text + p.tag(tags::TOOL_ARG_LITERAL_TOKEN, "}");
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.tag(tags::TOOL_ARG, p.tag(tags::TOOL_ARG_NAME, name(p)) + "=" + value))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse(r#"f:loc={city:<|"|>Paris "15e"<|"|>}"#, ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"loc": {"city":"Paris \"15e\""}}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_LITERAL_STRING: &str = "tool_arg_literal_string";
    /// Inside a literal-syntax value: one whole token, `{ } [ ] , :`, a number, a JSON string
    /// or a literal (`true`/`True`, `false`/`False`, `null`/`None`), written as JSON.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // A list in a literal syntax: `[1, True, None]`.
    /// let arena = Arena::build(|p| {
    ///     let token = |t| p.tag(tags::TOOL_ARG_LITERAL_TOKEN, t);
    ///     let item = token(p.chars("[0-9]", 1, None) | "True" | "None");
    ///     let value = token(p.literal("[")) + item + p.zero_or_more(token(p.literal(",")) + " " + item) + token(p.literal("]"));
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.tag(tags::TOOL_ARG, p.tag(tags::TOOL_ARG_NAME, name(p)) + "=" + value))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("f:xs=[1, True, None]", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"xs": [1,true,null]}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_LITERAL_TOKEN: &str = "tool_arg_literal_token";
    /// A mapping written as nested elements (`<city>Paris</city><zip>75001</zip>`): a JSON
    /// object; its members are a `tool_arg_element_key` each, then the member's value
    /// (literal tokens and strings, or nested elements).
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // `<loc><city>Paris</city></loc>`: a mapping of elements.
    /// let arena = Arena::build(|p| {
    ///     let member = "<" + p.tag(tags::TOOL_ARG_ELEMENT_KEY, name(p)) + ">" + p.tag(tags::TOOL_ARG_LITERAL_STRING, p.until("</")) + "</" + name(p) + ">";
    ///     let arg = "<" + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">" + p.tag(tags::TOOL_ARG_ELEMENT_OBJECT, p.zero_or_more(member)) + "</" + name(p) + ">";
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.tag(tags::TOOL_ARG, arg))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("f:<loc><city>Paris</city><zip>75001</zip></loc>", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"loc": {"city":"Paris","zip":"75001"}}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_ELEMENT_OBJECT: &str = "tool_arg_element_object";
    /// A list written as repeated elements (`<item>a</item><item>b</item>`): a JSON array of
    /// the values inside.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // `<xs><item>a</item><item>b</item></xs>`: a list of elements.
    /// let arena = Arena::build(|p| {
    ///     let item = "<item>" + p.tag(tags::TOOL_ARG_LITERAL_STRING, p.until("</item>")) + "</item>";
    ///     let arg = "<" + p.tag(tags::TOOL_ARG_NAME, name(p)) + ">" + p.tag(tags::TOOL_ARG_ELEMENT_ARRAY, p.zero_or_more(item)) + "</" + name(p) + ">";
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.tag(tags::TOOL_ARG, arg))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("f:<xs><item>a</item><item>b</item></xs>", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"xs": ["a","b"]}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_ELEMENT_ARRAY: &str = "tool_arg_element_array";
    /// The name of a member element: a JSON key.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// # fn name(p: &peg_runtime::Builder) -> peg_runtime::Parser<'_> { p.chars("[a-z]", 1, None) }
    /// // The member names of a mapping written as elements become its keys.
    /// let arena = Arena::build(|p| {
    ///     let member = "<" + p.tag(tags::TOOL_ARG_ELEMENT_KEY, name(p)) + ">" + p.tag(tags::TOOL_ARG_LITERAL_TOKEN, p.json_number()) + "</" + name(p) + ">";
    ///     let arg = p.tag(tags::TOOL_ARG_NAME, "size") + "=" + p.tag(tags::TOOL_ARG_ELEMENT_OBJECT, p.zero_or_more(member));
    ///     p.tag(tags::TOOL, p.tag(tags::TOOL_NAME, name(p)) + ":" + p.tag(tags::TOOL_ARG, arg))
    /// })?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("f:size=<w>3</w><h>4</h>", ParseMode::Complete)?.message;
    /// assert_eq!(m.tool_calls[0].arguments, r#"{"size": {"w":3,"h":4}}"#);
    /// # Ok(())
    /// # }
    /// ```
    pub const TOOL_ARG_ELEMENT_KEY: &str = "tool_arg_element_key";

    /// Every tag above; with the recovery tags (`RecoveryKind::tag`), all the mapper reads.
    ///
    /// ```
    /// use peg_runtime::chat::{tags, RecoveryKind};
    /// // Whether the mapper reads a tag (what `chat_peg!` checks at compile time).
    /// let reads = |tag: &str| tags::ALL.contains(&tag) || RecoveryKind::of_tag(tag).is_some();
    /// assert!(reads("tool_name") && reads("recovered.missing_close"));
    /// assert!(!reads("tool-name"));
    /// ```
    pub const ALL: &[&str] = &[
        REASONING,
        CONTENT,
        TOOL,
        TOOL_OPEN,
        TOOL_CLOSE,
        TOOL_ID,
        TOOL_NAME,
        TOOL_ARGS,
        TOOL_ARGS_STRING,
        TOOL_ARG,
        TOOL_ARG_OPEN,
        TOOL_ARG_CLOSE,
        TOOL_ARG_NAME,
        TOOL_ARG_STRING_VALUE,
        TOOL_ARG_JSON_VALUE,
        TOOL_ARG_LITERAL_STRING,
        TOOL_ARG_LITERAL_TOKEN,
        TOOL_ARG_ELEMENT_OBJECT,
        TOOL_ARG_ELEMENT_ARRAY,
        TOOL_ARG_ELEMENT_KEY,
    ];

    /// The tags of text the mapper reads as a whole: tags inside them are never read.
    ///
    /// ```
    /// # use peg_runtime::chat::{tags, ChatParser, ParseMode};
    /// # use peg_runtime::Arena;
    /// # fn main() -> Result<(), peg_runtime::Error> {
    /// // A tag inside a text tag is part of the text, not read on its own.
    /// let arena = Arena::build(|p| p.tag(tags::CONTENT, "Call " + p.tag(tags::TOOL_NAME, "now")))?;
    /// let m = ChatParser::new(arena.into(), Default::default()).parse("Call now", ParseMode::Complete)?.message;
    /// assert_eq!((m.content.as_str(), m.tool_calls.len()), ("Call now", 0));
    /// assert!(tags::TEXT.contains(&tags::CONTENT));
    /// # Ok(())
    /// # }
    /// ```
    pub const TEXT: &[&str] =
        &[REASONING, CONTENT, TOOL_ARGS, TOOL_ARGS_STRING, TOOL_ARG_STRING_VALUE, TOOL_ARG_JSON_VALUE, TOOL_ARG_LITERAL_STRING, TOOL_ARG_LITERAL_TOKEN];
}

macro_rules! tag_methods {
    ($($(#[$doc:meta])* $name:ident => $tag:path;)*) => {
        $(
            $(#[$doc])*
            pub fn $name<'a>(&'a self, p: impl IntoParser<'a>) -> Parser<'a> {
                self.b.tag($tag, p)
            }
        )*
    };
}

macro_rules! shape {
    ($(#[$doc:meta])* $ty:ident) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $ty {
            b: Builder,
        }

        impl Deref for $ty {
            type Target = Builder;
            fn deref(&self) -> &Builder {
                &self.b
            }
        }

        impl $ty {
            /// An empty builder.
            pub fn new() -> $ty {
                $ty::default()
            }

            /// Builds an arena; the closure returns the root parser.
            pub fn build<F>(f: F) -> Result<Arena, Error>
            where
                F: for<'a> FnOnce(&'a $ty) -> Parser<'a>,
            {
                let s = $ty::new();
                let root = f(&s).id();
                s.b.finish(root)
            }

            tag_methods! {
                /// Tags reasoning text.
                reasoning => tags::REASONING;
                /// Tags content text.
                content => tags::CONTENT;
            }
        }
    };
}

shape! {
    /// The `simple` shape: content with optional reasoning.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, SimpleBuilder};
    /// let arena = SimpleBuilder::build(|p| {
    ///     p.optional("<think>" + p.reasoning(p.until("</think>")) + "</think>") + p.content(p.rest())
    /// })
    /// .unwrap();
    /// let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    /// let m = parser.parse("<think>Easy.</think> 4", peg_runtime::chat::ParseMode::Complete).unwrap().message;
    /// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Easy.", "4"));
    /// ```
    SimpleBuilder
}

shape! {
    /// The `native` shape: tool arguments arrive as one JSON object.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, NativeBuilder};
    /// let arena = NativeBuilder::build(|p| {
    ///     let call = p.tool(
    ///         p.tool_open("{")
    ///             << p.json_member("name", "\"" + p.tool_name(p.literal("get_weather")) + "\"")
    ///             << ","
    ///             << p.json_member("arguments", p.tool_args(p.json()))
    ///             << p.tool_close("}"),
    ///     );
    ///     p.content(p.until("<tool_call>")) + p.optional("<tool_call>" + call + "</tool_call>") + p.end()
    /// })
    /// .unwrap();
    /// let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    /// let out = r#"Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>"#;
    /// let m = parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap().message;
    /// assert_eq!(m.content, "Checking.");
    /// assert_eq!((m.tool_calls[0].name.as_str(), m.tool_calls[0].arguments.as_str()), ("get_weather", r#"{"city": "Oslo"}"#));
    /// ```
    NativeBuilder
}

shape! {
    /// The `constructed` shape: arguments arrive as separate entities (XML tags, `name=value`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use peg_runtime::chat::{ChatParseOptions, ChatParser, ConstructedBuilder};
    /// let arena = ConstructedBuilder::build(|p| {
    ///     let arg = p.tool_arg(
    ///         p.tool_arg_open("<parameter name=\"" + p.tool_arg_name(p.literal("location")) + "\">")
    ///             + p.tool_arg_string_value(p.until("</parameter>"))
    ///             + p.tool_arg_close("</parameter>"),
    ///     );
    ///     let call = p.tool(
    ///         p.tool_open("<function name=\"" + p.tool_name(p.literal("get_weather")) + "\">")
    ///             + arg
    ///             + p.tool_close("</function>"),
    ///     );
    ///     p.content(p.until("<tool_call>")) + "<tool_call>" + call + "</tool_call>" + p.end()
    /// })
    /// .unwrap();
    /// let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
    /// let out = r#"<tool_call><function name="get_weather"><parameter name="location">Oslo, "NO"</parameter></function></tool_call>"#;
    /// let call = &parser.parse(out, peg_runtime::chat::ParseMode::Complete).unwrap().message.tool_calls[0];
    /// // The raw value becomes a JSON string.
    /// assert_eq!(call.arguments, r#"{"location": "Oslo, \"NO\""}"#);
    /// ```
    ConstructedBuilder
}

macro_rules! tool_methods {
    ($ty:ident) => {
        impl $ty {
            tag_methods! {
                /// Tags a whole tool call.
                tool => tags::TOOL;
                /// Tags the start of a tool call.
                tool_open => tags::TOOL_OPEN;
                /// Tags the end of a tool call.
                tool_close => tags::TOOL_CLOSE;
                /// Tags the call id.
                tool_id => tags::TOOL_ID;
                /// Tags the function name.
                tool_name => tags::TOOL_NAME;
            }
        }
    };
}

tool_methods!(NativeBuilder);
tool_methods!(ConstructedBuilder);

impl NativeBuilder {
    tag_methods! {
        /// Tags the arguments object (JSON or a Python dict).
        tool_args => tags::TOOL_ARGS;
        /// Tags a JSON string literal holding the arguments' JSON text (see
        /// [`tags::TOOL_ARGS_STRING`]).
        tool_args_string => tags::TOOL_ARGS_STRING;
    }
}

impl ConstructedBuilder {
    tag_methods! {
        /// Tags one argument (name and value).
        tool_arg => tags::TOOL_ARG;
        /// Tags the start of an argument.
        tool_arg_open => tags::TOOL_ARG_OPEN;
        /// Tags the end of an argument.
        tool_arg_close => tags::TOOL_ARG_CLOSE;
        /// Tags the argument name.
        tool_arg_name => tags::TOOL_ARG_NAME;
        /// Tags a raw string value (escaped into a JSON string unless the schema says otherwise).
        tool_arg_string_value => tags::TOOL_ARG_STRING_VALUE;
        /// Tags a JSON value.
        tool_arg_json_value => tags::TOOL_ARG_JSON_VALUE;
        /// Tags the raw text of a string or bare key inside a literal-syntax value.
        tool_arg_literal_string => tags::TOOL_ARG_LITERAL_STRING;
        /// Tags one token (punctuation, number, literal) inside a literal-syntax value.
        tool_arg_literal_token => tags::TOOL_ARG_LITERAL_TOKEN;
    }
}
