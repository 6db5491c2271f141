//! One chain inside wasmtime: its `Store` (the same [`ChainState`] for
//! both guests: the monty module and the CPython component) and how its
//! run ended. The host side of the guest contract is [`imports`]; the
//! chain's limits and what it used are [`meters`]; the CPython guest's
//! workspace write quota is [`quota`]; the C math library both guests
//! compute floats with is [`c_math`]; how a CPython guest is stopped is
//! [`interrupt`] (the monty guest's epoch callback is in [`new_store`]);
//! where its randomness comes from is [`entropy`].
//!
//! Invariants:
//! - Only [`imports`] reads or writes guest memory. Every read is
//!   length-capped and bounds-checked before anything parses it.
//!   [`interrupt`] only changes one page's protection, and never while
//!   host code runs for the guest.
//! - Limits that end a chain are recorded (in [`ChainState`] or its
//!   [`Meters`]) before the trap that enforces them, so the trap is
//!   classified from facts, not from error strings.
//! - The guest has no WASI capabilities beyond clocks and randomness (the
//!   chain's own generator, seeded per chain: [`entropy`]): no
//!   environment, no arguments, no sockets, no host paths but the chain's
//!   workspace. The monty guest's files are served through the `os` import
//!   by `monty-fs`, confined to the workspace directory, which is created on
//!   first use; the CPython guest gets that directory preopened as
//!   `/workspace` (created before it starts), its only one.

mod c_math;
mod entropy;
mod imports;
mod interrupt;
mod meters;
mod quota;

use entropy::{Entropy, Source};
pub use imports::UnstoppableGuest;
pub(crate) use imports::{add_to_component_linker, add_to_linker, check_cpython_guest};
pub use interrupt::PageSizeError;
pub(crate) use interrupt::{Interrupt, Reason, Stopped, Watchdog, guard_page_len};
pub(crate) use meters::Meters;
use meters::{MemoryLimiter, Tick};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chainbox_protocol::{
    CallOutcome, Finish, GuestLimits, MAX_GUEST_MESSAGE_BYTES, PROTOCOL_VERSION, RunRequest, ToolDecl, encode,
};
use tokio::task::JoinSet;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::invoker::{InvokerSession, Refused};
use crate::journal::JournalError;
use crate::policy::ChainPolicy;
use crate::python_choice::Interpreter;
use crate::result::{ChainError, ErrorKind, Usage};
use crate::tools::{ToolRegistry, schema_params};
use crate::workspace::{WORKSPACE, Workspace, WorkspaceError};

/// Deepest Python recursion allowed in a script. Monty's default; the wasm
/// stack (see `guests::MAX_WASM_STACK`) is sized to hold it.
const MAX_RECURSION_DEPTH: u32 = 1000;

/// How far below `max_memory_bytes` monty's own memory limit lies: an
/// eighth of it, at least 8 MiB, room for what monty's count of its heap
/// leaves out (the guest's ~4 MiB baseline, its allocator's 4 MiB
/// headroom). Either stop, monty's or the wasm memory's, ends the chain
/// with the same error ([`memory_limit_exceeded`]); monty's comes first for
/// most scripts and refuses a huge allocation before it is attempted.
fn monty_memory_limit(max_memory_bytes: u64) -> u64 {
    let reserve = (max_memory_bytes / 8).max(8 << 20);
    max_memory_bytes.checked_sub(reserve).unwrap_or(max_memory_bytes / 2)
}

/// A CPU-bound monty chain yields its thread every this many epoch ticks
/// (`guests::EPOCH_TICK` each): often enough for fairness and for the total
/// deadline to fire promptly, rarely enough not to slow the script down.
const TICKS_PER_YIELD: u64 = 5;

