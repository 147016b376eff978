peg_macros::chat_peg! {
    grammar g {
        root = "a"*<5,2> end;
    }
}
fn main() {}
