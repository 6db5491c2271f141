//! The compiled guests and their instances: what every chain of an
//! [`Engine`](crate::Engine) runs on, built once. The wasmtime engines
//! (monty's with epochs and a pooling allocator; CPython's with the
//! component model and its guard-page watchdog), the guest module
//! (pre-initialised, precompiled and cached on disk, `cache.rs`), the
//! linkers with the host imports, the `InstancePre`s, the threads CPython
//! guests run on (`threads.rs`), the epoch ticker, and the spares the
//! housekeepers make ahead of their chains.
//!
//! Invariant: nothing here is per chain. One chain's life is
//! [`crate::chain`], which takes its instance from here; its state lives
//! in the `Store` built by `sandbox`.

mod budget;
mod cache;
mod parked;
mod probe;
mod threads;
mod warm;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};
use wasmtime::component::Component;
use wasmtime::{InstanceAllocationStrategy, InstancePre, Linker, PoolingAllocationConfig};

use crate::approval::Approval;
use crate::artifacts::{ArtifactStore, MemoryArtifactStore};
use crate::housekeeper::{Guest, Housekeeper};
use crate::policy::ChainPolicy;
use crate::prefault::HotPages;
use crate::python_choice::Interpreter;
use crate::sandbox::{self, ChainState, PageSizeError, UnstoppableGuest, Watchdog};
use crate::tools::ToolRegistry;
pub(crate) use budget::raise_fd_limit;
pub use budget::{Budgets, Capacity};
use cache::{cache, cache_key, cached_or_compiled, deserialize_component_file, load_module};
pub(crate) use parked::{Entry as ParkedEntry, Parked, ParkedSessions, WarmKey};
pub(crate) use threads::{GuestThreads, NoThread};
pub(crate) use warm::WarmSlots;

/// The guest module, built from `guest/` by build.rs.
pub(crate) static GUEST_WASM: &[u8] = include_bytes!(env!("CHAINBOX_GUEST_WASM_PATH"));

/// The CPython guest component, built from `guest/cpython` by build.rs.
pub(crate) static CPYTHON_WASM: &[u8] = include_bytes!(env!("CHAINBOX_CPYTHON_WASM_PATH"));

/// The CPython guest's shape, for its pooling allocator: per instance of
/// the component, at most this many core instances (componentize-py links
/// libc, libpython, the WASI adapter and glue as 14 separate modules),
/// memories (one, shared by them), tables (two) and table elements (5,674
/// in libpython's function table today).
const CPYTHON_CORE_INSTANCES: u32 = 20;
const CPYTHON_MEMORIES: u32 = 1;
const CPYTHON_TABLES: u32 = 2;
const CPYTHON_TABLE_ELEMENTS: usize = 16 * 1024;

/// How much of a finished CPython chain's linear memory (and of its
/// tables) its pool slot keeps, reset in place, for the slot's next
/// instance: the pages the chain wrote (a trivial chain writes ~3 MiB of
/// its ~21 MiB), found with Linux's `PAGEMAP_SCAN` and copied back from the
/// snapshot, so the next instance writes them without a copy-on-write
/// fault. Faulted in afresh, those pages cost a back-to-back chain ~8 ms
/// of CPU (each fault a TLB shootdown across the process's CPUs); reset in
/// place, ~0.3 ms (BENCHMARKS.md, issue 48). Pages past the budget are
/// given back as before; a slot no chain uses again keeps at most this much.
const CPYTHON_KEEP_RESIDENT: usize = 16 << 20;
const CPYTHON_TABLE_KEEP_RESIDENT: usize = 256 << 10;

/// [`CPYTHON_KEEP_RESIDENT`] for the monty guest, whose trivial chain
/// writes ~20 pages.
const MONTY_KEEP_RESIDENT: usize = 2 << 20;

/// Makes `pool` reset a freed slot's written pages in place, keeping up to
/// `memory` bytes of each linear memory (`table` of each table) resident,
/// where the kernel can say which pages were written (`PAGEMAP_SCAN`,
/// Linux 6.7+) and this build's wasmtime resets only those (`probe`: not
/// the registry's 50.0.1, which a crate depending on chainbox builds).
/// Elsewhere the pool decommits freed slots as before: without the scan,
/// wasmtime would copy the whole kept span back on every reset. Returns
/// whether it does.
fn keep_written_pages_resident(pool: &mut PoolingAllocationConfig, memory: usize, table: usize) -> bool {
    let scan = probe::pagemap_reset_is_sound();
    if scan {
        pool.linear_memory_keep_resident(memory)
            .table_keep_resident(table)
            .pagemap_scan(wasmtime::Enabled::Yes);
    }
    scan
}

/// How often the epoch ticks. Bounds how late a CPU or time limit can fire
/// and how often a running chain yields to others on its thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Wasm stack for the guest. Monty's parser and a 1000-deep Python
/// recursion need more than wasmtime's 512 KiB default; too little turns a
/// Python `SyntaxError`/`RecursionError` into a stack-overflow trap.
pub const MAX_WASM_STACK: usize = 8 * 1024 * 1024;

/// Wasm stack for the CPython guest. CPython 3.14 raises `RecursionError`
/// when its C stack (about 1 MiB of shadow stack in linear memory) runs
/// short, but a C frame keeps most of its state in wasm locals on this
/// stack: comparing two self-referential dicts overflowed 8 MiB before
/// CPython's own check fired (a `SandboxCrash` where CPython answers
/// `RecursionError`), and dropping a dict nested 100,000 deep overflowed
/// 32 MiB. 64 MiB lets CPython's check fire first in every case measured
/// (repr, ==, <, hash, json, deepcopy, dealloc); untouched pages cost
/// nothing (trivial chain start unchanged within noise).
pub const CPYTHON_WASM_STACK: usize = 64 * 1024 * 1024;

