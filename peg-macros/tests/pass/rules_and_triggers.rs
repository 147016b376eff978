//! Rules, trigger rules, references in any order.
peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<call>")) call* end;
        trigger rule call = "<call>" _ args _ "</call>" _;
        rule args = json_object;
    }
}
fn main() {
    let arena = g::arena(&[]).unwrap();
    assert_eq!(arena.rules().len(), 2);
}
