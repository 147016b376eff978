#![deny(deprecated)]
peg_macros::chat_peg! {
    grammar g {
        root = #content(rest);
        rule leftover = "x";
    }
}
fn main() {}
