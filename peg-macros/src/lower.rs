//! Grammar -> runtime arena, twice over, in the same node order:
//! - [`build_arena`] builds a `peg_runtime::Arena` inside the compiler (for the static GBNF and to
//!   validate the grammar against the runtime);
//! - [`arena_fn`] generates the Rust code of `fn arena(tools)`, which builds the same arena at run
//!   time with the request's tools spliced in.

use peg_runtime::__macro_support::{Tool, is_string_schema, tool_args};
use peg_runtime::{Arena, Builder, CharClass, Node, NodeId};
use proc_macro2::TokenStream;
use quote::quote;

use crate::grammar::{Expr, ExprKind, Grammar, JsonKind, PythonKind};

/// The current tool and argument while lowering `each_tool` / `each_arg` bodies.
#[derive(Clone, Copy, Default)]
struct Ctx<'t> {
    tool: Option<&'t Tool>,
    arg: Option<(&'t str, &'t serde_json::Value)>,
}

/// Builds the arena of `g` for `tools`. The grammar has passed analysis.
pub fn build_arena(g: &Grammar, tools: &[Tool]) -> Result<Arena, peg_runtime::Error> {
    let b = Builder::new();
    for r in &g.rules {
        let child = lower(&b, &r.expr, tools, Ctx::default());
        let p = b.parser(child);
        if r.trigger {
            b.trigger_rule(&r.name.to_string(), p);
        } else {
            b.rule(&r.name.to_string(), p);
        }
    }
    let root = lower(&b, &g.root[0].1, tools, Ctx::default());
    b.finish(root)
}

/// The class of a `["..."]` expression (validated by analysis).
pub fn char_class(body: &str) -> CharClass {
    CharClass::parse(&format!("[{body}]")).unwrap_or_else(|_| CharClass::from_ranges(Vec::new(), true))
}

fn lower(b: &Builder, e: &Expr, tools: &[Tool], ctx: Ctx<'_>) -> NodeId {
    let node = match &e.kind {
        ExprKind::Eps => Node::Eps,
        ExprKind::Start => Node::Start,
        ExprKind::End => Node::End,
        ExprKind::Any => Node::Any,
        ExprKind::Rest => Node::Rest,
        ExprKind::Space => Node::Space,
        ExprKind::Marker => Node::Marker,
        ExprKind::Literal(s) => Node::Literal { text: s.clone() },
        ExprKind::Chars { class, min, max } => Node::Chars { class: char_class(class), min: *min, max: *max },
        ExprKind::Until(d) => Node::Until { delimiters: d.iter().map(|s| s.value()).collect() },
        ExprKind::Json(k) => Node::Json { kind: *k },
        ExprKind::JsonStringContent => Node::JsonStringContent,
        ExprKind::Python(k) => Node::Python { kind: *k },
        ExprKind::Seq(v) => Node::Sequence { children: v.iter().map(|c| lower(b, c, tools, ctx)).collect() },
        ExprKind::Choice(v) => Node::Choice { children: v.iter().map(|c| lower(b, c, tools, ctx)).collect() },
        ExprKind::Repeat { expr, min, max } => Node::Repeat { child: lower(b, expr, tools, ctx), min: *min, max: *max },
        ExprKind::Peek(c) => Node::Peek { child: lower(b, c, tools, ctx) },
        ExprKind::Negate(c) => Node::Negate { child: lower(b, c, tools, ctx) },
        ExprKind::Ref(name) => Node::Ref { name: name.to_string() },
        ExprKind::Tag(tag, c) => Node::Tag { tag: tag.clone(), child: lower(b, c, tools, ctx) },
        ExprKind::Atomic(c) => Node::Atomic { child: lower(b, c, tools, ctx) },
        ExprKind::Schema { expr, name, schema, raw } => {
            let child = lower(b, expr, tools, ctx);
            let schema = serde_json::from_str(&schema.value()).unwrap_or(serde_json::Value::Null);
            Node::Schema { child, name: name.clone(), schema, raw: *raw }
        }
        ExprKind::Gbnf(c, g) => Node::Gbnf { child: lower(b, c, tools, ctx), gbnf: g.clone() },
        ExprKind::JsonMember(key, c) => {
            let value = lower(b, c, tools, ctx);
            return b.json_member(key, b.parser(value)).id();
        }
        ExprKind::EachTool(c) => Node::Choice { children: tools.iter().map(|t| lower(b, c, tools, Ctx { tool: Some(t), ..ctx })).collect() },
        ExprKind::ToolName => Node::Literal { text: ctx.tool.map(|t| t.name.clone()).unwrap_or_default() },
        ExprKind::ToolSchema(c) => {
            let child = lower(b, c, tools, ctx);
            let tool = ctx.tool.expect("analysis checked the scope");
            Node::Schema { child, name: format!("tool-{}-args", tool.name), schema: tool.parameters.clone(), raw: false }
        }
        ExprKind::EachArg(c) => {
            let tool = ctx.tool.expect("analysis checked the scope");
            Node::Choice { children: tool_args(tool).into_iter().map(|a| lower(b, c, tools, Ctx { arg: Some(a), ..ctx })).collect() }
        }
        ExprKind::ArgName => Node::Literal { text: ctx.arg.map(|a| a.0.to_owned()).unwrap_or_default() },
        ExprKind::ArgSchema(c) => {
            let child = lower(b, c, tools, ctx);
            let tool = ctx.tool.expect("analysis checked the scope");
            let (name, schema) = ctx.arg.expect("analysis checked the scope");
            Node::Schema { child, name: format!("tool-{}-arg-{}", tool.name, name), schema: schema.clone(), raw: is_string_schema(schema) }
        }
        ExprKind::IfStringArg(a, bb) => {
            let (_, schema) = ctx.arg.expect("analysis checked the scope");
            return if is_string_schema(schema) { lower(b, a, tools, ctx) } else { lower(b, bb, tools, ctx) };
        }
    };
    b.add(node).id()
}

