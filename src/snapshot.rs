//! The pre-initialised guest: what wizer does, in-process. The guest is
//! instantiated once, its `chainbox_warm` export runs a trivial script, and
//! its linear memory is written back into the module as data segments; that
//! module is what the engine compiles, caches and starts every chain from.
//!
//! Why: monty initialises some state lazily on first use, once per process
//! natively but once per *chain* in the sandbox (each chain is a fresh
//! instance): its interner's core-string table (`CORE_ENTRIES`), with the
//! page faults on the static data it first reads, was ~6 % of the samples
//! of a chain's start. After the snapshot it is part of the memory image.
//!
//! What the snapshot fixes for every chain: the state after one `1 + 1` run,
//! including the hash seeds monty's maps drew at that point (set iteration
//! order is the same in every chain; a script can only make its own maps
//! slow). Nothing of any real chain is ever in it.
//!
//! If anything is off (no `chainbox_warm` export, an imported or second
//! memory, passive data segments, a trap), the original module is used.

use std::path::{Path, PathBuf};

use wasmparser::{Parser, Payload};
use wasmtime::{Linker, Module, Store};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

/// Name of the guest's pre-initialisation export.
pub(crate) const WARM_EXPORT: &str = "chainbox_warm";

/// Zero runs shorter than this stay inside a data segment: fewer, larger
/// segments; the memory image is the same either way.
const MERGE_ZEROS: usize = 1024;

/// Where the compiled guest and its snapshot are cached unless the engine
/// is told otherwise: `$CHAINBOX_CACHE_DIR`, else the platform's per-user
/// cache directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux) + `chainbox`,
/// else `chainbox-cache-<uid>` in the system temp dir. Whichever it is, it
/// is used only if [`private_cache_dir`] accepts it.
pub(crate) fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CHAINBOX_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    dirs::cache_dir().map_or_else(
        || shared_temp_cache_dir(&std::env::temp_dir()),
        |dir| dir.join("chainbox"),
    )
}

/// The cache directory in a temp dir other users share: named for this
/// user, so they do not collide (its safety is [`private_cache_dir`]'s).
fn shared_temp_cache_dir(temp: &Path) -> PathBuf {
    #[cfg(unix)]
    // SAFETY: geteuid only reads the process's effective user id.
    let user = unsafe { libc::geteuid() }.to_string();
    #[cfg(not(unix))]
    let user = "user";
    temp.join(format!("chainbox-cache-{user}"))
}

/// Why a cache directory is not used (the guests are compiled without one).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheDirError {
    /// It could not be made or looked at.
    #[error("the cache directory {path} could not be made or read: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Someone else could put files in it, and precompiled native code from
    /// it is loaded and run.
    #[error("the cache directory {path} is not this user's alone: {why}")]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// Makes `dir` (mode 0700, and any missing parents) if it does not exist,
