//! Doc examples for the generated items, written when a grammar names the paths its users
//! reach the module and the runtime by (`doc_examples(MODULE, runtime = RUNTIME);`). Each
//! example asserts what its item promises for any grammar (the specialized parser parses as the
//! arena does, a session as a one-shot parse, a stream as the message, the grammars load), so
//! it runs as a doctest of the crate that defines the grammar whatever the grammar is.

use proc_macro2::TokenStream;
use quote::quote;

use crate::grammar::Grammar;

/// The `#[doc]` attributes of each generated item's example (empty without `doc_examples`).
#[derive(Default)]
pub struct DocExamples {
    pub arena: TokenStream,
    pub gbnf_const: TokenStream,
    pub gbnf_lazy: TokenStream,
    pub triggers: TokenStream,
    pub gbnf_fn: TokenStream,
    pub parser: TokenStream,
    pub parse_fn: TokenStream,
    pub session: TokenStream,
    pub chat: TokenStream,
}

/// The examples of `g`'s items; `M` and `K` in the code below stand for the module and the
/// runtime paths.
pub fn doc_examples(g: &Grammar) -> DocExamples {
    let Some((module, runtime)) = &g.doc_examples else { return DocExamples::default() };
    let example = |code: &str| {
        let code = code.replace("K::", &format!("{runtime}::")).replace("M::", &format!("{module}::"));
        let lines = std::iter::once(String::new())
            .chain(std::iter::once("```".to_owned()))
            .chain(code.lines().map(str::to_owned))
            .chain(std::iter::once("```".to_owned()));
        let lines: Vec<String> = lines.collect();
        quote!(#(#[doc = #lines])*)
    };
    DocExamples {
        arena: example(
            "// The arena parses as the specialized parser does.\n\
             let arena = M::arena(&[]).unwrap();\n\
             assert_eq!(arena.parse(b\"Hello, world\", false).unwrap(), M::parse(b\"Hello, world\", false).unwrap());",
        ),
        gbnf_const: example("assert!(K::gbnf::Grammar::parse(M::GBNF).is_ok());\nassert_eq!(M::gbnf(&[], false).unwrap(), M::GBNF);"),
        gbnf_lazy: example(
            "// A lazy grammar exactly when there are trigger words to wait for.\n\
             assert_eq!(M::GBNF_LAZY.is_some(), !M::TRIGGERS.is_empty());\n\
             if let Some(lazy) = M::GBNF_LAZY {\n    assert!(K::gbnf::Grammar::parse(lazy).is_ok());\n}",
        ),
        triggers: example(
            "// What a sampler waits for before it applies the lazy grammar.\n\
             for word in M::TRIGGERS {\n    assert!(!word.is_empty());\n}\n\
             assert_eq!(M::TRIGGERS.is_empty(), M::GBNF_LAZY.is_none());",
        ),
        gbnf_fn: example("assert_eq!(M::gbnf(&[], false).unwrap(), M::GBNF);\nassert_eq!(M::gbnf(&[], true).ok(), M::GBNF_LAZY.map(String::from));"),
        parser: example(
            "let parser = M::Parser::new(&[]);\n\
             let input = b\"Hello, world\";\n\
             assert_eq!(parser.parse(input, true).unwrap(), M::arena(&[]).unwrap().parse(input, true).unwrap());",
        ),
        parse_fn: example("let input = b\"Hello, world\";\nassert_eq!(M::parse(input, false).unwrap(), M::Parser::new(&[]).parse(input, false).unwrap());"),
        session: example(
            "// Chunk by chunk, the parses of a one-shot parser of the input so far.\n\
             let mut session = M::Session::new(M::Parser::new(&[]));\n\
             session.push(b\"Hello, \");\n\
             session.push(b\"world\");\n\
             assert_eq!(session.parse().unwrap(), M::parse(b\"Hello, world\", true).unwrap());\n\
             assert_eq!(session.finish().unwrap(), M::parse(b\"Hello, world\", false).unwrap());",
        ),
        chat: example(
            "use K::chat::ParseMode;\n\
             let chat = M::Chat::new(Default::default()).unwrap();\n\
             let parsed = chat.parse(\"Hello, world\", ParseMode::Complete).unwrap();\n\
             // The runtime parser over the arena reads the same message,\n\
             assert_eq!(parsed, chat.chat_parser().parse(\"Hello, world\", ParseMode::Complete).unwrap());\n\
             // and a stream's deltas add up to it.\n\
             let mut stream = chat.stream();\n\
             stream.push(\"Hello, \").unwrap();\n\
             stream.push(\"world\").unwrap();\n\
             assert_eq!(stream.finish().unwrap().1.message, parsed.message);",
        ),
    }
}
