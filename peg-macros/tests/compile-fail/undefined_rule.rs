peg_macros::chat_peg! {
    grammar g {
        root = "<think>" thought "</think>";
        rule thougth = until("</think>");
    }
}
fn main() {}
