peg_macros::chat_peg! {
    grammar g {
        root = #content(until("<call>")) call* end;
        trigger rule call = ("<call>" json "</call>")?;
    }
}
fn main() {}
