//! Compile-once state: the wasmtime engine, the guest module (pre-initialised,
//! precompiled and cached on disk so a later process skips Cranelift), the
//! linker with the host imports, the `InstancePre`, the pooling allocator,
//! the epoch ticker and the hot pages learned from the warm-up chain. One
//! [`Engine`] per process serves any number of concurrent chains.
//!
//! Invariant: nothing here is per chain. Per-chain state lives in the
//! `Store` built by `sandbox`.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;
use wasmtime::{InstanceAllocationStrategy, InstancePre, Linker, Module, PoolingAllocationConfig};

use crate::approval::Approval;
use crate::artifacts::{ArtifactStore, MemoryArtifactStore};
use crate::chain::{
    CallStatus, ChainError, ChainRunResult, ChainStatus, ChainWarning, ErrorKind, RunOptions, Usage, millis,
};
use crate::digest::sha256_hex;
use crate::invoker::InvokerSession;
use crate::policy::ChainPolicy;
use crate::prefault::HotPages;
use crate::sandbox::{self, ChainSetup, ChainState, Meters};
use crate::shaping::{Shaper, preview};
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;
use chainbox_protocol::{Finish, ScriptResult};

/// The guest module, built from `guest/` by build.rs.
static GUEST_WASM: &[u8] = include_bytes!(env!("CHAINBOX_GUEST_WASM_PATH"));

/// How often the epoch ticks. Bounds how late a CPU or time limit can fire
/// and how often a running chain yields to others on its thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Wasm stack for the guest. Monty's parser and a 1000-deep Python
/// recursion need more than wasmtime's 512 KiB default; too little turns a
/// Python `SyntaxError`/`RecursionError` into a stack-overflow trap.
pub const MAX_WASM_STACK: usize = 8 * 1024 * 1024;

/// Largest linear memory any chain may have; policies asking for more are
/// capped here. Also the pooling allocator's per-slot reservation bound.
pub const MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Settings of an [`Engine`].
#[derive(Clone)]
pub struct EngineConfig {
    /// Where the precompiled guest is cached. Default: `$CHAINBOX_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/chainbox`, else `~/.cache/chainbox`, else the
    /// system temp dir.
    pub cache_dir: Option<PathBuf>,
    /// Chains that may run at once (pool slots); more wait for a slot.
    pub max_concurrent_chains: u32,
    /// Where offloaded results and media go unless a run says otherwise;
    /// an in-memory store by default.
    pub artifacts: Option<Arc<dyn ArtifactStore>>,
    /// Map the guest pages every chain touches in before it starts (see
    /// [`crate::prefault`]); on by default. Off: no warm-up chain at
    /// creation, and each chain faults its pages in one by one.
    pub prefault: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            cache_dir: None,
            max_concurrent_chains: 1000,
            artifacts: None,
            prefault: true,
        }
    }
}

/// Errors creating an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime rejected the configuration or the module.
    #[error("wasmtime: {0}")]
    Wasmtime(String),
    /// The module cache could not be written (the engine still works, but
    /// every process recompiles).
    #[error("module cache at {path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn wasmtime_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::Wasmtime(e.to_string())
}

