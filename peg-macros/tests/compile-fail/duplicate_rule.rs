peg_macros::chat_peg! {
    grammar g {
        root = a;
        rule a = "x";
        rule a = "y";
    }
}
fn main() {}
