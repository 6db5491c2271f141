//! Where durable chains live between runs: their scripts and policies,
//! their journals, the call each suspended chain waits on, the decisions
//! humans record, and the claims that make a resume run once.
//!
//! A durable chain (see [`crate::durable`]) is created in a [`ChainStore`]
//! before it runs, journals every finished tool call into it, and, when a
//! call needs a decision nobody has recorded, suspends: the store keeps the
//! pending call until `decide` records a decision, and `resume` runs the
//! chain again from the start, answered from its journal. Any process that
//! reaches the store can decide or resume, so a chain outlives the process
//! that started it. [`ChainStore::claim`] is how two processes resuming one
//! chain at once agree that only one runs it.
//!
//! [`MemoryStore`] keeps all of it in memory (tests, one process);
//! [`SqlStore`] keeps it in a database: SQLite for one machine, PostgreSQL
//! for many, through one code path. [`connect`] opens either by URL.

mod memory;
mod sql;
pub mod sweep;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalDecision;
use crate::artifacts::ArtifactRef;
use crate::journal::JournalEntry;
use crate::principal::Owner;
use crate::result::{Interpreter, PendingCall};

pub use memory::MemoryStore;
pub use sql::SqlStore;

/// Opens the store a URL names: `memory:` (a new, empty [`MemoryStore`]),
/// `sqlite:PATH` or `postgres://…` (a [`SqlStore`]; its schema is created
/// if missing).
///
/// # Errors
/// [`StoreError::UnknownScheme`] for any other URL; [`StoreError::Backend`]
/// if the database cannot be reached.
pub async fn connect(url: &str) -> Result<Arc<dyn ChainStore>, StoreError> {
    match sql::scheme(url) {
        "memory" => Ok(Arc::new(MemoryStore::new())),
        _ => Ok(Arc::new(SqlStore::connect(url).await?)),
    }
}

/// Milliseconds since the Unix epoch, now plus `ahead`: how a claim's
/// lease end is kept.
fn epoch_ms_after(ahead: Duration) -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from((now + ahead).as_millis()).unwrap_or(i64::MAX)
}

/// Milliseconds since the Unix epoch, now minus `back`: the line a sweep
/// draws between live claims and dead ones.
pub fn epoch_ms_before(back: Duration) -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.saturating_sub(back).as_millis()).unwrap_or(i64::MAX)
}

/// The artifacts a journal entry names: its offloaded result and its
/// media files.
fn entry_artifacts(entry: &JournalEntry) -> impl Iterator<Item = ArtifactRef> + '_ {
    entry
        .artifact_ref
        .into_iter()
        .chain(entry.files.iter().map(|file| file.artifact_ref))
}

/// A durable chain as the store keeps it: what is needed to run it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredChain {
    /// Its id (unique, chosen by the engine).
    pub chain_id: String,
    /// The script.
    pub script: String,
    /// Its [`crate::ChainPolicy`], as JSON.
    pub policy: Value,
    /// The seed of its randomness, so a replay sees the same values.
    pub seed: u64,
    /// When it was created (UTC, RFC 3339).
    pub created_at: String,
    /// Who it runs for: the principal that started it (`None`: the local
    /// user, and every chain stored before chains had owners). Only its
    /// owner, or the local user, may decide or resume it
    /// ([`crate::principal::may_act_on`]).
    #[serde(default)]
    pub owner: Option<Owner>,
}

/// A session as the store keeps it (see [`crate::durable::Sessions`]): a
/// durable chain of the same id holds its owner, seed, journal, pending
/// call and claim; this holds its cells and its life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSession {
    /// Its id (its chain's too).
    pub session_id: String,
    /// Who it belongs to (its chain's owner; `None`: the local user).
    #[serde(default)]
    pub owner: Option<Owner>,
    /// The interpreter its cells run on: `monty` until a cell needs
    /// CPython, then `cpython` for good.
    pub interpreter: Interpreter,
    /// When it was created (UTC, RFC 3339).
    pub created_at: String,
    /// When its last cell ended (UTC, RFC 3339).
    pub last_used_at: String,
    /// When it expires unless a cell runs before (UTC, RFC 3339).
    pub expires_at: String,
    /// Why it ended (`removed`, `expired at ...`), once it has: it is then
    /// never run again. Never cleared once set.
    pub ended: Option<String>,
    /// Its cells, in order.
    pub cells: Vec<StoredCell>,
}