/// Runs chains. Build one per process and share it (it is cheap to clone).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: wasmtime::Engine,
    pre: InstancePre<ChainState>,
    slots: Semaphore,
    artifacts: Arc<dyn ArtifactStore>,
    stop_ticker: Arc<AtomicBool>,
    /// Learned from the warm-up chain (set, possibly empty, before the
    /// engine is returned); mapped in before every chain.
    hot_pages: OnceLock<HotPages>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl Engine {
    /// An engine with the default configuration.
    pub fn new() -> Result<Self, EngineError> {
        Self::with_config(EngineConfig::default())
    }

    /// An engine with this configuration.
    pub fn with_config(config: EngineConfig) -> Result<Self, EngineError> {
        let slots = config.max_concurrent_chains.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_core_instances(slots)
            .total_memories(slots)
            .total_tables(slots)
            .total_stacks(slots)
            .max_memory_size(MAX_MEMORY_BYTES as usize)
            // Measured on the trivial chain (examples/profile.rs): keeping the
            // first MiB of linear memory resident cost a 1 MiB memset per
            // chain (the guest's shadow stack sits there, mostly untouched)
            // and took start from ~65 µs to ~190 µs; the ~20 pages a chain
            // really touches are cheaper to fault back in. The table is
            // small and always touched, so it stays resident.
            .linear_memory_keep_resident(0)
            .table_keep_resident(64 << 10)
            // Each decommit is an madvise whose TLB shootdown interrupts every
            // CPU the runtime's threads ran on; batching 16 of them cut the
            // trivial chain from ~100 to ~85 µs on a multi-thread runtime.
            .decommit_batch_size(16);
        let mut wasm = wasmtime::Config::new();
        wasm.epoch_interruption(true)
            .max_wasm_stack(MAX_WASM_STACK)
            .async_stack_size(MAX_WASM_STACK + (1 << 20))
            .cranelift_opt_level(wasmtime::OptLevel::Speed)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = wasmtime::Engine::new(&wasm).map_err(wasmtime_err)?;
        let module = load_module(&engine, config.cache_dir)?;
        let mut linker: Linker<ChainState> = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker).map_err(wasmtime_err)?;
        let pre = linker.instantiate_pre(&module).map_err(wasmtime_err)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop_ticker.clone());
        let engine = Engine {
            inner: Arc::new(Inner {
                engine,
                pre,
                slots: Semaphore::new(slots as usize),
                artifacts: config.artifacts.unwrap_or_else(|| Arc::new(MemoryArtifactStore::new())),
                stop_ticker,
                hot_pages: OnceLock::new(),
            }),
        };
        if config.prefault {
            engine.warm_up();
        }
        // Whatever the warm-up learned, or nothing: no later chain learns
        // (an arbitrary first chain could teach far more pages than all
        // chains share).
        let _ = engine.inner.hot_pages.set(HotPages::default());
        Ok(engine)
    }

    /// Runs one trivial chain, the engine's first, from which it learns the
    /// guest's hot pages (see [`crate::prefault`]). On its own thread and
    /// runtime: the caller may be inside an async runtime, where blocking on
    /// another is refused. If it fails, chains just start without them.
    fn warm_up(&self) {
        let engine = self.clone();
        let learned = std::thread::scope(|scope| {
            let warm = scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                let (registry, policy) = (ToolRegistry::new(), ChainPolicy::default());
                let result = runtime.block_on(engine.run("1 + 1", &registry, &policy, &Approval::deny_all()));
                (result.status == ChainStatus::Ok).then_some(())
            });
            warm.join().ok().flatten()
        });
        if learned.is_none() {
            tracing::warn!("chainbox: the warm-up chain failed; chains start without prefaulted pages");
        }
    }

    /// The engine's default artifact store, where chains' offloaded results
    /// and media live unless a run supplied its own.
    pub fn artifacts(&self) -> &Arc<dyn ArtifactStore> {
        &self.inner.artifacts
    }

    /// Runs one chain with default [`RunOptions`].
    pub async fn run(
        &self,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
    ) -> ChainRunResult {
        self.run_with(script, registry, policy, approval, RunOptions::default())
            .await
    }

    /// Runs one chain. Never fails: every outcome is a [`ChainRunResult`]
    /// with the trace of the calls made.
    pub async fn run_with(
        &self,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
        options: RunOptions,
    ) -> ChainRunResult {
        let started = Instant::now();
        let mut policy = policy.clone();
        policy.max_memory_bytes = policy.max_memory_bytes.min(MAX_MEMORY_BYTES);
        let policy = Arc::new(policy);
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let workspace = Arc::new(Mutex::new(Workspace::new(options.workspace.clone())));
        let store = options
            .artifacts
            .clone()
            .unwrap_or_else(|| self.inner.artifacts.clone());
        let shaper = Shaper::new(run_id.clone(), store, workspace.clone(), policy.max_inline_result_bytes);
        let session = Arc::new(InvokerSession::new(
            run_id,
            registry.clone(),
            policy.clone(),
            approval.clone(),
            shaper,
        ));
        let total = policy.total_timeout();
        let meters = Meters::new(&policy);
        let run = self.run_guest(script, registry, &policy, session.clone(), workspace, meters.clone());
        let mut result = match tokio::time::timeout(total, run).await {
            Ok(result) => result,
            Err(_) => {
                let message = format!("the chain ran past total_timeout_s = {}", total.as_secs_f64());
                let mut r = empty_result(ChainStatus::Timeout);
                r.call_trace = session.trace(CallStatus::Timeout, &message);
                r.error = Some(ChainError::new(ErrorKind::Timeout, "TimeoutError", message));
                // The store is gone with the dropped future; what it printed
                // and used lives on in the shared meters.
                (r.usage, r.stdout) = meters.take();
                r
            }
        };
        result.tool_calls = result.call_trace.len() as u32;
        (result.artifacts, result.files) = session.shaper().produced_lists();
        session.shaper().release();
        result.duration_ms = millis(started.elapsed());
        result
    }

    async fn run_guest(
        &self,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        session: Arc<InvokerSession>,
        workspace: Arc<Mutex<Workspace>>,
        meters: Arc<Meters>,
    ) -> ChainRunResult {
        let Ok(_slot) = self.inner.slots.acquire().await else {
            return crash(&session, "the engine is shutting down");
        };
        let mut store = sandbox::new_store(
            &self.inner.engine,
            ChainSetup {
                script,
                registry,
                policy,
                session: session.clone(),
                workspace,
                meters,
            },
        );
        let instance = match self.inner.pre.instantiate_async(&mut store).await {
            Ok(instance) => instance,
            Err(e) => return crash(&session, &format!("could not start the sandbox: {e}")),
        };
        let memory = instance.get_memory(&mut store, "memory");
        store.data_mut().guest_memory = memory;
        if let (Some(hot), Some(memory)) = (self.inner.hot_pages.get(), memory) {
            // SAFETY: the chain's own linear memory, live with `store`; the
            // guest has not run yet, so nothing grows it meanwhile.
            unsafe { hot.apply(memory.data_ptr(&store), memory.data_size(&store)) };
        }
        let start = match instance.get_typed_func::<(), ()>(&mut store, "_start") {
            Ok(f) => f,
            Err(e) => return crash(&session, &format!("the guest has no entry point: {e}")),
        };
        let trap = start.call_async(&mut store, ()).await.err();
        // Only the warm-up chain finds the hot pages unset (see `with_config`).
        if let (None, Some(memory)) = (self.inner.hot_pages.get(), memory) {
            let hot = HotPages::learn(memory.data_ptr(&store), memory.data_size(&store));
            tracing::debug!("chainbox: {} hot guest pages learned", hot.pages());
            let _ = self.inner.hot_pages.set(hot);
        }
        let ending = sandbox::ending(&mut store, trap);
        let mut result = empty_result(ChainStatus::Ok);
        result.stdout = ending.stdout;
        result.usage = ending.usage;
        let (finish, warnings) = match ending.finish {
            Some(Finish { result, warnings }) => (Some(result), warnings),
            None => (None, Vec::new()),
        };
        result.warnings = warnings.into_iter().map(ChainWarning::from).collect();
        match (finish, ending.error) {
            (_, Some(error)) => {
                result.status = ChainStatus::Error;
                result.call_trace = session.trace(CallStatus::Error, &format!("interrupted: {}", error.message));
                result.error = Some(error);
            }
            (Some(ScriptResult::Ok { output, output_text }), None) => {
                result.call_trace = session.trace(CallStatus::Error, "interrupted: the script ended first");
                match shape_output(&session, policy, output, output_text) {
                    Ok((output, output_text)) => {
                        result.output = output;
                        result.output_text = output_text;
                    }
                    Err(error) => {
                        result.status = ChainStatus::Error;
                        result.error = Some(error);
                    }
                }
            }
            (Some(ScriptResult::Error(e)), None) => {
                result.status = ChainStatus::Error;
                let kind = if e.compile {
                    ErrorKind::Compile
                } else if e.exc_type == "MemoryError" {
                    ErrorKind::Memory
                } else {
                    ErrorKind::Script
                };
                result.error = Some(
                    ChainError {
                        kind,
                        error_type: e.exc_type,
                        message: e.message,
                        line: e.line,
                        traceback: Some(e.traceback).filter(|t| !t.is_empty()),
                    }
                    .bounded(),
                );
                result.call_trace = session.trace(CallStatus::Error, "interrupted: the script failed first");
            }
            // `sandbox::ending` reports a missing finish as an error; never panic here regardless.
            (None, None) => return crash(&session, "the sandbox ended without reporting a result"),
        }
        result
    }
}

