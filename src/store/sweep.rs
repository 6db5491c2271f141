//! Sweeps: what keeps a chain store (and its artifact store) from growing
//! for ever, and finishes the durable chains no process will finish.
//!
//! A sweep, under the store's `sweep` lock (one process at a time among
//! every process on the store), does three things:
//!
//! 1. It finishes the chains nobody will finish: an unfinished chain that
//!    no run holds (its claim released, or its lease run out
//!    [`SweepOptions::claim_grace`] ago) and that
//!    - never suspended and has no decision: its run died or was
//!      cancelled before any suspension, so it is finished as
//!      `abandoned` (a chain an MCP task runs: once the task's
//!      `task_ttl_s` is past, as its client may still poll it until then);
//!    - waits on a decision requested more than `approval_expires_s` ago,
//!      or was decided more than `approval_expires_s` ago and never
//!      resumed: finished as `expired`;
//!    - is a session past its `session_expires_s` (a cell suspended at a
//!      call: also past `approval_expires_s`; a cell started as a task:
//!      also past `task_ttl_s`), or ended but not finished: the session is
//!      ended (`expired at ...`) and its chain finished.
//!
//!    The finish is one conditional write ([`ChainStore::finish_idle`]): a
//!    run, suspension or decision that came since the sweep read the chain
//!    wins, and the chain is left alone. Its artifact pins are released.
//! 2. It deletes each finished chain `retention_s` (its policy's) after it
//!    finished: its result, journal, decisions, session and tasks.
//! 3. It deletes the artifacts no chain pins, that no unfinished chain's
//!    journal names, and that are older than
//!    [`SweepOptions::artifact_grace`].
//!
//! Nothing a live or suspended chain needs is removed: a chain with a live
//! claim is never judged, a suspended one waits its whole
//! `approval_expires_s`, and the artifacts its journal names are kept.
//! `chainbox gc` sweeps once; `chainbox serve --state` every few minutes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::{CellState, ChainStore, FinishedChain, IdleChain, Lock, StoreCounts, StoreError, epoch_ms_before};
use crate::artifacts::{ArtifactError, ArtifactRef, ArtifactStore};
use crate::policy::ChainPolicy;
use crate::result::{ChainError, ChainRunResult, ChainStatus, ErrorKind};

/// The name of the store lock a sweep holds ([`ChainStore::take_lock`]).
pub const SWEEP_LOCK: &str = "sweep";

/// How long a sweep's lock lasts: longer than any sweep takes, so a
/// sweeper that died leaves it to the next one this long after at most.
pub const SWEEP_LEASE: Duration = Duration::from_secs(600);

/// How old an unpinned artifact must be before a sweep deletes it, by
/// default: far longer than a chain's run (`total_timeout_s`, 300 s by
/// default), so a running chain's artifacts are never taken from it.
pub const DEFAULT_ARTIFACT_GRACE: Duration = Duration::from_secs(3600);

/// How long past its lease a claim must be before a sweep counts its run
/// as dead, by default: one lease (a run's claim lasts 30 s and is
/// renewed every 5 s, `crate::durable::CLAIM_LEASE`), against clocks that
/// disagree between nodes and a chain created but not yet claimed.
pub const DEFAULT_CLAIM_GRACE: Duration = Duration::from_secs(30);

/// What a sweep may remove, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepOptions {
    /// How old an unpinned artifact no journal names must be to go.
    pub artifact_grace: Duration,
    /// How long past its lease (or, unclaimed, past its creation) a chain
    /// must be before its run counts as dead.
    pub claim_grace: Duration,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            artifact_grace: DEFAULT_ARTIFACT_GRACE,
            claim_grace: DEFAULT_CLAIM_GRACE,
        }
    }
}

