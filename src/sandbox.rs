//! One chain inside wasmtime: its `Store`, its limits, its workspace, and the
//! host side of the guest contract (`chainbox_protocol::imports`).
//!
//! Invariants:
//! - This is the only module that reads or writes guest memory. Every read is
//!   length-capped and bounds-checked before anything parses it.
//! - Limits that end a chain are recorded in [`ChainState`] before the trap
//!   that enforces them, so the trap is classified from facts, not from
//!   error strings.
//! - The guest has no WASI capabilities beyond clocks and randomness: no
//!   environment, no arguments, no preopened host paths, no sockets. Its
//!   files are served through the `os` import by `monty-fs`, confined to the
//!   chain's workspace directory, which is created on first use.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chainbox_protocol::{
    CallOutcome, Completions, Finish, FsOutcome, GuestLimits, MAX_GUEST_MESSAGE_BYTES, PROTOCOL_VERSION, RunRequest,
    ToolCall, ToolDecl, decode, encode, imports,
};
use monty_fs::MountCallOutcome;
use monty_types::{ExcType, MontyException, MontyObject, OsFunctionCall};
use tokio::task::JoinSet;
use wasmtime::{Caller, Linker, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::chain::{ChainError, ErrorKind, Usage};
use crate::invoker::{BudgetExceeded, InvokerSession};
use crate::policy::ChainPolicy;
use crate::tools::{ToolRegistry, schema_params};
use crate::workspace::Workspace;

/// Deepest Python recursion allowed in a script. Monty's default; the wasm
/// stack (see `engine::MAX_WASM_STACK`) is sized to hold it.
const MAX_RECURSION_DEPTH: u32 = 1000;

/// Share of `max_memory_bytes` given to the interpreter's own (catchable)
/// `MemoryError` limit; the rest is headroom before the hard wasm cap traps.
const SOFT_MEMORY_SHARE: f64 = 0.75;

/// A CPU-bound chain yields its thread every this many epoch ticks
/// (`engine::EPOCH_TICK` each): often enough for fairness and for the total
/// deadline to fire promptly, rarely enough not to slow the script down.
const TICKS_PER_YIELD: u64 = 5;

/// Per-chain state held by the wasmtime `Store`.
pub(crate) struct ChainState {
    wasi: WasiP1Ctx,
    session: Arc<InvokerSession>,
    /// The run request, handed to the guest once.
    request: Option<Vec<u8>>,
    /// The last message staged for the guest's `take`.
    staged: Vec<u8>,
    /// Calls started with `start`, running concurrently with the script.
    running: JoinSet<(u32, CallOutcome)>,
    /// Task id → the guest's id for that call, to report a crashed task.
    running_ids: HashMap<tokio::task::Id, u32>,
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
}

/// A reason the host ended the chain from inside a host call.
#[derive(Debug, Clone)]
pub(crate) enum Fatal {
    Budget(BudgetExceeded),
    Protocol(String),
}

impl ChainState {
    fn stage(&mut self, bytes: Vec<u8>) -> i32 {
        self.staged = bytes;
        self.staged.len() as i32
    }

    fn fail(&mut self, fatal: Fatal) -> wasmtime::Error {
        let message = match &fatal {
            Fatal::Budget(b) => b.to_string(),
            Fatal::Protocol(m) => m.clone(),
        };
        self.fatal.get_or_insert(fatal);
        wasmtime::Error::msg(message)
    }
}

/// Text kept up to a byte cap; the rest is counted and dropped.
#[derive(Debug, Default)]
pub(crate) struct BoundedText {
    text: String,
    cap: usize,
    total: u64,
    truncated: bool,
}

impl BoundedText {
    fn new(cap: usize) -> Self {
        BoundedText {
            cap,
            ..Default::default()
        }
    }

    fn push(&mut self, s: &str) {
        self.total += s.len() as u64;
        let room = self.cap.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&s[..cut]);
            self.truncated = true;
        }
    }
}

/// What a chain has printed and used so far. Shared between the store and
/// the engine so that it outlives the store: when the total timeout drops a
/// running chain, the stdout and usage up to that moment still reach the
/// result.
#[derive(Debug)]
pub(crate) struct Meters {
    clock: Arc<CpuClock>,
    stdout: Mutex<BoundedText>,
    peak_memory: AtomicU64,
}

impl Meters {
    pub(crate) fn new(policy: &ChainPolicy) -> Arc<Self> {
        Arc::new(Meters {
            clock: Arc::new(CpuClock::new(policy.max_cpu())),
            stdout: Mutex::new(BoundedText::new(
                usize::try_from(policy.max_stdout_bytes).unwrap_or(usize::MAX),
            )),
            peak_memory: AtomicU64::new(0),
        })
    }