/// Largest linear memory any chain may have; policies asking for more are
/// capped here. Also the pooling allocator's per-slot reservation bound.
pub const MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Freed monty pool slots decommitted at once. Each decommit is an madvise
/// whose TLB shootdown interrupts every CPU the runtime's threads ran on;
/// batching 16 of them cut the trivial chain from ~100 to ~85 µs on a
/// multi-thread runtime.
const DECOMMIT_BATCH: usize = 16;

/// Most freed slots waiting to be decommitted: wasmtime keeps a queue per
/// shard (one per CPU, at most 16) and flushes one when it holds
/// [`DECOMMIT_BATCH`] slots.
fn decommit_backlog() -> u32 {
    let shards = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
    u32::try_from((DECOMMIT_BATCH - 1) * shards).unwrap_or(u32::MAX)
}

/// Instances of the monty pool for `chains` chains and `parked` sessions'
/// instances: one more than chains, the spare (a finished chain's store,
/// dropped on the housekeeper's thread, keeps its chain's slot permit
/// until then). And room for the slots waiting in the decommit queues: a
/// pool that is full but for those makes wasmtime flush them, and two
/// threads allocating at once (a chain and the housekeeper's next spare)
/// then race for the flush, and the loser fails ("maximum concurrent limit
/// … reached"; seen back to back with 4 slots). With this room the pool
/// never fills. And the sessions' parked instances.
fn monty_instances(chains: u32, parked: u32) -> u32 {
    chains
        .saturating_add(1)
        .saturating_add(decommit_backlog())
        .saturating_add(parked)
}

/// Instances of the CPython pool for `chains` chains and `parked`
/// sessions' instances: one more than chains, the spare (a finished
/// chain's store, dropped on another thread, keeps its chain's slot
/// permit); and the sessions' parked instances.
fn cpython_instances(chains: u32, parked: u32) -> u32 {
    chains.saturating_add(1).saturating_add(parked)
}

/// Errors creating an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime rejected the configuration or the module. The message
    /// carries wasmtime's whole chain of causes (`{:#}`): `wasmtime::Error`
    /// is not a `std::error::Error`, so it cannot be this error's `source`.
    #[error("wasmtime: {0:#}")]
    Wasmtime(wasmtime::Error),
    /// This host cannot run a guest (the CPython guest's guard page needs
    /// memory pages of 4 to 64 KiB).
    #[error("this host cannot run the guest: {0}")]
    Host(PageSizeError),
    /// The CPython guest was built without interruption points, so its
    /// chains could not be stopped.
    #[error(transparent)]
    Unstoppable(#[from] UnstoppableGuest),
    /// The thread of a guest's housekeeper could not be started.
    #[error("could not start the {guest} housekeeper: {source}")]
    Housekeeper {
        /// Which guest's (`monty`, `CPython`).
        guest: &'static str,
        /// Why the thread was refused.
        source: std::io::Error,
    },
    /// Building the CPython guest panicked (or its task was cancelled).
    #[error("building the CPython guest failed: {0}")]
    CpythonBuild(tokio::task::JoinError),
    /// The CPython guest could not be built: the error its first build
    /// gave, which every later chain that needs it shares.
    #[error(transparent)]
    Cpython(Arc<EngineError>),
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

impl From<wasmtime::Error> for EngineError {
    fn from(e: wasmtime::Error) -> Self {
        EngineError::Wasmtime(e)
    }
}

/// What every chain of an engine runs on, built once.
pub(crate) struct Core {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) pre: InstancePre<ChainState>,
    /// The engine's chain slots (`max_concurrent_chains`): a chain waits
    /// here for one, after its guest's ([`Core::slot`]).
    slots: Arc<Semaphore>,
    /// Each guest's chain slots: as many as its budgets hold (`budget.rs`).
    monty_slots: Arc<Semaphore>,
    cpython_chain_slots: Arc<Semaphore>,
    /// How many chains of each guest may hold a slot at once.
    capacity: Capacity,
    pub(crate) artifacts: Arc<dyn ArtifactStore>,
    /// Learned from the warm-up chain before the engine exists (empty if
    /// prefaulting is off or the warm-up failed); mapped in before every chain.
    pub(crate) hot_pages: HotPages,
    /// Whether freed pool slots keep the pages their chain wrote, reset in
    /// place ([`keep_written_pages_resident`]): then a chain's pages are
    /// mapped in already, and prefaulting them would only cost time.
    pub(crate) keeps_written_pages: bool,
    /// Which freed slots of its pool keep their pages.
    pub(crate) warm: WarmSlots,
    /// The CPython guest, compiled (or loaded from the cache) on the first
    /// chain that needs it, so engines whose chains all run on monty never
    /// pay for it.
    cpython: OnceCell<Result<Arc<CpythonGuest>, Arc<EngineError>>>,
    /// CPython chains that may run at once (its pool's size, but for the
    /// spare and the parked sessions).
    cpython_slots: u32,
    /// Where compiled guests are cached; `None` if the directory is not
    /// this user's alone (see [`crate::snapshot::private_cache_dir`]).
    cache_dir: Option<PathBuf>,
    stop_ticker: Arc<AtomicBool>,
    /// What a spare's store holds until a chain takes it.
    placeholder: Placeholder,
    /// Drops finished chains' stores and makes the next monty instance
    /// ahead of its chain (see [`crate::housekeeper`]).
    pub(crate) housekeeper: Housekeeper<MontyInstance>,
    /// Sessions' instances kept for their next cell (`parked.rs`).
    pub(crate) parked: ParkedSessions,
    /// The check before each chain, with its warm type checkers.
    pub(crate) checker: crate::check::Checker,
    /// How many instances `parked` may hold (each pool has as many slots
    /// more than chains).
    max_warm_sessions: u32,
}

