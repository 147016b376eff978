//! The specialized parser: one method per rule, expressions inlined as straight-line Rust over
//! a `usize` position. Mirrors the runtime engine (`peg_runtime::parse`) node for node, so
//! the generated parser and the arena give the same outcome, end and AST.
//!
//! Invariant of every generated expression: on `Fail` it leaves the AST buffer as it found it.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::grammar::{Expr, ExprKind, Grammar};
use crate::lower::{char_class, gen_json_kind, gen_python_kind, opt_u32};

/// Maximum nesting of rule calls in generated parsers.
pub const MAX_DEPTH: usize = 500;

struct Gen<'g> {
    k: &'g TokenStream,
    counter: usize,
}

/// The name of the method parsing rule `name`.
fn rule_fn(name: &str) -> Ident {
    format_ident!("r_{}", name)
}

impl Gen<'_> {
    fn fresh(&mut self, base: &str) -> Ident {
        self.counter += 1;
        format_ident!("{}{}", base, self.counter)
    }

    fn label(&mut self) -> syn::Lifetime {
        self.counter += 1;
        syn::Lifetime::new(&format!("'l{}", self.counter), Span::call_site())
    }

    /// `Some(Arc<str>)` of a constant label, allocated once per process.
    fn arc_label(&self, text: &str) -> TokenStream {
        quote!({
            static L: ::std::sync::OnceLock<::std::sync::Arc<str>> = ::std::sync::OnceLock::new();
            ::std::option::Option::Some(L.get_or_init(|| ::std::sync::Arc::from(#text)).clone())
        })
    }

    /// Code evaluating `e` at position `pos` (a `usize` local) to a `Res`.
    fn expr(&mut self, e: &Expr, pos: &Ident) -> TokenStream {
        let k = self.k;
        let s = quote!(#k::__macro_support);
        let outcome = quote!(#k::Outcome);
        match &e.kind {
            ExprKind::Eps => quote!(#s::Res::ok(#pos)),
            ExprKind::Start => quote!(if #pos == 0 { #s::Res::ok(#pos) } else { #s::Res::fail(#pos) }),
            // Matching at the end of input depends on the end: not memoizable across parses.
            ExprKind::End => quote!(if #pos >= input.len() {
                self.touches += 1;
                #s::Res::ok(#pos)
            } else {
                #s::Res::fail(#pos)
            }),
            ExprKind::Any => quote!(#s::any(input, partial, #pos)),
            ExprKind::Rest => quote!(#s::rest(input, partial, #pos)),
            ExprKind::Space => quote!(#s::space(input, partial, #pos)),
            ExprKind::Marker => quote!(#s::marker(input, partial, #pos)),
            ExprKind::Literal(text) => {
                let bytes = syn::LitByteStr::new(text.as_bytes(), Span::call_site());
                quote!(#s::literal(input, partial, #pos, #bytes))
            }
            ExprKind::Chars { class, min, max } => {
                let cc = char_class(class);
                let pats: Vec<TokenStream> = cc.ranges.iter().map(|&(lo, hi)| if lo == hi { quote!(#lo) } else { quote!(#lo..=#hi) }).collect();
                let test = if pats.is_empty() { quote!(false) } else { quote!(matches!(c, #(#pats)|*)) };
                let test = if cc.negated { quote!(!(#test)) } else { test };
                let max = opt_u32(max);
                quote!(#s::chars(input, partial, #pos, #min, #max, |c: char| #test))
            }
            ExprKind::Until(delims) => {
                let d: Vec<String> = delims.iter().map(|s| s.value()).collect();
                quote!({
                    static D: ::std::sync::OnceLock<#s::Delims> = ::std::sync::OnceLock::new();
                    let search = D.get_or_init(|| #s::Delims::new(&[#(#d),*]));
                    #s::until(input, partial, #pos, search, &[#(#d),*])
                })
            }
            ExprKind::Json(kind) => {
                let kind = gen_json_kind(k, *kind);
                let target = quote!(#k::json::Target::from(#kind));
                self.scan(quote!(#s::json(input, partial, #pos, #kind)), quote!(#k::json::Dialect::Json), target, pos)
            }
            ExprKind::JsonStringContent => {
                self.scan(quote!(#s::json_string_content(input, partial, #pos)), quote!(#k::json::Dialect::Json), quote!(#k::json::Target::StringContent), pos)
            }
            ExprKind::Python(kind) => {
                let kind = gen_python_kind(k, *kind);
                let target = quote!(#k::json::Target::from(#kind));
                self.scan(quote!(#s::python(input, partial, #pos, #kind)), quote!(#k::json::Dialect::Python), target, pos)
            }
            ExprKind::Seq(items) => self.seq(items.iter().collect(), pos),
            ExprKind::JsonMember(key, value) => {
                // Same shape as `Builder::json_member`: key, space, colon, space, value.
                let quoted = serde_json::to_string(key).unwrap_or_default();
                let span = e.span;
                let lit = |t: &str| Expr { kind: ExprKind::Literal(t.to_owned()), span };
                let sp = Expr { kind: ExprKind::Space, span };
                let parts = [lit(&quoted), sp.clone(), lit(":"), sp];
                let mut items: Vec<&Expr> = parts.iter().collect();
                items.push(value);
                self.seq(items, pos)
            }
            ExprKind::Choice(alts) => {
                let l = self.label();
                let r = self.fresh("r");
                let tries = alts.iter().map(|a| {
                    let code = self.expr(a, pos);
                    quote! {
                        let #r = #code;
                        if #r.outcome != #outcome::Fail {
                            break #l #r;
                        }
                    }
                });
                let tries: Vec<TokenStream> = tries.collect();
                quote!(#l: {
                    #(#tries)*
                    #s::Res::fail(#pos)
                })
            }
            ExprKind::Repeat { expr, min, max } => {
                let p = self.fresh("p");
                let r = self.fresh("r");
                let count = self.fresh("count");
                let inv = self.fresh("inv");
                let mark = self.fresh("mark");
                let nmark = self.fresh("nmark");
                let body = self.expr(expr, &p);
                let max_check = match max {
                    Some(m) => quote!(if #count >= #m { break #outcome::Success; }),
                    None => quote!(),
                };
                quote!({
                    let #mark = self.buf.out.len();
                    let #nmark = self.buf.nodes.len();
                    let mut #count: u32 = 0;
                    let mut #p: usize = #pos;
                    let mut #inv = false;
                    let outcome = loop {
                        #max_check
                        let #r = #body;
                        match #r.outcome {
                            #outcome::Success => {
                                #count += 1;
                                #inv |= #r.invalid;
                                if #r.end == #p {
                                    break #outcome::Success;
                                }
                                #p = #r.end;
                            }
                            #outcome::NeedMoreInput => {
                                #inv |= #r.invalid;
                                #p = #r.end;
                                break #outcome::NeedMoreInput;
                            }
                            #outcome::Fail => break if #count >= #min { #outcome::Success } else { #outcome::Fail },
                        }
                    };
                    if outcome == #outcome::Fail {
                        self.buf.reset(#mark, #nmark);
                    }
                    #s::Res::new(outcome, #p, #inv)
                })
            }
            ExprKind::Peek(c) | ExprKind::Negate(c) => {
                let negate = matches!(e.kind, ExprKind::Negate(_));
                let mark = self.fresh("mark");
                let nmark = self.fresh("nmark");
                let r = self.fresh("r");
                let body = self.expr(c, pos);
                let (on_success, on_fail) = if negate { (quote!(Fail), quote!(Success)) } else { (quote!(Success), quote!(Fail)) };
                quote!({
                    let #mark = self.buf.out.len();
                    let #nmark = self.buf.nodes.len();
                    let #r = #body;
                    self.buf.reset(#mark, #nmark);
                    let outcome = match #r.outcome {
                        #outcome::NeedMoreInput => #outcome::NeedMoreInput,
                        #outcome::Success => #outcome::#on_success,
                        #outcome::Fail => #outcome::#on_fail,
                    };
                    #s::Res::new(outcome, #pos, false)
                })
            }
            ExprKind::Ref(name) => {
                let f = rule_fn(&name.to_string());
                quote!(self.#f(#pos)?)
            }
            ExprKind::Tag(tag, c) => {
                let mark = self.fresh("mark");
                let r = self.fresh("r");
                let body = self.expr(c, pos);
                let label = self.arc_label(tag);
                quote!({
                    let #mark = self.buf.out.len();
                    let #r = #body;
                    if #r.outcome != #outcome::Fail {
                        self.buf.close(#mark, #label, ::std::option::Option::None, #pos, #r);
                    }
                    #r
                })
            }
            ExprKind::Atomic(c) => {
                let mark = self.fresh("mark");
                let r = self.fresh("r");
                let body = self.expr(c, pos);
                quote!({
                    let #mark = self.buf.out.len();
                    let #r = #body;
                    if #r.outcome == #outcome::NeedMoreInput {
                        self.buf.out.truncate(#mark);
                    }
                    #r
                })
            }
            ExprKind::Schema { expr, .. } | ExprKind::Gbnf(expr, _) | ExprKind::ToolSchema(expr) | ExprKind::ArgSchema(expr) => self.expr(expr, pos),
            ExprKind::EachTool(c) => {
                let l = self.label();
                let r = self.fresh("r");
                let body = self.expr(c, pos);
                quote!(#l: {
                    for __tool in tools.tools.iter() {
                        let #r = #body;
                        if #r.outcome != #outcome::Fail {
                            break #l #r;
                        }
                    }
                    #s::Res::fail(#pos)
                })
            }
            ExprKind::EachArg(c) => {
                let l = self.label();
                let r = self.fresh("r");
                let body = self.expr(c, pos);
                quote!(#l: {
                    for __arg in __tool.1.iter() {
                        let #r = #body;
                        if #r.outcome != #outcome::Fail {
                            break #l #r;
                        }
                    }
                    #s::Res::fail(#pos)
                })
            }
            ExprKind::ToolName => quote!(#s::literal(input, partial, #pos, __tool.0.as_bytes())),
            ExprKind::ArgName => quote!(#s::literal(input, partial, #pos, __arg.0.as_bytes())),
            ExprKind::IfStringArg(a, b) => {
                let a = self.expr(a, pos);
                let b = self.expr(b, pos);
                quote!(if __arg.1 { #a } else { #b })
            }
        }
    }

    fn seq(&mut self, items: Vec<&Expr>, pos: &Ident) -> TokenStream {
        let k = self.k;
        let s = quote!(#k::__macro_support);
        let outcome = quote!(#k::Outcome);
        let l = self.label();
        let p = self.fresh("p");
        let inv = self.fresh("inv");
        let mark = self.fresh("mark");
        let nmark = self.fresh("nmark");
        let r = self.fresh("r");
        let steps: Vec<TokenStream> = items
            .into_iter()
            .map(|c| {
                let code = self.expr(c, &p);
                quote! {
                    let #r = #code;
                    #inv |= #r.invalid;
                    if #r.outcome != #outcome::Success {
                        if #r.outcome == #outcome::Fail {
                            self.buf.reset(#mark, #nmark);
                        }
                        break #l #s::Res::new(#r.outcome, #r.end, #inv);
                    }
                    #p = #r.end;
                }
            })
            .collect();
        quote!(#l: {
            let #mark = self.buf.out.len();
            let #nmark = self.buf.nodes.len();
            let mut #p: usize = #pos;
            let mut #inv = false;
            #(#steps)*
            #s::Res::new(#outcome::Success, #p, #inv)
        })
    }
}

impl Gen<'_> {
    /// A JSON/Python scan: one-shot `call`, or in a session a scanner resumed from where the
    /// previous parse left it at the end of input. A complete value ending at the end of input
    /// may depend on it: counted, so that enclosing rules are not memoized (a result needing
    /// more input never is).
    fn scan(&mut self, call: TokenStream, dialect: TokenStream, target: TokenStream, pos: &Ident) -> TokenStream {
        self.counter += 1;
        let site = self.counter as u32;
        let k = self.k;
        quote!({
            let r = if self.memo.is_some() { self.resume_scan(#site, #pos, #dialect, #target) } else { #call };
            if r.end >= input.len() && r.outcome != #k::Outcome::NeedMoreInput {
                self.touches += 1;
            }
            r
        })
    }
}

/// The parser items of the generated module: `Parser`, `Session`, `parse`.
pub fn parser_items(g: &Grammar) -> TokenStream {
    let k = &g.krate;
    let s = quote!(#k::__macro_support);
    let outcome = quote!(#k::Outcome);
    let mut emit = Gen { k, counter: 0 };
    let pos = format_ident!("pos");
    let max_depth = MAX_DEPTH;
    let rules: Vec<TokenStream> = g
        .rules
        .iter()
        .enumerate()
        .map(|(index, r)| {
            let index = index as u32;
            let name = r.name.to_string();
            let f = rule_fn(&name);
            let body = emit.expr(&r.expr, &pos);
            let label = emit.arc_label(&name);
            quote! {
                #[allow(unused_variables, unused_mut, unused_labels, clippy::all)]
                fn #f(&mut self, pos: usize) -> ::std::result::Result<#s::Res, #k::Error> {
                    if let ::std::option::Option::Some(memo) = self.memo.as_deref() {
                        if let ::std::option::Option::Some(e) = memo.rules.get(&(#index, pos)) {
                            return ::std::result::Result::Ok(e.replay(&mut self.buf));
                        }
                    }
                    if self.depth >= #max_depth {
                        return ::std::result::Result::Err(#s::too_deep(#max_depth, pos));
                    }
                    self.depth += 1;
                    let input: &'i [u8] = self.input;
                    let partial = self.partial;
                    let tools: &'i #s::ToolTable = self.tools;
                    let mark = self.buf.out.len();
                    let nmark = self.buf.nodes.len();
                    let touches = self.touches;
                    let r: #s::Res = #body;
                    self.depth -= 1;
                    if r.outcome != #outcome::Fail {
                        self.buf.close(mark, ::std::option::Option::None, #label, pos, r);
                    }
                    // In partial mode every result that looked at the end of input either needs
                    // more input or was counted in `touches`; any other result is final.
                    if r.outcome != #outcome::NeedMoreInput && self.touches == touches {
                        if let ::std::option::Option::Some(memo) = self.memo.as_deref_mut() {
                            let nodes = self.buf.nodes[nmark..].to_vec();
                            memo.rules.insert((#index, pos), __Entry { res: r, base: nmark as u32, nodes });
                        }
                    }
                    ::std::result::Result::Ok(r)
                }
            }
        })
        .collect();
    let root = emit.expr(&g.root[0].1, &pos);
    let crate::doc_examples::DocExamples { parser: parser_example, parse_fn: parse_example, session: session_example, .. } =
        crate::doc_examples::doc_examples(g);
    quote! {
        /// The specialized parser: direct Rust code for this grammar, equivalent to its
        /// [`arena`]. Holds the request's tools; cheap to build, reusable across parses.
        #parser_example
        #[derive(Debug, Clone, Default)]
        pub struct Parser {
            tools: #s::ToolTable,
        }

        impl Parser {
            /// A parser for a request offering `tools` (used by `each_tool(...)`).
            pub fn new(tools: &[Tool]) -> Parser {
                Parser { tools: #s::ToolTable::new(tools) }
            }

            /// Parses `input` from its start. `partial`: the input may continue (streaming).
            /// `Err` only when rule calls nest deeper than the limit.
            pub fn parse(&self, input: &[u8], partial: bool) -> ::std::result::Result<#k::ParseOutput, #k::Error> {
                self.run(input, partial, ::std::option::Option::None)
            }

            fn run(&self, input: &[u8], partial: bool, memo: ::std::option::Option<&mut __Memo>) -> ::std::result::Result<#k::ParseOutput, #k::Error> {
                ::std::result::Result::Ok(self.run_front(input, partial, memo)?.0)
            }

            /// [`Parser::run`], and the scan the parse ended in when its next step may resume
            /// that scan alone (see [`Session::update`]): the result needs more input exactly
            /// where a scan cut by the end of input stopped, past its start (no lookahead
            /// between), and nothing else looked at the end of input.
            fn run_front(&self, input: &[u8], partial: bool, memo: ::std::option::Option<&mut __Memo>) -> ::std::result::Result<(#k::ParseOutput, ::std::option::Option<__Cut>), #k::Error> {
                let mut st = __State { input, partial, tools: &self.tools, depth: 0, buf: #s::AstBuf::for_input(input.len()), memo, touches: 0, cut: ::std::option::Option::None };
                let r = st.root(0)?;
                let cut = st.cut.filter(|c| st.touches == 0 && r.outcome == #outcome::NeedMoreInput && r.end == c.end && c.end > c.pos);
                ::std::result::Result::Ok((st.buf.finish(r), cut))
            }
        }

        /// Parses `input` with a parser offering no tools.
        #parse_example
        pub fn parse(input: &[u8], partial: bool) -> ::std::result::Result<#k::ParseOutput, #k::Error> {
            Parser::default().parse(input, partial)
        }

        /// Streaming over input that arrives in chunks; results equal a one-shot parse of the
        /// input so far. It drives a chat stream through [`Chat::stream`].
        ///
        /// Each [`Session::update`] runs the specialized parser over all input so far, but
        /// reuses the result (and AST) of every rule call of earlier parses that did not look
        /// at the end of input: the input only grows, so such a result is final. What is
        /// recomputed is the path to the end of input: the rules still open there, and the
        /// expressions outside rules (the root's, such as a leading `until`). JSON and Python
        /// values cut by the end of input resume their scan where it stopped; while the input
        /// ends inside one such value and nothing else depends on the end of input, an update
        /// only resumes that scan and moves the end of the AST nodes open around it (no parse
        /// from the root). A text (`until`, `rest`, a character class) growing at the end is
        /// read again from its start at each parse. (The nesting limit applies to the rule
        /// calls a parse runs: a reused result does not count again.)
        #session_example
        #[derive(Debug, Clone)]
        pub struct Session {
            parser: Parser,
            input: ::std::vec::Vec<u8>,
            memo: __Memo,
            /// The output of the last parse.
            output: #k::ParseOutput,
            /// The scan the last partial parse ended in, resumed alone by the next update.
            front: ::std::option::Option<__Front>,
        }

        impl ::std::default::Default for Session {
            fn default() -> Session {
                Session::new(Parser::default())
            }
        }

        /// Where a parse stopped needing more input: the scan site, its start, end and
        /// invalid-UTF-8 flag.
        #[derive(Debug, Clone, Copy)]
        struct __Cut {
            site: u32,
            pos: usize,
            end: usize,
            invalid: bool,
        }

        /// A scan the session resumes alone, and the ids of the output's AST nodes open around
        /// it (their end is the scan's).
        #[derive(Debug, Clone)]
        struct __Front {
            cut: __Cut,
            scanner: #k::json::Scanner,
            open: ::std::boxed::Box<[usize]>,
        }

        impl Session {
            /// A session over an empty input.
            pub fn new(parser: Parser) -> Session {
                Session {
                    parser,
                    input: ::std::vec::Vec::new(),
                    memo: ::std::default::Default::default(),
                    output: #s::empty_output(),
                    front: ::std::option::Option::None,
                }
            }
            /// Appends a chunk of input.
            #[inline(always)]
            pub fn push(&mut self, chunk: &[u8]) {
                #s::push(&mut self.input, chunk);
            }
            /// All input pushed so far.
            pub fn input(&self) -> &[u8] {
                &self.input
            }
            /// Parses all input so far as partial input.
            pub fn parse(&mut self) -> ::std::result::Result<#k::ParseOutput, #k::Error> {
                self.update().cloned()
            }
            /// [`Session::parse`] without copying the output: it is kept in the session and
            /// borrowed. The cheapest way to follow a stream chunk by chunk.
            #[inline]
            pub fn update(&mut self) -> ::std::result::Result<&#k::ParseOutput, #k::Error> {
                if let ::std::option::Option::Some(f) = self.front.as_mut() {
                    let r = #s::resume_partial(&mut f.scanner, &self.input);
                    if r.outcome == #outcome::NeedMoreInput && r.invalid == f.cut.invalid {
                        let nodes = &mut self.output.ast.nodes;
                        for &i in f.open.iter() {
                            if let ::std::option::Option::Some(n) = nodes.get_mut(i) {
                                n.end = r.end;
                            }
                        }
                        self.output.result.end = r.end;
                        return ::std::result::Result::Ok(&self.output);
                    }
                }
                self.update_from_root()
            }
            /// [`Session::update`] past the resumed scan: a parse from the root.
            #[inline(never)]
            fn update_from_root(&mut self) -> ::std::result::Result<&#k::ParseOutput, #k::Error> {
                self.end_front();
                let (output, cut) = self.parser.run_front(&self.input, true, ::std::option::Option::Some(&mut self.memo))?;
                self.output = output;
                if let ::std::option::Option::Some(cut) = cut {
                    if let ::std::option::Option::Some(scanner) = self.memo.scans.remove(&(cut.site, cut.pos)) {
                        let open = self.output.ast.nodes.iter().enumerate().filter(|(_, n)| n.partial).map(|(i, _)| i).collect();
                        self.front = ::std::option::Option::Some(__Front { cut, scanner, open });
                    }
                }
                ::std::result::Result::Ok(&self.output)
            }
            /// Parses all input so far as complete input. More input may follow.
            pub fn finish(&mut self) -> ::std::result::Result<#k::ParseOutput, #k::Error> {
                self.finish_in_place().cloned()
            }
            fn finish_in_place(&mut self) -> ::std::result::Result<&#k::ParseOutput, #k::Error> {
                self.end_front();
                self.output = self.parser.parse(&self.input, false)?;
                ::std::result::Result::Ok(&self.output)
            }
            /// The output of the last parse (empty and failed before the first).
            pub fn output(&self) -> &#k::ParseOutput {
                &self.output
            }
            /// Drops all input.
            pub fn reset(&mut self) {
                self.input.clear();
                self.memo.clear();
                self.front = ::std::option::Option::None;
                self.output = #s::empty_output();
            }
            /// Hands the scan resumed alone back to the memo, for a parse from the root.
            fn end_front(&mut self) {
                if let ::std::option::Option::Some(f) = self.front.take() {
                    self.memo.scans.insert((f.cut.site, f.cut.pos), f.scanner);
                }
            }
        }

        impl #k::Resume for Session {
            #[inline]
            fn push(&mut self, chunk: &[u8]) {
                Session::push(self, chunk);
            }
            #[inline]
            fn input(&self) -> &[u8] {
                &self.input
            }
            #[inline]
            fn update(&mut self) -> ::std::result::Result<&#k::ParseOutput, #k::Error> {
                Session::update(self)
            }
            fn finish(&mut self) -> ::std::result::Result<&#k::ParseOutput, #k::Error> {
                self.finish_in_place()
            }
            fn output(&self) -> &#k::ParseOutput {
                &self.output
            }
        }

        /// What a session keeps between parses: final rule results by (rule, position), and
        /// the scanners of JSON/Python values cut by the end of input by (site, position).
        #[derive(Debug, Clone, Default)]
        struct __Memo {
            rules: ::std::collections::HashMap<(u32, usize), __Entry>,
            scans: ::std::collections::HashMap<(u32, usize), #k::json::Scanner>,
        }

        impl __Memo {
            fn clear(&mut self) {
                self.rules.clear();
                self.scans.clear();
            }
        }

        /// A final rule result and the AST nodes it built (`nodes[0]` had id `base`).
        #[derive(Debug, Clone)]
        struct __Entry {
            res: #s::Res,
            base: u32,
            nodes: ::std::vec::Vec<#k::AstNode>,
        }

        impl __Entry {
            /// Appends the entry's nodes to `buf` as the rule call would have.
            fn replay(&self, buf: &mut #s::AstBuf) -> #s::Res {
                if let ::std::option::Option::Some(last) = self.nodes.len().checked_sub(1) {
                    let new_base = buf.nodes.len() as u32;
                    for n in &self.nodes {
                        let mut n = n.clone();
                        for c in n.children.iter_mut() {
                            *c = #k::AstId(c.0 - self.base + new_base);
                        }
                        buf.nodes.push(n);
                    }
                    buf.out.push(#k::AstId(new_base + last as u32));
                }
                self.res
            }
        }

        struct __State<'i> {
            input: &'i [u8],
            partial: bool,
            tools: &'i #s::ToolTable,
            depth: usize,
            buf: #s::AstBuf,
            /// A session's memo of final rule results (partial parses only).
            memo: ::std::option::Option<&'i mut __Memo>,
            /// How many results looked at the end of input without needing more input.
            touches: u32,
            /// The first scan in a session that needed more input.
            cut: ::std::option::Option<__Cut>,
        }

        impl<'i> __State<'i> {
            /// A scan in a session: continues the scanner a previous parse left at the end of
            /// input (the input only grew), and keeps it while it still touches the end.
            fn resume_scan(&mut self, site: u32, pos: usize, dialect: #k::json::Dialect, target: #k::json::Target) -> #s::Res {
                let (input, partial) = (self.input, self.partial);
                let ::std::option::Option::Some(memo) = self.memo.as_deref_mut() else {
                    let r = #k::json::Scanner::new(dialect, target, pos).run(input, partial);
                    return #s::Res::new(r.outcome, r.end, r.invalid_utf8);
                };
                // Taken out and put back: no copy of the scanner's stack.
                let kept = memo.scans.remove(&(site, pos));
                let resumed = kept.is_some();
                let mut sc = kept.unwrap_or_else(|| #k::json::Scanner::new(dialect, target, pos));
                let r = sc.run(input, partial);
                if r.touched_end || resumed {
                    memo.scans.insert((site, pos), sc);
                }
                if r.outcome == #k::Outcome::NeedMoreInput && self.cut.is_none() {
                    self.cut = ::std::option::Option::Some(__Cut { site, pos, end: r.end, invalid: r.invalid_utf8 });
                }
                #s::Res::new(r.outcome, r.end, r.invalid_utf8)
            }

            #[allow(unused_variables, unused_mut, unused_labels, clippy::all)]
            fn root(&mut self, pos: usize) -> ::std::result::Result<#s::Res, #k::Error> {
                let input: &'i [u8] = self.input;
                let partial = self.partial;
                let tools: &'i #s::ToolTable = self.tools;
                ::std::result::Result::Ok(#root)
            }
            #(#rules)*
        }
    }
}
