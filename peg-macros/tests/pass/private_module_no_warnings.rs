//! A private grammar module whose items are mostly unused compiles without warnings.
#![deny(warnings)]
peg_macros::chat_peg! {
    grammar g {
        root = #content(rest);
    }
}
fn main() {
    let _ = g::GBNF;
}
