peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<call>")) call* end;
        trigger rule call = #tool("<call>" #tool_nmae(["a-z"]+) " " #tool_args(json) "</call>");
    }
}
fn main() {}
