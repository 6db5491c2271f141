//! One chain's life, top to bottom: **start** (the policy, the workspace,
//! the invoker session and the meters) → **run** (a store in a pool slot,
//! the guest's `_start`, all under the total timeout) → **finish** (what the
//! guest reported, or why it stopped) → **shape** (the output under the
//! result rule, the trace closed, artifacts and files listed).
//!
//! The compile-once parts a chain runs on (the module, the linker, the
//! slots, the hot pages) are the engine's ([`crate::engine`]); what happens
//! inside the store during the run (host imports, limits, meters) is the
//! sandbox's ([`crate::sandbox`]). What a chain returns, the JSON contract,
//! is in [`result`] and re-exported here.
//!
//! Invariant: every path out of [`run`] is a [`ChainRunResult`] carrying a
//! record for every call that passed the budget.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chainbox_protocol::{Finish, ScriptResult};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasmtime::{Memory, Store};

use crate::approval::Approval;
use crate::artifacts::ArtifactStore;
use crate::flow::{FlowTools, FlowVerdict};
use crate::guests::{
    ChainSlot, Core, CpythonGuest, Instance, InstanceError, MAX_MEMORY_BYTES, MontyInstance, NoThread, Parked,
    ParkedEntry, RunExport, WarmKey,
};
use crate::invoker::{InvokerSession, audit_call};
use crate::journal::Journal;
use crate::live::Observer;
use crate::policy::{ChainPolicy, Flow, PythonChoice};
use crate::principal::Principal;
use crate::python_choice::{Interpreter, needs_cpython};
use crate::result::*;
use crate::sandbox::{self, ChainSetup, ChainState, Meters, Reason};
use crate::shaping::{Shaper, preview};
use crate::telemetry;
use crate::tools::ToolRegistry;
use crate::util::millis;
use crate::workspace::Workspace;

/// Why a chain's sandbox could not be started or answered (its result is
/// then a `crash`).
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The engine is being dropped: no slot will come.
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// No instance could be made for it.
    #[error(transparent)]
    Instance(#[from] InstanceError),
    /// No thread could run its CPython guest.
    #[error(transparent)]
    Thread(NoThread),
    /// Its CPython guest's thread ended without handing the run back.
    #[error("the CPython chain's thread ended without its result")]
    ThreadLost,
    /// It was stopped (why) but its CPython guest did not stop.
    #[error("the chain was stopped ({0}) but its CPython guest did not stop; it was answered without it")]
    NotStopped(&'static str),
}

/// Per-run settings beyond the policy.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// A name for logs and approval requests; generated when empty.
    pub run_id: Option<String>,
    /// Use this directory as `/workspace` (kept after the chain). By default
    /// a temporary directory is created on first use and removed afterwards.
    pub workspace: Option<PathBuf>,
    /// Where offloaded results and media go; the engine's store by default.
    pub artifacts: Option<Arc<dyn ArtifactStore>>,
    /// Cancelling this token ends the chain at once, as its total timeout
    /// would: its tool calls in flight are dropped (command tools killed,
    /// MCP servers sent `notifications/cancelled`), no further call runs,
    /// and the result is `error` of kind `cancelled` with the trace so far
    /// (the calls in flight closed as `error`, [`CANCELLED_CALL`]).
    pub cancel: Option<CancellationToken>,
    /// The chain's journal ([`crate::journal`]): every finished tool call is
    /// recorded in it, and the calls it already holds are answered from it
    /// (a resumed chain re-runs its script from the start, its tools do not
    /// run again). `None`: nothing is recorded.
    pub journal: Option<Arc<dyn Journal>>,
    /// The chain's randomness: everything its guest draws from its
    /// entropy (Python's `random` without an explicit seed, `random.Random()`,
    /// `os.urandom`, `uuid.uuid4`, `secrets`, `tempfile`'s names) comes from
    /// a generator (ChaCha20) keyed from this seed, so a replay of the chain
    /// with the same seed (and script, guest and tool answers) sees the same
    /// values. `None`: a fresh key from the OS per chain.
    ///
    /// A seed makes the chain's randomness, `secrets` tokens included,
    /// predictable to whoever holds it (and a `u64` holds at most 64 bits of
    /// entropy): keep it as secret as the journal that stores it.
    pub seed: Option<u64>,
    /// Who sees the chain as it runs: its stdout as it is printed, its
    /// tool calls as they start and finish ([`crate::live`]). `None`:
    /// nothing is sent, and nothing is paid for it.
    pub observer: Option<Observer>,
    /// Who the chain runs for: the authenticated caller whose request
    /// started it (`chainbox serve` with an identity provider). `None`: the
    /// local user, whom no scope restricts. A principal's scopes are
    /// checked against each tool's `required_scopes`
    /// ([`crate::policy::ToolOverride`]); its subject and issuer (never a
    /// token) are on the chain's span (`enduser.id`,
    /// `chainbox.principal.issuer`) and on every call's audit line.
    pub principal: Option<Principal>,
    /// The script is a session's new cell, and these are what came before
    /// it (a session's cell, `Durable::run_cell`): the earlier cells run first, in
    /// the same namespace, their calls answered from the journal. `None`:
    /// a chain.
    pub cells: Option<Cells>,
}

