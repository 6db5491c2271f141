//! A chain's journal: how each of its tool calls ended, in order, so that
//! the chain can be run again from the start and find its calls answered.
//!
//! A durable chain writes one [`JournalEntry`] per finished tool call (its
//! sequence number, tool, arguments digest and the outcome the script saw).
//! Resuming it re-runs the script from the start on a fresh instance: the
//! invoker answers each call up to the journal's end from the journal,
//! after checking that the script asked for the same tool with the same
//! arguments (else the chain ends as `replay_diverged`, naming the call,
//! and nothing runs), and runs the first call past the end for real. The
//! tool of a journaled call never runs twice.
//!
//! [`Journal`] is the contract a store implements; [`MemoryJournal`] keeps
//! one in memory (tests, and a library user with its own persistence).

use std::sync::Mutex;

use async_trait::async_trait;
use chainbox_protocol::CallOutcome;
use serde::{Deserialize, Serialize};

use crate::artifacts::ArtifactRef;
use crate::result::{CallStatus, ChainFile, FlowSource, PolicyDecision};

/// One finished tool call, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The call's number in the chain, from 1, in the order the script made
    /// its calls.
    pub seq: u32,
    /// The tool the script called.
    pub tool: String,
    /// Lowercase hex SHA-256 of the arguments' canonical JSON, as in the
    /// call's trace record.
    pub args_digest: String,
    /// How the call ended.
    pub status: CallStatus,
    /// What the script received.
    pub outcome: CallOutcome,
    /// The artifact its result was offloaded to, if it was.
    pub artifact_ref: Option<ArtifactRef>,
    /// The media files its result wrote into the workspace, which a replay
    /// writes again from the artifact store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ChainFile>,
    /// The tool's kind and name, as in the trace record.
    pub source: Option<String>,
    /// The policy decision that let it through or stopped it.
    pub policy: Option<PolicyDecision>,
    /// When the outcome was observed (UTC, RFC 3339).
    pub observed_at: String,
    /// The untrusted results the data-flow policy held it for, as in the
    /// call's trace record (a replay reports them again). Left out of the
    /// JSON when empty, and empty in an entry written before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<FlowSource>,
}

/// Where a chain's journal lives.
#[async_trait]
pub trait Journal: Send + Sync {
    /// The calls recorded so far, in order of `seq` (1, 2, ...): the prefix
    /// a resumed chain is answered from.
    fn recorded(&self) -> Vec<JournalEntry>;

    /// Records one more finished call. An error ends the chain (a call
    /// that ran but is not journaled could run again on a resume).
    async fn append(&self, entry: JournalEntry) -> Result<(), JournalError>;
}

/// A journal could not record a call (its store's failure, as text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the journal could not record call #{seq}: {why}")]
pub struct JournalError {
    /// The call.
    pub seq: u32,
    /// What failed.
    pub why: String,
}

/// A journal in memory.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<Vec<JournalEntry>>,
}

impl MemoryJournal {
    /// An empty journal.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A journal holding `entries` (say, read back from a file).
    #[must_use]
    pub fn from_entries(entries: Vec<JournalEntry>) -> Self {
        Self {
            entries: Mutex::new(entries),
        }
    }
}

#[async_trait]
impl Journal for MemoryJournal {
    fn recorded(&self) -> Vec<JournalEntry> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn append(&self, entry: JournalEntry) -> Result<(), JournalError> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(entry);
        Ok(())
    }
}

/// A resumed chain asked for another call than its journal holds at that
/// point: the script no longer does what it did (it reads the clock, a
/// file or a tool result that changed), so its later calls cannot be
/// trusted to be the ones already made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "replay diverged at call #{seq}: the journal has {journaled_tool:?} (arguments {journaled_digest}), the script now calls {tool:?} (arguments {args_digest})"
)]
pub struct ReplayDiverged {
    /// The call's number.
    pub seq: u32,
    /// The tool the journal recorded.
    pub journaled_tool: String,
    /// The arguments digest the journal recorded.
    pub journaled_digest: String,
    /// The tool the script called now.
    pub tool: String,
    /// The arguments digest of the call now.
    pub args_digest: String,
}
