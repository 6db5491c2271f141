//! The invoker: the one checkpoint every tool call from a chain passes.
//!
//! An [`InvokerSession`] lives for one chain. Each call goes through these
//! gates, in this order (each one can end the call; only the first can end
//! the chain):
//! 1. **budget**: counted before lookup, so unknown tools spend it too; the
//!    call past `max_tool_calls` ends the chain (`tool_budget`).
//! 2. **lookup**: exact name, no case folding, trimming or look-alikes.
//! 3. **kind**: only local tools run; hosted and provider-defined tools, and
//!    `run_chain` itself, are refused with status `denied` (the script gets
//!    a `PermissionError` saying why: hosted tools run at the provider,
//!    provider-defined ones answer provider call items through
//!    `handle_call`). `denied`, not `error`: the tool and the call are fine,
//!    a chain is just not allowed to run them, as with a policy `deny`.
//! 4. **arguments**: size against `max_arg_bytes`, then the tool's JSON Schema
//!    (compiled once, when the registry was built); a rejected call never
//!    reaches the tool and the script gets a `ValueError` naming the field.
//!    Then the policy's refusals, each `denied` (a `PermissionError`): a
//!    per-tool `deny`; a tool outside `allowed_tools` (the allowlist a
//!    skill sets); a tool needing a permission (`fs.read`, `net`…) that
//!    `granted_permissions` lacks, the message naming the missing ones; a
//!    tool whose `required_scopes` the chain's principal (the authenticated
//!    caller it runs for) does not all hold, naming the first missing
//!    (`denied_scope`; a chain without a principal, the local user, is not
//!    restricted by them).
//! 5. **data flow** ([`crate::flow`], set by [`InvokerSession::with_flow`]):
//!    a call of a guarded tool is held when its guarded arguments may
//!    derive from results of untrusted tools that have already answered in
//!    this chain (a value or a tool error; calls answered from the journal
//!    and a session's earlier cells count): those the script's verdict
//!    names for the tool, and, exactly, any whose artifact handle is inside
//!    a guarded argument. A held call needs approval as a critical call
//!    does, whatever `max_risk_unapproved`, the request listing those
//!    results (`provenance`): approved (as asked or modified) it is
//!    `approved_flow` and skips gate 6; otherwise `denied_flow`, the
//!    `PermissionError` naming them. A call it does not hold goes on.
//! 6. **risk → approval**: above `max_risk_unapproved` a handler must approve
//!    within `approval_timeout_s`; silence, failure or panic means denied.
//! 7. **execution** bounded by the call timeout; a panicking tool is an error.
//! 8. **result shaping** into the value the script receives.
//!
//! Every call that passes the budget gets a [`ChainCallRecord`], whatever
//! happens next, including when the chain is killed while the call runs.
//! The record carries the call's unique `call_id` and its provenance:
//! `source` (the tool's kind and name), `observed_at` (UTC, RFC 3339) and
//! `policy`, the [`PolicyDecision`] that let it through (`within_risk`,
//! `approved`, `approved_modified`, `approved_flow`) or stopped it
//! (`denied_*`), with the untrusted results gate 5 held it for
//! (`provenance`).
//!
//! Invariant: the invoker never sees wasmtime types; the sandbox hands it
//! protocol messages and gets outcomes back.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chainbox_protocol::{CallOutcome, MAX_VALUE_DEPTH, ToolCall};
use serde_json::{Map, Value};

use crate::approval::{Approval, ApprovalDecision, ApprovalRequest, decide, provenance_note};
use crate::artifacts::{ArtifactRef, ArtifactStore};
use crate::digest::{canonical_args, sha256_hex};
use crate::flow::{FlowTools, FlowVerdict};
use crate::journal::{Journal, JournalEntry, JournalError, ReplayDiverged};
use crate::live::{ChainEvent, Observer};
use crate::policy::ChainPolicy;
use crate::principal::Principal;
use crate::result::{
    CallStatus, ChainCallRecord, ChainFile, FlowSource, MAX_ERROR_MESSAGE_CHARS, PendingCall, PolicyDecision,
};
use crate::shaping::{Shaper, handle_ref};
use crate::telemetry;
use crate::tools::{
    AnyTool, ContentBlock, ToolCallRequest, ToolContext, ToolOutput, ToolRegistry, ToolRisk, new_call_id,
};
use crate::util::{millis, truncate_chars, utc_now_rfc3339};
use crate::workspace::Workspace;
use futures::FutureExt;
use tracing::Instrument;

/// The name of the one tool an agent sees for chainbox itself; refused
/// inside chains.
pub const RUN_CHAIN: &str = "run_chain";

/// The audit log's line for one tool call that ended (target
/// `chainbox::audit`, level info): its record, the size of its result
/// when someone listens (`result_bytes`, 0 otherwise), and who the chain
/// runs for when it has a principal (`principal_subject`,
/// `principal_issuer`, `principal_client_id`: never a token). The invoker
/// writes one per call; a cancelled chain writes those of the calls it cut
/// off.
pub(crate) fn audit_call(run_id: &str, principal: Option<&Principal>, record: &ChainCallRecord, result_bytes: usize) {
    tracing::info!(
        target: "chainbox::audit",
        run_id = %run_id,
        principal_subject = principal.map(|p| p.owner.subject.as_str()),
        principal_issuer = principal.map(|p| p.owner.issuer.as_str()),
        principal_client_id = principal.and_then(|p| p.client_id.as_deref()),
        call_id = %record.call_id,
        tool = %record.tool,
        args_digest = %record.args_digest,
        status = ?record.status,
        duration_ms = record.duration_ms,
        result_bytes,
        artifact_ref = record.artifact_ref.map(|r| r.to_string()).unwrap_or_default(),
        error = record.error.as_deref().unwrap_or_default(),
        source = record.source.as_deref().unwrap_or_default(),
        policy = record.policy.map(PolicyDecision::as_str).unwrap_or_default(),
        "tool call"
    );
}

