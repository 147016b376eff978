peg_macros::chat_peg! {
    grammar b extends a {
        rule y = "y";
    }
    grammar a {
        root = "x";
    }
}
fn main() {}
