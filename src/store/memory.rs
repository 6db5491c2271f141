//! [`MemoryStore`]: a [`ChainStore`] in one process's memory.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{
    ChainStore, Claim, Decision, FinishedChain, IdleChain, Lock, PendingChain, STATE_KEY_BYTES, StoreCounts,
    StoreError, StoredChain, StoredSession, StoredTask, entry_artifacts, epoch_ms_after, random_state_key,
};
use crate::artifacts::ArtifactRef;
use crate::journal::JournalEntry;
use crate::result::PendingCall;

/// A [`ChainStore`] in memory: for tests, and for one process that only
/// needs chains to outlive a human's wait, not itself.
#[derive(Debug, Default)]
pub struct MemoryStore {
    chains: Mutex<BTreeMap<String, Entry>>,
    sessions: Mutex<BTreeMap<String, StoredSession>>,
    tasks: Mutex<BTreeMap<String, StoredTask>>,
    state_key: Mutex<Option<[u8; STATE_KEY_BYTES]>>,
    /// Named locks: holder and lease end (ms since the Unix epoch).
    locks: Mutex<BTreeMap<String, (String, i64)>>,
}

#[derive(Debug)]
struct Entry {
    chain: StoredChain,
    journal: Vec<JournalEntry>,
    pending: Option<PendingCall>,
    decisions: Vec<Decision>,
    claimed_by: Option<String>,
    /// When the claim's lease runs out (ms since the Unix epoch).
    claimed_until: i64,
    finished: Option<Value>,
    /// When it finished (ms since the Unix epoch).
    finished_at: i64,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        self.chains.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn entry<'a>(chains: &'a mut BTreeMap<String, Entry>, chain_id: &str) -> Result<&'a mut Entry, StoreError> {
    chains
        .get_mut(chain_id)
        .ok_or_else(|| StoreError::NoChain(chain_id.to_owned()))
}

#[async_trait]
impl ChainStore for MemoryStore {
    async fn create(&self, chain: &StoredChain) -> Result<(), StoreError> {
        let mut chains = self.lock();
        if chains.contains_key(&chain.chain_id) {
            return Err(StoreError::Exists(format!("chain {:?}", chain.chain_id)));
        }
        chains.insert(
            chain.chain_id.clone(),
            Entry {
                chain: chain.clone(),
                journal: Vec::new(),
                pending: None,
                decisions: Vec::new(),
                claimed_by: None,
                claimed_until: 0,
                finished: None,
                finished_at: 0,
            },
        );
        Ok(())
    }

    async fn chain(&self, chain_id: &str) -> Result<Option<StoredChain>, StoreError> {
        Ok(self.lock().get(chain_id).map(|e| e.chain.clone()))
    }

    async fn append(&self, chain_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        self.append_many(chain_id, std::slice::from_ref(entry)).await
    }