/// How many sessions' instances an engine keeps warm, and how much linear
/// memory they may hold between them ([`crate::EngineConfig`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WarmSessions {
    pub(crate) max: u32,
    pub(crate) max_bytes: u64,
}

impl Default for WarmSessions {
    fn default() -> Self {
        WarmSessions {
            max: DEFAULT_WARM_SESSIONS,
            max_bytes: DEFAULT_WARM_SESSION_BYTES,
        }
    }
}

/// [`crate::EngineConfig::max_warm_sessions`]'s default.
pub const DEFAULT_WARM_SESSIONS: u32 = 16;

/// [`crate::EngineConfig::max_warm_session_bytes`]'s default.
pub const DEFAULT_WARM_SESSION_BYTES: u64 = 1 << 30;

/// A monty instance ready for its chain: instantiated, its hot pages mapped
/// in, its `_start` not yet called (nothing of any script has run in it).
/// Made for its chain, or ahead of it as the spare.
pub(crate) struct MontyInstance {
    pub(crate) store: wasmtime::Store<ChainState>,
    pub(crate) memory: Option<wasmtime::Memory>,
    /// What runs the chain: `_start`, or `chainbox_next` on an instance
    /// that ran a session's cell already (`parked.rs`).
    pub(crate) start: wasmtime::TypedFunc<(), ()>,
    /// Its `chainbox_next`, for a session's next cell on this instance
    /// (`None`: a guest without it, whose sessions are always replayed).
    pub(crate) next: Option<wasmtime::TypedFunc<(), ()>>,
}

/// What CPython chains run on: their own wasmtime engine (the component
/// model, and instances sized for CPython rather than the monty pool's
/// slots) with the component pre-linked, and its housekeeper (see
/// [`crate::housekeeper`]): a fresh CPython instance costs ~1.5 ms to
/// instantiate (libpython's function table, the component's glue) and its
/// first run ~6 ms more in copy-on-write faults of the snapshot's heap,
/// both off a chain's path when it takes a spare made and warmed ahead.
pub(crate) struct CpythonGuest {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) pre: wasmtime::component::InstancePre<ChainState>,
    /// Stops its chains over their CPU limit or total timeout.
    pub(crate) watchdog: Arc<Watchdog>,
    /// The threads its chains run on (one per running chain).
    pub(crate) threads: Arc<GuestThreads>,
    /// What a spare's store holds until a chain takes it: no tools (but
    /// the warm-up's own), deny-all approval; its workspace is the
    /// directory its chain will adopt.
    placeholder: Placeholder,
    pub(crate) housekeeper: Housekeeper<Spare>,
    /// Which freed slots of its pool keep their pages.
    pub(crate) warm: WarmSlots,
}

/// An instance made before its chain was known, and a workspace
/// directory for that chain.
pub(crate) struct Spare {
    pub(crate) store: wasmtime::Store<ChainState>,
    pub(crate) run: wasmtime::component::TypedFunc<(String,), (String,)>,
    /// The directory preopened as the spare's `/workspace`: the chain that
    /// takes the spare must adopt it as its own.
    pub(crate) workspace: tempfile::TempDir,
}

/// What a spare's store holds until a chain takes it and `bind` replaces
/// it: the warm-up tool only, deny-all approval, the engine's memory cap.
struct Placeholder {
    registry: ToolRegistry,
    policy: Arc<ChainPolicy>,
    artifacts: Arc<MemoryArtifactStore>,
}

impl Placeholder {
    fn new() -> Self {
        let policy = ChainPolicy {
            max_memory_bytes: MAX_MEMORY_BYTES,
            ..ChainPolicy::default()
        };
        let warm_up = Arc::new(WarmUpTool(crate::tools::ToolInfo::new(
            "warm_up",
            "The spare instance's warm-up call.",
            serde_json::json!({"type": "object"}),
        )));
        let registry =
            ToolRegistry::from_local([warm_up as Arc<dyn crate::tools::Tool>]).expect("one tool, a valid name");
        Placeholder {
            registry,
            policy: Arc::new(policy),
            artifacts: Arc::new(MemoryArtifactStore::new()),
        }
    }

    /// What a spare is made for: a chain of `script` on `interpreter`, in
    /// `workspace` (a temporary directory made on use if `None`), with a
    /// session of its own (its trace dies with it).
    fn setup<'a>(
        &'a self,
        script: &'a str,
        workspace: Option<PathBuf>,
        interpreter: Interpreter,
    ) -> sandbox::ChainSetup<'a> {
        let session = Arc::new(
            crate::invoker::InvokerSession::new(
                "spare".into(),
                self.registry.clone(),
                self.policy.clone(),
                Approval::deny_all(),
                self.artifacts.clone(),
            )
            .untraced(),
        );
        sandbox::ChainSetup {
            script,
            cells: None,
            continued: false,
            registry: &self.registry,
            policy: &self.policy,
            session,
            workspace: Arc::new(std::sync::Mutex::new(crate::workspace::Workspace::new(workspace))),
            meters: sandbox::Meters::new(&self.policy, None),
            interpreter,
            seed: None,
        }
    }
}

/// The one tool of a spare's warm-up run, `warm_up()`: returns `None`.
struct WarmUpTool(crate::tools::ToolInfo);

/// What a spare runs before any chain: one awaited tool call (the path
/// every call takes, host and guest) and an answer.
const WARM_UP_SCRIPT: &str = "await warm_up()\n1 + 1";

#[async_trait::async_trait]
impl crate::tools::Tool for WarmUpTool {
    fn info(&self) -> &crate::tools::ToolInfo {
        &self.0
    }
    async fn execute(
        &self,
        _ctx: crate::tools::ToolContext,
        _args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
        Ok(crate::tools::ToolOutput::Value(serde_json::Value::Null))
    }
}

