//! `chat_peg!`: grammars written in Rust source, checked at compile time and compiled to a
//! specialized parser, the equivalent runtime arena, its GBNF and a chat parser that maps its
//! parses to OpenAI-style messages, one-shot or as a stream of deltas.
//!
//! The pipeline follows rust-peg: tokens -> grammar AST (`grammar`) -> static checks
//! (`analysis`) -> code generation (`lower` for the arena, `codegen` for the parser).
//!
//! A crate that depends on `chat-peg` alone writes `chat_peg::chat_peg! { ... }`: the facade's
//! macro passes its re-export of the runtime as the crate path. Depending on `peg-macros` and
//! `peg-runtime` directly, `peg_macros::chat_peg!` refers to `::peg_runtime`; `crate = path;`
//! in a grammar names another path to the runtime.
//!
//! # A complete example: from grammar to streamed deltas
//!
//! ```
//! use peg_runtime::chat::{stream_pieces, ChatDelta, ChatMessage, ChatParseOptions, ParseMode, ToolSpec};
//!
//! peg_macros::chat_peg! {
//!     /// Reasoning, content, then `<call>{"name": ..., "arguments": {...}}</call>` blocks.
//!     pub grammar calls {
//!         root = ("<think>" #reasoning(until("</think>")) "</think>")? _
//!             #content(until("<call>")) (call _)* end;
//!         trigger rule call = #tool(
//!             #tool_open("<call>") _ "{" _ each_tool(
//!                 json_member("name", "\"" #tool_name(tool_name) "\"") _ "," _
//!                 json_member("arguments", #tool_args(tool_schema(json)))
//!             ) _ "}" _ #tool_close("</call>")
//!         );
//!     }
//! }
//!
//! // One request: its tools, and (here none) the prompt's prefill.
//! let tools = vec![ToolSpec::new("get_weather", serde_json::json!({
//!     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]
//! }))];
//! let chat = calls::Chat::new(ChatParseOptions { tools: tools.clone(), ..Default::default() }).unwrap();
//!
//! // What the sampler needs: the lazy grammar and the words that switch it on.
//! let grammar = calls::gbnf(&tools, true).unwrap();
//! assert!(grammar.starts_with("root ::= call"));
//! assert_eq!(calls::TRIGGERS, ["<call>"]);
//!
//! // The model's output, as it arrives.
//! let output = "<think>Two cities.</think> Checking.<call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</call>\n\
//!               <call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}</call>";
//! let mut stream = chat.stream();
//! let mut deltas: Vec<ChatDelta> = Vec::new();
//! for token in stream_pieces(output, &[4]) {
//!     // Each delta serializes as an OpenAI `choices[0].delta`.
//!     deltas.extend(stream.push(token).unwrap());
//! }
//! let (last, parsed) = stream.finish().unwrap();
//! deltas.extend(last);
//! let first = serde_json::to_value(&deltas[0]).unwrap();
//! assert!(first["reasoning_content"].is_string(), "{first}");
//!
//! // The deltas add up to the message of a one-shot parse.
//! let message = chat.parse(output, ParseMode::Complete).unwrap().message;
//! assert_eq!(ChatMessage::from_deltas(&deltas), message);
//! assert_eq!(parsed.message, message);
//! assert_eq!((message.reasoning_content.as_str(), message.content.as_str()), ("Two cities.", "Checking."));
//! assert_eq!(message.tool_calls[1].arguments, r#"{"city": "Tokyo"}"#);
//! ```
//!
//! # Grammar reference
//!
//! ```text
//! chat_peg! {
//!     /// Docs for the generated module.
//!     pub grammar NAME {
//!         crate = ::path::to::peg_runtime;       // optional, default `::peg_runtime`
//!         custom_tags = [my_tag, "my.tag"];      // optional: tags besides the chat tags
//!         doc_examples(path::to::NAME, runtime = path::to::peg_runtime);  // optional, see below
//!         root = EXPR;                           // exactly one
//!         rule NAME = EXPR;                      // a named rule (an AST node named NAME)
//!         trigger rule NAME = EXPR;              // where lazy grammars start
//!     }
//!     /// A variant: NAME's rules, with the ones given here replaced or added.
//!     pub grammar OTHER extends NAME {
//!         rule NAME = EXPR;                      // replaces NAME's rule of that name
//!     }
//! }
//! ```
//!
//! One invocation holds one or more grammars, each expanding to its own module. `extends` names
//! a grammar defined earlier in the same invocation: the new grammar starts from its root,
//! rules, custom tags and crate path; a rule defined again replaces the inherited one in place,
//! a new rule is added, and a `root` given replaces the inherited root. The result is checked
//! as a whole. A grammar of another invocation or crate (such as `chat_peg::formats::hermes`)
//! cannot be extended: a procedural macro sees only the tokens of its own invocation, and the
//! generated module keeps no grammar source to read back at compile time. To vary such a
//! grammar, copy its definition (it is in the source of the module that defines it) into your
//! invocation and extend it there.
//!
//! | syntax | meaning | runtime node |
//! |---|---|---|
//! | `"text"`, `'c'` | exact string | `literal` |
//! | `a b c` | sequence | `sequence` |
//! | `a / b` | ordered choice | `choice` |
//! | `e?` `e*` `e+` | optional, zero or more, one or more | `repeat` |
//! | `e*<n>` `e*<n,>` `e*<,m>` `e*<n,m>` | bounded repetition | `repeat` |
//! | `&e` `!e` | positive / negative lookahead | `peek` / `negate` |
//! | `["a-z_"]` `["^\n"]` | one character of a class (repetition folds into the class) | `chars` |
//! | `_`, `space` | optional whitespace: any run of spaces, tabs, line feeds and carriage returns, none included (in GBNF at most 24 of them, so a sampling model cannot emit whitespace without end) | `space` |
//! | `eps` `start` `end` `any` `rest` `marker` | basic matchers | same names |
//! | `until("a")`, `until("a", "b")` | text up to the first delimiter | `until` |
//! | `json` `json_object` `json_array` `json_string` `json_number` `json_bool` `json_null` | JSON values | `json` |
//! | `json_string_content` | inside of a JSON string | `json_string_content` |
//! | `json_member("key", e)` | `"key"` `:` `e` with optional whitespace | sequence |
//! | `python` `python_dict` `python_list` `python_str` `python_number` `python_bool` `python_none` | Python literals | `python` |
//! | `name` | reference to rule `name` | `ref` |
//! | `#tag(e)`, `#tag.name(e)`, `# "any name"(e)` | AST node tagged `tag` (see *Tags*; Rust 2024 reserves `#"`, so a string tag takes a space after `#`) | `tag` |
//! | `atomic(e)` | no AST nodes for partial matches of `e` | `atomic` |
//! | `schema(e, "name", "{json schema}")`, `schema_raw(...)` | parse `e`, emit the schema in GBNF | `schema` |
//! | `gbnf(e, "gbnf expr")` | parse `e`, emit the GBNF expression | `gbnf` |
//! | `each_tool(e)` | choice of `e` for each tool of the request | `choice` |
//! | `tool_name`, `tool_schema(e)` | (in `each_tool`) the tool's name; its argument schema | `literal`, `schema` |
//! | `each_arg(e)` | (in `each_tool`) choice of `e` for each argument of the tool | `choice` |
//! | `arg_name`, `arg_schema(e)` | (in `each_arg`) the argument's name; its schema (raw for strings) | `literal`, `schema` |
//! | `if_string_arg(a, b)` | (in `each_arg`) `a` for string arguments, else `b` | - |
//!
//! # Tags
//!
//! The chat mapper (`peg_runtime::chat`) turns tagged nodes into a message. A tag must be one
//! of these, or a recovery tag, or be declared in `custom_tags` (a misspelt chat tag is a
//! compile error, with the closest chat tag suggested).
//!
//! | tag | what it holds | where |
//! |---|---|---|
//! | `#reasoning` | reasoning text (`reasoning_content`) | anywhere outside a call |
//! | `#content` | content text | anywhere outside a call |
//! | `#tool` | one whole call | around `#tool_open`, the name, id, arguments, `#tool_close` |
//! | `#tool_open` | the start of a call (starts one on its own outside `#tool`) | first in a call |
//! | `#tool_close` | the end of a call; may match nothing (a close marker the model left out) | last in a call |
//! | `#tool_name` | the function name | in a call; may sit inside `#tool_id` |
//! | `#tool_id` | the call id, when the output carries one; calls without get `call_N` | in a call; may hold `#tool_name` (Kimi K2's `functions.NAME:0`) |
//! | `#tool_args` | the arguments: one JSON (or Python-literal) object | in a call |
//! | `#tool_args_string` | the arguments as a JSON string holding their JSON text | in a call |
//! | `#tool_arg` | one argument: name and value | in a call |
//! | `#tool_arg_open`, `#tool_arg_close` | an argument's start and end | in `#tool_arg` |
//! | `#tool_arg_name` | an argument's name | in `#tool_arg` |
//! | `#tool_arg_string_value` | a raw value: a JSON string unless the tool's schema types it otherwise | in `#tool_arg` |
//! | `#tool_arg_json_value` | a JSON (or Python-literal) value | in `#tool_arg` |
//! | `#tool_arg_literal_string`, `#tool_arg_literal_token` | pieces of a value in a template's own literal syntax | in `#tool_arg` |
//! | `#tool_arg_element_object`, `#tool_arg_element_array`, `#tool_arg_element_key` | a value written as nested elements | in `#tool_arg` |
//! | `#recovered.KIND` | a deviation the grammar accepts, reported as a recovery of that kind (`recovered.missing_close`, `recovered.reasoning_marker`, ...: `RecoveryKind::tag`) | around what it recovers |
//!
//! Nesting: the text tags (`reasoning`, `content`, `tool_args`, `tool_args_string`,
//! `tool_arg_string_value`, `tool_arg_json_value`, `tool_arg_literal_*`) are read as a whole, so
//! a chat tag inside one (directly or through rules) is a compile error. `#tool_name` and
//! `#tool_id` may nest either way. A custom tag only marks the AST; the mapper looks through it.
//!
//! # From a parse to a message, and streaming
//!
//! `Chat::new(options)` makes the chat parser of one request (`options.tools` are spliced into
//! `each_tool(...)` and the calls are checked against them; `options.prefill` is the part of the
//! prompt that already belongs to the model's message). `Chat::parse(output, mode)` maps a whole
//! output, or a prefix of one, to a `ParsedMessage`; `Chat::stream()` returns a
//! `ChatStream` driven by the generated `Session`: push chunks, get the OpenAI deltas they make
//! certain, `finish` for the last ones and the whole message. The deltas add up to the one-shot
//! message, which equals that of a runtime `ChatParser` over `arena(tools)`.
//!
//! # Lazy grammars and trigger words
//!
//! A sampler with a lazy grammar leaves the output free until a trigger word appears, then
//! constrains everything from the word on. `trigger rule`s say where: each must begin with a
//! literal (a compile error otherwise, and when it can match empty input), and `TRIGGERS` lists
//! those literals. `GBNF_LAZY` (and `gbnf(tools, true)`) is what the root matches from the first
//! trigger rule on, to the end: the calls after it, the whitespace between and after them, the
//! markers that close a section. A root that repeats a one-call trigger rule thus accepts any
//! number of parallel calls.
//!
//! # Diagnostics
//!
//! Errors point at the offending tokens: undefined rule (with the closest rule or builtin
//! suggested), duplicate rule, builtin used as a rule name, missing or duplicate root, left
//! recursion (with the cycle, `a -> b -> a`), lookahead inside a trigger rule (no GBNF for it),
//! a trigger rule that can match empty input or does not begin with a literal, a tag that is
//! not a chat tag nor declared in `custom_tags`, a chat tag inside a text tag, invalid character
//! class, empty `until` delimiter, empty literal, invalid schema JSON, inverted repetition
//! bounds, tool/argument parameters outside `each_tool`/`each_arg`. A rule unreachable from the
//! root is a warning, emitted as the use of a `#[deprecated]` item (stable proc macros cannot
//! emit warnings directly), so `#![deny(deprecated)]` turns it into an error.
//!
//! # Generated items
//!
//! `chat_peg! { pub grammar g { ... } }` expands to `pub mod g` with:
//! - `Tool`: the request's tool description (name and argument schema);
//! - `struct Parser` (`Parser::new(&tools)`, `parse(&self, input, partial)`), the specialized
//!   parser: one function per rule over `usize` positions, `until` through memchr /
//!   Aho-Corasick searchers built once per process, JSON and Python values through the
//!   runtime's resumable scanner, no allocation besides the AST. It returns the runtime's
//!   `ParseOutput` (outcome, span, tagged AST), equal to the arena's;
//! - `fn parse(input, partial)` (no tools) and `struct Session` (push chunks, `update`/`parse`
//!   as partial, `finish`), incremental: each parse reuses the rule results of earlier parses
//!   that did not look at the end of input, and JSON/Python scans cut by the end of input
//!   resume where they stopped (while the input ends inside one such value, an update only
//!   resumes that scan); a text growing at the end (`until`, `rest`) is read again from its
//!   start. `Session` implements `peg_runtime::Resume`, so it drives a `ChatStream`;
//! - `struct Chat`: the chat parser (`new`, `parse`, `stream`, `chat_parser`), see above;
//! - `fn arena(tools: &[Tool]) -> Result<Arena, Error>`: the equivalent runtime arena;
//! - `const GBNF: &str`, `const GBNF_LAZY: Option<&str>` and `const TRIGGERS: &[&str]`,
//!   generated at compile time by the runtime's GBNF generator, and `fn gbnf(tools, lazy)` for
//!   requests with tools.
//!
//! ```
//! peg_macros::chat_peg! {
//!     pub grammar simple {
//!         root = ("<think>" #reasoning(until("</think>")) "</think>")? _ #content(rest);
//!     }
//! }
//! let input = b"<think>Hmm.</think> Hello!";
//! let out = simple::parse(input, false).unwrap();
//! assert_eq!(out, simple::arena(&[]).unwrap().parse(input, false).unwrap());
//! let content = out.ast.find_by_tag("content")[0];
//! assert_eq!(out.ast.text(content, input), "Hello!");
//! assert!(simple::GBNF.starts_with("root ::= "));
//! ```
//!
//! The generated items are documented in the module; their docs carry no example of their own,
//! as an example names the module and the runtime by the paths its users write, which the
//! macro cannot know. `doc_examples(path::to::NAME, runtime = path::to::peg_runtime);` in the
//! grammar gives them, for a grammar published by a library: then every generated item's docs
//! carry an example that runs as a doctest of that library (a parser parsing as the arena, a
//! session as a one-shot parse, a stream adding up to the message, grammars that load), which
//! is how `chat_peg::formats` documents its formats.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{format_ident, quote, quote_spanned};

