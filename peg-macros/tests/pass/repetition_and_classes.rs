//! Postfix repetition, bounded repetition, character classes folded into `chars`.
use peg_runtime::Node;
peg_macros::chat_peg! {
    grammar g {
        root = ["a-z_"]+ "x"*<2,3> ["^\n"]*<,4> ("y" / "z")? &"!" !"!!" any end;
    }
}
fn main() {
    let arena = g::arena(&[]).unwrap();
    assert!(arena.nodes().iter().any(|n| matches!(n, Node::Chars { min: 1, max: None, .. })));
    assert!(arena.nodes().iter().any(|n| matches!(n, Node::Repeat { min: 2, max: Some(3), .. })));
}
