//! `chainbox serve`: chainbox as an MCP server (see the module docs of
//! [`crate::mcp`]). An agent's MCP client sees one tool, `run_chain`
//! (described by [`crate::run_chain::run_chain_tool`]); each call runs one chain
//! on the shared [`Engine`] and answers with the chain's answer as text and
//! the whole [`ChainRunResult`] as structured content.
//!
//! Invariants:
//! - Calls run concurrently: [`ChainServer`] holds shared, immutable state
//!   (engine, registry, policy) and one map of parked chains, locked only to
//!   insert or take an entry, never across a chain.
//! - A failed chain is a tool-level error (`isError: true`, the result still
//!   structured), never a protocol error; a protocol error means the request
//!   itself was wrong (an unknown tool, no `code`).
//! - Approval fails closed: a risky call is put to the client's user when the
//!   client declared form elicitation (an elicitation request before protocol
//!   2026-07-28; from it on, which forbids server-to-client requests, an
//!   input-required result: the chain waits in its own task, parked under an
//!   unguessable `requestState`, until the client retries with the answer),
//!   otherwise to the fallback handler (`--approve`, deny by default), under
//!   the policy's approval timeout either way.
//! - Over HTTP, only loopback addresses are bound unless callers are
//!   authenticated ([`HttpAccess::OAuth`]: every request needs a valid
//!   bearer token, see [`crate::auth`]) or the operator says a proxy does
//!   it ([`HttpAccess::InsecureNoAuth`]); without authentication, requests
//!   whose `Host` is not loopback are refused, and a browser `Origin` must
//!   be loopback (DNS rebinding), both by rmcp's own checks.
//! - With authentication, everything a call leaves behind belongs to its
//!   principal: durable chains record it as their owner, a `requestState`
//!   is sealed with it, a parked chain remembers it, and a retry by
//!   another principal is refused (`-32602`) with nothing recorded or run.
//!   Without it, callers are the local user.
//! - A chain lives no longer than its request: when rmcp cancels the
//!   request (`notifications/cancelled`; over HTTP a dropped stateless
//!   request or a `DELETE`d session; stdin closed) or the server shuts down
//!   ([`ChainServer::cancel_all`]), the chain ends as `cancelled`: its tool
//!   calls in flight are stopped and no further call runs. A parked chain
//!   is cancelled when its round is, or when it is dropped unanswered.
//! - Every request is bounded by the policy's `max_request_bytes`, and one
//!   over it, or unreadable, is answered with a JSON-RPC error, never
//!   dropped (see `request_limit`).
//! - With a chain store (`--state`, [`ChainServer::with_store`]), chains
//!   whose approvals go to the client are durable (see [`crate::durable`]).
//!   On protocol 2026-07-28 a call needing approval suspends the chain in
//!   the store (no task, instance or claim held) and the input-required
//!   result's `requestState` is sealed ([`super::sealed_state`]): the
//!   client's retry, on any node of the store, is refused unless its seal
//!   verifies, then records the answer as the call's decision (the first
//!   decision on a call stands) and resumes the chain. A retry whose chain
//!   another request is resuming waits for that resume to end (polling the
//!   store, at most the policy's `total_timeout_s`) and answers with what
//!   it ended in; so two retries of one state run the approved call once
//!   and get the same answer. Elicitation (older clients) waits in-process
//!   as without a store, the chain journaled.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::serve::ListenerExt;
use opentelemetry::context::FutureExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CustomRequest,
    CustomResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ErrorCode,
    ErrorData, GetTaskParams, GetTaskResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod tasks;

use super::request_limit;
use super::sealed_state::{OpenError, RequestState, StateKey};
use crate::Engine;
use crate::approval::{Approval, ApprovalDecision, ApprovalError, ApprovalHandler, ApprovalRequest, PendingApproval};
#[cfg(feature = "oauth")]
use crate::auth::Authenticator;
#[cfg(feature = "oauth")]
use crate::auth::http::HttpAuth;
use crate::chain::RunOptions;
use crate::durable::{Durable, DurableError};
use crate::live::{ChainEvent, Observer};
use crate::policy::ChainPolicy;
use crate::principal::{Owner, Principal, may_act_on};
use crate::result::{ChainRunResult, ChainStatus, PendingCall};
use crate::run_chain::{RUN_CHAIN, run_chain_tool};
use crate::store::StoreError;
use crate::store::sweep::{SweepError, SweepOptions};
use crate::tools::ToolRegistry;

/// Where the MCP endpoint is mounted on the HTTP server.
pub const HTTP_PATH: &str = "/mcp";

/// What the server tells a client about itself at initialisation.
const INSTRUCTIONS: &str = "chainbox runs Python chain scripts in a sandbox. Call `run_chain` with \
     one script that calls the tools listed in its description and ends with the answer.";

/// Errors starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without authentication.
    #[error(
        "refusing to serve on {0}: it is not a loopback address, and without --auth-issuer anyone who can \
         reach it could run chains; pass --auth-issuer ISSUER_URL --auth-resource PUBLIC_URL to authenticate \
         callers, or --insecure-no-auth behind a proxy that authenticates them"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The MCP session over stdio did not start (no `initialize`, a closed stdin).
    #[error("starting the MCP session on stdio: {0}")]
    Stdio(Box<rmcp::service::ServerInitializeError>),
    /// The MCP session over stdio failed while running (its task panicked
    /// or was cancelled).
    #[error("serving MCP: {0}")]
    Session(tokio::task::JoinError),
    /// The HTTP server could not take its listener, or failed while running.
    #[error("serving MCP: {0}")]
    Http(std::io::Error),
}

