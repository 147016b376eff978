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
pub mod tags {
    /// Reasoning text (`reasoning_content`).
    pub const REASONING: &str = "reasoning";
    /// Content text.
    pub const CONTENT: &str = "content";
    /// A whole tool call.
    pub const TOOL: &str = "tool";
    /// The start of a tool call.
    pub const TOOL_OPEN: &str = "tool_open";
    /// The end of a tool call.
    pub const TOOL_CLOSE: &str = "tool_close";
    /// The call id, when the output carries one.
    pub const TOOL_ID: &str = "tool_id";
    /// The function name.
    pub const TOOL_NAME: &str = "tool_name";
    /// The arguments as one JSON (or Python-literal) object.
    pub const TOOL_ARGS: &str = "tool_args";
    /// The arguments written as a JSON string literal holding their JSON text
    /// (`"{\"city\": \"Paris\"}"`): the whole literal, quotes included. Decoded once
    /// complete, then mapped as `tool_args` text; a literal that does not decode is kept as
    /// the arguments as it is.
    pub const TOOL_ARGS_STRING: &str = "tool_args_string";
    /// One argument: name and value.
    pub const TOOL_ARG: &str = "tool_arg";
    /// The start of an argument.
    pub const TOOL_ARG_OPEN: &str = "tool_arg_open";
    /// The end of an argument.
    pub const TOOL_ARG_CLOSE: &str = "tool_arg_close";
    /// The argument name.
    pub const TOOL_ARG_NAME: &str = "tool_arg_name";
    /// A raw string value: becomes a JSON string (escaped) unless the schema says otherwise.
    pub const TOOL_ARG_STRING_VALUE: &str = "tool_arg_string_value";
    /// A JSON (or Python-literal) value, kept as JSON.
    pub const TOOL_ARG_JSON_VALUE: &str = "tool_arg_json_value";
    /// Inside a value written in a template's own literal syntax (`{key:<|"|>text<|"|>}`):
    /// the raw text of a string or a bare key, without its quote markers; becomes an escaped
    /// JSON string. Text of the value that no `tool_arg_literal_*` tag covers (quote markers,
    /// whitespace) is dropped.
    pub const TOOL_ARG_LITERAL_STRING: &str = "tool_arg_literal_string";
    /// Inside a literal-syntax value: one whole token, `{ } [ ] , :`, a number, a JSON string
    /// or a literal (`true`/`True`, `false`/`False`, `null`/`None`), written as JSON.
    pub const TOOL_ARG_LITERAL_TOKEN: &str = "tool_arg_literal_token";
    /// A mapping written as nested elements (`<city>Paris</city><zip>75001</zip>`): a JSON
    /// object; its members are a `tool_arg_element_key` each, then the member's value
    /// (literal tokens and strings, or nested elements).
    pub const TOOL_ARG_ELEMENT_OBJECT: &str = "tool_arg_element_object";
    /// A list written as repeated elements (`<item>a</item><item>b</item>`): a JSON array of
    /// the values inside.
    pub const TOOL_ARG_ELEMENT_ARRAY: &str = "tool_arg_element_array";
    /// The name of a member element: a JSON key.
    pub const TOOL_ARG_ELEMENT_KEY: &str = "tool_arg_element_key";

    /// Every tag above; with the recovery tags (`RecoveryKind::tag`), all the mapper reads.
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