/// Generates the body of `fn arena(tools: &[Tool]) -> Result<Arena, Error>`, mirroring
/// [`build_arena`] call for call so both produce the same node order.
pub fn arena_fn(g: &Grammar) -> TokenStream {
    let k = &g.krate;
    let rules = g.rules.iter().map(|r| {
        let name = r.name.to_string();
        let body = lowered(k, &r.expr);
        let method = if r.trigger { quote!(trigger_rule) } else { quote!(rule) };
        quote! {
            let __child = #body;
            b.#method(#name, b.parser(__child));
        }
    });
    let root = lowered(k, &g.root[0].1);
    quote! {
        let b = #k::Builder::new();
        #(#rules)*
        let __root = #root;
        b.finish(__root)
    }
}

pub fn gen_json_kind(k: &TokenStream, kind: JsonKind) -> TokenStream {
    let v = quote::format_ident!("{kind:?}");
    quote!(#k::JsonKind::#v)
}

pub fn gen_python_kind(k: &TokenStream, kind: PythonKind) -> TokenStream {
    let v = quote::format_ident!("{kind:?}");
    quote!(#k::PythonKind::#v)
}

/// Code for one expression: a block evaluating to the `NodeId` it added. In `each_tool` bodies
/// `__tool: &Tool` is in scope, in `each_arg` bodies `__arg: (&str, &Value)`.
fn lowered(k: &TokenStream, e: &Expr) -> TokenStream {
    let node = match &e.kind {
        ExprKind::Eps => quote!(#k::Node::Eps),
        ExprKind::Start => quote!(#k::Node::Start),
        ExprKind::End => quote!(#k::Node::End),
        ExprKind::Any => quote!(#k::Node::Any),
        ExprKind::Rest => quote!(#k::Node::Rest),
        ExprKind::Space => quote!(#k::Node::Space),
        ExprKind::Marker => quote!(#k::Node::Marker),
        ExprKind::Literal(s) => quote!(#k::Node::Literal { text: ::std::string::String::from(#s) }),
        ExprKind::Chars { class, min, max } => {
            let cc = char_class(class);
            let ranges = cc.ranges.iter().map(|(lo, hi)| quote!((#lo, #hi)));
            let neg = cc.negated;
            let max = opt_u32(max);
            quote!(#k::Node::Chars { class: #k::CharClass::from_ranges(::std::vec![#(#ranges),*], #neg), min: #min, max: #max })
        }
        ExprKind::Until(d) => {
            let d = d.iter().map(|s| s.value());
            quote!(#k::Node::Until { delimiters: ::std::vec![#(::std::string::String::from(#d)),*] })
        }
        ExprKind::Json(kind) => {
            let kind = gen_json_kind(k, *kind);
            quote!(#k::Node::Json { kind: #kind })
        }
        ExprKind::JsonStringContent => quote!(#k::Node::JsonStringContent),
        ExprKind::Python(kind) => {
            let kind = gen_python_kind(k, *kind);
            quote!(#k::Node::Python { kind: #kind })
        }
        ExprKind::Seq(v) | ExprKind::Choice(v) => {
            let cs = v.iter().map(|c| lowered(k, c));
            let variant = if matches!(e.kind, ExprKind::Seq(_)) { quote!(Sequence) } else { quote!(Choice) };
            quote!({
                let children = ::std::vec![#(#cs),*];
                #k::Node::#variant { children }
            })
        }
        ExprKind::Repeat { expr, min, max } => {
            let c = lowered(k, expr);
            let max = opt_u32(max);
            quote!(#k::Node::Repeat { child: #c, min: #min, max: #max })
        }
        ExprKind::Peek(c) => {
            let c = lowered(k, c);
            quote!(#k::Node::Peek { child: #c })
        }
        ExprKind::Negate(c) => {
            let c = lowered(k, c);
            quote!(#k::Node::Negate { child: #c })
        }
        ExprKind::Ref(name) => {
            let name = name.to_string();
            quote!(#k::Node::Ref { name: ::std::string::String::from(#name) })
        }
        ExprKind::Tag(tag, c) => {
            let c = lowered(k, c);
            quote!(#k::Node::Tag { tag: ::std::string::String::from(#tag), child: #c })
        }
        ExprKind::Atomic(c) => {
            let c = lowered(k, c);
            quote!(#k::Node::Atomic { child: #c })
        }
        ExprKind::Schema { expr, name, schema, raw } => {
            let c = lowered(k, expr);
            // Validated JSON: re-serialized compactly so parsing it back cannot fail.
            let text = serde_json::from_str::<serde_json::Value>(&schema.value()).map(|v| v.to_string()).unwrap_or_else(|_| "null".into());
            quote!({
                let child = #c;
                let schema = #k::__macro_support::serde_json::from_str(#text).unwrap_or(#k::__macro_support::serde_json::Value::Null);
                #k::Node::Schema { child, name: ::std::string::String::from(#name), schema, raw: #raw }
            })
        }
        ExprKind::Gbnf(c, g) => {
            let c = lowered(k, c);
            quote!(#k::Node::Gbnf { child: #c, gbnf: ::std::string::String::from(#g) })
        }
        ExprKind::JsonMember(key, c) => {
            let c = lowered(k, c);
            return quote!({
                let __value = #c;
                b.json_member(#key, b.parser(__value)).id()
            });
        }
        ExprKind::EachTool(c) => {
            let c = lowered(k, c);
            quote!({
                let mut children = ::std::vec::Vec::with_capacity(tools.len());
                for __tool in tools {
                    children.push(#c);
                }
                #k::Node::Choice { children }
            })
        }
        ExprKind::ToolName => quote!(#k::Node::Literal { text: __tool.name.clone() }),
        ExprKind::ToolSchema(c) => {
            let c = lowered(k, c);
            quote!({
                let child = #c;
                #k::Node::Schema { child, name: ::std::format!("tool-{}-args", __tool.name), schema: __tool.parameters.clone(), raw: false }
            })
        }
        ExprKind::EachArg(c) => {
            let c = lowered(k, c);
            quote!({
                let mut children = ::std::vec::Vec::new();
                for __arg in #k::__macro_support::tool_args(__tool) {
                    children.push(#c);
                }
                #k::Node::Choice { children }
            })
        }
        ExprKind::ArgName => quote!(#k::Node::Literal { text: ::std::string::String::from(__arg.0) }),
        ExprKind::ArgSchema(c) => {
            let c = lowered(k, c);
            quote!({
                let child = #c;
                #k::Node::Schema {
                    child,
                    name: ::std::format!("tool-{}-arg-{}", __tool.name, __arg.0),
                    schema: __arg.1.clone(),
                    raw: #k::__macro_support::is_string_schema(__arg.1),
                }
            })
        }
        ExprKind::IfStringArg(a, bb) => {
            let a = lowered(k, a);
            let bb = lowered(k, bb);
            return quote!(if #k::__macro_support::is_string_schema(__arg.1) { #a } else { #bb });
        }
    };
    quote!(b.add(#node).id())
}

pub fn opt_u32(v: &Option<u32>) -> TokenStream {
    match v {
        Some(n) => quote!(::std::option::Option::Some(#n)),
        None => quote!(::std::option::Option::None),
    }
}