/// The MCP server: one `run_chain` tool over a registry, under a policy.
/// Cheap to clone: every session (HTTP creates one per client) shares the
/// same engine and registry.
#[derive(Clone)]
pub struct ChainServer {
    inner: Arc<Shared>,
}

struct Shared {
    engine: Engine,
    registry: ToolRegistry,
    policy: ChainPolicy,
    /// Decides risky calls when the client cannot be asked.
    fallback: Approval,
    /// `run_chain` as listed.
    tool: Tool,
    /// Chains waiting for an approval the client gives in a later round
    /// (protocol 2026-07-28), by the `requestState` handed out. Locked only
    /// to insert or take an entry, never across a chain.
    parked: Mutex<HashMap<String, Parked>>,
    /// Cancelled when the server shuts down: every chain's cancellation is
    /// a child of it.
    shutdown: CancellationToken,
    /// The chain store, when the server has one (`--state`).
    durable: Option<DurableServe>,
    /// The MCP tasks this node runs now, by id: cancelling one stops its
    /// chain (see `tasks`).
    tasks: Mutex<HashMap<String, CancellationToken>>,
}

/// Durable chains of a server with a chain store, and the key its
/// `requestState`s are sealed with.
struct DurableServe {
    durable: Durable,
    key: StateKey,
}

/// How a decision an MCP client's user made is recorded (`decided_by`).
const DECIDED_BY: &str = "mcp client";

/// How often a retry whose chain is being resumed by another request looks
/// at the store again.
const RESUME_POLL: Duration = Duration::from_millis(100);

/// A chain running in its own task for a protocol-2026-07-28 call: its
/// risky calls arrive on `approvals`, to be put to the client as
/// input-required results. Dropping it cancels the chain (through `cancel`,
/// so the chain ends itself as `cancelled`, trace and audit log kept).
struct Running {
    task: JoinHandle<CallToolResult>,
    approvals: mpsc::Receiver<PendingApproval>,
    cancel: CancellationToken,
    /// Whose chain it is: only its principal's retry answers it.
    owner: Option<Owner>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A [`Running`] chain parked on `pending` until the client answers.
struct Parked {
    chain: Running,
    pending: PendingApproval,
    since: Instant,
}

/// The key of the approval form among a round's input requests.
const APPROVAL_INPUT: &str = "approval";

impl ChainServer {
    /// A server running chains on `engine` against `registry` under
    /// `policy`; risky calls go to the client by elicitation when it can
    /// answer, otherwise to `fallback`.
    pub fn new(engine: Engine, registry: ToolRegistry, policy: ChainPolicy, fallback: Approval) -> Self {
        Self::build(engine, registry, policy, fallback, None)
    }

    /// [`Self::new`], with chains kept in `durable`'s store: approvals put
    /// to the client suspend durable chains there, and the `requestState`s
    /// handed out are sealed with `key` (see the module's invariants).
    pub fn with_store(
        engine: Engine,
        registry: ToolRegistry,
        policy: ChainPolicy,
        fallback: Approval,
        durable: Durable,
        key: StateKey,
    ) -> Self {
        Self::build(engine, registry, policy, fallback, Some(DurableServe { durable, key }))
    }

    fn build(
        engine: Engine,
        registry: ToolRegistry,
        policy: ChainPolicy,
        fallback: Approval,
        durable: Option<DurableServe>,
    ) -> Self {
        let spec = match durable {
            Some(_) => run_chain_tool(&registry, &policy).with_sessions(&policy),
            None => run_chain_tool(&registry, &policy),
        };
        let tool = Tool::new(spec.name, spec.description, json_object(spec.input_schema))
            .with_raw_output_schema(Arc::new(json_object(spec.output_schema)));
        ChainServer {
            inner: Arc::new(Shared {
                engine,
                registry,
                policy,
                fallback,
                tool,
                parked: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                durable,
                tasks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Largest request the transports read: the policy's
    /// `max_request_bytes` (see `request_limit`).
    pub fn max_request_bytes(&self) -> u64 {
        self.inner.policy.max_request_bytes
    }

    /// Cancels every chain, running or parked, and every chain started
    /// after: each ends as `cancelled`, its tool calls in flight stopped.
    /// For shutting down.
    pub fn cancel_all(&self) {
        self.inner.shutdown.cancel();
    }

    /// Runs `run` with a cancellation token cancelled when `request` is or
    /// the server shuts down.
    async fn cancellable<F: Future>(
        &self,
        request: &CancellationToken,
        run: impl FnOnce(CancellationToken) -> F,
    ) -> F::Output {
        let cancel = self.inner.shutdown.child_token();
        let run = run(cancel.clone());
        tokio::pin!(run);
        tokio::select! {
            out = &mut run => out,
            () = request.cancelled() => {
                cancel.cancel();
                run.await
            }
        }
    }

    /// Sweeps the server's chain store and artifact store (the engine's)
    /// now and then every `every`, until the server shuts down (see
    /// [`crate::store::sweep`]): abandoned and expired chains finished,
    /// finished ones deleted after their `retention_s`, old unpinned
    /// artifacts deleted. One node of those sharing the store sweeps at a
    /// time (the store's sweep lock); a node finding it held skips that
    /// round. Nothing without a store. Call it inside the server's runtime.
    pub fn sweep_every(&self, every: Duration, options: SweepOptions) -> Option<JoinHandle<()>> {
        let durable = self.inner.durable.as_ref()?.durable.clone();
        let shutdown = self.inner.shutdown.clone();
        Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = shutdown.cancelled() => return,
                }
                match durable.sweep(&options).await {
                    Ok(report) => tracing::info!(?report, "swept the chain store"),
                    Err(SweepError::Busy { holder }) => tracing::debug!(%holder, "another node sweeps the store now"),
                    Err(e) => tracing::warn!(error = %e, "sweeping the chain store failed"),
                }
            }
        }))
    }