/// Why a call ends the chain before it starts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    /// The call past the budget.
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    /// A resumed chain asked for another call than its journal holds.
    #[error(transparent)]
    Diverged(#[from] ReplayDiverged),
    /// A session's earlier cell, replayed, made a call its journal does
    /// not hold: it no longer does what it did, and its tool must not run
    /// now (its turn is over).
    #[error(
        "replay diverged at call #{seq}: session cell {cell} now calls {tool:?}, a call it did not make when it ran; the session cannot be rebuilt"
    )]
    Unjournaled {
        /// The call's number.
        seq: u32,
        /// The cell (1-based).
        cell: usize,
        /// The tool it calls now.
        tool: String,
    },
    /// The guest named a session cell the run does not have.
    #[error("the guest began cell {index}, but the run has {cells}")]
    NoSuchCell {
        /// The index it gave.
        index: u32,
        /// How many cells the run has.
        cells: usize,
    },
}

/// The call past the budget: it ends the chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tool call budget exhausted: call #{attempted} exceeds max_tool_calls = {limit}")]
pub struct BudgetExceeded {
    /// The number the refused call would have had.
    pub attempted: u32,
    /// The policy's `max_tool_calls`.
    pub limit: u32,
}

/// A call that passed the budget and has a trace record; run it with
/// [`InvokerSession::run`].
#[derive(Debug)]
pub struct Admitted {
    number: u32,
    call_id: String,
    call: ToolCall,
    args_digest: String,
    arg_bytes: usize,
    started: Instant,
    slot: usize,
    /// It belongs to a session's earlier cell, replayed: answered from the
    /// journal, no part of this run's trace or events.
    replayed_cell: bool,
}

impl Admitted {
    /// Where its record is in the session's trace (see
    /// [`InvokerSession::close_cancelled`]).
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }
}

/// One chain's view of the tools: policy, approval and the call trace.
pub struct InvokerSession {
    run_id: String,
    registry: ToolRegistry,
    policy: Arc<ChainPolicy>,
    approval: Approval,
    shaper: Shaper,
    /// The number of the last call made: its count for a chain; in a
    /// session's run, numbered from the running cell's base.
    calls: AtomicU32,
    /// Calls the script attempted in this run (a session's replayed cells'
    /// included), whatever their numbers.
    attempted: AtomicU32,
    trace: Mutex<Vec<Slot>>,
    /// Where each finished call is recorded, for a durable chain.
    journal: Option<Arc<dyn Journal>>,
    /// The calls a resumed chain is answered from (its journal when the
    /// session began), sorted by `seq`.
    replay: Vec<JournalEntry>,
    /// The call a durable chain suspended at, waiting on a decision.
    suspended: Mutex<Option<PendingCall>>,
    /// The first call the journal failed to record: the chain must end.
    journal_failure: Mutex<Option<JournalError>>,
    /// Who sees each call start and finish ([`crate::live`]).
    observer: Option<Observer>,
    /// Who the chain runs for (`None`: the local user): checked against
    /// each tool's `required_scopes`, named on the audit log.
    principal: Option<Principal>,
    /// The span the session was made in (its chain's): every call's span
    /// is its child, whichever task or thread runs the call. Its id, not a
    /// handle: a session outlives its chain (a store is dropped later, on
    /// the housekeeper), and a handle would keep the chain's span open.
    parent: Option<tracing::Id>,
    /// Whether its calls get spans (a spare instance's warm-up call does not).
    traced: bool,
    /// A session's run ([`Self::with_cells`]): the number of the call
    /// before each cell's first, the new cell's last; empty for a chain.
    cell_bases: Vec<u32>,
    /// The cell the guest runs now ([`Self::enter_cell`]).
    cell: AtomicU32,
    /// The data-flow policy ([`Self::with_flow`]); `None` when it cannot
    /// hold anything (no untrusted tool, nothing guarded, `flow = "off"`).
    flow: Option<FlowState>,
}

/// The data-flow policy in a session (gate 5): what the tools are, what
/// the script's verdict says, and which untrusted results have arrived.
struct FlowState {
    tools: Arc<FlowTools>,
    verdict: FlowVerdict,
    /// The calls of untrusted tools that have answered (a value or a tool
    /// error: its message is data too), by call number: this run's,
    /// replayed ones and those its journal held when the session began.
    deliveries: Mutex<BTreeMap<u32, Delivery>>,
}

/// An untrusted tool's call that answered.
struct Delivery {
    /// Its `call_id`, when this run made it or answered it from the journal.
    call_id: Option<String>,
    tool: String,
    /// The artifact its result was offloaded to: a handle to it in a
    /// guarded argument is that result.
    artifact_ref: Option<ArtifactRef>,
}

impl FlowState {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Delivery>> {
        self.deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes the untrusted results a journal holds (without their
    /// `call_id`s: a session's warm cells are not replayed through here).
    fn note_journal(&self, entries: &[JournalEntry]) {
        let mut deliveries = self.lock();
        for entry in entries {
            if self.tools.is_untrusted(&entry.tool) && delivers(&entry.outcome) {
                deliveries.entry(entry.seq).or_insert_with(|| Delivery {
                    call_id: None,
                    tool: entry.tool.clone(),
                    artifact_ref: entry.artifact_ref,
                });
            }
        }
    }

    /// Call `seq` of `tool` (untrusted) has answered.
    fn delivered(&self, seq: u32, call_id: Option<String>, tool: &str, artifact_ref: Option<ArtifactRef>) {
        let mut deliveries = self.lock();
        match deliveries.get_mut(&seq) {
            Some(known) => {
                if call_id.is_some() {
                    known.call_id = call_id;
                }
            }
            None => {
                deliveries.insert(
                    seq,
                    Delivery {
                        call_id,
                        tool: tool.to_owned(),
                        artifact_ref,
                    },
                );
            }
        }
    }

    /// The artifacts a call of `name` passes by handle in its guarded
    /// arguments, looked for only when an untrusted result was offloaded.
    fn handles_in(&self, name: &str, args: &Map<String, Value>) -> Vec<ArtifactRef> {
        let Some(guarded) = self.tools.guarded(name) else {
            return Vec::new();
        };
        if !self.lock().values().any(|d| d.artifact_ref.is_some()) {
            return Vec::new();
        }
        let mut handles = Vec::new();
        for (arg, value) in args {
            if guarded.covers(arg) {
                collect_handles(value, &mut handles);
            }
        }
        handles
    }

    /// The untrusted results call `number` of `name` may derive from: the
    /// deliveries before it of the tools its verdict names, and those whose
    /// artifact is in `handles`. In call order.
    fn sources(&self, number: u32, name: &str, handles: &[ArtifactRef]) -> Vec<FlowSource> {
        if self.tools.guarded(name).is_none() {
            return Vec::new();
        }
        let taint = self.verdict.taint_of(name);
        if taint.is_none() && handles.is_empty() {
            return Vec::new();
        }
        self.lock()
            .range(..number)
            .filter(|(_, d)| {
                taint.is_some_and(|t| t.reaches_from(&d.tool)) || d.artifact_ref.is_some_and(|r| handles.contains(&r))
            })
            .map(|(seq, d)| FlowSource {
                seq: *seq,
                call_id: d.call_id.clone(),
                tool: d.tool.clone(),
            })
            .collect()
    }
}

/// Whether a call's outcome carries its tool's words: a value, or the
/// tool's own error.
fn delivers(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::Ok { .. } | CallOutcome::Error { .. })
}

/// Every artifact a value names by handle: a handle object (as
/// [`Shaper::resolve_handles`] recognises them) or a bare `sha256:<hex>`.
fn collect_handles(value: &Value, out: &mut Vec<ArtifactRef>) {
    if let Some(r) = handle_ref(value).or_else(|| value.as_str())
        && let Ok(artifact) = ArtifactRef::parse(r)
    {
        out.push(artifact);
        return;
    }
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect_handles(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_handles(v, out)),
        _ => {}
    }
}

