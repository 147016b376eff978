peg_macros::chat_peg! {
    grammar g {
        root = "<call>" #tool_name(tool_name) "</call>";
    }
}
fn main() {}
