//! The on-disk cache of compiled guests: precompiled native code keyed by
//! the guest's bytes and the engine's compatibility hash, written
//! atomically into a directory only this user can write, loaded instead of
//! compiling; one process at a time compiles (a lock file there).

use std::hash::{Hash, Hasher};
use std::path::Path;

use wasmtime::Module;
use wasmtime::component::Component;

use super::{EngineError, GUEST_WASM};
use crate::digest::sha256_hex;

/// SAFETY (of the call inside): only ever given cache files named by
/// [`cache_key`], which this engine's kind wrote (see [`load_cached`]).
pub(super) fn deserialize_component_file(engine: &wasmtime::Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: see above.
    unsafe { Component::deserialize_file(engine, path) }
}

/// The module chains start from: the pre-initialised guest (see
/// [`crate::snapshot`]), from the on-disk cache or built and cached on a
/// miss. Building it needs the original guest compiled too (to run its
/// warm-up), so a cold cache costs two compilations, once per machine. If
/// pre-initialising fails, the original guest is used (and nothing is
/// cached as the snapshot, so the next process tries again).
pub(super) fn load_module(engine: &wasmtime::Engine, dir: Option<&Path>) -> Result<Module, EngineError> {
    let key = cache_key(engine, GUEST_WASM);
    let load = |path: &Path| {
        // SAFETY: see `load_cached`.
        unsafe { Module::deserialize_file(engine, path) }
    };
    let warm = format!("chainbox-guest-warm-{key}.cwasm");
    cached_or_compiled(dir, &warm, load, || {
        let compile = |name: &str, wasm: &[u8]| {
            let compiled = engine.precompile_module(wasm)?;
            cache(dir, name, &compiled, load, || {
                // SAFETY: `compiled` was produced just now by this engine.
                unsafe { Module::deserialize(engine, &compiled) }
            })
        };
        let plain_name = format!("chainbox-guest-{key}.cwasm");
        let plain = match dir.and_then(|dir| load_cached(&dir.join(&plain_name), load)) {
            Some(module) => module,
            None => compile(&plain_name, GUEST_WASM)?,
        };
        match crate::snapshot::pre_initialise(engine, &plain, GUEST_WASM) {
            Ok(wasm) => compile(&warm, &wasm),
            Err(e) => {
                tracing::warn!("chains start from the plain guest: {e}");
                Ok(plain)
            }
        }
    })
}

/// The guest cached as `name` in `dir`, else `compile`d (and cached by it)
/// under the cache directory's [`compile_lock`]: a process that waited for
/// the lock looks again first, and loads what the holder cached. Without a
/// cache directory, compiled.
pub(super) fn cached_or_compiled<T>(
    dir: Option<&Path>,
    name: &str,
    load: impl Fn(&Path) -> wasmtime::Result<T>,
    compile: impl FnOnce() -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let Some(dir) = dir else {
        return compile();
    };
    let path = dir.join(name);
    if let Some(guest) = load_cached(&path, &load) {
        return Ok(guest);
    }
    let _lock = compile_lock(dir);
    match load_cached(&path, &load) {
        Some(guest) => Ok(guest),
        None => compile(),
    }
}

/// The cache directory's compile lock, held while the returned file is
/// open: one process at a time compiles a guest, and the others wait here,
/// then load what it cached. Processes started together on a cold cache (a
/// fleet of servers, a test suite's `chainbox serve`s) would otherwise each
/// spend seconds of CPU compiling the same module. `None` (compile without
/// it) if the lock cannot be taken, e.g. the directory is read-only.
fn compile_lock(dir: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(dir).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("chainbox-compile.lock"))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// The cache files' key: the guest bytes and the engine's compatibility
/// hash, so a stale or foreign file is never loaded.
pub(super) fn cache_key(engine: &wasmtime::Engine, wasm: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{}-{:016x}", &sha256_hex(wasm)[..16], hasher.finish())
}

/// A compiled guest from the cache file at `path`, if there is a readable one.
///
/// Loading is only safe because every cache file was written by
/// `precompile_module`/`precompile_component` of an engine with this exact
/// compatibility hash (it is in the name), atomically (temp file + rename),
/// into a cache directory only this user can write (checked when the engine
/// is made: [`crate::snapshot::private_cache_dir`]).
fn load_cached<T>(path: &Path, load: impl Fn(&Path) -> wasmtime::Result<T>) -> Option<T> {
    if !path.exists() {
        return None;
    }
    match load(path) {
        Ok(compiled) => Some(compiled),
        Err(e) => {
            tracing::warn!("ignoring unreadable module cache {}: {e}", path.display());
            None
        }
    }
}

/// Writes `compiled` to the cache as `name` in `dir` and loads it from there
/// (so its code is mapped from the file, shared between processes); without
/// a cache directory, or if the cache cannot be written, loads it from
/// memory.
pub(super) fn cache<T>(
    dir: Option<&Path>,
    name: &str,
    compiled: &[u8],
    load: impl Fn(&Path) -> wasmtime::Result<T>,
    from_memory: impl FnOnce() -> wasmtime::Result<T>,
) -> Result<T, EngineError> {
    let Some(dir) = dir else {
        return from_memory().map_err(EngineError::Wasmtime);
    };
    let path = dir.join(name);
    if let Err(e) = write_atomic(dir, &path, compiled) {
        tracing::warn!("could not cache the compiled guest: {e}");
        return from_memory().map_err(EngineError::Wasmtime);
    }
    load(&path).map_err(EngineError::Wasmtime)
}

fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    let cache_err = |source| EngineError::Cache {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(cache_err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(cache_err)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(cache_err)?;
    tmp.persist(path).map_err(|e| cache_err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_second_compiler_waits_for_the_first_to_let_go_of_the_cache() {
        let dir = tempfile::tempdir().expect("cache dir");
        let first = compile_lock(dir.path()).expect("the lock");
        let (took, waiting) = std::sync::mpsc::channel();
        let path = dir.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let lock = compile_lock(&path);
            took.send(lock.is_some()).expect("the test waits");
        });
        assert!(
            waiting.recv_timeout(Duration::from_millis(300)).is_err(),
            "a second compiler went ahead while the first held the lock"
        );
        drop(first);
        assert_eq!(waiting.recv_timeout(Duration::from_secs(30)), Ok(true));
        second.join().expect("the second compiler");
    }
}
