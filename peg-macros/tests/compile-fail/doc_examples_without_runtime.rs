peg_macros::chat_peg! {
    pub grammar g {
        doc_examples(my_crate::g);
        root = #content(rest);
    }
}
fn main() {}
