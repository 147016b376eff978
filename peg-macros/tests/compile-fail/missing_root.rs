peg_macros::chat_peg! {
    grammar g {
        rule content = rest;
    }
}
fn main() {}