/// Why an instance for a chain (or a spare) could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstanceError {
    /// The chain's store could not be built.
    #[error(transparent)]
    Store(#[from] sandbox::StoreError),
    /// wasmtime could not instantiate the guest.
    #[error("could not start the sandbox: {0:#}")]
    Instantiate(wasmtime::Error),
    /// The guest lacks the export a chain starts it by.
    #[error("the guest has no `{name}` export: {source:#}")]
    NoEntryPoint {
        /// The export (`_start`, `run`).
        name: &'static str,
        /// What wasmtime said.
        source: wasmtime::Error,
    },
    /// A CPython spare's workspace directory could not be made.
    #[error("no workspace directory for a spare: {0}")]
    SpareWorkspace(std::io::Error),
    /// A CPython spare's warm-up run failed.
    #[error("the spare's warm-up run failed: {0:#}")]
    WarmUp(wasmtime::Error),
    /// The CPython guest could not be built.
    #[error("the CPython guest is unavailable: {0}")]
    CpythonUnavailable(Arc<EngineError>),
}

/// The CPython guest's `run` export: the run request in, the finish out.
pub(crate) type RunExport = wasmtime::component::TypedFunc<(String,), (String,)>;

impl CpythonGuest {
    /// A fresh CPython instance for the chain of `setup`, and its `run`.
    pub(crate) async fn instantiate(
        &self,
        setup: sandbox::ChainSetup<'_>,
    ) -> Result<(wasmtime::Store<ChainState>, RunExport), InstanceError> {
        let mut store = sandbox::new_store(&self.engine, setup)?;
        let making = self.warm.making().await;
        let instance = (self.pre.instantiate_async(&mut store).await).map_err(InstanceError::Instantiate)?;
        let run = (instance.get_typed_func::<(String,), (String,)>(&mut store, "run"))
            .map_err(|source| InstanceError::NoEntryPoint { name: "run", source })?;
        // Where its memory is, its guest tells when it first runs.
        store.data_mut().slot = self.warm.unplaced();
        drop(making);
        Ok((store, run))
    }

    async fn instantiate_spare(&self) -> Result<Spare, InstanceError> {
        // The chain's workspace is made now and preopened in the spare, so
        // the warm-up also lists the preopens and enters `/workspace` (~0.2
        // ms of WASI calls) instead of the chain; the chain adopts it.
        let workspace =
            (tempfile::Builder::new().prefix("chainbox-ws-").tempdir()).map_err(InstanceError::SpareWorkspace)?;
        let setup = self.placeholder.setup(
            WARM_UP_SCRIPT,
            Some(workspace.path().to_path_buf()),
            Interpreter::Cpython,
        );
        let (mut store, run) = self.instantiate(setup).await?;
        // One small chain in the spare (a `warm_up()` call and `1 + 1`):
        // it writes the pages of the snapshot's heap that every chain
        // writes (refcounts are everywhere), and those a tool call writes,
        // so their copy-on-write faults (~720 for a trivial chain, ~180
        // more for its first call, ~8 µs each in this VM: most of a fresh
        // instance's start) happen here, off the chain's path. The chain then runs as
        // the second `run` of this instance, on state that is the snapshot
        // plus this fixed, trusted warm-up; nothing of any other chain.
        let request = store.data_mut().take_request();
        let warmed = run.call_async(&mut store, (request,)).await;
        let memory = store.data().cpython_memory();
        if let Err(e) = warmed {
            self.warm.freed(store.data().slot, memory);
            return Err(InstanceError::WarmUp(e));
        }
        if let Some(memory) = memory {
            let slot = self.warm.place(store.data().slot, memory);
            store.data_mut().slot = slot;
        }
        Ok(Spare { store, run, workspace })
    }
}

impl Guest for CpythonGuest {
    type Spare = Spare;

    type Error = InstanceError;

    fn make_spare(&self, runtime: &tokio::runtime::Runtime) -> Result<Spare, InstanceError> {
        runtime.block_on(self.instantiate_spare())
    }

    fn trim(&self) {
        self.warm.trim();
    }

    fn housekeeper(&self) -> &Housekeeper<Spare> {
        &self.housekeeper
    }
}

impl Guest for Core {
    type Spare = MontyInstance;

    type Error = InstanceError;

    fn make_spare(&self, runtime: &tokio::runtime::Runtime) -> Result<MontyInstance, InstanceError> {
        // Nothing runs in it: the script is the chain's, given by `bind`.
        let setup = self.placeholder.setup("", None, Interpreter::Monty);
        runtime.block_on(self.instantiate(setup))
    }

    fn trim(&self) {
        self.warm.trim();
    }

    fn housekeeper(&self) -> &Housekeeper<MontyInstance> {
        &self.housekeeper
    }
}

/// A chain's instance, on either guest, ready for its script.
pub(crate) enum Instance {
    /// A monty instance; its `_start` runs the chain.
    Monty(MontyInstance),
    /// A CPython instance; its `run` export, called with the run request,
    /// runs the chain.
    Cpython {
        /// Its store, bound to the chain.
        store: wasmtime::Store<ChainState>,
        /// Its `run` export.
        run: RunExport,
        /// The guest it belongs to (watchdog, threads, housekeeper).
        guest: Arc<CpythonGuest>,
    },
}