/// A session's earlier cells, for a run of its new cell
/// ([`RunOptions::cells`]). Each cell's calls are numbered from its base
/// (the number of the call before its first), so a cell's calls keep their
/// numbers in the journal whichever cells are replayed before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cells {
    /// The earlier cells kept, oldest first: source and base.
    pub earlier: Vec<(String, u32)>,
    /// The new cell's base.
    pub base: u32,
    /// The session's id: the instance a cell leaves is parked under it
    /// for the session's next cell on this engine, which then continues it
    /// instead of running the earlier cells again (`guests/parked.rs`).
    /// `None`: every cell replays.
    pub session: Option<String>,
}

/// Runs one chain on `core`. Never fails: every outcome is a
/// [`ChainRunResult`] with the trace of the calls made.
///
/// The chain is one [`telemetry::CHAIN_SPAN`], a child of the caller's
/// current span, its tool calls' spans its children (see
/// [`crate::telemetry`]); a chain run for a principal names it there
/// (`enduser.id`: its subject, `chainbox.principal.issuer`: its issuer).
pub(crate) async fn run(
    core: &Core,
    script: &str,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    approval: &Approval,
    options: RunOptions,
) -> ChainRunResult {
    let span = tracing::info_span!(
        telemetry::CHAIN_SPAN,
        chainbox.chain.id = tracing::field::Empty,
        chainbox.interpreter = tracing::field::Empty,
        chainbox.status = tracing::field::Empty,
        error.type = tracing::field::Empty,
        chainbox.tool_calls = tracing::field::Empty,
        chainbox.cpu_ms = tracing::field::Empty,
        chainbox.peak_memory_bytes = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        enduser.id = tracing::field::Empty,
        chainbox.principal.issuer = tracing::field::Empty,
    );
    if let Some(principal) = &options.principal
        && !span.is_disabled()
    {
        span.record("enduser.id", principal.owner.subject.as_str());
        span.record("chainbox.principal.issuer", principal.owner.issuer.as_str());
    }
    let started = Instant::now();
    let result = run_in_span(core, script, registry, policy, approval, options)
        .instrument(span.clone())
        .await;
    if !span.is_disabled() {
        span.record("chainbox.interpreter", result.interpreter.as_str());
        span.record("chainbox.status", result.status.as_str());
        span.record("chainbox.tool_calls", result.tool_calls);
        span.record("chainbox.cpu_ms", result.usage.cpu_ms);
        span.record("chainbox.peak_memory_bytes", result.usage.peak_memory_bytes);
        if let Some(kind) = result.error_kind() {
            span.record("error.type", kind.as_str());
        }
        if !matches!(result.status, ChainStatus::Ok | ChainStatus::Suspended) {
            telemetry::record_error(&span);
        }
    }
    telemetry::chain_ended(result.status.as_str(), result.interpreter.as_str(), started.elapsed());
    result
}

