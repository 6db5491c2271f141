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
//!   the fix (wasmtime before 50.0.3) it takes every never-touched page for
//!   a written one and makes the whole kept span resident (~10 MiB per
//!   CPython slot instead of ~3 MiB). [`pagemap_reset_is_sound`] tries it on
//!   a one-slot pool; where it is not, the engines decommit freed slots as
//!   where the scan is unavailable.
//! - without the second change (instantiation's table entries located once
//!   per module), filling libpython's ~5,700-entry function table eagerly
//!   at instantiation costs two searches per entry, so the CPython engine
//!   fills it lazily there ([`eager_tables`]). That change cannot be seen
//!   from outside; it comes with the first in the same patch, so the probe
//!   answers for both.

use std::sync::OnceLock;
use std::time::Instant;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, Module, PoolingAllocationConfig, Store};

/// The probe memory: 16 MiB (256 wasm pages), all of it kept resident on
/// reset. Large next to a transparent huge page (2 MiB), so one written
/// page read as 512 still tells the two behaviours apart.
const PROBE_BYTES: usize = 16 << 20;
const WASM_PAGE: usize = 64 << 10;

/// How a pooled memory's reset with `PAGEMAP_SCAN` behaves in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PagemapReset {
    /// It resets the pages the instance wrote and leaves the others alone.
    Sound,
    /// It made (nearly) every page of the memory resident: wasmtime without
    /// chainbox's `vendor/wasmtime` (a crate depending on chainbox builds
    /// the registry's).
    MakesEveryPageResident,
    /// No `PAGEMAP_SCAN` here (Linux before 6.7, not Linux), or the probe
    /// could not run: the pool decommits freed slots either way.
    Unavailable,
}

/// [`PagemapReset`] of this process, probed on first use (~2 ms, logged).
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
            Ok(resident) if resident * 2 < PROBE_BYTES / crate::prefault::page_size() => {
                tracing::debug!(
                    ?took,
                    resident,
                    "wasmtime's pooled memory reset with PAGEMAP_SCAN is sound"
                );
                PagemapReset::Sound
            }
            Ok(resident) => {
                tracing::warn!(
                    ?took,
                    resident,
                    "this build's wasmtime makes every page of a reset pooled memory resident \
                     (built without chainbox's vendor/wasmtime, e.g. as a dependency of another \
                     crate: vendor/README.md); freed guest slots are decommitted instead of kept \
                     warm, and CPython's function table is filled lazily"
                );
                PagemapReset::MakesEveryPageResident
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
    pagemap_reset() != PagemapReset::MakesEveryPageResident
}

/// Instantiates a module with a data segment (so its memory has a
/// copy-on-write image) in a one-slot pool that keeps the whole memory
/// resident, writes one page, drops the instance (the slot's reset) and
/// counts the memory's private resident pages: a few where the reset is
/// sound, all of them where it is not.
fn probe() -> Result<usize, wasmtime::Error> {
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
    // One page past the image, as a chain writes some.
    memory.data_mut(&mut store)[PROBE_BYTES / 2] = 1;
    drop(store);
    crate::prefault::private_pages(base, PROBE_BYTES)
        .ok_or_else(|| wasmtime::Error::msg("/proc/self/pagemap unreadable"))
}

/// `(memory (export "m") 256 256) (data (i32.const 0) "<one wasm page>")`.
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
