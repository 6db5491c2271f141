//! Durable chains: a chain whose state lives in a [`ChainStore`], so that it
//! can wait for a human for hours, outlive the process that started it, and
//! be resumed by any process that reaches the store.
//!
//! [`Durable::run`] creates the chain in the store and runs it with a
//! journal there ([`crate::journal`]). A call that needs approval is asked
//! of the recorded decisions first, then of the caller's [`Approval`];
//! [`Approval::defer`] answers "suspend", and the chain stops with status
//! `suspended` and its pending call in the store, holding no instance.
//! [`Durable::decide`] records a human's decision (a decision after the
//! policy's `approval_expires_s` counts as a denial), and [`Durable::resume`]
//! runs the script again from the start: every call up to the journal's end
//! is answered from it (its tool does not run again), the pending call gets
//! its decision, and the chain goes on to its end or its next suspension.
//! A resume first claims the chain in the store, so two processes resuming
//! it at once do not both run it: the loser is told who holds it, or gets
//! the finished chain's result.
//!
//! A handle may act for a principal ([`Durable::with_principal`]): the
//! chains it runs record it as their owner and run for it (its scopes
//! meet the tools' `required_scopes`), and it may decide or resume only
//! the chains it owns ([`DurableError::NotOwner`] otherwise, before
//! anything is claimed, recorded or run). A handle without one acts for
//! the local user, who may act on every chain.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::approval::{Approval, ApprovalDecision, ApprovalError, ApprovalHandler, ApprovalRequest};
use crate::artifacts::ArtifactStore;
use crate::chain::RunOptions;
use crate::engine::Engine;
use crate::journal::{Journal, JournalEntry, JournalError};
use crate::live::Observer;
use crate::policy::ChainPolicy;
use crate::principal::{self, Principal};
use crate::result::{ChainRunResult, ChainStatus, ErrorKind};
use crate::store::sweep::{self, SweepError, SweepOptions, SweepReport};
use crate::store::{ChainStore, Claim, Decision, StoreError, StoredChain};
use crate::tools::ToolRegistry;
use crate::util::utc_now_rfc3339;

mod session;

pub use session::{BUSY_WAIT, NEW_SESSION, SessionRefusal, SessionSummary};

/// Why a durable chain could not be run, decided or resumed.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// The store failed, or refused (no such chain, no pending call).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Another process is resuming the chain now.
    #[error("chain {chain_id:?} is being resumed elsewhere (by {holder})")]
    BeingResumed {
        /// The chain.
        chain_id: String,
        /// Who holds it, as it named itself.
        holder: String,
    },
    /// The chain belongs to another principal than the one this handle
    /// acts for (or to the local user, whose chains no principal may
    /// touch): nothing was claimed, recorded or run.
    #[error("chain {chain_id:?} belongs to another principal")]
    NotOwner {
        /// The chain.
        chain_id: String,
    },
    /// The session's cell run as this MCP task is no longer waiting or
    /// running: it ended (its node records the task's outcome), or it was
    /// dropped. Nothing was claimed or run.
    #[error("the cell of session {session_id:?} run as task {task_id:?} has ended")]
    CellEnded {
        /// The session.
        session_id: String,
        /// The task.
        task_id: String,
    },
    /// The stored chain cannot be read back (its policy or result).
    #[error("chain {chain_id:?} is stored in a form this chainbox cannot read: {why}")]
    Corrupt {
        /// The chain.
        chain_id: String,
        /// What failed.
        why: String,
    },
}

/// Durable chains on one engine and one store. Cheap to clone.
#[derive(Clone)]
pub struct Durable {
    engine: Engine,
    store: Arc<dyn ChainStore>,
    /// How this process names itself; each run or resume claims a chain
    /// under this name and a fresh id, so two resumes in one process
    /// exclude each other as two processes do.
    process: String,
    /// Who sees each run as it goes ([`crate::live`]).
    observer: Option<Observer>,
    /// Cancels the runs of this handle (see [`Self::cancelled_by`]).
    cancel: Option<CancellationToken>,
    /// Who this handle acts for (`None`: the local user; see
    /// [`Self::with_principal`]).
    principal: Option<Principal>,
    /// Where its runs offload results and media (`None`: the engine's
    /// store; see [`Self::with_artifacts`]).
    artifacts: Option<Arc<dyn ArtifactStore>>,
}

