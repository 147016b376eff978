//! Several grammars in one invocation; `extends` replaces a rule and adds one.
peg_macros::chat_peg! {
    grammar base {
        root = block? #content(rest);
        rule block = "<think>" #reasoning(until("</think>")) "</think>" _;
    }
    /// The reasoning block stays in the content.
    grammar inline extends base {
        rule block = #content("<think>" body "</think>") _;
        rule body = until("</think>");
    }
}
fn main() {
    let input = b"<think>hm</think> hi";
    let tags = |ast: &peg_runtime::Ast| -> Vec<String> { ast.find_by_tag("content").iter().map(|&id| ast.text(id, input).into_owned()).collect() };
    let a = base::parse(input, false).unwrap();
    assert_eq!(a.ast.find_by_tag("reasoning").len(), 1);
    let b = inline::parse(input, false).unwrap();
    assert!(b.ast.find_by_tag("reasoning").is_empty());
    assert_eq!(tags(&b.ast), ["<think>hm</think>", "hi"]);
    assert_eq!(inline::arena(&[]).unwrap().rules().len(), 2);
}