    fn stdout(&self) -> std::sync::MutexGuard<'_, BoundedText> {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The usage so far, and the captured stdout (taken, so call it once).
    pub(crate) fn take(&self) -> (Usage, String) {
        self.clock.pause();
        let mut stdout = self.stdout();
        let usage = Usage {
            peak_memory_bytes: self.peak_memory.load(Ordering::Relaxed),
            cpu_ms: crate::chain::millis(self.clock.used()),
            stdout_bytes: stdout.total,
            stdout_truncated: stdout.truncated,
        };
        (usage, std::mem::take(&mut stdout.text))
    }
}

/// Caps linear memory growth at the policy's `max_memory_bytes` and
/// records the peak (in the chain's [`Meters`]) and whether the cap was hit.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    meters: Arc<Meters>,
    hit: bool,
}

/// The error a denied memory growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit exceeded: the script needed more than {limit} bytes (max_memory_bytes)")]
pub(crate) struct MemoryLimitExceeded {
    limit: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Err(MemoryLimitExceeded { limit: self.limit }.into());
        }
        self.meters.peak_memory.fetch_max(desired as u64, Ordering::Relaxed);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// The script's CPU time: wall time while guest code runs, excluding host
/// calls and the moments the chain is parked at a yield.
#[derive(Debug)]
pub(crate) struct CpuClock {
    origin: Instant,
    limit: Duration,
    /// Nanoseconds since `origin` when the current guest stretch began.
    segment_start: AtomicU64,
    /// Nanoseconds of guest time before the current stretch.
    used: AtomicU64,
    exceeded: AtomicBool,
    /// Whether a guest stretch is open; pausing twice must not count the
    /// time in between (a host call) as CPU.
    running: AtomicBool,
    /// Epoch ticks seen while the guest ran.
    ticks: AtomicU64,
}

impl CpuClock {
    fn new(limit: Duration) -> Self {
        CpuClock {
            origin: Instant::now(),
            limit,
            segment_start: AtomicU64::new(0),
            used: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
            running: AtomicBool::new(true),
            ticks: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The guest stops running (a host call or a yield).
    fn pause(&self) {
        if !self.running.swap(false, Ordering::Relaxed) {
            return;
        }
        let now = self.now();
        let start = self.segment_start.swap(now, Ordering::Relaxed);
        self.used.fetch_add(now.saturating_sub(start), Ordering::Relaxed);
    }

    /// The guest runs again.
    fn resume(&self) {
        self.segment_start.store(self.now(), Ordering::Relaxed);
        self.running.store(true, Ordering::Relaxed);
    }

    fn used(&self) -> Duration {
        Duration::from_nanos(self.used.load(Ordering::Relaxed))
    }
}

/// Everything a run needs that the engine does not own.
pub(crate) struct ChainSetup<'a> {
    pub script: &'a str,
    pub registry: &'a ToolRegistry,
    pub policy: &'a ChainPolicy,
    pub session: Arc<InvokerSession>,
    pub workspace: Arc<Mutex<Workspace>>,
    pub meters: Arc<Meters>,
}

/// Builds the store for one chain, with its limits armed.
pub(crate) fn new_store(engine: &wasmtime::Engine, setup: ChainSetup<'_>) -> Store<ChainState> {
    let policy = setup.policy;
    let tools = setup
        .registry
        .iter()
        .map(|tool| ToolDecl {
            name: tool.name().to_owned(),
            params: tool
                .as_local()
                .map(|t| schema_params(t.input_schema()))
                .unwrap_or_default(),
        })
        .collect();
    let soft = (policy.max_memory_bytes as f64 * SOFT_MEMORY_SHARE) as u64;
    let request = RunRequest {
        version: PROTOCOL_VERSION,
        script: setup.script.to_owned(),
        tools,
        limits: GuestLimits {
            max_memory_bytes: soft,
            max_recursion_depth: MAX_RECURSION_DEPTH,
        },
    };
    // No env, no args, no preopens, no network; stdio closed.
    let wasi = WasiCtxBuilder::new().build_p1();
    let meters = setup.meters;
    let state = ChainState {
        wasi,
        session: setup.session,
        request: Some(encode(&request)),
        staged: Vec::new(),
        running: JoinSet::new(),
        running_ids: HashMap::new(),
        done: Vec::new(),
        meters: meters.clone(),
        finish: None,
        fatal: None,
        memory: MemoryLimiter {
            limit: usize::try_from(policy.max_memory_bytes).unwrap_or(usize::MAX),
            meters,
            hit: false,
        },
        guest_memory: None,
        workspace: setup.workspace,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.memory);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |ctx| {
        let clock = ctx.data().meters.clock.clone();
        clock.pause();
        if clock.used() > clock.limit {
            clock.exceeded.store(true, Ordering::Relaxed);
            return Err(wasmtime::Error::msg("cpu limit exceeded"));
        }
        // Every few ticks, let other chains on this thread run (and the
        // outer deadline fire); yielding on every tick costs CPU-bound
        // scripts dearly, so most ticks only count time.
        if clock.ticks.fetch_add(1, Ordering::Relaxed) % TICKS_PER_YIELD != 0 {
            clock.resume();
            return Ok(UpdateDeadline::Continue(1));
        }
        Ok(UpdateDeadline::YieldCustom(
            1,
            Box::pin(async move {
                tokio::task::yield_now().await;
                clock.resume();
            }),
        ))
    });
    store
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
    let error = match (error, &state.finish) {
        (Some(e), _) => Some(e),
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

fn classify_trap(state: &ChainState, err: &wasmtime::Error) -> ChainError {
    if let Some(fatal) = &state.fatal {
        return match fatal {
            Fatal::Budget(b) => ChainError::new(ErrorKind::ToolBudget, "ToolBudgetExceeded", b.to_string()),
            Fatal::Protocol(m) => ChainError::new(ErrorKind::Crash, "ProtocolError", m.clone()),
        };
    }
    if state.meters.clock.exceeded.load(Ordering::Relaxed) {
        return ChainError::new(
            ErrorKind::Cpu,
            "CpuLimitExceeded",
            format!(
                "the script used more than {}s of CPU (max_cpu_s)",
                state.meters.clock.limit.as_secs_f64()
            ),
        );
    }
    if state.memory.hit {
        return ChainError::new(
            ErrorKind::Memory,
            "MemoryLimitExceeded",
            format!(
                "the script needed more than {} bytes of memory (max_memory_bytes)",
                state.memory.limit
            ),
        );
    }
    let message = match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::StackOverflow) => "the script overflowed the sandbox stack".to_owned(),
        Some(trap) => format!("the sandbox trapped: {trap}"),
        None => format!("the sandbox failed: {err}"),
    };
    ChainError::new(ErrorKind::Crash, "SandboxCrash", message)
}

