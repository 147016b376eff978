peg_macros::chat_peg! {
    grammar g {
        root = each_tool(tool_name each_tool(tool_name));
    }
}
fn main() {}
