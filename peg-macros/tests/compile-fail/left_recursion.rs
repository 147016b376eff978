peg_macros::chat_peg! {
    grammar g {
        root = a end;
        rule a = b "+" / "1";
        rule b = "(" b ")" / a;
    }
}
fn main() {}