    /// `run_chain` as the server lists it.
    pub fn tool(&self) -> &Tool {
        &self.inner.tool
    }

    /// Runs one chain with `approval` and wraps its result for MCP.
    /// Cancelling `cancel` ends the chain as `cancelled` (see
    /// [`RunOptions::cancel`]).
    pub async fn run_chain(&self, code: &str, approval: &Approval, cancel: CancellationToken) -> CallToolResult {
        self.run_chain_observed(code, approval, cancel, None, None).await
    }

    /// [`Self::run_chain`], its events given to `observer` as it runs.
    async fn run_chain_observed(
        &self,
        code: &str,
        approval: &Approval,
        cancel: CancellationToken,
        observer: Option<Observer>,
        principal: Option<Principal>,
    ) -> CallToolResult {
        let shared = &self.inner;
        let options = RunOptions {
            cancel: Some(cancel),
            observer,
            principal,
            ..RunOptions::default()
        };
        let result = shared
            .engine
            .run_with(code, &shared.registry, &shared.policy, approval, options)
            .await;
        call_tool_result(&result)
    }

    /// How one call's risky tool calls are approved: by the client's user
    /// when it declared form elicitation (through elicitation requests before
    /// protocol 2026-07-28, through input-required results from it on), by
    /// the fallback handler otherwise.
    fn approval_route(&self, context: &RequestContext<RoleServer>) -> ApprovalRoute {
        let form = context
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        match context.protocol_version() {
            Some(v) if form && v >= ProtocolVersion::V_2026_07_28 => ApprovalRoute::InputRequired,
            Some(_) if form => ApprovalRoute::Elicit(Approval::new(ElicitApproval {
                peer: context.peer.clone(),
            })),
            _ => ApprovalRoute::Handler(self.inner.fallback.clone()),
        }
    }

    /// Starts `code` in its own task, its approvals sent to the returned
    /// receiver (one at a time: the next waits until the first is answered).
    fn start(&self, code: &str, principal: Option<Principal>) -> Running {
        let owner = principal.as_ref().map(|p| p.owner.clone());
        let (approval, approvals) = Approval::channel(1);
        let server = self.clone();
        let code = code.to_owned();
        let cancel = self.inner.shutdown.child_token();
        let chain_cancel = cancel.clone();
        // The chain's task keeps the trace context it was started in.
        let trace = opentelemetry::Context::current();
        let task = tokio::spawn(
            async move {
                server
                    .run_chain_observed(&code, &approval, chain_cancel, None, principal)
                    .await
            }
            .with_context(trace),
        );
        Running {
            task,
            approvals,
            cancel,
            owner,
        }
    }

    /// Waits for `chain` to finish or to ask for an approval; in the second
    /// case parks it and answers with the approval form to fill in. If the
    /// request is cancelled (`ct`) meanwhile, so is the chain.
    async fn drive(&self, mut chain: Running, ct: &CancellationToken) -> Result<CallToolResponse, ErrorData> {
        let finished = |done: Result<CallToolResult, tokio::task::JoinError>| {
            done.map(CallToolResponse::from)
                .map_err(|e| ErrorData::internal_error(format!("the chain's task failed: {e}"), None))
        };
        tokio::select! {
            done = &mut chain.task => finished(done),
            Some(pending) = chain.approvals.recv() => Ok(self.park(chain, pending)),
            () = ct.cancelled() => {
                // Nobody reads the answer; waiting for it lets the chain
                // end itself, logged as cancelled.
                chain.cancel.cancel();
                finished((&mut chain.task).await)
            }
        }
    }

    /// Parks `chain` on `pending` under a fresh request state and returns
    /// the input-required result asking for it.
    fn park(&self, chain: Running, pending: PendingApproval) -> CallToolResponse {
        let state = uuid::Uuid::new_v4().simple().to_string();
        let asking = input_required(&pending.request, state.clone());
        let keep_for = self.inner.policy.approval_timeout();
        let mut parked = self
            .inner
            .parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Past its approval timeout a request is denied already; a client
        // that never came back leaves nothing behind.
        parked.retain(|_, p| p.since.elapsed() < keep_for);
        parked.insert(
            state.clone(),
            Parked {
                chain,
                pending,
                since: Instant::now(),
            },
        );
        asking
    }

