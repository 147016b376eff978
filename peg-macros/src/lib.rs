//! `chat_peg!`: grammars written in Rust source, checked at compile time and compiled to a
//! specialized parser, the equivalent runtime arena and GBNF.
//!
//! The pipeline follows rust-peg: tokens -> grammar AST (`grammar`) -> static checks
//! (`analysis`) -> code generation (`lower` for the arena, `codegen` for the parser).
//!
//! # Grammar reference
//!
//! ```text
//! chat_peg! {
//!     /// Docs for the generated module.
//!     pub grammar NAME {
//!         crate = ::path::to::peg_runtime;       // optional, default `::peg_runtime`
//!         root = EXPR;                           // exactly one
//!         rule NAME = EXPR;                      // a named rule (an AST node named NAME)
//!         trigger rule NAME = EXPR;              // entry point of lazy grammars
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
//! rules and crate path; a rule defined again replaces the inherited one in place, a new rule is
//! added, and a `root` given replaces the inherited root. The result is checked as a whole.
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
//! | `_`, `space` | optional whitespace | `space` |
//! | `eps` `start` `end` `any` `rest` `marker` | basic matchers | same names |
//! | `until("a")`, `until("a", "b")` | text up to the first delimiter | `until` |
//! | `json` `json_object` `json_array` `json_string` `json_number` `json_bool` `json_null` | JSON values | `json` |
//! | `json_string_content` | inside of a JSON string | `json_string_content` |
//! | `json_member("key", e)` | `"key"` `:` `e` with optional whitespace | sequence |
//! | `python` `python_dict` `python_list` `python_str` `python_number` `python_bool` `python_none` | Python literals | `python` |
//! | `name` | reference to rule `name` | `ref` |
//! | `#tag(e)` | AST node tagged `tag` (`#reasoning`, `#content`, `#tool_name`, ...) | `tag` |
//! | `atomic(e)` | no AST nodes for partial matches of `e` | `atomic` |
//! | `schema(e, "name", "{json schema}")`, `schema_raw(...)` | parse `e`, emit the schema in GBNF | `schema` |
//! | `gbnf(e, "gbnf expr")` | parse `e`, emit the GBNF expression | `gbnf` |
//! | `each_tool(e)` | choice of `e` for each tool of the request | `choice` |
//! | `tool_name`, `tool_schema(e)` | (in `each_tool`) the tool's name; its argument schema | `literal`, `schema` |
//! | `each_arg(e)` | (in `each_tool`) choice of `e` for each argument of the tool | `choice` |
//! | `arg_name`, `arg_schema(e)` | (in `each_arg`) the argument's name; its schema (raw for strings) | `literal`, `schema` |
//! | `if_string_arg(a, b)` | (in `each_arg`) `a` for string arguments, else `b` | - |
//!
//! # Diagnostics
//!
//! Errors point at the offending tokens: undefined rule, duplicate rule, builtin used as a rule
//! name, missing or duplicate root, left recursion (with the cycle, `a -> b -> a`), lookahead
//! inside a trigger rule (no GBNF for it), invalid character class, empty `until` delimiter,
//! empty literal, invalid schema JSON, inverted repetition bounds, tool/argument parameters
//! outside `each_tool`/`each_arg`. A rule unreachable from the root is a warning, emitted as the
//! use of a `#[deprecated]` item (stable proc macros cannot emit warnings directly), so
//! `#![deny(deprecated)]` turns it into an error.
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
//! - `fn parse(input, partial)` (no tools) and `struct Session` (push chunks, parse as partial,
//!   finish), incremental: each parse reuses the rule results of earlier parses that did not
//!   look at the end of input, and resumes JSON/Python scans cut by it;
//! - `fn arena(tools: &[Tool]) -> Result<Arena, Error>`: the equivalent runtime arena;
//! - `const GBNF: &str` and `const GBNF_LAZY: Option<&str>`, generated at compile time by the
//!   runtime's GBNF generator, and `fn gbnf(tools, lazy)` for requests with tools.
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

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{format_ident, quote, quote_spanned};

mod analysis;
mod codegen;
mod grammar;
mod lower;

/// Compiles a grammar into a module; see the crate docs for the syntax.
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
    let k = &g.krate;
    let attrs = &g.attrs;
    let vis = &g.vis;
    let name = &g.name;
    let arena_body = lower::arena_fn(g);
    let parser = codegen::parser_items(g);
    let warnings = a.warnings.iter().map(|w| warning(w.span, &w.name, &w.message));
    quote! {
        #(#attrs)*
        // A private grammar module need not use every generated item.
        #[allow(dead_code, unused_imports)]
        #vis mod #name {
            pub use #k::__macro_support::Tool;

            /// The equivalent runtime arena, with `tools` spliced into `each_tool(...)`.
            #[allow(unused_variables)]
            pub fn arena(tools: &[Tool]) -> ::std::result::Result<#k::Arena, #k::Error> {
                #arena_body
            }

            /// The arena built at expansion time without tools, as JSON (for tests).
            #[doc(hidden)]
            pub const __ARENA_JSON: &str = #arena_json;

            /// The full GBNF of the grammar for a request without tools (`each_tool(...)`
            /// matches nothing), generated at compile time.
            pub const GBNF: &str = #gbnf;

            /// The lazy GBNF (trigger rules only, `root` their alternation) without tools;
            /// `None` when the grammar has no trigger rule.
            pub const GBNF_LAZY: ::std::option::Option<&str> = #gbnf_lazy;

            /// The GBNF for a request offering `tools`: the tool and argument rules added to
            /// the grammar. Without tools, or for a grammar without `each_tool(...)`, this is
            /// [`GBNF`] / [`GBNF_LAZY`] without any work at run time.
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
