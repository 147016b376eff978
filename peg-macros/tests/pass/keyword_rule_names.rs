//! Rule names may be Rust keywords, raw or not.
peg_macros::chat_peg! {
    grammar g {
        root = r#type fn;
        rule type = "t";
        rule r#fn = "f";
    }
}
fn main() {
    assert_eq!(g::parse(b"tf", false).unwrap().result.outcome, peg_runtime::Outcome::Success);
    assert!(g::arena(&[]).unwrap().rule("type").is_some());
}
