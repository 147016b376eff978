//! An unreachable rule is only a warning.
peg_macros::chat_peg! {
    grammar g {
        root = "a";
        rule unused = "b";
    }
}
fn main() {
    assert!(g::arena(&[]).is_ok());
}