/// Runs `f` on the `len` bytes at `ptr` in guest memory, in place (no copy),
/// refusing oversize or out-of-bounds requests.
fn with_guest_bytes<R>(
    caller: &mut Caller<'_, ChainState>,
    ptr: i32,
    len: i32,
    f: impl FnOnce(&[u8]) -> R,
) -> wasmtime::Result<R> {
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    if len > MAX_GUEST_MESSAGE_BYTES {
        let e = format!("guest message of {len} bytes exceeds the {MAX_GUEST_MESSAGE_BYTES}-byte limit");
        return Err(caller.data_mut().fail(Fatal::Protocol(e)));
    }
    let Some(memory) = caller.data().guest_memory else {
        return Err(caller
            .data_mut()
            .fail(Fatal::Protocol("guest exports no memory".into())));
    };
    let result = ptr
        .checked_add(len)
        .and_then(|end| memory.data(&caller).get(ptr..end))
        .map(f);
    result.ok_or_else(|| {
        caller
            .data_mut()
            .fail(Fatal::Protocol("guest passed an out-of-bounds buffer".into()))
    })
}

/// Decodes the guest's `what` message at `ptr`, straight from its memory.
fn decode_guest<T: serde::de::DeserializeOwned>(
    caller: &mut Caller<'_, ChainState>,
    what: &'static str,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<T> {
    let decoded = with_guest_bytes(caller, ptr, len, |bytes| decode::<T>(what, bytes))?;
    decoded.map_err(|e| caller.data_mut().fail(Fatal::Protocol(e.to_string())))
}