/// A trace entry: finished, or still running (and so interrupted if the
/// chain ends now).
enum Slot {
    Running(Running),
    Done(ChainCallRecord),
    /// Not in the trace: the call the chain suspended at, or a call of a
    /// session's earlier cell replayed.
    Pending,
}

/// A call that has not finished: what its record will say if it ends early.
struct Running {
    call_id: String,
    tool: String,
    args_digest: String,
    started: Instant,
    /// Set when the call reaches its tool: the provenance an interrupted
    /// record still reports.
    passed: Option<Verdict>,
    /// The untrusted results gate 5 holds it for, while it waits for
    /// approval: an interrupted record reports them.
    held: Vec<FlowSource>,
}

impl InvokerSession {
    /// A session of its own, outside any chain: the same gates, trace and
    /// result shaping for calls an agent runtime makes directly (say, a
    /// model's ordinary tool calls next to its chains). Offloaded results go
    /// to `store`; media results to a temporary workspace removed with the
    /// session.
    pub fn new(
        run_id: String,
        registry: ToolRegistry,
        policy: Arc<ChainPolicy>,
        approval: Approval,
        store: Arc<dyn ArtifactStore>,
    ) -> Self {
        let workspace = Arc::new(Mutex::new(Workspace::new(None)));
        let shaper = Shaper::new(run_id.clone(), store, workspace, policy.max_inline_result_bytes);
        Self::with_shaper(run_id, registry, policy, approval, shaper)
    }

    /// A chain's session: its results are shaped by the chain's own
    /// `shaper`, whose workspace the sandbox shares.
    pub fn with_shaper(
        run_id: String,
        registry: ToolRegistry,
        policy: Arc<ChainPolicy>,
        approval: Approval,
        shaper: Shaper,
    ) -> Self {
        InvokerSession {
            run_id,
            registry,
            policy,
            approval,
            shaper,
            calls: AtomicU32::new(0),
            attempted: AtomicU32::new(0),
            trace: Mutex::new(Vec::new()),
            journal: None,
            replay: Vec::new(),
            suspended: Mutex::new(None),
            journal_failure: Mutex::new(None),
            observer: None,
            principal: None,
            parent: tracing::Span::current().id(),
            traced: true,
            cell_bases: Vec::new(),
            cell: AtomicU32::new(0),
            flow: None,
        }
    }

    /// The session tells `observer` of each call as it starts and finishes.
    #[must_use]
    pub fn with_observer(mut self, observer: Option<Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The session's calls are made for `principal` (`None`: the local
    /// user): a tool's `required_scopes` are checked against its scopes
    /// (see the module's gate 4), and the audit log names it.
    #[must_use]
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// Who the chain runs for (`None`: the local user).
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The session records every finished call in `journal`, and answers
    /// the calls it already holds from it: call number `n` gets the outcome
    /// of its entry numbered `n`, without running the tool, provided the script
    /// asks for the same tool with the same arguments (else the chain ends,
    /// [`Refused::Diverged`]). A call it does not hold runs for real.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.replay = journal.recorded();
        self.replay.sort_by_key(|entry| entry.seq);
        if let Some(flow) = &self.flow {
            flow.note_journal(&self.replay);
        }
        self.journal = Some(journal);
        self
    }

    /// The session applies the data-flow policy (gate 5) with `tools` (the
    /// chain's, under its policy) and the analysis's `verdict` on its
    /// script. Nothing changes when `tools` is inactive.
    #[must_use]
    pub fn with_flow(mut self, tools: Arc<FlowTools>, verdict: FlowVerdict) -> Self {
        if !tools.is_active() {
            self.flow = None;
            return self;
        }
        let flow = FlowState {
            tools,
            verdict,
            deliveries: Mutex::new(BTreeMap::new()),
        };
        flow.note_journal(&self.replay);
        self.flow = Some(flow);
        self
    }

    /// The session runs a session's cells (see `chainbox_protocol::RunRequest::cells`):
    /// `bases[i]` is the number of the call before cell `i`'s first, the
    /// last one the new cell's. Calls of an earlier cell are numbered from
    /// its base and answered from the journal only (one it does not hold
    /// ends the chain: [`Refused::Unjournaled`]), and are no part of the
    /// trace, the events or the audit log (they ran when their cell did);
    /// the new cell's calls are numbered from its base, and the budget
    /// counts only them. The guest says which cell it runs
    /// ([`Self::enter_cell`]); until it does, the first.
    #[must_use]
    pub fn with_cells(mut self, bases: Vec<u32>) -> Self {
        if let Some(first) = bases.first() {
            self.calls = AtomicU32::new(*first);
        }
        self.cell_bases = bases;
        self
    }

    /// The guest begins cell `index` of the session's run: its calls are
    /// numbered from that cell's base.
    pub fn enter_cell(&self, index: u32) -> Result<(), Refused> {
        let base = usize::try_from(index)
            .ok()
            .and_then(|i| self.cell_bases.get(i))
            .ok_or(Refused::NoSuchCell {
                index,
                cells: self.cell_bases.len(),
            })?;
        self.cell.store(index, Ordering::Relaxed);
        self.calls.store(*base, Ordering::Relaxed);
        Ok(())
    }

