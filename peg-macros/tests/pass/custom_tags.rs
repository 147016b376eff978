// Tags of one's own are declared; they tag the AST and the chat mapper ignores them. A dotted
// tag is written as words (`#my.tag`), any other name as a string after `#` and a space (Rust
// 2024 reserves `#"..."`).
peg_macros::chat_peg! {
    grammar g {
        custom_tags = [greeting, "my.tag", "my tag"];
        root = #greeting("Hi" / "Hello") _ #my.tag(# "my tag"(#content(rest)));
    }
    grammar h extends g {
        root = #greeting("Hey") _ #content(rest);
    }
}

fn main() {
    let input = b"Hello there";
    let out = g::parse(input, false).unwrap();
    assert_eq!(out.ast.text(out.ast.find_by_tag("greeting")[0], input), "Hello");
    assert_eq!(out.ast.text(out.ast.find_by_tag("content")[0], input), "there");
    assert_eq!(out.ast.text(out.ast.find_by_tag("my.tag")[0], input), "there");
    assert_eq!(out.ast.text(out.ast.find_by_tag("my tag")[0], input), "there");
    assert_eq!(h::parse(b"Hey you", false).unwrap().ast.find_by_tag("greeting").len(), 1);
}