impl Core {
    /// The instance for the chain of `setup` on its interpreter: the
    /// guest's spare when it fits the chain (its memory within the chain's
    /// limit; for CPython, a chain that can adopt the spare's workspace
    /// directory), bound to the chain, else a fresh one (the unfit spare
    /// retired), its randomness started from the chain's seed. The one
    /// place a chain's store is made or bound.
    pub(crate) async fn instance_for(&self, setup: sandbox::ChainSetup<'_>) -> Result<Instance, InstanceError> {
        let seed = setup.seed;
        if setup.interpreter == Interpreter::Monty {
            let spare = self.housekeeper.take_spare();
            let instance = match spare {
                Some(spare) if sandbox::fits(&spare.store, setup.policy) => MontyInstance {
                    store: sandbox::bind(spare.store, setup),
                    ..spare
                },
                unfit => {
                    if let Some(spare) = unfit {
                        self.warm.freed(spare.store.data().slot, None);
                        self.housekeeper.retire(Box::new(spare));
                    }
                    self.instantiate(setup).await?
                }
            };
            sandbox::start_randomness(&instance.store, seed);
            return Ok(Instance::Monty(instance));
        }
        let guest = (self.cpython().await).map_err(|e| InstanceError::CpythonUnavailable(Arc::clone(e)))?;
        let spare = guest.housekeeper.take_spare();
        // The spare's `/workspace` is the directory it was made with: a
        // chain with a directory of its own (given, or made already) needs
        // a fresh instance.
        let workspace = setup.workspace.clone();
        let adoptable = workspace.lock().unwrap_or_else(|p| p.into_inner()).can_adopt();
        let (store, run) = match spare {
            Some(spare) if sandbox::fits(&spare.store, setup.policy) && adoptable => {
                workspace
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .adopt(spare.workspace);
                (sandbox::bind(spare.store, setup), spare.run)
            }
            unfit => {
                if let Some(spare) = unfit {
                    guest
                        .warm
                        .freed(spare.store.data().slot, spare.store.data().cpython_memory());
                    guest.housekeeper.retire(Box::new(spare));
                }
                guest.instantiate(setup).await?
            }
        };
        sandbox::start_randomness(&store, seed);
        Ok(Instance::Cpython {
            store,
            run,
            guest: guest.clone(),
        })
    }

    /// A monty instance for the chain of `setup`, its hot pages mapped in.
    async fn instantiate(&self, setup: sandbox::ChainSetup<'_>) -> Result<MontyInstance, InstanceError> {
        let mut store = sandbox::new_store(&self.engine, setup)?;
        let making = self.warm.making().await;
        let instance = (self.pre.instantiate_async(&mut store).await).map_err(InstanceError::Instantiate)?;
        let start = (instance.get_typed_func::<(), ()>(&mut store, "_start"))
            .map_err(|source| InstanceError::NoEntryPoint { name: "_start", source })?;
        let next = (instance.get_typed_func::<(), ()>(&mut store, chainbox_protocol::imports::NEXT_EXPORT)).ok();
        let memory = instance.get_memory(&mut store, "memory");
        // A slot whose memory is not known keeps every trim off until it
        // is freed.
        store.data_mut().slot = match memory {
            Some(memory) => self.warm.placed(memory.data_ptr(&store) as usize),
            None => self.warm.unplaced(),
        };
        if let Some(memory) = memory {
            // SAFETY: the chain's own linear memory, live with `store`; the
            // guest has not run yet, so nothing grows it meanwhile.
            unsafe { self.hot_pages.apply(memory.data_ptr(&store), memory.data_size(&store)) };
        }
        drop(making);
        Ok(MontyInstance {
            store,
            memory,
            start,
            next,
        })
    }

    /// The CPython guest, built on first use.
    pub(crate) async fn cpython(&self) -> Result<&Arc<CpythonGuest>, &Arc<EngineError>> {
        if let Some(built) = self.cpython.get() {
            return built.as_ref();
        }
        let dir = self.cache_dir.clone();
        let stop = self.stop_ticker.clone();
        let slots = self.cpython_slots;
        let parked = self.max_warm_sessions;
        let guest = self
            .cpython
            .get_or_init(|| async move {
                let built = tokio::task::spawn_blocking(move || CpythonGuest::new(dir, stop, slots, parked)).await;
                built
                    .unwrap_or_else(|e| Err(EngineError::CpythonBuild(e)))
                    .map_err(Arc::new)
            })
            .await;
        guest.as_ref()
    }
}

impl CpythonGuest {
    fn new(
        cache_dir: Option<PathBuf>,
        stop_ticker: Arc<AtomicBool>,
        chains: u32,
        parked: u32,
    ) -> Result<Arc<Self>, EngineError> {
        // Its chains are stopped through a page of the host's size: a host
        // whose pages the guest's guard span does not cover is refused.
        sandbox::guard_page_len().map_err(EngineError::Host)?;
        let slots = cpython_instances(chains, parked);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(CPYTHON_CORE_INSTANCES))
            .total_memories(slots.saturating_mul(CPYTHON_MEMORIES))
            .total_tables(slots.saturating_mul(CPYTHON_TABLES))
            .total_stacks(slots)
            .max_core_instances_per_component(CPYTHON_CORE_INSTANCES)
            .max_memories_per_component(CPYTHON_MEMORIES)
            .max_tables_per_component(CPYTHON_TABLES)
            .max_memory_size(MAX_MEMORY_BYTES as usize)
            .table_elements(CPYTHON_TABLE_ELEMENTS)
            // A chain's store is dropped on the housekeeper's thread, so its
            // reset (an madvise) can be immediate; batched, freed slots sat
            // in the queue while a burst of chains wanted them.
            .decommit_batch_size(1);
        let keeps_written_pages =
            keep_written_pages_resident(&mut pool, CPYTHON_KEEP_RESIDENT, CPYTHON_TABLE_KEEP_RESIDENT);
        let mut wasm = wasmtime::Config::new();
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // No epoch checks: they cost CPU-bound CPython a quarter of its
        // time; the guest's own interruption points and the watchdog stop
        // it instead (`sandbox::Interrupt`), tracking host code by the
        // call hook.
        wasm.epoch_interruption(false)
            .max_wasm_stack(CPYTHON_WASM_STACK)
            .async_stack_size(CPYTHON_WASM_STACK + (1 << 20))
            .cranelift_opt_level(wasmtime::OptLevel::Speed)
            .wasm_component_model(true)
            // Instances are made ahead of their chains (the spare): filling
            // libpython's function table there is cheaper than each first
            // indirect call of a chain faulting its entry in, with
            // `vendor/wasmtime`; without it each entry costs two searches
            // (`probe::eager_tables`).
            .table_lazy_init(!probe::eager_tables());
        let engine = wasmtime::Engine::new(&wasm)?;
        let name = format!("chainbox-cpython-{}.cwasm", cache_key(&engine, CPYTHON_WASM));
        let load = |p: &Path| deserialize_component_file(&engine, p);
        let dir = cache_dir.as_deref();
        let component = cached_or_compiled(dir, &name, load, || {
            let compiled = engine.precompile_component(CPYTHON_WASM)?;
            cache(dir, &name, &compiled, load, || {
                // SAFETY: `compiled` was produced just now by this engine.
                unsafe { Component::deserialize(&engine, &compiled) }
            })
        })?;
        sandbox::check_cpython_guest(&engine, &component)?;
        let mut linker = wasmtime::component::Linker::new(&engine);
        sandbox::add_to_component_linker(&mut linker)?;
        let pre = linker.instantiate_pre(&component)?;
        let guest = Arc::new(CpythonGuest {
            engine,
            pre,
            watchdog: Watchdog::start(EPOCH_TICK, stop_ticker),
            threads: GuestThreads::new(chains),
            placeholder: Placeholder::new(),
            housekeeper: Housekeeper::new(),
            warm: WarmSlots::new(keeps_written_pages, MAX_MEMORY_BYTES as usize),
        });
        Housekeeper::start(&guest, "chainbox-cpython-housekeeper").map_err(|source| EngineError::Housekeeper {
            guest: "CPython",
            source,
        })?;
        Ok(guest)
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
        self.housekeeper.shut_down();
        if let Some(Ok(guest)) = self.cpython.get() {
            guest.housekeeper.shut_down();
        }
    }
}