    /// The cell running now, if it is an earlier one, replayed: its index.
    fn replaying_cell(&self) -> Option<usize> {
        let cell = self.cell.load(Ordering::Relaxed) as usize;
        (cell + 1 < self.cell_bases.len()).then_some(cell)
    }

    /// The number of the call before the running cell's first (0 for a
    /// chain): the budget counts calls past it.
    fn budget_base(&self) -> u32 {
        let cell = self.cell.load(Ordering::Relaxed) as usize;
        self.cell_bases.get(cell).copied().unwrap_or(0)
    }

    /// The session's calls get no spans: a spare instance's warm-up, no
    /// work of anyone's.
    #[must_use]
    pub(crate) fn untraced(mut self) -> Self {
        self.traced = false;
        self
    }

    /// The chain's run id, as its logs and approval requests name it.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The chain's policy.
    pub fn policy(&self) -> &ChainPolicy {
        &self.policy
    }

    /// The chain's artifacts and files.
    pub fn shaper(&self) -> &Shaper {
        &self.shaper
    }

    /// `load_artifact(handle)` from the script: the stored value, bounded by
    /// `max_result_bytes`. Not a tool call: no budget, no record.
    pub fn load_artifact(&self, handle: &Value) -> CallOutcome {
        let max = usize::try_from(self.policy.max_result_bytes).unwrap_or(usize::MAX);
        match self.shaper.load_handle(handle, max) {
            Ok(value) => CallOutcome::Ok { value },
            Err(e) => CallOutcome::Invalid { message: e.to_string() },
        }
    }

    /// Runs one call through every gate and says how the script should see it.
    pub async fn invoke(&self, call: ToolCall) -> Result<CallOutcome, Refused> {
        let admitted = self.admit(call)?;
        Ok(self.run(admitted).await)
    }

    /// Runs a [`ToolCallRequest`] through every gate; its `call_id` is the
    /// one in the call's record.
    pub async fn call(&self, request: ToolCallRequest) -> Result<CallOutcome, Refused> {
        let ToolCallRequest {
            call_id,
            name,
            arguments,
        } = request;
        let admitted = self.admit_with_id(
            ToolCall {
                tool: name,
                args: arguments,
            },
            call_id,
        )?;
        Ok(self.run(admitted).await)
    }

    /// Calls the script has attempted so far (admitted or refused by the
    /// budget): zero means no tool has been asked to do anything.
    pub fn calls_attempted(&self) -> u32 {
        self.attempted.load(Ordering::Relaxed)
    }

    /// Gate 1, the budget, and the call's trace record opened under a fresh
    /// `call_id`. Synchronous, so concurrent calls are counted in the order
    /// the script made them.
    pub fn admit(&self, call: ToolCall) -> Result<Admitted, Refused> {
        self.admit_with_id(call, new_call_id())
    }

    fn admit_with_id(&self, call: ToolCall, call_id: String) -> Result<Admitted, Refused> {
        self.attempted.fetch_add(1, Ordering::Relaxed);
        let attempted = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let replayed_cell = self.replaying_cell();
        match replayed_cell {
            // An earlier cell's calls were counted when it ran.
            Some(cell) if self.journaled(attempted).is_none() => {
                return Err(Refused::Unjournaled {
                    seq: attempted,
                    cell: cell + 1,
                    tool: call.tool,
                });
            }
            Some(_) => {}
            None => {
                let in_cell = attempted.saturating_sub(self.budget_base());
                if in_cell > self.policy.max_tool_calls {
                    return Err(BudgetExceeded {
                        attempted: in_cell,
                        limit: self.policy.max_tool_calls,
                    }
                    .into());
                }
            }
        }
        let canonical = canonical_args(&call.args);
        let args_digest = sha256_hex(&canonical);
        if let Some(entry) = self.journaled(attempted)
            && (entry.tool != call.tool || entry.args_digest != args_digest)
        {
            return Err(ReplayDiverged {
                seq: attempted,
                journaled_tool: entry.tool.clone(),
                journaled_digest: entry.args_digest.clone(),
                tool: call.tool,
                args_digest,
            }
            .into());
        }
        let started = Instant::now();
        let slot = self.open_slot(&call_id, &call.tool, &args_digest, started);
        Ok(Admitted {
            number: attempted,
            call_id,
            call,
            args_digest,
            arg_bytes: canonical.len(),
            started,
            slot,
            replayed_cell: replayed_cell.is_some(),
        })
    }

