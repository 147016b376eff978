peg_macros::chat_peg! {
    grammar g {
        root = ["z-a"]+ end;
    }
}
fn main() {}
