//! What this build's wasmtime does, found by trying it, once per process.
//!
//! chainbox builds wasmtime 50.0.1 with two changes of its own
//! (`vendor/wasmtime`, vendor/README.md), but `[patch.crates-io]` applies
//! only inside chainbox's workspace: a crate that depends on chainbox builds
//! the registry's wasmtime without them, and nothing in the build says so.
//! So the guests' engines ask the behaviour, not the build:
//!
//! - a pooled memory's reset with `linear_memory_keep_resident` and
//!   `PAGEMAP_SCAN` must reset only the pages its instance wrote. Without
//!   the fix (wasmtime before 50.0.3) it takes the never-touched pages
//!   around a written one (those of its page table, 2 MiB) for written
//!   ones and makes them resident: ~9.4 MiB per parked CPython chain
//!   instead of ~3 MiB (BENCHMARKS.md). [`pagemap_reset_is_sound`] tries it
//!   on a one-slot pool; where it is not sound, the engines decommit freed
//!   slots as where the scan is unavailable.
//! - without the second change (instantiation's table entries located once
//!   per module), filling libpython's ~5,700-entry function table eagerly
//!   at instantiation costs two searches per entry, so the CPython engine
//!   fills it lazily there ([`eager_tables`]). That change cannot be seen
//!   from outside; it comes with the first in the same patch, so the probe
//!   answers for both.

use std::sync::OnceLock;
use std::time::Instant;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, Module, PoolingAllocationConfig, Store};

/// The probe memory (4 MiB) and its image (the first wasm page).
const PROBE_BYTES: usize = 4 << 20;
const WASM_PAGE: usize = 64 << 10;

/// Pages a sound reset may leave resident past those the instance had
/// (none measured). The unsound reset makes the rest of the written page's
/// page table resident (511 pages of 4 KiB).
const SLACK_PAGES: usize = 8;

/// How a pooled memory's reset with `PAGEMAP_SCAN` behaves in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PagemapReset {
    /// It resets the pages the instance wrote and leaves the others alone.
    Sound,
    /// It made pages resident the instance never touched: wasmtime without
    /// chainbox's `vendor/wasmtime` (a crate depending on chainbox builds
    /// the registry's).
    MakesUntouchedPagesResident,
    /// No `PAGEMAP_SCAN` here (Linux before 6.7, not Linux), or the probe
    /// could not run: the pool decommits freed slots either way.
    Unavailable,
}

/// [`PagemapReset`] of this process, probed on first use (~3 ms, logged).
pub(crate) fn pagemap_reset() -> PagemapReset {
    static RESET: OnceLock<PagemapReset> = OnceLock::new();
    *RESET.get_or_init(|| {
        if !PoolingAllocationConfig::is_pagemap_scan_available() {
            return PagemapReset::Unavailable;
        }
        let start = Instant::now();
        let probed = probe();
        let took = start.elapsed();
        match probed {
            Ok((written, resident)) if resident <= written + SLACK_PAGES => {
                tracing::debug!(
                    ?took,
                    written,
                    resident,
                    "wasmtime's pooled memory reset with PAGEMAP_SCAN is sound"
                );
                PagemapReset::Sound
            }
            Ok((written, resident)) => {
                tracing::warn!(
                    ?took,
                    written,
                    resident,
                    "this build's wasmtime makes pages of a reset pooled memory resident that its \
                     instance never touched (built without chainbox's vendor/wasmtime, e.g. as a \
                     dependency of another crate: vendor/README.md); freed guest slots are \
                     decommitted instead of kept warm, and CPython's function table is filled lazily"
                );
                PagemapReset::MakesUntouchedPagesResident
            }
            Err(e) => {
                tracing::warn!(
                    ?took,
                    "probing wasmtime's pooled memory reset failed ({e}); freed guest slots are decommitted"
                );
                PagemapReset::Unavailable
            }
        }
    })
}

/// Whether freed pool slots may keep their written pages, reset in place
/// with `PAGEMAP_SCAN`.
pub(crate) fn pagemap_reset_is_sound() -> bool {
    pagemap_reset() == PagemapReset::Sound
}

/// Whether the CPython engine fills its instances' function tables at
/// instantiation (cheap with `vendor/wasmtime`, ~18 % of a trivial chain's
/// CPU without it) rather than entry by entry on first call.
pub(crate) fn eager_tables() -> bool {
    pagemap_reset() != PagemapReset::MakesUntouchedPagesResident
}

/// Instantiates a module with a data segment (so its memory has a
/// copy-on-write image) in a one-slot pool that keeps the whole memory
/// resident, writes one page of the image and drops the instance (the
/// slot's reset). Returns the memory's private resident pages before and
/// after the reset: the same where the reset is sound; without the fix,
/// every page of the written page's page table (2 MiB with 4 KiB pages)
/// after, the kernel's scan having reported the never-touched ones as
/// written (measured: 1 page before, 512 after).
fn probe() -> Result<(usize, usize), wasmtime::Error> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(1)
        .total_core_instances(1)
        .total_memories(1)
        .total_tables(1)
        .total_stacks(1)
        .table_elements(1)
        .max_memory_size(PROBE_BYTES)
        .linear_memory_keep_resident(PROBE_BYTES)
        .pagemap_scan(Enabled::Yes);
    let mut config = Config::new();
    config
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .memory_reservation(PROBE_BYTES as u64)
        .memory_guard_size(0)
        .memory_init_cow(true);
    let engine = Engine::new(&config)?;
    let module = Module::new(&engine, probe_module())?;
    let mut store = Store::new(&engine, ());
    let instance = wasmtime::Instance::new(&mut store, &module, &[])?;
    let memory = instance
        .get_memory(&mut store, "m")
        .ok_or_else(|| wasmtime::Error::msg("the probe module exports no memory"))?;
    let base = memory.data_ptr(&store);
    // A page of the image, written as a chain writes its snapshot's pages
    // (a private copy of a file page: never a transparent huge page).
    memory.data_mut(&mut store)[100] = 1;
    let unreadable = || wasmtime::Error::msg("/proc/self/pagemap unreadable");
    let written = crate::prefault::private_pages(base, PROBE_BYTES).ok_or_else(unreadable)?;
    drop(store);
    let resident = crate::prefault::private_pages(base, PROBE_BYTES).ok_or_else(unreadable)?;
    Ok((written, resident))
}

/// `(memory (export "m") 64 64) (data (i32.const 0) "<one wasm page>")`.
fn probe_module() -> Vec<u8> {
    use wasm_encoder::{ConstExpr, DataSection, ExportKind, ExportSection, MemorySection, MemoryType};
    let pages = (PROBE_BYTES / WASM_PAGE) as u64;
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: pages,
        maximum: Some(pages),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports.export("m", ExportKind::Memory, 0);
    let mut data = DataSection::new();
    data.active(0, &ConstExpr::i32_const(0), vec![0x5a; WASM_PAGE]);
    let mut module = wasm_encoder::Module::new();
    module.section(&memories).section(&exports).section(&data);
    module.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace builds `vendor/wasmtime`, whose reset is sound: where
    /// the kernel has `PAGEMAP_SCAN`, the probe must say so (else the
    /// engines here would silently lose their warm slots).
    #[test]
    fn the_workspace_build_resets_pooled_memory_soundly() {
        let start = Instant::now();
        let reset = pagemap_reset();
        eprintln!("probe: {reset:?} in {:?}", start.elapsed());
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            assert_eq!(reset, PagemapReset::Sound);
        } else {
            assert_eq!(reset, PagemapReset::Unavailable);
        }
        assert!(eager_tables());
    }
}