/// One cell of a [`StoredSession`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCell {
    /// Its source.
    pub source: String,
    /// The number of the call before its first: its calls are journaled
    /// from `base + 1`.
    pub base: u32,
    /// What the next cells make of it.
    pub state: CellState,
    /// The policy a suspended cell runs under, for its resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Value>,
    /// The MCP task it runs as, if any: a node driving that task resumes
    /// this cell only, never a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// What became of a session's cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// It ran to its end or raised: its names live on, and later cells
    /// replay it.
    Kept,
    /// A limit or a failure of the host stopped it: it is not replayed
    /// (its calls stay journaled; its names are gone).
    Dropped,
    /// It waits on a decision; its resume completes it.
    Suspended,
    /// It runs as an MCP task: recorded before it runs, so that a node
    /// taking the task over runs it again from its base (its calls
    /// answered from the journal), and no other cell runs meanwhile.
    Running,
}

/// An MCP task (`chainbox serve`'s tasks, see `crate::mcp`) as the store
/// keeps it: a durable chain run for a client that polls it, on any node.
/// Its status is read from its chain (a pending call: input required) and
/// its own `outcome` once it has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTask {
    /// Its id.
    pub task_id: String,
    /// The chain it runs: its own (the same id), or a session's (its
    /// cell, the session's last, runs as the task).
    pub chain_id: String,
    /// Who it belongs to (its chain's owner; `None`: the local user).
    #[serde(default)]
    pub owner: Option<Owner>,
    /// When it was created (UTC, RFC 3339).
    pub created_at: String,
    /// When its status last changed as the store knows it (UTC, RFC 3339).
    pub updated_at: String,
    /// How long after its creation it is kept, in milliseconds.
    pub ttl_ms: u64,
    /// A client asked to cancel it: the node running it stops it.
    pub cancel_requested: bool,
    /// How it ended (`{"completed": CallToolResult}`, `{"failed": error}`,
    /// `{"cancelled": null}`), once it has; never replaced.
    pub outcome: Option<Value>,
}

/// A chain waiting on a decision, as [`ChainStore::pending`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingChain {
    /// The chain.
    pub chain_id: String,
    /// Who it runs for (`None`: the local user).
    pub owner: Option<Owner>,
    /// The call it waits on.
    pub call: PendingCall,
}

/// A human's decision on a suspended chain's pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The call it decides (its number in the chain).
    pub seq: u32,
    /// Approve, approve with other arguments, or deny.
    pub decision: ApprovalDecision,
    /// Who decided (free text: a user name, `cli`).
    pub decided_by: String,
    /// When (UTC, RFC 3339).
    pub decided_at: String,
}

/// How a claim to resume a chain went.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This caller holds the chain until it [`ChainStore::release`]s or
    /// [`ChainStore::finish`]es it.
    Won,
    /// Another caller holds it (named as it claimed).
    HeldBy(String),
    /// The chain has ended; its final result, as JSON.
    Finished(Value),
}

/// A chain that is not finished and that no run holds now (never claimed,
/// released, or its claim's lease run out), as [`ChainStore::idle_chains`]
/// lists it for a sweep to judge ([`sweep`]): whether anyone will finish
/// it, or it has waited past its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleChain {
    /// The chain.
    pub chain_id: String,
    /// Its [`crate::ChainPolicy`], as JSON (its limits: `approval_expires_s`).
    pub policy: Value,
    /// When it was created (UTC, RFC 3339).
    pub created_at: String,
    /// The call it waits on, if it waits on one.
    pub pending: Option<PendingCall>,
    /// When its latest decision was recorded (UTC, RFC 3339), if it has
    /// one: a chain decided but not resumed waits for its resume.
    pub last_decided_at: Option<String>,
    /// Whether it is a session's chain (its cells say what it waits on).
    pub session: bool,
    /// Whether an MCP task runs it that has not ended: its client polls,
    /// and a poll on any node takes the chain over.
    pub open_task: bool,
}

/// A finished chain, as [`ChainStore::finished_chains`] lists it for a
/// sweep: when it finished, and the policy that says how long it is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedChain {
    /// The chain.
    pub chain_id: String,
    /// Its [`crate::ChainPolicy`], as JSON (`retention_s`).
    pub policy: Value,
    /// When it finished (ms since the Unix epoch). A chain finished before
    /// the store recorded finish times counts from the first sweep that
    /// saw it.
    pub finished_at_ms: i64,
}

/// How many rows a store holds: what a sweep leaves behind
/// ([`ChainStore::counts`], `chainbox gc --json`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreCounts {
    /// Chains (sessions' and tasks' included), finished or not.
    pub chains: u64,
    /// Of those, the finished ones (deleted once past `retention_s`).
    pub finished: u64,
    /// Journal entries.
    pub journal: u64,
    /// Decisions.
    pub decisions: u64,
    /// Sessions.
    pub sessions: u64,
    /// MCP tasks.
    pub tasks: u64,
}

/// How taking a named lock went ([`ChainStore::take_lock`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lock {
    /// This holder has it until it releases it or its lease runs out.
    Taken,
    /// Another holder has it (named as it locked), its lease not run out.
    HeldBy(String),
}