/// Per-chain state held by the wasmtime `Store`.
pub(crate) struct ChainState {
    wasi: WasiP1Ctx,
    /// Restarts the generator `wasi` draws randomness from, for the chain
    /// ([`start_randomness`]).
    entropy: Entropy,
    session: Arc<InvokerSession>,
    /// The run request, handed to the guest once.
    request: Option<Vec<u8>>,
    /// The last message staged for the guest's `take`.
    staged: Vec<u8>,
    /// Calls started with `start`, running concurrently with the script.
    running: JoinSet<(u32, CallOutcome)>,
    /// Task id → the guest's id for that call, to report a crashed task.
    running_ids: HashMap<tokio::task::Id, u32>,
    /// The guest's id of a call still running → its task and its trace
    /// slot, to stop it when the script cancels it.
    cancellable: HashMap<u32, (tokio::task::AbortHandle, usize)>,
    /// Finished concurrent calls the guest has not collected yet.
    done: Vec<(u32, CallOutcome)>,
    meters: Arc<Meters>,
    finish: Option<Finish>,
    /// Why the host ended the chain, if it did.
    fatal: Option<Fatal>,
    memory: MemoryLimiter,
    /// The guest's exported linear memory, looked up once after
    /// instantiation (a by-name export lookup per host call showed up in
    /// profiles).
    pub(crate) guest_memory: Option<wasmtime::Memory>,
    workspace: Arc<Mutex<Workspace>>,
    /// Bytes the CPython guest has written into its workspace through WASI
    /// (the monty guest's are counted by `monty-fs`); see [`quota`].
    written: u64,
    /// How the CPython guest is stopped (see [`interrupt`]); the monty
    /// guest's epoch callback does that for it.
    pub(crate) interrupt: Option<Arc<Interrupt>>,
    /// The host address of the CPython instance's guard page, once its
    /// guest has armed it; kept for the instance's later chains.
    guard_page: usize,
    /// The instance's pool slot, as its guest's warm-slot tracker knows
    /// it; kept for the instance's later chains.
    pub(crate) slot: Slot,
}

impl ChainState {
    /// The host address of the CPython guest's linear memory, once the
    /// guest has told it (arming its guard page).
    pub(crate) fn cpython_memory(&self) -> Option<usize> {
        (self.guard_page != 0).then(|| self.guard_page - interrupt::GUARD_PAGE_OFFSET)
    }
}

/// Where a chain's store sits in its guest's pool, as the guest's tracker
/// of warm slots (`guests::warm`) knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Slot {
    /// Not tracked: its pool keeps no pages (its guest's tracker was made
    /// disabled), or the store was never placed.
    #[default]
    Untracked,
    /// Made, its memory's address not known yet (a CPython instance whose
    /// guest has not run).
    Unplaced,
    /// The slot whose linear memory is at this host address.
    At(usize),
}

/// A reason the host ended the chain from inside a host call.
#[derive(Debug, Clone)]
pub(crate) enum Fatal {
    Refused(Refused),
    Protocol(String),
    /// A durable chain suspended at a call (the session's `suspended`).
    Suspended,
    /// The chain's journal could not record a call that ran.
    Journal(JournalError),
}

/// The CPython guest's WASI preview 2 view of the same context the monty
/// guest's preview 1 functions use.
impl WasiView for ChainState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.wasi.ctx()
    }
}

impl ChainState {
    /// The run request, for the CPython guest's `run` (the monty guest
    /// fetches it with `request`/`take`).
    pub(crate) fn take_request(&mut self) -> String {
        String::from_utf8(self.request.take().unwrap_or_default()).unwrap_or_default()
    }

    /// Records the CPython guest's answer to `run`; a malformed one is a
    /// protocol failure, as a malformed `finish` of the monty guest is.
    pub(crate) fn set_finish(&mut self, text: &str) -> wasmtime::Result<()> {
        match chainbox_protocol::decode::<Finish>("finish", text.as_bytes()) {
            Ok(mut finish) => {
                if let chainbox_protocol::ScriptResult::Error(e) = &mut finish.result {
                    // CPython has no memory limit of its own: a MemoryError is
                    // the limit's when the limiter refused a growth.
                    e.memory_limit = e.exc_type == "MemoryError" && self.memory.hit();
                }
                self.finish = Some(finish);
                Ok(())
            }
            Err(e) => Err(self.fail(Fatal::Protocol(e.to_string()))),
        }
    }

    /// Cancels the tool calls still running (what dropping the store does),
    /// for a store whose drop is left to another thread.
    pub(crate) fn cancel_running_calls(&mut self) {
        self.running.abort_all();
    }

    fn stage(&mut self, bytes: Vec<u8>) -> i32 {
        self.staged = bytes;
        self.staged.len() as i32
    }