    /// A later round of a parked call: answers its approval with the
    /// client's response (asking again if the response is missing) and
    /// drives the chain on.
    async fn resume(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        caller: Option<&Principal>,
        ct: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let parked = {
            let mut parked = self
                .inner
                .parked
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // Another principal's state is no state to it: the chain stays
            // parked for its owner.
            match parked.get(state) {
                Some(p) if may_act_on(caller, p.chain.owner.as_ref()) => parked.remove(state),
                _ => None,
            }
        };
        let Some(Parked { chain, pending, .. }) = parked else {
            return Err(ErrorData::invalid_params(
                "unknown or expired requestState: call run_chain again without it",
                None,
            ));
        };
        let Some(response) = responses.and_then(|r| r.get(APPROVAL_INPUT)) else {
            return Ok(self.park(chain, pending));
        };
        let answer: ElicitResult = serde_json::from_value(response.clone())
            .map_err(|e| ErrorData::invalid_params(format!("the `{APPROVAL_INPUT}` input response: {e}"), None))?;
        pending.respond(decision_of(&answer));
        self.drive(chain, ct).await
    }
}

/// Durable chains (a server with a chain store).
impl ChainServer {
    /// Runs `code` as a durable chain (or as a cell of `session`: `new` or
    /// an id), its approvals asked of `approval`, its events given to
    /// `observer`, cancelled with `ct`; a suspension is answered with
    /// input-required.
    #[allow(clippy::too_many_arguments)]
    async fn run_durable(
        &self,
        store: &DurableServe,
        code: &str,
        session: Option<&str>,
        approval: &Approval,
        observer: Option<Observer>,
        caller: Option<&Principal>,
        ct: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &self.inner;
        let result = self
            .cancellable(ct, |cancel| {
                let durable = store
                    .durable
                    .clone()
                    .cancelled_by(cancel)
                    .with_observer(observer)
                    .with_principal(caller.cloned());
                async move {
                    match session {
                        Some(session) => {
                            durable
                                .run_cell(session, code, &shared.registry, &shared.policy, approval)
                                .await
                        }
                        None => durable.run(code, &shared.registry, &shared.policy, approval).await,
                    }
                }
            })
            .await
            .map_err(|e| store_error(&e))?;
        Ok(self.durable_answer(store, &result, caller))
    }

    /// A retry of a suspended durable chain (`state`, sealed by this store's
    /// key): records the client's answer as the decision on the call the
    /// state names, then resumes the chain (see the module's invariants).
    async fn retry_durable(
        &self,
        store: &DurableServe,
        state: &str,
        responses: Option<&InputResponses>,
        caller: Option<&Principal>,
        ct: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let RequestState {
            chain_id, seq, owner, ..
        } = store.key.open(state).map_err(|e| refused_state(&e))?;
        // Bound to the principal it was sealed for, on every node: another
        // principal's retry records nothing and runs nothing. (The store's
        // owner is checked again by every decide and resume.)
        if !may_act_on(caller, owner.as_ref()) {
            tracing::warn!(chain_id, "refused a requestState sealed for another principal");
            return Err(refused_owner());
        }
        let durable = store.durable.clone().with_principal(caller.cloned());
        if let Some(response) = responses.and_then(|r| r.get(APPROVAL_INPUT)) {
            let answer: ElicitResult = serde_json::from_value(response.clone())
                .map_err(|e| ErrorData::invalid_params(format!("the `{APPROVAL_INPUT}` input response: {e}"), None))?;
            match durable
                .decide_call(&chain_id, Some(seq), decision_of(&answer), DECIDED_BY)
                .await
            {
                // Decided already (an earlier retry of this state), or the
                // chain went on: the first decision on a call stands.
                Ok(_) | Err(DurableError::Store(StoreError::NotPending { .. })) => {}
                Err(DurableError::Store(StoreError::NoChain(_))) => return Err(unknown_chain(&chain_id)),
                Err(DurableError::NotOwner { .. }) => return Err(refused_owner()),
                Err(e) => return Err(store_error(&e)),
            }
        }
        let shared = &self.inner;
        let deadline = Instant::now() + shared.policy.total_timeout();
        loop {
            // Still waiting on a call (this one, unanswered; or a later
            // one): ask for it, without running anything.
            if let Some(pending) = self.pending_of(store, &chain_id).await? {
                return Ok(self.ask(store, &chain_id, &pending, caller));
            }
            let resumed = self
                .cancellable(ct, |cancel| {
                    let durable = durable.clone().cancelled_by(cancel);
                    let chain_id = chain_id.clone();
                    async move { durable.resume(&chain_id, &shared.registry, &Approval::defer()).await }
                })
                .await;
            match resumed {
                Ok(result) => return Ok(self.durable_answer(store, &result, caller)),
                // Another request resumes it: its outcome is this retry's
                // too, once it is in the store.
                Err(DurableError::BeingResumed { .. }) if Instant::now() < deadline && !ct.is_cancelled() => {
                    tokio::select! {
                        () = tokio::time::sleep(RESUME_POLL) => {}
                        () = ct.cancelled() => {}
                    }
                }
                Err(e @ DurableError::BeingResumed { .. }) => {
                    return Err(ErrorData::internal_error(
                        format!("{e}: retry with the same requestState later"),
                        None,
                    ));
                }
                Err(DurableError::Store(StoreError::NoChain(_))) => return Err(unknown_chain(&chain_id)),
                Err(DurableError::NotOwner { .. }) => return Err(refused_owner()),
                Err(e) => return Err(store_error(&e)),
            }
        }
    }

    /// The call `chain_id` waits on, if it waits on one (a chain the store
    /// lacks waits on none: the resume after says so).
    async fn pending_of(&self, store: &DurableServe, chain_id: &str) -> Result<Option<PendingCall>, ErrorData> {
        match store.durable.store().pending_of(chain_id).await {
            Ok(pending) => Ok(pending),
            Err(StoreError::NoChain(_)) => Ok(None),
            Err(e) => Err(store_error(&DurableError::Store(e))),
        }
    }