/// What a store failed at.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No chain has this id.
    #[error("no durable chain {0:?}")]
    NoChain(String),
    /// The chain waits on no decision (it is running, finished or never
    /// suspended), or the decision names another call.
    #[error("chain {chain_id:?} has no pending call{}", match seq { Some(seq) => format!(" #{seq}"), None => String::new() })]
    NotPending {
        /// The chain.
        chain_id: String,
        /// The call the decision named.
        seq: Option<u32>,
    },
    /// A chain with this id exists already, or a journal entry with this
    /// number was written already.
    #[error("{0} exists already")]
    Exists(String),
    /// The database's schema is a newer chainbox's: this one does not
    /// know its tables, and leaves them alone.
    #[error(
        "the chain store's schema is version {found}, newer than this chainbox's ({supported}): use a chainbox at least as new as the one that migrated it"
    )]
    SchemaTooNew {
        /// The version the database records.
        found: i64,
        /// The newest this chainbox knows.
        supported: i64,
    },
    /// A store URL names no store chainbox knows (its scheme, never the
    /// rest: a PostgreSQL URL may hold a password).
    #[error("unknown store URL scheme {0:?}: expected memory:, sqlite:PATH or postgres://...")]
    UnknownScheme(String),
    /// The URL's store needs a cargo feature this build lacks (its scheme,
    /// the feature).
    #[error("store URL scheme {0:?} needs chainbox built with the `{1}` feature")]
    NotBuiltIn(String, &'static str),
    /// The backend failed (its error's text).
    #[error("chain store: {0}")]
    Backend(String),
}

/// Where durable chains live. Every method is one short transaction: a
/// store shared by many processes keeps them consistent with each other.
#[async_trait]
pub trait ChainStore: Send + Sync {
    /// Records a new chain ([`StoreError::Exists`] if its id is taken).
    async fn create(&self, chain: &StoredChain) -> Result<(), StoreError>;

    /// Records a new chain already claimed by `claimant` for `lease`, as
    /// [`ChainStore::create`] then [`ChainStore::claim`] would: a chain's
    /// first run starts with one durable write, not two. A store that
    /// cannot do both at once does them in turn.
    async fn create_claimed(&self, chain: &StoredChain, claimant: &str, lease: Duration) -> Result<(), StoreError> {
        self.create(chain).await?;
        match self.claim(&chain.chain_id, claimant, lease).await? {
            Claim::Won => Ok(()),
            // Nobody else can know a chain made a moment ago.
            Claim::HeldBy(_) | Claim::Finished(_) => Err(StoreError::Exists(format!("chain {:?}", chain.chain_id))),
        }
    }

    /// The chain, if there is one with this id.
    async fn chain(&self, chain_id: &str) -> Result<Option<StoredChain>, StoreError>;

    /// Appends a finished call to the chain's journal ([`StoreError::Exists`]
    /// if an entry with its `seq` is there already).
    async fn append(&self, chain_id: &str, entry: &JournalEntry) -> Result<(), StoreError>;

    /// Appends finished calls to the chain's journal in one transaction:
    /// all of them, or none (an error as [`ChainStore::append`]'s).
    async fn append_many(&self, chain_id: &str, entries: &[JournalEntry]) -> Result<(), StoreError>;

    /// The chain's journal, in order of `seq`.
    async fn journal(&self, chain_id: &str) -> Result<Vec<JournalEntry>, StoreError>;

    /// The chain suspended at `pending`: it waits on a decision. Replaces a
    /// pending call it had before.
    async fn suspend(&self, chain_id: &str, pending: &PendingCall) -> Result<(), StoreError>;

    /// Every chain waiting on a decision, with its owner and its pending
    /// call, oldest request first.
    async fn pending(&self) -> Result<Vec<PendingChain>, StoreError>;

    /// The call this chain waits on, if it waits on one: one row read, for
    /// a caller that knows its chain (a decision, a retry).
    async fn pending_of(&self, chain_id: &str) -> Result<Option<PendingCall>, StoreError>;

    /// Records a decision on the chain's pending call
    /// ([`StoreError::NotPending`] if it waits on none, or on another call).
    /// The chain then waits to be resumed.
    async fn decide(&self, chain_id: &str, decision: &Decision) -> Result<(), StoreError>;

    /// Every decision recorded for the chain.
    async fn decisions(&self, chain_id: &str) -> Result<Vec<Decision>, StoreError>;

    /// Claims the chain to run it (a resume) for `lease`: at most one caller
    /// holds a chain at a time, and a finished chain is not run again. A
    /// claim whose lease has run out is stale (its holder died mid-run: a
    /// live one ends its run within the lease) and goes to the next
    /// claimant. Leases are measured on the claimants' clocks (UTC).
    async fn claim(&self, chain_id: &str, claimant: &str, lease: Duration) -> Result<Claim, StoreError>;