    /// Gates 2–8 for an admitted call; closes its trace record. The call is
    /// a [`telemetry::CALL_SPAN`] under the session's span: its tool, ids,
    /// digest, policy decision and ending, never its arguments.
    pub async fn run(&self, admitted: Admitted) -> CallOutcome {
        if !self.traced {
            return self.run_in_span(admitted, &tracing::Span::none()).await;
        }
        let span = tracing::info_span!(
            parent: self.parent.clone(),
            telemetry::CALL_SPAN,
            otel.name = format!("execute_tool {}", admitted.call.tool),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %admitted.call.tool,
            gen_ai.tool.call.id = %admitted.call_id,
            chainbox.call.seq = admitted.number,
            chainbox.args_digest = %admitted.args_digest,
            chainbox.status = tracing::field::Empty,
            chainbox.policy = tracing::field::Empty,
            chainbox.risk = tracing::field::Empty,
            chainbox.source = tracing::field::Empty,
            chainbox.artifact_ref = tracing::field::Empty,
            chainbox.replayed = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        self.run_in_span(admitted, &span).instrument(span.clone()).await
    }

    /// [`InvokerSession::run`] inside the call's span.
    async fn run_in_span(&self, admitted: Admitted, span: &tracing::Span) -> CallOutcome {
        let Admitted {
            number,
            call_id,
            call,
            args_digest,
            arg_bytes,
            started,
            slot,
            replayed_cell,
        } = admitted;
        // Raw arguments may hold secrets: only at debug level.
        tracing::debug!(target: "chainbox::audit", run_id = %self.run_id, tool = %call.tool, args = ?call.args, "tool call arguments");
        let mut verdict = Verdict::default();
        let journaled = self.journaled(number);
        let (status, outcome, artifact_ref, files) = match journaled {
            // Answered from the journal: the tool ran when the chain first
            // made this call, and does not run again.
            Some(entry) => {
                verdict.source.clone_from(&entry.source);
                verdict.policy = entry.policy;
                verdict.provenance.clone_from(&entry.provenance);
                self.shaper.replayed(&entry.tool, entry.artifact_ref, &entry.files);
                (
                    entry.status,
                    entry.outcome.clone(),
                    entry.artifact_ref,
                    entry.files.clone(),
                )
            }
            None => {
                self.gates(number, slot, &call.tool, call.args, arg_bytes, &mut verdict)
                    .await
            }
        };
        if let Some(flow) = &self.flow
            && flow.tools.is_untrusted(&call.tool)
            && delivers(&outcome)
        {
            // A replayed earlier cell's call has no record: its id names nothing.
            let id = (!replayed_cell).then(|| call_id.clone());
            flow.delivered(number, id, &call.tool, artifact_ref);
        }
        if replayed_cell {
            self.drop_slot(slot);
            return outcome;
        }
        // The call the chain suspends at has no outcome yet: it is the
        // result's `pending`, not a record, and the journal does not hold it.
        if self.lock_suspended().as_ref().is_some_and(|p| p.seq == number) {
            tracing::info!(target: telemetry::EVENT_TARGET, "chainbox.suspended");
            self.drop_slot(slot);
            return outcome;
        }
        let verdict_risk = verdict.risk;
        let record = ChainCallRecord {
            call_id,
            tool: call.tool,
            args_digest,
            status,
            duration_ms: millis(started.elapsed()),
            artifact_ref,
            error: match &outcome {
                CallOutcome::Ok { .. } => None,
                CallOutcome::Error { message }
                | CallOutcome::Denied { message }
                | CallOutcome::Timeout { message }
                | CallOutcome::Invalid { message }
                | CallOutcome::NotFound { message } => Some(message.clone()),
            },
            source: verdict.source,
            observed_at: journaled.map_or_else(utc_now_rfc3339, |entry| entry.observed_at.clone()),
            policy: verdict.policy,
            replayed: journaled.is_some(),
            provenance: verdict.provenance,
        };
        if let (None, Some(journal)) = (journaled, &self.journal) {
            let appended = journal.append(JournalEntry {
                seq: number,
                tool: record.tool.clone(),
                args_digest: record.args_digest.clone(),
                status: record.status,
                outcome: outcome.clone(),
                artifact_ref: record.artifact_ref,
                files,
                source: record.source.clone(),
                policy: record.policy,
                observed_at: record.observed_at.clone(),
                provenance: record.provenance.clone(),
            });
            if let Err(e) = appended.await {
                tracing::error!(run_id = %self.run_id, error = %e, "journal write failed");
                self.lock_journal_failure().get_or_insert(e);
            }
        }
        // Measured only when someone listens: it costs a serialisation.
        let result_bytes = match &outcome {
            CallOutcome::Ok { value } if tracing::enabled!(target: "chainbox::audit", tracing::Level::INFO) => {
                serde_json::to_string(value).map_or(0, |s| s.len())
            }
            _ => 0,
        };
        audit_call(&self.run_id, self.principal.as_ref(), &record, result_bytes);
        if !span.is_disabled() {
            record_call(span, &record, &outcome, verdict_risk);
        }
        telemetry::call_ended(&record.tool, record.status.as_str(), started.elapsed());
        self.close_slot(slot, record);
        outcome
    }

    /// Gates 2–8 for a call that passed the budget: how it ended, what the
    /// script sees, and the artifact its result was offloaded to.
    async fn gates(
        &self,
        number: u32,
        slot: usize,
        name: &str,
        args: Map<String, Value>,
        arg_bytes: usize,
        verdict: &mut Verdict,
    ) -> Answer {
        match self.checked_call(number, slot, name, args, arg_bytes, verdict).await {
            Ok((value, artifact_ref, files)) => (CallStatus::Ok, CallOutcome::Ok { value }, artifact_ref, files),
            Err((status, outcome)) => (status, outcome, None, Vec::new()),
        }
    }

    async fn checked_call(
        &self,
        number: u32,
        slot: usize,
        name: &str,
        mut args: Map<String, Value>,
        arg_bytes: usize,
        verdict: &mut Verdict,
    ) -> Result<(Value, Option<ArtifactRef>, Vec<ChainFile>), Refusal> {
        // Gate 2: exact-name lookup.
        let tool = self
            .registry
            .get(name)
            .ok_or_else(|| refuse(CallStatus::Error, not_found(format!("no tool named {name:?}"))))?;
        verdict.source = Some(tool.source());
        // Gate 3: kind. Only local tools run, and never `run_chain` itself:
        // a chain starting chains would escape its own budget and deadline.
        let tool = match local_or_refusal(tool) {
            Ok(tool) => tool,
            Err(why) => {
                verdict.policy = Some(PolicyDecision::DeniedKind);
                return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
            }
        };
        // Gate 4: arguments. Size first (before anything walks them), then
        // artifact handles resolved on the host, then the schema.
        if arg_bytes as u64 > self.policy.max_arg_bytes {
            let max = self.policy.max_arg_bytes;
            return Err(invalid(format!(
                "arguments of {name:?} are {arg_bytes} bytes, over max_arg_bytes = {max}"
            )));
        }
        // Gate 5 reads the handles the script passed, before they are resolved.
        let handles = match &self.flow {
            Some(flow) => flow.handles_in(name, &args),
            None => Vec::new(),
        };
        for value in args.values_mut() {
            self.shaper.resolve_handles(value).map_err(invalid)?;
        }
        self.registry.validate(name, &args).map_err(invalid)?;
        if self.policy.is_denied(name) {
            verdict.policy = Some(PolicyDecision::DeniedTool);
            let why = format!("tool {name:?} is denied by policy");
            return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
        }
        if !self.policy.allows_tool(name) {
            verdict.policy = Some(PolicyDecision::DeniedNotAllowed);
            let by = self
                .policy
                .allowed_by
                .as_deref()
                .unwrap_or("the policy's allowed_tools");
            let why = format!("tool {name:?} is not allowed in this chain: {by} does not list it");
            return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
        }
        let missing = self.policy.missing_permissions(tool.permissions());
        if !missing.is_empty() {
            verdict.policy = Some(PolicyDecision::DeniedPermission);
            let missing: Vec<&str> = missing.iter().map(|p| p.as_str()).collect();
            let why = format!(
                "tool {name:?} needs permission {}, which the policy does not grant (granted_permissions)",
                missing.join(", ")
            );
            return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
        }
        // The principal's scopes, before anyone is asked to approve: a human
        // never approves a call its caller may not make. The local user
        // (no principal) is not restricted by them.
        if let Some(principal) = &self.principal
            && let Some(scope) = principal.missing_scope(self.policy.required_scopes(name))
        {
            verdict.policy = Some(PolicyDecision::DeniedScope);
            let why = format!(
                "tool {name:?} requires scope {scope:?}, which the caller this chain runs for was not granted \
                 (tools.{name}.required_scopes)"
            );
            return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
        }
        // `classify` is the tool's own code, run outside `execute`'s panic
        // guard: a panic in it (say `args["sql"]` on a call without `sql`)
        // unwound through the sandbox and out of `Engine::run`. Fail closed.
        let classified = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.classify(&args)));
        let Ok(classified) = classified else {
            return Err(tool_error(format!(
                "tool {name:?} panicked while rating the call's risk"
            )));
        };
        let risk = self.policy.effective_risk(name, classified);
        verdict.risk = Some(risk);
        verdict.policy = Some(PolicyDecision::WithinRisk);
        // Gate 5: data flow. Untrusted results that have arrived and may
        // reach a guarded argument: approval as for a critical call.
        let sources = match &self.flow {
            Some(flow) => flow.sources(number, name, &handles),
            None => Vec::new(),
        };
        if !sources.is_empty() {
            verdict.provenance.clone_from(&sources);
            self.mark_held(slot, &sources);
            self.ask(number, name, &mut args, ToolRisk::Critical, sources, verdict)
                .await?;
        } else if risk > self.policy.max_risk_unapproved {
            // Gate 6: risk above the unapproved maximum needs approval (fail closed).
            self.ask(number, name, &mut args, risk, Vec::new(), verdict).await?;
        }
        // Gate 7: execution under the call timeout; a panic is contained.
        // The running record learns what let the call through, so a chain
        // killed while the tool runs still reports it.
        self.mark_passed(slot, verdict);
        let timeout = self.policy.call_timeout(name);
        let ctx = ToolContext {
            run_id: self.run_id.clone(),
            call_id: u64::from(number),
            // Not `now + timeout`: a valid policy may say `call_timeout_s =
            // 1e19` ("never"), and that overflowed `Instant` and panicked out
            // of `Engine::run` on the first call. A century is "never" enough.
            deadline: Instant::now()
                .checked_add(timeout)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)),
        };
        // Polled in place, not spawned: most tools answer at once, and a
        // spawned task would cost a thread hop per call. Dropping this call
        // (the chain ended) drops the tool's future with it.
        let task = std::panic::AssertUnwindSafe(tool.execute(ctx, args)).catch_unwind();
        let executing = Instant::now();
        let output = match tokio::time::timeout(timeout, task).await {
            Err(_) => {
                let message = format!("tool {name:?} timed out after {}", secs(timeout));
                return Err(refuse(CallStatus::Timeout, CallOutcome::Timeout { message }));
            }
            // A tool that blocks its thread cannot be preempted, so the timer
            // above only fires at its next await. Its late answer still
            // breaks the policy: the script gets the timeout, not the value.
            Ok(_) if executing.elapsed() > timeout => {
                let message = format!(
                    "tool {name:?} timed out after {} (it blocked its thread; its late result was discarded)",
                    secs(timeout)
                );
                return Err(refuse(CallStatus::Timeout, CallOutcome::Timeout { message }));
            }
            Ok(Err(_panic)) => return Err(tool_error(format!("tool {name:?} panicked"))),
            Ok(Ok(Err(e))) => return Err(tool_error(e.message)),
            Ok(Ok(Ok(output))) => output,
        };
        // A Rust tool can return a value of any depth, and everything below
        // (serialising, cloning, dropping) recurses on the chain's fiber
        // stack: a 200,000-deep result overflowed it and aborted the host.
        // Refuse such results before touching them; the sandbox could not
        // take a value deeper than MAX_VALUE_DEPTH anyway.
        let output = refuse_too_deep(name, output)?;
        // Gate 8: result shaping: media to files, large values to artifacts.
        let (value, files) = match output {
            ToolOutput::Value(value) => (value, Vec::new()),
            ToolOutput::Result(result) if result.is_error => return Err(tool_error(result.text())),
            ToolOutput::Result(result) => self.shaper.media_result(name, result).map_err(tool_error)?,
        };
        let (value, artifact_ref) = self.shaper.inline_or_offload(value).map_err(tool_error)?;
        Ok((value, artifact_ref, files))
    }

    /// Asks the approval handler about call `number` of `name`, held by
    /// gate 5 (`sources`, the untrusted results it may derive from, not
    /// empty) or gate 6, and acts on the answer, failing closed: `Ok` lets
    /// it run, with the human's replacement `args` if they gave some; a
    /// durable chain suspends at it when there is no decision yet.
    async fn ask(
        &self,
        number: u32,
        name: &str,
        args: &mut Map<String, Value>,
        risk: ToolRisk,
        sources: Vec<FlowSource>,
        verdict: &mut Verdict,
    ) -> Result<(), Refusal> {
        let flow = !sources.is_empty();
        let request = ApprovalRequest::new(self.run_id.clone(), u64::from(number), name, args.clone(), risk)
            .with_provenance(sources);
        let waiting = tracing::info_span!(
            telemetry::APPROVAL_SPAN,
            chainbox.risk = risk.as_str(),
            chainbox.flow.sources = tracing::field::Empty,
            chainbox.approval.decision = tracing::field::Empty,
        );
        if flow {
            waiting.record("chainbox.flow.sources", request.provenance.len());
        }
        let outcome = decide(&self.approval, &request, self.policy.approval_timeout())
            .instrument(waiting.clone())
            .await;
        waiting.record("chainbox.approval.decision", decision_name(&outcome.decision));
        let (approved, modified, refused) = if flow {
            let approved = PolicyDecision::ApprovedFlow;
            (approved, approved, PolicyDecision::DeniedFlow)
        } else {
            (
                PolicyDecision::Approved,
                PolicyDecision::ApprovedModified,
                PolicyDecision::DeniedApproval,
            )
        };
        verdict.policy = Some(refused);
        let why = match outcome.decision {
            ApprovalDecision::Approved => {
                verdict.policy = Some(approved);
                return Ok(());
            }
            ApprovalDecision::Modified { arguments } => {
                // A human's replacement arguments pass the schema too.
                verdict.policy = Some(modified);
                self.registry.validate(name, &arguments).map_err(invalid)?;
                *args = arguments;
                return Ok(());
            }
            ApprovalDecision::Denied { reason } => reason.unwrap_or_else(|| "denied".to_owned()),
            ApprovalDecision::Skipped => "skipped".to_owned(),
            ApprovalDecision::Suspend if self.journal.is_some() => {
                verdict.policy = None;
                self.lock_suspended().get_or_insert(PendingCall {
                    seq: number,
                    tool: name.to_owned(),
                    arguments: std::mem::take(args),
                    risk,
                    requested_at: request.requested_at,
                    provenance: request.provenance,
                });
                self.shaper.keep_pins();
                let why = "suspended: the call waits on a decision".to_owned();
                return Err(refuse(CallStatus::Denied, CallOutcome::Denied { message: why }));
            }
            ApprovalDecision::Suspend => "no decision, and the chain is not durable (it cannot suspend)".to_owned(),
        };
        Err(match provenance_note(&request.provenance) {
            Some(note) => {
                let message = format!("call to {name:?} was denied by the data-flow policy ({note}): {why}");
                (CallStatus::Denied, CallOutcome::Denied { message })
            }
            None => denied(name, risk, &why),
        })
    }

    fn open_slot(&self, call_id: &str, tool: &str, digest: &str, started: Instant) -> usize {
        let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        trace.push(Slot::Running(Running {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            args_digest: digest.to_owned(),
            started,
            passed: None,
            held: Vec::new(),
        }));
        trace.len() - 1
    }

    /// Gate 5 holds the running call for `sources`.
    fn mark_held(&self, slot: usize, sources: &[FlowSource]) {
        let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Slot::Running(running)) = trace.get_mut(slot) {
            running.held = sources.to_vec();
        }
    }

    fn mark_passed(&self, slot: usize, verdict: &Verdict) {
        let started = {
            let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
            match trace.get_mut(slot) {
                Some(Slot::Running(Running {
                    passed, call_id, tool, ..
                })) => {
                    *passed = Some(verdict.clone());
                    // Named for the observer only: no copies without one.
                    self.observer.as_ref().map(|_| (call_id.clone(), tool.clone()))
                }
                _ => None,
            }
        };
        if let (Some(observer), Some((call_id, tool))) = (&self.observer, started) {
            observer.send(ChainEvent::CallStarted { call_id, tool });
        }
    }

    fn close_slot(&self, slot: usize, record: ChainCallRecord) {
        if let Some(observer) = &self.observer {
            observer.send(ChainEvent::CallFinished(record.clone()));
        }
        let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = trace.get_mut(slot) {
            *entry = Slot::Done(record);
        }
    }

    /// Takes a call out of the trace (the call a chain suspends at).
    fn drop_slot(&self, slot: usize) {
        let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = trace.get_mut(slot) {
            *entry = Slot::Pending;
        }
    }

    /// The call the chain suspended at, if it did: the chain must end now,
    /// once the calls still running have finished (and been journaled).
    pub fn suspended(&self) -> Option<PendingCall> {
        self.lock_suspended().clone()
    }

    /// The first call the journal failed to record, if one: the chain must
    /// end now (a resume would run that call again).
    pub fn journal_failure(&self) -> Option<JournalError> {
        self.lock_journal_failure().clone()
    }

    fn lock_journal_failure(&self) -> std::sync::MutexGuard<'_, Option<JournalError>> {
        self.journal_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_suspended(&self) -> std::sync::MutexGuard<'_, Option<PendingCall>> {
        self.suspended.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The journal's entry for call number `seq`, when the chain is being
    /// resumed and its journal holds that call. By number, not position:
    /// the journal may have gaps (a gathered call that finished while an
    /// earlier one waited on the decision the chain suspended for).
    fn journaled(&self, seq: u32) -> Option<&JournalEntry> {
        let index = self.replay.binary_search_by_key(&seq, |entry| entry.seq).ok()?;
        self.replay.get(index)
    }

    /// The trace so far, in call order. Calls still running are reported
    /// with `interrupted` as their status and `why` as their error: the chain
    /// ended while they ran, so their side effects are unknown.
    pub fn trace(&self, interrupted: CallStatus, why: &str) -> Vec<ChainCallRecord> {
        let trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        trace
            .iter()
            .filter_map(|slot| match slot {
                Slot::Done(record) => Some(record.clone()),
                Slot::Running(running) => Some(self.ended_early(running, interrupted, why)),
                Slot::Pending => None,
            })
            .collect()
    }

    /// Closes the record of a call the script stopped waiting for (a
    /// cancelled task: `asyncio.wait_for`'s timeout, `task.cancel()`), whose
    /// tool is being stopped: `error`, with `why`. A call that finished
    /// first keeps its record.
    pub(crate) fn close_cancelled(&self, slot: usize, why: &str) {
        let closed = {
            let mut trace = self.trace.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = trace.get_mut(slot)
                && let Slot::Running(running) = entry
            {
                let record = self.ended_early(running, CallStatus::Error, why);
                *entry = Slot::Done(record.clone());
                Some(record)
            } else {
                None
            }
        };
        if let (Some(observer), Some(record)) = (&self.observer, closed) {
            observer.send(ChainEvent::CallFinished(record));
        }
    }

    /// The record of a call that ended before its tool answered.
    fn ended_early(&self, running: &Running, status: CallStatus, why: &str) -> ChainCallRecord {
        let Running {
            call_id,
            tool,
            args_digest,
            started,
            passed,
            held,
        } = running;
        ChainCallRecord {
            call_id: call_id.clone(),
            tool: tool.clone(),
            args_digest: args_digest.clone(),
            status,
            duration_ms: millis(started.elapsed()),
            artifact_ref: None,
            error: Some(why.to_owned()),
            source: passed
                .as_ref()
                .and_then(|v| v.source.clone())
                .or_else(|| self.registry.get(tool).map(AnyTool::source)),
            observed_at: utc_now_rfc3339(),
            policy: passed.as_ref().and_then(|v| v.policy),
            replayed: false,
            provenance: passed.as_ref().map_or_else(|| held.clone(), |v| v.provenance.clone()),
        }
    }
}

