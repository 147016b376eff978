//! The grammar AST and its parser (tokens -> [`Grammar`]).
//!
//! Every node keeps the span of the tokens it came from, so analysis can point diagnostics at
//! the offending part of the user's grammar.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitInt, LitStr, Path, Token, Visibility, bracketed, parenthesized, token};

/// A whole `chat_peg!` invocation: one or more grammars, later ones possibly extending
/// earlier ones (resolved at parse time, so every later stage sees complete grammars).
pub struct Grammars(pub Vec<Grammar>);

/// One grammar.
pub struct Grammar {
    /// Doc comments and other outer attributes, forwarded to the generated module.
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    /// Path to the runtime crate in generated code (`crate = path;`), default `::peg_runtime`.
    pub krate: TokenStream,
    pub root: Vec<(Span, Expr)>,
    pub rules: Vec<Rule>,
    /// Tags declared with `custom_tags = [...];`: allowed besides the chat tags.
    pub custom_tags: Vec<String>,
    /// `doc_examples(MODULE, runtime = RUNTIME);`: the paths a user reaches the generated
    /// module and the runtime by, as written; with them every generated item's docs carry an
    /// example that runs.
    pub doc_examples: Option<(String, String)>,
}

/// `rule name = expr;` or `trigger rule name = expr;`
#[derive(Clone)]
pub struct Rule {
    pub name: Ident,
    pub trigger: bool,
    pub expr: Expr,
}

/// An expression with the span of its source tokens.
#[derive(Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Sp,
}

/// A source range: the spans of its first and last tokens. `Span::join` is nightly-only, so a
/// diagnostic covering several tokens is built from both ends (see [`Sp::error`]).
#[derive(Clone, Copy)]
pub struct Sp(pub Span, pub Span);

impl From<Span> for Sp {
    fn from(s: Span) -> Sp {
        Sp(s, s)
    }
}