    /// A durable chain's result for MCP: a suspended chain asks for its
    /// pending call; any other ending is the usual result.
    fn durable_answer(
        &self,
        store: &DurableServe,
        result: &ChainRunResult,
        caller: Option<&Principal>,
    ) -> CallToolResponse {
        match (&result.status, &result.chain_id, &result.pending) {
            (ChainStatus::Suspended, Some(chain_id), Some(pending)) => self.ask(store, chain_id, pending, caller),
            _ => call_tool_result(result).into(),
        }
    }

    /// The input-required result asking for `pending`, with a sealed state
    /// naming it and the principal it is for (`caller`, whose chain it is).
    fn ask(
        &self,
        store: &DurableServe,
        chain_id: &str,
        pending: &PendingCall,
        caller: Option<&Principal>,
    ) -> CallToolResponse {
        let request = pending_request(chain_id, pending);
        let state = store.key.seal(&RequestState {
            chain_id: chain_id.to_owned(),
            seq: pending.seq,
            issued_at: crate::util::utc_now_rfc3339(),
            owner: caller.map(|p| p.owner.clone()),
        });
        input_required(&request, state)
    }
}

/// The input-required result asking the client's user to approve `request`,
/// to be retried with `state`.
fn input_required(request: &ApprovalRequest, state: String) -> CallToolResponse {
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(approval_requests(request)), Some(state)))
}

/// The input requests asking the client's user to approve `request`: the
/// approval form under [`APPROVAL_INPUT`].
fn approval_requests(request: &ApprovalRequest) -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        APPROVAL_INPUT.into(),
        InputRequest::Elicitation(ElicitRequest::new(approval_form(request))),
    );
    requests
}

/// The approval request of a durable chain's pending call.
fn pending_request(chain_id: &str, pending: &PendingCall) -> ApprovalRequest {
    ApprovalRequest {
        run_id: chain_id.to_owned(),
        call_id: u64::from(pending.seq),
        tool: pending.tool.clone(),
        arguments: pending.arguments.clone(),
        risk: pending.risk,
        requested_at: pending.requested_at.clone(),
        provenance: pending.provenance.clone(),
    }
}

/// The protocol error for a `requestState` whose seal does not verify.
fn refused_state(why: &OpenError) -> ErrorData {
    ErrorData::invalid_params(
        format!("requestState refused: {why}; nothing was run (call run_chain again without it)"),
        None,
    )
}

/// The protocol error for a sealed state of another principal's chain: the
/// same words for a state whose seal names another principal and for one
/// whose chain the store says is another's.
fn refused_owner() -> ErrorData {
    ErrorData::invalid_params(
        "requestState refused: it belongs to another principal; nothing was run (call run_chain again without it)",
        None,
    )
}

/// The protocol error for a sealed state whose chain the store does not
/// hold (a server on another store sealed it with the same key).
fn unknown_chain(chain_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("requestState names chain {chain_id:?}, which this server's store does not hold"),
        None,
    )
}

/// The protocol error for a chain store that failed.
fn store_error(e: &DurableError) -> ErrorData {
    ErrorData::internal_error(format!("durable chain: {e}"), None)
}

/// Who approves one call's risky tool calls.
enum ApprovalRoute {
    /// This handler: the client's user by elicitation requests, or the fallback.
    Elicit(Approval),
    /// The fallback handler.
    Handler(Approval),
    /// The client's user, through input-required results (protocol 2026-07-28).
    InputRequired,
}