/// The chain's own output follows the result rule: above
/// `max_result_bytes` it is refused (`output_limit`), above
/// `max_inline_result_bytes` it is offloaded and `output_text` is a preview.
fn shape_output(
    session: &InvokerSession,
    policy: &ChainPolicy,
    output: Value,
    output_text: String,
) -> Result<(Value, String), ChainError> {
    let size = serde_json::to_string(&output).map(|s| s.len()).unwrap_or(0);
    if size as u64 > policy.max_result_bytes {
        return Err(ChainError::new(
            ErrorKind::OutputLimit,
            "OutputLimitExceeded",
            format!(
                "the chain's output is {size} bytes, over max_result_bytes = {}",
                policy.max_result_bytes
            ),
        ));
    }
    match session.shaper().inline_or_offload(output) {
        Ok((output, None)) => Ok((output, output_text)),
        Ok((handle, Some(_))) => Ok((handle, preview(&output_text))),
        Err(message) => Err(ChainError::new(ErrorKind::Crash, "ArtifactStoreError", message)),
    }
}

fn empty_result(status: ChainStatus) -> ChainRunResult {
    ChainRunResult {
        status,
        output: Value::Null,
        output_text: String::new(),
        stdout: String::new(),
        error: None,
        tool_calls: 0,
        duration_ms: 0.0,
        call_trace: Vec::new(),
        warnings: Vec::new(),
        artifacts: Vec::new(),
        files: Vec::new(),
        usage: Usage::default(),
    }
}