/// What one sweep did (`chainbox gc --json` prints it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Chains finished as `abandoned`.
    pub abandoned: u64,
    /// Chains finished as `expired` (past `approval_expires_s`).
    pub expired: u64,
    /// Sessions ended (past `session_expires_s`) and their chains finished.
    pub sessions_ended: u64,
    /// Finished chains deleted (past `retention_s`), with their journals,
    /// decisions, sessions and tasks.
    pub deleted: u64,
    /// Artifacts deleted (unpinned, named by no unfinished chain's journal,
    /// older than the grace); 0 without an artifact store.
    pub artifacts_deleted: u64,
    /// What the store holds after the sweep.
    pub remaining: StoreCounts,
}

/// Why a sweep failed.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The chain store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The artifact store failed.
    #[error("the artifact store: {0}")]
    Artifacts(#[from] ArtifactError),
    /// Another process is sweeping the store now.
    #[error("another process is sweeping this store now ({holder})")]
    Busy {
        /// Who, as it named itself.
        holder: String,
    },
}

/// Sweeps `store` (and `artifacts`, when given) once, under the store's
/// sweep lock: [`SweepError::Busy`] if another process holds it. See the
/// module docs for what goes.
pub async fn sweep(
    store: &Arc<dyn ChainStore>,
    artifacts: Option<&Arc<dyn ArtifactStore>>,
    options: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let holder = format!("pid {} sweep {}", std::process::id(), uuid::Uuid::new_v4().simple());
    match store.take_lock(SWEEP_LOCK, &holder, SWEEP_LEASE).await? {
        Lock::Taken => {}
        Lock::HeldBy(holder) => return Err(SweepError::Busy { holder }),
    }
    let swept = sweep_locked(store, artifacts, options).await;
    let released = store.release_lock(SWEEP_LOCK, &holder).await;
    let report = swept?;
    released?;
    Ok(report)
}

/// The sweep itself, its lock held.
async fn sweep_locked(
    store: &Arc<dyn ChainStore>,
    artifacts: Option<&Arc<dyn ArtifactStore>>,
    options: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let mut report = SweepReport::default();
    let dead_before = epoch_ms_before(options.claim_grace);
    let now = jiff::Timestamp::now();
    for chain in store.idle_chains(dead_before).await? {
        let verdict = match judge(store, &chain, now, options).await {
            Ok(verdict) => verdict,
            Err(e) => {
                tracing::warn!(chain_id = %chain.chain_id, error = %e, "a sweep could not judge a chain; left alone");
                continue;
            }
        };
        let result = match &verdict {
            Verdict::Keep => continue,
            Verdict::Abandoned(why) => ended(&chain.chain_id, ErrorKind::Abandoned, "ChainAbandoned", why),
            Verdict::Expired(why) => ended(&chain.chain_id, ErrorKind::Expired, "ChainExpired", why),
            Verdict::SessionEnded(why) => json!({ "session_ended": why }),
        };
        let pending_seq = chain.pending.as_ref().map(|p| p.seq);
        if !store
            .finish_idle(&chain.chain_id, &result, pending_seq, dead_before)
            .await?
        {
            continue; // a run or a decision came first
        }
        match verdict {
            Verdict::Keep => {}
            Verdict::Abandoned(_) => report.abandoned += 1,
            Verdict::Expired(_) => report.expired += 1,
            Verdict::SessionEnded(why) => {
                report.sessions_ended += 1;
                end_session(store, &chain.chain_id, why).await?;
            }
        }
        if let Some(artifacts) = artifacts {
            unpin(artifacts, &chain.chain_id).await?;
        }
    }
    let now_ms = epoch_ms_before(Duration::ZERO);
    for FinishedChain {
        chain_id,
        policy,
        finished_at_ms,
    } in store.finished_chains().await?
    {
        let retention = policy_from(&chain_id, &policy).map_or(ChainPolicy::default().retention_s, |p| p.retention_s);
        let retention_ms = (retention * 1000.0).min(i64::MAX as f64) as i64;
        if finished_at_ms.saturating_add(retention_ms) > now_ms {
            continue;
        }
        if store.delete_finished(&chain_id).await? {
            report.deleted += 1;
            if let Some(artifacts) = artifacts {
                unpin(artifacts, &chain_id).await?;
            }
        }
    }
    if let Some(artifacts) = artifacts {
        let keep: HashSet<ArtifactRef> = store.journaled_artifacts().await?.into_iter().collect();
        let artifacts = artifacts.clone();
        let grace = options.artifact_grace;
        let removed = tokio::task::spawn_blocking(move || artifacts.gc_unused(grace, &keep))
            .await
            .map_err(|e| ArtifactError::Runtime(std::io::Error::other(e)))??;
        report.artifacts_deleted = u64::try_from(removed).unwrap_or(u64::MAX);
    }
    report.remaining = store.counts().await?;
    Ok(report)
}

