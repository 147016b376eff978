peg_macros::chat_peg! {
    grammar g {
        root = #content(until("{")) call* end;
        trigger rule call = json_object _;
    }
}
fn main() {}