impl Durable {
    /// Durable chains run on `engine`, kept in `store`.
    pub fn new(engine: Engine, store: Arc<dyn ChainStore>) -> Self {
        let process = format!("pid {}", std::process::id());
        Self {
            engine,
            store,
            process,
            observer: None,
            cancel: None,
            principal: None,
            artifacts: None,
        }
    }

    /// This handle acts for `principal` (`None`: the local user). A chain
    /// it runs records the principal's [`crate::Owner`] and runs for it
    /// ([`RunOptions::principal`]); it decides and resumes only chains
    /// that principal owns ([`DurableError::NotOwner`] for any other, a
    /// local user's chain included), and a resume runs the chain for it,
    /// with the scopes it holds now. Without one, every chain is its to
    /// decide and resume.
    #[must_use]
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// [`DurableError::NotOwner`] unless this handle may act on `chain`.
    fn check_owner(&self, chain: &StoredChain) -> Result<(), DurableError> {
        if principal::may_act_on(self.principal.as_ref(), chain.owner.as_ref()) {
            Ok(())
        } else {
            Err(DurableError::NotOwner {
                chain_id: chain.chain_id.clone(),
            })
        }
    }

    /// Each run and resume tells `observer` what the chain prints and
    /// calls as it goes (a resume: from the script's start, replayed calls
    /// included).
    #[must_use]
    pub fn with_observer(mut self, observer: Option<Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// This handle, its runs and resumes cancelled by `cancel` (see
    /// [`RunOptions::cancel`]): a cancelled run ends as `cancelled`, and
    /// its chain stays in the store unfinished, for a later resume (its
    /// calls cut off in flight run again then).
    #[must_use]
    pub fn cancelled_by(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// This handle's runs and resumes offload results and media to
    /// `artifacts` and read their journaled ones back from it, instead of
    /// the engine's store ([`Engine::artifacts`]; `None`: the engine's):
    /// one engine serves chains whose stores differ (a resume in another
    /// process must reach the store its run wrote to). Its sweeps sweep
    /// it too.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Option<Arc<dyn ArtifactStore>>) -> Self {
        self.artifacts = artifacts;
        self
    }

    /// A name for one run's claim: this process, and an id of the run.
    fn claimant(&self) -> String {
        format!("{} run {}", self.process, uuid::Uuid::new_v4().simple())
    }

    /// The store the chains live in.
    pub fn store(&self) -> &Arc<dyn ChainStore> {
        &self.store
    }

    /// Sweeps this handle's store, and its engine's artifact store, once
    /// (see [`crate::store::sweep`]): the chains no process will finish
    /// are finished (`abandoned`, `expired`), finished ones past their
    /// `retention_s` deleted, old artifacts nothing needs deleted. The
    /// engine's artifact store holds this process's pins, so the chains
    /// running here keep what they stored.
    pub async fn sweep(&self, options: &SweepOptions) -> Result<SweepReport, SweepError> {
        let artifacts = self.artifacts.as_ref().unwrap_or(self.engine.artifacts());
        sweep::sweep(&self.store, Some(artifacts), options).await
    }

    /// Creates a durable chain and runs it: to its end, or to its first
    /// call that waits on a decision (status `suspended`; its `chain_id`
    /// names it to [`Self::decide`] and [`Self::resume`]). Its owner is
    /// this handle's principal.
    pub async fn run(
        &self,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        let chain = self.new_chain(script, policy)?;
        let claimant = self.claimant();
        self.store.create_claimed(&chain, &claimant, lease(policy)).await?;
        self.run_claimed(&chain, &claimant, registry, policy, approval, History::default())
            .await
    }

    /// A new chain of `script` under `policy`, owned by this handle's
    /// principal, with a fresh id and seed: not stored yet (a caller
    /// storing it with more, such as `ChainStore::create_task`, runs it with
    /// [`Self::resume`]).
    pub fn new_chain(&self, script: &str, policy: &ChainPolicy) -> Result<StoredChain, DurableError> {
        let chain_id = format!("chain_{}", uuid::Uuid::new_v4().simple());
        let policy = serde_json::to_value(policy).map_err(|e| DurableError::Corrupt {
            chain_id: chain_id.clone(),
            why: e.to_string(),
        })?;
        Ok(StoredChain {
            chain_id,
            script: script.to_owned(),
            policy,
            seed: rand_seed(),
            created_at: utc_now_rfc3339(),
            owner: self.principal.as_ref().map(|p| p.owner.clone()),
        })
    }

    /// Records a human's decision on the chain's pending call (`seq`). A
    /// decision after the policy's `approval_expires_s` is recorded as a
    /// denial saying so. [`DurableError::NotOwner`] if this handle's
    /// principal does not own the chain.
    pub async fn decide(
        &self,
        chain_id: &str,
        decision: ApprovalDecision,
        decided_by: &str,
    ) -> Result<Decision, DurableError> {
        self.decide_call(chain_id, None, decision, decided_by).await
    }

    /// [`Self::decide`], for call `seq` only when given: a decision meant
    /// for one call is never recorded for a later one
    /// ([`StoreError::NotPending`] if the chain waits on another call, or
    /// on none).
    pub async fn decide_call(
        &self,
        chain_id: &str,
        seq: Option<u32>,
        decision: ApprovalDecision,
        decided_by: &str,
    ) -> Result<Decision, DurableError> {
        let chain = self
            .store
            .chain(chain_id)
            .await?
            .ok_or_else(|| StoreError::NoChain(chain_id.to_owned()))?;
        self.check_owner(&chain)?;
        let policy = policy_of(&chain)?;
        let pending = self
            .store
            .pending_of(chain_id)
            .await?
            .filter(|pending| seq.is_none_or(|seq| pending.seq == seq))
            .ok_or_else(|| StoreError::NotPending {
                chain_id: chain_id.to_owned(),
                seq,
            })?;
        let decided_at = utc_now_rfc3339();
        let waited = seconds_between(&pending.requested_at, &decided_at);
        let decision = match waited {
            Some(waited) if waited > policy.approval_expires_s => ApprovalDecision::Denied {
                reason: Some(format!(
                    "the decision came {waited:.0}s after the request, past approval_expires_s = {}",
                    policy.approval_expires_s
                )),
            },
            _ => decision,
        };
        let decision = Decision {
            seq: pending.seq,
            decision,
            decided_by: decided_by.to_owned(),
            decided_at,
        };
        self.store.decide(chain_id, &decision).await?;
        Ok(decision)
    }

    /// Continues a chain from the start, answered from its journal: to its
    /// end or its next suspension. Its result's trace covers the whole
    /// chain (the journaled calls say `replayed: true`). A finished chain
    /// gives its result again; one another process is resuming is
    /// [`DurableError::BeingResumed`]; one this handle's principal does not
    /// own is [`DurableError::NotOwner`] (nothing claimed or run). It runs
    /// for this handle's principal, with the scopes it holds now.
    pub async fn resume(
        &self,
        chain_id: &str,
        registry: &ToolRegistry,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        if let Some(session) = self.store.session(chain_id).await? {
            return self.resume_session(session, None, registry, approval).await;
        }
        let chain = self
            .store
            .chain(chain_id)
            .await?
            .ok_or_else(|| StoreError::NoChain(chain_id.to_owned()))?;
        self.check_owner(&chain)?;
        let policy = policy_of(&chain)?;
        let claimant = self.claimant();
        match self.store.claim(chain_id, &claimant, lease(&policy)).await? {
            Claim::Won => {}
            Claim::HeldBy(holder) => {
                return Err(DurableError::BeingResumed {
                    chain_id: chain_id.to_owned(),
                    holder,
                });
            }
            Claim::Finished(result) => return finished(chain_id, result),
        }
        let (journal, decisions) = match (self.store.journal(chain_id).await, self.store.decisions(chain_id).await) {
            (Ok(journal), Ok(decisions)) => (journal, decisions),
            (Err(e), _) | (_, Err(e)) => {
                self.store.release(chain_id, &claimant).await?;
                return Err(e.into());
            }
        };
        self.run_claimed(
            &chain,
            &claimant,
            registry,
            &policy,
            approval,
            History { journal, decisions },
        )
        .await
    }

    /// Continues what the MCP task `task_id` runs: its own chain (named as
    /// the task), or its cell of the session `chain_id` — that cell only:
    /// once it has ended (or a later cell runs) this is
    /// [`DurableError::CellEnded`], never another cell's run.
    pub async fn resume_task(
        &self,
        chain_id: &str,
        task_id: &str,
        registry: &ToolRegistry,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        if chain_id != task_id
            && let Some(session) = self.store.session(chain_id).await?
        {
            return self.resume_session(session, Some(task_id), registry, approval).await;
        }
        self.resume(chain_id, registry, approval).await
    }

    /// Runs a chain this process has claimed, and leaves the store as it
    /// ended: suspended (its pending call, the claim released) or finished.
    async fn run_claimed(
        &self,
        chain: &StoredChain,
        claimant: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
        History { journal, decisions }: History,
    ) -> Result<ChainRunResult, DurableError> {
        let chain_id = chain.chain_id.clone();
        let history = History { journal, decisions };
        let result = self
            .run_journaled(
                chain,
                claimant,
                &chain.script,
                policy,
                registry,
                approval,
                history,
                RunOptions::default(),
            )
            .await;
        match (&result.status, &result.pending) {
            (ChainStatus::Suspended, Some(pending)) => {
                self.store.suspend(&chain_id, pending).await?;
                self.store.release(&chain_id, claimant).await?;
            }
            // Cancelled (its caller went away, its server shuts down): this
            // run stopped, not the chain, which stays as a crash would leave
            // it, for a later resume. Its calls cut off in flight were not
            // journaled and run again then.
            _ if result.error_kind() == Some(ErrorKind::Cancelled) => {
                self.store.release(&chain_id, claimant).await?;
            }
            _ => {
                let json = serde_json::to_value(&result).map_err(|e| DurableError::Corrupt {
                    chain_id: chain_id.clone(),
                    why: e.to_string(),
                })?;
                self.store.finish(&chain_id, &json).await?;
            }
        }
        Ok(result)
    }
}

impl Durable {
    /// Runs `script` (`chain`'s, or with [`RunOptions::cells`] a session's
    /// cell) journaled in `chain`'s store and answered from `history`: its
    /// recorded calls from the journal, its decided calls from the
    /// decisions, the rest asked of `approval`; with the chain's seed, for
    /// this handle's principal, observer and cancellation.
    #[allow(clippy::too_many_arguments)]
    async fn run_journaled(
        &self,
        chain: &StoredChain,
        claimant: &str,
        script: &str,
        policy: &ChainPolicy,
        registry: &ToolRegistry,
        approval: &Approval,
        History { journal, decisions }: History,
        options: RunOptions,
    ) -> ChainRunResult {
        let journal = Arc::new(StoreJournal::new(self.store.clone(), chain.chain_id.clone(), journal));
        let approval = Approval::new(Recorded {
            decisions: decisions.into_iter().map(|d| (d.seq, d.decision)).collect(),
            otherwise: approval.clone(),
        });
        let options = RunOptions {
            run_id: Some(chain.chain_id.clone()),
            journal: Some(journal as Arc<dyn Journal>),
            // The chain's randomness replays with its script.
            seed: Some(chain.seed),
            observer: self.observer.clone(),
            cancel: self.cancel.clone(),
            principal: self.principal.clone(),
            artifacts: self.artifacts.clone().or(options.artifacts),
            ..options
        };
        let run = self.engine.run_with(script, registry, policy, &approval, options);
        self.renewing(&chain.chain_id, claimant, run).await
    }

