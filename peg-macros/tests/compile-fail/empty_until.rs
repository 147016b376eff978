peg_macros::chat_peg! {
    grammar g {
        root = until("</think>", "") end;
    }
}
fn main() {}
