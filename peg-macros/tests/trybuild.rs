//! Compile-time behaviour of `chat_peg!`: passing grammars (one feature per file) and
//! diagnostics with checked `.stderr`.
//!
//! The `.stderr` files are what one compiler prints, so the compile-fail cases run only on the
//! pinned toolchain ([`PINNED`]); elsewhere they are skipped with a notice (as rust-peg does),
//! and the passing grammars still run. Regenerate after a toolchain change with
//! `TRYBUILD=overwrite cargo test -p peg-macros --test trybuild`, then move [`PINNED`].

use std::process::Command;

/// The rustc release the `.stderr` files were written by.
const PINNED: &str = "1.95";

/// The `major.minor` of the rustc that builds the tests (`RUSTC`, else `rustc`).
fn rustc_release() -> Option<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(out.stdout).ok()?;
    let number = version.split_whitespace().nth(1)?;
    let mut parts = number.split('.');
    Some(format!("{}.{}", parts.next()?, parts.next()?))
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
    match rustc_release() {
        Some(release) if release == PINNED => t.compile_fail("tests/compile-fail/*.rs"),
        other => eprintln!(
            "skipped the compile-fail cases: their .stderr files are pinned to rustc {PINNED}, this is {}",
            other.as_deref().unwrap_or("an unknown rustc")
        ),
    }
}

#[test]
fn the_pin_is_a_release() {
    let mut parts = PINNED.split('.');
    assert!(parts.next().is_some_and(|m| m.parse::<u32>().is_ok()) && parts.next().is_some_and(|m| m.parse::<u32>().is_ok()));
}