    /// Runs `work` while renewing this run's claim on `chain_id` every
    /// [`CLAIM_RENEWAL`], so its lease ([`CLAIM_LEASE`]) lapses soon after
    /// this process dies, and never while it lives and runs.
    async fn renewing<T>(&self, chain_id: &str, claimant: &str, work: impl Future<Output = T>) -> T {
        let renew = async {
            loop {
                tokio::time::sleep(CLAIM_RENEWAL).await;
                match self.store.claim(chain_id, claimant, CLAIM_LEASE).await {
                    Ok(Claim::Won) => {}
                    // Lost (this process stalled past the lease) or
                    // finished meanwhile: nothing left to renew.
                    Ok(other) => {
                        tracing::warn!(chain_id, claim = ?other, "a running chain's claim could not be renewed");
                        std::future::pending::<()>().await;
                    }
                    Err(e) => tracing::warn!(chain_id, error = %e, "renewing a running chain's claim failed"),
                }
            }
        };
        tokio::pin!(work);
        tokio::select! {
            out = &mut work => out,
            () = renew => unreachable!("the claim's renewal loop never ends"),
        }
    }
}

/// Durable chains straight from an [`Engine`], for a library user who keeps
/// the engine and the store rather than a [`Durable`]. Each is the
/// [`Durable`] method of the same name on this engine and `store`, acting
/// for the local user (for a principal, use
/// [`Durable::with_principal`]).
impl Engine {
    /// Durable chains on this engine, kept in `store`.
    pub fn durable(&self, store: Arc<dyn ChainStore>) -> Durable {
        Durable::new(self.clone(), store)
    }