    async fn append_many(&self, chain_id: &str, entries: &[JournalEntry]) -> Result<(), StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        for (i, new) in entries.iter().enumerate() {
            if entry.journal.iter().chain(&entries[..i]).any(|e| e.seq == new.seq) {
                return Err(StoreError::Exists(format!(
                    "journal entry #{} of chain {chain_id:?}",
                    new.seq
                )));
            }
        }
        entry.journal.extend(entries.iter().cloned());
        entry.journal.sort_by_key(|e| e.seq);
        Ok(())
    }

    async fn journal(&self, chain_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let mut chains = self.lock();
        Ok(entry(&mut chains, chain_id)?.journal.clone())
    }

    async fn suspend(&self, chain_id: &str, pending: &PendingCall) -> Result<(), StoreError> {
        let mut chains = self.lock();
        entry(&mut chains, chain_id)?.pending = Some(pending.clone());
        Ok(())
    }

    async fn pending(&self) -> Result<Vec<PendingChain>, StoreError> {
        let chains = self.lock();
        let mut pending: Vec<PendingChain> = chains
            .iter()
            .filter_map(|(id, e)| {
                e.pending.clone().map(|call| PendingChain {
                    chain_id: id.clone(),
                    owner: e.chain.owner.clone(),
                    call,
                })
            })
            .collect();
        pending.sort_by(|a, b| (&a.call.requested_at, &a.chain_id).cmp(&(&b.call.requested_at, &b.chain_id)));
        Ok(pending)
    }

    async fn pending_of(&self, chain_id: &str) -> Result<Option<PendingCall>, StoreError> {
        let mut chains = self.lock();
        Ok(entry(&mut chains, chain_id)?.pending.clone())
    }

    async fn decide(&self, chain_id: &str, decision: &Decision) -> Result<(), StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        match &entry.pending {
            Some(pending) if pending.seq == decision.seq => {
                entry.pending = None;
                entry.decisions.push(decision.clone());
                Ok(())
            }
            _ => Err(StoreError::NotPending {
                chain_id: chain_id.to_owned(),
                seq: Some(decision.seq),
            }),
        }
    }

    async fn decisions(&self, chain_id: &str) -> Result<Vec<Decision>, StoreError> {
        let mut chains = self.lock();
        Ok(entry(&mut chains, chain_id)?.decisions.clone())
    }

    async fn claim(&self, chain_id: &str, claimant: &str, lease: Duration) -> Result<Claim, StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        if let Some(result) = &entry.finished {
            return Ok(Claim::Finished(result.clone()));
        }
        match &entry.claimed_by {
            Some(holder) if holder != claimant && entry.claimed_until >= epoch_ms_after(Duration::ZERO) => {
                Ok(Claim::HeldBy(holder.clone()))
            }
            _ => {
                entry.claimed_by = Some(claimant.to_owned());
                entry.claimed_until = epoch_ms_after(lease);
                Ok(Claim::Won)
            }
        }
    }

    async fn release(&self, chain_id: &str, claimant: &str) -> Result<(), StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        if entry.claimed_by.as_deref() == Some(claimant) {
            entry.claimed_by = None;
        }
        Ok(())
    }

    async fn finish(&self, chain_id: &str, result: &Value) -> Result<(), StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        entry.finished = Some(result.clone());
        entry.finished_at = epoch_ms_after(Duration::ZERO);
        entry.claimed_by = None;
        entry.pending = None;
        Ok(())
    }

    async fn create_session(&self, chain: &StoredChain, session: &StoredSession) -> Result<(), StoreError> {
        // The chain's id is the session's: taken for one, taken for both.
        self.create(chain).await?;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.insert(session.session_id.clone(), session.clone());
        Ok(())
    }

    async fn session(&self, session_id: &str) -> Result<Option<StoredSession>, StoreError> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(sessions.get(session_id).cloned())
    }

    async fn update_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = sessions
            .get_mut(&session.session_id)
            .ok_or_else(|| StoreError::NoChain(session.session_id.clone()))?;
        let ended = stored.ended.take().or_else(|| session.ended.clone());
        *stored = StoredSession {
            ended,
            owner: stored.owner.clone(),
            created_at: stored.created_at.clone(),
            ..session.clone()
        };
        Ok(())
    }

    async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<StoredSession> = sessions.values().cloned().collect();
        all.sort_by(|a, b| (&a.created_at, &a.session_id).cmp(&(&b.created_at, &b.session_id)));
        Ok(all)
    }

    async fn create_task(&self, chain: Option<&StoredChain>, task: &StoredTask) -> Result<(), StoreError> {
        if let Some(chain) = chain {
            self.create(chain).await?;
        }
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        if tasks.contains_key(&task.task_id) {
            return Err(StoreError::Exists(format!("task {:?}", task.task_id)));
        }
        tasks.insert(task.task_id.clone(), task.clone());
        Ok(())
    }

    async fn task(&self, task_id: &str) -> Result<Option<StoredTask>, StoreError> {
        let task = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task_id)
            .cloned();
        // Its owner is its chain's, as the SQL store reads it.
        Ok(task.map(|task| StoredTask {
            owner: self.lock().get(&task.chain_id).and_then(|e| e.chain.owner.clone()),
            ..task
        }))
    }

    async fn end_task(&self, task_id: &str, outcome: &Value) -> Result<bool, StoreError> {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let task = tasks
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NoChain(task_id.to_owned()))?;
        if task.outcome.is_some() {
            return Ok(false);
        }
        task.outcome = Some(outcome.clone());
        task.updated_at = crate::util::utc_now_rfc3339();
        Ok(true)
    }

    async fn cancel_task(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let task = tasks
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NoChain(task_id.to_owned()))?;
        task.cancel_requested = true;
        Ok(())
    }

    async fn state_key(&self) -> Result<[u8; STATE_KEY_BYTES], StoreError> {
        let mut key = self.state_key.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(*key.get_or_insert_with(random_state_key))
    }

    async fn idle_chains(&self, dead_before_ms: i64) -> Result<Vec<IdleChain>, StoreError> {
        let sessions: Vec<String> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        let tasked: Vec<String> = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|task| task.outcome.is_none())
            .map(|task| task.chain_id.clone())
            .collect();
        let chains = self.lock();
        Ok(chains
            .iter()
            .filter(|(_, e)| e.finished.is_none() && is_idle(e, dead_before_ms))
            .map(|(id, e)| IdleChain {
                chain_id: id.clone(),
                policy: e.chain.policy.clone(),
                created_at: e.chain.created_at.clone(),
                pending: e.pending.clone(),
                last_decided_at: e.decisions.iter().map(|d| d.decided_at.clone()).max(),
                session: sessions.contains(id),
                open_task: tasked.contains(id),
            })
            .collect())
    }

    async fn finish_idle(
        &self,
        chain_id: &str,
        result: &Value,
        pending_seq: Option<u32>,
        dead_before_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut chains = self.lock();
        let entry = entry(&mut chains, chain_id)?;
        if entry.finished.is_some()
            || !is_idle(entry, dead_before_ms)
            || entry.pending.as_ref().map(|p| p.seq) != pending_seq
        {
            return Ok(false);
        }
        entry.finished = Some(result.clone());
        entry.finished_at = epoch_ms_after(Duration::ZERO);
        entry.claimed_by = None;
        entry.pending = None;
        Ok(true)
    }

    async fn finished_chains(&self) -> Result<Vec<FinishedChain>, StoreError> {
        Ok(self
            .lock()
            .iter()
            .filter(|(_, e)| e.finished.is_some())
            .map(|(id, e)| FinishedChain {
                chain_id: id.clone(),
                policy: e.chain.policy.clone(),
                finished_at_ms: e.finished_at,
            })
            .collect())
    }

    async fn delete_finished(&self, chain_id: &str) -> Result<bool, StoreError> {
        let mut chains = self.lock();
        if !chains.get(chain_id).is_some_and(|e| e.finished.is_some()) {
            return Ok(false);
        }
        chains.remove(chain_id);
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(chain_id);
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, task| task.chain_id != chain_id);
        Ok(true)
    }

    async fn journaled_artifacts(&self) -> Result<Vec<ArtifactRef>, StoreError> {
        Ok(self
            .lock()
            .values()
            .filter(|e| e.finished.is_none())
            .flat_map(|e| e.journal.iter().flat_map(entry_artifacts).collect::<Vec<_>>())
            .collect())
    }

    async fn take_lock(&self, name: &str, holder: &str, lease: Duration) -> Result<Lock, StoreError> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        match locks.get(name) {
            Some((other, until)) if other != holder && *until >= epoch_ms_after(Duration::ZERO) => {
                Ok(Lock::HeldBy(other.clone()))
            }
            _ => {
                locks.insert(name.to_owned(), (holder.to_owned(), epoch_ms_after(lease)));
                Ok(Lock::Taken)
            }
        }
    }

    async fn release_lock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if locks.get(name).is_some_and(|(other, _)| other == holder) {
            locks.remove(name);
        }
        Ok(())
    }

    async fn counts(&self) -> Result<StoreCounts, StoreError> {
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let (chains, finished, journal, decisions) = {
            let chains = self.lock();
            (
                count(chains.len()),
                count(chains.values().filter(|e| e.finished.is_some()).count()),
                count(chains.values().map(|e| e.journal.len()).sum()),
                count(chains.values().map(|e| e.decisions.len()).sum()),
            )
        };
        Ok(StoreCounts {
            chains,
            finished,
            journal,
            decisions,
            sessions: count(self.sessions.lock().unwrap_or_else(PoisonError::into_inner).len()),
            tasks: count(self.tasks.lock().unwrap_or_else(PoisonError::into_inner).len()),
        })
    }
}

/// Whether no run holds the chain: never claimed, released, or claimed
/// with a lease that ran out before `dead_before_ms`.
fn is_idle(entry: &Entry, dead_before_ms: i64) -> bool {
    entry.claimed_by.is_none() || entry.claimed_until < dead_before_ms
}
