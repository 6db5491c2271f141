//! Sessions: a Python REPL whose state any process can rebuild. A session
//! is a durable chain (its owner, seed, journal, pending call and claim)
//! whose script arrives one cell at a time; the store keeps its cells
//! ([`StoredSession`]).
//!
//! A cell runs on a fresh instance: the session's earlier cells run first
//! in one namespace, their tool calls answered from the journal (their
//! tools never run again), their output discarded, then the new cell (see
//! `chainbox_protocol::RunRequest::cells`). So the names a cell binds live
//! on into the next, whichever process runs it, and randomness replays
//! with the session's seed. The clock is not rewound: a name bound to
//! `time.time()` in an earlier cell holds the time of its latest replay.
//!
//! A cell is kept (replayed by the next ones) when it ran to its end or
//! raised; one stopped by a limit, a cancellation or a failure of the host
//! is dropped (its calls stay journaled, its names are gone), and one
//! suspended at a call that needs a decision holds the session until it is
//! decided and resumed ([`Durable::resume`]), then is kept or dropped by the
//! same rule. One cell runs at a time: a cell waits up to
//! [`BUSY_WAIT`] for the one running, then is refused as busy.
//!
//! A session that cannot run a cell says why (kind `session`: unknown,
//! another principal's, ended, expired, full, busy); nothing runs, and a
//! session is never silently replaced by an empty one.

use std::time::Duration;

use crate::approval::Approval;
use crate::chain::{Cells, RunOptions};
use crate::policy::{ChainPolicy, PythonChoice};
use crate::principal;
use crate::result::{ChainError, ChainRunResult, ChainStatus, ErrorKind, Interpreter, SessionCell};
use crate::store::{CellState, Claim, StoreError, StoredCell, StoredChain, StoredSession};
use crate::tools::ToolRegistry;
use crate::util::utc_now_rfc3339;

use super::{Durable, DurableError, History, lease, policy_of, rand_seed};

/// What a caller names to start a session: `session = "new"`.
pub const NEW_SESSION: &str = "new";

/// How long a cell waits for the session's running cell to end before it
/// is refused as busy.
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Why a session could not run a cell (a result of kind `session`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionRefusal {
    /// No session has this id, or it is another principal's.
    #[error("no such session {0:?}; start one with session \"new\"")]
    Unknown(String),
    /// It was ended (removed, or found expired).
    #[error("session {id:?} has ended ({why}); its names are gone: start a new one with session \"new\"")]
    Ended {
        /// The session.
        id: String,
        /// Why.
        why: String,
    },
    /// No cell ran in it for `session_expires_s`.
    #[error(
        "session {id:?} expired at {at} (no cell for session_expires_s); its names are gone: start a new one with session \"new\""
    )]
    Expired {
        /// The session.
        id: String,
        /// When it expired.
        at: String,
    },
    /// It has run `max_session_cells` cells.
    #[error("session {id:?} is full: it has run {cells} cells, max_session_cells = {max}")]
    Full {
        /// The session.
        id: String,
        /// Its cells.
        cells: usize,
        /// The policy's limit.
        max: u32,
    },
    /// Another cell of it is running.
    #[error(
        "session {id:?} is busy: another cell of it is running ({holder}); send this cell again once that one has ended"
    )]
    Busy {
        /// The session.
        id: String,
        /// Who runs it.
        holder: String,
    },
    /// Its last cell waits on a decision.
    #[error(
        "session {id:?} is busy: cell {cell} waits for a decision on call #{seq} ({tool}); decide it and resume the session, then send this cell"
    )]
    Waiting {
        /// The session.
        id: String,
        /// The cell (from 1).
        cell: usize,
        /// The call's number.
        seq: u32,
        /// Its tool.
        tool: String,
    },
    /// It has no cell waiting to be resumed.
    #[error("session {0:?} has no cell waiting on a decision to resume")]
    NothingToResume(String),
}

impl SessionRefusal {
    /// The result a refused cell gets: nothing ran.
    pub(crate) fn into_result(self) -> ChainRunResult {
        let mut result = ChainRunResult::empty(ChainStatus::Error);
        result.error = Some(ChainError::new(ErrorKind::Session, "SessionError", self.to_string()));
        result
    }
}