    fn fail(&mut self, fatal: Fatal) -> wasmtime::Error {
        let message = match &fatal {
            Fatal::Refused(refused) => refused.to_string(),
            Fatal::Protocol(m) => m.clone(),
            Fatal::Suspended => "the chain suspended at a call that waits on a decision".to_owned(),
            Fatal::Journal(failure) => failure.to_string(),
        };
        self.fatal.get_or_insert(fatal);
        wasmtime::Error::msg(message)
    }
}

/// Everything a run needs that the engine does not own.
pub(crate) struct ChainSetup<'a> {
    pub script: &'a str,
    /// A session's earlier cells (`RunRequest::cells`); `None` for a chain.
    pub cells: Option<&'a [String]>,
    /// The earlier cells ran on this instance already, whose last run
    /// kept their namespace (`RunRequest::continued`).
    pub continued: bool,
    pub registry: &'a ToolRegistry,
    pub policy: &'a ChainPolicy,
    pub session: Arc<InvokerSession>,
    pub workspace: Arc<Mutex<Workspace>>,
    pub meters: Arc<Meters>,
    /// Which guest the store is for.
    pub interpreter: Interpreter,
    /// The chain's seed (`RunOptions::seed`), for [`start_randomness`].
    pub seed: Option<u64>,
}

/// Why a chain's store could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// The chain's workspace directory could not be made.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// WASI could not preopen it as `/workspace`.
    #[error("{WORKSPACE} could not be opened: {0:#}")]
    Preopen(wasmtime::Error),
}

/// Builds the store for one chain, with its limits armed.
pub(crate) fn new_store(engine: &wasmtime::Engine, setup: ChainSetup<'_>) -> Result<Store<ChainState>, StoreError> {
    let (entropy, source) = Entropy::new();
    let wasi = wasi_for(&setup, source)?;
    let cpython = setup.interpreter == Interpreter::Cpython;
    let mut store = Store::new(engine, ChainState::for_chain(setup, wasi, entropy));
    store.limiter(|s| &mut s.memory);
    if cpython {
        // What wasmtime lifts from the guest in one host call (a string
        // argument, the `run` export's answer) is refused over this many
        // bytes before it is copied: the monty guest's message limit.
        store.set_hostcall_fuel(MAX_GUEST_MESSAGE_BYTES);
        store.call_hook(|ctx, hook| match &ctx.data().interrupt {
            Some(interrupt) => interrupt.hook(hook),
            None => Ok(()),
        });
        return Ok(store);
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |ctx| {
        let clock = ctx.data().meters.clock.clone();
        // Every few ticks, let other chains on this thread run (and the
        // outer deadline fire); yielding on every tick costs CPU-bound
        // scripts dearly, so most ticks only count time.
        match clock.tick(TICKS_PER_YIELD) {
            Tick::OverLimit => Err(wasmtime::Error::msg("cpu limit exceeded")),
            Tick::Continue => Ok(UpdateDeadline::Continue(1)),
            Tick::Yield => Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    clock.resume();
                }),
            )),
        }
    });
    Ok(store)
}

impl ChainState {
    /// The bytes of linear memory its instance has.
    pub(crate) fn memory_size(&self) -> usize {
        self.memory.current()
    }
}

/// Whether a spare store's instance is within `policy`'s memory limit
/// already (if not, its chain starts on a fresh instance and fails as it
/// would have).
pub(crate) fn fits(store: &Store<ChainState>, policy: &ChainPolicy) -> bool {
    store.data().memory.current() as u64 <= policy.max_memory_bytes
}

/// Gives a spare store (built by [`new_store`] for a placeholder chain and
/// instantiated before its chain was known; check [`fits`] first) to the
/// chain of `setup`: its state is replaced (nothing of the placeholder's
/// session or meters reaches the chain, and its limits start now) but for
/// its WASI context, which carries on (its generator is the chain's once
/// [`start_randomness`] restarts it). A monty spare's is empty; a CPython
/// spare's guest descriptors (the preopened `/workspace` wasi-libc listed,
/// its working directory there) point into it, so that chain's workspace
/// must be the directory the spare was made with.
pub(crate) fn bind(mut store: Store<ChainState>, setup: ChainSetup<'_>) -> Store<ChainState> {
    let size = store.data().memory.current();
    let guard_page = store.data().guard_page;
    let slot = store.data().slot;
    let wasi = std::mem::replace(&mut store.data_mut().wasi, WasiCtxBuilder::new().build_p1());
    let entropy = store.data().entropy.clone();
    *store.data_mut() = ChainState::for_chain(setup, wasi, entropy);
    store.data_mut().memory.grown_to(size);
    store.data_mut().slot = slot;
    match &store.data().interrupt {
        Some(interrupt) => {
            interrupt.rearm(guard_page);
            store.data_mut().guard_page = guard_page;
        }
        None => store.set_epoch_deadline(1),
    }
    store
}

