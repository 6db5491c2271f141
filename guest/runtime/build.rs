//! Exports the pre-initialisation entry (`chainbox_warm`, see main.rs)
//! next to `_start`: a binary's `#[no_mangle]` functions are not exported
//! by default.
fn main() {
    println!("cargo:rustc-link-arg-bins=--export=chainbox_warm");
}
