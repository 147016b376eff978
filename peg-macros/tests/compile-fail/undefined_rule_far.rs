peg_macros::chat_peg! {
    grammar g {
        root = "<think>" reasoning_block "</think>";
        rule thought = until("</think>");
    }
}
fn main() {}
