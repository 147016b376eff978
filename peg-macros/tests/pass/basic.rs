//! Literals, sequences, `until`, tags and `end`.
peg_macros::chat_peg! {
    pub grammar simple {
        root = ("<think>" #reasoning(until("</think>")) "</think>")? #content(rest) end;
    }
}
fn main() {
    let arena = simple::arena(&[]).unwrap();
    assert!(arena.nodes().len() > 5);
}
