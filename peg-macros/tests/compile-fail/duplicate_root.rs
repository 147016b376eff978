peg_macros::chat_peg! {
    grammar g {
        root = "a";
        root = "b";
    }
}
fn main() {}
