peg_macros::chat_peg! {
    grammar g {
        root = schema(json, "args", r#"{"type": "object",}"#);
    }
}
fn main() {}
