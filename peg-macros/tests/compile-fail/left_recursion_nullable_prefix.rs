peg_macros::chat_peg! {
    grammar g {
        root = list;
        rule list = _ ["a-z"]* list? "," / "x";
    }
}
fn main() {}
