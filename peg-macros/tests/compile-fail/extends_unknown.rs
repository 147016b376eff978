peg_macros::chat_peg! {
    grammar a {
        root = "x";
    }
    grammar b extends missing {
        rule y = "y";
    }
}
fn main() {}