/// [`run`] inside the chain's span.
async fn run_in_span(
    core: &Core,
    script: &str,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    approval: &Approval,
    options: RunOptions,
) -> ChainRunResult {
    let interpreter = choose(policy.python, script);
    let mut started = Instant::now();
    if let Err(e) = policy.validate() {
        // The same field-naming errors as a policy file gets; nothing runs.
        let mut result = empty_result(ChainStatus::Error);
        result.error = Some(ChainError::new(ErrorKind::Policy, "PolicyError", e.to_string()));
        result.duration_ms = millis(started.elapsed());
        return result;
    }
    // A session's later cell may call what its earlier cells defined.
    let names_from_before = options.cells.as_ref().is_some_and(|cells| !cells.earlier.is_empty());
    let verdict = core
        .checker
        .check(script, registry, policy.type_check, names_from_before);
    if verdict.refused() {
        let mut result = empty_result(ChainStatus::Error);
        let mut error = ChainError::new(ErrorKind::TypeError, "TypeCheckError", verdict.summary());
        error.line = verdict.refusals.first().map(|d| d.line);
        result.error = Some(error);
        result.interpreter = interpreter;
        result.diagnostics = verdict.refusals;
        result.warnings = verdict.warnings;
        result.duration_ms = millis(started.elapsed());
        return result;
    }
    if interpreter == Interpreter::Cpython {
        // Compiling (or loading) the CPython guest happens once per engine,
        // on the first chain that needs it: it is the engine's start-up, not
        // this chain's time (nor in its timeout or `duration_ms`). If it
        // fails, the chain reports it below.
        let building = Instant::now();
        let _ = core.cpython().await;
        started += building.elapsed();
    }
    let flow = flow_of(script, registry, policy, names_from_before);
    let chain = Started::new(core, registry, policy, approval, options, flow);
    tracing::Span::current().record("chainbox.chain.id", chain.session.run_id());
    let mut result = chain.run(core, script, registry, interpreter).await;
    if chain.hand_to_cpython(&result) {
        // As above: the CPython guest is built outside the chain's time.
        let _ = core.cpython().await;
        result = chain.run(core, script, registry, Interpreter::Cpython).await;
    }
    chain.close(&mut result);
    chain.park(core, script, &result);
    if !verdict.warnings.is_empty() {
        result.warnings.splice(0..0, verdict.warnings);
    }
    result.duration_ms = millis(started.elapsed());
    if result.error_kind() == Some(ErrorKind::Cancelled) {
        chain.audit_cancelled(&result);
    }
    result
}

/// The data-flow policy's tools and the analysis's verdict on `script`
/// (see [`crate::flow`]), when it can hold a call: `flow = "on"` and some
/// tool untrusted (the registry knows that without a walk, so a chain
/// without one pays nothing) and some argument guarded.
fn flow_of(
    script: &str,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    names_from_before: bool,
) -> Option<(Arc<FlowTools>, FlowVerdict)> {
    if policy.flow == Flow::Off || !registry.has_untrusted() {
        return None;
    }
    let tools = FlowTools::new(registry, policy);
    if !tools.is_active() {
        return None;
    }
    let verdict = crate::check::flow::analyze(script, &tools, names_from_before);
    Some((Arc::new(tools), verdict))
}

/// The interpreter a chain starts on: the policy's, or under `auto` monty
/// unless the scan finds something only CPython runs.
fn choose(choice: PythonChoice, script: &str) -> Interpreter {
    match choice {
        PythonChoice::Monty => Interpreter::Monty,
        PythonChoice::Cpython => Interpreter::Cpython,
        PythonChoice::Auto => match needs_cpython(script) {
            Some(needs) => {
                tracing::debug!("the chain runs on CPython: it {needs}");
                Interpreter::Cpython
            }
            None => Interpreter::Monty,
        },
    }
}

/// Runs `script` once and hands back the guest's linear memory as the run
/// left it, for the engine to learn the pages every chain touches (see
/// [`crate::prefault`]). `None` if the chain did not complete.
pub(crate) async fn run_for_memory<R>(core: &Core, script: &str, learn: impl FnOnce(&[u8]) -> R) -> Option<R> {
    let registry = ToolRegistry::new();
    let chain = Started::new(
        core,
        &registry,
        &ChainPolicy::default(),
        &Approval::deny_all(),
        RunOptions::default(),
        None,
    );
    let mut run = chain.execute(core, script, &registry, Interpreter::Monty).await.ok()?;
    let learned = run.memory.map(|memory| learn(memory.data(&run.store)));
    let ok = run.trap.is_none();
    let mut result = chain.finish(&mut run);
    chain.close(&mut result);
    learned.filter(|_| ok && result.is_ok())
}