impl Sp {
    /// An error underlining the whole range.
    pub fn error(self, msg: impl std::fmt::Display) -> syn::Error {
        let a = proc_macro2::Ident::new("a", self.0);
        let b = proc_macro2::Ident::new("b", self.1);
        syn::Error::new_spanned(quote::quote!(#a #b), msg)
    }
}

/// Which JSON value / Python literal a `json*` / `python*` builtin accepts: the runtime's own.
pub use peg_runtime::{JsonKind, PythonKind};

#[derive(Clone)]
pub enum ExprKind {
    Eps,
    Start,
    End,
    Any,
    Rest,
    Space,
    Marker,
    Literal(String),
    /// `["a-z"]`: the class body as written (the literal's span is the expression's span).
    Chars {
        class: String,
        min: u32,
        max: Option<u32>,
    },
    Until(Vec<LitStr>),
    Json(JsonKind),
    JsonStringContent,
    Python(PythonKind),
    Seq(Vec<Expr>),
    Choice(Vec<Expr>),
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    Peek(Box<Expr>),
    Negate(Box<Expr>),
    Ref(Ident),
    Tag(String, Box<Expr>),
    Atomic(Box<Expr>),
    Schema {
        expr: Box<Expr>,
        name: String,
        schema: LitStr,
        raw: bool,
    },
    Gbnf(Box<Expr>, String),
    /// `json_member("key", value)`: `"key"` `:` value with optional whitespace between.
    JsonMember(String, Box<Expr>),
    /// `each_tool(e)`: ordered choice of `e` for every tool of the request.
    EachTool(Box<Expr>),
    /// `tool_name`: the current tool's name as a literal.
    ToolName,
    /// `tool_schema(e)`: `e`, with the current tool's parameter schema for grammars.
    ToolSchema(Box<Expr>),
    /// `each_arg(e)`: ordered choice of `e` for every parameter of the current tool.
    EachArg(Box<Expr>),
    /// `arg_name`: the current parameter's name as a literal.
    ArgName,
    /// `arg_schema(e)`: `e`, with the current parameter's schema for grammars (raw strings).
    ArgSchema(Box<Expr>),
    /// `if_string_arg(a, b)`: `a` when the current parameter is a string, else `b`.
    IfStringArg(Box<Expr>, Box<Expr>),
}

impl Expr {
    fn new(kind: ExprKind, span: impl Into<Sp>) -> Expr {
        Expr { kind, span: span.into() }
    }
}

mod kw {
    syn::custom_keyword!(grammar);
    syn::custom_keyword!(extends);
    syn::custom_keyword!(rule);
    syn::custom_keyword!(trigger);
    syn::custom_keyword!(root);
    syn::custom_keyword!(custom_tags);
    syn::custom_keyword!(doc_examples);
    syn::custom_keyword!(runtime);
}

/// Names a user rule may not take, because they are builtins.
pub const BUILTINS: &[&str] = &[
    "eps",
    "start",
    "end",
    "any",
    "rest",
    "space",
    "marker",
    "until",
    "json",
    "json_object",
    "json_array",
    "json_string",
    "json_number",
    "json_bool",
    "json_null",
    "json_string_content",
    "json_member",
    "python",
    "python_dict",
    "python_list",
    "python_str",
    "python_number",
    "python_bool",
    "python_none",
    "atomic",
    "schema",
    "schema_raw",
    "gbnf",
    "each_tool",
    "tool_name",
    "tool_schema",
    "each_arg",
    "arg_name",
    "arg_schema",
    "if_string_arg",
    "root",
    "rule",
    "trigger",
];

impl Parse for Grammars {
    fn parse(input: ParseStream) -> syn::Result<Grammars> {
        let mut out: Vec<Grammar> = Vec::new();
        // `crate = path;` before the grammars: the default of each (the facade's `chat_peg!`
        // passes its own re-export of the runtime this way).
        let default_krate = if input.peek(Token![crate]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            let path: Path = input.parse()?;
            input.parse::<Token![;]>()?;
            quote::quote!(#path)
        } else {
            quote::quote!(::peg_runtime)
        };
        loop {
            let attrs = input.call(Attribute::parse_outer)?;
            let vis: Visibility = input.parse()?;
            input.parse::<kw::grammar>()?;
            let name: Ident = input.parse()?;
            if out.iter().any(|g| g.name == name) {
                return Err(syn::Error::new(name.span(), format!("grammar `{name}` is defined twice in this invocation")));
            }
            let base = if input.peek(kw::extends) {
                input.parse::<kw::extends>()?;
                let base: Ident = input.parse()?;
                match out.iter().find(|g| g.name == base) {
                    Some(g) => Some(g),
                    None => {
                        let msg = format!(
                            "no grammar `{base}` before this one in this `chat_peg!` invocation: a grammar extends one defined earlier in the same invocation"
                        );
                        return Err(syn::Error::new(base.span(), msg));
                    }
                }
            } else {
                None
            };
            let body;
            syn::braced!(body in input);
            let own = parse_body(
                &body,
                Grammar { attrs, vis, name, krate: default_krate.clone(), root: Vec::new(), rules: Vec::new(), custom_tags: Vec::new(), doc_examples: None },
            )?;
            out.push(match base {
                Some(base) => own.extending(base, &default_krate),
                None => own,
            });
            if input.is_empty() {
                return Ok(Grammars(out));
            }
        }
    }
}

impl Grammar {
    /// `self extends base`: base's rules with those `self` defines again replaced in place,
    /// then `self`'s new rules; `self`'s root and crate path when it has them.
    fn extending(self, base: &Grammar, default_krate: &TokenStream) -> Grammar {
        let mut rules: Vec<Rule> = base.rules.clone();
        let mut replaced = vec![false; rules.len()];
        for rule in self.rules {
            match rules.iter().position(|r| r.name == rule.name) {
                Some(i) if i < replaced.len() && !replaced[i] => {
                    replaced[i] = true;
                    rules[i] = rule;
                }
                // New rules, and a rule defined twice in `self` (analysis reports it).
                _ => rules.push(rule),
            }
        }
        let own_krate = self.krate.to_string() != default_krate.to_string();
        let mut custom_tags = base.custom_tags.clone();
        custom_tags.extend(self.custom_tags);
        Grammar {
            attrs: self.attrs,
            vis: self.vis,
            name: self.name,
            krate: if own_krate { self.krate } else { base.krate.clone() },
            root: if self.root.is_empty() { base.root.clone() } else { self.root },
            rules,
            custom_tags,
            // The examples name the module they document: a variant's are its own.
            doc_examples: self.doc_examples,
        }
    }
}

/// The items between a grammar's braces.
fn parse_body(body: ParseStream, mut grammar: Grammar) -> syn::Result<Grammar> {
    while !body.is_empty() {
        // Doc comments on rules are accepted and ignored.
        let _ = body.call(Attribute::parse_outer)?;
        if body.peek(Token![crate]) {
            body.parse::<Token![crate]>()?;
            body.parse::<Token![=]>()?;
            let path: Path = body.parse()?;
            body.parse::<Token![;]>()?;
            grammar.krate = quote::quote!(#path);
        } else if body.peek(kw::doc_examples) {
            body.parse::<kw::doc_examples>()?;
            let args;
            parenthesized!(args in body);
            let module: Path = args.parse()?;
            if !args.peek(Token![,]) || !args.peek2(kw::runtime) {
                return Err(args.error("expected `, runtime = path::to::peg_runtime`: the examples name the runtime by the path the grammar's users write"));
            }
            args.parse::<Token![,]>()?;
            args.parse::<kw::runtime>()?;
            args.parse::<Token![=]>()?;
            let runtime: Path = args.parse()?;
            let _ = args.parse::<Option<Token![,]>>()?;
            if !args.is_empty() {
                return Err(args.error("expected `doc_examples(path::to::this_module, runtime = path::to::peg_runtime);`"));
            }
            body.parse::<Token![;]>()?;
            let text = |p: &Path| quote::quote!(#p).to_string().replace(' ', "");
            grammar.doc_examples = Some((text(&module), text(&runtime)));
        } else if body.peek(kw::custom_tags) {
            body.parse::<kw::custom_tags>()?;
            body.parse::<Token![=]>()?;
            let list;
            bracketed!(list in body);
            while !list.is_empty() {
                let tag = if list.peek(LitStr) { list.parse::<LitStr>()?.value() } else { list.call(Ident::parse_any)?.unraw().to_string() };
                grammar.custom_tags.push(tag);
                if !list.is_empty() {
                    list.parse::<Token![,]>()?;
                }
            }
            body.parse::<Token![;]>()?;
        } else if body.peek(kw::root) {
            let kw: kw::root = body.parse()?;
            body.parse::<Token![=]>()?;
            let expr = parse_choice(body)?;
            body.parse::<Token![;]>()?;
            grammar.root.push((kw.span, expr));
        } else if body.peek(kw::rule) || body.peek(kw::trigger) {
            let trigger = body.parse::<Option<kw::trigger>>()?.is_some();
            body.parse::<kw::rule>()?;
            let name: Ident = body.call(Ident::parse_any)?.unraw();
            if body.peek(token::Paren) {
                let args;
                parenthesized!(args in body);
                let _: TokenStream = args.parse()?;
                return Err(syn::Error::new(name.span(), "rules take no arguments: write `rule name = ...;`"));
            }
            body.parse::<Token![=]>()?;
            let expr = parse_choice(body)?;
            body.parse::<Token![;]>()?;
            grammar.rules.push(Rule { name, trigger, expr });
        } else {
            return Err(body.error(
                "expected `root = ...;`, `rule name = ...;`, `trigger rule name = ...;`, `custom_tags = [...];`, `doc_examples(...);` or `crate = path;`",
            ));
        }
    }
    Ok(grammar)
}

fn join(a: impl Into<Sp>, b: impl Into<Sp>) -> Sp {
    Sp(a.into().0, b.into().1)
}

fn at_expr_end(input: ParseStream) -> bool {
    input.is_empty() || input.peek(Token![;]) || input.peek(Token![/]) || input.peek(Token![,])
}

/// `a / b / c`
fn parse_choice(input: ParseStream) -> syn::Result<Expr> {
    let first = parse_seq(input)?;
    if !input.peek(Token![/]) {
        return Ok(first);
    }
    let mut span = first.span;
    let mut alts = vec![first];
    while input.peek(Token![/]) {
        input.parse::<Token![/]>()?;
        let e = parse_seq(input)?;
        span = join(span, e.span);
        alts.push(e);
    }
    Ok(Expr::new(ExprKind::Choice(alts), span))
}

/// `a b c`
fn parse_seq(input: ParseStream) -> syn::Result<Expr> {
    if at_expr_end(input) {
        return Err(input.error("expected an expression"));
    }
    let mut items = Vec::new();
    while !at_expr_end(input) {
        items.push(parse_prefixed(input)?);
    }
    if items.len() == 1 {
        return Ok(items.pop().expect("one item"));
    }
    let span = join(items[0].span, items[items.len() - 1].span);
    Ok(Expr::new(ExprKind::Seq(items), span))
}

/// `&e`, `!e`, `e`
fn parse_prefixed(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(Token![&]) {
        let t: Token![&] = input.parse()?;
        let e = parse_prefixed(input)?;
        let span = join(t.span, e.span);
        return Ok(Expr::new(ExprKind::Peek(Box::new(e)), span));
    }
    if input.peek(Token![!]) {
        let t: Token![!] = input.parse()?;
        let e = parse_prefixed(input)?;
        let span = join(t.span, e.span);
        return Ok(Expr::new(ExprKind::Negate(Box::new(e)), span));
    }
    parse_postfixed(input)
}

fn parse_u32(input: ParseStream) -> syn::Result<u32> {
    let lit: LitInt = input.parse()?;
    lit.base10_parse::<u32>()
}

/// `e?`, `e*`, `e+`, `e*<n>`, `e*<n,>`, `e*<,m>`, `e*<n,m>`
fn parse_postfixed(input: ParseStream) -> syn::Result<Expr> {
    let mut e = parse_atom(input)?;
    loop {
        let (min, max, end_span) = if input.peek(Token![?]) {
            let t: Token![?] = input.parse()?;
            (0, Some(1), t.span)
        } else if input.peek(Token![+]) {
            let t: Token![+] = input.parse()?;
            (1, None, t.span)
        } else if input.peek(Token![*]) {
            let t: Token![*] = input.parse()?;
            if input.peek(Token![<]) {
                let open: Token![<] = input.parse()?;
                let min = if input.peek(LitInt) { Some(parse_u32(input)?) } else { None };
                let (min, max) = if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                    let max = if input.peek(LitInt) { Some(parse_u32(input)?) } else { None };
                    (min.unwrap_or(0), max)
                } else {
                    match min {
                        Some(n) => (n, Some(n)),
                        None => return Err(input.error("expected a repetition count: `*<n>`, `*<n,>`, `*<,m>` or `*<n,m>`")),
                    }
                };
                let close: Token![>] = input.parse()?;
                if let Some(max) = max
                    && max < min
                {
                    return Err(join(open.span, close.span).error(format!("repetition bounds are inverted: minimum {min} is greater than maximum {max}")));
                }
                (min, max, close.span)
            } else {
                (0, None, t.span)
            }
        } else {
            return Ok(e);
        };
        let span = join(e.span, end_span);
        // A repeated character class stays one `chars` node with the combined bounds.
        e = match e.kind {
            ExprKind::Chars { class, min: 1, max: Some(1) } => Expr::new(ExprKind::Chars { class, min, max }, span),
            kind => Expr::new(ExprKind::Repeat { expr: Box::new(Expr { kind, span: e.span }), min, max }, span),
        };
    }
}

fn parse_atom(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(LitStr) {
        let s: LitStr = input.parse()?;
        return Ok(Expr::new(ExprKind::Literal(s.value()), s.span()));
    }
    if input.peek(syn::LitChar) {
        let c: syn::LitChar = input.parse()?;
        return Ok(Expr::new(ExprKind::Literal(c.value().to_string()), c.span()));
    }
    if input.peek(token::Paren) {
        let inner;
        let p = parenthesized!(inner in input);
        let mut e = parse_choice(&inner)?;
        if !inner.is_empty() {
            return Err(inner.error("expected `)`"));
        }
        e.span = Sp(p.span.open(), p.span.close());
        return Ok(e);
    }
    if input.peek(token::Bracket) {
        let inner;
        let b = bracketed!(inner in input);
        if !inner.peek(LitStr) {
            return Err(Sp(b.span.open(), b.span.close()).error("a character class is written as a string in brackets, e.g. `[\"a-z_\"]`"));
        }
        let s: LitStr = inner.parse()?;
        if !inner.is_empty() {
            return Err(inner.error("expected `]`"));
        }
        return Ok(Expr::new(ExprKind::Chars { class: s.value(), min: 1, max: Some(1) }, s.span()));
    }
    if input.peek(Token![_]) {
        let t: Token![_] = input.parse()?;
        return Ok(Expr::new(ExprKind::Space, t.span));
    }
    if input.peek(Token![#]) {
        let hash: Token![#] = input.parse()?;
        // `#tag`, `#recovered.missing_close` (dotted words: Rust 2024 reserves `#"..."`, so a
        // dotted tag needs no string) or `# "any name"`.
        let tag = if input.peek(LitStr) {
            input.parse::<LitStr>()?.value()
        } else {
            let mut tag = input.call(Ident::parse_any)?.unraw().to_string();
            while input.peek(Token![.]) && input.peek2(Ident::peek_any) {
                input.parse::<Token![.]>()?;
                tag.push('.');
                tag.push_str(&input.call(Ident::parse_any)?.unraw().to_string());
            }
            tag
        };
        if !input.peek(token::Paren) {
            return Err(input.error(format!("expected `(` after the tag: `#{tag}(expr)`")));
        }
        let inner;
        let p = parenthesized!(inner in input);
        let e = parse_choice(&inner)?;
        if !inner.is_empty() {
            return Err(inner.error("expected `)`"));
        }
        return Ok(Expr::new(ExprKind::Tag(tag, Box::new(e)), join(hash.span, p.span.close())));
    }
    if input.peek(Ident::peek_any) {
        let ident: Ident = input.call(Ident::parse_any)?.unraw();
        return parse_ident_atom(ident, input);
    }
    Err(input.error("expected an expression: a string, `[\"class\"]`, `(...)`, `#tag(...)`, `_`, a rule or a builtin"))
}

/// Parsed call arguments: parser expressions and string literals, by position.
enum Arg {
    Expr(Expr),
    Str(LitStr),
}

fn parse_args(input: ParseStream) -> syn::Result<(Vec<Arg>, Sp)> {
    let inner;
    let p = parenthesized!(inner in input);
    let mut args = Vec::new();
    while !inner.is_empty() {
        // A lone string literal followed by `,` or `)` is a string argument; parsers that need a
        // parser there accept it as a literal (see `expect_expr`).
        if inner.peek(LitStr)
            && (inner.peek2(Token![,]) || {
                let f = inner.fork();
                f.parse::<LitStr>().is_ok() && f.is_empty()
            })
        {
            args.push(Arg::Str(inner.parse()?));
        } else {
            args.push(Arg::Expr(parse_choice(&inner)?));
        }
        if inner.is_empty() {
            break;
        }
        inner.parse::<Token![,]>()?;
    }
    Ok((args, Sp(p.span.open(), p.span.close())))
}

fn expect_expr(arg: Arg) -> Expr {
    match arg {
        Arg::Expr(e) => e,
        Arg::Str(s) => Expr::new(ExprKind::Literal(s.value()), s.span()),
    }
}

fn expect_str(arg: Arg, what: &str) -> syn::Result<LitStr> {
    match arg {
        Arg::Str(s) => Ok(s),
        Arg::Expr(e) => Err(e.span.error(format!("expected a string literal: {what}"))),
    }
}

fn parse_ident_atom(ident: Ident, input: ParseStream) -> syn::Result<Expr> {
    let name = ident.to_string();
    let span = ident.span();
    // No-argument builtins are bare words: `json (a)` is `json` followed by a group.
    let simple = |kind: ExprKind| -> syn::Result<Expr> { Ok(Expr::new(kind, span)) };
    if let Some(k) = JsonKind::ALL.into_iter().find(|k| k.dsl_name() == name) {
        return simple(ExprKind::Json(k));
    }
    if let Some(k) = PythonKind::ALL.into_iter().find(|k| k.dsl_name() == name) {
        return simple(ExprKind::Python(k));
    }
    let kind = match name.as_str() {
        "eps" => return simple(ExprKind::Eps),
        "start" => return simple(ExprKind::Start),
        "end" => return simple(ExprKind::End),
        "any" => return simple(ExprKind::Any),
        "rest" => return simple(ExprKind::Rest),
        "space" => return simple(ExprKind::Space),
        "marker" => return simple(ExprKind::Marker),
        "json_string_content" => return simple(ExprKind::JsonStringContent),
        "tool_name" => return simple(ExprKind::ToolName),
        "arg_name" => return simple(ExprKind::ArgName),
        "until" | "atomic" | "schema" | "schema_raw" | "gbnf" | "json_member" | "each_tool" | "tool_schema" | "each_arg" | "arg_schema" | "if_string_arg" => {
            name.as_str()
        }
        // A rule reference never takes arguments: `name (a b)` is `name` followed by a group.
        _ => return Ok(Expr::new(ExprKind::Ref(ident), span)),
    };
    if !input.peek(token::Paren) {
        return Err(syn::Error::new(span, format!("`{kind}` needs arguments in parentheses")));
    }
    let (args, pspan) = parse_args(input)?;
    let full = join(span, pspan);
    let arity = |n: usize, usage: &str| -> syn::Result<()> {
        if args.len() == n { Ok(()) } else { Err(full.error(format!("`{kind}` takes {n} argument{}: `{usage}`", if n == 1 { "" } else { "s" }))) }
    };
    let mut it;
    let kind = match kind {
        "until" => {
            if args.is_empty() {
                return Err(full.error("`until` needs at least one delimiter: `until(\"</end>\")`"));
            }
            let mut delims = Vec::new();
            for a in args {
                delims.push(expect_str(a, "`until` takes delimiter strings")?);
            }
            ExprKind::Until(delims)
        }
        "atomic" | "each_tool" | "tool_schema" | "each_arg" | "arg_schema" => {
            arity(1, &format!("{kind}(expr)"))?;
            let e = Box::new(expect_expr(args.into_iter().next().expect("arity checked")));
            match kind {
                "atomic" => ExprKind::Atomic(e),
                "each_tool" => ExprKind::EachTool(e),
                "tool_schema" => ExprKind::ToolSchema(e),
                "each_arg" => ExprKind::EachArg(e),
                _ => ExprKind::ArgSchema(e),
            }
        }
        "if_string_arg" => {
            arity(2, "if_string_arg(when_string, otherwise)")?;
            it = args.into_iter();
            let a = expect_expr(it.next().expect("arity"));
            let b = expect_expr(it.next().expect("arity"));
            ExprKind::IfStringArg(Box::new(a), Box::new(b))
        }
        "schema" | "schema_raw" => {
            arity(3, &format!("{kind}(expr, \"name\", r#\"{{...json schema...}}\"#)"))?;
            it = args.into_iter();
            let e = expect_expr(it.next().expect("arity"));
            let name = expect_str(it.next().expect("arity"), "the schema's name")?.value();
            let schema = expect_str(it.next().expect("arity"), "the JSON schema text")?;
            ExprKind::Schema { expr: Box::new(e), name, schema, raw: kind == "schema_raw" }
        }
        "gbnf" => {
            arity(2, "gbnf(expr, \"gbnf expression\")")?;
            it = args.into_iter();
            let e = expect_expr(it.next().expect("arity"));
            let g = expect_str(it.next().expect("arity"), "the GBNF expression")?.value();
            ExprKind::Gbnf(Box::new(e), g)
        }
        "json_member" => {
            arity(2, "json_member(\"key\", value)")?;
            it = args.into_iter();
            let key = expect_str(it.next().expect("arity"), "the member's key")?.value();
            let e = expect_expr(it.next().expect("arity"));
            ExprKind::JsonMember(key, Box::new(e))
        }
        _ => unreachable!("listed above"),
    };
    Ok(Expr::new(kind, full))
}

impl Expr {
    /// Direct sub-expressions.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Seq(v) | ExprKind::Choice(v) => v.iter().collect(),
            ExprKind::Repeat { expr, .. }
            | ExprKind::Peek(expr)
            | ExprKind::Negate(expr)
            | ExprKind::Tag(_, expr)
            | ExprKind::Atomic(expr)
            | ExprKind::Schema { expr, .. }
            | ExprKind::Gbnf(expr, _)
            | ExprKind::JsonMember(_, expr)
            | ExprKind::EachTool(expr)
            | ExprKind::ToolSchema(expr)
            | ExprKind::EachArg(expr)
            | ExprKind::ArgSchema(expr) => vec![expr],
            ExprKind::IfStringArg(a, b) => vec![a, b],
            _ => Vec::new(),
        }
    }
}