/// A decision's name on an approval's span.
fn decision_name(decision: &ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::Approved => "approved",
        ApprovalDecision::Modified { .. } => "modified",
        ApprovalDecision::Denied { .. } => "denied",
        ApprovalDecision::Skipped => "skipped",
        ApprovalDecision::Suspend => "suspend",
    }
}

/// The ending of a call on its span (a span nobody exports is skipped by
/// the caller: this formats).
fn record_call(
    span: &tracing::Span,
    record: &ChainCallRecord,
    outcome: &CallOutcome,
    risk: Option<crate::tools::ToolRisk>,
) {
    span.record("chainbox.status", record.status.as_str());
    if let Some(risk) = risk {
        span.record("chainbox.risk", risk.as_str());
    }
    span.record("chainbox.replayed", record.replayed);
    if let Some(policy) = record.policy {
        span.record("chainbox.policy", policy.as_str());
    }
    if let Some(source) = &record.source {
        span.record("chainbox.source", source.as_str());
    }
    if let Some(artifact) = record.artifact_ref {
        span.record("chainbox.artifact_ref", artifact.to_string());
    }
    let error_type = match outcome {
        CallOutcome::Ok { .. } => return,
        CallOutcome::Error { .. } => "tool_error",
        CallOutcome::Denied { .. } => "denied",
        CallOutcome::Timeout { .. } => "timeout",
        CallOutcome::Invalid { .. } => "invalid_arguments",
        CallOutcome::NotFound { .. } => "not_found",
    };
    span.record("error.type", error_type);
    telemetry::record_error(span);
}