/// A chain that has started: everything that outlives its store.
struct Started {
    policy: Arc<ChainPolicy>,
    session: Arc<InvokerSession>,
    workspace: Arc<Mutex<Workspace>>,
    /// What it printed and used; shared with the store, so it survives a
    /// store dropped by the total timeout.
    meters: Arc<Meters>,
    /// Its caller's cancellation ([`RunOptions::cancel`]).
    cancel: Option<CancellationToken>,
    /// It has a journal: its result names it (`chain_id`) and it may suspend.
    durable: bool,
    /// Its randomness's seed ([`RunOptions::seed`]).
    seed: Option<u64>,
    /// A session's earlier cells ([`RunOptions::cells`]), for the guest;
    /// `None` for a chain.
    cells: Option<Vec<String>>,
    /// A session's cell that may run on, and leave, a parked instance.
    warm: Option<WarmCell>,
    /// The run whose instance is to be parked once the chain's result is
    /// closed ([`Started::park`]).
    parkable: Mutex<Option<Executed>>,
}

/// A session's cell whose instance may be parked, and continued: what its
/// instance's state is named by ([`WarmKey`]).
struct WarmCell {
    session: String,
    /// The kept cells before it, source and base.
    earlier: Vec<(String, u32)>,
    base: u32,
    /// The tools as the guest knows them, encoded.
    tools: Vec<u8>,
}

/// The guest has returned from `_start` (or trapped).
struct Executed {
    store: Store<ChainState>,
    memory: Option<Memory>,
    trap: Option<wasmtime::Error>,
    /// The CPython guest's watchdog stopped it at the total timeout (the
    /// monty guest's yields let `tokio::time::timeout` drop it instead).
    timed_out: bool,
    /// The CPython guest, for a CPython run: its next spare instance is
    /// made once this store is dropped.
    cpython: Option<Arc<CpythonGuest>>,
    /// What a later run of this instance would call: its guest's
    /// `chainbox_next` or `run` (see `guests/parked.rs`).
    again: Option<ParkedEntry>,
    /// The chain's pool slot, held until its store is dropped.
    _slot: ChainSlot,
}

/// Stops a CPython chain's guest if the chain is dropped before its guest
/// has returned (see [`Started::execute_cpython`]).
struct StopOnDrop(Option<Arc<sandbox::Interrupt>>);

impl StopOnDrop {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(interrupt) = self.0.take() {
            interrupt.cancel();
        }
    }
}

impl Executed {
    /// Drops the store once the result is taken, on the guest's
    /// housekeeper (a CPython store's drop unmaps megabytes of written
    /// linear memory), after the chain has answered, and so has the next
    /// spare made. Its running calls are cancelled here first, as the drop
    /// would.
    fn retire(self, core: &Core) {
        match self.cpython {
            Some(_) => self.retire_cpython(),
            None => {
                let mut run = self;
                run.store.data_mut().cancel_running_calls();
                core.warm.freed(run.store.data().slot, None);
                core.housekeeper.retire(Box::new(run));
            }
        }
    }

    /// [`Executed::retire`] for a CPython run, which needs no `Core`: also
    /// how its thread retires a run nobody waits for (its chain was dropped).
    fn retire_cpython(mut self) {
        self.store.data_mut().cancel_running_calls();
        if let Some(guest) = self.cpython.take() {
            let state = self.store.data();
            guest.warm.freed(state.slot, state.cpython_memory());
            guest.housekeeper.retire(Box::new(self));
        }
    }
}

