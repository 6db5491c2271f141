//! Exports the pre-initialisation entry (`chainbox_warm`, see main.rs)
//! next to `_start`: a binary's `#[no_mangle]` functions are not exported
//! by default. Only for wasm: the guest's unit tests build natively.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-bins=--export=chainbox_warm");
    }
}