/// and checks that only this user can put files in it: a directory (not a
/// symlink), owned by this user, writable by neither group nor others.
/// Precompiled native code is loaded from it: a directory another local
/// user could write (the shared temp dir's, a planted name) would let them
/// run code in this process.
pub(crate) fn private_cache_dir(dir: &Path) -> Result<(), CacheDirError> {
    let io = |source| CacheDirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io)?;
    let metadata = std::fs::symlink_metadata(dir).map_err(io)?;
    let not_private = |why: String| {
        Err(CacheDirError::NotPrivate {
            path: dir.to_path_buf(),
            why,
        })
    };
    if !metadata.is_dir() {
        return not_private("it is not a directory (a symlink?)".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid only reads the process's effective user id.
        let user = unsafe { libc::geteuid() };
        if metadata.uid() != user {
            return not_private(format!("it is owned by user {}, not {user}", metadata.uid()));
        }
        if metadata.mode() & 0o022 != 0 {
            return not_private(format!(
                "its mode {:o} lets others write to it",
                metadata.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Errors pre-initialising the guest (each means: use the original module).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapshotError {
    /// The guest has no pre-initialisation export (e.g. a prebuilt guest).
    #[error("the guest exports no `{WARM_EXPORT}`")]
    NoWarmExport,
    /// wasmtime refused to instantiate or run it.
    #[error("running `{WARM_EXPORT}`: {0:#}")]
    Run(wasmtime::Error),
    /// The module's layout is not one this rewriter handles.
    #[error("cannot rewrite the module: {0}")]
    Layout(&'static str),
    /// The module could not be parsed.
    #[error("cannot rewrite the module: reading wasm: {0}")]
    Read(#[from] wasmparser::BinaryReaderError),
}

/// Runs `module`'s warm-up export and returns `wasm` with its memory
/// replaced by the memory the warm-up left.
pub(crate) fn pre_initialise(
    engine: &wasmtime::Engine,
    module: &Module,
    wasm: &[u8],
) -> Result<Vec<u8>, SnapshotError> {
    if module.get_export(WARM_EXPORT).is_none() {
        return Err(SnapshotError::NoWarmExport);
    }
    let run = SnapshotError::Run;
    let mut linker: Linker<WasiP1Ctx> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |cx| cx).map_err(run)?;
    // The warm-up makes no chainbox call; if it tried, it traps.
    linker.define_unknown_imports_as_traps(module).map_err(run)?;
    // No preopens, env or args, as for a chain.
    let mut store = Store::new(engine, WasiCtxBuilder::new().build_p1());
    store.set_epoch_deadline(1000);
    let instance = linker.instantiate(&mut store, module).map_err(run)?;
    let warm = instance
        .get_typed_func::<(), ()>(&mut store, WARM_EXPORT)
        .map_err(run)?;
    warm.call(&mut store, ()).map_err(run)?;
    let memory = instance
        .get_memory(&mut store, "memory")
        .ok_or(SnapshotError::Layout("no exported `memory`"))?;
    rewrite(wasm, memory.data(&store))
}

/// `wasm` with its data segments replaced by the non-zero parts of
/// `memory` and its memory's minimum raised to `memory`'s size.
fn rewrite(wasm: &[u8], memory: &[u8]) -> Result<Vec<u8>, SnapshotError> {
    let layout = SnapshotError::Layout;
    let segments = segments(memory);
    let pages = u64::try_from(memory.len() / 65536).map_err(|_| layout("memory size"))?;
    let mut out = wasm_encoder::Module::new();
    let mut data_written = false;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        match payload {
            Payload::ImportSection(ref imports) => {
                for import in imports.clone().into_imports() {
                    let import = import?;
                    if matches!(import.ty, wasmparser::TypeRef::Memory(_)) {
                        return Err(layout("the memory is imported"));
                    }
                }
                copy_raw(&mut out, &payload, wasm);
            }
            Payload::MemorySection(reader) => {
                let memories: Vec<_> = reader.into_iter().collect::<Result<_, _>>()?;
                let [only] = memories.as_slice() else {
                    return Err(layout("more than one memory"));
                };
                if only.memory64 {
                    return Err(layout("a 64-bit memory"));
                }
                let mut section = wasm_encoder::MemorySection::new();
                section.memory(wasm_encoder::MemoryType {
                    minimum: only.initial.max(pages),
                    maximum: only.maximum,
                    memory64: only.memory64,
                    shared: only.shared,
                    page_size_log2: only.page_size_log2,
                });
                out.section(&section);
            }
            Payload::DataCountSection { .. } => {
                out.section(&wasm_encoder::DataCountSection {
                    count: segments.len() as u32,
                });
            }
            Payload::DataSection(reader) => {
                for segment in reader {
                    let segment = segment?;
                    if !matches!(segment.kind, wasmparser::DataKind::Active { memory_index: 0, .. }) {
                        return Err(layout("a passive data segment"));
                    }
                }
                let mut data = wasm_encoder::DataSection::new();
                for (offset, bytes) in &segments {
                    // A 32-bit memory's offsets fit in u32; `i32.const` carries them wrapped.
                    let offset = *offset as u32 as i32;
                    data.active(0, &wasm_encoder::ConstExpr::i32_const(offset), bytes.iter().copied());
                }
                out.section(&data);
                data_written = true;
            }
            _ => copy_raw(&mut out, &payload, wasm),
        }
    }
    if !data_written {
        return Err(layout("no data section"));
    }
    Ok(out.finish())
}

/// Copies a section as it is (payloads that are not sections are skipped:
/// the header, code entries inside the code section, the end).
fn copy_raw(out: &mut wasm_encoder::Module, payload: &Payload<'_>, wasm: &[u8]) {
    if let Some((id, range)) = payload.as_section() {
        let (Ok(start), Ok(end)) = (usize::try_from(range.start), usize::try_from(range.end)) else {
            return;
        };
        out.section(&wasm_encoder::RawSection {
            id,
            data: &wasm[start..end],
        });
    }
}

/// The non-zero stretches of `memory` as `(offset, bytes)`, zero runs
/// shorter than [`MERGE_ZEROS`] kept inside.
fn segments(memory: &[u8]) -> Vec<(usize, &[u8])> {
    let mut segments = Vec::new();
    let mut i = 0;
    while i < memory.len() {
        let Some(start) = memory[i..].iter().position(|&b| b != 0).map(|p| p + i) else {
            break;
        };
        let mut end = start;
        let mut zeros = 0;
        for (j, &b) in memory.iter().enumerate().skip(start) {
            if b == 0 {
                zeros += 1;
                if zeros >= MERGE_ZEROS {
                    break;
                }
            } else {
                zeros = 0;
                end = j + 1;
            }
        }
        segments.push((start, &memory[start..end]));
        i = end + zeros;
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    mod cache_dir {
        use super::super::*;
        use std::os::unix::fs::{MetadataExt, PermissionsExt};

        #[test]
        fn a_new_cache_directory_is_made_for_this_user_alone() {
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().join("a").join("cache");
            private_cache_dir(&dir).expect("made and accepted");
            let mode = std::fs::metadata(&dir).expect("made").mode() & 0o777;
            assert_eq!(mode, 0o700);
        }

        #[test]
        fn a_cache_directory_others_can_write_is_refused() {
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().join("cache");
            std::fs::create_dir(&dir).expect("dir");
            for mode in [0o777, 0o1777, 0o770, 0o702] {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).expect("chmod");
                let refused = private_cache_dir(&dir).expect_err("refused").to_string();
                assert!(refused.contains("lets others write"), "{mode:o}: {refused}");
            }
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            private_cache_dir(&dir).expect("only its owner writes to it");
        }

        #[test]
        fn a_symlink_in_place_of_the_cache_directory_is_refused() {
            let temp = tempfile::tempdir().expect("temp dir");
            let elsewhere = temp.path().join("elsewhere");
            std::fs::create_dir(&elsewhere).expect("dir");
            let dir = temp.path().join("cache");
            std::os::unix::fs::symlink(&elsewhere, &dir).expect("symlink");
            let refused = private_cache_dir(&dir).expect_err("refused").to_string();
            assert!(refused.contains("not a directory"), "{refused}");
        }

        #[test]
        fn a_cache_directory_of_another_user_is_refused() {
            // SAFETY: geteuid only reads the process's effective user id.
            if unsafe { libc::geteuid() } != 0 {
                return; // only root can give a directory away
            }
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().join("cache");
            std::fs::create_dir(&dir).expect("dir");
            std::os::unix::fs::chown(&dir, Some(65534), None).expect("chown");
            let refused = private_cache_dir(&dir).expect_err("refused").to_string();
            assert!(refused.contains("owned by user 65534"), "{refused}");
        }

        #[test]
        fn the_temp_dir_fallback_is_named_for_the_user() {
            let dir = shared_temp_cache_dir(Path::new("/tmp"));
            // SAFETY: geteuid only reads the process's effective user id.
            let user = unsafe { libc::geteuid() };
            assert_eq!(dir, Path::new("/tmp").join(format!("chainbox-cache-{user}")));
        }
    }

    #[test]
    fn zero_runs_split_segments_only_when_long() {
        let mut memory = vec![0u8; 8192];
        memory[10] = 1;
        memory[20] = 2; // 9 zeros in between: same segment
        memory[5000] = 3; // far: a new segment
        let segs = segments(&memory);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].0, 10);
        assert_eq!(segs[0].1.len(), 11);
        assert_eq!(segs[1], (5000, &[3u8][..]));
    }

    #[test]
    fn all_zero_memory_has_no_segments() {
        assert!(segments(&[0u8; 4096]).is_empty());
    }

    /// A module with one memory of `pages` pages and a data segment.
    fn module(pages: u64) -> Vec<u8> {
        let mut m = wasm_encoder::Module::new();
        let mut memories = wasm_encoder::MemorySection::new();
        memories.memory(wasm_encoder::MemoryType {
            minimum: pages,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        m.section(&memories);
        let mut exports = wasm_encoder::ExportSection::new();
        exports.export("memory", wasm_encoder::ExportKind::Memory, 0);
        m.section(&exports);
        let mut data = wasm_encoder::DataSection::new();
        data.active(0, &wasm_encoder::ConstExpr::i32_const(16), b"original".iter().copied());
        m.section(&data);
        m.finish()
    }

    #[test]
    fn the_rewritten_module_starts_with_the_snapshot_memory() {
        let mut memory = vec![0u8; 2 * 65536];
        memory[16..24].copy_from_slice(b"original");
        memory[70000..70004].copy_from_slice(b"warm");
        let rewritten = rewrite(&module(1), &memory).expect("rewrites");
        let engine = wasmtime::Engine::default();
        let module = Module::new(&engine, &rewritten).expect("valid module");
        let mut store = Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiates");
        let mem = instance.get_memory(&mut store, "memory").expect("memory");
        assert_eq!(mem.data_size(&store), 2 * 65536);
        assert_eq!(&mem.data(&store)[16..24], b"original");
        assert_eq!(&mem.data(&store)[70000..70004], b"warm");
    }

    #[test]
    fn a_module_without_the_warm_export_is_refused() {
        let engine = wasmtime::Engine::default();
        let module = Module::new(&engine, module(1)).expect("valid module");
        let err = pre_initialise(&engine, &module, &[]).unwrap_err();
        assert!(matches!(err, SnapshotError::NoWarmExport), "{err}");
    }
}