impl Started {
    fn new(
        core: &Core,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
        options: RunOptions,
        flow: Option<(Arc<FlowTools>, FlowVerdict)>,
    ) -> Self {
        let mut policy = policy.clone();
        policy.max_memory_bytes = policy.max_memory_bytes.min(MAX_MEMORY_BYTES);
        let policy = Arc::new(policy);
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let workspace = Arc::new(Mutex::new(Workspace::new(options.workspace.clone())));
        let store = options.artifacts.clone().unwrap_or_else(|| core.artifacts.clone());
        let shaper = Shaper::new(run_id.clone(), store, workspace.clone(), policy.max_inline_result_bytes);
        let session = InvokerSession::with_shaper(run_id, registry.clone(), policy.clone(), approval.clone(), shaper)
            .with_observer(options.observer.clone())
            .with_principal(options.principal.clone());
        let session = match options.journal.clone() {
            Some(journal) => session.with_journal(journal),
            None => session,
        };
        let session = match flow {
            Some((tools, verdict)) => session.with_flow(tools, verdict),
            None => session,
        };
        let (session, cells, warm) = match options.cells {
            Some(Cells {
                earlier,
                base,
                session: id,
            }) => {
                let bases = earlier.iter().map(|(_, base)| *base).chain([base]).collect();
                let sources = earlier.iter().map(|(source, _)| source.clone()).collect();
                let warm = id.map(|session| WarmCell {
                    session,
                    earlier,
                    base,
                    tools: chainbox_protocol::encode(&sandbox::tool_decls(registry)),
                });
                (session.with_cells(bases), Some(sources), warm)
            }
            None => (session, None, None),
        };
        let session = Arc::new(session);
        let meters = Meters::new(&policy, options.observer);
        Started {
            policy,
            session,
            workspace,
            meters,
            cancel: options.cancel,
            durable: options.journal.is_some(),
            seed: options.seed,
            cells,
            warm,
            parkable: Mutex::new(None),
        }
    }

    /// The key of the state a session's instance holds after its kept
    /// cells `cells`, on `interpreter`.
    fn warm_key<'a>(
        &self,
        warm: &WarmCell,
        interpreter: Interpreter,
        cells: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> WarmKey {
        WarmKey::new(
            &warm.session,
            self.seed,
            interpreter,
            &warm.tools,
            self.policy.max_memory_bytes,
            cells,
        )
    }

    /// Parks the instance of a session's cell ([`Started::run_on`] kept it
    /// aside) for the session's next cell, with its workspace, if the cell
    /// ran to its end or raised (the result says so: not stopped, not
    /// suspended); any other ending's instance is retired.
    fn park(&self, core: &Core, script: &str, result: &ChainRunResult) {
        let Some(mut run) = self.parkable.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let kept = result.status == ChainStatus::Ok || result.error_kind() == Some(ErrorKind::Script);
        let (Some(warm), Some(entry), true) = (&self.warm, run.again.take(), kept) else {
            return run.retire(core);
        };
        let workspace = self.workspace.lock().unwrap_or_else(|p| p.into_inner()).take_temp();
        // A CPython instance's `/workspace` preopen is that directory:
        // without it, no next cell.
        if matches!(entry, ParkedEntry::Cpython(..)) && workspace.is_none() {
            return run.retire(core);
        }
        let cells = warm.earlier.iter().map(|(source, base)| (source.as_str(), *base));
        let key = self.warm_key(warm, result.interpreter, cells.chain([(script, warm.base)]));
        let Executed { store, memory, .. } = run;
        let parked = Parked {
            store,
            memory,
            entry,
            workspace,
        };
        core.park(&warm.session, key, parked);
    }