impl Core {
    /// The monty guest loaded (from the cache in `cache_dir`, else the
    /// platform's, or compiled), linked and pooled for as many of
    /// `max_concurrent_chains` chains as `budgets` hold
    /// ([`Core::capacity`]), its epoch ticker running; the CPython guest is
    /// loaded on first use ([`Core::cpython`]). No hot pages yet and no
    /// housekeeper: see [`Core::start`].
    pub(crate) fn new(
        cache_dir: Option<PathBuf>,
        max_concurrent_chains: u32,
        artifacts: Option<Arc<dyn ArtifactStore>>,
        warm_sessions: WarmSessions,
        budgets: &Budgets,
    ) -> Result<Core, EngineError> {
        let slots = max_concurrent_chains.max(1);
        let parked = warm_sessions.max;
        let capacity = size_guests(budgets, slots, parked);
        let instances = monty_instances(capacity.monty, parked);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_core_instances(instances)
            .total_memories(instances)
            .total_tables(instances)
            .total_stacks(instances)
            .max_memory_size(MAX_MEMORY_BYTES as usize)
            // Measured on the trivial chain (examples/profile.rs): keeping the
            // first MiB of linear memory resident cost a 1 MiB memset per
            // chain (the guest's shadow stack sits there, mostly untouched)
            // and took start from ~65 µs to ~190 µs; the ~20 pages a chain
            // really touches are cheaper to fault back in. The table is
            // small and always touched, so it stays resident.
            .linear_memory_keep_resident(0)
            .table_keep_resident(64 << 10)
            .decommit_batch_size(DECOMMIT_BATCH);
        let keeps_written_pages = keep_written_pages_resident(&mut pool, MONTY_KEEP_RESIDENT, 64 << 10);
        let mut wasm = wasmtime::Config::new();
        wasm.epoch_interruption(true)
            .max_wasm_stack(MAX_WASM_STACK)
            .async_stack_size(MAX_WASM_STACK + (1 << 20))
            .cranelift_opt_level(wasmtime::OptLevel::Speed)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = wasmtime::Engine::new(&wasm)?;
        let cache_dir = cache_dir.unwrap_or_else(crate::snapshot::default_cache_dir);
        let cache_dir = match crate::snapshot::private_cache_dir(&cache_dir) {
            Ok(()) => Some(cache_dir),
            Err(e) => {
                tracing::warn!("compiling the guests without a cache: {e}");
                None
            }
        };
        let module = load_module(&engine, cache_dir.as_deref())?;
        let mut linker: Linker<ChainState> = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)?;
        let pre = linker.instantiate_pre(&module)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop_ticker.clone());
        Ok(Core {
            engine,
            pre,
            slots: Arc::new(Semaphore::new(slots as usize)),
            monty_slots: Arc::new(Semaphore::new(capacity.monty as usize)),
            cpython_chain_slots: Arc::new(Semaphore::new(capacity.cpython as usize)),
            capacity,
            artifacts: artifacts.unwrap_or_else(|| Arc::new(MemoryArtifactStore::new())),
            hot_pages: HotPages::default(),
            keeps_written_pages,
            warm: WarmSlots::new(keeps_written_pages, MAX_MEMORY_BYTES as usize),
            cpython: OnceCell::new(),
            cpython_slots: capacity.cpython,
            cache_dir,
            stop_ticker,
            placeholder: Placeholder::new(),
            housekeeper: Housekeeper::new(),
            parked: ParkedSessions::new(warm_sessions.max, warm_sessions.max_bytes),
            checker: crate::check::Checker::default(),
            max_warm_sessions: warm_sessions.max,
        })
    }

    /// How many chains of each guest may hold a slot at once.
    pub(crate) fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// Waits for a slot for a chain on `interpreter`: first one of its
    /// guest's (so a chain waiting for a CPython slot holds none of the
    /// engine's that a monty chain could run in), then one of the
    /// engine's. Waits as long as it takes: the chain's total timeout
    /// bounds it. `None`: the engine is shutting down.
    pub(crate) async fn slot(&self, interpreter: Interpreter) -> Option<ChainSlot> {
        let guest = match interpreter {
            Interpreter::Monty => &self.monty_slots,
            Interpreter::Cpython => &self.cpython_chain_slots,
        };
        let guest = guest.clone().acquire_owned().await.ok()?;
        let engine = self.slots.clone().acquire_owned().await.ok()?;
        Some(ChainSlot {
            _guest: guest,
            _engine: engine,
        })
    }

    /// Starts the core's housekeeper and asks it for the first spare.
    pub(crate) fn start(self) -> Result<Arc<Core>, EngineError> {
        let core = Arc::new(self);
        Housekeeper::start(&core, "chainbox-monty-housekeeper")
            .map_err(|source| EngineError::Housekeeper { guest: "monty", source })?;
        core.housekeeper.request_spare();
        Ok(core)
    }
}

