//! Exports the pre-initialisation entry (`chainbox_warm`, see main.rs)
//! and the next run's (`chainbox_next`) next to `_start`: a binary's `#[no_mangle]` functions are not exported
//! by default. Only for wasm: the guest's unit tests build natively.
//!
//! Also sizes the guest's shadow stack (in linear memory, below the data:
//! an overflow traps rather than corrupting it). monty's recursion over
//! nested data (`==`, `repr`, `json.dumps` of values nested 1,000 deep, the
//! recursion limit) runs on it; Rust's 1 MiB default left about one
//! kilobyte a level, which a change of inlining elsewhere in monty used up
//! (two self-referential dicts compared trapped instead of raising
//! RecursionError). Untouched stack pages cost nothing.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-bins=--export=chainbox_warm");
        println!("cargo:rustc-link-arg-bins=--export=chainbox_next");
        println!("cargo:rustc-link-arg-bins=-zstack-size=2097152");
    }
}