mod analysis;
mod codegen;
mod doc_examples;
mod grammar;
mod lower;

/// Compiles a grammar into a module; see the crate docs for the syntax.
///
/// ```
/// use peg_runtime::chat::ParseMode;
/// peg_macros::chat_peg! {
///     /// Optional reasoning, then the answer.
///     pub grammar answer {
///         root = reasoning? _ #content(rest);
///         rule reasoning = "<think>" #reasoning(until("</think>")) "</think>";
///     }
///     /// The same, reasoning required.
///     pub grammar thinking extends answer {
///         root = reasoning _ #content(rest);
///     }
/// }
/// let chat = answer::Chat::new(Default::default()).unwrap();
/// let m = chat.parse("<think>Easy.</think> 4", ParseMode::Complete).unwrap().message;
/// assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("Easy.", "4"));
/// assert_eq!(answer::parse(b"4", false).unwrap().result.outcome, peg_runtime::Outcome::Success);
/// assert_eq!(thinking::parse(b"4", false).unwrap().result.outcome, peg_runtime::Outcome::Fail);
/// ```
#[proc_macro]
pub fn chat_peg(input: TokenStream) -> TokenStream {
    let grammars = syn::parse_macro_input!(input as grammar::Grammars);
    grammars.0.iter().map(expand).collect::<proc_macro2::TokenStream>().into()
}

