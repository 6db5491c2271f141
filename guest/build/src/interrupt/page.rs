//! Where the CPython guest's interruption checks read (`checks.rs`): the
//! guard page of its linear memory. Shared by chainbox's `build.rs`, which
//! puts the checks in, and the engine, which makes the host page holding
//! [`GUARD_PAGE`] unreadable to stop the guest (`src/sandbox/interrupt.rs`).
//!
//! The host page's size is the host's (4 KiB on x86-64, 16 KiB on Apple
//! silicon, 64 KiB on some arm64 and ppc64 kernels), so the layout holds
//! for any of them: [`GUARD_PAGE`] is 64 KiB-aligned, so it begins a host
//! page on every host with pages of at most [`GUARD_SPAN`]; every check
//! reads within its first [`CHECKED_BYTES`], inside that host page on every
//! host (pages are at least 4 KiB); and the bulk-memory rerouting covers
//! the whole [`GUARD_SPAN`], the most a host page can protect. A host with
//! larger pages is refused (`interrupt::guard_page_len`).
//!
//! Any 64 KiB the memory always has will do: at 64 KiB lies the deep end of
//! the main module's shadow stack (the C stack grows down towards it, and
//! only a C stack nearly full reaches it), which its 350 initial pages hold.
//! The host protects it only to end the chain, and host code never touches
//! guest memory while it is protected (see `interrupt.rs`), so the guest's
//! own use of it costs nothing but an earlier trap.

/// The guard page's guest address; 64 KiB-aligned.
pub const GUARD_PAGE: u32 = 0x1_0000;

/// Bytes from [`GUARD_PAGE`] the checks read (each a different one, see
/// `checks.rs`): the smallest host page.
pub const CHECKED_BYTES: u32 = 4096;

/// Bytes from [`GUARD_PAGE`] a stop may protect: the largest host page
/// supported. `memory.copy` and `memory.fill` touching them run in wasm.
pub const GUARD_SPAN: u32 = 0x1_0000;

// Every check reads within the smallest host page.
const _: () = assert!(CHECKED_BYTES <= 4096 && CHECKED_BYTES <= GUARD_SPAN);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_page_begins_a_host_page_of_any_supported_size() {
        for host_page in [4096, 16384, 65536] {
            assert!(host_page <= GUARD_SPAN);
            assert_eq!(GUARD_PAGE % host_page, 0, "{host_page}");
        }
    }
}