fn crash(session: &InvokerSession, message: &str) -> ChainRunResult {
    let mut r = empty_result(ChainStatus::Error);
    r.call_trace = session.trace(CallStatus::Error, message);
    r.error = Some(ChainError::new(ErrorKind::Crash, "SandboxCrash", message));
    r
}

fn new_run_id() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("chain-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Increments the engine's epoch every [`EPOCH_TICK`] until the engine is dropped.
fn spawn_ticker(engine: wasmtime::Engine, stop: Arc<AtomicBool>) {
    let spawned = std::thread::Builder::new()
        .name("chainbox-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        });
    if let Err(e) = spawned {
        tracing::error!("chainbox: could not start the epoch ticker: {e}; CPU limits will not fire");
    }
}

/// The module chains start from: the pre-initialised guest (see
/// [`crate::snapshot`]), from the on-disk cache or built and cached on a
/// miss. Building it needs the original guest compiled too (to run its
/// warm-up), so a cold cache costs two compilations, once per machine. If
/// pre-initialising fails, the original guest is used (and nothing is
/// cached as the snapshot, so the next process tries again).
fn load_module(engine: &wasmtime::Engine, cache_dir: Option<PathBuf>) -> Result<Module, EngineError> {
    let dir = cache_dir.unwrap_or_else(default_cache_dir);
    let key = cache_key(engine);
    let warm_path = dir.join(format!("chainbox-guest-warm-{key}.cwasm"));
    if let Some(module) = load_cached(engine, &warm_path) {
        return Ok(module);
    }
    let plain_path = dir.join(format!("chainbox-guest-{key}.cwasm"));
    let plain = match load_cached(engine, &plain_path) {
        Some(module) => module,
        None => compile_and_cache(engine, &dir, &plain_path, GUEST_WASM)?,
    };
    match crate::snapshot::pre_initialise(engine, &plain, GUEST_WASM) {
        Ok(wasm) => compile_and_cache(engine, &dir, &warm_path, &wasm),
        Err(e) => {
            tracing::warn!("chainbox: chains start from the plain guest: {e}");
            Ok(plain)
        }
    }
}

/// The cache files' key: the guest bytes and the engine's compatibility
/// hash, so a stale or foreign file is never loaded.
fn cache_key(engine: &wasmtime::Engine) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{}-{:016x}", &sha256_hex(GUEST_WASM)[..16], hasher.finish())
}

fn load_cached(engine: &wasmtime::Engine, path: &Path) -> Option<Module> {
    if !path.exists() {
        return None;
    }
    // SAFETY: the file was written by `precompile_module` of an engine with
    // this exact compatibility hash (it is in the name), atomically (temp
    // file + rename), into a cache directory owned by this user.
    match unsafe { Module::deserialize_file(engine, path) } {
        Ok(module) => Some(module),
        Err(e) => {
            tracing::warn!("chainbox: ignoring unreadable module cache {}: {e}", path.display());
            None
        }
    }
}

fn compile_and_cache(engine: &wasmtime::Engine, dir: &Path, path: &Path, wasm: &[u8]) -> Result<Module, EngineError> {
    let compiled = engine.precompile_module(wasm).map_err(wasmtime_err)?;
    if let Err(e) = write_atomic(dir, path, &compiled) {
        tracing::warn!("chainbox: could not cache the compiled guest: {e}");
        // SAFETY: `compiled` was produced just now by this engine.
        return unsafe { Module::deserialize(engine, &compiled) }.map_err(wasmtime_err);
    }
    // SAFETY: as above; the file holds exactly `compiled`.
    unsafe { Module::deserialize_file(engine, path) }.map_err(wasmtime_err)
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

fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CHAINBOX_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("chainbox");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return PathBuf::from(home).join(".cache").join("chainbox");
    }
    std::env::temp_dir().join("chainbox-cache")
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn hot_pages(prefault: bool) -> usize {
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 1,
            prefault,
            ..EngineConfig::default()
        })
        .expect("engine");
        engine.inner.hot_pages.get().expect("set at creation").pages()
    }

    #[test]
    fn a_new_engine_learns_the_hot_pages_of_its_warm_up_chain() {
        let pages = hot_pages(true);
        // The shadow stack's top and the first heap/statics pages: a few, not
        // the whole memory.
        assert!((1..=64).contains(&pages), "{pages} pages");
    }

    #[test]
    fn an_engine_without_prefault_learns_no_pages() {
        assert_eq!(hot_pages(false), 0);
    }
}