/// A session as [`Durable::sessions`] lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSummary {
    /// The session's id.
    pub session_id: String,
    /// Who it belongs to (`None`: the local user).
    pub owner: Option<principal::Owner>,
    /// `monty` or `cpython`.
    pub interpreter: Interpreter,
    /// Cells it has run (kept, dropped and suspended).
    pub cells: usize,
    /// When it was created and last used (UTC, RFC 3339).
    pub created_at: String,
    /// When its last cell ended.
    pub last_used_at: String,
    /// When it expires unless a cell runs before.
    pub expires_at: String,
    /// `live`, `waiting` (a cell waits on a decision), `expired`, or why
    /// it ended.
    pub state: String,
}

/// A session claimed for one run: what the store holds of it.
struct Opened {
    session: StoredSession,
    chain: StoredChain,
    claimant: String,
}

impl Durable {
    /// Runs `cell` in the session `session` (an id, or [`NEW_SESSION`] to
    /// start one owned by this handle's principal), to its end or its first
    /// call that waits on a decision. The result names the session and the
    /// cell ([`ChainRunResult::session`]); a session that cannot run it
    /// gives a result of kind `session` saying why, and nothing runs.
    /// `policy` governs this cell, and its `session_expires_s` the
    /// session's life from this cell's end.
    pub async fn run_cell(
        &self,
        session: &str,
        cell: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        let opened = match session {
            NEW_SESSION => self.new_session(policy).await?,
            id => match self.open_session(id, policy).await? {
                Ok(opened) => opened,
                Err(refusal) => return Ok(refusal.into_result()),
            },
        };
        let index = opened.session.cells.len();
        self.run_opened(opened, index, cell, registry, policy.clone(), approval)
            .await
    }

    /// Records `cell` as the next cell of `session` (an id, or
    /// [`NEW_SESSION`]) without running it, and answers the session's id:
    /// a cell that runs as an MCP task. It holds the session (no other
    /// cell runs meanwhile) until [`Durable::resume_task`] of `task` runs
    /// it, on any node, to its end or a suspension; a node that dies
    /// running it leaves it to the next resume, its calls answered from
    /// the journal. A session that cannot take the cell says why.
    pub async fn start_cell(
        &self,
        session: &str,
        cell: &str,
        policy: &ChainPolicy,
        task: &str,
    ) -> Result<Result<String, SessionRefusal>, DurableError> {
        let opened = match session {
            NEW_SESSION => self.new_session(policy).await?,
            id => match self.open_session(id, policy).await? {
                Ok(opened) => opened,
                Err(refusal) => return Ok(Err(refusal)),
            },
        };
        let Opened {
            mut session, claimant, ..
        } = opened;
        let id = session.session_id.clone();
        let recorded = async {
            let base = self.history(&id).await?.next_base();
            session.cells.push(StoredCell {
                source: cell.to_owned(),
                base,
                state: CellState::Running,
                policy: Some(serde_json::to_value(policy).map_err(|e| DurableError::Corrupt {
                    chain_id: id.clone(),
                    why: e.to_string(),
                })?),
                task: Some(task.to_owned()),
            });
            self.store.update_session(&session).await?;
            Ok::<_, DurableError>(())
        }
        .await;
        self.store.release(&id, &claimant).await?;
        recorded.map(|()| Ok(id))
    }

