//! MCP tasks (the `io.modelcontextprotocol/tasks` extension of protocol
//! 2026-07-28, SEP-2663) on a server with a chain store: a long chain as a
//! task a client polls, on any node of the store.
//!
//! A `run_chain` call from a client that declared the extension is answered
//! with a task once the task and its chain are in the store
//! ([`crate::store::ChainStore::create_task`]); the chain then runs in the
//! background on the node that took the call, durably (its calls
//! journaled). The task is the chain: `tasks/get` reads its status from the
//! store on whichever node gets it (its recorded outcome; else its pending
//! call, `input_required`; else `working`), `tasks/update` records the
//! client's answer as the pending call's decision and resumes the chain,
//! `tasks/cancel` marks it cancelled and the node running it stops it (each
//! running node watches the store for that). A node that dies while it runs
//! a task leaves its claim, which lapses within `CLAIM_LEASE`; the next
//! `tasks/get` on any node then takes the chain over from its journal.
//! Tasks belong to their principal (another's is "no such task") and live
//! `task_ttl_s` from their creation.

use std::ops::Not;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, ElicitResult, ErrorData, GetTaskParams,
    GetTaskResult, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::{
    APPROVAL_INPUT, ChainServer, DECIDED_BY, DurableServe, approval_requests, call_tool_result, caller, decision_of,
    pending_request, store_error,
};
use crate::approval::Approval;
use crate::durable::{Durable, DurableError};
use crate::principal::{Principal, may_act_on};
use crate::result::{ChainStatus, ErrorKind};
use crate::store::{ChainStore, Claim, StoreError, StoredTask};
use crate::util::utc_now_rfc3339;

/// The polling interval a task suggests.
const POLL_INTERVAL_MS: u64 = 500;

/// How often the node running a task looks in the store for a
/// cancellation another node recorded.
const CANCEL_POLL: Duration = Duration::from_millis(250);

/// How long a node that finds a task's cell ended waits for the node that
/// ran it to record the task's outcome, before it records the cell as lost.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

/// How a task's outcome is kept in the store.
mod outcome {
    /// A tool result (`CallToolResult`, an `isError` one included).
    pub const COMPLETED: &str = "completed";
    /// A JSON-RPC error.
    pub const FAILED: &str = "failed";
    /// Cancelled by its client.
    pub const CANCELLED: &str = "cancelled";
}

impl ChainServer {
    /// Whether a `run_chain` call is answered with a task: the server keeps
    /// a store and the client declared the tasks extension.
    pub(super) fn answers_with_task(&self, context: &RequestContext<RoleServer>) -> bool {
        self.inner.durable.is_some() && context.client_capabilities().is_some_and(|caps| caps.supports_tasks())
    }

    /// Stores a task running `code` for `caller` (its chain and its row, in
    /// one transaction), starts it on this node, and answers with it. With
    /// `session` (`new` or an id), the task is the session's next cell: the
    /// cell is recorded in the session first ([`Durable::start_cell`]), and
    /// a session that cannot take it answers at once, as without tasks.
    pub(super) async fn create_task(
        &self,
        store: &DurableServe,
        code: &str,
        session: Option<&str>,
        caller: Option<&Principal>,
    ) -> Result<CallToolResponse, ErrorData> {
        let durable = store.durable.clone().with_principal(caller.cloned());
        let policy = &self.inner.policy;
        let (chain, chain_id, task_id) = match session {
            // A chain's task is named as its chain.
            None => {
                let chain = durable.new_chain(code, policy).map_err(|e| store_error(&e))?;
                let id = chain.chain_id.clone();
                (Some(chain), id.clone(), id)
            }
            // A session's cell's task has a name of its own (a session runs
            // many), recorded in its cell.
            Some(session) => {
                let task_id = format!("task_{}", uuid::Uuid::new_v4().simple());
                match durable.start_cell(session, code, policy, &task_id).await {
                    Ok(Ok(id)) => (None, id, task_id),
                    Ok(Err(refusal)) => return Ok(call_tool_result(&refusal.into_result()).into()),
                    Err(e) => return Err(store_error(&e)),
                }
            }
        };
        let now = utc_now_rfc3339();
        let task = StoredTask {
            task_id,
            chain_id,
            owner: caller.map(|p| p.owner.clone()),
            created_at: now.clone(),
            updated_at: now,
            ttl_ms: (policy.task_ttl_s * 1000.0) as u64,
            cancel_requested: false,
            outcome: None,
        };
        durable
            .store()
            .create_task(chain.as_ref(), &task)
            .await
            .map_err(|e| store_error(&DurableError::Store(e)))?;
        self.drive_task(durable, &task);
        Ok(CreateTaskResult::new(task_of(&task, TaskStatus::Working, &task.updated_at)).into())
    }