/// Starts the randomness of the chain whose instance `store` is, from its
/// `seed` (see [`entropy`]): once the instance is made or bound, before its
/// guest runs anything of the chain, so what instantiating it or a spare's
/// warm-up drew is no part of the chain's stream.
pub(crate) fn start_randomness(store: &Store<ChainState>, seed: Option<u64>) {
    store.data().entropy.start(seed);
}

/// The WASI context of the chain of `setup`. No env, no args, no network;
/// stdio closed; `randomness` its generator. The monty guest's files go
/// through the `os` import; the CPython guest reads and writes the
/// workspace directory itself, preopened as `/workspace` (WASI's capability
/// model confines it there).
fn wasi_for(setup: &ChainSetup<'_>, randomness: Source) -> Result<WasiP1Ctx, StoreError> {
    let mut wasi = WasiCtxBuilder::new();
    wasi.secure_random(randomness);
    if setup.interpreter == Interpreter::Cpython {
        let dir = {
            let mut workspace = setup.workspace.lock().unwrap_or_else(|p| p.into_inner());
            workspace.dir()?
        };
        wasi.preopened_dir(&dir, WORKSPACE, FsPerms::ReadWrite)
            .map_err(StoreError::Preopen)?;
        // Denied by default already; said here so it stays structural.
        wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        // Workspace file operations run on the chain's own thread, not
        // one round trip through tokio's blocking pool each.
        wasi.allow_blocking_current_thread(true);
    }
    Ok(wasi.build_p1())
}

/// The tools as the guest knows them: each one's name and parameters.
pub(crate) fn tool_decls(registry: &ToolRegistry) -> Vec<ToolDecl> {
    registry
        .iter()
        .map(|tool| ToolDecl {
            name: tool.name().to_owned(),
            params: tool
                .as_local()
                .map(|t| schema_params(t.input_schema()))
                .unwrap_or_default(),
        })
        .collect()
}

/// The limits the guest enforces on itself under `policy`.
pub(crate) fn guest_limits(policy: &ChainPolicy) -> GuestLimits {
    GuestLimits {
        max_memory_bytes: monty_memory_limit(policy.max_memory_bytes),
        max_recursion_depth: MAX_RECURSION_DEPTH,
    }
}

impl ChainState {
    /// The state of a store for the chain of `setup`, with `wasi` drawing
    /// from the source `entropy` restarts (see [`wasi_for`]).
    fn for_chain(setup: ChainSetup<'_>, wasi: WasiP1Ctx, entropy: Entropy) -> ChainState {
        let policy = setup.policy;
        let request = RunRequest {
            version: PROTOCOL_VERSION,
            script: setup.script.to_owned(),
            cells: setup.cells.map(<[String]>::to_vec).unwrap_or_default(),
            tools: tool_decls(setup.registry),
            limits: guest_limits(policy),
            session: setup.cells.is_some(),
            continued: setup.continued,
        };
        let meters = setup.meters;
        let interrupt = (setup.interpreter == Interpreter::Cpython)
            .then(|| Interrupt::new(meters.clock.clone(), std::time::Instant::now() + policy.total_timeout()));
        ChainState {
            wasi,
            entropy,
            session: setup.session,
            request: Some(encode(&request)),
            staged: Vec::new(),
            running: JoinSet::new(),
            running_ids: HashMap::new(),
            cancellable: HashMap::new(),
            done: Vec::new(),
            meters: meters.clone(),
            finish: None,
            fatal: None,
            memory: MemoryLimiter::new(usize::try_from(policy.max_memory_bytes).unwrap_or(usize::MAX), meters),
            guest_memory: None,
            workspace: setup.workspace,
            written: 0,
            interrupt,
            guard_page: 0,
            slot: Slot::default(),
        }
    }
}

/// How the guest run ended, for the chain result.
pub(crate) struct Ending {
    pub finish: Option<Finish>,
    pub error: Option<ChainError>,
    pub stdout: String,
    pub usage: Usage,
}