    /// Creates a durable chain in `store` and runs it: to its end, or to its
    /// first call that waits on a decision (with [`Approval::defer`], status
    /// `suspended`, the chain's id in `chain_id`). See [`Durable::run`].
    pub async fn run_durable(
        &self,
        store: &Arc<dyn ChainStore>,
        script: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        self.durable(store.clone())
            .run(script, registry, policy, approval)
            .await
    }

    /// Runs `cell` in the session `session` of `store` (an id, or
    /// [`NEW_SESSION`] to start one): the names earlier cells bound are
    /// defined, their tool calls are not made again. See
    /// [`Durable::run_cell`].
    pub async fn run_cell(
        &self,
        store: &Arc<dyn ChainStore>,
        session: &str,
        cell: &str,
        registry: &ToolRegistry,
        policy: &ChainPolicy,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        self.durable(store.clone())
            .run_cell(session, cell, registry, policy, approval)
            .await
    }

    /// Continues the chain `chain_id` of `store`, answered from its journal,
    /// to its end or its next suspension. See [`Durable::resume`].
    pub async fn resume(
        &self,
        store: &Arc<dyn ChainStore>,
        chain_id: &str,
        registry: &ToolRegistry,
        approval: &Approval,
    ) -> Result<ChainRunResult, DurableError> {
        self.durable(store.clone()).resume(chain_id, registry, approval).await
    }
}

/// What a chain has done so far: its journal and the decisions on its calls.
#[derive(Default)]
struct History {
    journal: Vec<JournalEntry>,
    decisions: Vec<Decision>,
}

impl History {
    /// The base of a session's next cell: past every call journaled or
    /// decided so far (a call denied and never run is decided, not
    /// journaled: a later cell's call of that number would take its
    /// decision).
    fn next_base(&self) -> u32 {
        let journaled = self.journal.iter().map(|entry| entry.seq);
        let decided = self.decisions.iter().map(|decision| decision.seq);
        journaled.chain(decided).max().unwrap_or(0)
    }
}

/// A chain's journal in its store.
///
/// Entries are group-committed: a call's entry is durable before its
/// `append` returns (before its result reaches the script: exactly-once
/// rests on it), but the entries of calls that finish while another
/// entry's write is in flight (a gather's) wait for it and are written
/// together, one transaction for all of them, instead of one each.
struct StoreJournal {
    store: Arc<dyn ChainStore>,
    chain_id: String,
    recorded: Vec<JournalEntry>,
    /// Entries waiting for the next write, and where to tell each one how
    /// it went.
    queued: std::sync::Mutex<Vec<Queued>>,
    /// Held while a batch is written: the writes of one chain's journal
    /// run one at a time.
    writing: tokio::sync::Mutex<()>,
}

/// An entry waiting for its batch.
type Queued = (JournalEntry, tokio::sync::oneshot::Sender<Result<(), JournalError>>);

impl StoreJournal {
    fn new(store: Arc<dyn ChainStore>, chain_id: String, recorded: Vec<JournalEntry>) -> Self {
        StoreJournal {
            store,
            chain_id,
            recorded,
            queued: std::sync::Mutex::new(Vec::new()),
            writing: tokio::sync::Mutex::new(()),
        }
    }
}

/// Writes `batch` to `chain_id`'s journal in one transaction; if that
/// fails, each entry alone, so every entry gets its own answer (one taken
/// number does not keep the others out of the journal).
async fn write_batch(store: Arc<dyn ChainStore>, chain_id: String, batch: Vec<Queued>) {
    let entries: Vec<JournalEntry> = batch.iter().map(|(entry, _)| entry.clone()).collect();
    if batch.len() > 1 && store.append_many(&chain_id, &entries).await.is_ok() {
        for (_, done) in batch {
            let _ = done.send(Ok(()));
        }
        return;
    }
    for (entry, done) in batch {
        let appended = store.append(&chain_id, &entry).await;
        let _ = done.send(appended.map_err(|e| JournalError {
            seq: entry.seq,
            why: e.to_string(),
        }));
    }
}

#[async_trait]
impl Journal for StoreJournal {
    fn recorded(&self) -> Vec<JournalEntry> {
        self.recorded.clone()
    }