/// Provenance gathered while a call passes the gates: the tool's source once
/// it is found, and the latest policy decision taken on it.
#[derive(Debug, Clone, Default)]
struct Verdict {
    source: Option<String>,
    policy: Option<PolicyDecision>,
    /// The call's effective risk, once rated (for its span).
    risk: Option<crate::tools::ToolRisk>,
    /// The untrusted results gate 5 held it for.
    provenance: Vec<FlowSource>,
}

/// The local tool behind `tool`, or why a chain may not call it. Hosted
/// and provider-defined tools are `denied` rather than `error`: nothing is
/// wrong with the tool or the call, the chain is just not a place they can
/// run (policy, like `tools.NAME.deny`), and the script sees the same
/// `PermissionError` as for every other refusal.
fn local_or_refusal(tool: &AnyTool) -> Result<Arc<dyn crate::tools::Tool>, String> {
    let name = tool.name();
    match tool {
        AnyTool::Local(_) if name == RUN_CHAIN => Err(format!("{RUN_CHAIN} cannot be called from inside a chain")),
        AnyTool::Local(tool) => Ok(tool.clone()),
        AnyTool::Hosted(_) => Err(format!(
            "tool {name:?} is a hosted tool: the model provider runs it and its result comes back in the \
             conversation, so a chain cannot call it"
        )),
        AnyTool::ProviderDefined(t) => Err(format!(
            "tool {name:?} is a provider-defined tool: the model emits its calls as provider call items ({}) \
             that the agent loop runs with handle_call, so a chain cannot call it",
            t.call_types().join(", ")
        )),
    }
}

