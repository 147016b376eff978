peg_macros::chat_peg! {
    grammar g {
        root = call(json);
        rule call = "x";
    }
}
fn main() {}
