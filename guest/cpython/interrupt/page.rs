//! Where the CPython guest's interruption checks read (`checks.rs`): the
//! guest address of a 4 KiB page of its linear memory. Shared by `build.rs`,
//! which puts the checks in, and the engine, which makes the page unreadable
//! to stop the guest (`src/sandbox/interrupt.rs`).
//!
//! Any page the memory always has will do (64 KiB: inside the main
//! module's data, which its 350 initial pages hold): the host makes it
//! unreadable only to end the chain, and host code never touches guest
//! memory while it is (see `interrupt.rs`), so the guest's own use of the
//! page costs nothing but an earlier trap.

/// The guard page's guest address; 4 KiB-aligned.
pub const GUARD_PAGE: u32 = 0x1_0000;
