peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<call>") call?) end;
        rule call = #tool("<call>" #tool_name(["a-z"]+) "</call>");
    }
}
fn main() {}
