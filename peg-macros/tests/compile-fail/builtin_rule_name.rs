peg_macros::chat_peg! {
    grammar g {
        root = json;
        rule json = "{}";
    }
}
fn main() {}