    /// The guest runs in a pool slot under the total timeout and the
    /// caller's cancellation, and its ending becomes the result. Either
    /// drops the running chain: its store and the calls in flight with it.
    async fn run(
        &self,
        core: &Core,
        script: &str,
        registry: &ToolRegistry,
        interpreter: Interpreter,
    ) -> ChainRunResult {
        let total = self.policy.total_timeout();
        let cancelled = async {
            match &self.cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // The ending is decided inside `select!` and acted on after it, once
        // the running chain has been dropped, so the trace read below sees
        // every call it cut off.
        let ended = tokio::select! {
            // A chain cancelled before it starts runs nothing.
            biased;
            () = cancelled => None,
            ran = tokio::time::timeout(total, self.run_on(core, script, registry, interpreter)) => Some(ran),
        };
        let mut result = match ended {
            Some(Ok(result)) => result,
            Some(Err(_)) => self.timed_out(total, interpreter),
            None => self.cancelled(interpreter),
        };
        // A durable chain is named however it ended (a timeout too).
        if self.durable {
            result.chain_id = Some(self.session.run_id().to_owned());
        }
        result
    }

    /// Under `auto`, whether a monty run's ending hands the script to
    /// CPython: monty's parser refused it, so nothing of it ran (no call, no
    /// file, no output) and nothing can happen twice.
    fn hand_to_cpython(&self, result: &ChainRunResult) -> bool {
        result.interpreter == Interpreter::Monty
            && self.policy.python == PythonChoice::Auto
            && result.error.as_ref().is_some_and(|e| e.kind == ErrorKind::Compile)
            && self.session.calls_attempted() == 0
    }

    async fn run_on(
        &self,
        core: &Core,
        script: &str,
        registry: &ToolRegistry,
        interpreter: Interpreter,
    ) -> ChainRunResult {
        let mut result = match self.execute(core, script, registry, interpreter).await {
            Ok(mut run) => {
                let result = match run.timed_out {
                    true => self.timed_out(self.policy.total_timeout(), interpreter),
                    false => self.finish(&mut run),
                };
                // A session's cell: its instance may be parked once the
                // result is closed ([`Started::park`]); a run handed to
                // CPython after it replaces it.
                if self.warm.is_some() {
                    let mut parkable = self.parkable.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(earlier) = parkable.replace(run) {
                        earlier.retire(core);
                    }
                } else {
                    run.retire(core);
                }
                result
            }
            Err(why) => self.crash(&why.to_string()),
        };
        result.interpreter = interpreter;
        // A durable chain that suspended at a call: whatever the guest did
        // as it was stopped, the chain waits on a decision.
        if let Some(pending) = self.session.suspended() {
            result.status = ChainStatus::Suspended;
            result.error = None;
            result.output = Value::Null;
            result.output_text = String::new();
            result.pending = Some(pending);
        }
        result
    }

    /// A store in a pool slot, the hot pages mapped in, the guest's `_start`
    /// run to its end; or why the sandbox could not be started.
    async fn execute(
        &self,
        core: &Core,
        script: &str,
        registry: &ToolRegistry,
        interpreter: Interpreter,
    ) -> Result<Executed, StartError> {
        let Some(slot) = core.slot(interpreter).await else {
            return Err(StartError::ShuttingDown);
        };
        let setup = ChainSetup {
            script,
            cells: self.cells.as_deref(),
            continued: false,
            registry,
            policy: &self.policy,
            session: self.session.clone(),
            workspace: self.workspace.clone(),
            meters: self.meters.clone(),
            interpreter,
            seed: self.seed,
        };
        // A session's cell continues the instance its previous cell left
        // here, if that holds the session's state; else a fresh one replays.
        let parked = match &self.warm {
            Some(warm) => {
                let cells = warm.earlier.iter().map(|(source, base)| (source.as_str(), *base));
                let key = self.warm_key(warm, interpreter, cells);
                core.unpark(&warm.session, key, setup)
            }
            None => Err(setup),
        };
        let instance = match parked {
            Ok(instance) => instance,
            Err(setup) => core.instance_for(setup).await?,
        };
        let (mut store, memory, start, next) = match instance {
            Instance::Monty(MontyInstance {
                store,
                memory,
                start,
                next,
            }) => (store, memory, start, next),
            Instance::Cpython { store, run, guest } => return self.execute_cpython(store, run, guest, slot).await,
        };
        store.data_mut().guest_memory = memory;
        self.meters.guest_starts();
        let trap = start.call_async(&mut store, ()).await.err();
        Ok(Executed {
            store,
            memory,
            trap,
            timed_out: false,
            cpython: None,
            again: next.map(ParkedEntry::Monty),
            _slot: slot,
        })
    }

    /// The CPython guest's run: the chain's instance's `run` export called
    /// with the run request on a thread of the guest's, its answer the
    /// finish.
    async fn execute_cpython(
        &self,
        mut store: Store<ChainState>,
        run: RunExport,
        guest: Arc<CpythonGuest>,
        slot: ChainSlot,
    ) -> Result<Executed, StartError> {
        let request = store.data_mut().take_request();
        let interrupt = store.data().interrupt.clone();
        if let Some(interrupt) = &interrupt {
            guest.watchdog.watch(interrupt);
        }
        // The guest runs on a thread of its own: without epoch checks it
        // never yields, so on the caller's thread it would hold up that
        // thread's other tasks, and a dropped chain (cancelled, or past the
        // total timeout while parked) could not be let go before its limits
        // ended it. Dropped, this chain stops its guest (`StopOnDrop`).
        // Not one of tokio's blocking pool, which the tools it awaits need
        // (see `threads`).
        let stop_on_drop = StopOnDrop(interrupt.clone());
        let watched = interrupt.clone();
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Handle::current();
        let meters = self.meters.clone();
        let threads = guest.threads.clone();
        let started = threads.run(move || {
            meters.guest_starts();
            let outcome = runtime.block_on(async {
                let stopped = async {
                    match &interrupt {
                        Some(interrupt) => interrupt.stopped().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    outcome = run.call_async(&mut store, (request,)) => Some(outcome),
                    // Stopped while parked in a host call: dropping the
                    // call ends it there.
                    () = stopped => None,
                }
            });
            let trap = match outcome {
                Some(Ok((finish,))) => store.data_mut().set_finish(&finish).err(),
                Some(Err(trap)) => Some(trap),
                None => Some(sandbox::Stopped.into()),
            };
            let timed_out = interrupt.is_some_and(|i| {
                i.disarm();
                i.reason() == Some(Reason::Timeout)
            });
            let run = Executed {
                store,
                memory: None,
                trap,
                timed_out,
                again: Some(ParkedEntry::Cpython(run, guest.clone())),
                cpython: Some(guest),
                _slot: slot,
            };
            if let Err(abandoned) = sender.send(run) {
                abandoned.retire_cpython();
            }
        });
        if let Err(e) = started {
            stop_on_drop.defuse();
            return Err(StartError::Thread(e));
        }
        // A stop that did not take (see `sandbox::Interrupt::abandoned`):
        // the chain is answered without its guest.
        let abandoned = async {
            match &watched {
                Some(interrupt) => interrupt.abandoned().await,
                None => std::future::pending().await,
            }
        };
        let run = tokio::select! {
            run = receiver => run.map_err(|_| StartError::ThreadLost),
            () = abandoned => Err(StartError::NotStopped(
                match watched.as_ref().and_then(|i| i.reason()) {
                    Some(Reason::Cpu) => "over max_cpu_s",
                    Some(Reason::Timeout) => "past total_timeout_s",
                    Some(Reason::Cancelled) | None => "cancelled",
                },
            )),
        };
        stop_on_drop.defuse();
        run
    }

    /// What the guest reported, or why it stopped, as the chain's result.
    fn finish(&self, run: &mut Executed) -> ChainRunResult {
        let ending = sandbox::ending(&mut run.store, run.trap.take());
        let mut result = empty_result(ChainStatus::Ok);
        result.stdout = ending.stdout;
        result.usage = ending.usage;
        let (script_result, warnings) = match ending.finish {
            Some(Finish { result, warnings }) => (Some(result), warnings),
            None => (None, Vec::new()),
        };
        result.warnings = warnings.into_iter().map(ChainWarning::from).collect();
        match (script_result, ending.error) {
            (_, Some(error)) => {
                result.status = ChainStatus::Error;
                result.call_trace = self.interrupted(&format!("interrupted: {}", error.message));
                result.error = Some(error);
            }
            (Some(ScriptResult::Ok { output, output_text }), None) => {
                result.call_trace = self.interrupted("interrupted: the script ended first");
                match self.shape_output(output, output_text) {
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
                // A memory-limit stop is `sandbox::ending`'s error, above.
                let kind = if e.compile {
                    ErrorKind::Compile
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
                result.call_trace = self.interrupted("interrupted: the script failed first");
            }
            // `sandbox::ending` reports a missing finish as an error; never panic here regardless.
            (None, None) => return self.crash("the sandbox ended without reporting a result"),
        }
        result
    }

    /// The chain's own output follows the result rule: above
    /// `max_result_bytes` it is refused (`output_limit`), above
    /// `max_inline_result_bytes` it is offloaded and `output_text` is a preview.
    fn shape_output(&self, output: Value, output_text: String) -> Result<(Value, String), ChainError> {
        let size = serde_json::to_string(&output).map(|s| s.len()).unwrap_or(0);
        if size as u64 > self.policy.max_result_bytes {
            return Err(ChainError::new(
                ErrorKind::OutputLimit,
                "OutputLimitExceeded",
                format!(
                    "the chain's output is {size} bytes, over max_result_bytes = {}",
                    self.policy.max_result_bytes
                ),
            ));
        }
        match self.session.shaper().inline_or_offload(output) {
            Ok((output, None)) => Ok((output, output_text)),
            Ok((handle, Some(_))) => Ok((handle, preview(&output_text))),
            Err(e) => Err(ChainError::new(ErrorKind::Crash, "ArtifactStoreError", e.to_string())),
        }
    }

    /// The result when the total timeout dropped the running chain: its
    /// store is gone, its meters and trace remain.
    fn timed_out(&self, total: std::time::Duration, interpreter: Interpreter) -> ChainRunResult {
        let message = format!("the chain ran past total_timeout_s = {}", total.as_secs_f64());
        let mut r = empty_result(ChainStatus::Timeout);
        r.interpreter = interpreter;
        r.call_trace = self.session.trace(CallStatus::Timeout, &message);
        r.error = Some(ChainError::new(ErrorKind::Timeout, "TimeoutError", message));
        (r.usage, r.stdout) = self.meters.take();
        r
    }

    /// The result when the caller cancelled the running chain: its store is
    /// gone, its meters and trace remain, the calls it cut off closed as
    /// `error` ([`CANCELLED_CALL`]).
    fn cancelled(&self, interpreter: Interpreter) -> ChainRunResult {
        let mut r = empty_result(ChainStatus::Error);
        r.interpreter = interpreter;
        r.call_trace = self.session.trace(CallStatus::Error, CANCELLED_CALL);
        r.error = Some(ChainError::new(
            ErrorKind::Cancelled,
            "Cancelled",
            "the chain was cancelled by its caller",
        ));
        (r.usage, r.stdout) = self.meters.take();
        r
    }

    /// The audit log of a cancelled chain: a `tool call` event for each call
    /// it cut off (the invoker logs the calls that ended; these never will),
    /// then the chain's own `chain cancelled` event.
    fn audit_cancelled(&self, result: &ChainRunResult) {
        for record in result
            .call_trace
            .iter()
            .filter(|r| r.error.as_deref() == Some(CANCELLED_CALL))
        {
            audit_call(self.session.run_id(), self.session.principal(), record, 0);
        }
        let principal = self.session.principal();
        tracing::info!(
            target: "chainbox::audit",
            run_id = %self.session.run_id(),
            principal_subject = principal.map(|p| p.owner.subject.as_str()),
            principal_issuer = principal.map(|p| p.owner.issuer.as_str()),
            kind = %ErrorKind::Cancelled,
            tool_calls = result.tool_calls,
            duration_ms = result.duration_ms,
            "chain cancelled"
        );
    }

    fn crash(&self, message: &str) -> ChainRunResult {
        let mut r = empty_result(ChainStatus::Error);
        r.call_trace = self.interrupted(message);
        r.error = Some(ChainError::new(ErrorKind::Crash, "SandboxCrash", message));
        r
    }

    /// The trace, with calls still open closed as `error` for `why`.
    fn interrupted(&self, why: &str) -> Vec<ChainCallRecord> {
        self.session.trace(CallStatus::Error, why)
    }

    /// Whatever the ending: the trace counted, the artifacts and files the
    /// chain produced listed, and its pins released.
    fn close(&self, result: &mut ChainRunResult) {
        result.tool_calls = result.call_trace.len() as u32;
        (result.artifacts, result.files) = self.session.shaper().produced_lists();
        self.session.shaper().release();
    }
}

fn empty_result(status: ChainStatus) -> ChainRunResult {
    ChainRunResult::empty(status)
}

fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("chain-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}
