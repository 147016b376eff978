//! Compile-time behaviour of `chat_peg!`: passing grammars (one feature per file) and
//! diagnostics with checked `.stderr` (pinned to rustc 1.95; regenerate with
//! `TRYBUILD=overwrite cargo test -p peg-macros --test trybuild` after a toolchain change).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
    t.compile_fail("tests/compile-fail/*.rs");
}