/// Reads what the store learned once `_start` has returned (`trap` is its error, if any).
pub(crate) fn ending(store: &mut Store<ChainState>, trap: Option<wasmtime::Error>) -> Ending {
    let state = store.data_mut();
    let (usage, stdout) = state.meters.take();
    let error = trap.map(|e| classify_trap(state, &e));
    // The interpreter's own stop at the memory limit (monty's uncatchable
    // `MemoryError`, CPython's `MemoryError` when the limiter refused a
    // growth) reads as the limit's trap does: one type and message, naming
    // the policy's limit, on both guests.
    let limit_line = match &state.finish {
        Some(Finish {
            result: chainbox_protocol::ScriptResult::Error(e),
            ..
        }) if e.memory_limit => Some(e.line),
        _ => None,
    };
    let error = match (error, &state.finish) {
        (Some(e), _) => Some(e),
        (None, Some(_)) if limit_line.is_some() => Some(ChainError {
            line: limit_line.flatten(),
            ..memory_limit_exceeded(state.memory.limit())
        }),
        (None, None) => Some(ChainError::new(
            ErrorKind::Crash,
            "GuestError",
            "the sandbox ended without reporting a result",
        )),
        (None, Some(_)) => None,
    };
    Ending {
        finish: state.finish.take(),
        error,
        stdout,
        usage,
    }
}

/// How wasmtime's refusal to lift more than the store's hostcall fuel
/// begins (its error type is private; the text is pinned with wasmtime's
/// exact version, and `cpython::an_oversized_message_to_the_host_bridge_is_refused_uncopied`
/// checks it).
const HOSTCALL_FUEL_EXHAUSTED: &str = "too much data is being copied between the host and the guest";

fn classify_trap(state: &ChainState, err: &wasmtime::Error) -> ChainError {
    if let Some(fatal) = &state.fatal {
        return match fatal {
            Fatal::Refused(Refused::Budget(b)) => {
                ChainError::new(ErrorKind::ToolBudget, "ToolBudgetExceeded", b.to_string())
            }
            Fatal::Refused(refused @ (Refused::Diverged(_) | Refused::Unjournaled { .. })) => {
                ChainError::new(ErrorKind::ReplayDiverged, "ReplayDiverged", refused.to_string())
            }
            Fatal::Refused(refused @ Refused::NoSuchCell { .. }) => {
                ChainError::new(ErrorKind::Crash, "ProtocolError", refused.to_string())
            }
            Fatal::Protocol(m) => ChainError::new(ErrorKind::Crash, "ProtocolError", m.clone()),
            // The chain's result says `suspended` (the session's pending
            // call); this error is never shown.
            Fatal::Suspended => ChainError::new(ErrorKind::Crash, "Suspended", "suspended"),
            Fatal::Journal(failure) => ChainError::new(ErrorKind::Crash, "JournalError", failure.to_string()),
        };
    }
    if state.meters.clock.exceeded() {
        return ChainError::new(
            ErrorKind::Cpu,
            "CpuLimitExceeded",
            format!(
                "the script used more than {}s of CPU (max_cpu_s)",
                state.meters.clock.limit().as_secs_f64()
            ),
        );
    }
    if state.memory.hit() {
        return memory_limit_exceeded(state.memory.limit());
    }
    if err
        .chain()
        .any(|cause| cause.to_string().starts_with(HOSTCALL_FUEL_EXHAUSTED))
    {
        return ChainError::new(
            ErrorKind::Crash,
            "ProtocolError",
            format!("the guest passed the host a message over the {MAX_GUEST_MESSAGE_BYTES}-byte limit"),
        );
    }
    let message = match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::StackOverflow) => "the script overflowed the sandbox stack".to_owned(),
        Some(trap) => format!("the sandbox trapped: {trap}"),
        None => format!("the sandbox failed: {err}"),
    };
    ChainError::new(ErrorKind::Crash, "SandboxCrash", message)
}

/// The error of a chain stopped at `max_memory_bytes` (`limit`), however
/// the guest met it.
fn memory_limit_exceeded(limit: usize) -> ChainError {
    ChainError::new(
        ErrorKind::Memory,
        "MemoryLimitExceeded",
        format!("the script needed more than {limit} bytes of memory (max_memory_bytes)"),
    )
}
