//! `crate = path;` points generated code at a re-export of the runtime.
mod facade {
    pub use peg_runtime as rt;
}
peg_macros::chat_peg! {
    grammar g {
        crate = crate::facade::rt;
        root = #content(rest);
    }
}
fn main() {
    assert!(g::arena(&[]).is_ok());
}
