peg_macros::chat_peg! {
    grammar g {
        root = #content(untill) end;
    }
}
fn main() {}