/// A chain's hold on a slot of its guest and of the engine
/// ([`Core::slot`]): kept until its store is dropped, which frees its
/// instance's pool slot.
pub(crate) struct ChainSlot {
    _guest: OwnedSemaphorePermit,
    _engine: OwnedSemaphorePermit,
}

/// How many chains of each guest an engine of `max_chains` chain slots and
/// `parked` sessions' instances may run at once with `budgets`
/// (`budget.rs`); logged, once per engine.
fn size_guests(budgets: &Budgets, max_chains: u32, parked: u32) -> Capacity {
    let monty = budget::Demand {
        cost: budget::MONTY,
        slots: &|chains| monty_instances(chains, parked),
    };
    let cpython = budget::Demand {
        cost: budget::CPYTHON,
        slots: &|chains| cpython_instances(chains, parked),
    };
    let sizing = budget::size(budgets, max_chains, &monty, &cpython);
    let capacity = sizing.capacity;
    let show = |b: Option<u64>| b.map_or_else(|| "unknown".to_owned(), |b| b.to_string());
    let bound = |b: Option<&'static str>| b.unwrap_or("max_concurrent_chains");
    tracing::info!(
        max_concurrent_chains = max_chains,
        monty = capacity.monty,
        monty_bound = bound(sizing.monty_bound),
        cpython = capacity.cpython,
        cpython_bound = bound(sizing.cpython_bound),
        maps_left = %show(budgets.maps),
        threads_left = %show(budgets.threads),
        fds_left = %show(budgets.fds),
        memory_left = %show(budgets.memory),
        address_space_left = %show(budgets.address_space),
        "chain slots sized from the process's budgets"
    );
    if sizing.starved {
        tracing::warn!(
            "the process's budgets do not hold even one chain of each guest \
             (monty bound by {}, CPython by {}); each gets one slot anyway",
            bound(sizing.monty_bound),
            bound(sizing.cpython_bound),
        );
    }
    capacity
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
        tracing::error!("could not start the epoch ticker: {e}; CPU limits will not fire");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn an_engine_error_from_wasmtime_keeps_every_cause_in_its_message() {
        let error = EngineError::from(wasmtime::Error::msg("the root cause").context("what failed"));
        assert!(matches!(error, EngineError::Wasmtime(_)), "{error:?}");
        assert_eq!(error.to_string(), "wasmtime: what failed: the root cause");
    }

    #[test]
    fn a_failed_cpython_build_reads_the_same_to_prepare_cpython_as_it_did_when_built() {
        let built = Arc::new(EngineError::Host(PageSizeError::Unsupported(1 << 20)));
        let prepared = EngineError::Cpython(Arc::clone(&built));
        assert_eq!(prepared.to_string(), built.to_string());
        assert!(
            prepared.to_string().starts_with("this host cannot run the guest: "),
            "{prepared}"
        );
    }

    /// A replay of a chain may land on the spare instance (made and warmed
    /// before its chain) or on a fresh one: a seeded CPython chain draws
    /// the same values on either.
    #[test]
    fn a_seeded_cpython_chain_draws_the_same_on_a_spare_as_on_a_fresh_instance() {
        let runtime = runtime();
        let core = Core::new(None, 1, None, WarmSessions::default(), &Budgets::of_process())
            .and_then(Core::start)
            .expect("core");
        let guest = Arc::clone(runtime.block_on(core.cpython()).expect("the CPython guest"));
        guest.housekeeper.request_spare();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !guest.housekeeper.peek_spare(|spare| spare.is_some()) {
            assert!(std::time::Instant::now() < deadline, "no spare was made");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let policy = ChainPolicy {
            python: crate::policy::PythonChoice::Cpython,
            ..ChainPolicy::default()
        };
        let script = "import os, random, secrets, uuid\n[random.random(), random.getrandbits(64), str(uuid.uuid4()), os.urandom(8).hex(), secrets.token_hex(8), random.Random().random()]";
        let run = |workspace: Option<PathBuf>| {
            let options = crate::chain::RunOptions {
                seed: Some(46),
                workspace,
                ..crate::chain::RunOptions::default()
            };
            let registry = ToolRegistry::new();
            let r = runtime.block_on(crate::chain::run(
                &core,
                script,
                &registry,
                &policy,
                &Approval::deny_all(),
                options,
            ));
            assert!(r.is_ok(), "{r:?}");
            r.output
        };
        // The one chain slot's spare is ready: the first chain takes it; a
        // chain given a workspace of its own starts a fresh instance.
        let on_spare = run(None);
        let dir = tempfile::tempdir().expect("a workspace");
        let on_fresh = run(Some(dir.path().to_path_buf()));
        assert_eq!(on_spare, on_fresh);
    }

    /// Private pages of this process mapped in `start..start + len`, from
    /// `/proc/self/pagemap` (present, not file-backed).
    #[cfg(target_os = "linux")]
    fn private_pages(start: usize, len: usize) -> usize {
        use std::io::{Read, Seek};
        let page = 4096;
        let mut map = std::fs::File::open("/proc/self/pagemap").expect("pagemap");
        map.seek(std::io::SeekFrom::Start((start / page * 8) as u64))
            .expect("seek");
        let mut entries = vec![0u8; len / page * 8];
        map.read_exact(&mut entries).expect("read");
        entries
            .as_chunks::<8>()
            .0
            .iter()
            .map(|e| u64::from_le_bytes(*e))
            .filter(|e| e >> 63 & 1 == 1 && e >> 61 & 1 == 0)
            .count()
    }

    /// Bytes of a CPython memory the page tests look at: past what a
    /// warmed spare uses.
    #[cfg(target_os = "linux")]
    const CPYTHON_SPAN: usize = 64 << 20;

    /// A warmed CPython spare of a fresh engine, and its memory's address;
    /// `None` where the pool does not keep written pages (no
    /// `PAGEMAP_SCAN`: freed slots are decommitted).
    #[cfg(target_os = "linux")]
    fn warmed_cpython_spare(runtime: &tokio::runtime::Runtime) -> Option<(Arc<Core>, Spare, usize)> {
        let core = Core::new(None, 1, None, WarmSessions::default(), &Budgets::of_process())
            .and_then(Core::start)
            .expect("core");
        if !core.keeps_written_pages {
            return None;
        }
        let guest = Arc::clone(runtime.block_on(core.cpython()).expect("the CPython guest"));
        let spare = runtime.block_on(guest.instantiate_spare()).expect("a spare");
        let memory = spare.store.data().cpython_memory().expect("its guest ran");
        Some((core, spare, memory))
    }

    /// A freed CPython slot keeps the pages its instance wrote, reset, and
    /// no others. wasmtime 50.0.1's reset also took never-touched pages
    /// for written ones and made the whole memory resident (~5,500 pages
    /// where a warmed spare writes ~700): `vendor/wasmtime` carries the fix.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_freed_cpython_slot_keeps_only_the_pages_its_instance_wrote() {
        let runtime = runtime();
        let Some((_core, spare, memory)) = warmed_cpython_spare(&runtime) else {
            return;
        };
        let written = private_pages(memory, CPYTHON_SPAN);
        drop(spare);
        let kept = private_pages(memory, CPYTHON_SPAN);
        assert!(written > 100, "{written} pages written");
        assert!(kept <= written, "{kept} pages kept of {written} written");
    }

    /// A CPython spare's warm-up chain (`1 + 1`) writes few pages of its
    /// snapshot: the snapshot's objects are immortal (the build's
    /// `immortal` pass), so counting references to them writes nothing.
    /// It wrote ~700 pages before, ~260 since.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_warmed_cpython_spare_wrote_few_pages_of_its_snapshot() {
        let huge_pages = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|mode| mode.contains("[always]"));
        let runtime = runtime();
        let Some((_core, _spare, memory)) = warmed_cpython_spare(&runtime).filter(|_| !huge_pages) else {
            return; // pages are not counted one by one here
        };
        let written = private_pages(memory, CPYTHON_SPAN);
        assert!(written < 400, "{written} pages written");
    }

    /// After a burst, the housekeeper gives back the pages of the slots
    /// freed first and keeps the last [`warm::IDLE_WARM_SLOTS`] warm
    /// (wasmtime keeps every freed slot's pages otherwise).
    #[cfg(target_os = "linux")]
    #[test]
    fn after_a_burst_only_the_slots_freed_last_keep_their_pages() {
        let runtime = runtime();
        let burst = warm::IDLE_WARM_SLOTS + 6;
        let core = Core::new(
            None,
            burst as u32,
            None,
            WarmSessions::default(),
            &Budgets::of_process(),
        )
        .and_then(Core::start)
        .expect("core");
        if !core.keeps_written_pages {
            return; // no PAGEMAP_SCAN here: freed slots are decommitted
        }
        // The spare the engine asked for at start takes a slot too: made
        // during the burst, it would take a slot freed first (wasmtime
        // hands out the slot freed last) and keep its pages in use.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !core.housekeeper.peek_spare(|spare| spare.is_some()) {
            assert!(std::time::Instant::now() < deadline, "no spare was made");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let instances: Vec<MontyInstance> = (0..burst)
            .map(|_| {
                let setup = core.placeholder.setup("", None, Interpreter::Monty);
                let mut instance = runtime.block_on(core.instantiate(setup)).expect("an instance");
                // What a chain would write: a few pages of its memory.
                let memory = instance.memory.expect("a memory");
                for page in memory.data_mut(&mut instance.store).chunks_mut(1 << 20) {
                    page[0] = 1;
                }
                instance
            })
            .collect();
        let span = 16 << 20;
        let memories: Vec<usize> = instances
            .iter()
            .map(|i| i.memory.expect("a memory").data_ptr(&i.store) as usize)
            .collect();
        for instance in instances {
            core.warm.freed(instance.store.data().slot, None);
            core.housekeeper.retire(Box::new(instance));
        }
        let first = burst - warm::IDLE_WARM_SLOTS;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while memories[..first].iter().any(|&m| private_pages(m, span) > 0) {
            assert!(
                std::time::Instant::now() < deadline,
                "no trim gave the first slots back"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for &m in &memories[first..] {
            assert!(private_pages(m, span) > 0, "a slot freed last was given back");
        }
    }

    #[test]
    fn a_chain_that_needs_a_cpython_guest_that_failed_to_build_is_told_why() {
        let built = Arc::new(EngineError::Unstoppable(UnstoppableGuest));
        let error = InstanceError::CpythonUnavailable(built).to_string();
        assert!(
            error.starts_with("the CPython guest is unavailable: the CPython guest does not import"),
            "{error}"
        );
    }
}
