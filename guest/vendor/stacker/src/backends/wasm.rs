//! chainbox patch: the stack limit on wasm32.
//!
//! Upstream stacker falls back to "unknown" on wasm32, so every
//! `maybe_grow` at the top of a computation allocates a fresh 1 MiB stack
//! from the heap: ruff's parser does so once per parse, which cost chainbox
//! a heap growth, an `mprotect` and page faults on every chain. wasm-ld
//! exports the bounds of the linear-memory (shadow) stack, so the limit is
//! known exactly; stacks that stacker allocates later set their own limit.

extern "C" {
    /// Lowest address of the shadow stack, defined by wasm-ld.
    static __stack_low: u8;
}

pub unsafe fn guess_os_stack_limit() -> Option<usize> {
    Some(core::ptr::addr_of!(__stack_low) as usize)
}