/// A `CallToolResult` for a chain's result: its answer as text (the error
/// in one line when it failed), the whole result as structured content,
/// and `isError` unless it completed.
pub fn call_tool_result(result: &ChainRunResult) -> CallToolResult {
    let structured = serde_json::to_value(result).unwrap_or_else(
        |e| json!({"status": "error", "error": {"kind": "crash", "type": "EncodeError", "message": e.to_string()}}),
    );
    let mut out = match &result.error {
        None if result.is_ok() => CallToolResult::success(vec![ContentBlock::text(result.output_text.clone())]),
        error => {
            let text = match error {
                Some(e) => {
                    let line = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
                    let mut text = format!(
                        "chain {} [{}]: {}: {}{line}",
                        result.status, e.kind, e.error_type, e.message
                    );
                    // A refused chain: every call to fix, so that one turn fixes them all.
                    for d in &result.diagnostics {
                        text.push_str(&format!("\n  line {}:{}: [{}] {}", d.line, d.col, d.rule, d.message));
                    }
                    text
                }
                None => format!("chain {}", result.status),
            };
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    };
    out.structured_content = Some(structured);
    out
}

fn json_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

impl ServerHandler for ChainServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = match &self.inner.durable {
            Some(_) => ServerCapabilities::builder().enable_tools().enable_tasks().build(),
            None => ServerCapabilities::builder().enable_tools().build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("chainbox", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.inner.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == RUN_CHAIN).then(|| self.inner.tool.clone())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get_task_status(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update_task_inputs(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel_task_run(request, context).await
    }

    /// The stand-in for a request over the size limit (see
    /// `request_limit`) gets the error naming the limit; any other
    /// method is unknown.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == request_limit::TOO_LARGE_METHOD {
            let bytes = request_limit::too_large_bytes(request.params.as_ref());
            return Err(request_limit::too_large_error(bytes, self.max_request_bytes()));
        }
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != RUN_CHAIN {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`: this server has one tool, `{RUN_CHAIN}`",
                    request.name
                ),
                None,
            ));
        }
        // rmcp cancels `context.ct` when the client sends
        // `notifications/cancelled` for this request, when a stateless HTTP
        // request's connection drops, and when the session ends (stdin
        // closed, HTTP `DELETE`); the chain ends with it.
        let responses = request.input_responses.as_ref();
        let caller = caller(&context);
        let caller = caller.as_ref();
        if let Some(state) = &request.request_state {
            return match &self.inner.durable {
                Some(store) => self.retry_durable(store, state, responses, caller, &context.ct).await,
                None => self.resume(state, responses, caller, &context.ct).await,
            };
        }
        let (code, session) = chain_code(request.arguments.as_ref(), self.inner.durable.is_some())?;
        // A client that polls: the chain, or the session's cell, as a task.
        if let Some(store) = &self.inner.durable
            && self.answers_with_task(&context)
        {
            return self.create_task(store, code, session, caller).await;
        }
        // The chain's span continues the client's trace (`_meta.traceparent`).
        let parent = client_trace(&request, &context).unwrap_or_else(opentelemetry::Context::current);
        let route = self.approval_route(&context);
        // The chain's output goes to the client as it runs, but for a chain
        // parked in-process (its later rounds are other requests).
        let live = match (&route, &self.inner.durable) {
            (ApprovalRoute::InputRequired, None) => None,
            _ => LiveStdout::start(&request, &context),
        };
        let observer = live.as_ref().map(|live| live.observer.clone());
        let answer = async {
            match (route, &self.inner.durable) {
                // A session's cell is durable however its calls are approved.
                (ApprovalRoute::Handler(approval), Some(store)) if session.is_some() => {
                    self.run_durable(store, code, session, &approval, observer, caller, &context.ct)
                        .await
                }
                // The fallback decides at once: nothing to outlive the request.
                (ApprovalRoute::Handler(approval), _) | (ApprovalRoute::Elicit(approval), None) => Ok(self
                    .cancellable(&context.ct, |cancel| {
                        self.run_chain_observed(code, &approval, cancel, observer, caller.cloned())
                    })
                    .await
                    .into()),
                (ApprovalRoute::Elicit(approval), Some(store)) => {
                    self.run_durable(store, code, session, &approval, observer, caller, &context.ct)
                        .await
                }
                (ApprovalRoute::InputRequired, Some(store)) => {
                    self.run_durable(store, code, session, &Approval::defer(), observer, caller, &context.ct)
                        .await
                }
                (ApprovalRoute::InputRequired, None) => {
                    self.drive(self.start(code, caller.cloned()), &context.ct).await
                }
            }
        }
        .with_context(parent)
        .await;
        if let Some(live) = live {
            live.finish().await;
        }
        answer
    }
}

/// A chain's stdout sent to the client as it is printed, as progress
/// notifications (`message`: the text; `progress`: the bytes so far) when
/// the request carries a `progressToken`. Bounded as the result's stdout
/// is (`max_stdout_bytes`), and all of it sent before the result.
struct LiveStdout {
    observer: Observer,
    /// `Some(text)` to send, `None` once the chain has answered.
    chunks: mpsc::UnboundedSender<Option<String>>,
    sender: JoinHandle<()>,
}

impl LiveStdout {
    /// Starts sending, if the client asked for progress.
    fn start(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Option<Self> {
        let token = match &request.meta {
            Some(meta) => meta.get_progress_token(),
            None => None,
        }
        .or_else(|| context.meta.get_progress_token())?;
        let (chunks, mut received) = mpsc::unbounded_channel::<Option<String>>();
        let printed = chunks.clone();
        let observer = Observer::new(move |event| {
            if let ChainEvent::Stdout(text) = event {
                let _ = printed.send(Some(text));
            }
        });
        let peer = context.peer.clone();
        let sender = tokio::spawn(async move {
            let mut bytes = 0usize;
            while let Some(Some(text)) = received.recv().await {
                bytes += text.len();
                let mut progress = ProgressNotificationParam::new(token.clone(), bytes as f64);
                progress.message = Some(text);
                // A client gone away misses its progress; the chain goes on.
                let _ = peer.notify_progress(progress).await;
            }
        });
        Some(LiveStdout {
            observer,
            chunks,
            sender,
        })
    }

    /// Sends what is left (everything the chain printed was handed over
    /// before it answered) and stops.
    async fn finish(self) {
        let _ = self.chunks.send(None);
        let _ = self.sender.await;
    }
}

/// Who sent the request: the principal the HTTP layer authenticated
/// ([`crate::auth::http`] puts it in the request's extensions, which rmcp
/// hands over with the request's `Parts`); `None` for the local user
/// (stdio, or HTTP without `--auth-issuer`).
fn caller(context: &RequestContext<RoleServer>) -> Option<Principal> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Principal>()
        .cloned()
}

/// The trace context the client sent in the request's `_meta`
/// (`traceparent`, `tracestate`), if a valid one.
fn client_trace(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<opentelemetry::Context> {
    let meta = match &request.meta {
        Some(meta) if meta.0.get_traceparent().is_some() => &meta.0,
        _ => &context.meta.0,
    };
    crate::telemetry::context_from_traceparent(meta.get_traceparent()?, meta.get_tracestate())
}

/// The `code` argument of a `run_chain` call, and its `session` on a
/// server that keeps sessions (`sessions`).
fn chain_code(arguments: Option<&JsonObject>, sessions: bool) -> Result<(&str, Option<&str>), ErrorData> {
    let arguments = arguments.ok_or_else(|| ErrorData::invalid_params("run_chain needs `code` (a string)", None))?;
    let takes = if sessions {
        "`code` and `session`"
    } else {
        "only `code`"
    };
    if let Some(other) = arguments
        .keys()
        .find(|k| *k != "code" && (!sessions || *k != "session"))
    {
        let why = match other.as_str() {
            "session" => {
                "this server keeps no sessions: they live in a chain store (`chainbox serve --state URL`)".to_owned()
            }
            _ => format!("run_chain takes {takes}, not `{other}`"),
        };
        return Err(ErrorData::invalid_params(why, None));
    }
    let session = match arguments.get("session") {
        None => None,
        Some(Value::String(session)) => Some(session.as_str()),
        Some(_) => {
            return Err(ErrorData::invalid_params(
                "run_chain's `session` must be a string: \"new\" or a session_id",
                None,
            ));
        }
    };
    match arguments.get("code") {
        Some(Value::String(code)) => Ok((code, session)),
        Some(_) => Err(ErrorData::invalid_params("run_chain's `code` must be a string", None)),
        None => Err(ErrorData::invalid_params("run_chain needs `code` (a string)", None)),
    }
}

/// Asks the client's user to approve a risky call, by form elicitation: an
/// accept with `approve: true` approves; anything else (an accept with
/// `false`, a decline, a cancel, an error) denies.
struct ElicitApproval {
    peer: Peer<RoleServer>,
}

/// The one field of the approval form.
const APPROVE_FIELD: &str = "approve";

#[async_trait]
impl ApprovalHandler for ElicitApproval {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        let answer = self
            .peer
            .create_elicitation(approval_form(req))
            .await
            .map_err(|e| ApprovalError::from(format!("asking the MCP client for approval: {e}")))?;
        Ok(decision_of(&answer))
    }
}

/// The form asking the client's user to approve `req`: its tool, risk and
/// arguments, and one boolean, [`APPROVE_FIELD`].
fn approval_form(req: &ApprovalRequest) -> ElicitRequestParams {
    let arguments = serde_json::to_string_pretty(&req.arguments).unwrap_or_else(|_| format!("{:?}", req.arguments));
    let flow = req
        .provenance_note()
        .map(|note| format!("The data-flow policy asks: {note}.\n"))
        .unwrap_or_default();
    let message = format!(
        "chainbox: a chain wants to call `{}` (risk: {}) with these arguments:\n{arguments}\n{flow}Approve this call?",
        req.tool, req.risk
    );
    let mut properties = JsonObject::new();
    properties.insert(
        APPROVE_FIELD.into(),
        json!({
            "type": "boolean",
            "title": "Approve",
            "description": format!("Run `{}` with the arguments shown", req.tool),
            "default": false
        }),
    );
    let schema = json_object(json!({
        "type": "object",
        "properties": properties,
        "required": [APPROVE_FIELD]
    }));
    // A fixed, valid form: `from_json_schema` cannot fail on it; if it ever
    // did, an empty form still reaches the user, whose accept without
    // `approve: true` denies.
    let requested_schema = ElicitationSchema::from_json_schema(schema)
        .unwrap_or_else(|_| ElicitationSchema::new(std::collections::BTreeMap::new()));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// The decision an answer to [`approval_form`] gives: approved only for an
/// accept with `approve: true`.
fn decision_of(answer: &ElicitResult) -> ApprovalDecision {
    let approved = answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get(APPROVE_FIELD))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    if approved {
        ApprovalDecision::Approved
    } else {
        ApprovalDecision::Denied {
            reason: Some(format!("not approved by the MCP client's user ({:?})", answer.action)),
        }
    }
}

/// Serves `server` on stdin/stdout until the client closes them or
/// `shutdown` is cancelled. A line over the server's
/// [`ChainServer::max_request_bytes`] is answered with a JSON-RPC error
/// naming the limit.
pub async fn serve_stdio(server: ChainServer, shutdown: CancellationToken) -> Result<(), ServeError> {
    let limit = usize::try_from(server.max_request_bytes()).unwrap_or(usize::MAX);
    let (stdin, stdout) = rmcp::transport::stdio();
    // The filter has bounded every line already; rmcp's own cap (16 MiB,
    // dropping longer lines unanswered) must not cut a larger limit.
    let transport = AsyncRwTransport::new_server(request_limit::bounded_lines(stdin, limit), stdout)
        .with_max_line_length(usize::MAX);
    let running = server
        .serve_with_ct(transport, shutdown)
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    running.waiting().await.map(|_| ()).map_err(ServeError::Session)
}

/// Who may call `serve --http`, and how that is checked.
#[derive(Clone)]
pub enum HttpAccess {
    /// Anyone on this machine, unauthenticated: loopback addresses only,
    /// requests naming a loopback `Host` only (the default; the MCP
    /// conformance suite runs this way).
    Loopback,
    /// Anyone who reaches the address, unauthenticated, any `Host`
    /// (`--insecure-no-auth`): for a server behind a proxy that
    /// authenticates its callers.
    InsecureNoAuth,
    /// Callers with a valid access token of the configured issuer
    /// (`--auth-issuer`), any address and `Host`: an OAuth 2.1 resource
    /// server ([`crate::auth`]).
    #[cfg(feature = "oauth")]
    OAuth(Arc<Authenticator>),
}

impl HttpAccess {
    /// Whether a non-loopback address may be bound.
    fn allows_remote(&self) -> bool {
        !matches!(self, Self::Loopback)
    }
}

/// Binds `addr` for [`serve_http`], refusing a non-loopback address unless
/// `access` authenticates callers or explicitly does not need to.
/// Synchronous, so a bad address is refused before the engine is built.
pub fn bind_http(addr: SocketAddr, access: &HttpAccess) -> Result<std::net::TcpListener, ServeError> {
    if !addr.ip().is_loopback() && !access.allows_remote() {
        return Err(ServeError::NotLoopback(addr));
    }
    let bind_err = |source| ServeError::Bind { addr, source };
    let listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
    listener.set_nonblocking(true).map_err(bind_err)?;
    Ok(listener)
}

/// Browser origins accepted: pages served from this machine only.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Host names accepted in the `Host` header (any port).
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1", "[::1]"];

/// How long open connections get to finish once `shutdown` is cancelled
/// (the chains on them are cancelled at once; a client may keep an SSE
/// stream open).
const HTTP_SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Serves `server` as streamable HTTP at [`HTTP_PATH`] on `listener` until
/// `shutdown` is cancelled. With [`HttpAccess::OAuth`] every request needs
/// a valid bearer token ([`crate::auth::http`]) and the Protected Resource
/// Metadata is served beside the endpoint. Without authentication,
/// requests must name a loopback `Host` (unless
/// [`HttpAccess::InsecureNoAuth`]: then any host). Requests carrying an
/// `Origin` must name a loopback origin, so a web page cannot reach the
/// server through DNS rebinding. A POST body over [`ChainServer::max_request_bytes`], or one
/// that is not JSON-RPC, gets a JSON-RPC error (see
/// `request_limit`). Connections are `TCP_NODELAY`: a response goes
/// out in more than one write (headers, then SSE events), and Nagle's
/// algorithm held each second write for the client's delayed ACK, ~40 ms
/// per call on a kept-open connection.
pub async fn serve_http(
    server: ChainServer,
    listener: std::net::TcpListener,
    access: HttpAccess,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let listener = TcpListener::from_std(listener)
        .map_err(ServeError::Http)?
        .tap_io(|stream| {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::warn!("setting TCP_NODELAY on a connection: {e}");
            }
        });
    let limit = server.max_request_bytes();
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(usize::try_from(limit).unwrap_or(usize::MAX))
        .with_cancellation_token(shutdown.child_token())
        .with_allowed_origins(LOOPBACK_ORIGINS.iter().copied())
        .enforce_origin_validation();
    // A bearer token, not the `Host`, is what keeps a rebinding page out
    // of an authenticating server (a page cannot send the token).
    config = if access.allows_remote() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(LOOPBACK_HOSTS.iter().copied())
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new()
        .nest_service(HTTP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(
            limit,
            request_limit::check_http_request,
        ));
    #[cfg(feature = "oauth")]
    let router = match access {
        HttpAccess::OAuth(authenticator) => {
            let auth = Arc::new(HttpAuth::new(authenticator));
            // The token is checked first: an unauthenticated request's body
            // is never read.
            router
                .layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&auth),
                    crate::auth::http::require_token,
                ))
                .merge(crate::auth::http::metadata_routes(auth, HTTP_PATH))
        }
        _ => router,
    };
    #[cfg(not(feature = "oauth"))]
    let _ = access;
    let grace = shutdown.clone();
    let serving = axum::serve(listener, router).with_graceful_shutdown(shutdown.cancelled_owned());
    tokio::select! {
        served = serving => served.map_err(ServeError::Http),
        () = async move {
            grace.cancelled().await;
            tokio::time::sleep(HTTP_SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::FlowSource;
    use crate::tools::ToolRisk;

    fn message(form: ElicitRequestParams) -> String {
        match form {
            ElicitRequestParams::FormElicitationParams { message, .. } => message,
            other => panic!("not a form: {other:?}"),
        }
    }

    #[test]
    fn the_approval_form_says_why_the_data_flow_policy_asks() {
        let request = ApprovalRequest::new("run", 3, "send_email", JsonObject::new(), ToolRisk::Critical);
        let plain = message(approval_form(&request));
        assert!(!plain.contains("data-flow"), "{plain}");
        let held = request.with_provenance(vec![FlowSource {
            seq: 2,
            call_id: Some("call_x".into()),
            tool: "fetch_page".into(),
        }]);
        let shown = message(approval_form(&held));
        assert!(
            shown.contains(
                "The data-flow policy asks: its guarded arguments may derive from untrusted results of fetch_page (call 2)."
            ),
            "{shown}"
        );
    }

    #[test]
    fn a_pending_calls_request_keeps_its_provenance() {
        let pending = PendingCall {
            seq: 3,
            tool: "send_email".into(),
            arguments: JsonObject::new(),
            risk: ToolRisk::Critical,
            requested_at: "2026-01-01T00:00:00Z".into(),
            provenance: vec![FlowSource {
                seq: 1,
                call_id: None,
                tool: "fetch_page".into(),
            }],
        };
        assert_eq!(pending_request("c", &pending).provenance, pending.provenance);
    }
}