/// What a call ended as, what the script sees, its offloaded result, and
/// the media files it wrote.
type Answer = (CallStatus, CallOutcome, Option<ArtifactRef>, Vec<ChainFile>);

/// A call that did not produce a value.
type Refusal = (CallStatus, CallOutcome);

fn refuse(status: CallStatus, outcome: CallOutcome) -> Refusal {
    (status, outcome)
}

fn not_found(message: String) -> CallOutcome {
    CallOutcome::NotFound { message }
}

fn invalid(message: impl std::fmt::Display) -> Refusal {
    let message = message.to_string();
    (CallStatus::Error, CallOutcome::Invalid { message })
}

fn tool_error(message: impl std::fmt::Display) -> Refusal {
    let message = message.to_string();
    // A tool's error text reaches the script, the trace and so the model's
    // context: bounded like a command tool's stderr (a Rust tool's 10 MB
    // error message went through whole, into every one of them).
    let message = truncate_chars(&message, MAX_ERROR_MESSAGE_CHARS);
    (CallStatus::Error, CallOutcome::Error { message })
}

fn denied(name: &str, risk: crate::tools::ToolRisk, reason: &str) -> Refusal {
    let message = format!("call to {name:?} ({risk} risk) was denied: {reason}");
    (CallStatus::Denied, CallOutcome::Denied { message })
}

/// `output` if no JSON value in it nests deeper than [`MAX_VALUE_DEPTH`];
/// otherwise a tool error, with the value taken apart without recursion.
fn refuse_too_deep(name: &str, output: ToolOutput) -> Result<ToolOutput, Refusal> {
    let too_deep = match &output {
        ToolOutput::Value(value) => deeper_than(value, MAX_VALUE_DEPTH),
        ToolOutput::Result(result) => result
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Json { json } => Some(json),
                _ => None,
            })
            .chain(result.metadata.values())
            .chain(result.structured_content.values())
            .any(|v| deeper_than(v, MAX_VALUE_DEPTH)),
    };
    if !too_deep {
        return Ok(output);
    }
    let mut pending: Vec<Value> = match output {
        ToolOutput::Value(value) => vec![value],
        ToolOutput::Result(result) => result
            .content
            .into_iter()
            .filter_map(|b| match b {
                ContentBlock::Json { json } => Some(json),
                _ => None,
            })
            .chain(result.metadata.into_iter().map(|(_, v)| v))
            .chain(result.structured_content.into_iter().map(|(_, v)| v))
            .collect(),
    };
    // Dropped one level at a time: a recursive drop would overflow too.
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
    Err(tool_error(format!(
        "tool {name:?} returned a value nested deeper than {MAX_VALUE_DEPTH} levels"
    )))
}

/// Whether `value` nests deeper than `max` levels, checked without recursion.
fn deeper_than(value: &Value, max: usize) -> bool {
    // Most results are scalars or flat: no allocation for those.
    if !matches!(value, Value::Array(_) | Value::Object(_)) {
        return false;
    }
    let mut pending = vec![(value, 0usize)];
    while let Some((value, depth)) = pending.pop() {
        let before = pending.len();
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|c| (c, depth + 1))),
            Value::Object(map) => pending.extend(map.values().map(|c| (c, depth + 1))),
            _ => {}
        }
        if pending.len() > before && depth + 1 > max {
            return true;
        }
    }
    false
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