fn expand(g: &grammar::Grammar) -> proc_macro2::TokenStream {
    let a = analysis::analyze(g);
    if !a.errors.is_empty() {
        let errs = a.errors.iter().map(syn::Error::to_compile_error);
        return quote!(#(#errs)*);
    }
    let arena = match lower::build_arena(g, &[]) {
        Ok(a) => a,
        // Analysis mirrors the runtime's validation; anything it missed is still a spanned error.
        Err(e) => {
            let msg = format!("the runtime rejects this grammar: {}", describe(&e));
            return syn::Error::new(g.name.span(), msg).to_compile_error();
        }
    };
    let arena_json = arena.to_json();
    let full = peg_runtime::gbnf::GbnfOptions::default();
    let gbnf = match peg_runtime::gbnf::generate(&arena, &full) {
        Ok(t) => t,
        Err(e) => return syn::Error::new(g.name.span(), format!("cannot generate gbnf for this grammar: {}", describe(&e))).to_compile_error(),
    };
    let has_triggers = g.rules.iter().any(|r| r.trigger);
    let gbnf_lazy = if has_triggers {
        let lazy = peg_runtime::gbnf::GbnfOptions { lazy: true, ..full };
        match peg_runtime::gbnf::generate(&arena, &lazy) {
            Ok(t) => quote!(::std::option::Option::Some(#t)),
            Err(e) => return syn::Error::new(g.name.span(), format!("cannot generate lazy gbnf for this grammar: {}", describe(&e))).to_compile_error(),
        }
    } else {
        quote!(::std::option::Option::None)
    };
    let uses_tools = g.root.iter().map(|(_, e)| e).chain(g.rules.iter().map(|r| &r.expr)).any(uses_tools);
    let triggers = &a.triggers;
    let k = &g.krate;
    let attrs = &g.attrs;
    let vis = &g.vis;
    let name = &g.name;
    let arena_body = lower::arena_fn(g);
    let parser = codegen::parser_items(g);
    let examples = doc_examples::doc_examples(g);
    let (arena_example, gbnf_example, gbnf_lazy_example, triggers_example, gbnf_fn_example, chat_example) =
        (&examples.arena, &examples.gbnf_const, &examples.gbnf_lazy, &examples.triggers, &examples.gbnf_fn, &examples.chat);
    let warnings = a.warnings.iter().map(|w| warning(w.span, &w.name, &w.message));
    quote! {
        #(#attrs)*
        // A private grammar module need not use every generated item.
        #[allow(dead_code, unused_imports)]
        #vis mod #name {
            pub use #k::__macro_support::Tool;

            /// The equivalent runtime arena, with `tools` spliced into `each_tool(...)`.
            #arena_example
            #[allow(unused_variables)]
            pub fn arena(tools: &[Tool]) -> ::std::result::Result<#k::Arena, #k::Error> {
                #arena_body
            }

            /// The arena built at expansion time without tools, as JSON (for tests).
            #[doc(hidden)]
            pub const __ARENA_JSON: &str = #arena_json;

            /// The full GBNF of the grammar for a request without tools (`each_tool(...)`
            /// matches nothing), generated at compile time.
            #gbnf_example
            pub const GBNF: &str = #gbnf;

            /// The lazy GBNF without tools: what the grammar matches from the first trigger rule
            /// on (its trigger word, see [`TRIGGERS`]) to the end, every later call and what
            /// follows them included; `None` when the grammar has no trigger rule.
            #gbnf_lazy_example
            pub const GBNF_LAZY: ::std::option::Option<&str> = #gbnf_lazy;

            /// The trigger words of [`GBNF_LAZY`]: the literals the trigger rules start with
            /// (what a sampler waits for before it applies the lazy grammar). Empty when the
            /// grammar has no trigger rule.
            #triggers_example
            pub const TRIGGERS: &[&str] = &[#(#triggers),*];

            /// The GBNF for a request offering `tools`: the tool and argument rules added to
            /// the grammar. Without tools, or for a grammar without `each_tool(...)`, this is
            /// [`GBNF`] / [`GBNF_LAZY`] without any work at run time.
            #gbnf_fn_example
            pub fn gbnf(tools: &[Tool], lazy: bool) -> ::std::result::Result<::std::string::String, #k::Error> {
                if tools.is_empty() || !#uses_tools {
                    let text = if lazy { GBNF_LAZY } else { ::std::option::Option::Some(GBNF) };
                    if let ::std::option::Option::Some(text) = text {
                        return ::std::result::Result::Ok(::std::string::String::from(text));
                    }
                }
                // Tool rules share helper rules (strings, spaces) with the rest of the grammar,
                // so the grammar is regenerated as a whole from the arena with the tools.
                let arena = arena(tools)?;
                #k::gbnf::generate(&arena, &#k::gbnf::GbnfOptions { lazy, ..::std::default::Default::default() })
            }

            #parser

            /// This grammar as a chat parser: its parses, by the specialized [`Parser`], mapped
            /// to OpenAI-style messages one-shot ([`Chat::parse`]) and as a stream of deltas
            /// ([`Chat::stream`], driven by [`Session`]). Messages equal those of a
            /// `ChatParser` over [`arena`].
            #chat_example
            #[derive(Debug, Clone)]
            pub struct Chat {
                parser: Parser,
                chat: #k::chat::ChatParser,
            }

            impl Chat {
                /// The chat parser of one request: `options.tools` are its tools (spliced into
                /// `each_tool(...)`, and the calls are checked against them), `options.prefill`
                /// the part of the prompt that belongs to the model's message.
                pub fn new(options: #k::chat::ChatParseOptions) -> ::std::result::Result<Chat, #k::Error> {
                    let parser = Parser::new(&options.tools);
                    let arena = ::std::sync::Arc::new(arena(&options.tools)?);
                    ::std::result::Result::Ok(Chat { parser, chat: #k::chat::ChatParser::new(arena, options) })
                }

                /// Parses a whole output, or a prefix of one, into a message.
                pub fn parse(&self, output: &str, mode: #k::chat::ParseMode) -> ::std::result::Result<#k::chat::ParsedMessage, #k::Error> {
                    let parser = &self.parser;
                    self.chat.parse_with(output, mode, |input, partial| parser.parse(input, partial))
                }

                /// A stream: push chunks of output, get the deltas they make certain.
                pub fn stream(&self) -> #k::chat::ChatStream<Session> {
                    self.chat.stream_with(Session::new(self.parser.clone()))
                }

                /// The runtime chat parser over [`arena`] behind this one.
                pub fn chat_parser(&self) -> &#k::chat::ChatParser {
                    &self.chat
                }
            }

            #(#warnings)*
        }
    }
}

/// An error's detail followed by its causes, for compile errors (which show no source chain).
fn describe(e: &peg_runtime::Error) -> String {
    let mut text = e.detail().to_owned();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.downcast_ref::<peg_runtime::Error>().map_or_else(|| c.to_string(), |e| e.detail().to_owned()));
        cause = c.source();
    }
    text
}

/// Whether `e` depends on the request's tools.
fn uses_tools(e: &grammar::Expr) -> bool {
    matches!(e.kind, grammar::ExprKind::EachTool(_)) || e.children().into_iter().any(uses_tools)
}

/// A warning at `span`: the use of a deprecated constant whose note is the message.
fn warning(span: Span, name: &str, message: &str) -> proc_macro2::TokenStream {
    let item = format_ident!("unused_rule_{}", name, span = span);
    quote_spanned! {span=>
        const _: () = {
            #[deprecated(note = #message)]
            #[allow(non_upper_case_globals)]
            const #item: () = ();
            #item
        };
    }
}