/// Registers the `chainbox` host imports (and the WASI preview 1 functions)
/// on the engine's linker.
pub(crate) fn add_to_linker(linker: &mut Linker<ChainState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p1::add_to_linker_async(linker, |s: &mut ChainState| &mut s.wasi)?;
    let m = imports::MODULE;

    linker.func_wrap(m, imports::REQUEST, |mut caller: Caller<'_, ChainState>| -> i32 {
        let state = caller.data_mut();
        let request = state.request.take().unwrap_or_default();
        state.stage(request)
    })?;

    linker.func_wrap(
        m,
        imports::TAKE,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let staged = std::mem::take(&mut caller.data_mut().staged);
            if len as u32 as usize != staged.len() {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest asked for the wrong message length".into())));
            }
            let Some(memory) = caller.data().guest_memory else {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest exports no memory".into())));
            };
            if memory.write(&mut caller, ptr as u32 as usize, &staged).is_err() {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest passed an out-of-bounds buffer".into())));
            }
            Ok(())
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::CALL,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let call: ToolCall = decode_guest(&mut caller, "tool call", ptr, len)?;
                let state = caller.data_mut();
                let session = state.session.clone();
                let clock = state.meters.clock.clone();
                let admitted = session
                    .admit(call)
                    .map_err(|b| caller.data_mut().fail(Fatal::Budget(b)))?;
                clock.pause();
                let outcome = session.run(admitted).await;
                clock.resume();
                Ok(caller.data_mut().stage(encode(&outcome)))
            })
        },
    )?;

    linker.func_wrap(
        m,
        imports::START,
        |mut caller: Caller<'_, ChainState>, id: i32, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let call: ToolCall = decode_guest(&mut caller, "tool call", ptr, len)?;
            let state = caller.data_mut();
            let session = state.session.clone();
            let admitted = session.admit(call).map_err(|b| state.fail(Fatal::Budget(b)))?;
            let id = id as u32;
            let handle = state.running.spawn(async move { (id, session.run(admitted).await) });
            state.running_ids.insert(handle.id(), id);
            Ok(())
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::WAIT,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let ids: Vec<u32> = decode_guest(&mut caller, "wait ids", ptr, len)?;
                let clock = caller.data().meters.clock.clone();
                clock.pause();
                let done = collect(caller.data_mut(), &ids).await;
                clock.resume();
                Ok(caller.data_mut().stage(encode(&Completions { done })))
            })
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::OS,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let call: OsFunctionCall = decode_guest(&mut caller, "os call", ptr, len)?;
                let clock = caller.data().meters.clock.clone();
                clock.pause();
                let outcome = os_call(caller.data_mut(), call).await;
                clock.resume();
                Ok(caller.data_mut().stage(encode(&outcome)))
            })
        },
    )?;

    linker.func_wrap(
        m,
        imports::LOAD_ARTIFACT,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<i32> {
            let handle: serde_json::Value = decode_guest(&mut caller, "artifact handle", ptr, len)?;
            let state = caller.data_mut();
            let outcome = state.session.load_artifact(&handle);
            Ok(state.stage(encode(&outcome)))
        },
    )?;

    linker.func_wrap(
        m,
        imports::STDOUT,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let text = with_guest_bytes(&mut caller, ptr, len, |bytes| {
                String::from_utf8_lossy(bytes).into_owned()
            })?;
            caller.data().meters.stdout().push(&text);
            Ok(())
        },
    )?;

    linker.func_wrap(
        m,
        imports::FINISH,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let finish: Finish = decode_guest(&mut caller, "finish", ptr, len)?;
            caller.data_mut().finish = Some(finish);
            Ok(())
        },
    )?;
    Ok(())
}

/// Waits until at least one of `ids` has finished and returns every one of
/// them that has.
async fn collect(state: &mut ChainState, ids: &[u32]) -> Vec<(u32, CallOutcome)> {
    loop {
        let (ready, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut state.done)
            .into_iter()
            .partition(|(id, _)| ids.contains(id));
        state.done = rest;
        if !ready.is_empty() {
            return ready;
        }
        match state.running.join_next_with_id().await {
            Some(Ok((task, (id, outcome)))) => {
                state.running_ids.remove(&task);
                state.done.push((id, outcome));
            }
            Some(Err(e)) => {
                if let Some(id) = state.running_ids.remove(&e.id()) {
                    let message = "the tool call's task failed".to_owned();
                    state.done.push((id, CallOutcome::Error { message }));
                }
            }
            None => {
                // Nothing is running: the guest waits for calls it never
                // started. Answer instead of hanging.
                return ids
                    .iter()
                    .map(|id| {
                        let message = format!("call {id} was never started");
                        (*id, CallOutcome::Error { message })
                    })
                    .collect();
            }
        }
    }
}

/// Serves one OS request of the interpreter: workspace files and sleeps.
async fn os_call(state: &mut ChainState, call: OsFunctionCall) -> FsOutcome {
    match call {
        OsFunctionCall::Sleep(d) | OsFunctionCall::SystemSleep(d) | OsFunctionCall::AsyncSleep(d) => {
            // Parks this chain only; the chain's deadline still bounds it.
            tokio::time::sleep(d).await;
            return Ok(MontyObject::none());
        }
        OsFunctionCall::AsyncSystemSleep(d) => {
            tokio::time::sleep(d).await;
            return Ok(MontyObject::none());
        }
        _ => {}
    }
    if call.fs_primary_path().is_none() {
        return Err(call.on_no_handler());
    }
    let mut workspace = state.workspace.lock().unwrap_or_else(|p| p.into_inner());
    let mounts = match workspace.mounts() {
        Ok(m) => m,
        Err(e) => return Err(MontyException::new(ExcType::OSError, Some(e))),
    };
    match mounts.handle_os_call(call) {
        MountCallOutcome::Handled(Ok(value)) => Ok(value),
        MountCallOutcome::Handled(Err(err)) => Err(err.into_exception()),
        MountCallOutcome::NotHandled(call) => Err(call.on_no_handler()),
    }
}
