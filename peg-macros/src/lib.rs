//! `chat_peg!`: grammars written in Rust source, compiled to parsers and GBNF at build time.