/// What a sweep makes of an idle chain.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Someone may still finish it: left alone.
    Keep,
    /// Nobody will: finished as `abandoned`, saying why.
    Abandoned(String),
    /// It waited past its limit: finished as `expired`, saying why.
    Expired(String),
    /// A session past its life: ended, saying why.
    SessionEnded(String),
}

/// Why the sweep could not judge a chain (it is left alone).
#[derive(Debug, thiserror::Error)]
enum JudgeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("its policy does not parse: {0}")]
    Policy(serde_json::Error),
}

/// The verdict on `chain` at `now`.
async fn judge(
    store: &Arc<dyn ChainStore>,
    chain: &IdleChain,
    now: jiff::Timestamp,
    options: &SweepOptions,
) -> Result<Verdict, JudgeError> {
    let policy: ChainPolicy = serde_json::from_value(chain.policy.clone()).map_err(JudgeError::Policy)?;
    if chain.session {
        return judge_session(store, chain, &policy, now).await;
    }
    if let Some(pending) = &chain.pending {
        return Ok(match past(&pending.requested_at, policy.approval_expires_s, now) {
            true => Verdict::Expired(format!(
                "call #{} ({}) waited for a decision from {} past approval_expires_s = {}",
                pending.seq, pending.tool, pending.requested_at, policy.approval_expires_s
            )),
            false => Verdict::Keep,
        });
    }
    if let Some(decided_at) = &chain.last_decided_at {
        return Ok(match past(decided_at, policy.approval_expires_s, now) {
            true => Verdict::Expired(format!(
                "decided at {decided_at} but not resumed within approval_expires_s = {}",
                policy.approval_expires_s
            )),
            false => Verdict::Keep,
        });
    }
    if chain.open_task {
        return Ok(match past(&chain.created_at, policy.task_ttl_s, now) {
            true => Verdict::Abandoned(format!(
                "its MCP task's run ended before the chain did, and no poll took it over within task_ttl_s = {}",
                policy.task_ttl_s
            )),
            false => Verdict::Keep,
        });
    }
    Ok(match past(&chain.created_at, options.claim_grace.as_secs_f64(), now) {
        true => Verdict::Abandoned(
            "its run ended before it suspended or finished (its process died, or it was cancelled), and nothing resumed it"
                .to_owned(),
        ),
        false => Verdict::Keep,
    })
}

/// The verdict on a session's chain: ended once past its life and, for a
/// cell waiting on a decision or started as a task, past that cell's
/// limit too.
async fn judge_session(
    store: &Arc<dyn ChainStore>,
    chain: &IdleChain,
    policy: &ChainPolicy,
    now: jiff::Timestamp,
) -> Result<Verdict, JudgeError> {
    let Some(session) = store.session(&chain.chain_id).await? else {
        return Ok(Verdict::Keep);
    };
    if let Some(why) = session.ended {
        return Ok(Verdict::SessionEnded(why));
    }
    if !past(&session.expires_at, 0.0, now) {
        return Ok(Verdict::Keep);
    }
    let last = session.cells.last();
    let cell_policy = match last.and_then(|cell| cell.policy.clone()) {
        Some(value) => serde_json::from_value(value).map_err(JudgeError::Policy)?,
        None => policy.clone(),
    };
    let waited_out = match last.map(|cell| cell.state) {
        Some(CellState::Suspended) => {
            let since = chain
                .pending
                .as_ref()
                .map(|p| p.requested_at.as_str())
                .or(chain.last_decided_at.as_deref())
                .unwrap_or(session.expires_at.as_str());
            past(since, cell_policy.approval_expires_s, now)
        }
        Some(CellState::Running) => past(&session.expires_at, cell_policy.task_ttl_s, now),
        _ => true,
    };
    Ok(match waited_out {
        true => Verdict::SessionEnded(format!("expired at {}", session.expires_at)),
        false => Verdict::Keep,
    })
}

