//! The engine: the public face of chainbox's runtime. One [`Engine`] per
//! process serves any number of concurrent chains; it holds the compiled
//! guests ([`crate::guests`]) and runs each chain with [`crate::chain`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::approval::Approval;
use crate::artifacts::ArtifactStore;
use crate::chain::{self, RunOptions};
pub use crate::guests::{Budgets, Capacity, EngineError};
use crate::guests::{Core, WarmSessions};
use crate::policy::ChainPolicy;
use crate::prefault::HotPages;
use crate::result::ChainRunResult;
pub use crate::sandbox::{PageSizeError, UnstoppableGuest};
use crate::tools::ToolRegistry;

/// Settings of an [`Engine`].
#[derive(Clone)]
pub struct EngineConfig {
    /// Where the precompiled guest is cached. Default: `$CHAINBOX_CACHE_DIR`,
    /// else the platform's per-user cache directory + `chainbox`
    /// (`$XDG_CACHE_HOME` or `~/.cache` on Linux), else the system temp dir.
    pub cache_dir: Option<PathBuf>,
    /// Chains that may run at once (pool slots); more wait for a slot.
    /// Each guest gets fewer where the process's [`budgets`](Self::budgets)
    /// hold fewer of its chains ([`Engine::capacity`]).
    pub max_concurrent_chains: u32,
    /// Where offloaded results and media go unless a run says otherwise;
    /// an in-memory store by default.
    pub artifacts: Option<Arc<dyn ArtifactStore>>,
    /// Map the guest pages every chain touches in before it starts (see
    /// [`crate::prefault`]); on by default. Off: no warm-up chain at
    /// creation, and each chain faults its pages in one by one. Moot where
    /// the pool keeps each slot's written pages resident (Linux 6.7+, see
    /// `guests`): nothing is learned or mapped there.
    pub prefault: bool,
    /// Sessions whose instance stays parked after a cell, so their next
    /// cell on this engine continues it instead of replaying the session
    /// (see `docs/sessions.md`); the least recently used go first. 0: every
    /// cell replays. Each pool has this many instances more.
    pub max_warm_sessions: u32,
    /// Linear memory the parked instances may hold between them, in bytes.
    pub max_warm_session_bytes: u64,
    /// What the process has left of the budgets its chains draw on (memory
    /// mappings, threads, file descriptors, memory, address space), from
    /// which each guest's slots are sized ([`Engine::capacity`]). `None`:
    /// read from the OS when the engine is built ([`Budgets::of_process`]),
    /// after raising the soft `RLIMIT_NOFILE` to the hard limit. Give less
    /// to keep room for something else in the process (another engine
    /// counts what this one's pools hold when it starts, not what this
    /// one's chains will add).
    pub budgets: Option<Budgets>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            cache_dir: None,
            max_concurrent_chains: 1000,
            artifacts: None,
            prefault: true,
            max_warm_sessions: crate::guests::DEFAULT_WARM_SESSIONS,
            max_warm_session_bytes: crate::guests::DEFAULT_WARM_SESSION_BYTES,
            budgets: None,
        }
    }
}

/// Runs chains. Build one per process and share it (it is cheap to clone).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Core>,
}

impl Engine {
    /// An engine with the default configuration.
    pub fn new() -> Result<Self, EngineError> {
        Self::with_config(EngineConfig::default())
    }

    /// An engine with this configuration.
    pub fn with_config(config: EngineConfig) -> Result<Self, EngineError> {
        let warm = WarmSessions {
            max: config.max_warm_sessions,
            max_bytes: config.max_warm_session_bytes,
        };
        let budgets = config.budgets.unwrap_or_else(|| {
            crate::guests::raise_fd_limit();
            Budgets::of_process()
        });
        let mut core = Core::new(
            config.cache_dir,
            config.max_concurrent_chains,
            config.artifacts,
            warm,
            &budgets,
        )?;
        // A pool that keeps each slot's written pages needs no prefaulting:
        // they are mapped in already (and mapping them again cost a trivial
        // chain ~3 µs).
        if config.prefault && !core.keeps_written_pages {
            core.hot_pages = learn_hot_pages(&core);
        }
        Ok(Engine { inner: core.start()? })
    }

    /// Drops the instance this engine keeps parked for `session`'s next
    /// cell, if any (the session has ended).
    pub(crate) fn forget_session(&self, session: &str) {
        self.inner.forget_session(session);
    }

    /// How many chains of each guest may hold a slot at once: its
    /// [`EngineConfig::max_concurrent_chains`], or fewer where the
    /// process's budgets hold fewer (see `docs/sandbox.md`). Chains beyond
    /// wait for a slot; one still waiting at its total timeout ends with
    /// kind `timeout`.
    pub fn capacity(&self) -> Capacity {
        self.inner.capacity()
    }