    /// Gives up a claim (the run suspended again, or failed to start).
    async fn release(&self, chain_id: &str, claimant: &str) -> Result<(), StoreError>;

    /// The chain ended with `result` (JSON): kept for a late claimant, and
    /// the claim and any pending call are cleared.
    async fn finish(&self, chain_id: &str, result: &Value) -> Result<(), StoreError>;

    /// Records a new session: its chain and its row, in one transaction
    /// ([`StoreError::Exists`] if the id is taken).
    async fn create_session(&self, chain: &StoredChain, session: &StoredSession) -> Result<(), StoreError>;

    /// The session, if there is one with this id (its owner read from its
    /// chain).
    async fn session(&self, session_id: &str) -> Result<Option<StoredSession>, StoreError>;

    /// Writes the session's cells, interpreter, last use and expiry, and
    /// its `ended` if it has none yet (an ended session stays ended).
    async fn update_session(&self, session: &StoredSession) -> Result<(), StoreError>;

    /// Every session, oldest first.
    async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError>;

    /// Records a new task, and its chain when given (else the task's
    /// chain exists: a session's), in one transaction
    /// ([`StoreError::Exists`] if an id is taken).
    async fn create_task(&self, chain: Option<&StoredChain>, task: &StoredTask) -> Result<(), StoreError>;

    /// The task, if there is one with this id (its owner read from its
    /// chain).
    async fn task(&self, task_id: &str) -> Result<Option<StoredTask>, StoreError>;

    /// Records how the task ended, unless an outcome is recorded already:
    /// whether this one was.
    async fn end_task(&self, task_id: &str, outcome: &Value) -> Result<bool, StoreError>;

    /// Marks the task's cancellation as requested.
    async fn cancel_task(&self, task_id: &str) -> Result<(), StoreError>;

    /// The key that seals the `requestState`s `chainbox serve --state`
    /// hands out: 32 random bytes, created by the first caller and the same
    /// for every process on this store (so a state sealed by one node opens
    /// on any other). Two callers creating it at once get the same key.
    async fn state_key(&self) -> Result<[u8; STATE_KEY_BYTES], StoreError>;

    /// Every chain that is not finished and that no run holds: never
    /// claimed, released, or claimed with a lease that ran out before
    /// `dead_before_ms` (ms since the Unix epoch). What a sweep judges.
    async fn idle_chains(&self, dead_before_ms: i64) -> Result<Vec<IdleChain>, StoreError>;

    /// Finishes the chain with `result` as [`ChainStore::finish`] does, but
    /// only if it is still as a sweep found it: not finished, no live claim
    /// (none, or one whose lease ran out before `dead_before_ms`), and
    /// waiting on call `pending_seq` (`None`: on no call). One conditional
    /// write, so a run or decision that came meanwhile wins: whether it
    /// finished the chain.
    async fn finish_idle(
        &self,
        chain_id: &str,
        result: &Value,
        pending_seq: Option<u32>,
        dead_before_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Every finished chain, with when it finished and its policy.
    async fn finished_chains(&self) -> Result<Vec<FinishedChain>, StoreError>;

    /// Deletes a finished chain and all that is its (journal, decisions,
    /// session, tasks), in one transaction: whether it did (a chain not
    /// finished, or gone already, is left alone).
    async fn delete_finished(&self, chain_id: &str) -> Result<bool, StoreError>;

    /// Every artifact the journal of a chain that is not finished names
    /// (offloaded results and media files): what a resume reads back, so
    /// the artifact store's collection keeps them whoever pins them.
    async fn journaled_artifacts(&self) -> Result<Vec<ArtifactRef>, StoreError>;

    /// Takes (or renews) the lock `name` for `holder` for `lease`: one
    /// holder at a time among every process on the store; a lock whose
    /// lease ran out goes to the next taker. Leases are measured on the
    /// takers' clocks, as claims are.
    async fn take_lock(&self, name: &str, holder: &str, lease: Duration) -> Result<Lock, StoreError>;

    /// Gives up the lock `name` if `holder` has it.
    async fn release_lock(&self, name: &str, holder: &str) -> Result<(), StoreError>;

    /// How many rows the store holds.
    async fn counts(&self) -> Result<StoreCounts, StoreError>;
}

/// How long the key of [`ChainStore::state_key`] is, in bytes.
pub const STATE_KEY_BYTES: usize = 32;

/// A fresh random key for [`ChainStore::state_key`] (rand's thread
/// generator: ChaCha seeded from the OS).
fn random_state_key() -> [u8; STATE_KEY_BYTES] {
    use rand::Rng as _;
    let mut key = [0; STATE_KEY_BYTES];
    rand::rng().fill_bytes(&mut key);
    key
}