/// Marks a session whose chain a sweep finished as ended, saying why (an
/// ended session stays as it ended).
async fn end_session(store: &Arc<dyn ChainStore>, session_id: &str, why: String) -> Result<(), StoreError> {
    if let Some(mut session) = store.session(session_id).await? {
        session.ended.get_or_insert(why);
        store.update_session(&session).await?;
    }
    Ok(())
}

/// The result a sweep finishes a chain with: an error of `kind`, no run.
fn ended(chain_id: &str, kind: ErrorKind, error_type: &str, why: &str) -> Value {
    let mut result = ChainRunResult::empty(ChainStatus::Error);
    result.chain_id = Some(chain_id.to_owned());
    result.error = Some(ChainError::new(kind, error_type, format!("chain {chain_id:?}: {why}")));
    serde_json::to_value(&result).unwrap_or_else(|_| json!({ "status": "error" }))
}

/// The chain's policy, if it parses (a finished chain whose does not is
/// kept for the default retention).
fn policy_from(chain_id: &str, policy: &Value) -> Option<ChainPolicy> {
    serde_json::from_value(policy.clone())
        .inspect_err(|e| tracing::warn!(chain_id, error = %e, "a finished chain's policy does not parse"))
        .ok()
}

/// Whether `seconds` after the RFC 3339 time `at` is before `now`. A time
/// that does not parse is never past: a sweep does not finish what it
/// cannot read.
fn past(at: &str, seconds: f64, now: jiff::Timestamp) -> bool {
    let Ok(at) = at.parse::<jiff::Timestamp>() else {
        return false;
    };
    let span = jiff::SignedDuration::try_from_secs_f64(seconds).unwrap_or(jiff::SignedDuration::MAX);
    at.checked_add(span).is_ok_and(|end| end < now)
}

/// Releases a chain's artifact pins, off the async threads (the artifact
/// stores block).
async fn unpin(artifacts: &Arc<dyn ArtifactStore>, chain_id: &str) -> Result<(), SweepError> {
    let artifacts = artifacts.clone();
    let chain_id = chain_id.to_owned();
    tokio::task::spawn_blocking(move || artifacts.unpin_chain(&chain_id))
        .await
        .map_err(|e| ArtifactError::Runtime(std::io::Error::other(e)))??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_past_only_once_its_seconds_have_gone_by() {
        let now: jiff::Timestamp = "2026-12-02T10:00:00Z".parse().expect("time");
        assert!(past("2026-12-01T09:59:59Z", 86_400.0, now));
        assert!(!past("2026-12-01T10:00:01Z", 86_400.0, now));
        assert!(!past("not a time", 0.0, now), "what does not parse is never past");
        assert!(!past("2026-12-01T10:00:00Z", f64::MAX, now));
    }

    #[test]
    fn a_swept_chain_ends_as_an_error_of_its_kind_naming_its_chain() {
        let result = ended("c1", ErrorKind::Expired, "ChainExpired", "too late");
        assert_eq!(result["status"], "error");
        assert_eq!(result["chain_id"], "c1");
        assert_eq!(result["error"]["kind"], "expired");
        assert_eq!(result["error"]["type"], "ChainExpired");
        assert!(
            result["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("too late"))
        );
    }
}
