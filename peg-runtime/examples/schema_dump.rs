fn main() {
    let s: serde_json::Value = serde_json::from_str(&std::env::args().nth(1).unwrap()).unwrap();
    print!("{}", peg_runtime::schema::to_gbnf(&s).unwrap());
}