    /// Runs the task's chain on this node, in the background, unless this
    /// node runs it already: from its start, or its journal (a resume after
    /// a decision, or a takeover of a node that died). Another node running
    /// it keeps it (its claim: the run ends at once). When the chain ends,
    /// its outcome is recorded; when it suspends, its pending call is the
    /// task's input request.
    fn drive_task(&self, durable: Durable, task: &StoredTask) {
        let task_id = task.task_id.as_str();
        let cancel = {
            let mut running = self
                .inner
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if running.contains_key(task_id) {
                return;
            }
            let cancel = self.inner.shutdown.child_token();
            running.insert(task_id.to_owned(), cancel.clone());
            cancel
        };
        let server = self.clone();
        let task_id = task_id.to_owned();
        let chain_id = task.chain_id.clone();
        tokio::spawn(async move {
            let store = durable.store().clone();
            let watch = async {
                loop {
                    tokio::time::sleep(CANCEL_POLL).await;
                    if let Ok(Some(task)) = store.task(&task_id).await
                        && task.cancel_requested
                    {
                        cancel.cancel();
                        return;
                    }
                }
            };
            let runner = durable.clone().cancelled_by(cancel.clone());
            let defer = Approval::defer();
            let run = runner.resume_task(&chain_id, &task_id, &server.inner.registry, &defer);
            tokio::pin!(run);
            let ended = tokio::select! {
                ended = &mut run => ended,
                // Cancelled: the chain ends itself as `cancelled`.
                () = watch => run.await,
            };
            let cancelled_by_client = cancel.is_cancelled() && !server.inner.shutdown.is_cancelled();
            let outcome = match ended {
                Ok(result) if result.status == ChainStatus::Suspended => None,
                Ok(result) if result.error_kind() == Some(ErrorKind::Cancelled) => {
                    // The server shutting down: the chain stays for a takeover.
                    cancelled_by_client.then(|| json!({ outcome::CANCELLED: null }))
                }
                Ok(result) => Some(json!({ outcome::COMPLETED: call_tool_result(&result) })),
                // Another node runs it, or it ended there.
                Err(DurableError::BeingResumed { .. }) => None,
                // The cell ended on the node that ran it, which records the
                // outcome; unless it died in between.
                Err(e @ DurableError::CellEnded { .. }) => settled_elsewhere(&store, &task_id)
                    .await
                    .not()
                    .then(|| json!({ outcome::FAILED: store_error(&e) })),
                Err(e) => Some(json!({ outcome::FAILED: store_error(&e) })),
            };
            if let Some(outcome) = outcome {
                end(&durable, &task_id, &chain_id, &outcome).await;
            }
            server
                .inner
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&task_id);
        });
    }

    /// `tasks/get`: the task's status as the store says it, on any node. A
    /// working task that no node runs (its node died) is taken over here.
    pub(super) async fn get_task_status(
        &self,
        params: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (store, caller) = self.task_store(&context)?;
        let task = self.task_of_caller(store, &params.task_id, caller.as_ref()).await?;
        let durable = store.durable.clone().with_principal(caller);
        let (payload, updated) = match &task.outcome {
            Some(outcome) => (payload_of(outcome), task.updated_at.clone()),
            None => match self.pending(store, &task.chain_id).await? {
                Some(pending) => {
                    let input_requests = approval_requests(&pending_request(&task.chain_id, &pending));
                    (TaskPayload::InputRequired { input_requests }, pending.requested_at)
                }
                None => {
                    self.drive_task(durable, &task);
                    (TaskPayload::Working, task.updated_at.clone())
                }
            },
        };
        let status = payload.status();
        Ok(GetTaskResult::new(DetailedTask::new(
            task_of(&task, status, &updated),
            payload,
        )))
    }

    /// `tasks/update`: the client's answer to the task's input request
    /// (`approval`) recorded as the decision on its pending call, and the
    /// chain resumed (on this node).
    pub(super) async fn update_task_inputs(
        &self,
        params: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (store, caller) = self.task_store(&context)?;
        let task = self.task_of_caller(store, &params.task_id, caller.as_ref()).await?;
        let Some(pending) = self.pending(store, &task.chain_id).await? else {
            return Err(ErrorData::invalid_params(
                format!("task {:?} waits on no input", task.task_id),
                None,
            ));
        };
        let response = params
            .input_responses
            .get(APPROVAL_INPUT)
            .ok_or_else(|| ErrorData::invalid_params(format!("inputResponses must answer `{APPROVAL_INPUT}`"), None))?;
        let answer: ElicitResult = serde_json::from_value(response.clone())
            .map_err(|e| ErrorData::invalid_params(format!("the `{APPROVAL_INPUT}` input response: {e}"), None))?;
        let durable = store.durable.clone().with_principal(caller);
        match durable
            .decide_call(&task.chain_id, Some(pending.seq), decision_of(&answer), DECIDED_BY)
            .await
        {
            // Answered already: the first answer stands.
            Ok(_) | Err(DurableError::Store(StoreError::NotPending { .. })) => {}
            Err(e) => return Err(store_error(&e)),
        }
        self.drive_task(durable, &task);
        Ok(())
    }

    /// `tasks/cancel`: the task marked cancelled in the store; the node
    /// running it stops its chain (its tools with it) and records
    /// `cancelled`; a task no node runs (waiting on input) ends here.
    pub(super) async fn cancel_task_run(
        &self,
        params: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (store, caller) = self.task_store(&context)?;
        let task = self.task_of_caller(store, &params.task_id, caller.as_ref()).await?;
        if task.outcome.is_some() {
            return Ok(());
        }
        let chains = store.durable.store();
        let fail = |e: StoreError| store_error(&DurableError::Store(e));
        chains.cancel_task(&task.task_id).await.map_err(fail)?;
        let local = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&task.task_id)
            .cloned();
        match local {
            Some(cancel) => cancel.cancel(),
            None => {
                let claimant = format!("pid {} cancel {}", std::process::id(), uuid::Uuid::new_v4().simple());
                match chains
                    .claim(&task.chain_id, &claimant, crate::durable::CLAIM_LEASE)
                    .await
                {
                    // Nobody runs it: it ends now (a session's cell
                    // dropped, the session kept).
                    Ok(Claim::Won) => {
                        if task.chain_id != task.task_id {
                            let durable = store.durable.clone().with_principal(caller.clone());
                            let dropped = durable.drop_waiting_cell(&task.chain_id).await;
                            chains.release(&task.chain_id, &claimant).await.map_err(fail)?;
                            dropped.map_err(|e| store_error(&e))?;
                        }
                        let cancelled = json!({ outcome::CANCELLED: null });
                        end(&store.durable, &task.task_id, &task.chain_id, &cancelled).await;
                    }
                    // Its node sees the request and stops it.
                    Ok(Claim::HeldBy(_) | Claim::Finished(_)) => {}
                    Err(e) => return Err(fail(e)),
                }
            }
        }
        Ok(())
    }

    /// The server's store, and the caller, for a `tasks/*` request.
    fn task_store(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(&DurableServe, Option<Principal>), ErrorData> {
        let store = self.inner.durable.as_ref().ok_or_else(|| {
            ErrorData::invalid_params("this server keeps no tasks: they live in a chain store (--state)", None)
        })?;
        Ok((store, caller(context)))
    }

    /// The task `task_id` if `caller` may see it and it has not outlived
    /// its TTL; "no such task" otherwise, the same words for each.
    async fn task_of_caller(
        &self,
        store: &DurableServe,
        task_id: &str,
        caller: Option<&Principal>,
    ) -> Result<StoredTask, ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("no such task {task_id:?}"), None);
        let task = store
            .durable
            .store()
            .task(task_id)
            .await
            .map_err(|e| store_error(&DurableError::Store(e)))?
            .ok_or_else(unknown)?;
        if !may_act_on(caller, task.owner.as_ref()) || outlived(&task) {
            return Err(unknown());
        }
        Ok(task)
    }

    /// The call the task's chain waits on, if it waits on one.
    async fn pending(
        &self,
        store: &DurableServe,
        task_id: &str,
    ) -> Result<Option<crate::result::PendingCall>, ErrorData> {
        store
            .durable
            .store()
            .pending_of(task_id)
            .await
            .map_err(|e| store_error(&DurableError::Store(e)))
    }
}