    /// Ends the session's last cell, suspended at a call, without running
    /// it further (its MCP task was cancelled): the call is denied, the
    /// cell dropped. Nothing else of the session changes.
    pub async fn drop_waiting_cell(&self, session_id: &str) -> Result<(), DurableError> {
        let unknown = || DurableError::Store(StoreError::NoChain(session_id.to_owned()));
        let mut session = self.store.session(session_id).await?.ok_or_else(unknown)?;
        if !principal::may_act_on(self.principal.as_ref(), session.owner.as_ref()) {
            return Err(unknown());
        }
        if let Some(pending) = self.store.pending_of(session_id).await? {
            let denied = crate::store::Decision {
                seq: pending.seq,
                decision: crate::approval::ApprovalDecision::Denied {
                    reason: Some("the cell's task was cancelled".to_owned()),
                },
                decided_by: "task cancelled".to_owned(),
                decided_at: utc_now_rfc3339(),
            };
            match self.store.decide(session_id, &denied).await {
                Ok(()) | Err(StoreError::NotPending { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(cell) = session
            .cells
            .last_mut()
            .filter(|cell| matches!(cell.state, CellState::Suspended | CellState::Running))
        {
            cell.state = CellState::Dropped;
            cell.policy = None;
            self.store.update_session(&session).await?;
        }
        Ok(())
    }

    /// Completes the session's cell that waits on a decision (recorded
    /// with [`Durable::decide`]), or that was started as a task and is not
    /// running ([`Durable::start_cell`]: its first run, or a takeover of a
    /// node that died running it): what [`Durable::resume`] does for a
    /// session.
    pub(super) async fn resume_session(
        &self,
        session: StoredSession,
        task: Option<&str>,
        registry: &ToolRegistry,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        let id = session.session_id.clone();
        let chain = self
            .store
            .chain(&id)
            .await?
            .ok_or_else(|| StoreError::NoChain(id.clone()))?;
        self.check_owner(&chain)?;
        if let Some(why) = &session.ended {
            return Ok(SessionRefusal::Ended { id, why: why.clone() }.into_result());
        }
        let Some((index, cell)) = session
            .cells
            .iter()
            .enumerate()
            .next_back()
            .filter(|(_, cell)| matches!(cell.state, CellState::Suspended | CellState::Running))
            .filter(|(_, cell)| task.is_none_or(|task| cell.task.as_deref() == Some(task)))
        else {
            return match task {
                Some(task) => Err(DurableError::CellEnded {
                    session_id: id,
                    task_id: task.to_owned(),
                }),
                None => Ok(SessionRefusal::NothingToResume(id).into_result()),
            };
        };
        let policy = match &cell.policy {
            Some(policy) => serde_json::from_value(policy.clone()).map_err(|e| DurableError::Corrupt {
                chain_id: id.clone(),
                why: format!("its cell's policy: {e}"),
            })?,
            None => policy_of(&chain)?,
        };
        let source = cell.source.clone();
        let claimant = self.claimant();
        match self.store.claim(&id, &claimant, lease(&policy)).await? {
            Claim::Won => {}
            Claim::HeldBy(holder) => return Err(DurableError::BeingResumed { chain_id: id, holder }),
            Claim::Finished(_) => {
                let why = "removed".to_owned();
                return Ok(SessionRefusal::Ended { id, why }.into_result());
            }
        }
        let opened = Opened {
            session,
            chain,
            claimant,
        };
        self.run_opened(opened, index, &source, registry, policy, approval)
            .await
    }

    /// Every session this handle's principal may act on (all of them for
    /// the local user), oldest first.
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>, DurableError> {
        let now = jiff::Timestamp::now();
        let mut listed = Vec::new();
        for session in self.store.sessions().await? {
            if !principal::may_act_on(self.principal.as_ref(), session.owner.as_ref()) {
                continue;
            }
            let state = match (&session.ended, session.cells.last()) {
                (Some(why), _) => why.clone(),
                (None, _) if is_past(&session.expires_at, now) => "expired".to_owned(),
                (None, Some(cell)) if cell.state == CellState::Suspended => "waiting".to_owned(),
                (None, Some(cell)) if cell.state == CellState::Running => "running".to_owned(),
                (None, _) => "live".to_owned(),
            };
            listed.push(SessionSummary {
                cells: session.cells.len(),
                session_id: session.session_id,
                owner: session.owner,
                interpreter: session.interpreter,
                created_at: session.created_at,
                last_used_at: session.last_used_at,
                expires_at: session.expires_at,
                state,
            });
        }
        Ok(listed)
    }

    /// Ends a session for good (`chainbox sessions rm`): no cell runs in it
    /// again. One this handle's principal may not act on is
    /// [`StoreError::NoChain`], as one that does not exist.
    pub async fn end_session(&self, session_id: &str) -> Result<(), DurableError> {
        let unknown = || DurableError::Store(StoreError::NoChain(session_id.to_owned()));
        let Some(mut session) = self.store.session(session_id).await? else {
            return Err(unknown());
        };
        if !principal::may_act_on(self.principal.as_ref(), session.owner.as_ref()) {
            return Err(unknown());
        }
        session.ended = Some("removed".to_owned());
        self.store.update_session(&session).await?;
        self.engine.forget_session(session_id);
        // Its chain finished too: a claim on it now says so.
        let ended = serde_json::json!({ "session_ended": "removed" });
        self.store.finish(session_id, &ended).await?;
        Ok(())
    }

    /// A new session, created in the store and claimed.
    async fn new_session(&self, policy: &ChainPolicy) -> Result<Opened, DurableError> {
        let id = new_session_id();
        let policy_json = serde_json::to_value(policy).map_err(|e| DurableError::Corrupt {
            chain_id: id.clone(),
            why: e.to_string(),
        })?;
        let now = utc_now_rfc3339();
        let owner = self.principal.as_ref().map(|p| p.owner.clone());
        let chain = StoredChain {
            chain_id: id.clone(),
            script: String::new(),
            policy: policy_json,
            seed: rand_seed(),
            created_at: now.clone(),
            owner: owner.clone(),
        };
        let session = StoredSession {
            session_id: id.clone(),
            owner,
            interpreter: Interpreter::Monty,
            created_at: now.clone(),
            last_used_at: now.clone(),
            expires_at: expiry_after(&now, policy.session_expires_s),
            ended: None,
            cells: Vec::new(),
        };
        self.store.create_session(&chain, &session).await?;
        let claimant = self.claimant();
        match self.store.claim(&id, &claimant, lease(policy)).await? {
            Claim::Won => Ok(Opened {
                session,
                chain,
                claimant,
            }),
            // Nobody else knows its id yet.
            Claim::HeldBy(holder) => Err(DurableError::BeingResumed { chain_id: id, holder }),
            Claim::Finished(_) => Err(DurableError::Corrupt {
                chain_id: id,
                why: "a session just created is finished".to_owned(),
            }),
        }
    }

    /// The session `id`, checked and claimed for a new cell; or why not.
    async fn open_session(
        &self,
        id: &str,
        policy: &ChainPolicy,
    ) -> Result<Result<Opened, SessionRefusal>, DurableError> {
        let deadline = tokio::time::Instant::now() + BUSY_WAIT;
        let claimant = self.claimant();
        let mut pause = Duration::from_millis(20);
        loop {
            let session = match self.usable_session(id, policy).await? {
                Ok(session) => session,
                Err(refusal) => return Ok(Err(refusal)),
            };
            match self.store.claim(id, &claimant, lease(policy)).await? {
                Claim::Won => {}
                Claim::Finished(_) => {
                    let why = session.ended.unwrap_or_else(|| "removed".to_owned());
                    return Ok(Err(SessionRefusal::Ended { id: id.to_owned(), why }));
                }
                Claim::HeldBy(holder) => {
                    if tokio::time::Instant::now() + pause > deadline {
                        return Ok(Err(SessionRefusal::Busy {
                            id: id.to_owned(),
                            holder,
                        }));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                    continue;
                }
            }
            // Claimed: read it again, as the cell that ran meanwhile left it.
            let opened = match self.usable_session(id, policy).await {
                Ok(Ok(session)) => {
                    let chain = self.store.chain(id).await?;
                    chain.map(|chain| {
                        Ok(Opened {
                            session,
                            chain,
                            claimant: claimant.clone(),
                        })
                    })
                }
                Ok(Err(refusal)) => Some(Err(refusal)),
                Err(e) => {
                    self.store.release(id, &claimant).await?;
                    return Err(e);
                }
            };
            return match opened {
                Some(Ok(opened)) => Ok(Ok(opened)),
                Some(Err(refusal)) => {
                    self.store.release(id, &claimant).await?;
                    Ok(Err(refusal))
                }
                None => Err(StoreError::NoChain(id.to_owned()).into()),
            };
        }
    }

    /// The session `id` if a new cell may run in it now (ownership,
    /// life, size, no cell waiting on a decision); or why not. An expired
    /// session is ended here, for good.
    async fn usable_session(
        &self,
        id: &str,
        policy: &ChainPolicy,
    ) -> Result<Result<StoredSession, SessionRefusal>, DurableError> {
        let Some(mut session) = self.store.session(id).await? else {
            return Ok(Err(SessionRefusal::Unknown(id.to_owned())));
        };
        if !principal::may_act_on(self.principal.as_ref(), session.owner.as_ref()) {
            return Ok(Err(SessionRefusal::Unknown(id.to_owned())));
        }
        if let Some(why) = session.ended {
            return Ok(Err(SessionRefusal::Ended { id: id.to_owned(), why }));
        }
        if is_past(&session.expires_at, jiff::Timestamp::now()) {
            let at = session.expires_at.clone();
            session.ended = Some(format!("expired at {at}"));
            self.store.update_session(&session).await?;
            return Ok(Err(SessionRefusal::Expired { id: id.to_owned(), at }));
        }
        if session
            .cells
            .last()
            .is_some_and(|cell| cell.state == CellState::Running)
        {
            return Ok(Err(SessionRefusal::Busy {
                id: id.to_owned(),
                holder: format!("cell {} runs as an MCP task", session.cells.len()),
            }));
        }
        if let Some(pending) = self.store.pending_of(id).await? {
            return Ok(Err(SessionRefusal::Waiting {
                id: id.to_owned(),
                cell: session.cells.len(),
                seq: pending.seq,
                tool: pending.tool,
            }));
        }
        if session.cells.len() >= policy.max_session_cells as usize {
            return Ok(Err(SessionRefusal::Full {
                id: id.to_owned(),
                cells: session.cells.len(),
                max: policy.max_session_cells,
            }));
        }
        Ok(Ok(session))
    }

    /// Runs cell `index` (a new one: the session's length) of a claimed
    /// session, and leaves the store as it ended: the cell recorded, the
    /// session's life extended, a suspension's pending call kept, the claim
    /// released.
    async fn run_opened(
        &self,
        opened: Opened,
        index: usize,
        source: &str,
        registry: &ToolRegistry,
        mut policy: ChainPolicy,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        let Opened {
            mut session,
            chain,
            claimant,
        } = opened;
        let id = session.session_id.clone();
        let history = match self.history(&id).await {
            Ok(history) => history,
            Err(e) => {
                self.store.release(&id, &claimant).await?;
                return Err(e);
            }
        };
        let earlier = session.cells[..index.min(session.cells.len())]
            .iter()
            .filter(|cell| cell.state == CellState::Kept)
            .map(|cell| (cell.source.clone(), cell.base))
            .collect();
        let base = match session.cells.get(index) {
            Some(cell) => cell.base,
            None => history.next_base(),
        };
        if session.interpreter == Interpreter::Cpython {
            policy.python = PythonChoice::Cpython;
        }
        let options = RunOptions {
            cells: Some(Cells {
                earlier,
                base,
                session: Some(id.clone()),
            }),
            ..RunOptions::default()
        };
        let mut result = self
            .run_journaled(&chain, &claimant, source, &policy, registry, approval, history, options)
            .await;
        let state = match (&result.status, result.error_kind()) {
            (ChainStatus::Suspended, _) => CellState::Suspended,
            (ChainStatus::Ok, _) | (_, Some(ErrorKind::Script)) => CellState::Kept,
            _ => CellState::Dropped,
        };
        if state != CellState::Dropped && result.interpreter == Interpreter::Cpython {
            session.interpreter = Interpreter::Cpython;
        }
        let cell = StoredCell {
            source: source.to_owned(),
            base,
            state,
            policy: (state == CellState::Suspended)
                .then(|| serde_json::to_value(&policy).ok())
                .flatten(),
            task: session.cells.get(index).and_then(|stored| stored.task.clone()),
        };
        match session.cells.get_mut(index) {
            Some(stored) => *stored = cell,
            None => session.cells.push(cell),
        }
        let now = utc_now_rfc3339();
        session.expires_at = expiry_after(&now, policy.session_expires_s);
        session.last_used_at = now;
        let recorded = self.record_cell(&session, &result).await;
        self.store.release(&id, &claimant).await?;
        recorded?;
        result.session = Some(SessionCell {
            session_id: id,
            cell: u32::try_from(index + 1).unwrap_or(u32::MAX),
            session_expires_at: session.expires_at,
        });
        Ok(result)
    }

    /// The session's journal and decisions.
    async fn history(&self, id: &str) -> Result<History, DurableError> {
        Ok(History {
            journal: self.store.journal(id).await?,
            decisions: self.store.decisions(id).await?,
        })
    }

    /// The cell's ending in the store: a suspension's pending call, then
    /// the session's row.
    async fn record_cell(&self, session: &StoredSession, result: &ChainRunResult) -> Result<(), DurableError> {
        if let (ChainStatus::Suspended, Some(pending)) = (&result.status, &result.pending) {
            self.store.suspend(&session.session_id, pending).await?;
        }
        self.store.update_session(session).await?;
        Ok(())
    }
}

/// A fresh session id: `sess_` and 128 random bits in hex.
fn new_session_id() -> String {
    use rand::Rng as _;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    format!("sess_{}", crate::digest::hex(&bytes))
}

/// `from` plus `seconds`, as RFC 3339 (`from` itself if either does not
/// parse or the sum overflows).
fn expiry_after(from: &str, seconds: f64) -> String {
    let Ok(from) = from.parse::<jiff::Timestamp>() else {
        return from.to_owned();
    };
    let span = jiff::SignedDuration::try_from_secs_f64(seconds).unwrap_or(jiff::SignedDuration::MAX);
    from.checked_add(span).unwrap_or(jiff::Timestamp::MAX).to_string()
}

/// Whether the RFC 3339 time `at` is before `now` (a time that does not
/// parse is past: a session whose expiry cannot be read is not run).
fn is_past(at: &str, now: jiff::Timestamp) -> bool {
    at.parse::<jiff::Timestamp>().map_or(true, |at| at < now)
}