    async fn append(&self, entry: JournalEntry) -> Result<(), JournalError> {
        let seq = entry.seq;
        let (done, written) = tokio::sync::oneshot::channel();
        self.queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((entry, done));
        // The calls that finished with this one (a gather's) queue theirs
        // meanwhile, to go in the same write.
        tokio::task::yield_now().await;
        {
            // Whoever holds the lock next writes what is queued then: this
            // entry, unless an earlier writer took it along.
            let _writing = self.writing.lock().await;
            let batch = std::mem::take(&mut *self.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            match batch.len() {
                0 => {}
                // Its own entry alone: written here.
                1 => write_batch(self.store.clone(), self.chain_id.clone(), batch).await,
                // A task of its own: the batch carries other calls'
                // entries, whose writes must not end if this call's future
                // is dropped (the script cancelled it).
                _ => {
                    let write = write_batch(self.store.clone(), self.chain_id.clone(), batch);
                    let _ = tokio::spawn(write).await;
                }
            }
        }
        written.await.unwrap_or_else(|_| {
            Err(JournalError {
                seq,
                why: "the journal's write was dropped".to_owned(),
            })
        })
    }
}

/// The decisions recorded for a chain's calls, by call number; a call
/// without one is asked of `otherwise`.
struct Recorded {
    decisions: BTreeMap<u32, ApprovalDecision>,
    otherwise: Approval,
}

#[async_trait]
impl ApprovalHandler for Recorded {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        let seq = u32::try_from(req.call_id).unwrap_or(u32::MAX);
        match self.decisions.get(&seq) {
            Some(decision) => Ok(decision.clone()),
            None => self.otherwise.0.request(req).await,
        }
    }
}

/// How long a run's claim on its chain lasts unless renewed: a running
/// chain renews it every [`CLAIM_RENEWAL`] ([`Durable::renewing`]), so a
/// claim older than this belongs to a process that died (or stalled for
/// this long), and the next resume takes the chain over.
pub const CLAIM_LEASE: Duration = Duration::from_secs(30);

/// How often a running chain renews its claim.
const CLAIM_RENEWAL: Duration = Duration::from_secs(5);

/// The lease a run's claim starts with (whatever the policy: a live run
/// renews it).
fn lease(_policy: &ChainPolicy) -> Duration {
    CLAIM_LEASE
}

fn policy_of(chain: &StoredChain) -> Result<ChainPolicy, DurableError> {
    serde_json::from_value(chain.policy.clone()).map_err(|e| DurableError::Corrupt {
        chain_id: chain.chain_id.clone(),
        why: format!("its policy: {e}"),
    })
}

fn finished(chain_id: &str, result: serde_json::Value) -> Result<ChainRunResult, DurableError> {
    serde_json::from_value(result).map_err(|e| DurableError::Corrupt {
        chain_id: chain_id.to_owned(),
        why: format!("its result: {e}"),
    })
}

/// Seconds from one RFC 3339 time to another, if both parse.
fn seconds_between(from: &str, to: &str) -> Option<f64> {
    let from: jiff::Timestamp = from.parse().ok()?;
    let to: jiff::Timestamp = to.parse().ok()?;
    Some((to.as_nanosecond() - from.as_nanosecond()) as f64 / 1e9)
}

/// A fresh seed for a chain's randomness.
fn rand_seed() -> u64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u64::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
    ])
}