/// Records the task's outcome (the first one stands) and, for a
/// cancellation, finishes its chain so that nothing resumes it (a chain's
/// task only: a session's cell was dropped, and its session lives on).
async fn end(durable: &Durable, task_id: &str, chain_id: &str, outcome: &Value) {
    let store = durable.store();
    if let Err(e) = store.end_task(task_id, outcome).await {
        tracing::error!(task_id, error = %e, "recording a task's outcome failed");
        return;
    }
    if outcome.get(outcome::CANCELLED).is_some()
        && chain_id == task_id
        && let Err(e) = store.finish(task_id, outcome).await
    {
        tracing::error!(task_id, error = %e, "finishing a cancelled task's chain failed");
    }
}

/// Whether the task's outcome is recorded within [`SETTLE_WAIT`]: a cell's
/// node records it just after the cell's end is stored.
async fn settled_elsewhere(store: &Arc<dyn ChainStore>, task_id: &str) -> bool {
    let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
    loop {
        if let Ok(Some(task)) = store.task(task_id).await
            && task.outcome.is_some()
        {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// The task as the protocol shows it, with `status` and its last change.
fn task_of(task: &StoredTask, status: TaskStatus, updated_at: &str) -> Task {
    Task::new(
        task.task_id.clone(),
        status,
        task.created_at.clone(),
        updated_at.to_owned(),
    )
    .with_ttl_ms(task.ttl_ms)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// A stored outcome as the task's payload.
fn payload_of(outcome: &Value) -> TaskPayload {
    let object = |value: &Value| match value {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    if let Some(result) = outcome.get(outcome::COMPLETED) {
        TaskPayload::Completed { result: object(result) }
    } else if let Some(error) = outcome.get(outcome::FAILED) {
        TaskPayload::Failed { error: object(error) }
    } else {
        TaskPayload::Cancelled
    }
}

/// Whether the task is past its TTL.
fn outlived(task: &StoredTask) -> bool {
    let Ok(created) = task.created_at.parse::<jiff::Timestamp>() else {
        return true;
    };
    let age = jiff::Timestamp::now().duration_since(created);
    age.as_millis() > i128::from(task.ttl_ms)
}