    /// Whether a finished chain's pool slot keeps the pages the chain
    /// wrote, reset in place, for the slot's next chain (docs/sandbox.md).
    /// False where the kernel has no `PAGEMAP_SCAN` (Linux before 6.7), or
    /// where this build's wasmtime would make every page of a reset slot
    /// resident: the registry's wasmtime 50.0.1, which a crate depending on
    /// chainbox builds (vendor/README.md; logged at `warn` when the engine
    /// starts). Freed slots are then decommitted.
    pub fn keeps_written_pages(&self) -> bool {
        self.inner.keeps_written_pages
    }

    /// The engine's default artifact store, where chains' offloaded results
    /// and media live unless a run supplied its own.
    pub fn artifacts(&self) -> &Arc<dyn ArtifactStore> {
        &self.inner.artifacts
    }

    /// Compiles (or loads from the cache) the CPython guest now, instead of
    /// on the first chain that needs it, and makes its first spare
    /// instance: for servers and benchmarks that want no first-chain pause.
    pub async fn prepare_cpython(&self) -> Result<(), EngineError> {
        match self.inner.cpython().await {
            Ok(guest) => {
                guest.housekeeper.request_spare();
                Ok(())
            }
            Err(e) => Err(EngineError::Cpython(Arc::clone(e))),
        }
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

    /// Runs one chain (see [`crate::chain`] for its life). Never fails:
    /// every outcome is a [`ChainRunResult`] with the trace of the calls made.
    pub async fn run_with(
        &self,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
        options: RunOptions,
    ) -> ChainRunResult {
        chain::run(&self.inner, script, registry, policy, approval, options).await
    }
}

/// Runs one trivial chain on `core` before the engine exists and learns the
/// guest's hot pages from it (see [`crate::prefault`]). On its own thread
/// and runtime: the caller may be inside an async runtime, where blocking on
/// another is refused. If it fails, chains just start without them.
fn learn_hot_pages(core: &Core) -> HotPages {
    let learned = std::thread::scope(|scope| {
        let warm = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(chain::run_for_memory(core, "1 + 1", |memory| {
                HotPages::learn(memory.as_ptr(), memory.len())
            }))
        });
        warm.join().ok().flatten()
    });
    let hot = learned.unwrap_or_else(|| {
        tracing::warn!("the warm-up chain failed; chains start without prefaulted pages");
        HotPages::default()
    });
    tracing::debug!("{} hot guest pages learned", hot.pages());
    hot
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn dropping_the_engine_removes_the_workspaces_it_made() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 1,
            ..EngineConfig::default()
        })
        .expect("engine");
        runtime.block_on(engine.prepare_cpython()).expect("the CPython guest");
        let guest = Arc::clone(runtime.block_on(engine.inner.cpython()).expect("built"));
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let dir = loop {
            if let Some(dir) = guest
                .housekeeper
                .peek_spare(|s| s.map(|s| s.workspace.path().to_path_buf()))
            {
                break dir;
            }
            assert!(std::time::Instant::now() < deadline, "no spare was made");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(dir.is_dir());
        drop(guest);
        // A chain takes the spare and its directory; its store (which holds
        // the workspace) goes to the housekeeper after the answer.
        let policy = ChainPolicy {
            python: crate::policy::PythonChoice::Cpython,
            ..ChainPolicy::default()
        };
        let approval = Approval::deny_all();
        let r = runtime.block_on(engine.run("1 + 1", &ToolRegistry::new(), &policy, &approval));
        assert!(r.is_ok(), "{r:?}");
        drop(engine);
        assert!(!dir.exists(), "{} outlived its engine", dir.display());
    }

    fn hot_pages(prefault: bool) -> usize {
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 1,
            prefault,
            ..EngineConfig::default()
        })
        .expect("engine");
        engine.inner.hot_pages.pages()
    }

    #[test]
    fn a_new_engine_learns_the_hot_pages_of_its_warm_up_chain_unless_its_pool_keeps_them() {
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 1,
            ..EngineConfig::default()
        })
        .expect("engine");
        let pages = engine.inner.hot_pages.pages();
        if engine.inner.keeps_written_pages {
            assert_eq!(pages, 0);
        } else {
            // The shadow stack's top and the first heap/statics pages: a
            // few, not the whole memory.
            assert!((1..=64).contains(&pages), "{pages} pages");
        }
    }

    #[test]
    fn an_engine_without_prefault_learns_no_pages() {
        assert_eq!(hot_pages(false), 0);
    }
}
